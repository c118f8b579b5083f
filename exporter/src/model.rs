//! The daemon's published objects as this exporter keeps them: one GetManagedObjects, then
//! the signals that follow it applied in order (`follow`), and the per-scrape view read from
//! them ([`Model::view`]).

use std::collections::{BTreeMap, HashMap};

use zbus::zvariant::OwnedValue;

use rdma_manager_dbus::records;

pub const MANAGER_IFACE: &str = records::Manager::INTERFACE;
pub const DEVICE_IFACE: &str = records::Device::INTERFACE;
pub const PORT_IFACE: &str = records::Port::INTERFACE;
pub const IPOIB_IFACE: &str = records::Ipoib::INTERFACE;

/// One object's properties of one interface.
pub type Props = HashMap<String, OwnedValue>;

/// The objects as the model keeps them: by path, each interface's kept properties.
pub type Objects = HashMap<zbus::zvariant::OwnedObjectPath, HashMap<String, Props>>;

/// The properties a scrape shows, by interface: only these are kept (a large host's GID
/// tables, for one, would be most of the model and are not exported). The name as this
/// list spells it, so that the model holds no copy of it per object.
fn used(iface: &str, key: &str) -> Option<&'static str> {
    let keys: &[&'static str] = match iface {
        MANAGER_IFACE => &[
            "Version",
            "Simulated",
            "Startup",
            "StateStale",
            "SoftLinks",
            "ConfigErrors",
        ],
        DEVICE_IFACE => &[
            "Name",
            "BoardId",
            "FwVersion",
            "HcaType",
            "HwRev",
            "NodeGuid",
            "SysImageGuid",
            "NodeType",
            "Kind",
            "Protocol",
            "PciAddress",
            "ParentNetdev",
        ],
        PORT_IFACE => &[
            "Device",
            "DeviceName",
            "Number",
            "State",
            "PhysState",
            "RateGbps",
            "LinkLayer",
            "Netdev",
            "NetdevOwner",
            "PortGuid",
            "Lid",
            "SmLid",
            "Pkeys",
            "CounterSource",
            "StateChanges",
            "ActiveMtu",
            "MaxMtu",
            "GidTableLength",
            "PkeyTableLength",
            "PortType",
            "PortTypeControl",
            "PortTypeNext",
            "PortTypeRebootNeeded",
        ],
        IPOIB_IFACE => &[
            "Name",
            "Mode",
            "Mtu",
            "Pkey",
            "ParentName",
            "OperState",
            "Owner",
            "Persisted",
            "Port",
        ],
        _ => &[],
    };
    keys.iter().find(|k| **k == key).copied()
}

/// The interface's name as the model spells it; `None` for one it keeps nothing of.
fn iface_name(iface: &str) -> Option<&'static str> {
    [MANAGER_IFACE, DEVICE_IFACE, PORT_IFACE, IPOIB_IFACE]
        .into_iter()
        .find(|i| *i == iface)
}

/// `props` with only what [`used`] keeps; `None` for an interface nothing is kept of.
pub(crate) fn kept(iface: &str, mut props: Props) -> Option<Props> {
    props.retain(|k, _| used(iface, k).is_some());
    (!props.is_empty()).then_some(props)
}

/// One interface's kept properties: each name the [`used`] list's own, in a vector (a dozen
/// entries at most, looked up in order). A map of names copied per object, as decoded, was
/// most of the exporter's resident set on a large host.
#[derive(Debug, Default)]
pub struct Kept(Vec<(&'static str, OwnedValue)>);

impl Kept {
    /// What [`used`] keeps of `props` for `iface`.
    fn of(iface: &str, props: Props) -> Kept {
        let mut k = Kept(Vec::new());
        k.merge(iface, props);
        k.0.shrink_to_fit();
        k
    }

    fn merge(&mut self, iface: &str, props: Props) {
        for (name, value) in props {
            let Some(name) = used(iface, &name) else {
                continue;
            };
            match self.0.iter_mut().find(|(k, _)| *k == name) {
                Some(e) => e.1 = value,
                None => self.0.push((name, value)),
            }
        }
    }

    pub fn get(&self, key: &str) -> Option<&OwnedValue> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    fn remove(&mut self, key: &str) {
        self.0.retain(|(k, _)| *k != key);
    }
}

/// An object's interfaces, each with its kept properties.
type Interfaces = Vec<(&'static str, Kept)>;

fn interface<'a>(ifaces: &'a Interfaces, name: &str) -> Option<&'a Kept> {
    ifaces.iter().find(|(n, _)| *n == name).map(|(_, k)| k)
}

/// The interfaces of `decoded` the model keeps anything of.
fn interfaces(decoded: HashMap<String, Props>) -> Interfaces {
    let mut out: Interfaces = decoded
        .into_iter()
        .filter_map(|(name, props)| {
            let name = iface_name(&name)?;
            let k = Kept::of(name, props);
            (!k.0.is_empty()).then_some((name, k))
        })
        .collect();
    out.shrink_to_fit();
    out
}

/// Where the model stands with the daemon.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Link {
    /// Not read yet (the first GetManagedObjects is under way).
    #[default]
    Connecting,
    /// Read, and followed since.
    Current,
    /// The daemon is not on the bus, or could not be read (the reason).
    Unavailable(String),
}

/// The objects below the daemon's root, each with its interfaces' properties.
#[derive(Debug, Default)]
pub struct Model {
    objects: BTreeMap<String, Interfaces>,
    pub link: Link,
    /// The last view read out, until the objects or the link change: the model changes far
    /// less often than it is scraped, and reading the view out was a fifth of a scrape.
    view: Option<std::sync::Arc<View>>,
}

impl Model {
    /// Replaces everything with a fresh reading of the daemon's objects.
    pub fn replace(&mut self, objects: Objects) {
        self.view = None;
        self.objects = objects
            .into_iter()
            .map(|(path, ifaces)| (path.to_string(), interfaces(ifaces)))
            .collect();
        self.link = Link::Current;
    }

    /// The daemon left the bus: nothing is known until it is back.
    pub fn clear(&mut self, why: String) {
        self.view = None;
        self.objects.clear();
        self.link = Link::Unavailable(why);
    }

    /// A PropertiesChanged of `path`.
    pub fn apply_properties(
        &mut self,
        path: &str,
        iface: &str,
        changed: HashMap<String, OwnedValue>,
        invalidated: &[String],
    ) {
        self.view = None;
        let Some(ifaces) = self.objects.get_mut(path) else {
            return;
        };
        let Some(name) = iface_name(iface) else {
            return;
        };
        let props = match ifaces.iter().position(|(n, _)| *n == name) {
            Some(i) => &mut ifaces[i].1,
            None => {
                ifaces.push((name, Kept::default()));
                &mut ifaces.last_mut().expect("just pushed").1
            }
        };
        for k in invalidated {
            props.remove(k);
        }
        props.merge(name, changed);
    }

    /// An InterfacesAdded of `path`.
    pub fn add(&mut self, path: &str, added: HashMap<String, Props>) {
        self.view = None;
        let object = self.objects.entry(path.to_string()).or_default();
        for (name, kept) in interfaces(added) {
            object.retain(|(n, _)| *n != name);
            object.push((name, kept));
        }
    }

    /// An InterfacesRemoved of `path`.
    pub fn remove(&mut self, path: &str, interfaces: &[String]) {
        self.view = None;
        if let Some(ifaces) = self.objects.get_mut(path) {
            ifaces.retain(|(n, _)| !interfaces.iter().any(|i| i == n));
            if ifaces.is_empty() {
                self.objects.remove(path);
            }
        }
    }

    /// What a scrape shows, shared with the scrapes since the model last changed.
    pub fn shared_view(&mut self) -> std::sync::Arc<View> {
        match &self.view {
            Some(v) if v.link == self.link => v.clone(),
            _ => {
                let v = std::sync::Arc::new(self.view());
                self.view = Some(v.clone());
                v
            }
        }
    }

    /// What a scrape shows, read out of the properties.
    pub fn view(&self) -> View {
        let mut view = View {
            link: self.link.clone(),
            ..View::default()
        };
        let mut device_names: HashMap<&str, String> = HashMap::new();
        for (path, ifaces) in &self.objects {
            if let Some(p) = interface(ifaces, DEVICE_IFACE) {
                let d = DeviceView::from_props(path, p);
                device_names.insert(path.as_str(), d.name.clone());
                view.devices.push(d);
            }
        }
        for (path, ifaces) in &self.objects {
            if let Some(p) = interface(ifaces, MANAGER_IFACE) {
                view.root = Some(RootView::from_props(p));
            }
            if let Some(p) = interface(ifaces, PORT_IFACE) {
                let mut port = PortView::from_props(path, p);
                if port.device.is_empty() {
                    if let Some(n) = device_names.get(object(p, "Device").as_str()) {
                        port.device = n.clone();
                    }
                }
                view.ports.push(port);
            }
        }
        for ifaces in self.objects.values() {
            if let Some(p) = interface(ifaces, IPOIB_IFACE) {
                let port_path = object(p, "Port");
                let port = view.ports.iter().find(|x| x.path == port_path);
                view.ipoib.push(IpoibView {
                    name: text(p, "Name"),
                    mode: text(p, "Mode"),
                    mtu: u32_of(p, "Mtu"),
                    pkey: p
                        .get("Pkey")
                        .and_then(|v| u16::try_from(&**v).ok())
                        .unwrap_or(0),
                    parent: text(p, "ParentName"),
                    oper_state: text(p, "OperState"),
                    owner: triple(p, "Owner").0,
                    persisted: bool_of(p, "Persisted"),
                    device: port.map(|x| x.device.clone()).unwrap_or_default(),
                    port: port.map(|x| x.number),
                });
            }
        }
        view
    }
}

/// Everything one scrape shows but the counters, owned (read under the lock, rendered
/// without it).
#[derive(Debug, Clone, Default)]
pub struct View {
    pub link: Link,
    pub root: Option<RootView>,
    pub devices: Vec<DeviceView>,
    pub ports: Vec<PortView>,
    pub ipoib: Vec<IpoibView>,
}

#[derive(Debug, Clone, Default)]
pub struct RootView {
    pub version: String,
    pub simulated: bool,
    pub startup: bool,
    /// (stale, reason, since in µs since the epoch).
    pub stale: (bool, String, u64),
    /// Soft links the daemon re-creates: (name, type, netdev).
    pub soft_links: Vec<(String, String, String)>,
    pub config_errors: usize,
}

impl RootView {
    fn from_props(p: &Kept) -> RootView {
        RootView {
            version: text(p, "Version"),
            simulated: bool_of(p, "Simulated"),
            startup: bool_of(p, "Startup"),
            stale: p
                .get("StateStale")
                .and_then(|v| v.try_clone().ok())
                .and_then(|v| <(bool, String, u64)>::try_from(v).ok())
                .unwrap_or_default(),
            soft_links: p
                .get("SoftLinks")
                .and_then(|v| v.try_clone().ok())
                .and_then(|v| <Vec<(String, String, String)>>::try_from(v).ok())
                .unwrap_or_default(),
            config_errors: p
                .get("ConfigErrors")
                .and_then(|v| v.try_clone().ok())
                .and_then(|v| <HashMap<String, String>>::try_from(v).ok())
                .map_or(0, |m| m.len()),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct DeviceView {
    pub path: String,
    pub name: String,
    pub board_id: String,
    pub fw_version: String,
    pub hca_type: String,
    pub hw_rev: String,
    pub node_guid: String,
    pub sys_image_guid: String,
    pub node_type: String,
    pub kind: String,
    pub protocol: String,
    pub pci_address: String,
    pub parent_netdev: String,
}

impl DeviceView {
    fn from_props(path: &str, p: &Kept) -> DeviceView {
        DeviceView {
            path: path.to_string(),
            name: text(p, "Name"),
            board_id: text(p, "BoardId"),
            fw_version: text(p, "FwVersion"),
            hca_type: text(p, "HcaType"),
            hw_rev: text(p, "HwRev"),
            node_guid: text(p, "NodeGuid"),
            sys_image_guid: text(p, "SysImageGuid"),
            node_type: text(p, "NodeType"),
            kind: text(p, "Kind"),
            protocol: text(p, "Protocol"),
            pci_address: text(p, "PciAddress"),
            parent_netdev: text(p, "ParentNetdev"),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct PortView {
    pub path: String,
    pub device: String,
    pub number: u32,
    pub state: String,
    pub phys_state: String,
    pub rate_gbps: f64,
    pub link_layer: String,
    pub netdev: String,
    /// The kind of whoever configures the netdev's IP settings ("networkmanager" or "").
    pub netdev_owner: String,
    pub port_guid: String,
    pub lid: u32,
    pub sm_lid: u32,
    pub pkeys: Vec<(u32, u16)>,
    pub counter_source: String,
    /// The daemon's `StateChanges`: every transition since it started, counted as it
    /// happened, whoever watched (a flap between two scrapes included).
    pub state_changes: u64,
    /// IB MTUs in bytes, 0 when the daemon does not know them; table lengths.
    pub active_mtu: u32,
    pub max_mtu: u32,
    pub gid_table_length: u32,
    pub pkey_table_length: u32,
    /// `ib`, `eth` or `auto`; "" where the driver has no port type.
    pub port_type: String,
    /// `runtime` (mlx4), `firmware` (mlx5) or "".
    pub port_type_control: String,
    /// The firmware's type for the next boot ("" unless `firmware`).
    pub port_type_next: String,
    pub port_type_reboot_needed: bool,
}

impl PortView {
    fn from_props(path: &str, p: &Kept) -> PortView {
        PortView {
            path: path.to_string(),
            device: text(p, "DeviceName"),
            number: u32_of(p, "Number"),
            state: text(p, "State"),
            phys_state: text(p, "PhysState"),
            rate_gbps: p
                .get("RateGbps")
                .and_then(|v| f64::try_from(&**v).ok())
                .unwrap_or(0.0),
            link_layer: text(p, "LinkLayer"),
            netdev: text(p, "Netdev"),
            netdev_owner: triple(p, "NetdevOwner").0,
            port_guid: text(p, "PortGuid"),
            lid: u32_of(p, "Lid"),
            sm_lid: u32_of(p, "SmLid"),
            pkeys: p
                .get("Pkeys")
                .and_then(|v| v.try_clone().ok())
                .and_then(|v| <Vec<(u32, u16)>>::try_from(v).ok())
                .unwrap_or_default(),
            counter_source: text(p, "CounterSource"),
            state_changes: p
                .get("StateChanges")
                .and_then(|v| u64::try_from(&**v).ok())
                .unwrap_or(0),
            active_mtu: u32_of(p, "ActiveMtu"),
            max_mtu: u32_of(p, "MaxMtu"),
            gid_table_length: u32_of(p, "GidTableLength"),
            pkey_table_length: u32_of(p, "PkeyTableLength"),
            port_type: text(p, "PortType"),
            port_type_control: text(p, "PortTypeControl"),
            port_type_next: text(p, "PortTypeNext"),
            port_type_reboot_needed: bool_of(p, "PortTypeRebootNeeded"),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct IpoibView {
    pub name: String,
    pub mode: String,
    pub mtu: u32,
    pub pkey: u16,
    pub parent: String,
    pub oper_state: String,
    /// "networkmanager", "rdma-manager" or "".
    pub owner: String,
    pub persisted: bool,
    pub device: String,
    pub port: Option<u32>,
}

fn value_text(v: &OwnedValue) -> String {
    <&str>::try_from(&**v)
        .map(str::to_string)
        .unwrap_or_default()
}

fn text(p: &Kept, key: &str) -> String {
    p.get(key).map(value_text).unwrap_or_default()
}

fn object(p: &Kept, key: &str) -> String {
    p.get(key)
        .and_then(|v| zbus::zvariant::ObjectPath::try_from(&**v).ok())
        .map(|o| o.to_string())
        .unwrap_or_default()
}

fn u32_of(p: &Kept, key: &str) -> u32 {
    p.get(key)
        .and_then(|v| u32::try_from(&**v).ok())
        .unwrap_or(0)
}

fn bool_of(p: &Kept, key: &str) -> bool {
    p.get(key)
        .and_then(|v| bool::try_from(&**v).ok())
        .unwrap_or(false)
}

fn triple(p: &Kept, key: &str) -> (String, String, String) {
    p.get(key)
        .and_then(|v| v.try_clone().ok())
        .and_then(|v| <(String, String, String)>::try_from(v).ok())
        .unwrap_or_default()
}
