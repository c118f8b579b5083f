//! The sweep: a change no event reports (a GID added in the kernel's table) is published
//! within one pass over the devices, one device a tick, without the full re-enumeration of
//! the host that used to find it once a minute; and what events do report instead (a soft
//! port's netdev, the addresses RoCE GIDs follow).

use std::time::{Duration, Instant};

use rdma_manager_dbus::PortProxy;
use rdma_manager_tests::service::{port_proxy, serve_demo_or_skip, ServedDemo};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::prelude::*;
use rdma_managerd::kernel::sim::fixtures;

/// The demo host served with no periodic re-read (`resync_ticks` out of reach), so that only
/// the sweep (`sweep` devices at a time; 0: none) or an event can find a change.
async fn quiet_demo(tick: Duration, sweep: usize) -> Option<ServedDemo> {
    let config = EngineConfig {
        tick,
        resync_ticks: 1_000_000,
        sweep_devices_per_tick: sweep,
        ..EngineConfig::default()
    };
    serve_demo_or_skip(config, |_| {}).await
}

/// The daemon's ObjectManager.
async fn object_manager(client: &zbus::Connection) -> zbus::fdo::ObjectManagerProxy<'static> {
    zbus::fdo::ObjectManagerProxy::builder(client)
        .destination("org.rdmamanager.RdmaManager1")
        .expect("destination")
        .path("/org/rdmamanager/RdmaManager1")
        .expect("path")
        .build()
        .await
        .expect("object manager")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gid_changed_without_an_event_is_published_by_the_sweep() {
    let tick = Duration::from_millis(100);
    let Some(q) = quiet_demo(tick, 1).await else {
        return;
    };
    let (sim, client) = (&q.sim, &q.client);
    let devices = sim.rdma_device_names().await.expect("names");
    let port = port_proxy(client, "/org/rdmamanager/RdmaManager1/Device/1/Port/1").await;
    let dev = port.device_name().await.expect("DeviceName");
    let before = port.gids().await.expect("Gids");
    let index = 7;
    assert!(before.iter().all(|g| g.index != index), "{before:?}");
    // Written into the table as the kernel would, with no event.
    sim.corrupt_file(
        &format!("sys/class/infiniband/{dev}/ports/1/gids/{index}"),
        "fe80:0000:0000:0000:0000:0000:0000:0077\n",
    )
    .expect("write the GID");
    // One pass over every device, one a tick, with room for a loaded machine.
    let limit = tick * (devices.len() as u32 + 2) * 10;
    let start = Instant::now();
    loop {
        let gids = port.gids().await.expect("Gids");
        if gids
            .iter()
            .any(|g| g.index == index && g.gid == "fe80:0000:0000:0000:0000:0000:0000:0077")
        {
            break;
        }
        assert!(
            start.elapsed() < limit,
            "GID {index} of {dev} not published within {limit:?}: {gids:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The sweep re-reads one device a tick without dumping every device over RDMA netlink each
/// time (on a real kernel with 256 devices that dump cost more than the device's read): with
/// no events, the dump is made again only every `resync_ticks`.
#[tokio::test(flavor = "multi_thread")]
async fn the_sweep_does_not_dump_every_device_each_tick() {
    let tick = Duration::from_millis(50);
    let Some(q) = quiet_demo(tick, 1).await else {
        return;
    };
    let sim = &q.sim;
    let after_start = sim.nl_dumps();
    // Long enough for many ticks even on a loaded machine: every tick sweeps a device.
    let devices = sim.rdma_device_names().await.expect("names").len() as u64;
    let start = Instant::now();
    tokio::time::sleep(tick * 40).await;
    let ticks = (start.elapsed().as_millis() / tick.as_millis()) as u64;
    let dumps = sim.nl_dumps() - after_start;
    assert!(
        ticks >= 10 && devices >= 3,
        "{ticks} ticks, {devices} devices"
    );
    // One dump for the first sweep; before, one a tick.
    assert!(dumps <= 2, "{dumps} netlink dumps in about {ticks} ticks");
}

/// A device added while every event is lost (with no overflow to say so) is published by
/// the sweep, which reads the kernel's device list at the start of each of its passes.
#[tokio::test(flavor = "multi_thread")]
async fn a_device_added_without_its_event_is_published_within_a_pass() {
    let tick = Duration::from_millis(50);
    // Only the sweep's list can find it.
    let Some(q) = quiet_demo(tick, 1).await else {
        return;
    };
    let (sim, client) = (&q.sim, &q.client);
    let devices = sim.rdma_device_names().await.expect("names");
    let om = object_manager(client).await;
    let named = |objects: &std::collections::HashMap<_, _>, name: &str| {
        objects.values().any(
            |ifaces: &std::collections::HashMap<
                _,
                std::collections::HashMap<String, zbus::zvariant::OwnedValue>,
            >| {
                ifaces.values().any(|props| {
                    props
                        .get("Name")
                        .and_then(|v| <&str>::try_from(v).ok())
                        .is_some_and(|n| n == name)
                })
            },
        )
    };
    let before = om.get_managed_objects().await.expect("objects");
    assert!(named(&before, devices[0].as_str()), "{before:?}");
    assert!(!named(&before, "mlx5_9"));
    sim.lose_events(true);
    let (cx6, _) = fixtures::cx6_ib(
        0,
        "mlx5_9",
        "0000:d1:00.0",
        0x0c42_a103_00aa_bb01,
        90,
        "ibs9",
    );
    sim.plug(cx6).expect("plug");
    // A pass over every device, one a tick, with room for a loaded machine.
    let limit = tick * (devices.len() as u32 + 2) * 10;
    let start = Instant::now();
    loop {
        let objects = om.get_managed_objects().await.expect("objects");
        if named(&objects, "mlx5_9") {
            break;
        }
        assert!(
            start.elapsed() < limit,
            "mlx5_9 not published within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The Port object of `device`'s port 1, found through GetManagedObjects.
async fn port_of(client: &zbus::Connection, device: &str) -> PortProxy<'static> {
    let objects = object_manager(client)
        .await
        .get_managed_objects()
        .await
        .expect("objects");
    let path = objects
        .iter()
        .find(|(path, ifaces)| {
            path.as_str().ends_with("/Port/1")
                && ifaces.values().any(|props| {
                    props
                        .get("DeviceName")
                        .and_then(|v| <&str>::try_from(v).ok())
                        .is_some_and(|n| n == device)
                })
        })
        .map(|(p, _)| p.to_string())
        .unwrap_or_else(|| panic!("no Port 1 of {device}"));
    port_proxy(client, &path).await
}

/// A soft device's port state follows its netdev and is not read by the 1 Hz poll (512
/// files a second on 256 rxe devices): a change the kernel makes without the netdev's
/// rtnetlink event is not seen until the device is re-read; with the event (as `ip link set
/// down` raises it) it is published.
#[tokio::test(flavor = "multi_thread")]
async fn a_soft_port_s_state_follows_its_netdev_s_events() {
    use rdma_managerd::kernel::HostEvent;
    use rdma_managerd::model::{PhysState, PortState};
    let tick = Duration::from_millis(50);
    // No sweep: only the poll or an event could find the change.
    let Some(q) = quiet_demo(tick, 0).await else {
        return;
    };
    let (sim, client) = (&q.sim, &q.client);
    let port = port_of(client, "rxe0").await;
    assert_eq!(port.state().await.expect("State"), "ACTIVE");
    sim.set_port_state_quietly("rxe0", 1, PortState::Down, PhysState::Disabled)
        .expect("state");
    // Twenty ticks, each a poll: the state is not read.
    tokio::time::sleep(tick * 20).await;
    assert_eq!(port.state().await.expect("State"), "ACTIVE");
    sim.raise(HostEvent::NetdevChanged {
        name: "eth0".into(),
    });
    let start = Instant::now();
    while port.state().await.expect("State") != "DOWN" {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "rxe0's port not DOWN after its netdev's event"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A RoCE port's GIDs follow its netdev's IP addresses with no RDMA event: rtnetlink's address
/// event for that netdev re-reads the device (and nothing else re-reads it here: no sweep, no
/// resync). An address event for a netdev no port rides on re-reads nothing.
#[tokio::test(flavor = "multi_thread")]
async fn an_address_event_publishes_the_gids_that_follow_it() {
    use rdma_managerd::kernel::HostEvent;
    let tick = Duration::from_millis(50);
    let Some(q) = quiet_demo(tick, 0).await else {
        return;
    };
    let (sim, client) = (&q.sim, &q.client);
    let port = port_of(client, "rxe0").await;
    let gid = "0000:0000:0000:0000:0000:ffff:c000:0207";
    let index = 5;
    assert!(port
        .gids()
        .await
        .expect("Gids")
        .iter()
        .all(|g| g.index != index));
    // As the kernel's roce_gid_mgmt would write it for 192.0.2.7, with no event.
    sim.corrupt_file(
        &format!("sys/class/infiniband/rxe0/ports/1/gids/{index}"),
        &format!("{gid}\n"),
    )
    .expect("write the GID");
    let reads = sim.device_reads();
    sim.raise(HostEvent::NetdevAddressChanged { name: "lo".into() });
    tokio::time::sleep(tick * 10).await;
    assert_eq!(
        sim.device_reads(),
        reads,
        "an unrelated netdev's address re-read a device"
    );
    assert!(port
        .gids()
        .await
        .expect("Gids")
        .iter()
        .all(|g| g.index != index));
    sim.raise(HostEvent::NetdevAddressChanged {
        name: "eth0".into(),
    });
    let start = Instant::now();
    loop {
        let gids = port.gids().await.expect("Gids");
        if gids.iter().any(|g| g.index == index && g.gid == gid) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "GID {index} not published after eth0's address event: {gids:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
