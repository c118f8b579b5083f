//! The D-Bus layer: translates between the engine and the bus, and asks polkit before any
//! change. Nothing here reads the kernel except on an explicit request (GetCounters,
//! GetAllCounters).
//!
//! - [`objects`]: the interfaces and their property cells; [`ipoib`]: CreateChild's settings.
//! - [`counters`]: the port counters of GetCounters and GetAllCounters.
//! - [`view`]: engine state to property values ([`values`]: the conversions the methods share); [`document`]: all of them for one state, as
//!   the JSON document `rdma-managerd show --json` prints (no bus).
//! - [`managed`]: the root's ObjectManager, answering GetManagedObjects from cached encodings.
//! - [`direct`]: the same GetManagedObjects on a Unix socket of its own, without the bus's
//!   relay (peer-to-peer D-Bus, read only).
//! - [`publisher`]: adds, updates and removes objects as the engine publishes, emitting
//!   PropertiesChanged with only what changed (InterfacesAdded/Removed come from the
//!   ObjectManager at the root).
//! - [`polkit`]: authorization of mutating calls; [`audit`]: the log line of each of them.
//! - [`guard`]: wraps every interface: exact argument signatures, no reply where none was asked
//!   for, and the [`limits`] of what one client may have the daemon send it unread.
//! - [`server`]: connection, name and start-up order.
//! - [`state`]: the declarative state (GetState, DiffState, ApplyState, the state directory);
//!   [`health`]: CheckHealth, the node health check against the state's `health` section.
//! - `contract` (tests): the served interfaces compared with the committed XML the client
//!   proxies are generated from.

pub mod audit;
#[cfg(test)]
mod contract;
pub mod counters;
pub mod direct;
pub mod document;
pub mod errors;
pub mod guard;
pub mod health;
pub mod ipoib;
pub mod limits;
pub mod managed;
pub mod network;
pub mod object_paths;
pub mod objects;
pub mod pending;
pub mod polkit;
pub mod publisher;
pub mod qos;
pub mod server;
pub mod signal_guard;
pub mod state;
pub mod values;
mod vf_guid_view;

use std::sync::{Arc, OnceLock};

use rdma_manager_dbus::{Action, Error};
use zbus::message::Header;
use zbus::zvariant::OwnedObjectPath;

use crate::engine::EngineHandle;

/// What every object shares.
pub struct Context {
    engine: OnceLock<EngineHandle>,
    /// Becomes true when start-up is over (the host published and restored, the engine set,
    /// `Startup` false): what calls that arrive while the daemon starts wait for (its name is
    /// owned before the host is read).
    started: tokio::sync::watch::Sender<bool>,
    authorizer: polkit::Authorizer,
    limits: Arc<limits::Limits>,
    changes: pending::PendingChanges,
    /// The last reading of every port's counters (GetAllCounters).
    counters: counters::Shared,
    /// The link tests and their responder (run on callers' tasks, never the engine's).
    link_tests: OnceLock<Arc<crate::linktest::LinkTests>>,
}

impl Context {
    pub fn new(authorizer: polkit::Authorizer, limits: Arc<limits::Limits>) -> Context {
        Context {
            engine: OnceLock::new(),
            started: tokio::sync::watch::Sender::new(false),
            authorizer,
            limits,
            changes: pending::PendingChanges::default(),
            counters: counters::Shared::default(),
            link_tests: OnceLock::new(),
        }
    }

    /// Set once by `server` before start-up ends.
    pub fn set_link_tests(&self, t: Arc<crate::linktest::LinkTests>) {
        let _ = self.link_tests.set(t);
    }

    /// The link tests, once start-up is over (like [`Context::engine`]).
    pub async fn link_tests(&self) -> Result<&Arc<crate::linktest::LinkTests>, Error> {
        self.engine().await?;
        self.link_tests
            .get()
            .ok_or_else(|| Error::Busy("rdma-managerd is still starting; try again".into()))
    }

    /// The per-client bounds every interface is guarded by.
    pub fn limits(&self) -> Arc<limits::Limits> {
        self.limits.clone()
    }

    /// Every port's counters, shared by the calls of one tick.
    pub fn counters(&self) -> &counters::Shared {
        &self.counters
    }

    /// The changes made through NetworkManager that wait for confirmation.
    pub fn changes(&self) -> &pending::PendingChanges {
        &self.changes
    }

    /// The engine, once start-up has read the host and re-applied what was persisted. The
    /// bus name is owned before that (see `server`), so a call that arrives meanwhile (the
    /// call that activated the daemon, say) waits here: it then acts on the complete,
    /// restored model, never on the half-read one, and is never refused for arriving early.
    pub async fn engine(&self) -> Result<&EngineHandle, Error> {
        if let Some(e) = self.engine.get() {
            return Ok(e);
        }
        // The sender lives in `self`, so the wait ends only by start-up ending.
        let _ = self.started_watch().wait_for(|s| *s).await;
        self.engine_now()
    }

    /// The engine if start-up has finished, for work that is skipped rather than delayed
    /// while it has not (a tick's samples, a pending change's expiry).
    pub fn engine_now(&self) -> Result<&EngineHandle, Error> {
        self.engine
            .get()
            .ok_or_else(|| Error::Busy("rdma-managerd is still starting; try again".into()))
    }

    pub fn set_engine(&self, e: EngineHandle) {
        let _ = self.engine.set(e);
    }

    /// Start-up is over: calls waiting in [`Context::engine`] or on [`Context::started_watch`]
    /// go on. After [`Context::set_engine`].
    pub fn mark_started(&self) {
        self.started.send_replace(true);
    }

    /// True once start-up is over (see [`Context::mark_started`]).
    pub fn started_watch(&self) -> tokio::sync::watch::Receiver<bool> {
        self.started.subscribe()
    }

    /// Asks polkit whether the caller may do `action`.
    pub async fn authorize(&self, header: &Header<'_>, action: Action) -> Result<(), Error> {
        self.authorizer.check(header, action).await
    }

    /// Every mutating method runs through this: asks polkit, runs `change` only when allowed,
    /// and logs one [`audit`] line of who asked what and the outcome, refusals included.
    /// `arguments` is the call's `audit_args!`.
    pub async fn change<T>(
        &self,
        header: &Header<'_>,
        action: Action,
        arguments: String,
        change: impl std::future::Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        let uid = match header.sender() {
            Some(sender) => self.limits.uid_of(sender.as_str()).await,
            None => None,
        };
        let request = audit::Request::new(header, uid, action, arguments);
        if let Err(refused) = self.authorize(header, action).await {
            let refused = Err(refused);
            request.record::<T>(&refused, false);
            return refused;
        }
        let outcome = change.await;
        request.record(&outcome, true);
        outcome
    }
}

/// The device index at the end of a `.../Device/<index>` path.
pub fn device_index(path: &OwnedObjectPath) -> u32 {
    path.as_str()
        .rsplit('/')
        .next()
        .and_then(|i| i.parse().ok())
        .unwrap_or(u32::MAX)
}
