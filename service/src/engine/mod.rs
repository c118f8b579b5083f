//! The engine: owns the observed [`ObservedState`], keeps it current from kernel events, a 1 Hz
//! port poll and a sweep over the devices, one a tick, records throughput history, and runs mutations one at a
//! time. It publishes through a [`Sink`] (the D-Bus layer), which never waits on the kernel:
//! bus reads are served from what was last published.
//!
//! Events are hints. Whatever an event names is re-read and the result compared with what was
//! published, so a duplicated event changes nothing, a lost one is repaired by the poll or the
//! sweep, and an overflow (ENOBUFS) or a storm is answered with one full re-enumeration.
//!
//! `Engine` (here) holds the state, the host and the sink, and routes events, ticks and jobs;
//! its two parts are `monitor::Monitor` (tick, poll, sweep, staleness, history) and
//! `operations::Operations` (what jobs need beside the state). Each feature's operations are
//! functions over the engine in their own `ops_*` file, using the job API of `operations.rs`.

pub mod by_port;
pub mod clock;
mod health;
pub mod history;
mod host_setup;
mod ip_change;
mod leftovers;
mod monitor;
mod netplan_change;
mod nm_change;
mod nm_migrate;
mod nm_owners;
mod operations;
mod ops_host;
mod ops_ipoib;
mod ops_naming;
mod ops_port_type;
mod ops_qos;
mod ops_roce;
mod ops_soft_links;
mod ops_state;
mod ops_vf_guid;
pub mod phases;
mod renames;
mod restore;
mod stale;
pub mod state;
mod sweep;
mod transaction;
mod wanted;

pub use ip_change::{IpPending, NetworkdPending};
pub use netplan_change::NetplanPending;
pub use nm_change::{IpReport, NmPending, RdmaNetdev};
pub use nm_migrate::Moved;
pub use ops_ipoib::ChildCreated;
pub use ops_state::{StateFileOutcome, StatePending};

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, info, warn};

pub use crate::kernel::roce::PortRoce;
pub use crate::op_error::OpError;
pub use clock::TickClock;
pub use history::{History, Sample};
#[cfg(any(test, feature = "sim"))]
pub use host_setup::{simulate_unit_started, simulated_units};
pub use host_setup::{HostSetupState, ManagedLimits, ModuleRow, Step, StepOutcome, UnitState};
pub use ops_host::SmVerb;
pub use ops_naming::NamingState;
pub use state::{DeviceState, Dirty, IpoibState, ObservedState, Stale};

use crate::kernel::{CounterPort, Host, HostEvent};
use crate::system::SystemServices;
use monitor::{Monitor, PollPlan};
use operations::Operations;
use sweep::Swept;
use wanted::{device_carries, Wanted};

/// Receives what the engine observed.
#[async_trait]
pub trait Sink: Send + Sync + 'static {
    /// The state changed for the keys in `dirty` (all keys on the first call).
    async fn publish(&self, state: &ObservedState, dirty: &Dirty);
    /// One tick's throughput samples, keyed by (device index, port).
    async fn samples(&self, tick: u64, samples: &[((u32, u32), Sample)]);
}

#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Port poll and sampling period.
    pub tick: Duration,
    /// Every this many ticks, the IPoIB interfaces, the naming rules and host setup are
    /// re-read, for changes no event reports (files edited by hand, units). Devices are not
    /// re-read all at once any more: see `sweep_devices_per_tick`.
    pub resync_ticks: u64,
    /// The sweep: this many devices are re-read at each of its ticks, in turn, for changes
    /// no event reports (a P_Key table or a GID prefix set by the subnet manager, a node
    /// description written by hand). A host of N devices is swept every
    /// N x `sweep_period_ticks` / this ticks, at a cost per tick that does not grow with
    /// the host.
    pub sweep_devices_per_tick: usize,
    /// The sweep runs at one tick in this many. Two by default: a device's re-read is most
    /// of the idle daemon's CPU in the lab after the poll, and GIDs that follow IP
    /// addresses, the change the sweep was first for, come with rtnetlink's address events.
    pub sweep_period_ticks: u64,
    /// Each port's `lid` and `sm_lid` are polled once every this many ticks, a share of the
    /// ports at each tick (1: every port at every tick). A port whose state moves is re-read
    /// whole at once, LIDs included; a subnet manager's fail-over that leaves the ports
    /// ACTIVE (new SM LID, maybe new LIDs) is seen within this many ticks. See
    /// `kernel::LidTurn`.
    pub lid_ticks: usize,
    /// More distinct names than this in one batch of events is a storm: re-enumerate.
    pub storm_threshold: usize,
    /// Fills every port's history at start with the rates the seed says it had (the
    /// simulated demo host: its graphs are full at once). `None` on real hosts.
    pub history_seed: Option<Arc<dyn history::HistorySeed>>,
    /// The link tests' tools, runner and bounds (the D-Bus layer runs them, not the engine).
    pub link_test: crate::linktest::LinkTestConfig,
    /// How old a reading of every port's counters (GetAllCounters) may be when a caller
    /// gets it: callers within this of a reading share it, whoever they are, so the host's
    /// counter files are read at most once per this however many scrapers ask.
    pub counters_max_age: Duration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            tick: Duration::from_secs(1),
            resync_ticks: 60,
            sweep_devices_per_tick: 1,
            sweep_period_ticks: 2,
            // 10 s at 1 Hz: 922 of the 4096 files a second on 256x2 ports not read, and an
            // SM fail-over still shown within the coarse history's bucket.
            lid_ticks: 10,
            storm_threshold: 64,
            history_seed: None,
            link_test: crate::linktest::LinkTestConfig::default(),
            // Within Prometheus' default scrape interval (15 s), so that a scraper every 15 s
            // always gets a reading made for it, while an HA pair of servers, an exporter and
            // rdma-tui asking within a few seconds of each other share one.
            counters_max_age: DEFAULT_COUNTERS_MAX_AGE,
        }
    }
}

/// A request to the engine: runs on the engine task with exclusive access to its state, so
/// mutations are serialised and each sees the result of the one before. Each feature's
/// operations build jobs in their own `ops_*` file through [`EngineHandle::call`]. A job must
/// not wait on anything slow outside the host (systemd, firewalld): the poll and the events
/// wait for it; host setup calls those services from the caller's task (`ops_host`).
type Job = Box<dyn for<'a> FnOnce(&'a mut Engine) -> BoxFuture<'a, ()> + Send>;

/// [`EngineConfig::counters_max_age`] by default.
pub const DEFAULT_COUNTERS_MAX_AGE: Duration = Duration::from_secs(10);

/// The bus layer's handle on the engine.
#[derive(Clone)]
pub struct EngineHandle {
    commands: mpsc::Sender<Job>,
    history: Arc<Mutex<History>>,
    pub clock: TickClock,
    /// See [`EngineConfig::counters_max_age`].
    pub counters_max_age: Duration,
    host: Arc<dyn Host>,
    host_setup: Arc<host_setup::HostSetupShared>,
    /// Which interfaces NetworkManager owns (asked from callers' tasks).
    nm: Arc<nm_owners::NmOwners>,
    /// The link tests, set once at start (`set_link_tests`): the declarative state's
    /// `responder` reads and sets their responder. They run on callers' tasks, never here.
    link_tests: Arc<std::sync::OnceLock<Arc<crate::linktest::LinkTests>>>,
}

impl EngineHandle {
    /// Runs `op` on the engine task, after every job sent before it, and returns its result.
    pub(crate) async fn call<T, F>(&self, op: F) -> Result<T, OpError>
    where
        T: Send + 'static,
        F: for<'a> FnOnce(&'a mut Engine) -> BoxFuture<'a, Result<T, OpError>> + Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        let job: Job = Box::new(move |engine: &mut Engine| {
            Box::pin(async move {
                let r = op(engine).await;
                let _ = reply.send(r);
            })
        });
        self.commands
            .send(job)
            .await
            .map_err(|_| OpError::Failed("the engine stopped".into()))?;
        rx.await
            .map_err(|_| OpError::Failed("the engine stopped".into()))?
    }

    /// Reads a port's counters from the kernel now. Counters change without an event, so
    /// they are not part of the published state; this is the one read that asks the host at
    /// call time.
    pub async fn read_counters(
        &self,
        dev: &str,
        port: u32,
    ) -> Result<crate::model::CounterSnapshot, OpError> {
        self.host
            .read_counters(dev, port)
            .await
            .map_err(OpError::from_host)
    }

    /// Reads the counters of every port the engine knows, in one trip to the host: by
    /// (device index, port), in the order of the published model.
    ///
    /// A port's traffic counters are those of the tick's last poll (at most a tick old),
    /// which has just read them; the host reads only the others, from the source the engine
    /// knows. A port not polled yet is read whole.
    pub async fn read_all_counters(
        &self,
    ) -> Result<Vec<((u32, u32), Result<crate::model::CounterSnapshot, OpError>)>, OpError> {
        type Known = (u32, String, u32, Option<crate::model::CounterSource>);
        let ports: Vec<Known> = self
            .call(|e| {
                Box::pin(async move {
                    Ok(e.state
                        .devices
                        .values()
                        .flat_map(|d| {
                            d.snap.ports.iter().map(move |p| {
                                let source = d.sources.get(&p.number).map(|s| s.counters.clone());
                                (d.index, d.name().to_string(), p.number, source)
                            })
                        })
                        .collect())
                })
            })
            .await?;
        let polled: Vec<Option<history::PolledTraffic>> = {
            let h = self.history.lock().unwrap_or_else(|p| p.into_inner());
            ports
                .iter()
                .map(|(index, _, port, _)| {
                    h.port((*index, *port))
                        .and_then(|p| p.last_traffic())
                        .filter(|t| t.has_any())
                })
                .collect()
        };
        let keys: Vec<(u32, u32)> = ports.iter().map(|(i, _, n, _)| (*i, *n)).collect();
        let read = self
            .host
            .read_all_counters(
                ports
                    .into_iter()
                    .zip(&polled)
                    .map(|((dev_index, dev, port, source), traffic)| CounterPort {
                        dev,
                        dev_index,
                        port,
                        polled: source.filter(|_| traffic.is_some()),
                    })
                    .collect(),
            )
            .await;
        Ok(keys
            .into_iter()
            .zip(read)
            .zip(polled)
            .map(|((k, r), traffic)| {
                let r = r.map(|mut snap| {
                    if let Some(t) = traffic {
                        t.fill(&mut snap);
                    }
                    snap
                });
                (k, r.map_err(OpError::from_host))
            })
            .collect())
    }

    /// A port's recorded samples (the fine ring: one a tick), oldest first.
    pub fn history(&self, key: (u32, u32)) -> Vec<Sample> {
        let h = self.history.lock().unwrap_or_else(|p| p.into_inner());
        h.port(key).map(|p| p.samples()).unwrap_or_default()
    }

    /// A port's coarse history (one average every [`history::COARSE_TICKS`] ticks), oldest
    /// first.
    pub fn history_coarse(&self, key: (u32, u32)) -> Vec<Sample> {
        let h = self.history.lock().unwrap_or_else(|p| p.into_inner());
        h.port(key).map(|p| p.coarse_samples()).unwrap_or_default()
    }
}

/// Gives the heap that a full enumeration used and freed back to the system. glibc returns
/// only the top of the heap by itself; the holes that thousands of transient reads leave stay
/// resident until trimmed. Once at start and once per resync (`resync_ticks`, a minute) is
/// cheap.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
    // Asked of malloc only when someone reads it.
    if !tracing::enabled!(target: "rdma_managerd::heap", tracing::Level::DEBUG) {
        return;
    }
    if let Some(h) = heap_use() {
        // Its own target, so that a benchmark can ask for it alone
        // (`RUST_LOG=info,rdma_managerd::heap=debug`).
        debug!(
            target: "rdma_managerd::heap",
            in_use_kib = h.in_use / 1024,
            free_kib = h.free / 1024,
            "heap after trimming"
        );
    }
}

/// What malloc holds: bytes in use (mapped blocks included) and free in its heap.
#[derive(Debug, Clone, Copy)]
struct HeapUse {
    in_use: usize,
    free: usize,
}

/// The heap's use after start-up, logged so that a resident size can be told apart into
/// live data and malloc's free space (where heaptrack cannot run, as in the kernel lab).
fn heap_use() -> Option<HeapUse> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // `mallinfo`, not `mallinfo2`: the latter is glibc 2.33 and later (RHEL 8 has 2.28,
        // and a missing symbol would stop the daemon from loading). Its `int` fields wrap
        // past 2 GiB, far above this daemon's heap.
        #[allow(deprecated)]
        // SAFETY: mallinfo only reads the allocator's own statistics.
        let m = unsafe { libc::mallinfo() };
        let size = |v: libc::c_int| usize::try_from(v).unwrap_or(0);
        Some(HeapUse {
            in_use: size(m.uordblks) + size(m.hblkhd),
            free: size(m.fordblks),
        })
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    None
}

/// Reads everything the engine shows (devices, IPoIB interfaces, what is persisted, the
/// naming rules, host setup) into a new state, and which keys it fills. The engine starts from
/// it; `rdma-managerd show` prints it, changing nothing (no restore, no engine).
pub async fn read_host(
    host: &dyn Host,
    system: &dyn SystemServices,
) -> Result<(ObservedState, Dirty), crate::kernel::HostError> {
    read_host_timed(host, system, &mut phases::Phases::new()).await
}

/// [`read_host`], marking its phases on `phases`.
pub async fn read_host_timed(
    host: &dyn Host,
    system: &dyn SystemServices,
    phases: &mut phases::Phases,
) -> Result<(ObservedState, Dirty), crate::kernel::HostError> {
    let mut state = ObservedState {
        config: crate::config::Desired::load(host).await,
        ..ObservedState::default()
    };
    phases.mark("config");
    state.naming = ops_naming::load_naming(host).await;
    phases.mark("naming");
    // Host setup asks systemd and firewalld over the bus: beside the devices' reads, which
    // wait on the kernel, rather than before them.
    let (setup, devices) = tokio::join!(
        host_setup::load_host_setup(host, system),
        state.refresh_all(host)
    );
    state.host_setup = setup;
    let mut dirty = devices?;
    phases.mark("devices and host setup");
    ops_port_type::read_port_types(host, &mut state).await;
    phases.mark("port types");
    dirty.config = true;
    dirty.host_setup = true;
    Ok((state, dirty))
}

/// Reads the host, publishes it, re-applies what was persisted (publishing the result), and
/// starts the engine task. `system` is how host setup
/// reaches systemd and firewalld.
pub async fn start(
    host: Arc<dyn Host>,
    system: Arc<dyn SystemServices>,
    sink: Arc<dyn Sink>,
    config: EngineConfig,
    phases: &mut phases::Phases,
) -> Result<(EngineHandle, tokio::task::JoinHandle<()>), crate::kernel::HostError> {
    // Subscribe before the first read so that nothing between the two is missed.
    let events = host.subscribe().await?;
    phases.mark("subscribe");
    let t = std::time::Instant::now();
    // NetworkManager is asked now, in a task of its own, and its answer waited for only
    // before the IPoIB restore (an interface it owns is not re-created or re-applied from
    // the daemon's own file): at boot it may take seconds to export its settings
    // (`NM_SETTINGS_WAIT`), and that wait overlaps the host's read and the other areas'
    // restore. The owners its answer gives are published before start-up ends.
    let nm = Arc::new(nm_owners::NmOwners::new(system.clone()));
    let asking_nm = tokio::spawn({
        let nm = nm.clone();
        async move { nm.refresh().await }
    });
    // A write killed half-way left only its temporary file: removed before anything is
    // written, beside the read (which reads files by their own names, never a temporary's).
    let (_, read) = tokio::join!(
        leftovers::remove_leftovers(host.as_ref()),
        read_host_timed(host.as_ref(), system.as_ref(), phases)
    );
    let (mut state, dirty) = read?;
    state.nm_profiles = nm.snapshot();
    for e in state.config.errors() {
        warn!(error = %e, "persisted configuration is unusable; nothing from it is re-applied");
    }
    let read_ms = t.elapsed().as_secs_f64() * 1e3;
    sink.publish(&state, &dirty).await;
    phases.mark("publish");
    release_freed_memory();
    let heap = heap_use();
    info!(
        devices = state.devices.len(),
        ipoib = state.ipoib.len(),
        read_ms = format!("{read_ms:.1}"),
        publish_ms = format!("{:.1}", t.elapsed().as_secs_f64() * 1e3 - read_ms),
        heap_in_use_kib = heap.map(|h| h.in_use / 1024),
        heap_free_kib = heap.map(|h| h.free / 1024),
        "host enumerated and published"
    );
    let (tx, rx) = mpsc::channel(16);
    let history = Arc::new(Mutex::new(History::default()));
    // Before the plan: the ports of watched devices need not have their state read every
    // second.
    let watched = host.watch_port_events(&state.hardware_names()).await;
    phases.mark("port events");
    let plan = Arc::new(PollPlan::of(&state, &watched));
    let clock = match &config.history_seed {
        // The seeded past takes the ticks before the start.
        Some(seed) => {
            let len = history::HISTORY_SPAN_TICKS;
            let mut h = history.lock().unwrap_or_else(|p| p.into_inner());
            for (key, t) in plan.keys.iter().zip(&plan.targets) {
                let past = (0..len).map(|i| seed.past_rates(&t.dev, t.port, len - i));
                h.port_mut(*key).prefill(0, past);
            }
            TickClock::starting_at(config.tick, len)
        }
        None => TickClock::new(config.tick),
    };
    let host_setup = Arc::new(host_setup::HostSetupShared::new(system));
    let link_tests: Arc<std::sync::OnceLock<_>> = Arc::default();
    let handle = EngineHandle {
        commands: tx.clone(),
        history: history.clone(),
        clock: clock.clone(),
        counters_max_age: config.counters_max_age,
        host: host.clone(),
        host_setup: host_setup.clone(),
        nm: nm.clone(),
        link_tests: link_tests.clone(),
    };
    let mut engine = Engine {
        monitor: Monitor::new(config, clock, history, plan, host.port_poller()),
        ops: Operations::new(host_setup, nm, tx.downgrade(), link_tests),
        host,
        sink,
        state,
    };
    // What the kernel forgot (at boot, or while the daemon was stopped) is re-applied, and
    // its result published, before this returns: until then the root's Startup is true, and
    // GetManagedObjects and every change wait (see dbus/server.rs), so no client acts on the
    // values from before the restore. Events the restore causes
    // (a re-created link's add) wait in `events` and find nothing left to change.
    restore::restore_but_ipoib(&mut engine, &wanted::Appeared::start()).await;
    phases.mark("restore");
    if let Err(e) = asking_nm.await {
        warn!(error = %e, "asking NetworkManager for its profiles ended without an answer");
    }
    // What NetworkManager took beyond the read and the restore above.
    phases.mark("networkmanager");
    ops_ipoib::sync_nm_owners(&mut engine).await;
    restore::restore_ipoib(&mut engine, &wanted::Appeared::start()).await;
    phases.mark("ipoib restore");
    let task = tokio::spawn(engine.run(events, rx));
    Ok((handle, task))
}

/// The engine task's owner: the shared state, the host it is read from and the sink it is
/// published to, and the two parts that work on them: [`Monitor`] (the tick: poll, sweep,
/// staleness, history) and [`Operations`] (jobs: what they need beside the state). It routes
/// kernel events, ticks and jobs, one at a time; jobs run on it (see [`Job`]).
pub(crate) struct Engine {
    host: Arc<dyn Host>,
    sink: Arc<dyn Sink>,
    state: ObservedState,
    monitor: Monitor,
    ops: Operations,
}

impl Engine {
    async fn run(
        mut self,
        mut events: mpsc::UnboundedReceiver<HostEvent>,
        mut commands: mpsc::Receiver<Job>,
    ) {
        let mut ticker = tokio::time::interval(self.monitor.period());
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut events_open = true;
        loop {
            tokio::select! {
                ev = events.recv(), if events_open => match ev {
                    Some(ev) => {
                        let mut wanted = Wanted::default();
                        wanted.add(ev);
                        // Take the whole burst at once: a storm costs one pass.
                        while let Ok(ev) = events.try_recv() {
                            wanted.add(ev);
                        }
                        self.apply(wanted).await;
                    }
                    None => {
                        warn!("kernel event watch ended; relying on the poll and resync");
                        events_open = false;
                    }
                },
                _ = ticker.tick() => self.tick().await,
                job = commands.recv() => match job {
                    Some(job) => job(&mut self).await,
                    None => break,
                },
            }
        }
    }

    /// Re-reads what a batch of events (or the monitor) asks for, publishes it, and has
    /// what was persisted follow renames and appearances.
    async fn apply(&mut self, mut wanted: Wanted) {
        let addresses_only = wanted.devices.is_empty()
            && wanted.netdevs.is_empty()
            && !wanted.everything
            && wanted.renamed.is_empty();
        // IPoIB interfaces publish their addresses: re-read those named (netdevs re-read
        // below get theirs with the rest).
        let addressed_ipoib = if wanted.addressed.is_empty() || wanted.everything {
            BTreeSet::new()
        } else {
            let host = self.host.clone();
            let only: BTreeSet<String> = wanted
                .addressed
                .difference(&wanted.netdevs)
                .cloned()
                .collect();
            self.state.refresh_addresses(host.as_ref(), &only).await
        };
        if addresses_only && !self.carries_any(&wanted.addressed) {
            // Addresses of netdevs no RDMA port rides on (most of a host's, often).
            if !addressed_ipoib.is_empty() {
                self.publish_read(Dirty {
                    ipoib: addressed_ipoib,
                    ..Dirty::default()
                })
                .await;
            }
            return;
        }
        if !addresses_only {
            self.monitor.events_seen();
        }
        // A netdev change can change the ports it carries (RoCE GIDs, port state of rxe);
        // an address change, their GIDs. The kernel updates the GID table from a work
        // queue after the address notifier: the next tick's re-read catches what this one
        // is too early for.
        for d in self.state.devices.values() {
            if device_carries(d, |n| {
                wanted.netdevs.contains(n) || wanted.addressed.contains(n)
            }) {
                wanted.devices.insert(d.name().to_string());
                self.monitor.reread_at_next_tick(d.name().to_string());
            }
        }
        if wanted.devices.len() + wanted.netdevs.len() > self.monitor.storm_threshold() {
            debug!(
                devices = wanted.devices.len(),
                netdevs = wanted.netdevs.len(),
                "event storm; re-enumerating"
            );
            wanted.everything = true;
        }
        let host = self.host.clone();
        let result = if wanted.everything {
            self.monitor
                .forget(self.state.devices.values().map(|d| d.name().to_string()));
            // Lost events (an overflow) may have carried appearances: find them by comparing.
            let before = self.state.present_names();
            let r = self.state.refresh_all(host.as_ref()).await;
            let after = self.state.present_names();
            wanted
                .appeared
                .devices
                .extend(after.0.difference(&before.0).map(|(_, n)| n.clone()));
            wanted
                .appeared
                .netdevs
                .extend(after.1.difference(&before.1).map(|(_, n)| n.clone()));
            r
        } else {
            let mut dirty = Dirty::default();
            let mut r = Ok(());
            if !wanted.devices.is_empty() {
                self.monitor.forget(wanted.devices.iter().cloned());
                match self
                    .state
                    .refresh_devices(host.as_ref(), &wanted.devices)
                    .await
                {
                    Ok(d) => dirty.merge(d),
                    Err(e) => r = Err(e),
                }
            }
            if !wanted.netdevs.is_empty() {
                match self
                    .state
                    .refresh_netdevs(host.as_ref(), &wanted.netdevs)
                    .await
                {
                    Ok(d) => dirty.merge(d),
                    Err(e) => r = Err(e),
                }
            }
            dirty.ipoib.extend(addressed_ipoib);
            r.map(|_| dirty)
        };
        match result {
            Ok(dirty) => {
                // Only a full re-read vouches for everything published.
                if self.publish_read(dirty).await && wanted.everything {
                    self.read_succeeded().await;
                }
            }
            Err(e) => {
                warn!(error = %e, "re-reading the host failed; keeping the last state");
                self.read_failed(e.to_string()).await;
            }
        }
        if wanted.everything {
            // Rules files, host setup files and units changed by hand are noticed at the
            // periodic re-read.
            ops_naming::refresh_naming(self).await;
            host_setup::refresh_host_setup(self).await;
            release_freed_memory();
        }
        // Before the restore: a link remembered over a netdev that was renamed is found
        // under its new name.
        for (old, new) in &wanted.renamed {
            renames::follow_netdev_rename(self, old, new).await;
        }
        if !wanted.appeared.is_empty() {
            restore::restore(self, &wanted.appeared).await;
        }
    }

    /// Whether any device rides on one of `netdevs`.
    fn carries_any(&self, netdevs: &BTreeSet<String>) -> bool {
        self.state
            .devices
            .values()
            .any(|d| device_carries(d, |n| netdevs.contains(n)))
    }

    /// One tick: what the monitor says is due, then the port poll and its samples.
    async fn tick(&mut self) {
        let Some(work) = self.monitor.begin_tick() else {
            return;
        };
        if work.full_reread {
            self.apply(Wanted {
                everything: true,
                ..Wanted::default()
            })
            .await;
        } else {
            if !work.reread.is_empty() {
                self.apply(Wanted {
                    devices: work.reread,
                    ..Wanted::default()
                })
                .await;
            }
            if work.sweep {
                self.sweep().await;
            }
            if work.resync {
                self.resync_rest().await;
            }
        }
        let polled = match self.monitor.poll_ports(self.host.as_ref()).await {
            None => return,
            Some(Ok(polled)) => polled,
            Some(Err(reason)) => {
                self.poll_failed(Some(reason)).await;
                return;
            }
        };
        self.poll_failed(polled.unreadable()).await;
        let recorded = self.monitor.record(&self.state, &polled, work.tick);
        self.sink.samples(work.tick, &recorded.samples).await;
        if !recorded.moved.is_empty() {
            self.apply(Wanted {
                devices: recorded.moved,
                ..Wanted::default()
            })
            .await;
        }
    }

    /// The sweep's share of one tick (see `sweep.rs`).
    async fn sweep(&mut self) {
        match self
            .monitor
            .sweep(self.host.as_ref(), &mut self.state)
            .await
        {
            Swept::Nothing => {}
            // A device the state lacks: re-read as an event would have.
            Swept::Missing(wanted) => self.apply(wanted).await,
            Swept::Read {
                result: Ok(dirty), ..
            } => {
                self.publish_read(dirty).await;
            }
            Swept::Read { result: Err(e), .. } => {
                warn!(error = %e, "the sweep could not re-read a device; keeping the last state");
                self.read_failed(e.to_string()).await;
            }
        }
    }

    /// What the sweep does not cover, every `resync_ticks`: the IPoIB interfaces known (new
    /// ones come with rtnetlink's add events; lost events with an overflow, which re-reads
    /// everything), the naming rules and host setup.
    async fn resync_rest(&mut self) {
        let netdevs: BTreeSet<String> = self
            .state
            .ipoib
            .values()
            .map(|i| i.snap.name.clone())
            .collect();
        // Not through `apply`, which would re-read every device carrying one of them too.
        if !netdevs.is_empty() {
            let host = self.host.clone();
            match self.state.refresh_netdevs(host.as_ref(), &netdevs).await {
                Ok(dirty) => {
                    self.publish_read(dirty).await;
                }
                Err(e) => {
                    warn!(error = %e, "re-reading the IPoIB interfaces failed; keeping the last state");
                    self.read_failed(e.to_string()).await;
                }
            }
        }
        ops_naming::refresh_naming(self).await;
        host_setup::refresh_host_setup(self).await;
        release_freed_memory();
    }

    async fn publish(&mut self, dirty: Dirty) {
        if dirty.is_empty() {
            return;
        }
        let devices_changed = !dirty.devices.is_empty();
        self.monitor.retain_history(&self.state);
        self.sink.publish(&self.state, &dirty).await;
        if devices_changed {
            // The host is told the devices after clients are: watching checks every device
            // against the kept libibverbs list (a file each) and may make a new list, which
            // on a host of a thousand devices costs more than the publish.
            let watched = self
                .host
                .watch_port_events(&self.state.hardware_names())
                .await;
            // The plan reads the state of the devices watched less often.
            self.monitor.replan(&self.state, &watched);
            if let Some(link_tests) = self.ops.link_tests.get() {
                link_tests.devices_changed(|| self.state.device_keys());
            }
        }
    }

    /// Publishes what a re-read read; what it could not read makes the state stale. Whether
    /// it read everything it was asked.
    async fn publish_read(&mut self, mut dirty: Dirty) -> bool {
        let unread = std::mem::take(&mut dirty.unread);
        self.publish(dirty).await;
        if unread.is_empty() {
            return true;
        }
        self.read_failed(unread.join("; ")).await;
        false
    }

    /// A re-read failed: the state is stale, and a full re-read is scheduled (`stale.rs`).
    async fn read_failed(&mut self, reason: String) {
        self.monitor.read_failed(reason);
        self.publish_stale().await;
    }

    /// A full re-read succeeded: what it read is current.
    async fn read_succeeded(&mut self) {
        self.monitor.read_succeeded();
        self.publish_stale().await;
    }

    /// The result of one port poll: why it failed, or `None` when it read every port.
    async fn poll_failed(&mut self, reason: Option<String>) {
        self.monitor.poll_result(reason);
        self.publish_stale().await;
    }

    /// Publishes the root's staleness when it changed.
    async fn publish_stale(&mut self) {
        let now = self.monitor.stale();
        if now != self.state.stale {
            self.state.stale = now;
            self.sink.publish(&self.state, &Dirty::default()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::kernel::sim::{fixtures, SimHost, SimOp};
    use crate::system::sim::SimSystemServices;

    /// Hands every published state's device names to the test.
    struct Names(tokio::sync::watch::Sender<BTreeSet<String>>);

    #[async_trait::async_trait]
    impl Sink for Names {
        async fn publish(&self, state: &ObservedState, _: &Dirty) {
            let names = state
                .devices
                .values()
                .map(|d| d.name().to_string())
                .collect();
            self.0.send_replace(names);
        }
        async fn samples(&self, _: u64, _: &[((u32, u32), Sample)]) {}
    }

    /// A device that appears is published before the port-event watch is renewed: a watch
    /// as slow as a new libibverbs list of a thousand devices does not hold the device back
    /// from clients.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_device_added_is_published_before_the_port_event_watch() {
        const HELD: Duration = Duration::from_secs(3);
        let sim = SimHost::new(fixtures::demo_host()).expect("the demo host");
        let (tx, mut names) = tokio::sync::watch::channel(BTreeSet::new());
        let (_handle, task) = start(
            Arc::new(sim.clone()),
            Arc::new(SimSystemServices::new()),
            Arc::new(Names(tx)),
            EngineConfig::default(),
            &mut phases::Phases::new(),
        )
        .await
        .expect("the engine starts");
        let dev = sim
            .spec()
            .devices
            .iter()
            .find(|d| d.name == "mlx5_0")
            .cloned()
            .expect("the demo's mlx5_0");
        // The delay must fall on the plug's watch, not on the unplug's, which follows the
        // unplug's publish: wait for each watch to have seen the device come and go.
        let watching = &sim;
        let watched_is = |want: bool| async move {
            let deadline = Instant::now() + Duration::from_secs(10);
            while watching.watched_devices().contains("mlx5_0") != want {
                assert!(Instant::now() < deadline, "mlx5_0 watched is not {want}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        watched_is(true).await;
        sim.unplug(&dev.name).expect("unplugged");
        let gone = tokio::time::timeout(
            Duration::from_secs(10),
            names.wait_for(|n| !n.contains("mlx5_0")),
        )
        .await
        .is_ok_and(|r| r.is_ok());
        assert!(gone, "mlx5_0 still published");
        watched_is(false).await;

        sim.delay_next(SimOp::WatchPortEvents, HELD);
        let t = Instant::now();
        sim.plug(dev).expect("plugged");
        let back = tokio::time::timeout(
            Duration::from_secs(10),
            names.wait_for(|n| n.contains("mlx5_0")),
        )
        .await
        .is_ok_and(|r| r.is_ok());
        let took = t.elapsed();
        task.abort();
        assert!(back, "mlx5_0 not published again");
        assert!(took < HELD / 2, "published after the watch: {took:?}");
    }
}
