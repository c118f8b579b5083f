//! Why a command failed, and the exit code that says so (rdma-cli(1), "EXIT STATUS").
//!
//! The daemon's refusals keep its own sentence: what is printed after `Error: ` is the D-Bus
//! error's text, and the code comes from the error's name, so a script can branch on the code
//! without parsing the words.

use rdma_manager_dbus::ERROR_PREFIX;

/// The exit codes.
pub mod code {
    pub const SUCCESS: u8 = 0;
    pub const FAILED: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const NOT_AUTHORIZED: u8 = 3;
    pub const NOT_FOUND: u8 = 4;
    pub const NOT_RUNNING: u8 = 5;
    pub const ROLLED_BACK: u8 = 6;
    /// `test-link`: the test ran and did not pass.
    pub const TEST_FAILED: u8 = 7;
    pub const CHANGES: u8 = 10;
    pub const UNHEALTHY: u8 = 11;
}

/// A failed command: the sentence for `Error: `, and the exit code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// Input refused before anything was sent.
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(code::USAGE, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(code::NOT_FOUND, message)
    }

    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(code::FAILED, message)
    }

    /// An error of D-Bus name `name`: its code, and for an absent daemon what to do.
    fn named(name: &str, message: String) -> Self {
        let code = code_of(name, &message);
        if code == code::NOT_RUNNING {
            return Self::new(
                code,
                format!(
                    "rdma-managerd is not running ({message}); start it with \
                     `systemctl start rdma-managerd`"
                ),
            );
        }
        Self::new(code, message)
    }

    /// A D-Bus call's error: the daemon's sentence with the code its name stands for.
    pub fn from_bus(e: zbus::Error) -> Self {
        match e {
            zbus::Error::MethodError(name, text, _) => {
                let message = text.unwrap_or_else(|| name.to_string());
                Self::named(name.as_str(), message)
            }
            zbus::Error::FDO(e) => {
                use zbus::DBusError as _;
                let message = e
                    .description()
                    .map(str::to_string)
                    .unwrap_or_else(|| e.to_string());
                Self::named(e.name().as_str(), message)
            }
            zbus::Error::InputOutput(e) => Self::new(
                code::NOT_RUNNING,
                format!("the connection to the bus failed: {e}"),
            ),
            other => Self::failed(other.to_string()),
        }
    }
}

impl From<zbus::Error> for Failure {
    fn from(e: zbus::Error) -> Self {
        Failure::from_bus(e)
    }
}

impl From<zbus::fdo::Error> for Failure {
    fn from(e: zbus::fdo::Error) -> Self {
        Failure::from_bus(zbus::Error::FDO(Box::new(e)))
    }
}

/// The exit code of a D-Bus error by its name; `message` tells a rollback from another
/// failure (the daemon's `.Failed` of a change it undid says "rolled back").
pub fn code_of(name: &str, message: &str) -> u8 {
    if let Some(kind) = name
        .strip_prefix(ERROR_PREFIX)
        .and_then(|s| s.strip_prefix('.'))
    {
        return match kind {
            "InvalidArgument" => code::USAGE,
            "NotAuthorized" | "InteractiveAuthorizationRequired" => code::NOT_AUTHORIZED,
            "NotFound" => code::NOT_FOUND,
            "Failed" if message.contains("rolled back") => code::ROLLED_BACK,
            _ => code::FAILED,
        };
    }
    match name {
        // Nobody owns the name and nothing can start it: the daemon is not running.
        "org.freedesktop.DBus.Error.ServiceUnknown"
        | "org.freedesktop.DBus.Error.NameHasNoOwner"
        | "org.freedesktop.DBus.Error.Spawn.ServiceNotFound"
        | "org.freedesktop.DBus.Error.Spawn.ChildExited"
        | "org.freedesktop.DBus.Error.Spawn.Failed" => code::NOT_RUNNING,
        // The bus's own policy refused the call.
        "org.freedesktop.DBus.Error.AccessDenied" => code::NOT_AUTHORIZED,
        // The object went away (a pending change that ended, a device unplugged).
        "org.freedesktop.DBus.Error.UnknownObject" => code::NOT_FOUND,
        "org.freedesktop.DBus.Error.InvalidArgs" => code::USAGE,
        _ => code::FAILED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_daemons_errors_have_their_codes() {
        let e = |kind: &str| format!("{ERROR_PREFIX}.{kind}");
        assert_eq!(code_of(&e("InvalidArgument"), "x"), 2);
        assert_eq!(code_of(&e("NotAuthorized"), "x"), 3);
        assert_eq!(code_of(&e("InteractiveAuthorizationRequired"), "x"), 3);
        assert_eq!(code_of(&e("NotFound"), "x"), 4);
        assert_eq!(code_of(&e("Busy"), "x"), 1);
        assert_eq!(code_of(&e("Failed"), "the kernel said EIO"), 1);
        assert_eq!(
            code_of(&e("Failed"), "step roce[mlx5_0/1].tos failed; rolled back"),
            6
        );
        assert_eq!(code_of("org.freedesktop.DBus.Error.ServiceUnknown", ""), 5);
        assert_eq!(code_of("org.freedesktop.DBus.Error.UnknownObject", ""), 4);
        assert_eq!(code_of("org.example.Other", ""), 1);
    }
}
