//! The kernel boundary: everything the daemon reads from or does to the kernel and the
//! filesystem goes through the [`Host`] trait. Nothing above this module touches a path or a
//! socket.
//!
//! - [`sysfs`]: readers of `/sys/class/infiniband`, `/sys/class/net` and configfs, rooted at a
//!   directory so that the simulated host's fixture tree is read by the very same code.
//! - [`nldev`]: the RDMA netlink (NETLINK_RDMA, nldev) client.
//! - [`rtnl`]: rtnetlink for IPoIB netdevs.
//! - [`uevents`]: udev, or the kernel's uevent socket when no udevd runs.
//! - [`port_events`]: uverbs asynchronous events of hardware ports (state, LIDs, GIDs).
//! - [`roce`], [`dcb`], [`port_type`], [`sriov`]: the settings areas, each with its part of
//!   [`Host`] and the real host's implementation of it.
//! - [`linux`]: the real host. `sim`: the simulated host (the `sim` feature).
//! - [`observe`]: what the sysfs readers do, told to whoever asks (the simulated host's cost
//!   model); the readers know nothing of who listens.

pub mod dcb;
pub mod error;
pub mod ethtool;
pub mod files;
pub mod link_stats;
pub mod linux;
pub mod nldev;
pub mod observe;
mod openat;
pub mod port_events;
pub mod port_poll;
pub mod port_type;
pub mod rlimit;
pub mod roce;
pub mod rtnl;
// The simulated host: for the tests and, with the `sim` feature, `--simulate` and rdma-tui's
// demo; the packaged daemon has none.
#[cfg(any(test, feature = "sim"))]
pub mod sim;
pub mod sriov;
pub mod sysfs;
pub mod uevents;
pub mod umad;
pub mod verbs;
pub mod verbs_providers;

use async_trait::async_trait;
use serde::Serialize;
use tokio::sync::mpsc;

pub use crate::model::PortSource;
pub use dcb::QosHost;
pub use error::{HostError, Op};
pub use port_poll::{LidTurn, PollTarget, PortPoller, PortReading, StatePoll, TrafficCounters};
pub use port_type::PortTypeHost;
pub use roce::RoceHost;
pub use sriov::SriovHost;

/// The host's traits, [`Host`] and each area's part of it, for code that calls them on a
/// concrete host (`SimHost`, `LinuxHost`); through `dyn Host` they need no import.
pub mod prelude {
    pub use super::{Host, PortTypeHost, QosHost, RoceHost, SriovHost};
}

use crate::model::{
    CounterSnapshot, DeviceSnapshot, Guid, IpoibMode, NetdevAddress, NetdevSnapshot, SoftLinkType,
};
use crate::naming::rdma_rename::RenameSysfs;

/// A device as the RDMA netlink GET dump describes it (what `rdma dev show` prints).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NlDevice {
    pub index: u32,
    pub name: String,
    pub node_type: Option<u8>,
    pub node_guid: Option<Guid>,
    pub sys_image_guid: Option<Guid>,
    pub fw_version: Option<String>,
    pub cap_flags: Option<u64>,
    pub protocol: Option<String>,
    pub port_count: Option<u32>,
    /// NAME_ASSIGN_TYPE (Linux 6.11 and later): 1 when user space gave the name (rxe, siw).
    pub name_assign_type: Option<u8>,
}

impl NlDevice {
    /// What rdma_rename takes from this dump: it needs the index, the name and the node GUID.
    pub fn rename_identity(&self) -> Option<crate::naming::rdma_rename::NetlinkIdentity> {
        Some(crate::naming::rdma_rename::NetlinkIdentity {
            index: self.index,
            node_guid: self.node_guid?,
            protocol: self.protocol.clone(),
            name_assign_type: self.name_assign_type,
        })
    }
}

/// A port as the RDMA netlink PORT_GET dump describes it (what `rdma link show` prints).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NlPort {
    pub dev_index: u32,
    pub dev_name: String,
    pub port: u32,
    pub state: Option<u8>,
    pub phys_state: Option<u8>,
    pub lid: Option<u32>,
    pub sm_lid: Option<u32>,
    pub lmc: Option<u8>,
    pub subnet_prefix: Option<u64>,
    pub cap_flags: Option<u64>,
    pub netdev_index: Option<u32>,
    pub netdev_name: Option<String>,
}

/// RDMA subsystem settings (SYS_GET; `rdma sys show`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NlSys {
    /// 1 = shared (netns_mode), 0 = exclusive.
    pub netns_shared: Option<bool>,
    pub copy_on_fork: Option<bool>,
    /// Whether the kernel sends RDMA netlink monitor events (newer than Debian's 6.12).
    pub monitor_mode: Option<bool>,
}

/// A request to create a soft RDMA device (`rdma link add NAME type TYPE netdev NETDEV`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewLink {
    pub name: String,
    pub kind: SoftLinkType,
    pub netdev: String,
}

/// A request to create an IPoIB child over rtnetlink (`ip link add link PARENT name NAME type
/// ipoib pkey PKEY mode MODE`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewIpoibChild {
    pub parent: String,
    /// The name; the kernel's rule `<parent>.%04x` is applied by the caller when absent.
    pub name: String,
    /// As given by the user; the kernel ORs in the full-membership bit.
    pub pkey: u16,
    pub mode: Option<IpoibMode>,
    pub umcast: Option<bool>,
}

/// Changes to an existing netdev, applied in one rtnetlink request where possible.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NetdevChange {
    pub mtu: Option<u32>,
    pub up: Option<bool>,
    pub ipoib_mode: Option<IpoibMode>,
    pub ipoib_umcast: Option<bool>,
}

/// Something changed in the kernel; subscribers re-read what the event names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum HostEvent {
    RdmaAdded {
        name: String,
    },
    RdmaRemoved {
        name: String,
    },
    /// An RDMA device renamed (kernel uevent "move" or nldev RENAME).
    RdmaRenamed {
        old: String,
        new: String,
    },
    /// RDMA device attributes changed (uevent "change"; port state needs a poll).
    RdmaChanged {
        name: String,
    },
    NetdevAdded {
        name: String,
    },
    NetdevRemoved {
        name: String,
    },
    NetdevChanged {
        name: String,
    },
    NetdevRenamed {
        old: String,
        new: String,
    },
    /// An IPv4 or IPv6 address was added to or removed from a netdev (RTM_NEWADDR,
    /// RTM_DELADDR): the RoCE GIDs of the ports it carries follow its addresses (the
    /// kernel's `roce_gid_mgmt`), with no RDMA event of their own.
    NetdevAddressChanged {
        name: String,
    },
    /// A uverbs asynchronous event of a watched device's port (see [`Host::watch_port_events`]
    /// and `port_events`): its state, LIDs, SM, P_Keys or GIDs changed.
    RdmaPortEvent {
        name: String,
        port: u32,
        event: port_events::PortEventKind,
    },
    /// Events were lost (ENOBUFS on a netlink socket): re-enumerate everything.
    Overflow {
        source: String,
    },
}

/// Completes IPoIB attributes that sysfs lacks (children made over rtnetlink) with what
/// rtnetlink's link info says; values sysfs did provide are kept.
pub fn rtnl_fill_ipoib(
    attrs: &mut crate::model::IpoibAttrs,
    pkey: u16,
    mode: IpoibMode,
    umcast: bool,
    parent: Option<String>,
) {
    if attrs.pkey.is_err() {
        attrs.pkey = Ok(pkey);
    }
    if attrs.mode.is_err() {
        attrs.mode = Ok(mode);
    }
    if attrs.umcast.is_err() {
        attrs.umcast = Ok(umcast);
    }
    if attrs.parent.is_none() {
        attrs.parent = parent;
    }
}

/// A port whose counters [`Host::read_all_counters`] reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterPort {
    pub dev: String,
    /// The kernel's device index, which RDMA netlink names a device by.
    pub dev_index: u32,
    pub port: u32,
    /// The port's counter source when the engine has its traffic counters from the tick's
    /// poll: only its other counters are read (the PMA's besides data and packets, the
    /// driver's), without probing the source again, and the traffic fields may be left
    /// `Missing`. `None`: everything, as [`Host::read_counters`].
    pub polled: Option<crate::model::CounterSource>,
}

/// Everything the daemon reads from or does to the kernel and the filesystem.
///
/// The reads, events and files every part of the daemon needs are declared here. Each
/// settings area's reads and writes are a trait of their own beside that area's kernel code
/// ([`RoceHost`] in `roce.rs`, [`QosHost`] in `dcb/`, [`PortTypeHost`], [`SriovHost`]), with
/// the real host's implementation in the same file and the simulated host's in
/// `sim/<area>.rs`: a new operation of an area touches those two files.
///
/// Reads never fail as a whole because one attribute is bad: snapshots carry a per-field
/// result. Mutations return the kernel's errno as a typed [`HostError`].
#[async_trait]
pub trait Host: QosHost + SriovHost + PortTypeHost + RoceHost + Send + Sync + 'static {
    // ---- sysfs ------------------------------------------------------------------------------

    /// Names of the RDMA devices in `/sys/class/infiniband`, sorted.
    async fn rdma_device_names(&self) -> Result<Vec<String>, HostError>;
    /// One device with its ports, GIDs and P_Keys (without counters).
    async fn read_device(&self, name: &str) -> Result<DeviceSnapshot, HostError>;
    /// Every device; a device that vanishes while being read is left out.
    async fn read_devices(&self) -> Result<Vec<DeviceSnapshot>, HostError> {
        let mut out = Vec::new();
        for name in self.rdma_device_names().await? {
            match self.read_device(&name).await {
                Ok(d) => out.push(d),
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }
    /// A port's counters, from the best source the port has.
    async fn read_counters(&self, dev: &str, port: u32) -> Result<CounterSnapshot, HostError>;
    /// The counters of every port of `ports`, in their order, with what
    /// [`Host::read_counters`] gives each (but the traffic counters of a port with a
    /// `polled` source, which may be `Missing`); a host reads them in one trip (one blocking
    /// task for all, not one per port) and may take the driver's counters from RDMA netlink.
    async fn read_all_counters(
        &self,
        ports: Vec<CounterPort>,
    ) -> Vec<Result<CounterSnapshot, HostError>> {
        let mut out = Vec::with_capacity(ports.len());
        for p in &ports {
            out.push(self.read_counters(&p.dev, p.port).await);
        }
        out
    }
    /// Counter source and netdev of every port of a device.
    async fn port_sources(&self, dev: &str) -> Result<Vec<PortSource>, HostError>;
    /// A poller of port state and traffic counters that keeps its files open between polls.
    fn port_poller(&self) -> Box<dyn PortPoller>;
    /// Every netdev in `/sys/class/net`, sorted by name.
    async fn read_netdevs(&self) -> Result<Vec<NetdevSnapshot>, HostError>;
    /// The IPoIB netdevs only (ARPHRD_INFINIBAND), as [`Host::read_netdevs`] reads them.
    /// A host may read only `type` of the others (a real one does: a host with hundreds of
    /// RoCE netdevs read all their files for nothing).
    async fn read_ipoib_netdevs(&self) -> Result<Vec<NetdevSnapshot>, HostError> {
        let mut all = self.read_netdevs().await?;
        all.retain(|n| n.is_ipoib());
        Ok(all)
    }
    /// One netdev, with what rtnetlink adds for IPoIB children.
    async fn read_netdev(&self, name: &str) -> Result<NetdevSnapshot, HostError>;
    /// The IPv4 and IPv6 addresses of every netdev, or of the netdev `only` (an ifindex),
    /// by ifindex (RTM_GETADDR, what `ip address` lists), each netdev's in the kernel's
    /// order. A netdev without addresses is absent.
    async fn read_addresses(
        &self,
        only: Option<u32>,
    ) -> Result<std::collections::BTreeMap<u32, Vec<NetdevAddress>>, HostError>;
    /// Whether a kernel module is loaded (`/sys/module/<name>`).
    async fn module_loaded(&self, module: &str) -> Result<bool, HostError>;
    /// What rdma-core's `rdma_rename` reads in sysfs to name a device (its parent's onboard
    /// index, bus, PCI function, PF and VFs).
    async fn read_rename_sysfs(&self, dev: &str) -> Result<RenameSysfs, HostError>;

    // ---- RDMA netlink -----------------------------------------------------------------------

    async fn nl_devices(&self) -> Result<Vec<NlDevice>, HostError>;
    async fn nl_ports(&self) -> Result<Vec<NlPort>, HostError>;
    async fn nl_sys(&self) -> Result<NlSys, HostError>;
    /// A port's hw counters through STAT_GET (`rdma statistic show`), in kernel order.
    async fn nl_port_stats(
        &self,
        dev_index: u32,
        port: u32,
    ) -> Result<Vec<(String, u64)>, HostError>;
    async fn add_link(&self, link: &NewLink) -> Result<(), HostError>;
    async fn delete_link(&self, dev_index: u32) -> Result<(), HostError>;
    async fn rename_device(&self, dev_index: u32, new_name: &str) -> Result<(), HostError>;

    // ---- rtnetlink --------------------------------------------------------------------------

    async fn create_ipoib_child(&self, child: &NewIpoibChild) -> Result<(), HostError>;
    async fn change_netdev(&self, name: &str, change: &NetdevChange) -> Result<(), HostError>;
    async fn rename_netdev(&self, old: &str, new: &str) -> Result<(), HostError>;
    async fn delete_netdev(&self, name: &str) -> Result<(), HostError>;

    // ---- events -----------------------------------------------------------------------------

    /// Starts watching the kernel; events arrive on the returned channel until it is dropped.
    async fn subscribe(&self) -> Result<mpsc::UnboundedReceiver<HostEvent>, HostError>;
    /// Keeps the uverbs asynchronous events of the named devices' ports coming on the
    /// subscription as [`HostEvent::RdmaPortEvent`], for the devices the host can watch
    /// (see `port_events`: hardware whose driver lets go of a device's user contexts when
    /// it is removed, within a budget of descriptors), and stops watching devices not named.
    /// Returns the devices watched: their ports' state and LIDs need no reading every second.
    async fn watch_port_events(
        &self,
        devices: &std::collections::BTreeSet<String>,
    ) -> std::collections::BTreeSet<String>;

    // ---- files the daemon owns (under /etc) -------------------------------------------------

    /// Reads a file; `Ok(None)` when it does not exist. A file over
    /// [`files::MAX_READ_BYTES`] is refused unread with [`HostError::TooLarge`]: every file
    /// the daemon reads is a configuration file of a few KiB.
    async fn read_file(&self, path: &std::path::Path) -> Result<Option<Vec<u8>>, HostError>;
    /// Names of the files in a directory (every entry but directories), sorted by their bytes;
    /// `Ok(None)` when the directory does not exist. Drop-in directories (`limits.d`,
    /// `nfs.conf.d`) are read with it; each caller orders the names as its tool does.
    async fn list_dir(&self, path: &std::path::Path) -> Result<Option<Vec<String>>, HostError>;
    /// Removes a file; one that does not exist is not an error.
    async fn remove_file(&self, path: &std::path::Path) -> Result<(), HostError>;
    /// Tells udevd to re-read its rules (`udevadm control --reload`) when it runs (its control
    /// socket `/run/udev/control` exists); `Ok(false)` when no udevd runs.
    async fn reload_udev_rules(&self) -> Result<bool, HostError>;
    /// Replaces a file atomically: temp file in the same directory, fsync, rename, fsync dir.
    async fn write_file_atomic(
        &self,
        path: &std::path::Path,
        contents: &[u8],
    ) -> Result<(), HostError>;

    /// `dev`'s `port`'s umad device, opened (see [`umad`]): what the InfiniBand ping sends
    /// and receives MADs on. A port without one is [`HostError::Unsupported`].
    async fn open_umad(&self, dev: &str, port: u32) -> Result<std::os::fd::OwnedFd, HostError>;
    /// The InfiniBand ports with a umad device, as (device, port): where the ibping
    /// responder answers.
    async fn umad_ports(&self) -> Result<Vec<(String, u32)>, HostError>;
}
