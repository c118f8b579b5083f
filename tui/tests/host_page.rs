//! The Host page (key 8): snapshots at 80x24 and 200x60, its forms and results, and the exact
//! calls its keys make; invalid input sends nothing, a refused call keeps the form.

mod common;

use common::*;
use crossterm::event::KeyCode;
use insta::assert_snapshot;
use ratatui::style::Color;
use rdma_tui::app::App;
use rdma_tui::client::{Call, CallError, CallOutput, ErrorKind, HostStep};
use rdma_tui::fixtures;
use rdma_tui::model::Model;
use rdma_tui::pages::PageId;
use rdma_tui::theme::Theme;

/// The demo host on the Host page, reached with its key.
fn host_app() -> App {
    let mut app = App::with_model(fixtures::demo_model(), Theme::colored());
    press(&mut app, KeyCode::Char('8'));
    assert_eq!(app.current_page(), PageId::Host);
    app
}

/// Down `n` times.
fn down(app: &mut App, n: usize) {
    for _ in 0..n {
        press(app, KeyCode::Down);
    }
}

/// Rows of the demo host: 7 modules (ib_ipoib, ib_umad, ib_uverbs, rdma_ucm, rds_rdma,
/// xprtrdma, svcrdma), memlock, NFS, 2 InfiniBand ports, opensm.
const RDS_RDMA: usize = 4;
const MEMLOCK: usize = 7;
const NFS: usize = 8;
const OPENSM: usize = 11;

fn steps(v: &[(&str, &str, &str)]) -> Vec<HostStep> {
    v.iter()
        .map(|(step, outcome, detail)| HostStep {
            step: step.to_string(),
            outcome: outcome.to_string(),
            detail: detail.to_string(),
        })
        .collect()
}

/// What the service answers when enabling NFS over RDMA on the demo host: firewalld does not
/// run, and the restart of nfs-server failed.
fn nfs_steps() -> Vec<HostStep> {
    steps(&[
        (
            "nfs.conf",
            "done",
            "wrote /etc/nfs.conf.d/zz-rdma-manager.conf: rdma=y, rdma-port=20049",
        ),
        (
            "modules",
            "unchanged",
            "xprtrdma and svcrdma are enabled in /etc/rdma/modules/rdma.conf already",
        ),
        (
            "firewall",
            "skipped",
            "firewalld does not run: no port opened",
        ),
        (
            "nfs-server",
            "failed",
            "restarting nfs-server.service failed: job result \"failed\"",
        ),
    ])
}

fn host_refused() -> CallError {
    CallError {
        kind: ErrorKind::NotAuthorized,
        message: "Not authorized to perform org.rdmamanager.rdmamanager1.manage-host: polkit \
                  refused the caller; an administrator can grant it with a polkit rule."
            .into(),
    }
}

#[test]
fn host_page_at_80x24_and_200x60() {
    let mut app = host_app();
    assert_snapshot!("host_80x24", screen(&mut app, 80, 24));
    assert_snapshot!("host_200x60", screen(&mut app, 200, 60));
    // Scrolled to the end: the subnet manager section and opensm.
    press(&mut app, KeyCode::End);
    assert_snapshot!("host_80x24_end", screen(&mut app, 80, 24));
}

#[test]
fn host_stuck_init_port() {
    let mut app = App::with_model(fixtures::stuck_init_model(), Theme::colored());
    app.show(PageId::Host);
    down(&mut app, OPENSM - 1);
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("stuck-init"), "{s}");
    assert!(
        s.contains("no subnet manager answers: start opensm here or on a switch"),
        "{s}"
    );
    assert_snapshot!("host_stuck_init_80x24", s);
    // Highlighted as bad: the verdict is red.
    let b = buffer(&mut app, 80, 24);
    let red = b
        .content()
        .iter()
        .filter(|c| c.fg == Color::Red && c.symbol() != " ")
        .count();
    assert!(red > 10, "the stuck-init verdict is not red");
    assert_snapshot!("host_stuck_init_200x60", screen(&mut app, 200, 60));
}

#[test]
fn space_toggles_the_selected_module() {
    let mut app = host_app();
    down(&mut app, RDS_RDMA);
    press(&mut app, KeyCode::Char(' '));
    assert_eq!(
        calls(&mut app),
        vec![Call::SetModuleEnabled {
            set: "rdma".into(),
            module: "rds_rdma".into(),
            enabled: true,
        }]
    );
    // Enter changes nothing on a module row (it opens, and a module has nothing to open):
    // it says which key does.
    press(&mut app, KeyCode::Home);
    press(&mut app, KeyCode::Enter);
    assert!(calls(&mut app).is_empty());
    assert!(screen(&mut app, 100, 24).contains("Space enables or disables"));
    // ib_ipoib is enabled: Space disables it.
    press(&mut app, KeyCode::Char(' '));
    assert_eq!(
        calls(&mut app),
        vec![Call::SetModuleEnabled {
            set: "infiniband".into(),
            module: "ib_ipoib".into(),
            enabled: false,
        }]
    );
    // Space off a module row sends nothing.
    down(&mut app, MEMLOCK);
    press(&mut app, KeyCode::Char(' '));
    assert!(calls(&mut app).is_empty());
}

#[test]
fn load_restarts_the_selected_set_and_shows_the_steps() {
    let mut app = host_app();
    // `a` adds on the other pages; here it does nothing.
    press(&mut app, KeyCode::Char('a'));
    assert!(calls(&mut app).is_empty());
    press(&mut app, KeyCode::Char('l'));
    assert_eq!(
        calls(&mut app),
        vec![Call::ApplyModules {
            set: "infiniband".into()
        }]
    );
    down(&mut app, RDS_RDMA);
    press(&mut app, KeyCode::Char('l'));
    answer_all(
        &mut app,
        Ok(CallOutput::Steps(steps(&[(
            "restart",
            "done",
            "restarted rdma-load-modules@rdma.service",
        )]))),
    );
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("rdma-load-modules@rdma.service"), "{s}");
    assert!(s.contains("done"), "{s}");
    // Off the modules: the rdma set.
    press(&mut app, KeyCode::Esc);
    down(&mut app, NFS - RDS_RDMA);
    press(&mut app, KeyCode::Char('l'));
    assert_eq!(
        calls(&mut app),
        vec![Call::ApplyModules { set: "rdma".into() }]
    );
}

#[test]
fn memlock_form_sends_the_limits_and_shows_the_notes() {
    let mut app = host_app();
    press(&mut app, KeyCode::Char('m'));
    assert!(app.current_page() == PageId::Host);
    // Defaults: unlimited, unlimited. Change soft to 64 MiB.
    ctrl(&mut app, 'u');
    type_text(&mut app, "65536");
    press(&mut app, KeyCode::Enter);
    let sent = answer_all(
        &mut app,
        Ok(CallOutput::Notes(vec![
            "Takes effect at the next login of each member of group rdma.".into(),
        ])),
    );
    assert_eq!(
        sent,
        vec![Call::SetMemlockLimits {
            soft: "65536".into(),
            hard: "unlimited".into(),
        }]
    );
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("next login"), "{s}");
    assert_snapshot!("host_memlock_notes", s);
    // Any key closes the notes.
    press(&mut app, KeyCode::Enter);
    assert!(!screen(&mut app, 80, 24).contains("next login"));
}

#[test]
fn memlock_form_refuses_invalid_values_without_a_call() {
    let cases: [(&str, &str, &str); 6] = [
        ("0", "unlimited", "whole number of KiB"),
        ("64M", "unlimited", "whole number of KiB"),
        ("", "unlimited", "give \"unlimited\""),
        ("unlimited", "1024", "above the hard limit"),
        ("4096", "1024", "above the hard limit"),
        (
            "18014398509481984",
            "unlimited",
            "more than pam_limits can set",
        ),
    ];
    for (soft, hard, why) in cases {
        let mut app = host_app();
        press(&mut app, KeyCode::Char('m'));
        ctrl(&mut app, 'u');
        type_text(&mut app, soft);
        press(&mut app, KeyCode::Tab);
        ctrl(&mut app, 'u');
        type_text(&mut app, hard);
        press(&mut app, KeyCode::Enter);
        assert!(calls(&mut app).is_empty(), "{soft}/{hard} was sent");
        let s = screen(&mut app, 200, 60);
        assert!(s.contains(why), "{soft}/{hard}: {why}\n{s}");
    }
}

#[test]
fn memlock_form_with_an_invalid_value() {
    let mut app = host_app();
    press(&mut app, KeyCode::Char('m'));
    ctrl(&mut app, 'u');
    type_text(&mut app, "64M");
    press(&mut app, KeyCode::Enter);
    assert!(calls(&mut app).is_empty());
    assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn memlock_refused_keeps_the_form_and_says_why() {
    let mut app = host_app();
    press(&mut app, KeyCode::Char('m'));
    ctrl(&mut app, 'u');
    type_text(&mut app, "1048576");
    press(&mut app, KeyCode::Enter);
    answer_all(&mut app, Err(host_refused()));
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("1048576"), "{s}");
    assert!(s.contains("manage-host"), "{s}");
    assert_snapshot!("host_memlock_refused", s);
    // Retry from the form as it was typed.
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        calls(&mut app),
        vec![Call::SetMemlockLimits {
            soft: "1048576".into(),
            hard: "unlimited".into(),
        }]
    );
}

#[test]
fn memlock_reset_asks_first() {
    let mut model = fixtures::demo_model();
    if let Some(h) = model.host_setup.as_mut() {
        h.memlock_managed.soft = "unlimited".into();
        h.memlock_managed.hard = "unlimited".into();
    }
    let mut app = App::with_model(model, Theme::colored());
    app.show(PageId::Host);
    press(&mut app, KeyCode::Char('M'));
    assert!(calls(&mut app).is_empty());
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(calls(&mut app), vec![Call::ResetMemlockLimits]);
    // Without the daemon's file there is nothing to reset: no call.
    let mut app = host_app();
    press(&mut app, KeyCode::Char('M'));
    press(&mut app, KeyCode::Char('y'));
    assert!(calls(&mut app).is_empty());
}

#[test]
fn nfs_form_enables_and_shows_every_step() {
    let mut app = host_app();
    press(&mut app, KeyCode::Char('n'));
    press(&mut app, KeyCode::Char(' '));
    assert_snapshot!("host_nfs_form", screen(&mut app, 80, 24));
    press(&mut app, KeyCode::Enter);
    let sent = answer_all(&mut app, Ok(CallOutput::Steps(nfs_steps())));
    assert_eq!(
        sent,
        vec![Call::SetNfsRdma {
            enabled: true,
            port: 20049,
        }]
    );
    let s = screen(&mut app, 80, 24);
    for word in ["done", "unchanged", "skipped", "failed", "nfs-server"] {
        assert!(s.contains(word), "{word}\n{s}");
    }
    assert_snapshot!("host_nfs_result", s);
    assert_snapshot!("host_nfs_result_200x60", screen(&mut app, 200, 60));
}

#[test]
fn nfs_form_port_is_checked_and_disabling_sends_port_0() {
    for bad in ["0", "65536", "x"] {
        let mut app = host_app();
        press(&mut app, KeyCode::Char('n'));
        press(&mut app, KeyCode::Char(' '));
        press(&mut app, KeyCode::Tab);
        ctrl(&mut app, 'u');
        type_text(&mut app, bad);
        press(&mut app, KeyCode::Enter);
        assert!(calls(&mut app).is_empty(), "port {bad} was sent");
    }
    let mut app = host_app();
    press(&mut app, KeyCode::Char('n'));
    press(&mut app, KeyCode::Char(' '));
    press(&mut app, KeyCode::Tab);
    ctrl(&mut app, 'u');
    type_text(&mut app, "4791");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        calls(&mut app),
        vec![Call::SetNfsRdma {
            enabled: true,
            port: 4791,
        }]
    );
    // Off (the demo host has it off already; the form starts unchecked): port 0, and a
    // bad port does not matter.
    let mut app = host_app();
    down(&mut app, NFS);
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Tab);
    ctrl(&mut app, 'u');
    type_text(&mut app, "x");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        calls(&mut app),
        vec![Call::SetNfsRdma {
            enabled: false,
            port: 0,
        }]
    );
}

#[test]
fn subnet_manager_keys_ask_then_call() {
    let cases: [(char, Call); 2] = [
        ('s', Call::StartSubnetManager),
        ('e', Call::SetSubnetManagerEnabled { enabled: true }),
    ];
    for (k, want) in cases {
        let mut app = host_app();
        press(&mut app, KeyCode::Char(k));
        assert!(calls(&mut app).is_empty(), "{k}: no question first");
        // Enter alone answers the question with Cancel: the safe button has the keyboard.
        press(&mut app, KeyCode::Enter);
        assert!(calls(&mut app).is_empty(), "{k}: Enter cancels");
        press(&mut app, KeyCode::Char(k));
        press(&mut app, KeyCode::Left);
        press(&mut app, KeyCode::Enter);
        assert_eq!(calls(&mut app), vec![want]);
    }
    // Stopping a stopped opensm: nothing to ask.
    let mut app = host_app();
    press(&mut app, KeyCode::Char('x'));
    assert!(calls(&mut app).is_empty());
    // Running and enabled: x stops, e disables; Enter on its row says which keys do.
    let mut model = fixtures::demo_model();
    if let Some(h) = model.host_setup.as_mut() {
        h.opensm.active_state = "active".into();
        h.opensm.unit_file_state = "enabled".into();
    }
    let mut app = App::with_model(model, Theme::colored());
    app.show(PageId::Host);
    press(&mut app, KeyCode::Char('x'));
    assert_snapshot!("host_stop_opensm", screen(&mut app, 80, 24));
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(
        answer_all(&mut app, Ok(CallOutput::Done)),
        vec![Call::StopSubnetManager]
    );
    press(&mut app, KeyCode::Char('e'));
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(
        answer_all(&mut app, Ok(CallOutput::Done)),
        vec![Call::SetSubnetManagerEnabled { enabled: false }]
    );
    down(&mut app, OPENSM);
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Char('y'));
    assert!(calls(&mut app).is_empty());
    assert!(screen(&mut app, 100, 24).contains("x stops it"));
}

#[test]
fn subnet_manager_keys_are_refused_without_opensm() {
    let mut model = fixtures::demo_model();
    if let Some(h) = model.host_setup.as_mut() {
        h.opensm.load_state = "not-found".into();
        h.opensm.active_state = "inactive".into();
        h.opensm.unit_file_state = String::new();
    }
    let mut app = App::with_model(model, Theme::colored());
    app.show(PageId::Host);
    press(&mut app, KeyCode::End);
    for k in ['s', 'x', 'e'] {
        press(&mut app, KeyCode::Char(k));
        press(&mut app, KeyCode::Enter);
        assert!(calls(&mut app).is_empty(), "{k}");
    }
    press(&mut app, KeyCode::Char('s'));
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("opensm is not installed"), "{s}");
}

#[test]
fn enter_on_a_port_opens_its_detail() {
    let mut app = host_app();
    down(&mut app, NFS + 2);
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.current_page(), PageId::Detail);
}

#[test]
fn tab_and_digits_stay_global_unless_a_form_is_open() {
    let mut app = host_app();
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.current_page(), PageId::LinkTest);
    press(&mut app, KeyCode::BackTab);
    assert_eq!(app.current_page(), PageId::Host);
    press(&mut app, KeyCode::Char('n'));
    press(&mut app, KeyCode::Tab);
    type_text(&mut app, "1q");
    assert_eq!(app.current_page(), PageId::Host);
    assert!(!app.quit);
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('1'));
    assert_eq!(app.current_page(), PageId::Overview);
}

/// NO_COLOR: no colour anywhere, the step outcomes still read as words.
#[test]
fn host_no_color() {
    let mut app = App::with_model(fixtures::stuck_init_model(), Theme::monochrome());
    app.show(PageId::Host);
    press(&mut app, KeyCode::Char('n'));
    press(&mut app, KeyCode::Char(' '));
    press(&mut app, KeyCode::Enter);
    answer_all(&mut app, Ok(CallOutput::Steps(nfs_steps())));
    let b = buffer(&mut app, 80, 24);
    for cell in b.content() {
        assert!(
            matches!(cell.fg, Color::Reset) && matches!(cell.bg, Color::Reset),
            "a colour under NO_COLOR: {cell:?}"
        );
    }
    assert_snapshot!("host_no_color_nfs_result", screen(&mut app, 80, 24));
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::End);
    assert_snapshot!("host_no_color_80x24_end", screen(&mut app, 80, 24));
}

/// A change whose call succeeded but whose step failed is not reported as done.
#[test]
fn a_failed_step_is_an_error_on_the_status_line() {
    let mut app = host_app();
    press(&mut app, KeyCode::Char('n'));
    press(&mut app, KeyCode::Char(' '));
    press(&mut app, KeyCode::Enter);
    answer_all(&mut app, Ok(CallOutput::Steps(nfs_steps())));
    let s = screen(&mut app, 120, 30);
    assert!(
        s.contains("! enable NFS over RDMA on port 20049: nfs-server failed"),
        "{s}"
    );
}

#[test]
fn without_a_host_object_the_page_says_so() {
    let mut model = fixtures::demo_model();
    model.host_setup = None;
    let mut app = App::with_model(model, Theme::colored());
    app.show(PageId::Host);
    for k in [' ', 'a', 'l', 'm', 'M', 'n', 's', 'x', 'e'] {
        press(&mut app, KeyCode::Char(k));
        press(&mut app, KeyCode::Enter);
    }
    assert!(calls(&mut app).is_empty());
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("publishes no Host object"), "{s}");
}

#[test]
fn tiny_terminals_do_not_panic() {
    type Setup = fn(&mut App);
    let setups: [Setup; 6] = [
        |_| {},
        |a| press(a, KeyCode::Char('m')),
        |a| press(a, KeyCode::Char('n')),
        |a| press(a, KeyCode::Char('s')),
        |a| press(a, KeyCode::End),
        |a| {
            press(a, KeyCode::Char('n'));
            press(a, KeyCode::Enter);
            answer_all(a, Ok(CallOutput::Steps(nfs_steps())));
        },
    ];
    for setup in setups {
        for (w, h) in [(1, 1), (10, 5), (40, 10), (3, 3), (80, 4)] {
            let mut app = host_app();
            setup(&mut app);
            let _ = screen(&mut app, w, h);
        }
    }
    let mut app = App::with_model(Model::default(), Theme::colored());
    app.show(PageId::Host);
    let _ = screen(&mut app, 40, 10);
}

#[test]
fn host_help_lists_every_key() {
    let mut app = host_app();
    press(&mut app, KeyCode::Char('?'));
    let s = screen(&mut app, 80, 24);
    for k in ["Space ", "l ", "M ", "s / x / e", "more below"] {
        assert!(s.contains(k), "{k}\n{s}");
    }
    assert_snapshot!("host_help_80x24", s);
    // Longer than the screen: End scrolls to the rest, and the help stays open.
    press(&mut app, KeyCode::End);
    let s = screen(&mut app, 80, 24);
    for k in ["polkit actions", "q, F10 or Ctrl-C", "more above"] {
        assert!(s.contains(k), "{k}\n{s}");
    }
    press(&mut app, KeyCode::Char('x'));
    assert!(!screen(&mut app, 80, 24).contains(" Help "));
}
