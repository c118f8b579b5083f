//! The same keys on every page, a help that lists them all, and nothing cut without a sign:
//! tabs and key hints in narrow terminals, one marker (`…`) for cut text, and scrolling
//! where a page is longer than the screen.

mod common;

use common::*;
use crossterm::event::KeyCode;
use rdma_tui::pages::PageId;

/// `a` (or Insert) adds and `d` (or Delete) deletes on every page that does either; the
/// IPoIB page keeps `n` for those used to it.
#[test]
fn add_and_delete_keys_are_the_same_on_every_page() {
    for key in [KeyCode::Char('a'), KeyCode::Insert, KeyCode::Char('n')] {
        let mut app = app_on(PageId::Ipoib);
        press(&mut app, key);
        assert!(
            screen(&mut app, 80, 24).contains("New P_Key child"),
            "{key:?} on IPoIB"
        );
    }
    for key in [KeyCode::Char('a'), KeyCode::Insert] {
        let mut app = app_on(PageId::SoftLinks);
        press(&mut app, key);
        assert!(
            screen(&mut app, 80, 24).contains("Add a soft RDMA link"),
            "{key:?} on Soft links"
        );
    }
    // The footers say the same key.
    let ipoib = screen(&mut app_on(PageId::Ipoib), 100, 24);
    assert!(ipoib.contains("a new child"), "{ipoib}");
    let links = screen(&mut app_on(PageId::SoftLinks), 100, 24);
    assert!(links.contains("a add"), "{links}");
}

/// `?` lists every key the man page documents for the page, aliases included.
#[test]
fn help_lists_every_key_of_the_page() {
    let cases: [(PageId, &[&str]); 6] = [
        (PageId::Ipoib, &["Insert", "Delete", "Enter or e", "(or n)"]),
        (PageId::SoftLinks, &["a or Insert", "d or Delete"]),
        (PageId::Roce, &["Enter or e"]),
        (PageId::Naming, &["d or Delete", "│p ", "│f ", "│i ", "│r "]),
        (PageId::Bandwidth, &["w ", "+ / -", "stopping at"]),
        (PageId::LinkTest, &["Enter or t", "│h ", "│r ", "│R "]),
    ];
    for (page, keys) in cases {
        let mut app = app_on(page);
        press(&mut app, KeyCode::Char('?'));
        let s = screen(&mut app, 100, 40);
        for k in keys {
            assert!(s.contains(k), "{page:?}: {k:?} not in the help:\n{s}");
        }
    }
}

/// `+` and `-` step the bandwidth window and stop at the ends; `w` cycles.
#[test]
fn plus_and_minus_stop_where_w_wraps() {
    let mut app = app_on(PageId::Bandwidth);
    for _ in 0..5 {
        press(&mut app, KeyCode::Char('+'));
    }
    assert!(screen(&mut app, 100, 30).contains("window 1 min"));
    press(&mut app, KeyCode::Char('+'));
    assert!(
        screen(&mut app, 100, 30).contains("window 1 min"),
        "+ stops"
    );
    for _ in 0..5 {
        press(&mut app, KeyCode::Char('-'));
    }
    assert!(screen(&mut app, 100, 30).contains("window 1 h"), "- stops");
    press(&mut app, KeyCode::Char('w'));
    assert!(
        screen(&mut app, 100, 30).contains("window 1 min"),
        "w wraps"
    );
}

/// Below 80 columns every tab stays reachable by sight (numbers, the shown page named) and
/// the footer keeps `? help` and `q quit`; narrower still, a marker says tabs are cut.
#[test]
fn narrow_terminals_mark_what_is_cut() {
    let mut app = app_on(PageId::Ipoib);
    let s = screen(&mut app, 60, 24);
    let tabs = s.lines().next().unwrap_or_default();
    for n in 1..=8 {
        assert!(tabs.contains(&format!(" {n} ")), "tab {n} missing: {tabs}");
    }
    assert!(tabs.contains("4 IPoIB"), "{tabs}");
    let footer = s.lines().last().unwrap_or_default();
    assert!(footer.contains("q quit"), "{footer}");
    assert!(footer.contains("? help"), "{footer}");
    assert!(
        footer.contains('…'),
        "page keys cut without a sign: {footer}"
    );
    let s = screen(&mut app, 24, 24);
    let tabs = s.lines().next().unwrap_or_default();
    assert!(tabs.contains('…'), "tabs cut without a sign: {tabs}");
}

/// One style of cut text on every page at 80x24: `…`, never `~`.
#[test]
fn one_cut_marker_on_every_page() {
    for page in PageId::ALL {
        let mut app = app_on(page);
        let s = screen(&mut app, 80, 24);
        assert!(!s.contains('~'), "{page:?} cuts with ~:\n{s}");
    }
}

/// The Host page's NFS line (where the setting comes from) is cut with the marker at 80
/// columns, not silently.
#[test]
fn long_lines_end_with_the_marker() {
    let mut model = rdma_tui::fixtures::demo_model();
    if let Some(h) = model.host_setup.as_mut() {
        h.nfs_rdma = true;
        h.nfs_rdma_origin = [
            (
                "rdma".to_string(),
                "/etc/nfs.conf.d/zz-rdma-manager.conf:2".to_string(),
            ),
            (
                "rdma-port".to_string(),
                "/etc/nfs.conf.d/zz-rdma-manager.conf:3".to_string(),
            ),
        ]
        .into();
    }
    let mut app = rdma_tui::app::App::with_model(model, rdma_tui::theme::Theme::colored());
    app.show(PageId::Host);
    for _ in 0..40 {
        press(&mut app, KeyCode::Down);
    }
    let s = screen(&mut app, 80, 24);
    let line = s
        .lines()
        .find(|l| l.contains("(rdma from"))
        .unwrap_or_default();
    assert!(
        line.contains("/etc/nfs.conf.d/"),
        "no NFS origin line:\n{s}"
    );
    let text = line.trim_end();
    assert!(
        text.ends_with(')') || text.ends_with('…'),
        "cut without a sign: {line}"
    );
}

/// The Naming page's sections below the screen can be reached: the last item shows what
/// follows it to the end (an IPoIB names section without rules has no item to select), and
/// until then the page says there is more.
#[test]
fn naming_page_scrolls_to_its_last_section() {
    let mut model = rdma_tui::fixtures::demo_model();
    for i in 0..6u32 {
        model
            .manager
            .rdma_fixed_names
            .push(rdma_tui::model::NameRule {
                guid: format!("0xb8599f0300d4e6{i:02x}"),
                name: format!("hpc{i}"),
                managed: true,
                line: 4 + i,
            });
    }
    let mut app = rdma_tui::app::App::with_model(model, rdma_tui::theme::Theme::colored());
    app.show(PageId::Naming);
    answer_preview(&mut app);
    let s = screen(&mut app, 80, 24);
    assert!(!s.contains("IPoIB interface names"), "fits already:\n{s}");
    assert!(s.contains("more lines below"), "no sign of more:\n{s}");
    press(&mut app, KeyCode::End);
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("IPoIB interface names"), "{s}");
    assert!(s.contains("none: i gives"), "{s}");
    assert!(
        s.contains("> 0xb8599f0300d4e605"),
        "the selection stays in view:\n{s}"
    );
}
