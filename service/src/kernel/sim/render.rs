//! Renders the simulated state as a sysfs-shaped tree, in the exact text formats the kernel
//! prints, so that the real readers in [`crate::kernel::sysfs`] read the simulated host.

use std::io;
use std::path::{Path, PathBuf};

use super::model::{SimDevice, SimNetdev, SimPciPlacement};
use super::port::SimPort;
use crate::model::device::gid_sysfs_form;
use crate::model::netdev::ARPHRD_INFINIBAND;
use crate::model::HwAddress;

/// Where files are written before they are renamed into the tree: outside every directory a
/// reader lists, on the same filesystem as the tree.
const STAGING: &str = ".sim-staging";

/// Writes an attribute (sysfs attributes end with a newline); see [`put_bytes`].
fn put(root: &Path, path: &Path, text: &str) -> io::Result<()> {
    put_bytes(root, path, format!("{text}\n").as_bytes())
}

/// Replaces a file of the tree atomically: written in full under [`STAGING`], then renamed
/// over the old one. A sysfs read is atomic (the kernel formats the whole value at once); a
/// file rewritten in place is not: a reader racing the writer would see it empty or half
/// written, and the daemon would publish a torn NodeGuid or counter. A reader holding the old
/// file open keeps reading the old value, so pollers reopen (see `SysfsPortPoller`).
pub fn put_bytes(root: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let staging = root.join(STAGING);
    std::fs::create_dir_all(&staging)?;
    let mut tmp = tempfile::NamedTempFile::new_in(&staging)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    // As sysfs attributes, readable by anyone (a temporary file starts at 0600).
    std::fs::set_permissions(
        tmp.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

fn symlink(target: &str, link: &Path) -> io::Result<()> {
    if let Some(dir) = link.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(target, link)
}

fn remove_tree(path: &Path) -> io::Result<()> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

pub fn pci_dir(root: &Path, pci: &str) -> PathBuf {
    root.join("sys/devices/pci").join(pci)
}

/// Writes (or rewrites) `/sys/class/infiniband/<name>/`.
pub fn render_device(root: &Path, dev: &SimDevice) -> io::Result<()> {
    remove_tree(&root.join("sys/class/infiniband").join(&dev.name))?;
    update_device(root, dev)
}

/// Rewrites the values of an already rendered device, each file replaced atomically (see
/// [`put_bytes`]). Only for changes of values, not of shape (ports, GIDs, files added or
/// removed).
pub fn update_device(root: &Path, dev: &SimDevice) -> io::Result<()> {
    let dir = root.join("sys/class/infiniband").join(&dev.name);
    std::fs::create_dir_all(&dir)?;
    put(
        root,
        &dir.join("node_type"),
        &format!("{}: {}", dev.node_type.number(), dev.node_type.sysfs_name()),
    )?;
    put(root, &dir.join("node_guid"), &dev.node_guid.colon_form())?;
    put(
        root,
        &dir.join("sys_image_guid"),
        &dev.sys_image_guid.colon_form(),
    )?;
    put(root, &dir.join("fw_ver"), &dev.fw_ver)?;
    put(root, &dir.join("node_desc"), &dev.node_desc)?;
    put(root, &dir.join("uevent"), &format!("NAME={}", dev.name))?;
    for (file, value) in [
        ("hca_type", &dev.hca_type),
        ("hw_rev", &dev.hw_rev),
        ("board_id", &dev.board_id),
    ] {
        if let Some(v) = value {
            put(root, &dir.join(file), v)?;
        }
    }
    if let Some(p) = &dev.parent_netdev {
        put(root, &dir.join("parent"), p)?;
    }
    if let Some(pci) = &dev.pci_address {
        render_pci_function(root, pci, &dev.placement)?;
        let parent = match dev.placement.sfnum {
            // An SF's parent is an auxiliary device below the PCI function.
            Some(n) => {
                let aux = format!("{pci}/mlx5_core.sf.{n}");
                let aux_dir = pci_dir(root, &aux);
                std::fs::create_dir_all(&aux_dir)?;
                symlink("../../../../bus/auxiliary", &aux_dir.join("subsystem"))?;
                put(root, &aux_dir.join("sfnum"), &n.to_string())?;
                aux
            }
            None => pci.clone(),
        };
        std::fs::create_dir_all(pci_dir(root, &parent).join("net"))?;
        symlink(
            &format!("../../../devices/pci/{parent}"),
            &dir.join("device"),
        )?;
    }
    for port in &dev.ports {
        render_port(root, &dir.join("ports").join(port.number.to_string()), port)?;
    }
    Ok(())
}

/// The first 64 bytes of a Mellanox function's config space: vendor 0x15b3, and the header
/// type (offset 0x0e) with bit 7 set for a multi-function device.
fn config_space(multifunction: bool) -> Vec<u8> {
    let mut c = vec![0u8; 64];
    c[0] = 0xb3;
    c[1] = 0x15;
    c[0x0e] = if multifunction { 0x80 } else { 0x00 };
    c
}

fn render_pci_dir(root: &Path, dir: &Path, multifunction: bool, ari: bool) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    symlink("../../../bus/pci", &dir.join("subsystem"))?;
    put_bytes(root, &dir.join("config"), &config_space(multifunction))?;
    put(root, &dir.join("ari_enabled"), if ari { "1" } else { "0" })
}

/// A PCI function's directory with what rdma_rename reads there: subsystem, config space,
/// `ari_enabled`, onboard indices, and for a VF the `physfn` and `virtfn<N>` links.
fn render_pci_function(root: &Path, pci: &str, pl: &SimPciPlacement) -> io::Result<()> {
    let dir = pci_dir(root, pci);
    render_pci_dir(root, &dir, pl.multifunction, pl.ari)?;
    for (file, value) in [("acpi_index", &pl.acpi_index), ("index", &pl.smbios_index)] {
        if let Some(v) = value {
            put_bytes(root, &dir.join(file), v.as_bytes())?;
        }
    }
    if let Some(n) = pl.sriov_numvfs {
        put(root, &dir.join("sriov_numvfs"), &n.to_string())?;
    }
    if let Some(vf) = &pl.vf {
        // A VF with an RDMA device is bound to its PF's driver.
        symlink("../../../bus/pci/drivers/mlx5_core", &dir.join("driver"))?;
        let pf = pci_dir(root, &vf.pf);
        if !pf.join("config").exists() {
            render_pci_dir(root, &pf, vf.pf_multifunction, pl.ari)?;
        }
        symlink(&format!("../{}", vf.pf), &dir.join("physfn"))?;
        symlink(
            &format!("../{pci}"),
            &pf.join(format!("virtfn{}", vf.number)),
        )?;
    }
    Ok(())
}

fn render_port(root: &Path, dir: &Path, p: &SimPort) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (file, text) in p.attribute_files() {
        put(root, &dir.join(file), &text)?;
    }
    let zero = "0000:0000:0000:0000:0000:0000:0000:0000";
    std::fs::create_dir_all(dir.join("gid_attrs/types"))?;
    std::fs::create_dir_all(dir.join("gid_attrs/ndevs"))?;
    for i in 0..p.rendered_gid_entries.unwrap_or(p.gid_table_len) {
        match p.gids.iter().find(|g| g.index == i) {
            Some(g) => {
                put(
                    root,
                    &dir.join(format!("gids/{i}")),
                    &gid_sysfs_form(&g.gid),
                )?;
                put(
                    root,
                    &dir.join(format!("gid_attrs/types/{i}")),
                    g.gid_type.as_str(),
                )?;
                if let Some(nd) = &g.ndev {
                    put(root, &dir.join(format!("gid_attrs/ndevs/{i}")), nd)?;
                }
            }
            None => put(root, &dir.join(format!("gids/{i}")), zero)?,
        }
    }
    for (i, pkey) in p.pkeys.iter().enumerate() {
        put(
            root,
            &dir.join(format!("pkeys/{i}")),
            &format!("0x{pkey:04x}"),
        )?;
    }
    if let Some(pma) = &p.pma {
        let c = dir.join("counters");
        let clamp = |v: u64| if pma.extended { v } else { v.min(0xffff_ffff) };
        put(
            root,
            &c.join("port_xmit_data"),
            &clamp(pma.xmit_data).to_string(),
        )?;
        put(
            root,
            &c.join("port_rcv_data"),
            &clamp(pma.rcv_data).to_string(),
        )?;
        put(
            root,
            &c.join("port_xmit_packets"),
            &clamp(pma.xmit_packets).to_string(),
        )?;
        put(
            root,
            &c.join("port_rcv_packets"),
            &clamp(pma.rcv_packets).to_string(),
        )?;
        if pma.extended {
            put(
                root,
                &c.join("unicast_xmit_packets"),
                &pma.xmit_packets.to_string(),
            )?;
            put(
                root,
                &c.join("unicast_rcv_packets"),
                &pma.rcv_packets.to_string(),
            )?;
            put(root, &c.join("multicast_xmit_packets"), "0")?;
            put(root, &c.join("multicast_rcv_packets"), "0")?;
        }
        for (name, v) in &pma.errors {
            put(root, &c.join(&**name), &v.to_string())?;
        }
    }
    if !p.hw_counters.is_empty() {
        let h = dir.join("hw_counters");
        for (name, v) in &p.hw_counters {
            put(root, &h.join(name), &v.to_string())?;
        }
        put(root, &h.join("lifespan"), "10")?;
    }
    Ok(())
}

pub fn remove_device(root: &Path, name: &str) -> io::Result<()> {
    remove_tree(&root.join("sys/class/infiniband").join(name))
}

/// Writes (or rewrites) `/sys/class/net/<name>/`.
pub fn render_netdev(root: &Path, nd: &SimNetdev) -> io::Result<()> {
    remove_tree(&root.join("sys/class/net").join(&nd.name))?;
    update_netdev(root, nd)
}

/// Rewrites the values of an already rendered netdev in place (see [`update_device`]).
pub fn update_netdev(root: &Path, nd: &SimNetdev) -> io::Result<()> {
    let dir = root.join("sys/class/net").join(&nd.name);
    std::fs::create_dir_all(&dir)?;
    put(root, &dir.join("ifindex"), &nd.ifindex.to_string())?;
    put(root, &dir.join("type"), &nd.arphrd.to_string())?;
    put(
        root,
        &dir.join("address"),
        &HwAddress(nd.address.clone()).to_sysfs(),
    )?;
    put(root, &dir.join("mtu"), &nd.mtu.to_string())?;
    put(root, &dir.join("operstate"), nd.operstate())?;
    put(
        root,
        &dir.join("carrier"),
        if nd.carrier && nd.up { "1" } else { "0" },
    )?;
    // IFF_UP (0x1) with IFF_BROADCAST and IFF_MULTICAST, as `flags` prints them.
    put(
        root,
        &dir.join("flags"),
        if nd.up { "0x1003" } else { "0x1002" },
    )?;
    let devtype = match nd.link_kind.as_deref() {
        Some("vlan") => "DEVTYPE=vlan\n",
        _ => "",
    };
    put(
        root,
        &dir.join("uevent"),
        &format!("{devtype}INTERFACE={}\nIFINDEX={}", nd.name, nd.ifindex),
    )?;
    let stats = dir.join("statistics");
    put(root, &stats.join("tx_bytes"), &nd.tx_bytes.to_string())?;
    put(root, &stats.join("rx_bytes"), &nd.rx_bytes.to_string())?;
    put(root, &stats.join("tx_packets"), &nd.tx_packets.to_string())?;
    put(root, &stats.join("rx_packets"), &nd.rx_packets.to_string())?;
    if let Some(pci) = &nd.pci_address {
        symlink(&format!("../../../devices/pci/{pci}"), &dir.join("device"))?;
        std::fs::create_dir_all(pci_dir(root, pci).join("net").join(&nd.name))?;
    }
    if let (Some(ib), ARPHRD_INFINIBAND) = (&nd.ipoib, nd.arphrd) {
        put(
            root,
            &dir.join("dev_port"),
            &(ib.port.saturating_sub(1)).to_string(),
        )?;
        put(
            root,
            &dir.join("dev_id"),
            &format!("0x{:x}", ib.port.saturating_sub(1)),
        )?;
        if ib.legacy_files {
            put(root, &dir.join("pkey"), &format!("0x{:04x}", ib.pkey))?;
            put(root, &dir.join("mode"), ib.mode.as_str())?;
            put(root, &dir.join("umcast"), if ib.umcast { "1" } else { "0" })?;
            if let Some(parent) = &ib.parent {
                put(root, &dir.join("parent"), parent)?;
            }
        }
    }
    Ok(())
}

pub fn remove_netdev(root: &Path, nd: &SimNetdev) -> io::Result<()> {
    if let Some(pci) = &nd.pci_address {
        remove_tree(&pci_dir(root, pci).join("net").join(&nd.name))?;
    }
    remove_tree(&root.join("sys/class/net").join(&nd.name))
}

/// `/sys/module/<name>` for loaded modules.
pub fn render_module(root: &Path, module: &str, loaded: bool) -> io::Result<()> {
    let dir = root.join("sys/module").join(module);
    if loaded {
        std::fs::create_dir_all(dir)
    } else {
        remove_tree(&dir)
    }
}
