//! Running rdma-managerd in the test process on a private bus, and reading its introspection.

use std::sync::Arc;

use rdma_managerd::dbus::server::{self, Bus, Service};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::SimHost;

use crate::bus::{tools_required, PrivateBus};

/// A private session-policy bus, or `None` (with the reason printed) when dbus-daemon cannot
/// run here; under `RDMA_MANAGER_REQUIRE_TOOLS=1` that is a failure instead.
pub fn session_bus_or_skip() -> Option<PrivateBus> {
    match PrivateBus::session() {
        Ok(b) => Some(b),
        Err(e) => {
            assert!(!tools_required(), "cannot start dbus-daemon: {e:#}");
            eprintln!("skipping: cannot start dbus-daemon: {e:#}");
            None
        }
    }
}

/// A service serving a simulated host. The service holds the host in reference cycles, so
/// the host's temporary tree is removed when this is dropped, not when the host is.
pub struct ServedSim {
    pub service: Service,
    /// Removed on drop unless the service was stopped with [`ServedSim::stop_keeping_tree`].
    tree: Option<std::path::PathBuf>,
}

impl Drop for ServedSim {
    fn drop(&mut self) {
        self.service.task.abort();
        if let Some(tree) = &self.tree {
            let _ = std::fs::remove_dir_all(tree);
        }
    }
}

impl ServedSim {
    /// Stops the service as stopping the daemon would (the bus name is released), and leaves
    /// the host's tree, with the files under its `etc/`, for a service started after it.
    pub async fn stop_keeping_tree(mut self) {
        self.tree = None;
        let _ = self
            .service
            .conn
            .release_name(rdma_manager_dbus::BUS_NAME)
            .await;
    }
}

/// Serves `sim` on `bus` under the well-known name, as the daemon would.
pub async fn serve_sim(
    bus: &PrivateBus,
    sim: &SimHost,
    config: EngineConfig,
) -> anyhow::Result<ServedSim> {
    let conn = server::connect(&Bus::Address(bus.address().to_string())).await?;
    let service = server::serve(conn, Arc::new(sim.clone()), true, config).await?;
    Ok(ServedSim {
        service,
        tree: Some(sim.root().to_path_buf()),
    })
}

/// The `<interface>` elements (name, text as introspected) of the object itself: zbus nests
/// the children's XML in a node's introspection, so only depth 1 counts.
pub fn own_interfaces(xml: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut cur: Option<(String, String)> = None;
    for line in xml.lines() {
        let t = line.trim();
        if cur.is_none() {
            if t.starts_with("<node") {
                depth += 1;
                if t.ends_with("/>") {
                    depth -= 1;
                }
                continue;
            }
            if t.starts_with("</node>") {
                depth -= 1;
                continue;
            }
        }
        if depth != 1 {
            continue;
        }
        if let Some(name) = attr(t, "<interface name=") {
            cur = Some((name, String::new()));
        }
        if let Some((_, body)) = cur.as_mut() {
            body.push_str(line.trim_end());
            body.push('\n');
            if t == "</interface>" {
                out.extend(cur.take());
            }
        }
    }
    out
}

/// The value of `key="..."` in a line of introspection XML.
pub fn attr(line: &str, key: &str) -> Option<String> {
    let rest = &line[line.find(key)? + key.len()..];
    let rest = rest.strip_prefix('"')?;
    Some(rest[..rest.find('"')?].to_string())
}
