//! `/etc/rdma-manager/vf-guids.toml`: the node and port GUIDs of SR-IOV VFs that
//! rdma-managerd sets again whenever the PF or the VF appears. The PF's driver forgets them
//! when the VFs are destroyed (`sriov_numvfs` set to 0), at reboot and on a driver reload.
//!
//! Entries are keyed by the PF's node GUID and the VF index. The node GUID is burned into
//! the adapter: it survives renames (`rdma_rename`, `rdma dev set`), a move to another PCI
//! slot and the netdev's renames, where a device name, a PCI address or a netdev name would
//! not. Each PCI function of mlx5 has a node GUID of its own, so a dual-port adapter's two
//! PFs are told apart; the PF's port GUID would do the same for one-port functions only.

use serde::{Deserialize, Serialize};

use super::roce::parse_guid;
use super::{ConfigFile, Desired, Loaded};
use crate::model::Guid;
use rdma_manager_model::vf_guid::{ip_form, parse_vf_guid, GuidKind};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VfGuidEntry {
    /// The PF's node GUID as ibstat prints it (`0xb8599f0300d4e62a`); the sysfs form is
    /// accepted too.
    pub pf_node_guid: String,
    /// The VF index (`ip link set <pf> vf N`), from 0.
    pub vf: u32,
    /// As `ip link` takes it: `00:11:22:33:44:55:66:77`; the sysfs form is accepted too.
    pub node_guid: String,
    pub port_guid: String,
}

impl VfGuidEntry {
    pub fn pf(&self) -> Result<Guid, String> {
        parse_guid(&self.pf_node_guid)
    }

    /// Both GUIDs, or why one is not usable.
    pub fn guids(&self) -> Result<(Guid, Guid), String> {
        let node = parse_vf_guid(GuidKind::Node, &self.node_guid).map_err(|e| e.to_string())?;
        let port = parse_vf_guid(GuidKind::Port, &self.port_guid).map_err(|e| e.to_string())?;
        Ok((Guid(node), Guid(port)))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VfGuidSettings {
    #[serde(rename = "vf", default, skip_serializing_if = "Vec::is_empty")]
    pub vfs: Vec<VfGuidEntry>,
}

impl VfGuidSettings {
    /// The entry of a VF. Entries are validated, so GUIDs parse.
    pub fn entry(&self, pf: Guid, vf: u32) -> Option<&VfGuidEntry> {
        self.vfs
            .iter()
            .find(|e| e.vf == vf && e.pf().ok() == Some(pf))
    }

    /// Every entry of a PF.
    pub fn of_pf(&self, pf: Guid) -> impl Iterator<Item = &VfGuidEntry> {
        self.vfs.iter().filter(move |e| e.pf().ok() == Some(pf))
    }

    /// Remembers a VF's GUIDs, replacing what was remembered.
    pub fn set(&mut self, pf: Guid, vf: u32, node: Guid, port: Guid) {
        let entry = VfGuidEntry {
            pf_node_guid: pf.to_string(),
            vf,
            node_guid: ip_form(node.0),
            port_guid: ip_form(port.0),
        };
        match self
            .vfs
            .iter_mut()
            .find(|e| e.vf == vf && e.pf().ok() == Some(pf))
        {
            Some(e) => *e = entry,
            None => self.vfs.push(entry),
        }
    }

    /// Forgets a VF; whether it was remembered.
    pub fn remove(&mut self, pf: Guid, vf: u32) -> bool {
        let before = self.vfs.len();
        self.vfs
            .retain(|e| !(e.vf == vf && e.pf().ok() == Some(pf)));
        self.vfs.len() != before
    }
}

impl ConfigFile for VfGuidSettings {
    const PATH: &'static str = "/etc/rdma-manager/vf-guids.toml";
    const HEADER: &'static str = "\
# Node and port GUIDs of SR-IOV InfiniBand VFs that rdma-managerd sets again (then rebinds
# the VF) whenever the PF or the VF appears; the driver forgets them when the VFs are
# destroyed and at reboot. VFs are identified by their PF's node GUID and the VF index.
# Managed by rdma-managerd: change them with
#   rdma-cli vf-guid set DEVICE VF NODE_GUID PORT_GUID
# or the Device's SetVfGuids method. Hand edits are read at the next start of the daemon.
";

    fn slot(desired: &Desired) -> &Loaded<Self> {
        &desired.vf_guids
    }

    fn slot_mut(desired: &mut Desired) -> &mut Loaded<Self> {
        &mut desired.vf_guids
    }

    fn validate(&self) -> Result<(), String> {
        let mut seen: Vec<(Guid, u32)> = Vec::with_capacity(self.vfs.len());
        let mut guids: Vec<Guid> = Vec::with_capacity(self.vfs.len() * 2);
        for (i, e) in self.vfs.iter().enumerate() {
            let at = |what: String| format!("vf entry {}: {what}", i + 1);
            let pf = e.pf().map_err(at)?;
            let (node, port) = e.guids().map_err(at)?;
            if seen.contains(&(pf, e.vf)) {
                return Err(format!("VF {} of node {pf} is listed twice", e.vf));
            }
            seen.push((pf, e.vf));
            // A VF may have one GUID as node and port GUID; two VFs may not share one.
            let mine: &[Guid] = if node == port { &[node] } else { &[node, port] };
            if let Some(g) = mine.iter().find(|g| guids.contains(g)) {
                return Err(at(format!(
                    "the GUID {} is given to another VF too",
                    ip_form(g.0)
                )));
            }
            guids.extend_from_slice(mine);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{parse, render, ConfigError};

    #[test]
    fn round_trips_with_its_header() {
        let mut s = VfGuidSettings::default();
        s.set(Guid(0xb859_9f03_00d4_e62a), 1, Guid(0x11), Guid(0x12));
        let text = render(&s).expect("render");
        assert!(text.starts_with("# Node and port GUIDs"), "{text}");
        assert!(
            text.contains("[[vf]]\npf_node_guid = \"0xb8599f0300d4e62a\"\nvf = 1\nnode_guid = \"00:00:00:00:00:00:00:11\"\nport_guid = \"00:00:00:00:00:00:00:12\"\n"),
            "{text}"
        );
        assert_eq!(parse::<VfGuidSettings>(text.as_bytes()), Ok(s.clone()));
        s.set(Guid(0xb859_9f03_00d4_e62a), 1, Guid(0x21), Guid(0x21));
        assert_eq!(s.vfs.len(), 1, "replaced");
        assert!(s.remove(Guid(0xb859_9f03_00d4_e62a), 1));
        assert!(!s.remove(Guid(0xb859_9f03_00d4_e62a), 1));
    }

    #[test]
    fn refuses_what_it_cannot_apply() {
        let ok = "pf_node_guid = \"b859:9f03:00d4:e62a\"\nvf = 0\n";
        for (bad, why) in [
            (format!("[[vf]]\n{ok}node_guid = \"0\"\nport_guid = \"00:00:00:00:00:00:00:01\"\n"), "not a node GUID"),
            (format!("[[vf]]\n{ok}node_guid = \"00:00:00:00:00:00:00:00\"\nport_guid = \"00:00:00:00:00:00:00:01\"\n"), "zero"),
            (format!("[[vf]]\n{ok}node_guid = \"ff:ff:ff:ff:ff:ff:ff:ff\"\nport_guid = \"00:00:00:00:00:00:00:01\"\n"), "no GUID"),
            (format!("[[vf]]\n{ok}node_guid = \"00:00:00:00:00:00:00:01\"\nport_guid = \"00:00:00:00:00:00:00:02\"\n[[vf]]\n{ok}node_guid = \"00:00:00:00:00:00:00:03\"\nport_guid = \"00:00:00:00:00:00:00:04\"\n"), "twice"),
            (format!("[[vf]]\n{ok}node_guid = \"00:00:00:00:00:00:00:01\"\nport_guid = \"00:00:00:00:00:00:00:02\"\n[[vf]]\npf_node_guid = \"0x1\"\nvf = 0\nnode_guid = \"00:00:00:00:00:00:00:02\"\nport_guid = \"00:00:00:00:00:00:00:05\"\n"), "another VF"),
            (format!("[[vf]]\n{ok}node_guid = \"00:00:00:00:00:00:00:01\"\nport_guid = \"00:00:00:00:00:00:00:02\"\ndevice = \"mlx5_1\"\n"), "unknown field"),
        ] {
            match parse::<VfGuidSettings>(bad.as_bytes()) {
                Err(ConfigError::Malformed { path, reason }) => {
                    assert_eq!(path, VfGuidSettings::PATH);
                    assert!(reason.contains(why), "{bad:?}: {reason}");
                }
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
        let same = format!("[[vf]]\n{ok}node_guid = \"00:00:00:00:00:00:00:01\"\nport_guid = \"0000:0000:0000:0001\"\n");
        assert!(
            parse::<VfGuidSettings>(same.as_bytes()).is_ok(),
            "one GUID for both"
        );
    }
}
