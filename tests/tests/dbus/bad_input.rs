//! The bad-input suite: every mutating method, against each class of bad input (empty, too
//! long, wrong characters, `../` and `/`, quotes and newlines, out-of-range numbers, unknown or
//! vanished objects, a device unplugged mid-call, two conflicting calls at once), answers with
//! its typed error and leaves both the simulated kernel and every file under /etc as they
//! were. Calls go through busctl, the real bus and real polkitd, as root.
//!
//! Soft links, IPoIB and RoCE are here; the persistent-naming methods have the same suite in
//! `dbus_naming.rs` (`ipoib_name_refusals_change_nothing`, `naming_refusals_change_nothing`),
//! next to the rules files they compare byte for byte.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use rdma_manager_dbus::ROOT_PATH;
use rdma_manager_tests::bus::{skip_reason, PolkitConfig, Reply};
use rdma_manager_tests::service::{tree_files, SystemSetup};
use rdma_managerd::kernel::sim::SimOp;

macro_rules! require_harness {
    () => {
        if let Some(reason) = skip_reason() {
            eprintln!("skipping: {reason}");
            return Ok(());
        }
    };
}

/// Every file under the simulated host's /etc, with its bytes.
fn etc_files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    tree_files(root, &["etc"])
}

/// The kernel and the disk, to compare before and after a refused call.
#[derive(PartialEq)]
struct World {
    kernel: String,
    etc: BTreeMap<String, Vec<u8>>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let etc: Vec<String> = self
            .etc
            .iter()
            .map(|(k, v)| format!("{k}: {}", String::from_utf8_lossy(v)))
            .collect();
        write!(f, "{}\n{}", self.kernel, etc.join("\n"))
    }
}

fn world(t: &SystemSetup) -> World {
    World {
        kernel: t.sim.kernel_snapshot(),
        etc: etc_files(t.sim.root()),
    }
}

/// One refused call: (object path, interface suffix or "" for the root interface, method,
/// busctl signature and arguments, the error name wanted).
pub struct Case {
    pub path: String,
    pub iface: &'static str,
    pub method: &'static str,
    pub args: Vec<String>,
    pub want: &'static str,
}

fn case(
    path: &str,
    iface: &'static str,
    method: &'static str,
    args: &[&str],
    want: &'static str,
) -> Case {
    Case {
        path: path.to_string(),
        iface,
        method,
        args: args.iter().map(|s| s.to_string()).collect(),
        want,
    }
}

/// Runs every case and checks the error name and that nothing changed.
async fn refused(t: &SystemSetup, cases: &[Case]) -> Result<()> {
    let mut failures = Vec::new();
    for c in cases {
        let before = world(t);
        let iface = if c.iface.is_empty() {
            rdma_manager_dbus::BUS_NAME.to_string()
        } else {
            format!("{}.{}", rdma_manager_dbus::BUS_NAME, c.iface)
        };
        let args: Vec<&str> = c.args.iter().map(String::as_str).collect();
        let reply = t.call(None, &c.path, &iface, c.method, &args).await?;
        let label = format!("{} {}.{}({:?})", c.path, iface, c.method, c.args);
        match &reply {
            Reply::Err(name, msg) if name == c.want => {
                assert!(
                    !msg.trim().is_empty(),
                    "{label}: an error without a sentence"
                );
            }
            other => failures.push(format!("{label}: wanted {}, got {other:?}", c.want)),
        }
        let after = world(t);
        if after != before {
            failures.push(format!(
                "{label} changed something:\nbefore {before:?}\nafter {after:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

/// Names that no RDMA device or network interface may have, one per class.
fn bad_names() -> Vec<(&'static str, String)> {
    vec![
        ("empty", String::new()),
        ("too long for a netdev", "x".repeat(16)),
        ("too long for an RDMA device", "x".repeat(64)),
        ("slash", "a/b".into()),
        ("parent directory", "../etc".into()),
        ("dot-dot", "..".into()),
        ("double quote", "a\"b".into()),
        ("single quote", "a'b".into()),
        ("newline", "a\nb".into()),
        ("space", "a b".into()),
        ("glob", "ib*".into()),
        ("percent template", "rxe%d".into()),
        ("udev operator", "x\",RUN+=\"/bin/sh".into()),
        ("non-ASCII", "ïb0".into()),
    ]
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

#[tokio::test(flavor = "multi_thread")]
async fn ipoib_methods_refuse_bad_input_and_change_nothing() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let path = |name: &str| {
        t.sim
            .spec()
            .netdevs
            .iter()
            .find(|n| n.name == name)
            .map(|n| rdma_manager_dbus::ipoib_path(n.ifindex))
            .unwrap_or_else(|| panic!("the demo host has {name}"))
    };
    let (ib0, cx6, child) = (path("ib0"), path("ibp59s0f0"), path("ibp59s0f0.8002"));
    let create = |p: &str, args: &[&str], want: &'static str| {
        let mut a = vec!["qsa{sv}"];
        a.extend_from_slice(args);
        case(p, "Ipoib", "CreateChild", &a, want)
    };
    let mut cases = Vec::new();
    // An empty name asks for the default one: every other bad name is refused.
    for (_, bad) in bad_names().into_iter().filter(|(_, b)| !b.is_empty()) {
        cases.push(create(&ib0, &["2", &bad, "0"], "InvalidArgument"));
    }
    for pkey in ["0", "0x8000", "32768"] {
        cases.push(create(&ib0, &[pkey, "", "0"], "InvalidArgument"));
    }
    for settings in [
        &["1", "pkey", "u", "65538"][..],
        &["1", "MTU", "u", "2044"],
        &["1", "mtu", "i", "2044"],
        &["1", "mtu", "s", "2044"],
        &["1", "mtu", "t", "2044"],
        &["1", "mode", "u", "1"],
        &["1", "umcast", "s", "true"],
        &["1", "mode", "s", "cm"],
        &["1", "mode", "s", "../connected"],
        &["1", "mtu", "u", "71"],
        &["1", "mtu", "u", "4093"],
        &["1", "mtu", "u", "4294967295"],
        &["2", "mode", "s", "connected", "mtu", "u", "65521"],
        &["2", "mode", "s", "connected", "mtu", "u", "67"],
    ] {
        let mut args = vec!["2", ""];
        args.extend_from_slice(settings);
        cases.push(create(&ib0, &args, "InvalidArgument"));
    }
    // Enhanced IPoIB: no connected mode.
    cases.push(create(
        &cx6,
        &["9", "", "1", "mode", "s", "connected"],
        "NotSupported",
    ));
    cases.push(case(
        &cx6,
        "Ipoib",
        "SetMode",
        &["s", "connected"],
        "NotSupported",
    ));
    // Taken: the partition on this port (with or without the bit), a name.
    for pkey in ["0x0002", "0x8002"] {
        cases.push(create(&cx6, &[pkey, "", "0"], "AlreadyExists"));
    }
    cases.push(create(&cx6, &["0x7fff", "", "0"], "AlreadyExists"));
    cases.push(create(&ib0, &["2", "eth0", "0"], "AlreadyExists"));
    // A child of a child; deleting a port's own interface.
    cases.push(create(&child, &["9", "", "0"], "InvalidArgument"));
    cases.push(case(&ib0, "Ipoib", "Delete", &[], "InvalidArgument"));
    for mode in ["", "Connected", "datagram\n", "ud", "../datagram"] {
        cases.push(case(
            &ib0,
            "Ipoib",
            "SetMode",
            &["s", mode],
            "InvalidArgument",
        ));
    }
    for mtu in ["0", "67", "71", "4093", "65521", "4294967295"] {
        cases.push(case(
            &ib0,
            "Ipoib",
            "SetMtu",
            &["u", mtu],
            "InvalidArgument",
        ));
    }
    // An object that does not exist (any more).
    let gone = rdma_manager_dbus::ipoib_path(999);
    cases.push(case(
        &gone,
        "Ipoib",
        "SetMtu",
        &["u", "2044"],
        "org.freedesktop.DBus.Error.UnknownObject",
    ));
    refused(&t, &cases).await?;

    // The interface goes while a call waits for the engine: the delete is slowed down in the
    // kernel, and the SetMtu sent meanwhile finds no such interface when its turn comes.
    t.sim
        .delay_next(SimOp::DeleteNetdev, std::time::Duration::from_millis(800));
    let iface = "org.rdmamanager.RdmaManager1.Ipoib";
    let (a, b) = tokio::join!(t.call(None, &child, iface, "Delete", &[]), async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        t.call(None, &child, iface, "SetMtu", &["u", "2000"]).await
    });
    let (a, b) = (a?, b?);
    assert!(matches!(a, Reply::Ok(_)), "{a:?}");
    assert!(matches!(&b, Reply::Err(n, _) if n == "NotFound"), "{b:?}");
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

#[tokio::test(flavor = "multi_thread")]
async fn port_type_refuses_bad_input_and_changes_nothing() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    // The demo host: Device/0 mlx4_1 (port 1 ib, port 2 eth), Device/3 rxe0.
    let mlx4_p1 = format!("{ROOT_PATH}/Device/0/Port/1");
    let rxe = format!("{ROOT_PATH}/Device/3/Port/1");
    let gone = format!("{ROOT_PATH}/Device/99/Port/1");
    let long = "e".repeat(300);
    let mut cases = Vec::new();
    for bad in [
        "",
        "roce",
        "eth\nib",
        "ib eth",
        "auto (eth)",
        "1",
        "../eth",
        &long,
    ] {
        cases.push(case(
            &mlx4_p1,
            "Port",
            "SetPortType",
            &["s", bad],
            "InvalidArgument",
        ));
    }
    // mlx4's port rule is covered end to end in port_type.rs; here a soft device and a
    // device gone.
    cases.push(case(
        &rxe,
        "Port",
        "SetPortType",
        &["s", "eth"],
        "NotSupported",
    ));
    cases.push(case(
        &gone,
        "Port",
        "SetPortType",
        &["s", "eth"],
        "org.freedesktop.DBus.Error.UnknownObject",
    ));
    refused(&t, &cases).await?;
    let file = t
        .sim
        .root()
        .join("sys/bus/pci/drivers/mlx4_core/0000:04:00.0/mlx4_port2");
    assert_eq!(std::fs::read_to_string(file)?, "eth\n");
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
