//! Snapshots of the monitor pages (overview, port detail, bandwidth) as a user sees them: the
//! whole screen drawn by the application from the recorded demo host, at the smallest usual
//! terminal (80x24) and a large one (200x60), as text. Review changes to the `.snap` files as
//! screens: they are what people will look at.

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use rdma_tui::app::App;
use rdma_tui::fixtures::{self, NOW_US};
use rdma_tui::model::Model;
use rdma_tui::pages::PageId;
use rdma_tui::theme::Theme;

fn screen(app: &mut App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    term.draw(|f| app.render(f, NOW_US)).expect("draw");
    format!("{}", term.backend())
}

fn shown(model: Model, theme: Theme, page: PageId) -> App {
    let mut app = App::with_model(model, theme);
    app.show(page);
    app
}

fn press(app: &mut App, code: KeyCode) {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
}

/// The demo host with two counter readings on mlx4_1 port 1, the second with errors: one
/// error counter rising, one standing above zero.
fn with_counters() -> (Model, String) {
    let mut m = fixtures::demo_model();
    let port = m
        .ports_in_order()
        .first()
        .map(|p| p.path.clone())
        .expect("a port");
    let reading = |sym: u64| {
        BTreeMap::from([
            ("tx_bytes".to_string(), 918_237_465_123),
            ("rx_bytes".to_string(), 771_234_998_001),
            ("tx_packets".to_string(), 224_174_215),
            ("rx_packets".to_string(), 188_289_794),
            ("symbol_error".to_string(), sym),
            ("link_error_recovery".to_string(), 3),
            ("link_downed".to_string(), 0),
            ("port_rcv_errors".to_string(), 0),
            ("port_xmit_discards".to_string(), 0),
            ("excessive_buffer_overrun_errors".to_string(), 0),
            ("local_link_integrity_errors".to_string(), 0),
            ("VL15_dropped".to_string(), 0),
        ])
    };
    m.set_counters(&port, "pma32".into(), false, reading(10));
    m.set_counters(&port, "pma32".into(), false, reading(14));
    (m, port)
}

#[test]
fn overview_80x24() {
    let mut app = shown(fixtures::demo_model(), Theme::colored(), PageId::Overview);
    insta::assert_snapshot!(screen(&mut app, 80, 24));
}

/// The Overview after its health check answered `rows` (through the call the application
/// asks for, as the terminal loop makes it every 10 s).
fn overview_with_health(rows: Vec<rdma_manager_dbus::types::HealthCheck>) -> App {
    use rdma_tui::client::{Call, CallOutput, Update};
    let mut app = shown(fixtures::demo_model(), Theme::colored(), PageId::Overview);
    assert!(app.wants_health());
    app.poll_health();
    // One check at a time.
    app.poll_health();
    let calls = app.take_calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let (id, call) = calls.into_iter().next().expect("a call");
    assert_eq!(call, Call::CheckHealth);
    app.apply(Update::CallDone {
        id,
        call,
        result: Ok(CallOutput::Health(rows)),
    });
    app
}

fn verdict(
    expectation: &str,
    subject: &str,
    passed: bool,
    message: &str,
) -> rdma_manager_dbus::types::HealthCheck {
    rdma_manager_dbus::types::HealthCheck {
        expectation: expectation.into(),
        subject: subject.into(),
        passed,
        message: message.into(),
        ..Default::default()
    }
}

#[test]
fn overview_health_failed_80x24() {
    let mut app = overview_with_health(vec![
        verdict("state", "mlx4_1/1", true, "mlx4_1/1 state is ACTIVE"),
        verdict(
            "state",
            "mlx5_0/1",
            false,
            "mlx5_0/1 state is DOWN, expected ACTIVE",
        ),
        verdict(
            "min-rate-gbps",
            "mlx5_0/1",
            false,
            "mlx5_0/1 runs at 100 Gb/s, expected at least 200 Gb/s",
        ),
    ]);
    insta::assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn overview_healthy_80x24() {
    let mut app = overview_with_health(vec![
        verdict("state", "mlx4_1/1", true, "mlx4_1/1 state is ACTIVE"),
        verdict("state", "mlx5_0/1", true, "mlx5_0/1 state is ACTIVE"),
    ]);
    insta::assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn overview_200x60() {
    let mut app = shown(fixtures::demo_model(), Theme::colored(), PageId::Overview);
    insta::assert_snapshot!(screen(&mut app, 200, 60));
}

#[test]
fn overview_large_80x24_scrolled() {
    let mut app = shown(
        fixtures::large_model(32),
        Theme::colored(),
        PageId::Overview,
    );
    insta::assert_snapshot!("overview_large_80x24_top", screen(&mut app, 80, 24));
    // Down past the bottom row: the view follows the selection.
    for _ in 0..25 {
        press(&mut app, KeyCode::Down);
    }
    insta::assert_snapshot!("overview_large_80x24_scrolled", screen(&mut app, 80, 24));
}

#[test]
fn overview_large_200x60() {
    let mut app = shown(
        fixtures::large_model(32),
        Theme::colored(),
        PageId::Overview,
    );
    insta::assert_snapshot!(screen(&mut app, 200, 60));
}

#[test]
fn overview_no_color_80x24() {
    let mut app = shown(
        fixtures::large_model(32),
        Theme::monochrome(),
        PageId::Overview,
    );
    let s = screen(&mut app, 80, 24);
    // Without colour the states are still words, and "no SM" says what INIT lacks.
    assert!(s.contains("INIT") && s.contains("no SM"), "{s}");
    insta::assert_snapshot!(s);
}

#[test]
fn detail_80x24() {
    let mut app = shown(fixtures::demo_model(), Theme::colored(), PageId::Detail);
    insta::assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn detail_80x24_scrolled_with_counters() {
    let (m, port) = with_counters();
    let mut app = App::with_model(m, Theme::colored());
    app.show_port(PageId::Detail, &port);
    press(&mut app, KeyCode::End);
    insta::assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn detail_200x60() {
    let mut app = shown(fixtures::demo_model(), Theme::colored(), PageId::Detail);
    insta::assert_snapshot!(screen(&mut app, 200, 60));
}

#[test]
fn detail_200x60_with_counters() {
    let (m, port) = with_counters();
    let mut app = App::with_model(m, Theme::colored());
    app.show_port(PageId::Detail, &port);
    insta::assert_snapshot!(screen(&mut app, 200, 60));
}

/// A soft RoCE port: RoCE settings, and properties the service could not read.
#[test]
fn detail_rxe_port_200x60() {
    let m = fixtures::demo_model();
    let port = m
        .ports_in_order()
        .iter()
        .find(|p| p.device_name == "rxe0")
        .map(|p| p.path.clone())
        .expect("rxe0");
    let mut app = App::with_model(m, Theme::colored());
    app.show_port(PageId::Detail, &port);
    insta::assert_snapshot!(screen(&mut app, 200, 60));
}

#[test]
fn bandwidth_80x24() {
    let mut app = shown(fixtures::demo_model(), Theme::colored(), PageId::Bandwidth);
    insta::assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn bandwidth_200x60() {
    let mut app = shown(fixtures::demo_model(), Theme::colored(), PageId::Bandwidth);
    insta::assert_snapshot!(screen(&mut app, 200, 60));
}

#[test]
fn bandwidth_1min_no_color_80x24() {
    let mut app = shown(
        fixtures::demo_model(),
        Theme::monochrome(),
        PageId::Bandwidth,
    );
    // 5 min -> 1 h -> 1 min.
    press(&mut app, KeyCode::Char('w'));
    press(&mut app, KeyCode::Char('w'));
    insta::assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn bandwidth_1h_no_color_80x24() {
    let mut app = shown(
        fixtures::demo_model(),
        Theme::monochrome(),
        PageId::Bandwidth,
    );
    // 5 min -> 1 h: the coarse history, then the newest samples.
    press(&mut app, KeyCode::Char('h'));
    insta::assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn bandwidth_empty_history_80x24() {
    let mut m = fixtures::demo_model();
    m.history.clear();
    m.history_coarse.clear();
    let mut app = shown(m, Theme::colored(), PageId::Bandwidth);
    insta::assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn enter_on_the_overview_opens_the_detail_of_the_selected_port() {
    let mut app = shown(fixtures::demo_model(), Theme::colored(), PageId::Overview);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.current_page(), PageId::Detail);
    let third = app.model.ports_in_order()[2].path.clone();
    assert_eq!(app.counters_port(), Some(third.clone()));
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("mlx5_0/1"), "{s}");
    // And `g` from there shows the same port's graph.
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(app.current_page(), PageId::Bandwidth);
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("mlx5_0/1"), "{s}");
}

/// Tiny and empty screens and models: drawing must never panic.
#[test]
fn tiny_areas_and_empty_models_do_not_panic() {
    let models = [
        fixtures::demo_model(),
        fixtures::large_model(32),
        Model::default(),
        {
            let mut m = fixtures::demo_model();
            m.history.clear();
            m
        },
    ];
    for model in models {
        for page in [PageId::Overview, PageId::Detail, PageId::Bandwidth] {
            for theme in [Theme::colored(), Theme::monochrome()] {
                let mut app = shown(model.clone(), theme, page);
                let mut sizes: Vec<(u16, u16)> = vec![(1, 1), (10, 5), (40, 10)];
                sizes.extend((0..=10).flat_map(|w| (0..=10).map(move |h| (w, h))));
                for (w, h) in sizes {
                    // Drawn only: TestBackend cannot print a zero-width screen as text.
                    let mut term = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
                    term.draw(|f| app.render(f, NOW_US)).expect("draw");
                }
            }
        }
    }
}

/// The pages on their own, in every small area (also off the screen's origin), so a panic is
/// pinned on the page rather than the frame around it.
#[test]
fn pages_alone_in_tiny_areas_do_not_panic() {
    use ratatui::layout::Rect;
    use rdma_tui::pages::{all_pages, RenderCtx};
    let models = [fixtures::demo_model(), Model::default(), {
        let mut m = fixtures::demo_model();
        m.history.clear();
        m.counters.clear();
        m
    }];
    for model in &models {
        let ctx = RenderCtx {
            model,
            theme: Theme::colored(),
            now_us: NOW_US,
        };
        for mut page in all_pages().into_iter().filter(|p| {
            matches!(
                p.id(),
                PageId::Overview | PageId::Detail | PageId::Bandwidth
            )
        }) {
            let mut sizes: Vec<(u16, u16)> = vec![(1, 1), (10, 5), (40, 10)];
            sizes.extend((0..=10).flat_map(|w| (0..=10).map(move |h| (w, h))));
            for (w, h) in sizes {
                let mut term = Terminal::new(TestBackend::new(50, 20)).expect("test terminal");
                term.draw(|f| page.render(f, Rect::new(3, 2, w, h), &ctx))
                    .expect("draw");
            }
        }
    }
}

/// While the service starts (its name is owned before it has read the host), the overview
/// and the status line say so, rather than "No RDMA devices on this host"; once start-up is
/// over, an empty host says that.
#[test]
fn overview_while_the_service_starts_says_so() {
    let mut starting = Model::default();
    starting.manager.startup = true;
    let mut app = shown(starting, Theme::monochrome(), PageId::Overview);
    let s = screen(&mut app, 80, 24);
    assert!(
        s.contains("rdma-managerd is starting: reading the host's RDMA devices..."),
        "{s}"
    );
    assert!(
        s.contains("rdma-managerd is starting (reading the host)"),
        "{s}"
    );
    assert!(!s.contains("No RDMA devices on this host"), "{s}");

    let mut app = shown(Model::default(), Theme::monochrome(), PageId::Overview);
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("No RDMA devices on this host"), "{s}");
    assert!(!s.contains("starting"), "{s}");
}
