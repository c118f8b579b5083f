//! Keeps the bus objects equal to the engine's state: creates objects that appeared, removes
//! those that went, and for the rest replaces the property cell and emits one
//! PropertiesChanged with exactly the properties that differ. Publishing the same state twice
//! emits nothing, which is what makes duplicated kernel events harmless.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use rdma_manager_dbus::{device_path, ipoib_path, port_path, HOST_PATH, ROOT_PATH};
use tokio::sync::Mutex;
use tracing::warn;
use zbus::names::InterfaceName;
use zbus::object_server::{Interface, SignalEmitter};
use zbus::zvariant::{OwnedObjectPath, Value};
use zbus::Connection;

use super::guard::Guarded;
use super::managed::{EntryProps, ManagedCache};
use super::object_paths::ObjectPaths;
use super::objects::{device_view, host_view, ipoib_view, port_view, root_view, IpoibLinks};
use super::objects::{
    Cell, DeviceObject, DeviceView, HostSetupObject, HostSetupView, IpoibObject, IpoibView,
    PortObject, PortView, RootObject, RootView,
};
use super::Context;
use crate::engine::{Dirty, ObservedState, Sample, Sink};

#[derive(Default)]
struct Published {
    root: Option<Cell<RootView>>,
    devices: HashMap<u32, Cell<DeviceView>>,
    ports: HashMap<(u32, u32), Cell<PortView>>,
    ipoib: HashMap<u32, Cell<IpoibView>>,
    host: Option<Cell<HostSetupView>>,
}

pub struct Publisher {
    conn: Connection,
    ctx: Arc<Context>,
    simulated: bool,
    tick_us: u64,
    /// The root's `Startup`: true until [`Publisher::started`].
    startup: AtomicBool,
    published: Mutex<Published>,
    /// GetManagedObjects' encoded entries, dropped as objects change.
    managed: Arc<ManagedCache>,
    /// The object paths of the last published state, shared by the views and the rows of
    /// ThroughputSampled (which names every port at every tick: formatting and validating
    /// 256 paths a second was a measurable part of the idle daemon's CPU in the lab).
    paths: std::sync::Mutex<Arc<ObjectPaths>>,
    /// How ThroughputSampled is delivered while a subscriber does not read.
    signal_guard: super::signal_guard::SignalGuard,
}

/// A row of ThroughputSampled: port, TX and RX bytes/s, TX and RX packets/s, flags.
type SampleRow = (OwnedObjectPath, f64, f64, f64, f64, u8);

/// A property cell is what GetManagedObjects encodes the object's entry from.
impl<V: Shown> EntryProps for RwLock<V> {
    fn all(&self) -> Vec<(&'static str, Value<'static>)> {
        self.read().unwrap_or_else(|p| p.into_inner()).all()
    }
}

/// A view type and the object that shows it.
trait Shown: Clone + PartialEq + Send + Sync + 'static {
    type Object: Interface;
    fn object(view: Cell<Self>, ctx: Arc<Context>) -> Self::Object;
    fn changed(&self, old: &Self) -> Vec<(&'static str, Value<'static>)>;
    fn all(&self) -> Vec<(&'static str, Value<'static>)>;
}

macro_rules! shown {
    ($view:ident, $obj:ident) => {
        impl Shown for $view {
            type Object = $obj;
            fn object(view: Cell<Self>, ctx: Arc<Context>) -> $obj {
                $obj { view, ctx }
            }
            fn changed(&self, old: &Self) -> Vec<(&'static str, Value<'static>)> {
                $view::changed(self, old)
            }
            fn all(&self) -> Vec<(&'static str, Value<'static>)> {
                $view::all(self)
            }
        }
    };
}
shown!(RootView, RootObject);
shown!(DeviceView, DeviceObject);
shown!(PortView, PortObject);
shown!(IpoibView, IpoibObject);
shown!(HostSetupView, HostSetupObject);

impl Publisher {
    pub fn new(
        conn: &Connection,
        ctx: Arc<Context>,
        managed: Arc<ManagedCache>,
        simulated: bool,
        tick_us: u64,
    ) -> Self {
        Publisher {
            conn: conn.clone(),
            ctx,
            simulated,
            tick_us,
            startup: AtomicBool::new(true),
            published: Mutex::new(Published::default()),
            managed,
            paths: Default::default(),
            signal_guard: Default::default(),
        }
    }

    /// Publishes the root alone, with `Startup` true and no device yet: what a client finds
    /// between the name being owned and the host being read.
    pub async fn starting(&self) {
        let mut p = self.published.lock().await;
        if p.root.is_none() {
            p.root = self
                .upsert(
                    ROOT_PATH,
                    None,
                    self.root_view(&ObservedState::default(), &ObjectPaths::default()),
                )
                .await;
        }
    }

    /// Start-up is over: the root's `Startup` becomes false, with its PropertiesChanged.
    pub async fn started(&self) {
        self.startup.store(false, Ordering::SeqCst);
        let p = self.published.lock().await;
        if let Some(root) = &p.root {
            let mut view = root.read().unwrap_or_else(|p| p.into_inner()).clone();
            view.startup = false;
            self.upsert(ROOT_PATH, Some(root), view).await;
        }
    }

    /// The paths of the last published state.
    fn paths(&self) -> Arc<ObjectPaths> {
        self.paths.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The paths of `state`, kept for the next publish and the samples.
    fn sync_paths(&self, state: &ObservedState) -> Arc<ObjectPaths> {
        let mut kept = self.paths.lock().unwrap_or_else(|p| p.into_inner());
        *kept = Arc::new(kept.next(state));
        kept.clone()
    }

    /// ThroughputSampled's rows, each port's path the published one.
    fn sample_rows(&self, samples: &[((u32, u32), Sample)]) -> Vec<SampleRow> {
        let paths = self.paths();
        samples
            .iter()
            .map(|((d, p), s)| {
                (
                    paths.port(*d, *p),
                    f64::from(s.rates.tx_bytes),
                    f64::from(s.rates.rx_bytes),
                    f64::from(s.rates.tx_packets),
                    f64::from(s.rates.rx_packets),
                    s.flags,
                )
            })
            .collect()
    }

    fn root_view(&self, state: &ObservedState, paths: &ObjectPaths) -> RootView {
        root_view(
            state,
            self.simulated,
            self.startup.load(Ordering::SeqCst),
            self.tick_us,
            paths,
        )
    }

    /// Creates the object or updates its cell, emitting what changed.
    async fn upsert<V: Shown>(
        &self,
        path: &str,
        cell: Option<&Cell<V>>,
        new: V,
    ) -> Option<Cell<V>> {
        match cell {
            Some(cell) => {
                let changed = {
                    let mut cur = cell.write().unwrap_or_else(|p| p.into_inner());
                    let changed = new.changed(&cur);
                    if !changed.is_empty() {
                        *cur = new;
                    }
                    changed
                };
                if !changed.is_empty() {
                    self.managed.invalidate(path);
                    self.emit_changed::<V>(path, changed).await;
                }
                None
            }
            None => {
                let cell = Arc::new(RwLock::new(new));
                let props = cell.clone() as Arc<dyn EntryProps>;
                if path == ROOT_PATH {
                    // The manager's own object is not among the objects it manages; the
                    // JSON document has it.
                    self.managed
                        .set_root(<V::Object as Interface>::name(), props);
                } else {
                    self.managed
                        .insert_shared(path, <V::Object as Interface>::name(), props);
                }
                let obj =
                    Guarded::new(V::object(cell.clone(), self.ctx.clone()), self.ctx.limits());
                if let Err(e) = self.conn.object_server().at(path, obj).await {
                    self.managed.remove(path);
                    warn!(%path, error = %e, "could not add object");
                }
                Some(cell)
            }
        }
    }

    async fn emit_changed<V: Shown>(
        &self,
        path: &str,
        changed: Vec<(&'static str, Value<'static>)>,
    ) {
        let emitter = match SignalEmitter::new(&self.conn, path.to_string()) {
            Ok(e) => e,
            Err(e) => {
                warn!(%path, error = %e, "bad object path");
                return;
            }
        };
        let iface: InterfaceName<'_> = <V::Object as Interface>::name();
        let map: HashMap<&str, Value<'_>> = changed.into_iter().collect();
        if let Err(e) =
            zbus::fdo::Properties::properties_changed(&emitter, iface, map, Cow::Borrowed(&[]))
                .await
        {
            emit_failed("PropertiesChanged", path, &e);
        }
    }

    async fn remove<V: Shown>(&self, path: &str) {
        self.managed.remove(path);
        let name = <V::Object as Interface>::name();
        if let Err(e) = self.conn.object_server().remove_named(path, name).await {
            warn!(%path, error = %e, "could not remove object");
        }
    }

    async fn publish_device(
        &self,
        p: &mut Published,
        state: &ObservedState,
        paths: &ObjectPaths,
        index: u32,
    ) {
        let path = device_path(index);
        let old_ports: BTreeSet<u32> = p
            .ports
            .keys()
            .filter(|(d, _)| *d == index)
            .map(|(_, n)| *n)
            .collect();
        let Some(dev) = state.devices.get(&index) else {
            for n in old_ports {
                p.ports.remove(&(index, n));
                self.remove::<PortView>(&port_path(index, n)).await;
            }
            if p.devices.remove(&index).is_some() {
                self.remove::<DeviceView>(&path).await;
            }
            return;
        };
        // Ports that went first, then the device, then ports that came: a client never sees
        // a port whose device does not exist.
        for n in old_ports.iter().filter(|n| dev.snap.port(**n).is_none()) {
            p.ports.remove(&(index, *n));
            self.remove::<PortView>(&port_path(index, *n)).await;
        }
        if let Some(c) = self
            .upsert(
                &path,
                p.devices.get(&index),
                device_view(dev, &state.config, paths),
            )
            .await
        {
            p.devices.insert(index, c);
        }
        for port in &dev.snap.ports {
            let key = (index, port.number);
            let view = port_view(
                dev,
                port,
                &state.config,
                state.nm_profiles.as_deref(),
                paths,
                state.state_changes_of(index, port.number),
                state.port_types.get(&index),
            );
            if let Some(c) = self
                .upsert(&port_path(index, port.number), p.ports.get(&key), view)
                .await
            {
                p.ports.insert(key, c);
            }
        }
    }

    async fn publish_ipoib(
        &self,
        p: &mut Published,
        state: &ObservedState,
        paths: &ObjectPaths,
        dirty: &BTreeSet<u32>,
    ) {
        for i in dirty.iter().filter(|i| !state.ipoib.contains_key(i)) {
            if p.ipoib.remove(i).is_some() {
                self.remove::<IpoibView>(&ipoib_path(*i)).await;
            }
        }
        // Parent and Children link interfaces to each other: recompute them all (cheap, in
        // memory) and let the comparison decide what is emitted.
        let links = IpoibLinks::new(state);
        for (i, st) in &state.ipoib {
            let view = ipoib_view(&links, st, paths);
            if let Some(c) = self.upsert(&ipoib_path(*i), p.ipoib.get(i), view).await {
                p.ipoib.insert(*i, c);
            }
        }
    }
}

#[async_trait]
impl Sink for Publisher {
    async fn publish(&self, state: &ObservedState, dirty: &Dirty) {
        let mut p = self.published.lock().await;
        let paths = self.sync_paths(state);
        if p.root.is_none() {
            p.root = self
                .upsert(ROOT_PATH, None, self.root_view(state, &paths))
                .await;
        }
        for index in &dirty.devices {
            self.publish_device(&mut p, state, &paths, *index).await;
        }
        // IPoIB views show what ipoib.toml remembers: a saved change republishes them too.
        if !dirty.ipoib.is_empty() || !dirty.devices.is_empty() || dirty.config {
            self.publish_ipoib(&mut p, state, &paths, &dirty.ipoib)
                .await;
        }
        // SubnetManagers follows the ports, so the Host view is recomputed at every publish;
        // the comparison emits only what changed.
        let host = p.host.clone();
        if let Some(c) = self
            .upsert(HOST_PATH, host.as_ref(), host_view(state, &paths))
            .await
        {
            p.host = Some(c);
        }
        let root = p.root.clone();
        self.upsert(ROOT_PATH, root.as_ref(), self.root_view(state, &paths))
            .await;
    }

    async fn samples(&self, tick: u64, samples: &[((u32, u32), Sample)]) {
        let Ok(engine) = self.ctx.engine_now() else {
            return;
        };
        let time_us = engine.clock.wall_us(tick);
        let rows = self.sample_rows(samples);
        let emitter = match SignalEmitter::new(&self.conn, ROOT_PATH) {
            Ok(e) => e,
            Err(_) => return,
        };
        // A subscriber that never reads must not fill rdma-managerd's quota in the bus
        // (see `signal_guard`).
        let own = self
            .conn
            .unique_name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        let signal = super::signal_guard::Signal {
            sender: &own,
            interface: "org.rdmamanager.RdmaManager1",
            member: "ThroughputSampled",
            path: ROOT_PATH,
        };
        match self.signal_guard.delivery(&self.conn, &signal).await {
            super::signal_guard::Delivery::Broadcast => {
                if let Err(e) = RootObject::throughput_sampled(&emitter, time_us, rows).await {
                    emit_failed("ThroughputSampled", ROOT_PATH, &e);
                }
            }
            super::signal_guard::Delivery::To(names) => {
                for name in names {
                    let Ok(dest) = zbus::names::BusName::try_from(name) else {
                        continue;
                    };
                    let to = emitter.clone().set_destination(dest);
                    if let Err(e) = RootObject::throughput_sampled(&to, time_us, rows.clone()).await
                    {
                        emit_failed("ThroughputSampled", ROOT_PATH, &e);
                    }
                }
            }
        }
    }
}

/// A signal that could not be sent. When the connection itself failed (the bus went away),
/// `server::watch_connection` says so once and the daemon exits; repeating it here for each
/// signal would only bury that one message, so it goes to the debug level.
fn emit_failed(signal: &str, path: &str, e: &zbus::Error) {
    if matches!(e, zbus::Error::InputOutput(_)) {
        tracing::debug!(%path, error = %e, signal, "could not emit: the connection failed");
    } else {
        warn!(%path, error = %e, signal, "could not emit");
    }
}
