//! `org.rdmamanager.RdmaManager1.Ipoib`: an IPoIB interface's properties, what they show of
//! the engine's state, and its methods.

use std::collections::HashMap;
use std::sync::Arc;

use rdma_manager_dbus::types::{Owner, PersistedChild};
use rdma_manager_dbus::{Action, Error};
use zbus::message::Header;
use zbus::zvariant::{OwnedObjectPath, Value};

use crate::dbus::object_paths::ObjectPaths;
use crate::dbus::Context;
use crate::engine::{IpoibState, ObservedState};

use super::{read, Cell, Unreadable};

bus_object! {
    /// An IPoIB interface's properties.
    view IpoibView;
    /// `org.rdmamanager.RdmaManager1.Ipoib` at `Ipoib/<ifindex>`.
    object IpoibObject;
    interface "org.rdmamanager.RdmaManager1.Ipoib";
    properties {
        /// Interface name (ib0, ib0.8001, ...).
        name as "Name": String,
        /// Interface index; the object path ends with it.
        ifindex as "Ifindex": u32,
        /// The parent interface object of a P_Key child; "/" for a port's own interface.
        parent as "Parent": OwnedObjectPath,
        /// Name of the parent interface of a P_Key child; empty otherwise.
        parent_name as "ParentName": String,
        /// The device object this belongs to; "/" when not known.
        device as "Device": OwnedObjectPath,
        /// The RDMA port object the interface runs on; "/" when not known.
        port as "Port": OwnedObjectPath,
        /// P_Key with the full-membership bit (0x8000) as the kernel stores it; 0xffff is the default partition.
        pkey as "Pkey": u16,
        /// datagram or connected.
        mode as "Mode": String,
        /// Whether user-space multicast is allowed (umcast).
        umcast as "Umcast": bool,
        /// MTU in bytes.
        mtu as "Mtu": u32,
        /// 20-byte IPoIB hardware address (flags, QPN, GID).
        hw_address as "HwAddress": String,
        /// Port GUID (the low 64 bits of GID 0), as ibstat prints it.
        port_guid as "PortGuid": String,
        /// Operational state: up, down, lowerlayerdown, unknown ...
        oper_state as "OperState": String,
        /// Its IPv4 and IPv6 addresses as ADDRESS/PREFIX, from the kernel (what ip address lists), whichever manager (or nobody) configured them; kept current by the kernel's address events.
        addresses as "Addresses": Vec<String>,
        /// Whether connected mode is possible: false on enhanced IPoIB (ConnectX-4 and later with ipoib_enhanced).
        connected_mode_supported as "ConnectedModeSupported": bool,
        /// P_Key child interface objects of this interface.
        children as "Children": Vec<OwnedObjectPath>,
        /// Attributes the kernel did not give, with the reason (missing, read failed: EINVAL, malformed ...); their properties show empty or zero.
        unreadable as "Unreadable": HashMap<String, String>,
        /// Who configures this interface: ("networkmanager", profile id, profile UUID) when a NetworkManager profile does (the daemon then refuses to change it and does not re-create it), ("rdma-manager", "", "") when ipoib.toml remembers it, ("", "", "") when nobody does.
        owner as "Owner": Owner,
        /// Whether the daemon remembers this interface in ipoib.toml: a P_Key child it re-creates, or a port's interface with settings it re-applies.
        persisted as "Persisted": bool,
        /// The remembered settings re-applied when the interface appears (mode, mtu, umcast), as text.
        persisted_settings as "PersistedSettings": HashMap<String, String>,
        /// On a port's own interface: the remembered P_Key children (P_Key with the full-membership bit, name), re-created when it appears; empty on a child.
        persisted_children as "PersistedChildren": Vec<PersistedChild>,
        /// Whether the interface has carrier: IPoIB turns it on once it has joined its partition's broadcast multicast group, so this is also that join's state (false while the interface is down).
        carrier as "Carrier": bool,
        /// Whether the interface's partition (its P_Key, either membership) is in its port's P_Key table; false: the subnet manager has not given the port this partition and the interface cannot join it. True when the port is not known.
        pkey_in_port_table as "PkeyInPortTable": bool,
        /// Why the interface does not run, in words (not set up, its parent or port down, its P_Key not in the port's table, the broadcast group not joined); empty when it is up with carrier.
        down_reason as "DownReason": String,
    }
    methods {
        /// Creates a P_Key child of this port interface, as `ip link add link PARENT name NAME
        /// type ipoib pkey PKEY` does, applies the settings and remembers it; returns its object.
        /// An empty name gives the kernel's `PARENT.xxxx` (the P_Key as given, the parent cut to
        /// 10 characters if needed). Settings: mode (s), mtu (u), umcast (b). The kernel sets
        /// the full-membership bit: P_Key 0x0002 joins the partition as 0x8002. Where
        /// NetworkManager manages this interface, the child is a NetworkManager profile
        /// (named PARENT.xxxx, IPv4 and IPv6 disabled until given IP settings) that
        /// NetworkManager creates and keeps, pending confirmation (Network.PendingChanges);
        /// returns its object once it exists, or "/" when NetworkManager has not made it
        /// within 5 s.
        async fn create_child(
            &self,
            pkey: u16,
            name: &str,
            settings: HashMap<String, zbus::zvariant::OwnedValue>,
            #[zbus(header)] header: Header<'_>,
        ) -> Result<OwnedObjectPath, Error> {
            let arguments = crate::audit_args![pkey, name, settings];
            self.ctx
                .change(&header, Action::ManageIpoib, arguments, async {
                let settings = crate::dbus::ipoib::child_settings(&settings)?;
                let parent = read(&self.view).ifindex;
                let created = self
                    .ctx
                    .engine().await?
                    .ipoib_create_child(parent, u32::from(pkey), name, settings)
                    .await
                    .map_err(crate::dbus::errors::op_error)?;
                crate::dbus::ipoib::child_created(&self.ctx, created).await
                })
                .await
        }

        /// Deletes this P_Key child, as `ip link delete` does, and forgets it. A port's own
        /// interface cannot be deleted. Of a child NetworkManager owns, its profile is deleted
        /// (NetworkManager removes the child), pending confirmation (Network.PendingChanges).
        op delete() -> () as ManageIpoib
            = |e, v| e.ipoib_delete(v.ifindex).await, then crate::dbus::ipoib::pending_if_any;

        /// Sets the transport mode, datagram or connected, and remembers it. The kernel
        /// resizes the MTU with the mode (connected: 65520). Of an interface NetworkManager
        /// owns, in its profile, pending confirmation (Network.PendingChanges).
        op set_mode(mode: &str) -> () as ManageIpoib
            = |e, v| e.ipoib_set_mode(v.ifindex, mode).await, then crate::dbus::ipoib::pending_if_any;

        /// Sets the MTU and remembers it: datagram mode allows 72 to the port's InfiniBand MTU
        /// minus 4 (at most 4092), connected mode 68 to 65520. Of an interface NetworkManager
        /// owns, in its profile, pending confirmation (Network.PendingChanges).
        op set_mtu(mtu: u32) -> () as ManageIpoib
            = |e, v| e.ipoib_set_mtu(v.ifindex, mtu).await, then crate::dbus::ipoib::pending_if_any;

        /// Allows (true) or stops (false) user-space multicast (umcast) and remembers it.
        op set_umcast(umcast: bool) -> () as ManageIpoib
            = |e, v| e.ipoib_set_umcast(v.ifindex, umcast).await;
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

#[cfg(all(test, feature = "sim"))]
mod tests {
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
            &crate::dbus::document::document(&state, true, 1).to_pretty_string(),
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
