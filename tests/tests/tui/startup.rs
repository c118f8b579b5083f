//! rdma-tui started while the service starts (the service owns its name before it has read
//! the host): it shows that the service is starting, then the whole host once it is over,
//! even when the service publishes more objects meanwhile than the client's signal queue
//! holds (1024): a client that waited in GetManagedObjects without reading its signals would
//! stop its own connection, reply included, and never load.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rdma_manager_dbus::BUS_NAME;
use rdma_manager_tests::service::{serve_sim_at, session_bus_or_skip};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::{fixtures, SimHost, SimOp};
use rdma_tui::client::{BusChoice, Update};

/// 600 devices of one port: 1200 objects, each with its InterfacesAdded.
const DEVICES: usize = 600;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_started_during_start_up_shows_it_then_loads_the_whole_host() -> Result<()> {
    let Some(bus) = session_bus_or_skip() else {
        return Ok(());
    };
    let sim = SimHost::new(fixtures::large_host(DEVICES as u32, 1, 0))?;
    // Holds the first device read, so that the client surely connects while the host is read.
    sim.delay_next(SimOp::ReadDevice, Duration::from_secs(3));
    let serving = tokio::spawn(serve_sim_at(
        bus.address().to_string(),
        sim.clone(),
        EngineConfig::default(),
    ));
    bus.wait_for_name(BUS_NAME, Duration::from_secs(60)).await?;
    let conn = rdma_tui::client::connect(&BusChoice::Address(bus.address().to_string())).await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let client = tokio::spawn(rdma_tui::client::run(conn, tx));

    // Every Loaded the client sends, in order, until one has the whole host.
    let mut loads = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let u = tokio::time::timeout_at(deadline.into(), rx.recv())
            .await
            .with_context(|| format!("no complete load within 180 s; loads: {loads:?}"))?
            .context("the client stopped")?;
        match u {
            Update::Loaded(m) => {
                loads.push((m.manager.startup, m.devices.len()));
                if !m.manager.startup && m.devices.len() == DEVICES {
                    break;
                }
            }
            Update::Fatal(e) => bail!("the client gave up: {e}"),
            _ => {}
        }
    }
    assert_eq!(
        loads.first(),
        Some(&(true, 0)),
        "the first load shows the service starting, with no device yet: {loads:?}"
    );
    client.abort();
    let served = serving.await.context("serving task")??;
    drop(served);
    Ok(())
}
