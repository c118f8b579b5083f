//! What the packaged programs link, as `make build` builds them (`-p rdma-managerd -p rdma-tui
//! -p rdma-cli --no-default-features`): the unprivileged clients none of the daemon's code and
//! none of its ways into the kernel (udev, netlink), the daemon none of the clients' crates.
//! Asked of `cargo tree`, which resolves the features of the packages named alone, as that
//! build does (a workspace build turns on the tests crate's `sim` and rdma-tui's `demo`).

use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context, Result};

/// The packages in the normal (not dev, not build) dependency tree of `package` built
/// without its default features, one name each.
fn normal_dependencies(package: &str) -> Result<Vec<String>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .args(["tree", "--frozen", "-p", package, "--no-default-features"])
        .args(["-e", "normal", "--prefix", "none", "--format", "{p}"])
        .output()
        .context("running cargo tree")?;
    ensure!(
        out.status.success(),
        "cargo tree -p {package} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    ensure!(
        names.iter().any(|n| n == package),
        "cargo tree did not list {package} itself: {names:?}"
    );
    Ok(names)
}

#[test]
fn the_packaged_client_links_neither_the_daemon_nor_udev_nor_netlink() -> Result<()> {
    let deps = normal_dependencies("rdma-tui")?;
    let bad: Vec<&String> = deps
        .iter()
        .filter(|n| n.contains("udev") || n.contains("netlink") || *n == "rdma-managerd")
        .collect();
    ensure!(bad.is_empty(), "the packaged rdma-tui links {bad:?}");
    // The rules it checks forms with are the daemon's own, from the crate both link.
    ensure!(deps.iter().any(|n| n == "rdma-manager-model"), "{deps:?}");
    Ok(())
}

#[test]
fn the_command_line_client_links_neither_the_daemon_nor_udev_nor_netlink() -> Result<()> {
    let deps = normal_dependencies("rdma-cli")?;
    let bad: Vec<&String> = deps
        .iter()
        .filter(|n| {
            n.contains("udev")
                || n.contains("netlink")
                || matches!(
                    n.as_str(),
                    "rdma-managerd" | "rdma-tui" | "ratatui" | "crossterm"
                )
        })
        .collect();
    ensure!(bad.is_empty(), "rdma-cli links {bad:?}");
    // It checks input with the daemon's own rules, from the crate both link.
    ensure!(deps.iter().any(|n| n == "rdma-manager-model"), "{deps:?}");
    Ok(())
}

#[test]
fn the_exporter_links_neither_the_daemon_nor_udev_nor_netlink() -> Result<()> {
    let deps = normal_dependencies("rdma-exporter")?;
    let bad: Vec<&String> = deps
        .iter()
        .filter(|n| {
            n.contains("udev")
                || n.contains("netlink")
                || matches!(
                    n.as_str(),
                    "rdma-managerd" | "rdma-tui" | "rdma-cli" | "ratatui" | "crossterm"
                )
        })
        .collect();
    ensure!(bad.is_empty(), "rdma-exporter links {bad:?}");
    // A client of the D-Bus API, through the crate every client shares.
    ensure!(deps.iter().any(|n| n == "rdma-manager-dbus"), "{deps:?}");
    Ok(())
}

#[test]
fn the_packaged_daemon_links_no_terminal_crates() -> Result<()> {
    let deps = normal_dependencies("rdma-managerd")?;
    let bad: Vec<&String> = deps
        .iter()
        .filter(|n| {
            matches!(
                n.as_str(),
                "ratatui" | "crossterm" | "rdma-tui" | "rdma-cli" | "clap"
            )
        })
        .collect();
    ensure!(bad.is_empty(), "the packaged rdma-managerd links {bad:?}");
    Ok(())
}
