//! Budgets of the daemon's reads, counted on the simulated host (see [`super::cost`]): a
//! design that reads too much (every device at every tick, every port's files when an event
//! or a dump would do, a GID table read twice) fails here, in the fast suite, instead of
//! showing only as CPU on a large real host.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;

use super::cost::OpCounts;
use super::{fixtures, SimHost};
use crate::engine::{Dirty, EngineConfig, ObservedState, Sample, Sink};
use crate::kernel::Host;
use crate::system::sim::SimSystemServices;

/// Keeps the host's operation counts at the first publish (start-up's read, before any
/// tick) and reports them at every tick's samples, which the engine hands over after that
/// tick's sweep, resync and poll.
struct CountingSink {
    sim: SimHost,
    start: std::sync::Mutex<Option<OpCounts>>,
    ticks: mpsc::UnboundedSender<(u64, OpCounts)>,
}

#[async_trait]
impl Sink for CountingSink {
    async fn publish(&self, _state: &ObservedState, _dirty: &Dirty) {
        let mut start = self.start.lock().unwrap_or_else(|p| p.into_inner());
        start.get_or_insert_with(|| self.sim.cost().counts());
    }
    async fn samples(&self, tick: u64, _samples: &[((u32, u32), Sample)]) {
        let _ = self.ticks.send((tick, self.sim.cost().counts()));
    }
}

/// What the engine read at start, and over `ticks` polls of the idle host after a few
/// ticks of warm-up (as counts, with the number of polls they cover: a tick whose work
/// overran its period is skipped, so work is counted per poll made, not per tick of time).
struct Measured {
    start: OpCounts,
    idle: OpCounts,
    ticks: u64,
}

impl Measured {
    /// The RDMA netlink device list was dumped once a resync (every 20 ticks here) at the
    /// most, not every tick: `nl_devices` counts the devices of every dump.
    fn assert_device_dumps_once_a_resync(&self, devices: u64) {
        let dumps = self.idle.nl_devices / devices;
        assert!(
            dumps <= self.ticks / 20 + 2,
            "{dumps} RDMA netlink device dumps in {} ticks",
            self.ticks
        );
    }
}

async fn measure(sim: &SimHost, ticks: u64) -> Measured {
    let before = sim.cost().counts();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let sink = Arc::new(CountingSink {
        sim: sim.clone(),
        start: std::sync::Mutex::new(None),
        ticks: tx,
    });
    let config = EngineConfig {
        tick: Duration::from_millis(20),
        // Every 20 ticks instead of 60: two resyncs fall within a short window.
        resync_ticks: 20,
        ..EngineConfig::default()
    };
    let host: Arc<dyn Host> = Arc::new(sim.clone());
    let (_handle, task) = crate::engine::start(
        host,
        Arc::new(SimSystemServices::new()),
        sink.clone(),
        config.clone(),
        &mut crate::engine::phases::Phases::new(),
    )
    .await
    .expect("engine");
    let start = sink
        .start
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .expect("published at start")
        .since(&before);
    let mut first = next_tick(&mut rx).await;
    while first.0 < 3 {
        first = next_tick(&mut rx).await;
    }
    // At least two resyncs (every `resync_ticks`) are in the window: their cost counts.
    let mut last = next_tick(&mut rx).await;
    let mut polls = 1;
    while last.0 < first.0 + ticks {
        last = next_tick(&mut rx).await;
        polls += 1;
    }
    task.abort();
    assert!(config.resync_ticks * 2 <= ticks);
    Measured {
        start,
        idle: last.1.since(&first.1),
        ticks: polls,
    }
}

/// The next tick's counts. Ticks are counted, not timed; the deadline only bounds a hang on
/// a loaded machine.
async fn next_tick(rx: &mut mpsc::UnboundedReceiver<(u64, OpCounts)>) -> (u64, OpCounts) {
    tokio::time::timeout(Duration::from_secs(120), rx.recv())
        .await
        .expect("a tick within 2 minutes")
        .expect("the engine runs")
}

/// One device's read as the engine makes it (attributes, ports, GIDs, counter sources).
async fn one_device(sim: &SimHost, name: &str) -> OpCounts {
    let before = sim.cost().counts();
    sim.read_device(name).await.expect("device");
    sim.port_sources(name).await.expect("sources");
    sim.cost().counts().since(&before)
}

/// What the periodic resync reads of the host that grows with it: the IPoIB interfaces.
async fn ipoib_netdevs(sim: &SimHost) -> OpCounts {
    let before = sim.cost().counts();
    sim.read_ipoib_netdevs().await.expect("netdevs");
    sim.cost().counts().since(&before)
}

/// 64 HCAs of 2 InfiniBand ports and 256 IPoIB interfaces: each GID table is read once at
/// start, in one verbs query; idle, each tick reads the poll's files of every port (state,
/// physical state, four PMA counters), the LIDs (`lid`, `sm_lid`) of a tenth of the ports
/// (each port's once every `lid_ticks`), and at most two devices' worth more (the sweep's
/// turn), plus the IPoIB interfaces once a resync period; the RDMA netlink device dump is
/// made again once a resync period, not each tick.
#[tokio::test(flavor = "multi_thread")]
async fn an_idle_infiniband_host_reads_within_its_budget() {
    let (devices, ports) = (64u64, 2u64);
    // As the daemon does at start: the poll's budget of kept descriptors is a quarter of
    // the soft limit, which must hold every polled file here (64x2 ports' 8 and a
    // directory a device: 1088).
    crate::kernel::rlimit::raise_nofile_limit().expect("the soft limit raised");
    let soft = crate::kernel::rlimit::nofile_limit().expect("limit").soft;
    assert!(
        crate::kernel::rlimit::keep_open_budget(soft) >= 1088,
        "a hard open-file limit of {soft} is too low for this test"
    );
    let spec = fixtures::large_host(devices as u32, ports as u32, 256);
    let sim = SimHost::new(spec).expect("host");
    let device = one_device(&sim, "mlx5_0").await;
    let resync = ipoib_netdevs(&sim).await;
    let m = measure(&sim, 45).await;

    assert_eq!(m.start.verbs_gid_tables, devices, "{:?}", m.start);
    let resyncs = m.ticks / 20 + 1;
    let lid_ticks = EngineConfig::default().lid_ticks as u64;
    assert!(lid_ticks > 1);
    // Every device's port events are watched (the simulated HCAs are mlx5's, whose driver
    // disassociates): the ports' state comes from events, not from every poll.
    assert_eq!(sim.watched_devices().len() as u64, devices);
    // Each port's state, physical state and two LID files once every `lid_ticks` polls (one
    // turn more for a window that does not start at a turn's beginning).
    let turn_files = (m.ticks / lid_ticks + 1) * ports * devices * 4;
    // Files read, through kept descriptors or opened for the read: the two data counters
    // of every port at every poll (an idle port's packet counters are not read while its
    // data counters stand still; a device the sweep re-read has them read once more, within
    // the room for the sweep's reads).
    let budget = m.ticks * (ports * devices * 2 + 2 * device.sysfs_files)
        + turn_files
        + resyncs * resync.sysfs_files;
    assert!(
        m.idle.attribute_reads() <= budget,
        "{} files in {} ticks, budget {budget}: the poll's 2 a port, {turn_files} files in \
         the ports' turns, two devices' reads of {} a tick, {resyncs} resyncs of {}: {:?}",
        m.idle.attribute_reads(),
        m.ticks,
        device.sysfs_files,
        resync.sysfs_files,
        m.idle,
    );
    // The poll reads through kept descriptors, as on Linux: what is opened is what the
    // sweep and the resyncs read (each file once), not the poll's files.
    let opened = m.ticks * 2 * device.sysfs_files + resyncs * resync.sysfs_files;
    assert!(
        m.idle.sysfs_files <= opened,
        "{} files opened in {} ticks, more than the sweep's and the resyncs' {opened}: \
         the poll's files are not kept open: {:?}",
        m.idle.sysfs_files,
        m.ticks,
        m.idle,
    );
    assert!(
        m.idle.verbs_gid_tables <= 2 * m.ticks,
        "more than the sweep's GID tables: {:?} over {} ticks",
        m.idle,
        m.ticks
    );
    m.assert_device_dumps_once_a_resync(devices);
}

/// 64 rxe devices over dummy netdevs (the lab's shape): their ports' state follows their
/// netdev's events, and their counters come from one rtnetlink dump a tick, so the idle poll
/// opens no file; what a tick reads is the sweep's one device.
#[tokio::test(flavor = "multi_thread")]
async fn an_idle_soft_device_host_polls_no_port_file() {
    let devices = 64u64;
    let spec = fixtures::rxe_host(devices as u32);
    let sim = SimHost::new(spec).expect("host");
    let device = one_device(&sim, "rxe0").await;
    let m = measure(&sim, 45).await;

    assert_eq!(m.start.verbs_gid_tables, devices, "{:?}", m.start);
    let per_tick_files = m.idle.attribute_reads() / m.ticks;
    let budget = 2 * device.sysfs_files;
    assert!(
        per_tick_files <= budget,
        "{per_tick_files} files a tick (budget {budget}: two rxe devices' reads of {}): \
         {:?} over {} ticks",
        device.sysfs_files,
        m.idle,
        m.ticks
    );
    // One dump of every link a tick, no more.
    let links = devices + 1;
    assert!(
        m.idle.rtnl_links <= links * (m.ticks + 1),
        "{:?} over {} ticks",
        m.idle,
        m.ticks
    );
    m.assert_device_dumps_once_a_resync(devices);
}

/// Start-up asks each device's GID table once, through verbs, and lists no `gids` directory:
/// 8 rxe devices whose tables are 256 entries long (1024 on Linux 6.12), of which one is
/// used.
#[tokio::test(flavor = "multi_thread")]
async fn start_up_reads_each_gid_table_once_without_listing_it() {
    let mut spec = fixtures::rxe_host(8);
    let table_len = 256u64;
    for d in spec.devices.iter_mut() {
        for p in d.ports.iter_mut() {
            p.gid_table_len = table_len as u32;
        }
    }
    let sim = SimHost::new(spec).expect("host");
    let (state, _) = crate::engine::read_host(&sim, &SimSystemServices::new())
        .await
        .expect("read");
    assert_eq!(state.devices.len(), 8);
    let ops = sim.cost().counts();
    assert_eq!(ops.verbs_gid_tables, 8, "{ops:?}");
    assert!(
        ops.dir_entries < table_len,
        "a GID directory of {table_len} entries was listed: {ops:?}"
    );
}
