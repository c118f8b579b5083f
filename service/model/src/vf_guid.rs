//! What a user may ask of an SR-IOV InfiniBand VF's GUIDs, checked before the kernel sees
//! them: the GUID forms admins type, the values that break RDMA, the VF index the PF has, and
//! GUIDs that already name something on the host.
//!
//! A VF's node and port GUID are what `ip link set <pf> vf N node_guid G port_guid G` sets
//! (IFLA_VF_IB_NODE_GUID, IFLA_VF_IB_PORT_GUID). A zero GUID makes the VF unusable for RDMA
//! (the subnet manager cannot tell it apart), all-ones is no GUID at all, and two functions
//! with one GUID confuse the subnet manager's routing and every tool that names a port by
//! it. Node and port GUID of one VF may be equal: one-port VFs are commonly given one GUID
//! for both.

use serde::Serialize;

use rdma_manager_dbus::text::quote_capped;

/// Which of a VF's two GUIDs a value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum GuidKind {
    Node,
    Port,
}

impl GuidKind {
    pub fn as_str(self) -> &'static str {
        match self {
            GuidKind::Node => "node GUID",
            GuidKind::Port => "port GUID",
        }
    }
}

/// Why a VF GUID request is refused; nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum VfGuidError {
    #[error("{q0} is not a {k}; write it as 00:11:22:33:44:55:66:77 (as ip link takes it), 0011:2233:4455:6677 (as sysfs prints it) or 0x0011223344556677", q0 = quote_capped(.input), k = .kind.as_str())]
    Format { kind: GuidKind, input: String },
    #[error("the {k} must not be zero: a VF with a zero GUID cannot be used for RDMA", k = .0.as_str())]
    Zero(GuidKind),
    #[error("the {k} must not be ff:ff:ff:ff:ff:ff:ff:ff, which is no GUID", k = .0.as_str())]
    AllOnes(GuidKind),
    #[error("{device} has no SR-IOV virtual functions (sriov_numvfs is 0 or the device is not a PCI physical function)")]
    NotSriov { device: String },
    #[error("{device} has {numvfs} virtual functions (0 to {last}); there is no VF {vf}", last = .numvfs.saturating_sub(1))]
    NoSuchVf {
        device: String,
        vf: u32,
        numvfs: u32,
    },
    #[error("the {k} {guid} is already {owner}", k = .kind.as_str())]
    Duplicate {
        kind: GuidKind,
        guid: String,
        owner: String,
    },
}

/// Parses a GUID in the forms admins use: `00:11:22:33:44:55:66:77` (ip link),
/// `0011:2233:4455:6677` (sysfs) or `0x0011223344556677` (ibstat); hex digits in either case.
pub fn parse_guid(kind: GuidKind, input: &str) -> Result<u64, VfGuidError> {
    let bad = || VfGuidError::Format {
        kind,
        input: input.to_string(),
    };
    let s = input.trim();
    let groups = |n: usize, width: usize| -> Option<u64> {
        let parts: Vec<&str> = s.split(':').collect();
        if parts.len() != n || parts.iter().any(|g| g.len() != width) {
            return None;
        }
        parts.iter().try_fold(0u64, |acc, g| {
            if !g.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            Some((acc << (4 * width)) | u64::from_str_radix(g, 16).ok()?)
        })
    };
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        if hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return u64::from_str_radix(hex, 16).map_err(|_| bad());
        }
        return Err(bad());
    }
    groups(8, 2).or_else(|| groups(4, 4)).ok_or_else(bad)
}

/// The form `ip link` prints and takes: `00:11:22:33:44:55:66:77`.
pub fn ip_form(guid: u64) -> String {
    guid.to_be_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Refuses the values that are no usable GUID.
pub fn check_value(kind: GuidKind, guid: u64) -> Result<(), VfGuidError> {
    match guid {
        0 => Err(VfGuidError::Zero(kind)),
        u64::MAX => Err(VfGuidError::AllOnes(kind)),
        _ => Ok(()),
    }
}

/// Parses and checks one GUID of a request.
pub fn parse_vf_guid(kind: GuidKind, input: &str) -> Result<u64, VfGuidError> {
    let guid = parse_guid(kind, input)?;
    check_value(kind, guid)?;
    Ok(guid)
}

/// A GUID already in use on the host, and what it names (for the message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenGuid {
    pub guid: u64,
    /// e.g. "the node GUID of mlx5_0", "remembered for VF 2 of mlx5_1".
    pub owner: String,
}

/// What a request is checked against: the PF's VF count and every GUID the host's other
/// functions and VFs hold or are remembered with (the VF's own current ones left out).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VfGuidContext {
    pub device: String,
    pub numvfs: u32,
    pub taken: Vec<TakenGuid>,
}

/// Checks a parsed request against the host: the VF exists, and neither GUID is taken.
pub fn check_request(
    ctx: &VfGuidContext,
    vf: u32,
    node_guid: u64,
    port_guid: u64,
) -> Result<(), VfGuidError> {
    if ctx.numvfs == 0 {
        return Err(VfGuidError::NotSriov {
            device: ctx.device.clone(),
        });
    }
    if vf >= ctx.numvfs {
        return Err(VfGuidError::NoSuchVf {
            device: ctx.device.clone(),
            vf,
            numvfs: ctx.numvfs,
        });
    }
    check_value(GuidKind::Node, node_guid)?;
    check_value(GuidKind::Port, port_guid)?;
    for (kind, guid) in [(GuidKind::Node, node_guid), (GuidKind::Port, port_guid)] {
        if let Some(t) = ctx.taken.iter().find(|t| t.guid == guid) {
            return Err(VfGuidError::Duplicate {
                kind,
                guid: ip_form(guid),
                owner: t.owner.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_forms_admins_use() {
        let want = 0x0011_2233_4455_6677;
        for s in [
            "00:11:22:33:44:55:66:77",
            "0011:2233:4455:6677",
            "0x0011223344556677",
            "00:11:22:33:44:55:66:77\n",
            "00:11:22:33:44:55:66:77".to_uppercase().as_str(),
        ] {
            assert_eq!(parse_guid(GuidKind::Node, s), Ok(want), "{s}");
        }
        assert_eq!(ip_form(want), "00:11:22:33:44:55:66:77");
    }

    #[test]
    fn refuses_malformed_zero_and_all_ones() {
        for s in [
            "",
            "00:11:22",
            "0011:2233:4455:66777",
            "0x12",
            "zz:11:22:33:44:55:66:77",
        ] {
            assert!(
                matches!(
                    parse_vf_guid(GuidKind::Port, s),
                    Err(VfGuidError::Format {
                        kind: GuidKind::Port,
                        ..
                    })
                ),
                "{s}"
            );
        }
        assert_eq!(
            parse_vf_guid(GuidKind::Node, "00:00:00:00:00:00:00:00"),
            Err(VfGuidError::Zero(GuidKind::Node))
        );
        assert_eq!(
            parse_vf_guid(GuidKind::Port, "ffff:ffff:ffff:ffff"),
            Err(VfGuidError::AllOnes(GuidKind::Port))
        );
    }

    fn ctx() -> VfGuidContext {
        VfGuidContext {
            device: "mlx5_1".into(),
            numvfs: 2,
            taken: vec![TakenGuid {
                guid: 0xb859_9f03_00d4_e62a,
                owner: "the node GUID of mlx5_1".into(),
            }],
        }
    }

    #[test]
    fn checks_the_vf_index_and_duplicates() {
        assert_eq!(check_request(&ctx(), 1, 1, 1), Ok(()));
        assert!(matches!(
            check_request(&ctx(), 2, 1, 2),
            Err(VfGuidError::NoSuchVf {
                vf: 2,
                numvfs: 2,
                ..
            })
        ));
        let none = VfGuidContext { numvfs: 0, ..ctx() };
        assert!(matches!(
            check_request(&none, 0, 1, 2),
            Err(VfGuidError::NotSriov { .. })
        ));
        let dup = check_request(&ctx(), 0, 7, 0xb859_9f03_00d4_e62a).unwrap_err();
        assert_eq!(
            dup.to_string(),
            "the port GUID b8:59:9f:03:00:d4:e6:2a is already the node GUID of mlx5_1"
        );
        assert_eq!(
            check_request(&ctx(), 0, 0, 2),
            Err(VfGuidError::Zero(GuidKind::Node))
        );
    }
}
