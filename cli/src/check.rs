//! What a user types, checked with rdma-managerd's own rules (crate rdma-manager-model) before
//! anything is sent: input the daemon would refuse is refused here with exit 2 and no call,
//! and input accepted here is what the daemon's argument check accepts.

use std::collections::BTreeMap;
use std::net::IpAddr;

use rdma_manager_model::hostconf::memlock::{self, MemlockError, MemlockValue};
use rdma_manager_model::hostconf::nfs_conf;
use rdma_manager_model::ip::{is_search_domain, Family};
use rdma_manager_model::ipoib::{check_mtu, mtu_range, parse_mode, validate_pkey, IpoibMode};
use rdma_manager_model::names::{validate_netdev_name, validate_rdma_name};

use crate::failure::Failure;

fn refuse(what: &str, why: impl std::fmt::Display) -> Failure {
    Failure::usage(format!("{what}: {why}"))
}

/// A network interface name, as the kernel and the daemon take it.
pub fn netdev_name(what: &str, name: &str) -> Result<(), Failure> {
    validate_netdev_name(name).map_err(|e| refuse(what, e))
}

/// An RDMA device name.
pub fn rdma_name(what: &str, name: &str) -> Result<(), Failure> {
    validate_rdma_name(name).map_err(|e| refuse(what, e))
}

/// A soft link's type.
pub fn link_kind(kind: &str) -> Result<&'static str, Failure> {
    match kind {
        "rxe" => Ok("rxe"),
        "siw" => Ok("siw"),
        other => Err(refuse("type", format!("{other:?} is not rxe or siw"))),
    }
}

/// A P_Key in hex, `0x` optional (`8002`, `0x8002`), as the kernel takes a child's.
pub fn pkey(text: &str) -> Result<u16, Failure> {
    let hex = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(refuse(
            "pkey",
            format!("{text:?} is not hexadecimal; a P_Key is 0x0001 to 0xffff, e.g. 0x8002"),
        ));
    }
    let value = u32::from_str_radix(hex, 16)
        .map_err(|_| refuse("pkey", format!("{text} does not fit in 16 bits")))?;
    validate_pkey(value).map_err(|e| refuse("pkey", e))
}

/// An IPoIB transport mode.
pub fn ipoib_mode(text: &str) -> Result<IpoibMode, Failure> {
    parse_mode(text).map_err(|e| refuse("mode", e))
}

/// An IPoIB MTU, within the limits of `mode` when it is known (else within the widest).
pub fn mtu(text: &str, mode: Option<IpoibMode>) -> Result<u32, Failure> {
    let v: u32 = text
        .parse()
        .map_err(|_| refuse("mtu", format!("{text:?} is not a number")))?;
    match mode {
        Some(m) => check_mtu(m, v).map_err(|e| refuse("mtu", e))?,
        None => {
            let (d, c) = (
                mtu_range(IpoibMode::Datagram),
                mtu_range(IpoibMode::Connected),
            );
            let lo = (*d.start()).min(*c.start());
            let hi = (*d.end()).max(*c.end());
            if !(lo..=hi).contains(&v) {
                return Err(check_mtu(IpoibMode::Connected, v)
                    .err()
                    .map(|e| refuse("mtu", e))
                    .unwrap_or_else(|| refuse("mtu", format!("{v} is not {lo} to {hi}"))));
            }
        }
    }
    Ok(v)
}

/// A RoCE version as the daemon's SetRoceMode takes it.
pub fn roce_mode(text: &str) -> Result<&'static str, Failure> {
    match text {
        "v1" | "1" => Ok("v1"),
        "v2" | "2" => Ok("v2"),
        other => Err(refuse("mode", format!("{other:?} is not v1 or v2"))),
    }
}

/// A RoCE type of service: 0 to 255, in decimal or, as configfs's `default_roce_tos` also
/// takes it, in hex with `0x` (`0x60`).
pub fn tos(text: &str) -> Result<u8, Failure> {
    let value = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16),
        None => text.parse::<u8>(),
    };
    value.map_err(|_| {
        refuse(
            "tos",
            format!("{text:?} is not 0 to 255; the ToS is one byte (e.g. 106 for DSCP 26)"),
        )
    })
}

/// The pair of memlock limits: each "unlimited" or a whole number of KiB, soft not above
/// hard; the texts to send.
pub fn memlock_pair(soft: &str, hard: &str) -> Result<(String, String), Failure> {
    let one = |what: &str, t: &str| {
        MemlockValue::parse_setting(t).map_err(|e| match e {
            MemlockError::BadValue(_) => refuse(
                what,
                format!("{t:?} is not \"unlimited\" or a whole number of KiB (at least 1)"),
            ),
            other => refuse(what, other),
        })
    };
    let (s, h) = (one("soft", soft)?, one("hard", hard)?);
    memlock::validate(s, h).map_err(|e| refuse("memlock", e))?;
    Ok((s.conf_text(), h.conf_text()))
}

/// The port of NFS over RDMA.
pub fn nfs_port(text: &str) -> Result<u16, Failure> {
    let v: u32 = text.parse().map_err(|_| {
        refuse(
            "port",
            format!("{text:?} is not a port number (1 to 65535)"),
        )
    })?;
    nfs_conf::validate_port(v).map_err(|e| refuse("port", e))
}

/// One value of `SetIpSettings`: nmcli's keys take a string or a list of strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IpValue {
    Text(String),
    List(Vec<String>),
}

/// The keys `ip` takes, nmcli's names.
pub use rdma_manager_model::ip::NMCLI_KEYS as IP_KEYS;

/// nmcli's methods the daemon takes (`dhcp` and `static` are its synonyms).
const IP_METHODS: [&str; 6] = ["auto", "dhcp", "manual", "static", "link-local", "disabled"];

/// The items of a comma- or space-separated list, as nmcli reads one.
fn items(text: &str) -> Vec<&str> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .collect()
}

fn address(key: &str, text: &str, family: Family) -> Result<IpAddr, Failure> {
    let a: IpAddr = text
        .parse()
        .map_err(|_| refuse(key, format!("{text} is not an IP address")))?;
    if Family::of(&a) != family {
        return Err(refuse(key, format!("{text} is not an {family} address")));
    }
    Ok(a)
}

/// The settings of `ip`, checked key by key as the daemon checks them; a list given empty
/// ("") clears it, as with nmcli.
pub fn ip_settings(pairs: &BTreeMap<String, String>) -> Result<Vec<(String, IpValue)>, Failure> {
    let mut out = Vec::new();
    for (key, value) in pairs {
        let (family, field) = match key.split_once('.') {
            Some(("ipv4", f)) => (Family::V4, f),
            Some(("ipv6", f)) => (Family::V6, f),
            _ => unreachable!("words::pairs admits only IP_KEYS"),
        };
        let v = match field {
            "method" => {
                if !IP_METHODS.contains(&value.as_str()) {
                    return Err(refuse(
                        key,
                        format!("{value:?} is not one of {}", IP_METHODS.join(", ")),
                    ));
                }
                IpValue::Text(value.clone())
            }
            "gateway" => {
                if !value.is_empty() {
                    address(key, value, family)?;
                }
                IpValue::Text(value.clone())
            }
            "addresses" => IpValue::List(
                items(value)
                    .into_iter()
                    .map(|item| {
                        let (a, p) = item.split_once('/').ok_or_else(|| {
                            refuse(
                                key,
                                format!("{item}: give the prefix length, e.g. {item}/24"),
                            )
                        })?;
                        let a = address(key, a, family)?;
                        match p.parse::<u8>() {
                            Ok(n) if family.allows_prefix(n) => Ok(format!("{a}/{n}")),
                            _ => Err(refuse(
                                key,
                                format!("{item}: the prefix must be 1 to {}", family.max_prefix()),
                            )),
                        }
                    })
                    .collect::<Result<_, _>>()?,
            ),
            "dns" => IpValue::List(
                items(value)
                    .into_iter()
                    .map(|s| address(key, s, family).map(|a| a.to_string()))
                    .collect::<Result<_, _>>()?,
            ),
            "dns-search" => IpValue::List(
                items(value)
                    .into_iter()
                    .map(|d| {
                        if is_search_domain(d) {
                            Ok(d.to_string())
                        } else {
                            Err(refuse(key, format!("{d} is not a domain name")))
                        }
                    })
                    .collect::<Result<_, _>>()?,
            ),
            _ => unreachable!("words::pairs admits only IP_KEYS"),
        };
        out.push((key.clone(), v));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkeys_modes_and_mtus() {
        assert_eq!(pkey("0x8002"), Ok(0x8002));
        assert_eq!(pkey("8002"), Ok(0x8002));
        for bad in ["", "0x", "0x0000", "0x8000", "0x10000", "zz"] {
            assert_eq!(pkey(bad).map_err(|e| e.code), Err(2), "{bad:?}");
        }
        assert!(ipoib_mode("connected").is_ok());
        assert!(ipoib_mode("fast").is_err());
        assert_eq!(mtu("65520", Some(IpoibMode::Connected)), Ok(65520));
        assert!(mtu("65520", Some(IpoibMode::Datagram)).is_err());
        assert_eq!(mtu("2044", None), Ok(2044));
        assert!(mtu("70000", None).is_err());
        assert!(mtu("x", None).is_err());
    }

    #[test]
    fn tos_in_decimal_or_hex_as_configfs_takes_it() {
        assert_eq!(tos("106"), Ok(106));
        assert_eq!(tos("0x60"), Ok(0x60));
        assert_eq!(tos("0XfF"), Ok(255));
        for bad in ["", "0x", "256", "0x100", "-1", "x60", "6a"] {
            assert_eq!(tos(bad).map_err(|e| e.code), Err(2), "{bad:?}");
        }
    }

    #[test]
    fn roce_memlock_and_nfs() {
        assert_eq!(roce_mode("2"), Ok("v2"));
        assert!(roce_mode("v3").is_err());
        assert_eq!(tos("106"), Ok(106));
        assert!(tos("256").is_err());
        assert_eq!(
            memlock_pair("1024", "unlimited"),
            Ok(("1024".into(), "unlimited".into()))
        );
        assert!(memlock_pair("unlimited", "1024").is_err());
        assert!(memlock_pair("64M", "unlimited").is_err());
        assert_eq!(nfs_port("20049"), Ok(20049));
        assert!(nfs_port("0").is_err());
    }

    #[test]
    fn ip_settings_are_checked_per_key() {
        let p = |kv: &[(&str, &str)]| {
            ip_settings(
                &kv.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        };
        let ok = p(&[
            ("ipv4.method", "manual"),
            ("ipv4.addresses", "192.0.2.1/24, 192.0.2.2/32"),
            ("ipv4.dns", "192.0.2.53"),
        ])
        .expect("valid");
        assert!(ok.contains(&(
            "ipv4.addresses".into(),
            IpValue::List(vec!["192.0.2.1/24".into(), "192.0.2.2/32".into()])
        )));
        assert!(p(&[("ipv4.addresses", "192.0.2.1")]).is_err());
        assert!(p(&[("ipv4.addresses", "192.0.2.1/33")]).is_err());
        assert!(p(&[("ipv6.addresses", "192.0.2.1/24")]).is_err());
        assert!(p(&[("ipv4.gateway", "2001:db8::1")]).is_err());
        assert!(p(&[("ipv4.method", "magic")]).is_err());
        assert!(p(&[("ipv4.dns-search", "-x.com")]).is_err());
        assert_eq!(
            p(&[("ipv4.dns", "")]),
            Ok(vec![("ipv4.dns".into(), IpValue::List(vec![]))])
        );
    }
}
