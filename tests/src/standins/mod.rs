//! Stand-ins for the host services the daemon calls on the system bus, served with zbus on a
//! [`crate::bus::PrivateBus`] so that tests drive the real clients (`rdma_managerd::system`)
//! without systemd as PID 1 or a firewall.
//!
//! - [`StandInSystemd`]: `org.freedesktop.systemd1`'s manager with a table of units.
//! - [`StandInFirewalld`]: `org.fedoraproject.FirewallD1` with zones and ports.
//!
//! Each implements exactly the methods, properties and signals the clients use, with the real
//! services' names, signatures, object paths, error names and messages (checked against
//! systemd 252 and firewalld 1.3.3 by `tests/tests/system/system_services.rs`, which runs the same
//! scenarios against the real programs where they can run), and records every call for
//! assertions. docs/HOST-SETUP.md lists what each implements.

pub mod firewalld;
pub mod systemd;

pub use firewalld::StandInFirewalld;
pub use systemd::{StandInSystemd, StandInUnit};

use zbus::message::{Header, Message};
use zbus::names::ErrorName;

/// A D-Bus error reply with any name: the stand-ins answer with other services' error names
/// (`org.freedesktop.systemd1.NoSuchUnit`, `org.fedoraproject.FirewallD1.Exception`,
/// `org.freedesktop.DBus.Error.InvalidArgs`), which zbus's derive cannot mix in one type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedError {
    pub name: &'static str,
    pub message: String,
}

impl NamedError {
    pub fn new(name: &'static str, message: impl Into<String>) -> Self {
        Self {
            name,
            message: message.into(),
        }
    }
}

impl zbus::DBusError for NamedError {
    fn create_reply(&self, call: &Header<'_>) -> zbus::Result<Message> {
        Message::error(call, self.name())?.build(&(self.message.as_str(),))
    }

    fn name(&self) -> ErrorName<'_> {
        ErrorName::from_static_str_unchecked(self.name)
    }

    fn description(&self) -> Option<&str> {
        Some(&self.message)
    }
}

impl From<zbus::Error> for NamedError {
    fn from(e: zbus::Error) -> Self {
        NamedError::new("org.freedesktop.DBus.Error.Failed", e.to_string())
    }
}

/// Locks a stand-in's state. A test that panicked while holding the lock already failed; the
/// state is still readable for the report, so poisoning is ignored.
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
