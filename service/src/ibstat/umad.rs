//! What libibumad (rdma-core v44.0, `libibumad/umad.c`) makes of a device's sysfs files:
//! the `umad_ca_t` / `umad_port_t` values ibstat prints, rebuilt from the project's model.
//!
//! The model keeps parsed values; where a value is `Err(AttrError::Malformed { value, .. })`
//! the raw text is still there and is re-read the way libibumad reads it (`strtoul`, fixed
//! buffers), so a malformed file prints what ibstat would print instead of failing.
//! `Missing` and `Unreadable` are both "the file could not be read" for libibumad: its
//! readers fail on `open()` and `read()` errors alike.

use std::collections::BTreeMap;

use super::clib;
use crate::model::{AttrError, DeviceSnapshot, Field, PortSnapshot};

/// `UMAD_CA_NAME_LEN` (umad.h): size of the name buffers in `umad_ca_t` / `umad_port_t`,
/// and of `umad_port_t.link_layer`.
pub(crate) const UMAD_CA_NAME_LEN: usize = 20;
/// `UMAD_CA_MAX_PORTS` (umad.h v44.0): ports 0..=9. Raised to 192 upstream in v64.0
/// ("libibumad: Increase max ports supported to 192").
pub(crate) const UMAD_CA_MAX_PORTS: u32 = 10;
/// Buffer sizes of `umad_ca_t.fw_ver`, `.ca_type`, `.hw_ver` (umad.h).
const FW_VER_LEN: usize = 20;
const CA_TYPE_LEN: usize = 40;
const HW_VER_LEN: usize = 20;
/// `char buf[32]` in ibstat.c `is_fdr10` / sysfs.c `sys_read_uint`.
const SMALL_BUF: usize = 32;

/// One port as `get_port` (umad.c) fills `umad_port_t`, plus ibstat's own `is_fdr10` result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UmadPort {
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
pub(crate) struct UmadCa {
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

/// The file content the kernel would have served for a text attribute the model kept as
/// `Ok(text)` (sysfs appends a newline) or as a malformed raw value.
fn raw_text(field: &Field<String>) -> Option<String> {
    match field {
        Ok(s) => Some(format!("{s}\n")),
        Err(AttrError::Malformed { value, .. }) => Some(format!("{value}\n")),
        Err(AttrError::Missing) | Err(AttrError::Unreadable(_)) => None,
    }
}

/// `sys_read_uint` of a numeric attribute: the exact number for a parsed value, `strtoul`
/// of the raw text for a malformed one, `None` (read failure) otherwise.
fn read_uint<T: Copy>(field: &Field<T>, number: impl Fn(T) -> u32) -> Option<u32> {
    match field {
        Ok(v) => Some(number(*v)),
        Err(AttrError::Malformed { value, .. }) => Some(clib::read_uint(value)),
        Err(_) => None,
    }
}

/// `is_ib_type` (umad.c): `node_type` read with `sys_read_uint`, kept when 1..=3 (CA,
/// switch, router). RNICs (iWARP, 4), usNIC and unreadable `node_type` are not listed.
pub(crate) fn node_type_number(dev: &DeviceSnapshot) -> Option<u32> {
    read_uint(&dev.node_type, |t| t.number())
}

pub(crate) fn is_ib_type(dev: &DeviceSnapshot) -> bool {
    node_type_number(dev).is_some_and(|t| (1..=3).contains(&t))
}

/// A `sys_read_uint` whose failure fails `get_port`.
fn required<T: Copy>(
    field: &Field<T>,
    name: &str,
    number: impl Fn(T) -> u32,
) -> Result<u32, String> {
    read_uint(field, number).ok_or_else(|| match field {
        Err(e) => format!("{name}: {e}"),
        Ok(_) => name.to_string(),
    })
}

fn guid_field(field: &Field<crate::model::Guid>) -> Result<u64, String> {
    match field {
        Ok(g) => Ok(g.0),
        Err(AttrError::Malformed { value, .. }) => clib::read_guid(&format!("{value}\n"))
            .ok_or_else(|| format!("fewer than four ':'-separated groups in {value:?}")),
        Err(e) => Err(e.to_string()),
    }
}

/// `get_ca` (umad.c v44.0) on one device. `Err` carries why libibumad fails (ibstat itself
/// only says "stat of IB device '...' failed").
///
/// Order of reading, each failure ending the whole device: `node_type`; `fw_ver`, `hw_rev`,
/// `hca_type` (optional: empty when unreadable); `node_guid`, `sys_image_guid`; the `ports`
/// directory, entries in `alphasort` order, each named `0` or 1..=9; per port `get_port`.
pub(crate) fn get_ca(dev: &DeviceSnapshot) -> Result<UmadCa, String> {
    // get_ca copies the name with strncpy(ca_name, name, 19) into an uninitialised
    // 20-byte buffer and then builds sysfs paths from it: a name of 20 or more characters
    // names no existing directory. 19 characters leave the buffer unterminated (undefined
    // behaviour: the result depends on stack contents). Debian's ibstat 44.0-2 usually
    // succeeds there, but `ibstat -p` was once seen to fail on a 19-character device without
    // ports; this module takes the usual outcome (success).
    if dev.name.len() >= UMAD_CA_NAME_LEN {
        return Err(format!(
            "libibumad keeps at most {} characters of a device name; {:?} has {}",
            UMAD_CA_NAME_LEN - 1,
            dev.name,
            dev.name.len()
        ));
    }
    let node_type = node_type_number(dev).ok_or_else(|| "node_type unreadable".to_string())?;
    let text = |f: &Field<String>, len: usize| {
        raw_text(f)
            .map(|t| clib::read_string(&t, len))
            .unwrap_or_default()
    };
    let fw_ver = text(&dev.fw_ver, FW_VER_LEN);
    let hw_ver = text(&dev.hw_rev, HW_VER_LEN);
    let ca_type = text(&dev.hca_type, CA_TYPE_LEN);
    let node_guid = guid_field(&dev.node_guid).map_err(|e| format!("node_guid: {e}"))?;
    let system_guid =
        guid_field(&dev.sys_image_guid).map_err(|e| format!("sys_image_guid: {e}"))?;

    // scandir(..., alphasort): directory names compared as strings ("10" < "2").
    let mut by_name: Vec<&PortSnapshot> = dev.ports.iter().collect();
    by_name.sort_by_key(|p| p.number.to_string());
    let mut ports = BTreeMap::new();
    let mut numports = 0;
    for port in by_name {
        if port.number >= UMAD_CA_MAX_PORTS {
            return Err(format!(
                "port {} above libibumad's limit of {} ports",
                port.number,
                UMAD_CA_MAX_PORTS - 1
            ));
        }
        let p = get_port(port).map_err(|e| format!("port {}: {e}", port.number))?;
        numports = numports.max(port.number);
        ports.entry(port.number).or_insert(p);
    }
    Ok(UmadCa {
        name: dev.name.clone(),
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
fn get_port(port: &PortSnapshot) -> Result<UmadPort, String> {
    let lmc = required(&port.lmc, "lid_mask_count", u32::from)?;
    let sm_lid = required(&port.sm_lid, "sm_lid", |v| v)?;
    required(&port.sm_sl, "sm_sl", u32::from)?;
    let base_lid = required(&port.lid, "lid", |v| v)?;
    let state = required(&port.state, "state", |s| s.number())?;
    let phys_state = required(&port.phys_state, "phys_state", |s| s.number())?;
    // The rate file's text: what the kernel printed for a parsed rate, or the raw text.
    let rate_text = match &port.rate {
        Ok(r) => Some(format!("{}\n", r.to_sysfs())),
        Err(AttrError::Malformed { value, .. }) => Some(format!("{value}\n")),
        Err(_) => None,
    };
    let rate_text = rate_text.ok_or_else(|| match &port.rate {
        Err(e) => format!("rate: {e}"),
        Ok(_) => "rate".to_string(),
    })?;
    let rate = clib::read_uint(&clib::read_string(&rate_text, SMALL_BUF));
    let fdr10 = clib::is_fdr10(&rate_text);
    let capmask = required(&port.cap_mask, "cap_mask", |v| v)?;
    let link_layer = match &port.link_layer {
        Ok(ll) => ll.as_str().to_string(),
        Err(AttrError::Malformed { value, .. }) => {
            clib::read_string(&format!("{value}\n"), UMAD_CA_NAME_LEN)
        }
        // "assume IB by default" (umad.c get_port).
        Err(_) => "IB".to_string(),
    };
    // The model keeps only non-zero GIDs: an absent entry 0 is read as the all-zero GID
    // that sysfs shows for an unused entry (the file itself always exists on a port).
    let port_guid = port.port_guid().map(|g| g.0).unwrap_or(0);
    // An empty P_Key table in the model is taken as "no pkeys directory" (the kernel
    // creates it only for a non-empty table), which get_port rejects ("no pkeys found").
    // A table whose entries are all zero would pass in libibumad, but the model does not
    // keep zero entries and real ports have a non-zero P_Key at index 0.
    if port.pkeys.is_empty() {
        return Err("no pkeys found (empty P_Key table)".to_string());
    }
    Ok(UmadPort {
        portnum: port.number,
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
