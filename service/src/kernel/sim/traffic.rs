//! Moving traffic for the demo host, so that a newcomer's graphs are not flat: every port
//! gets a slow wave with some noise, different per port.

use std::time::Duration;

use super::SimHost;

/// Adds traffic to every port of `sim` every `period` until the host is dropped elsewhere and
/// the task is aborted.
pub fn spawn_demo_traffic(sim: SimHost, period: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut t: u64 = 0;
        let mut ticker = tokio::time::interval(period);
        loop {
            ticker.tick().await;
            t += 1;
            let spec = sim.spec();
            for (di, d) in spec.devices.iter().enumerate() {
                for p in &d.ports {
                    let phase = (t as f64 / 20.0) + di as f64 * 1.3 + f64::from(p.number) * 0.7;
                    // Up to about 1.5 GB/s, never negative; RX lags TX.
                    let tx = (phase.sin() + 1.05) * 7.0e8 * period.as_secs_f64();
                    let rx = ((phase - 0.8).sin() + 1.05) * 5.0e8 * period.as_secs_f64();
                    let jitter = ((t * 7919 + di as u64 * 104_729) % 97) as f64 / 97.0;
                    let _ = sim.add_traffic(
                        &d.name,
                        p.number,
                        (tx * (0.9 + 0.2 * jitter)) as u64,
                        (rx * (0.9 + 0.2 * jitter)) as u64,
                    );
                }
            }
        }
    })
}
