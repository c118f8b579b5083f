//! The record of every change asked for over the bus: one log line per mutating call, with who
//! asked (uid and bus name), which method on which object with which arguments, and the
//! outcome (done, refused by polkit, or failed with the error the caller got).
//!
//! Every mutating method goes through [`super::Context::change`], which authorizes, runs the
//! change and writes this line, so no method can change the host without leaving one. Under
//! systemd the lines go to the journal with these names as structured fields (`CALLER_UID`,
//! `CALLER`, `METHOD`, `OBJECT`, `ARGUMENTS`, `ACTION`, `OUTCOME`, `ERROR`; see
//! `journalctl -u rdma-managerd -o json`), and `journalctl -u rdma-managerd
//! SYSLOG_IDENTIFIER=rdma-managerd OUTCOME=refused` finds the refusals.

use std::collections::HashMap;
use std::fmt::Write as _;

use rdma_manager_dbus::{Action, Error};
use zbus::message::Header;
use zbus::zvariant::OwnedValue;

/// The tracing target of the audit lines, so that `RUST_LOG` can select them.
pub const TARGET: &str = "rdma_managerd::audit";

/// How much of one non-string value is kept (strings are cut by `quote_capped`): settings
/// fit; a huge value is cut (and marked) rather than written to the journal.
const VALUE_CAP: usize = 256;

/// One argument value as the audit line shows it.
pub trait Shown {
    fn shown(&self) -> String;
}

impl Shown for &str {
    fn shown(&self) -> String {
        rdma_manager_dbus::text::quote_capped(self)
    }
}

macro_rules! shown_by_display {
    ($($t:ty),*) => {$(
        impl Shown for $t {
            fn shown(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
shown_by_display!(bool, u8, u16, u32);

impl Shown for HashMap<String, OwnedValue> {
    fn shown(&self) -> String {
        let mut keys: Vec<&String> = self.keys().collect();
        keys.sort();
        let mut out = String::from("{");
        for (i, key) in keys.into_iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            // GVariant text form, as busctl and gdbus print values.
            let value = &self[key];
            let _ = write!(
                out,
                "{}: {}",
                rdma_manager_dbus::text::quote_capped(key),
                cut(&format!("{}", &**value))
            );
        }
        out.push('}');
        out
    }
}

fn cut(text: &str) -> String {
    rdma_manager_dbus::text::cap_text(text, VALUE_CAP)
}

/// `name=value` pairs of a call's arguments, in the method's order.
pub fn arguments(pairs: &[(&str, String)]) -> String {
    pairs
        .iter()
        .map(|(name, value)| format!("{}={value}", name.trim_start_matches("r#")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The arguments of a mutating call, by their parameter names: `audit_args![name, mtu]`.
#[macro_export]
macro_rules! audit_args {
    ($($arg:ident),* $(,)?) => {
        $crate::dbus::audit::arguments(&[$((stringify!($arg), $crate::dbus::audit::Shown::shown(&$arg))),*])
    };
}

/// Who asked, and for what: known before the change is authorized.
#[derive(Debug, Clone)]
pub struct Request {
    pub caller: String,
    pub caller_uid: Option<u32>,
    pub method: String,
    pub object: String,
    pub arguments: String,
    pub action: Action,
}

impl Request {
    pub fn new(
        header: &Header<'_>,
        caller_uid: Option<u32>,
        action: Action,
        arguments: String,
    ) -> Self {
        Request {
            caller: header.sender().map(|s| s.to_string()).unwrap_or_default(),
            caller_uid,
            method: header.member().map(|m| m.to_string()).unwrap_or_default(),
            object: header.path().map(|p| p.to_string()).unwrap_or_default(),
            arguments,
            action,
        }
    }

    fn uid_text(&self) -> String {
        self.caller_uid
            .map_or_else(|| "an unknown uid".to_string(), |u| format!("uid {u}"))
    }

    /// Writes the one line of this request's outcome.
    pub fn record<T>(&self, outcome: &Result<T, Error>, authorized: bool) {
        let uid = self.caller_uid.map_or(-1, i64::from);
        let action = self.action.id();
        match outcome {
            Ok(_) => tracing::info!(
                target: TARGET,
                caller_uid = uid,
                caller = %self.caller,
                method = %self.method,
                object = %self.object,
                arguments = %self.arguments,
                action,
                outcome = "done",
                "{} by {} on {}: done ({})",
                self.method,
                self.uid_text(),
                self.object,
                self.arguments
            ),
            Err(e) => {
                let outcome = if authorized { "failed" } else { "refused" };
                tracing::info!(
                    target: TARGET,
                    caller_uid = uid,
                    caller = %self.caller,
                    method = %self.method,
                    object = %self.object,
                    arguments = %self.arguments,
                    action,
                    outcome,
                    error = %zbus::DBusError::name(e),
                    error_message = %e.message(),
                    "{} by {} on {}: {outcome}: {} ({})",
                    self.method,
                    self.uid_text(),
                    self.object,
                    e.message(),
                    self.arguments
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_named_quoted_and_capped() {
        let name = "rxe0";
        let r#type = "rxe";
        let mtu = 2044u32;
        let long_text = "x".repeat(10_000);
        let long = long_text.as_str();
        let text = crate::audit_args![name, r#type, mtu, long];
        assert!(
            text.starts_with("name=\"rxe0\" type=\"rxe\" mtu=2044 long=\""),
            "{text}"
        );
        assert!(text.len() < 1000, "{} bytes", text.len());
        assert!(text.ends_with("(10000 bytes)"), "{text}");
    }

    #[test]
    fn settings_are_sorted_and_in_gvariant_text() {
        let mut settings = HashMap::new();
        settings.insert("mtu".to_string(), OwnedValue::from(2044u32));
        settings.insert(
            "mode".to_string(),
            OwnedValue::try_from(zbus::zvariant::Value::from("connected")).expect("a string value"),
        );
        assert_eq!(
            settings.shown(),
            "{\"mode\": \"connected\", \"mtu\": uint32 2044}"
        );
    }
}
