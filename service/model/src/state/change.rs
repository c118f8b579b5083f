//! What a difference between two states turns into: steps the daemon runs through the same
//! engine jobs as its one-shot methods, each paired with the step that undoes it, so that a
//! failed or unconfirmed apply can be rolled back in reverse order.

use std::collections::BTreeMap;

use serde::Serialize;

use super::doc::StateIpoibMode;

/// One setting that differs, as `DiffState` reports it: `(path, op, current, wanted, action)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The setting's key path: `soft-links[rxe0]`, `roce[mlx5_0/1].tos`, `interfaces[ib0].mtu`.
    pub path: String,
    pub op: ChangeOp,
    /// The value now and the value wanted, as text; empty when there is none.
    pub current: String,
    pub wanted: String,
    /// What the daemon runs.
    pub step: Step,
    /// What puts the setting back as it was.
    pub undo: Step,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeOp {
    Add,
    Remove,
    Set,
}

impl ChangeOp {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeOp::Add => "add",
            ChangeOp::Remove => "remove",
            ChangeOp::Set => "set",
        }
    }
}

/// The polkit area a step belongs to; the daemon maps it to its action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Area {
    Links,
    Roce,
    Naming,
    Host,
    Ipoib,
    Ip,
    /// Link tests and their responder.
    LinkTest,
    /// Adapter settings: port types, RoCE QoS profiles, SR-IOV VF GUIDs.
    Adapter,
}

/// One engine job, with the arguments its D-Bus method takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The `soft-links` list's steps.
    Link(super::soft_links::LinkStep),
    /// The `naming` section's steps.
    Naming(super::naming::NamingStep),
    /// The host setup sections' steps.
    Setup(super::host_setup::SetupStep),
    /// The `roce` list's steps.
    Roce(super::roce::RoceStep),
    /// The `ports` list's steps.
    Port(super::ports::PortStep),
    /// The `sriov-vfs` list's steps.
    Vf(super::sriov_vfs::VfStep),
    SetLinkResponder {
        enabled: bool,
    },
    CreateChild {
        parent: String,
        pkey: u16,
        name: String,
    },
    DeleteChild {
        name: String,
    },
    SetIpoibMode {
        name: String,
        mode: StateIpoibMode,
    },
    SetIpoibMtu {
        name: String,
        mtu: u32,
    },
    SetIpoibUmcast {
        name: String,
        umcast: bool,
    },
    /// nmcli keys (`ipv4.method`, `ipv4.addresses`, ...) to their values, lists joined by
    /// commas as nmcli prints them.
    SetIp {
        name: String,
        keys: BTreeMap<String, String>,
    },
}

impl Step {
    pub fn area(&self) -> Area {
        match self {
            Step::Link(s) => s.area(),
            Step::Roce(s) => s.area(),
            Step::Naming(s) => s.area(),
            Step::Setup(s) => s.area(),
            Step::CreateChild { .. }
            | Step::DeleteChild { .. }
            | Step::SetIpoibMode { .. }
            | Step::SetIpoibMtu { .. }
            | Step::SetIpoibUmcast { .. } => Area::Ipoib,
            Step::SetIp { .. } => Area::Ip,
            Step::SetLinkResponder { .. } => Area::LinkTest,
            Step::Port(s) => s.area(),
            Step::Vf(s) => s.area(),
        }
    }
}
