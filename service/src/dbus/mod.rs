//! The D-Bus layer: translates between the engine and the bus, and asks polkit before any
//! change. Nothing here reads the kernel except on an explicit request (GetCounters).
//!
//! - [`objects`]: the interfaces and their property cells; [`ipoib`]: CreateChild's settings.
//! - [`view`]: engine state to property values ([`values`]: the conversions the methods share); [`document`]: all of them for one state, as
//!   the JSON document `rdma-managerd show --json` prints (no bus).
//! - [`managed`]: the root's ObjectManager, answering GetManagedObjects from cached encodings.
//! - [`publisher`]: adds, updates and removes objects as the engine publishes, emitting
//!   PropertiesChanged with only what changed (InterfacesAdded/Removed come from the
//!   ObjectManager at the root).
//! - [`polkit`]: authorization of mutating calls; [`audit`]: the log line of each of them.
//! - [`guard`]: wraps every interface: exact argument signatures, no reply where none was asked
//!   for, and the [`limits`] of what one client may have the daemon send it unread.
//! - [`server`]: connection, name and start-up order.

pub mod audit;
pub mod document;
pub mod errors;
pub mod guard;
pub mod ipoib;
pub mod limits;
pub mod managed;
pub mod network;
pub mod objects;
pub mod pending;
pub mod polkit;
pub mod publisher;
pub mod server;
pub mod values;
pub mod view;

use std::sync::{Arc, OnceLock};

use rdma_manager_dbus::{Action, Error};
use zbus::message::Header;
use zbus::zvariant::OwnedObjectPath;

use crate::engine::EngineHandle;

/// What every object shares.
pub struct Context {
    engine: OnceLock<EngineHandle>,
    authorizer: polkit::Authorizer,
    limits: Arc<limits::Limits>,
    changes: pending::PendingChanges,
}

impl Context {
    pub fn new(authorizer: polkit::Authorizer, limits: Arc<limits::Limits>) -> Context {
        Context {
            engine: OnceLock::new(),
            authorizer,
            limits,
            changes: pending::PendingChanges::default(),
        }
    }

    /// The per-client bounds every interface is guarded by.
    pub fn limits(&self) -> Arc<limits::Limits> {
        self.limits.clone()
    }

    /// The engine; set before the bus name is requested, so callers always find it.
    /// The changes made through NetworkManager that wait for confirmation.
    pub fn changes(&self) -> &pending::PendingChanges {
        &self.changes
    }

    pub fn engine(&self) -> Result<&EngineHandle, Error> {
        self.engine
            .get()
            .ok_or_else(|| Error::Busy("rdma-managerd is still starting; try again".into()))
    }

    pub fn set_engine(&self, e: EngineHandle) {
        let _ = self.engine.set(e);
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
