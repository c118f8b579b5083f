//! A port's umad device, for the InfiniBand ping (`linktest::ibping`): which
//! `/dev/infiniband/umadN` serves a device's port (`/sys/class/infiniband_mad/umadN/ibdev`
//! and `port`, as libibumad finds it), opened for reading and writing. Only root may open
//! it (rdma-core's udev rule leaves it 0600); the daemon opens it and hands the descriptor
//! to the unprivileged process that pings.

use std::os::fd::OwnedFd;
use std::path::Path;

use super::error::{HostError, Op};
use super::sysfs::SysRoot;

/// The index N of `umadN` for `dev`'s `port`, if the kernel has one (ib_umad loaded, a port
/// with MADs: InfiniBand, RoCE; not iWARP).
pub fn find(sys: &SysRoot, dev: &str, port: u32) -> Result<Option<u32>, HostError> {
    let class = sys.root().join("sys/class/infiniband_mad");
    let entries = match std::fs::read_dir(&class) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(HostError::from_io(
                Op::ReadSysfs(class.display().to_string()),
                &e,
            ))
        }
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(n) = name
            .to_str()
            .and_then(|n| n.strip_prefix("umad"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let read = |f: &str| std::fs::read_to_string(entry.path().join(f)).unwrap_or_default();
        if read("ibdev").trim() == dev && read("port").trim().parse() == Ok(port) {
            return Ok(Some(n));
        }
    }
    Ok(None)
}

/// The InfiniBand ports that have a umad device, as (device, port), sorted: where an
/// ibping responder can answer.
pub fn infiniband_ports(sys: &SysRoot) -> Result<Vec<(String, u32)>, HostError> {
    let class = sys.root().join("sys/class/infiniband_mad");
    let entries = match std::fs::read_dir(&class) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(HostError::from_io(
                Op::ReadSysfs(class.display().to_string()),
                &e,
            ))
        }
    };
    let mut ports = Vec::new();
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with("umad") {
            continue;
        }
        let read = |f: &str| std::fs::read_to_string(entry.path().join(f)).unwrap_or_default();
        let (dev, Ok(port)) = (
            read("ibdev").trim().to_string(),
            read("port").trim().parse::<u32>(),
        ) else {
            continue;
        };
        let layer = std::fs::read_to_string(sys.port_dir(&dev, port).join("link_layer"))
            .unwrap_or_default();
        if layer.trim() == "InfiniBand" {
            ports.push((dev, port));
        }
    }
    ports.sort();
    Ok(ports)
}

/// Opens `dev`'s `port`'s umad device (close-on-exec: the sandbox puts it where the child
/// finds it).
pub fn open(sys: &SysRoot, dev: &str, port: u32) -> Result<OwnedFd, HostError> {
    let n = find(sys, dev, port)?.ok_or_else(|| HostError::Unsupported {
        what: format!("a umad device for {dev}/{port}"),
        why: "no /sys/class/infiniband_mad entry names the port (is ib_umad loaded?)".into(),
    })?;
    let path = sys.root().join(format!("dev/infiniband/umad{n}"));
    open_path(&path)
}

fn open_path(path: &Path) -> Result<OwnedFd, HostError> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map(OwnedFd::from)
        .map_err(|e| HostError::from_io(Op::File(path.display().to_string()), &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_is_found_by_its_device_and_number() {
        let root = tempfile::tempdir().unwrap();
        let sys = SysRoot::new(root.path());
        assert_eq!(find(&sys, "mlx5_0", 1).unwrap(), None);
        for (n, dev, port) in [(0, "mlx5_0", 1), (1, "mlx5_1", 1), (2, "mlx5_1", 2)] {
            let d = root
                .path()
                .join(format!("sys/class/infiniband_mad/umad{n}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("ibdev"), format!("{dev}\n")).unwrap();
            std::fs::write(d.join("port"), format!("{port}\n")).unwrap();
        }
        std::fs::create_dir_all(root.path().join("sys/class/infiniband_mad/issm0")).unwrap();
        // mlx5_1/2 is InfiniBand, mlx5_0/1 Ethernet (RoCE), mlx5_1/1 of no known layer.
        for (dev, port, layer) in [("mlx5_1", 2, "InfiniBand\n"), ("mlx5_0", 1, "Ethernet\n")] {
            let d = sys.port_dir(dev, port);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("link_layer"), layer).unwrap();
        }
        assert_eq!(
            infiniband_ports(&sys).unwrap(),
            vec![("mlx5_1".to_string(), 2)]
        );
        assert_eq!(find(&sys, "mlx5_1", 2).unwrap(), Some(2));
        assert_eq!(find(&sys, "mlx5_0", 1).unwrap(), Some(0));
        assert_eq!(find(&sys, "mlx5_0", 2).unwrap(), None);
        // Found, but no device node: the open names the path.
        let e = open(&sys, "mlx5_1", 1).unwrap_err();
        assert!(e.to_string().contains("dev/infiniband/umad1"), "{e}");
        assert!(matches!(
            open(&sys, "mlx5_0", 2),
            Err(HostError::Unsupported { .. })
        ));
    }
}
