//! The Device `VfGuids` property: the VFs of an SR-IOV PF with the GUIDs its driver holds
//! and those `vf-guids.toml` remembers, by VF index.

use std::collections::BTreeMap;

use rdma_manager_dbus::types::VfGuid;
use rdma_manager_model::vf_guid::ip_form;

use crate::config::Desired;
use crate::engine::state::DeviceState;
use crate::model::Guid;

fn text(g: Option<Guid>) -> String {
    g.map(|g| ip_form(g.0)).unwrap_or_default()
}

/// Every VF the PF has enabled, and every VF remembered for it (enabled or not).
pub fn vf_guids(d: &DeviceState, config: &Desired) -> Vec<VfGuid> {
    let mut out: BTreeMap<u32, VfGuid> = BTreeMap::new();
    if let Some(pf) = &d.sriov {
        for v in &pf.vfs {
            out.insert(
                v.vf,
                VfGuid {
                    vf: v.vf,
                    pci_address: v.pci.clone().unwrap_or_default(),
                    node_guid: text(v.node_guid),
                    port_guid: text(v.port_guid),
                    ..VfGuid::default()
                },
            );
        }
    }
    if let (Ok(saved), Ok(guid)) = (&config.vf_guids, &d.snap.node_guid) {
        for e in saved.of_pf(*guid) {
            let Ok((node, port)) = e.guids() else {
                continue;
            };
            let entry = out.entry(e.vf).or_insert_with(|| VfGuid {
                vf: e.vf,
                ..VfGuid::default()
            });
            entry.remembered_node_guid = ip_form(node.0);
            entry.remembered_port_guid = ip_form(port.0);
        }
    }
    out.into_values().collect()
}
