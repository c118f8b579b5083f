//! The state document's types, as serde reads and writes them (YAML or JSON).
//!
//! Every struct refuses unknown keys, so a misspelt key is an error naming its path rather
//! than a setting silently left out. Optional fields are "leave as it is" when absent.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

// The types of the lists kept in modules of their own, so that `doc::*` names the whole document.
pub use super::host_setup::{Memlock, NfsRdma, SubnetManager};
pub use super::interfaces::{Infiniband, InterfaceEntry, InterfaceType, StateIpoibMode};
pub use super::ip_settings::{IpAddress, IpFamily};
pub use super::naming::{FixedName, IpoibName, Naming};
pub use super::part::EntryState;
pub use super::ports::PortEntry;
pub use super::roce::{RoceEntry, RoceVersion};
pub use super::soft_links::{SoftLinkEntry, SoftLinkKind};
pub use super::sriov_vfs::VfEntry;

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

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Responder {
    /// perftest's servers run, now and at every start (`/etc/rdma-manager/link-test.toml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

impl State {
    /// The host setup sections, as their part reads them.
    pub(super) fn host_setup(&self) -> super::host_setup::Sections<'_> {
        super::host_setup::Sections {
            modules: &self.modules,
            memlock: &self.memlock,
            nfs_rdma: &self.nfs_rdma,
            subnet_manager: &self.subnet_manager,
        }
    }
}
