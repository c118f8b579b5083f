//! IPoIB profiles written through NetworkManager's D-Bus API by rdma-managerd's client equal
//! what nmcli writes for the same intent, on a real NetworkManager (Debian's, on a private
//! system bus in namespaces of its own: `rdma_manager_tests::nm`). Each example is one of the
//! Red Hat guide's chapter 3.4 and 3.6; nmcli's keyfile and ours must be the same bytes but
//! for the UUID. What NetworkManager would change silently is refused with nothing written.

use std::collections::HashMap;

use anyhow::{ensure, Context, Result};
use rdma_manager_dbus::types::Owner;
use rdma_manager_tests::nm::{skip_reason, PrivateNm};
use rdma_managerd::nm::client::{NetworkManager, NmError};
use rdma_managerd::nm::profile::{Family, IpConfig, IpMethod, IpoibProfile, TransportMode};

#[macro_export]
macro_rules! require_nm {
    () => {
        if let Some(reason) = skip_reason() {
            assert!(
                !rdma_manager_tests::bus::tools_required(),
                "RDMA_MANAGER_REQUIRE_TOOLS=1 forbids skipping: {reason}"
            );
            eprintln!("skipping: {reason}");
            return Ok(());
        }
    };
}

fn ip(
    family: Family,
    method: IpMethod,
    addrs: &[&str],
    gw: Option<&str>,
    dns: &[&str],
    search: &[&str],
) -> IpConfig {
    IpConfig {
        method,
        addresses: addrs
            .iter()
            .map(|a| IpConfig::parse_address(family, a).expect("a test address"))
            .collect(),
        gateway: gw.map(|g| g.parse().expect("a test gateway")),
        dns: dns
            .iter()
            .map(|d| d.parse().expect("a test server"))
            .collect(),
        dns_search: search.iter().map(|s| s.to_string()).collect(),
    }
}

/// (nmcli's arguments after `connection add`, the same intent as a profile).
fn examples() -> Vec<(Vec<&'static str>, IpoibProfile)> {
    vec![
        // 3.4: the port's own interface in connected mode with the largest MTU, static IPv4
        // and IPv6 with gateway, DNS server and search domain.
        (
            vec![
                "type",
                "infiniband",
                "con-name",
                "mlx4_ib0",
                "ifname",
                "mlx4_ib0",
                "transport-mode",
                "Connected",
                "mtu",
                "65520",
                "ipv4.method",
                "manual",
                "ipv4.addresses",
                "192.0.2.1/24",
                "ipv4.gateway",
                "192.0.2.254",
                "ipv4.dns",
                "192.0.2.253",
                "ipv4.dns-search",
                "example.com",
                "ipv6.method",
                "manual",
                "ipv6.addresses",
                "2001:db8:1::fffe/64",
                "ipv6.gateway",
                "2001:db8:1::fffe",
                "ipv6.dns",
                "2001:db8:1::fffd",
                "ipv6.dns-search",
                "example.com",
            ],
            IpoibProfile {
                id: "mlx4_ib0".into(),
                interface: "mlx4_ib0".into(),
                pkey: None,
                mode: TransportMode::Connected,
                mtu: Some(65520),
                ipv4: ip(
                    Family::V4,
                    IpMethod::Manual,
                    &["192.0.2.1/24"],
                    Some("192.0.2.254"),
                    &["192.0.2.253"],
                    &["example.com"],
                ),
                ipv6: ip(
                    Family::V6,
                    IpMethod::Manual,
                    &["2001:db8:1::fffe/64"],
                    Some("2001:db8:1::fffe"),
                    &["2001:db8:1::fffd"],
                    &["example.com"],
                ),
            },
        ),
        // 3.6: a datagram P_Key child of mlx4_ib0, both families static with default routes.
        // The guide's `ifname mlx4_ib0` + `p-key` form is refused by NetworkManager 1.42 ("did
        // not specify parent interface name"): the form it accepts names the parent.
        (
            vec![
                "type",
                "infiniband",
                "con-name",
                "mlx4_ib0.8002",
                "ifname",
                "mlx4_ib0.8002",
                "parent",
                "mlx4_ib0",
                "p-key",
                "0x8002",
                "transport-mode",
                "datagram",
                "ipv4.method",
                "manual",
                "ipv4.addresses",
                "192.0.2.1/24",
                "ipv4.gateway",
                "192.0.2.254",
                "ipv6.method",
                "manual",
                "ipv6.addresses",
                "2001:db8:1::fffe/64",
                "ipv6.gateway",
                "2001:db8:1::fffe",
            ],
            IpoibProfile {
                id: "mlx4_ib0.8002".into(),
                interface: "mlx4_ib0".into(),
                pkey: Some(0x8002),
                mode: TransportMode::Datagram,
                mtu: None,
                ipv4: ip(
                    Family::V4,
                    IpMethod::Manual,
                    &["192.0.2.1/24"],
                    Some("192.0.2.254"),
                    &[],
                    &[],
                ),
                ipv6: ip(
                    Family::V6,
                    IpMethod::Manual,
                    &["2001:db8:1::fffe/64"],
                    Some("2001:db8:1::fffe"),
                    &[],
                    &[],
                ),
            },
        ),
        // Nothing but the mode: DHCP and SLAAC, as nmcli defaults them.
        (
            vec![
                "type",
                "infiniband",
                "con-name",
                "ib1",
                "ifname",
                "ib1",
                "transport-mode",
                "datagram",
            ],
            IpoibProfile {
                id: "ib1".into(),
                interface: "ib1".into(),
                pkey: None,
                mode: TransportMode::Datagram,
                mtu: None,
                ipv4: IpConfig::auto(),
                ipv6: IpConfig::auto(),
            },
        ),
    ]
}

/// The keyfile without its `uuid=` line, which differs by design.
pub(crate) fn without_uuid(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("uuid="))
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn keyfile(nm: &PrivateNm, id: &str) -> Result<(String, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let path = nm.keyfile_dir().join(format!("{id}.nmconnection"));
    let text = std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
    let mode = std::fs::metadata(&path)?.permissions().mode() & 0o777;
    Ok((text, mode))
}

#[tokio::test(flavor = "multi_thread")]
async fn profiles_equal_what_nmcli_writes() -> Result<()> {
    require_nm!();
    let nm = PrivateNm::start().await?;
    let client = NetworkManager::new(nm.bus.connect().await?);
    ensure!(client.running().await?, "NetworkManager is not on its bus");
    for (args, profile) in examples() {
        let mut cmd = vec!["connection", "add"];
        cmd.extend(&args);
        let out = nm.nmcli(&cmd)?;
        ensure!(
            out.status.success(),
            "nmcli {cmd:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let (theirs, their_mode) = keyfile(&nm, &profile.id)?;
        let out = nm.nmcli(&["connection", "delete", &profile.id])?;
        ensure!(out.status.success(), "nmcli delete: {out:?}");

        let added = client.add_ipoib(&profile).await?;
        let (ours, our_mode) = keyfile(&nm, &profile.id)?;
        assert_eq!(
            without_uuid(&ours),
            without_uuid(&theirs),
            "{}: ours (left) and nmcli's (right)",
            profile.id
        );
        assert_eq!(our_mode, their_mode);
        assert!(ours.contains(&format!("uuid={}", added.uuid)), "{ours}");
        assert_eq!(
            added.interface.as_deref(),
            Some(profile.interface_name().as_str())
        );
        let listed = client.profiles().await?;
        assert!(
            listed
                .iter()
                .any(|p| p.uuid == added.uuid && p.kind == "infiniband"),
            "{listed:?}"
        );
        client.delete(&added.uuid).await?;
        ensure!(
            keyfile(&nm, &profile.id).is_err(),
            "{}: the keyfile outlived its profile",
            profile.id
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn what_nm_would_change_silently_is_refused_with_nothing_written() -> Result<()> {
    require_nm!();
    let nm = PrivateNm::start().await?;
    let client = NetworkManager::new(nm.bus.connect().await?);
    let (_, good) = examples().remove(0);
    let mut bad = Vec::new();
    let mut p = good.clone();
    p.mtu = Some(65521);
    bad.push(p);
    let mut p = good.clone();
    p.ipv4.addresses[0].1 = 33;
    bad.push(p);
    let mut p = good.clone();
    p.ipv6.addresses.push(("192.0.2.9".parse()?, 24));
    bad.push(p);
    let mut p = good.clone();
    p.ipv4.dns_search = vec!["not a domain".into()];
    bad.push(p);
    let mut p = good.clone();
    p.pkey = Some(0x8000);
    bad.push(p);
    for p in bad {
        match client.add_ipoib(&p).await {
            Err(NmError::Profile(e)) => eprintln!("refused: {e}"),
            other => panic!("{p:?}: {other:?}"),
        }
    }
    let left: Vec<_> = std::fs::read_dir(nm.keyfile_dir())?.collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(client
        .profiles()
        .await?
        .iter()
        .all(|p| p.kind != "infiniband"));
    Ok(())
}

/// The IPv4 addresses the kernel has on `ifname` in NetworkManager's namespace.
pub(crate) fn kernel_ipv4(nm: &PrivateNm, ifname: &str) -> Result<Vec<String>> {
    let out = nm.ip(&["-4", "-o", "addr", "show", "dev", ifname])?;
    ensure!(out.status.success(), "ip addr show: {out:?}");
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            words.find(|w| *w == "inet")?;
            words.next().map(str::to_string)
        })
        .collect())
}

pub(crate) async fn wait_for_ipv4(
    nm: &PrivateNm,
    ifname: &str,
    want: &[&str],
    secs: u64,
) -> Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let now = kernel_ipv4(nm, ifname)?;
        if now == want {
            return Ok(());
        }
        ensure!(
            std::time::Instant::now() < deadline,
            "{ifname} has {now:?}, not {want:?}, after {secs} s; NetworkManager's log:\n{}",
            nm.log()
                .lines()
                .rev()
                .take(40)
                .collect::<Vec<_>>()
                .join("\n")
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// A veth pair in NetworkManager's namespace, v0 configured by a profile made with nmcli.
async fn nm_with_v0() -> Result<(PrivateNm, NetworkManager, String)> {
    let nm =
        PrivateNm::start_with("ip link add v0 type veth peer name v1 && ip link set v1 up").await?;
    let out = nm.nmcli(&[
        "connection",
        "add",
        "type",
        "ethernet",
        "con-name",
        "v0",
        "ifname",
        "v0",
        "ipv4.method",
        "manual",
        "ipv4.addresses",
        "198.51.100.1/24",
        "ipv6.method",
        "disabled",
    ])?;
    ensure!(out.status.success(), "nmcli add: {out:?}");
    let out = nm.nmcli(&["connection", "up", "v0"])?;
    ensure!(out.status.success(), "nmcli up: {out:?}\n{}", nm.log());
    wait_for_ipv4(&nm, "v0", &["198.51.100.1/24"], 10).await?;
    let client = NetworkManager::new(nm.bus.connect().await?);
    let uuid = client
        .profiles()
        .await?
        .into_iter()
        .find(|p| p.id == "v0")
        .context("the v0 profile")?
        .uuid;
    Ok((nm, client, uuid))
}

fn v4(addr: &str) -> IpConfig {
    ip(Family::V4, IpMethod::Manual, &[addr], None, &[], &[])
}

fn v6_disabled() -> IpConfig {
    ip(Family::V6, IpMethod::Disabled, &[], None, &[], &[])
}

/// A change made inside a checkpoint and never confirmed is undone by NetworkManager itself
/// when the timeout passes: the administrator who cut off their own session gets the old
/// address back. The profile on disk goes back too.
#[tokio::test(flavor = "multi_thread")]
async fn an_unconfirmed_change_is_rolled_back_by_networkmanager() -> Result<()> {
    require_nm!();
    let (nm, client, uuid) = nm_with_v0().await?;
    let checkpoint = client.checkpoint(3).await?;
    // A second checkpoint over the same devices is refused, typed.
    match client.checkpoint(3).await {
        Err(NmError::CheckpointConflict(text)) => assert!(text.contains("checkpoint"), "{text}"),
        other => panic!("a second checkpoint: {other:?}"),
    }
    // An interface NetworkManager has no device for: typed, not a bus error.
    match client
        .set_ip(&uuid, "nosuch0", &v4("198.51.100.2/24"), &v6_disabled())
        .await
    {
        Err(NmError::NoDevice(name)) => assert_eq!(name, "nosuch0"),
        other => panic!("set_ip on nosuch0: {other:?}"),
    }
    let (unchanged, _) = keyfile(&nm, "v0")?;
    assert!(
        unchanged.contains("address1=198.51.100.1/24"),
        "{unchanged}"
    );
    client
        .set_ip(&uuid, "v0", &v4("198.51.100.2/24"), &v6_disabled())
        .await?;
    wait_for_ipv4(&nm, "v0", &["198.51.100.2/24"], 10).await?;
    let (keyfile_during, _) = keyfile(&nm, "v0")?;
    assert!(
        keyfile_during.contains("address1=198.51.100.2/24"),
        "{keyfile_during}"
    );
    // No confirmation: NetworkManager rolls back by itself after 3 s.
    wait_for_ipv4(&nm, "v0", &["198.51.100.1/24"], 20).await?;
    let (keyfile_after, _) = keyfile(&nm, "v0")?;
    assert!(
        keyfile_after.contains("address1=198.51.100.1/24"),
        "{keyfile_after}"
    );
    // The checkpoint is gone with the rollback: a new one can be made.
    let again = client.checkpoint(3).await?;
    client.confirm(&again).await?;
    let _ = checkpoint;
    Ok(())
}

/// A confirmed change stays after the timeout would have passed.
#[tokio::test(flavor = "multi_thread")]
async fn a_confirmed_change_stays() -> Result<()> {
    require_nm!();
    let (nm, client, uuid) = nm_with_v0().await?;
    let checkpoint = client.checkpoint(2).await?;
    client
        .set_ip(&uuid, "v0", &v4("198.51.100.3/24"), &v6_disabled())
        .await?;
    wait_for_ipv4(&nm, "v0", &["198.51.100.3/24"], 10).await?;
    client.extend(&checkpoint, 2).await?;
    client.confirm(&checkpoint).await?;
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert_eq!(kernel_ipv4(&nm, "v0")?, ["198.51.100.3/24"]);
    // Confirmed means forgotten: it can no longer be rolled back.
    assert!(client.roll_back(&checkpoint).await.is_err());
    Ok(())
}

/// rdma-managerd on the simulated demo host, serving on NetworkManager's bus with the host
/// services of a real daemon (`BusSystemServices`: NetworkManager is asked over the bus).
pub(crate) async fn daemon_on(
    nm: &PrivateNm,
    sim: &rdma_managerd::kernel::sim::SimHost,
) -> Result<rdma_managerd::dbus::server::Service> {
    use rdma_managerd::dbus::polkit::Authorizer;
    use rdma_managerd::dbus::server;
    use std::sync::Arc;
    let conn = nm.bus.connect().await?;
    let config = rdma_managerd::engine::EngineConfig {
        tick: std::time::Duration::from_millis(100),
        ..Default::default()
    };
    Ok(server::serve_with(
        conn.clone(),
        Arc::new(sim.clone()),
        true,
        config,
        Authorizer::same_user_for_simulation(&conn),
        Arc::new(rdma_managerd::system::BusSystemServices::new(&conn)),
    )
    .await?)
}

pub(crate) async fn ipoib(
    conn: &zbus::Connection,
    sim: &rdma_managerd::kernel::sim::SimHost,
    name: &str,
) -> Result<rdma_manager_dbus::IpoibProxy<'static>> {
    let ifindex = sim
        .spec()
        .netdevs
        .iter()
        .find(|n| n.name == name)
        .with_context(|| format!("{name} exists"))?
        .ifindex;
    Ok(rdma_manager_dbus::IpoibProxy::builder(conn)
        .path(rdma_manager_dbus::ipoib_path(ifindex))?
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?)
}

pub(crate) fn has_netdev(sim: &rdma_managerd::kernel::sim::SimHost, name: &str) -> bool {
    sim.spec().netdevs.iter().any(|n| n.name == name)
}

fn busy_naming_nm(r: Result<impl std::fmt::Debug, zbus::Error>, what: &str) {
    match r {
        Err(zbus::Error::MethodError(name, Some(text), _)) => {
            assert_eq!(
                name.as_str(),
                "org.rdmamanager.RdmaManager1.Error.Busy",
                "{what}: {text}"
            );
            assert!(text.contains("NetworkManager"), "{what}: {text}");
        }
        other => panic!("{what}: {other:?}"),
    }
}

/// One owner per interface: where NetworkManager has a profile for an IPoIB interface, the
/// daemon refuses to create, delete or change it, and does not re-create it from its own
/// `ipoib.toml` when it starts; other interfaces it handles as before.
#[tokio::test(flavor = "multi_thread")]
async fn the_daemon_leaves_interfaces_networkmanager_owns_alone() -> Result<()> {
    require_nm!();
    use rdma_managerd::kernel::sim::{fixtures, SimHost};
    use rdma_managerd::kernel::Host;
    let nm = PrivateNm::start().await?;
    let nm_child = |pkey: &str| -> Result<()> {
        let name = format!("ib0.{}", pkey.trim_start_matches("0x"));
        let out = nm.nmcli(&[
            "connection",
            "add",
            "type",
            "infiniband",
            "con-name",
            &name,
            "ifname",
            &name,
            "parent",
            "ib0",
            "p-key",
            pkey,
            "transport-mode",
            "datagram",
        ])?;
        ensure!(out.status.success(), "nmcli: {out:?}");
        Ok(())
    };
    nm_child("0x8003")?;
    let sim = SimHost::new(fixtures::demo_host())?;
    let service = daemon_on(&nm, &sim).await?;
    let client = nm.bus.connect().await?;
    let ib0 = ipoib(&client, &sim, "ib0").await?;

    // NetworkManager's child (P_Key 0x0003 joins as 0x8003): refused, nothing made.
    busy_naming_nm(
        ib0.create_child(0x0003, "", HashMap::new()).await,
        "CreateChild 0x0003",
    );
    assert!(!has_netdev(&sim, "ib0.0003") && !has_netdev(&sim, "ib0.8003"));
    // Others: as before.
    ib0.create_child(0x0004, "", HashMap::new()).await?;
    ib0.create_child(0x0005, "", HashMap::new()).await?;
    ib0.create_child(0x0006, "", HashMap::new()).await?;
    ensure!(has_netdev(&sim, "ib0.0004") && has_netdev(&sim, "ib0.0005"));

    // NetworkManager takes ib0.0004 over: the daemon no longer changes or deletes it.
    nm_child("0x0004")?;
    let child = ipoib(&client, &sim, "ib0.0004").await?;
    let mtu_before = sim
        .spec()
        .netdevs
        .iter()
        .find(|n| n.name == "ib0.0004")
        .map(|n| n.mtu);
    // Mode and MTU go to its profile, inside a checkpoint: here NetworkManager has no
    // InfiniBand device to activate the profile on, so it refuses, and the checkpoint is
    // rolled back at once: the profile is as it was, the kernel untouched.
    let (profile_before, _) = keyfile(&nm, "ib0.0004")?;
    for (what, r) in [
        ("SetMtu", child.set_mtu(1500).await),
        ("SetMode", child.set_mode("connected").await),
    ] {
        match r {
            Err(zbus::Error::MethodError(name, Some(text), _)) => {
                assert_eq!(
                    name.as_str(),
                    "org.rdmamanager.RdmaManager1.Error.Failed",
                    "{what}: {text}"
                );
                assert!(
                    text.contains("NetworkManager") && text.contains("rolled back"),
                    "{what}: {text}"
                );
            }
            other => panic!("{what}: {other:?}"),
        }
        assert_eq!(keyfile(&nm, "ib0.0004")?.0, profile_before, "{what}");
    }
    // NetworkManager has no umcast setting: refused, naming the profile.
    busy_naming_nm(child.set_umcast(true).await, "SetUmcast");
    // Delete removes the profile through NetworkManager (which would take down a child it
    // made), pending confirmation; rolled back, the profile is back.
    let network = rdma_manager_dbus::NetworkProxy::new(&client).await?;
    child.delete().await?;
    ensure!(
        keyfile(&nm, "ib0.0004").is_err(),
        "the profile outlived Delete"
    );
    let changes = network.pending_changes().await?;
    assert_eq!(changes.len(), 1, "{changes:?}");
    rdma_manager_dbus::PendingChangeProxy::builder(&client)
        .path(changes[0].clone())?
        .build()
        .await?
        .roll_back()
        .await?;
    assert_eq!(keyfile(&nm, "ib0.0004")?.0, profile_before);
    ensure!(has_netdev(&sim, "ib0.0004"));
    assert_eq!(
        sim.spec()
            .netdevs
            .iter()
            .find(|n| n.name == "ib0.0004")
            .map(|n| n.mtu),
        mtu_before
    );
    // The owner is published: NetworkManager's profile for ib0.0004, the daemon for its own.
    let Owner {
        kind,
        profile_id: id,
        uuid,
    } = child.owner().await?;
    assert_eq!((kind.as_str(), id.as_str()), ("networkmanager", "ib0.0004"));
    let profiles = NetworkManager::new(client.clone()).profiles().await?;
    assert!(
        profiles
            .iter()
            .any(|p| p.uuid == uuid && p.id == "ib0.0004"),
        "{profiles:?}"
    );
    let own = ipoib(&client, &sim, "ib0.0005").await?.owner().await?;
    assert_eq!(own, Owner::rdma_manager());

    // A profile added with nmcli and no IPoIB call after it: the owner follows at the
    // daemon's next host re-read (60 ticks of 100 ms here).
    let sixth = ipoib(&client, &sim, "ib0.0006").await?;
    assert_eq!(sixth.owner().await?.kind, "rdma-manager");
    nm_child("0x0006")?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let Owner {
            kind,
            profile_id: id,
            ..
        } = sixth.owner().await?;
        if kind == "networkmanager" && id == "ib0.0006" {
            break;
        }
        ensure!(
            std::time::Instant::now() < deadline,
            "ib0.0006's owner is still {kind:?} 20 s after NetworkManager's profile appeared"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    // A reboot: the kernel forgets both children; the daemon starts again and re-creates
    // only its own (ib0.0005), not the one NetworkManager owns.
    service.task.abort();
    service
        .conn
        .release_name(rdma_manager_dbus::BUS_NAME)
        .await?;
    sim.delete_netdev("ib0.0004").await?;
    sim.delete_netdev("ib0.0005").await?;
    let _service = daemon_on(&nm, &sim).await?;
    ensure!(
        has_netdev(&sim, "ib0.0005"),
        "the daemon's own child was not re-created"
    );
    ensure!(
        !has_netdev(&sim, "ib0.0004"),
        "NetworkManager's child was re-created by the daemon"
    );
    Ok(())
}
