//! IP settings through a real netplan (`rdma_manager_tests::networkd` with netplan): the
//! daemon writes the interface's definition into /etc/netplan/90-rdma-manager.yaml through
//! netplan's D-Bus API and leaves it in netplan's `Try`; confirmed, netplan keeps it
//! (`Apply`); rolled back or not confirmed in time, netplan takes it back (`Cancel`) and the
//! previous addresses return on networkd's link. A definition netplan's other files would
//! still change is refused, as is bad input, with nothing changed.
//!
//! As in `networkd.rs`, the daemon runs on the simulated demo host (rxe0 over `eth0`) and
//! networkd's namespace has a veth end named `eth0`.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Result;
use rdma_manager_dbus::NetworkProxy;
use rdma_manager_tests::networkd::{netplan_skip_reason, PrivateNetworkd};
use rdma_managerd::kernel::sim::{fixtures, SimHost};
use zbus::zvariant::Value;

use super::networkd::{ended, error_name, pending, text, texts, wait_ipv4, ERR};

/// The host's own netplan file: eth0 defined, without addresses (a definition with
/// addresses is the refused case below).
const BASE: &str = "network:\n  version: 2\n  renderer: networkd\n  ethernets:\n    eth0:\n      \
                    dhcp4: false\n";

/// Skips (or fails under RDMA_MANAGER_REQUIRE_TOOLS=1) where netplan or networkd is missing.
fn skipped() -> bool {
    match netplan_skip_reason() {
        Some(reason) => {
            assert!(
                !rdma_manager_tests::bus::tools_required(),
                "RDMA_MANAGER_REQUIRE_TOOLS=1 forbids skipping: {reason}"
            );
            eprintln!("skipping: {reason}");
            true
        }
        None => false,
    }
}

async fn start(sim: &SimHost, base: &str) -> Result<PrivateNetworkd> {
    let netplan_dir = sim.root().join("etc/netplan");
    std::fs::create_dir_all(&netplan_dir)?;
    let file = netplan_dir.join("01-netcfg.yaml");
    std::fs::write(&file, base)?;
    // netplan warns about configuration others can read.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))?;
    PrivateNetworkd::start_with_netplan(
        &sim.root().join("etc/systemd/network"),
        &netplan_dir,
        "ip link add eth0 type veth peer name eth0p && ip link set eth0p up",
    )
    .await
}

fn ours(sim: &SimHost) -> std::path::PathBuf {
    sim.root().join("etc/netplan/90-rdma-manager.yaml")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Waits until `path` holds `want`: netplan puts its files back once the rolled-back
/// configuration is applied, a moment after the link has its addresses back.
async fn wait_file(path: &Path, want: &str) -> Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while read(path) != want {
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "{} holds {:?}, not {want:?}",
            path.display(),
            read(path)
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn ip_settings_through_netplan_are_tried_and_rolled_back_by_netplan() -> Result<()> {
    if skipped() {
        return Ok(());
    }
    let sim = SimHost::new(fixtures::demo_host())?;
    let nd = start(&sim, BASE).await?;
    let _service = nd.serve(&sim).await?;
    let client = nd.bus.connect().await?;
    let network = NetworkProxy::builder(&client)
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?;
    let mut signals = network.receive_change_ended().await?;
    let file = ours(&sim);

    // Before: netplan is the manager; its definition of eth0 is read back.
    let before = network.get_ip_settings("eth0").await?;
    assert_eq!(text(&before, "manager"), "netplan", "{before:?}");
    assert_eq!(text(&before, "manager-advice"), "");
    assert_eq!(text(&before, "owner"), "netplan");
    assert_eq!(text(&before, "keyfile"), "");
    assert_eq!(text(&before, "ipv4.method"), "disabled");
    assert_eq!(text(&before, "ipv6.method"), "link-local");
    assert_eq!(texts(&before, "ipv4.addresses"), Vec::<String>::new());

    // Bad input: typed errors, no file of the daemon's, the link as it was.
    let addr = |a: &str| Value::from(vec![a.to_string()]);
    for (interface, keys, want) in [
        (
            "eth0",
            HashMap::from([("ipv4.addresses", addr("192.0.2.7/33"))]),
            "InvalidArgument",
        ),
        (
            "eth0",
            HashMap::from([("ipv4.gateway", Value::from("2001:db8::1"))]),
            "InvalidArgument",
        ),
        (
            "eth0",
            HashMap::from([("ipv4.mtu", Value::from(1500u32))]),
            "InvalidArgument",
        ),
        (
            "nosuch0",
            HashMap::from([("ipv4.addresses", addr("192.0.2.7/24"))]),
            "NotFound",
        ),
    ] {
        let r = network.set_ip_settings(interface, keys.clone(), 30).await;
        let (name, message) = error_name(&r);
        assert_eq!(name, format!("{ERR}{want}"), "{keys:?}: {message}");
        assert!(!file.exists(), "{keys:?} wrote {}", file.display());
    }
    wait_ipv4(&nd, &[], 1).await?;

    // A change, confirmed: netplan tries it, networkd puts the address on the link, and
    // Confirm keeps it in the daemon's file.
    let change = network
        .set_ip_settings(
            "eth0",
            HashMap::from([
                ("ipv4.addresses", addr("192.0.2.7/24")),
                ("ipv4.gateway", Value::from("192.0.2.1")),
            ]),
            30,
        )
        .await?;
    wait_ipv4(&nd, &["192.0.2.7/24"], 15).await?;
    let now = network.get_ip_settings("eth0").await?;
    assert_eq!(texts(&now, "ipv4.addresses"), ["192.0.2.7/24"]);
    assert_eq!(text(&now, "ipv4.gateway"), "192.0.2.1");
    assert_eq!(text(&now, "keyfile"), "/etc/netplan/90-rdma-manager.yaml");
    // netplan's own timer cannot be extended.
    let r = pending(&client, &change).await?.extend(120).await;
    assert_eq!(error_name(&r).0, format!("{ERR}NotSupported"));
    pending(&client, &change).await?.confirm().await?;
    assert_eq!(ended(&mut signals, &change, 5).await?, "confirmed");
    let written = read(&file);
    assert!(written.contains("192.0.2.7/24"), "{written}");
    assert!(
        written.contains("via: \"192.0.2.1\"") || written.contains("via: 192.0.2.1"),
        "{written}"
    );

    // Another, not confirmed: the daemon's deadline cancels netplan's try, and the confirmed
    // address and file come back.
    let change = network
        .set_ip_settings(
            "eth0",
            HashMap::from([("ipv4.addresses", addr("203.0.113.9/24"))]),
            10,
        )
        .await?;
    wait_ipv4(&nd, &["203.0.113.9/24"], 15).await?;
    assert_eq!(ended(&mut signals, &change, 25).await?, "timed-out");
    wait_ipv4(&nd, &["192.0.2.7/24"], 15).await?;
    wait_file(&file, &written).await?;

    // Rolled back at once.
    let change = network
        .set_ip_settings(
            "eth0",
            HashMap::from([("ipv4.addresses", addr("192.0.2.44/24"))]),
            60,
        )
        .await?;
    wait_ipv4(&nd, &["192.0.2.44/24"], 15).await?;
    pending(&client, &change).await?.roll_back().await?;
    assert_eq!(ended(&mut signals, &change, 5).await?, "rolled-back");
    wait_ipv4(&nd, &["192.0.2.7/24"], 15).await?;
    wait_file(&file, &written).await?;
    // netplan really ran: its generator and networkctl, with only init and udev stood in.
    assert!(
        nd.standin_calls().contains("udevadm settle"),
        "{}",
        nd.standin_calls()
    );
    Ok(())
}

/// netplan merges lists across its files: where another file gives eth0 addresses, the
/// daemon's definition could not replace them, and the change is refused with nothing
/// changed.
#[tokio::test(flavor = "multi_thread")]
async fn a_definition_other_netplan_files_still_change_is_refused() -> Result<()> {
    if skipped() {
        return Ok(());
    }
    let sim = SimHost::new(fixtures::demo_host())?;
    let bond = "network:\n  version: 2\n  renderer: networkd\n  ethernets:\n    eth0:\n      \
                dhcp4: false\n      addresses: [198.51.100.1/24]\n  bonds:\n    ib0: {interfaces: []}\n";
    let nd = start(&sim, bond).await?;
    let _service = nd.serve(&sim).await?;
    let client = nd.bus.connect().await?;
    let network = NetworkProxy::new(&client).await?;
    let file = ours(&sim);
    // Netplan keeps 01-netcfg.yaml's address beside any the daemon would write.
    let r = network
        .set_ip_settings(
            "eth0",
            HashMap::from([("ipv4.addresses", Value::from(vec!["192.0.2.7/24"]))]),
            30,
        )
        .await;
    let (name, message) = error_name(&r);
    assert_eq!(name, format!("{ERR}Busy"), "{message}");
    assert!(message.contains("/etc/netplan"), "{message}");
    // A definition in another section (a bond named like the IPoIB interface).
    let r = network
        .set_ip_settings(
            "ib0",
            HashMap::from([("ipv4.addresses", Value::from(vec!["192.0.2.8/24"]))]),
            30,
        )
        .await;
    let (name, message) = error_name(&r);
    assert_eq!(name, format!("{ERR}Busy"), "{message}");
    assert!(message.contains("bonds"), "{message}");
    assert!(!file.exists(), "{}", read(&file));
    wait_ipv4(&nd, &["198.51.100.1/24"], 1).await?;
    Ok(())
}
