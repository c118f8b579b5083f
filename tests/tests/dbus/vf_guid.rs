//! SR-IOV VF GUIDs through the daemon under real polkitd, on the naming host's PF mlx5_1
//! (0000:3b:00.0, IPoIB ib1, two VFs; VF 1 at 0000:3b:00.3 is mlx5_2): SetVfGuids sets them
//! through the PF's netdev, rebinds the VF (which comes back with the new node GUID), reads
//! them back and remembers them by the PF's node GUID; refusals (zero, all-ones, malformed,
//! a VF the PF has not enabled, a GUID the host already has, a device without SR-IOV)
//! change nothing; an Ethernet PF's netdev answers the kernel's EOPNOTSUPP as NotSupported;
//! the remembered GUIDs come back after a restart and when the VF is created again.

use std::time::{Duration, Instant};

use super::bad_input::{case, refused};
use anyhow::Result;
use rdma_manager_dbus::device_path;
use rdma_manager_dbus::ROOT_PATH;
use rdma_manager_tests::bus::{PolkitConfig, Reply};
use rdma_manager_tests::service::{tree_files, SystemSetup};
use rdma_managerd::kernel::prelude::*;
use rdma_managerd::kernel::sim::{fixtures, HostSpec, SimHost, SimOp};
use rdma_managerd::model::{Errno, Guid};

const FILE: &str = "/etc/rdma-manager/vf-guids.toml";
const DEVICE: &str = "org.rdmamanager.RdmaManager1.Device";
/// The naming host's PF and its VF 1, by kernel index.
const PF: u32 = 1;
const VF_PCI: &str = "0000:3b:00.3";
const NODE: &str = "00:11:22:33:44:55:66:77";
const PORT: &str = "0011:2233:4455:6678";

async fn setup_with(spec: HostSpec) -> Result<SystemSetup> {
    SystemSetup::with_host(false, PolkitConfig::rdma_manager(), SimHost::new(spec)?).await
}

async fn set(t: &SystemSetup, dev: u32, vf: u32, node: &str, port: &str) -> Result<Reply> {
    t.call(
        None,
        &device_path(dev),
        DEVICE,
        "SetVfGuids",
        &["uss", &vf.to_string(), node, port],
    )
    .await
}

async fn vf_guids(t: &SystemSetup, dev: u32) -> Result<String> {
    match t
        .call(
            None,
            &device_path(dev),
            "org.freedesktop.DBus.Properties",
            "Get",
            &["ss", DEVICE, "VfGuids"],
        )
        .await?
    {
        Reply::Ok(o) => Ok(o.trim().to_string()),
        other => anyhow::bail!("Get VfGuids: {other:?}"),
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

/// VF 1's GUIDs as the PF's driver reports them.
async fn held(sim: &SimHost) -> (Option<Guid>, Option<Guid>) {
    let pf = sim.read_sriov("mlx5_1").await.ok().flatten();
    pf.and_then(|p| p.vfs.into_iter().find(|v| v.vf == 1))
        .map(|v| (v.node_guid, v.port_guid))
        .unwrap_or((None, None))
}

const WANT: (Option<Guid>, Option<Guid>) = (
    Some(Guid(0x0011_2233_4455_6677)),
    Some(Guid(0x0011_2233_4455_6678)),
);

#[tokio::test(flavor = "multi_thread")]
async fn guids_are_set_rebound_read_back_and_remembered() -> Result<()> {
    require_harness!();
    let t = setup_with(fixtures::naming_host()).await?;
    assert_eq!(
        vf_guids(&t, PF).await?,
        "v a(usssss) 2 0 \"\" \"\" \"\" \"\" \"\" 1 \"0000:3b:00.3\" \"\" \"\" \"\" \"\""
    );
    // A device that is no PF lists none.
    assert_eq!(vf_guids(&t, 0).await?, "v a(usssss) 0");

    ok(&set(&t, PF, 1, NODE, PORT).await?);
    assert_eq!(held(&t.sim).await, WANT);
    assert_eq!(t.sim.vf_rebinds(), vec![VF_PCI.to_string()]);
    // The VF's RDMA device came back from the rebind with its new node GUID.
    let sim = t.sim.clone();
    eventually("the VF's device with its new node GUID", || {
        let sim = sim.clone();
        async move {
            sim.read_device("mlx5_2")
                .await
                .is_ok_and(|d| d.node_guid == Ok(Guid(0x0011_2233_4455_6677)))
        }
    })
    .await;
    let file = t.etc_file(FILE).expect("vf-guids.toml written");
    assert!(
        file.contains("[[vf]]\npf_node_guid = \"0xb8599f0300d4e62a\"\nvf = 1\nnode_guid = \"00:11:22:33:44:55:66:77\"\nport_guid = \"00:11:22:33:44:55:66:78\"\n"),
        "{file}"
    );
    assert_eq!(
        vf_guids(&t, PF).await?,
        "v a(usssss) 2 0 \"\" \"\" \"\" \"\" \"\" 1 \"0000:3b:00.3\" \"00:11:22:33:44:55:66:77\" \"00:11:22:33:44:55:66:78\" \"00:11:22:33:44:55:66:77\" \"00:11:22:33:44:55:66:78\""
    );

    // Setting VF 1 again to its own GUIDs is no duplicate of itself.
    ok(&set(&t, PF, 1, NODE, PORT).await?);
    // Another VF may not take them.
    err(
        set(&t, PF, 0, NODE, "00:00:00:00:00:00:00:99").await?,
        "AlreadyExists",
    );

    // Forgetting keeps what the driver holds.
    ok(&t
        .call(None, &device_path(PF), DEVICE, "ResetVfGuids", &["u", "1"])
        .await?);
    assert!(!t.etc_file(FILE).unwrap_or_default().contains("[[vf]]"));
    assert_eq!(held(&t.sim).await, WANT);
    err(
        t.call(None, &device_path(PF), DEVICE, "ResetVfGuids", &["u", "1"])
            .await?,
        "NotFound",
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn refusals_change_nothing() -> Result<()> {
    require_harness!();
    let t = setup_with(fixtures::naming_host()).await?;
    let world = |t: &SystemSetup| (t.sim.kernel_snapshot(), tree_files(t.sim.root(), &["etc"]));
    let before = world(&t);
    let invalid = "InvalidArgument";
    for (vf, node, port, want, says) in [
        (
            1,
            "00:00:00:00:00:00:00:00",
            PORT,
            invalid,
            "must not be zero",
        ),
        (1, NODE, "ffff:ffff:ffff:ffff", invalid, "no GUID"),
        (1, "00:11:22", PORT, invalid, "is not a node GUID"),
        (2, NODE, PORT, invalid, "there is no VF 2"),
        // mlx5_0's node GUID.
        (
            1,
            "94:6d:ae:03:00:12:34:50",
            PORT,
            "AlreadyExists",
            "the node GUID of mlx5_0",
        ),
        // The PF's own port GUID.
        (
            1,
            NODE,
            "b8:59:9f:03:00:d4:e6:2a",
            "AlreadyExists",
            "mlx5_1",
        ),
    ] {
        let msg = err(set(&t, PF, vf, node, port).await?, want);
        assert!(msg.contains(says), "{node} {port}: {msg}");
    }
    // rxe0 and the VF itself are no PF.
    for dev in [4, 2] {
        let msg = err(set(&t, dev, 0, NODE, PORT).await?, invalid);
        assert!(msg.contains("no SR-IOV virtual functions"), "{msg}");
    }
    // A kernel failure of the change itself leaves nothing behind.
    t.sim.fail_next(SimOp::SetVfGuids, Errno::EIO);
    err(set(&t, PF, 1, NODE, PORT).await?, "Failed");
    assert_eq!(world(&t), before);
    assert!(t.sim.vf_rebinds().is_empty());
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_save_puts_the_guids_back() -> Result<()> {
    require_harness!();
    let t = setup_with(fixtures::naming_host()).await?;
    ok(&set(&t, PF, 1, NODE, PORT).await?);
    t.sim.fail_next(SimOp::WriteFile, Errno::EIO);
    let msg = err(
        set(
            &t,
            PF,
            1,
            "00:11:22:33:44:55:66:90",
            "00:11:22:33:44:55:66:91",
        )
        .await?,
        "Failed",
    );
    assert!(
        msg.contains("has its GUIDs 00:11:22:33:44:55:66:77 / 00:11:22:33:44:55:66:78 again"),
        "{msg}"
    );
    assert_eq!(held(&t.sim).await, WANT);
    Ok(())
}

/// An Ethernet PF (the demo host's mlx5 RoCE function, given VFs): the kernel refuses VF
/// GUIDs on a netdev that is not InfiniBand, and the daemon says so with the kernel's words.
#[tokio::test(flavor = "multi_thread")]
async fn an_ethernet_pf_is_not_supported_with_the_kernels_reason() -> Result<()> {
    require_harness!();
    let mut spec = fixtures::demo_host();
    let roce = spec
        .devices
        .iter_mut()
        .find(|d| d.name == "mlx5_1")
        .expect("the demo's RoCE mlx5_1");
    roce.placement.sriov_numvfs = Some(2);
    let index = roce.index;
    let t = setup_with(spec).await?;
    let before = t.sim.kernel_snapshot();
    let msg = err(set(&t, index, 0, NODE, PORT).await?, "NotSupported");
    assert!(
        msg.contains("setting SR-IOV VF GUIDs on ")
            && msg.contains("EOPNOTSUPP (Operation not supported)"),
        "{msg}"
    );
    assert_eq!(t.sim.kernel_snapshot(), before);
    assert!(t.etc_file(FILE).is_none());
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn remembered_guids_return_after_a_restart_and_when_the_vf_is_created_again() -> Result<()> {
    require_harness!();
    let mut t = setup_with(fixtures::naming_host()).await?;
    ok(&set(&t, PF, 1, NODE, PORT).await?);
    // A reboot: the driver forgets.
    t.restart_daemon(|sim| sim.forget_vf_guids()).await?;
    let sim = t.sim.clone();
    eventually("GUIDs set again at start", || {
        let sim = sim.clone();
        async move { held(&sim).await == WANT }
    })
    .await;
    assert_eq!(t.sim.vf_rebinds().len(), 2, "rebound again");

    // The VFs destroyed (sriov_numvfs 0) and created again: the VF's device appears.
    let vf = t
        .sim
        .spec()
        .devices
        .into_iter()
        .find(|d| d.name == "mlx5_2")
        .expect("the VF");
    t.sim.unplug("mlx5_2")?;
    t.sim.forget_vf_guids();
    t.sim.plug(vf)?;
    eventually("GUIDs set again when the VF appears", || {
        let sim = sim.clone();
        async move { held(&sim).await == WANT }
    })
    .await;
    assert_eq!(t.sim.vf_rebinds().len(), 3);
    // Nothing more: the VF's return from its rebind finds the GUIDs in place.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(t.sim.vf_rebinds().len(), 3);
    Ok(())
}

/// The declarative state's `sriov-vfs`: GetState lists the PF's VFs, a document sets VF 1's
/// GUIDs in any form through the same job as SetVfGuids (rebind, read-back, remembered), a
/// second apply and GetState's own document change nothing, and a failing step is undone.
#[tokio::test(flavor = "multi_thread")]
async fn the_state_sets_vf_guids_and_shows_them() -> Result<()> {
    require_harness!();
    let t = setup_with(fixtures::naming_host()).await?;
    let conn = t.bus.connect().await?;
    let m = rdma_manager_dbus::ManagerProxy::new(&conn).await?;
    let shown = m.get_state("yaml").await?;
    assert!(
        shown.contains("sriov-vfs:\n- device: mlx5_1\n  vf: 0\n- device: mlx5_1\n  vf: 1\n"),
        "{shown}"
    );
    let doc = format!(
        "sriov-vfs:\n  - {{device: mlx5_1, vf: 1, node-guid: \"{NODE}\", port-guid: \"{PORT}\"}}\n"
    );

    // The rebind fails: the step fails and nothing is remembered (the VF had no GUIDs, which
    // the driver cannot go back to: see SetVfGuids).
    t.sim.fail_next(SimOp::RebindVf, Errno::EIO);
    assert!(m.apply_state(&doc, 0).await.is_err());
    assert!(!t.etc_file(FILE).unwrap_or_default().contains("[[vf]]"));

    let diff = m.diff_state(&doc).await?;
    assert_eq!(diff.len(), 1, "{diff:?}");
    assert_eq!(diff[0].path, "sriov-vfs[mlx5_1/1]");
    assert_eq!(
        diff[0].action,
        "org.rdmamanager.rdmamanager1.manage-adapter"
    );
    assert_eq!(
        diff[0].wanted,
        "node-guid=00:11:22:33:44:55:66:77 port-guid=00:11:22:33:44:55:66:78"
    );
    assert_eq!(m.apply_state(&doc, 0).await?.0, diff);
    assert_eq!(held(&t.sim).await, WANT);
    assert!(t
        .etc_file(FILE)
        .is_some_and(|f| f.contains("node_guid = \"00:11:22:33:44:55:66:77\"")));
    let shown = m.get_state("yaml").await?;
    assert!(
        shown.contains(
            "  vf: 1\n  node-guid: 00:11:22:33:44:55:66:77\n  port-guid: 00:11:22:33:44:55:66:78\n"
        ),
        "{shown}"
    );
    assert_eq!(m.apply_state(&doc, 0).await?.0, vec![]);
    assert_eq!(m.apply_state(&shown, 0).await?.0, vec![]);

    // A VF the PF has not enabled: NotFound, with the key path.
    let e = m
        .apply_state("sriov-vfs:\n  - {device: mlx5_1, vf: 5, node-guid: \"00:11:22:33:44:55:66:90\", port-guid: \"00:11:22:33:44:55:66:91\"}\n", 0)
        .await
        .expect_err("VF 5 is not enabled");
    assert!(e.to_string().contains("sriov-vfs[0]"), "{e}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn vf_guid_methods_refuse_bad_input_and_change_nothing() -> Result<()> {
    require_harness!();
    let sim = rdma_managerd::kernel::sim::SimHost::new(
        rdma_managerd::kernel::sim::fixtures::naming_host(),
    )?;
    let t = SystemSetup::with_host(false, PolkitConfig::rdma_manager(), sim).await?;
    // The naming host: Device/1 mlx5_1, an SR-IOV PF with two VFs; Device/4 rxe0.
    let pf = format!("{ROOT_PATH}/Device/1");
    let rxe = format!("{ROOT_PATH}/Device/4");
    let gone = format!("{ROOT_PATH}/Device/99");
    let good = "00:11:22:33:44:55:66:77";
    let long = "0".repeat(300);
    let mut cases = Vec::new();
    for bad in [
        "",
        "0",
        "0x",
        "00:00:00:00:00:00:00:00",
        "0000:0000:0000:0000",
        "ff:ff:ff:ff:ff:ff:ff:ff",
        "00:11:22:33:44:55:66",
        "00:11:22:33:44:55:66:77:88",
        "00-11-22-33-44-55-66-77",
        "00:11:22:33:44:55:66:7g",
        " 00:11:22:33:44:55:66:77\n00",
        &long,
    ] {
        for args in [["uss", "1", bad, good], ["uss", "1", good, bad]] {
            cases.push(case(&pf, "Device", "SetVfGuids", &args, "InvalidArgument"));
        }
    }
    for vf in ["2", "4294967295"] {
        cases.push(case(
            &pf,
            "Device",
            "SetVfGuids",
            &["uss", vf, good, good],
            "InvalidArgument",
        ));
    }
    cases.push(case(
        &rxe,
        "Device",
        "SetVfGuids",
        &["uss", "0", good, good],
        "InvalidArgument",
    ));
    cases.push(case(&pf, "Device", "ResetVfGuids", &["u", "1"], "NotFound"));
    cases.push(case(
        &gone,
        "Device",
        "SetVfGuids",
        &["uss", "0", good, good],
        "org.freedesktop.DBus.Error.UnknownObject",
    ));
    refused(&t, &cases).await
}
