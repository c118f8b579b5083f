//! SR-IOV VF GUIDs: set on request through the PF's netdev (rtnetlink, as `ip link set <pf>
//! vf N node_guid G port_guid G`), taken by the VF's driver through a rebind, read back,
//! persisted in `vf-guids.toml` by the PF's node GUID and the VF index, and set again when
//! the PF or the VF appears (the VFs were created again, the host rebooted).
//!
//! The kernel has no "no GUID" to go back to (zero breaks RDMA): forgetting a VF's GUIDs
//! leaves the current ones in the driver until the VFs are destroyed.

use std::collections::BTreeSet;

use tracing::{info, warn};

use crate::config::VfGuidSettings;
use crate::kernel::sriov::{SriovPf, VfState};
use crate::kernel::HostError;
use crate::model::Guid;
use rdma_manager_model::state::{VfEntry, VfStep};
use rdma_manager_model::vf_guid::{
    check_request, ip_form, parse_vf_guid, GuidKind, TakenGuid, VfGuidContext, VfGuidError,
};

use super::state::ObservedState;
use super::transaction::Transaction;
use super::wanted::Appeared;
use super::{Dirty, Engine, EngineHandle, OpError};

/// The state document's `sriov-vfs` list: the VFs the SR-IOV PFs have enabled, with the GUIDs their drivers hold (none shown where
/// the driver holds none or does not report them).
pub(super) fn vf_entries(st: &ObservedState) -> Vec<VfEntry> {
    use rdma_manager_model::vf_guid::ip_form;
    let mut out = Vec::new();
    for d in st.devices.values() {
        let Some(pf) = &d.sriov else { continue };
        for v in pf.vfs.iter().filter(|v| v.vf < pf.numvfs) {
            let (node_guid, port_guid) = match (v.node_guid, v.port_guid) {
                (Some(n), Some(p)) => (Some(ip_form(n.0)), Some(ip_form(p.0))),
                _ => (None, None),
            };
            out.push(VfEntry {
                device: d.name().to_string(),
                vf: v.vf,
                node_guid,
                port_guid,
            });
        }
    }
    out.sort_by(|a, b| (&a.device, a.vf).cmp(&(&b.device, b.vf)));
    out
}

impl EngineHandle {
    /// Runs a step of the state's `sriov-vfs` list through the job of its one-shot method.
    pub(super) async fn run_vf_step(&self, step: VfStep) -> Result<(), OpError> {
        match step {
            VfStep::SetGuids {
                device,
                vf,
                node_guid,
                port_guid,
            } => {
                let index = self.device_index(&device).await?;
                self.set_vf_guids(index, vf, &node_guid, &port_guid).await
            }
            VfStep::ResetGuids { device, vf } => {
                let index = self.device_index(&device).await?;
                self.reset_vf_guids(index, vf).await
            }
        }
    }

    /// Sets VF `vf`'s node and port GUID on the PF with kernel index `index`, rebinds the VF
    /// and remembers them. GUIDs as `ip link` (`00:11:...`) or sysfs (`0011:2233:...`) write them.
    pub async fn set_vf_guids(
        &self,
        index: u32,
        vf: u32,
        node_guid: &str,
        port_guid: &str,
    ) -> Result<(), OpError> {
        let node = parse_vf_guid(GuidKind::Node, node_guid).map_err(refused)?;
        let port = parse_vf_guid(GuidKind::Port, port_guid).map_err(refused)?;
        self.call(move |e| {
            Box::pin(async move { set_vf_guids(e, index, vf, Guid(node), Guid(port)).await })
        })
        .await
    }

    /// Forgets the GUIDs remembered for VF `vf` of the PF with kernel index `index`.
    pub async fn reset_vf_guids(&self, index: u32, vf: u32) -> Result<(), OpError> {
        self.call(move |e| Box::pin(async move { reset_vf_guids(e, index, vf).await }))
            .await
    }
}

/// A request the rules refuse: a duplicate is AlreadyExists, the rest InvalidArgument.
fn refused(e: VfGuidError) -> OpError {
    match e {
        VfGuidError::Duplicate { .. } => OpError::AlreadyExists(e.to_string()),
        _ => OpError::InvalidArgument(e.to_string()),
    }
}

/// The PF's name and node GUID, and its VFs as the kernel reads them now.
async fn pf_of(eng: &Engine, index: u32) -> Result<(String, Guid, SriovPf), OpError> {
    let dev = eng.state.devices.get(&index).ok_or_else(|| {
        OpError::NotFound(format!(
            "there is no RDMA device with index {index} any more (it was removed)"
        ))
    })?;
    let name = dev.name().to_string();
    let guid = dev.snap.node_guid.clone().map_err(|e| {
        OpError::Failed(format!(
            "the node GUID of {name} cannot be read ({e}); VF GUIDs are remembered by it, so nothing was changed"
        ))
    })?;
    let pf = eng
        .host
        .read_sriov(&name)
        .await
        .map_err(OpError::from_host)?
        .ok_or_else(|| {
            refused(VfGuidError::NotSriov {
                device: name.clone(),
            })
        })?;
    Ok((name, guid, pf))
}

/// Every GUID on the host that VF `vf` of `pf` must not take: the devices' node and port
/// GUIDs (the VF's own device left out), the other VFs' GUIDs now, and those remembered for
/// other VFs.
fn taken(
    eng: &Engine,
    pf: &SriovPf,
    pf_guid: Guid,
    vf: u32,
    saved: &VfGuidSettings,
) -> Vec<TakenGuid> {
    let own_pci = pf
        .vfs
        .iter()
        .find(|v| v.vf == vf)
        .and_then(|v| v.pci.clone());
    let mut out = Vec::new();
    for d in eng.state.devices.values() {
        if own_pci.is_some() && d.snap.pci_address == own_pci {
            continue;
        }
        if let Ok(g) = d.snap.node_guid {
            out.push(TakenGuid {
                guid: g.0,
                owner: format!("the node GUID of {}", d.name()),
            });
        }
        for p in &d.snap.ports {
            if let Some(g) = p.port_guid() {
                out.push(TakenGuid {
                    guid: g.0,
                    owner: format!("the port GUID of {} port {}", d.name(), p.number),
                });
            }
        }
        for v in d.sriov.iter().flat_map(|s| &s.vfs) {
            if d.name() == pf.device && v.vf == vf {
                continue;
            }
            for (g, what) in [(v.node_guid, "node"), (v.port_guid, "port")] {
                if let Some(g) = g {
                    out.push(TakenGuid {
                        guid: g.0,
                        owner: format!("the {what} GUID of VF {} of {}", v.vf, d.name()),
                    });
                }
            }
        }
    }
    for e in &saved.vfs {
        if e.vf == vf && e.pf().ok() == Some(pf_guid) {
            continue;
        }
        if let Ok((n, p)) = e.guids() {
            for g in [n, p] {
                out.push(TakenGuid {
                    guid: g.0,
                    owner: format!(
                        "remembered for VF {} of the PF with node GUID {}",
                        e.vf, e.pf_node_guid
                    ),
                });
            }
        }
    }
    out
}

async fn set_vf_guids(
    eng: &mut Engine,
    index: u32,
    vf: u32,
    node: Guid,
    port: Guid,
) -> Result<(), OpError> {
    let (name, pf_guid, pf) = pf_of(eng, index).await?;
    let mut saved: VfGuidSettings = eng.config()?;
    let ctx = VfGuidContext {
        device: name.clone(),
        numvfs: pf.numvfs,
        taken: taken(eng, &pf, pf_guid, vf, &saved),
    };
    check_request(&ctx, vf, node.0, port.0).map_err(refused)?;
    let netdev = pf.netdev.clone().ok_or_else(|| {
        OpError::NotSupported(format!(
            "{name} has no network interface; VF GUIDs are set through the PF's IPoIB interface"
        ))
    })?;
    let state = pf
        .vfs
        .iter()
        .find(|v| v.vf == vf)
        .cloned()
        .unwrap_or(VfState {
            vf,
            pci: None,
            driver: None,
            node_guid: None,
            port_guid: None,
            reported: false,
        });
    let vf_dev = vf_device(eng, &state);
    saved.set(pf_guid, vf, node, port);

    let mut tx = Transaction::new(format!("set the GUIDs of VF {vf} of {name}"));
    let (nd, undo_nd) = (netdev.clone(), netdev.clone());
    let (before, pci) = (state.clone(), state.pci.clone());
    tx.step(
        eng,
        "set the VF GUIDs",
        move |e: &mut Engine| {
            Box::pin(async move {
                e.host
                    .set_vf_guids(&nd, vf, node, port)
                    .await
                    .map_err(OpError::from_host)
            })
        },
        move |e: &mut Engine, ()| {
            Box::pin(async move {
                let (Some(n), Some(p)) = (before.node_guid, before.port_guid) else {
                    return Err(format!(
                        "VF {vf} had no GUIDs before and the kernel has none to go back to: it keeps {} / {} until its VFs are destroyed",
                        ip_form(node.0),
                        ip_form(port.0)
                    ));
                };
                let back = e.host.set_vf_guids(&undo_nd, vf, n, p).await;
                let rebound = match (&back, &before.pci) {
                    (Ok(()), Some(pci)) => e.host.rebind_vf(pci).await.map(|_| ()),
                    _ => Ok(()),
                };
                match back.and(rebound) {
                    Ok(()) => Ok(format!(
                        "VF {vf} has its GUIDs {} / {} again",
                        ip_form(n.0),
                        ip_form(p.0)
                    )),
                    Err(u) => Err(format!("setting the GUIDs of VF {vf} back also failed ({u})")),
                }
            })
        },
    )
    .await?;
    if let (Some(pci), Some(_)) = (pci.clone(), state.driver.as_ref()) {
        tx.check(eng, "rebind the VF", move |e: &mut Engine| {
            Box::pin(async move {
                e.host
                    .rebind_vf(&pci)
                    .await
                    .map(|_| ())
                    .map_err(|err: HostError| {
                        OpError::Failed(format!("rebinding VF {vf} ({pci}) failed: {err}"))
                    })
            })
        })
        .await?;
    }
    let read_name = name.clone();
    tx.check(eng, "read back", move |e: &mut Engine| {
        Box::pin(async move { verify(e, &read_name, vf, node, port).await })
    })
    .await?;
    tx.check(eng, "save vf-guids.toml", move |e: &mut Engine| {
        Box::pin(e.persist(saved))
    })
    .await?;
    tx.commit();
    let mut names = vec![name.clone()];
    names.extend(vf_dev);
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    if let Err(e) = eng.settle(&refs).await {
        warn!(device = %name, error = %e, "re-reading after setting VF GUIDs");
    }
    eng.publish(Dirty {
        devices: BTreeSet::from([index]),
        ..Dirty::default()
    })
    .await;
    Ok(())
}

/// The RDMA device of a VF, by its PCI address.
fn vf_device(eng: &Engine, vf: &VfState) -> Option<String> {
    let pci = vf.pci.as_ref()?;
    eng.state
        .devices
        .values()
        .find(|d| d.snap.pci_address.as_ref() == Some(pci))
        .map(|d| d.name().to_string())
}

/// Reads the VF's GUIDs back from the PF's driver. A driver that reports none
/// (no `ndo_get_vf_guid`) cannot be checked; that is logged, not refused.
async fn verify(eng: &Engine, pf: &str, vf: u32, node: Guid, port: Guid) -> Result<(), OpError> {
    let now = eng
        .host
        .read_sriov(pf)
        .await
        .map_err(OpError::from_host)?
        .and_then(|p| p.vfs.into_iter().find(|v| v.vf == vf));
    match now {
        Some(v) if !v.reported => {
            info!(device = %pf, vf, "the driver does not report VF GUIDs; not verified");
            Ok(())
        }
        Some(v) if v.node_guid == Some(node) && v.port_guid == Some(port) => Ok(()),
        other => Err(OpError::Failed(format!(
            "after setting, the driver of {pf} reports {} for VF {vf} instead of {} / {}",
            match other {
                Some(v) => format!("{} / {}", show(v.node_guid), show(v.port_guid)),
                None => "no such VF".into(),
            },
            ip_form(node.0),
            ip_form(port.0)
        ))),
    }
}

fn show(g: Option<Guid>) -> String {
    g.map(|g| ip_form(g.0)).unwrap_or_else(|| "none".into())
}

async fn reset_vf_guids(eng: &mut Engine, index: u32, vf: u32) -> Result<(), OpError> {
    let dev = eng.state.devices.get(&index).ok_or_else(|| {
        OpError::NotFound(format!(
            "there is no RDMA device with index {index} any more (it was removed)"
        ))
    })?;
    let name = dev.name().to_string();
    let guid =
        dev.snap.node_guid.clone().map_err(|e| {
            OpError::Failed(format!("the node GUID of {name} cannot be read ({e})"))
        })?;
    let mut saved: VfGuidSettings = eng.config()?;
    if !saved.remove(guid, vf) {
        return Err(OpError::NotFound(format!(
            "no GUIDs are remembered for VF {vf} of {name}"
        )));
    }
    eng.persist(saved).await?;
    eng.publish(Dirty {
        devices: BTreeSet::from([index]),
        ..Dirty::default()
    })
    .await;
    Ok(())
}

/// Sets the remembered GUIDs of the VFs of PFs that appeared, or of VFs that appeared,
/// where the PF's driver holds others, then rebinds those VFs. Failures are logged; nothing
/// is retried until the PF or the VF appears again.
pub(super) async fn restore_vf_guids(eng: &mut Engine, appeared: &Appeared) {
    let Ok(saved) = eng.config::<VfGuidSettings>() else {
        return;
    };
    if saved.vfs.is_empty() || appeared.is_empty() {
        return;
    }
    let pfs: Vec<(String, Guid)> = eng
        .state
        .devices
        .values()
        .filter_map(|d| {
            let g = d.snap.node_guid.clone().ok()?;
            saved.of_pf(g).next().map(|_| (d.name().to_string(), g))
        })
        .collect();
    let mut touched: BTreeSet<String> = BTreeSet::new();
    for (name, guid) in pfs {
        // The cached state may predate the VFs (created with sriov_numvfs since).
        let pf = match eng.host.read_sriov(&name).await {
            Ok(Some(pf)) => pf,
            Ok(None) => continue,
            Err(e) => {
                warn!(device = %name, error = %e, "reading the SR-IOV VFs to restore their GUIDs");
                continue;
            }
        };
        let Some(netdev) = pf.netdev.clone() else {
            continue;
        };
        for entry in saved.of_pf(guid) {
            let Ok((node, port)) = entry.guids() else {
                continue;
            };
            let Some(v) = pf.vfs.iter().find(|v| v.vf == entry.vf) else {
                warn!(device = %name, vf = entry.vf, numvfs = pf.numvfs,
                    "a VF with remembered GUIDs is not enabled");
                continue;
            };
            let vf_dev = vf_device(eng, v);
            let here =
                appeared.device(&name) || vf_dev.as_deref().is_some_and(|d| appeared.device(d));
            if !here {
                continue;
            }
            let needed = if v.reported {
                (v.node_guid, v.port_guid) != (Some(node), Some(port))
            } else {
                // A driver that does not report them: the VF's device says whether it has them.
                match &vf_dev {
                    Some(d) => eng
                        .state
                        .devices
                        .values()
                        .find(|x| x.name() == d)
                        .is_none_or(|x| x.snap.node_guid.as_ref().ok() != Some(&node)),
                    None => true,
                }
            };
            if !needed {
                continue;
            }
            let set = eng.host.set_vf_guids(&netdev, entry.vf, node, port).await;
            let rebound = match (&set, &v.pci, &v.driver) {
                (Ok(()), Some(pci), Some(_)) => eng.host.rebind_vf(pci).await.map(|_| ()),
                _ => Ok(()),
            };
            match set.and(rebound) {
                Ok(()) => {
                    info!(device = %name, vf = entry.vf, node_guid = %ip_form(node.0),
                        port_guid = %ip_form(port.0), "re-applied remembered VF GUIDs");
                    touched.insert(name.clone());
                }
                Err(e) => warn!(device = %name, vf = entry.vf, error = %e,
                    "could not re-apply remembered VF GUIDs"),
            }
        }
    }
    if !touched.is_empty() {
        let names: Vec<&str> = touched.iter().map(String::as_str).collect();
        if let Err(e) = eng.settle(&names).await {
            warn!(error = %e, "re-reading PFs after re-applying VF GUIDs failed");
        }
    }
}
