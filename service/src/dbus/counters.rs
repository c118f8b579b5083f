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

use rdma_manager_dbus::Error;
use serde::ser::{Serialize, SerializeMap, Serializer};
use zbus::zvariant::{OwnedObjectPath, Signature, Type};

use crate::engine::EngineHandle;
use crate::model::CounterSnapshot;

/// A counter's name as GetCounters gives it: one of the source's own (`tx_bytes`, a PMA
/// counter's kernel name, ...) or a driver counter's, given as `hw.<name>`.
enum Name<'a> {
    Plain(&'a str),
    Hw(&'a str),
}

/// A port's counters with their names as GetCounters gives them: `tx_bytes`, `rx_bytes`,
/// `tx_packets`, `rx_packets` (those the source has), the PMA counters under their kernel
/// names and the driver's `hw_counters` as `hw.<name>`.
fn named(snap: &CounterSnapshot) -> impl Iterator<Item = (Name<'_>, u64)> {
    [
        ("tx_bytes", &snap.tx_bytes),
        ("rx_bytes", &snap.rx_bytes),
        ("tx_packets", &snap.tx_packets),
        ("rx_packets", &snap.rx_packets),
    ]
    .into_iter()
    .filter_map(|(k, f)| f.as_ref().ok().map(|x| (Name::Plain(k), *x)))
    .chain(snap.pma.iter().map(|(k, x)| (Name::Plain(k.as_str()), *x)))
    .chain(snap.hw.iter().map(|(k, x)| (Name::Hw(k.as_str()), *x)))
}

/// A port's counters by name, as GetCounters gives them ([`named`]).
pub fn by_name(snap: &CounterSnapshot) -> HashMap<String, u64> {
    named(snap)
        .map(|(name, x)| match name {
            Name::Plain(k) => (k.to_string(), x),
            Name::Hw(k) => (format!("hw.{k}"), x),
        })
        .collect()
}

/// One port of GetAllCounters, `(osba{st})`: its object, counter source, whether a 32-bit
/// PMA counter saturated, and its counters by name.
#[derive(Debug, Clone, serde::Serialize, Type)]
pub struct PortRow {
    pub port: OwnedObjectPath,
    pub source: &'static str,
    pub saturated: bool,
    pub counters: SharedNames,
}

/// Counters by name (`a{st}`), sorted, each name allocated once a reading and shared by
/// every port that has it. Why not a map of Strings: a reading of a few hundred ports is
/// thousands of counters under the same few dozen names, and a String and a hash entry for
/// each was most of what the daemon spent on a reading besides asking the kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SharedNames(Vec<(Arc<str>, u64)>);

impl SharedNames {
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.0.iter().map(|(k, v)| (&**k, *v))
    }
}

impl Type for SharedNames {
    const SIGNATURE: &'static Signature = <HashMap<String, u64> as Type>::SIGNATURE;
}

impl Serialize for SharedNames {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(&**k, v)?;
        }
        map.end()
    }
}

/// The names of one reading, each allocated once.
#[derive(Default)]
struct Names {
    plain: HashMap<String, Arc<str>>,
    hw: HashMap<String, Arc<str>>,
}

impl Names {
    fn get(&mut self, name: Name<'_>) -> Arc<str> {
        let (map, k) = match name {
            Name::Plain(k) => (&mut self.plain, k),
            Name::Hw(k) => (&mut self.hw, k),
        };
        if let Some(shared) = map.get(k) {
            return shared.clone();
        }
        let shared: Arc<str> = match name {
            Name::Plain(_) => Arc::from(k),
            Name::Hw(_) => Arc::from(format!("hw.{k}")),
        };
        map.insert(k.to_string(), shared.clone());
        shared
    }

    /// A port's counters and `more` (named as they are), sorted; where a name comes twice,
    /// the later value (as a map built in this order would keep).
    fn row(&mut self, snap: &CounterSnapshot, more: Vec<(String, u64)>) -> SharedNames {
        let mut out: Vec<(Arc<str>, u64)> =
            named(snap).map(|(name, x)| (self.get(name), x)).collect();
        out.extend(
            more.iter()
                .map(|(k, x)| (self.get(Name::Plain(k.as_str())), *x)),
        );
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 = later.1;
            }
            same
        });
        SharedNames(out)
    }
}

/// One reading of every port: when it started (µs since the epoch) and its rows.
#[derive(Debug, Clone)]
pub struct Reading {
    pub time_us: u64,
    pub ports: Arc<Vec<PortRow>>,
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
        let mut names = Names::default();
        let ports: Vec<PortRow> = read
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
                // Per-priority PFC frames, where the netdev has DCB (as GetCounters).
                let counters = names.row(&snap, pfc.remove(&(index, number)).unwrap_or_default());
                // (osba{st}): the path, the source, and each entry's name, 8-byte alignment
                // and value.
                bytes += 64
                    + counters
                        .iter()
                        .map(|(k, _)| k.len() as u64 + 24)
                        .sum::<u64>();
                Some(PortRow {
                    port: super::values::object_path(rdma_manager_dbus::port_path(index, number)),
                    source: super::values::counter_source_name(&snap.source),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AttrError, CounterSource};

    fn snap(hw: &[(&str, u64)]) -> CounterSnapshot {
        CounterSnapshot {
            source: CounterSource::HwCounters,
            tx_bytes: Ok(10),
            rx_bytes: Ok(20),
            tx_packets: Err(AttrError::Missing),
            rx_packets: Ok(2),
            saturated: false,
            pma: vec![("port_rcv_errors".into(), 1)],
            hw: hw.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn a_row_holds_what_get_counters_gives_sorted_and_its_names_shared() {
        let mut names = Names::default();
        let a = names.row(
            &snap(&[("rcvd_pkts", 5)]),
            vec![("pfc.requests.3".into(), 7)],
        );
        let b = names.row(&snap(&[("rcvd_pkts", 6)]), Vec::new());
        let by: HashMap<String, u64> = a.iter().map(|(k, v)| (k.to_string(), v)).collect();
        let mut want = by_name(&snap(&[("rcvd_pkts", 5)]));
        want.insert("pfc.requests.3".into(), 7);
        assert_eq!(by, want);
        let keys: Vec<&str> = a.iter().map(|(k, _)| k).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
        let hw = |r: &SharedNames| r.0.iter().find(|(k, _)| &**k == "hw.rcvd_pkts").cloned();
        let (ha, hb) = (hw(&a).expect("hw.rcvd_pkts"), hw(&b).expect("hw.rcvd_pkts"));
        assert!(Arc::ptr_eq(&ha.0, &hb.0), "one allocation a name");
        assert_eq!((ha.1, hb.1), (5, 6));
    }

    #[test]
    fn a_name_given_twice_keeps_the_later_value_as_a_map_would() {
        let mut names = Names::default();
        let row = names.row(&snap(&[]), vec![("tx_bytes".into(), 99)]);
        assert_eq!(row.iter().filter(|(k, _)| *k == "tx_bytes").count(), 1);
        assert!(row.iter().any(|(k, v)| k == "tx_bytes" && v == 99));
    }

    #[test]
    fn a_row_is_on_the_wire_what_a_map_of_strings_is() {
        use zbus::zvariant::serialized::{Context, Format};
        use zbus::zvariant::{to_bytes, LE};
        let mut names = Names::default();
        let row = names.row(&snap(&[("rcvd_pkts", 5), ("ack_deferred", 1)]), Vec::new());
        assert_eq!(SharedNames::SIGNATURE.to_string(), "a{st}");
        let ctx = Context::new(Format::DBus, LE, 0);
        let bytes = to_bytes(ctx, &row).expect("serialized");
        let (back, _): (HashMap<String, u64>, _) = bytes.deserialize().expect("a{st}");
        let want: HashMap<String, u64> = row.iter().map(|(k, v)| (k.to_string(), v)).collect();
        assert_eq!(back, want);
        assert_eq!(
            PortRow::SIGNATURE.to_string(),
            "(osba{st})",
            "GetAllCounters' rows keep their signature"
        );
    }
}
