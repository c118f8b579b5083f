//! GID tables through libibverbs: one `ibv_query_gid_table` call per device (the uverbs
//! `QUERY_GID_TABLE` method, Linux 5.9 and later, rdma-core 30 and later) instead of reading
//! `gids/<i>` for every entry of every port through sysfs (1024 entries a port on rxe) and
//! `gid_attrs/types/<i>` and `gid_attrs/ndevs/<i>` for each used one.
//!
//! libibverbs is loaded at run time (`dlopen` of `libibverbs.so.1`): the daemon has no
//! build-time dependency on rdma-core and runs without it, reading GIDs through sysfs as
//! before. sysfs is also the fallback for a device the library cannot open or whose kernel
//! does not know the method.
//!
//! A device context costs two descriptors (the uverbs command file and its async event file),
//! so contexts are opened for one query and closed at once; the only ones kept are those of
//! `port_events`, for the async events of hardware whose driver disassociates them (see
//! docs/ARCHITECTURE.md).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::net::Ipv6Addr;
use std::sync::OnceLock;

use super::verbs_providers::Providers;
use crate::model::device::{GidEntry, GidType, PortAttrs};
use crate::model::{AttrError, Errno, Field};

/// The soname rdma-core's libibverbs has had since its first release.
pub const LIBIBVERBS: &str = "libibverbs.so.1";

/// `struct ibv_gid_entry` of `<infiniband/verbs.h>` (rdma-core 30 and later): the kernel's
/// `struct ib_uverbs_gid_entry`, 32 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RawGidEntry {
    pub gid: [u8; 16],
    pub gid_index: u32,
    pub port_num: u32,
    /// `IBV_GID_TYPE_IB` 0, `IBV_GID_TYPE_ROCE_V1` 1, `IBV_GID_TYPE_ROCE_V2` 2.
    pub gid_type: u32,
    /// 0 when the GID has no netdev (InfiniBand).
    pub ndev_ifindex: u32,
}

const _: () = assert!(std::mem::size_of::<RawGidEntry>() == 32);

/// The head of `struct ibv_port_attr` of `<infiniband/verbs.h>` up to `flags`: the layout
/// of `struct _compat_ibv_port_attr`, frozen since libibverbs 1.1, which the exported
/// `ibv_query_port` takes. Providers fill the whole, newer `struct ibv_port_attr` through it
/// (`port_cap_flags2`, `active_speed_ex` after `flags`), hence the room after it.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RawPortAttr {
    pub state: u32,
    /// `enum ibv_mtu`: 1 is 256 bytes ... 5 is 4096.
    pub max_mtu: u32,
    pub active_mtu: u32,
    pub gid_tbl_len: i32,
    pub port_cap_flags: u32,
    pub max_msg_sz: u32,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub pkey_tbl_len: u16,
    pub lid: u16,
    pub sm_lid: u16,
    pub lmc: u8,
    pub max_vl_num: u8,
    pub sm_sl: u8,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    pub active_width: u8,
    pub active_speed: u8,
    pub phys_state: u8,
    pub link_layer: u8,
    pub flags: u8,
    /// Room for what rdma-core has added after `flags` since (8 bytes so far).
    pub rest: [u64; 8],
}

const _: () = assert!(std::mem::offset_of!(RawPortAttr, pkey_tbl_len) == 32);
const _: () = assert!(std::mem::offset_of!(RawPortAttr, flags) == 47);

impl RawPortAttr {
    /// The fields the model keeps.
    pub fn attrs(&self) -> PortAttrs {
        PortAttrs {
            active_mtu: PortAttrs::mtu_bytes(self.active_mtu),
            max_mtu: PortAttrs::mtu_bytes(self.max_mtu),
            gid_table_len: u32::try_from(self.gid_tbl_len).unwrap_or(0),
            pkey_table_len: u32::from(self.pkey_tbl_len),
        }
    }
}

/// What one opened context told of a device: its used GID entries and each asked port's
/// attributes (or the errno of its query).
#[derive(Debug, Clone, Default)]
pub struct DeviceTables {
    pub gids: Vec<RawGidEntry>,
    pub ports: BTreeMap<u32, Result<RawPortAttr, Errno>>,
}

const IBV_GID_TYPE_IB: u32 = 0;
const IBV_GID_TYPE_ROCE_V1: u32 = 1;
const IBV_GID_TYPE_ROCE_V2: u32 = 2;

/// Why a GID table was not read through verbs (the caller reads sysfs instead).
#[derive(Debug, thiserror::Error)]
pub enum VerbsError {
    #[error("{LIBIBVERBS} cannot be loaded: {0}")]
    NoLibrary(String),
    #[error("{LIBIBVERBS} has no {symbol} (rdma-core older than 30?)")]
    NoSymbol { symbol: &'static str },
    #[error("ibv_get_device_list failed: {0}")]
    DeviceList(std::io::Error),
    #[error("libibverbs does not list RDMA device {0} (no uverbs device, or no access to it)")]
    NoDevice(String),
    #[error("ibv_open_device({dev}) failed: {source}")]
    Open { dev: String, source: std::io::Error },
    #[error("the async event file cannot be made non-blocking: {0}")]
    Events(std::io::Error),
    #[error("ibv_query_gid_table({dev}) failed: {errno}")]
    Query { dev: String, errno: Errno },
}

type GetDeviceList = unsafe extern "C" fn(*mut c_int) -> *mut *mut c_void;
type FreeDeviceList = unsafe extern "C" fn(*mut *mut c_void);
type GetDeviceName = unsafe extern "C" fn(*mut c_void) -> *const c_char;
/// `ibv_get_device_guid`: the node GUID, big-endian.
type GetDeviceGuid = unsafe extern "C" fn(*mut c_void) -> u64;
type OpenDevice = unsafe extern "C" fn(*mut c_void) -> *mut c_void;
type CloseDevice = unsafe extern "C" fn(*mut c_void) -> c_int;
/// `_ibv_query_gid_table(context, entries, max_entries, flags, entry_size)`: the exported
/// function behind the header's inline `ibv_query_gid_table`. Returns the number of entries
/// or a negative errno.
/// `ibv_query_port(context, port_num, port_attr)`, the exported function (the header's
/// inline of that name calls the provider directly): 0 or an errno.
type QueryPort = unsafe extern "C" fn(*mut c_void, u8, *mut RawPortAttr) -> c_int;
type QueryGidTable =
    unsafe extern "C" fn(*mut c_void, *mut RawGidEntry, usize, u32, usize) -> isize;
/// `ibv_get_async_event(context, event)`: 0, or -1 with errno (EAGAIN on a non-blocking fd).
type GetAsyncEvent = unsafe extern "C" fn(*mut c_void, *mut RawAsyncEvent) -> c_int;
type AckAsyncEvent = unsafe extern "C" fn(*mut RawAsyncEvent);

/// `struct ibv_async_event`: a union of pointers and the port number, then the event type.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RawAsyncEvent {
    /// The element: for port events its first four bytes are the port number.
    pub element: u64,
    pub event_type: u32,
}

/// `struct ibv_context` begins with the device pointer and `struct ibv_context_ops` (32
/// function pointers, frozen since libibverbs 1.1), then `cmd_fd` and `async_fd`.
const CONTEXT_CMD_FD_OFFSET: usize = 8 + 32 * 8;
const CONTEXT_ASYNC_FD_OFFSET: usize = CONTEXT_CMD_FD_OFFSET + 4;

/// The async event types of `enum ibv_event_type` that concern a port.
pub const IBV_EVENT_PORT_ACTIVE: u32 = 9;
pub const IBV_EVENT_PORT_ERR: u32 = 10;
pub const IBV_EVENT_LID_CHANGE: u32 = 11;
pub const IBV_EVENT_PKEY_CHANGE: u32 = 12;
pub const IBV_EVENT_SM_CHANGE: u32 = 13;
pub const IBV_EVENT_CLIENT_REREGISTER: u32 = 17;
pub const IBV_EVENT_GID_CHANGE: u32 = 18;
pub const IBV_EVENT_DEVICE_FATAL: u32 = 8;

/// The functions of libibverbs this module calls, resolved once.
pub struct Verbs {
    get_device_list: GetDeviceList,
    free_device_list: FreeDeviceList,
    get_device_name: GetDeviceName,
    get_device_guid: GetDeviceGuid,
    open_device: OpenDevice,
    close_device: CloseDevice,
    query_gid_table: QueryGidTable,
    query_port: QueryPort,
    get_async_event: GetAsyncEvent,
    ack_async_event: AckAsyncEvent,
    /// The providers loaded before a device list (see `verbs_providers`).
    providers: Providers,
    /// Keeps the library mapped while the pointers above are in use: for the life of the
    /// process (the `Verbs` lives in a static).
    _lib: libloading::Library,
}

impl Verbs {
    /// Loads libibverbs and resolves its functions.
    pub fn load() -> Result<Verbs, VerbsError> {
        // SAFETY: loading libibverbs runs its initialisers, which only set up its own state
        // (providers are loaded later, at the first device list).
        let lib = unsafe { libloading::Library::new(LIBIBVERBS) }
            .map_err(|e| VerbsError::NoLibrary(e.to_string()))?;
        // SAFETY: each symbol is declared with the prototype of rdma-core's verbs.h.
        unsafe {
            Ok(Verbs {
                get_device_list: sym(&lib, "ibv_get_device_list")?,
                free_device_list: sym(&lib, "ibv_free_device_list")?,
                get_device_name: sym(&lib, "ibv_get_device_name")?,
                get_device_guid: sym(&lib, "ibv_get_device_guid")?,
                open_device: sym(&lib, "ibv_open_device")?,
                close_device: sym(&lib, "ibv_close_device")?,
                query_gid_table: sym(&lib, "_ibv_query_gid_table")?,
                query_port: sym(&lib, "ibv_query_port")?,
                get_async_event: sym(&lib, "ibv_get_async_event")?,
                ack_async_event: sym(&lib, "ibv_ack_async_event")?,
                providers: Providers::beside_mapped_libibverbs(),
                _lib: lib,
            })
        }
    }

    /// The process's libibverbs, loaded at the first call; `None` when it cannot be (logged
    /// once: GIDs are then read through sysfs).
    pub fn shared() -> Option<&'static Verbs> {
        static VERBS: OnceLock<Option<Verbs>> = OnceLock::new();
        VERBS
            .get_or_init(|| match Verbs::load() {
                Ok(v) => {
                    tracing::debug!("GID tables are read through {LIBIBVERBS}");
                    Some(v)
                }
                Err(e) => {
                    tracing::info!(reason = %e, "GID tables are read through sysfs");
                    None
                }
            })
            .as_ref()
    }

    /// Loads the providers `needed` ([`needed`](super::verbs_providers::needed)) before the
    /// next [`Verbs::devices`], so that libibverbs does not load every provider it knows;
    /// `None` (a device whose provider is unknown) loads nothing and leaves it to libibverbs.
    pub fn load_providers(&self, needed: Option<&BTreeSet<&'static str>>) {
        if let Some(names) = needed {
            self.providers.load(names);
        }
    }

    /// The providers [`Verbs::load_providers`] has loaded.
    pub fn providers_loaded(&self) -> Vec<&'static str> {
        self.providers.loaded()
    }

    /// The devices libibverbs sees now. One list serves any number of reads: building it
    /// scans the devices, so a full enumeration asks once, not once per device.
    pub fn devices(&self) -> Result<DeviceList<'_>, VerbsError> {
        let mut n: c_int = 0;
        // SAFETY: ibv_get_device_list writes the count and returns an array we free below.
        let list = unsafe { (self.get_device_list)(&mut n) };
        if list.is_null() {
            return Err(VerbsError::DeviceList(std::io::Error::last_os_error()));
        }
        let count = usize::try_from(n).unwrap_or(0);
        let mut names = HashMap::with_capacity(count);
        for i in 0..count {
            // SAFETY: the array has `count` valid device pointers.
            let dev = unsafe { *list.add(i) };
            if dev.is_null() {
                continue;
            }
            // SAFETY: a listed device's name is a NUL-terminated string it owns.
            let name = unsafe { (self.get_device_name)(dev) };
            if name.is_null() {
                continue;
            }
            // SAFETY: as above.
            let name = unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned();
            names.insert(name, dev);
        }
        Ok(DeviceList {
            verbs: self,
            list,
            names,
        })
    }
}

/// # Safety
/// `T` must be the function pointer type of the symbol's C prototype.
unsafe fn sym<T: Copy>(lib: &libloading::Library, name: &'static str) -> Result<T, VerbsError> {
    // SAFETY: the caller vouches for the type.
    unsafe { lib.get::<T>(name.as_bytes()) }
        .map(|s| *s)
        .map_err(|_| VerbsError::NoSymbol { symbol: name })
}

/// A device list of libibverbs, freed on drop.
pub struct DeviceList<'a> {
    verbs: &'a Verbs,
    list: *mut *mut c_void,
    names: HashMap<String, *mut c_void>,
}

// SAFETY: the list and the devices it points to are libibverbs' heap objects, valid from any
// thread until the list is freed; libibverbs is thread-safe for listing, opening and querying.
// Whoever shares a list across threads keeps it behind a lock (LinuxHost does).
unsafe impl Send for DeviceList<'_> {}
// SAFETY: as above; the list is only read after it is made (`names` is never changed), and
// libibverbs opens and queries devices of one list from several threads at once.
unsafe impl Sync for DeviceList<'_> {}

impl Drop for DeviceList<'_> {
    fn drop(&mut self) {
        // SAFETY: the list came from ibv_get_device_list and is freed once; no context opened
        // from it outlives this borrow.
        unsafe { (self.verbs.free_device_list)(self.list) }
    }
}

/// Closes a device context on drop.
struct Context<'a> {
    verbs: &'a Verbs,
    ctx: *mut c_void,
}

impl Drop for Context<'_> {
    fn drop(&mut self) {
        // SAFETY: the context came from ibv_open_device and is closed once.
        unsafe { (self.verbs.close_device)(self.ctx) };
    }
}

impl DeviceList<'_> {
    /// Whether the list has a device of this name.
    pub fn knows(&self, dev: &str) -> bool {
        self.names.contains_key(dev)
    }

    /// The node GUID libibverbs has for a listed device, as sysfs's `node_guid` reads it.
    /// A list kept across reads names devices as they were when it was made: a device
    /// renamed since, and another given its old name, differ in their GUIDs.
    pub fn node_guid(&self, dev: &str) -> Option<u64> {
        let &device = self.names.get(dev)?;
        // SAFETY: `device` is from the live list.
        Some(u64::from_be(unsafe {
            (self.verbs.get_device_guid)(device)
        }))
    }

    /// Every valid entry of the device's GID tables, all ports, in one call, and the
    /// attributes of each of `ports`, through one opened context. `max_entries` must be at
    /// least the number of valid entries (the kernel refuses a shorter buffer with EINVAL,
    /// which fails the whole); the sum of the ports' table lengths always is. A port whose
    /// query fails has its errno.
    pub fn tables(
        &self,
        dev: &str,
        max_entries: usize,
        ports: &[u32],
    ) -> Result<DeviceTables, VerbsError> {
        let open = self.open(dev)?;
        let mut entries = vec![RawGidEntry::default(); max_entries.max(1)];
        // SAFETY: the buffer holds `entries.len()` entries of the size passed.
        let n = unsafe {
            (self.verbs.query_gid_table)(
                open.ctx.ctx,
                entries.as_mut_ptr(),
                entries.len(),
                0,
                std::mem::size_of::<RawGidEntry>(),
            )
        };
        let n = usize::try_from(n).map_err(|_| VerbsError::Query {
            dev: dev.to_string(),
            errno: Errno(i32::try_from(-n).unwrap_or(libc::EIO)),
        })?;
        entries.truncate(n.min(entries.len()));
        let ports = ports
            .iter()
            .map(|&port| (port, open.query_port(port)))
            .collect();
        drop(open);
        Ok(DeviceTables {
            gids: entries,
            ports,
        })
    }
}

/// A device context kept open (for its async events); closed on drop.
pub struct OpenContext<'a> {
    ctx: Context<'a>,
}

// SAFETY: a context is libibverbs' heap object, usable from any thread; async events are
// read by one owner at a time (`&mut self`).
unsafe impl Send for OpenContext<'_> {}

impl<'a> DeviceList<'a> {
    /// Opens a device and keeps its context (two descriptors: the uverbs command file and
    /// its async event file). The context outlives the list: libibverbs keeps an opened
    /// device for its contexts after `ibv_free_device_list`.
    pub fn open(&self, dev: &str) -> Result<OpenContext<'a>, VerbsError> {
        let Some(&device) = self.names.get(dev) else {
            return Err(VerbsError::NoDevice(dev.to_string()));
        };
        // SAFETY: `device` is from the live list.
        let ctx = unsafe { (self.verbs.open_device)(device) };
        if ctx.is_null() {
            return Err(VerbsError::Open {
                dev: dev.to_string(),
                source: std::io::Error::last_os_error(),
            });
        }
        Ok(OpenContext {
            ctx: Context {
                verbs: self.verbs,
                ctx,
            },
        })
    }
}

impl OpenContext<'_> {
    /// One port's attributes (`ibv_query_port`).
    pub fn query_port(&self, port: u32) -> Result<RawPortAttr, Errno> {
        let port = u8::try_from(port).map_err(|_| Errno(libc::EINVAL))?;
        let mut attr = RawPortAttr::default();
        // SAFETY: `attr` is zeroed and longer than any `struct ibv_port_attr` rdma-core has
        // defined (see RawPortAttr); the context is open.
        let rc = unsafe { (self.ctx.verbs.query_port)(self.ctx.ctx, port, &mut attr) };
        match rc {
            0 => Ok(attr),
            e if e > 0 => Err(Errno(e)),
            _ => Err(Errno(libc::EIO)),
        }
    }

    fn fd_at(&self, offset: usize) -> c_int {
        // SAFETY: `struct ibv_context` is at least that long (see CONTEXT_CMD_FD_OFFSET);
        // the read is of a plain int.
        unsafe {
            self.ctx
                .ctx
                .cast::<u8>()
                .add(offset)
                .cast::<c_int>()
                .read_unaligned()
        }
    }

    /// The uverbs command file's descriptor.
    pub fn cmd_fd(&self) -> c_int {
        self.fd_at(CONTEXT_CMD_FD_OFFSET)
    }

    /// The async event file's descriptor: readable when an event waits.
    pub fn async_fd(&self) -> c_int {
        self.fd_at(CONTEXT_ASYNC_FD_OFFSET)
    }

    /// Makes [`OpenContext::next_event`] return at once when no event waits (`O_NONBLOCK` on
    /// the async event file, as `ibv_get_async_event(3)` says to).
    pub fn set_events_nonblocking(&self) -> Result<(), VerbsError> {
        let fd = self.async_fd();
        // SAFETY: fcntl on a descriptor the context owns; only its status flags change.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        // SAFETY: as above.
        if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(VerbsError::Events(std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// The next async event (type, port number for port events), acknowledged; `None` when
    /// none waits on a non-blocking async fd.
    pub fn next_event(&mut self) -> std::io::Result<Option<(u32, u32)>> {
        let mut ev = RawAsyncEvent::default();
        // libibverbs fails a short read (the file closed under a removed device) without
        // setting errno: cleared first, so that a stale EAGAIN is not taken for "no event".
        // SAFETY: errno is this thread's.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: `ev` has the layout of struct ibv_async_event.
        let rc = unsafe { (self.ctx.verbs.get_async_event)(self.ctx.ctx, &mut ev) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            return match e.kind() {
                std::io::ErrorKind::WouldBlock => Ok(None),
                _ if e.raw_os_error() == Some(0) => {
                    Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof))
                }
                _ => Err(e),
            };
        }
        // SAFETY: the event came from ibv_get_async_event and is acknowledged once.
        unsafe { (self.ctx.verbs.ack_async_event)(&mut ev) };
        Ok(Some((ev.event_type, ev.element as u32)))
    }
}

/// The name of a netdev by ifindex (`if_indextoname`).
pub fn ifname(ifindex: u32) -> Field<String> {
    let mut buf = [0 as c_char; libc::IF_NAMESIZE];
    // SAFETY: the buffer has IF_NAMESIZE bytes, as if_indextoname requires.
    let p = unsafe { libc::if_indextoname(ifindex, buf.as_mut_ptr()) };
    if p.is_null() {
        return Err(AttrError::Unreadable(Errno::from_io(
            &std::io::Error::last_os_error(),
        )));
    }
    // SAFETY: on success the buffer holds a NUL-terminated name.
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned())
}

/// The entries of a GID table query as the sysfs reader gives them: per port, by index, the
/// unused (all-zero) entries left out, the type as sysfs names it, and the netdev's name,
/// looked up once per ifindex through `ifname`. A GID without a netdev (InfiniBand) has the
/// error reading its sysfs `ndevs` file gives: EINVAL.
pub fn gids_by_port(
    raw: &[RawGidEntry],
    mut ifname: impl FnMut(u32) -> Field<String>,
) -> BTreeMap<u32, Vec<GidEntry>> {
    let mut names: HashMap<u32, Field<String>> = HashMap::new();
    let mut out: BTreeMap<u32, Vec<GidEntry>> = BTreeMap::new();
    for e in raw {
        let gid = Ipv6Addr::from(e.gid);
        if gid.is_unspecified() {
            continue;
        }
        let gid_type = match e.gid_type {
            IBV_GID_TYPE_IB | IBV_GID_TYPE_ROCE_V1 => Ok(GidType::IbRoceV1),
            IBV_GID_TYPE_ROCE_V2 => Ok(GidType::RoceV2),
            other => Err(AttrError::malformed(
                &other.to_string(),
                "expected a GID type of 0, 1 or 2",
            )),
        };
        let ndev = match e.ndev_ifindex {
            0 => Err(AttrError::Unreadable(Errno(libc::EINVAL))),
            i => names.entry(i).or_insert_with(|| ifname(i)).clone(),
        };
        out.entry(e.port_num).or_default().push(GidEntry {
            index: e.gid_index,
            gid,
            gid_type,
            ndev,
        });
    }
    for gids in out.values_mut() {
        gids.sort_by_key(|g| g.index);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(port: u32, index: u32, gid: &str, ty: u32, ifindex: u32) -> RawGidEntry {
        RawGidEntry {
            gid: gid.parse::<Ipv6Addr>().expect("gid").octets(),
            gid_index: index,
            port_num: port,
            gid_type: ty,
            ndev_ifindex: ifindex,
        }
    }

    #[test]
    fn entries_become_the_sysfs_reader_s_gids() {
        let raw = [
            entry(1, 1, "::ffff:10.0.0.1", 2, 7),
            entry(1, 0, "fe80::200:ff:fe00:1", 2, 7),
            entry(2, 0, "fe80::1", 0, 0),
            entry(2, 3, "fe80::2", 1, 9),
            // Unused entries are never reported by the kernel; if one were, it is left out
            // as the sysfs reader leaves it out.
            entry(1, 5, "::", 2, 7),
        ];
        let mut asked = Vec::new();
        let got = gids_by_port(&raw, |i| {
            asked.push(i);
            match i {
                7 => Ok("veth0".to_string()),
                _ => Err(AttrError::Unreadable(Errno(libc::ENXIO))),
            }
        });
        // One lookup per ifindex, not per entry.
        assert_eq!(asked, [7, 9]);
        let p1 = &got[&1];
        assert_eq!(
            p1.iter()
                .map(|g| (g.index, g.gid.to_string()))
                .collect::<Vec<_>>(),
            [
                (0, "fe80::200:ff:fe00:1".to_string()),
                (1, "::ffff:10.0.0.1".to_string())
            ]
        );
        assert!(p1
            .iter()
            .all(|g| g.gid_type == Ok(GidType::RoceV2) && g.ndev.as_deref() == Ok("veth0")));
        let p2 = &got[&2];
        assert_eq!(p2[0].gid_type, Ok(GidType::IbRoceV1));
        assert_eq!(p2[0].ndev, Err(AttrError::Unreadable(Errno(libc::EINVAL))));
        assert_eq!(p2[1].gid_type, Ok(GidType::IbRoceV1));
        assert_eq!(p2[1].ndev, Err(AttrError::Unreadable(Errno(libc::ENXIO))));
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn an_unknown_gid_type_spoils_only_its_field() {
        let got = gids_by_port(&[entry(1, 0, "fe80::1", 7, 0)], |_| unreachable!());
        assert!(matches!(got[&1][0].gid_type, Err(AttrError::Malformed(_))));
        assert_eq!(got[&1][0].gid, "fe80::1".parse::<Ipv6Addr>().expect("gid"));
    }

    /// The byte layout the kernel writes (`struct ib_uverbs_gid_entry`): the GID, then
    /// gid_index, port_num, gid_type and netdev ifindex as native u32s.
    #[test]
    fn the_entry_has_the_kernel_s_layout() {
        let mut bytes = [0u8; 32];
        bytes[0] = 0xfe;
        bytes[1] = 0x80;
        bytes[15] = 1;
        bytes[16..20].copy_from_slice(&3u32.to_ne_bytes());
        bytes[20..24].copy_from_slice(&1u32.to_ne_bytes());
        bytes[24..28].copy_from_slice(&2u32.to_ne_bytes());
        bytes[28..32].copy_from_slice(&5u32.to_ne_bytes());
        // SAFETY: RawGidEntry is repr(C), 32 bytes of plain integers.
        let e: RawGidEntry = unsafe { std::mem::transmute(bytes) };
        assert_eq!(e, entry(1, 3, "fe80::1", 2, 5));
    }

    /// Without the library (or where it is not installed, as on the build machines) the
    /// error says so and nothing panics.
    #[test]
    fn a_missing_library_is_a_typed_error() {
        match Verbs::load() {
            Ok(v) => match v.devices() {
                // A kernel without RDMA (the build machines): the list itself fails, typed.
                Err(e) => assert!(matches!(e, VerbsError::DeviceList(_)), "{e}"),
                Ok(list) => assert!(matches!(
                    list.tables("no-such-device", 4, &[1]),
                    Err(VerbsError::NoDevice(_))
                )),
            },
            Err(e) => assert!(matches!(e, VerbsError::NoLibrary(_)), "{e}"),
        }
    }
}
