//! Moving traffic for the demo host, so that a newcomer's graphs are not flat: every port
//! gets a slow wave with some noise, different per port, scaled to its link rate.
//!
//! The wave is a function of the tick, so the same model that moves the counters from now on
//! also tells what the last 15 minutes looked like ([`DemoTraffic`] is a
//! [`HistorySeed`]): the demo's graphs are full at start, as on a daemon that has run a while.
//!
//! A port's wave is keyed by its device's kernel index, which a rename keeps, and the model is
//! taken from the host again at every tick: a renamed device keeps its traffic, and a soft
//! link added later gets its own. The bytes added are the rate times the time that actually
//! passed since the last addition, so the counters stay true to the wave when the task runs
//! late.

use std::time::Duration;

use super::SimHost;
use crate::model::counters::{HistorySeed, Rates};

/// How a 32-bit PMA port of the demo is loaded: light enough that its data counters (4-octet
/// words, saturating at 2^32 - 1, about 17 GB) last a working day. A saturated counter is real
/// on old HCAs but a poor first impression: the demo's old port is a lightly used one, and
/// saturation is left to the hosts and tests that are about it.
const LIGHT_BYTES_PER_S: f64 = 4.0e5;

/// Without a known link rate: about 1 GB/s at the top of the wave.
const DEFAULT_BYTES_PER_S: f64 = 5.0e8;

/// A sine-shaped wave of period 2π between -1 and 1 (two parabolic arcs, within 0.06 of the
/// sine). Not `f64::sin`, which would make the daemon load `libm.so.6` for this alone, its
/// IFUNC resolvers being run at load across its code (docs/PERFORMANCE.md, "Decisions").
fn wave(phase: f64) -> f64 {
    use std::f64::consts::PI;
    // x in [-π, π): the parabola 4x(π - |x|)/π² is 0 at -π, 0 and π, ±1 at ±π/2.
    let x = (phase + PI).rem_euclid(2.0 * PI) - PI;
    4.0 * x * (PI - x.abs()) / (PI * PI)
}

/// One port's place in the demo's traffic.
#[derive(Debug, Clone, PartialEq)]
struct PortWave {
    device: String,
    port: u32,
    /// The device's kernel index (kept across renames): ports of different devices move out
    /// of phase.
    device_index: usize,
    /// The wave's amplitude in bytes/s; its top is about twice this.
    amplitude: f64,
}

/// The demo's traffic model: per port, TX and RX in bytes/s at any tick.
#[derive(Debug, Clone, PartialEq)]
pub struct DemoTraffic {
    ports: Vec<PortWave>,
}

/// The link rate of a sysfs `rate` text (`56 Gb/sec (4X FDR)`) in bytes/s.
fn link_bytes_per_s(rate: &str) -> Option<f64> {
    let gbps: f64 = rate.split_whitespace().next()?.parse().ok()?;
    (gbps > 0.0).then_some(gbps * 1e9 / 8.0)
}

impl DemoTraffic {
    /// The model for every port of `sim` as it is now.
    pub fn of(sim: &SimHost) -> DemoTraffic {
        let spec = sim.spec();
        let ports = spec
            .devices
            .iter()
            .flat_map(|d| {
                let di = d.index as usize;
                d.ports.iter().map(move |p| {
                    let narrow = p.pma.as_ref().is_some_and(|m| !m.extended);
                    // A fifth of the link: the top of the wave is about 40% of it.
                    let amplitude = if narrow {
                        LIGHT_BYTES_PER_S
                    } else {
                        link_bytes_per_s(&p.rate).map_or(DEFAULT_BYTES_PER_S, |l| l * 0.2)
                    };
                    PortWave {
                        device: d.name.clone(),
                        port: p.number,
                        device_index: di,
                        amplitude,
                    }
                })
            })
            .collect();
        DemoTraffic { ports }
    }

    /// TX and RX bytes/s of one port at tick `t` (negative: before the demo started).
    fn rates_of(w: &PortWave, t: i64) -> (f64, f64) {
        let phase = (t as f64 / 20.0) + w.device_index as f64 * 1.3 + f64::from(w.port) * 0.7;
        // Never negative; RX lags TX.
        let tx = (wave(phase) + 1.05) * w.amplitude;
        let rx = (wave(phase - 0.8) + 1.05) * w.amplitude * 0.7;
        let jitter = (t.rem_euclid(97) as f64 * 7919.0 + w.device_index as f64 * 104_729.0)
            .rem_euclid(97.0)
            / 97.0;
        let j = 0.9 + 0.2 * jitter;
        (tx * j, rx * j)
    }

    /// TX and RX bytes/s of `device` port `port` at tick `t`.
    pub fn rates(&self, device: &str, port: u32, t: i64) -> Option<(f64, f64)> {
        self.ports
            .iter()
            .find(|w| w.device == device && w.port == port)
            .map(|w| Self::rates_of(w, t))
    }
}

impl HistorySeed for DemoTraffic {
    fn past_rates(&self, device: &str, port: u32, ago: u64) -> Option<Rates> {
        let t = -i64::try_from(ago).ok()?;
        let (tx, rx) = self.rates(device, port, t)?;
        // Packets as the simulated counters count them (4 KiB MTU frames).
        Some(Rates {
            tx_bytes: tx as f32,
            rx_bytes: rx as f32,
            tx_packets: (tx / 4096.0) as f32,
            rx_packets: (rx / 4096.0) as f32,
        })
    }
}

/// Adds traffic to every port `sim` has at each `period` (its devices as they are then:
/// renamed, added or removed), following the wave from tick 1 on, until the task is aborted.
pub fn spawn_demo_traffic(sim: SimHost, period: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut t: i64 = 0;
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        let mut last = tokio::time::Instant::now();
        loop {
            ticker.tick().await;
            t += 1;
            let now = tokio::time::Instant::now();
            let secs = (now - last).as_secs_f64();
            last = now;
            add_tick(&sim, &DemoTraffic::of(&sim), t, secs);
        }
    })
}

/// Adds `secs` seconds of tick `t`'s traffic to every port of `model`.
fn add_tick(sim: &SimHost, model: &DemoTraffic, t: i64, secs: f64) {
    for w in &model.ports {
        let (tx, rx) = DemoTraffic::rates_of(w, t);
        let _ = sim.add_traffic(&w.device, w.port, (tx * secs) as u64, (rx * secs) as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::sim::fixtures;

    #[test]
    fn the_wave_follows_the_sine_it_stands_in_for() {
        for i in -400..400 {
            let phase = f64::from(i) / 20.0;
            let (w, s) = (wave(phase), phase.sin());
            assert!((w - s).abs() < 0.06, "at {phase}: {w} against {s}");
            assert!((-1.0..=1.0).contains(&w), "at {phase}: {w}");
        }
    }

    #[test]
    fn the_demo_loads_ports_by_their_link_and_spares_narrow_counters() {
        let sim = SimHost::new(fixtures::demo_host()).expect("demo host");
        let m = DemoTraffic::of(&sim);
        // mlx4_1/1 has 32-bit PMA counters: light traffic, which does not saturate them in a
        // working day (8 hours of the wave, summed tick by tick).
        let (tx, rx) = m.rates("mlx4_1", 1, 10).expect("mlx4_1/1");
        assert!(tx > 0.0 && rx > 0.0);
        let bytes_in_8h: f64 = (0..8 * 3600)
            .filter_map(|t| m.rates("mlx4_1", 1, t))
            .map(|(tx, rx)| tx.max(rx))
            .sum();
        assert!(bytes_in_8h / 4.0 < f64::from(u32::MAX), "{bytes_in_8h}");
        // mlx5_0/1 (200 Gb/s): busy, but under the link at the top of every wave.
        let link = 200e9 / 8.0;
        let peak = (-900..100)
            .filter_map(|t| m.rates("mlx5_0", 1, t))
            .map(|(tx, rx)| tx.max(rx))
            .fold(0.0, f64::max);
        assert!(peak > link * 0.2 && peak < link, "{peak}");
        // The past is the same wave: the seed is what the counters would have shown.
        let past = m.past_rates("mlx5_0", 1, 30).expect("seed");
        let (tx, _) = m.rates("mlx5_0", 1, -30).expect("rates");
        assert_eq!(past.tx_bytes, tx as f32);
        assert!(m.past_rates("nope", 1, 1).is_none());
    }

    async fn tx_bytes(sim: &SimHost, dev: &str) -> u64 {
        use crate::kernel::Host;
        let c = sim.read_counters(dev, 1).await.expect("counters");
        c.tx_bytes.expect("tx bytes")
    }

    /// Traffic follows the host as it is at each tick: a renamed device keeps its wave (its
    /// kernel index stays), a soft link added after the start gets traffic too.
    #[tokio::test]
    async fn traffic_follows_renames_and_new_soft_links() {
        use crate::kernel::{Host, NewLink};
        use crate::model::SoftLinkType;
        let sim = SimHost::new(fixtures::demo_host()).expect("demo host");
        let before = DemoTraffic::of(&sim).rates("rxe0", 1, 5).expect("rxe0");
        let index = sim
            .spec()
            .devices
            .iter()
            .find(|d| d.name == "rxe0")
            .map(|d| d.index)
            .expect("rxe0");
        sim.rename_device(index, "rxe_a").await.expect("rename");
        sim.add_link(&NewLink {
            name: "rxe1".into(),
            kind: SoftLinkType::Rxe,
            netdev: "enp4s0d1".into(),
        })
        .await
        .expect("rdma link add rxe1");
        let model = DemoTraffic::of(&sim);
        assert_eq!(model.rates("rxe_a", 1, 5), Some(before));
        assert!(model.rates("rxe0", 1, 5).is_none());
        let (a0, b0) = (tx_bytes(&sim, "rxe_a").await, tx_bytes(&sim, "rxe1").await);
        add_tick(&sim, &model, 5, 1.0);
        let (a1, b1) = (tx_bytes(&sim, "rxe_a").await, tx_bytes(&sim, "rxe1").await);
        assert!(a1 > a0, "the renamed device's counters move: {a0} -> {a1}");
        assert!(b1 > b0, "the new soft link's counters move: {b0} -> {b1}");
    }

    /// The bytes added are the wave's rate times the time that passed: a late tick (1.5 s)
    /// adds half as much again as an on-time one, so the rate read stays the wave's.
    #[test]
    fn a_late_tick_adds_the_bytes_of_the_time_that_passed() {
        let sim = SimHost::new(fixtures::demo_host()).expect("demo host");
        let model = DemoTraffic::of(&sim);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let read = |sim: &SimHost| rt.block_on(tx_bytes(sim, "mlx5_0"));
        let t0 = read(&sim);
        add_tick(&sim, &model, 7, 1.0);
        let t1 = read(&sim);
        add_tick(&sim, &model, 7, 1.5);
        let t2 = read(&sim);
        let (one, late) = ((t1 - t0) as f64, (t2 - t1) as f64);
        assert!((late / one - 1.5).abs() < 1e-3, "{one} then {late}");
    }
}
