//! What applying a document to a host changes: the settings where the document (`wanted`)
//! differs from the host's full state (`current`), each as a [`Change`] with the step that
//! makes it and the step that undoes it, in the order the steps must run.
//!
//! Merge semantics: only what `wanted` says is compared; list entries are matched by their
//! identity; `state: absent` removes (and removing what is not there changes nothing).
//! Devices are named by their kernel names on both sides: the daemon first replaces GUIDs
//! with [`State::resolve_devices`].
//!
//! Order: soft links (removals first), RoCE, naming, modules, memlock, NFS, the subnet
//! manager, the link-test responder, IPoIB children (deletions before creations), IPoIB settings, IP settings; within
//! a part, the document's order. Rollback runs the undo steps in reverse.

use std::collections::{BTreeMap, BTreeSet};

use super::change::{Change, ChangeOp, Step};
use super::check::{is_guid, pkey_value};
use super::doc::*;
use super::parse::Document;
use crate::ip::Family;
use crate::ipoib::{self, IpoibMode};
use crate::state_error::StateError;

impl State {
    /// Replaces each RoCE entry's device given by node GUID with its kernel name, as
    /// `name_of` (GUID as sysfs prints it, lower case) finds it; a GUID no device has is
    /// [`StateError::NotFound`].
    pub fn resolve_devices(
        &mut self,
        name_of: impl Fn(&str) -> Option<String>,
    ) -> Result<(), StateError> {
        for (i, e) in self.ports.iter_mut().flatten().enumerate() {
            if is_guid(&e.device) {
                let guid = e.device.to_ascii_lowercase();
                e.device = name_of(&guid).ok_or_else(|| {
                    StateError::not_found(
                        format!("ports[{i}].device"),
                        "device with node GUID",
                        guid,
                        "",
                    )
                })?;
            }
        }
        for (i, e) in self.sriov_vfs.iter_mut().flatten().enumerate() {
            if is_guid(&e.device) {
                let guid = e.device.to_ascii_lowercase();
                e.device = name_of(&guid).ok_or_else(|| {
                    StateError::not_found(
                        format!("sriov-vfs[{i}].device"),
                        "device with node GUID",
                        guid,
                        "",
                    )
                })?;
            }
        }
        for (i, e) in self.roce.iter_mut().flatten().enumerate() {
            if is_guid(&e.device) {
                let guid = e.device.to_ascii_lowercase();
                e.device = name_of(&guid).ok_or_else(|| {
                    StateError::not_found(
                        format!("roce[{i}].device"),
                        "device with node GUID",
                        guid,
                        "",
                    )
                })?;
            }
        }
        Ok(())
    }
}

impl Document {
    /// The changes this document makes to `current` (a host's full state): devices given by
    /// node GUID are resolved with `name_of` ([`State::resolve_devices`]), and every refusal
    /// names the document's line.
    pub fn changes(
        &self,
        current: &State,
        name_of: impl Fn(&str) -> Option<String>,
    ) -> Result<Vec<Change>, StateError> {
        let mut wanted = self.state.clone();
        wanted
            .resolve_devices(name_of)
            .and_then(|()| diff(current, &wanted))
            .map_err(|e| e.with_lines(&self.lines))
    }
}

/// The parts of a plan, in the order they run.
#[derive(Clone, Copy)]
pub(super) enum Part {
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

const PARTS: usize = 15;

#[derive(Default)]
pub(super) struct Plan {
    parts: [Vec<Change>; PARTS],
}

impl Plan {
    pub(super) fn push(
        &mut self,
        part: Part,
        path: String,
        op: ChangeOp,
        texts: (String, String),
        step: Step,
        undo: Step,
    ) {
        self.parts[part as usize].push(Change {
            path,
            op,
            current: texts.0,
            wanted: texts.1,
            step,
            undo,
        });
    }

    fn into_vec(self) -> Vec<Change> {
        self.parts.into_iter().flatten().collect()
    }
}

/// The changes that make `current` (a host's full state) what `wanted` says.
pub fn diff(current: &State, wanted: &State) -> Result<Vec<Change>, StateError> {
    let mut plan = Plan::default();
    let links = super::soft_links::diff(current, wanted, &mut plan)?;
    super::roce::diff(current, wanted, &links, &mut plan)?;
    super::naming::diff(current, wanted, &mut plan);
    super::host_setup::diff(current, wanted, &mut plan)?;
    responder(current, wanted, &mut plan);
    interfaces(current, wanted, &mut plan)?;
    super::ports::diff(current, wanted, &mut plan)?;
    super::sriov_vfs::diff(current, wanted, &mut plan)?;
    Ok(plan.into_vec())
}

pub(super) fn text<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn responder(current: &State, wanted: &State, plan: &mut Plan) {
    let Some(enabled) = wanted.responder.as_ref().and_then(|r| r.enabled) else {
        return;
    };
    let now = current.responder.as_ref().and_then(|r| r.enabled);
    if now == Some(enabled) {
        return;
    }
    plan.push(
        Part::Responder,
        "responder.enabled".into(),
        ChangeOp::Set,
        (text(now), enabled.to_string()),
        Step::SetLinkResponder { enabled },
        Step::SetLinkResponder {
            enabled: now.unwrap_or(!enabled),
        },
    );
}

/// A current interface's P_Key child identity: its parent and P_Key.
fn child_of(e: &InterfaceEntry) -> Option<(&str, u16)> {
    let ib = e.infiniband.as_ref()?;
    let parent = ib.base_iface.as_deref()?;
    let pkey = pkey_value(ib.pkey.as_deref()?).ok()?;
    Some((parent, pkey))
}

fn child_text(parent: &str, pkey: u16) -> String {
    format!("base-iface={parent} pkey={pkey:#06x}")
}

fn mode_text(m: StateIpoibMode) -> &'static str {
    IpoibMode::from(m).as_str()
}

fn interfaces(current: &State, wanted: &State, plan: &mut Plan) -> Result<(), StateError> {
    let have: BTreeMap<&str, &InterfaceEntry> = current
        .interfaces
        .iter()
        .flatten()
        .map(|e| (e.name.as_str(), e))
        .collect();
    // NetworkManager runs when the host's state has IP settings for any interface.
    let nm_runs = have.values().any(|e| e.ipv4.is_some() || e.ipv6.is_some());
    let deleted: BTreeSet<&str> = wanted
        .interfaces
        .iter()
        .flatten()
        .filter(|e| e.state == Some(EntryState::Absent))
        .map(|e| e.name.as_str())
        .collect();
    for (i, e) in wanted.interfaces.iter().flatten().enumerate() {
        let p = format!("interfaces[{i}]");
        let path = format!("interfaces[{}]", e.name);
        let now = have.get(e.name.as_str()).copied();
        let said_child = e.infiniband.as_ref().and_then(|ib| {
            Some((
                ib.base_iface.as_deref()?,
                pkey_value(ib.pkey.as_deref()?).ok()?,
            ))
        });
        if e.state == Some(EntryState::Absent) {
            let Some(now) = now else { continue };
            let Some((parent, pkey)) = child_of(now) else {
                return Err(StateError::invalid(
                    format!("{p}.state"),
                    format!(
                        "{} is not a P_Key child: only children (with base-iface and pkey) can \
                         be deleted",
                        e.name
                    ),
                ));
            };
            plan.push(
                Part::ChildDeletions,
                path,
                ChangeOp::Remove,
                (child_text(parent, pkey), String::new()),
                Step::DeleteChild {
                    name: e.name.clone(),
                },
                Step::CreateChild {
                    parent: parent.to_string(),
                    pkey,
                    name: e.name.clone(),
                },
            );
            continue;
        }
        match (now, said_child) {
            (Some(now), Some((parent, pkey))) => match child_of(now) {
                Some((p0, k0))
                    if p0 == parent && ipoib::full_member(k0) == ipoib::full_member(pkey) => {}
                Some((p0, k0)) => {
                    return Err(StateError::invalid(
                        format!("{p}.infiniband"),
                        format!(
                            "{} is the child of {p0} with P_Key {k0:#06x}; a child's parent and \
                             P_Key cannot change: delete it (state: absent) and create the \
                             child under another name",
                            e.name
                        ),
                    ))
                }
                None => {
                    return Err(StateError::invalid(
                        format!("{p}.infiniband.base-iface"),
                        format!("{} exists and is not a P_Key child", e.name),
                    ))
                }
            },
            (Some(_), None) => {}
            (None, Some((parent, pkey))) => {
                let Some(parent_now) = have.get(parent) else {
                    return Err(StateError::not_found(
                        format!("{p}.infiniband.base-iface"),
                        "parent interface",
                        parent,
                        "",
                    ));
                };
                if child_of(parent_now).is_some() {
                    return Err(StateError::invalid(
                        format!("{p}.infiniband.base-iface"),
                        format!("{parent} is itself a P_Key child; a child's parent is a port's interface"),
                    ));
                }
                let full = ipoib::full_member(pkey);
                if let Some(other) = have.values().find(|o| {
                    !deleted.contains(o.name.as_str())
                        && child_of(o)
                            .is_some_and(|(op, ok)| op == parent && ipoib::full_member(ok) == full)
                }) {
                    return Err(StateError::contradiction(
                        format!("{p}.infiniband.pkey"),
                        format!(
                            "{parent} already has the child {} with P_Key {full:#06x} (the kernel \
                             sets the full-membership bit 0x8000 on every child)",
                            other.name
                        ),
                    ));
                }
                plan.push(
                    Part::ChildCreations,
                    path.clone(),
                    ChangeOp::Add,
                    (String::new(), child_text(parent, pkey)),
                    Step::CreateChild {
                        parent: parent.to_string(),
                        pkey,
                        name: e.name.clone(),
                    },
                    Step::DeleteChild {
                        name: e.name.clone(),
                    },
                );
            }
            (None, None) => {
                return Err(StateError::not_found(
                    &p,
                    "interface",
                    &e.name,
                    " (only P_Key children are created: give infiniband.base-iface and pkey)",
                ))
            }
        }
        ipoib_settings(&p, &path, e, now, plan)?;
        for (family, w, c) in [
            (Family::V4, &e.ipv4, now.and_then(|n| n.ipv4.as_ref())),
            (Family::V6, &e.ipv6, now.and_then(|n| n.ipv6.as_ref())),
        ] {
            let Some(w) = w else { continue };
            let fp = format!("{p}.{}", family.setting());
            if !nm_runs || (now.is_some() && c.is_none()) {
                return Err(StateError::invalid(
                    fp,
                    format!(
                        "IP settings need NetworkManager, and the host's state has none for {} \
                         (NetworkManager does not run, or does not manage it)",
                        e.name
                    ),
                ));
            }
            ip_settings(&fp, &path, &e.name, family, w, c, now.is_none(), plan)?;
        }
    }
    Ok(())
}

/// Mode, MTU and umcast. The MTU is checked against the mode the interface will have; going
/// to connected mode, the mode is set before a connected-only MTU, and going to datagram mode
/// after the MTU is lowered.
fn ipoib_settings(
    p: &str,
    path: &str,
    e: &InterfaceEntry,
    now: Option<&InterfaceEntry>,
    plan: &mut Plan,
) -> Result<(), StateError> {
    let w = e.infiniband.as_ref();
    let c = now.and_then(|n| n.infiniband.as_ref());
    let new = now.is_none();
    let name = e.name.clone();
    let w_mode = w.and_then(|b| b.mode);
    let c_mode = c.and_then(|b| b.mode);
    if let (Some(mtu), Some(mode)) = (e.mtu, w_mode.or(c_mode)) {
        ipoib::check_mtu(mode.into(), mtu)
            .map_err(|err| StateError::invalid(format!("{p}.mtu"), err.to_string()))?;
    }
    // Settings of an interface this document creates have no value to go back to: their
    // undo repeats the step, and deleting the interface undoes them all.
    let back = |old: Option<Step>, step: &Step| match (new, old) {
        (false, Some(old)) => old,
        _ => step.clone(),
    };
    let mut mode_change = None;
    if let Some(mode) = w_mode.filter(|m| c_mode != Some(*m)) {
        let step = Step::SetIpoibMode {
            name: name.clone(),
            mode,
        };
        let undo = back(
            c_mode.map(|m| Step::SetIpoibMode {
                name: name.clone(),
                mode: m,
            }),
            &step,
        );
        mode_change = Some((mode, step, undo));
    }
    let mode_first = matches!(mode_change, Some((StateIpoibMode::Connected, ..)));
    let push_mode = |plan: &mut Plan, change: Option<(StateIpoibMode, Step, Step)>| {
        if let Some((mode, step, undo)) = change {
            plan.push(
                Part::Ipoib,
                format!("{path}.infiniband.mode"),
                ChangeOp::Set,
                (text(c_mode.map(mode_text)), mode_text(mode).to_string()),
                step,
                undo,
            );
        }
    };
    if mode_first {
        push_mode(plan, mode_change.take());
    }
    let c_mtu = now.and_then(|n| n.mtu);
    if let Some(mtu) = e.mtu.filter(|m| c_mtu != Some(*m)) {
        let step = Step::SetIpoibMtu {
            name: name.clone(),
            mtu,
        };
        let undo = back(
            c_mtu.map(|m| Step::SetIpoibMtu {
                name: name.clone(),
                mtu: m,
            }),
            &step,
        );
        plan.push(
            Part::Ipoib,
            format!("{path}.mtu"),
            ChangeOp::Set,
            (text(c_mtu), mtu.to_string()),
            step,
            undo,
        );
    }
    push_mode(plan, mode_change);
    let c_umcast = c.and_then(|b| b.umcast);
    if let Some(umcast) = w.and_then(|b| b.umcast).filter(|u| c_umcast != Some(*u)) {
        let step = Step::SetIpoibUmcast {
            name: name.clone(),
            umcast,
        };
        let undo = back(
            c_umcast.map(|u| Step::SetIpoibUmcast {
                name: name.clone(),
                umcast: u,
            }),
            &step,
        );
        plan.push(
            Part::Ipoib,
            format!("{path}.infiniband.umcast"),
            ChangeOp::Set,
            (text(c_umcast), umcast.to_string()),
            step,
            undo,
        );
    }
    Ok(())
}

fn keys_text(keys: &BTreeMap<String, String>) -> String {
    keys.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One family's IP settings as one `SetIp` of the keys that differ (NetworkManager checks a
/// family as a whole: a method and its addresses go together).
#[allow(clippy::too_many_arguments)]
fn ip_settings(
    fp: &str,
    path: &str,
    name: &str,
    family: Family,
    w: &IpFamily,
    c: Option<&IpFamily>,
    new: bool,
    plan: &mut Plan,
) -> Result<(), StateError> {
    // A new interface starts with nmcli's defaults: DHCP, SLAAC.
    let defaults = IpFamily::from_nmcli(family, &BTreeMap::new());
    let c = c.unwrap_or(&defaults);
    let wanted = w.nmcli_over(family, Some(c));
    let have = c.nmcli_full(family);
    let mut merged = have.clone();
    merged.extend(wanted.clone());
    let gateway = super::nmcli::key(family, "gateway");
    let addresses = super::nmcli::key(family, "addresses");
    if !merged[&gateway].is_empty() && merged[&addresses].is_empty() {
        let n = family.name();
        return Err(StateError::contradiction(
            format!("{fp}.gateway"),
            format!("an {n} gateway needs an {n} address, and {name} would have none"),
        ));
    }
    let step_keys: BTreeMap<String, String> = wanted
        .into_iter()
        .filter(|(k, v)| have.get(k) != Some(v))
        .collect();
    if step_keys.is_empty() {
        return Ok(());
    }
    let undo_keys: BTreeMap<String, String> = step_keys
        .keys()
        .map(|k| (k.clone(), have.get(k).cloned().unwrap_or_default()))
        .collect();
    let step = Step::SetIp {
        name: name.to_string(),
        keys: step_keys.clone(),
    };
    let undo = if new {
        step.clone()
    } else {
        Step::SetIp {
            name: name.to_string(),
            keys: undo_keys.clone(),
        }
    };
    plan.push(
        Part::Ip,
        format!("{path}.{}", family.setting()),
        ChangeOp::Set,
        (keys_text(&undo_keys), keys_text(&step_keys)),
        step,
        undo,
    );
    Ok(())
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
