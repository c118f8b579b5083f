//! The 1 Hz port poll: each port's state, physical state, LIDs and the four traffic counters
//! of its counter source, read through file descriptors kept open between polls (a PMA
//! packet counter only when its data counter moved: see `traffic`).
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
//! read and closed at each poll. A host of 256x2 InfiniBand ports has about 4000 polled
//! files, which kept open would take four times the default soft limit of 1024.
//!
//! The simulated host replaces its files by rename, where sysfs regenerates them: its poller
//! keeps descriptors all the same and is told which devices' files were replaced
//! ([`ReplacedFiles`]), so that it costs what the real poll costs.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::FileExt;

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
    /// When the port's `state` and `phys_state` are polled; not read, both are
    /// [`AttrError::Missing`] in the reading.
    pub state: StatePoll,
    /// Whether the port has LIDs to poll: not on Ethernet (see [`super::sysfs::has_lids`]),
    /// where `lid` and `sm_lid` read 0 and are not read.
    pub lids: bool,
}

/// When the poll reads a port's `state` and `phys_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatePoll {
    /// At every poll: nothing else says when they move.
    EveryPoll,
    /// With the LIDs, in the port's turn (see [`LidTurn`]): the device's uverbs async events
    /// say when the state moves (see `port_events`), and the turn catches what no event
    /// announces (a physical state that moves while the port stays DOWN).
    InTurn,
    /// Never: a soft device's port (rxe, siw), whose state follows its netdev, whose
    /// rtnetlink events re-read it.
    Never,
}

impl StatePoll {
    /// Whether this poll reads them, `in_turn` saying whether it is the port's turn.
    pub fn read(self, in_turn: bool) -> bool {
        match self {
            StatePoll::EveryPoll => true,
            StatePoll::InTurn => in_turn,
            StatePoll::Never => false,
        }
    }
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
    /// `None`: not read by this poll (not the port's turn, see [`LidTurn`], or a port
    /// without LIDs).
    pub lid: Option<Field<u32>>,
    pub sm_lid: Option<Field<u32>>,
    pub traffic: TrafficCounters,
}

/// Which ports' `lid` and `sm_lid` a poll reads: the targets whose place in the list is
/// `phase` modulo `every`, so that each port's are read once every `every` polls.
///
/// Why not every second: they are a quarter of an InfiniBand port's polled files, and they
/// change only when a subnet manager assigns addresses,
/// which it does while bringing the port up (the port's state moves, and a port that moved
/// is re-read whole at once) or in a fail-over that leaves the port ACTIVE (seen within
/// `every` polls instead of one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LidTurn {
    pub every: usize,
    pub phase: usize,
}

impl LidTurn {
    /// Every port's LIDs at every poll.
    pub const ALL: LidTurn = LidTurn { every: 1, phase: 0 };

    /// The turn of poll number `poll` when each port's LIDs are read every `every` polls.
    pub fn of(poll: u64, every: usize) -> LidTurn {
        let every = every.max(1);
        LidTurn {
            every,
            phase: (poll % every as u64) as usize,
        }
    }

    /// Whether the target at place `i` reads its LIDs in this turn.
    pub fn includes(&self, i: usize) -> bool {
        i % self.every.max(1) == self.phase
    }
}

/// Which devices' files were replaced since a poller last asked: see [`ReplacedFiles`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replaced {
    Nothing,
    Devices(Vec<String>),
    Everything,
}

/// A tree whose files are replaced rather than regenerated at each read (the simulated
/// host's, see `sim::replaced`): a descriptor kept open on a replaced file reads its old
/// value, so the poller drops what it keeps of the devices named before each poll.
pub trait ReplacedFiles: Send + Sync {
    /// What was replaced since the mark `seen`, which it moves on.
    fn since(&self, seen: &mut u64) -> Replaced;
}

impl<T: ReplacedFiles + ?Sized> ReplacedFiles for std::sync::Arc<T> {
    fn since(&self, seen: &mut u64) -> Replaced {
        (**self).since(seen)
    }
}

/// Polls ports. Blocking: run it on the blocking pool.
pub trait PortPoller: Send + Sync {
    /// Reads every target's state and counters, and the LIDs of those in `lids`' turn.
    fn poll(&mut self, targets: &[PollTarget], lids: LidTurn) -> Vec<PortReading>;
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

/// A file the poll reads in a port's directory.
#[derive(Debug, Clone, Copy)]
enum PortFile {
    State,
    PhysState,
    Lid,
    SmLid,
    /// The n-th of [`counter_files`] (PMA counters).
    Counter(u8),
}

/// A kept port file's key: the device's slot, the port and the file, in one number.
fn port_file_key(slot: u32, port: u32, file: PortFile) -> u64 {
    let file = match file {
        PortFile::State => 0,
        PortFile::PhysState => 1,
        PortFile::Lid => 2,
        PortFile::SmLid => 3,
        PortFile::Counter(n) => 4 + u64::from(n),
    };
    // Ports are numbered from 1 to at most 255 on InfiniBand; 24 bits are kept.
    (u64::from(slot) << 32) | ((u64::from(port) & 0xff_ffff) << 8) | file
}

/// The device slot of a key of [`port_file_key`].
fn key_slot(key: u64) -> u32 {
    (key >> 32) as u32
}

/// A port's PMA counters as last read (data words, packets; tx, rx): see `traffic`.
#[derive(Debug, Clone, Copy)]
struct LastPma {
    data: [u64; 2],
    packets: [u64; 2],
}

/// The poller for sysfs-backed hosts (the real one and the simulated one).
pub struct SysfsPortPoller {
    sys: SysRoot,
    /// Open attribute files of ports, by [`port_file_key`]: a number, not the path (on
    /// 256x2 ports some 4000 files are kept, and a path and a device name each took ten
    /// times the room of the descriptor; hashing a `PathBuf` walked its components).
    files: HashMap<u64, File>,
    /// Each PMA-counted port's counters as last read, by the key of its first counter file:
    /// a packet counter is read only when its data counter moved.
    last_pma: HashMap<u64, LastPma>,
    /// Each device's number in the keys of `files`, given when it is first polled and
    /// dropped by `forget` (never given again: a device back under its name is new).
    slots: HashMap<String, u32>,
    next_slot: u32,
    /// Open statistics files of netdevs (ports counted by their netdev where no dump is
    /// had), by path, with the device whose port they count: rare, and the netdev's name is
    /// part of what identifies them.
    netdev_files: HashMap<OsString, (String, File)>,
    buf: Vec<u8>,
    /// The path of the file being read, as bytes, built in place (a port's directory, then
    /// each file's name after it) instead of a `PathBuf` joined anew for every file.
    path: Vec<u8>,
    /// `/sys/class/infiniband` under the root, the start of every port's path.
    ib_class: OsString,
    /// Where in `path` the part relative to the device's directory starts (`ports/...`);
    /// `None` while `path` is not under a device (a netdev's statistics).
    rel: Option<usize>,
    /// Each device's directory, opened once (`O_PATH`) as the base of an `openat` of every
    /// file not kept open: the kernel then walks `ports/1/state` instead of the whole path
    /// (on sysfs through the class link into `/sys/devices`), 3 or 4 names instead of 7 to
    /// 14, at every open. Counted in the budget with the kept files.
    dirs: HashMap<String, File>,
    /// The relative path with its NUL, for `openat`.
    cpath: Vec<u8>,
    /// Where files are replaced rather than regenerated (the simulated host), what tells
    /// the poller whose descriptors to drop, and its mark.
    replaced: Option<(Box<dyn ReplacedFiles>, u64)>,
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
        let ib_class = sys.ib_class().into_os_string();
        SysfsPortPoller {
            sys,
            files: HashMap::new(),
            last_pma: HashMap::new(),
            slots: HashMap::new(),
            next_slot: 0,
            netdev_files: HashMap::new(),
            buf: vec![0; 64],
            path: Vec::new(),
            ib_class,
            rel: None,
            dirs: HashMap::new(),
            cpath: Vec::new(),
            replaced: None,
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

    /// How many descriptors the poller holds now (files and device directories).
    pub fn kept_open(&self) -> usize {
        self.files.len() + self.netdev_files.len() + self.dirs.len()
    }

    /// `dev`'s number in the keys of `files`.
    fn slot(&mut self, dev: &str) -> u32 {
        if let Some(s) = self.slots.get(dev) {
            return *s;
        }
        let s = self.next_slot;
        self.next_slot = self.next_slot.wrapping_add(1);
        self.slots.insert(dev.to_string(), s);
        s
    }

    /// Closes the files kept for `dev` (its directory stays).
    fn drop_files(&mut self, dev: &str) {
        if let Some(slot) = self.slots.remove(dev) {
            self.files.retain(|k, _| key_slot(*k) != slot);
            self.last_pma.retain(|k, _| key_slot(*k) != slot);
        }
        self.netdev_files.retain(|_, (d, _)| d != dev);
        self.ifindex.retain(|_, (d, _)| d != dev);
    }

    /// For a tree whose files are replaced rather than regenerated: before each poll the
    /// poller drops the descriptors of the devices `replaced` names.
    pub fn with_replaced_files(mut self, replaced: Box<dyn ReplacedFiles>) -> SysfsPortPoller {
        self.replaced = Some((replaced, 0));
        self
    }

    /// Drops the descriptors of the files replaced since the last poll (see
    /// [`ReplacedFiles`]); directories stay, a file is replaced in its directory (a device
    /// removed and added again is handled in `open`).
    fn drop_replaced(&mut self) {
        let Some((replaced, seen)) = self.replaced.as_mut() else {
            return;
        };
        match replaced.since(seen) {
            Replaced::Nothing => {}
            Replaced::Everything => {
                self.files.clear();
                self.last_pma.clear();
                self.slots.clear();
                self.netdev_files.clear();
                self.ifindex.clear();
            }
            Replaced::Devices(devs) => {
                for dev in devs {
                    self.drop_files(&dev);
                }
            }
        }
    }

    /// Opens the file at `path`: relative to its device's directory when the poller holds
    /// it (or may open it within the budget), else by the whole path.
    fn open(&mut self, dev: &str) -> std::io::Result<File> {
        if let (Some(rel), Some(dir)) = (self.rel, self.dir_of(dev)) {
            match super::openat::openat(dir, &self.path[rel..], &mut self.cpath) {
                Ok(f) => return Ok(f),
                // The directory may be gone (the device removed, perhaps back under the
                // same name): dropped, and the whole path says what is there now.
                Err(_) => {
                    self.dirs.remove(dev);
                }
            }
        }
        File::open(OsStr::from_bytes(&self.path))
    }

    /// The descriptor of `dev`'s directory, opened now if the budget has room.
    fn dir_of(&mut self, dev: &str) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        if let Some(d) = self.dirs.get(dev) {
            return Some(d.as_raw_fd());
        }
        let rel = self.rel?;
        if self.kept_open() >= self.budget {
            return None;
        }
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(OsStr::from_bytes(&self.path[..rel]))
            .ok()?;
        let fd = dir.as_raw_fd();
        self.dirs.insert(dev.to_string(), dir);
        Some(fd)
    }

    /// Reads the file at `self.path` and parses its text (no copy of it is made: a sysfs
    /// attribute is ASCII, and text that is not UTF-8 is parsed after replacement). `key`:
    /// the port file's key in `files`, `None` for a netdev's statistics file.
    fn read_with<T>(
        &mut self,
        dev: &str,
        key: Option<u64>,
        parse: impl FnOnce(&str) -> Field<T>,
    ) -> Field<T> {
        use super::observe::{note, SysfsOp};
        let parsed = |buf: &[u8], n: usize| parse(&String::from_utf8_lossy(&buf[..n]));
        let path = OsStr::from_bytes(&self.path);
        let kept = match key {
            Some(k) => self.files.get(&k),
            None => self.netdev_files.get(path).map(|(_, f)| f),
        };
        if let Some(file) = kept {
            // The attribute's code runs at every read; the open and the close do not.
            note(SysfsOp::KeptRead, 1);
            return match file.read_at(&mut self.buf, 0) {
                Ok(n) => parsed(&self.buf, n),
                Err(e) => {
                    match key {
                        Some(k) => self.files.remove(&k),
                        None => self.netdev_files.remove(path).map(|(_, f)| f),
                    };
                    Err(AttrError::Unreadable(Errno::from_io(&e)))
                }
            };
        }
        note(SysfsOp::File, 1);
        let file = match self.open(dev) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Err(AttrError::Missing),
            Err(e) => return Err(AttrError::Unreadable(Errno::from_io(&e))),
        };
        let read = match file.read_at(&mut self.buf, 0) {
            Ok(n) => parsed(&self.buf, n),
            Err(e) => return Err(AttrError::Unreadable(Errno::from_io(&e))),
        };
        // Kept only while within the budget (and a kept descriptor reads the current value);
        // otherwise it closes here.
        if self.kept_open() < self.budget {
            match key {
                Some(k) => {
                    self.files.insert(k, file);
                }
                None => {
                    self.netdev_files.insert(
                        OsStr::from_bytes(&self.path).to_os_string(),
                        (dev.to_string(), file),
                    );
                }
            }
        }
        read
    }

    /// Reads `name` (relative) under the directory `self.path` holds, leaving `self.path` as
    /// it was.
    fn read_in<T>(
        &mut self,
        dev: &str,
        key: Option<u64>,
        name: &str,
        parse: impl FnOnce(&str) -> Field<T>,
    ) -> Field<T> {
        let dir = self.path.len();
        self.push_path(name.as_bytes());
        let r = self.read_with(dev, key, parse);
        self.path.truncate(dir);
        r
    }

    /// Appends a component to `self.path`.
    fn push_path(&mut self, component: &[u8]) {
        if !self.path.is_empty() && !self.path.ends_with(b"/") {
            self.path.push(b'/');
        }
        self.path.extend_from_slice(component);
    }

    fn poll_one(&mut self, t: &PollTarget, lids: bool) -> PortReading {
        self.path.clear();
        self.path.extend_from_slice(self.ib_class.as_bytes());
        self.push_path(t.dev.as_bytes());
        self.rel = Some(self.path.len() + 1);
        self.push_path(b"ports");
        self.push_path(t.port.to_string().as_bytes());
        // A device gets a slot only when a file of its port is read: a soft device's port
        // (state from events, counters from the dump) reads none.
        let read_state = t.state.read(lids);
        let reads_port_files =
            read_state || (t.lids && lids) || matches!(t.counters, CounterSource::Pma(_));
        let slot = if reads_port_files {
            self.slot(&t.dev)
        } else {
            u32::MAX
        };
        let key = |file: PortFile| Some(port_file_key(slot, t.port, file));
        let (state, phys_state) = if read_state {
            (
                self.read_in(
                    &t.dev,
                    key(PortFile::State),
                    "state",
                    PortState::parse_sysfs,
                ),
                self.read_in(
                    &t.dev,
                    key(PortFile::PhysState),
                    "phys_state",
                    PhysState::parse_sysfs,
                ),
            )
        } else {
            (Err(AttrError::Missing), Err(AttrError::Missing))
        };
        let (lid, sm_lid) = if t.lids && lids {
            (
                Some(self.read_in(&t.dev, key(PortFile::Lid), "lid", parse_hex_u32)),
                Some(self.read_in(&t.dev, key(PortFile::SmLid), "sm_lid", parse_hex_u32)),
            )
        } else {
            (None, None)
        };
        let traffic = self.traffic(t, slot);
        PortReading {
            state,
            phys_state,
            lid,
            sm_lid,
            traffic,
        }
    }

    /// The port's counters; `self.path` holds the port's directory, `slot` its device's
    /// number in the keys of kept port files (for PMA counters).
    fn traffic(&mut self, t: &PollTarget, slot: u32) -> TrafficCounters {
        if let CounterSource::Netdev(nd) = &t.counters {
            if let Some(c) = self.dumped_counters(&t.dev, nd) {
                return TrafficCounters {
                    tx_bytes: Ok(c.tx_bytes),
                    rx_bytes: Ok(c.rx_bytes),
                    tx_packets: Ok(c.tx_packets),
                    rx_packets: Ok(c.rx_packets),
                    saturated: false,
                };
            }
            self.path = self
                .sys
                .netdev_dir(nd)
                .join("statistics")
                .into_os_string()
                .into_vec();
            // Not under the RDMA device's directory: opened by the whole path.
            self.rel = None;
        }
        let Some(names) = counter_files(&t.counters) else {
            return TrafficCounters {
                tx_bytes: Err(AttrError::Missing),
                rx_bytes: Err(AttrError::Missing),
                tx_packets: Err(AttrError::Missing),
                rx_packets: Err(AttrError::Missing),
                saturated: false,
            };
        };
        let on_netdev = matches!(t.counters, CounterSource::Netdev(_));
        let saturable = t.counters == CounterSource::Pma(CounterWidth::Bits32);
        let read = |this: &mut Self, i: usize| {
            let key = (!on_netdev).then(|| port_file_key(slot, t.port, PortFile::Counter(i as u8)));
            this.read_in(&t.dev, key, names[i], parse_dec::<u64>)
        };
        let data: [Field<u64>; 2] = [read(self, 0), read(self, 1)];
        // A packet counts data words too: while a PMA data counter stands still, so does its
        // packet counter, which is then not read (half the files of an idle port; on an HCA
        // each is a MAD to the firmware). A saturated 32-bit data counter stands still while
        // packets may still count: read then.
        let last_key = port_file_key(slot, t.port, PortFile::Counter(0));
        let last = if on_netdev {
            None
        } else {
            self.last_pma.get(&last_key).copied()
        };
        let packets = |this: &mut Self, i: usize| -> Field<u64> {
            match (last, &data[i]) {
                (Some(l), Ok(now))
                    if *now == l.data[i] && !(saturable && *now >= PMA32_SATURATED) =>
                {
                    Ok(l.packets[i])
                }
                _ => read(this, 2 + i),
            }
        };
        let packets = [packets(self, 0), packets(self, 1)];
        if !on_netdev {
            match (&data, &packets) {
                ([Ok(tx), Ok(rx)], [Ok(txp), Ok(rxp)]) => {
                    self.last_pma.insert(
                        last_key,
                        LastPma {
                            data: [*tx, *rx],
                            packets: [*txp, *rxp],
                        },
                    );
                }
                _ => {
                    self.last_pma.remove(&last_key);
                }
            }
        }
        let [tx_data, rx_data] = data;
        let [tx_packets, rx_packets] = packets;
        let mut v: [Field<u64>; 4] = [tx_data, rx_data, tx_packets, rx_packets];
        let saturated = saturable
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
    fn poll(&mut self, targets: &[PollTarget], lids: LidTurn) -> Vec<PortReading> {
        self.drop_replaced();
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
        targets
            .iter()
            .enumerate()
            .map(|(i, t)| self.poll_one(t, lids.includes(i)))
            .collect()
    }

    fn forget(&mut self, dev: &str) {
        self.drop_files(dev);
        self.dirs.remove(dev);
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
                    state: StatePoll::EveryPoll,
                });
            }
        }
        let pma = targets
            .iter()
            .position(|t| matches!(t.counters, CounterSource::Pma(_)))
            .expect("a PMA port in the demo host");
        let mut poller = sim.sysfs_port_poller();
        let before = poller.poll(&targets, LidTurn::ALL);
        assert!(before[pma].state.is_ok());
        let tx0 = before[pma].traffic.tx_bytes.clone().expect("tx");
        let t = &targets[pma];
        sim.add_traffic(&t.dev, t.port, 4000, 8000)
            .expect("traffic");
        let after = poller.poll(&targets, LidTurn::ALL);
        assert_eq!(after[pma].traffic.tx_bytes, Ok(tx0 + 4000));
        // The same reading through a fresh poller: what the poller holds is not stale.
        assert_eq!(sim.sysfs_port_poller().poll(&targets, LidTurn::ALL), after);
    }

    /// On the simulated host, as on sysfs, an idle poll reads every file through a kept
    /// descriptor (nothing opened after the first poll), and still sees every change the
    /// host makes quietly: a port's state, its counters, a file rewritten by hand. Only the
    /// changed device's files are opened again.
    #[test]
    fn the_simulated_poll_keeps_its_files_and_sees_every_change() {
        let sim = SimHost::new(fixtures::large_host(4, 2, 0)).expect("sim");
        let targets = every_port(&sim);
        let mut poller = sim.sysfs_port_poller();
        let first = sim.cost().scoped(|| poller.poll(&targets, LidTurn::ALL));
        let files = 8 * targets.len() as u64;
        assert_eq!(
            poller.kept_open(),
            files as usize + 4,
            "files and directories"
        );
        let ops = |poller: &mut SysfsPortPoller| {
            let before = sim.cost().counts();
            let r = sim.cost().scoped(|| poller.poll(&targets, LidTurn::ALL));
            let n = sim.cost().counts().since(&before);
            (r, n.sysfs_files, n.sysfs_kept_reads)
        };
        let (again, opened, kept) = ops(&mut poller);
        assert_eq!(again, first);
        let ports = targets.len() as u64;
        // Nor reads the packet counters of ports whose data counters stood still.
        assert_eq!(
            (opened, kept),
            (0, files - 2 * ports),
            "an idle poll opens nothing"
        );

        let t = targets[3].clone();
        sim.set_port_state_quietly(&t.dev, t.port, PortState::Down, PhysState::Polling)
            .expect("state");
        let (r, opened, kept) = ops(&mut poller);
        assert_eq!(r[3].state, Ok(PortState::Down));
        assert_eq!(r[3].phys_state, Ok(PhysState::Polling));
        assert_eq!(r[2].state, Ok(PortState::Active), "the device's other port");
        assert_eq!(
            (opened, kept),
            (16, files - 16 - 2 * (ports - 2)),
            "the changed device's two ports, whole"
        );

        sim.add_traffic(&t.dev, t.port, 400, 0).expect("traffic");
        let (r, _, _) = ops(&mut poller);
        let tx = |r: &[PortReading]| r[3].traffic.tx_bytes.clone().expect("tx");
        assert_eq!(tx(&r), tx(&first) + 400);

        let other = &targets[0];
        sim.corrupt_file(
            &format!(
                "sys/class/infiniband/{}/ports/{}/state",
                other.dev, other.port
            ),
            "1: DOWN\n",
        )
        .expect("corrupt");
        let (r, opened, _) = ops(&mut poller);
        assert_eq!(r[0].state, Ok(PortState::Down));
        assert_eq!(opened, files, "a file of unknown device: every file again");
    }

    /// A PMA packet counter is read only when its data counter moved, and the reading carries
    /// its last value meanwhile; a saturated 32-bit data counter, which stands still while
    /// packets may still count, has its packet counter read at every poll.
    #[test]
    fn packet_counters_are_read_when_their_data_counter_moved() {
        let sim = SimHost::new(fixtures::demo_host()).expect("sim");
        let targets: Vec<PollTarget> = every_port(&sim)
            .into_iter()
            .filter(|t| matches!(t.counters, CounterSource::Pma(_)))
            .collect();
        let narrow = targets
            .iter()
            .position(|t| t.counters == CounterSource::Pma(CounterWidth::Bits32))
            .expect("a port with 32-bit PMA counters in the demo host");
        let wide = targets
            .iter()
            .position(|t| t.counters == CounterSource::Pma(CounterWidth::Bits64))
            .expect("a port with 64-bit PMA counters in the demo host");
        let ports = [targets[narrow].clone(), targets[wide].clone()];
        // Nothing kept open: every file read is an open, counted, and sees the file as it
        // is now (the simulated host's replaced files drop nothing here).
        let mut poller = SysfsPortPoller::new(sim.sysroot().clone(), 0);
        let poll = |poller: &mut SysfsPortPoller| {
            let before = sim.cost().counts();
            let r = sim.cost().scoped(|| poller.poll(&ports, LidTurn::ALL));
            (r, sim.cost().counts().since(&before).sysfs_files)
        };
        let (first, opened) = poll(&mut poller);
        assert_eq!(opened, 16, "every file of both ports at the first poll");
        let (idle, opened) = poll(&mut poller);
        assert_eq!(idle, first, "the packet counts are carried");
        assert_eq!(opened, 12, "no packet counter of an idle port");

        let t = &ports[1];
        sim.add_traffic(&t.dev, t.port, 3 * 4096, 0)
            .expect("traffic");
        let (r, opened) = poll(&mut poller);
        assert_eq!(opened, 13, "the moved data counter's packet counter only");
        let packets = |r: &[PortReading], i: usize| {
            (
                r[i].traffic.tx_packets.clone().expect("tx packets"),
                r[i].traffic.rx_packets.clone().expect("rx packets"),
            )
        };
        let (tx0, rx0) = packets(&first, 1);
        assert_eq!(packets(&r, 1), (tx0 + 3, rx0));

        // The 32-bit port's transmitted data saturates, and packets go on counting.
        let t = &ports[0];
        let dir = format!("sys/class/infiniband/{}/ports/{}/counters", t.dev, t.port);
        sim.corrupt_file(&format!("{dir}/port_xmit_data"), "4294967295\n")
            .expect("saturate");
        let (r, _) = poll(&mut poller);
        assert!(r[0].traffic.saturated);
        sim.corrupt_file(&format!("{dir}/port_xmit_packets"), "777\n")
            .expect("packets");
        let (r, opened) = poll(&mut poller);
        assert_eq!(
            r[0].traffic.tx_packets,
            Ok(777),
            "read under a saturated data counter"
        );
        assert_eq!(opened, 13);
    }

    /// Every port of `sim`, with its state and LIDs polled.
    fn every_port(sim: &SimHost) -> Vec<PollTarget> {
        let mut targets = Vec::new();
        for d in sim.sysroot().rdma_device_names().expect("names") {
            for p in sim.sysroot().port_sources(&d).expect("sources") {
                targets.push(PollTarget {
                    dev: d.clone(),
                    port: p.port,
                    counters: p.counters,
                    lids: true,
                    state: StatePoll::EveryPoll,
                });
            }
        }
        targets
    }

    /// The poll of a host with far more files than the budget never holds more than the
    /// budget, reads every file all the same, and a device forgotten frees its slots for
    /// others.
    #[test]
    fn kept_descriptors_never_exceed_the_budget() {
        // 64 devices x 2 ports x (4 attributes + 4 PMA counters): 1024 polled files.
        let sim = SimHost::new(fixtures::large_host(64, 2, 0)).expect("sim");
        let targets = every_port(&sim);
        assert_eq!(targets.len(), 128);
        let fds = || std::fs::read_dir("/proc/self/fd").map(|d| d.count()).ok();
        let before = fds();
        let budget = 100;
        let mut poller = SysfsPortPoller::new(sim.sysroot().clone(), budget);
        let readings = poller.poll(&targets, LidTurn::ALL);
        assert_eq!(poller.kept_open(), budget);
        // What this process holds, not only what the poller counts. Other tests of this
        // binary may run in parallel threads under `cargo test`; nextest runs each alone.
        if let (Some(b), Some(a), true) = (before, fds(), std::env::var_os("NEXTEST").is_some()) {
            assert!(a <= b + budget, "{a} descriptors open, {b} before the poll");
        }
        // Every file was read, kept or not: the same as a poller that keeps none.
        assert!(readings.iter().all(|r| {
            let t = &r.traffic;
            r.state.is_ok()
                && r.phys_state.is_ok()
                && matches!(r.lid, Some(Ok(_)))
                && matches!(r.sm_lid, Some(Ok(_)))
                && [&t.tx_bytes, &t.rx_bytes, &t.tx_packets, &t.rx_packets]
                    .iter()
                    .all(|c| c.is_ok())
        }));
        assert_eq!(
            readings,
            sim.sysfs_port_poller().poll(&targets, LidTurn::ALL)
        );
        for _ in 0..3 {
            poller.poll(&targets, LidTurn::ALL);
            assert_eq!(poller.kept_open(), budget);
        }
        // The first device held the first 17 slots (its directory and 16 files);
        // forgotten, others take them.
        poller.forget(&targets[0].dev);
        assert_eq!(poller.kept_open(), budget - 17);
        poller.poll(&targets, LidTurn::ALL);
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
                        state: StatePoll::EveryPoll,
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
        let by_files = sim.sysfs_port_poller().poll(&targets, LidTurn::ALL);
        assert!(by_files[0].traffic.tx_bytes.is_ok());
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let failing = FakeStats {
            ifindex,
            fail: true,
            calls: calls.clone(),
        };
        let mut poller = sim.sysfs_port_poller().with_link_stats(Box::new(failing));
        assert_eq!(poller.poll(&targets, LidTurn::ALL), by_files);
        let fake = FakeStats {
            ifindex,
            fail: false,
            calls: calls.clone(),
        };
        let mut poller = sim.sysfs_port_poller().with_link_stats(Box::new(fake));
        std::fs::remove_dir_all(sim.sysroot().netdev_dir(&nd).join("statistics"))
            .expect("remove statistics");
        let got = poller.poll(&targets, LidTurn::ALL);
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
        let mut poller = sim.sysfs_port_poller();
        let r = &poller.poll(std::slice::from_ref(t), LidTurn::ALL)[0];
        assert_eq!((&r.lid, &r.sm_lid), (&None, &None));
        let with_lids = PollTarget {
            lids: true,
            ..t.clone()
        };
        assert_eq!(
            poller.poll(std::slice::from_ref(&with_lids), LidTurn::ALL)[0].lid,
            Some(Err(AttrError::Missing))
        );
    }

    /// Each InfiniBand port's `lid` and `sm_lid` are read once in every `every` polls, in
    /// turn: the other polls read 6 files a port at most, not 8 (4 on an idle port), and a
    /// LID the subnet manager changed is seen in the port's turn.
    #[test]
    fn lids_are_read_once_a_turn() {
        use crate::kernel::Host;
        let sim = SimHost::new(fixtures::large_host(4, 2, 0)).expect("sim");
        let targets = every_port(&sim);
        let ports = targets.len();
        assert_eq!(ports, 8);
        let every = 4;
        let mut poller = sim.port_poller();
        let before = sim.cost().counts();
        let mut read = vec![0; ports];
        for n in 0..every {
            let readings = poller.poll(&targets, LidTurn::of(n as u64, every));
            for (i, r) in readings.iter().enumerate() {
                assert_eq!(r.lid.is_some(), r.sm_lid.is_some());
                if let Some(lid) = &r.lid {
                    assert!(lid.is_ok(), "{lid:?}");
                    read[i] += 1;
                }
            }
        }
        assert_eq!(
            read,
            vec![1; ports],
            "each port's LIDs once in {every} polls"
        );
        let files = sim.cost().counts().since(&before).attribute_reads();
        // State, physical state and the two data counters at every poll, the two packet
        // counters at the first (the data counters stand still after it), the LIDs once.
        assert_eq!(files as usize, every * ports * 4 + ports * 2 + ports * 2);
        // A new LID without any event: read in the port's turn, not before.
        let t = &targets[1];
        sim.corrupt_file(
            &format!("sys/class/infiniband/{}/ports/{}/lid", t.dev, t.port),
            "0x77\n",
        )
        .expect("lid");
        let turn = LidTurn::of(every as u64, every);
        assert!(!turn.includes(1));
        assert_eq!(poller.poll(&targets, turn)[1].lid, None);
        let turn = LidTurn::of(every as u64 + 1, every);
        assert_eq!(poller.poll(&targets, turn)[1].lid, Some(Ok(0x77)));
        // Every port at every poll with `ALL`.
        assert!(poller
            .poll(&targets, LidTurn::ALL)
            .iter()
            .all(|r| r.lid.is_some() && r.sm_lid.is_some()));
    }

    /// A device removed and added again under its name, with no `forget` in between: the
    /// directory the poller held is gone, and the poll reads the new device's files, not
    /// "missing".
    #[test]
    fn a_device_back_under_its_name_is_read_in_its_new_directory() {
        let spec = fixtures::large_host(2, 1, 0);
        let mut again = spec.devices[0].clone();
        again.ports[0].lid = 0x99;
        let sim = SimHost::new(spec).expect("sim");
        let dev = again.name.clone();
        let target = PollTarget {
            dev: dev.clone(),
            port: 1,
            counters: CounterSource::Pma(CounterWidth::Bits64),
            lids: true,
            state: StatePoll::EveryPoll,
        };
        let mut poller = sim.sysfs_port_poller();
        let before = poller.poll(std::slice::from_ref(&target), LidTurn::ALL);
        assert!(matches!(before[0].lid, Some(Ok(n)) if n != 0x99));
        assert_eq!(
            poller.kept_open(),
            9,
            "the device's directory and its 8 files are held"
        );
        sim.unplug(&dev).expect("unplug");
        sim.plug(again).expect("plug");
        let after = poller.poll(std::slice::from_ref(&target), LidTurn::ALL);
        assert_eq!(after[0].lid, Some(Ok(0x99)));
        assert!(after[0].state.is_ok() && after[0].traffic.tx_bytes.is_ok());
    }

    /// A RoCE port counted by its netdev's statistics files (no rtnetlink dump): those files
    /// are opened by their own path, not relative to the RDMA device's directory, which stays
    /// held for the port's own files (a relative open of the netdev's path failed and dropped
    /// it at every poll).
    #[test]
    fn netdev_statistics_are_not_opened_under_the_device_directory() {
        let sim = SimHost::new(fixtures::demo_host()).expect("sim");
        let (dev, source) = sim
            .sysroot()
            .rdma_device_names()
            .expect("names")
            .into_iter()
            .find_map(|d| {
                let s = sim
                    .sysroot()
                    .port_sources(&d)
                    .ok()?
                    .into_iter()
                    .find(|s| matches!(s.counters, CounterSource::Netdev(_)))?;
                Some((d, s))
            })
            .expect("a port counted by its netdev on the demo host");
        let target = PollTarget {
            dev: dev.clone(),
            port: source.port,
            counters: source.counters,
            lids: false,
            state: StatePoll::EveryPoll,
        };
        let mut poller = sim.sysfs_port_poller();
        let r = poller.poll(std::slice::from_ref(&target), LidTurn::ALL);
        assert!(r[0].state.is_ok() && r[0].traffic.tx_bytes.is_ok(), "{r:?}");
        assert!(
            poller.dirs.contains_key(&dev),
            "{dev}'s directory is still held after its netdev's counters were read"
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
            state: StatePoll::EveryPoll,
        };
        let mut poller = sim.sysfs_port_poller();
        assert!(poller.poll(std::slice::from_ref(&target), LidTurn::ALL)[0]
            .state
            .is_ok());
        sim.unplug(&dev).expect("unplug");
        poller.forget(&dev);
        assert_eq!(
            poller.poll(std::slice::from_ref(&target), LidTurn::ALL)[0].state,
            Err(AttrError::Missing)
        );
    }
}
