//! The service under clients that misbehave, and when its bus goes away, on a real
//! dbus-daemon: a client that never reads its replies cannot freeze the service for everyone
//! else; every method answers a call of the wrong signature with InvalidArgs; a call that asked
//! for no reply gets none, not even an error. (That the daemon exits with a failure status
//! when its bus goes away is service/tests/daemon_bus_lost.rs.)

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use futures::StreamExt;
use rdma_manager_dbus::{BUS_NAME, ROOT_PATH};
use rdma_manager_tests::bus::{
    skip_reason, stock, tools_required, BusConfig, PrivateBus, UserDb, TEST_UID,
};
use rdma_manager_tests::service::{serve_sim, session_bus_or_skip};
use rdma_managerd::dbus::guard::method_signatures;
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::{fixtures, SimHost};
use zbus::message::{Flags, Message, Type};

const OBJECT_MANAGER: &str = "org.freedesktop.DBus.ObjectManager";

/// The error name of a failed call, or None when it succeeded.
async fn error_name<B>(
    conn: &zbus::Connection,
    path: &str,
    iface: &str,
    method: &str,
    body: &B,
) -> Option<String>
where
    B: serde::Serialize + zbus::zvariant::DynamicType,
{
    match conn
        .call_method(Some(BUS_NAME), path, Some(iface), method, body)
        .await
    {
        Ok(_) => None,
        Err(zbus::Error::MethodError(name, _, _)) => Some(name.to_string()),
        Err(e) => Some(format!("transport: {e}")),
    }
}

/// The daemon's own interfaces at `path`, with each method's input signature.
async fn methods_at(conn: &zbus::Connection, path: &str) -> Vec<(String, String, String)> {
    let reply = conn
        .call_method(
            Some(BUS_NAME),
            path,
            Some("org.freedesktop.DBus.Introspectable"),
            "Introspect",
            &(),
        )
        .await
        .expect("introspection");
    let xml: String = reply.body().deserialize().expect("a string");
    let mut out = Vec::new();
    for (iface, text) in rdma_manager_tests::service::own_interfaces(&xml) {
        if !iface.starts_with("org.rdmamanager.") && iface != OBJECT_MANAGER {
            continue;
        }
        for (method, sig) in method_signatures(&text) {
            out.push((iface.clone(), method, sig));
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_method_refuses_a_wrong_signature_with_invalid_args() -> Result<()> {
    let Some(bus) = session_bus_or_skip() else {
        return Ok(());
    };
    let sim = SimHost::new(fixtures::demo_host())?;
    let _served = serve_sim(&bus, &sim, EngineConfig::default()).await?;
    let conn = bus.connect().await?;
    let paths = [
        ROOT_PATH.to_string(),
        rdma_manager_dbus::device_path(0),
        rdma_manager_dbus::port_path(0, 1),
        rdma_manager_dbus::HOST_PATH.to_string(),
    ];
    let mut ipoib_path = None;
    let managed = conn
        .call_method(
            Some(BUS_NAME),
            ROOT_PATH,
            Some(OBJECT_MANAGER),
            "GetManagedObjects",
            &(),
        )
        .await?;
    let objects: HashMap<
        zbus::zvariant::OwnedObjectPath,
        HashMap<String, HashMap<String, zbus::zvariant::OwnedValue>>,
    > = managed.body().deserialize()?;
    for (path, ifaces) in &objects {
        if ifaces.contains_key("org.rdmamanager.RdmaManager1.Ipoib") {
            ipoib_path = Some(path.to_string());
        }
    }
    let mut checked = 0;
    let mut wrong = Vec::new();
    for path in paths.iter().cloned().chain(ipoib_path) {
        for (iface, method, sig) in methods_at(&conn, &path).await {
            // A method without arguments is called with one; a method with arguments with a
            // single argument of another type than its first (an int64, or a string where
            // it takes an int64).
            let (kind, got) = if sig.is_empty() {
                (
                    "an extra argument",
                    error_name(&conn, &path, &iface, &method, &(7i64, "x")).await,
                )
            } else if sig.starts_with('x') {
                (
                    "a wrong type",
                    error_name(&conn, &path, &iface, &method, &("x",)).await,
                )
            } else {
                (
                    "a wrong type",
                    error_name(&conn, &path, &iface, &method, &(7i64,)).await,
                )
            };
            checked += 1;
            if got.as_deref() != Some("org.freedesktop.DBus.Error.InvalidArgs") {
                wrong.push(format!(
                    "{path} {iface}.{method}({sig}) with {kind}: {got:?}"
                ));
            }
        }
    }
    // Every method of every committed interface, and GetManagedObjects.
    let xml_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../dbus-interfaces/xml");
    let mut committed = 1;
    for entry in std::fs::read_dir(&xml_dir)? {
        let path = entry?.path();
        // A PendingChange object exists only while NetworkManager holds a checkpoint, which
        // this bus has not: its methods are checked where NetworkManager runs
        // (tests/tests/system/nm_changes.rs).
        if path.to_string_lossy().contains("PendingChange") {
            continue;
        }
        committed += method_signatures(&std::fs::read_to_string(&path)?).len();
    }
    assert_eq!(checked, committed, "every method is checked once");
    assert!(
        wrong.is_empty(),
        "not refused with InvalidArgs:\n{}",
        wrong.join("\n")
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_asked_for_no_reply_gets_no_error_either() -> Result<()> {
    let Some(bus) = session_bus_or_skip() else {
        return Ok(());
    };
    let sim = SimHost::new(fixtures::demo_host())?;
    let _served = serve_sim(&bus, &sim, EngineConfig::default()).await?;
    let conn = bus.connect().await?;
    let mut replies = zbus::MessageStream::from(&conn);
    let root_iface = "org.rdmamanager.RdmaManager1";
    // Each of these fails: a wrong signature, an unknown method of a served interface, and a
    // refusal of the handler itself (there is no polkit on this bus, so AddSoftLink is refused).
    let calls: Vec<(&str, &str, &str, Message)> = vec![
        ("wrong signature", root_iface, "AddSoftLink", {
            Message::method_call(ROOT_PATH, "AddSoftLink")?
                .destination(BUS_NAME)?
                .interface(root_iface)?
                .with_flags(Flags::NoReplyExpected)?
                .build(&(1u32,))?
        }),
        ("unknown method", root_iface, "NoSuchMethod", {
            Message::method_call(ROOT_PATH, "NoSuchMethod")?
                .destination(BUS_NAME)?
                .interface(root_iface)?
                .with_flags(Flags::NoReplyExpected)?
                .build(&())?
        }),
        ("refused by the handler", root_iface, "AddSoftLink", {
            Message::method_call(ROOT_PATH, "AddSoftLink")?
                .destination(BUS_NAME)?
                .interface(root_iface)?
                .with_flags(Flags::NoReplyExpected)?
                .build(&("rxe9", "rxe", "eth0"))?
        }),
    ];
    let mut silent = HashMap::new();
    for (what, _, _, msg) in &calls {
        silent.insert(msg.primary_header().serial_num(), *what);
        conn.send(msg).await?;
    }
    // The same calls expecting a reply: each must get its error, which also shows that the
    // flagged ones, sent before, have been handled.
    for (what, iface, method, msg) in &calls {
        let body = msg.body();
        let r = match body.signature().to_string_no_parens().as_str() {
            "u" => error_name(&conn, ROOT_PATH, iface, method, &(1u32,)).await,
            "" => error_name(&conn, ROOT_PATH, iface, method, &()).await,
            _ => error_name(&conn, ROOT_PATH, iface, method, &("rxe9", "rxe", "eth0")).await,
        };
        assert!(
            r.is_some(),
            "{what}: the same call with a reply expected must fail"
        );
    }
    // One more round trip through the daemon, then nothing queued may answer a silent call.
    error_name(&conn, ROOT_PATH, "org.freedesktop.DBus.Peer", "Ping", &()).await;
    let deadline = Instant::now() + Duration::from_millis(500);
    while let Ok(Some(Ok(m))) = tokio::time::timeout_at(deadline.into(), replies.next()).await {
        if m.message_type() != Type::Error {
            continue;
        }
        if let Some(serial) = m.header().reply_serial() {
            if let Some(what) = silent.get(&serial) {
                panic!(
                    "{what}: an error reply was sent to a call flagged NO_REPLY_EXPECTED: {m:?}"
                );
            }
        }
    }
    Ok(())
}

/// Sends `calls` GetManagedObjects from a connection whose replies nobody reads until
/// `release` is told; then reads them all and returns (answers, LimitsExceeded refusals).
fn unread_client(
    address: String,
    calls: usize,
    sent: std::sync::mpsc::Sender<()>,
    release: std::sync::mpsc::Receiver<()>,
) -> std::thread::JoinHandle<Result<(usize, usize)>> {
    std::thread::spawn(move || {
        // An unprivileged user: this thread alone takes the test user's uid and gid (the raw
        // system calls change only the calling thread, unlike glibc's setresuid), and the bus
        // reads the credentials of the thread that connects.
        // SAFETY: plain system calls on this thread's own credentials.
        let changed = unsafe {
            libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<libc::gid_t>()) == 0
                && libc::syscall(libc::SYS_setresgid, TEST_UID, TEST_UID, TEST_UID) == 0
                && libc::syscall(libc::SYS_setresuid, TEST_UID, TEST_UID, TEST_UID) == 0
        };
        anyhow::ensure!(
            changed,
            "cannot take uid {TEST_UID}: {}",
            std::io::Error::last_os_error()
        );
        // The connection's reader runs on this thread's runtime only: while the thread waits
        // for `release`, nothing reads the socket, as in a client that is stuck or malicious.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let conn = rt.block_on(zbus::connection::Builder::address(address.as_str())?.build())?;
        let mut stream = zbus::MessageStream::from(&conn);
        let mut serials = std::collections::HashSet::new();
        rt.block_on(async {
            for _ in 0..calls {
                let m = Message::method_call(ROOT_PATH, "GetManagedObjects")?
                    .destination(BUS_NAME)?
                    .interface(OBJECT_MANAGER)?
                    .build(&())?;
                serials.insert(m.primary_header().serial_num());
                conn.send(&m).await?;
            }
            anyhow::Ok(())
        })?;
        let _ = sent.send(());
        let _ = release.recv();
        let (mut answers, mut refusals, mut bus_refusals) = (0, 0, 0);
        rt.block_on(async {
            while answers + refusals + bus_refusals < calls {
                let m = tokio::time::timeout(Duration::from_secs(60), stream.next())
                    .await
                    .context("the replies stopped coming")?
                    .context("stream ended")??;
                let Some(serial) = m.header().reply_serial() else {
                    continue;
                };
                if !serials.contains(&serial) {
                    continue;
                }
                match m.message_type() {
                    Type::MethodReturn => answers += 1,
                    // Refused by the service itself: the bus refuses calls past its own
                    // bound of 128 pending replies with the same name, from its own name.
                    Type::Error
                        if m.header().error_name().map(|n| n.as_str())
                            == Some("org.freedesktop.DBus.Error.LimitsExceeded")
                            && m.header().sender().map(|s| s.as_str())
                                != Some("org.freedesktop.DBus") =>
                    {
                        refusals += 1
                    }
                    _ => bus_refusals += 1,
                }
            }
            anyhow::Ok(())
        })?;
        Ok((answers, refusals))
    })
}

/// What another client sees: latencies of GetManagedObjects and root GetAll calls, and the
/// ThroughputSampled signals it receives, over `span`.
/// What [`well_behaved_client`] saw: its GetManagedObjects' and Properties.Get's latencies
/// (ms) and how many ThroughputSampled it received.
struct WellBehaved {
    gmo: Vec<f64>,
    get: Vec<f64>,
    signals: usize,
}

/// A client that reads everything: for `span`, a GetManagedObjects then a Properties.Get of
/// the root's `Devices` every 100 ms, timing each, while it counts ThroughputSampled.
async fn well_behaved_client(conn: &zbus::Connection, span: Duration) -> Result<WellBehaved> {
    let rule = zbus::MatchRule::builder()
        .msg_type(Type::Signal)
        .interface("org.rdmamanager.RdmaManager1")?
        .member("ThroughputSampled")?
        .build();
    let mut signals = zbus::MessageStream::for_match_rule(rule, conn, Some(64)).await?;
    let counted = tokio::spawn(async move {
        let mut n = 0;
        let end = Instant::now() + span;
        while let Ok(Some(_)) = tokio::time::timeout_at(end.into(), signals.next()).await {
            n += 1;
        }
        n
    });
    let (mut latencies, mut gets) = (Vec::new(), Vec::new());
    let end = Instant::now() + span;
    while Instant::now() < end {
        let t = Instant::now();
        tokio::time::timeout(
            Duration::from_secs(5),
            conn.call_method(
                Some(BUS_NAME),
                ROOT_PATH,
                Some(OBJECT_MANAGER),
                "GetManagedObjects",
                &(),
            ),
        )
        .await
        .context("GetManagedObjects not answered within 5 s: the service is frozen")??;
        latencies.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        tokio::time::timeout(
            Duration::from_secs(5),
            conn.call_method(
                Some(BUS_NAME),
                ROOT_PATH,
                Some("org.freedesktop.DBus.Properties"),
                "Get",
                &(BUS_NAME, "Devices"),
            ),
        )
        .await
        .context("Properties.Get not answered within 5 s: the service is frozen")??;
        gets.push(t.elapsed().as_secs_f64() * 1e3);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(WellBehaved {
        gmo: latencies,
        get: gets,
        signals: counted.await?,
    })
}

fn p99(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 * 0.99).ceil() as usize)
        .saturating_sub(1)
        .min(v.len() - 1)]
}

/// A bus of `kind`, seeing the unprivileged test user, or None (with the reason printed) when
/// this machine cannot run it.
fn bus_of(kind: Kind, users: &UserDb) -> Result<Option<PrivateBus>> {
    if let Some(reason) = skip_reason() {
        eprintln!("skipping: {reason}");
        return Ok(None);
    }
    Ok(Some(match kind {
        // dbus-daemon's default quotas (those of Debian's system bus), anything allowed.
        Kind::Permissive => BusConfig::session().users(users).start()?,
        Kind::Debian => PrivateBus::stock_system(users)?,
        Kind::Broker => {
            if !stock::broker_installed() {
                assert!(!tools_required(), "dbus-broker is not installed");
                eprintln!("skipping: dbus-broker is not installed");
                return Ok(None);
            }
            BusConfig::stock_system()
                .with_rdma_manager_policy()
                .users(users)
                .start_broker()?
        }
    }))
}

/// The buses the reliability tests run on.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// dbus-daemon allowing everything (a session bus).
    Permissive,
    /// dbus-daemon with Debian 12's system.conf and the shipped policy.
    Debian,
    /// dbus-broker with the same configuration (RHEL 9's and Fedora's system bus).
    Broker,
}

/// The large host: 256 devices x 2 ports and 1024 IPoIB interfaces, 1.5 MB a
/// GetManagedObjects (RDMA_MANAGER_RELIABILITY_HOST=DEVICES:PORTS:IPOIB for another).
fn large_host() -> Result<SimHost> {
    let spec = std::env::var("RDMA_MANAGER_RELIABILITY_HOST").unwrap_or("256:2:1024".into());
    let n: Vec<u32> = spec.split(':').filter_map(|n| n.parse().ok()).collect();
    let [devices, ports, ipoib] = n[..] else {
        anyhow::bail!("RDMA_MANAGER_RELIABILITY_HOST={spec}: expected DEVICES:PORTS:IPOIB");
    };
    Ok(SimHost::new(fixtures::large_host(devices, ports, ipoib))?)
}

/// One client (an unprivileged uid) sends far more GetManagedObjects than the bus would queue
/// for it (dbus-daemon's default incoming quota of 127 MiB, charged to rdma-managerd until
/// the replies are read) and reads nothing. Without bounds the bus stops reading from the
/// service, which then answers nobody; with them the excess is refused with LimitsExceeded
/// and another client's calls and signals go on. The other client answers no method call
/// (on a system bus none could reach it). Prints the other client's p99 latency and signal
/// count before and during.
async fn a_client_that_never_reads_on(kind: Kind) -> Result<()> {
    let users = UserDb::new(false)?;
    let Some(bus) = bus_of(kind, &users)? else {
        return Ok(());
    };
    // The bus lets a connection have 128 calls waiting for replies, so the replies must be
    // over 1 MB for the unread ones to pass the bus's 127 MiB quota.
    let sim = large_host()?;
    let _served = serve_sim(&bus, &sim, EngineConfig::default()).await?;
    let other = bus.connect().await?;
    let size = gmo_reply_size(&other).await?;
    let calls = (160usize << 20) / size + 1;
    let span = Duration::from_secs(6);
    let WellBehaved {
        gmo: mut before,
        signals: signals_before,
        ..
    } = well_behaved_client(&other, span).await?;

    let (sent_tx, sent_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel();
    let stuck = unread_client(bus.address().to_string(), calls, sent_tx, release_rx);
    tokio::task::spawn_blocking(move || sent_rx.recv()).await??;
    let during = well_behaved_client(&other, span).await;
    let _ = release_tx.send(());
    let (answers, refusals) = tokio::task::spawn_blocking(move || stuck.join())
        .await?
        .map_err(|_| anyhow::anyhow!("the unread client panicked"))??;
    let WellBehaved {
        gmo: mut during,
        signals: signals_during,
        ..
    } = during.with_context(|| format!("bus log:\n{}", tail(&bus.log())))?;
    let (p_before, p_during) = (p99(&mut before), p99(&mut during));
    println!(
        "{kind:?}: reply {size} B x {calls} unread calls: {answers} answered, {refusals} \
         refused; other client: p99 {p_before:.1} ms before, {p_during:.1} ms during ({} and \
         {} calls), ThroughputSampled {signals_before} before, {signals_during} during ({} s \
         each)",
        before.len(),
        during.len(),
        span.as_secs()
    );
    assert!(refusals > 0, "the excess was refused");
    assert!(
        answers as u64 * size as u64 <= 24 << 20,
        "what one connection may leave unread stays bounded"
    );
    assert!(
        signals_during + 1 >= signals_before,
        "signals go on: {signals_during} during, {signals_before} before"
    );
    // No line of the bus's log per message: the service sends nothing that the bus rejects.
    let rejected = bus.log().matches("Rejected").count();
    assert!(
        rejected <= 2,
        "{rejected} rejections in the bus log:\n{}",
        tail(&bus.log())
    );
    Ok(())
}

/// The last lines of a log.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_cannot_freeze_the_service() -> Result<()> {
    a_client_that_never_reads_on(Kind::Permissive).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_cannot_freeze_the_service_on_debians_system_bus() -> Result<()> {
    a_client_that_never_reads_on(Kind::Debian).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_cannot_freeze_the_service_on_dbus_broker() -> Result<()> {
    a_client_that_never_reads_on(Kind::Broker).await
}

/// Runs `f` on a thread of its own as the unprivileged test user (only that thread changes
/// its credentials; the bus reads those of the thread that connects), with a runtime of its
/// own.
fn as_test_user<T: Send + 'static>(
    f: impl FnOnce(&tokio::runtime::Runtime) -> Result<T> + Send + 'static,
) -> std::thread::JoinHandle<Result<T>> {
    std::thread::spawn(move || {
        // SAFETY: plain system calls on this thread's own credentials.
        let changed = unsafe {
            libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<libc::gid_t>()) == 0
                && libc::syscall(libc::SYS_setresgid, TEST_UID, TEST_UID, TEST_UID) == 0
                && libc::syscall(libc::SYS_setresuid, TEST_UID, TEST_UID, TEST_UID) == 0
        };
        anyhow::ensure!(
            changed,
            "cannot take uid {TEST_UID}: {}",
            std::io::Error::last_os_error()
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        f(&rt)
    })
}

/// 16 connections of one unprivileged uid, each calling GetManagedObjects of the large host
/// again as soon as it has read the answer: none is refused. (Each call in progress reserves
/// the largest reply; together they pass the per-uid bound of unread replies although every
/// reply is read.)
async fn connections_that_read_are_not_refused_on(kind: Kind) -> Result<()> {
    let users = UserDb::new(false)?;
    let Some(bus) = bus_of(kind, &users)? else {
        return Ok(());
    };
    let sim = large_host()?;
    let _served = serve_sim(&bus, &sim, EngineConfig::default()).await?;
    const CONNECTIONS: usize = 16;
    const CALLS: usize = 4;
    let clients: Vec<_> = (0..CONNECTIONS)
        .map(|_| {
            let address = bus.address().to_string();
            as_test_user(move |rt| {
                rt.block_on(async {
                    let conn = zbus::connection::Builder::address(address.as_str())?
                        .build()
                        .await?;
                    let mut refused = Vec::new();
                    for _ in 0..CALLS {
                        if let Some(e) =
                            error_name(&conn, ROOT_PATH, OBJECT_MANAGER, "GetManagedObjects", &())
                                .await
                        {
                            refused.push(e);
                        }
                    }
                    anyhow::Ok(refused)
                })
            })
        })
        .collect();
    let mut refused = Vec::new();
    for c in clients {
        let r = tokio::task::spawn_blocking(move || c.join())
            .await?
            .map_err(|_| anyhow::anyhow!("a client panicked"))??;
        refused.extend(r);
    }
    println!(
        "{kind:?}: {CONNECTIONS} connections x {CALLS} GetManagedObjects: {} refused",
        refused.len()
    );
    assert!(refused.is_empty(), "refused although read: {refused:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_of_one_uid_that_read_are_not_refused_on_debians_system_bus() -> Result<()> {
    connections_that_read_are_not_refused_on(Kind::Debian).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_of_one_uid_that_read_are_not_refused_on_dbus_broker() -> Result<()> {
    connections_that_read_are_not_refused_on(Kind::Broker).await
}

/// One counter of the bus's `GetConnectionStats(name)` (root may ask on the stock bus).
async fn bus_stat(conn: &zbus::Connection, name: &str, field: &str) -> Result<u64> {
    let reply = conn
        .call_method(
            Some("org.freedesktop.DBus"),
            "/org/freedesktop/DBus",
            Some("org.freedesktop.DBus.Debug.Stats"),
            "GetConnectionStats",
            &(name,),
        )
        .await?;
    let stats: HashMap<String, zbus::zvariant::OwnedValue> = reply.body().deserialize()?;
    let v = stats.get(field).context("no such counter")?;
    Ok(u64::from(u32::try_from(v)?))
}

/// An unprivileged connection subscribes to every signal and never reads, on Debian's system
/// bus, at a tick of 50 ms on the large host (20 kB of ThroughputSampled a tick), beside a
/// silent caller of the same uid (GetManagedObjects for 160 MiB of replies, unread until the
/// end): what the bus holds for the subscriber, and what rdma-managerd has queued in the bus,
/// stay bounded, while another client keeps receiving every tick's signal and its calls are
/// answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_never_reads_cannot_fill_the_services_queue() -> Result<()> {
    let users = UserDb::new(false)?;
    let Some(bus) = bus_of(Kind::Debian, &users)? else {
        return Ok(());
    };
    let sim = large_host()?;
    // tests/bench/silent-subscriber runs it longer and faster.
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let tick = Duration::from_millis(env("RDMA_MANAGER_SILENT_TICK_MS", 50));
    let rounds = env("RDMA_MANAGER_SILENT_ROUNDS", 6);
    let config = EngineConfig {
        tick,
        ..EngineConfig::default()
    };
    let served = serve_sim(&bus, &sim, config).await?;
    let own = served
        .service
        .conn
        .unique_name()
        .context("the service's name")?
        .to_string();
    let (name_tx, name_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let address = bus.address().to_string();
    let silent = as_test_user(move |rt| {
        let conn = rt.block_on(async {
            let conn = zbus::connection::Builder::address(address.as_str())?
                .build()
                .await?;
            let dbus = zbus::fdo::DBusProxy::new(&conn).await?;
            dbus.add_match_rule(zbus::MatchRule::try_from("type='signal'")?)
                .await?;
            anyhow::Ok(conn)
        })?;
        let name = conn.unique_name().context("a name")?.to_string();
        let _ = name_tx.send(name);
        // Nothing drives this runtime meanwhile: the connection reads nothing.
        let _ = release_rx.recv();
        drop(conn);
        Ok(())
    });
    let silent_name = tokio::task::spawn_blocking(move || name_rx.recv()).await??;
    let other = bus.connect().await?;
    let root = bus.connect().await?;
    // And a silent caller of the same uid: GetManagedObjects for 160 MiB of replies, none
    // read until the end.
    let size = gmo_reply_size(&other).await?;
    let (sent_tx, sent_rx) = std::sync::mpsc::channel();
    let (caller_release_tx, caller_release_rx) = std::sync::mpsc::channel();
    let caller = unread_client(
        bus.address().to_string(),
        (160usize << 20) / size + 1,
        sent_tx,
        caller_release_rx,
    );
    tokio::task::spawn_blocking(move || sent_rx.recv()).await??;
    // Long enough for the silent subscriber's queue to pass the point where the service
    // stops broadcasting (8 MiB of its own messages queued: about 25 s at this rate), and
    // for a broadcast to everyone to have queued more than the bound (16 MiB in 40 s).
    let mut samples = Vec::new();
    for round in 0..rounds {
        // A client that only reads the signal: how many the service sent in the window (the
        // engine's pace on a loaded machine may be below the tick).
        let reference = bus.connect().await?;
        let rule = zbus::MatchRule::builder()
            .msg_type(Type::Signal)
            .interface("org.rdmamanager.RdmaManager1")?
            .member("ThroughputSampled")?
            .build();
        let mut stream = zbus::MessageStream::for_match_rule(rule, &reference, Some(1024)).await?;
        let sent = tokio::spawn(async move {
            let (mut n, end) = (0usize, Instant::now() + Duration::from_secs(10));
            while let Ok(Some(_)) = tokio::time::timeout_at(end.into(), stream.next()).await {
                n += 1;
            }
            n
        });
        let WellBehaved {
            gmo: mut lat,
            get: mut gets,
            signals,
        } = well_behaved_client(&other, Duration::from_secs(10)).await?;
        let sent = sent.await?;
        let queued = bus_stat(&root, &silent_name, "OutgoingBytes").await?;
        let own_queued = bus_stat(&root, &own, "IncomingBytes").await?;
        let (p, p_get) = (p99(&mut lat), p99(&mut gets));
        println!(
            "after {} s: other client {signals} ThroughputSampled in 10 s (a reader of the \
             signal alone {sent}), GetManagedObjects p99 {p:.1} ms, Properties.Get p99 \
             {p_get:.1} ms; queued for the silent subscriber {queued} B, rdma-managerd's \
             queued {own_queued} B",
            (round + 1) * 10
        );
        samples.push((signals, sent, queued, own_queued));
    }
    let _ = release_tx.send(());
    tokio::task::spawn_blocking(move || silent.join())
        .await?
        .map_err(|_| anyhow::anyhow!("the silent client panicked"))??;
    let _ = caller_release_tx.send(());
    let (answers, refusals) = tokio::task::spawn_blocking(move || caller.join())
        .await?
        .map_err(|_| anyhow::anyhow!("the silent caller panicked"))??;
    println!("the silent caller: {answers} answered, {refusals} refused");
    let (_, _, queued, own_queued) = samples[samples.len() - 1];
    let (_, _, _, own_half) = samples[samples.len() / 2];
    // rdma-managerd's queued bytes are the subscriber's signals and the caller's unread
    // replies: the signals bounded by the guard (16 MiB), the replies by the uid's bound of
    // unread replies (24 MiB), and flat once both are reached (the second half of the run).
    assert!(
        own_queued < 40 << 20 && queued < 16 << 20,
        "bounded: {queued} B for the subscriber, {own_queued} B of rdma-managerd's"
    );
    assert!(
        own_queued <= own_half + (1 << 20),
        "rdma-managerd's queued bytes grew from {own_half} B to {own_queued} B"
    );
    for (signals, sent, _, _) in samples {
        // No signal lost to a client that reads (give or take the windows' edges), and the
        // service not frozen.
        assert!(sent > 0, "no ThroughputSampled in 10 s: frozen");
        assert!(
            signals + 3 >= sent,
            "{signals} received of {sent} sent to a client that reads"
        );
    }
    Ok(())
}

/// The size of a GetManagedObjects reply's body, as `conn` receives it.
async fn gmo_reply_size(conn: &zbus::Connection) -> Result<usize> {
    Ok(conn
        .call_method(
            Some(BUS_NAME),
            ROOT_PATH,
            Some(OBJECT_MANAGER),
            "GetManagedObjects",
            &(),
        )
        .await?
        .body()
        .len())
}
