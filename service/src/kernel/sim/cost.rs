//! What a read of the simulated host costs, and how many of each it made.
//!
//! The simulated host's sysfs is tmpfs files: reading one costs a few microseconds, where a
//! real kernel runs the driver's attribute code (and, under the lab's software emulation,
//! 50 to 200 us of guest CPU). A design that reads too much therefore looked cheap on the
//! simulated host. [`SimCost`] charges every primitive the daemon uses, where the simulated
//! host performs it:
//!
//! - sysfs files, lookups and directory listings in the readers of [`crate::kernel::sysfs`]
//!   and the port poll ([`crate::kernel::port_poll`]): the simulated host runs them inside
//!   [`SimCost::scoped`], which makes its model the thread's
//!   [`SysfsObserver`](crate::kernel::observe::SysfsObserver); the readers only report what
//!   they do ([`crate::kernel::observe`]) and know nothing of this model;
//! - the simulated netlink, verbs and configfs calls in the simulated host's [`Host`]
//!   implementation.
//!
//! Every operation is counted whatever the profile (tests read the counts with
//! [`SimCost::counts`]); it is charged only when the profile says so. A charge is a busy wait:
//! the kernel spends CPU on these (formatting attributes, walking kernfs, building netlink
//! messages; under software emulation all of it is guest CPU), so a benchmark of idle CPU
//! must see it, which a sleep would hide.
//!
//! [`Host`]: crate::kernel::Host

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::kernel::observe::{self, SysfsObserver, SysfsOp};

/// A primitive the daemon asks of the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CostOp {
    /// A sysfs or configfs attribute file opened, read and closed.
    SysfsFile,
    /// An attribute read again at offset 0 through a descriptor kept open (the port poll's):
    /// the attribute's code runs, the path walk, open and close do not.
    SysfsKeptRead,
    /// A path looked up without reading it (`stat`, `readlink`, `exists`).
    SysfsLookup,
    /// A directory listed (charged on top of its entries).
    DirList,
    /// One entry of a listed directory.
    DirEntry,
    /// A uverbs device opened, its GID table queried (`ibv_query_gid_table`), closed.
    VerbsGidTable,
    /// One device in a libibverbs device list made anew (`ibv_get_device_list` reads sysfs
    /// for each device).
    VerbsListDevice,
    /// One device in an RDMA netlink GET dump.
    NlDevice,
    /// One port in an RDMA netlink PORT_GET dump.
    NlPort,
    /// One link in an rtnetlink dump (RTM_GETSTATS or RTM_GETLINK).
    RtnlLink,
    /// An rdma_cm configfs group made (`mkdir rdma_cm/<dev>`).
    ConfigfsMkdir,
}

impl CostOp {
    pub const ALL: [CostOp; 11] = [
        CostOp::SysfsFile,
        CostOp::SysfsKeptRead,
        CostOp::SysfsLookup,
        CostOp::DirList,
        CostOp::DirEntry,
        CostOp::VerbsGidTable,
        CostOp::VerbsListDevice,
        CostOp::NlDevice,
        CostOp::NlPort,
        CostOp::RtnlLink,
        CostOp::ConfigfsMkdir,
    ];

    fn slot(self) -> usize {
        self as usize
    }
}

impl From<SysfsOp> for CostOp {
    fn from(op: SysfsOp) -> CostOp {
        match op {
            SysfsOp::File => CostOp::SysfsFile,
            SysfsOp::KeptRead => CostOp::SysfsKeptRead,
            SysfsOp::Lookup => CostOp::SysfsLookup,
            SysfsOp::DirList => CostOp::DirList,
            SysfsOp::DirEntry => CostOp::DirEntry,
        }
    }
}

/// What each [`CostOp`] costs, in nanoseconds of busy CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CostProfile {
    ns: [u64; CostOp::ALL.len()],
}

/// A `--sim-cost` value that is not a profile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--sim-cost={0}: expected off, lab or lab/N (the lab's figures divided by N > 0)")]
pub struct BadCostProfile(pub String);

impl CostProfile {
    /// Nothing charged: the simulated host as fast as tmpfs (the fast tests' default).
    pub const FREE: CostProfile = CostProfile {
        ns: [0; CostOp::ALL.len()],
    };

    /// The lab's figures: Debian's 6.12.117 kernel under QEMU without KVM (TCG, 2 vCPUs),
    /// 256 rxe devices over dummy netdevs, the `profile_*` lines of one `rdma-lab-scale` run
    /// (docs/PERFORMANCE.md, "The calibrated simulated host", lists them). Each is a timing
    /// over all 256 devices divided by the operations it made.
    pub fn lab() -> CostProfile {
        let mut p = CostProfile::FREE;
        let us = |v: f64| (v * 1e3) as u64;
        // Median of the 18 `profile_file_*_ms` figures: 16 ms / 256 files (range 47 to 70 us).
        p.ns[CostOp::SysfsFile.slot()] = us(62.5);
        // `profile_kept_read_us` 9.1 (a later run than the others, same kernel and guest):
        // `state`, `phys_state`, `lid` and `sm_lid` of every port read through kept
        // descriptors (median of 5 passes), where the same files opened by path, read once
        // and closed took 33.2 us (`profile_reopened_read_us`).
        p.ns[CostOp::SysfsKeptRead.slot()] = us(9.1);
        // `profile_port_sources_ms` 65 / 256 devices (254 us), less its 2 files and 1
        // listing, over its 4 lookups.
        p.ns[CostOp::SysfsLookup.slot()] = us(19.0);
        // `profile_list_pkeys_ms` 13 / 256 listings of 1 entry.
        p.ns[CostOp::DirList.slot()] = us(50.0);
        // `profile_list_gids_ms` 266 / 262144 entries.
        p.ns[CostOp::DirEntry.slot()] = us(1.0);
        // `profile_verbs_open_gid_table_close_ms` 55 / 256.
        p.ns[CostOp::VerbsGidTable.slot()] = us(215.0);
        // `profile_verbs_device_list_ms` 46 / 256.
        p.ns[CostOp::VerbsListDevice.slot()] = us(180.0);
        // `profile_nldev_get_dump_ms` 32 / 256.
        p.ns[CostOp::NlDevice.slot()] = us(125.0);
        // `profile_nldev_port_get_dump_ms` 76 / 256.
        p.ns[CostOp::NlPort.slot()] = us(297.0);
        // `profile_rtnl_stats_dump_ms` 0.6 / 259 links (RTM_GETSTATS, the poll's dump).
        p.ns[CostOp::RtnlLink.slot()] = us(2.3);
        // `profile_configfs_mode_tos_ms` 78 / 256 (305 us), less its two attribute reads.
        p.ns[CostOp::ConfigfsMkdir.slot()] = us(180.0);
        p
    }

    /// `off`, `lab`, or `lab/N`: the lab's figures divided by N (software emulation is 10
    /// to 30 times slower than a native kernel; `lab/20` estimates one).
    pub fn parse(s: &str) -> Result<CostProfile, BadCostProfile> {
        let bad = || BadCostProfile(s.to_string());
        match s {
            "off" => Ok(CostProfile::FREE),
            "lab" => Ok(CostProfile::lab()),
            _ => {
                let n: f64 = s
                    .strip_prefix("lab/")
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(bad)?;
                if !(n.is_finite() && n > 0.0) {
                    return Err(bad());
                }
                Ok(CostProfile::lab().divided_by(n))
            }
        }
    }

    /// Every figure divided by `n`.
    pub fn divided_by(mut self, n: f64) -> CostProfile {
        for v in self.ns.iter_mut() {
            *v = (*v as f64 / n) as u64;
        }
        self
    }

    /// What one `op` costs.
    pub fn of(&self, op: CostOp) -> Duration {
        Duration::from_nanos(self.ns[op.slot()])
    }
}

/// How many of each operation were made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct OpCounts {
    pub sysfs_files: u64,
    pub sysfs_kept_reads: u64,
    pub sysfs_lookups: u64,
    pub dir_lists: u64,
    pub dir_entries: u64,
    pub verbs_gid_tables: u64,
    pub verbs_list_devices: u64,
    pub nl_devices: u64,
    pub nl_ports: u64,
    pub rtnl_links: u64,
    pub configfs_mkdirs: u64,
}

impl OpCounts {
    /// What was made between `earlier` and `self`.
    pub fn since(&self, earlier: &OpCounts) -> OpCounts {
        OpCounts {
            sysfs_files: self.sysfs_files - earlier.sysfs_files,
            sysfs_kept_reads: self.sysfs_kept_reads - earlier.sysfs_kept_reads,
            sysfs_lookups: self.sysfs_lookups - earlier.sysfs_lookups,
            dir_lists: self.dir_lists - earlier.dir_lists,
            dir_entries: self.dir_entries - earlier.dir_entries,
            verbs_gid_tables: self.verbs_gid_tables - earlier.verbs_gid_tables,
            verbs_list_devices: self.verbs_list_devices - earlier.verbs_list_devices,
            nl_devices: self.nl_devices - earlier.nl_devices,
            nl_ports: self.nl_ports - earlier.nl_ports,
            rtnl_links: self.rtnl_links - earlier.rtnl_links,
            configfs_mkdirs: self.configfs_mkdirs - earlier.configfs_mkdirs,
        }
    }

    /// Attribute files read, opened for the read or through a kept descriptor.
    pub fn attribute_reads(&self) -> u64 {
        self.sysfs_files + self.sysfs_kept_reads
    }

    /// What these operations cost under `profile`.
    pub fn cost(&self, profile: &CostProfile) -> Duration {
        let n = [
            self.sysfs_files,
            self.sysfs_kept_reads,
            self.sysfs_lookups,
            self.dir_lists,
            self.dir_entries,
            self.verbs_gid_tables,
            self.verbs_list_devices,
            self.nl_devices,
            self.nl_ports,
            self.rtnl_links,
            self.configfs_mkdirs,
        ];
        CostOp::ALL
            .iter()
            .zip(n)
            .map(|(op, n)| profile.of(*op) * u32::try_from(n).unwrap_or(u32::MAX))
            .sum()
    }
}

/// A simulated host's cost model and operation counters.
#[derive(Debug)]
pub struct SimCost {
    profile: RwLock<CostProfile>,
    counts: [AtomicU64; CostOp::ALL.len()],
}

impl Default for SimCost {
    fn default() -> Self {
        SimCost::new(CostProfile::FREE)
    }
}

impl SimCost {
    pub fn new(profile: CostProfile) -> SimCost {
        SimCost {
            profile: RwLock::new(profile),
            counts: Default::default(),
        }
    }

    pub fn profile(&self) -> CostProfile {
        *self.profile.read().unwrap_or_else(|p| p.into_inner())
    }

    pub fn set_profile(&self, profile: CostProfile) {
        *self.profile.write().unwrap_or_else(|p| p.into_inner()) = profile;
    }

    /// Counts `n` of `op` and spends what they cost.
    pub fn charge(&self, op: CostOp, n: u64) {
        if n == 0 {
            return;
        }
        self.counts[op.slot()].fetch_add(n, Ordering::Relaxed);
        let cost = self.profile().of(op) * u32::try_from(n).unwrap_or(u32::MAX);
        spin(cost);
    }

    pub fn counts(&self) -> OpCounts {
        let c = |op: CostOp| self.counts[op.slot()].load(Ordering::Relaxed);
        OpCounts {
            sysfs_files: c(CostOp::SysfsFile),
            sysfs_kept_reads: c(CostOp::SysfsKeptRead),
            sysfs_lookups: c(CostOp::SysfsLookup),
            dir_lists: c(CostOp::DirList),
            dir_entries: c(CostOp::DirEntry),
            verbs_gid_tables: c(CostOp::VerbsGidTable),
            verbs_list_devices: c(CostOp::VerbsListDevice),
            nl_devices: c(CostOp::NlDevice),
            nl_ports: c(CostOp::NlPort),
            rtnl_links: c(CostOp::RtnlLink),
            configfs_mkdirs: c(CostOp::ConfigfsMkdir),
        }
    }

    /// Runs `f` (synchronous reads of the simulated tree) with the readers' primitives
    /// charged to this model on this thread. Nested calls charge the innermost model.
    pub fn scoped<T>(self: &Arc<Self>, f: impl FnOnce() -> T) -> T {
        observe::observed(Some(self.clone() as Arc<dyn SysfsObserver>), f)
    }

    /// Runs `f` with nothing charged on this thread: reads the simulated host makes to
    /// answer a call that a real kernel answers otherwise (the GID table the simulated
    /// verbs query takes from the tree).
    pub fn unscoped<T>(f: impl FnOnce() -> T) -> T {
        observe::observed(None, f)
    }
}

impl SysfsObserver for SimCost {
    fn saw(&self, op: SysfsOp, n: u64) {
        self.charge(op.into(), n);
    }
}

/// Busy-waits for `d`: CPU spent, as the kernel spends it.
fn spin(d: Duration) {
    if d.is_zero() {
        return;
    }
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_parse_and_refuse_what_is_not_one() {
        assert_eq!(CostProfile::parse("off"), Ok(CostProfile::FREE));
        let lab = CostProfile::parse("lab").expect("lab");
        assert_eq!(lab.of(CostOp::SysfsFile), Duration::from_nanos(62_500));
        let tenth = CostProfile::parse("lab/10").expect("lab/10");
        assert_eq!(
            tenth.of(CostOp::VerbsGidTable),
            Duration::from_nanos(21_500)
        );
        for bad in ["", "lab/0", "lab/-2", "lab/x", "fast", "lab/inf"] {
            assert_eq!(
                CostProfile::parse(bad),
                Err(BadCostProfile(bad.to_string())),
                "{bad}"
            );
        }
    }

    /// What the readers report is counted on the thread's model inside `scoped`, not outside
    /// it, not on another model, and not inside `unscoped`; the charge is CPU time spent.
    #[test]
    fn charges_go_to_the_model_in_scope() {
        use crate::kernel::observe::note;
        let a = Arc::new(SimCost::new(CostProfile::FREE));
        let b = Arc::new(SimCost::default());
        note(SysfsOp::File, 1);
        a.scoped(|| {
            note(SysfsOp::File, 2);
            b.scoped(|| note(SysfsOp::Lookup, 3));
            SimCost::unscoped(|| note(SysfsOp::File, 100));
            note(SysfsOp::DirEntry, 5);
        });
        note(SysfsOp::File, 7);
        assert_eq!(a.counts().sysfs_files, 2);
        assert_eq!(a.counts().dir_entries, 5);
        assert_eq!(a.counts().sysfs_lookups, 0);
        assert_eq!(b.counts().sysfs_lookups, 3);
        a.set_profile(CostProfile::lab());
        let t = Instant::now();
        a.scoped(|| a.charge(CostOp::ConfigfsMkdir, 10));
        assert!(
            t.elapsed() >= Duration::from_micros(1800),
            "{:?}",
            t.elapsed()
        );
        assert_eq!(
            a.counts()
                .since(&OpCounts::default())
                .cost(&CostProfile::lab()),
            Duration::from_micros(2 * 62 + 10 * 180) + Duration::from_nanos(2 * 500 + 5 * 1000)
        );
    }
}
