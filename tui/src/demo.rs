//! `rdma-tui --demo`: the simulated demo host served by the real rdma-managerd code, in this
//! process, on a private dbus-daemon that only this user can reach. The demo host's counters
//! move, so the graphs move; every change works, because a simulated daemon running as the
//! user on a private bus authorizes that user (and nobody else) instead of asking polkit
//! ([`Authorizer::same_user_for_simulation`]): it holds nothing the user does not already have.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{bail, Context};
use rdma_managerd::cli::SimArgs;
use rdma_managerd::dbus::polkit::Authorizer;
use rdma_managerd::dbus::server::{self, Bus};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::simulated::{Running, Simulation};

/// A running demo: the private bus and the simulated service on it. Dropping it stops both
/// and removes their files.
pub struct Demo {
    /// The bus address to connect to.
    pub address: String,
    bus: Child,
    dir: PathBuf,
    _service: server::Service,
    /// The demo's traffic and the simulated host's tree, stopped and removed when dropped.
    _running: Running,
}

impl Drop for Demo {
    fn drop(&mut self) {
        self._service.task.abort();
        let _ = self.bus.kill();
        let _ = self.bus.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The private bus's configuration: a session-type bus on a socket in `dir`, open to this
/// user only (the socket directory is mode 0700) and to every name and message.
fn bus_config(socket: &Path) -> String {
    format!(
        r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <auth>EXTERNAL</auth>
  <listen>unix:path={}</listen>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#,
        socket.display()
    )
}

/// Starts `dbus-daemon` with `config` and returns it with the address it printed.
fn start_bus(config: &Path) -> anyhow::Result<(Child, String)> {
    let mut child = Command::new("dbus-daemon")
        .arg(format!("--config-file={}", config.display()))
        .args(["--nofork", "--nopidfile", "--print-address=1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start dbus-daemon, which --demo runs its private bus on (Debian: apt-get install dbus-daemon)")?;
    let Some(stdout) = child.stdout.take() else {
        bail!("dbus-daemon gave no output pipe");
    };
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .context("reading dbus-daemon's address")?;
    let address = line.trim().to_string();
    if address.is_empty() {
        let _ = child.kill();
        let _ = child.wait();
        bail!("dbus-daemon exited without printing its address");
    }
    Ok((child, address))
}

/// Starts the demo: a private bus, and the simulated demo host served on it.
pub async fn start() -> anyhow::Result<Demo> {
    start_host(None).await
}

/// As [`start`], on another of the daemon's simulated hosts (`--sim-host=SPEC`'s names, e.g.
/// `naming`, whose PF has SR-IOV VFs); `None`: the demo host.
pub async fn start_host(host: Option<&str>) -> anyhow::Result<Demo> {
    let dir = std::env::temp_dir().join(format!("rdma-tui-demo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let config = dir.join("bus.conf");
    std::fs::write(&config, bus_config(&dir.join("bus")))
        .with_context(|| format!("cannot write {}", config.display()))?;
    let (bus, address) = start_bus(&config)?;
    // The demo host, as `rdma-managerd --simulate` serves it: its files of host setup, its own
    // systemd, and one traffic model that moves the counters from now on and fills the hour
    // before, so the graphs are full at start (as the man page says of a daemon that has run
    // a while).
    let args = SimArgs {
        host: host.map(str::to_string),
        ..SimArgs::default()
    };
    let sim = Simulation::new(&args, None).context("cannot build the simulated host")?;
    let running = sim.start();
    let conn = server::connect(&Bus::Address(address.clone())).await?;
    let authorizer = Authorizer::same_user_for_simulation(&conn);
    let service = server::serve_with(
        conn,
        sim.host(),
        true,
        EngineConfig {
            history_seed: sim.history_seed(),
            ..EngineConfig::default()
        },
        authorizer,
        sim.system_services(),
    )
    .await?;
    Ok(Demo {
        address,
        bus,
        dir,
        _service: service,
        _running: running,
    })
}
