//! Snapshots of the editing pages and their forms, drawn from the demo host: each page at
//! 80x24 (the smallest terminal it is made for) and 200x60, each form open, a refused call,
//! and one screen without colour.

mod common;

use common::*;
use crossterm::event::KeyCode;
use insta::assert_snapshot;
use ratatui::style::Color;
use rdma_tui::app::App;
use rdma_tui::client::CallOutput;
use rdma_tui::fixtures;
use rdma_tui::pages::PageId;
use rdma_tui::theme::Theme;

const PAGES: [(PageId, &str); 4] = [
    (PageId::Ipoib, "ipoib"),
    (PageId::SoftLinks, "soft_links"),
    (PageId::Roce, "roce"),
    (PageId::Naming, "naming"),
];

#[test]
fn pages_at_80x24_and_200x60() {
    for (page, name) in PAGES {
        let mut app = app_on(page);
        answer_preview(&mut app);
        assert_snapshot!(format!("{name}_80x24"), screen(&mut app, 80, 24));
        assert_snapshot!(format!("{name}_200x60"), screen(&mut app, 200, 60));
    }
}

/// The create form on the enhanced IPoIB interface (ibp59s0f0), its P_Key typed.
fn create_on_mlx5(pkey: &str) -> App {
    let mut app = app_on(PageId::Ipoib);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Char('n'));
    type_text(&mut app, pkey);
    app
}

#[test]
fn ipoib_create_with_an_invalid_pkey() {
    let mut app = create_on_mlx5("8000");
    assert!(calls(&mut app).is_empty());
    assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn ipoib_create_refused_by_polkit_keeps_the_form() {
    let mut app = create_on_mlx5("8005");
    press(&mut app, KeyCode::Enter);
    answer_all(&mut app, Err(not_authorized()));
    assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn ipoib_create_on_enhanced_ipoib_has_no_connected_mode() {
    let mut app = create_on_mlx5("8010");
    // To the mode, and try to choose connected.
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Right);
    assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn ipoib_create_on_ib0_in_connected_mode() {
    let mut app = app_on(PageId::Ipoib);
    press(&mut app, KeyCode::Char('n'));
    type_text(&mut app, "0x0002");
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Right);
    press(&mut app, KeyCode::Tab);
    type_text(&mut app, "70000");
    assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn ipoib_edit_and_delete() {
    let mut app = app_on(PageId::Ipoib);
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Right);
    assert_snapshot!("ipoib_edit_ib0", screen(&mut app, 80, 24));
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Char('d'));
    assert_snapshot!("ipoib_delete_child", screen(&mut app, 80, 24));
}

#[test]
fn soft_link_add() {
    let mut app = app_on(PageId::SoftLinks);
    press(&mut app, KeyCode::Char('a'));
    press(&mut app, KeyCode::Tab);
    assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn naming_forms() {
    let mut app = app_on(PageId::Naming);
    answer_preview(&mut app);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Char('p'));
    press(&mut app, KeyCode::Left);
    assert_snapshot!("naming_policy", screen(&mut app, 80, 24));
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('f'));
    press(&mut app, KeyCode::Tab);
    type_text(&mut app, "mlx5_1");
    assert_snapshot!("naming_fixed_name_taken", screen(&mut app, 80, 24));
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('i'));
    press(&mut app, KeyCode::Tab);
    type_text(&mut app, "hpc_ib0");
    assert_snapshot!("naming_ipoib_name", screen(&mut app, 80, 24));
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('r'));
    assert_snapshot!("naming_rename", screen(&mut app, 80, 24));
}

#[test]
fn naming_with_rules_scrolls_to_the_selection() {
    let mut model = fixtures::demo_model();
    model.manager.rdma_naming_policy_source =
        "/etc/udev/rules.d/60-rdma-persistent-naming.rules".into();
    model
        .manager
        .rdma_fixed_names
        .push(rdma_tui::model::NameRule {
            guid: "0xb8599f0300d4e62a".into(),
            name: "hpc0".into(),
            managed: true,
            line: 6,
        });
    for (guid, name, managed, line) in [
        ("0xf452140300039381", "site_ib", false, 4),
        ("0xb8599f0300d4e62a", "hpc_ib0", true, 10),
    ] {
        model.manager.ipoib_names.push(rdma_tui::model::NameRule {
            guid: guid.into(),
            name: name.into(),
            managed,
            line,
        });
    }
    let mut app = App::with_model(model, Theme::colored());
    app.show(PageId::Naming);
    answer_preview(&mut app);
    press(&mut app, KeyCode::End);
    assert_snapshot!(screen(&mut app, 80, 24));
}

/// NO_COLOR: the styles of the refused create form carry no colour at all, and the states
/// still read in words. The snapshot is the buffer's debug form, which lists the styles.
#[test]
fn monochrome_form() {
    let mut app = App::with_model(fixtures::demo_model(), Theme::monochrome());
    app.show(PageId::Ipoib);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Char('n'));
    type_text(&mut app, "8002");
    let b = buffer(&mut app, 80, 24);
    for cell in b.content() {
        assert!(
            matches!(cell.fg, Color::Reset) && matches!(cell.bg, Color::Reset),
            "a colour under NO_COLOR: {cell:?}"
        );
    }
    assert_snapshot!(format!("{b:?}"));
}

/// Every page and form drawn in terminals too small for them: nothing panics.
#[test]
fn tiny_terminals_do_not_panic() {
    type Setup = fn(&mut App);
    let setups: [(PageId, Setup); 12] = [
        (PageId::Ipoib, |_| {}),
        (PageId::Ipoib, |a| press(a, KeyCode::Char('n'))),
        (PageId::Ipoib, |a| press(a, KeyCode::Enter)),
        (PageId::Ipoib, |a| {
            press(a, KeyCode::End);
            press(a, KeyCode::Char('d'))
        }),
        (PageId::SoftLinks, |_| {}),
        (PageId::SoftLinks, |a| press(a, KeyCode::Char('a'))),
        (PageId::Roce, |_| {}),
        (PageId::Roce, |a| press(a, KeyCode::Enter)),
        (PageId::Naming, |_| {}),
        (PageId::Naming, |a| press(a, KeyCode::Char('p'))),
        (PageId::Naming, |a| press(a, KeyCode::Char('f'))),
        (PageId::Naming, |a| press(a, KeyCode::Char('i'))),
    ];
    for (page, setup) in setups {
        for (w, h) in [(1, 1), (10, 5), (40, 10), (3, 3), (80, 4)] {
            let mut app = app_on(page);
            answer_preview(&mut app);
            setup(&mut app);
            type_text(&mut app, "80x");
            let _ = screen(&mut app, w, h);
        }
    }
    // A form with an error from the service, drawn small.
    let mut app = create_on_mlx5("8005");
    press(&mut app, KeyCode::Enter);
    answer_all(&mut app, Err(not_authorized()));
    for (w, h) in [(1, 1), (10, 5), (40, 10)] {
        let _ = screen(&mut app, w, h);
    }
    // And an empty host.
    let mut app = App::with_model(rdma_tui::model::Model::default(), Theme::colored());
    for (page, _) in PAGES {
        for k in ['n', 'a', 'p', 'f', 'i', 'r', 'd'] {
            app.show(page);
            answer_all(&mut app, Ok(CallOutput::Preview(Vec::new())));
            press(&mut app, KeyCode::Char(k));
            press(&mut app, KeyCode::Enter);
            let _ = screen(&mut app, 40, 10);
            press(&mut app, KeyCode::Esc);
        }
        let _ = screen(&mut app, 80, 24);
    }
}

/// What rdma-managerd remembers but cannot find: a P_Key child that could not be created
/// again and a soft link whose interface is gone are listed, marked absent.
#[test]
fn remembered_but_absent() {
    let mut model = fixtures::demo_model();
    if let Some(ib0) = model.ipoib.get_mut(IPOIB_IB0) {
        ib0.persisted = true;
        ib0.persisted_settings
            .insert("mode".into(), "connected".into());
        ib0.persisted_children = vec![rdma_tui::model::PersistedChild {
            pkey: 0x0002,
            name: "ib0.0002".into(),
        }];
    }
    model.manager.soft_links = vec![
        rdma_tui::model::SoftLink {
            name: "rxe0".into(),
            kind: "rxe".into(),
            netdev: "eth0".into(),
        },
        rdma_tui::model::SoftLink {
            name: "siw1".into(),
            kind: "siw".into(),
            netdev: "eth2".into(),
        },
    ];
    let mut app = App::with_model(model, Theme::colored());
    app.show(PageId::Ipoib);
    press(&mut app, KeyCode::Down);
    assert_snapshot!("ipoib_absent_child", screen(&mut app, 80, 24));
    // Enter on it: the create form, filled in as it was remembered.
    press(&mut app, KeyCode::Enter);
    assert_snapshot!("ipoib_absent_child_recreate", screen(&mut app, 80, 24));
    app.show(PageId::SoftLinks);
    press(&mut app, KeyCode::End);
    assert_snapshot!("soft_links_absent", screen(&mut app, 80, 24));
}
