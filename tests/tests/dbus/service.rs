//! rdma-managerd on a real dbus-daemon (a private bus), driven through the client proxies and
//! busctl, on the simulated host so that hotplug, port changes, event storms, overflows and a
//! slow kernel can be made to happen.

use std::process::Command;
use std::time::{Duration, Instant};

use futures::StreamExt;
use rdma_manager_dbus::types::Pkey;
use rdma_manager_dbus::{DeviceProxy, IpoibProxy, ManagerProxy, PortProxy, BUS_NAME, ROOT_PATH};
use rdma_manager_tests::bus::PrivateBus;
use rdma_manager_tests::service::{serve_sim, session_bus_or_skip, ServedSim};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::{fixtures, SimHost, SimOp};
use rdma_managerd::kernel::HostEvent;
use rdma_managerd::model::{PhysState, PortState};
use zbus::fdo::{ObjectManagerProxy, PropertiesProxy};
use zbus::zvariant::OwnedObjectPath;
use zbus::Connection;

struct Running {
    bus: PrivateBus,
    sim: SimHost,
    client: Connection,
    _service: ServedSim,
}

fn fast() -> EngineConfig {
    EngineConfig {
        tick: Duration::from_millis(100),
        ..EngineConfig::default()
    }
}

async fn start_with(sim: SimHost, config: EngineConfig) -> Option<Running> {
    let bus = session_bus_or_skip()?;
    let service = serve_sim(&bus, &sim, config).await.expect("service starts");
    let client = bus.connect().await.expect("client connects");
    Some(Running {
        bus,
        sim,
        client,
        _service: service,
    })
}

async fn start() -> Option<Running> {
    start_with(SimHost::new(fixtures::demo_host()).expect("demo"), fast()).await
}

fn path(p: &str) -> OwnedObjectPath {
    OwnedObjectPath::try_from(p.to_string()).expect("path")
}

async fn object_manager(r: &Running) -> ObjectManagerProxy<'_> {
    ObjectManagerProxy::builder(&r.client)
        .destination(BUS_NAME)
        .expect("dest")
        .path(ROOT_PATH)
        .expect("path")
        .build()
        .await
        .expect("proxy")
}

async fn managed(r: &Running) -> Vec<(String, Vec<String>)> {
    let om = object_manager(r).await;
    let mut v: Vec<(String, Vec<String>)> = om
        .get_managed_objects()
        .await
        .expect("GetManagedObjects")
        .into_iter()
        .map(|(p, ifaces)| {
            let mut names: Vec<String> = ifaces.keys().map(|i| i.to_string()).collect();
            names.sort();
            (p.to_string(), names)
        })
        .collect();
    v.sort();
    v
}

/// Waits until `f` holds, polling; panics with `what` after 15 s: a debug build on two busy cores, with the whole suite running, can take more than 5 s to re-read the host after a storm.
async fn eventually<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(15);
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_device_port_and_ipoib_interface_is_an_object() {
    let Some(r) = start().await else { return };
    let objs = managed(&r).await;
    let paths: Vec<&str> = objs.iter().map(|(p, _)| p.as_str()).collect();
    let d = "/org/rdmamanager/RdmaManager1/Device";
    let mut want = vec![
        format!("{d}/0"),
        format!("{d}/0/Port/1"),
        format!("{d}/0/Port/2"),
        format!("{d}/1"),
        format!("{d}/1/Port/1"),
        format!("{d}/2"),
        format!("{d}/2/Port/1"),
        format!("{d}/3"),
        format!("{d}/3/Port/1"),
    ];
    let spec = r.sim.spec();
    for nd in spec.netdevs.iter().filter(|n| n.ipoib.is_some()) {
        want.push(format!(
            "/org/rdmamanager/RdmaManager1/Ipoib/{}",
            nd.ifindex
        ));
    }
    // Host setup's object is always there.
    want.push(rdma_manager_dbus::HOST_PATH.to_string());
    // The ObjectManager lists what is below it, not itself.
    want.sort();
    assert_eq!(paths, want);

    let mgr = ManagerProxy::new(&r.client).await.expect("manager");
    assert!(mgr.simulated().await.expect("Simulated"));
    assert_eq!(mgr.devices().await.expect("Devices").len(), 4);

    let dev = DeviceProxy::builder(&r.client)
        .path(format!("{d}/0"))
        .expect("path")
        .build()
        .await
        .expect("device");
    assert_eq!(dev.name().await.unwrap(), "mlx4_1");
    assert_eq!(dev.kind().await.unwrap(), "hardware");
    assert_eq!(dev.node_type().await.unwrap(), "CA");
    assert_eq!(dev.ports().await.unwrap().len(), 2);

    let port = PortProxy::builder(&r.client)
        .path(format!("{d}/0/Port/1"))
        .expect("path")
        .build()
        .await
        .expect("port");
    assert_eq!(port.state().await.unwrap(), "ACTIVE");
    assert_eq!(port.link_layer().await.unwrap(), "InfiniBand");
    // The demo's subnet manager is another node's (its opensm.service is inactive).
    assert_eq!(
        (port.lid().await.unwrap(), port.sm_lid().await.unwrap()),
        (2, 1)
    );
    assert_eq!(
        port.pkeys().await.unwrap(),
        vec![
            Pkey {
                index: 0,
                pkey: 0xffff
            },
            Pkey {
                index: 1,
                pkey: 0x8001
            }
        ]
    );
    assert!(port.unreadable().await.unwrap().is_empty());

    // An IPoIB interface points at its port, and a child at its parent.
    let ib0 = spec
        .netdevs
        .iter()
        .find(|n| n.name == "ib0")
        .expect("ib0 in the demo host");
    let ipoib = IpoibProxy::builder(&r.client)
        .path(format!(
            "/org/rdmamanager/RdmaManager1/Ipoib/{}",
            ib0.ifindex
        ))
        .expect("path")
        .build()
        .await
        .expect("ipoib");
    assert_eq!(ipoib.name().await.unwrap(), "ib0");
    assert_eq!(ipoib.port().await.unwrap(), path(&format!("{d}/0/Port/1")));
    assert_eq!(ipoib.pkey().await.unwrap(), 0xffff);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hotplug_adds_and_removes_objects_with_their_ports() {
    let Some(r) = start().await else { return };
    let om = object_manager(&r).await;
    let mut added = om.receive_interfaces_added().await.unwrap();
    let mut removed = om.receive_interfaces_removed().await.unwrap();
    let before = managed(&r).await;
    let spec = r.sim.spec();
    let cx6 = spec
        .devices
        .iter()
        .find(|d| d.name == "mlx5_0")
        .cloned()
        .expect("mlx5_0");

    r.sim.unplug("mlx5_0").unwrap();
    let mut gone = Vec::new();
    while gone.len() < 2 {
        let sig = tokio::time::timeout(Duration::from_secs(5), removed.next())
            .await
            .expect("InterfacesRemoved in time")
            .expect("stream");
        gone.push(sig.args().unwrap().object_path().to_string());
    }
    assert_eq!(
        gone,
        [
            "/org/rdmamanager/RdmaManager1/Device/1/Port/1",
            "/org/rdmamanager/RdmaManager1/Device/1"
        ],
        "the port goes before its device"
    );

    r.sim.plug(cx6).unwrap();
    let mut came = Vec::new();
    while came.len() < 2 {
        let sig = tokio::time::timeout(Duration::from_secs(5), added.next())
            .await
            .expect("InterfacesAdded in time")
            .expect("stream");
        came.push(sig.args().unwrap().object_path().to_string());
    }
    // The kernel gives a re-plugged device a new index.
    assert_eq!(
        came,
        [
            "/org/rdmamanager/RdmaManager1/Device/4",
            "/org/rdmamanager/RdmaManager1/Device/4/Port/1"
        ]
    );
    let after = managed(&r).await;
    assert_eq!(
        after.len(),
        before.len(),
        "nothing lost, nothing duplicated"
    );
    let mgr = ManagerProxy::new(&r.client).await.unwrap();
    assert!(mgr
        .devices()
        .await
        .unwrap()
        .contains(&path("/org/rdmamanager/RdmaManager1/Device/4")));

    // The sampling follows: the new device's port is sampled, the gone one's no longer.
    let mut live = mgr.receive_throughput_sampled().await.unwrap();
    let mut sampled = Vec::new();
    for _ in 0..2 {
        let sig = tokio::time::timeout(Duration::from_secs(5), live.next())
            .await
            .expect("ThroughputSampled in time")
            .unwrap();
        sampled = sig
            .args()
            .unwrap()
            .samples()
            .iter()
            .map(|s| s.0.to_string())
            .collect();
    }
    assert!(sampled.contains(&"/org/rdmamanager/RdmaManager1/Device/4/Port/1".to_string()));
    assert!(!sampled
        .iter()
        .any(|p| p.starts_with("/org/rdmamanager/RdmaManager1/Device/1/")));
}

/// PropertiesChanged signals of one object, as (interface, changed property names).
async fn changes_of(
    r: &Running,
    object: &str,
) -> impl futures::Stream<Item = (String, Vec<String>)> {
    let props = PropertiesProxy::builder(&r.client)
        .destination(BUS_NAME)
        .unwrap()
        .path(object.to_string())
        .unwrap()
        .build()
        .await
        .unwrap();
    props
        .receive_properties_changed()
        .await
        .unwrap()
        .map(|sig| {
            let a = sig.args().unwrap();
            let mut names: Vec<String> = a
                .changed_properties()
                .keys()
                .map(|k| k.to_string())
                .collect();
            names.sort();
            (a.interface_name().to_string(), names)
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn port_changes_emit_only_what_changed() {
    let Some(r) = start().await else { return };
    let port = "/org/rdmamanager/RdmaManager1/Device/1/Port/1";
    let mut changes = Box::pin(changes_of(&r, port).await);

    // With an event (the kernel's change uevent).
    r.sim
        .set_port_state("mlx5_0", 1, PortState::Down, PhysState::Polling)
        .unwrap();
    let c = tokio::time::timeout(Duration::from_secs(5), changes.next())
        .await
        .expect("PropertiesChanged in time")
        .unwrap();
    assert_eq!(
        c,
        (
            "org.rdmamanager.RdmaManager1.Port".to_string(),
            // StateChanges counts the move (DBUS-API.md).
            vec![
                "PhysState".to_string(),
                "State".to_string(),
                "StateChanges".to_string()
            ]
        )
    );

    // Without any event: a subnet manager assigns LIDs. Only the poll can see it.
    r.sim
        .corrupt_file("sys/class/infiniband/mlx5_0/ports/1/lid", "0x77\n")
        .unwrap();
    let c = tokio::time::timeout(Duration::from_secs(5), changes.next())
        .await
        .expect("the poll notices a LID change")
        .unwrap();
    assert_eq!(c.1, vec!["Lid".to_string()]);
    let p = PortProxy::builder(&r.client)
        .path(port)
        .unwrap()
        .build()
        .await
        .unwrap();
    assert_eq!(p.lid().await.unwrap(), 0x77);

    // The same event again changes nothing and emits nothing.
    r.sim.raise(HostEvent::RdmaChanged {
        name: "mlx5_0".into(),
    });
    assert!(
        tokio::time::timeout(Duration::from_millis(400), changes.next())
            .await
            .is_err(),
        "a duplicated event must not emit PropertiesChanged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overflow_and_storms_end_in_the_true_state() {
    let Some(r) = start_with(
        SimHost::new(fixtures::demo_host()).unwrap(),
        EngineConfig {
            // No poll during the test: only the overflow handling can repair the state.
            tick: Duration::from_secs(3600),
            ..EngineConfig::default()
        },
    )
    .await
    else {
        return;
    };
    let before = managed(&r).await;
    // Changes whose events are lost: a device gone and a port moved, silently.
    r.sim
        .corrupt_file("sys/class/infiniband/mlx4_1/ports/1/state", "1: DOWN\n")
        .unwrap();
    r.sim.unplug("rxe0").unwrap();
    // A storm of duplicates and junk, then the overflow that says events were lost.
    for _ in 0..300 {
        r.sim.raise(HostEvent::RdmaChanged {
            name: "mlx4_1".into(),
        });
        r.sim.raise(HostEvent::NetdevChanged {
            name: "no-such-netdev".into(),
        });
    }
    r.sim.raise(HostEvent::Overflow {
        source: "test".into(),
    });
    let p = PortProxy::builder(&r.client)
        .path("/org/rdmamanager/RdmaManager1/Device/0/Port/1")
        .unwrap()
        // Every read asks the daemon: a caching proxy built while the change is being
        // published can keep the value its GetAll returned if the PropertiesChanged
        // was applied first (no later change repairs it: there is no poll here).
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await
        .unwrap();
    eventually("port state DOWN after overflow", || async {
        p.state().await.ok().as_deref() == Some("DOWN")
    })
    .await;
    // The storm's own events for mlx4_1 can bring DOWN before the overflow's full re-read has
    // run, so the end state is waited for as a whole, then compared.
    let mut want = before.clone();
    want.retain(|(p, _)| !p.starts_with("/org/rdmamanager/RdmaManager1/Device/3"));
    eventually("rxe0 gone after the overflow's re-read", || async {
        managed(&r).await == want
    })
    .await;
    let after = managed(&r).await;
    assert_eq!(after, want, "rxe0 gone, nothing else lost or duplicated");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_do_not_wait_for_a_slow_kernel() {
    let Some(r) = start().await else { return };
    // The next device read hangs for 3 s; an event makes the engine start it.
    r.sim.delay_next(SimOp::ReadDevice, Duration::from_secs(3));
    r.sim.raise(HostEvent::RdmaChanged {
        name: "mlx4_1".into(),
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let t = Instant::now();
    let objs = managed(&r).await;
    let p = PortProxy::builder(&r.client)
        .path("/org/rdmamanager/RdmaManager1/Device/0/Port/1")
        .unwrap()
        .build()
        .await
        .unwrap();
    assert_eq!(p.state().await.unwrap(), "ACTIVE");
    assert!(!objs.is_empty());
    assert!(
        t.elapsed() < Duration::from_millis(1000),
        "reads took {:?} while the kernel was slow",
        t.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throughput_history_and_live_samples() {
    let Some(r) = start().await else { return };
    let mgr = ManagerProxy::new(&r.client).await.unwrap();
    let mut live = mgr.receive_throughput_sampled().await.unwrap();
    let port = "/org/rdmamanager/RdmaManager1/Device/0/Port/1";
    // 4 MB per 100 ms tick for a second: 40 MB/s.
    for _ in 0..12 {
        r.sim
            .add_traffic("mlx4_1", 1, 4_000_000, 1_000_000)
            .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let p = PortProxy::builder(&r.client)
        .path(port)
        .unwrap()
        .build()
        .await
        .unwrap();
    let h = p.get_throughput_history().await.unwrap();
    assert!(h.len() >= 5, "history has {} samples", h.len());
    // Each sample's rate is over the time since the sample before it (a tick missed under
    // load leaves a gap that the next sample's rate covers).
    let total_tx: f64 = h
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let secs = match i {
                0 => 0.1,
                _ => s.0.saturating_sub(h[i - 1].0) as f64 / 1e6,
            };
            s.1 * secs
        })
        .sum();
    // What was added is what the samples integrate to (give or take the edges).
    assert!(
        (30e6..=52e6).contains(&total_tx),
        "integrated TX {total_tx} bytes"
    );
    assert!(h.windows(2).all(|w| w[0].0 < w[1].0), "oldest first");
    let sig = tokio::time::timeout(Duration::from_secs(5), live.next())
        .await
        .expect("ThroughputSampled in time")
        .unwrap();
    let args = sig.args().unwrap();
    assert!(args.samples().iter().any(|s| s.0 == path(port)));
    assert_eq!(args.samples().len(), 5, "every port of the demo host");

    let (source, saturated, counters) = p.get_counters().await.unwrap();
    assert_eq!(source, "pma32");
    assert!(!saturated);
    assert!(counters.get("tx_bytes").copied().unwrap_or(0) >= 48_000_000);
    assert!(counters.contains_key("symbol_error"), "{counters:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_are_refused_without_polkit() {
    let Some(r) = start().await else { return };
    let mgr = ManagerProxy::new(&r.client).await.unwrap();
    let before = managed(&r).await;
    let err = mgr
        .add_soft_link("rxe9", "rxe", "eth0")
        .await
        .expect_err("no polkit on this bus: refused");
    let name = match &err {
        zbus::Error::MethodError(n, _, _) => n.to_string(),
        other => panic!("unexpected error {other:?}"),
    };
    assert_eq!(name, "org.rdmamanager.RdmaManager1.Error.NotAuthorized");
    assert_eq!(managed(&r).await, before, "nothing changed");
    assert!(!r.sim.spec().devices.iter().any(|d| d.name == "rxe9"));
}

fn busctl(r: &Running, args: &[&str]) -> String {
    let out = r.bus.busctl().args(args).output().expect("busctl runs");
    assert!(
        out.status.success(),
        "busctl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busctl_tree_introspect_and_get_property() {
    let Some(r) = start().await else { return };
    if Command::new("busctl").arg("--version").output().is_err() {
        eprintln!("skipping: no busctl");
        return;
    }
    let tree = busctl(&r, &["tree", BUS_NAME]);
    assert!(
        tree.contains("/org/rdmamanager/RdmaManager1/Device/0/Port/2"),
        "{tree}"
    );
    let intro = busctl(
        &r,
        &[
            "introspect",
            BUS_NAME,
            "/org/rdmamanager/RdmaManager1/Device/0/Port/1",
        ],
    );
    assert!(intro.contains(".GetThroughputHistory"), "{intro}");
    let state = busctl(
        &r,
        &[
            "get-property",
            BUS_NAME,
            "/org/rdmamanager/RdmaManager1/Device/0/Port/1",
            "org.rdmamanager.RdmaManager1.Port",
            "State",
        ],
    );
    assert_eq!(state.trim(), "s \"ACTIVE\"");
    let json = busctl(
        &r,
        &[
            "--json=short",
            "get-property",
            BUS_NAME,
            ROOT_PATH,
            "org.rdmamanager.RdmaManager1",
            "Devices",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(v["data"].as_array().map(|a| a.len()), Some(4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_that_cannot_be_read_keeps_its_objects() {
    let no_poll = EngineConfig {
        tick: Duration::from_secs(3600),
        ..EngineConfig::default()
    };
    let Some(r) = start_with(SimHost::new(fixtures::demo_host()).unwrap(), no_poll).await else {
        return;
    };
    let before = managed(&r).await;
    // The next read of mlx4_0 fails with EIO, and a silent change elsewhere (rxe0) waits for a
    // re-read. By name: the re-read reads devices concurrently, and a fault on whichever read
    // comes first could hit rxe0, whose retry waits for a tick that never comes here.
    r.sim
        .fail_next_read_of("mlx4_0", rdma_managerd::model::Errno::EIO);
    r.sim
        .corrupt_file("sys/class/infiniband/rxe0/ports/1/state", "1: DOWN\n")
        .unwrap();
    r.sim.raise(HostEvent::Overflow {
        source: "test".into(),
    });
    let p = PortProxy::builder(&r.client)
        .path("/org/rdmamanager/RdmaManager1/Device/3/Port/1")
        .unwrap()
        // Every read asks the daemon: a caching proxy built while the change is being
        // published can keep the value its GetAll returned if the PropertiesChanged
        // was applied first (no later change repairs it: there is no poll here).
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await
        .unwrap();
    eventually("rxe0 port DOWN", || async {
        p.state().await.ok().as_deref() == Some("DOWN")
    })
    .await;
    assert_eq!(
        managed(&r).await,
        before,
        "the unreadable device was not dropped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ipoib_changes_and_every_proxy_property_reads() {
    use rdma_managerd::kernel::{Host, NetdevChange};
    use rdma_managerd::model::IpoibMode;
    let Some(r) = start().await else { return };
    let ifindex = r
        .sim
        .spec()
        .netdevs
        .iter()
        .find(|n| n.name == "ib0")
        .map(|n| n.ifindex)
        .expect("ib0");
    let obj = format!("/org/rdmamanager/RdmaManager1/Ipoib/{ifindex}");
    let mut changes = Box::pin(changes_of(&r, &obj).await);
    r.sim
        .change_netdev(
            "ib0",
            &NetdevChange {
                mtu: Some(65520),
                ipoib_mode: Some(IpoibMode::Connected),
                ..NetdevChange::default()
            },
        )
        .await
        .expect("connected mode and a 64k MTU on mlx4's ib0");
    let c = tokio::time::timeout(Duration::from_secs(5), changes.next())
        .await
        .expect("PropertiesChanged in time")
        .unwrap();
    assert_eq!(c.0, "org.rdmamanager.RdmaManager1.Ipoib");
    assert_eq!(c.1, vec!["Mode".to_string(), "Mtu".to_string()]);

    // Every property the committed XML lists, of every object, reads with the XML's type:
    // the proxies are generated from that XML, so they read them all.
    let mgr = ManagerProxy::new(&r.client).await.unwrap();
    let mut objects = vec![
        (ROOT_PATH.to_string(), "org.rdmamanager.RdmaManager1"),
        (
            ROOT_PATH.to_string(),
            "org.rdmamanager.RdmaManager1.Network",
        ),
        (obj.clone(), "org.rdmamanager.RdmaManager1.Ipoib"),
        (
            rdma_manager_dbus::HOST_PATH.to_string(),
            "org.rdmamanager.RdmaManager1.Host",
        ),
    ];
    for dev_path in mgr.devices().await.unwrap() {
        let d = DeviceProxy::builder(&r.client)
            .path(dev_path.clone())
            .unwrap()
            .build()
            .await
            .unwrap();
        for port_path in d.ports().await.unwrap() {
            objects.push((port_path.to_string(), "org.rdmamanager.RdmaManager1.Port"));
        }
        objects.push((dev_path.to_string(), "org.rdmamanager.RdmaManager1.Device"));
    }
    for (path, iface) in objects {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../dbus-interfaces/xml/{iface}.xml"));
        let xml = std::fs::read_to_string(&file).expect("the committed XML");
        let node = zbus_xml::Node::try_from(xml.as_str()).expect("parses");
        let mut want: Vec<(String, String)> = node.interfaces()[0]
            .properties()
            .iter()
            .map(|p| (p.name().to_string(), p.ty().to_string()))
            .collect();
        want.sort();
        let props = PropertiesProxy::builder(&r.client)
            .destination(BUS_NAME)
            .unwrap()
            .path(path.clone())
            .unwrap()
            .build()
            .await
            .unwrap();
        let all = props
            .get_all(zbus::names::InterfaceName::try_from(iface).unwrap())
            .await
            .unwrap_or_else(|e| panic!("{path} {iface}: GetAll: {e}"));
        let mut have: Vec<(String, String)> = all
            .iter()
            .map(|(k, v)| (k.clone(), v.value_signature().to_string()))
            .collect();
        have.sort();
        assert_eq!(
            have, want,
            "{path} {iface}: properties and types as the XML says"
        );
    }
    let i = IpoibProxy::builder(&r.client)
        .path(obj)
        .unwrap()
        .build()
        .await
        .unwrap();
    assert_eq!(i.mode().await.unwrap(), "connected");
    assert_eq!(i.mtu().await.unwrap(), 65520);
    assert!(i.connected_mode_supported().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managed_objects_carry_what_get_all_returns() {
    let Some(r) = start().await else { return };
    let om = object_manager(&r).await;
    let check = |objs: zbus::fdo::ManagedObjects| {
        let r = &r;
        async move {
            assert!(objs.len() > 9, "{} objects", objs.len());
            for (path, ifaces) in objs {
                assert_eq!(ifaces.len(), 1, "{path}: one interface of ours");
                let props = PropertiesProxy::builder(&r.client)
                    .destination(BUS_NAME)
                    .unwrap()
                    .path(path.clone())
                    .unwrap()
                    .build()
                    .await
                    .unwrap();
                for (iface, got) in ifaces {
                    let want = props.get_all(iface.as_ref()).await.unwrap();
                    assert_eq!(got, want, "{path} {iface}");
                }
            }
        }
    };
    check(om.get_managed_objects().await.unwrap()).await;
    // After a change the cached entry is encoded again.
    r.sim
        .set_port_state("mlx5_0", 1, PortState::Down, PhysState::Polling)
        .unwrap();
    let port = PortProxy::builder(&r.client)
        .path("/org/rdmamanager/RdmaManager1/Device/1/Port/1")
        .unwrap()
        // Every read asks the daemon: a caching proxy built while the change is being
        // published can keep the value its GetAll returned if the PropertiesChanged
        // was applied first (no later change repairs it: there is no poll here).
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await
        .unwrap();
    eventually("port state DOWN", || async {
        port.state().await.ok().as_deref() == Some("DOWN")
    })
    .await;
    let objs = om.get_managed_objects().await.unwrap();
    let state = &objs[&path("/org/rdmamanager/RdmaManager1/Device/1/Port/1")]
        ["org.rdmamanager.RdmaManager1.Port"]["State"];
    assert_eq!(
        state,
        &zbus::zvariant::OwnedValue::from(zbus::zvariant::Str::from("DOWN"))
    );
    check(objs).await;
}

type ManagedMap = std::collections::HashMap<
    OwnedObjectPath,
    std::collections::HashMap<
        String,
        std::collections::HashMap<String, zbus::zvariant::OwnedValue>,
    >,
>;

async fn managed_values(r: &Running) -> ManagedMap {
    let reply = r
        .client
        .call_method(
            Some(BUS_NAME),
            ROOT_PATH,
            Some("org.freedesktop.DBus.ObjectManager"),
            "GetManagedObjects",
            &(),
        )
        .await
        .expect("GetManagedObjects");
    assert_eq!(
        reply.body().signature().to_string(),
        "a{oa{sa{sv}}}",
        "the reply's signature"
    );
    reply.body().deserialize().expect("an a{oa{sa{sv}}}")
}

/// The ObjectManager at the root answers from its own cache of encoded entries
/// (dbus/managed.rs); zbus's own ObjectManager, put in its place on the same object server,
/// must give the same objects, interfaces and values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cached_object_manager_answers_as_zbus_own_does() {
    let Some(r) = start_with(
        SimHost::new(fixtures::demo_host()).expect("demo"),
        EngineConfig::default(),
    )
    .await
    else {
        return;
    };
    let ours = managed_values(&r).await;
    assert!(ours.len() > 10, "the demo host's objects: {}", ours.len());
    let server = r._service.service.conn.object_server();
    // Removal goes by interface name: this removes the daemon's own ObjectManager (the root
    // object stays, with its other interfaces).
    server
        .remove::<zbus::fdo::ObjectManager, _>(ROOT_PATH)
        .await
        .expect("remove the daemon's ObjectManager");
    assert!(server
        .at(ROOT_PATH, zbus::fdo::ObjectManager)
        .await
        .expect("add zbus's ObjectManager"));
    let mut stock = managed_values(&r).await;
    // zbus also lists the bare nodes between the root and the objects (".../Device",
    // ".../Device/0/Port") with no interface; the daemon's lists only objects, as sd-bus and
    // GDBus do. Everything else must be the same.
    stock.retain(|_, ifaces| !ifaces.is_empty());
    let mut ours_paths: Vec<String> = ours.keys().map(|p| p.to_string()).collect();
    let mut stock_paths: Vec<String> = stock.keys().map(|p| p.to_string()).collect();
    ours_paths.sort();
    stock_paths.sort();
    assert_eq!(ours_paths, stock_paths, "the same objects");
    for (p, ifaces) in &stock {
        assert_eq!(&ours[p], ifaces, "the interfaces and values of {p}");
    }
}
