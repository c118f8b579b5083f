//! rdma-bench: the daemon's benchmarks on a generated simulated host (docs/PERFORMANCE.md).
//!
//! Starts a private dbus-daemon and, on it:
//! - `rdma-managerd --address=<bus> --sim-host=large:D:P:I` as a process, several times: process
//!   start until the bus name has an owner, with the daemon's own log of where the time went
//!   (rendering the simulated tree, reading the host, publishing the objects);
//! - one such daemon left idle: its RSS, its CPU over a window at the 1 Hz tick, then
//!   GetManagedObjects and the root's Introspect from a client on the same bus;
//! - one with a short tick (`--tick-ms`), until every port's history (both rings: an hour of ticks) is full: RSS;
//! - in this process: the heap the simulated host's model, the engine's state and a full
//!   history take, and the service on a SimHost that is unplugged and re-plugged while a client
//!   times InterfacesRemoved/InterfacesAdded of the device;
//! - in this process: the declarative state (`state`): DiffState and ApplyState of the host's
//!   own state (nothing to change) and of states with N differences, with the changes asked of
//!   the simulated host counted.
//!
//! Prints a table (p50/p99/max). A benchmark, not a test: nothing is asserted, targets are
//! printed beside the figures. Needs root (the private bus runs in its own mount namespace).

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures::StreamExt;
use rdma_manager_dbus::{device_path, BUS_NAME, ROOT_PATH};
use rdma_manager_tests::bus::PrivateBus;
use rdma_managerd::dbus::server::{self, Bus};
use rdma_managerd::engine::{EngineConfig, History, ObservedState};
use rdma_managerd::kernel::sim::{fixtures, SimHost};
use rdma_managerd::kernel::TrafficCounters;
use zbus::fdo::{DBusProxy, ObjectManagerProxy};
use zbus::Connection;

/// Counts the heap bytes this process has live (as requested, without malloc's overhead), to
/// weigh data structures by building them.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; only a counter is kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            LIVE.fetch_add(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(l);
        if !p.is_null() {
            LIVE.fetch_add(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = System.realloc(p, l, new);
        if !q.is_null() {
            LIVE.fetch_add(new, Ordering::Relaxed);
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

const USAGE: &str = "usage: rdma-bench [--quick] [--daemon=PATH] [--shape=D:P:I] [--cpu-secs=N]
                  [--only=SECTION,...] [--sim-host=SPEC] [--sim-cost=PROFILE]

  --quick        fewer runs and shorter windows (a minute or so instead of several)
  --daemon=PATH  the rdma-managerd binary (default: the one beside this program)
  --shape=D:P:I  devices, ports per device, IPoIB interfaces (default 256:2:1024)
  --cpu-secs=N   length of the idle CPU window (default 60, --quick 10)
  --only=...     run only these of startup, idle (RSS, CPU, GetManagedObjects), history,
                 weigh (heap of model, state, history), hotplug, state (DiffState and
                 ApplyState of the host's state and of N differences, with writes counted)
  --sim-host=SPEC  the daemon's simulated host instead of large:D:P:I (e.g. rxe:256, the
                 lab's shape), for startup, idle and history
  --sim-cost=PROFILE  what the daemon's simulated host charges for its reads (off, lab,
                 lab/N: see rdma-managerd --help), for startup, idle and history

The simulated host's tree is put in /dev/shm when it exists (sysfs is in memory too; set
TMPDIR to choose another place).";

struct Opts {
    quick: bool,
    daemon: PathBuf,
    shape: (u32, u32, u32),
    startups: usize,
    gmo_calls: usize,
    cycles: usize,
    cpu_secs: u64,
    fill_tick_ms: u64,
    only: Option<Vec<String>>,
    sim_host: Option<String>,
    sim_cost: Option<String>,
}

impl Opts {
    fn runs(&self, section: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|o| o.iter().any(|s| s == section))
    }
}

fn parse() -> Result<Opts> {
    let mut quick = false;
    let mut daemon = None;
    let mut shape = (256, 2, 1024);
    let mut cpu_secs = None;
    let mut only = None;
    let mut sim_host = None;
    let mut sim_cost = None;
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--quick" => quick = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            s if s.starts_with("--daemon=") => daemon = Some(PathBuf::from(&s[9..])),
            s if s.starts_with("--cpu-secs=") => cpu_secs = Some(s[11..].parse()?),
            s if s.starts_with("--sim-host=") => sim_host = Some(s[11..].to_string()),
            s if s.starts_with("--sim-cost=") => sim_cost = Some(s[11..].to_string()),
            s if s.starts_with("--only=") => {
                only = Some(s[7..].split(',').map(str::to_string).collect())
            }
            s if s.starts_with("--shape=") => {
                let n: Vec<u32> = s[8..]
                    .split(':')
                    .map(|x| x.parse())
                    .collect::<Result<_, _>>()?;
                match n.as_slice() {
                    [d, p, i] => shape = (*d, *p, *i),
                    _ => bail!("--shape=D:P:I\n{USAGE}"),
                }
            }
            s => bail!("unknown argument {s}\n{USAGE}"),
        }
    }
    let daemon = match daemon {
        Some(d) => d,
        None => std::env::current_exe()?
            .parent()
            .context("the directory of this program")?
            .join("rdma-managerd"),
    };
    if !daemon.is_file() {
        bail!(
            "{} not found: build it (cargo build --release) or give --daemon=PATH",
            daemon.display()
        );
    }
    Ok(Opts {
        quick,
        daemon,
        shape,
        startups: if quick { 3 } else { 10 },
        gmo_calls: if quick { 20 } else { 50 },
        cycles: if quick { 30 } else { 200 },
        cpu_secs: cpu_secs.unwrap_or(if quick { 10 } else { 60 }),
        fill_tick_ms: if quick { 10 } else { 20 },
        only,
        sim_host,
        sim_cost,
    })
}

// ---- results --------------------------------------------------------------------------------

struct Row {
    what: String,
    unit: &'static str,
    values: Vec<f64>,
    target: &'static str,
}

#[derive(Default)]
struct Report {
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl Report {
    fn add(&mut self, what: impl Into<String>, unit: &'static str, values: Vec<f64>) {
        self.target(what, unit, values, "");
    }

    fn target(
        &mut self,
        what: impl Into<String>,
        unit: &'static str,
        values: Vec<f64>,
        target: &'static str,
    ) {
        let row = Row {
            what: what.into(),
            unit,
            values,
            target,
        };
        eprintln!("  {}", format_row(&row));
        self.rows.push(row);
    }

    fn note(&mut self, n: impl Into<String>) {
        let n = n.into();
        eprintln!("  note: {n}");
        self.notes.push(n);
    }

    fn print(&self) {
        println!(
            "{:<58} {:>4} {:>9} {:>9} {:>9}  {:<6} target",
            "measure", "n", "p50", "p99", "max", "unit"
        );
        for r in &self.rows {
            println!("{}", format_row(r));
        }
        for n in &self.notes {
            println!("- {n}");
        }
    }
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn format_row(r: &Row) -> String {
    let mut v = r.values.clone();
    v.sort_by(f64::total_cmp);
    let f = |x: f64| {
        if x >= 100.0 {
            format!("{x:.0}")
        } else {
            format!("{x:.2}")
        }
    };
    if v.is_empty() {
        return format!("{:<58} {:>4} {:>9}", r.what, 0, "-");
    }
    format!(
        "{:<58} {:>4} {:>9} {:>9} {:>9}  {:<6} {}",
        r.what,
        v.len(),
        f(percentile(&v, 0.5)),
        f(percentile(&v, 0.99)),
        f(v[v.len() - 1]),
        r.unit,
        r.target
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

// ---- the daemon as a process ----------------------------------------------------------------

struct Daemon {
    child: Child,
    log: PathBuf,
}

impl Daemon {
    /// Starts rdma-managerd on the bus and waits until it owns the name and then until its
    /// start-up is over (the root's `Startup` false); returns it, the time from just before
    /// the spawn until NameOwnerChanged arrived, and until Startup was false.
    async fn start(
        opts: &Opts,
        bus: &PrivateBus,
        watcher: &Connection,
        extra: &[String],
        log: PathBuf,
    ) -> Result<(Daemon, Duration, Duration)> {
        let dbus = DBusProxy::new(watcher).await?;
        if dbus.name_has_owner(BUS_NAME.try_into()?).await? {
            bail!("{BUS_NAME} is still owned by an earlier daemon");
        }
        let mut owners = dbus
            .receive_name_owner_changed_with_args(&[(0, BUS_NAME)])
            .await?;
        let (d, p, i) = opts.shape;
        let host = opts
            .sim_host
            .clone()
            .unwrap_or_else(|| format!("large:{d}:{p}:{i}"));
        let t0 = Instant::now();
        let child = Command::new(&opts.daemon)
            .arg(format!("--address={}", bus.address()))
            .arg(format!("--sim-host={host}"))
            .args(opts.sim_cost.iter().map(|c| format!("--sim-cost={c}")))
            .args(extra)
            // The daemon's own default filter, as the unit runs it. `info` alone also opens
            // zbus's span around each method call, whose fields (the whole message and its
            // header) the log formatter renders on every call: time and code a daemon as
            // installed does not spend.
            .env("RUST_LOG", rdma_managerd::cli::DEFAULT_LOG_FILTER)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()
            .with_context(|| format!("starting {}", opts.daemon.display()))?;
        let mut daemon = Daemon { child, log };
        loop {
            let sig = match tokio::time::timeout(Duration::from_secs(60), owners.next()).await {
                Ok(Some(sig)) => sig,
                _ => bail!("{BUS_NAME} not owned within 60 s:\n{}", daemon.log()),
            };
            if sig.args()?.new_owner().is_some() {
                let named = t0.elapsed();
                let manager = rdma_manager_dbus::proxies::ManagerProxy::new(watcher).await?;
                let mut changes = manager.receive_startup_changed().await;
                let ready = async {
                    while manager.startup().await? {
                        if changes.next().await.is_none() {
                            bail!("the daemon's connection ended while it started");
                        }
                    }
                    Ok(t0.elapsed())
                };
                let ready = match tokio::time::timeout(Duration::from_secs(600), ready).await {
                    Ok(r) => r?,
                    Err(_) => bail!("Startup still true after 600 s:\n{}", daemon.log()),
                };
                return Ok((daemon, named, ready));
            }
            if let Some(status) = daemon.child.try_wait()? {
                bail!("rdma-managerd exited ({status}):\n{}", daemon.log());
            }
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// A number the daemon logged as `key=value`, waiting up to a second for the line.
    async fn logged(&self, key: &str) -> Option<f64> {
        let needle = format!(" {key}=");
        for _ in 0..100 {
            let log = self.log();
            if let Some(at) = log.find(&needle) {
                let rest = &log[at + needle.len()..];
                let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                return rest[..end].trim_matches('"').parse().ok();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        None
    }

    fn status_kib(&self, field: &str) -> Result<f64> {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))?;
        s.lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .with_context(|| format!("{field} in /proc/{}/status", self.pid()))
    }

    /// (VmRSS, RssAnon, RssFile) in MiB.
    fn rss(&self) -> Result<(f64, f64, f64)> {
        Ok((
            self.status_kib("VmRSS")? / 1024.0,
            self.status_kib("RssAnon")? / 1024.0,
            self.status_kib("RssFile")? / 1024.0,
        ))
    }

    /// Threads of the daemon (each has its stack; the runtime's workers also a cache).
    fn threads(&self) -> Result<f64> {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))?;
        s.lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .and_then(|v| v.trim().parse().ok())
            .with_context(|| format!("Threads in /proc/{}/status", self.pid()))
    }

    /// utime + stime in seconds.
    fn cpu_secs(&self) -> Result<f64> {
        let s = std::fs::read_to_string(format!("/proc/{}/stat", self.pid()))?;
        // Fields after the command name (which may contain spaces) in parentheses.
        let rest = &s[s.rfind(')').context("stat")? + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 = f[11].parse::<u64>()? + f[12].parse::<u64>()?;
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        Ok(ticks as f64 / hz)
    }

    /// SIGTERM, then SIGKILL after 5 s.
    async fn stop(mut self) {
        // SAFETY: kill on our own child's pid.
        unsafe { libc::kill(self.pid() as i32, libc::SIGTERM) };
        for _ in 0..500 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn startup(
    opts: &Opts,
    bus: &PrivateBus,
    dir: &std::path::Path,
    r: &mut Report,
) -> Result<()> {
    eprintln!("start to name acquired ({} runs)", opts.startups);
    let watcher = bus.connect().await?;
    let (mut total, mut ready, mut host, mut read, mut publish, mut serve) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    for n in 0..opts.startups {
        let (d, t, t_ready) =
            Daemon::start(opts, bus, &watcher, &[], dir.join(format!("start{n}.log"))).await?;
        total.push(ms(t));
        ready.push(ms(t_ready));
        for (key, into) in [
            ("host_ms", &mut host),
            ("read_ms", &mut read),
            ("publish_ms", &mut publish),
            ("serve_ms", &mut serve),
        ] {
            if let Some(v) = d.logged(key).await {
                into.push(v);
            }
        }
        d.stop().await;
    }
    // The parts below add up to the end of start-up, not to the name (owned before it).
    let rest: Vec<f64> = ready
        .iter()
        .zip(host.iter().zip(serve.iter()))
        .map(|(t, (h, s))| t - h - s)
        .collect();
    r.add("startup: process start -> name owned (whole)", "ms", total);
    r.add(
        "startup: process start -> start-up over (Startup false)",
        "ms",
        ready,
    );
    r.add(
        "  of which: simulated host generated and rendered",
        "ms",
        host,
    );
    r.add(
        "  of which: connect, own the name, enumerate, publish",
        "ms",
        serve,
    );
    r.add("    of those: enumerating the host (engine)", "ms", read);
    r.add(
        "    of those: publishing every object (bus layer)",
        "ms",
        publish,
    );
    r.add(
        "  of which: the rest (exec, runtime, signal delivery)",
        "ms",
        rest,
    );
    Ok(())
}

/// Calls a method of the root `n` times: the milliseconds from call to whole reply received,
/// and the size of the last reply.
async fn time_root_call(
    client: &Connection,
    interface: &str,
    method: &str,
    n: usize,
) -> Result<(Vec<f64>, usize)> {
    let (mut times, mut size) = (vec![], 0);
    for _ in 0..n {
        let t = Instant::now();
        let reply = client
            .call_method(Some(BUS_NAME), ROOT_PATH, Some(interface), method, &())
            .await?;
        times.push(ms(t.elapsed()));
        size = reply.data().len();
    }
    Ok((times, size))
}

async fn idle_daemon(
    opts: &Opts,
    bus: &PrivateBus,
    dir: &std::path::Path,
    r: &mut Report,
) -> Result<()> {
    let client = bus.connect().await?;
    // Answers the daemon's Peer.Ping, by which it learns that this client reads its replies
    // (a zbus connection without its object server never answers, and after 16 MiB of
    // unanswered GetManagedObjects replies the daemon refuses more: dbus/limits.rs).
    let _ = client.object_server();
    let (d, _, _) = Daemon::start(opts, bus, &client, &[], dir.join("idle.log")).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rss, anon, file) = d.rss()?;
    r.target(
        "RSS 2 s after start, no client yet",
        "MiB",
        vec![rss],
        "< 16 MB",
    );
    r.add("  anonymous (heap, stacks)", "MiB", vec![anon]);
    r.add(
        "  file-backed (the binary's and libraries' pages)",
        "MiB",
        vec![file],
    );

    eprintln!("idle CPU at 1 Hz over {} s", opts.cpu_secs);

    let c0 = d.cpu_secs()?;
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(opts.cpu_secs)).await;
    let used = d.cpu_secs()? - c0;
    let pct = 100.0 * used / t0.elapsed().as_secs_f64();
    r.target(
        format!(
            "CPU idle, 1 Hz sampling of every port ({} s)",
            opts.cpu_secs
        ),
        "% core",
        vec![pct],
        "< 1 %",
    );
    // Under --sim-cost the daemon logs its simulated host's reads and what they were charged.
    for line in d
        .log()
        .lines()
        .filter(|l| l.contains("simulated host: reads"))
    {
        let from = line.find("ops=").unwrap_or(0);
        r.note(line[from..].to_string());
    }
    let (rss, _, _) = d.rss()?;
    r.add(
        format!("RSS after {} s idle", opts.cpu_secs),
        "MiB",
        vec![rss],
    );

    eprintln!("GetManagedObjects ({} calls)", opts.gmo_calls);
    let mut typed = vec![];
    let c0 = d.cpu_secs()?;
    let (raw, size) = time_root_call(
        &client,
        "org.freedesktop.DBus.ObjectManager",
        "GetManagedObjects",
        opts.gmo_calls,
    )
    .await?;
    let cpu_per_call = (d.cpu_secs()? - c0) * 1e3 / opts.gmo_calls as f64;
    let om = ObjectManagerProxy::builder(&client)
        .destination(BUS_NAME)?
        .path(ROOT_PATH)?
        .build()
        .await?;
    let mut objects = 0;
    for _ in 0..opts.gmo_calls.min(20) {
        let t = Instant::now();
        let all = om.get_managed_objects().await?;
        typed.push(ms(t.elapsed()));
        objects = all.values().filter(|i| !i.is_empty()).count();
    }
    r.target(
        "GetManagedObjects: call -> whole reply received",
        "ms",
        raw,
        "< 20 ms",
    );
    r.add(
        "  the daemon's CPU per call (utime+stime / calls)",
        "ms",
        vec![cpu_per_call],
    );
    r.add("GetManagedObjects: the same, decoded by zbus", "ms", typed);
    // The least a zbus client can do to read the objects (gmo::BorrowedObjects).
    let mut borrowed = vec![];
    for _ in 0..opts.gmo_calls.min(20) {
        let t = Instant::now();
        let reply = client
            .call_method(
                Some(BUS_NAME),
                ROOT_PATH,
                Some("org.freedesktop.DBus.ObjectManager"),
                "GetManagedObjects",
                &(),
            )
            .await?;
        let body = reply.body();
        let all: rdma_manager_tests::gmo::BorrowedObjects<'_> = body.deserialize()?;
        borrowed.push(ms(t.elapsed()));
        std::hint::black_box(all);
    }
    r.add(
        "GetManagedObjects: the same, decoded by zbus borrowing its strings",
        "ms",
        borrowed,
    );
    r.note(format!(
        "GetManagedObjects returns {objects} objects in {:.2} MiB",
        mib(size)
    ));
    let (intro, size) = time_root_call(
        &client,
        "org.freedesktop.DBus.Introspectable",
        "Introspect",
        10,
    )
    .await?;
    r.add("Introspect of the root", "ms", intro);
    r.note(format!(
        "the root's introspection XML is {:.1} KiB",
        size as f64 / 1024.0
    ));
    let (rss, _, _) = d.rss()?;
    r.add("RSS after those calls", "MiB", vec![rss]);
    d.stop().await;
    Ok(())
}

async fn history_full(
    opts: &Opts,
    bus: &PrivateBus,
    dir: &std::path::Path,
    r: &mut Report,
) -> Result<()> {
    let tick = opts.fill_tick_ms;
    // The coarse ring spans the whole history: an hour of ticks.
    let ticks = rdma_managerd::engine::history::HISTORY_SPAN_TICKS;
    let wait = Duration::from_millis(tick * (ticks + 50)) + Duration::from_secs(2);
    eprintln!("history full: --tick-ms={tick}, waiting {wait:?}");
    let client = bus.connect().await?;
    let (d, _, _) = Daemon::start(
        opts,
        bus,
        &client,
        &[format!("--tick-ms={tick}")],
        dir.join("fill.log"),
    )
    .await?;
    tokio::time::sleep(wait).await;
    let (rss, anon, file) = d.rss()?;
    let threads = d.threads()?;
    let by_mapping = rdma_manager_tests::procfs::rss_by_mapping(d.pid())?;
    let port = rdma_manager_dbus::port_path(0, 1);
    let mut counts = Vec::new();
    for method in ["GetThroughputHistory", "GetThroughputHistoryCoarse"] {
        let reply = client
            .call_method(
                Some(BUS_NAME),
                port.as_str(),
                Some("org.rdmamanager.RdmaManager1.Port"),
                method,
                &(),
            )
            .await;
        // An older daemon (--daemon=) has no coarse history.
        let n = match reply {
            Ok(reply) => reply
                .body()
                .deserialize::<Vec<(u64, f64, f64, f64, f64, u8)>>()?
                .len()
                .to_string(),
            Err(e) => format!("none ({e})"),
        };
        counts.push(format!("{method}: {n}"));
    }
    r.target(
        format!("RSS with every port's history full (--tick-ms={tick})"),
        "MiB",
        vec![rss],
        "< 16 MB",
    );
    r.add("  anonymous", "MiB", vec![anon]);
    r.add("  file-backed", "MiB", vec![file]);
    r.add("  threads", "", vec![threads]);
    let top: Vec<String> = by_mapping
        .iter()
        .take(8)
        .map(|(name, kib)| format!("{name} {kib} KiB"))
        .collect();
    r.note(format!(
        "resident by mapping, largest first: {}",
        top.join(", ")
    ));
    r.note(format!(
        "after {:.0} s at --tick-ms={tick}, {port} returned samples with data: {} (ticks \
         the poll could not keep up with are gaps, which hold their place in the ring)",
        wait.as_secs_f64(),
        counts.join(", ")
    ));
    d.stop().await;
    Ok(())
}

// ---- in this process ------------------------------------------------------------------------

async fn weigh(opts: &Opts, bus: &PrivateBus, r: &mut Report) -> Result<()> {
    eprintln!("heap of the model, the state and a full history");
    let (d, p, i) = opts.shape;
    let before = live();
    let spec = fixtures::large_host(d, p, i);
    let spec_bytes = live() - before;
    let sim = SimHost::new(spec)?;
    let before = live();
    let state = ObservedState::read(&sim).await?;
    let state_bytes = live() - before;
    let ports: Vec<(u32, u32)> = state
        .devices
        .values()
        .flat_map(|d| d.sources.keys().map(|p| (d.index, *p)))
        .collect();
    let before = live();
    let mut history = History::default();
    let ticks = rdma_managerd::engine::history::HISTORY_SPAN_TICKS;
    for t in 0..ticks + 10 {
        for key in &ports {
            let c = TrafficCounters {
                tx_bytes: Ok(t * 1000),
                rx_bytes: Ok(t * 2000),
                tx_packets: Ok(t),
                rx_packets: Ok(t),
                saturated: false,
            };
            history.port_mut(*key).record(t, t as f64, &c);
        }
    }
    let history_bytes = live() - before;
    drop(history);
    let before = live();
    let conn = server::connect(&Bus::Address(bus.address().to_string())).await?;
    let service = server::serve(conn, Arc::new(sim.clone()), true, EngineConfig::default()).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let served_bytes = live() - before;
    service.conn.release_name(BUS_NAME).await?;
    service.task.abort();
    // The service holds the host in reference cycles: its temporary tree is removed here.
    let _ = std::fs::remove_dir_all(sim.root());
    r.add(
        "heap: simulated host's own model (not in a real daemon)",
        "MiB",
        vec![mib(spec_bytes)],
    );
    r.add(
        "heap: the engine's state of the host",
        "MiB",
        vec![mib(state_bytes)],
    );
    r.add(
        format!(
            "heap: full history, {} ports x {ticks} ticks ({} fine samples, {} averages)",
            ports.len(),
            rdma_managerd::engine::history::FINE_TICKS,
            rdma_managerd::engine::history::COARSE_LEN
        ),
        "MiB",
        vec![mib(history_bytes)],
    );
    r.add(
        "heap: served (connection, engine state, views, zbus objects)",
        "MiB",
        vec![mib(served_bytes)],
    );
    Ok(())
}

async fn hotplug(opts: &Opts, bus: &PrivateBus, r: &mut Report) -> Result<()> {
    eprintln!("hotplug ({} unplug/plug cycles)", opts.cycles);
    let (d, p, i) = opts.shape;
    let sim = SimHost::new(fixtures::large_host(d, p, i))?;
    let conn = server::connect(&Bus::Address(bus.address().to_string())).await?;
    let service = server::serve(conn, Arc::new(sim.clone()), true, EngineConfig::default()).await?;
    let client = bus.connect().await?;
    let om = ObjectManagerProxy::builder(&client)
        .destination(BUS_NAME)?
        .path(ROOT_PATH)?
        .build()
        .await?;
    let mut added = om.receive_interfaces_added().await?;
    let mut removed = om.receive_interfaces_removed().await?;
    let spec = sim.spec();
    let (mut unplug, mut plug, mut plug_all, mut call) = (vec![], vec![], vec![], vec![]);
    // The devices' current indexes (a re-plugged device gets a new one).
    let mut index: Vec<u32> = spec.devices.iter().map(|d| d.index).collect();
    let mut jitter = 0x2545_f491_4f6c_dd1du64;
    let timeout = Duration::from_secs(10);
    for n in 0..opts.cycles {
        let k = n % spec.devices.len();
        let dev = spec.devices[k].clone();
        let gone = device_path(index[k]);
        let t = Instant::now();
        sim.unplug(&dev.name)?;
        loop {
            let sig = tokio::time::timeout(timeout, removed.next())
                .await
                .context("InterfacesRemoved in time")?
                .context("stream")?;
            if sig.args()?.object_path().as_str() == gone {
                unplug.push(ms(t.elapsed()));
                break;
            }
        }
        // Spread the cycles over the tick's phase.
        jitter ^= jitter << 13;
        jitter ^= jitter >> 7;
        jitter ^= jitter << 17;
        tokio::time::sleep(Duration::from_millis(jitter % 40)).await;

        let ports = dev.ports.len();
        let t = Instant::now();
        sim.plug(dev)?;
        call.push(ms(t.elapsed()));
        let mut seen = 0;
        while seen <= ports {
            let sig = tokio::time::timeout(timeout, added.next())
                .await
                .context("InterfacesAdded in time")?
                .context("stream")?;
            let path = sig.args()?.object_path().to_string();
            if seen == 0 {
                if path.contains("/Port/") {
                    continue;
                }
                plug.push(ms(t.elapsed()));
                index[k] = path.rsplit('/').next().unwrap_or("0").parse()?;
            }
            seen += 1;
        }
        plug_all.push(ms(t.elapsed()));
        tokio::time::sleep(Duration::from_millis(jitter % 37)).await;
    }
    r.target(
        "hotplug: unplug -> InterfacesRemoved of the device",
        "ms",
        unplug,
        "p99 < 20 ms",
    );
    r.target(
        "hotplug: plug -> InterfacesAdded of the device",
        "ms",
        plug,
        "p99 < 20 ms",
    );
    r.add(
        "hotplug: plug -> InterfacesAdded of its last port",
        "ms",
        plug_all,
    );
    r.add(
        "  of which: SimHost::plug rendering the device's files",
        "ms",
        call,
    );
    service.task.abort();
    // The service holds the host in reference cycles: its temporary tree is removed here.
    let _ = std::fs::remove_dir_all(sim.root());
    Ok(())
}

/// The declarative state on the service in this process: DiffState and ApplyState of the
/// document GetState prints (nothing to change: no write may be asked of the host), then of
/// documents that change `umcast` on N IPoIB interfaces, each apply undone by the next so
/// that every run changes N settings. Kernel changes are counted by the simulated host.
async fn state_apply(opts: &Opts, bus: &PrivateBus, r: &mut Report) -> Result<()> {
    let runs = if opts.quick { 3 } else { 10 };
    eprintln!("state ({runs} runs each)");
    let (d, p, i) = opts.shape;
    let sim = SimHost::new(fixtures::large_host(d, p, i))?;
    let conn = server::connect(&Bus::Address(bus.address().to_string())).await?;
    // The caller is this process: the demo's authorizer, as `rdma-tui --demo` serves it.
    let authorizer = rdma_managerd::dbus::polkit::Authorizer::same_user_for_simulation(&conn);
    let system = Arc::new(rdma_managerd::system::BusSystemServices::new(&conn));
    let service = server::serve_with(
        conn,
        Arc::new(sim.clone()),
        true,
        EngineConfig::default(),
        authorizer,
        system,
    )
    .await?;
    let client = bus.connect().await?;
    let m = rdma_manager_dbus::ManagerProxy::builder(&client)
        .destination(BUS_NAME)?
        .build()
        .await?;
    // Long enough for an apply of a thousand steps on a loaded machine.
    let timed = |calls: usize| Duration::from_secs(30 + calls as u64);
    let t = Instant::now();
    let full = m.get_state("yaml").await?;
    r.add("state: GetState (yaml)", "ms", vec![ms(t.elapsed())]);
    r.notes.push(format!(
        "state: the host's document is {} KiB, {} lines",
        full.len() / 1024,
        full.lines().count()
    ));
    let (mut diff, mut apply) = (vec![], vec![]);
    let before = sim.writes();
    for _ in 0..runs {
        let t = Instant::now();
        let changes = m.diff_state(&full).await?;
        diff.push(ms(t.elapsed()));
        anyhow::ensure!(
            changes.is_empty(),
            "the host's own state differs: {changes:?}"
        );
        let t = Instant::now();
        let (changes, _) = tokio::time::timeout(timed(0), m.apply_state(&full, 0)).await??;
        apply.push(ms(t.elapsed()));
        anyhow::ensure!(changes.is_empty(), "{changes:?}");
    }
    let written = sim.writes();
    r.add("state: DiffState of the host's own state", "ms", diff);
    r.add("state: ApplyState of the host's own state", "ms", apply);
    r.notes.push(format!(
        "state: host's own state applied {runs} times: {} kernel and {} file writes (must be 0)",
        written.kernel - before.kernel,
        written.files - before.files
    ));
    let names: Vec<String> = sim
        .spec()
        .netdevs
        .iter()
        .filter(|n| n.ipoib.is_some())
        .map(|n| n.name.clone())
        .collect();
    for n in [1usize, 16, 256] {
        let n = n.min(names.len());
        let doc = |umcast: bool| {
            let mut s = String::from("interfaces:\n");
            for name in &names[..n] {
                s.push_str(&format!(
                    "  - {{name: {name}, type: infiniband, infiniband: {{umcast: {umcast}}}}}\n"
                ));
            }
            s
        };
        let (mut diff, mut apply, mut kernel, mut files) = (vec![], vec![], vec![], vec![]);
        let mut umcast = true;
        // From a known start: every one of the N without umcast.
        tokio::time::timeout(timed(n), m.apply_state(&doc(false), 0)).await??;
        for _ in 0..runs {
            let text = doc(umcast);
            let t = Instant::now();
            let changes = m.diff_state(&text).await?;
            diff.push(ms(t.elapsed()));
            anyhow::ensure!(changes.len() == n, "{} changes, not {n}", changes.len());
            let before = sim.writes();
            let t = Instant::now();
            let (changes, _) = tokio::time::timeout(timed(n), m.apply_state(&text, 0)).await??;
            apply.push(ms(t.elapsed()));
            let after = sim.writes();
            anyhow::ensure!(
                changes.len() == n,
                "{} changes applied, not {n}",
                changes.len()
            );
            kernel.push((after.kernel - before.kernel) as f64);
            files.push((after.files - before.files) as f64);
            umcast = !umcast;
        }
        r.add(format!("state: DiffState, {n} differences"), "ms", diff);
        r.add(format!("state: ApplyState, {n} differences"), "ms", apply);
        r.add(
            format!("  kernel writes per apply of {n} differences"),
            "",
            kernel,
        );
        r.add(
            format!("  file writes per apply of {n} differences"),
            "",
            files,
        );
    }
    service.task.abort();
    let _ = std::fs::remove_dir_all(sim.root());
    Ok(())
}

fn main() -> Result<()> {
    let opts = parse()?;
    if std::env::var_os("TMPDIR").is_none() && std::path::Path::new("/dev/shm").is_dir() {
        // Before any thread starts; the daemons inherit it.
        std::env::set_var("TMPDIR", "/dev/shm");
    }
    // As the daemon: two worker threads.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let bus = PrivateBus::session().context("starting a private dbus-daemon")?;
        let dir = tempfile::tempdir()?;
        let mut r = Report::default();
        let (d, p, i) = opts.shape;
        eprintln!(
            "rdma-bench: {} on {}{}{}, simulated tree under {}",
            opts.daemon.display(),
            opts.sim_host
                .clone()
                .unwrap_or_else(|| format!("large:{d}:{p}:{i}")),
            opts.sim_cost
                .as_ref()
                .map(|c| format!(" at --sim-cost={c}"))
                .unwrap_or_default(),
            if opts.quick { " (quick)" } else { "" },
            std::env::temp_dir().display()
        );
        if opts.runs("startup") {
            startup(&opts, &bus, dir.path(), &mut r).await?;
        }
        if opts.runs("idle") {
            idle_daemon(&opts, &bus, dir.path(), &mut r).await?;
        }
        if opts.runs("history") {
            history_full(&opts, &bus, dir.path(), &mut r).await?;
        }
        if opts.runs("weigh") {
            weigh(&opts, &bus, &mut r).await?;
        }
        if opts.runs("hotplug") {
            hotplug(&opts, &bus, &mut r).await?;
        }
        if opts.runs("state") {
            state_apply(&opts, &bus, &mut r).await?;
        }
        println!();
        r.print();
        Ok(())
    })
}
