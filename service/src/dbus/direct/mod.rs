//! The direct socket: GetManagedObjects without the bus, for a client that reads the whole
//! model at once (a fleet tool's scrape, a monitoring agent, `rdma-tui --json` and
//! `--ibstat`).
//!
//! Through the bus, a large host's reply is relayed by the bus daemon, and relaying is most
//! of what the call costs: on a host of hundreds of devices either bus spends several times
//! the daemon's own CPU on a call (docs/PERFORMANCE.md). So the daemon also listens on a Unix socket
//! ([`rdma_manager_dbus::DIRECT_SOCKET_PATH`] when it serves the system bus) and speaks peer-to-peer D-Bus there, as
//! systemd does on `/run/systemd/private`: the same method on the same object path, the same
//! reply bytes, without the relay. `gdbus call --address unix:path=/run/rdma-manager/direct`
//! and zbus's `p2p` connections reach it.
//!
//! What it answers: `org.freedesktop.DBus.ObjectManager.GetManagedObjects` at the root;
//! `org.rdmamanager.RdmaManager1.Direct.GetDocument` at the root, the JSON document of
//! docs/JSON.md as one string (`s`), built by the daemon from what it publishes, so that
//! `rdma-tui --json` prints it without decoding a megabyte of D-Bus values;
//! `org.rdmamanager.RdmaManager1.Direct.GetIbstat(as)` at the root, what ibstat with those
//! arguments (its options, `--`, DEVICE and PORT) prints of the published objects, as
//! `(stdout, message, cause)` where the message is ibstat's when it stopped on an error
//! (`rdma-tui --ibstat`, rendered by the client's own adapter over the same records);
//! the root's `GetAllCounters`, the bus's method sharing the bus's reading (rdma-exporter's
//! scrape, whose half-megabyte reply the bus would otherwise relay);
//! `org.freedesktop.DBus.Peer.Ping`; and `org.freedesktop.DBus.Hello`, with a name for the
//! connection, because the usual tools (`busctl --address`, `gdbus call --address`) say
//! Hello first on any address, as to a bus. Anything else gets `UnknownMethod`, naming the
//! bus.
//! Nothing here changes the host, so polkit has nothing to decide and the socket is open to
//! every user (0666), as the bus policy lets everyone read. It is a snapshot: no signal is
//! sent here. A client that follows changes subscribes on the bus and calls GetManagedObjects
//! there, where the reply and the signals after it arrive in order.
//!
//! What a client sends is bounded before zbus reads it ([`bounded`]): a message of more than
//! 8 KiB ends the connection, and no file descriptor is taken.
//!
//! It is listened on once start-up is over, so that every answer is the complete host; a
//! client that finds no socket uses the bus. [`Bounds`], so that no client can make the
//! daemon hold memory or descriptors, nor keep other users out: at most 16 connections served
//! at once, shared fairly between uids ([`admission`]: a newcomer of a uid that holds fewer
//! takes the slot of the longest idle connection of the uid holding the most, root always
//! gets one, others wait accepted, up to 16 more, then in the listen backlog), at most 4 of
//! one uid served and waiting (a fifth of the same uid is closed at once: it would otherwise
//! keep a slot that another user waits for), one call at a time on each (calls sent together are answered in order), the handshake within 5 s, each
//! reply written within 30 s, and a connection closed after 60 s without a GetManagedObjects,
//! GetDocument, GetIbstat or GetAllCounters (a Ping or a Hello does not keep it open: they are no work a connection is kept for). A
//! client that connects and never reads holds one reply for at most 30 s.

use std::collections::HashMap;
use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use rdma_manager_dbus::ROOT_PATH;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Notify;
use tokio::time::timeout;
use zbus::message::{Flags, Type};
use zbus::{Guid, Message};

use super::managed::{reply_message, ManagedCache};
use super::Context;
use admission::{Admission, Arrival, ConnId};

pub mod admission;
pub mod bounded;

/// What one client may hold of the daemon (see the module's documentation).
#[derive(Debug, Clone)]
pub struct Bounds {
    /// Connections served at once.
    pub connections: usize,
    /// Connections of one uid served at once.
    pub per_uid: usize,
    /// From accepting a connection to the end of its D-Bus handshake.
    pub handshake: Duration,
    /// To write one reply into the socket (the client must read it meanwhile).
    pub send: Duration,
    /// Without a call, after which a connection is closed.
    pub idle: Duration,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            connections: 16,
            per_uid: 4,
            handshake: Duration::from_secs(5),
            send: Duration::from_secs(30),
            idle: Duration::from_secs(60),
        }
    }
}

const OBJECT_MANAGER: &str = "org.freedesktop.DBus.ObjectManager";
const MANAGER: &str = rdma_manager_dbus::records::Manager::INTERFACE;
/// The direct socket's own interface: what only this socket answers.
pub const DIRECT: &str = "org.rdmamanager.RdmaManager1.Direct";
const PEER: &str = "org.freedesktop.DBus.Peer";
const BUS: &str = "org.freedesktop.DBus";

/// Why the socket could not be listened on.
#[derive(Debug, thiserror::Error)]
pub enum DirectError {
    #[error("{}: exists and is not a socket; not replaced", .0.display())]
    NotASocket(PathBuf),
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// The listening socket. Dropping it stops accepting, ends the connections being served and
/// removes the socket file.
pub struct DirectSocket {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
    answered: Arc<AtomicU64>,
}

impl DirectSocket {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// GetManagedObjects and GetDocument calls answered so far.
    pub fn answered(&self) -> u64 {
        self.answered.load(Ordering::Relaxed)
    }
}

impl Drop for DirectSocket {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What the socket answers from: the published objects' encodings and the daemon's
/// context (GetAllCounters' shared reading, the engine).
#[derive(Clone)]
pub struct Sources {
    pub managed: Arc<ManagedCache>,
    pub ctx: Arc<Context>,
}

/// Listens on `path`, answering from `sources`. The directory is made if missing; a socket
/// left at `path` by an earlier run is replaced (the caller owns the bus name, so no other
/// instance serves it), anything else there is refused.
pub fn listen(path: &Path, sources: Sources) -> Result<DirectSocket, DirectError> {
    listen_with(path, sources, Bounds::default())
}

/// [`listen`] with other bounds (tests).
pub fn listen_with(
    path: &Path,
    sources: Sources,
    bounds: Bounds,
) -> Result<DirectSocket, DirectError> {
    let io_err = |source| DirectError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_err)?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => std::fs::remove_file(path).map_err(io_err)?,
        Ok(_) => return Err(DirectError::NotASocket(path.to_path_buf())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(e)),
    }
    let listener = UnixListener::bind(path).map_err(io_err)?;
    // Every user may connect, as every user may call GetManagedObjects on the bus.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666)).map_err(io_err)?;
    let answered = Arc::new(AtomicU64::new(0));
    let task = tokio::spawn(accept_loop(listener, sources, bounds, answered.clone()));
    Ok(DirectSocket {
        path: path.to_path_buf(),
        task,
        answered,
    })
}

/// What every connection shares.
struct Shared {
    cache: Arc<ManagedCache>,
    ctx: Arc<Context>,
    bounds: Bounds,
    answered: Arc<AtomicU64>,
    admission: std::sync::Mutex<Admission>,
    /// Told when a connection ends, so that a waiting one can take its slot.
    freed: Notify,
}

impl Shared {
    fn admission(&self) -> std::sync::MutexGuard<'_, Admission> {
        // The bookkeeping stays consistent whatever panicked while holding it: each change
        // is one map operation.
        self.admission.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Takes a served connection out of the books when its task ends, however it ends (its
/// client leaving, a bound, or its slot taken by another uid's connection).
struct Leaving {
    shared: Arc<Shared>,
    id: ConnId,
}

impl Drop for Leaving {
    fn drop(&mut self) {
        self.shared.admission().left(self.id);
        self.shared.freed.notify_one();
    }
}

async fn accept_loop(
    listener: UnixListener,
    sources: Sources,
    bounds: Bounds,
    answered: Arc<AtomicU64>,
) {
    let shared = Arc::new(Shared {
        cache: sources.managed,
        ctx: sources.ctx,
        admission: std::sync::Mutex::new(Admission::new(bounds.connections, bounds.per_uid)),
        bounds,
        answered,
        freed: Notify::new(),
    });
    // Accepted but not served yet (see `admission`); beyond this many held, clients wait in
    // the listen backlog, not in the daemon, except root's (see below).
    let hold_bound = shared.bounds.connections.saturating_mul(2);
    let mut waiting: HashMap<ConnId, UnixStream> = HashMap::new();
    let mut served: HashMap<ConnId, tokio::task::AbortHandle> = HashMap::new();
    let mut next_id: ConnId = 0;
    // The connections' tasks: aborted with this one when the socket is dropped.
    let mut connections: tokio::task::JoinSet<()> = tokio::task::JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        served.retain(|_, task| !task.is_finished());
        let admitted = shared.admission().admissible(Instant::now());
        for id in admitted {
            if let Some(stream) = waiting.remove(&id) {
                let task = spawn_served(&mut connections, &shared, id, stream);
                served.insert(id, task);
            }
        }
        let held = shared.admission().held();
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // EMFILE and the like: the descriptors come back as connections end.
                    tracing::warn!("direct socket: cannot accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = shared.freed.notified() => continue,
        };
        // The uid the kernel gives for the peer; a peer without one is closed (the handshake
        // would fail anyway, as EXTERNAL needs it).
        let Ok(uid) = stream.peer_cred().map(|c| c.uid()) else {
            continue;
        };
        // Past the bound of connections held, only root's are considered, so that the
        // administrator can always look however many uids hold the rest.
        if held >= hold_bound && uid != 0 {
            tracing::debug!(uid, "direct socket: closing a connection: too many held");
            continue;
        }
        next_id += 1;
        let id = next_id;
        let arrival = shared.admission().arrive(id, uid, Instant::now());
        match arrival {
            Arrival::Admit => {
                let task = spawn_served(&mut connections, &shared, id, stream);
                served.insert(id, task);
            }
            Arrival::AdmitEvicting(victim) => {
                tracing::debug!(
                    uid,
                    "direct socket: closing another uid's longest idle connection for this one"
                );
                if let Some(task) = served.remove(&victim) {
                    task.abort();
                }
                let task = spawn_served(&mut connections, &shared, id, stream);
                served.insert(id, task);
            }
            Arrival::Wait => {
                waiting.insert(id, stream);
            }
            Arrival::Refuse => {
                tracing::debug!(
                    uid,
                    "direct socket: closing a connection past the bound of its uid"
                );
            }
        }
    }
}

/// Serves connection `id` in a task of `connections`; the handle aborts it.
fn spawn_served(
    connections: &mut tokio::task::JoinSet<()>,
    shared: &Arc<Shared>,
    id: ConnId,
    stream: UnixStream,
) -> tokio::task::AbortHandle {
    let leaving = Leaving {
        shared: shared.clone(),
        id,
    };
    connections.spawn(async move {
        let name = format!(":1.{id}");
        if let Err(e) = serve_connection(stream, &leaving.shared, id, &name).await {
            tracing::debug!("direct socket: connection ended: {e}");
        }
        drop(leaving);
    })
}

/// Why a connection was closed (logged at debug: every reason is the client's doing).
#[derive(Debug, thiserror::Error)]
enum ConnectionEnd {
    #[error("no handshake in time")]
    HandshakeTimeout,
    #[error("the reply was not read in time")]
    SendTimeout,
    #[error(transparent)]
    Bus(#[from] zbus::Error),
}

/// Serves one client, `name` being what its Hello is answered with.
async fn serve_connection(
    stream: UnixStream,
    shared: &Shared,
    id: ConnId,
    name: &str,
) -> Result<(), ConnectionEnd> {
    let bounds = &shared.bounds;
    // The client's uid is taken from the socket (SO_PEERCRED) and checked against what it
    // claims in the EXTERNAL handshake; any uid is served.
    let conn = timeout(
        bounds.handshake,
        zbus::connection::Builder::socket(bounded_socket(stream))
            .server(Guid::generate())?
            .p2p()
            .build(),
    )
    .await
    .map_err(|_| ConnectionEnd::HandshakeTimeout)??;
    let served = serve_calls(&conn, shared, id, name).await;
    // Whatever ended it (the client leaving, a timeout), the socket is closed now, not when
    // zbus's reader notices.
    let _ = timeout(Duration::from_secs(1), conn.close()).await;
    served
}

/// Answers the calls of `conn` one at a time until it ends or falls idle.
async fn serve_calls(
    conn: &zbus::Connection,
    shared: &Shared,
    id: ConnId,
    name: &str,
) -> Result<(), ConnectionEnd> {
    let bounds = &shared.bounds;
    let mut messages = zbus::MessageStream::from(conn);
    // Only a GetManagedObjects keeps the connection open: Pings every so often must not hold
    // a slot for ever.
    let mut idle_until = tokio::time::Instant::now() + bounds.idle;
    while let Ok(Some(msg)) = tokio::time::timeout_at(idle_until, messages.next()).await {
        let msg = msg?;
        if msg.message_type() != Type::MethodCall
            || msg
                .header()
                .primary()
                .flags()
                .contains(Flags::NoReplyExpected)
        {
            continue;
        }
        // While a call is answered the connection is not idle: its slot is not taken.
        shared.admission().started(id);
        let (reply, worked) = answer(&msg, shared, name).await?;
        // Only a call answered with what the socket serves keeps the connection: a
        // signal, a no-reply call (filtered above) or a refused call costs the client
        // nothing and must not hold its slot.
        if worked {
            idle_until = tokio::time::Instant::now() + bounds.idle;
        }
        timeout(bounds.send, conn.send(&reply))
            .await
            .map_err(|_| ConnectionEnd::SendTimeout)??;
        shared
            .admission()
            .finished(id, worked.then(std::time::Instant::now));
    }
    Ok(())
}

/// `stream` for zbus, its read half bounded ([`bounded`]).
fn bounded_socket(stream: UnixStream) -> zbus::connection::socket::BoxedSplit {
    let (read, write) = stream.into_split();
    zbus::connection::socket::Split::new(
        Box::new(bounded::BoundedRead::new(read)) as Box<dyn zbus::connection::socket::ReadHalf>,
        Box::new(write) as Box<dyn zbus::connection::socket::WriteHalf>,
    )
}

/// The reply to one method call of the connection named `name`, and whether it was the
/// work a connection is kept for (the objects, the document, ibstat's text or the counters,
/// not a Ping or a refusal).
async fn answer(msg: &Message, shared: &Shared, name: &str) -> zbus::Result<(Message, bool)> {
    let hdr = msg.header();
    let path = hdr.path().map(|p| p.as_str());
    let interface = hdr.interface().map(|i| i.as_str());
    let member = hdr.member().map(|m| m.as_str()).unwrap_or_default();
    let arguments = msg.body().signature().to_string();
    let no_arguments = arguments.is_empty();
    let at_root = path == Some(ROOT_PATH);
    // The methods a connection is kept for, with the arguments each takes.
    let served = match (interface, member) {
        (Some(OBJECT_MANAGER) | None, "GetManagedObjects")
        | (Some(DIRECT) | None, "GetDocument") => Some(""),
        (Some(DIRECT) | None, "GetIbstat") => Some("as"),
        (Some(MANAGER) | None, "GetAllCounters") => Some(""),
        _ => None,
    }
    .filter(|_| at_root);
    let reply = match (interface, member) {
        (Some(PEER) | None, "Ping") if no_arguments => Message::method_return(&hdr)?.build(&()),
        (Some(BUS), "Hello") if no_arguments => Message::method_return(&hdr)?.build(&(name,)),
        _ if served.is_some_and(|takes| takes != arguments) => {
            let takes = served.unwrap_or_default();
            Message::error(&hdr, "org.freedesktop.DBus.Error.InvalidArgs")?.build(&(
                if takes.is_empty() {
                    format!("{member} takes no arguments")
                } else {
                    format!("{member} takes ({takes}), not ({arguments})")
                },
            ))
        }
        (_, "GetManagedObjects") if served.is_some() => {
            let reply = reply_message(&hdr, &shared.cache)?;
            shared.answered.fetch_add(1, Ordering::Relaxed);
            return Ok((reply, true));
        }
        (_, "GetDocument") if served.is_some() => {
            let reply = Message::method_return(&hdr)?.build(&(&*shared.cache.document(),))?;
            shared.answered.fetch_add(1, Ordering::Relaxed);
            return Ok((reply, true));
        }
        (_, "GetIbstat") if served.is_some() => {
            let argv: Vec<String> = msg.body().deserialize()?;
            match rdma_manager_dbus::ibstat::IbstatArgs::from_argv(&argv) {
                Ok(args) => {
                    let reply = Message::method_return(&hdr)?
                        .build(&shared.cache.ibstat(&args).into_reply())?;
                    shared.answered.fetch_add(1, Ordering::Relaxed);
                    return Ok((reply, true));
                }
                Err(e) => Message::error(&hdr, "org.freedesktop.DBus.Error.InvalidArgs")?
                    .build(&(e.to_string(),)),
            }
        }
        (_, "GetAllCounters") if served.is_some() => match all_counters(&shared.ctx).await {
            Ok((time_us, ports)) => {
                let reply = Message::method_return(&hdr)?.build(&(time_us, &*ports))?;
                shared.answered.fetch_add(1, Ordering::Relaxed);
                return Ok((reply, true));
            }
            Err(e) => {
                use zbus::DBusError;
                Message::error(&hdr, e.name())?.build(&(e.description().unwrap_or_default(),))
            }
        },
        _ => Message::error(&hdr, "org.freedesktop.DBus.Error.UnknownMethod")?.build(&(format!(
            "the direct socket answers only GetManagedObjects, GetDocument, GetIbstat and \
             GetAllCounters at \
             {ROOT_PATH} and Peer.Ping; \
             call {}.{member} at {} on the system bus",
            interface.unwrap_or("(no interface)"),
            path.unwrap_or("/"),
        ),)),
    }?;
    Ok((reply, false))
}

/// The root's GetAllCounters: the reading the bus's callers share.
async fn all_counters(
    ctx: &Context,
) -> Result<(u64, Arc<Vec<super::counters::PortRow>>), rdma_manager_dbus::Error> {
    let reading = ctx.counters().all(ctx.engine().await?).await?;
    Ok((reading.time_us, reading.ports))
}
