//! The default RoCE mode of a port, as rdma_cm's configfs spells it, and what a port
//! supports according to its GID table.

use serde::Serialize;

use super::attr::{trim_attr, AttrError, Field};
use super::{GidType, LinkLayer, NodeType, PortSnapshot};
use rdma_manager_dbus::text::quote_capped;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum RoceMode {
    V1,
    V2,
}

impl RoceMode {
    /// The exact text `default_roce_mode` reads and accepts.
    pub fn configfs_str(self) -> &'static str {
        match self {
            RoceMode::V1 => "IB/RoCE v1",
            RoceMode::V2 => "RoCE v2",
        }
    }

    pub fn parse_configfs(raw: &str) -> Field<RoceMode> {
        match trim_attr(raw) {
            "IB/RoCE v1" => Ok(RoceMode::V1),
            "RoCE v2" => Ok(RoceMode::V2),
            other => Err(AttrError::malformed(
                other,
                "expected \"IB/RoCE v1\" or \"RoCE v2\"",
            )),
        }
    }

    /// The short name the bus and `roce.toml` use: `v1` or `v2`.
    pub fn short(self) -> &'static str {
        match self {
            RoceMode::V1 => "v1",
            RoceMode::V2 => "v2",
        }
    }

    /// "RoCE v1" / "RoCE v2", for sentences.
    pub fn label(self) -> &'static str {
        match self {
            RoceMode::V1 => "RoCE v1",
            RoceMode::V2 => "RoCE v2",
        }
    }

    /// A mode as a user writes it: `v1`/`v2`, `1`/`2`, or the configfs spellings
    /// `IB/RoCE v1`/`RoCE v2` (case and surrounding blanks do not matter).
    pub fn parse_request(raw: &str) -> Result<RoceMode, String> {
        let s = raw.trim().to_ascii_lowercase();
        match s.as_str() {
            "v1" | "1" | "ib/roce v1" | "roce v1" | "rocev1" => Ok(RoceMode::V1),
            "v2" | "2" | "roce v2" | "rocev2" => Ok(RoceMode::V2),
            "" => Err("no RoCE mode given; use \"v1\" or \"v2\"".into()),
            _ => Err(format!(
                "RoCE mode {raw_q} is not known; use \"v1\" or \"v2\" (or \"IB/RoCE v1\", \"RoCE v2\")"
            , raw_q = quote_capped(raw))),
        }
    }

    /// The mode a GID type stands for on a RoCE port.
    pub fn of_gid_type(t: GidType) -> RoceMode {
        match t {
            GidType::IbRoceV1 => RoceMode::V1,
            GidType::RoceV2 => RoceMode::V2,
        }
    }

    /// The GID type a port must list in `gid_attrs/types` for this mode to be accepted.
    pub fn gid_type(self) -> GidType {
        match self {
            RoceMode::V1 => GidType::IbRoceV1,
            RoceMode::V2 => GidType::RoceV2,
        }
    }
}

/// Whether rdma_cm's RoCE defaults mean anything for this port: Ethernet link layer on a
/// device that is not iWARP (an RNIC's port is Ethernet too, but it has no RoCE).
pub fn is_roce_port(node_type: &Field<NodeType>, port: &PortSnapshot) -> bool {
    port.link_layer == Ok(LinkLayer::Ethernet) && *node_type != Ok(NodeType::Rnic)
}

/// Why a port has no RoCE defaults, for a refusal; `None` for a RoCE port.
pub fn not_roce_reason(
    dev: &str,
    node_type: &Field<NodeType>,
    port: &PortSnapshot,
) -> Option<String> {
    if is_roce_port(node_type, port) {
        return None;
    }
    let n = port.number;
    Some(match (&port.link_layer, node_type) {
        (Ok(LinkLayer::Ethernet), _) => format!(
            "{dev} port {n} is an iWARP port; the RoCE mode and ToS apply only to RoCE ports"
        ),
        (Ok(LinkLayer::InfiniBand), _) => format!(
            "{dev} port {n} is an InfiniBand port; the RoCE mode and ToS apply only to RoCE (Ethernet link layer) ports"
        ),
        _ => format!(
            "{dev} port {n} does not report an Ethernet link layer; the RoCE mode and ToS apply only to RoCE ports"
        ),
    })
}

/// The modes a RoCE port supports, from the types of its GID table entries, in order.
pub fn supported_modes(port: &PortSnapshot) -> Vec<RoceMode> {
    let mut v: Vec<RoceMode> = port
        .gids
        .iter()
        .filter_map(|g| g.gid_type.as_ref().ok().copied())
        .map(RoceMode::of_gid_type)
        .collect();
    v.sort_by_key(|m| m.short());
    v.dedup();
    v
}

/// Refuses a mode the port's GID table lacks. An empty table (no types readable) decides
/// nothing: the kernel is asked and answers for itself.
pub fn check_supported(dev: &str, port: &PortSnapshot, mode: RoceMode) -> Result<(), String> {
    let modes = supported_modes(port);
    if modes.is_empty() || modes.contains(&mode) {
        return Ok(());
    }
    let have: Vec<&str> = modes.iter().map(|m| m.label()).collect();
    Err(format!(
        "{dev} port {} supports only {} (its GID table has no {} entries)",
        port.number,
        have.join(" and "),
        mode.gid_type().as_str()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{GidEntry, PortSnapshot};

    fn port(types: &[GidType], ll: LinkLayer) -> PortSnapshot {
        PortSnapshot {
            lid: Ok(0),
            sm_lid: Ok(0),
            lmc: Ok(0),
            sm_sl: Ok(0),
            cap_mask: Ok(0),
            link_layer: Ok(ll),
            gids: types
                .iter()
                .enumerate()
                .map(|(i, t)| GidEntry {
                    index: i as u32,
                    gid: std::net::Ipv6Addr::LOCALHOST,
                    gid_type: Ok(*t),
                    ndev: Ok("eth0".into()),
                })
                .collect(),
            gid_table_len: Ok(types.len() as u32),
            pkey_table_len: Ok(0),
            ..PortSnapshot::unread(1)
        }
    }

    #[test]
    fn request_spellings() {
        for (s, m) in [
            ("v1", RoceMode::V1),
            ("V2", RoceMode::V2),
            (" 2 ", RoceMode::V2),
            ("1", RoceMode::V1),
            ("IB/RoCE v1", RoceMode::V1),
            ("RoCE v2", RoceMode::V2),
            ("RoCE v2\n", RoceMode::V2),
        ] {
            assert_eq!(RoceMode::parse_request(s), Ok(m), "{s:?}");
        }
        for bad in [
            "",
            "  ",
            "v3",
            "0",
            "roce",
            "IB",
            "RoCE v2 v1",
            "\u{0}",
            "v2; rm",
        ] {
            let e = RoceMode::parse_request(bad).expect_err(bad);
            assert!(e.contains("v1") && e.contains("v2"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn supported_from_gid_types() {
        let rxe = port(&[GidType::RoceV2, GidType::RoceV2], LinkLayer::Ethernet);
        assert_eq!(supported_modes(&rxe), vec![RoceMode::V2]);
        let e = check_supported("rxe0", &rxe, RoceMode::V1).expect_err("v1 on rxe");
        assert_eq!(
            e,
            "rxe0 port 1 supports only RoCE v2 (its GID table has no IB/RoCE v1 entries)"
        );
        assert_eq!(check_supported("rxe0", &rxe, RoceMode::V2), Ok(()));
        let mlx5 = port(&[GidType::IbRoceV1, GidType::RoceV2], LinkLayer::Ethernet);
        assert_eq!(supported_modes(&mlx5), vec![RoceMode::V1, RoceMode::V2]);
        let empty = port(&[], LinkLayer::Ethernet);
        assert_eq!(check_supported("x", &empty, RoceMode::V1), Ok(()));
    }

    #[test]
    fn which_ports_are_roce() {
        let ib = port(&[GidType::IbRoceV1], LinkLayer::InfiniBand);
        let eth = port(&[GidType::RoceV2], LinkLayer::Ethernet);
        assert!(is_roce_port(&Ok(NodeType::Ca), &eth));
        assert!(!is_roce_port(&Ok(NodeType::Rnic), &eth));
        assert!(!is_roce_port(&Ok(NodeType::Ca), &ib));
        let why = not_roce_reason("mlx4_0", &Ok(NodeType::Ca), &ib).expect("refused");
        assert!(why.contains("InfiniBand port"), "{why}");
        let why = not_roce_reason("siw0", &Ok(NodeType::Rnic), &eth).expect("refused");
        assert!(why.contains("iWARP"), "{why}");
    }

    #[test]
    fn round_trip() {
        assert_eq!(RoceMode::parse_configfs("RoCE v2\n"), Ok(RoceMode::V2));
        assert_eq!(RoceMode::parse_configfs("IB/RoCE v1\n"), Ok(RoceMode::V1));
        assert!(RoceMode::parse_configfs("v2").is_err());
        assert!(RoceMode::parse_configfs("").is_err());
        assert_eq!(RoceMode::V1.configfs_str(), "IB/RoCE v1");
    }
}
