//! Throughput history: per port, one sample a tick (1 s) of TX/RX bytes/s and packets/s,
//! computed from consecutive counter readings, kept for [`HISTORY_TICKS`] ticks.
//!
//! Memory is the constraint (512 ports x 900 samples): a sample is four `f32` (16 bytes) and
//! its tick is implied by its place in the ring; flags live in a parallel byte ring.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use crate::kernel::TrafficCounters;
// Both are the model's: the simulated host's traffic model produces them too.
pub use crate::model::counters::{HistorySeed, Rates};

/// 15 minutes at 1 Hz.
pub const HISTORY_TICKS: usize = 15 * 60;

/// A sample's flags.
pub mod flags {
    /// A 32-bit PMA counter was saturated: the rate is a lower bound.
    pub const SATURATED: u8 = 1;
    /// No rate for this tick (first reading, counter reset, unreadable counters).
    pub const NO_DATA: u8 = 2;
}

/// One sample as returned to clients.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    pub tick: u64,
    pub rates: Rates,
    pub flags: u8,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Raw {
    tick: u64,
    tx_bytes: Option<u64>,
    rx_bytes: Option<u64>,
    tx_packets: Option<u64>,
    rx_packets: Option<u64>,
}

/// One port's ring.
#[derive(Debug, Default)]
pub struct PortHistory {
    /// Tick of `rates[0]`.
    first_tick: u64,
    rates: VecDeque<Rates>,
    flags: VecDeque<u8>,
    last: Option<Raw>,
}

const ZERO: Rates = Rates {
    tx_bytes: 0.0,
    rx_bytes: 0.0,
    tx_packets: 0.0,
    rx_packets: 0.0,
};

/// Rate of one counter between two readings; `None` when either is missing or it went back
/// (a counter reset, a driver reload).
fn rate(prev: Option<u64>, now: Option<u64>, secs: f64) -> Option<f32> {
    let (p, n) = (prev?, now?);
    (n >= p && secs > 0.0).then(|| ((n - p) as f64 / secs) as f32)
}

impl PortHistory {
    /// Records the counters read at `tick` (ticks are `period_secs` apart) and returns the
    /// sample it produced; rates are per second.
    pub fn record(&mut self, tick: u64, period_secs: f64, c: &TrafficCounters) -> Sample {
        let now = Raw {
            tick,
            tx_bytes: c.tx_bytes.clone().ok(),
            rx_bytes: c.rx_bytes.clone().ok(),
            tx_packets: c.tx_packets.clone().ok(),
            rx_packets: c.rx_packets.clone().ok(),
        };
        let mut fl = if c.saturated { flags::SATURATED } else { 0 };
        let rates = match self.last {
            Some(prev) if prev.tick < tick => {
                let secs = (tick - prev.tick) as f64 * period_secs;
                let tx = rate(prev.tx_bytes, now.tx_bytes, secs);
                let rx = rate(prev.rx_bytes, now.rx_bytes, secs);
                if tx.is_none() && rx.is_none() {
                    fl |= flags::NO_DATA;
                }
                Rates {
                    tx_bytes: tx.unwrap_or(0.0),
                    rx_bytes: rx.unwrap_or(0.0),
                    tx_packets: rate(prev.tx_packets, now.tx_packets, secs).unwrap_or(0.0),
                    rx_packets: rate(prev.rx_packets, now.rx_packets, secs).unwrap_or(0.0),
                }
            }
            _ => {
                fl |= flags::NO_DATA;
                ZERO
            }
        };
        // A tick read again (or an earlier one) keeps the first reading of the tick, so the
        // next tick's rate is over a whole period, not over the few milliseconds since.
        if self.last.is_none_or(|prev| prev.tick < tick) {
            self.last = Some(now);
        }
        self.push(tick, rates, fl);
        Sample {
            tick,
            rates,
            flags: fl,
        }
    }

    fn push(&mut self, tick: u64, rates: Rates, fl: u8) {
        if self.rates.is_empty() {
            self.first_tick = tick;
        }
        let next = self.first_tick + self.rates.len() as u64;
        if tick < next {
            return; // a tick recorded twice: keep the first
        }
        // Ticks the daemon missed (it was stopped, the machine suspended) are gaps.
        let gap = (tick - next).min(HISTORY_TICKS as u64) as usize;
        if gap == HISTORY_TICKS {
            self.rates.clear();
            self.flags.clear();
            self.first_tick = tick;
        } else {
            for _ in 0..gap {
                self.push_one(ZERO, flags::NO_DATA);
            }
        }
        self.push_one(rates, fl);
    }

    fn push_one(&mut self, rates: Rates, fl: u8) {
        if self.rates.len() == HISTORY_TICKS {
            self.rates.pop_front();
            self.flags.pop_front();
            self.first_tick += 1;
        }
        if self.rates.capacity() == 0 {
            // Grow in one step to the final size after the first minute, not by doubling
            // (which would leave up to half of every ring unused).
            self.rates.reserve_exact(60);
            self.flags.reserve_exact(60);
        } else if self.rates.len() == self.rates.capacity() {
            self.rates.reserve_exact(HISTORY_TICKS - self.rates.len());
            self.flags.reserve_exact(HISTORY_TICKS - self.flags.len());
        }
        self.rates.push_back(rates);
        self.flags.push_back(fl);
    }

    /// The samples with data, oldest first.
    pub fn samples(&self) -> Vec<Sample> {
        self.rates
            .iter()
            .zip(self.flags.iter())
            .enumerate()
            .filter(|(_, (_, f))| *f & flags::NO_DATA == 0)
            .map(|(i, (r, f))| Sample {
                tick: self.first_tick + i as u64,
                rates: *r,
                flags: *f,
            })
            .collect()
    }

    pub fn len(&self) -> usize {
        self.rates.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rates.is_empty()
    }
}

impl PortHistory {
    /// Fills an empty ring with `rates`, the first at `first_tick` and each a tick after the
    /// one before (`None`: no data for that tick). Live readings continue after them.
    pub fn prefill(&mut self, first_tick: u64, rates: impl IntoIterator<Item = Option<Rates>>) {
        if !self.rates.is_empty() {
            return;
        }
        for (i, r) in rates.into_iter().enumerate() {
            match r {
                Some(r) => self.push(first_tick + i as u64, r, 0),
                None => self.push(first_tick + i as u64, ZERO, flags::NO_DATA),
            }
        }
    }
}

/// Every port's ring, keyed by (device index, port).
#[derive(Debug, Default)]
pub struct History {
    ports: BTreeMap<(u32, u32), PortHistory>,
}

impl History {
    pub fn port_mut(&mut self, key: (u32, u32)) -> &mut PortHistory {
        self.ports.entry(key).or_default()
    }

    pub fn port(&self, key: (u32, u32)) -> Option<&PortHistory> {
        self.ports.get(&key)
    }

    /// Drops the rings of ports that no longer exist.
    pub fn retain(&mut self, keep: impl Fn(&(u32, u32)) -> bool) {
        self.ports.retain(|k, _| keep(k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::AttrError;

    fn counters(tx: u64, rx: u64) -> TrafficCounters {
        TrafficCounters {
            tx_bytes: Ok(tx),
            rx_bytes: Ok(rx),
            tx_packets: Ok(tx / 1000),
            rx_packets: Ok(rx / 1000),
            saturated: false,
        }
    }

    #[test]
    fn a_tick_read_twice_keeps_its_first_reading() {
        let mut h = PortHistory::default();
        h.record(10, 1.0, &counters(1000, 0));
        // Read again 2 ms later: no rate of its own, and the first reading stays.
        let again = h.record(10, 1.0, &counters(1008, 0));
        assert_ne!(again.flags & flags::NO_DATA, 0);
        let s = h.record(11, 1.0, &counters(5000, 0));
        // Over the whole period from the first reading (not 3992 from the second).
        assert_eq!(s.rates.tx_bytes, 4000.0);
    }

    #[test]
    fn rates_from_consecutive_readings() {
        let mut h = PortHistory::default();
        assert_ne!(
            h.record(10, 1.0, &counters(1000, 0)).flags & flags::NO_DATA,
            0
        );
        let s = h.record(11, 1.0, &counters(5000, 2000));
        assert_eq!(s.flags, 0);
        assert_eq!(s.rates.tx_bytes, 4000.0);
        assert_eq!(s.rates.rx_bytes, 2000.0);
        assert_eq!(s.rates.tx_packets, 4.0);
        // Two ticks apart: the rate is per second.
        let s = h.record(13, 1.0, &counters(9000, 2000));
        assert_eq!(s.rates.tx_bytes, 2000.0);
        let got = h.samples();
        assert_eq!(got.iter().map(|s| s.tick).collect::<Vec<_>>(), vec![11, 13]);
        assert_eq!(h.len(), 4, "tick 12 is a gap");
    }

    #[test]
    fn a_counter_going_back_is_a_reset_not_a_huge_rate() {
        let mut h = PortHistory::default();
        h.record(1, 1.0, &counters(10_000, 10_000));
        let s = h.record(2, 1.0, &counters(10, 10));
        assert_ne!(s.flags & flags::NO_DATA, 0);
        assert!(h.samples().is_empty());
        let s = h.record(3, 1.0, &counters(110, 10));
        assert_eq!(s.rates.tx_bytes, 100.0);
    }

    #[test]
    fn saturation_and_unreadable_counters_are_flagged() {
        let mut h = PortHistory::default();
        let mut c = counters(0, 0);
        c.saturated = true;
        h.record(1, 1.0, &c);
        assert_eq!(h.record(2, 1.0, &c).flags, flags::SATURATED);
        let bad = TrafficCounters {
            tx_bytes: Err(AttrError::Missing),
            rx_bytes: Err(AttrError::Missing),
            tx_packets: Err(AttrError::Missing),
            rx_packets: Err(AttrError::Missing),
            saturated: false,
        };
        assert_ne!(h.record(3, 1.0, &bad).flags & flags::NO_DATA, 0);
    }

    #[test]
    fn a_prefilled_ring_continues_with_live_readings() {
        let mut h = PortHistory::default();
        let r = |v: f32| Rates {
            tx_bytes: v,
            rx_bytes: v,
            tx_packets: 0.0,
            rx_packets: 0.0,
        };
        h.prefill(0, [Some(r(1.0)), None, Some(r(3.0))]);
        assert_eq!(h.len(), 3);
        let ticks: Vec<u64> = h.samples().iter().map(|s| s.tick).collect();
        assert_eq!(ticks, vec![0, 2]);
        // The first live reading has no rate yet (nothing to compare with); the next has.
        h.record(3, 1.0, &counters(0, 0));
        let s = h.record(4, 1.0, &counters(500, 0));
        assert_eq!(s.rates.tx_bytes, 500.0);
        assert_eq!(h.samples().len(), 3);
        // Only an empty ring is filled.
        h.prefill(0, [Some(r(9.0))]);
        assert_eq!(h.len(), 5);
    }

    #[test]
    fn keeps_fifteen_minutes_and_no_more() {
        let mut h = PortHistory::default();
        for t in 0..(HISTORY_TICKS as u64 + 100) {
            h.record(t, 1.0, &counters(t * 100, 0));
        }
        assert_eq!(h.len(), HISTORY_TICKS);
        let s = h.samples();
        assert_eq!(s.len(), HISTORY_TICKS);
        assert_eq!(s[0].tick, 100);
        assert!(
            h.rates.capacity() <= HISTORY_TICKS + 1,
            "{}",
            h.rates.capacity()
        );
        // A gap longer than the whole history starts afresh.
        h.record(10_000, 1.0, &counters(0, 0));
        assert_eq!(h.len(), 1);
    }
}
