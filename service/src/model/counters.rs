//! Port counters, where they came from, and the rates over a tick computed from them.
//!
//! Bandwidth for a port comes, in order, from `counters/port_{xmit,rcv}_data` (PMA, 4-octet
//! words), from byte counters among `hw_counters` if the driver has any, else from the port's
//! netdev statistics (RoCE, iWARP, rxe, siw).

use serde::Serialize;

use super::attr::Field;

/// Width of the PMA PortCounters. Without the extended-width capability the data and packet
/// counters are 32 bits and stop at all ones (at 100 Gb/s in about 1.4 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CounterWidth {
    Bits32,
    Bits64,
}

/// Where a port's traffic is counted and which netdev carries it; decided when the device is
/// read, not at every poll.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortSource {
    pub port: u32,
    /// The netdev carrying the port's traffic (RoCE, rxe, siw, or the IPoIB netdev of the
    /// same PCI function and `dev_port`).
    pub netdev: Option<String>,
    pub counters: CounterSource,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum CounterSource {
    /// `counters/port_*_data` x 4.
    Pma(CounterWidth),
    /// Byte counters found among the driver's `hw_counters`.
    HwCounters,
    /// `/sys/class/net/<netdev>/statistics`.
    Netdev(String),
    /// No source of byte counts exists for this port.
    None,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterSnapshot {
    pub source: CounterSource,
    /// Bytes (PMA data words already multiplied by 4).
    pub tx_bytes: Field<u64>,
    pub rx_bytes: Field<u64>,
    pub tx_packets: Field<u64>,
    pub rx_packets: Field<u64>,
    /// True when a 32-bit PMA counter sits at all ones: the true value is unknown and the
    /// rate computed from it is a lower bound.
    pub saturated: bool,
    /// Error and other counters of `counters/` (name, value), sorted by name.
    pub pma: Vec<(String, u64)>,
    /// Driver `hw_counters` (name, value), sorted by name; `lifespan` excluded.
    pub hw: Vec<(String, u64)>,
}

/// All ones for a 32-bit PMA data or packet counter.
pub const PMA32_SATURATED: u64 = 0xffff_ffff;

/// Names of hw_counters that count bytes, in the order they are preferred.
pub const HW_BYTE_COUNTERS: [(&str, &str); 2] = [
    ("tx_bytes", "rx_bytes"),
    ("port_xmit_bytes", "port_rcv_bytes"),
];

/// Rates over one tick.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rates {
    pub tx_bytes: f32,
    pub rx_bytes: f32,
    pub tx_packets: f32,
    pub rx_packets: f32,
}

/// Rates a port had before the daemon started, for hosts that can tell (the simulated demo
/// host's traffic model): the history is filled from them at start, so graphs are full at
/// once. Real hardware keeps no such past; the daemon's own history starts with it.
pub trait HistorySeed: Send + Sync + std::fmt::Debug {
    /// The rates of `device` port `port` `ago` ticks before the first tick (1: the tick just
    /// before); `None` for a port the seed does not know.
    fn past_rates(&self, device: &str, port: u32, ago: u64) -> Option<Rates>;
}
