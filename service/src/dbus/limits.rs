//! What one client may make the daemon send it without reading it.
//!
//! The bus queues a reply until its recipient reads it, and dbus-daemon charges every queued
//! message to its *sender's* incoming quota (127 MiB on the system bus) until it is delivered.
//! A client that sends calls and never reads their replies therefore fills rdma-managerd's
//! quota; the bus then stops reading from rdma-managerd, which answers nobody and emits no
//! signals until that client reads or leaves. A GetManagedObjects of a large host is 1.5 MB,
//! so under a hundred unread calls are enough.
//!
//! The daemon cannot see the bus's queues itself, but the bus can tell it: both dbus-daemon
//! (`org.freedesktop.DBus.Debug.Stats.GetConnectionStats`, a connection's `OutgoingBytes`)
//! and dbus-broker (`GetStats`, each peer's `OutgoingBytes`) say how many bytes are queued
//! for a connection, and the stock system bus policy lets root ask. Nothing is asked of the
//! clients: a system bus denies method calls to them, and many never dispatch incoming calls.
//! So each connection has a book of reply bytes sent to it that it has not been seen to read;
//! once that passes [`LimitConfig::probe_after`], the bus is asked what is still queued for
//! the connection, and the book is lowered to that. The question travels behind the replies
//! on the daemon's own connection, so the bus has them queued (or delivered) when it answers.
//! New calls are refused with `org.freedesktop.DBus.Error.LimitsExceeded` while a connection,
//! all connections of its uid, or all clients together have more unread than their bound, and
//! while a connection has too many calls in progress; before refusing for unread bytes the
//! bus is asked again, so a client that has read meanwhile is admitted. Nothing else is
//! refused, and a client that reads its replies never meets a limit. A bus that can tell
//! neither (stats left out of its build, or a policy that denies them) leaves only the bounds
//! on calls in progress; that is logged once.
//!
//! Calls admitted together must not all pass a bound none of them has reached yet: each call
//! reserves, when admitted, as much as the largest reply the daemon has sent (or can send: the
//! model's size is noted just after start), and the reservation is replaced by the reply's real
//! size when the call ends. Reservations count against the connection's bound and the total,
//! not the uid's: calls of one uid in progress are bounded by number, and the total bounds what
//! they may reserve, while a uid's connections that each read their last reply must not be
//! refused because each has a call in progress.
//!
//! A reply's bytes are charged when the handler has sent it (methods) or computed it
//! (properties, whose reply zbus sends just after): a question sent at that moment may
//! overtake replies of other calls still being sent, which can only make the book a few
//! small replies too low, never stop a client that reads.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zbus::names::UniqueName;

/// What a call reserves at least: a small reply.
const SMALL_RESERVATION: u64 = 4 << 10;

/// The bounds. The defaults keep the sum of everything unread well below dbus-daemon's
/// default incoming quota of the system bus (127 MiB), with room for signals.
#[derive(Debug, Clone)]
pub struct LimitConfig {
    /// Unread reply bytes of one connection.
    pub unread_per_connection: u64,
    /// Unread reply bytes of all connections of one uid.
    pub unread_per_uid: u64,
    /// Unread reply bytes of every client together.
    pub unread_total: u64,
    /// Calls of one connection being handled at once (a call waiting for polkit or the engine).
    pub calls_per_connection: u32,
    /// Calls of all connections of one uid being handled at once.
    pub calls_per_uid: u32,
    /// Unread bytes after which the bus is asked what is still queued for the connection.
    pub probe_after: u64,
    /// How long the bus may take to answer before the question is given up.
    pub probe_timeout: Duration,
}

impl Default for LimitConfig {
    fn default() -> Self {
        LimitConfig {
            unread_per_connection: 16 << 20,
            unread_per_uid: 24 << 20,
            unread_total: 64 << 20,
            calls_per_connection: 16,
            calls_per_uid: 64,
            probe_after: 256 << 10,
            probe_timeout: Duration::from_secs(5),
        }
    }
}

/// Why a call was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error(
        "{unread} bytes of earlier replies to this connection are still unread (bound {bound}); \
         read the replies before calling again"
    )]
    UnreadConnection { unread: u64, bound: u64 },
    #[error(
        "{unread} bytes of earlier replies to connections of uid {uid} are still unread \
         (bound {bound}); read the replies before calling again"
    )]
    UnreadUid { uid: u32, unread: u64, bound: u64 },
    #[error(
        "rdma-managerd has {unread} bytes of replies that its clients have not read (bound \
         {bound}); try again when they have"
    )]
    UnreadTotal { unread: u64, bound: u64 },
    #[error("this connection already has {calls} calls in progress; wait for their replies")]
    CallsConnection { calls: u32 },
    #[error(
        "connections of uid {uid} already have {calls} calls in progress; wait for their replies"
    )]
    CallsUid { uid: u32, calls: u32 },
}

#[derive(Debug, Default)]
struct Book {
    /// The connection's uid, once the bus has told it.
    uid: Option<u32>,
    /// Reply bytes sent and not yet seen read.
    unread: u64,
    /// Calls admitted and not finished.
    calls: u32,
    /// What those calls' replies may carry, reserved when each was admitted (calls admitted
    /// at once must not all pass a bound that none of them has reached yet).
    reserved: u64,
    /// Whether a question to the bus about this connection is on its way.
    probing: bool,
}

#[derive(Debug, Default)]
struct Books {
    by_connection: HashMap<String, Book>,
    /// Unread and reserved bytes of every connection.
    total_unread: u64,
    /// The largest reply sent so far: what a call in progress may still send.
    largest_reply: u64,
    /// How the bus tells what is queued for a connection, once known.
    queue_source: QueueSource,
}

impl Books {
    /// Unread bytes, and calls in progress, of every connection of `uid`.
    fn uid_sums(&self, uid: u32) -> (u64, u32) {
        self.by_connection
            .values()
            .filter(|b| b.uid == Some(uid))
            .fold((0, 0), |(u, c), b| (u + b.unread, c + b.calls))
    }

    fn settle(&mut self, sender: &str, bytes: u64) {
        if let Some(b) = self.by_connection.get_mut(sender) {
            let n = bytes.min(b.unread);
            b.unread -= n;
            self.total_unread -= n;
        }
    }

    /// Lowers the book of `sender` to what the bus still has queued for it.
    fn lower_to(&mut self, sender: &str, queued: u64) {
        let unread = self.by_connection.get(sender).map_or(0, |b| b.unread);
        self.settle(sender, unread.saturating_sub(queued));
    }

    fn forget(&mut self, sender: &str) {
        if let Some(b) = self.by_connection.remove(sender) {
            self.total_unread -= b.unread + b.reserved;
        }
    }
}

/// The books of every client connection, shared by every object.
pub struct Limits {
    config: LimitConfig,
    /// The daemon's own connection (as the authorizer holds it: the service lives as long as
    /// its connection).
    conn: Mutex<Option<zbus::Connection>>,
    books: Mutex<Books>,
}

impl Limits {
    pub fn new(config: LimitConfig) -> Arc<Limits> {
        Arc::new(Limits {
            config,
            conn: Mutex::new(None),
            books: Mutex::new(Books::default()),
        })
    }

    /// The connection Pings and uid questions go out on, and whose departed peers are
    /// forgotten.
    pub fn attach(self: &Arc<Self>, conn: &zbus::Connection) {
        *self.conn.lock().unwrap_or_else(|p| p.into_inner()) = Some(conn.clone());
        let this = Arc::downgrade(self);
        let conn = conn.clone();
        tokio::spawn(async move {
            use futures::StreamExt;
            let Ok(dbus) = zbus::fdo::DBusProxy::new(&conn).await else {
                return;
            };
            let Ok(mut gone) = dbus.receive_name_owner_changed().await else {
                return;
            };
            drop(conn);
            while let Some(signal) = gone.next().await {
                let Ok(args) = signal.args() else { continue };
                if args.new_owner().is_none() && args.name().starts_with(':') {
                    let Some(this) = this.upgrade() else { return };
                    this.lock().forget(args.name().as_str());
                }
            }
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Books> {
        self.books.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn connection(&self) -> Option<zbus::Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Admits a call of `sender`, or says which bound it would pass. A call without a sender
    /// (a peer-to-peer connection) is not counted.
    pub async fn admit(
        self: &Arc<Self>,
        sender: Option<&UniqueName<'_>>,
    ) -> Result<Permit, LimitError> {
        let Some(sender) = sender else {
            return Ok(Permit::uncounted());
        };
        let sender = sender.as_str();
        let known = self
            .lock()
            .by_connection
            .get(sender)
            .is_some_and(|b| b.uid.is_some());
        if !known {
            let uid = self.ask_uid(sender).await;
            self.lock()
                .by_connection
                .entry(sender.to_string())
                .or_default()
                .uid = uid;
        }
        match self.check_and_count(sender) {
            // Refused for unread replies: ask the bus what is still queued, so that replies
            // read meanwhile do not refuse a client that reads.
            Err(e) if e.is_unread() => {
                let names = self.unread_connections(&e, sender);
                self.ask_bus(&names).await;
                self.check_and_count(sender)
            }
            verdict => verdict,
        }
    }

    /// The connections whose books a refusal for `e` counted: the sender's, its uid's, or
    /// every one with unread bytes.
    fn unread_connections(&self, e: &LimitError, sender: &str) -> Vec<String> {
        let books = self.lock();
        let with_unread = |b: &&Book| b.unread > 0;
        match e {
            LimitError::UnreadConnection { .. } => vec![sender.to_string()],
            LimitError::UnreadUid { uid, .. } => books
                .by_connection
                .iter()
                .filter(|(_, b)| b.uid == Some(*uid) && b.unread > 0)
                .map(|(n, _)| n.clone())
                .collect(),
            _ => books
                .by_connection
                .iter()
                .filter(|(_, b)| with_unread(b))
                .map(|(n, _)| n.clone())
                .collect(),
        }
    }

    fn check_and_count(self: &Arc<Self>, sender: &str) -> Result<Permit, LimitError> {
        let c = &self.config;
        let mut books = self.lock();
        // This call may send as much as the largest reply so far (at least a small one).
        let reserve = books.largest_reply.max(SMALL_RESERVATION);
        let total = books.total_unread;
        let book = books.by_connection.entry(sender.to_string()).or_default();
        let (unread, calls, uid) = (book.unread + book.reserved, book.calls, book.uid);
        if calls >= c.calls_per_connection {
            return Err(LimitError::CallsConnection { calls });
        }
        if unread + reserve > c.unread_per_connection {
            return Err(LimitError::UnreadConnection {
                unread,
                bound: c.unread_per_connection,
            });
        }
        if let Some(uid) = uid {
            // Unread bytes only: see the module's comment on reservations.
            let (uid_unread, uid_calls) = books.uid_sums(uid);
            if uid_calls >= c.calls_per_uid {
                return Err(LimitError::CallsUid {
                    uid,
                    calls: uid_calls,
                });
            }
            if uid_unread > c.unread_per_uid {
                return Err(LimitError::UnreadUid {
                    uid,
                    unread: uid_unread,
                    bound: c.unread_per_uid,
                });
            }
        }
        if total + reserve > c.unread_total {
            return Err(LimitError::UnreadTotal {
                unread: total,
                bound: c.unread_total,
            });
        }
        books.total_unread += reserve;
        if let Some(b) = books.by_connection.get_mut(sender) {
            b.calls += 1;
            b.reserved += reserve;
        }
        Ok(Permit {
            counted: Some((self.clone(), sender.to_string())),
            reserved: reserve,
            bytes: Arc::default(),
        })
    }

    /// The uid of `sender`: as the books know it (every admitted call has asked), else from
    /// the bus.
    pub async fn uid_of(&self, sender: &str) -> Option<u32> {
        let known = self.lock().by_connection.get(sender).and_then(|b| b.uid);
        match known {
            Some(uid) => Some(uid),
            None => self.ask_uid(sender).await,
        }
    }

    async fn ask_uid(&self, sender: &str) -> Option<u32> {
        let conn = self.connection()?;
        let dbus = zbus::fdo::DBusProxy::new(&conn).await.ok()?;
        let name = zbus::names::BusName::try_from(sender).ok()?;
        dbus.get_connection_unix_user(name).await.ok()
    }

    /// Charges `bytes` of a reply already sent (or about to be) to `sender`.
    pub fn charge(self: &Arc<Self>, sender: &str, bytes: u64) {
        if bytes == 0 {
            return;
        }
        {
            let mut books = self.lock();
            books.largest_reply = books.largest_reply.max(bytes);
            books.total_unread += bytes;
            books
                .by_connection
                .entry(sender.to_string())
                .or_default()
                .unread += bytes;
        }
        self.probe_if_due(sender);
    }

    /// A call admitted with `reserved` bytes ended (its reply, if any, charged already).
    fn finish_call(&self, sender: &str, reserved: u64) {
        let mut books = self.lock();
        let Some(b) = books.by_connection.get_mut(sender) else {
            return;
        };
        let released = reserved.min(b.reserved);
        b.calls = b.calls.saturating_sub(1);
        b.reserved -= released;
        books.total_unread -= released;
    }

    /// Records the size of a reply the daemon can send, before anyone asked for it (the
    /// model's GetManagedObjects at start), so that the first calls already reserve it.
    pub fn note_reply_size(&self, bytes: u64) {
        let mut books = self.lock();
        books.largest_reply = books.largest_reply.max(bytes);
    }

    /// Asks the bus what is queued for `sender` if enough is unread and no question is on
    /// its way.
    fn probe_if_due(self: &Arc<Self>, sender: &str) {
        {
            let mut books = self.lock();
            let Some(b) = books.by_connection.get_mut(sender) else {
                return;
            };
            if b.probing || b.unread < self.config.probe_after {
                return;
            }
            b.probing = true;
        }
        let this = self.clone();
        let sender = sender.to_string();
        tokio::spawn(async move {
            this.ask_bus(std::slice::from_ref(&sender)).await;
            if let Some(b) = this.lock().by_connection.get_mut(&sender) {
                b.probing = false;
            }
        });
    }

    /// Lowers the books of `names` to what the bus says is still queued for them, and
    /// forgets those the bus no longer knows. A bus that cannot tell changes nothing.
    async fn ask_bus(&self, names: &[String]) {
        if names.is_empty() {
            return;
        }
        let Some(conn) = self.connection() else {
            return;
        };
        let source = self.lock().queue_source;
        let (source, queued) =
            match tokio::time::timeout(self.config.probe_timeout, bus_queues(&conn, source, names))
                .await
            {
                Ok(answer) => answer,
                Err(_) => {
                    tracing::debug!("the bus did not say within the timeout what it has queued");
                    return;
                }
            };
        let mut books = self.lock();
        if source != books.queue_source {
            if source == QueueSource::Blind {
                tracing::warn!(
                    "the bus does not tell what it has queued for a connection \
                     (org.freedesktop.DBus.Debug.Stats): replies left unread are not bounded \
                     by rdma-managerd, only calls in progress"
                );
            }
            books.queue_source = source;
        }
        if source == QueueSource::Blind {
            // Nothing can settle a book: keeping them would refuse clients that read.
            for name in names {
                let unread = books.by_connection.get(name).map_or(0, |b| b.unread);
                books.settle(name, unread);
            }
            return;
        }
        for name in names {
            match queued.get(name) {
                Some(Some(bytes)) => books.lower_to(name, *bytes),
                Some(None) => books.forget(name),
                None => {}
            }
        }
    }

    /// Unread bytes of `sender` (tests and diagnostics).
    pub fn unread(&self, sender: &str) -> u64 {
        self.lock()
            .by_connection
            .get(sender)
            .map_or(0, |b| b.unread)
    }
}

impl LimitError {
    /// Whether the refusal is for unread bytes (which the bus may have delivered meanwhile).
    fn is_unread(&self) -> bool {
        matches!(
            self,
            LimitError::UnreadConnection { .. }
                | LimitError::UnreadUid { .. }
                | LimitError::UnreadTotal { .. }
        )
    }
}

/// How the bus tells the bytes it has queued for a connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum QueueSource {
    /// Not asked yet.
    #[default]
    Unknown,
    /// dbus-daemon: `GetConnectionStats(name)`, its `OutgoingBytes`.
    ConnectionStats,
    /// dbus-broker: `GetStats()`, each peer's `OutgoingBytes` in its accounting.
    PeerAccounting,
    /// Neither answers (no stats in the bus's build, or a policy that denies them).
    Blind,
}

const DBUS_NAME: &str = "org.freedesktop.DBus";
const DBUS_PATH: &str = "/org/freedesktop/DBus";
const STATS: &str = "org.freedesktop.DBus.Debug.Stats";
const PEER_ACCOUNTING: &str = "org.bus1.DBus.Debug.Stats.PeerAccounting";

/// What the bus has queued for each of `names`: `Some(bytes)`, or `None` for a connection the
/// bus does not know (gone); a name missing from the map was not answered. Also says which
/// way of asking worked, trying each in turn while `source` is not known.
async fn bus_queues(
    conn: &zbus::Connection,
    source: QueueSource,
    names: &[String],
) -> (QueueSource, HashMap<String, Option<u64>>) {
    let mut out = HashMap::new();
    if matches!(source, QueueSource::Unknown | QueueSource::ConnectionStats) {
        for name in names {
            match connection_stats(conn, name).await {
                Ok(bytes) => {
                    out.insert(name.clone(), bytes);
                }
                // The bus does not offer the method: try the other way, once.
                Err(_) if source == QueueSource::Unknown && out.is_empty() => break,
                Err(e) => tracing::debug!(name = %name, error = %e, "GetConnectionStats failed"),
            }
        }
        if source == QueueSource::ConnectionStats || !out.is_empty() {
            return (QueueSource::ConnectionStats, out);
        }
    }
    if matches!(source, QueueSource::Unknown | QueueSource::PeerAccounting) {
        match peer_accounting(conn).await {
            Ok(all) => {
                for name in names {
                    out.insert(name.clone(), all.get(name).copied());
                }
                return (QueueSource::PeerAccounting, out);
            }
            Err(e) if source == QueueSource::PeerAccounting => {
                tracing::debug!(error = %e, "GetStats failed");
                return (source, out);
            }
            Err(e) => tracing::debug!(error = %e, "the bus gives no peer accounting"),
        }
    }
    (QueueSource::Blind, out)
}

/// dbus-daemon's `OutgoingBytes` of `name`; `None` when the bus does not know the name.
async fn connection_stats(conn: &zbus::Connection, name: &str) -> zbus::Result<Option<u64>> {
    let reply = match conn
        .call_method(
            Some(DBUS_NAME),
            DBUS_PATH,
            Some(STATS),
            "GetConnectionStats",
            &(name,),
        )
        .await
    {
        Ok(reply) => reply,
        Err(zbus::Error::MethodError(e, _, _))
            if e.as_str() == "org.freedesktop.DBus.Error.NameHasNoOwner" =>
        {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    let stats: HashMap<String, zbus::zvariant::OwnedValue> = reply.body().deserialize()?;
    let bytes = stats
        .get("OutgoingBytes")
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| zbus::Error::Failure("no OutgoingBytes in GetConnectionStats".into()))?;
    Ok(Some(u64::from(bytes)))
}

/// dbus-broker's `OutgoingBytes` of every peer, from its peer accounting.
async fn peer_accounting(conn: &zbus::Connection) -> zbus::Result<HashMap<String, u64>> {
    let reply = conn
        .call_method(Some(DBUS_NAME), DBUS_PATH, Some(STATS), "GetStats", &())
        .await?;
    let stats: HashMap<String, zbus::zvariant::OwnedValue> = reply.body().deserialize()?;
    let peers = stats
        .get(PEER_ACCOUNTING)
        .ok_or_else(|| zbus::Error::Failure(format!("no {PEER_ACCOUNTING} in GetStats")))?;
    Ok(outgoing_bytes_of_peers(peers))
}

/// `a(sa{sv}a{su})`: each peer's name, its credentials, and its accounting counters.
fn outgoing_bytes_of_peers(peers: &zbus::zvariant::Value<'_>) -> HashMap<String, u64> {
    use zbus::zvariant::Value;
    let mut out = HashMap::new();
    let Value::Array(peers) = peers else {
        return out;
    };
    for peer in peers.iter() {
        let Value::Structure(peer) = peer else {
            continue;
        };
        let (Some(Value::Str(name)), Some(Value::Dict(counters))) =
            (peer.fields().first(), peer.fields().get(2))
        else {
            continue;
        };
        if let Ok(Some(bytes)) = counters.get::<&str, u32>(&"OutgoingBytes") {
            out.insert(name.to_string(), u64::from(bytes));
        }
    }
    out
}

/// One admitted call: counts as in progress until dropped, and collects the bytes its reply
/// will carry ([`charge_current`]), charged when the call has been answered ([`Permit::finish`]).
pub struct Permit {
    counted: Option<(Arc<Limits>, String)>,
    /// Bytes reserved for this call's reply when it was admitted.
    reserved: u64,
    bytes: Arc<AtomicU64>,
}

impl Permit {
    fn uncounted() -> Permit {
        Permit {
            counted: None,
            reserved: 0,
            bytes: Arc::default(),
        }
    }

    /// Runs `f` as this call, so that [`charge_current`] inside it adds to this reply.
    pub async fn scope<F: std::future::Future>(&self, f: F) -> F::Output {
        CURRENT.scope(self.bytes.clone(), f).await
    }

    /// Adds `bytes` to the reply this call is about to send.
    pub fn add(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The call has been answered: charge its reply (at least `floor` bytes, what a small
    /// reply costs the bus) to the caller.
    pub fn finish(self, floor: u64) {
        if let Some((limits, sender)) = &self.counted {
            let bytes = self.bytes.load(Ordering::Relaxed);
            limits.charge(sender, bytes.max(floor));
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some((limits, sender)) = &self.counted {
            limits.finish_call(sender, self.reserved);
        }
    }
}

tokio::task_local! {
    /// The reply size of the call the current task is answering.
    static CURRENT: Arc<AtomicU64>;
}

/// Charges `bytes` to the reply of the call the current task is answering: handlers whose
/// reply is large by nature (GetManagedObjects, throughput history) say how large.
pub fn charge_current(bytes: u64) {
    let _ = CURRENT.try_with(|b| b.fetch_add(bytes, Ordering::Relaxed));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> LimitConfig {
        LimitConfig {
            unread_per_connection: 100_000,
            unread_per_uid: 150_000,
            unread_total: 200_000,
            calls_per_connection: 4,
            calls_per_uid: 8,
            probe_after: 1 << 30,
            probe_timeout: Duration::from_secs(1),
        }
    }

    fn name(s: &str) -> UniqueName<'_> {
        UniqueName::try_from(s).expect("a unique name")
    }

    #[tokio::test]
    async fn unread_replies_refuse_further_calls_until_settled() {
        let limits = Limits::new(small());
        let a = name(":1.1");
        let p = limits.admit(Some(&a)).await.expect("first call");
        p.add(90_000);
        p.finish(256);
        assert_eq!(limits.unread(":1.1"), 90_000);
        // 90,000 unread and a reservation of the largest reply (90,000) pass 100,000.
        let e = limits.admit(Some(&a)).await.err().expect("refused");
        assert!(
            matches!(e, LimitError::UnreadConnection { unread: 90_000, .. }),
            "{e}"
        );
        // Another connection is not held back by this one's books...
        let b = name(":1.2");
        let p = limits.admit(Some(&b)).await.expect("another connection");
        drop(p);
        // ...until the total is reached.
        limits.lock().settle(":1.1", 90_000);
        assert_eq!(limits.unread(":1.1"), 0);
        assert!(limits.admit(Some(&a)).await.is_ok(), "admitted once read");
    }

    #[tokio::test]
    async fn calls_admitted_together_reserve_the_largest_reply() {
        let limits = Limits::new(small());
        limits.note_reply_size(30_000);
        let a = name(":1.1");
        // Three calls in progress reserve 90,000: a fourth would pass 100,000 before any of
        // them has sent a byte.
        let held: Vec<Permit> = futures::future::join_all((0..3).map(|_| limits.admit(Some(&a))))
            .await
            .into_iter()
            .collect::<Result<_, _>>()
            .expect("three admitted");
        assert!(matches!(
            limits.admit(Some(&a)).await,
            Err(LimitError::UnreadConnection { .. })
        ));
        drop(held);
        assert_eq!(limits.lock().total_unread, 0, "reservations are released");
        assert!(limits.admit(Some(&a)).await.is_ok());
    }

    #[tokio::test]
    async fn calls_in_progress_are_bounded_and_a_departed_peer_is_forgotten() {
        let limits = Limits::new(small());
        let a = name(":1.1");
        let held: Vec<Permit> = futures::future::join_all((0..4).map(|_| limits.admit(Some(&a))))
            .await
            .into_iter()
            .collect::<Result<_, _>>()
            .expect("four admitted");
        assert_eq!(
            limits.admit(Some(&a)).await.err(),
            Some(LimitError::CallsConnection { calls: 4 })
        );
        drop(held);
        let p = limits.admit(Some(&a)).await.expect("admitted");
        p.add(50_000);
        p.finish(0);
        limits.lock().forget(":1.1");
        assert_eq!(limits.lock().total_unread, 0);
        assert_eq!(limits.unread(":1.1"), 0);
    }

    #[tokio::test]
    async fn a_call_without_a_sender_is_not_counted() {
        let limits = Limits::new(small());
        let p = limits.admit(None).await.expect("admitted");
        p.add(1 << 40);
        p.finish(0);
        assert_eq!(limits.lock().total_unread, 0);
    }

    #[test]
    fn dbus_brokers_peer_accounting_gives_each_peers_outgoing_bytes() {
        use zbus::zvariant::{Array, Dict, Signature, StructureBuilder, Value};
        let peer = |name: &str, outgoing: u32| {
            let mut creds = Dict::new(&Signature::Str, &Signature::Variant);
            creds
                .append(
                    Value::from("UnixUserID"),
                    Value::Value(Box::new(Value::U32(0))),
                )
                .expect("appended");
            let mut counters = Dict::new(&Signature::Str, &Signature::U32);
            for (k, v) in [("IncomingBytes", 16), ("OutgoingBytes", outgoing)] {
                counters
                    .append(Value::from(k), Value::from(v))
                    .expect("appended");
            }
            Value::from(
                StructureBuilder::new()
                    .add_field(name.to_string())
                    .append_field(Value::Dict(creds))
                    .append_field(Value::Dict(counters))
                    .build()
                    .expect("a structure"),
            )
        };
        let first = peer(":1.1", 0);
        let sig = first.value_signature().clone();
        let mut peers = Array::new(&sig);
        peers.append(first).expect("appended");
        peers.append(peer(":1.7", 1_600_000)).expect("appended");
        let got = outgoing_bytes_of_peers(&Value::Array(peers));
        assert_eq!(got.get(":1.1"), Some(&0));
        assert_eq!(got.get(":1.7"), Some(&1_600_000));
        assert_eq!(outgoing_bytes_of_peers(&Value::U32(3)), HashMap::new());
    }

    #[tokio::test]
    async fn a_question_that_cannot_be_asked_ends_and_can_start_again() {
        let mut config = small();
        config.probe_after = 1_000;
        let limits = Limits::new(config);
        limits.charge(":1.1", 5_000);
        // No connection: the question is given up at once.
        for _ in 0..100 {
            if !limits.lock().by_connection[":1.1"].probing {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(!limits.lock().by_connection[":1.1"].probing);
        assert_eq!(limits.unread(":1.1"), 5_000, "nothing was settled");
    }
}
