//! Engine and model values as D-Bus values, for the interfaces' views and methods
//! (`objects/`) and the other D-Bus modules. It imports none of them.

use rdma_manager_dbus::text::cap_message;
use rdma_manager_dbus::types;
use zbus::zvariant::OwnedObjectPath;

use crate::engine::{ManagedLimits, Step, UnitState};
use crate::model::{CounterSource, CounterWidth};

/// An object path from a path we built; the fallback `/` never happens for our own paths.
pub fn object_path(p: String) -> OwnedObjectPath {
    OwnedObjectPath::try_from(p).unwrap_or_else(|_| OwnedObjectPath::default())
}

/// `pma64`, `pma32`, `hw_counters`, `netdev`, `none`.
pub fn counter_source_name(s: &CounterSource) -> &'static str {
    match s {
        CounterSource::Pma(CounterWidth::Bits64) => "pma64",
        CounterSource::Pma(CounterWidth::Bits32) => "pma32",
        CounterSource::HwCounters => "hw_counters",
        CounterSource::Netdev(_) => "netdev",
        CounterSource::None => "none",
    }
}

/// A unit's state as the Host object shows it.
pub fn unit_state(u: &UnitState) -> types::UnitState {
    types::UnitState {
        load_state: u.load_state.clone(),
        active_state: u.active_state.clone(),
        unit_file_state: u.unit_file_state.clone(),
    }
}

/// The daemon's memlock limits; they come from a file users edit: capped.
pub fn managed_limits(l: &ManagedLimits) -> types::ManagedLimits {
    types::ManagedLimits {
        soft: cap_message(&l.soft),
        hard: cap_message(&l.hard),
    }
}

/// The steps of a Host method.
pub fn steps(steps: Vec<Step>) -> Vec<types::HostStep> {
    steps
        .into_iter()
        .map(|s| types::HostStep {
            step: s.name,
            outcome: s.outcome.as_str().to_string(),
            detail: s.detail,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::StepOutcome;

    #[test]
    fn steps_keep_their_order_and_words() {
        let s = |name: &str, outcome, detail: &str| Step {
            name: name.into(),
            outcome,
            detail: detail.into(),
        };
        let got = steps(vec![
            s("nfs.conf", StepOutcome::Done, "written"),
            s("firewall", StepOutcome::Failed, "no"),
            s("nfs-server", StepOutcome::NotRun, "an earlier step failed"),
        ]);
        let words: Vec<&str> = got.iter().map(|t| t.outcome.as_str()).collect();
        assert_eq!(words, ["done", "failed", "not-run"]);
        assert_eq!(got[0].step, "nfs.conf");
        assert_eq!(got[2].detail, "an earlier step failed");
    }
}
