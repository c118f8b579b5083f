//! The observed state of the host: every RDMA device (by kernel index), its ports with their
//! counter sources, and every IPoIB netdev (by ifindex), linked to the port it runs on.
//!
//! Built and refreshed only through [`Host`] reads; a refresh replaces what it read and
//! returns which keys changed, so the bus layer republishes just those.

use crate::kernel::roce::PortRoce;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use serde::Serialize;
use tracing::warn;

use super::by_port::ByPort;
use crate::kernel::{Host, HostError, NlDevice, PortSource};
use crate::model::roce::is_roce_port;
use crate::model::{DeviceSnapshot, NetdevAddress, NetdevSnapshot};

/// How many devices a full enumeration reads at once (see [`ObservedState::refresh_all`]): enough
/// to keep a few CPUs busy, few enough that a 1024-device host does not take as many
/// blocking threads and descriptors at once.
const DEVICES_IN_FLIGHT: usize = 8;

/// A device as the daemon knows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceState {
    /// Kernel device index: stable across renames, reused only after removal.
    pub index: u32,
    /// What the RDMA netlink dump says (protocol, capabilities); `None` if the dump lacked it.
    pub nl: Option<NlDevice>,
    pub snap: DeviceSnapshot,
    /// Per port: counter source and netdev.
    pub sources: ByPort<PortSource>,
    /// Per RoCE port: rdma_cm's defaults as configfs reads them.
    pub roce: ByPort<PortRoce>,
    /// The device's PCI function as an SR-IOV PF, with its VFs' GUIDs (see `ops_vf_guid`);
    /// `None` for any other device, or when they could not be read (logged).
    pub sriov: Option<crate::kernel::sriov::SriovPf>,
}

impl DeviceState {
    pub fn name(&self) -> &str {
        &self.snap.name
    }
}

/// An IPoIB netdev and the RDMA port it runs on, if known.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IpoibState {
    pub ifindex: u32,
    pub snap: NetdevSnapshot,
    /// (device index, port number).
    pub port: Option<(u32, u32)>,
    /// Its IPv4 and IPv6 addresses, from the kernel (RTM_GETADDR), whatever configured them.
    pub addresses: Vec<NetdevAddress>,
}

/// Which objects a refresh touched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dirty {
    pub devices: BTreeSet<u32>,
    pub ipoib: BTreeSet<u32>,
    /// The persisted configuration changed (root properties derived from it).
    pub config: bool,
    /// Host setup changed (the Host object).
    pub host_setup: bool,
    /// Devices that could not be re-read and keep their last state, with the reason: the
    /// published state may be behind the kernel for them (not a change to publish).
    pub unread: Vec<String>,
}

impl Dirty {
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty() && self.ipoib.is_empty() && !self.config && !self.host_setup
    }

    pub fn merge(&mut self, other: Dirty) {
        self.devices.extend(other.devices);
        self.ipoib.extend(other.ipoib);
        self.config |= other.config;
        self.host_setup |= other.host_setup;
        self.unread.extend(other.unread);
    }
}

/// Objects by (kernel index or ifindex, name).
pub type NamedKeys = BTreeSet<(u32, String)>;

/// What the engine has observed of the host: devices, IPoIB netdevs, host setup, naming
/// rules and staleness (the kernel side is `kernel::Host`; the Host object's part is
/// `host_setup`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ObservedState {
    pub devices: BTreeMap<u32, DeviceState>,
    pub ipoib: BTreeMap<u32, IpoibState>,
    /// What the daemon has persisted (and re-applies), as last loaded or saved.
    pub config: crate::config::Desired,
    /// The udev naming rules, as last read.
    pub naming: super::NamingState,
    /// Host setup (modules, memlock, NFS over RDMA, opensm), as last read.
    pub host_setup: super::HostSetupState,
    /// Set while the host cannot be read (out of file descriptors, for one): what is
    /// published is the last state read, which may be behind the kernel.
    pub stale: Option<Stale>,
    /// NetworkManager's profiles when last asked (`None`: it does not run), for the owner of
    /// each IPoIB interface.
    pub nm_profiles: Option<Vec<crate::nm::client::ProfileSummary>>,
    /// The outcome of each file of the state directory applied at start.
    pub state_directory: Vec<super::StateFileOutcome>,
    /// Changes of each port's logical state seen since the daemon started, by (device
    /// index, port): counted as the port is re-read, on its event or the poll that saw it
    /// move, so a monitor learns of a flap that happened between two of its reads.
    /// Published as each Port's `StateChanges`; not serialized (its keys are pairs).
    #[serde(skip)]
    pub state_changes: BTreeMap<(u32, u32), u64>,
    /// When each of those changes was seen, the last [`FLAP_MEMORY`] of a port, oldest
    /// first: `CheckHealth` counts a port's flaps over a window that ends now.
    #[serde(skip)]
    pub state_change_times: BTreeMap<(u32, u32), VecDeque<Instant>>,
    /// The port types of the VPI adapters, by device index: read when a device appears and
    /// after a change (`ops_port_type.rs`), not at every re-read (mlx5's come from a
    /// firmware tool). A device whose driver has none is absent.
    pub port_types: BTreeMap<u32, crate::kernel::port_type::PortTypes>,
}

/// How many state changes of a port are remembered with their time (the health section's
/// `flaps.max` stays below it).
pub use rdma_manager_model::health::expect::FLAP_MEMORY;

/// Why the published state may be behind the kernel, and since when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stale {
    pub reason: String,
    /// When the first failed read happened, in microseconds since the Unix epoch.
    pub since_unix_us: u64,
}

impl ObservedState {
    pub fn device_by_name(&self, name: &str) -> Option<&DeviceState> {
        self.devices.values().find(|d| d.name() == name)
    }

    /// The names of the hardware devices: the only ones whose port events may be watched
    /// (see `kernel::port_events`), so that a host of soft devices is not asked about each.
    pub fn hardware_names(&self) -> BTreeSet<String> {
        self.devices
            .values()
            .filter(|d| d.snap.kind == crate::model::DeviceKind::Hardware)
            .map(|d| d.name().to_string())
            .collect()
    }

    /// (index, name) of every device.
    pub fn device_keys(&self) -> NamedKeys {
        self.devices
            .values()
            .map(|d| (d.index, d.name().to_string()))
            .collect()
    }

    /// (index, name) of every device and of every IPoIB interface: a pair that is new after a
    /// re-read is something that appeared.
    pub fn present_names(&self) -> (NamedKeys, NamedKeys) {
        (
            self.device_keys(),
            self.ipoib
                .values()
                .map(|i| (i.ifindex, i.snap.name.clone()))
                .collect(),
        )
    }

    /// Reads everything.
    pub async fn read(host: &dyn Host) -> Result<ObservedState, HostError> {
        let mut st = ObservedState::default();
        st.refresh_all(host).await?;
        Ok(st)
    }

    /// Re-reads everything (start, netlink overflow, an event storm) and returns what differs.
    pub async fn refresh_all(&mut self, host: &dyn Host) -> Result<Dirty, HostError> {
        use futures::StreamExt;
        // A kernel without the RDMA core has no RDMA netlink, and no RDMA device either:
        // the host is read as one without devices (as ibstat reads it), not as a failure.
        let nl = match host.nl_devices().await {
            Err(HostError::Unsupported { .. }) => Vec::new(),
            other => other?,
        };
        // Both maps are collected into vectors and built at once: a map built in one go
        // has full leaves, where one filled in key order keeps them about half empty (the
        // B-tree splits a full leaf in two), and a leaf of these large values is large.
        let mut devices = Vec::new();
        let mut unread = Vec::new();
        // Several devices in flight at once: each read is a chain of blocking sysfs,
        // configfs and uverbs calls, and on a host of hundreds of devices one after the
        // other left the other CPUs idle. In name order all the same (`buffered`).
        let names = host.rdma_device_names().await?;
        type Read<'a> = futures::future::BoxFuture<'a, Result<Option<DeviceState>, HostError>>;
        let futures: Vec<Read<'_>> = names
            .iter()
            .map(|name| -> Read<'_> { Box::pin(read_device_state(host, name, &nl)) })
            .collect();
        let reads = futures::stream::iter(futures).buffered(DEVICES_IN_FLIGHT);
        let results: Vec<_> = reads.collect().await;
        for (name, read) in names.into_iter().zip(results) {
            match read {
                Ok(Some(d)) => devices.push((d.index, d)),
                Ok(None) => {}
                // One device that cannot be read keeps what was known of it; the others
                // are still refreshed.
                Err(e) => {
                    warn!(device = %name, error = %e, "cannot re-read device; keeping its last state");
                    unread.push(format!("{name}: {e}"));
                    if let Some(old) = self.device_by_name(&name) {
                        devices.push((old.index, old.clone()));
                    }
                }
            }
        }
        let devices: BTreeMap<u32, DeviceState> = devices.into_iter().collect();
        let mut ipoib: BTreeMap<u32, IpoibState> = host
            .read_ipoib_netdevs()
            .await?
            .into_iter()
            .filter_map(ipoib_state)
            .map(|i| (i.ifindex, i))
            .collect();
        if !ipoib.is_empty() {
            self.fill_addresses(host, None, &mut ipoib).await;
        }
        let mut dirty = Dirty {
            unread,
            ..Dirty::default()
        };
        diff_keys(&self.devices, &devices, &mut dirty.devices);
        for d in devices.values() {
            self.count_state_changes(d);
        }
        self.devices = devices;
        self.forget_state_changes();
        diff_keys(&self.ipoib, &ipoib, &mut dirty.ipoib);
        self.ipoib = ipoib;
        dirty.ipoib.extend(self.relink_ipoib());
        Ok(dirty)
    }

    /// Re-reads the devices with these names (added, removed, renamed or changed ones).
    pub async fn refresh_devices(
        &mut self,
        host: &dyn Host,
        names: &BTreeSet<String>,
    ) -> Result<Dirty, HostError> {
        let nl = host.nl_devices().await?;
        self.refresh_devices_with(host, names, &nl).await
    }

    /// [`ObservedState::refresh_devices`] with the RDMA netlink device list already in hand (the
    /// sweep keeps one: a dump of every device costs as much as reading several of them).
    pub async fn refresh_devices_with(
        &mut self,
        host: &dyn Host,
        names: &BTreeSet<String>,
        nl: &[NlDevice],
    ) -> Result<Dirty, HostError> {
        let mut dirty = Dirty::default();
        for name in names {
            let fresh = match read_device_state(host, name, nl).await {
                Ok(f) => f,
                Err(e) => {
                    warn!(device = %name, error = %e, "cannot re-read device; keeping its last state");
                    dirty.unread.push(format!("{name}: {e}"));
                    continue;
                }
            };
            // The name may have belonged to another index (renamed away, or removed and the
            // name reused): drop whoever held it unless it is the fresh one.
            let stale: Vec<u32> = self
                .devices
                .values()
                .filter(|d| d.name() == name && Some(d.index) != fresh.as_ref().map(|f| f.index))
                .map(|d| d.index)
                .collect();
            for idx in stale {
                // Still present under another name? Then re-read it by that name.
                match nl.iter().find(|n| n.index == idx) {
                    Some(n) if n.name != *name => {
                        if let Some(d) = read_device_state(host, &n.name, nl).await? {
                            self.put_device(d, &mut dirty);
                        }
                    }
                    _ => {
                        self.devices.remove(&idx);
                        dirty.devices.insert(idx);
                    }
                }
            }
            if let Some(d) = fresh {
                self.put_device(d, &mut dirty);
            }
        }
        // Devices the kernel no longer lists at all (a missed removal).
        let gone: Vec<u32> = self
            .devices
            .keys()
            .copied()
            .filter(|i| !nl.iter().any(|n| n.index == *i))
            .collect();
        for idx in gone {
            self.devices.remove(&idx);
            dirty.devices.insert(idx);
        }
        self.forget_state_changes();
        dirty.ipoib.extend(self.relink_ipoib());
        Ok(dirty)
    }

    /// Counts each port of `fresh` whose logical state differs from the one last read
    /// (a port or state read for the first time, or unreadable, is no change).
    fn count_state_changes(&mut self, fresh: &DeviceState) {
        let Some(old) = self.devices.get(&fresh.index) else {
            return;
        };
        for port in &fresh.snap.ports {
            let before = old
                .snap
                .port(port.number)
                .and_then(|p| p.state.as_ref().ok());
            if let (Some(before), Ok(now)) = (before, &port.state) {
                if before != now {
                    let key = (fresh.index, port.number);
                    *self.state_changes.entry(key).or_default() += 1;
                    let times = self.state_change_times.entry(key).or_default();
                    if times.len() == FLAP_MEMORY {
                        times.pop_front();
                    }
                    times.push_back(Instant::now());
                }
            }
        }
    }

    /// Drops the counts of devices no longer present (an index is reused only after removal).
    fn forget_state_changes(&mut self) {
        let devices = &self.devices;
        self.state_changes
            .retain(|(index, _), _| devices.contains_key(index));
        self.state_change_times
            .retain(|(index, _), _| devices.contains_key(index));
    }

    /// A port's state changes seen within `window` before now (at most [`FLAP_MEMORY`]).
    pub fn state_changes_within(&self, index: u32, port: u32, window: Duration) -> u64 {
        let Some(times) = self.state_change_times.get(&(index, port)) else {
            return 0;
        };
        let now = Instant::now();
        times
            .iter()
            .filter(|t| now.saturating_duration_since(**t) <= window)
            .count() as u64
    }

    /// A port's state changes so far (see `state_changes`).
    pub fn state_changes_of(&self, index: u32, port: u32) -> u64 {
        self.state_changes.get(&(index, port)).copied().unwrap_or(0)
    }

    /// Re-reads the netdevs with these names.
    pub async fn refresh_netdevs(
        &mut self,
        host: &dyn Host,
        names: &BTreeSet<String>,
    ) -> Result<Dirty, HostError> {
        let mut dirty = Dirty::default();
        // Names that stopped naming the interface that had them (renamed or removed).
        let mut left: BTreeSet<String> = BTreeSet::new();
        for name in names {
            self.refresh_netdev(host, name, &mut dirty, &mut left)
                .await?;
        }
        // A child names its parent through the parent's ifindex, so a renamed parent renames
        // it in every child, and the kernel sends no event for the children: re-read them.
        let children: BTreeSet<String> = self
            .ipoib
            .values()
            .filter(|i| {
                i.snap
                    .ipoib
                    .as_ref()
                    .and_then(|a| a.parent.as_ref())
                    .is_some_and(|p| left.contains(p))
            })
            .map(|i| i.snap.name.clone())
            .filter(|n| !names.contains(n))
            .collect();
        for name in &children {
            self.refresh_netdev(host, name, &mut dirty, &mut left)
                .await?;
        }
        dirty.ipoib.extend(self.relink_ipoib());
        Ok(dirty)
    }

    /// Re-reads one netdev by name; adds to `left` the names that no longer name the
    /// interface that had them.
    async fn refresh_netdev(
        &mut self,
        host: &dyn Host,
        name: &str,
        dirty: &mut Dirty,
        left: &mut BTreeSet<String>,
    ) -> Result<(), HostError> {
        let mut fresh = match host.read_netdev(name).await {
            Ok(nd) => ipoib_state(nd),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e),
        };
        if let Some(i) = fresh.take() {
            let mut one = BTreeMap::from([(i.ifindex, i)]);
            let only = one.keys().next().copied();
            self.fill_addresses(host, only, &mut one).await;
            fresh = one.into_values().next();
        }
        let stale: Vec<u32> = self
            .ipoib
            .values()
            .filter(|i| i.snap.name == name && Some(i.ifindex) != fresh.as_ref().map(|f| f.ifindex))
            .map(|i| i.ifindex)
            .collect();
        for idx in stale {
            self.ipoib.remove(&idx);
            dirty.ipoib.insert(idx);
            left.insert(name.to_string());
        }
        if let Some(i) = fresh {
            match self.ipoib.get(&i.ifindex) {
                Some(old) if old == &i => return Ok(()),
                Some(old) if old.snap.name != i.snap.name => {
                    left.insert(old.snap.name.clone());
                }
                _ => {}
            }
            dirty.ipoib.insert(i.ifindex);
            self.ipoib.insert(i.ifindex, i);
        }
        Ok(())
    }

    /// Gives the IPoIB netdevs in `ipoib` their addresses (of every netdev, or of `only`),
    /// one RTM_GETADDR dump. A failed read keeps the addresses last known: the rest of the
    /// netdev is still worth publishing.
    async fn fill_addresses(
        &self,
        host: &dyn Host,
        only: Option<u32>,
        ipoib: &mut BTreeMap<u32, IpoibState>,
    ) {
        match host.read_addresses(only).await {
            Ok(mut by_index) => {
                for (idx, i) in ipoib.iter_mut() {
                    i.addresses = by_index.remove(idx).unwrap_or_default();
                }
            }
            Err(e) => {
                warn!(error = %e, "cannot read the netdevs' addresses; keeping the last known");
                for (idx, i) in ipoib.iter_mut() {
                    if let Some(old) = self.ipoib.get(idx) {
                        i.addresses = old.addresses.clone();
                    }
                }
            }
        }
    }

    /// Re-reads the addresses of the IPoIB netdevs named (an address event); returns the
    /// ifindexes whose addresses changed.
    pub async fn refresh_addresses(
        &mut self,
        host: &dyn Host,
        names: &BTreeSet<String>,
    ) -> BTreeSet<u32> {
        let mut named: BTreeMap<u32, IpoibState> = self
            .ipoib
            .values()
            .filter(|i| names.contains(&i.snap.name))
            .map(|i| (i.ifindex, i.clone()))
            .collect();
        let only = match named.len() {
            0 => return BTreeSet::new(),
            1 => named.keys().next().copied(),
            _ => None,
        };
        self.fill_addresses(host, only, &mut named).await;
        let mut changed = BTreeSet::new();
        for (idx, fresh) in named {
            if let Some(old) = self.ipoib.get_mut(&idx) {
                if old.addresses != fresh.addresses {
                    old.addresses = fresh.addresses;
                    changed.insert(idx);
                }
            }
        }
        changed
    }

    fn put_device(&mut self, d: DeviceState, dirty: &mut Dirty) {
        if self.devices.get(&d.index) != Some(&d) {
            self.count_state_changes(&d);
            dirty.devices.insert(d.index);
            self.devices.insert(d.index, d);
        }
    }

    /// Links every IPoIB netdev to its device and port (same PCI function, `dev_port` + 1);
    /// returns the ifindexes whose link changed.
    fn relink_ipoib(&mut self) -> Vec<u32> {
        let by_pci: BTreeMap<&str, u32> = self
            .devices
            .values()
            .filter_map(|d| d.snap.pci_address.as_deref().map(|p| (p, d.index)))
            .collect();
        let mut changed = Vec::new();
        for i in self.ipoib.values_mut() {
            let port = i.snap.ipoib.as_ref().and_then(|a| a.port.clone().ok());
            let dev = i.snap.pci_address.as_deref().and_then(|p| by_pci.get(p));
            let link = match (dev, port) {
                (Some(d), Some(p)) => Some((*d, p)),
                _ => None,
            };
            if i.port != link {
                i.port = link;
                changed.push(i.ifindex);
            }
        }
        changed
    }
}

fn diff_keys<K: Ord + Copy, V: PartialEq>(
    old: &BTreeMap<K, V>,
    new: &BTreeMap<K, V>,
    out: &mut BTreeSet<K>,
) {
    for (k, v) in new {
        if old.get(k) != Some(v) {
            out.insert(*k);
        }
    }
    out.extend(old.keys().filter(|k| !new.contains_key(k)).copied());
}

fn ipoib_state(nd: NetdevSnapshot) -> Option<IpoibState> {
    if !nd.is_ipoib() {
        return None;
    }
    let ifindex = nd.ifindex.clone().ok()?;
    Some(IpoibState {
        ifindex,
        snap: nd,
        port: None,
        addresses: Vec::new(),
    })
}

/// Reads one device; `None` when it is gone (from sysfs or from the netlink dump).
async fn read_device_state(
    host: &dyn Host,
    name: &str,
    nl: &[NlDevice],
) -> Result<Option<DeviceState>, HostError> {
    let Some(nl_dev) = nl.iter().find(|n| n.name == name) else {
        return Ok(None);
    };
    let snap = match host.read_device(name).await {
        Ok(s) => s,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e),
    };
    let sources = match host.port_sources(name).await {
        Ok(s) => s.into_iter().map(|p| (p.port, p)).collect(),
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut roce = Vec::new();
    for p in snap
        .ports
        .iter()
        .filter(|p| is_roce_port(&snap.node_type, p))
    {
        roce.push((p.number, PortRoce::read(host, name, p.number).await));
    }
    let sriov = match host.read_sriov(name).await {
        Ok(s) => s,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => {
            tracing::warn!(device = %name, error = %e, "reading the SR-IOV VFs");
            None
        }
    };
    Ok(Some(DeviceState {
        index: nl_dev.index,
        nl: Some(nl_dev.clone()),
        snap,
        sources,
        roce: roce.into_iter().collect(),
        sriov,
    }))
}
