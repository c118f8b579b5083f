//! Port counters on the bus: `Port.GetCounters` (one port, read at the call) and the root's
//! `GetAllCounters` (every port in one reply, from a reading shared by every caller while it
//! is younger than [`EngineHandle::counters_max_age`]).
//!
//! Why one call for all ports: a monitor scraping a host of hundreds of ports spent most of
//! its time (and the daemon's, and the bus's) on one round trip per port. Why shared, and for
//! longer than a tick: the counters are read from the kernel, thousands of values on a large
//! host, and they change without an event, so nothing tells the daemon to read them; a
//! Prometheus scraping every 15 s, an HA pair of them, an exporter and rdma-tui asking within
//! seconds of each other would otherwise each cost a full read, and the daemon's CPU would
//! grow with its scrapers. The reply's time says when its reading was made, so a caller
//! knows its age. Nothing is read while nobody asks.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use rdma_manager_dbus::types::PortCounters;
use rdma_manager_dbus::Error;

use crate::engine::EngineHandle;
use crate::model::CounterSnapshot;

/// A port's counters by the names GetCounters gives them: `tx_bytes`, `rx_bytes`,
/// `tx_packets`, `rx_packets` (those the source has), the PMA counters under their kernel
/// names and the driver's `hw_counters` as `hw.<name>`.
pub fn by_name(snap: &CounterSnapshot) -> HashMap<String, u64> {
    let mut out = HashMap::with_capacity(4 + snap.pma.len() + snap.hw.len());
    for (k, f) in [
        ("tx_bytes", &snap.tx_bytes),
        ("rx_bytes", &snap.rx_bytes),
        ("tx_packets", &snap.tx_packets),
        ("rx_packets", &snap.rx_packets),
    ] {
        if let Ok(x) = f {
            out.insert(k.to_string(), *x);
        }
    }
    for (k, x) in &snap.pma {
        out.insert(k.clone(), *x);
    }
    for (k, x) in &snap.hw {
        out.insert(format!("hw.{k}"), *x);
    }
    out
}

/// One reading of every port: when it started (µs since the epoch) and its rows.
#[derive(Debug, Clone)]
pub struct Reading {
    pub time_us: u64,
    pub ports: Arc<Vec<PortCounters>>,
    /// Its size on the wire, near enough, charged to each reply of it.
    pub bytes: u64,
}

/// The last reading, shared by the calls that arrive while it is younger than the engine's
/// `counters_max_age`. The lock is held while a reading is made, so that calls arriving
/// meanwhile wait for it instead of starting their own.
#[derive(Default)]
pub struct Shared {
    last: tokio::sync::Mutex<Option<(Instant, Reading)>>,
}

impl Shared {
    /// The counters of every port: the last reading when it is younger than
    /// `engine.counters_max_age`, else a new one.
    pub async fn all(&self, engine: &EngineHandle) -> Result<Reading, Error> {
        let mut last = self.last.lock().await;
        if let Some((at, r)) = last.as_ref() {
            if at.elapsed() < engine.counters_max_age {
                return Ok(r.clone());
            }
        }
        let started = Instant::now();
        let time_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        let read = engine
            .read_all_counters()
            .await
            .map_err(super::errors::op_error)?;
        let mut pfc = engine.all_flow_control_counters().await;
        let mut bytes = 0;
        let ports: Vec<PortCounters> = read
            .into_iter()
            .filter_map(|((index, number), r)| {
                // A port that went away, or whose directory cannot be read, since the model
                // was published: absent, as its object soon is.
                let snap = match r {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::debug!(index, number, error = %e, "port counters not read");
                        return None;
                    }
                };
                let mut counters = by_name(&snap);
                // Per-priority PFC frames, where the netdev has DCB (as GetCounters).
                counters.extend(pfc.remove(&(index, number)).unwrap_or_default());
                // (osba{st}): the path, the source, and each entry's name, 8-byte alignment
                // and value.
                bytes += 64 + counters.keys().map(|k| k.len() as u64 + 24).sum::<u64>();
                Some(PortCounters {
                    port: super::values::object_path(rdma_manager_dbus::port_path(index, number)),
                    source: super::values::counter_source_name(&snap.source).to_string(),
                    saturated: snap.saturated,
                    counters,
                })
            })
            .collect();
        let reading = Reading {
            time_us,
            ports: Arc::new(ports),
            bytes,
        };
        *last = Some((started, reading.clone()));
        Ok(reading)
    }
}
