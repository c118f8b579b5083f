//! An IPoIB connection profile as NetworkManager stores it: the `connection`, `infiniband`,
//! `ipv4`, `ipv6` and `proxy` settings of `Settings.AddConnection2`, built the way nmcli builds
//! them for the same intent, so that the keyfile NetworkManager writes is the one `nmcli
//! connection add type infiniband ...` writes (the test `nm_profiles` compares them on a real
//! NetworkManager).
//!
//! What NetworkManager would change silently is refused here, before anything is sent: an MTU
//! above 65520 (stored as 65520), an address prefix above 32 or 128 (the address is dropped),
//! an address, gateway or DNS server of the other family. What NetworkManager refuses with a
//! sentence of its own (a P_Key of 0 or 0x8000, a child without a parent) is refused here
//! too, so that the caller gets one typed error whichever side would have caught it.

use std::collections::HashMap;
use std::net::IpAddr;

use zbus::zvariant::{OwnedValue, Value};

/// NetworkManager's largest IPoIB MTU, in both modes (NM 1.18 and later).
pub const MAX_MTU: u32 = 65520;

/// A bad profile, refused before NetworkManager is asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    #[error("{0}")]
    Invalid(String),
}

fn invalid(text: impl Into<String>) -> ProfileError {
    ProfileError::Invalid(text.into())
}

/// IPoIB transport mode (`infiniband.transport-mode`, required over D-Bus).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportMode {
    Datagram,
    Connected,
}

impl TransportMode {
    pub fn parse(text: &str) -> Result<TransportMode, ProfileError> {
        match text.to_ascii_lowercase().as_str() {
            "datagram" => Ok(TransportMode::Datagram),
            "connected" => Ok(TransportMode::Connected),
            _ => Err(invalid(format!(
                "transport mode {} is neither datagram nor connected",
                rdma_manager_dbus::text::quote_capped(text)
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TransportMode::Datagram => "datagram",
            TransportMode::Connected => "connected",
        }
    }
}

/// How an address family is configured (`ipv4.method`, `ipv6.method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpMethod {
    /// DHCP (IPv4) or SLAAC/DHCPv6 (IPv6).
    Auto,
    Manual,
    LinkLocal,
    Disabled,
}

impl IpMethod {
    pub fn parse(text: &str) -> Result<IpMethod, ProfileError> {
        match text {
            "auto" | "dhcp" => Ok(IpMethod::Auto),
            "manual" | "static" => Ok(IpMethod::Manual),
            "link-local" => Ok(IpMethod::LinkLocal),
            "disabled" => Ok(IpMethod::Disabled),
            _ => Err(invalid(format!(
                "IP method {} is not one of auto, manual, link-local, disabled",
                rdma_manager_dbus::text::quote_capped(text)
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            IpMethod::Auto => "auto",
            IpMethod::Manual => "manual",
            IpMethod::LinkLocal => "link-local",
            IpMethod::Disabled => "disabled",
        }
    }
}

pub use rdma_manager_model::ip::Family;

/// One family's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpConfig {
    pub method: IpMethod,
    /// (address, prefix length).
    pub addresses: Vec<(IpAddr, u8)>,
    pub gateway: Option<IpAddr>,
    pub dns: Vec<IpAddr>,
    pub dns_search: Vec<String>,
}

impl IpConfig {
    /// What nmcli gives a family it is told nothing about: DHCP for IPv4, SLAAC for IPv6.
    pub fn auto() -> IpConfig {
        IpConfig {
            method: IpMethod::Auto,
            addresses: Vec::new(),
            gateway: None,
            dns: Vec::new(),
            dns_search: Vec::new(),
        }
    }

    /// Parses `ADDRESS/PREFIX` of `family`.
    pub fn parse_address(family: Family, text: &str) -> Result<(IpAddr, u8), ProfileError> {
        let shown = rdma_manager_dbus::text::quote_capped(text);
        let (addr, prefix) = text.split_once('/').ok_or_else(|| {
            invalid(format!(
                "address {shown} has no prefix length (ADDRESS/PREFIX)"
            ))
        })?;
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| invalid(format!("{shown} is not an {family} address")))?;
        let prefix: u8 = prefix
            .parse()
            .map_err(|_| invalid(format!("the prefix length of {shown} is not a number")))?;
        Ok((addr, prefix))
    }

    /// Checks the settings of `family` as NetworkManager would, refusing what it would drop
    /// or change without saying so.
    pub fn check(&self, family: Family) -> Result<(), ProfileError> {
        for (addr, prefix) in &self.addresses {
            if Family::of(addr) != family {
                return Err(invalid(format!(
                    "{addr} is not an {family} address, in the {family} settings"
                )));
            }
            if !family.allows_prefix(*prefix) {
                return Err(invalid(format!(
                    "prefix length {prefix} of {addr} is outside 1 to {} (NetworkManager would \
                     drop the address)",
                    family.max_prefix()
                )));
            }
        }
        if let Some(gw) = &self.gateway {
            if Family::of(gw) != family {
                return Err(invalid(format!("gateway {gw} is not an {family} address")));
            }
            if self.addresses.is_empty() {
                return Err(invalid(format!(
                    "an {family} gateway needs an {family} address"
                )));
            }
        }
        for server in &self.dns {
            if Family::of(server) != family {
                return Err(invalid(format!(
                    "DNS server {server} is not an {family} address, in the {family} settings"
                )));
            }
        }
        for domain in &self.dns_search {
            check_domain(domain)?;
        }
        match self.method {
            IpMethod::Manual if self.addresses.is_empty() => Err(invalid(format!(
                "{family} method manual needs at least one address"
            ))),
            IpMethod::Auto | IpMethod::Manual => Ok(()),
            IpMethod::LinkLocal | IpMethod::Disabled
                if !self.addresses.is_empty() || self.gateway.is_some() =>
            {
                Err(invalid(format!(
                    "{family} method {} takes no addresses or gateway",
                    self.method.as_str()
                )))
            }
            IpMethod::LinkLocal | IpMethod::Disabled => Ok(()),
        }
    }
}

/// A DNS search domain ([`rdma_manager_model::ip::is_search_domain`]).
fn check_domain(domain: &str) -> Result<(), ProfileError> {
    if rdma_manager_model::ip::is_search_domain(domain) {
        Ok(())
    } else {
        let shown = rdma_manager_dbus::text::quote_capped(domain);
        Err(invalid(format!("{shown} is not a DNS search domain")))
    }
}

/// An IPoIB connection: the port's own interface, or a P_Key child of `parent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpoibProfile {
    /// The profile's name (`connection.id`).
    pub id: String,
    /// The port's interface; for a child, its parent (the child's name is `parent.%04x`).
    pub interface: String,
    /// For a P_Key child: the P_Key as given (0x0002 and 0x8002 are different children).
    pub pkey: Option<u16>,
    pub mode: TransportMode,
    pub mtu: Option<u32>,
    pub ipv4: IpConfig,
    pub ipv6: IpConfig,
}

/// The interface name NetworkManager requires of a P_Key child: `parent.%04x` of the value
/// as given (`infiniband.p-key` 0x000a gives `ib0.000a`).
pub fn child_name(parent: &str, pkey: u16) -> String {
    format!("{parent}.{pkey:04x}")
}

fn check_ifname(name: &str, what: &str) -> Result<(), ProfileError> {
    let shown = rdma_manager_dbus::text::quote_capped(name);
    if name.is_empty() || name.len() > 15 {
        return Err(invalid(format!("{what} {shown} is not 1 to 15 bytes long")));
    }
    if name == "."
        || name == ".."
        || name
            .bytes()
            .any(|b| b == b'/' || b == b':' || b.is_ascii_whitespace() || b.is_ascii_control())
    {
        return Err(invalid(format!(
            "{what} {shown} is not an interface name (no '/', ':' or spaces)"
        )));
    }
    Ok(())
}

impl IpoibProfile {
    /// The interface the profile configures.
    pub fn interface_name(&self) -> String {
        match self.pkey {
            Some(pkey) => child_name(&self.interface, pkey),
            None => self.interface.clone(),
        }
    }

    /// Everything NetworkManager would refuse or silently change, refused with the reason.
    pub fn check(&self) -> Result<(), ProfileError> {
        if self.id.is_empty() || self.id.len() > 255 || self.id.chars().any(char::is_control) {
            return Err(invalid(format!(
                "profile name {} is empty, too long or has control characters",
                rdma_manager_dbus::text::quote_capped(&self.id)
            )));
        }
        check_ifname(
            &self.interface,
            if self.pkey.is_some() {
                "parent"
            } else {
                "interface"
            },
        )?;
        if let Some(pkey) = self.pkey {
            if pkey == 0 || pkey == 0x8000 {
                return Err(invalid(format!(
                    "P_Key {pkey:#06x} is reserved (NetworkManager accepts 0x0001 to 0xffff but \
                     0x8000)"
                )));
            }
            check_ifname(&self.interface_name(), "child interface")?;
        }
        if let Some(mtu) = self.mtu {
            if mtu == 0 || mtu > MAX_MTU {
                return Err(invalid(format!(
                    "MTU {mtu} is outside 1 to {MAX_MTU} (NetworkManager would store {MAX_MTU})"
                )));
            }
        }
        self.ipv4.check(Family::V4)?;
        self.ipv6.check(Family::V6)
    }

    /// The settings of `Settings.AddConnection2` (`a{sa{sv}}`), with `uuid` as the profile's
    /// UUID; checked first.
    pub fn settings(&self, uuid: &str) -> Result<Settings, ProfileError> {
        self.check()?;
        let mut connection = Section::new();
        connection.put("id", self.id.as_str());
        connection.put("uuid", uuid);
        connection.put("type", "infiniband");
        connection.put("interface-name", self.interface_name().as_str());
        let mut infiniband = Section::new();
        infiniband.put("transport-mode", self.mode.as_str());
        if let Some(mtu) = self.mtu {
            infiniband.put("mtu", mtu);
        }
        if let Some(pkey) = self.pkey {
            infiniband.put("p-key", i32::from(pkey));
            infiniband.put("parent", self.interface.as_str());
        }
        let mut settings = Settings::new();
        settings.insert("connection".into(), connection.0);
        settings.insert("infiniband".into(), infiniband.0);
        settings.insert("ipv4".into(), ip_section(&self.ipv4, Family::V4).0);
        let mut ipv6 = ip_section(&self.ipv6, Family::V6);
        // nmcli sets it on every new profile ("default": NetworkManager's configured mode).
        ipv6.put("addr-gen-mode", ADDR_GEN_MODE_DEFAULT);
        settings.insert("ipv6".into(), ipv6.0);
        // nmcli adds an empty proxy setting to every new profile.
        settings.insert("proxy".into(), HashMap::new());
        Ok(settings)
    }
}

/// `NM_SETTING_IP6_CONFIG_ADDR_GEN_MODE_DEFAULT`.
const ADDR_GEN_MODE_DEFAULT: i32 = 3;

/// NetworkManager's connection settings: setting name to property name to value.
pub type Settings = HashMap<String, HashMap<String, OwnedValue>>;

struct Section(HashMap<String, OwnedValue>);

impl Section {
    fn new() -> Section {
        Section(HashMap::new())
    }

    fn put<'a>(&mut self, key: &str, value: impl Into<Value<'a>>) {
        // Values built from owned basic types and arrays of them never hold a file
        // descriptor, the one case where the conversion fails.
        if let Ok(v) = OwnedValue::try_from(value.into()) {
            self.0.insert(key.to_string(), v);
        }
    }
}

/// Replaces one family's method, addresses, gateway and DNS in a profile's section as
/// NetworkManager returned it, keeping its other keys; the deprecated `addresses` form is
/// dropped so that `address-data` decides.
pub fn replace_ip(section: &mut HashMap<String, OwnedValue>, config: &IpConfig, family: Family) {
    for key in [
        "method",
        "addresses",
        "address-data",
        "gateway",
        "dns",
        "dns-search",
    ] {
        section.remove(key);
    }
    section.extend(ip_section(config, family).0);
}

fn ip_section(config: &IpConfig, family: Family) -> Section {
    let mut s = Section::new();
    s.put("method", config.method.as_str());
    if !config.addresses.is_empty() {
        let data: Vec<HashMap<String, Value<'static>>> = config
            .addresses
            .iter()
            .map(|(addr, prefix)| {
                HashMap::from([
                    ("address".to_string(), Value::from(addr.to_string())),
                    ("prefix".to_string(), Value::from(u32::from(*prefix))),
                ])
            })
            .collect();
        s.put("address-data", data);
    }
    if let Some(gw) = &config.gateway {
        s.put("gateway", gw.to_string());
    }
    if !config.dns.is_empty() {
        match family {
            // ipv4.dns: `au`, each address in network byte order.
            Family::V4 => {
                let servers: Vec<u32> = config
                    .dns
                    .iter()
                    .filter_map(|a| match a {
                        IpAddr::V4(v4) => Some(u32::from_ne_bytes(v4.octets())),
                        IpAddr::V6(_) => None,
                    })
                    .collect();
                s.put("dns", servers);
            }
            // ipv6.dns: `aay`, 16 bytes each.
            Family::V6 => {
                let servers: Vec<Vec<u8>> = config
                    .dns
                    .iter()
                    .filter_map(|a| match a {
                        IpAddr::V6(v6) => Some(v6.octets().to_vec()),
                        IpAddr::V4(_) => None,
                    })
                    .collect();
                s.put("dns", servers);
            }
        }
    }
    if !config.dns_search.is_empty() {
        s.put("dns-search", config.dns_search.clone());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guide_connected() -> IpoibProfile {
        IpoibProfile {
            id: "mlx4_ib0".into(),
            interface: "mlx4_ib0".into(),
            pkey: None,
            mode: TransportMode::Connected,
            mtu: Some(65520),
            ipv4: IpConfig {
                method: IpMethod::Manual,
                addresses: vec![("192.0.2.1".parse().unwrap(), 24)],
                gateway: Some("192.0.2.254".parse().unwrap()),
                dns: vec!["192.0.2.253".parse().unwrap()],
                dns_search: vec!["example.com".into()],
            },
            ipv6: IpConfig::auto(),
        }
    }

    fn refused(p: &IpoibProfile) -> String {
        match p.settings("00000000-0000-4000-8000-000000000000") {
            Err(ProfileError::Invalid(m)) => m,
            Ok(_) => panic!("accepted: {p:?}"),
        }
    }

    #[test]
    fn a_child_is_named_after_the_pkey_as_given() {
        assert_eq!(child_name("ib0", 0x000a), "ib0.000a");
        assert_eq!(child_name("mlx4_ib0", 0x8002), "mlx4_ib0.8002");
        let mut p = guide_connected();
        p.pkey = Some(0x8002);
        let s = p.settings("u").expect("valid");
        let ifname: &str = s["connection"]["interface-name"]
            .downcast_ref()
            .expect("a string");
        assert_eq!(ifname, "mlx4_ib0.8002");
        let pkey: i32 = s["infiniband"]["p-key"].downcast_ref().expect("an i32");
        assert_eq!(pkey, 0x8002);
    }

    #[test]
    fn what_nm_would_change_silently_is_refused() {
        let mut p = guide_connected();
        p.mtu = Some(65521);
        assert!(refused(&p).contains("65520"));
        let mut p = guide_connected();
        p.ipv4.addresses[0].1 = 33;
        assert!(refused(&p).contains("prefix length 33"));
        let mut p = guide_connected();
        p.ipv4.addresses.push(("2001:db8::1".parse().unwrap(), 64));
        assert!(refused(&p).contains("not an IPv4 address"));
        let mut p = guide_connected();
        p.ipv4.dns = vec!["2001:db8::53".parse().unwrap()];
        assert!(refused(&p).contains("DNS server"));
        let mut p = guide_connected();
        p.ipv4.dns_search = vec!["exa mple.com".into()];
        assert!(refused(&p).contains("not a DNS search domain"));
        for pkey in [0, 0x8000] {
            let mut p = guide_connected();
            p.pkey = Some(pkey);
            assert!(refused(&p).contains("reserved"));
        }
        let mut p = guide_connected();
        p.ipv4.addresses.clear();
        p.ipv4.gateway = None;
        assert!(refused(&p).contains("needs at least one address"));
        let mut p = guide_connected();
        p.interface = "a/b".into();
        assert!(refused(&p).contains("not an interface name"));
        let mut p = guide_connected();
        p.interface = "mlx4_ib0_long_x".into();
        p.pkey = Some(2);
        assert!(refused(&p).contains("child interface"));
    }

    #[test]
    fn addresses_parse_with_their_prefix() {
        assert_eq!(
            IpConfig::parse_address(Family::V4, "192.0.2.1/24"),
            Ok(("192.0.2.1".parse().unwrap(), 24))
        );
        assert!(IpConfig::parse_address(Family::V4, "192.0.2.1").is_err());
        assert!(IpConfig::parse_address(Family::V4, "192.0.2.1/x").is_err());
        assert!(IpConfig::parse_address(Family::V6, "nothing/64").is_err());
    }

    #[test]
    fn ipv4_dns_is_in_network_byte_order() {
        let s = guide_connected().settings("u").expect("valid");
        let dns: Vec<u32> = s["ipv4"]["dns"].clone().try_into().expect("au");
        assert_eq!(dns, [u32::from_ne_bytes([192, 0, 2, 253])]);
    }
}
