//! `/etc/rdma-manager/qos.toml`: the QoS profiles of RoCE ports (DCB trust, PFC, ETS, the
//! DSCP map; mlx5's traffic class and ECN) that rdma-managerd re-applies at start and
//! whenever the device appears: the driver forgets them when the device is reset or the
//! host reboots. Entries are keyed by node GUID and port number, as in `roce.toml`.

use serde::{Deserialize, Serialize};

use super::roce::parse_guid;
use super::{ConfigFile, Desired, Loaded};
use crate::model::Guid;
use rdma_manager_model::qos::QosProfile;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QosPortEntry {
    /// Node GUID as ibstat prints it (`0x0c42a1fffe5e2291`).
    pub node_guid: String,
    /// Port number, from 1.
    pub port: u32,
    pub qos: QosProfile,
}

impl QosPortEntry {
    pub fn guid(&self) -> Result<Guid, String> {
        parse_guid(&self.node_guid)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QosSettings {
    #[serde(rename = "port", default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<QosPortEntry>,
}

impl QosSettings {
    pub fn entry(&self, guid: Guid, port: u32) -> Option<&QosPortEntry> {
        self.ports
            .iter()
            .find(|e| e.port == port && e.guid().ok() == Some(guid))
    }

    /// Sets (replaces) the profile of a port.
    pub fn set(&mut self, guid: Guid, port: u32, qos: QosProfile) {
        match self
            .ports
            .iter_mut()
            .find(|e| e.port == port && e.guid().ok() == Some(guid))
        {
            Some(e) => e.qos = qos,
            None => self.ports.push(QosPortEntry {
                node_guid: guid.to_string(),
                port,
                qos,
            }),
        }
    }
}

impl ConfigFile for QosSettings {
    const PATH: &'static str = "/etc/rdma-manager/qos.toml";
    const HEADER: &'static str = "\
# QoS profiles of RoCE ports (DCB trust, PFC, ETS and DSCP map; mlx5's RoCE traffic class
# and ECN) that rdma-managerd re-applies at start and whenever the device appears. Ports are
# identified by node GUID and port number, not by device name.
# Managed by rdma-managerd: change them with `rdma-cli qos set` or Port.SetQosProfile.
# Hand edits are read at the next start of the daemon.
";

    fn slot(desired: &Desired) -> &Loaded<Self> {
        &desired.qos
    }

    fn slot_mut(desired: &mut Desired) -> &mut Loaded<Self> {
        &mut desired.qos
    }

    fn validate(&self) -> Result<(), String> {
        let mut seen: Vec<(Guid, u32)> = Vec::with_capacity(self.ports.len());
        for (i, e) in self.ports.iter().enumerate() {
            let at = |what: String| format!("port entry {}: {what}", i + 1);
            let guid = e.guid().map_err(at)?;
            if e.port == 0 {
                return Err(at("port 0 does not exist; ports are numbered from 1".into()));
            }
            e.qos.check().map_err(|q| at(q.0))?;
            if seen.contains(&(guid, e.port)) {
                return Err(at(format!(
                    "{} port {} is listed twice",
                    e.node_guid, e.port
                )));
            }
            seen.push((guid, e.port));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdma_manager_model::qos::Trust;

    #[test]
    fn round_trips_and_validates() {
        let mut s = QosSettings::default();
        let mut q = QosProfile {
            trust: Trust::Dscp,
            pfc: vec![3],
            ..QosProfile::default()
        };
        q.dscp.insert(26, 3);
        s.set(Guid(0x0c42_a1ff_fe5e_2291), 1, q);
        let text = super::super::render(&s).unwrap();
        let back: QosSettings = super::super::parse(text.as_bytes()).unwrap();
        assert_eq!(back, s);
        s.ports[0].qos.pfc = vec![9];
        assert!(s.validate().unwrap_err().contains("priority 9"));
    }
}
