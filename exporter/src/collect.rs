//! One scrape's data: the model's view (memory) and every port's counters, asked of the
//! daemon in one call (`GetAllCounters`, which shares a reading among its callers within the
//! daemon's counters max age, 10 s by default), on its direct socket when there is one
//! ([`crate::direct`]), else on the bus. Scrapes that arrive together share one collection, and one younger than [`REUSE`]
//! is served again, so that no number of clients multiplies the daemon's work.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdma_manager_dbus::BUS_NAME;
use zbus::Connection;

use crate::all_counters::all_counters_on;
use crate::direct::DirectSocket;
use crate::follow::lock;
use crate::model::{Model, View};

/// A collection this young is served again instead of asking the daemon once more.
pub const REUSE: Duration = Duration::from_secs(1);
/// The counters' call, at most: past it the scrape is served without counters (and says
/// so in `rdma_exporter_port_read_errors`) rather than keep Prometheus waiting past its own
/// scrape timeout (10 s by default).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);

pub use crate::all_counters::{Counters, Values};

/// What one scrape renders.
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    pub view: Arc<View>,
    /// By port object path; a port whose counters could not be read is absent.
    pub counters: HashMap<String, Counters>,
    /// Ports of the view without counters in this collection.
    pub counter_errors: u64,
    /// When the daemon read the counters, µs since the epoch (0: not read).
    pub counters_time_us: u64,
    /// How long the counters took to read.
    pub duration: Duration,
}

/// The last collection and when it was made.
type Collected = (Instant, Arc<Scrape>);

/// The exporter's state shared by its HTTP connections and its textfile loop.
pub struct Collector {
    conn: Connection,
    direct: Option<DirectSocket>,
    /// The last [`Route`] of the counters.
    route: std::sync::atomic::AtomicU8,
    model: Arc<Mutex<Model>>,
    last: Arc<tokio::sync::Mutex<Option<Collected>>>,
    /// Why following the daemon stopped, once it has.
    stopped: tokio::sync::watch::Sender<Option<String>>,
}

impl Collector {
    /// `direct`: the daemon's direct socket, asked for the counters before the bus.
    pub fn new(
        conn: Connection,
        direct: Option<std::path::PathBuf>,
        model: Arc<Mutex<Model>>,
    ) -> Collector {
        Collector {
            conn,
            direct: direct.map(DirectSocket::new),
            route: std::sync::atomic::AtomicU8::new(Route::Unknown as u8),
            model,
            last: Arc::new(tokio::sync::Mutex::new(None)),
            stopped: tokio::sync::watch::Sender::new(None),
        }
    }

    pub fn model(&self) -> &Arc<Mutex<Model>> {
        &self.model
    }

    /// Following the daemon stopped, for `why`.
    pub(crate) fn stop(&self, why: String) {
        self.stopped.send_replace(Some(why));
    }

    /// Waits until following the daemon stops (the bus connection closed), and says why:
    /// the exporter cannot serve anything current after that.
    pub async fn follower_stopped(&self) -> String {
        let mut rx = self.stopped.subscribe();
        let why = match rx.wait_for(|s| s.is_some()).await {
            Ok(why) => why.clone(),
            // The sender lives in `self`: never dropped while this waits.
            Err(_) => None,
        };
        match why {
            Some(why) => why,
            None => std::future::pending().await,
        }
    }

    /// The current data, collected now or shared with a collection at most [`REUSE`] old.
    pub async fn scrape(&self) -> Arc<Scrape> {
        let mut last = self.last.lock().await;
        if let Some((at, s)) = last.as_ref() {
            if at.elapsed() < REUSE {
                return s.clone();
            }
        }
        let s = Arc::new(self.collect().await);
        let at = Instant::now();
        *last = Some((at, s.clone()));
        // Once too old to be served again, the collection is dropped rather than held until
        // the next scrape (a 15 s interval would keep it resident for nothing).
        let kept = self.last.clone();
        tokio::spawn(async move {
            tokio::time::sleep(REUSE).await;
            let mut last = kept.lock().await;
            if last.as_ref().is_some_and(|(t, _)| *t == at) {
                *last = None;
                drop(last);
                crate::release_freed_memory();
            }
        });
        s
    }

    async fn collect(&self) -> Scrape {
        let view = lock(&self.model).shared_view();
        let started = Instant::now();
        let mut scrape = Scrape::default();
        match tokio::time::timeout(CALL_TIMEOUT, self.get_all_counters()).await {
            Ok(Ok((time_us, rows))) => {
                scrape.counters_time_us = time_us;
                scrape.counters = rows.into_iter().collect();
            }
            Ok(Err(e)) => tracing::debug!("GetAllCounters: {e}"),
            Err(_) => tracing::debug!("GetAllCounters timed out"),
        }
        scrape.counter_errors = view
            .ports
            .iter()
            .filter(|p| !scrape.counters.contains_key(&p.path))
            .count() as u64;
        scrape.view = view;
        scrape.duration = started.elapsed();
        scrape
    }

    async fn get_all_counters(&self) -> zbus::Result<(u64, Vec<(String, Counters)>)> {
        if let Some(direct) = &self.direct {
            match direct.all_counters().await {
                Ok(r) => {
                    self.route(Route::Direct, || {
                        format!("counters on the direct socket {}", direct.path().display())
                    });
                    return Ok(r);
                }
                Err(e) => self.route(Route::Bus, || {
                    format!(
                        "counters on the bus: the direct socket {} did not answer: {e}",
                        direct.path().display()
                    )
                }),
            }
        }
        all_counters_on(&self.conn, Some(BUS_NAME)).await
    }

    /// Logs `what` when the counters' route changes (once, not at every scrape).
    fn route(&self, now: Route, what: impl FnOnce() -> String) {
        let before = self
            .route
            .swap(now as u8, std::sync::atomic::Ordering::Relaxed);
        if before != now as u8 {
            tracing::info!("{}", what());
        }
    }
}

/// Where the counters were asked last: the log says when that changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Route {
    Unknown = 0,
    Direct = 1,
    Bus = 2,
}
