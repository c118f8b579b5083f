use std::os::fd::FromRawFd;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Parser;
use rdma_exporter::args::Args;
use rdma_exporter::{http, render, textfile, Format};

/// The first descriptor systemd passes (sd_listen_fds(3)).
const SD_LISTEN_FDS_START: i32 = 3;

fn main() -> Result<()> {
    rdma_exporter::one_malloc_arena();
    let args = Args::parse();
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    // RDMA_EXPORTER_LOG=debug (or warn, ...) sets the level; info by default.
    let level = std::env::var("RDMA_EXPORTER_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::INFO);
    // zbus warns at every connection to the daemon's direct socket that it refuses file
    // descriptors, which it does by design (docs/DBUS-API.md): shown only when debugging.
    let handshake = if level >= tracing::Level::DEBUG {
        level
    } else {
        tracing::Level::ERROR
    };
    let filter = tracing_subscriber::filter::Targets::new()
        .with_default(level)
        .with_target("zbus::connection::handshake", handshake);
    tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(filter)
        .init();
    // One thread: a scrape is a handful of bus calls and some text, and a small resident set
    // matters more here than parallel scrapes.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(run(args))
}

async fn run(args: Args) -> Result<()> {
    if let Some(path) = &args.textfile {
        textfile::check_path(path)?;
    }
    let conn = rdma_exporter::connect(&args.bus())
        .await
        .context("cannot connect to the bus rdma-managerd serves")?;
    let collector = rdma_exporter::start(conn, args.direct_socket_path());
    // Following the daemon ends only with the bus connection: exit then (the unit restarts
    // the exporter), rather than serve a model that no longer follows anything.
    tokio::select! {
        r = serve(&args, collector.clone()) => r,
        why = collector.follower_stopped() => bail!("following rdma-managerd stopped: {why}"),
    }
}

/// Writes the textfile, or serves HTTP, until an error.
async fn serve(args: &Args, collector: std::sync::Arc<rdma_exporter::Collector>) -> Result<()> {
    if let Some(path) = &args.textfile {
        loop {
            if !rdma_exporter::wait_loaded(&collector, Duration::from_secs(30)).await
                && args.interval.is_none()
            {
                bail!(
                    "rdma-managerd could not be read: {:?}",
                    rdma_exporter::follow::lock(collector.model()).link
                );
            }
            let scrape = collector.scrape().await;
            textfile::write_atomic(path, &render(&scrape, Format::Prometheus).await)?;
            drop(scrape);
            rdma_exporter::release_freed_memory();
            let Some(every) = args.interval else {
                return Ok(());
            };
            tokio::time::sleep(Duration::from_secs(every)).await;
        }
    }

    let listener = match systemd_socket()? {
        Some(l) => l,
        None => tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?,
    };
    tracing::info!("serving /metrics on {}", listener.local_addr()?);
    let limits = http::Limits {
        max_connections: args.max_connections as usize,
        ..http::Limits::default()
    };
    http::serve(listener, collector, limits).await?;
    Ok(())
}

/// The listening socket systemd passed (socket activation), if it passed one for this process.
fn systemd_socket() -> Result<Option<tokio::net::TcpListener>> {
    let for_us = std::env::var("LISTEN_PID")
        .ok()
        .and_then(|p| p.parse::<u32>().ok())
        == Some(std::process::id());
    let fds = std::env::var("LISTEN_FDS")
        .ok()
        .and_then(|n| n.parse::<i32>().ok())
        .unwrap_or(0);
    if !for_us || fds < 1 {
        return Ok(None);
    }
    if fds > 1 {
        bail!("systemd passed {fds} sockets; rdma-exporter listens on one");
    }
    // SAFETY: systemd passed this descriptor to this process (LISTEN_PID), as a listening
    // socket of the unit's .socket file; nothing else owns it.
    let std_listener = unsafe { std::net::TcpListener::from_raw_fd(SD_LISTEN_FDS_START) };
    std_listener
        .set_nonblocking(true)
        .context("the socket systemd passed")?;
    Ok(Some(
        tokio::net::TcpListener::from_std(std_listener).context("the socket systemd passed")?,
    ))
}
