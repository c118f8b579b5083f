//! The service's rules for what a user types, checked in the form before anything is sent.
//!
//! The checks are rdma-managerd's own functions (crate rdma-manager-model, which both link), so
//! a value the form accepts is one the daemon's argument check accepts too; only the sentences
//! are shorter, to fit under a field.

use rdma_manager_model::hostconf::memlock::{self, MemlockError, MemlockValue};
use rdma_manager_model::hostconf::nfs_conf::{self, NFSRDMA_PORT};
use rdma_manager_model::ipoib::IpoibMode;
use rdma_manager_model::ipoib::{
    check_mtu, validate_pkey, IpoibError, CONNECTED_MAX_MTU, CONNECTED_MIN_MTU, DATAGRAM_MAX_MTU,
    DATAGRAM_MIN_MTU, PKEY_FULL_MEMBER,
};
use rdma_manager_model::linktest::{self, PeerError};
use rdma_manager_model::names::{validate_netdev_name, validate_rdma_name};

/// A P_Key as typed: 1 to 4 hex digits, `0x` optional (`8002`, `0x8002`).
pub fn pkey(text: &str) -> Result<u16, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("give the P_Key in hex, e.g. 8002 (0x is optional)".into());
    }
    let hex = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "{t:?} is not hexadecimal; a P_Key is 0x0001 to 0xffff, e.g. 8002"
        ));
    }
    let decimal = |t: &str| match (hex.len() == t.len(), t.parse::<u16>()) {
        // Digits without 0x: read as hex here, where `ip link ... pkey` would read decimal.
        (true, Ok(d)) => {
            format!(" (read as hexadecimal, as P_Keys are written; {t} in decimal is {d:#06x})")
        }
        _ => String::new(),
    };
    let value = u32::from_str_radix(hex, 16).map_err(|_| {
        format!(
            "{t} does not fit in 16 bits; P_Keys are 0x0001 to 0xffff{}",
            decimal(t)
        )
    })?;
    if value > 0xffff {
        return Err(format!(
            "{value:#x} does not fit in 16 bits; P_Keys are 0x0001 to 0xffff{}",
            decimal(t)
        ));
    }
    validate_pkey(value).map_err(|e| match e {
        IpoibError::PkeyZero => "0x0000 is the invalid P_Key; give 0x0001 to 0x7fff, with or \
                                 without the full-membership bit 0x8000"
            .to_string(),
        IpoibError::PkeyFullMemberOnly => "0x8000 is the full-membership bit alone (partition \
                                           0, invalid); give 0x8001 to 0xffff"
            .to_string(),
        IpoibError::PkeyTooLarge(v) => {
            format!("{v:#x} does not fit in 16 bits; P_Keys are 0x0001 to 0xffff")
        }
        other => other.to_string(),
    })
}

/// What to know about a valid P_Key before using it: the kernel sets the full-membership bit.
pub fn pkey_note(pkey: u16) -> Option<String> {
    (pkey & PKEY_FULL_MEMBER == 0).then(|| {
        format!(
            "the full-membership bit is clear: the kernel sets it, so the child's P_Key reads \
             {:#06x} (the default name keeps {pkey:04x} as given)",
            pkey | PKEY_FULL_MEMBER
        )
    })
}

/// What the form says of a P_Key typed without `0x`: that it is read as hexadecimal (as
/// P_Keys are written, and unlike `ip link ... pkey N`, which reads decimal), with the value
/// it is read as; `None` with `0x`.
pub fn pkey_hex_note(text: &str, pkey: u16) -> Option<String> {
    let t = text.trim();
    if t.starts_with("0x") || t.starts_with("0X") {
        return None;
    }
    Some(format!(
        "{t} is read as hexadecimal: P_Key {pkey:#06x} (ip link would read digits as decimal)"
    ))
}

/// A network interface name, as `CreateChild` and `SetIpoibName` check it.
pub fn netdev_name(name: &str) -> Result<(), String> {
    validate_netdev_name(name).map_err(|e| e.to_string())
}

/// An RDMA device name, as `AddSoftLink`, `SetRdmaFixedName` and `Rename` check it.
pub fn rdma_name(name: &str) -> Result<(), String> {
    validate_rdma_name(name).map_err(|e| e.to_string())
}

/// An IPoIB mode by its D-Bus name.
pub fn ipoib_mode(mode: &str) -> IpoibMode {
    if mode == "connected" {
        IpoibMode::Connected
    } else {
        IpoibMode::Datagram
    }
}

/// An MTU as typed, checked against the limits of `mode`; empty means "leave it to the
/// kernel".
pub fn mtu(text: &str, mode: &str) -> Result<Option<u32>, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    let limits = || match ipoib_mode(mode) {
        IpoibMode::Datagram => format!(
            "datagram mode allows {DATAGRAM_MIN_MTU} to {DATAGRAM_MAX_MTU} (the port's \
             InfiniBand MTU minus 4; 2044 on a 2048-byte link); connected up to \
             {CONNECTED_MAX_MTU}"
        ),
        IpoibMode::Connected => {
            format!("connected mode allows {CONNECTED_MIN_MTU} to {CONNECTED_MAX_MTU}")
        }
    };
    let v: u32 = t
        .parse()
        .map_err(|_| format!("{t:?} is not a number; {}", limits()))?;
    check_mtu(ipoib_mode(mode), v)
        .map(|()| Some(v))
        .map_err(|_| format!("MTU {v}: {}", limits()))
}

/// A RoCE type of service as typed: 0 to 255.
pub fn tos(text: &str) -> Result<u8, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("give the type of service, 0 to 255 (e.g. 106 for DSCP 26)".into());
    }
    // Decimal, or hex with 0x as configfs's default_roce_tos takes it (as rdma-cli does).
    let value = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16),
        None => t.parse::<u8>(),
    };
    value.map_err(|_| {
        format!("{t:?} is not 0 to 255 (or 0x00 to 0xff); the ToS is one byte (e.g. 106)")
    })
}

/// One memlock limit as typed: "unlimited" or a whole number of KiB, as SetMemlockLimits
/// takes it (the text to send).
pub fn memlock_value(text: &str) -> Result<String, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("unlimited") {
        return Ok("unlimited".into());
    }
    if t.is_empty() {
        return Err("give \"unlimited\" or a number of KiB, e.g. 65536 (64 MiB)".into());
    }
    MemlockValue::parse_setting(t)
        .map(MemlockValue::conf_text)
        .map_err(|e| match e {
            MemlockError::BadValue(_) => {
                format!("{t:?} is not \"unlimited\" or a whole number of KiB (at least 1, no unit)")
            }
            other => other.to_string(),
        })
}

/// The pair of memlock limits as typed: each valid, and soft not above hard. The error is
/// the soft field's (the hard one's own errors come from [`memlock_value`]).
pub fn memlock_pair(soft: &str, hard: &str) -> Result<(String, String), String> {
    let s = memlock_value(soft)?;
    let h = memlock_value(hard).map_err(|_| "the hard limit is not valid".to_string())?;
    let (Ok(sv), Ok(hv)) = (
        MemlockValue::parse_setting(&s),
        MemlockValue::parse_setting(&h),
    ) else {
        return Err("not a memlock value".into());
    };
    memlock::validate(sv, hv).map_err(|e| match e {
        MemlockError::SoftAboveHard { soft, hard } => {
            format!("the soft limit ({soft}) is above the hard limit ({hard}); soft <= hard")
        }
        other => other.to_string(),
    })?;
    Ok((s, h))
}

/// The port of NFS over RDMA as typed: 1 to 65535; empty means the standard 20049.
pub fn nfs_port(text: &str) -> Result<u16, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(NFSRDMA_PORT);
    }
    let v: u32 = t
        .parse()
        .map_err(|_| format!("{t:?} is not a port: give 1 to 65535 (the standard is 20049)"))?;
    nfs_conf::validate_port(v).map_err(|e| e.to_string())
}

/// A link test's peer as typed, for `kind`: an IP address or a GID that names one, as
/// `TestLink` takes it, or for ibping the peer port's LID (anything else is refused here, as
/// the daemon would).
pub fn peer(text: &str, kind: &str) -> Result<String, String> {
    let t = text.trim();
    if kind == "ibping" {
        if t.is_empty() {
            return Err("give the peer port's LID (ibstat's Base lid)".into());
        }
        return linktest::parse_lid(t)
            .map(|_| t.to_string())
            .ok_or_else(|| format!("{t:?} is not a LID: 1 to 0xbfff, decimal or 0x hex"));
    }
    if t.is_empty() {
        return Err("give the peer's IP address (IPoIB or RoCE), or a RoCE v2 GID".into());
    }
    linktest::parse_peer(t)
        .map(|_| t.to_string())
        .map_err(|e| match e {
            PeerError::Lid(_) => {
                "a LID is for kind ibping: rdma and icmp need the peer's IP address".into()
            }
            PeerError::LinkLocalGid(_) => {
                "a link-local GID (fe80:...) maps to no address: give the peer's IP address".into()
            }
            PeerError::Unusable(_) => {
                format!("{t} is unspecified, multicast or broadcast: give one host's address")
            }
            PeerError::Invalid(_) => format!("{t:?} is not an IP address or a GID"),
        })
}

/// A link test's duration in seconds as typed (empty or 0: the tools' own counts).
pub fn test_duration(text: &str) -> Result<u32, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(0);
    }
    let range = || {
        format!(
            "give 0 to {} seconds (0: the tools' own counts)",
            linktest::MAX_DURATION_S
        )
    };
    let v: u32 = t
        .parse()
        .map_err(|_| format!("{t:?} is not a number: {}", range()))?;
    linktest::check_duration(v).map_err(|_| range())
}

/// A link test's timeout in seconds as typed (empty or 0: the daemon's default).
pub fn test_timeout(text: &str) -> Result<u32, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(0);
    }
    let range = || {
        format!(
            "give 1 to {} seconds (0: {} s)",
            linktest::MAX_TIMEOUT_S,
            linktest::DEFAULT_TIMEOUT_S
        )
    };
    let v: u32 = t
        .parse()
        .map_err(|_| format!("{t:?} is not a number: {}", range()))?;
    linktest::check_timeout(v).map(|_| v).map_err(|_| range())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkeys() {
        assert_eq!(pkey("8002"), Ok(0x8002));
        assert_eq!(pkey("0x8002"), Ok(0x8002));
        assert_eq!(pkey(" 0X7fff "), Ok(0x7fff));
        assert_eq!(pkey("2"), Ok(0x0002));
        for bad in [
            "", "0x", "0", "0x0000", "8000", "0x8000", "10000", "zz", "-1", "0x8g02",
        ] {
            assert!(pkey(bad).is_err(), "{bad:?}");
        }
        assert!(pkey("8000").unwrap_err().contains("full-membership"));
        assert!(pkey_note(0x0002).is_some());
        // Without 0x a P_Key is read as hex, and the form says so before sending.
        assert_eq!(pkey("abc"), Ok(0x0abc));
        let note = pkey_hex_note("abc", 0x0abc).expect("a note");
        assert!(
            note.contains("read as hexadecimal") && note.contains("0x0abc"),
            "{note}"
        );
        assert!(pkey_hex_note("0x8002", 0x8002).is_none());
        // 32769 is 0x8001 in decimal; as hex it does not fit, and the refusal says both.
        let e = pkey("32769").expect_err("too large as hex");
        assert!(
            e.contains("read as hexadecimal") && e.contains("0x8001"),
            "{e}"
        );
        assert!(pkey_note(0x8002).is_none());
    }

    #[test]
    fn mtus_follow_the_mode() {
        assert_eq!(mtu("", "datagram"), Ok(None));
        assert_eq!(mtu("2044", "datagram"), Ok(Some(2044)));
        assert!(mtu("71", "datagram").is_err());
        assert!(mtu("4093", "datagram").is_err());
        assert_eq!(mtu("65520", "connected"), Ok(Some(65520)));
        assert!(mtu("65521", "connected").is_err());
        assert!(mtu("1e3", "connected").is_err());
    }

    #[test]
    fn memlock_and_nfs_port() {
        assert_eq!(memlock_value("unlimited"), Ok("unlimited".into()));
        assert_eq!(memlock_value(" Unlimited "), Ok("unlimited".into()));
        assert_eq!(memlock_value("65536"), Ok("65536".into()));
        for bad in ["", "0", "-1", "64M", "1.5", "infinity", "18014398509481984"] {
            assert!(memlock_value(bad).is_err(), "{bad:?}");
        }
        assert!(memlock_pair("1024", "unlimited").is_ok());
        assert!(memlock_pair("2048", "2048").is_ok());
        let e = memlock_pair("unlimited", "1024").unwrap_err();
        assert!(e.contains("above the hard limit"), "{e}");
        assert!(memlock_pair("4096", "1024").is_err());
        assert_eq!(nfs_port(""), Ok(20049));
        assert_eq!(nfs_port("20049"), Ok(20049));
        assert_eq!(nfs_port("1"), Ok(1));
        for bad in ["0", "65536", "x", "-5"] {
            assert!(nfs_port(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn names_and_tos() {
        assert!(netdev_name("ib0.8005").is_ok());
        assert!(netdev_name("ib0:1").is_err());
        assert!(netdev_name("sixteen_chars_xx").is_err());
        assert!(netdev_name("").is_err());
        assert!(rdma_name("rxe_lab0").is_ok());
        assert!(rdma_name("a/b").is_err());
        assert_eq!(tos("106"), Ok(106));
        // As configfs takes it (and rdma-cli): hex with 0x.
        assert_eq!(tos("0x60"), Ok(0x60));
        assert!(tos("0x100").is_err());
        assert!(tos("256").is_err());
        assert!(tos("").is_err());
    }

    #[test]
    fn link_test_requests() {
        assert_eq!(peer(" 192.0.2.1 ", "rdma"), Ok("192.0.2.1".into()));
        assert!(peer("0000:0000:0000:0000:0000:ffff:c0a8:4d0b", "rdma").is_ok());
        assert!(peer("fd00::11", "rdma").is_ok());
        assert!(peer("", "rdma").is_err());
        assert!(peer("0x12", "rdma").unwrap_err().contains("LID"));
        assert!(peer("fe80:0000:0000:0000:0002:c903:0031:78f2", "rdma")
            .unwrap_err()
            .contains("link-local"));
        assert!(peer("224.0.0.1", "rdma").is_err());
        assert!(peer("host.example", "rdma").is_err());
        // ibping takes a LID and nothing else.
        assert_eq!(peer(" 0x12 ", "ibping"), Ok("0x12".into()));
        assert!(peer("2", "ibping").is_ok());
        assert!(peer("192.0.2.1", "ibping")
            .unwrap_err()
            .contains("not a LID"));
        assert!(peer("0xc000", "ibping").is_err());
        assert!(peer("", "ibping").unwrap_err().contains("LID"));
        assert_eq!(test_duration(""), Ok(0));
        assert_eq!(test_duration("60"), Ok(60));
        assert!(test_duration("61").is_err());
        assert!(test_duration("-1").is_err());
        assert_eq!(test_timeout(""), Ok(0));
        assert_eq!(test_timeout("600"), Ok(600));
        assert!(test_timeout("601").is_err());
        assert!(test_timeout("1m").is_err());
    }
}
