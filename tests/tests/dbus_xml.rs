//! The committed introspection XML (`dbus-interfaces/xml/`, installed to
//! /usr/share/dbus-1/interfaces/) must be exactly what the live service says, documentation
//! comments included. After an intended change of an interface, refresh the files with
//! `RDMA_MANAGER_UPDATE_XML=1 cargo nextest run -p rdma-manager-tests --test dbus_xml` and
//! review the diff.

use std::path::PathBuf;
use std::sync::Arc;

use rdma_manager_dbus::{BUS_NAME, ROOT_PATH};
use rdma_manager_tests::bus::PrivateBus;
use rdma_managerd::dbus::server::{self, Bus};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::{fixtures, SimHost};

const HEADER: &str = r#"<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
<!-- Generated from the live rdma-managerd and checked by tests/tests/dbus_xml.rs. -->
<node>
"#;

/// The `<interface>` elements of our interfaces on the object itself (not its children).
fn own_interfaces(xml: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut cur: Option<(String, String)> = None;
    for line in xml.lines() {
        let t = line.trim();
        if cur.is_none() {
            if t.starts_with("<node") {
                depth += 1;
                if t.ends_with("/>") {
                    depth -= 1;
                }
                continue;
            }
            if t.starts_with("</node>") {
                depth -= 1;
                continue;
            }
        }
        if depth != 1 {
            continue;
        }
        if let Some(rest) = t.strip_prefix("<interface name=\"") {
            let name = rest.split('"').next().unwrap_or_default().to_string();
            if name.starts_with(BUS_NAME) {
                cur = Some((name, String::new()));
            }
        }
        if let Some((_, body)) = cur.as_mut() {
            body.push_str(line.trim_end());
            body.push('\n');
            if t == "</interface>" {
                out.extend(cur.take());
            }
        }
    }
    out
}

fn xml_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dbus-interfaces/xml")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_xml_matches_the_live_service() {
    let bus = match PrivateBus::session() {
        Ok(b) => b,
        Err(e) => {
            assert!(
                !rdma_manager_tests::bus::tools_required(),
                "cannot start dbus-daemon: {e:#}"
            );
            eprintln!("skipping: cannot start dbus-daemon: {e:#}");
            return;
        }
    };
    let sim = SimHost::new(fixtures::demo_host()).expect("demo");
    let conn = server::connect(&Bus::Address(bus.address().to_string()))
        .await
        .expect("connect");
    let _service = server::serve(conn, Arc::new(sim), true, EngineConfig::default())
        .await
        .expect("serve");
    let client = bus.connect().await.expect("client");
    let mut live = Vec::new();
    for path in [
        ROOT_PATH.to_string(),
        rdma_manager_dbus::device_path(0),
        rdma_manager_dbus::port_path(0, 1),
        rdma_manager_dbus::ipoib_path(2),
    ] {
        let xml = zbus::fdo::IntrospectableProxy::builder(&client)
            .destination(BUS_NAME)
            .unwrap()
            .path(path.clone())
            .unwrap()
            .build()
            .await
            .unwrap()
            .introspect()
            .await
            .unwrap_or_else(|e| panic!("introspecting {path}: {e}"));
        live.extend(own_interfaces(&xml));
    }
    let names: Vec<&str> = live.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "org.rdmamanager.RdmaManager1",
            "org.rdmamanager.RdmaManager1.Device",
            "org.rdmamanager.RdmaManager1.Port",
            "org.rdmamanager.RdmaManager1.Ipoib"
        ]
    );
    let update = std::env::var_os("RDMA_MANAGER_UPDATE_XML").is_some();
    let mut stale = Vec::new();
    for (name, body) in &live {
        let want = format!("{HEADER}{body}</node>\n");
        let file = xml_dir().join(format!("{name}.xml"));
        if update {
            std::fs::write(&file, &want).expect("writing the XML");
            continue;
        }
        let have = std::fs::read_to_string(&file).unwrap_or_default();
        if have != want {
            stale.push(format!(
                "{}:\n--- committed\n{have}\n+++ live\n{want}",
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
        if !live.iter().any(|(n, _)| format!("{n}.xml") == f) {
            stale.push(format!("{f}: no such interface in the live service"));
        }
    }
    assert!(
        stale.is_empty(),
        "dbus-interfaces/xml differs from the live service (refresh with RDMA_MANAGER_UPDATE_XML=1 and review):\n{}",
        stale.join("\n")
    );
}
