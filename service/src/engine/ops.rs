//! Mutations, run by the engine one at a time: each is checked before it reaches the kernel,
//! and the kernel's refusals become errors that say what to do.

use crate::kernel::{HostError, NewLink};
use crate::model::names::{validate_netdev_name, validate_rdma_name};
use crate::model::softlink::{classify_newlink_error, NewLinkContext};
use crate::model::{DeviceKind, Errno, SoftLinkError, SoftLinkType};

use super::Engine;

/// Why a mutation was refused; the D-Bus layer maps each kind to an error name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpError {
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    NotSupported(String),
    #[error("{0}")]
    AlreadyExists(String),
    #[error("{0}")]
    Busy(String),
    #[error("{0}")]
    Failed(String),
}

impl OpError {
    /// A kernel error with no more specific meaning in context.
    pub fn from_host(e: HostError) -> OpError {
        match &e {
            HostError::NotFound(_) => OpError::NotFound(e.to_string()),
            HostError::Unsupported { .. } => OpError::NotSupported(e.to_string()),
            HostError::Invalid(_) => OpError::InvalidArgument(e.to_string()),
            HostError::Kernel { errno, .. } => match *errno {
                Errno::EEXIST => OpError::AlreadyExists(e.to_string()),
                Errno::EBUSY => OpError::Busy(e.to_string()),
                Errno::ENODEV | Errno::ENOENT | Errno::ENXIO => OpError::NotFound(e.to_string()),
                Errno::EOPNOTSUPP => OpError::NotSupported(e.to_string()),
                Errno::EINVAL => OpError::InvalidArgument(e.to_string()),
                _ => OpError::Failed(e.to_string()),
            },
            HostError::Protocol { .. } => OpError::Failed(e.to_string()),
        }
    }
}

impl From<SoftLinkError> for OpError {
    fn from(e: SoftLinkError) -> OpError {
        let m = e.to_string();
        match e {
            SoftLinkError::NameTaken(_) | SoftLinkError::NetdevHasLink { .. } => {
                OpError::AlreadyExists(m)
            }
            SoftLinkError::UnknownNetdev(_) => OpError::NotFound(m),
            SoftLinkError::VlanNetdev(_) => OpError::InvalidArgument(m),
            SoftLinkError::TypeUnavailable { .. } => OpError::NotSupported(m),
            SoftLinkError::Kernel(_) => OpError::Failed(m),
        }
    }
}

impl Engine {
    pub(super) async fn add_soft_link(
        &mut self,
        name: &str,
        kind: &str,
        netdev: &str,
    ) -> Result<u32, OpError> {
        let kind = SoftLinkType::parse(kind).ok_or_else(|| {
            OpError::InvalidArgument(format!(
                "link type {kind:?} is not known; use \"rxe\" (Soft-RoCE) or \"siw\" (Soft-iWARP)"
            ))
        })?;
        validate_rdma_name(name)
            .map_err(|e| OpError::InvalidArgument(format!("{e} (RDMA device name {name:?})")))?;
        validate_netdev_name(netdev).map_err(|e| {
            OpError::InvalidArgument(format!("{e} (network interface name {netdev:?})"))
        })?;
        let link = NewLink {
            name: name.to_string(),
            kind,
            netdev: netdev.to_string(),
        };
        if let Err(e) = self.host.add_link(&link).await {
            return Err(self.explain_newlink(e, &link).await);
        }
        self.settle(&[name]).await?;
        self.state
            .device_by_name(name)
            .map(|d| d.index)
            .ok_or_else(|| {
                OpError::Failed(format!(
                    "the kernel accepted {name} but it vanished before it could be published"
                ))
            })
    }

    /// Gives a NEWLINK errno its meaning from what the host looks like now.
    async fn explain_newlink(&self, e: HostError, link: &NewLink) -> OpError {
        let Some(errno) = e.errno() else {
            return OpError::from_host(e);
        };
        let devices: Vec<String> = match self.host.rdma_device_names().await {
            Ok(d) => d,
            Err(_) => self
                .state
                .devices
                .values()
                .map(|d| d.name().to_string())
                .collect(),
        };
        let nd = self.host.read_netdev(&link.netdev).await.ok();
        let existing_on_netdev = self
            .state
            .devices
            .values()
            .find(|d| d.snap.parent_netdev.as_deref() == Some(link.netdev.as_str()))
            .map(|d| d.name().to_string());
        let type_loaded = self
            .host
            .module_loaded(link.kind.module())
            .await
            .unwrap_or(false);
        let ctx = NewLinkContext {
            name: &link.name,
            kind: link.kind,
            netdev: &link.netdev,
            devices: &devices,
            existing_on_netdev,
            netdev_exists: nd.is_some(),
            netdev_is_vlan: nd.as_ref().is_some_and(|n| n.is_vlan()),
            type_loaded,
        };
        classify_newlink_error(errno, &ctx).into()
    }

    pub(super) async fn remove_soft_link(&mut self, name: &str) -> Result<(), OpError> {
        validate_rdma_name(name)
            .map_err(|e| OpError::InvalidArgument(format!("{e} (RDMA device name {name:?})")))?;
        let dev = self
            .state
            .device_by_name(name)
            .ok_or_else(|| OpError::NotFound(format!("there is no RDMA device named {name:?}")))?;
        if !matches!(dev.snap.kind, DeviceKind::Rxe | DeviceKind::Siw) {
            return Err(OpError::InvalidArgument(format!(
                "{name} is not a soft RDMA link (rxe or siw); hardware devices go away with their driver, not with RemoveSoftLink"
            )));
        }
        let index = dev.index;
        self.host
            .delete_link(index)
            .await
            .map_err(OpError::from_host)?;
        self.settle(&[name]).await
    }
}
