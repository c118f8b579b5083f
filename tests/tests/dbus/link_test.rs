//! Port.TestLink and the link-test responder under real polkitd, on the simulated host with
//! the stand-in tools (`rdma-standin-linktest`, which prints what perftest and ping print, or
//! fails as they do, by the peer it is given): the result and its path, each typed reason,
//! the timeout that kills a hang, the port that is down, the cap on tests at once, refusals
//! of bad input and of an unprivileged caller, and the responder enabled, persisted,
//! re-applied at start and disabled.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use futures::StreamExt;
use rdma_manager_dbus::types::LinkTestResult;
use rdma_manager_dbus::{port_path, ManagerProxy, PortProxy};
use rdma_manager_tests::bus::{Credentials, PolkitConfig, Reply};
use rdma_manager_tests::service::SystemSetup;
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::{fixtures, SimHost};
use rdma_managerd::linktest::sandbox::{Sandbox, SandboxRunner};
use rdma_managerd::linktest::LinkTestConfig;
use rdma_managerd::model::{PhysState, PortState};

const PORT_IFACE: &str = "org.rdmamanager.RdmaManager1.Port";
/// The demo host's rxe0 over eth0 (kernel index 3): an ACTIVE RoCE port with a netdev.
const RXE: u32 = 3;
const FILE: &str = "/etc/rdma-manager/link-test.toml";

fn standin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rdma-standin-linktest"))
}

fn config(max_concurrent: usize) -> EngineConfig {
    EngineConfig {
        link_test: LinkTestConfig {
            send_lat: standin(),
            send_bw: standin(),
            ping: standin(),
            ibping: standin(),
            runner: Arc::new(SandboxRunner {
                sandbox: Sandbox::unprivileged(),
            }),
            max_concurrent,
        },
        ..EngineConfig::default()
    }
}

async fn setup(max_concurrent: usize) -> Result<SystemSetup> {
    SystemSetup::with_engine(
        false,
        PolkitConfig::rdma_manager(),
        SimHost::new(fixtures::demo_host())?,
        config(max_concurrent),
    )
    .await
}

async fn port(t: &SystemSetup, path: &str) -> Result<PortProxy<'static>> {
    let conn = t.bus.connect().await?;
    Ok(PortProxy::builder(&conn)
        .path(path.to_string())?
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?)
}

async fn manager(t: &SystemSetup) -> Result<ManagerProxy<'static>> {
    let conn = t.bus.connect().await?;
    Ok(ManagerProxy::builder(&conn).build().await?)
}

/// A test from rxe0/1 as root.
async fn test(
    t: &SystemSetup,
    peer: &str,
    kind: &str,
    timeout: u32,
) -> Result<LinkTestResult, zbus::Error> {
    let p = port(t, &port_path(RXE, 1))
        .await
        .map_err(|e| zbus::Error::Failure(e.to_string()))?;
    p.test_link(peer, kind, 0, timeout).await
}

fn dbus_error_name(e: &zbus::Error) -> String {
    match e {
        zbus::Error::MethodError(name, _, _) => name.to_string(),
        other => other.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_rdma_test_reports_perftests_figures_and_the_path() -> Result<()> {
    require_harness!();
    let t = setup(2).await?;
    // Its stages as signals, to any client that watches the port.
    let p = port(&t, &port_path(RXE, 1)).await?;
    let mut progress = p.receive_link_test_progress().await?;
    let r = p.test_link("192.0.2.10", "rdma", 0, 10).await?;
    assert!(r.passed, "{r:?}");
    assert_eq!(r.reason, "");
    // The stand-in prints perftest's report (testdata/ib_send_lat.txt, ib_send_bw.txt,
    // captured under emulation).
    assert_eq!(r.latency_p50_us, 25222.49);
    assert_eq!(r.latency_p99_us, 37654.92);
    assert_eq!(r.latency_max_us, 87823.69);
    assert_eq!(r.latency_avg_us, 25587.81);
    assert_eq!(r.round_trips, 1000);
    assert_eq!(r.bandwidth_gbps, 0.068454);
    assert_eq!(r.mtu, 1024);
    assert_eq!(
        (r.device.as_str(), r.port, r.netdev.as_str()),
        ("rxe0", 1, "eth0")
    );
    assert_eq!(r.tool, "ib_send_lat+ib_send_bw");
    // The GID perftest used, as the Port's Gids write it; not in this port's table (the
    // captured run was on another host), so no index.
    assert_eq!(r.gid, "0000:0000:0000:0000:0000:ffff:c0a8:4d01");
    assert_eq!(r.gid_index, -1);
    let mut stages = Vec::new();
    while stages.len() < 3 {
        let signal = tokio::time::timeout(Duration::from_secs(5), progress.next())
            .await
            .context("LinkTestProgress in time")?
            .context("the signal stream")?;
        let args = signal.args()?;
        stages.push((args.stage().to_string(), args.result().clone()));
    }
    let names: Vec<&str> = stages.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(names, ["running", "bandwidth", "done"]);
    // Started: the path, no figure; then the latency, the bandwidth still to come; then
    // the result as returned.
    assert_eq!(
        (stages[0].1.latency_p50_us, stages[0].1.round_trips),
        (0.0, 0)
    );
    assert_eq!(stages[0].1.address, "192.0.2.10");
    assert_eq!(stages[1].1.latency_p50_us, 25222.49);
    assert_eq!(stages[1].1.bandwidth_gbps, 0.0);
    assert_eq!(stages[1].1.mtu, 1024);
    assert_eq!(stages[2].1, r);
    // A GID that names the same address is the same peer.
    let g = test(&t, "0000:0000:0000:0000:0000:ffff:c000:020a", "rdma", 10).await?;
    assert!(g.passed, "{g:?}");
    assert_eq!(g.address, "192.0.2.10");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn an_icmp_test_gives_percentiles_of_every_reply() -> Result<()> {
    require_harness!();
    let t = setup(2).await?;
    let r = test(&t, "192.0.2.10", "icmp", 10).await?;
    assert!(r.passed, "{r:?}");
    // ping_ok.txt: 0.179, 0.045, 0.045, 0.043, 0.042 ms.
    assert_eq!(r.round_trips, 5);
    assert_eq!(r.errors, 0);
    assert_eq!(r.latency_p50_us, 45.0);
    assert_eq!(r.latency_max_us, 179.0);
    assert_eq!(r.latency_p99_us, 179.0);
    assert_eq!(r.bandwidth_gbps, 0.0);
    assert!(r.mtu > 0, "the netdev's MTU: {r:?}");
    assert_eq!(r.gid_index, -1);
    Ok(())
}

/// The demo host's mlx4_1 (kernel index 0): an ACTIVE InfiniBand port.
const IB: u32 = 0;

#[tokio::test(flavor = "multi_thread")]
async fn an_ibping_test_pings_a_lid_from_an_infiniband_port() -> Result<()> {
    require_harness!();
    let t = setup(2).await?;
    let p = port(&t, &port_path(IB, 1)).await?;
    let r = p.test_link("2", "ibping", 0, 10).await?;
    assert!(r.passed, "{r:?}");
    assert_eq!(
        (r.kind.as_str(), r.tool.as_str(), r.address.as_str()),
        ("ibping", "ibping", "2")
    );
    // rdma-core's ibping on ibsim: 0.052, 0.103 and 0.032 ms.
    assert_eq!((r.round_trips, r.errors), (3, 0));
    assert_eq!(r.latency_p50_us, 52.0);
    assert_eq!(r.latency_max_us, 103.0);
    assert_eq!(r.detail, "Lid 2 answered as vm.(none)");
    assert_eq!((r.device.as_str(), r.port), ("mlx4_1", 1));
    assert!(r.mtu > 0, "the port's active MTU: {r:?}");
    assert_eq!(r.bandwidth_gbps, 0.0);
    // Nobody at Lid 3; something ibping does not print at Lid 4.
    let r = p.test_link("0x3", "ibping", 0, 10).await?;
    assert_eq!(r.reason, "no-responder", "{r:?}");
    assert!(
        r.detail.contains("Lid 3 answered none of 10 pings"),
        "{r:?}"
    );
    let r = p.test_link("4", "ibping", 0, 10).await?;
    assert_eq!(r.reason, "unexpected-output", "{r:?}");
    // An address is not a LID; a RoCE port has no InfiniBand ping.
    for (path, peer, error) in [
        (port_path(IB, 1), "192.0.2.10", "InvalidArgument"),
        (port_path(IB, 1), "0xc000", "InvalidArgument"),
        (port_path(RXE, 1), "2", "NotSupported"),
    ] {
        let e = port(&t, &path)
            .await?
            .test_link(peer, "ibping", 0, 10)
            .await
            .expect_err(peer);
        assert!(dbus_error_name(&e).ends_with(error), "{peer}: {e:?}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn each_failure_has_its_reason() -> Result<()> {
    require_harness!();
    let t = setup(2).await?;
    for (peer, kind, reason) in [
        ("192.0.2.20", "rdma", "no-responder"),
        ("192.0.2.40", "rdma", "no-route"),
        ("192.0.2.50", "rdma", "unexpected-output"),
        ("192.0.2.20", "icmp", "no-responder"),
        ("192.0.2.40", "icmp", "no-route"),
        ("192.0.2.50", "icmp", "unexpected-output"),
    ] {
        let r = test(&t, peer, kind, 10).await?;
        assert!(!r.passed, "{peer} {kind}: {r:?}");
        assert_eq!(r.reason, reason, "{peer} {kind}: {r:?}");
        assert!(!r.detail.is_empty());
        assert_eq!(r.round_trips, 0, "{r:?}");
        // What the parser did not know is in the result, to be read.
        if reason == "unexpected-output" {
            assert!(
                r.detail
                    .contains("the tool printed (exit status 0): stdout: hello from"),
                "{r:?}"
            );
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_test_that_hangs_ends_at_its_timeout() -> Result<()> {
    require_harness!();
    let t = setup(2).await?;
    for kind in ["rdma", "icmp"] {
        let t0 = Instant::now();
        let r = test(&t, "192.0.2.30", kind, 1).await?;
        let took = t0.elapsed();
        assert_eq!(r.reason, "timeout", "{r:?}");
        assert!(took < Duration::from_secs(4), "{kind} took {took:?}");
        assert!(r.elapsed_ms >= 1000, "{r:?}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_port_that_is_down_runs_nothing() -> Result<()> {
    require_harness!();
    let t = setup(2).await?;
    // rxe0's netdev goes down; the daemon publishes the port DOWN.
    t.sim
        .set_port_state("rxe0", 1, PortState::Down, PhysState::Disabled)?;
    let path = port_path(RXE, 1);
    let p = port(&t, &path).await?;
    let t0 = Instant::now();
    while p.state().await? != "DOWN" {
        anyhow::ensure!(t0.elapsed() < Duration::from_secs(10), "rxe0/1 never DOWN");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let down = path;
    let r = port(&t, &down)
        .await?
        .test_link("192.0.2.10", "rdma", 0, 10)
        .await?;
    assert_eq!(r.reason, "port-down", "{r:?}");
    assert!(r.elapsed_ms < 1000, "{r:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn one_test_too_many_is_busy() -> Result<()> {
    require_harness!();
    let t = setup(1).await?;
    let first = {
        let p = port(&t, &port_path(RXE, 1)).await?;
        tokio::spawn(async move { p.test_link("192.0.2.60", "rdma", 0, 10).await })
    };
    // The first holds the only slot for 2 s per tool.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let e = test(&t, "192.0.2.10", "rdma", 10)
        .await
        .expect_err("a second test at once");
    assert!(dbus_error_name(&e).ends_with(".Busy"), "{e:?}");
    let r = first.await??;
    assert!(r.passed, "{r:?}");
    // The slot is free again.
    assert!(test(&t, "192.0.2.10", "icmp", 10).await?.passed);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_is_refused_before_anything_runs() -> Result<()> {
    require_harness!();
    let t = setup(2).await?;
    let p = port(&t, &port_path(RXE, 1)).await?;
    for (peer, kind, duration, timeout, error) in [
        ("192.0.2.10", "tcp", 0, 10, "InvalidArgument"),
        ("peer.example", "rdma", 0, 10, "InvalidArgument"),
        ("0x12", "rdma", 0, 10, "NotSupported"),
        (
            "fe80:0000:0000:0000:0002:c903:0031:78f2",
            "rdma",
            0,
            10,
            "InvalidArgument",
        ),
        ("192.0.2.10", "icmp", 61, 10, "InvalidArgument"),
        ("192.0.2.10", "icmp", 1, 601, "InvalidArgument"),
    ] {
        let e = p
            .test_link(peer, kind, duration, timeout)
            .await
            .expect_err(peer);
        assert!(dbus_error_name(&e).ends_with(error), "{peer} {kind}: {e:?}");
    }
    let m = manager(&t).await?;
    assert!(m.recent_link_tests().await?.is_empty());
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unprivileged_caller_is_refused_and_reads_the_results() -> Result<()> {
    require_harness!();
    let t = setup(2).await?;
    let user = Credentials::test_user(false);
    let r = t
        .call(
            Some(&user),
            &port_path(RXE, 1),
            PORT_IFACE,
            "TestLink",
            &["ssuu", "192.0.2.10", "rdma", "0", "10"],
        )
        .await?;
    assert!(
        matches!(&r, Reply::Err(name, _) if name == "NotAuthorized"),
        "{r:?}"
    );
    let r = t
        .manager(Some(&user), "SetLinkResponder", &["b", "true"])
        .await?;
    assert!(
        matches!(&r, Reply::Err(name, _) if name == "NotAuthorized"),
        "{r:?}"
    );
    assert!(t.etc_file(FILE).is_none(), "nothing written");
    // Nothing ran; root's test is then listed, and anyone reads it.
    assert!(manager(&t).await?.recent_link_tests().await?.is_empty());
    assert!(test(&t, "192.0.2.10", "icmp", 10).await?.passed);
    let r = t.manager(Some(&user), "RecentLinkTests", &[]).await?;
    assert!(
        matches!(&r, Reply::Ok(text) if text.contains("\"192.0.2.10\"") && text.contains("\"icmp\"")),
        "{r:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_responder_is_remembered_and_comes_back_at_start() -> Result<()> {
    require_harness!();
    let mut t = setup(2).await?;
    let m = manager(&t).await?;
    let r = m.get_link_responder().await?;
    assert!(!r.enabled && !r.running, "{r:?}");
    assert_eq!((r.latency_port, r.bandwidth_port), (18515, 18516));
    m.set_link_responder(true).await?;
    let file = t.etc_file(FILE).context("the setting saved")?;
    assert!(file.contains("responder = true"), "{file}");
    wait_running(&m, true).await?;
    // An ibping responder on each InfiniBand port, handed the port's umad device (the
    // stand-in exits at once without descriptor 3).
    let ib_ports = rdma_managerd::kernel::Host::umad_ports(&t.sim).await?.len();
    assert!(
        ib_ports >= 2,
        "the demo host's InfiniBand ports: {ib_ports}"
    );
    wait_ibping_responders(ib_ports).await?;
    // A device that goes takes its responders with it; one that comes (again) is served
    // without the responder being enabled again.
    let mlx5_0 = t
        .sim
        .spec()
        .devices
        .iter()
        .find(|d| d.name == "mlx5_0")
        .cloned()
        .context("mlx5_0 in the demo host")?;
    t.sim.unplug("mlx5_0")?;
    let without = rdma_managerd::kernel::Host::umad_ports(&t.sim).await?.len();
    assert!(without < ib_ports, "mlx5_0 has an InfiniBand port");
    wait_ibping_responders(without).await?;
    t.sim.plug(mlx5_0)?;
    wait_ibping_responders(ib_ports).await?;
    wait_running(&m, true).await?;
    // A restart re-applies it before start-up ends.
    t.restart_daemon(|_| {}).await?;
    let m = manager(&t).await?;
    assert!(m.get_link_responder().await?.enabled);
    wait_running(&m, true).await?;
    m.set_link_responder(false).await?;
    wait_running(&m, false).await?;
    let r = m.get_link_responder().await?;
    assert!(!r.enabled, "{r:?}");
    assert!(t
        .etc_file(FILE)
        .is_some_and(|f| f.contains("responder = false")));
    Ok(())
}

/// Waits until this test's daemon runs `n` ibping responders.
async fn wait_ibping_responders(n: usize) -> Result<()> {
    let t0 = Instant::now();
    while ibping_responders() != n {
        anyhow::ensure!(
            t0.elapsed() < Duration::from_secs(10),
            "{} ibping responders, not {n}",
            ibping_responders()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// The ibping responders this test's daemon (in this process) runs now.
fn ibping_responders() -> usize {
    let me = std::process::id();
    rdma_manager_tests::procfs::pids()
        .unwrap_or_default()
        .into_iter()
        .filter(|&p| rdma_manager_tests::procfs::parent_pid(p) == Some(me))
        .filter(|&p| {
            rdma_manager_tests::procfs::cmdline(p).get(1..)
                == Some(&["ibping", "--serve", "--fd", "3"].map(String::from)[..])
        })
        .count()
}

async fn wait_running(m: &ManagerProxy<'static>, running: bool) -> Result<()> {
    let t0 = Instant::now();
    loop {
        let r = m.get_link_responder().await?;
        if r.running == running {
            return Ok(());
        }
        anyhow::ensure!(t0.elapsed() < Duration::from_secs(10), "responder: {r:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The declarative state's `responder`: shown by GetState, set by ApplyState (under the
/// test-link action, which an unprivileged caller lacks), remembered like SetLinkResponder,
/// and a document that says what holds changes nothing.
#[tokio::test(flavor = "multi_thread")]
async fn the_state_document_turns_the_responder_on_and_off() -> Result<()> {
    require_harness!();
    let t = setup(2).await?;
    let m = manager(&t).await?;
    let shown = m.get_state("yaml").await?;
    assert!(shown.contains("responder:\n  enabled: false"), "{shown}");
    let on = "responder: {enabled: true}\n";
    let user = Credentials::test_user(false);
    let r = t
        .manager(Some(&user), "ApplyState", &["su", on, "0"])
        .await?;
    assert!(
        matches!(&r, Reply::Err(name, text) if name == "NotAuthorized" && text.contains("test-link")),
        "{r:?}"
    );
    assert!(t.etc_file(FILE).is_none(), "nothing written");
    let diff = m.diff_state(on).await?;
    let (changes, _) = m.apply_state(on, 0).await?;
    assert_eq!(changes, diff);
    assert_eq!(
        changes.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(),
        ["responder.enabled"]
    );
    assert!(changes[0].action.ends_with(".test-link"), "{changes:?}");
    assert!(m.get_link_responder().await?.enabled);
    assert!(t
        .etc_file(FILE)
        .is_some_and(|f| f.contains("responder = true")));
    wait_running(&m, true).await?;
    assert_eq!(m.apply_state(on, 0).await?.0, vec![]);
    let shown = m.get_state("yaml").await?;
    assert!(shown.contains("responder:\n  enabled: true"), "{shown}");
    assert_eq!(m.apply_state(&shown, 0).await?.0, vec![]);
    let (changes, _) = m.apply_state("responder: {enabled: false}\n", 0).await?;
    assert_eq!(changes.len(), 1, "{changes:?}");
    wait_running(&m, false).await?;
    assert!(!m.get_link_responder().await?.enabled);
    Ok(())
}
