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

use super::change::{Change, ChangeOp, Step};
use super::check::is_guid;
use super::doc::*;
use super::parse::Document;
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
    super::interfaces::diff(current, wanted, &mut plan)?;
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

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
