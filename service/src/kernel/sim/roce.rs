//! rdma_cm's configfs on the simulated host, as `core/cma_configfs.c` keeps it: a device's
//! group is made by `mkdir` and bound to the device's name then, the port's defaults start at
//! what `cma_add_one` chose, and a mode the port's GIDs lack is EINVAL.

use async_trait::async_trait;

use super::model::SimDevice;
use super::port::SimPort;
use super::rules::nl;
use super::{cost, CmGroup, SimHost, SimOp, SimState};
use crate::kernel::{HostError, Op, RoceHost};
use crate::model::{Errno, GidType, RoceMode};

#[async_trait]
impl RoceHost for SimHost {
    async fn roce_mode(&self, dev: &str, port: u32) -> Result<RoceMode, HostError> {
        self.roce_read(dev, port).map(|(m, _)| m)
    }

    async fn set_roce_mode(&self, dev: &str, port: u32, mode: RoceMode) -> Result<(), HostError> {
        self.delay(SimOp::RoceWrite).await;
        let mut st = self.lock();
        self.take_fault(&mut st, SimOp::RoceWrite)?;
        roce_set_mode(&mut st, dev, port, mode)
    }

    async fn roce_tos(&self, dev: &str, port: u32) -> Result<u8, HostError> {
        self.roce_read(dev, port).map(|(_, t)| t)
    }

    async fn set_roce_tos(&self, dev: &str, port: u32, tos: u8) -> Result<(), HostError> {
        self.delay(SimOp::RoceWrite).await;
        let mut st = self.lock();
        self.take_fault(&mut st, SimOp::RoceWrite)?;
        roce_set_tos(&mut st, dev, port, tos)
    }

    async fn roce_configfs_dirs(&self) -> Result<Vec<String>, HostError> {
        let st = self.lock();
        configfs_present(&st)?;
        let mut v: Vec<String> = st.cm_groups.iter().map(|g| g.bound_name.clone()).collect();
        v.sort();
        Ok(v)
    }
}

impl SimHost {
    /// `default_roce_mode` and `default_roce_tos` of a port: a configfs attribute read,
    /// after the `mkdir` of the device's group when it has none yet (charged outside the
    /// state's lock, as the kernel's work runs beside other readers).
    fn roce_read(&self, dev: &str, port: u32) -> Result<(RoceMode, u8), HostError> {
        let (got, made) = {
            let mut st = self.lock();
            self.take_fault(&mut st, SimOp::RoceRead)?;
            let groups = st.cm_groups.len();
            let got = roce_get(&mut st, dev, port);
            (got, st.cm_groups.len() - groups.min(st.cm_groups.len()))
        };
        self.inner
            .cost
            .charge(cost::CostOp::ConfigfsMkdir, made as u64);
        self.inner.cost.charge(cost::CostOp::SysfsFile, 1);
        got
    }
}

/// `rdma_cm/` exists only with the module loaded and configfs mounted; the error is the one
/// the sysfs reader gives for the same tree.
pub fn configfs_present(st: &SimState) -> Result<(), HostError> {
    if st.rdma_cm_loaded && st.configfs_mounted {
        Ok(())
    } else {
        Err(crate::kernel::sysfs::rdma_cm_missing(
            st.rdma_cm_loaded,
            Some(st.configfs_mounted),
        ))
    }
}

/// `mkdir rdma_cm/<dev>` (EEXIST ignored), then resolve the group's bound name to a device as
/// `cma_configfs_params_get` does: a group whose device was renamed or removed gives ENODEV.
fn cm_port<'a>(
    st: &'a mut SimState,
    dev: &str,
    port: u32,
) -> Result<(&'a SimDevice, u32), HostError> {
    configfs_present(st)?;
    if !st.cm_groups.iter().any(|g| g.bound_name == dev) {
        if !st.spec.devices.iter().any(|d| d.name == dev) {
            return Err(nl(
                Op::Configfs(format!("mkdir rdma_cm/{dev}")),
                Errno::ENODEV,
            ));
        }
        st.cm_groups.push(CmGroup {
            bound_name: dev.to_string(),
        });
    }
    let d = st
        .spec
        .devices
        .iter()
        .find(|d| d.name == dev)
        .ok_or_else(|| nl(Op::Configfs(format!("rdma_cm/{dev}")), Errno::ENODEV))?;
    if !d.ports.iter().any(|p| p.number == port) {
        return Err(HostError::NotFound(format!(
            "port {port} of RDMA device {dev}"
        )));
    }
    Ok((d, port))
}

fn default_roce(p: &SimPort) -> (RoceMode, u8) {
    // cma_add_one: RoCE v2 when the port supports it, else the first supported type.
    if p.roce_types.contains(&GidType::RoceV2) {
        (RoceMode::V2, 0)
    } else {
        (RoceMode::V1, 0)
    }
}

pub fn roce_get(st: &mut SimState, dev: &str, port: u32) -> Result<(RoceMode, u8), HostError> {
    let (d, port) = cm_port(st, dev, port)?;
    let key = (d.index, port);
    let default = d.ports.iter().find(|p| p.number == port).map(default_roce);
    Ok(st
        .roce
        .get(&key)
        .copied()
        .or(default)
        .unwrap_or((RoceMode::V1, 0)))
}

pub fn roce_set_mode(
    st: &mut SimState,
    dev: &str,
    port: u32,
    mode: RoceMode,
) -> Result<(), HostError> {
    let (d, port) = cm_port(st, dev, port)?;
    let p = d.ports.iter().find(|p| p.number == port);
    // cma_set_default_gid_type: only GID types the port supports; anything else is EINVAL.
    if !p.is_some_and(|p| p.roce_types.contains(&mode.gid_type())) {
        return Err(nl(
            Op::Configfs(format!(
                "write rdma_cm/{dev}/ports/{port}/default_roce_mode"
            )),
            Errno::EINVAL,
        ));
    }
    let key = (d.index, port);
    let current = roce_get(st, dev, port)?;
    st.roce.insert(key, (mode, current.1));
    Ok(())
}

pub fn roce_set_tos(st: &mut SimState, dev: &str, port: u32, tos: u8) -> Result<(), HostError> {
    let (d, port) = cm_port(st, dev, port)?;
    let key = (d.index, port);
    let current = roce_get(st, dev, port)?;
    st.roce.insert(key, (current.0, tos));
    Ok(())
}
