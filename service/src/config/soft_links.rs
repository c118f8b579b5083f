//! `/etc/rdma-manager/soft-links.toml`: the rxe and siw links to re-create at start and when
//! their network interface appears. rdma-core has no such file: without it a soft link is
//! gone after a reboot.

use serde::{Deserialize, Serialize};

use super::{ConfigFile, Desired, Loaded};
use crate::model::names::{validate_netdev_name, validate_rdma_name};
use crate::model::SoftLinkType;
use rdma_manager_dbus::text::quote_capped;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SoftLinkEntry {
    /// RDMA device name.
    pub name: String,
    #[serde(rename = "type")]
    pub kind: SoftLinkType,
    /// The network interface it runs over.
    pub netdev: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SoftLinks {
    #[serde(rename = "link", default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<SoftLinkEntry>,
}

impl SoftLinks {
    pub fn by_name(&self, name: &str) -> Option<&SoftLinkEntry> {
        self.links.iter().find(|l| l.name == name)
    }

    /// The file after the netdev `old` carrying link `link` was renamed to `new`: the entry
    /// follows its netdev (the kernel's rxe and siw do). Another entry that named `new` named
    /// an interface that is not there (the name was free for the rename) and would now
    /// claim the same netdev twice: it is dropped. `None` when nothing changes.
    pub fn after_netdev_rename(&self, link: &str, old: &str, new: &str) -> Option<SoftLinks> {
        if old == new || !self.links.iter().any(|l| l.name == link && l.netdev == old) {
            return None;
        }
        let mut out = self.clone();
        out.links.retain(|l| l.name == link || l.netdev != new);
        for l in out.links.iter_mut().filter(|l| l.name == link) {
            l.netdev = new.to_string();
        }
        Some(out)
    }
}

impl ConfigFile for SoftLinks {
    const PATH: &'static str = "/etc/rdma-manager/soft-links.toml";
    const HEADER: &'static str = "\
# Soft RDMA links (Soft-RoCE rxe, Soft-iWARP siw) that rdma-managerd re-creates at start and
# whenever their network interface appears, as `rdma link add NAME type TYPE netdev NETDEV`.
# Managed by rdma-managerd: change it with
#   busctl call org.rdmamanager.RdmaManager1 /org/rdmamanager/RdmaManager1 \\
#     org.rdmamanager.RdmaManager1 AddSoftLink sss NAME rxe NETDEV
# (or RemoveSoftLink s NAME). Hand edits are read at the next start of the daemon.
";

    fn slot(desired: &Desired) -> &Loaded<Self> {
        &desired.soft_links
    }

    fn slot_mut(desired: &mut Desired) -> &mut Loaded<Self> {
        &mut desired.soft_links
    }

    fn validate(&self) -> Result<(), String> {
        for (i, l) in self.links.iter().enumerate() {
            validate_rdma_name(&l.name).map_err(|e| format!("link {}: name: {e}", i + 1))?;
            validate_netdev_name(&l.netdev)
                .map_err(|e| format!("link {} ({}): netdev: {e}", i + 1, quote_capped(&l.name)))?;
            if self.links[..i].iter().any(|o| o.name == l.name) {
                return Err(format!("link {} is listed twice", quote_capped(&l.name)));
            }
            if self.links[..i].iter().any(|o| o.netdev == l.netdev) {
                return Err(format!(
                    "netdev {} is listed for two links; a netdev carries at most one",
                    quote_capped(&l.netdev)
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{parse, render, ConfigError};

    fn two() -> SoftLinks {
        SoftLinks {
            links: vec![
                SoftLinkEntry {
                    name: "rxe0".into(),
                    kind: SoftLinkType::Rxe,
                    netdev: "eth0".into(),
                },
                SoftLinkEntry {
                    name: "siw_lab".into(),
                    kind: SoftLinkType::Siw,
                    netdev: "veth1".into(),
                },
            ],
        }
    }

    #[test]
    fn round_trips_with_its_header() {
        let text = render(&two()).expect("render");
        assert!(text.starts_with("# Soft RDMA links"), "{text}");
        assert!(text.contains("[[link]]\nname = \"rxe0\"\ntype = \"rxe\"\nnetdev = \"eth0\"\n"));
        assert_eq!(parse::<SoftLinks>(text.as_bytes()), Ok(two()));
    }

    #[test]
    fn an_entry_follows_its_netdevs_rename() {
        let c = two();
        let after = c
            .after_netdev_rename("rxe0", "eth0", "lan0")
            .expect("changed");
        assert_eq!(
            after.by_name("rxe0").map(|l| l.netdev.as_str()),
            Some("lan0")
        );
        assert_eq!(after.by_name("siw_lab"), c.by_name("siw_lab"));
        // Another link's netdev, an unrelated link, or no rename at all: nothing changes.
        assert_eq!(c.after_netdev_rename("rxe0", "veth1", "x"), None);
        assert_eq!(c.after_netdev_rename("rxe9", "eth0", "x"), None);
        assert_eq!(c.after_netdev_rename("rxe0", "eth0", "eth0"), None);
        // An entry naming the new name (an interface that was not there) gives way, so the
        // file stays valid.
        let after = c
            .after_netdev_rename("rxe0", "eth0", "veth1")
            .expect("changed");
        assert_eq!(after.links.len(), 1);
        assert_eq!(
            after.by_name("rxe0").map(|l| l.netdev.as_str()),
            Some("veth1")
        );
        assert_eq!(after.validate(), Ok(()));
    }

    #[test]
    fn empty_file_and_header_only_are_empty() {
        assert_eq!(parse::<SoftLinks>(b""), Ok(SoftLinks::default()));
        let text = render(&SoftLinks::default()).expect("render");
        assert_eq!(
            parse::<SoftLinks>(text.as_bytes()),
            Ok(SoftLinks::default())
        );
    }

    #[test]
    fn refuses_what_could_inject_or_conflict() {
        for (bad, why) in [
            ("[[link]]\nname = \"a\\\"b\"\ntype = \"rxe\"\nnetdev = \"eth0\"\n", "character"),
            ("[[link]]\nname = \"rxe0\"\ntype = \"rxe\"\nnetdev = \"../x\"\n", "netdev"),
            ("[[link]]\nname = \"rxe0\"\ntype = \"ib\"\nnetdev = \"eth0\"\n", "variant"),
            ("[[link]]\nname = \"rxe0\"\ntype = \"rxe\"\nnetdev = \"eth0\"\nextra = 1\n", "unknown field"),
            (
                "[[link]]\nname = \"a\"\ntype = \"rxe\"\nnetdev = \"eth0\"\n[[link]]\nname = \"a\"\ntype = \"siw\"\nnetdev = \"eth1\"\n",
                "twice",
            ),
            (
                "[[link]]\nname = \"a\"\ntype = \"rxe\"\nnetdev = \"eth0\"\n[[link]]\nname = \"b\"\ntype = \"siw\"\nnetdev = \"eth0\"\n",
                "two links",
            ),
            ("[[link]\n", "expected"),
        ] {
            match parse::<SoftLinks>(bad.as_bytes()) {
                Err(ConfigError::Malformed { path, reason }) => {
                    assert_eq!(path, SoftLinks::PATH);
                    assert!(reason.contains(why), "{bad:?}: {reason}");
                    assert!(!reason.contains('\n'), "{reason}");
                }
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
    }
}
