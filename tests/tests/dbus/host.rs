//! Host setup over D-Bus: the Host object driven with busctl as root under the real polkitd,
//! on the simulated demo host with rdma-core's, Debian's limits and nfs.conf files, and with
//! the stand-ins of systemd and firewalld on the same private system bus (the daemon reaches
//! them through its own `BusSystemServices`, as on a real host). Each change is checked in
//! the file bytes, the properties and the stand-ins' call logs; each refusal leaves every file
//! under /etc as it was.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use rdma_manager_dbus::{BUS_NAME, ERROR_PREFIX, HOST_PATH};
use rdma_manager_tests::bus::Reply;
use rdma_manager_tests::service::{tree_files, HostServices, SystemSetup};
use rdma_manager_tests::standins::StandInUnit;
use rdma_managerd::kernel::sim::{fixtures, SimHost};
use rdma_managerd::model::{PhysState, PortState};
use serde_json::Value;

const IFACE: &str = "org.rdmamanager.RdmaManager1.Host";

/// The stand-in systemd's units act on the simulated kernel as real ones do:
/// rdma-load-modules@ loads its list, nfs-server has nfsd load the RDMA transport.
async fn setup(prepare: impl FnOnce(&HostServices)) -> Result<(SystemSetup, HostServices)> {
    let sim = SimHost::new(fixtures::demo_host())?;
    let kernel = sim.clone();
    SystemSetup::with_host_services(sim, move |s| {
        prepare(s);
        s.systemd
            .set_on_started(std::sync::Arc::new(move |unit: String| {
                let kernel = kernel.clone();
                Box::pin(async move {
                    rdma_managerd::engine::simulate_unit_started(&kernel, &unit)
                        .await
                        .expect("the unit acts on the simulated host");
                })
            }));
    })
    .await
}

/// As [`setup`], with a systemd whose units do nothing to the kernel (as when a listed module
/// is not in this kernel, or nfsd cannot open its RDMA listener).
async fn setup_inert(prepare: impl FnOnce(&HostServices)) -> Result<(SystemSetup, HostServices)> {
    let sim = SimHost::new(fixtures::demo_host())?;
    SystemSetup::with_host_services(sim, prepare).await
}

/// The usual host: nfs-server and opensm installed and stopped, firewalld running.
fn usual(s: &HostServices) {
    s.systemd
        .add_unit("nfs-server.service", StandInUnit::service());
    s.systemd.add_unit("opensm.service", StandInUnit::service());
    for set in ["rdma", "infiniband"] {
        s.systemd.add_unit(
            &format!("rdma-load-modules@{set}.service"),
            StandInUnit::service().static_unit(),
        );
    }
}

/// A property as busctl's JSON gives it.
async fn prop(t: &SystemSetup, name: &str) -> Result<Value> {
    let out = t
        .bus
        .busctl()
        .args([
            "--json=short",
            "get-property",
            BUS_NAME,
            HOST_PATH,
            IFACE,
            name,
        ])
        .output()
        .context("busctl get-property")?;
    if !out.status.success() {
        bail!("{name}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let v: Value = serde_json::from_slice(&out.stdout)?;
    Ok(v["data"].clone())
}

/// A Host method as root: its JSON reply data, or (error name without prefix, message).
async fn call(
    t: &SystemSetup,
    method: &str,
    args: &[&str],
) -> Result<Result<Value, (String, String)>> {
    let out = t
        .bus
        .busctl()
        .env("SYSTEMD_LOG_LEVEL", "debug")
        .args([
            "--json=short",
            "--timeout=10",
            "--",
            "call",
            BUS_NAME,
            HOST_PATH,
            IFACE,
            method,
        ])
        .args(args)
        .output()
        .context("busctl call")?;
    if out.status.success() {
        let text = String::from_utf8_lossy(&out.stdout);
        if text.trim().is_empty() {
            return Ok(Ok(Value::Null));
        }
        let v: Value = serde_json::from_str(&text)?;
        return Ok(Ok(v["data"][0].clone()));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let name = stderr
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("error-name="))
        .find(|n| *n != "n/a")
        .with_context(|| format!("no error name in:\n{stderr}"))?;
    let message = stderr
        .lines()
        .find_map(|l| l.strip_prefix("Call failed: "))
        .unwrap_or_default();
    let short = name
        .strip_prefix(ERROR_PREFIX)
        .and_then(|n| n.strip_prefix('.'))
        .unwrap_or(name);
    Ok(Err((short.to_string(), message.to_string())))
}

fn etc(t: &SystemSetup) -> BTreeMap<String, Vec<u8>> {
    tree_files(t.sim.root(), &["etc"])
}

/// (step, outcome) pairs of a steps reply.
fn outcomes(v: &Value) -> Vec<(String, String)> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|s| {
                    (
                        s[0].as_str().unwrap_or("").into(),
                        s[1].as_str().unwrap_or("").into(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn pairs(want: &[(&str, &str)]) -> Vec<(String, String)> {
    want.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The Modules row (enabled, loaded) of a module of a set.
async fn module(t: &SystemSetup, set: &str, name: &str) -> Result<Option<(bool, bool)>> {
    let v = prop(t, "Modules").await?;
    Ok(v.as_array().and_then(|a| {
        a.iter().find(|r| r[0] == set && r[1] == name).map(|r| {
            (
                r[3].as_bool().unwrap_or(false),
                r[4].as_bool().unwrap_or(false),
            )
        })
    }))
}

#[tokio::test(flavor = "multi_thread")]
async fn modules_enable_disable_round_trip_and_apply() -> Result<()> {
    require_harness!();
    let (t, s) = setup(usual).await?;
    let original = t
        .etc_file("/etc/rdma/modules/rdma.conf")
        .context("rdma.conf")?;
    assert_eq!(module(&t, "rdma", "rds_rdma").await?, Some((false, false)));
    assert_eq!(module(&t, "rdma", "xprtrdma").await?, Some((true, true)));
    let v = prop(&t, "Modules").await?;
    let row = v
        .as_array()
        .and_then(|a| a.iter().find(|r| r[1] == "svcrdma"))
        .context("svcrdma row")?;
    assert_eq!(row[2], "NFS over RDMA server support");
    assert_eq!(row[5], 21);

    call(&t, "SetModuleEnabled", &["ssb", "rdma", "rds_rdma", "true"])
        .await?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let enabled = t
        .etc_file("/etc/rdma/modules/rdma.conf")
        .context("rdma.conf")?;
    assert_eq!(
        enabled,
        original.replace("# rds_rdma\n", "rds_rdma\n"),
        "only the module's line changes"
    );
    assert_eq!(module(&t, "rdma", "rds_rdma").await?, Some((true, false)));
    call(
        &t,
        "SetModuleEnabled",
        &["ssb", "rdma", "rds_rdma", "false"],
    )
    .await?
    .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    assert_eq!(
        t.etc_file("/etc/rdma/modules/rdma.conf").as_deref(),
        Some(original.as_str()),
        "disabling again gives the original bytes back"
    );

    let steps = call(&t, "ApplyModules", &["s", "rdma"])
        .await?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    assert_eq!(
        outcomes(&steps),
        pairs(&[("restart", "done"), ("modules", "done")])
    );
    // What "done" says is what the Host object shows: every module the list enables is
    // loaded now (ib_srpt among them, which read "not loaded" after a done restart).
    let rows = prop(&t, "Modules").await?;
    let not_loaded: Vec<&Value> = rows
        .as_array()
        .context("Modules")?
        .iter()
        .filter(|r| r[0] == "rdma" && r[3] == true && r[4] != true)
        .collect();
    assert!(not_loaded.is_empty(), "{not_loaded:?}");
    // As the issue did it: ib_srpt enabled in infiniband.conf and that list applied.
    call(
        &t,
        "SetModuleEnabled",
        &["ssb", "infiniband", "ib_srpt", "true"],
    )
    .await?
    .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    assert_eq!(
        module(&t, "infiniband", "ib_srpt").await?,
        Some((true, false))
    );
    let steps = call(&t, "ApplyModules", &["s", "infiniband"])
        .await?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    assert_eq!(
        outcomes(&steps),
        pairs(&[("restart", "done"), ("modules", "done")])
    );
    assert_eq!(
        module(&t, "infiniband", "ib_srpt").await?,
        Some((true, true))
    );
    assert!(
        s.systemd
            .calls()
            .iter()
            .any(|c| c.contains("RestartUnit") && c.contains("rdma-load-modules@rdma.service")),
        "{:?}",
        s.systemd.calls()
    );
    assert_eq!(prop(&t, "ModulesUnit").await?, "active");

    let e = call(&t, "SetModuleEnabled", &["ssb", "opa", "ib_ipoib", "true"]).await?;
    match e {
        Err((name, msg)) => {
            assert_eq!(name, "NotFound");
            assert!(msg.contains("rdma-core"), "{msg}");
        }
        Ok(v) => bail!("absent set accepted: {v}"),
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn memlock_set_reset_and_override() -> Result<()> {
    require_harness!();
    let (t, _s) = setup(usual).await?;
    assert_eq!(prop(&t, "MemlockSoft").await?, "");
    assert_eq!(
        prop(&t, "MemlockManaged").await?,
        serde_json::json!(["", ""])
    );
    let notes = call(&t, "SetMemlockLimits", &["ss", "unlimited", "unlimited"])
        .await?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let file = t
        .etc_file("/etc/security/limits.d/zz-rdma-manager.conf")
        .context("daemon file")?;
    assert!(
        file.contains("@rdma soft memlock unlimited\n@rdma hard memlock unlimited\n"),
        "{file}"
    );
    assert!(notes.to_string().contains("login"), "{notes}");
    assert_eq!(prop(&t, "MemlockSoft").await?, "unlimited");
    assert_eq!(prop(&t, "MemlockHard").await?, "unlimited");
    assert_eq!(
        prop(&t, "MemlockManaged").await?,
        serde_json::json!(["unlimited", "unlimited"])
    );
    let origin = prop(&t, "MemlockOrigin").await?;
    assert_eq!(
        origin["soft"],
        "/etc/security/limits.d/zz-rdma-manager.conf:7"
    );

    // A group entry in a file read after the daemon's overrides it.
    let later = t.sim.root().join("etc/security/limits.d/zzz-site.conf");
    std::fs::write(&later, "@rdma hard memlock 1048576\n")?;
    let notes = call(&t, "SetMemlockLimits", &["ss", "65536", "unlimited"])
        .await?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let text = notes.to_string();
    assert!(text.contains("zzz-site.conf:1"), "{text}");
    assert_eq!(prop(&t, "MemlockSoft").await?, "65536");
    assert_eq!(prop(&t, "MemlockHard").await?, "1048576");
    std::fs::remove_file(&later)?;

    call(&t, "ResetMemlockLimits", &[])
        .await?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    assert_eq!(
        t.etc_file("/etc/security/limits.d/zz-rdma-manager.conf"),
        None
    );
    assert_eq!(prop(&t, "MemlockSoft").await?, "");
    assert_eq!(
        prop(&t, "MemlockManaged").await?,
        serde_json::json!(["", ""])
    );
    let notes = prop(&t, "MemlockNotes").await?.to_string();
    assert!(notes.contains("not set by the limits files"), "{notes}");
    // Nothing to remove is success.
    call(&t, "ResetMemlockLimits", &[])
        .await?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn nfs_rdma_enable_with_firewalld_and_disable() -> Result<()> {
    require_harness!();
    let (t, s) = setup(usual).await?;
    assert_eq!(prop(&t, "NfsRdma").await?, false);
    assert_eq!(prop(&t, "Firewalld").await?, true);
    // Let svcrdma be disabled first, so the modules step has something to do.
    call(&t, "SetModuleEnabled", &["ssb", "rdma", "svcrdma", "false"])
        .await?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let steps = call(&t, "SetNfsRdma", &["bq", "true", "0"])
        .await?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    assert_eq!(
        outcomes(&steps),
        pairs(&[
            ("nfs.conf", "done"),
            ("modules", "done"),
            ("firewall", "done"),
            ("nfs-server", "done"),
            ("nfs-server at boot", "done"),
            ("rdma listener", "done")
        ])
    );
    // The guide's server runs from boot, with its RDMA transport loaded.
    let server = prop(&t, "NfsServer").await?;
    assert!(server.to_string().contains("\"enabled\""), "{server}");
    assert_eq!(module(&t, "rdma", "svcrdma").await?, Some((true, true)));
    let dropin = t
        .etc_file("/etc/nfs.conf.d/zz-rdma-manager.conf")
        .context("drop-in")?;
    assert!(
        dropin.contains("[nfsd]\nrdma=y\nrdma-port=20049\n"),
        "{dropin}"
    );
    for permanent in [false, true] {
        let ports = s.firewalld.ports("public", permanent);
        for proto in ["tcp", "udp"] {
            assert!(
                ports.contains(&("20049".to_string(), proto.to_string())),
                "{permanent}: {ports:?}"
            );
        }
    }
    assert!(s
        .systemd
        .calls()
        .iter()
        .any(|c| c.contains("RestartUnit") && c.contains("nfs-server.service")));
    assert_eq!(prop(&t, "NfsRdma").await?, true);
    assert_eq!(prop(&t, "NfsRdmaPort").await?, 20049);
    assert_eq!(
        prop(&t, "NfsRdmaOrigin").await?["rdma"],
        "/etc/nfs.conf.d/zz-rdma-manager.conf:7"
    );
    assert_eq!(prop(&t, "NfsServer").await?[1], "active");
    assert_eq!(
        module(&t, "rdma", "svcrdma").await?.map(|m| m.0),
        Some(true)
    );

    // Again: nothing left to do but the restart.
    let steps = call(&t, "SetNfsRdma", &["bq", "true", "20049"])
        .await?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    assert_eq!(
        outcomes(&steps),
        pairs(&[
            ("nfs.conf", "unchanged"),
            ("modules", "unchanged"),
            ("firewall", "unchanged"),
            ("nfs-server", "done"),
            ("nfs-server at boot", "unchanged"),
            ("rdma listener", "done")
        ])
    );

    let steps = call(&t, "SetNfsRdma", &["bq", "false", "0"])
        .await?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    assert_eq!(
        outcomes(&steps),
        pairs(&[("nfs.conf", "done"), ("nfs-server", "done")])
    );
    assert!(steps.to_string().contains("stays open"), "{steps}");
    assert_eq!(t.etc_file("/etc/nfs.conf.d/zz-rdma-manager.conf"), None);
    assert_eq!(prop(&t, "NfsRdma").await?, false);
    assert_eq!(prop(&t, "NfsRdmaPort").await?, 0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn nfs_rdma_without_firewalld_and_with_a_failing_server() -> Result<()> {
    require_harness!();
    let (t, s) = setup(|s| {
        s.systemd.add_unit(
            "nfs-server.service",
            StandInUnit::service().failing("failed"),
        );
    })
    .await?;
    s.firewalld.stop().await?;
    let steps = call(&t, "SetNfsRdma", &["bq", "true", "20050"])
        .await?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    assert_eq!(
        outcomes(&steps),
        pairs(&[
            ("nfs.conf", "done"),
            ("modules", "unchanged"),
            ("firewall", "skipped"),
            ("nfs-server", "failed")
        ])
    );
    assert!(steps.to_string().contains("\\\"failed\\\""), "{steps}");
    assert!(s.firewalld.calls().iter().all(|c| !c.contains("addPort")));
    assert_eq!(prop(&t, "NfsRdmaPort").await?, 20050);
    assert_eq!(prop(&t, "Firewalld").await?, false);
    assert_eq!(prop(&t, "NfsServer").await?[1], "failed");

    // A drop-in that cannot be written: every later step is not run.
    t.sim.fail_next(
        rdma_managerd::kernel::sim::SimOp::WriteFile,
        rdma_managerd::model::Errno::EACCES,
    );
    let steps = call(&t, "SetNfsRdma", &["bq", "true", "20051"])
        .await?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    assert_eq!(
        outcomes(&steps),
        pairs(&[
            ("nfs.conf", "failed"),
            ("modules", "not-run"),
            ("firewall", "not-run"),
            ("nfs-server", "not-run")
        ])
    );
    assert_eq!(prop(&t, "NfsRdmaPort").await?, 20050);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn nfs_server_not_installed_is_skipped() -> Result<()> {
    require_harness!();
    let (t, _s) = setup(|_| {}).await?;
    assert_eq!(prop(&t, "NfsServer").await?[0], "not-found");
    let steps = call(&t, "SetNfsRdma", &["bq", "true", "0"])
        .await?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    assert_eq!(
        outcomes(&steps).last().map(|s| s.1.as_str()),
        Some("skipped")
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn opensm_start_stop_enable_and_not_installed() -> Result<()> {
    require_harness!();
    let (t, s) = setup(usual).await?;
    assert_eq!(
        prop(&t, "Opensm").await?,
        serde_json::json!(["loaded", "inactive", "disabled"])
    );
    for (method, args, want) in [
        (
            "StartSubnetManager",
            vec![],
            ["loaded", "active", "disabled"],
        ),
        (
            "SetSubnetManagerEnabled",
            vec!["b", "true"],
            ["loaded", "active", "enabled"],
        ),
        (
            "StopSubnetManager",
            vec![],
            ["loaded", "inactive", "enabled"],
        ),
        (
            "SetSubnetManagerEnabled",
            vec!["b", "false"],
            ["loaded", "inactive", "disabled"],
        ),
    ] {
        call(&t, method, &args)
            .await?
            .map_err(|e| anyhow::anyhow!("{method}: {e:?}"))?;
        assert_eq!(
            prop(&t, "Opensm").await?,
            serde_json::json!(want),
            "{method}"
        );
    }
    assert!(s.systemd.reloads() >= 2);

    s.systemd
        .add_unit("opensm.service", StandInUnit::service().failing("failed"));
    match call(&t, "StartSubnetManager", &[]).await? {
        Err((name, msg)) => {
            assert_eq!(name, "Failed");
            assert!(msg.contains("failed"), "{msg}");
        }
        Ok(v) => bail!("a failing start succeeded: {v}"),
    }

    let (t, _s) = setup(|_| {}).await?;
    for (method, args) in [
        ("StartSubnetManager", vec![]),
        ("StopSubnetManager", vec![]),
        ("SetSubnetManagerEnabled", vec!["b", "true"]),
    ] {
        match call(&t, method, &args).await? {
            Err((name, msg)) => {
                assert_eq!(name, "NotFound", "{method}");
                assert!(msg.contains("opensm"), "{msg}");
            }
            Ok(v) => bail!("{method} without opensm succeeded: {v}"),
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn subnet_manager_verdicts_follow_the_ports() -> Result<()> {
    require_harness!();
    let (t, _s) = setup(usual).await?;
    t.sim
        .set_port_state("mlx5_0", 1, PortState::Init, PhysState::LinkUp)?;
    t.sim.set_port_lids("mlx5_0", 1, 0, 0)?;
    let verdict = |v: &Value, port: &str| -> Option<(String, String)> {
        v.as_array()?.iter().find(|r| r[1] == port).map(|r| {
            (
                r[2].as_str().unwrap_or("").to_string(),
                r[4].as_str().unwrap_or("").to_string(),
            )
        })
    };
    let mut last = Value::Null;
    for _ in 0..50 {
        last = prop(&t, "SubnetManagers").await?;
        if verdict(&last, "mlx5_0/1") == Some(("INIT".into(), "stuck-init".into())) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        verdict(&last, "mlx5_0/1"),
        Some(("INIT".into(), "stuck-init".into())),
        "{last}"
    );
    t.sim
        .set_port_state("mlx5_0", 1, PortState::Active, PhysState::LinkUp)?;
    t.sim.set_port_lids("mlx5_0", 1, 7, 1)?;
    for _ in 0..50 {
        last = prop(&t, "SubnetManagers").await?;
        if verdict(&last, "mlx5_0/1").map(|v| v.1) == Some("seen".into()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        verdict(&last, "mlx5_0/1"),
        Some(("ACTIVE".into(), "seen".into())),
        "{last}"
    );
    t.sim
        .set_port_state("mlx5_0", 1, PortState::Down, PhysState::Polling)?;
    t.sim.set_port_lids("mlx5_0", 1, 0, 0)?;
    for _ in 0..50 {
        last = prop(&t, "SubnetManagers").await?;
        if verdict(&last, "mlx5_0/1").map(|v| v.1) == Some("none".into()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(verdict(&last, "mlx5_0/1").map(|v| v.1), Some("none".into()));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_is_refused_and_changes_nothing() -> Result<()> {
    require_harness!();
    let (t, s) = setup(usual).await?;
    let nl = "a\nb";
    let long = "x".repeat(56);
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        (
            "SetModuleEnabled",
            vec!["ssb", "", "ib_iser", "true"],
            "InvalidArgument",
        ),
        (
            "SetModuleEnabled",
            vec!["ssb", "../rdma", "ib_iser", "true"],
            "InvalidArgument",
        ),
        (
            "SetModuleEnabled",
            vec!["ssb", "RDMA", "ib_iser", "true"],
            "InvalidArgument",
        ),
        (
            "SetModuleEnabled",
            vec!["ssb", "rd ma", "ib_iser", "true"],
            "InvalidArgument",
        ),
        (
            "SetModuleEnabled",
            vec!["ssb", "rdma", "", "true"],
            "InvalidArgument",
        ),
        (
            "SetModuleEnabled",
            vec!["ssb", "rdma", "a/b", "true"],
            "InvalidArgument",
        ),
        (
            "SetModuleEnabled",
            vec!["ssb", "rdma", "..", "true"],
            "InvalidArgument",
        ),
        (
            "SetModuleEnabled",
            vec!["ssb", "rdma", "ib iser", "true"],
            "InvalidArgument",
        ),
        (
            "SetModuleEnabled",
            vec!["ssb", "rdma", nl, "true"],
            "InvalidArgument",
        ),
        (
            "SetModuleEnabled",
            vec!["ssb", "rdma", &long, "true"],
            "InvalidArgument",
        ),
        // A leading '-' reads as an option to modprobe; kmod takes '_' as '-'.
        (
            "SetModuleEnabled",
            vec!["ssb", "rdma", "-x", "true"],
            "InvalidArgument",
        ),
        (
            "SetModuleEnabled",
            vec!["ssb", "rdma", "-x", "false"],
            "InvalidArgument",
        ),
        (
            "SetModuleEnabled",
            vec!["ssb", "rdma", "--help", "true"],
            "InvalidArgument",
        ),
        (
            "SetModuleEnabled",
            vec!["ssb", "rdma", "_x", "true"],
            "InvalidArgument",
        ),
        (
            "SetModuleEnabled",
            vec!["ssb", "rdma", "-", "true"],
            "InvalidArgument",
        ),
        (
            "SetModuleEnabled",
            vec!["ssb", "nosuchset", "ib_iser", "true"],
            "NotFound",
        ),
        ("ApplyModules", vec!["s", ""], "InvalidArgument"),
        ("ApplyModules", vec!["s", "../../x"], "InvalidArgument"),
        ("ApplyModules", vec!["s", nl], "InvalidArgument"),
        ("ApplyModules", vec!["s", "nosuchset"], "NotFound"),
        (
            "SetMemlockLimits",
            vec!["ss", "abc", "unlimited"],
            "InvalidArgument",
        ),
        (
            "SetMemlockLimits",
            vec!["ss", "-1", "unlimited"],
            "InvalidArgument",
        ),
        (
            "SetMemlockLimits",
            vec!["ss", "0", "unlimited"],
            "InvalidArgument",
        ),
        ("SetMemlockLimits", vec!["ss", "", ""], "InvalidArgument"),
        (
            "SetMemlockLimits",
            vec!["ss", "unlimited", "1024"],
            "InvalidArgument",
        ),
        (
            "SetMemlockLimits",
            vec!["ss", "2048", "1024"],
            "InvalidArgument",
        ),
        (
            "SetMemlockLimits",
            vec!["ss", "64M", "unlimited"],
            "InvalidArgument",
        ),
        (
            "SetMemlockLimits",
            vec!["ss", "99999999999999999999999", "unlimited"],
            "InvalidArgument",
        ),
        (
            "SetMemlockLimits",
            vec!["ss", "18014398509481983", "unlimited"],
            "InvalidArgument",
        ),
        (
            "SetNfsRdma",
            vec!["bq", "false", "20049"],
            "InvalidArgument",
        ),
    ];
    // Status reads (LoadUnit) may happen; no job or unit-file change may.
    let changes = || -> Vec<String> {
        s.systemd
            .calls()
            .into_iter()
            .filter(|c| !c.starts_with("LoadUnit"))
            .collect()
    };
    let calls_before = changes();
    let mut failures = Vec::new();
    for (method, args, want) in &cases {
        let before = etc(&t);
        let reply = call(&t, method, args).await?;
        match &reply {
            Err((name, msg)) if name == want && !msg.trim().is_empty() => {}
            other => failures.push(format!("{method}{args:?}: wanted {want}, got {other:?}")),
        }
        if etc(&t) != before {
            failures.push(format!("{method}{args:?} changed a file under /etc"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(changes(), calls_before, "no unit was touched");
    // A port that does not fit in q is refused by busctl before the bus.
    let reply = t
        .call(
            None,
            HOST_PATH,
            IFACE,
            "SetNfsRdma",
            &["bq", "true", "70000"],
        )
        .await;
    assert!(!matches!(reply, Ok(Reply::Ok(_))), "{reply:?}");
    Ok(())
}

/// A property of any object as busctl's JSON gives it.
async fn object_prop(t: &SystemSetup, path: &str, iface: &str, name: &str) -> Result<Value> {
    let out = t
        .bus
        .busctl()
        .args(["--json=short", "get-property", BUS_NAME, path, iface, name])
        .output()
        .context("busctl get-property")?;
    if !out.status.success() {
        bail!("{path} {name}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let v: Value = serde_json::from_slice(&out.stdout)?;
    Ok(v["data"].clone())
}

/// A systemd job that never ends (nfs-server's restart) holds only the call that asked for it:
/// a port change on the host is still read and published meanwhile.
#[tokio::test(flavor = "multi_thread")]
async fn a_hanging_unit_job_does_not_stall_port_updates() -> Result<()> {
    require_harness!();
    let (t, s) = setup(|s| {
        usual(s);
        s.systemd
            .add_unit("nfs-server.service", StandInUnit::service().hanging());
    })
    .await?;
    let port = format!("{}/Device/1/Port/1", rdma_manager_dbus::ROOT_PATH);
    let port_iface = "org.rdmamanager.RdmaManager1.Port";
    assert_eq!(
        object_prop(
            &t,
            &port.replace("/Port/1", ""),
            "org.rdmamanager.RdmaManager1.Device",
            "Name"
        )
        .await?,
        "mlx5_0"
    );
    let before = object_prop(&t, &port, port_iface, "State").await?;

    // The call waits for the job that never ends: its timeout must outlast the wait below
    // (on a loaded machine the daemon may take a while to ask for the restart), and the
    // process is killed at the end rather than waited for.
    let mut caller = t
        .bus
        .busctl()
        .args(["--timeout=120", "--", "call", BUS_NAME, HOST_PATH, IFACE])
        .args(["SetNfsRdma", "bq", "true", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    // Wait until the daemon waits for the restart job. A loaded machine may take a while to
    // get there; a call that ended instead is the failure worth reporting.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !s
        .systemd
        .calls()
        .iter()
        .any(|c| c.contains("RestartUnit") && c.contains("nfs-server.service"))
    {
        if caller.try_wait()?.is_some() {
            let ended = caller.wait_with_output()?;
            panic!(
                "SetNfsRdma ended before restarting nfs-server: {}, {}{}; calls {:?}",
                ended.status,
                String::from_utf8_lossy(&ended.stdout),
                String::from_utf8_lossy(&ended.stderr),
                s.systemd.calls()
            );
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no restart of nfs-server: {:?}",
            s.systemd.calls()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    t.sim
        .set_port_state("mlx5_0", 1, PortState::Down, PhysState::Polling)?;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let now = object_prop(&t, &port, port_iface, "State").await?;
        if now != before {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the port change was not published while the restart job hung (State still {now})"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(caller.try_wait()?.is_none(), "the restart job does not end");
    let _ = caller.kill();
    let _ = caller.wait();
    Ok(())
}

/// A daemon killed between making a temp file and renaming it leaves the temp file behind;
/// the next start removes exactly those, in the directories the daemon writes.
#[tokio::test(flavor = "multi_thread")]
async fn leftover_temp_files_are_removed_at_start_and_nothing_else() -> Result<()> {
    require_harness!();
    let sim = SimHost::new(fixtures::demo_host())?;
    fixtures::install_host_setup(&sim)?;
    let written = [
        "etc/rdma-manager",
        "etc/udev/rules.d",
        "etc/security/limits.d",
        "etc/nfs.conf.d",
        "etc/rdma/modules",
    ];
    // Names a user may well give files, none of them the daemon's pattern.
    let users = [
        ".rdma-manager-notes",
        ".rdma-manager-Ab12Cd.bak",
        "rdma-manager-Ab12Cd",
        ".rdma-manager-Ab12C",
    ];
    let mut kept = Vec::new();
    let mut leftovers = Vec::new();
    for dir in written {
        let d = sim.root().join(dir);
        std::fs::create_dir_all(&d)?;
        for (i, name) in [".rdma-manager-Ab12Cd", ".rdma-manager-x9Y8z7"]
            .iter()
            .enumerate()
        {
            let p = d.join(name);
            std::fs::write(&p, format!("half-written {i}\n"))?;
            leftovers.push(p);
        }
        for name in users {
            let p = d.join(name);
            std::fs::write(&p, "the user's\n")?;
            kept.push(p);
        }
    }
    // The daemon's pattern in a directory it never writes is not its business.
    for dir in ["etc", "etc/security", "etc/udev"] {
        let p = sim.root().join(dir).join(".rdma-manager-Ab12Cd");
        std::fs::create_dir_all(sim.root().join(dir))?;
        std::fs::write(&p, "not the daemon's\n")?;
        kept.push(p);
    }
    let before: Vec<(std::path::PathBuf, Vec<u8>)> = kept
        .iter()
        .map(|p| (p.clone(), std::fs::read(p).unwrap_or_default()))
        .collect();
    let (t, _s) = SystemSetup::with_host_services(sim, usual).await?;
    let left: Vec<_> = leftovers.iter().filter(|p| p.exists()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    for (p, bytes) in before {
        assert_eq!(std::fs::read(&p).ok(), Some(bytes), "{}", p.display());
    }
    // Writes go on as before.
    let r = call(&t, "SetModuleEnabled", &["ssb", "rdma", "rds_rdma", "true"]).await?;
    assert!(r.is_ok(), "{r:?}");
    Ok(())
}

/// A systemd whose restart loads nothing (a listed module this kernel lacks, a transport
/// nfsd could not load): the steps say what is still not done instead of "done".
#[tokio::test(flavor = "multi_thread")]
async fn results_say_what_is_still_not_done() -> Result<()> {
    require_harness!();
    let (t, _s) = setup_inert(usual).await?;
    call(
        &t,
        "SetModuleEnabled",
        &["ssb", "infiniband", "ib_srpt", "true"],
    )
    .await?
    .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let steps = call(&t, "ApplyModules", &["s", "infiniband"])
        .await?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    assert_eq!(
        outcomes(&steps),
        pairs(&[("restart", "done"), ("modules", "failed")])
    );
    let text = steps.to_string();
    assert!(
        text.contains("still not loaded")
            && text.contains("ib_srpt")
            && text.contains("journalctl"),
        "{text}"
    );
    // ib_ipoib and ib_umad are loaded (the fixture's /sys/module has them): not named.
    assert!(
        !text.contains("ib_ipoib") && !text.contains("ib_umad"),
        "{text}"
    );

    // A host where the RPC-over-RDMA transport is not loaded and nothing loads it.
    t.sim.set_module_loaded("rpcrdma", false)?;
    let steps = call(&t, "SetNfsRdma", &["bq", "true", "0"])
        .await?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let o = outcomes(&steps);
    assert_eq!(
        o.last(),
        Some(&("rdma listener".to_string(), "failed".to_string())),
        "{steps}"
    );
    assert!(steps.to_string().contains("modprobe svcrdma"), "{steps}");
    Ok(())
}
