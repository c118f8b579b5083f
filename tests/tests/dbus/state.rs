//! The declarative state over D-Bus, as root under the real polkitd on the simulated demo
//! host with host setup's files and the stand-ins of systemd and firewalld: GetState's
//! document applied back changes nothing, an applied state shows in GetState and a second
//! apply is empty, DiffState changes nothing, a failing step rolls the earlier ones back, a
//! timed apply is undone at its deadline unless confirmed, bad documents are refused with
//! their key path and nothing changed, and the state directory is applied at start.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::bad_input::{case, refused};
use anyhow::{Context, Result};
use rdma_manager_dbus::types::StateChange;
use rdma_manager_dbus::ROOT_PATH;
use rdma_manager_dbus::{ManagerProxy, PendingChangeProxy};
use rdma_manager_tests::bus::PolkitConfig;
use rdma_manager_tests::service::{tree_files, HostServices, SystemSetup};
use rdma_manager_tests::standins::StandInUnit;
use rdma_managerd::kernel::prelude::*;
use rdma_managerd::kernel::sim::{fixtures, SimHost, SimOp};
use rdma_managerd::model::{Errno, RoceMode};

/// The state this file applies: one setting of each kind the simulated host can show.
const WANTED: &str = "\
soft-links:
  - name: rxe1
    type: rxe
    netdev: enp59s0f1np1
roce:
  - device: mlx5_1
    port: 1
    mode: v1
    tos: 106
modules:
  rdma:
    rds_rdma: true
memlock:
  soft: unlimited
  hard: unlimited
nfs-rdma:
  enabled: true
  port: 20049
";

/// The usual host: nfs-server and opensm installed and stopped, the module units static;
/// started units act on the simulated kernel.
fn usual(s: &HostServices, kernel: SimHost) {
    s.systemd
        .add_unit("nfs-server.service", StandInUnit::service());
    s.systemd.add_unit("opensm.service", StandInUnit::service());
    for set in ["rdma", "infiniband"] {
        s.systemd.add_unit(
            &format!("rdma-load-modules@{set}.service"),
            StandInUnit::service().static_unit(),
        );
    }
    s.systemd
        .set_on_started(std::sync::Arc::new(move |unit: String| {
            let kernel = kernel.clone();
            Box::pin(async move {
                rdma_managerd::engine::simulate_unit_started(&kernel, &unit)
                    .await
                    .expect("the unit acts on the simulated host");
            })
        }));
}

/// The demo host; `before` runs on its tree before the daemon starts.
async fn setup_with(before: impl FnOnce(&SimHost)) -> Result<(SystemSetup, HostServices)> {
    let sim = SimHost::new(fixtures::demo_host())?;
    before(&sim);
    let kernel = sim.clone();
    SystemSetup::with_host_services(sim, move |s| usual(s, kernel)).await
}

async fn setup() -> Result<(SystemSetup, HostServices)> {
    setup_with(|_| {}).await
}

async fn manager(t: &SystemSetup) -> Result<ManagerProxy<'static>> {
    let conn = t.bus.connect().await?;
    Ok(ManagerProxy::new(&conn).await?)
}

/// The files under /etc and what the kernel has that a state sets: what must stay as it
/// was when nothing is to change.
async fn snapshot(t: &SystemSetup) -> (BTreeMap<String, String>, Vec<String>, String) {
    let mode = t.sim.roce_mode("mlx5_1", 1).await.ok();
    let tos = t.sim.roce_tos("mlx5_1", 1).await.ok();
    (
        tree_files(t.sim.root(), &["etc"])
            .into_iter()
            .map(|(p, b)| (p, String::from_utf8_lossy(&b).into_owned()))
            .collect(),
        t.device_names(),
        format!("{mode:?} {tos:?}"),
    )
}

/// The D-Bus error's short name and message.
fn error_of(e: zbus::Error) -> (String, String) {
    match e {
        zbus::Error::MethodError(name, msg, _) => (
            name.as_str()
                .rsplit('.')
                .next()
                .unwrap_or_default()
                .to_string(),
            msg.unwrap_or_default(),
        ),
        other => (format!("{other:?}"), String::new()),
    }
}

fn paths(changes: &[StateChange]) -> Vec<&str> {
    changes.iter().map(|c| c.path.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_shown_state_applied_back_changes_nothing() -> Result<()> {
    require_harness!();
    let (t, _s) = setup().await?;
    let m = manager(&t).await?;
    let yaml = m.get_state("yaml").await?;
    for section in [
        "soft-links:",
        "roce:",
        "interfaces:",
        "naming:",
        "modules:",
        "memlock:",
        "nfs-rdma:",
        "subnet-manager:",
    ] {
        assert!(yaml.contains(section), "{section}:\n{yaml}");
    }
    assert!(yaml.contains("name: rxe0"), "{yaml}");
    assert!(yaml.contains("device: mlx5_1"), "{yaml}");
    let json: serde_json::Value = serde_json::from_str(&m.get_state("json").await?)?;
    assert!(
        json["interfaces"].as_array().is_some_and(|l| !l.is_empty()),
        "{json}"
    );
    let before = snapshot(&t).await;
    let writes = t.sim.writes();
    assert_eq!(m.diff_state(&yaml).await?, vec![]);
    let (changes, pending) = m.apply_state(&yaml, 0).await?;
    assert_eq!(changes, vec![]);
    assert_eq!(pending.as_str(), "/");
    // The JSON form is a document too.
    let (changes, _) = m.apply_state(&json.to_string(), 0).await?;
    assert_eq!(changes, vec![]);
    assert_eq!(snapshot(&t).await, before, "nothing written");
    assert_eq!(t.sim.writes(), writes, "nothing asked of the host");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn an_applied_state_shows_and_a_second_apply_changes_nothing() -> Result<()> {
    require_harness!();
    let (t, _s) = setup().await?;
    let m = manager(&t).await?;
    let before = snapshot(&t).await;
    // DiffState lists exactly what differs, and changes nothing.
    let diff = m.diff_state(WANTED).await?;
    assert_eq!(
        paths(&diff),
        [
            "soft-links[rxe1]",
            "roce[mlx5_1/1].mode",
            "roce[mlx5_1/1].tos",
            "modules.rdma.rds_rdma",
            "memlock",
            "nfs-rdma",
        ],
        "{diff:?}"
    );
    let tos = diff
        .iter()
        .find(|c| c.path.ends_with(".tos"))
        .context("tos")?;
    assert_eq!(
        (tos.op.as_str(), tos.current.as_str(), tos.wanted.as_str()),
        ("set", "0", "106")
    );
    assert_eq!(tos.action, "org.rdmamanager.rdmamanager1.manage-roce");
    assert_eq!(snapshot(&t).await, before, "DiffState changed something");

    let (changes, pending) = m.apply_state(WANTED, 0).await?;
    assert_eq!(changes, diff);
    assert_eq!(pending.as_str(), "/");
    assert!(t.device_names().contains(&"rxe1".to_string()));
    assert_eq!(t.sim.roce_mode("mlx5_1", 1).await.ok(), Some(RoceMode::V1));
    assert_eq!(t.sim.roce_tos("mlx5_1", 1).await.ok(), Some(106));
    let limits = t
        .etc_file("/etc/security/limits.d/zz-rdma-manager.conf")
        .context("limits file")?;
    assert!(limits.contains("unlimited"), "{limits}");
    assert!(t
        .etc_file("/etc/nfs.conf.d/zz-rdma-manager.conf")
        .is_some_and(|f| f.contains("rdma=y")));

    let shown = m.get_state("yaml").await?;
    assert!(shown.contains("name: rxe1"), "{shown}");
    assert!(shown.contains("tos: 106"), "{shown}");
    assert!(shown.contains("rds_rdma: true"), "{shown}");
    // Applying it again, or what GetState shows now, changes nothing and writes nothing.
    let after = snapshot(&t).await;
    assert_eq!(m.apply_state(WANTED, 0).await?.0, vec![]);
    assert_eq!(m.apply_state(&shown, 0).await?.0, vec![]);
    assert_eq!(snapshot(&t).await, after);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_step_rolls_back_the_steps_before_it() -> Result<()> {
    require_harness!();
    let (t, _s) = setup().await?;
    let m = manager(&t).await?;
    let before = snapshot(&t).await;
    // The soft link is made first, then the RoCE mode, whose configfs write fails.
    t.sim.fail_next(SimOp::RoceWrite, Errno::EIO);
    let e = m
        .apply_state(WANTED, 0)
        .await
        .expect_err("the RoCE step fails");
    let (name, msg) = error_of(e);
    assert_eq!(name, "Failed", "{msg}");
    assert!(msg.contains("roce[mlx5_1/1].mode"), "{msg}");
    assert!(msg.contains("rolled back"), "{msg}");
    // The link was made and removed again: soft-links.toml exists now, remembering none.
    let mut after = snapshot(&t).await;
    let links = after
        .0
        .remove("etc/rdma-manager/soft-links.toml")
        .unwrap_or_default();
    assert!(!links.contains("rxe1"), "{links}");
    assert_eq!(after, before, "everything undone");
    assert!(!t.device_names().contains(&"rxe1".to_string()));
    // Nothing failed is left behind: the same state applies whole now.
    assert_eq!(m.apply_state(WANTED, 0).await?.0.len(), 6);
    Ok(())
}

/// Waits until `f` holds, up to `secs`.
async fn eventually<F, Fut>(what: &str, secs: u64, f: F) -> Result<()>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f().await {
        anyhow::ensure!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_timed_apply_is_undone_at_its_deadline_unless_confirmed() -> Result<()> {
    require_harness!();
    let (t, _s) = setup().await?;
    let conn = t.bus.connect().await?;
    let m = ManagerProxy::new(&conn).await?;
    let doc = "roce: [{device: mlx5_1, port: 1, tos: 32}]";

    // Not confirmed: the daemon runs the undo steps when the deadline passes.
    let (changes, path) = m.apply_state(doc, 10).await?;
    assert_eq!(paths(&changes), ["roce[mlx5_1/1].tos"]);
    assert_ne!(path.as_str(), "/");
    assert_eq!(t.sim.roce_tos("mlx5_1", 1).await.ok(), Some(32));
    let p = PendingChangeProxy::builder(&conn)
        .path(path.clone())?
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?;
    assert!(p.description().await?.contains("roce[mlx5_1/1].tos"));
    eventually("the rollback at the deadline", 20, || async {
        t.sim.roce_tos("mlx5_1", 1).await.ok() == Some(0)
    })
    .await?;
    assert!(p.description().await.is_err(), "the object is gone");

    // Confirmed: it stays.
    let (_, path) = m.apply_state(doc, 10).await?;
    let p = PendingChangeProxy::builder(&conn)
        .path(path)?
        .build()
        .await?;
    p.confirm().await?;
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_eq!(t.sim.roce_tos("mlx5_1", 1).await.ok(), Some(32));

    // Rolled back by hand.
    let (_, path) = m
        .apply_state("roce: [{device: mlx5_1, port: 1, tos: 64}]", 60)
        .await?;
    let p = PendingChangeProxy::builder(&conn)
        .path(path)?
        .build()
        .await?;
    p.roll_back().await?;
    assert_eq!(t.sim.roce_tos("mlx5_1", 1).await.ok(), Some(32));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_documents_are_refused_with_their_path_and_nothing_changes() -> Result<()> {
    require_harness!();
    let (t, _s) = setup().await?;
    let m = manager(&t).await?;
    let before = snapshot(&t).await;
    for (doc, want, says) in [
        // An unknown key.
        (
            "roce:\n  - device: mlx5_1\n    port: 1\n    tso: 3\n",
            "InvalidArgument",
            "line 4",
        ),
        // A wrong type.
        (
            "roce:\n  - device: mlx5_1\n    port: 1\n    tos: high\n",
            "InvalidArgument",
            "roce[0].tos",
        ),
        // Two entries for one port.
        (
            "roce:\n  - {device: mlx5_1, port: 1, tos: 3}\n  - {device: mlx5_1, port: 1, tos: 4}\n",
            "InvalidArgument",
            "roce[1]",
        ),
        // A device the host lacks.
        (
            "soft-links: [{name: rxe1, type: rxe, netdev: enp59s0f1np1}]\nroce:\n  - {device: mlx5_9, port: 1, tos: 3}\n",
            "NotFound",
            "mlx5_9",
        ),
        // A GUID no device has.
        (
            "roce:\n  - {device: \"0002:c903:0031:7f40\", port: 1, tos: 3}\n",
            "NotFound",
            "roce[0].device",
        ),
        // A QoS profile on a port whose netdev has no DCB (rxe0 over a plain Ethernet netdev).
        (
            "roce:\n  - {device: rxe0, port: 1, qos: {trust: pcp, pfc: [3]}}\n",
            "NotFound",
            "roce[0].qos",
        ),
        // A QoS profile against the rules: DSCP entries while trusting PCP.
        (
            "roce:\n  - {device: mlx5_1, port: 1, qos: {trust: pcp, pfc: [3], dscp: {\"26\": 3}}}\n",
            "InvalidArgument",
            "roce[0].qos",
        ),
    ] {
        for apply in [false, true] {
            let r = if apply {
                m.apply_state(doc, 0).await.map(drop)
            } else {
                m.diff_state(doc).await.map(drop)
            };
            let (name, msg) = error_of(r.expect_err(doc));
            assert_eq!(name, want, "{doc}: {msg}");
            assert!(msg.contains(says), "{doc}: {msg}");
        }
    }
    let (name, msg) = error_of(m.get_state("toml").await.expect_err("toml"));
    assert_eq!(name, "InvalidArgument", "{msg}");
    let (name, msg) = error_of(m.apply_state(WANTED, 5).await.expect_err("5 s"));
    assert_eq!(name, "InvalidArgument", "{msg}");
    assert_eq!(snapshot(&t).await, before, "nothing changed");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_state_directory_is_applied_at_start() -> Result<()> {
    require_harness!();
    let (t, _s) = setup_with(|sim| {
        let dir = sim.root().join("etc/rdma-manager/state.d");
        std::fs::create_dir_all(&dir).expect("state.d");
        let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).expect(name);
        write(
            "10-roce.yml",
            "roce: [{device: mlx5_1, port: 1, mode: v1, tos: 96}]\n",
        );
        write("20-bad.yml", "roce: [{device: mlx5_1, port: 1, tso: 3}]\n");
        write(
            "30-same.yml",
            "roce: [{device: mlx5_1, port: 1, tos: 96}]\n",
        );
        write("notes.txt", "not a state\n");
    })
    .await?;
    let m = manager(&t).await?;
    let mut rows = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while rows.is_empty() {
        anyhow::ensure!(Instant::now() < deadline, "StateDirectory stayed empty");
        tokio::time::sleep(Duration::from_millis(100)).await;
        rows = m.state_directory().await?;
    }
    let outcomes: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| {
            (
                r.file.rsplit('/').next().unwrap_or_default().to_string(),
                r.outcome.clone(),
                r.summary.clone(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("10-roce.yml".into(), "applied".into(), "2 changes".into()),
            ("20-bad.yml".into(), "refused".into(), "no change".into()),
            ("30-same.yml".into(), "unchanged".into(), "no change".into()),
        ],
        "{rows:?}"
    );
    assert!(rows[1].message.contains("tso"), "{rows:?}");
    assert_eq!(t.sim.roce_mode("mlx5_1", 1).await.ok(), Some(RoceMode::V1));
    assert_eq!(t.sim.roce_tos("mlx5_1", 1).await.ok(), Some(96));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn ipoib_children_their_settings_and_the_subnet_manager() -> Result<()> {
    require_harness!();
    let (t, _s) = setup().await?;
    let m = manager(&t).await?;
    let doc = "\
interfaces:
  - name: ib0.8005
    type: infiniband
    mtu: 2044
    infiniband:
      base-iface: ib0
      pkey: \"0x8005\"
      mode: datagram
      umcast: true
subnet-manager:
  enabled: true
  running: true
";
    let diff = m.diff_state(doc).await?;
    let (changes, _) = m.apply_state(doc, 0).await?;
    assert_eq!(changes, diff);
    assert!(
        paths(&changes).contains(&"interfaces[ib0.8005]")
            && paths(&changes).contains(&"subnet-manager.running"),
        "{changes:?}"
    );
    let child = t
        .sim
        .spec()
        .netdevs
        .into_iter()
        .find(|n| n.name == "ib0.8005")
        .context("the child exists")?;
    assert_eq!(child.mtu, 2044);
    let shown = m.get_state("yaml").await?;
    assert!(shown.contains("name: ib0.8005"), "{shown}");
    assert_eq!(m.apply_state(doc, 0).await?.0, vec![]);
    assert_eq!(m.apply_state(&shown, 0).await?.0, vec![]);

    // `state: absent` deletes the child.
    let gone = "interfaces: [{name: ib0.8005, type: infiniband, state: absent}]";
    let (changes, _) = m.apply_state(gone, 0).await?;
    assert_eq!(paths(&changes), ["interfaces[ib0.8005]"]);
    assert_eq!(changes[0].op, "remove");
    assert!(!t.sim.spec().netdevs.iter().any(|n| n.name == "ib0.8005"));
    assert_eq!(m.apply_state(gone, 0).await?.0, vec![]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_setting_that_does_not_hold_after_the_steps_rolls_everything_back() -> Result<()> {
    require_harness!();
    // A site's limits file read after the daemon's: what the daemon writes does not take
    // effect, so the read-back check fails.
    let (t, _s) = setup_with(|sim| {
        let dir = sim.root().join("etc/security/limits.d");
        std::fs::create_dir_all(&dir).expect("limits.d");
        std::fs::write(
            dir.join("zzzz-site.conf"),
            "@rdma soft memlock 1024\n@rdma hard memlock 1024\n",
        )
        .expect("site limits");
    })
    .await?;
    let m = manager(&t).await?;
    let doc = "\
roce: [{device: mlx5_1, port: 1, tos: 40}]
memlock: {soft: unlimited, hard: unlimited}
";
    let shown = m.get_state("yaml").await?;
    assert!(shown.contains("1024"), "{shown}");
    let e = m
        .apply_state(doc, 0)
        .await
        .expect_err("the limits do not hold");
    let (name, msg) = error_of(e);
    assert_eq!(name, "Failed", "{msg}");
    assert!(msg.contains("verification failed"), "{msg}");
    assert!(msg.contains("memlock"), "{msg}");
    assert!(msg.contains("rolled back"), "{msg}");
    // The RoCE step, which held, was undone too.
    assert_eq!(t.sim.roce_tos("mlx5_1", 1).await.ok(), Some(0));
    assert_eq!(m.get_state("yaml").await?, shown);
    Ok(())
}

/// The lossless-RoCE recipe as the state's `roce[].qos`.
const QOS: &str = "\
roce:
  - device: mlx5_1
    port: 1
    tos: 106
    qos:
      trust: dscp
      pfc: [3]
      ets: {bandwidth: [50, 50, 0, 0, 0, 0, 0, 0], prio-tc: [0, 0, 0, 1, 0, 0, 0, 0]}
      dscp: {\"26\": 3}
      traffic-class: 106
      ecn: [3]
";

#[tokio::test(flavor = "multi_thread")]
async fn a_qos_profile_in_the_state_is_applied_shown_and_rolled_back() -> Result<()> {
    require_harness!();
    let (t, _s) = setup().await?;
    let m = manager(&t).await?;
    const NETDEV: &str = "enp59s0f1np1";
    let dcb_before = t.sim.dcb_read(NETDEV).await?;
    let shown = m.get_state("yaml").await?;
    assert!(
        shown.contains("qos:") && shown.contains("trust: pcp"),
        "{shown}"
    );

    // A failing DCB write after the ToS: both undone, nothing remembered.
    let files_before = snapshot(&t).await;
    t.sim.fail_next(SimOp::QosWrite, Errno::EIO);
    let (name, msg) = error_of(
        m.apply_state(QOS, 0)
            .await
            .expect_err("the DCB write fails"),
    );
    assert_eq!(name, "Failed", "{msg}");
    assert!(
        msg.contains("roce[mlx5_1/1].qos") && msg.contains("rolled back"),
        "{msg}"
    );
    assert_eq!(t.sim.dcb_read(NETDEV).await?, dcb_before);
    // The ToS was set and set back: roce.toml now remembers the ToS the port had.
    let mut after = snapshot(&t).await;
    let roce = after
        .0
        .remove("etc/rdma-manager/roce.toml")
        .unwrap_or_default();
    assert!(roce.contains("tos = 0"), "{roce}");
    assert_eq!(after, files_before, "everything undone");
    assert!(t
        .etc_file("/etc/rdma-manager/qos.toml")
        .is_none_or(|f| !f.contains("26")));

    let diff = m.diff_state(QOS).await?;
    assert_eq!(paths(&diff), ["roce[mlx5_1/1].tos", "roce[mlx5_1/1].qos"]);
    let qos = &diff[1];
    assert_eq!(qos.action, "org.rdmamanager.rdmamanager1.manage-adapter");
    assert_eq!(
        qos.wanted,
        "trust=dscp pfc=3 ets=50,50,0,0,0,0,0,0/0,0,0,1,0,0,0,0 dscp=26:3 traffic-class=106 ecn=3"
    );
    assert_eq!(m.apply_state(QOS, 0).await?.0, diff);
    let dcb = t.sim.dcb_read(NETDEV).await?;
    assert_eq!(dcb.pfc.map(|p| p.pfc_en), Some(1 << 3));
    assert!(t
        .etc_file("/etc/rdma-manager/qos.toml")
        .is_some_and(|f| f.contains("26")));
    let shown = m.get_state("yaml").await?;
    assert!(
        shown.contains("trust: dscp") && shown.contains("traffic-class: 106"),
        "{shown}"
    );
    // Applied again, or as shown now: nothing to do.
    assert_eq!(m.apply_state(QOS, 0).await?.0, vec![]);
    assert_eq!(m.apply_state(&shown, 0).await?.0, vec![]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn state_methods_refuse_bad_input_and_change_nothing() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let long = format!(
        "soft-links: [{{name: {}, type: rxe, netdev: eth0}}]",
        "x".repeat(300)
    );
    let huge_key = format!("{}: 1", "k".repeat(5000));
    let mut cases = Vec::new();
    for (bad, want) in [
        ("[1, 2]", "InvalidArgument"),
        ("just text", "InvalidArgument"),
        ("roce: {", "InvalidArgument"),
        ("roce: [{device: mlx5_1, port: 1, tos: 256}]", "InvalidArgument"),
        ("roce: [{device: mlx5_1, port: 1, mode: v3}]", "InvalidArgument"),
        ("roce: [{device: mlx5_1, port: 9, tos: 3}]", "NotFound"),
        ("roce: [{device: \"../mlx5_1\", port: 1, tos: 3}]", "InvalidArgument"),
        ("soft-links: [{name: \"a/b\", type: rxe, netdev: eth0}]", "InvalidArgument"),
        ("soft-links: [{name: rxe1, type: roce, netdev: eth0}]", "InvalidArgument"),
        ("soft-links: [{name: rxe1, type: rxe}]", "InvalidArgument"),
        ("interfaces: [{name: ib0, type: infiniband, mtu: 70000}]", "InvalidArgument"),
        ("interfaces: [{name: ib0.0000, type: infiniband, infiniband: {base-iface: ib0, pkey: \"0x0000\"}}]", "InvalidArgument"),
        ("memlock: {soft: lots, hard: unlimited}", "InvalidArgument"),
        ("memlock: {soft: unlimited, hard: 1024}", "InvalidArgument"),
        ("naming: {rdma-policy: NAME_ANYTHING}", "InvalidArgument"),
        ("modules: {\"../x\": {ib_ipoib: true}}", "InvalidArgument"),
        (long.as_str(), "InvalidArgument"),
        (huge_key.as_str(), "InvalidArgument"),
    ] {
        cases.push(case(ROOT_PATH, "", "DiffState", &["s", bad], want));
        cases.push(case(ROOT_PATH, "", "ApplyState", &["su", bad, "0"], want));
    }
    // A netdev is not part of the state: the difference shows the link to add, and the apply
    // is refused by its step, the first, with nothing to undo.
    cases.push(case(
        ROOT_PATH,
        "",
        "ApplyState",
        &[
            "su",
            "soft-links: [{name: rxe1, type: rxe, netdev: nosuch0}]",
            "0",
        ],
        "NotFound",
    ));
    for timeout in ["1", "9", "3601"] {
        cases.push(case(
            ROOT_PATH,
            "",
            "ApplyState",
            &["su", "roce: [{device: mlx5_1, port: 1, tos: 3}]", timeout],
            "InvalidArgument",
        ));
    }
    // Health expectations: refused with their key path, nothing checked.
    for bad in [
        "health: {ports: [{min-rate-gbps: -5}]}",
        "health: {ports: [{device: mlx5_0, port: 0}]}",
        "health: {ports: [{state: UP}]}",
        "health: {portz: []}",
        "health: {error-counters: {window-seconds: 600}}",
        "roce: []",
        long.as_str(),
    ] {
        cases.push(case(
            ROOT_PATH,
            "",
            "CheckHealth",
            &["s", bad],
            "InvalidArgument",
        ));
    }
    for format in ["xml", "YAML\n", "../yaml"] {
        cases.push(case(
            ROOT_PATH,
            "",
            "GetState",
            &["s", format],
            "InvalidArgument",
        ));
    }
    refused(&t, &cases).await
}
