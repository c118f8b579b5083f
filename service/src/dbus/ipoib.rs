//! The `a{sv}` settings of `Ipoib.CreateChild`: `mode` (s: datagram or connected), `mtu` (u)
//! and `umcast` (b). An unknown key or a value of another type is refused with the list of
//! what is accepted, before anything is changed. And the replies of IPoIB operations that
//! went to NetworkManager (a pending change to publish).

use std::collections::HashMap;

use rdma_manager_dbus::text::quote_capped;
use rdma_manager_dbus::Error;
use zbus::zvariant::{OwnedValue, Value};

use crate::config::IpoibSettings;
use crate::model::ipoib::parse_mode;

const KNOWN: &str = "mode (s: \"datagram\" or \"connected\"), mtu (u) and umcast (b)";

fn wrong_type(key: &str, want: &str, got: &Value<'_>) -> Error {
    Error::InvalidArgument(format!(
        "setting {} must be of D-Bus type {want}, not {}; the settings are {KNOWN}",
        quote_capped(key),
        got.value_signature()
    ))
}

/// Reads CreateChild's settings. A refusal's sentence is capped: it quotes the caller's keys
/// and values.
pub fn child_settings(raw: &HashMap<String, OwnedValue>) -> Result<IpoibSettings, Error> {
    read_settings(raw).map_err(Error::capped)
}

fn read_settings(raw: &HashMap<String, OwnedValue>) -> Result<IpoibSettings, Error> {
    let mut s = IpoibSettings::default();
    // Sorted, so that the first complaint does not depend on hash order.
    let mut keys: Vec<&String> = raw.keys().collect();
    keys.sort();
    for key in keys {
        let Some(value) = raw.get(key) else {
            continue;
        };
        let value: &Value<'_> = value;
        match (key.as_str(), value) {
            ("mode", Value::Str(m)) => {
                s.mode = Some(
                    parse_mode(m.as_str()).map_err(|e| Error::InvalidArgument(e.to_string()))?,
                );
            }
            ("mode", other) => return Err(wrong_type("mode", "s", other)),
            ("mtu", Value::U32(m)) => s.mtu = Some(*m),
            ("mtu", other) => return Err(wrong_type("mtu", "u", other)),
            ("umcast", Value::Bool(b)) => s.umcast = Some(*b),
            ("umcast", other) => return Err(wrong_type("umcast", "b", other)),
            (other, _) => {
                return Err(Error::InvalidArgument(format!(
                    "setting {} is not known; the settings are {KNOWN}",
                    quote_capped(other)
                )))
            }
        }
    }
    Ok(s)
}

/// The reply of CreateChild: the child's object. A child NetworkManager makes is published
/// as a pending change, and its object is returned once the daemon has it (up to 5 s).
pub async fn child_created(
    ctx: &std::sync::Arc<super::Context>,
    created: crate::engine::ChildCreated,
) -> Result<zbus::zvariant::OwnedObjectPath, Error> {
    use crate::engine::ChildCreated;
    match created {
        ChildCreated::Kernel(ifindex) => Ok(super::values::object_path(
            rdma_manager_dbus::ipoib_path(ifindex),
        )),
        ChildCreated::NetworkManager { name, pending } => {
            ctx.changes().add(ctx, pending).await?;
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            loop {
                if let Some(ifindex) = ctx.engine().await?.ipoib_ifindex(&name).await {
                    return Ok(super::values::object_path(rdma_manager_dbus::ipoib_path(
                        ifindex,
                    )));
                }
                if std::time::Instant::now() >= deadline {
                    return Ok(super::values::object_path("/".to_string()));
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

/// Publishes a change an IPoIB operation made through NetworkManager, if it made one.
pub async fn pending_if_any(
    ctx: &std::sync::Arc<super::Context>,
    pending: Option<crate::engine::NmPending>,
) -> Result<(), Error> {
    if let Some(p) = pending {
        ctx.changes().add(ctx, p).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::IpoibMode;

    fn map(pairs: Vec<(&str, Value<'static>)>) -> HashMap<String, OwnedValue> {
        pairs
            .into_iter()
            .map(|(k, v)| {
                let v = OwnedValue::try_from(v).expect("owned");
                (k.to_string(), v)
            })
            .collect()
    }

    #[test]
    fn reads_each_setting() {
        assert_eq!(
            child_settings(&HashMap::new()).expect("empty"),
            IpoibSettings::default()
        );
        let s = child_settings(&map(vec![
            ("mode", Value::from("connected")),
            ("mtu", Value::from(9000u32)),
            ("umcast", Value::from(true)),
        ]))
        .expect("valid");
        assert_eq!(
            s,
            IpoibSettings {
                mode: Some(IpoibMode::Connected),
                mtu: Some(9000),
                umcast: Some(true),
            }
        );
    }

    #[test]
    fn refuses_unknown_keys_wrong_types_and_bad_modes() {
        for (pairs, why) in [
            (vec![("pkey", Value::from(2u16))], "\"pkey\" is not known"),
            (vec![("MTU", Value::from(2044u32))], "\"MTU\" is not known"),
            (vec![("mtu", Value::from(2044i32))], "type u, not i"),
            (vec![("mtu", Value::from("2044"))], "type u, not s"),
            (vec![("mtu", Value::from(2044u64))], "type u, not t"),
            (vec![("mode", Value::from(1u32))], "type s, not u"),
            (vec![("mode", Value::from("cm"))], "not known"),
            (vec![("umcast", Value::from(1u32))], "type b, not u"),
        ] {
            match child_settings(&map(pairs)) {
                Err(Error::InvalidArgument(m)) => assert!(m.contains(why), "{m}"),
                other => panic!("{why}: {other:?}"),
            }
        }
    }
}
