//! What each bus object shows: the engine's [`ObservedState`] turned into property values.
//! Pure functions; the objects in [`super::objects`] hold the result and the publisher
//! compares old and new to emit only what changed.
//!
//! A value the kernel did not give (a missing or malformed attribute) shows as the empty
//! string or zero, and the object's `Unreadable` property says which and why, so a client can
//! tell "LID 0" from "LID unknown".

use crate::config::{ConfigError, Desired};
use std::collections::HashMap;

use rdma_manager_dbus::text::cap_message;

use crate::engine::{DeviceState, IpoibState, ObservedState};
use crate::model::{DeviceKind, Field, PortSnapshot};

use super::object_paths::ObjectPaths;
use super::objects::{DeviceView, IpoibView, PortView, RootView};
pub use super::values::{counter_source_name, object_path};
use super::values::{managed_limits, unit_state};
use rdma_manager_dbus::types::{
    Gid, NameRule, Owner, PersistedChild, Pkey, RdmaModule, SoftLink, StateStale, SubnetManager,
};

/// Collects unreadable attributes while turning fields into plain values.
#[derive(Default)]
struct Unreadable(HashMap<String, String>);

impl Unreadable {
    fn take<T: Default + Clone>(&mut self, name: &str, f: &Field<T>) -> T {
        match f {
            Ok(v) => v.clone(),
            Err(e) => {
                self.0.insert(name.to_string(), e.to_string());
                T::default()
            }
        }
    }

    fn text<T>(&mut self, name: &str, f: &Field<T>, show: impl FnOnce(&T) -> String) -> String {
        match f {
            Ok(v) => show(v),
            Err(e) => {
                self.0.insert(name.to_string(), e.to_string());
                String::new()
            }
        }
    }
}

pub fn kind_name(k: DeviceKind) -> &'static str {
    match k {
        DeviceKind::Hardware => "hardware",
        DeviceKind::Rxe => "rxe",
        DeviceKind::Siw => "siw",
        DeviceKind::OtherVirtual => "virtual",
    }
}

pub fn device_view(d: &DeviceState, config: &Desired, paths: &ObjectPaths) -> DeviceView {
    let s = &d.snap;
    let mut u = Unreadable::default();
    DeviceView {
        index: d.index,
        name: s.name.clone(),
        kind: kind_name(s.kind).to_string(),
        node_type: u.text("NodeType", &s.node_type, |t| t.sysfs_name().to_string()),
        protocol: d
            .nl
            .as_ref()
            .and_then(|n| n.protocol.clone())
            .unwrap_or_default(),
        node_guid: u.text("NodeGuid", &s.node_guid, |g| g.to_string()),
        sys_image_guid: u.text("SysImageGuid", &s.sys_image_guid, |g| g.to_string()),
        fw_version: u.take("FwVersion", &s.fw_ver),
        hca_type: u.take("HcaType", &s.hca_type),
        hw_rev: u.take("HwRev", &s.hw_rev),
        board_id: u.take("BoardId", &s.board_id),
        node_desc: u.take("NodeDesc", &s.node_desc),
        pci_address: s.pci_address.clone().unwrap_or_default(),
        parent_netdev: s.parent_netdev.clone().unwrap_or_default(),
        netdevs: s.netdevs.clone(),
        ports: s
            .ports
            .iter()
            .map(|p| paths.port(d.index, p.number))
            .collect(),
        unreadable: u.0,
        vf_guids: super::vf_guid_view::vf_guids(d, config),
    }
}

pub fn port_view(
    d: &DeviceState,
    p: &PortSnapshot,
    config: &Desired,
    nm_profiles: Option<&[crate::nm::client::ProfileSummary]>,
    paths: &ObjectPaths,
    state_changes: u64,
    port_types: Option<&crate::kernel::port_type::PortTypes>,
) -> PortView {
    let port_type = port_types.and_then(|t| Some((t.control, t.port(p.number)?)));
    let mut u = Unreadable::default();
    let source = d.sources.get(&p.number);
    let roce = d.roce.get(&p.number);
    // Only RoCE ports have a reading; a failed one is named in Unreadable.
    let (roce_mode, roce_tos) = match roce {
        Some(r) => (
            match &r.mode {
                Ok(m) => m.short().to_string(),
                Err(e) => {
                    u.0.insert("RoceMode".into(), e.clone());
                    String::new()
                }
            },
            match &r.tos {
                Ok(t) => *t,
                Err(e) => {
                    u.0.insert("RoceTos".into(), e.clone());
                    0
                }
            },
        ),
        None => (String::new(), 0),
    };
    let roce_modes = match roce {
        Some(_) => crate::model::roce::supported_modes(p)
            .into_iter()
            .map(|m| m.short().to_string())
            .collect(),
        None => Vec::new(),
    };
    let roce_persisted = match (&d.snap.node_guid, &config.roce) {
        (Ok(g), Ok(s)) => s.entry(*g, p.number).is_some_and(|e| !e.is_empty()),
        _ => false,
    };
    PortView {
        device: paths.device(d.index),
        device_name: d.snap.name.clone(),
        number: p.number,
        state: u.text("State", &p.state, |s| s.sysfs_name().to_string()),
        phys_state: u.text("PhysState", &p.phys_state, |s| s.sysfs_name().to_string()),
        link_layer: u.text("LinkLayer", &p.link_layer, |l| l.as_str().to_string()),
        rate: u.text("Rate", &p.rate, |r| r.to_sysfs()),
        rate_gbps: p
            .rate
            .as_ref()
            .map(|r| f64::from(r.deci_gbps) / 10.0)
            .unwrap_or(0.0),
        active_width: p
            .rate
            .as_ref()
            .map(|r| format!("{}X", r.width))
            .unwrap_or_default(),
        active_speed: p
            .rate
            .as_ref()
            .ok()
            .and_then(|r| r.speed.clone())
            .unwrap_or_default(),
        active_mtu: u.take("ActiveMtu", &p.active_mtu),
        max_mtu: u.take("MaxMtu", &p.max_mtu),
        gid_table_length: u.take("GidTableLength", &p.gid_table_len),
        pkey_table_length: u.take("PkeyTableLength", &p.pkey_table_len),
        lid: u.take("Lid", &p.lid),
        sm_lid: u.take("SmLid", &p.sm_lid),
        lmc: u.take("Lmc", &p.lmc),
        sm_sl: u.take("SmSl", &p.sm_sl),
        capability_mask: u.take("CapabilityMask", &p.cap_mask),
        port_guid: p.port_guid().map(|g| g.to_string()).unwrap_or_default(),
        gids: p
            .gids
            .iter()
            .map(|g| Gid {
                index: g.index,
                gid: crate::model::device::gid_sysfs_form(&g.gid),
                gid_type: g
                    .gid_type
                    .as_ref()
                    .map(|t| t.as_str().to_string())
                    .unwrap_or_default(),
                netdev: g.ndev.clone().unwrap_or_default(),
            })
            .collect(),
        pkeys: p
            .pkeys
            .iter()
            .map(|k| Pkey {
                index: k.index,
                pkey: k.pkey,
            })
            .collect(),
        netdev: source.and_then(|s| s.netdev.clone()).unwrap_or_default(),
        netdev_owner: source
            .and_then(|s| s.netdev.as_deref())
            .and_then(|n| {
                nm_profiles?
                    .iter()
                    .find(|p| p.interface.as_deref() == Some(n))
            })
            .map(|p| Owner::network_manager(&p.id, &p.uuid))
            .unwrap_or_default(),
        counter_source: source
            .map(|s| counter_source_name(&s.counters))
            .unwrap_or("none")
            .to_string(),
        unreadable: u.0,
        roce_mode,
        roce_tos,
        roce_modes,
        roce_persisted,
        state_changes,
        port_type: port_type
            .map(|(_, r)| r.configured.as_str().to_string())
            .unwrap_or_default(),
        port_type_control: port_type
            .map(|(c, _)| c.as_str().to_string())
            .unwrap_or_default(),
        port_type_next: port_type
            .and_then(|(_, r)| r.next_boot)
            .map(|t| t.as_str().to_string())
            .unwrap_or_default(),
        port_type_reboot_needed: port_type.is_some_and(|(_, r)| r.reboot_needed()),
    }
}

/// How the IPoIB interfaces refer to each other by name, indexed once for all their views
/// (looking each up in the whole list made a publish quadratic in their number).
pub struct IpoibLinks<'a> {
    /// Name to ifindex; the lowest ifindex when a name is (briefly) held twice.
    by_name: HashMap<&'a str, u32>,
    /// Parent name to the children's ifindexes, in ifindex order.
    children: HashMap<&'a str, Vec<u32>>,
    /// What ipoib.toml remembers (nothing when the file is unusable).
    persisted: Option<&'a crate::config::IpoibConfig>,
    /// NetworkManager's profiles, when it runs.
    nm_profiles: Option<&'a [crate::nm::client::ProfileSummary]>,
    /// The ports IPoIB runs on, by (device index, port number): what tells why an
    /// interface is down.
    ports: HashMap<(u32, u32), PortFacts<'a>>,
    /// Interface name to whether it has carrier (a child's parent without carrier is why
    /// the child has none).
    carrier: HashMap<&'a str, bool>,
}

/// What an IPoIB interface's port says about it: its label, state and P_Key table.
struct PortFacts<'a> {
    device: &'a str,
    state: Option<crate::model::PortState>,
    pkeys: Vec<u16>,
}

/// Why an IPoIB interface does not run, in words ("" when it runs): not up, its parent down,
/// its port not active, its P_Key not in the port's table (the subnet manager has not given
/// the port that partition), or the broadcast group not joined (yet).
fn ipoib_down_reason(
    links: &IpoibLinks<'_>,
    i: &IpoibState,
    carrier: bool,
    pkey_in_table: bool,
) -> String {
    use crate::model::PortState;
    let n = &i.snap;
    let oper = n.operstate.as_deref().unwrap_or("");
    if oper == "up" && carrier {
        return String::new();
    }
    let parent = n.ipoib.as_ref().and_then(|a| a.parent.as_deref());
    let parent_down = parent
        .and_then(|p| links.carrier.get(p))
        .is_some_and(|c| !c);
    if n.ipoib.as_ref().is_some_and(|a| a.admin_up == Ok(false)) {
        return format!("the interface is not set up (ip link set {} up)", n.name);
    }
    if let (Some(p), true) = (parent, parent_down) {
        return format!("its parent {p} is down");
    }
    let port = i.port.and_then(|k| links.ports.get(&k).map(|f| (k, f)));
    if let Some(((_, number), f)) = port {
        match f.state {
            Some(PortState::Active) | None => {}
            Some(PortState::Down) => {
                return format!(
                    "port {}/{number} is down (no link: cable, switch)",
                    f.device
                )
            }
            Some(PortState::Init | PortState::Armed) => {
                return format!(
                    "port {}/{number} is {} (no subnet manager has made it active)",
                    f.device,
                    f.state.map(|s| s.sysfs_name()).unwrap_or_default()
                )
            }
            Some(other) => return format!("port {}/{number} is {}", f.device, other.sysfs_name()),
        }
        if !pkey_in_table {
            let pkey = n
                .ipoib
                .as_ref()
                .and_then(|a| a.pkey.clone().ok())
                .unwrap_or(0);
            return format!(
                "P_Key 0x{pkey:04x} is not in the P_Key table of port {}/{number}: the subnet \
                 manager has not given the port this partition",
                f.device
            );
        }
    }
    if !carrier {
        return "no carrier: the interface has not joined its partition's broadcast group \
                (multicast join pending or refused)"
            .into();
    }
    format!("operational state {oper}")
}

impl<'a> IpoibLinks<'a> {
    pub fn new(st: &'a ObservedState) -> Self {
        let mut by_name = HashMap::new();
        let mut children: HashMap<&str, Vec<u32>> = HashMap::new();
        for i in st.ipoib.values() {
            by_name.entry(i.snap.name.as_str()).or_insert(i.ifindex);
            if let Some(parent) = i.snap.ipoib.as_ref().and_then(|a| a.parent.as_deref()) {
                children.entry(parent).or_default().push(i.ifindex);
            }
        }
        IpoibLinks {
            by_name,
            children,
            persisted: st.config.ipoib.as_ref().ok(),
            nm_profiles: st.nm_profiles.as_deref(),
            carrier: st
                .ipoib
                .values()
                .map(|i| {
                    let c = i.snap.ipoib.as_ref().is_some_and(|a| a.carrier == Ok(true));
                    (i.snap.name.as_str(), c)
                })
                .collect(),
            ports: st
                .ipoib
                .values()
                .filter_map(|i| i.port)
                .filter_map(|(d, p)| {
                    let dev = st.devices.get(&d)?;
                    let port = dev.snap.ports.iter().find(|x| x.number == p)?;
                    Some((
                        (d, p),
                        PortFacts {
                            device: dev.snap.name.as_str(),
                            state: port.state.clone().ok(),
                            pkeys: port.pkeys.iter().map(|k| k.pkey).collect(),
                        },
                    ))
                })
                .collect(),
        }
    }
}

pub fn ipoib_view(links: &IpoibLinks<'_>, i: &IpoibState, paths: &ObjectPaths) -> IpoibView {
    let n = &i.snap;
    let mut u = Unreadable::default();
    let attrs = n.ipoib.as_ref();
    let pkey = match attrs.map(|a| &a.pkey) {
        Some(f) => u.take("Pkey", f),
        None => 0,
    };
    let address = n.address.clone().ok();
    let children = links
        .children
        .get(n.name.as_str())
        .map(|c| c.iter().map(|i| paths.ipoib(*i)).collect())
        .unwrap_or_default();
    let parent_name = attrs.and_then(|a| a.parent.clone()).unwrap_or_default();
    let remembered = remembered_ipoib(links, i);
    // Unreadable while the interface is down: no carrier, not an attribute to report.
    let carrier = attrs.is_some_and(|a| a.carrier == Ok(true));
    let pkey_in_port_table = match i.port.and_then(|k| links.ports.get(&k)) {
        Some(f) if pkey != 0 => f.pkeys.iter().any(|k| *k & 0x7fff == pkey & 0x7fff),
        // The port or the P_Key unknown: nothing to warn of.
        _ => true,
    };
    let down_reason = ipoib_down_reason(links, i, carrier, pkey_in_port_table);
    IpoibView {
        name: n.name.clone(),
        ifindex: i.ifindex,
        parent: links
            .by_name
            .get(parent_name.as_str())
            .map(|p| paths.ipoib(*p))
            .unwrap_or_default(),
        parent_name,
        device: i.port.map(|(d, _)| paths.device(d)).unwrap_or_default(),
        port: i.port.map(|(d, p)| paths.port(d, p)).unwrap_or_default(),
        pkey,
        mode: match attrs.map(|a| &a.mode) {
            Some(m) => u.text("Mode", m, |m| m.as_str().to_string()),
            None => String::new(),
        },
        umcast: match attrs.map(|a| &a.umcast) {
            Some(f) => u.take("Umcast", f),
            None => false,
        },
        mtu: u.take("Mtu", &n.mtu),
        hw_address: u.text("HwAddress", &n.address, |a| a.to_sysfs()),
        port_guid: address
            .as_ref()
            .and_then(|a| a.ipoib_port_guid())
            .map(|g| g.to_string())
            .unwrap_or_default(),
        oper_state: u.take("OperState", &n.operstate),
        addresses: i.addresses.iter().map(|a| a.to_string()).collect(),
        connected_mode_supported: address
            .as_ref()
            .and_then(|a| a.ipoib_supports_connected())
            .unwrap_or(false),
        children,
        unreadable: u.0,
        owner: owner(links, &n.name, remembered.0),
        persisted: remembered.0,
        persisted_settings: remembered.1,
        persisted_children: remembered.2,
        carrier,
        pkey_in_port_table,
        down_reason,
    }
}

/// Who configures an interface: a NetworkManager profile when one does, else rdma-manager
/// when ipoib.toml remembers it, else nobody.
fn owner(links: &IpoibLinks<'_>, name: &str, persisted: bool) -> Owner {
    let profile = links
        .nm_profiles
        .and_then(|ps| ps.iter().find(|p| p.interface.as_deref() == Some(name)));
    match profile {
        Some(p) => Owner::network_manager(&p.id, &p.uuid),
        None if persisted => Owner::rdma_manager(),
        None => Default::default(),
    }
}

/// What ipoib.toml remembers for an interface: whether it is remembered, its settings, and
/// for a port's own interface the children to re-create. Entries are found by port GUID and,
/// for a child, its P_Key.
fn remembered_ipoib(
    links: &IpoibLinks<'_>,
    i: &IpoibState,
) -> (bool, HashMap<String, String>, Vec<PersistedChild>) {
    let guid = i
        .snap
        .address
        .as_ref()
        .ok()
        .and_then(|a| a.ipoib_port_guid());
    let Some(port) = guid.and_then(|g| links.persisted.and_then(|p| p.port(g))) else {
        return Default::default();
    };
    let attrs = i.snap.ipoib.as_ref();
    if attrs.and_then(|a| a.parent.as_ref()).is_none() {
        let settings = port.settings();
        let children = port
            .children
            .iter()
            .map(|c| PersistedChild {
                pkey: c.pkey,
                name: c.name.clone(),
            })
            .collect();
        return (
            !settings.is_empty(),
            settings.describe().into_iter().collect(),
            children,
        );
    }
    match attrs
        .and_then(|a| a.pkey.clone().ok())
        .and_then(|p| port.child(p))
    {
        Some(c) => (
            true,
            c.settings().describe().into_iter().collect(),
            Vec::new(),
        ),
        None => Default::default(),
    }
}

/// The root's view of `st`; `startup` while the daemon is still starting (see `Startup`).
pub fn root_view(
    st: &ObservedState,
    simulated: bool,
    startup: bool,
    tick_us: u64,
    paths: &ObjectPaths,
) -> RootView {
    RootView {
        version: env!("CARGO_PKG_VERSION").to_string(),
        simulated,
        startup,
        devices: st.devices.keys().map(|i| paths.device(*i)).collect(),
        ipoib_interfaces: st.ipoib.keys().map(|i| paths.ipoib(*i)).collect(),
        sample_interval_us: tick_us,
        history_length: crate::engine::history::FINE_TICKS as u32,
        coarse_history_length: crate::engine::history::COARSE_LEN as u32,
        coarse_interval_us: tick_us.saturating_mul(crate::engine::history::COARSE_TICKS),
        soft_links: st
            .config
            .soft_links
            .as_ref()
            .map(|s| {
                s.links
                    .iter()
                    .map(|l| SoftLink {
                        name: l.name.clone(),
                        kind: l.kind.as_str().to_string(),
                        netdev: l.netdev.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        config_errors: st
            .config
            .errors()
            .into_iter()
            .map(|e| match e {
                ConfigError::Malformed { path, .. }
                | ConfigError::Unreadable { path, .. }
                | ConfigError::Unwritable { path, .. } => (path.clone(), e.to_string()),
            })
            .chain(st.naming.errors.clone())
            // Host setup's files are not the daemon's own, but a problem with one is a
            // problem with a file the daemon reads: one property tells them all.
            .chain(st.host_setup.file_problems.clone())
            // The reasons quote the files; each value is capped so that the property stays
            // far below the bus's message limit whatever a file holds.
            .map(|(path, why)| (cap_message(&path), cap_message(&why)))
            .collect(),
        ipoib_names: st
            .naming
            .ipoib_rules
            .iter()
            .map(|r| NameRule {
                guid: r.port_guid.to_string(),
                name: cap_message(&r.name),
                managed: r.managed,
                line: r.line,
            })
            .collect(),
        rdma_naming_policy: cap_message(&st.naming.policy),
        rdma_naming_policy_source: cap_message(&st.naming.policy_source),
        rdma_fixed_names: st
            .naming
            .fixed
            .iter()
            .map(|(g, n, m, l)| NameRule {
                guid: g.to_string(),
                name: cap_message(n),
                managed: *m,
                line: *l,
            })
            .collect(),
        state_stale: st
            .stale
            .as_ref()
            .map(|s| StateStale {
                stale: true,
                reason: s.reason.clone(),
                since_us: s.since_unix_us,
            })
            .unwrap_or_default(),
        state_directory: super::state::directory_rows(&st.state_directory),
    }
}

/// The verdict on a port's subnet manager: an SM LID means one answered; INIT with none means
/// the port waits for one that never came (the guide's sign that no opensm runs).
pub fn sm_verdict(state: Option<crate::model::PortState>, sm_lid: u32) -> &'static str {
    match (state, sm_lid) {
        (_, l) if l != 0 => "seen",
        (Some(crate::model::PortState::Init), 0) => "stuck-init",
        _ => "none",
    }
}

/// A map of texts from files, each key and value capped.
fn cap_map<'a>(m: impl IntoIterator<Item = (&'a String, &'a String)>) -> HashMap<String, String> {
    m.into_iter()
        .map(|(k, v)| (cap_message(k), cap_message(v)))
        .collect()
}

/// The Host object: host setup as last read, and per InfiniBand port what it says about the
/// subnet manager (recomputed from the ports at every publish, so it follows them).
pub fn host_view(st: &ObservedState, paths: &ObjectPaths) -> super::objects::HostSetupView {
    let h = &st.host_setup;
    let mut sms = Vec::new();
    for d in st.devices.values() {
        for p in &d.snap.ports {
            if p.link_layer != Ok(crate::model::LinkLayer::InfiniBand) {
                continue;
            }
            let state = p.state.as_ref().ok().copied();
            let sm_lid = p.sm_lid.as_ref().ok().copied().unwrap_or(0);
            sms.push(SubnetManager {
                port: paths.port(d.index, p.number),
                name: format!("{}/{}", d.name(), p.number),
                state: state
                    .map(|s| s.sysfs_name().to_string())
                    .unwrap_or_default(),
                sm_lid,
                verdict: sm_verdict(state, sm_lid).to_string(),
            });
        }
    }
    super::objects::HostSetupView {
        // Every text below comes from files that users edit: capped (see "Sizes" in
        // docs/RELIABILITY.md).
        modules: h
            .modules
            .iter()
            .map(|m| RdmaModule {
                set: cap_message(&m.set),
                module: cap_message(&m.module),
                description: cap_message(&m.description),
                enabled: m.enabled,
                loaded: m.loaded,
                line: m.line,
            })
            .collect(),
        modules_unit: h.modules_unit.clone(),
        memlock_soft: cap_message(&h.memlock_soft),
        memlock_hard: cap_message(&h.memlock_hard),
        memlock_origin: cap_map(&h.memlock_origin),
        memlock_managed: managed_limits(&h.memlock_managed),
        memlock_notes: h.memlock_notes.iter().map(|n| cap_message(n)).collect(),
        nfs_rdma: h.nfs_rdma,
        nfs_rdma_port: h.nfs_rdma_port,
        nfs_rdma_origin: cap_map(&h.nfs_rdma_origin),
        nfs_notes: h.nfs_notes.iter().map(|n| cap_message(n)).collect(),
        nfs_server: unit_state(&h.nfs_server),
        firewalld: h.firewalld,
        opensm: unit_state(&h.opensm),
        subnet_managers: sms,
    }
}

#[cfg(all(test, feature = "sim"))]
mod ipoib_tests {
    use crate::kernel::sim::{fixtures, SimHost};
    use crate::kernel::{Host, NetdevChange, NewIpoibChild};

    /// The Ipoib object of `name` in the state document, as JSON.
    fn ipoib_object(doc: &serde_json::Value, name: &str) -> serde_json::Value {
        let objects = doc["objects"].as_object().expect("objects");
        objects
            .values()
            .map(|o| &o["org.rdmamanager.RdmaManager1.Ipoib"])
            .find(|i| i["Name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no Ipoib object {name}"))
    }

    /// A child whose P_Key the port's table lacks never joins its broadcast group: the
    /// object says its partition is not in the table and why it is down; a child of a
    /// partition the table has runs with carrier.
    #[tokio::test]
    async fn a_child_outside_the_port_table_says_why_it_is_down() {
        let sim = SimHost::new(fixtures::demo_host()).expect("demo host");
        for (pkey, up) in [(0x8005u16, true), (0x8004, false)] {
            let name = format!("ibp59s0f0.{pkey:04x}");
            sim.create_ipoib_child(&NewIpoibChild {
                parent: "ibp59s0f0".into(),
                name: name.clone(),
                pkey,
                mode: None,
                umcast: None,
            })
            .await
            .expect("ip link add");
            let change = NetdevChange {
                up: Some(up),
                ..NetdevChange::default()
            };
            sim.change_netdev(&name, &change)
                .await
                .expect("ip link set up");
        }
        let (state, _) = crate::engine::read_host(&sim, &crate::system::unreachable::Unreachable)
            .await
            .expect("read the host");
        let doc: serde_json::Value = serde_json::from_str(
            &super::super::document::document(&state, true, 1).to_pretty_string(),
        )
        .expect("JSON");
        let outside = ipoib_object(&doc, "ibp59s0f0.8005");
        assert_eq!(outside["PkeyInPortTable"], false, "{outside}");
        assert_eq!(outside["Carrier"], false, "{outside}");
        let why = outside["DownReason"].as_str().unwrap_or_default();
        assert!(
            why.contains("P_Key 0x8005 is not in the P_Key table of port mlx5_0/1"),
            "{why}"
        );
        let inside = ipoib_object(&doc, "ibp59s0f0.8002");
        assert_eq!(inside["PkeyInPortTable"], true, "{inside}");
        assert_eq!(inside["Carrier"], true, "{inside}");
        assert_eq!(inside["DownReason"], "", "{inside}");
        // Not set up: said first, whatever else is wrong.
        let down = ipoib_object(&doc, "ibp59s0f0.8004");
        let why = down["DownReason"].as_str().unwrap_or_default();
        assert!(
            why.contains("not set up (ip link set ibp59s0f0.8004 up)"),
            "{why}"
        );
    }
}
