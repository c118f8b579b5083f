//! The served interfaces compared with the committed introspection XML
//! (`dbus-interfaces/xml/`), in process and without a bus: the XML is the reviewed contract
//! the client proxies are generated from (`dbus-interfaces/build.rs`), so the service must
//! say exactly what it says. Each object is built and introspected as the object server
//! would introspect it; first every method, property (with its access) and signal is
//! compared by signature, which names what drifted, then the whole text, documentation
//! comments included, as `/usr/share/dbus-1/interfaces/` installs it.
//!
//! After an intended change of an interface, refresh the files with
//! `RDMA_MANAGER_UPDATE_XML=1 cargo nextest run -p rdma-managerd -E 'test(/contract::/)'`
//! and review the diff: it is a change of the wire format every client sees.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use zbus::object_server::Interface;
use zbus_xml::{ArgDirection, Node};

use super::network::NetworkObject;
use super::objects::{DeviceObject, HostSetupObject, IpoibObject, PortObject, RootObject};
use super::pending::PendingChangeObject;
use super::{limits, polkit, Context};

const HEADER: &str = r#"<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
<!-- Generated from the live rdma-managerd and checked by tests/tests/dbus/xml.rs. -->
<node>
"#;

fn xml_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dbus-interfaces/xml")
}

/// A context whose authorizer holds one end of a peer-to-peer connection: the objects need
/// one, introspection never uses it.
async fn context() -> Arc<Context> {
    let (a, b) = tokio::net::UnixStream::pair().expect("socket pair");
    let guid = zbus::Guid::generate();
    let (server, _client) = futures::future::join(
        zbus::connection::Builder::unix_stream(a)
            .server(guid)
            .expect("server")
            .p2p()
            .build(),
        zbus::connection::Builder::unix_stream(b).p2p().build(),
    )
    .await;
    let server = server.expect("peer connection");
    Arc::new(Context::new(
        polkit::Authorizer::new(&server),
        limits::Limits::new(limits::LimitConfig::default()),
    ))
}

/// Every served interface's introspection, one level below `<node>` as a live object gives
/// it, by interface name.
async fn served() -> Vec<(String, String)> {
    let ctx = context().await;
    fn text(i: &dyn Interface) -> String {
        let mut out = String::new();
        i.introspect_to_writer(&mut out, 2);
        out
    }
    let ctx2 = ctx.clone();
    let objects: Vec<(zbus::names::InterfaceName<'static>, String)> = vec![
        (
            RootObject::name(),
            text(&RootObject {
                view: Default::default(),
                ctx: ctx.clone(),
            }),
        ),
        (
            NetworkObject::name(),
            text(&NetworkObject { ctx: ctx.clone() }),
        ),
        (
            DeviceObject::name(),
            text(&DeviceObject {
                view: Default::default(),
                ctx: ctx.clone(),
            }),
        ),
        (
            PortObject::name(),
            text(&PortObject {
                view: Default::default(),
                ctx: ctx.clone(),
            }),
        ),
        (
            IpoibObject::name(),
            text(&IpoibObject {
                view: Default::default(),
                ctx: ctx.clone(),
            }),
        ),
        (
            HostSetupObject::name(),
            text(&HostSetupObject {
                view: Default::default(),
                ctx: ctx.clone(),
            }),
        ),
        (
            PendingChangeObject::name(),
            PendingChangeObject::introspection(ctx2),
        ),
    ];
    objects
        .into_iter()
        .map(|(n, t)| (n.to_string(), t))
        .collect()
}

/// Members of one interface: "method M" -> its arguments, "property P" -> type and access,
/// "signal S" -> its arguments; each argument as `direction name:type`.
fn members(xml: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let node = Node::try_from(xml).unwrap_or_else(|e| panic!("parsing introspection: {e}\n{xml}"));
    let mut out = BTreeMap::new();
    for iface in node.interfaces() {
        let mut m = BTreeMap::new();
        let args = |args: &[zbus_xml::Arg]| {
            args.iter()
                .map(|a| {
                    let dir = match a.direction() {
                        Some(ArgDirection::Out) => "out",
                        _ => "in",
                    };
                    format!("{dir} {}:{}", a.name().unwrap_or(""), a.ty().to_string())
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        for x in iface.methods() {
            m.insert(format!("method {}", x.name()), args(x.args()));
        }
        for x in iface.signals() {
            m.insert(format!("signal {}", x.name()), args(x.args()));
        }
        for x in iface.properties() {
            m.insert(
                format!("property {}", x.name()),
                format!("{} {:?}", x.ty().to_string(), x.access()),
            );
        }
        out.insert(iface.name().to_string(), m);
    }
    out
}

/// What differs between the committed and the served members of an interface.
fn drift(name: &str, committed: &str, served: &str) -> Vec<String> {
    let want = members(committed).remove(name).unwrap_or_default();
    let have = members(served).remove(name).unwrap_or_default();
    let mut out = Vec::new();
    for (k, w) in &want {
        match have.get(k) {
            None => out.push(format!("{name}: {k} ({w}) is in the XML, not served")),
            Some(h) if h != w => out.push(format!("{name}: {k}: XML ({w}), served ({h})")),
            Some(_) => {}
        }
    }
    for (k, h) in have.iter().filter(|(k, _)| !want.contains_key(*k)) {
        out.push(format!("{name}: {k} ({h}) is served, not in the XML"));
    }
    out
}

#[tokio::test]
async fn served_interfaces_are_the_committed_xml() {
    let served = served().await;
    let update = std::env::var_os("RDMA_MANAGER_UPDATE_XML").is_some();
    let mut drifted = Vec::new();
    let mut stale = Vec::new();
    for (name, body) in &served {
        // XML forbids "--" inside a comment, and zbus turns doc comments into XML comments.
        for comment in body.split("<!--").skip(1) {
            let text = comment.split("-->").next().unwrap_or_default();
            assert!(
                !text.contains("--"),
                "{name}: a doc comment contains \"--\", which makes the XML malformed: {text}"
            );
        }
        let want = format!("{HEADER}{body}</node>\n");
        let file = xml_dir().join(format!("{name}.xml"));
        if update {
            std::fs::write(&file, &want).expect("writing the XML");
            continue;
        }
        let have = std::fs::read_to_string(&file).unwrap_or_default();
        drifted.extend(drift(name, &have, &want));
        if have != want {
            stale.push(format!(
                "{}:\n--- committed\n{have}\n+++ served\n{want}",
                file.display()
            ));
        }
    }
    // No XML for an interface the service no longer has.
    for entry in std::fs::read_dir(xml_dir()).expect("xml dir") {
        let f = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if !served.iter().any(|(n, _)| format!("{n}.xml") == f) {
            drifted.push(format!("{f}: no such interface is served"));
        }
    }
    assert!(
        drifted.is_empty(),
        "the served interfaces differ from dbus-interfaces/xml, the clients' contract:\n{}",
        drifted.join("\n")
    );
    assert!(
        stale.is_empty(),
        "the served documentation differs from dbus-interfaces/xml (refresh with \
         RDMA_MANAGER_UPDATE_XML=1 and review):\n{}",
        stale.join("\n")
    );
}

/// The comparison names a changed signature, a missing and an added member.
#[test]
fn the_comparison_sees_a_drift() {
    let committed = r#"<node><interface name="a.B">
<method name="M"><arg name="x" type="s" direction="in"/></method>
<property name="P" type="u" access="read"/>
<signal name="S"><arg name="t" type="t"/></signal>
</interface></node>"#;
    assert!(drift("a.B", committed, committed).is_empty());
    let served = committed
        .replace("type=\"u\"", "type=\"t\"")
        .replace("name=\"S\"", "name=\"S2\"");
    let d = drift("a.B", committed, &served);
    assert_eq!(d.len(), 3, "{d:?}");
    assert!(
        d[0].contains("property P: XML (u Read), served (t Read)"),
        "{d:?}"
    );
    assert!(
        d.iter()
            .any(|l| l.contains("signal S (in t:t) is in the XML")),
        "{d:?}"
    );
    assert!(d
        .iter()
        .any(|l| l.contains("signal S2") && l.contains("not in the XML")));
    let readwrite = committed.replace("access=\"read\"", "access=\"readwrite\"");
    assert_eq!(drift("a.B", committed, &readwrite).len(), 1);
}
