//! `org.freedesktop.DBus.ObjectManager` at the root, answering GetManagedObjects from a cache of
//! each object's encoded entry.
//!
//! zbus's own ObjectManager rebuilds the answer on every call: it asks every interface of
//! every object for all its properties, collects them into hash maps of owned values and
//! serializes those: on a large host thousands of objects and over a megabyte, rebuilt at
//! every call. Here each object's dict entry
//! `{o a{sa{sv}}}` is encoded once, when first asked for after it changed, and a call only
//! concatenates the entries. That is sound because D-Bus aligns relative to the start of the
//! body and a dict entry is 8-aligned: an entry encoded at offset 0 is the same bytes at any
//! 8-aligned offset.
//!
//! The encodings are kept while calls come: the size of a reply, which a host that nobody
//! asks would hold for nothing. Start-up only measures the reply (for the call
//! limits) and keeps none of it; the first call encodes and keeps, and encodings that no call
//! has used for [`KEEP_ENCODINGS_IDLE`] are dropped (`forget_if_idle`, from the server's
//! housekeeping), so a scraper that asks every few minutes finds them kept.
//!
//! InterfacesAdded and InterfacesRemoved are still emitted by zbus's object server, which
//! recognizes an object manager by its interface name; the introspection is zbus's own.
//! The [`Interface`] trait is implemented by hand because the `interface` macro can only reply
//! with a value it serializes itself; zbus marks the trait as unstable, so a zbus upgrade may
//! need this file adjusted (the D-Bus tests cover GetManagedObjects and the signals).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use zbus::message::{Flags, Header, Message};
use zbus::names::{InterfaceName, MemberName};
use zbus::object_server::{DispatchResult2, Interface, SignalEmitter};
use zbus::zvariant::serialized::Context;
use zbus::zvariant::{Endian, ObjectPath, OwnedValue, Value};
use zbus::{fdo, Connection, ObjectServer};

/// GetManagedObjects' reply signature.
const SIGNATURE: &str = "a{oa{sa{sv}}}";
/// The cache and the replies are little-endian whatever the caller's byte order (D-Bus lets
/// every message choose its own).
const ENDIAN: Endian = Endian::Little;

/// What gives an object's properties when its entry is encoded: the publisher's property
/// cell itself (shared, so an entry costs no allocation of its own) or, in tests, a closure.
pub trait EntryProps: Send + Sync {
    fn all(&self) -> Vec<(&'static str, Value<'static>)>;
}

impl<F> EntryProps for F
where
    F: Fn() -> Vec<(&'static str, Value<'static>)> + Send + Sync,
{
    fn all(&self) -> Vec<(&'static str, Value<'static>)> {
        self()
    }
}

struct Entry {
    interface: InterfaceName<'static>,
    props: Arc<dyn EntryProps>,
    bytes: Option<Arc<Vec<u8>>>,
}

impl Entry {
    fn encode(&self, path: &str) -> zbus::Result<Vec<u8>> {
        encode_entry(path, &self.interface, self.props.all())
    }
}

/// How long encodings no call has used are kept: longer than a fleet scraper's period, so
/// that its calls only join entries.
pub const KEEP_ENCODINGS_IDLE: Duration = Duration::from_secs(5 * 60);

/// The objects under the root, by path, each with how to encode it and its encoding if it
/// has not changed since (and a call used it lately).
#[derive(Default)]
pub struct ManagedCache {
    entries: Mutex<Entries>,
    /// The root's own interface, which GetManagedObjects leaves out and the JSON document
    /// has (its first object).
    root: Mutex<Option<Shared>>,
    /// Moves at every change of an object or the root, so that a kept document is known to
    /// be current.
    generation: AtomicU64,
    /// The last document built and the generation it was built at; dropped with the
    /// encodings when no call used them lately.
    document: Mutex<Option<(u64, Arc<str>)>>,
}

/// An object's interface and where its properties come from.
type Shared = (InterfaceName<'static>, Arc<dyn EntryProps>);

#[derive(Default)]
struct Entries {
    by_path: BTreeMap<Box<str>, Entry>,
    /// When a reply last used the encodings; `None` while none is kept.
    last_used: Option<Instant>,
}

impl ManagedCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new object; `props` gives its interface's current properties when it is encoded.
    pub fn insert(
        &self,
        path: &str,
        interface: InterfaceName<'static>,
        props: impl EntryProps + 'static,
    ) {
        self.insert_shared(path, interface, Arc::new(props));
    }

    /// A new object whose properties come from `props`, shared with whoever else holds it.
    pub fn insert_shared(
        &self,
        path: &str,
        interface: InterfaceName<'static>,
        props: Arc<dyn EntryProps>,
    ) {
        self.lock().by_path.insert(
            path.into(),
            Entry {
                interface,
                props,
                bytes: None,
            },
        );
        self.changed();
    }

    /// The object's properties changed.
    pub fn invalidate(&self, path: &str) {
        if let Some(e) = self.lock().by_path.get_mut(path) {
            e.bytes = None;
        }
        // The root too, which has no entry.
        self.changed();
    }

    pub fn remove(&self, path: &str) {
        self.lock().by_path.remove(path);
        self.changed();
    }

    /// The root object's own interface, for [`ManagedCache::document`].
    pub fn set_root(&self, interface: InterfaceName<'static>, props: Arc<dyn EntryProps>) {
        *self.root.lock().unwrap_or_else(|p| p.into_inner()) = Some((interface, props));
        self.changed();
    }

    /// Something the document shows changed.
    fn changed(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// The JSON document of docs/JSON.md (`rdma-tui --json`), pretty-printed: the root's
    /// interface and every object's, as GetManagedObjects and the root's GetAll give them and
    /// a client would turn them into the document. Built from the properties as published
    /// when first asked for after a change, and kept for the calls after it; the cache's lock
    /// is held only to list the objects, never while the document is built.
    pub fn document(&self) -> Arc<str> {
        let generation = self.generation.load(Ordering::SeqCst);
        let kept = match &*self.document.lock().unwrap_or_else(|p| p.into_inner()) {
            Some((kept, text)) if *kept == generation => Some(text.clone()),
            _ => None,
        };
        if let Some(text) = kept {
            // Used: kept as long as calls come, as the encodings are.
            self.lock().last_used = Some(Instant::now());
            return text;
        }
        let text: Arc<str> = self.build_document().into();
        // Built from what was published at `generation` or later: a change while it was
        // built moved the generation, and the next call builds again.
        *self.document.lock().unwrap_or_else(|p| p.into_inner()) = Some((generation, text.clone()));
        self.lock().last_used = Some(Instant::now());
        text
    }

    fn build_document(&self) -> String {
        let root = self.root.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let objects: Vec<(Box<str>, Shared)> = self
            .lock()
            .by_path
            .iter()
            .map(|(path, e)| (path.clone(), (e.interface.clone(), e.props.clone())))
            .collect();
        let mut doc = rdma_manager_dbus::json::Document::new();
        let root = root.map(|shared| (rdma_manager_dbus::ROOT_PATH.into(), shared));
        for (path, (interface, props)) in root.iter().chain(objects.iter()) {
            let all = props.all();
            doc.add(path, interface.as_str(), all.iter().map(|(k, v)| (*k, v)));
        }
        doc.to_pretty_string()
    }

    /// What ibstat with `args` prints of the Device and Port objects as published
    /// (`Direct.GetIbstat`): their records filled as a client fills them from
    /// GetManagedObjects, rendered by the adapter `rdma-tui --ibstat` renders its records
    /// with, so that the output is the client's to the byte. Built at each call (the objects
    /// are not encoded for it); the cache's lock is held only to list the objects.
    pub fn ibstat(
        &self,
        args: &rdma_manager_dbus::ibstat::IbstatArgs,
    ) -> rdma_manager_dbus::ibstat::IbstatRun {
        use rdma_manager_dbus::records::{Device, Port};
        let objects: Vec<(Box<str>, Shared)> = self
            .lock()
            .by_path
            .iter()
            .filter(|(_, e)| matches!(e.interface.as_str(), Device::INTERFACE | Port::INTERFACE))
            .map(|(path, e)| (path.clone(), (e.interface.clone(), e.props.clone())))
            .collect();
        let mut devices = Vec::new();
        let mut ports = BTreeMap::new();
        for (path, (interface, props)) in objects {
            let values = props.all().into_iter().filter_map(|(name, value)| {
                // A value the bus could carry is one a record takes; one that cannot be
                // owned (a file descriptor) is no property of these interfaces.
                OwnedValue::try_from(value).ok().map(|v| (name, v))
            });
            // A record of `$kind` at `path`, every published value set.
            macro_rules! filled {
                ($kind:ident) => {{
                    let mut record = $kind {
                        path: path.to_string(),
                        ..$kind::default()
                    };
                    for (name, value) in values {
                        if let Err(e) = record.set(name, &value) {
                            tracing::warn!(%path, error = %e, "ibstat: a published value its record refuses");
                        }
                    }
                    record
                }};
            }
            if interface.as_str() == Device::INTERFACE {
                devices.push(filled!(Device));
            } else {
                ports.insert(path.to_string(), filled!(Port));
            }
        }
        let devices = rdma_manager_dbus::ibstat::bus::devices(&devices, &ports);
        rdma_manager_dbus::ibstat::run(&devices, args)
    }

    /// The body of a GetManagedObjects reply; the encodings are kept for the next call.
    pub fn body(&self) -> zbus::Result<Vec<u8>> {
        let mut entries = self.lock();
        let mut chunks = Vec::with_capacity(entries.by_path.len());
        for (path, e) in entries.by_path.iter_mut() {
            let bytes = match &e.bytes {
                Some(b) => b.clone(),
                None => {
                    let b = Arc::new(e.encode(path)?);
                    e.bytes = Some(b.clone());
                    b
                }
            };
            chunks.push(bytes);
        }
        entries.last_used = Some(Instant::now());
        drop(entries);
        Ok(concat_entries(&chunks))
    }

    /// The length of [`ManagedCache::body`] now, keeping no encoding it had to make.
    pub fn body_len(&self) -> zbus::Result<usize> {
        let entries = self.lock();
        let mut lens = Vec::with_capacity(entries.by_path.len());
        for (path, e) in entries.by_path.iter() {
            lens.push(match &e.bytes {
                Some(b) => b.len(),
                None => e.encode(path)?.len(),
            });
        }
        Ok(array_len(lens))
    }

    /// Drops every encoding when no reply has used them for `idle` (at `now`); true if it
    /// dropped any. The next call encodes again.
    pub fn forget_if_idle(&self, now: Instant, idle: Duration) -> bool {
        let mut entries = self.lock();
        let Some(last) = entries.last_used else {
            return false;
        };
        if now.saturating_duration_since(last) < idle {
            return false;
        }
        entries.last_used = None;
        let mut dropped = self
            .document
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .is_some();
        for e in entries.by_path.values_mut() {
            dropped |= e.bytes.take().is_some();
        }
        dropped
    }
}

/// One dict entry `{o a{sa{sv}}}`, encoded at offset 0 (a struct of the same two fields has
/// the same encoding).
fn encode_entry(
    path: &str,
    interface: &InterfaceName<'static>,
    props: Vec<(&'static str, Value<'static>)>,
) -> zbus::Result<Vec<u8>> {
    let path = ObjectPath::try_from(path)?;
    let props: HashMap<&str, Value<'static>> = props.into_iter().collect();
    let ifaces: HashMap<&str, HashMap<&str, Value<'static>>> =
        [(interface.as_str(), props)].into_iter().collect();
    let data = zbus::zvariant::to_bytes(Context::new_dbus(ENDIAN, 0), &(path, ifaces))?;
    Ok(data.bytes().to_vec())
}

/// The length of [`concat_entries`]' array of entries of these lengths.
fn array_len(lens: impl IntoIterator<Item = usize>) -> usize {
    lens.into_iter().enumerate().fold(8, |end, (i, len)| {
        if i > 0 {
            end.next_multiple_of(8) + len
        } else {
            end + len
        }
    })
}

/// An array of dict entries from entries encoded at offset 0: the length, padding to 8 (even
/// when empty), then each entry at the next multiple of 8.
fn concat_entries(chunks: &[Arc<Vec<u8>>]) -> Vec<u8> {
    let total: usize = chunks.iter().map(|c| c.len() + 7).sum();
    let mut body = Vec::with_capacity(8 + total);
    body.extend_from_slice(&[0; 8]);
    for (i, c) in chunks.iter().enumerate() {
        if i > 0 {
            body.resize(body.len().next_multiple_of(8), 0);
        }
        body.extend_from_slice(c);
    }
    let len = u32::try_from(body.len() - 8).unwrap_or(u32::MAX);
    body[..4].copy_from_slice(&len.to_le_bytes());
    body
}

/// The root's ObjectManager.
pub struct ManagedObjects {
    cache: Arc<ManagedCache>,
    /// True once start-up has published the whole host: until then a call waits, so that
    /// GetManagedObjects never answers with a half-read host (the name is owned before the
    /// host is read; see `server`).
    complete: tokio::sync::watch::Receiver<bool>,
}

impl ManagedObjects {
    pub fn new(cache: Arc<ManagedCache>, complete: tokio::sync::watch::Receiver<bool>) -> Self {
        ManagedObjects { cache, complete }
    }

    async fn reply(&self, connection: &Connection, msg: &Message) -> fdo::Result<()> {
        let hdr = msg.header();
        // An error only when the sender is gone, which is the daemon failing to start: the
        // answer is then the objects published so far.
        let _ = self.complete.clone().wait_for(|c| *c).await;
        if hdr.primary().flags().contains(Flags::NoReplyExpected) {
            return Ok(());
        }
        let failed = |e: zbus::Error| fdo::Error::Failed(e.to_string());
        let reply = reply_message(&hdr, &self.cache).map_err(failed)?;
        // Large by nature (1.5 MB for 1800 objects): counted against what the caller has not
        // read yet (see `limits`).
        super::limits::charge_current(reply.data().len() as u64);
        connection.send(&reply).await.map_err(failed)
    }
}

/// The reply to the GetManagedObjects call `hdr`: the bus's, and the direct socket's
/// (`direct`).
pub(super) fn reply_message(hdr: &Header<'_>, cache: &ManagedCache) -> zbus::Result<Message> {
    let body = cache.body()?;
    // SAFETY: `build_raw_body` is unsafe because the bytes are trusted to be a body of
    // the signature, with the Unix FDs it names passed along (zbus's own
    // `zvariant::to_writer` is unsafe for the same reason: a body naming fd indices that
    // the message does not carry). Both hold here:
    // - the body: every entry is zvariant's own encoding of (ObjectPath, a{sa{sv}}) at
    //   offset 0 in ENDIAN (`encode_entry`), which is the encoding of a dict entry
    //   {oa{sa{sv}}} at any 8-aligned offset (a dict entry is 8-aligned and D-Bus aligns
    //   relative to the start of the body); `concat_entries` lays them out as the format
    //   lays out an array: a u32 byte length, padding to 8 even when empty, each element at
    //   the next multiple of 8. The reply is ENDIAN, whatever the caller's byte order.
    //   The unit tests below decode such bodies with zvariant, and the D-Bus test
    //   `the_cached_object_manager_answers_as_zbus_own_does` compares the answer with zbus's
    //   own ObjectManager's on the same objects.
    // - FDs: none is passed (`vec![]`), and none is named: the values come from the
    //   objects' views, whose fields are strings, numbers, booleans, object paths and
    //   containers of them, never a file descriptor ('h').
    // A body that broke these would be a protocol error for the peer (the bus daemon
    // checks every message it routes, a direct client every message it reads), not memory
    // unsafety here: the message is only written to the socket.
    unsafe {
        Message::method_return(hdr)?
            .endian(ENDIAN)
            .build_raw_body(&body, SIGNATURE, vec![])
    }
}

#[async_trait]
impl Interface for ManagedObjects {
    fn name() -> InterfaceName<'static> {
        <fdo::ObjectManager as Interface>::name()
    }

    async fn get(
        &self,
        _property_name: &str,
        _server: &ObjectServer,
        _connection: &Connection,
        _header: Option<&Header<'_>>,
        _emitter: &SignalEmitter<'_>,
    ) -> Option<fdo::Result<OwnedValue>> {
        None
    }

    async fn get_all(
        &self,
        _server: &ObjectServer,
        _connection: &Connection,
        _header: Option<&Header<'_>>,
        _emitter: &SignalEmitter<'_>,
    ) -> fdo::Result<HashMap<String, OwnedValue>> {
        Ok(HashMap::new())
    }

    async fn set_mut(
        &mut self,
        _property_name: &str,
        _value: &Value<'_>,
        _server: &ObjectServer,
        _connection: &Connection,
        _header: Option<&Header<'_>>,
        _emitter: &SignalEmitter<'_>,
    ) -> Option<fdo::Result<()>> {
        None
    }

    fn call<'call>(
        &'call self,
        _server: &'call ObjectServer,
        connection: &'call Connection,
        msg: &'call Message,
        name: MemberName<'call>,
    ) -> DispatchResult2<'call> {
        if name.as_str() != "GetManagedObjects" {
            return DispatchResult2::NotFound;
        }
        DispatchResult2::Async(Box::pin(self.reply(connection, msg)))
    }

    fn call_mut<'call>(
        &'call mut self,
        _server: &'call ObjectServer,
        _connection: &'call Connection,
        _msg: &'call Message,
        _name: MemberName<'call>,
    ) -> DispatchResult2<'call> {
        DispatchResult2::NotFound
    }

    fn introspect_to_writer(&self, writer: &mut dyn Write, level: usize) {
        fdo::ObjectManager.introspect_to_writer(writer, level)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use zbus::zvariant::serialized::Data;
    use zbus::zvariant::OwnedObjectPath;

    type Managed = HashMap<OwnedObjectPath, HashMap<String, HashMap<String, OwnedValue>>>;

    fn decode(body: Vec<u8>) -> Managed {
        let data = Data::new(body, Context::new_dbus(ENDIAN, 0));
        let (m, used): (Managed, usize) = data.deserialize().expect("a valid a{oa{sa{sv}}}");
        assert_eq!(used, data.len(), "no bytes left over");
        m
    }

    fn iface() -> InterfaceName<'static> {
        InterfaceName::from_static_str_unchecked("org.example.Thing")
    }

    /// The document is built once after a change, kept for the calls after, and built again
    /// after any object or the root changes, is added or is removed; dropped when idle.
    #[test]
    fn the_document_is_kept_until_something_changes() {
        let cache = ManagedCache::default();
        let builds = Arc::new(AtomicU32::new(0));
        let counted = builds.clone();
        let value = Arc::new(AtomicU32::new(1));
        let shown = value.clone();
        cache.insert("/a", iface(), move || {
            counted.fetch_add(1, Ordering::SeqCst);
            vec![("N", Value::from(shown.load(Ordering::SeqCst)))]
        });
        cache.set_root(iface(), Arc::new(|| vec![("Root", Value::from(true))]));
        let first = cache.document();
        assert!(
            first.contains("\"N\": 1") && first.contains("\"Root\": true"),
            "{first}"
        );
        // Last used long ago; a call that finds it kept uses it again, so it stays.
        let long_ago = Instant::now().checked_sub(2 * KEEP_ENCODINGS_IDLE);
        cache.lock().last_used = long_ago;
        assert_eq!(cache.document(), first);
        assert_eq!(builds.load(Ordering::SeqCst), 1, "kept");
        assert!(
            !cache.forget_if_idle(Instant::now(), KEEP_ENCODINGS_IDLE),
            "a kept document in use is not idle"
        );
        value.store(2, Ordering::SeqCst);
        cache.invalidate("/a");
        assert!(cache.document().contains("\"N\": 2"));
        cache.invalidate(rdma_manager_dbus::ROOT_PATH);
        cache.document();
        assert_eq!(
            builds.load(Ordering::SeqCst),
            3,
            "the root's change builds again"
        );
        cache.remove("/a");
        assert!(!cache.document().contains("\"N\""));
        let later = Instant::now() + KEEP_ENCODINGS_IDLE;
        assert!(
            cache.forget_if_idle(later, KEEP_ENCODINGS_IDLE),
            "the document is dropped"
        );
        assert!(cache
            .document
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none());
    }

    #[test]
    fn the_joined_entries_decode_as_the_whole_map() {
        let cache = ManagedCache::default();
        assert!(decode(cache.body().unwrap()).is_empty());
        // Paths of different lengths and values of different alignments, so the entries end
        // at every offset modulo 8.
        for (i, name) in ["/a", "/bb/c", "/ddd/eeee/f", "/g/h"]
            .into_iter()
            .enumerate()
        {
            let n = i as u32;
            cache.insert(name, iface(), move || {
                vec![
                    ("Name", Value::from("x".repeat(i + 1))),
                    ("Number", Value::from(n)),
                    ("Big", Value::from(u64::from(n) << 40)),
                    ("Flag", Value::from(n % 2 == 0)),
                    ("List", Value::from(vec![(n, "s".to_string())])),
                ]
            });
        }
        let m = decode(cache.body().unwrap());
        assert_eq!(m.len(), 4);
        let thing = &m[&OwnedObjectPath::try_from("/ddd/eeee/f").unwrap()]["org.example.Thing"];
        assert_eq!(
            thing["Name"],
            OwnedValue::from(zbus::zvariant::Str::from("xxx"))
        );
        assert_eq!(thing["Number"], OwnedValue::from(2u32));
        assert_eq!(thing["Big"], OwnedValue::from(2u64 << 40));

        cache.remove("/bb/c");
        cache.invalidate("/a");
        let m = decode(cache.body().unwrap());
        assert_eq!(m.len(), 3);
        assert!(m.contains_key(&OwnedObjectPath::try_from("/g/h").unwrap()));
    }

    /// Inserts `path` with one text property, counting its encodings in `encodings`.
    fn insert_counted(cache: &ManagedCache, path: &str, text: String, encodings: &Arc<AtomicU32>) {
        let count = encodings.clone();
        cache.insert(path, iface(), move || {
            count.fetch_add(1, Ordering::Relaxed);
            vec![("Name", Value::from(text.clone()))]
        });
    }

    #[test]
    fn the_measured_length_is_the_body_s_and_keeps_nothing() {
        let cache = ManagedCache::default();
        assert_eq!(cache.body_len().unwrap(), cache.body().unwrap().len());
        let encodings = Arc::new(AtomicU32::new(0));
        for (i, name) in ["/a", "/bb/c", "/ddd/eeee/f"].into_iter().enumerate() {
            insert_counted(&cache, name, "x".repeat(i + 1), &encodings);
        }
        let made = || encodings.load(Ordering::Relaxed);
        let len = cache.body_len().unwrap();
        assert_eq!(made(), 3);
        cache.body_len().unwrap();
        assert_eq!(made(), 6, "measuring keeps no encoding");
        assert_eq!(cache.body().unwrap().len(), len);
        assert_eq!(made(), 9);
        assert_eq!(cache.body_len().unwrap(), len);
        assert_eq!(made(), 9, "measured from the kept encodings");
    }

    #[test]
    fn encodings_unused_for_the_idle_time_are_dropped_and_made_again() {
        let cache = ManagedCache::default();
        let encodings = Arc::new(AtomicU32::new(0));
        insert_counted(&cache, "/x", "x".into(), &encodings);
        let made = || encodings.load(Ordering::Relaxed);
        let idle = Duration::from_secs(300);
        assert!(
            !cache.forget_if_idle(Instant::now(), idle),
            "nothing kept yet"
        );
        let first = cache.body().unwrap();
        let asked = Instant::now();
        assert!(!cache.forget_if_idle(asked + idle / 2, idle), "used lately");
        cache.body().unwrap();
        assert_eq!(made(), 1, "kept between calls");
        assert!(cache.forget_if_idle(asked + idle * 2, idle));
        assert!(
            !cache.forget_if_idle(asked + idle * 3, idle),
            "already dropped"
        );
        assert_eq!(cache.body().unwrap(), first);
        assert_eq!(made(), 2, "encoded again after it was dropped");
    }

    #[test]
    fn an_invalidated_entry_is_encoded_again() {
        let cache = ManagedCache::default();
        let value = Arc::new(Mutex::new(1u32));
        let v = value.clone();
        cache.insert("/x", iface(), move || {
            vec![("N", Value::from(*v.lock().unwrap()))]
        });
        let n = |m: &Managed| m.values().next().unwrap()["org.example.Thing"]["N"].clone();
        assert_eq!(n(&decode(cache.body().unwrap())), OwnedValue::from(1u32));
        *value.lock().unwrap() = 7;
        assert_eq!(
            n(&decode(cache.body().unwrap())),
            OwnedValue::from(1u32),
            "kept until invalidated"
        );
        cache.invalidate("/x");
        assert_eq!(n(&decode(cache.body().unwrap())), OwnedValue::from(7u32));
    }
}
