//! A port's umad device, for the InfiniBand ping (`linktest::ibping`): which
//! `/dev/infiniband/umadN` serves a device's port (`/sys/class/infiniband_mad/umadN/ibdev`
//! and `port`, as libibumad finds it), opened for reading and writing. Only root may open
//! it (rdma-core's udev rule leaves it 0600); the daemon opens it and hands the descriptor
//! to the unprivileged process that pings.

use std::os::fd::OwnedFd;
use std::path::Path;

use super::error::{HostError, Op};
use super::sysfs::SysRoot;

/// Every `umadN` entry the kernel lists, as (N, device, port); none without ib_umad.
fn entries(sys: &SysRoot) -> Result<Vec<(u32, String, u32)>, HostError> {
    let class = sys.root().join("sys/class/infiniband_mad");
    let dir = match std::fs::read_dir(&class) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(HostError::from_io(
                Op::ReadSysfs(class.display().to_string()),
                &e,
            ))
        }
    };
    let mut found = Vec::new();
    for entry in dir.flatten() {
        let Some(n) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.strip_prefix("umad"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let read = |f: &str| std::fs::read_to_string(entry.path().join(f)).unwrap_or_default();
        if let Ok(port) = read("port").trim().parse::<u32>() {
            found.push((n, read("ibdev").trim().to_string(), port));
        }
    }
    Ok(found)
}

/// The index N of `umadN` for `dev`'s `port`, if the kernel has one (ib_umad loaded, a port
/// with MADs: InfiniBand, RoCE; not iWARP).
pub fn find(sys: &SysRoot, dev: &str, port: u32) -> Result<Option<u32>, HostError> {
    Ok(entries(sys)?
        .into_iter()
        .find(|(_, d, p)| d == dev && *p == port)
        .map(|(n, _, _)| n))
}

/// The InfiniBand ports that have a umad device, as (device, port), sorted: where an
/// ibping responder can answer.
pub fn infiniband_ports(sys: &SysRoot) -> Result<Vec<(String, u32)>, HostError> {
    let mut ports: Vec<(String, u32)> = entries(sys)?
        .into_iter()
        .filter(|(_, dev, port)| {
            std::fs::read_to_string(sys.port_dir(dev, *port).join("link_layer"))
                .is_ok_and(|l| l.trim() == "InfiniBand")
        })
        .map(|(_, dev, port)| (dev, port))
        .collect();
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
