//! The simulated host's port types, as mlx4 and mlx5 hold them.
//!
//! - A ConnectX-3 (`hca_type` MT4099 or MT4103) is an mlx4 card: its
//!   `sys/bus/pci/drivers/mlx4_core/<bdf>/mlx4_port<N>` files are rendered from the ports'
//!   link layers and are the state itself (the real reader reads them). A write follows
//!   `__set_port_type`: an unknown word is EINVAL, port 1 Ethernet with port 2 InfiniBand is
//!   EOPNOTSUPP (ConnectX-3 cannot run it), and a change re-registers the device with the
//!   ports' new link layers: an Ethernet port loses its LIDs and takes RoCE GIDs (v1 and v2,
//!   link-local), an InfiniBand port the reverse. The netdevs are left as they are (the
//!   driver would replace the IPoIB interface by an Ethernet one).
//! - A later ConnectX (`MT41xx`) is an mlx5 function whose `LINK_TYPE_P<F+1>` lives in
//!   firmware: a set changes the next boot's value only, and the ports do not move.
//!   Without `mstconfig` (see [`SimHost::set_mstconfig_installed`]) both are refused as the
//!   real host refuses them.

use std::collections::BTreeMap;
use std::path::Path;

use rdma_manager_model::port_type::{check_mlx4, FwLinkType, Mlx4PortValue, PortType, RunningType};

use super::model::SimDevice;
use super::port::{SimGid, SimPort};
use super::{HostEvent, SimHost, SimState};
use crate::kernel::port_type::{
    firmware_readings, mlx4_dir, mlx4_readings, mlx5_dir, mstconfig_missing, no_port_type,
    read_mlx4, PortTypes,
};
use crate::kernel::sysfs::SysRoot;
use crate::kernel::{HostError, Op};
use crate::model::{Errno, GidType, LinkLayer};

/// What the simulated firmware of mlx5 functions holds, by PCI address.
#[derive(Debug, Clone, Default)]
pub(crate) struct SimPortTypes {
    /// (current, next boot) of each mlx5 function.
    firmware: BTreeMap<String, (FwLinkType, FwLinkType)>,
    /// Whether mstconfig is installed.
    pub(crate) mstconfig: bool,
}

fn is_mlx4(d: &SimDevice) -> bool {
    matches!(d.hca_type.as_deref(), Some("MT4099" | "MT4103"))
}

fn is_mlx5(d: &SimDevice) -> bool {
    !is_mlx4(d)
        && d.hca_type
            .as_deref()
            .is_some_and(|t| t.starts_with("MT41") || t.starts_with("MT42"))
        && d.pci_address.as_deref().is_some_and(|a| a.contains(':'))
}

fn running(p: &SimPort) -> RunningType {
    match p.link_layer {
        LinkLayer::InfiniBand => RunningType::Ib,
        _ => RunningType::Eth,
    }
}

impl SimPortTypes {
    /// The firmware of the spec's mlx5 functions, holding what their ports run.
    pub(crate) fn new(devices: &[SimDevice]) -> SimPortTypes {
        let firmware = devices
            .iter()
            .filter(|d| is_mlx5(d))
            .filter_map(|d| {
                let fw = match running(d.ports.first()?) {
                    RunningType::Ib => FwLinkType::Ib,
                    RunningType::Eth => FwLinkType::Eth,
                };
                Some((d.pci_address.clone()?, (fw, fw)))
            })
            .collect();
        SimPortTypes {
            firmware,
            mstconfig: true,
        }
    }
}

/// Renders the driver directories of the mlx4 and mlx5 functions, the mlx4 port files from
/// the ports' link layers: a host built again on the same tree is a driver loaded again,
/// which starts from what the card senses (rdma-core's hook or the daemon's restore then
/// applies `mlx4.conf`).
pub(crate) fn render(root: &Path, st: &SimState) -> std::io::Result<()> {
    let sys = SysRoot::new(root);
    for d in &st.spec.devices {
        let Some(pci) = d.pci_address.as_deref() else {
            continue;
        };
        if is_mlx4(d) {
            let dir = mlx4_dir(&sys, pci);
            std::fs::create_dir_all(&dir)?;
            for p in &d.ports {
                let f = dir.join(format!("mlx4_port{}", p.number));
                std::fs::write(f, format!("{}\n", running(p).as_str()))?;
            }
        } else if is_mlx5(d) {
            std::fs::create_dir_all(mlx5_dir(&sys, pci))?;
        }
    }
    Ok(())
}

fn device_by_pci<'a>(st: &'a SimState, pci: &str) -> Option<&'a SimDevice> {
    st.spec
        .devices
        .iter()
        .find(|d| d.pci_address.as_deref() == Some(pci))
}

impl SimHost {
    /// Installs or removes the simulated `mstconfig` (mlx5's firmware link type).
    pub fn set_mstconfig_installed(&self, installed: bool) {
        self.lock().port_types.mstconfig = installed;
    }

    /// The firmware's (current, next boot) link type of an mlx5 function.
    pub fn firmware_link_type(&self, pci: &str) -> Option<(FwLinkType, FwLinkType)> {
        self.lock().port_types.firmware.get(pci).copied()
    }

    /// A reboot of the simulated firmware: every staged link type becomes current.
    pub fn firmware_reboot(&self) {
        for (cur, next) in self.lock().port_types.firmware.values_mut() {
            *cur = *next;
        }
    }

    pub(super) fn sim_port_types(&self, pci: &str) -> Result<PortTypes, HostError> {
        let st = self.lock();
        let d = device_by_pci(&st, pci).ok_or_else(|| no_port_type(pci))?;
        if is_mlx4(d) {
            drop(st);
            return read_mlx4(self.sysroot(), pci)?
                .map(|v| mlx4_readings(&v))
                .ok_or_else(|| no_port_type(pci));
        }
        if !is_mlx5(d) {
            return Err(no_port_type(pci));
        }
        if !st.port_types.mstconfig {
            return Err(mstconfig_missing());
        }
        let (cur, next) = st
            .port_types
            .firmware
            .get(pci)
            .copied()
            .ok_or_else(|| no_port_type(pci))?;
        Ok(firmware_readings(Some(cur), next))
    }

    pub(super) fn sim_set_port_type(
        &self,
        pci: &str,
        port: u32,
        ty: PortType,
    ) -> Result<(), HostError> {
        let mut st = self.lock();
        let d = device_by_pci(&st, pci).ok_or_else(|| no_port_type(pci))?;
        if is_mlx5(d) {
            if !st.port_types.mstconfig {
                return Err(mstconfig_missing());
            }
            st.writes.kernel += 1;
            let fw = st
                .port_types
                .firmware
                .get_mut(pci)
                .ok_or_else(|| no_port_type(pci))?;
            fw.1 = ty.firmware_value();
            return Ok(());
        }
        if !is_mlx4(d) {
            return Err(no_port_type(pci));
        }
        let name = d.name.clone();
        let sys = self.sysroot().clone();
        let file = mlx4_dir(&sys, pci).join(format!("mlx4_port{port}"));
        let op = || Op::WriteSysfs(file.display().to_string());
        let now = read_mlx4(&sys, pci)?.ok_or_else(|| no_port_type(pci))?;
        if port == 0 || port as usize > now.len() {
            return Err(HostError::kernel(op(), Errno::ENOENT));
        }
        st.writes.kernel += 1;
        // __set_port_type checks the combination the change leads to.
        if check_mlx4(&now, port, ty).is_err() {
            return Err(HostError::kernel(op(), Errno::EOPNOTSUPP));
        }
        let mut after = now.clone();
        let running = match ty {
            PortType::Ib => RunningType::Ib,
            PortType::Eth => RunningType::Eth,
            PortType::Auto => now[port as usize - 1].running,
        };
        after[port as usize - 1] = Mlx4PortValue {
            configured: ty,
            running,
        };
        for (i, v) in after.iter().enumerate() {
            let f = mlx4_dir(&sys, pci).join(format!("mlx4_port{}", i + 1));
            std::fs::write(&f, format!("{}\n", v.render()))
                .map_err(|e| HostError::from_io(op(), &e))?;
        }
        let moved = now.iter().zip(&after).any(|(a, b)| a.running != b.running);
        if !moved {
            return Ok(());
        }
        let Some(dev) = st.spec.devices.iter_mut().find(|d| d.name == name) else {
            return Ok(());
        };
        for (p, v) in dev.ports.iter_mut().zip(&after) {
            switch_port(p, dev.node_guid.0, v.running);
        }
        let dev = dev.clone();
        Self::emit(&mut st, HostEvent::RdmaChanged { name });
        drop(st);
        self.update_device(&dev)
    }
}

/// A port re-registered as `to`: its link layer, LIDs and GIDs.
fn switch_port(p: &mut SimPort, node_guid: u64, to: RunningType) {
    if running(p) == to {
        return;
    }
    // A port's GUID on ConnectX-3 is the node GUID plus its number; its Ethernet MAC is
    // made of the same bytes.
    let guid = node_guid.wrapping_add(u64::from(p.number));
    let ll = std::net::Ipv6Addr::from((0xfe80_u128 << 112) | u128::from(guid));
    match to {
        RunningType::Eth => {
            p.link_layer = LinkLayer::Ethernet;
            p.lid = 0;
            p.sm_lid = 0;
            p.lmc = 0;
            p.pkeys = vec![0xffff];
            p.roce_types = vec![GidType::IbRoceV1, GidType::RoceV2];
            p.gids = [GidType::IbRoceV1, GidType::RoceV2]
                .into_iter()
                .zip(0..)
                .map(|(gid_type, index)| SimGid {
                    index,
                    gid: ll,
                    gid_type,
                    ndev: None,
                })
                .collect();
        }
        RunningType::Ib => {
            p.link_layer = LinkLayer::InfiniBand;
            p.pkeys = vec![0xffff];
            p.roce_types = Vec::new();
            p.gids = vec![SimGid {
                index: 0,
                gid: ll,
                gid_type: GidType::IbRoceV1,
                ndev: None,
            }];
        }
    }
}

#[async_trait::async_trait]
impl crate::kernel::PortTypeHost for SimHost {
    async fn port_types(
        &self,
        pci: &str,
    ) -> Result<crate::kernel::port_type::PortTypes, HostError> {
        self.sim_port_types(pci)
    }

    async fn set_port_type(
        &self,
        pci: &str,
        port: u32,
        ty: rdma_manager_model::port_type::PortType,
    ) -> Result<(), HostError> {
        self.sim_set_port_type(pci, port, ty)
    }
}
