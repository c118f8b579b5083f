//! The responder: perftest's servers for the RDMA test, run by the daemon when enabled so that
//! nobody starts them by hand on the peer. Two servers, `ib_send_lat` on rdma_cm port 18515
//! and `ib_send_bw` on 18516, each in the [`super::sandbox`] like the clients. A perftest
//! server serves one test and exits, so each is started again when it ends: at once after a
//! test it served, after a back-off (1 s doubling to 30 s) when it ended without serving (no
//! device yet, a failure). So the responder is at most two processes that start afresh for
//! every test: nothing in it grows with the tests run, and a peer gets one test at a time per
//! server (rdma_cm queues or rejects the rest). Idle, each server sleeps in
//! `rdma_get_cm_event`: no CPU.
//!
//! perftest's own clients (`ib_send_lat -R -p 18515 HOST`, `ib_send_bw -R -p 18516
//! --report_gbits HOST`, with no other option, since perftest 4.5 has the server and the
//! client agree on parameters only by being given the same ones) test against it.
//!
//! On each InfiniBand port with a umad device, an ibping responder too (the ports are listed
//! again when the engine sees the devices change, so a port that comes later is served and
//! one that goes has its responder stopped): `rdma-managerd ibping --serve` in the same
//! sandbox, handed the port's umad device, answering infiniband-diags' `ibping -L LID` (and
//! the ibping link test) with this host's name. It answers a ping with one reply of a fixed size from one buffer, at
//! most as often as `ibping::limit` allows per peer and in all, so what a peer sends can
//! make it work within a bound but never grow; it serves until stopped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdma_manager_dbus::types::LinkResponder;
use tokio::sync::watch;

use super::perftest::{server_args, BW_PORT, LAT_PORT};
use super::sandbox::{kill_group, Runner};
use crate::kernel::Host;

/// What the supervisors share with the status readers.
#[derive(Debug, Default)]
struct Status {
    enabled: bool,
    /// Servers alive now, and how many there are to be: perftest's two and an ibping
    /// responder per InfiniBand port.
    alive: u16,
    servers: u16,
    restarts: u32,
    served: u64,
    detail: String,
}

/// The responder: enabled or not, its supervisors while enabled.
pub struct Responder {
    runner: Arc<dyn Runner>,
    lat: PathBuf,
    bw: PathBuf,
    /// rdma-managerd, run as `ibping --serve`.
    ibping: PathBuf,
    host: Arc<dyn Host>,
    status: Arc<Mutex<Status>>,
    /// Dropping the sender (disable) ends perftest's supervisors, which kill their servers.
    stop: Mutex<Option<watch::Sender<()>>>,
    /// The ibping responders by port, each stopped by dropping its sender.
    ibping_servers: Arc<Mutex<IbpingServers>>,
    /// Serialises the listings of the InfiniBand ports, so two never race to start one port.
    listing: Arc<tokio::sync::Mutex<()>>,
    /// The devices (index, name) the engine last told of while enabled: the ports are
    /// listed again only when they change.
    devices: Mutex<Option<BTreeSet<(u32, String)>>>,
}

/// An ibping responder's stop, by (device, port).
type IbpingServers = BTreeMap<(String, u32), watch::Sender<()>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// perftest's servers: `ib_send_lat` and `ib_send_bw`.
const PERFTEST_SERVERS: u16 = 2;

/// The back-off after a server that ended without serving a test.
const BACKOFF_FIRST: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

impl Responder {
    pub fn new(
        runner: Arc<dyn Runner>,
        lat: PathBuf,
        bw: PathBuf,
        ibping: PathBuf,
        host: Arc<dyn Host>,
    ) -> Responder {
        Responder {
            runner,
            lat,
            bw,
            ibping,
            host,
            status: Arc::default(),
            stop: Mutex::new(None),
            ibping_servers: Arc::default(),
            listing: Arc::default(),
            devices: Mutex::new(None),
        }
    }

    /// Starts (or stops) the servers; nothing happens when it already is so.
    pub fn set(&self, enabled: bool) {
        let mut stop = lock(&self.stop);
        lock(&self.status).enabled = enabled;
        match (enabled, stop.is_some()) {
            (true, false) => {
                let (tx, rx) = watch::channel(());
                lock(&self.status).servers = PERFTEST_SERVERS;
                for (program, bandwidth) in [(self.lat.clone(), false), (self.bw.clone(), true)] {
                    tokio::spawn(supervise(
                        self.runner.clone(),
                        Server::Perftest {
                            program,
                            args: server_args(bandwidth),
                        },
                        self.status.clone(),
                        rx.clone(),
                    ));
                }
                *stop = Some(tx);
                self.list_ports();
            }
            (false, true) => {
                *stop = None;
                lock(&self.ibping_servers).clear();
            }
            _ => {}
        }
    }

    /// The engine's devices may have changed (added, removed, registered again): while
    /// enabled, when they differ from those last seen, the InfiniBand ports are listed
    /// again, responders started on new ones and stopped on those gone. Disabled, nothing
    /// is asked (enabling lists the ports itself).
    pub fn devices_changed(&self, devices: impl FnOnce() -> BTreeSet<(u32, String)>) {
        if lock(&self.stop).is_none() {
            return;
        }
        let devices = devices();
        {
            let mut known = lock(&self.devices);
            if known.as_ref() == Some(&devices) {
                return;
            }
            *known = Some(devices);
        }
        self.list_ports();
    }

    /// Lists the InfiniBand ports (off the caller's task) and serves exactly those.
    fn list_ports(&self) {
        tokio::spawn(serve_infiniband_ports(
            self.runner.clone(),
            self.host.clone(),
            self.ibping.clone(),
            self.status.clone(),
            self.ibping_servers.clone(),
            self.listing.clone(),
        ));
    }

    pub fn status(&self) -> LinkResponder {
        let s = lock(&self.status);
        LinkResponder {
            enabled: s.enabled,
            running: s.servers > 0 && s.alive == s.servers,
            restarts: s.restarts,
            served: s.served,
            detail: s.detail.clone(),
            latency_port: LAT_PORT,
            bandwidth_port: BW_PORT,
        }
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        *lock(&self.stop) = None;
    }
}

/// What a supervisor keeps running.
enum Server {
    /// A perftest server, which serves one test and exits.
    Perftest { program: PathBuf, args: Vec<String> },
    /// `rdma-managerd ibping --serve` on a port's umad device, opened afresh for each start.
    Ibping {
        program: PathBuf,
        host: Arc<dyn Host>,
        device: String,
        port: u32,
    },
}

impl Server {
    fn name(&self) -> String {
        match self {
            Server::Perftest { program, .. } => program
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            Server::Ibping { device, port, .. } => format!("ibping on {device}/{port}"),
        }
    }

    async fn start(&self, runner: &dyn Runner) -> Result<tokio::process::Child, String> {
        match self {
            Server::Perftest { program, args } => {
                runner.spawn(program, args, None).map_err(|e| e.to_string())
            }
            Server::Ibping {
                program,
                host,
                device,
                port,
            } => {
                let fd = host
                    .open_umad(device, *port)
                    .await
                    .map_err(|e| e.to_string())?;
                let args = ["ibping", "--serve", "--fd", "3"].map(String::from);
                runner
                    .spawn(program, &args, Some(fd))
                    .map_err(|e| e.to_string())
            }
        }
    }
}

/// Serves the InfiniBand ports there are now: an ibping responder started on each port
/// that has none, and stopped on each that is gone. Nothing when the responder was disabled
/// meanwhile.
async fn serve_infiniband_ports(
    runner: Arc<dyn Runner>,
    host: Arc<dyn Host>,
    program: PathBuf,
    status: Arc<Mutex<Status>>,
    servers: Arc<Mutex<IbpingServers>>,
    listing: Arc<tokio::sync::Mutex<()>>,
) {
    let _one = listing.lock().await;
    let ports: BTreeSet<(String, u32)> = match host.umad_ports().await {
        Ok(p) => p.into_iter().collect(),
        Err(e) => {
            tracing::warn!(error = %e, "no ibping responder: the InfiniBand ports could not be listed");
            return;
        }
    };
    // Read under the servers' lock: `set(false)` turns `enabled` off before it clears them.
    let mut servers = lock(&servers);
    if !lock(&status).enabled {
        servers.clear();
        return;
    }
    servers.retain(|port, _| {
        let keep = ports.contains(port);
        if !keep {
            tracing::info!(device = %port.0, port = port.1, "ibping responder stopped: the port is gone");
        }
        keep
    });
    for (device, port) in ports {
        if servers.contains_key(&(device.clone(), port)) {
            continue;
        }
        let (tx, rx) = watch::channel(());
        let server = Server::Ibping {
            program: program.clone(),
            host: host.clone(),
            device: device.clone(),
            port,
        };
        tokio::spawn(supervise(runner.clone(), server, status.clone(), rx));
        servers.insert((device, port), tx);
    }
    lock(&status).servers = PERFTEST_SERVERS + u16::try_from(servers.len()).unwrap_or(u16::MAX);
}

/// Keeps one server running until `stop`'s sender is dropped.
async fn supervise(
    runner: Arc<dyn Runner>,
    server: Server,
    status: Arc<Mutex<Status>>,
    mut stop: watch::Receiver<()>,
) {
    let name = server.name();
    let mut backoff = BACKOFF_FIRST;
    let mut first = true;
    loop {
        if !first {
            lock(&status).restarts += 1;
        }
        first = false;
        let mut child = match server.start(runner.as_ref()).await {
            Ok(c) => c,
            Err(e) => {
                lock(&status).detail = format!("{name} could not start: {e}");
                tracing::warn!(server = %name, error = %e, "responder server did not start");
                tokio::select! {
                    _ = stop.changed() => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(BACKOFF_MAX);
                continue;
            }
        };
        let started = Instant::now();
        lock(&status).alive += 1;
        let pgid = child.id();
        let ended = tokio::select! {
            _ = stop.changed() => None,
            st = child.wait() => Some(st),
        };
        lock(&status).alive -= 1;
        let Some(st) = ended else {
            kill_group(pgid);
            let _ = child.wait().await;
            return;
        };
        let served = matches!(&st, Ok(s) if s.success());
        if served {
            lock(&status).served += 1;
            backoff = BACKOFF_FIRST;
            continue;
        }
        let what = match st {
            Ok(s) => s.to_string(),
            Err(e) => e.to_string(),
        };
        lock(&status).detail = format!(
            "{name} ended ({what}) after {} ms without serving a test",
            started.elapsed().as_millis()
        );
        tracing::warn!(server = %name, status = %what, "responder server ended without serving");
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}
