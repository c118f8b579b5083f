//! The Test page driven as a user would: the recent tests and the responder read when it is
//! shown, the form that refuses bad input before anything is sent, a test running (the
//! screen counts its seconds and keys keep working) and its result, the responder turned off
//! and read again. Snapshots at 80x24 and 40x10.

mod common;

use common::*;
use crossterm::event::KeyCode;
use insta::assert_snapshot;
use rdma_tui::app::App;
use rdma_tui::client::{Call, CallError, CallOutput, ErrorKind, LinkResponder, LinkTestResult};
use rdma_tui::fixtures::NOW_US;
use rdma_tui::pages::PageId;

const SECOND: u64 = 1_000_000;

/// A passed RDMA test from mlx5_1/1 (a RoCE port of the demo host), 90 s before the
/// fixtures' now.
fn passed_rdma() -> LinkTestResult {
    LinkTestResult {
        kind: "rdma".into(),
        peer: "192.168.77.11".into(),
        address: "192.168.77.11".into(),
        passed: true,
        started_us: NOW_US - 90 * SECOND,
        elapsed_ms: 1840,
        latency_p50_us: 2.31,
        latency_p99_us: 3.07,
        latency_max_us: 9.82,
        latency_avg_us: 2.4,
        bandwidth_gbps: 23.41,
        round_trips: 1000,
        device: "mlx5_1".into(),
        port: 1,
        netdev: "enp59s0f1".into(),
        gid_index: 3,
        gid: "0000:0000:0000:0000:0000:ffff:c0a8:4d0a".into(),
        gid_type: "RoCE v2".into(),
        roce_mode: "v2".into(),
        mtu: 1024,
        tool: "ib_send_lat+ib_send_bw".into(),
        ..LinkTestResult::default()
    }
}

/// A failed ICMP test from mlx4_1/1 (an InfiniBand port), 10 min before now.
fn failed_icmp() -> LinkTestResult {
    LinkTestResult {
        kind: "icmp".into(),
        peer: "10.0.0.9".into(),
        address: "10.0.0.9".into(),
        passed: false,
        reason: "no-responder".into(),
        detail: "no echo reply from 10.0.0.9: 10 requests sent, none answered".into(),
        started_us: NOW_US - 600 * SECOND,
        elapsed_ms: 3012,
        errors: 10,
        device: "mlx4_1".into(),
        port: 1,
        netdev: "ib0".into(),
        gid_index: -1,
        mtu: 2044,
        tool: "ping".into(),
        ..LinkTestResult::default()
    }
}

fn responder(enabled: bool) -> LinkResponder {
    LinkResponder {
        enabled,
        running: enabled,
        restarts: 4,
        served: 4,
        detail: String::new(),
        latency_port: 18515,
        bandwidth_port: 18516,
    }
}

/// Answers the page's reads: the recent tests, then the responder it asks for after them.
fn answer_reads(app: &mut App, recent: Vec<LinkTestResult>, enabled: bool) {
    for _ in 0..3 {
        for (id, call) in app.take_calls() {
            let result = match &call {
                Call::RecentLinkTests => Ok(CallOutput::LinkTests(recent.clone())),
                Call::GetLinkResponder => Ok(CallOutput::Responder(responder(enabled))),
                other => panic!("unexpected {other:?}"),
            };
            app.apply(rdma_tui::client::Update::CallDone { id, call, result });
        }
    }
}

/// The Test page shown, its reads answered, `port` (e.g. "mlx5_1/1") selected.
fn test_page(port: &str) -> App {
    let mut app = app_on(PageId::LinkTest);
    answer_reads(&mut app, vec![failed_icmp(), passed_rdma()], true);
    let path = app
        .model
        .ports
        .values()
        .find(|p| format!("{}/{}", p.device_name, p.number) == port)
        .map(|p| p.path.clone())
        .expect("the demo host has the port");
    app.show_port(PageId::LinkTest, &path);
    // Shown again: it reads again.
    answer_reads(&mut app, vec![failed_icmp(), passed_rdma()], true);
    app
}

#[test]
fn the_page_reads_recent_tests_and_the_responder_when_shown() {
    let mut app = app_on(PageId::LinkTest);
    assert_eq!(calls_now(&mut app), vec![Call::RecentLinkTests]);
}

fn calls_now(app: &mut App) -> Vec<Call> {
    app.take_calls().into_iter().map(|(_, c)| c).collect()
}

#[test]
fn page_at_80x24_and_40x10() {
    let mut app = test_page("mlx5_1/1");
    assert_snapshot!("link_test_80x24", screen(&mut app, 80, 24));
    assert_snapshot!("link_test_40x10", screen(&mut app, 40, 10));
    press(&mut app, KeyCode::Char('h'));
    assert_snapshot!("link_test_recent_80x24", screen(&mut app, 80, 24));
    assert_snapshot!("link_test_recent_40x10", screen(&mut app, 40, 10));
}

#[test]
fn bad_input_is_refused_in_the_form() {
    let mut app = test_page("mlx5_1/1");
    press(&mut app, KeyCode::Enter);
    // A LID: the daemon would refuse it (NotSupported); the form says so first.
    type_text(&mut app, "0x12");
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Tab);
    // The duration: 61 s is over the most.
    press(&mut app, KeyCode::Backspace);
    type_text(&mut app, "61");
    press(&mut app, KeyCode::Enter);
    assert!(calls_now(&mut app).is_empty());
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("LID"), "{s}");
    assert_snapshot!("link_test_form_refused", s);
    // An empty peer is refused too, on Enter.
    press(&mut app, KeyCode::Esc);
    let mut app = test_page("mlx5_1/1");
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Enter);
    assert!(calls_now(&mut app).is_empty());
    assert!(screen(&mut app, 80, 24).contains("give the peer's IP address"));
}

#[test]
fn a_running_test_keeps_the_keys_and_shows_its_result() {
    let mut app = test_page("mlx5_1/1");
    press(&mut app, KeyCode::Enter);
    type_text(&mut app, "192.168.77.11");
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Backspace);
    type_text(&mut app, "5");
    press(&mut app, KeyCode::Tab);
    for _ in 0..2 {
        press(&mut app, KeyCode::Backspace);
    }
    type_text(&mut app, "20");
    press(&mut app, KeyCode::Enter);
    let taken = app.take_calls();
    assert_eq!(taken.len(), 1, "{taken:?}");
    let (id, call) = taken[0].clone();
    let Call::TestLink {
        peer,
        kind,
        duration,
        timeout,
        ..
    } = &call
    else {
        panic!("{call:?}");
    };
    assert_eq!(
        (peer.as_str(), kind.as_str(), *duration, *timeout),
        ("192.168.77.11", "rdma", 5, 20)
    );
    assert!(app.ticking(), "a running test redraws every second");
    let s = screen(&mut app, 80, 24);
    assert!(
        s.contains("Running RDMA from mlx5_1/1 to 192.168.77.11"),
        "{s}"
    );
    assert_snapshot!("link_test_running", s);
    // The port's traffic is live while it runs: a sample signalled after the start raises
    // the test's peak and is the figure of now.
    let port = app
        .model
        .ports_in_order()
        .into_iter()
        .find(|p| p.device_name == "mlx5_1" && p.number == 1)
        .map(|p| p.path.clone())
        .expect("mlx5_1/1 in the demo host");
    app.apply(rdma_tui::client::Update::Samples {
        time_us: NOW_US + SECOND,
        samples: vec![(port.clone(), 12.5e9 / 8.0 * 8.0, 1.25e6, 1e6, 1e3, 0)],
    });
    let s = screen(&mut app, 80, 24);
    assert!(
        s.contains("Port traffic now  TX 100 Gb/s  RX 10.0 Mb/s"),
        "{s}"
    );
    assert!(
        s.contains("Peak of this test TX 100 Gb/s  RX 48.4 Gb/s"),
        "{s}"
    );
    // The daemon says the test started, then that the latency is measured: shown while
    // the bandwidth test runs.
    app.apply(rdma_tui::client::Update::LinkTestProgress {
        port: port.clone(),
        stage: "running".into(),
        result: Box::new(LinkTestResult {
            kind: "rdma".into(),
            ..LinkTestResult::default()
        }),
    });
    assert!(screen(&mut app, 80, 24).contains("Latency test running"));
    app.apply(rdma_tui::client::Update::LinkTestProgress {
        port: port.clone(),
        stage: "bandwidth".into(),
        result: Box::new(LinkTestResult {
            bandwidth_gbps: 0.0,
            ..passed_rdma()
        }),
    });
    let s = screen(&mut app, 80, 24);
    assert!(
        s.contains("Latency           p50 2.31 µs  p99 3.07 µs  max 9.82 µs  (1000 round trips)"),
        "{s}"
    );
    assert!(
        s.contains("Bandwidth test running (path MTU 1024, GID index 3)"),
        "{s}"
    );
    assert_snapshot!("link_test_running_bandwidth", s);
    // Keys still work while it runs: the recent list and back; a second test is declined.
    press(&mut app, KeyCode::Char('h'));
    assert!(screen(&mut app, 80, 24).contains("Recent link tests"));
    press(&mut app, KeyCode::Char('h'));
    press(&mut app, KeyCode::Enter);
    assert!(screen(&mut app, 80, 24).contains("is running; its result comes within 20 s"));
    assert!(app.take_calls().is_empty());
    // It ends: timed out, with the reason.
    let result = LinkTestResult {
        passed: false,
        reason: "timeout".into(),
        detail: "the bandwidth test did not end within the timeout; it was stopped".into(),
        started_us: NOW_US,
        elapsed_ms: 20_004,
        round_trips: 0,
        bandwidth_gbps: 0.0,
        ..passed_rdma()
    };
    app.apply(rdma_tui::client::Update::CallDone {
        id,
        call,
        result: Ok(CallOutput::LinkTest(Box::new(result))),
    });
    assert!(!app.ticking());
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("Failed (timeout): RDMA from mlx5_1/1"), "{s}");
    assert!(s.contains("did not end within the timeout"), "{s}");
    assert_snapshot!("link_test_timed_out", s);
    // The form starts from what was given last.
    press(&mut app, KeyCode::Enter);
    assert!(screen(&mut app, 80, 24).contains("192.168.77.11"));
}

#[test]
fn a_refused_test_says_why_on_the_port() {
    let mut app = test_page("mlx5_1/1");
    press(&mut app, KeyCode::Enter);
    type_text(&mut app, "192.168.77.11");
    press(&mut app, KeyCode::Enter);
    let busy = CallError {
        kind: ErrorKind::Busy,
        message: "2 link tests are running, the most at once; try again when one ends".into(),
    };
    answer_all(&mut app, Err(busy));
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("! Not run: 2 link tests are running"), "{s}");
    assert!(!app.ticking());
}

#[test]
fn r_turns_the_responder_off_and_reads_it_again() {
    let mut app = test_page("mlx5_1/1");
    press(&mut app, KeyCode::Char('r'));
    let taken = app.take_calls();
    assert_eq!(taken.len(), 1);
    let (id, call) = taken[0].clone();
    assert_eq!(call, Call::SetLinkResponder { enabled: false });
    app.apply(rdma_tui::client::Update::CallDone {
        id,
        call,
        result: Ok(CallOutput::Done),
    });
    let next = app.take_calls();
    assert_eq!(
        next.iter().map(|(_, c)| c.clone()).collect::<Vec<_>>(),
        vec![Call::GetLinkResponder]
    );
    let (id, call) = next[0].clone();
    app.apply(rdma_tui::client::Update::CallDone {
        id,
        call,
        result: Ok(CallOutput::Responder(responder(false))),
    });
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("Responder off"), "{s}");
    assert!(s.contains("Done: disable the link-test responder"), "{s}");
}

#[test]
fn an_infiniband_port_pings_a_lid() {
    let mut app = test_page("mlx4_1/1");
    press(&mut app, KeyCode::Enter);
    type_text(&mut app, "0x12");
    // RDMA, then ICMP, then the InfiniBand ping, which takes the LID.
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Right);
    press(&mut app, KeyCode::Right);
    let form = screen(&mut app, 80, 24);
    assert!(!form.contains("LID is for kind ibping"), "{form}");
    press(&mut app, KeyCode::Enter);
    let taken = app.take_calls();
    assert_eq!(taken.len(), 1, "{taken:?}\n{form}");
    let Call::TestLink { peer, kind, .. } = &taken[0].1 else {
        panic!("{taken:?}");
    };
    assert_eq!((peer.as_str(), kind.as_str()), ("0x12", "ibping"));
    let s = screen(&mut app, 80, 24);
    assert!(
        s.contains("Running ibping from mlx4_1/1 to Lid 0x12"),
        "{s}"
    );
}
