//! The editing pages driven by keys: the calls they make, with which arguments, in which
//! order; nothing sent for invalid input; a refused call leaves the form as it was typed.

mod common;

use common::*;
use crossterm::event::KeyCode;
use rdma_tui::app::{App, Status};
use rdma_tui::client::Update;
use rdma_tui::client::{Call, CallError, CallOutput, ErrorKind};
use rdma_tui::fixtures;
use rdma_tui::model::NameRule;
use rdma_tui::pages::PageId;
use rdma_tui::theme::Theme;

/// The IPoIB page with the create form open on ibp59s0f0 (enhanced IPoIB, mlx5_0).
fn create_on_mlx5() -> App {
    let mut app = app_on(PageId::Ipoib);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Char('n'));
    app
}

#[test]
fn ipoib_create_sends_the_pkey_and_the_default_name() {
    let mut app = create_on_mlx5();
    type_text(&mut app, "8005");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        calls(&mut app),
        vec![Call::CreateIpoibChild {
            parent: IPOIB_MLX5.into(),
            pkey: 0x8005,
            name: "ibp59s0f0.8005".into(),
            mode: None,
            mtu: None,
            umcast: None,
        }]
    );
}

#[test]
fn ipoib_create_keeps_a_limited_pkey_as_given_and_sends_settings() {
    let mut app = app_on(PageId::Ipoib);
    press(&mut app, KeyCode::Insert);
    type_text(&mut app, "0x0002");
    // P_Key -> name -> mode: connected (ib0 supports it) -> MTU -> umcast.
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Right);
    press(&mut app, KeyCode::Tab);
    type_text(&mut app, "65520");
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Char(' '));
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        calls(&mut app),
        vec![Call::CreateIpoibChild {
            parent: IPOIB_IB0.into(),
            pkey: 0x0002,
            name: "ib0.0002".into(),
            mode: Some("connected".into()),
            mtu: Some(65520),
            umcast: Some(true),
        }]
    );
}

#[test]
fn ipoib_create_with_a_name_typed_keeps_it() {
    let mut app = create_on_mlx5();
    type_text(&mut app, "8006");
    press(&mut app, KeyCode::Tab);
    ctrl(&mut app, 'u');
    type_text(&mut app, "storage0");
    // Changing the P_Key afterwards leaves a typed name alone.
    press(&mut app, KeyCode::BackTab);
    press(&mut app, KeyCode::Backspace);
    type_text(&mut app, "7");
    press(&mut app, KeyCode::Enter);
    let c = calls(&mut app);
    assert!(
        matches!(&c[..], [Call::CreateIpoibChild { pkey: 0x8007, name, .. }] if name == "storage0"),
        "{c:?}"
    );
}

#[test]
fn ipoib_create_refuses_invalid_input_without_a_call() {
    let cases: [(&str, &[KeyCode], &str); 9] = [
        ("", &[], "give the P_Key"),
        ("0", &[], "invalid P_Key"),
        ("8000", &[], "full-membership bit alone"),
        ("zz", &[], "not hexadecimal"),
        ("12345", &[], "16 bits"),
        // A partition ibp59s0f0 has a child in already, with or without the bit.
        ("0002", &[], "already has P_Key 0x8002"),
        ("ffff", &[], "itself carries"),
        // A name the kernel would refuse.
        ("8009", &[KeyCode::Tab, KeyCode::Char(':')], "not allowed"),
        // An MTU datagram mode cannot carry.
        (
            "8009",
            &[
                KeyCode::Tab,
                KeyCode::Tab,
                KeyCode::Tab,
                KeyCode::Char('9'),
                KeyCode::Char('0'),
                KeyCode::Char('0'),
                KeyCode::Char('0'),
            ],
            "datagram mode allows 72 to 4092",
        ),
    ];
    for (pkey, keys, message) in cases {
        let mut app = create_on_mlx5();
        type_text(&mut app, pkey);
        for k in keys {
            press(&mut app, *k);
        }
        press(&mut app, KeyCode::Enter);
        assert!(calls(&mut app).is_empty(), "{pkey:?} {keys:?} sent a call");
        let s = screen(&mut app, 100, 30);
        assert!(s.contains("New P_Key child"), "the form closed: {s}");
        assert!(s.contains(message), "{pkey:?}: no {message:?} in\n{s}");
    }
}

/// Text longer than a field takes is kept as typed and refused with the reason: never cut
/// into another valid value (`0x10000` cut to `0x1000` would create P_Key 0x9000).
#[test]
fn ipoib_create_keeps_too_long_input_and_refuses_it() {
    for (pkey, message) in [
        ("0x10000", "0x10000 does not fit in 16 bits"),
        ("0xffff1", "does not fit in 16 bits"),
        ("0x0000008005", "too long"),
    ] {
        let mut app = create_on_mlx5();
        type_text(&mut app, pkey);
        press(&mut app, KeyCode::Enter);
        assert!(calls(&mut app).is_empty(), "{pkey} sent a call");
        let s = screen(&mut app, 80, 24);
        assert!(s.contains(&format!("[{pkey}")), "{pkey} was cut:\n{s}");
        assert!(s.contains(message), "{pkey}: no {message:?} in\n{s}");
    }
    // A name longer than an interface name can be: kept, and refused.
    let mut app = create_on_mlx5();
    type_text(&mut app, "8005");
    press(&mut app, KeyCode::Tab);
    type_text(&mut app, "abcdefghijklmnopq");
    press(&mut app, KeyCode::Enter);
    assert!(calls(&mut app).is_empty());
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("abcdefghijklmnopq"), "{s}");
}

/// An empty Name is the default (the placeholder shows it): typing replaces it, clearing it
/// is no fault, and a bad P_Key is said once, at the P_Key.
#[test]
fn ipoib_create_empty_name_is_the_default_and_each_fault_is_said_once() {
    let mut app = create_on_mlx5();
    type_text(&mut app, "8005");
    let s = screen(&mut app, 80, 24);
    assert!(
        s.contains("(ibp59s0f0.8005)"),
        "the default as placeholder:\n{s}"
    );
    // Typing into the name gives that name, not the default with text appended.
    press(&mut app, KeyCode::Tab);
    type_text(&mut app, "my_ib");
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("[my_ib"), "{s}");
    // Cleared, it is the default again: no "the name is empty".
    ctrl(&mut app, 'u');
    let s = screen(&mut app, 80, 24);
    assert!(!s.contains("name is empty"), "{s}");
    assert!(s.contains("empty: the default, ibp59s0f0.8005"), "{s}");
    press(&mut app, KeyCode::Enter);
    let c = calls(&mut app);
    assert!(
        matches!(&c[..], [Call::CreateIpoibChild { pkey: 0x8005, name, .. }] if name == "ibp59s0f0.8005"),
        "{c:?}"
    );
    // A bad P_Key: one message, at the P_Key.
    let mut app = create_on_mlx5();
    type_text(&mut app, "zz");
    press(&mut app, KeyCode::Enter);
    assert!(calls(&mut app).is_empty());
    let s = screen(&mut app, 80, 24);
    let faults: Vec<&str> = s.lines().filter(|l| l.contains("! ")).collect();
    assert_eq!(
        faults
            .iter()
            .filter(|l| !l.contains("Correct the fields"))
            .count(),
        1,
        "{s}"
    );
    assert!(!s.contains("name is empty"), "{s}");
}

#[test]
fn ipoib_connected_mode_cannot_be_chosen_on_enhanced_ipoib() {
    let mut app = create_on_mlx5();
    type_text(&mut app, "8011");
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Right);
    press(&mut app, KeyCode::Char(' '));
    press(&mut app, KeyCode::Enter);
    let c = calls(&mut app);
    assert!(
        matches!(&c[..], [Call::CreateIpoibChild { mode: None, .. }]),
        "{c:?}"
    );
}

#[test]
fn ipoib_refused_create_keeps_the_form_and_retries() {
    let mut app = create_on_mlx5();
    type_text(&mut app, "8005");
    press(&mut app, KeyCode::Enter);
    let sent = answer_all(&mut app, Err(not_authorized()));
    assert_eq!(sent.len(), 1);
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("[8005"), "{s}");
    assert!(s.contains("(ibp59s0f0.8005)"), "{s}");
    assert!(
        s.contains("polkit action org.rdmamanager.rdmamanager1.manage-ipoib"),
        "{s}"
    );
    assert!(s.contains("an administrator can grant"), "{s}");
    // Keys still go to the form; the same call is made again.
    press(&mut app, KeyCode::Enter);
    // After success the form closes and the new child is selected when it appears.
    let retried = answer_all(
        &mut app,
        Ok(CallOutput::Created(
            "/org/rdmamanager/RdmaManager1/Ipoib/12".into(),
        )),
    );
    assert_eq!(retried, sent);
    let s = screen(&mut app, 80, 24);
    assert!(!s.contains("New P_Key child"), "{s}");
    assert!(s.contains("> ibp59s0f0.8003"), "{s}");
}

#[test]
fn ipoib_edit_sends_changes_one_after_another() {
    let mut app = app_on(PageId::Ipoib);
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Right);
    press(&mut app, KeyCode::Tab);
    ctrl(&mut app, 'u');
    type_text(&mut app, "65520");
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Char(' '));
    press(&mut app, KeyCode::Enter);
    let first = answer_all(&mut app, Ok(CallOutput::Done));
    assert_eq!(
        first,
        vec![Call::SetIpoibMode {
            path: IPOIB_IB0.into(),
            mode: "connected".into()
        }]
    );
    let second = answer_all(&mut app, Ok(CallOutput::Done));
    assert_eq!(
        second,
        vec![Call::SetIpoibMtu {
            path: IPOIB_IB0.into(),
            mtu: 65520
        }]
    );
    let third = answer_all(&mut app, Ok(CallOutput::Done));
    assert_eq!(
        third,
        vec![Call::SetIpoibUmcast {
            path: IPOIB_IB0.into(),
            umcast: true
        }]
    );
    assert!(calls(&mut app).is_empty());
    assert!(!screen(&mut app, 80, 24).contains("Apply"));
    // The status line says every change of the sequence, not only the last.
    assert_eq!(
        app.status,
        Status::Info("Done: set ib0 mode connected, set ib0 MTU 65520, set ib0 umcast 1".into())
    );
}

/// The status line names objects by name (said when the call was made: a deleted interface
/// is gone from the model when the answer comes) and is about the page it was said on.
#[test]
fn status_names_objects_and_stays_with_its_page() {
    let mut app = app_on(PageId::Ipoib);
    let name = app.model.ipoib[IPOIB_8002].name.clone();
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Char('d'));
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(app.status, Status::Info(format!("delete {name}...")));
    // InterfacesRemoved comes before the answer.
    app.apply(Update::Removed {
        path: IPOIB_8002.into(),
        ifaces: vec![rdma_tui::model::IPOIB_IFACE.into()],
    });
    answer_all(&mut app, Ok(CallOutput::Done));
    assert_eq!(app.status, Status::Info(format!("Done: delete {name}")));
    assert!(screen(&mut app, 80, 24).contains(&format!("Done: delete {name}")));
    // Another page starts without it.
    press(&mut app, KeyCode::Char('5'));
    assert_eq!(app.status, Status::None);
    assert!(!screen(&mut app, 80, 24).contains("Done:"));
}

#[test]
fn ipoib_edit_stops_at_the_first_failure() {
    let mut app = app_on(PageId::Ipoib);
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Right);
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Char(' '));
    press(&mut app, KeyCode::Enter);
    let first = answer_all(
        &mut app,
        Err(CallError {
            kind: ErrorKind::Busy,
            message: "ib0 is busy".into(),
        }),
    );
    assert!(
        matches!(&first[..], [Call::SetIpoibMode { .. }]),
        "{first:?}"
    );
    assert!(calls(&mut app).is_empty());
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("ib0 is busy") && s.contains("[x]"), "{s}");
}

#[test]
fn ipoib_edit_without_changes_sends_nothing() {
    let mut app = app_on(PageId::Ipoib);
    press(&mut app, KeyCode::Char('e'));
    press(&mut app, KeyCode::Enter);
    assert!(calls(&mut app).is_empty());
}

#[test]
fn ipoib_delete_asks_first_and_only_for_children() {
    let mut app = app_on(PageId::Ipoib);
    // ib0 is a port's own interface: no question, a word why.
    press(&mut app, KeyCode::Char('d'));
    let s = screen(&mut app, 80, 24);
    assert!(!s.contains("Delete ib0"), "{s}");
    assert!(s.contains("only P_Key children can be deleted"), "{s}");
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Delete);
    assert!(calls(&mut app).is_empty());
    press(&mut app, KeyCode::Char('n'));
    assert!(calls(&mut app).is_empty(), "n answers no");
    press(&mut app, KeyCode::Char('d'));
    // Enter alone takes the safe button, Cancel; Left moves to Delete.
    press(&mut app, KeyCode::Enter);
    assert!(calls(&mut app).is_empty(), "Enter cancels");
    assert!(!screen(&mut app, 80, 24).contains("Delete ibp"));
    press(&mut app, KeyCode::Char('d'));
    press(&mut app, KeyCode::Left);
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        calls(&mut app),
        vec![Call::DeleteIpoib {
            path: IPOIB_8002.into()
        }]
    );
}

#[test]
fn an_open_form_keeps_global_keys_for_itself() {
    let mut app = create_on_mlx5();
    type_text(&mut app, "q2");
    assert!(!app.quit);
    assert_eq!(app.current_page(), PageId::Ipoib);
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.current_page(), PageId::Ipoib);
    press(&mut app, KeyCode::Esc);
    assert_eq!(
        app.current_page(),
        PageId::Ipoib,
        "Esc closes the form only"
    );
    assert!(!screen(&mut app, 80, 24).contains("New P_Key child"));
}

#[test]
fn soft_link_add_defaults_and_checks() {
    let mut app = app_on(PageId::SoftLinks);
    press(&mut app, KeyCode::Char('a'));
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        calls(&mut app),
        vec![Call::AddSoftLink {
            name: "rxe1".into(),
            kind: "rxe".into(),
            netdev: "enp4s0d1".into()
        }]
    );
    // siw over eth0 (Space picks the known interfaces), with its own default name.
    let mut app = app_on(PageId::SoftLinks);
    press(&mut app, KeyCode::Char('a'));
    press(&mut app, KeyCode::Right);
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Char(' '));
    press(&mut app, KeyCode::Char(' '));
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        calls(&mut app),
        vec![Call::AddSoftLink {
            name: "siw0".into(),
            kind: "siw".into(),
            netdev: "eth0".into()
        }]
    );
    // A second rxe over eth0, an IPoIB interface, a taken device name: nothing is sent.
    for (tabs, text) in [(1, "eth0"), (1, "ib0"), (2, "mlx5_0")] {
        let mut app = app_on(PageId::SoftLinks);
        press(&mut app, KeyCode::Char('a'));
        for _ in 0..tabs {
            press(&mut app, KeyCode::Tab);
        }
        ctrl(&mut app, 'u');
        type_text(&mut app, text);
        press(&mut app, KeyCode::Enter);
        assert!(calls(&mut app).is_empty(), "{text}");
    }
}

#[test]
fn soft_link_remove() {
    let mut app = app_on(PageId::SoftLinks);
    press(&mut app, KeyCode::Char('d'));
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(
        calls(&mut app),
        vec![Call::RemoveSoftLink {
            name: "rxe0".into()
        }]
    );
}

#[test]
fn naming_previews_on_show_and_after_a_change() {
    let mut app = app_on(PageId::Naming);
    assert_eq!(calls_peek(&mut app), vec![Call::PreviewRdmaNames]);
    answer_preview(&mut app);
    assert!(screen(&mut app, 80, 24).contains("ibp59s0f0"));
    press(&mut app, KeyCode::Char('p'));
    // NAME_FALLBACK -> NAME_ONBOARD -> NAME_GUID.
    press(&mut app, KeyCode::Left);
    press(&mut app, KeyCode::Left);
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("< NAME_GUID >"), "{s}");
    assert!(s.contains("mlx4_1 -> ibxf452140300039380"), "{s}");
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Char(' '));
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        answer_all(&mut app, Ok(CallOutput::Done)),
        vec![Call::SetRdmaNamingPolicy {
            policy: "NAME_GUID".into(),
            apply_now: true
        }]
    );
    assert_eq!(calls(&mut app), vec![Call::PreviewRdmaNames]);
}

/// The calls asked for, answered with success so that the page is not left waiting.
fn calls_peek(app: &mut App) -> Vec<Call> {
    let taken = app.take_calls();
    let out = taken.iter().map(|(_, c)| c.clone()).collect();
    for (id, call) in taken {
        let result = if call == Call::PreviewRdmaNames {
            Ok(CallOutput::Preview(demo_preview()))
        } else {
            Ok(CallOutput::Done)
        };
        app.apply(rdma_tui::client::Update::CallDone { id, call, result });
    }
    out
}

#[test]
fn naming_fixed_and_ipoib_names_and_rename() {
    let mut app = app_on(PageId::Naming);
    answer_preview(&mut app);
    // mlx4_1 is selected: a fixed name for it.
    press(&mut app, KeyCode::Char('f'));
    press(&mut app, KeyCode::Tab);
    type_text(&mut app, "hpc0");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        calls(&mut app),
        vec![Call::SetRdmaFixedName {
            guid: "0xf452140300039380".into(),
            name: "hpc0".into(),
            apply_now: false
        }]
    );
    // Names the daemon refuses: another device's, a slash.
    for bad in ["mlx5_1", "a/b", ""] {
        let mut app = app_on(PageId::Naming);
        answer_preview(&mut app);
        press(&mut app, KeyCode::Char('f'));
        press(&mut app, KeyCode::Tab);
        type_text(&mut app, bad);
        press(&mut app, KeyCode::Enter);
        assert!(calls(&mut app).is_empty(), "{bad:?}");
    }
    // An IPoIB name for mlx5_0's port.
    let mut app = app_on(PageId::Naming);
    answer_preview(&mut app);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Char('i'));
    press(&mut app, KeyCode::Tab);
    type_text(&mut app, "hpc_ib0");
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Char(' '));
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        calls(&mut app),
        vec![Call::SetIpoibName {
            guid: "0xb8599f0300d4e62a".into(),
            name: "hpc_ib0".into(),
            apply_now: true
        }]
    );
    // ib0 is taken by mlx4_1's port.
    let mut app = app_on(PageId::Naming);
    answer_preview(&mut app);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Char('i'));
    press(&mut app, KeyCode::Tab);
    type_text(&mut app, "ib0");
    press(&mut app, KeyCode::Enter);
    assert!(calls(&mut app).is_empty());
    // Rename rxe0 now.
    let mut app = app_on(PageId::Naming);
    answer_preview(&mut app);
    press(&mut app, KeyCode::End);
    press(&mut app, KeyCode::Char('r'));
    ctrl(&mut app, 'u');
    type_text(&mut app, "lab0");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        calls(&mut app),
        vec![Call::RenameDevice {
            device: "/org/rdmamanager/RdmaManager1/Device/3".into(),
            name: "lab0".into()
        }]
    );
}

#[test]
fn naming_removes_managed_rules_only() {
    let mut model = fixtures::demo_model();
    model.manager.rdma_fixed_names.push(NameRule {
        guid: "0xb8599f0300d4e62a".into(),
        name: "hpc0".into(),
        managed: true,
        line: 6,
    });
    model.manager.ipoib_names.push(NameRule {
        guid: "0xf452140300039381".into(),
        name: "site_ib".into(),
        managed: false,
        line: 4,
    });
    let mut app = App::with_model(model, Theme::colored());
    app.show(PageId::Naming);
    answer_preview(&mut app);
    // The hand-written IPoIB rule (last): read-only.
    press(&mut app, KeyCode::End);
    press(&mut app, KeyCode::Char('d'));
    press(&mut app, KeyCode::Enter);
    assert!(calls(&mut app).is_empty());
    // The fixed name above it.
    press(&mut app, KeyCode::Up);
    press(&mut app, KeyCode::Char('d'));
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(
        answer_all(&mut app, Ok(CallOutput::Done)),
        vec![Call::RemoveRdmaFixedName {
            guid: "0xb8599f0300d4e62a".into()
        }]
    );
    assert_eq!(calls(&mut app), vec![Call::PreviewRdmaNames]);
}

/// One selected port across pages: the port chosen on one page is the one the next page
/// shows, by number key, Tab or Esc.
#[test]
fn pages_share_the_selected_port() {
    let mut app = app_on(PageId::Detail);
    let first = screen(&mut app, 100, 30);
    // mlx4_1/1, mlx4_1/2, then mlx5_0/1.
    press(&mut app, KeyCode::Right);
    press(&mut app, KeyCode::Right);
    let s = screen(&mut app, 100, 30);
    assert!(
        s.lines().nth(1).unwrap_or_default().starts_with("mlx5_0/1"),
        "{s}"
    );
    // The bandwidth page shows that port.
    press(&mut app, KeyCode::Char('3'));
    let s = screen(&mut app, 100, 30);
    let title = s.lines().nth(1).unwrap_or_default().to_string();
    assert!(title.contains("mlx5_0/1"), "{s}");
    // The IPoIB page selects its interface.
    press(&mut app, KeyCode::Char('4'));
    let s = screen(&mut app, 100, 30);
    assert!(
        s.lines().any(|l| l.starts_with("> ibp59s0f0 ")),
        "ibp59s0f0 selected:\n{s}"
    );
    // A port chosen on the IPoIB page (ib0, mlx4_1/1) goes back to the Port page.
    press(&mut app, KeyCode::Up);
    press(&mut app, KeyCode::Char('2'));
    let s = screen(&mut app, 100, 30);
    assert_eq!(s, first, "the Port page is back on mlx4_1/1");
}
