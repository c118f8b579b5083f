//! What a node health check looks at (`CheckHealth`): the ports and devices as the engine
//! holds them, each port's state changes within the flap window (remembered as they were
//! seen), the MTU of each port's network interface, and the error counters read at both
//! ends of a counter window. The verdicts are the model's (`rdma_manager_model::health`).
//!
//! Everything but the MTU of a non-IPoIB netdev and the counters comes from the published
//! state in one job: a check of a large host costs no kernel read for the states, rates and
//! firmware, which is what makes it cheaper than one `ibstat` of every device.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use rdma_manager_model::health::{DeviceFacts, Health, HostFacts, PortFacts};

use super::{EngineHandle, OpError};
use crate::model::names::validate_netdev_name;
use crate::model::DeviceKind;

/// A port whose MTU is read from its netdev after the job (no IPoIB interface holds it).
struct MtuRead {
    port: usize,
    netdev: String,
}

impl EngineHandle {
    /// The facts `health` needs, gathered now; waits out the counter window when it asks
    /// for one.
    pub async fn health_facts(&self, health: &Health) -> Result<HostFacts, OpError> {
        let flap_window = health
            .flaps
            .as_ref()
            .map(|f| Duration::from_secs(u64::from(f.window_seconds)));
        let wants_mtu = health.ports.iter().flatten().any(|p| p.mtu.is_some());
        let (mut facts, mtu_reads) = self
            .call(move |e| Box::pin(async move { Ok(facts_of(&e.state, flap_window, wants_mtu)) }))
            .await?;
        for r in mtu_reads {
            facts.ports[r.port].mtu = self.netdev_mtu(&r.netdev).await;
        }
        if let Some(w) = &health.error_counters {
            let names = w.names();
            let before = self.read_error_counters(&facts, &names).await;
            tokio::time::sleep(Duration::from_secs(u64::from(w.window_seconds))).await;
            let after = self.read_error_counters(&facts, &names).await;
            for ((p, b), a) in facts.ports.iter_mut().zip(before).zip(after) {
                p.counters = Some(match (b, a) {
                    (Ok(b), Ok(a)) => Ok(b
                        .into_iter()
                        .filter_map(|(k, v)| a.get(&k).map(|w| (k, (v, *w))))
                        .collect()),
                    (Err(e), _) | (_, Err(e)) => Err(e),
                });
            }
        }
        Ok(facts)
    }

    /// The netdev's MTU from sysfs, and which netdev it is; `None` when it cannot be read.
    async fn netdev_mtu(&self, netdev: &str) -> Option<(u32, String)> {
        // A name from the kernel; checked anyway, as it becomes a path.
        validate_netdev_name(netdev).ok()?;
        let path = PathBuf::from(format!("/sys/class/net/{netdev}/mtu"));
        let bytes = self.host.read_file(&path).await.ok()??;
        let mtu = std::str::from_utf8(&bytes).ok()?.trim().parse().ok()?;
        Some((mtu, format!("netdev {netdev}")))
    }

    /// The `names` counters of every port now, by name (`hw.` for the driver's).
    async fn read_error_counters(
        &self,
        facts: &HostFacts,
        names: &[String],
    ) -> Vec<Result<BTreeMap<String, u64>, String>> {
        let mut out = Vec::with_capacity(facts.ports.len());
        for p in &facts.ports {
            let read = self.host.read_counters(&p.device, p.port).await;
            out.push(read.map_err(|e| e.to_string()).map(|snap| {
                let mut found = BTreeMap::new();
                for n in names {
                    let v = match n.strip_prefix("hw.") {
                        Some(hw) => snap.hw.iter().find(|(k, _)| k == hw),
                        None => snap.pma.iter().find(|(k, _)| k == n),
                    };
                    if let Some((_, v)) = v {
                        found.insert(n.clone(), *v);
                    }
                }
                found
            }));
        }
        out
    }
}

/// The facts the engine holds, and the ports whose MTU is read from their netdev.
fn facts_of(
    state: &super::ObservedState,
    flap_window: Option<Duration>,
    wants_mtu: bool,
) -> (HostFacts, Vec<MtuRead>) {
    let mut facts = HostFacts::default();
    let mut reads = Vec::new();
    let mut devices: Vec<&super::DeviceState> = state.devices.values().collect();
    devices.sort_by(|a, b| a.name().cmp(b.name()));
    let text = |f: &crate::model::attr::Field<String>| f.as_ref().cloned().unwrap_or_default();
    for d in devices {
        facts.devices.push(DeviceFacts {
            name: d.name().to_string(),
            hardware: d.snap.kind == DeviceKind::Hardware,
            fw_version: text(&d.snap.fw_ver),
            board_id: text(&d.snap.board_id),
            hca_type: text(&d.snap.hca_type),
        });
        for p in &d.snap.ports {
            let netdev = d.sources.get(&p.number).and_then(|s| s.netdev.clone());
            let ipoib = netdev.as_deref().and_then(|n| {
                state
                    .ipoib
                    .values()
                    .find(|i| i.snap.name == n && i.port == Some((d.index, p.number)))
            });
            let mtu = match (wants_mtu, ipoib) {
                (false, _) => None,
                (true, Some(i)) => i
                    .snap
                    .mtu
                    .as_ref()
                    .ok()
                    .map(|m| (*m, format!("IPoIB interface {}", i.snap.name))),
                (true, None) => {
                    if let Some(n) = &netdev {
                        reads.push(MtuRead {
                            port: facts.ports.len(),
                            netdev: n.clone(),
                        });
                    }
                    None
                }
            };
            facts.ports.push(PortFacts {
                device: d.name().to_string(),
                port: p.number,
                state: p.state.as_ref().ok().map(|s| s.sysfs_name().to_string()),
                phys_state: p
                    .phys_state
                    .as_ref()
                    .ok()
                    .map(|s| s.sysfs_name().to_string()),
                rate_gbps: p.rate.as_ref().ok().map(|r| f64::from(r.deci_gbps) / 10.0),
                link_layer: p.link_layer.as_ref().ok().map(|l| l.as_str().to_string()),
                mtu,
                flaps: flap_window.map(|w| state.state_changes_within(d.index, p.number, w)),
                counters: None,
            });
        }
    }
    (facts, reads)
}
