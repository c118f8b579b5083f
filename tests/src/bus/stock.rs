//! Buses configured as users run them: the installed `/usr/share/dbus-1/system.conf` (Debian
//! 12's: its default policy denies method calls to other connections and sets the bus's
//! limits), run by dbus-daemon ([`super::BusConfig::start`]) or by dbus-broker
//! ([`super::BusConfig::start_broker`], RHEL's and Fedora's system bus).
//!
//! Only what makes the bus private differs from the installed file: the listen address, no
//! `<user>`, `<fork/>`, `<pidfile>`, `<syslog/>` (the log goes to the test), no service
//! activation, and the test's own policies in place of `system.d`. The host's local files
//! (`/etc/dbus-1/system.conf`, `system-local.conf`, `/etc/dbus-1/system.d`) are left out so
//! that the bus is the same on every machine.

use std::io::Write as _;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::{
    in_private_mounts, make_public, public_temp_dir, write_public, xml_escape, Bind, BusConfig,
    Daemon, PrivateBus,
};

/// Where the distribution's system bus configuration is.
pub const SYSTEM_CONF: &str = "/usr/share/dbus-1/system.conf";

/// What a stock system.conf must contain to be the one these tests mean (Debian's default
/// policy: method calls denied unless a service's policy allows them).
const STOCK_MARK: &str = r#"<deny send_type="method_call"/>"#;

/// The installed system.conf, changed only where a private bus must differ; `parts` (policies
/// and includes) stand where the file includes `system.d`.
pub(super) fn render(socket: &Path, parts: &str) -> Result<String> {
    let text =
        std::fs::read_to_string(SYSTEM_CONF).with_context(|| format!("reading {SYSTEM_CONF}"))?;
    if !text.contains(STOCK_MARK) {
        bail!("{SYSTEM_CONF} has no {STOCK_MARK}: not a stock system bus configuration");
    }
    let listen = format!(
        "<listen>unix:path={}</listen>",
        xml_escape(socket.as_os_str())?
    );
    let mut out = String::new();
    let mut replaced_includedir = false;
    for line in text.lines() {
        let t = line.trim();
        let dropped = t.starts_with("<user>")
            || t == "<fork/>"
            || t.starts_with("<pidfile>")
            || t == "<syslog/>"
            || t == "<standard_system_servicedirs/>"
            || t.starts_with("<servicehelper>")
            || t.starts_with("<include ignore_missing=\"yes\">/etc/dbus-1/")
            || t == "<includedir>/etc/dbus-1/system.d</includedir>";
        if dropped {
            continue;
        }
        if t.starts_with("<listen>") {
            out.push_str("  ");
            out.push_str(&listen);
        } else if t == "<includedir>system.d</includedir>" {
            out.push_str(parts);
            replaced_includedir = true;
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    if !replaced_includedir {
        bail!("{SYSTEM_CONF} does not include system.d: cannot place the test's policies");
    }
    Ok(out)
}

impl BusConfig {
    /// Starts dbus-broker (through dbus-broker-launch, as its systemd unit does) with this
    /// configuration, and waits until it answers. dbus-broker-launch takes its listening socket
    /// from socket activation and logs only to the journal: both are given to it here, the
    /// journal as a socket of the test's own in its private mount namespace (bound over `/run`),
    /// whose messages become the bus's log.
    pub fn start_broker(self) -> Result<PrivateBus> {
        let dir = public_temp_dir("rdma-broker-")?;
        let socket = dir.path().join("socket");
        let config = dir.path().join("bus.conf");
        write_public(&config, &self.render(&socket)?)?;
        let log = dir.path().join("dbus-broker.log");
        let run = dir.path().join("run");
        std::fs::create_dir_all(run.join("systemd/journal")).context("creating the journal dir")?;
        make_public(&run, 0o755)?;
        let journal = UnixDatagram::bind(run.join("systemd/journal/socket"))
            .context("binding the journal socket")?;
        spawn_journal_reader(journal, log.clone(), run.clone())?;
        let address = format!("unix:path={}", socket.display());
        let mut cmd = Command::new("systemd-socket-activate");
        cmd.arg("-l")
            .arg(&socket)
            .arg(format!("--setenv=DBUS_SYSTEM_BUS_ADDRESS={address}"))
            .args(["dbus-broker-launch", "--scope", "system", "--config-file"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(open_append(&log)?)
            .stderr(open_append(&log)?);
        let mut binds = self.binds.clone();
        binds.push(Bind {
            source: run,
            target: "/run".into(),
        });
        in_private_mounts(&mut cmd, &binds)?;
        let child = cmd
            .spawn()
            .context("starting systemd-socket-activate dbus-broker-launch")?;
        let mut daemon = Daemon { child, log };
        // The socket exists once systemd-socket-activate listens; the bus answers once the
        // launcher has started the broker and given it the policy.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            daemon.check_running("dbus-broker-launch")?;
            // systemd-socket-activate creates the socket with its umask: unprivileged
            // clients must reach it, as they reach the system bus's.
            if socket.exists() && make_public(&socket, 0o666).is_ok() && answers(&address) {
                break;
            }
            if Instant::now() > deadline {
                bail!("dbus-broker did not answer within 20 s:\n{}", daemon.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(PrivateBus {
            daemon,
            address,
            _dir: dir,
        })
    }
}

fn open_append(path: &Path) -> Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))
}

/// Whether a bus at `address` answers ListNames (busctl, so no runtime is needed here).
fn answers(address: &str) -> bool {
    Command::new("busctl")
        .arg(format!("--address={address}"))
        .args(["call", "org.freedesktop.DBus", "/org/freedesktop/DBus"])
        .args(["org.freedesktop.DBus", "ListNames"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Writes the `SYSLOG_IDENTIFIER: MESSAGE` of each journal entry sent to `socket` to `log`,
/// until `alive` (the bus's directory) is removed.
fn spawn_journal_reader(
    socket: UnixDatagram,
    log: std::path::PathBuf,
    alive: std::path::PathBuf,
) -> Result<()> {
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .context("journal socket timeout")?;
    let mut out = open_append(&log)?;
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 20];
        while alive.exists() {
            let Ok(n) = socket.recv(&mut buf) else {
                continue;
            };
            let (ident, message) = journal_fields(&buf[..n]);
            let _ = writeln!(out, "{ident}: {message}");
        }
    });
    Ok(())
}

/// SYSLOG_IDENTIFIER and MESSAGE of one entry of the journal's native protocol: `KEY=value`
/// lines, or `KEY`, a line break, a little-endian 64-bit length and that many bytes.
fn journal_fields(mut data: &[u8]) -> (String, String) {
    let (mut ident, mut message) = (String::new(), String::new());
    while !data.is_empty() {
        let end = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
        let line = &data[..end];
        let (key, value, rest) = match line.iter().position(|&b| b == b'=') {
            Some(eq) => (
                &line[..eq],
                &line[eq + 1..],
                data.get(end + 1..).unwrap_or(&[]),
            ),
            None => {
                let after = data.get(end + 1..).unwrap_or(&[]);
                let Some(len) = after.get(..8).and_then(|l| l.try_into().ok()) else {
                    break;
                };
                let len = u64::from_le_bytes(len) as usize;
                let Some(value) = after.get(8..8 + len) else {
                    break;
                };
                (line, value, after.get(8 + len + 1..).unwrap_or(&[]))
            }
        };
        match key {
            b"SYSLOG_IDENTIFIER" => ident = String::from_utf8_lossy(value).into_owned(),
            b"MESSAGE" => message = String::from_utf8_lossy(value).into_owned(),
            _ => {}
        }
        data = rest;
    }
    (ident, message)
}

/// Whether dbus-broker can be started here (its package is installed).
pub fn broker_installed() -> bool {
    ["dbus-broker-launch", "systemd-socket-activate"]
        .iter()
        .all(|p| super::find_program(p).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_entries_of_both_forms_are_read() {
        let mut entry = b"PRIORITY=6\nSYSLOG_IDENTIFIER=dbus-broker\nMESSAGE\n".to_vec();
        entry.extend_from_slice(&5u64.to_le_bytes());
        entry.extend_from_slice(b"a\nb c\nERRNO=0\n");
        assert_eq!(
            journal_fields(&entry),
            ("dbus-broker".to_string(), "a\nb c".to_string())
        );
    }

    #[test]
    fn the_stock_configuration_keeps_its_policy_and_limits() {
        if !Path::new(SYSTEM_CONF).exists() {
            return;
        }
        let xml = render(Path::new("/tmp/x/socket"), "  <!-- parts -->\n").expect("rendered");
        assert!(xml.contains(STOCK_MARK));
        assert!(xml.contains("<listen>unix:path=/tmp/x/socket</listen>"));
        assert!(xml.contains("<!-- parts -->"));
        for gone in ["<user>", "<fork/>", "<pidfile>", "/etc/dbus-1/system.d"] {
            assert!(!xml.contains(gone), "{gone}");
        }
    }
}
