//! rdma_cm's RoCE defaults of a port, `default_roce_mode` and `default_roce_tos` in configfs
//! (`/sys/kernel/config/rdma_cm/<dev>/ports/<n>/`): the host's reads and writes of them
//! ([`RoceHost`]) and the real host's, through the files. The simulated host's follow
//! `core/cma_configfs.c` in `sim/roce.rs`.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::Serialize;

use super::linux::LinuxHost;
use super::sysfs::{is_dir, list_dir, SysRoot};
use super::{HostError, Op};
use crate::model::attr::parse_dec;
use crate::model::RoceMode;

/// A RoCE port's defaults as the daemon holds them: its `default_roce_mode` and
/// `default_roce_tos`, or why each could not be read (rdma_cm not loaded, configfs not
/// mounted, the device gone).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortRoce {
    pub mode: Result<RoceMode, String>,
    pub tos: Result<u8, String>,
}

impl PortRoce {
    /// Reads both (reading makes `rdma_cm/<dev>` in configfs, as the kernel expects).
    pub async fn read(host: &(impl RoceHost + ?Sized), dev: &str, port: u32) -> PortRoce {
        let (mode, tos) = host.roce_defaults(dev, port).await;
        PortRoce {
            mode: mode.map_err(|e| e.to_string()),
            tos: tos.map_err(|e| e.to_string()),
        }
    }
}

/// What the daemon reads and writes of rdma_cm's configfs; part of [`super::Host`].
#[async_trait]
pub trait RoceHost: Send + Sync {
    /// `default_roce_mode` of a port, creating `rdma_cm/<dev>` if needed.
    async fn roce_mode(&self, dev: &str, port: u32) -> Result<RoceMode, HostError>;
    async fn set_roce_mode(&self, dev: &str, port: u32, mode: RoceMode) -> Result<(), HostError>;
    async fn roce_tos(&self, dev: &str, port: u32) -> Result<u8, HostError>;
    /// Both of a port's RoCE defaults: a host may read them in one trip (one check of the
    /// configfs directory instead of two, one blocking call).
    async fn roce_defaults(
        &self,
        dev: &str,
        port: u32,
    ) -> (Result<RoceMode, HostError>, Result<u8, HostError>) {
        (
            self.roce_mode(dev, port).await,
            self.roce_tos(dev, port).await,
        )
    }
    async fn set_roce_tos(&self, dev: &str, port: u32, tos: u8) -> Result<(), HostError>;
    /// Device directories present under `rdma_cm/` (they keep the name they were made with,
    /// even after the device is renamed).
    async fn roce_configfs_dirs(&self) -> Result<Vec<String>, HostError>;
}

#[async_trait]
impl RoceHost for LinuxHost {
    async fn roce_mode(&self, dev: &str, port: u32) -> Result<RoceMode, HostError> {
        let dev = dev.to_string();
        self.blocking(Op::Configfs(dev.clone()), move |s| s.roce_mode(&dev, port))
            .await
    }

    async fn set_roce_mode(&self, dev: &str, port: u32, mode: RoceMode) -> Result<(), HostError> {
        let dev = dev.to_string();
        self.blocking(Op::Configfs(dev.clone()), move |s| {
            s.set_roce_mode(&dev, port, mode)
        })
        .await
    }

    async fn roce_tos(&self, dev: &str, port: u32) -> Result<u8, HostError> {
        let dev = dev.to_string();
        self.blocking(Op::Configfs(dev.clone()), move |s| s.roce_tos(&dev, port))
            .await
    }

    async fn roce_defaults(
        &self,
        dev: &str,
        port: u32,
    ) -> (Result<RoceMode, HostError>, Result<u8, HostError>) {
        let dev = dev.to_string();
        let both = self
            .blocking(Op::Configfs(dev.clone()), move |s| {
                Ok(s.roce_defaults(&dev, port))
            })
            .await;
        match both {
            Ok(both) => both,
            Err(e) => (Err(e.clone()), Err(e)),
        }
    }

    async fn set_roce_tos(&self, dev: &str, port: u32, tos: u8) -> Result<(), HostError> {
        let dev = dev.to_string();
        self.blocking(Op::Configfs(dev.clone()), move |s| {
            s.set_roce_tos(&dev, port, tos)
        })
        .await
    }

    async fn roce_configfs_dirs(&self) -> Result<Vec<String>, HostError> {
        self.blocking(Op::Configfs("rdma_cm".into()), |s| s.roce_configfs_dirs())
            .await
    }
}

impl SysRoot {
    /// Device directories present under rdma_cm's configfs.
    pub fn roce_configfs_dirs(&self) -> Result<Vec<String>, HostError> {
        let dir = self.rdma_cm();
        if !is_dir(&dir) {
            return Err(self.rdma_cm_missing());
        }
        list_dir(&dir).map_err(|e| HostError::from_io(Op::Configfs(dir.display().to_string()), &e))
    }

    /// The port directory of rdma_cm's configfs for `dev`, made with `mkdir` as the kernel
    /// wants (ENODEV when no such RDMA device).
    pub fn roce_port_dir(&self, dev: &str, port: u32) -> Result<PathBuf, HostError> {
        let cm = self.rdma_cm();
        if !is_dir(&cm) {
            return Err(self.rdma_cm_missing());
        }
        let dev_dir = cm.join(dev);
        match std::fs::create_dir(&dev_dir) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(HostError::from_io(
                    Op::Configfs(format!("mkdir rdma_cm/{dev}")),
                    &e,
                ))
            }
        }
        let port_dir = dev_dir.join("ports").join(port.to_string());
        if !is_dir(&port_dir) {
            return Err(HostError::NotFound(format!(
                "port {port} of RDMA device {dev}"
            )));
        }
        Ok(port_dir)
    }

    pub fn roce_mode(&self, dev: &str, port: u32) -> Result<RoceMode, HostError> {
        self.roce_mode_in(&self.roce_port_dir(dev, port)?)
    }

    /// Both RoCE defaults of a port, its configfs directory made and checked once.
    pub fn roce_defaults(
        &self,
        dev: &str,
        port: u32,
    ) -> (Result<RoceMode, HostError>, Result<u8, HostError>) {
        match self.roce_port_dir(dev, port) {
            Ok(dir) => (self.roce_mode_in(&dir), self.roce_tos_in(&dir)),
            Err(e) => (Err(e.clone()), Err(e)),
        }
    }

    fn roce_mode_in(&self, port_dir: &Path) -> Result<RoceMode, HostError> {
        let path = port_dir.join("default_roce_mode");
        let raw = std::fs::read_to_string(&path).map_err(|e| {
            HostError::from_io(Op::Configfs(format!("read {}", path.display())), &e)
        })?;
        RoceMode::parse_configfs(&raw).map_err(|e| HostError::Protocol {
            op: Op::Configfs(path.display().to_string()),
            reason: e.to_string(),
        })
    }

    pub fn set_roce_mode(&self, dev: &str, port: u32, mode: RoceMode) -> Result<(), HostError> {
        let path = self.roce_port_dir(dev, port)?.join("default_roce_mode");
        std::fs::write(&path, mode.configfs_str())
            .map_err(|e| HostError::from_io(Op::Configfs(format!("write {}", path.display())), &e))
    }

    pub fn roce_tos(&self, dev: &str, port: u32) -> Result<u8, HostError> {
        self.roce_tos_in(&self.roce_port_dir(dev, port)?)
    }

    fn roce_tos_in(&self, port_dir: &Path) -> Result<u8, HostError> {
        let path = port_dir.join("default_roce_tos");
        let raw = std::fs::read_to_string(&path).map_err(|e| {
            HostError::from_io(Op::Configfs(format!("read {}", path.display())), &e)
        })?;
        parse_dec::<u8>(&raw).map_err(|e| HostError::Protocol {
            op: Op::Configfs(path.display().to_string()),
            reason: e.to_string(),
        })
    }

    pub fn set_roce_tos(&self, dev: &str, port: u32, tos: u8) -> Result<(), HostError> {
        let path = self.roce_port_dir(dev, port)?.join("default_roce_tos");
        std::fs::write(&path, tos.to_string())
            .map_err(|e| HostError::from_io(Op::Configfs(format!("write {}", path.display())), &e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_roce_defaults_are_read_as_each_alone() -> std::io::Result<()> {
        use crate::model::RoceMode;
        let tmp = tempfile::tempdir()?;
        let sys = SysRoot::new(tmp.path().to_path_buf());
        let cm = tmp.path().join("sys/kernel/config/rdma_cm");
        std::fs::create_dir_all(&cm)?;
        // No port directory (a plain directory where configfs would make one): both fail the
        // same way, and the device's directory was made, as reading one would.
        let (mode, tos) = sys.roce_defaults("rxe0", 1);
        assert!(matches!(mode, Err(HostError::NotFound(_))), "{mode:?}");
        assert!(matches!(tos, Err(HostError::NotFound(_))), "{tos:?}");
        assert!(cm.join("rxe0").is_dir());
        let port = cm.join("rxe0/ports/1");
        std::fs::create_dir_all(&port)?;
        std::fs::write(port.join("default_roce_mode"), "RoCE v2\n")?;
        std::fs::write(port.join("default_roce_tos"), "106\n")?;
        let (mode, tos) = sys.roce_defaults("rxe0", 1);
        assert_eq!(mode, Ok(RoceMode::V2));
        assert_eq!(tos, Ok(106));
        assert_eq!(mode, sys.roce_mode("rxe0", 1));
        assert_eq!(tos, sys.roce_tos("rxe0", 1));
        // One file unreadable: only its half fails.
        std::fs::write(port.join("default_roce_mode"), "RoCE v3\n")?;
        let (mode, tos) = sys.roce_defaults("rxe0", 1);
        assert!(matches!(mode, Err(HostError::Protocol { .. })), "{mode:?}");
        assert_eq!(tos, Ok(106));
        Ok(())
    }
}
