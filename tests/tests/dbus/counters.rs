//! `GetAllCounters`: every port's counters in one reply, each as `Port.GetCounters` gives
//! them, one reading shared by the calls within the daemon's `counters_max_age` of it.

use std::collections::BTreeSet;
use std::time::Duration;

use rdma_manager_dbus::{ManagerProxy, PortProxy, BUS_NAME, ROOT_PATH};
use rdma_manager_tests::service::{serve_sim, session_bus_or_skip, ServedSim};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::{fixtures, SimHost};
use rdma_managerd::model::Errno;
use zbus::Connection;

struct Running {
    sim: SimHost,
    client: Connection,
    _service: ServedSim,
    bus: rdma_manager_tests::bus::PrivateBus,
}

impl Running {
    /// Another client of the same bus.
    async fn bus_client(&self) -> Connection {
        self.bus.connect().await.expect("client connects")
    }
}

// The default tick.
const TICK: Duration = Duration::from_secs(1);
// Long enough that a loaded machine still makes two calls within it.
const MAX_AGE: Duration = Duration::from_secs(1);

async fn start() -> Option<Running> {
    start_with(EngineConfig {
        tick: TICK,
        counters_max_age: MAX_AGE,
        ..EngineConfig::default()
    })
    .await
}

/// No tick after the first, and readings shared for `max_age`.
async fn start_without_ticks(max_age: Duration) -> Option<Running> {
    start_with(EngineConfig {
        tick: Duration::from_secs(3600),
        counters_max_age: max_age,
        ..EngineConfig::default()
    })
    .await
}

async fn start_with(config: EngineConfig) -> Option<Running> {
    let bus = session_bus_or_skip()?;
    let sim = SimHost::new(fixtures::demo_host()).expect("demo");
    let service = serve_sim(&bus, &sim, config).await.expect("service starts");
    let client = bus.connect().await.expect("client connects");
    Some(Running {
        sim,
        client,
        _service: service,
        bus,
    })
}

/// Counter `name` of the port at `port` in a GetAllCounters reply.
fn counter(rows: &[rdma_manager_dbus::types::PortCounters], port: &str, name: &str) -> u64 {
    rows.iter()
        .find(|c| c.port.as_str() == port)
        .and_then(|c| c.counters.get(name).copied())
        .unwrap_or_else(|| panic!("{name} of {port}: {rows:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_counters_are_every_ports_get_counters() {
    let Some(r) = start().await else { return };
    let mgr = ManagerProxy::new(&r.client).await.unwrap();
    let (time_us, rows) = mgr.get_all_counters().await.unwrap();
    let now_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    assert!(
        time_us <= now_us && now_us - time_us < 10_000_000,
        "read at {time_us}, now {now_us}"
    );
    let paths: BTreeSet<String> = rows.iter().map(|c| c.port.to_string()).collect();
    assert_eq!(
        paths.len(),
        5,
        "every port of the demo host once: {paths:?}"
    );
    for row in &rows {
        let p = PortProxy::builder(&r.client)
            .path(row.port.clone())
            .unwrap()
            .build()
            .await
            .unwrap();
        let (source, saturated, one) = p.get_counters().await.unwrap();
        assert_eq!(row.source, source, "{}", row.port);
        assert_eq!(row.saturated, saturated, "{}", row.port);
        assert_eq!(
            row.counters.keys().collect::<BTreeSet<_>>(),
            one.keys().collect::<BTreeSet<_>>(),
            "{}",
            row.port
        );
        // No traffic is added here: the demo host's counters stand still between the reads.
        assert_eq!(row.counters, one, "{}", row.port);
    }
    let mlx4 = rows
        .iter()
        .find(|c| c.port.as_str() == "/org/rdmamanager/RdmaManager1/Device/0/Port/1")
        .expect("mlx4_1 port 1");
    assert_eq!(mlx4.source, "pma32");
    assert!(mlx4.counters.contains_key("symbol_error"), "{mlx4:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_reading_is_shared_within_the_max_age_and_the_next_sees_new_traffic() {
    let Some(r) = start().await else { return };
    let mgr = ManagerProxy::new(&r.client).await.unwrap();
    let port = "/org/rdmamanager/RdmaManager1/Device/0/Port/1";
    let tx = |rows: &[rdma_manager_dbus::types::PortCounters]| counter(rows, port, "tx_bytes");
    let (t0, first) = mgr.get_all_counters().await.unwrap();
    r.sim.add_traffic("mlx4_1", 1, 4_000_000, 1_000).unwrap();
    let (t1, again) = mgr.get_all_counters().await.unwrap();
    assert_eq!(t1, t0, "a call within the max age shares the reading");
    assert_eq!(tx(&again), tx(&first));
    tokio::time::sleep(MAX_AGE + Duration::from_millis(50)).await;
    let (t2, mut next) = mgr.get_all_counters().await.unwrap();
    assert!(t2 >= t0 + MAX_AGE.as_micros() as u64, "{t0} then {t2}");
    // The traffic counters are the tick's poll's: a reading made before the poll after the
    // traffic shows them at the next.
    let deadline = std::time::Instant::now() + 4 * TICK + 2 * MAX_AGE;
    while tx(&next) == tx(&first) && std::time::Instant::now() < deadline {
        tokio::time::sleep(MAX_AGE + Duration::from_millis(50)).await;
        next = mgr.get_all_counters().await.unwrap().1;
    }
    // 4 MB in 4-byte PMA words, which the counters give in bytes.
    assert_eq!(tx(&next) - tx(&first), 4_000_000);
}

/// The traffic counters come from the tick's poll, not from a read of their files: with no
/// tick after the first, new traffic is not seen by a new reading, while the port's other
/// counters are read anew.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_traffic_counters_are_the_polls_and_the_others_are_read_at_the_call() {
    const AGE: Duration = Duration::from_millis(200);
    let Some(r) = start_without_ticks(AGE).await else {
        return;
    };
    let mgr = ManagerProxy::new(&r.client).await.unwrap();
    let port = "/org/rdmamanager/RdmaManager1/Device/0/Port/1";
    let of =
        |rows: &[rdma_manager_dbus::types::PortCounters], name: &str| counter(rows, port, name);
    let (_, first) = mgr.get_all_counters().await.unwrap();
    r.sim.add_traffic("mlx4_1", 1, 4_000_000, 1_000).unwrap();
    r.sim
        .add_port_errors("mlx4_1", 1, "symbol_error", 7)
        .unwrap();
    tokio::time::sleep(AGE + Duration::from_millis(50)).await;
    let (_, next) = mgr.get_all_counters().await.unwrap();
    assert_eq!(of(&next, "tx_bytes"), of(&first, "tx_bytes"), "the poll's");
    assert_eq!(of(&next, "symbol_error"), of(&first, "symbol_error") + 7);
    // GetCounters reads the port whole at the call.
    let p = PortProxy::builder(&r.client)
        .path(port)
        .unwrap()
        .build()
        .await
        .unwrap();
    let (_, _, now) = p.get_counters().await.unwrap();
    assert_eq!(now["tx_bytes"], of(&first, "tx_bytes") + 4_000_000);
}

/// Scrapers within the max age of a reading cost no read of the host: the counter files are
/// read once, whoever asks, and again only once the reading is older than the max age.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_within_the_max_age_read_the_files_once() {
    const AGE: Duration = Duration::from_secs(3);
    // No tick after the first: the poll and the sweep read nothing while the test counts.
    let Some(r) = start_without_ticks(AGE).await else {
        return;
    };
    let mgr = ManagerProxy::new(&r.client).await.unwrap();
    let other = r.bus_client().await;
    let other = ManagerProxy::new(&other).await.unwrap();
    let files = || r.sim.cost().counts().sysfs_files;

    // A first reading, then one past the max age, counted: the start's reads are over.
    let (t0, _) = mgr.get_all_counters().await.unwrap();
    tokio::time::sleep(AGE + Duration::from_millis(100)).await;
    let before = files();
    let (t1, rows) = mgr.get_all_counters().await.unwrap();
    let one_read = files() - before;
    assert!(t1 >= t0 + AGE.as_micros() as u64, "{t0} then {t1}");
    // Every port's counters/ or hw_counters/ files, more than one a port.
    assert!(
        one_read > rows.len() as u64,
        "{one_read} files for {} ports",
        rows.len()
    );

    // A second caller on its own connection, and the first again: the same reading.
    let before = files();
    let (t2, _) = other.get_all_counters().await.unwrap();
    let (t3, _) = mgr.get_all_counters().await.unwrap();
    assert_eq!(files() - before, 0, "no file read within the max age");
    assert_eq!((t2, t3), (t1, t1), "the time says which reading");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_ports_are_left_out_not_failed() {
    let Some(r) = start().await else { return };
    let mgr = ManagerProxy::new(&r.client).await.unwrap();
    r.sim.fail_reads(Some(Errno(5)));
    let (_, rows) = mgr.get_all_counters().await.unwrap();
    assert!(rows.is_empty(), "nothing readable: {rows:?}");
    r.sim.fail_reads(None);
    tokio::time::sleep(MAX_AGE + Duration::from_millis(50)).await;
    let (_, rows) = mgr.get_all_counters().await.unwrap();
    assert_eq!(rows.len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_argument_is_refused() {
    let Some(r) = start().await else { return };
    let err = r
        .client
        .call_method(
            Some(BUS_NAME),
            ROOT_PATH,
            Some("org.rdmamanager.RdmaManager1"),
            "GetAllCounters",
            &("all",),
        )
        .await
        .expect_err("GetAllCounters takes no argument");
    match err {
        zbus::Error::MethodError(name, _, _) => {
            assert_eq!(name.as_str(), "org.freedesktop.DBus.Error.InvalidArgs")
        }
        other => panic!("unexpected error {other:?}"),
    }
}
