//! The errors rdma-managerd returns on the bus. Each carries a sentence that says what was
//! wrong and what to do about it; the D-Bus name says which kind of failure it was, so scripts
//! can branch on `org.rdmamanager.RdmaManager1.Error.<Name>` without parsing the text.

/// A D-Bus error of rdma-managerd (`org.rdmamanager.RdmaManager1.Error.<Variant>`).
#[derive(Clone, Debug, PartialEq, zbus::DBusError)]
#[zbus(prefix = "org.rdmamanager.RdmaManager1.Error", impl_display = true)]
pub enum Error {
    /// A transport error of the bus itself.
    #[zbus(error)]
    ZBus(zbus::Error),
    /// An argument was refused before anything was changed (bad name, number out of range).
    InvalidArgument(String),
    /// The device, port, interface or setting named does not exist (or vanished).
    NotFound(String),
    /// The kernel, driver or hardware cannot do this (a module missing, a mode unsupported).
    NotSupported(String),
    /// The name or object asked for exists already.
    AlreadyExists(String),
    /// Something else holds the object (a link is up, another change is in progress).
    Busy(String),
    /// polkit refused the caller.
    NotAuthorized(String),
    /// polkit would allow it after authentication, but the caller did not allow interaction.
    InteractiveAuthorizationRequired(String),
    /// The kernel refused for another reason; the sentence names its errno.
    Failed(String),
}

impl Error {
    /// The sentence, without the D-Bus name.
    pub fn message(&self) -> String {
        match self {
            Error::ZBus(e) => e.to_string(),
            Error::InvalidArgument(m)
            | Error::NotFound(m)
            | Error::NotSupported(m)
            | Error::AlreadyExists(m)
            | Error::Busy(m)
            | Error::NotAuthorized(m)
            | Error::InteractiveAuthorizationRequired(m)
            | Error::Failed(m) => m.clone(),
        }
    }

    /// The same error with its sentence cut to [`crate::text::MESSAGE_MAX_BYTES`]: the service
    /// passes every error it sends through this, so that no sentence, whatever it quotes, can
    /// make a reply too large for the bus.
    pub fn capped(self) -> Self {
        use crate::text::cap_message;
        match self {
            Error::ZBus(e) => Error::ZBus(e),
            Error::InvalidArgument(m) => Error::InvalidArgument(cap_message(&m)),
            Error::NotFound(m) => Error::NotFound(cap_message(&m)),
            Error::NotSupported(m) => Error::NotSupported(cap_message(&m)),
            Error::AlreadyExists(m) => Error::AlreadyExists(cap_message(&m)),
            Error::Busy(m) => Error::Busy(cap_message(&m)),
            Error::NotAuthorized(m) => Error::NotAuthorized(cap_message(&m)),
            Error::InteractiveAuthorizationRequired(m) => {
                Error::InteractiveAuthorizationRequired(cap_message(&m))
            }
            Error::Failed(m) => Error::Failed(cap_message(&m)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_keeps_the_kind_and_bounds_the_sentence() {
        let long = "z".repeat(1 << 20);
        let e = Error::InvalidArgument(long.clone()).capped();
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.len() <= crate::text::MESSAGE_MAX_BYTES)
        );
        let e = Error::NotAuthorized(long).capped();
        assert!(matches!(&e, Error::NotAuthorized(m) if m.len() <= crate::text::MESSAGE_MAX_BYTES));
        assert_eq!(
            Error::Busy("short".into()).capped(),
            Error::Busy("short".into())
        );
    }
}
