//! Link-level pause (IEEE 802.3x flow control) of a netdev over ethtool's generic netlink
//! family, as `ethtool --include-statistics --show-pause IF` reads it:
//!
//! - the family's id from the generic netlink controller (CTRL_CMD_GETFAMILY "ethtool");
//! - ETHTOOL_MSG_PAUSE_GET, NLM_F_REQUEST|NLM_F_ACK, genlmsghdr { cmd, version 1 }, one nest
//!   ETHTOOL_A_PAUSE_HEADER (NLA_F_NESTED) { ETHTOOL_A_HEADER_DEV_NAME, ETHTOOL_A_HEADER_FLAGS
//!   = ETHTOOL_FLAG_STATS }. See [`pause_get_request`].
//!
//! The answer carries the pause settings (autoneg, rx, tx) and, where the driver reports them
//! (`get_pause_stats`, since Linux 5.12), ETHTOOL_A_PAUSE_STATS { TX_FRAMES, RX_FRAMES }. A
//! netdev whose driver has no `get_pauseparam` (veth, dummy, rxe's netdev) is answered with
//! EOPNOTSUPP: [`HostError::Unsupported`] with the kernel's reason. Per-priority pause (PFC)
//! comes from DCB instead (see `dcb`).

use netlink_sys::protocols::NETLINK_GENERIC;
use serde::Serialize;

use super::error::kernel_answered;
use super::nldev::attr::{self, finish_message, nest_end, nest_start, Attrs, WireError};
use super::nldev::consts::nl::{NLM_F_ACK, NLM_F_REQUEST};
use super::nldev::socket::AckedSocket;
use super::{HostError, Op};
use crate::model::Errno;

/// The generic netlink controller.
pub const GENL_ID_CTRL: u16 = 16;
pub const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
pub const ETHTOOL_GENL_NAME: &str = "ethtool";
const ETHTOOL_GENL_VERSION: u8 = 1;

pub const ETHTOOL_MSG_PAUSE_GET: u8 = 21;
const ETHTOOL_A_HEADER_DEV_NAME: u16 = 2;
const ETHTOOL_A_HEADER_FLAGS: u16 = 3;
const ETHTOOL_FLAG_STATS: u32 = 1 << 2;
const ETHTOOL_A_PAUSE_HEADER: u16 = 1;
const ETHTOOL_A_PAUSE_AUTONEG: u16 = 2;
const ETHTOOL_A_PAUSE_RX: u16 = 3;
const ETHTOOL_A_PAUSE_TX: u16 = 4;
const ETHTOOL_A_PAUSE_STATS: u16 = 5;
const ETHTOOL_A_PAUSE_STAT_TX_FRAMES: u16 = 2;
const ETHTOOL_A_PAUSE_STAT_RX_FRAMES: u16 = 3;

/// A netdev's link-level pause: the settings and, where the driver counts them, the pause
/// frames sent and received.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PauseStats {
    pub autoneg: Option<bool>,
    pub rx: Option<bool>,
    pub tx: Option<bool>,
    pub tx_frames: Option<u64>,
    pub rx_frames: Option<u64>,
}

/// Header and genlmsghdr of a generic netlink request (sequence number and port id 0).
fn genl_header(family: u16, cmd: u8, version: u8) -> Vec<u8> {
    let mut b = Vec::with_capacity(64);
    b.extend_from_slice(&0u32.to_ne_bytes());
    b.extend_from_slice(&family.to_ne_bytes());
    b.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    b.extend_from_slice(&[cmd, version, 0, 0]);
    b
}

/// CTRL_CMD_GETFAMILY of `name`.
pub fn get_family_request(name: &str) -> Vec<u8> {
    let mut b = genl_header(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1);
    attr::put_strz(&mut b, CTRL_ATTR_FAMILY_NAME, name);
    finish_message(b)
}

/// ETHTOOL_MSG_PAUSE_GET of `ifname` with statistics, as ethtool (netlink/pause.c
/// `nl_gpause` through `nlsock_prep_get_request` and `ethnla_fill_header`) sends it.
pub fn pause_get_request(family: u16, ifname: &str) -> Vec<u8> {
    let mut b = genl_header(family, ETHTOOL_MSG_PAUSE_GET, ETHTOOL_GENL_VERSION);
    let header = nest_start(&mut b, ETHTOOL_A_PAUSE_HEADER);
    attr::put_strz(&mut b, ETHTOOL_A_HEADER_DEV_NAME, ifname);
    attr::put_u32(&mut b, ETHTOOL_A_HEADER_FLAGS, ETHTOOL_FLAG_STATS);
    nest_end(&mut b, header);
    finish_message(b)
}

/// The attributes after a generic netlink answer's genlmsghdr.
fn genl_attrs(body: &[u8]) -> Result<Attrs<'_>, WireError> {
    Attrs::parse(body.get(4..).unwrap_or_default())
}

/// The family id in the controller's answer.
pub fn parse_family_id(body: &[u8]) -> Result<Option<u16>, WireError> {
    let a = genl_attrs(body)?;
    Ok(a.get(CTRL_ATTR_FAMILY_ID)
        .and_then(|b| <[u8; 2]>::try_from(b).ok())
        .map(u16::from_ne_bytes))
}

/// The ETHTOOL_MSG_PAUSE_GET_REPLY's body.
pub fn parse_pause(body: &[u8]) -> Result<PauseStats, WireError> {
    let a = genl_attrs(body)?;
    let flag = |k| a.u8(k).map(|v| v.map(|v| v != 0));
    let mut out = PauseStats {
        autoneg: flag(ETHTOOL_A_PAUSE_AUTONEG)?,
        rx: flag(ETHTOOL_A_PAUSE_RX)?,
        tx: flag(ETHTOOL_A_PAUSE_TX)?,
        ..PauseStats::default()
    };
    if let Some(stats) = a.nested(ETHTOOL_A_PAUSE_STATS)? {
        out.tx_frames = stats.u64(ETHTOOL_A_PAUSE_STAT_TX_FRAMES)?;
        out.rx_frames = stats.u64(ETHTOOL_A_PAUSE_STAT_RX_FRAMES)?;
    }
    Ok(out)
}

/// The kernel's refusal of the pause read of `ifname`: EOPNOTSUPP (no pause in the driver)
/// and ENODEV are the netdev's; other errnos stay kernel errors.
fn refusal(ifname: &str, errno: Errno, extack: Option<&str>) -> HostError {
    if errno == Errno::ENODEV {
        return HostError::NotFound(format!("netdev {ifname}"));
    }
    if errno == Errno::EOPNOTSUPP {
        return HostError::Unsupported {
            what: format!("link-level pause on {ifname}"),
            why: kernel_answered(errno, extack),
        };
    }
    HostError::kernel(Op::Genl("ethtool"), errno)
}

/// Reads `ifname`'s pause (blocking, on a socket of its own: the family lookup the first
/// time, then one request).
pub fn read_pause(ifname: &str) -> Result<PauseStats, HostError> {
    let op = Op::Genl("ethtool");
    let mut sock = AckedSocket::open(NETLINK_GENERIC, op.clone())?;
    let family = match ETHTOOL_FAMILY.get() {
        Some(&id) => id,
        None => {
            let id = family_id(&mut sock, ifname)?;
            *ETHTOOL_FAMILY.get_or_init(|| id)
        }
    };
    let body = sock
        .transact(
            pause_get_request(family, ifname),
            op.clone(),
            &|errno, extack| refusal(ifname, errno, extack),
        )?
        .ok_or_else(|| protocol_error("no answer before the acknowledgement"))?;
    parse_pause(&body).map_err(|e| protocol_error(&e.to_string()))
}

/// The ethtool family's id, asked once: the kernel registers the built-in family at boot and
/// its id stays until the next (a failed lookup is asked again).
static ETHTOOL_FAMILY: std::sync::OnceLock<u16> = std::sync::OnceLock::new();

fn family_id(sock: &mut AckedSocket, ifname: &str) -> Result<u16, HostError> {
    let body = sock
        .transact(
            get_family_request(ETHTOOL_GENL_NAME),
            Op::Genl("ethtool"),
            &|errno, _| {
                if errno == Errno::ENOENT {
                    HostError::Unsupported {
                        what: format!("link-level pause on {ifname}"),
                        why: "the kernel has no ethtool netlink family (CONFIG_ETHTOOL_NETLINK)"
                            .into(),
                    }
                } else {
                    HostError::kernel(Op::Genl("ethtool"), errno)
                }
            },
        )?
        .ok_or_else(|| protocol_error("the controller did not answer for ethtool"))?;
    parse_family_id(&body)
        .map_err(|e| protocol_error(&e.to_string()))?
        .ok_or_else(|| protocol_error("the controller's answer has no family id"))
}

fn protocol_error(reason: &str) -> HostError {
    HostError::Protocol {
        op: Op::Genl("ethtool"),
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ETHTOOL_MSG_PAUSE_GET of "veth0" as ethtool 6.1 lays it out: 20 bytes of headers, a
    /// 24-byte nest (NLA_F_NESTED) holding the name (NUL included, padded to 4) and the flags.
    #[test]
    fn the_pause_request_is_laid_out_as_ethtool_sends_it() {
        let r = pause_get_request(0x1b, "veth0");
        let mut want = Vec::new();
        want.extend(44u32.to_ne_bytes());
        want.extend(0x1bu16.to_ne_bytes());
        want.extend(5u16.to_ne_bytes());
        want.extend([0u8; 8]);
        want.extend([21, 1, 0, 0]);
        want.extend(24u16.to_ne_bytes());
        want.extend((1u16 | 0x8000).to_ne_bytes());
        want.extend(10u16.to_ne_bytes());
        want.extend(2u16.to_ne_bytes());
        want.extend(b"veth0\0\0\0");
        want.extend(8u16.to_ne_bytes());
        want.extend(3u16.to_ne_bytes());
        want.extend(4u32.to_ne_bytes());
        assert_eq!(r, want);
    }

    #[test]
    fn the_family_request_names_ethtool() {
        let r = get_family_request("ethtool");
        assert_eq!(u16::from_ne_bytes([r[4], r[5]]), GENL_ID_CTRL);
        assert_eq!(&r[16..20], &[CTRL_CMD_GETFAMILY, 1, 0, 0]);
        assert_eq!(&r[24..32], b"ethtool\0");
        assert_eq!(r.len(), 32);
    }

    fn reply(stats: Option<(u64, u64)>) -> Vec<u8> {
        let mut b = vec![22, 1, 0, 0];
        let h = nest_start(&mut b, ETHTOOL_A_PAUSE_HEADER);
        attr::put_u32(&mut b, 1, 7);
        attr::put_strz(&mut b, ETHTOOL_A_HEADER_DEV_NAME, "eth2");
        nest_end(&mut b, h);
        attr::put(&mut b, ETHTOOL_A_PAUSE_AUTONEG, &[1]);
        attr::put(&mut b, ETHTOOL_A_PAUSE_RX, &[1]);
        attr::put(&mut b, ETHTOOL_A_PAUSE_TX, &[0]);
        if let Some((tx, rx)) = stats {
            let s = nest_start(&mut b, ETHTOOL_A_PAUSE_STATS);
            attr::put(&mut b, 1, &[]);
            attr::put(&mut b, ETHTOOL_A_PAUSE_STAT_TX_FRAMES, &tx.to_ne_bytes());
            attr::put(&mut b, ETHTOOL_A_PAUSE_STAT_RX_FRAMES, &rx.to_ne_bytes());
            nest_end(&mut b, s);
        }
        b
    }

    #[test]
    fn a_reply_gives_settings_and_the_frames_the_driver_counts() {
        assert_eq!(
            parse_pause(&reply(Some((12, 34)))),
            Ok(PauseStats {
                autoneg: Some(true),
                rx: Some(true),
                tx: Some(false),
                tx_frames: Some(12),
                rx_frames: Some(34),
            })
        );
        let without = parse_pause(&reply(None)).expect("parses");
        assert_eq!((without.tx_frames, without.rx_frames), (None, None));
        assert_eq!(without.rx, Some(true));
    }

    #[test]
    fn a_truncated_counter_is_a_wire_error() {
        let mut b = vec![22, 1, 0, 0];
        let s = nest_start(&mut b, ETHTOOL_A_PAUSE_STATS);
        attr::put(&mut b, ETHTOOL_A_PAUSE_STAT_TX_FRAMES, &[1, 2, 3]);
        nest_end(&mut b, s);
        assert!(parse_pause(&b).is_err());
    }

    #[test]
    fn the_family_id_is_read_from_the_controllers_answer() {
        let mut b = vec![1, 2, 0, 0];
        attr::put(&mut b, CTRL_ATTR_FAMILY_ID, &0x1bu16.to_ne_bytes());
        attr::put_strz(&mut b, CTRL_ATTR_FAMILY_NAME, "ethtool");
        assert_eq!(parse_family_id(&b), Ok(Some(0x1b)));
    }

    #[test]
    fn refusals_name_the_netdev_and_the_kernels_reason() {
        assert!(matches!(
            refusal("veth0", Errno::EOPNOTSUPP, None),
            HostError::Unsupported { ref what, ref why }
                if what.contains("veth0") && why.contains("EOPNOTSUPP")
        ));
        assert!(matches!(
            refusal("gone0", Errno::ENODEV, None),
            HostError::NotFound(_)
        ));
    }

    /// On this machine's kernel, in a namespace of its own: a veth has no pause, and the
    /// kernel says so with EOPNOTSUPP. Skipped (printed) without the privilege to make a
    /// namespace.
    #[test]
    fn a_veth_has_no_pause() {
        crate::kernel::rtnl::netns::run_or_skip("a_veth_has_no_pause", || async {
            if let Err(e) = crate::kernel::rtnl::netns::add_veth("pau0", "pau1").await {
                eprintln!("SKIP a_veth_has_no_pause: veth: {e}");
                return;
            }
            let r = read_pause("pau0");
            assert!(
                matches!(r, Err(HostError::Unsupported { ref what, ref why })
                    if what.contains("pau0") && why.contains("EOPNOTSUPP")),
                "{r:?}"
            );
            let r = read_pause("nosuchpau");
            assert!(matches!(r, Err(HostError::NotFound(_))), "{r:?}");
        });
    }
}
