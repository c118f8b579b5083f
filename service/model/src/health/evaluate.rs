//! A health check's verdicts from what was observed of the host: pure, so the daemon's
//! `CheckHealth` and its tests decide with the same code. The daemon gathers [`HostFacts`]
//! (the published state, the error counters read at both ends of the window, the state
//! changes it remembers) and hands them here with the expectations.

use std::collections::BTreeMap;

use super::expect::{Gbps, Health, PortExpectation};

/// A port's watched error counters at the start and the end of the window, by name.
pub type CounterReadings = BTreeMap<String, (u64, u64)>;

/// One port as the check sees it; `None` where the kernel did not give the value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PortFacts {
    pub device: String,
    pub port: u32,
    pub state: Option<String>,
    pub phys_state: Option<String>,
    pub rate_gbps: Option<f64>,
    pub link_layer: Option<String>,
    /// The MTU of the port's network interface and which interface it is, in words
    /// ("IPoIB interface ib0", "netdev eth1"); `None` when it has none or it cannot be read.
    pub mtu: Option<(u32, String)>,
    /// State changes in the flap window (filled when the expectations ask for flaps).
    pub flaps: Option<u64>,
    /// The watched error counters at the start and the end of the window, by name (a
    /// counter the port lacks is absent), or why they could not be read (filled when the
    /// expectations ask for a counter window).
    pub counters: Option<Result<CounterReadings, String>>,
}

impl PortFacts {
    /// `device/port`, as rdma-cli names a port.
    pub fn name(&self) -> String {
        format!("{}/{}", self.device, self.port)
    }
}

/// One device as the firmware check sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceFacts {
    pub name: String,
    /// Hardware (soft devices have no firmware to compare).
    pub hardware: bool,
    pub fw_version: String,
    pub board_id: String,
    pub hca_type: String,
}

/// What the check looks at.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostFacts {
    pub devices: Vec<DeviceFacts>,
    /// Every port, in device then port order.
    pub ports: Vec<PortFacts>,
}

/// The verdict on one expectation for one subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The expectation's key (`state`, `min-rate-gbps`, `firmware-equal`, ...).
    pub expectation: String,
    /// What it concerns: a port (`mlx5_0/1`), a device, a board, or `host`.
    pub subject: String,
    pub passed: bool,
    pub observed: String,
    pub expected: String,
    /// One sentence saying what was found.
    pub message: String,
}

fn verdict(
    expectation: &str,
    subject: &str,
    passed: bool,
    observed: impl Into<String>,
    expected: impl Into<String>,
    message: impl Into<String>,
) -> Verdict {
    Verdict {
        expectation: expectation.to_string(),
        subject: subject.to_string(),
        passed,
        observed: observed.into(),
        expected: expected.into(),
        message: message.into(),
    }
}

/// Every expectation of `health` checked against `facts`: one verdict per expectation and
/// subject, in the section's order (ports, min-ports, firmware-equal, error-counters,
/// flaps).
pub fn evaluate(health: &Health, facts: &HostFacts) -> Vec<Verdict> {
    let mut out = Vec::new();
    for e in health.ports.iter().flatten() {
        port_entry(e, facts, &mut out);
    }
    if let Some(min) = health.min_ports {
        let n = facts.ports.len();
        out.push(verdict(
            "min-ports",
            "host",
            n >= min as usize,
            n.to_string(),
            format!("at least {min}"),
            format!("{n} RDMA ports present, expected at least {min}"),
        ));
    }
    if health.firmware_equal == Some(true) {
        firmware(facts, &mut out);
    }
    if let Some(w) = &health.error_counters {
        for p in &facts.ports {
            out.push(counters(p, w.window_seconds));
        }
    }
    if let Some(f) = &health.flaps {
        for p in &facts.ports {
            let n = p.flaps.unwrap_or(0);
            let name = p.name();
            out.push(verdict(
                "flaps",
                &name,
                n <= u64::from(f.max),
                n.to_string(),
                format!("at most {}", f.max),
                format!(
                    "{name} changed state {n} times in the last {} s, expected at most {}",
                    f.window_seconds, f.max
                ),
            ));
        }
    }
    out
}

/// The ports an entry names, or the verdict that they are missing.
fn port_entry(e: &PortExpectation, facts: &HostFacts, out: &mut Vec<Verdict>) {
    let matching: Vec<&PortFacts> = facts
        .ports
        .iter()
        .filter(|p| e.device.as_deref().is_none_or(|d| d == p.device))
        .filter(|p| e.port.is_none_or(|n| n == p.port))
        .collect();
    let subject = match (&e.device, e.port) {
        (Some(d), Some(n)) => format!("{d}/{n}"),
        (Some(d), None) => d.clone(),
        (None, _) => "host".to_string(),
    };
    if matching.is_empty() {
        let what = match (&e.device, e.port) {
            (Some(_), Some(_)) => format!("no port {subject}"),
            (Some(d), None) if facts.devices.iter().any(|x| &x.name == d) => {
                format!("device {d} has no port")
            }
            (Some(d), None) => format!("no device {d}"),
            (None, _) => "the host has no RDMA port".to_string(),
        };
        out.push(verdict(
            "present", &subject, false, "absent", "present", what,
        ));
        return;
    }
    if e.device.is_some() {
        out.push(verdict(
            "present",
            &subject,
            true,
            "present",
            "present",
            format!("{subject} is present"),
        ));
    }
    for p in matching {
        port_values(e, p, out);
    }
}

fn port_values(e: &PortExpectation, p: &PortFacts, out: &mut Vec<Verdict>) {
    let name = p.name();
    let unknown = "unknown".to_string();
    let mut word = |key: &str, what: &str, seen: &Option<String>, want: &Option<String>| {
        if let Some(want) = want {
            let seen_text = seen.clone().unwrap_or_else(|| unknown.clone());
            let ok = seen.as_deref() == Some(want.as_str());
            let message = if ok {
                format!("{name} {what} is {seen_text}")
            } else {
                format!("{name} {what} is {seen_text}, expected {want}")
            };
            out.push(verdict(key, &name, ok, seen_text, want.clone(), message));
        }
    };
    word("state", "state", &p.state, &e.state);
    word("phys-state", "physical state", &p.phys_state, &e.phys_state);
    word("link-layer", "link layer", &p.link_layer, &e.link_layer);
    if let Some(Gbps(min)) = e.min_rate_gbps {
        let (ok, seen) = match p.rate_gbps {
            Some(r) => (r >= min, format!("{r} Gb/s")),
            None => (false, unknown.clone()),
        };
        out.push(verdict(
            "min-rate-gbps",
            &name,
            ok,
            seen.clone(),
            format!("at least {min} Gb/s"),
            format!("{name} runs at {seen}, expected at least {min} Gb/s"),
        ));
    }
    if let Some(want) = e.mtu {
        let v = match &p.mtu {
            Some((mtu, source)) => verdict(
                "mtu",
                &name,
                *mtu == want,
                mtu.to_string(),
                want.to_string(),
                format!("{name}'s {source} has MTU {mtu}, expected {want}"),
            ),
            None => verdict(
                "mtu",
                &name,
                false,
                unknown,
                want.to_string(),
                format!("{name} has no network interface whose MTU could be read, expected {want}"),
            ),
        };
        out.push(v);
    }
}

/// Hardware devices grouped by board (board id, else HCA type), each group on one version.
fn firmware(facts: &HostFacts, out: &mut Vec<Verdict>) {
    let mut boards: BTreeMap<String, Vec<&DeviceFacts>> = BTreeMap::new();
    for d in facts.devices.iter().filter(|d| d.hardware) {
        let board = [&d.board_id, &d.hca_type]
            .into_iter()
            .find(|b| !b.is_empty())
            .cloned()
            .unwrap_or_else(|| "unknown board".to_string());
        boards.entry(board).or_default().push(d);
    }
    if boards.is_empty() {
        out.push(verdict(
            "firmware-equal",
            "host",
            true,
            "no hardware device",
            "one version per board",
            "no hardware RDMA device: soft devices have no firmware",
        ));
        return;
    }
    for (board, devices) in boards {
        let mut versions: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for d in &devices {
            versions
                .entry(d.fw_version.as_str())
                .or_default()
                .push(d.name.as_str());
        }
        let subject = format!("board {board}");
        let observed = versions
            .iter()
            .map(|(v, names)| {
                let v = if v.is_empty() { "unknown" } else { v };
                format!("{v} ({})", names.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; ");
        let ok = versions.len() == 1 && !versions.contains_key("");
        let message = if ok {
            format!(
                "{} devices of {subject} run firmware {observed}",
                devices.len()
            )
        } else {
            format!("firmware differs across {subject}: {observed}")
        };
        out.push(verdict(
            "firmware-equal",
            &subject,
            ok,
            observed,
            "one version",
            message,
        ));
    }
}

fn counters(p: &PortFacts, window: u32) -> Verdict {
    let name = p.name();
    let expected = format!("no rise in {window} s");
    match &p.counters {
        None => verdict(
            "error-counters",
            &name,
            false,
            "not read",
            expected,
            format!("{name}'s error counters were not read"),
        ),
        Some(Err(reason)) => verdict(
            "error-counters",
            &name,
            false,
            "unreadable",
            expected,
            format!("{name}'s error counters cannot be read: {reason}"),
        ),
        Some(Ok(map)) if map.is_empty() => verdict(
            "error-counters",
            &name,
            true,
            "none of the watched counters",
            expected,
            format!("{name} has none of the watched error counters"),
        ),
        Some(Ok(map)) => {
            let rose: Vec<String> = map
                .iter()
                .filter(|(_, (a, b))| b > a)
                .map(|(k, (a, b))| format!("{k} +{}", b - a))
                .collect();
            if rose.is_empty() {
                verdict(
                    "error-counters",
                    &name,
                    true,
                    "no rise",
                    expected,
                    format!(
                        "no error counter of {name} rose in {window} s ({} watched)",
                        map.len()
                    ),
                )
            } else {
                let observed = rose.join(", ");
                verdict(
                    "error-counters",
                    &name,
                    false,
                    observed.clone(),
                    expected,
                    format!("{name}'s error counters rose in {window} s: {observed}"),
                )
            }
        }
    }
}
