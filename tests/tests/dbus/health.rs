//! Node health over D-Bus on the simulated demo host (mlx4_1: an FDR InfiniBand port with
//! ib0 and a 40 GbE RoCE port; mlx5_0: HDR InfiniBand with ibp59s0f0; mlx5_1: 100 GbE RoCE
//! over enp59s0f1np1; rxe0 over eth0): a host as expected passes every expectation, a port
//! set down, an error counter rising within the window and a flapping port fail naming the
//! expectation and the port, bad expectations are refused with their key path, and the
//! state directory's health sections are what an empty document checks.

use std::time::{Duration, Instant};

use rdma_manager_dbus::types::HealthCheck;
use rdma_manager_dbus::{ManagerProxy, PortProxy};
use rdma_manager_tests::service::{port_proxy, serve_demo_or_skip, ServedDemo};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::model::{PhysState, PortState};

/// A poll every 50 ms: a state the simulated host changes is published at once.
async fn serve() -> Option<ServedDemo> {
    let config = EngineConfig {
        tick: Duration::from_millis(50),
        ..EngineConfig::default()
    };
    serve_demo_or_skip(config, |_| {}).await
}

/// What the demo host is, as expectations.
const AS_IT_IS: &str = "\
health:
  ports:
    - state: ACTIVE
      phys-state: LinkUp
    - device: mlx5_0
      port: 1
      min-rate-gbps: 200
      link-layer: InfiniBand
      mtu: 4092
    - device: mlx5_1
      min-rate-gbps: 100
      link-layer: Ethernet
      mtu: 9000
    - device: mlx4_1
      port: 1
      min-rate-gbps: 56
      mtu: 2044
  min-ports: 5
";

fn failed(rows: &[HealthCheck]) -> Vec<(&str, &str)> {
    rows.iter()
        .filter(|r| !r.passed)
        .map(|r| (r.expectation.as_str(), r.subject.as_str()))
        .collect()
}

async fn check(m: &ManagerProxy<'_>, doc: &str) -> Vec<HealthCheck> {
    m.check_health(doc).await.expect("CheckHealth")
}

/// The text of an InvalidArgument refusal; panics on anything else.
fn invalid_argument(reply: zbus::Result<Vec<HealthCheck>>) -> String {
    match reply {
        Err(zbus::Error::MethodError(name, text, _))
            if name.as_str() == "org.rdmamanager.RdmaManager1.Error.InvalidArgument" =>
        {
            text.unwrap_or_default()
        }
        other => panic!("not InvalidArgument: {other:?}"),
    }
}

/// Waits up to 10 s for the port's published state.
async fn shows(port: &PortProxy<'_>, state: &str) {
    let start = Instant::now();
    while port.state().await.expect("State") != state {
        assert!(start.elapsed() < Duration::from_secs(10), "never {state}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_as_expected_passes_and_a_port_set_down_fails_naming_it() {
    let Some(s) = serve().await else { return };
    let m = ManagerProxy::new(&s.client).await.expect("manager");
    let rows = check(&m, AS_IT_IS).await;
    assert!(failed(&rows).is_empty(), "{rows:#?}");
    // Two values of five ports; present and three values of mlx5_0/1, three of mlx5_1/1,
    // two of mlx4_1/1; the count.
    assert_eq!(
        rows.len(),
        10 + (1 + 3) + (1 + 3) + (1 + 2) + 1,
        "{rows:#?}"
    );
    let mtu = rows
        .iter()
        .find(|r| r.expectation == "mtu" && r.subject == "mlx5_1/1");
    assert_eq!(
        mtu.map(|r| r.message.as_str()),
        Some("mlx5_1/1's netdev enp59s0f1np1 has MTU 9000, expected 9000")
    );

    let port = port_proxy(&s.client, "/org/rdmamanager/RdmaManager1/Device/1/Port/1").await;
    s.sim
        .set_port_state("mlx5_0", 1, PortState::Down, PhysState::Disabled)
        .expect("port down");
    shows(&port, "DOWN").await;
    let rows = check(&m, AS_IT_IS).await;
    assert_eq!(
        failed(&rows),
        [("state", "mlx5_0/1"), ("phys-state", "mlx5_0/1")],
        "{rows:#?}"
    );
    let state = rows.iter().find(|r| r.expectation == "state" && !r.passed);
    assert_eq!(
        state.map(|r| (r.observed.as_str(), r.expected.as_str(), r.message.as_str())),
        Some(("DOWN", "ACTIVE", "mlx5_0/1 state is DOWN, expected ACTIVE"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_port_and_unequal_firmware_fail() {
    let Some(s) = serve().await else { return };
    let m = ManagerProxy::new(&s.client).await.expect("manager");
    let rows = check(
        &m,
        "health: {ports: [{device: mlx5_9, port: 1, state: ACTIVE}], min-ports: 6, firmware-equal: true}",
    )
    .await;
    // mlx5_0 and mlx5_1 share the board MT_0000000223 with other firmware; mlx4_1 is alone
    // on its board.
    assert_eq!(
        failed(&rows),
        [
            ("present", "mlx5_9/1"),
            ("min-ports", "host"),
            ("firmware-equal", "board MT_0000000223"),
        ],
        "{rows:#?}"
    );
    let fw = rows
        .iter()
        .find(|r| r.subject == "board MT_0000000223")
        .map(|r| r.observed.as_str());
    assert_eq!(fw, Some("20.31.1014 (mlx5_0); 22.36.1010 (mlx5_1)"));
    assert!(rows
        .iter()
        .any(|r| r.subject == "board MT_1090120019" && r.passed));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_error_counter_rising_within_the_window_fails() {
    let Some(s) = serve().await else { return };
    let m = ManagerProxy::new(&s.client).await.expect("manager");
    let doc = "health: {error-counters: {window-seconds: 1}}";
    let rows = check(&m, doc).await;
    assert!(failed(&rows).is_empty(), "{rows:#?}");
    assert_eq!(rows.len(), 5, "one verdict a port: {rows:#?}");

    let sim = s.sim.clone();
    let raise = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        sim.add_port_errors("mlx5_0", 1, "symbol_error", 3)
            .expect("symbol errors");
    });
    let started = Instant::now();
    let rows = check(&m, doc).await;
    raise.await.expect("raise");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "the window was not waited out"
    );
    assert_eq!(failed(&rows), [("error-counters", "mlx5_0/1")], "{rows:#?}");
    let bad = rows.iter().find(|r| !r.passed).map(|r| r.observed.as_str());
    assert_eq!(bad, Some("symbol_error +3"));
    // Errors counted before the window are the past: the next check passes.
    assert!(failed(&check(&m, doc).await).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_port_that_flapped_within_the_window_fails() {
    let Some(s) = serve().await else { return };
    let m = ManagerProxy::new(&s.client).await.expect("manager");
    let doc = "health: {flaps: {window-seconds: 600, max: 1}}";
    assert!(failed(&check(&m, doc).await).is_empty());

    let port = port_proxy(&s.client, "/org/rdmamanager/RdmaManager1/Device/1/Port/1").await;
    s.sim
        .set_port_state("mlx5_0", 1, PortState::Down, PhysState::Polling)
        .expect("down");
    shows(&port, "DOWN").await;
    s.sim
        .set_port_state("mlx5_0", 1, PortState::Active, PhysState::LinkUp)
        .expect("up");
    shows(&port, "ACTIVE").await;
    let rows = check(&m, doc).await;
    assert_eq!(failed(&rows), [("flaps", "mlx5_0/1")], "{rows:#?}");
    let bad = rows.iter().find(|r| !r.passed);
    assert_eq!(bad.map(|r| r.observed.as_str()), Some("2"));
    // Within a window that ends before the flap was seen, nothing flapped.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let rows = check(&m, "health: {flaps: {window-seconds: 1, max: 0}}").await;
    assert!(failed(&rows).is_empty(), "{rows:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_expectations_are_refused_with_their_key_path() {
    let Some(s) = serve().await else { return };
    let m = ManagerProxy::new(&s.client).await.expect("manager");
    for (doc, words) in [
        (
            "health: {ports: [{device: mlx5_0, min-rate-gbps: -5}]}",
            "health.ports[0].min-rate-gbps",
        ),
        (
            "health: {ports: [{device: mlx5_0, port: 0}]}",
            "health.ports[0].port: port 0 is not an RDMA port",
        ),
        (
            "health:\n  ports: []\n  colour: red\n",
            "line 3: health.colour: unknown field",
        ),
        (
            "health: {flaps: {window-seconds: 60, max: 64}}",
            "health.flaps.max",
        ),
        ("roce: []", "no health section"),
        ("health: {}", "expects nothing"),
        // No state directory on this host.
        ("", "has a health section"),
    ] {
        let text = invalid_argument(m.check_health(doc).await);
        assert!(text.contains(words), "{doc}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_empty_document_checks_the_state_directorys_health_sections() {
    let Some(s) = serve().await else { return };
    let m = ManagerProxy::new(&s.client).await.expect("manager");
    let dir = s.sim.root().join("etc/rdma-manager/state.d");
    std::fs::create_dir_all(&dir).expect("state.d");
    std::fs::write(
        dir.join("10-ports.yaml"),
        "health:\n  ports:\n    - device: mlx5_0\n      port: 1\n      state: ACTIVE\n",
    )
    .expect("write");
    std::fs::write(
        dir.join("20-count.yaml"),
        "health:\n  ports:\n    - device: mlx4_1\n      port: 2\n      min-rate-gbps: 100\n  min-ports: 5\n",
    )
    .expect("write");
    let rows = check(&m, "").await;
    assert_eq!(failed(&rows), [("min-rate-gbps", "mlx4_1/2")], "{rows:#?}");
    // Both files' ports and the count.
    assert_eq!(rows.len(), 2 + 2 + 1, "{rows:#?}");
    // A refused file names itself.
    std::fs::write(dir.join("30-bad.yaml"), "health: {min-ports: -1}\n").expect("write");
    let text = invalid_argument(m.check_health("").await);
    assert!(
        text.contains("30-bad.yaml") && text.contains("health.min-ports"),
        "{text}"
    );
}
