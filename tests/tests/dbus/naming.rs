//! Persistent naming through the daemon, under real polkitd, on the simulated naming host
//! (an onboard HCA, a PF and its VF, an SF, an rxe device): IPoIB names in
//! 70-persistent-ipoib.rules, the RDMA naming policy and fixed names in the override of
//! 60-rdma-persistent-naming.rules, the preview, and renames. Each test checks the reply,
//! the files on disk and the simulated kernel; refused calls and failed steps change nothing.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use rdma_manager_dbus::{device_path, BUS_NAME, ROOT_PATH};
use rdma_manager_tests::bus::{PolkitConfig, Reply};
use rdma_manager_tests::service::{tree_files, SystemSetup};
use rdma_managerd::kernel::sim::{fixtures, HostSpec, SimHost, SimOp};
use rdma_managerd::model::Errno;

const IPOIB: &str = "/etc/udev/rules.d/70-persistent-ipoib.rules";
const OVERRIDE: &str = "/etc/udev/rules.d/60-rdma-persistent-naming.rules";
const VENDOR: &str = "/usr/lib/udev/rules.d/60-rdma-persistent-naming.rules";

/// Port GUIDs of ib0 (mlx5_0) and ib1 (mlx5_1), node GUIDs of mlx5_1 and rxe0.
const IB0_GUID: &str = "0x946dae0300123450";
const IB1_GUID: &str = "b859:9f03:00d4:e62a";
const MLX5_1_GUID: &str = "0xb8599f0300d4e62a";
const RXE0_GUID: &str = "5054:00ff:fe12:3456";

/// rdma-core's shipped rule file, trimmed to its rule and a comment.
const SHIPPED: &str = "# rdma-core\nACTION==\"add\", SUBSYSTEM==\"infiniband\", PROGRAM=\"rdma_rename %k NAME_FALLBACK\"\n";

/// A user's file: CRLF, rdma-core's template comment, a rule of their own for a port this
/// host does not have, tabs, and no newline at the end.
const USER_IPOIB: &str = "# Modern udev is case sensitive and all addresses need to be in lower case.\r\n#\r\n# ACTION==\"add\", SUBSYSTEM==\"net\", DRIVERS==\"?*\", ATTR{type}==\"32\", ATTR{address}==\"?*00:02:c9:03:00:31:78:f2\", NAME=\"mlx4_ib3\"\r\nACTION==\"add\",\tSUBSYSTEM==\"net\", ATTR{address}==\"?*00:02:c9:03:00:31:78:f2\", NAME=\"site_ib\"\r\n# end";

/// The naming host with udevd running and the given files in place before the daemon starts.
async fn setup_with(spec: HostSpec, files: &[(&str, &str)]) -> Result<SystemSetup> {
    let sim = SimHost::new(spec)?;
    sim.set_udevd_running(true)?;
    for (path, text) in files {
        let p = sim.root().join(path.trim_start_matches('/'));
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(p, text)?;
    }
    SystemSetup::with_host(false, PolkitConfig::rdma_manager(), sim).await
}

async fn setup(files: &[(&str, &str)]) -> Result<SystemSetup> {
    setup_with(fixtures::naming_host(), files).await
}

fn file(t: &SystemSetup, path: &str) -> Option<String> {
    t.etc_file(path)
}

fn netdev_names(t: &SystemSetup) -> Vec<String> {
    t.sim
        .spec()
        .netdevs
        .iter()
        .map(|n| n.name.clone())
        .collect()
}

async fn property(t: &SystemSetup, path: &str, iface: &str, name: &str) -> Result<String> {
    match t
        .call(
            None,
            path,
            "org.freedesktop.DBus.Properties",
            "Get",
            &["ss", iface, name],
        )
        .await?
    {
        Reply::Ok(out) => Ok(out),
        other => anyhow::bail!("Get {name}: {other:?}"),
    }
}

async fn root_property(t: &SystemSetup, name: &str) -> Result<String> {
    property(t, ROOT_PATH, BUS_NAME, name).await
}

fn ok(reply: &Reply) {
    assert!(matches!(reply, Reply::Ok(_)), "{reply:?}");
}

fn err<'a>(reply: &'a Reply, name: &str) -> &'a str {
    match reply {
        Reply::Err(n, m) if n == name => {
            assert!(!m.trim().is_empty(), "an error without a sentence");
            m
        }
        other => panic!("wanted {name}, got {other:?}"),
    }
}

/// Every file under the simulated host's /etc and /usr, with its bytes.
fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    tree_files(root, &["etc", "usr"])
}

/// The kernel and the files, to compare before and after a refused call.
fn world(t: &SystemSetup) -> (String, BTreeMap<String, Vec<u8>>, u32) {
    (
        t.sim.kernel_snapshot(),
        files(t.sim.root()),
        t.sim.udev_reloads(),
    )
}

/// Calls `method` on `path` (`iface` "" for the root interface) and wants the error `want`
/// with nothing changed in the kernel, on disk, or told to udevd.
async fn refused(
    t: &SystemSetup,
    path: &str,
    iface: &str,
    method: &str,
    args: &[&str],
    want: &str,
) -> Result<String> {
    let before = world(t);
    let iface = if iface.is_empty() {
        BUS_NAME.to_string()
    } else {
        format!("{BUS_NAME}.{iface}")
    };
    let reply = t.call(None, path, &iface, method, args).await?;
    let label = format!("{method}({args:?})");
    let msg = match &reply {
        Reply::Err(n, m) if n == want => m.clone(),
        other => panic!("{label}: wanted {want}, got {other:?}"),
    };
    assert!(
        !msg.trim().is_empty(),
        "{label}: an error without a sentence"
    );
    assert!(world(t) == before, "{label} changed something");
    Ok(msg)
}

#[tokio::test(flavor = "multi_thread")]
async fn ipoib_names_are_written_applied_and_removed_keeping_the_users_bytes() -> Result<()> {
    require_harness!();
    let t = setup(&[(IPOIB, USER_IPOIB)]).await?;
    let names = root_property(&t, "IpoibNames").await?;
    assert!(
        names.contains("\"0x0002c903003178f2\" \"site_ib\" false 4"),
        "{names}"
    );

    // Named and renamed now.
    ok(&t
        .manager(None, "SetIpoibName", &["ssb", IB0_GUID, "hpc_ib0", "true"])
        .await?);
    let text = file(&t, IPOIB).expect("written");
    assert!(
        text.starts_with(&format!("{USER_IPOIB}\r\n# BEGIN rdma-manager\r\n")),
        "{text:?}"
    );
    assert!(
        text.contains("ACTION==\"add\", SUBSYSTEM==\"net\", DRIVERS==\"?*\", ATTR{type}==\"32\", ATTR{address}==\"?*94:6d:ae:03:00:12:34:50\", NAME=\"hpc_ib0\"\r\n"),
        "{text:?}"
    );
    assert!(text.ends_with("# END rdma-manager\r\n"), "{text:?}");
    assert!(text.contains("Managed by rdma-managerd"), "{text}");
    let nd = netdev_names(&t);
    assert!(
        nd.contains(&"hpc_ib0".to_string()) && !nd.contains(&"ib0".to_string()),
        "{nd:?}"
    );
    assert_eq!(t.sim.udev_reloads(), 1);
    let names = root_property(&t, "IpoibNames").await?;
    assert!(
        names.contains("\"0x946dae0300123450\" \"hpc_ib0\" true 10"),
        "{names}"
    );
    // The interface's object shows the new name.
    let ifindex = t
        .sim
        .spec()
        .netdevs
        .iter()
        .find(|n| n.name == "hpc_ib0")
        .map(|n| n.ifindex)
        .expect("renamed");
    let name = property(
        &t,
        &rdma_manager_dbus::ipoib_path(ifindex),
        &format!("{BUS_NAME}.Ipoib"),
        "Name",
    )
    .await?;
    assert!(name.contains("\"hpc_ib0\""), "{name}");

    // Named for the next boot only.
    ok(&t
        .manager(None, "SetIpoibName", &["ssb", IB1_GUID, "hpc_ib1", "false"])
        .await?);
    assert!(netdev_names(&t).contains(&"ib1".to_string()));
    assert!(file(&t, IPOIB)
        .unwrap_or_default()
        .contains("NAME=\"hpc_ib1\""));
    // The same again changes nothing, not even udevd.
    let reloads = t.sim.udev_reloads();
    ok(&t
        .manager(None, "SetIpoibName", &["ssb", IB1_GUID, "hpc_ib1", "false"])
        .await?);
    assert_eq!(t.sim.udev_reloads(), reloads);

    // Removing both leaves the user's bytes and the newline their last line needed.
    ok(&t.manager(None, "RemoveIpoibName", &["s", IB0_GUID]).await?);
    // The IPoIB-address form has 8 bytes; 9 are refused.
    err(
        &t.manager(
            None,
            "RemoveIpoibName",
            &["s", "00:b8:59:9f:03:00:d4:e6:2a"],
        )
        .await?,
        "InvalidArgument",
    );
    ok(&t
        .manager(None, "RemoveIpoibName", &["s", "b8:59:9f:03:00:d4:e6:2a"])
        .await?);
    assert_eq!(file(&t, IPOIB), Some(format!("{USER_IPOIB}\r\n")));
    // The interface keeps the name it has until it is added again.
    assert!(netdev_names(&t).contains(&"hpc_ib0".to_string()));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn ipoib_name_refusals_change_nothing() -> Result<()> {
    require_harness!();
    let t = setup(&[(IPOIB, USER_IPOIB)]).await?;
    let m = "SetIpoibName";
    for bad in [
        "",
        "sixteen-chars-xx",
        "a/b",
        "../etc",
        "..",
        "a\"b",
        "a'b",
        "a\nb",
        "a b",
        "ib*",
        "ib%d",
        "x\",RUN+=\"/bin/sh",
        "ïb0",
    ] {
        refused(
            &t,
            ROOT_PATH,
            "",
            m,
            &["ssb", IB0_GUID, bad, "true"],
            "InvalidArgument",
        )
        .await?;
    }
    for bad_guid in [
        "",
        "0x946dae030012345",
        "946dae0300123450",
        "../../etc/passwd",
        "0x946dae0300123450\n",
        "94:6d:ae:03:00:12:34",
        "\"",
    ] {
        refused(
            &t,
            ROOT_PATH,
            "",
            m,
            &["ssb", bad_guid, "ib9", "true"],
            "InvalidArgument",
        )
        .await?;
        refused(
            &t,
            ROOT_PATH,
            "",
            "RemoveIpoibName",
            &["s", bad_guid],
            "InvalidArgument",
        )
        .await?;
    }
    // A GUID no port of this host has; the RoCE function's GUID (not InfiniBand).
    let msg = refused(
        &t,
        ROOT_PATH,
        "",
        m,
        &["ssb", "0x0000000000000001", "ib9", "true"],
        "NotFound",
    )
    .await?;
    assert!(msg.contains("ibstat"), "{msg}");
    refused(
        &t,
        ROOT_PATH,
        "",
        m,
        &["ssb", "0x00258dfffe7a1058", "ib9", "true"],
        "NotFound",
    )
    .await?;
    // The name a user's rule gives another port; the name of an interface that exists.
    let msg = refused(
        &t,
        ROOT_PATH,
        "",
        m,
        &["ssb", IB0_GUID, "site_ib", "true"],
        "AlreadyExists",
    )
    .await?;
    assert!(msg.contains("line 4"), "{msg}");
    refused(
        &t,
        ROOT_PATH,
        "",
        m,
        &["ssb", IB0_GUID, "eth0", "false"],
        "AlreadyExists",
    )
    .await?;
    refused(
        &t,
        ROOT_PATH,
        "",
        m,
        &["ssb", IB0_GUID, "ib1", "true"],
        "AlreadyExists",
    )
    .await?;
    // The user's own rule is neither removed nor taken over; a name nobody gave.
    let msg = refused(
        &t,
        ROOT_PATH,
        "",
        "RemoveIpoibName",
        &["s", "0x0002c903003178f2"],
        "InvalidArgument",
    )
    .await?;
    assert!(msg.contains("line 4") && msg.contains("by hand"), "{msg}");
    refused(
        &t,
        ROOT_PATH,
        "",
        "RemoveIpoibName",
        &["s", IB0_GUID],
        "NotFound",
    )
    .await?;
    // A name the daemon gave another port.
    ok(&t
        .manager(None, m, &["ssb", IB1_GUID, "hpc_ib1", "false"])
        .await?);
    let msg = refused(
        &t,
        ROOT_PATH,
        "",
        m,
        &["ssb", IB0_GUID, "hpc_ib1", "false"],
        "AlreadyExists",
    )
    .await?;
    assert!(msg.contains("RemoveIpoibName"), "{msg}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn ipoib_name_steps_that_fail_are_undone() -> Result<()> {
    require_harness!();
    // A 6.1 kernel: an interface that is up cannot be renamed.
    let mut spec = fixtures::naming_host();
    spec.kernel.netdev_live_rename = false;
    let t = setup_with(spec, &[]).await?;
    let m = "SetIpoibName";
    let msg = refused(
        &t,
        ROOT_PATH,
        "",
        m,
        &["ssb", IB0_GUID, "hpc_ib0", "true"],
        "Busy",
    )
    .await?;
    assert!(msg.contains("bring it down first"), "{msg}");
    // Without apply_now the rule is written all the same.
    ok(&t
        .manager(None, m, &["ssb", IB0_GUID, "hpc_ib0", "false"])
        .await?);
    assert!(file(&t, IPOIB).unwrap_or_default().contains("hpc_ib0"));
    ok(&t.manager(None, "RemoveIpoibName", &["s", IB0_GUID]).await?);

    let t = setup(&[]).await?;
    // The write fails: the interface is renamed back and there is still no file.
    t.sim.fail_next(SimOp::WriteFile, Errno::EIO);
    let msg = refused(
        &t,
        ROOT_PATH,
        "",
        m,
        &["ssb", IB0_GUID, "hpc_ib0", "true"],
        "Failed",
    )
    .await?;
    assert!(msg.contains("renamed back"), "{msg}");
    assert_eq!(file(&t, IPOIB), None);
    // udevd refuses the reload: the file goes back to not existing, the rename is undone.
    t.sim.fail_next(SimOp::ReloadUdev, Errno::EIO);
    let msg = refused(
        &t,
        ROOT_PATH,
        "",
        m,
        &["ssb", IB0_GUID, "hpc_ib0", "true"],
        "Failed",
    )
    .await?;
    assert!(msg.contains("udevadm") && msg.contains("put back"), "{msg}");
    assert!(netdev_names(&t).contains(&"ib0".to_string()));
    // With a file there, its bytes are put back.
    ok(&t
        .manager(None, m, &["ssb", IB1_GUID, "hpc_ib1", "false"])
        .await?);
    t.sim.fail_next(SimOp::ReloadUdev, Errno::EIO);
    refused(
        &t,
        ROOT_PATH,
        "",
        m,
        &["ssb", IB0_GUID, "hpc_ib0", "true"],
        "Failed",
    )
    .await?;
    // Broken markers: nothing is changed until they are fixed by hand.
    let t = setup(&[(IPOIB, "# BEGIN rdma-manager\n")]).await?;
    let errors = root_property(&t, "ConfigErrors").await?;
    assert!(errors.contains(IPOIB), "{errors}");
    let msg = refused(
        &t,
        ROOT_PATH,
        "",
        m,
        &["ssb", IB0_GUID, "hpc_ib0", "true"],
        "Failed",
    )
    .await?;
    assert!(msg.contains("fix the markers by hand"), "{msg}");
    Ok(())
}

/// (device, policy) -> (name, active, reason) from PreviewRdmaNames' busctl output.
async fn preview(t: &SystemSetup) -> Result<String> {
    match t.manager(None, "PreviewRdmaNames", &[]).await? {
        Reply::Ok(out) => Ok(out),
        other => anyhow::bail!("PreviewRdmaNames: {other:?}"),
    }
}

fn device_name_of(t: &SystemSetup, index: u32) -> String {
    t.sim
        .spec()
        .devices
        .iter()
        .find(|d| d.index == index)
        .map(|d| d.name.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn naming_policy_fixed_names_and_preview() -> Result<()> {
    require_harness!();
    let t = setup(&[(VENDOR, SHIPPED)]).await?;
    assert!(root_property(&t, "RdmaNamingPolicy")
        .await?
        .contains("\"NAME_FALLBACK\""));
    assert!(root_property(&t, "RdmaNamingPolicySource")
        .await?
        .contains(&format!("\"{VENDOR}\"")));
    let p = preview(&t).await?;
    for row in [
        "\"mlx5_0\" \"NAME_FALLBACK\" \"ibo1\" true \"\"",
        "\"mlx5_0\" \"NAME_PCI\" \"ibp1s0\" false \"\"",
        "\"mlx5_2\" \"NAME_FALLBACK\" \"ibp59s0f0v1\" true \"\"",
        "\"mlx5_3\" \"NAME_PCI\" \"rocep193s0f0S88\" false \"\"",
        "\"mlx5_1\" \"NAME_GUID\" \"ibxb8599f0300d4e62a\" false \"\"",
        "\"rxe0\" \"NAME_KERNEL\" \"\" false \"NAME_KERNEL keeps the name the kernel gives the device\"",
    ] {
        assert!(p.contains(row), "{row} not in {p}");
    }
    assert!(
        p.contains("\"rxe0\" \"NAME_FALLBACK\" \"\" true \"its name was given by the user"),
        "{p}"
    );

    // NAME_PCI, applied now: every hardware device takes its PCI name, rxe0 is left alone.
    ok(&t
        .manager(None, "SetRdmaNamingPolicy", &["sb", "NAME_PCI", "true"])
        .await?);
    let names: Vec<String> = (0..5).map(|i| device_name_of(&t, i)).collect();
    assert_eq!(
        names,
        [
            "ibp1s0",
            "ibp59s0f0",
            "ibp59s0f0v1",
            "rocep193s0f0S88",
            "rxe0"
        ]
    );
    let text = file(&t, OVERRIDE).expect("override written");
    assert!(
        text.starts_with("# BEGIN rdma-manager\n# Managed by rdma-managerd"),
        "{text}"
    );
    assert!(
        text.contains("\nACTION==\"add\", SUBSYSTEM==\"infiniband\", PROGRAM=\"rdma_rename %k NAME_PCI\"\n# END rdma-manager\n"),
        "{text}"
    );
    assert_eq!(t.sim.udev_reloads(), 1);
    assert!(root_property(&t, "RdmaNamingPolicySource")
        .await?
        .contains(&format!("\"{OVERRIDE}\"")));
    let name = property(&t, &device_path(1), &format!("{BUS_NAME}.Device"), "Name").await?;
    assert!(name.contains("\"ibp59s0f0\""), "{name}");
    assert!(preview(&t).await?.contains(
        "\"ibp59s0f0\" \"NAME_PCI\" \"ibp59s0f0\" true \"the device already has this name\""
    ));

    // A fixed name for one device, first in the file, applied now.
    ok(&t
        .manager(
            None,
            "SetRdmaFixedName",
            &["ssb", MLX5_1_GUID, "hpc0", "true"],
        )
        .await?);
    assert_eq!(device_name_of(&t, 1), "hpc0");
    let text = file(&t, OVERRIDE).unwrap_or_default();
    let fixed = text
        .find("ATTR{node_guid}==\"b859:9f03:00d4:e62a\", PROGRAM=\"rdma_rename %k NAME_FIXED hpc0\", GOTO=\"rdma_manager_naming_end\"")
        .expect("fixed rule");
    let policy = text.find("NAME_PCI").expect("policy rule");
    let label = text
        .find("LABEL=\"rdma_manager_naming_end\"")
        .expect("label");
    assert!(fixed < policy && policy < label, "{text}");
    let fixed_names = root_property(&t, "RdmaFixedNames").await?;
    assert!(
        fixed_names.contains("\"0xb8599f0300d4e62a\" \"hpc0\" true"),
        "{fixed_names}"
    );
    assert!(preview(&t)
        .await?
        .contains("\"hpc0\" \"NAME_FIXED\" \"hpc0\" true"));

    // Removed: the device keeps the name until it is added again; the policy stays.
    ok(&t
        .manager(None, "RemoveRdmaFixedName", &["s", MLX5_1_GUID])
        .await?);
    assert_eq!(device_name_of(&t, 1), "hpc0");
    let text = file(&t, OVERRIDE).unwrap_or_default();
    assert!(
        !text.contains("NAME_FIXED") && !text.contains("LABEL"),
        "{text}"
    );
    assert!(text.contains("NAME_PCI"), "{text}");

    // A rename now, not persisted.
    ok(&t
        .call(
            None,
            &device_path(1),
            &format!("{BUS_NAME}.Device"),
            "Rename",
            &["s", "lab0"],
        )
        .await?);
    assert_eq!(device_name_of(&t, 1), "lab0");
    assert!(!file(&t, OVERRIDE).unwrap_or_default().contains("lab0"));

    // NAME_KERNEL: nothing is renamed now (the kernel's names come back with the devices).
    ok(&t
        .manager(None, "SetRdmaNamingPolicy", &["sb", "NAME_KERNEL", "true"])
        .await?);
    assert_eq!(device_name_of(&t, 0), "ibp1s0");
    assert!(file(&t, OVERRIDE)
        .unwrap_or_default()
        .contains("NAME_KERNEL"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fixed_name_on_a_new_override_keeps_the_shipped_policy() -> Result<()> {
    require_harness!();
    let t = setup(&[(VENDOR, SHIPPED)]).await?;
    ok(&t
        .manager(
            None,
            "SetRdmaFixedName",
            &["ssb", MLX5_1_GUID, "hpc0", "false"],
        )
        .await?);
    assert_eq!(device_name_of(&t, 1), "mlx5_1");
    let text = file(&t, OVERRIDE).expect("written");
    assert!(
        text.contains("PROGRAM=\"rdma_rename %k NAME_FALLBACK\""),
        "{text}"
    );
    assert!(root_property(&t, "RdmaNamingPolicy")
        .await?
        .contains("\"NAME_FALLBACK\""));
    // The other devices still get what the shipped policy gives them.
    let p = preview(&t).await?;
    assert!(
        p.contains("\"mlx5_0\" \"NAME_FALLBACK\" \"ibo1\" true"),
        "{p}"
    );
    assert!(p.contains("\"mlx5_1\" \"NAME_FIXED\" \"hpc0\" true"), "{p}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn naming_refusals_change_nothing() -> Result<()> {
    require_harness!();
    // The user copied rdma-core's file and edited it by hand.
    let user_copy = SHIPPED.replace("NAME_FALLBACK", "NAME_KERNEL");
    let t = setup(&[(VENDOR, SHIPPED), (OVERRIDE, &user_copy)]).await?;
    assert!(root_property(&t, "RdmaNamingPolicy")
        .await?
        .contains("\"NAME_KERNEL\""));
    let msg = refused(
        &t,
        ROOT_PATH,
        "",
        "SetRdmaNamingPolicy",
        &["sb", "NAME_PCI", "true"],
        "AlreadyExists",
    )
    .await?;
    assert!(
        msg.contains("line 2") && msg.contains("delete that line"),
        "{msg}"
    );
    for bad in [
        "",
        "NAME_FIXED",
        "name_pci",
        "NAME_PCI ",
        "NAME_PCI\n",
        "../NAME_PCI",
        "\"",
    ] {
        refused(
            &t,
            ROOT_PATH,
            "",
            "SetRdmaNamingPolicy",
            &["sb", bad, "true"],
            "InvalidArgument",
        )
        .await?;
    }
    let long = "x".repeat(64);
    for bad in [
        "",
        long.as_str(),
        "a/b",
        "../etc",
        "..",
        "a\"b",
        "a\nb",
        "a b",
        "rxe%d",
        "x\",RUN+=\"/bin/sh",
    ] {
        refused(
            &t,
            ROOT_PATH,
            "",
            "SetRdmaFixedName",
            &["ssb", MLX5_1_GUID, bad, "true"],
            "InvalidArgument",
        )
        .await?;
        refused(
            &t,
            &device_path(1),
            "Device",
            "Rename",
            &["s", bad],
            "InvalidArgument",
        )
        .await?;
    }
    for bad_guid in [
        "",
        "b8599f0300d4e62a",
        "0xb8599f0300d4e62",
        "../x",
        "b859:9f03:00d4",
    ] {
        refused(
            &t,
            ROOT_PATH,
            "",
            "SetRdmaFixedName",
            &["ssb", bad_guid, "hpc0", "true"],
            "InvalidArgument",
        )
        .await?;
        refused(
            &t,
            ROOT_PATH,
            "",
            "RemoveRdmaFixedName",
            &["s", bad_guid],
            "InvalidArgument",
        )
        .await?;
    }
    // Unknown device, a name another device has, a device named by its creator.
    refused(
        &t,
        ROOT_PATH,
        "",
        "SetRdmaFixedName",
        &["ssb", "0x0000000000000001", "hpc0", "true"],
        "NotFound",
    )
    .await?;
    refused(
        &t,
        ROOT_PATH,
        "",
        "SetRdmaFixedName",
        &["ssb", MLX5_1_GUID, "mlx5_0", "true"],
        "AlreadyExists",
    )
    .await?;
    let msg = refused(
        &t,
        ROOT_PATH,
        "",
        "SetRdmaFixedName",
        &["ssb", RXE0_GUID, "soft0", "true"],
        "InvalidArgument",
    )
    .await?;
    assert!(msg.contains("rdma link add"), "{msg}");
    refused(
        &t,
        ROOT_PATH,
        "",
        "RemoveRdmaFixedName",
        &["s", MLX5_1_GUID],
        "NotFound",
    )
    .await?;
    // Renames: a name taken, and a device unplugged in the middle of the call.
    let msg = refused(
        &t,
        &device_path(1),
        "Device",
        "Rename",
        &["s", "mlx5_0"],
        "AlreadyExists",
    )
    .await?;
    assert!(msg.contains("already exists"), "{msg}");
    t.sim.unplug_during_next(SimOp::RenameDevice, "mlx5_3");
    let reply = t
        .call(
            None,
            &device_path(3),
            &format!("{BUS_NAME}.Device"),
            "Rename",
            &["s", "sf88"],
        )
        .await?;
    err(&reply, "NotFound");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_that_cannot_be_applied_is_undone() -> Result<()> {
    require_harness!();
    let t = setup(&[(VENDOR, SHIPPED)]).await?;
    // Give the SF the name NAME_PCI wants for the VF: the third rename fails with EEXIST.
    ok(&t
        .call(
            None,
            &device_path(3),
            &format!("{BUS_NAME}.Device"),
            "Rename",
            &["s", "ibp59s0f0v1"],
        )
        .await?);
    let msg = refused(
        &t,
        ROOT_PATH,
        "",
        "SetRdmaNamingPolicy",
        &["sb", "NAME_PCI", "true"],
        "AlreadyExists",
    )
    .await?;
    assert!(msg.contains("renamed back"), "{msg}");
    assert_eq!(device_name_of(&t, 0), "mlx5_0");
    assert_eq!(device_name_of(&t, 1), "mlx5_1");
    assert_eq!(file(&t, OVERRIDE), None);
    // The write fails after the renames: they are undone.
    ok(&t
        .call(
            None,
            &device_path(3),
            &format!("{BUS_NAME}.Device"),
            "Rename",
            &["s", "mlx5_3"],
        )
        .await?);
    t.sim.fail_next(SimOp::WriteFile, Errno::EIO);
    let msg = refused(
        &t,
        ROOT_PATH,
        "",
        "SetRdmaNamingPolicy",
        &["sb", "NAME_GUID", "true"],
        "Failed",
    )
    .await?;
    assert!(msg.contains("renamed back"), "{msg}");
    // udevd refuses: the override goes away again and the renames are undone.
    t.sim.fail_next(SimOp::ReloadUdev, Errno::EIO);
    let msg = refused(
        &t,
        ROOT_PATH,
        "",
        "SetRdmaFixedName",
        &["ssb", MLX5_1_GUID, "hpc0", "true"],
        "Failed",
    )
    .await?;
    assert!(msg.contains("put back"), "{msg}");
    assert_eq!(device_name_of(&t, 1), "mlx5_1");
    Ok(())
}

/// The rules the daemon writes pass udev's own checker, where the installed udev has one
/// (`udevadm verify`, systemd 254 and later).
#[test]
fn written_rules_pass_udevadm_verify() -> Result<()> {
    use rdma_managerd::model::Guid;
    use rdma_managerd::naming::rdma_rename::NamingPolicy;
    use rdma_managerd::naming::udev_ipoib::IpoibRulesFile;
    use rdma_managerd::naming::udev_rdma_naming::NamingRules;

    let mut ipoib = IpoibRulesFile::parse(Some(USER_IPOIB.as_bytes()));
    ipoib.set(Guid(0x946d_ae03_0012_3450), "hpc_ib0")?;
    ipoib.set(Guid(0xb859_9f03_00d4_e62a), "hpc_ib1")?;
    let mut naming = NamingRules::parse(None);
    naming.set_fixed(Guid(0xb859_9f03_00d4_e62a), "hpc0", &NamingPolicy::Fallback)?;
    naming.set_policy("NAME_PCI")?;
    let dir = tempfile::tempdir()?;
    let files = [
        (
            dir.path().join("70-persistent-ipoib.rules"),
            ipoib.render()?,
        ),
        (
            dir.path().join("60-rdma-persistent-naming.rules"),
            naming.render()?,
        ),
    ];
    for (p, bytes) in &files {
        std::fs::write(p, bytes)?;
    }
    let verify = std::process::Command::new("udevadm")
        .args(["verify", "--help"])
        .output();
    if !verify.is_ok_and(|o| o.status.success()) {
        eprintln!("skipping: udevadm has no verify command (systemd < 254)");
        return Ok(());
    }
    for (p, _) in &files {
        let out = std::process::Command::new("udevadm")
            .args(["verify", "--resolve-names=never"])
            .arg(p)
            .output()?;
        assert!(
            out.status.success(),
            "udevadm verify {}: {}{}",
            p.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn unplugged_devices_are_not_found_and_their_rules_can_still_be_removed() -> Result<()> {
    require_harness!();
    let t = setup(&[]).await?;
    ok(&t
        .manager(None, "SetIpoibName", &["ssb", IB0_GUID, "hpc_ib0", "false"])
        .await?);
    ok(&t
        .manager(
            None,
            "SetRdmaFixedName",
            &["ssb", "946d:ae03:0012:3450", "hpc0", "false"],
        )
        .await?);
    t.sim.unplug("mlx5_0")?;
    let gone = device_path(0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while root_property(&t, "Devices")
        .await?
        .contains(&format!("\"{gone}\""))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "mlx5_0 still published"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let msg = refused(
        &t,
        ROOT_PATH,
        "",
        "SetIpoibName",
        &["ssb", IB0_GUID, "hpc_ib9", "false"],
        "NotFound",
    )
    .await?;
    assert!(msg.contains("946d:ae03:0012:3450"), "{msg}");
    refused(
        &t,
        ROOT_PATH,
        "",
        "SetRdmaFixedName",
        &["ssb", "0x946dae0300123450", "hpc9", "false"],
        "NotFound",
    )
    .await?;
    // A card taken out for good: its names can still be removed.
    ok(&t.manager(None, "RemoveIpoibName", &["s", IB0_GUID]).await?);
    ok(&t
        .manager(None, "RemoveRdmaFixedName", &["s", "0x946dae0300123450"])
        .await?);
    // The daemon's rule was all the file had: it is gone, as before.
    assert_eq!(file(&t, IPOIB), None);
    assert!(!file(&t, OVERRIDE)
        .unwrap_or_default()
        .contains("NAME_FIXED"));
    Ok(())
}
