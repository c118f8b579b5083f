//! RDMA devices and their ports as read from `/sys/class/infiniband/<dev>/`.

use std::net::Ipv6Addr;

use serde::Serialize;

use super::attr::{split_numbered, trim_attr, AttrError, Field};
use super::{Guid, LinkLayer, PhysState, PortState, Rate};

/// `node_type` ("%u: %s"), numbers from `enum rdma_node_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum NodeType {
    Ca,
    Switch,
    Router,
    Rnic,
    Usnic,
    UsnicUdp,
    Unspecified,
}

impl NodeType {
    pub fn from_number(n: u32) -> Option<NodeType> {
        Some(match n {
            1 => NodeType::Ca,
            2 => NodeType::Switch,
            3 => NodeType::Router,
            4 => NodeType::Rnic,
            5 => NodeType::Usnic,
            6 => NodeType::UsnicUdp,
            7 => NodeType::Unspecified,
            _ => return None,
        })
    }

    pub fn number(self) -> u32 {
        self as u32 + 1
    }

    pub fn parse_sysfs(raw: &str) -> Field<NodeType> {
        let (n, _) = split_numbered(raw)?;
        NodeType::from_number(n)
            .ok_or_else(|| AttrError::malformed(trim_attr(raw), "unknown node type number"))
    }

    /// The word sysfs prints (`1: CA`).
    pub fn sysfs_name(self) -> &'static str {
        match self {
            NodeType::Ca => "CA",
            NodeType::Switch => "switch",
            NodeType::Router => "router",
            NodeType::Rnic => "RNIC",
            NodeType::Usnic => "usNIC",
            NodeType::UsnicUdp => "usNIC UDP",
            NodeType::Unspecified => "unspecified",
        }
    }

    /// The word `rdma dev show` prints (iproute2 `node_type_to_str`).
    pub fn rdma_tool_name(self) -> &'static str {
        match self {
            NodeType::Ca => "ca",
            NodeType::Switch => "switch",
            NodeType::Router => "router",
            NodeType::Rnic => "rnic",
            NodeType::Usnic => "usnic",
            NodeType::UsnicUdp => "usnic_udp",
            NodeType::Unspecified => "unspecified",
        }
    }
}

/// What created the device: a driver for real hardware, or a user through `rdma link add`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum DeviceKind {
    Hardware,
    Rxe,
    Siw,
    /// A virtual device of another driver (no `device` link and no known `parent`).
    OtherVirtual,
}

/// `gid_attrs/types/<i>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum GidType {
    /// "IB/RoCE v1": InfiniBand GIDs and RoCE v1.
    IbRoceV1,
    /// "RoCE v2".
    RoceV2,
}

impl GidType {
    pub fn parse_sysfs(raw: &str) -> Field<GidType> {
        match trim_attr(raw) {
            "IB/RoCE v1" => Ok(GidType::IbRoceV1),
            "RoCE v2" => Ok(GidType::RoceV2),
            other => Err(AttrError::malformed(
                other,
                "expected \"IB/RoCE v1\" or \"RoCE v2\"",
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            GidType::IbRoceV1 => "IB/RoCE v1",
            GidType::RoceV2 => "RoCE v2",
        }
    }
}

/// Parses `gids/<i>`: IPv6 text in eight 4-digit groups.
pub fn parse_gid(raw: &str) -> Field<Ipv6Addr> {
    let s = trim_attr(raw).trim();
    s.parse::<Ipv6Addr>()
        .map_err(|e| AttrError::malformed(s, e.to_string()))
}

/// The sysfs form of a GID: eight zero-padded groups.
pub fn gid_sysfs_form(gid: &Ipv6Addr) -> String {
    gid.segments()
        .iter()
        .map(|s| format!("{s:04x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// One used entry of a port's GID table (all-zero entries are unused and left out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GidEntry {
    pub index: u32,
    pub gid: Ipv6Addr,
    /// Absent on InfiniBand ports of old kernels; `IB/RoCE v1` on InfiniBand.
    pub gid_type: Field<GidType>,
    /// The netdev a RoCE GID belongs to; reading fails with EINVAL on InfiniBand.
    pub ndev: Field<String>,
}

/// One non-zero entry of a port's P_Key table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PkeyEntry {
    pub index: u32,
    pub pkey: u16,
}

impl PkeyEntry {
    /// Parses `pkeys/<i>` ("0x%04x").
    pub fn parse_value(raw: &str) -> Field<u16> {
        let v = super::attr::parse_hex_u32(raw)?;
        u16::try_from(v).map_err(|_| AttrError::malformed(trim_attr(raw), "P_Key above 0xffff"))
    }

    /// Full membership is the high bit; limited members cannot talk to each other.
    pub fn full_member(self) -> bool {
        self.pkey & 0x8000 != 0
    }
}

/// What `ibv_query_port` tells of a port that sysfs does not, or only by listing a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortAttrs {
    /// `enum ibv_mtu` turned into bytes.
    pub active_mtu: Field<u32>,
    pub max_mtu: Field<u32>,
    pub gid_table_len: u32,
    pub pkey_table_len: u32,
}

impl PortAttrs {
    /// The bytes of an `enum ibv_mtu` (`IBV_MTU_256` is 1 ... `IBV_MTU_4096` is 5).
    pub fn mtu_bytes(code: u32) -> Field<u32> {
        match code {
            1..=5 => Ok(128 << code),
            other => Err(AttrError::malformed(
                &other.to_string(),
                "expected an enum ibv_mtu of 1 to 5",
            )),
        }
    }

    /// The `enum ibv_mtu` of a byte count (256, 512, 1024, 2048, 4096).
    pub fn mtu_code(bytes: u32) -> Option<u32> {
        (1..=5).find(|c| 128u32 << c == bytes)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortSnapshot {
    pub number: u32,
    pub state: Field<PortState>,
    pub phys_state: Field<PhysState>,
    pub lid: Field<u32>,
    pub sm_lid: Field<u32>,
    pub lmc: Field<u8>,
    pub sm_sl: Field<u8>,
    pub cap_mask: Field<u32>,
    pub link_layer: Field<LinkLayer>,
    pub rate: Field<Rate>,
    pub gids: Vec<GidEntry>,
    pub pkeys: Vec<PkeyEntry>,
    /// The IB MTU in use and the largest the port supports, in bytes (256 to 4096). Only
    /// `ibv_query_port` tells them: sysfs has no file for either.
    pub active_mtu: Field<u32>,
    pub max_mtu: Field<u32>,
    /// The lengths of the GID and P_Key tables (used entries or not).
    pub gid_table_len: Field<u32>,
    pub pkey_table_len: Field<u32>,
}

impl PortSnapshot {
    /// Port `number` with nothing read: every attribute missing, no GID or P_Key. Tests build
    /// the ports they need from it (`PortSnapshot { lid: Ok(3), ..PortSnapshot::unread(1) }`),
    /// so that a field added to the snapshot is added here only.
    pub fn unread(number: u32) -> Self {
        PortSnapshot {
            number,
            state: Err(AttrError::Missing),
            phys_state: Err(AttrError::Missing),
            lid: Err(AttrError::Missing),
            sm_lid: Err(AttrError::Missing),
            lmc: Err(AttrError::Missing),
            sm_sl: Err(AttrError::Missing),
            cap_mask: Err(AttrError::Missing),
            link_layer: Err(AttrError::Missing),
            rate: Err(AttrError::Missing),
            gids: Vec::new(),
            pkeys: Vec::new(),
            active_mtu: Err(AttrError::Missing),
            max_mtu: Err(AttrError::Missing),
            gid_table_len: Err(AttrError::Missing),
            pkey_table_len: Err(AttrError::Missing),
        }
    }

    /// The port GUID is the low 64 bits of GID 0 (what ibstat prints as Port GUID).
    pub fn port_guid(&self) -> Option<Guid> {
        self.gids.iter().find(|g| g.index == 0).map(|g| {
            let o = g.gid.octets();
            let mut low = [0u8; 8];
            low.copy_from_slice(&o[8..]);
            Guid::from_be_bytes(low)
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceSnapshot {
    pub name: String,
    pub kind: DeviceKind,
    pub node_type: Field<NodeType>,
    pub node_guid: Field<Guid>,
    pub sys_image_guid: Field<Guid>,
    pub fw_ver: Field<String>,
    pub node_desc: Field<String>,
    pub hca_type: Field<String>,
    pub hw_rev: Field<String>,
    pub board_id: Field<String>,
    /// The netdev a soft device (rxe, siw) runs over (`parent` file).
    pub parent_netdev: Option<String>,
    /// PCI address (or auxiliary device name) behind the `device` link.
    pub pci_address: Option<String>,
    /// Netdevs of the same PCI function (IPoIB or Ethernet), sorted.
    pub netdevs: Vec<String>,
    pub ports: Vec<PortSnapshot>,
}

impl DeviceSnapshot {
    pub fn port(&self, number: u32) -> Option<&PortSnapshot> {
        self.ports.iter().find(|p| p.number == number)
    }

    /// Gives back the room its lists grew into while they were read. A snapshot is kept
    /// for as long as its device is unchanged, and a vector that grew by pushes holds room
    /// for four elements where one device has one port with one or two GIDs.
    pub fn shrink_to_fit(&mut self) {
        self.netdevs.shrink_to_fit();
        self.ports.shrink_to_fit();
        for p in &mut self.ports {
            p.gids.shrink_to_fit();
            p.pkeys.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `enum ibv_mtu` as ibv_devinfo prints it: `1024 (3)`, `4096 (5)`.
    #[test]
    fn ibv_mtu_codes_are_bytes() {
        assert_eq!(PortAttrs::mtu_bytes(1), Ok(256));
        assert_eq!(PortAttrs::mtu_bytes(3), Ok(1024));
        assert_eq!(PortAttrs::mtu_bytes(5), Ok(4096));
        for bad in [0, 6, u32::MAX] {
            assert!(matches!(
                PortAttrs::mtu_bytes(bad),
                Err(AttrError::Malformed(_))
            ));
        }
        assert_eq!(PortAttrs::mtu_code(2048), Some(4));
        assert_eq!(PortAttrs::mtu_code(1500), None);
    }

    #[test]
    fn node_types() {
        assert_eq!(NodeType::parse_sysfs("1: CA\n"), Ok(NodeType::Ca));
        assert_eq!(NodeType::parse_sysfs("4: RNIC"), Ok(NodeType::Rnic));
        assert_eq!(
            NodeType::parse_sysfs("6: usNIC UDP"),
            Ok(NodeType::UsnicUdp)
        );
        assert!(NodeType::parse_sysfs("0: nothing").is_err());
        assert!(NodeType::parse_sysfs("CA").is_err());
        assert_eq!(NodeType::Ca.number(), 1);
    }

    #[test]
    fn gids() {
        let g = parse_gid("fe80:0000:0000:0000:04f6:b9ff:fe05:ca57\n").unwrap();
        assert_eq!(
            gid_sysfs_form(&g),
            "fe80:0000:0000:0000:04f6:b9ff:fe05:ca57"
        );
        let v4 = parse_gid("0000:0000:0000:0000:0000:ffff:c0a8:4d01").unwrap();
        assert_eq!(
            v4.to_ipv4_mapped().map(|a| a.to_string()).as_deref(),
            Some("192.168.77.1")
        );
        assert!(parse_gid("fe80::zz").is_err());
        assert!(parse_gid("").is_err());
        assert_eq!(GidType::parse_sysfs("RoCE v2\n"), Ok(GidType::RoceV2));
        assert_eq!(GidType::parse_sysfs("IB/RoCE v1\n"), Ok(GidType::IbRoceV1));
        assert!(GidType::parse_sysfs("RoCE v3").is_err());
    }

    #[test]
    fn pkeys() {
        assert_eq!(PkeyEntry::parse_value("0xffff\n"), Ok(0xffff));
        assert_eq!(PkeyEntry::parse_value("0x7fff"), Ok(0x7fff));
        assert!(PkeyEntry::parse_value("0x10000").is_err());
        assert!(PkeyEntry::parse_value("ffff").is_err());
        assert!(PkeyEntry {
            index: 0,
            pkey: 0xffff
        }
        .full_member());
        assert!(!PkeyEntry {
            index: 1,
            pkey: 0x7fff
        }
        .full_member());
    }
}
