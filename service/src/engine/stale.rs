//! Staleness: when the host cannot be read (out of file descriptors, out of memory), the engine
//! keeps the last state it read, and says so on the bus (the root's `StateStale`) with the
//! reason and since when, instead of letting clients trust it. A failed re-read is retried in
//! full at the next tick, then with a backoff of at most [`MAX_BACKOFF_TICKS`], until one
//! succeeds; the 1 Hz port poll retries by itself at every tick.
//!
//! Two sources are tracked apart, because each clears on its own evidence: a re-read failure
//! clears only after a full re-read succeeds (a partial one vouches only for what it read), a
//! poll failure after a poll reads every port attribute.

use std::time::{SystemTime, UNIX_EPOCH};

use tracing::{info, warn};

use super::Stale;
use crate::kernel::{PollTarget, PortReading};
use crate::model::{AttrError, Field};

/// The longest wait between two re-read attempts, in ticks (4 s at the default 1 Hz).
pub(super) const MAX_BACKOFF_TICKS: u64 = 4;
/// How many failures a reason names before it only counts the rest: a host of hundreds of
/// devices must not make the property hundreds of lines long.
const NAMED_FAILURES: usize = 3;

#[derive(Debug, Default)]
pub(super) struct Staleness {
    /// Why the last re-read failed, until a full re-read succeeds.
    read: Option<String>,
    /// Why the last port poll failed, until a poll succeeds.
    poll: Option<String>,
    /// When the state became stale (the first failure since it was last current).
    since_unix_us: Option<u64>,
    /// The tick at which the failed re-read is tried again.
    retry_at: Option<u64>,
    /// The wait before the pending retry, in ticks; 0 while re-reads succeed.
    backoff: u64,
}

impl Staleness {
    /// Whether a retry is due at `tick`; it is taken (a failure schedules the next).
    pub(super) fn retry_due(&mut self, tick: u64) -> bool {
        match self.retry_at {
            Some(at) if at <= tick => {
                self.retry_at = None;
                true
            }
            _ => false,
        }
    }

    /// Schedules a full re-read after a failure at `tick`, unless one is pending: at the next
    /// tick, then twice as long after each failed retry, up to [`MAX_BACKOFF_TICKS`].
    fn schedule_retry(&mut self, tick: u64) {
        if self.retry_at.is_none() {
            self.backoff = (self.backoff * 2).clamp(1, MAX_BACKOFF_TICKS);
            self.retry_at = Some(tick + self.backoff);
        }
    }

    /// What the root's `StateStale` shows.
    pub(super) fn published(&self) -> Option<Stale> {
        let reasons: Vec<&str> = [self.read.as_deref(), self.poll.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        if reasons.is_empty() {
            return None;
        }
        Some(Stale {
            reason: reasons.join("; "),
            since_unix_us: self.since_unix_us.unwrap_or(0),
        })
    }

    fn update_since(&mut self) {
        if self.read.is_none() && self.poll.is_none() {
            self.since_unix_us = None;
        } else if self.since_unix_us.is_none() {
            self.since_unix_us = Some(now_unix_us());
        }
    }
}

fn now_unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// `first; second; third and N more`.
pub(super) fn summarise(failures: &[String]) -> String {
    let mut s = failures
        .iter()
        .take(NAMED_FAILURES)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if failures.len() > NAMED_FAILURES {
        s.push_str(&format!(" and {} more", failures.len() - NAMED_FAILURES));
    }
    s
}

pub(super) fn is_unreadable<T>(f: &Field<T>) -> bool {
    matches!(f, Err(AttrError::Unreadable(_)))
}

/// Why a poll failed, if it did: a port attribute that exists but could not be read. (A
/// missing one is a vanished port, which the comparison with the state handles; traffic
/// counters that cannot be read only flag their samples.)
pub(super) fn unreadable(targets: &[PollTarget], readings: &[PortReading]) -> Option<String> {
    let failures: Vec<String> = targets
        .iter()
        .zip(readings)
        .filter_map(|(t, r)| {
            let errno = [
                r.state.as_ref().err(),
                r.phys_state.as_ref().err(),
                r.lid.as_ref().and_then(|l| l.as_ref().err()),
                r.sm_lid.as_ref().and_then(|l| l.as_ref().err()),
            ]
            .into_iter()
            .find_map(|e| match e {
                Some(AttrError::Unreadable(n)) => Some(*n),
                _ => None,
            })?;
            Some(format!("{} port {}: {errno}", t.dev, t.port))
        })
        .collect();
    (!failures.is_empty()).then(|| format!("port poll: {}", summarise(&failures)))
}

/// The two sources' transitions, as the engine reports them; it publishes [`Staleness::published`]
/// after each.
impl Staleness {
    /// A re-read failed at `tick`: the state is stale from now (if it was not already) and a
    /// full re-read is scheduled, unless one already is.
    pub(super) fn read_failed(&mut self, tick: u64, reason: String) {
        self.schedule_retry(tick);
        if self.read.is_none() {
            warn!(%reason, "the published state may be stale; re-reading until the host can be read");
        }
        self.read = Some(reason);
        self.update_since();
    }

    /// A full re-read succeeded: what it read is current.
    pub(super) fn read_succeeded(&mut self) {
        self.backoff = 0;
        self.retry_at = None;
        if self.read.take().is_some() {
            info!("the host could be read again; the published state is current");
        }
        self.update_since();
    }

    /// The result of one port poll: why it failed, or `None` when it read every port.
    pub(super) fn poll_result(&mut self, reason: Option<String>) {
        match (&self.poll, &reason) {
            (None, Some(r)) => warn!(reason = %r, "the port poll cannot read the host"),
            (Some(_), None) => info!("the port poll reads the host again"),
            _ => {}
        }
        self.poll = reason;
        self.update_since();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_names_three_failures_and_counts_the_rest() {
        let f: Vec<String> = (0..5).map(|i| format!("mlx5_{i}: EMFILE")).collect();
        assert_eq!(
            summarise(&f),
            "mlx5_0: EMFILE; mlx5_1: EMFILE; mlx5_2: EMFILE and 2 more"
        );
        assert_eq!(summarise(&f[..1]), "mlx5_0: EMFILE");
    }

    #[test]
    fn retries_back_off_to_a_bound_and_are_taken_once() {
        let mut s = Staleness::default();
        let mut waits = Vec::new();
        let mut tick = 10;
        for _ in 0..5 {
            s.schedule_retry(tick);
            let pending = s.retry_at;
            // Another failure before the retry does not push it back.
            s.schedule_retry(tick + 1);
            assert_eq!(s.retry_at, pending);
            let at = pending.expect("a retry is scheduled");
            assert!(!s.retry_due(at - 1));
            assert!(s.retry_due(at));
            assert!(!s.retry_due(at), "a retry is taken once");
            waits.push(at - tick);
            tick = at;
        }
        assert_eq!(waits, [1, 2, 4, 4, 4]);
    }

    #[test]
    fn staleness_is_published_until_both_sources_clear() {
        let mut s = Staleness {
            read: Some("RDMA netlink: EMFILE".into()),
            ..Staleness::default()
        };
        s.update_since();
        let since = s.since_unix_us.expect("since set");
        s.poll = Some("port poll: mlx5_0 port 1: EMFILE".into());
        s.update_since();
        let p = s.published().expect("stale");
        assert_eq!(p.since_unix_us, since, "since is the first failure");
        assert_eq!(
            p.reason,
            "RDMA netlink: EMFILE; port poll: mlx5_0 port 1: EMFILE"
        );
        s.read = None;
        s.update_since();
        assert!(s.published().is_some());
        s.poll = None;
        s.update_since();
        assert_eq!(s.published(), None);
        assert_eq!(s.since_unix_us, None);
    }
}
