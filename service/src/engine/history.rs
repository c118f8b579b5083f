//! Throughput history: per port, one sample a tick (1 s) of TX/RX bytes/s and packets/s,
//! computed from consecutive counter readings, kept at two resolutions:
//!
//! - the fine ring: every tick's sample for [`FINE_TICKS`] ticks (5 minutes at 1 Hz);
//! - the coarse ring: the average of every [`COARSE_TICKS`] ticks (10 s at 1 Hz) for
//!   [`COARSE_LEN`] buckets (an hour).
//!
//! Memory is the constraint (512 ports, or one port per virtual function on SR-IOV hosts): a
//! stored sample is four 16-bit floats (8 bytes, see [`pack`]) and its tick is implied by its
//! place in the ring; flags live beside them, four bits each. Both rings together are 660
//! samples (5.6 KB) a port for an hour. The bucket is counted in ticks, not seconds: with a
//! shortened tick (`--tick-ms`) it is 10 ticks long.
//!
//! What is stored keeps 11 significant bits of each rate (a relative error of at most
//! 1/4096, 0.025 %): below what a tick's own timing already puts in a rate (the poll's start
//! moves by a millisecond or more from tick to tick, 0.1 % of a 1 s period), and below the
//! third significant digit a client shows. The sample of the tick itself (`record`'s
//! return, the `ThroughputSampled` signal) and the coarse averages are computed from the
//! exact rates before they are stored.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use crate::kernel::TrafficCounters;
// Both are the model's: the simulated host's traffic model produces them too.
pub use crate::model::counters::{HistorySeed, Rates};

/// Samples in the fine ring: 5 minutes at 1 Hz.
pub const FINE_TICKS: usize = 5 * 60;
/// Ticks a coarse bucket averages: 10 s at 1 Hz.
pub const COARSE_TICKS: u64 = 10;
/// Buckets in the coarse ring: an hour at 1 Hz.
pub const COARSE_LEN: usize = 6 * 60;
/// Ticks the whole history spans (the coarse ring's): an hour at 1 Hz.
pub const HISTORY_SPAN_TICKS: u64 = COARSE_TICKS * COARSE_LEN as u64;

/// A sample's flags.
pub mod flags {
    /// A 32-bit PMA counter was saturated: the rate is a lower bound. A coarse bucket has
    /// it when any of its samples had it.
    pub const SATURATED: u8 = 1;
    /// No rate for this tick (first reading, counter reset, unreadable counters), or, in the
    /// coarse ring, for any tick of the bucket.
    pub const NO_DATA: u8 = 2;
    /// Coarse ring only: the bucket averages fewer than [`super::COARSE_TICKS`] samples
    /// (the others had no data); the average is over the ones it has.
    pub const PARTIAL: u8 = 4;
}

/// One sample as returned to clients. In the coarse ring, `tick` is the bucket's last tick
/// (a fine sample is stamped at the end of the tick it measures, a bucket at the end of its
/// last one).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    pub tick: u64,
    pub rates: Rates,
    pub flags: u8,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Raw {
    tick: u64,
    /// When the counters were read, in seconds (see [`PortHistory::record`]).
    read_at: f64,
    counters: PolledTraffic,
}

/// A port's traffic counters as its last poll read them (what GetAllCounters serves, at most
/// a tick old, instead of reading them again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolledTraffic {
    pub tx_bytes: Option<u64>,
    pub rx_bytes: Option<u64>,
    pub tx_packets: Option<u64>,
    pub rx_packets: Option<u64>,
    pub saturated: bool,
}

impl PolledTraffic {
    /// Whether the poll read any of them (a port whose files all failed has none).
    pub fn has_any(&self) -> bool {
        [
            self.tx_bytes,
            self.rx_bytes,
            self.tx_packets,
            self.rx_packets,
        ]
        .iter()
        .any(Option::is_some)
    }

    /// Puts them in `snap` in place of what it read, those the poll did not read `Missing`.
    pub fn fill(&self, snap: &mut crate::model::CounterSnapshot) {
        let field = |v: Option<u64>| v.ok_or(crate::model::AttrError::Missing);
        snap.tx_bytes = field(self.tx_bytes);
        snap.rx_bytes = field(self.rx_bytes);
        snap.tx_packets = field(self.tx_packets);
        snap.rx_packets = field(self.rx_packets);
        snap.saturated = self.saturated;
    }
}

const ZERO: Rates = Rates {
    tx_bytes: 0.0,
    rx_bytes: 0.0,
    tx_packets: 0.0,
    rx_packets: 0.0,
};

/// A ring of `cap` entries numbered by consecutive indexes (ticks or buckets); an index
/// skipped is a gap entry (`NO_DATA`) holding its place.
#[derive(Debug)]
struct Ring {
    cap: usize,
    /// Index of `rates[0]`.
    first: u64,
    rates: VecDeque<[u16; 4]>,
    /// Each entry's flags, four bits each, two entries a byte: entry `i` at slot `i % cap`
    /// (no more than `cap` entries live at once). A byte each was 11 % of the history.
    flags: Vec<u8>,
}

// Every flag fits in the four bits an entry has.
const _: () = assert!(flags::SATURATED < 16 && flags::NO_DATA < 16 && flags::PARTIAL < 16);

/// Rates as stored: tx bytes, rx bytes, tx packets, rx packets, each [`pack_rate`]d.
fn pack(r: Rates) -> [u16; 4] {
    [r.tx_bytes, r.rx_bytes, r.tx_packets, r.rx_packets].map(pack_rate)
}

fn unpack(p: [u16; 4]) -> Rates {
    let [tx_bytes, rx_bytes, tx_packets, rx_packets] = p.map(unpack_rate);
    Rates {
        tx_bytes,
        rx_bytes,
        tx_packets,
        rx_packets,
    }
}

/// `f32`'s exponent bias less the stored one: stored exponents 1 to 63 are 2^-23 to 2^39.
const EXP_SHIFT: u32 = 127 - 24;
/// The largest stored rate, 2^39 x (2 - 2^-10): about 1.1e12 a second (8.8 Tb/s).
const PACKED_MAX: u16 = u16::MAX;

/// A rate (never negative) as an unsigned 16-bit float: 6 bits of exponent and 10 of
/// mantissa, rounded to nearest. Below 2^-23 a second it is 0; above the largest it is the
/// largest; not a number is 0.
fn pack_rate(v: f32) -> u16 {
    if v.is_nan() || v <= 0.0 {
        return 0;
    }
    // Rounds the 23-bit mantissa to 10 bits; a carry moves into the exponent, as it should.
    let bits = v.to_bits().saturating_add(1 << 12);
    let exp = bits >> 23;
    if exp <= EXP_SHIFT {
        return 0;
    }
    if exp - EXP_SHIFT > 63 {
        return PACKED_MAX;
    }
    (((exp - EXP_SHIFT) << 10) | ((bits >> 13) & 0x3ff)) as u16
}

fn unpack_rate(p: u16) -> f32 {
    if p == 0 {
        return 0.0;
    }
    let exp = u32::from(p >> 10) + EXP_SHIFT;
    f32::from_bits((exp << 23) | (u32::from(p & 0x3ff) << 13))
}

impl Ring {
    const fn new(cap: usize) -> Ring {
        Ring {
            cap,
            first: 0,
            rates: VecDeque::new(),
            flags: Vec::new(),
        }
    }

    /// The flags of entry `index` (one of those in the ring).
    fn flags_of(&self, index: u64) -> u8 {
        let slot = (index % self.cap as u64) as usize;
        let byte = self.flags.get(slot / 2).copied().unwrap_or(flags::NO_DATA);
        if slot % 2 == 0 {
            byte & 0x0f
        } else {
            byte >> 4
        }
    }

    fn set_flags(&mut self, index: u64, fl: u8) {
        let slot = (index % self.cap as u64) as usize;
        if let Some(byte) = self.flags.get_mut(slot / 2) {
            *byte = if slot % 2 == 0 {
                (*byte & 0xf0) | (fl & 0x0f)
            } else {
                (*byte & 0x0f) | ((fl & 0x0f) << 4)
            };
        }
    }

    /// The index the next entry takes.
    fn next(&self) -> u64 {
        self.first + self.rates.len() as u64
    }

    /// Appends the entry of `index`; false (nothing changed) for an index already passed.
    fn push(&mut self, index: u64, rates: Rates, fl: u8) -> bool {
        if self.rates.is_empty() {
            self.first = index;
        }
        let next = self.next();
        if index < next {
            return false;
        }
        // Indexes missed (the daemon was stopped, the machine suspended) are gaps.
        let gap = (index - next).min(self.cap as u64) as usize;
        if gap == self.cap {
            self.rates.clear();
            self.first = index;
        } else {
            for _ in 0..gap {
                self.push_one(ZERO, flags::NO_DATA);
            }
        }
        self.push_one(rates, fl);
        true
    }

    fn push_one(&mut self, rates: Rates, fl: u8) {
        if self.rates.len() == self.cap {
            self.rates.pop_front();
            self.first += 1;
        }
        if self.rates.capacity() == 0 {
            // The final size in one step, not by doubling (which would leave up to half of
            // every ring unused).
            self.rates.reserve_exact(self.cap);
            self.flags = vec![0; self.cap.div_ceil(2)];
        }
        let index = self.next();
        self.rates.push_back(pack(rates));
        self.set_flags(index, fl);
    }

    /// The entries with data, oldest first, each stamped by `stamp(index)`.
    fn samples(&self, stamp: impl Fn(u64) -> u64) -> Vec<Sample> {
        self.rates
            .iter()
            .enumerate()
            .map(|(i, r)| (self.first + i as u64, r))
            .map(|(index, r)| (index, r, self.flags_of(index)))
            .filter(|(_, _, f)| *f & flags::NO_DATA == 0)
            .map(|(index, r, f)| Sample {
                tick: stamp(index),
                rates: unpack(*r),
                flags: f,
            })
            .collect()
    }
}

/// The coarse bucket being filled: sums of the samples with data so far.
#[derive(Debug, Clone, Copy)]
struct OpenBucket {
    index: u64,
    sum: [f64; 4],
    samples: u8,
    flags: u8,
}

impl OpenBucket {
    fn new(index: u64) -> OpenBucket {
        OpenBucket {
            index,
            sum: [0.0; 4],
            samples: 0,
            flags: 0,
        }
    }

    fn add(&mut self, r: Rates, fl: u8) {
        if fl & flags::NO_DATA != 0 {
            return;
        }
        self.flags |= fl & flags::SATURATED;
        self.samples += 1;
        for (s, v) in self
            .sum
            .iter_mut()
            .zip([r.tx_bytes, r.rx_bytes, r.tx_packets, r.rx_packets])
        {
            *s += f64::from(v);
        }
    }

    /// The bucket's average and flags: over the samples it has, `PARTIAL` when some ticks
    /// had none, `NO_DATA` when none had any.
    fn close(&self) -> (Rates, u8) {
        if self.samples == 0 {
            return (ZERO, flags::NO_DATA);
        }
        let n = f64::from(self.samples);
        let avg = |i: usize| (self.sum[i] / n) as f32;
        let mut fl = self.flags;
        if u64::from(self.samples) < COARSE_TICKS {
            fl |= flags::PARTIAL;
        }
        let rates = Rates {
            tx_bytes: avg(0),
            rx_bytes: avg(1),
            tx_packets: avg(2),
            rx_packets: avg(3),
        };
        (rates, fl)
    }
}

/// One port's rings.
#[derive(Debug)]
pub struct PortHistory {
    fine: Ring,
    coarse: Ring,
    open: Option<OpenBucket>,
    last: Option<Raw>,
}

impl Default for PortHistory {
    fn default() -> Self {
        PortHistory {
            fine: Ring::new(FINE_TICKS),
            coarse: Ring::new(COARSE_LEN),
            open: None,
            last: None,
        }
    }
}

/// Rate of one counter between two readings; `None` when either is missing or it went back
/// (a counter reset, a driver reload).
fn rate(prev: Option<u64>, now: Option<u64>, secs: f64) -> Option<f32> {
    let (p, n) = (prev?, now?);
    (n >= p && secs > 0.0).then(|| ((n - p) as f64 / secs) as f32)
}

impl PortHistory {
    /// Records the counters of `tick`, read `read_at` seconds after a fixed origin (the
    /// engine's clock's start), and returns the sample it produced. Rates are per second of
    /// the time that passed between the two readings, not per nominal tick: on a loaded
    /// machine a poll starts late, and the bytes of that longer interval over one period
    /// would overstate the rate (and understate the next one).
    pub fn record(&mut self, tick: u64, read_at: f64, c: &TrafficCounters) -> Sample {
        let now = Raw {
            tick,
            read_at,
            counters: PolledTraffic {
                tx_bytes: c.tx_bytes.clone().ok(),
                rx_bytes: c.rx_bytes.clone().ok(),
                tx_packets: c.tx_packets.clone().ok(),
                rx_packets: c.rx_packets.clone().ok(),
                saturated: c.saturated,
            },
        };
        let mut fl = if c.saturated { flags::SATURATED } else { 0 };
        let rates = match self.last {
            Some(prev) if prev.tick < tick => {
                let secs = now.read_at - prev.read_at;
                let (p, n) = (prev.counters, now.counters);
                let tx = rate(p.tx_bytes, n.tx_bytes, secs);
                let rx = rate(p.rx_bytes, n.rx_bytes, secs);
                if tx.is_none() && rx.is_none() {
                    fl |= flags::NO_DATA;
                }
                Rates {
                    tx_bytes: tx.unwrap_or(0.0),
                    rx_bytes: rx.unwrap_or(0.0),
                    tx_packets: rate(p.tx_packets, n.tx_packets, secs).unwrap_or(0.0),
                    rx_packets: rate(p.rx_packets, n.rx_packets, secs).unwrap_or(0.0),
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

    /// Appends a tick's sample to the fine ring and to its coarse bucket; when the tick
    /// starts a new bucket, the one before is closed into the coarse ring. A tick recorded
    /// twice keeps the first.
    fn push(&mut self, tick: u64, rates: Rates, fl: u8) {
        if !self.fine.push(tick, rates, fl) {
            return;
        }
        let bucket = tick / COARSE_TICKS;
        let open = match self.open {
            Some(b) if b.index == bucket => self.open.as_mut(),
            Some(b) => {
                let (avg, bfl) = b.close();
                self.coarse.push(b.index, avg, bfl);
                self.open.insert(OpenBucket::new(bucket)).into()
            }
            None => self.open.insert(OpenBucket::new(bucket)).into(),
        };
        if let Some(open) = open {
            open.add(rates, fl);
        }
    }

    /// The fine ring's samples with data, oldest first.
    pub fn samples(&self) -> Vec<Sample> {
        self.fine.samples(|tick| tick)
    }

    /// The traffic counters of the port's last poll, `None` before its first.
    pub fn last_traffic(&self) -> Option<PolledTraffic> {
        self.last.map(|r| r.counters)
    }

    /// The coarse ring's closed buckets with data, oldest first, each stamped with its last
    /// tick. The bucket being filled is not among them (its ticks are in the fine ring).
    pub fn coarse_samples(&self) -> Vec<Sample> {
        self.coarse
            .samples(|bucket| (bucket + 1) * COARSE_TICKS - 1)
    }

    /// Entries in the fine ring, gaps included.
    pub fn len(&self) -> usize {
        self.fine.rates.len()
    }

    /// Buckets in the coarse ring, gaps included.
    pub fn coarse_len(&self) -> usize {
        self.coarse.rates.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fine.rates.is_empty()
    }

    /// Fills an empty history with `rates`, the first at `first_tick` and each a tick after
    /// the one before (`None`: no data for that tick), through both rings as live samples
    /// go. Live readings continue after them.
    pub fn prefill(&mut self, first_tick: u64, rates: impl IntoIterator<Item = Option<Rates>>) {
        if !self.fine.rates.is_empty() || !self.coarse.rates.is_empty() {
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

/// Every port's rings, keyed by (device index, port).
#[derive(Debug, Default)]
pub struct History {
    /// Boxed: the map is filled in key order as ports are first sampled, which leaves its
    /// leaves about half empty (the B-tree splits a full leaf in two), and a leaf of eleven
    /// 264-byte histories is 3 KB; of eleven boxes, 200 bytes.
    ports: BTreeMap<(u32, u32), Box<PortHistory>>,
}

impl History {
    pub fn port_mut(&mut self, key: (u32, u32)) -> &mut PortHistory {
        self.ports.entry(key).or_default()
    }

    pub fn port(&self, key: (u32, u32)) -> Option<&PortHistory> {
        self.ports.get(&key).map(|p| &**p)
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
    fn stored_rates_keep_eleven_significant_bits() {
        // Every binade from 2^-23 to 2^39, at several points in it.
        let mut worst: f64 = 0.0;
        for e in -23..=39 {
            for k in 0..64 {
                let v = 2f32.powi(e) * (1.0 + k as f32 / 64.0 + 0.003);
                let back = unpack_rate(pack_rate(v));
                worst = worst.max(((f64::from(back) - f64::from(v)) / f64::from(v)).abs());
            }
        }
        assert!(worst <= 1.0 / 4096.0, "worst relative error {worst}");
        // Small whole numbers, and those with few significant bits, are kept exactly.
        for v in [1.0, 4.5, 100.0, 2000.0, 4000.0, 14.5, 1.25 * 2f32.powi(30)] {
            assert_eq!(unpack_rate(pack_rate(v)), v);
        }
        // 400 Gb/s is well inside the range.
        let line = 50e9_f32;
        assert!((unpack_rate(pack_rate(line)) / line - 1.0).abs() < 1.0 / 4096.0);
    }

    #[test]
    fn stored_rates_out_of_range_are_zero_or_the_largest() {
        assert_eq!(unpack_rate(pack_rate(0.0)), 0.0);
        assert_eq!(unpack_rate(pack_rate(-1.0)), 0.0);
        assert_eq!(unpack_rate(pack_rate(f32::NAN)), 0.0);
        assert_eq!(unpack_rate(pack_rate(1e-9)), 0.0);
        let max = unpack_rate(PACKED_MAX);
        assert!(max > 1.0e12 && max < 1.2e12, "{max}");
        assert_eq!(unpack_rate(pack_rate(f32::INFINITY)), max);
        assert_eq!(unpack_rate(pack_rate(1e15)), max);
        // The smallest stored rate, and a rounding carry into the next binade.
        assert_eq!(unpack_rate(pack_rate(2f32.powi(-23))), 2f32.powi(-23));
        assert_eq!(unpack_rate(pack_rate(2047.9)), 2048.0);
    }

    #[test]
    fn a_sample_returned_is_exact_and_the_stored_one_close() {
        let mut h = PortHistory::default();
        h.record(1, 1.0, &counters(0, 0));
        // 123 456 789 bytes in a second: 27 significant bits.
        let s = h.record(2, 2.0, &counters(123_456_789, 0));
        assert_eq!(s.rates.tx_bytes, 123_456_789.0);
        let stored = h.samples()[0].rates.tx_bytes;
        assert!(
            (stored / 123_456_789.0 - 1.0).abs() <= 1.0 / 4096.0,
            "{stored}"
        );
    }

    #[test]
    fn a_tick_read_twice_keeps_its_first_reading() {
        let mut h = PortHistory::default();
        h.record(10, 10.0, &counters(1000, 0));
        // Read again 2 ms later: no rate of its own, and the first reading stays.
        let again = h.record(10, 10.002, &counters(1008, 0));
        assert_ne!(again.flags & flags::NO_DATA, 0);
        let s = h.record(11, 11.0, &counters(5000, 0));
        // Over the whole period from the first reading (not 3992 from the second).
        assert_eq!(s.rates.tx_bytes, 4000.0);
    }

    #[test]
    fn rates_from_consecutive_readings() {
        let mut h = PortHistory::default();
        assert_ne!(
            h.record(10, 10.0, &counters(1000, 0)).flags & flags::NO_DATA,
            0
        );
        let s = h.record(11, 11.0, &counters(5000, 2000));
        assert_eq!(s.flags, 0);
        assert_eq!(s.rates.tx_bytes, 4000.0);
        assert_eq!(s.rates.rx_bytes, 2000.0);
        assert_eq!(s.rates.tx_packets, 4.0);
        // Two ticks apart: the rate is per second.
        let s = h.record(13, 13.0, &counters(9000, 2000));
        assert_eq!(s.rates.tx_bytes, 2000.0);
        let got = h.samples();
        assert_eq!(got.iter().map(|s| s.tick).collect::<Vec<_>>(), vec![11, 13]);
        assert_eq!(h.len(), 4, "tick 12 is a gap");
    }

    /// A poll that starts late (a loaded machine) reads the bytes of a longer interval: the
    /// rate is over the time that passed, so a steady 1 GB/s stays 1 GB/s, neither the
    /// 1.9 GB/s of the late tick over a nominal second nor the 0.1 GB/s of the one after.
    #[test]
    fn a_late_reading_is_a_rate_over_the_time_that_passed() {
        const RATE: f64 = 1e9;
        let bytes = |at: f64| (at * RATE) as u64;
        let mut h = PortHistory::default();
        let mut rates = Vec::new();
        for (tick, at) in [(10, 10.0), (11, 11.0), (12, 12.9), (13, 13.0), (14, 14.0)] {
            let s = h.record(tick, at, &counters(bytes(at), bytes(at) / 2));
            if s.flags & flags::NO_DATA == 0 {
                rates.push((s.rates.tx_bytes, s.rates.rx_bytes));
            }
        }
        assert_eq!(rates.len(), 4);
        for (tx, rx) in rates {
            assert!((f64::from(tx) / RATE - 1.0).abs() < 1e-6, "{tx}");
            assert!((f64::from(rx) / RATE - 0.5).abs() < 1e-6, "{rx}");
        }
    }

    #[test]
    fn a_counter_going_back_is_a_reset_not_a_huge_rate() {
        let mut h = PortHistory::default();
        h.record(1, 1.0, &counters(10_000, 10_000));
        let s = h.record(2, 2.0, &counters(10, 10));
        assert_ne!(s.flags & flags::NO_DATA, 0);
        assert!(h.samples().is_empty());
        let s = h.record(3, 3.0, &counters(110, 10));
        assert_eq!(s.rates.tx_bytes, 100.0);
    }

    #[test]
    fn saturation_and_unreadable_counters_are_flagged() {
        let mut h = PortHistory::default();
        let mut c = counters(0, 0);
        c.saturated = true;
        h.record(1, 1.0, &c);
        assert_eq!(h.record(2, 2.0, &c).flags, flags::SATURATED);
        let bad = TrafficCounters {
            tx_bytes: Err(AttrError::Missing),
            rx_bytes: Err(AttrError::Missing),
            tx_packets: Err(AttrError::Missing),
            rx_packets: Err(AttrError::Missing),
            saturated: false,
        };
        assert_ne!(h.record(3, 3.0, &bad).flags & flags::NO_DATA, 0);
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
        h.record(3, 3.0, &counters(0, 0));
        let s = h.record(4, 4.0, &counters(500, 0));
        assert_eq!(s.rates.tx_bytes, 500.0);
        assert_eq!(h.samples().len(), 3);
        // Only an empty ring is filled.
        h.prefill(0, [Some(r(9.0))]);
        assert_eq!(h.len(), 5);
    }

    #[test]
    fn keeps_five_minutes_fine_and_an_hour_coarse_and_no_more() {
        let mut h = PortHistory::default();
        let end = HISTORY_SPAN_TICKS + 100;
        for t in 0..end {
            h.record(t, t as f64, &counters(t * 100, 0));
        }
        assert_eq!(h.len(), FINE_TICKS);
        let s = h.samples();
        assert_eq!(s.len(), FINE_TICKS);
        assert_eq!(s[0].tick, end - FINE_TICKS as u64);
        assert_eq!(h.coarse_len(), COARSE_LEN);
        let c = h.coarse_samples();
        assert_eq!(c.len(), COARSE_LEN);
        // Buckets 0..369 are closed (369, ticks 3690..3700, stays open until tick 3700
        // comes); the ring keeps the last 360 of them, each stamped at its last tick.
        assert_eq!(c[0].tick, 9 * COARSE_TICKS + COARSE_TICKS - 1);
        assert_eq!(c.last().map(|s| s.tick), Some(end - 1 - COARSE_TICKS));
        assert!(c.iter().all(|s| s.flags == 0 && s.rates.tx_bytes == 100.0));
        for cap in [
            h.fine.rates.capacity(),
            h.fine.flags.capacity(),
            h.coarse.rates.capacity(),
            h.coarse.flags.capacity(),
        ] {
            assert!(cap <= COARSE_LEN.max(FINE_TICKS) + 1, "{cap}");
        }
        assert!(h.fine.rates.capacity() <= FINE_TICKS + 1);
        // A gap longer than the whole history starts both rings afresh.
        h.record(100_000, 100_000.0, &counters(0, 0));
        assert_eq!(h.len(), 1);
        h.record(100_010, 100_010.0, &counters(0, 0));
        assert_eq!(h.coarse_len(), 1, "bucket 10000 closed, alone");
        // Its one tick's RX rate is known (0 before and after), the TX counter went back.
        let c = h.coarse_samples();
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].tick, c[0].flags), (100_009, flags::PARTIAL));
    }

    fn flat(v: f32) -> Rates {
        Rates {
            tx_bytes: v,
            rx_bytes: 2.0 * v,
            tx_packets: v * 4.0,
            rx_packets: 0.0,
        }
    }

    /// A bucket averages the ticks it covers, closes when the first tick of the next comes,
    /// and is stamped with its last tick.
    #[test]
    fn a_bucket_averages_its_ten_ticks() {
        let mut h = PortHistory::default();
        h.prefill(0, (0..20).map(|t| Some(flat(t as f32))));
        // Bucket 1 (ticks 10..20) is still open: nothing of it in the coarse ring.
        let c = h.coarse_samples();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].tick, 9);
        assert_eq!(c[0].flags, 0);
        // (0 + 1 + ... + 9) / 10
        assert_eq!(c[0].rates, flat(4.5));
        h.prefill(0, [Some(flat(1.0))]); // only an empty history is filled
        h.push(20, flat(0.0), 0);
        let c = h.coarse_samples();
        assert_eq!(c.len(), 2);
        assert_eq!((c[1].tick, c[1].rates), (19, flat(14.5)));
    }

    /// Gaps are not zeros: a bucket averages the samples it has and says it is partial; a
    /// bucket with none is a gap of the coarse ring.
    #[test]
    fn flags_stay_with_their_entries_as_the_ring_wraps() {
        // An odd capacity: entries change nibble and byte as the ring goes round.
        let mut r = Ring::new(5);
        let fl = |i: u64| match i % 3 {
            0 => flags::SATURATED,
            1 => 0,
            _ => flags::SATURATED | flags::PARTIAL,
        };
        for i in 100..117 {
            assert!(r.push(i, flat(i as f32), fl(i)));
        }
        let got: Vec<(u64, u8, f32)> = r
            .samples(|i| i)
            .iter()
            .map(|s| (s.tick, s.flags, s.rates.tx_bytes))
            .collect();
        let want: Vec<(u64, u8, f32)> = (112..117).map(|i| (i, fl(i), i as f32)).collect();
        assert_eq!(got, want);
        // A gap entry in the middle has no data and is left out.
        assert!(r.push(118, flat(1.0), 0));
        let ticks: Vec<u64> = r.samples(|i| i).iter().map(|s| s.tick).collect();
        assert_eq!(ticks, vec![114, 115, 116, 118]);
        assert_ne!(r.flags_of(117) & flags::NO_DATA, 0);
    }

    #[test]
    fn a_bucket_with_gaps_averages_what_it_has_and_is_partial() {
        let mut h = PortHistory::default();
        // Bucket 0: ticks 0..5 with data (10 each), 5..10 none. Bucket 1: all none.
        // Bucket 2: ticks 20, 21 missed (never recorded), the rest 30.
        let rates = (0..30).map(|t| match t {
            0..5 => Some(flat(10.0)),
            5..20 => None,
            _ => Some(flat(30.0)),
        });
        h.prefill(0, rates.take(20));
        for t in 22..31 {
            h.push(t, flat(30.0), 0);
        }
        let c = h.coarse_samples();
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!(
            (c[0].tick, c[0].rates, c[0].flags),
            (9, flat(10.0), flags::PARTIAL)
        );
        assert_eq!(
            (c[1].tick, c[1].rates, c[1].flags),
            (29, flat(30.0), flags::PARTIAL)
        );
        assert_eq!(h.coarse_len(), 3, "bucket 1 holds its place as a gap");
        assert_ne!(h.coarse.flags_of(1) & flags::NO_DATA, 0);
    }

    #[test]
    fn saturation_propagates_to_the_bucket() {
        let mut h = PortHistory::default();
        for t in 0..10 {
            let fl = if t == 3 { flags::SATURATED } else { 0 };
            h.push(t, flat(5.0), fl);
        }
        for t in 10..21 {
            h.push(t, flat(5.0), 0);
        }
        let c = h.coarse_samples();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].flags, flags::SATURATED);
        assert_eq!(c[1].flags, 0);
    }

    /// A counter reset is a tick without a rate, not a huge or negative one: its bucket
    /// averages the other ticks.
    #[test]
    fn a_counter_reset_leaves_a_partial_bucket_not_a_spike() {
        let mut h = PortHistory::default();
        let mut bytes = 0u64;
        for t in 0..=20 {
            bytes = if t == 13 { 7 } else { bytes + 1000 };
            h.record(t, t as f64, &counters(bytes, bytes));
        }
        let c = h.coarse_samples();
        assert_eq!(c.len(), 2);
        // Tick 0 had nothing to compare with; tick 13 went back.
        assert_eq!(c[0].flags, flags::PARTIAL);
        assert_eq!(c[1].flags, flags::PARTIAL);
        assert_eq!(c[1].rates.tx_bytes, 1000.0);
    }

    /// The coarse ring rolls over as the fine one does: the oldest bucket leaves when a
    /// new one closes into a full ring; buckets the daemon missed are gaps.
    #[test]
    fn the_coarse_ring_rolls_over_and_keeps_missed_buckets_as_gaps() {
        let mut h = PortHistory::default();
        let full = COARSE_LEN as u64 * COARSE_TICKS;
        h.prefill(
            0,
            (0..full + 1).map(|t| Some(flat((t / COARSE_TICKS) as f32))),
        );
        assert_eq!(h.coarse_len(), COARSE_LEN);
        assert_eq!(h.coarse_samples()[0].rates, flat(0.0));
        h.push(full + COARSE_TICKS, flat(1.0), 0);
        let c = h.coarse_samples();
        assert_eq!(c.len(), COARSE_LEN);
        assert_eq!(c[0].rates, flat(1.0), "bucket 0 left");
        assert_eq!(
            c.last().map(|s| s.flags),
            Some(flags::PARTIAL),
            "one tick of ten"
        );
        // Two buckets missed (the daemon was stopped): gaps, so times stay right.
        h.push(full + 4 * COARSE_TICKS, flat(1.0), 0);
        h.push(full + 5 * COARSE_TICKS, flat(1.0), 0);
        let c = h.coarse_samples();
        assert_eq!(c.last().map(|s| s.tick), Some(full + 5 * COARSE_TICKS - 1));
        assert_eq!(c[c.len() - 2].tick, full + 2 * COARSE_TICKS - 1);
        assert_eq!(h.coarse_len(), COARSE_LEN);
        assert_eq!(c.len(), COARSE_LEN - 2);
    }
}
