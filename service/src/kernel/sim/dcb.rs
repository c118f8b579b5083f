//! DCB and RoCE QoS of the simulated host, as mlx5 implements them (en_dcbnl.c): the
//! Ethernet netdev of a hardware RoCE function has IEEE PFC and ETS, a DSCP-only app table
//! whose first entry switches the port to DSCP trust (and whose last, gone, back to PCP),
//! no trust table of its own (`dcb apptrust set` is EOPNOTSUPP), per-priority PFC counters
//! that move while PFC is on, mlx5_ib's `tc/1/traffic_class` and the `ecn/` switches.
//! Every other netdev (veth, dummy, lo, IPoIB) has no `dcbnl_ops`: the kernel answers
//! EOPNOTSUPP to every request, before looking at it.

use std::collections::BTreeMap;

use super::{SimHost, SimOp, SimState};
use crate::kernel::dcb::{refusal, wire, DcbApp, DcbChange, DcbConfig, IeeeEts, IeeePfc};
use crate::kernel::error::kernel_answered;
use crate::kernel::ethtool::PauseStats;
use crate::kernel::HostError;
use crate::model::{DeviceKind, Errno};

/// One netdev's DCB state (keyed by ifindex, as the kernel's app list is).
#[derive(Debug, Clone)]
pub(super) struct SimDcb {
    ets: IeeeEts,
    pfc: IeeePfc,
    apps: Vec<DcbApp>,
    /// mlx5's `ecn/roce_{np,rp}/enable/<prio>` (both written together here).
    ecn: u8,
    /// Link-level pause frames sent and received (ethtool's pause statistics).
    pause_frames: (u64, u64),
}

impl Default for SimDcb {
    fn default() -> Self {
        // mlx5's defaults, as `mlnx_qos` shows a fresh port: priority 0 on TC 1 and 1 on
        // TC 0, all ETS; PFC off; ECN on for every priority.
        let ets = IeeeEts {
            ets_cap: 8,
            tc_tx_bw: [13, 13, 13, 13, 12, 12, 12, 12],
            tc_tsa: [wire::TSA_ETS; 8],
            prio_tc: [1, 0, 2, 3, 4, 5, 6, 7],
            ..IeeeEts::default()
        };
        SimDcb {
            ets,
            pfc: IeeePfc {
                pfc_cap: 8,
                ..IeeePfc::default()
            },
            apps: Vec::new(),
            ecn: 0xff,
            pause_frames: (0, 0),
        }
    }
}

/// Whether `netdev` is a hardware RoCE function's Ethernet netdev; its ifindex if so.
fn dcb_ifindex(st: &SimState, netdev: &str) -> Option<u32> {
    let n = st.spec.netdevs.iter().find(|n| n.name == netdev)?;
    if n.link_kind.is_some() || n.ipoib.is_some() {
        return None;
    }
    let pci = n.pci_address.as_deref()?;
    st.spec
        .devices
        .iter()
        .any(|d| {
            d.kind == DeviceKind::Hardware
                && d.protocol == "roce"
                && d.pci_address.as_deref() == Some(pci)
        })
        .then_some(n.ifindex)
}

/// The kernel's answer for a netdev: none by that name, or no DCB.
fn lookup<'a>(st: &'a mut SimState, netdev: &str, what: &str) -> Result<&'a mut SimDcb, HostError> {
    if !st.spec.netdevs.iter().any(|n| n.name == netdev) {
        // dcb_doit: no such netdev is ENODEV since Linux 5.x.
        return Err(HostError::NotFound(format!("network interface {netdev}")));
    }
    let Some(ifindex) = dcb_ifindex(st, netdev) else {
        return Err(refusal(netdev, what, Errno::EOPNOTSUPP, None));
    };
    Ok(st.dcb.entry(ifindex).or_default())
}

pub(super) fn read(st: &mut SimState, netdev: &str) -> Result<DcbConfig, HostError> {
    let d = lookup(st, netdev, "read")?;
    Ok(DcbConfig {
        ets: Some(d.ets),
        pfc: Some(d.pfc),
        apps: d.apps.clone(),
        trust: None,
        // DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE
        dcbx: Some(0x0c),
    })
}

/// ethtool's PAUSE_GET with statistics, as mlx5 answers it: rx and tx pause on while no
/// priority has PFC (the two exclude each other on mlx5), autoneg off, and the frames that
/// [`congest`] made. Netdevs modelled without DCB have no `get_pauseparam` either (veth, dummy):
/// EOPNOTSUPP.
pub(super) fn pause(st: &mut SimState, netdev: &str) -> Result<PauseStats, HostError> {
    if !st.spec.netdevs.iter().any(|n| n.name == netdev) {
        return Err(HostError::NotFound(format!("netdev {netdev}")));
    }
    let Some(ifindex) = dcb_ifindex(st, netdev) else {
        return Err(HostError::Unsupported {
            what: format!("link-level pause on {netdev}"),
            why: kernel_answered(Errno::EOPNOTSUPP, None),
        });
    };
    let d = st.dcb.entry(ifindex).or_default();
    let on = d.pfc.pfc_en == 0;
    Ok(PauseStats {
        autoneg: Some(false),
        rx: Some(on),
        tx: Some(on),
        tx_frames: Some(d.pause_frames.0),
        rx_frames: Some(d.pause_frames.1),
    })
}

/// Congestion on a netdev's link: while link-level pause is on, 2 pause frames sent and 4
/// received; with PFC on instead, no pause frame but 3 PFC frames sent and 5 received for
/// each priority it is on for. Like a real NIC's, the counters move only with congestion,
/// never because they are read. A netdev without DCB is left alone.
pub(super) fn congest(st: &mut SimState, netdev: &str) {
    let Some(ifindex) = dcb_ifindex(st, netdev) else {
        return;
    };
    let d = st.dcb.entry(ifindex).or_default();
    if d.pfc.pfc_en == 0 {
        d.pause_frames.0 += 2;
        d.pause_frames.1 += 4;
        return;
    }
    for p in 0..8 {
        if d.pfc.pfc_en & (1 << p) != 0 {
            d.pfc.requests[p] += 3;
            d.pfc.indications[p] += 5;
        }
    }
}

pub(super) fn change(st: &mut SimState, netdev: &str, c: &DcbChange) -> Result<(), HostError> {
    let d = lookup(st, netdev, c.what())?;
    let einval = || refusal(netdev, c.what(), Errno::EINVAL, None);
    match c {
        DcbChange::Ets(b) => {
            let ets = IeeeEts::from_bytes(b).map_err(|_| einval())?;
            // mlx5e_dbcnl_validate_ets: traffic classes in range, ETS shares summing to 100.
            if ets.prio_tc.iter().any(|&t| t >= 8) {
                return Err(einval());
            }
            let sum: u32 = (0..8)
                .filter(|&i| ets.tc_tsa[i] == wire::TSA_ETS)
                .map(|i| u32::from(ets.tc_tx_bw[i]))
                .sum();
            if ets.tc_tsa.contains(&wire::TSA_ETS) && sum != 100 {
                return Err(einval());
            }
            d.ets = IeeeEts {
                ets_cap: d.ets.ets_cap,
                ..ets
            };
        }
        DcbChange::Pfc(b) => {
            let pfc = IeeePfc::from_bytes(b).map_err(|_| einval())?;
            // The driver takes pfc_en (and the delay); the counters are its own.
            d.pfc.pfc_en = pfc.pfc_en;
            d.pfc.delay = pfc.delay;
        }
        DcbChange::AddApps(v) => {
            // Checked whole first: the kernel stops at the first refused entry, and the
            // engine's requests carry one kind of entry.
            if v.iter().any(|&(s, _, p)| s != wire::SEL_DSCP || p >= 64) {
                return Err(einval());
            }
            for &(selector, priority, protocol) in v {
                let a = DcbApp {
                    selector,
                    priority,
                    protocol,
                };
                if !d.apps.contains(&a) {
                    d.apps.push(a);
                }
            }
        }
        DcbChange::DelApps(v) => {
            for &(selector, priority, protocol) in v {
                let a = DcbApp {
                    selector,
                    priority,
                    protocol,
                };
                let Some(pos) = d.apps.iter().position(|x| *x == a) else {
                    return Err(refusal(netdev, c.what(), Errno::ENOENT, None));
                };
                d.apps.remove(pos);
            }
        }
        // mlx5 has no dcbnl_setapptrust: dcbnl_ieee_set answers EOPNOTSUPP.
        DcbChange::Trust(_) => return Err(refusal(netdev, c.what(), Errno::EOPNOTSUPP, None)),
    }
    Ok(())
}

/// The RDMA device has mlx5_ib's `tc/` directory.
fn has_tc(st: &SimState, dev: &str) -> Result<bool, HostError> {
    let d = st
        .spec
        .devices
        .iter()
        .find(|d| d.name == dev)
        .ok_or_else(|| HostError::NotFound(format!("RDMA device {dev}")))?;
    Ok(d.kind == DeviceKind::Hardware && d.protocol == "roce")
}

pub(super) fn traffic_class(st: &SimState, dev: &str) -> Result<Option<i32>, HostError> {
    if !has_tc(st, dev)? {
        return Ok(None);
    }
    let index = st
        .spec
        .devices
        .iter()
        .find(|d| d.name == dev)
        .map(|d| d.index);
    Ok(Some(
        index
            .and_then(|i| st.traffic_class.get(&i).copied())
            .unwrap_or(-1),
    ))
}

pub(super) fn set_traffic_class(st: &mut SimState, dev: &str, tc: i32) -> Result<(), HostError> {
    if !has_tc(st, dev)? {
        return Err(HostError::Unsupported {
            what: format!("/sys/class/infiniband/{dev}/tc/1/traffic_class"),
            why: "the driver has no such file".into(),
        });
    }
    if !(-1..=255).contains(&tc) {
        return Err(HostError::kernel(
            crate::kernel::Op::WriteSysfs(format!("{dev}/tc/1/traffic_class")),
            Errno::EINVAL,
        ));
    }
    if let Some(i) = st
        .spec
        .devices
        .iter()
        .find(|d| d.name == dev)
        .map(|d| d.index)
    {
        st.traffic_class.insert(i, tc);
    }
    Ok(())
}

pub(super) fn ecn(st: &mut SimState, netdev: &str) -> Result<Option<u8>, HostError> {
    if !st.spec.netdevs.iter().any(|n| n.name == netdev) {
        return Err(HostError::NotFound(format!("network interface {netdev}")));
    }
    match dcb_ifindex(st, netdev) {
        None => Ok(None),
        Some(i) => Ok(Some(st.dcb.entry(i).or_default().ecn)),
    }
}

pub(super) fn set_ecn(st: &mut SimState, netdev: &str, mask: u8) -> Result<(), HostError> {
    match dcb_ifindex(st, netdev) {
        None => Err(HostError::Unsupported {
            what: format!("/sys/class/net/{netdev}/ecn"),
            why: "the driver has no such directory".into(),
        }),
        Some(i) => {
            st.dcb.entry(i).or_default().ecn = mask;
            Ok(())
        }
    }
}

/// The state kept per netdev and device; part of [`SimState`].
pub(super) type DcbByIfindex = BTreeMap<u32, SimDcb>;

#[async_trait::async_trait]
impl crate::kernel::QosHost for SimHost {
    async fn dcb_read(&self, netdev: &str) -> Result<crate::kernel::dcb::DcbConfig, HostError> {
        self.read_fault("DCB")?;
        read(&mut self.lock(), netdev)
    }

    async fn pause_stats(
        &self,
        netdev: &str,
    ) -> Result<crate::kernel::ethtool::PauseStats, HostError> {
        self.read_fault("pause")?;
        pause(&mut self.lock(), netdev)
    }

    async fn dcb_change(
        &self,
        netdev: &str,
        change: &crate::kernel::dcb::DcbChange,
    ) -> Result<(), HostError> {
        self.delay(SimOp::QosWrite).await;
        let mut st = self.lock();
        self.take_fault(&mut st, SimOp::QosWrite)?;
        self::change(&mut st, netdev, change)
    }

    async fn roce_traffic_class(&self, dev: &str) -> Result<Option<i32>, HostError> {
        self.read_fault("traffic_class")?;
        traffic_class(&self.lock(), dev)
    }

    async fn set_roce_traffic_class(&self, dev: &str, tc: i32) -> Result<(), HostError> {
        self.delay(SimOp::QosWrite).await;
        let mut st = self.lock();
        self.take_fault(&mut st, SimOp::QosWrite)?;
        set_traffic_class(&mut st, dev, tc)
    }

    async fn roce_ecn(&self, netdev: &str) -> Result<Option<u8>, HostError> {
        self.read_fault("ecn")?;
        ecn(&mut self.lock(), netdev)
    }

    async fn set_roce_ecn(&self, netdev: &str, mask: u8) -> Result<(), HostError> {
        self.delay(SimOp::QosWrite).await;
        let mut st = self.lock();
        self.take_fault(&mut st, SimOp::QosWrite)?;
        set_ecn(&mut st, netdev, mask)
    }
}
