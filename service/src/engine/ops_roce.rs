//! rdma_cm's RoCE defaults of a port (configfs `rdma_cm/<dev>/ports/<n>/default_roce_mode`
//! and `default_roce_tos`): set on request, persisted in `roce.toml` by node GUID and port,
//! and re-applied at start and when the device appears (added, or renamed to a name).
//!
//! The configfs group is bound to the device *name* and does not follow a rename, but the
//! settings live with the device: after a rename the group made under the new name shows
//! them. What the kernel forgets (reboot, the device re-added, rdma_cm reloaded) is what the
//! restore writes back.

use std::collections::BTreeSet;

use tracing::{info, warn};

use crate::config::RoceSettings;
use crate::kernel::HostError;
use crate::model::roce::{check_supported, not_roce_reason};
use crate::model::{Errno, RoceMode};

use rdma_manager_model::state::{RoceEntry, RoceStep, RoceVersion};

use super::transaction::Transaction;
use super::wanted::Appeared;
use super::{Dirty, Engine, EngineHandle, ObservedState, OpError};

/// The state document's `roce` list as the host holds it, QoS profiles aside (read on the
/// engine's task, `ops_qos::profiles`), sorted by identity.
pub(super) fn roce_entries(st: &ObservedState) -> Vec<RoceEntry> {
    let mut roce = Vec::new();
    for d in st.devices.values() {
        for (port, r) in d.roce.iter() {
            roce.push(RoceEntry {
                device: d.name().to_string(),
                port: *port,
                mode: r.mode.as_ref().ok().map(|m| match m {
                    RoceMode::V1 => RoceVersion::V1,
                    RoceMode::V2 => RoceVersion::V2,
                }),
                tos: r.tos.as_ref().ok().copied(),
                qos: None,
            });
        }
    }
    roce.sort_by(|a, b| (&a.device, a.port).cmp(&(&b.device, b.port)));
    roce
}

impl EngineHandle {
    /// Runs a step of the state's `roce` list through the job of its one-shot method.
    pub(super) async fn run_roce_step(&self, step: RoceStep) -> Result<(), OpError> {
        match step {
            RoceStep::SetMode { device, port, mode } => {
                let index = self.device_index(&device).await?;
                let mode = match mode {
                    RoceVersion::V1 => "v1",
                    RoceVersion::V2 => "v2",
                };
                self.set_roce_mode(index, port, mode).await
            }
            RoceStep::SetTos { device, port, tos } => {
                let index = self.device_index(&device).await?;
                self.set_roce_tos(index, port, tos).await
            }
            RoceStep::SetQosProfile {
                device,
                port,
                profile,
            } => {
                let index = self.device_index(&device).await?;
                self.set_qos_profile(index, port, profile).await
            }
        }
    }

    /// Sets a port's default RoCE mode (`v1`/`v2`, `1`/`2`, `IB/RoCE v1`/`RoCE v2`) and
    /// remembers it. `index` is the kernel device index (the object path's).
    pub async fn set_roce_mode(&self, index: u32, port: u32, mode: &str) -> Result<(), OpError> {
        let mode = RoceMode::parse_request(mode).map_err(OpError::InvalidArgument)?;
        self.call(move |e| {
            Box::pin(async move { set_roce(e, index, port, RoceChange::Mode(mode)).await })
        })
        .await
    }

    /// Sets a port's default RoCE type of service and remembers it.
    pub async fn set_roce_tos(&self, index: u32, port: u32, tos: u8) -> Result<(), OpError> {
        self.call(move |e| {
            Box::pin(async move { set_roce(e, index, port, RoceChange::Tos(tos)).await })
        })
        .await
    }
}

/// One of the two settings, with its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RoceChange {
    Mode(RoceMode),
    Tos(u8),
}

impl RoceChange {
    fn what(self) -> &'static str {
        match self {
            RoceChange::Mode(_) => "RoCE mode",
            RoceChange::Tos(_) => "RoCE ToS",
        }
    }

    fn value(self) -> String {
        match self {
            RoceChange::Mode(m) => m.short().to_string(),
            RoceChange::Tos(t) => t.to_string(),
        }
    }
}

async fn set_roce(
    eng: &mut Engine,
    index: u32,
    port: u32,
    change: RoceChange,
) -> Result<(), OpError> {
    let dev = eng.state.devices.get(&index).ok_or_else(|| {
        OpError::NotFound(format!(
            "there is no RDMA device with index {index} any more (it was removed)"
        ))
    })?;
    let name = dev.name().to_string();
    let p = dev
        .snap
        .port(port)
        .ok_or_else(|| OpError::NotFound(format!("{name} has no port {port}")))?;
    if let Some(why) = not_roce_reason(&name, &dev.snap.node_type, p) {
        return Err(OpError::NotSupported(why));
    }
    if let RoceChange::Mode(m) = change {
        check_supported(&name, p, m).map_err(OpError::NotSupported)?;
    }
    let guid = dev.snap.node_guid.clone().map_err(|e| {
        OpError::Failed(format!(
            "the node GUID of {name} cannot be read ({e}); the setting would be remembered by it, so nothing was changed"
        ))
    })?;
    let mut persisted: RoceSettings = eng.config()?;
    // The value before, to put back if the save fails.
    let previous = read_roce(eng, &name, port, change)
        .await
        .map_err(|e| explain(e, &name, port, change))?;
    let entry = persisted.entry_mut(guid, port);
    match change {
        RoceChange::Mode(m) => entry.mode = Some(m.short().to_string()),
        RoceChange::Tos(t) => entry.tos = Some(t),
    }
    let mut tx = Transaction::new(format!("set the {} of {name} port {port}", change.what()));
    let (dev, undo_name) = (name.clone(), name.clone());
    tx.step(
        eng,
        "write configfs",
        move |e: &mut Engine| {
            Box::pin(async move {
                write_roce(e, &dev, port, change)
                    .await
                    .map_err(|err| explain(err, &dev, port, change))?;
                // A failed re-read leaves the setting made (and reports the failure).
                e.settle(&[&dev]).await
            })
        },
        // A setting that would be lost at the next reboot is not what was asked for.
        move |e: &mut Engine, ()| {
            Box::pin(async move {
                let name = undo_name;
                let undo = if previous == change {
                    Ok(())
                } else {
                    write_roce(e, &name, port, previous).await
                };
                let _ = e.settle(&[&name]).await;
                let (what, before) = (change.what(), previous.value());
                match undo {
                    Ok(()) => Ok(format!(
                        "the {what} of {name} port {port} was set back to {before}"
                    )),
                    Err(u) => Err(format!(
                        "setting the {what} of {name} port {port} back to {before} also failed ({u})"
                    )),
                }
            })
        },
    )
    .await?;
    tx.check(eng, "save roce.toml", move |e: &mut Engine| {
        Box::pin(e.persist(persisted))
    })
    .await?;
    tx.commit();
    // RocePersisted of the port follows the file.
    eng.publish(Dirty {
        devices: BTreeSet::from([index]),
        ..Dirty::default()
    })
    .await;
    Ok(())
}

/// The kernel's current value of the setting `like` names.
async fn read_roce(
    eng: &Engine,
    dev: &str,
    port: u32,
    like: RoceChange,
) -> Result<RoceChange, HostError> {
    Ok(match like {
        RoceChange::Mode(_) => RoceChange::Mode(eng.host.roce_mode(dev, port).await?),
        RoceChange::Tos(_) => RoceChange::Tos(eng.host.roce_tos(dev, port).await?),
    })
}

async fn write_roce(eng: &Engine, dev: &str, port: u32, c: RoceChange) -> Result<(), HostError> {
    match c {
        RoceChange::Mode(m) => eng.host.set_roce_mode(dev, port, m).await,
        RoceChange::Tos(t) => eng.host.set_roce_tos(dev, port, t).await,
    }
}

/// Writes what `roce.toml` holds for the RoCE ports of devices that appeared, where the
/// kernel reads something else. Failures are logged; nothing is retried until the
/// device appears again.
pub(super) async fn restore_roce(eng: &mut Engine, appeared: &Appeared) {
    let Ok(persisted) = eng.config::<RoceSettings>() else {
        return;
    };
    if persisted.ports.is_empty() {
        return;
    }
    let mut work: Vec<(String, u32, RoceChange)> = Vec::new();
    for d in eng.state.devices.values() {
        if !appeared.device(d.name()) {
            continue;
        }
        let Ok(guid) = d.snap.node_guid.clone() else {
            continue;
        };
        for (port, now) in &d.roce {
            let Some(entry) = persisted.entry(guid, *port) else {
                continue;
            };
            if let Some(m) = entry.roce_mode() {
                if now.mode.as_ref().ok() != Some(&m) {
                    let refused = d
                        .snap
                        .port(*port)
                        .and_then(|p| check_supported(d.name(), p, m).err());
                    match refused {
                        Some(why) => warn!(device = %d.name(), port, error = %why,
                            "not re-applying the remembered RoCE mode"),
                        None => work.push((d.name().to_string(), *port, RoceChange::Mode(m))),
                    }
                }
            }
            if let Some(t) = entry.tos {
                if now.tos.as_ref().ok() != Some(&t) {
                    work.push((d.name().to_string(), *port, RoceChange::Tos(t)));
                }
            }
        }
    }
    let mut touched: BTreeSet<String> = BTreeSet::new();
    for (dev, port, change) in work {
        match write_roce(eng, &dev, port, change).await {
            Ok(()) => {
                info!(device = %dev, port, setting = change.what(), value = %change.value(),
                    "re-applied remembered RoCE setting");
                touched.insert(dev);
            }
            Err(e) => {
                let why = explain(e, &dev, port, change);
                warn!(device = %dev, port, setting = change.what(), value = %change.value(),
                    error = %why, "could not re-apply remembered RoCE setting");
            }
        }
    }
    if !touched.is_empty() {
        let names: Vec<&str> = touched.iter().map(String::as_str).collect();
        if let Err(e) = eng.settle(&names).await {
            warn!(error = %e, "re-reading devices after re-applying RoCE settings failed");
        }
    }
}

/// A configfs error in the words of the operation.
fn explain(e: HostError, dev: &str, port: u32, change: RoceChange) -> OpError {
    let what = change.what();
    if let HostError::Unsupported { why, .. } = &e {
        return OpError::NotSupported(format!("cannot set the {what} of {dev} port {port}: {why}"));
    }
    if let HostError::NotFound(_) = &e {
        return OpError::NotFound(format!(
            "{dev} port {port} has no rdma_cm configfs directory ({e}); the device may have gone"
        ));
    }
    match (e.errno(), change) {
        (Some(Errno::ENODEV | Errno::ENOENT), _) => OpError::NotFound(format!(
            "{dev} vanished or was renamed while its {what} was being set (configfs answered {}); nothing was changed",
            e.errno().map(|n| n.name()).unwrap_or_default()
        )),
        (Some(Errno::EINVAL), RoceChange::Mode(m)) => OpError::NotSupported(format!(
            "the kernel refused {} on {dev} port {port} (EINVAL): rdma_cm accepts only the RoCE versions the port supports (its RoceModes)",
            m.label()
        )),
        (Some(Errno::EINVAL), RoceChange::Tos(t)) => OpError::InvalidArgument(format!(
            "the kernel refused ToS {t} on {dev} port {port} (EINVAL)"
        )),
        _ => OpError::Failed(format!("setting the {what} of {dev} port {port}: {e}")),
    }
}
