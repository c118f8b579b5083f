//! Per-attribute results: one unreadable file never spoils the rest of an enumeration.

use serde::Serialize;

use super::Errno;
use rdma_manager_dbus::text::quote_capped;

/// Why one attribute could not be read or understood.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum AttrError {
    /// The file does not exist (the driver does not provide it, or it vanished).
    #[error("not present")]
    Missing,
    /// The file exists but reading it failed (e.g. EINVAL for an unused GID's ndev).
    #[error("read failed: {0}")]
    Unreadable(Errno),
    /// The text does not have the format the kernel documents.
    #[error("malformed value {value_q}: {reason}", value_q = quote_capped(&.0.value), reason = .0.reason)]
    Malformed(Box<Malformed>),
}

/// A value whose text is not in the kernel's format, and why. Boxed in [`AttrError`]: the
/// model holds a [`Field`] for every attribute of every device and port, nearly all of them
/// `Ok`, and two inline strings would make each field three times the size of the rest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Malformed {
    /// The text as read, trailing newline removed.
    pub value: String,
    pub reason: String,
}

impl AttrError {
    pub fn malformed(value: &str, reason: impl Into<String>) -> Self {
        AttrError::Malformed(Box::new(Malformed {
            value: value.to_string(),
            reason: reason.into(),
        }))
    }
}

/// One attribute: its parsed value, or why there is none.
pub type Field<T> = Result<T, AttrError>;

/// The text of a sysfs attribute without its trailing newline (sysfs appends one; a few
/// attributes such as an empty `fw_ver` are just "\n").
pub fn trim_attr(raw: &str) -> &str {
    raw.strip_suffix('\n')
        .unwrap_or(raw)
        .trim_end_matches(['\n', '\0'])
}

/// Parses "0x%x" (also accepts a bare decimal, which some old drivers print).
pub fn parse_hex_u32(raw: &str) -> Field<u32> {
    let s = trim_attr(raw).trim();
    let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => s.parse::<u32>(),
    };
    parsed.map_err(|e| AttrError::malformed(s, e.to_string()))
}

/// Parses "%u"-style decimal attributes.
pub fn parse_dec<T: std::str::FromStr>(raw: &str) -> Field<T>
where
    T::Err: std::fmt::Display,
{
    let s = trim_attr(raw).trim();
    s.parse::<T>()
        .map_err(|e| AttrError::malformed(s, e.to_string()))
}

/// Splits the kernel's "%d: %s" enum format into its number and name.
pub fn split_numbered(raw: &str) -> Field<(u32, &str)> {
    let s = trim_attr(raw);
    let (num, name) = s
        .split_once(": ")
        .ok_or_else(|| AttrError::malformed(s, "expected \"<number>: <name>\""))?;
    let num = num
        .trim()
        .parse::<u32>()
        .map_err(|e| AttrError::malformed(s, e.to_string()))?;
    Ok((num, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_with_and_without_prefix() {
        assert_eq!(parse_hex_u32("0x2\n"), Ok(2));
        assert_eq!(parse_hex_u32("0x00010000\n"), Ok(0x10000));
        assert_eq!(parse_hex_u32("17"), Ok(17));
        assert!(matches!(
            parse_hex_u32("0xzz"),
            Err(AttrError::Malformed(_))
        ));
        assert!(matches!(parse_hex_u32(""), Err(AttrError::Malformed(_))));
        assert!(matches!(
            parse_hex_u32("0x1ffffffff"),
            Err(AttrError::Malformed(_))
        ));
    }

    #[test]
    fn numbered_enum() {
        assert_eq!(split_numbered("4: ACTIVE\n"), Ok((4, "ACTIVE")));
        assert_eq!(split_numbered("5: LinkUp"), Ok((5, "LinkUp")));
        assert!(split_numbered("ACTIVE").is_err());
        assert!(split_numbered("x: ACTIVE").is_err());
    }

    #[test]
    fn trims_only_the_trailing_newline() {
        assert_eq!(trim_attr("\n"), "");
        assert_eq!(trim_attr("rxe\n"), "rxe");
        assert_eq!(trim_attr("  a b \n"), "  a b ");
    }
}
