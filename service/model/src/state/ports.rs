//! The document's `ports` list: the port type (`ib`, `eth`, `auto`) of VPI adapters' ports,
//! identity `device` and `port`. Its type, checks, difference with the host and steps.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::part::{check_port_entry, text, Area, ChangeOp, PartPlan, Phase};
use crate::port_type::PortType;
use crate::state_error::StateError;

/// A port's type (`ib`, `eth`, `auto`): mlx4 switches at once, mlx5 at the next boot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PortEntry {
    /// The kernel name, or the node GUID as sysfs prints it.
    pub device: String,
    pub port: u32,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<crate::port_type::PortType>,
}

/// One step of the `ports` list, with the arguments of its one-shot method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortStep {
    /// `Port.SetPortType`.
    SetType {
        device: String,
        port: u32,
        port_type: PortType,
    },
}

impl PortStep {
    /// The polkit area of the step's method.
    pub fn area(&self) -> Area {
        match self {
            PortStep::SetType { .. } => Area::Adapter,
        }
    }
}

/// The document's `ports` list, value by value and its identities once each.
pub(super) fn check(ports: &[PortEntry]) -> Result<(), StateError> {
    let mut seen = BTreeMap::new();
    for (i, e) in ports.iter().enumerate() {
        let p = format!("ports[{i}]");
        check_port_entry(&mut seen, &p, &e.device, e.port)?;
    }
    Ok(())
}

/// Port types: each listed port must be one whose driver has a port type (the host's
/// state lists only those).
pub(super) fn diff(
    current: &Option<Vec<PortEntry>>,
    wanted: &Option<Vec<PortEntry>>,
    plan: &mut PartPlan<PortStep>,
) -> Result<(), StateError> {
    let have: BTreeMap<(&str, u32), &PortEntry> = current
        .iter()
        .flatten()
        .map(|e| ((e.device.as_str(), e.port), e))
        .collect();
    for (i, e) in wanted.iter().flatten().enumerate() {
        let id = format!("{}/{}", e.device, e.port);
        let Some(now) = have.get(&(e.device.as_str(), e.port)) else {
            return Err(StateError::not_found(
                format!("ports[{i}]"),
                "port with a port type",
                id,
                " (only mlx4 ports, and mlx5 ports where mstconfig is installed, have one)",
            ));
        };
        let Some(ty) = e.kind else { continue };
        if now.kind == Some(ty) {
            continue;
        }
        let step = |port_type| PortStep::SetType {
            device: e.device.clone(),
            port: e.port,
            port_type,
        };
        plan.push(
            Phase::Ports,
            format!("ports[{id}].type"),
            ChangeOp::Set,
            (text(now.kind.map(|k| k.as_str())), ty.as_str().to_string()),
            step(ty),
            step(now.kind.unwrap_or(ty)),
        );
    }
    Ok(())
}
