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

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdma_manager_dbus::types::LinkResponder;
use tokio::sync::watch;

use super::perftest::{server_args, BW_PORT, LAT_PORT};
use super::sandbox::{kill_group, Runner};

/// What the supervisors share with the status readers.
#[derive(Debug, Default)]
struct Status {
    enabled: bool,
    /// Servers alive now (0 to 2).
    alive: u8,
    restarts: u32,
    served: u64,
    detail: String,
}

/// The responder: enabled or not, its two supervisors while enabled.
pub struct Responder {
    runner: Arc<dyn Runner>,
    lat: PathBuf,
    bw: PathBuf,
    status: Arc<Mutex<Status>>,
    /// Dropping the sender (disable) ends the supervisors, which kill their servers.
    stop: Mutex<Option<watch::Sender<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The back-off after a server that ended without serving a test.
const BACKOFF_FIRST: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

impl Responder {
    pub fn new(runner: Arc<dyn Runner>, lat: PathBuf, bw: PathBuf) -> Responder {
        Responder {
            runner,
            lat,
            bw,
            status: Arc::default(),
            stop: Mutex::new(None),
        }
    }

    /// Starts (or stops) the servers; nothing happens when it already is so.
    pub fn set(&self, enabled: bool) {
        let mut stop = lock(&self.stop);
        lock(&self.status).enabled = enabled;
        match (enabled, stop.is_some()) {
            (true, false) => {
                let (tx, rx) = watch::channel(());
                for (program, bandwidth) in [(self.lat.clone(), false), (self.bw.clone(), true)] {
                    tokio::spawn(supervise(
                        self.runner.clone(),
                        program,
                        server_args(bandwidth),
                        self.status.clone(),
                        rx.clone(),
                    ));
                }
                *stop = Some(tx);
            }
            (false, true) => *stop = None,
            _ => {}
        }
    }

    pub fn status(&self) -> LinkResponder {
        let s = lock(&self.status);
        LinkResponder {
            enabled: s.enabled,
            running: s.alive == 2,
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

/// Keeps one server running until `stop`'s sender is dropped.
async fn supervise(
    runner: Arc<dyn Runner>,
    program: PathBuf,
    args: Vec<String>,
    status: Arc<Mutex<Status>>,
    mut stop: watch::Receiver<()>,
) {
    let name = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut backoff = BACKOFF_FIRST;
    let mut first = true;
    loop {
        if !first {
            lock(&status).restarts += 1;
        }
        first = false;
        let mut child = match runner.spawn(&program, &args, None) {
            Ok(c) => c,
            Err(e) => {
                lock(&status).detail = format!("{name} could not start: {e}");
                tracing::warn!(program = %program.display(), error = %e, "responder server did not start");
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
        tracing::warn!(program = %program.display(), status = %what, "responder server ended without serving");
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}
