//! RoCE defaults through the daemon under real polkitd: SetRoceMode/SetRoceTos on the demo
//! host's mlx5 RoCE port and rxe0, refusals that leave kernel and file alone, persistence in
//! roce.toml by node GUID, the settings after a device rename, their restore after a restart
//! and when a device is re-created, undo on a failed save, and bad or racing calls.

use std::time::{Duration, Instant};

use super::bad_input::{case, etc_files, refused, world};
use anyhow::Result;
use rdma_manager_dbus::port_path;
use rdma_manager_dbus::ROOT_PATH;
use rdma_manager_tests::bus::{PolkitConfig, Reply};
use rdma_manager_tests::service::SystemSetup;
use rdma_managerd::kernel::prelude::*;
use rdma_managerd::kernel::sim::{SimHost, SimOp};
use rdma_managerd::kernel::{HostEvent, NewLink};
use rdma_managerd::model::{Errno, RoceMode, SoftLinkType};

const FILE: &str = "/etc/rdma-manager/roce.toml";
const PORT: &str = "org.rdmamanager.RdmaManager1.Port";
/// The demo host's mlx5 RoCE device (mlx5_1) and rxe0 over eth0, by kernel index.
const MLX5: u32 = 2;
const RXE: u32 = 3;
/// Their node GUIDs, derived from the MACs of their network interfaces.
const MLX5_GUID: &str = "0x0e42a1fffe5e2291";
const RXE_GUID: &str = "0x505400fffe123456";

async fn setup() -> Result<SystemSetup> {
    SystemSetup::new(false, PolkitConfig::rdma_manager()).await
}

/// A port method as root.
async fn port_call(t: &SystemSetup, dev: u32, method: &str, args: &[&str]) -> Result<Reply> {
    t.call(None, &port_path(dev, 1), PORT, method, args).await
}

async fn set_mode(t: &SystemSetup, dev: u32, mode: &str) -> Result<Reply> {
    port_call(t, dev, "SetRoceMode", &["s", mode]).await
}

async fn set_tos(t: &SystemSetup, dev: u32, tos: u8) -> Result<Reply> {
    port_call(t, dev, "SetRoceTos", &["y", &tos.to_string()]).await
}

/// A port property as busctl prints it (`v s "v2"`).
async fn prop(t: &SystemSetup, dev: u32, name: &str) -> Result<String> {
    let r = t
        .call(
            None,
            &port_path(dev, 1),
            "org.freedesktop.DBus.Properties",
            "Get",
            &["ss", PORT, name],
        )
        .await?;
    match r {
        Reply::Ok(o) => Ok(o.trim().to_string()),
        Reply::Err(n, m) => anyhow::bail!("Get {name}: {n}: {m}"),
    }
}

fn ok(r: &Reply) {
    assert!(matches!(r, Reply::Ok(_)), "{r:?}");
}

fn err(r: Reply, want: &str) -> String {
    match r {
        Reply::Err(name, msg) => {
            assert_eq!(name, want, "{msg}");
            msg
        }
        Reply::Ok(o) => panic!("expected {want}, got success: {o}"),
    }
}

async fn mode(sim: &SimHost, dev: &str) -> Option<RoceMode> {
    sim.roce_mode(dev, 1).await.ok()
}

async fn tos(sim: &SimHost, dev: &str) -> Option<u8> {
    sim.roce_tos(dev, 1).await.ok()
}

async fn eventually<F, Fut>(what: &str, f: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(5);
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs host calls that need a runtime of their own (inside `restart_daemon`'s closure).
fn blocking(f: impl FnOnce(&tokio::runtime::Runtime) + Send + 'static) {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        f(&rt);
    })
    .join()
    .expect("thread");
}

#[tokio::test(flavor = "multi_thread")]
async fn modes_and_tos_are_set_shown_and_remembered_by_guid() -> Result<()> {
    require_harness!();
    let t = setup().await?;
    // What the kernel starts with: v2 wherever the port supports it, ToS 0.
    assert_eq!(prop(&t, MLX5, "RoceMode").await?, "v s \"v2\"");
    assert_eq!(prop(&t, MLX5, "RoceModes").await?, "v as 2 \"v1\" \"v2\"");
    assert_eq!(prop(&t, RXE, "RoceModes").await?, "v as 1 \"v2\"");
    assert_eq!(prop(&t, RXE, "RoceTos").await?, "v y 0");
    assert_eq!(prop(&t, MLX5, "RocePersisted").await?, "v b false");
    // An InfiniBand port has none of it.
    assert_eq!(
        t.call(
            None,
            &port_path(1, 1),
            "org.freedesktop.DBus.Properties",
            "Get",
            &["ss", PORT, "RoceMode"]
        )
        .await?,
        Reply::Ok("v s \"\"".into())
    );

    ok(&set_mode(&t, MLX5, "v1").await?);
    assert_eq!(mode(&t.sim, "mlx5_1").await, Some(RoceMode::V1));
    assert_eq!(prop(&t, MLX5, "RoceMode").await?, "v s \"v1\"");
    assert_eq!(prop(&t, MLX5, "RocePersisted").await?, "v b true");
    // The configfs spelling, then the short one.
    ok(&set_mode(&t, MLX5, "RoCE v2").await?);
    assert_eq!(mode(&t.sim, "mlx5_1").await, Some(RoceMode::V2));
    ok(&set_mode(&t, RXE, "2").await?);
    assert_eq!(mode(&t.sim, "rxe0").await, Some(RoceMode::V2));
    ok(&set_tos(&t, RXE, 106).await?);
    assert_eq!(tos(&t.sim, "rxe0").await, Some(106));
    assert_eq!(prop(&t, RXE, "RoceTos").await?, "v y 106");

    let text = t.etc_file(FILE).expect("persisted");
    assert!(text.starts_with("# RoCE defaults"), "{text}");
    assert!(
        text.contains(&format!(
            "[[port]]\nnode_guid = \"{MLX5_GUID}\"\nport = 1\nmode = \"v2\"\n"
        )) && text.contains(&format!(
            "[[port]]\nnode_guid = \"{RXE_GUID}\"\nport = 1\nmode = \"v2\"\ntos = 106\n"
        )),
        "{text}"
    );
    assert!(!text.contains("mlx5_1") && !text.contains("rxe0"), "{text}");

    // An InfiniBand port refuses, and says why.
    let msg = err(
        t.call(None, &port_path(1, 1), PORT, "SetRoceMode", &["s", "v2"])
            .await?,
        "NotSupported",
    );
    assert!(msg.contains("InfiniBand port"), "{msg}");
    let msg = err(
        t.call(None, &port_path(1, 1), PORT, "SetRoceTos", &["y", "32"])
            .await?,
        "NotSupported",
    );
    assert!(msg.contains("InfiniBand port"), "{msg}");
    assert_eq!(t.etc_file(FILE).as_deref(), Some(text.as_str()));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn v1_is_refused_on_rxe_and_nothing_changes() -> Result<()> {
    require_harness!();
    let t = setup().await?;
    for spelling in ["v1", "1", "IB/RoCE v1"] {
        let msg = err(set_mode(&t, RXE, spelling).await?, "NotSupported");
        assert_eq!(
            msg,
            "rxe0 port 1 supports only RoCE v2 (its GID table has no IB/RoCE v1 entries)"
        );
    }
    assert_eq!(mode(&t.sim, "rxe0").await, Some(RoceMode::V2));
    assert_eq!(t.etc_file(FILE), None);
    assert_eq!(prop(&t, RXE, "RocePersisted").await?, "v b false");

    // Were the GID table to list v1 (here: edited), the kernel's EINVAL is explained.
    t.sim.corrupt_file(
        "sys/class/infiniband/rxe0/ports/1/gid_attrs/types/0",
        "IB/RoCE v1\n",
    )?;
    t.sim.raise(HostEvent::RdmaChanged {
        name: "rxe0".into(),
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    while !prop(&t, RXE, "RoceModes").await?.contains("\"v1\"") {
        assert!(
            Instant::now() < deadline,
            "the edited GID table was not read"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let msg = err(set_mode(&t, RXE, "v1").await?, "NotSupported");
    assert!(
        msg.contains("EINVAL") && msg.contains("refused RoCE v1 on rxe0 port 1"),
        "{msg}"
    );
    assert_eq!(mode(&t.sim, "rxe0").await, Some(RoceMode::V2));
    assert_eq!(t.etc_file(FILE), None);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn settings_survive_a_rename_under_the_new_configfs_group() -> Result<()> {
    require_harness!();
    let t = setup().await?;
    ok(&set_mode(&t, MLX5, "v1").await?);
    ok(&set_tos(&t, MLX5, 32).await?);
    let text = t.etc_file(FILE).expect("persisted");

    t.sim.rename_device(MLX5, "roce_a").await?;
    let deadline = Instant::now() + Duration::from_secs(5);
    while prop(&t, MLX5, "DeviceName").await? != "v s \"roce_a\"" {
        assert!(Instant::now() < deadline, "rename not seen");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The daemon read the port under its new name: the group made for it shows the settings
    // the device kept; the old group answers ENODEV.
    let dirs = t.sim.roce_configfs_dirs().await?;
    assert!(
        dirs.contains(&"roce_a".to_string()) && dirs.contains(&"mlx5_1".to_string()),
        "{dirs:?}"
    );
    assert_eq!(prop(&t, MLX5, "RoceMode").await?, "v s \"v1\"");
    assert_eq!(prop(&t, MLX5, "RoceTos").await?, "v y 32");
    assert_eq!(mode(&t.sim, "roce_a").await, Some(RoceMode::V1));
    assert_eq!(tos(&t.sim, "roce_a").await, Some(32));
    let old = t.sim.roce_mode("mlx5_1", 1).await;
    assert_eq!(
        old.map_err(|e| e.errno()),
        Err(Some(Errno::ENODEV)),
        "the old group"
    );
    // Still remembered by GUID, and still settable under the new name.
    assert_eq!(t.etc_file(FILE).as_deref(), Some(text.as_str()));
    ok(&set_mode(&t, MLX5, "v2").await?);
    assert_eq!(mode(&t.sim, "roce_a").await, Some(RoceMode::V2));
    assert!(t.etc_file(FILE).expect("file").contains("mode = \"v2\""));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn forgotten_settings_are_restored_at_start_and_when_the_device_returns() -> Result<()> {
    require_harness!();
    let mut t = setup().await?;
    ok(&set_mode(&t, MLX5, "v1").await?);
    ok(&set_tos(&t, MLX5, 96).await?);
    ok(&set_tos(&t, RXE, 32).await?);

    // rdma_cm reloaded while the daemon was down: the kernel is back to its defaults.
    t.restart_daemon(|sim| {
        sim.set_rdma_cm_loaded(false).expect("unload");
        sim.set_rdma_cm_loaded(true).expect("load");
        let sim = sim.clone();
        blocking(move |rt| {
            assert_eq!(rt.block_on(mode(&sim, "mlx5_1")), Some(RoceMode::V2));
            assert_eq!(rt.block_on(tos(&sim, "rxe0")), Some(0));
        });
    })
    .await?;
    let sim = t.sim.clone();
    eventually("settings restored at start", || {
        let sim = sim.clone();
        async move {
            mode(&sim, "mlx5_1").await == Some(RoceMode::V1)
                && tos(&sim, "mlx5_1").await == Some(96)
                && tos(&sim, "rxe0").await == Some(32)
        }
    })
    .await;
    assert_eq!(prop(&t, MLX5, "RoceMode").await?, "v s \"v1\"");
    assert_eq!(prop(&t, RXE, "RocePersisted").await?, "v b true");

    // rxe0 deleted and made again over the same interface: same node GUID, settings back.
    t.sim.delete_link(RXE).await?;
    t.sim
        .add_link(&NewLink {
            name: "rxe0".into(),
            kind: SoftLinkType::Rxe,
            netdev: "eth0".into(),
        })
        .await?;
    let sim = t.sim.clone();
    eventually("rxe0's ToS re-applied", || {
        let sim = sim.clone();
        async move { tos(&sim, "rxe0").await == Some(32) }
    })
    .await;

    // The same with its events lost (ENOBUFS): the re-read after the overflow finds the new
    // device and re-applies what is remembered for it.
    let index = |sim: &SimHost| {
        sim.spec()
            .devices
            .iter()
            .find(|d| d.name == "rxe0")
            .map(|d| d.index)
    };
    t.sim.lose_events(true);
    t.sim.delete_link(index(&t.sim).expect("rxe0")).await?;
    t.sim
        .add_link(&NewLink {
            name: "rxe0".into(),
            kind: SoftLinkType::Rxe,
            netdev: "eth0".into(),
        })
        .await?;
    assert_eq!(
        tos(&t.sim, "rxe0").await,
        Some(0),
        "a new device starts at 0"
    );
    t.sim.lose_events(false);
    t.sim.raise(HostEvent::Overflow {
        source: "test".into(),
    });
    let sim = t.sim.clone();
    eventually("rxe0's ToS re-applied after the overflow", || {
        let sim = sim.clone();
        async move { tos(&sim, "rxe0").await == Some(32) }
    })
    .await;
    Ok(())
}

/// The restore at start is done, and published, before start-up is over (the root's Startup
/// turns false, and GetManagedObjects answers, only then): the first read after that already
/// shows the remembered values, however slow the kernel is to take them (here each configfs
/// write takes a second, so a restore racing the end of start-up loses).
#[tokio::test(flavor = "multi_thread")]
async fn the_first_read_after_a_restart_shows_the_restored_settings() -> Result<()> {
    require_harness!();
    let mut t = setup().await?;
    ok(&set_mode(&t, MLX5, "v1").await?);
    ok(&set_tos(&t, RXE, 32).await?);
    t.restart_daemon(|sim| {
        sim.set_rdma_cm_loaded(false).expect("unload");
        sim.set_rdma_cm_loaded(true).expect("load");
        sim.delay_next(SimOp::RoceWrite, Duration::from_secs(1));
        sim.delay_next(SimOp::RoceWrite, Duration::from_secs(1));
    })
    .await?;
    // restart_daemon returns once the new daemon's start-up is over: no waiting here.
    assert_eq!(prop(&t, MLX5, "RoceMode").await?, "v s \"v1\"");
    assert_eq!(prop(&t, RXE, "RoceTos").await?, "v y 32");
    assert_eq!(mode(&t.sim, "mlx5_1").await, Some(RoceMode::V1));
    assert_eq!(tos(&t.sim, "rxe0").await, Some(32));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_save_puts_the_kernel_value_back() -> Result<()> {
    require_harness!();
    let t = setup().await?;
    ok(&set_mode(&t, MLX5, "v1").await?);
    ok(&set_tos(&t, MLX5, 8).await?);
    let before = t.etc_file(FILE);

    t.sim.fail_next(SimOp::WriteFile, Errno::EIO);
    let msg = err(set_mode(&t, MLX5, "v2").await?, "Failed");
    assert!(
        msg.contains("roce.toml") && msg.contains("set back to v1"),
        "{msg}"
    );
    assert_eq!(mode(&t.sim, "mlx5_1").await, Some(RoceMode::V1));
    assert_eq!(prop(&t, MLX5, "RoceMode").await?, "v s \"v1\"");

    t.sim.fail_next(SimOp::WriteFile, Errno::EACCES);
    let msg = err(set_tos(&t, MLX5, 200).await?, "Failed");
    assert!(msg.contains("set back to 8"), "{msg}");
    assert_eq!(tos(&t.sim, "mlx5_1").await, Some(8));
    assert_eq!(t.etc_file(FILE), before, "the file is as it was");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_vanished_ports_and_unplugs_change_nothing() -> Result<()> {
    require_harness!();
    let t = setup().await?;
    for bad in ["", "   ", "v3", "RoCE", "v2; rm -rf /", "ｖ２"] {
        let msg = err(set_mode(&t, MLX5, bad).await?, "InvalidArgument");
        assert!(msg.contains("\"v1\" or \"v2\""), "{bad:?}: {msg}");
    }
    assert_eq!(mode(&t.sim, "mlx5_1").await, Some(RoceMode::V2));
    assert_eq!(t.etc_file(FILE), None);

    // rxe0 is hot-unplugged while its mode is being written: the kernel's ENODEV.
    t.sim.unplug_during_next(SimOp::RoceWrite, "rxe0");
    let msg = err(set_mode(&t, RXE, "v2").await?, "NotFound");
    assert!(msg.contains("rxe0") && msg.contains("vanished"), "{msg}");
    assert_eq!(t.etc_file(FILE), None);

    // Its object goes; a call on it reaches nobody.
    let deadline = Instant::now() + Duration::from_secs(5);
    while prop(&t, RXE, "Number").await.is_ok() {
        assert!(Instant::now() < deadline, "port object not removed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = set_mode(&t, RXE, "v2").await?;
    assert!(
        matches!(&r, Reply::Err(n, _) if n.contains("UnknownObject") || n.contains("UnknownMethod")),
        "{r:?}"
    );
    assert_eq!(t.etc_file(FILE), None);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_calls_are_serialised_and_file_agrees_with_kernel() -> Result<()> {
    require_harness!();
    let t = setup().await?;
    for _ in 0..3 {
        let (a, b) = tokio::join!(set_mode(&t, MLX5, "v1"), set_mode(&t, MLX5, "v2"));
        ok(&a?);
        ok(&b?);
        let kernel = mode(&t.sim, "mlx5_1").await.expect("readable");
        let text = t.etc_file(FILE).expect("persisted");
        assert!(
            text.contains(&format!("mode = \"{}\"", kernel.short())),
            "kernel {kernel:?}, file {text}"
        );
        assert_eq!(
            prop(&t, MLX5, "RoceMode").await?,
            format!("v s \"{}\"", kernel.short())
        );
    }
    let (a, b) = tokio::join!(set_tos(&t, RXE, 1), set_tos(&t, RXE, 2));
    ok(&a?);
    ok(&b?);
    let kernel = tos(&t.sim, "rxe0").await.expect("readable");
    assert!(t
        .etc_file(FILE)
        .expect("file")
        .contains(&format!("tos = {kernel}\n")));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_rdma_cm_or_configfs_is_named_with_the_fix() -> Result<()> {
    require_harness!();
    let t = setup().await?;
    t.sim.set_rdma_cm_loaded(false)?;
    t.sim.raise(HostEvent::RdmaChanged {
        name: "rxe0".into(),
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let u = prop(&t, RXE, "Unreadable").await?;
        if u.contains("RoceMode") {
            assert!(u.contains("modprobe rdma_cm"), "{u}");
            break;
        }
        assert!(Instant::now() < deadline, "Unreadable not updated: {u}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(prop(&t, RXE, "RoceMode").await?, "v s \"\"");
    let msg = err(set_tos(&t, RXE, 5).await?, "NotSupported");
    assert!(msg.contains("`modprobe rdma_cm`"), "{msg}");

    t.sim.set_rdma_cm_loaded(true)?;
    t.sim.set_configfs_mounted(false)?;
    let msg = err(set_mode(&t, RXE, "v2").await?, "NotSupported");
    assert!(
        msg.contains("`mount -t configfs none /sys/kernel/config`") && !msg.contains("modprobe"),
        "{msg}"
    );
    assert_eq!(t.etc_file(FILE), None);

    t.sim.set_configfs_mounted(true)?;
    ok(&set_tos(&t, RXE, 5).await?);
    assert_eq!(prop(&t, RXE, "RoceTos").await?, "v y 5");
    assert!(!prop(&t, RXE, "Unreadable").await?.contains("Roce"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn roce_methods_refuse_bad_input_and_change_nothing() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    // The demo host: Device/0 mlx4_1 (InfiniBand), Device/2 mlx5_1 (RoCE v1 and v2),
    // Device/3 rxe0 (RoCE v2 only).
    let roce = format!("{ROOT_PATH}/Device/2/Port/1");
    let rxe = format!("{ROOT_PATH}/Device/3/Port/1");
    let ib = format!("{ROOT_PATH}/Device/0/Port/1");
    let gone = format!("{ROOT_PATH}/Device/99/Port/1");
    let long = "v".repeat(300);
    let mut cases = Vec::new();
    for bad in [
        "", "v3", "RoCE v3", "v2\nv1", "../v2", "/v2", "\"v2\"", "'v2'", "0", "3", "v-1", &long,
    ] {
        cases.push(case(
            &roce,
            "Port",
            "SetRoceMode",
            &["s", bad],
            "InvalidArgument",
        ));
    }
    cases.push(case(
        &rxe,
        "Port",
        "SetRoceMode",
        &["s", "v1"],
        "NotSupported",
    ));
    cases.push(case(
        &ib,
        "Port",
        "SetRoceMode",
        &["s", "v2"],
        "NotSupported",
    ));
    cases.push(case(
        &ib,
        "Port",
        "SetRoceTos",
        &["y", "32"],
        "NotSupported",
    ));
    // A QoS profile: no DCB on rxe's netdev, none on InfiniBand, ETS summing to 90.
    const QOS: [&str; 7] = ["ayayaya(yy)ii", "0", "0", "0", "0", "0", "0"];
    cases.push(case(&rxe, "Port", "SetQosProfile", &QOS, "NotSupported"));
    cases.push(case(&ib, "Port", "SetQosProfile", &QOS, "NotSupported"));
    cases.push(case(
        &roce,
        "Port",
        "SetQosProfile",
        &[
            "ayayaya(yy)ii",
            "0",
            "8",
            "50",
            "40",
            "0",
            "0",
            "0",
            "0",
            "0",
            "0",
            "8",
            "0",
            "0",
            "0",
            "1",
            "0",
            "0",
            "0",
            "0",
            "0",
            "0",
            "0",
        ],
        "InvalidArgument",
    ));
    for (method, args) in [("SetRoceMode", ["s", "v2"]), ("SetRoceTos", ["y", "32"])] {
        cases.push(case(
            &gone,
            "Port",
            method,
            &args,
            "org.freedesktop.DBus.Error.UnknownObject",
        ));
    }
    refused(&t, &cases).await?;

    // Out of range for the D-Bus type itself: busctl refuses to send it, nothing arrives.
    let before = world(&t);
    let reply = t
        .call(
            None,
            &roce,
            &format!("{}.Port", rdma_manager_dbus::BUS_NAME),
            "SetRoceTos",
            &["y", "256"],
        )
        .await;
    assert!(
        !matches!(reply, Ok(Reply::Ok(_))),
        "a ToS of 256 cannot be sent: {reply:?}"
    );
    assert_eq!(world(&t), before);

    // A device unplugged mid-call.
    t.sim.unplug_during_next(SimOp::RoceWrite, "mlx5_1");
    let etc = etc_files(t.sim.root());
    let reply = t
        .call(
            None,
            &roce,
            &format!("{}.Port", rdma_manager_dbus::BUS_NAME),
            "SetRoceMode",
            &["s", "v2"],
        )
        .await?;
    assert!(
        matches!(&reply, Reply::Err(n, _) if n == "NotFound" || n == "org.freedesktop.DBus.Error.UnknownObject"),
        "{reply:?}"
    );
    assert_eq!(etc_files(t.sim.root()), etc, "nothing written");
    Ok(())
}
