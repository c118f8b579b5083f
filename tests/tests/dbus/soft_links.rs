//! Soft links through the daemon under real polkitd: created links are remembered in
//! soft-links.toml, re-created at start and when their network interface appears again, and
//! a change whose save fails is undone in the kernel.

use std::time::{Duration, Instant};

use super::bad_input::{bad_names, case, etc_files, refused};
use anyhow::Result;
use rdma_manager_dbus::ROOT_PATH;
use rdma_manager_tests::bus::{PolkitConfig, Reply};
use rdma_manager_tests::service::SystemSetup;
use rdma_managerd::kernel::prelude::*;
use rdma_managerd::kernel::sim::{fixtures, SimHost, SimNetdev, SimOp};
use rdma_managerd::model::Errno;

const FILE: &str = "/etc/rdma-manager/soft-links.toml";

/// A `dummy` interface: Ethernet that rtnetlink can delete, as a driver unbind would.
fn eth1() -> SimNetdev {
    let mut eth1 = fixtures::ethernet("eth1", [0x52, 0x54, 0x00, 0x00, 0x00, 0x11]);
    eth1.link_kind = Some("dummy".into());
    eth1
}

/// The demo host with two free Ethernet interfaces.
fn host() -> Result<SimHost> {
    let mut spec = fixtures::demo_host();
    let mut eth1 = eth1();
    eth1.ifindex = 41;
    let mut eth2 = fixtures::ethernet("eth2", [0x52, 0x54, 0x00, 0x00, 0x00, 0x12]);
    eth2.ifindex = 42;
    spec.netdevs.extend([eth1, eth2]);
    Ok(SimHost::new(spec)?)
}

async fn setup() -> Result<SystemSetup> {
    SystemSetup::with_host(false, PolkitConfig::rdma_manager(), host()?).await
}

async fn eventually(t: &SystemSetup, what: &str, f: impl Fn(&SystemSetup) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !f(t) {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn has(t: &SystemSetup, name: &str) -> bool {
    t.device_names().iter().any(|d| d == name)
}

#[tokio::test(flavor = "multi_thread")]
async fn added_links_are_remembered_and_restored_after_a_restart() -> Result<()> {
    require_harness!();
    let mut t = setup().await?;
    assert_eq!(t.etc_file(FILE), None, "nothing persisted before a change");
    let reply = t
        .manager(None, "AddSoftLink", &["sss", "rxe1", "rxe", "eth1"])
        .await?;
    assert!(matches!(reply, Reply::Ok(_)), "{reply:?}");
    let reply = t
        .manager(None, "AddSoftLink", &["sss", "siw1", "siw", "eth2"])
        .await?;
    assert!(matches!(reply, Reply::Ok(_)), "{reply:?}");
    let text = t.etc_file(FILE).expect("persisted");
    assert!(text.starts_with("# Soft RDMA links"), "{text}");
    assert!(
        text.contains("[[link]]\nname = \"rxe1\"\ntype = \"rxe\"\nnetdev = \"eth1\"\n")
            && text.contains("[[link]]\nname = \"siw1\"\ntype = \"siw\"\nnetdev = \"eth2\"\n"),
        "{text}"
    );
    let reply = t
        .call(
            None,
            rdma_manager_dbus::ROOT_PATH,
            "org.freedesktop.DBus.Properties",
            "Get",
            &["ss", rdma_manager_dbus::BUS_NAME, "SoftLinks"],
        )
        .await?;
    assert!(
        matches!(&reply, Reply::Ok(o) if o.contains("\"rxe1\" \"rxe\" \"eth1\"") && o.contains("\"siw1\" \"siw\" \"eth2\"")),
        "{reply:?}"
    );

    // A reboot: the kernel forgets both links while the daemon is down.
    t.restart_daemon(|sim| {
        let sim = sim.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("runtime");
            for name in ["rxe1", "siw1"] {
                let index = sim
                    .spec()
                    .devices
                    .iter()
                    .find(|d| d.name == name)
                    .map(|d| d.index)
                    .expect("present");
                rt.block_on(sim.delete_link(index)).expect("deleted");
            }
        })
        .join()
        .expect("thread");
    })
    .await?;
    eventually(&t, "both links re-created", |t| {
        has(t, "rxe1") && has(t, "siw1")
    })
    .await;
    let dev = t
        .sim
        .spec()
        .devices
        .into_iter()
        .find(|d| d.name == "siw1")
        .expect("siw1");
    assert_eq!(dev.parent_netdev.as_deref(), Some("eth2"));

    // Removing forgets it; a restart does not bring it back.
    let reply = t.manager(None, "RemoveSoftLink", &["s", "siw1"]).await?;
    assert!(matches!(reply, Reply::Ok(_)), "{reply:?}");
    let text = t.etc_file(FILE).expect("persisted");
    assert!(!text.contains("siw1") && text.contains("rxe1"), "{text}");
    t.restart_daemon(|_| {}).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!has(&t, "siw1") && has(&t, "rxe1"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_link_comes_back_when_its_netdev_appears_again() -> Result<()> {
    require_harness!();
    let t = setup().await?;
    let reply = t
        .manager(None, "AddSoftLink", &["sss", "rxe1", "rxe", "eth1"])
        .await?;
    assert!(matches!(reply, Reply::Ok(_)), "{reply:?}");
    // The interface goes away (a driver unbound): the kernel removes the rxe on it.
    t.sim.delete_netdev("eth1").await?;
    eventually(&t, "rxe1 gone with eth1", |t| !has(t, "rxe1")).await;
    // Nothing to re-create it over: the remembered link stays remembered.
    assert!(t.etc_file(FILE).expect("kept").contains("rxe1"));
    t.sim.plug_netdev(eth1())?;
    eventually(&t, "rxe1 re-created over eth1", |t| has(t, "rxe1")).await;
    // Forgetting a link whose netdev is absent needs no kernel call.
    t.sim.delete_netdev("eth1").await?;
    eventually(&t, "rxe1 gone again", |t| !has(t, "rxe1")).await;
    let reply = t.manager(None, "RemoveSoftLink", &["s", "rxe1"]).await?;
    assert!(matches!(reply, Reply::Ok(_)), "{reply:?}");
    assert!(!t.etc_file(FILE).expect("file").contains("rxe1"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_save_undoes_the_kernel_change() -> Result<()> {
    require_harness!();
    let t = setup().await?;
    let reply = t
        .manager(None, "AddSoftLink", &["sss", "rxe1", "rxe", "eth1"])
        .await?;
    assert!(matches!(reply, Reply::Ok(_)), "{reply:?}");
    let before = t.etc_file(FILE);

    t.sim.fail_next(SimOp::WriteFile, Errno::EIO);
    let reply = t
        .manager(None, "AddSoftLink", &["sss", "rxe2", "rxe", "eth2"])
        .await?;
    let Reply::Err(name, msg) = reply else {
        panic!("the save failed: {reply:?}");
    };
    assert_eq!(name, "Failed", "{msg}");
    assert!(
        msg.contains("soft-links.toml") && msg.contains("removed again"),
        "{msg}"
    );
    assert!(!has(&t, "rxe2"), "the link was undone");
    assert_eq!(t.etc_file(FILE), before, "the file is as it was");

    t.sim.fail_next(SimOp::WriteFile, Errno::EACCES);
    let reply = t.manager(None, "RemoveSoftLink", &["s", "rxe1"]).await?;
    let Reply::Err(name, msg) = reply else {
        panic!("the save failed: {reply:?}");
    };
    assert_eq!(name, "Failed", "{msg}");
    assert!(msg.contains("created again"), "{msg}");
    assert!(has(&t, "rxe1"), "the removal was undone");
    assert_eq!(t.etc_file(FILE), before, "the file is as it was");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_file_is_reported_and_never_overwritten() -> Result<()> {
    require_harness!();
    let sim = host()?;
    let path = sim.root().join(FILE.trim_start_matches('/'));
    std::fs::create_dir_all(path.parent().expect("dir"))?;
    let broken = "# hand edit\n[[link]]\nname = \"rxe1\"\ntype = \"rxe\"\nnetdev = \"eth1\n";
    std::fs::write(&path, broken)?;
    let t = SystemSetup::with_host(false, PolkitConfig::rdma_manager(), sim).await?;
    let reply = t
        .call(
            None,
            rdma_manager_dbus::ROOT_PATH,
            "org.freedesktop.DBus.Properties",
            "Get",
            &["ss", rdma_manager_dbus::BUS_NAME, "ConfigErrors"],
        )
        .await?;
    assert!(
        matches!(&reply, Reply::Ok(o) if o.contains(FILE)),
        "{reply:?}"
    );
    assert!(!has(&t, "rxe1"), "nothing from a broken file is applied");
    let reply = t
        .manager(None, "AddSoftLink", &["sss", "rxe2", "rxe", "eth2"])
        .await?;
    let Reply::Err(name, msg) = reply else {
        panic!("refused while the file is broken: {reply:?}");
    };
    assert_eq!(name, "Failed", "{msg}");
    assert!(msg.contains(FILE) && msg.contains("fix"), "{msg}");
    assert!(!has(&t, "rxe2"));
    assert_eq!(t.etc_file(FILE).as_deref(), Some(broken));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remembered_link_follows_its_renamed_netdev() -> Result<()> {
    require_harness!();
    let mut t = setup().await?;
    let reply = t
        .manager(None, "AddSoftLink", &["sss", "rxe1", "rxe", "eth1"])
        .await?;
    assert!(matches!(reply, Reply::Ok(_)), "{reply:?}");
    // Renamed by hand (`ip link set eth1 name lan1`): the kernel's rxe follows it, and so
    // must what is remembered, or the next start would look for eth1.
    t.sim.rename_netdev("eth1", "lan1").await?;
    eventually(&t, "soft-links.toml to follow", |t| {
        t.etc_file(FILE)
            .is_some_and(|f| f.contains("netdev = \"lan1\"") && !f.contains("eth1"))
    })
    .await;
    let reply = t
        .call(
            None,
            rdma_manager_dbus::ROOT_PATH,
            "org.freedesktop.DBus.Properties",
            "Get",
            &["ss", rdma_manager_dbus::BUS_NAME, "SoftLinks"],
        )
        .await?;
    assert!(
        matches!(&reply, Reply::Ok(o) if o.contains("\"rxe1\" \"rxe\" \"lan1\"") && !o.contains("eth1")),
        "{reply:?}"
    );
    // A rename of an interface that carries no remembered link changes nothing.
    let before = t.etc_file(FILE);
    t.sim.rename_netdev("eth2", "lan2").await?;
    t.sim.rename_netdev("lan2", "eth2").await?;
    assert_eq!(t.etc_file(FILE), before);

    // A reboot: the kernel forgets the link; it comes back over the renamed interface.
    t.restart_daemon(|sim| {
        let sim = sim.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("runtime");
            let index = sim
                .spec()
                .devices
                .iter()
                .find(|d| d.name == "rxe1")
                .map(|d| d.index)
                .expect("present");
            rt.block_on(sim.delete_link(index)).expect("deleted");
        })
        .join()
        .expect("thread");
    })
    .await?;
    eventually(&t, "rxe1 re-created over lan1", |t| {
        t.sim
            .spec()
            .devices
            .iter()
            .any(|d| d.name == "rxe1" && d.parent_netdev.as_deref() == Some("lan1"))
    })
    .await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn soft_link_methods_refuse_bad_input_and_change_nothing() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let mut cases = Vec::new();
    for (_, bad) in bad_names() {
        // A bad link name (except the 16-byte one, a valid RDMA name over a taken netdev).
        if bad.len() != 16 {
            cases.push(case(
                ROOT_PATH,
                "",
                "AddSoftLink",
                &["sss", &bad, "rxe", "eth0"],
                "InvalidArgument",
            ));
            cases.push(case(
                ROOT_PATH,
                "",
                "RemoveSoftLink",
                &["s", &bad],
                "InvalidArgument",
            ));
        }
        // A bad netdev name.
        if bad.len() != 64 {
            cases.push(case(
                ROOT_PATH,
                "",
                "AddSoftLink",
                &["sss", "rxe5", "rxe", &bad],
                "InvalidArgument",
            ));
        }
    }
    for bad_type in ["", "RXE", "roce", "rxe ", "siw\n", "../rxe"] {
        cases.push(case(
            ROOT_PATH,
            "",
            "AddSoftLink",
            &["sss", "rxe5", bad_type, "eth0"],
            "InvalidArgument",
        ));
    }
    // Unknown or taken objects.
    cases.push(case(
        ROOT_PATH,
        "",
        "AddSoftLink",
        &["sss", "rxe5", "rxe", "nosuch0"],
        "NotFound",
    ));
    cases.push(case(
        ROOT_PATH,
        "",
        "AddSoftLink",
        &["sss", "mlx4_1", "siw", "eth0"],
        "AlreadyExists",
    ));
    cases.push(case(
        ROOT_PATH,
        "",
        "RemoveSoftLink",
        &["s", "nosuch"],
        "NotFound",
    ));
    cases.push(case(
        ROOT_PATH,
        "",
        "RemoveSoftLink",
        &["s", "mlx4_1"],
        "InvalidArgument",
    ));
    refused(&t, &cases).await?;

    // A device unplugged mid-call: the kernel call finds it gone.
    t.sim.unplug_during_next(SimOp::DeleteLink, "rxe0");
    let etc = etc_files(t.sim.root());
    let reply = t.manager(None, "RemoveSoftLink", &["s", "rxe0"]).await?;
    assert!(
        matches!(&reply, Reply::Err(n, _) if n == "NotFound"),
        "{reply:?}"
    );
    assert_eq!(etc_files(t.sim.root()), etc, "nothing written");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn conflicting_soft_link_calls_are_serialised() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    // rxe0 is over eth0: remove it, then race two adds of different names over eth0.
    let reply = t.manager(None, "RemoveSoftLink", &["s", "rxe0"]).await?;
    assert!(matches!(reply, Reply::Ok(_)), "{reply:?}");
    let (a, b) = tokio::join!(
        t.manager(None, "AddSoftLink", &["sss", "rxe_a", "rxe", "eth0"]),
        t.manager(None, "AddSoftLink", &["sss", "rxe_b", "rxe", "eth0"]),
    );
    let (a, b) = (a?, b?);
    let won: Vec<&str> = [("rxe_a", &a), ("rxe_b", &b)]
        .iter()
        .filter(|(_, r)| matches!(r, Reply::Ok(_)))
        .map(|(n, _)| *n)
        .collect();
    assert_eq!(won.len(), 1, "exactly one wins: {a:?} {b:?}");
    let lost = if won[0] == "rxe_a" { &b } else { &a };
    assert!(
        matches!(lost, Reply::Err(n, _) if n == "AlreadyExists"),
        "{lost:?}"
    );
    let file = t
        .etc_file("/etc/rdma-manager/soft-links.toml")
        .expect("persisted");
    assert!(file.contains(won[0]), "{file}");
    assert!(
        !file.contains(if won[0] == "rxe_a" { "rxe_b" } else { "rxe_a" }),
        "{file}"
    );
    let names = t.device_names();
    assert!(names.contains(&won[0].to_string()), "{names:?}");
    Ok(())
}
