//! Comparisons with the reference tools inside the kernel lab: iproute2's `rdma` and
//! rdma-core's `ibstat`. Each check returns the disagreements it found.

use std::process::Command;

use rdma_managerd::kernel::{NlDevice, NlPort};
use rdma_managerd::model::{NetdevSnapshot, NodeType};

/// Where the tools are (on PATH inside the lab).
pub struct Reference {
    pub rdma: String,
    pub ibstat: String,
}

fn run(cmd: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| format!("{cmd} {}: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd} {} exited {}: {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn json_array(text: &str) -> Result<Vec<serde_json::Value>, String> {
    match serde_json::from_str::<serde_json::Value>(text.trim()) {
        Ok(serde_json::Value::Array(a)) => Ok(a),
        Ok(other) => Err(format!("expected a JSON array, got {other}")),
        // iproute2 prints nothing at all (not "[]") when there is nothing to show.
        Err(_) if text.trim().is_empty() => Ok(Vec::new()),
        Err(e) => Err(format!("bad JSON from rdma: {e}: {text}")),
    }
}

/// iproute2 rdma/link.c state names, indexed by the kernel's numbers.
fn link_state_name(n: u8) -> &'static str {
    ["NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"]
        .get(n as usize)
        .copied()
        .unwrap_or("UNKNOWN")
}

/// iproute2 rdma/link.c physical state names, indexed by the kernel's numbers.
fn phys_state_name(n: u8) -> &'static str {
    [
        "NOP",
        "SLEEP",
        "POLLING",
        "DISABLED",
        "ARMED",
        "LINK_UP",
        "LINK_ERROR_RECOVER",
        "PHY_TEST",
        "UNKNOWN",
        "OPA_OFFLINE",
        "UNKNOWN",
        "OPA_LINK_DOWN",
    ]
    .get(n as usize)
    .copied()
    .unwrap_or("UNKNOWN")
}

impl Reference {
    pub fn from_path() -> Reference {
        Reference {
            rdma: "rdma".into(),
            ibstat: "ibstat".into(),
        }
    }

    /// `rdma -j dev show` against our GET dump.
    pub fn check_dev_show(&self, ours: &[NlDevice]) -> Vec<String> {
        let theirs = match run(&self.rdma, &["-j", "dev", "show"]).and_then(|t| json_array(&t)) {
            Ok(v) => v,
            Err(e) => return vec![e],
        };
        let mut fails = Vec::new();
        if theirs.len() != ours.len() {
            fails.push(format!(
                "rdma dev show lists {} devices, we list {}",
                theirs.len(),
                ours.len()
            ));
        }
        for (t, o) in theirs.iter().zip(ours) {
            let want = serde_json::json!({
                "ifindex": o.index,
                "ifname": o.name,
                "node_type": o.node_type.and_then(|n| NodeType::from_number(u32::from(n))).map(|n| n.rdma_tool_name()),
                "node_guid": o.node_guid.map(|g| g.colon_form()),
                "sys_image_guid": o.sys_image_guid.map(|g| g.colon_form()),
            });
            for key in [
                "ifindex",
                "ifname",
                "node_type",
                "node_guid",
                "sys_image_guid",
            ] {
                if t.get(key) != want.get(key) {
                    fails.push(format!(
                        "rdma dev show {key}: tool {:?}, ours {:?}",
                        t.get(key),
                        want.get(key)
                    ));
                }
            }
        }
        fails
    }

    /// `rdma -j link show` against our PORT_GET dump.
    pub fn check_link_show(&self, ours: &[NlPort], netdevs: &[NetdevSnapshot]) -> Vec<String> {
        let theirs = match run(&self.rdma, &["-j", "link", "show"]).and_then(|t| json_array(&t)) {
            Ok(v) => v,
            Err(e) => return vec![e],
        };
        let mut fails = Vec::new();
        if theirs.len() != ours.len() {
            fails.push(format!(
                "rdma link show lists {} ports, we list {}",
                theirs.len(),
                ours.len()
            ));
        }
        for (t, o) in theirs.iter().zip(ours) {
            let ifindex_of = |n: &str| {
                netdevs
                    .iter()
                    .find(|x| x.name == n)
                    .and_then(|x| x.ifindex.clone().ok())
            };
            let want = serde_json::json!({
                "ifindex": o.dev_index,
                "ifname": o.dev_name,
                "port": o.port,
                "state": o.state.map(link_state_name),
                "physical_state": o.phys_state.map(phys_state_name),
                "netdev": o.netdev_name,
                "netdev_index": o.netdev_index,
            });
            for key in [
                "ifindex",
                "ifname",
                "port",
                "state",
                "physical_state",
                "netdev",
                "netdev_index",
            ] {
                if t.get(key) != want.get(key) {
                    fails.push(format!(
                        "rdma link show {key}: tool {:?}, ours {:?}",
                        t.get(key),
                        want.get(key)
                    ));
                }
            }
            if let (Some(n), Some(i)) = (&o.netdev_name, o.netdev_index) {
                if ifindex_of(n) != Some(i) {
                    fails.push(format!(
                        "netdev {n}: nldev says ifindex {i}, sysfs {:?}",
                        ifindex_of(n)
                    ));
                }
            }
        }
        fails
    }

    /// `ibstat` byte for byte against our rendering of the same state.
    pub fn check_ibstat(&self, ours: &str) -> Vec<String> {
        let theirs = match Command::new(&self.ibstat).output() {
            Ok(o) => String::from_utf8_lossy(&o.stdout).into_owned(),
            Err(e) => return vec![format!("ibstat: {e}")],
        };
        if theirs == ours {
            return Vec::new();
        }
        vec![format!(
            "ibstat differs:\n--- ibstat\n{theirs}\n--- ours\n{ours}\n---"
        )]
    }
}
