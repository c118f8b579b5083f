//! The simulated host: in-memory devices and netdevs that follow the kernel's rules and error
//! codes (checked against the real kernel by the lab scenario suite), rendered as a sysfs tree
//! that the real readers read. Hooks inject faults and raise events.

#[cfg(test)]
mod budget;
pub mod cost;
mod dcb;
pub mod fixtures;
pub mod model;
pub mod networkd;
pub mod port;
mod port_type;
mod render;
pub mod replaced;
mod roce;
mod rules;
mod sriov;
pub mod traffic;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use tokio::sync::mpsc;

use super::port_poll::{PortPoller, SysfsPortPoller};
use super::sysfs::SysRoot;
use super::{
    files, port_events, CounterPort, Host, HostError, HostEvent, NetdevChange, NewIpoibChild,
    NewLink, NlDevice, NlPort, NlSys, Op,
};
use crate::model::PortSource;
use crate::model::{
    CounterSnapshot, DeviceKind, DeviceSnapshot, Errno, NetdevSnapshot, PhysState, PortState,
    RoceMode,
};
use crate::naming::rdma_rename::RenameSysfs;
pub use model::{HostSpec, SimDevice, SimIpoib, SimKernel, SimNetdev, SimPciPlacement, SimVf};
pub use port::{SimGid, SimPma, SimPort};

/// Operations a fault can be attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimOp {
    ReadDevice,
    AddLink,
    DeleteLink,
    RenameDevice,
    RoceRead,
    RoceWrite,
    CreateChild,
    ChangeNetdev,
    RenameNetdev,
    DeleteNetdev,
    WriteFile,
    RemoveFile,
    ReloadUdev,
    /// A DCB change or a RoCE QoS file written (`QosHost::dcb_change`, `set_roce_*`).
    QosWrite,
    SetVfGuids,
    RebindVf,
    /// `Host::watch_port_events` (a new libibverbs list on a real host of many devices).
    WatchPortEvents,
}

#[derive(Debug, Clone)]
enum Fault {
    /// The next `op` fails with `errno` and changes nothing.
    Fail(SimOp, Errno),
    /// Just before the next `op` runs, the device is hot-unplugged.
    Unplug(SimOp, String),
    /// The next `op` takes this long (a module autoload, a hung sysfs read).
    Delay(SimOp, std::time::Duration),
    /// The next read of this device fails with `errno`.
    FailDevice(String, Errno),
}

/// A configfs `rdma_cm/<name>` group: bound to the device name it was made with.
#[derive(Debug, Clone)]
struct CmGroup {
    bound_name: String,
}

pub(crate) struct SimState {
    spec: HostSpec,
    next_dev_index: u32,
    next_ifindex: u32,
    /// rdma_cm settings live with the device (cma_dev), keyed by device index and port.
    roce: BTreeMap<(u32, u32), (RoceMode, u8)>,
    cm_groups: Vec<CmGroup>,
    /// `/sys/module/rdma_cm` (the module registers `rdma_cm/` in configfs).
    rdma_cm_loaded: bool,
    /// configfs mounted on `/sys/kernel/config`.
    configfs_mounted: bool,
    faults: Vec<Fault>,
    subscribers: Vec<mpsc::UnboundedSender<HostEvent>>,
    /// While set, events are dropped, as a netlink socket's overflowing buffer loses them.
    losing_events: bool,
    /// `udevadm control --reload` calls made while udevd ran.
    udev_reloads: u32,
    /// Whether hardware devices' port events can be watched (a host whose libibverbs
    /// cannot open them has none: see [`SimHost::set_port_events`]).
    port_events: bool,
    /// The devices whose port events are watched (see `kernel::port_events`).
    watched: std::collections::BTreeSet<String>,
    /// The changes asked of the host so far (see [`SimHost::writes`]).
    writes: SimWrites,
    /// Files whose reads fail with an errno (see [`SimHost::fail_reads_of_file`]).
    file_read_faults: BTreeMap<std::path::PathBuf, Errno>,
    /// mlx5's firmware link types and whether mstconfig is installed (`port_type.rs`).
    port_types: port_type::SimPortTypes,
    /// The VF GUIDs the PFs' drivers hold (see `sriov`).
    sriov: sriov::SimSriov,
    /// DCB state of the netdevs that have it (see `dcb`).
    dcb: dcb::DcbByIfindex,
    /// mlx5_ib's `tc/1/traffic_class`, by device index.
    traffic_class: BTreeMap<u32, i32>,
}

/// The changes asked of a simulated host, failed ones included: kernel changes (links, RoCE
/// defaults, netdevs, renames) and file changes (writes, removals, udev reloads).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimWrites {
    pub kernel: u64,
    pub files: u64,
}

struct Inner {
    sys: SysRoot,
    _tmp: Option<tempfile::TempDir>,
    state: Mutex<SimState>,
    /// While not 0, the errno every read of the host fails with (see [`SimHost::fail_reads`]).
    /// Shared with the port pollers, which outlive no host but must not lock its state.
    read_fault: Arc<AtomicI32>,
    /// RDMA netlink GET dumps answered (each lists every device: what it costs grows with
    /// the host, so the daemon should ask for one rarely).
    nl_dumps: std::sync::atomic::AtomicU64,
    /// Devices read (`read_device`), for tests of what an event re-reads.
    device_reads: std::sync::atomic::AtomicU64,
    /// What reads cost, and how many were made (see [`cost`]).
    cost: Arc<cost::SimCost>,
    /// The devices of the simulated libibverbs device list, which a real host keeps between
    /// reads and makes anew when it lacks a device (see `kernel/linux.rs`).
    verbs_list: Mutex<Option<std::collections::BTreeSet<String>>>,
    /// Devices renamed after this process's libibverbs had listed them: as the kernel lab
    /// shows on 6.1 and 6.12 (tests/lab, the `renamed` state), libibverbs in the same
    /// process does not open such a device again, so its GIDs come from sysfs and its port
    /// MTUs are not known (docs/KERNEL-NOTES.md).
    verbs_renamed: Mutex<std::collections::BTreeSet<String>>,
    /// Which devices' files were replaced, for the port pollers' kept descriptors.
    replaced: Arc<replaced::TreeChanges>,
}

/// A simulated RDMA host. Cheap to clone (shared state).
#[derive(Clone)]
pub struct SimHost {
    inner: Arc<Inner>,
}

impl SimHost {
    /// A host in a fresh temporary directory.
    pub fn new(spec: HostSpec) -> Result<SimHost, HostError> {
        let tmp = tempfile::tempdir()
            .map_err(|e| HostError::from_io(Op::File("simulated host tree".into()), &e))?;
        let root = tmp.path().to_path_buf();
        Self::build(root, Some(tmp), spec)
    }

    /// A host whose tree lives in `dir` (created if needed; its `sys/` is replaced).
    pub fn in_dir(dir: &Path, spec: HostSpec) -> Result<SimHost, HostError> {
        let io = |e: std::io::Error| HostError::from_io(Op::File(dir.display().to_string()), &e);
        std::fs::create_dir_all(dir).map_err(io)?;
        match std::fs::remove_dir_all(dir.join("sys")) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
            _ => {}
        }
        Self::build(dir.to_path_buf(), None, spec)
    }

    fn build(
        root: PathBuf,
        tmp: Option<tempfile::TempDir>,
        mut spec: HostSpec,
    ) -> Result<SimHost, HostError> {
        // The fixtures grow these lists one push at a time, and a doubled vector is up to
        // half empty, memory the daemon it runs in shows as its own in the benchmarks.
        spec.devices.shrink_to_fit();
        spec.netdevs.shrink_to_fit();
        let next_dev_index = spec.devices.iter().map(|d| d.index + 1).max().unwrap_or(0);
        let next_ifindex = spec
            .netdevs
            .iter()
            .map(|n| n.ifindex + 1)
            .max()
            .unwrap_or(2);
        let cm = spec.kernel.rdma_cm_configfs;
        let port_types = port_type::SimPortTypes::new(&spec.devices);
        let state = SimState {
            spec,
            next_dev_index,
            next_ifindex,
            roce: BTreeMap::new(),
            cm_groups: Vec::new(),
            rdma_cm_loaded: cm,
            configfs_mounted: cm,
            faults: Vec::new(),
            subscribers: Vec::new(),
            losing_events: false,
            udev_reloads: 0,
            writes: SimWrites::default(),
            file_read_faults: BTreeMap::new(),
            port_events: true,
            watched: Default::default(),
            port_types,
            sriov: Default::default(),
            dcb: BTreeMap::new(),
            traffic_class: BTreeMap::new(),
        };
        let host = SimHost {
            inner: Arc::new(Inner {
                sys: SysRoot::new(root),
                _tmp: tmp,
                state: Mutex::new(state),
                read_fault: Arc::new(AtomicI32::new(0)),
                nl_dumps: std::sync::atomic::AtomicU64::new(0),
                device_reads: std::sync::atomic::AtomicU64::new(0),
                cost: Arc::new(cost::SimCost::default()),
                verbs_list: Mutex::new(None),
                verbs_renamed: Mutex::new(std::collections::BTreeSet::new()),
                replaced: Arc::default(),
            }),
        };
        host.render_all()?;
        Ok(host)
    }

    /// The root of the rendered tree (`<root>/sys/class/infiniband`, ...).
    pub fn root(&self) -> &Path {
        self.inner.sys.root()
    }

    pub fn sysroot(&self) -> &SysRoot {
        &self.inner.sys
    }

    fn lock(&self) -> MutexGuard<'_, SimState> {
        // A panic in another test thread must not poison every later call.
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn render_err(e: std::io::Error) -> HostError {
        HostError::from_io(Op::File("simulated sysfs tree".into()), &e)
    }

    // The tree's writes of devices and netdevs, each marked after it for the port pollers'
    // kept descriptors (see [`replaced`]), failed or not (a write may fail half done).

    fn render_device(&self, dev: &SimDevice) -> Result<(), HostError> {
        let r = render::render_device(self.root(), dev).map_err(Self::render_err);
        self.inner.replaced.device(&dev.name);
        r
    }

    fn update_device(&self, dev: &SimDevice) -> Result<(), HostError> {
        let r = render::update_device(self.root(), dev).map_err(Self::render_err);
        self.inner.replaced.device(&dev.name);
        r
    }

    fn remove_device_files(&self, name: &str) -> Result<(), HostError> {
        let r = render::remove_device(self.root(), name).map_err(Self::render_err);
        self.inner.replaced.device(name);
        r
    }

    // A netdev's statistics are polled for the ports counted on it, whose device the tree
    // does not know here: every device is marked.

    fn render_netdev(&self, nd: &SimNetdev) -> Result<(), HostError> {
        let r = render::render_netdev(self.root(), nd).map_err(Self::render_err);
        self.inner.replaced.everything();
        r
    }

    fn update_netdev(&self, nd: &SimNetdev) -> Result<(), HostError> {
        let r = render::update_netdev(self.root(), nd).map_err(Self::render_err);
        self.inner.replaced.everything();
        r
    }

    fn remove_netdev_files(&self, nd: &SimNetdev) -> Result<(), HostError> {
        let r = render::remove_netdev(self.root(), nd).map_err(Self::render_err);
        self.inner.replaced.everything();
        r
    }

    /// The sysfs port poller of this host's tree, keeping descriptors as on Linux (within
    /// the budget of the process's open-file limit) and told which files were replaced.
    pub fn sysfs_port_poller(&self) -> SysfsPortPoller {
        SysfsPortPoller::new(
            self.inner.sys.clone(),
            super::rlimit::keep_open_budget_now(),
        )
        .with_replaced_files(Box::new(self.inner.replaced.clone()))
    }

    fn render_all(&self) -> Result<(), HostError> {
        let st = self.lock();
        let root = self.root();
        for d in &st.spec.devices {
            self.render_device(d)?;
        }
        for n in &st.spec.netdevs {
            self.render_netdev(n)?;
        }
        render::render_module(root, "rdma_rxe", st.spec.kernel.rxe_loaded)
            .map_err(Self::render_err)?;
        render::render_module(root, "siw", false).map_err(Self::render_err)?;
        port_type::render(root, &st).map_err(Self::render_err)?;
        Self::render_rdma_cm(root, &st)
    }

    /// `sys/module/rdma_cm` and `sys/kernel/config/rdma_cm` as the flags say.
    fn render_rdma_cm(root: &Path, st: &SimState) -> Result<(), HostError> {
        render::render_module(root, "rdma_cm", st.rdma_cm_loaded).map_err(Self::render_err)?;
        let dir = root.join("sys/kernel/config/rdma_cm");
        if st.rdma_cm_loaded && st.configfs_mounted {
            std::fs::create_dir_all(dir).map_err(Self::render_err)
        } else {
            match std::fs::remove_dir_all(dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Self::render_err(e)),
                _ => Ok(()),
            }
        }
    }

    /// Loads or unloads rdma_cm (`modprobe rdma_cm` / `modprobe -r rdma_cm`). Unloading
    /// forgets every configfs group and every RoCE default: a reload starts from the
    /// kernel's defaults (RoCE v2 where supported, ToS 0), as after a reboot.
    pub fn set_rdma_cm_loaded(&self, loaded: bool) -> Result<(), HostError> {
        let mut st = self.lock();
        if !loaded {
            st.roce.clear();
            st.cm_groups.clear();
        }
        st.rdma_cm_loaded = loaded;
        st.spec.kernel.rdma_cm_configfs = st.rdma_cm_loaded && st.configfs_mounted;
        Self::render_rdma_cm(self.root(), &st)
    }

    /// Loads or unloads a module by name (`/sys/module/<name>`, `-` written as `_` as the
    /// kernel does), for what host setup shows as "loaded now". rdma_cm and rdma_rxe have
    /// their own switches, which also change what the kernel offers.
    pub fn set_module_loaded(&self, module: &str, loaded: bool) -> Result<(), HostError> {
        let name = module.replace('-', "_");
        if name.is_empty() || name.contains('/') || name.starts_with('.') {
            return Err(HostError::Invalid(format!(
                "{module:?} is not a module name"
            )));
        }
        let _st = self.lock();
        render::render_module(self.root(), &name, loaded).map_err(Self::render_err)
    }

    /// Mounts or unmounts configfs on `/sys/kernel/config`; rdma_cm keeps its settings.
    pub fn set_configfs_mounted(&self, mounted: bool) -> Result<(), HostError> {
        let mut st = self.lock();
        st.configfs_mounted = mounted;
        st.spec.kernel.rdma_cm_configfs = st.rdma_cm_loaded && st.configfs_mounted;
        Self::render_rdma_cm(self.root(), &st)
    }

    /// A copy of the current state.
    pub fn spec(&self) -> HostSpec {
        self.lock().spec.clone()
    }

    // ---- fault injection and event hooks --------------------------------------------------

    /// The changes asked of this host so far.
    pub fn writes(&self) -> SimWrites {
        self.lock().writes
    }

    /// The next `op` fails with `errno` and changes nothing.
    pub fn fail_next(&self, op: SimOp, errno: Errno) {
        self.lock().faults.push(Fault::Fail(op, errno));
    }

    /// The next read of `device` (not of any other) fails with `errno` and changes nothing:
    /// unlike [`SimHost::fail_next`], which device it hits does not depend on the order in
    /// which concurrent reads reach the host.
    pub fn fail_next_read_of(&self, device: &str, errno: Errno) {
        self.lock()
            .faults
            .push(Fault::FailDevice(device.to_string(), errno));
    }

    /// The device is unplugged just before the next `op` runs.
    pub fn unplug_during_next(&self, op: SimOp, device: &str) {
        self.lock()
            .faults
            .push(Fault::Unplug(op, device.to_string()));
    }

    /// The next `op` takes `d` before it does anything (a slow or hung kernel call).
    pub fn delay_next(&self, op: SimOp, d: std::time::Duration) {
        self.lock().faults.push(Fault::Delay(op, d));
    }

    /// While `Some`, every read of the host fails with that errno and changes nothing: the
    /// sysfs and netlink reads, and the port poll's attributes. `EMFILE` is what a daemon out
    /// of file descriptors sees. `None` lets reads through again.
    pub fn fail_reads(&self, errno: Option<Errno>) {
        self.inner
            .read_fault
            .store(errno.map_or(0, |e| e.0), Ordering::SeqCst);
    }

    /// While `Some`, every read of the file at `path` (the host's path) fails with that errno,
    /// as an open of a file of mode 000 fails with EACCES for a daemon without
    /// CAP_DAC_OVERRIDE, which a test running as root cannot make happen. `None` lets them
    /// through again.
    pub fn fail_reads_of_file(&self, path: &Path, errno: Option<Errno>) {
        let mut st = self.lock();
        match errno {
            Some(e) => st.file_read_faults.insert(path.to_path_buf(), e),
            None => st.file_read_faults.remove(path),
        };
    }

    /// The error of a read while [`SimHost::fail_reads`] is set.
    fn read_fault(&self, what: &str) -> Result<(), HostError> {
        match self.inner.read_fault.load(Ordering::SeqCst) {
            0 => Ok(()),
            n => Err(HostError::kernel(Op::ReadSysfs(what.to_string()), Errno(n))),
        }
    }

    /// Drops every event from now on (`true`) or delivers them again (`false`); what was
    /// dropped is lost, as with ENOBUFS, and a [`HostEvent::Overflow`] is what a subscriber
    /// would then see (raise it with [`SimHost::raise`]).
    pub fn lose_events(&self, lose: bool) {
        self.lock().losing_events = lose;
    }

    /// Everything the simulated kernel holds (devices, netdevs, rdma_cm settings and groups),
    /// as text: equal snapshots before and after a refused call show it changed nothing.
    pub fn kernel_snapshot(&self) -> String {
        let st = self.lock();
        format!(
            "{:#?}\nroce {:?}\ncm_groups {:?}\nsriov {:?}",
            st.spec, st.roce, st.cm_groups, st.sriov
        )
    }

    /// Starts or stops the simulated udevd: its control socket `run/udev/control` under the
    /// root exists while it runs.
    pub fn set_udevd_running(&self, running: bool) -> std::io::Result<()> {
        let control = self.sys_path(Path::new(super::linux::UDEV_CONTROL));
        if running {
            if let Some(dir) = control.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(control, b"")
        } else {
            files::remove_optional(&control)
        }
    }

    /// The cost model of this host's reads and its operation counters. Nothing is charged
    /// until a profile is set ([`cost::CostProfile::FREE`]); operations are always counted.
    pub fn cost(&self) -> &Arc<cost::SimCost> {
        &self.inner.cost
    }

    /// Charges this host's reads as `profile` says from now on.
    pub fn set_cost_profile(&self, profile: cost::CostProfile) {
        self.inner.cost.set_profile(profile);
    }

    /// Runs synchronous reads of the tree with their cost charged to this host. Under a
    /// cost profile they run on the blocking pool, as the Linux host runs its reads, so that
    /// reads in flight together (the engine reads 8 devices at once) are charged side by side
    /// as the kernel's run on several CPUs; without one, in place (the fast tests).
    async fn charged<T: Send + 'static>(
        &self,
        f: impl FnOnce(&SimHost) -> T + Send + 'static,
    ) -> T {
        if self.inner.cost.profile() == cost::CostProfile::FREE {
            return self.inner.cost.scoped(|| f(self));
        }
        let host = self.clone();
        match tokio::task::spawn_blocking(move || host.inner.cost.scoped(|| f(&host))).await {
            Ok(v) => v,
            Err(e) => match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                // Cancelled only when the runtime shuts down: nothing waits for this then.
                Err(e) => panic!("simulated read cancelled: {e}"),
            },
        }
    }

    /// A device's GID tables as libibverbs' `ibv_query_gid_table` gives them on a real host:
    /// the used entries of the tree (read uncharged), charged as one query, after a device
    /// list made anew when the kept one lacks the device. Room for 64 entries first, as the
    /// Linux host asks; when more are used, the tables' length is listed and asked again.
    /// Each asked port's attributes come from the port as `ibv_query_port` tells them, in
    /// the same opened context (charged with it).
    fn verbs_gid_tables(
        &self,
        dev: &str,
        ports: &[u32],
        table_len: &mut dyn FnMut() -> usize,
    ) -> Option<super::sysfs::VerbsTables> {
        if self
            .inner
            .verbs_renamed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(dev)
        {
            return None;
        }
        {
            let mut kept = self
                .inner
                .verbs_list
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if !kept.as_ref().is_some_and(|l| l.contains(dev)) {
                let names: std::collections::BTreeSet<String> = self
                    .lock()
                    .spec
                    .devices
                    .iter()
                    .map(|d| d.name.clone())
                    .collect();
                self.inner
                    .cost
                    .charge(cost::CostOp::VerbsListDevice, names.len() as u64);
                *kept = Some(names);
            }
        }
        let tables = cost::SimCost::unscoped(|| self.inner.sys.read_gid_tables(dev));
        self.inner.cost.charge(cost::CostOp::VerbsGidTable, 1);
        if tables.values().map(Vec::len).sum::<usize>() > super::linux::GIDS_FIRST_GUESS {
            table_len();
            self.inner.cost.charge(cost::CostOp::VerbsGidTable, 1);
        }
        let st = self.lock();
        let device = st.spec.devices.iter().find(|d| d.name == dev);
        let ports = ports
            .iter()
            .map(|&n| {
                let attrs = match device.and_then(|d| d.ports.iter().find(|p| p.number == n)) {
                    Some(p) => Ok(crate::model::device::PortAttrs {
                        active_mtu: Ok(p.active_mtu),
                        max_mtu: Ok(p.max_mtu),
                        gid_table_len: p.gid_table_len,
                        pkey_table_len: p.pkeys.len() as u32,
                    }),
                    // ib_query_port of a port the device does not have.
                    None => Err(crate::model::AttrError::Unreadable(crate::model::Errno(
                        libc::EINVAL,
                    ))),
                };
                (n, attrs)
            })
            .collect();
        Some(super::sysfs::VerbsTables {
            gids: tables,
            ports,
        })
    }

    /// How many RDMA netlink device dumps (`nl_devices`) were answered.
    pub fn nl_dumps(&self) -> u64 {
        self.inner
            .nl_dumps
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How many devices were read (`Host::read_device`), one by one.
    pub fn device_reads(&self) -> u64 {
        self.inner
            .device_reads
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How many times udevd was told to reload its rules.
    pub fn udev_reloads(&self) -> u32 {
        self.lock().udev_reloads
    }

    /// Removes a file of the rendered tree (a vanished attribute). `rel` is relative to the
    /// root, e.g. `sys/class/infiniband/mlx5_0/ports/1/rate`.
    pub fn vanish_file(&self, rel: &str) -> std::io::Result<()> {
        let r = std::fs::remove_file(self.root().join(rel));
        self.inner.replaced.everything();
        r
    }

    /// Overwrites a file of the rendered tree with arbitrary text (a malformed attribute).
    pub fn corrupt_file(&self, rel: &str, text: &str) -> std::io::Result<()> {
        let r = render::put_bytes(self.root(), &self.root().join(rel), text.as_bytes());
        self.inner.replaced.everything();
        r
    }

    /// Hot-unplugs a device (as a PCI removal would), raising RdmaRemoved.
    pub fn unplug(&self, name: &str) -> Result<(), HostError> {
        let mut st = self.lock();
        self.remove_device_locked(&mut st, name)
    }

    /// Hot-plugs a device, raising RdmaAdded. Its index is assigned by the kernel's rule.
    pub fn plug(&self, mut dev: SimDevice) -> Result<(), HostError> {
        let mut st = self.lock();
        if st.spec.devices.iter().any(|d| d.name == dev.name) {
            return Err(HostError::kernel(Op::NlNewLink, Errno::EEXIST));
        }
        dev.index = st.next_dev_index;
        st.next_dev_index += 1;
        self.render_device(&dev)?;
        let name = dev.name.clone();
        st.spec.devices.push(dev);
        Self::emit(&mut st, HostEvent::RdmaAdded { name });
        Ok(())
    }

    /// A network interface appears (a driver bound, a cable module inserted), raising
    /// NetdevAdded. Its ifindex is assigned by the kernel's rule.
    pub fn plug_netdev(&self, mut nd: SimNetdev) -> Result<(), HostError> {
        let mut st = self.lock();
        if st.spec.netdevs.iter().any(|n| n.name == nd.name) {
            return Err(HostError::kernel(Op::Rtnl("RTM_NEWLINK"), Errno::EEXIST));
        }
        nd.ifindex = st.next_ifindex;
        st.next_ifindex += 1;
        self.render_netdev(&nd)?;
        let name = nd.name.clone();
        st.spec.netdevs.push(nd);
        Self::emit(&mut st, HostEvent::NetdevAdded { name });
        Ok(())
    }

    /// Congestion on `netdev`'s link: pause frames where link-level pause is on (see
    /// `dcb::congest`).
    pub fn congest(&self, netdev: &str) {
        dcb::congest(&mut self.lock(), netdev);
    }

    /// Changes a port's state (a cable pulled, an SM appearing); raises RdmaChanged.
    pub fn set_port_state(
        &self,
        dev: &str,
        port: u32,
        state: PortState,
        phys: PhysState,
    ) -> Result<(), HostError> {
        self.with_port(dev, port, |p| {
            p.state = state;
            p.phys_state = phys;
        })
    }

    /// Sets a port's state and physical state as a real kernel changes them: no uevent (rxe's
    /// follow their netdev, whose rtnetlink event the caller raises if it wants one, and may
    /// raise before or after this), and, on a device whose port events are watched, the
    /// uverbs async event its driver raises when the logical state moves (PORT_ACTIVE or
    /// PORT_ERR; none for a physical state that moves alone).
    pub fn set_port_state_quietly(
        &self,
        dev: &str,
        port: u32,
        state: PortState,
        phys: PhysState,
    ) -> Result<(), HostError> {
        let mut moved = false;
        self.with_port_silent(dev, port, |p| {
            moved = p.state != state;
            p.state = state;
            p.phys_state = phys;
        })?;
        let mut st = self.lock();
        if moved && st.watched.contains(dev) {
            let event = match state {
                PortState::Active => port_events::PortEventKind::Active,
                _ => port_events::PortEventKind::Err,
            };
            Self::emit(
                &mut st,
                HostEvent::RdmaPortEvent {
                    name: dev.to_string(),
                    port,
                    event,
                },
            );
        }
        Ok(())
    }

    /// Whether hardware devices' port events can be watched (default: they can); off, the
    /// daemon polls every port's state as on a host without libibverbs. Stops every watch.
    pub fn set_port_events(&self, enabled: bool) {
        let mut st = self.lock();
        st.port_events = enabled;
        if !enabled {
            st.watched.clear();
        }
    }

    /// The devices whose port events are watched now.
    pub fn watched_devices(&self) -> std::collections::BTreeSet<String> {
        self.lock().watched.clone()
    }

    /// Sets LID and SM LID of a port (a subnet manager assigning addresses).
    pub fn set_port_lids(
        &self,
        dev: &str,
        port: u32,
        lid: u32,
        sm_lid: u32,
    ) -> Result<(), HostError> {
        self.with_port(dev, port, |p| {
            p.lid = lid;
            p.sm_lid = sm_lid;
        })
    }

    /// Adds traffic to a port's counters (PMA words, or its netdev's statistics).
    pub fn add_traffic(
        &self,
        dev: &str,
        port: u32,
        tx_bytes: u64,
        rx_bytes: u64,
    ) -> Result<(), HostError> {
        let netdev = self.inner.sys.port_netdev(dev, port);
        let mut pma_port = false;
        self.with_port_silent(dev, port, |p| {
            if let Some(pma) = &mut p.pma {
                pma_port = true;
                pma.xmit_data += tx_bytes / 4;
                pma.rcv_data += rx_bytes / 4;
                pma.xmit_packets += tx_bytes.div_ceil(4096);
                pma.rcv_packets += rx_bytes.div_ceil(4096);
            }
        })?;
        if !pma_port {
            if let Some(nd) = netdev {
                let mut st = self.lock();
                if let Some(n) = st.spec.netdevs.iter_mut().find(|n| n.name == nd) {
                    n.tx_bytes += tx_bytes;
                    n.rx_bytes += rx_bytes;
                    n.tx_packets += tx_bytes.div_ceil(1500);
                    n.rx_packets += rx_bytes.div_ceil(1500);
                    self.update_netdev(n)?;
                }
            }
        }
        Ok(())
    }

    /// Adds `n` to a port's PMA error counter `name` (`symbol_error`, `link_downed`, ...), as
    /// a flaky link does: no event, only a later read sees it. NotFound when the port has no
    /// such counter.
    pub fn add_port_errors(
        &self,
        dev: &str,
        port: u32,
        name: &str,
        n: u64,
    ) -> Result<(), HostError> {
        let mut found = false;
        self.with_port_silent(dev, port, |p| {
            if let Some(pma) = &mut p.pma {
                if let Some((_, v)) = pma.errors.iter_mut().find(|(k, _)| k == name) {
                    *v += n;
                    found = true;
                }
            }
        })?;
        if !found {
            return Err(HostError::NotFound(format!(
                "counter {name} of {dev}/{port}"
            )));
        }
        Ok(())
    }

    fn with_port(
        &self,
        dev: &str,
        port: u32,
        f: impl FnOnce(&mut SimPort),
    ) -> Result<(), HostError> {
        self.with_port_silent(dev, port, f)?;
        let mut st = self.lock();
        Self::emit(
            &mut st,
            HostEvent::RdmaChanged {
                name: dev.to_string(),
            },
        );
        Ok(())
    }

    fn with_port_silent(
        &self,
        dev: &str,
        port: u32,
        f: impl FnOnce(&mut SimPort),
    ) -> Result<(), HostError> {
        let mut st = self.lock();
        let d = st
            .spec
            .devices
            .iter_mut()
            .find(|d| d.name == dev)
            .ok_or_else(|| HostError::NotFound(format!("RDMA device {dev}")))?;
        let p = d
            .ports
            .iter_mut()
            .find(|p| p.number == port)
            .ok_or_else(|| HostError::NotFound(format!("port {port} of RDMA device {dev}")))?;
        f(p);
        self.update_device(d)
    }

    /// Replaces the IPv4 and IPv6 addresses of a netdev, as `ip address replace/del` (or an
    /// IP manager) would, with one address event as the kernel sends one per address.
    pub fn set_addresses(
        &self,
        netdev: &str,
        addresses: Vec<crate::model::NetdevAddress>,
    ) -> Result<(), HostError> {
        let mut st = self.lock();
        let nd = st
            .spec
            .netdevs
            .iter_mut()
            .find(|n| n.name == netdev)
            .ok_or_else(|| HostError::NotFound(format!("network interface {netdev}")))?;
        if nd.addresses == addresses {
            return Ok(());
        }
        // The kernel lists IPv4 addresses before IPv6 ones.
        let (mut v4, v6): (Vec<_>, Vec<_>) = addresses.into_iter().partition(|a| a.ip.is_ipv4());
        v4.extend(v6);
        nd.addresses = v4;
        Self::emit(
            &mut st,
            HostEvent::NetdevAddressChanged {
                name: netdev.to_string(),
            },
        );
        Ok(())
    }

    /// The addresses of a netdev (what `ip address show DEV` lists).
    pub fn addresses(&self, netdev: &str) -> Vec<crate::model::NetdevAddress> {
        self.lock()
            .spec
            .netdevs
            .iter()
            .find(|n| n.name == netdev)
            .map(|n| n.addresses.clone())
            .unwrap_or_default()
    }

    /// Raises an event as if the kernel had sent it (e.g. an ENOBUFS overflow).
    pub fn raise(&self, event: HostEvent) {
        let mut st = self.lock();
        Self::emit(&mut st, event);
    }

    fn emit(st: &mut SimState, event: HostEvent) {
        if st.losing_events {
            return;
        }
        st.subscribers.retain(|tx| tx.send(event.clone()).is_ok());
    }

    /// Takes the fault registered for `op`, if any, applying an unplug at once.
    fn take_fault(&self, st: &mut SimState, op: SimOp) -> Result<(), HostError> {
        match op {
            SimOp::ReadDevice | SimOp::RoceRead => {}
            SimOp::WriteFile | SimOp::RemoveFile | SimOp::ReloadUdev => st.writes.files += 1,
            _ => st.writes.kernel += 1,
        }
        let Some(pos) = st.faults.iter().position(|f| match f {
            Fault::Fail(o, _) | Fault::Unplug(o, _) => *o == op,
            Fault::Delay(..) | Fault::FailDevice(..) => false,
        }) else {
            return Ok(());
        };
        match st.faults.remove(pos) {
            Fault::Fail(_, errno) => Err(HostError::kernel(Op::File(format!("{op:?}")), errno)),
            Fault::Unplug(_, dev) => {
                // Already gone is fine: the point is that it is gone now.
                let _ = self.remove_device_locked(st, &dev);
                Ok(())
            }
            Fault::Delay(..) | Fault::FailDevice(..) => Ok(()),
        }
    }

    /// The fault registered for the next read of `device`, if any (taken).
    fn take_device_fault(&self, st: &mut SimState, device: &str) -> Result<(), HostError> {
        let pos = st
            .faults
            .iter()
            .position(|f| matches!(f, Fault::FailDevice(d, _) if d == device));
        match pos.map(|p| st.faults.remove(p)) {
            Some(Fault::FailDevice(_, errno)) => {
                Err(HostError::kernel(Op::File(format!("read {device}")), errno))
            }
            _ => Ok(()),
        }
    }

    /// Waits out a delay registered for `op`, if any, without holding the state lock.
    async fn delay(&self, op: SimOp) {
        let d = {
            let mut st = self.lock();
            let pos = st
                .faults
                .iter()
                .position(|f| matches!(f, Fault::Delay(o, _) if *o == op));
            match pos.map(|p| st.faults.remove(p)) {
                Some(Fault::Delay(_, d)) => Some(d),
                _ => None,
            }
        };
        if let Some(d) = d {
            tokio::time::sleep(d).await;
        }
    }

    fn remove_device_locked(&self, st: &mut SimState, name: &str) -> Result<(), HostError> {
        let pos = st
            .spec
            .devices
            .iter()
            .position(|d| d.name == name)
            .ok_or_else(|| HostError::NotFound(format!("RDMA device {name}")))?;
        let dev = st.spec.devices.remove(pos);
        st.roce.retain(|(idx, _), _| *idx != dev.index);
        self.remove_device_files(name)?;
        Self::emit(
            st,
            HostEvent::RdmaRemoved {
                name: name.to_string(),
            },
        );
        Ok(())
    }

    /// What the Linux host asks rtnetlink for: children made over rtnetlink have no
    /// pkey/mode/umcast/parent files.
    fn fill_ipoib(&self, netdevs: &mut [NetdevSnapshot]) {
        // The Linux host asks rtnetlink once for each IPoIB netdev without the files.
        let asked = netdevs
            .iter()
            .filter(|n| n.ipoib.as_ref().is_some_and(|i| i.pkey.is_err()))
            .count();
        self.inner.cost.charge(cost::CostOp::RtnlLink, asked as u64);
        let st = self.lock();
        for nd in netdevs.iter_mut() {
            let Some(sim) = st.spec.netdevs.iter().find(|n| n.name == nd.name) else {
                continue;
            };
            if let (Some(attrs), Some(ib)) = (nd.ipoib.as_mut(), sim.ipoib.as_ref()) {
                super::rtnl_fill_ipoib(attrs, ib.pkey, ib.mode, ib.umcast, ib.parent.clone());
            }
        }
    }

    fn sys_path(&self, path: &Path) -> PathBuf {
        self.root().join(path.strip_prefix("/").unwrap_or(path))
    }
}

/// Every netdev's counters from the simulated kernel at once, as the Linux host's one
/// RTM_GETSTATS dump a poll gives them, charged per link.
struct SimLinkStats {
    host: SimHost,
}

impl super::link_stats::LinkStats for SimLinkStats {
    fn dump(
        &mut self,
    ) -> std::io::Result<std::collections::HashMap<u32, super::link_stats::LinkCounters>> {
        let out: std::collections::HashMap<_, _> = self
            .host
            .lock()
            .spec
            .netdevs
            .iter()
            .map(|n| {
                (
                    n.ifindex,
                    super::link_stats::LinkCounters {
                        tx_bytes: n.tx_bytes,
                        rx_bytes: n.rx_bytes,
                        tx_packets: n.tx_packets,
                        rx_packets: n.rx_packets,
                    },
                )
            })
            .collect();
        self.host
            .inner
            .cost
            .charge(cost::CostOp::RtnlLink, out.len() as u64);
        Ok(out)
    }
}

/// The sysfs poller over the simulated tree, whose reads fail while
/// [`SimHost::fail_reads`] is set.
struct SimPortPoller {
    sysfs: SysfsPortPoller,
    read_fault: Arc<AtomicI32>,
    cost: Arc<cost::SimCost>,
}

impl PortPoller for SimPortPoller {
    fn poll(
        &mut self,
        targets: &[super::PollTarget],
        lids: super::LidTurn,
    ) -> Vec<super::PortReading> {
        let errno = match self.read_fault.load(Ordering::SeqCst) {
            0 => return self.cost.scoped(|| self.sysfs.poll(targets, lids)),
            n => Errno(n),
        };
        fn e<T>(errno: Errno) -> crate::model::Field<T> {
            Err(crate::model::AttrError::Unreadable(errno))
        }
        targets
            .iter()
            .map(|_| super::PortReading {
                state: e(errno),
                phys_state: e(errno),
                lid: Some(e(errno)),
                sm_lid: Some(e(errno)),
                traffic: super::TrafficCounters {
                    tx_bytes: e(errno),
                    rx_bytes: e(errno),
                    tx_packets: e(errno),
                    rx_packets: e(errno),
                    saturated: false,
                },
            })
            .collect()
    }

    fn forget(&mut self, dev: &str) {
        self.sysfs.forget(dev);
    }
}

#[async_trait]
impl Host for SimHost {
    async fn rdma_device_names(&self) -> Result<Vec<String>, HostError> {
        self.read_fault("/sys/class/infiniband")?;
        self.charged(|h| h.inner.sys.rdma_device_names()).await
    }

    async fn read_device(&self, name: &str) -> Result<DeviceSnapshot, HostError> {
        self.inner
            .device_reads
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.read_fault(name)?;
        self.delay(SimOp::ReadDevice).await;
        {
            let mut st = self.lock();
            self.take_fault(&mut st, SimOp::ReadDevice)?;
            self.take_device_fault(&mut st, name)?;
        }
        // GIDs through the simulated verbs, as the Linux host reads them where libibverbs is.
        let name = name.to_string();
        self.charged(move |h| {
            h.inner.sys.read_device_with(
                &name,
                Some(&mut |dev, ports, table_len| h.verbs_gid_tables(dev, ports, table_len)),
            )
        })
        .await
    }

    async fn read_counters(&self, dev: &str, port: u32) -> Result<CounterSnapshot, HostError> {
        self.read_fault(dev)?;
        let dev = dev.to_string();
        self.charged(move |h| h.inner.sys.read_counters(&dev, port))
            .await
    }

    async fn read_all_counters(
        &self,
        ports: Vec<CounterPort>,
    ) -> Vec<Result<CounterSnapshot, HostError>> {
        let faults: Vec<Result<(), HostError>> =
            ports.iter().map(|p| self.read_fault(&p.dev)).collect();
        self.charged(move |h| {
            ports
                .iter()
                .zip(faults)
                .map(|(p, fault)| {
                    fault.and_then(|()| match &p.polled {
                        Some(source) => h
                            .inner
                            .sys
                            .read_other_counters(&p.dev, p.port, source, None),
                        None => h.inner.sys.read_counters(&p.dev, p.port),
                    })
                })
                .collect()
        })
        .await
    }

    async fn port_sources(&self, dev: &str) -> Result<Vec<PortSource>, HostError> {
        self.read_fault(dev)?;
        let dev = dev.to_string();
        self.charged(move |h| h.inner.sys.port_sources(&dev)).await
    }

    fn port_poller(&self) -> Box<dyn PortPoller> {
        Box::new(SimPortPoller {
            // Netdev-counted ports from one simulated rtnetlink dump a poll, as on Linux.
            sysfs: self
                .sysfs_port_poller()
                .with_link_stats(Box::new(SimLinkStats { host: self.clone() })),
            read_fault: self.inner.read_fault.clone(),
            cost: self.inner.cost.clone(),
        })
    }

    async fn read_netdevs(&self) -> Result<Vec<NetdevSnapshot>, HostError> {
        self.read_fault("/sys/class/net")?;
        let mut netdevs = self.charged(|h| h.inner.sys.read_netdevs()).await?;
        self.fill_ipoib(&mut netdevs);
        Ok(netdevs)
    }

    async fn read_ipoib_netdevs(&self) -> Result<Vec<NetdevSnapshot>, HostError> {
        // As the Linux host: only `type` of the others (what it reads is what is charged).
        self.read_fault("/sys/class/net")?;
        let mut netdevs = self.charged(|h| h.inner.sys.read_ipoib_netdevs()).await?;
        self.fill_ipoib(&mut netdevs);
        Ok(netdevs)
    }

    async fn read_netdev(&self, name: &str) -> Result<NetdevSnapshot, HostError> {
        self.read_fault(name)?;
        let owned = name.to_string();
        let mut one = [self
            .charged(move |h| h.inner.sys.read_netdev(&owned))
            .await?];
        self.fill_ipoib(&mut one);
        let [nd] = one;
        Ok(nd)
    }

    async fn read_addresses(
        &self,
        only: Option<u32>,
    ) -> Result<std::collections::BTreeMap<u32, Vec<crate::model::NetdevAddress>>, HostError> {
        self.read_fault("addresses")?;
        let st = self.lock();
        Ok(st
            .spec
            .netdevs
            .iter()
            .filter(|n| only.is_none_or(|i| i == n.ifindex) && !n.addresses.is_empty())
            .map(|n| (n.ifindex, n.addresses.clone()))
            .collect())
    }

    async fn module_loaded(&self, module: &str) -> Result<bool, HostError> {
        let module = module.to_string();
        Ok(self
            .charged(move |h| h.inner.sys.module_loaded(&module))
            .await)
    }

    async fn read_rename_sysfs(&self, dev: &str) -> Result<RenameSysfs, HostError> {
        let dev = dev.to_string();
        self.charged(move |h| h.inner.sys.rename_sysfs(&dev)).await
    }

    async fn nl_devices(&self) -> Result<Vec<NlDevice>, HostError> {
        self.read_fault("RDMA netlink")?;
        self.inner
            .nl_dumps
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let devices = rules::nl_devices(&self.lock());
        self.inner
            .cost
            .charge(cost::CostOp::NlDevice, devices.len() as u64);
        Ok(devices)
    }

    async fn nl_ports(&self) -> Result<Vec<NlPort>, HostError> {
        self.read_fault("RDMA netlink")?;
        let ports = rules::nl_ports(&self.lock());
        self.inner
            .cost
            .charge(cost::CostOp::NlPort, ports.len() as u64);
        Ok(ports)
    }

    async fn nl_sys(&self) -> Result<NlSys, HostError> {
        let st = self.lock();
        Ok(NlSys {
            netns_shared: Some(true),
            copy_on_fork: Some(true),
            monitor_mode: st.spec.kernel.monitor_mode.then_some(true),
        })
    }

    async fn nl_port_stats(
        &self,
        dev_index: u32,
        port: u32,
    ) -> Result<Vec<(String, u64)>, HostError> {
        rules::nl_port_stats(&self.lock(), dev_index, port)
    }

    async fn add_link(&self, link: &NewLink) -> Result<(), HostError> {
        let mut st = self.lock();
        self.take_fault(&mut st, SimOp::AddLink)?;
        let dev = rules::new_link(&mut st, link)?;
        self.render_device(&dev)?;
        render::render_module(self.root(), "rdma_rxe", st.spec.kernel.rxe_loaded)
            .map_err(Self::render_err)?;
        Self::emit(
            &mut st,
            HostEvent::RdmaAdded {
                name: dev.name.clone(),
            },
        );
        Ok(())
    }

    async fn delete_link(&self, dev_index: u32) -> Result<(), HostError> {
        let mut st = self.lock();
        self.take_fault(&mut st, SimOp::DeleteLink)?;
        let name = rules::del_link_check(&st, dev_index)?;
        self.inner
            .verbs_renamed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&name);
        self.remove_device_locked(&mut st, &name)
    }

    async fn rename_device(&self, dev_index: u32, new_name: &str) -> Result<(), HostError> {
        let mut st = self.lock();
        self.take_fault(&mut st, SimOp::RenameDevice)?;
        let Some(old) = rules::rename_device(&mut st, dev_index, new_name)? else {
            return Ok(());
        };
        let listed = self
            .inner
            .verbs_list
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_some_and(|l| l.contains(&old));
        if listed {
            self.inner
                .verbs_renamed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(new_name.to_string());
            // Its reads go through sysfs now, which lists every slot of the GID table.
            if let Some(d) = st.spec.devices.iter_mut().find(|d| d.index == dev_index) {
                for p in &mut d.ports {
                    p.rendered_gid_entries = None;
                }
            }
        }
        self.remove_device_files(&old)?;
        if let Some(d) = st.spec.devices.iter().find(|d| d.index == dev_index) {
            self.render_device(d)?;
        }
        Self::emit(
            &mut st,
            HostEvent::RdmaRenamed {
                old,
                new: new_name.to_string(),
            },
        );
        Ok(())
    }

    async fn create_ipoib_child(&self, child: &NewIpoibChild) -> Result<(), HostError> {
        self.delay(SimOp::CreateChild).await;
        let mut st = self.lock();
        self.take_fault(&mut st, SimOp::CreateChild)?;
        let nd = rules::new_ipoib_child(&mut st, child)?;
        self.render_netdev(&nd)?;
        Self::emit(&mut st, HostEvent::NetdevAdded { name: nd.name });
        Ok(())
    }

    async fn change_netdev(&self, name: &str, change: &NetdevChange) -> Result<(), HostError> {
        self.delay(SimOp::ChangeNetdev).await;
        let mut st = self.lock();
        self.take_fault(&mut st, SimOp::ChangeNetdev)?;
        let carrier: Vec<bool> = st.spec.netdevs.iter().map(|n| n.carrier).collect();
        let touched = rules::change_netdev(&mut st, name, change)?;
        // A veth's peer gains or loses carrier with it: the kernel reports that as a change
        // of the peer (RTM_NEWLINK, from its linkwatch work).
        let changed: Vec<String> = st
            .spec
            .netdevs
            .iter()
            .zip(carrier)
            .filter(|(n, c)| n.name == name || n.carrier != *c)
            .map(|(n, _)| n.name.clone())
            .collect();
        for n in st.spec.netdevs.iter().filter(|n| changed.contains(&n.name)) {
            self.render_netdev(n)?;
        }
        for d in st.spec.devices.iter().filter(|d| touched.contains(&d.name)) {
            self.render_device(d)?;
        }
        Self::emit(
            &mut st,
            HostEvent::NetdevChanged {
                name: name.to_string(),
            },
        );
        for peer in changed.into_iter().filter(|n| n != name) {
            Self::emit(&mut st, HostEvent::NetdevChanged { name: peer });
        }
        for d in touched {
            Self::emit(&mut st, HostEvent::RdmaChanged { name: d });
        }
        Ok(())
    }

    async fn rename_netdev(&self, old: &str, new: &str) -> Result<(), HostError> {
        let mut st = self.lock();
        self.take_fault(&mut st, SimOp::RenameNetdev)?;
        let before = rules::find_netdev(&st, old)?.clone();
        let touched = rules::rename_netdev(&mut st, old, new)?;
        self.remove_netdev_files(&before)?;
        // A legacy child's `parent` file prints its parent's current name (`parent_show`
        // reads `priv->parent->name`): the children follow the rename without an event.
        let follows = |n: &SimNetdev| {
            n.name == new || n.ipoib.as_ref().and_then(|i| i.parent.as_deref()) == Some(new)
        };
        for n in st.spec.netdevs.iter().filter(|n| follows(n)) {
            self.render_netdev(n)?;
        }
        for d in st.spec.devices.iter().filter(|d| touched.contains(&d.name)) {
            self.render_device(d)?;
        }
        Self::emit(
            &mut st,
            HostEvent::NetdevRenamed {
                old: old.to_string(),
                new: new.to_string(),
            },
        );
        Ok(())
    }

    async fn delete_netdev(&self, name: &str) -> Result<(), HostError> {
        self.delay(SimOp::DeleteNetdev).await;
        let mut st = self.lock();
        self.take_fault(&mut st, SimOp::DeleteNetdev)?;
        let (gone, soft) = rules::delete_netdev(&mut st, name)?;
        for dev in soft {
            self.remove_device_locked(&mut st, &dev)?;
        }
        for nd in gone {
            self.remove_netdev_files(&nd)?;
            Self::emit(&mut st, HostEvent::NetdevRemoved { name: nd.name });
        }
        Ok(())
    }

    async fn subscribe(&self) -> Result<mpsc::UnboundedReceiver<HostEvent>, HostError> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().subscribers.push(tx);
        Ok(rx)
    }

    async fn watch_port_events(
        &self,
        devices: &std::collections::BTreeSet<String>,
    ) -> std::collections::BTreeSet<String> {
        self.delay(SimOp::WatchPortEvents).await;
        // The simulated hardware stands for mlx5 HCAs, whose driver disassociates.
        let mut st = self.lock();
        let watched: std::collections::BTreeSet<String> = if st.port_events {
            st.spec
                .devices
                .iter()
                .filter(|d| d.kind == DeviceKind::Hardware && devices.contains(&d.name))
                .map(|d| d.name.clone())
                .collect()
        } else {
            Default::default()
        };
        st.watched = watched.clone();
        watched
    }

    async fn read_file(&self, path: &Path) -> Result<Option<Vec<u8>>, HostError> {
        if let Some(errno) = self.lock().file_read_faults.get(path).copied() {
            return Err(HostError::kernel(
                Op::File(path.display().to_string()),
                errno,
            ));
        }
        files::read_for_host(path, &self.sys_path(path))
    }

    async fn list_dir(&self, path: &Path) -> Result<Option<Vec<String>>, HostError> {
        files::list_dir_optional(&self.sys_path(path))
            .map_err(|e| HostError::from_io(Op::File(path.display().to_string()), &e))
    }

    async fn remove_file(&self, path: &Path) -> Result<(), HostError> {
        {
            let mut st = self.lock();
            self.take_fault(&mut st, SimOp::RemoveFile)?;
        }
        files::remove_optional(&self.sys_path(path))
            .map_err(|e| HostError::from_io(Op::File(path.display().to_string()), &e))
    }

    async fn reload_udev_rules(&self) -> Result<bool, HostError> {
        let mut st = self.lock();
        if let Err(e) = self.take_fault(&mut st, SimOp::ReloadUdev) {
            return Err(HostError::Command {
                op: Op::UdevReload,
                reason: format!("exit status: 1 ({e})"),
            });
        }
        if !self
            .sys_path(Path::new(super::linux::UDEV_CONTROL))
            .exists()
        {
            return Ok(false);
        }
        st.udev_reloads += 1;
        Ok(true)
    }

    async fn write_file_atomic(&self, path: &Path, contents: &[u8]) -> Result<(), HostError> {
        {
            let mut st = self.lock();
            self.take_fault(&mut st, SimOp::WriteFile)?;
        }
        let p = self.sys_path(path);
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| HostError::from_io(Op::File(path.display().to_string()), &e))?;
        }
        files::write_atomic(&p, contents)
            .map_err(|e| HostError::from_io(Op::File(path.display().to_string()), &e))
    }

    /// A simulated InfiniBand port's umad device is `/dev/null`: a descriptor to hand over,
    /// as the daemon hands over the real one; MADs are the ibsim tests' subject
    /// (tests/tests/system/ibping.rs), not the simulated host's.
    async fn open_umad(&self, dev: &str, port: u32) -> Result<std::os::fd::OwnedFd, HostError> {
        self.read_fault("umad")?;
        let ib = {
            let st = self.lock();
            let device = st.spec.devices.iter().find(|d| d.name == dev);
            match device.and_then(|d| d.ports.iter().find(|p| p.number == port)) {
                None => return Err(HostError::NotFound(format!("{dev}/{port}"))),
                Some(p) => p.link_layer == crate::model::LinkLayer::InfiniBand,
            }
        };
        if !ib {
            return Err(HostError::Unsupported {
                what: format!("a umad device for {dev}/{port}"),
                why: "the simulated host gives one to InfiniBand ports only".into(),
            });
        }
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
            .map(std::os::fd::OwnedFd::from)
            .map_err(|e| HostError::from_io(Op::File("/dev/null".into()), &e))
    }

    async fn umad_ports(&self) -> Result<Vec<(String, u32)>, HostError> {
        self.read_fault("umad")?;
        let st = self.lock();
        let mut ports: Vec<(String, u32)> = st
            .spec
            .devices
            .iter()
            .flat_map(|d| {
                d.ports
                    .iter()
                    .filter(|p| p.link_layer == crate::model::LinkLayer::InfiniBand)
                    .map(|p| (d.name.clone(), p.number))
            })
            .collect();
        ports.sort();
        Ok(ports)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader racing the simulated host's writer never sees a file half written: every
    /// value it reads is one the host wrote whole (the node GUID, unchanged throughout, and
    /// a port state and a counter whose text changes length at every write).
    #[test]
    fn a_concurrent_reader_never_sees_a_torn_file() {
        let host = SimHost::new(fixtures::demo_host()).unwrap();
        let dev = "mlx5_0";
        let dir = host.root().join("sys/class/infiniband").join(dev);
        let guid = std::fs::read_to_string(dir.join("node_guid")).unwrap();
        let port = dir.join("ports/1");
        assert!(port.join("counters/port_xmit_data").exists(), "a PMA port");
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut reads = 0u64;
                let mut last = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    let g = std::fs::read_to_string(dir.join("node_guid")).unwrap();
                    assert_eq!(g, guid, "node_guid torn");
                    let st = std::fs::read_to_string(port.join("state")).unwrap();
                    assert!(
                        st == "4: ACTIVE\n" || st == "1: DOWN\n",
                        "state torn: {st:?}"
                    );
                    let c = std::fs::read_to_string(port.join("counters/port_xmit_data")).unwrap();
                    let n: u64 = c
                        .strip_suffix('\n')
                        .and_then(|v| v.parse().ok())
                        .unwrap_or_else(|| panic!("counter torn: {c:?}"));
                    assert!(n >= last, "counter went back from {last} to {n}");
                    last = n;
                    reads += 1;
                }
                reads
            })
        };
        // Counted, not timed: a loaded machine writes slowly, and the test needs enough writes
        // interleaved with reads (a minute is only the bound against hanging).
        let start = std::time::Instant::now();
        let mut writes = 0u32;
        while writes < 40
            && start.elapsed() < std::time::Duration::from_secs(60)
            && !reader.is_finished()
        {
            let (state, phys) = if writes % 2 == 0 {
                (PortState::Down, PhysState::Disabled)
            } else {
                (PortState::Active, PhysState::LinkUp)
            };
            host.set_port_state(dev, 1, state, phys).unwrap();
            // 4 words = 1, then 10, 100, ...: the counter's text grows by a digit a write.
            host.add_traffic(dev, 1, 4 * 10u64.pow(writes % 12), 0)
                .unwrap();
            writes += 1;
        }
        stop.store(true, Ordering::SeqCst);
        let reads = reader.join().expect("no torn read");
        assert!(writes > 10 && reads > 10, "{writes} writes, {reads} reads");
    }

    /// Under a cost profile the reads run on the blocking pool and are charged: they give
    /// what the free host gives, and each device read is one GID query through the verbs.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_charged_host_reads_what_a_free_one_reads() {
        let host = SimHost::new(fixtures::demo_host()).unwrap();
        let free = host.read_devices().await.unwrap();
        let netdevs = host.read_netdevs().await.unwrap();
        let before = host.cost().counts();
        host.set_cost_profile(cost::CostProfile::lab().divided_by(100.0));
        assert_eq!(host.read_devices().await.unwrap(), free);
        assert_eq!(host.read_netdevs().await.unwrap(), netdevs);
        let ops = host.cost().counts().since(&before);
        assert_eq!(ops.verbs_gid_tables, free.len() as u64, "{ops:?}");
        assert!(ops.sysfs_files > 0, "{ops:?}");
    }

    /// The simulated host lists directories of its own tree: what the daemon wrote there, in
    /// byte order, and nothing of the real host's `/etc`.
    #[tokio::test]
    async fn list_dir_reads_the_simulated_tree() {
        let host = SimHost::new(fixtures::demo_host()).unwrap();
        let dir = Path::new("/etc/security/limits.d");
        assert_eq!(host.list_dir(dir).await.unwrap(), None);
        host.write_file_atomic(&dir.join("zz-rdma-manager.conf"), b"x\n")
            .await
            .unwrap();
        host.write_file_atomic(&dir.join("20-nproc.conf"), b"y\n")
            .await
            .unwrap();
        assert_eq!(
            host.list_dir(dir).await.unwrap().unwrap(),
            ["20-nproc.conf", "zz-rdma-manager.conf"]
        );
        host.remove_file(&dir.join("20-nproc.conf")).await.unwrap();
        assert_eq!(
            host.list_dir(dir).await.unwrap().unwrap(),
            ["zz-rdma-manager.conf"]
        );
        // A file where a directory is expected: the errno, as on the real host.
        let err = host
            .list_dir(&dir.join("zz-rdma-manager.conf"))
            .await
            .unwrap_err();
        assert_eq!(err.errno(), Some(Errno::ENOTDIR));
    }
}
