//! IP settings through a real systemd-networkd (`rdma_manager_tests::networkd`): the daemon
//! writes its `.network` file into the directory networkd reads, asks networkd over D-Bus to
//! reload, and the address appears on networkd's kernel link; not confirmed in time, the
//! change is rolled back (the previous file, networkd reloaded, the address gone); bad input
//! is refused, typed, with nothing changed; a link networkd runs with another file is not
//! touched.
//!
//! The daemon runs on the simulated demo host (whose rxe0 runs over `eth0`) and serves on
//! networkd's private bus; networkd's namespace has a veth pair whose one end is named
//! `eth0`, so both know the same interface. NetworkManager does not run there.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use futures::StreamExt;
use rdma_manager_dbus::{NetworkProxy, PendingChangeProxy};
use rdma_manager_tests::networkd::{skip_reason, PrivateNetworkd};
use rdma_managerd::kernel::sim::{fixtures, SimHost};
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};

pub(crate) const ERR: &str = "org.rdmamanager.RdmaManager1.Error.";
const FILE: &str = "etc/systemd/network/50-rdma-manager-eth0.network";

pub(crate) fn error_name(r: &Result<impl std::fmt::Debug, zbus::Error>) -> (String, String) {
    match r {
        Err(zbus::Error::MethodError(name, text, _)) => {
            (name.to_string(), text.clone().unwrap_or_default())
        }
        other => panic!("not a method error: {other:?}"),
    }
}

pub(crate) fn text(map: &HashMap<String, OwnedValue>, key: &str) -> String {
    map.get(key)
        .and_then(|v| v.downcast_ref::<&str>().ok().map(str::to_string))
        .unwrap_or_else(|| panic!("no string {key} in {map:?}"))
}

pub(crate) fn texts(map: &HashMap<String, OwnedValue>, key: &str) -> Vec<String> {
    map.get(key)
        .and_then(|v| Vec::<String>::try_from(v.clone()).ok())
        .unwrap_or_else(|| panic!("no list {key} in {map:?}"))
}

pub(crate) async fn pending(
    conn: &zbus::Connection,
    path: &OwnedObjectPath,
) -> Result<PendingChangeProxy<'static>> {
    Ok(PendingChangeProxy::builder(conn)
        .path(path.clone())?
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?)
}

pub(crate) async fn ended(
    signals: &mut rdma_manager_dbus::proxies::ChangeEndedStream,
    change: &OwnedObjectPath,
    secs: u64,
) -> Result<String> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let signal = tokio::time::timeout(left, signals.next())
            .await
            .with_context(|| format!("no ChangeEnded for {change} within {secs} s"))?
            .context("the signal stream ended")?;
        let args = signal.args()?;
        if &args.change == change {
            return Ok(args.outcome);
        }
    }
}

/// Waits until networkd's kernel link has exactly these IPv4 addresses.
pub(crate) async fn wait_ipv4(nd: &PrivateNetworkd, want: &[&str], secs: u64) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let now = nd.ipv4_of("eth0")?;
        if now == want {
            return Ok(());
        }
        ensure!(
            Instant::now() < deadline,
            "eth0 has {now:?}, not {want:?}, after {secs} s; networkd's log:\n{}",
            nd.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ip_settings_through_networkd_are_pending_and_roll_back_by_themselves() -> Result<()> {
    if let Some(reason) = skip_reason() {
        assert!(
            !rdma_manager_tests::bus::tools_required(),
            "RDMA_MANAGER_REQUIRE_TOOLS=1 forbids skipping: {reason}"
        );
        eprintln!("skipping: {reason}");
        return Ok(());
    }
    let sim = SimHost::new(fixtures::demo_host())?;
    let network_dir = sim.root().join("etc/systemd/network");
    let nd = PrivateNetworkd::start(
        &network_dir,
        "ip link add eth0 type veth peer name eth0p && ip link set eth0p up",
    )
    .await?;
    let _service = nd.serve(&sim).await?;
    let client = nd.bus.connect().await?;
    let network = NetworkProxy::builder(&client)
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?;
    let mut signals = network.receive_change_ended().await?;
    let file = sim.root().join(FILE);

    // Before: networkd is the manager, nothing configures eth0, its addresses are shown.
    let before = network.get_ip_settings("eth0").await?;
    assert_eq!(text(&before, "manager"), "systemd-networkd");
    assert_eq!(text(&before, "owner"), "");
    assert_eq!(text(&before, "kind"), "port");
    assert!(!before.contains_key("ipv4.method"), "{before:?}");

    // Bad input: typed errors, no file, nothing on the link.
    let addr = |a: &str| Value::from(vec![a.to_string()]);
    let bad: Vec<(&str, HashMap<&str, Value<'_>>, u32, &str)> = vec![
        (
            "eth0",
            HashMap::from([("ipv4.addresses", addr("198.51.100.7/33"))]),
            10,
            "InvalidArgument",
        ),
        (
            "eth0",
            HashMap::from([("ipv4.addresses", addr("2001:db8::7/64"))]),
            10,
            "InvalidArgument",
        ),
        (
            "eth0",
            HashMap::from([("ipv4.gateway", Value::from("2001:db8::1"))]),
            10,
            "InvalidArgument",
        ),
        (
            "eth0",
            HashMap::from([("ipv4.mtu", Value::from(1500u32))]),
            10,
            "InvalidArgument",
        ),
        (
            "eth0",
            HashMap::from([("ipv4.addresses", addr("198.51.100.7/24"))]),
            5,
            "InvalidArgument",
        ),
        (
            "nosuch0",
            HashMap::from([("ipv4.addresses", addr("198.51.100.7/24"))]),
            10,
            "NotFound",
        ),
    ];
    for (interface, keys, timeout, want) in bad {
        let r = network
            .set_ip_settings(interface, keys.clone(), timeout)
            .await;
        let (name, message) = error_name(&r);
        assert_eq!(name, format!("{ERR}{want}"), "{keys:?}: {message}");
        assert!(!file.exists(), "{keys:?} wrote {}", file.display());
    }
    assert_eq!(nd.ipv4_of("eth0")?, Vec::<String>::new());

    // A change, confirmed: networkd puts the address on the kernel's link.
    let change = network
        .set_ip_settings(
            "eth0",
            HashMap::from([("ipv4.addresses", addr("198.51.100.7/24"))]),
            10,
        )
        .await?;
    wait_ipv4(&nd, &["198.51.100.7/24"], 10).await?;
    let written = std::fs::read_to_string(&file)?;
    assert!(written.contains("Address=198.51.100.7/24"), "{written}");
    assert!(written.contains("[Match]\nName=eth0\n"), "{written}");
    let now = network.get_ip_settings("eth0").await?;
    assert_eq!(text(&now, "owner"), "systemd-networkd");
    assert_eq!(text(&now, "ipv4.method"), "manual");
    assert_eq!(texts(&now, "ipv4.addresses"), ["198.51.100.7/24"]);
    pending(&client, &change).await?.confirm().await?;
    assert_eq!(ended(&mut signals, &change, 5).await?, "confirmed");

    // Another, not confirmed: after its 10 s the previous file is back and so is the
    // previous address.
    let change = network
        .set_ip_settings(
            "eth0",
            HashMap::from([("ipv4.addresses", addr("203.0.113.9/24"))]),
            10,
        )
        .await?;
    wait_ipv4(&nd, &["203.0.113.9/24"], 10).await?;
    assert_eq!(ended(&mut signals, &change, 20).await?, "timed-out");
    wait_ipv4(&nd, &["198.51.100.7/24"], 10).await?;
    assert_eq!(std::fs::read_to_string(&file)?, written);

    // Rolled back at once: back to the confirmed one.
    let change = network
        .set_ip_settings(
            "eth0",
            HashMap::from([("ipv4.addresses", addr("192.0.2.44/24"))]),
            60,
        )
        .await?;
    wait_ipv4(&nd, &["192.0.2.44/24"], 10).await?;
    pending(&client, &change).await?.roll_back().await?;
    assert_eq!(ended(&mut signals, &change, 5).await?, "rolled-back");
    wait_ipv4(&nd, &["198.51.100.7/24"], 10).await?;
    Ok(())
}

/// A link networkd runs with a file that is not the daemon's (the administrator's, or
/// netplan's rendering) is left to that file: Busy, nothing written.
#[tokio::test(flavor = "multi_thread")]
async fn a_link_networkd_runs_with_another_file_is_not_touched() -> Result<()> {
    if skip_reason().is_some() {
        return Ok(());
    }
    let sim = SimHost::new(fixtures::demo_host())?;
    let network_dir = sim.root().join("etc/systemd/network");
    std::fs::create_dir_all(&network_dir)?;
    std::fs::write(
        network_dir.join("10-admin.network"),
        "[Match]\nName=eth0\n\n[Network]\nAddress=192.0.2.10/24\n",
    )?;
    let nd = PrivateNetworkd::start(
        &network_dir,
        "ip link add eth0 type veth peer name eth0p && ip link set eth0p up",
    )
    .await?;
    wait_ipv4(&nd, &["192.0.2.10/24"], 10).await?;
    let _service = nd.serve(&sim).await?;
    let client = nd.bus.connect().await?;
    let network = NetworkProxy::new(&client).await?;
    let r = network
        .set_ip_settings(
            "eth0",
            HashMap::from([("ipv4.addresses", Value::from(vec!["198.51.100.7/24"]))]),
            10,
        )
        .await;
    let (name, message) = error_name(&r);
    assert_eq!(name, format!("{ERR}Busy"), "{message}");
    assert!(message.contains("10-admin.network"), "{message}");
    assert!(!sim.root().join(FILE).exists());
    assert_eq!(nd.ipv4_of("eth0")?, ["192.0.2.10/24"]);
    Ok(())
}

/// The simulated host's networkd (what `--simulate` and rdma-tui's demo run) takes the
/// daemon's file the way the real one does: the address reaches the simulated kernel and
/// the IPoIB object, and goes again when the change is rolled back.
#[tokio::test(flavor = "multi_thread")]
async fn the_simulated_networkd_applies_the_same_file() -> Result<()> {
    if let Some(reason) = rdma_manager_tests::bus::skip_reason() {
        eprintln!("skipping: {reason}");
        return Ok(());
    }
    use rdma_managerd::kernel::sim::networkd::SimNetworkd;
    use rdma_managerd::system::sim::SimSystemServices;
    use std::sync::Arc;
    let bus = rdma_manager_tests::bus::BusConfig::system()
        .with_rdma_manager_policy()
        .start()?;
    let sim = SimHost::new(fixtures::demo_host())?;
    let services = SimSystemServices::new();
    services.set_networkd(Some(Arc::new(SimNetworkd::new(sim.clone()))));
    let conn = bus.connect().await?;
    let _service = rdma_managerd::dbus::server::serve_with(
        conn.clone(),
        Arc::new(sim.clone()),
        true,
        rdma_managerd::engine::EngineConfig::default(),
        rdma_managerd::dbus::polkit::Authorizer::same_user_for_simulation(&conn),
        Arc::new(services),
    )
    .await?;
    let client = bus.connect().await?;
    let network = NetworkProxy::new(&client).await?;
    let mut signals = network.receive_change_ended().await?;
    let ib0_path = OwnedObjectPath::try_from(rdma_manager_dbus::ipoib_path(
        sim.spec()
            .netdevs
            .iter()
            .find(|n| n.name == "ib0")
            .context("ib0")?
            .ifindex,
    ))?;
    let ib0 = rdma_manager_dbus::IpoibProxy::builder(&client)
        .path(ib0_path)?
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?;
    let before = ib0.addresses().await?;
    assert_eq!(before, ["192.168.100.11/24", "fe80::f652:1403:3:9381/64"]);
    assert_eq!(
        text(&network.get_ip_settings("ib0").await?, "manager"),
        "systemd-networkd"
    );
    let change = network
        .set_ip_settings(
            "ib0",
            HashMap::from([("ipv4.addresses", Value::from(vec!["10.10.0.1/16"]))]),
            60,
        )
        .await?;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !ib0.addresses().await?.contains(&"10.10.0.1/16".to_string()) {
        ensure!(
            Instant::now() < deadline,
            "ib0 has {:?}",
            ib0.addresses().await?
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(sim
        .root()
        .join("etc/systemd/network/50-rdma-manager-ib0.network")
        .exists());
    pending(&client, &change).await?.roll_back().await?;
    assert_eq!(ended(&mut signals, &change, 5).await?, "rolled-back");
    let deadline = Instant::now() + Duration::from_secs(5);
    while ib0.addresses().await? != before {
        ensure!(
            Instant::now() < deadline,
            "ib0 has {:?}",
            ib0.addresses().await?
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!sim
        .root()
        .join("etc/systemd/network/50-rdma-manager-ib0.network")
        .exists());
    Ok(())
}

/// rdma-tui over the real networkd: the RoCE page's IP form sets an address that networkd puts on the link and keeps
/// once confirmed, and its details then say who manages eth0's IP settings.
#[tokio::test(flavor = "multi_thread")]
async fn rdma_tui_sets_an_address_through_networkd() -> Result<()> {
    if skip_reason().is_some() {
        return Ok(());
    }
    use rdma_manager_tests::tmux::{workspace_bin, Tmux};
    let wait = Duration::from_secs(20);
    let sim = SimHost::new(fixtures::demo_host())?;
    let nd = PrivateNetworkd::start(
        &sim.root().join("etc/systemd/network"),
        "ip link add eth0 type veth peer name eth0p && ip link set eth0p up",
    )
    .await?;
    let _service = nd.serve(&sim).await?;
    let bin = workspace_bin("rdma-tui")?;
    let tui = Tmux::start(
        &format!("{} --address={}", bin.display(), nd.bus.address()),
        80,
        24,
        &[("NO_COLOR", "1")],
    )?;
    tui.wait_for_text("rxe0", wait)?;
    tui.keys(&["6"])?;
    tui.wait_for_text("RoCE ports:", wait)?;
    tui.keys(&["Down", "Down"])?;
    tui.wait_for("rxe0/1 selected", wait, |s| {
        s.lines().any(|l| l.starts_with("> rxe0/1"))
    })?;
    tui.keys(&["i"])?;
    tui.wait_for_text("IP settings of eth0", wait)?;
    tui.keys(&["Tab"])?;
    tui.type_text("198.51.100.9/24")?;
    tui.keys(&["Enter"])?;
    tui.wait_for_text("Keep these settings?", wait)?;
    wait_ipv4(&nd, &["198.51.100.9/24"], 10).await?;
    tui.keys(&["Enter"])?;
    tui.wait_for("the dialog to close", wait, |s| {
        !s.contains("Keep these settings?")
    })?;
    let network = NetworkProxy::new(&nd.bus.connect().await?).await?;
    assert!(network.pending_changes().await?.is_empty());
    assert_eq!(nd.ipv4_of("eth0")?, ["198.51.100.9/24"]);
    // The details say who manages it now (the daemon's host is simulated: its eth0 has no
    // address of the namespace's).
    let s = tui.wait_for_text("IP settings: systemd-networkd", wait)?;
    eprintln!("{s}");
    Ok(())
}

/// `rdma-tui --demo` lets a user try IP settings without NetworkManager: the IPoIB page
/// shows ib0's addresses and that systemd-networkd (the simulated host's) manages them, and
/// the form sets one that then shows among them.
#[tokio::test(flavor = "multi_thread")]
async fn the_demo_shows_addresses_and_sets_them_through_networkd() -> Result<()> {
    if let Some(reason) = rdma_manager_tests::bus::skip_reason() {
        eprintln!("skipping: {reason}");
        return Ok(());
    }
    use rdma_manager_tests::tmux::{workspace_bin, Tmux};
    let wait = Duration::from_secs(20);
    let bin = workspace_bin("rdma-tui")?;
    let tui = Tmux::start(
        &format!("{} --demo", bin.display()),
        100,
        30,
        &[("NO_COLOR", "1")],
    )?;
    tui.wait_for_text("rxe0", wait)?;
    tui.keys(&["4"])?;
    tui.wait_for("ib0 selected", wait, |s| {
        s.lines().any(|l| l.starts_with("> ") && l.contains("ib0 "))
    })?;
    tui.wait_for_text("Addresses: 192.168.100.11/24", wait)?;
    tui.wait_for_text("IP settings: systemd-networkd", wait)?;
    tui.keys(&["i"])?;
    tui.wait_for_text("IP settings of ib0", wait)?;
    tui.keys(&["Tab"])?;
    tui.type_text("10.10.0.1/16")?;
    tui.keys(&["Enter"])?;
    tui.wait_for_text("Keep these settings?", wait)?;
    tui.keys(&["Enter"])?;
    // Its own address beside the one set by hand, which is not networkd's to remove.
    let s = tui.wait_for("the new address", wait, |s| {
        s.lines()
            .any(|l| l.starts_with("Addresses: 192.168.100.11/24, 10.10.0.1/16,"))
    })?;
    eprintln!("{s}");
    Ok(())
}

/// netplan's configuration with nothing that applies it running (neither NetworkManager nor
/// networkd): the manager is netplan, addresses are shown, changes are refused with what to
/// do, and nothing is written.
#[tokio::test(flavor = "multi_thread")]
async fn under_netplan_alone_changes_are_refused_with_what_to_do() -> Result<()> {
    if let Some(reason) = rdma_manager_tests::bus::skip_reason() {
        eprintln!("skipping: {reason}");
        return Ok(());
    }
    use rdma_managerd::system::sim::SimSystemServices;
    use std::sync::Arc;
    let bus = rdma_manager_tests::bus::BusConfig::system()
        .with_rdma_manager_policy()
        .start()?;
    let sim = SimHost::new(fixtures::demo_host())?;
    let netplan = sim.root().join("etc/netplan");
    std::fs::create_dir_all(&netplan)?;
    std::fs::write(
        netplan.join("01-netcfg.yaml"),
        "network:\n  version: 2\n  renderer: networkd\n",
    )?;
    let conn = bus.connect().await?;
    let _service = rdma_managerd::dbus::server::serve_with(
        conn.clone(),
        Arc::new(sim.clone()),
        true,
        rdma_managerd::engine::EngineConfig::default(),
        rdma_managerd::dbus::polkit::Authorizer::same_user_for_simulation(&conn),
        Arc::new(SimSystemServices::new()),
    )
    .await?;
    let client = bus.connect().await?;
    let network = NetworkProxy::new(&client).await?;
    let ip = network.get_ip_settings("ib0").await?;
    assert_eq!(text(&ip, "manager"), "netplan");
    assert_eq!(texts(&ip, "addresses")[0], "192.168.100.11/24");
    assert!(
        text(&ip, "manager-advice").contains("netplan try"),
        "{ip:?}"
    );
    let r = network
        .set_ip_settings(
            "ib0",
            HashMap::from([("ipv4.addresses", Value::from(vec!["10.10.0.1/16"]))]),
            0,
        )
        .await;
    let (name, message) = error_name(&r);
    assert_eq!(name, format!("{ERR}NotSupported"), "{message}");
    assert!(message.contains("/etc/netplan"), "{message}");
    assert!(!sim.root().join("etc/systemd/network").exists());
    assert_eq!(
        sim.addresses("ib0")
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>(),
        ["192.168.100.11/24", "fe80::f652:1403:3:9381/64"]
    );
    Ok(())
}
