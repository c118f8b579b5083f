//! The sweep: a few devices re-read at each of its ticks, in turn by name, for changes no
//! event reports (a P_Key table or a GID prefix set by the subnet manager, a node description
//! written by hand), and, at the start of each pass, any device the kernel lists that the
//! state lacks (an add whose event was lost).
//!
//! It replaces a full re-enumeration every minute, whose cost grew with the host (on a real
//! kernel with 256 rxe devices, tens of seconds of sysfs reads at once).

use std::collections::BTreeSet;

use tracing::debug;

use super::wanted::Wanted;
use super::{Dirty, ObservedState};
use crate::kernel::{Host, HostError, NlDevice};

/// Where the sweep is, between its ticks.
#[derive(Default)]
pub(super) struct SweepCursor {
    /// The device re-read last; the next tick goes on after it, by name.
    after: Option<String>,
    /// The tick the kernel's devices were last listed at.
    listed_at: Option<u64>,
    /// The RDMA netlink device list the re-reads use, and the tick it was dumped at.
    nl: Option<(Vec<NlDevice>, u64)>,
}

/// What one tick of the sweep found.
pub(super) enum Swept {
    /// Nothing was re-read (no devices, or the device list could not be had).
    Nothing,
    /// The kernel lists devices the state lacks: to be re-read as an event would have them,
    /// with the turn's devices.
    Missing(Wanted),
    /// The turn's `devices` were re-read into the state.
    Read {
        devices: BTreeSet<String>,
        result: Result<Dirty, HostError>,
    },
}

impl SweepCursor {
    /// The share of tick `tick`: the next `per_tick` devices after the last one swept
    /// (wrapping around). The kernel's device list is read at the start of each pass, and
    /// at least every `resync_ticks`.
    pub(super) async fn run(
        &mut self,
        host: &dyn Host,
        state: &mut ObservedState,
        tick: u64,
        per_tick: usize,
        resync_ticks: u64,
    ) -> Swept {
        let mut wanted = Wanted::default();
        let names: BTreeSet<&str> = state.devices.values().map(|d| d.name()).collect();
        let after = self.after.as_deref().unwrap_or("");
        let turn: Vec<String> = names
            .range::<str, _>((std::ops::Bound::Excluded(after), std::ops::Bound::Unbounded))
            .chain(names.iter())
            .take(per_tick.min(names.len()))
            .map(|n| n.to_string())
            .collect();
        // A device added with its event lost (which no overflow reported) is found within
        // a pass, and the list (256 directory entries a tick on a host of 256 devices, a
        // fifth of an idle daemon's CPU with the look-ups) is not read at every tick.
        let new_pass = turn.first().is_none_or(|first| {
            names
                .first()
                .is_some_and(|lowest| *lowest == first.as_str())
        });
        let list_due = self
            .listed_at
            .is_none_or(|at| tick.saturating_sub(at) >= resync_ticks);
        if new_pass || list_due {
            match host.rdma_device_names().await {
                Ok(listed) => {
                    self.listed_at = Some(tick);
                    for name in listed {
                        if !names.contains(name.as_str()) {
                            wanted.appeared.devices.insert(name.clone());
                            wanted.devices.insert(name);
                        }
                    }
                }
                Err(e) => debug!(error = %e, "the sweep cannot list the devices"),
            }
        }
        drop(names);
        if let Some(last) = turn.last() {
            self.after = Some(last.clone());
        }
        if !wanted.devices.is_empty() {
            wanted.devices.extend(turn);
            return Swept::Missing(wanted);
        }
        // The turn's devices are re-read with the netlink device list of an earlier tick:
        // dumping every device to re-read one costs more than the read itself on a host of
        // hundreds of devices. The list is dumped again after any event, when it lacks a
        // device the sweep re-reads, and every `resync_ticks`: a device removed and added
        // again under the same name with both events lost is seen within that.
        let fresh = |nl: &(Vec<NlDevice>, u64)| {
            tick.saturating_sub(nl.1) < resync_ticks
                && turn.iter().all(|n| nl.0.iter().any(|d| d.name == *n))
        };
        if !self.nl.as_ref().is_some_and(fresh) {
            match host.nl_devices().await {
                Ok(nl) => self.nl = Some((nl, tick)),
                Err(e) => {
                    debug!(error = %e, "the sweep cannot list the devices over netlink");
                    return Swept::Nothing;
                }
            }
        }
        let Some(nl) = self.nl.take() else {
            return Swept::Nothing;
        };
        let devices: BTreeSet<String> = turn.into_iter().collect();
        let result = state.refresh_devices_with(host, &devices, &nl.0).await;
        self.nl = Some(nl);
        Swept::Read { devices, result }
    }

    /// Kernel events came: the netlink device list is dumped afresh at the next re-read.
    pub(super) fn forget_device_list(&mut self) {
        self.nl = None;
    }
}
