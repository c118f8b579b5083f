//! IP settings between the document's form (nmstate's `enabled`, `dhcp`, `autoconf`,
//! `address`, plus `gateway`, `dns`, `dns-search`) and the nmcli keys the Network interface
//! takes and `GetIpSettings` returns (`ipv4.method`, `ipv4.addresses`, `ipv4.gateway`,
//! `ipv4.dns`, `ipv4.dns-search`, the same under `ipv6.`), lists joined by commas.
//!
//! The method follows from what the family says: `enabled: false` is `disabled`; `dhcp:
//! true` (or IPv6's `autoconf: true`) is `auto`; otherwise addresses make it `manual` and no
//! addresses `link-local`. A family that says none of `enabled`, `dhcp`, `autoconf` and
//! `address` leaves the method as it is.

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::ip_settings::{IpAddress, IpFamily};
use crate::ip::Family;

/// The nmcli methods.
pub const METHOD_AUTO: &str = "auto";
pub const METHOD_MANUAL: &str = "manual";
pub const METHOD_LINK_LOCAL: &str = "link-local";
pub const METHOD_DISABLED: &str = "disabled";

/// The nmcli key of `field` (`method`, `addresses`, `gateway`, `dns`, `dns-search`).
pub fn key(family: Family, field: &str) -> String {
    format!("{}.{field}", family.setting())
}

fn split_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// An address as NetworkManager prints it (`2001:DB8::01` is `2001:db8::1`), so that a
/// setting read back compares equal to the one written; text that is no address stays as it
/// is (the checks refuse it).
fn canonical(ip: &str) -> String {
    ip.parse::<IpAddr>()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| ip.to_string())
}

impl IpFamily {
    /// Whether the family says anything that decides the method.
    pub fn says_method(&self) -> bool {
        self.enabled.is_some()
            || self.dhcp.is_some()
            || self.autoconf.is_some()
            || self.address.is_some()
    }

    /// Whether it asks for DHCP or autoconfiguration.
    fn dynamic(&self) -> Option<bool> {
        match (self.dhcp, self.autoconf) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (None, None) => None,
            _ => Some(false),
        }
    }

    /// The method these settings choose, given whether the interface's current settings
    /// are dynamic (`auto`) and have addresses, for what the family leaves unsaid.
    pub(crate) fn method_over(
        &self,
        current_dynamic: bool,
        current_has_addresses: bool,
    ) -> Option<&'static str> {
        if !self.says_method() {
            return None;
        }
        if self.enabled == Some(false) {
            return Some(METHOD_DISABLED);
        }
        let dynamic = self.dynamic().unwrap_or(current_dynamic);
        let has_addresses = match &self.address {
            Some(a) => !a.is_empty(),
            None => current_has_addresses,
        };
        Some(if dynamic {
            METHOD_AUTO
        } else if has_addresses {
            METHOD_MANUAL
        } else {
            METHOD_LINK_LOCAL
        })
    }

    /// The nmcli keys of what this family says, by itself (no current settings to fall back
    /// on): the method when it says one, and each list or value it gives. A disabled or
    /// link-local family takes no addresses or gateway, so those are emptied.
    pub fn to_nmcli(&self, family: Family) -> BTreeMap<String, String> {
        self.nmcli_over(family, None)
    }

    /// [`IpFamily::to_nmcli`] for a change over `current` (its method and addresses decide
    /// what this family leaves unsaid).
    pub(crate) fn nmcli_over(
        &self,
        family: Family,
        current: Option<&IpFamily>,
    ) -> BTreeMap<String, String> {
        let (cur_dynamic, cur_addresses) = current.map_or((false, false), |c| {
            (
                c.enabled != Some(false) && c.dynamic() == Some(true),
                c.enabled != Some(false) && c.address.as_ref().is_some_and(|a| !a.is_empty()),
            )
        });
        let mut out = BTreeMap::new();
        let method = self.method_over(cur_dynamic, cur_addresses);
        if let Some(m) = method {
            out.insert(key(family, "method"), m.to_string());
            if m == METHOD_DISABLED || m == METHOD_LINK_LOCAL {
                out.insert(key(family, "addresses"), String::new());
                out.insert(key(family, "gateway"), String::new());
            }
        }
        if let Some(a) = &self.address {
            let text = a
                .iter()
                .map(|a| format!("{}/{}", canonical(&a.ip), a.prefix_length))
                .collect::<Vec<_>>()
                .join(",");
            out.insert(key(family, "addresses"), text);
        }
        if let Some(g) = &self.gateway {
            out.insert(key(family, "gateway"), canonical(g));
        }
        if let Some(d) = &self.dns {
            let servers: Vec<String> = d.iter().map(|a| canonical(a)).collect();
            out.insert(key(family, "dns"), servers.join(","));
        }
        if let Some(d) = &self.dns_search {
            out.insert(key(family, "dns-search"), d.join(","));
        }
        out
    }

    /// Every nmcli key of the family, empty where these settings have nothing: the form of
    /// a current state's settings to compare with.
    pub fn nmcli_full(&self, family: Family) -> BTreeMap<String, String> {
        let mut out: BTreeMap<String, String> =
            ["method", "addresses", "gateway", "dns", "dns-search"]
                .iter()
                .map(|f| (key(family, f), String::new()))
                .collect();
        out.extend(self.to_nmcli(family));
        out
    }

    /// The family as the document shows it, from the nmcli keys `GetIpSettings` returns
    /// (those of the other family are ignored; a missing method is nmcli's default, `auto`;
    /// lists are comma-separated).
    pub fn from_nmcli(family: Family, keys: &BTreeMap<String, String>) -> IpFamily {
        let get = |field: &str| {
            keys.get(&key(family, field))
                .map(String::as_str)
                .unwrap_or("")
        };
        let list = |field: &str| Some(split_list(get(field))).filter(|l| !l.is_empty());
        let v6 = family == Family::V6;
        let addresses = || -> Vec<IpAddress> {
            split_list(get("addresses"))
                .iter()
                .filter_map(|a| {
                    let (ip, len) = a.split_once('/')?;
                    Some(IpAddress {
                        ip: ip.to_string(),
                        prefix_length: len.parse().ok()?,
                    })
                })
                .collect()
        };
        let mut f = IpFamily {
            dns: list("dns"),
            dns_search: list("dns-search"),
            ..IpFamily::default()
        };
        match get("method") {
            "disabled" | "ignore" => {
                f.enabled = Some(false);
                return f;
            }
            "manual" | "static" => {
                f.dhcp = Some(false);
                f.address = Some(addresses());
            }
            "link-local" => {
                f.dhcp = Some(false);
                f.address = Some(Vec::new());
            }
            _ => {
                f.dhcp = Some(true);
                f.address = Some(addresses());
            }
        }
        f.enabled = Some(true);
        if v6 {
            f.autoconf = f.dhcp;
        }
        f.gateway = Some(get("gateway").to_string()).filter(|g| !g.is_empty());
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn addr(ip: &str, len: u8) -> IpAddress {
        IpAddress {
            ip: ip.into(),
            prefix_length: len,
        }
    }

    #[test]
    fn document_to_nmcli() {
        let manual = IpFamily {
            enabled: Some(true),
            dhcp: Some(false),
            address: Some(vec![addr("192.0.2.1", 24), addr("198.51.100.1", 25)]),
            gateway: Some("192.0.2.254".into()),
            dns: Some(vec!["192.0.2.53".into(), "192.0.2.54".into()]),
            dns_search: Some(vec!["lab.example".into()]),
            ..IpFamily::default()
        };
        assert_eq!(
            manual.to_nmcli(Family::V4),
            keys(&[
                ("ipv4.method", "manual"),
                ("ipv4.addresses", "192.0.2.1/24,198.51.100.1/25"),
                ("ipv4.gateway", "192.0.2.254"),
                ("ipv4.dns", "192.0.2.53,192.0.2.54"),
                ("ipv4.dns-search", "lab.example"),
            ])
        );
        let off = IpFamily {
            enabled: Some(false),
            ..IpFamily::default()
        };
        assert_eq!(
            off.to_nmcli(Family::V6),
            keys(&[
                ("ipv6.method", "disabled"),
                ("ipv6.addresses", ""),
                ("ipv6.gateway", "")
            ])
        );
        let slaac = IpFamily {
            autoconf: Some(true),
            ..IpFamily::default()
        };
        assert_eq!(slaac.to_nmcli(Family::V6), keys(&[("ipv6.method", "auto")]));
        let dhcp = IpFamily {
            enabled: Some(true),
            dhcp: Some(true),
            ..IpFamily::default()
        };
        assert_eq!(dhcp.to_nmcli(Family::V4), keys(&[("ipv4.method", "auto")]));
        let ll = IpFamily {
            enabled: Some(true),
            ..IpFamily::default()
        };
        assert_eq!(
            ll.to_nmcli(Family::V6),
            keys(&[
                ("ipv6.method", "link-local"),
                ("ipv6.addresses", ""),
                ("ipv6.gateway", "")
            ])
        );
        // Addresses as NetworkManager prints them.
        let v6 = IpFamily {
            address: Some(vec![addr("2001:DB8:0::01", 64)]),
            gateway: Some("2001:db8:0:0::fe".into()),
            dns: Some(vec!["2001:DB8::53".into()]),
            ..IpFamily::default()
        };
        assert_eq!(
            v6.to_nmcli(Family::V6),
            keys(&[
                ("ipv6.method", "manual"),
                ("ipv6.addresses", "2001:db8::1/64"),
                ("ipv6.gateway", "2001:db8::fe"),
                ("ipv6.dns", "2001:db8::53"),
            ])
        );
        // Only DNS: the method is left as it is.
        let dns = IpFamily {
            dns: Some(vec!["192.0.2.53".into()]),
            ..IpFamily::default()
        };
        assert_eq!(
            dns.to_nmcli(Family::V4),
            keys(&[("ipv4.dns", "192.0.2.53")])
        );
    }

    #[test]
    fn unsaid_keys_follow_the_current_settings() {
        let auto = IpFamily::from_nmcli(Family::V4, &keys(&[("ipv4.method", "auto")]));
        let manual = IpFamily::from_nmcli(
            Family::V4,
            &keys(&[
                ("ipv4.method", "manual"),
                ("ipv4.addresses", "192.0.2.1/24"),
            ]),
        );
        let only_address = IpFamily {
            address: Some(vec![addr("192.0.2.9", 24)]),
            ..IpFamily::default()
        };
        // Addresses over DHCP keep DHCP, as nmcli does; over nothing, they are manual.
        assert_eq!(
            only_address.nmcli_over(Family::V4, Some(&auto))["ipv4.method"],
            "auto"
        );
        assert_eq!(only_address.to_nmcli(Family::V4)["ipv4.method"], "manual");
        // dhcp: false over static addresses keeps them.
        let no_dhcp = IpFamily {
            dhcp: Some(false),
            ..IpFamily::default()
        };
        assert_eq!(
            no_dhcp.nmcli_over(Family::V4, Some(&manual))["ipv4.method"],
            "manual"
        );
        assert_eq!(
            no_dhcp.nmcli_over(Family::V4, Some(&auto))["ipv4.method"],
            "link-local"
        );
    }

    #[test]
    fn nmcli_to_document_and_back() {
        for (family, pairs) in [
            (Family::V4, vec![("ipv4.method", "auto")]),
            (
                Family::V4,
                vec![
                    ("ipv4.method", "auto"),
                    ("ipv4.addresses", "192.0.2.1/24"),
                    ("ipv4.dns", "192.0.2.53"),
                ],
            ),
            (
                Family::V4,
                vec![
                    ("ipv4.method", "manual"),
                    ("ipv4.addresses", "192.0.2.1/24,192.0.2.2/32"),
                    ("ipv4.gateway", "192.0.2.254"),
                    ("ipv4.dns-search", "a.example,b.example"),
                ],
            ),
            (Family::V4, vec![("ipv4.method", "disabled")]),
            (Family::V6, vec![("ipv6.method", "link-local")]),
            (
                Family::V6,
                vec![("ipv6.method", "auto"), ("ipv6.dns", "2001:db8::53")],
            ),
            (
                Family::V6,
                vec![
                    ("ipv6.method", "manual"),
                    ("ipv6.addresses", "2001:db8::1/64"),
                    ("ipv6.gateway", "2001:db8::fe"),
                ],
            ),
        ] {
            let given = keys(&pairs);
            let doc = IpFamily::from_nmcli(family, &given);
            let mut full = doc.nmcli_full(family);
            full.retain(|_, v| !v.is_empty());
            let mut want = given.clone();
            want.retain(|_, v| !v.is_empty());
            assert_eq!(full, want, "{pairs:?} -> {doc:?}");
        }
        let v6 = IpFamily::from_nmcli(
            Family::V6,
            &keys(&[
                ("ipv4.method", "manual"),
                ("ipv6.method", "auto"),
                ("ipv6.dns", "2001:db8::53, 2001:db8::54"),
            ]),
        );
        assert_eq!(
            v6,
            IpFamily {
                enabled: Some(true),
                dhcp: Some(true),
                autoconf: Some(true),
                address: Some(vec![]),
                gateway: None,
                dns: Some(vec!["2001:db8::53".into(), "2001:db8::54".into()]),
                dns_search: None,
            }
        );
        assert_eq!(
            IpFamily::from_nmcli(
                Family::V4,
                &keys(&[
                    ("ipv4.method", "disabled"),
                    ("ipv4.addresses", "192.0.2.1/24")
                ])
            ),
            IpFamily {
                enabled: Some(false),
                ..IpFamily::default()
            }
        );
    }
}
