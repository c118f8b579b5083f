//! The `.network` file the daemon writes for one interface where systemd-networkd manages
//! IP settings (systemd.network(5)), from nmcli's IP settings and back.
//!
//! Each family's method maps to networkd's keys as follows:
//!
//! | nmcli                | networkd                                             |
//! |----------------------|------------------------------------------------------|
//! | ipv4.method auto     | `DHCP=ipv4` (`yes` with IPv6's DHCPv6)                |
//! | ipv4.method link-local | `LinkLocalAddressing=ipv4`                          |
//! | ipv6.method auto     | `IPv6AcceptRA=yes` (SLAAC; DHCPv6 when the RA says so) |
//! | ipv6.method manual, link-local | `LinkLocalAddressing=ipv6`, `IPv6AcceptRA=no` |
//! | ipv6.method disabled | no IPv6 link-local address, `IPv6AcceptRA=no`          |
//! | addresses, gateway, dns | `Address=`, `Gateway=`, `DNS=` (one line each)      |
//! | dns-search (both)    | `Domains=` (networkd has one list for both families)  |
//!
//! networkd applies the first `.network` file (in lexical order of the names, over
//! /etc, /run and /usr/lib) whose `[Match]` matches a link: the daemon's file is named
//! `50-rdma-manager-<interface>.network`, and the daemon checks which file networkd runs the
//! link with before and after it writes.

use std::net::IpAddr;
use std::path::PathBuf;

use crate::nm::keys::IpSettings;
use crate::nm::profile::{Family, IpConfig, IpMethod};

/// Where the daemon writes its files (the administrator's directory, before /run and
/// /usr/lib).
pub const NETWORK_DIR: &str = "/etc/systemd/network";

/// The first line of every file the daemon writes: a file without it is not the daemon's.
pub const HEADER: &str = "# rdma-managerd: IP settings of";

/// The daemon's file for `interface`.
pub fn path(interface: &str) -> PathBuf {
    PathBuf::from(NETWORK_DIR).join(format!("50-rdma-manager-{interface}.network"))
}

/// Whether a file's text is one the daemon wrote.
pub fn is_ours(text: &str) -> bool {
    text.starts_with(HEADER)
}

/// The file for `interface` with these settings.
pub fn render(interface: &str, ip: &IpSettings) -> String {
    let mut out = format!(
        "{HEADER} {interface}, written through its Network.SetIpSettings; edits here are \
         replaced at the next change.\n[Match]\nName={interface}\n\n[Network]\n"
    );
    // DHCPv6 is started by the router advertisement (IPv6AcceptRA), not by DHCP=.
    let dhcp = if ip.ipv4.method == IpMethod::Auto {
        "ipv4"
    } else {
        "no"
    };
    out.push_str(&format!("DHCP={dhcp}\n"));
    let ll4 = ip.ipv4.method == IpMethod::LinkLocal;
    let ll6 = ip.ipv6.method != IpMethod::Disabled;
    let ll = match (ll4, ll6) {
        (true, true) => "yes",
        (true, false) => "ipv4",
        (false, true) => "ipv6",
        (false, false) => "no",
    };
    out.push_str(&format!("LinkLocalAddressing={ll}\n"));
    let ra = if ip.ipv6.method == IpMethod::Auto {
        "yes"
    } else {
        "no"
    };
    out.push_str(&format!("IPv6AcceptRA={ra}\n"));
    for c in [&ip.ipv4, &ip.ipv6] {
        if c.method == IpMethod::Disabled {
            continue;
        }
        for (a, p) in &c.addresses {
            out.push_str(&format!("Address={a}/{p}\n"));
        }
        if let Some(g) = c.gateway {
            out.push_str(&format!("Gateway={g}\n"));
        }
        for d in &c.dns {
            out.push_str(&format!("DNS={d}\n"));
        }
    }
    let domains: Vec<&str> = ip
        .ipv4
        .dns_search
        .iter()
        .chain(ip.ipv6.dns_search.iter())
        .map(String::as_str)
        .collect();
    if !domains.is_empty() {
        out.push_str(&format!("Domains={}\n", domains.join(" ")));
    }
    out
}

/// The settings a file of the daemon's says (keys it does not write are ignored); search
/// domains come back under IPv4.
pub fn parse(text: &str) -> IpSettings {
    let mut v4 = empty();
    let mut v6 = empty();
    let (mut dhcp, mut ll, mut ra) = ("no", "no", "no");
    let mut section = "";
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        if line.starts_with('[') {
            section = line;
            continue;
        }
        if section != "[Network]" {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim();
        let family_of = |ip: &IpAddr| if ip.is_ipv4() { Family::V4 } else { Family::V6 };
        match key.trim() {
            "DHCP" => dhcp = value,
            "LinkLocalAddressing" => ll = value,
            "IPv6AcceptRA" => ra = value,
            "Address" => {
                // The parse takes either family; the address says which it is.
                if let Ok(a) = IpConfig::parse_address(Family::V4, value) {
                    match Family::of(&a.0) {
                        Family::V4 => v4.addresses.push(a),
                        Family::V6 => v6.addresses.push(a),
                    }
                }
            }
            "Gateway" | "DNS" => {
                if let Ok(ip) = value.parse::<IpAddr>() {
                    let c = match family_of(&ip) {
                        Family::V4 => &mut v4,
                        Family::V6 => &mut v6,
                    };
                    if key.trim() == "Gateway" {
                        c.gateway = Some(ip);
                    } else {
                        c.dns.push(ip);
                    }
                }
            }
            "Domains" => v4
                .dns_search
                .extend(value.split_whitespace().map(str::to_string)),
            _ => {}
        }
    }
    v4.method = if matches!(dhcp, "yes" | "ipv4") {
        IpMethod::Auto
    } else if matches!(ll, "yes" | "ipv4") {
        IpMethod::LinkLocal
    } else if v4.addresses.is_empty() {
        IpMethod::Disabled
    } else {
        IpMethod::Manual
    };
    v6.method = if ra == "yes" {
        IpMethod::Auto
    } else if !matches!(ll, "yes" | "ipv6") {
        IpMethod::Disabled
    } else if v6.addresses.is_empty() {
        IpMethod::LinkLocal
    } else {
        IpMethod::Manual
    };
    IpSettings { ipv4: v4, ipv6: v6 }
}

fn empty() -> IpConfig {
    IpConfig {
        method: IpMethod::Disabled,
        addresses: Vec::new(),
        gateway: None,
        dns: Vec::new(),
        dns_search: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manual() -> IpSettings {
        let mut ip = IpSettings::nmcli_defaults();
        ip.ipv4.method = IpMethod::Manual;
        ip.ipv4.addresses = vec![("192.0.2.5".parse().unwrap(), 24)];
        ip.ipv4.gateway = Some("192.0.2.1".parse().unwrap());
        ip.ipv4.dns = vec!["192.0.2.53".parse().unwrap()];
        ip.ipv4.dns_search = vec!["example.com".into()];
        ip.ipv6.method = IpMethod::Manual;
        ip.ipv6.addresses = vec![("2001:db8::5".parse().unwrap(), 64)];
        ip
    }

    #[test]
    fn a_manual_interface_in_networkds_keys() {
        let text = render("ib0", &manual());
        assert!(is_ours(&text));
        let body: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            body,
            [
                "[Match]",
                "Name=ib0",
                "",
                "[Network]",
                "DHCP=no",
                "LinkLocalAddressing=ipv6",
                "IPv6AcceptRA=no",
                "Address=192.0.2.5/24",
                "Gateway=192.0.2.1",
                "DNS=192.0.2.53",
                "Address=2001:db8::5/64",
                "Domains=example.com",
            ]
        );
        assert_eq!(
            path("ib0"),
            PathBuf::from("/etc/systemd/network/50-rdma-manager-ib0.network")
        );
    }

    #[test]
    fn every_method_comes_back_as_written() {
        for m4 in [
            IpMethod::Auto,
            IpMethod::Manual,
            IpMethod::LinkLocal,
            IpMethod::Disabled,
        ] {
            for m6 in [
                IpMethod::Auto,
                IpMethod::Manual,
                IpMethod::LinkLocal,
                IpMethod::Disabled,
            ] {
                let mut ip = manual();
                ip.ipv4.method = m4;
                ip.ipv6.method = m6;
                if m4 == IpMethod::Disabled {
                    ip.ipv4 = empty();
                }
                if m6 == IpMethod::Disabled || m6 == IpMethod::LinkLocal {
                    ip.ipv6 = empty();
                    ip.ipv6.method = m6;
                }
                let back = parse(&render("ib0", &ip));
                assert_eq!(back.ipv4.method, m4, "{m4:?}/{m6:?}");
                assert_eq!(back.ipv6.method, m6, "{m4:?}/{m6:?}");
                assert_eq!(back.ipv6.addresses, ip.ipv6.addresses, "{m4:?}/{m6:?}");
            }
        }
        assert_eq!(parse(&render("ib0", &manual())), manual());
    }
}
