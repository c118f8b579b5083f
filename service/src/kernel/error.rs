//! Errors of the kernel boundary: the operation, and the kernel's errno or another cause.

use serde::Serialize;

use crate::model::Errno;

/// The kernel operation that failed, for messages and transcripts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Op {
    ReadSysfs(String),
    WriteSysfs(String),
    Configfs(String),
    NlDump(&'static str),
    NlNewLink,
    NlDelLink,
    NlSet,
    NlStatGet,
    Rtnl(&'static str),
    /// A generic netlink family's request (the family's name).
    Genl(&'static str),
    Uevents,
    File(String),
    /// `udevadm control --reload`.
    UdevReload,
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Op::ReadSysfs(p) => write!(f, "reading {p}"),
            Op::WriteSysfs(p) => write!(f, "writing {p}"),
            Op::Configfs(p) => write!(f, "configfs {p}"),
            Op::NlDump(what) => write!(f, "RDMA netlink {what} dump"),
            Op::NlNewLink => write!(f, "RDMA netlink NEWLINK"),
            Op::NlDelLink => write!(f, "RDMA netlink DELLINK"),
            Op::NlSet => write!(f, "RDMA netlink SET"),
            Op::NlStatGet => write!(f, "RDMA netlink STAT_GET"),
            Op::Rtnl(what) => write!(f, "rtnetlink {what}"),
            Op::Genl(family) => write!(f, "generic netlink {family}"),
            Op::Uevents => write!(f, "watching kernel events"),
            Op::File(p) => write!(f, "file {p}"),
            Op::UdevReload => write!(f, "udevadm control --reload"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum HostError {
    /// The kernel answered with an errno.
    #[error("{op}: {errno}")]
    Kernel { op: Op, errno: Errno },
    /// The named RDMA device, port or netdev does not exist (or vanished).
    #[error("{0} does not exist")]
    NotFound(String),
    /// The kernel lacks the feature (no RDMA netlink, no configfs, no rdma_cm, ...).
    #[error("{what} is not available: {why}")]
    Unsupported { what: String, why: String },
    /// The kernel sent something this client cannot decode.
    #[error("malformed kernel reply to {op}: {reason}")]
    Protocol { op: Op, reason: String },
    /// A request was refused before reaching the kernel.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// A helper program failed (its exit status and what it printed).
    #[error("{op} failed: {reason}")]
    Command { op: Op, reason: String },
    /// A file is larger than the daemon reads (`files::MAX_READ_BYTES`); it was not read.
    #[error("{path} has {size} bytes, more than the {limit} bytes rdma-managerd reads from a configuration file, so it was not read; shorten it or move it away")]
    TooLarge { path: String, size: u64, limit: u64 },
    /// A file the daemon reads is not a regular file (a FIFO, a device, a socket, a
    /// directory, or a symlink to one); it was not read, so it cannot block the daemon.
    #[error("{path} is {kind}, not a regular file, so rdma-managerd did not read it; replace it by a regular file or remove it")]
    NotRegular { path: String, kind: String },
}

impl HostError {
    pub fn kernel(op: Op, errno: Errno) -> Self {
        HostError::Kernel { op, errno }
    }

    pub fn from_io(op: Op, err: &std::io::Error) -> Self {
        HostError::Kernel {
            op,
            errno: Errno::from_io(err),
        }
    }

    pub fn errno(&self) -> Option<Errno> {
        match self {
            HostError::Kernel { errno, .. } => Some(*errno),
            _ => None,
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, HostError::NotFound(_))
            || matches!(
                self.errno(),
                Some(Errno::ENOENT | Errno::ENODEV | Errno::ENXIO)
            )
    }

    /// A short, stable description for scenario transcripts: `EEXIST`, `NotFound`, ...
    pub fn code(&self) -> String {
        match self {
            HostError::Kernel { errno, .. } => errno.name(),
            HostError::NotFound(_) => "NotFound".into(),
            HostError::Unsupported { .. } => "Unsupported".into(),
            HostError::Protocol { .. } => "Protocol".into(),
            HostError::Invalid(_) => "Invalid".into(),
            HostError::Command { .. } => "Command".into(),
            HostError::TooLarge { .. } => "TooLarge".into(),
            HostError::NotRegular { .. } => "NotRegular".into(),
        }
    }
}

/// "the kernel answered EOPNOTSUPP (Operation not supported)", and the extended-ack message
/// after a colon where the kernel gave one: the reason an Unsupported refusal carries.
pub fn kernel_answered(errno: Errno, extack: Option<&str>) -> String {
    let text = errno.description();
    let text = text.split(" (os error").next().unwrap_or(&text);
    let mut why = format!("the kernel answered {} ({text})", errno.name());
    if let Some(m) = extack.filter(|m| !m.is_empty()) {
        why.push_str(": ");
        why.push_str(m);
    }
    why
}
