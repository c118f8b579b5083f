//! The rules of a link test's request that rdma-managerd and its clients share: the peer as
//! the caller gives it (an IP address, a GID, or on InfiniBand a LID), the kinds, and the
//! bounds of the duration and timeout.
//!
//! A LID is for kind `ibping` alone (infiniband-diags' ping, which needs no address).
//!
//! The tools the tests drive reach a peer by IP address (rdma_cm resolves it to a GID and a
//! route, ping sends to it), so a GID is taken only where it names an address: an IPv4-mapped
//! GID (`::ffff:a.b.c.d`, a RoCE v2 entry for an IPv4 address) is that address, and any other
//! non-link-local GID is the IPv6 address itself (RoCE v2 entries are the netdev's addresses).
//! A LID has no address at all: the kinds that need one refuse it.

use std::net::{IpAddr, Ipv6Addr};

use rdma_manager_dbus::text::quote_capped;

/// Why a peer was refused before any test ran.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerError {
    #[error("peer {0} is not an IP address, a GID or a LID")]
    Invalid(String),
    #[error("peer {0} is an InfiniBand LID: kind ibping pings a LID; rdma and icmp reach a peer by IP address (an IPoIB address of the peer)")]
    Lid(String),
    #[error("peer {0} is a link-local GID (an InfiniBand port GID or a RoCE v1 entry), which maps to no routable address; give the peer's IP address")]
    LinkLocalGid(String),
    #[error("peer {0} is not a usable address (unspecified, multicast or broadcast)")]
    Unusable(String),
}

/// The kinds of link test, as the API names them.
pub const KINDS: [&str; 3] = ["rdma", "icmp", "ibping"];
/// The longest test and the longest wait accepted.
/// How far a running test has come, as `Port.LinkTestProgress` says it (its `stage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Started: the path is known, no figure yet.
    Running,
    /// An RDMA test's latency is measured; its bandwidth test runs now.
    Bandwidth,
    /// Ended: the result, as `TestLink` returns it.
    Done,
}

impl Stage {
    pub const fn as_str(self) -> &'static str {
        match self {
            Stage::Running => "running",
            Stage::Bandwidth => "bandwidth",
            Stage::Done => "done",
        }
    }

    pub fn parse(s: &str) -> Option<Stage> {
        [Stage::Running, Stage::Bandwidth, Stage::Done]
            .into_iter()
            .find(|stage| stage.as_str() == s)
    }
}

pub const MAX_DURATION_S: u32 = 60;
pub const MAX_TIMEOUT_S: u32 = 600;
/// The timeout of a test given 0.
pub const DEFAULT_TIMEOUT_S: u32 = 30;

/// Why a duration or timeout was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoundError {
    #[error("duration {0} s is over {MAX_DURATION_S} s")]
    Duration(u32),
    #[error("timeout {0} s is over {MAX_TIMEOUT_S} s")]
    Timeout(u32),
}

/// A test's duration, checked (0: the tools' own counts).
pub fn check_duration(duration_s: u32) -> Result<u32, BoundError> {
    if duration_s > MAX_DURATION_S {
        return Err(BoundError::Duration(duration_s));
    }
    Ok(duration_s)
}

/// A test's timeout, checked; 0 is [`DEFAULT_TIMEOUT_S`].
pub fn check_timeout(timeout_s: u32) -> Result<u32, BoundError> {
    match timeout_s {
        0 => Ok(DEFAULT_TIMEOUT_S),
        t if t > MAX_TIMEOUT_S => Err(BoundError::Timeout(t)),
        t => Ok(t),
    }
}

/// The address the tools are pointed at, parsed from what the caller gave.
pub fn parse_peer(peer: &str) -> Result<IpAddr, PeerError> {
    let t = peer.trim();
    let q = || quote_capped(peer);
    if t.is_empty() {
        return Err(PeerError::Invalid(q()));
    }
    let addr = if let Ok(a) = t.parse::<IpAddr>() {
        // An IPv4-mapped IPv6 address written as such is the IPv4 address (how rdma_cm and
        // the GID table write it).
        match a {
            IpAddr::V6(v6) => mapped_or_v6(v6, q)?,
            v4 => v4,
        }
    } else if let Some(v6) = parse_sysfs_gid(t) {
        mapped_or_v6(v6, q)?
    } else if parse_lid(t).is_some() {
        return Err(PeerError::Lid(q()));
    } else {
        return Err(PeerError::Invalid(q()));
    };
    let unusable = match addr {
        IpAddr::V4(v4) => v4.is_unspecified() || v4.is_multicast() || v4.is_broadcast(),
        IpAddr::V6(v6) => v6.is_unspecified() || v6.is_multicast(),
    };
    if unusable {
        return Err(PeerError::Unusable(q()));
    }
    Ok(addr)
}

fn mapped_or_v6(v6: Ipv6Addr, q: impl Fn() -> String) -> Result<IpAddr, PeerError> {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Ok(IpAddr::V4(v4));
    }
    // fe80::/10: an InfiniBand GID (subnet prefix fe80::) or a RoCE link-local entry.
    if v6.segments()[0] & 0xffc0 == 0xfe80 {
        return Err(PeerError::LinkLocalGid(q()));
    }
    Ok(IpAddr::V6(v6))
}

/// A GID as sysfs and the Port's `Gids` print it: eight groups of four hex digits.
fn parse_sysfs_gid(s: &str) -> Option<Ipv6Addr> {
    let groups: Vec<&str> = s.split(':').collect();
    if groups.len() != 8
        || !groups
            .iter()
            .all(|g| g.len() == 4 && g.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return None;
    }
    let mut seg = [0u16; 8];
    for (i, g) in groups.iter().enumerate() {
        seg[i] = u16::from_str_radix(g, 16).ok()?;
    }
    Some(Ipv6Addr::from(seg))
}

/// A LID as ibstat and `ibping -L` take it: decimal or 0x hex, 1 to 0xbfff (unicast).
pub fn parse_lid(s: &str) -> Option<u16> {
    let n = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) if !h.is_empty() && h.len() <= 4 => u32::from_str_radix(h, 16).ok(),
        Some(_) => None,
        None if !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse().ok()
        }
        None => None,
    };
    match n {
        Some(v @ 1..=0xbfff) => u16::try_from(v).ok(),
        _ => None,
    }
}

/// The 16 bytes of a GID as perftest prints them (`GID: 00:00:...:255:255:192:168:77:10`,
/// decimal bytes), as an address.
pub fn parse_perftest_gid(s: &str) -> Option<Ipv6Addr> {
    let bytes: Vec<u8> = s
        .trim()
        .split(':')
        .map(|b| b.parse::<u8>())
        .collect::<Result<_, _>>()
        .ok()?;
    let octets: [u8; 16] = bytes.try_into().ok()?;
    Some(Ipv6Addr::from(octets))
}

/// A GID of the Port's `Gids` (sysfs form) as an address.
pub fn gid_address(sysfs: &str) -> Option<Ipv6Addr> {
    parse_sysfs_gid(sysfs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_gids_name_the_same_peer() {
        let v4: IpAddr = "192.168.77.11".parse().unwrap();
        assert_eq!(parse_peer("192.168.77.11"), Ok(v4));
        assert_eq!(parse_peer(" ::ffff:192.168.77.11 "), Ok(v4));
        assert_eq!(
            parse_peer("0000:0000:0000:0000:0000:ffff:c0a8:4d0b"),
            Ok(v4)
        );
        assert_eq!(
            parse_peer("fd00:0000:0000:0000:0000:0000:0000:0011"),
            Ok("fd00::11".parse().unwrap())
        );
        assert_eq!(parse_peer("fd00::11"), Ok("fd00::11".parse().unwrap()));
    }

    #[test]
    fn what_maps_to_no_address_is_refused_with_its_kind() {
        assert!(matches!(parse_peer("0x12"), Err(PeerError::Lid(_))));
        assert!(matches!(parse_peer("49151"), Err(PeerError::Lid(_))));
        assert!(matches!(
            parse_peer("fe80:0000:0000:0000:0002:c903:0031:78f2"),
            Err(PeerError::LinkLocalGid(_))
        ));
        assert!(matches!(parse_peer("0.0.0.0"), Err(PeerError::Unusable(_))));
        assert!(matches!(parse_peer("ff02::1"), Err(PeerError::Unusable(_))));
        assert!(matches!(parse_peer(""), Err(PeerError::Invalid(_))));
        assert!(matches!(
            parse_peer("host.example"),
            Err(PeerError::Invalid(_))
        ));
        assert!(matches!(parse_peer("0"), Err(PeerError::Invalid(_))));
        assert!(matches!(parse_peer("0xc000"), Err(PeerError::Invalid(_))));
    }

    #[test]
    fn perftest_gids_are_decimal_bytes() {
        let g =
            parse_perftest_gid("00:00:00:00:00:00:00:00:00:00:255:255:192:168:77:10").expect("gid");
        assert_eq!(g.to_ipv4_mapped(), Some("192.168.77.10".parse().unwrap()));
        assert_eq!(parse_perftest_gid("00:00:256"), None);
        assert_eq!(parse_perftest_gid("1:2:3"), None);
    }
}
