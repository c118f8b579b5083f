//! Which IP manager configures the host's interfaces, and the clients of those the daemon
//! routes IP settings through besides NetworkManager (`nm/`).
//!
//! - NetworkManager: `nm/` and `engine/nm_change.rs` (profiles inside a checkpoint).
//! - systemd-networkd: [`networkd_file`] (a `.network` file of the daemon's own per interface
//!   in /etc/systemd/network) and [`networkd`] (its D-Bus API: Reload, Reconfigure, which file
//!   a link runs with).
//! - netplan: [`netplan`] (its D-Bus API: a configuration object, `Set` into the daemon's
//!   file /etc/netplan/90-rdma-manager.yaml, `Try` with netplan's own rollback) and
//!   [`netplan_yaml`] (the interface's definition read and written). Where /etc/netplan holds
//!   configuration but netplan's service cannot be reached, changes are refused with what the
//!   user can do.
//! - none: addresses are still shown (from the kernel); changes are refused with what the
//!   user can do.

pub mod netplan;
pub mod netplan_yaml;
pub mod networkd;
pub mod networkd_file;

/// The IP manager found on the host, in the order the daemon looks for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpManager {
    NetworkManager,
    /// Configuration under /etc/netplan (netplan renders it for networkd or NetworkManager
    /// at boot and on `netplan apply`); `reachable`: its D-Bus service runs or can be
    /// started, through which the daemon changes it.
    Netplan {
        reachable: bool,
    },
    Networkd,
    None,
}

impl IpManager {
    /// The name `GetIpSettings` gives under `manager`.
    pub fn as_str(self) -> &'static str {
        match self {
            IpManager::NetworkManager => "networkmanager",
            IpManager::Netplan { .. } => "netplan",
            IpManager::Networkd => "systemd-networkd",
            IpManager::None => "none",
        }
    }

    /// What the user can do about IP settings where the daemon does not change them.
    pub fn advice(self) -> &'static str {
        match self {
            IpManager::NetworkManager
            | IpManager::Networkd
            | IpManager::Netplan { reachable: true } => "",
            IpManager::Netplan { reachable: false } => {
                "netplan configures this host but its D-Bus service (io.netplan.Netplan, \
                 netplan.io's netplan-dbus) cannot be reached: install or start it, or give \
                 the interface its addresses in a file under /etc/netplan and run netplan try \
                 (or netplan apply)"
            }
            IpManager::None => {
                "no IP manager runs (neither NetworkManager nor systemd-networkd is on the \
                 system bus): start one of them (systemctl start NetworkManager, or \
                 systemd-networkd), or set addresses by hand with ip address add, which do \
                 not survive a reboot"
            }
        }
    }
}

/// Where netplan keeps its configuration.
pub const NETPLAN_DIR: &str = "/etc/netplan";

/// Whether `names` (a directory listing of /etc/netplan) holds netplan configuration.
pub fn is_netplan_config(names: &[String]) -> bool {
    names
        .iter()
        .any(|n| n.ends_with(".yaml") && !n.starts_with('.'))
}

/// The addresses `ip` puts on its link: those of the families not disabled.
pub fn static_addresses(ip: &crate::nm::keys::IpSettings) -> Vec<crate::model::NetdevAddress> {
    [&ip.ipv4, &ip.ipv6]
        .into_iter()
        .filter(|c| c.method != crate::nm::profile::IpMethod::Disabled)
        .flat_map(|c| c.addresses.iter())
        .map(|(ip, prefix)| crate::model::NetdevAddress {
            ip: *ip,
            prefix: *prefix,
        })
        .collect()
}
