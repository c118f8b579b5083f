use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::ip::Family;
use crate::ipoib;
use crate::state::parse::{parse, parse_document};
use crate::state::render::to_yaml;
use crate::state::{InterfaceStep, LinkStep, NamingStep, PortStep, RoceStep, SetupStep, VfStep};

/// A host as the daemon reads it: every section present.
fn host() -> State {
    parse(
        "\
soft-links:
  - {name: rxe0, type: rxe, netdev: eth1}
roce:
  - {device: mlx5_0, port: 1, mode: v2, tos: 0}
  - {device: mlx5_0, port: 2, mode: v1, tos: 106}
  - {device: rxe0, port: 1, mode: v2, tos: 0}
interfaces:
  - name: ib0
    type: infiniband
    mtu: 2044
    infiniband: {mode: datagram, umcast: false}
    ipv4: {enabled: true, dhcp: true, autoconf: null, address: [], dns: [192.0.2.53]}
    ipv6: {enabled: true, dhcp: true, autoconf: true, address: []}
  - name: ib1
    type: infiniband
    mtu: 65520
    infiniband: {mode: connected, umcast: true}
    ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.1, prefix-length: 24}], gateway: 192.0.2.254}
    ipv6: {enabled: false}
  - name: ib0.8002
    type: infiniband
    mtu: 2044
    infiniband: {mode: datagram, umcast: false, base-iface: ib0, pkey: \"0x8002\"}
    ipv4: {enabled: true, dhcp: true, address: []}
    ipv6: {enabled: true, dhcp: true, autoconf: true, address: []}
naming:
  rdma-policy: NAME_KERNEL
  rdma-fixed-names:
    - {node-guid: \"0002:c903:0031:7f40\", name: ibp0}
  ipoib-names: []
modules:
  rdma: {ib_ipoib: true, rpcrdma: false}
  infiniband: {ib_umad: true}
memlock: {}
nfs-rdma: {enabled: false, port: 20049}
subnet-manager: {enabled: false, running: false}
responder: {enabled: false}
ports:
  - {device: mlx4_0, port: 1, type: ib}
  - {device: mlx4_0, port: 2, type: ib}
",
    )
    .expect("the host's state")
}

fn changes(text: &str) -> Vec<Change> {
    diff(&host(), &parse(text).expect("a valid document")).expect("a diff")
}

fn paths(text: &str) -> Vec<String> {
    changes(text).into_iter().map(|c| c.path).collect()
}

fn refused(text: &str) -> String {
    let doc = parse_document(text).expect("a valid document");
    match diff(&host(), &doc.state) {
        Ok(c) => panic!("accepted: {c:?}"),
        Err(e) => e.with_lines(&doc.lines).to_string(),
    }
}

fn one(
    path: &str,
    op: ChangeOp,
    current: &str,
    wanted: &str,
    step: Step,
    undo: Step,
) -> Vec<Change> {
    vec![Change {
        path: path.into(),
        op,
        current: current.into(),
        wanted: wanted.into(),
        step,
        undo,
    }]
}

#[test]
fn a_state_applied_to_itself_changes_nothing() {
    let s = host();
    assert_eq!(diff(&s, &s), Ok(vec![]));
    assert_eq!(diff(&s, &s.sorted()), Ok(vec![]));
    let shown = parse(&to_yaml(&s)).expect("what show prints parses");
    assert_eq!(diff(&s, &shown), Ok(vec![]));
    assert_eq!(diff(&s, &State::default()), Ok(vec![]));
}

#[test]
fn soft_links() {
    assert_eq!(
        changes("soft-links:\n  - {name: siw0, type: siw, netdev: eth2}\n"),
        one(
            "soft-links[siw0]",
            ChangeOp::Add,
            "",
            "type=siw netdev=eth2",
            Step::Link(LinkStep::Add {
                name: "siw0".into(),
                kind: SoftLinkKind::Siw,
                netdev: "eth2".into()
            }),
            Step::Link(LinkStep::Remove {
                name: "siw0".into()
            }),
        )
    );
    assert_eq!(
        changes("soft-links:\n  - {name: rxe0, state: absent}\n"),
        one(
            "soft-links[rxe0]",
            ChangeOp::Remove,
            "type=rxe netdev=eth1",
            "",
            Step::Link(LinkStep::Remove {
                name: "rxe0".into()
            }),
            Step::Link(LinkStep::Add {
                name: "rxe0".into(),
                kind: SoftLinkKind::Rxe,
                netdev: "eth1".into()
            }),
        )
    );
    // Absent and not there: nothing to do.
    assert_eq!(
        changes("soft-links:\n  - {name: siw9, state: absent}\n"),
        vec![]
    );
    // Another netdev: removed, then made again (removals run before additions).
    let c = changes(
        "soft-links:\n  - {name: rxe9, type: rxe, netdev: eth3}\n  - {name: rxe0, type: rxe, netdev: eth2}\n",
    );
    let steps: Vec<_> = c.iter().map(|c| (c.path.as_str(), c.op)).collect();
    assert_eq!(
        steps,
        [
            ("soft-links[rxe0]", ChangeOp::Remove),
            ("soft-links[rxe9]", ChangeOp::Add),
            ("soft-links[rxe0]", ChangeOp::Add)
        ]
    );
}

#[test]
fn roce() {
    assert_eq!(
        changes("roce:\n  - {device: mlx5_0, port: 2, mode: v1, tos: 32}\n"),
        one(
            "roce[mlx5_0/2].tos",
            ChangeOp::Set,
            "106",
            "32",
            Step::Roce(RoceStep::SetTos {
                device: "mlx5_0".into(),
                port: 2,
                tos: 32
            }),
            Step::Roce(RoceStep::SetTos {
                device: "mlx5_0".into(),
                port: 2,
                tos: 106
            }),
        )
    );
    assert_eq!(
        changes("roce:\n  - {device: mlx5_0, port: 1, mode: v1}\n")[0].undo,
        Step::Roce(RoceStep::SetMode {
            device: "mlx5_0".into(),
            port: 1,
            mode: RoceVersion::V2
        })
    );
    assert_eq!(
        refused("roce:\n  - device: mlx5_0\n    port: 3\n    tos: 1\n"),
        "line 3: roce[0].port: RoCE port \"mlx5_0/3\" does not exist"
    );
    assert_eq!(
        refused("roce:\n  - {device: mlx5_0, port: 1}\n  - {device: mlx5_7, port: 1}\n"),
        "line 3: roce[1].device: RoCE device \"mlx5_7\" does not exist (give the kernel name or node GUID of a device with RoCE ports)"
    );
    // A soft link made by the same document has its port 1.
    let c = changes(
        "soft-links:\n  - {name: rxe1, type: rxe, netdev: eth2}\nroce:\n  - {device: rxe1, port: 1, tos: 7}\n",
    );
    assert_eq!(c[1].path, "roce[rxe1/1].tos");
    assert_eq!(c[1].undo, c[1].step);
    // A link made again has new ports: their settings are set even when the old ones had
    // them.
    assert_eq!(
        paths("soft-links:\n  - {name: rxe0, type: rxe, netdev: eth2}\nroce:\n  - {device: rxe0, port: 1, mode: v2, tos: 0}\n"),
        ["soft-links[rxe0]", "soft-links[rxe0]", "roce[rxe0/1].mode", "roce[rxe0/1].tos"]
    );
    assert_eq!(
        refused("soft-links:\n  - {name: rxe0, type: rxe, netdev: eth2}\nroce:\n  - {device: rxe0, port: 2, tos: 0}\n"),
        "line 4: roce[0].port: RoCE port \"rxe0/2\" does not exist"
    );
    assert_eq!(
        refused("soft-links:\n  - {name: rxe0, state: absent}\nroce:\n  - device: rxe0\n    port: 1\n    tos: 1\n"),
        "line 4: roce[0].device: the soft link rxe0 is removed by this document (soft-links), and its port with it"
    );
}

#[test]
fn devices_by_guid() {
    let mut wanted = parse(
        "roce:\n  - {device: \"0002:C903:0031:7F40\", port: 1, tos: 5}\n  - {device: mlx5_0, port: 2, tos: 106}\n",
    )
    .expect("doc");
    let lookup = |g: &str| (g == "0002:c903:0031:7f40").then(|| "mlx5_0".to_string());
    wanted.resolve_devices(lookup).expect("resolved");
    let roce = wanted.roce.as_ref().expect("roce");
    assert_eq!(roce[0].device, "mlx5_0");
    assert_eq!(
        diff(&host(), &wanted).expect("diff")[0].path,
        "roce[mlx5_0/1].tos"
    );
    // A GUID and a name of one device, for one port: a contradiction once resolved.
    let mut twice = parse(
        "roce:\n  - {device: \"0002:c903:0031:7f40\", port: 1}\n  - {device: mlx5_0, port: 1}\n",
    )
    .expect("doc");
    twice.resolve_devices(lookup).expect("resolved");
    assert_eq!(
        diff(&host(), &twice).unwrap_err().to_string(),
        "roce[1]: port mlx5_0/1 is listed twice (also at roce[0])"
    );
    // From the text, with lines.
    let doc = parse_document("roce:\n  - device: mlx5_0\n    port: 2\n  - device: \"0002:c903:0031:7f49\"\n    port: 1\n")
        .expect("doc");
    assert_eq!(
        doc.changes(&host(), lookup).unwrap_err().to_string(),
        "line 4: roce[1].device: device with node GUID \"0002:c903:0031:7f49\" does not exist"
    );
    let doc = parse_document("roce:\n  - {device: \"0002:c903:0031:7f40\", port: 2, tos: 1}\n")
        .expect("doc");
    assert_eq!(
        doc.changes(&host(), lookup).expect("changes")[0].path,
        "roce[mlx5_0/2].tos"
    );
    let mut unknown =
        parse("roce:\n  - {device: \"0002:c903:0031:7f49\", port: 1}\n").expect("doc");
    let e = unknown.resolve_devices(lookup).unwrap_err();
    assert!(e.is_not_found());
    assert_eq!(
        e.to_string(),
        "roce[0].device: device with node GUID \"0002:c903:0031:7f49\" does not exist"
    );
}

#[test]
fn naming() {
    let c = changes(
        "naming:\n  rdma-policy: NAME_GUID\n  rdma-fixed-names:\n    - {node-guid: \"0002:C903:0031:7F40\", state: absent}\n    - {node-guid: \"0002:c903:0031:7f41\", name: ibp1}\n  ipoib-names:\n    - {port-guid: \"0002:c903:0031:7f41\", name: ibs1}\n",
    );
    assert_eq!(
        c,
        vec![
            Change {
                path: "naming.rdma-policy".into(),
                op: ChangeOp::Set,
                current: "NAME_KERNEL".into(),
                wanted: "NAME_GUID".into(),
                step: Step::Naming(NamingStep::SetPolicy {
                    policy: "NAME_GUID".into()
                }),
                undo: Step::Naming(NamingStep::SetPolicy {
                    policy: "NAME_KERNEL".into()
                }),
            },
            Change {
                path: "naming.rdma-fixed-names[0002:c903:0031:7f40]".into(),
                op: ChangeOp::Remove,
                current: "ibp0".into(),
                wanted: "".into(),
                step: Step::Naming(NamingStep::RemoveFixedName {
                    node_guid: "0002:c903:0031:7f40".into()
                }),
                undo: Step::Naming(NamingStep::SetFixedName {
                    node_guid: "0002:c903:0031:7f40".into(),
                    name: "ibp0".into()
                }),
            },
            Change {
                path: "naming.rdma-fixed-names[0002:c903:0031:7f41]".into(),
                op: ChangeOp::Add,
                current: "".into(),
                wanted: "ibp1".into(),
                step: Step::Naming(NamingStep::SetFixedName {
                    node_guid: "0002:c903:0031:7f41".into(),
                    name: "ibp1".into()
                }),
                undo: Step::Naming(NamingStep::RemoveFixedName {
                    node_guid: "0002:c903:0031:7f41".into()
                }),
            },
            Change {
                path: "naming.ipoib-names[0002:c903:0031:7f41]".into(),
                op: ChangeOp::Add,
                current: "".into(),
                wanted: "ibs1".into(),
                step: Step::Naming(NamingStep::SetIpoibName {
                    port_guid: "0002:c903:0031:7f41".into(),
                    name: "ibs1".into()
                }),
                undo: Step::Naming(NamingStep::RemoveIpoibName {
                    port_guid: "0002:c903:0031:7f41".into()
                }),
            },
        ]
    );
}

#[test]
fn modules() {
    let c = changes(
        "modules:\n  rdma: {ib_ipoib: true, rpcrdma: true, svcrdma: false, ib_srp: true}\n",
    );
    let got: Vec<_> = c
        .iter()
        .map(|c| {
            (
                c.path.as_str(),
                c.op,
                c.current.as_str(),
                c.wanted.as_str(),
                c.undo.clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "modules.rdma.ib_srp",
                ChangeOp::Add,
                "",
                "true",
                Step::Setup(SetupStep::SetModule {
                    set: "rdma".into(),
                    module: "ib_srp".into(),
                    enabled: false
                })
            ),
            (
                "modules.rdma.rpcrdma",
                ChangeOp::Set,
                "false",
                "true",
                Step::Setup(SetupStep::SetModule {
                    set: "rdma".into(),
                    module: "rpcrdma".into(),
                    enabled: false
                })
            ),
        ]
    );
    // kmod's '-' is '_'.
    assert_eq!(changes("modules:\n  rdma: {ib-ipoib: true}\n"), vec![]);
}

#[test]
fn memlock() {
    assert_eq!(
        changes("memlock: {soft: unlimited, hard: unlimited}\n"),
        one(
            "memlock",
            ChangeOp::Add,
            "",
            "soft=unlimited hard=unlimited",
            Step::Setup(SetupStep::SetMemlock {
                soft: "unlimited".into(),
                hard: "unlimited".into()
            }),
            Step::Setup(SetupStep::ResetMemlock),
        )
    );
    assert_eq!(
        refused("memlock:\n  soft: unlimited\n"),
        "line 1: memlock: give both soft and hard: the host has no hard limit of rdma-manager's to keep"
    );
    let mut with_limits = host();
    with_limits.memlock = Some(Memlock {
        soft: Some("1024".into()),
        hard: Some("unlimited".into()),
    });
    let wanted = parse("memlock: {soft: 2048}\n").expect("doc");
    assert_eq!(
        diff(&with_limits, &wanted),
        Ok(one(
            "memlock.soft",
            ChangeOp::Set,
            "1024",
            "2048",
            Step::Setup(SetupStep::SetMemlock {
                soft: "2048".into(),
                hard: "unlimited".into()
            }),
            Step::Setup(SetupStep::SetMemlock {
                soft: "1024".into(),
                hard: "unlimited".into()
            }),
        ))
    );
    let wanted = parse("memlock: {hard: 512}\n").expect("doc");
    assert_eq!(
        diff(&with_limits, &wanted).unwrap_err().to_string(),
        "memlock: the soft memlock limit (1024 KiB) is above the hard limit (512 KiB); pam_limits would lower it to the hard limit"
    );
    assert_eq!(
        diff(&with_limits, &parse("memlock: {soft: 1024}").expect("doc")),
        Ok(vec![])
    );
}

#[test]
fn nfs_and_the_subnet_manager() {
    assert_eq!(
        changes("nfs-rdma: {enabled: true}\nsubnet-manager: {running: true}\n"),
        vec![
            Change {
                path: "nfs-rdma.enabled".into(),
                op: ChangeOp::Set,
                current: "false".into(),
                wanted: "true".into(),
                step: Step::Setup(SetupStep::SetNfsRdma {
                    enabled: true,
                    port: 20049
                }),
                undo: Step::Setup(SetupStep::SetNfsRdma {
                    enabled: false,
                    port: 20049
                }),
            },
            Change {
                path: "subnet-manager.running".into(),
                op: ChangeOp::Set,
                current: "false".into(),
                wanted: "true".into(),
                step: Step::Setup(SetupStep::SetSubnetManagerRunning { running: true }),
                undo: Step::Setup(SetupStep::SetSubnetManagerRunning { running: false }),
            },
        ]
    );
    // The port of a disabled NFS over RDMA is no setting.
    assert_eq!(changes("nfs-rdma: {enabled: false, port: 1234}\n"), vec![]);
    assert_eq!(
        paths("nfs-rdma: {enabled: true, port: 1234}\n"),
        ["nfs-rdma"]
    );
}

#[test]
fn the_responder() {
    assert_eq!(
        changes("responder: {enabled: true}\n"),
        one(
            "responder.enabled",
            ChangeOp::Set,
            "false",
            "true",
            Step::SetLinkResponder { enabled: true },
            Step::SetLinkResponder { enabled: false },
        )
    );
    assert_eq!(changes("responder: {enabled: false}\n"), vec![]);
    // Left out: left as it is.
    assert_eq!(changes("responder: {}\n"), vec![]);
    let c = changes("responder: {enabled: true}\n");
    assert_eq!(c[0].step.area(), crate::state::Area::LinkTest);
    // A misspelt key is refused with its path.
    let e = parse("responder: {enable: true}\n").expect_err("unknown key");
    assert!(e.to_string().contains("responder"), "{e}");
}

#[test]
fn children() {
    let c = changes(
        "interfaces:\n  - {name: ib1.0003, type: infiniband, infiniband: {base-iface: ib1, pkey: \"0x0003\", mode: connected}, mtu: 9000}\n  - {name: ib0.8002, type: infiniband, state: absent}\n",
    );
    let got: Vec<_> = c
        .iter()
        .map(|c| (c.path.as_str(), c.step.clone(), c.undo.clone()))
        .collect();
    let mode = Step::Interface(InterfaceStep::SetMode {
        name: "ib1.0003".into(),
        mode: StateIpoibMode::Connected,
    });
    let mtu = Step::Interface(InterfaceStep::SetMtu {
        name: "ib1.0003".into(),
        mtu: 9000,
    });
    assert_eq!(
        got,
        [
            (
                "interfaces[ib0.8002]",
                Step::Interface(InterfaceStep::DeleteChild {
                    name: "ib0.8002".into()
                }),
                Step::Interface(InterfaceStep::CreateChild {
                    parent: "ib0".into(),
                    pkey: 0x8002,
                    name: "ib0.8002".into()
                })
            ),
            (
                "interfaces[ib1.0003]",
                Step::Interface(InterfaceStep::CreateChild {
                    parent: "ib1".into(),
                    pkey: 0x0003,
                    name: "ib1.0003".into()
                }),
                Step::Interface(InterfaceStep::DeleteChild {
                    name: "ib1.0003".into()
                })
            ),
            // To connected mode: the mode first, then the MTU only it allows.
            ("interfaces[ib1.0003].infiniband.mode", mode.clone(), mode),
            ("interfaces[ib1.0003].mtu", mtu.clone(), mtu),
        ]
    );
    assert_eq!(c[0].current, "base-iface=ib0 pkey=0x8002");
    assert_eq!(c[1].wanted, "base-iface=ib1 pkey=0x0003");
    assert_eq!(
        refused("interfaces:\n  - name: ib0\n    type: infiniband\n    state: absent\n"),
        "line 4: interfaces[0].state: ib0 is not a P_Key child: only children (with base-iface and pkey) can be deleted"
    );
    assert_eq!(
        refused("interfaces:\n  - name: ib7\n    type: infiniband\n    mtu: 2044\n"),
        "line 2: interfaces[0]: interface \"ib7\" does not exist (only P_Key children are created: give infiniband.base-iface and pkey)"
    );
    assert_eq!(
        refused("interfaces:\n  - name: ib7.8002\n    type: infiniband\n    infiniband:\n      base-iface: ib7\n      pkey: \"0x8002\"\n"),
        "line 5: interfaces[0].infiniband.base-iface: parent interface \"ib7\" does not exist"
    );
    assert_eq!(
        refused("interfaces:\n  - name: p2\n    type: infiniband\n    infiniband:\n      base-iface: ib0\n      pkey: \"0x0002\"\n"),
        "line 6: interfaces[0].infiniband.pkey: ib0 already has the child ib0.8002 with P_Key 0x8002 (the kernel sets the full-membership bit 0x8000 on every child)"
    );
    // Unless that child is deleted by the same document.
    assert_eq!(
        paths("interfaces:\n  - {name: p2, type: infiniband, infiniband: {base-iface: ib0, pkey: \"0x0002\"}}\n  - {name: ib0.8002, type: infiniband, state: absent}\n"),
        ["interfaces[ib0.8002]", "interfaces[p2]"]
    );
    assert!(refused("interfaces:\n  - {name: ib0.8002, type: infiniband, infiniband: {base-iface: ib1, pkey: \"0x8002\"}}\n")
        .starts_with("line 2: interfaces[0].infiniband: ib0.8002 is the child of ib0 with P_Key 0x8002; a child's parent and P_Key cannot change"));
    // The same child given with the P_Key without its full-membership bit: nothing to do.
    assert_eq!(
        changes("interfaces:\n  - {name: ib0.8002, type: infiniband, infiniband: {base-iface: ib0, pkey: \"0x0002\"}}\n"),
        vec![]
    );
}

#[test]
fn ipoib_settings() {
    // To datagram mode: the MTU is lowered first.
    let c = changes("interfaces:\n  - {name: ib1, type: infiniband, mtu: 2044, infiniband: {mode: datagram, umcast: false}}\n");
    let got: Vec<_> = c
        .iter()
        .map(|c| {
            (
                c.path.as_str(),
                c.current.as_str(),
                c.wanted.as_str(),
                c.undo.clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "interfaces[ib1].mtu",
                "65520",
                "2044",
                Step::Interface(InterfaceStep::SetMtu {
                    name: "ib1".into(),
                    mtu: 65520
                })
            ),
            (
                "interfaces[ib1].infiniband.mode",
                "connected",
                "datagram",
                Step::Interface(InterfaceStep::SetMode {
                    name: "ib1".into(),
                    mode: StateIpoibMode::Connected
                })
            ),
            (
                "interfaces[ib1].infiniband.umcast",
                "true",
                "false",
                Step::Interface(InterfaceStep::SetUmcast {
                    name: "ib1".into(),
                    umcast: true
                })
            ),
        ]
    );
    // The MTU is checked against the mode the interface keeps.
    assert!(
        refused("interfaces:\n  - name: ib0\n    type: infiniband\n    mtu: 9000\n")
            .starts_with("line 4: interfaces[0].mtu: MTU 9000 is too large for datagram mode")
    );
}

#[test]
fn ip_settings() {
    let c = changes(
        "interfaces:\n  - name: ib0\n    type: infiniband\n    ipv4:\n      dhcp: false\n      address: [{ip: 192.0.2.7, prefix-length: 24}]\n      gateway: 192.0.2.254\n    ipv6: {enabled: false}\n",
    );
    let keys = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    assert_eq!(
        c,
        vec![
            Change {
                path: "interfaces[ib0].ipv4".into(),
                op: ChangeOp::Set,
                current: "ipv4.addresses= ipv4.gateway= ipv4.method=auto".into(),
                wanted: "ipv4.addresses=192.0.2.7/24 ipv4.gateway=192.0.2.254 ipv4.method=manual"
                    .into(),
                step: Step::Interface(InterfaceStep::SetIp {
                    name: "ib0".into(),
                    keys: keys(&[
                        ("ipv4.addresses", "192.0.2.7/24"),
                        ("ipv4.gateway", "192.0.2.254"),
                        ("ipv4.method", "manual")
                    ])
                }),
                undo: Step::Interface(InterfaceStep::SetIp {
                    name: "ib0".into(),
                    keys: keys(&[
                        ("ipv4.addresses", ""),
                        ("ipv4.gateway", ""),
                        ("ipv4.method", "auto")
                    ])
                }),
            },
            Change {
                path: "interfaces[ib0].ipv6".into(),
                op: ChangeOp::Set,
                current: "ipv6.method=auto".into(),
                wanted: "ipv6.method=disabled".into(),
                step: Step::Interface(InterfaceStep::SetIp {
                    name: "ib0".into(),
                    keys: keys(&[("ipv6.method", "disabled")])
                }),
                undo: Step::Interface(InterfaceStep::SetIp {
                    name: "ib0".into(),
                    keys: keys(&[("ipv6.method", "auto")])
                }),
            },
        ]
    );
    // DNS only: one key.
    assert_eq!(
        changes("interfaces:\n  - {name: ib1, type: infiniband, ipv4: {dns: [192.0.2.53]}}\n")[0]
            .step,
        Step::Interface(InterfaceStep::SetIp {
            name: "ib1".into(),
            keys: keys(&[("ipv4.dns", "192.0.2.53")])
        })
    );
    // Turning DHCP on keeps ib1's static address; a gateway needs one.
    assert_eq!(
        paths("interfaces:\n  - {name: ib1, type: infiniband, ipv4: {dhcp: true}}\n"),
        ["interfaces[ib1].ipv4"]
    );
    assert_eq!(
        refused("interfaces:\n  - name: ib0\n    type: infiniband\n    ipv4:\n      gateway: 192.0.2.1\n"),
        "line 5: interfaces[0].ipv4.gateway: an IPv4 gateway needs an IPv4 address, and ib0 would have none"
    );
    // No addresses left makes the family link-local, which has no gateway either.
    assert_eq!(
        changes("interfaces:\n  - {name: ib1, type: infiniband, ipv4: {address: []}}\n")[0].wanted,
        "ipv4.addresses= ipv4.gateway= ipv4.method=link-local"
    );
    // No NetworkManager: no IP settings.
    let mut no_nm = host();
    for e in no_nm.interfaces.iter_mut().flatten() {
        e.ipv4 = None;
        e.ipv6 = None;
    }
    let wanted =
        parse("interfaces:\n  - {name: ib0, type: infiniband, ipv4: {dhcp: true}}\n").expect("doc");
    assert_eq!(
        diff(&no_nm, &wanted).unwrap_err().to_string(),
        "interfaces[0].ipv4: IP settings need NetworkManager, and the host's state has none for ib0 (NetworkManager does not run, or does not manage it)"
    );
}

#[test]
fn the_order_of_a_whole_apply() {
    let text = "\
interfaces:
  - {name: ib0, type: infiniband, ipv4: {dns: []}, mtu: 2000}
  - {name: ib1.0005, type: infiniband, infiniband: {base-iface: ib1, pkey: \"0x5\"}}
  - {name: ib0.8002, type: infiniband, state: absent}
subnet-manager: {enabled: true}
nfs-rdma: {enabled: true}
memlock: {soft: 64, hard: 64}
modules: {rdma: {rpcrdma: true}}
naming: {rdma-policy: NAME_PCI}
roce:
  - {device: mlx5_0, port: 1, tos: 3}
soft-links:
  - {name: siw0, type: siw, netdev: eth1}
  - {name: rxe0, state: absent}
";
    assert_eq!(
        paths(text),
        [
            "soft-links[rxe0]",
            "soft-links[siw0]",
            "roce[mlx5_0/1].tos",
            "naming.rdma-policy",
            "modules.rdma.rpcrdma",
            "memlock",
            "nfs-rdma.enabled",
            "subnet-manager.enabled",
            "interfaces[ib0.8002]",
            "interfaces[ib1.0005]",
            "interfaces[ib0].mtu",
            "interfaces[ib0].ipv4",
        ]
    );
    // Applying the undo steps in reverse to the changed host is the test of the daemon; here,
    // each change's undo is of the same area as its step.
    for c in changes(text) {
        assert_eq!(c.step.area(), c.undo.area(), "{}", c.path);
    }
}

/// Hosts as the daemon reads them, generated: each is its own state's fixed point.
mod generated {
    use super::*;
    use crate::state::nmcli::{self, METHOD_AUTO};

    struct Gen(u64);

    impl Gen {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
        fn bool(&mut self) -> bool {
            self.below(2) == 0
        }
    }

    fn family(g: &mut Gen, family: Family) -> IpFamily {
        let v4 = family == Family::V4;
        let method = ["auto", "manual", "link-local", "disabled"][g.below(4) as usize];
        let mut keys = BTreeMap::new();
        keys.insert(nmcli::key(family, "method"), method.to_string());
        let n = if method == "manual" {
            1 + g.below(3)
        } else if method == METHOD_AUTO {
            g.below(2)
        } else {
            0
        };
        let addresses: Vec<String> = (0..n)
            .map(|i| {
                if v4 {
                    format!("192.0.2.{}/{}", i + 1, 8 + g.below(25))
                } else {
                    format!("2001:db8::{:x}/{}", i + 1, 8 + g.below(121))
                }
            })
            .collect();
        if n > 0 && g.bool() {
            let gw = if v4 { "192.0.2.254" } else { "2001:db8::fe" };
            keys.insert(nmcli::key(family, "gateway"), gw.into());
        }
        keys.insert(nmcli::key(family, "addresses"), addresses.join(","));
        if g.bool() {
            let dns = if v4 {
                "192.0.2.53,192.0.2.54"
            } else {
                "2001:db8::53"
            };
            keys.insert(nmcli::key(family, "dns"), dns.into());
        }
        if g.bool() {
            keys.insert(nmcli::key(family, "dns-search"), "lab.example".into());
        }
        IpFamily::from_nmcli(family, &keys)
    }

    fn host(g: &mut Gen, nm: bool) -> State {
        let soft_links: Vec<SoftLinkEntry> = (0..g.below(4))
            .map(|i| SoftLinkEntry {
                name: format!("rxe{i}"),
                kind: Some(if g.bool() {
                    SoftLinkKind::Rxe
                } else {
                    SoftLinkKind::Siw
                }),
                netdev: Some(format!("eth{}", g.below(3))),
                state: None,
            })
            .collect();
        let mut roce = Vec::new();
        for d in 0..g.below(4) {
            for port in 1..=1 + g.below(2) as u32 {
                roce.push(RoceEntry {
                    device: format!("mlx5_{d}"),
                    port,
                    mode: Some(if g.bool() {
                        RoceVersion::V1
                    } else {
                        RoceVersion::V2
                    }),
                    tos: Some(g.below(256) as u8),
                    qos: None,
                });
            }
        }
        let mut interfaces = Vec::new();
        for p in 0..g.below(3) {
            let parent = format!("ib{p}");
            let mut pkeys = BTreeSet::new();
            for k in 0..=g.below(3) {
                let child = k > 0;
                let pkey = ipoib::full_member(1 + g.below(0x7ffe) as u16);
                if child && !pkeys.insert(pkey) {
                    continue;
                }
                let connected = g.bool();
                interfaces.push(InterfaceEntry {
                    name: if child {
                        ipoib::default_child_name(&parent, pkey)
                    } else {
                        parent.clone()
                    },
                    kind: InterfaceType::Infiniband,
                    state: Some(EntryState::Up),
                    mtu: Some(if connected { 65520 } else { 2044 }),
                    infiniband: Some(Infiniband {
                        mode: Some(if connected {
                            StateIpoibMode::Connected
                        } else {
                            StateIpoibMode::Datagram
                        }),
                        umcast: Some(g.bool()),
                        base_iface: child.then(|| parent.clone()),
                        pkey: child.then(|| format!("{pkey:#06x}")),
                    }),
                    ipv4: nm.then(|| family(g, Family::V4)),
                    ipv6: nm.then(|| family(g, Family::V6)),
                });
            }
        }
        let guid = |i: u64| format!("0002:c903:0031:{:04x}", i);
        State {
            soft_links: Some(soft_links),
            roce: Some(roce),
            interfaces: Some(interfaces),
            naming: Some(Naming {
                rdma_policy: Some(RDMA_POLICY_OF[g.below(5) as usize].to_string()),
                rdma_fixed_names: Some(
                    (0..g.below(3))
                        .map(|i| FixedName {
                            node_guid: guid(i),
                            name: Some(format!("ibp{i}")),
                            state: None,
                        })
                        .collect(),
                ),
                ipoib_names: Some(
                    (0..g.below(3))
                        .map(|i| IpoibName {
                            port_guid: guid(0x100 + i),
                            name: Some(format!("ibs{i}")),
                            state: None,
                        })
                        .collect(),
                ),
            }),
            modules: Some(
                [
                    ("rdma", ["ib_ipoib", "rpcrdma", "ib_srp"]),
                    ("infiniband", ["ib_umad", "ib_uverbs", "rdma_ucm"]),
                ]
                .iter()
                .map(|(set, mods)| {
                    (
                        set.to_string(),
                        mods.iter().map(|m| (m.to_string(), g.bool())).collect(),
                    )
                })
                .collect(),
            ),
            memlock: Some(if g.bool() {
                Memlock::default()
            } else {
                Memlock {
                    soft: Some("1024".into()),
                    hard: Some("unlimited".into()),
                }
            }),
            nfs_rdma: Some({
                let enabled = g.bool();
                NfsRdma {
                    enabled: Some(enabled),
                    port: enabled.then_some(20049),
                }
            }),
            subnet_manager: Some(SubnetManager {
                enabled: Some(g.bool()),
                running: Some(g.bool()),
            }),
            responder: Some(Responder {
                enabled: Some(g.bool()),
            }),
            health: None,
            ports: None,
            sriov_vfs: None,
        }
    }

    /// IP settings wanted over current ones, generated: the keys a change sets, applied to
    /// the current keys, read back as the daemon reads them, leave nothing to change.
    #[test]
    fn ip_settings_read_back_as_written() {
        let mut g = Gen(0x5851_f42d_4c95_7f2d);
        let base = super::host();
        let mut applied = 0;
        for round in 0..2000 {
            let fam = if g.bool() { Family::V4 } else { Family::V6 };
            let v4 = fam == Family::V4;
            let now = family(&mut g, fam);
            let maybe_bool = |g: &mut Gen| match g.below(3) {
                0 => None,
                1 => Some(true),
                _ => Some(false),
            };
            let address = match g.below(3) {
                0 => None,
                n => Some(
                    (0..n - 1)
                        .map(|i| IpAddress {
                            ip: if v4 {
                                format!("198.51.100.{}", i + 1)
                            } else {
                                format!("2001:DB8:0::{:X}", i + 0xa)
                            },
                            prefix_length: 24,
                        })
                        .collect::<Vec<_>>(),
                ),
            };
            let w = IpFamily {
                enabled: maybe_bool(&mut g),
                dhcp: maybe_bool(&mut g),
                autoconf: if v4 { None } else { maybe_bool(&mut g) },
                gateway: (g.below(3) == 0).then(|| {
                    if v4 {
                        "198.51.100.254".into()
                    } else {
                        "2001:db8::FE".into()
                    }
                }),
                dns: (g.below(3) == 0).then(|| {
                    vec![if v4 {
                        "198.51.100.53".into()
                    } else {
                        "2001:db8::35".into()
                    }]
                }),
                dns_search: None,
                address,
            };
            if crate::state::interfaces::check_family("x", &w, fam).is_err() {
                continue;
            }
            let with = |f: IpFamily| {
                let mut s = base.clone();
                let ib0 = &mut s.interfaces.as_mut().expect("interfaces")[0];
                match fam {
                    Family::V4 => ib0.ipv4 = Some(f),
                    Family::V6 => ib0.ipv6 = Some(f),
                }
                s
            };
            let current = with(now.clone());
            let wanted = with(w.clone());
            let Ok(changes) = diff(&current, &wanted) else {
                continue;
            };
            let mut keys = now.nmcli_full(fam);
            for c in &changes {
                let Step::Interface(InterfaceStep::SetIp { keys: set, .. }) = &c.step else {
                    panic!("round {round}: {c:?}")
                };
                keys.extend(set.clone());
            }
            let after = with(IpFamily::from_nmcli(fam, &keys));
            assert_eq!(
                diff(&after, &wanted),
                Ok(vec![]),
                "round {round}: {now:?} + {w:?} -> {keys:?}"
            );
            applied += usize::from(!changes.is_empty());
        }
        assert!(applied > 500, "{applied} rounds changed something");
    }

    const RDMA_POLICY_OF: [&str; 5] = crate::state::RDMA_POLICIES;

    #[test]
    fn every_host_is_its_own_fixed_point() {
        let mut g = Gen(0x2545_f491_4f6c_dd1d);
        for round in 0..300 {
            let s = host(&mut g, round % 4 != 0);
            let yaml = to_yaml(&s);
            let shown = parse(&yaml).unwrap_or_else(|e| panic!("round {round}: {e}\n{yaml}"));
            assert_eq!(diff(&s, &s), Ok(vec![]), "round {round}:\n{yaml}");
            assert_eq!(diff(&s, &shown), Ok(vec![]), "round {round}:\n{yaml}");
        }
    }

    /// A host's state applied to another host changes exactly the settings that differ, and
    /// the changed host then has nothing left to change (what the daemon's verification reads).
    #[test]
    fn a_host_applied_to_another_then_matches_it() {
        let mut g = Gen(0x0123_4567_89ab_cdef);
        for round in 0..200 {
            let a = host(&mut g, true);
            let b = host(&mut g, true);
            // Only the sections whose identities both hosts share can be applied as they are:
            // naming, modules, memlock, NFS, the subnet manager, the responder.
            let wanted = State {
                naming: b.naming.clone(),
                modules: b.modules.clone(),
                memlock: b.memlock.clone().filter(|m| m.soft.is_some()),
                nfs_rdma: b.nfs_rdma.clone(),
                subnet_manager: b.subnet_manager.clone(),
                responder: b.responder.clone(),
                ..State::default()
            };
            let changes = diff(&a, &wanted).unwrap_or_else(|e| panic!("round {round}: {e}"));
            let mut after = a.clone();
            for c in &changes {
                apply(&mut after, &c.step);
            }
            assert_eq!(
                diff(&after, &wanted),
                Ok(vec![]),
                "round {round}: {changes:?}"
            );
            for c in changes.iter().rev() {
                apply(&mut after, &c.undo);
            }
            assert_eq!(
                diff(&after, &a.sorted()).map(|c| c.len()),
                Ok(0),
                "round {round}"
            );
        }
    }

    /// What a host step does to a state, for the host-wide sections.
    fn apply(s: &mut State, step: &Step) {
        let naming = s.naming.get_or_insert_with(Naming::default);
        match step {
            Step::Naming(NamingStep::SetPolicy { policy }) => {
                naming.rdma_policy = Some(policy.clone())
            }
            Step::Naming(NamingStep::SetFixedName { node_guid, name }) => {
                let l = naming.rdma_fixed_names.get_or_insert_with(Vec::new);
                l.retain(|f| &f.node_guid != node_guid);
                l.push(FixedName {
                    node_guid: node_guid.clone(),
                    name: Some(name.clone()),
                    state: None,
                });
            }
            Step::Naming(NamingStep::RemoveFixedName { node_guid }) => {
                if let Some(l) = &mut naming.rdma_fixed_names {
                    l.retain(|f| &f.node_guid != node_guid);
                }
            }
            Step::Naming(NamingStep::SetIpoibName { port_guid, name }) => {
                let l = naming.ipoib_names.get_or_insert_with(Vec::new);
                l.retain(|f| &f.port_guid != port_guid);
                l.push(IpoibName {
                    port_guid: port_guid.clone(),
                    name: Some(name.clone()),
                    state: None,
                });
            }
            Step::Naming(NamingStep::RemoveIpoibName { port_guid }) => {
                if let Some(l) = &mut naming.ipoib_names {
                    l.retain(|f| &f.port_guid != port_guid);
                }
            }
            Step::Setup(SetupStep::SetModule {
                set,
                module,
                enabled,
            }) => {
                s.modules
                    .get_or_insert_with(BTreeMap::new)
                    .entry(set.clone())
                    .or_default()
                    .insert(module.clone(), *enabled);
            }
            Step::Setup(SetupStep::SetMemlock { soft, hard }) => {
                s.memlock = Some(Memlock {
                    soft: Some(soft.clone()),
                    hard: Some(hard.clone()),
                })
            }
            Step::Setup(SetupStep::ResetMemlock) => s.memlock = Some(Memlock::default()),
            Step::Setup(SetupStep::SetNfsRdma { enabled, port }) => {
                s.nfs_rdma = Some(NfsRdma {
                    enabled: Some(*enabled),
                    port: enabled.then_some(*port),
                })
            }
            Step::Setup(SetupStep::SetSubnetManagerEnabled { enabled }) => {
                s.subnet_manager
                    .get_or_insert_with(SubnetManager::default)
                    .enabled = Some(*enabled)
            }
            Step::Setup(SetupStep::SetSubnetManagerRunning { running }) => {
                s.subnet_manager
                    .get_or_insert_with(SubnetManager::default)
                    .running = Some(*running)
            }
            Step::SetLinkResponder { enabled } => {
                s.responder.get_or_insert_with(Responder::default).enabled = Some(*enabled)
            }
            other => panic!("not a host-wide step: {other:?}"),
        }
    }
}

#[test]
fn port_types_follow_the_documents_order_with_their_undo() {
    let c = changes(
        "ports:\n  - {device: mlx4_0, port: 2, type: eth}\n  - {device: mlx4_0, port: 1, type: eth}\n",
    );
    let step = |port, port_type| {
        Step::Port(PortStep::SetType {
            device: "mlx4_0".into(),
            port,
            port_type,
        })
    };
    use crate::port_type::PortType::{Eth, Ib};
    let got: Vec<_> = c
        .iter()
        .map(|c| {
            (
                c.path.as_str(),
                c.current.as_str(),
                c.wanted.as_str(),
                &c.step,
                &c.undo,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "ports[mlx4_0/2].type",
                "ib",
                "eth",
                &step(2, Eth),
                &step(2, Ib)
            ),
            (
                "ports[mlx4_0/1].type",
                "ib",
                "eth",
                &step(1, Eth),
                &step(1, Ib)
            ),
        ]
    );
    assert_eq!(c[0].step.area(), crate::state::Area::Adapter);
    assert!(paths("ports:\n  - {device: mlx4_0, port: 1, type: ib}\n").is_empty());
    assert!(paths("ports:\n  - {device: mlx4_0, port: 1}\n").is_empty());
    assert!(refused("ports:\n  - {device: rxe0, port: 1, type: eth}\n").contains("ports[0]"));
}

/// A host whose mlx5_0 port 1 has DCB (as mlx5 comes up: PCP trust, nothing lossless, all
/// priorities in traffic class 0) and whose rxe0 has none.
fn qos_host() -> State {
    parse(
        "\
roce:
  - device: mlx5_0
    port: 1
    mode: v2
    tos: 0
    qos:
      trust: pcp
      pfc: []
      ets: {bandwidth: [100, 0, 0, 0, 0, 0, 0, 0], prio-tc: [0, 0, 0, 0, 0, 0, 0, 0]}
      dscp: {}
      traffic-class: 0
      ecn: []
  - {device: rxe0, port: 1, mode: v2, tos: 0}
",
    )
    .expect("the host's state")
}

#[test]
fn a_qos_profile_is_one_change_undone_by_the_profile_before() {
    let host = qos_host();
    let want = "roce:\n  - device: mlx5_0\n    port: 1\n    tos: 106\n    qos: {trust: dscp, pfc: [3], dscp: {\"26\": 3}, ecn: [3]}\n";
    let c = diff(&host, &parse(want).expect("valid")).expect("a diff");
    let got: Vec<(&str, &str, &str)> = c
        .iter()
        .map(|c| (c.path.as_str(), c.current.as_str(), c.wanted.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("roce[mlx5_0/1].tos", "0", "106"),
            (
                "roce[mlx5_0/1].qos",
                "trust=pcp pfc=none ets=100,0,0,0,0,0,0,0/0,0,0,0,0,0,0,0 traffic-class=0 ecn=none",
                "trust=dscp pfc=3 dscp=26:3 ecn=3"
            ),
        ]
    );
    let before = host.roce.as_ref().expect("roce")[0]
        .qos
        .clone()
        .expect("qos");
    match (&c[1].step, &c[1].undo) {
        (
            Step::Roce(RoceStep::SetQosProfile { profile, .. }),
            Step::Roce(RoceStep::SetQosProfile {
                profile: undo,
                device,
                port,
            }),
        ) => {
            assert_eq!(profile.dscp.get(&26), Some(&3));
            // What the document leaves (ETS, traffic class) is left: absent from the step.
            assert_eq!((profile.ets.as_ref(), profile.traffic_class), (None, None));
            assert_eq!((undo, device.as_str(), *port), (&before, "mlx5_0", 1));
        }
        other => panic!("not a QoS step: {other:?}"),
    }
    assert_eq!(c[1].step.area(), crate::state::Area::Adapter);
}

#[test]
fn a_qos_profile_the_port_holds_is_no_change() {
    let host = qos_host();
    // ETS, traffic class and ECN left out: compared as the port holds them.
    let same = "roce:\n  - device: mlx5_0\n    port: 1\n    qos: {trust: pcp, pfc: []}\n";
    assert_eq!(
        diff(&host, &parse(same).expect("valid")).expect("a diff"),
        []
    );
    let other_ets = "roce:\n  - device: mlx5_0\n    port: 1\n    qos: {trust: pcp, pfc: [], ets: {bandwidth: [50, 50, 0, 0, 0, 0, 0, 0], prio-tc: [0, 0, 0, 1, 0, 0, 0, 0]}}\n";
    let c = diff(&host, &parse(other_ets).expect("valid")).expect("a diff");
    assert_eq!(c.len(), 1, "{c:?}");
}

#[test]
fn a_qos_profile_on_a_port_without_dcb_or_against_the_rules_is_refused() {
    let host = qos_host();
    let rxe = "roce:\n  - device: rxe0\n    port: 1\n    qos: {trust: pcp, pfc: [3]}\n";
    let e = diff(&host, &parse(rxe).expect("valid")).expect_err("rxe has no DCB");
    assert!(e.is_not_found(), "{e}");
    assert!(e.to_string().contains("roce[0].qos"), "{e}");
    assert!(e.to_string().contains("no DCB"), "{e}");
    // The model's rules, at parse time: DSCP entries without DSCP trust.
    let e = parse("roce:\n  - device: mlx5_0\n    port: 1\n    qos: {trust: pcp, pfc: [3], dscp: {\"26\": 3}}\n")
        .expect_err("the rules refuse it");
    assert!(e.to_string().contains("roce[0].qos"), "{e}");
    assert!(e.to_string().contains("trust dscp"), "{e}");
    // An unknown key is named.
    let e = parse("roce:\n  - device: mlx5_0\n    port: 1\n    qos: {trust: pcp, lossless: [3]}\n")
        .expect_err("unknown key");
    assert!(e.to_string().contains("lossless"), "{e}");
}

/// A PF with two VFs: VF 0 with GUIDs, VF 1 without.
fn vf_host() -> State {
    parse(
        "\
sriov-vfs:
  - {device: mlx5_1, vf: 0, node-guid: \"00:11:22:33:44:55:66:01\", port-guid: \"00:11:22:33:44:55:66:02\"}
  - {device: mlx5_1, vf: 1}
",
    )
    .expect("the host's state")
}

#[test]
fn vf_guids_are_set_in_any_form_and_undone_to_what_the_vf_had() {
    let host = vf_host();
    let want = "sriov-vfs:\n  - {device: mlx5_1, vf: 1, node-guid: \"0x0011223344556611\", port-guid: \"0011:2233:4455:6612\"}\n  - {device: mlx5_1, vf: 0, node-guid: \"00:11:22:33:44:55:66:03\", port-guid: \"00:11:22:33:44:55:66:03\"}\n";
    let c = diff(&host, &parse(want).expect("valid")).expect("a diff");
    let got: Vec<_> = c
        .iter()
        .map(|c| (c.path.as_str(), c.current.as_str(), &c.step, &c.undo))
        .collect();
    let set = |vf, n: &str, p: &str| {
        Step::Vf(VfStep::SetGuids {
            device: "mlx5_1".into(),
            vf,
            node_guid: n.into(),
            port_guid: p.into(),
        })
    };
    assert_eq!(
        got,
        [
            (
                "sriov-vfs[mlx5_1/1]",
                "",
                &set(1, "00:11:22:33:44:55:66:11", "00:11:22:33:44:55:66:12"),
                &Step::Vf(VfStep::ResetGuids {
                    device: "mlx5_1".into(),
                    vf: 1
                })
            ),
            (
                "sriov-vfs[mlx5_1/0]",
                "node-guid=00:11:22:33:44:55:66:01 port-guid=00:11:22:33:44:55:66:02",
                &set(0, "00:11:22:33:44:55:66:03", "00:11:22:33:44:55:66:03"),
                &set(0, "00:11:22:33:44:55:66:01", "00:11:22:33:44:55:66:02")
            ),
        ]
    );
    assert_eq!(c[0].step.area(), crate::state::Area::Adapter);
    // The GUIDs the VF has, in another form, or the VF alone: nothing to do.
    let same = "sriov-vfs:\n  - {device: mlx5_1, vf: 0, node-guid: \"0011:2233:4455:6601\", port-guid: \"0x0011223344556602\"}\n  - {device: mlx5_1, vf: 1}\n";
    assert_eq!(
        diff(&host, &parse(same).expect("valid")).expect("a diff"),
        []
    );
}

#[test]
fn bad_vf_entries_are_refused_with_their_path() {
    let host = vf_host();
    let e = diff(
        &host,
        &parse("sriov-vfs:\n  - {device: mlx5_1, vf: 2, node-guid: \"00:11:22:33:44:55:66:21\", port-guid: \"00:11:22:33:44:55:66:22\"}\n").expect("valid"),
    )
    .expect_err("VF 2 is not enabled");
    assert!(
        e.is_not_found() && e.to_string().contains("mlx5_1/2"),
        "{e}"
    );
    for (doc, says) in [
        ("sriov-vfs:\n  - {device: mlx5_1, vf: 0, node-guid: \"00:11:22:33:44:55:66:21\"}\n", "both node-guid and port-guid"),
        ("sriov-vfs:\n  - {device: mlx5_1, vf: 0, node-guid: \"0\", port-guid: \"00:11:22:33:44:55:66:22\"}\n", "sriov-vfs[0].node-guid"),
        ("sriov-vfs:\n  - {device: mlx5_1, vf: 0, node-guid: \"ff:ff:ff:ff:ff:ff:ff:ff\", port-guid: \"00:11:22:33:44:55:66:22\"}\n", "sriov-vfs[0].node-guid"),
        ("sriov-vfs:\n  - {device: mlx5_1, vf: 0, node-guid: \"00:11:22:33:44:55:66:zz\", port-guid: \"00:11:22:33:44:55:66:22\"}\n", "sriov-vfs[0].node-guid"),
        ("sriov-vfs:\n  - {device: mlx5_1, vf: 0}\n  - {device: mlx5_1, vf: 0}\n", "listed twice"),
        ("sriov-vfs:\n  - {device: mlx5_1, vf: 0, node-guid: \"00:11:22:33:44:55:66:21\", port-guid: \"00:11:22:33:44:55:66:22\"}\n  - {device: mlx5_1, vf: 1, node-guid: \"00:11:22:33:44:55:66:22\", port-guid: \"00:11:22:33:44:55:66:23\"}\n", "given to two VFs"),
        ("sriov-vfs:\n  - {device: \"a/b\", vf: 0}\n", "sriov-vfs[0].device"),
    ] {
        let e = parse(doc).expect_err(doc);
        assert!(e.to_string().contains(says), "{doc}: {e}");
    }
}
