//! The document's `sriov-vfs` list: the node and port GUIDs of SR-IOV VFs, identity `device`
//! (the PF) and `vf`. Its type, checks, difference with the host and steps.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::part::{is_guid, once, Area, ChangeOp, PartPlan, Phase};
use crate::names::validate_rdma_name;
use crate::state_error::StateError;

/// One VF's GUIDs (`SetVfGuids`): set through the PF, remembered by the PF's node GUID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct VfEntry {
    /// The PF: its kernel name, or its node GUID as sysfs prints it.
    pub device: String,
    /// The VF index, from 0.
    pub vf: u32,
    /// In any form `ip link`, sysfs or ibstat print; both or neither.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_guid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_guid: Option<String>,
}

/// One step of the `sriov-vfs` list, with the arguments of its one-shot method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VfStep {
    /// `Device.SetVfGuids`, GUIDs as `ip link` writes them.
    SetGuids {
        device: String,
        vf: u32,
        node_guid: String,
        port_guid: String,
    },
    /// `Device.ResetVfGuids`: forgets the VF's remembered GUIDs (the undo of a first set:
    /// the kernel has no GUID-less state to go back to).
    ResetGuids { device: String, vf: u32 },
}

impl VfStep {
    /// The polkit area of the step's method.
    pub fn area(&self) -> Area {
        match self {
            VfStep::SetGuids { .. } | VfStep::ResetGuids { .. } => Area::Adapter,
        }
    }
}

/// A VF entry's GUIDs, parsed and checked (both or neither).
fn vf_guids(e: &VfEntry, p: &str) -> Result<Option<(u64, u64)>, StateError> {
    use crate::vf_guid::{parse_vf_guid, GuidKind};
    let parse = |kind: GuidKind, key: &str, v: &str| {
        parse_vf_guid(kind, v)
            .map_err(|err| StateError::invalid(format!("{p}.{key}"), err.to_string()))
    };
    match (&e.node_guid, &e.port_guid) {
        (None, None) => Ok(None),
        (Some(n), Some(g)) => Ok(Some((
            parse(GuidKind::Node, "node-guid", n)?,
            parse(GuidKind::Port, "port-guid", g)?,
        ))),
        _ => Err(StateError::invalid(
            p,
            "give both node-guid and port-guid: a VF's GUIDs are set together",
        )),
    }
}

/// The document's `sriov-vfs` list, value by value, its identities and GUIDs once each.
pub(super) fn check(vfs: &[VfEntry]) -> Result<(), StateError> {
    let mut seen = BTreeMap::new();
    let mut guids: BTreeMap<u64, String> = BTreeMap::new();
    for (i, e) in vfs.iter().enumerate() {
        let p = format!("sriov-vfs[{i}]");
        if !is_guid(&e.device) {
            validate_rdma_name(&e.device).map_err(|err| {
                StateError::invalid(
                    format!("{p}.device"),
                    format!("{err} (give the PF's kernel name or node GUID)"),
                )
            })?;
        }
        once(
            &mut seen,
            (e.device.to_ascii_lowercase(), e.vf),
            &p,
            |first| {
                format!(
                    "VF {} of {} is listed twice (also at {first})",
                    e.vf, e.device
                )
            },
        )?;
        if let Some((node, port)) = vf_guids(e, &p)? {
            // One GUID may be both of one VF, never another VF's.
            for g in BTreeSet::from([node, port]) {
                if let Some(first) = guids.insert(g, p.clone()) {
                    return Err(StateError::contradiction(
                        p,
                        format!(
                            "GUID {} is given to two VFs (also at {first})",
                            crate::vf_guid::ip_form(g)
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

fn vf_text(g: Option<(u64, u64)>) -> String {
    g.map(|(n, p)| {
        format!(
            "node-guid={} port-guid={}",
            crate::vf_guid::ip_form(n),
            crate::vf_guid::ip_form(p)
        )
    })
    .unwrap_or_default()
}

/// SR-IOV VF GUIDs: each listed VF must be one the PF has enabled (the host's state lists
/// those). A VF that had GUIDs is set back to them on undo; one that had none has its
/// remembered GUIDs forgotten (the driver cannot go back to none).
pub(super) fn diff(
    current: &Option<Vec<VfEntry>>,
    wanted: &Option<Vec<VfEntry>>,
    plan: &mut PartPlan<VfStep>,
) -> Result<(), StateError> {
    let have: BTreeMap<(&str, u32), &VfEntry> = current
        .iter()
        .flatten()
        .map(|e| ((e.device.as_str(), e.vf), e))
        .collect();
    for (i, e) in wanted.iter().flatten().enumerate() {
        let p = format!("sriov-vfs[{i}]");
        let id = format!("{}/{}", e.device, e.vf);
        let Some(now) = have.get(&(e.device.as_str(), e.vf)) else {
            return Err(StateError::not_found(
                p,
                "SR-IOV VF",
                id,
                " (give an SR-IOV PF's kernel name and the index of a VF it has enabled)",
            ));
        };
        let Some(want) = vf_guids(e, &p)? else {
            continue;
        };
        // The host's own reading; one that does not parse counts as none.
        let old = vf_guids(now, &p).ok().flatten();
        if old == Some(want) {
            continue;
        }
        let set = |(n, g): (u64, u64)| VfStep::SetGuids {
            device: e.device.clone(),
            vf: e.vf,
            node_guid: crate::vf_guid::ip_form(n),
            port_guid: crate::vf_guid::ip_form(g),
        };
        let undo = match old {
            Some(o) => set(o),
            None => VfStep::ResetGuids {
                device: e.device.clone(),
                vf: e.vf,
            },
        };
        plan.push(
            Phase::Vfs,
            format!("sriov-vfs[{id}]"),
            ChangeOp::Set,
            (vf_text(old), vf_text(Some(want))),
            set(want),
            undo,
        );
    }
    Ok(())
}
