//! `rdma-tui --demo`: the simulated service it starts on its private bus serves every change
//! to the user who started it, and refuses anyone else without asking polkit.

use std::sync::Arc;

use anyhow::{ensure, Context, Result};
use rdma_manager_dbus::proxies::ManagerProxy;
use rdma_manager_tests::bus::{busctl_call, BusConfig, Credentials, Reply, UserDb};
use rdma_managerd::dbus::polkit::Authorizer;
use rdma_managerd::dbus::server::{self, Bus};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::{fixtures, SimHost};

/// The demo started on `host` (the default demo host with `None`) and a client connected to
/// it; `None`, said why, where the harness cannot run here.
async fn demo_client(
    host: Option<&str>,
) -> Result<Option<(rdma_tui::demo::Demo, zbus::Connection)>> {
    if let Some(reason) = rdma_manager_tests::bus::skip_reason() {
        eprintln!("skipping: {reason}");
        return Ok(None);
    }
    let demo = rdma_tui::demo::start_host(host).await?;
    let conn =
        rdma_tui::client::connect(&rdma_tui::client::BusChoice::Address(demo.address.clone()))
            .await?;
    Ok(Some((demo, conn)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_serves_changes_to_its_user_and_the_client_sees_them() -> Result<()> {
    let Some((_demo, conn)) = demo_client(None).await? else {
        return Ok(());
    };
    let before = rdma_tui::client::read_model(&conn, None).await?;
    ensure!(before.manager.simulated, "the demo host is simulated");
    ensure!(before.devices.values().any(|d| d.name == "mlx5_0"));
    let manager = ManagerProxy::new(&conn).await?;
    // eth0 already carries rxe0 on the demo host; siw may share it.
    manager
        .add_soft_link("siw0", "siw", "eth0")
        .await
        .context("the demo's own user may change it")?;
    let after = rdma_tui::client::read_model(&conn, None).await?;
    ensure!(
        after.devices.values().any(|d| d.name == "siw0"),
        "siw0 appears"
    );
    ensure!(after
        .manager
        .soft_links
        .iter()
        .any(|l| l.name == "siw0" && l.kind == "siw"));
    Ok(())
}

/// The client's network calls reach the daemon's Network interface: the demo's host runs
/// a (simulated) systemd-networkd and no NetworkManager, so the IP settings of its netdevs
/// are shown, with their addresses from the kernel, and can be set (pending, as everywhere);
/// bringing a profile up or down needs NetworkManager and answers NotSupported with the
/// reason, not a bus error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_calls_go_through_the_demos_networkd() -> Result<()> {
    use rdma_tui::client::{perform, Call, CallOutput, ErrorKind, Update};
    let Some((_demo, conn)) = demo_client(None).await? else {
        return Ok(());
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let answer = |call: Call| {
        let conn = conn.clone();
        let tx = tx.clone();
        async move {
            perform(&conn, 1, call.clone(), &tx).await;
            call
        }
    };
    let call = answer(Call::GetIpSettings {
        interface: "ib0".into(),
    })
    .await;
    let Some(Update::CallDone { result, .. }) = rx.recv().await else {
        anyhow::bail!("no answer to {call:?}");
    };
    let Ok(CallOutput::IpSettings(ip)) = result else {
        anyhow::bail!("{call:?}: {result:?}");
    };
    ensure!(ip.text("manager") == "systemd-networkd", "{ip:?}");
    ensure!(ip.text("addresses").contains("192.168.100.11/24"), "{ip:?}");
    let call = answer(Call::SetIpSettings {
        interface: "ib0".into(),
        settings: vec![(
            "ipv4.addresses".into(),
            rdma_tui::client::IpValue::List(vec!["192.0.2.1/24".into()]),
        )],
    })
    .await;
    let Some(Update::CallDone { result, .. }) = rx.recv().await else {
        anyhow::bail!("no answer to {call:?}");
    };
    ensure!(result.is_ok(), "{call:?}: {result:?}");
    for call in [
        Call::Activate {
            interface: "eth0".into(),
        },
        Call::Deactivate {
            interface: "eth0".into(),
        },
    ] {
        let call = answer(call).await;
        let Some(Update::CallDone { result, .. }) = rx.recv().await else {
            anyhow::bail!("no answer to {call:?}");
        };
        match result {
            Err(e) => ensure!(
                e.kind == ErrorKind::NotSupported && !e.message.is_empty(),
                "{call:?}: {e:?}"
            ),
            Ok(out) => anyhow::bail!("{call:?} answered {out:?} without NetworkManager"),
        }
    }
    Ok(())
}

/// The RoCE page's QoS profile form against the demo's daemon: mlx5_1/1 (DCB on the demo
/// host) is read, the form's edit (PFC 3, DSCP 26 to priority 3) is sent as the page makes
/// it (the port's `roce` entry through ApplyState), and the port reads back with it,
/// remembered; rxe0/1's netdev has no DCB, so its read
/// is NotSupported with the kernel's reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_qos_form_sets_the_demos_profile_and_reads_it_back() -> Result<()> {
    use rdma_tui::client::{perform, Call, CallError, CallOutput, ErrorKind, Update};
    use rdma_tui::pages::roce::qos_calls;
    use rdma_tui::qosform;
    let Some((_demo, conn)) = demo_client(None).await? else {
        return Ok(());
    };
    let model = rdma_tui::client::read_model(&conn, None).await?;
    let port = |label: &str| {
        model
            .ports_in_order()
            .into_iter()
            .find(|p| format!("{}/{}", p.device_name, p.number) == label)
            .cloned()
            .with_context(|| format!("{label} on the demo host"))
    };
    let (mlx5_port, rxe) = (port("mlx5_1/1")?, port("rxe0/1")?.path);
    let mlx5 = mlx5_port.path.clone();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut answer = async |call: Call| -> Result<Result<CallOutput, CallError>> {
        perform(&conn, 1, call.clone(), &tx).await;
        match rx.recv().await {
            Some(Update::CallDone { result, .. }) => Ok(result),
            other => anyhow::bail!("{call:?}: {other:?}"),
        }
    };
    let read = Call::GetQosProfile { port: mlx5.clone() };
    let Ok(CallOutput::QosProfile {
        profile: now,
        remembered,
    }) = answer(read.clone()).await?
    else {
        anyhow::bail!("{read:?} did not answer a profile");
    };
    let mut form = qosform::form("mlx5_1/1", &now, remembered);
    for (id, value) in [("pfc", "3"), ("dscp", "26:3")] {
        form.set_text(id, value);
        qosform::check(&mut form, Some(id));
    }
    ensure!(!form.has_errors(), "{:?}", form.fields);
    let calls = qos_calls(&form, &mlx5_port, &now);
    ensure!(calls.len() == 1, "{calls:?}");
    for call in calls {
        let result = answer(call.clone()).await?;
        ensure!(result.is_ok(), "{call:?}: {result:?}");
    }
    let Ok(CallOutput::QosProfile {
        profile: after,
        remembered,
    }) = answer(read.clone()).await?
    else {
        anyhow::bail!("{read:?} did not answer a profile");
    };
    ensure!(remembered, "the daemon remembers the profile it applied");
    ensure!(after.trust.name() == "dscp", "{after:?}");
    ensure!(after.pfc == [3], "{after:?}");
    ensure!(after.dscp.get(&26) == Some(&3), "{after:?}");
    // Read back, the form holds what was applied and sends nothing.
    let again = qosform::form("mlx5_1/1", &after, remembered);
    ensure!(qos_calls(&again, &mlx5_port, &after).is_empty());
    match answer(Call::GetQosProfile { port: rxe }).await? {
        Err(e) => ensure!(
            e.kind == ErrorKind::NotSupported && e.message.contains("EOPNOTSUPP"),
            "{e:?}"
        ),
        Ok(out) => anyhow::bail!("rxe0/1 has no DCB, yet answered {out:?}"),
    }
    Ok(())
}

/// The port page's VF GUID form against the daemon, on the simulated host with an SR-IOV PF
/// (`naming`: mlx5_1 with two VFs, VF 1 enabled): the GUIDs typed in the forms admins use
/// are sent in `ip link`'s form, and the PF's VfGuids reads back with them held and
/// remembered; the form then sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vf_guid_form_sets_a_vfs_guids() -> Result<()> {
    use rdma_tui::client::{perform, CallOutput, Update};
    use rdma_tui::vfguidform;
    let Some((_demo, conn)) = demo_client(Some("naming")).await? else {
        return Ok(());
    };
    let pf = |m: &rdma_tui::model::Model| {
        m.devices
            .values()
            .find(|d| d.name == "mlx5_1")
            .cloned()
            .context("mlx5_1 on the naming host")
    };
    let d = pf(&rdma_tui::client::read_model(&conn, None).await?)?;
    let Some(mut form) = vfguidform::form(&d) else {
        anyhow::bail!("no VF GUID form for {:?}", d.vf_guids);
    };
    ensure!(form.choice("vf") == Some("1"), "the enabled VF first");
    for (id, value) in [
        ("node", "0x0011223344556677"),
        ("port", "0011:2233:4455:6678"),
    ] {
        form.set_text(id, value);
        vfguidform::check(&mut form, &d, Some(id));
    }
    ensure!(!form.has_errors(), "{:?}", form.fields);
    let calls = vfguidform::calls(&form, &d);
    ensure!(calls.len() == 1, "{calls:?}");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for call in calls {
        perform(&conn, 1, call.clone(), &tx).await;
        let Some(Update::CallDone { result, .. }) = rx.recv().await else {
            anyhow::bail!("no answer to {call:?}");
        };
        ensure!(
            matches!(result, Ok(CallOutput::Done)),
            "{call:?}: {result:?}"
        );
    }
    let after = pf(&rdma_tui::client::read_model(&conn, None).await?)?;
    let vf1 = after
        .vf_guids
        .iter()
        .find(|v| v.vf == 1)
        .context("VF 1 listed")?;
    ensure!(
        vf1.node_guid == "00:11:22:33:44:55:66:77" && vf1.port_guid == "00:11:22:33:44:55:66:78",
        "{vf1:?}"
    );
    ensure!(
        vf1.remembered_node_guid == vf1.node_guid && vf1.remembered_port_guid == vf1.port_guid,
        "{vf1:?}"
    );
    let Some(again) = vfguidform::form(&after) else {
        anyhow::bail!("no form after the change");
    };
    ensure!(vfguidform::calls(&again, &after).is_empty());
    Ok(())
}

/// The port page's port type form (`t`) against the demo's daemon: the guide's mlx4_1
/// (port 1 InfiniBand, port 2 Ethernet, switched by the driver at once) takes Ethernet on
/// port 1 and reads back with it; port 2 back to InfiniBand would leave port 1 Ethernet alone,
/// which the driver's rule refuses with its reason, changing nothing; mlx5_0's type is staged
/// in the firmware for the next boot, and a form opened again starts on it and sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_port_type_form_switches_mlx4_and_stages_mlx5() -> Result<()> {
    use rdma_tui::client::{perform, Call, CallError, CallOutput, ErrorKind, Update};
    use rdma_tui::form::FieldKind;
    use rdma_tui::model::Port;
    use rdma_tui::porttypeform;
    let Some((_demo, conn)) = demo_client(None).await? else {
        return Ok(());
    };
    // `label` as the daemon publishes it now.
    let port = async |label: &str| -> Result<Port> {
        let m = rdma_tui::client::read_model(&conn, None).await?;
        m.ports_in_order()
            .into_iter()
            .find(|p| format!("{}/{}", p.device_name, p.number) == label)
            .cloned()
            .with_context(|| format!("{label} on the demo host"))
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    // The form of `label` as read now, set to `port_type`, and the answer to its one call.
    let mut apply = async |label: &str, port_type: &str| -> Result<Result<CallOutput, CallError>> {
        let p = port(label).await?;
        let mut form = porttypeform::form(&p).with_context(|| format!("no form for {label}"))?;
        if let Some(FieldKind::Choice(c)) = form.get_mut("type").map(|f| &mut f.kind) {
            c.selected = c
                .options
                .iter()
                .position(|o| o.value == port_type)
                .with_context(|| format!("no {port_type} in the form"))?;
        }
        let calls = porttypeform::calls(&form, &p);
        ensure!(
            matches!(calls.as_slice(), [Call::SetPortType { port_type: t, .. }] if t == port_type),
            "{label}: {calls:?}"
        );
        perform(&conn, 1, calls[0].clone(), &tx).await;
        let Some(Update::CallDone { result, .. }) = rx.recv().await else {
            anyhow::bail!("no answer for {label}");
        };
        Ok(result)
    };

    let answer = apply("mlx4_1/1", "eth").await?;
    ensure!(matches!(answer, Ok(CallOutput::Done)), "{answer:?}");
    let p1 = port("mlx4_1/1").await?;
    ensure!(
        p1.port_type == "eth" && p1.link_layer == "Ethernet",
        "{} {}",
        p1.port_type,
        p1.link_layer
    );

    let answer = apply("mlx4_1/2", "ib").await?;
    match answer {
        Err(e) => ensure!(
            e.kind == ErrorKind::NotSupported
                && e.message
                    .contains("port 1 may be Ethernet only when port 2 is"),
            "{e:?}"
        ),
        Ok(out) => anyhow::bail!("port 2 to InfiniBand beside an Ethernet port 1: {out:?}"),
    }
    let p2 = port("mlx4_1/2").await?;
    ensure!(p2.port_type == "eth", "{}", p2.port_type);

    let answer = apply("mlx5_0/1", "eth").await?;
    ensure!(matches!(answer, Ok(CallOutput::Done)), "{answer:?}");
    let staged = port("mlx5_0/1").await?;
    ensure!(
        staged.port_type_next == "eth" && staged.port_type_reboot_needed,
        "{} {} {}",
        staged.port_type,
        staged.port_type_next,
        staged.port_type_reboot_needed
    );
    let again = porttypeform::form(&staged).context("mlx5_0/1's form again")?;
    ensure!(
        again.choice("type") == Some("eth"),
        "{:?}",
        again.choice("type")
    );
    ensure!(porttypeform::calls(&again, &staged).is_empty());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_user_authorizer_refuses_other_users_without_polkit() -> Result<()> {
    if let Some(reason) = rdma_manager_tests::bus::skip_reason() {
        eprintln!("skipping: {reason}");
        return Ok(());
    }
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        ensure!(
            !rdma_manager_tests::bus::tools_required(),
            "running as another user needs root"
        );
        eprintln!("skipping: running a caller as another user needs root");
        return Ok(());
    }
    // A system-type bus (with the user database that knows the test user) and no polkitd.
    let users = UserDb::new(false)?;
    let bus = BusConfig::system()
        .with_rdma_manager_policy()
        .users(&users)
        .start()?;
    let sim = SimHost::new(fixtures::demo_host())?;
    let conn = server::connect(&Bus::Address(bus.address().to_string())).await?;
    let authorizer = Authorizer::same_user_for_simulation(&conn);
    let service = server::serve_with(
        conn,
        Arc::new(sim.clone()),
        true,
        EngineConfig::default(),
        authorizer,
        Arc::new(rdma_managerd::system::sim::SimSystemServices::new()),
    )
    .await?;
    let add = |name: &str| {
        vec![
            "sss".to_string(),
            name.to_string(),
            "siw".to_string(),
            "eth0".to_string(),
        ]
    };
    let root = rdma_manager_dbus::ROOT_PATH;
    let iface = rdma_manager_dbus::BUS_NAME;
    let other = Credentials::test_user(true);
    let refused = busctl_call(
        &bus,
        Some(&other),
        false,
        root,
        iface,
        "AddSoftLink",
        &add("siw0"),
    )
    .await?;
    match &refused {
        Reply::Err(name, msg) => {
            ensure!(name == "NotAuthorized", "{refused:?}");
            ensure!(
                msg.contains("manage-links") && msg.contains("uid 4242"),
                "{msg}"
            );
        }
        Reply::Ok(_) => anyhow::bail!("another user was allowed: {refused:?}"),
    }
    ensure!(
        !sim.kernel_snapshot().contains("siw0"),
        "nothing changed after the refusal"
    );
    // Root started this service, so root is its user.
    let allowed = busctl_call(&bus, None, false, root, iface, "AddSoftLink", &add("siw0")).await?;
    ensure!(matches!(allowed, Reply::Ok(_)), "{allowed:?}");
    service.task.abort();
    let _ = std::fs::remove_dir_all(sim.root());
    Ok(())
}

/// A change the service signals right after a new object's InterfacesAdded (a new IPoIB
/// child becoming Persisted) reaches the client's model: the client applies the service's
/// signals in the order they were sent, so the older values InterfacesAdded carries never
/// overwrite it. Several children, because a client that mixes up the order loses the change
/// only some of the time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_right_after_a_new_object_reach_the_client() -> Result<()> {
    use rdma_manager_dbus::proxies::IpoibProxy;
    use std::collections::HashMap;
    use std::time::{Duration, Instant};
    use zbus::zvariant::Value;

    if let Some(reason) = rdma_manager_tests::bus::skip_reason() {
        eprintln!("skipping: {reason}");
        return Ok(());
    }
    let demo = rdma_tui::demo::start().await?;
    let bus = rdma_tui::client::BusChoice::Address(demo.address.clone());
    let conn = rdma_tui::client::connect(&bus).await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let client = tokio::spawn(rdma_tui::client::run(conn.clone(), tx));
    let mut model = rdma_tui::model::Model::default();
    let apply = |u: rdma_tui::client::Update, model: &mut rdma_tui::model::Model| match u {
        rdma_tui::client::Update::Loaded(m) => *model = *m,
        rdma_tui::client::Update::Properties {
            path,
            iface,
            changed,
        } => model.set_properties(&path, &iface, changed.iter()),
        rdma_tui::client::Update::Added { path, interfaces } => {
            model.add_object(&path, &interfaces)
        }
        rdma_tui::client::Update::Removed { path, ifaces } => model.remove_object(&path, &ifaces),
        _ => {}
    };
    // The client's first load.
    let deadline = Instant::now() + Duration::from_secs(10);
    while model.ipoib.is_empty() {
        let u = tokio::time::timeout_at(deadline.into(), rx.recv())
            .await
            .context("no load")?
            .context("client stopped")?;
        apply(u, &mut model);
    }
    let parent = model
        .ipoib
        .values()
        .find(|i| !i.is_child() && i.name == "ibp59s0f0")
        .map(|i| i.path.clone())
        .context("ibp59s0f0 on the demo host")?;
    let proxy = IpoibProxy::builder(&conn)
        .path(parent.as_str())?
        .build()
        .await?;
    for pkey in 0x8010u16..0x8018 {
        let child = proxy
            .create_child(pkey, "", HashMap::<&str, Value<'_>>::new())
            .await
            .with_context(|| format!("create 0x{pkey:04x}"))?;
        // A fresh read on the same connection: every signal sent before it is queued already.
        let fresh = rdma_tui::client::read_model(&conn, None).await?;
        let want = fresh
            .ipoib
            .get(child.as_str())
            .context("the child in a fresh read")?
            .clone();
        ensure!(want.persisted, "the daemon remembers 0x{pkey:04x}");
        let deadline = Instant::now() + Duration::from_secs(5);
        while model.ipoib.get(child.as_str()) != Some(&want) {
            let Ok(u) = tokio::time::timeout_at(deadline.into(), rx.recv()).await else {
                anyhow::bail!(
                    "the client's record of 0x{pkey:04x} stays stale:\n{:#?}\nwanted\n{want:#?}",
                    model.ipoib.get(child.as_str())
                );
            };
            apply(u.context("client stopped")?, &mut model);
        }
    }
    client.abort();
    Ok(())
}

/// `--demo` starts with full graphs: every port's history holds the 5 minutes (every sample)
/// and the hour (10 s averages) before the start, from the same traffic model that moves the
/// counters, ending about now; and the
/// first port, on a 32-bit counter HCA, is healthy (no saturated samples, traffic moving).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_history_is_full_at_start_and_healthy() -> Result<()> {
    use rdma_manager_dbus::proxies::{sample_flags, PortProxy};
    use std::time::{SystemTime, UNIX_EPOCH};

    let Some((_demo, conn)) = demo_client(None).await? else {
        return Ok(());
    };
    let model = rdma_tui::client::read_model(&conn, None).await?;
    let now_us = SystemTime::now().duration_since(UNIX_EPOCH)?.as_micros() as u64;
    ensure!(!model.ports.is_empty());
    for port in model.ports_in_order() {
        let p = PortProxy::builder(&conn)
            .path(port.path.as_str())?
            .build()
            .await?;
        let h = p.get_throughput_history().await?;
        let name = format!("{}/{}", port.device_name, port.number);
        ensure!(h.len() >= 290, "{name}: {} samples at start", h.len());
        let (first, last) = (h[0].0, h[h.len() - 1].0);
        ensure!(
            last <= now_us + 2_000_000 && last + 5_000_000 >= now_us,
            "{name}: the history ends at {last}, now is {now_us}"
        );
        ensure!(
            (last - first) >= 4 * 60 * 1_000_000 + 50 * 1_000_000,
            "{name}: {} s of history",
            (last - first) / 1_000_000
        );
        ensure!(
            h.iter().all(|s| s.5 & sample_flags::SATURATED == 0),
            "{name}: saturated samples"
        );
        ensure!(
            h.iter().filter(|s| s.1 > 0.0 && s.2 > 0.0).count() > 250,
            "{name}: no traffic in the history"
        );
        let c = p.get_throughput_history_coarse().await?;
        ensure!(c.len() >= 355, "{name}: {} averages at start", c.len());
        let (first, last) = (c[0].0, c[c.len() - 1].0);
        ensure!(
            last <= now_us + 2_000_000 && last + 25_000_000 >= now_us,
            "{name}: the coarse history ends at {last}, now is {now_us}"
        );
        ensure!(
            (last - first) >= 59 * 60 * 1_000_000,
            "{name}: {} s of coarse history",
            (last - first) / 1_000_000
        );
        ensure!(
            c.iter()
                .all(|s| s.5 & (sample_flags::SATURATED | sample_flags::PARTIAL) == 0),
            "{name}: saturated or partial averages in a seeded hour"
        );
        ensure!(
            c.iter().filter(|s| s.1 > 0.0 && s.2 > 0.0).count() > 300,
            "{name}: no traffic in the coarse history"
        );
    }
    Ok(())
}
