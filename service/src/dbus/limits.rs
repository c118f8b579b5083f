//! What one client may make the daemon send it without reading it.
//!
//! The bus queues a reply until its recipient reads it, and dbus-daemon charges every queued
//! message to its *sender's* incoming quota (127 MiB on the system bus) until it is delivered.
//! A client that sends calls and never reads their replies therefore fills rdma-managerd's
//! quota; the bus then stops reading from rdma-managerd, which answers nobody and emits no
//! signals until that client reads or leaves. A GetManagedObjects of a large host is 1.5 MB,
//! so under a hundred unread calls are enough.
//!
//! The daemon cannot see the bus's queues, but it can learn when a client has read: D-Bus
//! delivers messages to a connection in order, and every D-Bus library answers
//! `org.freedesktop.DBus.Peer.Ping` by itself when it reads it. So each connection has a book
//! of reply bytes sent to it that it has not been seen to read; once that passes
//! [`LimitConfig::probe_after`], a Ping is sent behind the replies, and its answer (any answer
//! from the peer, an error too) settles everything sent before it. New calls are refused with
//! `org.freedesktop.DBus.Error.LimitsExceeded` while a connection, all connections of its uid,
//! or all clients together have more unread than their bound, and while a connection has too
//! many calls in progress. Nothing else is refused, and a client that reads its replies never
//! meets a limit: the bounds are far above what reading once and then following signals needs.
//!
//! Calls admitted together must not all pass a bound none of them has reached yet: each call
//! reserves, when admitted, as much as the largest reply the daemon has sent (or can send: the
//! model's size is noted just after start), and the reservation is replaced by the reply's real size
//! when the call ends.
//!
//! A reply's bytes are charged when the handler has sent it (methods) or computed it
//! (properties, whose reply zbus sends just after): a Ping sent at that moment may overtake
//! replies of other calls still being sent, which can only make the book a few replies too
//! low, never stop a client that reads.

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
    /// Unread bytes after which the connection is asked to show that it reads (a Ping).
    pub probe_after: u64,
    /// How long a Ping may go unanswered before the next one is sent.
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
            probe_timeout: Duration::from_secs(25),
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
    /// Whether a Ping is on its way.
    probing: bool,
}

#[derive(Debug, Default)]
struct Books {
    by_connection: HashMap<String, Book>,
    /// Unread and reserved bytes of every connection.
    total_unread: u64,
    /// The largest reply sent so far: what a call in progress may still send.
    largest_reply: u64,
}

impl Books {
    /// Unread and reserved bytes, and calls in progress, of every connection of `uid`.
    fn uid_sums(&self, uid: u32) -> (u64, u32) {
        self.by_connection
            .values()
            .filter(|b| b.uid == Some(uid))
            .fold((0, 0), |(u, c), b| (u + b.unread + b.reserved, c + b.calls))
    }

    fn settle(&mut self, sender: &str, bytes: u64) {
        if let Some(b) = self.by_connection.get_mut(sender) {
            let n = bytes.min(b.unread);
            b.unread -= n;
            self.total_unread -= n;
        }
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
        let verdict = self.check_and_count(sender);
        if verdict.is_err() {
            // Refused for unread replies: make sure the client is asked whether it has read
            // them, so that a client that reads meanwhile is admitted again.
            self.probe_if_due(sender);
        }
        verdict
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
            let (uid_unread, uid_calls) = books.uid_sums(uid);
            if uid_calls >= c.calls_per_uid {
                return Err(LimitError::CallsUid {
                    uid,
                    calls: uid_calls,
                });
            }
            if uid_unread + reserve > c.unread_per_uid {
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

    /// Starts a Ping to `sender` if enough is unread and none is on its way.
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
        tokio::spawn(async move { this.probe(sender).await });
    }

    /// Pings `sender` until what it has not read is below the probe threshold, it leaves, or
    /// the daemon's connection is gone. Each answer settles what was unread when it was sent.
    async fn probe(self: Arc<Self>, sender: String) {
        loop {
            let Some(covered) = self.lock().by_connection.get(&sender).map(|b| b.unread) else {
                return;
            };
            let verdict = match self.connection() {
                Some(conn) => {
                    let ping = conn.call_method(
                        Some(sender.as_str()),
                        "/",
                        Some("org.freedesktop.DBus.Peer"),
                        "Ping",
                        &(),
                    );
                    ping_verdict(tokio::time::timeout(self.config.probe_timeout, ping).await)
                }
                None => Ping::Stop,
            };
            let mut books = self.lock();
            match verdict {
                Ping::Read => books.settle(&sender, covered),
                Ping::Gone => {
                    books.forget(&sender);
                    return;
                }
                Ping::Unanswered => {}
                Ping::Stop => {}
            }
            let Some(b) = books.by_connection.get_mut(&sender) else {
                return;
            };
            // Asked again only after a Ping that went unanswered for the whole timeout: a
            // failure of the daemon's own connection must not turn into a loop of Pings.
            if b.unread < self.config.probe_after
                || !matches!(verdict, Ping::Unanswered | Ping::Read)
            {
                b.probing = false;
                return;
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

/// What a Ping to a client told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ping {
    /// The peer answered (a method return, or an error of its own): it read everything sent
    /// before the Ping.
    Read,
    /// The bus says the peer is gone.
    Gone,
    /// No answer within the timeout (or the bus's NoReply): still unread.
    Unanswered,
    /// The daemon's own connection failed: stop asking.
    Stop,
}

fn ping_verdict(answer: Result<zbus::Result<zbus::Message>, tokio::time::error::Elapsed>) -> Ping {
    const GONE: [&str; 2] = [
        "org.freedesktop.DBus.Error.ServiceUnknown",
        "org.freedesktop.DBus.Error.NameHasNoOwner",
    ];
    match answer {
        Ok(Ok(_)) => Ping::Read,
        Ok(Err(zbus::Error::MethodError(name, _, _))) if GONE.contains(&name.as_str()) => {
            Ping::Gone
        }
        Ok(Err(zbus::Error::MethodError(name, _, _)))
            if name.as_str() == "org.freedesktop.DBus.Error.NoReply" =>
        {
            Ping::Unanswered
        }
        Ok(Err(zbus::Error::MethodError(..))) => Ping::Read,
        Ok(Err(_)) => Ping::Stop,
        Err(_) => Ping::Unanswered,
    }
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

    fn error(name: &str) -> zbus::Error {
        let msg = zbus::Message::method_call("/", "Ping")
            .and_then(|b| b.build(&()))
            .expect("a message");
        let name = zbus::names::OwnedErrorName::try_from(name).expect("an error name");
        zbus::Error::MethodError(name, None, msg)
    }

    #[tokio::test]
    async fn what_a_ping_tells() {
        let elapsed = tokio::time::timeout(Duration::ZERO, std::future::pending::<()>())
            .await
            .expect_err("times out");
        assert_eq!(ping_verdict(Err(elapsed)), Ping::Unanswered);
        let reply = zbus::Message::method_call("/", "Ping")
            .and_then(|b| b.build(&()))
            .expect("a message");
        assert_eq!(ping_verdict(Ok(Ok(reply))), Ping::Read);
        let own = error("org.freedesktop.DBus.Error.UnknownMethod");
        assert_eq!(
            ping_verdict(Ok(Err(own))),
            Ping::Read,
            "the peer's own error"
        );
        for gone in [
            "org.freedesktop.DBus.Error.ServiceUnknown",
            "org.freedesktop.DBus.Error.NameHasNoOwner",
        ] {
            assert_eq!(ping_verdict(Ok(Err(error(gone)))), Ping::Gone);
        }
        let no_reply = error("org.freedesktop.DBus.Error.NoReply");
        assert_eq!(ping_verdict(Ok(Err(no_reply))), Ping::Unanswered);
        // The daemon's own connection failing stops the probe instead of looping.
        let io = zbus::Error::InputOutput(std::sync::Arc::new(std::io::Error::other("gone")));
        assert_eq!(ping_verdict(Ok(Err(io))), Ping::Stop);
    }

    #[tokio::test]
    async fn a_probe_that_cannot_ping_ends_and_can_start_again() {
        let mut config = small();
        config.probe_after = 1_000;
        let limits = Limits::new(config);
        limits.charge(":1.1", 5_000);
        // No connection: the probe stops at once and says so.
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
