//! The document's `soft-links` list: soft RDMA devices (rxe, siw) over a netdev, identity
//! `name`. Its type, checks, difference with the host and steps; the names it creates and
//! removes, which the `roce` list's ports depend on ([`LinkNames`]).

use std::collections::{BTreeMap, BTreeSet};

use rdma_manager_dbus::text::quote_capped;
use serde::{Deserialize, Serialize};

use super::part::{is_absent, once, Area, ChangeOp, EntryState, PartPlan, Phase};
use crate::names::{validate_netdev_name, validate_rdma_name};
use crate::state_error::StateError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SoftLinkKind {
    Rxe,
    Siw,
}

impl SoftLinkKind {
    /// The link type as `rdma link add` and `AddSoftLink` take it.
    pub fn as_str(self) -> &'static str {
        match self {
            SoftLinkKind::Rxe => "rxe",
            SoftLinkKind::Siw => "siw",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SoftLinkEntry {
    pub name: String,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<SoftLinkKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netdev: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<EntryState>,
}

/// One step of the `soft-links` list, with the arguments of its one-shot method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkStep {
    /// `AddSoftLink`.
    Add {
        name: String,
        kind: SoftLinkKind,
        netdev: String,
    },
    /// `Device.RemoveSoftLink`.
    Remove { name: String },
}

impl LinkStep {
    /// The polkit area of the step's method.
    pub fn area(&self) -> Area {
        Area::Links
    }
}

/// The document's `soft-links` list, value by value and its names once each.
pub(super) fn check(links: &[SoftLinkEntry]) -> Result<(), StateError> {
    let mut seen = BTreeMap::new();
    for (i, e) in links.iter().enumerate() {
        let p = format!("soft-links[{i}]");
        validate_rdma_name(&e.name)
            .map_err(|err| StateError::invalid(format!("{p}.name"), err.to_string()))?;
        once(&mut seen, e.name.clone(), &p, |first| {
            format!(
                "soft link {} is listed twice (also at {first})",
                quote_capped(&e.name)
            )
        })?;
        if is_absent(e.state) {
            for (key, given) in [("type", e.kind.is_some()), ("netdev", e.netdev.is_some())] {
                if given {
                    return Err(StateError::contradiction(
                        format!("{p}.{key}"),
                        "state: absent removes the link and takes only its name",
                    ));
                }
            }
            continue;
        }
        if e.kind.is_none() {
            return Err(StateError::invalid(
                &p,
                "missing field `type` (rxe or siw): a soft link is given with its type and \
                 netdev, or with state: absent to remove it",
            ));
        }
        let Some(netdev) = &e.netdev else {
            return Err(StateError::invalid(
                &p,
                "missing field `netdev`: a soft link is given with its type and netdev, or \
                 with state: absent to remove it",
            ));
        };
        validate_netdev_name(netdev)
            .map_err(|err| StateError::invalid(format!("{p}.netdev"), err.to_string()))?;
    }
    Ok(())
}

fn link_text(kind: SoftLinkKind, netdev: &str) -> String {
    format!("type={} netdev={netdev}", kind.as_str())
}

/// The soft links a document creates and those it removes, by name.
#[derive(Default)]
pub(super) struct LinkNames {
    pub(super) created: BTreeSet<String>,
    pub(super) removed: BTreeSet<String>,
}

/// Soft links.
pub(super) fn diff(
    current: &Option<Vec<SoftLinkEntry>>,
    wanted: &Option<Vec<SoftLinkEntry>>,
    plan: &mut PartPlan<LinkStep>,
) -> Result<LinkNames, StateError> {
    let mut names = LinkNames::default();
    let have: BTreeMap<&str, &SoftLinkEntry> = current
        .iter()
        .flatten()
        .map(|e| (e.name.as_str(), e))
        .collect();
    for (i, e) in wanted.iter().flatten().enumerate() {
        let path = format!("soft-links[{}]", e.name);
        let now = have.get(e.name.as_str());
        let now = match now {
            Some(c) => {
                let (Some(kind), Some(netdev)) = (c.kind, c.netdev.clone()) else {
                    return Err(StateError::invalid(
                        format!("soft-links[{i}]"),
                        format!(
                            "the host's soft link {} has no known type or netdev",
                            e.name
                        ),
                    ));
                };
                Some((kind, netdev))
            }
            None => None,
        };
        let remove = |plan: &mut PartPlan<LinkStep>, kind: SoftLinkKind, netdev: String| {
            plan.push(
                Phase::LinkRemovals,
                path.clone(),
                ChangeOp::Remove,
                (link_text(kind, &netdev), String::new()),
                LinkStep::Remove {
                    name: e.name.clone(),
                },
                LinkStep::Add {
                    name: e.name.clone(),
                    kind,
                    netdev,
                },
            )
        };
        if e.state == Some(EntryState::Absent) {
            if let Some((kind, netdev)) = now {
                remove(plan, kind, netdev);
                names.removed.insert(e.name.clone());
            }
            continue;
        }
        let (Some(kind), Some(netdev)) = (e.kind, e.netdev.clone()) else {
            return Err(StateError::invalid(
                format!("soft-links[{i}]"),
                "a soft link is given with its type and netdev, or with state: absent",
            ));
        };
        if let Some((old_kind, old_netdev)) = now {
            if (old_kind, old_netdev.as_str()) == (kind, netdev.as_str()) {
                continue;
            }
            // A link's type and netdev are fixed when it is made: it is made again, with new
            // ports.
            remove(plan, old_kind, old_netdev);
        }
        names.created.insert(e.name.clone());
        plan.push(
            Phase::LinkAdditions,
            path.clone(),
            ChangeOp::Add,
            (String::new(), link_text(kind, &netdev)),
            LinkStep::Add {
                name: e.name.clone(),
                kind,
                netdev,
            },
            LinkStep::Remove {
                name: e.name.clone(),
            },
        );
    }
    Ok(names)
}
