//! What a user may ask of IPoIB, checked before the kernel sees it: P_Keys of children, the
//! kernel's default child name, transport modes and the MTU each mode allows.
//!
//! The numbers are the kernel's (drivers/infiniband/ulp/ipoib): `ipoib_change_mtu` refuses a
//! datagram MTU below `ETH_MIN_MTU + IPOIB_ENCAP_LEN` or above the port's InfiniBand MTU minus
//! the 4-byte IPoIB header, and a connected MTU above `IPOIB_CM_MTU`; `ipoib_set_mode` refuses
//! connected mode when the hardware address lacks `IPOIB_FLAGS_RC`.

use serde::Serialize;

use crate::names::NETDEV_NAME_MAX;
use rdma_manager_dbus::text::quote_capped;

/// IPoIB transport mode (`mode` file, or IFLA_IPOIB_MODE 0/1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum IpoibMode {
    Datagram,
    Connected,
}

impl IpoibMode {
    pub fn as_str(self) -> &'static str {
        match self {
            IpoibMode::Datagram => "datagram",
            IpoibMode::Connected => "connected",
        }
    }

    /// The value written to the `mode` file: the kernel wants the trailing newline.
    pub fn sysfs_write_form(self) -> String {
        format!("{}\n", self.as_str())
    }

    /// IFLA_IPOIB_MODE value (IPOIB_MODE_DATAGRAM 0, IPOIB_MODE_CONNECTED 1).
    pub fn netlink_value(self) -> u16 {
        match self {
            IpoibMode::Datagram => 0,
            IpoibMode::Connected => 1,
        }
    }

    pub fn from_netlink(v: u16) -> Option<IpoibMode> {
        match v {
            0 => Some(IpoibMode::Datagram),
            1 => Some(IpoibMode::Connected),
            _ => None,
        }
    }
}

/// The full-membership bit of a P_Key. The kernel ORs it into every IPoIB P_Key.
pub const PKEY_FULL_MEMBER: u16 = 0x8000;
/// IPOIB_ENCAP_LEN: the IPoIB header in front of every datagram.
pub const IPOIB_ENCAP_LEN: u32 = 4;
/// ETH_MIN_MTU: the smallest MTU IPv4 works with.
pub const ETH_MIN_MTU: u32 = 68;
/// The smallest datagram-mode MTU `ipoib_change_mtu` accepts (ETH_MIN_MTU + IPOIB_ENCAP_LEN).
pub const DATAGRAM_MIN_MTU: u32 = ETH_MIN_MTU + IPOIB_ENCAP_LEN;
/// The largest datagram-mode MTU: the largest InfiniBand MTU (4096) minus the IPoIB header.
/// A port with a 2048-byte InfiniBand MTU allows 2044.
pub const DATAGRAM_MAX_MTU: u32 = 4096 - IPOIB_ENCAP_LEN;
/// IPOIB_CM_MTU (0x10000 - 0x10): the largest connected-mode MTU.
pub const CONNECTED_MAX_MTU: u32 = 65520;
/// The smallest connected-mode MTU we accept. The kernel has no lower bound in connected mode
/// (an IPoIB netdev's `min_mtu` is 0), but below 68 IPv4 removes the interface's addresses.
pub const CONNECTED_MIN_MTU: u32 = ETH_MIN_MTU;
/// The length of the `.xxxx` suffix of a child's default name.
const SUFFIX_LEN: usize = 5;

/// Why an IPoIB request was refused before reaching the kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum IpoibError {
    #[error(
        "P_Key 0x0000 is the invalid P_Key and names no partition; give 0x0001 to 0x7fff, with or without the full-membership bit 0x8000"
    )]
    PkeyZero,
    #[error(
        "P_Key 0x8000 is the full-membership bit alone (partition 0x0000, which is invalid); give 0x0001 to 0x7fff, with or without the full-membership bit 0x8000"
    )]
    PkeyFullMemberOnly,
    #[error("P_Key {0:#x} does not fit in 16 bits; P_Keys are 0x0001 to 0xffff")]
    PkeyTooLarge(u32),
    #[error("transport mode {q0} is not known; use \"datagram\" (the default) or \"connected\"", q0 = quote_capped(.0))]
    UnknownMode(String),
    #[error(
        "MTU {mtu} is below the smallest datagram-mode MTU, {DATAGRAM_MIN_MTU} (IPv4's minimum of {ETH_MIN_MTU} plus the {IPOIB_ENCAP_LEN}-byte IPoIB header)"
    )]
    DatagramMtuTooSmall { mtu: u32 },
    #[error(
        "MTU {mtu} is too large for datagram mode, which carries at most the port's InfiniBand MTU minus the {IPOIB_ENCAP_LEN}-byte IPoIB header ({DATAGRAM_MAX_MTU} on a 4096-byte link, 2044 on a 2048-byte one); connected mode allows up to {CONNECTED_MAX_MTU}"
    )]
    DatagramMtuTooLarge { mtu: u32 },
    #[error("MTU {mtu} is below {CONNECTED_MIN_MTU}, the smallest MTU IPv4 works with")]
    ConnectedMtuTooSmall { mtu: u32 },
    #[error(
        "MTU {mtu} is above {CONNECTED_MAX_MTU}, the largest connected-mode MTU (IPOIB_CM_MTU)"
    )]
    ConnectedMtuTooLarge { mtu: u32 },
}

/// Checks a P_Key as the kernel does for a child (0, 0x8000 and anything above 16 bits are
/// refused) and returns it as given, without the full-membership bit added.
pub fn validate_pkey(raw: u32) -> Result<u16, IpoibError> {
    let pkey = u16::try_from(raw).map_err(|_| IpoibError::PkeyTooLarge(raw))?;
    match pkey {
        0 => Err(IpoibError::PkeyZero),
        PKEY_FULL_MEMBER => Err(IpoibError::PkeyFullMemberOnly),
        p => Ok(p),
    }
}

/// The P_Key the kernel gives a child made with `pkey`: the full-membership bit is always set,
/// so 0x0002 and 0x8002 make the same partition member, 0x8002.
pub fn full_member(pkey: u16) -> u16 {
    pkey | PKEY_FULL_MEMBER
}

/// The name the kernel gives a child made through `create_child`, and NetworkManager's name
/// for a partition: `<parent>.<pkey as given, 4 hex digits>`. When that would exceed 15
/// characters the parent's name is cut to 10, as the kernel does since 6.10
/// (`"%.10s.%04x"` in ipoib_vlan_add), so that the P_Key always stays visible.
pub fn default_child_name(parent: &str, pkey: u16) -> String {
    let keep = NETDEV_NAME_MAX - SUFFIX_LEN;
    let parent = if parent.len() + SUFFIX_LEN > NETDEV_NAME_MAX {
        // Interface names are ASCII once validated; cut on a character boundary regardless.
        let mut end = keep;
        while !parent.is_char_boundary(end) {
            end -= 1;
        }
        &parent[..end]
    } else {
        parent
    };
    format!("{parent}.{pkey:04x}")
}

/// A transport mode as a user writes it: `datagram` or `connected`.
pub fn parse_mode(s: &str) -> Result<IpoibMode, IpoibError> {
    match s {
        "datagram" => Ok(IpoibMode::Datagram),
        "connected" => Ok(IpoibMode::Connected),
        other => Err(IpoibError::UnknownMode(other.to_string())),
    }
}

/// The MTUs a mode allows (before the port's own InfiniBand MTU is known).
pub fn mtu_range(mode: IpoibMode) -> std::ops::RangeInclusive<u32> {
    match mode {
        IpoibMode::Datagram => DATAGRAM_MIN_MTU..=DATAGRAM_MAX_MTU,
        IpoibMode::Connected => CONNECTED_MIN_MTU..=CONNECTED_MAX_MTU,
    }
}

/// Checks an MTU against the limits of `mode`.
pub fn check_mtu(mode: IpoibMode, mtu: u32) -> Result<(), IpoibError> {
    match mode {
        IpoibMode::Datagram if mtu < DATAGRAM_MIN_MTU => {
            Err(IpoibError::DatagramMtuTooSmall { mtu })
        }
        IpoibMode::Datagram if mtu > DATAGRAM_MAX_MTU => {
            Err(IpoibError::DatagramMtuTooLarge { mtu })
        }
        IpoibMode::Connected if mtu < CONNECTED_MIN_MTU => {
            Err(IpoibError::ConnectedMtuTooSmall { mtu })
        }
        IpoibMode::Connected if mtu > CONNECTED_MAX_MTU => {
            Err(IpoibError::ConnectedMtuTooLarge { mtu })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::validate_netdev_name;

    #[test]
    fn pkeys_as_the_kernel_takes_them() {
        assert_eq!(validate_pkey(0x0002), Ok(0x0002));
        assert_eq!(validate_pkey(0x8002), Ok(0x8002));
        assert_eq!(validate_pkey(0x7fff), Ok(0x7fff));
        assert_eq!(validate_pkey(0xffff), Ok(0xffff));
        assert_eq!(validate_pkey(0), Err(IpoibError::PkeyZero));
        assert_eq!(validate_pkey(0x8000), Err(IpoibError::PkeyFullMemberOnly));
        assert_eq!(
            validate_pkey(0x1_0000),
            Err(IpoibError::PkeyTooLarge(0x1_0000))
        );
        assert_eq!(
            validate_pkey(u32::MAX),
            Err(IpoibError::PkeyTooLarge(u32::MAX))
        );
        assert_eq!(full_member(0x0002), 0x8002);
        assert_eq!(full_member(0x8002), 0x8002);
        // The sentences explain the bit.
        assert!(IpoibError::PkeyFullMemberOnly
            .to_string()
            .contains("full-membership"));
        assert!(IpoibError::PkeyTooLarge(0x12345)
            .to_string()
            .contains("0x12345"));
    }

    #[test]
    fn default_names_keep_the_pkey_as_given() {
        assert_eq!(default_child_name("ib0", 0x0002), "ib0.0002");
        assert_eq!(default_child_name("ib0", 0x8002), "ib0.8002");
        assert_eq!(default_child_name("ib0", 0xa), "ib0.000a");
        // 10 characters + 5 = 15: kept whole.
        assert_eq!(default_child_name("ibp59s0f0x", 0x8001), "ibp59s0f0x.8001");
        assert_eq!(default_child_name("ibp59s0f0", 0x8001), "ibp59s0f0.8001");
        // Longer parents are cut to 10 characters, as kernels since 6.10 do.
        assert_eq!(
            default_child_name("ibp175s0f0np0", 0x0002),
            "ibp175s0f0.0002"
        );
        assert_eq!(default_child_name("x23456789012345", 15), "x234567890.000f");
        for parent in ["ib0", "ibp59s0f0", "ibp175s0f0np0", "mlx5_ib_port_15"] {
            let name = default_child_name(parent, 0x7fff);
            assert!(validate_netdev_name(&name).is_ok(), "{name}");
            assert!(name.len() <= NETDEV_NAME_MAX, "{name}");
        }
    }

    #[test]
    fn modes() {
        assert_eq!(parse_mode("datagram"), Ok(IpoibMode::Datagram));
        assert_eq!(parse_mode("connected"), Ok(IpoibMode::Connected));
        for bad in ["", "Connected", "cm", "datagram\n", "ud"] {
            assert_eq!(
                parse_mode(bad),
                Err(IpoibError::UnknownMode(bad.to_string())),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn mtu_limits_per_mode() {
        use IpoibMode::*;
        for ok in [72, 1500, 2044, 4092] {
            assert_eq!(check_mtu(Datagram, ok), Ok(()), "{ok}");
        }
        assert_eq!(
            check_mtu(Datagram, 71),
            Err(IpoibError::DatagramMtuTooSmall { mtu: 71 })
        );
        assert_eq!(
            check_mtu(Datagram, 4093),
            Err(IpoibError::DatagramMtuTooLarge { mtu: 4093 })
        );
        for ok in [68, 2044, 9000, 65520] {
            assert_eq!(check_mtu(Connected, ok), Ok(()), "{ok}");
        }
        assert_eq!(
            check_mtu(Connected, 67),
            Err(IpoibError::ConnectedMtuTooSmall { mtu: 67 })
        );
        assert_eq!(
            check_mtu(Connected, 65521),
            Err(IpoibError::ConnectedMtuTooLarge { mtu: 65521 })
        );
        assert!(check_mtu(Connected, u32::MAX).is_err());
        assert!(mtu_range(Datagram).contains(&4092));
        assert!(!mtu_range(Datagram).contains(&65520));
        // The datagram sentence points at connected mode.
        assert!(IpoibError::DatagramMtuTooLarge { mtu: 9000 }
            .to_string()
            .contains("connected mode allows up to 65520"));
    }
}
