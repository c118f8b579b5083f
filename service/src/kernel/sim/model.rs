//! The simulated host's in-memory state: the devices and netdevs a kernel would hold.
//! The sysfs tree is rendered from it (see `render`), and read back by the real readers.

use crate::model::{DeviceKind, Guid, IpoibMode, NodeType};

use super::port::SimPort;

/// An SR-IOV virtual function's place under its physical function.
#[derive(Debug, Clone, PartialEq)]
pub struct SimVf {
    /// The PF's PCI address.
    pub pf: String,
    /// N of the PF's `virtfn<N>` link to this VF.
    pub number: u32,
    /// The PF's config space has the multi-function bit.
    pub pf_multifunction: bool,
}

/// What sysfs shows of a hardware device's parent beyond its address: what rdma-core's
/// `rdma_rename` reads to name the device.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SimPciPlacement {
    /// `acpi_index` of the function (ACPI _DSM), as the file reads.
    pub acpi_index: Option<String>,
    /// `index` (SMBIOS type 41), as the file reads.
    pub smbios_index: Option<String>,
    /// Header type bit 7 in config space: the device has several functions.
    pub multifunction: bool,
    /// `ari_enabled` reads 1.
    pub ari: bool,
    /// The function is a VF.
    pub vf: Option<SimVf>,
    /// A sub-function: the device's parent is the auxiliary device `mlx5_core.sf.<n>` below
    /// the PCI function, with this `sfnum`.
    pub sfnum: Option<u32>,
    /// An SR-IOV PF: `sriov_numvfs`, the VFs enabled.
    pub sriov_numvfs: Option<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SimDevice {
    /// Kernel device index (cyclic allocation: never reused while the counter has not wrapped).
    pub index: u32,
    pub name: String,
    pub kind: DeviceKind,
    pub node_type: NodeType,
    pub node_guid: Guid,
    pub sys_image_guid: Guid,
    pub fw_ver: String,
    pub node_desc: String,
    pub hca_type: Option<String>,
    pub hw_rev: Option<String>,
    pub board_id: Option<String>,
    /// The netdev of a soft device.
    pub parent_netdev: Option<String>,
    /// The PCI function (for an SF, the one its auxiliary device sits below).
    pub pci_address: Option<String>,
    /// What rdma_rename reads there.
    pub placement: SimPciPlacement,
    /// `rdma dev show` protocol: ib, roce, iw.
    pub protocol: String,
    /// IB_DEVICE cap flags as RDMA netlink reports them.
    pub cap_flags: u64,
    pub ports: Vec<SimPort>,
}

/// IPoIB specifics of a simulated netdev.
#[derive(Debug, Clone, PartialEq)]
pub struct SimIpoib {
    pub pkey: u16,
    pub mode: IpoibMode,
    pub umcast: bool,
    /// HCA port number.
    pub port: u32,
    /// Parent interface of a child.
    pub parent: Option<String>,
    /// Created through sysfs `create_child` (has pkey/mode/umcast/parent files) rather than
    /// rtnetlink (has none of them).
    pub legacy_files: bool,
    /// IB link MTU of the port (2048, 4096): datagram MTU is this minus 4.
    pub ib_mtu: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SimNetdev {
    pub ifindex: u32,
    pub name: String,
    /// ARPHRD_*.
    pub arphrd: u16,
    pub address: Vec<u8>,
    pub mtu: u32,
    pub up: bool,
    pub carrier: bool,
    /// rtnetlink kind (veth, dummy, ipoib, vlan) or None for a hardware function's netdev.
    pub link_kind: Option<String>,
    /// The other end of a veth pair.
    pub peer: Option<String>,
    pub pci_address: Option<String>,
    pub ipoib: Option<SimIpoib>,
    pub tx_bytes: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub rx_packets: u64,
    /// IPv4 and IPv6 addresses with prefixes, in the order they were added (the kernel
    /// lists each family's in that order, IPv4 first).
    pub addresses: Vec<crate::model::NetdevAddress>,
}

impl SimNetdev {
    pub fn operstate(&self) -> &'static str {
        match (self.up, self.carrier) {
            (true, true) => "up",
            (true, false) => "lowerlayerdown",
            _ => "down",
        }
    }

    pub fn mac(&self) -> Option<[u8; 6]> {
        <[u8; 6]>::try_from(self.address.as_slice()).ok()
    }

    /// What an rxe device over this netdev follows of it.
    pub fn for_rxe(&self) -> super::port::RxeNetdev<'_> {
        super::port::RxeNetdev {
            name: &self.name,
            mac: self.mac(),
            up: self.up,
            carrier: self.carrier,
            mtu: self.mtu,
        }
    }
}

/// Kernel knobs that differ between kernels.
#[derive(Debug, Clone, PartialEq)]
pub struct SimKernel {
    /// `uname -r` of the kernel this host imitates.
    pub release: String,
    /// CONFIG_RDMA_SIW (Debian's kernels: not set).
    pub siw_available: bool,
    /// rdma_cm loaded and configfs mounted.
    pub rdma_cm_configfs: bool,
    /// SYS MONITOR_MODE (no Debian kernel up to 6.12).
    pub monitor_mode: bool,
    /// rxe loaded (it is autoloaded by the first `rdma link add ... type rxe`).
    pub rxe_loaded: bool,
    /// Netdevs can be renamed while up (Linux 6.2 and later); before, EBUSY.
    pub netdev_live_rename: bool,
    /// RDMA netlink reports NAME_ASSIGN_TYPE (Linux 6.11 and later).
    pub name_assign_type: bool,
}

impl Default for SimKernel {
    fn default() -> Self {
        SimKernel {
            release: "sim".into(),
            siw_available: false,
            rdma_cm_configfs: true,
            monitor_mode: false,
            rxe_loaded: false,
            netdev_live_rename: true,
            name_assign_type: true,
        }
    }
}

/// Everything a simulated host holds.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HostSpec {
    pub kernel: SimKernel,
    pub devices: Vec<SimDevice>,
    pub netdevs: Vec<SimNetdev>,
}
