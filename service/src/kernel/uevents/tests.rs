use std::time::Duration;

use tokio::sync::mpsc;

use super::*;
use crate::kernel::rtnl::netns::{add_veth, run_or_skip};
use crate::kernel::rtnl::Rtnl;
use crate::kernel::NetdevChange;

const RXE_ADD: &[u8] = b"add@/devices/virtual/infiniband/rxe0\0ACTION=add\0DEVPATH=/devices/virtual/infiniband/rxe0\0SUBSYSTEM=infiniband\0NAME=rxe0\0SEQNUM=1234\0";

#[test]
fn rdma_add() {
    let u = parse_uevent(RXE_ADD).unwrap();
    assert_eq!(u.action, UeventAction::Add);
    assert_eq!(u.devpath, "/devices/virtual/infiniband/rxe0");
    assert_eq!(u.subsystem.as_deref(), Some("infiniband"));
    assert_eq!(u.seqnum, Some(1234));
    assert_eq!(u.get("NAME"), Some("rxe0"));
    assert_eq!(u.env.len(), 5);
    assert_eq!(
        uevent_to_event(&u),
        Some(HostEvent::RdmaAdded {
            name: "rxe0".into()
        })
    );
}

#[test]
fn rdma_remove_change_and_rename() {
    let rm = b"remove@/devices/pci0000:00/0000:00:03.0/infiniband/mlx5_0\0ACTION=remove\0DEVPATH=/devices/pci0000:00/0000:00:03.0/infiniband/mlx5_0\0SUBSYSTEM=infiniband\0NAME=mlx5_0\0SEQNUM=77\0";
    assert_eq!(
        uevent_to_event(&parse_uevent(rm).unwrap()),
        Some(HostEvent::RdmaRemoved {
            name: "mlx5_0".into()
        })
    );
    let ch = b"change@/devices/virtual/infiniband/rxe0\0ACTION=change\0DEVPATH=/devices/virtual/infiniband/rxe0\0SUBSYSTEM=infiniband\0NAME=rxe0\0SEQNUM=78\0";
    assert_eq!(
        uevent_to_event(&parse_uevent(ch).unwrap()),
        Some(HostEvent::RdmaChanged {
            name: "rxe0".into()
        })
    );
    // What `rdma dev set mlx5_0 name ibp0s3` makes the kernel send.
    let mv = b"move@/devices/pci0000:00/0000:00:03.0/infiniband/ibp0s3\0ACTION=move\0DEVPATH=/devices/pci0000:00/0000:00:03.0/infiniband/ibp0s3\0SUBSYSTEM=infiniband\0DEVPATH_OLD=/devices/pci0000:00/0000:00:03.0/infiniband/mlx5_0\0NAME=ibp0s3\0SEQNUM=79\0";
    let u = parse_uevent(mv).unwrap();
    assert_eq!(u.old_name(), Some("mlx5_0"));
    assert_eq!(
        uevent_to_event(&u),
        Some(HostEvent::RdmaRenamed {
            old: "mlx5_0".into(),
            new: "ibp0s3".into()
        })
    );
    // A move without DEVPATH_OLD says nothing usable.
    let bare = b"move@/devices/virtual/infiniband/rxe1\0ACTION=move\0DEVPATH=/devices/virtual/infiniband/rxe1\0SUBSYSTEM=infiniband\0";
    assert_eq!(uevent_to_event(&parse_uevent(bare).unwrap()), None);
}

#[test]
fn net_add_move_remove_change() {
    let add = b"add@/devices/virtual/net/veth0\0ACTION=add\0DEVPATH=/devices/virtual/net/veth0\0SUBSYSTEM=net\0INTERFACE=veth0\0IFINDEX=4\0SEQNUM=3001\0";
    let u = parse_uevent(add).unwrap();
    assert_eq!(u.get("IFINDEX"), Some("4"));
    assert_eq!(
        uevent_to_event(&u),
        Some(HostEvent::NetdevAdded {
            name: "veth0".into()
        })
    );
    let mv = b"move@/devices/virtual/net/uplink\0ACTION=move\0DEVPATH=/devices/virtual/net/uplink\0SUBSYSTEM=net\0DEVPATH_OLD=/devices/virtual/net/veth0\0INTERFACE=uplink\0IFINDEX=4\0SEQNUM=3002\0";
    assert_eq!(
        uevent_to_event(&parse_uevent(mv).unwrap()),
        Some(HostEvent::NetdevRenamed {
            old: "veth0".into(),
            new: "uplink".into()
        })
    );
    let ch = b"change@/devices/pci0000:00/0000:00:03.0/net/ib0\0ACTION=change\0DEVPATH=/devices/pci0000:00/0000:00:03.0/net/ib0\0SUBSYSTEM=net\0INTERFACE=ib0\0IFINDEX=3\0SEQNUM=3003\0";
    assert_eq!(
        uevent_to_event(&parse_uevent(ch).unwrap()),
        Some(HostEvent::NetdevChanged { name: "ib0".into() })
    );
    let rm = b"remove@/devices/virtual/net/uplink\0ACTION=remove\0DEVPATH=/devices/virtual/net/uplink\0SUBSYSTEM=net\0INTERFACE=uplink\0IFINDEX=4\0SEQNUM=3004\0";
    assert_eq!(
        uevent_to_event(&parse_uevent(rm).unwrap()),
        Some(HostEvent::NetdevRemoved {
            name: "uplink".into()
        })
    );
    // No INTERFACE: the name comes from DEVPATH.
    let noif = b"add@/devices/virtual/net/lo\0ACTION=add\0DEVPATH=/devices/virtual/net/lo\0SUBSYSTEM=net\0";
    assert_eq!(
        uevent_to_event(&parse_uevent(noif).unwrap()),
        Some(HostEvent::NetdevAdded { name: "lo".into() })
    );
}

#[test]
fn other_subsystems_and_actions_are_ignored() {
    let verbs = b"add@/devices/virtual/infiniband_verbs/uverbs0\0ACTION=add\0DEVPATH=/devices/virtual/infiniband_verbs/uverbs0\0SUBSYSTEM=infiniband_verbs\0MAJOR=231\0MINOR=192\0DEVNAME=infiniband/uverbs0\0SEQNUM=5\0";
    let u = parse_uevent(verbs).unwrap();
    assert_eq!(u.subsystem.as_deref(), Some("infiniband_verbs"));
    assert_eq!(uevent_to_event(&u), None);
    let bind = b"bind@/devices/pci0000:00/0000:00:03.0\0ACTION=bind\0DEVPATH=/devices/pci0000:00/0000:00:03.0\0SUBSYSTEM=pci\0DRIVER=mlx5_core\0SEQNUM=6\0";
    assert_eq!(uevent_to_event(&parse_uevent(bind).unwrap()), None);
    let online = b"online@/devices/virtual/net/veth0\0ACTION=online\0DEVPATH=/devices/virtual/net/veth0\0SUBSYSTEM=net\0INTERFACE=veth0\0";
    let u = parse_uevent(online).unwrap();
    assert_eq!(u.action, UeventAction::Online);
    assert_eq!(uevent_to_event(&u), None);
    // No SUBSYSTEM at all.
    let nosub = b"add@/devices/virtual/net/x\0ACTION=add\0";
    assert_eq!(uevent_to_event(&parse_uevent(nosub).unwrap()), None);
}

#[test]
fn malformed_input_is_none() {
    let cases: &[&[u8]] = &[
        b"",
        b"\0",
        b"add",
        b"add\0ACTION=add\0",
        b"@/devices/x\0",
        b"add@\0",
        b"add@/\0",
        b"add@devices/x\0",
        b"\xff\xfe@/devices/x\0",
        // libudev's re-broadcast (binary header, then properties).
        b"libudev\0\xfe\xed\xca\xfe\x28\0\0\0ACTION=add\0SUBSYSTEM=net\0",
        // Variables that contradict the header.
        b"add@/devices/virtual/net/a\0ACTION=remove\0SUBSYSTEM=net\0",
        b"add@/devices/virtual/net/a\0DEVPATH=/devices/virtual/net/b\0SUBSYSTEM=net\0",
    ];
    for c in cases {
        assert_eq!(parse_uevent(c), None, "{:?}", String::from_utf8_lossy(c));
    }
}

#[test]
fn odd_fields_are_skipped_not_fatal() {
    let msg = b"add@/devices/virtual/net/veth0\0garbage\0=novalue\0SUBSYSTEM=net\0BAD=\xff\xff\0INTERFACE=veth0\0SEQNUM=notanumber";
    let u = parse_uevent(msg).unwrap();
    assert_eq!(u.seqnum, None);
    assert_eq!(u.get("BAD"), None);
    assert_eq!(
        uevent_to_event(&u),
        Some(HostEvent::NetdevAdded {
            name: "veth0".into()
        })
    );
}

#[test]
fn parse_never_panics_on_prefixes_and_noise() {
    for cut in 0..=RXE_ADD.len() {
        let _ = parse_uevent(&RXE_ADD[..cut]).map(|u| uevent_to_event(&u));
    }
    let mut x: u32 = 0x1234_5678;
    for _ in 0..2000 {
        let mut buf = Vec::new();
        for _ in 0..(x % 97) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            buf.push(b"a@/=\0dmnet\xff"[(x % 11) as usize]);
        }
        let _ = parse_uevent(&buf).map(|u| uevent_to_event(&u));
    }
}

#[test]
fn source_detection_follows_udev_control() {
    let expect = if std::path::Path::new(UDEV_CONTROL).exists() {
        UeventSource::Udev
    } else {
        UeventSource::Kernel
    };
    assert_eq!(UeventSource::detect(), expect);
}

#[test]
fn udev_enumeration_lists_net_devices() {
    // libudev's enumerator reads sysfs; it works without udevd. Read-only.
    match enumerate() {
        Ok(devs) => {
            assert!(devs.iter().all(|u| u.action == UeventAction::Add));
            assert!(devs
                .iter()
                .all(|u| matches!(u.subsystem.as_deref(), Some("net" | "infiniband"))));
            let events: Vec<_> = devs.iter().filter_map(uevent_to_event).collect();
            eprintln!("udev enumeration: {events:?}");
            assert!(
                events.contains(&HostEvent::NetdevAdded { name: "lo".into() }),
                "{events:?}"
            );
        }
        Err(e) => eprintln!("SKIP udev enumeration: {e}"),
    }
}

async fn next_event(rx: &mut mpsc::UnboundedReceiver<HostEvent>) -> Option<HostEvent> {
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .ok()
        .flatten()
}

async fn wait_for(rx: &mut mpsc::UnboundedReceiver<HostEvent>, want: &HostEvent) -> bool {
    while let Some(ev) = next_event(rx).await {
        eprintln!("uevent: {ev:?}");
        if &ev == want {
            return true;
        }
    }
    false
}

/// The kernel-socket fallback against real uevents: a veth pair made, renamed and deleted in
/// a fresh network namespace, with the socket opened in that namespace (netdev uevents are
/// broadcast only to sockets of the netdev's namespace).
#[test]
fn netns_kernel_uevents_for_veth() {
    run_or_skip("netns_kernel_uevents_for_veth", || async {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let task = match spawn_uevents_from(UeventSource::Kernel, tx).await {
            Ok(t) => t,
            Err(e) => {
                eprintln!("SKIP: cannot open the uevent socket: {e}");
                return;
            }
        };
        if let Err(e) = add_veth("uv0", "uv1").await {
            eprintln!("SKIP: cannot create veth in the namespace: {e}");
            return;
        }
        assert!(wait_for(&mut rx, &HostEvent::NetdevAdded { name: "uv0".into() }).await);
        let rtnl = Rtnl::open().await.expect("rtnl");
        rtnl.rename("uv0", "uvX").await.expect("rename");
        assert!(
            wait_for(
                &mut rx,
                &HostEvent::NetdevRenamed {
                    old: "uv0".into(),
                    new: "uvX".into()
                }
            )
            .await
        );
        rtnl.change(
            "uvX",
            &NetdevChange {
                mtu: Some(1280),
                up: Some(true),
                ..Default::default()
            },
        )
        .await
        .expect("change");
        rtnl.delete("uvX").await.expect("delete");
        assert!(wait_for(&mut rx, &HostEvent::NetdevRemoved { name: "uvX".into() }).await);
        drop(rx);
        assert!(tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .is_ok());
    });
}

/// The udev path: the monitor opens (libudev needs no udevd for that; without one it just
/// receives nothing) and the task ends when the receiver goes away.
#[test]
fn udev_monitor_opens_and_stops() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let (tx, rx) = mpsc::unbounded_channel();
        let task = spawn_uevents_from(UeventSource::Udev, tx)
            .await
            .expect("udev monitor");
        drop(rx);
        assert!(tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .is_ok());
    });
}

/// A tiny receive buffer and a burst of uevents while the task cannot read: ENOBUFS becomes
/// Overflow { source: "uevent" } and reading goes on.
#[test]
fn netns_kernel_uevents_overflow() {
    run_or_skip("netns_kernel_uevents_overflow", || async {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let _task = match super::kobject::spawn_with_rcvbuf(tx, 1) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("SKIP: cannot open the uevent socket: {e}");
                return;
            }
        };
        if let Err(e) = crate::kernel::rtnl::netns::sh_here(
            "for i in $(seq 1 40); do ip link add uo$i type veth peer name up$i || exit 1; done",
        ) {
            eprintln!("SKIP: {e}");
            return;
        }
        let overflow = HostEvent::Overflow {
            source: "uevent".into(),
        };
        assert!(wait_for(&mut rx, &overflow).await, "no overflow reported");
        // Let the backlog drain (the tiny buffer may overflow more than once), then one
        // rename makes exactly one uevent, which must arrive.
        while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(300), rx.recv()).await {}
        let rtnl = Rtnl::open().await.expect("rtnl");
        rtnl.rename("uo40", "uoR").await.expect("rename");
        assert!(
            wait_for(
                &mut rx,
                &HostEvent::NetdevRenamed {
                    old: "uo40".into(),
                    new: "uoR".into()
                }
            )
            .await
        );
    });
}
