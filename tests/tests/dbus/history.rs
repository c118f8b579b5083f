//! The two-resolution throughput history end to end: the coarse ring's averages, as
//! `GetThroughputHistoryCoarse` returns them, are the fine ring's samples of the same ticks
//! averaged, and a coarse period is 10 sampling periods whatever the tick (here 50 ms, so a
//! bucket is 500 ms, not 10 s).

use std::time::{Duration, Instant};

use rdma_manager_dbus::proxies::{sample_flags::PARTIAL, HistorySample};
use rdma_manager_dbus::{ManagerProxy, PortProxy};
use rdma_manager_tests::service::{serve_sim, session_bus_or_skip};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::{fixtures, SimHost};

const PORT: &str = "/org/rdmamanager/RdmaManager1/Device/0/Port/1";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coarse_history_averages_ten_ticks_of_the_fine_one() {
    let Some(bus) = session_bus_or_skip() else {
        return;
    };
    let sim = SimHost::new(fixtures::demo_host()).expect("demo");
    let tick = Duration::from_millis(50);
    let config = EngineConfig {
        tick,
        ..EngineConfig::default()
    };
    let _service = serve_sim(&bus, &sim, config).await.expect("service starts");
    let client = bus.connect().await.expect("client connects");
    let mgr = ManagerProxy::new(&client).await.unwrap();
    let interval = mgr.sample_interval_us().await.unwrap();
    assert_eq!(interval, 50_000);
    assert_eq!(mgr.coarse_interval_us().await.unwrap(), 10 * interval);
    assert_eq!(mgr.history_length().await.unwrap(), 300);
    assert_eq!(mgr.coarse_history_length().await.unwrap(), 360);
    let p = PortProxy::builder(&client)
        .path(PORT)
        .unwrap()
        .build()
        .await
        .unwrap();

    // Traffic that changes from tick to tick, until four buckets are closed.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut step = 0u64;
    let coarse = loop {
        step += 1;
        sim.add_traffic("mlx4_1", 1, 100_000 * (step % 7 + 1), 50_000 * (step % 3))
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let c = p.get_throughput_history_coarse().await.unwrap();
        if c.len() >= 4 {
            break c;
        }
        assert!(
            Instant::now() < deadline,
            "only {} buckets after 30 s",
            c.len()
        );
    };
    let fine = p.get_throughput_history().await.unwrap();
    let period = 10 * interval;
    assert!(
        coarse
            .windows(2)
            .all(|w| w[1].0 > w[0].0 && (w[1].0 - w[0].0) % period == 0),
        "buckets oldest first, a whole number of coarse periods apart: {coarse:?}"
    );
    // The fine ring holds the last 300 ticks: older buckets' ticks have left it.
    let newest_fine = fine.last().map(|s| s.0).unwrap_or(0);
    let fine_reach = newest_fine.saturating_sub(290 * interval);
    let mut checked = 0;
    for c in &coarse {
        if c.0 < fine_reach + 9 * interval {
            continue;
        }
        // The fine samples of the bucket's ticks: it is stamped at its last one.
        let of: Vec<&HistorySample> = fine
            .iter()
            .filter(|s| s.0 + 9 * interval >= c.0 && s.0 <= c.0)
            .collect();
        checked += 1;
        assert!(!of.is_empty(), "a bucket with data has fine samples: {c:?}");
        let n = of.len() as f64;
        let mean = |f: fn(&HistorySample) -> f64| of.iter().map(|s| f(s)).sum::<f64>() / n;
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-3 * a.abs().max(b.abs()).max(1.0);
        assert!(close(c.1, mean(|s| s.1)), "TX {c:?} from {of:?}");
        assert!(close(c.2, mean(|s| s.2)), "RX {c:?} from {of:?}");
        assert!(close(c.3, mean(|s| s.3)), "TX packets {c:?} from {of:?}");
        // Partial exactly when some of its 10 ticks had no sample with data.
        assert_eq!(c.5 & PARTIAL != 0, of.len() < 10, "{c:?} from {of:?}");
    }
    assert!(
        checked >= 3,
        "{checked} buckets compared: {coarse:?} {fine:?}"
    );
    // Traffic was flowing: the comparison is not of zeros.
    assert!(coarse.iter().any(|c| c.1 > 0.0), "{coarse:?}");
    // The bucket being filled is not returned.
    assert!(coarse.last().map(|c| c.0).unwrap_or(0) <= newest_fine);
}
