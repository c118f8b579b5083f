//! A real systemd-networkd for tests: Debian's `/lib/systemd/systemd-networkd` (package
//! `systemd`) outside systemd-as-PID-1, on a private system bus, in a network namespace of
//! its own (it sees only `lo` and what `setup` makes there) and a mount namespace where its
//! state directory `/run/systemd/netif` is an empty tmpfs, `/etc/systemd/network` is a
//! directory of the test's (the simulated host's, so that the daemon's files reach it) and
//! /sys is the namespace's own sysfs, read-only: with no udevd running, networkd then takes
//! links as initialized at once (as in a container). Started as root, it drops to the
//! `systemd-network` user (the package makes it), keeping CAP_NET_ADMIN.
//!
//! With netplan ([`PrivateNetworkd::start_with_netplan`]): Debian's netplan.io in the same
//! namespaces: its configuration directory /etc/netplan is a directory of the test's, its
//! generator renders it into /run/systemd/network (a tmpfs) before networkd starts, as at
//! boot, and its D-Bus service `netplan-dbus` serves on the same bus. `netplan apply` and
//! `netplan try` run for real (generator, networkctl reload and reconfigure against this
//! networkd); only the two programs they call that the namespace has no daemon for are
//! stand-ins: `systemctl` (no init system: networkd already runs, nothing else is started)
//! and `udevadm` (no udevd: links are taken as initialized, as networkd takes them here).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::bus::{BusConfig, PrivateBus};

pub const NETWORKD_BUS_NAME: &str = "org.freedesktop.network1";
const NETWORKD_BINARY: &str = "/lib/systemd/systemd-networkd";
const NETWORKD_BUS_POLICY: &str = "/usr/share/dbus-1/system.d/org.freedesktop.network1.conf";
const NETPLAN_DBUS: &str = "/usr/libexec/netplan/netplan-dbus";
const NETPLAN_GENERATOR: &str = "/usr/libexec/netplan/generate";
const NETPLAN_BUS_POLICY: &str = "/usr/share/dbus-1/system.d/io.netplan.Netplan.conf";
pub const NETPLAN_BUS_NAME: &str = "io.netplan.Netplan";

/// The stand-ins `netplan apply` finds first on its PATH (see the module's comment): they
/// note their arguments and succeed; `is-active` and `is-enabled` say no unit is.
const STANDIN_SYSTEMCTL: &str = "#!/bin/sh\nfor a; do case \"$a\" in is-active|is-enabled) exit 3;; esac; done\necho \"systemctl $*\" >>\"$(dirname \"$0\")/calls.log\"\nexit 0\n";
const STANDIN_UDEVADM: &str =
    "#!/bin/sh\necho \"udevadm $*\" >>\"$(dirname \"$0\")/calls.log\"\nexit 0\n";

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

/// Why the netplan tests cannot run here, if they cannot.
pub fn netplan_skip_reason() -> Option<String> {
    skip_reason().or_else(|| {
        crate::bus::skip_reason_needing(&[
            (NETPLAN_DBUS, "netplan.io"),
            (NETPLAN_GENERATOR, "netplan.io"),
            (NETPLAN_BUS_POLICY, "netplan.io"),
            ("/usr/sbin/netplan", "netplan.io"),
        ])
    })
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
        Self::start_inner(network_dir, None, setup).await
    }

    /// As [`start`](Self::start), with netplan configured from `netplan_dir` and its D-Bus
    /// service on the bus (see the module's comment).
    pub async fn start_with_netplan(
        network_dir: &Path,
        netplan_dir: &Path,
        setup: &str,
    ) -> Result<PrivateNetworkd> {
        let nd = Self::start_inner(network_dir, Some(netplan_dir), setup).await?;
        nd.wait_for_name(NETPLAN_BUS_NAME, || {
            std::fs::read_to_string(nd.dir.path().join("netplan.log")).unwrap_or_default()
        })
        .await?;
        Ok(nd)
    }

    async fn start_inner(
        network_dir: &Path,
        netplan_dir: Option<&Path>,
        setup: &str,
    ) -> Result<PrivateNetworkd> {
        // rdma-manager's policy too, so that the daemon can serve on the same bus.
        let mut config = BusConfig::system()
            .include(NETWORKD_BUS_POLICY)
            .with_rdma_manager_policy();
        if netplan_dir.is_some() {
            config = config.include(NETPLAN_BUS_POLICY);
        }
        let bus = config.start()?;
        let dir = tempfile::tempdir()?;
        std::fs::create_dir_all(network_dir)?;
        let log = std::fs::File::create(dir.path().join("networkd.log"))?;
        let setup = if setup.trim().is_empty() { ":" } else { setup };
        // netplan's revert replaces /run/systemd/network whole, which a mount point there
        // would refuse: with netplan, /run/systemd is the namespace's tmpfs instead.
        let (run_systemd, netplan) = match netplan_dir {
            None => (String::new(), String::new()),
            Some(np) => {
                std::fs::create_dir_all(np)?;
                let bin = dir.path().join("bin");
                std::fs::create_dir_all(&bin)?;
                for (name, text) in [
                    ("systemctl", STANDIN_SYSTEMCTL),
                    ("udevadm", STANDIN_UDEVADM),
                ] {
                    let path = bin.join(name);
                    std::fs::write(&path, text)?;
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
                }
                // netplan-dbus is the shell's child until the shell becomes networkd: killed
                // with it through its pid file.
                (
                    "mount -t tmpfs tmpfs /run/systemd; mkdir -p /run/systemd/network; "
                        .to_string(),
                    format!(
                        "mkdir -p /etc/netplan /run/netplan; mount --bind {np} /etc/netplan; \
                         mount -t tmpfs tmpfs /run/netplan; {NETPLAN_GENERATOR}; \
                         SYSTEMD_LOG_LEVEL=info PATH={bin}:$PATH {NETPLAN_DBUS} \
                         >{d}/netplan.log 2>&1 & echo $! >{d}/netplan-dbus.pid; ",
                        np = np.display(),
                        bin = bin.display(),
                        d = dir.path().display(),
                    ),
                )
            }
        };
        let script = format!(
            "set -e; {run_systemd}mkdir -p /run/systemd/netif; \
             mount -t tmpfs tmpfs /run/systemd/netif; \
             mount --bind {} /etc/systemd/network; mount -t sysfs -o ro sysfs /sys; \
             ip link set lo up; {setup}; {netplan}exec {NETWORKD_BINARY}",
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
        if let Some(status) = nd.child.try_wait()? {
            bail!("systemd-networkd exited ({status}); its log:\n{}", nd.log());
        }
        nd.wait_for_name(NETWORKD_BUS_NAME, || nd.log()).await?;
        Ok(nd)
    }

    /// Waits until `name` is owned on the bus; `log` is shown when it is not after 30 s.
    async fn wait_for_name(&self, name: &str, log: impl Fn() -> String) -> Result<()> {
        let conn = self.bus.connect().await?;
        let dbus = zbus::fdo::DBusProxy::new(&conn).await?;
        let bus_name = zbus::names::BusName::try_from(name)?;
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !dbus.name_has_owner(bus_name.clone()).await? {
            if std::time::Instant::now() > deadline {
                bail!("{name} is not on the bus after 30 s; the log:\n{}", log());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }

    /// What the stand-ins were asked (one line per call), with netplan.
    pub fn standin_calls(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("bin/calls.log")).unwrap_or_default()
    }

    /// What netplan-dbus and the netplan commands it ran printed, with netplan.
    pub fn netplan_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("netplan.log")).unwrap_or_default()
    }

    /// The simulated daemon `sim` serving on this bus with the real clients of networkd and
    /// netplan (`BusSystemServices`), at a 100 ms tick.
    pub async fn serve(
        &self,
        sim: &rdma_managerd::kernel::sim::SimHost,
    ) -> Result<rdma_managerd::dbus::server::Service> {
        use rdma_managerd::dbus::polkit::Authorizer;
        use std::sync::Arc;
        let conn = self.bus.connect().await?;
        let config = rdma_managerd::engine::EngineConfig {
            tick: Duration::from_millis(100),
            ..Default::default()
        };
        Ok(rdma_managerd::dbus::server::serve_with(
            conn.clone(),
            Arc::new(sim.clone()),
            true,
            config,
            Authorizer::same_user_for_simulation(&conn),
            Arc::new(rdma_managerd::system::BusSystemServices::new(&conn)),
        )
        .await?)
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

    /// What networkd printed, and netplan after it where it runs.
    pub fn log(&self) -> String {
        let mut log =
            std::fs::read_to_string(self.dir.path().join("networkd.log")).unwrap_or_default();
        let netplan = self.netplan_log();
        if !netplan.is_empty() {
            log.push_str("\n--- netplan-dbus and the netplan commands it ran:\n");
            log.push_str(&netplan);
            log.push_str("\n--- the stand-ins' calls:\n");
            log.push_str(&self.standin_calls());
        }
        log
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("networkd.log")
    }
}

impl Drop for PrivateNetworkd {
    fn drop(&mut self) {
        if let Some(pid) = std::fs::read_to_string(self.dir.path().join("netplan-dbus.pid"))
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok())
        {
            // SAFETY: kill(2) on a pid this harness started; no memory is shared.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
