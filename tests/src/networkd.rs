//! A real systemd-networkd for tests: Debian's `/lib/systemd/systemd-networkd` (package
//! `systemd`) outside systemd-as-PID-1, on a private system bus, in a network namespace of
//! its own (it sees only `lo` and what `setup` makes there) and a mount namespace where its
//! state directory `/run/systemd/netif` is an empty tmpfs, `/etc/systemd/network` is a
//! directory of the test's (the simulated host's, so that the daemon's files reach it) and
//! /sys is the namespace's own sysfs, read-only: with no udevd running, networkd then takes
//! links as initialized at once (as in a container). Started as root, it drops to the
//! `systemd-network` user (the package makes it), keeping CAP_NET_ADMIN.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::bus::{BusConfig, PrivateBus};

pub const NETWORKD_BUS_NAME: &str = "org.freedesktop.network1";
const NETWORKD_BINARY: &str = "/lib/systemd/systemd-networkd";
const NETWORKD_BUS_POLICY: &str = "/usr/share/dbus-1/system.d/org.freedesktop.network1.conf";

/// Why the networkd tests cannot run here, if they cannot (a failure under
/// `RDMA_MANAGER_REQUIRE_TOOLS=1`).
pub fn skip_reason() -> Option<String> {
    crate::bus::skip_reason_needing(&[
        (NETWORKD_BINARY, "systemd"),
        (NETWORKD_BUS_POLICY, "systemd"),
        ("/usr/bin/unshare", "util-linux"),
        ("/usr/bin/nsenter", "util-linux"),
    ])
}

pub struct PrivateNetworkd {
    pub bus: PrivateBus,
    child: Child,
    dir: tempfile::TempDir,
}

impl PrivateNetworkd {
    /// Starts networkd reading its `.network` files from `network_dir`, after running the
    /// shell commands `setup` in its network namespace (to make its links, say a veth pair).
    pub async fn start(network_dir: &Path, setup: &str) -> Result<PrivateNetworkd> {
        // rdma-manager's policy too, so that the daemon can serve on the same bus.
        let bus = BusConfig::system()
            .include(NETWORKD_BUS_POLICY)
            .with_rdma_manager_policy()
            .start()?;
        let dir = tempfile::tempdir()?;
        std::fs::create_dir_all(network_dir)?;
        let log = std::fs::File::create(dir.path().join("networkd.log"))?;
        let setup = if setup.trim().is_empty() { ":" } else { setup };
        let script = format!(
            "set -e; mkdir -p /run/systemd/netif; mount -t tmpfs tmpfs /run/systemd/netif; \
             mount --bind {} /etc/systemd/network; mount -t sysfs -o ro sysfs /sys; \
             ip link set lo up; {setup}; exec {NETWORKD_BINARY}",
            network_dir.display()
        );
        let child = Command::new("unshare")
            .args([
                "--mount",
                "--net",
                "--propagation",
                "private",
                "sh",
                "-c",
                &script,
            ])
            .env("DBUS_SYSTEM_BUS_ADDRESS", bus.address())
            .env("SYSTEMD_LOG_LEVEL", "debug")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting systemd-networkd")?;
        let mut nd = PrivateNetworkd { bus, child, dir };
        let conn = nd.bus.connect().await?;
        let dbus = zbus::fdo::DBusProxy::new(&conn).await?;
        let name = zbus::names::BusName::try_from(NETWORKD_BUS_NAME)?;
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !dbus.name_has_owner(name.clone()).await? {
            if let Some(status) = nd.child.try_wait()? {
                bail!("systemd-networkd exited ({status}); its log:\n{}", nd.log());
            }
            if std::time::Instant::now() > deadline {
                bail!(
                    "systemd-networkd is not on its bus after 30 s; its log:\n{}",
                    nd.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(nd)
    }

    /// Runs `ip ARGS` in networkd's network namespace.
    pub fn ip(&self, args: &[&str]) -> Result<Output> {
        Command::new("nsenter")
            .arg("--target")
            .arg(self.child.id().to_string())
            .arg("--net")
            .arg("ip")
            .args(args)
            .output()
            .context("running ip in networkd's namespace")
    }

    /// The IPv4 addresses of `link` in networkd's namespace (`ip -4 -o address show`).
    pub fn ipv4_of(&self, link: &str) -> Result<Vec<String>> {
        let out = self.ip(&["-4", "-o", "address", "show", "dev", link])?;
        if !out.status.success() {
            bail!(
                "ip address show {link}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let mut words = l.split_whitespace();
                words.find(|w| *w == "inet")?;
                words.next().map(str::to_string)
            })
            .collect())
    }

    /// What networkd printed.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("networkd.log")).unwrap_or_default()
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("networkd.log")
    }
}

impl Drop for PrivateNetworkd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
