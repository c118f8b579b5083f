//! libibumad's `umad_ca_t` / `umad_port_t` (rdma-core v44.0, `libibumad/umad.h`) and the
//! parts of `get_ca` / `get_port` (`libibumad/umad.c`) that do not depend on where the
//! values come from: buffer sizes, the port limit and order, the rate and link layer rules.
//! Each source ([`super::IbstatDevice`]) reads its own values and hands them to these.

use std::collections::BTreeMap;

use super::clib;

/// `UMAD_CA_NAME_LEN` (umad.h): size of the name buffers in `umad_ca_t` / `umad_port_t`,
/// and of `umad_port_t.link_layer`.
pub const UMAD_CA_NAME_LEN: usize = 20;
/// `UMAD_CA_MAX_PORTS` (umad.h v44.0): ports 0..=9. Raised to 192 upstream in v64.0
/// ("libibumad: Increase max ports supported to 192").
pub const UMAD_CA_MAX_PORTS: u32 = 10;
/// Buffer sizes of `umad_ca_t.fw_ver`, `.ca_type`, `.hw_ver` (umad.h).
pub const FW_VER_LEN: usize = 20;
pub const CA_TYPE_LEN: usize = 40;
pub const HW_VER_LEN: usize = 20;
/// `char buf[32]` in ibstat.c `is_fdr10` / sysfs.c `sys_read_uint`.
pub const SMALL_BUF: usize = 32;

/// One port as `get_port` (umad.c) fills `umad_port_t`, plus ibstat's own `is_fdr10` result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UmadPort {
    pub portnum: u32,
    pub base_lid: u32,
    pub lmc: u32,
    pub sm_lid: u32,
    pub state: u32,
    pub phys_state: u32,
    pub rate: u32,
    pub fdr10: bool,
    pub capmask: u32,
    pub port_guid: u64,
    pub link_layer: String,
}

/// One device as `get_ca` (umad.c) fills `umad_ca_t`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UmadCa {
    pub name: String,
    pub node_type: u32,
    /// The highest port number (not a count): `get_ca` keeps the maximum.
    pub numports: u32,
    pub fw_ver: String,
    pub ca_type: String,
    pub hw_ver: String,
    pub node_guid: u64,
    pub system_guid: u64,
    /// Indexed by port number, as `umad_ca_t.ports[]`.
    pub ports: BTreeMap<u32, UmadPort>,
}

/// Why a source could not give a [`UmadCa`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaError {
    /// libibumad fails on this device, for the reason given (ours: ibstat only says
    /// "stat of IB device '...' failed").
    Fails(String),
    /// The source does not hold what libibumad would read, so what ibstat prints is not
    /// known (e.g. a malformed value whose raw text the D-Bus view does not carry).
    Unknown(String),
}

impl CaError {
    /// The same error with `what: ` before its reason (`port 1: sm_sl: not present`).
    pub fn within(self, what: &str) -> CaError {
        match self {
            CaError::Fails(r) => CaError::Fails(format!("{what}: {r}")),
            CaError::Unknown(r) => CaError::Unknown(format!("{what}: {r}")),
        }
    }
}

impl From<String> for CaError {
    fn from(reason: String) -> Self {
        CaError::Fails(reason)
    }
}

/// `get_ca` copies the name with `strncpy(ca_name, name, 19)` into an uninitialised 20-byte
/// buffer and then builds sysfs paths from it: a name of 20 or more characters names no
/// existing directory, and the device fails. 19 characters leave the buffer unterminated
/// (undefined behaviour: the result depends on stack contents). Debian's ibstat 44.0-2 usually
/// succeeds there, but `ibstat -p` was once seen to fail on a 19-character device without
/// ports; this takes the usual outcome (success).
pub fn check_name(name: &str) -> Result<(), CaError> {
    if name.len() >= UMAD_CA_NAME_LEN {
        return Err(CaError::Fails(format!(
            "libibumad keeps at most {} characters of a device name; {:?} has {}",
            UMAD_CA_NAME_LEN - 1,
            name,
            name.len()
        )));
    }
    Ok(())
}

/// An optional `umad_ca_t` string (`fw_ver`, `hw_ver`, `ca_type`): `sys_read_string` of the
/// file's content into a buffer of `len` bytes; empty when the file cannot be read.
pub fn ca_string(content: Option<&str>, len: usize) -> String {
    content
        .map(|c| clib::read_string(c, len))
        .unwrap_or_default()
}

/// The rate file's content as `get_port` (`sys_read_uint`: `strtoul` of at most 31 bytes)
/// and ibstat's `is_fdr10` read it: (`umad_port_t.rate`, FDR10).
pub fn read_rate(content: &str) -> (u32, bool) {
    let rate = clib::read_uint(&clib::read_string(content, SMALL_BUF));
    (rate, clib::is_fdr10(content))
}

/// `umad_port_t.link_layer`: the file read into its 20-byte buffer, "IB" when it cannot be
/// read ("assume IB by default", umad.c `get_port`).
pub fn link_layer(content: Option<&str>) -> String {
    match content {
        Some(c) => clib::read_string(c, UMAD_CA_NAME_LEN),
        None => "IB".to_string(),
    }
}

/// `get_ca`'s walk of the `ports` directory: entries in `alphasort` order of their names
/// (`"10"` before `"2"`), each numbered 0..=9 (10 or more fails the device), each read with
/// `get_port` (whose failure fails the device). Gives `numports` (the highest number) and
/// the ports by number.
pub fn collect_ports<P>(
    ports: &[P],
    number: impl Fn(&P) -> u32,
    mut get_port: impl FnMut(&P) -> Result<UmadPort, CaError>,
) -> Result<(u32, BTreeMap<u32, UmadPort>), CaError> {
    let mut by_name: Vec<&P> = ports.iter().collect();
    by_name.sort_by_key(|p| number(p).to_string());
    let mut out = BTreeMap::new();
    let mut numports = 0;
    for port in by_name {
        let n = number(port);
        if n >= UMAD_CA_MAX_PORTS {
            return Err(CaError::Fails(format!(
                "port {n} above libibumad's limit of {} ports",
                UMAD_CA_MAX_PORTS - 1
            )));
        }
        let p = get_port(port).map_err(|e| e.within(&format!("port {n}")))?;
        numports = numports.max(n);
        out.entry(n).or_insert(p);
    }
    Ok((numports, out))
}

/// A port's `sys_read_uint` files that `get_port` requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortUint {
    LidMaskCount,
    SmLid,
    SmSl,
    Lid,
    State,
    PhysState,
    CapMask,
}

impl PortUint {
    /// The file's name under `ports/N/`.
    pub fn file(self) -> &'static str {
        match self {
            PortUint::LidMaskCount => "lid_mask_count",
            PortUint::SmLid => "sm_lid",
            PortUint::SmSl => "sm_sl",
            PortUint::Lid => "lid",
            PortUint::State => "state",
            PortUint::PhysState => "phys_state",
            PortUint::CapMask => "cap_mask",
        }
    }
}

/// A port's files as a source holds them; [`get_port`] reads them in libibumad's order. An
/// `Err` is the source's reason the read fails (or cannot be told).
pub trait UmadPortFiles {
    fn number(&self) -> u32;
    /// A required file, as `sys_read_uint` reads it.
    fn uint(&self, file: PortUint) -> Result<u32, CaError>;
    /// The `rate` file's content.
    fn rate(&self) -> Result<String, CaError>;
    /// The `link_layer` file's content, `None` when it cannot be read.
    fn link_layer(&self) -> Result<Option<String>, CaError>;
    /// The low 64 bits of `gids/0` (0 for an unused entry).
    fn port_guid(&self) -> Result<u64, CaError>;
    /// Whether `pkeys/` holds an entry (the kernel makes it for a non-empty table only).
    fn has_pkeys(&self) -> bool;
}

/// A device's optional `umad_ca_t` strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaText {
    FwVer,
    HwRev,
    HcaType,
}

impl CaText {
    pub fn file(self) -> &'static str {
        match self {
            CaText::FwVer => "fw_ver",
            CaText::HwRev => "hw_rev",
            CaText::HcaType => "hca_type",
        }
    }

    fn len(self) -> usize {
        match self {
            CaText::FwVer => FW_VER_LEN,
            CaText::HwRev => HW_VER_LEN,
            CaText::HcaType => CA_TYPE_LEN,
        }
    }
}

/// A device's required GUID files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaGuid {
    NodeGuid,
    SysImageGuid,
}

impl CaGuid {
    pub fn file(self) -> &'static str {
        match self {
            CaGuid::NodeGuid => "node_guid",
            CaGuid::SysImageGuid => "sys_image_guid",
        }
    }
}

/// A device's files as a source holds them; [`get_ca`] reads them in libibumad's order.
pub trait UmadCaFiles {
    type Port: UmadPortFiles;
    fn name(&self) -> &str;
    /// `node_type` as `sys_read_uint` reads it, `None` when it cannot be read.
    fn node_type(&self) -> Option<u32>;
    /// An optional text file's content, `None` when it cannot be read.
    fn text(&self, file: CaText) -> Result<Option<String>, CaError>;
    /// A GUID file's value.
    fn guid(&self, file: CaGuid) -> Result<u64, CaError>;
    /// The entries of `ports/`.
    fn ports(&self) -> Result<Vec<&Self::Port>, CaError>;
}

/// `get_ca` (umad.c v44.0) on one device. Order of reading, each failure ending the whole
/// device: the name's length; `node_type`; `fw_ver`, `hw_rev`, `hca_type` (optional: empty
/// when unreadable); `node_guid`, `sys_image_guid`; the `ports` directory
/// ([`collect_ports`]); per port [`get_port`].
pub fn get_ca<D: UmadCaFiles + ?Sized>(d: &D) -> Result<UmadCa, CaError> {
    check_name(d.name())?;
    let node_type = d
        .node_type()
        .ok_or_else(|| CaError::Fails("node_type unreadable".to_string()))?;
    let text = |file: CaText| -> Result<String, CaError> {
        Ok(ca_string(d.text(file)?.as_deref(), file.len()))
    };
    let fw_ver = text(CaText::FwVer)?;
    let hw_ver = text(CaText::HwRev)?;
    let ca_type = text(CaText::HcaType)?;
    let node_guid = d.guid(CaGuid::NodeGuid)?;
    let system_guid = d.guid(CaGuid::SysImageGuid)?;
    let ports = d.ports()?;
    let (numports, ports) = collect_ports(&ports, |p| p.number(), |p| get_port(*p))?;
    Ok(UmadCa {
        name: d.name().to_string(),
        node_type,
        numports,
        fw_ver,
        ca_type,
        hw_ver,
        node_guid,
        system_guid,
        ports,
    })
}

/// `get_port` (umad.c v44.0). Required, in this order: `lid_mask_count`, `sm_lid`, `sm_sl`,
/// `lid`, `state`, `phys_state`, `rate`, `cap_mask` (all `sys_read_uint`, i.e. `strtoul`
/// base 0: "4: ACTIVE" reads 4, "10 Gb/sec (1X FDR10)" reads 10, "2.5 Gb/sec" reads 2);
/// `link_layer` optional (unreadable reads "IB"); `gids/0` required (`sys_read_gid`; the
/// port GUID is its low 64 bits, stored big-endian and converted back for printing); then
/// `pkeys/` must hold at least one numerically named entry, each readable.
pub fn get_port<P: UmadPortFiles + ?Sized>(p: &P) -> Result<UmadPort, CaError> {
    let lmc = p.uint(PortUint::LidMaskCount)?;
    let sm_lid = p.uint(PortUint::SmLid)?;
    p.uint(PortUint::SmSl)?;
    let base_lid = p.uint(PortUint::Lid)?;
    let state = p.uint(PortUint::State)?;
    let phys_state = p.uint(PortUint::PhysState)?;
    let (rate, fdr10) = read_rate(&p.rate()?);
    let capmask = p.uint(PortUint::CapMask)?;
    let link_layer = link_layer(p.link_layer()?.as_deref());
    let port_guid = p.port_guid()?;
    // A table whose entries are all zero would pass in libibumad, but no source keeps zero
    // entries and real ports have a non-zero P_Key at index 0.
    if !p.has_pkeys() {
        return Err(CaError::Fails(
            "no pkeys found (empty P_Key table)".to_string(),
        ));
    }
    Ok(UmadPort {
        portnum: p.number(),
        base_lid,
        lmc,
        sm_lid,
        state,
        phys_state,
        rate,
        fdr10,
        capmask,
        port_guid,
        link_layer,
    })
}
