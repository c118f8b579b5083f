//! Changes through the daemon's `Network` interface on a real NetworkManager: IP settings of
//! an RDMA port's netdev given with nmcli's keys, each inside a checkpoint and pending until
//! confirmed; NetworkManager rolls back by itself when nobody confirms; bad input is refused,
//! typed, with nothing written; without NetworkManager, `NotSupported`.
//!
//! The daemon runs on the simulated demo host (whose rxe0 runs over `eth0`) and serves on
//! NetworkManager's private bus; NetworkManager's namespace has a veth pair whose one end is
//! named `eth0`, so both know the same interface.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use futures::StreamExt;
use rdma_manager_dbus::types::MovedChild;
use rdma_manager_dbus::{NetworkProxy, PendingChangeProxy};
use rdma_manager_tests::nm::{skip_reason, PrivateNm};
use rdma_managerd::kernel::sim::{fixtures, SimHost};
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};

use super::nm_profiles::{daemon_on, kernel_ipv4, keyfile, wait_for_ipv4};

const ERR: &str = "org.rdmamanager.RdmaManager1.Error.";

fn error_name(r: &Result<impl std::fmt::Debug, zbus::Error>) -> (String, String) {
    match r {
        Err(zbus::Error::MethodError(name, text, _)) => {
            (name.to_string(), text.clone().unwrap_or_default())
        }
        other => panic!("not a method error: {other:?}"),
    }
}

fn text(map: &HashMap<String, OwnedValue>, key: &str) -> String {
    map.get(key)
        .and_then(|v| v.downcast_ref::<&str>().ok().map(str::to_string))
        .unwrap_or_else(|| panic!("no string {key} in {map:?}"))
}

fn texts(map: &HashMap<String, OwnedValue>, key: &str) -> Vec<String> {
    map.get(key)
        .and_then(|v| Vec::<String>::try_from(v.clone()).ok())
        .unwrap_or_else(|| panic!("no list {key} in {map:?}"))
}

fn keyfiles(nm: &PrivateNm) -> Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(nm.keyfile_dir())?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

async fn nm_with_eth0() -> Result<PrivateNm> {
    PrivateNm::start_with("ip link add eth0 type veth peer name eth0p && ip link set eth0p up")
        .await
}

async fn pending(
    conn: &zbus::Connection,
    path: &OwnedObjectPath,
) -> Result<PendingChangeProxy<'static>> {
    Ok(PendingChangeProxy::builder(conn)
        .path(path.clone())?
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?)
}

/// The Port object whose netdev is `netdev`.
async fn port_of(
    conn: &zbus::Connection,
    netdev: &str,
) -> Result<rdma_manager_dbus::PortProxy<'static>> {
    let om = zbus::fdo::ObjectManagerProxy::builder(conn)
        .destination(rdma_manager_dbus::BUS_NAME)?
        .path(rdma_manager_dbus::ROOT_PATH)?
        .build()
        .await?;
    for (path, ifaces) in om.get_managed_objects().await? {
        let Some(props) = ifaces.get("org.rdmamanager.RdmaManager1.Port") else {
            continue;
        };
        let name = props
            .get("Netdev")
            .and_then(|v| v.downcast_ref::<&str>().ok().map(str::to_string));
        if name.as_deref() == Some(netdev) {
            return Ok(rdma_manager_dbus::PortProxy::builder(conn)
                .path(path)?
                .cache_properties(zbus::proxy::CacheProperties::No)
                .build()
                .await?);
        }
    }
    anyhow::bail!("no port with netdev {netdev}")
}

/// Waits for `ChangeEnded` of `change` and returns its outcome.
async fn ended(
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

#[tokio::test(flavor = "multi_thread")]
async fn ip_settings_are_pending_until_confirmed_and_roll_back_by_themselves() -> Result<()> {
    crate::require_nm!();
    let nm = nm_with_eth0().await?;
    let sim = SimHost::new(fixtures::demo_host())?;
    let _service = daemon_on(&nm, &sim).await?;
    let client = nm.bus.connect().await?;
    let network = NetworkProxy::builder(&client)
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?;
    let mut signals = network.receive_change_ended().await?;

    let before = network.get_ip_settings("eth0").await?;
    assert_eq!(text(&before, "kind"), "port");
    assert_eq!(text(&before, "owner"), "");
    assert!(!before.contains_key("ipv4.method"), "{before:?}");

    // Bad input: typed errors, nothing written, no checkpoint left behind.
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
            HashMap::from([("ipv4.dns", addr("not-an-address"))]),
            10,
            "InvalidArgument",
        ),
        (
            "eth0",
            HashMap::from([("ipv4.dns-search", addr("exa mple.com"))]),
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
            HashMap::from([("ipv4.method", Value::from(true))]),
            10,
            "InvalidArgument",
        ),
        (
            "eth0",
            HashMap::from([("ipv4.method", Value::from("manual"))]),
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
        // ib0 is the simulated host's, and NetworkManager has no device of that name.
        (
            "ib0",
            HashMap::from([("ipv4.addresses", addr("198.51.100.7/24"))]),
            10,
            "NotFound",
        ),
    ];
    for (interface, settings, timeout, want) in bad {
        let shown = format!("{interface} {settings:?} {timeout}");
        let r = network.set_ip_settings(interface, settings, timeout).await;
        let (name, message) = error_name(&r);
        assert_eq!(name, format!("{ERR}{want}"), "{shown}: {message}");
        eprintln!("refused as it should be: {shown}: {message}");
    }
    ensure!(keyfiles(&nm)?.is_empty(), "written: {:?}", keyfiles(&nm)?);
    assert!(network.pending_changes().await?.is_empty());
    assert!(kernel_ipv4(&nm, "eth0")?.is_empty());

    // A change: a new ethernet profile for eth0, active, pending confirmation.
    let settings = HashMap::from([
        ("ipv4.addresses", addr("198.51.100.7/24")),
        ("ipv6.method", Value::from("disabled")),
    ]);
    let change = network
        .set_ip_settings("eth0", settings.clone(), 10)
        .await?;
    wait_for_ipv4(&nm, "eth0", &["198.51.100.7/24"], 10).await?;
    assert_eq!(
        network.pending_changes().await?,
        std::slice::from_ref(&change)
    );
    let proxy = pending(&client, &change).await?;
    assert_eq!(proxy.interface().await?, "eth0");
    let (profile, _) = keyfile(&nm, "eth0")?;
    assert!(profile.contains("address1=198.51.100.7/24"), "{profile}");
    let now = network.get_ip_settings("eth0").await?;
    assert_eq!(text(&now, "owner"), "networkmanager");
    assert_eq!(text(&now, "ipv4.method"), "manual");
    assert_eq!(texts(&now, "ipv4.addresses"), ["198.51.100.7/24"]);
    assert!(
        texts(&now, "addresses").contains(&"198.51.100.7/24".to_string()),
        "{now:?}"
    );
    // The port whose netdev eth0 is shows the profile as its owner.
    let port = port_of(&client, "eth0").await?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while port.netdev_owner().await?.kind != "networkmanager" {
        ensure!(
            Instant::now() < deadline,
            "NetdevOwner: {:?}",
            port.netdev_owner().await?
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(port.netdev_owner().await?.profile_id, "eth0");
    // A second change while the first waits: NetworkManager's checkpoints overlap.
    let r = network.set_ip_settings("eth0", settings.clone(), 10).await;
    assert_eq!(error_name(&r).0, format!("{ERR}Busy"), "{r:?}");

    // Nobody confirms: NetworkManager rolls back by itself, the profile it did not have goes.
    assert_eq!(ended(&mut signals, &change, 25).await?, "timed-out");
    wait_for_ipv4(&nm, "eth0", &[], 10).await?;
    ensure!(keyfiles(&nm)?.is_empty(), "left: {:?}", keyfiles(&nm)?);
    assert!(network.pending_changes().await?.is_empty());
    assert_eq!(text(&network.get_ip_settings("eth0").await?, "owner"), "");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !port.netdev_owner().await?.kind.is_empty() {
        ensure!(
            Instant::now() < deadline,
            "NetdevOwner after the rollback: {:?}",
            port.netdev_owner().await?
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Again, confirmed: it stays.
    let change = network.set_ip_settings("eth0", settings, 10).await?;
    wait_for_ipv4(&nm, "eth0", &["198.51.100.7/24"], 10).await?;
    let proxy = pending(&client, &change).await?;
    let deadline = proxy.deadline().await?;
    proxy.extend(30).await?;
    assert!(proxy.deadline().await? > deadline);
    proxy.confirm().await?;
    assert_eq!(ended(&mut signals, &change, 5).await?, "confirmed");
    assert!(network.pending_changes().await?.is_empty());

    // Down, then rolled back at once: up again, with the confirmed address.
    let down = network.deactivate("eth0", 10).await?;
    wait_for_ipv4(&nm, "eth0", &[], 10).await?;
    pending(&client, &down).await?.roll_back().await?;
    assert_eq!(ended(&mut signals, &down, 5).await?, "rolled-back");
    wait_for_ipv4(&nm, "eth0", &["198.51.100.7/24"], 15).await?;
    // Confirmed changes survive the rollback of later ones.
    let (profile, _) = keyfile(&nm, "eth0")?;
    assert!(profile.contains("address1=198.51.100.7/24"), "{profile}");
    Ok(())
}

/// Where no IP manager runs, addresses are still shown (from the kernel), and changes are
/// refused with what the user can do.
#[tokio::test(flavor = "multi_thread")]
async fn without_networkmanager_ip_settings_are_not_supported() -> Result<()> {
    if let Some(reason) = skip_reason() {
        eprintln!("skipping: {reason}");
        return Ok(());
    }
    let bus = rdma_manager_tests::bus::BusConfig::system()
        .with_rdma_manager_policy()
        .start()?;
    let sim = SimHost::new(fixtures::demo_host())?;
    let conn = bus.connect().await?;
    let _service = rdma_managerd::dbus::server::serve_with(
        conn.clone(),
        std::sync::Arc::new(sim.clone()),
        true,
        rdma_managerd::engine::EngineConfig::default(),
        rdma_managerd::dbus::polkit::Authorizer::same_user_for_simulation(&conn),
        std::sync::Arc::new(rdma_managerd::system::BusSystemServices::new(&conn)),
    )
    .await?;
    let client = bus.connect().await?;
    let network = NetworkProxy::new(&client).await?;
    // The addresses are still shown, from the kernel, with what the user can do.
    let ip = network.get_ip_settings("ib0").await?;
    assert_eq!(text(&ip, "manager"), "none");
    assert_eq!(text(&ip, "owner"), "");
    assert_eq!(
        texts(&ip, "addresses"),
        ["192.168.100.11/24", "fe80::f652:1403:3:9381/64"]
    );
    assert!(
        text(&ip, "manager-advice").contains("no IP manager runs"),
        "{ip:?}"
    );
    let r = network
        .set_ip_settings(
            "eth0",
            HashMap::from([("ipv4.method", Value::from("auto"))]),
            0,
        )
        .await;
    let (name, message) = error_name(&r);
    assert_eq!(name, format!("{ERR}NotSupported"), "{message}");
    assert!(
        message.contains("systemctl start NetworkManager"),
        "{message}"
    );
    // Bad input is still bad input.
    let r = network
        .set_ip_settings(
            "nosuch0",
            HashMap::from([("ipv4.method", Value::from("auto"))]),
            0,
        )
        .await;
    assert_eq!(error_name(&r).0, format!("{ERR}NotFound"));
    assert_eq!(
        error_name(&network.activate("eth0", 0).await).0,
        format!("{ERR}NotSupported")
    );
    Ok(())
}

/// A P_Key child of a parent NetworkManager manages is NetworkManager's to make: CreateChild
/// writes a profile and asks NetworkManager to activate it, and never creates the child in
/// the kernel itself. Here the "ib0" NetworkManager manages is a veth, so it cannot make the
/// child: the refusal comes back in NetworkManager's words and the profile is gone again.
#[tokio::test(flavor = "multi_thread")]
async fn a_child_of_a_parent_networkmanager_manages_goes_to_networkmanager() -> Result<()> {
    crate::require_nm!();
    let nm =
        PrivateNm::start_with("ip link add ib0 type veth peer name ib0p && ip link set ib0p up")
            .await?;
    let sim = SimHost::new(fixtures::demo_host())?;
    let _service = daemon_on(&nm, &sim).await?;
    let client = nm.bus.connect().await?;
    let ib0 = super::nm_profiles::ipoib(&client, &sim, "ib0").await?;
    // NetworkManager cannot rename a child: refused before anything is written.
    let r = ib0.create_child(0x8002, "storage", HashMap::new()).await;
    let (name, message) = error_name(&r);
    assert_eq!(name, format!("{ERR}NotSupported"), "{message}");
    assert!(message.contains("ib0.8002"), "{message}");
    let r = ib0.create_child(0x8002, "", HashMap::new()).await;
    let (name, message) = error_name(&r);
    assert!(
        message.contains("NetworkManager") && message.contains("rolled back"),
        "{name}: {message}"
    );
    ensure!(keyfiles(&nm)?.is_empty(), "left: {:?}", keyfiles(&nm)?);
    ensure!(
        !super::nm_profiles::has_netdev(&sim, "ib0.8002"),
        "the daemon made NetworkManager's child itself"
    );
    let persisted =
        std::fs::read_to_string(sim.root().join("etc/rdma-manager/ipoib.toml")).unwrap_or_default();
    assert!(!persisted.contains("8002"), "{persisted}");
    Ok(())
}

/// NetworkManager appears on a host where the daemon made P_Key children: the children it
/// can name are moved into NetworkManager profiles equal to nmcli's, on request, and are
/// forgotten from ipoib.toml only when the move is confirmed.
#[tokio::test(flavor = "multi_thread")]
async fn remembered_children_move_into_networkmanager_on_request() -> Result<()> {
    crate::require_nm!();
    let nm = PrivateNm::start().await?;
    let sim = SimHost::new(fixtures::demo_host())?;
    let _service = daemon_on(&nm, &sim).await?;
    let client = nm.bus.connect().await?;
    let network = NetworkProxy::new(&client).await?;
    let ib0 = super::nm_profiles::ipoib(&client, &sim, "ib0").await?;
    // NetworkManager has no ib0 yet: the daemon makes and remembers the children.
    ib0.create_child(0x0004, "", HashMap::new()).await?;
    ib0.create_child(0x8005, "storage5", HashMap::new()).await?;
    let toml = sim.root().join("etc/rdma-manager/ipoib.toml");
    let remembered = std::fs::read_to_string(&toml)?;
    ensure!(
        remembered.contains("ib0.0004") && remembered.contains("storage5"),
        "{remembered}"
    );
    // Nothing NetworkManager manages: nothing to move, nothing written.
    let r = network.move_to_network_manager(10).await;
    assert_eq!(error_name(&r).0, format!("{ERR}NotFound"), "{r:?}");
    ensure!(keyfiles(&nm)?.is_empty());

    // NetworkManager comes to manage ib0 (here a veth of that name).
    let out = nm.ip(&["link", "add", "ib0", "type", "veth", "peer", "name", "ib0p"])?;
    ensure!(out.status.success(), "ip link add: {out:?}");
    let lib = rdma_managerd::nm::client::NetworkManager::new(client.clone());
    let deadline = Instant::now() + Duration::from_secs(15);
    while !lib.device("ib0").await?.is_some_and(|d| d.managed) {
        ensure!(
            Instant::now() < deadline,
            "NetworkManager does not manage ib0"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // nmcli's keyfile for the same child, to compare with.
    let out = nm.nmcli(&[
        "connection",
        "add",
        "type",
        "infiniband",
        "con-name",
        "ib0.0004",
        "ifname",
        "ib0.0004",
        "parent",
        "ib0",
        "p-key",
        "0x0004",
        "transport-mode",
        "datagram",
        "ipv4.method",
        "disabled",
        "ipv6.method",
        "disabled",
    ])?;
    ensure!(out.status.success(), "nmcli: {out:?}");
    let (theirs, _) = keyfile(&nm, "ib0.0004")?;
    ensure!(nm
        .nmcli(&["connection", "delete", "ib0.0004"])?
        .status
        .success());

    // Rolled back: the profile goes, ipoib.toml keeps the child, the daemon owns it again.
    let (change, _, _) = network.move_to_network_manager(10).await?;
    ensure!(
        keyfile(&nm, "ib0.0004").is_ok(),
        "no profile while the move is pending"
    );
    pending(&client, &change).await?.roll_back().await?;
    ensure!(keyfiles(&nm)?.is_empty(), "left: {:?}", keyfiles(&nm)?);
    assert!(std::fs::read_to_string(&toml)?.contains("ib0.0004"));
    let child = super::nm_profiles::ipoib(&client, &sim, "ib0.0004").await?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.owner().await?.kind != "rdma-manager" {
        ensure!(
            Instant::now() < deadline,
            "owner after the rollback: {:?}",
            child.owner().await?
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Again, confirmed this time.
    let (change, moved, skipped) = network.move_to_network_manager(10).await?;
    assert_eq!(
        moved,
        [MovedChild {
            interface: "ib0.0004".into(),
            profile: "ib0.0004".into()
        }]
    );
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].interface, "storage5");
    assert!(skipped[0].reason.contains("cannot rename"), "{skipped:?}");
    let (ours, _) = keyfile(&nm, "ib0.0004")?;
    assert_eq!(
        super::nm_profiles::without_uuid(&ours),
        super::nm_profiles::without_uuid(&theirs)
    );
    // Still remembered until confirmed; NetworkManager owns it already.
    assert!(std::fs::read_to_string(&toml)?.contains("ib0.0004"));
    assert_eq!(child.owner().await?.kind, "networkmanager");
    pending(&client, &change).await?.confirm().await?;
    let now = std::fs::read_to_string(&toml)?;
    assert!(
        !now.contains("ib0.0004") && now.contains("storage5"),
        "{now}"
    );
    // The child stays; NetworkManager's now.
    ensure!(super::nm_profiles::has_netdev(&sim, "ib0.0004"));
    Ok(())
}

/// rdma-tui as its user drives it, at 80x24, on the daemon talking to a real
/// NetworkManager: the RoCE page's IP form gives rxe0's netdev an address, the "Keep these
/// settings?" dialog counts down, Enter keeps it.
#[tokio::test(flavor = "multi_thread")]
async fn rdma_tui_sets_an_address_and_keeps_it() -> Result<()> {
    crate::require_nm!();
    use rdma_manager_tests::tmux::{workspace_bin, Tmux};
    let wait = Duration::from_secs(20);
    let nm = nm_with_eth0().await?;
    let sim = SimHost::new(fixtures::demo_host())?;
    let _service = daemon_on(&nm, &sim).await?;
    let bin = workspace_bin("rdma-tui")?;
    let tui = Tmux::start(
        &format!("{} --address={}", bin.display(), nm.bus.address()),
        80,
        24,
        &[("NO_COLOR", "1")],
    )?;
    tui.wait_for_text("rxe0", wait)?;
    tui.keys(&["6"])?;
    tui.wait_for_text("RoCE ports:", wait)?;
    // Down to rxe0's port, whose netdev is eth0, and its IP form.
    tui.keys(&["Down", "Down"])?;
    tui.wait_for("rxe0/1 selected", wait, |s| {
        s.lines().any(|l| l.starts_with("> rxe0/1"))
    })?;
    tui.keys(&["i"])?;
    tui.wait_for_text("IP settings of eth0", wait)?;
    tui.keys(&["Tab"])?;
    tui.type_text("198.51.100.9/24")?;
    tui.keys(&["Enter"])?;
    let s = tui.wait_for_text("Keep these settings?", wait)?;
    ensure!(s.contains("eth0"), "{s}");
    wait_for_ipv4(&nm, "eth0", &["198.51.100.9/24"], 10).await?;
    // The countdown runs.
    let first = s
        .lines()
        .find(|l| l.contains("Keep these settings?"))
        .unwrap_or_default()
        .to_string();
    tui.wait_for("the countdown to move", wait, |s| {
        s.lines()
            .find(|l| l.contains("Keep these settings?"))
            .is_some_and(|l| l != first)
    })?;
    tui.keys(&["Enter"])?;
    tui.wait_for("the dialog to close", wait, |s| {
        !s.contains("Keep these settings?")
    })?;
    let network = NetworkProxy::new(&nm.bus.connect().await?).await?;
    assert!(network.pending_changes().await?.is_empty());
    // Kept: NetworkManager forgot the checkpoint, the address and the profile stay.
    assert_eq!(kernel_ipv4(&nm, "eth0")?, ["198.51.100.9/24"]);
    let (profile, _) = keyfile(&nm, "eth0")?;
    assert!(profile.contains("address1=198.51.100.9/24"), "{profile}");
    eprintln!("{}", tui.screen()?);
    Ok(())
}
