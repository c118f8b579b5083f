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

use super::change::{Change, Step};
use super::doc::*;
use super::parse::Document;
use super::part::{is_guid, text, ChangeOp, PartPlan, Phase, PHASES};
use super::{host_setup, interfaces, naming, ports, roce, soft_links, sriov_vfs};
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

/// The changes of every part, by the phase they run in.
#[derive(Default)]
struct Plan {
    phases: [Vec<Change>; PHASES],
}

impl Plan {
    /// Runs one part's difference and takes its changes, its steps made the document's with
    /// `step`.
    fn part<S, T>(
        &mut self,
        step: impl Fn(S) -> Step,
        run: impl FnOnce(&mut PartPlan<S>) -> Result<T, StateError>,
    ) -> Result<T, StateError> {
        let mut part = PartPlan::default();
        let out = run(&mut part)?;
        for (phase, path, op, (current, wanted), s, undo) in part.0 {
            self.phases[phase as usize].push(Change {
                path,
                op,
                current,
                wanted,
                step: step(s),
                undo: step(undo),
            });
        }
        Ok(out)
    }

    fn into_vec(self) -> Vec<Change> {
        self.phases.into_iter().flatten().collect()
    }
}

/// The changes that make `current` (a host's full state) what `wanted` says.
pub fn diff(current: &State, wanted: &State) -> Result<Vec<Change>, StateError> {
    let (c, w) = (current, wanted);
    let mut plan = Plan::default();
    let links = plan.part(Step::Link, |p| {
        soft_links::diff(&c.soft_links, &w.soft_links, p)
    })?;
    plan.part(Step::Roce, |p| roce::diff(&c.roce, &w.roce, &links, p))?;
    plan.part(Step::Naming, |p| {
        naming::diff(&c.naming, &w.naming, p);
        Ok(())
    })?;
    plan.part(Step::Setup, |p| {
        host_setup::diff(&c.host_setup(), &w.host_setup(), p)
    })?;
    plan.part(
        |enabled| Step::SetLinkResponder { enabled },
        |p| {
            responder(c, w, p);
            Ok(())
        },
    )?;
    plan.part(Step::Interface, |p| {
        interfaces::diff(&c.interfaces, &w.interfaces, p)
    })?;
    plan.part(Step::Port, |p| ports::diff(&c.ports, &w.ports, p))?;
    plan.part(Step::Vf, |p| sriov_vfs::diff(&c.sriov_vfs, &w.sriov_vfs, p))?;
    Ok(plan.into_vec())
}

/// The link-test responder: its steps are its `enabled`.
fn responder(current: &State, wanted: &State, plan: &mut PartPlan<bool>) {
    let Some(enabled) = wanted.responder.as_ref().and_then(|r| r.enabled) else {
        return;
    };
    let now = current.responder.as_ref().and_then(|r| r.enabled);
    if now == Some(enabled) {
        return;
    }
    plan.push(
        Phase::Responder,
        "responder.enabled".into(),
        ChangeOp::Set,
        (text(now), enabled.to_string()),
        enabled,
        now.unwrap_or(!enabled),
    );
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
