//! Which interfaces NetworkManager owns: one owner per interface. Where NetworkManager runs
//! and a profile of its configures an IPoIB interface, that profile is the interface's
//! configuration: the daemon neither re-creates nor re-applies it from `ipoib.toml` at boot,
//! and refuses to delete it or change its mode, MTU or umcast (the next activation of the
//! profile would undo the change, or the daemon would fight NetworkManager over it).
//!
//! NetworkManager is asked from callers' tasks (before an IPoIB operation, and once at start
//! before the restore), never from the engine task, whose jobs must not wait on other
//! services; the engine reads the snapshot taken last. A profile added to NetworkManager
//! after that is seen at the next IPoIB operation or daemon start.

use std::sync::{Arc, RwLock};

use tracing::warn;

use crate::nm::client::ProfileSummary;
use crate::system::SystemServices;

use super::{Dirty, Engine, OpError};

impl Engine {
    /// Publishes the owners NetworkManager's last answer gives, when they changed: every
    /// IPoIB interface's `Owner` follows.
    pub(super) async fn sync_nm_owners(&mut self) {
        let now = self.nm.snapshot();
        if now == self.state.nm_profiles {
            return;
        }
        self.state.nm_profiles = now;
        // Every IPoIB interface's Owner and every port's NetdevOwner follow.
        let dirty = Dirty {
            ipoib: self.state.ipoib.keys().copied().collect(),
            devices: self.state.devices.keys().copied().collect(),
            ..Dirty::default()
        };
        self.sink.publish(&self.state, &dirty).await;
    }
}

/// The profiles NetworkManager had when last asked; `None` while it does not run.
pub struct NmOwners {
    system: Arc<dyn SystemServices>,
    snapshot: RwLock<Option<Vec<ProfileSummary>>>,
}

impl NmOwners {
    pub fn new(system: Arc<dyn SystemServices>) -> NmOwners {
        NmOwners {
            system,
            snapshot: RwLock::new(None),
        }
    }

    /// Asks NetworkManager again. When asking fails, the last snapshot stays (logged): a
    /// NetworkManager that stopped answering still owned its interfaces a moment ago.
    pub async fn refresh(&self) {
        match self.system.network_manager_profiles().await {
            Ok(profiles) => {
                *self.snapshot.write().unwrap_or_else(|p| p.into_inner()) = profiles;
            }
            Err(e) => warn!(error = %e, "could not ask NetworkManager which profiles it has"),
        }
    }

    /// A client of NetworkManager, where the daemon's services include one.
    pub fn client(&self) -> Option<crate::nm::client::NetworkManager> {
        self.system.network_manager()
    }

    /// The profiles as last asked (`None`: NetworkManager does not run).
    pub fn snapshot(&self) -> Option<Vec<ProfileSummary>> {
        self.snapshot
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The profile that configures `interface`, if NetworkManager runs and has one.
    pub fn owner_of(&self, interface: &str) -> Option<ProfileSummary> {
        let snapshot = self.snapshot.read().unwrap_or_else(|p| p.into_inner());
        snapshot
            .as_ref()?
            .iter()
            .find(|p| p.interface.as_deref() == Some(interface))
            .cloned()
    }

    /// Refuses a change of `interface` that NetworkManager owns, naming the profile.
    pub fn refuse_if_owned(&self, interface: &str, what: &str) -> Result<(), OpError> {
        match self.owner_of(interface) {
            Some(p) => Err(OpError::Busy(format!(
                "{} is configured by NetworkManager's profile {} ({}): {what} through \
                 NetworkManager (nmcli connection modify/up/down/delete {}); rdma-manager does \
                 not change interfaces NetworkManager owns",
                rdma_manager_dbus::text::quote_capped(interface),
                rdma_manager_dbus::text::quote_capped(&p.id),
                p.uuid,
                p.uuid
            ))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::sim::SimSystemServices;

    fn profile(id: &str, interface: &str) -> ProfileSummary {
        ProfileSummary {
            path: "/org/freedesktop/NetworkManager/Settings/1".into(),
            id: id.into(),
            uuid: "0b7e5d9a-3c51-4e0f-9a4e-2f1b6c8d7e90".into(),
            kind: "infiniband".into(),
            interface: Some(interface.into()),
            filename: String::new(),
        }
    }

    #[tokio::test]
    async fn owners_follow_networkmanager() {
        let system = SimSystemServices::new();
        let owners = NmOwners::new(Arc::new(system.clone()));
        owners.refresh().await;
        assert!(owners.owner_of("ib0.8002").is_none());
        assert!(owners.refuse_if_owned("ib0.8002", "delete it").is_ok());
        system.set_network_manager(Some(vec![profile("ib0.8002", "ib0.8002")]));
        // The snapshot is what was asked last.
        assert!(owners.owner_of("ib0.8002").is_none());
        owners.refresh().await;
        assert_eq!(
            owners.owner_of("ib0.8002").map(|p| p.id).as_deref(),
            Some("ib0.8002")
        );
        assert!(owners.owner_of("ib0").is_none());
        match owners.refuse_if_owned("ib0.8002", "delete it") {
            Err(OpError::Busy(m)) => assert!(
                m.contains("NetworkManager") && m.contains("delete it"),
                "{m}"
            ),
            other => panic!("{other:?}"),
        }
        system.set_network_manager(None);
        owners.refresh().await;
        assert!(owners.owner_of("ib0.8002").is_none());
    }
}
