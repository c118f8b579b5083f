//! Port events: a hardware port's state comes from its device's uverbs async events (here the
//! simulated host's, which raises them as mlx5's driver does), not from reading every port's
//! `state` every second; what no event says (a physical state moving alone) is read in the
//! port's LID turn.

use std::time::{Duration, Instant};

use rdma_manager_dbus::PortProxy;
use rdma_manager_tests::service::{port_proxy, serve_demo_or_skip, ServedDemo};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::model::{PhysState, PortState};

/// The demo host served with `config`, port events on or off.
async fn serve_demo(config: EngineConfig, port_events: bool) -> Option<ServedDemo> {
    serve_demo_or_skip(config, |sim| sim.set_port_events(port_events)).await
}

/// Port 1 of the first device, whose name it returns.
async fn first_port(client: &zbus::Connection) -> (PortProxy<'static>, String) {
    let port = port_proxy(client, "/org/rdmamanager/RdmaManager1/Device/1/Port/1").await;
    let dev = port.device_name().await.expect("DeviceName");
    (port, dev)
}

/// Waits up to `limit` for the port's state and physical state; whether they came.
async fn shows(port: &PortProxy<'_>, state: &str, phys: &str, limit: Duration) -> bool {
    let start = Instant::now();
    loop {
        let now = (
            port.state().await.expect("State"),
            port.phys_state().await.expect("PhysState"),
        );
        if now.0 == state && now.1 == phys {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// One poll at start and then none for a minute, no sweep, no resync: only an event can
/// publish a change within the test.
fn no_poll() -> EngineConfig {
    EngineConfig {
        tick: Duration::from_secs(60),
        resync_ticks: 1_000_000,
        sweep_devices_per_tick: 0,
        ..EngineConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hardware_port_going_down_is_published_by_its_event() {
    let Some(s) = serve_demo(no_poll(), true).await else {
        return;
    };
    let (port, dev) = first_port(&s.client).await;
    assert!(
        s.sim.watched_devices().contains(&dev),
        "{dev} is not watched: {:?}",
        s.sim.watched_devices()
    );
    assert_eq!(port.state().await.expect("State"), "ACTIVE");
    // As the kernel changes it: no uevent, only the driver's async event.
    s.sim
        .set_port_state_quietly(&dev, 1, PortState::Down, PhysState::Polling)
        .expect("port down");
    assert!(
        shows(&port, "DOWN", "Polling", Duration::from_secs(10)).await,
        "the port's event did not publish it DOWN"
    );
    s.sim
        .set_port_state_quietly(&dev, 1, PortState::Active, PhysState::LinkUp)
        .expect("port up");
    assert!(
        shows(&port, "ACTIVE", "LinkUp", Duration::from_secs(10)).await,
        "the port's event did not publish it ACTIVE again"
    );
}

/// The control of the test above: without events the same change waits for a poll, which
/// does not come within the test (so the test above fails if events are not what published).
#[tokio::test(flavor = "multi_thread")]
async fn without_port_events_the_change_waits_for_the_poll() {
    let Some(s) = serve_demo(no_poll(), false).await else {
        return;
    };
    let (port, dev) = first_port(&s.client).await;
    assert!(s.sim.watched_devices().is_empty());
    s.sim
        .set_port_state_quietly(&dev, 1, PortState::Down, PhysState::Polling)
        .expect("port down");
    assert!(
        !shows(&port, "DOWN", "Polling", Duration::from_secs(2)).await,
        "published with no event and no poll"
    );
}

/// Without events, every poll reads the state: DOWN within a few ticks.
#[tokio::test(flavor = "multi_thread")]
async fn without_port_events_every_poll_reads_the_state() {
    let tick = Duration::from_millis(100);
    let config = EngineConfig {
        tick,
        resync_ticks: 1_000_000,
        sweep_devices_per_tick: 0,
        lid_ticks: 1_000,
        ..EngineConfig::default()
    };
    let Some(s) = serve_demo(config, false).await else {
        return;
    };
    let (port, dev) = first_port(&s.client).await;
    s.sim
        .set_port_state_quietly(&dev, 1, PortState::Down, PhysState::Polling)
        .expect("port down");
    assert!(
        shows(&port, "DOWN", "Polling", tick * 50).await,
        "the poll did not publish DOWN"
    );
}

/// A physical state that moves while the logical state stays has no event: the poll reads
/// a watched port's state in its turn, every `lid_ticks` polls.
#[tokio::test(flavor = "multi_thread")]
async fn a_physical_state_moving_alone_is_read_in_the_ports_turn() {
    let tick = Duration::from_millis(50);
    let lid_ticks = 4;
    let config = EngineConfig {
        tick,
        resync_ticks: 1_000_000,
        sweep_devices_per_tick: 0,
        lid_ticks,
        ..EngineConfig::default()
    };
    let Some(s) = serve_demo(config, true).await else {
        return;
    };
    let (port, dev) = first_port(&s.client).await;
    assert!(s.sim.watched_devices().contains(&dev));
    s.sim
        .set_port_state_quietly(&dev, 1, PortState::Down, PhysState::Polling)
        .expect("port down");
    assert!(shows(&port, "DOWN", "Polling", Duration::from_secs(10)).await);
    // DOWN stays DOWN: no event.
    s.sim
        .set_port_state_quietly(&dev, 1, PortState::Down, PhysState::Disabled)
        .expect("port disabled");
    // A turn is `lid_ticks` polls; room for a loaded machine.
    assert!(
        shows(&port, "DOWN", "Disabled", tick * lid_ticks as u32 * 20).await,
        "the physical state was not read in the port's turn"
    );
}
