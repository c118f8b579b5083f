//! The sweep: a change no event reports (a GID added in the kernel's table) is published
//! within one pass over the devices, one device a tick, without the full re-enumeration of
//! the host that used to find it once a minute.

use std::time::{Duration, Instant};

use rdma_manager_dbus::PortProxy;
use rdma_manager_tests::service::{serve_sim, session_bus_or_skip};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::{fixtures, SimHost};
use rdma_managerd::kernel::Host;
use zbus::proxy::CacheProperties;

#[tokio::test(flavor = "multi_thread")]
async fn a_gid_changed_without_an_event_is_published_by_the_sweep() {
    let Some(bus) = session_bus_or_skip() else {
        return;
    };
    let sim = SimHost::new(fixtures::demo_host()).expect("demo host");
    let devices = sim.rdma_device_names().await.expect("names");
    let tick = Duration::from_millis(100);
    let config = EngineConfig {
        tick,
        // No periodic re-read of anything within this test: only the sweep can find it.
        resync_ticks: 1_000_000,
        sweep_devices_per_tick: 1,
        ..EngineConfig::default()
    };
    let _service = serve_sim(&bus, &sim, config).await.expect("service");
    let client = bus.connect().await.expect("client");
    let port = PortProxy::builder(&client)
        .path("/org/rdmamanager/RdmaManager1/Device/1/Port/1")
        .expect("path")
        .cache_properties(CacheProperties::No)
        .build()
        .await
        .expect("port");
    let dev = port.device_name().await.expect("DeviceName");
    let before = port.gids().await.expect("Gids");
    let index = 7;
    assert!(before.iter().all(|g| g.0 != index), "{before:?}");
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
            .any(|g| g.0 == index && g.1 == "fe80:0000:0000:0000:0000:0000:0000:0077")
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
    let Some(bus) = session_bus_or_skip() else {
        return;
    };
    let sim = SimHost::new(fixtures::demo_host()).expect("demo host");
    let tick = Duration::from_millis(50);
    let config = EngineConfig {
        tick,
        resync_ticks: 1_000_000,
        sweep_devices_per_tick: 1,
        ..EngineConfig::default()
    };
    let _service = serve_sim(&bus, &sim, config).await.expect("service");
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
