//! rdma-tui-bench: the client's benchmarks (docs/PERFORMANCE.md, "rdma-tui-bench").
//!
//! - `frame`: in this process, the time to apply one 1 Hz update (a sample for every port) and
//!   draw a whole frame of a page, with 64 InfiniBand ports and full histories (300 samples
//!   and 360 averages a port)
//!   (`fixtures::large_model(32)`), through ratatui's crossterm backend into memory: the
//!   layout, the widgets, the diff against the previous frame and the escape sequences, all
//!   but the terminal's own write. At 80x24 and 200x60, for the Overview, Port and Bandwidth
//!   pages.
//! - `start` and `idle` run the real binaries: a private dbus-daemon, `rdma-managerd
//!   --address=<bus> --sim-host=large:32:2:64` (64 ports), its histories filled with a short
//!   tick first, then `rdma-tui` in a tmux pane of 200x60:
//!   - `start`: process start to the first full frame (state read, every port's history in,
//!     drawn), as rdma-tui itself measures it under `RDMA_TUI_BENCH_FIRST_FRAME`;
//!   - `idle`: rdma-tui's CPU (utime + stime from /proc) over a window while it shows a page
//!     and the daemon signals a sample of every port each second.
//!
//! A benchmark, not a test: it prints figures beside their targets and asserts nothing.
//! Needs root (the private bus runs in its own mount namespace) and tmux.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};
use rdma_manager_dbus::BUS_NAME;
use rdma_manager_tests::bus::PrivateBus;
use rdma_tui::app::App;
use rdma_tui::client::Update;
use rdma_tui::fixtures;
use rdma_tui::pages::PageId;
use rdma_tui::theme::Theme;

const USAGE: &str = "usage: rdma-tui-bench [--only=frame,start,idle] [--frames=N] [--starts=N]
                      [--idle-secs=N] [--bin-dir=DIR]

  --frames=N     frames per page and size (default 500)
  --starts=N     rdma-tui starts to time (default 10)
  --idle-secs=N  the CPU window of the idle figure (default 30)
  --bin-dir=DIR  where rdma-managerd and rdma-tui are (default: beside this program)";

struct Opts {
    only: Vec<String>,
    frames: usize,
    starts: usize,
    idle_secs: u64,
    bin_dir: PathBuf,
}

fn parse() -> Result<Opts> {
    let exe = std::env::current_exe()?;
    let mut o = Opts {
        only: vec!["frame".into(), "start".into(), "idle".into()],
        frames: 500,
        starts: 10,
        idle_secs: 30,
        bin_dir: exe.parent().context("exe dir")?.to_path_buf(),
    };
    for a in std::env::args().skip(1) {
        let num = |p: &str| -> Result<u64> {
            a[p.len()..]
                .parse()
                .with_context(|| format!("{a}: not a number"))
        };
        match a.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            s if s.starts_with("--only=") => {
                o.only = s["--only=".len()..].split(',').map(String::from).collect()
            }
            s if s.starts_with("--frames=") => o.frames = num("--frames=")?.max(1) as usize,
            s if s.starts_with("--starts=") => o.starts = num("--starts=")?.max(1) as usize,
            s if s.starts_with("--idle-secs=") => o.idle_secs = num("--idle-secs=")?.max(1),
            s if s.starts_with("--bin-dir=") => o.bin_dir = PathBuf::from(&s["--bin-dir=".len()..]),
            s => bail!("unknown argument {s}\n{USAGE}"),
        }
    }
    Ok(o)
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn row(what: &str, target: &str, mut v: Vec<f64>, unit: &str) {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        println!("| {what} | {target} | no values |");
        return;
    }
    println!(
        "| {what} | {target} | {:.2} / {:.2} / {:.2} {unit} (n={}) |",
        percentile(&v, 0.5),
        percentile(&v, 0.99),
        v[v.len() - 1],
        v.len()
    );
}

/// A terminal that takes the escape sequences and drops them.
struct Discard;

impl std::io::Write for Discard {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        Ok(std::hint::black_box(buf).len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One second's samples of every port of `app`'s model, as ThroughputSampled carries them.
fn tick(app: &App, t: u64) -> Update {
    let samples = app
        .model
        .ports
        .keys()
        .enumerate()
        .map(|(i, p)| {
            let v = 1e9 * (1.0 + ((t + i as u64) % 17) as f64);
            (p.clone(), v, v * 0.7, v / 4096.0, v / 5000.0, 0u8)
        })
        .collect();
    Update::Samples {
        time_us: fixtures::NOW_US + t * 1_000_000,
        samples,
    }
}

fn bench_frames(o: &Opts) -> Result<()> {
    for (w, h) in [(80u16, 24u16), (200, 60)] {
        for page in [PageId::Overview, PageId::Detail, PageId::Bandwidth] {
            let mut app = App::with_model(fixtures::large_model(32), Theme::colored());
            app.show(page);
            let backend = CrosstermBackend::new(Discard);
            let mut term = Terminal::with_options(
                backend,
                TerminalOptions {
                    viewport: Viewport::Fixed(Rect::new(0, 0, w, h)),
                },
            )?;
            let mut times = Vec::with_capacity(o.frames);
            for t in 0..o.frames as u64 + 20 {
                let update = tick(&app, t + 1);
                let t0 = Instant::now();
                app.apply(update);
                let now = fixtures::NOW_US + (t + 1) * 1_000_000;
                term.draw(|f| app.render(f, now))?;
                let dt = t0.elapsed().as_secs_f64() * 1e3;
                // The first frames warm caches and draw everything; steady state is the rest.
                if t >= 20 {
                    times.push(dt);
                }
            }
            row(
                &format!("frame {w}x{h}, {} page, 64 ports", page.label()),
                "< 5 ms",
                times,
                "ms",
            );
        }
    }
    Ok(())
}

/// A running process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for_name(bus: &PrivateBus, timeout: Duration) -> Result<()> {
    let t0 = Instant::now();
    while t0.elapsed() < timeout {
        let ok = bus
            .busctl()
            .args(["status", BUS_NAME])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?
            .success();
        if ok {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("{BUS_NAME} not on the bus within {timeout:?}")
}

/// The daemon on the 64-port host, sampling every `tick_ms` (`start` uses 10 ms so that 37 s
/// fill both of every port's histories, 300 samples and 360 averages of 10 ticks, which is
/// what rdma-tui reads at start; `idle` uses the real 1 s).
fn start_daemon(bus: &PrivateBus, bin: &Path, tick_ms: u64) -> Result<Proc> {
    let child = Command::new(bin.join("rdma-managerd"))
        .arg(format!("--address={}", bus.address()))
        .arg("--sim-host=large:32:2:64")
        .arg(format!("--tick-ms={tick_ms}"))
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting rdma-managerd")?;
    let p = Proc(child);
    wait_for_name(bus, Duration::from_secs(60))?;
    Ok(p)
}

fn tmux(args: &[&str]) -> Result<String> {
    let out = Command::new("tmux")
        .args(["-L", "rdma-tui-bench"])
        .args(args)
        .output()
        .context("running tmux (apt-get install tmux)")?;
    if !out.status.success() {
        bail!(
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Starts rdma-tui in a detached 200x60 tmux session; returns its pid.
fn start_tui(bus: &PrivateBus, bin: &Path, env: &str) -> Result<u32> {
    let _ = tmux(&["kill-server"]);
    let cmd = format!(
        "exec env {env} {} --address={}",
        bin.join("rdma-tui").display(),
        bus.address()
    );
    // The previous server may still be exiting ("server exited unexpectedly"): retry.
    let new_session = || {
        tmux(&[
            "new-session",
            "-d",
            "-s",
            "bench",
            "-x",
            "200",
            "-y",
            "60",
            &cmd,
        ])
    };
    let mut started = new_session();
    for _ in 0..20 {
        if started.is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        started = new_session();
    }
    started?;
    let pid = tmux(&["list-panes", "-t", "bench", "-F", "#{pane_pid}"])?;
    pid.trim().parse().context("pane pid")
}

/// utime + stime of a process, in seconds.
fn cpu_secs(pid: u32) -> Result<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let rest = &s[s.rfind(')').context("stat")? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f[11].parse::<u64>()? + f[12].parse::<u64>()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Ok(ticks as f64 / hz)
}

fn bench_start(o: &Opts, bus: &PrivateBus) -> Result<()> {
    let _daemon = start_daemon(bus, &o.bin_dir, 10)?;
    eprintln!("filling the daemon's histories (3600 ticks of 10 ms)...");
    std::thread::sleep(Duration::from_secs(37));
    let dir = tempfile::tempdir()?;
    let mut times = Vec::new();
    for i in 0..o.starts {
        let file = dir.path().join(format!("first-frame-{i}"));
        start_tui(
            bus,
            &o.bin_dir,
            &format!("{}={}", rdma_tui::terminal::FIRST_FRAME_ENV, file.display()),
        )?;
        let t0 = Instant::now();
        while !file.exists() && t0.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(50));
        let text = std::fs::read_to_string(&file).context("rdma-tui wrote no first-frame time")?;
        times.push(text.trim().parse::<f64>()?);
    }
    let _ = tmux(&["kill-server"]);
    row(
        "rdma-tui start to first full frame, 64 ports, full histories",
        "< 200 ms",
        times,
        "ms",
    );
    Ok(())
}

fn bench_idle(o: &Opts, bus: &PrivateBus) -> Result<()> {
    let _daemon = start_daemon(bus, &o.bin_dir, 1000)?;
    for (key, page) in [("1", "Overview"), ("3", "Bandwidth")] {
        let pid = start_tui(bus, &o.bin_dir, "NO_COLOR=")?;
        std::thread::sleep(Duration::from_secs(2));
        tmux(&["send-keys", "-t", "bench", key])?;
        std::thread::sleep(Duration::from_secs(1));
        let c0 = cpu_secs(pid)?;
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_secs(o.idle_secs));
        let pct = (cpu_secs(pid)? - c0) / t0.elapsed().as_secs_f64() * 100.0;
        row(
            &format!(
                "rdma-tui CPU while showing {page}, 64 ports at 1 Hz, {} s",
                o.idle_secs
            ),
            "< 2 % of a core",
            vec![pct],
            "%",
        );
    }
    let _ = tmux(&["kill-server"]);
    Ok(())
}

fn main() -> Result<()> {
    let o = parse()?;
    println!("| figure | target | p50 / p99 / max |");
    println!("|---|---|---|");
    if o.only.iter().any(|s| s == "frame") {
        bench_frames(&o)?;
    }
    let live = ["start", "idle"];
    if o.only.iter().any(|s| live.contains(&s.as_str())) {
        let bus = PrivateBus::session().context("starting a private dbus-daemon")?;
        if o.only.iter().any(|s| s == "start") {
            bench_start(&o, &bus)?;
        }
        if o.only.iter().any(|s| s == "idle") {
            bench_idle(&o, &bus)?;
        }
    }
    Ok(())
}
