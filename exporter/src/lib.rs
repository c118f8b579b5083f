//! rdma-exporter: rdma-managerd's model and counters for Prometheus, over HTTP or as a
//! textfile for node_exporter. A client of the daemon's D-Bus API only (docs/METRICS.md).

pub mod all_counters;
pub mod args;
pub mod collect;
pub mod direct;
pub mod follow;
pub mod http;
pub mod model;
pub mod render;
pub mod textfile;

use std::sync::{Arc, Mutex};

use zbus::Connection;

pub use collect::Collector;
pub use render::{render, Format};

/// Default listening address: loopback only; port outside the 9100-9999 range that
/// Prometheus' port allocation list had filled (docs/METRICS.md, "Port").
pub const DEFAULT_LISTEN: &str = "127.0.0.1:10041";

/// One malloc arena for every thread. The exporter's work is on one thread, but the
/// runtime's blocking pool starts threads now and then, and each thread's own arena keeps
/// what it allocated apart from the heap that [`release_freed_memory`] gives back.
pub fn one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt sets an allocator parameter; called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Gives the memory a scrape freed back to the system: a scrape's text and the replies it
/// came from are the largest allocations, made once per scrape, and malloc keeps freed
/// memory otherwise, so the resident set would stay at its largest scrape's.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Starts following the daemon on `conn` (a task that lives as long as the connection) and
/// returns the collector that scrapes read, which asks the daemon's `direct` socket for the
/// counters first. When the following stops (the bus connection
/// closed), the model is cleared, so that nothing stale is served, and
/// [`Collector::follower_stopped`] says why.
pub fn start(conn: Connection, direct: Option<std::path::PathBuf>) -> Arc<Collector> {
    let model = Arc::new(Mutex::new(model::Model::default()));
    let collector = Arc::new(Collector::new(conn.clone(), direct, model.clone()));
    let follower = follow::follow(conn, model.clone());
    let stopped = collector.clone();
    tokio::spawn(async move {
        let why = match follower.await {
            Ok(()) => "it ended".to_string(),
            Err(e) => e.to_string(),
        };
        tracing::error!("following rdma-managerd stopped: {why}");
        follow::lock(&model).clear(format!("following rdma-managerd stopped: {why}"));
        stopped.stop(why);
    });
    collector
}

/// Waits until the model has been read once (or the daemon found unavailable), at most
/// `limit`; true when it is current.
pub async fn wait_loaded(collector: &Collector, limit: std::time::Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let link = follow::lock(collector.model()).link.clone();
        match link {
            model::Link::Current => return true,
            model::Link::Unavailable(_) => return false,
            model::Link::Connecting if tokio::time::Instant::now() >= deadline => return false,
            model::Link::Connecting => {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await
            }
        }
    }
}

/// Connects to the bus the daemon serves, as its other clients do: the system bus, or the
/// session bus, or a bus address; with room to queue a scrape's replies and the daemon's
/// signals, and answering the daemon's Ping (by which it settles what a client has read).
pub async fn connect(bus: &args::BusChoice) -> zbus::Result<Connection> {
    let builder = match bus {
        args::BusChoice::System => zbus::connection::Builder::system()?,
        args::BusChoice::Session => zbus::connection::Builder::session()?,
        args::BusChoice::Address(a) => zbus::connection::Builder::address(a.as_str())?,
    };
    let conn = builder.max_queued(4096).build().await?;
    let _ = conn.object_server();
    Ok(conn)
}
