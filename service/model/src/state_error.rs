//! Why a state document was refused. Every refusal names the key path of the offending
//! setting (`interfaces[0].infiniband.pkey`) and, when the document has one, its line, so that
//! the message alone points at what to fix; nothing has changed when one is returned.

use rdma_manager_dbus::text::{cap_text, quote_capped};
use serde::Serialize;

/// The longest key path and reason a refusal quotes: both may hold a key or value of the
/// document, of any length.
const PATH_MAX_BYTES: usize = 512;
const REASON_MAX_BYTES: usize = 2048;

/// A refused document. The daemon answers `NotFound` with its `NotFound` error and every
/// other variant with `InvalidArgument`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum StateError {
    /// Not YAML (or JSON) at all, or more than one document.
    #[error("{}{message}", at_line(*.line))]
    Syntax {
        line: Option<usize>,
        message: String,
    },
    /// A key or value the document may not have: an unknown key, a wrong type, a value the
    /// rules refuse, a missing key.
    #[error("{}{}{reason}", at_line(*.line), at_path(.path))]
    Invalid {
        path: String,
        line: Option<usize>,
        reason: String,
    },
    /// Settings that cannot all hold: two entries with one identity, `state: absent` with
    /// settings, DHCP and a disabled family.
    #[error("{}{}{reason}", at_line(*.line), at_path(.path))]
    Contradiction {
        path: String,
        line: Option<usize>,
        reason: String,
    },
    /// A device, port or interface the host does not have (and the document does not create).
    #[error("{}{}{what} {} does not exist{hint}", at_line(*.line), at_path(.path), quote_capped(.name))]
    NotFound {
        path: String,
        line: Option<usize>,
        /// What was looked for: `device`, `port`, `interface`, `parent interface`.
        what: String,
        name: String,
        /// More words after "does not exist" (may be empty).
        hint: String,
    },
}

fn at_line(line: Option<usize>) -> String {
    line.map(|l| format!("line {l}: ")).unwrap_or_default()
}

fn at_path(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("{}: ", cap_text(path, PATH_MAX_BYTES))
    }
}

/// A reason quoted from the parser, which repeats keys and values of the document.
pub(crate) fn capped_reason(reason: &str) -> String {
    cap_text(reason, REASON_MAX_BYTES)
}

impl StateError {
    pub(crate) fn invalid(path: impl Into<String>, reason: impl Into<String>) -> StateError {
        StateError::Invalid {
            path: path.into(),
            line: None,
            reason: reason.into(),
        }
    }

    pub(crate) fn contradiction(path: impl Into<String>, reason: impl Into<String>) -> StateError {
        StateError::Contradiction {
            path: path.into(),
            line: None,
            reason: reason.into(),
        }
    }

    pub(crate) fn not_found(
        path: impl Into<String>,
        what: &str,
        name: impl Into<String>,
        hint: impl Into<String>,
    ) -> StateError {
        StateError::NotFound {
            path: path.into(),
            line: None,
            what: what.to_string(),
            name: name.into(),
            hint: hint.into(),
        }
    }

    /// The key path of the offending setting (empty for the document as a whole or a syntax
    /// error).
    pub fn path(&self) -> &str {
        match self {
            StateError::Syntax { .. } => "",
            StateError::Invalid { path, .. }
            | StateError::Contradiction { path, .. }
            | StateError::NotFound { path, .. } => path,
        }
    }

    /// The document's line (from 1) of the offending setting, when known.
    pub fn line(&self) -> Option<usize> {
        match self {
            StateError::Syntax { line, .. }
            | StateError::Invalid { line, .. }
            | StateError::Contradiction { line, .. }
            | StateError::NotFound { line, .. } => *line,
        }
    }

    /// Whether the document names something the host lacks (D-Bus `NotFound`) rather than
    /// being wrong in itself (D-Bus `InvalidArgument`).
    pub fn is_not_found(&self) -> bool {
        matches!(self, StateError::NotFound { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_line_and_path() {
        let e = StateError::Invalid {
            path: "interfaces[0].infiniband.pkey".into(),
            line: Some(7),
            reason: "bad".into(),
        };
        assert_eq!(e.to_string(), "line 7: interfaces[0].infiniband.pkey: bad");
        assert_eq!(e.path(), "interfaces[0].infiniband.pkey");
        assert_eq!(e.line(), Some(7));
        assert!(!e.is_not_found());
        let e = StateError::not_found("roce[1].device", "device", "mlx5_9", "");
        assert_eq!(
            e.to_string(),
            "roce[1].device: device \"mlx5_9\" does not exist"
        );
        assert!(e.is_not_found());
        let e = StateError::Syntax {
            line: None,
            message: "x".into(),
        };
        assert_eq!(e.to_string(), "x");
        assert_eq!(StateError::invalid("", "r").to_string(), "r");
        let long = "x".repeat(1 << 20);
        let e = StateError::not_found(format!("roce[0].{long}"), "device", &long, "");
        assert!(e.to_string().len() < 2000, "{}", e.to_string().len());
    }
}
