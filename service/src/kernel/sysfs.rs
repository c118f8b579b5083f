//! Readers of sysfs (`/sys/class/infiniband`, `/sys/class/net`, `/sys/module`) and of
//! rdma_cm's configfs, rooted at a directory: `/` on a real host, the fixture tree of the
//! simulated host otherwise, so that both are read by the very same code.
//!
//! Reads are blocking and cheap; async callers run them on the blocking pool.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::observe::{note, SysfsOp};
use super::{HostError, Op};
use crate::model::attr::{parse_dec, parse_hex_u32, trim_attr};
use crate::model::counters::{PortSource, HW_BYTE_COUNTERS, PMA32_SATURATED};
use crate::model::device::{
    parse_gid, GidEntry, GidType, NodeType, PkeyEntry, PortAttrs, PortSnapshot,
};
use crate::model::netdev::{
    parse_bool01, parse_ipoib_mode, uevent_devtype, IpoibAttrs, ARPHRD_INFINIBAND,
};
use crate::model::{
    AttrError, CounterSnapshot, CounterSource, CounterWidth, DeviceKind, DeviceSnapshot, Errno,
    Field, Guid, HwAddress, LinkLayer, NetdevSnapshot, PhysState, PortState, Rate,
};
use crate::naming::rdma_rename::{PciFunction, PciParent, PhysFn, RenameSysfs};

/// IFF_UP in a netdev's `flags`.
const IFF_UP: u32 = 0x1;
/// The PMA files the traffic counters come from, which a port's other PMA counters leave out.
const PMA_TRAFFIC: [&str; 4] = [
    "port_xmit_data",
    "port_rcv_data",
    "port_xmit_packets",
    "port_rcv_packets",
];

/// Reads a device's GID tables in one go and its ports' attributes (see
/// [`SysRoot::read_device_with`]): called with the device's name, its port numbers and a
/// function giving the sum of its ports' table lengths (which lists the `gids` directories:
/// 1024 entries a port on rxe, so only asked for when needed), it gives the used entries by
/// port, or `None` to have them read through sysfs.
pub type GidTableReader<'a> =
    &'a mut dyn FnMut(&str, &[u32], &mut dyn FnMut() -> usize) -> Option<VerbsTables>;

/// What a device's verbs context told: the used GID entries by port (a port without any is
/// absent) and each port's attributes, or why its query failed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VerbsTables {
    pub gids: std::collections::BTreeMap<u32, Vec<GidEntry>>,
    pub ports: std::collections::BTreeMap<u32, Field<PortAttrs>>,
}

/// Whether a port of this link layer has LIDs to read. On Ethernet (RoCE, rxe) the kernel's
/// `lid`, `sm_lid`, `lid_mask_count` and `sm_sl` always read 0: ib_core leaves them zeroed for
/// non-InfiniBand ports and RoCE has no subnet manager. An unknown or unreadable link layer is
/// read as before.
pub fn has_lids(link_layer: &Field<LinkLayer>) -> bool {
    !matches!(link_layer, Ok(LinkLayer::Ethernet))
}

/// The sysfs and configfs trees under one root directory.
#[derive(Debug, Clone)]
pub struct SysRoot {
    root: PathBuf,
}

/// Reads one attribute file as text; errors become per-field [`AttrError`]s.
pub fn read_attr(path: &Path) -> Field<String> {
    note(SysfsOp::File, 1);
    match std::fs::read(path) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) if e.kind() == ErrorKind::NotFound => Err(AttrError::Missing),
        Err(e) => Err(AttrError::Unreadable(Errno::from_io(&e))),
    }
}

fn read_parsed<T>(path: &Path, parse: impl FnOnce(&str) -> Field<T>) -> Field<T> {
    read_attr(path).and_then(|raw| parse(&raw))
}

fn read_text(path: &Path) -> Field<String> {
    read_attr(path).map(|raw| trim_attr(&raw).to_string())
}

/// Entries of a directory, sorted; a missing directory is empty.
pub(super) fn list_dir(path: &Path) -> Result<Vec<String>, std::io::Error> {
    note(SysfsOp::DirList, 1);
    match std::fs::read_dir(path) {
        Ok(rd) => {
            let mut names: Vec<String> = rd
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            note(SysfsOp::DirEntry, names.len() as u64);
            names.sort();
            Ok(names)
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Numeric entries of a directory (ports, GID and P_Key indices), in numeric order.
fn list_indices(path: &Path) -> Vec<u32> {
    let mut v: Vec<u32> = list_dir(path)
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    v.sort_unstable();
    v
}

/// A device's kind from its `parent` netdev (rxe, siw), its `device` link (hardware) and its
/// node type (siw is an RNIC).
fn device_kind(
    parent_netdev: &Option<String>,
    parent_device: &Option<String>,
    node_type: &Field<NodeType>,
) -> DeviceKind {
    match (parent_netdev, parent_device, node_type) {
        (_, Some(_), _) => DeviceKind::Hardware,
        (Some(_), None, Ok(NodeType::Rnic)) => DeviceKind::Siw,
        (Some(_), None, _) => DeviceKind::Rxe,
        (None, None, _) => DeviceKind::OtherVirtual,
    }
}

/// Whether a path is a directory (a lookup).
pub(super) fn is_dir(path: &Path) -> bool {
    note(SysfsOp::Lookup, 1);
    path.is_dir()
}

/// Whether a path exists (a lookup).
fn exists(path: &Path) -> bool {
    note(SysfsOp::Lookup, 1);
    path.exists()
}

fn link_basename(path: &Path) -> Option<String> {
    note(SysfsOp::Lookup, 1);
    std::fs::read_link(path)
        .ok()
        .and_then(|t| t.file_name().map(|n| n.to_string_lossy().into_owned()))
}

/// A counter file's value, as [`read_parsed`] would give it but with one `read` into a small
/// buffer: no size query, no second read for the end of file and no allocation, which
/// `fs::read` makes. A reading of every port's counters opens thousands of these; sysfs
/// gives an attribute's whole text to the first read.
fn read_counter(path: &Path) -> Field<u64> {
    counter_of(std::fs::File::open(path))
}

/// A counter file opened by `opened`, read as [`read_counter`] reads it.
fn counter_of(opened: std::io::Result<std::fs::File>) -> Field<u64> {
    use std::io::Read;
    note(SysfsOp::File, 1);
    let io = |e: std::io::Error| match e.kind() {
        ErrorKind::NotFound => AttrError::Missing,
        _ => AttrError::Unreadable(Errno::from_io(&e)),
    };
    let mut f = opened.map_err(io)?;
    // "%llu\n" is at most 21 bytes; anything as long as the buffer is not a counter.
    let mut buf = [0u8; 32];
    let n = f.read(&mut buf).map_err(io)?;
    if n == buf.len() {
        return Err(AttrError::malformed(
            &String::from_utf8_lossy(&buf),
            "not a counter",
        ));
    }
    parse_dec::<u64>(&String::from_utf8_lossy(&buf[..n]))
}

/// A file's text as C's `fopen` then `fscanf` would see it: `None` when it cannot be opened,
/// an empty string when it opened but could not be read.
fn fopen_text(path: &Path) -> Option<String> {
    match read_attr(path) {
        Ok(s) => Some(s),
        Err(AttrError::Unreadable(e)) if !matches!(e, Errno::EACCES | Errno::EPERM) => {
            Some(String::new())
        }
        Err(_) => None,
    }
}

/// PCI_HEADER_TYPE: the byte of config space whose bit 7 marks a multi-function device.
const PCI_HEADER_TYPE: usize = 0x0e;

/// A PCI function directory as rdma_rename's `fill_pci_info` and `is_pci_multifunction` read
/// it: the name it resolves to, `ari_enabled`, and config space (the first 64 bytes, which
/// anyone may read).
fn pci_function(path: &Path) -> Option<PciFunction> {
    use std::io::Read;
    let real = std::fs::canonicalize(path).ok()?;
    let address = real.file_name()?.to_string_lossy().into_owned();
    let mut header = [0u8; 64];
    let header_type = std::fs::File::open(path.join("config"))
        .and_then(|mut f| f.read_exact(&mut header))
        .ok()
        .map(|()| header[PCI_HEADER_TYPE]);
    Some(PciFunction {
        address,
        ari_enabled: fopen_text(&path.join("ari_enabled")),
        header_type,
    })
}

/// The PCI function at `path`, and its PF and the PF's `virtfn<N>` links if it is a VF.
fn pci_parent(path: &Path) -> Option<PciParent> {
    let function = pci_function(path)?;
    let pf_dir = path.join("physfn");
    let physfn = is_dir(&pf_dir).then(|| {
        let mut virtfns: Vec<(u32, String)> = list_dir(&pf_dir)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|n| {
                let number = n.strip_prefix("virtfn")?.parse().ok()?;
                Some((number, n))
            })
            .collect();
        virtfns.sort();
        PhysFn {
            function: pci_function(&pf_dir).unwrap_or_default(),
            virtfns: virtfns
                .into_iter()
                .map(|(_, n)| {
                    let target = pci_function(&pf_dir.join(&n));
                    (n, target)
                })
                .collect(),
        }
    });
    Some(PciParent { function, physfn })
}

impl SysRoot {
    pub fn new(root: impl Into<PathBuf>) -> SysRoot {
        SysRoot { root: root.into() }
    }

    /// The real host.
    pub fn system() -> SysRoot {
        SysRoot::new("/")
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn ib_class(&self) -> PathBuf {
        self.root.join("sys/class/infiniband")
    }

    pub fn net_class(&self) -> PathBuf {
        self.root.join("sys/class/net")
    }

    pub fn rdma_cm(&self) -> PathBuf {
        self.root.join("sys/kernel/config/rdma_cm")
    }

    pub fn device_dir(&self, dev: &str) -> PathBuf {
        self.ib_class().join(dev)
    }

    pub fn port_dir(&self, dev: &str, port: u32) -> PathBuf {
        self.device_dir(dev).join("ports").join(port.to_string())
    }

    pub fn netdev_dir(&self, name: &str) -> PathBuf {
        self.net_class().join(name)
    }

    /// Names of the RDMA devices, sorted. No `/sys/class/infiniband` means none.
    pub fn rdma_device_names(&self) -> Result<Vec<String>, HostError> {
        let dir = self.ib_class();
        list_dir(&dir).map_err(|e| HostError::from_io(Op::ReadSysfs(dir.display().to_string()), &e))
    }

    /// What made the device, and for hardware the driver of its parent device (`device/driver`,
    /// e.g. `mlx5_core`): what decides which libibverbs provider serves it
    /// (`verbs_providers`). Three or four sysfs reads, none of the device's ports.
    pub fn device_origin(&self, name: &str) -> (DeviceKind, Option<String>) {
        let dir = self.device_dir(name);
        let parent_netdev = read_text(&dir.join("parent"))
            .ok()
            .filter(|p| !p.is_empty());
        let parent = link_basename(&dir.join("device"));
        let node_type = match (&parent_netdev, &parent) {
            // Only a soft device's kind depends on it (siw is an RNIC).
            (Some(_), None) => read_parsed(&dir.join("node_type"), NodeType::parse_sysfs),
            _ => Err(AttrError::Missing),
        };
        let driver = match &parent {
            Some(_) => link_basename(&dir.join("device/driver")),
            None => None,
        };
        (device_kind(&parent_netdev, &parent, &node_type), driver)
    }

    /// One device: attributes, ports, GIDs and P_Keys. Every attribute is read on its own, so
    /// a bad file spoils only its field; only a vanished device directory fails the whole.
    pub fn read_device(&self, name: &str) -> Result<DeviceSnapshot, HostError> {
        self.read_device_with(name, None)
    }

    /// [`SysRoot::read_device`], with the GIDs of every port from `gid_table` when it gives
    /// them (libibverbs' one-call GID table query on a real host: see `verbs.rs`); when it
    /// gives `None`, each port's GIDs are read through sysfs. It is called with the device's
    /// name and the sum of its ports' GID table lengths.
    pub fn read_device_with(
        &self,
        name: &str,
        gid_table: Option<GidTableReader<'_>>,
    ) -> Result<DeviceSnapshot, HostError> {
        let dir = self.device_dir(name);
        if !is_dir(&dir) {
            return Err(HostError::NotFound(format!("RDMA device {name}")));
        }
        let node_type = read_parsed(&dir.join("node_type"), NodeType::parse_sysfs);
        let parent_netdev = read_text(&dir.join("parent"))
            .ok()
            .filter(|p| !p.is_empty());
        let pci_address = link_basename(&dir.join("device"));
        let kind = device_kind(&parent_netdev, &pci_address, &node_type);
        let mut netdevs = match &parent_netdev {
            Some(p) => vec![p.clone()],
            None => list_dir(&dir.join("device/net")).unwrap_or_default(),
        };
        netdevs.sort();
        let numbers = list_indices(&dir.join("ports"));
        let mut from_table = gid_table.and_then(|read| {
            let mut table_len = || -> usize {
                numbers
                    .iter()
                    .map(|p| list_dir(&self.port_dir(name, *p).join("gids")).map_or(0, |v| v.len()))
                    .sum()
            };
            read(name, &numbers, &mut table_len)
        });
        let mut ports = Vec::new();
        for &number in &numbers {
            // A port without valid entries is absent from the table: it has no GIDs.
            let verbs = from_table.as_mut().map(|t| {
                (
                    t.gids.remove(&number).unwrap_or_default(),
                    t.ports.remove(&number).unwrap_or(Err(AttrError::Missing)),
                )
            });
            ports.push(self.read_port_with(name, number, verbs));
        }
        if !is_dir(&dir) {
            // Unplugged while we read it: what we have may be a mix of stale and missing.
            return Err(HostError::NotFound(format!("RDMA device {name}")));
        }
        let mut snap = DeviceSnapshot {
            name: name.to_string(),
            kind,
            node_type,
            node_guid: read_parsed(&dir.join("node_guid"), Guid::parse_sysfs),
            sys_image_guid: read_parsed(&dir.join("sys_image_guid"), Guid::parse_sysfs),
            fw_ver: read_text(&dir.join("fw_ver")),
            node_desc: read_text(&dir.join("node_desc")),
            hca_type: read_text(&dir.join("hca_type")),
            hw_rev: read_text(&dir.join("hw_rev")),
            board_id: read_text(&dir.join("board_id")),
            parent_netdev,
            pci_address,
            netdevs,
            ports,
        };
        snap.shrink_to_fit();
        Ok(snap)
    }

    /// What rdma-core's `rdma_rename` reads about a device's parent to name it (see
    /// [`crate::naming::rdma_rename`]): onboard indices, the bus, an SF's `sfnum`, and the PCI
    /// function (for an SF the one above its auxiliary device) with its PF if it is a VF.
    pub fn rename_sysfs(&self, name: &str) -> Result<RenameSysfs, HostError> {
        let dir = self.device_dir(name);
        if !is_dir(&dir) {
            return Err(HostError::NotFound(format!("RDMA device {name}")));
        }
        let parent = dir.join("device");
        let subsystem = link_basename(&parent.join("subsystem"));
        let pci = match subsystem.as_deref() {
            Some("pci") => pci_parent(&parent),
            // An SF: named after the PCI function its auxiliary device sits below.
            Some("auxiliary") => std::fs::canonicalize(&parent)
                .ok()
                .and_then(|real| real.parent().and_then(pci_parent)),
            _ => None,
        };
        let out = RenameSysfs {
            has_parent: is_dir(&parent),
            subsystem,
            acpi_index: fopen_text(&parent.join("acpi_index")),
            smbios_index: fopen_text(&parent.join("index")),
            sfnum: fopen_text(&parent.join("sfnum")),
            pci,
        };
        if !is_dir(&dir) {
            return Err(HostError::NotFound(format!("RDMA device {name}")));
        }
        Ok(out)
    }

    /// One port without counters.
    pub fn read_port(&self, dev: &str, number: u32) -> PortSnapshot {
        self.read_port_with(dev, number, None)
    }

    /// One port without counters, with its GIDs and attributes when the caller has them
    /// from verbs already. Without verbs, the table lengths are those of the `gids` and
    /// `pkeys` directories (sysfs makes one entry per table slot) and the MTUs are missing.
    fn read_port_with(
        &self,
        dev: &str,
        number: u32,
        verbs: Option<(Vec<GidEntry>, Field<PortAttrs>)>,
    ) -> PortSnapshot {
        let dir = self.port_dir(dev, number);
        let (pkeys, pkeys_listed) = self.read_pkeys(&dir);
        let (gids, gids_listed, attrs) = match verbs {
            Some((gids, attrs)) => (gids, None, Some(attrs)),
            None => {
                let (gids, listed) = self.read_gids(&dir);
                (gids, Some(listed), None)
            }
        };
        let (active_mtu, max_mtu, gid_table_len, pkey_table_len) = match attrs {
            Some(Ok(a)) => (
                a.active_mtu,
                a.max_mtu,
                Ok(a.gid_table_len),
                Ok(a.pkey_table_len),
            ),
            // The GID directory is not listed for its length: 1024 entries a port on rxe,
            // which the GID table's one call spares.
            Some(Err(e)) => (Err(e.clone()), Err(e.clone()), Err(e), Ok(pkeys_listed)),
            None => (
                Err(AttrError::Missing),
                Err(AttrError::Missing),
                Ok(gids_listed.unwrap_or_default()),
                Ok(pkeys_listed),
            ),
        };
        let link_layer = read_parsed(&dir.join("link_layer"), LinkLayer::parse_sysfs);
        // An Ethernet port (RoCE) has no LIDs and no subnet manager: the kernel reports 0 for
        // all four, so they are not read (four files a port fewer; see has_lids).
        let lids = has_lids(&link_layer);
        let lid_field = |file: &str| -> Field<u32> {
            if lids {
                read_parsed(&dir.join(file), parse_hex_u32)
            } else {
                Ok(0)
            }
        };
        let small_field = |file: &str| -> Field<u8> {
            if lids {
                read_parsed(&dir.join(file), parse_dec::<u8>)
            } else {
                Ok(0)
            }
        };
        PortSnapshot {
            number,
            state: read_parsed(&dir.join("state"), PortState::parse_sysfs),
            phys_state: read_parsed(&dir.join("phys_state"), PhysState::parse_sysfs),
            lid: lid_field("lid"),
            sm_lid: lid_field("sm_lid"),
            lmc: small_field("lid_mask_count"),
            sm_sl: small_field("sm_sl"),
            cap_mask: read_parsed(&dir.join("cap_mask"), parse_hex_u32),
            link_layer,
            rate: read_parsed(&dir.join("rate"), Rate::parse_sysfs),
            gids,
            pkeys,
            active_mtu,
            max_mtu,
            gid_table_len,
            pkey_table_len,
        }
    }

    /// Used GID entries, and how many entries the table has. Unused entries are all zero;
    /// their `gid_attrs` fail with EINVAL, so they are not read at all. An unreadable GID
    /// itself is skipped (it can only be unused or vanishing).
    fn read_gids(&self, port_dir: &Path) -> (Vec<GidEntry>, u32) {
        let mut out = Vec::new();
        let indices = list_indices(&port_dir.join("gids"));
        let listed = indices.len() as u32;
        for index in indices {
            let Ok(gid) = read_parsed(&port_dir.join(format!("gids/{index}")), parse_gid) else {
                continue;
            };
            if gid.is_unspecified() {
                continue;
            }
            out.push(GidEntry {
                index,
                gid,
                gid_type: read_parsed(
                    &port_dir.join(format!("gid_attrs/types/{index}")),
                    GidType::parse_sysfs,
                ),
                ndev: read_text(&port_dir.join(format!("gid_attrs/ndevs/{index}"))),
            });
        }
        (out, listed)
    }

    /// Every port's used GID entries, by port; ports without any are left out (as
    /// `ibv_query_gid_table` gives them: the simulated host's verbs answer with this).
    pub fn read_gid_tables(&self, dev: &str) -> std::collections::BTreeMap<u32, Vec<GidEntry>> {
        list_indices(&self.device_dir(dev).join("ports"))
            .into_iter()
            .map(|port| (port, self.read_gids(&self.port_dir(dev, port)).0))
            .filter(|(_, gids)| !gids.is_empty())
            .collect()
    }

    /// Non-zero P_Key table entries (the directory exists only when the table is non-empty).
    /// Also gives how many entries the table has (listed, zero or not).
    fn read_pkeys(&self, port_dir: &Path) -> (Vec<PkeyEntry>, u32) {
        let indices = list_indices(&port_dir.join("pkeys"));
        let listed = indices.len() as u32;
        let entries = indices
            .into_iter()
            .filter_map(|index| {
                let pkey = read_parsed(
                    &port_dir.join(format!("pkeys/{index}")),
                    PkeyEntry::parse_value,
                )
                .ok()?;
                (pkey & 0x7fff != 0).then_some(PkeyEntry { index, pkey })
            })
            .collect();
        (entries, listed)
    }

    /// Where a port's traffic is counted: PMA `counters/` (64-bit when the kernel added the
    /// extended unicast/multicast counters), byte counters among `hw_counters`, else the
    /// netdev's statistics (see [`crate::model::counters`]).
    pub fn counter_source(&self, dev: &str, port: u32) -> CounterSource {
        let dir = self.port_dir(dev, port);
        let pma_dir = dir.join("counters");
        if exists(&pma_dir.join("port_xmit_data")) {
            return CounterSource::Pma(if exists(&pma_dir.join("unicast_xmit_packets")) {
                CounterWidth::Bits64
            } else {
                CounterWidth::Bits32
            });
        }
        let hw = dir.join("hw_counters");
        if HW_BYTE_COUNTERS
            .iter()
            .any(|(tx, rx)| exists(&hw.join(tx)) && exists(&hw.join(rx)))
        {
            return CounterSource::HwCounters;
        }
        match self.port_netdev(dev, port) {
            Some(nd) => CounterSource::Netdev(nd),
            None => CounterSource::None,
        }
    }

    /// Counter source and netdev of every port of a device.
    pub fn port_sources(&self, dev: &str) -> Result<Vec<PortSource>, HostError> {
        let dir = self.device_dir(dev);
        if !is_dir(&dir) {
            return Err(HostError::NotFound(format!("RDMA device {dev}")));
        }
        Ok(list_indices(&dir.join("ports"))
            .into_iter()
            .map(|port| PortSource {
                port,
                netdev: self.port_netdev(dev, port),
                counters: self.counter_source(dev, port),
            })
            .collect())
    }

    /// A port's counters from the best source it has (see [`crate::model::counters`]).
    pub fn read_counters(&self, dev: &str, port: u32) -> Result<CounterSnapshot, HostError> {
        self.read_counters_with(dev, port, None)
    }

    /// A port's counters but its traffic counters (left `Missing`), its source known: the
    /// PMA's error and other counters of `counters/` and the driver's (`hw`, when read
    /// otherwise, else `hw_counters/`). Nothing else is opened: no probe of the source, no
    /// netdev statistics.
    ///
    /// Why: this is GetAllCounters' read when the engine's poll has just read every port's
    /// traffic counters, and the probe and the netdev's files were most of what a port cost
    /// (each a walk of a dozen names through sysfs's class links).
    pub fn read_other_counters(
        &self,
        dev: &str,
        port: u32,
        source: &CounterSource,
        hw: Option<Vec<(String, u64)>>,
    ) -> Result<CounterSnapshot, HostError> {
        let dir = self.port_dir(dev, port);
        // RDMA netlink answered for the port: it exists. Otherwise its directory says.
        if hw.is_none() && !is_dir(&dir) {
            return Err(HostError::NotFound(format!(
                "port {port} of RDMA device {dev}"
            )));
        }
        let hw = self.driver_counters(&dir, hw);
        let pma = match source {
            CounterSource::Pma(_) => self.read_counter_dir(&dir.join("counters"), &PMA_TRAFFIC),
            _ => Vec::new(),
        };
        Ok(CounterSnapshot {
            source: source.clone(),
            tx_bytes: Err(AttrError::Missing),
            rx_bytes: Err(AttrError::Missing),
            tx_packets: Err(AttrError::Missing),
            rx_packets: Err(AttrError::Missing),
            saturated: false,
            pma,
            hw,
        })
    }

    /// [`SysRoot::read_counters`], with the driver's counters given when they were read
    /// otherwise (RDMA netlink's STAT_GET: the values of `hw_counters/` under the same names,
    /// in any order) instead of from `hw_counters/`.
    pub fn read_counters_with(
        &self,
        dev: &str,
        port: u32,
        hw: Option<Vec<(String, u64)>>,
    ) -> Result<CounterSnapshot, HostError> {
        let dir = self.port_dir(dev, port);
        if !is_dir(&dir) {
            return Err(HostError::NotFound(format!(
                "port {port} of RDMA device {dev}"
            )));
        }
        let pma_dir = dir.join("counters");
        let hw = self.driver_counters(&dir, hw);
        let mut snap = CounterSnapshot {
            source: self.counter_source(dev, port),
            tx_bytes: Err(AttrError::Missing),
            rx_bytes: Err(AttrError::Missing),
            tx_packets: Err(AttrError::Missing),
            rx_packets: Err(AttrError::Missing),
            saturated: false,
            pma: Vec::new(),
            hw,
        };
        match snap.source.clone() {
            CounterSource::Pma(width) => {
                let words = |f: &str| read_counter(&pma_dir.join(f));
                let (tx_w, rx_w) = (words("port_xmit_data"), words("port_rcv_data"));
                let (tx_p, rx_p) = (words("port_xmit_packets"), words("port_rcv_packets"));
                if width == CounterWidth::Bits32 {
                    snap.saturated = [&tx_w, &rx_w, &tx_p, &rx_p]
                        .iter()
                        .any(|v| matches!(v, Ok(x) if *x >= PMA32_SATURATED));
                }
                snap.tx_bytes = tx_w.map(|w| w.saturating_mul(4));
                snap.rx_bytes = rx_w.map(|w| w.saturating_mul(4));
                snap.tx_packets = tx_p;
                snap.rx_packets = rx_p;
                snap.pma = self.read_counter_dir(&pma_dir, &PMA_TRAFFIC);
            }
            CounterSource::HwCounters => {
                let hw_value =
                    |name: &str| snap.hw.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
                if let Some((t, r)) = HW_BYTE_COUNTERS
                    .iter()
                    .find_map(|(tx, rx)| Some((hw_value(tx)?, hw_value(rx)?)))
                {
                    snap.tx_bytes = Ok(t);
                    snap.rx_bytes = Ok(r);
                }
            }
            CounterSource::Netdev(ndev) => {
                let stats = self.netdev_dir(&ndev).join("statistics");
                snap.tx_bytes = read_counter(&stats.join("tx_bytes"));
                snap.rx_bytes = read_counter(&stats.join("rx_bytes"));
                snap.tx_packets = read_counter(&stats.join("tx_packets"));
                snap.rx_packets = read_counter(&stats.join("rx_packets"));
            }
            CounterSource::None => {}
        }
        Ok(snap)
    }

    /// The driver's counters of the port at `dir`, sorted by name: `hw` when they were read
    /// otherwise (RDMA netlink lists them in the kernel's order), else its `hw_counters/`.
    fn driver_counters(&self, dir: &Path, hw: Option<Vec<(String, u64)>>) -> Vec<(String, u64)> {
        match hw {
            Some(mut hw) => {
                hw.sort_by(|a, b| a.0.cmp(&b.0));
                hw
            }
            None => self.read_counter_dir(&dir.join("hw_counters"), &["lifespan"]),
        }
    }

    /// Every readable "%llu" file of a counter directory, sorted by name.
    ///
    /// The directory is opened once as the base of an `openat` of each file: the kernel walks
    /// one name per file instead of the whole path (a dozen names, through the class link on
    /// sysfs), which was most of what reading every port's counters cost.
    fn read_counter_dir(&self, dir: &Path, skip: &[&str]) -> Vec<(String, u64)> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        let names = list_dir(dir).unwrap_or_default();
        if names.is_empty() {
            return Vec::new();
        }
        let Ok(base) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(dir)
        else {
            return Vec::new();
        };
        let mut cpath = Vec::with_capacity(64);
        names
            .into_iter()
            .filter(|n| !skip.contains(&n.as_str()))
            .filter_map(|n| {
                let opened = super::openat::openat(base.as_raw_fd(), n.as_bytes(), &mut cpath);
                counter_of(opened).ok().map(|v| (n, v))
            })
            .collect()
    }

    /// The netdev carrying a port's traffic: the soft device's parent, the ndev of GID 0
    /// (RoCE), or the PCI function's netdev whose `dev_port` is the port's.
    pub fn port_netdev(&self, dev: &str, port: u32) -> Option<String> {
        let dev_dir = self.device_dir(dev);
        if let Ok(p) = read_text(&dev_dir.join("parent")) {
            return Some(p);
        }
        if let Ok(nd) = read_text(&self.port_dir(dev, port).join("gid_attrs/ndevs/0")) {
            if !nd.is_empty() {
                return Some(nd);
            }
        }
        list_dir(&dev_dir.join("device/net"))
            .unwrap_or_default()
            .into_iter()
            .find(|nd| {
                read_parsed(&self.netdev_dir(nd).join("dev_port"), parse_dec::<u32>)
                    == Ok(port.saturating_sub(1))
            })
    }

    /// Every netdev, sorted by name; one that vanishes while being read is left out.
    pub fn read_netdevs(&self) -> Result<Vec<NetdevSnapshot>, HostError> {
        let dir = self.net_class();
        let names = list_dir(&dir)
            .map_err(|e| HostError::from_io(Op::ReadSysfs(dir.display().to_string()), &e))?;
        Ok(names
            .iter()
            .filter_map(|n| self.read_netdev(n).ok())
            .collect())
    }

    /// The IPoIB netdevs (`type` 32), each as [`SysRoot::read_netdev`] reads it; of the
    /// others only `type` is read.
    pub fn read_ipoib_netdevs(&self) -> Result<Vec<NetdevSnapshot>, HostError> {
        let dir = self.net_class();
        let names = list_dir(&dir)
            .map_err(|e| HostError::from_io(Op::ReadSysfs(dir.display().to_string()), &e))?;
        Ok(names
            .iter()
            .filter(|n| {
                read_parsed(&self.netdev_dir(n).join("type"), parse_dec::<u16>)
                    == Ok(ARPHRD_INFINIBAND)
            })
            .filter_map(|n| self.read_netdev(n).ok())
            .filter(|n| n.is_ipoib())
            .collect())
    }

    pub fn read_netdev(&self, name: &str) -> Result<NetdevSnapshot, HostError> {
        let dir = self.netdev_dir(name);
        if !is_dir(&dir) {
            return Err(HostError::NotFound(format!("network interface {name}")));
        }
        let arphrd = read_parsed(&dir.join("type"), parse_dec::<u16>);
        let ipoib = (arphrd == Ok(ARPHRD_INFINIBAND)).then(|| IpoibAttrs {
            pkey: read_parsed(&dir.join("pkey"), parse_hex_u32).and_then(|v| {
                u16::try_from(v).map_err(|_| AttrError::malformed(&v.to_string(), "above 0xffff"))
            }),
            mode: read_parsed(&dir.join("mode"), parse_ipoib_mode),
            umcast: read_parsed(&dir.join("umcast"), parse_bool01),
            port: read_parsed(&dir.join("dev_port"), parse_dec::<u32>).map(|p| p + 1),
            parent: read_text(&dir.join("parent")).ok(),
            carrier: read_parsed(&dir.join("carrier"), parse_bool01),
            admin_up: read_parsed(&dir.join("flags"), parse_hex_u32).map(|f| f & IFF_UP != 0),
        });
        Ok(NetdevSnapshot {
            name: name.to_string(),
            ifindex: read_parsed(&dir.join("ifindex"), parse_dec::<u32>),
            arphrd,
            address: read_parsed(&dir.join("address"), HwAddress::parse_sysfs),
            mtu: read_parsed(&dir.join("mtu"), parse_dec::<u32>),
            operstate: read_text(&dir.join("operstate")),
            devtype: read_attr(&dir.join("uevent"))
                .ok()
                .and_then(|u| uevent_devtype(&u)),
            pci_address: link_basename(&dir.join("device")),
            ipoib,
        })
    }

    /// The name of the netdev with this ifindex, if any.
    pub fn netdev_name_by_index(&self, ifindex: u32) -> Option<String> {
        list_dir(&self.net_class())
            .unwrap_or_default()
            .into_iter()
            .find(|n| {
                read_parsed(&self.netdev_dir(n).join("ifindex"), parse_dec::<u32>) == Ok(ifindex)
            })
    }

    pub fn module_loaded(&self, module: &str) -> bool {
        is_dir(&self.root.join("sys/module").join(module))
    }

    /// Whether configfs is mounted on `/sys/kernel/config`, from `/proc/self/mounts` under
    /// the root; `None` when that cannot be read (as in a simulated tree).
    pub fn configfs_mounted(&self) -> Option<bool> {
        let text = std::fs::read_to_string(self.root.join("proc/self/mounts")).ok()?;
        Some(text.lines().any(|l| {
            let mut f = l.split_whitespace();
            let (_, dir, fstype) = (f.next(), f.next(), f.next());
            dir == Some("/sys/kernel/config") && fstype == Some("configfs")
        }))
    }

    /// Why `rdma_cm/` is absent, as far as the tree tells.
    pub fn rdma_cm_missing(&self) -> HostError {
        rdma_cm_missing(self.module_loaded("rdma_cm"), self.configfs_mounted())
    }
}

/// The error for a missing `/sys/kernel/config/rdma_cm`, saying which of its two conditions
/// fails and what to run: the rdma_cm module registers the directory, and configfs must be
/// mounted for it to show. `mounted` is `None` when it could not be told.
pub fn rdma_cm_missing(module_loaded: bool, mounted: Option<bool>) -> HostError {
    const MODPROBE: &str = "`modprobe rdma_cm`";
    const MOUNT: &str = "`mount -t configfs none /sys/kernel/config`";
    let why = match (module_loaded, mounted) {
        (false, Some(false)) => format!(
            "the rdma_cm module is not loaded and configfs is not mounted: run {MODPROBE} and {MOUNT}"
        ),
        (false, _) => format!("the rdma_cm module is not loaded: run {MODPROBE}"),
        (true, Some(false)) => format!("configfs is not mounted: run {MOUNT}"),
        (true, _) => format!(
            "/sys/kernel/config/rdma_cm is missing although rdma_cm is loaded: mount configfs ({MOUNT}), or the kernel was built without CONFIG_INFINIBAND_ADDR_TRANS_CONFIGFS"
        ),
    };
    HostError::Unsupported {
        what: "rdma_cm's configfs (RoCE default mode and ToS)".into(),
        why,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(e: HostError) -> String {
        match e {
            HostError::Unsupported { why, .. } => why,
            other => panic!("{other:?}"),
        }
    }

    /// A port's LID files are read on InfiniBand and not on Ethernet, where the kernel
    /// always reports 0 (here the files say otherwise, to show which were read).
    #[test]
    fn lids_are_read_only_on_ports_that_have_them() {
        use crate::kernel::sim::{fixtures, SimHost};
        let sim = SimHost::new(fixtures::demo_host()).expect("sim");
        let sys = sim.sysroot();
        let mut seen = Vec::new();
        for dev in sys.rdma_device_names().expect("names") {
            for port in list_indices(&sys.device_dir(&dev).join("ports")) {
                let dir = sys.port_dir(&dev, port);
                std::fs::write(dir.join("lid"), "0x2a\n").expect("lid");
                std::fs::write(dir.join("sm_sl"), "3\n").expect("sm_sl");
                let p = sys.read_port(&dev, port);
                let want = match p.link_layer {
                    Ok(LinkLayer::Ethernet) => (0, 0),
                    _ => (0x2a, 3),
                };
                assert_eq!((p.lid.clone(), p.sm_sl.clone()), (Ok(want.0), Ok(want.1)));
                seen.push(p.link_layer.clone());
            }
        }
        assert!(
            seen.contains(&Ok(LinkLayer::Ethernet)) && seen.contains(&Ok(LinkLayer::InfiniBand))
        );
    }

    /// The driver's counters given (from RDMA netlink, which has them by the same names):
    /// the snapshot is the one read from the files, and `hw_counters/` is not read.
    #[test]
    fn counters_with_the_driver_s_given_are_those_of_the_files() {
        use crate::kernel::sim::{fixtures, SimHost};
        let sim = SimHost::new(fixtures::demo_host()).expect("sim");
        let sys = sim.sysroot();
        let mut compared = 0;
        for dev in sys.rdma_device_names().expect("names") {
            for port in list_indices(&sys.device_dir(&dev).join("ports")) {
                let before = sim.cost().counts();
                let files = sim
                    .cost()
                    .scoped(|| sys.read_counters(&dev, port).expect("counters"));
                let all = sim.cost().counts().since(&before);
                if files.hw.is_empty() {
                    continue;
                }
                // STAT_GET lists them in the kernel's order, not by name.
                let mut given = files.hw.clone();
                given.reverse();
                let before = sim.cost().counts();
                let with = sim.cost().scoped(|| {
                    sys.read_counters_with(&dev, port, Some(given))
                        .expect("counters")
                });
                let read = sim.cost().counts().since(&before);
                assert_eq!(with, files, "{dev} port {port}");
                assert_eq!(
                    (read.sysfs_files, read.dir_lists),
                    (all.sysfs_files - files.hw.len() as u64, all.dir_lists - 1),
                    "{dev} port {port}: {read:?} against {all:?}"
                );
                compared += 1;
            }
        }
        assert!(compared > 0, "the demo host has ports with hw_counters");
    }

    /// With its source known and the driver's counters given, a port's other counters are
    /// the full read's, its traffic counters left out, and nothing is read but its PMA
    /// counters' directory: no probe of the source, no netdev statistics, no `hw_counters/`.
    #[test]
    fn other_counters_are_the_full_read_s_without_the_traffic_and_its_probe() {
        use crate::kernel::sim::{fixtures, SimHost};
        let sim = SimHost::new(fixtures::demo_host()).expect("sim");
        let sys = sim.sysroot();
        let mut sources = std::collections::BTreeSet::new();
        for dev in sys.rdma_device_names().expect("names") {
            for port in list_indices(&sys.device_dir(&dev).join("ports")) {
                let full = sys.read_counters(&dev, port).expect("counters");
                let before = sim.cost().counts();
                let other = sim.cost().scoped(|| {
                    sys.read_other_counters(&dev, port, &full.source, Some(full.hw.clone()))
                        .expect("counters")
                });
                let read = sim.cost().counts().since(&before);
                assert_eq!(
                    (&other.source, &other.pma, &other.hw, other.saturated),
                    (&full.source, &full.pma, &full.hw, false),
                    "{dev} port {port}"
                );
                assert!(other.tx_bytes.is_err() && other.rx_packets.is_err());
                let pma_files = if matches!(full.source, CounterSource::Pma(_)) {
                    full.pma.len() as u64
                } else {
                    0
                };
                assert_eq!(
                    read.sysfs_files, pma_files,
                    "{dev} port {port} ({:?}): {read:?}",
                    full.source
                );
                sources.insert(format!("{:?}", full.source));
            }
        }
        assert!(
            sources.len() >= 3,
            "PMA, netdev and other sources: {sources:?}"
        );
    }

    /// Only IPoIB netdevs are read whole; the result is the full read's IPoIB part.
    #[test]
    fn ipoib_netdevs_are_the_full_read_s_ipoib_part() {
        use crate::kernel::sim::{fixtures, SimHost};
        let sim = SimHost::new(fixtures::demo_host()).expect("sim");
        let sys = sim.sysroot();
        let mut all = sys.read_netdevs().expect("netdevs");
        assert!(all.iter().any(|n| !n.is_ipoib()));
        all.retain(|n| n.is_ipoib());
        assert!(!all.is_empty());
        assert_eq!(sys.read_ipoib_netdevs().expect("ipoib"), all);
    }

    #[test]
    fn a_missing_rdma_cm_names_the_cause_and_the_fix() {
        let both = why(rdma_cm_missing(false, Some(false)));
        assert!(both.contains("`modprobe rdma_cm`") && both.contains("`mount -t configfs"));
        let module = why(rdma_cm_missing(false, Some(true)));
        assert!(module.contains("`modprobe rdma_cm`") && !module.contains("mount"));
        assert!(why(rdma_cm_missing(false, None)).contains("modprobe"));
        let mount = why(rdma_cm_missing(true, Some(false)));
        assert!(mount.contains("`mount -t configfs none /sys/kernel/config`"));
        assert!(!mount.contains("modprobe"));
        assert!(why(rdma_cm_missing(true, Some(true)))
            .contains("CONFIG_INFINIBAND_ADDR_TRANS_CONFIGFS"));
    }

    #[test]
    fn the_tree_tells_module_and_mount() -> std::io::Result<()> {
        let tmp = tempfile::tempdir()?;
        let sys = SysRoot::new(tmp.path().to_path_buf());
        assert_eq!(sys.configfs_mounted(), None);
        std::fs::create_dir_all(tmp.path().join("proc/self"))?;
        std::fs::write(
            tmp.path().join("proc/self/mounts"),
            "sysfs /sys sysfs rw 0 0\n",
        )?;
        assert_eq!(sys.configfs_mounted(), Some(false));
        assert!(why(sys.rdma_cm_missing()).contains("not loaded and configfs is not mounted"));
        std::fs::write(
            tmp.path().join("proc/self/mounts"),
            "sysfs /sys sysfs rw 0 0\nconfigfs /sys/kernel/config configfs rw,relatime 0 0\n",
        )?;
        std::fs::create_dir_all(tmp.path().join("sys/module/rdma_cm"))?;
        assert_eq!(sys.configfs_mounted(), Some(true));
        assert!(sys.roce_mode("mlx5_0", 1).is_err());
        assert!(matches!(
            sys.roce_configfs_dirs(),
            Err(HostError::Unsupported { .. })
        ));
        Ok(())
    }
}

/// What rdma_rename reads, from simulated and kernel-shaped trees.
#[cfg(test)]
mod rename_tests {
    use super::*;
    use crate::kernel::sim::{fixtures, SimHost};
    use crate::kernel::Host;
    use crate::naming::rdma_rename::{rdma_rename, NamingPolicy, NoName, RenameInputs};

    /// Every device of the naming fixture, read by the real readers from the simulated tree,
    /// named under each policy as rdma_rename would.
    #[tokio::test]
    async fn rename_inputs_of_the_naming_host() {
        let host = SimHost::new(fixtures::naming_host()).unwrap();
        let nl = host.nl_devices().await.unwrap();
        let mut got = Vec::new();
        for name in host.rdma_device_names().await.unwrap() {
            let inputs = RenameInputs {
                name: name.clone(),
                netlink: nl
                    .iter()
                    .find(|d| d.name == name)
                    .and_then(|d| d.rename_identity()),
                sysfs: host.read_rename_sysfs(&name).await.unwrap(),
            };
            let names: Vec<String> = [
                NamingPolicy::Onboard,
                NamingPolicy::Pci,
                NamingPolicy::Guid,
                NamingPolicy::Fallback,
            ]
            .iter()
            .map(|p| rdma_rename(p, &inputs).unwrap_or_default())
            .collect();
            got.push((name, names));
        }
        let want = |n: &str, v: [&str; 4]| (n.to_string(), v.map(String::from).to_vec());
        assert_eq!(
            got,
            vec![
                want("mlx5_0", ["ibo1", "ibp1s0", "ibx946dae0300123450", "ibo1"]),
                want(
                    "mlx5_1",
                    ["", "ibp59s0f0", "ibxb8599f0300d4e62a", "ibp59s0f0"]
                ),
                want(
                    "mlx5_2",
                    ["", "ibp59s0f0v1", "ibxb8599f0300d4e62c", "ibp59s0f0v1"]
                ),
                want(
                    "mlx5_3",
                    [
                        "",
                        "rocep193s0f0S88",
                        "rocex00258dfffe7a1058",
                        "rocep193s0f0S88"
                    ]
                ),
                want("rxe0", ["", "", "", ""]),
            ]
        );
        let sf = host.read_rename_sysfs("mlx5_3").await.unwrap();
        assert_eq!(sf.subsystem.as_deref(), Some("auxiliary"));
        assert_eq!(sf.sfnum.as_deref(), Some("88\n"));
        assert_eq!(
            sf.pci.map(|p| p.function.address).as_deref(),
            Some("0000:c1:00.0")
        );
        let vf = host.read_rename_sysfs("mlx5_2").await.unwrap();
        let pf = vf.pci.and_then(|p| p.physfn).unwrap();
        assert_eq!(pf.function.address, "0000:3b:00.0");
        assert_eq!(pf.function.header_type, Some(0x80));
        assert_eq!(pf.virtfns.len(), 1);
        let rxe = host.read_rename_sysfs("rxe0").await.unwrap();
        assert!(!rxe.has_parent && rxe.subsystem.is_none() && rxe.pci.is_none());
        assert!(matches!(
            host.read_rename_sysfs("nope").await,
            Err(HostError::NotFound(_))
        ));
    }

    /// Before 6.11 the kernel does not say who named a device: NAME_GUID renames rxe too.
    #[tokio::test]
    async fn soft_devices_without_name_assign_type() {
        let mut spec = fixtures::naming_host();
        spec.kernel.name_assign_type = false;
        let host = SimHost::new(spec).unwrap();
        let nl = host.nl_devices().await.unwrap();
        let rxe = nl.iter().find(|d| d.name == "rxe0").unwrap();
        assert_eq!(rxe.name_assign_type, None);
        let inputs = RenameInputs {
            name: "rxe0".into(),
            netlink: rxe.rename_identity(),
            sysfs: host.read_rename_sysfs("rxe0").await.unwrap(),
        };
        assert_eq!(
            rdma_rename(&NamingPolicy::Guid, &inputs).as_deref(),
            Ok("rocex505400fffe123456")
        );
        assert!(matches!(
            rdma_rename(&NamingPolicy::Fallback, &inputs),
            Err(NoName::Fallback { .. })
        ));
    }

    /// The layout of a real kernel: class entries are links into the device tree, `device`
    /// and `physfn` are relative links, config space is binary and a VF's bus differs.
    #[test]
    fn rename_inputs_from_a_kernel_shaped_tree() {
        use std::os::unix::fs::symlink;
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let bridge = root.join("sys/devices/pci0000:3a/0000:3a:00.0");
        let pf = bridge.join("0000:3b:00.0");
        let vf = bridge.join("0000:3c:00.2");
        for d in [&pf, &vf] {
            std::fs::create_dir_all(d).unwrap();
            symlink("../../../../bus/pci", d.join("subsystem")).unwrap();
            std::fs::write(d.join("ari_enabled"), "0\n").unwrap();
        }
        let mut config = vec![0u8; 256];
        config[0x0e] = 0x80;
        std::fs::write(pf.join("config"), &config).unwrap();
        // Short config space: not multi-function.
        std::fs::write(vf.join("config"), [0u8; 16]).unwrap();
        symlink("../0000:3b:00.0", vf.join("physfn")).unwrap();
        symlink("../0000:3c:00.2", pf.join("virtfn9")).unwrap();
        symlink("../0000:3b:00.1", pf.join("virtfn10")).unwrap();
        let ib = vf.join("infiniband/mlx5_9");
        std::fs::create_dir_all(&ib).unwrap();
        symlink("../../../0000:3c:00.2", ib.join("device")).unwrap();
        std::fs::create_dir_all(root.join("sys/class/infiniband")).unwrap();
        symlink(
            "../../devices/pci0000:3a/0000:3a:00.0/0000:3c:00.2/infiniband/mlx5_9",
            root.join("sys/class/infiniband/mlx5_9"),
        )
        .unwrap();
        let s = SysRoot::new(root).rename_sysfs("mlx5_9").unwrap();
        assert_eq!(s.subsystem.as_deref(), Some("pci"));
        assert_eq!(s.acpi_index, None);
        let parent = s.pci.clone().unwrap();
        assert_eq!(parent.function.address, "0000:3c:00.2");
        assert_eq!(parent.function.header_type, None);
        let physfn = parent.physfn.unwrap();
        assert_eq!(physfn.function.address, "0000:3b:00.0");
        // virtfn10 points at a function that does not exist: unreadable, listed by number.
        assert_eq!(
            physfn
                .virtfns
                .iter()
                .map(|(n, t)| (n.as_str(), t.is_some()))
                .collect::<Vec<_>>(),
            [("virtfn9", true), ("virtfn10", false)]
        );
        let inputs = RenameInputs {
            name: "mlx5_9".into(),
            netlink: Some(crate::naming::rdma_rename::NetlinkIdentity {
                index: 9,
                node_guid: Guid(1),
                protocol: Some("ib".into()),
                name_assign_type: Some(0),
            }),
            sysfs: s,
        };
        // The VF matches virtfn9 before rdma_rename reaches the broken link.
        assert_eq!(
            rdma_rename(&NamingPolicy::Pci, &inputs).as_deref(),
            Ok("ibp59s0f0v9")
        );
    }
}
