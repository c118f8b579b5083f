//! What every part of the document is built from: an entry's `state`, the kinds of change
//! and their polkit areas, a part's plan of changes (its own steps, each in the phase it runs
//! in), and the checks the parts share. It knows no part: `doc`, `check`, `diff` and
//! `change` put the parts together.

use std::collections::BTreeMap;

use rdma_manager_dbus::text::quote_capped;
use serde::{Deserialize, Serialize};

use crate::names::validate_rdma_name;
use crate::state_error::StateError;

/// Whether a list entry should exist. Absent from the document means `up`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntryState {
    Up,
    Absent,
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

/// The phases of a plan, in the order their changes run.
#[derive(Clone, Copy)]
pub(super) enum Phase {
    LinkRemovals,
    LinkAdditions,
    Roce,
    Naming,
    Modules,
    Memlock,
    Nfs,
    SubnetManager,
    Responder,
    ChildDeletions,
    ChildCreations,
    Ipoib,
    Ip,
    Ports,
    Vfs,
}

/// How many phases a plan has.
pub(super) const PHASES: usize = Phase::Vfs as usize + 1;

/// One change a part plans: (phase, key path, op, (current, wanted) as text, step, undo).
pub(super) type Planned<S> = (Phase, String, ChangeOp, (String, String), S, S);

/// The changes one part plans, with that part's steps.
pub(super) struct PartPlan<S>(pub(super) Vec<Planned<S>>);

impl<S> Default for PartPlan<S> {
    fn default() -> Self {
        PartPlan(Vec::new())
    }
}

impl<S> PartPlan<S> {
    pub(super) fn push(
        &mut self,
        phase: Phase,
        path: String,
        op: ChangeOp,
        texts: (String, String),
        step: S,
        undo: S,
    ) {
        self.0.push((phase, path, op, texts, step, undo));
    }
}

pub(super) fn text<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// A GUID as sysfs prints it: four groups of four hex digits joined by `:`
/// (`0002:c903:0031:7f40`).
pub fn is_guid(text: &str) -> bool {
    let groups: Vec<&str> = text.split(':').collect();
    groups.len() == 4
        && groups
            .iter()
            .all(|g| g.len() == 4 && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A P_Key as the document gives it (`"0x8002"`, any case of hex digits), checked as the
/// kernel checks a child's: the value as given, without the full-membership bit added.
pub fn pkey_value(text: &str) -> Result<u16, String> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .filter(|d| (1..=4).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_hexdigit()));
    let Some(digits) = digits else {
        return Err(format!(
            "{} is not a P_Key: write it in hex as nmstate does, \"0x\" and up to four digits \
             (\"0x8002\"), or as an integer",
            quote_capped(text)
        ));
    };
    let raw = u32::from_str_radix(digits, 16).map_err(|e| e.to_string())?;
    crate::ipoib::validate_pkey(raw).map_err(|e| e.to_string())
}

/// Refuses the second of two entries with one identity.
pub(super) fn once<K: Ord>(
    seen: &mut BTreeMap<K, String>,
    key: K,
    path: &str,
    what: impl FnOnce(&str) -> String,
) -> Result<(), StateError> {
    if let Some(first) = seen.get(&key) {
        return Err(StateError::contradiction(path, what(first)));
    }
    seen.insert(key, path.to_string());
    Ok(())
}

pub(super) fn is_absent(state: Option<EntryState>) -> bool {
    state == Some(EntryState::Absent)
}

/// A port entry's identity at `p`: the device's kernel name or node GUID, a port from 1, and
/// the port listed once in its list (`seen`, by device and port, to the first path).
pub(super) fn check_port_entry(
    seen: &mut BTreeMap<(String, u32), String>,
    p: &str,
    device: &str,
    port: u32,
) -> Result<(), StateError> {
    if !is_guid(device) {
        validate_rdma_name(device).map_err(|err| {
            StateError::invalid(
                format!("{p}.device"),
                format!("{err} (give the kernel name or the node GUID, 0002:c903:0031:7f40)"),
            )
        })?;
    }
    if port == 0 {
        return Err(StateError::invalid(
            format!("{p}.port"),
            "port 0 is not an RDMA port: ports count from 1",
        ));
    }
    once(seen, (device.to_ascii_lowercase(), port), p, |first| {
        format!("port {device}/{port} is listed twice (also at {first})")
    })
}
