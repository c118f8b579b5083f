//! Monitoring: what keeps the published state current without being asked, one tick at a
//! time. The tick decides what is due (a retried re-read, the devices a netdev event asked to
//! see again, the sweep's share, the periodic resync), then polls the ports off the engine
//! task and records their throughput history. [`Monitor`] holds that bookkeeping; the engine
//! (`mod.rs`) routes what it decides to the shared state, and publishes.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tracing::warn;

use super::clock::{SampledTicks, TickClock};
use super::history::{History, Sample};
use super::stale::{self, Staleness};
use super::sweep::{SweepCursor, Swept};
use super::{DeviceState, EngineConfig, ObservedState, Stale};
use crate::kernel::{Host, LidTurn, PollTarget, PortPoller, PortReading, StatePoll};

/// The monitoring half of the engine: tick counters, the poll's plan and poller, the sweep's
/// cursor, the staleness marks and the throughput histories.
pub(super) struct Monitor {
    config: EngineConfig,
    clock: TickClock,
    /// Shared with [`super::EngineHandle`], which serves the bus's history reads.
    history: Arc<Mutex<History>>,
    poll: PortPoll,
    sweep: SweepCursor,
    /// Why the published state may be behind the kernel (see `stale.rs`).
    stale: Staleness,
    /// Devices re-read for a netdev event, to be re-read once more at the next tick: the
    /// kernel announces a link going down on rtnetlink before rxe's notifier has changed
    /// the port, so the first re-read may still see it ACTIVE (and the poll does not read
    /// a soft device's port state).
    reread_next_tick: BTreeSet<String>,
    /// The tick (since the start) of the last periodic resync: the next is due
    /// `resync_ticks` later. Ticks the engine could not keep up with are skipped, so a
    /// multiple of the period may never be seen.
    resynced_at: u64,
}

/// The 1 Hz port poll's own state.
struct PortPoll {
    plan: Arc<PollPlan>,
    /// Taken while a poll runs on a blocking task.
    poller: Option<Box<dyn PortPoller>>,
    /// Polls made so far: whose LIDs the next one reads (see `LidTurn`).
    polls: u64,
    /// The ticks sampled so far: each is sampled once.
    sampled: SampledTicks,
    /// Devices re-read since the last poll, whose kept descriptors must be dropped.
    forget: Vec<String>,
}

/// What one tick does before its poll, decided at its start.
pub(super) struct TickWork {
    /// The tick, as the clock gave it at the start.
    pub tick: u64,
    /// A failed re-read is retried in full: nothing else is re-read at this tick.
    pub full_reread: bool,
    /// Devices a netdev event asked to re-read once more.
    pub reread: BTreeSet<String>,
    /// The sweep's share is due.
    pub sweep: bool,
    /// The periodic resync of what the sweep does not cover is due.
    pub resync: bool,
}

/// One poll's readings, in the order of its plan's targets.
pub(super) struct Polled {
    plan: Arc<PollPlan>,
    readings: Vec<PortReading>,
    lids: LidTurn,
    /// When the poll started reading (on the blocking pool, after any wait for a thread):
    /// rates are over the time between two polls' reads, not the nominal period.
    read_at: Instant,
}

/// What a poll recorded.
pub(super) struct Recorded {
    /// The samples, keyed by (device index, port).
    pub samples: Vec<((u32, u32), Sample)>,
    /// The devices whose polled port attributes differ from the published state.
    pub moved: BTreeSet<String>,
}

impl Polled {
    /// Why the poll failed, if it did (see [`stale::unreadable`]).
    pub(super) fn unreadable(&self) -> Option<String> {
        stale::unreadable(&self.plan.targets, &self.readings)
    }
}

impl Monitor {
    pub(super) fn new(
        config: EngineConfig,
        clock: TickClock,
        history: Arc<Mutex<History>>,
        plan: Arc<PollPlan>,
        poller: Box<dyn PortPoller>,
    ) -> Monitor {
        Monitor {
            config,
            clock,
            history,
            poll: PortPoll {
                plan,
                poller: Some(poller),
                polls: 0,
                sampled: SampledTicks::default(),
                forget: Vec::new(),
            },
            sweep: SweepCursor::default(),
            stale: Staleness::default(),
            reread_next_tick: BTreeSet::new(),
            resynced_at: 0,
        }
    }

    /// The tick's period: how often the engine calls [`Monitor::begin_tick`].
    pub(super) fn period(&self) -> std::time::Duration {
        self.config.tick
    }

    /// More distinct names than this in one batch of events is a storm: re-enumerate.
    pub(super) fn storm_threshold(&self) -> usize {
        self.config.storm_threshold
    }

    /// A re-read failed: see [`Staleness::read_failed`].
    pub(super) fn read_failed(&mut self, reason: String) {
        let tick = self.clock.now();
        self.stale.read_failed(tick, reason);
    }

    /// A full re-read succeeded: see [`Staleness::read_succeeded`].
    pub(super) fn read_succeeded(&mut self) {
        self.stale.read_succeeded();
    }

    /// One port poll's result: see [`Staleness::poll_result`].
    pub(super) fn poll_result(&mut self, reason: Option<String>) {
        self.stale.poll_result(reason);
    }

    /// The staleness to publish (the root's `StateStale`).
    pub(super) fn stale(&self) -> Option<Stale> {
        self.stale.published()
    }

    /// What this tick does; `None` when the interval fired twice within one tick of the
    /// clock (see `SampledTicks`).
    pub(super) fn begin_tick(&mut self) -> Option<TickWork> {
        let tick = self.clock.now();
        if !self.poll.sampled.take(tick) {
            return None;
        }
        // A failed re-read is retried in full at the next tick, then with a backoff of a few
        // ticks, rather than left to the periodic resync.
        let mut work = TickWork {
            tick,
            full_reread: self.stale.retry_due(tick),
            reread: BTreeSet::new(),
            sweep: false,
            resync: false,
        };
        if work.full_reread {
            return Some(work);
        }
        let since = self.clock.since_start(tick);
        work.reread = std::mem::take(&mut self.reread_next_tick);
        work.sweep = tick % self.config.sweep_period_ticks.max(1) == 0;
        work.resync = resync_due(since, self.resynced_at, self.config.resync_ticks);
        if work.resync {
            self.resynced_at = since;
        }
        Some(work)
    }

    /// Reads the plan's ports on a blocking task. `None` while no poller is held; `Err` with
    /// the reason when the poll's task failed (a new poller is started for the next tick).
    pub(super) async fn poll_ports(&mut self, host: &dyn Host) -> Option<Result<Polled, String>> {
        let plan = self.poll.plan.clone();
        let mut poller = self.poll.poller.take()?;
        for dev in self.poll.forget.drain(..) {
            poller.forget(&dev);
        }
        let lids = LidTurn::of(self.poll.polls, self.config.lid_ticks);
        self.poll.polls += 1;
        let polled = {
            let plan = plan.clone();
            tokio::task::spawn_blocking(move || {
                let read_at = Instant::now();
                let readings = poller.poll(&plan.targets, lids);
                (poller, readings, read_at)
            })
            .await
        };
        Some(match polled {
            Ok((poller, readings, read_at)) => {
                self.poll.poller = Some(poller);
                Ok(Polled {
                    plan,
                    readings,
                    lids,
                    read_at,
                })
            }
            Err(e) => {
                warn!(error = %e, "port poll failed; starting a new poller");
                self.poll.poller = Some(host.port_poller());
                Err(format!("port poll failed: {e}"))
            }
        })
    }

    /// Records a poll's throughput samples at `tick`, and returns them with the devices
    /// whose polled port attributes differ from the published state.
    pub(super) fn record(&mut self, state: &ObservedState, polled: &Polled, tick: u64) -> Recorded {
        let read_at = self.clock.secs_since_start(polled.read_at);
        let plan = &polled.plan;
        let mut moved = BTreeSet::new();
        let mut samples = Vec::with_capacity(polled.readings.len());
        let mut h = self.history.lock().unwrap_or_else(|p| p.into_inner());
        let all = plan.keys.iter().zip(&plan.targets).zip(&polled.readings);
        for (i, ((key, t), r)) in all.enumerate() {
            let state_polled = t.state.read(polled.lids.includes(i));
            if port_moved(state, key.0, key.1, state_polled, r) {
                moved.insert(t.dev.clone());
            }
            samples.push((*key, h.port_mut(*key).record(tick, read_at, &r.traffic)));
        }
        Recorded { samples, moved }
    }

    /// The sweep's share of this tick (see `sweep.rs`).
    pub(super) async fn sweep(&mut self, host: &dyn Host, state: &mut ObservedState) -> Swept {
        let tick = self.clock.now();
        let swept = self
            .sweep
            .run(
                host,
                state,
                tick,
                self.config.sweep_devices_per_tick,
                self.config.resync_ticks,
            )
            .await;
        if let Swept::Read { devices, .. } = &swept {
            self.poll.forget.extend(devices.iter().cloned());
        }
        swept
    }

    /// The devices changed: the poll's plan follows. `watched`: the devices whose port state
    /// changes come as events, read less often.
    pub(super) fn replan(&mut self, state: &ObservedState, watched: &BTreeSet<String>) {
        self.poll.plan = Arc::new(PollPlan::of(state, watched));
    }

    /// Drops the histories of ports the state no longer has.
    pub(super) fn retain_history(&self, state: &ObservedState) {
        let mut h = self.history.lock().unwrap_or_else(|p| p.into_inner());
        h.retain(|(dev, port)| {
            state
                .devices
                .get(dev)
                .is_some_and(|d| d.sources.contains_key(port))
        });
    }

    /// `names` were re-read: the poll drops the descriptors it kept for them.
    pub(super) fn forget(&mut self, names: impl IntoIterator<Item = String>) {
        self.poll.forget.extend(names);
    }

    /// `name` is re-read once more at the next tick.
    pub(super) fn reread_at_next_tick(&mut self, name: String) {
        self.reread_next_tick.insert(name);
    }

    /// Kernel events came: whatever they were about, the sweep dumps the device list afresh.
    pub(super) fn events_seen(&mut self) {
        self.sweep.forget_device_list();
    }
}

/// Whether a resync is due at tick `since` (since the start), the last having been at
/// `last`: once `every` ticks have passed, not at multiples of `every`, which a slow tick can
/// step over (the clock's tick is the nearest to the time the tick runs).
fn resync_due(since: u64, last: u64, every: u64) -> bool {
    since >= last.saturating_add(every.max(1))
}

/// Whether the poll saw a port attribute that differs from the published state.
fn port_moved(
    state: &ObservedState,
    index: u32,
    port: u32,
    state_polled: bool,
    r: &PortReading,
) -> bool {
    let Some(p) = state.devices.get(&index).and_then(|d| d.snap.port(port)) else {
        return false;
    };
    // A value that could not be read is unknown, not changed: the poll's failure is
    // published as staleness instead, and the first clean poll compares again.
    let moved = |published: bool, unreadable: bool| !published && !unreadable;
    (state_polled
        && (moved(p.state == r.state, stale::is_unreadable(&r.state))
            || moved(
                p.phys_state == r.phys_state,
                stale::is_unreadable(&r.phys_state),
            )))
        // LIDs not read by this poll (not the port's turn) are not compared.
        || r
            .lid
            .as_ref()
            .is_some_and(|l| moved(p.lid == *l, stale::is_unreadable(l)))
        || r
            .sm_lid
            .as_ref()
            .is_some_and(|l| moved(p.sm_lid == *l, stale::is_unreadable(l)))
}

/// The ports the 1 Hz poll reads, derived from the state when devices change (not at every
/// tick): `keys[i]` is the (device index, port) of `targets[i]`.
pub(super) struct PollPlan {
    pub(super) keys: Vec<(u32, u32)>,
    pub(super) targets: Vec<PollTarget>,
}

impl PollPlan {
    /// `watched`: the devices whose ports' state changes come as events (see
    /// `kernel::port_events`).
    pub(super) fn of(state: &ObservedState, watched: &BTreeSet<String>) -> PollPlan {
        let (keys, targets) = state
            .devices
            .values()
            .flat_map(|d| {
                d.sources.values().map(|s| {
                    (
                        (d.index, s.port),
                        PollTarget {
                            dev: d.name().to_string(),
                            port: s.port,
                            counters: s.counters.clone(),
                            lids: d
                                .snap
                                .port(s.port)
                                .is_none_or(|p| crate::kernel::sysfs::has_lids(&p.link_layer)),
                            state: Self::state_poll(d, s.netdev.is_some(), watched),
                        },
                    )
                })
            })
            .unzip();
        PollPlan { keys, targets }
    }

    /// When a port of `d` has its state read. A soft device's port state follows its
    /// netdev: the netdev's rtnetlink events re-read the device (now and a tick later), so
    /// its state is never polled (512 files a second on 256 rxe devices). A watched
    /// device's port events say when its state moves: read in the port's turn only, for
    /// what no event says.
    fn state_poll(d: &DeviceState, on_netdev: bool, watched: &BTreeSet<String>) -> StatePoll {
        let soft = matches!(
            d.snap.kind,
            crate::model::DeviceKind::Rxe | crate::model::DeviceKind::Siw
        );
        if soft && on_netdev {
            StatePoll::Never
        } else if watched.contains(d.name()) {
            StatePoll::InTurn
        } else {
            StatePoll::EveryPoll
        }
    }
}

#[cfg(test)]
mod tests {
    use super::resync_due;

    #[test]
    fn a_resync_is_due_once_its_period_passed_even_past_a_skipped_multiple() {
        assert!(!resync_due(0, 0, 60));
        assert!(!resync_due(59, 0, 60));
        assert!(resync_due(60, 0, 60));
        // Tick 60 was stepped over (a slow tick): 61 still resyncs; a check of multiples of
        // 60 would have waited for tick 120.
        assert!(resync_due(61, 0, 60));
        assert!(!resync_due(120, 61, 60));
        assert!(resync_due(121, 61, 60));
        // A period of 0 is taken as every tick, not as never.
        assert!(resync_due(1, 0, 0));
    }
}
