//! The root's GetAllCounters and what a scrape keeps of its reply, on either connection the
//! exporter has to the daemon: the bus or the direct socket.
//!
//! The reply names every counter of every port (thousands of entries on a large host, the
//! same few dozen names again and again). It is decoded with the names borrowed from the
//! message and kept sorted, each name allocated once a scrape and shared by the ports that
//! have it: a String and a hash-map entry per counter were a fifth of a scrape's work.

use std::collections::BTreeMap;
use std::sync::Arc;

use rdma_manager_dbus::ROOT_PATH;
use zbus::zvariant::ObjectPath;
use zbus::Connection;

use crate::model::MANAGER_IFACE;

/// A port's counters as GetCounters gives them: (source, saturated, counters by name).
#[derive(Debug, Clone, Default)]
pub struct Counters {
    pub source: String,
    pub saturated: bool,
    pub values: Values,
}

/// Counters by name, sorted by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Values(Vec<(Arc<str>, u64)>);

impl Values {
    /// The counter `name`, if the port has it.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.0
            .binary_search_by(|(n, _)| (**n).cmp(name))
            .ok()
            .map(|i| self.0[i].1)
    }

    /// Every counter, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.0.iter().map(|(n, v)| (&**n, *v))
    }
}

impl<'a> FromIterator<(&'a str, u64)> for Values {
    /// Counters given in any order, kept sorted by name.
    fn from_iter<I: IntoIterator<Item = (&'a str, u64)>>(pairs: I) -> Self {
        let mut values: Vec<(Arc<str>, u64)> =
            pairs.into_iter().map(|(n, v)| (Arc::from(n), v)).collect();
        values.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Values(values)
    }
}

/// GetAllCounters on `conn`: the bus (the daemon's name as `destination`) or the direct
/// socket (none). Returns when the daemon read them (µs since the epoch) and each port's
/// counters by its object path.
pub async fn all_counters_on(
    conn: &Connection,
    destination: Option<&str>,
) -> zbus::Result<(u64, Vec<(String, Counters)>)> {
    let reply = conn
        .call_method(
            destination,
            ROOT_PATH,
            Some(MANAGER_IFACE),
            "GetAllCounters",
            &(),
        )
        .await?;
    let body = reply.body();
    let (time_us, rows): (u64, Vec<BorrowedRow<'_>>) = body.deserialize()?;
    Ok((time_us, kept(rows)))
}

/// One port of the reply, its names borrowed: (object, source, saturated, counters).
type BorrowedRow<'a> = (ObjectPath<'a>, &'a str, bool, BTreeMap<&'a str, u64>);

/// The rows as a scrape keeps them, each name allocated once.
fn kept(rows: Vec<BorrowedRow<'_>>) -> Vec<(String, Counters)> {
    let mut names: BTreeMap<&str, Arc<str>> = BTreeMap::new();
    rows.into_iter()
        .map(|(path, source, saturated, values)| {
            let values = values
                .into_iter()
                .map(|(name, v)| {
                    let shared = names.entry(name).or_insert_with(|| Arc::from(name)).clone();
                    (shared, v)
                })
                .collect();
            (
                path.to_string(),
                Counters {
                    source: source.to_string(),
                    saturated,
                    values: Values(values),
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_shared_sorted_and_found() {
        let row = |path: &'static str, entries: &[(&'static str, u64)]| -> BorrowedRow<'static> {
            (
                ObjectPath::from_static_str_unchecked(path),
                "hw_counters",
                false,
                entries.iter().copied().collect(),
            )
        };
        let kept = kept(vec![
            row("/a", &[("tx_bytes", 1), ("hw.rcvd_pkts", 2)]),
            row("/b", &[("hw.rcvd_pkts", 3)]),
        ]);
        let (a, b) = (&kept[0].1.values, &kept[1].1.values);
        assert_eq!(
            a.iter().collect::<Vec<_>>(),
            [("hw.rcvd_pkts", 2), ("tx_bytes", 1)]
        );
        assert_eq!((a.get("tx_bytes"), a.get("rx_bytes")), (Some(1), None));
        assert_eq!(b.get("hw.rcvd_pkts"), Some(3));
        assert!(Arc::ptr_eq(&a.0[0].0, &b.0[0].0), "one allocation a name");
        assert_eq!(kept[1].0, "/b");
    }
}
