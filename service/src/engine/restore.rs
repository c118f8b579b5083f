//! Re-applying what was persisted: at start, and when a device or network interface appears
//! (added, or renamed to a name). Each area looks only at what appeared, so a change the user
//! made by hand to something already present is left alone until it appears again.
//!
//! A restore that fails is logged and not retried until the thing appears again: nothing here
//! answers a caller, and a failing step must not turn into a loop.

use std::collections::BTreeSet;

use super::ops_ipoib::restore_ipoib;
use super::ops_roce::restore_roce;
use super::ops_soft_links::restore_soft_links;
use super::Engine;

/// What appeared since the last restore.
#[derive(Debug, Clone, Default)]
pub(crate) struct Appeared {
    /// Daemon start: everything present counts as appeared.
    pub start: bool,
    /// RDMA device names.
    pub devices: BTreeSet<String>,
    /// Network interface names.
    pub netdevs: BTreeSet<String>,
}

impl Appeared {
    pub fn start() -> Appeared {
        Appeared {
            start: true,
            ..Appeared::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        !self.start && self.devices.is_empty() && self.netdevs.is_empty()
    }

    pub fn device(&self, name: &str) -> bool {
        self.start || self.devices.contains(name)
    }

    pub fn netdev(&self, name: &str) -> bool {
        self.start || self.netdevs.contains(name)
    }
}

/// Re-applies every area for what appeared. Soft links go first: a restored link is a
/// device that appears, and its RoCE settings follow on its add event.
pub(super) async fn restore(eng: &mut Engine, appeared: &Appeared) {
    restore_soft_links(eng, appeared).await;
    restore_ipoib(eng, appeared).await;
    restore_roce(eng, appeared).await;
}
