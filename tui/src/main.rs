//! rdma-tui: the terminal client of rdma-managerd (see `rdma-tui --help` and rdma-tui(1)).

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context;
use rdma_tui::cli::{self, Mode};
use rdma_tui::client::{self, BusChoice};

fn main() -> ExitCode {
    let started = std::time::Instant::now();
    let args = match cli::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e @ cli::UsageError::NoDemo) => {
            eprintln!("Error: {e}");
            return ExitCode::from(2);
        }
        // The reason and where the options are, not the whole usage: the reason is what
        // the user has to read.
        Err(e) => {
            eprintln!("Error: {e}\n{}", cli::USAGE_HINT);
            return ExitCode::from(2);
        }
    };
    match args.mode {
        Mode::Help => {
            println!("{}", cli::USAGE);
            return ExitCode::SUCCESS;
        }
        Mode::Version => {
            println!("rdma-tui {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    // `--json` and `--ibstat` are one call on the daemon's direct socket when it answers
    // there: made before any runtime or bus connection is set up, which would cost more
    // than the call.
    if let Some(exit) = one_direct_call(&args) {
        return exit;
    }
    // Errors are printed as messages (`exit`): returning them from main would print a
    // backtrace whenever RUST_BACKTRACE is set.
    // A one-time read (--json, --ibstat) makes one call and exits: one thread does it,
    // without starting workers it would not use.
    let runtime = match args.mode {
        Mode::Json | Mode::Ibstat(_) => tokio::runtime::Builder::new_current_thread(),
        _ => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(2);
            b
        }
    }
    .enable_all()
    .build();
    let result = runtime
        .context("cannot start the async runtime")
        .and_then(|runtime| runtime.block_on(run(args, started)));
    exit(result)
}

async fn run(args: cli::Args, started: std::time::Instant) -> anyhow::Result<()> {
    // The demo's service lives as long as this function.
    #[cfg(feature = "demo")]
    let demo = if args.demo {
        Some(rdma_tui::demo::start().await?)
    } else {
        None
    };
    #[cfg(feature = "demo")]
    let bus = match &demo {
        Some(d) => BusChoice::Address(d.address.clone()),
        None => args.bus.clone(),
    };
    // `cli::parse` refuses --demo in a build without it.
    #[cfg(not(feature = "demo"))]
    let bus = args.bus.clone();
    // A one-time read takes the objects from the daemon's direct socket when it answers:
    // the same reply without the bus's relay (rdma-managerd(8), --direct-socket).
    let mut direct_path = match &args.mode {
        Mode::Json | Mode::Ibstat(_) => args.direct_socket_path(),
        _ => None,
    };
    // ibstat's text needs only the objects: when the direct socket gives them, the bus is
    // not connected at all (its handshake costs as much as the read). `one_direct_call`
    // tried it without zbus first.
    if let (Mode::Ibstat(ibstat), Some(path)) = (&args.mode, &direct_path) {
        if let Some(model) = client::read_model_direct(path).await {
            return print_ibstat(&model, ibstat);
        }
        direct_path = None;
    }
    // The bus's handshake and the direct socket's, at once.
    let (conn, direct) = match &direct_path {
        Some(path) => tokio::join!(client::connect(&bus), client::connect_direct(path)),
        None => (client::connect(&bus).await, None),
    };
    let conn = conn.with_context(|| cannot_connect(&bus))?;
    match args.mode {
        Mode::Interactive => rdma_tui::terminal::run(conn, args.mouse, started).await,
        Mode::Json => {
            let mut doc = client::read_document(&conn, direct.as_ref())
                .await
                .context(NOT_RUNNING)?;
            if args.counters {
                client::add_counters(&conn, &mut doc).await;
            }
            let mut out = std::io::stdout().lock();
            out.write_all(doc.to_pretty_string().as_bytes())?;
            out.flush()?;
            Ok(())
        }
        Mode::Ibstat(ibstat) => {
            let model = client::read_model(&conn, direct.as_ref())
                .await
                .context(NOT_RUNNING)?;
            print_ibstat(&model, &ibstat)
        }
        Mode::Help | Mode::Version => Ok(()),
    }
}

/// `--json` (without `--counters`) or `--ibstat` answered by one call on the direct socket
/// (`rdma_tui::direct_call`): the exit, or `None` when the socket did not answer it there
/// (none, or an older daemon) and the objects are read as usual.
fn one_direct_call(args: &cli::Args) -> Option<ExitCode> {
    let path = args.direct_socket_path()?;
    match &args.mode {
        Mode::Json if !args.counters => {
            let reply = rdma_tui::direct_call::document(&path);
            match reply
                .as_ref()
                .map_err(|e| e.to_string())
                .and_then(|r| rdma_tui::direct_call::text(r).map_err(|e| e.to_string()))
            {
                Ok(text) => {
                    let mut out = std::io::stdout().lock();
                    let written = out.write_all(text).and_then(|()| out.flush());
                    Some(exit(written.map_err(anyhow::Error::from)))
                }
                Err(e) => {
                    tracing::debug!(path, "no document on the direct socket: {e}");
                    None
                }
            }
        }
        Mode::Ibstat(ibstat) => {
            // The daemon renders it (one string to print); a daemon without GetIbstat gives
            // the objects, rendered here the same way.
            match rdma_tui::direct_call::ibstat(&path, &ibstat.to_argv()) {
                Ok(reply) => return Some(exit(rdma_tui::ibstat::print(reply))),
                Err(e) => tracing::debug!(path, "no GetIbstat on the direct socket: {e}"),
            }
            match rdma_tui::direct_call::managed_objects(&path) {
                Ok(objects) => Some(exit(print_ibstat(&client::model_of(objects), ibstat))),
                Err(e) => {
                    tracing::debug!(path, "no objects on the direct socket: {e}");
                    None
                }
            }
        }
        _ => None,
    }
}

/// The exit of a run: its error printed as a message (the context, then its causes).
fn exit(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let top: &(dyn std::error::Error + 'static) = e.as_ref();
            eprintln!("Error: {}", rdma_manager_dbus::text::error_chain(top));
            ExitCode::FAILURE
        }
    }
}

/// Prints ibstat's text of the model (see `rdma_tui::ibstat::print`).
fn print_ibstat(
    model: &rdma_tui::model::Model,
    ibstat: &rdma_manager_dbus::ibstat::IbstatArgs,
) -> anyhow::Result<()> {
    rdma_tui::ibstat::print(rdma_tui::ibstat::run(model, ibstat).into_reply())
}

/// What to say when the bus cannot be reached: which bus, and what to do about it (the
/// cause, e.g. "No such file or directory (os error 2)", follows).
fn cannot_connect(bus: &BusChoice) -> String {
    match bus {
        BusChoice::System => "cannot connect to the system bus, where rdma-managerd serves \
             (is D-Bus running? then start the service: `systemctl start rdma-managerd`; \
             or try `rdma-tui --demo`, which needs neither)"
            .to_string(),
        BusChoice::Session => "cannot connect to the session bus (is a desktop session \
             running? `rdma-managerd --session --simulate` serves there; or try \
             `rdma-tui --demo`)"
            .to_string(),
        BusChoice::Address(a) => format!("cannot connect to the bus at {a}"),
    }
}

const NOT_RUNNING: &str = "cannot read rdma-managerd's state (is it running? start it with \
     `systemctl start rdma-managerd`, see `systemctl status rdma-managerd`; or try \
     `rdma-tui --demo`)";
