//! The declarative state (`GetState`, `DiffState`, `ApplyState`, the state directory): the
//! host's whole configuration as one `rdma_manager_model::state::State`, built from what the
//! engine holds, and the steps of a difference run through the same engine jobs as the
//! one-shot methods, each undone by its undo step when a later one fails.
//!
//! Every step is a job of its own (the one its D-Bus method runs): the engine keeps polling
//! and publishing between steps, and each step persists what it changed as its method does,
//! so an applied state survives a restart through the areas' own files.

use std::collections::{BTreeMap, HashMap};

use rdma_manager_model::state::{
    self, Change, EntryState, Infiniband, InterfaceEntry, InterfaceType, IpAddress, IpFamily,
    Memlock, Naming, NfsRdma, RoceEntry, RoceVersion, SoftLinkEntry, SoftLinkKind, State,
    StateIpoibMode, Step, SubnetManager,
};
use tracing::{info, warn};
use zbus::zvariant::{OwnedValue, Value};

use super::{EngineHandle, ObservedState, OpError, SmVerb, StepOutcome};
use crate::config::IpoibSettings;
use crate::model::{DeviceKind, RoceMode};
use crate::nm::profile::{IpConfig, IpMethod};

/// The host's state from what the engine holds, IP settings aside (they come from
/// NetworkManager, asked on the caller's task).
fn current_of(st: &ObservedState) -> State {
    let mut soft_links = Vec::new();
    let mut roce = Vec::new();
    for d in st.devices.values() {
        let kind = match d.snap.kind {
            DeviceKind::Rxe => Some(SoftLinkKind::Rxe),
            DeviceKind::Siw => Some(SoftLinkKind::Siw),
            _ => None,
        };
        if let Some(kind) = kind {
            soft_links.push(SoftLinkEntry {
                name: d.name().to_string(),
                kind: Some(kind),
                netdev: d.snap.parent_netdev.clone(),
                state: None,
            });
        }
        for (port, r) in d.roce.iter() {
            roce.push(RoceEntry {
                device: d.name().to_string(),
                port: *port,
                mode: r.mode.as_ref().ok().map(|m| match m {
                    RoceMode::V1 => RoceVersion::V1,
                    RoceMode::V2 => RoceVersion::V2,
                }),
                tos: r.tos.as_ref().ok().copied(),
            });
        }
    }
    soft_links.sort_by(|a, b| a.name.cmp(&b.name));
    roce.sort_by(|a, b| (&a.device, a.port).cmp(&(&b.device, b.port)));

    let mut interfaces: Vec<InterfaceEntry> = st
        .ipoib
        .values()
        .filter_map(|i| {
            let a = i.snap.ipoib.as_ref()?;
            let child = a.parent.is_some();
            Some(InterfaceEntry {
                name: i.snap.name.clone(),
                kind: InterfaceType::Infiniband,
                state: Some(EntryState::Up),
                mtu: i.snap.mtu.as_ref().ok().copied(),
                infiniband: Some(Infiniband {
                    mode: a.mode.as_ref().ok().map(|m| StateIpoibMode::from(*m)),
                    umcast: a.umcast.as_ref().ok().copied(),
                    base_iface: a.parent.clone(),
                    pkey: child
                        .then(|| a.pkey.as_ref().ok().map(|p| format!("{p:#06x}")))
                        .flatten(),
                }),
                ipv4: None,
                ipv6: None,
            })
        })
        .collect();
    interfaces.sort_by(|a, b| a.name.cmp(&b.name));

    let naming = Naming {
        rdma_policy: Some(st.naming.policy.clone()).filter(|p| !p.is_empty()),
        rdma_fixed_names: Some(
            st.naming
                .fixed
                .iter()
                .map(|(guid, name, _, _)| rdma_manager_model::state::FixedName {
                    node_guid: guid.colon_form(),
                    name: Some(name.clone()),
                    state: None,
                })
                .collect(),
        ),
        ipoib_names: Some(
            st.naming
                .ipoib_rules
                .iter()
                .map(|r| rdma_manager_model::state::IpoibName {
                    port_guid: r.port_guid.colon_form(),
                    name: Some(r.name.clone()),
                    state: None,
                })
                .collect(),
        ),
    };

    let hs = &st.host_setup;
    let mut modules: BTreeMap<String, BTreeMap<String, bool>> = BTreeMap::new();
    for m in &hs.modules {
        modules
            .entry(m.set.clone())
            .or_default()
            .insert(m.module.clone(), m.enabled);
    }
    let nonempty = |s: &str| Some(s.to_string()).filter(|s| !s.is_empty());
    State {
        soft_links: Some(soft_links),
        roce: Some(roce),
        interfaces: Some(interfaces),
        naming: Some(naming),
        modules: Some(modules),
        memlock: Some(Memlock {
            soft: nonempty(&hs.memlock_soft),
            hard: nonempty(&hs.memlock_hard),
        }),
        nfs_rdma: Some(NfsRdma {
            enabled: Some(hs.nfs_rdma),
            port: hs.nfs_rdma.then_some(hs.nfs_rdma_port),
        }),
        subnet_manager: Some(SubnetManager {
            enabled: Some(hs.opensm.unit_file_state == "enabled"),
            running: Some(hs.opensm.active_state == "active"),
        }),
    }
}

/// One family's settings of a NetworkManager profile in the document's form.
fn family_of(c: &IpConfig, v6: bool) -> IpFamily {
    let (enabled, dhcp, autoconf) = match c.method {
        IpMethod::Disabled => (false, None, None),
        IpMethod::Auto if v6 => (true, Some(false), Some(true)),
        IpMethod::Auto => (true, Some(true), None),
        IpMethod::Manual | IpMethod::LinkLocal if v6 => (true, Some(false), Some(false)),
        IpMethod::Manual | IpMethod::LinkLocal => (true, Some(false), None),
    };
    let list = |v: Vec<String>| Some(v).filter(|v| !v.is_empty());
    IpFamily {
        enabled: Some(enabled),
        dhcp: if enabled { dhcp } else { None },
        autoconf: if enabled { autoconf } else { None },
        address: enabled.then(|| {
            c.addresses
                .iter()
                .map(|(ip, prefix)| IpAddress {
                    ip: ip.to_string(),
                    prefix_length: *prefix,
                })
                .collect()
        }),
        gateway: c.gateway.map(|g| g.to_string()),
        dns: list(c.dns.iter().map(|d| d.to_string()).collect()),
        dns_search: list(c.dns_search.clone()),
    }
}

/// What running a step left to settle: a NetworkManager change it made is confirmed at once
/// (the state's own undo steps are its rollback, and one checkpoint per step would overlap).
type StepResult = Result<(), OpError>;

impl EngineHandle {
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
        let (mut state, guids, with_profile) = self
            .call(move |e| {
                Box::pin(async move {
                    let state = current_of(&e.state);
                    let guids: BTreeMap<String, String> = e
                        .state
                        .devices
                        .values()
                        .filter_map(|d| {
                            let g = d.snap.node_guid.as_ref().ok()?;
                            Some((g.colon_form(), d.name().to_string()))
                        })
                        .collect();
                    let with_profile: Vec<String> = match &e.state.nm_profiles {
                        Some(_) => e
                            .state
                            .ipoib
                            .values()
                            .map(|i| i.snap.name.clone())
                            .collect(),
                        None => Vec::new(),
                    };
                    Ok((state, guids, with_profile))
                })
            })
            .await?;
        if !with_profile.is_empty() {
            self.nm.refresh().await;
            let owned: Vec<String> = with_profile
                .into_iter()
                .filter(|n| self.nm.owner_of(n).is_some())
                .collect();
            if !owned.is_empty() && self.network_manager().await.is_ok() {
                for name in owned {
                    let Ok(report) = self.ip_settings(&name).await else {
                        continue;
                    };
                    let Some(s) = report.settings else { continue };
                    if let Some(i) = state
                        .interfaces
                        .as_mut()
                        .and_then(|l| l.iter_mut().find(|i| i.name == name))
                    {
                        i.ipv4 = Some(family_of(&s.ipv4, false));
                        i.ipv6 = Some(family_of(&s.ipv6, true));
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
            Step::AddSoftLink { name, kind, netdev } => self
                .add_soft_link(&name, kind.as_str(), &netdev)
                .await
                .map(drop),
            Step::RemoveSoftLink { name } => self.remove_soft_link(&name).await,
            Step::SetRoceMode { device, port, mode } => {
                let index = self.device_index(&device).await?;
                let mode = match mode {
                    RoceVersion::V1 => "v1",
                    RoceVersion::V2 => "v2",
                };
                self.set_roce_mode(index, port, mode).await
            }
            Step::SetRoceTos { device, port, tos } => {
                let index = self.device_index(&device).await?;
                self.set_roce_tos(index, port, tos).await
            }
            Step::SetRdmaPolicy { policy } => self.set_rdma_naming_policy(&policy, false).await,
            Step::SetRdmaFixedName { node_guid, name } => {
                self.set_rdma_fixed_name(&node_guid, &name, false).await
            }
            Step::RemoveRdmaFixedName { node_guid } => {
                self.remove_rdma_fixed_name(&node_guid).await
            }
            Step::SetIpoibName { port_guid, name } => {
                self.set_ipoib_name(&port_guid, &name, false).await
            }
            Step::RemoveIpoibName { port_guid } => self.remove_ipoib_name(&port_guid).await,
            Step::SetModule {
                set,
                module,
                enabled,
            } => self.set_module_enabled(&set, &module, enabled).await,
            Step::SetMemlock { soft, hard } => {
                self.set_memlock_limits(&soft, &hard).await.map(drop)
            }
            Step::ResetMemlock => self.reset_memlock_limits().await,
            Step::SetNfsRdma { enabled, port } => {
                let port = if enabled { port } else { 0 };
                let steps = self.set_nfs_rdma(enabled, port).await?;
                match steps.iter().find(|s| s.outcome == StepOutcome::Failed) {
                    Some(s) => Err(OpError::Failed(format!("{}: {}", s.name, s.detail))),
                    None => Ok(()),
                }
            }
            Step::SetSubnetManagerEnabled { enabled } => {
                let verb = if enabled {
                    SmVerb::Enable
                } else {
                    SmVerb::Disable
                };
                self.subnet_manager(verb).await
            }
            Step::SetSubnetManagerRunning { running } => {
                let verb = if running { SmVerb::Start } else { SmVerb::Stop };
                self.subnet_manager(verb).await
            }
            Step::CreateChild { parent, pkey, name } => {
                let parent = self.ifindex_of(&parent).await?;
                let created = self
                    .ipoib_create_child(parent, u32::from(pkey), &name, IpoibSettings::default())
                    .await?;
                if let super::ChildCreated::NetworkManager { pending, .. } = created {
                    self.nm_confirm(&pending).await?;
                }
                Ok(())
            }
            Step::DeleteChild { name } => {
                let ifindex = self.ifindex_of(&name).await?;
                let pending = self.ipoib_delete(ifindex).await?;
                self.confirm_if_any(pending).await
            }
            Step::SetIpoibMode { name, mode } => {
                let ifindex = self.ifindex_of(&name).await?;
                let mode = match mode {
                    StateIpoibMode::Datagram => "datagram",
                    StateIpoibMode::Connected => "connected",
                };
                let pending = self.ipoib_set_mode(ifindex, mode).await?;
                self.confirm_if_any(pending).await
            }
            Step::SetIpoibMtu { name, mtu } => {
                let ifindex = self.ifindex_of(&name).await?;
                let pending = self.ipoib_set_mtu(ifindex, mtu).await?;
                self.confirm_if_any(pending).await
            }
            Step::SetIpoibUmcast { name, umcast } => {
                let ifindex = self.ifindex_of(&name).await?;
                self.ipoib_set_umcast(ifindex, umcast).await
            }
            Step::SetIp { name, keys } => {
                let keys: HashMap<String, OwnedValue> = keys
                    .into_iter()
                    .filter_map(|(k, v)| nm_value(&k, &v).map(|v| (k, v)))
                    .collect();
                let pending = self
                    .set_ip_settings(&name, keys, *super::nm_change::TIMEOUT_RANGE.start())
                    .await?;
                self.nm_confirm(&pending).await
            }
        }
    }

    async fn confirm_if_any(&self, pending: Option<super::NmPending>) -> StepResult {
        match pending {
            Some(p) => self.nm_confirm(&p).await,
            None => Ok(()),
        }
    }

    /// The kernel index of the device named `name` now.
    async fn device_index(&self, name: &str) -> Result<u32, OpError> {
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

    async fn ifindex_of(&self, name: &str) -> Result<u32, OpError> {
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

/// An nmcli key's text value as the Network interface takes it: lists (addresses, dns,
/// dns-search) as arrays of strings, the rest as strings.
fn nm_value(key: &str, text: &str) -> Option<OwnedValue> {
    let list = key.ends_with(".addresses") || key.ends_with(".dns") || key.ends_with(".dns-search");
    let value = if list {
        let items: Vec<String> = text
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        Value::from(items)
    } else {
        Value::from(text.to_string())
    };
    OwnedValue::try_from(value).ok()
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
