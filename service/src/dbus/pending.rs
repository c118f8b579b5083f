//! Changes that wait for confirmation, each an object at `Change/<n>` with the interface
//! `PendingChange`: `Confirm` keeps the change, `RollBack` undoes it now, `Extend` gives more
//! time; when its deadline passes the change is rolled back and the object goes away. A change
//! made through NetworkManager is rolled back by NetworkManager itself (its checkpoint); an
//! applied state (`ApplyState` with a timeout) by the daemon, which runs its undo steps. The root's `Network.PendingChanges` lists them
//! and `Network.ChangeEnded` says how each ended.
//!
//! The objects are not in GetManagedObjects (they are not part of the RDMA model and live
//! for seconds); clients find them through `Network.PendingChanges` or the path a change
//! method returned.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rdma_manager_dbus::{Action, Error};
use tracing::{info, warn};
use zbus::message::Header;
use zbus::object_server::SignalEmitter;
use zbus::zvariant::{OwnedObjectPath, Value};

use super::guard::Guarded;
use super::state::TIMEOUT_RANGE;
use super::Context;
use crate::engine::{IpPending, NetplanPending, NetworkdPending, NmPending, StatePending};

/// How a pending change ended, as `Network.ChangeEnded` says it.
pub const CONFIRMED: &str = "confirmed";
pub const ROLLED_BACK: &str = "rolled-back";
pub const TIMED_OUT: &str = "timed-out";

/// What a pending change undoes.
#[derive(Debug, Clone)]
pub enum Pending {
    /// A change NetworkManager made inside its checkpoint.
    Nm(NmPending),
    /// An applied state: the daemon's undo steps.
    State(StatePending),
    /// A change made through systemd-networkd: the daemon puts the file back.
    Networkd(NetworkdPending),
    /// A change netplan is trying: netplan rolls it back (`Cancel`), or by itself when its
    /// own timer runs out.
    Netplan(NetplanPending),
}

#[derive(Debug, Clone)]
struct Live {
    pending: Pending,
    /// The interface the change is about, and what it changed, for people.
    interface: String,
    description: String,
    /// What Confirm, RollBack and Extend ask polkit for.
    action: Action,
    deadline: SystemTime,
}

/// The changes waiting for confirmation.
#[derive(Default)]
pub struct PendingChanges {
    conn: OnceLock<zbus::Connection>,
    next: AtomicU32,
    live: Mutex<BTreeMap<u32, Live>>,
}

fn micros(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl PendingChanges {
    pub fn set_connection(&self, conn: &zbus::Connection) {
        let _ = self.conn.set(conn.clone());
    }

    fn live(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, Live>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The objects of every pending change.
    pub fn paths(&self) -> Vec<OwnedObjectPath> {
        self.live()
            .keys()
            .map(|id| super::values::object_path(rdma_manager_dbus::change_path(*id)))
            .collect()
    }

    /// Publishes a change NetworkManager made and watches its deadline; returns its object.
    pub async fn add(
        &self,
        ctx: &Arc<Context>,
        pending: NmPending,
    ) -> Result<OwnedObjectPath, Error> {
        let live = Live {
            interface: pending.interface.clone(),
            description: pending.description.clone(),
            action: Action::ManageIp,
            deadline: SystemTime::now() + Duration::from_secs(u64::from(pending.timeout_secs)),
            pending: Pending::Nm(pending),
        };
        self.publish(ctx, live).await
    }

    /// Publishes a change of IP settings, whichever IP manager made it.
    pub async fn add_ip(
        &self,
        ctx: &Arc<Context>,
        pending: IpPending,
    ) -> Result<OwnedObjectPath, Error> {
        let (interface, description, timeout_secs, pending) = match pending {
            IpPending::Nm(p) => return self.add(ctx, p).await,
            IpPending::Networkd(p) => (
                p.interface.clone(),
                p.description.clone(),
                p.timeout_secs,
                Pending::Networkd(p),
            ),
            IpPending::Netplan(p) => (
                p.interface.clone(),
                p.description.clone(),
                p.timeout_secs,
                Pending::Netplan(p),
            ),
        };
        let live = Live {
            interface,
            description,
            action: Action::ManageIp,
            deadline: SystemTime::now() + Duration::from_secs(u64::from(timeout_secs)),
            pending,
        };
        self.publish(ctx, live).await
    }

    /// Publishes an applied state that stays in force for `timeout_secs` unless confirmed;
    /// Confirm, RollBack and Extend ask polkit for `action`.
    pub async fn add_state(
        &self,
        ctx: &Arc<Context>,
        pending: StatePending,
        timeout_secs: u32,
        action: Action,
    ) -> Result<OwnedObjectPath, Error> {
        let live = Live {
            interface: rdma_manager_dbus::BUS_NAME.to_string(),
            description: pending.description.clone(),
            action,
            deadline: SystemTime::now() + Duration::from_secs(u64::from(timeout_secs)),
            pending: Pending::State(pending),
        };
        self.publish(ctx, live).await
    }

    async fn publish(&self, ctx: &Arc<Context>, live: Live) -> Result<OwnedObjectPath, Error> {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let path = rdma_manager_dbus::change_path(id);
        let (interface, description) = (live.interface.clone(), live.description.clone());
        let timeout_secs = live
            .deadline
            .duration_since(SystemTime::now())
            .map(|d| d.as_secs())
            .unwrap_or(0);
        self.live().insert(id, live);
        if let Some(conn) = self.conn.get() {
            let object = PendingChangeObject {
                id,
                ctx: ctx.clone(),
            };
            if let Err(e) = conn
                .object_server()
                .at(path.as_str(), Guarded::new(object, ctx.limits()))
                .await
            {
                warn!(%path, error = %e, "could not serve a pending change");
            }
        }
        self.announce().await;
        let watcher = ctx.clone();
        tokio::spawn(async move { watch_deadline(watcher, id).await });
        info!(%path, %interface, change = %description, timeout_secs,
            "change pending confirmation");
        Ok(super::values::object_path(path))
    }

    /// Ends a change: its object goes, `ChangeEnded` says how.
    pub async fn end(&self, id: u32, outcome: &str) {
        let Some(live) = self.live().remove(&id) else {
            return;
        };
        let path = rdma_manager_dbus::change_path(id);
        info!(%path, interface = %live.interface, change = %live.description,
            outcome, "pending change ended");
        if let Some(conn) = self.conn.get() {
            let _ = conn
                .object_server()
                .remove::<Guarded<PendingChangeObject>, _>(path.as_str())
                .await;
            if let Ok(emitter) = SignalEmitter::new(conn, rdma_manager_dbus::ROOT_PATH) {
                let change = super::values::object_path(path.clone());
                if let Err(e) =
                    super::network::NetworkObject::change_ended(&emitter, change, outcome).await
                {
                    warn!(%path, error = %e, "could not emit ChangeEnded");
                }
            }
        }
        self.announce().await;
    }

    /// Emits `Network.PendingChanges`.
    async fn announce(&self) {
        let Some(conn) = self.conn.get() else {
            return;
        };
        let Ok(emitter) = SignalEmitter::new(conn, rdma_manager_dbus::ROOT_PATH) else {
            return;
        };
        let Ok(iface) = zbus::names::InterfaceName::try_from(rdma_manager_dbus::NETWORK_INTERFACE)
        else {
            return;
        };
        let map: HashMap<&str, Value<'_>> =
            HashMap::from([("PendingChanges", Value::from(self.paths()))]);
        if let Err(e) =
            zbus::fdo::Properties::properties_changed(&emitter, iface, map, Cow::Borrowed(&[]))
                .await
        {
            warn!(error = %e, "could not emit PendingChanges");
        }
    }

    fn get(&self, id: u32) -> Result<Live, Error> {
        self.live().get(&id).cloned().ok_or_else(|| {
            Error::NotFound(format!(
                "change {id} is no longer pending (confirmed, rolled back or timed out)"
            ))
        })
    }

    fn set_deadline(&self, id: u32, deadline: SystemTime) {
        if let Some(l) = self.live().get_mut(&id) {
            l.deadline = deadline;
        }
    }

    fn deadline(&self, id: u32) -> Option<SystemTime> {
        self.live().get(&id).map(|l| l.deadline)
    }
}

/// Waits for a change's deadline (which `Extend` may move); when it passes, NetworkManager
/// has rolled its change back by itself (the object goes and the owners follow), and an
/// applied state is undone by its undo steps.
async fn watch_deadline(ctx: Arc<Context>, id: u32) {
    loop {
        let Some(deadline) = ctx.changes().deadline(id) else {
            return;
        };
        match deadline.duration_since(SystemTime::now()) {
            Ok(left) if !left.is_zero() => tokio::time::sleep(left).await,
            _ => break,
        }
    }
    let Ok(live) = ctx.changes().get(id) else {
        return;
    };
    match &live.pending {
        Pending::Nm(pending) => {
            // NetworkManager's own timer runs from the same moment; give it a moment to
            // finish.
            tokio::time::sleep(Duration::from_secs(1)).await;
            if ctx.changes().get(id).is_err() {
                return;
            }
            if let Ok(engine) = ctx.engine_now() {
                engine.nm_rolled_back(pending).await;
            }
        }
        Pending::State(pending) => {
            // Taken off the list first: a Confirm arriving now finds it gone.
            ctx.changes().end(id, TIMED_OUT).await;
            if let Ok(engine) = ctx.engine_now() {
                let undone = engine.undo_state_steps(&pending.steps).await;
                info!(change = %pending.description, %undone, "applied state not confirmed in time");
            }
            return;
        }
        Pending::Networkd(pending) => {
            ctx.changes().end(id, TIMED_OUT).await;
            if let Ok(engine) = ctx.engine_now() {
                let undone = engine.networkd_undo(pending).await;
                info!(change = %pending.description, %undone, "networkd change not confirmed in time");
            }
            return;
        }
        Pending::Netplan(pending) => {
            ctx.changes().end(id, TIMED_OUT).await;
            if let Ok(engine) = ctx.engine_now() {
                let undone = engine.netplan_undo(pending).await;
                info!(change = %pending.description, %undone, "netplan change not confirmed in time");
            }
            return;
        }
    }
    ctx.changes().end(id, TIMED_OUT).await;
}

/// `org.rdmamanager.RdmaManager1.PendingChange` at `Change/<n>`.
pub struct PendingChangeObject {
    id: u32,
    ctx: Arc<Context>,
}

impl PendingChangeObject {
    /// What this change's Confirm, RollBack and Extend ask polkit for.
    fn action(&self) -> Action {
        self.ctx
            .changes()
            .get(self.id)
            .map(|l| l.action)
            .unwrap_or(Action::ManageIp)
    }

    /// The interface's introspection XML, as a live object at one level below `<node>`
    /// gives it: the committed XML is checked against it, since no such object exists
    /// without a change.
    pub fn introspection(ctx: Arc<Context>) -> String {
        let mut out = String::new();
        zbus::object_server::Interface::introspect_to_writer(
            &PendingChangeObject { id: 0, ctx },
            &mut out,
            2,
        );
        out
    }
}

#[zbus::interface(name = "org.rdmamanager.RdmaManager1.PendingChange")]
impl PendingChangeObject {
    /// The interface the change is about.
    #[zbus(property, name = "Interface")]
    fn interface(&self) -> String {
        self.ctx
            .changes()
            .get(self.id)
            .map(|l| l.interface)
            .unwrap_or_default()
    }

    /// What was changed, in words.
    #[zbus(property, name = "Description")]
    fn description(&self) -> String {
        self.ctx
            .changes()
            .get(self.id)
            .map(|l| l.description)
            .unwrap_or_default()
    }

    /// NetworkManager's checkpoint (an object path on NetworkManager's service).
    #[zbus(property, name = "Checkpoint")]
    fn checkpoint(&self) -> String {
        match self.ctx.changes().get(self.id).map(|l| l.pending) {
            Ok(Pending::Nm(p)) => p.checkpoint.0,
            _ => String::new(),
        }
    }

    /// When NetworkManager rolls the change back unless it is confirmed, in microseconds
    /// since the Unix epoch.
    #[zbus(property, name = "Deadline")]
    fn deadline(&self) -> u64 {
        self.ctx
            .changes()
            .deadline(self.id)
            .map(micros)
            .unwrap_or(0)
    }

    /// Keeps the change: NetworkManager forgets its checkpoint.
    async fn confirm(&self, #[zbus(header)] header: Header<'_>) -> Result<(), Error> {
        let arguments = crate::audit_args![];
        self.ctx
            .change(&header, self.action(), arguments, async {
                let live = self.ctx.changes().get(self.id)?;
                match &live.pending {
                    Pending::Nm(pending) => self
                        .ctx
                        .engine()
                        .await?
                        .nm_confirm(pending)
                        .await
                        .map_err(super::errors::op_error)?,
                    Pending::Netplan(pending) => self
                        .ctx
                        .engine()
                        .await?
                        .netplan_confirm(pending)
                        .await
                        .map_err(super::errors::op_error)?,
                    Pending::State(_) | Pending::Networkd(_) => {}
                }
                self.ctx.changes().end(self.id, CONFIRMED).await;
                Ok(())
            })
            .await
    }

    /// Undoes the change now.
    async fn roll_back(&self, #[zbus(header)] header: Header<'_>) -> Result<(), Error> {
        let arguments = crate::audit_args![];
        self.ctx
            .change(&header, self.action(), arguments, async {
                let live = self.ctx.changes().get(self.id)?;
                let engine = self.ctx.engine().await?;
                let r = match &live.pending {
                    Pending::Nm(pending) => engine
                        .nm_roll_back(pending)
                        .await
                        .map_err(super::errors::op_error),
                    Pending::State(pending) => {
                        // Off the list first: its deadline must not undo it a second time.
                        self.ctx.changes().end(self.id, ROLLED_BACK).await;
                        let undone = engine.undo_state_steps(&pending.steps).await;
                        info!(change = %pending.description, %undone, "applied state rolled back");
                        return Ok(());
                    }
                    Pending::Netplan(pending) => {
                        self.ctx.changes().end(self.id, ROLLED_BACK).await;
                        let undone = engine.netplan_undo(pending).await;
                        info!(change = %pending.description, %undone, "netplan change rolled back");
                        return Ok(());
                    }
                    Pending::Networkd(pending) => {
                        self.ctx.changes().end(self.id, ROLLED_BACK).await;
                        let undone = engine.networkd_undo(pending).await;
                        info!(change = %pending.description, %undone, "networkd change rolled back");
                        return Ok(());
                    }
                };
                self.ctx.changes().end(self.id, ROLLED_BACK).await;
                r
            })
            .await
    }

    /// Gives `seconds` (10 to 3600) from now to confirm.
    async fn extend(&self, seconds: u32, #[zbus(header)] header: Header<'_>) -> Result<(), Error> {
        let arguments = crate::audit_args![seconds];
        self.ctx
            .change(&header, self.action(), arguments, async {
                let live = self.ctx.changes().get(self.id)?;
                if seconds == 0 {
                    return Err(Error::InvalidArgument(
                        "0 s would leave the change pending forever; give 10 to 3600".into(),
                    ));
                }
                match &live.pending {
                    Pending::Nm(pending) => self
                        .ctx
                        .engine()
                        .await?
                        .nm_extend(&pending.checkpoint, seconds)
                        .await
                        .map_err(super::errors::op_error)?,
                    Pending::State(_) | Pending::Networkd(_)
                        if !TIMEOUT_RANGE.contains(&seconds) =>
                    {
                        return Err(Error::InvalidArgument(format!(
                            "{seconds} s is outside 10 to 3600"
                        )))
                    }
                    Pending::State(_) | Pending::Networkd(_) => {}
                    Pending::Netplan(_) => {
                        return Err(Error::NotSupported(
                            "netplan's try runs to the timeout it was given and cannot be \
                             extended: confirm the change, or roll it back and make it again \
                             with a longer timeout"
                                .into(),
                        ))
                    }
                }
                let deadline = SystemTime::now() + Duration::from_secs(u64::from(seconds));
                self.ctx.changes().set_deadline(self.id, deadline);
                if let Some(conn) = self.ctx.changes().conn.get() {
                    let path = rdma_manager_dbus::change_path(self.id);
                    if let (Ok(emitter), Ok(iface)) = (
                        SignalEmitter::new(conn, path.clone()),
                        zbus::names::InterfaceName::try_from(
                            rdma_manager_dbus::PENDING_CHANGE_INTERFACE,
                        ),
                    ) {
                        let map: HashMap<&str, Value<'_>> =
                            HashMap::from([("Deadline", Value::from(micros(deadline)))]);
                        let _ = zbus::fdo::Properties::properties_changed(
                            &emitter,
                            iface,
                            map,
                            Cow::Borrowed(&[]),
                        )
                        .await;
                    }
                }
                Ok(())
            })
            .await
    }
}
