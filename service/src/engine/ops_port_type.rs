//! The port type of VPI adapters' ports (InfiniBand or Ethernet): read when a device
//! appears, set on request, persisted for mlx4 in rdma-core's own `/etc/rdma/mlx4.conf`
//! (which rdma-core's hook also applies when mlx4_core loads) and re-applied from it when
//! the device appears.
//!
//! mlx4 changes at run time: the driver re-registers the device, whose ports come back with
//! their new link layer. mlx5 holds the type in firmware: the change is staged for the next
//! boot and published as such (`PortTypeNext`, `PortTypeRebootNeeded`); the daemon keeps no
//! file of its own for it, the firmware being the persistent store.

use std::collections::BTreeSet;
use std::path::Path;

use tracing::{info, warn};

use rdma_manager_model::port_type::{
    check_mlx4, mlx4_after, mlx4_conf_get, mlx4_conf_set, Mlx4PortValue, PortType, MLX4_CONF_HEADER,
};

use rdma_manager_model::state::{PortEntry, PortStep};

use crate::kernel::port_type::{PortTypeControl, PortTypes};
use crate::kernel::{Host, HostError};
use crate::model::DeviceKind;

use super::state::ObservedState;
use super::transaction::Transaction;
use super::wanted::Appeared;
use super::{Dirty, Engine, EngineHandle, OpError};

/// rdma-core's file of mlx4 port types (`<bdf> <p1> [p2]` lines).
pub const MLX4_CONF: &str = "/etc/rdma/mlx4.conf";

/// The state document's `ports` list: the port types of the ports that have one: for firmware, the value the firmware holds
/// for the next boot, which is what a set changes.
pub(super) fn port_entries(st: &ObservedState) -> Vec<PortEntry> {
    let mut out = Vec::new();
    for (index, t) in &st.port_types {
        let Some(d) = st.devices.get(index) else {
            continue;
        };
        for p in &t.ports {
            out.push(PortEntry {
                device: d.name().to_string(),
                port: p.port,
                kind: Some(p.next_boot.unwrap_or(p.configured)),
            });
        }
    }
    out.sort_by(|a, b| (&a.device, a.port).cmp(&(&b.device, b.port)));
    out
}

impl EngineHandle {
    /// Runs a step of the state's `ports` list through the job of its one-shot method.
    pub(super) async fn run_port_step(&self, step: PortStep) -> Result<(), OpError> {
        match step {
            PortStep::SetType {
                device,
                port,
                port_type,
            } => {
                let index = self.device_index(&device).await?;
                self.set_port_type(index, port, port_type.as_str()).await
            }
        }
    }

    /// Sets a port's type (`ib`, `eth` or `auto`): now on mlx4 (and remembered in
    /// mlx4.conf), for the next boot on mlx5. `index` is the kernel device index.
    pub async fn set_port_type(&self, index: u32, port: u32, ty: &str) -> Result<(), OpError> {
        let ty = PortType::parse(ty).map_err(|e| OpError::InvalidArgument(e.to_string()))?;
        self.call(move |e| Box::pin(async move { set_port_type(e, index, port, ty).await }))
            .await
    }
}

/// The mlx4 values of a runtime reading (what the sysfs files said).
fn mlx4_values(t: &PortTypes) -> Vec<Mlx4PortValue> {
    t.ports
        .iter()
        .filter_map(|p| {
            Some(Mlx4PortValue {
                configured: p.configured,
                running: p.running?,
            })
        })
        .collect()
}

async fn set_port_type(
    eng: &mut Engine,
    index: u32,
    port: u32,
    ty: PortType,
) -> Result<(), OpError> {
    let dev = eng.state.devices.get(&index).ok_or_else(|| {
        OpError::NotFound(format!(
            "there is no RDMA device with index {index} any more (it was removed)"
        ))
    })?;
    let name = dev.name().to_string();
    if dev.snap.port(port).is_none() {
        return Err(OpError::NotFound(format!("{name} has no port {port}")));
    }
    let pci = match (&dev.snap.kind, &dev.snap.pci_address) {
        (DeviceKind::Hardware, Some(pci)) => pci.clone(),
        _ => {
            return Err(OpError::NotSupported(format!(
                "{name} is not a PCI adapter: a software device (rxe, siw) runs the link layer of its network interface and has no port type"
            )))
        }
    };
    let now = eng
        .host
        .port_types(&pci)
        .await
        .map_err(|e| explain(e, &name, port, ty))?;
    let result = match now.control {
        PortTypeControl::Firmware => set_firmware(eng, &name, &pci, port, ty).await,
        PortTypeControl::Runtime => set_mlx4(eng, &name, &pci, port, ty, &now).await,
    };
    // What the driver or firmware says now, whatever happened.
    refresh(eng, index, &pci).await;
    result
}

async fn set_firmware(
    eng: &mut Engine,
    name: &str,
    pci: &str,
    port: u32,
    ty: PortType,
) -> Result<(), OpError> {
    eng.host
        .set_port_type(pci, port, ty)
        .await
        .map_err(|e| explain(e, name, port, ty))?;
    info!(device = %name, port, port_type = %ty, "staged the port type in firmware; it takes effect at the next boot");
    Ok(())
}

async fn set_mlx4(
    eng: &mut Engine,
    name: &str,
    pci: &str,
    port: u32,
    ty: PortType,
    now: &PortTypes,
) -> Result<(), OpError> {
    let values = mlx4_values(now);
    check_mlx4(&values, port, ty).map_err(|e| {
        OpError::NotSupported(format!(
            "cannot set {name} port {port} to {ty}: {e}; nothing was changed"
        ))
    })?;
    let previous = now
        .port(port)
        .map(|p| p.configured)
        .ok_or_else(|| OpError::NotFound(format!("{name} has no port {port}")))?;
    // mlx4.conf after the change: every port's setting, as rdma-core writes a line.
    let mut wanted: Vec<PortType> = values.iter().map(|v| v.configured).collect();
    if let Some(w) = wanted.get_mut(port as usize - 1) {
        *w = ty;
    }
    let path = Path::new(MLX4_CONF);
    let before = eng.host.read_file(path).await.map_err(|e| {
        OpError::Failed(format!(
            "{MLX4_CONF} cannot be read ({e}); the setting would be remembered there, so nothing was changed"
        ))
    })?;
    let text = match &before {
        Some(b) => String::from_utf8(b.clone()).map_err(|_| {
            OpError::Failed(format!(
                "{MLX4_CONF} is not text; it was left alone and nothing was changed"
            ))
        })?,
        None => MLX4_CONF_HEADER.to_string(),
    };
    let after = mlx4_conf_set(&text, pci, &wanted);

    let mut tx = Transaction::new(format!("set the port type of {name} port {port}"));
    let (set_pci, undo_pci) = (pci.to_string(), pci.to_string());
    let (set_name, undo_name) = (name.to_string(), name.to_string());
    tx.step(
        eng,
        "write mlx4_port",
        move |e: &mut Engine| {
            Box::pin(async move {
                e.host
                    .set_port_type(&set_pci, port, ty)
                    .await
                    .map_err(|err| explain(err, &set_name, port, ty))
            })
        },
        move |e: &mut Engine, ()| {
            Box::pin(async move {
                match e.host.set_port_type(&undo_pci, port, previous).await {
                    Ok(()) => Ok(format!(
                        "{undo_name} port {port} was set back to {previous}"
                    )),
                    Err(u) => Err(format!(
                        "setting {undo_name} port {port} back to {previous} also failed ({u})"
                    )),
                }
            })
        },
    )
    .await?;
    tx.check(eng, "save mlx4.conf", move |e: &mut Engine| {
        Box::pin(async move {
            e.host
                .write_file_atomic(Path::new(MLX4_CONF), after.as_bytes())
                .await
                .map_err(|err| OpError::Failed(format!("saving {MLX4_CONF}: {err}")))
        })
    })
    .await?;
    tx.commit();
    info!(device = %name, port, port_type = %ty, "set the port type");
    Ok(())
}

/// Reads the device's port types into the state and re-reads the device (its ports' link
/// layers follow an mlx4 change), publishing both.
async fn refresh(eng: &mut Engine, index: u32, pci: &str) {
    let Some(name) = eng.state.devices.get(&index).map(|d| d.name().to_string()) else {
        return;
    };
    match eng.host.port_types(pci).await {
        Ok(t) => {
            eng.state.port_types.insert(index, t);
        }
        Err(e) => {
            warn!(device = %name, error = %e, "reading the port types failed");
            eng.state.port_types.remove(&index);
        }
    }
    if let Err(e) = eng.settle(&[&name]).await {
        warn!(device = %name, error = %e, "re-reading the device after its port type failed");
    }
    eng.publish(Dirty {
        devices: BTreeSet::from([index]),
        ..Dirty::default()
    })
    .await;
}

/// Reads the port types of every hardware device into `state`, as part of the host read, so
/// that the first model published (and `rdma-managerd show`) has them. A device whose driver
/// has none gets no entry; a failed read is logged and leaves none either.
pub(super) async fn read_port_types(host: &dyn Host, state: &mut ObservedState) {
    let devices: Vec<(u32, String, String)> = state
        .devices
        .values()
        .filter(|d| d.snap.kind == DeviceKind::Hardware)
        .filter_map(|d| Some((d.index, d.name().to_string(), d.snap.pci_address.clone()?)))
        .collect();
    for (index, name, pci) in devices {
        match host.port_types(&pci).await {
            Ok(t) => {
                state.port_types.insert(index, t);
            }
            Err(HostError::Unsupported { .. }) => {}
            Err(e) => warn!(device = %name, error = %e, "reading the port types failed"),
        }
    }
}

/// Reads the port types of the devices that appeared and applies what mlx4.conf holds for
/// them where the driver runs something else, port 2 first when port 1 is to be Ethernet
/// (the driver refuses port 1 eth while port 2 is ib), as rdma-core's hook does.
pub(super) async fn restore_port_types(eng: &mut Engine, appeared: &Appeared) {
    let devices: Vec<(u32, String, String)> = eng
        .state
        .devices
        .values()
        .filter(|d| appeared.device(d.name()) && d.snap.kind == DeviceKind::Hardware)
        .filter_map(|d| Some((d.index, d.name().to_string(), d.snap.pci_address.clone()?)))
        .collect();
    if devices.is_empty() {
        return;
    }
    let conf = match eng.host.read_file(Path::new(MLX4_CONF)).await {
        Ok(c) => c.map(|b| String::from_utf8_lossy(&b).into_owned()),
        Err(e) => {
            warn!(error = %e, "{MLX4_CONF} cannot be read; no port type is re-applied");
            None
        }
    };
    // Published at the end: the readings are new to the bus even where nothing changes.
    let read: BTreeSet<u32> = devices.iter().map(|(i, _, _)| *i).collect();
    for (index, name, pci) in devices {
        // At start the host read has just read them (`read_port_types`).
        let cached = appeared
            .start
            .then(|| eng.state.port_types.get(&index).cloned());
        let now = match cached.flatten() {
            Some(t) => Ok(t),
            None if appeared.start => continue,
            None => eng.host.port_types(&pci).await,
        };
        let now = match now {
            Ok(t) => t,
            Err(HostError::Unsupported { .. }) => {
                eng.state.port_types.remove(&index);
                continue;
            }
            Err(e) => {
                warn!(device = %name, error = %e, "reading the port types failed");
                continue;
            }
        };
        let wanted = conf.as_deref().and_then(|c| mlx4_conf_get(c, &pci));
        let (PortTypeControl::Runtime, Some(wanted)) = (now.control, wanted) else {
            eng.state.port_types.insert(index, now);
            continue;
        };
        let mut values = mlx4_values(&now);
        let mut order: Vec<u32> = (1..=values.len() as u32).collect();
        if wanted.first() == Some(&PortType::Eth) {
            order.reverse();
        }
        let mut changed = false;
        for port in order {
            let Some(&ty) = wanted.get(port as usize - 1) else {
                continue;
            };
            if values.get(port as usize - 1).map(|v| v.configured) == Some(ty) {
                continue;
            }
            if let Err(why) = check_mlx4(&values, port, ty) {
                warn!(device = %name, port, port_type = %ty, error = %why, "not re-applying the remembered port type");
                continue;
            }
            match eng.host.set_port_type(&pci, port, ty).await {
                Ok(()) => {
                    info!(device = %name, port, port_type = %ty, "re-applied the port type of {MLX4_CONF}");
                    if let Ok(after) = mlx4_after(&values, port, ty) {
                        for (v, r) in values.iter_mut().zip(after) {
                            v.running = r;
                        }
                    }
                    if let Some(v) = values.get_mut(port as usize - 1) {
                        v.configured = ty;
                    }
                    changed = true;
                }
                Err(e) => {
                    let why = explain(e, &name, port, ty);
                    warn!(device = %name, port, port_type = %ty, error = %why, "could not re-apply the port type of {MLX4_CONF}");
                }
            }
        }
        if changed {
            refresh(eng, index, &pci).await;
        } else {
            eng.state.port_types.insert(index, now);
        }
    }
    eng.publish(Dirty {
        devices: read,
        ..Dirty::default()
    })
    .await;
}

/// A host error in the words of the operation.
fn explain(e: HostError, dev: &str, port: u32, ty: PortType) -> OpError {
    if let HostError::Unsupported { what, why } = &e {
        return OpError::NotSupported(format!(
            "{dev} port {port} cannot be set to {ty}: {what} is not available: {why}"
        ));
    }
    if e.errno() == Some(crate::model::Errno(libc::EROFS)) {
        return OpError::NotSupported(format!(
            "{dev} port {port} cannot be set to {ty}: the driver's file is read-only here ({e}); the packaged unit's ProtectKernelTunables= makes /sys read-only, and mlx4's port files live under /sys/devices"
        ));
    }
    if crate::kernel::port_type::refused_by_driver(&e) {
        return OpError::NotSupported(format!(
            "the driver refused {ty} on {dev} port {port} ({e}): the card cannot run that combination of port types (some cards need both ports of one type, or cannot sense the type for auto)"
        ));
    }
    OpError::from_host(e)
}
