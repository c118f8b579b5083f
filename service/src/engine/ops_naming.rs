//! Persistent names: IPoIB interface names in `70-persistent-ipoib.rules`, the RDMA device
//! naming policy and fixed names in the override of `60-rdma-persistent-naming.rules`, the
//! preview of what each policy names each device, and renaming a device now.
//!
//! Every change follows the same steps: validate (nothing touched), rename in the kernel when
//! asked to apply now, write the rules file, tell udevd to reload, publish. A step that fails
//! undoes the ones before it (names renamed back, the file's previous bytes put back), so the
//! files and the kernel are as they were.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use futures::future::BoxFuture;
use serde::Serialize;
use tracing::{info, warn};

use crate::kernel::{Host, HostError};
use crate::model::names::{validate_netdev_name, validate_rdma_name};
use crate::model::{Errno, Field, Guid, LinkLayer};
use crate::naming::rdma_rename::{RenameInputs, NAME_ASSIGN_TYPE_USER};
use crate::naming::udev_ipoib::{
    IpoibNameRule, IpoibRuleChange, IpoibRuleError, IpoibRulesFile, IPOIB_RULES_PATH,
};
use crate::naming::udev_rdma_naming::{
    attr_lookup, preview, NamingRuleError, NamingRules, PreviewDevice, PreviewRow,
    NAMING_OVERRIDE_PATH, NAMING_VENDOR_PATHS,
};

use super::state::ObservedState;
use super::transaction::{Rollback, Transaction, UndoResult};
use super::{DeviceState, Dirty, Engine, EngineHandle, OpError};

/// RDMA devices renamed by an operation: (index, old name, new name), in the order done.
type Renames = Vec<(u32, String, String)>;
use super::renames::follow_netdev_rename;
use rdma_manager_dbus::text::quote_capped;
use rdma_manager_model::state;

/// What the naming rules say, as last read; shown on the root object.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NamingState {
    /// Every IPoIB naming rule of 70-persistent-ipoib.rules, the daemon's and the users'.
    pub ipoib_rules: Vec<IpoibNameRule>,
    /// The RDMA naming policy in force (NAME_FALLBACK, ...).
    pub policy: String,
    /// The rules file it comes from; empty when none was found (rdma-core's default).
    pub policy_source: String,
    /// Fixed device names of that file: (node GUID, name, managed, line).
    pub fixed: Vec<(Guid, String, bool, u32)>,
    /// Rules files that cannot be read or changed, with the reason.
    pub errors: BTreeMap<String, String>,
}

/// The state document's `naming` section: the policy, the fixed names and the IPoIB names.
pub(super) fn naming_section(st: &ObservedState) -> state::Naming {
    state::Naming {
        rdma_policy: Some(st.naming.policy.clone()).filter(|p| !p.is_empty()),
        rdma_fixed_names: Some(
            st.naming
                .fixed
                .iter()
                .map(|(guid, name, _, _)| state::FixedName {
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
                .map(|r| state::IpoibName {
                    port_guid: r.port_guid.colon_form(),
                    name: Some(r.name.clone()),
                    state: None,
                })
                .collect(),
        ),
    }
}

impl EngineHandle {
    /// Runs a step of the state's `naming` section through the job of its one-shot method.
    pub(super) async fn run_naming_step(&self, step: state::NamingStep) -> Result<(), OpError> {
        use state::NamingStep;
        match step {
            NamingStep::SetPolicy { policy } => self.set_rdma_naming_policy(&policy, false).await,
            NamingStep::SetFixedName { node_guid, name } => {
                self.set_rdma_fixed_name(&node_guid, &name, false).await
            }
            NamingStep::RemoveFixedName { node_guid } => {
                self.remove_rdma_fixed_name(&node_guid).await
            }
            NamingStep::SetIpoibName { port_guid, name } => {
                self.set_ipoib_name(&port_guid, &name, false).await
            }
            NamingStep::RemoveIpoibName { port_guid } => self.remove_ipoib_name(&port_guid).await,
        }
    }

    /// Gives the IPoIB interface of the port with this GUID a persistent name, and renames it
    /// now if `apply_now`.
    pub async fn set_ipoib_name(
        &self,
        port_guid: &str,
        name: &str,
        apply_now: bool,
    ) -> Result<(), OpError> {
        let (guid, name) = (port_guid.to_string(), name.to_string());
        self.call(move |e| {
            Box::pin(async move { set_ipoib_name(e, &guid, &name, apply_now).await })
        })
        .await
    }

    /// Removes the daemon's persistent name for a port's IPoIB interface.
    pub async fn remove_ipoib_name(&self, port_guid: &str) -> Result<(), OpError> {
        let guid = port_guid.to_string();
        self.call(move |e| Box::pin(async move { remove_ipoib_name(e, &guid).await }))
            .await
    }

    /// Sets the host's RDMA device naming policy, and renames devices now if `apply_now`.
    pub async fn set_rdma_naming_policy(
        &self,
        policy: &str,
        apply_now: bool,
    ) -> Result<(), OpError> {
        let policy = policy.to_string();
        self.call(move |e| {
            Box::pin(async move { set_rdma_naming_policy(e, &policy, apply_now).await })
        })
        .await
    }

    /// Gives the device with this node GUID a fixed name (NAME_FIXED).
    pub async fn set_rdma_fixed_name(
        &self,
        node_guid: &str,
        name: &str,
        apply_now: bool,
    ) -> Result<(), OpError> {
        let (guid, name) = (node_guid.to_string(), name.to_string());
        self.call(move |e| {
            Box::pin(async move { set_rdma_fixed_name(e, &guid, &name, apply_now).await })
        })
        .await
    }

    /// Removes the daemon's fixed name of a device.
    pub async fn remove_rdma_fixed_name(&self, node_guid: &str) -> Result<(), OpError> {
        let guid = node_guid.to_string();
        self.call(move |e| Box::pin(async move { remove_rdma_fixed_name(e, &guid).await }))
            .await
    }

    /// For every device, the name each policy gives it, the one in force marked.
    pub async fn preview_rdma_names(&self) -> Result<Vec<PreviewRow>, OpError> {
        self.call(|e| Box::pin(async move { preview_rdma_names(e).await }))
            .await
    }

    /// Renames an RDMA device now (`rdma dev set OLD name NEW`); not persisted.
    pub async fn rename_device(&self, index: u32, new_name: &str) -> Result<(), OpError> {
        let name = new_name.to_string();
        self.call(move |e| Box::pin(async move { rename_device_now(e, index, &name).await }))
            .await
    }
}

fn parse_guid(what: &str, s: &str) -> Result<Guid, OpError> {
    Guid::parse_user(s).map_err(|e| OpError::InvalidArgument(format!("{e} ({what})")))
}

fn ipoib_error(e: IpoibRuleError) -> OpError {
    let m = e.to_string();
    match e {
        IpoibRuleError::BadGuid(_) | IpoibRuleError::BadName { .. } => OpError::InvalidArgument(m),
        IpoibRuleError::NameTaken { .. } | IpoibRuleError::UserRule { .. } => {
            OpError::AlreadyExists(m)
        }
        IpoibRuleError::NotNamed(_) => OpError::NotFound(m),
        IpoibRuleError::UnmanagedRemoval { .. } => OpError::InvalidArgument(m),
        IpoibRuleError::Block(_) => OpError::Failed(m),
    }
}

fn naming_error(e: NamingRuleError) -> OpError {
    let m = e.to_string();
    match e {
        NamingRuleError::UnknownPolicy(_)
        | NamingRuleError::BadGuid(_)
        | NamingRuleError::BadName { .. } => OpError::InvalidArgument(m),
        NamingRuleError::UserPolicyRule { .. }
        | NamingRuleError::UserFixedRule { .. }
        | NamingRuleError::NameTaken { .. } => OpError::AlreadyExists(m),
        NamingRuleError::NotFixed(_) => OpError::NotFound(m),
        NamingRuleError::Block(_) => OpError::Failed(m),
    }
}

fn file_error(path: &str, e: HostError) -> OpError {
    OpError::Failed(format!(
        "{path} could not be read: {e}; nothing was changed"
    ))
}

/// The naming rules in force: the override, else the shipped file, else rdma-core's default;
/// with the path they come from.
async fn active_naming(host: &dyn Host) -> Result<(NamingRules, Option<String>), OpError> {
    for path in std::iter::once(NAMING_OVERRIDE_PATH).chain(NAMING_VENDOR_PATHS) {
        let bytes = host
            .read_file(Path::new(path))
            .await
            .map_err(|e| file_error(path, e))?;
        if let Some(b) = bytes {
            return Ok((NamingRules::parse(Some(&b)), Some(path.to_string())));
        }
    }
    Ok((NamingRules::rdma_core_default(), None))
}

/// Reads the naming rules files.
pub(super) async fn load_naming(host: &dyn Host) -> NamingState {
    let mut st = NamingState::default();
    match host.read_file(Path::new(IPOIB_RULES_PATH)).await {
        Ok(bytes) => {
            let f = IpoibRulesFile::parse(bytes.as_deref());
            if let Err(e) = f.render() {
                st.errors.insert(IPOIB_RULES_PATH.into(), e.to_string());
            }
            st.ipoib_rules = f.rules().to_vec();
        }
        Err(e) => {
            st.errors.insert(IPOIB_RULES_PATH.into(), e.to_string());
        }
    }
    match active_naming(host).await {
        Ok((rules, source)) => {
            if source.as_deref() == Some(NAMING_OVERRIDE_PATH) {
                if let Err(e) = rules.render() {
                    st.errors.insert(NAMING_OVERRIDE_PATH.into(), e.to_string());
                }
            }
            st.policy = rules.host_policy().keyword().to_string();
            st.policy_source = source.unwrap_or_default();
            st.fixed = rules.fixed_names();
        }
        Err(e) => {
            st.errors.insert(NAMING_OVERRIDE_PATH.into(), e.to_string());
        }
    }
    st
}

/// The sysfs attributes udev rule conditions may test, from a device's snapshot.
fn device_attrs(d: &DeviceState) -> BTreeMap<String, String> {
    let s = &d.snap;
    let mut a = BTreeMap::new();
    let mut put = |k: &str, v: &Field<String>| {
        if let Ok(v) = v {
            a.insert(k.to_string(), v.clone());
        }
    };
    put("board_id", &s.board_id);
    put("hca_type", &s.hca_type);
    put("hw_rev", &s.hw_rev);
    put("fw_ver", &s.fw_ver);
    put("node_desc", &s.node_desc);
    if let Ok(g) = &s.node_guid {
        a.insert("node_guid".into(), g.colon_form());
    }
    if let Ok(g) = &s.sys_image_guid {
        a.insert("sys_image_guid".into(), g.colon_form());
    }
    if let Ok(t) = &s.node_type {
        a.insert(
            "node_type".into(),
            format!("{}: {}", t.number(), t.sysfs_name()),
        );
    }
    a
}

/// What renaming an RDMA device to `name` got back from the kernel, in words.
fn explain_device_rename(e: HostError, old: &str, name: &str) -> OpError {
    match e.errno() {
        Some(Errno::EEXIST) => OpError::AlreadyExists(format!(
            "an RDMA device named {name} already exists; choose another name for {old}"
        )),
        _ => OpError::from_host(e),
    }
}

/// Re-reads the naming rules; publishes the root when they changed.
pub(super) async fn refresh_naming(eng: &mut Engine) {
    let st = load_naming(eng.host.as_ref()).await;
    if st != eng.state.naming {
        eng.state.naming = st;
        eng.publish(Dirty {
            config: true,
            ..Dirty::default()
        })
        .await;
    }
}

/// Adds to `tx` the writing of a rules file (removed when nothing is left in it), undone
/// by putting the previous bytes back (or removing the file, if there was none), then
/// udevd's reload.
async fn write_rules(
    eng: &mut Engine,
    tx: &mut Transaction<Engine>,
    path: &'static str,
    before: Option<Vec<u8>>,
    after: Vec<u8>,
) -> Result<(), Rollback> {
    tx.step(
        eng,
        "write the rules file",
        move |e: &mut Engine| {
            Box::pin(async move {
                let p = Path::new(path);
                // Nothing left (the daemon's block was all there was): no file, as before
                // the daemon wrote one.
                let written = if after.is_empty() {
                    e.host.remove_file(p).await
                } else {
                    e.host.write_file_atomic(p, &after).await
                };
                written
                    .map_err(|err| OpError::Failed(format!("{path} could not be written: {err}")))
            })
        },
        move |e: &mut Engine, ()| {
            Box::pin(async move {
                let p = Path::new(path);
                let restored = match &before {
                    Some(b) => e.host.write_file_atomic(p, b).await,
                    None => e.host.remove_file(p).await,
                };
                match restored {
                    Ok(()) => Ok(format!("{path} was put back as it was")),
                    Err(r) => Err(format!(
                        "putting {path} back also failed ({r}): check it by hand"
                    )),
                }
            })
        },
    )
    .await?;
    tx.check(eng, "reload udev rules", move |e: &mut Engine| {
        Box::pin(async move {
            let running = e
                .host
                .reload_udev_rules()
                .await
                .map_err(|err| OpError::Failed(err.to_string()))?;
            if !running {
                info!(%path, "udevd is not running; the rules apply when it starts");
            }
            Ok(())
        })
    })
    .await
}

/// Renames RDMA devices back, last first, after a later step failed; says what could not
/// be undone.
async fn undo_device_renames(eng: &mut Engine, done: &[(u32, String, String)]) -> UndoResult {
    let mut left = Vec::new();
    for (index, old, new) in done.iter().rev() {
        if let Err(e) = eng.host.rename_device(*index, old).await {
            warn!(device = %new, to = %old, error = %e, "could not rename the device back");
            left.push(format!("{new} could not be renamed back to {old} ({e})"));
        }
    }
    let names: Vec<&str> = done
        .iter()
        .flat_map(|(_, o, n)| [o.as_str(), n.as_str()])
        .collect();
    let _ = eng.settle(&names).await;
    match (left.is_empty(), done.is_empty()) {
        (true, true) => Ok(String::new()),
        (true, false) => Ok("the devices renamed were renamed back".into()),
        (false, _) => Err(left.join("; ")),
    }
}

/// Adds to `tx` the renames of RDMA devices (`rename` does them and returns them),
/// undone by renaming them back.
async fn rename_devices<A>(
    eng: &mut Engine,
    tx: &mut Transaction<Engine>,
    rename: A,
) -> Result<Renames, Rollback>
where
    A: for<'a> FnOnce(&'a mut Engine) -> BoxFuture<'a, Result<Renames, OpError>>,
{
    tx.step(
        eng,
        "rename devices",
        rename,
        |e: &mut Engine, done: Renames| {
            Box::pin(async move { undo_device_renames(e, &done).await })
        },
    )
    .await
}

/// Re-reads renamed netdevs and the naming rules, and publishes before the caller is
/// answered.
async fn settle_renamed_netdevs(eng: &mut Engine, names: &[&str]) {
    let set: BTreeSet<String> = names.iter().map(|s| s.to_string()).collect();
    let host = eng.host.clone();
    match eng.state.refresh_netdevs(host.as_ref(), &set).await {
        Ok(dirty) => eng.publish(dirty).await,
        Err(e) => warn!(error = %e, "re-reading renamed interfaces failed"),
    }
}

pub(super) async fn set_ipoib_name(
    eng: &mut Engine,
    port_guid: &str,
    name: &str,
    apply_now: bool,
) -> Result<(), OpError> {
    let guid = parse_guid("port GUID", port_guid)?;
    validate_netdev_name(name).map_err(|e| {
        OpError::InvalidArgument(format!(
            "{e} (IPoIB interface name {name_q})",
            name_q = quote_capped(name)
        ))
    })?;
    let on_port = eng.state.devices.values().any(|d| {
        d.snap
            .ports
            .iter()
            .any(|p| p.port_guid() == Some(guid) && p.link_layer == Ok(LinkLayer::InfiniBand))
    });
    if !on_port {
        return Err(OpError::NotFound(format!(
            "no InfiniBand port of this host has port GUID {}; the ports' GUIDs are in ibstat's \"Port GUID\" and on the Port objects (PortGuid)",
            guid.colon_form()
        )));
    }
    // The port's own IPoIB interface (its children share the GUID, not the name).
    let current = eng
        .state
        .ipoib
        .values()
        .find(|i| {
            i.snap
                .address
                .as_ref()
                .ok()
                .and_then(|a| a.ipoib_port_guid())
                == Some(guid)
                && i.snap.ipoib.as_ref().is_some_and(|ib| ib.parent.is_none())
        })
        .map(|i| i.snap.name.clone());
    if current.as_deref() != Some(name) && eng.host.read_netdev(name).await.is_ok() {
        return Err(OpError::AlreadyExists(format!(
            "a network interface named {name} already exists; choose another name"
        )));
    }
    let path = Path::new(IPOIB_RULES_PATH);
    let before = eng
        .host
        .read_file(path)
        .await
        .map_err(|e| file_error(IPOIB_RULES_PATH, e))?;
    let mut rules = IpoibRulesFile::parse(before.as_deref());
    let change = rules.set(guid, name).map_err(ipoib_error)?;
    let after = rules.render().map_err(ipoib_error)?;
    let mut tx = Transaction::new(format!("set the IPoIB name {name}"));
    // The kernel step.
    let mut renamed: Option<String> = None;
    if let (true, Some(cur)) = (apply_now, current) {
        if cur != name {
            let (old, new) = (cur.clone(), name.to_string());
            let (back_old, back_new) = (cur.clone(), name.to_string());
            tx.step(
                eng,
                "rename the interface",
                move |e: &mut Engine| {
                    Box::pin(async move {
                        let (cur, name) = (&old, &new);
                        e.host.rename_netdev(cur, name).await.map_err(|err| match err.errno() {
                            Some(Errno::EBUSY) => OpError::Busy(format!(
                                "{cur} is up, and this kernel (before Linux 6.2) renames only interfaces that are down: bring it down first (ip link set {cur} down), or leave apply_now false to have the name from the next boot"
                            )),
                            Some(Errno::EEXIST) => OpError::AlreadyExists(format!(
                                "a network interface named {name} already exists; choose another name"
                            )),
                            _ => OpError::from_host(err),
                        })
                    })
                },
                move |e: &mut Engine, ()| {
                    Box::pin(async move {
                        let (old, name) = (&back_old, &back_new);
                        let undo = e.host.rename_netdev(name, old).await;
                        settle_renamed_netdevs(e, &[old, name]).await;
                        match undo {
                            Ok(()) => Ok(format!("{name} was renamed back to {old}")),
                            Err(u) => Err(format!(
                                "renaming {name} back to {old} also failed ({u}): rename it with ip link set {name} name {old}"
                            )),
                        }
                    })
                },
            )
            .await?;
            renamed = Some(cur);
        }
    }
    // Persist, then tell udevd; the rename is undone when either fails.
    if change != IpoibRuleChange::Unchanged {
        write_rules(eng, &mut tx, IPOIB_RULES_PATH, before, after).await?;
    }
    tx.commit();
    if let Some(old) = &renamed {
        settle_renamed_netdevs(eng, &[old, name]).await;
        follow_netdev_rename(eng, old, name).await;
    }
    refresh_naming(eng).await;
    Ok(())
}

pub(super) async fn remove_ipoib_name(eng: &mut Engine, port_guid: &str) -> Result<(), OpError> {
    let guid = parse_guid("port GUID", port_guid)?;
    let before = eng
        .host
        .read_file(Path::new(IPOIB_RULES_PATH))
        .await
        .map_err(|e| file_error(IPOIB_RULES_PATH, e))?;
    let mut rules = IpoibRulesFile::parse(before.as_deref());
    rules.remove(guid).map_err(ipoib_error)?;
    let after = rules.render().map_err(ipoib_error)?;
    let mut tx = Transaction::new("remove an IPoIB name");
    write_rules(eng, &mut tx, IPOIB_RULES_PATH, before, after).await?;
    tx.commit();
    refresh_naming(eng).await;
    Ok(())
}

/// The override as it is, and the policy that is in force without it (carried into it
/// when the daemon creates it).
async fn naming_override(
    eng: &Engine,
) -> Result<
    (
        Option<Vec<u8>>,
        NamingRules,
        crate::naming::rdma_rename::NamingPolicy,
    ),
    OpError,
> {
    let (active, _) = active_naming(eng.host.as_ref()).await?;
    let before = eng
        .host
        .read_file(Path::new(NAMING_OVERRIDE_PATH))
        .await
        .map_err(|e| file_error(NAMING_OVERRIDE_PATH, e))?;
    let rules = NamingRules::parse(before.as_deref());
    Ok((before, rules, active.host_policy()))
}

/// The present devices as the naming rules see them.
async fn preview_devices(eng: &Engine) -> Result<Vec<PreviewDevice>, OpError> {
    let mut out = Vec::new();
    for d in eng.state.devices.values() {
        let sysfs = match eng.host.read_rename_sysfs(d.name()).await {
            Ok(s) => s,
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(OpError::from_host(e)),
        };
        out.push(PreviewDevice {
            name: d.name().to_string(),
            node_guid: d.snap.node_guid.clone().ok(),
            attrs: device_attrs(d),
            inputs: RenameInputs {
                name: d.name().to_string(),
                netlink: d.nl.as_ref().and_then(|n| n.rename_identity()),
                sysfs,
            },
        });
    }
    Ok(out)
}

/// Renames every device whose name the rules in `rules` decide differs from its current
/// one; on a refusal the ones done are renamed back (the step leaves nothing behind).
/// Returns the renames done.
async fn apply_naming(eng: &mut Engine, rules: &NamingRules) -> Result<Renames, OpError> {
    let devices = preview_devices(eng).await?;
    let mut plan = Vec::new();
    for d in &devices {
        let lookup = attr_lookup(&d.attrs);
        let decision = rules.decide(&lookup, &|p| {
            crate::naming::rdma_rename::rdma_rename(p, &d.inputs)
        });
        if let (Some(name), Some(index)) =
            (decision.name, d.inputs.netlink.as_ref().map(|n| n.index))
        {
            if name != d.name {
                plan.push((index, d.name.clone(), name));
            }
        }
    }
    let mut done = Vec::new();
    for (index, old, new) in plan {
        if let Err(e) = eng.host.rename_device(index, &new).await {
            let err = explain_device_rename(e, &old, &new);
            let undo = match undo_device_renames(eng, &done).await {
                Ok(m) | Err(m) if m.is_empty() => String::new(),
                Ok(m) | Err(m) => format!("; {m}"),
            };
            return Err(err.with_more(&undo));
        }
        done.push((index, old, new));
    }
    Ok(done)
}

/// Writes the override and reloads udevd after the devices were renamed (`done`); on
/// failure the steps of `tx` (the renames) are undone.
async fn persist_naming(
    eng: &mut Engine,
    mut tx: Transaction<Engine>,
    before: Option<Vec<u8>>,
    after: Vec<u8>,
    done: Renames,
) -> Result<(), OpError> {
    if before.as_deref() != Some(after.as_slice()) {
        write_rules(eng, &mut tx, NAMING_OVERRIDE_PATH, before, after).await?;
    }
    tx.commit();
    let names: Vec<&str> = done
        .iter()
        .flat_map(|(_, o, n)| [o.as_str(), n.as_str()])
        .collect();
    if !names.is_empty() {
        eng.settle(&names).await?;
    }
    refresh_naming(eng).await;
    Ok(())
}

pub(super) async fn set_rdma_naming_policy(
    eng: &mut Engine,
    policy: &str,
    apply_now: bool,
) -> Result<(), OpError> {
    let (before, mut rules, _) = naming_override(eng).await?;
    rules.set_policy(policy).map_err(naming_error)?;
    let after = rules.render().map_err(naming_error)?;
    let mut tx = Transaction::new(format!("set the RDMA naming policy {policy}"));
    let done = if apply_now {
        let rules = NamingRules::parse(Some(&after));
        rename_devices(eng, &mut tx, move |e: &mut Engine| {
            Box::pin(async move { apply_naming(e, &rules).await })
        })
        .await?
    } else {
        Vec::new()
    };
    persist_naming(eng, tx, before, after, done).await
}

pub(super) async fn set_rdma_fixed_name(
    eng: &mut Engine,
    node_guid: &str,
    name: &str,
    apply_now: bool,
) -> Result<(), OpError> {
    let guid = parse_guid("node GUID", node_guid)?;
    validate_rdma_name(name).map_err(|e| {
        OpError::InvalidArgument(format!(
            "{e} (RDMA device name {name_q})",
            name_q = quote_capped(name)
        ))
    })?;
    let dev = eng
        .state
        .devices
        .values()
        .find(|d| d.snap.node_guid.as_ref().ok() == Some(&guid))
        .ok_or_else(|| {
            OpError::NotFound(format!(
                "no RDMA device of this host has node GUID {}; the devices' GUIDs are in ibstat's \"Node GUID\" and on the Device objects (NodeGuid)",
                guid.colon_form()
            ))
        })?;
    let (index, current) = (dev.index, dev.name().to_string());
    if dev.nl.as_ref().and_then(|n| n.name_assign_type) == Some(NAME_ASSIGN_TYPE_USER) {
        return Err(OpError::InvalidArgument(format!(
            "{current} was named by whoever created it (rdma link add), and rdma_rename leaves such devices alone, so a fixed name would never apply; rename it with the Device's Rename method, or re-create the soft link under the name you want"
        )));
    }
    if let Some(other) = eng
        .state
        .devices
        .values()
        .find(|d| d.name() == name && d.index != index)
    {
        return Err(OpError::AlreadyExists(format!(
            "{name} is the name of another RDMA device now ({}, node GUID {}); choose another name",
            other.name(),
            other
                .snap
                .node_guid
                .as_ref()
                .map(|g| g.colon_form())
                .unwrap_or_default()
        )));
    }
    let (before, mut rules, inherited) = naming_override(eng).await?;
    rules
        .set_fixed(guid, name, &inherited)
        .map_err(naming_error)?;
    let after = rules.render().map_err(naming_error)?;
    let mut tx = Transaction::new(format!("set the fixed name {name}"));
    let mut done = Vec::new();
    if apply_now && current != name {
        let new = name.to_string();
        done = rename_devices(eng, &mut tx, move |e: &mut Engine| {
            Box::pin(async move {
                e.host
                    .rename_device(index, &new)
                    .await
                    .map_err(|err| explain_device_rename(err, &current, &new))?;
                Ok(vec![(index, current, new)])
            })
        })
        .await?;
    }
    persist_naming(eng, tx, before, after, done).await
}

pub(super) async fn remove_rdma_fixed_name(
    eng: &mut Engine,
    node_guid: &str,
) -> Result<(), OpError> {
    let guid = parse_guid("node GUID", node_guid)?;
    let (before, mut rules, _) = naming_override(eng).await?;
    rules.remove_fixed(guid).map_err(naming_error)?;
    let after = rules.render().map_err(naming_error)?;
    let tx = Transaction::new("remove a fixed name");
    persist_naming(eng, tx, before, after, Vec::new()).await
}

pub(super) async fn preview_rdma_names(eng: &mut Engine) -> Result<Vec<PreviewRow>, OpError> {
    let (rules, _) = active_naming(eng.host.as_ref()).await?;
    let devices = preview_devices(eng).await?;
    Ok(preview(&rules, &devices))
}

pub(super) async fn rename_device_now(
    eng: &mut Engine,
    index: u32,
    new_name: &str,
) -> Result<(), OpError> {
    validate_rdma_name(new_name).map_err(|e| {
        OpError::InvalidArgument(format!(
            "{e} (RDMA device name {new_name_q})",
            new_name_q = quote_capped(new_name)
        ))
    })?;
    let old = eng
        .state
        .devices
        .get(&index)
        .map(|d| d.name().to_string())
        .ok_or_else(|| OpError::NotFound(format!("there is no RDMA device with index {index}")))?;
    if old == new_name {
        return Ok(());
    }
    if let Err(e) = eng.host.rename_device(index, new_name).await {
        // SET on an index that is gone is EINVAL: say what happened instead.
        let gone = eng
            .host
            .nl_devices()
            .await
            .map(|d| !d.iter().any(|d| d.index == index))
            .unwrap_or(false);
        let _ = eng.settle(&[&old]).await;
        return Err(if gone {
            OpError::NotFound(format!("{old} disappeared while it was being renamed"))
        } else {
            explain_device_rename(e, &old, new_name)
        });
    }
    eng.settle(&[&old, new_name]).await
}
