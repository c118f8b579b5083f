//! The document's `roce` list: each RoCE port's rdma_cm defaults (`mode`, `tos`) and its QoS
//! profile (`qos`), identity `device` and `port`. Its type, its checks, its difference with
//! the host and the steps that make it, in one place: a new RoCE port setting is a field of
//! [`RoceEntry`], its check, its change in [`diff`] and its [`RoceStep`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::part::{check_port_entry, text, Area, ChangeOp, PartPlan, Phase};
use super::soft_links::LinkNames;
use crate::qos::QosProfile;
use crate::state_error::StateError;

/// The RoCE version of a port's default GID type for rdma_cm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RoceVersion {
    V1,
    V2,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RoceEntry {
    /// The kernel name, or the node GUID as sysfs prints it (`0002:c903:0031:7f40`).
    pub device: String,
    pub port: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<RoceVersion>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tos: Option<u8>,
    /// The port's QoS profile (lossless RoCE: trust, PFC, ETS, DSCP map, traffic class,
    /// ECN), as `SetQosProfile` takes it; only on ports whose netdev has DCB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<crate::qos::QosProfile>,
}

/// One step of the `roce` list, with the arguments of its one-shot method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoceStep {
    /// `Port.SetRoceMode`.
    SetMode {
        device: String,
        port: u32,
        mode: RoceVersion,
    },
    /// `Port.SetRoceTos`.
    SetTos { device: String, port: u32, tos: u8 },
    /// `Port.SetQosProfile`.
    SetQosProfile {
        device: String,
        port: u32,
        profile: QosProfile,
    },
}

impl RoceStep {
    /// The polkit area of the step's method.
    pub fn area(&self) -> Area {
        match self {
            RoceStep::SetMode { .. } | RoceStep::SetTos { .. } => Area::Roce,
            RoceStep::SetQosProfile { .. } => Area::Adapter,
        }
    }
}

/// The document's `roce` list, value by value and its identities once each.
pub(super) fn check(roce: &[RoceEntry]) -> Result<(), StateError> {
    let mut seen = BTreeMap::new();
    for (i, e) in roce.iter().enumerate() {
        let p = format!("roce[{i}]");
        check_port_entry(&mut seen, &p, &e.device, e.port)?;
        if let Some(q) = &e.qos {
            q.check()
                .map_err(|err| StateError::invalid(format!("{p}.qos"), err.0))?;
        }
    }
    Ok(())
}

fn roce_text(m: RoceVersion) -> &'static str {
    match m {
        RoceVersion::V1 => "v1",
        RoceVersion::V2 => "v2",
    }
}

/// The changes of the `roce` list: each entry's port must be a RoCE port of the host, or the
/// port of a soft link the document makes.
pub(super) fn diff(
    current: &Option<Vec<RoceEntry>>,
    wanted: &Option<Vec<RoceEntry>>,
    links: &LinkNames,
    plan: &mut PartPlan<RoceStep>,
) -> Result<(), StateError> {
    let have: BTreeMap<(&str, u32), &RoceEntry> = current
        .iter()
        .flatten()
        .map(|e| ((e.device.as_str(), e.port), e))
        .collect();
    let mut seen = BTreeMap::new();
    for (i, e) in wanted.iter().flatten().enumerate() {
        let id = format!("{}/{}", e.device, e.port);
        if let Some(first) = seen.insert(id.clone(), i) {
            return Err(StateError::contradiction(
                format!("roce[{i}]"),
                format!("port {id} is listed twice (also at roce[{first}])"),
            ));
        }
        if links.removed.contains(&e.device) {
            return Err(StateError::contradiction(
                format!("roce[{i}].device"),
                format!(
                    "the soft link {} is removed by this document (soft-links), and its port \
                     with it",
                    e.device
                ),
            ));
        }
        let now = match have.get(&(e.device.as_str(), e.port)) {
            // A soft link made (or made again) by this document has one port, whose settings
            // are not known until it exists.
            _ if links.created.contains(&e.device) && e.port == 1 => None,
            Some(c) if !links.created.contains(&e.device) => Some(*c),
            _ if have.keys().any(|(d, _)| *d == e.device) => {
                return Err(StateError::not_found(
                    format!("roce[{i}].port"),
                    "RoCE port",
                    id,
                    "",
                ))
            }
            _ => {
                return Err(StateError::not_found(
                    format!("roce[{i}].device"),
                    "RoCE device",
                    &e.device,
                    " (give the kernel name or node GUID of a device with RoCE ports)",
                ))
            }
        };
        let (dev, port) = (e.device.clone(), e.port);
        if let Some(mode) = e.mode {
            let old = now.and_then(|c| c.mode);
            if old != Some(mode) {
                let step = |mode| RoceStep::SetMode {
                    device: dev.clone(),
                    port,
                    mode,
                };
                plan.push(
                    Phase::Roce,
                    format!("roce[{id}].mode"),
                    ChangeOp::Set,
                    (text(old.map(roce_text)), roce_text(mode).to_string()),
                    step(mode),
                    step(old.unwrap_or(mode)),
                );
            }
        }
        if let Some(tos) = e.tos {
            let old = now.and_then(|c| c.tos);
            if old != Some(tos) {
                let step = |tos| RoceStep::SetTos {
                    device: dev.clone(),
                    port,
                    tos,
                };
                plan.push(
                    Phase::Roce,
                    format!("roce[{id}].tos"),
                    ChangeOp::Set,
                    (text(old), tos.to_string()),
                    step(tos),
                    step(old.unwrap_or(tos)),
                );
            }
        }
        if let Some(want) = &e.qos {
            let Some(old) = now.and_then(|c| c.qos.as_ref()) else {
                return Err(StateError::not_found(
                    format!("roce[{i}].qos"),
                    "RoCE port with DCB",
                    id,
                    " (the driver of its network interface has no DCB; rxe and siw have none)",
                ));
            };
            if want.over(old) != old.clone().normalized() {
                let step = |profile: &QosProfile| RoceStep::SetQosProfile {
                    device: dev.clone(),
                    port,
                    profile: profile.clone(),
                };
                plan.push(
                    Phase::Roce,
                    format!("roce[{id}].qos"),
                    ChangeOp::Set,
                    (old.summary(), want.clone().normalized().summary()),
                    step(&want.clone().normalized()),
                    step(old),
                );
            }
        }
    }
    Ok(())
}
