//! The object path of every device, port and IPoIB interface of the state, made once and
//! shared by every property that names it.
//!
//! A path is an `Arc<str>` inside [`OwnedObjectPath`], so a clone costs a reference count.
//! Made afresh by each view, the same path was a separate allocation in each property that
//! named it (a device's `Ports`, a port's `Device`, an IPoIB interface's `Device`, `Port`,
//! `Parent` and `Children`, the root's lists, each ThroughputSampled row): several copies of
//! every path, the largest count of allocations in the daemon's heap.

use rdma_manager_dbus::{device_path, ipoib_path, port_path};
use zbus::zvariant::OwnedObjectPath;

use super::values::object_path;
use crate::engine::ObservedState;

/// Paths by key, sorted by key: smaller than a hash map of the same (the table's empty
/// slots), and looked up only while views are made.
type Sorted<K> = Vec<(K, OwnedObjectPath)>;

#[derive(Debug, Default)]
pub struct ObjectPaths {
    devices: Sorted<u32>,
    ports: Sorted<(u32, u32)>,
    ipoib: Sorted<u32>,
}

fn find<K: Ord>(paths: &Sorted<K>, key: &K) -> Option<OwnedObjectPath> {
    paths
        .binary_search_by(|(k, _)| k.cmp(key))
        .ok()
        .map(|i| paths[i].1.clone())
}

/// The paths of `keys`, those already in `old` kept (shared with whatever holds them).
fn rebuilt<K: Ord + Copy>(
    old: &Sorted<K>,
    keys: impl Iterator<Item = K>,
    make: impl Fn(K) -> String,
) -> Sorted<K> {
    let mut new: Sorted<K> = keys
        .map(|k| (k, find(old, &k).unwrap_or_else(|| object_path(make(k)))))
        .collect();
    new.sort_by_key(|a| a.0);
    new.dedup_by(|a, b| a.0 == b.0);
    new.shrink_to_fit();
    new
}

impl ObjectPaths {
    /// The paths of the objects of `st`.
    pub fn of(st: &ObservedState) -> ObjectPaths {
        ObjectPaths::default().next(st)
    }

    /// The paths of the objects of `st`: those these paths had are kept (shared), new ones
    /// made; those of objects gone are not carried over.
    pub fn next(&self, st: &ObservedState) -> ObjectPaths {
        ObjectPaths {
            devices: rebuilt(&self.devices, st.devices.keys().copied(), device_path),
            ports: rebuilt(
                &self.ports,
                st.devices
                    .values()
                    .flat_map(|d| d.snap.ports.iter().map(move |p| (d.index, p.number))),
                |(d, p)| port_path(d, p),
            ),
            ipoib: rebuilt(&self.ipoib, st.ipoib.keys().copied(), ipoib_path),
        }
    }

    /// The path of device `index`; made afresh when the device is not in the last state.
    pub fn device(&self, index: u32) -> OwnedObjectPath {
        find(&self.devices, &index).unwrap_or_else(|| object_path(device_path(index)))
    }

    /// The path of port `number` of device `index`.
    pub fn port(&self, index: u32, number: u32) -> OwnedObjectPath {
        find(&self.ports, &(index, number)).unwrap_or_else(|| object_path(port_path(index, number)))
    }

    /// The path of the IPoIB interface `ifindex`.
    pub fn ipoib(&self, ifindex: u32) -> OwnedObjectPath {
        find(&self.ipoib, &ifindex).unwrap_or_else(|| object_path(ipoib_path(ifindex)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_path_is_shared_and_a_missing_one_is_made() {
        let mut paths = ObjectPaths::default();
        paths.devices = rebuilt(&paths.devices, [3, 1].into_iter(), device_path);
        let first = paths.device(1);
        assert_eq!(first.as_str(), device_path(1));
        // Rebuilt with device 1 still there: the same string, not a copy.
        paths.devices = rebuilt(&paths.devices, [1, 5].into_iter(), device_path);
        let again = paths.device(1);
        assert!(std::ptr::eq(first.as_str(), again.as_str()));
        // Device 3 went: its path is made afresh, equal but not shared.
        let gone = paths.device(3);
        assert_eq!(gone.as_str(), device_path(3));
        assert_eq!(paths.devices.len(), 2);
        assert_eq!(paths.port(1, 2).as_str(), port_path(1, 2));
        assert_eq!(paths.ipoib(7).as_str(), ipoib_path(7));
    }

    #[tokio::test]
    async fn the_next_state_keeps_the_paths_of_what_stayed_and_drops_the_rest() {
        use crate::kernel::sim::{fixtures, SimHost};
        let sim = SimHost::new(fixtures::demo_host()).expect("demo host");
        let before = ObservedState::read(&sim).await.expect("read");
        let first = ObjectPaths::of(&before);
        let gone = before
            .devices
            .values()
            .find(|d| d.snap.ports.len() > 1)
            .expect("a device of two ports");
        let (gone_index, gone_name) = (gone.index, gone.name().to_string());
        let kept = before
            .devices
            .values()
            .find(|d| d.index != gone_index)
            .expect("another device");
        let kept_port = kept.snap.ports[0].number;
        sim.unplug(&gone_name).expect("unplug");
        let after = ObservedState::read(&sim).await.expect("read again");
        let next = first.next(&after);
        // What stayed: the same strings, not copies.
        assert!(std::ptr::eq(
            first.device(kept.index).as_str(),
            next.device(kept.index).as_str()
        ));
        assert!(std::ptr::eq(
            first.port(kept.index, kept_port).as_str(),
            next.port(kept.index, kept_port).as_str()
        ));
        // What went: its device and both its ports are no longer kept.
        assert_eq!(next.devices.len(), first.devices.len() - 1);
        assert_eq!(next.ports.len(), first.ports.len() - gone.snap.ports.len());
        assert!(find(&next.devices, &gone_index).is_none());
        assert!(gone
            .snap
            .ports
            .iter()
            .all(|p| find(&next.ports, &(gone_index, p.number)).is_none()));
        // Every IPoIB interface of the state has its path.
        assert_eq!(next.ipoib.len(), after.ipoib.len());
    }
}
