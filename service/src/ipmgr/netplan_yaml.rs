//! IP settings as netplan holds them (netplan(5)): read from the merged YAML that
//! `Config.Get` returns, and written as one `netplan set` delta for the interface's
//! definition in the daemon's file, /etc/netplan/90-rdma-manager.yaml.
//!
//! The mapping, nmcli's methods to netplan's keys: `auto` is `dhcp4: true` (IPv4) or
//! `dhcp6: true` with `accept-ra: true` (IPv6); `manual` is addresses without DHCP;
//! `link-local` puts the family in `link-local`; `disabled` is none of these. A gateway is a
//! default route (`routes: [{to: default, via: ...}]`); DNS servers and search domains are
//! `nameservers`, which netplan keeps for both families at once.

use std::net::IpAddr;

use serde_yaml_ng::{Mapping, Value};

use crate::nm::keys::IpSettings;
use crate::nm::profile::{Family, IpConfig, IpMethod};

/// The daemon's file under /etc/netplan, as `Set`'s origin hint names it.
pub const ORIGIN_HINT: &str = "90-rdma-manager";

/// The file the origin hint makes.
pub fn file_path() -> std::path::PathBuf {
    std::path::Path::new(super::NETPLAN_DIR).join(format!("{ORIGIN_HINT}.yaml"))
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetplanYamlError {
    #[error("netplan's configuration is not YAML it can be read as: {0}")]
    Unreadable(String),
    /// The interface is defined where the daemon's definition would not replace it.
    #[error("{0}")]
    DefinedElsewhere(String),
}

/// What netplan's merged configuration says of an interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// Its settings, when `ethernets` defines it under its own name.
    pub settings: Option<IpSettings>,
}

/// The sections whose definitions are virtual devices netplan creates, not links it only
/// configures: an IPoIB or RoCE netdev defined there is not the daemon's to redefine.
const OTHER_SECTIONS: [&str; 8] = [
    "bonds",
    "bridges",
    "vlans",
    "tunnels",
    "vrfs",
    "wifis",
    "modems",
    "nm-devices",
];

/// Reads `interface`'s definition from netplan's merged YAML. An interface defined under
/// another id (`match: {name: ...}`) or in a section of virtual devices is refused: the
/// daemon's definition, keyed by the interface's name, would be a second one.
pub fn definition(yaml: &str, interface: &str) -> Result<Definition, NetplanYamlError> {
    let doc: Value =
        serde_yaml_ng::from_str(yaml).map_err(|e| NetplanYamlError::Unreadable(e.to_string()))?;
    let network = doc.get("network").cloned().unwrap_or(Value::Null);
    for section in OTHER_SECTIONS {
        if network
            .get(section)
            .and_then(Value::as_mapping)
            .is_some_and(|m| m.contains_key(interface))
        {
            return Err(NetplanYamlError::DefinedElsewhere(format!(
                "netplan defines {interface} under {section}: change its IP settings in that \
                 file under /etc/netplan"
            )));
        }
    }
    let Some(ethernets) = network.get("ethernets").and_then(Value::as_mapping) else {
        return Ok(Definition { settings: None });
    };
    for (id, def) in ethernets {
        let id = id.as_str().unwrap_or_default();
        let matched = def
            .get("match")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str);
        if id != interface && matched == Some(interface) {
            return Err(NetplanYamlError::DefinedElsewhere(format!(
                "netplan's definition {id} (match: name: {interface}) configures {interface}: \
                 change its IP settings there"
            )));
        }
    }
    Ok(Definition {
        settings: ethernets.get(interface).map(settings_of),
    })
}

/// netplan's booleans are YAML 1.1's: `yes`, `on` and `y` are true.
fn truthy(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => {
            matches!(s.to_ascii_lowercase().as_str(), "true" | "yes" | "y" | "on")
        }
        _ => false,
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_sequence)
        .into_iter()
        .flatten()
        .filter_map(|item| match item {
            Value::String(s) => Some(s.clone()),
            // An address with options: `- 192.0.2.5/24: {lifetime: 0}`.
            Value::Mapping(m) => m.keys().next().and_then(Value::as_str).map(str::to_string),
            _ => None,
        })
        .collect()
}

/// The settings of one `ethernets` definition. What netplan accepts and nmcli's keys cannot
/// say (routes other than the default, per-family DNS) is left out of the reading; the
/// change the daemon writes replaces only the keys it owns.
fn settings_of(def: &Value) -> IpSettings {
    let mut v4 = IpConfig::auto();
    let mut v6 = IpConfig::auto();
    for text in strings(def.get("addresses")) {
        for family in [Family::V4, Family::V6] {
            if let Ok(a) = IpConfig::parse_address(family, &text) {
                match Family::of(&a.0) {
                    Family::V4 => v4.addresses.push(a),
                    Family::V6 => v6.addresses.push(a),
                }
                break;
            }
        }
    }
    let mut gateways: Vec<IpAddr> = ["gateway4", "gateway6"]
        .iter()
        .filter_map(|k| def.get(*k).and_then(Value::as_str))
        .filter_map(|g| g.parse().ok())
        .collect();
    for route in def
        .get("routes")
        .and_then(Value::as_sequence)
        .into_iter()
        .flatten()
    {
        let to = route.get("to").and_then(Value::as_str).unwrap_or_default();
        if matches!(to, "default" | "0.0.0.0/0" | "::/0") {
            if let Some(via) = route
                .get("via")
                .and_then(Value::as_str)
                .and_then(|v| v.parse().ok())
            {
                gateways.push(via);
            }
        }
    }
    for gw in gateways {
        match Family::of(&gw) {
            Family::V4 => v4.gateway = v4.gateway.or(Some(gw)),
            Family::V6 => v6.gateway = v6.gateway.or(Some(gw)),
        }
    }
    let ns = def.get("nameservers");
    for server in strings(ns.and_then(|n| n.get("addresses"))) {
        match server.parse::<IpAddr>() {
            Ok(a @ IpAddr::V4(_)) => v4.dns.push(a),
            Ok(a @ IpAddr::V6(_)) => v6.dns.push(a),
            Err(_) => {}
        }
    }
    v4.dns_search = strings(ns.and_then(|n| n.get("search")));
    let link_local = match def.get("link-local") {
        Some(_) => strings(def.get("link-local")),
        // netplan's default.
        None => vec!["ipv6".to_string()],
    };
    v4.method = if truthy(def.get("dhcp4")) {
        IpMethod::Auto
    } else if !v4.addresses.is_empty() {
        IpMethod::Manual
    } else if link_local.iter().any(|f| f == "ipv4") {
        IpMethod::LinkLocal
    } else {
        IpMethod::Disabled
    };
    v6.method = if truthy(def.get("dhcp6")) || truthy(def.get("accept-ra")) {
        IpMethod::Auto
    } else if !v6.addresses.is_empty() {
        IpMethod::Manual
    } else if link_local.iter().any(|f| f == "ipv6") {
        IpMethod::LinkLocal
    } else {
        IpMethod::Disabled
    };
    IpSettings { ipv4: v4, ipv6: v6 }
}

/// netplan set's key for `interface`'s definition: dots in a name (a P_Key child `ib0.8001`)
/// are escaped, as `netplan set` splits the key on unescaped dots.
pub fn key(interface: &str) -> String {
    format!("ethernets.{}", interface.replace('.', "\\."))
}

/// The definition the daemon writes for `ip`, as a YAML flow mapping (JSON, which YAML
/// reads as it is): every key the daemon owns, so that it replaces what the file said.
pub fn render(ip: &IpSettings) -> String {
    let mut m = Mapping::new();
    let on = |c: &IpConfig| c.method != IpMethod::Disabled;
    m.insert("dhcp4".into(), (ip.ipv4.method == IpMethod::Auto).into());
    m.insert("dhcp6".into(), (ip.ipv6.method == IpMethod::Auto).into());
    m.insert(
        "accept-ra".into(),
        (ip.ipv6.method == IpMethod::Auto).into(),
    );
    let mut link_local: Vec<Value> = Vec::new();
    if ip.ipv4.method == IpMethod::LinkLocal {
        link_local.push("ipv4".into());
    }
    if on(&ip.ipv6) {
        link_local.push("ipv6".into());
    }
    m.insert("link-local".into(), Value::Sequence(link_local));
    let families = [&ip.ipv4, &ip.ipv6];
    let addresses: Vec<Value> = families
        .iter()
        .filter(|c| on(c))
        .flat_map(|c| c.addresses.iter())
        .map(|(a, p)| Value::String(format!("{a}/{p}")))
        .collect();
    if !addresses.is_empty() {
        m.insert("addresses".into(), Value::Sequence(addresses));
    }
    let routes: Vec<Value> = families
        .iter()
        .filter(|c| on(c))
        .filter_map(|c| c.gateway)
        .map(|gw| {
            let mut r = Mapping::new();
            r.insert("to".into(), "default".into());
            r.insert("via".into(), gw.to_string().into());
            Value::Mapping(r)
        })
        .collect();
    if !routes.is_empty() {
        m.insert("routes".into(), Value::Sequence(routes));
    }
    let servers: Vec<Value> = families
        .iter()
        .filter(|c| on(c))
        .flat_map(|c| c.dns.iter())
        .map(|a| Value::String(a.to_string()))
        .collect();
    let mut search: Vec<String> = Vec::new();
    for d in families.iter().flat_map(|c| c.dns_search.iter()) {
        if !search.contains(d) {
            search.push(d.clone());
        }
    }
    if !servers.is_empty() || !search.is_empty() {
        let mut ns = Mapping::new();
        if !servers.is_empty() {
            ns.insert("addresses".into(), Value::Sequence(servers));
        }
        if !search.is_empty() {
            ns.insert(
                "search".into(),
                Value::Sequence(search.into_iter().map(Value::String).collect()),
            );
        }
        m.insert("nameservers".into(), Value::Mapping(ns));
    }
    // A mapping of strings, booleans and lists of them always has a JSON form.
    serde_json::to_string(&Value::Mapping(m)).unwrap_or_else(|_| "{}".to_string())
}

/// What the daemon's definition of `ip` reads back as, for comparing with what netplan's
/// merged configuration says once the change is in its file.
pub fn as_read(ip: &IpSettings) -> IpSettings {
    let def: Value = serde_yaml_ng::from_str(&render(ip)).unwrap_or(Value::Null);
    settings_of(&def)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manual(addr: &str, gw: Option<&str>) -> IpSettings {
        let mut ip = IpSettings::nmcli_defaults();
        ip.ipv4.method = IpMethod::Manual;
        ip.ipv4.addresses = vec![IpConfig::parse_address(Family::V4, addr).expect("address")];
        ip.ipv4.gateway = gw.map(|g| g.parse().expect("gateway"));
        ip.ipv4.dns = vec!["192.0.2.53".parse().expect("dns")];
        ip.ipv4.dns_search = vec!["fabric.example".into()];
        ip.ipv6.method = IpMethod::LinkLocal;
        ip
    }

    /// As `Config.Get` of netplan 0.106 printed a file it had written.
    #[test]
    fn reads_a_definition_as_netplan_prints_it() {
        let yaml = "network:\n  version: 2\n  renderer: networkd\n  ethernets:\n    eth0:\n      \
                    addresses:\n      - \"192.0.2.5/24\"\n      - \"2001:db8::5/64\"\n      \
                    nameservers:\n        addresses:\n        - 192.0.2.53\n      dhcp4: false\n      \
                    routes:\n      - to: \"default\"\n        via: \"192.0.2.1\"\n";
        let d = definition(yaml, "eth0").expect("read");
        let ip = d.settings.expect("defined");
        assert_eq!(ip.ipv4.method, IpMethod::Manual);
        assert_eq!(ip.ipv4.addresses, vec![("192.0.2.5".parse().unwrap(), 24)]);
        assert_eq!(ip.ipv4.gateway, Some("192.0.2.1".parse().unwrap()));
        assert_eq!(ip.ipv4.dns, vec!["192.0.2.53".parse::<IpAddr>().unwrap()]);
        assert_eq!(ip.ipv6.method, IpMethod::Manual);
        assert_eq!(definition(yaml, "ib0").expect("read").settings, None);
    }

    #[test]
    fn yes_is_true_and_an_absent_family_is_link_local_or_disabled() {
        let yaml = "network:\n  ethernets:\n    ib0:\n      dhcp4: yes\n";
        let ip = definition(yaml, "ib0").unwrap().settings.unwrap();
        assert_eq!(ip.ipv4.method, IpMethod::Auto);
        assert_eq!(ip.ipv6.method, IpMethod::LinkLocal);
        let yaml = "network:\n  ethernets:\n    ib0:\n      link-local: []\n";
        let ip = definition(yaml, "ib0").unwrap().settings.unwrap();
        assert_eq!(ip.ipv4.method, IpMethod::Disabled);
        assert_eq!(ip.ipv6.method, IpMethod::Disabled);
    }

    #[test]
    fn what_is_written_reads_back_the_same() {
        for ip in [
            manual("192.0.2.5/24", Some("192.0.2.1")),
            manual("10.1.0.9/16", None),
            IpSettings::nmcli_defaults(),
        ] {
            let back: Value = serde_yaml_ng::from_str(&render(&ip)).expect("YAML");
            assert_eq!(settings_of(&back), ip, "{}", render(&ip));
        }
    }

    #[test]
    fn the_delta_is_a_flow_mapping_and_dots_in_names_are_escaped() {
        let text = render(&manual("192.0.2.5/24", Some("192.0.2.1")));
        assert_eq!(
            text,
            r#"{"dhcp4":false,"dhcp6":false,"accept-ra":false,"link-local":["ipv6"],"addresses":["192.0.2.5/24"],"routes":[{"to":"default","via":"192.0.2.1"}],"nameservers":{"addresses":["192.0.2.53"],"search":["fabric.example"]}}"#
        );
        assert_eq!(key("ib0.8001"), "ethernets.ib0\\.8001");
    }

    #[test]
    fn a_definition_elsewhere_is_refused() {
        let bond = "network:\n  bonds:\n    ib0: {interfaces: []}\n";
        assert!(matches!(
            definition(bond, "ib0"),
            Err(NetplanYamlError::DefinedElsewhere(t)) if t.contains("bonds")
        ));
        let matched = "network:\n  ethernets:\n    fabric:\n      match: {name: ib0}\n";
        assert!(matches!(
            definition(matched, "ib0"),
            Err(NetplanYamlError::DefinedElsewhere(t)) if t.contains("fabric")
        ));
        assert!(matches!(
            definition("network: [", "ib0"),
            Err(NetplanYamlError::Unreadable(_))
        ));
    }
}
