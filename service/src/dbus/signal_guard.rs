//! Who gets ThroughputSampled when a subscriber stops reading.
//!
//! ThroughputSampled is broadcast at every tick. dbus-daemon queues a broadcast for each
//! subscriber until it reads, and charges the queued copies to rdma-managerd's incoming quota
//! (127 MiB): one connection that subscribes and never reads fills it in time, and the bus
//! then stops reading from rdma-managerd altogether. So before each emission the daemon asks
//! the bus how much of what it sent is still queued (`GetConnectionStats` of its own name,
//! `IncomingBytes`; root may ask on the stock system bus). Below [`OWN_QUEUE_HIGH`] the
//! signal is broadcast as always. Above, it is sent to each subscriber by name instead (the
//! same signal, with a destination: a client's match rule still matches it), found by the
//! bus's `GetAllMatchRules`, leaving out the subscribers that have more than
//! [`SUBSCRIBER_QUEUE_MAX`] queued: those do not read, and only they miss samples (which
//! `GetThroughputHistory` still gives them). A bus that does not answer (dbus-broker, which
//! bounds each receiver's queue itself, or one built without stats) gets the broadcast.
//!
//! A decision holds for [`RECHECK`]: the questions are bus round trips made before the
//! signal goes out, and asked at every tick of a fast tick they would load the bus that
//! every other client waits on, while the queues they measure move by a sample or two per
//! tick.

use std::collections::HashMap;
use std::time::Duration;

use zbus::Connection;

/// What rdma-managerd may have queued in the bus before the signal goes only to subscribers
/// that read: far below the bus's quota, far above what clients that read leave queued (a
/// GetManagedObjects reply or two being delivered).
pub const OWN_QUEUE_HIGH: u64 = 8 << 20;

/// What a subscriber may have queued and still be sent the signal: a few seconds of samples
/// of the largest host, and more than a reply being read.
pub const SUBSCRIBER_QUEUE_MAX: u64 = 4 << 20;

/// How long a question to the bus may take before the signal is broadcast anyway.
const ASK_TIMEOUT: Duration = Duration::from_secs(1);

/// How long one decision holds before the bus is asked again: a second's samples are far
/// below [`OWN_QUEUE_HIGH`]'s margin to the bus's quota, and a subscriber that starts reading
/// (or a new one) is sent the signal again within it.
pub const RECHECK: Duration = Duration::from_secs(1);

const DBUS_NAME: &str = "org.freedesktop.DBus";
const DBUS_PATH: &str = "/org/freedesktop/DBus";
const STATS: &str = "org.freedesktop.DBus.Debug.Stats";

/// The signal's identity, as match rules name it.
pub struct Signal<'a> {
    pub sender: &'a str,
    pub interface: &'a str,
    pub member: &'a str,
    pub path: &'a str,
}

/// Who is sent the signal this tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// Everyone subscribed: a broadcast.
    Broadcast,
    /// These connections, each by name; the others subscribed are not reading.
    To(Vec<String>),
}

/// Decides each tick's delivery for one connection, keeps a decision for [`RECHECK`], and
/// remembers a bus that does not tell its queues (dbus-broker has no `GetConnectionStats`; a
/// policy may deny it), so that it is not asked again at every tick.
#[derive(Debug, Default)]
pub struct SignalGuard {
    bus_untold: std::sync::atomic::AtomicBool,
    /// The last decision and when it was made.
    last: std::sync::Mutex<Option<(tokio::time::Instant, Delivery)>>,
}

impl SignalGuard {
    /// How this tick's signal is delivered (see the module's documentation).
    pub async fn delivery(&self, conn: &Connection, signal: &Signal<'_>) -> Delivery {
        let now = tokio::time::Instant::now();
        if let Some(kept) = self.kept_at(now) {
            return kept;
        }
        let decided = self.decide(conn, signal).await;
        self.keep(now, decided.clone());
        decided
    }

    /// The decision made less than [`RECHECK`] before `now`, if any.
    fn kept_at(&self, now: tokio::time::Instant) -> Option<Delivery> {
        let last = self.last.lock().ok()?;
        let (at, kept) = last.as_ref()?;
        (now.duration_since(*at) < RECHECK).then(|| kept.clone())
    }

    fn keep(&self, at: tokio::time::Instant, delivery: Delivery) {
        if let Ok(mut last) = self.last.lock() {
            *last = Some((at, delivery));
        }
    }

    async fn decide(&self, conn: &Connection, signal: &Signal<'_>) -> Delivery {
        use std::sync::atomic::Ordering;
        if self.bus_untold.load(Ordering::Relaxed) {
            return Delivery::Broadcast;
        }
        match tokio::time::timeout(ASK_TIMEOUT, targets(conn, signal)).await {
            Ok(Ok(Some(to))) => Delivery::To(to),
            Ok(Ok(None)) => Delivery::Broadcast,
            // The bus answered with an error: it will answer so again.
            Ok(Err(zbus::Error::MethodError(name, _, _))) => {
                tracing::debug!(error = %name, "the bus does not tell its queues: broadcasting from now on");
                self.bus_untold.store(true, Ordering::Relaxed);
                Delivery::Broadcast
            }
            Ok(Err(e)) => {
                tracing::trace!(error = %e, "the bus did not tell its queues: broadcasting");
                Delivery::Broadcast
            }
            Err(_) => Delivery::Broadcast,
        }
    }
}

async fn targets(conn: &Connection, signal: &Signal<'_>) -> zbus::Result<Option<Vec<String>>> {
    let Some(own) = conn.unique_name() else {
        return Ok(None);
    };
    let own = own.to_string();
    if stat(conn, &own, "IncomingBytes").await? < OWN_QUEUE_HIGH {
        return Ok(None);
    }
    let reply = conn
        .call_method(
            Some(DBUS_NAME),
            DBUS_PATH,
            Some(STATS),
            "GetAllMatchRules",
            &(),
        )
        .await?;
    let rules: HashMap<String, Vec<String>> = reply.body().deserialize()?;
    let mut to = Vec::new();
    let mut skipped = 0;
    for (name, rules) in rules {
        if name == own || !rules.iter().any(|r| rule_matches(r, signal, &name)) {
            continue;
        }
        match stat(conn, &name, "OutgoingBytes").await {
            Ok(q) if q <= SUBSCRIBER_QUEUE_MAX => to.push(name),
            Ok(_) => skipped += 1,
            // Gone meanwhile.
            Err(_) => {}
        }
    }
    tracing::debug!(
        sent = to.len(),
        skipped,
        "rdma-managerd's queue in the bus is long: the signal goes to subscribers that read"
    );
    to.sort();
    Ok(Some(to))
}

/// One counter of `GetConnectionStats(name)`.
async fn stat(conn: &Connection, name: &str, field: &str) -> zbus::Result<u64> {
    let reply = conn
        .call_method(
            Some(DBUS_NAME),
            DBUS_PATH,
            Some(STATS),
            "GetConnectionStats",
            &(name,),
        )
        .await?;
    let stats: HashMap<String, zbus::zvariant::OwnedValue> = reply.body().deserialize()?;
    stats
        .get(field)
        .and_then(|v| u32::try_from(v).ok())
        .map(u64::from)
        .ok_or_else(|| zbus::Error::Failure(format!("no {field} in GetConnectionStats")))
}

/// Whether a match rule of connection `owner` would receive `signal` broadcast. Keys the
/// daemon cannot judge (`arg0`..., `arg0path`...) count as matching: the subscriber's own
/// library filters what it is sent.
pub fn rule_matches(rule: &str, signal: &Signal<'_>, owner: &str) -> bool {
    for (key, value) in rule_pairs(rule) {
        let ok = match key.as_str() {
            "type" => value == "signal",
            "sender" => value == signal.sender || value == rdma_manager_dbus::BUS_NAME,
            "interface" => value == signal.interface,
            "member" => value == signal.member,
            "path" => value == signal.path,
            "path_namespace" => {
                value == "/"
                    || signal.path == value
                    || signal
                        .path
                        .strip_prefix(value.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            }
            "destination" => value == owner,
            "eavesdrop" => true,
            _ => key.starts_with("arg"),
        };
        if !ok {
            return false;
        }
    }
    true
}

/// `key='value'` pairs of a match rule (`'\''` quoting as the specification has it).
fn rule_pairs(rule: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = rule.trim();
    while !rest.is_empty() {
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq].trim().to_string();
        rest = &rest[eq + 1..];
        let mut value = String::new();
        let mut quoted = false;
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            match c {
                '\'' => quoted = !quoted,
                ',' if !quoted => {
                    end = i;
                    break;
                }
                c => value.push(c),
            }
        }
        out.push((key, value));
        rest = rest.get(end + 1..).unwrap_or("");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIGNAL: Signal<'static> = Signal {
        sender: ":1.5",
        interface: "org.rdmamanager.RdmaManager1",
        member: "ThroughputSampled",
        path: "/org/rdmamanager/RdmaManager1",
    };

    #[test]
    fn match_rules_that_receive_the_signal() {
        for rule in [
            "type='signal'",
            "",
            "type='signal',interface='org.rdmamanager.RdmaManager1',member='ThroughputSampled'",
            "type='signal',sender='org.rdmamanager.RdmaManager1',path_namespace='/org/rdmamanager'",
            "type='signal',sender=':1.5',arg0='x'",
            "type='signal',path='/org/rdmamanager/RdmaManager1',eavesdrop='true'",
        ] {
            assert!(rule_matches(rule, &SIGNAL, ":1.9"), "{rule}");
        }
        for rule in [
            "type='method_call'",
            "type='signal',member='PropertiesChanged'",
            "type='signal',interface='org.freedesktop.DBus.Properties'",
            "type='signal',sender='org.freedesktop.NetworkManager'",
            "type='signal',path_namespace='/org/rdma'",
            "type='signal',destination=':1.10'",
        ] {
            assert!(!rule_matches(rule, &SIGNAL, ":1.9"), "{rule}");
        }
    }

    #[test]
    fn a_decision_holds_for_the_recheck_interval_only() {
        let guard = SignalGuard::default();
        let t0 = tokio::time::Instant::now();
        assert_eq!(guard.kept_at(t0), None, "nothing decided yet");
        let to = Delivery::To(vec![":1.9".to_string()]);
        guard.keep(t0, to.clone());
        assert_eq!(guard.kept_at(t0 + RECHECK / 2), Some(to));
        assert_eq!(guard.kept_at(t0 + RECHECK), None, "the bus is asked again");
    }

    #[test]
    fn quoted_commas_stay_in_the_value() {
        assert_eq!(
            rule_pairs("arg0='a,b',member='M'"),
            vec![
                ("arg0".to_string(), "a,b".to_string()),
                ("member".to_string(), "M".to_string())
            ]
        );
    }
}
