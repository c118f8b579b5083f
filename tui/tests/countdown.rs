//! The "Keep these settings?" dialog of pending IP changes: it opens on a
//! pending change (returned by a call, or listed in `Network.PendingChanges`), counts down to
//! the deadline, has the keyboard, and closes on `Network.ChangeEnded`.

mod common;

use std::collections::HashMap;

use common::*;
use crossterm::event::KeyCode;
use insta::assert_snapshot;
use rdma_tui::app::{App, Status};
use rdma_tui::client::{Call, CallError, CallOutput, ErrorKind, PendingInfo, Update};
use rdma_tui::fixtures;
use rdma_tui::model::NETWORK_IFACE;
use rdma_tui::pages::PageId;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};

const CHANGE: &str = "/org/rdmamanager/RdmaManager1/Change/1";

fn pending(path: &str) -> PendingInfo {
    PendingInfo {
        path: path.into(),
        interface: "ib0".into(),
        description: "set ipv4.addresses of ib0 to 192.0.2.1/24".into(),
        // 52 s and a bit after the time the snapshots are drawn at.
        deadline_us: fixtures::NOW_US + 51_200_000,
    }
}

/// An app on the IPoIB page with a SetIpSettings call answered by a pending change.
fn with_pending() -> App {
    let mut app = app_on(PageId::Ipoib);
    answer_all(&mut app, Ok(CallOutput::Done));
    app.apply(Update::CallDone {
        id: 999,
        call: Call::SetIpSettings {
            interface: "ib0".into(),
            settings: Vec::new(),
        },
        result: Ok(CallOutput::Pending(pending(CHANGE))),
    });
    app
}

fn ended(app: &mut App, outcome: &str) {
    app.apply(Update::ChangeEnded {
        change: CHANGE.into(),
        outcome: outcome.into(),
    });
}

#[test]
fn a_pending_change_opens_the_dialog_with_its_countdown() {
    let mut app = with_pending();
    assert!(app.countdown.is_open());
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("Keep these settings? 52 s"), "{s}");
    assert_snapshot!(s);
}

#[test]
fn enter_and_k_keep_esc_and_r_roll_back_and_other_keys_do_nothing() {
    for (key, want) in [
        (
            KeyCode::Enter,
            Call::ConfirmChange {
                path: CHANGE.into(),
            },
        ),
        (
            KeyCode::Char('k'),
            Call::ConfirmChange {
                path: CHANGE.into(),
            },
        ),
        (
            KeyCode::Esc,
            Call::RollBackChange {
                path: CHANGE.into(),
            },
        ),
        (
            KeyCode::Char('r'),
            Call::RollBackChange {
                path: CHANGE.into(),
            },
        ),
    ] {
        let mut app = with_pending();
        // The dialog has the keyboard: q does not quit, Tab does not change the page.
        press(&mut app, KeyCode::Char('q'));
        press(&mut app, KeyCode::Tab);
        assert!(!app.quit);
        assert_eq!(app.current_page(), PageId::Ipoib);
        assert!(calls(&mut app).is_empty());
        press(&mut app, key);
        assert_eq!(calls(&mut app), vec![want]);
    }
}

#[test]
fn change_ended_closes_the_dialog_and_says_how() {
    for (outcome, said) in [
        ("confirmed", "Kept: set ipv4.addresses"),
        ("rolled-back", "rolled back"),
        ("timed-out", "rolled back: not confirmed in time"),
    ] {
        let mut app = with_pending();
        press(&mut app, KeyCode::Enter);
        answer_all(&mut app, Ok(CallOutput::Done));
        // The answer alone does not close it: the daemon's signal does.
        assert!(app.countdown.is_open());
        ended(&mut app, outcome);
        assert!(!app.countdown.is_open());
        let s = screen(&mut app, 80, 24);
        assert!(!s.contains("Keep these settings?"), "{s}");
        let status = match &app.status {
            Status::Info(s) | Status::Error(s) => s.clone(),
            Status::None => String::new(),
        };
        assert!(status.contains(said), "{outcome}: {status}");
    }
}

#[test]
fn a_failed_answer_is_shown_and_the_dialog_stays() {
    let mut app = with_pending();
    press(&mut app, KeyCode::Char('k'));
    answer_all(
        &mut app,
        Err(CallError {
            kind: ErrorKind::Failed,
            message: "NetworkManager refused: checkpoint gone".into(),
        }),
    );
    assert!(app.countdown.is_open());
    assert!(
        matches!(&app.status, Status::Error(e) if e.contains("Cannot keep the change: NetworkManager refused")),
        "{:?}",
        app.status
    );
    // The keys work again.
    press(&mut app, KeyCode::Char('r'));
    assert_eq!(
        calls(&mut app),
        vec![Call::RollBackChange {
            path: CHANGE.into()
        }]
    );
}

/// An IPoIB edit of an interface NetworkManager owns returns no path: the client learns of
/// its change by `Network.PendingChanges`, reads it, and opens the dialog.
#[test]
fn pending_changes_property_reads_each_new_change_once() {
    let mut app = app_on(PageId::Ipoib);
    answer_all(&mut app, Ok(CallOutput::Done));
    let paths = vec![OwnedObjectPath::try_from(CHANGE).expect("path")];
    let value = OwnedValue::try_from(Value::from(paths)).expect("owned");
    let changed = |v: &OwnedValue| {
        HashMap::from([("PendingChanges".to_string(), v.try_clone().expect("clone"))])
    };
    app.apply(Update::Properties {
        path: "/org/rdmamanager/RdmaManager1".into(),
        iface: NETWORK_IFACE.into(),
        changed: changed(&value),
    });
    let taken = app.take_calls();
    assert_eq!(
        taken.iter().map(|(_, c)| c.clone()).collect::<Vec<_>>(),
        vec![Call::ReadPendingChange {
            path: CHANGE.into()
        }]
    );
    for (id, call) in taken {
        app.apply(Update::CallDone {
            id,
            call,
            result: Ok(CallOutput::Pending(pending(CHANGE))),
        });
    }
    assert!(app.countdown.is_open());
    // Sent again (another change added beside it): the known one is not read again.
    app.apply(Update::Properties {
        path: "/org/rdmamanager/RdmaManager1".into(),
        iface: NETWORK_IFACE.into(),
        changed: changed(&value),
    });
    assert!(calls(&mut app).is_empty());
}
