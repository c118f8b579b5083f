//! The error every mutation returns: each is checked before it reaches the kernel, and the
//! kernel's refusals become errors that say what to do. The operations themselves live in
//! `ops_*` files, one per area.

use crate::kernel::HostError;
use crate::model::{Errno, SoftLinkError};

/// Why a mutation was refused; the D-Bus layer maps each kind to an error name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpError {
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    NotSupported(String),
    #[error("{0}")]
    AlreadyExists(String),
    #[error("{0}")]
    Busy(String),
    #[error("{0}")]
    Failed(String),
}

impl OpError {
    /// The same kind of error with `more` appended to its sentence (what an undo did).
    pub fn with_more(self, more: &str) -> OpError {
        match self {
            OpError::InvalidArgument(m) => OpError::InvalidArgument(m + more),
            OpError::NotFound(m) => OpError::NotFound(m + more),
            OpError::NotSupported(m) => OpError::NotSupported(m + more),
            OpError::AlreadyExists(m) => OpError::AlreadyExists(m + more),
            OpError::Busy(m) => OpError::Busy(m + more),
            OpError::Failed(m) => OpError::Failed(m + more),
        }
    }

    /// A kernel error with no more specific meaning in context.
    pub fn from_host(e: HostError) -> OpError {
        match &e {
            HostError::NotFound(_) => OpError::NotFound(e.to_string()),
            HostError::Unsupported { .. } => OpError::NotSupported(e.to_string()),
            HostError::Invalid(_) => OpError::InvalidArgument(e.to_string()),
            HostError::Kernel { errno, .. } => match *errno {
                Errno::EEXIST => OpError::AlreadyExists(e.to_string()),
                Errno::EBUSY => OpError::Busy(e.to_string()),
                Errno::ENODEV | Errno::ENOENT | Errno::ENXIO => OpError::NotFound(e.to_string()),
                Errno::EOPNOTSUPP => OpError::NotSupported(e.to_string()),
                Errno::EINVAL => OpError::InvalidArgument(e.to_string()),
                _ => OpError::Failed(e.to_string()),
            },
            HostError::Protocol { .. }
            | HostError::Command { .. }
            | HostError::TooLarge { .. }
            | HostError::NotRegular { .. } => OpError::Failed(e.to_string()),
        }
    }
}

impl From<SoftLinkError> for OpError {
    fn from(e: SoftLinkError) -> OpError {
        let m = e.to_string();
        match e {
            SoftLinkError::NameTaken(_) | SoftLinkError::NetdevHasLink { .. } => {
                OpError::AlreadyExists(m)
            }
            SoftLinkError::UnknownNetdev(_) => OpError::NotFound(m),
            SoftLinkError::VlanNetdev(_) => OpError::InvalidArgument(m),
            SoftLinkError::TypeUnavailable { .. } => OpError::NotSupported(m),
            SoftLinkError::Kernel(_) => OpError::Failed(m),
        }
    }
}

impl From<crate::config::ConfigError> for OpError {
    fn from(e: crate::config::ConfigError) -> OpError {
        OpError::Failed(e.to_string())
    }
}

impl From<&crate::config::ConfigError> for OpError {
    fn from(e: &crate::config::ConfigError) -> OpError {
        OpError::Failed(e.to_string())
    }
}
