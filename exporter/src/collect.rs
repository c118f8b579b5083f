//! One scrape's data: the model's view (memory) and every port's counters, asked of the
//! daemon (`Port.GetCounters`) a few at a time. Scrapes that arrive together share one
//! collection, and one younger than [`REUSE`] is served again, so that no number of clients
//! multiplies the daemon's work.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use rdma_manager_dbus::BUS_NAME;
use zbus::Connection;

use crate::follow::lock;
use crate::model::{Model, View, PORT_IFACE};

/// A collection this young is served again instead of asking the daemon once more.
pub const REUSE: Duration = Duration::from_secs(1);
/// GetCounters calls in flight at once: the daemon refuses more than 16 calls in progress on
/// one connection (docs/DBUS-API.md, "Reading large replies").
const IN_FLIGHT: usize = 8;
/// One GetCounters call, at most.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// A port's counters as GetCounters gives them: (source, saturated, counters by name).
#[derive(Debug, Clone, Default)]
pub struct Counters {
    pub source: String,
    pub saturated: bool,
    pub values: HashMap<String, u64>,
}

/// What one scrape renders.
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    pub view: View,
    /// By port object path; a port whose counters could not be read is absent.
    pub counters: HashMap<String, Counters>,
    /// Ports whose GetCounters failed in this collection.
    pub counter_errors: u64,
    /// How long the counters took to read.
    pub duration: Duration,
}

/// The exporter's state shared by its HTTP connections and its textfile loop.
pub struct Collector {
    conn: Connection,
    model: Arc<Mutex<Model>>,
    last: tokio::sync::Mutex<Option<(Instant, Arc<Scrape>)>>,
}

impl Collector {
    pub fn new(conn: Connection, model: Arc<Mutex<Model>>) -> Collector {
        Collector {
            conn,
            model,
            last: tokio::sync::Mutex::new(None),
        }
    }

    pub fn model(&self) -> &Arc<Mutex<Model>> {
        &self.model
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
        *last = Some((Instant::now(), s.clone()));
        s
    }

    async fn collect(&self) -> Scrape {
        let view = lock(&self.model).view();
        let started = Instant::now();
        let paths: Vec<String> = view.ports.iter().map(|p| p.path.clone()).collect();
        let results: Vec<(String, Option<Counters>)> = futures::stream::iter(paths)
            .map(|path| async move {
                let r = tokio::time::timeout(CALL_TIMEOUT, self.get_counters(&path)).await;
                let c = match r {
                    Ok(Ok(c)) => Some(c),
                    Ok(Err(e)) => {
                        tracing::debug!(path, "GetCounters: {e}");
                        None
                    }
                    Err(_) => {
                        tracing::debug!(path, "GetCounters timed out");
                        None
                    }
                };
                (path, c)
            })
            .buffer_unordered(IN_FLIGHT)
            .collect()
            .await;
        let mut scrape = Scrape {
            view,
            ..Scrape::default()
        };
        for (path, c) in results {
            match c {
                Some(c) => {
                    scrape.counters.insert(path, c);
                }
                None => scrape.counter_errors += 1,
            }
        }
        scrape.duration = started.elapsed();
        scrape
    }

    async fn get_counters(&self, path: &str) -> zbus::Result<Counters> {
        let reply = self
            .conn
            .call_method(Some(BUS_NAME), path, Some(PORT_IFACE), "GetCounters", &())
            .await?;
        let (source, saturated, values): (String, bool, HashMap<String, u64>) =
            reply.body().deserialize()?;
        Ok(Counters {
            source,
            saturated,
            values,
        })
    }
}
