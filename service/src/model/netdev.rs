//! Network interfaces, with the IPoIB attributes of `type` 32 (ARPHRD_INFINIBAND) netdevs.

use serde::{Serialize, Serializer};

use super::attr::{trim_attr, AttrError, Field};
use super::Guid;

/// ARPHRD_INFINIBAND: the `type` of an IPoIB netdev.
pub const ARPHRD_INFINIBAND: u16 = 32;
/// ARPHRD_ETHER.
pub const ARPHRD_ETHER: u16 = 1;

pub use rdma_manager_model::ipoib::IpoibMode;

/// An IPoIB netdev's `mode` file.
pub fn parse_ipoib_mode(raw: &str) -> Field<IpoibMode> {
    match trim_attr(raw) {
        "datagram" => Ok(IpoibMode::Datagram),
        "connected" => Ok(IpoibMode::Connected),
        other => Err(AttrError::malformed(
            other,
            "expected datagram or connected",
        )),
    }
}

/// A link-layer address: 6 bytes for Ethernet, 20 for IPoIB.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HwAddress(pub Vec<u8>);

/// IPOIB_FLAGS_RC: the device can do connected mode.
pub const IPOIB_FLAGS_RC: u8 = 0x80;

impl HwAddress {
    /// Parses `address` ("xx:xx:...").
    pub fn parse_sysfs(raw: &str) -> Field<HwAddress> {
        let s = trim_attr(raw).trim();
        if s.is_empty() {
            return Err(AttrError::malformed(s, "empty address"));
        }
        s.split(':')
            .map(|b| {
                if b.len() != 2 {
                    return Err(AttrError::malformed(s, "expected two hex digits per byte"));
                }
                u8::from_str_radix(b, 16).map_err(|e| AttrError::malformed(s, e.to_string()))
            })
            .collect::<Result<Vec<u8>, _>>()
            .map(HwAddress)
    }

    pub fn to_sysfs(&self) -> String {
        self.0
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":")
    }

    /// For a 20-byte IPoIB address: the port GUID in its last 8 bytes, the only stable part.
    pub fn ipoib_port_guid(&self) -> Option<Guid> {
        if self.0.len() != 20 {
            return None;
        }
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.0[12..20]);
        Some(Guid::from_be_bytes(b))
    }

    /// For a 20-byte IPoIB address: whether connected mode is possible (IPOIB_FLAGS_RC).
    /// Enhanced IPoIB (mlx5, ConnectX-4 and later) never sets it.
    pub fn ipoib_supports_connected(&self) -> Option<bool> {
        (self.0.len() == 20).then(|| self.0[0] & IPOIB_FLAGS_RC != 0)
    }

    pub fn as_mac(&self) -> Option<[u8; 6]> {
        <[u8; 6]>::try_from(self.0.as_slice()).ok()
    }
}

impl Serialize for HwAddress {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_sysfs())
    }
}

/// IPoIB-specific attributes of a netdev.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IpoibAttrs {
    /// With the full-membership bit (0x8000) as the kernel stores it.
    pub pkey: Field<u16>,
    pub mode: Field<IpoibMode>,
    pub umcast: Field<bool>,
    /// HCA port number (`dev_port` + 1).
    pub port: Field<u32>,
    /// The parent interface of a child (legacy `parent` file, or IFLA_LINK).
    pub parent: Option<String>,
    /// `carrier`: IPoIB turns it on once the interface has joined its partition's broadcast
    /// multicast group (the kernel's IPoIB multicast join), so it is the join's state too.
    /// Unreadable (EINVAL) while the interface is down.
    pub carrier: Field<bool>,
    /// IFF_UP of `flags`: set up (`ip link set NAME up`), whatever its carrier; an interface
    /// without carrier reads operstate `down` either way.
    pub admin_up: Field<bool>,
}

/// A network interface as seen in `/sys/class/net/<name>/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NetdevSnapshot {
    pub name: String,
    pub ifindex: Field<u32>,
    /// ARPHRD_* (`type`): 1 Ethernet, 32 InfiniBand.
    pub arphrd: Field<u16>,
    pub address: Field<HwAddress>,
    pub mtu: Field<u32>,
    pub operstate: Field<String>,
    /// `uevent` DEVTYPE (vlan, bond, ...), if any.
    pub devtype: Option<String>,
    /// PCI function behind the `device` link, if any.
    pub pci_address: Option<String>,
    /// Present when `arphrd` is 32.
    pub ipoib: Option<IpoibAttrs>,
}

impl NetdevSnapshot {
    pub fn is_ipoib(&self) -> bool {
        self.arphrd == Ok(ARPHRD_INFINIBAND)
    }

    pub fn is_vlan(&self) -> bool {
        self.devtype.as_deref() == Some("vlan")
    }
}

/// An IPv4 or IPv6 address of a netdev with its prefix length, as `ip address` lists it
/// (the local address of an RTM_NEWADDR: IFA_LOCAL where the kernel sends one, else
/// IFA_ADDRESS, which is the peer's on a point-to-point link).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct NetdevAddress {
    pub ip: std::net::IpAddr,
    pub prefix: u8,
}

impl std::fmt::Display for NetdevAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.ip, self.prefix)
    }
}

/// Parses the 0/1 `umcast` file.
pub fn parse_bool01(raw: &str) -> Field<bool> {
    match trim_attr(raw).trim() {
        "0" => Ok(false),
        "1" => Ok(true),
        other => Err(AttrError::malformed(other, "expected 0 or 1")),
    }
}

/// Reads DEVTYPE out of a `uevent` file.
pub fn uevent_devtype(uevent: &str) -> Option<String> {
    uevent
        .lines()
        .find_map(|l| l.strip_prefix("DEVTYPE="))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert_eq!(parse_ipoib_mode("datagram\n"), Ok(IpoibMode::Datagram));
        assert_eq!(parse_ipoib_mode("connected\n"), Ok(IpoibMode::Connected));
        assert!(parse_ipoib_mode("Connected").is_err());
        assert_eq!(IpoibMode::Connected.sysfs_write_form(), "connected\n");
        assert_eq!(IpoibMode::from_netlink(1), Some(IpoibMode::Connected));
        assert_eq!(IpoibMode::from_netlink(2), None);
    }

    #[test]
    fn ipoib_address() {
        let a =
            HwAddress::parse_sysfs("80:00:02:08:fe:80:00:00:00:00:00:00:00:02:c9:03:00:31:78:f2\n")
                .unwrap();
        assert_eq!(a.0.len(), 20);
        assert_eq!(
            a.ipoib_port_guid().map(|g| g.0),
            Some(0x0002_c903_0031_78f2)
        );
        assert_eq!(a.ipoib_supports_connected(), Some(true));
        let enhanced =
            HwAddress::parse_sysfs("00:00:10:87:fe:80:00:00:00:00:00:00:b8:59:9f:03:00:d4:e6:2a")
                .unwrap();
        assert_eq!(enhanced.ipoib_supports_connected(), Some(false));
        let mac = HwAddress::parse_sysfs("06:f6:b9:05:ca:57").unwrap();
        assert_eq!(mac.ipoib_port_guid(), None);
        assert_eq!(mac.as_mac(), Some([6, 0xf6, 0xb9, 5, 0xca, 0x57]));
    }

    #[test]
    fn address_malformed() {
        for bad in ["", "0:1:2", "zz:00", "00:11:22:33:44:5"] {
            assert!(HwAddress::parse_sysfs(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn bools_and_devtype() {
        assert_eq!(parse_bool01("1\n"), Ok(true));
        assert_eq!(parse_bool01("0"), Ok(false));
        assert!(parse_bool01("yes").is_err());
        assert_eq!(
            uevent_devtype("DEVTYPE=vlan\nINTERFACE=eth0.5\nIFINDEX=7\n").as_deref(),
            Some("vlan")
        );
        assert_eq!(uevent_devtype("INTERFACE=eth0\nIFINDEX=2\n"), None);
    }
}
