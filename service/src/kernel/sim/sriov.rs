//! SR-IOV VF GUIDs on the simulated host, as mlx5 with IPoIB keeps them: the PF's netdev
//! takes a VF's node and port GUID (`ndo_set_vf_guid`) and reports them back
//! (`ndo_get_vf_guid`); the VF's RDMA device shows them once the VF is bound to its driver
//! again. Kernel rules, in the kernel's order (net/core/rtnetlink.c `do_setvfinfo`):
//!
//! 1. a netdev that does not exist: ENODEV;
//! 2. a netdev that is not ARPHRD_INFINIBAND (veth, Ethernet under rxe): EOPNOTSUPP, the
//!    answer `handle_infiniband_guid` gives, with no extended ack;
//! 3. an InfiniBand netdev whose function has no SR-IOV: EOPNOTSUPP (no VF to set);
//! 4. a VF index beyond `sriov_numvfs`: EINVAL, as the driver answers.

use std::collections::BTreeMap;

use super::{SimHost, SimOp, SimState};
use crate::kernel::rtnl::vf_guid::{refusal_error, Refusal, VfGuids, ARPHRD_INFINIBAND};
use crate::kernel::{HostError, Op};
use crate::model::{Errno, Guid};

/// The VF GUIDs the simulated PFs' drivers hold, by PF PCI address and VF index, and the
/// VFs rebound so far (by PCI address, in order).
#[derive(Debug, Clone, Default)]
pub struct SimSriov {
    pub guids: BTreeMap<(String, u32), (u64, u64)>,
    pub rebinds: Vec<String>,
}

fn refuse(netdev: &str, errno: Errno) -> HostError {
    refusal_error(
        netdev,
        Op::Rtnl("newlink"),
        Refusal {
            errno,
            extack: None,
        },
    )
}

/// `ip link set NETDEV vf VF node_guid NODE port_guid PORT` on the simulated kernel.
pub(super) fn set_vf_guids(
    st: &mut SimState,
    netdev: &str,
    vf: u32,
    node: u64,
    port: u64,
) -> Result<(), HostError> {
    let nd = st
        .spec
        .netdevs
        .iter()
        .find(|n| n.name == netdev)
        .ok_or_else(|| HostError::NotFound(format!("network interface {netdev}")))?;
    if nd.arphrd != ARPHRD_INFINIBAND {
        return Err(refuse(netdev, Errno::EOPNOTSUPP));
    }
    let pci = nd.pci_address.clone();
    let numvfs = st
        .spec
        .devices
        .iter()
        .find(|d| d.pci_address.is_some() && d.pci_address == pci)
        .and_then(|d| d.placement.sriov_numvfs);
    let (Some(pci), Some(numvfs)) = (pci, numvfs) else {
        return Err(refuse(netdev, Errno::EOPNOTSUPP));
    };
    if vf >= numvfs {
        return Err(HostError::kernel(Op::Rtnl("newlink"), Errno::EINVAL));
    }
    st.sriov.guids.insert((pci, vf), (node, port));
    Ok(())
}

/// The GUIDs the driver reports for the `numvfs` VFs of the PF at `pf_pci`: zero for a VF
/// it holds none for, as mlx5 reports.
pub(super) fn reported(st: &SimState, pf_pci: &str, numvfs: u32) -> Vec<VfGuids> {
    (0..numvfs)
        .map(|vf| {
            let (node, port) = st
                .sriov
                .guids
                .get(&(pf_pci.to_string(), vf))
                .copied()
                .unwrap_or((0, 0));
            VfGuids {
                vf,
                node_guid: Some(node),
                port_guid: Some(port),
            }
        })
        .collect()
}

impl SimHost {
    /// Unbinds and binds the VF at `vf_pci`: its RDMA device goes (RdmaRemoved) and comes
    /// back (RdmaAdded, a new index) with the GUIDs its PF holds for it, as mlx5 reads them
    /// at probe time: the node GUID, and the port GUID in its port's GID 0.
    pub(super) fn rebind_vf_locked(
        &self,
        st: &mut SimState,
        vf_pci: &str,
    ) -> Result<Option<String>, HostError> {
        let Some(dev) = st
            .spec
            .devices
            .iter()
            .find(|d| d.pci_address.as_deref() == Some(vf_pci) && d.placement.vf.is_some())
            .cloned()
        else {
            return Err(HostError::NotFound(format!("PCI function {vf_pci}")));
        };
        let Some(place) = dev.placement.vf.clone() else {
            return Err(HostError::NotFound(format!("PCI function {vf_pci}")));
        };
        st.sriov.rebinds.push(vf_pci.to_string());
        let mut again = dev.clone();
        if let Some((node, port)) = st.sriov.guids.get(&(place.pf.clone(), place.number)) {
            again.node_guid = Guid(*node);
            for p in &mut again.ports {
                for g in p.gids.iter_mut().filter(|g| g.index == 0) {
                    let mut octets = g.gid.octets();
                    octets[8..].copy_from_slice(&port.to_be_bytes());
                    g.gid = std::net::Ipv6Addr::from(octets);
                }
            }
        }
        self.remove_device_locked(st, &dev.name)?;
        again.index = st.next_dev_index;
        st.next_dev_index += 1;
        self.render_device(&again)?;
        let name = again.name.clone();
        st.spec.devices.push(again);
        Self::emit(st, crate::kernel::HostEvent::RdmaAdded { name });
        Ok(Some("mlx5_core".into()))
    }

    /// The VFs rebound so far, by PCI address, in order.
    pub fn vf_rebinds(&self) -> Vec<String> {
        self.lock().sriov.rebinds.clone()
    }

    /// Forgets every VF GUID the PFs' drivers hold, as a reboot or a driver reload does.
    pub fn forget_vf_guids(&self) {
        self.lock().sriov.guids.clear();
    }
}

#[async_trait::async_trait]
impl crate::kernel::SriovHost for SimHost {
    async fn read_sriov(
        &self,
        dev: &str,
    ) -> Result<Option<crate::kernel::sriov::SriovPf>, HostError> {
        self.read_fault(dev)?;
        let Some(mut pf) = crate::kernel::sriov::read_pf(&self.inner.sys, dev)? else {
            return Ok(None);
        };
        let reported = reported(&self.lock(), &pf.pci, pf.numvfs);
        crate::kernel::sriov::fill_guids(&mut pf, &reported);
        Ok(Some(pf))
    }

    async fn set_vf_guids(
        &self,
        pf_netdev: &str,
        vf: u32,
        node_guid: crate::model::Guid,
        port_guid: crate::model::Guid,
    ) -> Result<(), HostError> {
        let mut st = self.lock();
        self.take_fault(&mut st, SimOp::SetVfGuids)?;
        set_vf_guids(&mut st, pf_netdev, vf, node_guid.0, port_guid.0)
    }

    async fn rebind_vf(&self, vf_pci: &str) -> Result<Option<String>, HostError> {
        let mut st = self.lock();
        self.take_fault(&mut st, SimOp::RebindVf)?;
        self.rebind_vf_locked(&mut st, vf_pci)
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::prelude::*;
    use crate::kernel::sim::{fixtures, SimHost};
    use crate::kernel::{HostError, HostEvent};
    use crate::model::{Errno, Guid};

    #[tokio::test]
    async fn the_naming_hosts_pf_sets_reports_and_rebinds() {
        let host = SimHost::new(fixtures::naming_host()).expect("host");
        let mut events = host.subscribe().await.expect("events");
        let pf = host
            .read_sriov("mlx5_1")
            .await
            .expect("read")
            .expect("a PF");
        assert_eq!(pf.netdev.as_deref(), Some("ib1"));
        assert_eq!(pf.numvfs, 2);
        assert_eq!(pf.vfs[1].pci.as_deref(), Some("0000:3b:00.3"));
        assert_eq!(pf.vfs[1].node_guid, None);
        assert_eq!(host.read_sriov("mlx5_2").await, Ok(None), "a VF is no PF");

        let (node, port) = (Guid(0x0011_2233_4455_6677), Guid(0x0011_2233_4455_6678));
        host.set_vf_guids("ib1", 1, node, port).await.expect("set");
        let pf = host
            .read_sriov("mlx5_1")
            .await
            .expect("read")
            .expect("a PF");
        assert_eq!(
            (pf.vfs[1].node_guid, pf.vfs[1].port_guid),
            (Some(node), Some(port))
        );

        assert_eq!(
            host.rebind_vf("0000:3b:00.3").await,
            Ok(Some("mlx5_core".into()))
        );
        let vf = host.read_device("mlx5_2").await.expect("the VF is back");
        assert_eq!(vf.node_guid, Ok(node));
        assert_eq!(
            events.recv().await,
            Some(HostEvent::RdmaRemoved {
                name: "mlx5_2".into()
            })
        );
        assert_eq!(
            events.recv().await,
            Some(HostEvent::RdmaAdded {
                name: "mlx5_2".into()
            })
        );
        assert_eq!(host.vf_rebinds(), vec!["0000:3b:00.3".to_string()]);
    }

    #[tokio::test]
    async fn the_kernels_refusals() {
        let host = SimHost::new(fixtures::naming_host()).expect("host");
        let g = Guid(1);
        // eth0 carries rxe0: not InfiniBand.
        let err = host.set_vf_guids("eth0", 0, g, g).await.unwrap_err();
        assert!(
            matches!(&err, HostError::Unsupported { what, why } if what.contains("eth0") && why.contains("EOPNOTSUPP")),
            "{err:?}"
        );
        // ib0's function has no SR-IOV.
        assert!(matches!(
            host.set_vf_guids("ib0", 0, g, g).await,
            Err(HostError::Unsupported { .. })
        ));
        assert_eq!(
            host.set_vf_guids("ib1", 2, g, g).await.unwrap_err().errno(),
            Some(Errno::EINVAL)
        );
        assert!(host
            .set_vf_guids("nope0", 0, g, g)
            .await
            .unwrap_err()
            .is_not_found());
        let pf = host
            .read_sriov("mlx5_1")
            .await
            .expect("read")
            .expect("a PF");
        assert!(
            pf.vfs.iter().all(|v| v.node_guid.is_none()),
            "nothing changed"
        );
    }
}
