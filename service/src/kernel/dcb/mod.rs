//! DCB netlink (the kernel's vendor-neutral interface to PFC, ETS, the app table and the
//! trust order; what iproute2's `dcb` speaks) and the RoCE QoS files of mlx5's sysfs.
//!
//! - [`wire`]: the requests, built by pure functions equal to iproute2's, and the answers.
//! - [`DcbClient`]: one rtnetlink socket, one request at a time (blocking: the Linux host
//!   runs it through `spawn_blocking`).
//!
//! A netdev without DCB (veth, dummy, lo, rxe's netdev) has no `dcbnl_ops`, and the kernel
//! answers every DCB request with EOPNOTSUPP before looking at it: that is
//! [`HostError::Unsupported`] carrying the errno and any extended-ack message.

pub mod files;
#[cfg(test)]
mod tests;
pub mod wire;

use std::sync::Mutex;

use netlink_sys::protocols::NETLINK_ROUTE;
use serde::Serialize;

use super::error::kernel_answered;
use super::nldev::socket::AckedSocket;
use super::{HostError, Op};
use crate::model::Errno;

pub use wire::{DcbApp, DcbConfig, IeeeEts, IeeePfc};

/// One change of a netdev's DCB state; each is one request, as one `dcb` command sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum DcbChange {
    /// `dcb ets set`: the whole `struct ieee_ets` (bytes).
    Ets(Vec<u8>),
    /// `dcb pfc set`: the whole `struct ieee_pfc` (bytes).
    Pfc(Vec<u8>),
    /// `dcb app add`: (selector, priority, protocol) entries.
    AddApps(Vec<(u8, u8, u16)>),
    /// `dcb app del`.
    DelApps(Vec<(u8, u8, u16)>),
    /// `dcb apptrust set order ...`: selectors.
    Trust(Vec<u8>),
}

impl DcbChange {
    /// The complete request (sequence number 0).
    pub fn request(&self, ifname: &str) -> Result<Vec<u8>, HostError> {
        let apps = |v: &[(u8, u8, u16)]| -> Vec<DcbApp> {
            v.iter()
                .map(|&(selector, priority, protocol)| DcbApp {
                    selector,
                    priority,
                    protocol,
                })
                .collect()
        };
        let bad = |e: super::nldev::attr::WireError| HostError::Invalid(e.to_string());
        Ok(match self {
            DcbChange::Ets(b) => {
                wire::ieee_set_ets_request(ifname, &IeeeEts::from_bytes(b).map_err(bad)?)
            }
            DcbChange::Pfc(b) => {
                wire::ieee_set_pfc_request(ifname, &IeeePfc::from_bytes(b).map_err(bad)?)
            }
            DcbChange::AddApps(v) => wire::ieee_add_apps_request(ifname, &apps(v)),
            DcbChange::DelApps(v) => wire::ieee_del_apps_request(ifname, &apps(v)),
            DcbChange::Trust(s) => wire::ieee_set_apptrust_request(ifname, s),
        })
    }

    /// What iproute2 command this is, for messages.
    pub fn what(&self) -> &'static str {
        match self {
            DcbChange::Ets(_) => "ETS",
            DcbChange::Pfc(_) => "PFC",
            DcbChange::AddApps(_) => "app table (add)",
            DcbChange::DelApps(_) => "app table (delete)",
            DcbChange::Trust(_) => "trust order",
        }
    }
}

/// The kernel's refusal of a DCB request on `ifname`, with its reason: EOPNOTSUPP (no DCB,
/// or not this part of it) is [`HostError::Unsupported`]; other errnos stay kernel errors.
pub fn refusal(ifname: &str, what: &str, errno: Errno, extack: Option<&str>) -> HostError {
    if errno == Errno::EOPNOTSUPP {
        return HostError::Unsupported {
            what: format!("DCB {what} on {ifname}"),
            why: kernel_answered(errno, extack),
        };
    }
    HostError::kernel(Op::Rtnl("dcb"), errno)
}

/// The blocking DCB client.
pub struct DcbClient {
    inner: Mutex<AckedSocket>,
}

impl std::fmt::Debug for DcbClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DcbClient").finish_non_exhaustive()
    }
}

impl DcbClient {
    pub fn open() -> Result<DcbClient, HostError> {
        Ok(DcbClient {
            inner: Mutex::new(AckedSocket::open(NETLINK_ROUTE, Op::Rtnl("dcb socket"))?),
        })
    }

    /// DCB_CMD_IEEE_GET of `ifname`.
    pub fn get(&self, ifname: &str) -> Result<DcbConfig, HostError> {
        let body = self
            .transact(ifname, "read", wire::ieee_get_request(ifname))?
            .ok_or_else(|| HostError::Protocol {
                op: Op::Rtnl("dcb get"),
                reason: "no answer before the acknowledgement".into(),
            })?;
        wire::parse_ieee_get(&body).map_err(|e| HostError::Protocol {
            op: Op::Rtnl("dcb get"),
            reason: e.to_string(),
        })
    }

    /// One change; the kernel's verdict comes in the answer's DCB_ATTR_IEEE or as the
    /// acknowledgement's errno.
    pub fn set(&self, ifname: &str, change: &DcbChange) -> Result<(), HostError> {
        let req = change.request(ifname)?;
        if let Some(body) = self.transact(ifname, change.what(), req)? {
            let errno = wire::set_reply_errno(&body).map_err(|e| HostError::Protocol {
                op: Op::Rtnl("dcb set"),
                reason: e.to_string(),
            })?;
            if errno != 0 {
                return Err(refusal(ifname, change.what(), Errno(errno), None));
            }
        }
        Ok(())
    }

    /// Sends a request and returns the body of its data answer, if any, once acknowledged.
    fn transact(
        &self,
        ifname: &str,
        what: &str,
        req: Vec<u8>,
    ) -> Result<Option<Vec<u8>>, HostError> {
        let mut sock = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        sock.transact(req, Op::Rtnl("dcb"), &|errno, extack| {
            refusal(ifname, what, errno, extack)
        })
    }
}

/// mlx5's RoCE ECN switches (`/sys/class/net/<if>/ecn/roce_np/enable/<prio>` and
/// `roce_rp/enable/<prio>`): bit p set when both the notification point and the reaction
/// point are enabled for priority p.
pub const ECN_PRIORITIES: u8 = 8;

/// A port's DCB, pause and mlx5 RoCE QoS files, read and set; part of [`super::Host`].
#[async_trait::async_trait]
pub trait QosHost: Send + Sync {
    /// DCB_CMD_IEEE_GET of a netdev (what `dcb pfc|ets|app show dev NETDEV` reads). A netdev
    /// without DCB is [`HostError::Unsupported`] with the kernel's EOPNOTSUPP.
    async fn dcb_read(&self, netdev: &str) -> Result<DcbConfig, HostError>;
    /// Link-level pause of a netdev and its frame counters (ethtool's PAUSE_GET with
    /// statistics). A netdev whose driver has no pause is [`HostError::Unsupported`] with the
    /// kernel's EOPNOTSUPP.
    async fn pause_stats(&self, netdev: &str) -> Result<super::ethtool::PauseStats, HostError>;
    /// One DCB change (one `dcb ... set/add/del` request).
    async fn dcb_change(&self, netdev: &str, change: &DcbChange) -> Result<(), HostError>;
    /// mlx5's `tc/1/traffic_class` of an RDMA device: `Ok(None)` without the file, -1 when
    /// none is set.
    async fn roce_traffic_class(&self, dev: &str) -> Result<Option<i32>, HostError>;
    async fn set_roce_traffic_class(&self, dev: &str, tc: i32) -> Result<(), HostError>;
    /// mlx5's RoCE ECN of a netdev as a mask of priorities (see `dcb::files`); `Ok(None)`
    /// when the driver has no `ecn/` directory.
    async fn roce_ecn(&self, netdev: &str) -> Result<Option<u8>, HostError>;
    async fn set_roce_ecn(&self, netdev: &str, mask: u8) -> Result<(), HostError>;
}

#[async_trait::async_trait]
impl QosHost for super::linux::LinuxHost {
    async fn dcb_read(&self, netdev: &str) -> Result<DcbConfig, HostError> {
        let n = netdev.to_string();
        self.blocking(Op::Rtnl("dcb"), move |_| DcbClient::open()?.get(&n))
            .await
    }

    async fn pause_stats(&self, netdev: &str) -> Result<super::ethtool::PauseStats, HostError> {
        let n = netdev.to_string();
        self.blocking(Op::Genl("ethtool"), move |_| super::ethtool::read_pause(&n))
            .await
    }

    async fn dcb_change(&self, netdev: &str, change: &DcbChange) -> Result<(), HostError> {
        let (n, c) = (netdev.to_string(), change.clone());
        self.blocking(Op::Rtnl("dcb"), move |_| DcbClient::open()?.set(&n, &c))
            .await
    }

    async fn roce_traffic_class(&self, dev: &str) -> Result<Option<i32>, HostError> {
        let d = dev.to_string();
        self.blocking(Op::ReadSysfs(d.clone()), move |s| {
            files::read_traffic_class(&s, &d)
        })
        .await
    }

    async fn set_roce_traffic_class(&self, dev: &str, tc: i32) -> Result<(), HostError> {
        let d = dev.to_string();
        self.blocking(Op::WriteSysfs(d.clone()), move |s| {
            files::write_traffic_class(&s, &d, tc)
        })
        .await
    }

    async fn roce_ecn(&self, netdev: &str) -> Result<Option<u8>, HostError> {
        let n = netdev.to_string();
        self.blocking(Op::ReadSysfs(n.clone()), move |s| files::read_ecn(&s, &n))
            .await
    }

    async fn set_roce_ecn(&self, netdev: &str, mask: u8) -> Result<(), HostError> {
        let n = netdev.to_string();
        self.blocking(Op::WriteSysfs(n.clone()), move |s| {
            files::write_ecn(&s, &n, mask)
        })
        .await
    }
}
