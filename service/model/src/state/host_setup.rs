//! The document's host setup sections (the Red Hat guide's steps): `modules` (rdma-core's
//! module lists), `memlock`, `nfs-rdma` and `subnet-manager`. Their types, checks,
//! difference with the host and steps.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::part::{once, text, Area, ChangeOp, PartPlan, Phase};
use crate::hostconf::memlock::{self, MemlockValue};
use crate::hostconf::nfs_conf::{self, NFSRDMA_PORT};
use crate::hostconf::rdma_modules;
use crate::state_error::StateError;

/// The memlock limits as `SetMemlockLimits` takes them (`unlimited` or a number of KiB).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Memlock {
    #[serde(
        default,
        deserialize_with = "super::forms::memlock",
        skip_serializing_if = "Option::is_none"
    )]
    pub soft: Option<String>,
    #[serde(
        default,
        deserialize_with = "super::forms::memlock",
        skip_serializing_if = "Option::is_none"
    )]
    pub hard: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct NfsRdma {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SubnetManager {
    /// The opensm unit enabled at boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// opensm running now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<bool>,
}

/// The host setup sections of a state, as the checks and the difference read them.
pub(super) struct Sections<'a> {
    pub modules: &'a Option<BTreeMap<String, BTreeMap<String, bool>>>,
    pub memlock: &'a Option<Memlock>,
    pub nfs_rdma: &'a Option<NfsRdma>,
    pub subnet_manager: &'a Option<SubnetManager>,
}

/// One step of the host setup sections, with the arguments of its one-shot method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupStep {
    /// `SetModuleEnabled`.
    SetModule {
        set: String,
        module: String,
        enabled: bool,
    },
    /// `SetMemlockLimits`.
    SetMemlock { soft: String, hard: String },
    /// Back to no limits file of ours (`ResetMemlockLimits`).
    ResetMemlock,
    /// `SetNfsRdma`.
    SetNfsRdma { enabled: bool, port: u16 },
    /// `SetSubnetManagerEnabled`.
    SetSubnetManagerEnabled { enabled: bool },
    /// `StartSubnetManager` or `StopSubnetManager`.
    SetSubnetManagerRunning { running: bool },
}

impl SetupStep {
    /// The polkit area of the step's method.
    pub fn area(&self) -> Area {
        Area::Host
    }
}

/// The host setup sections of a document, value by value.
pub(super) fn check(state: &Sections) -> Result<(), StateError> {
    if let Some(modules) = &state.modules {
        check_modules(modules)?;
    }
    if let Some(m) = &state.memlock {
        check_memlock(m)?;
    }
    if let Some(nfs) = &state.nfs_rdma {
        if let Some(port) = nfs.port {
            nfs_conf::validate_port(u32::from(port))
                .map_err(|e| StateError::invalid("nfs-rdma.port", e.to_string()))?;
        }
    }
    Ok(())
}

fn check_modules(modules: &BTreeMap<String, BTreeMap<String, bool>>) -> Result<(), StateError> {
    for (set, list) in modules {
        let p = format!("modules.{set}");
        rdma_modules::modules_file_path(set)
            .map_err(|err| StateError::invalid(&p, err.to_string()))?;
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for module in list.keys() {
            let mp = format!("{p}.{module}");
            rdma_modules::validate_module_name(module)
                .map_err(|err| StateError::invalid(&mp, err.to_string()))?;
            // kmod reads '-' as '_': ib-ipoib and ib_ipoib are one module.
            once(&mut seen, module.replace('-', "_"), &mp, |first| {
                format!("{module} is the same module as {first} (kmod reads '-' as '_')")
            })?;
        }
    }
    Ok(())
}

fn check_memlock(m: &Memlock) -> Result<(), StateError> {
    let value = |key: &str, text: &Option<String>| {
        text.as_deref()
            .map(|t| {
                memlock::MemlockValue::parse_setting(t)
                    .map_err(|e| StateError::invalid(format!("memlock.{key}"), e.to_string()))
            })
            .transpose()
    };
    let soft = value("soft", &m.soft)?;
    let hard = value("hard", &m.hard)?;
    if let (Some(soft), Some(hard)) = (soft, hard) {
        memlock::validate(soft, hard)
            .map_err(|e| StateError::contradiction("memlock.soft", e.to_string()))?;
    }
    Ok(())
}

/// The changes of the host setup sections, in the order they run: modules, memlock, NFS,
/// the subnet manager.
pub(super) fn diff(
    current: &Sections,
    wanted: &Sections,
    plan: &mut PartPlan<SetupStep>,
) -> Result<(), StateError> {
    modules(current, wanted, plan);
    memlock(current, wanted, plan)?;
    nfs(current, wanted, plan);
    subnet_manager(current, wanted, plan);
    Ok(())
}

fn modules(current: &Sections, wanted: &Sections, plan: &mut PartPlan<SetupStep>) {
    let empty = BTreeMap::new();
    for (set, list) in wanted.modules.iter().flatten() {
        let have = current
            .modules
            .as_ref()
            .and_then(|m| m.get(set))
            .unwrap_or(&empty);
        for (module, &enabled) in list {
            // kmod reads '-' as '_'.
            let old = have.get(module).copied().or_else(|| {
                have.iter()
                    .find(|(m, _)| m.replace('-', "_") == module.replace('-', "_"))
                    .map(|(_, v)| *v)
            });
            // A module the list does not name is not loaded by it: as good as disabled.
            if old.unwrap_or(false) == enabled {
                continue;
            }
            let step = |enabled| SetupStep::SetModule {
                set: set.clone(),
                module: module.clone(),
                enabled,
            };
            plan.push(
                Phase::Modules,
                format!("modules.{set}.{module}"),
                if old.is_none() {
                    ChangeOp::Add
                } else {
                    ChangeOp::Set
                },
                (text(old), enabled.to_string()),
                step(enabled),
                step(!enabled),
            );
        }
    }
}

fn memlock_value(path: &str, text: &str) -> Result<MemlockValue, StateError> {
    MemlockValue::parse_setting(text).map_err(|e| StateError::invalid(path, e.to_string()))
}

fn memlock(
    current: &Sections,
    wanted: &Sections,
    plan: &mut PartPlan<SetupStep>,
) -> Result<(), StateError> {
    let Some(w) = &wanted.memlock else {
        return Ok(());
    };
    let empty = Memlock::default();
    let c = current.memlock.as_ref().unwrap_or(&empty);
    // What the host has is read, not asked for: a value the daemon would not write counts as
    // unknown, and so differs from any wanted value.
    let cur_soft = c
        .soft
        .as_deref()
        .and_then(|t| MemlockValue::parse_setting(t).ok());
    let cur_hard = c
        .hard
        .as_deref()
        .and_then(|t| MemlockValue::parse_setting(t).ok());
    let w_soft = w
        .soft
        .as_deref()
        .map(|t| memlock_value("memlock.soft", t))
        .transpose()?;
    let w_hard = w
        .hard
        .as_deref()
        .map(|t| memlock_value("memlock.hard", t))
        .transpose()?;
    let soft_differs = w_soft.is_some() && w_soft != cur_soft;
    let hard_differs = w_hard.is_some() && w_hard != cur_hard;
    if !soft_differs && !hard_differs {
        return Ok(());
    }
    let (Some(soft), Some(hard)) = (w_soft.or(cur_soft), w_hard.or(cur_hard)) else {
        let missing = if w_soft.is_none() { "soft" } else { "hard" };
        return Err(StateError::invalid(
            "memlock",
            format!("give both soft and hard: the host has no {missing} limit of rdma-manager's to keep"),
        ));
    };
    memlock::validate(soft, hard)
        .map_err(|e| StateError::contradiction("memlock", e.to_string()))?;
    let show = |v: Option<MemlockValue>| text(v.map(MemlockValue::conf_text));
    let (path, texts) = match (soft_differs, hard_differs) {
        (true, false) => ("memlock.soft", (show(cur_soft), soft.conf_text())),
        (false, true) => ("memlock.hard", (show(cur_hard), hard.conf_text())),
        _ => (
            "memlock",
            (
                match (cur_soft, cur_hard) {
                    (None, None) => String::new(),
                    (s, h) => format!("soft={} hard={}", show(s), show(h)),
                },
                format!("soft={} hard={}", soft.conf_text(), hard.conf_text()),
            ),
        ),
    };
    let undo = match (cur_soft, cur_hard) {
        (Some(s), Some(h)) => SetupStep::SetMemlock {
            soft: s.conf_text(),
            hard: h.conf_text(),
        },
        _ => SetupStep::ResetMemlock,
    };
    plan.push(
        Phase::Memlock,
        path.into(),
        if cur_soft.is_none() && cur_hard.is_none() {
            ChangeOp::Add
        } else {
            ChangeOp::Set
        },
        texts,
        SetupStep::SetMemlock {
            soft: soft.conf_text(),
            hard: hard.conf_text(),
        },
        undo,
    );
    Ok(())
}

fn nfs(current: &Sections, wanted: &Sections, plan: &mut PartPlan<SetupStep>) {
    let Some(w) = &wanted.nfs_rdma else { return };
    let empty = NfsRdma::default();
    let c = current.nfs_rdma.as_ref().unwrap_or(&empty);
    let enabled = w.enabled.or(c.enabled).unwrap_or(false);
    let port = w.port.or(c.port).unwrap_or(NFSRDMA_PORT);
    let enabled_differs = w.enabled.is_some() && c.enabled != Some(enabled);
    // The port is written only with RDMA enabled: while disabled it is not a setting.
    let port_differs = enabled && w.port.is_some() && c.port != Some(port);
    let (path, texts) = match (enabled_differs, port_differs) {
        (false, false) => return,
        (true, false) => ("nfs-rdma.enabled", (text(c.enabled), enabled.to_string())),
        (false, true) => ("nfs-rdma.port", (text(c.port), port.to_string())),
        (true, true) => (
            "nfs-rdma",
            (
                format!("enabled={} port={}", text(c.enabled), text(c.port)),
                format!("enabled={enabled} port={port}"),
            ),
        ),
    };
    plan.push(
        Phase::Nfs,
        path.into(),
        ChangeOp::Set,
        texts,
        SetupStep::SetNfsRdma { enabled, port },
        SetupStep::SetNfsRdma {
            enabled: c.enabled.unwrap_or(false),
            port: c.port.unwrap_or(NFSRDMA_PORT),
        },
    );
}

fn subnet_manager(current: &Sections, wanted: &Sections, plan: &mut PartPlan<SetupStep>) {
    let Some(w) = &wanted.subnet_manager else {
        return;
    };
    let empty = SubnetManager::default();
    let c = current.subnet_manager.as_ref().unwrap_or(&empty);
    if let Some(enabled) = w.enabled {
        if c.enabled != Some(enabled) {
            plan.push(
                Phase::SubnetManager,
                "subnet-manager.enabled".into(),
                ChangeOp::Set,
                (text(c.enabled), enabled.to_string()),
                SetupStep::SetSubnetManagerEnabled { enabled },
                SetupStep::SetSubnetManagerEnabled {
                    enabled: c.enabled.unwrap_or(!enabled),
                },
            );
        }
    }
    if let Some(running) = w.running {
        if c.running != Some(running) {
            plan.push(
                Phase::SubnetManager,
                "subnet-manager.running".into(),
                ChangeOp::Set,
                (text(c.running), running.to_string()),
                SetupStep::SetSubnetManagerRunning { running },
                SetupStep::SetSubnetManagerRunning {
                    running: c.running.unwrap_or(!running),
                },
            );
        }
    }
}
