//! ibstat's devices rebuilt from the records of rdma-managerd's D-Bus objects
//! ([`crate::records`]): libibumad's `umad_ca_t` from a Device object and its Port objects
//! ([`BusDevice`]). `rdma-tui --ibstat` renders the objects it read this way, and the
//! daemon's direct socket (`Direct.GetIbstat`) renders the objects it publishes the same way,
//! so the two outputs cannot differ.
//!
//! What a property holds, and how libibumad would have read the file behind it:
//! - `Device.NodeType` is the word sysfs writes after the number (`CA`, `switch`, `router`,
//!   `RNIC`, ...) and is mapped back to the number (`strtoul` of `1: CA` is 1).
//!   `Port.State` (`ACTIVE`, ...) and `Port.PhysState` (`LinkUp`, `Phy Test`, ...) likewise.
//! - `NodeGuid`, `SysImageGuid`, `PortGuid` are `0x%016x`; `PortGuid` is empty when the port
//!   has no GID 0 (libibumad reads the all-zero GID: GUID 0).
//! - `Rate` is the kernel's text (`10 Gb/sec (1X FDR10)`), read as libibumad and `is_fdr10`
//!   read the file; `FwVersion`, `HcaType`, `HwRev`, `LinkLayer` are the file's text without
//!   its newline and are cut to the `umad_ca_t` buffers.
//! - Numbers (`Lid`, `SmLid`, `Lmc`, `SmSl`, `CapabilityMask`) are the values themselves.
//! - A property the service could not read is empty or zero and named, with the reason, in
//!   the object's `Unreadable` map. "not present" and "read failed: ..." are read failures,
//!   which fail the device (required attributes) or print empty / `IB` (optional ones)
//!   exactly as in ibstat. "malformed value ...": the file had a value the service could not
//!   parse, which libibumad would have read with `strtoul`; the bus does not carry that raw
//!   text, so the device gives [`CaError::Unknown`] and the output stops there with a message
//!   of its own rather than print a guess (see the module doc of the renderer).

use std::collections::BTreeMap;

use super::umad::{self, CaGuid, CaText, PortUint, UmadCaFiles, UmadPortFiles};
use super::{CaError, IbstatDevice, UmadCa};
use crate::records::{Device, Port};

/// How the service's reason for an unreadable attribute starts when the file was read but
/// its text could not be parsed (`AttrError::Malformed` in the service).
pub const MALFORMED: &str = "malformed value";

/// A Device object and its Port objects, as libibumad would see the device.
#[derive(Debug, Clone)]
pub struct BusDevice<'a> {
    pub device: &'a Device,
    /// The device's `Ports`, resolved; `Err(path)` for a port object the model does not hold.
    ports: Vec<Result<BusPort<'a>, &'a str>>,
}

/// A Port object as libibumad would see the port's files.
#[derive(Debug, Clone, Copy)]
pub struct BusPort<'a>(&'a Port);

impl<'a> BusDevice<'a> {
    /// `device` with its `Ports` looked up in `ports` (Port records by object path).
    pub fn new(device: &'a Device, ports: &'a BTreeMap<String, Port>) -> Self {
        let ports = device
            .ports
            .iter()
            .map(|path| ports.get(path).map(BusPort).ok_or(path.as_str()))
            .collect();
        BusDevice { device, ports }
    }
}

/// Every device of `devices` with its ports from `ports` (ibstat's filter and order are the
/// renderer's).
pub fn devices<'a>(
    devices: impl IntoIterator<Item = &'a Device>,
    ports: &'a BTreeMap<String, Port>,
) -> Vec<BusDevice<'a>> {
    devices
        .into_iter()
        .map(|d| BusDevice::new(d, ports))
        .collect()
}

/// What an object's `Unreadable` map says of a property.
enum Reading<'r> {
    /// Not named: the property holds the value.
    Read,
    /// Named with a read failure ("not present", "read failed: ..."): libibumad fails too.
    Failed(&'r str),
}

/// `Err(Unknown)` for a malformed value (see the module doc); `file` is the sysfs name.
fn reading<'r>(
    unreadable: &'r BTreeMap<String, String>,
    prop: &str,
    file: &str,
) -> Result<Reading<'r>, CaError> {
    match unreadable.get(prop) {
        None => Ok(Reading::Read),
        Some(reason) if reason.starts_with(MALFORMED) => Err(CaError::Unknown(format!(
            "{file}: the service read a {reason}; libibumad would read its raw text, which \
             the bus does not carry"
        ))),
        Some(reason) => Ok(Reading::Failed(reason)),
    }
}

/// A required `sys_read_uint` attribute: its value, or the failure of the device.
fn required(
    unreadable: &BTreeMap<String, String>,
    prop: &str,
    file: &str,
    value: u32,
) -> Result<u32, CaError> {
    match reading(unreadable, prop, file)? {
        Reading::Read => Ok(value),
        Reading::Failed(reason) => Err(CaError::Fails(format!("{file}: {reason}"))),
    }
}

/// The content of an optional text file (`Some("text\n")`), `None` when it could not be read.
fn optional_text(
    unreadable: &BTreeMap<String, String>,
    prop: &str,
    file: &str,
    value: &str,
) -> Result<Option<String>, CaError> {
    Ok(match reading(unreadable, prop, file)? {
        Reading::Read => Some(format!("{value}\n")),
        Reading::Failed(_) => None,
    })
}

/// `0x%016x` back to the number.
fn parse_guid(text: &str) -> Option<u64> {
    let hex = text.strip_prefix("0x")?;
    (hex.len() == 16)
        .then(|| u64::from_str_radix(hex, 16).ok())
        .flatten()
}

fn guid(
    unreadable: &BTreeMap<String, String>,
    prop: &str,
    file: &str,
    value: &str,
) -> Result<u64, CaError> {
    match reading(unreadable, prop, file)? {
        Reading::Read => parse_guid(value)
            .ok_or_else(|| CaError::Unknown(format!("{prop} {value:?} is not 0x%016x"))),
        Reading::Failed(reason) => Err(CaError::Fails(format!("{file}: {reason}"))),
    }
}

/// `enum rdma_node_type` by the word sysfs writes after the number.
fn node_type_number(word: &str) -> Option<u32> {
    Some(match word {
        "CA" => 1,
        "switch" => 2,
        "router" => 3,
        "RNIC" => 4,
        "usNIC" => 5,
        "usNIC UDP" => 6,
        "unspecified" => 7,
        _ => return None,
    })
}

/// `enum ib_port_state` by its sysfs word.
fn port_state_number(word: &str) -> Option<u32> {
    Some(match word {
        "NOP" => 0,
        "DOWN" => 1,
        "INIT" => 2,
        "ARMED" => 3,
        "ACTIVE" => 4,
        "ACTIVE_DEFER" => 5,
        _ => return None,
    })
}

/// `enum ib_port_phys_state` by its sysfs word (`Phy Test` with the space sysfs writes).
fn phys_state_number(word: &str) -> Option<u32> {
    Some(match word {
        "Sleep" => 1,
        "Polling" => 2,
        "Disabled" => 3,
        "PortConfigurationTraining" => 4,
        "LinkUp" => 5,
        "LinkErrorRecovery" => 6,
        "Phy Test" => 7,
        _ => return None,
    })
}

/// A word property mapped to its number; a word this client does not know (a newer
/// service) leaves the output unknown.
fn word(
    unreadable: &BTreeMap<String, String>,
    prop: &str,
    file: &str,
    value: &str,
    number: fn(&str) -> Option<u32>,
) -> Result<u32, CaError> {
    match reading(unreadable, prop, file)? {
        Reading::Read => number(value)
            .ok_or_else(|| CaError::Unknown(format!("{prop} {value:?} is not a known {file}"))),
        Reading::Failed(reason) => Err(CaError::Fails(format!("{file}: {reason}"))),
    }
}

impl IbstatDevice for BusDevice<'_> {
    fn name(&self) -> &str {
        &self.device.name
    }

    fn node_type(&self) -> Option<u32> {
        if self.device.unreadable.contains_key("NodeType") {
            return None;
        }
        node_type_number(&self.device.node_type)
    }

    fn get_ca(&self) -> Result<UmadCa, CaError> {
        umad::get_ca(self)
    }
}

impl<'a> UmadCaFiles for BusDevice<'a> {
    type Port = BusPort<'a>;

    fn name(&self) -> &str {
        &self.device.name
    }

    fn node_type(&self) -> Option<u32> {
        IbstatDevice::node_type(self)
    }

    fn text(&self, file: CaText) -> Result<Option<String>, CaError> {
        let d = self.device;
        let (prop, value) = match file {
            CaText::FwVer => ("FwVersion", &d.fw_version),
            CaText::HwRev => ("HwRev", &d.hw_rev),
            CaText::HcaType => ("HcaType", &d.hca_type),
        };
        optional_text(&d.unreadable, prop, file.file(), value)
    }

    fn guid(&self, file: CaGuid) -> Result<u64, CaError> {
        let d = self.device;
        let (prop, value) = match file {
            CaGuid::NodeGuid => ("NodeGuid", &d.node_guid),
            CaGuid::SysImageGuid => ("SysImageGuid", &d.sys_image_guid),
        };
        guid(&d.unreadable, prop, file.file(), value)
    }

    fn ports(&self) -> Result<Vec<&BusPort<'a>>, CaError> {
        self.ports
            .iter()
            .map(|p| {
                p.as_ref().map_err(|path| {
                    CaError::Unknown(format!("the client holds no port object {path}"))
                })
            })
            .collect()
    }
}

impl UmadPortFiles for BusPort<'_> {
    fn number(&self) -> u32 {
        self.0.number
    }

    fn uint(&self, file: PortUint) -> Result<u32, CaError> {
        let u = &self.0.unreadable;
        let f = file.file();
        match file {
            PortUint::LidMaskCount => required(u, "Lmc", f, u32::from(self.0.lmc)),
            PortUint::SmLid => required(u, "SmLid", f, self.0.sm_lid),
            PortUint::SmSl => required(u, "SmSl", f, u32::from(self.0.sm_sl)),
            PortUint::Lid => required(u, "Lid", f, self.0.lid),
            PortUint::State => word(u, "State", f, &self.0.state, port_state_number),
            PortUint::PhysState => word(u, "PhysState", f, &self.0.phys_state, phys_state_number),
            PortUint::CapMask => required(u, "CapabilityMask", f, self.0.capability_mask),
        }
    }

    fn rate(&self) -> Result<String, CaError> {
        match reading(&self.0.unreadable, "Rate", "rate")? {
            Reading::Read => Ok(format!("{}\n", self.0.rate)),
            Reading::Failed(reason) => Err(CaError::Fails(format!("rate: {reason}"))),
        }
    }

    fn link_layer(&self) -> Result<Option<String>, CaError> {
        optional_text(
            &self.0.unreadable,
            "LinkLayer",
            "link_layer",
            &self.0.link_layer,
        )
    }

    fn port_guid(&self) -> Result<u64, CaError> {
        match self.0.port_guid.as_str() {
            "" => Ok(0),
            text => parse_guid(text)
                .ok_or_else(|| CaError::Unknown(format!("PortGuid {text:?} is not 0x%016x"))),
        }
    }

    /// As in the service: no P_Key at all is "no pkeys found" for libibumad.
    fn has_pkeys(&self) -> bool {
        !self.0.pkeys.is_empty()
    }
}
