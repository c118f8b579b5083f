use std::time::Duration;

use netlink_packet_core::{NetlinkMessage, NetlinkPayload};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::RouteNetlinkMessage;
use tokio::sync::mpsc;

use super::netns::{add_veth, run_or_skip};
use super::*;
use crate::kernel::HostEvent;

fn emit(mut req: NetlinkMessage<RouteNetlinkMessage>) -> Vec<u8> {
    req.header.sequence_number = 1;
    req.finalize();
    let mut buf = vec![0u8; req.buffer_len()];
    req.serialize(&mut buf);
    buf
}

/// What `ip link add link ib0 name ib0.8002 type ipoib pkey 0x8002 mode connected` sends when
/// ib0 has ifindex 2, worked out from iproute2's ip/iplink.c (iplink_modify, iplink_parse:
/// IFLA_LINK is added before IFLA_IFNAME, then IFLA_LINKINFO) and ip/iplink_ipoib.c (PKEY,
/// MODE, UMCAST as u16 in the order given on the command line), with rtnl_talk adding
/// NLM_F_ACK. Nests carry no NLA_F_NESTED flag (addattr_nest). Sequence number 1, port 0.
#[rustfmt::skip]
const IPROUTE2_ADD_IPOIB: [u8; 92] = [
    // nlmsghdr: len 92, RTM_NEWLINK (16), REQUEST|ACK|EXCL|CREATE (0x605), seq 1, pid 0
    92, 0, 0, 0,  16, 0,  0x05, 0x06,  1, 0, 0, 0,  0, 0, 0, 0,
    // ifinfomsg: AF_UNSPEC, pad, type 0, index 0, flags 0, change 0
    0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 0,
    // IFLA_LINK (5) = 2
    8, 0, 5, 0,  2, 0, 0, 0,
    // IFLA_IFNAME (3) = "ib0.8002\0", padded to 16
    13, 0, 3, 0,  b'i', b'b', b'0', b'.', b'8', b'0', b'0', b'2', 0,  0, 0, 0,
    // IFLA_LINKINFO (18), 36 bytes
    36, 0, 18, 0,
    //   IFLA_INFO_KIND (1) = "ipoib\0", padded to 12
    10, 0, 1, 0,  b'i', b'p', b'o', b'i', b'b', 0,  0, 0,
    //   IFLA_INFO_DATA (2), 20 bytes
    20, 0, 2, 0,
    //     IFLA_IPOIB_PKEY (1) = 0x8002
    6, 0, 1, 0,  0x02, 0x80,  0, 0,
    //     IFLA_IPOIB_MODE (2) = 1 (connected)
    6, 0, 2, 0,  1, 0,  0, 0,
];

fn child(mode: Option<IpoibMode>, umcast: Option<bool>) -> NewIpoibChild {
    NewIpoibChild {
        parent: "ib0".into(),
        name: "ib0.8002".into(),
        pkey: 0x8002,
        mode,
        umcast,
    }
}

#[test]
fn newlink_ipoib_bytes_match_iproute2() {
    let body = ipoib_child_message(2, &child(Some(IpoibMode::Connected), None));
    let bytes = emit(request(RouteNetlinkMessage::NewLink(body), CREATE_FLAGS));
    assert_eq!(bytes, IPROUTE2_ADD_IPOIB.to_vec());
}

#[test]
fn newlink_ipoib_with_umcast_and_datagram() {
    let body = ipoib_child_message(7, &child(Some(IpoibMode::Datagram), Some(true)));
    let bytes = emit(request(RouteNetlinkMessage::NewLink(body), CREATE_FLAGS));
    // 92 + 8 for the UMCAST attribute; every length field grows by 8.
    assert_eq!(bytes.len(), 100);
    assert_eq!(&bytes[0..4], &100u32.to_le_bytes());
    assert_eq!(&bytes[36..40], &7u32.to_le_bytes());
    assert_eq!(&bytes[56..60], &[44, 0, 18, 0]);
    assert_eq!(&bytes[72..76], &[28, 0, 2, 0]);
    assert_eq!(&bytes[84..88], &[6, 0, 2, 0]);
    assert_eq!(&bytes[88..90], &[0, 0]);
    assert_eq!(&bytes[92..100], &[6, 0, 3, 0, 1, 0, 0, 0]);
    // And it parses back to the same attributes.
    let parsed = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&bytes).unwrap();
    let NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(msg)) = parsed.payload else {
        panic!("not a NEWLINK: {parsed:?}");
    };
    let info = ipoib_from_message(&msg).unwrap();
    assert_eq!(info.parent_ifindex, Some(7));
    assert_eq!(info.pkey, Some(0x8002));
    assert_eq!(info.mode, Some(IpoibMode::Datagram));
    assert_eq!(info.umcast, Some(true));
}

#[test]
fn changelink_bytes_like_ip_link_set() {
    let ch = NetdevChange {
        mtu: Some(2044),
        up: Some(true),
        ipoib_mode: Some(IpoibMode::Connected),
        ipoib_umcast: None,
    };
    let bytes = emit(request(
        RouteNetlinkMessage::NewLink(change_message("ib0", &ch)),
        CHANGE_FLAGS,
    ));
    #[rustfmt::skip]
    let expected: Vec<u8> = vec![
        // nlmsghdr: len 76, RTM_NEWLINK, REQUEST|ACK, seq 1
        76, 0, 0, 0,  16, 0,  5, 0,  1, 0, 0, 0,  0, 0, 0, 0,
        // ifinfomsg: index 0 (looked up by IFLA_IFNAME), flags IFF_UP, change IFF_UP
        0, 0, 0, 0,  0, 0, 0, 0,  1, 0, 0, 0,  1, 0, 0, 0,
        // IFLA_IFNAME "ib0\0"
        8, 0, 3, 0,  b'i', b'b', b'0', 0,
        // IFLA_MTU (4) 2044
        8, 0, 4, 0,  0xfc, 0x07, 0, 0,
        // IFLA_LINKINFO { KIND "ipoib", DATA { MODE 1 } }
        28, 0, 18, 0,
        10, 0, 1, 0,  b'i', b'p', b'o', b'i', b'b', 0,  0, 0,
        12, 0, 2, 0,
        6, 0, 2, 0,  1, 0,  0, 0,
    ];
    assert_eq!(bytes, expected);
}

#[test]
fn change_down_clears_up_in_mask_only() {
    let msg = change_message(
        "eth0",
        &NetdevChange {
            up: Some(false),
            ..Default::default()
        },
    );
    assert_eq!(msg.header.change_mask, LinkFlags::Up);
    assert!(!msg.header.flags.contains(LinkFlags::Up));
    assert!(!msg
        .attributes
        .iter()
        .any(|a| matches!(a, LinkAttribute::LinkInfo(_))));
}

#[test]
fn ipoib_attrs_of_a_port_netdev_have_no_parent() {
    let mut msg = LinkMessage::default();
    msg.header.index = 4;
    msg.attributes.push(LinkAttribute::IfName("ib0".into()));
    msg.attributes.push(LinkAttribute::Link(4));
    msg.attributes.push(LinkAttribute::LinkInfo(vec![
        LinkInfo::Kind(InfoKind::Ipoib),
        LinkInfo::Data(InfoData::Ipoib(vec![
            InfoIpoib::Pkey(0xffff),
            InfoIpoib::Mode(NlIpoibMode::Other(7)),
        ])),
    ]));
    let info = ipoib_from_message(&msg).unwrap();
    assert_eq!(info.ifindex, 4);
    assert_eq!(info.parent_ifindex, None);
    assert_eq!(info.pkey, Some(0xffff));
    assert_eq!(info.mode, None, "unknown modes are not guessed");
    // A plain Ethernet link is not IPoIB.
    let mut eth = LinkMessage::default();
    eth.attributes.push(LinkAttribute::IfName("eth0".into()));
    assert_eq!(ipoib_from_message(&eth), None);
}

#[test]
fn netlink_errors_keep_the_errno() {
    let mut em = netlink_packet_core::ErrorMessage::default();
    em.code = std::num::NonZeroI32::new(-libc::EBUSY);
    let e = map_err("newlink", rtnetlink::Error::NetlinkError(em));
    assert_eq!(
        e,
        HostError::Kernel {
            op: Op::Rtnl("newlink"),
            errno: Errno::EBUSY
        }
    );
    assert_eq!(
        enodev_is_not_found(HostError::kernel(Op::Rtnl("dellink"), Errno::ENODEV), "x"),
        HostError::NotFound("network interface x".into())
    );
    assert!(matches!(
        map_err("newlink", rtnetlink::Error::RequestFailed),
        HostError::Protocol { .. }
    ));
}

#[test]
fn new_names_are_checked() {
    for bad in [
        "",
        "0123456789abcdef",
        "a/b",
        "a b",
        "a:b",
        ".",
        "..",
        "a\0",
    ] {
        assert!(
            matches!(check_new_name(bad), Err(HostError::Invalid(_))),
            "{bad:?}"
        );
    }
    for good in ["ib0.8002", "0123456789abcde", "mlx4_ib0"] {
        assert_eq!(check_new_name(good), Ok(()));
    }
}

// ---- link event logic (no kernel) -------------------------------------------------------

fn link(index: u32, name: &str) -> LinkMessage {
    let mut m = LinkMessage::default();
    m.header.index = index;
    m.attributes.push(LinkAttribute::IfName(name.into()));
    m
}

#[test]
fn an_address_change_names_its_link() {
    use netlink_packet_route::address::AddressMessage;
    let mut names = LinkNames::new();
    names.reset(&[link(1, "lo"), link(7, "eth2")]);
    let mut a = AddressMessage::default();
    a.header.index = 7;
    let want = Some(HostEvent::NetdevAddressChanged {
        name: "eth2".into(),
    });
    assert_eq!(
        names.event(&RouteNetlinkMessage::NewAddress(a.clone())),
        want
    );
    assert_eq!(
        names.event(&RouteNetlinkMessage::DelAddress(a.clone())),
        want
    );
    // A link the map does not know (yet): nothing to name.
    a.header.index = 9;
    assert_eq!(names.event(&RouteNetlinkMessage::NewAddress(a)), None);
}

#[test]
fn link_names_track_add_change_rename_remove() {
    let mut names = LinkNames::new();
    names.reset(&[link(1, "lo")]);
    let ev = |names: &mut LinkNames, m: RouteNetlinkMessage| names.event(&m);
    assert_eq!(
        ev(&mut names, RouteNetlinkMessage::NewLink(link(5, "v0"))),
        Some(HostEvent::NetdevAdded { name: "v0".into() })
    );
    assert_eq!(
        ev(&mut names, RouteNetlinkMessage::NewLink(link(5, "v0"))),
        Some(HostEvent::NetdevChanged { name: "v0".into() })
    );
    assert_eq!(
        ev(&mut names, RouteNetlinkMessage::NewLink(link(5, "v9"))),
        Some(HostEvent::NetdevRenamed {
            old: "v0".into(),
            new: "v9".into()
        })
    );
    assert_eq!(names.name(5), Some("v9"));
    // A DELLINK without a name still names the netdev from the map.
    let mut del = LinkMessage::default();
    del.header.index = 5;
    assert_eq!(
        ev(&mut names, RouteNetlinkMessage::DelLink(del)),
        Some(HostEvent::NetdevRemoved { name: "v9".into() })
    );
    assert_eq!(names.name(5), None);
    // Bridge-port notifications are not netdev changes.
    let mut br = link(1, "lo");
    br.header.interface_family = netlink_packet_route::AddressFamily::Bridge;
    assert_eq!(ev(&mut names, RouteNetlinkMessage::NewLink(br)), None);
    // Unknown index and no name: nothing to say.
    assert_eq!(
        ev(
            &mut names,
            RouteNetlinkMessage::DelLink(LinkMessage::default())
        ),
        None
    );
}

#[test]
fn decode_datagram_never_panics() {
    let good = emit(request(
        RouteNetlinkMessage::NewLink(link(3, "v0")),
        CHANGE_FLAGS,
    ));
    let mut two = good.clone();
    two.extend_from_slice(&good);
    assert_eq!(decode_datagram(&two).len(), 2);
    for cut in 0..good.len() {
        let _ = decode_datagram(&good[..cut]);
    }
    let mut bad_len = good.clone();
    bad_len[0] = 0xff;
    let _ = decode_datagram(&bad_len);
    bad_len[0..4].copy_from_slice(&0u32.to_le_bytes());
    assert!(decode_datagram(&bad_len).is_empty());
    let _ = decode_datagram(&[0u8; 3]);
    let _ = decode_datagram(&[0xffu8; 64]);
}

// ---- against the kernel, in a fresh network namespace -----------------------------------

async fn mtu_and_flags(rtnl: &Rtnl, name: &str) -> (u32, bool) {
    let msg = rtnl
        .get_link(name)
        .await
        .expect("getlink")
        .expect("link exists");
    let mtu = msg
        .attributes
        .iter()
        .find_map(|a| match a {
            LinkAttribute::Mtu(m) => Some(*m),
            _ => None,
        })
        .expect("IFLA_MTU");
    (mtu, msg.header.flags.contains(LinkFlags::Up))
}

#[test]
fn netns_change_rename_delete_on_veth() {
    run_or_skip("netns_change_rename_delete_on_veth", || async {
        if let Err(e) = add_veth("rt0", "rt1").await {
            eprintln!("SKIP: cannot create veth in the namespace: {e}");
            return;
        }
        let rtnl = Rtnl::open().await.expect("open");
        let idx = rtnl.link_index("rt0").await.unwrap().expect("rt0 exists");
        assert!(idx > 1);
        assert_eq!(rtnl.link_index("nosuch").await, Ok(None));
        assert_eq!(rtnl.link_index("0123456789abcdefg").await, Ok(None));

        // MTU and up in one request.
        let ch = NetdevChange {
            mtu: Some(1400),
            up: Some(true),
            ..Default::default()
        };
        rtnl.change("rt0", &ch).await.expect("mtu+up");
        assert_eq!(mtu_and_flags(&rtnl, "rt0").await, (1400, true));

        // An MTU beyond the device's maximum: the kernel's errno is kept.
        let err = rtnl
            .change(
                "rt0",
                &NetdevChange {
                    mtu: Some(1 << 20),
                    ..Default::default()
                },
            )
            .await
            .unwrap_err();
        eprintln!("MTU 1048576 on veth: {err}");
        assert_eq!(err.errno(), Some(Errno::EINVAL));

        // Rename while up: kernels before 6.2 say EBUSY; newer ones allow it.
        match rtnl.rename("rt0", "rt0up").await {
            Ok(()) => {
                eprintln!("rename while up: allowed by this kernel");
                rtnl.rename("rt0up", "rt0").await.expect("rename back");
            }
            Err(e) => {
                eprintln!("rename while up: {e}");
                assert_eq!(e.errno(), Some(Errno::EBUSY));
            }
        }

        // Down, then rename, then the ifindex follows the new name.
        rtnl.change(
            "rt0",
            &NetdevChange {
                up: Some(false),
                ..Default::default()
            },
        )
        .await
        .expect("down");
        assert_eq!(mtu_and_flags(&rtnl, "rt0").await, (1400, false));
        rtnl.rename("rt0", "rtA").await.expect("rename down");
        assert_eq!(rtnl.link_index("rtA").await, Ok(Some(idx)));
        assert_eq!(rtnl.link_index("rt0").await, Ok(None));

        // Renaming onto a taken name.
        let err = rtnl.rename("rtA", "rt1").await.unwrap_err();
        eprintln!("rename onto an existing name: {err}");
        assert_eq!(err.errno(), Some(Errno::EEXIST));
        // Invalid names never reach the kernel.
        assert!(matches!(
            rtnl.rename("rtA", "a/b").await,
            Err(HostError::Invalid(_))
        ));

        // Missing names.
        let nf = HostError::NotFound("network interface rt0".into());
        assert_eq!(rtnl.rename("rt0", "rtB").await, Err(nf.clone()));
        assert_eq!(rtnl.change("rt0", &ch).await, Err(nf.clone()));
        assert_eq!(
            rtnl.change("rt0", &NetdevChange::default()).await,
            Err(nf.clone())
        );
        assert_eq!(rtnl.delete("rt0").await, Err(nf.clone()));
        assert_eq!(rtnl.ipoib_info("rt0").await, Err(nf));

        // Not IPoIB.
        assert_eq!(rtnl.ipoib_info("rtA").await, Ok(None));

        // Delete (the peer goes with it).
        rtnl.delete("rtA").await.expect("delete");
        assert_eq!(rtnl.link_index("rtA").await, Ok(None));
        assert_eq!(rtnl.link_index("rt1").await, Ok(None));
    });
}

#[test]
fn netns_ipoib_on_a_non_ib_parent() {
    run_or_skip("netns_ipoib_on_a_non_ib_parent", || async {
        if let Err(e) = add_veth("eth9", "eth8").await {
            eprintln!("SKIP: cannot create veth in the namespace: {e}");
            return;
        }
        let rtnl = Rtnl::open().await.expect("open");
        let c = NewIpoibChild {
            parent: "eth9".into(),
            name: "eth9.8002".into(),
            pkey: 0x8002,
            mode: Some(IpoibMode::Datagram),
            umcast: None,
        };
        let err = rtnl.create_ipoib_child(&c).await.unwrap_err();
        eprintln!("ipoib child on veth: {err}");
        // ENODEV with ib_ipoib loaded (parent not ARPHRD_INFINIBAND), EOPNOTSUPP without it.
        assert!(
            matches!(err.errno(), Some(Errno::ENODEV | Errno::EOPNOTSUPP)),
            "{err:?}"
        );
        assert_eq!(rtnl.link_index("eth9.8002").await, Ok(None));

        let missing = NewIpoibChild {
            parent: "ib7".into(),
            ..c.clone()
        };
        assert_eq!(
            rtnl.create_ipoib_child(&missing).await,
            Err(HostError::NotFound("network interface ib7".into()))
        );

        // `ip link set eth9 type ipoib mode connected` on a veth.
        let err = rtnl
            .change(
                "eth9",
                &NetdevChange {
                    ipoib_mode: Some(IpoibMode::Connected),
                    ..Default::default()
                },
            )
            .await
            .unwrap_err();
        eprintln!("ipoib mode on veth: {err}");
        assert_eq!(err.errno(), Some(Errno::EOPNOTSUPP));
    });
}

async fn next_event(rx: &mut mpsc::UnboundedReceiver<HostEvent>) -> Option<HostEvent> {
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .ok()
        .flatten()
}

/// Waits for an event matching `want`, skipping others (e.g. NetdevChanged noise).
async fn wait_for(rx: &mut mpsc::UnboundedReceiver<HostEvent>, want: &HostEvent) -> bool {
    while let Some(ev) = next_event(rx).await {
        if &ev == want {
            return true;
        }
    }
    false
}

#[test]
fn netns_link_events() {
    run_or_skip("netns_link_events", || async {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let task = spawn_link_events(tx).await.expect("link events");
        if let Err(e) = add_veth("ev0", "ev1").await {
            eprintln!("SKIP: cannot create veth in the namespace: {e}");
            return;
        }
        assert!(wait_for(&mut rx, &HostEvent::NetdevAdded { name: "ev0".into() }).await);
        let rtnl = Rtnl::open().await.expect("open");
        rtnl.change(
            "ev0",
            &NetdevChange {
                mtu: Some(1300),
                ..Default::default()
            },
        )
        .await
        .expect("mtu");
        assert!(wait_for(&mut rx, &HostEvent::NetdevChanged { name: "ev0".into() }).await);
        // An address added and removed (a RoCE port's GIDs follow them): `ip`, run from
        // this thread, works in its namespace.
        for verb in ["add", "del"] {
            let status = std::process::Command::new("ip")
                .args(["addr", verb, "192.0.2.7/24", "dev", "ev0"])
                .status();
            match status {
                Ok(s) if s.success() => {}
                other => {
                    eprintln!("SKIP (addresses): ip addr {verb}: {other:?}");
                    break;
                }
            }
            assert!(
                wait_for(
                    &mut rx,
                    &HostEvent::NetdevAddressChanged { name: "ev0".into() }
                )
                .await,
                "no NetdevAddressChanged after ip addr {verb}"
            );
        }
        rtnl.rename("ev0", "evX").await.expect("rename");
        assert!(
            wait_for(
                &mut rx,
                &HostEvent::NetdevRenamed {
                    old: "ev0".into(),
                    new: "evX".into()
                }
            )
            .await
        );
        rtnl.delete("evX").await.expect("delete");
        let mut removed = Vec::new();
        while removed.len() < 2 {
            match next_event(&mut rx).await {
                Some(HostEvent::NetdevRemoved { name }) => removed.push(name),
                Some(_) => {}
                None => break,
            }
        }
        removed.sort();
        assert_eq!(removed, vec!["ev1".to_string(), "evX".to_string()]);
        drop(rx);
        // The task ends once the receiver is gone.
        assert!(tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .is_ok());
    });
}

/// A tiny receive buffer and a burst of 40 veth pairs made while the task cannot read: the
/// kernel reports ENOBUFS, the task says Overflow, rebuilds its map, and goes on.
#[test]
fn netns_link_events_overflow() {
    run_or_skip("netns_link_events_overflow", || async {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let _task = events::spawn_with_rcvbuf(tx, 1).await.expect("link events");
        if let Err(e) = super::netns::sh_here(
            "for i in $(seq 1 40); do ip link add ov$i type veth peer name ow$i || exit 1; done",
        ) {
            eprintln!("SKIP: {e}");
            return;
        }
        let overflow = HostEvent::Overflow {
            source: "rtnetlink".into(),
        };
        assert!(wait_for(&mut rx, &overflow).await, "no overflow reported");
        // After the resync, a rename is still seen as a rename.
        while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(300), rx.recv()).await {}
        let rtnl = Rtnl::open().await.expect("open");
        rtnl.rename("ov40", "ovR").await.expect("rename");
        assert!(
            wait_for(
                &mut rx,
                &HostEvent::NetdevRenamed {
                    old: "ov40".into(),
                    new: "ovR".into()
                }
            )
            .await
        );
    });
}

/// The addresses read over RTM_GETADDR are what `ip address` shows: both families, each
/// with its prefix, and only the netdev asked for.
#[test]
fn netns_addresses_read_back() {
    run_or_skip("netns_addresses_read_back", || async {
        if let Err(e) = add_veth("ad0", "ad1").await {
            eprintln!("SKIP: cannot create veth in the namespace: {e}");
            return;
        }
        let ip = |args: &[&str]| std::process::Command::new("ip").args(args).status();
        for args in [
            &["addr", "add", "192.0.2.7/24", "dev", "ad0"][..],
            &[
                "addr",
                "add",
                "198.51.100.9/30",
                "peer",
                "198.51.100.10",
                "dev",
                "ad0",
            ],
            &["addr", "add", "2001:db8::7/64", "dev", "ad0", "nodad"],
            &["addr", "add", "203.0.113.1/24", "dev", "ad1"],
        ] {
            match ip(args) {
                Ok(s) if s.success() => {}
                other => {
                    eprintln!("SKIP: ip {args:?}: {other:?}");
                    return;
                }
            }
        }
        let rtnl = Rtnl::open().await.expect("open");
        let ad0 = rtnl.link_index("ad0").await.expect("index").expect("ad0");
        let ad1 = rtnl.link_index("ad1").await.expect("index").expect("ad1");
        let text =
            |v: &[crate::model::NetdevAddress]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        let one = rtnl.addresses(Some(ad0)).await.expect("dump");
        assert_eq!(one.keys().copied().collect::<Vec<_>>(), vec![ad0]);
        // The local address of a point-to-point one, not its peer; its prefix is the peer's
        // (ip takes the length given with `peer`, /32 here).
        assert_eq!(
            text(&one[&ad0]),
            ["192.0.2.7/24", "198.51.100.9/32", "2001:db8::7/64"]
        );
        let all = rtnl.addresses(None).await.expect("dump");
        assert_eq!(text(&all[&ad1]), ["203.0.113.1/24"]);
        assert_eq!(all[&ad0], one[&ad0]);
    });
}
