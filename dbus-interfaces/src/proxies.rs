//! Client proxies of rdma-managerd's interfaces, for rdma-tui, tests and tools. They mirror
//! the XML in `dbus-interfaces/xml/`, which a test compares with the live service; `drift.rs`
//! compares them with that XML, member by member and signature by signature.

use std::collections::HashMap;

use zbus::proxy;
use zbus::zvariant::{OwnedObjectPath, OwnedValue};

use crate::types::{
    Gid, LeftChild, MovedChild, NamePreview, NameRule, Owner, PersistedChild, Pkey, SoftLink,
    StateStale,
};

/// One port's throughput at one tick: (port object, TX bytes/s, RX bytes/s, TX packets/s,
/// RX packets/s, flags).
pub type PortSample = (OwnedObjectPath, f64, f64, f64, f64, u8);
/// One recorded sample: (time µs since the epoch, TX bytes/s, RX bytes/s, TX packets/s,
/// RX packets/s, flags).
pub type HistorySample = (u64, f64, f64, f64, f64, u8);

/// Sample flags.
pub mod sample_flags {
    /// A 32-bit PMA counter saturated: the rate is a lower bound.
    pub const SATURATED: u8 = 1;
    /// No rate for this tick.
    pub const NO_DATA: u8 = 2;
    /// Coarse history only: the average covers fewer than 10 samples.
    pub const PARTIAL: u8 = 4;
}

#[proxy(
    interface = "org.rdmamanager.RdmaManager1",
    default_service = "org.rdmamanager.RdmaManager1",
    default_path = "/org/rdmamanager/RdmaManager1",
    gen_blocking = false
)]
pub trait Manager {
    fn add_soft_link(
        &self,
        name: &str,
        r#type: &str,
        netdev: &str,
    ) -> zbus::Result<OwnedObjectPath>;
    fn remove_soft_link(&self, name: &str) -> zbus::Result<()>;
    fn set_ipoib_name(&self, port_guid: &str, name: &str, apply_now: bool) -> zbus::Result<()>;
    fn remove_ipoib_name(&self, port_guid: &str) -> zbus::Result<()>;
    fn set_rdma_naming_policy(&self, policy: &str, apply_now: bool) -> zbus::Result<()>;
    fn set_rdma_fixed_name(&self, node_guid: &str, name: &str, apply_now: bool)
        -> zbus::Result<()>;
    fn remove_rdma_fixed_name(&self, node_guid: &str) -> zbus::Result<()>;
    fn preview_rdma_names(&self) -> zbus::Result<Vec<NamePreview>>;

    #[zbus(signal)]
    fn throughput_sampled(&self, time_us: u64, samples: Vec<PortSample>) -> zbus::Result<()>;

    #[zbus(property)]
    fn version(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn simulated(&self) -> zbus::Result<bool>;
    /// True while the daemon starts (its name is owned before it has read the host).
    #[zbus(property)]
    fn startup(&self) -> zbus::Result<bool>;
    #[zbus(property)]
    fn devices(&self) -> zbus::Result<Vec<OwnedObjectPath>>;
    #[zbus(property)]
    fn ipoib_interfaces(&self) -> zbus::Result<Vec<OwnedObjectPath>>;
    #[zbus(property, name = "SampleIntervalUs")]
    fn sample_interval_us(&self) -> zbus::Result<u64>;
    #[zbus(property)]
    fn history_length(&self) -> zbus::Result<u32>;
    /// Averages kept per port by GetThroughputHistoryCoarse.
    #[zbus(property)]
    fn coarse_history_length(&self) -> zbus::Result<u32>;
    /// The period one coarse average covers, in microseconds (10 sampling periods).
    #[zbus(property, name = "CoarseIntervalUs")]
    fn coarse_interval_us(&self) -> zbus::Result<u64>;
    #[zbus(property)]
    fn soft_links(&self) -> zbus::Result<Vec<SoftLink>>;
    /// Unusable files under /etc/rdma-manager, with the reason.
    #[zbus(property)]
    fn config_errors(&self) -> zbus::Result<std::collections::HashMap<String, String>>;
    /// IPoIB naming rules (by port GUID).
    #[zbus(property)]
    fn ipoib_names(&self) -> zbus::Result<Vec<NameRule>>;
    #[zbus(property)]
    fn rdma_naming_policy(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn rdma_naming_policy_source(&self) -> zbus::Result<String>;
    /// Fixed RDMA device names (by node GUID).
    #[zbus(property)]
    fn rdma_fixed_names(&self) -> zbus::Result<Vec<NameRule>>;
    #[zbus(property)]
    fn state_stale(&self) -> zbus::Result<StateStale>;
}

#[proxy(
    interface = "org.rdmamanager.RdmaManager1.Device",
    default_service = "org.rdmamanager.RdmaManager1",
    gen_blocking = false
)]
pub trait Device {
    /// Renames the device now (`rdma dev set NAME name NEW`).
    fn rename(&self, new_name: &str) -> zbus::Result<()>;
    #[zbus(property)]
    fn index(&self) -> zbus::Result<u32>;
    #[zbus(property)]
    fn name(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn kind(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn node_type(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn protocol(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn node_guid(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn sys_image_guid(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn fw_version(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn hca_type(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn hw_rev(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn board_id(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn node_desc(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn pci_address(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn parent_netdev(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn netdevs(&self) -> zbus::Result<Vec<String>>;
    #[zbus(property)]
    fn ports(&self) -> zbus::Result<Vec<OwnedObjectPath>>;
    #[zbus(property)]
    fn unreadable(&self) -> zbus::Result<HashMap<String, String>>;
}

#[proxy(
    interface = "org.rdmamanager.RdmaManager1.Port",
    default_service = "org.rdmamanager.RdmaManager1",
    gen_blocking = false
)]
pub trait Port {
    fn get_throughput_history(&self) -> zbus::Result<Vec<HistorySample>>;
    /// One average of 10 sampling periods each, for up to an hour; flag 4: partial.
    fn get_throughput_history_coarse(&self) -> zbus::Result<Vec<HistorySample>>;
    fn get_counters(&self) -> zbus::Result<(String, bool, HashMap<String, u64>)>;
    fn set_roce_mode(&self, mode: &str) -> zbus::Result<()>;
    fn set_roce_tos(&self, tos: u8) -> zbus::Result<()>;

    #[zbus(property)]
    fn device(&self) -> zbus::Result<OwnedObjectPath>;
    #[zbus(property)]
    fn device_name(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn number(&self) -> zbus::Result<u32>;
    #[zbus(property)]
    fn state(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn phys_state(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn link_layer(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn rate(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn rate_gbps(&self) -> zbus::Result<f64>;
    #[zbus(property)]
    fn lid(&self) -> zbus::Result<u32>;
    #[zbus(property)]
    fn sm_lid(&self) -> zbus::Result<u32>;
    #[zbus(property)]
    fn lmc(&self) -> zbus::Result<u8>;
    #[zbus(property)]
    fn sm_sl(&self) -> zbus::Result<u8>;
    #[zbus(property)]
    fn capability_mask(&self) -> zbus::Result<u32>;
    #[zbus(property)]
    fn port_guid(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn gids(&self) -> zbus::Result<Vec<Gid>>;
    #[zbus(property)]
    fn pkeys(&self) -> zbus::Result<Vec<Pkey>>;
    #[zbus(property)]
    fn netdev(&self) -> zbus::Result<String>;
    /// A NetworkManager profile's when one configures the netdev, else empty.
    #[zbus(property)]
    fn netdev_owner(&self) -> zbus::Result<Owner>;
    #[zbus(property)]
    fn counter_source(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn unreadable(&self) -> zbus::Result<HashMap<String, String>>;
    #[zbus(property)]
    fn roce_mode(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn roce_tos(&self) -> zbus::Result<u8>;
    #[zbus(property)]
    fn roce_modes(&self) -> zbus::Result<Vec<String>>;
    #[zbus(property)]
    fn roce_persisted(&self) -> zbus::Result<bool>;
}

#[proxy(
    interface = "org.rdmamanager.RdmaManager1.Ipoib",
    default_service = "org.rdmamanager.RdmaManager1",
    gen_blocking = false
)]
pub trait Ipoib {
    /// Creates a P_Key child of this port interface; settings: mode (s), mtu (u), umcast (b).
    fn create_child(
        &self,
        pkey: u16,
        name: &str,
        settings: HashMap<&str, zbus::zvariant::Value<'_>>,
    ) -> zbus::Result<OwnedObjectPath>;
    /// Deletes this P_Key child and forgets it.
    fn delete(&self) -> zbus::Result<()>;
    fn set_mode(&self, mode: &str) -> zbus::Result<()>;
    fn set_mtu(&self, mtu: u32) -> zbus::Result<()>;
    fn set_umcast(&self, umcast: bool) -> zbus::Result<()>;

    #[zbus(property)]
    fn name(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn ifindex(&self) -> zbus::Result<u32>;
    #[zbus(property)]
    fn parent(&self) -> zbus::Result<OwnedObjectPath>;
    #[zbus(property)]
    fn parent_name(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn device(&self) -> zbus::Result<OwnedObjectPath>;
    #[zbus(property)]
    fn port(&self) -> zbus::Result<OwnedObjectPath>;
    #[zbus(property)]
    fn pkey(&self) -> zbus::Result<u16>;
    #[zbus(property)]
    fn mode(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn umcast(&self) -> zbus::Result<bool>;
    #[zbus(property)]
    fn mtu(&self) -> zbus::Result<u32>;
    #[zbus(property)]
    fn hw_address(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn port_guid(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn oper_state(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn connected_mode_supported(&self) -> zbus::Result<bool>;
    #[zbus(property)]
    fn children(&self) -> zbus::Result<Vec<OwnedObjectPath>>;
    #[zbus(property)]
    fn unreadable(&self) -> zbus::Result<HashMap<String, String>>;
    #[zbus(property)]
    fn owner(&self) -> zbus::Result<Owner>;
    /// Whether ipoib.toml remembers this interface.
    #[zbus(property)]
    fn persisted(&self) -> zbus::Result<bool>;
    /// The remembered settings (mode, mtu, umcast), as text.
    #[zbus(property)]
    fn persisted_settings(&self) -> zbus::Result<HashMap<String, String>>;
    /// On a port's own interface: the remembered children.
    #[zbus(property)]
    fn persisted_children(&self) -> zbus::Result<Vec<PersistedChild>>;
}

pub use crate::types::HostStep;
use crate::types::{ManagedLimits, RdmaModule, SubnetManager, UnitState};

/// The host's setup (`/org/rdmamanager/RdmaManager1/Host`): the kernel modules rdma-core
/// loads, the pinned-memory limits of group rdma, NFS over RDMA, and the subnet manager.
/// Every method needs the polkit action `org.rdmamanager.rdmamanager1.manage-host`.
#[proxy(
    interface = "org.rdmamanager.RdmaManager1.Host",
    default_service = "org.rdmamanager.RdmaManager1",
    default_path = "/org/rdmamanager/RdmaManager1/Host",
    gen_blocking = false
)]
pub trait HostSetup {
    /// Enables or disables `module` in `/etc/rdma/modules/<set>.conf`.
    fn set_module_enabled(&self, set: &str, module: &str, enabled: bool) -> zbus::Result<()>;
    /// Restarts `rdma-load-modules@<set>.service`.
    fn apply_modules(&self, set: &str) -> zbus::Result<Vec<HostStep>>;
    /// Writes the daemon's limits.d file ("unlimited" or KiB, soft <= hard); returns notes.
    fn set_memlock_limits(&self, soft: &str, hard: &str) -> zbus::Result<Vec<String>>;
    /// Removes the daemon's limits.d file.
    fn reset_memlock_limits(&self) -> zbus::Result<()>;
    /// Enables (port 0: 20049) or disables NFS over RDMA; returns the steps.
    fn set_nfs_rdma(&self, enabled: bool, port: u16) -> zbus::Result<Vec<HostStep>>;
    fn start_subnet_manager(&self) -> zbus::Result<()>;
    fn stop_subnet_manager(&self) -> zbus::Result<()>;
    fn set_subnet_manager_enabled(&self, enabled: bool) -> zbus::Result<()>;

    #[zbus(property)]
    fn modules(&self) -> zbus::Result<Vec<RdmaModule>>;
    /// ActiveState of `rdma-load-modules@rdma.service` ("" when systemd cannot be asked).
    #[zbus(property)]
    fn modules_unit(&self) -> zbus::Result<String>;
    /// "unlimited", KiB as decimal text, or "" when no limits file sets it.
    #[zbus(property)]
    fn memlock_soft(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn memlock_hard(&self) -> zbus::Result<String>;
    /// "soft"/"hard" -> "file:line".
    #[zbus(property)]
    fn memlock_origin(&self) -> zbus::Result<HashMap<String, String>>;
    #[zbus(property)]
    fn memlock_managed(&self) -> zbus::Result<ManagedLimits>;
    #[zbus(property)]
    fn memlock_notes(&self) -> zbus::Result<Vec<String>>;
    #[zbus(property)]
    fn nfs_rdma(&self) -> zbus::Result<bool>;
    /// 0 when disabled.
    #[zbus(property)]
    fn nfs_rdma_port(&self) -> zbus::Result<u16>;
    /// "rdma"/"rdma-port" -> "file:line".
    #[zbus(property)]
    fn nfs_rdma_origin(&self) -> zbus::Result<HashMap<String, String>>;
    #[zbus(property)]
    fn nfs_notes(&self) -> zbus::Result<Vec<String>>;
    /// nfs-server.service.
    #[zbus(property)]
    fn nfs_server(&self) -> zbus::Result<UnitState>;
    #[zbus(property)]
    fn firewalld(&self) -> zbus::Result<bool>;
    /// opensm.service.
    #[zbus(property)]
    fn opensm(&self) -> zbus::Result<UnitState>;
    /// One per InfiniBand port.
    #[zbus(property)]
    fn subnet_managers(&self) -> zbus::Result<Vec<SubnetManager>>;
}

/// `org.rdmamanager.RdmaManager1.Network` at the root: IP settings of RDMA netdevs through
/// NetworkManager, and the changes waiting for confirmation.
#[proxy(
    interface = "org.rdmamanager.RdmaManager1.Network",
    default_service = "org.rdmamanager.RdmaManager1",
    default_path = "/org/rdmamanager/RdmaManager1",
    gen_blocking = false
)]
pub trait Network {
    /// nmcli's keys of the interface's profile plus kind, owner, profile, uuid, keyfile,
    /// device-state, device-state-reason, managed, active and addresses.
    fn get_ip_settings(&self, interface: &str) -> zbus::Result<HashMap<String, OwnedValue>>;
    /// Changes IP settings (nmcli's keys); returns the pending change.
    fn set_ip_settings(
        &self,
        interface: &str,
        settings: HashMap<&str, zbus::zvariant::Value<'_>>,
        timeout: u32,
    ) -> zbus::Result<OwnedObjectPath>;
    /// `nmcli connection up`; returns the pending change.
    fn activate(&self, interface: &str, timeout: u32) -> zbus::Result<OwnedObjectPath>;
    /// `nmcli connection down`; returns the pending change.
    fn deactivate(&self, interface: &str, timeout: u32) -> zbus::Result<OwnedObjectPath>;
    /// Moves the P_Key children ipoib.toml remembers into NetworkManager profiles; returns
    /// the pending change, the children moved and those left.
    fn move_to_network_manager(
        &self,
        timeout: u32,
    ) -> zbus::Result<(OwnedObjectPath, Vec<MovedChild>, Vec<LeftChild>)>;
    #[zbus(property)]
    fn pending_changes(&self) -> zbus::Result<Vec<OwnedObjectPath>>;
    /// A pending change ended: confirmed, rolled-back or timed-out.
    #[zbus(signal)]
    fn change_ended(&self, change: OwnedObjectPath, outcome: String) -> zbus::Result<()>;
}

/// `org.rdmamanager.RdmaManager1.PendingChange` at `Change/<n>`.
#[proxy(
    interface = "org.rdmamanager.RdmaManager1.PendingChange",
    default_service = "org.rdmamanager.RdmaManager1",
    gen_blocking = false
)]
pub trait PendingChange {
    fn confirm(&self) -> zbus::Result<()>;
    fn roll_back(&self) -> zbus::Result<()>;
    fn extend(&self, seconds: u32) -> zbus::Result<()>;
    #[zbus(property)]
    fn interface(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn description(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn checkpoint(&self) -> zbus::Result<String>;
    /// Microseconds since the Unix epoch.
    #[zbus(property)]
    fn deadline(&self) -> zbus::Result<u64>;
}
