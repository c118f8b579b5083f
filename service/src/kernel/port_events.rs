//! uverbs asynchronous events of hardware ports: what tells the daemon that a port's state,
//! LIDs, SM, P_Keys or GIDs changed, so that the 1 Hz poll need not read `state`,
//! `phys_state`, `lid` and `sm_lid` of every port every second (on an HCA each of those
//! files is a query of the device's firmware).
//!
//! A device's events come on the async event file of a user context (`ibv_open_device`,
//! `ibv_get_async_event`): the daemon keeps one context per watched device, two descriptors
//! (the uverbs command file and the event file), and waits on the event file in the runtime.
//!
//! Which devices: hardware whose driver lets go of user contexts when the device is removed
//! (`disassociate_ucontext`: mlx5, mlx4, hns). A kept context of a device whose driver does
//! not (rxe, siw, and others) makes the kernel wait for it to be closed before the device can
//! be removed: measured in the lab on rxe, `rdma link delete` hung until the context was
//! closed (rxe has no `disassociate_ucontext`). Soft devices need
//! no events anyway: their port state follows their netdev, whose rtnetlink events re-read
//! them. Devices past the descriptor budget ([`context_budget`]) are not watched either; the
//! poll reads their ports' state every second, as it does for every unwatched device.
//!
//! The kernel raises PORT_ACTIVE and PORT_ERR only when the logical state moves (to or from
//! ACTIVE, and on mlx5 to INIT): a physical state that moves alone (Polling to Disabled
//! while the port stays DOWN) has no event. The poll therefore still reads a watched port's
//! state and LIDs, once every `lid_ticks` polls instead of every poll (see `LidTurn`).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tokio::sync::mpsc::UnboundedSender;

use super::verbs::{self, DeviceList, OpenContext, Verbs};
use super::verbs_providers::provider_for;
use super::HostEvent;
use crate::model::DeviceKind;

/// What a port's event says changed (`enum ibv_event_type`); the daemon re-reads the device
/// whatever it says, and names it in its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PortEventKind {
    /// IBV_EVENT_PORT_ACTIVE: the port became ACTIVE.
    Active,
    /// IBV_EVENT_PORT_ERR: the port left ACTIVE (or, on mlx5, moved to INIT).
    Err,
    LidChange,
    PkeyChange,
    SmChange,
    ClientReregister,
    GidChange,
    /// Any other event type, by number.
    Other(u32),
}

impl PortEventKind {
    /// The kind of an `ibv_event_type`.
    pub fn from_ibv(event_type: u32) -> PortEventKind {
        match event_type {
            verbs::IBV_EVENT_PORT_ACTIVE => PortEventKind::Active,
            verbs::IBV_EVENT_PORT_ERR => PortEventKind::Err,
            verbs::IBV_EVENT_LID_CHANGE => PortEventKind::LidChange,
            verbs::IBV_EVENT_PKEY_CHANGE => PortEventKind::PkeyChange,
            verbs::IBV_EVENT_SM_CHANGE => PortEventKind::SmChange,
            verbs::IBV_EVENT_CLIENT_REREGISTER => PortEventKind::ClientReregister,
            verbs::IBV_EVENT_GID_CHANGE => PortEventKind::GidChange,
            other => PortEventKind::Other(other),
        }
    }

    /// Whether the event is about a port (its element is a port number): the port events of
    /// `ibv_event_type`. Device-wide (DEVICE_FATAL) and QP, CQ and SRQ events are not.
    pub fn is_port_event(event_type: u32) -> bool {
        matches!(
            event_type,
            verbs::IBV_EVENT_PORT_ACTIVE
                | verbs::IBV_EVENT_PORT_ERR
                | verbs::IBV_EVENT_LID_CHANGE
                | verbs::IBV_EVENT_PKEY_CHANGE
                | verbs::IBV_EVENT_SM_CHANGE
                | verbs::IBV_EVENT_CLIENT_REREGISTER
                | verbs::IBV_EVENT_GID_CHANGE
        )
    }
}

/// The libibverbs providers whose kernel drivers let go of user contexts when their device
/// is removed (`ib_device_ops.disassociate_ucontext` in mlx5, mlx4 and hns since before
/// Linux 5.4): keeping a context open on their devices never holds up a removal.
pub const DISASSOCIATING_PROVIDERS: &[&str] = &["mlx5", "mlx4", "hns"];

/// Whether a device's port events may be watched: hardware whose driver disassociates.
pub fn watchable(kind: DeviceKind, driver: Option<&str>) -> bool {
    kind == DeviceKind::Hardware
        && provider_for(kind, driver).is_some_and(|p| DISASSOCIATING_PROVIDERS.contains(&p))
}

/// How many device contexts may be kept under a soft open-file limit of `soft`: two
/// descriptors each, an eighth of the limit in all (the port poll keeps up to a quarter,
/// see `rlimit::keep_open_budget`), so 64 devices at the default soft limit of 1024 and
/// every device of any real host once the daemon has raised it.
pub fn context_budget(soft: u64) -> usize {
    usize::try_from(soft / 16).unwrap_or(usize::MAX)
}

/// The real host's watch: one task per watched device, which owns the device's context and
/// forwards its port events; dropping the task's handle (abort) closes the context.
#[derive(Default)]
pub struct PortEventWatch {
    /// The subscription the events go to; set by `subscribe`.
    events: Mutex<Option<UnboundedSender<HostEvent>>>,
    /// The tasks of the devices watched, by name.
    watched: Mutex<HashMap<String, tokio::task::AbortHandle>>,
    /// Devices found not watchable (kind or driver), by name, so that they are not looked at
    /// again at every change of the device set; dropped with the name.
    refused: Mutex<BTreeSet<String>>,
}

impl PortEventWatch {
    /// Where events go from now on (the subscription's sender).
    pub fn send_to(&self, tx: UnboundedSender<HostEvent>) {
        *lock(&self.events) = Some(tx);
    }

    /// Watches the named devices that can be (see [`watchable`]), within `budget` contexts,
    /// and stops watching the others. `origin` tells a device's kind and parent driver (a
    /// blocking sysfs read); `list` gives libibverbs' device list (blocking). Returns the
    /// devices watched.
    pub async fn watch<O, L>(
        &self,
        devices: &BTreeSet<String>,
        budget: usize,
        origin: O,
        list: L,
    ) -> BTreeSet<String>
    where
        O: Fn(&str) -> (DeviceKind, Option<String>) + Send + 'static,
        L: FnOnce(&BTreeSet<String>) -> Option<Arc<DeviceList<'static>>> + Send + 'static,
    {
        let Some(tx) = lock(&self.events).clone() else {
            return BTreeSet::new();
        };
        let new: Vec<String> = {
            let mut watched = lock(&self.watched);
            watched.retain(|name, task| {
                let keep = devices.contains(name) && !task.is_finished();
                if !keep {
                    task.abort();
                }
                keep
            });
            let mut refused = lock(&self.refused);
            refused.retain(|name| devices.contains(name));
            devices
                .iter()
                .filter(|d| !watched.contains_key(*d) && !refused.contains(*d))
                .take(budget.saturating_sub(watched.len()))
                .cloned()
                .collect()
        };
        if !new.is_empty() {
            let opened = tokio::task::spawn_blocking(move || open_contexts(new, origin, list))
                .await
                .unwrap_or_default();
            let mut watched = lock(&self.watched);
            let mut refused = lock(&self.refused);
            for (name, ctx) in opened {
                match ctx {
                    Some(ctx) => {
                        let task = spawn_forward(ctx, name.clone(), tx.clone());
                        watched.insert(name, task.abort_handle());
                    }
                    None => {
                        refused.insert(name);
                    }
                }
            }
        }
        lock(&self.watched).keys().cloned().collect()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Opens a context for each watchable device of `names`: `None` for one that is not
/// watchable (kept as refused); one that could not be opened now is left out (tried again at
/// the next change of the device set).
fn open_contexts<O, L>(
    names: Vec<String>,
    origin: O,
    list: L,
) -> Vec<(String, Option<OpenContext<'static>>)>
where
    O: Fn(&str) -> (DeviceKind, Option<String>),
    L: FnOnce(&BTreeSet<String>) -> Option<Arc<DeviceList<'static>>>,
{
    let mut out = Vec::new();
    let mut wanted = BTreeSet::new();
    for name in names {
        let (kind, driver) = origin(&name);
        if watchable(kind, driver.as_deref()) {
            wanted.insert(name);
        } else {
            out.push((name, None));
        }
    }
    if wanted.is_empty() || Verbs::shared().is_none() {
        return out;
    }
    let Some(list) = list(&wanted) else {
        return out;
    };
    for name in wanted {
        match list.open(&name).and_then(|ctx| {
            ctx.set_events_nonblocking()?;
            Ok(ctx)
        }) {
            Ok(ctx) => out.push((name, Some(ctx))),
            Err(e) => tracing::debug!(device = %name, error = %e, "port events not watched"),
        }
    }
    out
}

/// The event file's descriptor, for the runtime's reactor (the context owns it).
struct EventFd(std::os::fd::RawFd);

impl std::os::fd::AsRawFd for EventFd {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0
    }
}

/// A watched device: the reactor's registration before the context, so that the descriptor
/// leaves the reactor before the context closes it (fields drop in order).
struct Watched {
    fd: tokio::io::unix::AsyncFd<EventFd>,
    ctx: OpenContext<'static>,
}

/// Forwards the port events of a device's context (its async event file non-blocking, see
/// `OpenContext::set_events_nonblocking`) to `tx` as [`HostEvent::RdmaPortEvent`], on a task
/// of the runtime, until the event file fails or the task is aborted (which closes the
/// context).
pub fn spawn_forward(
    ctx: OpenContext<'static>,
    name: String,
    tx: UnboundedSender<HostEvent>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(forward(ctx, name, tx))
}

/// Forwards a device's port events until its event file fails or the task is aborted.
async fn forward(ctx: OpenContext<'static>, name: String, tx: UnboundedSender<HostEvent>) {
    // SAFETY: the descriptor is the context's event file, open until the context closes,
    // which it does only after the registration is dropped (`Watched`'s field order); the
    // context is never closed while this task runs.
    let registered = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(
            EventFd(ctx.async_fd()),
            tokio::io::Interest::READABLE,
        )
    };
    let fd = match registered {
        Ok(fd) => fd,
        Err(e) => {
            tracing::debug!(device = %name, error = %e, "port events not watched");
            return;
        }
    };
    let mut w = Watched { fd, ctx };
    loop {
        let mut ready = match w.fd.readable().await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(device = %name, error = %e, "port events of the device lost");
                return;
            }
        };
        loop {
            match w.ctx.next_event() {
                Ok(Some((event_type, element))) => {
                    let event = if PortEventKind::is_port_event(event_type) {
                        HostEvent::RdmaPortEvent {
                            name: name.clone(),
                            port: element,
                            event: PortEventKind::from_ibv(event_type),
                        }
                    } else {
                        // DEVICE_FATAL and the like: the whole device is read again.
                        HostEvent::RdmaChanged { name: name.clone() }
                    };
                    if tx.send(event).is_err() {
                        return;
                    }
                }
                Ok(None) => {
                    ready.clear_ready();
                    break;
                }
                Err(e) => {
                    // The device went (its contexts disassociated): its removal is read
                    // from its own events; the context closes here.
                    tracing::debug!(device = %name, error = %e, "port events of the device ended");
                    let _ = tx.send(HostEvent::RdmaChanged { name: name.clone() });
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hardware_of_disassociating_drivers_is_watched() {
        assert!(watchable(DeviceKind::Hardware, Some("mlx5_core")));
        assert!(watchable(DeviceKind::Hardware, Some("mlx5_core.sf")));
        assert!(watchable(DeviceKind::Hardware, Some("mlx4_core")));
        assert!(watchable(DeviceKind::Hardware, Some("hns3")));
        // rxe and siw hold up their removal while a context is open.
        assert!(!watchable(DeviceKind::Rxe, None));
        assert!(!watchable(DeviceKind::Siw, None));
        // Drivers not known to disassociate, and unknown ones.
        assert!(!watchable(DeviceKind::Hardware, Some("irdma")));
        assert!(!watchable(DeviceKind::Hardware, Some("efa")));
        assert!(!watchable(DeviceKind::Hardware, None));
        assert!(!watchable(DeviceKind::OtherVirtual, Some("mlx5_core")));
    }

    #[test]
    fn port_events_are_told_from_the_others() {
        assert_eq!(PortEventKind::from_ibv(9), PortEventKind::Active);
        assert_eq!(PortEventKind::from_ibv(10), PortEventKind::Err);
        assert_eq!(PortEventKind::from_ibv(18), PortEventKind::GidChange);
        assert!(PortEventKind::is_port_event(11));
        assert!(PortEventKind::is_port_event(17));
        // DEVICE_FATAL, a QP's and a CQ's events carry no port number.
        assert!(!PortEventKind::is_port_event(verbs::IBV_EVENT_DEVICE_FATAL));
        assert!(!PortEventKind::is_port_event(0));
        assert!(!PortEventKind::is_port_event(1));
    }

    #[test]
    fn contexts_take_an_eighth_of_the_limit() {
        assert_eq!(context_budget(1024), 64);
        assert_eq!(context_budget(524_288), 32_768);
    }
}
