//! What libibumad (rdma-core v44.0, `libibumad/umad.c`) makes of a device's sysfs files:
//! the `umad_ca_t` / `umad_port_t` values ibstat prints, rebuilt from the project's model.
//!
//! The model keeps parsed values; where a value is `Err(AttrError::Malformed(m))`
//! the raw text is still there and is re-read the way libibumad reads it (`strtoul`, fixed
//! buffers), so a malformed file prints what ibstat would print instead of failing.
//! `Missing` and `Unreadable` are both "the file could not be read" for libibumad: its
//! readers fail on `open()` and `read()` errors alike.

use rdma_manager_dbus::ibstat::clib;
use rdma_manager_dbus::ibstat::umad::{self, CaGuid, CaText, PortUint, UmadCaFiles, UmadPortFiles};
use rdma_manager_dbus::ibstat::{CaError, IbstatDevice, UmadCa};

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

    fn get_ca(&self) -> Result<UmadCa, CaError> {
        umad::get_ca(self)
    }
}

impl UmadCaFiles for DeviceSnapshot {
    type Port = PortSnapshot;

    fn name(&self) -> &str {
        &self.name
    }

    fn node_type(&self) -> Option<u32> {
        IbstatDevice::node_type(self)
    }

    fn text(&self, file: CaText) -> Result<Option<String>, CaError> {
        Ok(raw_text(match file {
            CaText::FwVer => &self.fw_ver,
            CaText::HwRev => &self.hw_rev,
            CaText::HcaType => &self.hca_type,
        }))
    }

    fn guid(&self, file: CaGuid) -> Result<u64, CaError> {
        let field = match file {
            CaGuid::NodeGuid => &self.node_guid,
            CaGuid::SysImageGuid => &self.sys_image_guid,
        };
        guid_field(field).map_err(|e| CaError::Fails(format!("{}: {e}", file.file())))
    }

    fn ports(&self) -> Result<Vec<&PortSnapshot>, CaError> {
        Ok(self.ports.iter().collect())
    }
}

impl UmadPortFiles for PortSnapshot {
    fn number(&self) -> u32 {
        self.number
    }

    fn uint(&self, file: PortUint) -> Result<u32, CaError> {
        let name = file.file();
        match file {
            PortUint::LidMaskCount => required(&self.lmc, name, u32::from),
            PortUint::SmLid => required(&self.sm_lid, name, |v| v),
            PortUint::SmSl => required(&self.sm_sl, name, u32::from),
            PortUint::Lid => required(&self.lid, name, |v| v),
            PortUint::State => required(&self.state, name, |s| s.number()),
            PortUint::PhysState => required(&self.phys_state, name, |s| s.number()),
            PortUint::CapMask => required(&self.cap_mask, name, |v| v),
        }
    }

    /// What the kernel printed for a parsed rate, or the raw text.
    fn rate(&self) -> Result<String, CaError> {
        match &self.rate {
            Ok(r) => Ok(format!("{}\n", r.to_sysfs())),
            Err(AttrError::Malformed(m)) => Ok(format!("{}\n", m.value)),
            Err(e) => Err(CaError::Fails(format!("rate: {e}"))),
        }
    }

    fn link_layer(&self) -> Result<Option<String>, CaError> {
        Ok(match &self.link_layer {
            Ok(ll) => Some(format!("{}\n", ll.as_str())),
            Err(AttrError::Malformed(m)) => Some(format!("{}\n", m.value)),
            Err(_) => None,
        })
    }

    /// The model keeps only non-zero GIDs: an absent entry 0 is read as the all-zero GID
    /// that sysfs shows for an unused entry (the file itself always exists on a port).
    fn port_guid(&self) -> Result<u64, CaError> {
        Ok(PortSnapshot::port_guid(self).map(|g| g.0).unwrap_or(0))
    }

    /// An empty P_Key table in the model is taken as "no pkeys directory".
    fn has_pkeys(&self) -> bool {
        !self.pkeys.is_empty()
    }
}
