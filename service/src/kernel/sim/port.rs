//! A simulated port: what it holds, the kinds of ports the simulated hosts are made of (an
//! InfiniBand HCA's, a RoCE HCA's, rxe's), and the text of its plain sysfs attributes. A value
//! the daemon reads from a port's sysfs file is added here once: the field, its value in each
//! kind, and its file in [`SimPort::attribute_files`].

use std::net::Ipv6Addr;

use crate::model::{GidType, Guid, LinkLayer, PhysState, PortState};

fn gid(prefix: u64, guid: u64) -> Ipv6Addr {
    Ipv6Addr::from((u128::from(prefix) << 64) | u128::from(guid))
}

fn v4_mapped(a: [u8; 4]) -> Ipv6Addr {
    std::net::Ipv4Addr::from(a).to_ipv6_mapped()
}

/// The link-local GID prefix.
pub const LINK_LOCAL: u64 = 0xfe80_0000_0000_0000;

/// PMA PortCounters of a simulated port.
#[derive(Debug, Clone, PartialEq)]
pub struct SimPma {
    /// Extended-width (64-bit) counters.
    pub extended: bool,
    /// 4-octet words.
    pub xmit_data: u64,
    pub rcv_data: u64,
    pub xmit_packets: u64,
    pub rcv_packets: u64,
    /// Error counters (symbol_error, link_downed, ...): names the fixtures give are static
    /// text, not a copy per port (4096 of them on the 256x2 host).
    pub errors: Vec<(std::borrow::Cow<'static, str>, u64)>,
}

impl SimPma {
    /// Extended (64-bit) counters, all zero, with the error counters `errors` names.
    fn zeroed(errors: &[&'static str]) -> Self {
        SimPma {
            extended: true,
            xmit_data: 0,
            rcv_data: 0,
            xmit_packets: 0,
            rcv_packets: 0,
            errors: errors.iter().map(|&e| (e.into(), 0)).collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SimGid {
    pub index: u32,
    pub gid: Ipv6Addr,
    pub gid_type: GidType,
    pub ndev: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SimPort {
    pub number: u32,
    pub state: PortState,
    pub phys_state: PhysState,
    pub lid: u32,
    pub sm_lid: u32,
    pub lmc: u8,
    pub sm_sl: u8,
    pub cap_mask: u32,
    pub link_layer: LinkLayer,
    /// The exact `rate` text.
    pub rate: String,
    pub gids: Vec<SimGid>,
    /// Size of the GID table, as `ibv_query_port` tells it (unused entries render as
    /// all-zero files).
    pub gid_table_len: u32,
    /// How many of the table's entries the tree renders when not all: rxe's 1024 entries a
    /// port would make a generated host of 256 devices a quarter of a million files, whose
    /// unused tail the daemon never reads (its GIDs come through verbs).
    pub rendered_gid_entries: Option<u32>,
    /// `ibv_query_port`'s largest and active IB MTU, in bytes.
    pub max_mtu: u32,
    pub active_mtu: u32,
    /// The full P_Key table; zero entries render as 0x0000.
    pub pkeys: Vec<u16>,
    pub pma: Option<SimPma>,
    pub hw_counters: Vec<(String, u64)>,
    /// GID types the port supports (what `default_roce_mode` accepts).
    pub roce_types: Vec<GidType>,
}

impl SimPort {
    /// The port's one-value files under `ports/<n>/`, as the kernel writes them
    /// (`ib_port_attr` in drivers/infiniband/core/sysfs.c).
    pub fn attribute_files(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "state",
                format!("{}: {}", self.state.number(), self.state.sysfs_name()),
            ),
            (
                "phys_state",
                format!(
                    "{}: {}",
                    self.phys_state.number(),
                    self.phys_state.sysfs_name()
                ),
            ),
            ("lid", format!("0x{:x}", self.lid)),
            ("sm_lid", format!("0x{:x}", self.sm_lid)),
            ("lid_mask_count", self.lmc.to_string()),
            ("sm_sl", self.sm_sl.to_string()),
            ("cap_mask", format!("0x{:08x}", self.cap_mask)),
            ("link_layer", self.link_layer.as_str().to_string()),
            ("rate", self.rate.clone()),
        ]
    }
}

/// An InfiniBand HCA's port, active, with its GID 0 and the default P_Key.
pub fn ib_port(
    number: u32,
    port_guid: u64,
    rate: &str,
    lid: u32,
    sm_lid: u32,
    lmc: u8,
    cap_mask: u32,
) -> SimPort {
    SimPort {
        number,
        state: PortState::Active,
        phys_state: PhysState::LinkUp,
        lid,
        sm_lid,
        lmc,
        sm_sl: 0,
        cap_mask,
        link_layer: LinkLayer::InfiniBand,
        rate: rate.into(),
        gids: vec![SimGid {
            index: 0,
            gid: gid(LINK_LOCAL, port_guid),
            gid_type: GidType::IbRoceV1,
            ndev: None,
        }],
        gid_table_len: 8,
        rendered_gid_entries: None,
        pkeys: vec![0xffff, 0, 0, 0, 0, 0, 0, 0],
        // An InfiniBand HCA's port after the SM's PortInfo: the subnet's MTU, 4096 where
        // nothing limits it (a host whose IPoIB runs at 2048 sets its own).
        max_mtu: 4096,
        active_mtu: 4096,
        pma: Some(SimPma::zeroed(&[
            "symbol_error",
            "link_error_recovery",
            "link_downed",
            "port_rcv_errors",
            "port_xmit_discards",
            "excessive_buffer_overrun_errors",
            "local_link_integrity_errors",
            "VL15_dropped",
        ])),
        hw_counters: vec![],
        roce_types: vec![GidType::IbRoceV1],
    }
}

/// A RoCE port over `ndev` with v1 and v2 GIDs for its link-local and IPv4 addresses.
pub fn roce_port(
    number: u32,
    mac: [u8; 6],
    ndev: &str,
    rate: &str,
    ipv4: Option<[u8; 4]>,
) -> SimPort {
    let ll = gid(LINK_LOCAL, Guid::from_mac_eui64(mac).0);
    let mut gids = vec![
        SimGid {
            index: 0,
            gid: ll,
            gid_type: GidType::IbRoceV1,
            ndev: Some(ndev.into()),
        },
        SimGid {
            index: 1,
            gid: ll,
            gid_type: GidType::RoceV2,
            ndev: Some(ndev.into()),
        },
    ];
    if let Some(a) = ipv4 {
        gids.push(SimGid {
            index: 2,
            gid: v4_mapped(a),
            gid_type: GidType::IbRoceV1,
            ndev: Some(ndev.into()),
        });
        gids.push(SimGid {
            index: 3,
            gid: v4_mapped(a),
            gid_type: GidType::RoceV2,
            ndev: Some(ndev.into()),
        });
    }
    SimPort {
        number,
        state: PortState::Active,
        phys_state: PhysState::LinkUp,
        lid: 0,
        sm_lid: 0,
        lmc: 0,
        sm_sl: 0,
        cap_mask: 0x0401_0000,
        link_layer: LinkLayer::Ethernet,
        rate: rate.into(),
        gids,
        gid_table_len: 8,
        rendered_gid_entries: None,
        pkeys: vec![0xffff],
        // mlx5_query_port_roce: iboe_get_mtu of the netdev's 1500 bytes.
        max_mtu: 4096,
        active_mtu: 1024,
        pma: Some(SimPma::zeroed(&["port_rcv_errors", "port_xmit_discards"])),
        hw_counters: vec![
            ("out_of_buffer".into(), 0),
            ("out_of_sequence".into(), 0),
            ("rx_write_requests".into(), 0),
            ("rx_read_requests".into(), 0),
            ("np_cnp_sent".into(), 0),
            ("rp_cnp_handled".into(), 0),
        ],
        roce_types: vec![GidType::IbRoceV1, GidType::RoceV2],
    }
}

/// What rxe's port follows of its netdev ([`super::model::SimNetdev::for_rxe`]).
pub struct RxeNetdev<'a> {
    pub name: &'a str,
    pub mac: Option<[u8; 6]>,
    pub up: bool,
    pub carrier: bool,
    pub mtu: u32,
}

/// rxe's port as `rxe_query_port` reports it for its netdev.
pub fn rxe_port(nd: &RxeNetdev<'_>) -> SimPort {
    let (state, phys_state) = rxe_port_state(nd.up, nd.carrier);
    let gids = nd
        .mac
        .map(|mac| {
            vec![SimGid {
                index: 0,
                gid: default_gid(mac),
                gid_type: GidType::RoceV2,
                ndev: Some(nd.name.to_string()),
            }]
        })
        .unwrap_or_default();
    SimPort {
        number: 1,
        state,
        phys_state,
        lid: 0,
        sm_lid: 0,
        lmc: 0,
        sm_sl: 0,
        cap_mask: 0x0001_0000,
        link_layer: LinkLayer::Ethernet,
        // ib_get_eth_speed maps a 10 Gb/s netdev (veth) to 1X FDR10.
        rate: "10 Gb/sec (1X FDR10)".into(),
        gids,
        // RXE_PORT_GID_TBL_LEN, RXE_PORT_PKEY_TBL_LEN.
        gid_table_len: 1024,
        rendered_gid_entries: Some(16),
        pkeys: vec![0xffff],
        max_mtu: 4096,
        active_mtu: rxe_active_mtu(nd.mtu),
        pma: None,
        hw_counters: RXE_COUNTERS.iter().map(|c| (c.to_string(), 0)).collect(),
        roce_types: vec![GidType::RoceV2],
    }
}

/// rxe's hw_counters, in the driver's order (rxe_hw_counters.c).
pub const RXE_COUNTERS: [&str; 15] = [
    "sent_pkts",
    "rcvd_pkts",
    "duplicate_request",
    "out_of_seq_request",
    "rcvd_rnr_err",
    "send_rnr_err",
    "rcvd_seq_err",
    "ack_deferred",
    "retry_exceeded_err",
    "retry_rnr_exceeded_err",
    "completer_retry_err",
    "send_err",
    "link_downed",
    "rdma_sends",
    "rdma_recvs",
];

/// `rxe_set_mtu`: the netdev's MTU less RXE_MAX_HDR_LENGTH (80), rounded down to an IB
/// MTU, at least 256 and at most 4096.
pub fn rxe_active_mtu(netdev_mtu: u32) -> u32 {
    let room = netdev_mtu.saturating_sub(80);
    [4096, 2048, 1024, 512]
        .into_iter()
        .find(|&m| room >= m)
        .unwrap_or(256)
}

pub fn rxe_port_state(up: bool, carrier: bool) -> (PortState, PhysState) {
    if up && carrier {
        (PortState::Active, PhysState::LinkUp)
    } else if up {
        (PortState::Down, PhysState::Polling)
    } else {
        (PortState::Down, PhysState::Disabled)
    }
}

/// The RoCE default GID of a netdev: fe80::/64 with the EUI-64 of its MAC.
pub fn default_gid(mac: [u8; 6]) -> std::net::Ipv6Addr {
    let guid = Guid::from_mac_eui64(mac).to_be_bytes();
    let mut o = [0u8; 16];
    o[0] = 0xfe;
    o[1] = 0x80;
    o[8..].copy_from_slice(&guid);
    std::net::Ipv6Addr::from(o)
}
