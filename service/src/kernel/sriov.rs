//! SR-IOV physical functions as sysfs shows them, and the VF rebind that makes a driver take
//! new VF GUIDs.
//!
//! A PF's PCI function has `sriov_numvfs` and one `virtfn<N>` link per enabled VF (N is the
//! VF index `ip link set <pf> vf N` takes); each VF's own `driver` link names the driver
//! bound to it. mlx5 and mlx4 read a VF's GUIDs when the VF is probed, so a change made
//! through rtnetlink reaches the VF's RDMA device only after the VF is unbound from its
//! driver and bound again (`/sys/bus/pci/drivers/<driver>/unbind`, then `bind`), as
//! sriov-network-operator does for InfiniBand VFs.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::sysfs::SysRoot;
use super::{HostError, Op};
use crate::model::Guid;

/// One VF of a PF: where it sits and the GUIDs the PF's driver reports for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VfState {
    pub vf: u32,
    /// The VF's PCI address (`virtfn<N>`), when the link exists.
    pub pci: Option<String>,
    /// The driver bound to the VF, if any (`mlx5_core`, `vfio-pci`, ...).
    pub driver: Option<String>,
    pub node_guid: Option<Guid>,
    pub port_guid: Option<Guid>,
    /// Whether the PF's driver reports this VF's GUIDs at all (`ndo_get_vf_guid`); when it
    /// does, `None` means it holds none (it reports zero).
    pub reported: bool,
}

/// An RDMA device's PCI function when it is an SR-IOV PF.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SriovPf {
    pub device: String,
    pub pci: String,
    /// The PF's netdev (IPoIB for InfiniBand): the one rtnetlink changes VF GUIDs on.
    pub netdev: Option<String>,
    /// `sriov_numvfs`: the VFs enabled now (VF indices 0 to numvfs - 1).
    pub numvfs: u32,
    pub vfs: Vec<VfState>,
}

fn read_op(path: &Path) -> Op {
    Op::ReadSysfs(path.display().to_string())
}

fn link_name(path: &Path) -> Option<String> {
    std::fs::read_link(path)
        .ok()?
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
}

/// The PCI directory of a function, by address, below the root.
fn pci_device_dir(sys: &SysRoot, pci: &str) -> PathBuf {
    sys.root().join("sys/bus/pci/devices").join(pci)
}

/// What sysfs says of `dev` as a PF, GUIDs left out (rtnetlink reports them); `Ok(None)`
/// when the device has no PCI function with `sriov_numvfs` (a VF, a soft device, a PCI
/// function without SR-IOV).
pub fn read_pf(sys: &SysRoot, dev: &str) -> Result<Option<SriovPf>, HostError> {
    let dir = sys.device_dir(dev);
    if !dir.is_dir() {
        return Err(HostError::NotFound(format!("RDMA device {dev}")));
    }
    let function = dir.join("device");
    let Some(pci) = link_name(&function) else {
        return Ok(None);
    };
    let numvfs_file = function.join("sriov_numvfs");
    let numvfs = match std::fs::read_to_string(&numvfs_file) {
        Ok(s) => s.trim().parse::<u32>().map_err(|e| HostError::Protocol {
            op: read_op(&numvfs_file),
            reason: format!("{:?}: {e}", s.trim()),
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(HostError::from_io(read_op(&numvfs_file), &e)),
    };
    let mut netdevs: Vec<String> = std::fs::read_dir(function.join("net"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    netdevs.sort();
    let vfs = (0..numvfs)
        .map(|vf| {
            let virtfn = function.join(format!("virtfn{vf}"));
            let vf_pci = link_name(&virtfn);
            let driver = link_name(&virtfn.join("driver"));
            VfState {
                vf,
                pci: vf_pci,
                driver,
                node_guid: None,
                port_guid: None,
                reported: false,
            }
        })
        .collect();
    Ok(Some(SriovPf {
        device: dev.to_string(),
        pci,
        netdev: netdevs.into_iter().next(),
        numvfs,
        vfs,
    }))
}

/// Fills in the GUIDs rtnetlink reported for the PF's VFs. The driver reports a GUID it
/// was never given as zero: that is "none".
pub fn fill_guids(pf: &mut SriovPf, reported: &[super::rtnl::vf_guid::VfGuids]) {
    for r in reported {
        if let Some(v) = pf.vfs.iter_mut().find(|v| v.vf == r.vf) {
            v.reported = r.node_guid.is_some() || r.port_guid.is_some();
            v.node_guid = r.node_guid.filter(|g| *g != 0).map(Guid);
            v.port_guid = r.port_guid.filter(|g| *g != 0).map(Guid);
        }
    }
}

fn write(path: &Path, value: &str) -> Result<(), HostError> {
    std::fs::write(path, value)
        .map_err(|e| HostError::from_io(Op::WriteSysfs(path.display().to_string()), &e))
}

/// Unbinds the VF at `vf_pci` from its driver and binds it again, so that the driver reads
/// the VF's new GUIDs. `Ok(None)` when no driver is bound (the GUIDs apply at the next
/// probe); else the driver's name.
pub fn rebind_vf(sys: &SysRoot, vf_pci: &str) -> Result<Option<String>, HostError> {
    let dir = pci_device_dir(sys, vf_pci);
    if !dir.is_dir() {
        return Err(HostError::NotFound(format!("PCI function {vf_pci}")));
    }
    let Some(driver) = link_name(&dir.join("driver")) else {
        return Ok(None);
    };
    let drv = sys.root().join("sys/bus/pci/drivers").join(&driver);
    write(&drv.join("unbind"), vf_pci)?;
    write(&drv.join("bind"), vf_pci)?;
    Ok(Some(driver))
}

/// A PF's SR-IOV VFs and their GUIDs, read and set; part of [`super::Host`].
#[async_trait::async_trait]
pub trait SriovHost: Send + Sync {
    /// `dev`'s PCI function as an SR-IOV PF (see [`sriov`]): its VFs, with the GUIDs the PF's
    /// driver reports over rtnetlink; `Ok(None)` when the function is no PF.
    async fn read_sriov(&self, dev: &str) -> Result<Option<SriovPf>, HostError>;
    /// `ip link set PF_NETDEV vf VF node_guid NODE port_guid PORT` (see `rtnl::vf_guid`).
    /// A netdev that is not InfiniBand, or whose driver cannot set VF GUIDs, is refused by
    /// the kernel with EOPNOTSUPP: [`HostError::Unsupported`] naming it, with the kernel's
    /// reason.
    async fn set_vf_guids(
        &self,
        pf_netdev: &str,
        vf: u32,
        node_guid: Guid,
        port_guid: Guid,
    ) -> Result<(), HostError>;
    /// Unbinds the VF at PCI address `vf_pci` from its driver and binds it again, so that
    /// the driver takes the VF's new GUIDs; the driver's name, or `Ok(None)` when none is
    /// bound (the GUIDs then apply at the VF's next probe).
    async fn rebind_vf(&self, vf_pci: &str) -> Result<Option<String>, HostError>;
}

#[async_trait::async_trait]
impl SriovHost for super::linux::LinuxHost {
    async fn read_sriov(&self, dev: &str) -> Result<Option<SriovPf>, HostError> {
        let dev = dev.to_string();
        self.blocking(Op::ReadSysfs("sriov_numvfs".into()), move |sys| {
            let Some(mut pf) = read_pf(&sys, &dev)? else {
                return Ok(None);
            };
            if let Some(netdev) = &pf.netdev {
                match super::rtnl::vf_guid::read_vf_link(netdev) {
                    Ok(link) => fill_guids(&mut pf, &link.vfs),
                    // The netdev went between the two reads: the VFs without GUIDs.
                    Err(e) if e.is_not_found() => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(Some(pf))
        })
        .await
    }

    async fn set_vf_guids(
        &self,
        pf_netdev: &str,
        vf: u32,
        node_guid: crate::model::Guid,
        port_guid: crate::model::Guid,
    ) -> Result<(), HostError> {
        let netdev = pf_netdev.to_string();
        self.blocking(Op::Rtnl("newlink"), move |_| {
            super::rtnl::vf_guid::set_vf_guids(&netdev, vf, node_guid.0, port_guid.0)
        })
        .await
    }

    async fn rebind_vf(&self, vf_pci: &str) -> Result<Option<String>, HostError> {
        let pci = vf_pci.to_string();
        self.blocking(Op::WriteSysfs("unbind".into()), move |sys| {
            rebind_vf(&sys, &pci)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A PF `mlx5_1` at 0000:3b:00.0 with two VFs, VF 1 bound to mlx5_core.
    fn tree() -> (tempfile::TempDir, SysRoot) {
        let t = tempfile::tempdir().expect("tempdir");
        let r = t.path();
        let pci = r.join("sys/devices/pci0000:00");
        for f in ["0000:3b:00.0", "0000:3b:00.2", "0000:3b:00.3"] {
            std::fs::create_dir_all(pci.join(f)).expect("mkdir");
        }
        std::fs::create_dir_all(pci.join("0000:3b:00.0/net/ib1")).expect("mkdir");
        std::fs::write(pci.join("0000:3b:00.0/sriov_numvfs"), "2\n").expect("write");
        symlink("../0000:3b:00.2", pci.join("0000:3b:00.0/virtfn0")).expect("ln");
        symlink("../0000:3b:00.3", pci.join("0000:3b:00.0/virtfn1")).expect("ln");
        let drivers = r.join("sys/bus/pci/drivers/mlx5_core");
        std::fs::create_dir_all(&drivers).expect("mkdir");
        symlink(
            "../../../bus/pci/drivers/mlx5_core",
            pci.join("0000:3b:00.3/driver"),
        )
        .expect("ln");
        let devices = r.join("sys/bus/pci/devices");
        std::fs::create_dir_all(&devices).expect("mkdir");
        for f in ["0000:3b:00.0", "0000:3b:00.2", "0000:3b:00.3"] {
            symlink(format!("../../../devices/pci0000:00/{f}"), devices.join(f)).expect("ln");
        }
        let ib = r.join("sys/class/infiniband/mlx5_1");
        std::fs::create_dir_all(&ib).expect("mkdir");
        symlink(
            "../../../devices/pci0000:00/0000:3b:00.0",
            ib.join("device"),
        )
        .expect("ln");
        let sys = SysRoot::new(r);
        (t, sys)
    }

    #[test]
    fn reads_a_pf_and_its_vfs() {
        let (_t, sys) = tree();
        let pf = read_pf(&sys, "mlx5_1").expect("reads").expect("a PF");
        assert_eq!(pf.pci, "0000:3b:00.0");
        assert_eq!(pf.netdev.as_deref(), Some("ib1"));
        assert_eq!(pf.numvfs, 2);
        assert_eq!(pf.vfs[0].pci.as_deref(), Some("0000:3b:00.2"));
        assert_eq!(pf.vfs[0].driver, None);
        assert_eq!(pf.vfs[1].driver.as_deref(), Some("mlx5_core"));
        assert!(matches!(
            read_pf(&sys, "mlx5_9"),
            Err(HostError::NotFound(_))
        ));
    }

    #[test]
    fn rebinds_through_the_vfs_driver() {
        let (t, sys) = tree();
        assert_eq!(rebind_vf(&sys, "0000:3b:00.2"), Ok(None));
        assert_eq!(
            rebind_vf(&sys, "0000:3b:00.3"),
            Ok(Some("mlx5_core".into()))
        );
        let drv = t.path().join("sys/bus/pci/drivers/mlx5_core");
        // The driver's files are written in order; the last write stays in each.
        assert_eq!(
            std::fs::read_to_string(drv.join("unbind")).expect("unbind"),
            "0000:3b:00.3"
        );
        assert_eq!(
            std::fs::read_to_string(drv.join("bind")).expect("bind"),
            "0000:3b:00.3"
        );
    }
}
