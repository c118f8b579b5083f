//! The traffic counters of every netdev in one rtnetlink dump (RTM_GETSTATS with only
//! IFLA_STATS_LINK_64, what `ip stats show group link` asks), for the 1 Hz poll of RoCE ports,
//! whose traffic is counted on their netdev: one dump a second instead of opening and reading
//! four `statistics/*` files of every port (1024 sysfs reads a second on 256 rxe ports, the
//! largest part of the idle daemon's CPU in the lab).
//!
//! The values are the kernel's `dev_get_stats`, which the sysfs files print too.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const RTM_NEWSTATS: u16 = 92;
const RTM_GETSTATS: u16 = 94;
const IFLA_STATS_LINK_64: u16 = 1;
const NLMSG_HDRLEN: usize = 16;
/// `struct if_stats_msg`: family, pad1, pad2, ifindex, filter_mask.
const IF_STATS_MSG_LEN: usize = 12;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;

/// One netdev's counters, as `statistics/{tx,rx}_{bytes,packets}` read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkCounters {
    pub tx_bytes: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub rx_packets: u64,
}

/// A source of every netdev's counters at once, by ifindex.
pub trait LinkStats: Send + Sync {
    fn dump(&mut self) -> std::io::Result<HashMap<u32, LinkCounters>>;
}

/// The request: a dump of IFLA_STATS_LINK_64 of every link.
pub fn request(seq: u32) -> Vec<u8> {
    let len = NLMSG_HDRLEN + IF_STATS_MSG_LEN;
    let mut b = Vec::with_capacity(len);
    b.extend_from_slice(&(len as u32).to_ne_bytes());
    b.extend_from_slice(&RTM_GETSTATS.to_ne_bytes());
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
    b.extend_from_slice(&flags.to_ne_bytes());
    b.extend_from_slice(&seq.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    // if_stats_msg: AF_UNSPEC, padding, every ifindex, the filter bit of IFLA_STATS_LINK_64.
    b.extend_from_slice(&[0, 0, 0, 0]);
    b.extend_from_slice(&0u32.to_ne_bytes());
    b.extend_from_slice(&(1u32 << (IFLA_STATS_LINK_64 - 1)).to_ne_bytes());
    b
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// What one datagram of the answer says: the counters it carries, and whether the dump ended
/// (NLMSG_DONE). A kernel error is returned as such; a malformed message ends the parse.
pub fn parse(datagram: &[u8], out: &mut HashMap<u32, LinkCounters>) -> std::io::Result<bool> {
    let mut at = 0;
    while at + NLMSG_HDRLEN <= datagram.len() {
        let (Some(len), Some(kind)) = (u32_at(datagram, at), u16_at(datagram, at + 4)) else {
            break;
        };
        let len = len as usize;
        if len < NLMSG_HDRLEN || at + len > datagram.len() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "truncated rtnetlink message",
            ));
        }
        let msg = &datagram[at + NLMSG_HDRLEN..at + len];
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let errno = u32_at(msg, 0).map_or(libc::EIO, |e| (e as i32).saturating_abs());
                if errno != 0 {
                    return Err(std::io::Error::from_raw_os_error(errno));
                }
            }
            RTM_NEWSTATS => {
                if let Some(ifindex) = u32_at(msg, 4) {
                    let mut a = IF_STATS_MSG_LEN;
                    while a + 4 <= msg.len() {
                        let (Some(alen), Some(atype)) = (u16_at(msg, a), u16_at(msg, a + 2)) else {
                            break;
                        };
                        let alen = alen as usize;
                        if alen < 4 || a + alen > msg.len() {
                            break;
                        }
                        if atype & 0x3fff == IFLA_STATS_LINK_64 {
                            // struct rtnl_link_stats64 begins rx_packets, tx_packets,
                            // rx_bytes, tx_bytes.
                            let p = a + 4;
                            if let (Some(rxp), Some(txp), Some(rxb), Some(txb)) = (
                                u64_at(msg, p),
                                u64_at(msg, p + 8),
                                u64_at(msg, p + 16),
                                u64_at(msg, p + 24),
                            ) {
                                out.insert(
                                    ifindex,
                                    LinkCounters {
                                        tx_bytes: txb,
                                        rx_bytes: rxb,
                                        tx_packets: txp,
                                        rx_packets: rxp,
                                    },
                                );
                            }
                        }
                        a += (alen + 3) & !3;
                    }
                }
            }
            _ => {}
        }
        at += (len + 3) & !3;
    }
    Ok(false)
}

/// The dump over a NETLINK_ROUTE socket kept open between polls (one descriptor).
pub struct RtnlLinkStats {
    fd: OwnedFd,
    seq: u32,
    buf: Vec<u8>,
}

impl RtnlLinkStats {
    pub fn open() -> std::io::Result<RtnlLinkStats> {
        // SAFETY: plain socket(2); the descriptor is owned below.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(RtnlLinkStats {
            fd,
            seq: 0,
            buf: vec![0; 64 * 1024],
        })
    }
}

impl LinkStats for RtnlLinkStats {
    fn dump(&mut self) -> std::io::Result<HashMap<u32, LinkCounters>> {
        self.seq = self.seq.wrapping_add(1);
        let req = request(self.seq);
        // SAFETY: sends the request's bytes to the kernel (the default destination of a
        // netlink socket is the kernel).
        let sent = unsafe { libc::send(self.fd.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) };
        if sent < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut out = HashMap::new();
        loop {
            // SAFETY: receives into the buffer, at most its length.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    0,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let n = usize::try_from(n).unwrap_or(0);
            if n == 0 || parse(&self.buf[..n], &mut out)? {
                return Ok(out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: u16, body: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&((NLMSG_HDRLEN + body.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&[0; 10]);
        m.extend_from_slice(body);
        while m.len() % 4 != 0 {
            m.push(0);
        }
        m
    }

    fn stats(ifindex: u32, values: [u64; 4]) -> Vec<u8> {
        let mut body = vec![0u8; 4];
        body.extend_from_slice(&ifindex.to_ne_bytes());
        body.extend_from_slice(&1u32.to_ne_bytes());
        let payload: Vec<u8> = values
            .iter()
            .chain([0u64; 20].iter())
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        body.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
        body.extend_from_slice(&IFLA_STATS_LINK_64.to_ne_bytes());
        body.extend_from_slice(&payload);
        message(RTM_NEWSTATS, &body)
    }

    #[test]
    fn a_dump_gives_each_link_s_counters_in_sysfs_s_names() {
        let mut d = stats(7, [1, 2, 3, 4]);
        d.extend(stats(9, [10, 20, 30, 40]));
        let mut out = HashMap::new();
        assert!(!parse(&d, &mut out).unwrap());
        assert!(parse(&message(NLMSG_DONE, &[0; 4]), &mut out).unwrap());
        assert_eq!(
            out[&7],
            LinkCounters {
                rx_packets: 1,
                tx_packets: 2,
                rx_bytes: 3,
                tx_bytes: 4
            }
        );
        assert_eq!(out[&9].tx_bytes, 40);
    }

    #[test]
    fn a_kernel_error_and_a_truncated_message_are_errors() {
        let err = message(NLMSG_ERROR, &(-libc::EPERM).to_ne_bytes());
        let e = parse(&err, &mut HashMap::new()).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EPERM));
        let mut cut = stats(7, [1, 2, 3, 4]);
        cut.truncate(30);
        assert!(parse(&cut, &mut HashMap::new()).is_err());
    }

    /// On this machine's own kernel: loopback's counters as the dump gives them are those
    /// its sysfs files give (read around the dump: they may only grow between).
    #[test]
    fn the_kernel_s_dump_agrees_with_sysfs() {
        let read = |f: &str| -> u64 {
            std::fs::read_to_string(format!("/sys/class/net/lo/statistics/{f}"))
                .expect("lo statistics")
                .trim()
                .parse()
                .expect("number")
        };
        let before = read("tx_bytes");
        let got = RtnlLinkStats::open().expect("socket").dump().expect("dump");
        let after = read("tx_bytes");
        let lo = got.get(&1).expect("loopback is ifindex 1");
        assert!(
            before <= lo.tx_bytes && lo.tx_bytes <= after,
            "{before} {lo:?} {after}"
        );
    }
}
