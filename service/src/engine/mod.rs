//! The engine: owns the observed [`ObservedState`], keeps it current from kernel events, a 1 Hz
//! port poll and a sweep over the devices, one a tick, records throughput history, and runs mutations one at a
//! time. It publishes through a [`Sink`] (the D-Bus layer), which never waits on the kernel:
//! bus reads are served from what was last published.
//!
//! Events are hints. Whatever an event names is re-read and the result compared with what was
//! published, so a duplicated event changes nothing, a lost one is repaired by the poll or the
//! sweep, and an overflow (ENOBUFS) or a storm is answered with one full re-enumeration.

pub mod by_port;
pub mod clock;
pub mod history;
mod host_setup;
mod leftovers;
mod nm_change;
mod nm_migrate;
mod nm_owners;
mod ops;
mod ops_host;
mod ops_ipoib;
mod ops_naming;
mod ops_roce;
mod ops_soft_links;
mod persist;
pub mod phases;
mod renames;
mod restore;
mod stale;
pub mod state;
mod transaction;

pub use nm_change::{IpReport, NmPending, RdmaNetdev};
pub use nm_migrate::Moved;
pub use ops_ipoib::ChildCreated;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, info, warn};

pub use clock::TickClock;
pub use history::{History, Sample};
#[cfg(any(test, feature = "sim"))]
pub use host_setup::{simulate_unit_started, simulated_units};
pub use host_setup::{HostSetupState, ManagedLimits, ModuleRow, Step, StepOutcome, UnitState};
pub use ops::OpError;
pub use ops_host::SmVerb;
pub use ops_naming::NamingState;
pub use state::{DeviceState, Dirty, IpoibState, ObservedState, PortRoce, Stale};

use crate::kernel::{Host, HostEvent, LidTurn, PollTarget, PortPoller, PortReading, StatePoll};
use crate::system::SystemServices;

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
    /// of the idle daemon's CPU in the lab after the poll (docs/PERFORMANCE.md, "Idle CPU,
    /// tenth pass"), and GIDs that follow IP addresses, the change the sweep was first
    /// for, now come with rtnetlink's address events.
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
        }
    }
}

/// A request to the engine: runs on the engine task with exclusive access to its state, so
/// mutations are serialised and each sees the result of the one before. Each feature's
/// operations build jobs in their own `ops_*` file through [`EngineHandle::call`]. A job must
/// not wait on anything slow outside the host (systemd, firewalld): the poll and the events
/// wait for it; host setup calls those services from the caller's task (`ops_host`).
type Job = Box<dyn for<'a> FnOnce(&'a mut Engine) -> BoxFuture<'a, ()> + Send>;

/// The bus layer's handle on the engine.
#[derive(Clone)]
pub struct EngineHandle {
    commands: mpsc::Sender<Job>,
    history: Arc<Mutex<History>>,
    pub clock: TickClock,
    host: Arc<dyn Host>,
    host_setup: Arc<host_setup::HostSetupShared>,
    /// Which interfaces NetworkManager owns (asked from callers' tasks).
    nm: Arc<nm_owners::NmOwners>,
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

/// Whether the periodic resync is due at tick `since` (since the start), the last having
/// been at `last`: once `every` ticks have passed, not at multiples of `every`, which a slow
/// tick can step over (the clock's tick is the nearest to the time the tick runs).
fn resync_due(since: u64, last: u64, every: u64) -> bool {
    since >= last.saturating_add(every.max(1))
}

/// What malloc holds: bytes in use (mapped blocks included) and free in its heap.
#[derive(Debug, Clone, Copy)]
struct HeapUse {
    in_use: usize,
    free: usize,
}

/// The heap's use after start-up, logged so that a resident size can be told apart into
/// live data and malloc's free space (docs/PERFORMANCE.md, "At scale on a real kernel,
/// fifth pass").
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
    state.host_setup = host_setup::load_host_setup(host, system).await;
    phases.mark("host_setup");
    let mut dirty = state.refresh_all(host).await?;
    phases.mark("devices");
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
    // Before anything is read or written: a write killed half-way left only its temp file.
    leftovers::remove_leftovers(host.as_ref()).await;
    phases.mark("leftovers");
    let (mut state, dirty) = read_host_timed(host.as_ref(), system.as_ref(), phases).await?;
    // Asked before the first publish and the restore: an interface NetworkManager owns shows
    // its profile, and is not re-created or re-applied from the daemon's own file.
    let nm = Arc::new(nm_owners::NmOwners::new(system.clone()));
    nm.refresh().await;
    state.nm_profiles = nm.snapshot();
    phases.mark("networkmanager");
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
    let handle = EngineHandle {
        commands: tx.clone(),
        history: history.clone(),
        clock: clock.clone(),
        host: host.clone(),
        host_setup: host_setup.clone(),
        nm: nm.clone(),
    };
    let poller = host.port_poller();
    let mut engine = Engine {
        host,
        host_setup,
        nm,
        units_status_seq: 0,
        commands: tx.downgrade(),
        sink,
        config,
        plan,
        state,
        history,
        clock,
        sampled: clock::SampledTicks::default(),
        polls: 0,
        poller: Some(poller),
        forget: Vec::new(),
        stale: stale::Staleness::default(),
        swept: None,
        sweep_listed: None,
        sweep_nl: None,
        reread_next_tick: BTreeSet::new(),
        resynced_at: 0,
        ipoib_restore_deferred: false,
    };
    // What the kernel forgot (at boot, or while the daemon was stopped) is re-applied, and
    // its result published, before this returns: until then the root's Startup is true, and
    // GetManagedObjects and every change wait (see dbus/server.rs), so no client acts on the
    // values from before the restore. Events the restore causes
    // (a re-created link's add) wait in `events` and find nothing left to change.
    engine.restore(&restore::Appeared::start()).await;
    phases.mark("restore");
    let task = tokio::spawn(engine.run(events, rx));
    Ok((handle, task))
}

/// The ports the 1 Hz poll reads, derived from the state when devices change (not at every
/// tick): `keys[i]` is the (device index, port) of `targets[i]`.
struct PollPlan {
    keys: Vec<(u32, u32)>,
    targets: Vec<PollTarget>,
}

impl PollPlan {
    /// `watched`: the devices whose ports' state changes come as events (see
    /// `kernel::port_events`).
    fn of(state: &ObservedState, watched: &BTreeSet<String>) -> PollPlan {
        let (keys, targets) = state
            .devices
            .values()
            .flat_map(|d| {
                d.sources.values().map(|s| {
                    (
                        (d.index, s.port),
                        PollTarget {
                            dev: d.name().to_string(),
                            port: s.port,
                            counters: s.counters.clone(),
                            lids: d
                                .snap
                                .port(s.port)
                                .is_none_or(|p| crate::kernel::sysfs::has_lids(&p.link_layer)),
                            state: Self::state_poll(d, s.netdev.is_some(), watched),
                        },
                    )
                })
            })
            .unzip();
        PollPlan { keys, targets }
    }

    /// When a port of `d` has its state read. A soft device's port state follows its
    /// netdev: the netdev's rtnetlink events re-read the device (now and a tick later), so
    /// its state is never polled (512 files a second on 256 rxe devices). A watched
    /// device's port events say when its state moves: read in the port's turn only, for
    /// what no event says.
    fn state_poll(d: &DeviceState, on_netdev: bool, watched: &BTreeSet<String>) -> StatePoll {
        let soft = matches!(
            d.snap.kind,
            crate::model::DeviceKind::Rxe | crate::model::DeviceKind::Siw
        );
        if soft && on_netdev {
            StatePoll::Never
        } else if watched.contains(d.name()) {
            StatePoll::InTurn
        } else {
            StatePoll::EveryPoll
        }
    }
}

pub(crate) struct Engine {
    host: Arc<dyn Host>,
    /// How host setup reaches systemd and firewalld; asked off the engine task only.
    host_setup: Arc<host_setup::HostSetupShared>,
    nm: Arc<nm_owners::NmOwners>,
    /// The number of the units' status last taken (see `ops_host`).
    units_status_seq: u64,
    /// The engine's own queue, for results of work it started on other tasks; weak, so the
    /// engine still ends when every handle is gone.
    commands: mpsc::WeakSender<Job>,
    sink: Arc<dyn Sink>,
    config: EngineConfig,
    state: ObservedState,
    plan: Arc<PollPlan>,
    history: Arc<Mutex<History>>,
    clock: TickClock,
    /// The ticks sampled so far: each is sampled once.
    sampled: clock::SampledTicks,
    /// Polls made so far: whose LIDs the next one reads (see `LidTurn`).
    polls: u64,
    poller: Option<Box<dyn PortPoller>>,
    /// Devices re-read since the last poll, whose kept descriptors must be dropped.
    forget: Vec<String>,
    /// Why the published state may be behind the kernel (see `stale.rs`).
    stale: stale::Staleness,
    /// The device the sweep re-read last; the next tick goes on after it, by name.
    swept: Option<String>,
    /// The tick the sweep last listed the kernel's devices at (see `sweep`).
    sweep_listed: Option<u64>,
    /// The RDMA netlink device list the sweep uses, and the tick it was dumped at: see
    /// `sweep`.
    sweep_nl: Option<(Vec<crate::kernel::NlDevice>, u64)>,
    /// Devices re-read for a netdev event, to be re-read once more at the next tick: the
    /// kernel announces a link going down on rtnetlink before rxe's notifier has changed
    /// the port, so the first re-read may still see it ACTIVE (and the poll does not read
    /// a soft device's port state).
    reread_next_tick: BTreeSet<String>,
    /// The tick (since the start) of the last [`Engine::resync_rest`]: the next is due
    /// `resync_ticks` later. Ticks the engine could not keep up with are skipped, so a
    /// multiple of the period may never be seen.
    resynced_at: u64,
    /// The restore left IPoIB interfaces alone because NetworkManager runs but did not say
    /// which profiles it has: done when it first answers (see `nm_owners`).
    ipoib_restore_deferred: bool,
}

/// What a batch of events asks to re-read.
#[derive(Default)]
struct Wanted {
    devices: BTreeSet<String>,
    netdevs: BTreeSet<String>,
    everything: bool,
    /// Names that appeared (added, or renamed to): what was persisted for them is re-applied.
    appeared: restore::Appeared,
    /// Netdev renames (old, new), in order: what is remembered by name follows them.
    renamed: Vec<(String, String)>,
    /// Netdevs whose IP addresses changed: only the devices whose ports they carry are
    /// re-read (their RoCE GIDs), not the netdevs themselves.
    addressed: BTreeSet<String>,
}

impl Wanted {
    fn add(&mut self, ev: HostEvent) {
        match ev {
            HostEvent::RdmaAdded { name } => {
                self.appeared.devices.insert(name.clone());
                self.devices.insert(name);
            }
            HostEvent::RdmaRemoved { name } | HostEvent::RdmaChanged { name } => {
                self.devices.insert(name);
            }
            HostEvent::RdmaRenamed { old, new } => {
                self.devices.insert(old);
                self.appeared.devices.insert(new.clone());
                self.devices.insert(new);
            }
            HostEvent::NetdevAdded { name } => {
                self.appeared.netdevs.insert(name.clone());
                self.netdevs.insert(name);
            }
            HostEvent::NetdevRemoved { name } | HostEvent::NetdevChanged { name } => {
                self.netdevs.insert(name);
            }
            HostEvent::NetdevRenamed { old, new } => {
                self.renamed.push((old.clone(), new.clone()));
                self.netdevs.insert(old);
                self.appeared.netdevs.insert(new.clone());
                self.netdevs.insert(new);
            }
            HostEvent::NetdevAddressChanged { name } => {
                self.addressed.insert(name);
            }
            HostEvent::RdmaPortEvent { name, port, event } => {
                debug!(device = %name, port, ?event, "port event");
                self.devices.insert(name);
            }
            HostEvent::Overflow { source } => {
                warn!(%source, "kernel events were lost; re-enumerating");
                self.everything = true;
            }
        }
    }
}

impl Engine {
    async fn run(
        mut self,
        mut events: mpsc::UnboundedReceiver<HostEvent>,
        mut commands: mpsc::Receiver<Job>,
    ) {
        let mut ticker = tokio::time::interval(self.config.tick);
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

    async fn apply(&mut self, mut wanted: Wanted) {
        let addresses_only = wanted.devices.is_empty()
            && wanted.netdevs.is_empty()
            && !wanted.everything
            && wanted.renamed.is_empty();
        if addresses_only && !self.carries_any(&wanted.addressed) {
            // Addresses of netdevs no RDMA port rides on (most of a host's, often).
            return;
        }
        if !addresses_only {
            // Whatever the events were about, the sweep dumps the device list afresh.
            self.sweep_nl = None;
        }
        // A netdev change can change the ports it carries (RoCE GIDs, port state of rxe);
        // an address change, their GIDs. The kernel updates the GID table from a work
        // queue after the address notifier: the next tick's re-read catches what this one
        // is too early for.
        for d in self.state.devices.values() {
            if Self::device_carries(d, |n| {
                wanted.netdevs.contains(n) || wanted.addressed.contains(n)
            }) {
                wanted.devices.insert(d.name().to_string());
                self.reread_next_tick.insert(d.name().to_string());
            }
        }
        if wanted.devices.len() + wanted.netdevs.len() > self.config.storm_threshold {
            debug!(
                devices = wanted.devices.len(),
                netdevs = wanted.netdevs.len(),
                "event storm; re-enumerating"
            );
            wanted.everything = true;
        }
        let host = self.host.clone();
        let result = if wanted.everything {
            self.forget
                .extend(self.state.devices.values().map(|d| d.name().to_string()));
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
                self.forget.extend(wanted.devices.iter().cloned());
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
            r.map(|_| dirty)
        };
        match result {
            Ok(mut dirty) => {
                let unread = std::mem::take(&mut dirty.unread);
                self.publish(dirty).await;
                if !unread.is_empty() {
                    self.read_failed(unread.join("; ")).await;
                } else if wanted.everything {
                    // Only a full re-read vouches for everything published.
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
            self.refresh_naming().await;
            self.refresh_host_setup().await;
            release_freed_memory();
        }
        // Before the restore: a link remembered over a netdev that was renamed is found
        // under its new name.
        for (old, new) in &wanted.renamed {
            self.follow_netdev_rename(old, new).await;
        }
        if !wanted.appeared.is_empty() {
            self.restore(&wanted.appeared).await;
        }
    }

    /// Whether a port of `d` rides on a netdev `named` picks: its parent, its netdevs, or a
    /// port's counter netdev.
    fn device_carries(d: &DeviceState, named: impl Fn(&str) -> bool) -> bool {
        let linked = d.snap.parent_netdev.iter().chain(d.snap.netdevs.iter());
        let carried = d.sources.values().filter_map(|s| s.netdev.as_ref());
        linked.chain(carried).any(|n| named(n))
    }

    /// Whether any device rides on one of `netdevs`.
    fn carries_any(&self, netdevs: &BTreeSet<String>) -> bool {
        self.state
            .devices
            .values()
            .any(|d| Self::device_carries(d, |n| netdevs.contains(n)))
    }

    async fn publish(&mut self, dirty: Dirty) {
        if dirty.is_empty() {
            return;
        }
        if !dirty.devices.is_empty() {
            // The host is told the devices now; the plan reads the state of those it watches
            // less often.
            let watched = self
                .host
                .watch_port_events(&self.state.hardware_names())
                .await;
            self.plan = Arc::new(PollPlan::of(&self.state, &watched));
        }
        let state = &self.state;
        {
            let mut h = self.history.lock().unwrap_or_else(|p| p.into_inner());
            h.retain(|(dev, port)| {
                state
                    .devices
                    .get(dev)
                    .is_some_and(|d| d.sources.contains_key(port))
            });
        }
        self.sink.publish(&self.state, &dirty).await;
    }

    async fn tick(&mut self) {
        let tick = self.clock.now();
        if !self.sampled.take(tick) {
            // The interval fired twice within one tick of the clock (see SampledTicks).
            return;
        }
        // A failed re-read is retried in full at the next tick, then with a backoff of a few
        // ticks, rather than left to the periodic resync.
        let retry = self.stale.retry_due(tick);
        let since = self.clock.since_start(tick);
        if retry {
            self.apply(Wanted {
                everything: true,
                ..Wanted::default()
            })
            .await;
        } else {
            if !self.reread_next_tick.is_empty() {
                let devices = std::mem::take(&mut self.reread_next_tick);
                self.apply(Wanted {
                    devices,
                    ..Wanted::default()
                })
                .await;
            }
            if tick % self.config.sweep_period_ticks.max(1) == 0 {
                self.sweep().await;
            }
            if resync_due(since, self.resynced_at, self.config.resync_ticks) {
                self.resynced_at = since;
                self.resync_rest().await;
            }
        }
        let plan = self.plan.clone();
        let Some(mut poller) = self.poller.take() else {
            return;
        };
        for dev in self.forget.drain(..) {
            poller.forget(&dev);
        }
        let lids = LidTurn::of(self.polls, self.config.lid_ticks);
        self.polls += 1;
        let polled = {
            let plan = plan.clone();
            tokio::task::spawn_blocking(move || {
                let readings = poller.poll(&plan.targets, lids);
                (poller, readings)
            })
            .await
        };
        let readings = match polled {
            Ok((poller, readings)) => {
                self.poller = Some(poller);
                readings
            }
            Err(e) => {
                warn!(error = %e, "port poll failed; starting a new poller");
                self.poller = Some(self.host.port_poller());
                self.poll_failed(Some(format!("port poll failed: {e}")))
                    .await;
                return;
            }
        };
        self.poll_failed(stale::unreadable(&plan.targets, &readings))
            .await;
        let period = self.clock.period().as_secs_f64();
        let mut moved = Wanted::default();
        let mut samples = Vec::with_capacity(readings.len());
        {
            let mut h = self.history.lock().unwrap_or_else(|p| p.into_inner());
            let polled = plan.keys.iter().zip(&plan.targets).zip(&readings);
            for (i, ((key, t), r)) in polled.enumerate() {
                if self.port_moved(key.0, key.1, t.state.read(lids.includes(i)), r) {
                    moved.devices.insert(t.dev.clone());
                }
                samples.push((*key, h.port_mut(*key).record(tick, period, &r.traffic)));
            }
        }
        self.sink.samples(tick, &samples).await;
        if !moved.devices.is_empty() {
            self.apply(moved).await;
        }
    }

    /// The sweep's share of one tick: the next `sweep_devices_per_tick` devices after the
    /// last one swept (by name, wrapping around), and, at the start of each pass, any device
    /// the kernel lists that the state lacks (an add whose event was lost), re-read and
    /// published if they changed.
    /// It replaces a full re-enumeration every minute, whose cost grew with the host (on a
    /// real kernel with 256 rxe devices, tens of seconds of sysfs reads at once).
    async fn sweep(&mut self) {
        let mut wanted = Wanted::default();
        let names: BTreeSet<&str> = self.state.devices.values().map(|d| d.name()).collect();
        let after = self.swept.as_deref().unwrap_or("");
        let turn: Vec<String> = names
            .range::<str, _>((std::ops::Bound::Excluded(after), std::ops::Bound::Unbounded))
            .chain(names.iter())
            .take(self.config.sweep_devices_per_tick.min(names.len()))
            .map(|n| n.to_string())
            .collect();
        // The kernel's device list is read at the start of each pass, and at least every
        // `resync_ticks`: a device added with its event lost (which no overflow reported)
        // is found within a pass, and the list (256 directory entries a tick on a host of 256
        // devices, a fifth of the idle daemon's CPU in the lab with the look-ups) is not read
        // at every tick.
        let tick = self.clock.now();
        let new_pass = turn.first().is_none_or(|first| {
            names
                .first()
                .is_some_and(|lowest| *lowest == first.as_str())
        });
        let list_due = self
            .sweep_listed
            .is_none_or(|at| tick.saturating_sub(at) >= self.config.resync_ticks);
        if new_pass || list_due {
            match self.host.rdma_device_names().await {
                Ok(listed) => {
                    self.sweep_listed = Some(tick);
                    for name in listed {
                        if !names.contains(name.as_str()) {
                            wanted.appeared.devices.insert(name.clone());
                            wanted.devices.insert(name);
                        }
                    }
                }
                Err(e) => debug!(error = %e, "the sweep cannot list the devices"),
            }
        }
        drop(names);
        if let Some(last) = turn.last() {
            self.swept = Some(last.clone());
        }
        if !wanted.devices.is_empty() {
            // A device the state lacks: re-read as an event would have.
            wanted.devices.extend(turn);
            self.apply(wanted).await;
            return;
        }
        // The turn's devices are re-read with the netlink device list of an earlier tick:
        // dumping every device to re-read one cost more than the read itself (65 ms a tick
        // with 256 rxe devices in the lab). The list is dumped again after any event, when
        // it lacks a device the sweep re-reads, and every `resync_ticks`: a device removed
        // and added again under the same name with both events lost is seen within that.
        let fresh = |nl: &(Vec<crate::kernel::NlDevice>, u64)| {
            tick.saturating_sub(nl.1) < self.config.resync_ticks
                && turn.iter().all(|n| nl.0.iter().any(|d| d.name == *n))
        };
        if !self.sweep_nl.as_ref().is_some_and(fresh) {
            match self.host.nl_devices().await {
                Ok(nl) => self.sweep_nl = Some((nl, tick)),
                Err(e) => {
                    debug!(error = %e, "the sweep cannot list the devices over netlink");
                    return;
                }
            }
        }
        let Some(nl) = self.sweep_nl.take() else {
            return;
        };
        let set: BTreeSet<String> = turn.into_iter().collect();
        self.forget.extend(set.iter().cloned());
        let host = self.host.clone();
        let read = self
            .state
            .refresh_devices_with(host.as_ref(), &set, &nl.0)
            .await;
        self.sweep_nl = Some(nl);
        match read {
            Ok(mut dirty) => {
                let unread = std::mem::take(&mut dirty.unread);
                self.publish(dirty).await;
                if !unread.is_empty() {
                    self.read_failed(unread.join("; ")).await;
                }
            }
            Err(e) => {
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
                Ok(mut dirty) => {
                    let unread = std::mem::take(&mut dirty.unread);
                    self.publish(dirty).await;
                    if !unread.is_empty() {
                        self.read_failed(unread.join("; ")).await;
                    }
                }
                Err(e) => {
                    warn!(error = %e, "re-reading the IPoIB interfaces failed; keeping the last state");
                    self.read_failed(e.to_string()).await;
                }
            }
        }
        self.refresh_naming().await;
        self.refresh_host_setup().await;
        release_freed_memory();
    }

    /// Whether the poll saw a port attribute that differs from the published state.
    fn port_moved(&self, index: u32, port: u32, state_polled: bool, r: &PortReading) -> bool {
        let Some(p) = self
            .state
            .devices
            .get(&index)
            .and_then(|d| d.snap.port(port))
        else {
            return false;
        };
        // A value that could not be read is unknown, not changed: the poll's failure is
        // published as staleness instead, and the first clean poll compares again.
        let moved = |published: bool, unreadable: bool| !published && !unreadable;
        (state_polled
            && (moved(p.state == r.state, stale::is_unreadable(&r.state))
                || moved(
                    p.phys_state == r.phys_state,
                    stale::is_unreadable(&r.phys_state),
                )))
            // LIDs not read by this poll (not the port's turn) are not compared.
            || r
                .lid
                .as_ref()
                .is_some_and(|l| moved(p.lid == *l, stale::is_unreadable(l)))
            || r
                .sm_lid
                .as_ref()
                .is_some_and(|l| moved(p.sm_lid == *l, stale::is_unreadable(l)))
    }

    /// Re-reads the named devices after a change and publishes before the caller is answered,
    /// so that an object path returned to it already exists.
    async fn settle(&mut self, names: &[&str]) -> Result<(), OpError> {
        let set: BTreeSet<String> = names.iter().map(|s| s.to_string()).collect();
        self.forget.extend(set.iter().cloned());
        let host = self.host.clone();
        let mut dirty = match self.state.refresh_devices(host.as_ref(), &set).await {
            Ok(d) => d,
            Err(e) => {
                self.read_failed(e.to_string()).await;
                return Err(OpError::from_host(e));
            }
        };
        let unread = std::mem::take(&mut dirty.unread);
        self.publish(dirty).await;
        if !unread.is_empty() {
            self.read_failed(unread.join("; ")).await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::resync_due;

    #[test]
    fn a_resync_is_due_once_its_period_passed_even_past_a_skipped_multiple() {
        assert!(!resync_due(0, 0, 60));
        assert!(!resync_due(59, 0, 60));
        assert!(resync_due(60, 0, 60));
        // Tick 60 was stepped over (a slow tick): 61 still resyncs; a check of multiples of
        // 60 would have waited for tick 120.
        assert!(resync_due(61, 0, 60));
        assert!(!resync_due(120, 61, 60));
        assert!(resync_due(121, 61, 60));
        // A period of 0 is taken as every tick, not as never.
        assert!(resync_due(1, 0, 0));
    }
}
