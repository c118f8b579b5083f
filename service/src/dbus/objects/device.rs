//! `org.rdmamanager.RdmaManager1.Device`: a device's properties, what they show of the
//! engine's state, and its methods.

use std::collections::HashMap;
use std::sync::Arc;

use rdma_manager_dbus::types::VfGuid;
use zbus::zvariant::{OwnedObjectPath, Value};

use crate::config::Desired;
use crate::dbus::object_paths::ObjectPaths;
use crate::dbus::Context;
use crate::engine::DeviceState;
use crate::model::DeviceKind;

use super::{Cell, Unreadable};

bus_object! {
    /// A device's properties.
    view DeviceView;
    /// `org.rdmamanager.RdmaManager1.Device` at `Device/<index>`.
    object DeviceObject;
    interface "org.rdmamanager.RdmaManager1.Device";
    properties {
        /// Kernel device index: stable across renames; the object path ends with it.
        index as "Index": u32,
        /// Kernel name (mlx5_0, rxe0, ...); changes when the device is renamed.
        name as "Name": String,
        /// hardware, rxe (Soft-RoCE), siw (Soft-iWARP) or virtual.
        kind as "Kind": String,
        /// Node type as sysfs prints it: CA, RNIC, switch, router, ...
        node_type as "NodeType": String,
        /// Protocol of the device as RDMA netlink reports it: ib, roce, iw, opa; empty if not reported.
        protocol as "Protocol": String,
        /// Node GUID as ibstat prints it (0x followed by 16 hex digits).
        node_guid as "NodeGuid": String,
        /// System image GUID, as ibstat prints it.
        sys_image_guid as "SysImageGuid": String,
        /// Firmware version (fw_ver); empty for soft devices.
        fw_version as "FwVersion": String,
        /// HCA type (hca_type), e.g. MT4123; empty when the driver has none.
        hca_type as "HcaType": String,
        /// Hardware revision (hw_rev).
        hw_rev as "HwRev": String,
        /// Board id (board_id), e.g. MT_0000000223.
        board_id as "BoardId": String,
        /// Node description sent to the subnet manager (node_desc).
        node_desc as "NodeDesc": String,
        /// PCI address (or auxiliary device) of the hardware; empty for soft devices.
        pci_address as "PciAddress": String,
        /// The network interface a soft device (rxe, siw) runs over; empty otherwise.
        parent_netdev as "ParentNetdev": String,
        /// Network interfaces of the same PCI function (IPoIB or Ethernet), or the parent of a soft device.
        netdevs as "Netdevs": Vec<String>,
        /// The port objects, in port order.
        ports as "Ports": Vec<OwnedObjectPath>,
        /// Attributes the kernel did not give, with the reason (missing, read failed: EINVAL, malformed ...); their properties show empty or zero.
        unreadable as "Unreadable": HashMap<String, String>,
        /// The SR-IOV VFs of an InfiniBand PF, by VF index: (vf, PCI address, node GUID and port GUID the PF's driver holds, node GUID and port GUID remembered in vf-guids.toml), GUIDs as `ip link` writes them, empty when none; a remembered VF that is not enabled has an empty PCI address. Empty for any other device.
        vf_guids as "VfGuids": Vec<VfGuid>,
    }
    methods {
        /// Renames the device now, as `rdma dev set NAME name NEW` does; the kernel forgets it when the device is added again (SetRdmaFixedName persists a name).
        op rename(new_name: &str) -> () as ManageNaming = |e, v| e.rename_device(v.index, new_name).await;
        /// Sets the node and port GUID of SR-IOV VF `vf` of this PF, as `ip link set PF vf VF node_guid G port_guid G` does, rebinds the VF to its driver so that it takes them, reads them back and remembers them (/etc/rdma-manager/vf-guids.toml, by the PF's node GUID and the VF index), to set them again whenever the VFs are created. GUIDs as `ip link` (00:11:22:33:44:55:66:77) or sysfs (0011:2233:4455:6677) write them; zero, all-ones and a GUID another device, port or VF of the host has or is remembered with are refused (InvalidArgument, AlreadyExists), as is a VF index the PF has not enabled; a PF netdev whose kernel driver cannot set VF GUIDs is NotSupported with the kernel's reason. Nothing is changed on failure.
        op set_vf_guids(vf: u32, node_guid: &str, port_guid: &str) -> () as ManageAdapter = |e, v| e.set_vf_guids(v.index, vf, node_guid, port_guid).await;
        /// Forgets the GUIDs remembered for VF `vf` (NotFound when none are); the PF's driver keeps the current ones until the VFs are destroyed (the kernel has no GUID-less state to go back to).
        op reset_vf_guids(vf: u32) -> () as ManageAdapter = |e, v| e.reset_vf_guids(v.index, vf).await;
    }
}

pub fn kind_name(k: DeviceKind) -> &'static str {
    match k {
        DeviceKind::Hardware => "hardware",
        DeviceKind::Rxe => "rxe",
        DeviceKind::Siw => "siw",
        DeviceKind::OtherVirtual => "virtual",
    }
}

pub fn device_view(d: &DeviceState, config: &Desired, paths: &ObjectPaths) -> DeviceView {
    let s = &d.snap;
    let mut u = Unreadable::default();
    DeviceView {
        index: d.index,
        name: s.name.clone(),
        kind: kind_name(s.kind).to_string(),
        node_type: u.text("NodeType", &s.node_type, |t| t.sysfs_name().to_string()),
        protocol: d
            .nl
            .as_ref()
            .and_then(|n| n.protocol.clone())
            .unwrap_or_default(),
        node_guid: u.text("NodeGuid", &s.node_guid, |g| g.to_string()),
        sys_image_guid: u.text("SysImageGuid", &s.sys_image_guid, |g| g.to_string()),
        fw_version: u.take("FwVersion", &s.fw_ver),
        hca_type: u.take("HcaType", &s.hca_type),
        hw_rev: u.take("HwRev", &s.hw_rev),
        board_id: u.take("BoardId", &s.board_id),
        node_desc: u.take("NodeDesc", &s.node_desc),
        pci_address: s.pci_address.clone().unwrap_or_default(),
        parent_netdev: s.parent_netdev.clone().unwrap_or_default(),
        netdevs: s.netdevs.clone(),
        ports: s
            .ports
            .iter()
            .map(|p| paths.port(d.index, p.number))
            .collect(),
        unreadable: u.0,
        vf_guids: crate::dbus::vf_guid_view::vf_guids(d, config),
    }
}
