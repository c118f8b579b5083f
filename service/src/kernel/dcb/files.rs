//! mlx5's RoCE QoS files: the device's `tc/1/traffic_class` and the netdev's
//! `ecn/roce_np/enable/<prio>` and `ecn/roce_rp/enable/<prio>` (notification point: send
//! CNPs for ECN-marked packets; reaction point: slow down on CNPs). Other drivers have none
//! of them, which is `Ok(None)`, not an error.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::kernel::sysfs::SysRoot;
use crate::kernel::{HostError, Op};

fn read_opt(path: &Path) -> Result<Option<String>, HostError> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(HostError::from_io(
            Op::ReadSysfs(path.display().to_string()),
            &e,
        )),
    }
}

fn write(path: &Path, value: &str) -> Result<(), HostError> {
    let op = Op::WriteSysfs(path.display().to_string());
    if !path.exists() {
        return Err(HostError::Unsupported {
            what: path.display().to_string(),
            why: "the driver has no such file".into(),
        });
    }
    std::fs::write(path, value).map_err(|e| HostError::from_io(op, &e))
}

pub fn traffic_class_path(sys: &SysRoot, dev: &str) -> PathBuf {
    sys.device_dir(dev).join("tc/1/traffic_class")
}

/// The traffic class: `Ok(None)` without the file, `Some(-1)` when none is set. mlx5
/// prints `Global tclass=106` (or the bare number on some releases).
pub fn read_traffic_class(sys: &SysRoot, dev: &str) -> Result<Option<i32>, HostError> {
    let path = traffic_class_path(sys, dev);
    let Some(text) = read_opt(&path)? else {
        return Ok(None);
    };
    Ok(Some(parse_traffic_class(&text)))
}

/// The number after the last `=` (or the whole text); -1 when there is none.
pub fn parse_traffic_class(text: &str) -> i32 {
    let t = text.trim();
    let num = t.rsplit('=').next().unwrap_or(t).trim();
    num.parse::<i32>()
        .ok()
        .filter(|n| (0..=255).contains(n))
        .unwrap_or(-1)
}

pub fn write_traffic_class(sys: &SysRoot, dev: &str, tc: i32) -> Result<(), HostError> {
    write(&traffic_class_path(sys, dev), &format!("{tc}\n"))
}

fn ecn_path(sys: &SysRoot, netdev: &str, point: &str, prio: u8) -> PathBuf {
    sys.netdev_dir(netdev)
        .join("ecn")
        .join(point)
        .join("enable")
        .join(prio.to_string())
}

/// Bit p set when both points are enabled for priority p; `Ok(None)` without `ecn/`.
pub fn read_ecn(sys: &SysRoot, netdev: &str) -> Result<Option<u8>, HostError> {
    let mut mask = 0u8;
    for prio in 0..super::ECN_PRIORITIES {
        let mut both = true;
        for point in ["roce_np", "roce_rp"] {
            match read_opt(&ecn_path(sys, netdev, point, prio))? {
                None => return Ok(None),
                Some(t) => both &= t.trim() == "1",
            }
        }
        if both {
            mask |= 1 << prio;
        }
    }
    Ok(Some(mask))
}

pub fn write_ecn(sys: &SysRoot, netdev: &str, mask: u8) -> Result<(), HostError> {
    for prio in 0..super::ECN_PRIORITIES {
        let v = if mask & (1 << prio) != 0 {
            "1\n"
        } else {
            "0\n"
        };
        for point in ["roce_np", "roce_rp"] {
            write(&ecn_path(sys, netdev, point, prio), v)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traffic_class_text() {
        assert_eq!(parse_traffic_class("Global tclass=106\n"), 106);
        assert_eq!(parse_traffic_class("106\n"), 106);
        assert_eq!(parse_traffic_class(""), -1);
    }

    #[test]
    fn ecn_files_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let sys = SysRoot::new(dir.path());
        assert_eq!(read_ecn(&sys, "eth0").unwrap(), None);
        for p in 0..8u8 {
            for point in ["roce_np", "roce_rp"] {
                let f = ecn_path(&sys, "eth0", point, p);
                std::fs::create_dir_all(f.parent().unwrap()).unwrap();
                std::fs::write(&f, "0\n").unwrap();
            }
        }
        write_ecn(&sys, "eth0", 0b1000).unwrap();
        assert_eq!(read_ecn(&sys, "eth0").unwrap(), Some(0b1000));
        assert_eq!(read_traffic_class(&sys, "mlx5_0").unwrap(), None);
    }
}
