//! `/etc/rdma-manager/ipoib.toml`: IPoIB settings and P_Key children to re-apply at start and
//! when a port's IPoIB interface appears. The kernel forgets both at reboot and when the HCA's
//! driver is reloaded.
//!
//! Entries are keyed by port GUID (the last 8 bytes of the 20-byte IPoIB hardware address), the
//! only part of an IPoIB interface that does not change: names follow udev rules and the
//! probing order, and the first 4 bytes carry a queue pair number.
//!
//! ```toml
//! [[port]]
//! guid = "0xf452140300039381"
//! mode = "connected"
//!
//! [[port.child]]
//! name = "ib0.0002"
//! pkey = "0x8002"
//! mtu = 2044
//! ```

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{ConfigFile, Desired, Loaded};
use crate::model::ipoib::{check_mtu, full_member, parse_mode, validate_pkey, IpoibError};
use crate::model::ipoib::{CONNECTED_MAX_MTU, CONNECTED_MIN_MTU};
use crate::model::names::validate_netdev_name;
use crate::model::{Guid, IpoibMode};
use rdma_manager_dbus::text::quote_capped;

/// Settings of one IPoIB interface as the user set them; `None` is left as the kernel has it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IpoibSettings {
    pub mode: Option<IpoibMode>,
    pub mtu: Option<u32>,
    pub umcast: Option<bool>,
}

impl IpoibSettings {
    pub fn is_empty(&self) -> bool {
        self.mode.is_none() && self.mtu.is_none() && self.umcast.is_none()
    }

    /// The MTU within the limits of the mode (or of any mode when the mode is not set).
    pub fn validate(&self) -> Result<(), IpoibError> {
        match (self.mode, self.mtu) {
            (Some(mode), Some(mtu)) => check_mtu(mode, mtu),
            (None, Some(mtu)) if mtu < CONNECTED_MIN_MTU => {
                Err(IpoibError::ConnectedMtuTooSmall { mtu })
            }
            (None, Some(mtu)) if mtu > CONNECTED_MAX_MTU => {
                Err(IpoibError::ConnectedMtuTooLarge { mtu })
            }
            _ => Ok(()),
        }
    }

    /// `(setting, value)` as text, for display (`mode` = `connected`, `mtu` = `2044`, ...).
    pub fn describe(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(m) = self.mode {
            out.push(("mode".to_string(), m.as_str().to_string()));
        }
        if let Some(m) = self.mtu {
            out.push(("mtu".to_string(), m.to_string()));
        }
        if let Some(u) = self.umcast {
            out.push(("umcast".to_string(), u.to_string()));
        }
        out
    }
}

/// A P_Key child to re-create under its port's IPoIB interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IpoibChildEntry {
    /// Interface name to create it with.
    pub name: String,
    /// The P_Key with the full-membership bit, as the kernel stores it (a hand-written
    /// `0x0002` reads as `0x8002`, the partition the kernel would make of it).
    #[serde(with = "pkey_text")]
    pub pkey: u16,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "mode_text")]
    pub mode: Option<IpoibMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub umcast: Option<bool>,
}

impl IpoibChildEntry {
    pub fn settings(&self) -> IpoibSettings {
        IpoibSettings {
            mode: self.mode,
            mtu: self.mtu,
            umcast: self.umcast,
        }
    }

    pub fn set(&mut self, s: IpoibSettings) {
        (self.mode, self.mtu, self.umcast) = (s.mode, s.mtu, s.umcast);
    }
}

/// One InfiniBand port: the settings of its own IPoIB interface and its children.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IpoibPortEntry {
    /// Port GUID, as ibstat prints it (`0x` and 16 hex digits); the colon form of sysfs is
    /// read too.
    #[serde(with = "guid_text")]
    pub guid: Guid,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "mode_text")]
    pub mode: Option<IpoibMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub umcast: Option<bool>,
    #[serde(rename = "child", default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<IpoibChildEntry>,
}

impl IpoibPortEntry {
    pub fn new(guid: Guid) -> IpoibPortEntry {
        IpoibPortEntry {
            guid,
            mode: None,
            mtu: None,
            umcast: None,
            children: Vec::new(),
        }
    }

    pub fn settings(&self) -> IpoibSettings {
        IpoibSettings {
            mode: self.mode,
            mtu: self.mtu,
            umcast: self.umcast,
        }
    }

    pub fn set(&mut self, s: IpoibSettings) {
        (self.mode, self.mtu, self.umcast) = (s.mode, s.mtu, s.umcast);
    }

    /// The remembered child with this P_Key (full-membership bit included).
    pub fn child(&self, pkey: u16) -> Option<&IpoibChildEntry> {
        self.children.iter().find(|c| c.pkey == full_member(pkey))
    }

    pub fn child_mut(&mut self, pkey: u16) -> Option<&mut IpoibChildEntry> {
        self.children
            .iter_mut()
            .find(|c| c.pkey == full_member(pkey))
    }

    pub fn is_empty(&self) -> bool {
        self.settings().is_empty() && self.children.is_empty()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IpoibConfig {
    #[serde(rename = "port", default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<IpoibPortEntry>,
}

impl IpoibConfig {
    pub fn port(&self, guid: Guid) -> Option<&IpoibPortEntry> {
        self.ports.iter().find(|p| p.guid == guid)
    }

    /// The entry of a port, made if needed.
    pub fn port_mut(&mut self, guid: Guid) -> &mut IpoibPortEntry {
        let i = match self.ports.iter().position(|p| p.guid == guid) {
            Some(i) => i,
            None => {
                self.ports.push(IpoibPortEntry::new(guid));
                self.ports.len() - 1
            }
        };
        &mut self.ports[i]
    }

    /// The file after the remembered child of `guid` with `pkey` was renamed from `old` to
    /// `new` (by hand, or by a udev rule): it is re-created under the name it has. Another
    /// child remembered under `new` (absent, as the name was free) gives way, so that no two
    /// children share a name. `None` when nothing changes.
    pub fn after_child_rename(
        &self,
        guid: Guid,
        pkey: u16,
        old: &str,
        new: &str,
    ) -> Option<IpoibConfig> {
        let child = self.port(guid).and_then(|p| p.child(pkey))?;
        if old == new || child.name != old {
            return None;
        }
        let mut out = self.clone();
        for p in &mut out.ports {
            p.children.retain(|c| c.name != new);
        }
        if let Some(c) = out.port_mut(guid).child_mut(pkey) {
            c.name = new.to_string();
        }
        out.prune();
        Some(out)
    }

    /// Drops port entries left with nothing to re-apply.
    pub fn prune(&mut self) {
        self.ports.retain(|p| !p.is_empty());
    }
}

impl ConfigFile for IpoibConfig {
    const PATH: &'static str = "/etc/rdma-manager/ipoib.toml";
    const HEADER: &'static str = "\
# IPoIB settings and P_Key child interfaces that rdma-managerd re-applies at start and whenever
# the port's IPoIB interface appears. Each [[port]] is an InfiniBand port, found by its port
# GUID (the last 8 bytes of the 20-byte IPoIB hardware address, as ibstat prints it), never by
# interface name. Its mode (datagram | connected), mtu and umcast (true | false) are those of
# the port's own interface, as they were set; each [[port.child]] is a P_Key child to re-create
# with its name, its P_Key (the kernel always sets the full-membership bit 0x8000) and settings.
# Managed by rdma-managerd: change it with the Ipoib objects' methods, e.g.
#   busctl call org.rdmamanager.RdmaManager1 /org/rdmamanager/RdmaManager1/Ipoib/IFINDEX \\
#     org.rdmamanager.RdmaManager1.Ipoib CreateChild qsa{sv} 2 \"\" 0
# (or Delete, SetMode, SetMtu, SetUmcast). Hand edits are read at the next start of the daemon.
";

    fn slot(desired: &Desired) -> &Loaded<Self> {
        &desired.ipoib
    }

    fn slot_mut(desired: &mut Desired) -> &mut Loaded<Self> {
        &mut desired.ipoib
    }

    fn validate(&self) -> Result<(), String> {
        let mut names: Vec<&str> = Vec::new();
        for (i, p) in self.ports.iter().enumerate() {
            let at = format!("port {} ({})", i + 1, p.guid);
            if p.guid == Guid(0) {
                return Err(format!("{at}: a port GUID of 0 names no port"));
            }
            if self.ports[..i].iter().any(|o| o.guid == p.guid) {
                return Err(format!("port {} is listed twice", p.guid));
            }
            p.settings().validate().map_err(|e| format!("{at}: {e}"))?;
            for (j, c) in p.children.iter().enumerate() {
                let at = format!("{at}, child {} ({})", j + 1, quote_capped(&c.name));
                validate_netdev_name(&c.name).map_err(|e| format!("{at}: name: {e}"))?;
                c.settings().validate().map_err(|e| format!("{at}: {e}"))?;
                if p.children[..j].iter().any(|o| o.pkey == c.pkey) {
                    return Err(format!(
                        "{at}: P_Key {:#06x} is listed twice for this port",
                        c.pkey
                    ));
                }
                if names.contains(&c.name.as_str()) {
                    return Err(format!(
                        "{at}: the name {} is given to two children",
                        quote_capped(&c.name)
                    ));
                }
                names.push(&c.name);
            }
        }
        Ok(())
    }
}

/// A P_Key in the file: written `"0x8002"`; read from such a string, a decimal string, or a
/// TOML integer (`pkey = 0x8002`). 0, 0x8000 and values above 0xffff are refused, and the
/// full-membership bit is added as the kernel adds it.
mod pkey_text {
    use super::*;

    pub fn serialize<S: Serializer>(pkey: &u16, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{pkey:#06x}"))
    }

    struct PkeyVisitor;

    fn checked<E: de::Error>(raw: u64) -> Result<u16, E> {
        let raw = u32::try_from(raw).unwrap_or(u32::MAX);
        validate_pkey(raw)
            .map(full_member)
            .map_err(|e| E::custom(e.to_string()))
    }

    impl Visitor<'_> for PkeyVisitor {
        type Value = u16;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a P_Key such as \"0x8002\"")
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<u16, E> {
            checked(v)
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<u16, E> {
            let v = u64::try_from(v).map_err(|_| E::custom(format!("P_Key {v} is negative")))?;
            checked(v)
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<u16, E> {
            let t = v.trim();
            let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                Some(hex) if !hex.is_empty() => u64::from_str_radix(hex, 16).ok(),
                Some(_) => None,
                None => t.parse::<u64>().ok(),
            };
            match parsed {
                Some(n) => checked(n),
                None => Err(E::custom(format!(
                    "P_Key {v_q} is not a number; write it as \"0x8002\"",
                    v_q = quote_capped(v)
                ))),
            }
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u16, D::Error> {
        d.deserialize_any(PkeyVisitor)
    }
}

/// A port GUID in the file: written as ibstat prints it (`"0xf452140300039381"`); the sysfs
/// colon form (`"f452:1403:0003:9381"`) is read too.
mod guid_text {
    use super::*;

    pub fn serialize<S: Serializer>(g: &Guid, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&g.to_string())
    }

    pub fn parse(text: &str) -> Option<Guid> {
        Guid::parse_user(text.trim()).ok()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Guid, D::Error> {
        let text = String::deserialize(d)?;
        parse(&text).ok_or_else(|| {
            de::Error::custom(format!(
                "port GUID {text_q} is not 0x followed by 16 hex digits (as ibstat prints it) or xxxx:xxxx:xxxx:xxxx"
            , text_q = quote_capped(&text)))
        })
    }
}

/// A transport mode in the file: `"datagram"` or `"connected"`.
mod mode_text {
    use super::*;

    pub fn serialize<S: Serializer>(m: &Option<IpoibMode>, s: S) -> Result<S::Ok, S::Error> {
        match m {
            Some(m) => s.serialize_str(m.as_str()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<IpoibMode>, D::Error> {
        let text = String::deserialize(d)?;
        parse_mode(&text)
            .map(Some)
            .map_err(|e| de::Error::custom(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{parse, render, ConfigError};

    fn sample() -> IpoibConfig {
        IpoibConfig {
            ports: vec![
                IpoibPortEntry {
                    guid: Guid(0xf452_1403_0003_9381),
                    mode: Some(IpoibMode::Connected),
                    mtu: Some(65520),
                    umcast: None,
                    children: vec![
                        IpoibChildEntry {
                            name: "ib0.0002".into(),
                            pkey: 0x8002,
                            mode: None,
                            mtu: None,
                            umcast: Some(true),
                        },
                        IpoibChildEntry {
                            name: "storage".into(),
                            pkey: 0x8010,
                            mode: Some(IpoibMode::Datagram),
                            mtu: Some(2044),
                            umcast: None,
                        },
                    ],
                },
                IpoibPortEntry {
                    guid: Guid(0xb859_9f03_00d4_e62a),
                    mode: None,
                    mtu: None,
                    umcast: Some(false),
                    children: vec![],
                },
            ],
        }
    }

    #[test]
    fn round_trips_with_its_header() {
        let text = render(&sample()).expect("render");
        assert!(text.starts_with("# IPoIB settings"), "{text}");
        assert!(
            text.contains(
                "[[port]]\nguid = \"0xf452140300039381\"\nmode = \"connected\"\nmtu = 65520\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "[[port.child]]\nname = \"ib0.0002\"\npkey = \"0x8002\"\numcast = true\n"
            ),
            "{text}"
        );
        assert_eq!(parse::<IpoibConfig>(text.as_bytes()), Ok(sample()));
        assert_eq!(
            parse::<IpoibConfig>(b"").expect("empty"),
            IpoibConfig::default()
        );
        let empty = render(&IpoibConfig::default()).expect("render");
        assert_eq!(
            parse::<IpoibConfig>(empty.as_bytes()),
            Ok(IpoibConfig::default())
        );
    }

    #[test]
    fn reads_odd_but_valid_hand_edits() {
        let text = "\
# my notes
[[port]]   # the mlx4 port
umcast = false
GUID_IS_CASE_SENSITIVE_KEYS_ARE_NOT = 1
";
        // Keys are exact: an unknown one is refused (below); the rest of this test is valid.
        assert!(parse::<IpoibConfig>(text.as_bytes()).is_err());
        let text = "\
# my notes

[[port]]   # the mlx4 port
umcast = false
guid = 'F452:1403:0003:9381'

  [[port.child]]
  pkey = 0x0002        # written without the full-membership bit, as an integer
  name = 'ib0.0002'

  [[port.child]]
  mtu = 4092
  name = \"ib0.x\"
  pkey = \"32784\"
  mode = \"datagram\"

[[port]]
guid = \"0XB8599F0300D4E62A\"
";
        let c = parse::<IpoibConfig>(text.as_bytes()).expect("valid");
        assert_eq!(c.ports.len(), 2);
        let p = &c.ports[0];
        assert_eq!(p.guid, Guid(0xf452_1403_0003_9381));
        assert_eq!(p.umcast, Some(false));
        assert_eq!(p.children[0].pkey, 0x8002);
        assert_eq!(p.children[1].pkey, 0x8010);
        assert_eq!(p.children[1].mode, Some(IpoibMode::Datagram));
        assert_eq!(c.ports[1].guid, Guid(0xb859_9f03_00d4_e62a));
        assert!(c.ports[1].is_empty());
        // Saved again, it is written in the canonical form and reads back the same.
        let again = render(&c).expect("render");
        assert!(again.contains("pkey = \"0x8002\""), "{again}");
        assert_eq!(parse::<IpoibConfig>(again.as_bytes()), Ok(c));
    }

    #[test]
    fn refuses_what_could_inject_conflict_or_never_apply() {
        let port = "[[port]]\nguid = \"0xf452140300039381\"\n";
        let child = |body: &str| format!("{port}[[port.child]]\n{body}");
        for (bad, why) in [
            ("[[port]]\nguid = \"0xf45214030003938\"\n".to_string(), "16 hex"),
            ("[[port]]\nguid = \"ib0\"\n".to_string(), "port GUID"),
            ("[[port]]\nguid = \"0x0000000000000000\"\n".to_string(), "GUID of 0"),
            ("[[port]]\n".to_string(), "missing field `guid`"),
            (format!("{port}{port}"), "listed twice"),
            (format!("{port}mode = \"cm\"\n"), "not known"),
            (format!("{port}mode = \"datagram\"\nmtu = 9000\n"), "too large for datagram"),
            (format!("{port}mtu = 65521\n"), "65520"),
            (format!("{port}mtu = 20\n"), "below"),
            (format!("{port}umcast = 1\n"), "invalid type"),
            (format!("{port}name = \"ib0\"\n"), "unknown field"),
            (child("name = \"ib0.1\"\npkey = 0\n"), "0x0000"),
            (child("name = \"ib0.1\"\npkey = \"0x8000\"\n"), "0x8000"),
            (child("name = \"ib0.1\"\npkey = 0x10000\n"), "16 bits"),
            (child("name = \"ib0.1\"\npkey = -2\n"), "negative"),
            (child("name = \"ib0.1\"\npkey = \"two\"\n"), "not a number"),
            (child("name = \"../x\"\npkey = 2\n"), "name"),
            (child("name = \"a\\\"b\"\npkey = 2\n"), "character"),
            (child("name = \"ib0\\nx\"\npkey = 2\n"), "character"),
            (child("name = \"abcdefghijklmnop\"\npkey = 2\n"), "16 bytes"),
            (child("name = \"\"\npkey = 2\n"), "empty"),
            (child("pkey = 2\n"), "missing field `name`"),
            (child("name = \"ib0.1\"\n"), "missing field `pkey`"),
            (
                child("name = \"a\"\npkey = 2\n[[port.child]]\nname = \"b\"\npkey = \"0x8002\"\n"),
                "listed twice",
            ),
            (
                format!(
                    "{}[[port]]\nguid = \"0x0000000000000002\"\n[[port.child]]\nname = \"a\"\npkey = 3\n",
                    child("name = \"a\"\npkey = 2\n")
                ),
                "two children",
            ),
            ("[[port]\n".to_string(), "expected"),
        ] {
            match parse::<IpoibConfig>(bad.as_bytes()) {
                Err(ConfigError::Malformed { path, reason }) => {
                    assert_eq!(path, IpoibConfig::PATH);
                    assert!(reason.contains(why), "{bad:?}: {reason}");
                    assert!(!reason.contains('\n'), "{reason}");
                }
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn a_child_follows_its_rename() {
        let g = Guid(0xf452_1403_0003_9381);
        let c = sample();
        let after = c
            .after_child_rename(g, 0x0002, "ib0.0002", "fast")
            .expect("changed");
        assert_eq!(
            after
                .port(g)
                .and_then(|p| p.child(0x8002))
                .map(|c| c.name.as_str()),
            Some("fast")
        );
        assert_eq!(after.port(g).map(|p| p.children.len()), Some(2));
        // Not that child's old name, another port, an unknown P_Key: nothing changes.
        assert_eq!(c.after_child_rename(g, 0x8002, "ib0.x", "fast"), None);
        assert_eq!(
            c.after_child_rename(Guid(0xb859_9f03_00d4_e62a), 0x8002, "ib0.0002", "f"),
            None
        );
        assert_eq!(c.after_child_rename(g, 0x8011, "ib0.0002", "fast"), None);
        // A remembered child under the new name gives way; the file stays valid.
        let after = c
            .after_child_rename(g, 0x8002, "ib0.0002", "storage")
            .expect("changed");
        let names: Vec<&str> = after.ports[0]
            .children
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(names, ["storage"]);
        assert_eq!(after.validate(), Ok(()));
    }

    #[test]
    fn entries_are_found_by_guid_and_pkey() {
        let mut c = sample();
        let g = Guid(0xf452_1403_0003_9381);
        assert_eq!(
            c.port(g)
                .and_then(|p| p.child(0x0002))
                .map(|c| c.name.as_str()),
            Some("ib0.0002")
        );
        assert_eq!(
            c.port(g)
                .and_then(|p| p.child(0x8002))
                .map(|c| c.name.as_str()),
            Some("ib0.0002")
        );
        assert!(c.port(Guid(7)).is_none());
        c.port_mut(Guid(7)).umcast = Some(true);
        assert_eq!(c.ports.len(), 3);
        c.port_mut(Guid(7)).umcast = None;
        c.prune();
        assert_eq!(c.ports.len(), 2);
        assert_eq!(
            sample().ports[0].settings().describe(),
            vec![
                ("mode".to_string(), "connected".to_string()),
                ("mtu".to_string(), "65520".to_string())
            ]
        );
    }
}
