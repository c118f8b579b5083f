//! The declarative state (`GetState`, `DiffState`, `ApplyState`, the state directory): the
//! host's whole configuration as one `rdma_manager_model::state::State`, built from what the
//! engine holds, and the steps of a difference run through the same engine jobs as the
//! one-shot methods, each undone by its undo step when a later one fails.
//!
//! Every step is a job of its own (the one its D-Bus method runs): the engine keeps polling
//! and publishing between steps, and each step persists what it changed as its method does,
//! so an applied state survives a restart through the areas' own files.
//!
//! Each part of the document is read from the engine's state and its steps run beside the
//! area's operations (`ops_roce::roce_entries` and `run_roce_step`, ...); this module puts the
//! parts together and runs, undoes and confirms the steps.

use std::collections::BTreeMap;

use rdma_manager_model::state::{self, Change, IpFamily, Responder, State, Step};
use tracing::{info, warn};

use super::{EngineHandle, ObservedState, OpError};
use crate::nm::keys::IpSettings;
use crate::nm::profile::{Family, IpConfig};

/// The host's state from what the engine holds, IP settings aside (they come from
/// NetworkManager, asked on the caller's task).
fn current_of(st: &ObservedState) -> State {
    State {
        soft_links: Some(super::ops_soft_links::soft_link_entries(st)),
        roce: Some(super::ops_roce::roce_entries(st)),
        interfaces: Some(super::ops_ipoib::interface_entries(st)),
        naming: Some(super::ops_naming::naming_section(st)),
        // Held by the link tests, not the engine: `current_state_and_guids` adds it.
        responder: None,
        // Expectations, not settings: the host has none to show.
        health: None,
        ports: Some(super::ops_port_type::port_entries(st)),
        sriov_vfs: Some(super::ops_vf_guid::vf_entries(st)),
        ..super::ops_host::host_setup_sections(st)
    }
}

/// One family's settings of a NetworkManager profile in the document's form, through the
/// nmcli keys the model reads (so that what is shown is what the difference compares).
fn family_of(c: &IpConfig, family: Family) -> IpFamily {
    let join = |v: Vec<String>| v.join(",");
    let setting = family.setting();
    let keys: BTreeMap<String, String> = [
        ("method", c.method.as_str().to_string()),
        (
            "addresses",
            join(
                c.addresses
                    .iter()
                    .map(|(ip, prefix)| format!("{ip}/{prefix}"))
                    .collect(),
            ),
        ),
        (
            "gateway",
            c.gateway.map(|g| g.to_string()).unwrap_or_default(),
        ),
        ("dns", join(c.dns.iter().map(|d| d.to_string()).collect())),
        ("dns-search", join(c.dns_search.clone())),
    ]
    .into_iter()
    .map(|(field, value)| (format!("{setting}.{field}"), value))
    .collect();
    IpFamily::from_nmcli(family, &keys)
}

/// What running a step left to settle: a NetworkManager change it made is confirmed at once
/// (the state's own undo steps are its rollback, and one checkpoint per step would overlap).
type StepResult = Result<(), OpError>;

impl EngineHandle {
    /// Gives the state the link tests' responder (once, at start).
    pub fn set_link_tests(&self, link_tests: std::sync::Arc<crate::linktest::LinkTests>) {
        let _ = self.link_tests.set(link_tests);
    }

    /// The link tests, or why the state cannot reach them (a daemon built without them).
    fn link_tests(&self) -> Result<&std::sync::Arc<crate::linktest::LinkTests>, OpError> {
        self.link_tests
            .get()
            .ok_or_else(|| OpError::Busy("the link tests are not started yet; try again".into()))
    }

    /// The host the engine reads (the state directory's files are read through it).
    pub fn host(&self) -> &std::sync::Arc<dyn crate::kernel::Host> {
        &self.host
    }

    /// The host's state as the document shows it: every section, from what the engine holds;
    /// the IP settings of interfaces NetworkManager has a profile for, where it runs.
    pub async fn current_state(&self) -> Result<State, OpError> {
        self.current_state_and_guids().await.map(|(s, _)| s)
    }

    /// [`Self::current_state`], and the kernel name of every device by its node GUID as sysfs
    /// prints it, from the same reading (for a document that names devices by GUID).
    pub async fn current_state_and_guids(
        &self,
    ) -> Result<(State, BTreeMap<String, String>), OpError> {
        let (mut state, guids, nm_candidates) = self
            .call(move |e| {
                Box::pin(async move {
                    let mut state = current_of(&e.state);
                    let qos = super::ops_qos::profiles(e).await;
                    for r in state.roce.iter_mut().flatten() {
                        r.qos = qos.get(&(r.device.clone(), r.port)).cloned();
                    }
                    let guids: BTreeMap<String, String> = e
                        .state
                        .devices
                        .values()
                        .filter_map(|d| {
                            let g = d.snap.node_guid.as_ref().ok()?;
                            Some((g.colon_form(), d.name().to_string()))
                        })
                        .collect();
                    let nm_candidates: Vec<String> = match &e.state.nm_profiles {
                        Some(_) => e
                            .state
                            .ipoib
                            .values()
                            .map(|i| i.snap.name.clone())
                            .collect(),
                        None => Vec::new(),
                    };
                    Ok((state, guids, nm_candidates))
                })
            })
            .await?;
        if let Some(lt) = self.link_tests.get() {
            state.responder = Some(Responder {
                enabled: Some(lt.responder().enabled),
            });
        }
        if !nm_candidates.is_empty() {
            // Owners asked once, each profile read once: no re-read per interface.
            self.nm.refresh().await;
            let owned: Vec<(String, String)> = nm_candidates
                .into_iter()
                .filter_map(|n| self.nm.owner_of(&n).map(|p| (n, p.uuid)))
                .collect();
            let nm = match owned.is_empty() {
                true => None,
                false => self.network_manager().await.ok(),
            };
            if let Some(nm) = nm {
                for (name, uuid) in &owned {
                    let Ok(profile) = nm.profile_settings(uuid).await else {
                        continue;
                    };
                    let s = IpSettings::of_profile(&profile);
                    if let Some(i) = state
                        .interfaces
                        .as_mut()
                        .and_then(|l| l.iter_mut().find(|i| &i.name == name))
                    {
                        i.ipv4 = Some(family_of(&s.ipv4, Family::V4));
                        i.ipv6 = Some(family_of(&s.ipv6, Family::V6));
                    }
                }
            }
        }
        Ok((state, guids))
    }

    /// Runs one step of a state through the engine job of its one-shot method. A change
    /// NetworkManager made is confirmed at once: the state's undo steps take it back.
    pub async fn run_state_step(&self, step: &Step) -> StepResult {
        info!(target: "rdma_managerd::state", ?step, "state step");
        match step.clone() {
            Step::Link(step) => self.run_link_step(step).await,
            Step::Roce(step) => self.run_roce_step(step).await,
            Step::Port(step) => self.run_port_step(step).await,
            Step::Vf(step) => self.run_vf_step(step).await,
            Step::Naming(step) => self.run_naming_step(step).await,
            Step::Setup(step) => self.run_setup_step(step).await,
            Step::Interface(step) => self.run_interface_step(step).await,
            Step::SetLinkResponder { enabled } => self.link_tests()?.set_responder(enabled).await,
        }
    }

    pub(super) async fn confirm_if_any(&self, pending: Option<super::NmPending>) -> StepResult {
        match pending {
            Some(p) => self.nm_confirm(&p).await,
            None => Ok(()),
        }
    }

    /// The kernel index of the device named `name` now.
    pub(super) async fn device_index(&self, name: &str) -> Result<u32, OpError> {
        let wanted = name.to_string();
        self.call(move |e| {
            Box::pin(async move {
                e.state
                    .device_by_name(&wanted)
                    .map(|d| d.index)
                    .ok_or_else(|| OpError::NotFound(format!("there is no RDMA device {wanted}")))
            })
        })
        .await
    }

    pub(super) async fn ifindex_of(&self, name: &str) -> Result<u32, OpError> {
        self.ipoib_ifindex(name)
            .await
            .ok_or_else(|| OpError::NotFound(format!("there is no IPoIB interface {name}")))
    }

    /// Runs `steps` in order; on the first failure runs the undo steps of those done, last
    /// first, and fails with the step's error, saying what was rolled back. Returns the
    /// number of steps run.
    pub async fn run_state_steps(&self, steps: &[(String, Step, Step)]) -> Result<usize, OpError> {
        for (i, (path, step, _)) in steps.iter().enumerate() {
            if let Err(e) = self.run_state_step(step).await {
                warn!(target: "rdma_managerd::state", %path, error = %e, "state step failed");
                let undone = self.undo_state_steps(&steps[..i]).await;
                return Err(e.with_more(&format!(" (step {path}; {undone})")));
            }
        }
        Ok(steps.len())
    }

    /// Runs the undo steps of `done`, last first; an undo that fails is reported and the
    /// others still run. Says what happened, for the error that caused it.
    pub async fn undo_state_steps(&self, done: &[(String, Step, Step)]) -> String {
        if done.is_empty() {
            return "nothing had been changed".into();
        }
        let mut failed = Vec::new();
        for (path, _, undo) in done.iter().rev() {
            if let Err(e) = self.run_state_step(undo).await {
                warn!(target: "rdma_managerd::state", %path, error = %e, "undo failed");
                failed.push(format!("{path}: {e}"));
            }
        }
        if failed.is_empty() {
            match done.len() {
                1 => "the 1 change made was rolled back".to_string(),
                n => format!("the {n} changes made were rolled back"),
            }
        } else {
            format!(
                "rolled back, but undoing {} failed: {}",
                failed.len(),
                failed.join("; ")
            )
        }
    }
}

/// A step of an applied state: its key path, the step and the step that undoes it.
pub type DoneStep = (String, Step, Step);

/// An applied state that waits for confirmation: its undo steps, run (last first) when it
/// is rolled back or not confirmed in time.
#[derive(Debug, Clone, PartialEq)]
pub struct StatePending {
    pub steps: Vec<DoneStep>,
    /// What was changed, for people.
    pub description: String,
}

/// The outcome of one file of the state directory, for the root's `StateDirectory`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct StateFileOutcome {
    pub file: String,
    /// `applied`, `unchanged`, `refused` or `rolled-back`.
    pub outcome: String,
    pub summary: String,
    pub message: String,
}

/// The steps of `changes`, in their order.
pub fn steps_of(changes: &[Change]) -> Vec<DoneStep> {
    changes
        .iter()
        .map(|c| (c.path.clone(), c.step.clone(), c.undo.clone()))
        .collect()
}

impl EngineHandle {
    /// Runs the steps of `changes` in order, then reads the host back and checks that every
    /// setting of `wanted` holds. A failed step or a setting that does not hold undoes every
    /// step made, last first, and fails saying so.
    pub async fn apply_state_changes(
        &self,
        changes: &[Change],
        wanted: &State,
    ) -> Result<StatePending, OpError> {
        let steps = steps_of(changes);
        self.run_state_steps(&steps).await?;
        let after = self.current_state().await;
        let left = match after.map(|after| state::diff(&after, wanted)) {
            Ok(Ok(left)) if left.is_empty() => None,
            Ok(Ok(left)) => Some(format!(
                "{} still differ{} after the change ({})",
                left.len(),
                if left.len() == 1 { "s" } else { "" },
                left.iter()
                    .map(|c| format!("{}: {:?} wanted {:?}", c.path, c.current, c.wanted))
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
            Ok(Err(e)) => Some(format!("the state read back is refused: {e}")),
            Err(e) => Some(format!("the host could not be read back: {e}")),
        };
        if let Some(why) = left {
            warn!(target: "rdma_managerd::state", %why, "verification failed");
            let undone = self.undo_state_steps(&steps).await;
            return Err(OpError::Failed(format!(
                "verification failed: {why}; {undone}"
            )));
        }
        Ok(StatePending {
            description: format!(
                "{} change{} of the declarative state: {}",
                steps.len(),
                if steps.len() == 1 { "" } else { "s" },
                steps
                    .iter()
                    .map(|s| s.0.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            steps,
        })
    }

    /// Publishes the outcome of the state directory's files (the root's `StateDirectory`).
    pub async fn set_state_directory(&self, files: Vec<StateFileOutcome>) {
        let _ = self
            .call(move |e| {
                Box::pin(async move {
                    e.state.state_directory = files;
                    e.sink.publish(&e.state, &super::Dirty::default()).await;
                    Ok(())
                })
            })
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::sim::{fixtures, SimHost};
    use crate::system::unreachable::Unreachable;

    /// The state read from a host is its own fixed point, in both printed forms: the
    /// difference from itself is empty, and what `GetState` prints reads back the same.
    #[tokio::test]
    async fn the_hosts_state_is_its_own_fixed_point() {
        for spec in [fixtures::demo_host(), fixtures::large_host(4, 2, 8)] {
            let sim = SimHost::new(spec).expect("simulated host");
            fixtures::install_host_setup(&sim).expect("host setup files");
            let (observed, _) = crate::engine::read_host(&sim, &Unreachable)
                .await
                .expect("read");
            let current = current_of(&observed);
            assert_eq!(state::diff(&current, &current), Ok(vec![]));
            for text in [state::to_yaml(&current), state::to_json(&current)] {
                let back = state::parse(&text).expect("the printed state reads back");
                assert_eq!(state::diff(&current, &back), Ok(vec![]), "{text}");
            }
            let _ = std::fs::remove_dir_all(sim.root());
        }
    }

    /// What the demo host shows: its soft link, a RoCE port's defaults, its IPoIB interfaces
    /// with a P_Key child's parent and P_Key, the module lists, and no IP settings (no
    /// NetworkManager).
    #[tokio::test]
    async fn the_demo_hosts_state_names_what_it_has() {
        let sim = SimHost::new(fixtures::demo_host()).expect("simulated host");
        fixtures::install_host_setup(&sim).expect("host setup files");
        let (observed, _) = crate::engine::read_host(&sim, &Unreachable)
            .await
            .expect("read");
        let s = current_of(&observed);
        let links = s.soft_links.as_deref().unwrap_or_default();
        assert_eq!(links.len(), 1);
        assert_eq!(links[0].name, "rxe0");
        assert_eq!(links[0].kind, Some(state::SoftLinkKind::Rxe));
        assert_eq!(links[0].netdev.as_deref(), Some("eth0"));
        let roce = s.roce.as_deref().unwrap_or_default();
        let mlx5 = roce
            .iter()
            .find(|r| r.device == "mlx5_1")
            .expect("mlx5_1 port 1");
        assert_eq!(
            (mlx5.port, mlx5.mode, mlx5.tos),
            (1, Some(state::RoceVersion::V2), Some(0))
        );
        let interfaces = s.interfaces.as_deref().unwrap_or_default();
        let child = interfaces
            .iter()
            .find(|i| {
                i.infiniband
                    .as_ref()
                    .is_some_and(|ib| ib.base_iface.is_some())
            })
            .expect("a P_Key child");
        let ib = child.infiniband.as_ref().expect("infiniband");
        let pkey = ib.pkey.as_deref().expect("its P_Key");
        assert!(pkey.starts_with("0x") && pkey.len() == 6, "{pkey}");
        assert!(interfaces
            .iter()
            .all(|i| i.ipv4.is_none() && i.ipv6.is_none()));
        assert!(s.modules.as_ref().is_some_and(|m| m.contains_key("rdma")));
        assert_eq!(
            s.subnet_manager,
            Some(state::SubnetManager {
                enabled: Some(false),
                running: Some(false)
            })
        );
        let _ = std::fs::remove_dir_all(sim.root());
    }
}
