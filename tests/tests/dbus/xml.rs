//! The committed introspection XML (`dbus-interfaces/xml/`, installed to
//! /usr/share/dbus-1/interfaces/) must be exactly what the live service says at its objects'
//! paths, documentation comments included. `service/src/dbus/contract.rs` compares each
//! interface with the XML in process (and refreshes the files after an intended change); this
//! checks what only a running service shows: that the object server, through the guard every
//! interface is wrapped in, serves those interfaces, and only those, at the paths clients use.

use std::path::PathBuf;

use rdma_manager_dbus::{BUS_NAME, ROOT_PATH};
use rdma_manager_tests::service::{own_interfaces, serve_sim, session_bus_or_skip};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::{fixtures, SimHost};

const HEADER: &str = r#"<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
<!-- Generated from the live rdma-managerd and checked by tests/tests/dbus/xml.rs. -->
<node>
"#;

fn xml_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dbus-interfaces/xml")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_xml_matches_the_live_service() {
    let Some(bus) = session_bus_or_skip() else {
        return;
    };
    let sim = SimHost::new(fixtures::demo_host()).expect("demo");
    let _service = serve_sim(&bus, &sim, EngineConfig::default())
        .await
        .expect("serve");
    let client = bus.connect().await.expect("client");
    let mut live = Vec::new();
    for path in [
        ROOT_PATH.to_string(),
        rdma_manager_dbus::device_path(0),
        rdma_manager_dbus::port_path(0, 1),
        rdma_manager_dbus::ipoib_path(2),
        rdma_manager_dbus::HOST_PATH.to_string(),
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
        live.extend(
            own_interfaces(&xml)
                .into_iter()
                .filter(|(n, _)| n.starts_with(BUS_NAME)),
        );
    }
    // A pending change exists only while NetworkManager holds a checkpoint: its interface
    // is introspected from the type.
    {
        use rdma_managerd::dbus::{limits, polkit, Context};
        let ctx = std::sync::Arc::new(Context::new(
            polkit::Authorizer::same_user_for_simulation(&client),
            limits::Limits::new(limits::LimitConfig::default()),
        ));
        live.push((
            rdma_manager_dbus::PENDING_CHANGE_INTERFACE.to_string(),
            rdma_managerd::dbus::pending::PendingChangeObject::introspection(ctx),
        ));
    }
    let names: Vec<&str> = live.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "org.rdmamanager.RdmaManager1",
            "org.rdmamanager.RdmaManager1.Network",
            "org.rdmamanager.RdmaManager1.Device",
            "org.rdmamanager.RdmaManager1.Port",
            "org.rdmamanager.RdmaManager1.Ipoib",
            "org.rdmamanager.RdmaManager1.Host",
            "org.rdmamanager.RdmaManager1.PendingChange"
        ]
    );
    let mut stale = Vec::new();
    for (name, body) in &live {
        let want = format!("{HEADER}{body}</node>\n");
        let file = xml_dir().join(format!("{name}.xml"));
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
        "dbus-interfaces/xml differs from the live service (service/src/dbus/contract.rs refreshes it):\n{}",
        stale.join("\n")
    );
}
