//! The kernel's rules and error codes for every simulated operation, in the order the kernel
//! checks them (drivers/infiniband/core/nldev.c, sw/rxe/rxe.c, ulp/ipoib, net/core/dev.c,
//! core/cma_configfs.c). The lab scenario suite compares these against a real kernel.

use super::model::{SimDevice, SimIpoib, SimNetdev};
use super::port::SimPort;
use super::port::{rxe_port, rxe_port_state};
use super::SimState;
use crate::kernel::{HostError, NetdevChange, NewIpoibChild, NewLink, NlDevice, NlPort, Op};
use crate::model::netdev::{ARPHRD_INFINIBAND, IPOIB_FLAGS_RC};
use crate::model::{
    DeviceKind, Errno, GidType, Guid, IpoibMode, LinkLayer, NodeType, SoftLinkType,
};
use crate::naming::rdma_rename::NAME_ASSIGN_TYPE_USER;

/// IPOIB_CM_MTU: the largest MTU of connected mode.
pub const IPOIB_CM_MAX_MTU: u32 = 65520;
/// ETH_MIN_MTU.
const MIN_MTU: u32 = 68;
/// IPOIB_ENCAP_LEN: `ipoib_change_mtu` refuses datagram MTUs below ETH_MIN_MTU plus this.
const IPOIB_ENCAP_LEN: u32 = 4;
/// ETH_MAX_MTU (veth, dummy).
const ETH_MAX_MTU: u32 = 65535;

pub(super) fn nl(op: Op, errno: Errno) -> HostError {
    HostError::kernel(op, errno)
}

pub fn find_netdev<'a>(st: &'a SimState, name: &str) -> Result<&'a SimNetdev, HostError> {
    st.spec
        .netdevs
        .iter()
        .find(|n| n.name == name)
        .ok_or_else(|| HostError::NotFound(format!("network interface {name}")))
}

// ---- RDMA netlink ----------------------------------------------------------------------------

pub fn nl_devices(st: &SimState) -> Vec<NlDevice> {
    let mut v: Vec<NlDevice> = st
        .spec
        .devices
        .iter()
        .map(|d| NlDevice {
            index: d.index,
            name: d.name.clone(),
            node_type: Some(d.node_type.number() as u8),
            node_guid: Some(d.node_guid),
            sys_image_guid: Some(d.sys_image_guid),
            // nldev puts FW_VERSION only when the string is non-empty.
            fw_version: (!d.fw_ver.is_empty()).then(|| d.fw_ver.clone()),
            cap_flags: Some(d.cap_flags),
            protocol: Some(d.protocol.clone()),
            port_count: Some(d.ports.len() as u32),
            // ib_mark_name_assigned_by_user: rxe and siw (rdma link add names them).
            name_assign_type: st.spec.kernel.name_assign_type.then_some(match d.kind {
                DeviceKind::Rxe | DeviceKind::Siw => NAME_ASSIGN_TYPE_USER,
                _ => 0,
            }),
        })
        .collect();
    v.sort_by_key(|d| d.index);
    v
}

pub fn nl_ports(st: &SimState) -> Vec<NlPort> {
    let mut devs: Vec<&SimDevice> = st.spec.devices.iter().collect();
    devs.sort_by_key(|d| d.index);
    let mut out = Vec::new();
    for d in devs {
        for p in &d.ports {
            let ib = p.link_layer == LinkLayer::InfiniBand;
            let netdev = port_netdev(st, d, p);
            out.push(NlPort {
                dev_index: d.index,
                dev_name: d.name.clone(),
                port: p.number,
                state: Some(p.state.number() as u8),
                phys_state: Some(p.phys_state.number() as u8),
                // fill_port_info puts LID, SM LID, LMC, subnet prefix only for IB ports.
                lid: ib.then_some(p.lid),
                sm_lid: ib.then_some(p.sm_lid),
                lmc: ib.then_some(p.lmc),
                subnet_prefix: ib.then_some(0xfe80_0000_0000_0000),
                cap_flags: ib.then_some(u64::from(p.cap_mask)),
                netdev_index: netdev.map(|n| n.ifindex),
                netdev_name: netdev.map(|n| n.name.clone()),
            });
        }
    }
    out
}

/// `ib_device_get_netdev`: the soft device's netdev, or a RoCE port's Ethernet netdev.
fn port_netdev<'a>(st: &'a SimState, d: &SimDevice, p: &SimPort) -> Option<&'a SimNetdev> {
    if let Some(parent) = &d.parent_netdev {
        return st.spec.netdevs.iter().find(|n| &n.name == parent);
    }
    if p.link_layer != LinkLayer::Ethernet {
        return None;
    }
    let ndev = p
        .gids
        .iter()
        .find(|g| g.index == 0)
        .and_then(|g| g.ndev.clone())?;
    st.spec.netdevs.iter().find(|n| n.name == ndev)
}

pub fn nl_port_stats(
    st: &SimState,
    dev_index: u32,
    port: u32,
) -> Result<Vec<(String, u64)>, HostError> {
    let d = st
        .spec
        .devices
        .iter()
        .find(|d| d.index == dev_index)
        .ok_or_else(|| nl(Op::NlStatGet, Errno::EINVAL))?;
    let p = d
        .ports
        .iter()
        .find(|p| p.number == port)
        .ok_or_else(|| nl(Op::NlStatGet, Errno::EINVAL))?;
    if p.hw_counters.is_empty() {
        return Err(nl(Op::NlStatGet, Errno::EOPNOTSUPP));
    }
    Ok(p.hw_counters.clone())
}

/// RDMA_NLDEV_CMD_NEWLINK, then the link type's `newlink`.
pub fn new_link(st: &mut SimState, link: &NewLink) -> Result<SimDevice, HostError> {
    let err = |e| nl(Op::NlNewLink, e);
    // The same checks the netlink client makes before sending anything.
    crate::kernel::nldev::validate_new_link(link)?;
    if link.name.is_empty() || link.name.contains('%') {
        return Err(err(Errno::EINVAL));
    }
    let nd = st
        .spec
        .netdevs
        .iter()
        .find(|n| n.name == link.netdev)
        .ok_or_else(|| err(Errno::ENODEV))?
        .clone();
    match link.kind {
        SoftLinkType::Siw if !st.spec.kernel.siw_available => return Err(err(Errno::EINVAL)),
        SoftLinkType::Rxe => {
            st.spec.kernel.rxe_loaded = true;
            if nd.link_kind.as_deref() == Some("vlan") {
                return Err(err(Errno::EPERM));
            }
        }
        SoftLinkType::Siw => {}
    }
    let kind = match link.kind {
        SoftLinkType::Rxe => DeviceKind::Rxe,
        SoftLinkType::Siw => DeviceKind::Siw,
    };
    if st
        .spec
        .devices
        .iter()
        .any(|d| d.kind == kind && d.parent_netdev.as_deref() == Some(&nd.name))
    {
        return Err(err(Errno::EEXIST));
    }
    // ib_register_device -> assign_name: a name in use is ENFILE (seen on 6.1 and 6.12).
    if st.spec.devices.iter().any(|d| d.name == link.name) {
        return Err(err(Errno::ENFILE));
    }
    let mut dev = soft_device(st.next_dev_index, &link.name, link.kind, &nd);
    if let (SoftLinkType::Rxe, Some(mbps)) = (link.kind, hca_netdev_speed_mbps(st, &nd.name)) {
        if let Some(p) = dev.ports.first_mut() {
            p.rate = eth_rate(mbps).to_string();
        }
    }
    st.next_dev_index += 1;
    st.spec.devices.push(dev.clone());
    Ok(dev)
}

/// The speed in Mb/s that ethtool gives for `netdev` when it is the netdev of an HCA's RoCE
/// port: that port's link rate. Other netdevs (veth, the demo's `eth0`) keep the 10 Gb/s of
/// a veth that [`soft_device`] gives.
fn hca_netdev_speed_mbps(st: &SimState, netdev: &str) -> Option<u32> {
    st.spec
        .devices
        .iter()
        .filter(|d| d.parent_netdev.is_none())
        .flat_map(|d| d.ports.iter().map(move |p| (d, p)))
        .find(|(d, p)| port_netdev(st, d, p).is_some_and(|n| n.name == netdev))
        .and_then(|(_, p)| p.rate.split_whitespace().next()?.parse::<f64>().ok())
        .map(|gbps| (gbps * 1000.0) as u32)
}

/// The rate rxe reports over a netdev of `mbps`: `ib_get_eth_speed`'s mapping of an
/// ethtool speed without a lane count to a width and speed (drivers/infiniband/core/verbs.c),
/// as sysfs's `rate` prints it.
pub fn eth_rate(mbps: u32) -> &'static str {
    match mbps {
        0..=1000 => "2.5 Gb/sec (1X SDR)",
        1001..=10000 => "10 Gb/sec (1X FDR10)",
        10001..=20000 => "20 Gb/sec (4X DDR)",
        20001..=25000 => "25 Gb/sec (1X EDR)",
        25001..=40000 => "40 Gb/sec (4X FDR10)",
        _ => "100 Gb/sec (4X EDR)",
    }
}

/// The device `rdma link add NAME type KIND netdev ND` registers: node GUID and GID 0 from the
/// netdev's MAC, one port whose state follows the netdev.
pub fn soft_device(index: u32, name: &str, kind: SoftLinkType, nd: &SimNetdev) -> SimDevice {
    let guid = nd.mac().map(Guid::from_mac_eui64).unwrap_or_default();
    let mut port = rxe_port(&nd.for_rxe());
    let (dev_kind, node_type, protocol, node_desc) = match kind {
        SoftLinkType::Rxe => (DeviceKind::Rxe, NodeType::Ca, "roce", "rxe"),
        SoftLinkType::Siw => {
            // Not a RoCE port: rdma_cm's mask for it is the IB type alone, so configfs
            // accepts only "IB/RoCE v1" (roce_gid_type_mask_support).
            port.roce_types = vec![GidType::IbRoceV1];
            port.hw_counters = vec![];
            port.pkeys = vec![];
            (DeviceKind::Siw, NodeType::Rnic, "iw", "siw")
        }
    };
    SimDevice {
        index,
        name: name.to_string(),
        kind: dev_kind,
        node_type,
        node_guid: guid,
        sys_image_guid: guid,
        fw_ver: String::new(),
        node_desc: node_desc.into(),
        hca_type: None,
        hw_rev: None,
        board_id: None,
        parent_netdev: Some(nd.name.clone()),
        pci_address: None,
        placement: Default::default(),
        protocol: protocol.into(),
        cap_flags: 0x0000_0000_0ffe_1f2f,
        ports: vec![port],
    }
}

/// RDMA_NLDEV_CMD_DELLINK: only devices that allow user unregistration (rxe, siw).
pub fn del_link_check(st: &SimState, dev_index: u32) -> Result<String, HostError> {
    let d = st
        .spec
        .devices
        .iter()
        .find(|d| d.index == dev_index)
        .ok_or_else(|| nl(Op::NlDelLink, Errno::EINVAL))?;
    match d.kind {
        DeviceKind::Rxe | DeviceKind::Siw => Ok(d.name.clone()),
        _ => Err(nl(Op::NlDelLink, Errno::EINVAL)),
    }
}

/// RDMA_NLDEV_CMD_SET with a name: `ib_device_rename`. Returns the old name, or None when the
/// name is unchanged (the kernel returns success without doing anything).
pub fn rename_device(
    st: &mut SimState,
    dev_index: u32,
    new_name: &str,
) -> Result<Option<String>, HostError> {
    let err = |e| nl(Op::NlSet, e);
    crate::kernel::nldev::validate_dev_name(new_name)?;
    if !st.spec.devices.iter().any(|d| d.index == dev_index) {
        return Err(err(Errno::EINVAL));
    }
    if new_name.is_empty() || new_name.contains('/') {
        return Err(err(Errno::EINVAL));
    }
    let d = st
        .spec
        .devices
        .iter()
        .find(|d| d.index == dev_index)
        .ok_or_else(|| err(Errno::EINVAL))?;
    if d.name == new_name {
        return Ok(None);
    }
    if st.spec.devices.iter().any(|d| d.name == new_name) {
        return Err(err(Errno::EEXIST));
    }
    let d = st
        .spec
        .devices
        .iter_mut()
        .find(|d| d.index == dev_index)
        .ok_or_else(|| err(Errno::EINVAL))?;
    Ok(Some(std::mem::replace(&mut d.name, new_name.to_string())))
}

// ---- rtnetlink -------------------------------------------------------------------------------

fn netdev_name_ok(name: &str) -> bool {
    // dev_valid_name
    !name.is_empty()
        && name.len() < 16
        && name != "."
        && name != ".."
        && !name
            .chars()
            .any(|c| c == '/' || c == ':' || c.is_whitespace())
}

/// RTM_NEWLINK kind ipoib, in the kernel's order: `__rtnl_newlink` answers EEXIST for a taken
/// name first (the request carries NLM_F_EXCL), then `ipoib_new_child_link` checks the parent
/// (ENODEV unless InfiniBand, EINVAL for a child), `__ipoib_vlan_add` the P_Key (0 and 0x8000
/// EINVAL), `register_netdevice` the name (EINVAL), and last `ipoib_changelink` the mode
/// (EINVAL without IPOIB_FLAGS_RC; the child is unregistered again). Duplicate P_Keys are
/// allowed for rtnetlink children (`is_child_unique` checks only legacy ones).
pub fn new_ipoib_child(st: &mut SimState, c: &NewIpoibChild) -> Result<SimNetdev, HostError> {
    let err = |e| nl(Op::Rtnl("newlink"), e);
    // The client resolves the parent's name to its ifindex before sending anything.
    let parent = find_netdev(st, &c.parent)?.clone();
    if st.spec.netdevs.iter().any(|n| n.name == c.name) {
        return Err(err(Errno::EEXIST));
    }
    let Some(pib) = parent
        .ipoib
        .as_ref()
        .filter(|_| parent.arphrd == ARPHRD_INFINIBAND)
    else {
        return Err(err(Errno::ENODEV));
    };
    if pib.parent.is_some() {
        return Err(err(Errno::EINVAL));
    }
    if c.pkey == 0 || c.pkey == 0x8000 {
        return Err(err(Errno::EINVAL));
    }
    if !netdev_name_ok(&c.name) {
        return Err(err(Errno::EINVAL));
    }
    let mode = c.mode.unwrap_or(IpoibMode::Datagram);
    if mode == IpoibMode::Connected && !supports_connected(&parent) {
        return Err(err(Errno::EINVAL));
    }
    let ifindex = st.next_ifindex;
    st.next_ifindex += 1;
    let mut address = parent.address.clone();
    if address.len() == 20 {
        // A child has its own UD QP: the QPN bytes differ from the parent's.
        address[3] = address[3].wrapping_add((ifindex & 0xff) as u8);
    }
    let datagram_mtu = pib.ib_mtu.saturating_sub(4);
    let nd = SimNetdev {
        ifindex,
        name: c.name.clone(),
        arphrd: ARPHRD_INFINIBAND,
        address,
        mtu: if mode == IpoibMode::Connected {
            IPOIB_CM_MAX_MTU
        } else {
            datagram_mtu.min(parent.mtu)
        },
        up: false,
        // IPoIB joins the broadcast group (and turns carrier on) only with a P_Key its port's
        // table has: ipoib_pkey_dev_check_presence, ib_find_pkey by partition.
        carrier: parent.carrier
            && port_has_partition(st, parent.pci_address.as_deref(), pib.port, c.pkey),
        link_kind: Some("ipoib".into()),
        peer: None,
        pci_address: parent.pci_address.clone(),
        ipoib: Some(SimIpoib {
            pkey: c.pkey | 0x8000,
            mode,
            umcast: c.umcast.unwrap_or(false),
            port: pib.port,
            parent: Some(parent.name.clone()),
            legacy_files: false,
            ib_mtu: pib.ib_mtu,
        }),
        tx_bytes: 0,
        rx_bytes: 0,
        tx_packets: 0,
        addresses: Vec::new(),
        rx_packets: 0,
    };
    st.spec.netdevs.push(nd.clone());
    Ok(nd)
}

fn supports_connected(nd: &SimNetdev) -> bool {
    nd.address.first().is_some_and(|b| b & IPOIB_FLAGS_RC != 0)
}

/// Applies a change as the kernel does: the IPoIB link data (mode, umcast) first, then MTU,
/// then up/down; a failing step leaves the earlier ones applied. Returns the RDMA devices
/// whose ports changed (soft devices over the netdev or its veth peer).
pub fn change_netdev(
    st: &mut SimState,
    name: &str,
    ch: &NetdevChange,
) -> Result<Vec<String>, HostError> {
    let err = |e| nl(Op::Rtnl("setlink"), e);
    let idx = st
        .spec
        .netdevs
        .iter()
        .position(|n| n.name == name)
        .ok_or_else(|| HostError::NotFound(format!("network interface {name}")))?;
    if ch.ipoib_mode.is_some() || ch.ipoib_umcast.is_some() {
        let nd = &mut st.spec.netdevs[idx];
        let connected_ok = supports_connected(nd);
        let Some(ib) = nd.ipoib.as_mut() else {
            return Err(err(Errno::EOPNOTSUPP));
        };
        if let Some(mode) = ch.ipoib_mode {
            if mode == IpoibMode::Connected && !connected_ok {
                return Err(err(Errno::EINVAL));
            }
            if mode != ib.mode {
                ib.mode = mode;
                // ipoib_set_mode resizes the MTU to the new mode's limit.
                nd.mtu = match mode {
                    IpoibMode::Connected => IPOIB_CM_MAX_MTU,
                    IpoibMode::Datagram => nd.mtu.min(ib.ib_mtu.saturating_sub(4)),
                };
            }
        }
        if let Some(u) = ch.ipoib_umcast {
            if let Some(ib) = nd.ipoib.as_mut() {
                ib.umcast = u;
            }
        }
    }
    if let Some(mtu) = ch.mtu {
        let nd = &mut st.spec.netdevs[idx];
        // ipoib_change_mtu: connected mode only caps at the CM MTU (an IPoIB netdev's min_mtu
        // is 0: ipoib_setup_common does not call ether_setup); datagram mode wants
        // ETH_MIN_MTU + IPOIB_ENCAP_LEN up to the port's IB MTU minus IPOIB_ENCAP_LEN.
        let (min, max) = match &nd.ipoib {
            Some(ib) if ib.mode == IpoibMode::Connected => (0, IPOIB_CM_MAX_MTU),
            Some(ib) => (
                MIN_MTU + IPOIB_ENCAP_LEN,
                ib.ib_mtu.saturating_sub(IPOIB_ENCAP_LEN),
            ),
            None => (MIN_MTU, ETH_MAX_MTU),
        };
        if !(min..=max).contains(&mtu) {
            return Err(err(Errno::EINVAL));
        }
        nd.mtu = mtu;
    }
    let mut touched = Vec::new();
    if let Some(up) = ch.up {
        st.spec.netdevs[idx].up = up;
        let peer = st.spec.netdevs[idx].peer.clone();
        refresh_carrier(st, name);
        if let Some(p) = peer {
            refresh_carrier(st, &p);
        }
        let names: Vec<String> = std::iter::once(name.to_string())
            .chain(st.spec.netdevs[idx].peer.clone())
            .collect();
        for n in names {
            touched.extend(refresh_soft_ports(st, &n));
        }
    }
    Ok(touched)
}

/// Whether the port `port` of the device at `pci` has the partition of `pkey` in its P_Key
/// table (either membership, as `ib_find_pkey` matches the low 15 bits).
fn port_has_partition(st: &SimState, pci: Option<&str>, port: u32, pkey: u16) -> bool {
    st.spec
        .devices
        .iter()
        .filter(|d| d.pci_address.is_some() && d.pci_address.as_deref() == pci)
        .flat_map(|d| d.ports.iter().filter(|p| p.number == port))
        .any(|p| p.pkeys.iter().any(|k| *k & 0x7fff == pkey & 0x7fff))
}

/// veth has carrier only when both ends are up; other netdevs follow their own state.
fn refresh_carrier(st: &mut SimState, name: &str) {
    let peer_up = st
        .spec
        .netdevs
        .iter()
        .find(|n| n.name == name)
        .and_then(|n| n.peer.clone())
        .and_then(|p| st.spec.netdevs.iter().find(|n| n.name == p).map(|n| n.up));
    if let Some(n) = st.spec.netdevs.iter_mut().find(|n| n.name == name) {
        if n.link_kind.as_deref() == Some("veth") {
            n.carrier = n.up && peer_up.unwrap_or(false);
        }
    }
}

fn refresh_soft_ports(st: &mut SimState, netdev: &str) -> Vec<String> {
    let Some(nd) = st.spec.netdevs.iter().find(|n| n.name == netdev).cloned() else {
        return Vec::new();
    };
    let mut touched = Vec::new();
    for d in st
        .spec
        .devices
        .iter_mut()
        .filter(|d| d.parent_netdev.as_deref() == Some(netdev))
    {
        let (s, p) = rxe_port_state(nd.up, nd.carrier);
        for port in &mut d.ports {
            port.state = s;
            port.phys_state = p;
        }
        touched.push(d.name.clone());
    }
    touched
}

/// `dev_change_name`: the name free (EEXIST) and valid (EINVAL); before Linux 6.2 the link
/// must also be down (EBUSY). Soft devices and GIDs follow the new name. Returns the RDMA devices touched.
pub fn rename_netdev(st: &mut SimState, old: &str, new: &str) -> Result<Vec<String>, HostError> {
    let err = |e| nl(Op::Rtnl("setlink"), e);
    let nd = find_netdev(st, old)?;
    if old == new {
        return Ok(Vec::new());
    }
    if !netdev_name_ok(new) {
        return Err(err(Errno::EINVAL));
    }
    if nd.up && !st.spec.kernel.netdev_live_rename {
        return Err(err(Errno::EBUSY));
    }
    if st.spec.netdevs.iter().any(|n| n.name == new) {
        return Err(err(Errno::EEXIST));
    }
    for n in &mut st.spec.netdevs {
        if n.name == old {
            n.name = new.to_string();
        }
        if n.peer.as_deref() == Some(old) {
            n.peer = Some(new.to_string());
        }
        if let Some(ib) = n.ipoib.as_mut() {
            if ib.parent.as_deref() == Some(old) {
                ib.parent = Some(new.to_string());
            }
        }
    }
    let mut touched = Vec::new();
    for d in &mut st.spec.devices {
        let mut hit = false;
        if d.parent_netdev.as_deref() == Some(old) {
            d.parent_netdev = Some(new.to_string());
            hit = true;
        }
        for g in d.ports.iter_mut().flat_map(|p| p.gids.iter_mut()) {
            if g.ndev.as_deref() == Some(old) {
                g.ndev = Some(new.to_string());
                hit = true;
            }
        }
        if hit {
            touched.push(d.name.clone());
        }
    }
    Ok(touched)
}

/// RTM_DELLINK. A veth takes its peer with it; soft RDMA devices over a removed netdev are
/// unregistered (NETDEV_UNREGISTER). A netdev without rtnl_link_ops (a hardware function's)
/// is EOPNOTSUPP. An IPoIB parent has the ipoib link ops (`ipoib_add_port` sets them), whose
/// `ipoib_del_child_link` returns without doing anything when there is no parent: the
/// request succeeds and the parent stays. Returns the removed netdevs and the soft devices
/// to remove.
pub fn delete_netdev(
    st: &mut SimState,
    name: &str,
) -> Result<(Vec<SimNetdev>, Vec<String>), HostError> {
    let nd = find_netdev(st, name)?.clone();
    if nd.ipoib.as_ref().is_some_and(|ib| ib.parent.is_none()) {
        return Ok((Vec::new(), Vec::new()));
    }
    if nd.link_kind.is_none() {
        return Err(nl(Op::Rtnl("dellink"), Errno::EOPNOTSUPP));
    }
    let names: Vec<String> = std::iter::once(nd.name.clone())
        .chain(nd.peer.clone())
        .collect();
    let gone: Vec<SimNetdev> = st
        .spec
        .netdevs
        .iter()
        .filter(|n| names.contains(&n.name))
        .cloned()
        .collect();
    st.spec.netdevs.retain(|n| !names.contains(&n.name));
    let soft = st
        .spec
        .devices
        .iter()
        .filter(|d| d.parent_netdev.as_ref().is_some_and(|p| names.contains(p)))
        .map(|d| d.name.clone())
        .collect();
    Ok((gone, soft))
}

#[cfg(test)]
mod tests {
    use crate::kernel::sim::port::rxe_active_mtu;

    /// rxe's active MTU for its netdev's (rdma-facts: 1500 gives 1024, 4096 needs 4176).
    #[test]
    fn rxe_takes_its_header_off_the_netdev_mtu() {
        assert_eq!(rxe_active_mtu(1500), 1024);
        assert_eq!(rxe_active_mtu(4175), 2048);
        assert_eq!(rxe_active_mtu(4176), 4096);
        assert_eq!(rxe_active_mtu(9000), 4096);
        assert_eq!(rxe_active_mtu(68), 256);
    }
}
