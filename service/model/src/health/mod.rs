//! Node health: what a healthy node looks like (the state document's `health` section, and
//! `CheckHealth`'s argument) and the verdicts of a check, pure (docs/STATE.md, "health";
//! docs/DBUS-API.md, "Node health").
//!
//! - [`expect`] the expectations' types and the checks they get before the host is looked at;
//! - [`evaluate`](mod@evaluate) the verdicts from the facts the daemon gathered.

pub mod evaluate;
pub mod expect;

pub use evaluate::{evaluate, DeviceFacts, HostFacts, PortFacts, Verdict};
pub use expect::{check, CounterWindow, FlapWindow, Gbps, Health, PortExpectation};

#[cfg(test)]
mod tests;
