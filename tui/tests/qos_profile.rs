//! The RoCE page's QoS profile form (`Q`): read afresh, pre-filled, checked as it is typed,
//! sent only when it changes something; a port without DCB says why on the status line and
//! opens no form.

mod common;

use common::*;
use crossterm::event::KeyCode;
use insta::assert_snapshot;
use rdma_manager_model::qos::{parse_ets, QosProfile, Trust};
use rdma_manager_model::state::{RoceEntry, State};
use rdma_tui::app::{App, Status};
use rdma_tui::client::{Call, CallError, CallOutput, ErrorKind, Update};
use rdma_tui::pages::PageId;

/// mlx5's profile after a driver load, as GetQosProfile answers it.
fn mlx5_default() -> QosProfile {
    QosProfile {
        ets: parse_ets("100,0,0,0,0,0,0,0/0,0,0,0,0,0,0,0").unwrap_or_default(),
        traffic_class: Some(0),
        ecn: Some(vec![]),
        ..QosProfile::default()
    }
}

/// The RoCE page with the row `rows_down` from the top selected, `Q` pressed and its read
/// answered with `result`; returns the port the read was about.
fn q_answered(app: &mut App, rows_down: usize, result: Result<CallOutput, CallError>) -> String {
    for _ in 0..rows_down {
        press(app, KeyCode::Down);
    }
    press(app, KeyCode::Char('Q'));
    let mut asked = Vec::new();
    for (id, call) in app.take_calls() {
        if let Call::GetQosProfile { port } = &call {
            asked.push(port.clone());
        }
        app.apply(Update::CallDone {
            id,
            call,
            result: result.clone(),
        });
    }
    assert_eq!(asked.len(), 1, "one read: {asked:?}");
    asked.remove(0)
}

/// mlx5_1/1 (the second RoCE port of the demo host) with its form open.
fn form_open() -> (App, String) {
    let mut app = app_on(PageId::Roce);
    let port = q_answered(
        &mut app,
        1,
        Ok(CallOutput::QosProfile {
            profile: mlx5_default(),
            remembered: false,
        }),
    );
    (app, port)
}

#[test]
fn the_form_is_prefilled_at_80x24_and_larger() {
    let (mut app, _) = form_open();
    assert_snapshot!("qos_form_80x24", screen(&mut app, 80, 24));
    assert_snapshot!("qos_form_120x40", screen(&mut app, 120, 40));
}

#[test]
fn wrong_input_is_shown_on_its_field_and_refused() {
    let (mut app, _) = form_open();
    // Trust, then PFC: "none" with a 9 typed after it.
    press(&mut app, KeyCode::Tab);
    type_text(&mut app, "9");
    press(&mut app, KeyCode::Enter);
    assert!(calls(&mut app).is_empty(), "refused before any call");
    assert_snapshot!("qos_form_refused_80x24", screen(&mut app, 80, 24));
}

#[test]
fn a_valid_profile_is_sent_whole_and_nothing_unchanged() {
    let (mut app, _) = form_open();
    press(&mut app, KeyCode::Enter);
    assert!(calls(&mut app).is_empty());
    assert!(
        matches!(&app.status, Status::Info(m) if m == "Nothing changed."),
        "{:?}",
        app.status
    );
    let (mut app, _) = form_open();
    press(&mut app, KeyCode::Tab);
    for _ in 0.."none".len() {
        press(&mut app, KeyCode::Backspace);
    }
    type_text(&mut app, "3");
    // ETS, then the DSCP map.
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Tab);
    for _ in 0.."none".len() {
        press(&mut app, KeyCode::Backspace);
    }
    type_text(&mut app, "26:3");
    press(&mut app, KeyCode::Enter);
    let want = QosProfile {
        trust: Trust::Dscp,
        pfc: vec![3],
        dscp: [(26, 3)].into(),
        ..mlx5_default()
    };
    assert_eq!(
        answer_all(&mut app, Ok(CallOutput::Done)),
        vec![Call::ApplyState {
            state: Box::new(State {
                roce: Some(vec![RoceEntry {
                    device: "mlx5_1".into(),
                    port: 1,
                    mode: None,
                    tos: None,
                    qos: Some(want),
                }]),
                ..State::default()
            }),
            what: "set the QoS profile of mlx5_1/1".into(),
        }]
    );
    assert!(
        matches!(&app.status, Status::Info(m) if m == "Done: set the QoS profile of mlx5_1/1"),
        "{:?}",
        app.status
    );
    assert!(!screen(&mut app, 80, 24).contains("[ Apply ]"), "closed");
}

/// rxe0/1 (the third RoCE port) has no DCB: the read's NotSupported, with the kernel's
/// reason, is on the status line, and no form opens.
#[test]
fn a_port_without_dcb_says_why_and_opens_no_form() {
    let mut app = app_on(PageId::Roce);
    let err = CallError {
        kind: ErrorKind::NotSupported,
        message: "rxe0 port 1 (eth0): DCB read on eth0 is not available: the kernel answered \
                  EOPNOTSUPP (Operation not supported)"
            .into(),
    };
    q_answered(&mut app, 2, Err(err));
    let s = screen(&mut app, 80, 24);
    assert!(!s.contains("[ Apply ]"), "{s}");
    assert!(s.contains("EOPNOTSUPP"), "{s}");
    assert_snapshot!("qos_no_dcb_80x24", s);
}
