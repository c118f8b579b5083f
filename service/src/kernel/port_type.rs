//! The port type of VPI adapters (InfiniBand or Ethernet), where the driver or the firmware
//! holds it:
//!
//! - mlx4: `/sys/bus/pci/drivers/mlx4_core/<bdf>/mlx4_port<N>`, read and written at run
//!   time (the driver re-registers the device with the new types). The sysfs file rather
//!   than devlink's `port set ... type`: both end in the driver's `__set_port_type`, the file
//!   exists on every kernel mlx4 runs on and is what rdma-core's own `mlx4.conf` hook writes,
//!   so what the daemon does is what the distribution does at boot.
//! - mlx5: the firmware's `LINK_TYPE_P<N>`, read and staged through mstflint's `mstconfig`
//!   (`-e` for the current value beside the next boot's); it takes effect at the next boot.
//!   The card's ports are its PCI functions: function F's port is `LINK_TYPE_P<F+1>`.
//!
//! Readers are rooted at a [`SysRoot`] so that the simulated host's tree is read by the same
//! code.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

// Re-exported for the daemon's tests and clients of this crate.
pub use rdma_manager_model::port_type::{
    firmware_param, parse_mstconfig_query, FwLinkType, Mlx4PortValue, PortType, RunningType,
};

use super::sysfs::SysRoot;
use super::{HostError, Op};
use crate::model::Errno;

/// How a device's port type is changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PortTypeControl {
    /// At run time by the driver (mlx4).
    Runtime,
    /// In firmware, for the next boot (mlx5 through mstconfig).
    Firmware,
}

impl PortTypeControl {
    pub fn as_str(self) -> &'static str {
        match self {
            PortTypeControl::Runtime => "runtime",
            PortTypeControl::Firmware => "firmware",
        }
    }
}

/// One port's type as the driver or firmware tells it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortTypeReading {
    pub port: u32,
    /// What the port is set to now (`auto` for a sensing mlx4 port or VPI firmware).
    pub configured: PortType,
    /// What it runs, when the driver says.
    pub running: Option<RunningType>,
    /// What the firmware will apply at the next boot (firmware control only).
    pub next_boot: Option<PortType>,
}

impl PortTypeReading {
    /// Whether the firmware holds a value that the next boot applies and this one does not.
    pub fn reboot_needed(&self) -> bool {
        self.next_boot.is_some_and(|n| n != self.configured)
    }
}

/// The port types of one device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortTypes {
    pub control: PortTypeControl,
    pub ports: Vec<PortTypeReading>,
}

impl PortTypes {
    pub fn port(&self, n: u32) -> Option<&PortTypeReading> {
        self.ports.iter().find(|p| p.port == n)
    }
}

/// The mlx4_core directory of a PCI function.
pub fn mlx4_dir(sys: &SysRoot, bdf: &str) -> PathBuf {
    sys.root().join("sys/bus/pci/drivers/mlx4_core").join(bdf)
}

/// The mlx5_core directory of a PCI function.
pub fn mlx5_dir(sys: &SysRoot, bdf: &str) -> PathBuf {
    sys.root().join("sys/bus/pci/drivers/mlx5_core").join(bdf)
}

fn mlx4_file(dir: &Path, port: u32) -> PathBuf {
    dir.join(format!("mlx4_port{port}"))
}

/// The mlx4 ports of a function, in order (`None` when mlx4_core does not drive it).
pub fn read_mlx4(sys: &SysRoot, bdf: &str) -> Result<Option<Vec<Mlx4PortValue>>, HostError> {
    let dir = mlx4_dir(sys, bdf);
    if !dir.is_dir() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for port in 1.. {
        let path = mlx4_file(&dir, port);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) => {
                return Err(HostError::from_io(
                    Op::ReadSysfs(path.display().to_string()),
                    &e,
                ))
            }
        };
        let v = Mlx4PortValue::parse(&text).ok_or_else(|| HostError::Protocol {
            op: Op::ReadSysfs(path.display().to_string()),
            reason: format!("{:?} is not ib, eth or auto (ib|eth)", text.trim()),
        })?;
        out.push(v);
    }
    Ok(Some(out))
}

pub fn mlx4_readings(values: &[Mlx4PortValue]) -> PortTypes {
    PortTypes {
        control: PortTypeControl::Runtime,
        ports: values
            .iter()
            .zip(1..)
            .map(|(v, port)| PortTypeReading {
                port,
                configured: v.configured,
                running: Some(v.running),
                next_boot: None,
            })
            .collect(),
    }
}

/// Writes one mlx4 port's type (the driver checks the combination and answers EOPNOTSUPP
/// or EINVAL when the card cannot run it).
pub fn write_mlx4(sys: &SysRoot, bdf: &str, port: u32, ty: PortType) -> Result<(), HostError> {
    let path = mlx4_file(&mlx4_dir(sys, bdf), port);
    let op = Op::WriteSysfs(path.display().to_string());
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .map_err(|e| HostError::from_io(op.clone(), &e))?;
    std::io::Write::write_all(&mut f, ty.sysfs_write_form().as_bytes())
        .map_err(|e| HostError::from_io(op, &e))
}

/// The firmware parameter index of a PCI function (`0000:03:00.1` is `LINK_TYPE_P2`).
pub fn firmware_port(bdf: &str) -> Option<u32> {
    // An SF's auxiliary device (`mlx5_core.sf.2`) is no PCI function of its own.
    if !bdf.contains(':') {
        return None;
    }
    let func = bdf.rsplit_once('.')?.1;
    func.parse::<u32>().ok().map(|f| f + 1)
}

/// How long mstconfig may take: it reads the firmware's configuration over the PCI
/// configuration space, which is slow but bounded.
pub const MSTCONFIG_TIMEOUT: Duration = Duration::from_secs(60);

/// The program that speaks to the firmware, when installed (Debian package mstflint).
pub fn find_mstconfig() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|d| d.join("mstconfig"))
        .find(|p| p.is_file())
}

/// What an mlx5 function lacks to have its link type read or set.
pub fn mstconfig_missing() -> HostError {
    HostError::Unsupported {
        what: "the firmware link type (LINK_TYPE_P<N>)".into(),
        why: "mstconfig is not installed (Debian and Ubuntu package mstflint, RHEL mstflint)"
            .into(),
    }
}

fn tool_op(args: &[String]) -> Op {
    Op::File(format!("mstconfig {}", args.join(" ")))
}

async fn run_mstconfig(program: &Path, args: Vec<String>) -> Result<String, HostError> {
    let run = tokio::process::Command::new(program)
        .args(&args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(MSTCONFIG_TIMEOUT, run)
        .await
        .map_err(|_| HostError::Command {
            op: tool_op(&args),
            reason: format!("no answer within {} s", MSTCONFIG_TIMEOUT.as_secs()),
        })?
        .map_err(|e| HostError::Command {
            op: tool_op(&args),
            reason: format!("cannot run {}: {e}", program.display()),
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        // mstconfig prints its errors ("-E- ...") on stdout.
        let said = format!("{}{}", stdout, String::from_utf8_lossy(&out.stderr));
        return Err(HostError::Command {
            op: tool_op(&args),
            reason: format!("{} ({})", out.status, said.trim()),
        });
    }
    Ok(stdout)
}

/// The firmware link type of an mlx5 function's port: current and next boot.
pub async fn read_firmware(program: &Path, bdf: &str) -> Result<PortTypes, HostError> {
    let n = firmware_port(bdf)
        .ok_or_else(|| HostError::Invalid(format!("{bdf} is not a PCI address")))?;
    let param = firmware_param(n);
    let args = vec![
        "-e".to_string(),
        "-d".to_string(),
        bdf.to_string(),
        "query".to_string(),
        param.clone(),
    ];
    let out = run_mstconfig(program, args.clone()).await?;
    let q = parse_mstconfig_query(&out, &param).map_err(|reason| HostError::Protocol {
        op: tool_op(&args),
        reason,
    })?;
    Ok(firmware_readings(q.current, q.next_boot))
}

/// One mlx5 port from the firmware's values (the current one unknown: the next boot's
/// stands for it, as the device has not been told otherwise).
pub fn firmware_readings(current: Option<FwLinkType>, next: FwLinkType) -> PortTypes {
    let configured = current.unwrap_or(next).as_port_type();
    PortTypes {
        control: PortTypeControl::Firmware,
        ports: vec![PortTypeReading {
            port: 1,
            configured,
            running: match configured {
                PortType::Ib => Some(RunningType::Ib),
                PortType::Eth => Some(RunningType::Eth),
                PortType::Auto => None,
            },
            next_boot: Some(next.as_port_type()),
        }],
    }
}

/// Stages an mlx5 function's link type for the next boot (`mstconfig -y -d BDF set
/// LINK_TYPE_P<N>=<1|2|3>`).
pub async fn set_firmware(program: &Path, bdf: &str, ty: PortType) -> Result<(), HostError> {
    let n = firmware_port(bdf)
        .ok_or_else(|| HostError::Invalid(format!("{bdf} is not a PCI address")))?;
    let args = vec![
        "-y".to_string(),
        "-d".to_string(),
        bdf.to_string(),
        "set".to_string(),
        format!("{}={}", firmware_param(n), ty.firmware_value().value()),
    ];
    run_mstconfig(program, args).await.map(|_| ())
}

/// The refusal for a function neither mlx4 nor mlx5 drives.
pub fn no_port_type(bdf: &str) -> HostError {
    HostError::Unsupported {
        what: format!("a port type for {bdf}"),
        why: "its driver has none (only mlx4 switches ports at run time and mlx5 in firmware)"
            .into(),
    }
}

/// The errno a driver refusal came with, if it was one (EOPNOTSUPP: the card cannot run
/// that combination or sense the type).
pub fn refused_by_driver(e: &HostError) -> bool {
    matches!(e.errno(), Some(Errno::EOPNOTSUPP) | Some(Errno::EINVAL))
}

/// The port types of a PCI function, read and set; part of [`super::Host`].
#[async_trait::async_trait]
pub trait PortTypeHost: Send + Sync {
    /// The port types of the PCI function `pci`: mlx4's from the driver, mlx5's from the
    /// firmware (current and next boot). `Unsupported` for a function whose driver has none,
    /// or an mlx5 function when mstconfig is not installed.
    async fn port_types(&self, pci: &str) -> Result<PortTypes, HostError>;
    /// Sets one port's type now (mlx4) or stages it for the next boot (mlx5).
    async fn set_port_type(
        &self,
        pci: &str,
        port: u32,
        ty: rdma_manager_model::port_type::PortType,
    ) -> Result<(), HostError>;
}

#[async_trait::async_trait]
impl PortTypeHost for super::linux::LinuxHost {
    async fn port_types(&self, pci: &str) -> Result<PortTypes, HostError> {
        let bdf = pci.to_string();
        let mlx4 = self
            .blocking(Op::ReadSysfs(format!("mlx4_core/{pci}")), move |s| {
                read_mlx4(&s, &bdf)
            })
            .await?;
        if let Some(v) = mlx4 {
            return Ok(mlx4_readings(&v));
        }
        if mlx5_dir(&self.sys, pci).is_dir() {
            let program = find_mstconfig().ok_or_else(mstconfig_missing)?;
            return read_firmware(&program, pci).await;
        }
        Err(no_port_type(pci))
    }

    async fn set_port_type(
        &self,
        pci: &str,
        port: u32,
        ty: rdma_manager_model::port_type::PortType,
    ) -> Result<(), HostError> {
        if mlx4_dir(&self.sys, pci).is_dir() {
            let bdf = pci.to_string();
            return self
                .blocking(Op::WriteSysfs(format!("mlx4_core/{pci}")), move |s| {
                    write_mlx4(&s, &bdf, port, ty)
                })
                .await;
        }
        if mlx5_dir(&self.sys, pci).is_dir() {
            let program = find_mstconfig().ok_or_else(mstconfig_missing)?;
            return set_firmware(&program, pci, ty).await;
        }
        Err(no_port_type(pci))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mlx4_tree_reads_and_writes() {
        let dir = tempfile::tempdir().unwrap();
        let sys = SysRoot::new(dir.path());
        assert_eq!(read_mlx4(&sys, "0000:04:00.0").unwrap(), None);
        let d = mlx4_dir(&sys, "0000:04:00.0");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("mlx4_port1"), "ib\n").unwrap();
        std::fs::write(d.join("mlx4_port2"), "auto (eth)\n").unwrap();
        let v = read_mlx4(&sys, "0000:04:00.0").unwrap().unwrap();
        let r = mlx4_readings(&v);
        assert_eq!(r.ports.len(), 2);
        assert_eq!(r.ports[1].configured, PortType::Auto);
        assert_eq!(r.ports[1].running, Some(RunningType::Eth));
        write_mlx4(&sys, "0000:04:00.0", 1, PortType::Eth).unwrap();
        assert_eq!(
            std::fs::read_to_string(d.join("mlx4_port1")).unwrap(),
            "eth\n"
        );
        std::fs::write(d.join("mlx4_port1"), "roce\n").unwrap();
        assert!(read_mlx4(&sys, "0000:04:00.0").is_err());
    }

    #[test]
    fn a_function_is_its_firmware_port() {
        assert_eq!(firmware_port("0000:03:00.0"), Some(1));
        assert_eq!(firmware_port("0000:03:00.1"), Some(2));
        assert_eq!(firmware_port("mlx5_core.sf.2"), None);
        let r = firmware_readings(Some(FwLinkType::Ib), FwLinkType::Eth);
        assert!(r.ports[0].reboot_needed());
        assert!(!firmware_readings(None, FwLinkType::Eth).ports[0].reboot_needed());
    }
}
