//! Ticks of the sampling clock: tick `n` is `n` periods after the daemon started. Samples carry
//! ticks; clients get wall-clock times computed from them.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone)]
pub struct TickClock {
    start: Instant,
    start_wall_us: u64,
    period: Duration,
    /// The tick at start: 0, or the length of a history filled from before the start
    /// ([`TickClock::starting_at`]).
    first: u64,
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
            first: 0,
        }
    }

    /// A clock whose start is tick `first`: ticks `0..first` are the past before it (a
    /// history filled from a [`super::history::HistorySeed`]).
    pub fn starting_at(period: Duration, first: u64) -> TickClock {
        TickClock {
            first,
            ..TickClock::new(period)
        }
    }

    /// The current tick (the nearest one: the interval fires close to it).
    pub fn now(&self) -> u64 {
        let e = self.start.elapsed().as_secs_f64() / self.period.as_secs_f64();
        e.round() as u64 + self.first
    }

    /// Microseconds since the Unix epoch of a tick.
    pub fn wall_us(&self, tick: u64) -> u64 {
        let period = self.period.as_micros() as u64;
        if tick >= self.first {
            self.start_wall_us + (tick - self.first).saturating_mul(period)
        } else {
            self.start_wall_us
                .saturating_sub((self.first - tick).saturating_mul(period))
        }
    }

    /// Ticks since the start (the seeded past not counted).
    pub fn since_start(&self, tick: u64) -> u64 {
        tick.saturating_sub(self.first)
    }

    pub fn period(&self) -> Duration {
        self.period
    }
}
