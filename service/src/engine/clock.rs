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

    /// Seconds from the clock's start to `at` (0 for an earlier instant): when something
    /// happened, on the monotonic clock the ticks are counted on.
    pub fn secs_since_start(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.start).as_secs_f64()
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

/// The ticks the engine has sampled, so that no tick is sampled twice.
///
/// The interval that wakes the engine and the [`TickClock`] that numbers ticks are two
/// timers: the interval started when the engine's loop did, the clock before the start-up
/// read, so the interval fires between two ticks of the clock. When the loop is late (a
/// long re-read, a burst of events), the interval fires the missed tick at once and the
/// next one on its own schedule, which can be milliseconds later: both round to the same
/// tick, and sampling that tick again gave a second `ThroughputSampled` with the same
/// timestamp and all-zero rates (counters 2 ms apart).
#[derive(Debug, Default)]
pub struct SampledTicks {
    last: Option<u64>,
}

impl SampledTicks {
    /// Whether `tick` is due for sampling (later than every tick sampled so far); if so,
    /// it is now sampled.
    pub fn take(&mut self, tick: u64) -> bool {
        if self.last.is_some_and(|last| tick <= last) {
            return false;
        }
        self.last = Some(tick);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The interval's firings when the loop is late by almost a period, numbered as the
    /// clock numbers them: two firings round to the same tick, and only the first is
    /// sampled.
    #[tokio::test(start_paused = true)]
    async fn a_late_loop_does_not_sample_a_tick_twice() {
        let period = Duration::from_millis(1000);
        let clock_start = tokio::time::Instant::now();
        // The loop starts 300 ms after the clock (the start-up read).
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let tick_of = |at: tokio::time::Instant| {
            ((at - clock_start).as_secs_f64() / period.as_secs_f64()).round() as u64
        };
        let mut sampled = SampledTicks::default();
        let mut fired = Vec::new();
        for n in 0..6 {
            ticker.tick().await;
            let tick = tick_of(tokio::time::Instant::now());
            fired.push((tick, sampled.take(tick)));
            if n == 2 {
                // The loop is busy for 1.998 periods after this tick.
                tokio::time::sleep(Duration::from_millis(1998)).await;
            }
        }
        let ticks: Vec<u64> = fired.iter().map(|(t, _)| *t).collect();
        // Ticks 0, 1, 2; then the missed one fires late (at 4.298: tick 4) and the next
        // on schedule 2 ms later (4.3: tick 4 again); then 5, 6.
        assert_eq!(ticks, [0, 1, 2, 4, 4, 5], "{fired:?}");
        let taken: Vec<u64> = fired.iter().filter(|(_, s)| *s).map(|(t, _)| *t).collect();
        assert_eq!(taken, [0, 1, 2, 4, 5], "{fired:?}");
    }

    #[test]
    fn earlier_ticks_are_not_taken_either() {
        let mut s = SampledTicks::default();
        assert!(s.take(7));
        assert!(!s.take(7));
        assert!(!s.take(6));
        assert!(s.take(9));
    }
}
