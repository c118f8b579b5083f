//! The whole D-Bus model of a [`ObservedState`] as the JSON document of docs/JSON.md, without a
//! bus: `rdma-managerd show --json`. Every object the publisher publishes for the state, each
//! rendered by the same view function and the same property list (`all()`, what
//! GetManagedObjects encodes), then turned into JSON by the conversion `rdma-tui --json` uses
//! on what it reads from the bus, so the two documents cannot differ in shape.

use rdma_manager_dbus::json::Document;
use rdma_manager_dbus::{device_path, ipoib_path, port_path, HOST_PATH, ROOT_PATH};
use zbus::object_server::Interface;
use zbus::zvariant::Value;

use super::object_paths::ObjectPaths;
use super::objects::{device_view, host_view, ipoib_view, port_view, root_view, IpoibLinks};
use super::objects::{DeviceObject, HostSetupObject, IpoibObject, PortObject, RootObject};
use crate::engine::ObservedState;

/// The document of `state` as a daemon with this `simulated` flag and sampling period
/// (`tick_us`) would publish it: the root, every device and its ports, every IPoIB interface,
/// and the Host object.
pub fn document(state: &ObservedState, simulated: bool, tick_us: u64) -> Document {
    let mut doc = Document::new();
    let paths = ObjectPaths::of(state);
    add::<RootObject>(
        &mut doc,
        ROOT_PATH,
        // As published once start-up is over.
        root_view(state, simulated, false, tick_us, &paths).all(),
    );
    for dev in state.devices.values() {
        add::<DeviceObject>(
            &mut doc,
            &device_path(dev.index),
            device_view(dev, &state.config, &paths).all(),
        );
        for port in &dev.snap.ports {
            add::<PortObject>(
                &mut doc,
                &port_path(dev.index, port.number),
                port_view(
                    dev,
                    port,
                    &state.config,
                    state.nm_profiles.as_deref(),
                    &paths,
                    state.state_changes_of(dev.index, port.number),
                    state.port_types.get(&dev.index),
                )
                .all(),
            );
        }
    }
    let links = IpoibLinks::new(state);
    for (ifindex, ipoib) in &state.ipoib {
        add::<IpoibObject>(
            &mut doc,
            &ipoib_path(*ifindex),
            ipoib_view(&links, ipoib, &paths).all(),
        );
    }
    add::<HostSetupObject>(&mut doc, HOST_PATH, host_view(state, &paths).all());
    doc
}

fn add<I: Interface>(doc: &mut Document, path: &str, props: Vec<(&'static str, Value<'static>)>) {
    doc.add(path, I::name().as_str(), props.iter().map(|(k, v)| (*k, v)));
}
