//! The QoS profile of a RoCE port (lossless RoCE): which field of a packet gives its
//! priority (trust), the priorities paused rather than dropped (PFC), how the link's
//! bandwidth is shared between traffic classes (ETS), the DSCP to priority map, mlx5's RoCE
//! traffic class, and ECN/CNP per priority. The daemon checks a request with
//! [`QosProfile::check`] before it changes anything; rdma-tui's form and rdma-cli use the
//! same rules and parsers.
//!
//! The RoCE type of service (what rdma_cm puts in the IP header, e.g. 106: DSCP 26 with
//! ECN) is not part of the profile: it is rdma_cm's `default_roce_tos` (Port.SetRoceTos).

use std::collections::BTreeMap;

use rdma_manager_dbus::types::QosProfile as Bus;
use serde::{Deserialize, Serialize};

/// Priorities and traffic classes of 802.1Q: 0 to 7.
pub const PRIORITIES: u8 = 8;
/// DSCP code points: 0 to 63.
pub const DSCP_MAX: u8 = 63;

/// What the port takes a received packet's priority from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    /// The VLAN header's priority code point (the kernel's default).
    #[default]
    Pcp,
    /// The IP header's DSCP, through the DSCP map.
    Dscp,
}

impl Trust {
    pub fn name(self) -> &'static str {
        match self {
            Trust::Pcp => "pcp",
            Trust::Dscp => "dscp",
        }
    }

    pub fn parse(s: &str) -> Result<Trust, QosError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "pcp" => Ok(Trust::Pcp),
            "dscp" => Ok(Trust::Dscp),
            _ => Err(QosError(format!("trust {s:?} is not pcp or dscp"))),
        }
    }
}

/// Enhanced transmission selection: every traffic class is ETS-scheduled with its share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Ets {
    /// Bandwidth percent of traffic classes 0 to 7; they sum to 100.
    pub bandwidth: Vec<u8>,
    /// The traffic class of priorities 0 to 7.
    pub prio_tc: Vec<u8>,
}

/// A port's QoS profile.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct QosProfile {
    pub trust: Trust,
    /// Priorities with priority flow control (lossless), ascending.
    #[serde(default)]
    pub pfc: Vec<u8>,
    /// Absent: ETS is left as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ets: Option<Ets>,
    /// DSCP code point to priority (keys written as strings: TOML and YAML tables want
    /// them so).
    #[serde(default, with = "dscp_keys")]
    pub dscp: BTreeMap<u8, u8>,
    /// mlx5's `tc/1/traffic_class` of the RDMA device (the traffic class, i.e. the IP ToS
    /// byte, of RoCE traffic not made through rdma_cm); absent: left as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic_class: Option<u8>,
    /// Priorities with RoCE ECN (congestion notification and reaction, mlx5's
    /// `ecn/roce_np` and `ecn/roce_rp`), ascending; absent: left as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<Vec<u8>>,
}

mod dscp_keys {
    use std::collections::BTreeMap;

    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(m: &BTreeMap<u8, u8>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(m.iter().map(|(k, v)| (k.to_string(), *v)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<u8, u8>, D::Error> {
        let raw = BTreeMap::<String, u8>::deserialize(d)?;
        raw.into_iter()
            .map(|(k, v)| {
                k.trim()
                    .parse::<u8>()
                    .map(|k| (k, v))
                    .map_err(|_| D::Error::custom(format!("DSCP {k:?} is not a number (0 to 63)")))
            })
            .collect()
    }
}

/// A profile the rules refuse, with why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct QosError(pub String);

fn check_priorities(what: &str, v: &[u8]) -> Result<(), QosError> {
    let mut seen = 0u8;
    for &p in v {
        if p >= PRIORITIES {
            return Err(QosError(format!(
                "{what} priority {p} does not exist (priorities are 0 to 7)"
            )));
        }
        if seen & (1 << p) != 0 {
            return Err(QosError(format!("{what} priority {p} is given twice")));
        }
        seen |= 1 << p;
    }
    Ok(())
}

/// Bit p set for priority p (checked priorities).
pub fn mask(priorities: &[u8]) -> u8 {
    priorities
        .iter()
        .filter(|&&p| p < PRIORITIES)
        .fold(0, |m, &p| m | (1 << p))
}

/// The priorities of a mask, ascending.
pub fn priorities(mask: u8) -> Vec<u8> {
    (0..PRIORITIES).filter(|p| mask & (1 << p) != 0).collect()
}

impl QosProfile {
    /// The rules a profile must follow before anything is changed.
    pub fn check(&self) -> Result<(), QosError> {
        check_priorities("PFC", &self.pfc)?;
        if let Some(e) = &self.ets {
            if e.bandwidth.len() != usize::from(PRIORITIES) {
                return Err(QosError(format!(
                    "ETS needs the bandwidth of 8 traffic classes, not {}",
                    e.bandwidth.len()
                )));
            }
            if e.prio_tc.len() != usize::from(PRIORITIES) {
                return Err(QosError(format!(
                    "ETS needs the traffic class of 8 priorities, not {}",
                    e.prio_tc.len()
                )));
            }
            if let Some((tc, bw)) = e.bandwidth.iter().enumerate().find(|(_, b)| **b > 100) {
                return Err(QosError(format!(
                    "ETS bandwidth {bw}% of traffic class {tc} is more than 100%"
                )));
            }
            let sum: u32 = e.bandwidth.iter().map(|&b| u32::from(b)).sum();
            if sum != 100 {
                return Err(QosError(format!("ETS bandwidths sum to {sum}%, not 100%")));
            }
            if let Some((p, tc)) = e
                .prio_tc
                .iter()
                .enumerate()
                .find(|(_, t)| **t >= PRIORITIES)
            {
                return Err(QosError(format!(
                    "priority {p} is mapped to traffic class {tc}, which does not exist (0 to 7)"
                )));
            }
        }
        for (&d, &p) in &self.dscp {
            if d > DSCP_MAX {
                return Err(QosError(format!(
                    "DSCP {d} does not exist (code points are 0 to 63)"
                )));
            }
            if p >= PRIORITIES {
                return Err(QosError(format!(
                    "DSCP {d} is mapped to priority {p}, which does not exist (0 to 7)"
                )));
            }
        }
        // mlx5 (and the kernel's app table in general) switches a port to DSCP trust when
        // it holds DSCP entries, and back to PCP when the last one goes: the two must agree.
        match (self.trust, self.dscp.is_empty()) {
            (Trust::Dscp, true) => return Err(QosError(
                "trust dscp needs a DSCP map (e.g. 26:3): the priority of a packet comes from it"
                    .into(),
            )),
            (Trust::Pcp, false) => {
                return Err(QosError(
                    "a DSCP map is only used with trust dscp; drop it or trust dscp".into(),
                ))
            }
            _ => {}
        }
        if let Some(e) = &self.ecn {
            check_priorities("ECN", e)?;
        }
        Ok(())
    }

    /// The same profile in canonical order (priorities ascending).
    pub fn normalized(mut self) -> QosProfile {
        self.pfc = priorities(mask(&self.pfc));
        if let Some(e) = self.ecn.take() {
            self.ecn = Some(priorities(mask(&e)));
        }
        self
    }

    /// This profile with what it leaves as it is (absent ETS, traffic class or ECN) taken
    /// from `now`: what the port holds once it is applied there.
    pub fn over(&self, now: &QosProfile) -> QosProfile {
        QosProfile {
            ets: self.ets.clone().or_else(|| now.ets.clone()),
            traffic_class: self.traffic_class.or(now.traffic_class),
            ecn: self.ecn.clone().or_else(|| now.ecn.clone()),
            ..self.clone()
        }
        .normalized()
    }

    /// One line, `key=value` pairs as the parsers take the values, leaving out what the
    /// profile leaves as it is.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "trust={} pfc={}",
            self.trust.name(),
            format_priorities(&self.pfc)
        );
        if let Some(e) = &self.ets {
            s += &format!(" ets={}", format_ets(Some(e)));
        }
        if !self.dscp.is_empty() {
            s += &format!(" dscp={}", format_dscp_map(&self.dscp));
        }
        if let Some(tc) = self.traffic_class {
            s += &format!(" traffic-class={tc}");
        }
        if let Some(e) = &self.ecn {
            s += &format!(" ecn={}", format_priorities(e));
        }
        s
    }
}

/// Parses a priority list: `3`, `3,4`, `none` or empty for none.
pub fn parse_priorities(what: &str, s: &str) -> Result<Vec<u8>, QosError> {
    let t = s.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    let v = t
        .split(',')
        .map(|x| {
            x.trim()
                .parse::<u8>()
                .map_err(|_| QosError(format!("{what}: {x:?} is not a priority (0 to 7)")))
        })
        .collect::<Result<Vec<u8>, _>>()?;
    check_priorities(what, &v)?;
    Ok(v)
}

/// Parses a DSCP map: `26:3,48:6` (code point:priority), `none` or empty for none.
pub fn parse_dscp_map(s: &str) -> Result<BTreeMap<u8, u8>, QosError> {
    let t = s.trim();
    let mut out = BTreeMap::new();
    if t.is_empty() || t.eq_ignore_ascii_case("none") {
        return Ok(out);
    }
    for pair in t.split(',') {
        let (d, p) = pair
            .split_once(':')
            .ok_or_else(|| QosError(format!("DSCP map entry {pair:?} is not DSCP:PRIORITY")))?;
        let num = |x: &str| {
            x.trim()
                .parse::<u8>()
                .map_err(|_| QosError(format!("DSCP map entry {pair:?} is not DSCP:PRIORITY")))
        };
        if out.insert(num(d)?, num(p)?).is_some() {
            return Err(QosError(format!("DSCP {} is mapped twice", d.trim())));
        }
    }
    Ok(out)
}

/// Parses ETS as `BW0,...,BW7/TC0,...,TC7` (8 bandwidth percents, then the traffic class
/// of priorities 0 to 7), or `none`/empty for ETS left as it is.
pub fn parse_ets(s: &str) -> Result<Option<Ets>, QosError> {
    let t = s.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let (bw, map) = t.split_once('/').ok_or_else(|| {
        QosError(format!(
            "ETS {t:?} is not BANDWIDTHS/PRIO-TC (e.g. 50,50,0,0,0,0,0,0/0,0,0,1,0,0,0,0)"
        ))
    })?;
    let list = |x: &str| {
        x.split(',')
            .map(|n| {
                n.trim()
                    .parse::<u8>()
                    .map_err(|_| QosError(format!("ETS: {n:?} is not a number")))
            })
            .collect::<Result<Vec<u8>, _>>()
    };
    Ok(Some(Ets {
        bandwidth: list(bw)?,
        prio_tc: list(map)?,
    }))
}

/// The priority list as the parsers take it (`3,4`, `none`).
pub fn format_priorities(v: &[u8]) -> String {
    if v.is_empty() {
        return "none".into();
    }
    v.iter().map(u8::to_string).collect::<Vec<_>>().join(",")
}

/// The DSCP map as [`parse_dscp_map`] takes it.
pub fn format_dscp_map(m: &BTreeMap<u8, u8>) -> String {
    if m.is_empty() {
        return "none".into();
    }
    m.iter()
        .map(|(d, p)| format!("{d}:{p}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// ETS as [`parse_ets`] takes it.
pub fn format_ets(e: Option<&Ets>) -> String {
    let Some(e) = e else { return "none".into() };
    let j = |v: &[u8]| v.iter().map(u8::to_string).collect::<Vec<_>>().join(",");
    format!("{}/{}", j(&e.bandwidth), j(&e.prio_tc))
}

/// The bus form of a profile (`Port.SetQosProfile`'s arguments, `GetQosProfile`'s reply).
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

/// The profile of the bus form; the rules ([`QosProfile::check`]) are not checked here.
pub fn from_bus(b: &Bus) -> Result<QosProfile, QosError> {
    let bad = QosError;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn recipe() -> QosProfile {
        QosProfile {
            trust: Trust::Dscp,
            pfc: vec![3],
            ets: parse_ets("50,50,0,0,0,0,0,0/0,0,0,1,0,0,0,0").unwrap(),
            dscp: parse_dscp_map("26:3,48:6").unwrap(),
            traffic_class: Some(106),
            ecn: Some(vec![3]),
        }
    }

    #[test]
    fn the_recipe_passes() {
        assert_eq!(recipe().check(), Ok(()));
    }

    #[test]
    fn bad_profiles_are_refused() {
        let mut p = recipe();
        p.pfc = vec![8];
        assert!(p.check().unwrap_err().0.contains("priority 8"));
        let mut p = recipe();
        p.pfc = vec![3, 3];
        assert!(p.check().unwrap_err().0.contains("twice"));
        let mut p = recipe();
        p.ets = parse_ets("50,40,0,0,0,0,0,0/0,0,0,1,0,0,0,0").unwrap();
        assert!(p.check().unwrap_err().0.contains("sum to 90%"));
        let mut p = recipe();
        p.ets = parse_ets("100,0,0,0,0,0,0,0/0,0,0,9,0,0,0,0").unwrap();
        assert!(p.check().unwrap_err().0.contains("traffic class 9"));
        let mut p = recipe();
        p.ets = parse_ets("100/0").unwrap();
        assert!(p.check().unwrap_err().0.contains("8 traffic classes"));
        let mut p = recipe();
        p.dscp.insert(64, 1);
        assert!(p.check().unwrap_err().0.contains("DSCP 64"));
        let mut p = recipe();
        p.dscp.insert(10, 8);
        assert!(p.check().unwrap_err().0.contains("priority 8"));
        let mut p = recipe();
        p.dscp.clear();
        assert!(p.check().unwrap_err().0.contains("needs a DSCP map"));
        let mut p = recipe();
        p.trust = Trust::Pcp;
        assert!(p
            .check()
            .unwrap_err()
            .0
            .contains("only used with trust dscp"));
        let mut p = recipe();
        p.ecn = Some(vec![9]);
        assert!(p.check().unwrap_err().0.contains("ECN priority 9"));
    }

    #[test]
    fn parsers_round_trip() {
        let p = recipe();
        assert_eq!(parse_dscp_map(&format_dscp_map(&p.dscp)).unwrap(), p.dscp);
        assert_eq!(parse_ets(&format_ets(p.ets.as_ref())).unwrap(), p.ets);
        assert_eq!(
            parse_priorities("PFC", &format_priorities(&p.pfc)).unwrap(),
            p.pfc
        );
        assert_eq!(parse_priorities("PFC", "none").unwrap(), Vec::<u8>::new());
        assert!(parse_dscp_map("26").is_err());
        assert!(parse_dscp_map("26:3,26:4").is_err());
        assert!(Trust::parse("vlan").is_err());
        assert_eq!(mask(&[0, 3]), 0b1001);
        assert_eq!(priorities(0b1001), vec![0, 3]);
    }
}
