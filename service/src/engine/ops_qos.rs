//! The QoS profile of a RoCE port (lossless RoCE): read from the kernel (DCB netlink on the
//! port's netdev, mlx5's `traffic_class` and `ecn/` files), set as one `Transaction` of the
//! changes `dcb` would make (ETS, PFC, DSCP app entries added then the old ones deleted, as
//! `dcb app replace` does, the trust order where the driver has one, the files), read back
//! and compared (a difference undoes everything), persisted in `qos.toml` by node GUID and
//! port, and re-applied when the device appears.
//!
//! mlx5 has no trust table of its own: its trust follows the DSCP app entries (DSCP while
//! there is one, PCP otherwise), which is how the profile's trust is read where the kernel
//! reports no DCB_ATTR_DCB_APP_TRUST_TABLE.

use std::collections::{BTreeMap, BTreeSet};

use tracing::{info, warn};

use rdma_manager_model::qos::{mask, priorities, Ets, QosProfile, Trust};

use crate::config::QosSettings;
use crate::kernel::dcb::{wire, DcbChange, DcbConfig};
use crate::kernel::HostError;
use crate::model::roce::not_roce_reason;
use crate::model::{DeviceKind, Guid};

use super::transaction::Transaction;
use super::wanted::Appeared;
use super::{Dirty, Engine, EngineHandle, OpError};

impl EngineHandle {
    /// Sets a RoCE port's QoS profile and remembers it. `index` is the kernel device index.
    pub async fn set_qos_profile(
        &self,
        index: u32,
        port: u32,
        profile: QosProfile,
    ) -> Result<(), OpError> {
        profile.check().map_err(|e| OpError::InvalidArgument(e.0))?;
        let profile = profile.normalized();
        self.call(move |e| Box::pin(async move { set_qos(e, index, port, profile).await }))
            .await
    }

    /// A RoCE port's QoS profile as the kernel has it, and whether `qos.toml` holds one.
    pub async fn qos_profile(&self, index: u32, port: u32) -> Result<(QosProfile, bool), OpError> {
        self.call(move |e| {
            Box::pin(async move {
                let t = target(e, index, port)?;
                let now = read_now(e, &t).await.map_err(|err| explain(err, &t))?;
                let persisted = e
                    .config::<QosSettings>()
                    .map(|s| s.entry(t.guid, port).is_some())
                    .unwrap_or(false);
                Ok((now.profile(), persisted))
            })
        })
        .await
    }

    /// The port's flow-control counters: link-level pause frames (`pause.tx_frames`,
    /// `pause.rx_frames`, where the driver counts them) and per-priority PFC frames
    /// (`pfc.requests.P`: sent, `pfc.indications.P`: received, where the netdev has DCB).
    pub async fn flow_control_counters(&self, index: u32, port: u32) -> Vec<(String, u64)> {
        self.call(move |e| Box::pin(async move { Ok(flow_control_of(e, index, port).await) }))
            .await
            .unwrap_or_default()
    }

    /// [`Self::flow_control_counters`] of every port that has them, in one trip to the engine.
    pub async fn all_flow_control_counters(&self) -> BTreeMap<(u32, u32), Vec<(String, u64)>> {
        self.call(move |e| {
            Box::pin(async move {
                let ports: Vec<(u32, u32)> = dcb_ports(e).collect();
                let mut out = BTreeMap::new();
                for (index, port) in ports {
                    let c = flow_control_of(e, index, port).await;
                    if !c.is_empty() {
                        out.insert((index, port), c);
                    }
                }
                Ok(out)
            })
        })
        .await
        .unwrap_or_default()
    }
}

/// The RoCE ports that may have DCB: those of hardware devices (rxe and siw have none, and
/// asking each of a few hundred soft devices' netdevs would cost a netlink round trip each).
fn dcb_ports(eng: &Engine) -> impl Iterator<Item = (u32, u32)> + '_ {
    eng.state
        .devices
        .values()
        .filter(|d| d.snap.kind == DeviceKind::Hardware)
        .flat_map(|d| d.roce.keys().map(move |p| (d.index, *p)))
}

async fn flow_control_of(eng: &Engine, index: u32, port: u32) -> Vec<(String, u64)> {
    if !dcb_ports(eng).any(|k| k == (index, port)) {
        return Vec::new();
    }
    let Ok(t) = target(eng, index, port) else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(18);
    // A driver without pause statistics, or without pause at all, leaves them out; so does
    // one without DCB for the PFC counters.
    if let Ok(pause) = eng.host.pause_stats(&t.netdev).await {
        if let Some(n) = pause.tx_frames {
            out.push(("pause.tx_frames".to_string(), n));
        }
        if let Some(n) = pause.rx_frames {
            out.push(("pause.rx_frames".to_string(), n));
        }
    }
    if let Ok(Some(pfc)) = eng.host.dcb_read(&t.netdev).await.map(|c| c.pfc) {
        for p in 0..8 {
            out.push((format!("pfc.requests.{p}"), pfc.requests[p]));
            out.push((format!("pfc.indications.{p}"), pfc.indications[p]));
        }
    }
    out
}

/// The port a profile is for.
#[derive(Debug, Clone)]
struct Target {
    dev: String,
    port: u32,
    netdev: String,
    guid: Guid,
}

/// The QoS profiles of the RoCE ports of hardware devices whose netdev has DCB, by device
/// name and port: what the declarative state shows (`roce[].qos`). Soft devices are not
/// asked (rxe and siw have no DCB).
pub(super) async fn profiles(eng: &Engine) -> BTreeMap<(String, u32), QosProfile> {
    let ports: Vec<(u32, u32)> = dcb_ports(eng).collect();
    let mut out = BTreeMap::new();
    for (index, port) in ports {
        let Ok(t) = target(eng, index, port) else {
            continue;
        };
        match read_now(eng, &t).await {
            Ok(now) => {
                out.insert((t.dev.clone(), port), now.profile());
            }
            Err(HostError::Unsupported { .. }) => {}
            Err(e) => warn!(device = %t.dev, port, error = %e, "reading the QoS profile"),
        }
    }
    out
}

fn target(eng: &Engine, index: u32, port: u32) -> Result<Target, OpError> {
    let d = eng.state.devices.get(&index).ok_or_else(|| {
        OpError::NotFound(format!(
            "there is no RDMA device with index {index} any more (it was removed)"
        ))
    })?;
    let name = d.name().to_string();
    let p = d
        .snap
        .port(port)
        .ok_or_else(|| OpError::NotFound(format!("{name} has no port {port}")))?;
    if not_roce_reason(&name, &d.snap.node_type, p).is_some() {
        return Err(OpError::NotSupported(format!(
            "{name} port {port} is not a RoCE port (Ethernet link layer); a QoS profile applies only to RoCE ports"
        )));
    }
    let netdev = d
        .sources
        .get(&port)
        .and_then(|s| s.netdev.clone())
        .ok_or_else(|| {
            OpError::NotSupported(format!(
                "{name} port {port} has no network interface, which DCB is set on"
            ))
        })?;
    let guid = d.snap.node_guid.clone().map_err(|e| {
        OpError::Failed(format!(
            "the node GUID of {name} cannot be read ({e}); the profile would be remembered by it, so nothing was changed"
        ))
    })?;
    Ok(Target {
        dev: name,
        port,
        netdev,
        guid,
    })
}

/// What the kernel has now.
#[derive(Debug, Clone)]
struct Now {
    dcb: DcbConfig,
    traffic_class: Option<i32>,
    ecn: Option<u8>,
}

impl Now {
    fn dscp_apps(&self) -> BTreeMap<u8, u8> {
        self.dcb
            .apps
            .iter()
            .filter(|a| a.selector == wire::SEL_DSCP)
            .filter_map(|a| u8::try_from(a.protocol).ok().map(|d| (d, a.priority)))
            .collect()
    }

    fn profile(&self) -> QosProfile {
        let dscp = self.dscp_apps();
        let trust = match &self.dcb.trust {
            Some(t) if t.first() == Some(&wire::SEL_DSCP) => Trust::Dscp,
            Some(_) => Trust::Pcp,
            None if dscp.is_empty() => Trust::Pcp,
            None => Trust::Dscp,
        };
        QosProfile {
            trust,
            pfc: self
                .dcb
                .pfc
                .map(|p| priorities(p.pfc_en))
                .unwrap_or_default(),
            ets: self.dcb.ets.map(|e| Ets {
                bandwidth: e.tc_tx_bw.to_vec(),
                prio_tc: e.prio_tc.to_vec(),
            }),
            dscp,
            traffic_class: self.traffic_class.and_then(|t| u8::try_from(t).ok()),
            ecn: self.ecn.map(priorities),
        }
    }
}

async fn read_now(eng: &Engine, t: &Target) -> Result<Now, HostError> {
    Ok(Now {
        dcb: eng.host.dcb_read(&t.netdev).await?,
        traffic_class: eng.host.roce_traffic_class(&t.dev).await?,
        ecn: eng.host.roce_ecn(&t.netdev).await?,
    })
}

/// One change of the host.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Write {
    Dcb(DcbChange),
    TrafficClass(i32),
    Ecn(u8),
}

async fn write(eng: &Engine, t: &Target, w: &Write) -> Result<(), HostError> {
    match w {
        Write::Dcb(c) => eng.host.dcb_change(&t.netdev, c).await,
        Write::TrafficClass(v) => eng.host.set_roce_traffic_class(&t.dev, *v).await,
        Write::Ecn(m) => eng.host.set_roce_ecn(&t.netdev, *m).await,
    }
}

fn apps(m: &BTreeMap<u8, u8>) -> Vec<(u8, u8, u16)> {
    m.iter()
        .map(|(&d, &p)| (wire::SEL_DSCP, p, u16::from(d)))
        .collect()
}

/// The writes that take the host from `now` to `want`, each with its undo; a part the
/// driver does not have is NotSupported before anything is changed.
fn plan(t: &Target, now: &Now, want: &QosProfile) -> Result<Vec<(String, Write, Write)>, OpError> {
    let missing = |what: &str| {
        OpError::NotSupported(format!(
            "{} port {} ({}) has no {what}; nothing was changed",
            t.dev, t.port, t.netdev
        ))
    };
    let mut out = Vec::new();
    if let Some(e) = &want.ets {
        let old = now
            .dcb
            .ets
            .ok_or_else(|| missing("ETS (the driver reports none)"))?;
        let mut new = old;
        new.tc_tsa = [wire::TSA_ETS; 8];
        new.tc_tx_bw.copy_from_slice(&e.bandwidth);
        new.prio_tc.copy_from_slice(&e.prio_tc);
        if new != old {
            out.push((
                "set ETS".into(),
                Write::Dcb(DcbChange::Ets(new.to_bytes())),
                Write::Dcb(DcbChange::Ets(old.to_bytes())),
            ));
        }
    }
    let old_pfc = now.dcb.pfc;
    match old_pfc {
        Some(old) if old.pfc_en != mask(&want.pfc) => {
            let mut new = old;
            new.pfc_en = mask(&want.pfc);
            out.push((
                "set PFC".into(),
                Write::Dcb(DcbChange::Pfc(new.to_bytes())),
                Write::Dcb(DcbChange::Pfc(old.to_bytes())),
            ));
        }
        None if !want.pfc.is_empty() => return Err(missing("PFC (the driver reports none)")),
        _ => {}
    }
    let have = now.dscp_apps();
    let add: BTreeMap<u8, u8> = want
        .dscp
        .iter()
        .filter(|(d, p)| have.get(d) != Some(p))
        .map(|(&d, &p)| (d, p))
        .collect();
    let del: BTreeMap<u8, u8> = have
        .iter()
        .filter(|(d, p)| want.dscp.get(d) != Some(p))
        .map(|(&d, &p)| (d, p))
        .collect();
    // New entries first, then the old ones out (`dcb app replace`): a port whose trust
    // follows its DSCP entries never passes through none.
    if !add.is_empty() {
        out.push((
            "add DSCP map entries".into(),
            Write::Dcb(DcbChange::AddApps(apps(&add))),
            Write::Dcb(DcbChange::DelApps(apps(&add))),
        ));
    }
    if !del.is_empty() {
        out.push((
            "delete DSCP map entries".into(),
            Write::Dcb(DcbChange::DelApps(apps(&del))),
            Write::Dcb(DcbChange::AddApps(apps(&del))),
        ));
    }
    if let Some(old) = &now.dcb.trust {
        let new = match want.trust {
            Trust::Dscp => vec![wire::SEL_DSCP],
            Trust::Pcp => vec![wire::SEL_PCP],
        };
        if *old != new {
            out.push((
                "set the trust order".into(),
                Write::Dcb(DcbChange::Trust(new)),
                Write::Dcb(DcbChange::Trust(old.clone())),
            ));
        }
    }
    if let Some(tc) = want.traffic_class {
        let old = now
            .traffic_class
            .ok_or_else(|| missing("RoCE traffic class file (tc/1/traffic_class)"))?;
        if old != i32::from(tc) {
            out.push((
                "write tc/1/traffic_class".into(),
                Write::TrafficClass(i32::from(tc)),
                Write::TrafficClass(old),
            ));
        }
    }
    if let Some(e) = &want.ecn {
        let old = now
            .ecn
            .ok_or_else(|| missing("RoCE ECN switches (ecn/roce_np, ecn/roce_rp)"))?;
        if old != mask(e) {
            out.push(("write ecn".into(), Write::Ecn(mask(e)), Write::Ecn(old)));
        }
    }
    Ok(out)
}

/// Where what the kernel reads differs from the profile asked for (the parts it manages).
fn differences(want: &QosProfile, got: &QosProfile) -> Vec<String> {
    let mut d = Vec::new();
    if want.trust != got.trust {
        d.push(format!(
            "trust is {}, not {}",
            got.trust.name(),
            want.trust.name()
        ));
    }
    if want.pfc != got.pfc {
        d.push(format!("PFC is on {:?}, not {:?}", got.pfc, want.pfc));
    }
    if want.ets.is_some() && want.ets != got.ets {
        d.push("ETS differs".into());
    }
    if want.dscp != got.dscp {
        d.push("the DSCP map differs".into());
    }
    if want.traffic_class.is_some() && want.traffic_class != got.traffic_class {
        d.push(format!("the traffic class is {:?}", got.traffic_class));
    }
    if want.ecn.is_some() && want.ecn != got.ecn {
        d.push(format!("ECN is on {:?}", got.ecn));
    }
    d
}

async fn set_qos(eng: &mut Engine, index: u32, port: u32, want: QosProfile) -> Result<(), OpError> {
    let t = target(eng, index, port)?;
    let now = read_now(eng, &t).await.map_err(|e| explain(e, &t))?;
    let steps = plan(&t, &now, &want)?;
    let mut persisted: QosSettings = eng.config()?;
    persisted.set(t.guid, port, want.clone());
    let mut tx = Transaction::new(format!("set the QoS profile of {} port {port}", t.dev));
    for (what, apply, undo) in steps {
        let (ta, tu) = (t.clone(), t.clone());
        tx.step(
            eng,
            &what,
            move |e: &mut Engine| {
                Box::pin(
                    async move { write(e, &ta, &apply).await.map_err(|err| explain(err, &ta)) },
                )
            },
            move |e: &mut Engine, ()| {
                Box::pin(async move {
                    let what = describe(&undo);
                    match write(e, &tu, &undo).await {
                        Ok(()) => Ok(format!("{what} of {} was put back", tu.netdev)),
                        Err(err) => Err(format!(
                            "putting back {what} of {} failed ({err})",
                            tu.netdev
                        )),
                    }
                })
            },
        )
        .await?;
    }
    let tr = t.clone();
    tx.check(eng, "read back", move |e: &mut Engine| {
        Box::pin(async move {
            let got = read_now(e, &tr).await.map_err(|err| explain(err, &tr))?;
            let diff = differences(&want, &got.profile());
            if diff.is_empty() {
                Ok(())
            } else {
                Err(OpError::Failed(format!(
                    "{} port {} read back differently from what was set: {}",
                    tr.dev,
                    tr.port,
                    diff.join("; ")
                )))
            }
        })
    })
    .await?;
    tx.check(eng, "save qos.toml", move |e: &mut Engine| {
        Box::pin(e.persist(persisted))
    })
    .await?;
    tx.commit();
    eng.publish(Dirty {
        devices: BTreeSet::from([index]),
        ..Dirty::default()
    })
    .await;
    Ok(())
}

fn describe(w: &Write) -> String {
    match w {
        Write::Dcb(c) => format!("the DCB {}", c.what()),
        Write::TrafficClass(_) => "the RoCE traffic class".into(),
        Write::Ecn(_) => "RoCE ECN".into(),
    }
}

/// A kernel error in the words of the operation; a netdev without DCB keeps the kernel's
/// reason (errno and extended ack).
fn explain(e: HostError, t: &Target) -> OpError {
    match e {
        HostError::Unsupported { what, why } => OpError::NotSupported(format!(
            "{} port {} ({}): {what} is not available: {why}",
            t.dev, t.port, t.netdev
        )),
        HostError::NotFound(what) => OpError::NotFound(format!(
            "{what} does not exist; {} port {} may have gone",
            t.dev, t.port
        )),
        other => OpError::Failed(format!(
            "setting the QoS profile of {} port {} ({}): {other}",
            t.dev, t.port, t.netdev
        )),
    }
}

/// Writes what `qos.toml` holds for the RoCE ports of devices that appeared, where the
/// kernel has something else. Failures are logged; nothing is retried until the device
/// appears again.
pub(super) async fn restore_qos(eng: &mut Engine, appeared: &Appeared) {
    let Ok(persisted) = eng.config::<QosSettings>() else {
        return;
    };
    if persisted.ports.is_empty() {
        return;
    }
    let mut work: Vec<(u32, u32, QosProfile)> = Vec::new();
    for d in eng.state.devices.values() {
        if !appeared.device(d.name()) {
            continue;
        }
        let Ok(guid) = d.snap.node_guid.clone() else {
            continue;
        };
        for p in &d.snap.ports {
            if let Some(e) = persisted.entry(guid, p.number) {
                work.push((d.index, p.number, e.qos.clone()));
            }
        }
    }
    for (index, port, want) in work {
        let Ok(t) = target(eng, index, port) else {
            continue;
        };
        let result = async {
            let now = read_now(eng, &t).await.map_err(|e| explain(e, &t))?;
            let steps = plan(&t, &now, &want)?;
            let n = steps.len();
            for (_, w, _) in steps {
                write(eng, &t, &w).await.map_err(|e| explain(e, &t))?;
            }
            Ok::<usize, OpError>(n)
        }
        .await;
        match result {
            Ok(0) => {}
            Ok(n) => {
                info!(device = %t.dev, port, changes = n, "re-applied the remembered QoS profile")
            }
            Err(e) => warn!(device = %t.dev, port, error = %e,
                "could not re-apply the remembered QoS profile"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::dcb::{IeeeEts, IeeePfc};

    fn t() -> Target {
        Target {
            dev: "mlx5_1".into(),
            port: 1,
            netdev: "eth1".into(),
            guid: Guid(1),
        }
    }

    fn mlx5_now() -> Now {
        Now {
            dcb: DcbConfig {
                ets: Some(IeeeEts::default()),
                pfc: Some(IeeePfc::default()),
                ..DcbConfig::default()
            },
            traffic_class: Some(-1),
            ecn: Some(0xff),
        }
    }

    #[test]
    fn the_recipe_plans_dcb_commands_in_order() {
        let mut want = QosProfile {
            trust: Trust::Dscp,
            pfc: vec![3],
            ets: Some(Ets {
                bandwidth: vec![50, 50, 0, 0, 0, 0, 0, 0],
                prio_tc: vec![0, 0, 0, 1, 0, 0, 0, 0],
            }),
            traffic_class: Some(106),
            ecn: Some(vec![3]),
            ..QosProfile::default()
        };
        want.dscp.insert(26, 3);
        let steps = plan(&t(), &mlx5_now(), &want).unwrap();
        let names: Vec<&str> = steps.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "set ETS",
                "set PFC",
                "add DSCP map entries",
                "write tc/1/traffic_class",
                "write ecn"
            ]
        );
        assert_eq!(
            steps[2].1,
            Write::Dcb(DcbChange::AddApps(vec![(wire::SEL_DSCP, 3, 26)]))
        );
    }

    #[test]
    fn missing_parts_are_refused_before_any_change() {
        let mut now = mlx5_now();
        now.traffic_class = None;
        let want = QosProfile {
            traffic_class: Some(106),
            ..QosProfile::default()
        };
        assert!(matches!(
            plan(&t(), &now, &want),
            Err(OpError::NotSupported(_))
        ));
    }

    #[test]
    fn trust_follows_dscp_entries_without_a_trust_table() {
        let mut now = mlx5_now();
        assert_eq!(now.profile().trust, Trust::Pcp);
        now.dcb.apps.push(crate::kernel::dcb::DcbApp::dscp(26, 3));
        assert_eq!(now.profile().trust, Trust::Dscp);
        now.dcb.trust = Some(vec![wire::SEL_PCP]);
        assert_eq!(now.profile().trust, Trust::Pcp);
    }
}
