//! `rdma_lab_scale_exporter_scrapes=N`: rdma-exporter against Debian's
//! `prometheus-node-exporter` limited to its infiniband collector, side by side on the same
//! rxe devices in the same guest (docs/PERFORMANCE.md, "rdma-exporter in the kernel lab"):
//!
//! - the `node_infiniband_*` series both serve, value for value;
//! - N scrapes of rdma-exporter, each past the daemon's sharing of a counter reading
//!   (`--counters-max-age-ms`, 10 s by default) so that each costs a read of every port's
//!   counters: latency, and CPU per scrape of the exporter itself, of rdma-managerd and of
//!   the bus, each what a window with a scrape took more than the window as long next to it
//!   without one (their idle work is in both), split into user and system time;
//!   rdma-exporter's resident set before any scrape and after;
//! - N scrapes of node_exporter on the rxe devices, where its collector finds nothing to read
//!   (rxe ports have no `counters/` directory), and N of a second node_exporter on a tree of
//!   as many InfiniBand ports rendered by the simulated host (`counters/` files as a
//!   ConnectX HCA's, on tmpfs), its peer for a comparison: its collection reads those files
//!   at every scrape;
//! - rdma-managerd's CPU over 60 s windows, unscraped and scraped every 15 s (Prometheus'
//!   default interval), twice each in turn, so that the difference can be told from noise;
//! - a port set down and up between two scrapes: rdma-exporter's
//!   `rdma_port_state_changes_total` counts it (two changes; the run fails otherwise), where
//!   node_exporter's `node_infiniband_state_id` shows the same state before and after.
//!
//! Both programs come from the host (`run-lab.sh --extra-bin`).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rdma_manager_tests::gmo::run_quiet as run;
use rdma_manager_tests::procfs::{cpu_ticks, cpu_user_sys};
use rdma_manager_tests::scrape;
use rdma_managerd::engine::DEFAULT_COUNTERS_MAX_AGE;
use rdma_managerd::kernel::sim::{fixtures, SimHost};

use super::{figure, proc_status_kb};

const EXPORTER: &str = "127.0.0.1:19942";
const NODE: &str = "127.0.0.1:19943";
/// node_exporter on the rendered InfiniBand tree.
const NODE_TREE: &str = "127.0.0.1:19944";
/// Where that tree is rendered (the guest's `/tmp` is tmpfs).
const TREE: &str = "/tmp/rdma-lab-ib-tree";
/// USER_HZ on Linux x86-64: what `/proc/PID/stat` counts CPU time in.
const HZ: f64 = 100.0;

/// A program started for the comparison, killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(program: &str, args: &[&str], log: &str) -> Result<Running> {
    let log = std::fs::File::create(log)?;
    Ok(Running(
        Command::new(program)
            .args(args)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| program.to_string())?,
    ))
}

async fn get(addr: &'static str, path: &'static str) -> Result<(Duration, String)> {
    tokio::task::spawn_blocking(move || scrape::get(addr, path)).await?
}

/// Waits until `addr` answers `path`, at most `limit`.
async fn answering(addr: &'static str, path: &'static str, limit: Duration) -> Result<()> {
    let t = Instant::now();
    loop {
        match get(addr, path).await {
            Ok(_) => return Ok(()),
            Err(e) if t.elapsed() > limit => return Err(e.context(format!("{addr} not up"))),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// The mappings of `pid` holding at least 64 KiB of anonymous memory, as `START NAME KiB`
/// (the heap, an arena of a thread, a stack): where a resident set beyond the expected is.
fn anonymous_mappings(pid: u32) -> String {
    let Ok(smaps) = std::fs::read_to_string(format!("/proc/{pid}/smaps")) else {
        return "?".into();
    };
    let mut out = Vec::new();
    let mut mapping = String::new();
    for l in smaps.lines() {
        if let Some(kb) = l.strip_prefix("Anonymous:") {
            let kb: u64 = kb.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
            if kb >= 64 {
                out.push(format!("{mapping} {kb}"));
            }
        } else if l
            .split_whitespace()
            .next()
            .is_some_and(|f| f.contains('-') && !f.ends_with(':'))
        {
            let mut f = l.split_whitespace();
            let start = f
                .next()
                .unwrap_or_default()
                .split('-')
                .next()
                .unwrap_or_default();
            let name = f.nth(4).unwrap_or("[anon]");
            mapping = format!("{start} {name}");
        }
    }
    let threads = std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count());
    format!("{}; {threads} threads", out.join(", "))
}

fn ticks(pid: u32) -> u64 {
    cpu_ticks(pid).unwrap_or(0)
}

/// CPU ticks of each of `pids` while `f` runs.
async fn cpu_during<F: std::future::Future<Output = Result<T>>, T>(
    pids: [u32; 3],
    f: F,
) -> Result<(T, [u64; 3])> {
    let before = pids.map(ticks);
    let out = f.await?;
    let after = pids.map(ticks);
    Ok((out, [0, 1, 2].map(|i| after[i].saturating_sub(before[i]))))
}

/// `n` scrapes of `addr`, `gap` apart: their latencies in ms, sorted.
async fn scrapes(addr: &'static str, n: usize, gap: Duration) -> Result<Vec<f64>> {
    let mut ms = Vec::with_capacity(n);
    for _ in 0..n {
        let (took, _) = get(addr, "/metrics").await?;
        ms.push(took.as_secs_f64() * 1e3);
        tokio::time::sleep(gap).await;
    }
    ms.sort_by(f64::total_cmp);
    Ok(ms)
}

/// Files under `dir`, recursively (the rendered tree's `counters/` files).
fn count_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => count_files(&e.path()),
                    Ok(_) => 1,
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

pub async fn compare(daemon: u32, bus: u32, devices: usize, n: usize) -> Result<()> {
    let exporter = start(
        "/usr/bin/rdma-exporter",
        &["--listen", EXPORTER],
        "/tmp/rdma-exporter.log",
    )?;
    let node = start(
        "/usr/bin/prometheus-node-exporter",
        &[
            "--path.sysfs=/sys",
            "--collector.disable-defaults",
            "--collector.infiniband",
            &format!("--web.listen-address={NODE}"),
        ],
        "/tmp/node-exporter.log",
    )?;
    let (e_pid, n_pid) = (exporter.0.id(), node.0.id());
    answering(EXPORTER, "/", Duration::from_secs(60)).await?;
    answering(NODE, "/", Duration::from_secs(60)).await?;
    // rdma-exporter reads the daemon's model at start (one GetManagedObjects of every
    // device): its resident set before any scrape is taken once that is done.
    tokio::time::sleep(Duration::from_secs(15)).await;
    let rss_before = proc_status_kb(e_pid, "VmRSS");

    // The series both serve, value for value (rxe ports carry no traffic here: their
    // counters stand still between the two scrapes).
    let (_, e_text) = get(EXPORTER, "/metrics").await?;
    let (_, n_text) = get(NODE, "/metrics").await?;
    if scrape::value(&e_text, "rdma_exporter_daemon_up", &[]) != Some(1.0) {
        bail!("rdma-exporter does not follow the daemon");
    }
    let e = scrape::series(&e_text, "node_infiniband_");
    let ns = scrape::series(&n_text, "node_infiniband_");
    let both: Vec<&String> = ns.keys().filter(|k| e.contains_key(*k)).collect();
    let differ: Vec<&&String> = both.iter().filter(|k| e[**k] != ns[**k]).collect();
    figure(
        "exporter_node_infiniband_series",
        format!(
            "rdma-exporter {}, node_exporter {}, both {}, values differing {}",
            e.len(),
            ns.len(),
            both.len(),
            differ.len()
        ),
    );
    for k in ns.keys().filter(|k| !e.contains_key(*k)).take(3) {
        figure("exporter_only_node_exporter", k);
    }
    for k in differ.iter().take(3) {
        figure(
            "exporter_value_differs",
            format!("{k} {} {}", e[**k], ns[**k]),
        );
    }
    figure(
        "exporter_rdma_series",
        scrape::series(&e_text, "rdma_").len(),
    );
    figure(
        "exporter_port_read_errors",
        scrape::value(&e_text, "rdma_exporter_port_read_errors", &[]).unwrap_or(-1.0),
    );
    let node_errors = scrape::series(&n_text, "node_scrape_collector_success")
        .into_iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ");
    figure("exporter_node_collector_success", node_errors);

    // The driver's counters come from RDMA netlink (STAT_GET), not from the files: the
    // values of `hw_counters/` must be what the exporter serves (rxe ports stand still here).
    let mut hw_checked = 0;
    let mut hw_differ = Vec::new();
    for k in [0, devices / 2, devices.saturating_sub(1)] {
        let dev = format!("rxe{k}");
        let dir = format!("/sys/class/infiniband/{dev}/ports/1/hw_counters");
        for entry in std::fs::read_dir(&dir)
            .with_context(|| dir.clone())?
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "lifespan" {
                continue;
            }
            let file: Option<f64> = std::fs::read_to_string(entry.path())
                .ok()
                .and_then(|t| t.trim().parse().ok());
            let served = scrape::value(
                &e_text,
                "rdma_port_hw_stat_total",
                &[
                    ("device", dev.as_str()),
                    ("port", "1"),
                    ("stat", name.as_str()),
                ],
            );
            hw_checked += 1;
            if file.is_none() || file != served {
                hw_differ.push(format!("{dev}/{name} file {file:?} served {served:?}"));
            }
        }
    }
    figure(
        "exporter_hw_counters_equal_files",
        format!(
            "{hw_checked} values of 3 ports, differing {}{}",
            hw_differ.len(),
            hw_differ
                .iter()
                .take(3)
                .map(|d| format!("; {d}"))
                .collect::<String>()
        ),
    );
    // Failed at the end, with the figures taken.
    let hw_equal = hw_checked > 0 && hw_differ.is_empty();

    // node_exporter's peer: as many InfiniBand ports as there are rxe devices, rendered by
    // the simulated host, one ConnectX port each.
    let sim = SimHost::in_dir(
        std::path::Path::new(TREE),
        fixtures::large_host(devices as u32, 1, 0),
    )
    .context("rendering the InfiniBand tree")?;
    let tree_sys = format!("--path.sysfs={TREE}/sys");
    let node_tree = start(
        "/usr/bin/prometheus-node-exporter",
        &[
            &tree_sys,
            "--collector.disable-defaults",
            "--collector.infiniband",
            &format!("--web.listen-address={NODE_TREE}"),
        ],
        "/tmp/node-exporter-tree.log",
    )?;
    let t_pid = node_tree.0.id();
    answering(NODE_TREE, "/", Duration::from_secs(60)).await?;
    let (_, t_text) = get(NODE_TREE, "/metrics").await?;
    let counter_files: usize = std::fs::read_dir(format!("{TREE}/sys/class/infiniband"))
        .map(|rd| {
            rd.flatten()
                .map(|d| count_files(&d.path().join("ports/1/counters")))
                .sum()
        })
        .unwrap_or(0);
    figure(
        "exporter_node_tree",
        format!(
            "{devices} InfiniBand ports rendered on tmpfs: {counter_files} counters/ files, node_exporter serves {} node_infiniband_* series, {}",
            scrape::series(&t_text, "node_infiniband_").len(),
            scrape::series(&t_text, "node_scrape_collector_success")
                .into_iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    // The counter values a scrape of rdma-exporter serves (every port's traffic, PMA and
    // driver counters), against the files node_exporter reads above.
    let values = scrape::series(&e_text, "rdma_port_")
        .keys()
        .filter(|k| {
            let name = k.split('{').next().unwrap_or_default();
            name.ends_with("_total") && name != "rdma_port_state_changes_total"
        })
        .count();
    figure("exporter_counter_values", values);

    // Latency and CPU per scrape. Each scrape of rdma-exporter comes past the daemon's
    // sharing of a reading, so that each costs a read of every port's counters, as a
    // Prometheus scraping every 15 s gets; its window is paired with one as long without a
    // scrape, next to it, and a scrape's cost is what its windows took more than their
    // pairs: the daemon's tick, the bus relaying its signals and the exporter following them
    // are in both, and drift no more than a window's length apart.
    let fresh = DEFAULT_COUNTERS_MAX_AGE + Duration::from_millis(500);
    let gap = Duration::from_millis(1100);
    tokio::time::sleep(fresh).await;
    let pids = [e_pid, daemon, bus];
    let split_before = [e_pid, daemon].map(cpu_user_sys);
    let (mut e_ms, mut scraped, mut quiet) = (Vec::new(), [0u64; 3], [0u64; 3]);
    let mut split_quiet = [(0u64, 0u64); 2];
    for _ in 0..n {
        let t = Instant::now();
        let (ms, cpu) = cpu_during(pids, async {
            let (took, _) = get(EXPORTER, "/metrics").await?;
            tokio::time::sleep(fresh.saturating_sub(t.elapsed())).await;
            Ok(took.as_secs_f64() * 1e3)
        })
        .await?;
        e_ms.push(ms);
        let q0 = [e_pid, daemon].map(cpu_user_sys);
        let ((), idle) = cpu_during(pids, async {
            tokio::time::sleep(fresh).await;
            Ok(())
        })
        .await?;
        let q1 = [e_pid, daemon].map(cpu_user_sys);
        for i in 0..3 {
            scraped[i] += cpu[i];
            quiet[i] += idle[i];
        }
        for i in 0..2 {
            if let (Some((u0, s0)), Some((u1, s1))) = (q0[i], q1[i]) {
                split_quiet[i].0 += u1.saturating_sub(u0);
                split_quiet[i].1 += s1.saturating_sub(s0);
            }
        }
    }
    let split_after = [e_pid, daemon].map(cpu_user_sys);
    // The exporter's memory once its last collection is dropped (a window after the scrape).
    let rss_scraped = ["VmRSS", "RssAnon"].map(|k| proc_status_kb(e_pid, k));
    figure("exporter_anonymous_mappings_kib", anonymous_mappings(e_pid));
    e_ms.sort_by(f64::total_cmp);
    let (n_ms, n_cpu) = cpu_during([n_pid, daemon, bus], scrapes(NODE, n, gap)).await?;
    let (t_ms, t_cpu) = cpu_during([t_pid, daemon, bus], scrapes(NODE_TREE, n, gap)).await?;
    let per = |t: u64| t as f64 / HZ * 1e3 / n as f64;
    let cost = |i: usize| per(scraped[i]) - per(quiet[i]);
    let (e_own, e_daemon, e_bus) = (cost(0), cost(1), cost(2));
    let e_total = e_own + e_daemon + e_bus;
    let n_total = per(n_cpu[0]);
    let t_total = per(t_cpu[0]);
    figure(
        "exporter_scrape_ms",
        format!(
            "rdma-exporter p50 {:.1} (min {:.1}, max {:.1}); node_exporter on the InfiniBand tree p50 {:.1} (min {:.1}, max {:.1}): {:.1}x; node_exporter on rxe (reads nothing) p50 {:.1}",
            e_ms[n / 2],
            e_ms[0],
            e_ms[n - 1],
            t_ms[n / 2],
            t_ms[0],
            t_ms[n - 1],
            t_ms[n / 2] / e_ms[n / 2],
            n_ms[n / 2],
        ),
    );
    figure(
        "exporter_cpu_per_scrape_ms",
        format!(
            "rdma-exporter {:.1} (a window with a scrape {:.1}, without {:.1}) + rdma-managerd {:.1} ({:.1}, {:.1}) + bus {:.1} ({:.1}, {:.1}) = {:.1}; node_exporter on the InfiniBand tree {:.1}: {:.1}x; node_exporter on rxe (reads nothing) {:.1}",
            e_own,
            per(scraped[0]),
            per(quiet[0]),
            e_daemon,
            per(scraped[1]),
            per(quiet[1]),
            e_bus,
            per(scraped[2]),
            per(quiet[2]),
            e_total,
            t_total,
            t_total / e_total.max(0.1),
            n_total,
        ),
    );
    // Where a scrape's CPU went, user space (decoding, rendering, serialising) or the kernel
    // (the daemon's netlink reads, the sockets, page faults): the windows with a scrape less
    // those without.
    let split = |i: usize| match (split_before[i], split_after[i]) {
        (Some((u0, s0)), Some((u1, s1))) => {
            let (u, s) = (u1.saturating_sub(u0), s1.saturating_sub(s0));
            let (qu, qs) = split_quiet[i];
            format!(
                "user {:.1}, system {:.1}",
                per(u.saturating_sub(qu)) - per(qu),
                per(s.saturating_sub(qs)) - per(qs)
            )
        }
        _ => "?".into(),
    };
    figure(
        "exporter_cpu_per_scrape_user_system_ms",
        format!("rdma-exporter {}; rdma-managerd {}", split(0), split(1)),
    );
    drop(node_tree);
    drop(sim);
    let _ = std::fs::remove_dir_all(TREE);
    figure(
        "exporter_rss_kib",
        format!(
            "rdma-exporter before any scrape {}, {} s after the last of {} scrapes {} (anonymous {}), at the end {} (anonymous {}, file {}); node_exporter {}",
            rss_before.map_or("?".into(), |k| k.to_string()),
            fresh.as_secs(),
            n + 1,
            rss_scraped[0].map_or("?".into(), |k| k.to_string()),
            rss_scraped[1].map_or("?".into(), |k| k.to_string()),
            proc_status_kb(e_pid, "VmRSS").map_or("?".into(), |k| k.to_string()),
            proc_status_kb(e_pid, "RssAnon").map_or("?".into(), |k| k.to_string()),
            proc_status_kb(e_pid, "RssFile").map_or("?".into(), |k| k.to_string()),
            proc_status_kb(n_pid, "VmRSS").map_or("?".into(), |k| k.to_string()),
        ),
    );
    // The daemon's CPU unscraped, then scraped every 15 s, twice in turn.
    let window = Duration::from_secs(60);
    let pct = |t: u64| t as f64 / HZ / window.as_secs_f64() * 100.0;
    let mut unscraped = Vec::new();
    let mut scraped = Vec::new();
    for _ in 0..2 {
        let idle = ticks(daemon);
        tokio::time::sleep(window).await;
        unscraped.push(pct(ticks(daemon).saturating_sub(idle)));
        let busy = ticks(daemon);
        let t = Instant::now();
        while t.elapsed() < window {
            get(EXPORTER, "/metrics").await?;
            tokio::time::sleep(Duration::from_secs(15).min(window.saturating_sub(t.elapsed())))
                .await;
        }
        scraped.push(pct(ticks(daemon).saturating_sub(busy)));
    }
    let list = |v: &[f64]| {
        v.iter()
            .map(|p| format!("{p:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    figure(
        "exporter_daemon_cpu_percent_60s",
        format!(
            "unscraped {}, scraped every 15 s {} (in turn)",
            list(&unscraped),
            list(&scraped)
        ),
    );

    // Where a scrape's time goes in the guest (with `run-lab.sh --with-perf`): the exporter
    // and the daemon over three scrapes, each a read of every port's counters.
    super::perf_profile_during(
        &format!("{e_pid},{daemon}"),
        "/tmp/perf-scrapes.data",
        async {
            scrapes(EXPORTER, 3, fresh).await?;
            Ok(())
        },
    )
    .await?;

    flap(devices).await?;
    drop((exporter, node));
    if !hw_equal {
        bail!("rdma-exporter's hw counters differ from the hw_counters files");
    }
    Ok(())
}

/// A port set down and up between two scrapes: rdma-exporter counts two state changes.
async fn flap(devices: usize) -> Result<()> {
    let k = devices / 2;
    let (dev, netdev) = (format!("rxe{k}"), format!("dummy{k}"));
    let labels = [("device", dev.as_str()), ("port", "1")];
    let changes = |text: &str| scrape::value(text, "rdma_port_state_changes_total", &labels);
    let active = |text: &str| {
        scrape::value(
            text,
            "rdma_port_state",
            &[labels[0], labels[1], ("state", "ACTIVE")],
        )
    };
    // The port starts ACTIVE whatever ran before in this boot (the scale run leaves its
    // netdev down): past the exporter's reuse of a reading, a scrape shows it.
    run(Command::new("ip").args(["link", "set", &netdev, "up"]))?;
    let start = std::time::Instant::now();
    let mut before = get(EXPORTER, "/metrics").await?.1;
    while active(&before) != Some(1.0) {
        if start.elapsed() > Duration::from_secs(60) {
            bail!("{dev} port 1 is not ACTIVE in rdma-exporter's scrape 60 s after its netdev went up");
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;
        before = get(EXPORTER, "/metrics").await?.1;
    }
    // A node_exporter scraped before and after would show the same state: the flap falls
    // between its reads. rdma-exporter's count comes from the daemon, which saw both moves.
    let (_, node_before) = get(NODE, "/metrics").await?;
    run(Command::new("ip").args(["link", "set", &netdev, "down"]))?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    run(Command::new("ip").args(["link", "set", &netdev, "up"]))?;
    // Past the exporter's 1 s reuse, and time for the daemon's events under TCG.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (_, after) = get(EXPORTER, "/metrics").await?;
    let (_, node_after) = get(NODE, "/metrics").await?;
    let node_state = |text: &str| {
        scrape::value(text, "node_infiniband_state_id", &labels)
            .map_or("?".into(), |v| v.to_string())
    };
    let state = active;
    let (c0, c1) = (changes(&before), changes(&after));
    figure(
        "exporter_flap",
        format!(
            "{dev} port 1 down and up between two scrapes: rdma_port_state_changes_total {} -> {}, ACTIVE {} -> {}; node_exporter's node_infiniband_state_id {} -> {}",
            c0.map_or("?".into(), |v| v.to_string()),
            c1.map_or("?".into(), |v| v.to_string()),
            state(&before).map_or("?".into(), |v| v.to_string()),
            state(&after).map_or("?".into(), |v| v.to_string()),
            node_state(&node_before),
            node_state(&node_after),
        ),
    );
    match (c0, c1) {
        (Some(a), Some(b)) if b - a == 2.0 => Ok(()),
        _ => bail!("rdma-exporter did not count {dev}'s flap as two state changes"),
    }
}
