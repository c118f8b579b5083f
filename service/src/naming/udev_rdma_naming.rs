//! The RDMA device naming policy: rdma-core's `60-rdma-persistent-naming.rules`, which runs
//! `rdma_rename %k <POLICY>` for every RDMA device added, and the file of the same name in
//! `/etc/udev/rules.d/` that overrides it.
//!
//! The daemon writes the override, and only the block between its markers: per-device
//! NAME_FIXED rules (matched by node GUID) first, each jumping past the rest of the block once
//! it renamed the device, then the host's policy rule. Lines outside the block are kept; a
//! policy rule of the user's own there is never rewritten (changes are refused instead).
//!
//! Which rule names a device follows udev: rules run in file order; a rule whose
//! `rdma_rename` fails (exit 1) does not match, so the next one runs; the first that renames
//! wins, since later ones look the device up by its old name (`%k`) and no longer find it.

use std::collections::BTreeMap;

use serde::Serialize;

use super::rdma_rename::{NamingPolicy, NoName};
use super::udev_rules::{parse_rule, BlockError, BlockFile, RuleOp, RuleToken};
use crate::model::guid::{Guid, GuidFormatError};
use crate::model::names::{validate_rdma_name, NameError};
use rdma_manager_dbus::text::quote_capped;

/// The override the daemon manages.
pub const NAMING_OVERRIDE_PATH: &str = "/etc/udev/rules.d/60-rdma-persistent-naming.rules";
/// Where the shipped rules may be, in udev's order of precedence after `/etc`.
pub const NAMING_VENDOR_PATHS: [&str; 3] = [
    "/run/udev/rules.d/60-rdma-persistent-naming.rules",
    "/usr/lib/udev/rules.d/60-rdma-persistent-naming.rules",
    "/lib/udev/rules.d/60-rdma-persistent-naming.rules",
];

/// The comment at the top of the daemon's block.
pub const NAMING_BLOCK_HEADER: [&str; 4] = [
    "# Managed by rdma-managerd: how RDMA devices are named (rdma-core's rdma_rename). This file",
    "# overrides /usr/lib/udev/rules.d/60-rdma-persistent-naming.rules. Do not edit this block;",
    "# it is rewritten. Use rdma-tui, or busctl: SetRdmaNamingPolicy, SetRdmaFixedName and",
    "# RemoveRdmaFixedName on org.rdmamanager.RdmaManager1. Rules outside the block are yours.",
];

/// The label the daemon's NAME_FIXED rules jump to.
pub const BLOCK_END_LABEL: &str = "rdma_manager_naming_end";

/// An `rdma_rename` rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RenameRule {
    pub line: u32,
    pub managed: bool,
    pub policy: NamingPolicy,
    /// The rule's match keys (`==`, `!=`) other than PROGRAM.
    pub conditions: Vec<RuleToken>,
    /// GOTO taken when rdma_rename succeeds, if its LABEL follows.
    pub goto: Option<String>,
}

impl RenameRule {
    /// A rule for every RDMA device: no condition but an action of `add` and the
    /// `infiniband` subsystem.
    pub fn is_host_wide(&self) -> bool {
        self.conditions.iter().all(|c| {
            matches!(
                (c.key.as_str(), c.attr.as_deref(), c.op, c.value.as_str()),
                ("ACTION", None, RuleOp::Match, "add")
                    | ("SUBSYSTEM", None, RuleOp::Match, "infiniband")
            )
        })
    }

    /// The node GUID of a rule for one device (`ATTR{node_guid}=="xxxx:xxxx:xxxx:xxxx"`).
    pub fn node_guid(&self) -> Option<Guid> {
        self.conditions
            .iter()
            .find(|c| c.is("ATTR", Some("node_guid")) && c.op == RuleOp::Match)
            .and_then(|c| Guid::parse_sysfs(&c.value).ok())
    }
}

/// A sysfs attribute of a device as a rule condition sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttrValue {
    Value(String),
    /// The device has no such attribute.
    Absent,
    /// Not known to the daemon: a condition on it cannot be evaluated.
    Unknown,
}

/// udev's pattern match: `*`, `?` and `|` alternatives. `None` for a `[...]` class, which
/// this does not evaluate.
pub fn glob_match(pattern: &str, text: &str) -> Option<bool> {
    fn one(p: &[u8], t: &[u8]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some((b'*', rest)) => (0..=t.len()).any(|i| one(rest, &t[i..])),
            Some((b'?', rest)) => !t.is_empty() && one(rest, &t[1..]),
            Some((c, rest)) => t.first() == Some(c) && one(rest, &t[1..]),
        }
    }
    if pattern.contains('[') {
        return None;
    }
    Some(
        pattern
            .split('|')
            .any(|alt| one(alt.as_bytes(), text.as_bytes())),
    )
}

/// Whether a rule's conditions hold for a device being added; `Err` names a condition this
/// cannot evaluate.
fn conditions_hold(rule: &RenameRule, attr: &dyn Fn(&str) -> AttrValue) -> Result<bool, String> {
    for c in &rule.conditions {
        let subject = match (c.key.as_str(), c.attr.as_deref()) {
            ("ACTION", None) => AttrValue::Value("add".into()),
            ("SUBSYSTEM", None) => AttrValue::Value("infiniband".into()),
            ("ATTR", Some(a)) => attr(a),
            _ => AttrValue::Unknown,
        };
        let key = match &c.attr {
            Some(a) => format!("{}{{{a}}}", c.key),
            None => c.key.clone(),
        };
        let matched = match subject {
            AttrValue::Value(v) => glob_match(&c.value, &v).ok_or_else(|| key.clone())?,
            AttrValue::Absent => false,
            AttrValue::Unknown => return Err(key),
        };
        let holds = match c.op {
            RuleOp::Match => matched,
            RuleOp::NoMatch => !matched,
            _ => true,
        };
        if !holds {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The policy of a `PROGRAM` value that runs rdma_rename on the device being added.
fn program_policy(program: &str) -> Option<NamingPolicy> {
    let mut words = program.split_whitespace();
    let exe = words.next()?;
    if exe.rsplit('/').next() != Some("rdma_rename") {
        return None;
    }
    let args: Vec<&str> = words.filter(|w| *w != "-v").collect();
    match args.as_slice() {
        [dev, policy, rest @ ..] if matches!(*dev, "%k" | "$kernel") => {
            NamingPolicy::parse(policy, rest.first().copied())
        }
        _ => None,
    }
}

/// Why a change to the naming rules was refused; each says what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum NamingRuleError {
    #[error("{q0} is not a naming policy; use one of NAME_KERNEL, NAME_ONBOARD, NAME_PCI, NAME_GUID, NAME_FALLBACK (a fixed name is set per device with SetRdmaFixedName)", q0 = quote_capped(.0))]
    UnknownPolicy(String),
    #[error(transparent)]
    BadGuid(#[from] GuidFormatError),
    #[error("{source} (RDMA device name {name_q})", name_q = quote_capped(.name))]
    BadName { name: String, source: NameError },
    #[error("line {line} of {NAMING_OVERRIDE_PATH} sets the naming policy itself ({policy}) in a rule rdma-managerd does not manage and never rewrites; delete that line (or the whole file, if it is a copy of rdma-core's), then try again")]
    UserPolicyRule { line: u32, policy: String },
    #[error("line {line} of {NAMING_OVERRIDE_PATH} already gives the device with node GUID {} the fixed name {name_q}, in a rule rdma-managerd does not manage; edit or delete that line by hand", .guid.colon_form(), name_q = quote_capped(.name))]
    UserFixedRule { guid: Guid, name: String, line: u32 },
    #[error("the fixed name {name} is already given to node GUID {} {}", .other.colon_form(),
        match .user_line {
            None => "by rdma-managerd; remove it first (RemoveRdmaFixedName) or choose another".to_string(),
            Some(l) => format!("by line {l} of {NAMING_OVERRIDE_PATH}, a rule rdma-managerd does not manage: choose another name, or edit that line by hand"),
        })]
    NameTaken {
        name: String,
        other: Guid,
        /// The line of the user's rule; `None` when the daemon gave the name.
        user_line: Option<u32>,
    },
    #[error("no rule in {NAMING_OVERRIDE_PATH} gives the device with node GUID {} a fixed name", .0.colon_form())]
    NotFixed(Guid),
    #[error("{NAMING_OVERRIDE_PATH} cannot be changed safely: {0}; fix the markers by hand")]
    Block(#[from] BlockError),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    Rule(RenameRule),
    Label(String),
}

/// A naming rules file as read: the override, the shipped file, or rdma-core's default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamingRules {
    file: BlockFile,
    items: Vec<Item>,
    /// The daemon's block: the host policy it writes, and its fixed names in order.
    managed_policy: Option<NamingPolicy>,
    managed_fixed: Vec<(Guid, String)>,
}

impl NamingRules {
    /// Reads a rules file; `None` (no file) has no rules at all.
    pub fn parse(bytes: Option<&[u8]>) -> NamingRules {
        let file = BlockFile::parse(bytes.unwrap_or_default());
        let mut items = Vec::new();
        let mut managed_policy = None;
        let mut managed_fixed = Vec::new();
        for (i, line) in file.lines.iter().enumerate() {
            let Some(tokens) = line.text.as_deref().and_then(parse_rule) else {
                continue;
            };
            if let [t] = tokens.as_slice() {
                if t.is("LABEL", None) {
                    items.push(Item::Label(t.value.clone()));
                    continue;
                }
            }
            let Some(policy) = tokens
                .iter()
                .find(|t| t.is("PROGRAM", None) && matches!(t.op, RuleOp::Assign | RuleOp::Match))
                .and_then(|t| program_policy(&t.value))
            else {
                continue;
            };
            let managed = file.in_block(i);
            let rule = RenameRule {
                line: line.number,
                managed,
                policy,
                conditions: tokens
                    .iter()
                    .filter(|t| !t.is("PROGRAM", None))
                    .filter(|t| matches!(t.op, RuleOp::Match | RuleOp::NoMatch))
                    .cloned()
                    .collect(),
                goto: tokens
                    .iter()
                    .find(|t| t.is("GOTO", None))
                    .map(|t| t.value.clone()),
            };
            if managed {
                match (&rule.policy, rule.node_guid()) {
                    (NamingPolicy::Fixed(name), Some(g)) => managed_fixed.push((g, name.clone())),
                    (NamingPolicy::Fixed(_), None) => {}
                    (p, _) if rule.is_host_wide() => managed_policy = Some(p.clone()),
                    _ => {}
                }
            }
            items.push(Item::Rule(rule));
        }
        // udev only jumps forward, to a label later in the same file.
        for i in 0..items.len() {
            let later: Vec<String> = items[i + 1..]
                .iter()
                .filter_map(|it| match it {
                    Item::Label(l) => Some(l.clone()),
                    Item::Rule(_) => None,
                })
                .collect();
            if let Item::Rule(r) = &mut items[i] {
                if r.goto.as_ref().is_some_and(|g| !later.contains(g)) {
                    r.goto = None;
                }
            }
        }
        NamingRules {
            file,
            items,
            managed_policy,
            managed_fixed,
        }
    }

    /// rdma-core's shipped rule, for a host where no rules file was found.
    pub fn rdma_core_default() -> NamingRules {
        NamingRules::parse(Some(
            b"ACTION==\"add\", SUBSYSTEM==\"infiniband\", PROGRAM=\"rdma_rename %k NAME_FALLBACK\"\n",
        ))
    }

    /// Every rdma_rename rule in file order.
    pub fn rules(&self) -> impl Iterator<Item = &RenameRule> {
        self.items.iter().filter_map(|i| match i {
            Item::Rule(r) => Some(r),
            Item::Label(_) => None,
        })
    }

    /// The host's policy: that of the first rule for every device. Without one nothing
    /// renames devices that no other rule selects: NAME_KERNEL.
    pub fn host_policy(&self) -> NamingPolicy {
        self.rules()
            .find(|r| r.is_host_wide() && !matches!(r.policy, NamingPolicy::Fixed(_)))
            .map(|r| r.policy.clone())
            .unwrap_or(NamingPolicy::Kernel)
    }

    /// Fixed names by node GUID as read: (GUID, name, managed, line).
    pub fn fixed_names(&self) -> Vec<(Guid, String, bool, u32)> {
        self.rules()
            .filter_map(|r| match (&r.policy, r.node_guid()) {
                (NamingPolicy::Fixed(n), Some(g)) => Some((g, n.clone(), r.managed, r.line)),
                _ => None,
            })
            .collect()
    }

    /// Fixed names now, this session's changes included: (GUID, name, the line of a user's
    /// rule or `None` for the daemon's).
    fn current_fixed(&self) -> Vec<(Guid, String, Option<u32>)> {
        self.fixed_names()
            .into_iter()
            .filter(|(_, _, managed, _)| !managed)
            .map(|(g, n, _, l)| (g, n, Some(l)))
            .chain(
                self.managed_fixed
                    .iter()
                    .map(|(g, n)| (*g, n.clone(), None)),
            )
            .collect()
    }

    /// The first rule of the user's for every device that renames (a NAME_KERNEL one lets
    /// the rules after it run).
    fn user_host_rule(&self, renaming_only: bool) -> Option<&RenameRule> {
        self.rules().find(|r| {
            !r.managed && r.is_host_wide() && !(renaming_only && r.policy == NamingPolicy::Kernel)
        })
    }

    /// Sets the host's policy in the daemon's block.
    pub fn set_policy(&mut self, keyword: &str) -> Result<NamingPolicy, NamingRuleError> {
        let policy = NamingPolicy::parse(keyword, None)
            .filter(|p| !matches!(p, NamingPolicy::Fixed(_)))
            .ok_or_else(|| NamingRuleError::UnknownPolicy(keyword.to_string()))?;
        self.file.block.clone()?;
        if let Some(r) = self.user_host_rule(false) {
            return Err(NamingRuleError::UserPolicyRule {
                line: r.line,
                policy: r.policy.keyword().into(),
            });
        }
        self.managed_policy = Some(policy.clone());
        Ok(policy)
    }

    /// Gives the device with this node GUID a fixed name. `inherited` is the policy in force
    /// before the override existed, written with it so the other devices keep their naming.
    pub fn set_fixed(
        &mut self,
        guid: Guid,
        name: &str,
        inherited: &NamingPolicy,
    ) -> Result<bool, NamingRuleError> {
        validate_rdma_name(name).map_err(|source| NamingRuleError::BadName {
            name: name.to_string(),
            source,
        })?;
        self.file.block.clone()?;
        if let Some(r) = self.user_host_rule(true) {
            return Err(NamingRuleError::UserPolicyRule {
                line: r.line,
                policy: r.policy.keyword().into(),
            });
        }
        let fixed = self.current_fixed();
        if let Some((_, n, Some(line))) = fixed.iter().find(|(g, _, l)| *g == guid && l.is_some()) {
            return Err(NamingRuleError::UserFixedRule {
                guid,
                name: n.clone(),
                line: *line,
            });
        }
        if let Some((g, _, user_line)) = fixed.iter().find(|(g, n, _)| n == name && *g != guid) {
            return Err(NamingRuleError::NameTaken {
                name: name.to_string(),
                other: *g,
                user_line: *user_line,
            });
        }
        if self.managed_policy.is_none() {
            self.managed_policy = Some(inherited.clone());
        }
        let changed = match self.managed_fixed.iter_mut().find(|(g, _)| *g == guid) {
            Some((_, n)) if n == name => false,
            Some((_, n)) => {
                *n = name.to_string();
                true
            }
            None => {
                self.managed_fixed.push((guid, name.to_string()));
                true
            }
        };
        Ok(changed)
    }

    /// Removes the daemon's fixed name of a device; returns the name it had.
    pub fn remove_fixed(&mut self, guid: Guid) -> Result<String, NamingRuleError> {
        self.file.block.clone()?;
        if let Some(pos) = self.managed_fixed.iter().position(|(g, _)| *g == guid) {
            let (_, name) = self.managed_fixed.remove(pos);
            self.managed_fixed.retain(|(g, _)| *g != guid);
            return Ok(name);
        }
        match self.current_fixed().into_iter().find(|(g, ..)| *g == guid) {
            Some((_, name, Some(line))) => Err(NamingRuleError::UserFixedRule { guid, name, line }),
            _ => Err(NamingRuleError::NotFixed(guid)),
        }
    }

    /// The file with the daemon's block as it stands now.
    pub fn render(&self) -> Result<Vec<u8>, NamingRuleError> {
        let mut content: Vec<String> = Vec::new();
        if self.managed_policy.is_some() || !self.managed_fixed.is_empty() {
            content.extend(NAMING_BLOCK_HEADER.iter().map(|s| s.to_string()));
            for (g, name) in &self.managed_fixed {
                content.push(format!(
                    "ACTION==\"add\", SUBSYSTEM==\"infiniband\", ATTR{{node_guid}}==\"{}\", PROGRAM=\"rdma_rename %k NAME_FIXED {name}\", GOTO=\"{BLOCK_END_LABEL}\"",
                    g.colon_form()
                ));
            }
            if let Some(p) = &self.managed_policy {
                content.push(format!(
                    "ACTION==\"add\", SUBSYSTEM==\"infiniband\", PROGRAM=\"rdma_rename %k {}\"",
                    p.keyword()
                ));
            }
            if !self.managed_fixed.is_empty() {
                content.push(format!("LABEL=\"{BLOCK_END_LABEL}\""));
            }
        }
        Ok(self.file.render(&content)?)
    }

    /// What happens to a device when it is added: the rules in order, as udev runs them.
    /// `attr` gives the device's sysfs attributes for rule conditions; `compute` is
    /// rdma_rename under a policy.
    pub fn decide(
        &self,
        attr: &dyn Fn(&str) -> AttrValue,
        compute: &dyn Fn(&NamingPolicy) -> Result<String, NoName>,
    ) -> Decision {
        let mut notes = Vec::new();
        let mut skip_to: Option<&str> = None;
        let mut kept_by: Option<(NamingPolicy, u32)> = None;
        for item in &self.items {
            let rule = match item {
                Item::Label(l) => {
                    if skip_to == Some(l.as_str()) {
                        skip_to = None;
                    }
                    continue;
                }
                Item::Rule(_) if skip_to.is_some() => continue,
                Item::Rule(r) => r,
            };
            match conditions_hold(rule, attr) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(key) => {
                    notes.push(DecisionNote::Unevaluable {
                        line: rule.line,
                        key,
                    });
                    continue;
                }
            }
            match compute(&rule.policy) {
                Ok(name) => {
                    return Decision {
                        name: Some(name),
                        policy: rule.policy.clone(),
                        line: Some(rule.line),
                        notes,
                    }
                }
                // rdma_rename exits 0 without renaming: GOTO is taken, later rules still run.
                Err(NoName::KernelPolicy) => {
                    kept_by.get_or_insert((rule.policy.clone(), rule.line));
                    skip_to = rule.goto.as_deref();
                }
                // Exit 1: the rule does not match.
                Err(why) => {
                    notes.push(DecisionNote::NoName {
                        line: rule.line,
                        policy: rule.policy.clone(),
                        why,
                    });
                    kept_by.get_or_insert((rule.policy.clone(), rule.line));
                }
            }
        }
        let (policy, line) = match kept_by {
            Some((p, l)) => (p, Some(l)),
            None => (NamingPolicy::Kernel, None),
        };
        Decision {
            name: None,
            policy,
            line,
            notes,
        }
    }
}

/// A rule that did not name the device, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum DecisionNote {
    #[error("the rule on line {line} depends on {key}, which rdma-manager cannot evaluate; assumed not to match")]
    Unevaluable { line: u32, key: String },
    #[error("{} (line {line}) gives no name: {why}", .policy.keyword())]
    NoName {
        line: u32,
        policy: NamingPolicy,
        why: NoName,
    },
}

/// What the rules do to one device when it is added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The name it gets, or `None`: it keeps the kernel's.
    pub name: Option<String>,
    /// The policy of the rule that decided (the first that matched when none renamed).
    pub policy: NamingPolicy,
    /// That rule's line.
    pub line: Option<u32>,
    /// Rules that did not apply, and why.
    pub notes: Vec<DecisionNote>,
}

/// One device as the preview sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PreviewDevice {
    pub name: String,
    pub node_guid: Option<Guid>,
    /// sysfs attributes for rule conditions (`node_guid`, `board_id`, ...).
    pub attrs: BTreeMap<String, String>,
    pub inputs: super::rdma_rename::RenameInputs,
}

/// One line of the preview: a device under a policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PreviewRow {
    pub device: String,
    /// The policy keyword.
    pub policy: String,
    /// The name it gives, or empty.
    pub name: String,
    /// This is what the rules in force do to the device when it is next added.
    pub active: bool,
    /// Why there is no name, or what to know about the one given.
    pub reason: String,
}

/// The attributes rule conditions may use, from a device's sysfs values.
pub fn attr_lookup(attrs: &BTreeMap<String, String>) -> impl Fn(&str) -> AttrValue + '_ {
    const KNOWN: [&str; 8] = [
        "node_guid",
        "sys_image_guid",
        "board_id",
        "hca_type",
        "hw_rev",
        "fw_ver",
        "node_desc",
        "node_type",
    ];
    move |a: &str| match attrs.get(a) {
        Some(v) => AttrValue::Value(v.clone()),
        None if KNOWN.contains(&a) => AttrValue::Absent,
        None => AttrValue::Unknown,
    }
}

/// For every device, the name each host policy (and its fixed name, if it has one) gives it,
/// with the row the rules in force choose marked active.
pub fn preview(rules: &NamingRules, devices: &[PreviewDevice]) -> Vec<PreviewRow> {
    use super::rdma_rename::rdma_rename;
    let fixed = rules.fixed_names();
    let decisions: Vec<Decision> = devices
        .iter()
        .map(|d| {
            let lookup = attr_lookup(&d.attrs);
            rules.decide(&lookup, &|p| rdma_rename(p, &d.inputs))
        })
        .collect();
    let mut rows = Vec::new();
    for (d, decision) in devices.iter().zip(&decisions) {
        let mut policies: Vec<NamingPolicy> = NamingPolicy::HOST_POLICIES.to_vec();
        if let Some((_, name, ..)) = fixed.iter().find(|(g, ..)| Some(*g) == d.node_guid) {
            policies.push(NamingPolicy::Fixed(name.clone()));
        }
        for p in policies {
            let result = rdma_rename(&p, &d.inputs);
            let active = p == decision.policy;
            let mut reason = Vec::new();
            let name = match result {
                Ok(n) => {
                    if n == d.name {
                        reason.push("the device already has this name".to_string());
                    } else if let Some(other) = devices.iter().find(|o| o.name == n) {
                        reason.push(format!(
                            "{} is the name of {} now: the rename fails (EEXIST) while it is",
                            n, other.name
                        ));
                    }
                    if active {
                        let others: Vec<&str> = devices
                            .iter()
                            .zip(&decisions)
                            .filter(|(o, od)| {
                                o.name != d.name && od.name.as_deref() == Some(n.as_str())
                            })
                            .map(|(o, _)| o.name.as_str())
                            .collect();
                        if !others.is_empty() {
                            reason.push(format!(
                                "the rules give {} this name too: whichever is added second keeps its kernel name",
                                others.join(", ")
                            ));
                        }
                    }
                    n
                }
                Err(e) => {
                    reason.push(e.to_string());
                    String::new()
                }
            };
            if active {
                // A note that this policy gives no name says again what the row says.
                reason.extend(
                    decision
                        .notes
                        .iter()
                        .filter(
                            |n| !matches!(n, DecisionNote::NoName { policy, .. } if *policy == p),
                        )
                        .map(|n| n.to_string()),
                );
            }
            rows.push(PreviewRow {
                device: d.name.clone(),
                policy: p.keyword().to_string(),
                name,
                active,
                reason: reason.join("; "),
            });
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::super::rdma_rename::{
        NetlinkIdentity, PciFunction, PciParent, RenameInputs, RenameSysfs, NAME_ASSIGN_TYPE_USER,
    };
    use super::*;

    /// rdma-core's kernel-boot/rdma-persistent-naming.rules as shipped.
    const SHIPPED: &str = r#"# SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
# Copyright (c) 2019, Mellanox Technologies. All rights reserved. See COPYING file
#
# Rename modes:
# NAME_FALLBACK - Try to name devices in the following order:
#                 by-pci -> by-guid -> kernel
# NAME_KERNEL - leave name as kernel provided
# NAME_PCI - based on PCI/slot/function location
# NAME_GUID - based on system image GUID
# NAME_FIXED - rename the device to the fixed named in the next argument
#
ACTION=="add", SUBSYSTEM=="infiniband", PROGRAM="rdma_rename %k NAME_FALLBACK"

# Example:
# * NAME_FIXED 
#   fixed name for specific board_id
#
#ACTION=="add", ATTR{board_id}=="MSF0010110035", SUBSYSTEM=="infiniband", PROGRAM="rdma_rename %k NAME_FIXED myib"
"#;

    const CX6: Guid = Guid(0xb859_9f03_00d4_e62a);

    fn cx6() -> PreviewDevice {
        let mut attrs = BTreeMap::new();
        attrs.insert("node_guid".to_string(), CX6.colon_form());
        attrs.insert("board_id".to_string(), "MT_0000000223".to_string());
        PreviewDevice {
            name: "mlx5_0".into(),
            node_guid: Some(CX6),
            attrs,
            inputs: RenameInputs {
                name: "mlx5_0".into(),
                netlink: Some(NetlinkIdentity {
                    index: 1,
                    node_guid: CX6,
                    protocol: Some("ib".into()),
                    name_assign_type: Some(0),
                }),
                sysfs: RenameSysfs {
                    has_parent: true,
                    subsystem: Some("pci".into()),
                    pci: Some(PciParent {
                        function: PciFunction {
                            address: "0000:3b:00.0".into(),
                            ari_enabled: Some("0\n".into()),
                            header_type: Some(0x80),
                        },
                        physfn: None,
                    }),
                    ..RenameSysfs::default()
                },
            },
        }
    }

    fn rxe() -> PreviewDevice {
        let g = Guid(0x5054_00ff_fe12_3456);
        PreviewDevice {
            name: "rxe0".into(),
            node_guid: Some(g),
            attrs: BTreeMap::from([("node_guid".to_string(), g.colon_form())]),
            inputs: RenameInputs {
                name: "rxe0".into(),
                netlink: Some(NetlinkIdentity {
                    index: 3,
                    node_guid: g,
                    protocol: Some("roce".into()),
                    name_assign_type: Some(NAME_ASSIGN_TYPE_USER),
                }),
                sysfs: RenameSysfs::default(),
            },
        }
    }

    fn decide(rules: &NamingRules, d: &PreviewDevice) -> Decision {
        let lookup = attr_lookup(&d.attrs);
        rules.decide(&lookup, &|p| {
            super::super::rdma_rename::rdma_rename(p, &d.inputs)
        })
    }

    #[test]
    fn the_shipped_file() {
        let r = NamingRules::parse(Some(SHIPPED.as_bytes()));
        assert_eq!(r.host_policy(), NamingPolicy::Fallback);
        assert_eq!(r.rules().count(), 1, "the commented example is not a rule");
        assert_eq!(r.rules().next().map(|r| r.line), Some(12));
        assert_eq!(
            NamingRules::rdma_core_default().host_policy(),
            NamingPolicy::Fallback
        );
        // No file, or a file masked with a link to /dev/null: nothing renames.
        assert_eq!(NamingRules::parse(None).host_policy(), NamingPolicy::Kernel);
        assert_eq!(
            NamingRules::parse(Some(b"")).host_policy(),
            NamingPolicy::Kernel
        );
    }

    #[test]
    fn program_forms() {
        for (program, want) in [
            ("rdma_rename %k NAME_PCI", Some(NamingPolicy::Pci)),
            (
                "/usr/lib/udev/rdma_rename %k NAME_GUID",
                Some(NamingPolicy::Guid),
            ),
            ("rdma_rename -v %k NAME_KERNEL", Some(NamingPolicy::Kernel)),
            (
                "rdma_rename $kernel  NAME_ONBOARD",
                Some(NamingPolicy::Onboard),
            ),
            (
                "rdma_rename %k NAME_FIXED myib",
                Some(NamingPolicy::Fixed("myib".into())),
            ),
            ("rdma_rename %k NAME_FIXED", None),
            ("rdma_rename %k NAME_WHATEVER", None),
            ("rdma_rename mlx5_0 NAME_PCI", None),
            ("my_rename %k NAME_PCI", None),
        ] {
            assert_eq!(program_policy(program), want, "{program}");
        }
    }

    #[test]
    fn globs() {
        assert_eq!(glob_match("add", "add"), Some(true));
        assert_eq!(glob_match("add|change", "add"), Some(true));
        assert_eq!(glob_match("infini*", "infiniband"), Some(true));
        assert_eq!(glob_match("MT_?", "MT_0000000223"), Some(false));
        assert_eq!(glob_match("MT_*223", "MT_0000000223"), Some(true));
        assert_eq!(glob_match("[ab]", "a"), None);
    }

    #[test]
    fn fixed_names_come_first_and_the_policy_is_kept() {
        // The override does not exist yet: the shipped policy is carried into it.
        let mut r = NamingRules::parse(None);
        assert_eq!(r.set_fixed(CX6, "hpc0", &NamingPolicy::Fallback), Ok(true));
        assert_eq!(r.set_fixed(CX6, "hpc0", &NamingPolicy::Fallback), Ok(false));
        let text = String::from_utf8(r.render().unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "# BEGIN rdma-manager");
        assert!(lines[1].contains("rdma-managerd"));
        assert_eq!(
            lines[5],
            "ACTION==\"add\", SUBSYSTEM==\"infiniband\", ATTR{node_guid}==\"b859:9f03:00d4:e62a\", PROGRAM=\"rdma_rename %k NAME_FIXED hpc0\", GOTO=\"rdma_manager_naming_end\""
        );
        assert_eq!(
            lines[6],
            "ACTION==\"add\", SUBSYSTEM==\"infiniband\", PROGRAM=\"rdma_rename %k NAME_FALLBACK\""
        );
        assert_eq!(lines[7], "LABEL=\"rdma_manager_naming_end\"");
        assert_eq!(lines[8], "# END rdma-manager");
        let back = NamingRules::parse(Some(text.as_bytes()));
        assert_eq!(back.host_policy(), NamingPolicy::Fallback);
        assert_eq!(back.fixed_names(), vec![(CX6, "hpc0".to_string(), true, 6)]);
        // The fixed device gets its name; the GOTO skips the policy rule for it.
        let d = decide(&back, &cx6());
        assert_eq!(d.name.as_deref(), Some("hpc0"));
        assert_eq!(d.line, Some(6));
        // Other devices follow the policy.
        let mut other = cx6();
        other
            .attrs
            .insert("node_guid".into(), "0000:0000:0000:0001".into());
        assert_eq!(decide(&back, &other).name.as_deref(), Some("ibp59s0f0"));
        // Removing the fixed name keeps the policy and drops the label.
        let mut back = back;
        assert_eq!(back.remove_fixed(CX6), Ok("hpc0".into()));
        let text = String::from_utf8(back.render().unwrap()).unwrap();
        assert!(!text.contains("LABEL"));
        assert!(text.contains("NAME_FALLBACK"));
        assert_eq!(back.remove_fixed(CX6), Err(NamingRuleError::NotFixed(CX6)));
    }

    #[test]
    fn set_policy_and_refusals() {
        let mut r = NamingRules::parse(None);
        assert_eq!(r.set_policy("NAME_PCI"), Ok(NamingPolicy::Pci));
        let r = NamingRules::parse(Some(&r.render().unwrap()));
        assert_eq!(r.host_policy(), NamingPolicy::Pci);
        for bad in [
            "NAME_FIXED",
            "name_pci",
            "",
            "NAME_PCI\n",
            "NAME_FALLBACK; rm",
        ] {
            let mut r = r.clone();
            let e = r.set_policy(bad).unwrap_err();
            assert!(matches!(e, NamingRuleError::UnknownPolicy(_)), "{bad:?}");
            assert!(e.to_string().contains("NAME_FALLBACK"));
        }
        // A copy of rdma-core's file, edited by hand: its rule is the user's.
        let mut copy = NamingRules::parse(Some(
            SHIPPED
                .replace("NAME_FALLBACK\"", "NAME_KERNEL\"")
                .as_bytes(),
        ));
        assert_eq!(copy.host_policy(), NamingPolicy::Kernel);
        let e = copy.set_policy("NAME_PCI").unwrap_err();
        assert_eq!(
            e,
            NamingRuleError::UserPolicyRule {
                line: 12,
                policy: "NAME_KERNEL".into()
            }
        );
        assert!(e.to_string().contains("delete that line"));
        // A user's NAME_KERNEL rule lets fixed names after it work; a renaming one does not.
        assert_eq!(copy.set_fixed(CX6, "hpc0", &NamingPolicy::Kernel), Ok(true));
        let mut renaming = NamingRules::parse(Some(SHIPPED.as_bytes()));
        assert!(matches!(
            renaming.set_fixed(CX6, "hpc0", &NamingPolicy::Fallback),
            Err(NamingRuleError::UserPolicyRule { line: 12, .. })
        ));
        // Fixed names: bad names, a user's rule for the GUID, a name already fixed.
        let user = format!(
            "ACTION==\"add\", SUBSYSTEM==\"infiniband\", ATTR{{node_guid}}==\"{}\", PROGRAM=\"rdma_rename %k NAME_FIXED site0\"\n",
            CX6.colon_form()
        );
        let mut r = NamingRules::parse(Some(user.as_bytes()));
        assert!(matches!(
            r.set_fixed(CX6, "x", &NamingPolicy::Fallback),
            Err(NamingRuleError::UserFixedRule { line: 1, .. })
        ));
        assert!(matches!(
            r.set_fixed(Guid(1), "site0", &NamingPolicy::Fallback),
            Err(NamingRuleError::NameTaken {
                user_line: Some(1),
                ..
            })
        ));
        assert!(matches!(
            r.remove_fixed(CX6),
            Err(NamingRuleError::UserFixedRule { .. })
        ));
        for bad in ["", "a b", "x\"", "rxe%d", "../x", &"x".repeat(64)] {
            assert!(
                matches!(
                    r.set_fixed(Guid(1), bad, &NamingPolicy::Fallback),
                    Err(NamingRuleError::BadName { .. })
                ),
                "{bad:?}"
            );
        }
        let mut broken = NamingRules::parse(Some(b"# BEGIN rdma-manager\n"));
        assert!(matches!(
            broken.set_policy("NAME_PCI"),
            Err(NamingRuleError::Block(_))
        ));
    }

    #[test]
    fn user_lines_are_kept() {
        let file = format!("{}\r\n# my note\r\n", "ACTION==\"add\", ATTR{board_id}==\"MSF0010110035\", SUBSYSTEM==\"infiniband\", PROGRAM=\"rdma_rename %k NAME_FIXED myib\"");
        let mut r = NamingRules::parse(Some(file.as_bytes()));
        r.set_policy("NAME_GUID").unwrap();
        let out = r.render().unwrap();
        assert!(out.starts_with(file.as_bytes()));
        assert!(String::from_utf8_lossy(&out[file.len()..]).contains("NAME_GUID\"\r\n"));
        let back = NamingRules::parse(Some(&out));
        assert_eq!(back.host_policy(), NamingPolicy::Guid);
        // The user's board_id rule comes first and is evaluated from board_id.
        let mut d = cx6();
        d.attrs.insert("board_id".into(), "MSF0010110035".into());
        let dec = decide(&back, &d);
        assert_eq!(dec.name.as_deref(), Some("myib"));
        assert_eq!(dec.line, Some(1));
        let dec = decide(&back, &cx6());
        assert_eq!(dec.name.as_deref(), Some("ibxb8599f0300d4e62a"));
    }

    #[test]
    fn decisions_follow_udev() {
        // A fixed rule for the device that cannot apply (rxe: named by the user) falls through
        // to the policy, which leaves it alone too.
        let mut r = NamingRules::parse(None);
        let rx = rxe();
        r.set_fixed(Guid(0x5054_00ff_fe12_3456), "soft0", &NamingPolicy::Guid)
            .unwrap();
        let r = NamingRules::parse(Some(&r.render().unwrap()));
        let d = decide(&r, &rx);
        assert_eq!(d.name, None);
        assert_eq!(d.policy, NamingPolicy::Fixed("soft0".into()));
        assert_eq!(d.notes.len(), 2, "{:?}", d.notes);
        assert!(d.notes[0].to_string().contains("given by the user"));
        // Conditions that cannot be evaluated are said so.
        let r = NamingRules::parse(Some(
            b"KERNEL==\"mlx5_*\", PROGRAM=\"rdma_rename %k NAME_PCI\"\n",
        ));
        let d = decide(&r, &cx6());
        assert_eq!(d.name, None);
        assert_eq!(d.policy, NamingPolicy::Kernel);
        assert!(d.notes[0].to_string().contains("KERNEL"), "{:?}", d.notes);
        // A NAME_KERNEL rule first: later rules still run.
        let r = NamingRules::parse(Some(
            b"SUBSYSTEM==\"infiniband\", PROGRAM=\"rdma_rename %k NAME_KERNEL\"\nSUBSYSTEM==\"infiniband\", PROGRAM=\"rdma_rename %k NAME_PCI\"\n",
        ));
        assert_eq!(decide(&r, &cx6()).name.as_deref(), Some("ibp59s0f0"));
        // Another subsystem's rule does not apply.
        let r = NamingRules::parse(Some(
            b"SUBSYSTEM==\"net\", PROGRAM=\"rdma_rename %k NAME_PCI\"\n",
        ));
        assert_eq!(decide(&r, &cx6()).name, None);
    }

    #[test]
    fn preview_rows() {
        let r = NamingRules::parse(Some(SHIPPED.as_bytes()));
        let rows = preview(&r, &[cx6(), rxe()]);
        let row = |dev: &str, pol: &str| {
            rows.iter()
                .find(|r| r.device == dev && r.policy == pol)
                .cloned()
                .unwrap()
        };
        assert_eq!(rows.len(), 10);
        let fb = row("mlx5_0", "NAME_FALLBACK");
        assert!(fb.active);
        assert_eq!(fb.name, "ibp59s0f0");
        assert_eq!(row("mlx5_0", "NAME_GUID").name, "ibxb8599f0300d4e62a");
        assert!(!row("mlx5_0", "NAME_GUID").active);
        let ob = row("mlx5_0", "NAME_ONBOARD");
        assert_eq!(ob.name, "");
        assert!(ob.reason.contains("not an onboard device"));
        let k = row("rxe0", "NAME_KERNEL");
        assert_eq!(
            k.reason,
            "NAME_KERNEL keeps the name the kernel gives the device"
        );
        let rx = row("rxe0", "NAME_FALLBACK");
        assert!(rx.active);
        assert_eq!(rx.name, "");
        assert_eq!(
            rx.reason,
            "its name was given by the user (the kernel reports NAME_ASSIGN_TYPE user, as for rxe and siw); rdma_rename leaves it alone"
        );
        // A device already named by the policy; a name another device has now.
        let mut named = cx6();
        named.name = "ibp59s0f0".into();
        let rows = preview(&r, &[named]);
        assert!(rows
            .iter()
            .any(|r| r.reason == "the device already has this name"));
        let mut a = cx6();
        let mut b = cx6();
        b.name = "mlx5_1".into();
        a.name = "ibxb8599f0300d4e62a".into();
        let rows = preview(&r, &[a, b]);
        let clash = rows
            .iter()
            .find(|r| r.device == "mlx5_1" && r.policy == "NAME_FALLBACK")
            .unwrap();
        assert!(
            clash.reason.contains("whichever is added second"),
            "{}",
            clash.reason
        );
        let eexist = rows
            .iter()
            .find(|r| r.device == "mlx5_1" && r.policy == "NAME_GUID")
            .unwrap();
        assert!(eexist.reason.contains("EEXIST"), "{}", eexist.reason);
    }
}
