//! rdma-managerd: the RDMA/InfiniBand configuration service.
//!
//! With no command it serves the host's RDMA state on the system bus as
//! `org.rdmamanager.RdmaManager1`. `show` prints the state the way `ibstat` does, followed by
//! the IPoIB interfaces. With `--simulate` both run on the simulated host; only in a build
//! with the `sim` feature, which the packaged daemon is not. Without it, a host without RDMA
//! is shown as it is: empty, as ibstat shows it.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing_subscriber::filter::Targets;

use anyhow::{bail, Context};
use rdma_managerd::cli::{self, Args, Command, DEFAULT_LOG_FILTER};
use rdma_managerd::dbus::server::{self, Bus};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::ibstat::{self, IbstatArgs};
use rdma_managerd::kernel::linux::LinuxHost;
use rdma_managerd::kernel::Host;
#[cfg(feature = "sim")]
use rdma_managerd::simulated::Simulation;
use rdma_managerd::system::unreachable::Unreachable;
use rdma_managerd::system::{BusSystemServices, SystemServices};

/// The host to run on, and the simulated one when the command line asks for it. A host
/// without RDMA is read as it is, by `show` too: like ibstat there, `show` prints nothing
/// (and `--json` a document without devices), never the simulated host unasked, so that a
/// script on a node whose driver failed to load does not see a healthy fabric.
fn make_host(args: &Args) -> anyhow::Result<(Arc<dyn Host>, Option<Simulation>)> {
    let sim = simulation(args)?;
    let host = match &sim {
        Some(sim) => sim.host(),
        None => Arc::new(LinuxHost::new()),
    };
    Ok((host, sim))
}

/// The simulated host the command line asks for (`--simulate` or a `--sim-*` option).
#[cfg(feature = "sim")]
fn simulation(args: &Args) -> anyhow::Result<Option<Simulation>> {
    Simulation::from_args(&args.sim)
}

/// This build has no simulated host.
#[cfg(not(feature = "sim"))]
fn simulation(_: &Args) -> anyhow::Result<Option<Simulation>> {
    Ok(None)
}

/// `rdma-managerd show`: the state as JSON, or what ibstat prints with the same arguments
/// (then the IPoIB table, after a plain `ibstat`'s output).
async fn show(args: &Args, json: bool, ibstat_args: &IbstatArgs) -> anyhow::Result<()> {
    let (host, sim) = make_host(args)?;
    if json {
        let system = match &sim {
            // As the daemon on a simulated host (below).
            Some(sim) => sim.system_services(),
            None => system_services_if_any().await,
        };
        return show_json(host, system, sim.is_some()).await;
    }
    let devices = host.read_devices().await?;
    let netdevs = host.read_netdevs().await?;
    // As ibstat 44.0: what was printed before a failure stays printed, then its message
    // (here with our reason behind it) and a failure status; the IPoIB table only follows a
    // complete plain device list.
    let run = ibstat::run(&devices, ibstat_args);
    let mut out = std::io::stdout().lock();
    out.write_all(run.stdout.as_bytes())?;
    if let Some(e) = run.error {
        out.flush()?;
        return Err(match e.cause() {
            Some(cause) => anyhow::Error::msg(cause.to_string()).context(e.to_string()),
            None => anyhow::Error::msg(e.to_string()),
        });
    }
    if *ibstat_args == IbstatArgs::default() {
        out.write_all(rdma_managerd::ipoib_report::render_ipoib(&devices, &netdevs).as_bytes())?;
    }
    out.flush()?;
    Ok(())
}

/// `rdma-managerd show --json`: the D-Bus model a daemon started now would publish
/// (docs/JSON.md), read as the engine reads the host at start and rendered by the views the
/// daemon publishes with, with the default sampling period. Nothing is changed: what the
/// daemon would re-apply at start (a remembered child, settings) is not.
async fn show_json(
    host: Arc<dyn Host>,
    system: Arc<dyn SystemServices>,
    simulated: bool,
) -> anyhow::Result<()> {
    let (state, _) = rdma_managerd::engine::read_host(host.as_ref(), system.as_ref()).await?;
    let tick_us = EngineConfig::default().tick.as_micros() as u64;
    let doc = rdma_managerd::dbus::document::document(&state, simulated, tick_us);
    let mut out = std::io::stdout().lock();
    out.write_all(doc.to_pretty_string().as_bytes())?;
    out.flush()?;
    Ok(())
}

/// systemd and firewalld over the system bus, as the daemon asks them; without a system bus
/// (within 2 s), none: the Host object's unit fields are then empty, as when the daemon cannot
/// ask systemd.
async fn system_services_if_any() -> Arc<dyn SystemServices> {
    let conn = tokio::time::timeout(Duration::from_secs(2), zbus::Connection::system()).await;
    match conn {
        Ok(Ok(conn)) => Arc::new(BusSystemServices::new(&conn)),
        _ => Arc::new(Unreachable),
    }
}

/// Raises the soft open-file limit to the hard one and says what it did. A refusal is not
/// fatal: the port poll keeps its descriptors within a budget of whatever limit there is.
fn raise_open_file_limit() {
    use rdma_managerd::kernel::rlimit::{self, Raised};
    match rlimit::raise_nofile_limit() {
        Ok(Raised::Raised { from, to }) => tracing::info!(
            from,
            to = to.soft,
            "raised the soft limit of open files to the hard limit"
        ),
        Ok(Raised::Already(l)) => {
            tracing::info!(
                soft = l.soft,
                hard = l.hard,
                "open-file limit already at its hard limit"
            )
        }
        Err(e) => tracing::warn!(error = %e, "cannot raise the open-file limit; keeping it"),
    }
}

async fn daemon(args: &Args) -> anyhow::Result<()> {
    let started = Instant::now();
    // Before anything is opened: the port poll sizes its budget of kept descriptors from it.
    raise_open_file_limit();
    let (host, sim) = make_host(args)?;
    // Building the simulated host renders its whole sysfs-shaped tree: a cost a real host
    // does not have, reported apart from the daemon's own start-up.
    let host_ms = started.elapsed().as_secs_f64() * 1e3;
    let simulated = sim.is_some();
    let mut running = sim.as_ref().map(Simulation::start);
    let bus = args.bus.clone().unwrap_or(Bus::System);
    let config = EngineConfig {
        tick: args
            .tick_ms
            .map(Duration::from_millis)
            .unwrap_or(EngineConfig::default().tick),
        history_seed: sim.as_ref().and_then(Simulation::history_seed),
        counters_max_age: args
            .counters_max_age_ms
            .map(Duration::from_millis)
            .unwrap_or(EngineConfig::default().counters_max_age),
        ..EngineConfig::default()
    };
    let serving = Instant::now();
    let conn = server::connect(&bus).await.with_context(|| match &bus {
        Bus::System => "rdma-managerd serves on the system bus: is D-Bus running? (for \
                        development: --session or --address=ADDRESS, with --simulate)"
            .to_string(),
        Bus::Session => "no session bus (is a desktop session running?)".to_string(),
        Bus::Address(a) => format!("no bus at {a}"),
    })?;
    let service = if let Some(sim) = &sim {
        // A simulated host has no systemd or firewalld of its own to drive. On the user's own
        // session bus it serves that user as rdma-tui --demo does (no polkit there, and the
        // simulated host holds nothing the user does not already have); elsewhere polkit asks.
        use rdma_managerd::dbus::polkit::Authorizer;
        let authorizer = match bus {
            Bus::Session => Authorizer::same_user_for_simulation(&conn),
            _ => Authorizer::new(&conn),
        };
        let system = sim.system_services();
        server::serve_with(conn, host, simulated, config, authorizer, system).await?
    } else {
        server::serve(conn, host, simulated, config).await?
    };
    tracing::info!(
        name = rdma_manager_dbus::BUS_NAME,
        simulated,
        host_ms = format!("{host_ms:.1}"),
        serve_ms = format!("{:.1}", serving.elapsed().as_secs_f64() * 1e3),
        "serving; start-up is over"
    );
    // The name was owned early (see dbus::server); systemd learns here that start-up is over.
    let status = "READY=1\nSTATUS=Serving the host's RDMA devices";
    if let Err(e) = rdma_managerd::system::sd_notify::notify(status) {
        tracing::warn!(error = %e, "cannot tell systemd that start-up is over");
    }
    // After start-up, so that every direct answer is the complete host; a client that finds
    // no socket uses the bus. Not fatal: the bus serves the same.
    let _direct = args.direct_socket_path().and_then(|path| {
        match rdma_managerd::dbus::direct::listen(path.as_ref(), service.direct_sources()) {
            Ok(socket) => {
                tracing::info!(path, "GetManagedObjects also on the direct socket");
                Some(socket)
            }
            Err(e) => {
                tracing::warn!("no direct socket: {e}");
                None
            }
        }
    });
    if let (Some(sim), Some(running)) = (&sim, &mut running) {
        sim.started(running);
    }
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let lost = service.wait_lost();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
        _ = lost => {
            // A failure status, so that systemd's Restart=on-failure starts a new daemon,
            // which connects and owns the name again. The reason is logged once, by the
            // watch (`cannot serve any longer`).
            return Err(AlreadyLogged.into());
        }
        r = service.task => {
            r.context("the engine stopped")?;
            bail!("the engine stopped");
        }
    }
    tracing::info!("stopping");
    let _ = rdma_managerd::system::sd_notify::notify("STOPPING=1");
    Ok(())
}

/// A failure that was logged where it happened: main exits with a failure status without
/// saying it again.
#[derive(Debug, thiserror::Error)]
#[error("(logged)")]
struct AlreadyLogged;

/// RUST_LOG's filter, or the default one and why RUST_LOG's was refused. Its syntax is
/// `Targets`': a comma-separated list of `level` and `target=level`. `EnvFilter` also filters
/// on spans and fields, which the daemon has no use for (it logs no spans), and brings a
/// regular expression engine whose code would be resident for nothing (docs/PERFORMANCE.md,
/// "Decisions").
fn log_filter(rust_log: Result<String, std::env::VarError>) -> (Targets, Option<String>) {
    let default = || DEFAULT_LOG_FILTER.parse().unwrap_or_default();
    match rust_log {
        Err(std::env::VarError::NotPresent) => (default(), None),
        // Set to nothing (`Environment=RUST_LOG=` in a unit): as unset. An empty `Targets`
        // would let nothing through, errors included.
        Ok(asked) if asked.trim().is_empty() => (default(), None),
        Err(e) => (default(), Some(e.to_string())),
        Ok(asked) => match asked.parse::<Targets>() {
            Ok(f) => (f, None),
            Err(e) => (default(), Some(format!("{asked:?}: {e}"))),
        },
    }
}

/// Logs to the journal when systemd connected us to it (JOURNAL_STREAM), else to stderr.
/// RUST_LOG filters either way (default: [`DEFAULT_LOG_FILTER`]; see [`log_filter`]).
fn init_logging() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let (filter, refused) = log_filter(std::env::var("RUST_LOG"));
    let registry = tracing_subscriber::registry().with(filter);
    let journald = std::env::var_os("JOURNAL_STREAM")
        .is_some()
        .then(tracing_journald::layer)
        .and_then(Result::ok);
    if let Some(journald) = journald {
        // Fields under their own names (CALLER_UID, OUTCOME, ...), not F_CALLER_UID: the
        // audit lines are meant to be filtered on (`journalctl OUTCOME=refused`).
        registry.with(journald.with_field_prefix(None)).init();
    } else {
        use std::io::IsTerminal;
        // NO_COLOR counts when it is set and not empty (no-color.org), as in rdma-tui.
        let colour = std::io::stderr().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(colour)
                    .with_writer(std::io::stderr),
            )
            .init();
    }
    if let Some(why) = refused {
        tracing::warn!(rust_log = %why, default = DEFAULT_LOG_FILTER, "RUST_LOG is not a filter; the default one applies");
    }
}

fn main() -> ExitCode {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: before any other thread exists. One malloc arena instead of up to eight per
    // core: the daemon's threads mostly wait, so they rarely contend for it, and every arena
    // keeps its own freed memory (a second arena held the engine's history apart from the
    // start-up's freed blocks, which then could not be reused or trimmed).
    // Blocks of 256 KiB and more (a large reply, an introspection) always get their own
    // mapping, returned when freed: glibc would otherwise raise that bound as such blocks
    // are freed and serve the next ones from the heap, which keeps them.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
    // `rdma-managerd ibping ...`: the InfiniBand ping, run by the daemon in its sandbox
    // (and usable by hand as root); none of the daemon's set-up applies to it.
    if std::env::args().nth(1).as_deref() == Some("ibping") {
        let code = rdma_managerd::linktest::ibping::tool::main(std::env::args().skip(2));
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let args = match cli::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e @ cli::UsageError::NoSimulator(_)) => {
            eprintln!("Error: {e}");
            return ExitCode::from(2);
        }
        // The reason and where the options are, not the whole usage.
        Err(e) => {
            eprintln!("Error: {e}\n{}", cli::USAGE_HINT);
            return ExitCode::from(2);
        }
    };
    // Errors are printed here as messages (the context, then its causes): returning
    // them from main would print a backtrace whenever RUST_BACKTRACE is set.
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is::<AlreadyLogged>() => ExitCode::FAILURE,
        Err(e) => {
            let top: &(dyn std::error::Error + 'static) = e.as_ref();
            eprintln!("Error: {}", rdma_manager_dbus::text::error_chain(top));
            ExitCode::FAILURE
        }
    }
}

/// `pow` for the one caller the daemon has: tokio's multi-threaded scheduler (its statistics
/// for the work-stealing heuristics), linked whenever the workspace builds tokio with that
/// scheduler even though the daemon runs the current-thread one. Defined here, the linker
/// resolves that call to it and `libm.so.6` is not loaded at all: its load runs its IFUNC
/// resolvers across its code, resident memory for one function (docs/PERFORMANCE.md,
/// "Decisions"). The executable does not export it, so a
/// library loaded later (libibverbs' providers) that needs libm loads it as before.
/// `.ci/run` checks that the release daemon does not need `libm.so.6`.
#[no_mangle]
pub extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

fn run(args: Args) -> anyhow::Result<()> {
    match &args.command {
        Command::Help => {
            println!("{}", cli::USAGE);
            return Ok(());
        }
        Command::Version => {
            println!("rdma-managerd {}", env!("CARGO_PKG_VERSION"));
            return Ok(());
        }
        Command::Serve => init_logging(),
        // `show | head` ends quietly, as ibstat does there, not with "Broken pipe": the
        // default action of SIGPIPE, which Rust's runtime ignores. Only for `show`: the
        // daemon must live through a client that closes its socket.
        // SAFETY: before the runtime's threads exist.
        Command::Show { .. } => unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        },
    }
    // One thread for the async side: the daemon spends its life waiting, and what blocks
    // (sysfs, verbs, reading many devices at once) goes to the blocking pool. The
    // multi-threaded scheduler is also the only user of libm in the daemon (its `pow`, for
    // the work-stealing heuristics): without it `libm.so.6` is not loaded (`pow` below).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(async {
        match &args.command {
            Command::Show { json, ibstat } => show(&args, *json, ibstat).await,
            _ => daemon(&args).await,
        }
    })
}

/// This build has no simulated host: no value of this type exists (`cli::parse` refuses
/// `--simulate`), so what uses one is never run.
#[cfg(not(feature = "sim"))]
enum Simulation {}

#[cfg(not(feature = "sim"))]
impl Simulation {
    fn host(&self) -> Arc<dyn Host> {
        match *self {}
    }

    fn system_services(&self) -> Arc<dyn SystemServices> {
        match *self {}
    }

    fn history_seed(&self) -> Option<Arc<dyn rdma_managerd::engine::history::HistorySeed>> {
        match *self {}
    }

    fn start(&self) {
        match *self {}
    }

    fn started(&self, _: &mut ()) {
        match *self {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    #[test]
    fn rust_log_filters_by_target_and_level() {
        let (f, refused) = log_filter(Ok("warn,rdma_managerd::heap=debug".into()));
        assert_eq!(refused, None);
        assert!(f.would_enable("rdma_managerd::heap", &Level::DEBUG));
        assert!(!f.would_enable("rdma_managerd::engine", &Level::INFO));
        assert!(f.would_enable("rdma_managerd::engine", &Level::WARN));
    }

    #[test]
    fn without_rust_log_the_default_applies_silently() {
        let (f, refused) = log_filter(Err(std::env::VarError::NotPresent));
        assert_eq!(refused, None);
        assert!(f.would_enable("rdma_managerd", &Level::INFO));
        assert!(!f.would_enable("zbus::connection", &Level::WARN));
        assert!(f.would_enable("zbus::connection", &Level::ERROR));
    }

    #[test]
    fn an_empty_rust_log_is_as_none() {
        let (f, refused) = log_filter(Ok(" ".into()));
        assert_eq!(refused, None);
        assert!(f.would_enable("rdma_managerd", &Level::INFO));
    }

    #[test]
    fn a_bad_rust_log_is_refused_with_its_reason_and_the_default_applies() {
        let (f, refused) = log_filter(Ok("rdma_managerd=loud".into()));
        let why = refused.expect("refused");
        assert!(why.contains("rdma_managerd=loud"), "{why}");
        assert!(f.would_enable("rdma_managerd", &Level::INFO));
        assert!(!f.would_enable("rdma_managerd", &Level::DEBUG));
    }
}
