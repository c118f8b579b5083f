//! D-Bus names, errors and polkit action ids shared by rdma-managerd and its clients, the
//! [`ibstat`] renderer both print with, and the [`json`] document both print.

mod error;
pub mod ibstat;
pub mod json;
pub mod proxies;
pub mod records;
pub mod text;
pub mod types;

#[cfg(test)]
#[path = "../codegen/mod.rs"]
mod codegen;

pub use error::Error;
pub use proxies::{
    DeviceProxy, HostSetupProxy, IpoibProxy, ManagerProxy, NetworkProxy, PendingChangeProxy,
    PortProxy,
};

/// The well-known bus name and interface prefix.
pub const BUS_NAME: &str = "org.rdmamanager.RdmaManager1";
/// The root object (ObjectManager).
pub const ROOT_PATH: &str = "/org/rdmamanager/RdmaManager1";
/// The Host object (`org.rdmamanager.RdmaManager1.Host`): modules, memlock limits, NFS over
/// RDMA, subnet manager.
pub const HOST_PATH: &str = "/org/rdmamanager/RdmaManager1/Host";
/// The daemon's direct socket on the system bus: GetManagedObjects peer to peer, read only
/// (docs/DBUS-API.md, "The direct socket"); its directory is the unit's `RuntimeDirectory=`.
pub const DIRECT_SOCKET_PATH: &str = "/run/rdma-manager/direct";
/// Prefix of every D-Bus error the service returns (`<prefix>.InvalidArgument`, ...).
pub const ERROR_PREFIX: &str = "org.rdmamanager.RdmaManager1.Error";

/// The words `Port.State` takes, in the order of their InfiniBand ids (1 to 5).
pub const PORT_STATES: [&str; 5] = ["DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"];

/// The words `Port.PhysState` takes, in the order of their ids (1 to 7).
pub const PORT_PHYS_STATES: [&str; 7] = [
    "Sleep",
    "Polling",
    "Disabled",
    "PortConfigurationTraining",
    "LinkUp",
    "LinkErrorRecovery",
    "Phy Test",
];
/// Prefix of the polkit action ids (`<prefix>.manage-links`, ...).
pub const POLKIT_PREFIX: &str = "org.rdmamanager.rdmamanager1";

/// polkit actions, one per area. Every mutating method names the one it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Soft RDMA links (rxe, siw).
    ManageLinks,
    /// IPoIB interfaces and P_Key children.
    ManageIpoib,
    /// Persistent names of netdevs and RDMA devices, and renames.
    ManageNaming,
    /// RoCE default mode and ToS.
    ManageRoce,
    /// Host setup: modules, memlock limits, NFS over RDMA, subnet manager.
    ManageHost,
    /// IP settings of RDMA netdevs through NetworkManager, bringing them up and down, and
    /// confirming or rolling back such changes.
    ManageIp,
    /// Running a link test from a port (it spends the link's bandwidth) and enabling or
    /// disabling the link-test responder. Reading results is open.
    TestLink,
    /// Adapter settings that can cut a port off or wait for a reboot: the port type
    /// (InfiniBand or Ethernet), a RoCE port's QoS profile (trust, PFC, ETS, ECN) and SR-IOV
    /// VF GUIDs.
    ManageAdapter,
}

impl Action {
    pub const ALL: [Action; 8] = [
        Action::ManageLinks,
        Action::ManageIpoib,
        Action::ManageNaming,
        Action::ManageRoce,
        Action::ManageHost,
        Action::ManageIp,
        Action::TestLink,
        Action::ManageAdapter,
    ];

    /// The polkit action id (`org.rdmamanager.rdmamanager1.manage-links`, ...).
    pub fn id(self) -> &'static str {
        match self {
            Action::ManageLinks => "org.rdmamanager.rdmamanager1.manage-links",
            Action::ManageIpoib => "org.rdmamanager.rdmamanager1.manage-ipoib",
            Action::ManageNaming => "org.rdmamanager.rdmamanager1.manage-naming",
            Action::ManageRoce => "org.rdmamanager.rdmamanager1.manage-roce",
            Action::ManageHost => "org.rdmamanager.rdmamanager1.manage-host",
            Action::ManageIp => "org.rdmamanager.rdmamanager1.manage-ip",
            Action::TestLink => "org.rdmamanager.rdmamanager1.test-link",
            Action::ManageAdapter => "org.rdmamanager.rdmamanager1.manage-adapter",
        }
    }
}

/// Object path of an RDMA device, by its kernel index (which survives a rename).
pub fn device_path(index: u32) -> String {
    format!("{ROOT_PATH}/Device/{index}")
}

/// Object path of a port of a device.
pub fn port_path(index: u32, port: u32) -> String {
    format!("{}/Port/{port}", device_path(index))
}

/// Object path of a change made through NetworkManager that waits for confirmation.
pub fn change_path(id: u32) -> String {
    format!("{ROOT_PATH}/Change/{id}")
}

/// The interface at the root for IP settings through NetworkManager.
pub const NETWORK_INTERFACE: &str = "org.rdmamanager.RdmaManager1.Network";
/// The interface of a change waiting for confirmation.
pub const PENDING_CHANGE_INTERFACE: &str = "org.rdmamanager.RdmaManager1.PendingChange";

/// Object path of an IPoIB interface, by ifindex.
pub fn ipoib_path(ifindex: u32) -> String {
    format!("{ROOT_PATH}/Ipoib/{ifindex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_ids_share_the_prefix() {
        for a in Action::ALL {
            assert!(a.id().starts_with(POLKIT_PREFIX), "{a:?}");
        }
    }

    #[test]
    fn paths() {
        assert_eq!(device_path(3), "/org/rdmamanager/RdmaManager1/Device/3");
        assert_eq!(
            port_path(3, 1),
            "/org/rdmamanager/RdmaManager1/Device/3/Port/1"
        );
        assert_eq!(ipoib_path(12), "/org/rdmamanager/RdmaManager1/Ipoib/12");
    }
}
