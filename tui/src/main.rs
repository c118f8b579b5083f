//! rdma-tui: the terminal client of rdma-managerd (see `rdma-tui --help` and rdma-tui(1)).

use std::io::Write as _;

use anyhow::Context;
use rdma_tui::cli::{self, Mode};
use rdma_tui::client::{self, BusChoice};

fn main() -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let args = cli::parse(std::env::args().skip(1))?;
    match args.mode {
        Mode::Help => {
            println!("{}", cli::USAGE);
            return Ok(());
        }
        Mode::Version => {
            println!("rdma-tui {}", env!("CARGO_PKG_VERSION"));
            return Ok(());
        }
        _ => {}
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(run(args, started))
}

async fn run(args: cli::Args, started: std::time::Instant) -> anyhow::Result<()> {
    // The demo's service lives as long as this function.
    let demo = if args.demo {
        Some(rdma_tui::demo::start().await?)
    } else {
        None
    };
    let bus = match &demo {
        Some(d) => BusChoice::Address(d.address.clone()),
        None => args.bus.clone(),
    };
    let conn = client::connect(&bus)
        .await
        .with_context(|| format!("cannot connect to the {bus:?} bus"))?;
    match args.mode {
        Mode::Interactive => rdma_tui::terminal::run(conn, args.mouse, started).await,
        Mode::Json => {
            let model = client::read_model(&conn).await.context(NOT_RUNNING)?;
            println!("{}", serde_json::to_string_pretty(&model)?);
            Ok(())
        }
        Mode::Ibstat { device, port } => {
            let model = client::read_model(&conn).await.context(NOT_RUNNING)?;
            // As ibstat 44.0: what was printed before a failure stays printed, then the
            // message, and a failure status.
            let run = rdma_tui::ibstat::run(&model, device.as_deref(), port);
            let mut out = std::io::stdout().lock();
            out.write_all(run.stdout.as_bytes())?;
            out.flush()?;
            match run.error {
                None => Ok(()),
                Some(e) => Err(rdma_tui::ibstat::report(e)),
            }
        }
        Mode::Help | Mode::Version => Ok(()),
    }
}

const NOT_RUNNING: &str =
    "cannot read rdma-managerd's state (is it running? `systemctl status rdma-managerd`)";
