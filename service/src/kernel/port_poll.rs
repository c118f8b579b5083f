//! The 1 Hz port poll: each port's state, physical state, LIDs and the four traffic counters
//! of its counter source, read through file descriptors kept open between polls.
//!
//! Why keep them open: a full poll of 512 ports is about 4000 attribute reads a second; an
//! open/read/close of each costs several times a `pread` at offset 0. sysfs regenerates an
//! attribute's text on every read from offset 0 (seq_file resets at position 0), so a kept
//! descriptor always reads the current value. A descriptor whose read fails is dropped and the
//! file is opened afresh on the next poll; callers [`PortPoller::forget`] a device whenever they
//! re-read it, so a device unplugged and plugged again under the same name is never read
//! through a stale descriptor.
//!
//! Kept descriptors are bounded: at most a budget of them (see
//! [`super::rlimit::keep_open_budget`]), the first files polled; past it a file is opened,
//! read and closed at each poll. A host of 256 rxe devices has about 2000 polled files, which
//! kept open would take the whole default limit of 1024.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::link_stats::{LinkCounters, LinkStats};
use super::sysfs::SysRoot;
use crate::model::attr::{parse_dec, parse_hex_u32};
use crate::model::counters::PMA32_SATURATED;
use crate::model::{AttrError, CounterSource, CounterWidth, Errno, Field, PhysState, PortState};

/// One port to poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollTarget {
    pub dev: String,
    pub port: u32,
    pub counters: CounterSource,
    /// Whether the port's `state` and `phys_state` are polled: not on a soft device's port
    /// (rxe, siw), whose state follows its netdev, whose rtnetlink events re-read it; there
    /// both read as [`AttrError::Missing`] without a read.
    pub state: bool,
    /// Whether the port has LIDs to poll: not on Ethernet (see [`super::sysfs::has_lids`]),
    /// where `lid` and `sm_lid` read 0 and are not read.
    pub lids: bool,
}

/// Traffic counters as read (bytes, PMA data words already multiplied by 4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrafficCounters {
    pub tx_bytes: Field<u64>,
    pub rx_bytes: Field<u64>,
    pub tx_packets: Field<u64>,
    pub rx_packets: Field<u64>,
    /// A 32-bit PMA counter sits at all ones: its true value is unknown.
    pub saturated: bool,
}

/// One port's poll result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortReading {
    pub state: Field<PortState>,
    pub phys_state: Field<PhysState>,
    pub lid: Field<u32>,
    pub sm_lid: Field<u32>,
    pub traffic: TrafficCounters,
}

/// Polls ports. Blocking: run it on the blocking pool.
pub trait PortPoller: Send + Sync {
    fn poll(&mut self, targets: &[PollTarget]) -> Vec<PortReading>;
    /// Drops every descriptor kept for a device (it was re-read, renamed or removed).
    fn forget(&mut self, dev: &str);
}

/// The file names of a counter source, in tx bytes, rx bytes, tx packets, rx packets order,
/// relative to the port directory (or to `/sys/class/net/<netdev>/statistics`).
fn counter_files(source: &CounterSource) -> Option<[&'static str; 4]> {
    match source {
        CounterSource::Pma(_) => Some([
            "counters/port_xmit_data",
            "counters/port_rcv_data",
            "counters/port_xmit_packets",
            "counters/port_rcv_packets",
        ]),
        CounterSource::Netdev(_) => Some(["tx_bytes", "rx_bytes", "tx_packets", "rx_packets"]),
        // hw_counters byte counters have no packet counterparts of a fixed name.
        CounterSource::HwCounters | CounterSource::None => None,
    }
}

/// The poller for sysfs-backed hosts (the real one and the simulated one).
pub struct SysfsPortPoller {
    sys: SysRoot,
    /// Open attribute files, with the device they belong to (for `forget`).
    /// Keyed by the path's bytes: hashing a `PathBuf` walks its components, which was a
    /// good part of a 1 Hz poll's CPU on hundreds of ports.
    files: HashMap<OsString, (String, File)>,
    buf: Vec<u8>,
    /// Whether descriptors are kept between polls: on sysfs, where a kept descriptor reads
    /// the current value. A tree whose files are replaced by rename (the simulated host's)
    /// must be reopened at every read, or a kept descriptor reads the old file forever.
    keep_open: bool,
    /// The most descriptors kept between polls.
    budget: usize,
    /// Every netdev's counters in one dump (rtnetlink on a real host), for ports counted on
    /// their netdev; `None` reads their `statistics/*` files.
    link_stats: Option<Box<dyn LinkStats>>,
    /// This poll's dump, by ifindex (empty when there is none or it failed).
    dumped: HashMap<u32, LinkCounters>,
    /// Netdev name to ifindex, with the device whose port it counts (for `forget`).
    ifindex: HashMap<String, (String, u32)>,
}

impl SysfsPortPoller {
    /// A poller that keeps up to `budget` descriptors (the real sysfs).
    pub fn new(sys: SysRoot, budget: usize) -> SysfsPortPoller {
        SysfsPortPoller {
            sys,
            files: HashMap::new(),
            buf: vec![0; 64],
            keep_open: true,
            budget,
            link_stats: None,
            dumped: HashMap::new(),
            ifindex: HashMap::new(),
        }
    }

    /// Reads the counters of netdev-counted ports from one dump a poll instead of their files.
    pub fn with_link_stats(mut self, stats: Box<dyn LinkStats>) -> SysfsPortPoller {
        self.link_stats = Some(stats);
        self
    }

    /// A netdev's counters from this poll's dump, if it has them.
    fn dumped_counters(&mut self, dev: &str, netdev: &str) -> Option<LinkCounters> {
        if self.dumped.is_empty() {
            return None;
        }
        let index = match self.ifindex.get(netdev) {
            Some((_, i)) => *i,
            None => {
                let path = self.sys.netdev_dir(netdev).join("ifindex");
                let i = super::sysfs::read_attr(&path)
                    .ok()
                    .and_then(|t| parse_dec::<u32>(&t).ok())?;
                self.ifindex
                    .insert(netdev.to_string(), (dev.to_string(), i));
                i
            }
        };
        let got = self.dumped.get(&index).copied();
        if got.is_none() {
            // Gone, or another interface has the name now: looked up again next time.
            self.ifindex.remove(netdev);
        }
        got
    }

    /// How many descriptors the poller holds now.
    pub fn kept_open(&self) -> usize {
        self.files.len()
    }

    /// A poller that opens every file afresh at each read, for a tree whose files are
    /// replaced atomically rather than rewritten (the simulated host).
    pub fn reopening(sys: SysRoot) -> SysfsPortPoller {
        SysfsPortPoller {
            keep_open: false,
            ..SysfsPortPoller::new(sys, 0)
        }
    }

    fn read(&mut self, dev: &str, path: PathBuf) -> Field<String> {
        if !self.keep_open {
            self.files.clear();
        }
        // Through a kept descriptor or not, the attribute's code runs at every read.
        super::sim::cost::charge(super::sim::cost::CostOp::SysfsFile, 1);
        if let Some((_, file)) = self.files.get(path.as_os_str()) {
            return match file.read_at(&mut self.buf, 0) {
                Ok(n) => Ok(String::from_utf8_lossy(&self.buf[..n]).into_owned()),
                Err(e) => {
                    self.files.remove(path.as_os_str());
                    Err(AttrError::Unreadable(Errno::from_io(&e)))
                }
            };
        }
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Err(AttrError::Missing),
            Err(e) => return Err(AttrError::Unreadable(Errno::from_io(&e))),
        };
        let read = match file.read_at(&mut self.buf, 0) {
            Ok(n) => Ok(String::from_utf8_lossy(&self.buf[..n]).into_owned()),
            Err(e) => return Err(AttrError::Unreadable(Errno::from_io(&e))),
        };
        // Kept only while within the budget (and a kept descriptor reads the current value);
        // otherwise it closes here.
        if self.keep_open && self.files.len() < self.budget {
            self.files
                .insert(path.into_os_string(), (dev.to_string(), file));
        }
        read
    }

    fn read_with<T>(
        &mut self,
        dev: &str,
        path: PathBuf,
        parse: impl FnOnce(&str) -> Field<T>,
    ) -> Field<T> {
        self.read(dev, path).and_then(|raw| parse(&raw))
    }

    fn poll_one(&mut self, t: &PollTarget) -> PortReading {
        let dir = self.sys.port_dir(&t.dev, t.port);
        let (state, phys_state) = if t.state {
            (
                self.read_with(&t.dev, dir.join("state"), PortState::parse_sysfs),
                self.read_with(&t.dev, dir.join("phys_state"), PhysState::parse_sysfs),
            )
        } else {
            (Err(AttrError::Missing), Err(AttrError::Missing))
        };
        let (lid, sm_lid) = if t.lids {
            (
                self.read_with(&t.dev, dir.join("lid"), parse_hex_u32),
                self.read_with(&t.dev, dir.join("sm_lid"), parse_hex_u32),
            )
        } else {
            (Ok(0), Ok(0))
        };
        let traffic = self.traffic(t, &dir);
        PortReading {
            state,
            phys_state,
            lid,
            sm_lid,
            traffic,
        }
    }

    fn traffic(&mut self, t: &PollTarget, port_dir: &Path) -> TrafficCounters {
        let base = match &t.counters {
            CounterSource::Netdev(nd) => {
                if let Some(c) = self.dumped_counters(&t.dev, nd) {
                    return TrafficCounters {
                        tx_bytes: Ok(c.tx_bytes),
                        rx_bytes: Ok(c.rx_bytes),
                        tx_packets: Ok(c.tx_packets),
                        rx_packets: Ok(c.rx_packets),
                        saturated: false,
                    };
                }
                self.sys.netdev_dir(nd).join("statistics")
            }
            _ => port_dir.to_path_buf(),
        };
        let Some(names) = counter_files(&t.counters) else {
            return TrafficCounters {
                tx_bytes: Err(AttrError::Missing),
                rx_bytes: Err(AttrError::Missing),
                tx_packets: Err(AttrError::Missing),
                rx_packets: Err(AttrError::Missing),
                saturated: false,
            };
        };
        let mut v = names.map(|n| self.read_with(&t.dev, base.join(n), parse_dec::<u64>));
        let saturated = t.counters == CounterSource::Pma(CounterWidth::Bits32)
            && v.iter()
                .any(|x| matches!(x, Ok(n) if *n >= PMA32_SATURATED));
        if matches!(t.counters, CounterSource::Pma(_)) {
            // PMA data counters count 4-octet words.
            for x in v.iter_mut().take(2) {
                *x = x.clone().map(|w| w.saturating_mul(4));
            }
        }
        let [tx_bytes, rx_bytes, tx_packets, rx_packets] = v;
        TrafficCounters {
            tx_bytes,
            rx_bytes,
            tx_packets,
            rx_packets,
            saturated,
        }
    }
}

impl PortPoller for SysfsPortPoller {
    fn poll(&mut self, targets: &[PollTarget]) -> Vec<PortReading> {
        self.dumped.clear();
        let netdev_counted = targets
            .iter()
            .any(|t| matches!(t.counters, CounterSource::Netdev(_)));
        if let (true, Some(stats)) = (netdev_counted, self.link_stats.as_mut()) {
            match stats.dump() {
                Ok(d) => self.dumped = d,
                // The files are read instead, this poll.
                Err(e) => tracing::debug!(error = %e, "netdev counters dump failed"),
            }
        }
        targets.iter().map(|t| self.poll_one(t)).collect()
    }

    fn forget(&mut self, dev: &str) {
        self.files.retain(|_, (d, _)| d != dev);
        self.ifindex.retain(|_, (d, _)| d != dev);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::sim::{fixtures, SimHost};

    #[test]
    fn polls_pma_and_netdev_sources_and_sees_new_values() {
        let sim = SimHost::new(fixtures::demo_host()).expect("sim");
        let devices = sim.sysroot().rdma_device_names().expect("names");
        let mut targets = Vec::new();
        for d in &devices {
            for p in sim.sysroot().port_sources(d).expect("sources") {
                targets.push(PollTarget {
                    dev: d.clone(),
                    port: p.port,
                    counters: p.counters,
                    lids: true,
                    state: true,
                });
            }
        }
        let pma = targets
            .iter()
            .position(|t| matches!(t.counters, CounterSource::Pma(_)))
            .expect("a PMA port in the demo host");
        let mut poller = SysfsPortPoller::reopening(sim.sysroot().clone());
        let before = poller.poll(&targets);
        assert!(before[pma].state.is_ok());
        let tx0 = before[pma].traffic.tx_bytes.clone().expect("tx");
        let t = &targets[pma];
        sim.add_traffic(&t.dev, t.port, 4000, 8000)
            .expect("traffic");
        let after = poller.poll(&targets);
        assert_eq!(after[pma].traffic.tx_bytes, Ok(tx0 + 4000));
        // The same reading through a fresh poller: what the poller holds is not stale.
        assert_eq!(
            SysfsPortPoller::reopening(sim.sysroot().clone()).poll(&targets),
            after
        );
    }

    /// The poll of a host with far more files than the budget never holds more than the
    /// budget, reads every file all the same, and a device forgotten frees its slots for
    /// others.
    #[test]
    fn kept_descriptors_never_exceed_the_budget() {
        // 64 devices x 2 ports x (4 attributes + 4 PMA counters): 1024 polled files.
        let sim = SimHost::new(fixtures::large_host(64, 2, 0)).expect("sim");
        let mut targets = Vec::new();
        for d in sim.sysroot().rdma_device_names().expect("names") {
            for p in sim.sysroot().port_sources(&d).expect("sources") {
                targets.push(PollTarget {
                    dev: d.clone(),
                    port: p.port,
                    counters: p.counters,
                    lids: true,
                    state: true,
                });
            }
        }
        assert_eq!(targets.len(), 128);
        let fds = || std::fs::read_dir("/proc/self/fd").map(|d| d.count()).ok();
        let before = fds();
        let budget = 100;
        let mut poller = SysfsPortPoller::new(sim.sysroot().clone(), budget);
        let readings = poller.poll(&targets);
        assert_eq!(poller.kept_open(), budget);
        // What this process holds, not only what the poller counts. Other tests of this
        // binary may run in parallel threads under `cargo test`; nextest runs each alone.
        if let (Some(b), Some(a), true) = (before, fds(), std::env::var_os("NEXTEST").is_some()) {
            assert!(a <= b + budget, "{a} descriptors open, {b} before the poll");
        }
        // Every file was read, kept or not: the same as a poller that keeps none.
        assert!(readings
            .iter()
            .all(|r| r.state.is_ok() && r.traffic.tx_bytes.is_ok()));
        assert_eq!(
            readings,
            SysfsPortPoller::reopening(sim.sysroot().clone()).poll(&targets)
        );
        for _ in 0..3 {
            poller.poll(&targets);
            assert_eq!(poller.kept_open(), budget);
        }
        // The first device held the first 16 slots; forgotten, others take them.
        poller.forget(&targets[0].dev);
        assert_eq!(poller.kept_open(), budget - 16);
        poller.poll(&targets);
        assert_eq!(poller.kept_open(), budget);
    }

    /// A dump that answers with fixed counters for one ifindex, or fails, and counts calls.
    struct FakeStats {
        ifindex: u32,
        fail: bool,
        calls: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    impl LinkStats for FakeStats {
        fn dump(&mut self) -> std::io::Result<HashMap<u32, LinkCounters>> {
            self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if self.fail {
                return Err(std::io::Error::from_raw_os_error(libc::ENOBUFS));
            }
            let c = LinkCounters {
                tx_bytes: 111,
                rx_bytes: 222,
                tx_packets: 3,
                rx_packets: 4,
            };
            Ok(HashMap::from([(self.ifindex, c)]))
        }
    }

    fn netdev_targets(sim: &SimHost) -> Vec<PollTarget> {
        let mut targets = Vec::new();
        for d in sim.sysroot().rdma_device_names().expect("names") {
            for p in sim.sysroot().port_sources(&d).expect("sources") {
                if matches!(p.counters, CounterSource::Netdev(_)) {
                    targets.push(PollTarget {
                        dev: d.clone(),
                        port: p.port,
                        counters: p.counters,
                        lids: false,
                        state: true,
                    });
                }
            }
        }
        targets
    }

    /// Ports counted on their netdev take their counters from one dump a poll, not from the
    /// netdev's `statistics/*` files (removed here: the poll still has the dump's values);
    /// when the dump fails, the files are read.
    #[test]
    fn netdev_counters_come_from_one_dump_a_poll() {
        let sim = SimHost::new(fixtures::demo_host()).expect("sim");
        let targets = netdev_targets(&sim);
        let CounterSource::Netdev(nd) = targets.first().expect("a RoCE port").counters.clone()
        else {
            unreachable!()
        };
        let ifindex: u32 = std::fs::read_to_string(sim.sysroot().netdev_dir(&nd).join("ifindex"))
            .expect("ifindex")
            .trim()
            .parse()
            .expect("number");
        let by_files = SysfsPortPoller::reopening(sim.sysroot().clone()).poll(&targets);
        assert!(by_files[0].traffic.tx_bytes.is_ok());
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let failing = FakeStats {
            ifindex,
            fail: true,
            calls: calls.clone(),
        };
        let mut poller =
            SysfsPortPoller::reopening(sim.sysroot().clone()).with_link_stats(Box::new(failing));
        assert_eq!(poller.poll(&targets), by_files);
        let fake = FakeStats {
            ifindex,
            fail: false,
            calls: calls.clone(),
        };
        let mut poller =
            SysfsPortPoller::reopening(sim.sysroot().clone()).with_link_stats(Box::new(fake));
        std::fs::remove_dir_all(sim.sysroot().netdev_dir(&nd).join("statistics"))
            .expect("remove statistics");
        let got = poller.poll(&targets);
        let t = &got[0].traffic;
        assert_eq!(
            (&t.tx_bytes, &t.rx_bytes, &t.tx_packets, &t.rx_packets),
            (&Ok(111), &Ok(222), &Ok(3), &Ok(4))
        );
        // One dump for the whole poll, whatever the number of ports.
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    /// An Ethernet port's LIDs are not read (they are always 0 there): its files are not
    /// even opened, while an InfiniBand port's are.
    #[test]
    fn lids_are_polled_only_where_the_port_has_them() {
        let sim = SimHost::new(fixtures::demo_host()).expect("sim");
        let targets = netdev_targets(&sim);
        let t = targets.first().expect("a RoCE port");
        let lid = sim.sysroot().port_dir(&t.dev, t.port).join("lid");
        std::fs::remove_file(&lid).expect("remove lid");
        let mut poller = SysfsPortPoller::reopening(sim.sysroot().clone());
        let r = &poller.poll(std::slice::from_ref(t))[0];
        assert_eq!((&r.lid, &r.sm_lid), (&Ok(0), &Ok(0)));
        let with_lids = PollTarget {
            lids: true,
            ..t.clone()
        };
        assert_eq!(
            poller.poll(std::slice::from_ref(&with_lids))[0].lid,
            Err(AttrError::Missing)
        );
    }

    #[test]
    fn a_vanished_device_reads_as_missing_after_forget() {
        let sim = SimHost::new(fixtures::demo_host()).expect("sim");
        let dev = sim.sysroot().rdma_device_names().expect("names")[0].clone();
        let target = PollTarget {
            dev: dev.clone(),
            port: 1,
            counters: CounterSource::None,
            lids: true,
            state: true,
        };
        let mut poller = SysfsPortPoller::reopening(sim.sysroot().clone());
        assert!(poller.poll(std::slice::from_ref(&target))[0].state.is_ok());
        sim.unplug(&dev).expect("unplug");
        poller.forget(&dev);
        assert_eq!(
            poller.poll(std::slice::from_ref(&target))[0].state,
            Err(AttrError::Missing)
        );
    }
}
