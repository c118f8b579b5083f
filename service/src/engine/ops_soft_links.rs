//! Soft RDMA links (`rdma link add/delete`): created and removed on request, persisted in
//! `soft-links.toml`, and re-created at start and when their network interface appears.

use tracing::{info, warn};

use crate::config::{SoftLinkEntry, SoftLinks};
use crate::kernel::{HostError, NewLink};
use crate::model::names::{validate_netdev_name, validate_rdma_name};
use crate::model::softlink::{classify_newlink_error, NewLinkContext};
use crate::model::{DeviceKind, SoftLinkType};

use super::state::ObservedState;
use super::transaction::Transaction;
use super::wanted::Appeared;
use super::{Engine, EngineHandle, OpError};
use rdma_manager_dbus::text::quote_capped;
use rdma_manager_model::state;

/// The state document's `soft-links` list: the rxe and siw devices, by name.
pub(super) fn soft_link_entries(st: &ObservedState) -> Vec<state::SoftLinkEntry> {
    let mut out: Vec<state::SoftLinkEntry> = st
        .devices
        .values()
        .filter_map(|d| {
            let kind = match d.snap.kind {
                DeviceKind::Rxe => state::SoftLinkKind::Rxe,
                DeviceKind::Siw => state::SoftLinkKind::Siw,
                _ => return None,
            };
            Some(state::SoftLinkEntry {
                name: d.name().to_string(),
                kind: Some(kind),
                netdev: d.snap.parent_netdev.clone(),
                state: None,
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

impl EngineHandle {
    /// Runs a step of the state's `soft-links` list through the job of its one-shot method.
    pub(super) async fn run_link_step(&self, step: state::LinkStep) -> Result<(), OpError> {
        match step {
            state::LinkStep::Add { name, kind, netdev } => self
                .add_soft_link(&name, kind.as_str(), &netdev)
                .await
                .map(drop),
            state::LinkStep::Remove { name } => self.remove_soft_link(&name).await,
        }
    }

    /// Creates an rxe or siw device (`rdma link add NAME type TYPE netdev NETDEV`) and
    /// remembers it; returns the new device's kernel index once it is published.
    pub async fn add_soft_link(
        &self,
        name: &str,
        kind: &str,
        netdev: &str,
    ) -> Result<u32, OpError> {
        let (name, kind, netdev) = (name.to_string(), kind.to_string(), netdev.to_string());
        self.call(move |e| Box::pin(async move { add_soft_link(e, &name, &kind, &netdev).await }))
            .await
    }

    /// Removes an rxe or siw device (`rdma link delete NAME`) and forgets it.
    pub async fn remove_soft_link(&self, name: &str) -> Result<(), OpError> {
        let name = name.to_string();
        self.call(move |e| Box::pin(async move { remove_soft_link(e, &name).await }))
            .await
    }
}

fn check_names(name: &str, netdev: Option<&str>) -> Result<(), OpError> {
    validate_rdma_name(name).map_err(|e| {
        OpError::InvalidArgument(format!(
            "{e} (RDMA device name {name_q})",
            name_q = quote_capped(name)
        ))
    })?;
    if let Some(netdev) = netdev {
        validate_netdev_name(netdev).map_err(|e| {
            OpError::InvalidArgument(format!(
                "{e} (network interface name {netdev_q})",
                netdev_q = quote_capped(netdev)
            ))
        })?;
    }
    Ok(())
}

pub(super) async fn add_soft_link(
    eng: &mut Engine,
    name: &str,
    kind: &str,
    netdev: &str,
) -> Result<u32, OpError> {
    let kind = SoftLinkType::parse(kind).ok_or_else(|| {
        OpError::InvalidArgument(format!(
            "link type {kind_q} is not known; use \"rxe\" (Soft-RoCE) or \"siw\" (Soft-iWARP)",
            kind_q = quote_capped(kind)
        ))
    })?;
    check_names(name, Some(netdev))?;
    let mut persisted: SoftLinks = eng.config()?;
    let link = NewLink {
        name: name.to_string(),
        kind,
        netdev: netdev.to_string(),
    };
    // An older entry for this name or over this netdev is replaced by the link just made.
    persisted
        .links
        .retain(|l| l.name != link.name && l.netdev != link.netdev);
    persisted.links.push(SoftLinkEntry {
        name: link.name.clone(),
        kind,
        netdev: link.netdev.clone(),
    });
    let mut tx = Transaction::new(format!("add soft link {name}"));
    let made = name.to_string();
    let index = tx
        .step(
            eng,
            "create and publish the link",
            move |e: &mut Engine| {
                Box::pin(async move {
                    if let Err(err) = e.host.add_link(&link).await {
                        return Err(explain_newlink(e, err, &link).await);
                    }
                    let name = link.name.as_str();
                    e.settle(&[name]).await?;
                    e.state.device_by_name(name).map(|d| d.index).ok_or_else(|| {
                        OpError::Failed(format!(
                            "the kernel accepted {name} but it vanished before it could be published"
                        ))
                    })
                })
            },
            // A link that would not survive a reboot is not what was asked for.
            move |e: &mut Engine, index: u32| {
                Box::pin(async move {
                    let undo = e.host.delete_link(index).await;
                    let _ = e.settle(&[&made]).await;
                    match undo {
                        Ok(()) => Ok(format!("{made} was removed again")),
                        Err(u) => Err(format!(
                            "removing {made} again also failed ({u}): remove it with `rdma link delete {made}`"
                        )),
                    }
                })
            },
        )
        .await?;
    tx.check(eng, "save soft-links.toml", move |e: &mut Engine| {
        Box::pin(e.persist(persisted))
    })
    .await?;
    tx.commit();
    Ok(index)
}

/// Gives a NEWLINK errno its meaning from what the host looks like now.
async fn explain_newlink(eng: &Engine, e: HostError, link: &NewLink) -> OpError {
    let Some(errno) = e.errno() else {
        return OpError::from_host(e);
    };
    let devices: Vec<String> = match eng.host.rdma_device_names().await {
        Ok(d) => d,
        Err(_) => eng
            .state
            .devices
            .values()
            .map(|d| d.name().to_string())
            .collect(),
    };
    let nd = eng.host.read_netdev(&link.netdev).await.ok();
    let existing_on_netdev = eng
        .state
        .devices
        .values()
        .find(|d| d.snap.parent_netdev.as_deref() == Some(link.netdev.as_str()))
        .map(|d| d.name().to_string());
    let type_loaded = eng
        .host
        .module_loaded(link.kind.module())
        .await
        .unwrap_or(false);
    let ctx = NewLinkContext {
        name: &link.name,
        kind: link.kind,
        netdev: &link.netdev,
        devices: &devices,
        existing_on_netdev,
        netdev_exists: nd.is_some(),
        netdev_is_vlan: nd.as_ref().is_some_and(|n| n.is_vlan()),
        type_loaded,
    };
    classify_newlink_error(errno, &ctx).into()
}

pub(super) async fn remove_soft_link(eng: &mut Engine, name: &str) -> Result<(), OpError> {
    check_names(name, None)?;
    let mut persisted: SoftLinks = eng.config()?;
    let entry = persisted.by_name(name).cloned();
    persisted.links.retain(|l| l.name != name);
    let Some(dev) = eng.state.device_by_name(name) else {
        // Not present (its netdev is gone, say): forgetting it is all there is to do.
        return match entry {
            Some(_) => eng.persist(persisted).await,
            None => Err(OpError::NotFound(format!(
                "there is no RDMA device named {name_q} and no remembered soft link of that name",
                name_q = quote_capped(name)
            ))),
        };
    };
    let (kind, netdev) = match (dev.snap.kind, dev.snap.parent_netdev.clone()) {
        (DeviceKind::Rxe, Some(n)) => (SoftLinkType::Rxe, n),
        (DeviceKind::Siw, Some(n)) => (SoftLinkType::Siw, n),
        _ => {
            return Err(OpError::InvalidArgument(format!(
                "{name} is not a soft RDMA link (rxe or siw); hardware devices go away with their driver, not with RemoveSoftLink"
            )))
        }
    };
    let index = dev.index;
    let mut tx = Transaction::new(format!("remove soft link {name}"));
    let gone = name.to_string();
    let again = NewLink {
        name: name.to_string(),
        kind,
        netdev,
    };
    tx.step(
        eng,
        "delete and publish the link",
        move |e: &mut Engine| {
            Box::pin(async move {
                let name = gone.as_str();
                if let Err(err) = e.host.delete_link(index).await {
                    // DELLINK on an index that is gone is EINVAL: say what happened instead.
                    let still_there = e
                        .host
                        .rdma_device_names()
                        .await
                        .map(|n| n.iter().any(|d| d == name))
                        .unwrap_or(true);
                    let _ = e.settle(&[name]).await;
                    return Err(if still_there {
                        OpError::from_host(err)
                    } else {
                        OpError::NotFound(format!(
                            "{name} disappeared while it was being removed (its netdev went away, or someone else deleted it)"
                        ))
                    });
                }
                e.settle(&[name]).await
            })
        },
        // It would come back at the next start anyway, so put it back now.
        move |e: &mut Engine, ()| {
            Box::pin(async move {
                let undo = e.host.add_link(&again).await;
                let name = again.name;
                let _ = e.settle(&[&name]).await;
                match undo {
                    Ok(()) => Ok(format!("{name} was created again")),
                    Err(u) => Err(format!(
                        "creating {name} again also failed ({u}); it will be re-created at the next start"
                    )),
                }
            })
        },
    )
    .await?;
    tx.check(eng, "save soft-links.toml", move |e: &mut Engine| {
        Box::pin(e.persist(persisted))
    })
    .await?;
    tx.commit();
    Ok(())
}

/// Re-creates remembered links that are missing when their netdev has appeared.
pub(super) async fn restore_soft_links(eng: &mut Engine, appeared: &Appeared) {
    let Ok(persisted) = eng.config::<SoftLinks>() else {
        return;
    };
    for entry in persisted.links {
        if !appeared.netdev(&entry.netdev) || eng.state.device_by_name(&entry.name).is_some() {
            continue;
        }
        if eng.host.read_netdev(&entry.netdev).await.is_err() {
            continue; // Not there (yet): its appearance will bring us back.
        }
        if let Some(other) = eng
            .state
            .devices
            .values()
            .find(|d| d.snap.parent_netdev.as_deref() == Some(entry.netdev.as_str()))
        {
            warn!(link = %entry.name, netdev = %entry.netdev, existing = %other.name(),
                "not re-creating the remembered soft link: the netdev already carries one");
            continue;
        }
        let link = NewLink {
            name: entry.name.clone(),
            kind: entry.kind,
            netdev: entry.netdev.clone(),
        };
        match eng.host.add_link(&link).await {
            Ok(()) => {
                info!(link = %entry.name, kind = entry.kind.as_str(), netdev = %entry.netdev,
                    "re-created remembered soft link");
                if let Err(e) = eng.settle(&[&entry.name]).await {
                    warn!(link = %entry.name, error = %e, "re-reading the re-created link failed");
                }
            }
            Err(e) => {
                let why = explain_newlink(eng, e, &link).await;
                warn!(link = %entry.name, netdev = %entry.netdev, error = %why,
                    "could not re-create remembered soft link");
            }
        }
    }
}
