//! Resource exhaustion is visible and recovered from: while the simulated host's reads fail
//! with EMFILE (a daemon out of file descriptors), the root's `StateStale` says the published
//! state may be behind the kernel, with the reason and since when; once reads work again, the
//! daemon re-reads by itself, publishes the true state and clears `StateStale`, within a few
//! seconds and not at the minute's resync.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rdma_manager_dbus::types::StateStale;
use rdma_manager_dbus::{ipoib_path, IpoibProxy, ManagerProxy, PortProxy};
use rdma_manager_tests::service::{serve_sim, session_bus_or_skip};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::{fixtures, SimHost};
use rdma_managerd::kernel::{Host, NetdevChange};
use rdma_managerd::model::{Errno, PhysState, PortState};
use zbus::proxy::CacheProperties;

/// Polls `f` every 50 ms until it holds; fails after `within`. Returns how long it took.
async fn within<F, Fut>(what: &str, within: Duration, f: F) -> Duration
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !f().await {
        assert!(start.elapsed() < within, "{what}: not within {within:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    start.elapsed()
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn stale_state_is_published_and_recovered_from_by_itself() {
    let Some(bus) = session_bus_or_skip() else {
        return;
    };
    let sim = SimHost::new(fixtures::demo_host()).expect("demo host");
    // The default 1 s tick and 60 s resync: recovery must not wait for the resync.
    let config = EngineConfig::default();
    assert!(config.resync_ticks >= 60);
    let _service = serve_sim(&bus, &sim, config).await.expect("service");
    let client = bus.connect().await.expect("client");
    let root = ManagerProxy::builder(&client)
        .cache_properties(CacheProperties::No)
        .build()
        .await
        .expect("root");
    let port = PortProxy::builder(&client)
        .path("/org/rdmamanager/RdmaManager1/Device/1/Port/1")
        .expect("path")
        .cache_properties(CacheProperties::No)
        .build()
        .await
        .expect("port");
    let ib0 = sim
        .spec()
        .netdevs
        .iter()
        .find(|n| n.name == "ib0")
        .map(|n| (n.ifindex, n.mtu))
        .expect("ib0 in the demo host");
    let ipoib = IpoibProxy::builder(&client)
        .path(ipoib_path(ib0.0))
        .expect("path")
        .cache_properties(CacheProperties::No)
        .build()
        .await
        .expect("ipoib");
    assert_eq!(
        root.state_stale().await.expect("StateStale"),
        StateStale::default()
    );
    assert_eq!(port.state().await.expect("State"), "ACTIVE");
    assert_ne!(ib0.1, 2000);

    // Out of file descriptors, and meanwhile the port goes down and ib0's MTU changes: the
    // events arrive, the re-reads fail.
    let before = now_us();
    sim.fail_reads(Some(Errno::EMFILE));
    sim.set_port_state("mlx5_0", 1, PortState::Down, PhysState::Disabled)
        .expect("port down");
    sim.change_netdev(
        "ib0",
        &NetdevChange {
            mtu: Some(2000),
            ..NetdevChange::default()
        },
    )
    .await
    .expect("mtu");
    within("StateStale set", Duration::from_secs(3), || async {
        root.state_stale().await.is_ok_and(|s| s.stale)
    })
    .await;
    let StateStale {
        stale,
        reason,
        since_us: since,
    } = root.state_stale().await.expect("StateStale");
    assert!(stale);
    assert!(
        reason.contains("EMFILE") && reason.contains("Too many open files"),
        "{reason}"
    );
    assert!(
        since >= before && since <= now_us(),
        "{since} not in [{before}, now]"
    );
    // What is published is the last state read, and it says so.
    assert_eq!(port.state().await.expect("State"), "ACTIVE");
    // Let a few retries fail, so the backoff has grown to its bound.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let again = root.state_stale().await.expect("StateStale");
    assert!(again.stale, "still stale while reads fail");
    assert_eq!(
        again.since_us, since,
        "since is the first failure, not the latest"
    );

    // The cause goes away: the daemon recovers by itself (the retry backoff is at most 4 s),
    // with the true state, including what no poll would have noticed (ib0's MTU).
    sim.fail_reads(None);
    let took = within("recovered", Duration::from_secs(7), || async {
        root.state_stale().await.ok() == Some(StateStale::default())
    })
    .await;
    assert_eq!(port.state().await.expect("State"), "DOWN");
    assert_eq!(ipoib.mtu().await.expect("Mtu"), 2000);
    eprintln!("recovered {took:?} after the fault cleared");
}
