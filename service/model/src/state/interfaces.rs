//! The document's `interfaces` list: IPoIB interfaces and P_Key children (nmstate's
//! `type: infiniband` keys), and their IP settings, identity `name`. Its types, checks,
//! difference with the host and steps.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use rdma_manager_dbus::text::quote_capped;
use serde::{Deserialize, Serialize};

use super::ip_settings::IpFamily;
use super::part::{is_absent, once, pkey_value, text, Area, ChangeOp, EntryState, PartPlan, Phase};
use crate::ip::{is_search_domain, Family};
use crate::ipoib::{self, IpoibMode};
use crate::names::validate_netdev_name;
use crate::state_error::StateError;

/// The only interface type the document knows; nmstate's spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InterfaceType {
    Infiniband,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct InterfaceEntry {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: InterfaceType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<EntryState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infiniband: Option<Infiniband>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4: Option<IpFamily>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv6: Option<IpFamily>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Infiniband {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<StateIpoibMode>,
    /// rdma-manager's key: the `umcast` flag (nmstate has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub umcast: Option<bool>,
    /// The parent of a P_Key child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_iface: Option<String>,
    /// A P_Key child's P_Key as nmstate writes it: a lower-case hex string, `"0x8002"`
    /// (an integer is read into that form).
    #[serde(
        default,
        deserialize_with = "super::forms::pkey",
        skip_serializing_if = "Option::is_none"
    )]
    pub pkey: Option<String>,
}

/// IPoIB's transport mode as the document spells it (nmstate's `datagram`/`connected`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StateIpoibMode {
    Datagram,
    Connected,
}

impl From<StateIpoibMode> for IpoibMode {
    fn from(m: StateIpoibMode) -> IpoibMode {
        match m {
            StateIpoibMode::Datagram => IpoibMode::Datagram,
            StateIpoibMode::Connected => IpoibMode::Connected,
        }
    }
}

impl From<IpoibMode> for StateIpoibMode {
    fn from(m: IpoibMode) -> StateIpoibMode {
        match m {
            IpoibMode::Datagram => StateIpoibMode::Datagram,
            IpoibMode::Connected => StateIpoibMode::Connected,
        }
    }
}

/// One step of the `interfaces` list, with the arguments of its one-shot method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InterfaceStep {
    /// `CreateIpoibChild`.
    CreateChild {
        parent: String,
        pkey: u16,
        name: String,
    },
    /// `IpoibInterface.Delete`.
    DeleteChild { name: String },
    /// `IpoibInterface.SetMode`.
    SetMode { name: String, mode: StateIpoibMode },
    /// `IpoibInterface.SetMtu`.
    SetMtu { name: String, mtu: u32 },
    /// `IpoibInterface.SetUmcast`.
    SetUmcast { name: String, umcast: bool },
    /// `SetIpSettings`: nmcli keys (`ipv4.method`, `ipv4.addresses`, ...) to their values,
    /// lists joined by commas as nmcli prints them.
    SetIp {
        name: String,
        keys: BTreeMap<String, String>,
    },
}

impl InterfaceStep {
    /// The polkit area of the step's method.
    pub fn area(&self) -> Area {
        match self {
            InterfaceStep::SetIp { .. } => Area::Ip,
            _ => Area::Ipoib,
        }
    }
}

/// The document's `interfaces` list: names, MTUs per mode, P_Key children and IP settings.
pub(super) fn check(ifs: &[InterfaceEntry]) -> Result<(), StateError> {
    let mut names = BTreeMap::new();
    let mut children = BTreeMap::new();
    for (i, e) in ifs.iter().enumerate() {
        let p = format!("interfaces[{i}]");
        validate_netdev_name(&e.name)
            .map_err(|err| StateError::invalid(format!("{p}.name"), err.to_string()))?;
        once(&mut names, e.name.clone(), &p, |first| {
            format!(
                "interface {} is listed twice (also at {first})",
                quote_capped(&e.name)
            )
        })?;
        let ib = e.infiniband.as_ref();
        if is_absent(e.state) {
            let settings = [
                ("mtu", e.mtu.is_some()),
                ("infiniband.mode", ib.is_some_and(|b| b.mode.is_some())),
                ("infiniband.umcast", ib.is_some_and(|b| b.umcast.is_some())),
                ("ipv4", e.ipv4.is_some()),
                ("ipv6", e.ipv6.is_some()),
            ];
            if let Some((key, _)) = settings.iter().find(|(_, given)| *given) {
                return Err(StateError::contradiction(
                    format!("{p}.{key}"),
                    "state: absent deletes the interface and takes no settings",
                ));
            }
        }
        if let Some(ib) = ib {
            check_child(&p, e, ib, &mut children)?;
        }
        if let Some(mtu) = e.mtu {
            // Without a mode here, the mode the interface has decides; the widest range is
            // checked now and the interface's mode when the host is known.
            let mode = ib
                .and_then(|b| b.mode)
                .map_or(IpoibMode::Connected, IpoibMode::from);
            ipoib::check_mtu(mode, mtu)
                .map_err(|err| StateError::invalid(format!("{p}.mtu"), err.to_string()))?;
        }
        if let Some(f) = &e.ipv4 {
            check_family(&format!("{p}.ipv4"), f, Family::V4)?;
        }
        if let Some(f) = &e.ipv6 {
            check_family(&format!("{p}.ipv6"), f, Family::V6)?;
        }
    }
    Ok(())
}

/// A P_Key child's `base-iface` and `pkey`: both or neither, and one child per parent and
/// partition.
fn check_child(
    p: &str,
    e: &InterfaceEntry,
    ib: &Infiniband,
    children: &mut BTreeMap<(String, u16), String>,
) -> Result<(), StateError> {
    match (&ib.base_iface, &ib.pkey) {
        (None, None) => Ok(()),
        (Some(_), None) => Err(StateError::invalid(
            format!("{p}.infiniband"),
            "missing field `pkey`: a P_Key child is given with its base-iface and its pkey",
        )),
        (None, Some(_)) => Err(StateError::invalid(
            format!("{p}.infiniband"),
            "missing field `base-iface`: a P_Key child is given with its parent (base-iface) \
             and its pkey",
        )),
        (Some(parent), Some(pkey)) => {
            validate_netdev_name(parent).map_err(|err| {
                StateError::invalid(format!("{p}.infiniband.base-iface"), err.to_string())
            })?;
            if *parent == e.name {
                return Err(StateError::invalid(
                    format!("{p}.infiniband.base-iface"),
                    "an interface cannot be its own parent",
                ));
            }
            let value = pkey_value(pkey)
                .map_err(|r| StateError::invalid(format!("{p}.infiniband.pkey"), r))?;
            if is_absent(e.state) {
                return Ok(());
            }
            once(
                children,
                (parent.clone(), ipoib::full_member(value)),
                p,
                |first| {
                    format!(
                        "{parent} has one child per partition: P_Key {:#06x} is also at {first} \
                         (the kernel sets the full-membership bit 0x8000 on every child)",
                        ipoib::full_member(value)
                    )
                },
            )
        }
    }
}

pub(crate) fn check_family(p: &str, f: &IpFamily, family: Family) -> Result<(), StateError> {
    let name = family.name();
    if family == Family::V4 && f.autoconf.is_some() {
        return Err(StateError::invalid(
            format!("{p}.autoconf"),
            "autoconf is IPv6's stateless autoconfiguration; IPv4 has dhcp",
        ));
    }
    if f.enabled == Some(false) {
        let on = [
            ("dhcp", f.dhcp == Some(true)),
            ("autoconf", f.autoconf == Some(true)),
            ("address", f.address.as_ref().is_some_and(|a| !a.is_empty())),
            ("gateway", f.gateway.as_ref().is_some_and(|g| !g.is_empty())),
        ];
        if let Some((key, _)) = on.iter().find(|(_, given)| *given) {
            return Err(StateError::contradiction(
                format!("{p}.{key}"),
                format!("enabled: false turns {name} off, which leaves no {key} to set"),
            ));
        }
    }
    let ip_of = |path: String, text: &str, what: &str| -> Result<IpAddr, StateError> {
        let addr: IpAddr = text.parse().map_err(|_| {
            StateError::invalid(
                &path,
                format!("{} is not an {name} address", quote_capped(text)),
            )
        })?;
        if Family::of(&addr) != family {
            return Err(StateError::invalid(
                path,
                format!("{what} {addr} is not an {name} address, in the {name} settings"),
            ));
        }
        Ok(addr)
    };
    for (k, a) in f.address.iter().flatten().enumerate() {
        ip_of(format!("{p}.address[{k}].ip"), &a.ip, "address")?;
        if !family.allows_prefix(a.prefix_length) {
            return Err(StateError::invalid(
                format!("{p}.address[{k}].prefix-length"),
                format!(
                    "prefix length {} is outside 1 to {} (NetworkManager would drop the address)",
                    a.prefix_length,
                    family.max_prefix()
                ),
            ));
        }
    }
    if let Some(gw) = f.gateway.as_deref().filter(|g| !g.is_empty()) {
        ip_of(format!("{p}.gateway"), gw, "gateway")?;
        if f.address.as_ref().is_some_and(|a| a.is_empty()) {
            return Err(StateError::contradiction(
                format!("{p}.gateway"),
                format!("an {name} gateway needs an {name} address, and address is empty"),
            ));
        }
    }
    for (k, d) in f.dns.iter().flatten().enumerate() {
        ip_of(format!("{p}.dns[{k}]"), d, "DNS server")?;
    }
    for (k, d) in f.dns_search.iter().flatten().enumerate() {
        if !is_search_domain(d) {
            return Err(StateError::invalid(
                format!("{p}.dns-search[{k}]"),
                format!("{} is not a DNS search domain", quote_capped(d)),
            ));
        }
    }
    Ok(())
}

/// A current interface's P_Key child identity: its parent and P_Key.
fn child_of(e: &InterfaceEntry) -> Option<(&str, u16)> {
    let ib = e.infiniband.as_ref()?;
    let parent = ib.base_iface.as_deref()?;
    let pkey = pkey_value(ib.pkey.as_deref()?).ok()?;
    Some((parent, pkey))
}

fn child_text(parent: &str, pkey: u16) -> String {
    format!("base-iface={parent} pkey={pkey:#06x}")
}

fn mode_text(m: StateIpoibMode) -> &'static str {
    IpoibMode::from(m).as_str()
}

/// The changes of the `interfaces` list: P_Key children deleted, then created, then each
/// interface's IPoIB settings and its IP settings.
pub(super) fn diff(
    current: &Option<Vec<InterfaceEntry>>,
    wanted: &Option<Vec<InterfaceEntry>>,
    plan: &mut PartPlan<InterfaceStep>,
) -> Result<(), StateError> {
    let have: BTreeMap<&str, &InterfaceEntry> = current
        .iter()
        .flatten()
        .map(|e| (e.name.as_str(), e))
        .collect();
    // NetworkManager runs when the host's state has IP settings for any interface.
    let nm_runs = have.values().any(|e| e.ipv4.is_some() || e.ipv6.is_some());
    let deleted: BTreeSet<&str> = wanted
        .iter()
        .flatten()
        .filter(|e| e.state == Some(EntryState::Absent))
        .map(|e| e.name.as_str())
        .collect();
    for (i, e) in wanted.iter().flatten().enumerate() {
        let p = format!("interfaces[{i}]");
        let path = format!("interfaces[{}]", e.name);
        let now = have.get(e.name.as_str()).copied();
        let said_child = e.infiniband.as_ref().and_then(|ib| {
            Some((
                ib.base_iface.as_deref()?,
                pkey_value(ib.pkey.as_deref()?).ok()?,
            ))
        });
        if e.state == Some(EntryState::Absent) {
            let Some(now) = now else { continue };
            let Some((parent, pkey)) = child_of(now) else {
                return Err(StateError::invalid(
                    format!("{p}.state"),
                    format!(
                        "{} is not a P_Key child: only children (with base-iface and pkey) can \
                         be deleted",
                        e.name
                    ),
                ));
            };
            plan.push(
                Phase::ChildDeletions,
                path,
                ChangeOp::Remove,
                (child_text(parent, pkey), String::new()),
                InterfaceStep::DeleteChild {
                    name: e.name.clone(),
                },
                InterfaceStep::CreateChild {
                    parent: parent.to_string(),
                    pkey,
                    name: e.name.clone(),
                },
            );
            continue;
        }
        match (now, said_child) {
            (Some(now), Some((parent, pkey))) => match child_of(now) {
                Some((p0, k0))
                    if p0 == parent && ipoib::full_member(k0) == ipoib::full_member(pkey) => {}
                Some((p0, k0)) => {
                    return Err(StateError::invalid(
                        format!("{p}.infiniband"),
                        format!(
                            "{} is the child of {p0} with P_Key {k0:#06x}; a child's parent and \
                             P_Key cannot change: delete it (state: absent) and create the \
                             child under another name",
                            e.name
                        ),
                    ))
                }
                None => {
                    return Err(StateError::invalid(
                        format!("{p}.infiniband.base-iface"),
                        format!("{} exists and is not a P_Key child", e.name),
                    ))
                }
            },
            (Some(_), None) => {}
            (None, Some((parent, pkey))) => {
                let Some(parent_now) = have.get(parent) else {
                    return Err(StateError::not_found(
                        format!("{p}.infiniband.base-iface"),
                        "parent interface",
                        parent,
                        "",
                    ));
                };
                if child_of(parent_now).is_some() {
                    return Err(StateError::invalid(
                        format!("{p}.infiniband.base-iface"),
                        format!("{parent} is itself a P_Key child; a child's parent is a port's interface"),
                    ));
                }
                let full = ipoib::full_member(pkey);
                if let Some(other) = have.values().find(|o| {
                    !deleted.contains(o.name.as_str())
                        && child_of(o)
                            .is_some_and(|(op, ok)| op == parent && ipoib::full_member(ok) == full)
                }) {
                    return Err(StateError::contradiction(
                        format!("{p}.infiniband.pkey"),
                        format!(
                            "{parent} already has the child {} with P_Key {full:#06x} (the kernel \
                             sets the full-membership bit 0x8000 on every child)",
                            other.name
                        ),
                    ));
                }
                plan.push(
                    Phase::ChildCreations,
                    path.clone(),
                    ChangeOp::Add,
                    (String::new(), child_text(parent, pkey)),
                    InterfaceStep::CreateChild {
                        parent: parent.to_string(),
                        pkey,
                        name: e.name.clone(),
                    },
                    InterfaceStep::DeleteChild {
                        name: e.name.clone(),
                    },
                );
            }
            (None, None) => {
                return Err(StateError::not_found(
                    &p,
                    "interface",
                    &e.name,
                    " (only P_Key children are created: give infiniband.base-iface and pkey)",
                ))
            }
        }
        ipoib_settings(&p, &path, e, now, plan)?;
        for (family, w, c) in [
            (Family::V4, &e.ipv4, now.and_then(|n| n.ipv4.as_ref())),
            (Family::V6, &e.ipv6, now.and_then(|n| n.ipv6.as_ref())),
        ] {
            let Some(w) = w else { continue };
            let fp = format!("{p}.{}", family.setting());
            if !nm_runs || (now.is_some() && c.is_none()) {
                return Err(StateError::invalid(
                    fp,
                    format!(
                        "IP settings need NetworkManager, and the host's state has none for {} \
                         (NetworkManager does not run, or does not manage it)",
                        e.name
                    ),
                ));
            }
            ip_settings(&fp, &path, &e.name, family, w, c, now.is_none(), plan)?;
        }
    }
    Ok(())
}

/// Mode, MTU and umcast. The MTU is checked against the mode the interface will have; going
/// to connected mode, the mode is set before a connected-only MTU, and going to datagram mode
/// after the MTU is lowered.
fn ipoib_settings(
    p: &str,
    path: &str,
    e: &InterfaceEntry,
    now: Option<&InterfaceEntry>,
    plan: &mut PartPlan<InterfaceStep>,
) -> Result<(), StateError> {
    let w = e.infiniband.as_ref();
    let c = now.and_then(|n| n.infiniband.as_ref());
    let new = now.is_none();
    let name = e.name.clone();
    let w_mode = w.and_then(|b| b.mode);
    let c_mode = c.and_then(|b| b.mode);
    if let (Some(mtu), Some(mode)) = (e.mtu, w_mode.or(c_mode)) {
        ipoib::check_mtu(mode.into(), mtu)
            .map_err(|err| StateError::invalid(format!("{p}.mtu"), err.to_string()))?;
    }
    // Settings of an interface this document creates have no value to go back to: their
    // undo repeats the step, and deleting the interface undoes them all.
    let back = |old: Option<InterfaceStep>, step: &InterfaceStep| match (new, old) {
        (false, Some(old)) => old,
        _ => step.clone(),
    };
    let mut mode_change = None;
    if let Some(mode) = w_mode.filter(|m| c_mode != Some(*m)) {
        let step = InterfaceStep::SetMode {
            name: name.clone(),
            mode,
        };
        let undo = back(
            c_mode.map(|m| InterfaceStep::SetMode {
                name: name.clone(),
                mode: m,
            }),
            &step,
        );
        mode_change = Some((mode, step, undo));
    }
    let mode_first = matches!(mode_change, Some((StateIpoibMode::Connected, ..)));
    let push_mode =
        |plan: &mut PartPlan<InterfaceStep>,
         change: Option<(StateIpoibMode, InterfaceStep, InterfaceStep)>| {
            if let Some((mode, step, undo)) = change {
                plan.push(
                    Phase::Ipoib,
                    format!("{path}.infiniband.mode"),
                    ChangeOp::Set,
                    (text(c_mode.map(mode_text)), mode_text(mode).to_string()),
                    step,
                    undo,
                );
            }
        };
    if mode_first {
        push_mode(plan, mode_change.take());
    }
    let c_mtu = now.and_then(|n| n.mtu);
    if let Some(mtu) = e.mtu.filter(|m| c_mtu != Some(*m)) {
        let step = InterfaceStep::SetMtu {
            name: name.clone(),
            mtu,
        };
        let undo = back(
            c_mtu.map(|m| InterfaceStep::SetMtu {
                name: name.clone(),
                mtu: m,
            }),
            &step,
        );
        plan.push(
            Phase::Ipoib,
            format!("{path}.mtu"),
            ChangeOp::Set,
            (text(c_mtu), mtu.to_string()),
            step,
            undo,
        );
    }
    push_mode(plan, mode_change);
    let c_umcast = c.and_then(|b| b.umcast);
    if let Some(umcast) = w.and_then(|b| b.umcast).filter(|u| c_umcast != Some(*u)) {
        let step = InterfaceStep::SetUmcast {
            name: name.clone(),
            umcast,
        };
        let undo = back(
            c_umcast.map(|u| InterfaceStep::SetUmcast {
                name: name.clone(),
                umcast: u,
            }),
            &step,
        );
        plan.push(
            Phase::Ipoib,
            format!("{path}.infiniband.umcast"),
            ChangeOp::Set,
            (text(c_umcast), umcast.to_string()),
            step,
            undo,
        );
    }
    Ok(())
}

fn keys_text(keys: &BTreeMap<String, String>) -> String {
    keys.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One family's IP settings as one `SetIp` of the keys that differ (NetworkManager checks a
/// family as a whole: a method and its addresses go together).
#[allow(clippy::too_many_arguments)]
fn ip_settings(
    fp: &str,
    path: &str,
    name: &str,
    family: Family,
    w: &IpFamily,
    c: Option<&IpFamily>,
    new: bool,
    plan: &mut PartPlan<InterfaceStep>,
) -> Result<(), StateError> {
    // A new interface starts with nmcli's defaults: DHCP, SLAAC.
    let defaults = IpFamily::from_nmcli(family, &BTreeMap::new());
    let c = c.unwrap_or(&defaults);
    let wanted = w.nmcli_over(family, Some(c));
    let have = c.nmcli_full(family);
    let mut merged = have.clone();
    merged.extend(wanted.clone());
    let gateway = super::nmcli::key(family, "gateway");
    let addresses = super::nmcli::key(family, "addresses");
    if !merged[&gateway].is_empty() && merged[&addresses].is_empty() {
        let n = family.name();
        return Err(StateError::contradiction(
            format!("{fp}.gateway"),
            format!("an {n} gateway needs an {n} address, and {name} would have none"),
        ));
    }
    let step_keys: BTreeMap<String, String> = wanted
        .into_iter()
        .filter(|(k, v)| have.get(k) != Some(v))
        .collect();
    if step_keys.is_empty() {
        return Ok(());
    }
    let undo_keys: BTreeMap<String, String> = step_keys
        .keys()
        .map(|k| (k.clone(), have.get(k).cloned().unwrap_or_default()))
        .collect();
    let step = InterfaceStep::SetIp {
        name: name.to_string(),
        keys: step_keys.clone(),
    };
    let undo = if new {
        step.clone()
    } else {
        InterfaceStep::SetIp {
            name: name.to_string(),
            keys: undo_keys.clone(),
        }
    };
    plan.push(
        Phase::Ip,
        format!("{path}.{}", family.setting()),
        ChangeOp::Set,
        (keys_text(&undo_keys), keys_text(&step_keys)),
        step,
        undo,
    );
    Ok(())
}
