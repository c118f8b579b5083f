//! The QoS profile of a RoCE port through the daemon under real polkitd: the lossless-RoCE
//! recipe (trust DSCP, PFC on priority 3, ETS, DSCP 26 on priority 3, traffic class 106,
//! ECN on priority 3) on the demo host's mlx5 RoCE port, read back from the kernel and
//! remembered in qos.toml; rxe0 (over an Ethernet netdev without DCB) refused with the
//! kernel's EOPNOTSUPP and nothing changed; bad input; every change undone when a later
//! step fails.

use anyhow::Result;
use rdma_manager_dbus::port_path;
use rdma_manager_tests::bus::{PolkitConfig, Reply};
use rdma_manager_tests::service::SystemSetup;
use rdma_managerd::kernel::prelude::*;
use rdma_managerd::kernel::sim::{SimHost, SimOp};
use rdma_managerd::model::Errno;

const FILE: &str = "/etc/rdma-manager/qos.toml";
const PORT: &str = "org.rdmamanager.RdmaManager1.Port";
/// The demo host's mlx5 RoCE device (mlx5_1 over enp59s0f1np1) and rxe0, by kernel index.
const MLX5: u32 = 2;
const RXE: u32 = 3;
const MLX5_NETDEV: &str = "enp59s0f1np1";

/// The recipe as busctl takes SetQosProfile's arguments.
const RECIPE: &[&str] = &[
    "ayayaya(yy)ii",
    "1",
    "3",
    "8",
    "50",
    "50",
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
    "1",
    "26",
    "3",
    "106",
    "8",
];

async fn set(t: &SystemSetup, dev: u32, args: &[&str]) -> Result<Reply> {
    t.call(None, &port_path(dev, 1), PORT, "SetQosProfile", args)
        .await
}

async fn pfc_en(sim: &SimHost) -> u8 {
    sim.dcb_read(MLX5_NETDEV)
        .await
        .expect("mlx5 has DCB")
        .pfc
        .expect("PFC")
        .pfc_en
}

fn ok(r: &Reply) -> String {
    match r {
        Reply::Ok(o) => o.clone(),
        Reply::Err(n, m) => panic!("{n}: {m}"),
    }
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

#[tokio::test(flavor = "multi_thread")]
async fn the_recipe_is_applied_read_back_and_remembered() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let before = ok(&t
        .call(None, &port_path(MLX5, 1), PORT, "GetQosProfile", &[])
        .await?);
    assert!(
        before.starts_with("(sayayaya(yy)ii)b \"pcp\" 0 8 13 13"),
        "{before}"
    );
    assert!(before.ends_with("-1 255 false"), "{before}");
    // Link-level pause is on while no priority has PFC: congestion makes pause frames.
    t.sim.congest(MLX5_NETDEV);
    let c0 = ok(&t
        .call(None, &port_path(MLX5, 1), PORT, "GetCounters", &[])
        .await?);

    ok(&set(&t, MLX5, RECIPE).await?);
    let got = ok(&t
        .call(None, &port_path(MLX5, 1), PORT, "GetQosProfile", &[])
        .await?);
    assert_eq!(
        got.trim(),
        "(sayayaya(yy)ii)b \"dscp\" 1 3 8 50 50 0 0 0 0 0 0 8 0 0 0 1 0 0 0 0 1 26 3 106 8 true"
    );
    // The kernel's own state, as `dcb` would read it.
    let dcb = t.sim.dcb_read(MLX5_NETDEV).await?;
    assert_eq!(dcb.pfc.map(|p| p.pfc_en), Some(1 << 3));
    assert_eq!(dcb.apps.len(), 1);
    assert_eq!(t.sim.roce_traffic_class("mlx5_1").await?, Some(106));
    assert_eq!(t.sim.roce_ecn(MLX5_NETDEV).await?, Some(1 << 3));

    let text = t.etc_file(FILE).expect("persisted");
    assert!(
        text.contains("node_guid = \"0x0e42a1fffe5e2291\""),
        "{text}"
    );
    assert!(
        text.contains("trust = \"dscp\"") && text.contains("pfc = [3]"),
        "{text}"
    );

    // PFC frames of priority 3 join the port's counters, and move.
    let c1 = ok(&t
        .call(None, &port_path(MLX5, 1), PORT, "GetCounters", &[])
        .await?);
    assert!(
        c1.contains("\"pfc.requests.3\"") && c1.contains("\"pfc.indications.3\""),
        "{c1}"
    );
    let read = |text: &str, name: &str| -> Option<u64> {
        let rest = text.split(&format!("\"{name}\" ")).nth(1)?;
        rest.split_whitespace().next()?.parse().ok()
    };
    // Read again without congestion: reading moves nothing, as on a real NIC.
    let again = ok(&t
        .call(None, &port_path(MLX5, 1), PORT, "GetCounters", &[])
        .await?);
    assert_eq!(
        read(&c1, "pfc.requests.3"),
        read(&again, "pfc.requests.3"),
        "{c1}\n{again}"
    );
    // With PFC on, mlx5 turns link-level pause off: congestion moves PFC frames, not pause
    // frames.
    t.sim.congest(MLX5_NETDEV);
    let c2 = ok(&t
        .call(None, &port_path(MLX5, 1), PORT, "GetCounters", &[])
        .await?);
    assert_eq!(read(&c0, "pause.tx_frames"), Some(2), "{c0}");
    assert_eq!(read(&c0, "pause.rx_frames"), Some(4), "{c0}");
    assert_eq!(
        read(&c1, "pause.rx_frames"),
        read(&c2, "pause.rx_frames"),
        "{c1}\n{c2}"
    );
    assert!(
        read(&c2, "pfc.requests.3") > read(&c1, "pfc.requests.3"),
        "{c1}\n{c2}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_netdev_without_dcb_is_refused_with_the_kernels_reason() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let msg = err(set(&t, RXE, RECIPE).await?, "NotSupported");
    assert!(
        msg.contains("the kernel answered EOPNOTSUPP (Operation not supported)"),
        "{msg}"
    );
    let msg = err(
        t.call(None, &port_path(RXE, 1), PORT, "GetQosProfile", &[])
            .await?,
        "NotSupported",
    );
    assert!(msg.contains("EOPNOTSUPP"), "{msg}");
    assert_eq!(t.etc_file(FILE), None);
    // An InfiniBand port is no RoCE port.
    let msg = err(set(&t, 1, RECIPE).await?, "NotSupported");
    assert!(msg.contains("not a RoCE port"), "{msg}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_profiles_change_nothing() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let mut bad = RECIPE.to_vec();
    bad[4] = "40"; // ETS 40 + 50
    let msg = err(set(&t, MLX5, &bad).await?, "InvalidArgument");
    assert!(msg.contains("sum to 90%"), "{msg}");
    let mut bad = RECIPE.to_vec();
    bad[2] = "9"; // PFC priority 9
    let msg = err(set(&t, MLX5, &bad).await?, "InvalidArgument");
    assert!(msg.contains("priority 9"), "{msg}");
    let mut bad = RECIPE.to_vec();
    bad[22] = "64"; // DSCP 64
    let msg = err(set(&t, MLX5, &bad).await?, "InvalidArgument");
    assert!(msg.contains("DSCP 64"), "{msg}");
    assert_eq!(pfc_en(&t.sim).await, 0);
    assert_eq!(t.etc_file(FILE), None);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_later_step_undoes_every_change() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    // The save fails after every kernel change was made and read back.
    t.sim.fail_next(SimOp::WriteFile, Errno::EIO);
    let msg = err(set(&t, MLX5, RECIPE).await?, "Failed");
    assert!(
        msg.contains("qos.toml") && msg.contains("put back"),
        "{msg}"
    );
    assert_eq!(pfc_en(&t.sim).await, 0);
    assert!(t.sim.dcb_read(MLX5_NETDEV).await?.apps.is_empty());
    assert_eq!(t.sim.roce_traffic_class("mlx5_1").await?, Some(-1));
    assert_eq!(t.sim.roce_ecn(MLX5_NETDEV).await?, Some(0xff));
    assert_eq!(t.etc_file(FILE), None);
    Ok(())
}
