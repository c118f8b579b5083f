//! IP settings as `a{sv}` keyed by nmcli's property names (`ipv4.method`,
//! `ipv4.addresses`, `ipv4.gateway`, `ipv4.dns`, `ipv4.dns-search` and the same under
//! `ipv6.`), so that a busctl caller writes what they would give `nmcli connection modify`;
//! and the same settings read back from a profile as NetworkManager holds it.
//!
//! A key not given keeps the profile's value, as with nmcli. Every key is checked (name,
//! type, value) before anything is sent; an unknown key or a value of the wrong type is
//! refused with the key named.

use std::collections::HashMap;
use std::net::IpAddr;

use zbus::zvariant::{OwnedValue, Value};

use super::profile::{Family, IpConfig, IpMethod, ProfileError};

fn invalid(text: impl Into<String>) -> ProfileError {
    ProfileError::Invalid(text.into())
}

/// The keys understood, for the error that names an unknown one.
pub use rdma_manager_model::ip::NMCLI_KEYS as KEYS;

/// Both families' settings of one profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpSettings {
    pub ipv4: IpConfig,
    pub ipv6: IpConfig,
}

impl IpSettings {
    /// What a new profile gets when nothing is said of a family: nmcli's defaults.
    pub fn nmcli_defaults() -> IpSettings {
        IpSettings {
            ipv4: IpConfig::auto(),
            ipv6: IpConfig::auto(),
        }
    }

    /// Reads both families from a profile's `ipv4` and `ipv6` settings.
    pub fn of_profile(settings: &super::profile::Settings) -> IpSettings {
        let empty = HashMap::new();
        IpSettings {
            ipv4: read_family(settings.get("ipv4").unwrap_or(&empty), Family::V4),
            ipv6: read_family(settings.get("ipv6").unwrap_or(&empty), Family::V6),
        }
    }

    /// Applies `keys` over these settings and checks the result as NetworkManager would.
    /// `new_profile`: as `nmcli connection add` does, addresses given without a method make
    /// the family manual.
    pub fn apply(
        &mut self,
        keys: &HashMap<String, OwnedValue>,
        new_profile: bool,
    ) -> Result<(), ProfileError> {
        let mut method_given = [false, false];
        for (key, value) in keys {
            let (family, field) = match key.split_once('.') {
                Some(("ipv4", f)) => (Family::V4, f),
                Some(("ipv6", f)) => (Family::V6, f),
                _ => return Err(unknown(key)),
            };
            let config = match family {
                Family::V4 => &mut self.ipv4,
                Family::V6 => &mut self.ipv6,
            };
            match field {
                "method" => {
                    config.method = IpMethod::parse(&string(key, value)?)?;
                    method_given[usize::from(family == Family::V6)] = true;
                }
                "addresses" => {
                    config.addresses = strings(key, value)?
                        .iter()
                        .map(|a| IpConfig::parse_address(family, a))
                        .collect::<Result<_, _>>()?;
                }
                "gateway" => {
                    let text = string(key, value)?;
                    config.gateway = if text.is_empty() {
                        None
                    } else {
                        Some(parse_ip(&text, "gateway")?)
                    };
                }
                "dns" => {
                    config.dns = strings(key, value)?
                        .iter()
                        .map(|a| parse_ip(a, "DNS server"))
                        .collect::<Result<_, _>>()?;
                }
                "dns-search" => config.dns_search = strings(key, value)?,
                _ => return Err(unknown(key)),
            }
        }
        if new_profile {
            for (given, config) in [
                (method_given[0], &mut self.ipv4),
                (method_given[1], &mut self.ipv6),
            ] {
                if !given && !config.addresses.is_empty() {
                    config.method = IpMethod::Manual;
                }
            }
        }
        self.ipv4.check(Family::V4)?;
        self.ipv6.check(Family::V6)
    }

    /// These settings under nmcli's keys, with the interface's current addresses under
    /// `addresses` when given.
    pub fn to_keys(&self) -> HashMap<String, OwnedValue> {
        let mut out = HashMap::new();
        for (prefix, c) in [("ipv4", &self.ipv4), ("ipv6", &self.ipv6)] {
            put(&mut out, format!("{prefix}.method"), c.method.as_str());
            put(
                &mut out,
                format!("{prefix}.addresses"),
                c.addresses
                    .iter()
                    .map(|(a, p)| format!("{a}/{p}"))
                    .collect::<Vec<_>>(),
            );
            put(
                &mut out,
                format!("{prefix}.gateway"),
                c.gateway.map(|g| g.to_string()).unwrap_or_default(),
            );
            put(
                &mut out,
                format!("{prefix}.dns"),
                c.dns.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
            );
            put(
                &mut out,
                format!("{prefix}.dns-search"),
                c.dns_search.clone(),
            );
        }
        out
    }
}

/// Puts a value into a dictionary of variants (plain strings and string arrays never fail
/// the conversion, which only fails on file descriptors).
pub fn put<'a>(map: &mut HashMap<String, OwnedValue>, key: String, value: impl Into<Value<'a>>) {
    if let Ok(v) = OwnedValue::try_from(value.into()) {
        map.insert(key, v);
    }
}

fn unknown(key: &str) -> ProfileError {
    invalid(format!(
        "unknown IP setting {} (known: {})",
        rdma_manager_dbus::text::quote_capped(key),
        KEYS.join(", ")
    ))
}

fn string(key: &str, value: &OwnedValue) -> Result<String, ProfileError> {
    value
        .downcast_ref::<&str>()
        .map(str::to_string)
        .map_err(|_| invalid(format!("{key} takes a string (s)")))
}

fn strings(key: &str, value: &OwnedValue) -> Result<Vec<String>, ProfileError> {
    Vec::<String>::try_from(value.clone())
        .map_err(|_| invalid(format!("{key} takes a list of strings (as)")))
}

fn parse_ip(text: &str, what: &str) -> Result<IpAddr, ProfileError> {
    text.parse().map_err(|_| {
        invalid(format!(
            "{what} {} is not an IP address",
            rdma_manager_dbus::text::quote_capped(text)
        ))
    })
}

/// One family of a profile's settings. What cannot be read is left at its default: the
/// profile is NetworkManager's, which checked it.
fn read_family(section: &HashMap<String, OwnedValue>, family: Family) -> IpConfig {
    let text = |key: &str| -> Option<String> {
        section
            .get(key)
            .and_then(|v| v.downcast_ref::<&str>().ok().map(str::to_string))
    };
    let method = match text("method").as_deref() {
        Some("manual") => IpMethod::Manual,
        Some("link-local") => IpMethod::LinkLocal,
        Some("disabled") | Some("ignore") => IpMethod::Disabled,
        _ => IpMethod::Auto,
    };
    let addresses = section
        .get("address-data")
        .and_then(|v| Vec::<HashMap<String, OwnedValue>>::try_from(v.clone()).ok())
        .unwrap_or_default()
        .iter()
        .filter_map(|entry| {
            let address: &str = entry.get("address")?.downcast_ref().ok()?;
            let prefix: u32 = entry.get("prefix")?.downcast_ref().ok()?;
            Some((address.parse().ok()?, u8::try_from(prefix).ok()?))
        })
        .collect();
    let gateway = text("gateway").and_then(|g| g.parse().ok());
    let dns = match family {
        Family::V4 => section
            .get("dns")
            .and_then(|v| Vec::<u32>::try_from(v.clone()).ok())
            .unwrap_or_default()
            .into_iter()
            .map(|n| IpAddr::from(n.to_ne_bytes()))
            .collect(),
        Family::V6 => section
            .get("dns")
            .and_then(|v| Vec::<Vec<u8>>::try_from(v.clone()).ok())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|b| <[u8; 16]>::try_from(b.as_slice()).ok())
            .map(IpAddr::from)
            .collect(),
    };
    let dns_search = section
        .get("dns-search")
        .and_then(|v| Vec::<String>::try_from(v.clone()).ok())
        .unwrap_or_default();
    IpConfig {
        method,
        addresses,
        gateway,
        dns,
        dns_search,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(pairs: &[(&str, Value<'static>)]) -> HashMap<String, OwnedValue> {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    OwnedValue::try_from(v.clone()).expect("a plain value"),
                )
            })
            .collect()
    }

    #[test]
    fn keys_round_trip_through_a_profile() {
        let mut s = IpSettings::nmcli_defaults();
        s.apply(
            &keys(&[
                (
                    "ipv4.addresses",
                    Value::from(vec!["192.0.2.1/24".to_string()]),
                ),
                ("ipv4.gateway", Value::from("192.0.2.254")),
                ("ipv4.dns", Value::from(vec!["192.0.2.253".to_string()])),
                (
                    "ipv4.dns-search",
                    Value::from(vec!["example.com".to_string()]),
                ),
                ("ipv6.method", Value::from("disabled")),
            ]),
            true,
        )
        .expect("valid");
        // Addresses without a method on a new profile: manual, as nmcli does.
        assert_eq!(s.ipv4.method, IpMethod::Manual);
        assert_eq!(s.ipv6.method, IpMethod::Disabled);
        let mut profile = super::super::profile::Settings::new();
        let mut v4 = HashMap::new();
        super::super::profile::replace_ip(&mut v4, &s.ipv4, Family::V4);
        let mut v6 = HashMap::new();
        super::super::profile::replace_ip(&mut v6, &s.ipv6, Family::V6);
        profile.insert("ipv4".into(), v4);
        profile.insert("ipv6".into(), v6);
        assert_eq!(IpSettings::of_profile(&profile), s);
        let shown = s.to_keys();
        let method: &str = shown["ipv4.method"].downcast_ref().expect("s");
        assert_eq!(method, "manual");
    }

    #[test]
    fn bad_keys_are_refused_by_name() {
        let mut s = IpSettings::nmcli_defaults();
        let before = s.clone();
        for (pairs, want) in [
            (
                vec![("ipv4.mtu", Value::from(1500u32))],
                "unknown IP setting",
            ),
            (vec![("ipv4.method", Value::from(7u32))], "takes a string"),
            (
                vec![("ipv4.addresses", Value::from("192.0.2.1/24"))],
                "list of strings",
            ),
            (
                vec![(
                    "ipv4.addresses",
                    Value::from(vec!["192.0.2.1/33".to_string()]),
                )],
                "prefix length 33",
            ),
            (
                vec![(
                    "ipv6.addresses",
                    Value::from(vec!["192.0.2.1/24".to_string()]),
                )],
                "not an IPv6 address",
            ),
            (
                vec![("ipv4.dns", Value::from(vec!["not-an-ip".to_string()]))],
                "not an IP address",
            ),
            (
                vec![("ipv4.dns-search", Value::from(vec!["a b".to_string()]))],
                "not a DNS search domain",
            ),
        ] {
            let mut t = s.clone();
            let e = t.apply(&keys(&pairs), false).expect_err("refused");
            assert!(e.to_string().contains(want), "{e} (want {want})");
        }
        s.apply(&HashMap::new(), false).expect("nothing to change");
        assert_eq!(s, before);
    }
}
