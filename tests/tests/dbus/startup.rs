//! Start-up: the daemon owns its name before it has read the host (the root's `Startup` is
//! true meanwhile), GetManagedObjects waits until the host is published and restored, and a
//! change that arrives early waits for the engine instead of being refused.
//!
//! The simulated host's first device read is held for a few seconds (`SimOp::ReadDevice`), so
//! that the client surely talks to the daemon while it is still starting.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use futures::StreamExt;
use rdma_manager_dbus::proxies::ManagerProxy;
use rdma_manager_dbus::BUS_NAME;
use rdma_manager_tests::bus::{busctl_call, skip_reason, PolkitConfig, PrivateBus, Reply};
use rdma_manager_tests::service::{
    serve_sim_at, session_bus_or_skip, system_bus_with_polkit, ServedSim,
};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::{fixtures, SimHost, SimNetdev, SimOp};
use tokio::task::JoinHandle;
use zbus::fdo::ObjectManagerProxy;

const DEVICE_INTERFACE: &str = "org.rdmamanager.RdmaManager1.Device";

/// How long the first device read is held: long enough that the checks below run while the
/// daemon starts on a loaded machine, short enough for the suite.
const HELD: Duration = Duration::from_secs(4);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_name_is_owned_before_the_host_is_read_and_get_managed_objects_waits() -> Result<()> {
    let Some(bus) = session_bus_or_skip() else {
        return Ok(());
    };
    let sim = SimHost::new(fixtures::demo_host())?;
    let devices = sim.spec().devices.len();
    let (serving, client) = serve_held(&bus, &sim).await?;
    let manager = ManagerProxy::new(&client).await?;
    let mut changes = manager.receive_startup_changed().await;

    // While the first device read is held: the root answers, says it is starting, and lists
    // no device yet.
    assert!(manager.startup().await?, "Startup while the host is read");
    assert!(
        manager.devices().await?.is_empty(),
        "devices before the host is read"
    );
    assert!(!serving.is_finished(), "start-up still running");

    // GetManagedObjects waits for the whole host, and Startup is false by the time it answers.
    let om = ObjectManagerProxy::builder(&client)
        .destination(BUS_NAME)?
        .path(rdma_manager_dbus::ROOT_PATH)?
        .build()
        .await?;
    let objects = om.get_managed_objects().await?;
    let device_objects = objects
        .values()
        .filter(|ifaces| ifaces.keys().any(|i| i.as_str() == DEVICE_INTERFACE))
        .count();
    assert_eq!(device_objects, devices, "every device in the first answer");
    // Asked of the daemon, not of the proxy's cache, which PropertiesChanged updates only
    // after the signal is read: the answer to GetManagedObjects may come first.
    let uncached = ManagerProxy::builder(&client)
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?;
    assert!(
        !uncached.startup().await?,
        "Startup after GetManagedObjects answered"
    );
    assert_eq!(uncached.devices().await?.len(), devices);

    // The change of Startup was signalled.
    let changed = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(c) = changes.next().await {
            if !c.get().await? {
                return Ok::<_, zbus::Error>(true);
            }
        }
        Ok(false)
    })
    .await
    .context("no PropertiesChanged of Startup within 10 s")??;
    assert!(changed, "Startup became false with PropertiesChanged");
    let served = serving.await.context("serving task")??;
    drop(served);
    Ok(())
}

/// The service started on `sim` with its first device read held, as a task, and a client
/// connected once the name is owned (start-up still running).
async fn serve_held(
    bus: &PrivateBus,
    sim: &SimHost,
) -> Result<(JoinHandle<Result<ServedSim>>, zbus::Connection)> {
    sim.delay_next(SimOp::ReadDevice, HELD);
    let serving = tokio::spawn(serve_sim_at(
        bus.address().to_string(),
        sim.clone(),
        EngineConfig::default(),
    ));
    bus.wait_for_name(BUS_NAME, Duration::from_secs(30)).await?;
    Ok((serving, bus.connect().await?))
}

/// The demo host with a free Ethernet interface for a soft link.
fn host_with_eth1() -> Result<SimHost> {
    let mut spec = fixtures::demo_host();
    let mut eth1: SimNetdev = fixtures::ethernet("eth1", [0x52, 0x54, 0x00, 0x00, 0x00, 0x11]);
    eth1.ifindex = 41;
    spec.netdevs.push(eth1);
    Ok(SimHost::new(spec)?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_asked_during_start_up_waits_for_the_engine_and_is_done() -> Result<()> {
    if let Some(reason) = skip_reason() {
        eprintln!("skipping: {reason}");
        return Ok(());
    }
    let (_users, bus, _polkit) =
        system_bus_with_polkit(false, &PolkitConfig::rdma_manager()).await?;
    let sim = host_with_eth1()?;
    let (serving, client) = serve_held(&bus, &sim).await?;
    // Uncached: each Startup below is the daemon's answer at that moment.
    let manager = ManagerProxy::builder(&client)
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?;
    assert!(manager.startup().await?, "Startup while the host is read");

    // Root asks while the daemon starts: answered once start-up is over, not refused as Busy.
    let args = ["sss", "rxe1", "rxe", "eth1"].map(String::from);
    let reply = busctl_call(
        &bus,
        None,
        false,
        rdma_manager_dbus::ROOT_PATH,
        BUS_NAME,
        "AddSoftLink",
        &args,
    )
    .await?;
    match reply {
        Reply::Ok(out) => assert!(out.starts_with("o "), "{out}"),
        Reply::Err(name, msg) => bail!("AddSoftLink during start-up: {name}: {msg}"),
    }
    assert!(!manager.startup().await?, "answered after start-up");
    assert!(
        sim.spec().devices.iter().any(|d| d.name == "rxe1"),
        "rxe1 made in the simulated kernel"
    );
    let served = serving.await.context("serving task")??;
    drop(served);
    Ok(())
}
