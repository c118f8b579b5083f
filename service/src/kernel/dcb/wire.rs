//! DCB netlink messages (rtnetlink RTM_GETDCB/RTM_SETDCB, `include/uapi/linux/dcbnl.h`),
//! laid out byte for byte as iproute2's `dcb` lays them out (dcb/dcb.c `dcb_prepare`,
//! `dcb_set_attribute_va`):
//!
//! - header: NLM_F_REQUEST|NLM_F_ACK, `struct dcbmsg { family AF_UNSPEC, cmd, pad[2] }`,
//!   then DCB_ATTR_IFNAME (NUL-terminated);
//! - a set or delete: one nest DCB_ATTR_IEEE (with NLA_F_NESTED, as `mnl_attr_nest_start`
//!   marks it) holding the one attribute the command changes.
//!
//! Every builder here is pure: sequence number and port id are 0; the socket writes the
//! sequence number in before sending.

use super::super::nldev::attr::{
    self, finish_message as finish, nest_end, nest_start, Attrs, WireError,
};
use super::super::nldev::consts::nl::{NLM_F_ACK, NLM_F_REQUEST};

pub const RTM_GETDCB: u16 = 78;
pub const RTM_SETDCB: u16 = 79;

pub const DCB_CMD_IEEE_SET: u8 = 20;
pub const DCB_CMD_IEEE_GET: u8 = 21;
pub const DCB_CMD_IEEE_DEL: u8 = 27;

pub const DCB_ATTR_IFNAME: u16 = 1;
pub const DCB_ATTR_IEEE: u16 = 13;
pub const DCB_ATTR_DCBX: u16 = 14;

pub const DCB_ATTR_IEEE_ETS: u16 = 1;
pub const DCB_ATTR_IEEE_PFC: u16 = 2;
pub const DCB_ATTR_IEEE_APP_TABLE: u16 = 3;
pub const DCB_ATTR_DCB_APP_TRUST_TABLE: u16 = 11;

/// Entries of the app and trust tables: IEEE selectors (1-5), and DCB_ATTR_DCB_APP for the
/// non-standard PCP selector (255).
pub const DCB_ATTR_IEEE_APP: u16 = 1;
pub const DCB_ATTR_DCB_APP: u16 = 2;

/// `IEEE_8021QAZ_APP_SEL_DSCP`.
pub const SEL_DSCP: u8 = 5;
/// `DCB_APP_SEL_PCP`.
pub const SEL_PCP: u8 = 255;

/// `IEEE_8021QAZ_TSA_STRICT` and `IEEE_8021QAZ_TSA_ETS`.
pub const TSA_STRICT: u8 = 0;
pub const TSA_ETS: u8 = 2;

const MAX_TCS: usize = 8;

/// `struct ieee_pfc`: 136 bytes on every Linux ABI (the u64 arrays are 8-aligned).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IeeePfc {
    pub pfc_cap: u8,
    /// Bit p: PFC on priority p.
    pub pfc_en: u8,
    pub mbc: u8,
    pub delay: u16,
    /// PFC frames sent, per priority.
    pub requests: [u64; MAX_TCS],
    /// PFC frames received, per priority.
    pub indications: [u64; MAX_TCS],
}

impl IeeePfc {
    pub const SIZE: usize = 136;

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = vec![0u8; Self::SIZE];
        b[0] = self.pfc_cap;
        b[1] = self.pfc_en;
        b[2] = self.mbc;
        b[4..6].copy_from_slice(&self.delay.to_ne_bytes());
        for i in 0..MAX_TCS {
            b[8 + 8 * i..16 + 8 * i].copy_from_slice(&self.requests[i].to_ne_bytes());
            b[72 + 8 * i..80 + 8 * i].copy_from_slice(&self.indications[i].to_ne_bytes());
        }
        b
    }

    pub fn from_bytes(b: &[u8]) -> Result<IeeePfc, WireError> {
        if b.len() != Self::SIZE {
            return Err(WireError::BadWidth {
                kind: DCB_ATTR_IEEE_PFC,
                expected: Self::SIZE,
                got: b.len(),
            });
        }
        let u64_at = |o: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[o..o + 8]);
            u64::from_ne_bytes(a)
        };
        let mut p = IeeePfc {
            pfc_cap: b[0],
            pfc_en: b[1],
            mbc: b[2],
            delay: u16::from_ne_bytes([b[4], b[5]]),
            ..IeeePfc::default()
        };
        for i in 0..MAX_TCS {
            p.requests[i] = u64_at(8 + 8 * i);
            p.indications[i] = u64_at(72 + 8 * i);
        }
        Ok(p)
    }
}

/// `struct ieee_ets`: 59 bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IeeeEts {
    pub willing: u8,
    pub ets_cap: u8,
    pub cbs: u8,
    pub tc_tx_bw: [u8; MAX_TCS],
    pub tc_rx_bw: [u8; MAX_TCS],
    pub tc_tsa: [u8; MAX_TCS],
    pub prio_tc: [u8; MAX_TCS],
    pub tc_reco_bw: [u8; MAX_TCS],
    pub tc_reco_tsa: [u8; MAX_TCS],
    pub reco_prio_tc: [u8; MAX_TCS],
}

impl IeeeEts {
    pub const SIZE: usize = 59;

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = vec![self.willing, self.ets_cap, self.cbs];
        for a in [
            &self.tc_tx_bw,
            &self.tc_rx_bw,
            &self.tc_tsa,
            &self.prio_tc,
            &self.tc_reco_bw,
            &self.tc_reco_tsa,
            &self.reco_prio_tc,
        ] {
            b.extend_from_slice(a);
        }
        b
    }

    pub fn from_bytes(b: &[u8]) -> Result<IeeeEts, WireError> {
        if b.len() != Self::SIZE {
            return Err(WireError::BadWidth {
                kind: DCB_ATTR_IEEE_ETS,
                expected: Self::SIZE,
                got: b.len(),
            });
        }
        let arr = |i: usize| {
            let mut a = [0u8; MAX_TCS];
            a.copy_from_slice(&b[3 + 8 * i..11 + 8 * i]);
            a
        };
        Ok(IeeeEts {
            willing: b[0],
            ets_cap: b[1],
            cbs: b[2],
            tc_tx_bw: arr(0),
            tc_rx_bw: arr(1),
            tc_tsa: arr(2),
            prio_tc: arr(3),
            tc_reco_bw: arr(4),
            tc_reco_tsa: arr(5),
            reco_prio_tc: arr(6),
        })
    }
}

/// `struct dcb_app`: selector, priority, protocol (for DSCP: the code point).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DcbApp {
    pub selector: u8,
    pub priority: u8,
    pub protocol: u16,
}

impl DcbApp {
    pub fn dscp(dscp: u8, priority: u8) -> DcbApp {
        DcbApp {
            selector: SEL_DSCP,
            priority,
            protocol: u16::from(dscp),
        }
    }

    fn to_bytes(self) -> [u8; 4] {
        let p = self.protocol.to_ne_bytes();
        [self.selector, self.priority, p[0], p[1]]
    }
}

/// What DCB_CMD_IEEE_GET answers (the parts a QoS profile reads).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DcbConfig {
    pub ets: Option<IeeeEts>,
    pub pfc: Option<IeeePfc>,
    pub apps: Vec<DcbApp>,
    /// DCB_ATTR_DCB_APP_TRUST_TABLE: the selectors trusted, in order; absent when the
    /// driver has no `dcbnl_getapptrust` (mlx5, whose trust follows its DSCP app entries).
    pub trust: Option<Vec<u8>>,
    pub dcbx: Option<u8>,
}

/// Header, dcbmsg and DCB_ATTR_IFNAME: `dcb_prepare`.
fn prepare(kind: u16, cmd: u8, ifname: &str) -> Vec<u8> {
    let mut b = Vec::with_capacity(64);
    b.extend_from_slice(&0u32.to_ne_bytes());
    b.extend_from_slice(&kind.to_ne_bytes());
    b.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    // struct dcbmsg { dcb_family = AF_UNSPEC, cmd, dcb_pad }
    b.extend_from_slice(&[0, cmd, 0, 0]);
    attr::put_strz(&mut b, DCB_ATTR_IFNAME, ifname);
    b
}

/// A set/delete of one attribute inside DCB_ATTR_IEEE: `dcb_set_attribute_va`.
fn ieee_request(cmd: u8, ifname: &str, fill: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut b = prepare(RTM_SETDCB, cmd, ifname);
    let ieee = nest_start(&mut b, DCB_ATTR_IEEE);
    fill(&mut b);
    nest_end(&mut b, ieee);
    finish(b)
}

/// DCB_CMD_IEEE_GET: what every `dcb pfc|ets|app|apptrust show dev IF` sends, and the read
/// `dcb ... set` makes before it changes anything.
pub fn ieee_get_request(ifname: &str) -> Vec<u8> {
    finish(prepare(RTM_GETDCB, DCB_CMD_IEEE_GET, ifname))
}

/// DCB_CMD_IEEE_SET of DCB_ATTR_IEEE_PFC: `dcb pfc set dev IF prio-pfc ...` (which sends
/// the struct it read, with `pfc_en` changed).
pub fn ieee_set_pfc_request(ifname: &str, pfc: &IeeePfc) -> Vec<u8> {
    ieee_request(DCB_CMD_IEEE_SET, ifname, |b| {
        attr::put(b, DCB_ATTR_IEEE_PFC, &pfc.to_bytes())
    })
}

/// DCB_CMD_IEEE_SET of DCB_ATTR_IEEE_ETS: `dcb ets set dev IF tc-tsa ... tc-bw ...
/// prio-tc ...` (the struct it read, with those arrays changed).
pub fn ieee_set_ets_request(ifname: &str, ets: &IeeeEts) -> Vec<u8> {
    ieee_request(DCB_CMD_IEEE_SET, ifname, |b| {
        attr::put(b, DCB_ATTR_IEEE_ETS, &ets.to_bytes())
    })
}

fn app_table(b: &mut Vec<u8>, apps: &[DcbApp]) {
    let t = nest_start(b, DCB_ATTR_IEEE_APP_TABLE);
    for a in apps {
        let kind = if a.selector == SEL_PCP {
            DCB_ATTR_DCB_APP
        } else {
            DCB_ATTR_IEEE_APP
        };
        attr::put(b, kind, &a.to_bytes());
    }
    nest_end(b, t);
}

/// DCB_CMD_IEEE_SET of app entries: `dcb app add dev IF dscp-prio D:P ...`.
pub fn ieee_add_apps_request(ifname: &str, apps: &[DcbApp]) -> Vec<u8> {
    ieee_request(DCB_CMD_IEEE_SET, ifname, |b| app_table(b, apps))
}

/// DCB_CMD_IEEE_DEL of app entries: `dcb app del dev IF dscp-prio D:P ...`.
pub fn ieee_del_apps_request(ifname: &str, apps: &[DcbApp]) -> Vec<u8> {
    ieee_request(DCB_CMD_IEEE_DEL, ifname, |b| app_table(b, apps))
}

/// DCB_CMD_IEEE_SET of the trust table: `dcb apptrust set dev IF order SEL...` (iproute2
/// 6.2 and later; Linux 6.1 and later).
pub fn ieee_set_apptrust_request(ifname: &str, selectors: &[u8]) -> Vec<u8> {
    ieee_request(DCB_CMD_IEEE_SET, ifname, |b| {
        let t = nest_start(b, DCB_ATTR_DCB_APP_TRUST_TABLE);
        for &s in selectors {
            let kind = if s == SEL_PCP {
                DCB_ATTR_DCB_APP
            } else {
                DCB_ATTR_IEEE_APP
            };
            attr::put(b, kind, &[s]);
        }
        nest_end(b, t);
    })
}

pub use super::super::nldev::msg::with_seq;

/// The attributes after a DCB message's `struct dcbmsg`.
fn body_attrs(body: &[u8]) -> Result<Attrs<'_>, WireError> {
    Attrs::parse(body.get(4..).unwrap_or_default())
}

/// Decodes the body (after the netlink header) of the kernel's DCB_CMD_IEEE_GET answer.
pub fn parse_ieee_get(body: &[u8]) -> Result<DcbConfig, WireError> {
    let top = body_attrs(body)?;
    let mut out = DcbConfig {
        dcbx: top.u8(DCB_ATTR_DCBX)?,
        ..DcbConfig::default()
    };
    let Some(ieee) = top.nested(DCB_ATTR_IEEE)? else {
        return Ok(out);
    };
    if let Some(b) = ieee.get(DCB_ATTR_IEEE_ETS) {
        out.ets = Some(IeeeEts::from_bytes(b)?);
    }
    if let Some(b) = ieee.get(DCB_ATTR_IEEE_PFC) {
        out.pfc = Some(IeeePfc::from_bytes(b)?);
    }
    if let Some(t) = ieee.nested(DCB_ATTR_IEEE_APP_TABLE)? {
        for a in t.iter() {
            if a.payload.len() < 4 {
                continue;
            }
            out.apps.push(DcbApp {
                selector: a.payload[0],
                priority: a.payload[1],
                protocol: u16::from_ne_bytes([a.payload[2], a.payload[3]]),
            });
        }
    }
    if let Some(t) = ieee.nested(DCB_ATTR_DCB_APP_TRUST_TABLE)? {
        out.trust = Some(
            t.iter()
                .filter_map(|a| a.payload.first().copied())
                .collect(),
        );
    }
    Ok(out)
}

/// The errno a DCB_CMD_IEEE_SET/DEL answer carries in its DCB_ATTR_IEEE (a u8 that is an
/// i8 holding a negative errno, as iproute2's `dcb_set_attribute_attr_cb` reads it); 0 when
/// the change was made.
pub fn set_reply_errno(body: &[u8]) -> Result<i32, WireError> {
    let top = body_attrs(body)?;
    Ok(match top.u8(DCB_ATTR_IEEE)? {
        Some(v) => -i32::from(v as i8),
        None => 0,
    })
}
