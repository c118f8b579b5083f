//! ibstat-compatible output: what rdma-core's `ibstat` prints for a host's RDMA devices, byte
//! for byte. One renderer for both programs that print it: `rdma-managerd show` renders the
//! service's model of sysfs, `rdma-tui --ibstat` the D-Bus objects the service publishes.
//! Each gives its devices through [`IbstatDevice`], i.e. rebuilds libibumad's `umad_ca_t`
//! ([`UmadCa`]) from what it holds; everything from there on is here.
//!
//! # Reference version
//! The target is rdma-core **v44.0** (`infiniband-diags/ibstat.c`, `libibumad/umad.c`,
//! `libibumad/sysfs.c`), the `infiniband-diags 44.0-2` of Debian bookworm that the QEMU lab
//! runs. The expected strings of the service's tests (`service/src/ibstat/tests.rs`) were
//! produced by that very binary, run against a fake `/sys/class/infiniband` (tmpfs in a
//! private mount namespace; see `service/src/ibstat/testdata/oracle.sh`), and agree with the
//! reading of the source below. The kernel lab compares `rdma-tui --ibstat` with the real
//! `ibstat` on real rxe devices (`tests/lab/guest-daemon-checks.sh`).
//!
//! Later upstream changes that this module does not follow (none is in Debian 44.0-2):
//! - "ibdiags: Do not panic on ibstat query failure" (v54.0): a device that cannot be read
//!   gets a warning and the next device is still printed; 44.0 exits.
//! - "ibstat: ignore non-RDMA endpoint devices when umad_get_ca() fails" (v63.0).
//! - "ibstat: show effective port bandwidth using ibv_query_port_speed()" (after v64.0):
//!   an `Effective speed:` line after `Rate:` when the verb succeeds.
//! - "libibumad: Increase max ports supported to 192" (v64.0): more than 9 ports.
//!
//! # Format rules (ibstat.c v44.0)
//! - Devices (`main`): `umad_get_ca_device_list` (umad.c) takes `readdir` order of
//!   `/sys/class/infiniband`, keeping names whose `node_type` reads (strtoul) 1..=3
//!   (`is_ib_type`: CA, switch, router; iWARP RNICs are not shown); ibstat then sorts them
//!   with `umad_sort_ca_device_list`, a `qsort` by `strcmp` (byte order: `mlx5_10` before
//!   `mlx5_2`). No blank line between devices.
//! - Header (`ca_dump`): `<Kind> '<name>'`, then tab-indented `<Kind> type: <hca_type>`,
//!   `Number of ports: <highest port number>`, `Firmware version: <fw_ver>`,
//!   `Hardware version: <hw_rev>`, `Node GUID: 0x%016llx`, `System image GUID: 0x%016llx`.
//!   `<Kind>` is `node_type_str[]`: `CA`, `Switch`, `Router`. Unreadable `hca_type`, `fw_ver`,
//!   `hw_rev` print as empty strings after the `": "` (a trailing space remains);
//!   they are cut to 39, 19 and 19 bytes (the `umad_ca_t` buffers, `get_ca`).
//! - Ports (`port_dump`), in port number order (`ca.ports[0..=numports]`), `\tPort N:` then
//!   two tabs before each line: `State:` (`port_state_str[]`: `???`, `Down`,
//!   `Initializing`, `Armed`, `Active`; above 4 — ACTIVE_DEFER — `???`), `Physical state:`
//!   (`port_phy_state_str[]`: `No state change`, `Sleep`, `Polling`, `Disabled`,
//!   `PortConfigurationTraining`, `LinkUp`, `LinkErrorRecovery`, `PhyTest`; above 7 `???`),
//!   `Rate:`, `Base lid: %d`, `LMC: %d`, `SM lid: %d`, `Capability mask: 0x%08x`,
//!   `Port GUID: 0x%016llx`, `Link layer: <link_layer, or IB if unreadable>`.
//! - Rate: libibumad reads the rate file with `strtoul` (the integer before the first
//!   non-digit), so `100 Gb/sec (4X EDR)` prints `Rate: 100`, `10 Gb/sec (4X)` prints
//!   `Rate: 10`; a value of 2 prints `Rate: 2.5` (so `2.5 Gb/sec (1X SDR)` prints `2.5`);
//!   `is_fdr10` re-reads the file and, when the five characters before the first `)` are
//!   `fdr10` in any case, prints `Rate: 10 (FDR10)` (`10 Gb/sec (1X FDR10)`, as rxe shows).
//! - Byte order: libibumad stores GUIDs and the capability mask big-endian (`htobe64`,
//!   `htobe32`) and ibstat converts them back (`be64toh`, `ntohl`): the printed numbers are
//!   the sysfs values, unswapped (`cap_mask` 0x00010000 prints `0x00010000`).
//! - Port GUID: the low 64 bits of `ports/N/gids/0` (`get_port`, `SYS_PORT_GID`).
//! - `ibstat DEV PORT` (`ca_stat` with `portnum >= 0`): `CA: '<name>'` (note the colon),
//!   then the port block without any indentation: `Port N:`, `State: ...`.
//! - `ibstat -s`: the header only. `ibstat -l`: the sorted names, one per line (no device is
//!   read beyond `node_type`). `ibstat -p` (`ports_list`): for each device the GUID of every
//!   port 0..=numports, `0x%016llx`, skipping zero GUIDs (absent ports read as zero).
//!
//! # Failures (what ibstat 44.0 does)
//! libibumad reads a whole device or nothing (`get_ca`, `get_port` in umad.c): an unreadable
//! `node_guid`, `sys_image_guid`, `lid_mask_count`, `sm_lid`, `sm_sl`, `lid`, `state`,
//! `phys_state`, `rate`, `cap_mask` or `gids/0`, a `node_guid` with fewer than four groups,
//! a port without P_Keys, or a port numbered 10 or more fails the device, and ibstat 44.0
//! then exits (`IBPANIC("stat of IB device '%s' failed")`) after what it printed so far:
//! [`run_all`] gives that output and the [`IbstatError`]. `ibstat NAME` for a device not in
//! the list fails with `'NAME' IB device can't be found` ([`render_named`]). Both programs
//! print what ibstat printed up to the failure on standard output, then ibstat's message on
//! standard error as `Error: <message>` (not ibstat's `ibpanic: [pid] main: <message>: <errno
//! text>`), followed by our reason when libibumad could not read a device
//! ([`IbstatError::cause`]), and exit with status 1 (ibstat: 255).
//!
//! A *malformed* value is not a failure for libibumad: it reads every number with `strtoul`
//! (`"ACTIVE"` reads 0 and prints `State: ???`, `"garbage"` as a lid prints `Base lid: 0`).
//!
//! # The two sources, and what each can reproduce
//! - **The service's model** (`DeviceSnapshot`, `service/src/ibstat/umad.rs`) keeps the raw
//!   text of a malformed attribute (`AttrError::Malformed { value }`) and re-reads it the
//!   libibumad way, so it reproduces every case above.
//! - **The D-Bus objects** (`tui/src/ibstat.rs`) carry parsed values: a property that the
//!   service could not read is empty or zero and named in the object's `Unreadable` map.
//!   An unreadable (missing, failed read) attribute is reproduced: it fails the device or
//!   prints empty / `IB` exactly as above. A *malformed* one is not: the bus does not carry
//!   the raw text that libibumad would `strtoul`, so rdma-tui stops at that device with
//!   [`IbstatError::Unknown`] (`cannot tell what ibstat prints for '...'`) instead of
//!   guessing. A `node_type` the service could not parse is taken as unreadable, i.e. the
//!   device is not listed: the kernel writes `<number>: <name>` for the node types 1..=7 the
//!   service knows, so what it cannot parse has a number outside 1..=3 and is not listed by
//!   ibstat either. `gids/0` is never named unreadable on the bus: a port without GID 0
//!   prints GUID 0 from both sources (the all-zero GID of an unused entry).

pub mod args;
pub mod bus;
pub mod clib;
pub mod umad;

use std::fmt::Write as _;

pub use args::{IbstatArgError, IbstatArgs};
pub use umad::{CaError, UmadCa, UmadPort};

/// A device as ibstat sees it through libibumad. The service implements it on its model
/// (`DeviceSnapshot`, from sysfs), rdma-tui on the D-Bus objects it holds.
pub trait IbstatDevice {
    /// The device's name (its directory under `/sys/class/infiniband`).
    fn name(&self) -> &str;
    /// `node_type` as libibumad's `sys_read_uint` reads it (`strtoul` of the file: 1 for
    /// `1: CA`); `None` when it cannot be read. Decides whether ibstat lists the device.
    fn node_type(&self) -> Option<u32>;
    /// `get_ca` (umad.c v44.0): the whole device, or why libibumad fails on it (or why the
    /// source cannot tell).
    fn get_ca(&self) -> Result<UmadCa, CaError>;
}

/// Why ibstat would fail where a device is rendered. `Display` gives ibstat's own message,
/// without its `ibpanic: [<pid>] main: ` prefix and `: <strerror>` suffix (except
/// [`IbstatError::Unknown`], which is ours).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IbstatError {
    /// The device is not in ibstat's list (`node_type` unreadable or not CA/switch/router):
    /// `IBPANIC("'%s' IB device can't be found")` in `main`.
    #[error("'{name}' IB device can't be found")]
    NotFound { name: String },
    /// libibumad could not read the device (`umad_get_ca` failed); ibstat 44.0 then exits
    /// with `IBPANIC("stat of IB device '%s' failed")`. `cause` is ours, not ibstat's.
    #[error("stat of IB device '{name}' failed")]
    StatFailed { name: String, cause: String },
    /// `ibstat DEV PORT` for a port the device does not have: `IBWARN("%s: '%s' has no port
    /// number %d - max (%d)")` in `ca_stat`, after which 44.0 exits with the
    /// "stat of IB device '...' failed" panic.
    #[error("{kind}: '{name}' has no port number {port} - max ({max})")]
    NoSuchPort {
        kind: &'static str,
        name: String,
        port: u32,
        max: u32,
    },
    /// `ibstat -p` could not read a device (`umad_get_ca_portguids` failed):
    /// `IBPANIC("can't list ports")` in `main`. `cause` is ours.
    #[error("can't list ports")]
    ListPortsFailed { name: String, cause: String },
    /// The source does not hold what ibstat would read for this device ([`CaError::Unknown`]):
    /// no output can be promised to match. Not an ibstat message.
    #[error("cannot tell what ibstat prints for '{name}': {cause}")]
    Unknown { name: String, cause: String },
}

impl IbstatError {
    /// Our reason behind ibstat's message, when there is one ([`IbstatError::StatFailed`],
    /// [`IbstatError::ListPortsFailed`]).
    pub fn cause(&self) -> Option<&str> {
        match self {
            IbstatError::StatFailed { cause, .. } | IbstatError::ListPortsFailed { cause, .. } => {
                Some(cause)
            }
            _ => None,
        }
    }
}

/// What one ibstat run would produce: its standard output and, if it stopped on an error,
/// that error (ibstat 44.0 exits with status 255 after printing the message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IbstatRun {
    pub stdout: String,
    pub error: Option<IbstatError>,
}

impl IbstatRun {
    /// The run as `Direct.GetIbstat` answers it: the output, then ibstat's message and our
    /// reason behind it ([`IbstatError::cause`]), both empty when it did not stop.
    pub fn into_reply(self) -> (String, String, String) {
        let (message, cause) = match &self.error {
            Some(e) => (e.to_string(), e.cause().unwrap_or_default().to_string()),
            None => (String::new(), String::new()),
        };
        (self.stdout, message, cause)
    }

    fn stopped(stdout: String, error: IbstatError) -> Self {
        IbstatRun {
            stdout,
            error: Some(error),
        }
    }
}

/// `node_type_str[]` (ibstat.c): index by node type, `???` above `IB_NODE_MAX` (4).
fn node_type_str(node_type: u32) -> &'static str {
    match node_type {
        1 => "CA",
        2 => "Switch",
        3 => "Router",
        4 => "iWARP RNIC",
        _ => "???",
    }
}

/// `port_state_str[]` (ibstat.c), `???` above 4.
fn port_state_str(state: u32) -> &'static str {
    match state {
        1 => "Down",
        2 => "Initializing",
        3 => "Armed",
        4 => "Active",
        _ => "???",
    }
}

/// `port_phy_state_str[]` (ibstat.c), `???` above 7. Note `PhyTest` without the space
/// sysfs prints.
fn port_phy_state_str(phys: u32) -> &'static str {
    match phys {
        0 => "No state change",
        1 => "Sleep",
        2 => "Polling",
        3 => "Disabled",
        4 => "PortConfigurationTraining",
        5 => "LinkUp",
        6 => "LinkErrorRecovery",
        7 => "PhyTest",
        _ => "???",
    }
}

/// C `%d` of an `unsigned` field.
fn c_int(v: u32) -> i32 {
    i32::from_ne_bytes(v.to_ne_bytes())
}

/// `ca_dump` (ibstat.c).
fn write_header(out: &mut String, ca: &UmadCa) {
    let kind = node_type_str(ca.node_type);
    let _ = writeln!(out, "{kind} '{}'", ca.name);
    let _ = writeln!(out, "\t{kind} type: {}", ca.ca_type);
    let _ = writeln!(out, "\tNumber of ports: {}", c_int(ca.numports));
    let _ = writeln!(out, "\tFirmware version: {}", ca.fw_ver);
    let _ = writeln!(out, "\tHardware version: {}", ca.hw_ver);
    let _ = writeln!(out, "\tNode GUID: 0x{:016x}", ca.node_guid);
    let _ = writeln!(out, "\tSystem image GUID: 0x{:016x}", ca.system_guid);
}

/// `port_dump` (ibstat.c); `alone` for `ibstat DEV PORT` (no indentation).
fn write_port(out: &mut String, p: &UmadPort, alone: bool) {
    let (hdrpre, pre) = if alone { ("", "") } else { ("\t", "\t\t") };
    let _ = writeln!(out, "{hdrpre}Port {}:", p.portnum);
    let _ = writeln!(out, "{pre}State: {}", port_state_str(p.state));
    let _ = writeln!(
        out,
        "{pre}Physical state: {}",
        port_phy_state_str(p.phys_state)
    );
    if p.fdr10 {
        let _ = writeln!(out, "{pre}Rate: {} (FDR10)", c_int(p.rate));
    } else if p.rate != 2 {
        let _ = writeln!(out, "{pre}Rate: {}", c_int(p.rate));
    } else {
        let _ = writeln!(out, "{pre}Rate: 2.5");
    }
    let _ = writeln!(out, "{pre}Base lid: {}", c_int(p.base_lid));
    let _ = writeln!(out, "{pre}LMC: {}", c_int(p.lmc));
    let _ = writeln!(out, "{pre}SM lid: {}", c_int(p.sm_lid));
    let _ = writeln!(out, "{pre}Capability mask: 0x{:08x}", p.capmask);
    let _ = writeln!(out, "{pre}Port GUID: 0x{:016x}", p.port_guid);
    let _ = writeln!(out, "{pre}Link layer: {}", p.link_layer);
}

/// How ibstat was asked to print a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Full,
    Short,
    Port(u32),
}

/// `umad_get_ca` of one device, failures turned into ibstat's (`fails`) or ours.
fn read_ca<D: IbstatDevice + ?Sized>(
    dev: &D,
    fails: impl FnOnce(String, String) -> IbstatError,
) -> Result<UmadCa, IbstatError> {
    let name = dev.name().to_string();
    dev.get_ca().map_err(|e| match e {
        CaError::Fails(cause) => fails(name, cause),
        CaError::Unknown(cause) => IbstatError::Unknown { name, cause },
    })
}

/// `ca_stat` (ibstat.c v44.0) for one device already in the list.
fn ca_stat<D: IbstatDevice + ?Sized>(
    out: &mut String,
    dev: &D,
    mode: Mode,
) -> Result<(), IbstatError> {
    let ca = read_ca(dev, |name, cause| IbstatError::StatFailed { name, cause })?;
    match mode {
        Mode::Port(n) => {
            let port = (n <= ca.numports)
                .then(|| ca.ports.get(&n))
                .flatten()
                .ok_or_else(|| IbstatError::NoSuchPort {
                    kind: node_type_str(ca.node_type),
                    name: ca.name.clone(),
                    port: n,
                    max: ca.numports,
                })?;
            let _ = writeln!(out, "{}: '{}'", node_type_str(ca.node_type), ca.name);
            write_port(out, port, true);
        }
        Mode::Short => write_header(out, &ca),
        Mode::Full => {
            write_header(out, &ca);
            for port in ca.ports.values() {
                write_port(out, port, false);
            }
        }
    }
    Ok(())
}

/// `is_ib_type` (umad.c): `node_type` 1..=3 (CA, switch, router). RNICs (iWARP, 4), usNIC
/// and devices whose `node_type` cannot be read are not listed.
fn is_ib_type<D: IbstatDevice + ?Sized>(dev: &D) -> bool {
    dev.node_type().is_some_and(|t| (1..=3).contains(&t))
}

/// The devices ibstat lists, in its order (`umad_get_ca_device_list` filtered by
/// `is_ib_type`, then `umad_sort_ca_device_list`: `strcmp` order).
pub fn device_list<D: IbstatDevice>(devices: &[D]) -> Vec<&D> {
    let mut list: Vec<&D> = devices.iter().filter(|d| is_ib_type(*d)).collect();
    list.sort_by(|a, b| a.name().as_bytes().cmp(b.name().as_bytes()));
    list
}

fn find_listed<D: IbstatDevice + ?Sized>(dev: &D) -> Result<(), IbstatError> {
    if is_ib_type(dev) {
        Ok(())
    } else {
        Err(IbstatError::NotFound {
            name: dev.name().to_string(),
        })
    }
}

fn stat_all<D: IbstatDevice>(devices: &[D], mode: Mode) -> IbstatRun {
    let mut stdout = String::new();
    for dev in device_list(devices) {
        if let Err(e) = ca_stat(&mut stdout, dev, mode) {
            return IbstatRun::stopped(stdout, e);
        }
    }
    IbstatRun {
        stdout,
        error: None,
    }
}

/// One ibstat run with `args`, as ibstat 44.0's `main` does it: the devices ibstat lists,
/// or the one named (`'NAME' IB device can't be found` when it is not listed, with nothing
/// printed); then `-p` (the port GUIDs) before `-l` (the names) before `-s` (the headers)
/// before a port (`ibstat DEV PORT`, which `-s` overrides) before the full output. The output
/// up to a failure, and the failure.
pub fn run<D: IbstatDevice>(devices: &[D], args: &IbstatArgs) -> IbstatRun {
    let listed = device_list(devices);
    let selected = match &args.device {
        None => listed,
        Some(name) => match listed.into_iter().find(|d| d.name() == name) {
            Some(dev) => vec![dev],
            None => {
                let name = name.clone();
                return IbstatRun::stopped(String::new(), IbstatError::NotFound { name });
            }
        },
    };
    let mut stdout = String::new();
    if args.port_list {
        for dev in selected {
            if let Err(e) = port_guids(&mut stdout, dev) {
                return IbstatRun::stopped(stdout, e);
            }
        }
        return IbstatRun {
            stdout,
            error: None,
        };
    }
    let dev_port = args.dev_port();
    let mode = match u32::try_from(dev_port) {
        _ if args.short => Mode::Short,
        Ok(port) => Mode::Port(port),
        Err(_) => Mode::Full,
    };
    for dev in selected {
        if args.list_only {
            let _ = writeln!(stdout, "{}", dev.name());
        } else if let Err(e) = ca_stat(&mut stdout, dev, mode) {
            return IbstatRun::stopped(stdout, e);
        }
    }
    IbstatRun {
        stdout,
        error: None,
    }
}

/// `ibstat` with no arguments, with the error that stopped it, if any (ibstat 44.0 stops
/// at the first device libibumad cannot read; what came before is still printed).
pub fn run_all<D: IbstatDevice>(devices: &[D]) -> IbstatRun {
    stat_all(devices, Mode::Full)
}

/// `ibstat` with no arguments: every device. Its standard output only; see [`run_all`]
/// for the error ibstat would stop on.
pub fn render_all<D: IbstatDevice>(devices: &[D]) -> String {
    run_all(devices).stdout
}

/// `ibstat -s`: the header of every device.
pub fn render_all_short<D: IbstatDevice>(devices: &[D]) -> String {
    stat_all(devices, Mode::Short).stdout
}

/// `ibstat DEV` and `ibstat DEV PORT` for a device the caller found. ibstat prints nothing
/// on standard output when these fail, so an error is the whole result.
pub fn render_device<D: IbstatDevice + ?Sized>(
    dev: &D,
    port: Option<u32>,
) -> Result<String, IbstatError> {
    find_listed(dev)?;
    let mut out = String::new();
    ca_stat(&mut out, dev, port.map_or(Mode::Full, Mode::Port))?;
    Ok(out)
}

/// `ibstat NAME [PORT]` as ibstat's `main` does it: the device is looked up by name among the
/// listed ones (`'NAME' IB device can't be found` when it is not there), then printed.
pub fn render_named<D: IbstatDevice>(
    devices: &[D],
    name: &str,
    port: Option<u32>,
) -> Result<String, IbstatError> {
    let dev = device_list(devices)
        .into_iter()
        .find(|d| d.name() == name)
        .ok_or_else(|| IbstatError::NotFound {
            name: name.to_string(),
        })?;
    render_device(dev, port)
}

/// `ibstat -s DEV` (a port argument changes nothing with `-s`).
pub fn render_device_short<D: IbstatDevice + ?Sized>(dev: &D) -> Result<String, IbstatError> {
    find_listed(dev)?;
    let mut out = String::new();
    ca_stat(&mut out, dev, Mode::Short)?;
    Ok(out)
}

/// `ibstat -l`: the names of the listed devices, one per line. Nothing but `node_type` is
/// read, so devices that `ibstat` alone would fail on are listed too.
pub fn render_list<D: IbstatDevice>(devices: &[D]) -> String {
    device_list(devices)
        .iter()
        .map(|d| format!("{}\n", d.name()))
        .collect()
}

/// `umad_get_ca_portguids` + `ports_list` for one device.
fn port_guids<D: IbstatDevice + ?Sized>(out: &mut String, dev: &D) -> Result<(), IbstatError> {
    let ca = read_ca(dev, |name, cause| IbstatError::ListPortsFailed {
        name,
        cause,
    })?;
    for n in 0..=ca.numports {
        if let Some(guid) = ca.ports.get(&n).map(|p| p.port_guid).filter(|g| *g != 0) {
            let _ = writeln!(out, "0x{guid:016x}");
        }
    }
    Ok(())
}

/// `ibstat -p`, with the error that stopped it, if any.
pub fn run_port_guids<D: IbstatDevice>(devices: &[D]) -> IbstatRun {
    let mut stdout = String::new();
    for dev in device_list(devices) {
        if let Err(e) = port_guids(&mut stdout, dev) {
            return IbstatRun::stopped(stdout, e);
        }
    }
    IbstatRun {
        stdout,
        error: None,
    }
}

/// `ibstat -p`: the non-zero port GUIDs of every device, in device and port order.
pub fn render_port_guids<D: IbstatDevice>(devices: &[D]) -> String {
    run_port_guids(devices).stdout
}

/// `ibstat -p DEV`.
pub fn render_device_port_guids<D: IbstatDevice + ?Sized>(dev: &D) -> Result<String, IbstatError> {
    find_listed(dev)?;
    let mut out = String::new();
    port_guids(&mut out, dev)?;
    Ok(out)
}
