//! The simulated host through the Host trait: the fixtures read back through the real sysfs
//! readers, the kernel's refusals, fault injection and events.

use std::time::Duration;

use rdma_managerd::kernel::prelude::*;
use rdma_managerd::kernel::sim::{fixtures, SimHost, SimOp};
use rdma_managerd::kernel::{HostEvent, NetdevChange, NewIpoibChild, NewLink};
use rdma_managerd::model::{
    AttrError, CounterSource, CounterWidth, DeviceKind, Errno, IpoibMode, LinkLayer, PortState,
    SoftLinkType,
};

fn demo() -> SimHost {
    SimHost::new(fixtures::demo_host()).expect("demo host")
}

#[tokio::test]
async fn demo_host_reads_back_through_sysfs() {
    let h = demo();
    let devs = h.read_devices().await.unwrap();
    let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["mlx4_1", "mlx5_0", "mlx5_1", "rxe0"]);
    let mlx4 = &devs[0];
    assert_eq!(mlx4.kind, DeviceKind::Hardware);
    assert_eq!(mlx4.pci_address.as_deref(), Some("0000:04:00.0"));
    assert_eq!(mlx4.netdevs, ["enp4s0d1", "ib0"]);
    let p1 = mlx4.port(1).unwrap();
    assert_eq!(p1.link_layer, Ok(LinkLayer::InfiniBand));
    // The demo's opensm.service is inactive: the SM is another node (LID 1), not this port.
    assert_eq!(
        (p1.lid.clone(), p1.sm_lid.clone(), p1.lmc.clone()),
        (Ok(2), Ok(1), Ok(1))
    );
    assert_eq!(
        p1.pkeys.iter().map(|p| p.pkey).collect::<Vec<_>>(),
        [0xffff, 0x8001]
    );
    assert_eq!(mlx4.port(2).unwrap().link_layer, Ok(LinkLayer::Ethernet));
    assert_eq!(devs[1].hca_type.as_deref(), Ok("MT4123"));
    let rxe = &devs[3];
    assert_eq!(rxe.kind, DeviceKind::Rxe);
    assert_eq!(rxe.parent_netdev.as_deref(), Some("eth0"));
    assert_eq!(rxe.fw_ver.as_deref(), Ok(""));
    assert_eq!(rxe.hca_type, Err(AttrError::Missing));
}

/// rxe's rate follows its netdev's speed as `ib_get_eth_speed` maps it: over the 40 Gb/s
/// RoCE port's netdev, 4X FDR10; over a veth-like 10 Gb/s netdev, 1X FDR10 (the lab's rxe).
#[tokio::test]
async fn an_rxe_rate_follows_its_netdevs_speed() {
    let h = demo();
    h.add_link(&NewLink {
        name: "rxe1".into(),
        kind: SoftLinkType::Rxe,
        netdev: "enp4s0d1".into(),
    })
    .await
    .unwrap();
    let devs = h.read_devices().await.unwrap();
    let rate = |name: &str| {
        let d = devs.iter().find(|d| d.name == name).unwrap();
        d.port(1).unwrap().rate.clone().unwrap().to_sysfs()
    };
    assert_eq!(rate("rxe1"), "40 Gb/sec (4X FDR10)");
    assert_eq!(rate("rxe0"), "10 Gb/sec (1X FDR10)");
    assert_eq!(rate("mlx4_1"), "56 Gb/sec (4X FDR)");
}

#[tokio::test]
async fn counters_follow_the_source_chain_and_detect_saturation() {
    let h = demo();
    // mlx4 port 1: 32-bit PMA counters.
    h.add_traffic("mlx4_1", 1, 4000, 8000).unwrap();
    let c = h.read_counters("mlx4_1", 1).await.unwrap();
    assert_eq!(c.source, CounterSource::Pma(CounterWidth::Bits32));
    assert_eq!(
        (c.tx_bytes.clone(), c.rx_bytes.clone()),
        (Ok(4000), Ok(8000))
    );
    assert!(!c.saturated);
    h.add_traffic("mlx4_1", 1, 4 * 0x1_0000_0000, 0).unwrap();
    let c = h.read_counters("mlx4_1", 1).await.unwrap();
    assert!(
        c.saturated,
        "a 32-bit counter at all ones is reported as saturated"
    );
    assert_eq!(c.tx_bytes, Ok(4 * 0xffff_ffff));
    // ConnectX-6: 64-bit.
    h.add_traffic("mlx5_0", 1, 4 * 0x1_0000_0000, 0).unwrap();
    let c = h.read_counters("mlx5_0", 1).await.unwrap();
    assert_eq!(c.source, CounterSource::Pma(CounterWidth::Bits64));
    assert_eq!(c.tx_bytes, Ok(4 * 0x1_0000_0000));
    assert!(!c.saturated);
    // rxe: no PMA, no byte hw_counters: the netdev's statistics.
    h.add_traffic("rxe0", 1, 1500, 3000).unwrap();
    let c = h.read_counters("rxe0", 1).await.unwrap();
    assert_eq!(c.source, CounterSource::Netdev("eth0".into()));
    assert_eq!((c.tx_bytes, c.rx_bytes), (Ok(1500), Ok(3000)));
    assert!(c.hw.iter().any(|(n, _)| n == "sent_pkts"));
    assert!(h.read_counters("rxe0", 2).await.unwrap_err().is_not_found());
}

#[tokio::test]
async fn a_bad_attribute_spoils_only_its_field() {
    let h = demo();
    h.vanish_file("sys/class/infiniband/mlx5_0/ports/1/rate")
        .unwrap();
    h.corrupt_file("sys/class/infiniband/mlx5_0/ports/1/state", "banana\n")
        .unwrap();
    h.corrupt_file("sys/class/infiniband/mlx5_0/node_guid", "zz\n")
        .unwrap();
    let devs = h.read_devices().await.unwrap();
    assert_eq!(devs.len(), 4, "enumeration of the rest is unaffected");
    let d = devs.iter().find(|d| d.name == "mlx5_0").unwrap();
    let p = d.port(1).unwrap();
    assert_eq!(p.rate, Err(AttrError::Missing));
    assert!(matches!(p.state, Err(AttrError::Malformed(_))));
    assert!(matches!(d.node_guid, Err(AttrError::Malformed(_))));
    assert_eq!(p.lid, Ok(0x12));
    assert_eq!(d.hca_type.as_deref(), Ok("MT4123"));
}

#[tokio::test]
async fn unplug_mid_enumeration_leaves_the_device_out() {
    let h = demo();
    h.unplug_during_next(SimOp::ReadDevice, "mlx5_0");
    let devs = h.read_devices().await.unwrap();
    assert!(!devs.iter().any(|d| d.name == "mlx5_0"));
    assert!(h.read_device("mlx5_0").await.unwrap_err().is_not_found());
}

#[tokio::test]
async fn a_failed_write_changes_nothing() {
    let h = SimHost::new(fixtures::lab_host("test")).unwrap();
    h.fail_next(SimOp::AddLink, Errno::EIO);
    let link = NewLink {
        name: "rxe0".into(),
        kind: SoftLinkType::Rxe,
        netdev: "veth0".into(),
    };
    assert_eq!(
        h.add_link(&link).await.unwrap_err().errno(),
        Some(Errno::EIO)
    );
    assert!(h.rdma_device_names().await.unwrap().is_empty());
    h.add_link(&link).await.unwrap();
    assert_eq!(h.rdma_device_names().await.unwrap(), ["rxe0"]);
}

#[tokio::test]
async fn unplug_during_an_operation() {
    let h = SimHost::new(fixtures::lab_host("test")).unwrap();
    let link = NewLink {
        name: "rxe0".into(),
        kind: SoftLinkType::Rxe,
        netdev: "veth0".into(),
    };
    h.add_link(&link).await.unwrap();
    h.unplug_during_next(SimOp::RoceWrite, "rxe0");
    let e = h
        .set_roce_mode("rxe0", 1, rdma_managerd::model::RoceMode::V2)
        .await
        .unwrap_err();
    assert_eq!(e.errno(), Some(Errno::ENODEV));
}

#[tokio::test]
async fn ipoib_children_follow_the_kernels_rules() {
    let h = demo();
    let child = |pkey: u16, mode: Option<IpoibMode>| NewIpoibChild {
        parent: "ibp59s0f0".into(),
        name: format!("ibp59s0f0.{pkey:04x}"),
        pkey,
        mode,
        umcast: None,
    };
    for bad in [0u16, 0x8000] {
        let e = h.create_ipoib_child(&child(bad, None)).await.unwrap_err();
        assert_eq!(e.errno(), Some(Errno::EINVAL), "pkey {bad:#x}");
    }
    // Enhanced IPoIB cannot do connected mode: refused, nothing created.
    let e = h
        .create_ipoib_child(&child(0x0004, Some(IpoibMode::Connected)))
        .await
        .unwrap_err();
    assert_eq!(e.errno(), Some(Errno::EINVAL));
    let before = h.read_netdevs().await.unwrap().len();
    h.create_ipoib_child(&child(0x0004, None)).await.unwrap();
    let nds = h.read_netdevs().await.unwrap();
    assert_eq!(nds.len(), before + 1);
    let c = nds.iter().find(|n| n.name == "ibp59s0f0.0004").unwrap();
    let ib = c.ipoib.as_ref().unwrap();
    assert_eq!(ib.pkey, Ok(0x8004), "the full-membership bit is OR-ed in");
    assert_eq!(ib.parent.as_deref(), Some("ibp59s0f0"));
    // A child of a child, a non-IB parent, a duplicate name.
    let mut cc = child(0x0005, None);
    cc.parent = "ibp59s0f0.0004".into();
    assert_eq!(
        h.create_ipoib_child(&cc).await.unwrap_err().errno(),
        Some(Errno::EINVAL)
    );
    let mut eth = child(0x0005, None);
    eth.parent = "eth0".into();
    assert_eq!(
        h.create_ipoib_child(&eth).await.unwrap_err().errno(),
        Some(Errno::ENODEV)
    );
    assert_eq!(
        h.create_ipoib_child(&child(0x0004, None))
            .await
            .unwrap_err()
            .errno(),
        Some(Errno::EEXIST)
    );
    // MTU limits per mode.
    let mtu = |m| NetdevChange {
        mtu: Some(m),
        ..Default::default()
    };
    assert_eq!(
        h.change_netdev("ibp59s0f0.0004", &mtu(4093))
            .await
            .unwrap_err()
            .errno(),
        Some(Errno::EINVAL)
    );
    h.change_netdev("ibp59s0f0.0004", &mtu(2000)).await.unwrap();
    // mlx4's ib0 can do connected mode; the MTU follows the mode.
    let conn = NetdevChange {
        ipoib_mode: Some(IpoibMode::Connected),
        ..Default::default()
    };
    h.change_netdev("ib0", &conn).await.unwrap();
    let ib0 = h
        .read_netdevs()
        .await
        .unwrap()
        .into_iter()
        .find(|n| n.name == "ib0")
        .unwrap();
    assert_eq!(ib0.mtu, Ok(65520));
    assert_eq!(ib0.ipoib.unwrap().mode, Ok(IpoibMode::Connected));
    assert_eq!(
        h.change_netdev("ibp59s0f0", &conn)
            .await
            .unwrap_err()
            .errno(),
        Some(Errno::EINVAL)
    );
    h.delete_netdev("ibp59s0f0.0004").await.unwrap();
    // A port's own interface: the kernel's ipoib dellink ignores it and answers success.
    let before = h.spec().netdevs;
    h.delete_netdev("ibp59s0f0").await.unwrap();
    assert_eq!(h.spec().netdevs, before);
    // A hardware function's netdev has no link ops at all.
    assert_eq!(
        h.delete_netdev("eth0").await.unwrap_err().errno(),
        Some(Errno::EOPNOTSUPP)
    );
    // The name is checked before the parent: a taken name is EEXIST even under a non-IB
    // parent (the request's NLM_F_EXCL).
    let mut taken = child(0x0006, None);
    taken.parent = "eth0".into();
    taken.name = "ib0".into();
    assert_eq!(
        h.create_ipoib_child(&taken).await.unwrap_err().errno(),
        Some(Errno::EEXIST)
    );
    // Datagram MTUs start at 72 (68 + the 4-byte IPoIB header); connected has no floor.
    h.create_ipoib_child(&child(0x0007, None)).await.unwrap();
    for (mtu, ok) in [(71, false), (72, true)] {
        assert_eq!(
            h.change_netdev("ibp59s0f0.0007", &mtu_of(mtu))
                .await
                .is_ok(),
            ok,
            "{mtu}"
        );
    }
    h.change_netdev("ib0", &mtu_of(60)).await.unwrap();
    assert_eq!(
        h.change_netdev("ib0", &mtu_of(65521))
            .await
            .unwrap_err()
            .errno(),
        Some(Errno::EINVAL)
    );
}

fn mtu_of(m: u32) -> NetdevChange {
    NetdevChange {
        mtu: Some(m),
        ..Default::default()
    }
}

#[tokio::test]
async fn hotplug_and_port_changes_raise_events() {
    let h = demo();
    let mut rx = h.subscribe().await.unwrap();
    let spec = h.spec();
    let cx6 = spec
        .devices
        .iter()
        .find(|d| d.name == "mlx5_0")
        .unwrap()
        .clone();
    h.unplug("mlx5_0").unwrap();
    h.plug(cx6).unwrap();
    h.set_port_state(
        "mlx5_0",
        1,
        PortState::Init,
        rdma_managerd::model::PhysState::LinkUp,
    )
    .unwrap();
    let mut got = Vec::new();
    while let Ok(Some(e)) = tokio::time::timeout(Duration::from_millis(100), rx.recv()).await {
        got.push(e);
    }
    assert_eq!(
        got,
        [
            HostEvent::RdmaRemoved {
                name: "mlx5_0".into()
            },
            HostEvent::RdmaAdded {
                name: "mlx5_0".into()
            },
            HostEvent::RdmaChanged {
                name: "mlx5_0".into()
            },
        ]
    );
    // Re-plugged devices get a new index (cyclic allocation).
    let nl = h.nl_devices().await.unwrap();
    assert_eq!(nl.iter().find(|d| d.name == "mlx5_0").unwrap().index, 4);
    let port = h.read_device("mlx5_0").await.unwrap().ports[0]
        .state
        .clone();
    assert_eq!(port, Ok(PortState::Init));
}

#[tokio::test]
async fn large_host_has_the_benchmark_shape() {
    let spec = fixtures::large_host(256, 2, 1024);
    assert_eq!(spec.devices.len(), 256);
    assert!(spec.devices.iter().all(|d| d.ports.len() == 2));
    assert_eq!(
        spec.netdevs.iter().filter(|n| n.ipoib.is_some()).count(),
        1024
    );
    let h = SimHost::new(spec).unwrap();
    assert_eq!(h.read_devices().await.unwrap().len(), 256);
}

#[tokio::test]
async fn files_are_written_atomically_under_the_root() {
    let h = demo();
    let p = std::path::Path::new("/etc/udev/rules.d/70-persistent-ipoib.rules");
    assert_eq!(h.read_file(p).await.unwrap(), None);
    h.write_file_atomic(p, b"# test\n").await.unwrap();
    assert_eq!(
        h.read_file(p).await.unwrap().as_deref(),
        Some(&b"# test\n"[..])
    );
    h.fail_next(SimOp::WriteFile, Errno::EIO);
    assert!(h.write_file_atomic(p, b"# other\n").await.is_err());
    assert_eq!(
        h.read_file(p).await.unwrap().as_deref(),
        Some(&b"# test\n"[..])
    );
}

#[tokio::test]
async fn rename_while_up_depends_on_the_kernel() {
    let up = NetdevChange {
        up: Some(true),
        ..Default::default()
    };
    // Linux 6.1: the link must be down.
    let old = SimHost::new(fixtures::lab_host("6.1.0-40-amd64")).unwrap();
    old.change_netdev("veth0", &up).await.unwrap();
    assert_eq!(
        old.rename_netdev("veth0", "v0").await.unwrap_err().errno(),
        Some(Errno::EBUSY)
    );
    // Linux 6.2 and later rename live links; rxe follows the new name.
    let new = SimHost::new(fixtures::lab_host("6.12.48+deb12-amd64")).unwrap();
    let link = NewLink {
        name: "rxe0".into(),
        kind: SoftLinkType::Rxe,
        netdev: "veth0".into(),
    };
    new.add_link(&link).await.unwrap();
    new.rename_netdev("veth0", "v0").await.unwrap();
    assert_eq!(
        new.read_device("rxe0")
            .await
            .unwrap()
            .parent_netdev
            .as_deref(),
        Some("v0")
    );
    assert_eq!(
        new.rename_netdev("v0", "veth1").await.unwrap_err().errno(),
        Some(Errno::EEXIST)
    );
    assert_eq!(
        new.rename_netdev("v0", "a/b").await.unwrap_err().errno(),
        Some(Errno::EINVAL)
    );
}

#[tokio::test]
async fn deleting_a_veth_unregisters_its_rxe() {
    let h = SimHost::new(fixtures::lab_host("test")).unwrap();
    let link = NewLink {
        name: "rxe0".into(),
        kind: SoftLinkType::Rxe,
        netdev: "veth0".into(),
    };
    h.add_link(&link).await.unwrap();
    h.delete_netdev("veth1").await.unwrap();
    assert!(h.rdma_device_names().await.unwrap().is_empty());
    let names: Vec<String> = h
        .read_netdevs()
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert!(
        !names.contains(&"veth0".to_string()),
        "a veth takes its peer with it"
    );
}

#[tokio::test]
async fn a_renamed_parent_is_named_by_its_children() {
    // One child made through sysfs `create_child` (it has a `parent` file), one over
    // rtnetlink (its parent comes from IFLA_LINK): the kernel names the parent by its current
    // name in both, and sends no event for the children.
    let mut spec = fixtures::demo_host();
    for n in &mut spec.netdevs {
        if n.name == "ibp59s0f0.8002" {
            if let Some(ib) = n.ipoib.as_mut() {
                ib.legacy_files = true;
            }
        }
    }
    let h = SimHost::new(spec).expect("host");
    let mut events = h.subscribe().await.expect("events");
    h.rename_netdev("ibp59s0f0", "hpc_ib1")
        .await
        .expect("renamed");
    let file = h.root().join("sys/class/net/ibp59s0f0.8002/parent");
    assert_eq!(
        std::fs::read_to_string(&file).expect("parent file").trim(),
        "hpc_ib1"
    );
    for child in ["ibp59s0f0.8002", "ibp59s0f0.8003"] {
        let nd = h.read_netdev(child).await.expect("child");
        let parent = nd.ipoib.as_ref().and_then(|i| i.parent.clone());
        assert_eq!(parent.as_deref(), Some("hpc_ib1"), "{child}");
    }
    let ev = tokio::time::timeout(Duration::from_secs(1), events.recv())
        .await
        .expect("an event")
        .expect("open");
    assert_eq!(
        ev,
        HostEvent::NetdevRenamed {
            old: "ibp59s0f0".into(),
            new: "hpc_ib1".into()
        }
    );
    assert!(events.try_recv().is_err(), "no event for the children");
}

/// A snapshot is kept as long as its device is unchanged: its lists hold no room beyond
/// their entries (`DeviceSnapshot::shrink_to_fit`).
#[tokio::test]
async fn a_read_snapshot_keeps_no_spare_room() {
    let h = demo();
    for name in ["mlx4_1", "mlx5_0", "rxe0"] {
        let d = h.read_device(name).await.unwrap();
        assert_eq!(d.ports.capacity(), d.ports.len(), "{name} ports");
        assert_eq!(d.netdevs.capacity(), d.netdevs.len(), "{name} netdevs");
        for p in &d.ports {
            assert_eq!(p.gids.capacity(), p.gids.len(), "{name}/{} gids", p.number);
            assert_eq!(
                p.pkeys.capacity(),
                p.pkeys.len(),
                "{name}/{} pkeys",
                p.number
            );
        }
    }
}
