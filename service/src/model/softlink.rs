//! Soft RDMA links (Soft-RoCE `rxe`, Soft-iWARP `siw`) and the meaning of the kernel's
//! refusals of `RDMA_NLDEV_CMD_NEWLINK`.

use serde::{Deserialize, Serialize};

use super::Errno;
use rdma_manager_dbus::text::quote_capped;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SoftLinkType {
    Rxe,
    Siw,
}

impl SoftLinkType {
    pub fn parse(s: &str) -> Option<SoftLinkType> {
        match s {
            "rxe" => Some(SoftLinkType::Rxe),
            "siw" => Some(SoftLinkType::Siw),
            _ => None,
        }
    }

    /// RDMA_NLDEV_ATTR_LINK_TYPE value.
    pub fn as_str(self) -> &'static str {
        match self {
            SoftLinkType::Rxe => "rxe",
            SoftLinkType::Siw => "siw",
        }
    }

    /// The module the kernel autoloads (as `rdma-link-<type>`) to provide the link type.
    pub fn module(self) -> &'static str {
        match self {
            SoftLinkType::Rxe => "rdma_rxe",
            SoftLinkType::Siw => "siw",
        }
    }
}

/// A refused soft link, told apart from the kernel's errno and what the host looked like.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum SoftLinkError {
    #[error("an RDMA device named {q0} already exists; choose another name", q0 = quote_capped(.0))]
    NameTaken(String),
    #[error("network interface {netdev_q} already carries a soft RDMA device ({existing}); remove it first", netdev_q = quote_capped(.netdev))]
    NetdevHasLink { netdev: String, existing: String },
    #[error("there is no network interface named {q0}", q0 = quote_capped(.0))]
    UnknownNetdev(String),
    #[error("{q0} is a VLAN interface; Soft-RoCE runs over the underlying interface and uses its VLANs through GIDs", q0 = quote_capped(.0))]
    VlanNetdev(String),
    #[error("link type {kind} is not available on this kernel: module {module} is missing (CONFIG_{config} is not set)")]
    TypeUnavailable {
        kind: &'static str,
        module: &'static str,
        config: &'static str,
    },
    #[error("the kernel refused the link: {0}")]
    Kernel(Errno),
}

/// What the host looked like when NEWLINK failed, to explain an errno that has several causes.
pub struct NewLinkContext<'a> {
    pub name: &'a str,
    pub kind: SoftLinkType,
    pub netdev: &'a str,
    /// RDMA device names present.
    pub devices: &'a [String],
    /// The soft device already over `netdev`, if any.
    pub existing_on_netdev: Option<String>,
    pub netdev_exists: bool,
    pub netdev_is_vlan: bool,
    /// Whether the link type's module is loaded (`/sys/module/<module>`) after the attempt.
    pub type_loaded: bool,
}

/// Turns NEWLINK's errno into the cause a person can act on.
pub fn classify_newlink_error(errno: Errno, ctx: &NewLinkContext<'_>) -> SoftLinkError {
    match errno {
        // ib_register_device's assign_name answers ENFILE for a name already in use.
        Errno::ENFILE => SoftLinkError::NameTaken(ctx.name.to_string()),
        // rxe_newlink checks the netdev first: EEXIST when it already carries a device.
        Errno::EEXIST
            if ctx.existing_on_netdev.is_none() && ctx.devices.iter().any(|d| d == ctx.name) =>
        {
            SoftLinkError::NameTaken(ctx.name.to_string())
        }
        Errno::EEXIST => SoftLinkError::NetdevHasLink {
            netdev: ctx.netdev.to_string(),
            existing: ctx
                .existing_on_netdev
                .clone()
                .unwrap_or_else(|| "unknown".to_string()),
        },
        Errno::ENODEV if !ctx.netdev_exists => SoftLinkError::UnknownNetdev(ctx.netdev.to_string()),
        Errno::EPERM if ctx.netdev_is_vlan => SoftLinkError::VlanNetdev(ctx.netdev.to_string()),
        // The kernel answers EINVAL when no module provides the link type.
        Errno::EINVAL | Errno::EOPNOTSUPP if !ctx.type_loaded => SoftLinkError::TypeUnavailable {
            kind: ctx.kind.as_str(),
            module: ctx.kind.module(),
            config: match ctx.kind {
                SoftLinkType::Rxe => "RDMA_RXE",
                SoftLinkType::Siw => "RDMA_SIW",
            },
        },
        other => SoftLinkError::Kernel(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx<'a>(devices: &'a [String], existing: Option<&str>) -> NewLinkContext<'a> {
        NewLinkContext {
            name: "rxe0",
            kind: SoftLinkType::Rxe,
            netdev: "veth0",
            devices,
            existing_on_netdev: existing.map(str::to_string),
            netdev_exists: true,
            netdev_is_vlan: false,
            type_loaded: true,
        }
    }

    #[test]
    fn eexist_is_told_apart() {
        let devs = vec!["rxe0".to_string()];
        assert_eq!(
            classify_newlink_error(Errno::ENFILE, &ctx(&devs, None)),
            SoftLinkError::NameTaken("rxe0".into())
        );
        assert_eq!(
            classify_newlink_error(Errno::EEXIST, &ctx(&devs, Some("rxe0"))),
            SoftLinkError::NetdevHasLink {
                netdev: "veth0".into(),
                existing: "rxe0".into()
            }
        );
        let devs = vec!["rxe9".to_string()];
        assert_eq!(
            classify_newlink_error(Errno::EEXIST, &ctx(&devs, Some("rxe9"))),
            SoftLinkError::NetdevHasLink {
                netdev: "veth0".into(),
                existing: "rxe9".into()
            }
        );
    }

    #[test]
    fn other_causes() {
        let mut c = ctx(&[], None);
        c.netdev_exists = false;
        assert_eq!(
            classify_newlink_error(Errno::ENODEV, &c),
            SoftLinkError::UnknownNetdev("veth0".into())
        );
        let mut c = ctx(&[], None);
        c.netdev_is_vlan = true;
        assert_eq!(
            classify_newlink_error(Errno::EPERM, &c),
            SoftLinkError::VlanNetdev("veth0".into())
        );
        let mut c = ctx(&[], None);
        c.kind = SoftLinkType::Siw;
        c.type_loaded = false;
        let e = classify_newlink_error(Errno::EINVAL, &c);
        assert!(e.to_string().contains("module siw is missing"), "{e}");
        let c = ctx(&[], None);
        assert_eq!(
            classify_newlink_error(Errno::EINVAL, &c),
            SoftLinkError::Kernel(Errno::EINVAL)
        );
    }
}
