//! The QoS profile between its bus form (`rdma_manager_dbus::types::QosProfile`) and the
//! model's.

use rdma_manager_dbus::types::QosProfile as Bus;
use rdma_manager_model::qos::{mask, priorities, Ets, QosProfile, Trust};

use crate::engine::OpError;

/// The bus form of a profile.
pub fn to_bus(p: &QosProfile) -> Bus {
    let (ets_bandwidth, ets_prio_tc) = match &p.ets {
        Some(e) => (e.bandwidth.clone(), e.prio_tc.clone()),
        None => (Vec::new(), Vec::new()),
    };
    Bus {
        trust: p.trust.name().into(),
        pfc: p.pfc.clone(),
        ets_bandwidth,
        ets_prio_tc,
        dscp: p.dscp.iter().map(|(&d, &q)| (d, q)).collect(),
        traffic_class: p.traffic_class.map(i32::from).unwrap_or(-1),
        ecn: p.ecn.as_deref().map(|e| i32::from(mask(e))).unwrap_or(-1),
    }
}

/// The model's profile of a request, or InvalidArgument (the rules are checked after).
pub fn from_bus(b: &Bus) -> Result<QosProfile, OpError> {
    let bad = |m: String| OpError::InvalidArgument(m);
    let trust = Trust::parse(&b.trust).map_err(|e| bad(e.0))?;
    let ets =
        match (b.ets_bandwidth.is_empty(), b.ets_prio_tc.is_empty()) {
            (true, true) => None,
            (false, false) => Some(Ets {
                bandwidth: b.ets_bandwidth.clone(),
                prio_tc: b.ets_prio_tc.clone(),
            }),
            _ => return Err(bad(
                "ETS needs both the bandwidths and the priority to traffic class map, or neither"
                    .into(),
            )),
        };
    let mut dscp = std::collections::BTreeMap::new();
    for &(d, p) in &b.dscp {
        if dscp.insert(d, p).is_some() {
            return Err(bad(format!("DSCP {d} is mapped twice")));
        }
    }
    let traffic_class = match b.traffic_class {
        -1 => None,
        t => Some(u8::try_from(t).map_err(|_| {
            bad(format!(
                "traffic class {t} is not 0 to 255 (or -1: left as it is)"
            ))
        })?),
    };
    let ecn = match b.ecn {
        -1 => None,
        m => Some(priorities(u8::try_from(m).map_err(|_| {
            bad(format!(
                "ECN {m} is not a mask of priorities 0 to 255 (or -1: left as it is)"
            ))
        })?)),
    };
    Ok(QosProfile {
        trust,
        pfc: b.pfc.clone(),
        ets,
        dscp,
        traffic_class,
        ecn,
    })
}

impl crate::dbus::audit::Shown for Vec<u8> {
    fn shown(&self) -> String {
        format!("{self:?}")
    }
}

impl crate::dbus::audit::Shown for Vec<(u8, u8)> {
    fn shown(&self) -> String {
        let text = self
            .iter()
            .map(|(a, b)| format!("{a}:{b}"))
            .collect::<Vec<_>>()
            .join(",");
        rdma_manager_dbus::text::cap_text(&text, 256).to_string()
    }
}

impl crate::dbus::audit::Shown for i32 {
    fn shown(&self) -> String {
        self.to_string()
    }
}
