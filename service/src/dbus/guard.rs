//! Every interface the daemon serves is registered inside a [`Guarded`], which answers method
//! calls the way the D-Bus specification's own daemons do before the interface sees them:
//!
//! - A call whose arguments do not have the method's signature exactly (wrong types, missing
//!   or extra arguments) is refused with `org.freedesktop.DBus.Error.InvalidArgs`, naming both
//!   signatures. zbus alone answers a wrong type with `org.freedesktop.zbus.Error` and accepts
//!   extra arguments, ignoring them.
//! - A caller that flagged its call NO_REPLY_EXPECTED gets nothing back, not even an error:
//!   the system bus rejects (and logs) replies nobody asked for, so an error reply would let
//!   any user add a line to the bus's log per call.
//! - The caller must be within its [`Limits`]: otherwise
//!   `org.freedesktop.DBus.Error.LimitsExceeded`. Property reads (Get, GetAll) are admitted
//!   and charged here too, as zbus's Properties interface asks the object for them.
//!
//! The expected signatures are read from the interface's own introspection, so they cannot
//! drift from the handlers. Calls to objects or interfaces that do not exist never reach an
//! interface; zbus answers those itself (see docs/RELIABILITY.md).

use std::any::TypeId;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use zbus::message::{Flags, Header, Message};
use zbus::names::{InterfaceName, MemberName};
use zbus::object_server::{DispatchResult2, Interface, SignalEmitter};
use zbus::zvariant::{OwnedValue, Value};
use zbus::{fdo, Connection, ObjectServer};

use super::limits::{LimitError, Limits};

/// What a reply costs the bus at least (header, name fields): the charge of a call whose
/// handler did not say how large its reply is.
const SMALL_REPLY: u64 = 256;

/// Method name to its input signature.
type Signatures = HashMap<String, String>;

/// An interface whose calls are checked first (see the module documentation).
pub struct Guarded<I> {
    inner: I,
    limits: Arc<Limits>,
    signatures: Arc<Signatures>,
}

impl<I: Interface> Guarded<I> {
    pub fn new(inner: I, limits: Arc<Limits>) -> Guarded<I> {
        let signatures = signatures_of(&inner);
        Guarded {
            inner,
            limits,
            signatures,
        }
    }
}

/// The input signature of each method of `iface`, from its introspection; computed once per
/// interface type.
fn signatures_of<I: Interface>(iface: &I) -> Arc<Signatures> {
    static CACHE: OnceLock<Mutex<HashMap<TypeId, Arc<Signatures>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
    cache
        .entry(TypeId::of::<I>())
        .or_insert_with(|| {
            let mut xml = String::new();
            iface.introspect_to_writer(&mut xml, 0);
            Arc::new(method_signatures(&xml))
        })
        .clone()
}

/// Method name to the concatenated types of its `in` arguments, from introspection XML.
pub fn method_signatures(xml: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut rest = xml;
    while let Some(at) = rest.find("<method ") {
        rest = &rest[at..];
        let Some(name) = attribute(rest, "name") else {
            break;
        };
        // The method's element ends at its closing tag, or at "/>" when it has no arguments.
        let head_end = rest.find('>').unwrap_or(rest.len());
        let body = if rest[..head_end].ends_with('/') {
            ""
        } else {
            let end = rest.find("</method>").unwrap_or(rest.len());
            &rest[head_end..end]
        };
        let mut signature = String::new();
        for arg in body.split("<arg ").skip(1) {
            let direction = attribute(arg, "direction").unwrap_or("in");
            if direction == "in" {
                signature.push_str(attribute(arg, "type").unwrap_or(""));
            }
        }
        out.insert(name.to_string(), signature);
        rest = &rest[head_end.min(rest.len())..];
    }
    out
}

/// The value of `key="..."` in the first tag of `s`.
fn attribute<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    let tag_end = s.find('>').unwrap_or(s.len());
    let tag = &s[..tag_end];
    let pat = format!(" {key}=\"");
    let start = tag.find(&pat)? + pat.len();
    let len = tag[start..].find('"')?;
    Some(&tag[start..start + len])
}

fn limits_error(e: LimitError) -> fdo::Error {
    fdo::Error::LimitsExceeded(e.to_string())
}

/// Sends `error` unless the caller asked for no reply.
async fn refuse(connection: &Connection, msg: &Message, error: fdo::Error) -> fdo::Result<()> {
    let hdr = msg.header();
    if hdr.primary().flags().contains(Flags::NoReplyExpected) {
        tracing::debug!(%error, "not answering a call that asked for no reply");
        return Ok(());
    }
    connection
        .reply_dbus_error(&hdr, error)
        .await
        .map(|_| ())
        .map_err(|e| fdo::Error::Failed(e.to_string()))
}

impl<I: Interface> Guarded<I> {
    /// The checks that need no waiting: the member exists and the arguments fit it.
    fn check_call(&self, msg: &Message, name: &MemberName<'_>) -> Result<(), fdo::Error> {
        let Some(expected) = self.signatures.get(name.as_str()) else {
            return Err(fdo::Error::UnknownMethod(format!(
                "Unknown method '{}' of interface '{}'",
                name,
                I::name()
            )));
        };
        let body = msg.body();
        let got = body.signature().to_string_no_parens();
        if got != *expected {
            return Err(fdo::Error::InvalidArgs(format!(
                "{}.{} takes arguments of signature '{expected}', not '{got}'",
                I::name(),
                name
            )));
        }
        Ok(())
    }

    /// Admits a property read and charges its reply.
    async fn admit_read(&self, header: Option<&Header<'_>>, bytes: u64) -> fdo::Result<()> {
        let sender = header.and_then(|h| h.sender());
        let permit = self.limits.admit(sender).await.map_err(limits_error)?;
        permit.add(bytes);
        permit.finish(SMALL_REPLY);
        Ok(())
    }
}

/// Wraps an interface's own answer: admitted first, charged after, silent when no reply was
/// asked for.
fn admitted<'call>(
    limits: Arc<Limits>,
    connection: &'call Connection,
    msg: &'call Message,
    inner: DispatchResult2<'call>,
) -> DispatchResult2<'call> {
    let f = match inner {
        DispatchResult2::Async(f) => f,
        other => return other,
    };
    DispatchResult2::Async(Box::pin(async move {
        let hdr = msg.header();
        let permit = match limits.admit(hdr.sender()).await {
            Ok(p) => p,
            Err(e) => return refuse(connection, msg, limits_error(e)).await,
        };
        let result = permit.scope(f).await;
        permit.finish(SMALL_REPLY);
        match result {
            Err(e) if hdr.primary().flags().contains(Flags::NoReplyExpected) => {
                tracing::debug!(error = %e, "not answering a call that asked for no reply");
                Ok(())
            }
            other => other,
        }
    }))
}

/// The encoded size of a property value, as it travels in a reply.
fn encoded_len<T: serde::Serialize + zbus::zvariant::DynamicType>(value: &T) -> u64 {
    let ctxt = zbus::zvariant::serialized::Context::new_dbus(zbus::zvariant::LE, 0);
    zbus::zvariant::serialized_size(ctxt, value).map_or(0, |s| s.size() as u64)
}

#[async_trait]
impl<I: Interface> Interface for Guarded<I> {
    fn name() -> InterfaceName<'static> {
        I::name()
    }

    fn spawn_tasks_for_methods(&self) -> bool {
        self.inner.spawn_tasks_for_methods()
    }

    async fn get(
        &self,
        property_name: &str,
        server: &ObjectServer,
        connection: &Connection,
        header: Option<&Header<'_>>,
        emitter: &SignalEmitter<'_>,
    ) -> Option<fdo::Result<OwnedValue>> {
        let value = self
            .inner
            .get(property_name, server, connection, header, emitter)
            .await?;
        if let Ok(v) = &value {
            if let Err(e) = self.admit_read(header, encoded_len(v)).await {
                return Some(Err(e));
            }
        }
        Some(value)
    }

    async fn get_all(
        &self,
        server: &ObjectServer,
        connection: &Connection,
        header: Option<&Header<'_>>,
        emitter: &SignalEmitter<'_>,
    ) -> fdo::Result<HashMap<String, OwnedValue>> {
        let all = self
            .inner
            .get_all(server, connection, header, emitter)
            .await?;
        // Internal reads (GetManagedObjects' own, InterfacesAdded) have no header and are
        // neither admitted nor charged here.
        if header.is_some() {
            self.admit_read(header, encoded_len(&all)).await?;
        }
        Ok(all)
    }

    fn set<'call>(
        &'call self,
        property_name: &'call str,
        value: &'call Value<'_>,
        server: &'call ObjectServer,
        connection: &'call Connection,
        header: Option<&'call Header<'_>>,
        emitter: &'call SignalEmitter<'_>,
    ) -> DispatchResult2<'call> {
        self.inner
            .set(property_name, value, server, connection, header, emitter)
    }

    async fn set_mut(
        &mut self,
        property_name: &str,
        value: &Value<'_>,
        server: &ObjectServer,
        connection: &Connection,
        header: Option<&Header<'_>>,
        emitter: &SignalEmitter<'_>,
    ) -> Option<fdo::Result<()>> {
        self.inner
            .set_mut(property_name, value, server, connection, header, emitter)
            .await
    }

    fn call<'call>(
        &'call self,
        server: &'call ObjectServer,
        connection: &'call Connection,
        msg: &'call Message,
        name: MemberName<'call>,
    ) -> DispatchResult2<'call> {
        if let Err(e) = self.check_call(msg, &name) {
            return DispatchResult2::Async(Box::pin(refuse(connection, msg, e)));
        }
        let inner = self.inner.call(server, connection, msg, name);
        admitted(self.limits.clone(), connection, msg, inner)
    }

    fn call_mut<'call>(
        &'call mut self,
        server: &'call ObjectServer,
        connection: &'call Connection,
        msg: &'call Message,
        name: MemberName<'call>,
    ) -> DispatchResult2<'call> {
        if let Err(e) = self.check_call(msg, &name) {
            return DispatchResult2::Async(Box::pin(refuse(connection, msg, e)));
        }
        let limits = self.limits.clone();
        let inner = self.inner.call_mut(server, connection, msg, name);
        admitted(limits, connection, msg, inner)
    }

    fn introspect_to_writer(&self, writer: &mut dyn Write, level: usize) {
        self.inner.introspect_to_writer(writer, level)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_come_from_the_introspection() {
        let xml = r#"<interface name="x">
  <method name="NoArgs"/>
  <method name="Empty">
  </method>
  <method name="Two">
    <arg name="a" type="s" direction="in"/>
    <arg name="b" type="a{sv}" direction="in"/>
    <arg type="o" direction="out"/>
  </method>
  <method name="Default">
    <arg name="a" type="y"/>
  </method>
  <signal name="S">
    <arg name="x" type="u"/>
  </signal>
  <property name="P" type="s" access="read"/>
</interface>"#;
        let m = method_signatures(xml);
        assert_eq!(m.len(), 4, "{m:?}");
        assert_eq!(m["NoArgs"], "");
        assert_eq!(m["Empty"], "");
        assert_eq!(m["Two"], "sa{sv}");
        assert_eq!(m["Default"], "y");
    }
}
