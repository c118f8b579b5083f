//! What NetworkManager accepts in an interface's IP settings, as the daemon checks a
//! `SetIpSettings` and rdma-tui's form checks what is typed: the address families, their
//! prefix lengths and DNS search domains.

use std::fmt;
use std::net::IpAddr;

/// The IP settings' keys, nmcli's names: what `SetIpSettings` takes and `rdma-cli ip` offers.
pub const NMCLI_KEYS: [&str; 10] = [
    "ipv4.method",
    "ipv4.addresses",
    "ipv4.gateway",
    "ipv4.dns",
    "ipv4.dns-search",
    "ipv6.method",
    "ipv6.addresses",
    "ipv6.gateway",
    "ipv6.dns",
    "ipv6.dns-search",
];

/// An IP family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        }
    }

    /// NetworkManager's setting of the family (`ipv4.method`, `ipv6.addresses`, ...).
    pub fn setting(self) -> &'static str {
        match self {
            Family::V4 => "ipv4",
            Family::V6 => "ipv6",
        }
    }

    pub fn max_prefix(self) -> u8 {
        match self {
            Family::V4 => 32,
            Family::V6 => 128,
        }
    }

    /// Whether NetworkManager keeps an address of this family with `prefix`: it drops one
    /// with 0 or more than the address's bits, without saying so.
    pub fn allows_prefix(self, prefix: u8) -> bool {
        (1..=self.max_prefix()).contains(&prefix)
    }

    pub fn of(addr: &IpAddr) -> Family {
        match addr {
            IpAddr::V4(_) => Family::V4,
            IpAddr::V6(_) => Family::V6,
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A DNS search domain: labels of letters, digits, `-` and `_` (not at a label's ends for
/// `-`), separated by dots, with an optional final dot and an optional leading `~`
/// (NetworkManager's routing-only domain).
pub fn is_search_domain(domain: &str) -> bool {
    let name = domain.strip_prefix('~').unwrap_or(domain);
    let name = name.strip_suffix('.').unwrap_or(name);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_families() {
        assert!(Family::V4.allows_prefix(32) && !Family::V4.allows_prefix(33));
        assert!(!Family::V6.allows_prefix(0) && Family::V6.allows_prefix(128));
        assert_eq!(Family::of(&"2001:db8::1".parse().expect("v6")), Family::V6);
        assert_eq!(
            format!("{} {}", Family::V4, Family::V6.setting()),
            "IPv4 ipv6"
        );
    }

    #[test]
    fn search_domains() {
        for ok in [
            "example.com",
            "example.com.",
            "~lab.example",
            "_tcp.example",
            "a-b.c",
        ] {
            assert!(is_search_domain(ok), "{ok}");
        }
        for bad in [
            "",
            ".",
            "~",
            "exa mple.com",
            "-x.com",
            "x-.com",
            "a..b",
            &"a".repeat(64),
        ] {
            assert!(!is_search_domain(bad), "{bad}");
        }
    }
}
