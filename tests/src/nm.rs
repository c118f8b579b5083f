//! A real NetworkManager for tests: Debian's `NetworkManager` on a private system bus, in a
//! network namespace of its own (it sees only `lo`, so it cannot touch the machine's network)
//! and a mount namespace where its run and state directories are empty tmpfs and /sys is the
//! namespace's own sysfs, read-only: without udev (none runs here), NetworkManager waits for
//! udev to announce each device unless sysfs is read-only, as in a container. Its profiles
//! are written as keyfiles to a directory of the test's (`[keyfile] path=`), where the test
//! reads them. `nmcli` talks to it through `DBUS_SYSTEM_BUS_ADDRESS`.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::bus::{BusConfig, PrivateBus};

pub const NM_BUS_NAME: &str = "org.freedesktop.NetworkManager";
const NM_BINARY: &str = "/usr/sbin/NetworkManager";
const NM_BUS_POLICY: &str = "/usr/share/dbus-1/system.d/org.freedesktop.NetworkManager.conf";

/// Why the NetworkManager tests cannot run here, if they cannot (a failure under
/// `RDMA_MANAGER_REQUIRE_TOOLS=1`).
pub fn skip_reason() -> Option<String> {
    crate::bus::skip_reason_needing(&[
        (NM_BINARY, "network-manager"),
        (NM_BUS_POLICY, "network-manager"),
        ("/usr/bin/nmcli", "network-manager"),
        ("/usr/bin/unshare", "util-linux"),
    ])
}

pub struct PrivateNm {
    pub bus: PrivateBus,
    child: Child,
    dir: tempfile::TempDir,
}

impl PrivateNm {
    pub async fn start() -> Result<PrivateNm> {
        Self::start_with("").await
    }

    /// As [`PrivateNm::start`], running the shell commands `setup` in its network namespace
    /// first (to make the interfaces it will find there, say a veth pair).
    pub async fn start_with(setup: &str) -> Result<PrivateNm> {
        // rdma-manager's policy too, so that the daemon can serve on the same bus.
        let bus = BusConfig::system()
            .include(NM_BUS_POLICY)
            .with_rdma_manager_policy()
            .start()?;
        let dir = tempfile::tempdir()?;
        let keyfiles = dir.path().join("system-connections");
        std::fs::create_dir(&keyfiles)?;
        let conf = dir.path().join("NetworkManager.conf");
        std::fs::write(
            &conf,
            format!(
                "[main]\nplugins=keyfile\nno-auto-default=*\n[keyfile]\npath={}\n[logging]\nlevel=INFO\n",
                keyfiles.display()
            ),
        )?;
        let log = std::fs::File::create(dir.path().join("NetworkManager.log"))?;
        let setup = if setup.trim().is_empty() { ":" } else { setup };
        let script = format!(
            "set -e; for d in /run/NetworkManager /var/lib/NetworkManager; do \
             mkdir -p $d; mount -t tmpfs tmpfs $d; done; mount -t sysfs -o ro sysfs /sys; \
             ip link set lo up; {setup}; \
             exec {NM_BINARY} --no-daemon --debug --config={}",
            conf.display()
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
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting NetworkManager")?;
        let mut nm = PrivateNm { bus, child, dir };
        let conn = nm.bus.connect().await?;
        let dbus = zbus::fdo::DBusProxy::new(&conn).await?;
        let name = zbus::names::BusName::try_from(NM_BUS_NAME)?;
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !dbus.name_has_owner(name.clone()).await? {
            if let Some(status) = nm.child.try_wait()? {
                bail!("NetworkManager exited ({status}); its log:\n{}", nm.log());
            }
            if std::time::Instant::now() > deadline {
                bail!(
                    "NetworkManager is not on its bus after 30 s; its log:\n{}",
                    nm.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // It owns its name before it exports its settings: a test that asks at once would
        // find none ("Object does not exist at path .../Settings").
        let client = rdma_managerd::nm::client::NetworkManager::new(conn.clone());
        while let Err(rdma_managerd::nm::client::NmError::Starting) = client.profiles().await {
            if std::time::Instant::now() > deadline {
                bail!(
                    "NetworkManager has not exported its settings after 30 s; its log:\n{}",
                    nm.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(nm)
    }

    /// Runs nmcli against this NetworkManager.
    pub fn nmcli(&self, args: &[&str]) -> Result<Output> {
        Command::new("nmcli")
            .args(args)
            .env("DBUS_SYSTEM_BUS_ADDRESS", self.bus.address())
            .output()
            .context("running nmcli")
    }

    /// Runs `ip ARGS` in NetworkManager's network namespace.
    pub fn ip(&self, args: &[&str]) -> Result<Output> {
        Command::new("nsenter")
            .arg("--target")
            .arg(self.child.id().to_string())
            .arg("--net")
            .arg("ip")
            .args(args)
            .output()
            .context("running ip in NetworkManager's namespace")
    }

    /// The directory NetworkManager keeps its keyfiles in.
    pub fn keyfile_dir(&self) -> PathBuf {
        self.dir.path().join("system-connections")
    }

    /// What NetworkManager printed.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("NetworkManager.log")).unwrap_or_default()
    }
}

impl Drop for PrivateNm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
