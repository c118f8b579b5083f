//! The real host: sysfs and configfs under `/`, RDMA netlink, rtnetlink, and udev or the
//! kernel's uevent socket.

use std::path::Path;

use async_trait::async_trait;
use tokio::sync::{mpsc, OnceCell};

use super::nldev::NldevClient;
use super::port_poll::{PortPoller, SysfsPortPoller};
use super::rtnl::Rtnl;
use super::sysfs::SysRoot;
use super::verbs::{self, DeviceList, Verbs, VerbsError};
use super::{
    files, CounterPort, Host, HostError, HostEvent, NetdevChange, NewIpoibChild, NewLink, NlDevice,
    NlPort, NlSys, Op,
};
use crate::model::{CounterSnapshot, DeviceSnapshot, NetdevSnapshot, PortSource};
use crate::naming::rdma_rename::RenameSysfs;

/// udevd's control socket: it exists while udevd runs.
pub const UDEV_CONTROL: &str = "/run/udev/control";
/// How long `udevadm control --reload` may take.
const UDEVADM_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

pub struct LinuxHost {
    pub(super) sys: SysRoot,
    rtnl: OnceCell<Rtnl>,
    verbs: VerbsList,
    /// The device contexts kept for port events (see `port_events`).
    port_events: std::sync::Arc<super::port_events::PortEventWatch>,
}

impl Default for LinuxHost {
    fn default() -> Self {
        Self::new()
    }
}

impl LinuxHost {
    pub fn new() -> LinuxHost {
        LinuxHost {
            sys: SysRoot::system(),
            rtnl: OnceCell::new(),
            verbs: VerbsList::default(),
            port_events: Default::default(),
        }
    }

    /// Whether this kernel has RDMA at all (`/sys/class/infiniband` exists).
    pub fn has_rdma() -> bool {
        Path::new("/sys/class/infiniband").is_dir()
    }

    async fn rtnl(&self) -> Result<&Rtnl, HostError> {
        self.rtnl.get_or_try_init(Rtnl::open).await
    }

    /// Runs a blocking sysfs or netlink call on the blocking pool, so that a slow kernel
    /// (a module autoload, a hung sysfs read) never stalls the async runtime.
    pub(super) async fn blocking<T: Send + 'static>(
        &self,
        op: Op,
        f: impl FnOnce(SysRoot) -> Result<T, HostError> + Send + 'static,
    ) -> Result<T, HostError> {
        let sys = self.sys.clone();
        tokio::task::spawn_blocking(move || f(sys))
            .await
            .map_err(|e| HostError::Protocol {
                op,
                reason: format!("worker failed: {e}"),
            })?
    }
}

/// A port's driver counters through STAT_GET, under the names `hw_counters/` gives them;
/// `None` when the kernel does not give them so (a driver without port statistics, a device
/// gone): the files are read instead, which say the same or that there are none.
fn hw_counters_by_netlink(
    read: Result<Vec<(String, u64)>, HostError>,
    p: &CounterPort,
) -> Option<Vec<(String, u64)>> {
    match read {
        Ok(hw) => Some(hw),
        Err(e) => {
            tracing::trace!(dev = %p.dev, port = p.port, error = %e, "STAT_GET");
            None
        }
    }
}

/// libibverbs' device list, kept between reads: making one scans every device (sysfs reads
/// for each), so a list per device read made an enumeration quadratic in the devices. Shared
/// behind an `Arc` so that devices are read on several threads at once: the lock is held only
/// to take (or replace) the list, not while a device is opened and queried.
type VerbsList = std::sync::Arc<std::sync::Mutex<Option<std::sync::Arc<DeviceList<'static>>>>>;

/// Room for this many used GIDs of a device in the first query: rxe has 2 or 3 (link-local,
/// one per address), a RoCE HCA a few per address and port. Only when the kernel says the
/// buffer is too short (EINVAL: more valid entries than room) are the `gids` directories
/// listed for the full length (1024 entries a port on rxe, a third of a device's read time
/// in the lab).
pub(crate) const GIDS_FIRST_GUESS: usize = 64;

/// A device from sysfs, its GID tables through verbs where the list has it (one call for the
/// whole table instead of a sysfs read of each entry), else through sysfs. The kept list is
/// made anew when it does not know the device, when the device it has under that name has
/// another node GUID than sysfs's (renamed since, its name reused), or when opening it fails
/// (removed and added again); then once more, and after that sysfs is read.
fn read_device(s: &SysRoot, name: &str, cache: &VerbsList) -> Result<DeviceSnapshot, HostError> {
    let Some(verbs) = Verbs::shared() else {
        return s.read_device(name);
    };
    s.read_device_with(
        name,
        Some(&mut |dev, ports, table_len| {
            let guid = super::sysfs::read_attr(&s.device_dir(dev).join("node_guid"))
                .ok()
                .and_then(|g| crate::model::Guid::parse_sysfs(&g).ok());
            for fresh in [false, true] {
                let list = {
                    let mut kept = cache.lock().unwrap_or_else(|p| p.into_inner());
                    if fresh || kept.is_none() {
                        // Only the providers this host's new devices need, before libibverbs
                        // loads them all (see `verbs_providers`).
                        let listed = |d: &str| kept.as_ref().is_some_and(|l| l.knows(d));
                        verbs
                            .load_providers(super::verbs_providers::needed_but(s, listed).as_ref());
                        *kept = match verbs.devices() {
                            Ok(list) => Some(std::sync::Arc::new(list)),
                            Err(e) => {
                                tracing::debug!(error = %e, "GID tables are read through sysfs");
                                None
                            }
                        };
                    }
                    kept.clone()?
                };
                if list.node_guid(dev) != guid.map(|g| g.0) && !fresh {
                    continue;
                }
                let first = list.tables(dev, GIDS_FIRST_GUESS, ports);
                let tables = match first {
                    Err(VerbsError::Query { errno, .. }) if errno.0 == libc::EINVAL => {
                        list.tables(dev, table_len(), ports)
                    }
                    other => other,
                };
                match tables {
                    Ok(t) => return Some(verbs_tables(&t)),
                    Err(VerbsError::NoDevice(_) | VerbsError::Open { .. }) if !fresh => continue,
                    Err(e) => {
                        tracing::debug!(error = %e, "GID table read through sysfs");
                        return None;
                    }
                }
            }
            None
        }),
    )
}

/// A verbs context's answers as the sysfs reader takes them.
fn verbs_tables(t: &verbs::DeviceTables) -> super::sysfs::VerbsTables {
    super::sysfs::VerbsTables {
        gids: verbs::gids_by_port(&t.gids, verbs::ifname),
        ports: t
            .ports
            .iter()
            .map(|(&port, attr)| {
                let attr = match attr {
                    Ok(a) => Ok(a.attrs()),
                    Err(e) => Err(crate::model::AttrError::Unreadable(*e)),
                };
                (port, attr)
            })
            .collect(),
    }
}

/// A libibverbs device list that lists every device of `wanted` as sysfs has it now (the
/// same node GUID): the kept one when it does, else a new one, kept from then on.
fn verbs_list_for(
    s: &SysRoot,
    cache: &VerbsList,
    wanted: &std::collections::BTreeSet<String>,
) -> Option<std::sync::Arc<DeviceList<'static>>> {
    let verbs = Verbs::shared()?;
    let guid = |dev: &str| {
        super::sysfs::read_attr(&s.device_dir(dev).join("node_guid"))
            .ok()
            .and_then(|g| crate::model::Guid::parse_sysfs(&g).ok())
            .map(|g| g.0)
    };
    let mut kept = cache.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(list) = kept.as_ref() {
        if wanted
            .iter()
            .all(|d| list.node_guid(d).is_some() && list.node_guid(d) == guid(d))
        {
            return Some(list.clone());
        }
    }
    let listed = |d: &str| kept.as_ref().is_some_and(|l| l.knows(d));
    verbs.load_providers(super::verbs_providers::needed_but(s, listed).as_ref());
    *kept = match verbs.devices() {
        Ok(list) => Some(std::sync::Arc::new(list)),
        Err(e) => {
            tracing::debug!(error = %e, "port events not watched");
            None
        }
    };
    kept.clone()
}

impl LinuxHost {
    /// Children made over rtnetlink have no pkey/mode/umcast/parent files: ask rtnetlink.
    async fn fill_ipoib_from_rtnl(&self, netdevs: &mut [NetdevSnapshot]) -> Result<(), HostError> {
        let needs_rtnl = |n: &NetdevSnapshot| n.ipoib.as_ref().is_some_and(|i| i.pkey.is_err());
        if !netdevs.iter().any(needs_rtnl) {
            return Ok(());
        }
        let rtnl = self.rtnl().await?;
        for nd in netdevs.iter_mut().filter(|n| needs_rtnl(n)) {
            let Ok(Some(info)) = rtnl.ipoib_info(&nd.name).await else {
                continue;
            };
            let parent = match info.parent_ifindex {
                Some(p) => {
                    self.blocking(Op::ReadSysfs("net".into()), move |s| {
                        Ok(s.netdev_name_by_index(p))
                    })
                    .await?
                }
                None => None,
            };
            if let (Some(attrs), Some(pkey), Some(mode)) = (nd.ipoib.as_mut(), info.pkey, info.mode)
            {
                super::rtnl_fill_ipoib(attrs, pkey, mode, info.umcast.unwrap_or(false), parent);
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Host for LinuxHost {
    async fn rdma_device_names(&self) -> Result<Vec<String>, HostError> {
        self.blocking(Op::ReadSysfs("infiniband".into()), |s| {
            s.rdma_device_names()
        })
        .await
    }

    async fn read_rename_sysfs(&self, dev: &str) -> Result<RenameSysfs, HostError> {
        let dev = dev.to_string();
        self.blocking(Op::ReadSysfs(dev.clone()), move |s| s.rename_sysfs(&dev))
            .await
    }

    async fn read_device(&self, name: &str) -> Result<DeviceSnapshot, HostError> {
        let name = name.to_string();
        let cache = self.verbs.clone();
        self.blocking(Op::ReadSysfs(name.clone()), move |s| {
            read_device(&s, &name, &cache)
        })
        .await
    }

    async fn read_devices(&self) -> Result<Vec<DeviceSnapshot>, HostError> {
        // One trip to the blocking pool for the whole enumeration.
        let cache = self.verbs.clone();
        self.blocking(Op::ReadSysfs("infiniband".into()), move |s| {
            let mut out = Vec::new();
            for name in s.rdma_device_names()? {
                match read_device(&s, &name, &cache) {
                    Ok(d) => out.push(d),
                    Err(e) if e.is_not_found() => continue,
                    Err(e) => return Err(e),
                }
            }
            Ok(out)
        })
        .await
    }

    async fn read_counters(&self, dev: &str, port: u32) -> Result<CounterSnapshot, HostError> {
        let dev = dev.to_string();
        self.blocking(Op::ReadSysfs(dev.clone()), move |s| {
            s.read_counters(&dev, port)
        })
        .await
    }

    async fn read_all_counters(
        &self,
        ports: Vec<CounterPort>,
    ) -> Vec<Result<CounterSnapshot, HostError>> {
        let n = ports.len();
        let read = self
            .blocking(Op::ReadSysfs("port counters".into()), move |s| {
                // The driver's counters of a port in one RDMA netlink message (what `rdma
                // statistic show` asks) instead of an open, a read and a close of each of its
                // `hw_counters/` files: most of the files of a RoCE port.
                let nl = NldevClient::open()
                    .inspect_err(|e| tracing::debug!(error = %e, "hw counters read from sysfs"))
                    .ok();
                let keys: Vec<(u32, u32)> = ports.iter().map(|p| (p.dev_index, p.port)).collect();
                let mut by_netlink = match &nl {
                    Some(c) => c.ports_stats(&keys),
                    None => Vec::new(),
                }
                .into_iter();
                Ok(ports
                    .iter()
                    .map(|p| {
                        let hw = by_netlink.next().and_then(|r| hw_counters_by_netlink(r, p));
                        match &p.polled {
                            Some(source) => s.read_other_counters(&p.dev, p.port, source, hw),
                            None => s.read_counters_with(&p.dev, p.port, hw),
                        }
                    })
                    .collect::<Vec<_>>())
            })
            .await;
        match read {
            Ok(all) => all,
            // The worker failed: every port's read failed with it.
            Err(e) => (0..n).map(|_| Err(e.clone())).collect(),
        }
    }

    async fn port_sources(&self, dev: &str) -> Result<Vec<PortSource>, HostError> {
        let dev = dev.to_string();
        self.blocking(Op::ReadSysfs(dev.clone()), move |s| s.port_sources(&dev))
            .await
    }

    fn port_poller(&self) -> Box<dyn PortPoller> {
        let poller = SysfsPortPoller::new(self.sys.clone(), super::rlimit::keep_open_budget_now());
        // RoCE ports' counters from one rtnetlink dump a poll (one socket kept open).
        Box::new(match super::link_stats::RtnlLinkStats::open() {
            Ok(stats) => poller.with_link_stats(Box::new(stats)),
            Err(e) => {
                tracing::debug!(error = %e, "netdev counters are read from sysfs");
                poller
            }
        })
    }

    async fn read_netdevs(&self) -> Result<Vec<NetdevSnapshot>, HostError> {
        let mut netdevs = self
            .blocking(Op::ReadSysfs("net".into()), |s| s.read_netdevs())
            .await?;
        self.fill_ipoib_from_rtnl(&mut netdevs).await?;
        Ok(netdevs)
    }

    async fn read_ipoib_netdevs(&self) -> Result<Vec<NetdevSnapshot>, HostError> {
        let mut netdevs = self
            .blocking(Op::ReadSysfs("net".into()), |s| s.read_ipoib_netdevs())
            .await?;
        self.fill_ipoib_from_rtnl(&mut netdevs).await?;
        Ok(netdevs)
    }

    async fn read_netdev(&self, name: &str) -> Result<NetdevSnapshot, HostError> {
        let name = name.to_string();
        let nd = self
            .blocking(Op::ReadSysfs(name.clone()), move |s| s.read_netdev(&name))
            .await?;
        let mut one = [nd];
        self.fill_ipoib_from_rtnl(&mut one).await?;
        let [nd] = one;
        Ok(nd)
    }

    async fn read_addresses(
        &self,
        only: Option<u32>,
    ) -> Result<std::collections::BTreeMap<u32, Vec<crate::model::NetdevAddress>>, HostError> {
        self.rtnl().await?.addresses(only).await
    }

    async fn module_loaded(&self, module: &str) -> Result<bool, HostError> {
        let m = module.to_string();
        self.blocking(Op::ReadSysfs("module".into()), move |s| {
            Ok(s.module_loaded(&m))
        })
        .await
    }

    async fn nl_devices(&self) -> Result<Vec<NlDevice>, HostError> {
        self.blocking(Op::NlDump("GET"), |_| NldevClient::open()?.devices())
            .await
    }

    async fn nl_ports(&self) -> Result<Vec<NlPort>, HostError> {
        self.blocking(Op::NlDump("PORT_GET"), |_| NldevClient::open()?.ports())
            .await
    }

    async fn nl_sys(&self) -> Result<NlSys, HostError> {
        self.blocking(Op::NlDump("SYS_GET"), |_| NldevClient::open()?.sys())
            .await
    }

    async fn nl_port_stats(
        &self,
        dev_index: u32,
        port: u32,
    ) -> Result<Vec<(String, u64)>, HostError> {
        self.blocking(Op::NlStatGet, move |_| {
            NldevClient::open()?.port_stats(dev_index, port)
        })
        .await
    }

    async fn add_link(&self, link: &NewLink) -> Result<(), HostError> {
        let link = link.clone();
        self.blocking(Op::NlNewLink, move |_| NldevClient::open()?.new_link(&link))
            .await
    }

    async fn delete_link(&self, dev_index: u32) -> Result<(), HostError> {
        self.blocking(Op::NlDelLink, move |_| {
            NldevClient::open()?.del_link(dev_index)
        })
        .await
    }

    async fn rename_device(&self, dev_index: u32, new_name: &str) -> Result<(), HostError> {
        let name = new_name.to_string();
        self.blocking(Op::NlSet, move |_| {
            NldevClient::open()?.rename(dev_index, &name)
        })
        .await
    }

    async fn create_ipoib_child(&self, child: &NewIpoibChild) -> Result<(), HostError> {
        self.rtnl().await?.create_ipoib_child(child).await
    }

    async fn change_netdev(&self, name: &str, change: &NetdevChange) -> Result<(), HostError> {
        self.rtnl().await?.change(name, change).await
    }

    async fn rename_netdev(&self, old: &str, new: &str) -> Result<(), HostError> {
        self.rtnl().await?.rename(old, new).await
    }

    async fn delete_netdev(&self, name: &str) -> Result<(), HostError> {
        self.rtnl().await?.delete(name).await
    }

    async fn subscribe(&self) -> Result<mpsc::UnboundedReceiver<HostEvent>, HostError> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.port_events.send_to(tx.clone());
        super::uevents::spawn_uevents(tx.clone()).await?;
        super::rtnl::spawn_link_events(tx.clone()).await?;
        // RDMA netlink notifications exist only on kernels with monitor mode; udev/uevents
        // cover device add, remove and rename everywhere.
        if let Err(e) = super::nldev::spawn_notify(tx) {
            tracing::debug!("RDMA netlink notifications unavailable: {e}");
        }
        Ok(rx)
    }

    async fn watch_port_events(
        &self,
        devices: &std::collections::BTreeSet<String>,
    ) -> std::collections::BTreeSet<String> {
        let budget = super::port_events::context_budget(
            super::rlimit::nofile_limit().map_or(1024, |l| l.soft),
        );
        let (sys, list_sys, cache) = (self.sys.clone(), self.sys.clone(), self.verbs.clone());
        self.port_events
            .watch(
                devices,
                budget,
                move |name| sys.device_origin(name),
                move |wanted| verbs_list_for(&list_sys, &cache, wanted),
            )
            .await
    }

    async fn read_file(&self, path: &Path) -> Result<Option<Vec<u8>>, HostError> {
        let p = path.to_path_buf();
        self.blocking(Op::File(p.display().to_string()), move |_| {
            files::read_for_host(&p, &p)
        })
        .await
    }

    async fn list_dir(&self, path: &Path) -> Result<Option<Vec<String>>, HostError> {
        let p = path.to_path_buf();
        self.blocking(Op::File(p.display().to_string()), move |_| {
            files::list_dir_optional(&p)
                .map_err(|e| HostError::from_io(Op::File(p.display().to_string()), &e))
        })
        .await
    }

    async fn remove_file(&self, path: &Path) -> Result<(), HostError> {
        let p = path.to_path_buf();
        self.blocking(Op::File(p.display().to_string()), move |_| {
            files::remove_optional(&p)
                .map_err(|e| HostError::from_io(Op::File(p.display().to_string()), &e))
        })
        .await
    }

    async fn reload_udev_rules(&self) -> Result<bool, HostError> {
        if !Path::new(UDEV_CONTROL).exists() {
            return Ok(false);
        }
        // Mutations wait on this; a udevd that does not answer must not hold them forever.
        let run = tokio::process::Command::new("udevadm")
            .args(["control", "--reload"])
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(UDEVADM_TIMEOUT, run)
            .await
            .map_err(|_| HostError::Command {
                op: Op::UdevReload,
                reason: format!(
                    "udevd did not answer within {} s",
                    UDEVADM_TIMEOUT.as_secs()
                ),
            })?
            .map_err(|e| HostError::Command {
                op: Op::UdevReload,
                reason: format!("cannot run udevadm: {e}"),
            })?;
        if !out.status.success() {
            let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
            return Err(HostError::Command {
                op: Op::UdevReload,
                reason: format!("{} ({said})", out.status),
            });
        }
        Ok(true)
    }

    async fn write_file_atomic(&self, path: &Path, contents: &[u8]) -> Result<(), HostError> {
        let p = path.to_path_buf();
        let c = contents.to_vec();
        self.blocking(Op::File(p.display().to_string()), move |_| {
            files::write_atomic(&p, &c)
                .map_err(|e| HostError::from_io(Op::File(p.display().to_string()), &e))
        })
        .await
    }

    async fn open_umad(&self, dev: &str, port: u32) -> Result<std::os::fd::OwnedFd, HostError> {
        let d = dev.to_string();
        self.blocking(Op::File(format!("umad of {dev}/{port}")), move |sys| {
            super::umad::open(&sys, &d, port)
        })
        .await
    }

    async fn umad_ports(&self) -> Result<Vec<(String, u32)>, HostError> {
        self.blocking(Op::ReadSysfs("class/infiniband_mad".into()), |sys| {
            super::umad::infiniband_ports(&sys)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn list_dir_of_a_real_directory() {
        let dir = tempfile::tempdir().unwrap();
        let host = LinuxHost::new();
        let d = dir.path().join("nfs.conf.d");
        assert_eq!(host.list_dir(&d).await.unwrap(), None);
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("rdma-manager.conf"), b"").unwrap();
        std::fs::write(d.join("local.conf"), b"").unwrap();
        assert_eq!(
            host.list_dir(&d).await.unwrap().unwrap(),
            ["local.conf", "rdma-manager.conf"]
        );
    }
}
