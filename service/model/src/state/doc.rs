//! The state document's types, as serde reads and writes them (YAML or JSON).
//!
//! Every struct refuses unknown keys, so a misspelt key is an error naming its path rather
//! than a setting silently left out. Optional fields are "leave as it is" when absent.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

// The types of the lists kept in modules of their own, so that `doc::*` names the whole document.
pub use super::host_setup::{Memlock, NfsRdma, SubnetManager};
pub use super::naming::{FixedName, IpoibName, Naming};
pub use super::ports::PortEntry;
pub use super::roce::{RoceEntry, RoceVersion};
pub use super::soft_links::{SoftLinkEntry, SoftLinkKind};
pub use super::sriov_vfs::VfEntry;
use crate::ipoib::IpoibMode;

/// A whole host's RDMA configuration, or the part of it a document speaks of.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct State {
    /// Soft RDMA links (rxe, siw); identity: `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soft_links: Option<Vec<SoftLinkEntry>>,
    /// RoCE settings per port; identity: `device` and `port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roce: Option<Vec<RoceEntry>>,
    /// IPoIB interfaces and P_Key children; identity: `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interfaces: Option<Vec<InterfaceEntry>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub naming: Option<Naming>,
    /// rdma-core's module lists: set (`/etc/rdma/modules/<set>.conf`) to module to enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modules: Option<BTreeMap<String, BTreeMap<String, bool>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memlock: Option<Memlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nfs_rdma: Option<NfsRdma>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_manager: Option<SubnetManager>,
    /// The link-test responder (`SetLinkResponder`), which peers test against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responder: Option<Responder>,
    /// What a healthy node looks like: checked by `CheckHealth` (`rdma-cli health`), never
    /// applied, so it takes no part in a difference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<crate::health::Health>,
    /// Port types of VPI adapters' ports; identity: `device` and `port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<PortEntry>>,
    /// Node and port GUIDs of SR-IOV VFs; identity: `device` (the PF) and `vf`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sriov_vfs: Option<Vec<VfEntry>>,
}

/// Whether a list entry should exist. Absent from the document means `up`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntryState {
    Up,
    Absent,
}

/// The only interface type the document knows; nmstate's spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InterfaceType {
    Infiniband,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct InterfaceEntry {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: InterfaceType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<EntryState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infiniband: Option<Infiniband>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4: Option<IpFamily>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv6: Option<IpFamily>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Infiniband {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<StateIpoibMode>,
    /// rdma-manager's key: the `umcast` flag (nmstate has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub umcast: Option<bool>,
    /// The parent of a P_Key child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_iface: Option<String>,
    /// A P_Key child's P_Key as nmstate writes it: a lower-case hex string, `"0x8002"`
    /// (an integer is read into that form).
    #[serde(
        default,
        deserialize_with = "super::forms::pkey",
        skip_serializing_if = "Option::is_none"
    )]
    pub pkey: Option<String>,
}

/// IPoIB's transport mode as the document spells it (nmstate's `datagram`/`connected`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StateIpoibMode {
    Datagram,
    Connected,
}

impl From<StateIpoibMode> for IpoibMode {
    fn from(m: StateIpoibMode) -> IpoibMode {
        match m {
            StateIpoibMode::Datagram => IpoibMode::Datagram,
            StateIpoibMode::Connected => IpoibMode::Connected,
        }
    }
}

impl From<IpoibMode> for StateIpoibMode {
    fn from(m: IpoibMode) -> StateIpoibMode {
        match m {
            IpoibMode::Datagram => StateIpoibMode::Datagram,
            IpoibMode::Connected => StateIpoibMode::Connected,
        }
    }
}

/// One address family's IP settings, in nmstate's form plus `gateway`, `dns` and
/// `dns-search` (which nmstate keeps in its routes and dns-resolver sections).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct IpFamily {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dhcp: Option<bool>,
    /// IPv6 only: stateless autoconfiguration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoconf: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<Vec<IpAddress>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_search: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct IpAddress {
    pub ip: String,
    pub prefix_length: u8,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Responder {
    /// perftest's servers run, now and at every start (`/etc/rdma-manager/link-test.toml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}
