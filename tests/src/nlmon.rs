//! Netlink messages as the kernel saw them, through an nlmon device (drivers/net/nlmon.c):
//! every message a process sends to the kernel, and every answer, passes the device's packet
//! taps whole. The kernel lab captures what iproute2's tools send for a request and what the
//! service sends for the same request, and compares them byte for byte.
//!
//! Only the real kernel has this: the simulated host speaks no netlink. Not every protocol
//! passes the taps: net/netlink/af_netlink.c `netlink_filter_tap` lets through rtnetlink,
//! generic netlink (devlink) and a few others, but not `NETLINK_RDMA`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `NLM_F_REQUEST`: set on every message a process sends to the kernel.
const NLM_F_REQUEST: u16 = 0x1;
/// `NLMSG_ERROR`: the kernel's answer (errno 0 is an ACK).
const NLMSG_ERROR: u16 = 0x2;
const HEADER_LEN: usize = 16;

/// One netlink message seen on the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The netlink protocol (`NETLINK_ROUTE` 0, `NETLINK_GENERIC` 16, `NETLINK_RDMA` 20).
    pub protocol: u16,
    pub bytes: Vec<u8>,
}

impl Message {
    pub fn kind(&self) -> u16 {
        u16::from_ne_bytes([self.bytes[4], self.bytes[5]])
    }

    pub fn flags(&self) -> u16 {
        u16::from_ne_bytes([self.bytes[6], self.bytes[7]])
    }

    pub fn is_request(&self) -> bool {
        self.flags() & NLM_F_REQUEST != 0
    }

    /// The message with its sequence number and port id zeroed: the only fields two
    /// programs sending the same request may fill differently.
    pub fn masked(&self) -> Vec<u8> {
        let mut b = self.bytes.clone();
        b[8..HEADER_LEN].fill(0);
        b
    }

    /// The errno of an `NLMSG_ERROR` answer (0 for an ACK), else None.
    pub fn error(&self) -> Option<i32> {
        if self.kind() != NLMSG_ERROR || self.bytes.len() < HEADER_LEN + 4 {
            return None;
        }
        let b = &self.bytes[HEADER_LEN..HEADER_LEN + 4];
        Some(-i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// A packet socket on an nlmon device.
pub struct Capture {
    fd: OwnedFd,
}

impl Capture {
    /// Creates the nlmon device `name` (with `ip`), brings it up and listens on it.
    pub fn start(name: &str) -> io::Result<Capture> {
        let ip = |args: &[&str]| -> io::Result<()> {
            let out = std::process::Command::new("ip").args(args).output()?;
            if out.status.success() {
                Ok(())
            } else {
                Err(io::Error::other(format!(
                    "ip {}: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                )))
            }
        };
        ip(&["link", "add", name, "type", "nlmon"])?;
        ip(&["link", "set", name, "up"])?;
        let ifindex = std::fs::read_to_string(format!("/sys/class/net/{name}/ifindex"))?
            .trim()
            .parse::<i32>()
            .map_err(io::Error::other)?;
        let all = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: a plain socket(2) call; the descriptor is owned at once.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                i32::from(all),
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: raw is a descriptor just returned by socket(2) and owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: sockaddr_ll is plain data; all-zero is a valid value before the fields below.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = all;
        addr.sll_ifindex = ifindex;
        // SAFETY: addr is a valid sockaddr_ll and its size is passed with it.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                std::ptr::addr_of!(addr).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let capture = Capture { fd };
        capture.drain();
        Ok(capture)
    }

    /// Every message seen since the last drain, in order. The taps run synchronously in the
    /// sender's context, so a request and its answer are queued when the call returns.
    pub fn drain(&self) -> Vec<Message> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            // SAFETY: as in start; recvfrom writes at most the sizes it is given.
            let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            // SAFETY: buf and addr outlive the call, with their sizes passed.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    0,
                    std::ptr::addr_of_mut!(addr).cast(),
                    &mut len,
                )
            };
            let Ok(n) = usize::try_from(n) else { break };
            let protocol = u16::from_be(addr.sll_protocol);
            out.extend(split(&buf[..n]).map(|bytes| Message {
                protocol,
                bytes: bytes.to_vec(),
            }));
        }
        out
    }
}

/// The messages of one packet (a batch is several, each with its own length).
fn split(mut packet: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        if packet.len() < HEADER_LEN {
            return None;
        }
        let len = u32::from_ne_bytes([packet[0], packet[1], packet[2], packet[3]]) as usize;
        if len < HEADER_LEN || len > packet.len() {
            return None;
        }
        let (msg, rest) = packet.split_at(len);
        // Messages are 4-byte aligned within a packet.
        packet = rest
            .get((len.next_multiple_of(4) - len).min(rest.len())..)
            .unwrap_or(&[]);
        Some(msg)
    })
}

/// The requests among `messages` of `protocol`, masked for comparison.
pub fn requests(messages: &[Message], protocol: u16) -> Vec<Vec<u8>> {
    messages
        .iter()
        .filter(|m| m.protocol == protocol && m.is_request())
        .map(Message::masked)
        .collect()
}

/// `message` with the padding after each attribute's payload zeroed, from offset `at` (where
/// the attributes start) and inside nests flagged NLA_F_NESTED. The kernel never reads those
/// bytes, and a tool may leave them unwritten (ethtool's buffer keeps what was there).
pub fn zero_attr_padding(message: &[u8], at: usize) -> Vec<u8> {
    let mut out = message.to_vec();
    zero_padding_in(&mut out, at, message.len());
    out
}

const NLA_F_NESTED: u16 = 1 << 15;

fn zero_padding_in(b: &mut [u8], mut at: usize, end: usize) {
    while at + 4 <= end {
        let len = usize::from(u16::from_ne_bytes([b[at], b[at + 1]]));
        let kind = u16::from_ne_bytes([b[at + 2], b[at + 3]]);
        if len < 4 || at + len > end {
            return;
        }
        if kind & NLA_F_NESTED != 0 {
            zero_padding_in(b, at + 4, at + len);
        }
        let padded = (at + len.next_multiple_of(4)).min(end);
        b[at + len..padded].fill(0);
        at = padded;
    }
}

/// A message as hex, for a failure that shows both sides.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: u16, flags: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
        let len = (HEADER_LEN + payload.len()) as u32;
        let mut b = Vec::new();
        b.extend(len.to_ne_bytes());
        b.extend(kind.to_ne_bytes());
        b.extend(flags.to_ne_bytes());
        b.extend(seq.to_ne_bytes());
        b.extend(77u32.to_ne_bytes());
        b.extend(payload);
        b
    }

    /// ethtool's PAUSE_GET of "pa" as strace showed it: the name's padding byte was 0x80.
    #[test]
    fn attribute_padding_is_zeroed_inside_nests_and_nothing_else() {
        let mut m = msg(0x1b, 5, 3, &[0x15, 1, 0, 0]);
        m.extend([0x14, 0, 0x01, 0x80, 7, 0, 2, 0, b'p', b'a', 0, 0x80]);
        m.extend([8, 0, 3, 0, 4, 0, 0, 0]);
        let z = zero_attr_padding(&m, 20);
        assert_eq!(z[31], 0);
        let mut want = m.clone();
        want[31] = 0;
        assert_eq!(z, want);
        // A length running past the message stops the walk rather than panicking.
        let mut bad = m.clone();
        bad[20] = 0xff;
        assert_eq!(zero_attr_padding(&bad, 20), bad);
    }

    #[test]
    fn a_batch_splits_into_aligned_messages_and_masks_seq_and_port() {
        let mut packet = msg(78, NLM_F_REQUEST, 9, &[1, 2, 3]);
        packet.push(0); // padding to 4
        packet.extend(msg(NLMSG_ERROR, 0, 9, &(-95i32).to_ne_bytes()));
        let parts: Vec<_> = split(&packet).collect();
        assert_eq!(parts.len(), 2);
        let req = Message {
            protocol: 0,
            bytes: parts[0].to_vec(),
        };
        assert!(req.is_request());
        assert_eq!(req.masked()[8..16], [0; 8]);
        assert_eq!(req.masked()[16..], [1, 2, 3]);
        let ans = Message {
            protocol: 0,
            bytes: parts[1].to_vec(),
        };
        assert_eq!(ans.error(), Some(95));
        assert_eq!(requests(&[req, ans], 0).len(), 1);
    }
}
