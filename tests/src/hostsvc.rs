//! The real host services on private buses, to check the stand-ins (`crate::standins`) against:
//!
//! - [`RealFirewalld`]: firewalld (Debian's package) on a private system bus with its own bus
//!   policy, in a network namespace of its own (its nftables rules touch nothing of the host's)
//!   and with a copy of /etc/firewalld as its system configuration (permanent changes land in
//!   the copy).
//! - [`UserSystemd`]: systemd's service manager as a user instance (`systemd --user`), whose
//!   manager API is PID 1's (the same dbus-manager.c, dbus-unit.c and dbus-job.c), on a bus it
//!   starts itself from a socket unit. It runs where systemd is not PID 1 because, in a mount
//!   namespace of its own, /run is a directory with `systemd/system/` in it (systemd checks
//!   that to tell whether the system was booted with systemd, sd_booted()), and in cgroups of
//!   its own, made for it and removed afterwards, so that it moves no other process (a manager
//!   moves every process of its root cgroup into init.scope). Its units come only from a
//!   directory the test fills (`SYSTEMD_UNIT_PATH`), which is also its configuration
//!   directory, so enabling a unit there is seen at once.
//!
//! Both need root; [`RealFirewalld::start_or_skip`] and [`UserSystemd::start_or_skip`] say when a
//! test cannot run (and fail instead under `RDMA_MANAGER_REQUIRE_TOOLS=1`).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tempfile::TempDir;
use zbus::Connection;

use crate::bus::{tools_required, BusConfig, PrivateBus};

/// Debian's firewalld.
pub const FIREWALLD: &str = "/usr/sbin/firewalld";
/// firewalld's bus policy as its package installs it.
pub const FIREWALLD_BUS_POLICY: &str = "/usr/share/dbus-1/system.d/FirewallD.conf";
const FIREWALLD_NAME: &str = "org.fedoraproject.FirewallD1";
const FIREWALLD_PATH: &str = "/org/fedoraproject/FirewallD1";
/// firewalld is Python and loads every zone, service and ipset before it is ready.
const FIREWALLD_START: Duration = Duration::from_secs(90);

/// systemd's manager binary (Debian 12 keeps it in /lib, merged-/usr systems in /usr/lib).
const SYSTEMD_BINARIES: [&str; 2] = ["/lib/systemd/systemd", "/usr/lib/systemd/systemd"];
const SYSTEMD_START: Duration = Duration::from_secs(30);

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Prints why a test skips, or fails it under RDMA_MANAGER_REQUIRE_TOOLS=1.
fn skip(why: &str) {
    assert!(
        !tools_required(),
        "{why}, and RDMA_MANAGER_REQUIRE_TOOLS=1 forbids skipping"
    );
    eprintln!("skipping: {why}");
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("mkdir {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}

fn cstring(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes()).with_context(|| format!("NUL in {}", p.display()))
}

/// firewalld on a private system bus, killed on drop.
pub struct RealFirewalld {
    bus: PrivateBus,
    child: Child,
    log: PathBuf,
    _dir: TempDir,
}

impl Drop for RealFirewalld {
    fn drop(&mut self) {
        // Its network namespace, and the rules in it, go with it.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl RealFirewalld {
    /// Starts firewalld, or says why it cannot run here and returns `None`.
    pub async fn start_or_skip() -> Option<Self> {
        let why = if !is_root() {
            Some("needs root (a network namespace, firewalld)".to_string())
        } else if !Path::new(FIREWALLD).is_file() || !Path::new(FIREWALLD_BUS_POLICY).is_file() {
            Some(format!(
                "{FIREWALLD} or {FIREWALLD_BUS_POLICY} missing (apt-get install firewalld)"
            ))
        } else {
            None
        };
        if let Some(why) = why {
            skip(&why);
            return None;
        }
        match Self::start().await {
            Ok(fw) => Some(fw),
            Err(e) => panic!("firewalld does not start on a private bus: {e:#}"),
        }
    }

    /// Starts firewalld and waits until its state is RUNNING.
    pub async fn start() -> Result<Self> {
        let bus = BusConfig::system().include(FIREWALLD_BUS_POLICY).start()?;
        let dir = tempfile::Builder::new()
            .prefix("rdma-firewalld-")
            .tempdir()?;
        let config = dir.path().join("etc-firewalld");
        copy_tree(Path::new("/etc/firewalld"), &config)?;
        let log = dir.path().join("firewalld.log");
        let log_file = std::fs::File::create(&log)?;
        let mut cmd = Command::new(FIREWALLD);
        cmd.args([
            "--nofork",
            "--nopid",
            "--log-target",
            "console",
            "--system-config",
        ])
        .arg(&config)
        .env("DBUS_SYSTEM_BUS_ADDRESS", bus.address())
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file);
        // SAFETY: the closure runs in the forked child before exec and only makes one system
        // call.
        unsafe {
            cmd.pre_exec(|| {
                if libc::unshare(libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().context("starting firewalld")?;
        let mut fw = Self {
            bus,
            child,
            log,
            _dir: dir,
        };
        fw.wait_until_running().await?;
        Ok(fw)
    }

    async fn wait_until_running(&mut self) -> Result<()> {
        let conn = self.connect().await?;
        let deadline = Instant::now() + FIREWALLD_START;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("firewalld exited ({status}):\n{}", self.log());
            }
            if let Ok(state) = self.property(&conn, "state").await {
                if state == "RUNNING" {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                bail!(
                    "firewalld is not RUNNING after {FIREWALLD_START:?}:\n{}",
                    self.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn property(&self, conn: &Connection, name: &str) -> Result<String> {
        let reply = conn
            .call_method(
                Some(FIREWALLD_NAME),
                FIREWALLD_PATH,
                Some("org.freedesktop.DBus.Properties"),
                "Get",
                &(FIREWALLD_NAME, name),
            )
            .await?;
        let value: zbus::zvariant::OwnedValue = reply.body().deserialize()?;
        Ok(String::try_from(value)?)
    }

    /// A connection of this process (root) to firewalld's bus.
    pub async fn connect(&self) -> Result<Connection> {
        self.bus.connect().await
    }

    /// The names of the runtime zones (`org.fedoraproject.FirewallD1.zone.getZones`).
    pub async fn zones(&self) -> Result<Vec<String>> {
        let conn = self.connect().await?;
        let reply = conn
            .call_method(
                Some(FIREWALLD_NAME),
                FIREWALLD_PATH,
                Some("org.fedoraproject.FirewallD1.zone"),
                "getZones",
                &(),
            )
            .await?;
        Ok(reply.body().deserialize()?)
    }

    pub async fn default_zone(&self) -> Result<String> {
        let conn = self.connect().await?;
        let reply = conn
            .call_method(
                Some(FIREWALLD_NAME),
                FIREWALLD_PATH,
                Some(FIREWALLD_NAME),
                "getDefaultZone",
                &(),
            )
            .await?;
        Ok(reply.body().deserialize()?)
    }

    /// firewalld's `version` property.
    pub async fn version(&self) -> Result<String> {
        let conn = self.connect().await?;
        self.property(&conn, "version").await
    }

    /// What firewalld printed.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// A cgroup made for the manager, in one hierarchy.
#[derive(Debug)]
struct OwnCgroup {
    dir: PathBuf,
}

/// The hierarchies a systemd manager uses: every cgroup2 mount (the unified hierarchy, alone or
/// beside v1) and the v1 `name=systemd` one. For each, the directory of this process's cgroup.
fn manager_hierarchies() -> Result<Vec<PathBuf>> {
    let own = std::fs::read_to_string("/proc/self/cgroup").context("reading /proc/self/cgroup")?;
    let mounts =
        std::fs::read_to_string("/proc/self/mountinfo").context("reading /proc/self/mountinfo")?;
    let mut dirs = Vec::new();
    for line in mounts.lines() {
        // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        let (Some(root), Some(mountpoint), Some(fstype)) =
            (left.get(3), left.get(4), right.first())
        else {
            continue;
        };
        let superopts = right.get(2).copied().unwrap_or_default();
        let own_path = match *fstype {
            "cgroup2" => own.lines().find_map(|l| l.strip_prefix("0::")),
            "cgroup" if superopts.split(',').any(|o| o == "name=systemd") => own
                .lines()
                .find_map(|l| l.split_once(":name=systemd:").map(|(_, p)| p)),
            _ => None,
        };
        let Some(own_path) = own_path else {
            continue;
        };
        // The cgroup's path relative to the mount's root.
        let relative = own_path
            .strip_prefix(root)
            .unwrap_or(own_path)
            .trim_start_matches('/');
        dirs.push(Path::new(mountpoint).join(relative));
    }
    Ok(dirs)
}

/// Every cgroup directory below and including `dir`, deepest first.
fn cgroup_tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(cgroup_tree(&e.path()));
            }
        }
    }
    out.push(dir.to_path_buf());
    out
}

/// Kills every process in the cgroups below `dirs` and removes them.
fn remove_cgroups(dirs: &[OwnCgroup]) {
    for _ in 0..200 {
        let mut alive = false;
        for cg in dirs {
            for d in cgroup_tree(&cg.dir) {
                let procs = std::fs::read_to_string(d.join("cgroup.procs")).unwrap_or_default();
                for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                    alive = true;
                    // SAFETY: kill has no memory preconditions; the pids are in our cgroup.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                    }
                }
            }
        }
        if !alive {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for cg in dirs {
        for d in cgroup_tree(&cg.dir) {
            let _ = std::fs::remove_dir(&d);
        }
    }
}

/// systemd's manager as a user instance on a bus of its own, stopped (with everything it
/// started) on drop.
pub struct UserSystemd {
    child: Child,
    cgroups: Vec<OwnCgroup>,
    socket: PathBuf,
    unit_dir: PathBuf,
    _dir: TempDir,
}

impl Drop for UserSystemd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The bus daemon and the units' processes it started.
        remove_cgroups(&self.cgroups);
    }
}

impl UserSystemd {
    /// Starts the manager with `units` (file name, contents; `None` masks the name), or says
    /// why it cannot run here and returns `None`.
    pub async fn start_or_skip(units: &[(&str, Option<&str>)]) -> Option<Self> {
        let binary = SYSTEMD_BINARIES.iter().find(|b| Path::new(b).is_file());
        let why = if !is_root() {
            Some("needs root (mount namespace, cgroups)".to_string())
        } else if binary.is_none() {
            Some("systemd's manager binary is missing (apt-get install systemd)".to_string())
        } else {
            None
        };
        if let Some(why) = why {
            skip(&why);
            return None;
        }
        match Self::start(units).await {
            Ok(sd) => Some(sd),
            Err(e) => panic!("systemd --user does not start here: {e:#}"),
        }
    }

    pub async fn start(units: &[(&str, Option<&str>)]) -> Result<Self> {
        let binary = SYSTEMD_BINARIES
            .iter()
            .find(|b| Path::new(b).is_file())
            .context("no systemd binary")?;
        let dir = tempfile::Builder::new().prefix("rdma-systemd-").tempdir()?;
        let config = dir.path().join("config");
        let unit_dir = config.join("systemd/user");
        let runtime = dir.path().join("runtime");
        let fake_run = dir.path().join("run");
        let home = dir.path().join("home");
        let socket = dir.path().join("bus.sock");
        for d in [&unit_dir, &runtime, &fake_run.join("systemd/system"), &home] {
            std::fs::create_dir_all(d)?;
        }
        std::fs::set_permissions(
            &runtime,
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )?;
        // The manager's own units: targets it needs and the bus it connects to.
        let own = [
            (
                "default.target",
                "[Unit]\nDescription=Test default\nWants=dbus.socket\n".to_string(),
            ),
            (
                "basic.target",
                "[Unit]\nDescription=Test basic\n".to_string(),
            ),
            (
                "dbus.socket",
                format!("[Socket]\nListenStream={}\n", socket.display()),
            ),
            (
                "dbus.service",
                "[Unit]\nRequires=dbus.socket\n[Service]\nExecStart=/usr/bin/dbus-daemon \
                 --session --address=systemd: --nofork --nopidfile --systemd-activation\n"
                    .to_string(),
            ),
        ];
        for (name, text) in own {
            std::fs::write(unit_dir.join(name), text)?;
        }
        for (name, text) in units {
            let path = unit_dir.join(name);
            match text {
                Some(text) => std::fs::write(&path, text)?,
                None => std::os::unix::fs::symlink("/dev/null", &path)?,
            }
        }

        let mut cgroups = Vec::new();
        let tag = format!(
            "rdma-test-systemd-{}-{}",
            std::process::id(),
            dir.path()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        );
        for hierarchy in manager_hierarchies()? {
            let cg = hierarchy.join(&tag);
            std::fs::create_dir(&cg).with_context(|| format!("mkdir {}", cg.display()))?;
            cgroups.push(OwnCgroup { dir: cg });
        }
        if cgroups.is_empty() {
            bail!("no cgroup2 or name=systemd hierarchy is mounted");
        }
        let procs: Vec<CString> = cgroups
            .iter()
            .map(|c| cstring(&c.dir.join("cgroup.procs")))
            .collect::<Result<_>>()?;
        let fake_run_c = cstring(&fake_run)?;

        let mut cmd = Command::new(binary);
        cmd.args(["--user", "--log-target=null"])
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", &config)
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("SYSTEMD_UNIT_PATH", &unit_dir)
            .env(
                "DBUS_SESSION_BUS_ADDRESS",
                format!("unix:path={}", socket.display()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: the closure runs in the forked child before exec and only makes system calls
        // on memory prepared before the fork.
        unsafe {
            cmd.pre_exec(move || {
                // Into its own cgroups first: writing 0 to cgroup.procs moves the writer.
                for p in &procs {
                    let fd = libc::open(p.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                    if fd < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    let n = libc::write(fd, c"0".as_ptr().cast(), 1);
                    libc::close(fd);
                    if n != 1 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if libc::unshare(libc::CLONE_NEWNS) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::mount(
                    fake_run_c.as_ptr(),
                    c"/run".as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                remove_cgroups(&cgroups);
                return Err(e).context("starting systemd --user");
            }
        };
        let mut sd = Self {
            child,
            cgroups,
            socket,
            unit_dir,
            _dir: dir,
        };
        sd.wait_until_ready().await?;
        Ok(sd)
    }

    async fn wait_until_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + SYSTEMD_START;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("systemd --user exited ({status})");
            }
            if self.socket.exists() {
                if let Ok(conn) = self.connect().await {
                    let dbus = zbus::fdo::DBusProxy::new(&conn).await?;
                    let name = zbus::names::BusName::try_from("org.freedesktop.systemd1")?;
                    if dbus.name_has_owner(name).await.unwrap_or(false) {
                        return Ok(());
                    }
                }
            }
            if Instant::now() > deadline {
                bail!("systemd --user is not on its bus after {SYSTEMD_START:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The directory of its units, also its configuration directory.
    pub fn unit_dir(&self) -> &Path {
        &self.unit_dir
    }

    /// A connection to the manager's bus.
    pub async fn connect(&self) -> Result<Connection> {
        let address = format!("unix:path={}", self.socket.display());
        Ok(zbus::connection::Builder::address(address.as_str())?
            .build()
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trees_list_the_deepest_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("a/b")).expect("mkdir");
        let tree = cgroup_tree(dir.path());
        assert_eq!(tree.last().map(PathBuf::as_path), Some(dir.path()));
        assert_eq!(tree[0], dir.path().join("a/b"));
    }
}
