//! The document's `naming` section: rdma-core's naming policy, fixed device names by node
//! GUID and persistent IPoIB names by port GUID. Its types, checks, difference with the host
//! and steps.

use std::collections::BTreeMap;

use rdma_manager_dbus::text::quote_capped;
use serde::{Deserialize, Serialize};

use super::part::{is_absent, is_guid, once, text, Area, ChangeOp, EntryState, PartPlan, Phase};
use crate::names::{validate_netdev_name, validate_rdma_name};
use crate::state_error::StateError;

/// rdma-core's naming policies (`rdma_rename`'s modes) a document may choose.
pub const RDMA_POLICIES: [&str; 5] = [
    "NAME_KERNEL",
    "NAME_ONBOARD",
    "NAME_PCI",
    "NAME_GUID",
    "NAME_FALLBACK",
];

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Naming {
    /// rdma-core's naming policy for devices no fixed name selects: NAME_KERNEL, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma_policy: Option<String>,
    /// Fixed device names; identity: `node-guid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma_fixed_names: Option<Vec<FixedName>>,
    /// Persistent IPoIB names; identity: `port-guid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipoib_names: Option<Vec<IpoibName>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct FixedName {
    pub node_guid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<EntryState>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct IpoibName {
    pub port_guid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<EntryState>,
}

/// One step of the `naming` section, with the arguments of its one-shot method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamingStep {
    /// `SetRdmaNamingPolicy`.
    SetPolicy { policy: String },
    /// `SetRdmaFixedName`.
    SetFixedName { node_guid: String, name: String },
    /// `RemoveRdmaFixedName`.
    RemoveFixedName { node_guid: String },
    /// `SetIpoibName`.
    SetIpoibName { port_guid: String, name: String },
    /// `RemoveIpoibName`.
    RemoveIpoibName { port_guid: String },
}

impl NamingStep {
    /// The polkit area of the step's method.
    pub fn area(&self) -> Area {
        Area::Naming
    }
}

/// The document's `naming` section: a known policy, and each fixed name's GUID and name once.
pub(super) fn check(n: &Naming) -> Result<(), StateError> {
    if let Some(policy) = &n.rdma_policy {
        if !RDMA_POLICIES.contains(&policy.as_str()) {
            return Err(StateError::invalid(
                "naming.rdma-policy",
                format!(
                    "{} is not a naming policy: use one of {}",
                    quote_capped(policy),
                    RDMA_POLICIES.join(", ")
                ),
            ));
        }
    }
    let fixed = n
        .rdma_fixed_names
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, f)| {
            (
                format!("naming.rdma-fixed-names[{i}]"),
                ("node-guid", &f.node_guid),
                f.name.as_ref(),
                f.state,
            )
        });
    check_named_guids(fixed.collect(), validate_rdma_name)?;
    let ipoib = n.ipoib_names.iter().flatten().enumerate().map(|(i, f)| {
        (
            format!("naming.ipoib-names[{i}]"),
            ("port-guid", &f.port_guid),
            f.name.as_ref(),
            f.state,
        )
    });
    check_named_guids(ipoib.collect(), validate_netdev_name)
}

type NamedGuid<'a> = (
    String,
    (&'static str, &'a String),
    Option<&'a String>,
    Option<EntryState>,
);

/// Fixed names by GUID: one entry per GUID, one GUID per name, a name unless absent.
fn check_named_guids(
    entries: Vec<NamedGuid<'_>>,
    validate: impl Fn(&str) -> Result<(), crate::names::NameError>,
) -> Result<(), StateError> {
    let mut guids = BTreeMap::new();
    let mut names = BTreeMap::new();
    for (p, (key, guid), name, state) in entries {
        if !is_guid(guid) {
            return Err(StateError::invalid(
                format!("{p}.{key}"),
                format!(
                    "{} is not a GUID as sysfs prints it: four groups of four hex digits, \
                     0002:c903:0031:7f40",
                    quote_capped(guid)
                ),
            ));
        }
        once(&mut guids, guid.to_ascii_lowercase(), &p, |first| {
            format!("GUID {guid} is listed twice (also at {first})")
        })?;
        match (name, is_absent(state)) {
            (Some(_), true) => {
                return Err(StateError::contradiction(
                    format!("{p}.name"),
                    "state: absent removes the fixed name and takes only the GUID",
                ))
            }
            (None, true) => {}
            (None, false) => {
                return Err(StateError::invalid(
                    &p,
                    "missing field `name`: give the name, or state: absent to remove it",
                ))
            }
            (Some(name), false) => {
                validate(name)
                    .map_err(|err| StateError::invalid(format!("{p}.name"), err.to_string()))?;
                once(&mut names, name.clone(), &p, |first| {
                    format!(
                        "the name {} is given to two GUIDs (also at {first})",
                        quote_capped(name)
                    )
                })?;
            }
        }
    }
    Ok(())
}

/// The changes of the `naming` section: the policy, then fixed names and IPoIB names by GUID.
pub(super) fn diff(
    current: &Option<Naming>,
    wanted: &Option<Naming>,
    plan: &mut PartPlan<NamingStep>,
) {
    let Some(w) = &wanted else { return };
    let empty = Naming::default();
    let c = current.as_ref().unwrap_or(&empty);
    if let Some(policy) = &w.rdma_policy {
        if c.rdma_policy.as_ref() != Some(policy) {
            let step = |policy: &String| NamingStep::SetPolicy {
                policy: policy.clone(),
            };
            plan.push(
                Phase::Naming,
                "naming.rdma-policy".into(),
                ChangeOp::Set,
                (text(c.rdma_policy.as_ref()), policy.clone()),
                step(policy),
                step(c.rdma_policy.as_ref().unwrap_or(policy)),
            );
        }
    }
    let fixed = |l: &Option<Vec<FixedName>>| -> Vec<(String, Option<String>, Option<EntryState>)> {
        l.iter()
            .flatten()
            .map(|f| (f.node_guid.to_ascii_lowercase(), f.name.clone(), f.state))
            .collect()
    };
    named_guids(
        plan,
        "naming.rdma-fixed-names",
        fixed(&c.rdma_fixed_names),
        fixed(&w.rdma_fixed_names),
        |guid, name| match name {
            Some(name) => NamingStep::SetFixedName {
                node_guid: guid,
                name,
            },
            None => NamingStep::RemoveFixedName { node_guid: guid },
        },
    );
    let ipoib = |l: &Option<Vec<IpoibName>>| -> Vec<(String, Option<String>, Option<EntryState>)> {
        l.iter()
            .flatten()
            .map(|f| (f.port_guid.to_ascii_lowercase(), f.name.clone(), f.state))
            .collect()
    };
    named_guids(
        plan,
        "naming.ipoib-names",
        ipoib(&c.ipoib_names),
        ipoib(&w.ipoib_names),
        |guid, name| match name {
            Some(name) => NamingStep::SetIpoibName {
                port_guid: guid,
                name,
            },
            None => NamingStep::RemoveIpoibName { port_guid: guid },
        },
    );
}

/// Names kept by GUID: `step(guid, Some(name))` sets one, `step(guid, None)` removes it.
fn named_guids(
    plan: &mut PartPlan<NamingStep>,
    section: &str,
    current: Vec<(String, Option<String>, Option<EntryState>)>,
    wanted: Vec<(String, Option<String>, Option<EntryState>)>,
    step: impl Fn(String, Option<String>) -> NamingStep,
) {
    let have: BTreeMap<String, Option<String>> = current
        .into_iter()
        .filter(|(_, _, s)| *s != Some(EntryState::Absent))
        .map(|(g, n, _)| (g, n))
        .collect();
    for (guid, name, state) in wanted {
        let old = have.get(&guid).cloned().flatten();
        let new = if state == Some(EntryState::Absent) {
            None
        } else {
            name
        };
        if old == new {
            continue;
        }
        let op = match (&old, &new) {
            (None, _) => ChangeOp::Add,
            (_, None) => ChangeOp::Remove,
            _ => ChangeOp::Set,
        };
        plan.push(
            Phase::Naming,
            format!("{section}[{guid}]"),
            op,
            (text(old.as_ref()), text(new.as_ref())),
            step(guid.clone(), new),
            step(guid, old),
        );
    }
}
