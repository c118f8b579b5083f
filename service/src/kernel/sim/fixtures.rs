//! Simulated hosts: the hardware of the guide and of current clusters, the kernel lab's
//! veth pair, and generated large hosts for benchmarks. Formats and numbers follow the kernel
//! (see rdma-facts.md); soft devices are made by the same rules as `rdma link add`.

use super::model::{HostSpec, SimDevice, SimIpoib, SimKernel, SimNetdev, SimPciPlacement, SimVf};
use super::port::{ib_port, roce_port, SimPort, LINK_LOCAL};
use crate::model::{DeviceKind, Guid, IpoibMode, NodeType, SoftLinkType};

/// An address of a fixture's netdev.
fn addr(ip: std::net::IpAddr, prefix: u8) -> crate::model::NetdevAddress {
    crate::model::NetdevAddress { ip, prefix }
}

/// The IPv6 link-local address the kernel gives a netdev that goes up, from an interface
/// identifier (addrconf: EUI-64 of a MAC; for IPoIB, the port GUID with the U/L bit set).
fn link_local(interface_id: u64) -> crate::model::NetdevAddress {
    let ip = (u128::from(LINK_LOCAL) << 64) | u128::from(interface_id);
    addr(std::net::Ipv6Addr::from(ip).into(), 64)
}

/// A plain Ethernet interface, up with carrier (its ifindex is reassigned when plugged).
pub fn ethernet(name: &str, mac: [u8; 6]) -> SimNetdev {
    netdev(0, name, None, mac)
}

fn netdev(ifindex: u32, name: &str, kind: Option<&str>, mac: [u8; 6]) -> SimNetdev {
    SimNetdev {
        ifindex,
        name: name.into(),
        arphrd: 1,
        address: mac.to_vec(),
        mtu: 1500,
        up: true,
        carrier: true,
        link_kind: kind.map(str::to_string),
        peer: None,
        pci_address: None,
        ipoib: None,
        tx_bytes: 0,
        rx_bytes: 0,
        tx_packets: 0,
        addresses: Vec::new(),
        rx_packets: 0,
    }
}

fn loopback() -> SimNetdev {
    let mut lo = netdev(1, "lo", Some("loopback"), [0; 6]);
    lo.arphrd = 772;
    lo.mtu = 65536;
    lo
}

/// An IPoIB address: 4 bytes of flags and QPN, the subnet prefix, the port GUID.
fn ipoib_address(connected_capable: bool, qpn: u32, port_guid: u64) -> Vec<u8> {
    let mut a = Vec::with_capacity(20);
    let flags = if connected_capable { 0x80 } else { 0x00 };
    a.push(flags);
    a.extend_from_slice(&qpn.to_be_bytes()[1..]);
    a.extend_from_slice(&LINK_LOCAL.to_be_bytes());
    a.extend_from_slice(&port_guid.to_be_bytes());
    a
}

#[allow(clippy::too_many_arguments)]
fn ipoib_netdev(
    ifindex: u32,
    name: &str,
    pci: &str,
    port: u32,
    connected_capable: bool,
    qpn: u32,
    port_guid: u64,
    ib_mtu: u32,
) -> SimNetdev {
    SimNetdev {
        ifindex,
        name: name.into(),
        arphrd: 32,
        address: ipoib_address(connected_capable, qpn, port_guid),
        mtu: ib_mtu - 4,
        up: true,
        carrier: true,
        link_kind: None,
        peer: None,
        pci_address: Some(pci.into()),
        ipoib: Some(SimIpoib {
            pkey: 0xffff,
            mode: IpoibMode::Datagram,
            umcast: false,
            port,
            parent: None,
            legacy_files: true,
            ib_mtu,
        }),
        tx_bytes: 0,
        rx_bytes: 0,
        tx_packets: 0,
        addresses: vec![link_local(port_guid | 0x0200_0000_0000_0000)],
        rx_packets: 0,
    }
}

#[allow(clippy::too_many_arguments)]
fn hca(
    index: u32,
    name: &str,
    pci: &str,
    hca_type: &str,
    fw: &str,
    node_guid: u64,
    sys_image_guid: u64,
    protocol: &str,
    ports: Vec<SimPort>,
) -> SimDevice {
    SimDevice {
        index,
        name: name.into(),
        kind: DeviceKind::Hardware,
        node_type: NodeType::Ca,
        node_guid: Guid(node_guid),
        sys_image_guid: Guid(sys_image_guid),
        fw_ver: fw.into(),
        node_desc: format!("host01 {name}"),
        hca_type: Some(hca_type.into()),
        hw_rev: Some("0x0".into()),
        board_id: Some("MT_0000000223".into()),
        parent_netdev: None,
        pci_address: Some(pci.into()),
        placement: SimPciPlacement::default(),
        protocol: protocol.into(),
        cap_flags: 0x0000_0001_3d97_1c36,
        ports,
    }
}

/// The guide's two-port `mlx4_1`: port 1 InfiniBand (ACTIVE, LID 2, SM LID 2, LMC 1) with
/// IPoIB `ib0` (connected mode capable, 32-bit PMA counters), port 2 Ethernet (RoCE).
pub fn guide_mlx4(index: u32, first_ifindex: u32) -> (SimDevice, Vec<SimNetdev>) {
    let pci = "0000:04:00.0";
    let port1_guid = 0xf452_1403_0003_9381;
    let eth_mac = [0xf4, 0x52, 0x14, 0x03, 0x93, 0x82];
    let mut p1 = ib_port(1, port1_guid, "56 Gb/sec (4X FDR)", 2, 2, 1, 0x0251_486a);
    if let Some(pma) = p1.pma.as_mut() {
        // ConnectX-3 without extended counters: 32-bit, saturating.
        pma.extended = false;
    }
    p1.pkeys = vec![0xffff, 0x8001, 0, 0];
    // The subnet runs at 2048, as its ib0's datagram MTU of 2044 says.
    p1.active_mtu = 2048;
    let p2 = roce_port(2, eth_mac, "enp4s0d1", "40 Gb/sec (4X QDR)", None);
    let mut dev = hca(
        index,
        "mlx4_1",
        pci,
        "MT4099",
        "2.42.5000",
        0xf452_1403_0003_9380,
        0xf452_1403_0003_9383,
        "ib",
        vec![p1, p2],
    );
    dev.hw_rev = Some("1".into());
    dev.board_id = Some("MT_1090120019".into());
    let ib0 = ipoib_netdev(first_ifindex, "ib0", pci, 1, true, 0x48, port1_guid, 2048);
    let mut eth = netdev(first_ifindex + 1, "enp4s0d1", None, eth_mac);
    eth.pci_address = Some(pci.into());
    // What port 2's GIDs are made of (`roce_port`).
    eth.addresses = vec![link_local(Guid::from_mac_eui64(eth_mac).0)];
    (dev, vec![ib0, eth])
}

/// A ConnectX-6 (MT4123) on InfiniBand HDR with an enhanced-IPoIB parent (no connected mode)
/// and two P_Key children made over rtnetlink.
pub fn cx6_ib(
    index: u32,
    name: &str,
    pci: &str,
    guid: u64,
    first_ifindex: u32,
    ipoib_name: &str,
) -> (SimDevice, Vec<SimNetdev>) {
    let mut p1 = ib_port(1, guid, "200 Gb/sec (4X HDR)", 0x12, 0x1, 0, 0xa651_e848);
    p1.pkeys = vec![0xffff, 0x8002, 0x8003, 0x7fff];
    let mut dev = hca(
        index,
        name,
        pci,
        "MT4123",
        "20.31.1014",
        guid,
        guid,
        "ib",
        vec![p1],
    );
    // A dual-function card (its second function is the RoCE port of `mlx5_roce`).
    dev.placement.multifunction = true;
    let parent = ipoib_netdev(first_ifindex, ipoib_name, pci, 1, false, 0x1087, guid, 4096);
    let mut out = vec![parent.clone()];
    for (i, pkey) in [0x8002u16, 0x8003].into_iter().enumerate() {
        let mut child = parent.clone();
        child.ifindex = first_ifindex + 1 + i as u32;
        child.name = format!("{ipoib_name}.{pkey:04x}");
        child.link_kind = Some("ipoib".into());
        child.address[3] = child.address[3].wrapping_add(1 + i as u8);
        if let Some(ib) = child.ipoib.as_mut() {
            ib.pkey = pkey;
            ib.parent = Some(ipoib_name.into());
            ib.legacy_files = false;
        }
        out.push(child);
    }
    (dev, out)
}

/// An mlx5 RoCE port (ConnectX-6 Dx, 100 GbE) with v1 and v2 GIDs.
pub fn mlx5_roce(index: u32, ifindex: u32) -> (SimDevice, Vec<SimNetdev>) {
    let pci = "0000:3b:00.1";
    let mac = [0x0c, 0x42, 0xa1, 0x5e, 0x22, 0x91];
    let port = roce_port(
        1,
        mac,
        "enp59s0f1np1",
        "100 Gb/sec (4X EDR)",
        Some([10, 20, 0, 11]),
    );
    let guid = Guid::from_mac_eui64(mac).0;
    let mut dev = hca(
        index,
        "mlx5_1",
        pci,
        "MT4125",
        "22.36.1010",
        guid,
        guid,
        "roce",
        vec![port],
    );
    dev.node_desc = "host01 mlx5_1".into();
    dev.placement.multifunction = true;
    let mut eth = netdev(ifindex, "enp59s0f1np1", None, mac);
    eth.pci_address = Some(pci.into());
    eth.mtu = 9000;
    // What the port's GIDs are made of (`roce_port`).
    eth.addresses = vec![
        addr(std::net::Ipv4Addr::new(10, 20, 0, 11).into(), 24),
        link_local(guid),
    ];
    (dev, vec![eth])
}

/// The kernel lab's guest: `lo` and the veth pair the lab creates (`veth1` is registered
/// first, so it gets the lower ifindex), with fixed MACs. The lab loads `dummy` with
/// `numdummies=0`, so no `dummy0` shifts the indices.
pub fn lab_host(release: &str) -> HostSpec {
    let mut veth1 = netdev(2, "veth1", Some("veth"), [0x02, 0, 0, 0, 0, 0x02]);
    veth1.peer = Some("veth0".into());
    let mut veth0 = netdev(3, "veth0", Some("veth"), [0x02, 0, 0, 0, 0, 0x01]);
    veth0.peer = Some("veth1".into());
    HostSpec {
        kernel: SimKernel {
            release: release.into(),
            siw_available: false,
            rdma_cm_configfs: true,
            // Debian's 6.12 reports SYS MONITOR_MODE and sends REGISTER/UNREGISTER; 6.1 does not.
            monitor_mode: !release.starts_with("6.1."),
            // The lab's /init loads every module up front (there is no modprobe to autoload).
            rxe_loaded: true,
            netdev_live_rename: !release.starts_with("6.1."),
            // NAME_ASSIGN_TYPE came with 6.11.
            name_assign_type: !release.starts_with("6.1."),
        },
        devices: vec![],
        netdevs: vec![loopback(), veth1, veth0],
    }
}

/// The host `--simulate` shows: the guide's mlx4, a ConnectX-6 on InfiniBand with P_Key
/// children, an mlx5 RoCE port and an rxe over an Ethernet port; siw available.
pub fn demo_host() -> HostSpec {
    let (mut mlx4, mut nds) = guide_mlx4(0, 2);
    // The demo's opensm.service is inactive: the subnet manager is another node's (LID 1),
    // not this port's, whose LID the guide's SM LID would otherwise equal.
    if let Some(p) = mlx4.ports.first_mut() {
        p.sm_lid = 1;
    }
    let (cx6, n2) = cx6_ib(
        1,
        "mlx5_0",
        "0000:3b:00.0",
        0xb859_9f03_00d4_e62a,
        10,
        "ibp59s0f0",
    );
    let (roce, n3) = mlx5_roce(2, 20);
    nds.extend(n2);
    nds.extend(n3);
    let mut eth0 = netdev(30, "eth0", None, [0x52, 0x54, 0x00, 0x12, 0x34, 0x56]);
    eth0.pci_address = Some("0000:00:03.0".into());
    nds.push(eth0.clone());
    nds.insert(0, loopback());
    // An IPoIB interface with an address set by hand (`ip address add`), as on a node no
    // IP manager configures.
    if let Some(ib0) = nds.iter_mut().find(|n| n.name == "ib0") {
        ib0.addresses.insert(
            0,
            addr(std::net::Ipv4Addr::new(192, 168, 100, 11).into(), 24),
        );
    }
    let mut spec = HostSpec {
        kernel: SimKernel {
            release: "demo".into(),
            siw_available: true,
            rdma_cm_configfs: true,
            monitor_mode: false,
            rxe_loaded: true,
            netdev_live_rename: true,
            name_assign_type: true,
        },
        devices: vec![mlx4, cx6, roce],
        netdevs: nds,
    };
    spec.devices.push(super::rules::soft_device(
        3,
        "rxe0",
        SoftLinkType::Rxe,
        &eth0,
    ));
    spec
}

/// A host for device naming: every way rdma_rename names a device.
///
/// - `mlx5_0`: a ConnectX-7 on the motherboard (`0000:01:00.0`, single function, ACPI index
///   1), InfiniBand, IPoIB `ib0` (NAME_FALLBACK: `ibo1`; NAME_PCI: `ibp1s0`);
/// - `mlx5_1`: function 0 of a dual-function ConnectX-6 (`0000:3b:00.0`), InfiniBand, IPoIB
///   `ib1` (`ibp59s0f0`), and `mlx5_2`, its SR-IOV VF 1 at `0000:3b:00.3` (`ibp59s0f0v1`);
/// - `mlx5_3`: a sub-function (sfnum 88) of the BlueField at `0000:c1:00.0`, RoCE
///   (`rocep193s0f0S88`);
/// - `rxe0` over `eth0`, named by the user.
pub fn naming_host() -> HostSpec {
    let ib_hca = |index: u32, name: &str, pci: &str, guid: u64| {
        hca(
            index,
            name,
            pci,
            "MT4129",
            "28.39.1002",
            guid,
            guid,
            "ib",
            vec![ib_port(
                1,
                guid,
                "400 Gb/sec (4X NDR)",
                0x20 + index,
                1,
                0,
                0xa651_e848,
            )],
        )
    };
    let mut onboard = ib_hca(0, "mlx5_0", "0000:01:00.0", 0x946d_ae03_0012_3450);
    onboard.placement.acpi_index = Some("1\n".into());
    let mut pf = ib_hca(1, "mlx5_1", "0000:3b:00.0", 0xb859_9f03_00d4_e62a);
    pf.placement.multifunction = true;
    // Two VFs enabled: VF 1 (0000:3b:00.3) bound with its RDMA device, VF 0 not probed.
    pf.placement.sriov_numvfs = Some(2);
    let mut vf = ib_hca(2, "mlx5_2", "0000:3b:00.3", 0xb859_9f03_00d4_e62c);
    vf.hca_type = Some("MT4124".into());
    vf.placement.vf = Some(SimVf {
        pf: "0000:3b:00.0".into(),
        number: 1,
        pf_multifunction: true,
    });
    let sf_mac = [0x02, 0x25, 0x8d, 0x7a, 0x10, 0x58];
    let mut sf = hca(
        3,
        "mlx5_3",
        "0000:c1:00.0",
        "MT41686",
        "24.35.2000",
        Guid::from_mac_eui64(sf_mac).0,
        Guid::from_mac_eui64(sf_mac).0,
        "roce",
        vec![roce_port(
            1,
            sf_mac,
            "en3f0pf0sf88",
            "100 Gb/sec (4X EDR)",
            None,
        )],
    );
    sf.placement = SimPciPlacement {
        multifunction: true,
        sfnum: Some(88),
        ..SimPciPlacement::default()
    };
    let ib0 = ipoib_netdev(
        2,
        "ib0",
        "0000:01:00.0",
        1,
        false,
        0x1087,
        0x946d_ae03_0012_3450,
        4096,
    );
    let ib1 = ipoib_netdev(
        3,
        "ib1",
        "0000:3b:00.0",
        1,
        false,
        0x1088,
        0xb859_9f03_00d4_e62a,
        4096,
    );
    let mut sf_eth = netdev(4, "en3f0pf0sf88", None, sf_mac);
    // The path of its parent below sys/devices/pci: the SF's auxiliary device.
    sf_eth.pci_address = Some("0000:c1:00.0/mlx5_core.sf.88".into());
    let mut eth0 = netdev(5, "eth0", None, [0x52, 0x54, 0x00, 0x12, 0x34, 0x56]);
    eth0.pci_address = Some("0000:00:03.0".into());
    let rxe = super::rules::soft_device(4, "rxe0", SoftLinkType::Rxe, &eth0);
    HostSpec {
        kernel: SimKernel {
            release: "naming".into(),
            rxe_loaded: true,
            ..SimKernel::default()
        },
        devices: vec![onboard, pf, vf, sf, rxe],
        netdevs: vec![loopback(), ib0, ib1, sf_eth, eth0],
    }
}

/// The lab's scale host (`rdma-lab-scale`): `devices` dummy netdevs `dummy0`, ... (up, with
/// carrier) and an rxe device `rxe0`, ... over each, as `rdma link add rxeN type rxe netdev
/// dummyN` makes them: one RoCE port each, counted on its netdev. The GID tables are 16 long
/// (1024 on Linux 6.12): only the sysfs fallback lists them, which the daemon does not take
/// where libibverbs answers.
pub fn rxe_host(devices: u32) -> HostSpec {
    let mut spec = HostSpec {
        kernel: SimKernel {
            release: "rxe".into(),
            rxe_loaded: true,
            ..SimKernel::default()
        },
        devices: Vec::new(),
        netdevs: vec![loopback()],
    };
    for i in 0..devices {
        let [_, _, a, b] = i.to_be_bytes();
        let nd = netdev(
            2 + i,
            &format!("dummy{i}"),
            Some("dummy"),
            [0x02, 0x00, 0x00, 0x5a, a, b],
        );
        spec.devices.push(super::rules::soft_device(
            i,
            &format!("rxe{i}"),
            SoftLinkType::Rxe,
            &nd,
        ));
        spec.netdevs.push(nd);
    }
    spec
}

/// A generated host for benchmarks: `devices` ConnectX-6 HCAs with `ports` InfiniBand ports
/// each and `ipoib` IPoIB interfaces spread over them (parents first, then P_Key children).
pub fn large_host(devices: u32, ports: u32, ipoib: u32) -> HostSpec {
    let mut spec = HostSpec {
        kernel: SimKernel {
            release: "large".into(),
            ..SimKernel::default()
        },
        devices: Vec::new(),
        netdevs: vec![loopback()],
    };
    let mut ifindex = 2;
    let mut parents = Vec::new();
    for i in 0..devices {
        let pci = format!("0000:{:02x}:{:02x}.0", 0x10 + i / 32, i % 32);
        let base = 0xb859_9f03_0000_0000u64 | (u64::from(i) << 8);
        let port_list = (1..=ports)
            .map(|p| {
                ib_port(
                    p,
                    base | u64::from(p),
                    "200 Gb/sec (4X HDR)",
                    0x100 + i * 4 + p,
                    1,
                    0,
                    0xa651_e848,
                )
            })
            .collect();
        spec.devices.push(hca(
            i,
            &format!("mlx5_{i}"),
            &pci,
            "MT4123",
            "20.31.1014",
            base,
            base,
            "ib",
            port_list,
        ));
        for p in 1..=ports {
            if (parents.len() as u32) < ipoib.min(devices * ports) {
                let name = format!("ib{i}p{p}");
                spec.netdevs.push(ipoib_netdev(
                    ifindex,
                    &name,
                    &pci,
                    p,
                    false,
                    0x1000 + ifindex,
                    base | u64::from(p),
                    4096,
                ));
                parents.push(name);
                ifindex += 1;
            }
        }
    }
    let mut made = parents.len() as u32;
    let mut pkey = 0x8002u16;
    'outer: while made < ipoib && !parents.is_empty() {
        for parent in parents.clone() {
            if made >= ipoib {
                break 'outer;
            }
            let Some(p) = spec.netdevs.iter().find(|n| n.name == parent).cloned() else {
                break 'outer;
            };
            let mut child = p;
            child.ifindex = ifindex;
            child.name = format!("{parent}.{pkey:04x}");
            child.link_kind = Some("ipoib".into());
            if let Some(ib) = child.ipoib.as_mut() {
                ib.pkey = pkey;
                ib.parent = Some(parent.clone());
                ib.legacy_files = false;
            }
            spec.netdevs.push(child);
            ifindex += 1;
            made += 1;
        }
        pkey += 1;
    }
    spec
}

/// The files of host setup as a freshly installed host has them: rdma-core's
/// `/etc/rdma/modules/{rdma,infiniband,roce}.conf` (`# rds_rdma` disabled, `xprtrdma` and
/// `svcrdma` enabled), Debian 12's `/etc/security/limits.conf` (no memlock line), Debian
/// 12's `/etc/nfs.conf` (`# rdma=n`) and an empty `/etc/nfs.conf.d/`. Files already in the
/// tree are kept, so a daemon restarted on the same tree sees its own edits.
pub const HOST_SETUP_FILES: &[(&str, &str)] = &[
    (
        "/etc/rdma/modules/rdma.conf",
        include_str!("../../../model/src/hostconf/testdata/host_setup/rdma-core-rdma.conf"),
    ),
    (
        "/etc/rdma/modules/infiniband.conf",
        include_str!("../../../model/src/hostconf/testdata/host_setup/rdma-core-infiniband.conf"),
    ),
    (
        "/etc/rdma/modules/roce.conf",
        include_str!("../../../model/src/hostconf/testdata/host_setup/rdma-core-roce.conf"),
    ),
    (
        "/etc/security/limits.conf",
        include_str!("../../../model/src/hostconf/testdata/host_setup/debian12-limits.conf"),
    ),
    (
        "/etc/nfs.conf",
        include_str!("../../../model/src/hostconf/testdata/host_setup/debian12-nfs.conf"),
    ),
];

/// The modules a host with InfiniBand hardware has loaded once rdma-core's units ran: those
/// enabled in the files above and their dependencies (`ib_core`, `rdma_cm`, ...), under the
/// names `/sys/module` shows: `xprtrdma` and `svcrdma` are aliases of `rpcrdma` (one module
/// since Linux 4.2), so loading either shows `rpcrdma`. `rds_rdma` is not loaded.
pub const HOST_SETUP_LOADED_MODULES: &[&str] = &[
    "ib_core",
    "ib_cm",
    "iw_cm",
    "ib_uverbs",
    "ib_umad",
    "ib_ipoib",
    "ib_iser",
    "rdma_ucm",
    "rpcrdma",
    "mlx4_ib",
    "mlx5_ib",
];

/// Writes [`HOST_SETUP_FILES`] (those not present yet), makes `/etc/nfs.conf.d/` and loads
/// [`HOST_SETUP_LOADED_MODULES`] in `sim`.
pub fn install_host_setup(sim: &super::SimHost) -> Result<(), crate::kernel::HostError> {
    let io = |path: &std::path::Path, e: std::io::Error| {
        crate::kernel::HostError::from_io(crate::kernel::Op::File(path.display().to_string()), &e)
    };
    for (path, text) in HOST_SETUP_FILES {
        let p = sim.root().join(path.trim_start_matches('/'));
        if p.exists() {
            continue;
        }
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io(&p, e))?;
        }
        std::fs::write(&p, text).map_err(|e| io(&p, e))?;
    }
    let d = sim.root().join("etc/nfs.conf.d");
    std::fs::create_dir_all(&d).map_err(|e| io(&d, e))?;
    for m in HOST_SETUP_LOADED_MODULES {
        sim.set_module_loaded(m, true)?;
    }
    Ok(())
}
