//! What libibumad (rdma-core v44.0, `libibumad/umad.c`) makes of a device's sysfs files:
//! the `umad_ca_t` / `umad_port_t` values ibstat prints, rebuilt from the project's model.
//!
//! The model keeps parsed values; where a value is `Err(AttrError::Malformed(m))`
//! the raw text is still there and is re-read the way libibumad reads it (`strtoul`, fixed
//! buffers), so a malformed file prints what ibstat would print instead of failing.
//! `Missing` and `Unreadable` are both "the file could not be read" for libibumad: its
//! readers fail on `open()` and `read()` errors alike.

use rdma_manager_dbus::ibstat::clib;
use rdma_manager_dbus::ibstat::umad::{
    ca_string, check_name, collect_ports, link_layer, read_rate, CA_TYPE_LEN, FW_VER_LEN,
    HW_VER_LEN,
};
use rdma_manager_dbus::ibstat::{CaError, IbstatDevice, UmadCa, UmadPort};

use crate::model::{AttrError, DeviceSnapshot, Field, Guid, PortSnapshot};

/// The file content the kernel would have served for a text attribute the model kept as
/// `Ok(text)` (sysfs appends a newline) or as a malformed raw value.
fn raw_text(field: &Field<String>) -> Option<String> {
    match field {
        Ok(s) => Some(format!("{s}\n")),
        Err(AttrError::Malformed(m)) => Some(format!("{}\n", m.value)),
        Err(AttrError::Missing) | Err(AttrError::Unreadable(_)) => None,
    }
}

/// `sys_read_uint` of a numeric attribute: the exact number for a parsed value, `strtoul`
/// of the raw text for a malformed one, `None` (read failure) otherwise.
fn read_uint<T: Copy>(field: &Field<T>, number: impl Fn(T) -> u32) -> Option<u32> {
    match field {
        Ok(v) => Some(number(*v)),
        Err(AttrError::Malformed(m)) => Some(clib::read_uint(&m.value)),
        Err(_) => None,
    }
}

/// A `sys_read_uint` whose failure fails `get_port`.
fn required<T: Copy>(
    field: &Field<T>,
    name: &str,
    number: impl Fn(T) -> u32,
) -> Result<u32, CaError> {
    read_uint(field, number).ok_or_else(|| {
        CaError::Fails(match field {
            Err(e) => format!("{name}: {e}"),
            Ok(_) => name.to_string(),
        })
    })
}

fn guid_field(field: &Field<Guid>) -> Result<u64, String> {
    match field {
        Ok(g) => Ok(g.0),
        Err(AttrError::Malformed(m)) => clib::read_guid(&format!("{}\n", m.value))
            .ok_or_else(|| format!("fewer than four ':'-separated groups in {:?}", m.value)),
        Err(e) => Err(e.to_string()),
    }
}

impl IbstatDevice for DeviceSnapshot {
    fn name(&self) -> &str {
        &self.name
    }

    /// `is_ib_type` (umad.c) reads `node_type` with `sys_read_uint`.
    fn node_type(&self) -> Option<u32> {
        read_uint(&self.node_type, |t| t.number())
    }

    /// `get_ca` (umad.c v44.0) on one device. Order of reading, each failure ending the whole
    /// device: the name's length; `node_type`; `fw_ver`, `hw_rev`, `hca_type` (optional: empty
    /// when unreadable); `node_guid`, `sys_image_guid`; the `ports` directory
    /// ([`collect_ports`]); per port `get_port`.
    fn get_ca(&self) -> Result<UmadCa, CaError> {
        check_name(&self.name)?;
        let node_type = self
            .node_type()
            .ok_or_else(|| CaError::Fails("node_type unreadable".to_string()))?;
        let text = |f: &Field<String>, len: usize| ca_string(raw_text(f).as_deref(), len);
        let fw_ver = text(&self.fw_ver, FW_VER_LEN);
        let hw_ver = text(&self.hw_rev, HW_VER_LEN);
        let ca_type = text(&self.hca_type, CA_TYPE_LEN);
        let node_guid = guid_field(&self.node_guid).map_err(|e| format!("node_guid: {e}"))?;
        let system_guid =
            guid_field(&self.sys_image_guid).map_err(|e| format!("sys_image_guid: {e}"))?;
        let (numports, ports) = collect_ports(&self.ports, |p| p.number, get_port)?;
        Ok(UmadCa {
            name: self.name.clone(),
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
}

/// `get_port` (umad.c v44.0). Required, in this order: `lid_mask_count`, `sm_lid`, `sm_sl`,
/// `lid`, `state`, `phys_state`, `rate`, `cap_mask` (all `sys_read_uint`, i.e. `strtoul`
/// base 0: "4: ACTIVE" reads 4, "10 Gb/sec (1X FDR10)" reads 10, "2.5 Gb/sec" reads 2);
/// `link_layer` optional (unreadable reads "IB"); `gids/0` required (`sys_read_gid`; the
/// port GUID is its low 64 bits, stored big-endian and converted back for printing); then
/// `pkeys/` must hold at least one numerically named entry, each readable.
fn get_port(port: &PortSnapshot) -> Result<UmadPort, CaError> {
    let lmc = required(&port.lmc, "lid_mask_count", u32::from)?;
    let sm_lid = required(&port.sm_lid, "sm_lid", |v| v)?;
    required(&port.sm_sl, "sm_sl", u32::from)?;
    let base_lid = required(&port.lid, "lid", |v| v)?;
    let state = required(&port.state, "state", |s| s.number())?;
    let phys_state = required(&port.phys_state, "phys_state", |s| s.number())?;
    // The rate file's text: what the kernel printed for a parsed rate, or the raw text.
    let rate_text = match &port.rate {
        Ok(r) => format!("{}\n", r.to_sysfs()),
        Err(AttrError::Malformed(m)) => format!("{}\n", m.value),
        Err(e) => return Err(CaError::Fails(format!("rate: {e}"))),
    };
    let (rate, fdr10) = read_rate(&rate_text);
    let capmask = required(&port.cap_mask, "cap_mask", |v| v)?;
    let link_layer = link_layer(
        match &port.link_layer {
            Ok(ll) => Some(format!("{}\n", ll.as_str())),
            Err(AttrError::Malformed(m)) => Some(format!("{}\n", m.value)),
            Err(_) => None,
        }
        .as_deref(),
    );
    // The model keeps only non-zero GIDs: an absent entry 0 is read as the all-zero GID
    // that sysfs shows for an unused entry (the file itself always exists on a port).
    let port_guid = port.port_guid().map(|g| g.0).unwrap_or(0);
    // An empty P_Key table in the model is taken as "no pkeys directory" (the kernel
    // creates it only for a non-empty table), which get_port rejects ("no pkeys found").
    // A table whose entries are all zero would pass in libibumad, but the model does not
    // keep zero entries and real ports have a non-zero P_Key at index 0.
    if port.pkeys.is_empty() {
        return Err(CaError::Fails(
            "no pkeys found (empty P_Key table)".to_string(),
        ));
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
