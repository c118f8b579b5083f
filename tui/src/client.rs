//! The D-Bus side: connects to rdma-managerd, reads its objects once (GetManagedObjects and
//! each port's throughput history), then forwards the service's signals as [`Update`]s:
//! PropertiesChanged, InterfacesAdded/Removed, ThroughputSampled, and the bus name's owner
//! changing (a restarted daemon is read again). Nothing is re-read on a timer. Changes are
//! [`Call`]s made through the `rdma-manager-dbus` proxies; each answer comes back as an
//! [`Update::CallDone`].

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use futures::StreamExt;
use rdma_manager_dbus::proxies::{
    DeviceProxy, HostSetupProxy, IpoibProxy, ManagerProxy, NetworkProxy, PendingChangeProxy,
    PortProxy,
};
pub use rdma_manager_dbus::types::{HostStep, LinkResponder, LinkTestResult, NamePreview};
use rdma_manager_dbus::{BUS_NAME, ROOT_PATH};
use rdma_manager_model::qos::QosProfile;
use rdma_manager_model::state::State;
use tokio::sync::mpsc::UnboundedSender;
use zbus::fdo::{DBusProxy, ObjectManagerProxy};
use zbus::proxy::CacheProperties;
use zbus::zvariant::{OwnedValue, Value};
use zbus::{Connection, MatchRule, MessageStream};

use crate::model::{Interfaces, Model, PORT_IFACE};

/// Which bus the service is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BusChoice {
    System,
    Session,
    Address(String),
}

/// Something that changed, for the UI loop to apply to its [`Model`].
#[derive(Debug)]
pub enum Update {
    /// The whole state, read at start or after the service (re)appeared.
    Loaded(Box<Model>),
    /// The service left the bus.
    ServiceGone,
    Properties {
        path: String,
        iface: String,
        changed: HashMap<String, OwnedValue>,
    },
    Added {
        path: String,
        interfaces: Interfaces,
    },
    Removed {
        path: String,
        ifaces: Vec<String>,
    },
    Samples {
        time_us: u64,
        samples: Vec<(String, f64, f64, f64, f64, u8)>,
    },
    History {
        port: String,
        samples: Vec<rdma_manager_dbus::proxies::HistorySample>,
    },
    HistoryCoarse {
        port: String,
        samples: Vec<rdma_manager_dbus::proxies::HistorySample>,
    },
    Counters {
        port: String,
        source: String,
        saturated: bool,
        values: BTreeMap<String, u64>,
    },
    /// A [`Call`] finished.
    CallDone {
        id: u64,
        call: Call,
        result: Result<CallOutput, CallError>,
    },
    /// `Network.ChangeEnded`: a pending change was confirmed, rolled back, or timed out.
    ChangeEnded {
        change: String,
        outcome: String,
    },
    /// `Port.LinkTestProgress`: a link test from `port` (by any client) reached `stage`
    /// (`running`, `bandwidth`, `done`), with the result so far.
    LinkTestProgress {
        port: String,
        stage: String,
        result: Box<LinkTestResult>,
    },
    /// The connection to the bus failed for good.
    Fatal(String),
}

/// How a pending change ended, as `Network.ChangeEnded` says it.
pub const CONFIRMED: &str = "confirmed";
pub const ROLLED_BACK: &str = "rolled-back";
pub const TIMED_OUT: &str = "timed-out";

/// One value of `SetIpSettings` (nmcli's keys take a string or a list of strings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IpValue {
    Text(String),
    List(Vec<String>),
}

/// A change (or a read-only query) the user asked for.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    AddSoftLink {
        name: String,
        kind: String,
        netdev: String,
    },
    RemoveSoftLink {
        name: String,
    },
    CreateIpoibChild {
        parent: String,
        pkey: u16,
        name: String,
        mode: Option<String>,
        mtu: Option<u32>,
        umcast: Option<bool>,
    },
    DeleteIpoib {
        path: String,
    },
    SetIpoibMode {
        path: String,
        mode: String,
    },
    SetIpoibMtu {
        path: String,
        mtu: u32,
    },
    SetIpoibUmcast {
        path: String,
        umcast: bool,
    },
    /// Settings as a document of the declarative state (only the keys that change), applied
    /// as `ApplyState` applies it: every step in one transaction, each area's polkit action
    /// asked before the first. A form applies its keys this way, so a key the state gains
    /// needs no call of its own. `what` says it in words.
    ApplyState {
        state: Box<State>,
        what: String,
    },
    SetIpoibName {
        guid: String,
        name: String,
        apply_now: bool,
    },
    RemoveIpoibName {
        guid: String,
    },
    SetRdmaNamingPolicy {
        policy: String,
        apply_now: bool,
    },
    SetRdmaFixedName {
        guid: String,
        name: String,
        apply_now: bool,
    },
    RemoveRdmaFixedName {
        guid: String,
    },
    RenameDevice {
        device: String,
        name: String,
    },
    /// Read-only: what each RDMA naming policy would name every device.
    PreviewRdmaNames,
    /// Read-only: a port's counters now.
    GetCounters {
        port: String,
    },
    /// Read-only: the node health check of the state directory's expectations (answers
    /// [`CallOutput::Health`]).
    CheckHealth,
    /// A link test from a port (answers [`CallOutput::LinkTest`]); it may take its whole
    /// timeout, and runs like any call, without holding up the screen.
    TestLink {
        port: String,
        peer: String,
        kind: String,
        duration: u32,
        timeout: u32,
    },
    /// Read-only: the last link tests' results (answers [`CallOutput::LinkTests`]).
    RecentLinkTests,
    /// Read-only: the link-test responder's state (answers [`CallOutput::Responder`]).
    GetLinkResponder,
    SetLinkResponder {
        enabled: bool,
    },
    /// Host: enable or disable a module in `/etc/rdma/modules/<set>.conf`.
    SetModuleEnabled {
        set: String,
        module: String,
        enabled: bool,
    },
    /// Host: restart `rdma-load-modules@<set>.service` (answers [`CallOutput::Steps`]).
    ApplyModules {
        set: String,
    },
    /// Host: the memlock limits of group rdma (answers [`CallOutput::Notes`]).
    SetMemlockLimits {
        soft: String,
        hard: String,
    },
    /// Host: remove the daemon's memlock file.
    ResetMemlockLimits,
    /// Host: NFS over RDMA on or off (port 0: 20049; answers [`CallOutput::Steps`]).
    SetNfsRdma {
        enabled: bool,
        port: u16,
    },
    StartSubnetManager,
    StopSubnetManager,
    SetSubnetManagerEnabled {
        enabled: bool,
    },
    /// Read-only: an interface's IP settings, as its IP manager (or the kernel) has them.
    GetIpSettings {
        interface: String,
    },
    /// IP settings (only the keys that change); answers [`CallOutput::Pending`].
    SetIpSettings {
        interface: String,
        settings: Vec<(String, IpValue)>,
    },
    /// `nmcli connection up`; answers [`CallOutput::Pending`].
    Activate {
        interface: String,
    },
    /// `nmcli connection down`; answers [`CallOutput::Pending`].
    Deactivate {
        interface: String,
    },
    /// Read-only: a pending change the client learnt of by `Network.PendingChanges`.
    ReadPendingChange {
        path: String,
    },
    ConfirmChange {
        path: String,
    },
    RollBackChange {
        path: String,
    },
    /// Read-only: a RoCE port's QoS profile (answers [`CallOutput::QosProfile`]).
    GetQosProfile {
        port: String,
    },
    /// A VPI port's type (`ib`, `eth` or `auto`): at once through mlx4's driver, staged in
    /// mlx5's firmware for the next boot.
    SetPortType {
        port: String,
        port_type: String,
    },
    /// An SR-IOV VF's node and port GUID, on its PF (`device`, an object path).
    SetVfGuids {
        device: String,
        vf: u32,
        node_guid: String,
        port_guid: String,
    },
}

impl Call {
    /// Calls that read and change nothing: they say nothing on the status line when they
    /// succeed, and are no part of a sequence.
    pub fn is_read(&self) -> bool {
        matches!(
            self,
            Call::GetCounters { .. }
                | Call::CheckHealth
                | Call::RecentLinkTests
                | Call::GetLinkResponder
                | Call::PreviewRdmaNames
                | Call::GetIpSettings { .. }
                | Call::ReadPendingChange { .. }
                | Call::GetQosProfile { .. }
        )
    }
}

impl Call {
    /// A call in words, for the status line: objects by their names, as `model` has them.
    pub fn describe(&self, model: &Model) -> String {
        match self {
            Call::AddSoftLink { name, kind, netdev } => {
                format!("add {kind} link {name} on {netdev}")
            }
            Call::RemoveSoftLink { name } => format!("remove soft link {name}"),
            Call::CreateIpoibChild { name, pkey, .. } => {
                format!("create IPoIB child {name} (P_Key 0x{pkey:04x})")
            }
            Call::DeleteIpoib { path } => format!("delete {}", ipoib_name(model, path)),
            Call::SetIpoibMode { path, mode } => {
                format!("set {} mode {mode}", ipoib_name(model, path))
            }
            Call::SetIpoibMtu { path, mtu } => format!("set {} MTU {mtu}", ipoib_name(model, path)),
            Call::SetIpoibUmcast { path, umcast } => {
                format!(
                    "set {} umcast {}",
                    ipoib_name(model, path),
                    u8::from(*umcast)
                )
            }
            Call::ApplyState { what, .. } => what.clone(),
            Call::SetIpoibName { guid, name, .. } => format!("name IPoIB {guid} {name}"),
            Call::RemoveIpoibName { guid } => format!("remove IPoIB name of {guid}"),
            Call::SetRdmaNamingPolicy { policy, .. } => format!("set naming policy {policy}"),
            Call::SetRdmaFixedName { guid, name, .. } => format!("name device {guid} {name}"),
            Call::RemoveRdmaFixedName { guid } => format!("remove fixed name of {guid}"),
            Call::RenameDevice { device, name } => format!(
                "rename {} to {name}",
                model
                    .devices
                    .get(device)
                    .map(|d| d.name.as_str())
                    .unwrap_or(device)
            ),
            Call::PreviewRdmaNames => "preview RDMA names".into(),
            Call::GetCounters { .. } => "read counters".into(),
            Call::CheckHealth => "check the node's health".into(),
            Call::TestLink {
                port, peer, kind, ..
            } => format!(
                "test the link from {} to {peer} ({kind})",
                port_name(model, port)
            ),
            Call::RecentLinkTests => "read the recent link tests".into(),
            Call::GetLinkResponder => "read the link-test responder".into(),
            Call::SetLinkResponder { enabled } => format!(
                "{} the link-test responder",
                if *enabled { "enable" } else { "disable" }
            ),
            Call::SetModuleEnabled {
                set,
                module,
                enabled,
            } => format!(
                "{} {module} in /etc/rdma/modules/{set}.conf",
                if *enabled { "enable" } else { "disable" }
            ),
            Call::ApplyModules { set } => format!("restart rdma-load-modules@{set}.service"),
            Call::SetMemlockLimits { soft, hard } => {
                format!("set the memlock limits of group rdma to soft {soft}, hard {hard}")
            }
            Call::ResetMemlockLimits => "remove rdma-manager's memlock limits".into(),
            Call::SetNfsRdma {
                enabled: true,
                port,
            } => format!(
                "enable NFS over RDMA on port {}",
                if *port == 0 { 20049 } else { *port }
            ),
            Call::SetNfsRdma { enabled: false, .. } => "disable NFS over RDMA".into(),
            Call::StartSubnetManager => "start opensm".into(),
            Call::StopSubnetManager => "stop opensm".into(),
            Call::SetSubnetManagerEnabled { enabled } => format!(
                "{} opensm at boot",
                if *enabled { "enable" } else { "disable" }
            ),
            Call::GetIpSettings { interface } => format!("read the IP settings of {interface}"),
            Call::SetIpSettings { interface, .. } => format!("set the IP settings of {interface}"),
            Call::Activate { interface } => format!("bring {interface} up"),
            Call::Deactivate { interface } => format!("bring {interface} down"),
            Call::ReadPendingChange { .. } => "read a pending change".into(),
            Call::ConfirmChange { .. } => "keep the change".into(),
            Call::RollBackChange { .. } => "roll the change back".into(),
            Call::GetQosProfile { port } => {
                format!("read the QoS profile of {}", port_name(model, port))
            }
            Call::SetPortType { port, port_type } => {
                let name = port_name(model, port);
                if model
                    .ports
                    .get(port)
                    .is_some_and(|p| p.port_type_control == "firmware")
                {
                    format!(
                        "stage port type {port_type} of {name} in firmware (a reboot applies it)"
                    )
                } else {
                    format!("set port type {port_type} of {name}")
                }
            }
            Call::SetVfGuids { device, vf, .. } => format!(
                "set the GUIDs of VF {vf} of {}",
                model
                    .devices
                    .get(device)
                    .map(|d| d.name.as_str())
                    .unwrap_or(device)
            ),
        }
    }
}

/// An IPoIB interface's name, or its path when the model does not have it.
fn ipoib_name<'a>(model: &'a Model, path: &'a str) -> &'a str {
    model
        .ipoib
        .get(path)
        .map(|i| i.name.as_str())
        .unwrap_or(path)
}

/// A port as "device/number", or its path when the model does not have it.
fn port_name(model: &Model, path: &str) -> String {
    model
        .ports
        .get(path)
        .map(|p| format!("{}/{}", p.device_name, p.number))
        .unwrap_or_else(|| path.to_string())
}

/// What a successful call returned.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutput {
    Done,
    /// The object created.
    Created(String),
    Preview(Vec<NamePreview>),
    Counters,
    /// What a host change did, step by step.
    Steps(Vec<HostStep>),
    /// Sentences about a change (when it applies, what overrides it).
    Notes(Vec<String>),
    /// A pending IP change that waits for confirmation.
    Pending(PendingInfo),
    /// `GetIpSettings`' answer.
    IpSettings(IpSettings),
    /// `CheckHealth`'s verdicts.
    Health(Vec<rdma_manager_dbus::types::HealthCheck>),
    /// `TestLink`'s result (a test that ran and failed is a result too, with its reason).
    LinkTest(Box<LinkTestResult>),
    /// `RecentLinkTests`, oldest first.
    LinkTests(Vec<LinkTestResult>),
    /// `GetLinkResponder`.
    Responder(LinkResponder),
    /// `GetQosProfile`: the port's profile, and whether the daemon remembers one for it.
    QosProfile {
        profile: QosProfile,
        remembered: bool,
    },
}

/// A pending change's properties (`PendingChange` interface).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingInfo {
    pub path: String,
    pub interface: String,
    pub description: String,
    /// Microseconds since the Unix epoch.
    pub deadline_us: u64,
}

/// `GetIpSettings`' answer: the interface it is about and nmcli's keys, each a string or a
/// list of strings (booleans as "yes"/"no"); keys of another type are left out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IpSettings {
    pub interface: String,
    pub values: BTreeMap<String, IpValue>,
}

impl IpSettings {
    pub fn from_wire(interface: &str, map: HashMap<String, OwnedValue>) -> IpSettings {
        let mut values = BTreeMap::new();
        for (k, v) in map {
            let value = match &*v {
                Value::Str(s) => IpValue::Text(s.to_string()),
                Value::Bool(b) => IpValue::Text(if *b { "yes" } else { "no" }.into()),
                Value::Array(a) => IpValue::List(
                    a.iter()
                        .filter_map(|i| match i {
                            Value::Str(s) => Some(s.to_string()),
                            _ => None,
                        })
                        .collect(),
                ),
                _ => continue,
            };
            values.insert(k, value);
        }
        IpSettings {
            interface: interface.to_string(),
            values,
        }
    }

    /// A key as one string (a list joined by ", "; "" when absent).
    pub fn text(&self, key: &str) -> String {
        match self.values.get(key) {
            Some(IpValue::Text(s)) => s.clone(),
            Some(IpValue::List(l)) => l.join(", "),
            None => String::new(),
        }
    }
}

/// The kinds of failure the service distinguishes (its D-Bus error names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    InvalidArgument,
    NotFound,
    NotSupported,
    AlreadyExists,
    Busy,
    NotAuthorized,
    InteractiveAuthorizationRequired,
    Failed,
    /// The bus itself (the service is not running, a timeout).
    Bus,
}

/// A failed call: its kind and the service's sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CallError {
    pub kind: ErrorKind,
    pub message: String,
}

impl CallError {
    /// True when polkit refused (or would have asked for a password).
    pub fn is_authorization(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::NotAuthorized | ErrorKind::InteractiveAuthorizationRequired
        )
    }

    /// The polkit action named in the message, if any.
    pub fn action(&self) -> Option<&str> {
        self.message
            .split(|c: char| c.is_whitespace() || c == ':' || c == ',')
            .find(|w| w.starts_with(rdma_manager_dbus::POLKIT_PREFIX))
            .map(|w| w.trim_end_matches('.'))
    }
}

impl From<zbus::Error> for CallError {
    fn from(e: zbus::Error) -> Self {
        use rdma_manager_dbus::Error as E;
        let (kind, message) = match E::from(e) {
            E::InvalidArgument(m) => (ErrorKind::InvalidArgument, m),
            E::NotFound(m) => (ErrorKind::NotFound, m),
            E::NotSupported(m) => (ErrorKind::NotSupported, m),
            E::AlreadyExists(m) => (ErrorKind::AlreadyExists, m),
            E::Busy(m) => (ErrorKind::Busy, m),
            E::NotAuthorized(m) => (ErrorKind::NotAuthorized, m),
            E::InteractiveAuthorizationRequired(m) => {
                (ErrorKind::InteractiveAuthorizationRequired, m)
            }
            E::Failed(m) => (ErrorKind::Failed, m),
            E::ZBus(e) => (ErrorKind::Bus, bus_error_text(&e)),
        };
        CallError { kind, message }
    }
}

/// A bus-level error as a sentence (zbus's Display of a method error is its D-Bus name).
fn bus_error_text(e: &zbus::Error) -> String {
    match e {
        zbus::Error::MethodError(name, Some(msg), _) => format!("{msg} ({name})"),
        zbus::Error::MethodError(name, None, _) => name.to_string(),
        e => e.to_string(),
    }
}

/// Connects to the bus the service is on.
pub async fn connect(bus: &BusChoice) -> zbus::Result<Connection> {
    let conn = match bus {
        BusChoice::System => Connection::system().await,
        BusChoice::Session => Connection::session().await,
        BusChoice::Address(a) => {
            zbus::connection::Builder::address(a.as_str())?
                .build()
                .await
        }
    }?;
    // Starts zbus's object server, which answers org.freedesktop.DBus.Peer.Ping: the service
    // pings a client it has sent much to, and counts what the client has read by the answer
    // (docs/RELIABILITY.md). A zbus connection without it never answers.
    let _ = conn.object_server();
    Ok(conn)
}

/// A peer-to-peer connection to the daemon's direct socket at `path`, for one read of every
/// object; `None` when nothing answers there (an older daemon, another path), and the bus
/// is used. Not for following changes: signals come only on the bus, ordered after its
/// GetManagedObjects reply.
pub async fn connect_direct(path: &str) -> Option<Connection> {
    let connect = async {
        let stream = tokio::net::UnixStream::connect(path).await?;
        zbus::connection::Builder::unix_stream(stream)
            .p2p()
            .build()
            .await
    };
    match tokio::time::timeout(Duration::from_secs(2), connect).await {
        Ok(Ok(conn)) => Some(conn),
        Ok(Err(e)) => {
            tracing::debug!(path, "no direct socket, reading through the bus: {e}");
            None
        }
        Err(_) => {
            tracing::debug!(
                path,
                "the direct socket does not answer, reading through the bus"
            );
            None
        }
    }
}

/// Everything the service publishes, as read from the bus: GetManagedObjects, and the root's
/// own properties (GetAll), since the root is not among the objects it manages.
struct Published {
    objects: zbus::fdo::ManagedObjects,
    root: HashMap<String, OwnedValue>,
}

/// Reads [`Published`]; the objects through `direct` when given (and the bus if it fails
/// there), the root's properties through the bus.
async fn read_published(conn: &Connection, direct: Option<&Connection>) -> zbus::Result<Published> {
    // The root's properties through the bus while the direct socket answers.
    let (direct_objects, root) = match direct {
        Some(d) => {
            let (objects, root) = tokio::join!(direct_objects(d), read_root(conn));
            (objects, Some(root))
        }
        None => (None, None),
    };
    let objects = match direct_objects {
        Some(objects) => objects,
        None => {
            root_proxy::<ObjectManagerProxy>(conn)
                .await?
                .get_managed_objects()
                .await?
        }
    };
    let root = match root {
        Some(root) => root?,
        None => read_root(conn).await?,
    };
    Ok(Published { objects, root })
}

/// GetManagedObjects on the direct socket; `None` when it fails there (logged).
async fn direct_objects(direct: &Connection) -> Option<zbus::fdo::ManagedObjects> {
    let reply = direct
        .call_method(
            None::<&str>,
            ROOT_PATH,
            Some("org.freedesktop.DBus.ObjectManager"),
            "GetManagedObjects",
            &(),
        )
        .await;
    match reply.and_then(|m| m.body().deserialize::<zbus::fdo::ManagedObjects>()) {
        Ok(objects) => Some(objects),
        Err(e) => {
            tracing::debug!("the direct socket failed, reading through the bus: {e}");
            None
        }
    }
}

/// The root's own properties (GetAll).
async fn read_root(conn: &Connection) -> zbus::Result<HashMap<String, OwnedValue>> {
    let root = root_proxy::<zbus::fdo::PropertiesProxy>(conn).await?;
    let iface = zbus::names::InterfaceName::try_from(crate::model::MANAGER_IFACE)?;
    Ok(root.get_all(iface).await?)
}

/// Everything the service publishes as the JSON document of docs/JSON.md (`rdma-tui --json`);
/// `rdma-managerd show --json` prints the same document without a bus. The objects are read
/// through `direct` when given ([`connect_direct`]).
pub async fn read_document(
    conn: &Connection,
    direct: Option<&Connection>,
) -> zbus::Result<rdma_manager_dbus::json::Document> {
    let Published { objects, root } = read_published(conn, direct).await?;
    Ok(rdma_manager_dbus::json::Document::of_published(
        &root, &objects,
    ))
}

/// `rdma-tui --json --counters`: adds every port's counters as read now (`counters`: source,
/// saturated, values by name, as `Port.GetCounters` gives them) and its latest throughput
/// sample (`rates`: the last of `Port.GetThroughputHistory`, per second), by port object
/// path, all calls in flight at once. A port whose call fails gets `{"error": MESSAGE}`.
pub async fn add_counters(conn: &Connection, doc: &mut rdma_manager_dbus::json::Document) {
    use serde_json::{json, Map, Value as Json};
    let ports = doc.paths_with(crate::model::PORT_IFACE);
    let calls = ports.iter().map(|path| async move {
        let p = port_proxy(conn, path).await?;
        let counters = p.get_counters().await?;
        let history = p.get_throughput_history().await?;
        Ok::<_, zbus::Error>((counters, history))
    });
    let read = futures::future::join_all(calls).await;
    let mut counters = Map::new();
    let mut rates = Map::new();
    for (path, r) in ports.into_iter().zip(read) {
        let ((source, saturated, values), history) = match r {
            Ok(v) => v,
            Err(e) => {
                let error = json!({ "error": e.to_string() });
                counters.insert(path.clone(), error.clone());
                rates.insert(path, error);
                continue;
            }
        };
        let values: Map<String, Json> = values
            .into_iter()
            .map(|(k, v)| (k, Json::from(v)))
            .collect();
        counters.insert(
            path.clone(),
            json!({ "source": source, "saturated": saturated, "values": values }),
        );
        let latest = history.last().map_or(Json::Null, |s| {
            json!({
                "time_us": s.0,
                "tx_bytes_per_second": s.1,
                "rx_bytes_per_second": s.2,
                "tx_packets_per_second": s.3,
                "rx_packets_per_second": s.4,
                "flags": s.5,
            })
        });
        rates.insert(path, latest);
    }
    doc.set_section("counters", Json::Object(counters));
    doc.set_section("rates", Json::Object(rates));
}

/// Reads everything the service publishes (no history); the objects through `direct` when
/// given ([`connect_direct`]).
pub async fn read_model(conn: &Connection, direct: Option<&Connection>) -> zbus::Result<Model> {
    let Published { objects, root } = read_published(conn, direct).await?;
    let mut model = Model::default();
    model.set_properties(ROOT_PATH, crate::model::MANAGER_IFACE, root.iter());
    for (path, ifaces) in objects {
        let interfaces: Interfaces = ifaces
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        model.add_object(path.as_str(), &interfaces);
    }
    Ok(model)
}

/// The objects alone, from the direct socket at `path`, without the bus: what ibstat's
/// text needs (the root's own properties are left unread). `None` when the socket does not
/// answer or its read fails: the caller reads through the bus.
/// The objects from the direct socket alone, as a model; `None` when it fails there.
pub async fn read_model_direct(path: &str) -> Option<Model> {
    let direct = connect_direct(path).await?;
    Some(model_of(direct_objects(&direct).await?))
}

/// The model of GetManagedObjects' reply (without the root's own properties).
pub fn model_of(objects: zbus::fdo::ManagedObjects) -> Model {
    let mut model = Model::default();
    for (path, ifaces) in objects {
        let interfaces: Interfaces = ifaces
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        model.add_object(path.as_str(), &interfaces);
    }
    model
}

/// Reads every port's throughput history, all calls in flight at once: the fine ring, or
/// with `coarse` the coarse one.
pub async fn read_histories(
    conn: &Connection,
    ports: Vec<String>,
    coarse: bool,
) -> Vec<(
    String,
    zbus::Result<Vec<rdma_manager_dbus::proxies::HistorySample>>,
)> {
    let calls = ports.into_iter().map(|port| async move {
        let r = async {
            let p = port_proxy(conn, &port).await?;
            if coarse {
                p.get_throughput_history_coarse().await
            } else {
                p.get_throughput_history().await
            }
        }
        .await;
        (port, r)
    });
    futures::future::join_all(calls).await
}

/// A proxy of the service's object at `path` (`None`: the interface's own object). No proxy
/// of the client caches properties: the model is read and kept up to date separately
/// (`read_model`, `watch`), and proxies only make calls.
async fn proxy<'a, P>(conn: &Connection, path: Option<&'a str>) -> zbus::Result<P>
where
    P: zbus::proxy::Defaults + From<zbus::Proxy<'a>>,
{
    let mut builder = zbus::proxy::Builder::<P>::new(conn);
    if let Some(path) = path {
        builder = builder.path(path)?;
    }
    builder.cache_properties(CacheProperties::No).build().await
}

/// A proxy of a standard interface (ObjectManager, Properties) of the service's root object;
/// these interfaces name no service of their own, so the destination is set here.
async fn root_proxy<P>(conn: &Connection) -> zbus::Result<P>
where
    P: zbus::proxy::Defaults + From<zbus::Proxy<'static>>,
{
    zbus::proxy::Builder::<P>::new(conn)
        .destination(BUS_NAME)?
        .path(ROOT_PATH)?
        .cache_properties(CacheProperties::No)
        .build()
        .await
}

async fn port_proxy<'a>(conn: &Connection, path: &'a str) -> zbus::Result<PortProxy<'a>> {
    proxy(conn, Some(path)).await
}

async fn ipoib_proxy<'a>(conn: &Connection, path: &'a str) -> zbus::Result<IpoibProxy<'a>> {
    proxy(conn, Some(path)).await
}

async fn device_proxy<'a>(conn: &Connection, path: &'a str) -> zbus::Result<DeviceProxy<'a>> {
    proxy(conn, Some(path)).await
}

async fn host_proxy(conn: &Connection) -> zbus::Result<HostSetupProxy<'static>> {
    proxy(conn, None).await
}

async fn manager_proxy(conn: &Connection) -> zbus::Result<ManagerProxy<'static>> {
    proxy(conn, None).await
}

/// What [`load`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Load {
    /// The whole model was read and sent.
    Complete,
    /// The service is still starting: only its root was read and sent.
    Starting,
}

/// Loads the state and its histories, sending `Loaded` then one `History` per port. The
/// service owns its name before it
/// has read the host (its root's `Startup` is true until it has): GetManagedObjects would
/// then wait for the end of start-up, while the InterfacesAdded of every object it publishes
/// meanwhile fill this client's signal stream, which nobody reads during the call, and a full
/// stream stops the connection, reply included. So while the service starts only its root is
/// read; the signal that ends start-up makes [`run_inner`] load again.
async fn load(conn: &Connection, tx: &UnboundedSender<Update>) -> zbus::Result<Load> {
    let root = read_root(conn).await?;
    let starting = root
        .get("Startup")
        .and_then(|v| bool::try_from(&**v).ok())
        .unwrap_or(false);
    if starting {
        let mut model = Model::default();
        model.set_properties(ROOT_PATH, crate::model::MANAGER_IFACE, root.iter());
        let _ = tx.send(Update::Loaded(Box::new(model)));
        return Ok(Load::Starting);
    }
    // Through the bus only: the signals that follow are ordered after its reply.
    let model = read_model(conn, None).await?;
    let ports: Vec<String> = model.ports.keys().cloned().collect();
    let _ = tx.send(Update::Loaded(Box::new(model)));
    // Changes that already wait for confirmation (made before this client started, or by
    // another one) get their dialog too. A daemon without the Network interface has none.
    if let Ok(paths) = async { network_proxy(conn).await?.pending_changes().await }.await {
        if let Ok(v) = OwnedValue::try_from(Value::from(paths)) {
            let _ = tx.send(Update::Properties {
                path: ROOT_PATH.to_string(),
                iface: crate::model::NETWORK_IFACE.to_string(),
                changed: HashMap::from([("PendingChanges".to_string(), v)]),
            });
        }
    }
    for (port, r) in read_histories(conn, ports.clone(), false).await {
        match r {
            Ok(samples) => {
                let _ = tx.send(Update::History { port, samples });
            }
            Err(e) => tracing::debug!(port, "no history: {e}"),
        }
    }
    // After the fine ring: the coarse one is older, and a daemon without it (before the
    // method existed) still gives the fine one.
    for (port, r) in read_histories(conn, ports, true).await {
        match r {
            Ok(samples) => {
                let _ = tx.send(Update::HistoryCoarse { port, samples });
            }
            Err(e) => tracing::debug!(port, "no coarse history: {e}"),
        }
    }
    Ok(Load::Complete)
}

/// Whether `update` is the root's PropertiesChanged that says start-up is over.
fn ends_startup(update: &Update) -> bool {
    match update {
        Update::Properties {
            path,
            iface,
            changed,
        } => {
            path == ROOT_PATH
                && iface == crate::model::MANAGER_IFACE
                && changed
                    .get("Startup")
                    .and_then(|v| bool::try_from(&**v).ok())
                    == Some(false)
        }
        _ => false,
    }
}

/// [`load`], its failure logged (`Err` when the service is not there).
async fn load_logged(conn: &Connection, tx: &UnboundedSender<Update>) -> Result<Load, zbus::Error> {
    let r = load(conn, tx).await;
    if let Err(e) = &r {
        tracing::info!("service not readable: {e}");
    }
    r
}

/// Subscribes to the service's signals, loads the state, and forwards changes until the
/// receiver is gone. Subscribing first means nothing that happens during the load is lost
/// (applying a change twice is harmless, and the changes come after the load in the order
/// the service sent them, so the last one wins).
pub async fn run(conn: Connection, tx: UnboundedSender<Update>) {
    if let Err(e) = run_inner(&conn, &tx).await {
        let _ = tx.send(Update::Fatal(format!("lost the bus: {e}")));
    }
}

async fn run_inner(conn: &Connection, tx: &UnboundedSender<Update>) -> zbus::Result<()> {
    // One stream for every signal of the service, so that they are applied in the order it
    // sent them. A stream per signal loses that order: a PropertiesChanged sent right after
    // InterfacesAdded (a new IPoIB child becoming Persisted) could be applied first and then
    // be overwritten by the older values InterfacesAdded carries.
    let rule = MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .sender(BUS_NAME)?
        .path_namespace(ROOT_PATH)?
        .build();
    let mut signals = MessageStream::for_match_rule(rule, conn, Some(1024)).await?;
    let dbus = DBusProxy::new(conn).await?;
    let mut owners = dbus
        .receive_name_owner_changed_with_args(&[(0, BUS_NAME)])
        .await?;

    // While the service starts, its signals are read and dropped (the load at the end of
    // start-up has them all), except the root's own changes: see `load`.
    let mut starting = match load_logged(conn, tx).await {
        Ok(l) => l == Load::Starting,
        Err(_) => {
            let _ = tx.send(Update::ServiceGone);
            false
        }
    };
    loop {
        tokio::select! {
            Some(msg) = signals.next() => {
                let Ok(msg) = msg else { continue };
                let Some(update) = signal_update(&msg) else { continue };
                if starting {
                    if ends_startup(&update) {
                        starting = matches!(load_logged(conn, tx).await, Ok(Load::Starting));
                    } else if matches!(&update, Update::Properties { path, .. } if path == ROOT_PATH)
                        && tx.send(update).is_err()
                    {
                        return Ok(());
                    }
                    continue;
                }
                let new_port = match &update {
                    Update::Added { path, interfaces } if interfaces.contains_key(PORT_IFACE) => {
                        Some(path.clone())
                    }
                    _ => None,
                };
                if tx.send(update).is_err() {
                    return Ok(());
                }
                if let Some(path) = new_port {
                    if let Ok(p) = port_proxy(conn, &path).await {
                        if let Ok(samples) = p.get_throughput_history().await {
                            let _ = tx.send(Update::History { port: path.clone(), samples });
                        }
                        if let Ok(samples) = p.get_throughput_history_coarse().await {
                            let _ = tx.send(Update::HistoryCoarse { port: path, samples });
                        }
                    }
                }
            }
            Some(sig) = owners.next() => {
                let Ok(args) = sig.args() else { continue };
                if args.new_owner().is_some() {
                    starting = matches!(load_logged(conn, tx).await, Ok(Load::Starting));
                } else if tx.send(Update::ServiceGone).is_err() {
                    return Ok(());
                }
            }
            else => return Err(zbus::Error::Failure("the bus connection closed".into())),
        }
    }
}

/// The model change one signal of the service carries (`None`: a signal the client does not
/// follow, or one that does not parse).
pub fn signal_update(msg: &zbus::Message) -> Option<Update> {
    let header = msg.header();
    let path = header.path()?.to_string();
    let iface = header.interface()?.to_string();
    let member = header.member()?.to_string();
    let body = msg.body();
    match (iface.as_str(), member.as_str()) {
        ("org.freedesktop.DBus.Properties", "PropertiesChanged") => {
            let (iface, changed, _invalidated) = body
                .deserialize::<(String, HashMap<String, OwnedValue>, Vec<String>)>()
                .ok()?;
            Some(Update::Properties {
                path,
                iface,
                changed,
            })
        }
        ("org.freedesktop.DBus.ObjectManager", "InterfacesAdded") => {
            let (object, interfaces) = body
                .deserialize::<(
                    zbus::zvariant::OwnedObjectPath,
                    HashMap<String, HashMap<String, OwnedValue>>,
                )>()
                .ok()?;
            Some(Update::Added {
                path: object.as_str().to_string(),
                interfaces,
            })
        }
        ("org.freedesktop.DBus.ObjectManager", "InterfacesRemoved") => {
            let (object, ifaces) = body
                .deserialize::<(zbus::zvariant::OwnedObjectPath, Vec<String>)>()
                .ok()?;
            Some(Update::Removed {
                path: object.as_str().to_string(),
                ifaces,
            })
        }
        (crate::model::MANAGER_IFACE, "ThroughputSampled") => {
            let (time_us, samples) = body
                .deserialize::<(u64, Vec<rdma_manager_dbus::proxies::PortSample>)>()
                .ok()?;
            Some(Update::Samples {
                time_us,
                samples: samples
                    .into_iter()
                    .map(|(p, a, b, c, d, f)| (p.as_str().to_string(), a, b, c, d, f))
                    .collect(),
            })
        }
        (crate::model::PORT_IFACE, "LinkTestProgress") => {
            let (stage, result) = body.deserialize::<(String, LinkTestResult)>().ok()?;
            Some(Update::LinkTestProgress {
                port: path,
                stage,
                result: Box::new(result),
            })
        }
        (crate::model::NETWORK_IFACE, "ChangeEnded") => {
            let (change, outcome) = body
                .deserialize::<(zbus::zvariant::OwnedObjectPath, String)>()
                .ok()?;
            Some(Update::ChangeEnded {
                change: change.as_str().to_string(),
                outcome,
            })
        }
        _ => None,
    }
}

async fn network_proxy(conn: &Connection) -> zbus::Result<NetworkProxy<'static>> {
    proxy(conn, None).await
}

async fn change_proxy<'a>(
    conn: &Connection,
    path: &'a str,
) -> zbus::Result<PendingChangeProxy<'a>> {
    proxy(conn, Some(path)).await
}

/// A pending change's properties, read right after the call that made it.
async fn read_pending(conn: &Connection, path: &str) -> zbus::Result<PendingInfo> {
    let p = change_proxy(conn, path).await?;
    Ok(PendingInfo {
        path: path.to_string(),
        interface: p.interface().await?,
        description: p.description().await?,
        deadline_us: p.deadline().await?,
    })
}

/// Makes one call and reports its answer (and, for GetCounters, the reading).
pub async fn perform(conn: &Connection, id: u64, call: Call, tx: &UnboundedSender<Update>) {
    let result = perform_inner(conn, &call, tx)
        .await
        .map_err(CallError::from);
    let _ = tx.send(Update::CallDone { id, call, result });
}

/// Hands the call to the function of its family (a page's operations, NetworkManager's, the
/// counters' read).
async fn perform_inner(
    conn: &Connection,
    call: &Call,
    tx: &UnboundedSender<Update>,
) -> zbus::Result<CallOutput> {
    match call {
        Call::AddSoftLink { .. } | Call::RemoveSoftLink { .. } => soft_link_call(conn, call).await,
        Call::CreateIpoibChild { .. }
        | Call::DeleteIpoib { .. }
        | Call::SetIpoibMode { .. }
        | Call::SetIpoibMtu { .. }
        | Call::SetIpoibUmcast { .. } => ipoib_call(conn, call).await,
        Call::ApplyState { state, .. } => manager_proxy(conn)
            .await?
            .apply_state(&rdma_manager_model::state::to_yaml(state), 0)
            .await
            .map(|_| CallOutput::Done),
        Call::SetIpoibName { .. }
        | Call::RemoveIpoibName { .. }
        | Call::SetRdmaNamingPolicy { .. }
        | Call::SetRdmaFixedName { .. }
        | Call::RemoveRdmaFixedName { .. }
        | Call::RenameDevice { .. }
        | Call::PreviewRdmaNames => naming_call(conn, call).await,
        Call::SetModuleEnabled { .. }
        | Call::ApplyModules { .. }
        | Call::SetMemlockLimits { .. }
        | Call::ResetMemlockLimits
        | Call::SetNfsRdma { .. }
        | Call::StartSubnetManager
        | Call::StopSubnetManager
        | Call::SetSubnetManagerEnabled { .. } => host_call(conn, call).await,
        Call::GetIpSettings { .. }
        | Call::SetIpSettings { .. }
        | Call::Activate { .. }
        | Call::Deactivate { .. }
        | Call::ReadPendingChange { .. }
        | Call::ConfirmChange { .. }
        | Call::RollBackChange { .. } => network_call(conn, call).await,
        Call::TestLink { .. }
        | Call::RecentLinkTests
        | Call::GetLinkResponder
        | Call::SetLinkResponder { .. } => link_test_call(conn, call).await,
        Call::GetCounters { port } => read_counters(conn, port, tx).await,
        Call::GetQosProfile { port } => read_qos_profile(conn, port).await,
        Call::SetPortType { port, port_type } => port_proxy(conn, port)
            .await?
            .set_port_type(port_type)
            .await
            .map(done),
        Call::SetVfGuids {
            device,
            vf,
            node_guid,
            port_guid,
        } => device_proxy(conn, device)
            .await?
            .set_vf_guids(*vf, node_guid, port_guid)
            .await
            .map(done),
        Call::CheckHealth => manager_proxy(conn)
            .await?
            .check_health("")
            .await
            .map(CallOutput::Health),
    }
}

/// The answer of a call that returns nothing.
fn done(_: ()) -> CallOutput {
    CallOutput::Done
}

/// A call [`perform_inner`] handed to a family it is not of: a bug here, said as a failed
/// call rather than a panic that would take the screen down.
fn misrouted(call: &Call) -> zbus::Error {
    zbus::Error::Failure(format!("{call:?} was handed to the wrong family of calls"))
}

/// The soft links page's calls: add and remove an rxe or siw link.
async fn soft_link_call(conn: &Connection, call: &Call) -> zbus::Result<CallOutput> {
    match call {
        Call::AddSoftLink { name, kind, netdev } => manager_proxy(conn)
            .await?
            .add_soft_link(name, kind, netdev)
            .await
            .map(|p| CallOutput::Created(p.as_str().to_string())),
        Call::RemoveSoftLink { name } => manager_proxy(conn)
            .await?
            .remove_soft_link(name)
            .await
            .map(done),
        other => Err(misrouted(other)),
    }
}

/// The IPoIB page's calls: create and delete a P_Key child, set mode, MTU and umcast.
async fn ipoib_call(conn: &Connection, call: &Call) -> zbus::Result<CallOutput> {
    match call {
        Call::CreateIpoibChild {
            parent,
            pkey,
            name,
            mode,
            mtu,
            umcast,
        } => {
            let mut settings: HashMap<&str, Value<'_>> = HashMap::new();
            if let Some(m) = mode {
                settings.insert("mode", Value::from(m.as_str()));
            }
            if let Some(m) = mtu {
                settings.insert("mtu", Value::from(*m));
            }
            if let Some(u) = umcast {
                settings.insert("umcast", Value::from(*u));
            }
            ipoib_proxy(conn, parent)
                .await?
                .create_child(*pkey, name, settings)
                .await
                .map(|p| CallOutput::Created(p.as_str().to_string()))
        }
        Call::DeleteIpoib { path } => ipoib_proxy(conn, path).await?.delete().await.map(done),
        Call::SetIpoibMode { path, mode } => ipoib_proxy(conn, path)
            .await?
            .set_mode(mode)
            .await
            .map(done),
        Call::SetIpoibMtu { path, mtu } => {
            ipoib_proxy(conn, path).await?.set_mtu(*mtu).await.map(done)
        }
        Call::SetIpoibUmcast { path, umcast } => ipoib_proxy(conn, path)
            .await?
            .set_umcast(*umcast)
            .await
            .map(done),
        other => Err(misrouted(other)),
    }
}

/// A RoCE port's QoS profile, as `Port.GetQosProfile` gives it, and whether it is remembered.
async fn read_qos_profile(conn: &Connection, port: &str) -> zbus::Result<CallOutput> {
    let (reply, remembered) = port_proxy(conn, port).await?.get_qos_profile().await?;
    let profile = rdma_manager_model::qos::from_bus(&reply)
        .map_err(|e| zbus::Error::Failure(format!("the service's QoS profile: {e}")))?;
    Ok(CallOutput::QosProfile {
        profile,
        remembered,
    })
}

/// The naming page's calls: policy, fixed names, IPoIB names, a rename and the preview.
async fn naming_call(conn: &Connection, call: &Call) -> zbus::Result<CallOutput> {
    match call {
        Call::SetIpoibName {
            guid,
            name,
            apply_now,
        } => manager_proxy(conn)
            .await?
            .set_ipoib_name(guid, name, *apply_now)
            .await
            .map(done),
        Call::RemoveIpoibName { guid } => manager_proxy(conn)
            .await?
            .remove_ipoib_name(guid)
            .await
            .map(done),
        Call::SetRdmaNamingPolicy { policy, apply_now } => manager_proxy(conn)
            .await?
            .set_rdma_naming_policy(policy, *apply_now)
            .await
            .map(done),
        Call::SetRdmaFixedName {
            guid,
            name,
            apply_now,
        } => manager_proxy(conn)
            .await?
            .set_rdma_fixed_name(guid, name, *apply_now)
            .await
            .map(done),
        Call::RemoveRdmaFixedName { guid } => manager_proxy(conn)
            .await?
            .remove_rdma_fixed_name(guid)
            .await
            .map(done),
        Call::RenameDevice { device, name } => device_proxy(conn, device)
            .await?
            .rename(name)
            .await
            .map(done),
        Call::PreviewRdmaNames => {
            let rows = manager_proxy(conn).await?.preview_rdma_names().await?;
            Ok(CallOutput::Preview(rows))
        }
        other => Err(misrouted(other)),
    }
}

/// The host page's calls: kernel modules, memlock limits, NFS over RDMA, the subnet manager.
async fn host_call(conn: &Connection, call: &Call) -> zbus::Result<CallOutput> {
    match call {
        Call::SetModuleEnabled {
            set,
            module,
            enabled,
        } => host_proxy(conn)
            .await?
            .set_module_enabled(set, module, *enabled)
            .await
            .map(done),
        Call::ApplyModules { set } => host_proxy(conn)
            .await?
            .apply_modules(set)
            .await
            .map(CallOutput::Steps),
        Call::SetMemlockLimits { soft, hard } => host_proxy(conn)
            .await?
            .set_memlock_limits(soft, hard)
            .await
            .map(CallOutput::Notes),
        Call::ResetMemlockLimits => host_proxy(conn)
            .await?
            .reset_memlock_limits()
            .await
            .map(done),
        Call::SetNfsRdma { enabled, port } => host_proxy(conn)
            .await?
            .set_nfs_rdma(*enabled, *port)
            .await
            .map(CallOutput::Steps),
        Call::StartSubnetManager => host_proxy(conn)
            .await?
            .start_subnet_manager()
            .await
            .map(done),
        Call::StopSubnetManager => host_proxy(conn)
            .await?
            .stop_subnet_manager()
            .await
            .map(done),
        Call::SetSubnetManagerEnabled { enabled } => host_proxy(conn)
            .await?
            .set_subnet_manager_enabled(*enabled)
            .await
            .map(done),
        other => Err(misrouted(other)),
    }
}

/// The calls to NetworkManager through the daemon: IP settings, up and down, and the pending
/// change each makes.
async fn network_call(conn: &Connection, call: &Call) -> zbus::Result<CallOutput> {
    match call {
        Call::GetIpSettings { interface } => {
            let map = network_proxy(conn)
                .await?
                .get_ip_settings(interface)
                .await?;
            Ok(CallOutput::IpSettings(IpSettings::from_wire(
                interface, map,
            )))
        }
        Call::SetIpSettings {
            interface,
            settings,
        } => {
            let map: HashMap<&str, Value<'_>> = settings
                .iter()
                .map(|(k, v)| {
                    let v = match v {
                        IpValue::Text(s) => Value::from(s.as_str()),
                        IpValue::List(l) => Value::from(l.clone()),
                    };
                    (k.as_str(), v)
                })
                .collect();
            // 0: the daemon's default timeout (60 s).
            let path = network_proxy(conn)
                .await?
                .set_ip_settings(interface, map, 0)
                .await?;
            read_pending(conn, path.as_str())
                .await
                .map(CallOutput::Pending)
        }
        Call::Activate { interface } => {
            let path = network_proxy(conn).await?.activate(interface, 0).await?;
            read_pending(conn, path.as_str())
                .await
                .map(CallOutput::Pending)
        }
        Call::Deactivate { interface } => {
            let path = network_proxy(conn).await?.deactivate(interface, 0).await?;
            read_pending(conn, path.as_str())
                .await
                .map(CallOutput::Pending)
        }
        Call::ReadPendingChange { path } => read_pending(conn, path).await.map(CallOutput::Pending),
        Call::ConfirmChange { path } => change_proxy(conn, path).await?.confirm().await.map(done),
        Call::RollBackChange { path } => {
            change_proxy(conn, path).await?.roll_back().await.map(done)
        }
        other => Err(misrouted(other)),
    }
}

/// The Test page's calls: a link test, the recent results, the responder.
async fn link_test_call(conn: &Connection, call: &Call) -> zbus::Result<CallOutput> {
    match call {
        Call::TestLink {
            port,
            peer,
            kind,
            duration,
            timeout,
        } => port_proxy(conn, port)
            .await?
            .test_link(peer, kind, *duration, *timeout)
            .await
            .map(|r| CallOutput::LinkTest(Box::new(r))),
        Call::RecentLinkTests => manager_proxy(conn)
            .await?
            .recent_link_tests()
            .await
            .map(CallOutput::LinkTests),
        Call::GetLinkResponder => manager_proxy(conn)
            .await?
            .get_link_responder()
            .await
            .map(CallOutput::Responder),
        Call::SetLinkResponder { enabled } => manager_proxy(conn)
            .await?
            .set_link_responder(*enabled)
            .await
            .map(done),
        other => Err(misrouted(other)),
    }
}

/// Reads a port's counters; the reading goes to the UI loop as an [`Update::Counters`].
async fn read_counters(
    conn: &Connection,
    port: &str,
    tx: &UnboundedSender<Update>,
) -> zbus::Result<CallOutput> {
    let (source, saturated, values) = port_proxy(conn, port).await?.get_counters().await?;
    let _ = tx.send(Update::Counters {
        port: port.to_string(),
        source,
        saturated,
        values: values.into_iter().collect(),
    });
    Ok(CallOutput::Counters)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::IPOIB_IFACE;

    fn signal<B: serde::Serialize + zbus::zvariant::DynamicType>(
        path: &str,
        iface: &str,
        member: &str,
        body: &B,
    ) -> zbus::Message {
        zbus::Message::signal(path, iface, member)
            .expect("header")
            .build(body)
            .expect("body")
    }

    /// The order the service sends for a new remembered child: InterfacesAdded with the
    /// values before it was remembered, then PropertiesChanged. Applied in that order (one
    /// stream), the model ends with the newer value.
    #[test]
    fn a_change_right_after_interfaces_added_is_kept() {
        let path = "/org/rdmamanager/RdmaManager1/Ipoib/40";
        let mut props: HashMap<&str, Value<'_>> = HashMap::new();
        props.insert("Name", Value::from("ib0.8005"));
        props.insert("ParentName", Value::from("ib0"));
        props.insert("Persisted", Value::from(false));
        let added = signal(
            ROOT_PATH,
            "org.freedesktop.DBus.ObjectManager",
            "InterfacesAdded",
            &(
                zbus::zvariant::ObjectPath::try_from(path).expect("path"),
                HashMap::from([(IPOIB_IFACE, props)]),
            ),
        );
        let changed = signal(
            path,
            "org.freedesktop.DBus.Properties",
            "PropertiesChanged",
            &(
                IPOIB_IFACE,
                HashMap::from([("Persisted", Value::from(true))]),
                Vec::<String>::new(),
            ),
        );
        let mut model = Model::default();
        for msg in [added, changed] {
            match signal_update(&msg) {
                Some(Update::Added { path, interfaces }) => model.add_object(&path, &interfaces),
                Some(Update::Properties {
                    path,
                    iface,
                    changed,
                }) => model.set_properties(&path, &iface, changed.iter()),
                other => panic!("unexpected {other:?}"),
            }
        }
        let child = &model.ipoib[path];
        assert_eq!(child.name, "ib0.8005");
        assert!(child.persisted);
    }

    #[test]
    fn removed_and_sampled_signals_become_updates() {
        let path = "/org/rdmamanager/RdmaManager1/Ipoib/40";
        let removed = signal(
            ROOT_PATH,
            "org.freedesktop.DBus.ObjectManager",
            "InterfacesRemoved",
            &(
                zbus::zvariant::ObjectPath::try_from(path).expect("path"),
                vec![IPOIB_IFACE],
            ),
        );
        assert!(matches!(
            signal_update(&removed),
            Some(Update::Removed { path: p, ifaces }) if p == path && ifaces == [IPOIB_IFACE]
        ));
        let port =
            zbus::zvariant::ObjectPath::try_from("/org/rdmamanager/RdmaManager1/Device/0/Port/1")
                .expect("path");
        let sampled = signal(
            ROOT_PATH,
            crate::model::MANAGER_IFACE,
            "ThroughputSampled",
            &(7u64, vec![(port, 1.0f64, 2.0f64, 3.0f64, 4.0f64, 0u8)]),
        );
        assert!(matches!(
            signal_update(&sampled),
            Some(Update::Samples { time_us: 7, samples }) if samples.len() == 1 && samples[0].2 == 2.0
        ));
        let other = signal(ROOT_PATH, crate::model::MANAGER_IFACE, "Future", &(1u8,));
        assert!(signal_update(&other).is_none());
    }

    #[test]
    fn change_ended_becomes_an_update_and_ip_settings_keep_strings_lists_and_booleans() {
        let change = "/org/rdmamanager/RdmaManager1/Change/3";
        let msg = signal(
            ROOT_PATH,
            crate::model::NETWORK_IFACE,
            "ChangeEnded",
            &(
                zbus::zvariant::ObjectPath::try_from(change).expect("path"),
                "timed-out",
            ),
        );
        assert!(matches!(
            signal_update(&msg),
            Some(Update::ChangeEnded { change: c, outcome }) if c == change && outcome == TIMED_OUT
        ));
        let owned = |v: Value<'_>| OwnedValue::try_from(v).expect("owned");
        let map = HashMap::from([
            ("ipv4.method".to_string(), owned(Value::from("manual"))),
            (
                "ipv4.addresses".to_string(),
                owned(Value::from(vec!["192.0.2.1/24", "192.0.2.2/24"])),
            ),
            ("active".to_string(), owned(Value::from(true))),
            ("odd".to_string(), owned(Value::from(7u32))),
        ]);
        let s = IpSettings::from_wire("ib0", map);
        assert_eq!(s.text("ipv4.method"), "manual");
        assert_eq!(s.text("ipv4.addresses"), "192.0.2.1/24, 192.0.2.2/24");
        assert_eq!(s.text("active"), "yes");
        assert!(!s.values.contains_key("odd"));
    }

    #[test]
    fn service_errors_keep_their_kind_and_action() {
        let e = zbus::Error::MethodError(
            zbus::names::OwnedErrorName::try_from(
                "org.rdmamanager.RdmaManager1.Error.NotAuthorized",
            )
            .expect("name"),
            Some(
                "Not authorized to perform org.rdmamanager.rdmamanager1.manage-ipoib: polkit \
                 refused the caller."
                    .into(),
            ),
            zbus::message::Message::method_call("/", "X")
                .expect("msg")
                .build(&())
                .expect("msg"),
        );
        let c = CallError::from(e);
        assert_eq!(c.kind, ErrorKind::NotAuthorized);
        assert!(c.is_authorization());
        assert_eq!(
            c.action(),
            Some("org.rdmamanager.rdmamanager1.manage-ipoib")
        );
    }
}
