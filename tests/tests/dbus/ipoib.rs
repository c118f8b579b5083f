//! IPoIB over D-Bus: rdma-managerd on a private dbus-daemon with the simulated demo host,
//! driven through the proxies and busctl. Each test checks the reply, the simulated kernel and
//! `<sim root>/etc/rdma-manager/ipoib.toml`.
//!
//! A stand-in for polkit on the private bus grants every request, so that what is tested here
//! is the IPoIB logic; `dbus_authorization.rs` tests the methods under the real polkitd.
//!
//! The demo host: `ib0` (mlx4, connected mode possible, 2048-byte InfiniBand MTU, port GUID
//! 0xf452140300039381) and `ibp59s0f0` (ConnectX-6, enhanced IPoIB: datagram only, 4096-byte
//! InfiniBand MTU, port GUID 0xb8599f0300d4e62a) with the children `ibp59s0f0.8002` and
//! `ibp59s0f0.8003` made by hand.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::bad_input::{bad_names, case, refused};
use rdma_manager_dbus::types::PersistedChild;
use rdma_manager_dbus::{ipoib_path, IpoibProxy, BUS_NAME};
use rdma_manager_tests::bus::PolkitConfig;
use rdma_manager_tests::bus::PrivateBus;
use rdma_manager_tests::bus::Reply;
use rdma_manager_tests::service::SystemSetup;
use rdma_manager_tests::service::{serve_sim, session_bus_or_skip, ServedSim};
use rdma_managerd::config::{self, IpoibConfig};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::{fixtures, SimHost, SimNetdev, SimOp};
use rdma_managerd::kernel::{Host, HostEvent, NewIpoibChild};
use rdma_managerd::model::{Errno, Guid, IpoibMode};
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};
use zbus::Connection;

const MLX4_GUID: u64 = 0xf452_1403_0003_9381;
const CX6_GUID: u64 = 0xb859_9f03_00d4_e62a;

/// Answers every CheckAuthorization with "authorized".
struct AllowAll;

#[zbus::interface(name = "org.freedesktop.PolicyKit1.Authority")]
impl AllowAll {
    async fn check_authorization(
        &self,
        _subject: (String, HashMap<String, OwnedValue>),
        _action_id: String,
        _details: HashMap<String, String>,
        _flags: u32,
        _cancellation_id: String,
    ) -> (bool, bool, HashMap<String, String>) {
        (true, false, HashMap::new())
    }
}

struct Running {
    bus: PrivateBus,
    sim: SimHost,
    client: Connection,
    _polkit: Connection,
    service: Option<ServedSim>,
}

fn fast() -> EngineConfig {
    EngineConfig {
        tick: Duration::from_millis(100),
        ..EngineConfig::default()
    }
}

async fn allow_all(bus: &PrivateBus) -> Connection {
    let conn = bus.connect().await.expect("polkit stand-in connects");
    conn.object_server()
        .at("/org/freedesktop/PolicyKit1/Authority", AllowAll)
        .await
        .expect("authority object");
    conn.request_name("org.freedesktop.PolicyKit1")
        .await
        .expect("polkit name");
    conn
}

async fn start_on(sim: SimHost) -> Option<Running> {
    let bus = session_bus_or_skip()?;
    let polkit = allow_all(&bus).await;
    let service = serve_sim(&bus, &sim, fast()).await.expect("service starts");
    let client = bus.connect().await.expect("client connects");
    Some(Running {
        bus,
        sim,
        client,
        _polkit: polkit,
        service: Some(service),
    })
}

async fn start() -> Option<Running> {
    start_on(SimHost::new(fixtures::demo_host()).expect("demo")).await
}

impl Running {
    fn netdev(&self, name: &str) -> Option<SimNetdev> {
        self.sim.spec().netdevs.into_iter().find(|n| n.name == name)
    }

    fn netdevs(&self) -> Vec<SimNetdev> {
        self.sim.spec().netdevs
    }

    fn path_of(&self, name: &str) -> OwnedObjectPath {
        let nd = self.netdev(name).unwrap_or_else(|| panic!("{name} exists"));
        OwnedObjectPath::try_from(ipoib_path(nd.ifindex)).expect("path")
    }

    async fn proxy(&self, name: &str) -> IpoibProxy<'static> {
        self.proxy_at(self.path_of(name)).await
    }

    async fn proxy_at(&self, path: OwnedObjectPath) -> IpoibProxy<'static> {
        // Uncached: each property read asks the service, so a read right after a reply sees
        // what the reply published (a cache would wait for the PropertiesChanged signal).
        IpoibProxy::builder(&self.client)
            .path(path)
            .expect("path")
            .cache_properties(zbus::proxy::CacheProperties::No)
            .build()
            .await
            .expect("proxy")
    }

    fn config_path(&self) -> PathBuf {
        self.sim.root().join("etc/rdma-manager/ipoib.toml")
    }

    /// The file's text, `None` when it was never written.
    fn file(&self) -> Option<String> {
        std::fs::read_to_string(self.config_path()).ok()
    }

    fn persisted(&self) -> IpoibConfig {
        match self.file() {
            Some(text) => config::parse::<IpoibConfig>(text.as_bytes()).expect("valid file"),
            None => IpoibConfig::default(),
        }
    }

    /// Kernel state and file together, to compare before and after a refused call.
    fn snapshot(&self) -> (Vec<SimNetdev>, Option<String>) {
        (self.netdevs(), self.file())
    }

    fn busctl_call(&self, path: &str, method: &str, args: &[&str]) -> (bool, String) {
        let out = self
            .bus
            .busctl()
            .args(["--timeout=10", "call", BUS_NAME, path])
            .arg("org.rdmamanager.RdmaManager1.Ipoib")
            .arg(method)
            .args(args)
            .output()
            .expect("busctl runs");
        let text = if out.status.success() {
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        } else {
            String::from_utf8_lossy(&out.stderr).trim().to_string()
        };
        (out.status.success(), text)
    }
}

fn ipoib_of(n: &SimNetdev) -> &rdma_managerd::kernel::sim::SimIpoib {
    n.ipoib.as_ref().expect("an IPoIB netdev")
}

/// (error name without the prefix, message) of a refused call.
fn refusal(e: zbus::Error) -> (String, String) {
    match e {
        zbus::Error::MethodError(name, msg, _) => (
            name.as_str()
                .trim_start_matches("org.rdmamanager.RdmaManager1.Error.")
                .to_string(),
            msg.unwrap_or_default(),
        ),
        other => panic!("not a method error: {other:?}"),
    }
}

fn settings(pairs: &[(&'static str, Value<'static>)]) -> HashMap<&'static str, Value<'static>> {
    pairs.iter().cloned().collect()
}

/// Waits until `f` holds, polling; panics with `what` after 5 s.
async fn eventually<F: FnMut() -> bool>(what: &str, mut f: F) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_child_with_the_default_name_and_settings() {
    let Some(r) = start().await else { return };
    let ib0 = r.proxy("ib0").await;
    let path = ib0
        .create_child(
            0x0002,
            "",
            settings(&[
                ("mode", Value::from("connected")),
                ("mtu", Value::from(9000u32)),
                ("umcast", Value::from(true)),
            ]),
        )
        .await
        .expect("created");
    // The kernel's name: the P_Key as given; the kernel's P_Key: with the full-membership bit.
    let nd = r.netdev("ib0.0002").expect("in the kernel");
    assert_eq!(path, r.path_of("ib0.0002"));
    let ib = ipoib_of(&nd);
    assert_eq!(ib.pkey, 0x8002);
    assert_eq!(ib.parent.as_deref(), Some("ib0"));
    assert_eq!(ib.mode, IpoibMode::Connected);
    assert!(ib.umcast);
    assert_eq!(nd.mtu, 9000);
    // Published before the reply.
    let child = r.proxy_at(path).await;
    assert_eq!(child.name().await.unwrap(), "ib0.0002");
    assert_eq!(child.pkey().await.unwrap(), 0x8002);
    assert_eq!(child.mode().await.unwrap(), "connected");
    assert_eq!(child.mtu().await.unwrap(), 9000);
    assert!(child.umcast().await.unwrap());
    assert!(child.persisted().await.unwrap());
    let remembered = child.persisted_settings().await.unwrap();
    assert_eq!(remembered.get("mtu").map(String::as_str), Some("9000"));
    // On disk, under the port's GUID.
    let text = r.file().expect("ipoib.toml written");
    assert!(text.starts_with("# IPoIB settings"), "{text}");
    let c = r.persisted();
    let port = c.port(Guid(MLX4_GUID)).expect("port entry");
    assert_eq!(port.children.len(), 1);
    let e = &port.children[0];
    assert_eq!(
        (e.name.as_str(), e.pkey, e.mode, e.mtu, e.umcast),
        (
            "ib0.0002",
            0x8002,
            Some(IpoibMode::Connected),
            Some(9000),
            Some(true)
        )
    );
    assert!(port.settings().is_empty(), "ib0's own settings untouched");
    assert_eq!(
        ib0.persisted_children().await.unwrap(),
        vec![PersistedChild {
            pkey: 0x8002,
            name: "ib0.0002".into()
        }]
    );
    assert!(!ib0.persisted().await.unwrap());

    // A given name, and an MTU alone (remembered with the mode it fits).
    let path = ib0
        .create_child(
            0x8010,
            "storage0",
            settings(&[("mtu", Value::from(2000u32))]),
        )
        .await
        .expect("created");
    assert_eq!(path, r.path_of("storage0"));
    let nd = r.netdev("storage0").expect("in the kernel");
    assert_eq!((ipoib_of(&nd).pkey, nd.mtu), (0x8010, 2000));
    let c = r.persisted();
    let e = c
        .port(Guid(MLX4_GUID))
        .and_then(|p| p.child(0x8010))
        .expect("remembered");
    assert_eq!(
        (e.name.as_str(), e.mode, e.mtu),
        ("storage0", Some(IpoibMode::Datagram), Some(2000))
    );

    // The same partition again, written without the full-membership bit.
    let before = r.snapshot();
    let (name, msg) = refusal(
        ib0.create_child(0x0010, "", HashMap::new())
            .await
            .unwrap_err(),
    );
    assert_eq!(name, "AlreadyExists", "{msg}");
    assert!(
        msg.contains("storage0") && msg.contains("0x8010") && msg.contains("full-membership"),
        "{msg}"
    );
    // ib0 itself is in the default partition 0xffff.
    let (name, msg) = refusal(
        ib0.create_child(0x7fff, "", HashMap::new())
            .await
            .unwrap_err(),
    );
    assert_eq!(name, "AlreadyExists", "{msg}");
    assert_eq!(r.snapshot(), before);

    // busctl, as the documentation shows it.
    let ib0_path = r.path_of("ib0");
    let (ok, out) = r.busctl_call(
        ib0_path.as_str(),
        "CreateChild",
        &[
            "qsa{sv}", "0x0004", "", "2", "mtu", "u", "2044", "umcast", "b", "true",
        ],
    );
    assert!(ok, "{out}");
    assert!(
        out.starts_with("o \"/org/rdmamanager/RdmaManager1/Ipoib/"),
        "{out}"
    );
    let nd = r.netdev("ib0.0004").expect("busctl's child");
    assert_eq!(
        (ipoib_of(&nd).pkey, nd.mtu, ipoib_of(&nd).umcast),
        (0x8004, 2044, true)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_parent_names_are_cut_to_ten_characters() {
    let mut spec = fixtures::demo_host();
    for n in &mut spec.netdevs {
        if n.name == "ibp59s0f0" {
            n.name = "ibp175s0f0np0".into();
        }
        if let Some(ib) = n.ipoib.as_mut() {
            if ib.parent.as_deref() == Some("ibp59s0f0") {
                ib.parent = Some("ibp175s0f0np0".into());
            }
        }
    }
    let Some(r) = start_on(SimHost::new(spec).expect("host")).await else {
        return;
    };
    let p = r.proxy("ibp175s0f0np0").await;
    let path = p
        .create_child(0x0005, "", HashMap::new())
        .await
        .expect("created");
    assert_eq!(path, r.path_of("ibp175s0f0.0005"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_forgets_children_and_refuses_a_port_interface() {
    let Some(r) = start().await else { return };
    let ib0 = r.proxy("ib0").await;
    ib0.create_child(0x0002, "", settings(&[("umcast", Value::from(true))]))
        .await
        .expect("created");
    ib0.create_child(0x0003, "", HashMap::new())
        .await
        .expect("created");
    assert_eq!(r.persisted().ports[0].children.len(), 2);

    r.proxy("ib0.0002").await.delete().await.expect("deleted");
    assert!(r.netdev("ib0.0002").is_none());
    let c = r.persisted();
    let port = c.port(Guid(MLX4_GUID)).expect("port");
    assert_eq!(port.children.len(), 1);
    assert_eq!(port.children[0].name, "ib0.0003");
    assert_eq!(
        ib0.children().await.unwrap(),
        vec![r.path_of("ib0.0003")],
        "Children follows"
    );

    // The last child gone, the port's entry goes with it.
    r.proxy("ib0.0003").await.delete().await.expect("deleted");
    assert!(r.persisted().ports.is_empty(), "{:?}", r.file());

    // A port's own interface.
    let before = r.snapshot();
    let (name, msg) = refusal(ib0.delete().await.unwrap_err());
    assert_eq!(name, "InvalidArgument", "{msg}");
    assert!(
        msg.contains("port's own IPoIB interface") && msg.contains("only P_Key children"),
        "{msg}"
    );
    assert_eq!(r.snapshot(), before);

    // A child made by hand: deleted, and nothing was remembered of it.
    r.proxy("ibp59s0f0.8002")
        .await
        .delete()
        .await
        .expect("deleted");
    assert!(r.netdev("ibp59s0f0.8002").is_none());
    assert_eq!(r.file(), before.1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mode_mtu_and_umcast_are_set_and_remembered() {
    let Some(r) = start().await else { return };
    let ib0 = r.proxy("ib0").await;
    ib0.set_mode("connected").await.expect("mode");
    let nd = r.netdev("ib0").unwrap();
    assert_eq!((ipoib_of(&nd).mode, nd.mtu), (IpoibMode::Connected, 65520));
    assert_eq!(ib0.mode().await.unwrap(), "connected");
    assert_eq!(ib0.mtu().await.unwrap(), 65520);
    let port = r.persisted().ports[0].clone();
    assert_eq!(port.guid, Guid(MLX4_GUID));
    assert_eq!((port.mode, port.mtu), (Some(IpoibMode::Connected), None));

    ib0.set_mtu(9000).await.expect("mtu");
    assert_eq!(r.netdev("ib0").unwrap().mtu, 9000);
    ib0.set_umcast(true).await.expect("umcast");
    assert!(ipoib_of(&r.netdev("ib0").unwrap()).umcast);
    let port = r.persisted().ports[0].clone();
    assert_eq!(
        (port.mode, port.mtu, port.umcast),
        (Some(IpoibMode::Connected), Some(9000), Some(true))
    );
    assert!(ib0.persisted().await.unwrap());
    let shown = ib0.persisted_settings().await.unwrap();
    assert_eq!(shown.get("mode").map(String::as_str), Some("connected"));
    assert_eq!(shown.get("mtu").map(String::as_str), Some("9000"));
    assert_eq!(shown.get("umcast").map(String::as_str), Some("true"));

    // Back to datagram: the kernel shrinks the MTU, and the remembered MTU is dropped.
    ib0.set_mode("datagram").await.expect("mode");
    let nd = r.netdev("ib0").unwrap();
    assert_eq!((ipoib_of(&nd).mode, nd.mtu), (IpoibMode::Datagram, 2044));
    let port = r.persisted().ports[0].clone();
    assert_eq!(
        (port.mode, port.mtu, port.umcast),
        (Some(IpoibMode::Datagram), None, Some(true))
    );

    // 4092 is a datagram MTU, but not on ib0's 2048-byte InfiniBand link: the kernel's EINVAL,
    // explained; nothing changes.
    let before = r.snapshot();
    let (name, msg) = refusal(ib0.set_mtu(4092).await.unwrap_err());
    assert_eq!(name, "InvalidArgument", "{msg}");
    assert!(msg.contains("EINVAL") && msg.contains("2044"), "{msg}");
    assert_eq!(r.snapshot(), before);

    // A child made by hand is remembered from its first setting on.
    let hand = r.proxy("ibp59s0f0.8003").await;
    assert!(!hand.persisted().await.unwrap());
    hand.set_mtu(4000).await.expect("mtu");
    assert_eq!(r.netdev("ibp59s0f0.8003").unwrap().mtu, 4000);
    assert!(hand.persisted().await.unwrap());
    let c = r.persisted();
    let e = c
        .port(Guid(CX6_GUID))
        .and_then(|p| p.child(0x8003))
        .expect("remembered");
    assert_eq!(
        (e.name.as_str(), e.mtu, e.mode),
        ("ibp59s0f0.8003", Some(4000), Some(IpoibMode::Datagram))
    );
    let parent = r.proxy("ibp59s0f0").await;
    assert_eq!(
        parent.persisted_children().await.unwrap(),
        vec![PersistedChild {
            pkey: 0x8003,
            name: "ibp59s0f0.8003".into()
        }]
    );

    // busctl, as the documentation shows it.
    let p = r.path_of("ib0");
    for (method, args) in [
        ("SetMode", ["s", "connected"]),
        ("SetMtu", ["u", "65520"]),
        ("SetUmcast", ["b", "false"]),
    ] {
        let (ok, out) = r.busctl_call(p.as_str(), method, &args);
        assert!(ok, "{method}: {out}");
    }
    let nd = r.netdev("ib0").unwrap();
    assert_eq!(
        (ipoib_of(&nd).mode, nd.mtu, ipoib_of(&nd).umcast),
        (IpoibMode::Connected, 65520, false)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enhanced_ipoib_refuses_connected_mode_up_front() {
    let Some(r) = start().await else { return };
    let before = r.snapshot();
    let cx6 = r.proxy("ibp59s0f0").await;
    assert!(!cx6.connected_mode_supported().await.unwrap());
    let (name, msg) = refusal(cx6.set_mode("connected").await.unwrap_err());
    assert_eq!(name, "NotSupported", "{msg}");
    assert!(
        msg.contains("ConnectX-4") && msg.contains("ipoib_enhanced=0") && msg.contains("datagram"),
        "{msg}"
    );
    let (name, msg) = refusal(
        cx6.create_child(0x0009, "", settings(&[("mode", Value::from("connected"))]))
            .await
            .unwrap_err(),
    );
    assert_eq!(name, "NotSupported", "{msg}");
    let (name, _) = refusal(
        r.proxy("ibp59s0f0.8002")
            .await
            .set_mode("connected")
            .await
            .unwrap_err(),
    );
    assert_eq!(name, "NotSupported");
    assert_eq!(r.snapshot(), before);
    // Datagram MTUs up to the 4096-byte link's 4092 are fine there.
    cx6.set_mtu(4092).await.expect("mtu");
    assert_eq!(r.netdev("ibp59s0f0").unwrap().mtu, 4092);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_class_of_bad_input_is_refused_with_nothing_changed() {
    let Some(r) = start().await else { return };
    // Something remembered already, so that "unchanged" covers a file that exists.
    r.proxy("ib0")
        .await
        .set_umcast(false)
        .await
        .expect("umcast");
    let before = r.snapshot();
    assert!(before.1.is_some());
    let ib0 = r.proxy("ib0").await;
    let empty = || HashMap::new();
    let mut cases: Vec<(&str, Result<OwnedObjectPath, zbus::Error>, &str, &str)> = Vec::new();
    for (bad, why) in [
        ("abcdefghijklmnop", "16 bytes"),
        ("ib 0", "' '"),
        ("../x", "'/'"),
        ("a/b", "'/'"),
        ("ib\"0", "'\"'"),
        ("ib'0", "'\\''"),
        ("ib0\nx", "'\\n'"),
        ("ib%d", "'%'"),
        (".hidden", "start"),
        ("..", "reserved"),
    ] {
        cases.push((
            "name",
            ib0.create_child(0x0002, bad, empty()).await,
            "InvalidArgument",
            why,
        ));
    }
    for (pkey, why) in [(0u16, "0x0000"), (0x8000, "full-membership bit alone")] {
        cases.push((
            "pkey",
            ib0.create_child(pkey, "", empty()).await,
            "InvalidArgument",
            why,
        ));
    }
    for (pairs, why) in [
        (vec![("pkey", Value::from(0x1_0002u32))], "not known"),
        (vec![("MTU", Value::from(2044u32))], "not known"),
        (vec![("mtu", Value::from(2044i32))], "type u, not i"),
        (vec![("mtu", Value::from("2044"))], "type u, not s"),
        (vec![("mode", Value::from(1u32))], "type s, not u"),
        (vec![("umcast", Value::from("yes"))], "type b, not s"),
        (vec![("mode", Value::from("cm"))], "not known"),
        (
            vec![("mtu", Value::from(4093u32))],
            "too large for datagram",
        ),
        (vec![("mtu", Value::from(71u32))], "72"),
        (
            vec![
                ("mode", Value::from("connected")),
                ("mtu", Value::from(65521u32)),
            ],
            "65520",
        ),
    ] {
        cases.push((
            "settings",
            ib0.create_child(0x0002, "", pairs.into_iter().collect())
                .await,
            "InvalidArgument",
            why,
        ));
    }
    cases.push((
        "taken name",
        ib0.create_child(0x0002, "eth0", empty()).await,
        "AlreadyExists",
        "eth0",
    ));
    cases.push((
        "child of a child",
        r.proxy("ibp59s0f0.8002")
            .await
            .create_child(0x0009, "", empty())
            .await,
        "InvalidArgument",
        "children of children",
    ));
    for (what, got, want, why) in cases {
        let (name, msg) = refusal(got.expect_err(what));
        assert_eq!(name, want, "{what}: {msg}");
        assert!(msg.contains(why), "{what}: {why:?} not in {msg:?}");
        assert_eq!(r.snapshot(), before, "{what} changed something");
    }
    for (got, why) in [
        (ib0.set_mode("Connected").await, "not known"),
        (ib0.set_mode("").await, "not known"),
        (ib0.set_mtu(0).await, "below"),
        (ib0.set_mtu(71).await, "72"),
        (ib0.set_mtu(4093).await, "too large for datagram"),
        (ib0.set_mtu(u32::MAX).await, "too large"),
    ] {
        let (name, msg) = refusal(got.expect_err(why));
        assert_eq!(name, "InvalidArgument", "{msg}");
        assert!(msg.contains(why), "{why:?} not in {msg:?}");
        assert_eq!(r.snapshot(), before);
    }
    // Connected mode has its own limits.
    ib0.set_mode("connected").await.expect("mode");
    let before = r.snapshot();
    for (mtu, why) in [(67, "below 68"), (65521, "above 65520")] {
        let (name, msg) = refusal(ib0.set_mtu(mtu).await.unwrap_err());
        assert_eq!(name, "InvalidArgument", "{msg}");
        assert!(msg.contains(why), "{msg}");
    }
    assert_eq!(r.snapshot(), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_at_any_step_leaves_kernel_and_file_as_they_were() {
    let Some(r) = start().await else { return };
    let ib0 = r.proxy("ib0").await;
    let with_mtu = || settings(&[("mtu", Value::from(2000u32))]);

    // CreateChild: the kernel refuses; the MTU step fails; the save fails.
    let before = r.snapshot();
    for (op, errno, want, said) in [
        (SimOp::CreateChild, Errno::EPERM, "Failed", "EPERM"),
        (
            SimOp::ChangeNetdev,
            Errno::ENOMEM,
            "Failed",
            "removed again",
        ),
        (SimOp::WriteFile, Errno::EIO, "Failed", "removed again"),
    ] {
        r.sim.fail_next(op, errno);
        let (name, msg) = refusal(ib0.create_child(0x0002, "", with_mtu()).await.unwrap_err());
        assert_eq!(name, want, "{op:?}: {msg}");
        assert!(msg.contains(said), "{op:?}: {msg}");
        assert!(r.netdev("ib0.0002").is_none(), "{op:?} left the child");
        assert_eq!(r.snapshot(), before, "{op:?}");
    }
    // The undo itself failing is said, with what to do.
    r.sim.fail_next(SimOp::WriteFile, Errno::EIO);
    r.sim.fail_next(SimOp::DeleteNetdev, Errno::EBUSY);
    let (_, msg) = refusal(ib0.create_child(0x0002, "", with_mtu()).await.unwrap_err());
    assert!(msg.contains("ip link delete ib0.0002"), "{msg}");
    let stray = r.path_of("ib0.0002");
    r.sim.delete_netdev("ib0.0002").await.expect("cleaned up");
    // Gone from the service, not only from the simulated kernel: until the engine has taken
    // the deletion event, it still knows the child and refuses to make it again.
    let deadline = Instant::now() + Duration::from_secs(5);
    while ib0.children().await.expect("Children").contains(&stray) {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for the stray child's object to go"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Made for real, then each later change fails.
    ib0.create_child(
        0x0002,
        "",
        settings(&[("umcast", Value::from(true)), ("mtu", Value::from(2000u32))]),
    )
    .await
    .expect("created");
    let child = r.proxy("ib0.0002").await;
    let before = r.snapshot();

    r.sim.fail_next(SimOp::DeleteNetdev, Errno::EBUSY);
    let (name, _) = refusal(child.delete().await.unwrap_err());
    assert_eq!(name, "Busy");
    assert_eq!(r.snapshot(), before);

    r.sim.fail_next(SimOp::WriteFile, Errno::EIO);
    let (name, msg) = refusal(child.delete().await.unwrap_err());
    assert_eq!(name, "Failed", "{msg}");
    assert!(msg.contains("created again"), "{msg}");
    // Back with its settings (under a new ifindex, as a re-created netdev gets).
    let nd = r.netdev("ib0.0002").expect("re-created");
    assert_eq!(
        (nd.mtu, ipoib_of(&nd).umcast, ipoib_of(&nd).pkey),
        (2000, true, 0x8002)
    );
    assert_eq!(r.file(), before.1);

    let child = r.proxy("ib0.0002").await;
    let before = r.snapshot();
    for op in [SimOp::ChangeNetdev, SimOp::WriteFile] {
        r.sim.fail_next(op, Errno::EIO);
        assert!(child.set_mtu(1500).await.is_err(), "{op:?}");
        assert_eq!(r.snapshot(), before, "SetMtu, {op:?}");
        r.sim.fail_next(op, Errno::EIO);
        assert!(child.set_umcast(false).await.is_err(), "{op:?}");
        assert_eq!(r.snapshot(), before, "SetUmcast, {op:?}");
        r.sim.fail_next(op, Errno::EIO);
        assert!(ib0.set_mode("connected").await.is_err(), "{op:?}");
        assert_eq!(r.snapshot(), before, "SetMode, {op:?}");
    }
    r.sim.fail_next(SimOp::WriteFile, Errno::EIO);
    let (_, msg) = refusal(child.set_mtu(1500).await.unwrap_err());
    assert!(msg.contains("set back as it was"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_interface_is_not_found() {
    let Some(r) = start().await else { return };
    let ib0 = r.proxy("ib0").await;
    let path = ib0
        .create_child(0x0002, "", HashMap::new())
        .await
        .expect("created");
    let child = r.proxy_at(path.clone()).await;
    // Two deletes at once, the first slowed down in the kernel: the second waits for the
    // engine behind it and then finds no such interface.
    r.sim
        .delay_next(SimOp::DeleteNetdev, Duration::from_millis(500));
    let other = r.proxy_at(path.clone()).await;
    let (a, b) = tokio::join!(child.delete(), other.delete());
    let err = match (a, b) {
        (Ok(()), Err(e)) | (Err(e), Ok(())) => e,
        other => panic!("one delete must win: {other:?}"),
    };
    let (name, msg) = refusal(err);
    assert_eq!(name, "NotFound", "{msg}");
    assert!(msg.contains("no IPoIB interface"), "{msg}");
    // The object is gone: a later call on its path is answered by the bus layer.
    let e = child.set_mtu(2000).await.unwrap_err();
    assert!(
        matches!(&e, zbus::Error::MethodError(n, _, _) if n.as_str() == "org.freedesktop.DBus.Error.UnknownObject"),
        "{e:?}"
    );
    assert!(r.persisted().ports.is_empty());
}

/// The demo host's kernel as it is after a reboot: nothing of what was changed.
fn rebooted(dir: &std::path::Path) -> SimHost {
    SimHost::in_dir(dir, fixtures::demo_host()).expect("host")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_was_remembered_comes_back_after_a_restart() {
    let dir = tempfile::tempdir().expect("dir");
    let Some(mut r) = start_on(rebooted(dir.path())).await else {
        return;
    };
    let ib0 = r.proxy("ib0").await;
    ib0.set_mode("connected").await.expect("mode");
    ib0.set_mtu(9000).await.expect("mtu");
    ib0.create_child(
        0x0002,
        "",
        settings(&[("umcast", Value::from(true)), ("mtu", Value::from(2000u32))]),
    )
    .await
    .expect("child");
    ib0.create_child(0x8010, "storage0", HashMap::new())
        .await
        .expect("child");
    r.proxy("ibp59s0f0.8003")
        .await
        .set_umcast(true)
        .await
        .expect("umcast");
    let file = r.file().expect("written");

    // The daemon stops; the kernel forgets everything (the tree's sys/ is rendered anew).
    if let Some(s) = r.service.take() {
        s.stop_keeping_tree().await;
    }
    let sim = rebooted(dir.path());
    assert!(!sim.spec().netdevs.iter().any(|n| n.name == "ib0.0002"));
    let service = serve_sim(&r.bus, &sim, fast()).await.expect("restarts");
    r.service = Some(service);
    r.sim = sim;
    eventually("children and settings re-applied", || {
        let (Some(ib0), Some(c), Some(s), Some(h)) = (
            r.netdev("ib0"),
            r.netdev("ib0.0002"),
            r.netdev("storage0"),
            r.netdev("ibp59s0f0.8003"),
        ) else {
            return false;
        };
        ipoib_of(&ib0).mode == IpoibMode::Connected
            && ib0.mtu == 9000
            && c.mtu == 2000
            && ipoib_of(&c).umcast
            && ipoib_of(&c).pkey == 0x8002
            && ipoib_of(&s).pkey == 0x8010
            && ipoib_of(&h).umcast
    })
    .await;
    assert_eq!(
        r.file().as_deref(),
        Some(file.as_str()),
        "restore writes nothing"
    );
    let c = r.proxy("ib0.0002").await;
    assert!(c.persisted().await.unwrap());

    // A remembered child the kernel loses while the daemon runs comes back when its port's
    // interface appears again (here: the event of a driver reload).
    r.sim.delete_netdev("ib0.0002").await.expect("gone");
    eventually("the object to go", || r.netdev("ib0.0002").is_none()).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        r.netdev("ib0.0002").is_none(),
        "not re-created before the port appears"
    );
    r.sim.raise(HostEvent::NetdevAdded { name: "ib0".into() });
    eventually("ib0.0002 re-created", || {
        r.netdev("ib0.0002")
            .is_some_and(|c| c.mtu == 2000 && ipoib_of(&c).umcast)
    })
    .await;

    // A remembered child made again by hand gets its remembered settings when it appears.
    r.sim.delete_netdev("ib0.0002").await.expect("gone");
    eventually("the object to go", || r.netdev("ib0.0002").is_none()).await;
    r.sim
        .create_ipoib_child(&NewIpoibChild {
            parent: "ib0".into(),
            name: "ib0.0002".into(),
            pkey: 0x0002,
            mode: None,
            umcast: None,
        })
        .await
        .expect("made by hand");
    eventually("its settings re-applied", || {
        r.netdev("ib0.0002")
            .is_some_and(|c| c.mtu == 2000 && ipoib_of(&c).umcast)
    })
    .await;
    assert_eq!(r.file().as_deref(), Some(file.as_str()));
    drop(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_that_fails_is_logged_not_retried() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::create_dir_all(dir.path().join("etc/rdma-manager")).expect("etc");
    std::fs::write(
        dir.path().join("etc/rdma-manager/ipoib.toml"),
        format!(
            "[[port]]\nguid = \"{}\"\n[[port.child]]\nname = \"ib0.0002\"\npkey = \"0x8002\"\n[[port.child]]\nname = \"eth0\"\npkey = \"0x8005\"\n",
            Guid(MLX4_GUID)
        ),
    )
    .expect("file");
    let sim = SimHost::in_dir(dir.path(), fixtures::demo_host()).expect("host");
    // The first re-creation fails; the second child's name is another interface's.
    sim.fail_next(SimOp::CreateChild, Errno::ENOMEM);
    let Some(r) = start_on(sim).await else { return };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(r.netdev("ib0.0002").is_none(), "not retried");
    assert!(
        r.netdevs().iter().filter(|n| n.name == "eth0").count() == 1
            && r.netdev("eth0").is_some_and(|n| n.ipoib.is_none()),
        "eth0 untouched"
    );
    // The daemon serves, and still remembers both.
    let ib0 = r.proxy("ib0").await;
    assert_eq!(ib0.persisted_children().await.unwrap().len(), 2);
    // Creating it again is the way to get it back (and Delete then forgets it).
    ib0.create_child(0x0002, "", HashMap::new())
        .await
        .expect("created");
    r.proxy("ib0.0002").await.delete().await.expect("deleted");
    assert_eq!(ib0.persisted_children().await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_file_is_reported_kept_and_blocks_changes() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::create_dir_all(dir.path().join("etc/rdma-manager")).expect("etc");
    let broken = "[[port]]\nguid = \"0xf452140300039381\"\nmtu = \"big\"\n";
    std::fs::write(dir.path().join("etc/rdma-manager/ipoib.toml"), broken).expect("file");
    let Some(r) = start_on(rebooted(dir.path())).await else {
        return;
    };
    let mgr = rdma_manager_dbus::ManagerProxy::builder(&r.client)
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await
        .expect("manager");
    let errors = mgr.config_errors().await.expect("ConfigErrors");
    let why = errors
        .get("/etc/rdma-manager/ipoib.toml")
        .expect("ipoib.toml reported");
    assert!(why.contains("will not overwrite"), "{why}");
    let before = r.snapshot();
    let (name, msg) = refusal(r.proxy("ib0").await.set_umcast(true).await.unwrap_err());
    assert_eq!(name, "Failed", "{msg}");
    assert!(msg.contains("ipoib.toml"), "{msg}");
    assert_eq!(r.snapshot(), before);
    assert_eq!(r.file().as_deref(), Some(broken));
}

/// What the daemon publishes of the IPoIB interfaces: (name, parent name) of each object,
/// read afresh from the service.
async fn published(r: &Running) -> Vec<(String, String)> {
    let root = rdma_manager_dbus::ManagerProxy::builder(&r.client)
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await
        .expect("root proxy");
    let mut out = Vec::new();
    for path in root.ipoib_interfaces().await.expect("IpoibInterfaces") {
        let p = r.proxy_at(path).await;
        out.push((p.name().await.unwrap(), p.parent_name().await.unwrap()));
    }
    out.sort();
    out
}

/// The one child `ib0.8005` under `hpc_ib0`, as the objects, the kernel and ipoib.toml see it.
async fn one_child_under_the_new_name(r: &Running, file: &str) {
    let children: Vec<_> = published(r)
        .await
        .into_iter()
        .filter(|(n, _)| n == "ib0.8005")
        .collect();
    assert_eq!(
        children,
        [("ib0.8005".to_string(), "hpc_ib0".to_string())],
        "one child, under the parent's new name"
    );
    let parent = r.proxy("hpc_ib0").await;
    let child_path = r.path_of("ib0.8005");
    assert_eq!(parent.children().await.unwrap(), vec![child_path.clone()]);
    assert_eq!(
        parent.persisted_children().await.unwrap(),
        vec![PersistedChild {
            pkey: 0x8005,
            name: "ib0.8005".into()
        }]
    );
    let child = r.proxy_at(child_path).await;
    assert_eq!(child.parent().await.unwrap(), r.path_of("hpc_ib0"));
    assert!(child.persisted().await.unwrap());
    let in_kernel: Vec<_> = r
        .netdevs()
        .into_iter()
        .filter(|n| n.ipoib.as_ref().is_some_and(|i| i.pkey == 0x8005))
        .map(|n| (n.name, ipoib_of_owned(n.ipoib).parent))
        .collect();
    assert_eq!(
        in_kernel,
        [("ib0.8005".to_string(), Some("hpc_ib0".to_string()))]
    );
    // Remembered under the port's GUID, with the name it has.
    assert_eq!(r.file().as_deref(), Some(file));
    let c = r.persisted();
    let e = c.port(Guid(MLX4_GUID)).and_then(|p| p.child(0x8005));
    assert_eq!(e.map(|e| e.name.as_str()), Some("ib0.8005"));
}

fn ipoib_of_owned(
    i: Option<rdma_managerd::kernel::sim::SimIpoib>,
) -> rdma_managerd::kernel::sim::SimIpoib {
    i.expect("an IPoIB netdev")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renaming_a_parent_takes_its_children_along() {
    let dir = tempfile::tempdir().expect("dir");
    let Some(mut r) = start_on(rebooted(dir.path())).await else {
        return;
    };
    let ib0 = r.proxy("ib0").await;
    ib0.create_child(0x8005, "", HashMap::new())
        .await
        .expect("child");
    let file = r.file().expect("remembered");
    let root = rdma_manager_dbus::ManagerProxy::new(&r.client)
        .await
        .expect("root proxy");
    // As the Naming page does: the port's interface gets a name, now.
    root.set_ipoib_name(&Guid(MLX4_GUID).to_string(), "hpc_ib0", true)
        .await
        .expect("renamed");
    // Published before the reply.
    one_child_under_the_new_name(&r, &file).await;

    // A restart on the same tree (the kernel keeps both interfaces): still one child.
    if let Some(s) = r.service.take() {
        s.stop_keeping_tree().await;
    }
    r.service = Some(serve_sim(&r.bus, &r.sim, fast()).await.expect("restarts"));
    one_child_under_the_new_name(&r, &file).await;

    // A child renamed by hand is remembered under its new name.
    r.sim
        .rename_netdev("ib0.8005", "storage5")
        .await
        .expect("renamed by hand");
    eventually("ipoib.toml to follow the child's rename", || {
        r.persisted()
            .port(Guid(MLX4_GUID))
            .and_then(|p| p.child(0x8005))
            .is_some_and(|e| e.name == "storage5")
    })
    .await;
    // The file is written first, the property published after it.
    let parent = r.proxy("hpc_ib0").await;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let children = parent.persisted_children().await.unwrap();
        if children
            == vec![PersistedChild {
                pkey: 0x8005,
                name: "storage5".into(),
            }]
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "PersistedChildren still {children:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let children: Vec<_> = published(&r)
        .await
        .into_iter()
        .filter(|(n, _)| n.starts_with("ib0.") || n == "storage5")
        .collect();
    assert_eq!(children, [("storage5".to_string(), "hpc_ib0".to_string())]);
    drop(dir);
}

/// An interface's addresses are the kernel's, whoever set them, and follow its address
/// events (no re-read of the interface's other attributes, no tick needed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn addresses_are_the_kernels_and_follow_its_events() {
    let Some(r) = start().await else { return };
    let ib0 = r.proxy("ib0").await;
    let text = |v: Vec<rdma_managerd::model::NetdevAddress>| {
        v.into_iter().map(|a| a.to_string()).collect::<Vec<_>>()
    };
    let kernel = text(r.sim.addresses("ib0"));
    assert_eq!(
        kernel,
        ["192.168.100.11/24", "fe80::f652:1403:3:9381/64"],
        "the demo's ib0: an address set by hand and the link-local one"
    );
    assert_eq!(ib0.addresses().await.expect("Addresses"), kernel);
    let new = vec![
        rdma_managerd::model::NetdevAddress {
            ip: "2001:db8::11".parse().expect("ip"),
            prefix: 64,
        },
        rdma_managerd::model::NetdevAddress {
            ip: "10.1.2.3".parse().expect("ip"),
            prefix: 16,
        },
    ];
    r.sim.set_addresses("ib0", new).expect("set");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let now = ib0.addresses().await.expect("Addresses");
        // IPv4 first, as the kernel lists them.
        if now == ["10.1.2.3/16", "2001:db8::11/64"] {
            break;
        }
        assert!(Instant::now() < deadline, "Addresses stayed {now:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A child made now has none until someone gives it one.
    let child = ib0
        .create_child(0x0002, "", settings(&[]))
        .await
        .expect("child");
    let child = r.proxy_at(child).await;
    assert_eq!(
        child.addresses().await.expect("Addresses"),
        Vec::<String>::new()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ipoib_methods_refuse_bad_input_and_change_nothing() -> anyhow::Result<()> {
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
