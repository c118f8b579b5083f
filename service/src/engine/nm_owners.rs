//! Which interfaces NetworkManager owns: one owner per interface. Where NetworkManager runs
//! and a profile of its configures an IPoIB interface, that profile is the interface's
//! configuration: the daemon neither re-creates nor re-applies it from `ipoib.toml` at boot,
//! and refuses to delete it or change its mode, MTU or umcast (the next activation of the
//! profile would undo the change, or the daemon would fight NetworkManager over it).
//!
//! NetworkManager is asked from callers' tasks (before an IPoIB operation, and once at start
//! in a task of its own, beside the host's read and the other areas' restore, its answer
//! waited for before the IPoIB restore), never from the engine task, whose jobs must not
//! wait on other services; the engine reads the snapshot taken last. A profile added to NetworkManager
//! after that is seen at the next IPoIB operation, the next periodic re-read, or daemon start.
//!
//! A NetworkManager that does not answer at start (its settings still not exported after
//! the wait, or a bus error) is not taken for one without profiles: the restore leaves the
//! IPoIB interfaces alone, and does them when its first answer comes (at the periodic
//! re-read, within a minute), re-creating only what it does not own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use tracing::warn;

use crate::nm::client::ProfileSummary;
use crate::system::SystemServices;

use super::OpError;

/// The profiles NetworkManager had when last asked; `None` while it does not run.
pub struct NmOwners {
    system: Arc<dyn SystemServices>,
    snapshot: RwLock<Option<Vec<ProfileSummary>>>,
    /// Asking failed and no answer was had before: whether NetworkManager runs, and what it
    /// owns, is not known.
    unanswered: AtomicBool,
}

impl NmOwners {
    pub fn new(system: Arc<dyn SystemServices>) -> NmOwners {
        NmOwners {
            system,
            snapshot: RwLock::new(None),
            unanswered: AtomicBool::new(false),
        }
    }

    /// Asks NetworkManager again. When asking fails, the last snapshot stays (logged): a
    /// NetworkManager that stopped answering still owned its interfaces a moment ago. With
    /// no snapshot before, what it owns is unknown ([`NmOwners::unanswered`]).
    pub async fn refresh(&self) {
        match self.system.network_manager_profiles().await {
            Ok(profiles) => {
                *self.snapshot.write().unwrap_or_else(|p| p.into_inner()) = profiles;
                self.unanswered.store(false, Ordering::Release);
            }
            Err(e) => {
                warn!(error = %e, "could not ask NetworkManager which profiles it has");
                if self
                    .snapshot
                    .read()
                    .unwrap_or_else(|p| p.into_inner())
                    .is_none()
                {
                    self.unanswered.store(true, Ordering::Release);
                }
            }
        }
    }

    /// Asking NetworkManager failed and it never answered before: it may own any
    /// interface, and nothing it might own is re-created or re-applied.
    pub fn unanswered(&self) -> bool {
        self.unanswered.load(Ordering::Acquire)
    }

    /// A client of NetworkManager, where the daemon's services include one.
    pub fn client(&self) -> Option<crate::nm::client::NetworkManager> {
        self.system.network_manager()
    }

    /// A client of systemd-networkd, where the daemon can reach one.
    pub fn networkd(&self) -> Option<Arc<dyn crate::ipmgr::networkd::Networkd>> {
        self.system.networkd()
    }

    /// A client of netplan's D-Bus service, where the daemon can reach one.
    pub fn netplan(&self) -> Option<Arc<dyn crate::ipmgr::netplan::Netplan>> {
        self.system.netplan()
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

    /// Refuses a change of `interface` that NetworkManager owns, naming the profile, or may
    /// own (it did not answer).
    pub fn refuse_if_owned(&self, interface: &str, what: &str) -> Result<(), OpError> {
        if self.unanswered() {
            return Err(OpError::Busy(format!(
                "NetworkManager runs but has not said which profiles it has, so whether it \
                 owns {} is not known: {what} once it answers (try again)",
                rdma_manager_dbus::text::quote_capped(interface)
            )));
        }
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

    /// A NetworkManager that has not answered may own anything: changes wait (Busy) until it
    /// does; one that answered before keeps its last answer while it does not.
    #[tokio::test]
    async fn an_unanswering_networkmanager_may_own_anything() {
        let system = SimSystemServices::new();
        system.set_network_manager_unanswering(true);
        let owners = NmOwners::new(Arc::new(system.clone()));
        owners.refresh().await;
        assert!(owners.unanswered());
        match owners.refuse_if_owned("ib0.8002", "delete it") {
            Err(OpError::Busy(m)) => assert!(m.contains("NetworkManager"), "{m}"),
            other => panic!("{other:?}"),
        }
        system.set_network_manager_unanswering(false);
        system.set_network_manager(Some(vec![profile("ib0.8002", "ib0.8002")]));
        owners.refresh().await;
        assert!(!owners.unanswered());
        assert!(owners.refuse_if_owned("ib0", "delete it").is_ok());
        system.set_network_manager_unanswering(true);
        owners.refresh().await;
        assert!(!owners.unanswered(), "the last answer stands");
        assert!(owners.owner_of("ib0.8002").is_some());
    }

    struct NoSink;

    #[async_trait::async_trait]
    impl crate::engine::Sink for NoSink {
        async fn publish(&self, _: &crate::engine::ObservedState, _: &crate::engine::Dirty) {}
        async fn samples(&self, _: u64, _: &[((u32, u32), crate::engine::Sample)]) {}
    }

    /// At start NetworkManager is asked beside the host's read and the restore, not after
    /// them: one that takes as long to answer as the read (starting at boot) does not double
    /// the start-up, and its answer is in the engine's snapshot when start-up ends.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn networkmanager_is_asked_beside_the_host_read_at_start() {
        use crate::kernel::sim::{fixtures, SimHost, SimOp};
        use std::time::{Duration, Instant};
        const HELD: Duration = Duration::from_secs(2);
        let sim = SimHost::new(fixtures::demo_host()).expect("the demo host");
        sim.delay_next(SimOp::ReadDevice, HELD);
        let system = SimSystemServices::new();
        system.set_network_manager(Some(vec![profile("ib0.8002", "ib0.8002")]));
        system.set_network_manager_answer_delay(Some(HELD));
        let t = Instant::now();
        let (handle, task) = crate::engine::start(
            Arc::new(sim),
            Arc::new(system),
            Arc::new(NoSink),
            crate::engine::EngineConfig::default(),
            &mut crate::engine::phases::Phases::new(),
        )
        .await
        .expect("the engine starts");
        let took = t.elapsed();
        task.abort();
        assert!(took >= HELD, "the read was held: {took:?}");
        // One after the other would take twice HELD.
        assert!(
            took < HELD * 3 / 2,
            "NetworkManager waited for after the read: {took:?}"
        );
        assert!(handle.nm.owner_of("ib0.8002").is_some());
    }
}
