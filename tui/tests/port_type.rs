//! The port page's port type form (`t`): opened on a port whose driver has a type to set,
//! sent as SetPortType, said as staged for the next boot where the firmware holds it; and the
//! same page's VF GUID form (`v`).

mod common;

use common::*;
use crossterm::event::KeyCode;
use insta::assert_snapshot;
use rdma_tui::app::{App, Status};
use rdma_tui::client::{Call, CallOutput};
use rdma_tui::pages::PageId;

/// The port page showing `label` (stepping through the ports with `]`).
fn port_page(label: &str) -> App {
    let mut app = app_on(PageId::Detail);
    for _ in 0..8 {
        if screen(&mut app, 80, 24)
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with(label))
        {
            return app;
        }
        press(&mut app, KeyCode::Char(']'));
    }
    panic!("{label} not on the demo host");
}

#[test]
fn a_firmware_port_type_is_staged_for_the_next_boot() {
    let mut app = port_page("mlx5_0/1");
    press(&mut app, KeyCode::Char('t'));
    assert_snapshot!("port_type_form_80x24", screen(&mut app, 80, 24));
    press(&mut app, KeyCode::Right);
    press(&mut app, KeyCode::Enter);
    let sent = answer_all(&mut app, Ok(CallOutput::Done));
    assert!(
        matches!(sent.as_slice(), [Call::SetPortType { port_type, .. }] if port_type == "eth"),
        "{sent:?}"
    );
    assert!(
        matches!(&app.status, Status::Info(m)
            if m == "Done: stage port type eth of mlx5_0/1 in firmware (a reboot applies it)"),
        "{:?}",
        app.status
    );
}

#[test]
fn a_port_without_a_type_to_set_opens_no_form() {
    let mut app = port_page("rxe0/1");
    press(&mut app, KeyCode::Char('t'));
    assert!(calls(&mut app).is_empty());
    let s = screen(&mut app, 80, 24);
    assert!(!s.contains("[ Apply ]"), "{s}");
    assert!(s.contains("rxe0/1 has no port type to set"), "{s}");
}

/// The VF GUID form (`v`) of a PF: the demo host's first device given two VFs, one of them
/// not enabled (its choice is skipped), the enabled one without GUIDs yet.
#[test]
fn the_vf_guid_form_of_a_pf_at_80x24() {
    use rdma_tui::model::VfGuid;
    let mut app = port_page("mlx4_1/1");
    let port = app.model.ports_in_order()[0].clone();
    let Some(dev) = app.model.device_of(&port).map(|d| d.path.clone()) else {
        panic!("mlx4_1/1's device");
    };
    if let Some(d) = app.model.devices.get_mut(&dev) {
        d.vf_guids = vec![
            VfGuid {
                vf: 0,
                pci_address: "0000:04:00.1".into(),
                ..VfGuid::default()
            },
            VfGuid {
                vf: 1,
                remembered_node_guid: "00:11:22:33:44:55:66:70".into(),
                remembered_port_guid: "00:11:22:33:44:55:66:70".into(),
                ..VfGuid::default()
            },
        ];
    }
    press(&mut app, KeyCode::Char('v'));
    press(&mut app, KeyCode::Enter);
    assert!(calls(&mut app).is_empty(), "no GUIDs: refused");
    assert_snapshot!("vf_guid_form_refused_80x24", screen(&mut app, 80, 24));
}
