//! IP settings through netplan (`ipmgr::netplan`): the interface's definition in the
//! daemon's file /etc/netplan/90-rdma-manager.yaml, applied with netplan's own
//! `Try`, so that netplan rolls the change back by itself if the daemon is gone when the
//! time runs out; `Confirm` is netplan's `Apply`, `RollBack` and the daemon's deadline its
//! `Cancel`.
//!
//! Every step runs inside one configuration object: nothing reaches /etc/netplan before
//! `Try`, and an object given up on is cancelled, which leaves the host's configuration as it
//! was.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{info, warn};
use zbus::zvariant::OwnedValue;

use crate::ipmgr::netplan::{Netplan, NetplanError};
use crate::ipmgr::netplan_yaml::{self, NetplanYamlError, ORIGIN_HINT};
use crate::nm::keys::IpSettings;

use super::{EngineHandle, OpError};

/// How long netplan is given to put the addresses of a change on the link.
const APPLY_WAIT: Duration = Duration::from_secs(15);

/// netplan's own timer runs this much longer than the daemon's deadline: the daemon
/// cancels first, and netplan's timer only acts when the daemon could not.
const NETPLAN_GRACE_SECS: u32 = 5;

/// A change made through netplan: the configuration object netplan is trying.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetplanPending {
    pub interface: String,
    pub description: String,
    pub timeout_secs: u32,
    /// The object's path (`/io/netplan/Netplan/config/ID`).
    pub config: String,
}

pub(super) fn netplan_error(e: NetplanError) -> OpError {
    match e {
        NetplanError::NotRunning => OpError::NotSupported(format!(
            "{e}: {}",
            crate::ipmgr::IpManager::Netplan { reachable: false }.advice()
        )),
        NetplanError::Gone(_) => OpError::NotFound(e.to_string()),
        NetplanError::Refused(_) | NetplanError::Bus(_) => OpError::Failed(e.to_string()),
    }
}

fn yaml_error(e: NetplanYamlError) -> OpError {
    match e {
        NetplanYamlError::DefinedElsewhere(m) => OpError::Busy(format!("{m}; nothing was changed")),
        NetplanYamlError::Unreadable(_) => OpError::Failed(e.to_string()),
    }
}

impl EngineHandle {
    pub(super) fn netplan_client(&self) -> Result<Arc<dyn Netplan>, OpError> {
        self.nm
            .netplan()
            .ok_or_else(|| OpError::NotSupported("this daemon cannot reach netplan".into()))
    }

    /// Whether netplan's service can be asked.
    pub(super) async fn netplan_reachable(&self) -> bool {
        match self.nm.netplan() {
            Some(np) => np.available().await.unwrap_or(false),
            None => false,
        }
    }

    /// What netplan's configuration says of `interface`, and whether the daemon's file
    /// holds that definition: (settings, the daemon's file if it defines it).
    pub async fn netplan_settings(
        &self,
        interface: &str,
    ) -> Result<(Option<IpSettings>, Option<String>), OpError> {
        let np = self.netplan_client()?;
        let config = np.config().await.map_err(netplan_error)?;
        let merged = np.get(&config).await;
        // A configuration object only read is discarded.
        if let Err(e) = np.cancel(&config).await {
            warn!(%config, error = %e, "netplan did not discard a configuration object");
        }
        let merged = merged.map_err(netplan_error)?;
        let settings = netplan_yaml::definition(&merged, interface)
            .map_err(yaml_error)?
            .settings;
        let path = netplan_yaml::file_path();
        let ours = match self.host.read_file(&path).await {
            Ok(Some(bytes)) => {
                netplan_yaml::definition(&String::from_utf8_lossy(&bytes), interface)
                    .ok()
                    .and_then(|d| d.settings)
                    .map(|_| path.display().to_string())
            }
            _ => None,
        };
        Ok((settings, ours))
    }

    /// Changes `interface`'s IP settings through netplan and leaves the change in netplan's
    /// `Try`; see [`NetplanPending`]. Bad input, a definition the daemon's file cannot
    /// replace, or other files that would still change the result are refused with nothing
    /// changed.
    pub(super) async fn netplan_set(
        &self,
        interface: &str,
        keys: HashMap<String, OwnedValue>,
        timeout_secs: u32,
    ) -> Result<NetplanPending, OpError> {
        self.rdma_netdev(interface).await?;
        let np = self.netplan_client()?;
        let config = np.config().await.map_err(netplan_error)?;
        match self
            .netplan_try(&*np, &config, interface, keys, timeout_secs)
            .await
        {
            Ok(()) => Ok(NetplanPending {
                interface: interface.to_string(),
                description: format!("set the IP settings of {interface} (netplan)"),
                timeout_secs,
                config,
            }),
            Err(e) => {
                let undone = match np.cancel(&config).await {
                    Ok(()) | Err(NetplanError::Gone(_)) => {
                        "netplan's configuration is as it was".to_string()
                    }
                    Err(c) => format!("cancelling netplan's configuration object failed ({c})"),
                };
                Err(e.with_more(&format!("; {undone}")))
            }
        }
    }

    async fn netplan_try(
        &self,
        np: &dyn Netplan,
        config: &str,
        interface: &str,
        keys: HashMap<String, OwnedValue>,
        timeout_secs: u32,
    ) -> Result<(), OpError> {
        let merged = np.get(config).await.map_err(netplan_error)?;
        let old = netplan_yaml::definition(&merged, interface)
            .map_err(yaml_error)?
            .settings;
        let mut ip = old.unwrap_or_else(IpSettings::nmcli_defaults);
        // netplan has no method: a family with addresses is static, so addresses given
        // without a method make the family manual, as nmcli does for a new profile.
        ip.apply(&keys, true)
            .map_err(|e| OpError::InvalidArgument(e.to_string()))?;
        let key = netplan_yaml::key(interface);
        // The definition in the daemon's file is replaced whole: `netplan set` appends to
        // lists it already holds.
        np.set(config, &format!("{key}=null"), ORIGIN_HINT)
            .await
            .map_err(netplan_error)?;
        np.set(
            config,
            &format!("{key}={}", netplan_yaml::render(&ip)),
            ORIGIN_HINT,
        )
        .await
        .map_err(netplan_error)?;
        let merged = np.get(config).await.map_err(netplan_error)?;
        let result = netplan_yaml::definition(&merged, interface)
            .map_err(yaml_error)?
            .settings;
        if result.as_ref() != Some(&netplan_yaml::as_read(&ip)) {
            return Err(OpError::Busy(format!(
                "other files under /etc/netplan also configure {interface} (netplan merges \
                 their addresses, routes and name servers with the daemon's): change its IP \
                 settings there; nothing was changed"
            )));
        }
        info!(%interface, file = %netplan_yaml::file_path().display(), "trying a netplan change");
        np.try_apply(config, timeout_secs.saturating_add(NETPLAN_GRACE_SECS))
            .await
            .map_err(netplan_error)?;
        self.netplan_wait(interface, &ip).await
    }

    /// Waits (bounded) until the static addresses of `ip` are on the link: as
    /// systemd-networkd reports them where it runs (netplan's usual renderer), else as the
    /// kernel does.
    async fn netplan_wait(&self, interface: &str, ip: &IpSettings) -> Result<(), OpError> {
        let want = crate::ipmgr::static_addresses(ip);
        let networkd = match self.nm.networkd() {
            Some(nd) if nd.running().await.unwrap_or(false) => Some(nd),
            _ => None,
        };
        let deadline = Instant::now() + APPLY_WAIT;
        loop {
            let have = match &networkd {
                Some(nd) => nd
                    .describe(interface)
                    .await
                    .map(|d| d.addresses)
                    .map_err(|e| OpError::Failed(e.to_string()))?,
                None => self.kernel_addresses(interface).await?,
            };
            let missing: Vec<String> = want
                .iter()
                .filter(|a| !have.contains(a))
                .map(|a| a.to_string())
                .collect();
            if missing.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(OpError::Failed(format!(
                    "netplan did not put {} on {interface} within {} s",
                    missing.join(", "),
                    APPLY_WAIT.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Keeps a change netplan is trying (`Apply`).
    pub async fn netplan_confirm(&self, p: &NetplanPending) -> Result<(), OpError> {
        let np = self.netplan_client()?;
        np.apply(&p.config).await.map_err(|e| match e {
            NetplanError::Gone(_) => OpError::NotFound(format!(
                "netplan already rolled the change of {} back (its try ran out)",
                p.interface
            )),
            other => netplan_error(other),
        })?;
        info!(interface = %p.interface, "netplan change kept");
        Ok(())
    }

    /// Takes a change netplan is trying back (`Cancel`). Returns what was done, for the
    /// log and the caller.
    pub async fn netplan_undo(&self, p: &NetplanPending) -> String {
        let np = match self.netplan_client() {
            Ok(np) => np,
            Err(e) => {
                return format!(
                    "netplan cannot be reached ({e}); its own timer rolls the change back"
                )
            }
        };
        match np.cancel(&p.config).await {
            // The caller logs it, with how the change ended.
            Ok(()) => "netplan rolled the change back".to_string(),
            Err(NetplanError::Gone(_)) => "netplan had already rolled the change back".to_string(),
            Err(e) => {
                warn!(interface = %p.interface, error = %e, "netplan did not cancel its try");
                format!("netplan did not cancel its try ({e}); its own timer rolls it back")
            }
        }
    }
}
