//! The bad-input harness: a method called with each class of bad input (empty, too long,
//! wrong characters, `../` and `/`, quotes and newlines, out-of-range numbers, unknown or
//! vanished objects, a device unplugged mid-call) must answer with its typed error and leave
//! both the simulated kernel and every file under /etc as they were ([`refused`]). Calls go
//! through busctl, the real bus and real polkitd, as root.
//!
//! Each area's suite is in that area's file, beside its other tests
//! (`roce::roce_methods_refuse_bad_input_and_change_nothing`, ...).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use rdma_manager_tests::bus::Reply;
use rdma_manager_tests::service::{tree_files, SystemSetup};

/// Every file under the simulated host's /etc, with its bytes.
pub(crate) fn etc_files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    tree_files(root, &["etc"])
}

/// The kernel and the disk, to compare before and after a refused call.
#[derive(PartialEq)]
pub(crate) struct World {
    kernel: String,
    etc: BTreeMap<String, Vec<u8>>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let etc: Vec<String> = self
            .etc
            .iter()
            .map(|(k, v)| format!("{k}: {}", String::from_utf8_lossy(v)))
            .collect();
        write!(f, "{}\n{}", self.kernel, etc.join("\n"))
    }
}

pub(crate) fn world(t: &SystemSetup) -> World {
    World {
        kernel: t.sim.kernel_snapshot(),
        etc: etc_files(t.sim.root()),
    }
}

/// One refused call: (object path, interface suffix or "" for the root interface, method,
/// busctl signature and arguments, the error name wanted).
pub(crate) struct Case {
    pub path: String,
    pub iface: &'static str,
    pub method: &'static str,
    pub args: Vec<String>,
    pub want: &'static str,
}

pub(crate) fn case(
    path: &str,
    iface: &'static str,
    method: &'static str,
    args: &[&str],
    want: &'static str,
) -> Case {
    Case {
        path: path.to_string(),
        iface,
        method,
        args: args.iter().map(|s| s.to_string()).collect(),
        want,
    }
}

/// Runs every case and checks the error name and that nothing changed.
pub(crate) async fn refused(t: &SystemSetup, cases: &[Case]) -> Result<()> {
    let mut failures = Vec::new();
    for c in cases {
        let before = world(t);
        let iface = if c.iface.is_empty() {
            rdma_manager_dbus::BUS_NAME.to_string()
        } else {
            format!("{}.{}", rdma_manager_dbus::BUS_NAME, c.iface)
        };
        let args: Vec<&str> = c.args.iter().map(String::as_str).collect();
        let reply = t.call(None, &c.path, &iface, c.method, &args).await?;
        let label = format!("{} {}.{}({:?})", c.path, iface, c.method, c.args);
        match &reply {
            Reply::Err(name, msg) if name == c.want => {
                assert!(
                    !msg.trim().is_empty(),
                    "{label}: an error without a sentence"
                );
            }
            other => failures.push(format!("{label}: wanted {}, got {other:?}", c.want)),
        }
        let after = world(t);
        if after != before {
            failures.push(format!(
                "{label} changed something:\nbefore {before:?}\nafter {after:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

/// Names that no RDMA device or network interface may have, one per class.
pub(crate) fn bad_names() -> Vec<(&'static str, String)> {
    vec![
        ("empty", String::new()),
        ("too long for a netdev", "x".repeat(16)),
        ("too long for an RDMA device", "x".repeat(64)),
        ("slash", "a/b".into()),
        ("parent directory", "../etc".into()),
        ("dot-dot", "..".into()),
        ("double quote", "a\"b".into()),
        ("single quote", "a'b".into()),
        ("newline", "a\nb".into()),
        ("space", "a b".into()),
        ("glob", "ib*".into()),
        ("percent template", "rxe%d".into()),
        ("udev operator", "x\",RUN+=\"/bin/sh".into()),
        ("non-ASCII", "ïb0".into()),
    ]
}
