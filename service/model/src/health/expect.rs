//! The expectations of a node health check, as the state document's `health` section and
//! `CheckHealth` take them (docs/STATE.md, "health"), and the checks they get before the host
//! is looked at. Every struct refuses unknown keys, so a misspelt expectation is refused
//! rather than silently not checked.

use std::collections::BTreeSet;

use rdma_manager_dbus::text::quote_capped;
use serde::{Deserialize, Serialize};

use crate::names::validate_rdma_name;
use crate::state_error::StateError;

/// The longest counter window: the check waits it out inside one D-Bus call, which clients
/// give up on after 25 s by default.
pub const MAX_COUNTER_WINDOW_S: u32 = 20;

/// How many state changes the daemon remembers per port for the flap window; a `max` must
/// stay below it to be decidable.
pub const FLAP_MEMORY: usize = 64;

/// The longest flap window: a day.
pub const MAX_FLAP_WINDOW_S: u32 = 86_400;

/// The error counters a counter window watches when it names none: the PMA PortCounters
/// that count link trouble (what `ibqueryerrors` reports).
pub const DEFAULT_ERROR_COUNTERS: [&str; 9] = [
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_xmit_discards",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "port_rcv_constraint_errors",
];

/// The logical states a port can be expected in (sysfs's words).
pub use rdma_manager_dbus::PORT_STATES;

/// The physical states a port can be expected in (sysfs's words).
pub use rdma_manager_dbus::PORT_PHYS_STATES as PHYS_STATES;

/// The link layers a port can be expected to have.
pub const LINK_LAYERS: [&str; 2] = ["InfiniBand", "Ethernet"];

/// What a healthy node looks like. Every key is optional; an absent one is not checked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Health {
    /// Expectations on ports: each entry names a port, every port of a device, or every
    /// port of the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<PortExpectation>>,
    /// At least this many RDMA ports present on the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_ports: Option<u32>,
    /// Hardware devices of one board (board id, else HCA type) run one firmware version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware_equal: Option<bool>,
    /// No error counter of any port rises over a window the check waits out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_counters: Option<CounterWindow>,
    /// Each port's logical state changed at most `max` times over the last `window-seconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flaps: Option<FlapWindow>,
}

impl Health {
    /// Whether the section asks nothing.
    pub fn is_empty(&self) -> bool {
        self.ports.as_ref().is_none_or(Vec::is_empty)
            && self.min_ports.is_none()
            && self.firmware_equal != Some(true)
            && self.error_counters.is_none()
            && self.flaps.is_none()
    }

    /// The expectations of `self` and then those of `other`, as the state directory's files
    /// add up (a key given by both: `other`'s).
    pub fn merged(mut self, other: Health) -> Health {
        if let Some(more) = other.ports {
            self.ports.get_or_insert_with(Vec::new).extend(more);
        }
        self.min_ports = other.min_ports.or(self.min_ports);
        self.firmware_equal = other.firmware_equal.or(self.firmware_equal);
        self.error_counters = other.error_counters.or(self.error_counters);
        self.flaps = other.flaps.or(self.flaps);
        self
    }
}

/// A rate in Gb/s, as sysfs's `rate` gives it (2.5 for 1X SDR). Never NaN: the check refuses
/// anything but a finite number not below 0.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Gbps(pub f64);

impl Eq for Gbps {}

/// Expectations on the ports an entry names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PortExpectation {
    /// The device's kernel name; absent: every device. A named device (with a port, that
    /// port) must be present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The port number; absent: every port of the device(s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u32>,
    /// Logical state: DOWN, INIT, ARMED, ACTIVE or ACTIVE_DEFER.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Physical state: LinkUp, Polling, Disabled, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phys_state: Option<String>,
    /// At least this rate, in Gb/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rate_gbps: Option<Gbps>,
    /// InfiniBand or Ethernet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_layer: Option<String>,
    /// The MTU of the port's network interface (its IPoIB interface, or a RoCE port's
    /// netdev), in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
}

impl PortExpectation {
    /// Whether the entry expects anything of its ports beyond their presence.
    pub fn expects_values(&self) -> bool {
        self.state.is_some()
            || self.phys_state.is_some()
            || self.min_rate_gbps.is_some()
            || self.link_layer.is_some()
            || self.mtu.is_some()
    }
}

/// Error counters read at the start and the end of a window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct CounterWindow {
    /// How long the check waits between its two readings, 1 to 20 s.
    pub window_seconds: u32,
    /// The counters watched, under `Port.GetCounters`' names (`symbol_error`,
    /// `hw.rcvd_seq_err`, ...); absent: [`DEFAULT_ERROR_COUNTERS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Vec<String>>,
}

impl CounterWindow {
    /// The counters watched.
    pub fn names(&self) -> Vec<String> {
        match &self.counters {
            Some(c) => c.clone(),
            None => DEFAULT_ERROR_COUNTERS
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }
}

/// Link flaps: changes of a port's logical state the daemon counted from its events and poll.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct FlapWindow {
    /// How far back the changes are counted, 1 s to a day.
    pub window_seconds: u32,
    /// The most changes a port may have had in the window (down and up again is two).
    pub max: u32,
}

fn words(list: &[&str]) -> String {
    list.join(", ")
}

/// Checks what the section says that needs no host; refusals name `health.<key path>`.
pub fn check(health: &Health) -> Result<(), StateError> {
    if let Some(ports) = &health.ports {
        let mut seen = BTreeSet::new();
        for (i, e) in ports.iter().enumerate() {
            check_port(&format!("health.ports[{i}]"), e, &mut seen)?;
        }
    }
    if let Some(w) = &health.error_counters {
        if !(1..=MAX_COUNTER_WINDOW_S).contains(&w.window_seconds) {
            return Err(StateError::invalid(
                "health.error-counters.window-seconds",
                format!(
                    "a window of {} s is outside 1 to {MAX_COUNTER_WINDOW_S} s (the check \
                     waits it out within one call)",
                    w.window_seconds
                ),
            ));
        }
        if let Some(names) = &w.counters {
            if names.is_empty() {
                return Err(StateError::invalid(
                    "health.error-counters.counters",
                    "the list is empty; leave the key out to watch the usual error counters",
                ));
            }
            for (i, n) in names.iter().enumerate() {
                let ok = !n.is_empty()
                    && n.len() <= 64
                    && n.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
                if !ok {
                    return Err(StateError::invalid(
                        format!("health.error-counters.counters[{i}]"),
                        format!(
                            "{} is not a counter name (letters, digits, '.', '_', '-')",
                            quote_capped(n)
                        ),
                    ));
                }
            }
        }
    }
    if let Some(f) = &health.flaps {
        if !(1..=MAX_FLAP_WINDOW_S).contains(&f.window_seconds) {
            return Err(StateError::invalid(
                "health.flaps.window-seconds",
                format!(
                    "a window of {} s is outside 1 to {MAX_FLAP_WINDOW_S} s",
                    f.window_seconds
                ),
            ));
        }
        if f.max as usize >= FLAP_MEMORY {
            return Err(StateError::invalid(
                "health.flaps.max",
                format!(
                    "at most {} changes can be told (the daemon remembers the last {FLAP_MEMORY} \
                     of a port)",
                    FLAP_MEMORY - 1
                ),
            ));
        }
    }
    Ok(())
}

fn check_port(
    p: &str,
    e: &PortExpectation,
    seen: &mut BTreeSet<(Option<String>, Option<u32>)>,
) -> Result<(), StateError> {
    if let Some(dev) = &e.device {
        validate_rdma_name(dev)
            .map_err(|err| StateError::invalid(format!("{p}.device"), err.to_string()))?;
    }
    match e.port {
        Some(0) => {
            return Err(StateError::invalid(
                format!("{p}.port"),
                "port 0 is not an RDMA port: ports count from 1",
            ))
        }
        Some(_) if e.device.is_none() => {
            return Err(StateError::invalid(
                format!("{p}.port"),
                "a port number needs its device",
            ))
        }
        _ => {}
    }
    if !seen.insert((e.device.clone(), e.port)) {
        return Err(StateError::contradiction(
            p,
            "these ports are already named by an earlier entry; give all their expectations \
             in one",
        ));
    }
    let one_of = |key: &str, v: &Option<String>, list: &[&str]| match v {
        Some(v) if !list.contains(&v.as_str()) => Err(StateError::invalid(
            format!("{p}.{key}"),
            format!("{} is not one of {}", quote_capped(v), words(list)),
        )),
        _ => Ok(()),
    };
    one_of("state", &e.state, &PORT_STATES)?;
    one_of("phys-state", &e.phys_state, &PHYS_STATES)?;
    one_of("link-layer", &e.link_layer, &LINK_LAYERS)?;
    if let Some(Gbps(r)) = e.min_rate_gbps {
        if !r.is_finite() || r < 0.0 {
            return Err(StateError::invalid(
                format!("{p}.min-rate-gbps"),
                format!("{r} is not a rate: give Gb/s as a number not below 0"),
            ));
        }
    }
    if e.mtu == Some(0) {
        return Err(StateError::invalid(
            format!("{p}.mtu"),
            "an MTU of 0 cannot be expected",
        ));
    }
    Ok(())
}
