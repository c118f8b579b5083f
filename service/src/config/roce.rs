//! `/etc/rdma-manager/roce.toml`: the RoCE defaults of rdma_cm (`default_roce_mode`,
//! `default_roce_tos` in configfs) that rdma-managerd re-applies at start and whenever the
//! device appears. The kernel forgets them at reboot and when the device is re-added.
//!
//! Entries are keyed by node GUID and port number, never by device name: names change
//! (udev's rdma_rename, `rdma dev set NAME name NEW`), and rxe's node GUID is derived from its
//! network interface's MAC, so a re-created rxe is recognised.

use serde::{Deserialize, Serialize};

use super::{ConfigFile, Desired, Loaded};
use crate::model::{Guid, RoceMode};
use rdma_manager_dbus::text::quote_capped;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RocePortEntry {
    /// Node GUID as ibstat prints it (`0x0c42a1fffe5e2291`); the sysfs form
    /// (`0c42:a1ff:fe5e:2291`) is accepted too.
    pub node_guid: String,
    /// Port number, from 1.
    pub port: u32,
    /// `v1` or `v2`; absent: the mode is not managed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Type of service (0-255); absent: the ToS is not managed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tos: Option<u8>,
}

impl RocePortEntry {
    /// The node GUID, or why it is not one.
    pub fn guid(&self) -> Result<Guid, String> {
        parse_guid(&self.node_guid)
    }

    /// The mode, when one is set and valid.
    pub fn roce_mode(&self) -> Option<RoceMode> {
        self.mode
            .as_deref()
            .and_then(|m| RoceMode::parse_request(m).ok())
    }

    /// Whether the entry manages anything.
    pub fn is_empty(&self) -> bool {
        self.mode.is_none() && self.tos.is_none()
    }
}

/// A node GUID in ibstat (`0x` + 16 hex digits) or sysfs (`xxxx:xxxx:xxxx:xxxx`) form.
pub fn parse_guid(s: &str) -> Result<Guid, String> {
    let t = s.trim();
    let g = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        if hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!(
                "node_guid {s_q} is not a GUID (0x and 16 hex digits, or xxxx:xxxx:xxxx:xxxx)",
                s_q = quote_capped(s)
            ));
        }
        Guid(
            u64::from_str_radix(hex, 16)
                .map_err(|e| format!("node_guid {s_q}: {e}", s_q = quote_capped(s)))?,
        )
    } else {
        Guid::parse_sysfs(t).map_err(|_| {
            format!(
                "node_guid {s_q} is not a GUID (0x and 16 hex digits, or xxxx:xxxx:xxxx:xxxx)",
                s_q = quote_capped(s)
            )
        })?
    };
    if g.0 == 0 {
        return Err(format!(
            "node_guid {s_q} is zero, which no device has once it is set up",
            s_q = quote_capped(s)
        ));
    }
    Ok(g)
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoceSettings {
    #[serde(rename = "port", default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<RocePortEntry>,
}

impl RoceSettings {
    /// The entry of a port. Entries are validated, so GUIDs parse.
    pub fn entry(&self, guid: Guid, port: u32) -> Option<&RocePortEntry> {
        self.ports
            .iter()
            .find(|e| e.port == port && e.guid().ok() == Some(guid))
    }

    /// The entry of a port, made if absent.
    pub fn entry_mut(&mut self, guid: Guid, port: u32) -> &mut RocePortEntry {
        let pos = self
            .ports
            .iter()
            .position(|e| e.port == port && e.guid().ok() == Some(guid));
        let pos = match pos {
            Some(p) => p,
            None => {
                self.ports.push(RocePortEntry {
                    node_guid: guid.to_string(),
                    port,
                    mode: None,
                    tos: None,
                });
                self.ports.len() - 1
            }
        };
        &mut self.ports[pos]
    }
}

impl ConfigFile for RoceSettings {
    const PATH: &'static str = "/etc/rdma-manager/roce.toml";
    const HEADER: &'static str = "\
# RoCE defaults of rdma_cm (configfs default_roce_mode and default_roce_tos) that
# rdma-managerd re-applies at start and whenever the device appears; the kernel forgets them
# at reboot. Ports are identified by node GUID and port number, not by device name.
# Managed by rdma-managerd: change them with
#   busctl call org.rdmamanager.RdmaManager1 /org/rdmamanager/RdmaManager1/Device/N/Port/P \\
#     org.rdmamanager.RdmaManager1.Port SetRoceMode s v2
# (or SetRoceTos y TOS). Hand edits are read at the next start of the daemon.
# Both ends of a connection must use the same RoCE version.
";

    fn slot(desired: &Desired) -> &Loaded<Self> {
        &desired.roce
    }

    fn slot_mut(desired: &mut Desired) -> &mut Loaded<Self> {
        &mut desired.roce
    }

    fn validate(&self) -> Result<(), String> {
        let mut seen: Vec<(Guid, u32)> = Vec::with_capacity(self.ports.len());
        for (i, e) in self.ports.iter().enumerate() {
            let at = |what: String| format!("port entry {}: {what}", i + 1);
            let guid = e.guid().map_err(at)?;
            if e.port == 0 {
                return Err(at("port 0 does not exist; ports are numbered from 1".into()));
            }
            if let Some(m) = &e.mode {
                RoceMode::parse_request(m).map_err(at)?;
            }
            if seen.contains(&(guid, e.port)) {
                return Err(format!("node {} port {} is listed twice", guid, e.port));
            }
            seen.push((guid, e.port));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{parse, render, ConfigError};

    fn one() -> RoceSettings {
        RoceSettings {
            ports: vec![
                RocePortEntry {
                    node_guid: "0x0c42a1fffe5e2291".into(),
                    port: 1,
                    mode: Some("v2".into()),
                    tos: Some(106),
                },
                RocePortEntry {
                    node_guid: "0x5054000012345600".into(),
                    port: 1,
                    mode: None,
                    tos: Some(32),
                },
            ],
        }
    }

    #[test]
    fn round_trips_with_its_header() {
        let text = render(&one()).expect("render");
        assert!(text.starts_with("# RoCE defaults"), "{text}");
        assert!(
            text.contains(
                "[[port]]\nnode_guid = \"0x0c42a1fffe5e2291\"\nport = 1\nmode = \"v2\"\ntos = 106\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("[[port]]\nnode_guid = \"0x5054000012345600\"\nport = 1\ntos = 32\n"),
            "{text}"
        );
        assert_eq!(parse::<RoceSettings>(text.as_bytes()), Ok(one()));
        assert_eq!(parse::<RoceSettings>(b""), Ok(RoceSettings::default()));
    }

    #[test]
    fn hand_edits_in_other_spellings_are_understood() {
        let text = "# mine\n[[port]]\nnode_guid = \"0c42:a1ff:fe5e:2291\"\nport = 1\nmode = \"RoCE v2\"\n\n[[port]]\nnode_guid = \"0x0002C90300317850\"\nport = 2\nmode = \"1\"\n[[port]]\nnode_guid = \"0x1\"\nport = 1\n";
        let s = parse::<RoceSettings>(text.as_bytes()).expect("parsed");
        let g = Guid(0x0c42_a1ff_fe5e_2291);
        assert_eq!(
            s.entry(g, 1).and_then(|e| e.roce_mode()),
            Some(RoceMode::V2)
        );
        assert_eq!(
            s.entry(Guid(0x0002_c903_0031_7850), 2)
                .and_then(|e| e.roce_mode()),
            Some(RoceMode::V1)
        );
        assert!(s.entry(Guid(1), 1).is_some_and(|e| e.is_empty()));
        assert!(s.entry(g, 2).is_none());
    }

    #[test]
    fn refuses_what_it_cannot_apply() {
        for (bad, why) in [
            ("[[port]]\nnode_guid = \"mlx5_0\"\nport = 1\nmode = \"v2\"\n", "not a GUID"),
            ("[[port]]\nnode_guid = \"0x\"\nport = 1\n", "not a GUID"),
            ("[[port]]\nnode_guid = \"0x00000000000000000\"\nport = 1\n", "not a GUID"),
            ("[[port]]\nnode_guid = \"0x0\"\nport = 1\n", "zero"),
            ("[[port]]\nnode_guid = \"0x1\"\nport = 0\n", "port 0"),
            ("[[port]]\nnode_guid = \"0x1\"\nport = -1\n", "port"),
            ("[[port]]\nnode_guid = \"0x1\"\nport = 1\nmode = \"v3\"\n", "not known"),
            ("[[port]]\nnode_guid = \"0x1\"\nport = 1\nmode = \"\"\n", "no RoCE mode"),
            ("[[port]]\nnode_guid = \"0x1\"\nport = 1\ntos = 256\n", "tos"),
            ("[[port]]\nnode_guid = \"0x1\"\nport = 1\ntos = \"32\"\n", "tos"),
            ("[[port]]\nnode_guid = \"0x1\"\nport = 1\ndevice = \"rxe0\"\n", "unknown field"),
            ("[[port]]\nport = 1\nmode = \"v2\"\n", "node_guid"),
            (
                "[[port]]\nnode_guid = \"0x1\"\nport = 1\n[[port]]\nnode_guid = \"0000:0000:0000:0001\"\nport = 1\n",
                "twice",
            ),
            ("[port]\nnode_guid = \"0x1\"\n", "port"),
        ] {
            match parse::<RoceSettings>(bad.as_bytes()) {
                Err(ConfigError::Malformed { path, reason }) => {
                    assert_eq!(path, RoceSettings::PATH);
                    assert!(reason.contains(why), "{bad:?}: {reason}");
                    assert!(!reason.contains('\n'), "{reason}");
                }
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn entry_mut_adds_once() {
        let mut s = RoceSettings::default();
        s.entry_mut(Guid(7), 1).tos = Some(3);
        s.entry_mut(Guid(7), 1).mode = Some("v2".into());
        s.entry_mut(Guid(7), 2).tos = Some(4);
        assert_eq!(s.ports.len(), 2);
        assert_eq!(s.ports[0].node_guid, "0x0000000000000007");
        assert_eq!(s.validate(), Ok(()));
    }
}
