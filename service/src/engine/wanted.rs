//! What a batch of kernel events asks the engine to re-read, and what appeared in it (whose
//! persisted settings `restore.rs` re-applies). Events are hints: each names what to read
//! again, never a value to take.

use std::collections::BTreeSet;

use tracing::{debug, warn};

use super::DeviceState;
use crate::kernel::HostEvent;

/// What a batch of events asks to re-read.
#[derive(Default)]
pub(super) struct Wanted {
    pub(super) devices: BTreeSet<String>,
    pub(super) netdevs: BTreeSet<String>,
    pub(super) everything: bool,
    /// Names that appeared (added, or renamed to): what was persisted for them is re-applied.
    pub(super) appeared: Appeared,
    /// Netdev renames (old, new), in order: what is remembered by name follows them.
    pub(super) renamed: Vec<(String, String)>,
    /// Netdevs whose IP addresses changed: only the devices whose ports they carry are
    /// re-read (their RoCE GIDs), not the netdevs themselves.
    pub(super) addressed: BTreeSet<String>,
}

impl Wanted {
    pub(super) fn add(&mut self, ev: HostEvent) {
        match ev {
            HostEvent::RdmaAdded { name } => {
                self.appeared.devices.insert(name.clone());
                self.devices.insert(name);
            }
            HostEvent::RdmaRemoved { name } | HostEvent::RdmaChanged { name } => {
                self.devices.insert(name);
            }
            HostEvent::RdmaRenamed { old, new } => {
                self.devices.insert(old);
                self.appeared.devices.insert(new.clone());
                self.devices.insert(new);
            }
            HostEvent::NetdevAdded { name } => {
                self.appeared.netdevs.insert(name.clone());
                self.netdevs.insert(name);
            }
            HostEvent::NetdevRemoved { name } | HostEvent::NetdevChanged { name } => {
                self.netdevs.insert(name);
            }
            HostEvent::NetdevRenamed { old, new } => {
                self.renamed.push((old.clone(), new.clone()));
                self.netdevs.insert(old);
                self.appeared.netdevs.insert(new.clone());
                self.netdevs.insert(new);
            }
            HostEvent::NetdevAddressChanged { name } => {
                self.addressed.insert(name);
            }
            HostEvent::RdmaPortEvent { name, port, event } => {
                debug!(device = %name, port, ?event, "port event");
                self.devices.insert(name);
            }
            HostEvent::Overflow { source } => {
                warn!(%source, "kernel events were lost; re-enumerating");
                self.everything = true;
            }
        }
    }
}

/// Whether a port of `d` rides on a netdev `named` picks: its parent, its netdevs, or a
/// port's counter netdev.
pub(super) fn device_carries(d: &DeviceState, named: impl Fn(&str) -> bool) -> bool {
    let linked = d.snap.parent_netdev.iter().chain(d.snap.netdevs.iter());
    let carried = d.sources.values().filter_map(|s| s.netdev.as_ref());
    linked.chain(carried).any(|n| named(n))
}

/// What appeared since the last restore.
#[derive(Debug, Clone, Default)]
pub(super) struct Appeared {
    /// Daemon start: everything present counts as appeared.
    pub start: bool,
    /// RDMA device names.
    pub devices: BTreeSet<String>,
    /// Network interface names.
    pub netdevs: BTreeSet<String>,
}

impl Appeared {
    pub fn start() -> Appeared {
        Appeared {
            start: true,
            ..Appeared::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        !self.start && self.devices.is_empty() && self.netdevs.is_empty()
    }

    pub fn device(&self, name: &str) -> bool {
        self.start || self.devices.contains(name)
    }

    pub fn netdev(&self, name: &str) -> bool {
        self.start || self.netdevs.contains(name)
    }
}
