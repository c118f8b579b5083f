//! `rdma-tui --ibstat [DEVICE [PORT]]`: what rdma-core's `ibstat` (v44.0) prints, rendered
//! from the D-Bus objects the client holds ([`Model`]). The format is
//! [`rdma_manager_dbus::ibstat`], the one `rdma-managerd show` prints with; this module
//! rebuilds libibumad's `umad_ca_t` from the properties ([`BusDevice`]).
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
//!   text, so the device gives [`CaError::Unknown`] and rdma-tui stops there with a message
//!   of its own rather than print a guess (see the module doc of the renderer).

use std::collections::BTreeMap;

use rdma_manager_dbus::ibstat::umad::{self, CaGuid, CaText, PortUint, UmadCaFiles, UmadPortFiles};
use rdma_manager_dbus::ibstat::{
    self as render, CaError, IbstatArgs, IbstatDevice, IbstatError, IbstatRun, UmadCa,
};

use crate::model::{Device, Model, Port};

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
    pub fn new(model: &'a Model, device: &'a Device) -> Self {
        let ports = device
            .ports
            .iter()
            .map(|path| model.ports.get(path).map(BusPort).ok_or(path.as_str()))
            .collect();
        BusDevice { device, ports }
    }
}

/// Every device of the model (ibstat's filter and order are the renderer's).
pub fn devices(model: &Model) -> Vec<BusDevice<'_>> {
    model
        .devices
        .values()
        .map(|d| BusDevice::new(model, d))
        .collect()
}

/// One ibstat run on the model with ibstat's arguments (`-l`, `-s`, `-p`, `DEVICE [PORT]`):
/// the output up to a failure, and the failure.
pub fn run(model: &Model, args: &IbstatArgs) -> IbstatRun {
    render::run(&devices(model), args)
}

/// The error to exit with: ibstat's message, with our reason behind it when there is one.
pub fn report(e: IbstatError) -> anyhow::Error {
    match e.cause() {
        Some(cause) => anyhow::Error::msg(cause.to_string()).context(e.to_string()),
        None => anyhow::Error::msg(e.to_string()),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::demo_model;
    use rdma_managerd::kernel::sim::{fixtures, SimHost};
    use rdma_managerd::kernel::Host;
    use rdma_managerd::model::{AttrError, DeviceSnapshot, Errno};

    /// `ibstat [DEVICE [PORT]]` on the model.
    fn run_dp(model: &Model, device: Option<&str>, port: Option<u32>) -> IbstatRun {
        let args = IbstatArgs {
            device: device.map(str::to_string),
            port: port.map(|p| p.to_string()),
            ..IbstatArgs::default()
        };
        run(model, &args)
    }

    /// The demo host as `rdma-managerd show --simulate` reads it.
    async fn demo_snapshots() -> Vec<DeviceSnapshot> {
        let host = SimHost::new(fixtures::demo_host()).expect("simulated demo host");
        host.read_devices()
            .await
            .expect("read the simulated devices")
    }

    /// The recorded demo model and the service on the simulated demo host print the same,
    /// for every device and every port, and in full.
    #[tokio::test]
    async fn demo_model_prints_what_managerd_show_prints() {
        let snaps = demo_snapshots().await;
        let model = demo_model();
        let ours = run_dp(&model, None, None);
        assert_eq!(ours.error, None);
        assert_eq!(ours.stdout, rdma_managerd::ibstat::render_all(&snaps));
        // rxe0 has no hca_type or hw_rev: the empty values with their trailing space.
        assert!(ours.stdout.contains("CA 'rxe0'\n\tCA type: \n"));
        assert!(ours.stdout.contains("\t\tRate: 10 (FDR10)\n"));
        // strcmp order, not the kernel index order of the model.
        let names: Vec<&str> = ours
            .stdout
            .lines()
            .filter(|l| l.starts_with("CA '"))
            .collect();
        assert_eq!(
            names,
            ["CA 'mlx4_1'", "CA 'mlx5_0'", "CA 'mlx5_1'", "CA 'rxe0'"]
        );
        for snap in &snaps {
            let expected = rdma_managerd::ibstat::render_device(snap, None);
            assert_eq!(
                render::render_named(&devices(&model), &snap.name, None),
                expected,
                "{}",
                snap.name
            );
            for port in 0..=3 {
                let expected = rdma_managerd::ibstat::render_device(snap, Some(port));
                let ours = run_dp(&model, Some(&snap.name), Some(port));
                assert_eq!(
                    ours.error.map(Err).unwrap_or(Ok(ours.stdout)),
                    expected,
                    "{} {port}",
                    snap.name
                );
            }
        }
    }

    #[test]
    fn unknown_device_and_port_give_ibstat_messages() {
        let model = demo_model();
        let msg = |d: &str, p: Option<u32>| {
            let r = run_dp(&model, Some(d), p);
            if r.error.is_some() {
                assert_eq!(r.stdout, "", "ibstat prints nothing for {d} {p:?}");
            }
            r.error.map(|e| e.to_string())
        };
        assert_eq!(
            msg("nosuch", None).as_deref(),
            Some("'nosuch' IB device can't be found")
        );
        assert_eq!(
            msg("mlx4_1", Some(3)).as_deref(),
            Some("CA: 'mlx4_1' has no port number 3 - max (2)")
        );
        // A CA has no port 0.
        assert_eq!(
            msg("rxe0", Some(0)).as_deref(),
            Some("CA: 'rxe0' has no port number 0 - max (1)")
        );
        assert_eq!(
            msg("rxe0", Some(1)),
            None,
            "rxe0 port 1 prints without error"
        );
    }

    #[test]
    fn iwarp_and_unreadable_node_types_are_not_listed() {
        let mut model = demo_model();
        let Some(rxe) = model.devices.values_mut().find(|d| d.name == "rxe0") else {
            panic!("the demo has rxe0");
        };
        rxe.node_type = "RNIC".into();
        let r = run_dp(&model, None, None);
        assert!(!r.stdout.contains("rxe0"), "{}", r.stdout);
        assert_eq!(
            run_dp(&model, Some("rxe0"), None)
                .error
                .map(|e| e.to_string()),
            Some("'rxe0' IB device can't be found".to_string())
        );
        let Some(rxe) = model.devices.values_mut().find(|d| d.name == "rxe0") else {
            panic!("the demo has rxe0");
        };
        rxe.node_type = String::new();
        rxe.unreadable
            .insert("NodeType".into(), "read failed: EIO".into());
        assert!(!run_dp(&model, None, None).stdout.contains("rxe0"));
    }

    /// A malformed value (the raw text is not on the bus) stops the output at its device with
    /// our own message, after the devices before it.
    #[test]
    fn malformed_values_stop_with_our_message() {
        let mut model = demo_model();
        let before = run_dp(&model, Some("mlx4_1"), None).stdout;
        let dev = model
            .devices
            .values()
            .find(|d| d.name == "mlx5_0")
            .expect("the demo has mlx5_0");
        let port = model
            .ports
            .get_mut(&dev.ports[0])
            .expect("the demo has mlx5_0's port");
        port.unreadable.insert(
            "Lid".into(),
            "malformed value \"garbage\": invalid digit found in string".into(),
        );
        let r = run_dp(&model, None, None);
        assert_eq!(r.stdout, before);
        let Some(e @ IbstatError::Unknown { .. }) = r.error else {
            panic!("{:?}", r.error);
        };
        assert_eq!(
            e.to_string(),
            "cannot tell what ibstat prints for 'mlx5_0': port 1: lid: the service read a \
             malformed value \"garbage\": invalid digit found in string; libibumad would read \
             its raw text, which the bus does not carry"
        );
        // An unknown state word (a newer service) is not guessed either.
        let port = model
            .ports
            .values_mut()
            .find(|p| p.device_name == "mlx4_1")
            .expect("the demo has mlx4_1's ports");
        port.state = "SLEEPY".into();
        assert!(matches!(
            run_dp(&model, Some("mlx4_1"), None).error,
            Some(IbstatError::Unknown { .. })
        ));
    }

    #[test]
    fn report_puts_ibstat_message_first() {
        let e = IbstatError::StatFailed {
            name: "a0".into(),
            cause: "node_guid: not present".into(),
        };
        assert_eq!(
            format!("{:#}", report(e)),
            "stat of IB device 'a0' failed: node_guid: not present"
        );
        let e = IbstatError::NotFound { name: "x".into() };
        assert_eq!(format!("{:#}", report(e)), "'x' IB device can't be found");
    }

    /// The service's reason for a malformed value starts as this module expects.
    #[test]
    fn malformed_reason_is_recognised() {
        let e = AttrError::malformed("garbage", "expected a number");
        assert!(e.to_string().starts_with(MALFORMED), "{e}");
        assert!(!AttrError::Missing.to_string().starts_with(MALFORMED));
        assert!(!AttrError::Unreadable(Errno::EIO)
            .to_string()
            .starts_with(MALFORMED));
    }

    /// The same unreadable attribute in the service's model and on the bus: the same output
    /// up to the same failure (or the same empty / `IB` value).
    #[tokio::test]
    async fn unreadable_attributes_fail_or_print_as_in_the_service() {
        type SnapEdit = fn(&mut DeviceSnapshot);
        type BusEdit = fn(&mut Device, &mut Port);
        let cases: [(&str, SnapEdit, BusEdit); 12] = [
            (
                "sm_sl",
                |d| d.ports[0].sm_sl = Err(AttrError::Missing),
                |_, p| {
                    p.unreadable.insert("SmSl".into(), "not present".into());
                },
            ),
            (
                "lid",
                |d| d.ports[0].lid = Err(AttrError::Missing),
                |_, p| {
                    p.unreadable.insert("Lid".into(), "not present".into());
                },
            ),
            (
                "lmc",
                |d| d.ports[0].lmc = Err(AttrError::Missing),
                |_, p| {
                    p.unreadable.insert("Lmc".into(), "not present".into());
                },
            ),
            (
                "sm_lid",
                |d| d.ports[0].sm_lid = Err(AttrError::Missing),
                |_, p| {
                    p.unreadable.insert("SmLid".into(), "not present".into());
                },
            ),
            (
                "state",
                |d| d.ports[0].state = Err(AttrError::Missing),
                |_, p| {
                    p.state.clear();
                    p.unreadable.insert("State".into(), "not present".into());
                },
            ),
            (
                "phys_state",
                |d| d.ports[0].phys_state = Err(AttrError::Missing),
                |_, p| {
                    p.phys_state.clear();
                    p.unreadable
                        .insert("PhysState".into(), "not present".into());
                },
            ),
            (
                "rate",
                |d| d.ports[0].rate = Err(AttrError::Missing),
                |_, p| {
                    p.rate.clear();
                    p.unreadable.insert("Rate".into(), "not present".into());
                },
            ),
            (
                "cap_mask",
                |d| d.ports[0].cap_mask = Err(AttrError::Missing),
                |_, p| {
                    p.unreadable
                        .insert("CapabilityMask".into(), "not present".into());
                },
            ),
            (
                "pkeys",
                |d| d.ports[0].pkeys.clear(),
                |_, p| p.pkeys.clear(),
            ),
            (
                "node_guid",
                |d| d.node_guid = Err(AttrError::Missing),
                |d, _| {
                    d.node_guid.clear();
                    d.unreadable.insert("NodeGuid".into(), "not present".into());
                },
            ),
            (
                "link_layer",
                |d| d.ports[0].link_layer = Err(AttrError::Missing),
                |_, p| {
                    p.link_layer.clear();
                    p.unreadable
                        .insert("LinkLayer".into(), "not present".into());
                },
            ),
            (
                "fw_ver",
                |d| d.fw_ver = Err(AttrError::Missing),
                |d, _| {
                    d.fw_version.clear();
                    d.unreadable
                        .insert("FwVersion".into(), "not present".into());
                },
            ),
        ];
        assert_eq!(AttrError::Missing.to_string(), "not present");
        let base = demo_snapshots().await;
        for (what, snap_edit, bus_edit) in cases {
            // mlx5_0: two devices print before it, one after.
            let mut snaps = base.clone();
            let snap = snaps
                .iter_mut()
                .find(|d| d.name == "mlx5_0")
                .expect("the demo has mlx5_0");
            snap_edit(snap);
            let mut model = demo_model();
            let dev = model
                .devices
                .values_mut()
                .find(|d| d.name == "mlx5_0")
                .expect("the demo has mlx5_0");
            let port = model
                .ports
                .get_mut(&dev.ports[0])
                .expect("the demo has mlx5_0's port");
            bus_edit(dev, port);
            let theirs = rdma_managerd::ibstat::run_all(&snaps);
            let ours = run_dp(&model, None, None);
            assert_eq!(ours, theirs, "{what}");
        }
    }
}
