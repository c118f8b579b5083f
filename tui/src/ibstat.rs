//! `rdma-tui --ibstat [DEVICE [PORT]]`: what rdma-core's `ibstat` (v44.0) prints, rendered
//! from the D-Bus objects the client holds ([`Model`]). The format is
//! [`rdma_manager_dbus::ibstat`], the one `rdma-managerd show` prints with; the devices are
//! rebuilt from the objects' records by [`rdma_manager_dbus::ibstat::bus`], the same
//! adapter the daemon's direct socket renders `Direct.GetIbstat` with.

use rdma_manager_dbus::ibstat::bus::BusDevice;
use rdma_manager_dbus::ibstat::{self as render, IbstatArgs, IbstatRun};

use crate::model::Model;

/// Every device of the model (ibstat's filter and order are the renderer's).
pub fn devices(model: &Model) -> Vec<BusDevice<'_>> {
    render::bus::devices(model.devices.values(), &model.ports)
}

/// One ibstat run on the model with ibstat's arguments (`-l`, `-s`, `-p`, `DEVICE [PORT]`):
/// the output up to a failure, and the failure.
pub fn run(model: &Model, args: &IbstatArgs) -> IbstatRun {
    render::run(&devices(model), args)
}

/// Prints a run as [`IbstatRun::into_reply`] gives it (this client's, or the daemon's
/// `Direct.GetIbstat`): as ibstat 44.0, what was printed before a failure stays printed, then
/// the error to exit with.
pub fn print(reply: (String, String, String)) -> anyhow::Result<()> {
    use std::io::Write;
    let (stdout, message, cause) = reply;
    let mut out = std::io::stdout().lock();
    out.write_all(stdout.as_bytes())?;
    out.flush()?;
    failure(&message, &cause).map_or(Ok(()), Err)
}

/// The error to exit with: ibstat's message, with our reason behind it when there is one;
/// `None` when the run did not stop.
pub fn failure(message: &str, cause: &str) -> Option<anyhow::Error> {
    match (message, cause) {
        ("", _) => None,
        (message, "") => Some(anyhow::Error::msg(message.to_string())),
        (message, cause) => {
            Some(anyhow::Error::msg(cause.to_string()).context(message.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::demo_model;
    use crate::model::{Device, Port};
    use rdma_manager_dbus::ibstat::bus::MALFORMED;
    use rdma_manager_dbus::ibstat::IbstatError;
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
    fn failure_puts_ibstat_message_first() {
        let reply = |error| {
            IbstatRun {
                stdout: String::new(),
                error: Some(error),
            }
            .into_reply()
        };
        let (_, message, cause) = reply(IbstatError::StatFailed {
            name: "a0".into(),
            cause: "node_guid: not present".into(),
        });
        assert_eq!(
            failure(&message, &cause)
                .map(|e| format!("{e:#}"))
                .as_deref(),
            Some("stat of IB device 'a0' failed: node_guid: not present")
        );
        let (_, message, cause) = reply(IbstatError::NotFound { name: "x".into() });
        assert_eq!(
            failure(&message, &cause)
                .map(|e| format!("{e:#}"))
                .as_deref(),
            Some("'x' IB device can't be found")
        );
        assert!(failure("", "").is_none());
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
