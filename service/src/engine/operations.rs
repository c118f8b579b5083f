//! The operations half of the engine. Jobs (each feature's `ops_*` file) run one at a time on
//! the engine task; what they must ask of slow services (systemd, firewalld, NetworkManager) is
//! asked on other tasks, whose results come back as jobs through the engine's own queue.
//! [`Operations`] holds what jobs need beside the shared state; below it, what a job calls on
//! the engine: `settle` after a kernel change, `config` and `persist` for its persisted area.
//!
//! Persistence: an operation reads the area it changes, makes its change in the kernel, then
//! saves the new area. Only a save that succeeded replaces what the engine holds, so a failed
//! write leaves file and memory as they were.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::host_setup::apply_units_status;
use super::host_setup::{load_units_status, HostSetupShared};
use super::nm_owners::NmOwners;
use super::ops_ipoib::sync_nm_owners;
use super::{Dirty, Engine, Job, OpError};
use crate::config::{self, ConfigFile};

pub(super) struct Operations {
    /// How host setup reaches systemd and firewalld; asked off the engine task only.
    pub(super) host_setup: Arc<HostSetupShared>,
    /// Which interfaces NetworkManager owns, as last asked.
    pub(super) nm: Arc<NmOwners>,
    /// The number of the units' status last taken (see `ops_host`).
    units_status_seq: u64,
    /// The engine's own queue, for results of work it started on other tasks; weak, so the
    /// engine still ends when every handle is gone.
    commands: mpsc::WeakSender<Job>,
    /// The restore left IPoIB interfaces alone because NetworkManager runs but did not say
    /// which profiles it has: done when it first answers (see `nm_owners`).
    ipoib_restore_deferred: bool,
    /// The link tests, shared with the handle (`EngineHandle::set_link_tests`): told when
    /// the devices change, so their responder serves the InfiniBand ports there are.
    pub(super) link_tests: Arc<std::sync::OnceLock<Arc<crate::linktest::LinkTests>>>,
}

impl Operations {
    pub(super) fn new(
        host_setup: Arc<HostSetupShared>,
        nm: Arc<NmOwners>,
        commands: mpsc::WeakSender<Job>,
        link_tests: Arc<std::sync::OnceLock<Arc<crate::linktest::LinkTests>>>,
    ) -> Operations {
        Operations {
            host_setup,
            nm,
            units_status_seq: 0,
            commands,
            ipoib_restore_deferred: false,
            link_tests,
        }
    }

    /// Whether the units' status asked as number `seq` is to be taken: not when one asked
    /// later was already taken. Taken if so.
    pub(super) fn take_units_status(&mut self, seq: u64) -> bool {
        if seq > self.units_status_seq {
            self.units_status_seq = seq;
            true
        } else {
            false
        }
    }

    /// The restore left IPoIB interfaces alone until NetworkManager answers.
    pub(super) fn defer_ipoib_restore(&mut self) {
        self.ipoib_restore_deferred = true;
    }

    /// Whether a deferred IPoIB restore is due now that NetworkManager answered; taken if so.
    pub(super) fn take_deferred_ipoib_restore(&mut self) -> bool {
        if self.ipoib_restore_deferred && !self.nm.unanswered() {
            self.ipoib_restore_deferred = false;
            true
        } else {
            false
        }
    }

    /// Asks systemd for the units' status and NetworkManager for its profiles on a task of
    /// their own, which sends the answers back as an engine job, so that a slow or hung
    /// service never stalls the poll. One such task at a time.
    pub(super) fn fetch_units_and_owners(&self) {
        if self.host_setup.fetching.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = self.host_setup.clone();
        let commands = self.commands.clone();
        let nm = self.nm.clone();
        tokio::spawn(async move {
            let seq = shared.next_status();
            let units = load_units_status(shared.system.as_ref()).await;
            // NetworkManager's profiles too, so that IPoIB owners follow profiles added or
            // deleted with nmcli (within one re-read period).
            nm.refresh().await;
            shared.fetching.store(false, Ordering::Release);
            if let Some(tx) = commands.upgrade() {
                let job: Job = Box::new(move |e: &mut Engine| {
                    Box::pin(async move {
                        apply_units_status(e, seq, units, false).await;
                        sync_nm_owners(e).await;
                    })
                });
                let _ = tx.send(job).await;
            }
        });
    }
}

/// What a job calls on the engine beside the state and the host.
impl Engine {
    /// Re-reads the named devices after a change and publishes before the caller is answered,
    /// so that an object path returned to it already exists.
    pub(super) async fn settle(&mut self, names: &[&str]) -> Result<(), OpError> {
        let set: BTreeSet<String> = names.iter().map(|s| s.to_string()).collect();
        self.monitor.forget(set.iter().cloned());
        let host = self.host.clone();
        let dirty = match self.state.refresh_devices(host.as_ref(), &set).await {
            Ok(d) => d,
            Err(e) => {
                self.read_failed(e.to_string()).await;
                return Err(OpError::from_host(e));
            }
        };
        self.publish_read(dirty).await;
        Ok(())
    }

    /// A copy of a persisted area to change, or why it cannot be changed (a broken file).
    pub(super) fn config<T: ConfigFile>(&self) -> Result<T, OpError> {
        T::slot(&self.state.config).clone().map_err(OpError::from)
    }

    /// Saves `value` as its area and publishes the change; nothing changes when the write fails.
    pub(super) async fn persist<T: ConfigFile>(&mut self, value: T) -> Result<(), OpError> {
        if T::slot(&self.state.config).as_ref().ok() == Some(&value) {
            return Ok(());
        }
        config::save(self.host.as_ref(), &value).await?;
        *T::slot_mut(&mut self.state.config) = Ok(value);
        self.publish(Dirty {
            config: true,
            ..Dirty::default()
        })
        .await;
        Ok(())
    }
}
