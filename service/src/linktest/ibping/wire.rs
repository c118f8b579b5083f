//! The bytes: the header the kernel's umad device puts before every MAD
//! (`struct ib_user_mad_hdr`, include/uapi/rdma/ib_user_mad.h, with the P_Key index that
//! `IB_USER_MAD_ENABLE_PKEY` turns on), and the ping MAD of infiniband-diags' `ibping`: a
//! Get of the vendor class 0x32 (range 2, so an OUI at bytes 37 to 39), attribute 0,
//! answered with a GetResp whose data (from byte 40) holds the responder's host name.

/// Length of `struct ib_user_mad_hdr` with the P_Key index (ABI 5, P_Key enabled).
pub const HDR_LEN: usize = 64;
/// Length of the header without it (`struct ib_user_mad_hdr_old`): the same fields up to
/// the flow label.
pub const OLD_HDR_LEN: usize = 56;
/// Length of a MAD on the GSI.
pub const MAD_LEN: usize = 256;
/// The vendor class of OpenIB's ping (`IB_VENDOR_OPENIB_PING_CLASS`).
pub const PING_CLASS: u8 = 0x32;
/// OpenIB's OUI (`IB_OPENIB_OUI`), which ibping's Get carries and its server registers.
pub const OPENIB_OUI: u32 = 0x0000_1405;
/// The well-known Q_Key of QP1.
pub const QP1_QKEY: u32 = 0x8001_0000;
/// Where a vendor range 2 MAD's data starts, and how long it is.
pub const DATA_OFFSET: usize = 40;
pub const DATA_LEN: usize = MAD_LEN - DATA_OFFSET;

const METHOD_GET: u8 = 0x01;
const METHOD_GET_RESP: u8 = 0x81;

/// The address part of the umad header (`struct ib_user_mad_hdr` after `length`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Addr {
    pub qpn: u32,
    pub qkey: u32,
    pub lid: u16,
    pub sl: u8,
    pub path_bits: u8,
    pub grh_present: bool,
    pub gid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub gid: [u8; 16],
    pub flow_label: u32,
    pub pkey_index: u16,
}

/// `struct ib_user_mad_hdr`: multi-byte fields before the address are in host order, the
/// address's own in network order (the P_Key index in host order again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hdr {
    pub agent_id: u32,
    pub status: u32,
    pub timeout_ms: u32,
    pub retries: u32,
    pub length: u32,
    pub addr: Addr,
}

impl Hdr {
    pub fn encode(&self) -> [u8; HDR_LEN] {
        let mut b = [0u8; HDR_LEN];
        b[0..4].copy_from_slice(&self.agent_id.to_ne_bytes());
        b[4..8].copy_from_slice(&self.status.to_ne_bytes());
        b[8..12].copy_from_slice(&self.timeout_ms.to_ne_bytes());
        b[12..16].copy_from_slice(&self.retries.to_ne_bytes());
        b[16..20].copy_from_slice(&self.length.to_ne_bytes());
        let a = &self.addr;
        b[20..24].copy_from_slice(&a.qpn.to_be_bytes());
        b[24..28].copy_from_slice(&a.qkey.to_be_bytes());
        b[28..30].copy_from_slice(&a.lid.to_be_bytes());
        b[30] = a.sl;
        b[31] = a.path_bits;
        b[32] = u8::from(a.grh_present);
        b[33] = a.gid_index;
        b[34] = a.hop_limit;
        b[35] = a.traffic_class;
        b[36..52].copy_from_slice(&a.gid);
        b[52..56].copy_from_slice(&a.flow_label.to_be_bytes());
        b[56..58].copy_from_slice(&a.pkey_index.to_ne_bytes());
        b
    }

    pub fn decode(b: &[u8; HDR_LEN]) -> Hdr {
        let ne32 = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let be32 = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&b[36..52]);
        Hdr {
            agent_id: ne32(0),
            status: ne32(4),
            timeout_ms: ne32(8),
            retries: ne32(12),
            length: ne32(16),
            addr: Addr {
                qpn: be32(20),
                qkey: be32(24),
                lid: u16::from_be_bytes([b[28], b[29]]),
                sl: b[30],
                path_bits: b[31],
                grh_present: b[32] != 0,
                gid_index: b[33],
                hop_limit: b[34],
                traffic_class: b[35],
                gid,
                flow_label: be32(52),
                pkey_index: u16::from_ne_bytes([b[56], b[57]]),
            },
        }
    }
}

/// ibping's Get: base version 1, class 0x32 version 1, transaction `tid`, attribute 0,
/// OpenIB's OUI, no data.
pub fn ping_request(tid: u64) -> [u8; MAD_LEN] {
    let mut m = [0u8; MAD_LEN];
    m[0] = 1;
    m[1] = PING_CLASS;
    m[2] = 1;
    m[3] = METHOD_GET;
    m[8..16].copy_from_slice(&tid.to_be_bytes());
    m[37..40].copy_from_slice(&OPENIB_OUI.to_be_bytes()[1..]);
    m
}

/// What a received MAD is, to the ping's two sides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ping {
    /// A ping to answer.
    Request,
    /// The answer to transaction `tid`, from the host named `host`.
    Reply { tid: u64, host: String },
    /// Anything else: another class, method or OUI, a bad status.
    Other,
}

/// A MAD's transaction id.
pub fn tid(m: &[u8; MAD_LEN]) -> u64 {
    let mut t = [0u8; 8];
    t.copy_from_slice(&m[8..16]);
    u64::from_be_bytes(t)
}

fn oui(m: &[u8; MAD_LEN]) -> u32 {
    u32::from_be_bytes([0, m[37], m[38], m[39]])
}

pub fn classify(m: &[u8; MAD_LEN]) -> Ping {
    if m[0] != 1 || m[1] != PING_CLASS || oui(m) != OPENIB_OUI {
        return Ping::Other;
    }
    let status = u16::from_be_bytes([m[4], m[5]]);
    match m[3] {
        METHOD_GET => Ping::Request,
        METHOD_GET_RESP if status == 0 => {
            let data = &m[DATA_OFFSET..];
            let end = data.iter().position(|&c| c == 0).unwrap_or(data.len());
            Ping::Reply {
                tid: tid(m),
                host: String::from_utf8_lossy(&data[..end]).into_owned(),
            }
        }
        _ => Ping::Other,
    }
}

/// The answer to `request`, as ibping's server gives it (libibmad's `mad_respond_via`): the
/// same header turned into a GetResp with status 0, the host name as the data (cut to the
/// data's length less its NUL).
pub fn ping_reply(request: &[u8; MAD_LEN], host: &str) -> [u8; MAD_LEN] {
    let mut m = *request;
    m[3] = METHOD_GET_RESP;
    m[4] = 0;
    m[5] = 0;
    m[DATA_OFFSET..].fill(0);
    let name = host.as_bytes();
    let n = name.len().min(DATA_LEN - 1);
    m[DATA_OFFSET..DATA_OFFSET + n].copy_from_slice(&name[..n]);
    m
}

/// Where the reply to a request received with `from` goes: back to its source LID and QP,
/// with QP1's Q_Key (the kernel does not report the sender's), the same SL, P_Key index and
/// GRH when the request had one.
pub fn reply_addr(from: &Addr) -> Addr {
    Addr {
        qkey: if from.qpn == 1 || from.qkey == 0 {
            QP1_QKEY
        } else {
            from.qkey
        },
        ..*from
    }
}

/// Where a ping to `lid` goes: its QP1, the default SL and P_Key index 0 (the default P_Key).
pub fn request_addr(lid: u16) -> Addr {
    Addr {
        qpn: 1,
        qkey: QP1_QKEY,
        lid,
        ..Addr::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_round_trips_with_the_address_in_network_order() {
        let h = Hdr {
            agent_id: 3,
            status: 110,
            timeout_ms: 1000,
            retries: 0,
            length: 320,
            addr: Addr {
                qpn: 1,
                qkey: QP1_QKEY,
                lid: 0x0102,
                sl: 4,
                pkey_index: 2,
                grh_present: true,
                gid: [0xfe; 16],
                flow_label: 7,
                ..Addr::default()
            },
        };
        let b = h.encode();
        assert_eq!(&b[20..24], &[0, 0, 0, 1]);
        assert_eq!(&b[24..28], &[0x80, 0x01, 0, 0]);
        assert_eq!(&b[28..30], &[0x01, 0x02]);
        assert_eq!(b[30], 4);
        assert_eq!(b[32], 1);
        assert_eq!(&b[52..56], &[0, 0, 0, 7]);
        assert_eq!(Hdr::decode(&b), h);
    }

    #[test]
    fn a_request_is_ibpings_get_and_its_reply_carries_the_host() {
        let q = ping_request(0x1122_3344_5566_7788);
        assert_eq!(&q[..4], &[1, 0x32, 1, 0x01]);
        assert_eq!(&q[8..16], &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]);
        assert_eq!(&q[37..40], &[0x00, 0x14, 0x05]);
        assert_eq!(classify(&q), Ping::Request);
        assert_eq!(tid(&q), 0x1122_3344_5566_7788);
        let r = ping_reply(&q, "node1.(none)");
        assert_eq!(r[3], 0x81);
        assert_eq!(
            classify(&r),
            Ping::Reply {
                tid: 0x1122_3344_5566_7788,
                host: "node1.(none)".into()
            }
        );
        // A name longer than the data is cut, and still ends with a NUL.
        let long = "x".repeat(400);
        let r = ping_reply(&q, &long);
        assert_eq!(r[MAD_LEN - 1], 0);
        assert!(matches!(classify(&r), Ping::Reply { host, .. } if host.len() == DATA_LEN - 1));
    }

    #[test]
    fn other_classes_ouis_and_failed_replies_are_not_pings() {
        let q = ping_request(1);
        let mut other = q;
        other[1] = 0x03;
        assert_eq!(classify(&other), Ping::Other);
        let mut other = q;
        other[39] = 0x06;
        assert_eq!(classify(&other), Ping::Other);
        let mut failed = ping_reply(&q, "h");
        failed[5] = 0x0c;
        assert_eq!(classify(&failed), Ping::Other);
    }

    #[test]
    fn replies_go_back_to_the_sender_with_qp1s_qkey() {
        let from = Addr {
            qpn: 1,
            lid: 9,
            sl: 2,
            pkey_index: 1,
            ..Addr::default()
        };
        let to = reply_addr(&from);
        assert_eq!(
            (to.qpn, to.qkey, to.lid, to.sl, to.pkey_index),
            (1, QP1_QKEY, 9, 2, 1)
        );
        assert_eq!(request_addr(5).qkey, QP1_QKEY);
    }
}
