//! Kernel device events: udev, or the uevent netlink socket when no udevd runs.
//!
//! - With udevd (`/run/udev/control` exists): a libudev monitor on subsystems `infiniband` and
//!   `net` (events after udev's rules ran, so renames by rules are already applied).
//! - Without udevd (a lab booted with busybox init): a NETLINK_KOBJECT_UEVENT socket bound to
//!   group 1, the kernel's own uevents, parsed by [`parse_uevent`].
//!
//! Both paths turn what they read into a [`Uevent`], and [`uevent_to_event`] maps it to a
//! [`HostEvent`]: infiniband add/remove/move/change -> RdmaAdded/RdmaRemoved/RdmaRenamed/
//! RdmaChanged, net add/remove/move/change -> NetdevAdded/NetdevRemoved/NetdevRenamed/
//! NetdevChanged. A full receive buffer (ENOBUFS) -> `Overflow { source: "uevent" }`.
//!
//! Kernel uevents of a netdev are broadcast only to uevent sockets of the netdev's own network
//! namespace: a socket opened in the init namespace does not see netdevs of other namespaces.

mod kobject;
#[cfg(test)]
mod tests;
mod udev_monitor;

use std::path::Path;

use serde::Serialize;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use super::error::HostError;
use super::HostEvent;

pub use udev_monitor::enumerate;

/// The subsystems the daemon cares about.
pub const SUBSYSTEMS: [&str; 2] = ["infiniband", "net"];

/// The file whose presence says that udevd runs.
pub const UDEV_CONTROL: &str = "/run/udev/control";

/// `kobject_action` names (lib/kobject_uevent.c).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum UeventAction {
    Add,
    Remove,
    Change,
    Move,
    Online,
    Offline,
    Bind,
    Unbind,
    Other(String),
}

impl UeventAction {
    pub fn parse(s: &str) -> UeventAction {
        match s {
            "add" => UeventAction::Add,
            "remove" => UeventAction::Remove,
            "change" => UeventAction::Change,
            "move" => UeventAction::Move,
            "online" => UeventAction::Online,
            "offline" => UeventAction::Offline,
            "bind" => UeventAction::Bind,
            "unbind" => UeventAction::Unbind,
            other => UeventAction::Other(other.to_string()),
        }
    }
}

/// One device event, from the kernel's uevent message or from libudev.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Uevent {
    pub action: UeventAction,
    /// The kobject path below /sys (`/devices/virtual/net/veth0`).
    pub devpath: String,
    pub subsystem: Option<String>,
    pub seqnum: Option<u64>,
    /// Every KEY=VALUE, in message order (ACTION, DEVPATH and SUBSYSTEM included).
    pub env: Vec<(String, String)>,
}

impl Uevent {
    /// The value of a variable.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The device name: INTERFACE for netdevs, NAME for RDMA devices, else the last component
    /// of DEVPATH.
    pub fn name(&self) -> Option<&str> {
        let by_var = match self.subsystem.as_deref() {
            Some("net") => self.get("INTERFACE"),
            Some("infiniband") => self.get("NAME"),
            _ => None,
        };
        by_var
            .filter(|n| !n.is_empty())
            .or_else(|| last_component(&self.devpath))
    }

    /// For a move: the old name, the last component of DEVPATH_OLD.
    pub fn old_name(&self) -> Option<&str> {
        self.get("DEVPATH_OLD").and_then(last_component)
    }
}

fn last_component(path: &str) -> Option<&str> {
    path.rsplit('/').next().filter(|s| !s.is_empty())
}

/// The header libudev puts in front of the messages udevd multicasts; never a kernel uevent.
const LIBUDEV_MAGIC: &[u8] = b"libudev\0";

/// Parses a kernel uevent message: `ACTION@DEVPATH\0KEY=VALUE\0...`.
///
/// `None` for libudev's binary messages and for anything malformed (no `@` header, an empty
/// action or devpath, bytes that are not UTF-8 in the header, a DEVPATH or ACTION variable that
/// contradicts the header). Fields without `=` or not UTF-8 are skipped. Never panics.
pub fn parse_uevent(buf: &[u8]) -> Option<Uevent> {
    if buf.starts_with(LIBUDEV_MAGIC) {
        return None;
    }
    let mut fields = buf.split(|b| *b == 0);
    let header = std::str::from_utf8(fields.next()?).ok()?;
    let (action, devpath) = header.split_once('@')?;
    if action.is_empty() || !devpath.starts_with('/') || devpath.len() < 2 {
        return None;
    }
    let mut env = Vec::new();
    for field in fields {
        if field.is_empty() {
            continue;
        }
        let Ok(field) = std::str::from_utf8(field) else {
            continue;
        };
        let Some((k, v)) = field.split_once('=') else {
            continue;
        };
        if k.is_empty() {
            continue;
        }
        env.push((k.to_string(), v.to_string()));
    }
    let u = Uevent {
        action: UeventAction::parse(action),
        devpath: devpath.to_string(),
        subsystem: None,
        seqnum: None,
        env,
    };
    if u.get("ACTION").is_some_and(|a| a != action)
        || u.get("DEVPATH").is_some_and(|d| d != devpath)
    {
        return None;
    }
    let subsystem = u.get("SUBSYSTEM").map(str::to_string);
    let seqnum = u.get("SEQNUM").and_then(|s| s.parse().ok());
    Some(Uevent {
        subsystem,
        seqnum,
        ..u
    })
}

/// The [`HostEvent`] for a uevent of subsystem `infiniband` or `net`; `None` for other
/// subsystems, other actions (bind, online, ...), and a move without DEVPATH_OLD.
pub fn uevent_to_event(u: &Uevent) -> Option<HostEvent> {
    let name = u.name()?.to_string();
    match (u.subsystem.as_deref()?, &u.action) {
        ("infiniband", UeventAction::Add) => Some(HostEvent::RdmaAdded { name }),
        ("infiniband", UeventAction::Remove) => Some(HostEvent::RdmaRemoved { name }),
        ("infiniband", UeventAction::Change) => Some(HostEvent::RdmaChanged { name }),
        ("infiniband", UeventAction::Move) => Some(HostEvent::RdmaRenamed {
            old: u.old_name()?.to_string(),
            new: name,
        }),
        ("net", UeventAction::Add) => Some(HostEvent::NetdevAdded { name }),
        ("net", UeventAction::Remove) => Some(HostEvent::NetdevRemoved { name }),
        ("net", UeventAction::Change) => Some(HostEvent::NetdevChanged { name }),
        ("net", UeventAction::Move) => Some(HostEvent::NetdevRenamed {
            old: u.old_name()?.to_string(),
            new: name,
        }),
        _ => None,
    }
}

/// Where device events come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum UeventSource {
    /// A libudev monitor (udevd runs).
    Udev,
    /// The kernel's NETLINK_KOBJECT_UEVENT socket, group 1.
    Kernel,
}

impl UeventSource {
    /// Udev when `/run/udev/control` exists, else the kernel socket.
    pub fn detect() -> UeventSource {
        if Path::new(UDEV_CONTROL).exists() {
            UeventSource::Udev
        } else {
            UeventSource::Kernel
        }
    }
}

/// Watches device events of subsystems `infiniband` and `net` with the source that fits this
/// host (see [`UeventSource::detect`]) until `tx` is closed.
pub async fn spawn_uevents(tx: UnboundedSender<HostEvent>) -> Result<JoinHandle<()>, HostError> {
    spawn_uevents_from(UeventSource::detect(), tx).await
}

/// Like [`spawn_uevents`] with the source chosen by the caller. The socket is opened before
/// this returns, in the calling thread's network namespace.
pub async fn spawn_uevents_from(
    source: UeventSource,
    tx: UnboundedSender<HostEvent>,
) -> Result<JoinHandle<()>, HostError> {
    match source {
        UeventSource::Udev => udev_monitor::spawn(tx),
        UeventSource::Kernel => kobject::spawn(tx),
    }
}

/// Sends the event for `u` if it is one of ours; `false` once the receiver is gone.
fn forward(tx: &UnboundedSender<HostEvent>, u: &Uevent) -> bool {
    match uevent_to_event(u) {
        Some(ev) => tx.send(ev).is_ok(),
        None => true,
    }
}

fn overflow() -> HostEvent {
    HostEvent::Overflow {
        source: "uevent".into(),
    }
}
