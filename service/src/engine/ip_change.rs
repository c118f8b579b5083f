//! IP settings through whichever IP manager the host runs (`ipmgr`): NetworkManager
//! (`nm_change.rs`), netplan (`netplan_change.rs`), systemd-networkd (a `.network` file of
//! the daemon's and networkd's D-Bus API), or none (refused, saying what runs and what the
//! user can do). Every change waits for confirmation with the same semantics:
//! NetworkManager rolls its checkpoint back by itself, netplan its try; for networkd the
//! daemon puts the previous file back (or removes its own) and has networkd reload when the
//! change is rolled back or not confirmed in time.
//!
//! Runs on callers' tasks, as `nm_change` does: no IP manager is waited on from the engine
//! task.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tracing::{info, warn};
use zbus::zvariant::OwnedValue;

use crate::ipmgr::networkd::{Networkd, NetworkdError};
use crate::ipmgr::networkd_file;
use crate::ipmgr::{is_netplan_config, IpManager, NETPLAN_DIR};
use crate::model::NetdevAddress;
use crate::nm::keys::IpSettings;

use super::nm_change::{checked_timeout, NmPending};
use super::{EngineHandle, OpError};

/// How long networkd is given to put the addresses of a change on the link.
const APPLY_WAIT: Duration = Duration::from_secs(10);

/// A change waiting for confirmation, as the IP manager that made it can take it back.
#[derive(Debug, Clone, PartialEq)]
pub enum IpPending {
    Nm(NmPending),
    Networkd(NetworkdPending),
    Netplan(super::netplan_change::NetplanPending),
}

/// A change made through systemd-networkd: the daemon's file for the interface, and what
/// was there before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkdPending {
    pub interface: String,
    pub description: String,
    pub timeout_secs: u32,
    pub path: PathBuf,
    /// The file's previous contents (`None`: there was none).
    pub previous: Option<Vec<u8>>,
}

pub(super) fn networkd_error(e: NetworkdError) -> OpError {
    match e {
        NetworkdError::NotRunning => OpError::NotSupported(e.to_string()),
        NetworkdError::NoLink(_) => OpError::NotFound(e.to_string()),
        NetworkdError::Refused(_) | NetworkdError::Bus(_) => OpError::Failed(e.to_string()),
    }
}

impl EngineHandle {
    /// The IP manager of the host: NetworkManager when it runs; else netplan when
    /// /etc/netplan holds configuration and netplan's service can be asked (netplan writes
    /// networkd's files, so its configuration is where a change belongs); else
    /// systemd-networkd when it runs; else netplan, unreachable, when /etc/netplan holds
    /// configuration; else none.
    pub async fn ip_manager(&self) -> IpManager {
        if let Some(nm) = self.nm.client() {
            if nm.running().await.unwrap_or(false) {
                return IpManager::NetworkManager;
            }
        }
        let netplan_config = matches!(
            self.host.list_dir(std::path::Path::new(NETPLAN_DIR)).await,
            Ok(Some(names)) if is_netplan_config(&names)
        );
        if netplan_config && self.netplan_reachable().await {
            return IpManager::Netplan { reachable: true };
        }
        if let Some(nd) = self.nm.networkd() {
            if nd.running().await.unwrap_or(false) {
                return IpManager::Networkd;
            }
        }
        if netplan_config {
            IpManager::Netplan { reachable: false }
        } else {
            IpManager::None
        }
    }

    /// The addresses of a netdev now, from the kernel.
    pub async fn kernel_addresses(&self, interface: &str) -> Result<Vec<NetdevAddress>, OpError> {
        let nd = self
            .host
            .read_netdev(interface)
            .await
            .map_err(|e| OpError::NotFound(e.to_string()))?;
        let Ok(index) = nd.ifindex else {
            return Ok(Vec::new());
        };
        let mut all = self
            .host
            .read_addresses(Some(index))
            .await
            .map_err(|e| OpError::Failed(e.to_string()))?;
        Ok(all.remove(&index).unwrap_or_default())
    }

    /// The settings in the daemon's networkd file for `interface`, if it has one.
    pub async fn networkd_settings(&self, interface: &str) -> Option<IpSettings> {
        let text = self
            .host
            .read_file(&networkd_file::path(interface))
            .await
            .ok()??;
        let text = String::from_utf8(text).ok()?;
        networkd_file::is_ours(&text).then(|| networkd_file::parse(&text))
    }

    /// Changes IP settings through the host's IP manager; see [`IpPending`].
    pub async fn set_ip_settings_routed(
        &self,
        interface: &str,
        keys: HashMap<String, OwnedValue>,
        timeout_secs: u32,
    ) -> Result<IpPending, OpError> {
        let timeout_secs = checked_timeout(timeout_secs)?;
        match self.ip_manager().await {
            IpManager::NetworkManager => self
                .set_ip_settings(interface, keys, timeout_secs)
                .await
                .map(IpPending::Nm),
            IpManager::Networkd => self
                .networkd_set(interface, keys, timeout_secs)
                .await
                .map(IpPending::Networkd),
            IpManager::Netplan { reachable: true } => self
                .netplan_set(interface, keys, timeout_secs)
                .await
                .map(IpPending::Netplan),
            m @ (IpManager::Netplan { reachable: false } | IpManager::None) => {
                // Still say what is wrong with the request first.
                self.rdma_netdev(interface).await?;
                Err(OpError::NotSupported(format!(
                    "IP settings of {interface} were not changed: {}",
                    m.advice()
                )))
            }
        }
    }

    fn networkd_client(&self) -> Result<std::sync::Arc<dyn Networkd>, OpError> {
        self.nm.networkd().ok_or_else(|| {
            OpError::NotSupported("this daemon cannot reach systemd-networkd".into())
        })
    }

    /// Writes the daemon's `.network` file for `interface` with `keys` applied over what it
    /// said before, has networkd reload and reconfigure the link, and waits for the
    /// addresses to be on it. Bad input, a link networkd runs with another file, or an
    /// administrator's file under the daemon's name change nothing.
    async fn networkd_set(
        &self,
        interface: &str,
        keys: HashMap<String, OwnedValue>,
        timeout_secs: u32,
    ) -> Result<NetworkdPending, OpError> {
        self.rdma_netdev(interface).await?;
        let nd = self.networkd_client()?;
        let path = networkd_file::path(interface);
        let ours = path.display().to_string();
        let described = nd.describe(interface).await.map_err(networkd_error)?;
        if let Some(other) = described
            .network_file
            .as_deref()
            .filter(|f| wins_over(f, &ours))
        {
            return Err(OpError::Busy(format!(
                "systemd-networkd configures {interface} with {other}, which comes before the \
                 daemon's {ours}: change the IP settings there (or remove it); nothing was \
                 changed"
            )));
        }
        let previous = self
            .host
            .read_file(&path)
            .await
            .map_err(|e| OpError::Failed(e.to_string()))?;
        let old = match &previous {
            Some(bytes) => {
                let text = String::from_utf8_lossy(bytes);
                if !networkd_file::is_ours(&text) {
                    return Err(OpError::Busy(format!(
                        "{ours} exists and was not written by the daemon: nothing was changed"
                    )));
                }
                Some(networkd_file::parse(&text))
            }
            None => None,
        };
        let new_file = old.is_none();
        let mut ip = old.unwrap_or_else(IpSettings::nmcli_defaults);
        ip.apply(&keys, new_file)
            .map_err(|e| OpError::InvalidArgument(e.to_string()))?;
        let text = networkd_file::render(interface, &ip);
        let pending = NetworkdPending {
            interface: interface.to_string(),
            description: format!("set the IP settings of {interface} (systemd-networkd)"),
            timeout_secs,
            path: path.clone(),
            previous,
        };
        self.host
            .write_file_atomic(&path, text.as_bytes())
            .await
            .map_err(|e| OpError::Failed(e.to_string()))?;
        info!(%interface, file = %ours, "wrote the networkd file; reloading networkd");
        if let Err(e) = self.networkd_apply(&*nd, interface, &ip).await {
            let undone = self.networkd_undo(&pending).await;
            return Err(e.with_more(&format!("; {undone}")));
        }
        Ok(pending)
    }

    /// Reload, reconfigure, and wait (bounded) until networkd runs the link with the
    /// daemon's file and the static addresses are on it.
    async fn networkd_apply(
        &self,
        nd: &dyn Networkd,
        interface: &str,
        ip: &IpSettings,
    ) -> Result<(), OpError> {
        nd.reload().await.map_err(networkd_error)?;
        nd.reconfigure(interface).await.map_err(networkd_error)?;
        let want = crate::ipmgr::static_addresses(ip);
        let ours = networkd_file::path(interface).display().to_string();
        let deadline = Instant::now() + APPLY_WAIT;
        loop {
            let d = nd.describe(interface).await.map_err(networkd_error)?;
            let file_ok = d.network_file.as_deref() == Some(ours.as_str());
            let missing: Vec<String> = want
                .iter()
                .filter(|a| !d.addresses.contains(a))
                .map(|a| a.to_string())
                .collect();
            if file_ok && missing.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(OpError::Failed(if file_ok {
                    format!(
                        "systemd-networkd did not put {} on {interface} within {} s",
                        missing.join(", "),
                        APPLY_WAIT.as_secs()
                    )
                } else {
                    format!(
                        "systemd-networkd runs {interface} with {} rather than {ours}",
                        d.network_file.as_deref().unwrap_or("no file")
                    )
                }));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Takes a networkd change back: the previous file (or none), then reload and
    /// reconfigure. Returns what was done, for the log and the caller.
    pub async fn networkd_undo(&self, p: &NetworkdPending) -> String {
        let r = match &p.previous {
            Some(bytes) => self.host.write_file_atomic(&p.path, bytes).await,
            None => self.host.remove_file(&p.path).await,
        };
        if let Err(e) = r {
            warn!(file = %p.path.display(), error = %e, "could not put the networkd file back");
            return format!("putting {} back failed ({e})", p.path.display());
        }
        let Ok(nd) = self.networkd_client() else {
            return format!(
                "{} was put back; networkd cannot be reached",
                p.path.display()
            );
        };
        let reloaded = match nd.reload().await {
            Ok(()) => match nd.reconfigure(&p.interface).await {
                Ok(()) | Err(NetworkdError::NoLink(_)) => Ok(()),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        match reloaded {
            Ok(()) => {
                let what = if p.previous.is_some() {
                    "put back"
                } else {
                    "removed"
                };
                info!(file = %p.path.display(), what, "networkd change taken back");
                format!(
                    "{} was {what} and systemd-networkd reloaded",
                    p.path.display()
                )
            }
            Err(e) => {
                warn!(error = %e, "networkd did not reload after the undo");
                format!(
                    "{} was put back but systemd-networkd did not reload ({e})",
                    p.path.display()
                )
            }
        }
    }
}

/// Whether networkd's `file` for a link keeps winning over the daemon's `ours`: networkd takes
/// the first file, in name order across its directories, that matches the link
/// (systemd.network(5)), so a file that sorts after the daemon's (an `80-default.network`)
/// gives way to it.
fn wins_over(file: &str, ours: &str) -> bool {
    use std::path::Path;
    file != ours && Path::new(file).file_name() < Path::new(ours).file_name()
}

#[cfg(test)]
mod wins_over_tests {
    use super::wins_over;

    #[test]
    fn only_a_file_that_sorts_first_keeps_the_link() {
        let ours = "/etc/systemd/network/50-rdma-manager-ib0.network";
        assert!(wins_over("/etc/systemd/network/10-admin.network", ours));
        assert!(wins_over(
            "/run/systemd/network/10-netplan-ib0.network",
            ours
        ));
        assert!(!wins_over(
            "/usr/lib/systemd/network/80-default.network",
            ours
        ));
        assert!(!wins_over("/etc/systemd/network/99-dhcp.network", ours));
        assert!(!wins_over(ours, ours));
    }
}
