//! A private D-Bus and a private polkitd for tests, so D-Bus and authorization tests use the
//! real daemons without touching the host's buses, polkit rules or user database.
//!
//! - [`UserDb`]: copies of `/etc/passwd` and `/etc/group` with a test user `rdmatest` (uid
//!   [`TEST_UID`]) and a group `rdma` (gid [`RDMA_GID`]) whose membership the test chooses.
//! - [`PrivateBus`]: a `dbus-daemon` with a system-bus-like policy (or a permissive session bus)
//!   on a unix socket in a temporary directory. It runs in its own mount namespace with the
//!   [`UserDb`] bind-mounted over `/etc/passwd` and `/etc/group`, because dbus-daemon drops a
//!   client whose uid it cannot resolve.
//! - [`PrivatePolkit`]: the real polkitd on that bus, in its own mount namespace where the
//!   action policies, the rules and the user database are the test's own.
//! - [`Credentials`]: run a client command as another uid, gid and groups.
//!
//! Both daemons are killed when their handle is dropped. Everything here needs root (mount
//! namespaces, changing uid); [`skip_reason`] says when a test cannot run.

use std::ffi::{CString, OsStr};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rdma_manager_dbus::{Action, BUS_NAME};
use tempfile::TempDir;

pub mod stock;

/// The unprivileged test user.
pub const TEST_USER: &str = "rdmatest";
/// Its uid, and the gid of its own primary group (also named `rdmatest`).
pub const TEST_UID: u32 = 4242;
/// The group the example polkit rule grants rdma-manager's actions to.
pub const RDMA_GROUP: &str = "rdma";
pub const RDMA_GID: u32 = 4243;

/// The real polkitd as Debian installs it.
pub const POLKITD: &str = "/usr/lib/polkit-1/polkitd";
const POLKIT_BUS_NAME: &str = "org.freedesktop.PolicyKit1";
/// How long a daemon may take to come up.
const START_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether CI asked that no test skip for a missing tool (`RDMA_MANAGER_REQUIRE_TOOLS=1`).
pub fn tools_required() -> bool {
    std::env::var_os("RDMA_MANAGER_REQUIRE_TOOLS").is_some_and(|v| v == "1")
}

/// Why the bus and polkit tests cannot run on this machine, if they cannot: not root, or a
/// daemon or busctl missing. Under `RDMA_MANAGER_REQUIRE_TOOLS=1` that is a failure instead.
pub fn skip_reason() -> Option<String> {
    let why = skip_reason_here();
    if let (Some(why), true) = (&why, tools_required()) {
        panic!("{why}, and RDMA_MANAGER_REQUIRE_TOOLS=1 forbids skipping");
    }
    why
}

/// Why a test of a service from another package cannot run, if it cannot: the bus harness
/// ([`skip_reason`]), or the first of `files` (path, Debian package) that is missing. Under
/// `RDMA_MANAGER_REQUIRE_TOOLS=1` a missing file is a failure instead.
pub fn skip_reason_needing(files: &[(&str, &str)]) -> Option<String> {
    if let Some(r) = skip_reason() {
        return Some(r);
    }
    let (path, package) = files
        .iter()
        .find(|(path, _)| !std::path::Path::new(path).exists())?;
    let why = format!("no {path} (Debian package {package})");
    if tools_required() {
        panic!("{why}, and RDMA_MANAGER_REQUIRE_TOOLS=1 forbids skipping");
    }
    Some(why)
}

fn skip_reason_here() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (mount namespaces, running clients as other uids)".into());
    }
    let missing: Vec<&str> = ["dbus-daemon", "busctl", POLKITD]
        .into_iter()
        .filter(|b| find_program(b).is_none())
        .collect();
    if missing.is_empty() {
        None
    } else {
        Some(format!(
            "missing {} (apt-get install dbus-daemon systemd polkitd)",
            missing.join(", ")
        ))
    }
}

fn find_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Path::new(name).is_file().then(|| PathBuf::from(name));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A file of the project's `dist/` directory (which may not exist yet).
pub fn dist_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../dist")
        .join(relative)
}

fn public_temp_dir(prefix: &str) -> Result<TempDir> {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .context("creating a temporary directory")?;
    // Unprivileged clients must reach the socket, polkitd (which drops to its own user) must
    // read the rules.
    make_public(dir.path(), 0o755)?;
    Ok(dir)
}

fn make_public(path: &Path, mode: u32) -> Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("chmod {}", path.display()))
}

fn write_public(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    make_public(path, 0o644)
}

/// A bind mount made in a daemon's private mount namespace: `source` over `target`.
#[derive(Clone, Debug)]
pub struct Bind {
    pub source: PathBuf,
    pub target: PathBuf,
}

/// Makes `cmd` run in a new mount namespace (private propagation, so nothing leaks to the
/// host) with `binds` applied before it execs.
fn in_private_mounts(cmd: &mut Command, binds: &[Bind]) -> Result<()> {
    let cstr = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .with_context(|| format!("NUL in path {}", p.display()))
    };
    let binds: Vec<(CString, CString)> = binds
        .iter()
        .map(|b| Ok((cstr(&b.source)?, cstr(&b.target)?)))
        .collect::<Result<_>>()?;
    let root = c"/";
    // SAFETY: the closure runs in the forked child before exec and only makes system calls
    // (unshare, mount) on memory prepared before the fork; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::unshare(libc::CLONE_NEWNS) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let private = libc::MS_REC | libc::MS_PRIVATE;
            if libc::mount(
                std::ptr::null(),
                root.as_ptr(),
                std::ptr::null(),
                private,
                std::ptr::null(),
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            for (source, target) in &binds {
                if libc::mount(
                    source.as_ptr(),
                    target.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    Ok(())
}

/// A running daemon, killed on drop, with its stdout and stderr in a log file.
#[derive(Debug)]
struct Daemon {
    child: Child,
    log: PathBuf,
}

impl Daemon {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Err with the log when the daemon has exited.
    fn check_running(&mut self, what: &str) -> Result<()> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => bail!("{what} exited ({status}):\n{}", self.log()),
            Err(e) => bail!("{what}: {e}"),
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // The daemon may have exited already; nothing else to do about a failure here.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Copies of the host's `/etc/passwd` and `/etc/group` with the test user and group added
/// (any existing entries of the same names or ids are left out). Bind them over the originals
/// in a daemon's mount namespace with [`UserDb::binds`].
#[derive(Debug)]
pub struct UserDb {
    dir: TempDir,
    host_groups: String,
}

impl UserDb {
    /// The user database with `rdmatest` in group `rdma` or not.
    pub fn new(in_rdma_group: bool) -> Result<Self> {
        let dir = public_temp_dir("rdma-users-")?;
        let passwd = std::fs::read_to_string("/etc/passwd").context("reading /etc/passwd")?;
        let group = std::fs::read_to_string("/etc/group").context("reading /etc/group")?;
        let mut users = without_entries(&passwd, &[TEST_USER], &[TEST_UID]);
        writeln!(
            users,
            "{TEST_USER}:x:{TEST_UID}:{TEST_UID}:rdma-manager test user:/nonexistent:/usr/sbin/nologin"
        )?;
        write_public(&dir.path().join("passwd"), &users)?;
        let db = Self {
            dir,
            host_groups: without_entries(&group, &[TEST_USER, RDMA_GROUP], &[TEST_UID, RDMA_GID]),
        };
        db.set_in_rdma_group(in_rdma_group)?;
        Ok(db)
    }

    /// Adds `rdmatest` to group `rdma` or takes it out. The file is rewritten in place, so
    /// daemons already running see the change (polkitd resolves groups at every check).
    pub fn set_in_rdma_group(&self, member: bool) -> Result<()> {
        let members = if member { TEST_USER } else { "" };
        let text = format!(
            "{}{TEST_USER}:x:{TEST_UID}:\n{RDMA_GROUP}:x:{RDMA_GID}:{members}\n",
            self.host_groups
        );
        write_public(&self.dir.path().join("group"), &text)
    }

    /// The bind mounts that make a daemon see this database.
    pub fn binds(&self) -> Vec<Bind> {
        ["passwd", "group"]
            .into_iter()
            .map(|f| Bind {
                source: self.dir.path().join(f),
                target: Path::new("/etc").join(f),
            })
            .collect()
    }
}

/// `text` (passwd or group format) without the lines whose name or numeric id is given.
fn without_entries(text: &str, names: &[&str], ids: &[u32]) -> String {
    text.lines()
        .filter(|line| {
            let mut fields = line.split(':');
            let name = fields.next().unwrap_or_default();
            let id = fields.nth(1).and_then(|f| f.parse::<u32>().ok());
            !names.contains(&name) && !id.is_some_and(|id| ids.contains(&id))
        })
        .fold(String::new(), |mut out, line| {
            out.push_str(line);
            out.push('\n');
            out
        })
}

/// Which kind of bus a [`BusConfig`] describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusKind {
    /// The system bus's default policy: deny owning names and sending method calls unless a
    /// policy allows it.
    System,
    /// Anyone may own any name and send anything.
    Session,
    /// The installed `/usr/share/dbus-1/system.conf` itself (Debian's: its policy and its
    /// limits), with only what makes it private changed (see [`stock`]).
    Stock,
}

/// The configuration of a [`PrivateBus`]: the kind's default policy, then the inline policies
/// and the included files in the order they were added (for the same context, later rules win,
/// as in dbus-daemon).
#[derive(Clone, Debug)]
pub struct BusConfig {
    kind: BusKind,
    parts: Vec<ConfigPart>,
    binds: Vec<Bind>,
}

/// An element added to the configuration after the kind's defaults.
#[derive(Clone, Debug)]
enum ConfigPart {
    /// `<policy>` elements (XML text).
    Policy(String),
    /// `<include>path</include>`.
    Include(PathBuf),
}

/// A policy that lets `owners` (user names) own `name` and anyone send to it.
pub fn name_policy(name: &str, owners: &[&str]) -> String {
    let mut xml = String::new();
    for user in owners {
        // Writing to a String cannot fail.
        let _ = writeln!(
            xml,
            r#"  <policy user="{user}"><allow own="{name}"/></policy>"#
        );
    }
    let _ = writeln!(
        xml,
        r#"  <policy context="default"><allow send_destination="{name}"/></policy>"#
    );
    xml
}

/// polkitd's own bus policy (as /usr/share/dbus-1/system.d/org.freedesktop.PolicyKit1.conf),
/// plus root as an owner, so polkitd can be started whatever its user is called.
fn polkit_bus_policy() -> String {
    name_policy(POLKIT_BUS_NAME, &["polkitd", "root"])
        + r#"  <policy user="polkitd">
    <allow send_interface="org.freedesktop.PolicyKit1.AuthenticationAgent"/>
  </policy>
"#
}

impl BusConfig {
    /// A system bus: the default policy of Debian's system.conf, and polkitd's policy.
    pub fn system() -> Self {
        Self {
            kind: BusKind::System,
            parts: vec![ConfigPart::Policy(polkit_bus_policy())],
            binds: Vec::new(),
        }
    }

    /// A system bus configured exactly as the installed `/usr/share/dbus-1/system.conf`
    /// (policy and limits), with polkitd's policy where its `system.d` would be included.
    pub fn stock_system() -> Self {
        Self {
            kind: BusKind::Stock,
            parts: vec![ConfigPart::Policy(polkit_bus_policy())],
            binds: Vec::new(),
        }
    }

    /// A session bus that allows everything.
    pub fn session() -> Self {
        Self {
            kind: BusKind::Session,
            parts: Vec::new(),
            binds: Vec::new(),
        }
    }

    /// Adds rdma-manager's bus policy: dist/dbus/org.rdmamanager.RdmaManager1.conf when the
    /// project has it, else a stand-in that lets root own the name and anyone call it (the
    /// service checks polkit itself).
    pub fn with_rdma_manager_policy(self) -> Self {
        let shipped = dist_file("dbus/org.rdmamanager.RdmaManager1.conf");
        if shipped.is_file() {
            self.include(shipped)
        } else {
            self.policy(name_policy(BUS_NAME, &["root"]))
        }
    }

    /// Adds `<include>path</include>`, a busconfig file such as a service's policy.
    pub fn include(mut self, path: impl Into<PathBuf>) -> Self {
        self.parts.push(ConfigPart::Include(path.into()));
        self
    }

    /// Adds `<policy>` elements (XML text) to the configuration.
    pub fn policy(mut self, xml: impl Into<String>) -> Self {
        self.parts.push(ConfigPart::Policy(xml.into()));
        self
    }

    /// Makes the daemon see `users` as its user database (needed for clients whose uid the
    /// host does not know, like [`TEST_UID`]).
    pub fn users(mut self, users: &UserDb) -> Self {
        self.binds.extend(users.binds());
        self
    }

    fn render(&self, socket: &Path) -> Result<String> {
        let (kind, defaults) = match self.kind {
            BusKind::System => ("system", SYSTEM_DEFAULT_POLICY),
            BusKind::Session => ("session", SESSION_DEFAULT_POLICY),
            BusKind::Stock => return stock::render(socket, &self.render_parts()?),
        };
        let mut xml = String::new();
        writeln!(
            xml,
            r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>{kind}</type>
  <auth>EXTERNAL</auth>
  <listen>unix:path={}</listen>
{defaults}"#,
            xml_escape(socket.as_os_str())?
        )?;
        xml.push_str(&self.render_parts()?);
        xml.push_str("</busconfig>\n");
        Ok(xml)
    }

    /// The added policies and includes, in order.
    fn render_parts(&self) -> Result<String> {
        let mut xml = String::new();
        for part in &self.parts {
            match part {
                ConfigPart::Policy(policy) => xml.push_str(policy),
                ConfigPart::Include(path) => writeln!(
                    xml,
                    "  <include>{}</include>",
                    xml_escape(path.as_os_str())?
                )?,
            }
        }
        Ok(xml)
    }

    /// Starts the daemon and waits until it listens.
    pub fn start(self) -> Result<PrivateBus> {
        let dir = public_temp_dir("rdma-bus-")?;
        let config = dir.path().join("bus.conf");
        write_public(&config, &self.render(&dir.path().join("socket"))?)?;
        let log = dir.path().join("dbus-daemon.log");
        let mut cmd = Command::new("dbus-daemon");
        cmd.arg("--nofork")
            .arg("--print-address")
            .arg(format!("--config-file={}", config.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).context("creating the bus log")?);
        in_private_mounts(&mut cmd, &self.binds)?;
        let mut child = cmd.spawn().context("starting dbus-daemon")?;
        let stdout = child.stdout.take().context("dbus-daemon's stdout")?;
        let mut daemon = Daemon { child, log };
        // dbus-daemon prints its address once it listens; EOF means it failed to start.
        let mut address = String::new();
        BufReader::new(stdout)
            .read_line(&mut address)
            .context("reading dbus-daemon's address")?;
        let address = address.trim().to_string();
        if address.is_empty() {
            daemon.check_running("dbus-daemon")?;
            bail!("dbus-daemon printed no address:\n{}", daemon.log());
        }
        Ok(PrivateBus {
            daemon,
            address,
            _dir: dir,
        })
    }
}

/// system.conf's default policy (Debian 12, dbus 1.14).
pub const SYSTEM_DEFAULT_POLICY: &str = r#"
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Properties"/>
    <deny send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"
          send_member="UpdateActivationEnvironment"/>
    <deny send_destination="org.freedesktop.DBus"
          send_interface="org.freedesktop.DBus.Debug.Stats"/>
    <deny send_destination="org.freedesktop.DBus"
          send_interface="org.freedesktop.systemd1.Activator"/>
  </policy>
  <policy user="root">
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.systemd1.Activator"/>
  </policy>
"#;

const SESSION_DEFAULT_POLICY: &str = r#"
  <policy context="default">
    <allow user="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
"#;

fn xml_escape(s: &OsStr) -> Result<String> {
    let s = s.to_str().context("a path that is not UTF-8")?;
    Ok(s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;"))
}

/// A private `dbus-daemon`, killed on drop.
#[derive(Debug)]
pub struct PrivateBus {
    daemon: Daemon,
    address: String,
    _dir: TempDir,
}

impl PrivateBus {
    /// A system bus with polkitd's and rdma-manager's policies, seeing `users`.
    pub fn system(users: &UserDb) -> Result<Self> {
        BusConfig::system()
            .with_rdma_manager_policy()
            .users(users)
            .start()
    }

    /// A bus configured as Debian's system bus ([`BusConfig::stock_system`]) with polkitd's
    /// and rdma-manager's policies, seeing `users`.
    pub fn stock_system(users: &UserDb) -> Result<Self> {
        BusConfig::stock_system()
            .with_rdma_manager_policy()
            .users(users)
            .start()
    }

    /// A permissive session bus.
    pub fn session() -> Result<Self> {
        BusConfig::session().start()
    }

    /// The bus address (`unix:path=...,guid=...`).
    pub fn address(&self) -> &str {
        &self.address
    }

    /// What dbus-daemon wrote to stderr.
    pub fn log(&self) -> String {
        self.daemon.log()
    }

    /// A connection of this process to the bus.
    pub async fn connect(&self) -> Result<zbus::Connection> {
        zbus::connection::Builder::address(self.address())?
            .build()
            .await
            .with_context(|| format!("connecting to {}", self.address))
    }

    /// `busctl --address=<this bus>`, to which the caller adds a verb and its arguments.
    pub fn busctl(&self) -> Command {
        let mut cmd = Command::new("busctl");
        cmd.arg(format!("--address={}", self.address));
        cmd
    }

    /// Waits until `name` has an owner on this bus.
    pub async fn wait_for_name(&self, name: &str, timeout: Duration) -> Result<()> {
        self.wait_for_owner(name, timeout, None).await
    }

    /// Waits until `name` has an owner, failing early when `daemon` (the one that should take
    /// the name) exits.
    async fn wait_for_owner(
        &self,
        name: &str,
        timeout: Duration,
        mut daemon: Option<&mut Daemon>,
    ) -> Result<()> {
        let conn = self.connect().await?;
        let dbus = zbus::fdo::DBusProxy::new(&conn).await?;
        let bus_name = zbus::names::BusName::try_from(name)?;
        let deadline = Instant::now() + timeout;
        while !dbus.name_has_owner(bus_name.clone()).await? {
            if let Some(d) = daemon.as_deref_mut() {
                d.check_running(name)?;
            }
            if Instant::now() > deadline {
                let log = daemon.map(|d| d.log()).unwrap_or_default();
                bail!("{name} has no owner on the bus after {timeout:?}\n{log}");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }
}

/// The action policies and rules a [`PrivatePolkit`] sees; nothing else (the host's actions
/// and rules are hidden).
#[derive(Clone, Debug, Default)]
pub struct PolkitConfig {
    policies: Vec<PathBuf>,
    generated_policies: Vec<(String, String)>,
    rules: Vec<PathBuf>,
    inline_rules: Vec<(String, String)>,
}

/// A test-only grant, not the shipped example: members of group `rdma` may do every one of
/// rdma-manager's actions, with or without a session. Tests that need an authorized
/// unprivileged caller use it ([`PolkitConfig::harness_group_grant`]); the shipped rule grants
/// only callers in an active login session, which this harness has none of, and is tested as
/// shipped through [`PolkitConfig::rdma_group_rule`].
pub const HARNESS_GROUP_GRANT: &str = r#"polkit.addRule(function(action, subject) {
    if (action.id.indexOf("org.rdmamanager.rdmamanager1.") == 0 && subject.isInGroup("rdma")) {
        return polkit.Result.YES;
    }
});
"#;

impl PolkitConfig {
    /// No actions and no rules.
    pub fn new() -> Self {
        Self::default()
    }

    /// rdma-manager's actions: dist/polkit/org.rdmamanager.rdmamanager1.policy when the project
    /// has it, else [`PolkitConfig::generated_rdma_manager_policy`].
    pub fn rdma_manager() -> Self {
        let shipped = dist_file("polkit/org.rdmamanager.rdmamanager1.policy");
        if shipped.is_file() {
            Self::new().policy_file(shipped)
        } else {
            Self::new().generated_rdma_manager_policy()
        }
    }

    /// Adds a generated policy for all of rdma-manager's actions with defaults
    /// allow_any=auth_admin, allow_inactive=auth_admin, allow_active=auth_admin_keep.
    pub fn generated_rdma_manager_policy(mut self) -> Self {
        self.generated_policies.push((
            "org.rdmamanager.rdmamanager1.policy".into(),
            generated_action_policy(),
        ));
        self
    }

    /// Adds an action policy file (`*.policy`).
    pub fn policy_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.policies.push(path.into());
        self
    }

    /// Adds a rules file (`*.rules`, JavaScript).
    pub fn rules_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.rules.push(path.into());
        self
    }

    /// Adds a rules file with the given name and text.
    pub fn rules(mut self, file_name: &str, js: &str) -> Self {
        self.inline_rules.push((file_name.into(), js.into()));
        self
    }

    /// Adds the example rule exactly as shipped, dist/polkit/50-rdma-manager-rdma-group.rules:
    /// group `rdma` gets the network actions from an active login session only.
    pub fn rdma_group_rule(self) -> Self {
        self.rules_file(dist_file("polkit/50-rdma-manager-rdma-group.rules"))
    }

    /// Adds [`HARNESS_GROUP_GRANT`], the test-only rule that grants every action to group
    /// `rdma` without a session.
    pub fn harness_group_grant(self) -> Self {
        self.rules("90-test-harness-group-grant.rules", HARNESS_GROUP_GRANT)
    }

    /// Fills `actions` and `rules` with copies of the configured files.
    fn populate(&self, actions: &Path, rules: &Path) -> Result<()> {
        let copy = |from: &Path, dir: &Path| -> Result<()> {
            let name = from.file_name().context("a file path without a name")?;
            let text = std::fs::read_to_string(from)
                .with_context(|| format!("reading {}", from.display()))?;
            write_public(&dir.join(name), &text)
        };
        for p in &self.policies {
            copy(p, actions)?;
        }
        for p in &self.rules {
            copy(p, rules)?;
        }
        for (name, text) in &self.generated_policies {
            write_public(&actions.join(name), text)?;
        }
        for (name, text) in &self.inline_rules {
            write_public(&rules.join(name), text)?;
        }
        Ok(())
    }
}

/// A minimal valid polkit action policy for every [`Action`].
pub fn generated_action_policy() -> String {
    let mut xml = String::from(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE policyconfig PUBLIC "-//freedesktop//DTD PolicyKit Policy Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/PolicyKit/1/policyconfig.dtd">
<policyconfig>
  <vendor>rdma-manager</vendor>
"#,
    );
    for action in Action::ALL {
        // The ids are fixed ASCII; writing to a String cannot fail.
        let _ = write!(
            xml,
            r#"  <action id="{id}">
    <description>{id}</description>
    <message>Authentication is required for {id}</message>
    <defaults>
      <allow_any>auth_admin</allow_any>
      <allow_inactive>auth_admin</allow_inactive>
      <allow_active>auth_admin_keep</allow_active>
    </defaults>
  </action>
"#,
            id = action.id()
        );
    }
    xml.push_str("</policyconfig>\n");
    xml
}

/// The real polkitd on a [`PrivateBus`], killed on drop.
#[derive(Debug)]
pub struct PrivatePolkit {
    daemon: Daemon,
    _dir: TempDir,
}

impl PrivatePolkit {
    /// Starts polkitd on `bus` with `config`'s actions and rules and `users` as its user
    /// database, in a private mount namespace, and waits until it owns
    /// `org.freedesktop.PolicyKit1`.
    pub async fn start(bus: &PrivateBus, users: &UserDb, config: &PolkitConfig) -> Result<Self> {
        let dir = public_temp_dir("rdma-polkit-")?;
        let actions = dir.path().join("actions");
        let rules = dir.path().join("rules.d");
        let empty = dir.path().join("empty");
        for d in [&actions, &rules, &empty] {
            std::fs::create_dir(d).with_context(|| format!("mkdir {}", d.display()))?;
            make_public(d, 0o755)?;
        }
        config.populate(&actions, &rules)?;
        let mut binds = vec![
            Bind {
                source: actions,
                target: "/usr/share/polkit-1/actions".into(),
            },
            Bind {
                source: rules,
                target: "/etc/polkit-1/rules.d".into(),
            },
            Bind {
                source: empty,
                target: "/usr/share/polkit-1/rules.d".into(),
            },
        ];
        binds.extend(users.binds());
        let log = dir.path().join("polkitd.log");
        let log_file = std::fs::File::create(&log).context("creating the polkitd log")?;
        let mut cmd = Command::new(POLKITD);
        cmd.env("DBUS_SYSTEM_BUS_ADDRESS", bus.address())
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().context("duplicating the log fd")?)
            .stderr(log_file);
        in_private_mounts(&mut cmd, &binds)?;
        let child = cmd.spawn().context("starting polkitd")?;
        let mut daemon = Daemon { child, log };
        bus.wait_for_owner(POLKIT_BUS_NAME, START_TIMEOUT, Some(&mut daemon))
            .await?;
        Ok(Self { daemon, _dir: dir })
    }

    /// What polkitd wrote (rules loaded, warnings such as unknown actions).
    pub fn log(&self) -> String {
        self.daemon.log()
    }
}

/// Whom a client command runs as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
}

impl Credentials {
    /// `rdmatest`, with group `rdma` among its supplementary groups or not (polkit itself
    /// reads group membership from the user database, see [`UserDb`]).
    pub fn test_user(in_rdma_group: bool) -> Self {
        Self {
            uid: TEST_UID,
            gid: TEST_UID,
            groups: if in_rdma_group {
                vec![RDMA_GID]
            } else {
                Vec::new()
            },
        }
    }

    /// Makes `cmd` run with these credentials (supplementary groups, gid, then uid).
    pub fn apply<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        let Credentials { uid, gid, groups } = self.clone();
        // SAFETY: the closure runs in the forked child before exec and only makes system calls
        // on memory prepared before the fork.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setgroups(groups.len(), groups.as_ptr()) != 0
                    || libc::setgid(gid) != 0
                    || libc::setuid(uid) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_entries_drops_names_and_ids() {
        let text =
            "root:x:0:0::/root:/bin/bash\nrdma:x:120:\nold:x:4242:4242::/:/bin/sh\nkeep:x:7:\n";
        assert_eq!(
            without_entries(text, &["rdma"], &[4242]),
            "root:x:0:0::/root:/bin/bash\nkeep:x:7:\n"
        );
    }

    #[test]
    fn generated_policy_names_every_action() {
        let xml = generated_action_policy();
        for a in Action::ALL {
            assert!(xml.contains(&format!(r#"<action id="{}">"#, a.id())));
        }
    }

    #[test]
    fn bus_config_keeps_the_order_of_policies_and_includes() {
        let xml = BusConfig::system()
            .include("/x/a&b.conf")
            .policy("<policy user=\"root\"/>")
            .render(Path::new("/tmp/s"))
            .unwrap();
        assert!(xml.contains("<listen>unix:path=/tmp/s</listen>"));
        assert!(xml.contains("<type>system</type>"));
        assert!(xml.contains("<include>/x/a&amp;b.conf</include>"));
        let policy = xml.find("<policy user=\"root\"/>").unwrap();
        assert!(xml.find("<include>").unwrap() < policy);
    }
}

/// What busctl got back from a method call.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Success, with busctl's output (`o "/org/..."`, ...).
    Ok(String),
    /// The D-Bus error name without the service's prefix, and busctl's message.
    Err(String, String),
}

/// `busctl call BUS_NAME PATH IFACE METHOD [SIGNATURE ARGS...]` as `who` (root when None).
/// busctl prints only the error's message, so its sd-bus debug log is asked for the name.
pub async fn busctl_call(
    bus: &PrivateBus,
    who: Option<&Credentials>,
    interactive: bool,
    path: &str,
    iface: &str,
    method: &str,
    args: &[String],
) -> Result<Reply> {
    let mut cmd: Command = bus.busctl();
    cmd.env("SYSTEMD_LOG_LEVEL", "debug")
        .arg(format!(
            "--allow-interactive-authorization={}",
            if interactive { "yes" } else { "no" }
        ))
        .args([
            "--timeout=10",
            "call",
            rdma_manager_dbus::BUS_NAME,
            path,
            iface,
            method,
        ])
        .args(args);
    if let Some(who) = who {
        who.apply(&mut cmd);
    }
    let out = tokio::process::Command::from(cmd)
        .output()
        .await
        .context("running busctl")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        return Ok(Reply::Ok(
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
        ));
    }
    let name = stderr
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("error-name="))
        .find(|n| *n != "n/a")
        .with_context(|| format!("no error name in busctl's output:\n{stderr}"))?;
    let message = stderr
        .lines()
        .find_map(|l| l.strip_prefix("Call failed: "))
        .unwrap_or_default();
    let short = name
        .strip_prefix(rdma_manager_dbus::ERROR_PREFIX)
        .and_then(|n| n.strip_prefix('.'))
        .unwrap_or(name);
    Ok(Reply::Err(short.to_string(), message.to_string()))
}
