//! The IP settings form of the IPoIB page (NetworkManager): read when the selection moves and
//! when the form opens, pre-filled, checked before sending, only changed keys sent; up/down;
//! "NetworkManager not running" when the daemon answers NotSupported.

mod common;

use std::collections::BTreeMap;

use common::*;
use crossterm::event::KeyCode;
use insta::assert_snapshot;
use rdma_tui::app::{App, Status};
use rdma_tui::client::{Call, CallError, CallOutput, ErrorKind, IpSettings, IpValue, Update};
use rdma_tui::pages::PageId;

fn text(s: &str) -> IpValue {
    IpValue::Text(s.into())
}

fn list(v: &[&str]) -> IpValue {
    IpValue::List(v.iter().map(|s| s.to_string()).collect())
}

fn ib0_settings() -> IpSettings {
    IpSettings {
        interface: "ib0".into(),
        values: BTreeMap::from([
            ("profile".into(), text("ib0")),
            ("ipv4.method".into(), text("manual")),
            ("ipv4.addresses".into(), list(&["192.0.2.1/24"])),
            ("ipv4.gateway".into(), text("192.0.2.254")),
            ("ipv4.dns".into(), list(&["192.0.2.53"])),
            ("ipv4.dns-search".into(), list(&["example.com"])),
            ("ipv6.method".into(), text("auto")),
            ("ipv6.addresses".into(), list(&[])),
            ("ipv6.gateway".into(), text("")),
            ("ipv6.dns".into(), list(&[])),
            ("ipv6.dns-search".into(), list(&[])),
            ("device-state".into(), text("activated")),
            ("device-state-reason".into(), text("none")),
            ("addresses".into(), list(&["192.0.2.1/24", "fe80::1/64"])),
        ]),
    }
}

/// Answers every GetIpSettings asked for with `result`; returns the interfaces asked about.
fn answer_reads(app: &mut App, result: Result<CallOutput, CallError>) -> Vec<String> {
    let mut asked = Vec::new();
    for (id, call) in app.take_calls() {
        if let Call::GetIpSettings { interface } = &call {
            asked.push(interface.clone());
            app.apply(Update::CallDone {
                id,
                call: call.clone(),
                result: result.clone(),
            });
        }
    }
    asked
}

/// The IPoIB page with ib0 (the first row) selected, its settings known, the form open.
fn form_open() -> App {
    let mut app = app_on(PageId::Ipoib);
    assert_eq!(
        answer_reads(&mut app, Ok(CallOutput::IpSettings(ib0_settings()))),
        vec!["ib0"]
    );
    press(&mut app, KeyCode::Char('i'));
    // The form opens on a fresh read.
    assert_eq!(
        answer_reads(&mut app, Ok(CallOutput::IpSettings(ib0_settings()))),
        vec!["ib0"]
    );
    app
}

fn not_supported() -> CallError {
    CallError {
        kind: ErrorKind::NotSupported,
        message: "NetworkManager is not on the system bus".into(),
    }
}

#[test]
fn the_selection_reads_the_settings_and_the_detail_shows_them() {
    let mut app = app_on(PageId::Ipoib);
    answer_reads(&mut app, Ok(CallOutput::IpSettings(ib0_settings())));
    let s = screen(&mut app, 80, 24);
    assert!(
        s.contains("Addresses: 192.0.2.1/24, fe80::1/64; NetworkManager: activated"),
        "{s}"
    );
    press(&mut app, KeyCode::Down);
    assert_eq!(
        answer_reads(&mut app, Err(not_supported())),
        vec!["ibp59s0f0"]
    );
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("IP settings: NetworkManager not running"), "{s}");
    // No form without NetworkManager, no call, and it says why.
    press(&mut app, KeyCode::Char('i'));
    assert!(app.take_calls().is_empty());
    assert!(
        matches!(&app.status, Status::Info(m) if m.starts_with("NetworkManager not running")),
        "{:?}",
        app.status
    );
    let s = screen(&mut app, 80, 24);
    assert!(!s.contains("IP settings of"), "{s}");
}

#[test]
fn the_form_is_prefilled_and_readable_at_80x24() {
    let mut app = form_open();
    assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn only_the_changed_keys_are_sent() {
    let mut app = form_open();
    // ipv4.addresses: one more address.
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::End);
    type_text(&mut app, ", 192.0.2.2/24");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        calls(&mut app),
        vec![Call::SetIpSettings {
            interface: "ib0".into(),
            settings: vec![(
                "ipv4.addresses".into(),
                list(&["192.0.2.1/24", "192.0.2.2/24"])
            )],
        }]
    );
}

#[test]
fn nothing_changed_sends_nothing() {
    let mut app = form_open();
    press(&mut app, KeyCode::Enter);
    assert!(calls(&mut app).is_empty());
}

/// Each bad input is refused in the form, at its field, and nothing is sent.
#[test]
fn bad_input_is_refused_before_sending() {
    // (fields to Tab over from IPv4 method, text typed in place of the value, the error)
    for (tabs, typed, said) in [
        (1, "192.0.2.1/33", "the prefix must be 1 to 32"),
        (1, "192.0.2.1", "give the prefix length"),
        (1, "2001:db8::1/64", "is not an IPv4 address"),
        (2, "2001:db8::1", "is not an IPv4 address"),
        (3, "dns.example", "is not an IP address"),
        (4, "bad-.example", "is not a domain name"),
        (6, "2001:db8::1/129", "the prefix must be 1 to 128"),
        (7, "192.0.2.254", "is not an IPv6 address"),
    ] {
        let mut app = form_open();
        for _ in 0..tabs {
            press(&mut app, KeyCode::Tab);
        }
        ctrl(&mut app, 'u');
        press(&mut app, KeyCode::End);
        ctrl(&mut app, 'u');
        type_text(&mut app, typed);
        press(&mut app, KeyCode::Enter);
        assert!(calls(&mut app).is_empty(), "{typed}");
        let s = screen(&mut app, 80, 24);
        assert!(s.contains(said), "{typed}: {said}\n{s}");
    }
}

#[test]
fn manual_without_an_address_is_refused() {
    let mut app = form_open();
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::End);
    ctrl(&mut app, 'u');
    press(&mut app, KeyCode::Enter);
    assert!(calls(&mut app).is_empty());
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("manual needs at least one address"), "{s}");
}

#[test]
fn up_and_down_go_to_networkmanager_and_open_the_countdown() {
    for (key, want) in [
        (
            KeyCode::Char('u'),
            Call::Activate {
                interface: "ib0".into(),
            },
        ),
        (
            KeyCode::Char('D'),
            Call::Deactivate {
                interface: "ib0".into(),
            },
        ),
    ] {
        let mut app = app_on(PageId::Ipoib);
        answer_reads(&mut app, Ok(CallOutput::IpSettings(ib0_settings())));
        press(&mut app, key);
        let taken = app.take_calls();
        assert_eq!(
            taken.iter().map(|(_, c)| c.clone()).collect::<Vec<_>>(),
            vec![want]
        );
        for (id, call) in taken {
            app.apply(Update::CallDone {
                id,
                call,
                result: Ok(CallOutput::Pending(rdma_tui::client::PendingInfo {
                    path: "/org/rdmamanager/RdmaManager1/Change/1".into(),
                    interface: "ib0".into(),
                    description: "bring ib0 up".into(),
                    deadline_us: rdma_tui::fixtures::NOW_US + 60_000_000,
                })),
            });
        }
        let s = screen(&mut app, 80, 24);
        assert!(s.contains("Keep these settings? 60 s"), "{s}");
        // Ended (here by its deadline): the detail's settings are read again.
        app.apply(Update::ChangeEnded {
            change: "/org/rdmamanager/RdmaManager1/Change/1".into(),
            outcome: "timed-out".into(),
        });
        assert!(!app.countdown.is_open());
        assert_eq!(
            answer_reads(&mut app, Ok(CallOutput::IpSettings(ib0_settings()))),
            vec!["ib0"]
        );
    }
}

/// The RoCE page: `i` configures the selected port's netdev (a RoCE v2 GID needs an address).
#[test]
fn the_roce_page_sets_the_ip_settings_of_the_ports_netdev() {
    let mut app = app_on(PageId::Roce);
    answer_all(&mut app, Ok(CallOutput::Done));
    press(&mut app, KeyCode::Char('i'));
    let mut settings = ib0_settings();
    let asked = {
        let taken = app.take_calls();
        let mut asked = Vec::new();
        for (id, call) in taken {
            if let Call::GetIpSettings { interface } = &call {
                asked.push(interface.clone());
                settings.interface = interface.clone();
                app.apply(Update::CallDone {
                    id,
                    call: call.clone(),
                    result: Ok(CallOutput::IpSettings(settings.clone())),
                });
            }
        }
        asked
    };
    assert_eq!(asked.len(), 1, "{asked:?}");
    let netdev = asked[0].clone();
    assert!(!netdev.is_empty());
    let s = screen(&mut app, 80, 24);
    assert!(s.contains(&format!("IP settings of {netdev}")), "{s}");
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::End);
    ctrl(&mut app, 'u');
    type_text(&mut app, "198.51.100.7/24");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        calls(&mut app),
        vec![Call::SetIpSettings {
            interface: netdev,
            settings: vec![("ipv4.addresses".into(), list(&["198.51.100.7/24"]))],
        }]
    );
}

#[test]
fn the_roce_page_says_when_networkmanager_is_not_running() {
    let mut app = app_on(PageId::Roce);
    answer_all(&mut app, Ok(CallOutput::Done));
    press(&mut app, KeyCode::Char('i'));
    answer_reads(&mut app, Err(not_supported()));
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("IP settings: NetworkManager not running"), "{s}");
    assert!(!s.contains("IP settings of"), "{s}");
}
