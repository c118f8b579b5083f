//! 64-bit GUIDs as sysfs prints them ("xxxx:xxxx:xxxx:xxxx", big-endian groups).

use serde::{Serialize, Serializer};

use super::attr::{trim_attr, AttrError, Field};
use rdma_manager_dbus::text::quote_capped;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Guid(pub u64);

impl Guid {
    /// Parses sysfs's `node_guid` / `sys_image_guid` format.
    pub fn parse_sysfs(raw: &str) -> Field<Guid> {
        let s = trim_attr(raw).trim();
        let groups: Vec<&str> = s.split(':').collect();
        if groups.len() != 4 || groups.iter().any(|g| g.len() != 4) {
            return Err(AttrError::malformed(s, "expected xxxx:xxxx:xxxx:xxxx"));
        }
        let mut value = 0u64;
        for g in groups {
            let part =
                u16::from_str_radix(g, 16).map_err(|e| AttrError::malformed(s, e.to_string()))?;
            value = (value << 16) | u64::from(part);
        }
        Ok(Guid(value))
    }

    /// The GUID a RoCE/rxe device derives from its netdev's MAC address (EUI-64: the
    /// universal/local bit flipped and ff:fe inserted), as the kernel's `addrconf_addr_eui48`.
    pub fn from_mac_eui64(mac: [u8; 6]) -> Guid {
        let bytes = [
            mac[0] ^ 0x02,
            mac[1],
            mac[2],
            0xff,
            0xfe,
            mac[3],
            mac[4],
            mac[5],
        ];
        Guid(u64::from_be_bytes(bytes))
    }

    pub fn from_be_bytes(bytes: [u8; 8]) -> Guid {
        Guid(u64::from_be_bytes(bytes))
    }

    pub fn to_be_bytes(self) -> [u8; 8] {
        self.0.to_be_bytes()
    }

    /// A GUID typed by a user, in any of the forms the tools print: sysfs and `ibv_devinfo`
    /// (`0002:c903:0031:78f2`), ibstat (`0x0002c903003178f2`) or the last 8 bytes of an IPoIB
    /// hardware address (`00:02:c9:03:00:31:78:f2`). Hex digits in either case.
    pub fn parse_user(input: &str) -> Result<Guid, GuidFormatError> {
        let bad = || GuidFormatError(input.to_string());
        let hex_groups = |s: &str, n: usize, width: usize| -> Option<u64> {
            let groups: Vec<&str> = s.split(':').collect();
            if groups.len() != n || groups.iter().any(|g| g.len() != width) {
                return None;
            }
            groups.iter().try_fold(0u64, |acc, g| {
                if !g.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                let v = u64::from_str_radix(g, 16).ok()?;
                Some((acc << (4 * width)) | v)
            })
        };
        if let Some(hex) = input
            .strip_prefix("0x")
            .or_else(|| input.strip_prefix("0X"))
        {
            if hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return u64::from_str_radix(hex, 16).map(Guid).map_err(|_| bad());
            }
            return Err(bad());
        }
        hex_groups(input, 4, 4)
            .or_else(|| hex_groups(input, 8, 2))
            .map(Guid)
            .ok_or_else(bad)
    }

    /// The form of the last 8 bytes of an IPoIB hardware address, lower case, as udev rules
    /// match it: `00:02:c9:03:00:31:78:f2`.
    pub fn address_form(self) -> String {
        self.to_be_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":")
    }

    /// sysfs / `rdma dev show` form: `04f6:b9ff:fe05:ca57`.
    pub fn colon_form(self) -> String {
        let v = self.0;
        format!(
            "{:04x}:{:04x}:{:04x}:{:04x}",
            (v >> 48) & 0xffff,
            (v >> 32) & 0xffff,
            (v >> 16) & 0xffff,
            v & 0xffff
        )
    }
}

/// A GUID in none of the accepted forms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{q0} is not a GUID; write it as 0002:c903:0031:78f2 (sysfs, ibv_devinfo), 0x0002c903003178f2 (ibstat) or 00:02:c9:03:00:31:78:f2 (the end of an IPoIB address)", q0 = quote_capped(.0))]
pub struct GuidFormatError(pub String);

impl std::fmt::Display for Guid {
    /// ibstat form: `0x04f6b9fffe05ca57`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "0x{:016x}", self.0)
    }
}

impl Serialize for Guid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.colon_form())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lab_capture_guid() {
        let g = Guid::parse_sysfs("04f6:b9ff:fe05:ca57\n").unwrap();
        assert_eq!(g.0, 0x04f6_b9ff_fe05_ca57);
        assert_eq!(g.colon_form(), "04f6:b9ff:fe05:ca57");
        assert_eq!(g.to_string(), "0x04f6b9fffe05ca57");
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            "04f6:b9ff:fe05",
            "04f6:b9ff:fe05:ca5",
            "04f6:b9ff:fe05:zz57",
            "0x04f6b9fffe05ca57",
        ] {
            assert!(Guid::parse_sysfs(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn user_forms() {
        let want = Guid(0x0002_c903_0031_78f2);
        for ok in [
            "0002:c903:0031:78f2",
            "0002:C903:0031:78F2",
            "0x0002c903003178f2",
            "0X0002C903003178F2",
            "00:02:c9:03:00:31:78:f2",
            "00:02:C9:03:00:31:78:F2",
        ] {
            assert_eq!(Guid::parse_user(ok), Ok(want), "{ok}");
        }
        assert_eq!(want.address_form(), "00:02:c9:03:00:31:78:f2");
        for bad in [
            "",
            "0x2c903003178f2",
            "0x0002c903003178f2\n",
            " 0002:c903:0031:78f2",
            "0002:c903:0031",
            "0002c903003178f2",
            "00:02:c9:03:00:31:78",
            "0:02:c9:03:00:31:78:f2a",
            "00:02:c9:03:00:31:78:g2",
            "+002:c903:0031:78f2",
            "0x+002c903003178f2",
            "00-02-c9-03-00-31-78-f2",
            "../../etc/passwd",
        ] {
            let e = Guid::parse_user(bad).unwrap_err();
            assert!(e.to_string().contains("0x0002c903003178f2"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn eui64_from_mac() {
        // The lab's veth0 had MAC 06:f6:b9:05:ca:57 and rxe0 node GUID 04f6:b9ff:fe05:ca57.
        let g = Guid::from_mac_eui64([0x06, 0xf6, 0xb9, 0x05, 0xca, 0x57]);
        assert_eq!(g.colon_form(), "04f6:b9ff:fe05:ca57");
    }
}
