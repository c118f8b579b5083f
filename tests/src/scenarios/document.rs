//! The `doc` lines of a transcript: the devices, ports and IPoIB interfaces of the JSON
//! document of docs/JSON.md, built as `rdma-managerd show --json` builds it (the host read as
//! the daemon reads it at start, rendered by the functions the daemon publishes with), one
//! line per property:
//!
//! ```text
//! doc Device/0 Device.NodeGuid "0x000000fffe000001"
//! doc Device/0/Port/1 Port.State "ACTIVE"
//! ```
//!
//! The object path is written without the root's `/org/rdmamanager/RdmaManager1/`, the
//! interface without `org.rdmamanager.RdmaManager1.`, the value as the document's compact JSON.
//! The root and the Host object are left out: they hold the daemon's version and settings and
//! the host's setup files, not what the kernel reports, and differ between the lab's guest and
//! the simulated host by design.

use rdma_manager_dbus::ROOT_PATH;
use rdma_managerd::kernel::{Host, HostError};
use rdma_managerd::system::unreachable::Unreachable;
use serde_json::Value as Json;

/// The prefix every interface name of the service has.
const INTERFACE_PREFIX: &str = "org.rdmamanager.RdmaManager1.";

/// Objects whose path (below the root) starts with one of these are recorded.
const RECORDED: [&str; 2] = ["Device/", "Ipoib/"];

/// The `doc` lines of the host as it is now, in byte order of path, interface and property.
pub async fn doc_lines(host: &dyn Host) -> Result<Vec<String>, HostError> {
    // Host setup's unit fields (systemd, firewalld) belong to the Host object, not recorded:
    // no bus is asked.
    let (state, _) = rdma_managerd::engine::read_host(host, &Unreachable).await?;
    // Simulated and the sampling period are the root's, not recorded.
    let doc = rdma_managerd::dbus::document::document(&state, false, 0).into_json();
    Ok(lines(&doc))
}

/// The `doc` lines of a document (its `objects` member).
pub fn lines(doc: &Json) -> Vec<String> {
    let mut out = Vec::new();
    let Some(objects) = doc.get("objects").and_then(Json::as_object) else {
        return out;
    };
    let mut objects: Vec<_> = objects
        .iter()
        .filter_map(|(path, ifaces)| {
            let rel = path.strip_prefix(ROOT_PATH)?.strip_prefix('/')?;
            RECORDED
                .iter()
                .any(|p| rel.starts_with(p))
                .then_some((rel, ifaces))
        })
        .collect();
    objects.sort_by(|a, b| a.0.cmp(b.0));
    for (rel, ifaces) in objects {
        let Some(ifaces) = ifaces.as_object() else {
            continue;
        };
        let mut ifaces: Vec<_> = ifaces.iter().collect();
        ifaces.sort_by(|a, b| a.0.cmp(b.0));
        for (iface, props) in ifaces {
            let iface = iface.strip_prefix(INTERFACE_PREFIX).unwrap_or(iface);
            let Some(props) = props.as_object() else {
                continue;
            };
            let mut props: Vec<_> = props.iter().collect();
            props.sort_by(|a, b| a.0.cmp(b.0));
            for (name, value) in props {
                out.push(format!("doc {rel} {iface}.{name} {value}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn devices_ports_and_ipoib_one_property_a_line_root_and_host_left_out() {
        let doc = json!({
            "version": 1,
            "objects": {
                "/org/rdmamanager/RdmaManager1": {
                    "org.rdmamanager.RdmaManager1": {"Version": "0.1.0"}
                },
                "/org/rdmamanager/RdmaManager1/Host": {
                    "org.rdmamanager.RdmaManager1.Host": {"Modules": []}
                },
                "/org/rdmamanager/RdmaManager1/Device/0/Port/1": {
                    "org.rdmamanager.RdmaManager1.Port": {"State": "ACTIVE", "Lid": 0}
                },
                "/org/rdmamanager/RdmaManager1/Device/0": {
                    "org.rdmamanager.RdmaManager1.Device": {
                        "Name": "rxe0",
                        "Unreadable": {"HcaType": "not present"}
                    }
                },
                "/org/rdmamanager/RdmaManager1/Ipoib/7": {
                    "org.rdmamanager.RdmaManager1.Ipoib": {"Pkeys": [[0, 65535]]}
                }
            }
        });
        assert_eq!(
            lines(&doc),
            [
                "doc Device/0 Device.Name \"rxe0\"",
                "doc Device/0 Device.Unreadable {\"HcaType\":\"not present\"}",
                "doc Device/0/Port/1 Port.Lid 0",
                "doc Device/0/Port/1 Port.State \"ACTIVE\"",
                "doc Ipoib/7 Ipoib.Pkeys [[0,65535]]",
            ]
        );
    }
}
