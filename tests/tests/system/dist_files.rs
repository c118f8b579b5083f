//! The packaging and integration files (`dist/`, `udev-rules/`, the top-level `Makefile`),
//! checked with the tools that consume them: `make install` into a scratch root, the polkit
//! DTD, a private `dbus-daemon` running the bus policy and the activation file, `systemd-analyze
//! verify`, `groff`, and `udevadm verify` where udev has it. Names are compared with the
//! constants of `rdma-manager-dbus`, so the files cannot drift from the code.
//!
//! A check whose tool is missing prints why and passes, unless `RDMA_MANAGER_REQUIRE_TOOLS=1`
//! is set (CI), where a missing tool is a failure. The bus policy's ownership and access checks
//! need root; without it they are skipped the same way.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use anyhow::{bail, ensure, Context, Result};
use rdma_manager_dbus::{Action, BUS_NAME, POLKIT_PREFIX, ROOT_PATH};

const UNIT: &str = "rdma-managerd.service";
const POLKIT_POLICY: &str = "org.rdmamanager.rdmamanager1.policy";
const RULES_EXAMPLE: &str = "50-rdma-manager-rdma-group.rules";
const UDEV_RULES: &str = "90-rdma-manager.rules";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lives in the workspace")
        .to_path_buf()
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// The tool on PATH, or `None` after saying which package provides it (an error when CI asks
/// for every tool).
fn tool(name: &str, package: &str) -> Result<Option<PathBuf>> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        if require_tools() {
            bail!("{name} is missing (Debian package {package}) and RDMA_MANAGER_REQUIRE_TOOLS=1");
        }
        eprintln!("skipping this check: {name} not found (Debian package {package})");
    }
    Ok(found)
}

/// CI sets RDMA_MANAGER_REQUIRE_TOOLS=1: then no check may be skipped (for a missing tool, or
/// for want of root).
fn require_tools() -> bool {
    rdma_manager_tests::bus::tools_required()
}

fn run(cmd: &mut Command) -> Result<Output> {
    cmd.output().with_context(|| format!("running {cmd:?}"))
}

fn ensure_success(what: &str, out: &Output) -> Result<()> {
    ensure!(
        out.status.success(),
        "{what} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// make install / uninstall

/// `make -C <repository> ARGS...`.
fn make(args: &[String]) -> Result<Output> {
    run(Command::new("make").arg("-C").arg(repo()).args(args))
}

/// A scratch root filled by `make install`, with placeholder binaries.
struct Installed {
    dir: tempfile::TempDir,
}

impl Installed {
    fn bin_src(dir: &Path) -> Result<PathBuf> {
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin)?;
        for b in ["rdma-managerd", "rdma-tui", "rdma-cli", "rdma-exporter"] {
            let p = bin.join(b);
            std::fs::write(&p, "#!/bin/sh\nexit 0\n")?;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))?;
        }
        Ok(bin)
    }

    /// `make install DESTDIR=<scratch>/root` plus `extra` variables.
    fn new(extra: &[&str]) -> Result<Installed> {
        let dir = tempfile::tempdir()?;
        let bin = Self::bin_src(dir.path())?;
        let mut args = vec![
            "install".to_string(),
            format!("DESTDIR={}", dir.path().join("root").display()),
            format!("BINDIR_SRC={}", bin.display()),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        ensure_success("make install", &make(&args)?)?;
        Ok(Installed { dir })
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    fn path(&self, p: &str) -> PathBuf {
        self.root().join(p.trim_start_matches('/'))
    }
}

/// The files of the Ansible collection rdmamanager.rdma that a host needs to run it.
const ANSIBLE_COLLECTION_FILES: [&str; 9] = [
    "galaxy.yml",
    "meta/runtime.yml",
    "README.md",
    "COPYING",
    "plugins/action/rdma_state.py",
    "plugins/module_utils/rdma_cli.py",
    "plugins/modules/rdma_confirm.py",
    "plugins/modules/rdma_facts.py",
    "plugins/modules/rdma_state.py",
];

/// Every file `make install` puts down with default directories, and its mode.
fn expected_files() -> Result<BTreeMap<String, u32>> {
    let mut files: BTreeMap<String, u32> = [
        ("/usr/sbin/rdma-managerd", 0o755),
        ("/usr/bin/rdma-tui", 0o755),
        ("/usr/bin/rdma-cli", 0o755),
        ("/usr/bin/rdma-exporter", 0o755),
        ("/usr/lib/systemd/system/rdma-exporter.service", 0o644),
        ("/usr/lib/systemd/system/rdma-exporter.socket", 0o644),
        ("/usr/share/man/man1/rdma-exporter.1", 0o644),
        (
            "/usr/share/doc/rdma-manager/examples/prometheus/prometheus.yml",
            0o644,
        ),
        (
            "/usr/share/doc/rdma-manager/examples/prometheus/rdma-alerts.yml",
            0o644,
        ),
        (
            "/usr/share/doc/rdma-manager/examples/prometheus/rdma-alerts.test.yml",
            0o644,
        ),
        (
            "/usr/share/doc/rdma-manager/examples/prometheus/grafana-dashboard.json",
            0o644,
        ),
        ("/usr/lib/systemd/system/rdma-managerd.service", 0o644),
        (
            "/usr/share/dbus-1/system.d/org.rdmamanager.RdmaManager1.conf",
            0o644,
        ),
        (
            "/usr/share/dbus-1/system-services/org.rdmamanager.RdmaManager1.service",
            0o644,
        ),
        (
            "/usr/share/polkit-1/actions/org.rdmamanager.rdmamanager1.policy",
            0o644,
        ),
        ("/usr/lib/udev/rules.d/90-rdma-manager.rules", 0o644),
        ("/usr/share/man/man8/rdma-managerd.8", 0o644),
        ("/usr/share/man/man1/rdma-tui.1", 0o644),
        ("/usr/share/man/man1/rdma-cli.1", 0o644),
        (
            "/usr/share/doc/rdma-manager/examples/50-rdma-manager-rdma-group.rules",
            0o644,
        ),
        (
            "/usr/share/applications/org.rdmamanager.RdmaTui.desktop",
            0o644,
        ),
        ("/usr/share/bash-completion/completions/rdma-tui", 0o644),
        ("/usr/share/zsh/vendor-completions/_rdma-tui", 0o644),
        ("/usr/share/fish/vendor_completions.d/rdma-tui.fish", 0o644),
        ("/usr/share/bash-completion/completions/rdma-cli", 0o644),
        ("/usr/share/zsh/vendor-completions/_rdma-cli", 0o644),
        ("/usr/share/fish/vendor_completions.d/rdma-cli.fish", 0o644),
        (
            "/usr/share/bash-completion/completions/rdma-managerd",
            0o644,
        ),
        ("/usr/share/zsh/vendor-completions/_rdma-managerd", 0o644),
        (
            "/usr/share/fish/vendor_completions.d/rdma-managerd.fish",
            0o644,
        ),
    ]
    .into_iter()
    .map(|(p, m)| (p.to_string(), m))
    .collect();
    // Whatever introspection XML exists (none is fine).
    let xml_dir = repo().join("dbus-interfaces/xml");
    if xml_dir.is_dir() {
        for e in std::fs::read_dir(&xml_dir)? {
            let name = e?.file_name().to_string_lossy().into_owned();
            if name.ends_with(".xml") {
                files.insert(format!("/usr/share/dbus-1/interfaces/{name}"), 0o644);
            }
        }
    }
    // The Ansible collection, where ansible-core finds it without configuration, and its guide.
    for f in ANSIBLE_COLLECTION_FILES {
        files.insert(
            format!("/usr/share/ansible/collections/ansible_collections/rdmamanager/rdma/{f}"),
            0o644,
        );
    }
    files.insert("/usr/share/doc/rdma-manager/ANSIBLE.md".into(), 0o644);
    Ok(files)
}

/// Every regular file under `root`, as absolute paths inside it, with its permission bits.
fn files_under(root: &Path) -> Result<BTreeMap<String, u32>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, u32>) -> Result<()> {
        for e in std::fs::read_dir(dir)? {
            let e = e?;
            let meta = std::fs::symlink_metadata(e.path())?;
            if meta.is_dir() {
                walk(root, &e.path(), out)?;
            } else {
                let rel = e.path().strip_prefix(root)?.display().to_string();
                out.insert(format!("/{rel}"), meta.permissions().mode() & 0o7777);
            }
        }
        Ok(())
    }
    let mut out = BTreeMap::new();
    if root.exists() {
        walk(root, root, &mut out)?;
    }
    Ok(out)
}

#[test]
fn make_install_puts_every_file_in_place_and_uninstall_removes_them() -> Result<()> {
    if tool("make", "make")?.is_none() {
        return Ok(());
    }
    let inst = Installed::new(&[])?;
    assert_eq!(files_under(&inst.root())?, expected_files()?);
    let etc = std::fs::metadata(inst.path("/etc/rdma-manager"))
        .context("make install creates /etc/rdma-manager")?;
    ensure!(etc.is_dir(), "/etc/rdma-manager is not a directory");
    assert_eq!(etc.permissions().mode() & 0o7777, 0o755);
    // The unit and the activation file start the binary where it was installed.
    let unit = read(&inst.path("/usr/lib/systemd/system/rdma-managerd.service"))?;
    ensure!(unit.contains("\nExecStart=/usr/sbin/rdma-managerd\n"));

    let out = make(&[
        "uninstall".into(),
        format!("DESTDIR={}", inst.root().display()),
    ])?;
    ensure_success("make uninstall", &out)?;
    let left = files_under(&inst.root())?;
    ensure!(left.is_empty(), "make uninstall left {left:?}");
    // The administrator's configuration and state stay.
    ensure!(inst.path("/etc/rdma-manager").is_dir());
    Ok(())
}

#[test]
fn make_install_honours_directory_variables() -> Result<()> {
    if tool("make", "make")?.is_none() {
        return Ok(());
    }
    let scratch = tempfile::tempdir()?;
    let xml: Vec<PathBuf> = ["org.example.A.xml", "org.example.B.xml"]
        .iter()
        .map(|n| scratch.path().join(n))
        .collect();
    for x in &xml {
        std::fs::write(x, "<node/>\n")?;
    }
    let xml_list = xml
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    let inst = Installed::new(&[
        "PREFIX=/opt/rdma",
        "SYSCONFDIR=/opt/rdma/etc",
        "UNITDIR=/lib/systemd/system",
        &format!("INTERFACE_XML={xml_list}"),
    ])?;
    let files = files_under(&inst.root())?;
    for (p, mode) in [
        ("/opt/rdma/sbin/rdma-managerd", 0o755),
        ("/opt/rdma/bin/rdma-tui", 0o755),
        ("/opt/rdma/bin/rdma-cli", 0o755),
        ("/lib/systemd/system/rdma-managerd.service", 0o644),
        ("/opt/rdma/lib/udev/rules.d/90-rdma-manager.rules", 0o644),
        ("/opt/rdma/share/dbus-1/interfaces/org.example.A.xml", 0o644),
        ("/opt/rdma/share/dbus-1/interfaces/org.example.B.xml", 0o644),
    ] {
        assert_eq!(files.get(p), Some(&mode), "{p} in {files:#?}");
    }
    ensure!(inst.path("/opt/rdma/etc/rdma-manager").is_dir());
    ensure!(!inst.path("/usr").exists() && !inst.path("/etc").exists());
    // The binary's path is rewritten where it is named.
    let unit = read(&inst.path("/lib/systemd/system/rdma-managerd.service"))?;
    ensure!(unit.contains("\nExecStart=/opt/rdma/sbin/rdma-managerd\n"));
    let activation = read(
        &inst.path("/opt/rdma/share/dbus-1/system-services/org.rdmamanager.RdmaManager1.service"),
    )?;
    ensure!(activation.contains("\nExec=/opt/rdma/sbin/rdma-managerd\n"));
    let exporter = read(&inst.path("/lib/systemd/system/rdma-exporter.service"))?;
    ensure!(exporter.contains("\nExecStart=/opt/rdma/bin/rdma-exporter\n"));
    Ok(())
}

#[test]
fn make_install_without_built_binaries_says_what_to_do() -> Result<()> {
    if tool("make", "make")?.is_none() {
        return Ok(());
    }
    let scratch = tempfile::tempdir()?;
    let out = make(&[
        "install".into(),
        format!("DESTDIR={}", scratch.path().join("root").display()),
        format!("BINDIR_SRC={}", scratch.path().join("none").display()),
    ])?;
    ensure!(!out.status.success(), "install without binaries succeeded");
    let err = String::from_utf8_lossy(&out.stderr);
    ensure!(err.contains("make build"), "unhelpful message: {err}");
    ensure!(
        !scratch.path().join("root").exists(),
        "it installed something"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The systemd unit and the D-Bus activation file

/// `[section] -> key -> values` of a systemd-style file (keys may repeat).
type Ini = BTreeMap<String, BTreeMap<String, Vec<String>>>;

fn parse_ini(text: &str) -> Result<Ini> {
    let mut out = Ini::new();
    let mut section: Option<String> = None;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = Some(name.to_string());
            out.entry(name.to_string()).or_default();
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            bail!("line {}: not key=value: {line}", n + 1);
        };
        let Some(s) = &section else {
            bail!("line {}: key before any [section]", n + 1);
        };
        out.entry(s.clone())
            .or_default()
            .entry(k.trim().to_string())
            .or_default()
            .push(v.trim().to_string());
    }
    Ok(out)
}

fn one<'a>(ini: &'a Ini, section: &str, key: &str) -> Result<&'a str> {
    match ini.get(section).and_then(|s| s.get(key)).map(Vec::as_slice) {
        Some([v]) => Ok(v),
        Some(vs) => bail!("[{section}] {key}= is set {} times", vs.len()),
        None => bail!("[{section}] has no {key}="),
    }
}

#[test]
fn unit_and_activation_file_agree_with_each_other_and_the_code() -> Result<()> {
    let unit = parse_ini(&read(&repo().join("dist/systemd").join(UNIT))?)?;
    let activation = parse_ini(&read(
        &repo().join(format!("dist/dbus/{BUS_NAME}.service")),
    )?)?;
    let alias = format!("dbus-{BUS_NAME}.service");

    // READY=1 when start-up is over (the name is owned before it: see dbus/server.rs).
    assert_eq!(one(&unit, "Service", "Type")?, "notify");
    assert_eq!(one(&unit, "Service", "BusName")?, BUS_NAME);
    assert_eq!(
        one(&unit, "Service", "ExecStart")?,
        "/usr/sbin/rdma-managerd"
    );
    assert_eq!(one(&unit, "Install", "WantedBy")?, "multi-user.target");
    // The direct socket lives in the unit's runtime directory (made and removed by systemd).
    let runtime = one(&unit, "Service", "RuntimeDirectory")?;
    assert_eq!(
        rdma_manager_dbus::DIRECT_SOCKET_PATH,
        format!("/run/{runtime}/direct")
    );
    assert_eq!(one(&unit, "Install", "Alias")?, alias);

    assert_eq!(one(&activation, "D-BUS Service", "Name")?, BUS_NAME);
    assert_eq!(
        one(&activation, "D-BUS Service", "Exec")?,
        one(&unit, "Service", "ExecStart")?
    );
    assert_eq!(one(&activation, "D-BUS Service", "User")?, "root");
    assert_eq!(one(&activation, "D-BUS Service", "SystemdService")?, alias);

    // The sandbox: one capability for the daemon's work, the three the link tests'
    // children need to drop to nobody, the one that stops them there, and the one ping
    // keeps, read-only system, writable where the daemon writes.
    assert_eq!(
        one(&unit, "Service", "CapabilityBoundingSet")?,
        "CAP_NET_ADMIN CAP_NET_RAW CAP_SETUID CAP_SETGID CAP_SETPCAP CAP_KILL"
    );
    for (key, value) in [
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("ProtectKernelTunables", "yes"),
        ("ProtectKernelModules", "yes"),
        (
            "RestrictAddressFamilies",
            "AF_UNIX AF_NETLINK AF_INET AF_INET6",
        ),
        ("LockPersonality", "yes"),
        ("RestrictRealtime", "yes"),
        ("SystemCallArchitectures", "native"),
        ("MemoryDenyWriteExecute", "yes"),
        ("RestrictNamespaces", "yes"),
        ("ConfigurationDirectory", "rdma-manager"),
    ] {
        assert_eq!(one(&unit, "Service", key)?, value, "{key}=");
    }
    let rw: BTreeSet<&str> = unit["Service"]["ReadWritePaths"]
        .iter()
        .map(|p| p.trim_start_matches('-'))
        .collect();
    let want: BTreeSet<&str> = [
        "/etc/rdma-manager",
        "/etc/udev/rules.d",
        "/sys/kernel/config",
        "/etc/rdma/modules",
        "/etc/security/limits.d",
        "/etc/nfs.conf.d",
        rdma_managerd::ipmgr::networkd_file::NETWORK_DIR,
        "/etc/rdma",
        "/sys/bus/pci/drivers",
    ]
    .into();
    assert_eq!(rw, want, "ReadWritePaths=");
    Ok(())
}

/// The capabilities a daemon running under the shipped unit has (root's, within the unit's
/// bounding set), as a mask.
fn unit_capabilities() -> Result<u64> {
    let unit = parse_ini(&read(&repo().join("dist/systemd").join(UNIT))?)?;
    let mut mask = 0u64;
    for name in one(&unit, "Service", "CapabilityBoundingSet")?.split_whitespace() {
        // linux/capability.h
        let bit = match name {
            "CAP_KILL" => 5,
            "CAP_SETGID" => 6,
            "CAP_SETUID" => 7,
            "CAP_SETPCAP" => 8,
            "CAP_NET_ADMIN" => 12,
            "CAP_NET_RAW" => 13,
            other => bail!("{other}: add its number here"),
        };
        mask |= 1 << bit;
    }
    Ok(mask)
}

/// Sets this thread's effective capabilities (capabilities are per thread; a child forked
/// from it starts with them), keeping the permitted set to restore them from.
fn set_effective_capabilities(mask: u64) -> Result<u64> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget and capset with the version-3 header and its two data structs.
    unsafe {
        ensure!(
            libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) == 0,
            "capget: {}",
            std::io::Error::last_os_error()
        );
        let before = u64::from(data[0].effective) | u64::from(data[1].effective) << 32;
        data[0].effective = mask as u32;
        data[1].effective = (mask >> 32) as u32;
        ensure!(
            libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) == 0,
            "capset: {}",
            std::io::Error::last_os_error()
        );
        Ok(before)
    }
}

/// What the link tests do at a timeout (and the responder when turned off): kill the tool's
/// process group, whose processes run as nobody. Done here with exactly the capabilities
/// the shipped unit leaves the daemon, every process of the group must be gone.
#[tokio::test(flavor = "current_thread")]
async fn the_units_capabilities_let_the_daemon_stop_its_link_test_tools() -> Result<()> {
    use rdma_managerd::linktest::sandbox::{Runner, Sandbox, SandboxRunner};
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        ensure!(!require_tools(), "needs root");
        eprintln!("skipped: needs root (the tools drop to nobody)");
        return Ok(());
    }
    // A duration no other process here sleeps: how the tool's processes are found.
    let marker = format!("{}", 40_000 + std::process::id() % 10_000);
    let before = set_effective_capabilities(unit_capabilities()?)?;
    let runner = SandboxRunner {
        sandbox: Sandbox::unprivileged(),
    };
    let out = runner
        .run(
            Path::new("/bin/sh"),
            &["-c".into(), format!("sleep {marker} & sleep {marker}")],
            std::time::Duration::from_millis(500),
        )
        .await;
    set_effective_capabilities(before)?;
    ensure!(out?.timed_out, "the tool was to run past its timeout");
    let left = || -> Vec<String> {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.trim_end() == format!("sleep {marker}"))
            .collect()
    };
    let t0 = std::time::Instant::now();
    while !left().is_empty() {
        ensure!(
            t0.elapsed() < std::time::Duration::from_secs(5),
            "the tool's processes outlived their kill: {:?}",
            left()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    Ok(())
}

#[test]
fn systemd_analyze_verifies_the_installed_unit() -> Result<()> {
    if tool("make", "make")?.is_none() {
        return Ok(());
    }
    let Some(analyze) = tool("systemd-analyze", "systemd")? else {
        return Ok(());
    };
    let inst = Installed::new(&[])?;
    // verify checks that ExecStart= is executable; point it at the placeholder binary that
    // make installed, and check nothing else changed.
    let text = read(&inst.path("/usr/lib/systemd/system").join(UNIT))?;
    let placeholder = inst.path("/usr/sbin/rdma-managerd");
    let from = "\nExecStart=/usr/sbin/rdma-managerd\n";
    ensure!(text.matches(from).count() == 1, "one ExecStart= expected");
    let text = text.replace(from, &format!("\nExecStart={}\n", placeholder.display()));
    let dir = tempfile::tempdir()?;
    let unit = dir.path().join(UNIT);
    std::fs::write(&unit, text)?;
    let out = run(Command::new(analyze)
        .args(["verify", "--man=no"])
        .arg(&unit)
        .env("SYSTEMD_LOG_COLOR", "0"))?;
    ensure_success("systemd-analyze verify", &out)?;
    // Unknown keys and bad values are warnings ("... ignoring"), not failures: any output is one.
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    ensure!(said.trim().is_empty(), "systemd-analyze verify:\n{said}");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// polkit

/// The text between `<tag>` and `</tag>` in `xml`, each occurrence.
fn elements<'a>(xml: &'a str, tag: &str) -> Vec<&'a str> {
    let (open, close) = (format!("<{tag}"), format!("</{tag}>"));
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find(&open) {
        let after = &rest[start + open.len()..];
        // `<tag>` or `<tag attr...>`, not `<tagother>`.
        if !after.starts_with(['>', ' ', '\n', '\t']) {
            rest = after;
            continue;
        }
        let Some(end) = after.find(&close) else {
            break;
        };
        out.push(&after[..end]);
        rest = &after[end + close.len()..];
    }
    out
}

fn element_text<'a>(xml: &'a str, tag: &str) -> Result<&'a str> {
    match elements(xml, tag).as_slice() {
        [one] => Ok(one.trim_start_matches('>').trim()),
        other => bail!("expected one <{tag}>, found {}", other.len()),
    }
}

#[test]
fn polkit_policy_declares_every_action_of_the_code() -> Result<()> {
    let path = repo().join("dist/polkit").join(POLKIT_POLICY);
    if let Some(xmllint) = tool("xmllint", "libxml2-utils")? {
        let dtd = Path::new("/usr/share/polkit-1/policyconfig-1.dtd");
        let mut cmd = Command::new(xmllint);
        cmd.arg("--noout").arg("--nonet");
        if dtd.exists() {
            cmd.arg("--dtdvalid").arg(dtd);
        } else if require_tools() {
            bail!("{} is missing (Debian package polkitd)", dtd.display());
        } else {
            eprintln!(
                "{} not found (Debian package polkitd): checking well-formedness only",
                dtd.display()
            );
        }
        ensure_success("xmllint", &run(cmd.arg(&path))?)?;
    }
    let xml = read(&path)?;
    assert_eq!(element_text(&xml, "vendor")?, "rdma-manager");
    let mut ids = BTreeSet::new();
    for action in elements(&xml, "action") {
        let (head, body) = action
            .split_once('>')
            .context("an <action> without its '>'")?;
        let id = head
            .trim()
            .strip_prefix("id=\"")
            .and_then(|s| s.strip_suffix('"'))
            .with_context(|| format!("<action{head}> has no id"))?;
        ensure!(
            !element_text(body, "description")?.is_empty(),
            "{id}: empty description"
        );
        ensure!(
            !element_text(body, "message")?.is_empty(),
            "{id}: empty message"
        );
        let defaults = element_text(body, "defaults")?;
        for (who, want) in [
            ("allow_any", "auth_admin"),
            ("allow_inactive", "auth_admin"),
            ("allow_active", "auth_admin_keep"),
        ] {
            assert_eq!(element_text(defaults, who)?, want, "{id} {who}");
        }
        ensure!(ids.insert(id.to_string()), "{id} declared twice");
    }
    let code: BTreeSet<String> = Action::ALL.iter().map(|a| a.id().to_string()).collect();
    assert_eq!(
        ids, code,
        "the policy's actions and rdma_manager_dbus::Action"
    );
    Ok(())
}

/// `text` without `//` and `/* */` comments and with string literals emptied, enough to
/// count brackets in a small JavaScript file.
fn js_code_only(text: &str) -> Result<String> {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = ' ';
                loop {
                    let Some(c) = chars.next() else {
                        bail!("unterminated /* comment");
                    };
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
            }
            '"' | '\'' => {
                out.push(c);
                loop {
                    match chars.next() {
                        Some('\\') => {
                            chars.next();
                        }
                        Some(q) if q == c => break,
                        Some('\n') | None => bail!("unterminated string"),
                        Some(_) => {}
                    }
                }
                out.push(c);
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

#[test]
fn polkit_rules_example_grants_the_network_actions_to_active_sessions_of_group_rdma() -> Result<()>
{
    let text = read(&repo().join("dist/polkit").join(RULES_EXAMPLE))?;
    let code = js_code_only(&text)?;
    let mut stack = Vec::new();
    for c in code.chars() {
        match c {
            '(' | '{' | '[' => stack.push(c),
            ')' | '}' | ']' => {
                let open = stack.pop();
                let want = match c {
                    ')' => '(',
                    '}' => '{',
                    _ => '[',
                };
                ensure!(open == Some(want), "unbalanced {c}");
            }
            _ => {}
        }
    }
    ensure!(stack.is_empty(), "unclosed {stack:?}");
    ensure!(code
        .trim_start()
        .starts_with("polkit.addRule(function(action, subject)"));
    // The rule's text without its comment lines (which name manage-host to say why not).
    let rule: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    for needle in [
        format!("\"{POLKIT_PREFIX}.manage-links\""),
        format!("\"{POLKIT_PREFIX}.manage-ipoib\""),
        format!("\"{POLKIT_PREFIX}.manage-roce\""),
        format!("\"{POLKIT_PREFIX}.manage-naming\""),
        format!("\"{POLKIT_PREFIX}.test-link\""),
        "subject.active".to_string(),
        "subject.isInGroup(\"rdma\")".to_string(),
        "return polkit.Result.YES;".to_string(),
    ] {
        ensure!(rule.contains(&needle), "the example lacks {needle}");
    }
    // Host setup and adapter settings stay with an administrator; a prefix match would
    // grant them too.
    ensure!(
        !rule.contains("manage-host")
            && !rule.contains("manage-adapter")
            && !rule.contains(&format!("\"{POLKIT_PREFIX}.\"")),
        "the example grants host setup or adapter settings"
    );
    // polkit's JavaScript engine (duktape) is ES5: no startsWith, arrow functions or let.
    for es6 in ["startsWith", "=>", "let ", "const "] {
        ensure!(!code.contains(es6), "the example uses {es6:?}");
    }
    ensure!(
        text.contains("/etc/polkit-1/rules.d/"),
        "no activation hint"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The D-Bus bus policy, in a private dbus-daemon

/// A private bus with the system bus's default policy (as in dbus's system.conf), our policy
/// included after it as system.d files are, and our activation file in its service directory.
struct PrivateBus {
    child: std::process::Child,
    address: String,
    _dir: tempfile::TempDir,
}

impl Drop for PrivateBus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A name only the test's own config lets root own, to show that the default policy denies
/// calls: the same calls that reach rdma-managerd fail here.
const CONTROL_NAME: &str = "org.rdmamanager.TestControl";

fn start_private_bus(dbus_daemon: &Path) -> Result<PrivateBus> {
    use std::io::BufRead;
    let dir = tempfile::tempdir()?;
    // World-searchable, so an unprivileged client can reach the socket.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
    let services = dir.path().join("services");
    std::fs::create_dir(&services)?;
    let activation = format!("{BUS_NAME}.service");
    std::fs::copy(
        repo().join("dist/dbus").join(&activation),
        services.join(&activation),
    )?;
    let policy = repo().join(format!("dist/dbus/{BUS_NAME}.conf"));
    let socket = dir.path().join("bus");
    let config = dir.path().join("bus.conf");
    std::fs::write(
        &config,
        format!(
            r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <servicedir>{services}</servicedir>
{default_policy}
  <policy user="root">
    <allow own="{CONTROL_NAME}"/>
  </policy>
  <include>{policy}</include>
</busconfig>
"#,
            socket = socket.display(),
            services = services.display(),
            policy = policy.display(),
            default_policy = rdma_manager_tests::bus::SYSTEM_DEFAULT_POLICY,
        ),
    )?;
    let mut child = Command::new(dbus_daemon)
        .arg(format!("--config-file={}", config.display()))
        .args(["--print-address", "--nofork"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting dbus-daemon")?;
    let stdout = child.stdout.take().context("dbus-daemon stdout")?;
    let mut address = String::new();
    // The address once it listens; EOF if the configuration (our policy) is refused.
    std::io::BufReader::new(stdout).read_line(&mut address)?;
    if address.trim().is_empty() {
        let out = child.wait_with_output()?;
        bail!(
            "dbus-daemon refused the configuration: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666))?;
    Ok(PrivateBus {
        child,
        address: address.trim().to_string(),
        _dir: dir,
    })
}

/// Stands in for rdma-managerd on the private bus.
struct Probe;

#[zbus::interface(name = "org.rdmamanager.RdmaManager1")]
impl Probe {
    fn echo(&self, text: String) -> String {
        text
    }

    #[zbus(property)]
    fn version(&self) -> String {
        "0.0.0-test".into()
    }
}

async fn busctl_as_nobody(busctl: &Path, address: &str, args: &[&str]) -> Result<Output> {
    tokio::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--reset-env",
        ])
        .arg(busctl)
        .arg(format!("--address={address}"))
        .args(args)
        .output()
        .await
        .context("running busctl through setpriv")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bus_policy_lets_only_root_own_the_name_and_everyone_call_it() -> Result<()> {
    let Some(dbus_daemon) = tool("dbus-daemon", "dbus-daemon")? else {
        return Ok(());
    };
    let Some(busctl) = tool("busctl", "systemd")? else {
        return Ok(());
    };
    // dbus-daemon parses every included file and refuses to start on a malformed policy.
    let bus = start_private_bus(&dbus_daemon)?;

    // The activation file is read: the name is activatable.
    let out = run(Command::new(&busctl)
        .arg(format!("--address={}", bus.address))
        .args([
            "call",
            "org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus",
            "ListActivatableNames",
        ]))?;
    ensure_success("ListActivatableNames", &out)?;
    let names = String::from_utf8_lossy(&out.stdout);
    ensure!(
        names.contains(&format!("\"{BUS_NAME}\"")),
        "{BUS_NAME} is not activatable: {names}"
    );

    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        let why =
            "the ownership and access checks need root (to own the name and to switch to nobody)";
        ensure!(!require_tools(), "{why}, and RDMA_MANAGER_REQUIRE_TOOLS=1");
        eprintln!("skipping: {why}");
        return Ok(());
    }
    if tool("setpriv", "util-linux")?.is_none() {
        return Ok(());
    }

    // Root owns the name and serves an object on it; another root connection owns a name that
    // no policy opens to others.
    let _service = zbus::connection::Builder::address(bus.address.as_str())?
        .name(BUS_NAME)?
        .serve_at(ROOT_PATH, Probe)?
        .build()
        .await
        .context("root owning the bus name")?;
    let _control = zbus::connection::Builder::address(bus.address.as_str())?
        .name(CONTROL_NAME)?
        .serve_at(ROOT_PATH, Probe)?
        .build()
        .await
        .context("root owning the control name")?;

    // An unprivileged user may call, read properties and introspect...
    for (what, args) in [
        (
            "a method",
            vec!["call", BUS_NAME, ROOT_PATH, BUS_NAME, "Echo", "s", "hello"],
        ),
        (
            "a property",
            vec!["get-property", BUS_NAME, ROOT_PATH, BUS_NAME, "Version"],
        ),
        ("introspection", vec!["introspect", BUS_NAME, ROOT_PATH]),
    ] {
        let out = busctl_as_nobody(&busctl, &bus.address, &args).await?;
        ensure_success(&format!("nobody reading {what}"), &out)?;
        // ...which the default policy alone would deny (args[1] is the destination).
        let mut control_args = args.clone();
        control_args[1] = CONTROL_NAME;
        let out = busctl_as_nobody(&busctl, &bus.address, &control_args).await?;
        ensure!(
            !out.status.success(),
            "the control name answered {what} to nobody: the test bus is not denying by default"
        );
    }
    let out = busctl_as_nobody(
        &busctl,
        &bus.address,
        &["call", BUS_NAME, ROOT_PATH, BUS_NAME, "Echo", "s", "hello"],
    )
    .await?;
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "s \"hello\"");

    // ...but not own the name.
    let out = busctl_as_nobody(
        &busctl,
        &bus.address,
        &[
            "call",
            "org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus",
            "RequestName",
            "su",
            BUS_NAME,
            "0",
        ],
    )
    .await?;
    ensure!(
        !out.status.success(),
        "nobody was allowed to request {BUS_NAME}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    ensure!(err.contains("Access denied"), "unexpected refusal: {err}");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// udev

/// One `KEY{ATTR}OP"VALUE"` of a udev rule.
#[derive(Debug, Clone, PartialEq)]
struct Token {
    key: String,
    attr: Option<String>,
    op: String,
    value: String,
}

/// Keys udev knows, and whether each may match (`==`, `!=`) and assign (`=`, `+=`, `-=`, `:=`).
const UDEV_KEYS: &[(&str, bool, bool)] = &[
    ("ACTION", true, false),
    ("DEVPATH", true, false),
    ("KERNEL", true, false),
    ("KERNELS", true, false),
    ("SUBSYSTEM", true, false),
    ("SUBSYSTEMS", true, false),
    ("DRIVER", true, false),
    ("DRIVERS", true, false),
    ("ATTR", true, true),
    ("ATTRS", true, false),
    ("SYSCTL", true, true),
    ("ENV", true, true),
    ("CONST", true, false),
    ("TAG", true, true),
    ("TAGS", true, false),
    ("TEST", true, false),
    ("PROGRAM", true, false),
    ("RESULT", true, false),
    ("NAME", true, true),
    ("SYMLINK", true, true),
    ("IMPORT", true, false),
    ("OWNER", false, true),
    ("GROUP", false, true),
    ("MODE", false, true),
    ("SECLABEL", false, true),
    ("RUN", false, true),
    ("LABEL", false, true),
    ("GOTO", false, true),
    ("OPTIONS", false, true),
];

fn parse_udev_line(line: &str) -> Result<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut rest = line.trim();
    loop {
        let key_len = rest
            .find(|c: char| !(c.is_ascii_uppercase() || c == '_'))
            .unwrap_or(rest.len());
        ensure!(key_len > 0, "expected a key at {rest:?}");
        let key = &rest[..key_len];
        rest = &rest[key_len..];
        let attr = match rest.strip_prefix('{') {
            Some(r) => {
                let end = r.find('}').context("unclosed {")?;
                rest = &r[end + 1..];
                Some(r[..end].to_string())
            }
            None => None,
        };
        rest = rest.trim_start();
        let op = ["==", "!=", "+=", "-=", ":=", "="]
            .into_iter()
            .find(|op| rest.starts_with(op))
            .with_context(|| format!("expected an operator after {key} at {rest:?}"))?;
        rest = rest[op.len()..].trim_start();
        let r = rest
            .strip_prefix('"')
            .with_context(|| format!("{key}{op}: value not in double quotes"))?;
        let end = r
            .find('"')
            .with_context(|| format!("{key}: unclosed quote"))?;
        let value = r[..end].to_string();
        rest = r[end + 1..].trim_start();

        let Some(&(_, can_match, can_assign)) = UDEV_KEYS.iter().find(|(k, ..)| *k == key) else {
            bail!("unknown key {key}");
        };
        let matching = op == "==" || op == "!=";
        ensure!(
            if matching { can_match } else { can_assign },
            "{key} cannot be used with {op}"
        );
        let needs_attr = matches!(key, "ATTR" | "ATTRS" | "SYSCTL" | "ENV" | "CONST");
        ensure!(
            attr.is_some() == needs_attr || matches!(key, "IMPORT" | "RUN" | "TEST"),
            "{key}: {{attribute}} {}",
            if needs_attr { "missing" } else { "not allowed" }
        );
        tokens.push(Token {
            key: key.to_string(),
            attr,
            op: op.to_string(),
            value,
        });
        if rest.is_empty() {
            return Ok(tokens);
        }
        rest = rest
            .strip_prefix(',')
            .with_context(|| format!("expected ',' at {rest:?}"))?
            .trim_start();
        ensure!(!rest.is_empty(), "trailing comma");
    }
}

fn parse_udev_rules(text: &str) -> Result<Vec<Vec<Token>>> {
    let mut rules = Vec::new();
    let mut pending = String::new();
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if pending.is_empty() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        if let Some(cont) = line.strip_suffix('\\') {
            pending.push_str(cont);
            continue;
        }
        pending.push_str(line);
        rules.push(parse_udev_line(&pending).with_context(|| format!("line {}", n + 1))?);
        pending.clear();
    }
    ensure!(pending.is_empty(), "the file ends in a continuation");
    let labels: Vec<&str> = rules
        .iter()
        .flatten()
        .filter(|t| t.key == "LABEL")
        .map(|t| t.value.as_str())
        .collect();
    for (i, rule) in rules.iter().enumerate() {
        for t in rule.iter().filter(|t| t.key == "GOTO") {
            // udev jumps forward only.
            let later = rules[i + 1..]
                .iter()
                .flatten()
                .any(|l| l.key == "LABEL" && l.value == t.value);
            ensure!(later, "GOTO {:?} has no LABEL after it", t.value);
        }
    }
    let unique: BTreeSet<&&str> = labels.iter().collect();
    ensure!(unique.len() == labels.len(), "a LABEL is defined twice");
    Ok(rules)
}

/// What the rules do to one event: the tags and SYSTEMD_WANTS they set. Knows only the keys
/// these rules use, and fails on others, so a new key gets a new test.
fn udev_outcome(
    rules: &[Vec<Token>],
    action: &str,
    subsystem: &str,
) -> Result<(BTreeSet<String>, Vec<String>)> {
    let mut tags = BTreeSet::new();
    let mut wants = Vec::new();
    let mut goto: Option<&str> = None;
    for rule in rules {
        if let Some(label) = goto {
            if rule.iter().any(|t| t.key == "LABEL" && t.value == label) {
                goto = None;
            }
            continue;
        }
        let mut matched = true;
        for t in rule.iter().filter(|t| t.op == "==" || t.op == "!=") {
            let actual = match t.key.as_str() {
                "ACTION" => action,
                "SUBSYSTEM" => subsystem,
                other => bail!("the test's udev interpreter does not know {other}"),
            };
            matched &= (actual == t.value) == (t.op == "==");
        }
        if !matched {
            continue;
        }
        for t in rule.iter().filter(|t| t.op != "==" && t.op != "!=") {
            match (t.key.as_str(), t.attr.as_deref(), t.op.as_str()) {
                ("TAG", None, "+=") => {
                    tags.insert(t.value.clone());
                }
                ("ENV", Some("SYSTEMD_WANTS"), "+=") => {
                    wants.extend(t.value.split_whitespace().map(String::from))
                }
                ("GOTO", None, "=") => goto = Some(&t.value),
                ("LABEL", None, "=") => {}
                other => bail!("the test's udev interpreter does not know {other:?}"),
            }
        }
    }
    Ok((tags, wants))
}

#[test]
fn udev_rule_starts_the_service_for_rdma_devices_only() -> Result<()> {
    let path = repo().join("udev-rules").join(UDEV_RULES);
    let rules = parse_udev_rules(&read(&path)?)?;
    let systemd: BTreeSet<String> = ["systemd".to_string()].into();
    for action in ["add", "change", "bind", "move"] {
        let (tags, wants) = udev_outcome(&rules, action, "infiniband")?;
        assert_eq!(tags, systemd, "{action} infiniband: tags");
        assert_eq!(wants, [UNIT], "{action} infiniband: SYSTEMD_WANTS");
    }
    for (action, subsystem) in [
        ("remove", "infiniband"),
        ("add", "net"),
        ("add", "infiniband_verbs"),
    ] {
        let (tags, wants) = udev_outcome(&rules, action, subsystem)?;
        ensure!(
            tags.is_empty() && wants.is_empty(),
            "{action} {subsystem}: tags {tags:?}, wants {wants:?}"
        );
    }

    // udev's own checker, where the installed udev has it (systemd 254 and later).
    let Some(udevadm) = tool("udevadm", "udev")? else {
        return Ok(());
    };
    let help = run(Command::new(&udevadm).args(["verify", "--help"]))?;
    if !help.status.success() {
        eprintln!("udevadm has no verify command (systemd < 254): the line-level check stands");
        return Ok(());
    }
    let out = run(Command::new(&udevadm)
        .args(["verify", "--resolve-names=never"])
        .arg(&path))?;
    ensure_success("udevadm verify", &out)
}

#[test]
fn udev_rule_checker_catches_mistakes() -> Result<()> {
    for bad in [
        "SUBSYSTEM=\"infiniband\", TAG+=\"systemd\"\n", // assignment to a match-only key
        "SUBSYSTEM==\"infiniband\" TAG+=\"systemd\"\n", // missing comma
        "SUBSYSTEM==\"infiniband\", TAG+=\"systemd\",\n", // trailing comma
        "SUBSYSTEM==infiniband, TAG+=\"systemd\"\n",    // unquoted
        "SUBSYTEM==\"infiniband\", TAG+=\"systemd\"\n", // unknown key
        "ENV=\"x\"\n",                                  // ENV without {name}
        "GOTO=\"end\"\n",                               // no label
        "LABEL=\"end\"\nGOTO=\"end\"\n",                // label before the goto
    ] {
        ensure!(
            parse_udev_rules(bad).is_err(),
            "accepted a broken rule: {bad}"
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Man pages

#[test]
fn man_pages_format_cleanly_and_name_the_api() -> Result<()> {
    let daemon = read(&repo().join("dist/man/rdma-managerd.8"))?;
    let tui = read(&repo().join("dist/man/rdma-tui.1"))?;
    ensure!(daemon.starts_with(".TH RDMA\\-MANAGERD 8 "));
    ensure!(tui.starts_with(".TH RDMA\\-TUI 1 "));
    // The page names what the code names (roff escapes '-' as "\-").
    let plain = daemon.replace("\\-", "-");
    for needle in [BUS_NAME, ROOT_PATH, "/Device/", "/Port/", "/Ipoib/"] {
        ensure!(plain.contains(needle), "rdma-managerd.8 lacks {needle}");
    }
    for a in Action::ALL {
        ensure!(plain.contains(a.id()), "rdma-managerd.8 lacks {}", a.id());
    }
    // Each page documents every option its program's parser takes (the parsers' unit
    // tests check that each listed option parses and is in --help).
    let daemon_plain = plain.replace("\\c", "");
    for option in rdma_managerd::cli::OPTIONS
        .iter()
        .chain(&rdma_managerd::cli::IBSTAT_OPTIONS)
        .chain(&rdma_managerd::cli::IBSTAT_VALUE_OPTIONS)
        .map(|o| o.trim_end_matches('='))
    {
        ensure!(
            daemon_plain.contains(option),
            "rdma-managerd.8 lacks {option}"
        );
    }
    let tui_plain = tui.replace("\\-", "-").replace("\\c", "");
    for option in rdma_tui::cli::OPTIONS
        .iter()
        .chain(&rdma_tui::cli::IBSTAT_OPTIONS)
        .chain(&rdma_tui::cli::IBSTAT_VALUE_OPTIONS)
        .map(|o| o.trim_end_matches('='))
    {
        ensure!(tui_plain.contains(option), "rdma-tui.1 lacks {option}");
    }
    let cli = read(&repo().join("dist/man/rdma-cli.1"))?;
    ensure!(cli.starts_with(".TH RDMA\\-CLI 1 "));
    let cli_plain = cli.replace("\\-", "-").replace("\\c", "");
    for word in rdma_cli::args::words() {
        ensure!(cli_plain.contains(&word), "rdma-cli.1 lacks {word}");
    }
    // The exit codes, each an entry of EXIT STATUS.
    let exit_status = cli_plain
        .split(".SH EXIT STATUS")
        .nth(1)
        .and_then(|rest| rest.split(".SH ").next())
        .context("rdma-cli.1 has no EXIT STATUS")?;
    for code in ["0", "1", "2", "3", "4", "5", "6", "7", "10"] {
        ensure!(
            exit_status.contains(&format!(".B {code}\n")),
            "rdma-cli.1's EXIT STATUS lacks {code}"
        );
    }

    let Some(groff) = tool("groff", "groff-base")? else {
        return Ok(());
    };
    for page in [
        "dist/man/rdma-managerd.8",
        "dist/man/rdma-tui.1",
        "dist/man/rdma-cli.1",
    ] {
        let out = run(Command::new(&groff)
            .args(["-t", "-man", "-ww", "-z"])
            .arg(repo().join(page)))?;
        ensure_success(&format!("groff {page}"), &out)?;
        let warnings = String::from_utf8_lossy(&out.stderr);
        ensure!(warnings.trim().is_empty(), "groff on {page}:\n{warnings}");
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// rdma-tui's desktop entry and shell completions

#[test]
fn desktop_entry_validates_and_opens_the_client_in_a_terminal() -> Result<()> {
    let path = repo().join("dist/desktop/org.rdmamanager.RdmaTui.desktop");
    let ini = parse_ini(&read(&path)?)?;
    ensure!(one(&ini, "Desktop Entry", "Exec")? == "rdma-tui");
    ensure!(one(&ini, "Desktop Entry", "Terminal")? == "true");
    ensure!(one(&ini, "Desktop Entry", "Type")? == "Application");
    let Some(validate) = tool("desktop-file-validate", "desktop-file-utils")? else {
        return Ok(());
    };
    let out = run(Command::new(validate).arg(&path))?;
    ensure_success("desktop-file-validate", &out)?;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    ensure!(said.trim().is_empty(), "desktop-file-validate: {said}");
    Ok(())
}

/// Runs the bash completion for `words` (the last one being completed) against a fake
/// sysfs, and returns COMPREPLY.
fn bash_complete(sysfs: &Path, words: &[&str]) -> Result<Vec<String>> {
    let script = repo().join("dist/completions/rdma-tui.bash");
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; _rdma_tui; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words.len() - 1
    );
    let out = run(Command::new("bash")
        .args(["--norc", "-c", &program])
        .env("RDMA_TUI_SYSFS", sysfs))?;
    ensure_success("bash completion", &out)?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

#[test]
fn bash_completion_offers_options_devices_and_ports() -> Result<()> {
    let sysfs = tempfile::tempdir()?;
    for (dev, ports) in [("mlx5_0", &["1"][..]), ("mlx4_1", &["1", "2"][..])] {
        for p in ports {
            std::fs::create_dir_all(sysfs.path().join(dev).join("ports").join(p))?;
        }
    }
    let mut opts = bash_complete(sysfs.path(), &["rdma-tui", "--i"])?;
    opts.sort();
    assert_eq!(opts, vec!["--ibstat".to_string()]);
    let mut devs = bash_complete(sysfs.path(), &["rdma-tui", "--ibstat", ""])?;
    devs.sort();
    assert_eq!(devs, vec!["mlx4_1".to_string(), "mlx5_0".to_string()]);
    let ports = bash_complete(sysfs.path(), &["rdma-tui", "--ibstat", "mlx4_1", ""])?;
    assert_eq!(ports, vec!["1".to_string(), "2".to_string()]);
    ensure!(bash_complete(sysfs.path(), &["rdma-tui", "--ibstat", "mlx4_1", "1", ""])?.is_empty());
    // Without --ibstat, words are options only, and not ibstat's.
    let plain = bash_complete(sysfs.path(), &["rdma-tui", ""])?;
    ensure!(plain.contains(&"--demo".to_string()) && !plain.contains(&"--short".to_string()));
    // After --ibstat, ibstat's options too, and the device after them (-z takes a file).
    let opts = bash_complete(sysfs.path(), &["rdma-tui", "--ibstat", "--s"])?;
    ensure!(opts.contains(&"--short".to_string()), "{opts:?}");
    let ports = bash_complete(
        sysfs.path(),
        &["rdma-tui", "--ibstat", "-z", "/x.conf", "-s", "mlx4_1", ""],
    )?;
    ensure!(ports == ["1", "2"], "{ports:?}");
    Ok(())
}

#[test]
fn rdma_clis_committed_completions_are_what_it_generates() -> Result<()> {
    use rdma_cli::args::{completion, CompletionShell};
    for shell in [
        CompletionShell::Bash,
        CompletionShell::Zsh,
        CompletionShell::Fish,
    ] {
        let file = shell.file_name();
        let committed = read(&repo().join("dist/completions").join(file))?;
        ensure!(
            committed == completion(shell),
            "dist/completions/{file} is not what rdma-cli generates: run \
             cargo run -p rdma-cli -- completions {shell:?} > dist/completions/{file} \
             (the shell in lower case)"
        );
    }
    Ok(())
}

#[test]
fn rdma_clis_bash_completion_offers_commands_and_their_values() -> Result<()> {
    let Some(bash) = tool("bash", "bash")? else {
        return Ok(());
    };
    let complete = |words: &[&str]| -> Result<Vec<String>> {
        let script = repo().join("dist/completions/rdma-cli.bash");
        let words_array: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        let cur = words.last().copied().unwrap_or_default();
        let prev = if words.len() > 1 {
            words[words.len() - 2]
        } else {
            ""
        };
        let body = format!(
            "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; _rdma__cli rdma-cli '{cur}' '{prev}'; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            words_array.join(" "),
            words.len() - 1
        );
        let out = run(Command::new(&bash).args(["--norc", "-c", &body]))?;
        ensure_success("bash completion", &out)?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect())
    };
    ensure!(complete(&["rdma-cli", "li"])? == ["link"]);
    let sm = complete(&["rdma-cli", "sm", ""])?;
    for w in ["start", "stop", "enable", "disable"] {
        ensure!(sm.iter().any(|c| c == w), "sm: {sm:?}");
    }
    let policies = complete(&["rdma-cli", "naming", "policy", "NAME_"])?;
    ensure!(policies.len() == 5, "{policies:?}");
    Ok(())
}

#[test]
fn completions_know_every_option_of_the_client() -> Result<()> {
    // Every long option rdma-tui accepts is offered by each shell's completion.
    let options: Vec<&str> = rdma_tui::cli::OPTIONS
        .iter()
        .chain(&rdma_tui::cli::IBSTAT_OPTIONS)
        .chain(&rdma_tui::cli::IBSTAT_VALUE_OPTIONS)
        .filter(|o| o.starts_with("--"))
        .map(|o| o.trim_end_matches('='))
        .collect();
    for file in ["rdma-tui.bash", "_rdma-tui", "rdma-tui.fish"] {
        let text = read(&repo().join("dist/completions").join(file))?;
        for o in &options {
            let fish_form = format!("-l {}", o.trim_start_matches("--"));
            ensure!(
                text.contains(o) || text.contains(&fish_form),
                "{file} lacks {o}"
            );
        }
    }
    Ok(())
}
