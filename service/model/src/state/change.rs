//! What a difference between two states turns into: steps the daemon runs through the same
//! engine jobs as its one-shot methods, each paired with the step that undoes it, so that a
//! failed or unconfirmed apply can be rolled back in reverse order.

use super::part::{Area, ChangeOp};

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

/// One engine job, with the arguments its D-Bus method takes: each part of the document has
/// its steps in its own module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The `soft-links` list's.
    Link(super::soft_links::LinkStep),
    /// The `roce` list's.
    Roce(super::roce::RoceStep),
    /// The `naming` section's.
    Naming(super::naming::NamingStep),
    /// The host setup sections' (`modules`, `memlock`, `nfs-rdma`, `subnet-manager`).
    Setup(super::host_setup::SetupStep),
    /// The `responder` section's: `SetLinkResponder`.
    SetLinkResponder { enabled: bool },
    /// The `interfaces` list's.
    Interface(super::interfaces::InterfaceStep),
    /// The `ports` list's.
    Port(super::ports::PortStep),
    /// The `sriov-vfs` list's.
    Vf(super::sriov_vfs::VfStep),
}

impl Step {
    /// The polkit area of the step's method.
    pub fn area(&self) -> Area {
        match self {
            Step::Link(s) => s.area(),
            Step::Roce(s) => s.area(),
            Step::Naming(s) => s.area(),
            Step::Setup(s) => s.area(),
            Step::SetLinkResponder { .. } => Area::LinkTest,
            Step::Interface(s) => s.area(),
            Step::Port(s) => s.area(),
            Step::Vf(s) => s.area(),
        }
    }
}
