//! `rdma_lab_scale_exporter_scrapes=N`: rdma-exporter against Debian's
//! `prometheus-node-exporter` limited to its infiniband collector, side by side on the same
//! rxe devices in the same guest (docs/PERFORMANCE.md, "rdma-exporter in the kernel lab"):
//!
//! - the `node_infiniband_*` series both serve, value for value;
//! - N scrapes of each, 1.1 s apart (past rdma-exporter's 1 s reuse of a collection and the
//!   daemon's tick): latency, and CPU per scrape of the exporter itself, of rdma-managerd
//!   (above its CPU over the same time while node_exporter was scraped, which asks nothing of
//!   it) and of the bus; rdma-exporter's resident set before any scrape and after;
//! - rdma-managerd's CPU over 60 s unscraped, then over 60 s with rdma-exporter scraped every
//!   15 s (Prometheus' default interval);
//! - a port set down and up between two scrapes: rdma-exporter's
//!   `rdma_port_state_changes_total` counts it (two changes; the run fails otherwise), where
//!   node_exporter's `node_infiniband_state_id` shows the same state before and after.
//!
//! Both programs come from the host (`run-lab.sh --extra-bin`).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rdma_manager_tests::gmo::run_quiet as run;
use rdma_manager_tests::procfs::cpu_ticks;
use rdma_manager_tests::scrape;

use super::{figure, proc_status_kb};

const EXPORTER: &str = "127.0.0.1:19942";
const NODE: &str = "127.0.0.1:19943";
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

/// `n` scrapes of `addr`, 1.1 s apart: their latencies in ms, sorted.
async fn scrapes(addr: &'static str, n: usize) -> Result<Vec<f64>> {
    let mut ms = Vec::with_capacity(n);
    for _ in 0..n {
        let (took, _) = get(addr, "/metrics").await?;
        ms.push(took.as_secs_f64() * 1e3);
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    ms.sort_by(f64::total_cmp);
    Ok(ms)
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

    // Latency and CPU per scrape. node_exporter asks nothing of the daemon: the daemon's CPU
    // meanwhile is its own idle work, taken off what it spends while rdma-exporter scrapes.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (e_ms, e_cpu) = cpu_during([e_pid, daemon, bus], scrapes(EXPORTER, n)).await?;
    let (n_ms, n_cpu) = cpu_during([n_pid, daemon, bus], scrapes(NODE, n)).await?;
    let per = |t: u64| t as f64 / HZ * 1e3 / n as f64;
    let daemon_idle = per(n_cpu[1]);
    let e_total = per(e_cpu[0]) + (per(e_cpu[1]) - daemon_idle).max(0.0) + per(e_cpu[2]);
    let n_total = per(n_cpu[0]) + per(n_cpu[2]);
    figure(
        "exporter_scrape_ms",
        format!(
            "rdma-exporter p50 {:.1} (min {:.1}, max {:.1}), node_exporter p50 {:.1} (min {:.1}, max {:.1}): {:.1}x",
            e_ms[n / 2],
            e_ms[0],
            e_ms[n - 1],
            n_ms[n / 2],
            n_ms[0],
            n_ms[n - 1],
            n_ms[n / 2] / e_ms[n / 2]
        ),
    );
    figure(
        "exporter_cpu_per_scrape_ms",
        format!(
            "rdma-exporter {:.1} + rdma-managerd {:.1} (its {:.1} less {:.1} idle) + bus {:.1} = {:.1}; node_exporter {:.1} + bus {:.1} = {:.1}: {:.1}x",
            per(e_cpu[0]),
            (per(e_cpu[1]) - daemon_idle).max(0.0),
            per(e_cpu[1]),
            daemon_idle,
            per(e_cpu[2]),
            e_total,
            per(n_cpu[0]),
            per(n_cpu[2]),
            n_total,
            n_total / e_total.max(0.1)
        ),
    );
    figure(
        "exporter_rss_kib",
        format!(
            "rdma-exporter before any scrape {}, after {} scrapes {}; node_exporter {}",
            rss_before.map_or("?".into(), |k| k.to_string()),
            n + 3,
            proc_status_kb(e_pid, "VmRSS").map_or("?".into(), |k| k.to_string()),
            proc_status_kb(n_pid, "VmRSS").map_or("?".into(), |k| k.to_string()),
        ),
    );
    // The daemon's CPU unscraped, then scraped every 15 s.
    let window = Duration::from_secs(60);
    let idle = ticks(daemon);
    tokio::time::sleep(window).await;
    let idle = ticks(daemon).saturating_sub(idle);
    let scraped = ticks(daemon);
    let t = Instant::now();
    while t.elapsed() < window {
        get(EXPORTER, "/metrics").await?;
        tokio::time::sleep(Duration::from_secs(15).min(window.saturating_sub(t.elapsed()))).await;
    }
    let scraped = ticks(daemon).saturating_sub(scraped);
    let pct = |t: u64| t as f64 / HZ / window.as_secs_f64() * 100.0;
    figure(
        "exporter_daemon_cpu_percent_60s",
        format!(
            "unscraped {:.2}, scraped every 15 s {:.2}",
            pct(idle),
            pct(scraped)
        ),
    );

    flap(devices).await?;
    drop((exporter, node));
    Ok(())
}

/// A port set down and up between two scrapes: rdma-exporter counts two state changes.
async fn flap(devices: usize) -> Result<()> {
    let k = devices / 2;
    let (dev, netdev) = (format!("rxe{k}"), format!("dummy{k}"));
    let labels = [("device", dev.as_str()), ("port", "1")];
    let changes = |text: &str| scrape::value(text, "rdma_port_state_changes_total", &labels);
    // A node_exporter scraped before and after would show the same state: the flap falls
    // between its reads. rdma-exporter's count comes from the daemon, which saw both moves.
    let (_, before) = get(EXPORTER, "/metrics").await?;
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
    let state = |text: &str| {
        scrape::value(
            text,
            "rdma_port_state",
            &[labels[0], labels[1], ("state", "ACTIVE")],
        )
    };
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
