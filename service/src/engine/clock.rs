//! Ticks of the sampling clock: tick `n` is `n` periods after the daemon started. Samples carry
//! ticks; clients get wall-clock times computed from them.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone)]
pub struct TickClock {
    start: Instant,
    start_wall_us: u64,
    period: Duration,
}

impl TickClock {
    pub fn new(period: Duration) -> TickClock {
        let start_wall_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        TickClock {
            start: Instant::now(),
            start_wall_us,
            period: period.max(Duration::from_millis(1)),
        }
    }

    /// The current tick (the nearest one: the interval fires close to it).
    pub fn now(&self) -> u64 {
        let e = self.start.elapsed().as_secs_f64() / self.period.as_secs_f64();
        e.round() as u64
    }

    /// Microseconds since the Unix epoch of a tick.
    pub fn wall_us(&self, tick: u64) -> u64 {
        self.start_wall_us + tick.saturating_mul(self.period.as_micros() as u64)
    }

    pub fn period(&self) -> Duration {
        self.period
    }
}
