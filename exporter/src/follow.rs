//! Keeping the model current: subscribe to the daemon's PropertiesChanged and
//! InterfacesAdded/Removed (and to its bus name's owner), read GetManagedObjects once, then
//! apply each signal as it comes. A scrape reads memory; only the counters are asked for.
//!
//! Why the bus and not the daemon's direct socket (`/run/rdma-manager/direct`): the socket
//! answers GetManagedObjects without the bus's relay, which is what a client that reads the
//! whole model at every scrape should use, but it sends no signal.
//! Following signals on the bus makes the whole read happen once per daemon start, so the
//! relay's cost is paid once, not per scrape.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use rdma_manager_dbus::{BUS_NAME, ROOT_PATH};
use zbus::message::Type;
use zbus::zvariant::{OwnedObjectPath, OwnedValue};
use zbus::{Connection, MatchRule, Message, MessageStream};

use crate::model::{Model, Objects, Props, MANAGER_IFACE};

const PROPERTIES: &str = "org.freedesktop.DBus.Properties";
const OBJECT_MANAGER: &str = "org.freedesktop.DBus.ObjectManager";
const DBUS: &str = "org.freedesktop.DBus";

/// Bytes of signals kept while a GetManagedObjects is under way, to apply after its reply;
/// past this the read starts again (a storm of changes during a load). Bytes, not signals:
/// an InterfacesAdded of a device weighs a hundred PropertiesChanged.
const MAX_BUFFERED_BYTES: usize = 16 << 20;
/// A read of the model that failed (the daemon busy past the call's timeout, say) is tried
/// again after this long, for as long as it fails; the daemon's restart reads it at once.
const RETRY: std::time::Duration = std::time::Duration::from_secs(5);

/// Follows the daemon until the bus connection closes (then `Err`).
pub async fn follow(conn: Connection, model: Arc<Mutex<Model>>) -> zbus::Result<()> {
    // Every message of the connection in one stream, created before the match rules, so that
    // the daemon's signals keep the order it sent them in, with nothing lost; the daemon's
    // 1 Hz ThroughputSampled is not subscribed (the rules name the two interfaces).
    let mut stream = MessageStream::from(&conn);
    let dbus = zbus::fdo::DBusProxy::new(&conn).await?;
    for rule in [
        MatchRule::builder()
            .msg_type(Type::Signal)
            .sender(BUS_NAME)?
            .interface(PROPERTIES)?
            .member("PropertiesChanged")?
            .path_namespace(ROOT_PATH)?
            .build(),
        MatchRule::builder()
            .msg_type(Type::Signal)
            .sender(BUS_NAME)?
            .interface(OBJECT_MANAGER)?
            .path(ROOT_PATH)?
            .build(),
        MatchRule::builder()
            .msg_type(Type::Signal)
            .sender(DBUS)?
            .interface(DBUS)?
            .member("NameOwnerChanged")?
            .arg(0, BUS_NAME)?
            .build(),
    ] {
        dbus.add_match_rule(rule).await?;
    }

    let mut load = Some(Box::pin(read_all(conn.clone(), None)));
    let mut buffered: Vec<Message> = Vec::new();
    let mut buffered_bytes = 0;
    loop {
        tokio::select! {
            r = async { load.as_mut().expect("guarded").await }, if load.is_some() => {
                load = None;
                let mut m = lock(&model);
                match r {
                    Ok(objects) => {
                        m.replace(objects);
                        tracing::info!("read the daemon's model");
                        for msg in buffered.drain(..) {
                            apply(&mut m, &msg);
                        }
                        buffered_bytes = 0;
                        // The reply was the largest allocation so far (megabytes on a large
                        // host); what the model keeps of it is a fraction.
                        buffered.shrink_to_fit();
                        drop(m);
                        crate::release_freed_memory();
                    }
                    Err(e) => {
                        buffered.clear();
                        buffered_bytes = 0;
                        tracing::warn!("cannot read rdma-managerd (again in {RETRY:?}): {e}");
                        m.clear(format!("cannot read rdma-managerd: {e}"));
                        load = Some(Box::pin(read_all(conn.clone(), Some(RETRY))));
                    }
                }
            }
            msg = stream.next() => {
                let Some(msg) = msg else {
                    return Err(zbus::Error::Failure("the bus connection closed".into()));
                };
                let Ok(msg) = msg else { continue };
                if msg.message_type() != Type::Signal {
                    continue;
                }
                let header = msg.header();
                let member = header.member().map(|m| m.as_str().to_string());
                if member.as_deref() == Some("NameOwnerChanged") {
                    let Ok((name, _old, new)) = msg.body().deserialize::<(String, String, String)>()
                    else { continue };
                    if name != BUS_NAME {
                        continue;
                    }
                    buffered.clear();
                    buffered_bytes = 0;
                    if new.is_empty() {
                        tracing::warn!("rdma-managerd left the bus");
                        load = None;
                        lock(&model).clear("rdma-managerd is not on the bus".into());
                    } else {
                        tracing::info!("rdma-managerd (re)started: reading its model");
                        load = Some(Box::pin(read_all(conn.clone(), None)));
                    }
                    continue;
                }
                if load.is_some() {
                    let size = msg.data().len();
                    if buffered_bytes + size > MAX_BUFFERED_BYTES {
                        buffered.clear();
                        buffered_bytes = 0;
                        load = Some(Box::pin(read_all(conn.clone(), None)));
                    }
                    buffered_bytes += size;
                    buffered.push(msg);
                } else {
                    apply(&mut lock(&model), &msg);
                }
            }
        }
    }
}

/// The model's lock; a panic elsewhere while holding it leaves data that is still whole.
pub fn lock(model: &Mutex<Model>) -> std::sync::MutexGuard<'_, Model> {
    model.lock().unwrap_or_else(|e| e.into_inner())
}

/// The root's own properties (GetAll: an object manager lists only the objects below it),
/// then every object below it, only what the model keeps; after `delay` when it is a retry.
async fn read_all(conn: Connection, delay: Option<std::time::Duration>) -> zbus::Result<Objects> {
    if let Some(d) = delay {
        tokio::time::sleep(d).await;
    }
    let reply = conn
        .call_method(
            Some(BUS_NAME),
            ROOT_PATH,
            Some(PROPERTIES),
            "GetAll",
            &(MANAGER_IFACE,),
        )
        .await?;
    let root: Props = reply.body().deserialize()?;
    let reply = conn
        .call_method(
            Some(BUS_NAME),
            ROOT_PATH,
            Some(OBJECT_MANAGER),
            "GetManagedObjects",
            &(),
        )
        .await?;
    // Decoded on a worker thread, whose allocations malloc makes in an arena of its own, and
    // only the kept part encoded again and decoded here. The reply holds every property of
    // every object (GID tables, for one) and the model keeps a tenth of it: decoded here, what
    // it keeps would lie scattered over the pages of what it drops, all of them staying
    // resident; this way the worker's arena is freed whole and the model's pages are its own.
    let kept = tokio::task::spawn_blocking(move || kept_encoding(&reply))
        .await
        .map_err(|e| zbus::Error::Failure(format!("decoding the model: {e}")))??;
    let (mut objects, _): (Objects, usize) = kept.deserialize()?;
    objects
        .entry(OwnedObjectPath::try_from(ROOT_PATH)?)
        .or_default()
        .insert(MANAGER_IFACE.to_string(), root);
    Ok(objects)
}

/// GetManagedObjects' reply with only what the model keeps, encoded as [`Objects`].
fn kept_encoding(
    reply: &Message,
) -> zbus::Result<zbus::zvariant::serialized::Data<'static, 'static>> {
    let objects: zbus::fdo::ManagedObjects = reply.body().deserialize()?;
    let kept: Objects = objects
        .into_iter()
        .map(|(path, ifaces)| {
            let ifaces = ifaces
                .into_iter()
                .filter_map(|(name, props)| {
                    let name = name.to_string();
                    crate::model::kept(&name, props).map(|p| (name, p))
                })
                .collect();
            (path, ifaces)
        })
        .collect();
    let ctxt = zbus::zvariant::serialized::Context::new_dbus(zbus::zvariant::LE, 0);
    Ok(zbus::zvariant::to_bytes(ctxt, &kept)?)
}

/// One of the daemon's signals applied; one that does not parse is ignored.
fn apply(model: &mut Model, msg: &Message) {
    let header = msg.header();
    let (Some(path), Some(member)) = (header.path(), header.member()) else {
        return;
    };
    match member.as_str() {
        "PropertiesChanged" => {
            if let Ok((iface, changed, invalidated)) =
                msg.body()
                    .deserialize::<(String, HashMap<String, OwnedValue>, Vec<String>)>()
            {
                model.apply_properties(path.as_str(), &iface, changed, &invalidated);
            }
        }
        "InterfacesAdded" => {
            if let Ok((obj, ifaces)) = msg
                .body()
                .deserialize::<(OwnedObjectPath, HashMap<String, Props>)>()
            {
                model.add(obj.as_str(), ifaces);
            }
        }
        "InterfacesRemoved" => {
            if let Ok((obj, ifaces)) = msg.body().deserialize::<(OwnedObjectPath, Vec<String>)>() {
                model.remove(obj.as_str(), &ifaces);
            }
        }
        _ => {}
    }
}
