//! The "IP settings" form of an RDMA netdev (IPoIB, a RoCE port's netdev) whose IP settings
//! the daemon changes through NetworkManager, netplan or systemd-networkd: IPv4 and IPv6 method,
//! addresses with prefixes, gateway, DNS servers and search domains, pre-filled from
//! `Network.GetIpSettings` and checked before sending as NetworkManager would (or worse,
//! silently: it drops an address with prefix 33), so that `SetIpSettings` gets only valid
//! values, and only the keys that changed. Where no such manager runs, the details show the
//! kernel's addresses and what the user can do instead.

use std::net::IpAddr;

use ratatui::text::Line;

use crate::client::{Call, CallError, CallOutput, ErrorKind, IpSettings, IpValue};
use crate::form::{ChoiceOption, Field, Form};
use crate::theme::Theme;

/// What `GetIpSettings` answered for an interface (by name).
#[derive(Debug, Clone)]
pub enum IpState {
    /// Settings the daemon can change (through NetworkManager, netplan or systemd-networkd).
    Known(IpSettings),
    /// No IP manager the daemon changes settings through (none runs, or netplan's service
    /// cannot be reached): the interface's addresses from the kernel, and what the user can
    /// do.
    Unmanaged(IpSettings),
    /// NotSupported (a daemon older than IP managers: NetworkManager is not running).
    NoNm(String),
    Failed(String),
}

impl IpState {
    /// What a `GetIpSettings` answer says (`None`: not an answer of that call).
    pub fn from_answer(result: &Result<CallOutput, CallError>) -> Option<IpState> {
        Some(match result {
            Ok(CallOutput::IpSettings(s)) => match s.text("manager").as_str() {
                "none" => IpState::Unmanaged(s.clone()),
                // A daemon that drives netplan says nothing to do; one that cannot, what to.
                "netplan" if !s.text("manager-advice").is_empty() => IpState::Unmanaged(s.clone()),
                _ => IpState::Known(s.clone()),
            },
            Ok(_) => return None,
            Err(e) if e.kind == ErrorKind::NotSupported => IpState::NoNm(e.message.clone()),
            Err(e) => IpState::Failed(e.message.clone()),
        })
    }

    /// Why the IP settings form cannot open here, if it cannot.
    pub fn refusal(&self) -> Option<String> {
        match self {
            IpState::NoNm(reason) => Some(format!("NetworkManager not running: {reason}")),
            IpState::Unmanaged(s) => Some(unmanaged_advice(s).to_string()),
            IpState::Known(_) | IpState::Failed(_) => None,
        }
    }
}

/// What the user can do where no IP manager the daemon drives runs: the daemon's own words
/// (`manager-advice`), or these from a daemon that sends none.
fn unmanaged_advice(s: &IpSettings) -> String {
    let said = s.text("manager-advice");
    if !said.is_empty() {
        return said;
    }
    if s.text("manager") == "netplan" {
        "netplan configures this host: set addresses in /etc/netplan, then netplan try".into()
    } else {
        "No IP manager runs: set addresses with ip address add, or start NetworkManager or \
         systemd-networkd to change them here"
            .into()
    }
}

fn addresses_text(s: &IpSettings) -> String {
    let addrs = s.text("addresses");
    if addrs.is_empty() {
        "none".into()
    } else {
        addrs
    }
}

/// The interface's addresses and who manages its IP settings, as GetIpSettings said.
pub fn ip_lines(ip: &IpState, t: Theme) -> Vec<Line<'static>> {
    match ip {
        IpState::Known(s)
            if matches!(s.text("manager").as_str(), "systemd-networkd" | "netplan") =>
        {
            let manager = s.text("manager");
            let file = s.text("keyfile");
            let by = if file.is_empty() {
                format!("{manager} (no file of rdma-manager's yet)")
            } else {
                format!("{manager}, {file}")
            };
            vec![Line::raw(format!(
                "Addresses: {}; IP settings: {by}",
                addresses_text(s)
            ))]
        }
        IpState::Known(s) => {
            let mut state = s.text("device-state");
            let reason = s.text("device-state-reason");
            if !reason.is_empty() && reason != "none" {
                state.push_str(&format!(" ({reason})"));
            }
            vec![Line::raw(format!(
                "Addresses: {}; NetworkManager: {}",
                addresses_text(s),
                if state.is_empty() { "?" } else { &state }
            ))]
        }
        IpState::Unmanaged(s) => vec![
            Line::raw(format!(
                "Addresses: {} (from the kernel)",
                addresses_text(s)
            )),
            Line::styled(unmanaged_advice(s), t.dim()),
        ],
        IpState::NoNm(_) => vec![Line::styled(
            "IP settings: NetworkManager not running",
            t.dim(),
        )],
        IpState::Failed(e) => vec![Line::styled(
            format!("IP settings unreadable: {e}"),
            t.bad(),
        )],
    }
}

pub use rdma_manager_model::ip::Family;

/// The methods offered (nmcli's words).
const METHODS: [&str; 4] = ["auto", "manual", "link-local", "disabled"];

/// The form's field ids: nmcli's keys, so the changed ones are sent as they are.
const KEYS: [(&str, &str, &str); 10] = [
    ("ipv4.method", "IPv4 method", ""),
    ("ipv4.addresses", "IPv4 addresses", "192.0.2.1/24, ..."),
    ("ipv4.gateway", "IPv4 gateway", "none"),
    ("ipv4.dns", "IPv4 DNS", "none"),
    ("ipv4.dns-search", "IPv4 search", "example.com, ..."),
    ("ipv6.method", "IPv6 method", ""),
    ("ipv6.addresses", "IPv6 addresses", "2001:db8::1/64, ..."),
    ("ipv6.gateway", "IPv6 gateway", "none"),
    ("ipv6.dns", "IPv6 DNS", "none"),
    ("ipv6.dns-search", "IPv6 search", "example.com, ..."),
];

/// The items of a comma- or space-separated list.
fn items(text: &str) -> Vec<&str> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .collect()
}

/// One address of `family`, without a prefix.
pub fn address(text: &str, family: Family) -> Result<IpAddr, String> {
    let a: IpAddr = text
        .parse()
        .map_err(|_| format!("{text} is not an IP address"))?;
    if Family::of(&a) != family {
        return Err(format!("{text} is not an {} address", family.name()));
    }
    Ok(a)
}

/// `ADDRESS/PREFIX` items: each of `family`, the prefix 1..=32 or 1..=128.
pub fn addresses(text: &str, family: Family) -> Result<Vec<String>, String> {
    items(text)
        .into_iter()
        .map(|item| {
            let (a, p) = item.split_once('/').ok_or_else(|| {
                format!(
                    "{item}: give the prefix length, e.g. {item}/{}",
                    if family == Family::V4 { 24 } else { 64 }
                )
            })?;
            let a = address(a, family)?;
            match p.parse::<u8>() {
                Ok(n) if family.allows_prefix(n) => Ok(format!("{a}/{n}")),
                _ => Err(format!(
                    "{item}: the prefix must be 1 to {}",
                    family.max_prefix()
                )),
            }
        })
        .collect()
}

/// DNS servers: addresses of `family`.
pub fn dns(text: &str, family: Family) -> Result<Vec<String>, String> {
    items(text)
        .into_iter()
        .map(|s| address(s, family).map(|a| a.to_string()))
        .collect()
}

/// Search domains, as the daemon checks them
/// ([`rdma_manager_model::ip::is_search_domain`]).
pub fn search(text: &str) -> Result<Vec<String>, String> {
    items(text)
        .into_iter()
        .map(|d| {
            if rdma_manager_model::ip::is_search_domain(d) {
                Ok(d.to_string())
            } else {
                Err(format!("{d} is not a domain name"))
            }
        })
        .collect()
}

/// The method choices: nmcli's four, plus the profile's own if it is another (`dhcp`,
/// `ignore`, `shared`), so the form shows what is there.
fn methods(current: &str) -> Vec<ChoiceOption> {
    let mut v: Vec<ChoiceOption> = METHODS.iter().map(|m| ChoiceOption::plain(*m)).collect();
    if !current.is_empty() && !METHODS.contains(&current) {
        v.push(ChoiceOption::plain(current));
    }
    v
}

/// The form, pre-filled from `settings` (lists shown comma-separated).
pub fn form(settings: &IpSettings) -> Form {
    let mut form = Form::new(format!("IP settings of {}", settings.interface), "Apply").field(
        Field::info("profile", "Profile", {
            let p = settings.text("profile");
            let file = settings.text("keyfile");
            if settings.text("manager") == "systemd-networkd" {
                if file.is_empty() {
                    "none yet: rdma-manager writes a .network file for systemd-networkd".to_string()
                } else {
                    format!("systemd-networkd, {file}")
                }
            } else if settings.text("manager") == "netplan" {
                if file.is_empty() {
                    "netplan: rdma-manager writes /etc/netplan/90-rdma-manager.yaml, tried with \
                     netplan try"
                        .to_string()
                } else {
                    format!("netplan, {file}")
                }
            } else if p.is_empty() {
                "none yet: NetworkManager makes one".to_string()
            } else {
                p
            }
        }),
    );
    for (key, label, placeholder) in KEYS {
        let current = settings.text(key);
        let field = if key.ends_with(".method") {
            let value = if current.is_empty() { "auto" } else { &current };
            Field::choice(key, label, methods(&current), value)
        } else {
            Field::text(key, label, &current, 400).placeholder(placeholder)
        };
        form = form.field(field);
    }
    check(&mut form);
    form
}

/// Checks every field, putting each fault at its field.
pub fn check(form: &mut Form) {
    for family in [Family::V4, Family::V6] {
        let p = family.setting();
        let key = |k: &str| format!("{p}.{k}");
        let method = form.choice(&key("method")).unwrap_or("auto").to_string();
        let addrs = addresses(form.text(&key("addresses")), family);
        let addr_err = match &addrs {
            Err(e) => Some(e.clone()),
            Ok(v) if v.is_empty() && method == "manual" => {
                Some("manual needs at least one address".into())
            }
            Ok(v) if !v.is_empty() && (method == "disabled" || method == "link-local") => {
                Some(format!("no addresses with method {method}"))
            }
            Ok(_) => None,
        };
        let has_addrs = addrs.as_ref().is_ok_and(|v| !v.is_empty());
        let gw = form.text(&key("gateway")).trim().to_string();
        let gw_err = if gw.is_empty() {
            None
        } else {
            address(&gw, family).err().or_else(|| {
                (!has_addrs && method != "auto")
                    .then(|| "a gateway needs an address (or method auto)".to_string())
            })
        };
        let dns_err = dns(form.text(&key("dns")), family).err();
        let search_err = search(form.text(&key("dns-search"))).err();
        for (k, e) in [
            ("addresses", addr_err),
            ("gateway", gw_err),
            ("dns", dns_err),
            ("dns-search", search_err),
        ] {
            form.set_error(&key(k), e);
        }
    }
}

/// What a field's text says, as sent: the normalized list, or the trimmed text.
fn value_of(key: &str, text: &str) -> Option<IpValue> {
    let family = if key.starts_with("ipv4") {
        Family::V4
    } else {
        Family::V6
    };
    Some(match key.split_once('.').map(|(_, k)| k)? {
        "addresses" => IpValue::List(addresses(text, family).ok()?),
        "dns" => IpValue::List(dns(text, family).ok()?),
        "dns-search" => IpValue::List(search(text).ok()?),
        _ => IpValue::Text(text.trim().to_string()),
    })
}

/// The call a filled-in form makes: `SetIpSettings` of the keys that changed, or nothing.
pub fn calls(form: &Form, settings: &IpSettings) -> Vec<Call> {
    let changed = changes(form, settings);
    if changed.is_empty() {
        Vec::new()
    } else {
        vec![Call::SetIpSettings {
            interface: settings.interface.clone(),
            settings: changed,
        }]
    }
}

/// The keys whose value differs from `settings` (a form without errors; see [`check`]).
pub fn changes(form: &Form, settings: &IpSettings) -> Vec<(String, IpValue)> {
    let mut out = Vec::new();
    for (key, _, _) in KEYS {
        let new = if key.ends_with(".method") {
            form.choice(key).map(|m| IpValue::Text(m.to_string()))
        } else {
            value_of(key, form.text(key))
        };
        let Some(new) = new else { continue };
        let old = match settings.values.get(key) {
            Some(IpValue::List(l)) => value_of(key, &l.join(",")),
            Some(IpValue::Text(t)) if key.ends_with(".method") => Some(IpValue::Text(t.clone())),
            Some(IpValue::Text(t)) => value_of(key, t),
            None => None,
        };
        let unchanged = match (&old, &new) {
            (Some(o), n) => o == n,
            // A key the profile does not have: sending it empty changes nothing.
            (None, IpValue::List(l)) => l.is_empty(),
            (None, IpValue::Text(t)) => t.is_empty(),
        };
        if !unchanged {
            out.push((key.to_string(), new));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_need_a_prefix_in_range_and_the_right_family() {
        assert_eq!(
            addresses("192.0.2.1/24, 192.0.2.2/32", Family::V4),
            Ok(vec!["192.0.2.1/24".into(), "192.0.2.2/32".into()])
        );
        assert!(addresses("192.0.2.1/33", Family::V4)
            .unwrap_err()
            .contains("1 to 32"));
        assert!(addresses("192.0.2.1/0", Family::V4).is_err());
        assert!(addresses("192.0.2.1", Family::V4)
            .unwrap_err()
            .contains("prefix length"));
        assert!(addresses("2001:db8::1/64", Family::V4)
            .unwrap_err()
            .contains("not an IPv4 address"));
        assert!(addresses("2001:db8::1/129", Family::V6).is_err());
        assert_eq!(
            addresses("2001:db8::1/128", Family::V6),
            Ok(vec!["2001:db8::1/128".into()])
        );
        assert_eq!(addresses(" , ", Family::V4), Ok(vec![]));
    }

    /// The detail line names the manager that holds the interface's settings and its file:
    /// under netplan or networkd, never NetworkManager's device state.
    #[test]
    fn the_detail_line_names_netplan_and_networkd_with_their_files() {
        let text = |pairs: &[(&str, &str)]| {
            let s = IpSettings {
                interface: "ib0".into(),
                values: pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), IpValue::Text(v.to_string())))
                    .collect(),
            };
            ip_lines(&IpState::Known(s), Theme::monochrome())
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        };
        let file = "/etc/netplan/90-rdma-manager.yaml";
        let np = text(&[("manager", "netplan"), ("keyfile", file)]);
        assert!(
            np.ends_with(&format!("IP settings: netplan, {file}")),
            "{np}"
        );
        let np = text(&[("manager", "netplan")]);
        assert!(
            np.contains("netplan (no file of rdma-manager's yet)"),
            "{np}"
        );
        let nd = text(&[("manager", "systemd-networkd")]);
        assert!(nd.contains("systemd-networkd (no file"), "{nd}");
        for line in [np, nd] {
            assert!(!line.contains("NetworkManager"), "{line}");
        }
    }

    /// The form names the manager that applies it: a networkd host gets no NetworkManager
    /// profile.
    #[test]
    fn the_profile_line_names_the_manager() {
        let settings = |pairs: &[(&str, &str)]| IpSettings {
            interface: "ib0".into(),
            values: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), IpValue::Text(v.to_string())))
                .collect(),
        };
        let profile = |s: &IpSettings| match form(s).get("profile").map(|f| f.kind.clone()) {
            Some(crate::form::FieldKind::Info(text)) => text,
            other => panic!("{other:?}"),
        };
        let nd = settings(&[("manager", "systemd-networkd")]);
        assert!(
            profile(&nd).contains("systemd-networkd"),
            "{}",
            profile(&nd)
        );
        assert!(!profile(&nd).contains("NetworkManager"), "{}", profile(&nd));
        let file = "/etc/systemd/network/50-rdma-manager-ib0.network";
        let nd = settings(&[("manager", "systemd-networkd"), ("keyfile", file)]);
        assert!(profile(&nd).ends_with(file), "{}", profile(&nd));
        let nm = settings(&[("manager", "NetworkManager")]);
        assert_eq!(profile(&nm), "none yet: NetworkManager makes one");
        let np = settings(&[("manager", "netplan")]);
        assert!(
            profile(&np).contains("90-rdma-manager.yaml"),
            "{}",
            profile(&np)
        );
        assert!(!profile(&np).contains("NetworkManager"), "{}", profile(&np));
    }

    /// netplan is a manager the daemon drives when it says nothing is left to the user, and
    /// one it cannot reach otherwise.
    #[test]
    fn netplan_opens_the_form_unless_the_daemon_gives_advice() {
        let answer = |pairs: &[(&str, &str)]| {
            Ok(CallOutput::IpSettings(IpSettings {
                interface: "ib0".into(),
                values: pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), IpValue::Text(v.to_string())))
                    .collect(),
            }))
        };
        let driven =
            IpState::from_answer(&answer(&[("manager", "netplan"), ("manager-advice", "")]));
        assert!(matches!(driven, Some(IpState::Known(_))), "{driven:?}");
        let unreachable = IpState::from_answer(&answer(&[
            ("manager", "netplan"),
            ("manager-advice", "install or start netplan-dbus"),
        ]));
        let refusal = unreachable.and_then(|s| s.refusal()).unwrap_or_default();
        assert!(refusal.contains("netplan-dbus"), "{refusal}");
    }

    #[test]
    fn dns_and_search_domains_are_checked() {
        assert!(dns("192.0.2.53 2001:db8::53", Family::V4).is_err());
        assert_eq!(
            dns("2001:db8::53", Family::V6),
            Ok(vec!["2001:db8::53".into()])
        );
        assert_eq!(
            search("example.com, ~lab.example"),
            Ok(vec!["example.com".into(), "~lab.example".into()])
        );
        // The daemon's rule: `_` is a DNS name's (`_tcp.example`), `-` not at a label's end.
        assert!(search("under_score.example").is_ok());
        assert!(search("-x.com").is_err());
    }
}
