//! The direct socket (service/src/dbus/direct/): GetManagedObjects, the JSON document and
//! ibstat's text peer to peer, beside a real dbus-daemon, answering what a client makes of
//! the bus's answers and nothing that changes the host.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::time::{Duration, Instant};

use rdma_manager_dbus::{BUS_NAME, ROOT_PATH};
use rdma_manager_tests::bus::PrivateBus;
use rdma_manager_tests::gmo::connect_direct;
use rdma_manager_tests::service::{serve_sim, session_bus_or_skip, ServedSim};
use rdma_managerd::dbus::direct::{self, Bounds, DirectError, DirectSocket};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::{fixtures, SimHost};
use rdma_managerd::model::{PhysState, PortState};
use zbus::{Connection, Message};

const OBJECT_MANAGER: &str = "org.freedesktop.DBus.ObjectManager";

struct Running {
    _bus: PrivateBus,
    sim: SimHost,
    client: Connection,
    service: ServedSim,
    dir: tempfile::TempDir,
}

impl Running {
    fn socket_path(&self) -> String {
        self.dir.path().join("direct").display().to_string()
    }

    fn listen(&self, bounds: Bounds) -> Result<DirectSocket, DirectError> {
        direct::listen_with(
            self.socket_path().as_ref(),
            self.service.service.direct_sources(),
            bounds,
        )
    }
}

async fn start() -> Option<Running> {
    let bus = session_bus_or_skip()?;
    let sim = SimHost::new(fixtures::demo_host()).expect("demo");
    let config = EngineConfig {
        tick: Duration::from_millis(100),
        ..EngineConfig::default()
    };
    let service = serve_sim(&bus, &sim, config).await.expect("service starts");
    let client = bus.connect().await.expect("client connects");
    let dir = tempfile::tempdir().expect("tempdir");
    Some(Running {
        _bus: bus,
        sim,
        client,
        service,
        dir,
    })
}

async fn bus_gmo(r: &Running) -> Message {
    r.client
        .call_method(
            Some(BUS_NAME),
            ROOT_PATH,
            Some(OBJECT_MANAGER),
            "GetManagedObjects",
            &(),
        )
        .await
        .expect("GetManagedObjects on the bus")
}

async fn direct_gmo(conn: &Connection) -> Message {
    conn.call_method(
        None::<&str>,
        ROOT_PATH,
        Some(OBJECT_MANAGER),
        "GetManagedObjects",
        &(),
    )
    .await
    .expect("GetManagedObjects on the direct socket")
}

fn body(m: &Message) -> Vec<u8> {
    m.body().data().to_vec()
}

/// The error (name, text) that a call on the direct socket gets.
async fn refused<B>(
    conn: &Connection,
    path: &str,
    interface: &str,
    member: &str,
    args: &B,
) -> (String, String)
where
    B: serde::Serialize + zbus::zvariant::DynamicType,
{
    error_of(
        conn.call_method(None::<&str>, path, Some(interface), member, args)
            .await,
    )
}

fn error_of(r: zbus::Result<Message>) -> (String, String) {
    match r {
        Err(zbus::Error::MethodError(name, text, _)) => {
            (name.to_string(), text.unwrap_or_default())
        }
        other => panic!("expected a method error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_direct_socket_answers_what_the_bus_answers() {
    let Some(r) = start().await else { return };
    let _socket = r.listen(Bounds::default()).expect("listens");
    let conn = connect_direct(&r.socket_path()).await.expect("connects");
    assert_eq!(
        body(&direct_gmo(&conn).await),
        body(&bus_gmo(&r).await),
        "the same reply bytes"
    );

    // A change is in both: the port goes down, the bus says so, the direct answer too.
    r.sim
        .set_port_state("mlx5_0", 1, PortState::Down, PhysState::Polling)
        .expect("port down");
    let port = rdma_manager_dbus::PortProxy::builder(&r.client)
        .path("/org/rdmamanager/RdmaManager1/Device/1/Port/1")
        .expect("path")
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await
        .expect("proxy");
    let t = Instant::now();
    while port.state().await.expect("State") != "DOWN" {
        assert!(t.elapsed() < Duration::from_secs(10), "the bus shows DOWN");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The same bytes once the change is published in full: the port's other properties
    // (its state count, rate) may follow State by a tick, between the two calls.
    let t = Instant::now();
    loop {
        let now = body(&direct_gmo(&conn).await);
        if now == body(&bus_gmo(&r).await) {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the direct socket and the bus still differ 10 s after the change"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let objects: zbus::fdo::ManagedObjects = direct_gmo(&conn)
        .await
        .body()
        .deserialize()
        .expect("decodes");
    let state = objects
        .iter()
        .find(|(p, _)| p.as_str() == "/org/rdmamanager/RdmaManager1/Device/1/Port/1")
        .and_then(|(_, i)| i.get("org.rdmamanager.RdmaManager1.Port"))
        .and_then(|p| p.get("State"))
        .and_then(|v| String::try_from(v.clone()).ok());
    assert_eq!(state.as_deref(), Some("DOWN"));

    // Ping and Hello, which the usual tools send first.
    conn.call_method(
        None::<&str>,
        ROOT_PATH,
        Some("org.freedesktop.DBus.Peer"),
        "Ping",
        &(),
    )
    .await
    .expect("Ping");
    let hello: String = conn
        .call_method(
            Some("org.freedesktop.DBus"),
            "/org/freedesktop/DBus",
            Some("org.freedesktop.DBus"),
            "Hello",
            &(),
        )
        .await
        .expect("Hello")
        .body()
        .deserialize()
        .expect("a name");
    assert!(hello.starts_with(":1."), "{hello}");
}

/// The JSON document a client builds from the bus: GetManagedObjects and the root's GetAll,
/// as `rdma-tui --json` without the direct socket.
async fn document_through_the_bus(r: &Running) -> String {
    let objects: zbus::fdo::ManagedObjects =
        bus_gmo(r).await.body().deserialize().expect("objects");
    let root = zbus::fdo::PropertiesProxy::builder(&r.client)
        .destination(BUS_NAME)
        .and_then(|b| b.path(ROOT_PATH))
        .expect("proxy")
        .build()
        .await
        .expect("proxy");
    let iface = zbus::names::InterfaceName::try_from("org.rdmamanager.RdmaManager1").expect("name");
    let root = root.get_all(iface).await.expect("GetAll");
    rdma_manager_dbus::json::Document::of_published(&root, &objects).to_pretty_string()
}

async fn direct_document(conn: &Connection) -> String {
    conn.call_method(
        None::<&str>,
        ROOT_PATH,
        Some(direct::DIRECT),
        "GetDocument",
        &(),
    )
    .await
    .expect("GetDocument on the direct socket")
    .body()
    .deserialize::<String>()
    .expect("a string")
}

/// `Direct.GetDocument` is the document a client would build from what the bus answers, and
/// follows a change as the bus does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_direct_document_is_the_one_a_client_builds_from_the_bus() {
    let Some(r) = start().await else { return };
    let socket = r.listen(Bounds::default()).expect("listens");
    let conn = connect_direct(&r.socket_path()).await.expect("connects");
    let before = direct_document(&conn).await;
    assert_eq!(before, document_through_the_bus(&r).await);
    assert_eq!(socket.answered(), 1, "GetDocument is counted");
    let doc: serde_json::Value = serde_json::from_str(&before).expect("JSON");
    assert_eq!(doc["version"], 1);
    assert!(doc["objects"][ROOT_PATH]["org.rdmamanager.RdmaManager1"]["Startup"] == false);

    r.sim
        .set_port_state("mlx5_0", 1, PortState::Down, PhysState::Polling)
        .expect("port down");
    let deadline = Instant::now() + Duration::from_secs(10);
    let after = loop {
        let now = direct_document(&conn).await;
        if now != before || Instant::now() > deadline {
            break now;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        after.contains("\"State\": \"DOWN\""),
        "the port's change is in it"
    );
    // Other objects follow the port within a publish (the Host's SubnetManagers names its
    // state): the two agree once it is complete.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (direct, bus) = (
            direct_document(&conn).await,
            document_through_the_bus(&r).await,
        );
        if direct == bus {
            break;
        }
        assert!(Instant::now() < deadline, "the documents still differ");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let (name, text) = refused(&conn, ROOT_PATH, direct::DIRECT, "GetDocument", &("x",)).await;
    assert_eq!(name, "org.freedesktop.DBus.Error.InvalidArgs", "{text}");
    assert!(text.contains("GetDocument takes no arguments"), "{text}");
    // Each method on its own interface only.
    let (name, _) = refused(&conn, ROOT_PATH, OBJECT_MANAGER, "GetDocument", &()).await;
    assert_eq!(name, "org.freedesktop.DBus.Error.UnknownMethod");
    let (name, _) = refused(&conn, ROOT_PATH, direct::DIRECT, "GetManagedObjects", &()).await;
    assert_eq!(name, "org.freedesktop.DBus.Error.UnknownMethod");
    let (name, _) = refused(
        &conn,
        "/org/rdmamanager/RdmaManager1/Device/1",
        direct::DIRECT,
        "GetDocument",
        &(),
    )
    .await;
    assert_eq!(name, "org.freedesktop.DBus.Error.UnknownMethod");
}

/// `Direct.GetIbstat(argv)`: `(stdout, message, cause)`.
async fn direct_ibstat(conn: &Connection, argv: &[String]) -> (String, String, String) {
    conn.call_method(
        None::<&str>,
        ROOT_PATH,
        Some(direct::DIRECT),
        "GetIbstat",
        &(argv,),
    )
    .await
    .expect("GetIbstat on the direct socket")
    .body()
    .deserialize()
    .expect("(sss)")
}

/// `Direct.GetIbstat` prints what `rdma-tui --ibstat` renders from the bus's objects, for
/// every form of ibstat's arguments and its failures (an unknown device, a port the device
/// does not have, a device whose attribute cannot be read), and follows a change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_direct_ibstat_is_what_the_client_renders_from_the_bus() {
    use rdma_manager_dbus::ibstat::IbstatArgs;
    let Some(r) = start().await else { return };
    let socket = r.listen(Bounds::default()).expect("listens");
    let conn = connect_direct(&r.socket_path()).await.expect("connects");
    let args = |list_only, short, port_list, device: Option<&str>, port: Option<&str>| IbstatArgs {
        list_only,
        short,
        port_list,
        device: device.map(str::to_string),
        port: port.map(str::to_string),
    };
    let cases = [
        args(false, false, false, None, None),
        args(true, false, false, None, None),
        args(false, true, false, None, None),
        args(false, false, true, None, None),
        args(false, false, false, Some("mlx5_0"), None),
        args(false, false, false, Some("mlx4_1"), Some("2")),
        args(false, true, false, Some("mlx4_1"), Some("0x1")),
        args(false, false, false, Some("nosuch"), None),
        args(false, false, false, Some("mlx4_1"), Some("3")),
        args(false, false, false, Some("-l"), None),
    ];
    let through_the_bus = |objects: zbus::fdo::ManagedObjects, a: &IbstatArgs| {
        rdma_tui::ibstat::run(&rdma_tui::client::model_of(objects), a).into_reply()
    };
    let objects = || async { bus_gmo(&r).await.body().deserialize().expect("objects") };
    for a in &cases {
        let theirs = through_the_bus(objects().await, a);
        let ours = direct_ibstat(&conn, &a.to_argv()).await;
        assert_eq!(ours, theirs, "{a:?}");
    }
    assert_eq!(
        socket.answered(),
        cases.len() as u64,
        "GetIbstat is counted"
    );
    let all = direct_ibstat(&conn, &[]).await;
    assert!(all.0.starts_with("CA 'mlx4_1'\n"), "{}", all.0);
    assert_eq!((all.1.as_str(), all.2.as_str()), ("", ""));
    let missing = direct_ibstat(&conn, &cases[8].to_argv()).await;
    assert_eq!(
        (missing.0.as_str(), missing.1.as_str()),
        ("", "CA: 'mlx4_1' has no port number 3 - max (2)")
    );

    // A port set down, and an attribute that cannot be read: the same as the client's.
    r.sim
        .set_port_state("mlx5_0", 1, PortState::Down, PhysState::Polling)
        .expect("port down");
    let deadline = Instant::now() + Duration::from_secs(10);
    let after = loop {
        let now = direct_ibstat(&conn, &[]).await;
        if now.0.contains("State: Down") || Instant::now() > deadline {
            break now;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(after.0.contains("State: Down"), "{}", after.0);
    // The port's other properties follow its state within a publish: the two agree once it
    // is complete.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let direct = direct_ibstat(&conn, &[]).await;
        let bus = through_the_bus(objects().await, &IbstatArgs::default());
        if direct == bus {
            break;
        }
        assert!(Instant::now() < deadline, "{direct:?}\n{bus:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Bad arguments: refused with ibstat's reason, as InvalidArgs; the wrong signature too.
    for (argv, says) in [
        (vec!["-d".to_string()], "-d"),
        (vec!["--json".to_string()], "--json"),
        (
            vec!["--".into(), "a".into(), "1".into(), "x".into()],
            "\"x\"",
        ),
    ] {
        let (name, text) = refused(&conn, ROOT_PATH, direct::DIRECT, "GetIbstat", &(argv,)).await;
        assert_eq!(name, "org.freedesktop.DBus.Error.InvalidArgs", "{text}");
        assert!(text.contains(says), "{text}");
    }
    let (name, text) = refused(&conn, ROOT_PATH, direct::DIRECT, "GetIbstat", &()).await;
    assert_eq!(name, "org.freedesktop.DBus.Error.InvalidArgs", "{text}");
    assert!(text.contains("GetIbstat takes (as), not ()"), "{text}");
    let (name, _) = refused(
        &conn,
        ROOT_PATH,
        OBJECT_MANAGER,
        "GetIbstat",
        &(Vec::<String>::new(),),
    )
    .await;
    assert_eq!(name, "org.freedesktop.DBus.Error.UnknownMethod");
}

/// Only a call the socket served keeps a connection past the idle bound: GetDocument does,
/// the same method refused (an argument, the wrong interface) does not.
/// `GetAllCounters` on the direct socket is the bus's method: the same reading (the same
/// time and rows while it is shared), an argument refused, and a new reading after the max
/// age shared with the bus's callers in turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_direct_counters_are_the_bus_reading() {
    use rdma_manager_dbus::types::PortCounters;
    let Some(r) = start().await else { return };
    let socket = r.listen(Bounds::default()).expect("listens");
    let conn = connect_direct(&r.socket_path()).await.expect("connects");
    let manager = rdma_manager_dbus::records::Manager::INTERFACE;
    let call = |c: &Connection, dest: Option<&'static str>| {
        let c = c.clone();
        async move {
            c.call_method(dest, ROOT_PATH, Some(manager), "GetAllCounters", &())
                .await
                .expect("GetAllCounters")
                .body()
                .deserialize::<(u64, Vec<PortCounters>)>()
                .expect("(ta(osba{st}))")
        }
    };
    let answered = socket.answered();
    let (t_direct, direct) = call(&conn, None).await;
    assert_eq!(socket.answered(), answered + 1);
    let (t_bus, bus) = call(&r.client, Some(BUS_NAME)).await;
    // The daemon's default max age (10 s) is longer than this test: one reading.
    assert_eq!(t_direct, t_bus, "one reading shared by both");
    assert_eq!(direct, bus);
    assert_eq!(direct.len(), 5, "every port of the demo host: {direct:?}");
    assert!(
        direct.iter().all(|p| p.counters.contains_key("tx_bytes")),
        "{direct:?}"
    );

    let (name, text) = refused(&conn, ROOT_PATH, manager, "GetAllCounters", &("all",)).await;
    assert_eq!(name, "org.freedesktop.DBus.Error.InvalidArgs", "{text}");
    let (name, _) = refused(
        &conn,
        "/org/rdmamanager/RdmaManager1/Device/0",
        manager,
        "GetAllCounters",
        &(),
    )
    .await;
    assert_eq!(name, "org.freedesktop.DBus.Error.UnknownMethod");
    assert_eq!(socket.answered(), answered + 1, "refusals are not answers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_served_call_keeps_a_connection() {
    let Some(r) = start().await else { return };
    let _socket = r
        .listen(Bounds {
            idle: Duration::from_secs(2),
            ..Bounds::default()
        })
        .expect("listens");
    let served = connect_direct(&r.socket_path()).await.expect("connects");
    let refused = connect_direct(&r.socket_path()).await.expect("connects");
    let end = Instant::now() + Duration::from_secs(4);
    while Instant::now() < end {
        direct_document(&served).await;
        let _ = refused
            .call_method(
                None::<&str>,
                ROOT_PATH,
                Some(direct::DIRECT),
                "GetDocument",
                &("x",),
            )
            .await;
        let _ = refused
            .call_method(
                None::<&str>,
                ROOT_PATH,
                Some(OBJECT_MANAGER),
                "GetDocument",
                &(),
            )
            .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let ping = |c: &Connection| {
        let c = c.clone();
        async move {
            tokio::time::timeout(
                Duration::from_secs(1),
                c.call_method(
                    None::<&str>,
                    "/",
                    Some("org.freedesktop.DBus.Peer"),
                    "Ping",
                    &(),
                ),
            )
            .await
            .is_ok_and(|r| r.is_ok())
        }
    };
    assert!(ping(&served).await, "served calls keep their connection");
    assert!(!ping(&refused).await, "refused calls do not");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_direct_socket_changes_nothing_and_names_the_bus() {
    let Some(r) = start().await else { return };
    let _socket = r.listen(Bounds::default()).expect("listens");
    let conn = connect_direct(&r.socket_path()).await.expect("connects");
    let before = body(&bus_gmo(&r).await);

    let (name, text) = refused(
        &conn,
        ROOT_PATH,
        "org.rdmamanager.RdmaManager1",
        "RemoveSoftLink",
        &("rxe0",),
    )
    .await;
    assert_eq!(name, "org.freedesktop.DBus.Error.UnknownMethod");
    assert!(text.contains("on the system bus"), "{text}");
    let (name, _) = refused(
        &conn,
        ROOT_PATH,
        "org.freedesktop.DBus.Properties",
        "GetAll",
        &("org.rdmamanager.RdmaManager1",),
    )
    .await;
    assert_eq!(name, "org.freedesktop.DBus.Error.UnknownMethod");
    let (name, text) = refused(
        &conn,
        ROOT_PATH,
        OBJECT_MANAGER,
        "GetManagedObjects",
        &("extra",),
    )
    .await;
    assert_eq!(name, "org.freedesktop.DBus.Error.InvalidArgs", "{text}");
    let (name, _) = refused(
        &conn,
        "/org/rdmamanager/RdmaManager1/Device/1",
        OBJECT_MANAGER,
        "GetManagedObjects",
        &(),
    )
    .await;
    assert_eq!(name, "org.freedesktop.DBus.Error.UnknownMethod");

    // Refused calls change nothing, and the connection still answers.
    assert_eq!(body(&direct_gmo(&conn).await), before);
    assert_eq!(body(&bus_gmo(&r).await), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_speaks_does_not_keep_others_out() {
    let Some(r) = start().await else { return };
    let bounds = Bounds {
        connections: 2,
        handshake: Duration::from_millis(300),
        ..Bounds::default()
    };
    let _socket = r.listen(bounds).expect("listens");
    // Both slots taken by connections that never authenticate.
    let _silent: Vec<_> = (0..2)
        .map(|_| std::os::unix::net::UnixStream::connect(r.socket_path()).expect("connects"))
        .collect();
    let t = Instant::now();
    let conn = tokio::time::timeout(Duration::from_secs(10), connect_direct(&r.socket_path()))
        .await
        .expect("served once the silent ones time out")
        .expect("connects");
    assert!(
        t.elapsed() >= Duration::from_millis(250),
        "waited for a slot: {:?}",
        t.elapsed()
    );
    assert_eq!(body(&direct_gmo(&conn).await), body(&bus_gmo(&r).await));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_socket_file_is_everyones_and_nothing_else_is_replaced() {
    let Some(r) = start().await else { return };
    let path = r.dir.path().join("direct");

    // A file that is not a socket stays as it is.
    std::fs::write(&path, "not a socket\n").expect("write");
    match r.listen(Bounds::default()) {
        Err(DirectError::NotASocket(p)) => assert_eq!(p, path),
        other => panic!(
            "expected NotASocket, got {:?}",
            other.map(|s| s.path().to_owned())
        ),
    }
    assert_eq!(
        std::fs::read_to_string(&path).expect("kept"),
        "not a socket\n"
    );
    std::fs::remove_file(&path).expect("remove");

    // A socket left by an earlier run is replaced; the new one is open to every user; it
    // is removed when the daemon stops serving it.
    let stale = std::os::unix::net::UnixListener::bind(&path).expect("stale socket");
    drop(stale);
    let socket = r
        .listen(Bounds::default())
        .expect("replaces the stale socket");
    let meta = std::fs::metadata(&path).expect("socket");
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o666);
    let conn = connect_direct(&r.socket_path()).await.expect("connects");
    direct_gmo(&conn).await;
    drop(socket);
    assert!(!path.exists(), "removed when dropped");
    // The connections it served end with it (the tasks are aborted, which takes effect when
    // the runtime next polls them: a call sent at once may still be answered).
    let t = Instant::now();
    loop {
        let answer = tokio::time::timeout(
            Duration::from_secs(5),
            conn.call_method(
                None::<&str>,
                ROOT_PATH,
                Some(OBJECT_MANAGER),
                "GetManagedObjects",
                &(),
            ),
        )
        .await
        .expect("an answer or an error in time");
        if answer.is_err() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the connection still answers"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A client announcing a message far longer than any call to the direct socket is cut off
/// before the daemon allocates it, and the others are still served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_announced_too_long_ends_its_connection_only() {
    use std::io::{Read, Write};
    let Some(r) = start().await else { return };
    let _socket = r.listen(Bounds::default()).expect("listens");
    let path = r.socket_path();
    let cut_off = tokio::task::spawn_blocking(move || {
        let mut s = authenticated(&path);
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        // BEGIN, then a method call's primary header announcing a 100 MB body (under zbus's own bound of 128 MiB).
        let mut h = vec![b'l', 1, 0, 1];
        h.extend_from_slice(&100_000_000u32.to_le_bytes());
        h.extend_from_slice(&1u32.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        s.write_all(b"BEGIN\r\n").expect("begin");
        s.write_all(&h).expect("header");
        // The daemon closes the connection: the end of the stream, not a timeout.
        let mut rest = Vec::new();
        s.read_to_end(&mut rest)
    })
    .await
    .expect("joins");
    assert!(cut_off.is_ok(), "closed, not timed out: {cut_off:?}");
    let conn = connect_direct(&r.socket_path()).await.expect("connects");
    assert_eq!(body(&direct_gmo(&conn).await), body(&bus_gmo(&r).await));
}

/// A raw connection to the socket at `path` that has done the EXTERNAL handshake up to the
/// server's OK, before BEGIN: what a client that misbehaves after it starts from.
fn authenticated(path: impl AsRef<std::path::Path>) -> std::os::unix::net::UnixStream {
    use std::io::{Read, Write};
    use std::os::unix::fs::MetadataExt;
    let mut s = std::os::unix::net::UnixStream::connect(path).expect("connects");
    // This process's uid, hex-encoded as EXTERNAL sends it.
    let uid: String = std::fs::metadata("/proc/self")
        .expect("/proc/self")
        .uid()
        .to_string()
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    s.write_all(format!("\0AUTH EXTERNAL {uid}\r\n").as_bytes())
        .expect("auth");
    let mut ok = [0u8; 256];
    let n = s.read(&mut ok).expect("OK line");
    assert!(
        ok[..n].starts_with(b"OK "),
        "{:?}",
        String::from_utf8_lossy(&ok[..n])
    );
    s
}

/// A client that asks and never reads holds its slot only until the reply's write times
/// out: with one slot, the next client is served after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_holds_its_slot_only_until_the_write_times_out() {
    use std::io::Write;
    let Some(bus) = session_bus_or_skip() else {
        return;
    };
    // A reply larger than a Unix socket's buffers (256 devices: 430 KB), so that writing it
    // waits for the client.
    let sim = SimHost::new(fixtures::rxe_host(256)).expect("rxe host");
    let service = serve_sim(&bus, &sim, EngineConfig::default())
        .await
        .expect("service starts");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("direct");
    let bounds = Bounds {
        connections: 1,
        send: Duration::from_millis(500),
        ..Bounds::default()
    };
    let _socket =
        direct::listen_with(&path, service.service.direct_sources(), bounds).expect("listens");

    // The silent client: authenticates, calls GetManagedObjects, reads nothing more.
    let silent_path = path.clone();
    let silent = tokio::task::spawn_blocking(move || {
        let mut s = authenticated(&silent_path);
        s.write_all(b"BEGIN\r\n").expect("begin");
        s.write_all(&method_call(ROOT_PATH, OBJECT_MANAGER, "GetManagedObjects"))
            .expect("call");
        s
    })
    .await
    .expect("joins");
    let t = Instant::now();
    let conn = tokio::time::timeout(
        Duration::from_secs(10),
        connect_direct(&path.display().to_string()),
    )
    .await
    .expect("served once the silent client's write timed out")
    .expect("connects");
    assert!(
        t.elapsed() >= Duration::from_millis(400),
        "the one slot was free at once: {:?}",
        t.elapsed()
    );
    let objects: zbus::fdo::ManagedObjects = direct_gmo(&conn)
        .await
        .body()
        .deserialize()
        .expect("decodes");
    assert_eq!(
        objects.len(),
        513,
        "256 devices, their ports and the Host object"
    );
    drop(silent);
}

/// A little-endian method call without arguments, as a D-Bus client writes it.
fn method_call(path: &str, interface: &str, member: &str) -> Vec<u8> {
    let msg = zbus::Message::method_call(path, member)
        .and_then(|b| b.interface(interface))
        .and_then(|b| b.build(&()))
        .expect("a method call");
    msg.data().to_vec()
}

/// 16 connections of one unprivileged uid that handshake and then only Ping (or nothing):
/// only 4 of them are served, the others closed at once, so another user's client is served
/// without waiting; the ones served that only Ping are closed after the idle bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_of_one_uid_cannot_keep_another_user_out() {
    use rdma_manager_tests::bus::{skip_reason, TEST_UID};
    if let Some(reason) = skip_reason() {
        eprintln!("skipping: {reason}");
        return;
    }
    let Some(r) = start().await else { return };
    let bounds = Bounds {
        idle: Duration::from_secs(3),
        ..Bounds::default()
    };
    let _socket = r.listen(bounds).expect("listens");
    std::fs::set_permissions(r.dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = r.socket_path();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let holder = std::thread::spawn(move || {
        // SAFETY: plain system calls on this thread's own credentials.
        let changed = unsafe {
            libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<libc::gid_t>()) == 0
                && libc::syscall(libc::SYS_setresgid, TEST_UID, TEST_UID, TEST_UID) == 0
                && libc::syscall(libc::SYS_setresuid, TEST_UID, TEST_UID, TEST_UID) == 0
        };
        assert!(changed, "cannot take uid {TEST_UID}");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let mut conns = Vec::new();
            for _ in 0..16 {
                if let Ok(Ok(c)) =
                    tokio::time::timeout(Duration::from_secs(2), connect_direct(&path)).await
                {
                    conns.push(c);
                }
            }
            // Which of them the daemon still serves: a Ping is answered.
            let mut served = 0;
            for c in &conns {
                let ping = c.call_method(
                    None::<&str>,
                    "/",
                    Some("org.freedesktop.DBus.Peer"),
                    "Ping",
                    &(),
                );
                if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(2), ping).await {
                    served += 1;
                }
            }
            held_tx.send(served).expect("sent");
            // Held (and Pinging) until the other client has been served.
            while done_rx.try_recv().is_err() {
                for c in &conns {
                    let _ = tokio::time::timeout(
                        Duration::from_millis(200),
                        c.call_method(
                            None::<&str>,
                            "/",
                            Some("org.freedesktop.DBus.Peer"),
                            "Ping",
                            &(),
                        ),
                    )
                    .await;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            // The idle bound closed the ones that only Pinged.
            let mut still = 0;
            for c in &conns {
                let ping = c.call_method(
                    None::<&str>,
                    "/",
                    Some("org.freedesktop.DBus.Peer"),
                    "Ping",
                    &(),
                );
                if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(1), ping).await {
                    still += 1;
                }
            }
            still
        })
    });
    let served = tokio::task::spawn_blocking(move || held_rx.recv())
        .await
        .expect("joined")
        .expect("the holder reports");
    assert_eq!(served, 4, "connections of one uid served at once");
    let t = Instant::now();
    let conn = tokio::time::timeout(Duration::from_secs(2), connect_direct(&r.socket_path()))
        .await
        .expect("another user's client is served at once")
        .expect("connects");
    assert_eq!(body(&direct_gmo(&conn).await), body(&bus_gmo(&r).await));
    println!("served after {:?}", t.elapsed());
    tokio::time::sleep(Duration::from_secs(4)).await;
    done_tx.send(()).expect("sent");
    let still = tokio::task::spawn_blocking(move || holder.join())
        .await
        .expect("joined")
        .expect("holder");
    assert_eq!(
        still, 0,
        "connections that only Ping are closed after the idle bound"
    );
}

/// A thread of another uid holding connections to the direct socket, Pinging each until told
/// to stop.
struct Holder {
    /// How many of its connections the daemon answered a Ping on, once all were made.
    served: usize,
    stop: std::sync::mpsc::Sender<()>,
    /// How many still answer a Ping when told to stop.
    thread: std::thread::JoinHandle<usize>,
}

/// Takes `uid` on the thread only (raw system calls: libc's setresuid would change every
/// thread of the process).
fn become_uid(uid: u32) {
    // SAFETY: plain system calls on this thread's own credentials.
    let changed = unsafe {
        libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<libc::gid_t>()) == 0
            && libc::syscall(libc::SYS_setresgid, uid, uid, uid) == 0
            && libc::syscall(libc::SYS_setresuid, uid, uid, uid) == 0
    };
    assert!(changed, "cannot take uid {uid}");
}

async fn pings(conns: &[Connection], wait: Duration) -> usize {
    let mut answered = 0;
    for c in conns {
        let ping = c.call_method(
            None::<&str>,
            "/",
            Some("org.freedesktop.DBus.Peer"),
            "Ping",
            &(),
        );
        if let Ok(Ok(_)) = tokio::time::timeout(wait, ping).await {
            answered += 1;
        }
    }
    answered
}

/// The socket opened to every uid, then `n` connections each of the test uids 1 to 4 held
/// ([`hold_as`]), every one of them served.
async fn four_uids_hold(r: &Running, n: usize) -> Vec<Holder> {
    use rdma_manager_tests::bus::TEST_UID;
    std::fs::set_permissions(r.dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut holders = Vec::new();
    for k in 1..=4 {
        let path = r.socket_path();
        let h = tokio::task::spawn_blocking(move || hold_as(TEST_UID + k, n, path))
            .await
            .expect("joined");
        assert_eq!(h.served, n, "uid {}: connections served", TEST_UID + k);
        holders.push(h);
    }
    holders
}

/// `n` connections of `uid` to the socket at `path`, held and Pinging every 0.5 s.
fn hold_as(uid: u32, n: usize, path: String) -> Holder {
    let (stop, stop_rx) = std::sync::mpsc::channel::<()>();
    let (served_tx, served_rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        become_uid(uid);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let mut conns = Vec::new();
            for _ in 0..n {
                if let Ok(Ok(c)) =
                    tokio::time::timeout(Duration::from_secs(2), connect_direct(&path)).await
                {
                    conns.push(c);
                }
            }
            served_tx
                .send(pings(&conns, Duration::from_secs(2)).await)
                .expect("sent");
            while stop_rx.try_recv().is_err() {
                pings(&conns, Duration::from_millis(200)).await;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            pings(&conns, Duration::from_secs(1)).await
        })
    });
    let served = served_rx.recv().expect("the holder reports");
    Holder {
        served,
        stop,
        thread,
    }
}

impl Holder {
    async fn stop(self) -> usize {
        self.stop.send(()).expect("sent");
        tokio::task::spawn_blocking(move || self.thread.join())
            .await
            .expect("joined")
            .expect("holder")
    }
}

/// A GetManagedObjects on the direct socket by a client of `uid` on its own thread: the time
/// from its connect to the answer, or why not within `wait`.
fn gmo_as(
    uid: u32,
    path: String,
    wait: Duration,
) -> std::thread::JoinHandle<Result<Duration, String>> {
    std::thread::spawn(move || {
        become_uid(uid);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let t = Instant::now();
            let call = async {
                let conn = connect_direct(&path).await.map_err(|e| format!("{e:#}"))?;
                Ok::<_, String>(direct_gmo(&conn).await)
            };
            match tokio::time::timeout(wait, call).await {
                Ok(Ok(_)) => Ok(t.elapsed()),
                Ok(Err(e)) => Err(e),
                Err(_) => Err(format!("no answer within {wait:?}")),
            }
        })
    })
}

/// Four uids holding four connections each fill the 16 slots: a fifth uid's client is served
/// at once all the same, in the slot of the longest idle connection of a uid holding the
/// most, and root's after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_uids_cannot_take_every_slot() {
    use rdma_manager_tests::bus::{skip_reason, TEST_UID};
    if let Some(reason) = skip_reason() {
        eprintln!("skipping: {reason}");
        return;
    }
    let Some(r) = start().await else { return };
    let _socket = r.listen(Bounds::default()).expect("listens");
    let holders = four_uids_hold(&r, 4).await;
    let path = r.socket_path();
    let t = Instant::now();
    let fifth = tokio::task::spawn_blocking(move || hold_as(TEST_UID + 5, 1, path))
        .await
        .expect("joined");
    assert_eq!(fifth.served, 1, "a fifth uid's client is served at once");
    println!("a fifth uid served after {:?}", t.elapsed());
    let t = Instant::now();
    let conn = tokio::time::timeout(Duration::from_secs(2), connect_direct(&r.socket_path()))
        .await
        .expect("root's client is served at once")
        .expect("connects");
    assert_eq!(body(&direct_gmo(&conn).await), body(&bus_gmo(&r).await));
    println!("root served after {:?}", t.elapsed());
    let mut still = 0;
    for h in holders {
        still += h.stop().await;
    }
    // One slot went to the fifth uid's client, one to root's.
    assert_eq!(still, 14, "the four uids' connections still served");
    assert_eq!(
        fifth.stop().await,
        1,
        "the fifth uid's connection still served"
    );
}

/// Four uids holding one connection each fill 4 slots: a fifth uid's client waits (no uid
/// holds more than it would), root's is served at once, and the waiting one is served when
/// root's leaves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn root_always_gets_a_slot_and_others_wait_their_turn() {
    use rdma_manager_tests::bus::{skip_reason, TEST_UID};
    if let Some(reason) = skip_reason() {
        eprintln!("skipping: {reason}");
        return;
    }
    let Some(r) = start().await else { return };
    let bounds = Bounds {
        connections: 4,
        ..Bounds::default()
    };
    let _socket = r.listen(bounds).expect("listens");
    let holders = four_uids_hold(&r, 1).await;
    let fifth = gmo_as(TEST_UID + 5, r.socket_path(), Duration::from_secs(20));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!fifth.is_finished(), "the fifth uid's client waits");
    let t = Instant::now();
    let conn = tokio::time::timeout(Duration::from_secs(2), connect_direct(&r.socket_path()))
        .await
        .expect("root's client is served at once")
        .expect("connects");
    assert_eq!(body(&direct_gmo(&conn).await), body(&bus_gmo(&r).await));
    println!("root served after {:?}", t.elapsed());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!fifth.is_finished(), "the fifth uid's client still waits");
    drop(conn);
    let fifth = tokio::task::spawn_blocking(move || fifth.join())
        .await
        .expect("joined")
        .expect("the fifth uid's client");
    let waited = fifth.expect("the fifth uid's client is served once root's leaves");
    println!("the fifth uid served after {waited:?}");
    let mut still = 0;
    for h in holders {
        still += h.stop().await;
    }
    assert_eq!(still, 3, "root's client took one holder's slot");
}
