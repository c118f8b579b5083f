//! The structured values of the D-Bus API, written once for the service and its clients.
//!
//! Each is a D-Bus struct: its signature is the tuple of its fields in order (`UnitState` is
//! `(sss)`), so a busctl user sees exactly the tuples the XML in `xml/` documents, while the
//! Rust code on both sides names the fields. Adding, removing or reordering a field changes
//! the wire format: the service's contract test (`service/src/dbus/contract.rs`) fails until
//! `xml/` follows, and `signatures_are_the_documented_tuples` below pins each signature.

use serde::{Deserialize, Serialize};
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Type, Value};

/// One module line of `/etc/rdma/modules/<set>.conf` (Host `Modules`, `a(sssbbu)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct RdmaModule {
    /// The file's stem: "rdma", "infiniband", "roce", ...
    pub set: String,
    pub module: String,
    /// The comment block above the line, joined with spaces.
    pub description: String,
    /// Loaded by the file (not commented out).
    pub enabled: bool,
    /// Loaded in the kernel now (`/sys/module/NAME` exists).
    pub loaded: bool,
    /// The line number in the file.
    pub line: u32,
}

/// What systemd says about a unit (Host `NfsServer`, `Opensm`, `(sss)`); all empty when
/// systemd cannot be asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct UnitState {
    /// `loaded`, `not-found` (not installed), ...
    pub load_state: String,
    /// `active`, `inactive`, `failed`, ...
    pub active_state: String,
    /// `enabled`, `disabled`, `static`, ...
    pub unit_file_state: String,
}

impl UnitState {
    /// systemd could not be asked.
    pub fn unknown(&self) -> bool {
        self.load_state.is_empty() && self.active_state.is_empty()
    }

    /// The unit exists (its package is installed).
    pub fn installed(&self) -> bool {
        !self.unknown() && self.load_state != "not-found"
    }

    pub fn active(&self) -> bool {
        self.active_state == "active"
    }

    /// Started at boot (`enabled`, or `enabled-runtime`).
    pub fn enabled(&self) -> bool {
        self.unit_file_state.starts_with("enabled")
    }
}

/// The memlock limits in the daemon's own limits file (Host `MemlockManaged`, `(ss)`): "" each
/// when it has no file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct ManagedLimits {
    /// "unlimited" or KiB as decimal text.
    pub soft: String,
    pub hard: String,
}

/// Whether a subnet manager answers on an InfiniBand port (Host `SubnetManagers`,
/// `a(ossus)`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct SubnetManager {
    /// The port's object.
    pub port: OwnedObjectPath,
    /// "device/port".
    pub name: String,
    /// The port's state: ACTIVE, INIT, ...
    pub state: String,
    /// The LID of the subnet manager the port knows; 0: none.
    pub sm_lid: u32,
    /// "seen" (SM LID not 0), "stuck-init" (INIT with SM LID 0: no subnet manager answers)
    /// or "none".
    pub verdict: String,
}

impl Default for SubnetManager {
    fn default() -> Self {
        SubnetManager {
            port: OwnedObjectPath::try_from("/").unwrap_or_else(|_| OwnedObjectPath::default()),
            name: String::new(),
            state: String::new(),
            sm_lid: 0,
            verdict: String::new(),
        }
    }
}

/// One step of a Host method that reports its steps (`ApplyModules`, `SetNfsRdma`: `a(sss)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct HostStep {
    /// "nfs.conf", "modules", "firewall", "nfs-server", ...
    pub step: String,
    /// "done", "unchanged", "skipped", "failed", or "not-run" for the steps after a failure.
    pub outcome: String,
    /// What was done or why not, in words.
    pub detail: String,
}

impl HostStep {
    pub fn failed(&self) -> bool {
        self.outcome == "failed"
    }
}

/// Who configures a network interface's IP settings (Ipoib `Owner`, Port `NetdevOwner`,
/// `(sss)`): all empty when nobody does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct Owner {
    /// "networkmanager" (a NetworkManager profile: the daemon then leaves the interface
    /// alone), "rdma-manager" (ipoib.toml remembers it; Ipoib only) or "".
    pub kind: String,
    /// The NetworkManager profile's id (its name); "" for another kind.
    pub profile_id: String,
    /// The NetworkManager profile's UUID; "" for another kind.
    pub uuid: String,
}

impl Owner {
    pub const NETWORK_MANAGER: &'static str = "networkmanager";
    pub const RDMA_MANAGER: &'static str = "rdma-manager";

    /// A NetworkManager profile configures the interface.
    pub fn network_manager(profile_id: &str, uuid: &str) -> Self {
        Owner {
            kind: Self::NETWORK_MANAGER.to_string(),
            profile_id: profile_id.to_string(),
            uuid: uuid.to_string(),
        }
    }

    /// The daemon remembers the interface in ipoib.toml.
    pub fn rdma_manager() -> Self {
        Owner {
            kind: Self::RDMA_MANAGER.to_string(),
            ..Owner::default()
        }
    }

    /// The NetworkManager profile that configures the interface, if one does.
    pub fn nm_profile(&self) -> Option<&str> {
        (self.kind == Self::NETWORK_MANAGER).then_some(self.profile_id.as_str())
    }
}

/// A soft RDMA link the daemon remembers and re-creates (root `SoftLinks`, `a(sss)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct SoftLink {
    /// The RDMA device's name.
    pub name: String,
    /// "rxe" or "siw".
    pub kind: String,
    /// The network interface it runs over.
    pub netdev: String,
}

/// A naming rule of a udev rules file (root `IpoibNames`, `RdmaFixedNames`, `a(ssbu)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct NameRule {
    /// The port GUID (`IpoibNames`) or node GUID (`RdmaFixedNames`), as ibstat prints it.
    pub guid: String,
    /// The interface or device name the rule gives.
    pub name: String,
    /// In the daemon's block: rules not managed are the users' own and never rewritten.
    pub managed: bool,
    /// The line number in the rules file.
    pub line: u32,
}

/// Whether the published state may be behind the kernel (root `StateStale`, `(bst)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct StateStale {
    /// True while the daemon cannot re-read the host (out of file descriptors, for one).
    pub stale: bool,
    /// Why, in words; "" when current.
    pub reason: String,
    /// When it became stale, in microseconds since the Unix epoch; 0 when current.
    pub since_us: u64,
}

/// One row of the root's `PreviewRdmaNames` (`a(sssbs)`): what a policy would name a device.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct NamePreview {
    /// The device's name now.
    pub device: String,
    /// NAME_KERNEL, NAME_ONBOARD, NAME_PCI, NAME_GUID, NAME_FALLBACK or NAME_FIXED.
    pub policy: String,
    /// The name rdma_rename gives, or "" when it gives none.
    pub name: String,
    /// What the rules in force do when the device is next added.
    pub active: bool,
    /// Why there is no name, or what to know about it.
    pub reason: String,
}

/// One used entry of a port's GID table (Port `Gids`, `a(usss)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct Gid {
    /// The entry's index in the table.
    pub index: u32,
    /// The GID as sysfs prints it (eight groups of four hex digits).
    pub gid: String,
    /// `IB/RoCE v1`, `RoCE v2`, or empty.
    pub gid_type: String,
    /// The netdev of a RoCE GID; empty on InfiniBand.
    pub netdev: String,
}

/// One non-zero entry of a port's P_Key table (Port `Pkeys`, `a(uq)`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue,
)]
#[zvariant(crate = "zbus::zvariant")]
pub struct Pkey {
    pub index: u32,
    /// With the full-membership bit 0x8000.
    pub pkey: u16,
}

/// A P_Key child ipoib.toml remembers on a port's own interface and re-creates when it
/// appears (Ipoib `PersistedChildren`, `a(qs)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct PersistedChild {
    /// With the full-membership bit 0x8000.
    pub pkey: u16,
    /// The child's interface name.
    pub name: String,
}

/// A remembered P_Key child moved into a NetworkManager profile (Network
/// `MoveToNetworkManager`'s second out argument, `a(ss)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct MovedChild {
    pub interface: String,
    /// The id of the profile made for it.
    pub profile: String,
}

/// A remembered P_Key child a move left alone (Network `MoveToNetworkManager`'s third out
/// argument, `a(ss)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct LeftChild {
    pub interface: String,
    /// Why it was not moved, in words.
    pub reason: String,
}

/// One setting a state document changes (root `DiffState`, `ApplyState`, `a(sssss)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct StateChange {
    /// The setting's key path: `soft-links[rxe0]`, `roce[mlx5_0/1].tos`, `memlock.soft`.
    pub path: String,
    /// "add", "remove" or "set".
    pub op: String,
    /// The value now, as text; empty when there is none.
    pub current: String,
    /// The value wanted, as text; empty when the setting goes.
    pub wanted: String,
    /// The polkit action the change asks.
    pub action: String,
}

/// One port's counters in the root's `GetAllCounters` (`a(osba{st})`): what `Port.GetCounters`
/// gives, with the port's object first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type)]
#[zvariant(crate = "zbus::zvariant")]
pub struct PortCounters {
    pub port: OwnedObjectPath,
    /// The counter source: pma64, pma32, hw_counters, netdev or none.
    pub source: String,
    /// A 32-bit PMA data or packet counter sits at all ones.
    pub saturated: bool,
    /// The counters by name, as `Port.GetCounters` names them.
    pub counters: std::collections::HashMap<String, u64>,
}

/// The outcome of one file of the state directory at start (root `StateDirectory`,
/// `a(ssss)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct StateFile {
    /// The file's path.
    pub file: String,
    /// "applied", "unchanged", "refused" or "rolled-back".
    pub outcome: String,
    /// What changed, in words: "3 changes", "no change".
    pub summary: String,
    /// The refusal or failure; empty when applied or unchanged.
    pub message: String,
}

/// The verdict on one expectation of a health check for one subject (root `CheckHealth`,
/// `a(ssbsss)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct HealthCheck {
    /// The expectation's key in the health section: `present`, `state`, `phys-state`,
    /// `min-rate-gbps`, `link-layer`, `mtu`, `min-ports`, `firmware-equal`,
    /// `error-counters`, `flaps`.
    pub expectation: String,
    /// What it concerns: a port (`mlx5_0/1`), a device, a board (`board MT_0000000223`) or
    /// `host`.
    pub subject: String,
    /// Whether the expectation holds.
    pub passed: bool,
    /// What was found, as text.
    pub observed: String,
    /// What was expected, as text.
    pub expected: String,
    /// One sentence saying both.
    pub message: String,
}

/// One link test's outcome (Port `TestLink`, root `RecentLinkTests`,
/// `(sssbssttdddddttsusisssyus)`): the measures, why it failed, and the path it took.
/// Latencies are one-way (half a round trip, as perftest reports them) for `rdma`, round trips
/// for `icmp`; zero where the test measured none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct LinkTestResult {
    /// "rdma", "icmp" or "ibping".
    pub kind: String,
    /// The peer as given (address, GID).
    pub peer: String,
    /// The IP address the tools were pointed at; the LID, in decimal, for ibping.
    pub address: String,
    pub passed: bool,
    /// Empty when passed; else port-down, no-route, no-responder, rejected, timeout,
    /// tool-failed or unexpected-output.
    pub reason: String,
    /// What happened, in words.
    pub detail: String,
    /// When the test started, µs since the Unix epoch.
    pub started_us: u64,
    /// How long it ran, in ms.
    pub elapsed_ms: u64,
    pub latency_p50_us: f64,
    pub latency_p99_us: f64,
    pub latency_max_us: f64,
    pub latency_avg_us: f64,
    /// Average bandwidth in Gb/s (10^9 bits); 0 for icmp.
    pub bandwidth_gbps: f64,
    /// Round trips measured.
    pub round_trips: u64,
    /// Probes that failed: echo requests or pings unanswered (icmp, ibping); 0 for a completed rdma test,
    /// which perftest aborts at the first failed completion.
    pub errors: u64,
    /// The RDMA device and port tested from.
    pub device: String,
    pub port: u32,
    /// The port's netdev.
    pub netdev: String,
    /// The GID table entry the connection used; -1 when not known (icmp, or no entry
    /// matched).
    pub gid_index: i32,
    pub gid: String,
    /// "IB/RoCE v1", "RoCE v2" or empty.
    pub gid_type: String,
    /// rdma_cm's default RoCE mode of the port ("v1", "v2"), empty off RoCE.
    pub roce_mode: String,
    /// rdma_cm's default type of service of the port.
    pub tos: u8,
    /// The path MTU of the connection (rdma), the netdev's MTU (icmp) or the port's active IB MTU
    /// (ibping), bytes.
    pub mtu: u32,
    /// The tools run, as "ib_send_lat+ib_send_bw", "ping" or "ibping".
    pub tool: String,
}

/// The link-test responder (root `GetLinkResponder`, `(bbutsqq)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct LinkResponder {
    /// Whether it is enabled (remembered in /etc/rdma-manager/link-test.toml).
    pub enabled: bool,
    /// Whether both of its servers are running now.
    pub running: bool,
    /// Times a server was started again after it ended (after each test it served, or
    /// after a failure).
    pub restarts: u32,
    /// Tests served to their end (a server that exited with success).
    pub served: u64,
    /// The last failure of a server, in words; empty when none.
    pub detail: String,
    /// The rdma_cm port of the latency server (ib_send_lat).
    pub latency_port: u16,
    /// The rdma_cm port of the bandwidth server (ib_send_bw).
    pub bandwidth_port: u16,
}

/// An SR-IOV VF of a PF with its GUIDs (Device `VfGuids`, `a(usssss)`). GUIDs are written
/// as `ip link` writes them (`00:11:22:33:44:55:66:77`); empty when there is none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct VfGuid {
    /// The VF index (`ip link set <pf> vf N`).
    pub vf: u32,
    /// The VF's PCI address; empty when the VF is not enabled.
    pub pci_address: String,
    /// What the PF's driver holds now.
    pub node_guid: String,
    pub port_guid: String,
    /// What vf-guids.toml remembers and sets again when the VF appears.
    pub remembered_node_guid: String,
    pub remembered_port_guid: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wire format is the XML's: each struct is the tuple busctl users read.
    #[test]
    fn signatures_are_the_documented_tuples() {
        assert_eq!(RdmaModule::SIGNATURE.to_string(), "(sssbbu)");
        assert_eq!(UnitState::SIGNATURE.to_string(), "(sss)");
        assert_eq!(PortCounters::SIGNATURE.to_string(), "(osba{st})");
        assert_eq!(ManagedLimits::SIGNATURE.to_string(), "(ss)");
        assert_eq!(SubnetManager::SIGNATURE.to_string(), "(ossus)");
        assert_eq!(HostStep::SIGNATURE.to_string(), "(sss)");
        assert_eq!(Owner::SIGNATURE.to_string(), "(sss)");
        assert_eq!(SoftLink::SIGNATURE.to_string(), "(sss)");
        assert_eq!(NameRule::SIGNATURE.to_string(), "(ssbu)");
        assert_eq!(StateStale::SIGNATURE.to_string(), "(bst)");
        assert_eq!(NamePreview::SIGNATURE.to_string(), "(sssbs)");
        assert_eq!(Gid::SIGNATURE.to_string(), "(usss)");
        assert_eq!(Pkey::SIGNATURE.to_string(), "(uq)");
        assert_eq!(PersistedChild::SIGNATURE.to_string(), "(qs)");
        assert_eq!(MovedChild::SIGNATURE.to_string(), "(ss)");
        assert_eq!(LeftChild::SIGNATURE.to_string(), "(ss)");
        assert_eq!(StateChange::SIGNATURE.to_string(), "(sssss)");
        assert_eq!(StateFile::SIGNATURE.to_string(), "(ssss)");
        assert_eq!(HealthCheck::SIGNATURE.to_string(), "(ssbsss)");
        assert_eq!(
            LinkTestResult::SIGNATURE.to_string(),
            "(sssbssttdddddttsusisssyus)"
        );
        assert_eq!(LinkResponder::SIGNATURE.to_string(), "(bbutsqq)");
        assert_eq!(VfGuid::SIGNATURE.to_string(), "(usssss)");
        assert_eq!(
            <Vec<SubnetManager>>::SIGNATURE.to_string(),
            <Vec<(OwnedObjectPath, String, String, u32, String)>>::SIGNATURE.to_string()
        );
    }

    /// A struct property decodes from the tuple an older peer or busctl sends.
    #[test]
    fn a_tuple_value_decodes_into_the_struct() {
        let v = Value::from((
            "loaded".to_string(),
            "active".to_string(),
            "enabled".to_string(),
        ));
        let owned = OwnedValue::try_from(v).expect("owned");
        let u = UnitState::try_from(owned).expect("decode");
        assert!(u.active() && u.enabled() && u.installed());

        let v = Value::from((
            "networkmanager".to_string(),
            "storage".to_string(),
            "5f0c".to_string(),
        ));
        let o = Owner::try_from(OwnedValue::try_from(v).expect("owned")).expect("decode");
        assert_eq!(o, Owner::network_manager("storage", "5f0c"));
        assert_eq!(o.nm_profile(), Some("storage"));

        let v = Value::from(vec![(
            "0x0002c90300a0b0c1".to_string(),
            "ib-a".to_string(),
            true,
            12u32,
        )]);
        let rules =
            <Vec<NameRule>>::try_from(OwnedValue::try_from(v).expect("owned")).expect("decode");
        assert_eq!(
            rules,
            [NameRule {
                guid: "0x0002c90300a0b0c1".into(),
                name: "ib-a".into(),
                managed: true,
                line: 12
            }]
        );
    }
}

/// A RoCE port's QoS profile (`Port.GetQosProfile`, `Port.SetQosProfile`,
/// `(sayayaya(yy)ii)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Type, Value, OwnedValue)]
#[zvariant(crate = "zbus::zvariant")]
pub struct QosProfile {
    /// "pcp" or "dscp": what a received packet's priority is taken from.
    pub trust: String,
    /// Priorities with priority flow control (lossless), 0 to 7.
    pub pfc: Vec<u8>,
    /// ETS bandwidth percent of traffic classes 0 to 7 (summing to 100); empty: ETS left
    /// as it is (on a set) or not reported (on a read).
    pub ets_bandwidth: Vec<u8>,
    /// The traffic class of priorities 0 to 7; empty exactly when `ets_bandwidth` is.
    pub ets_prio_tc: Vec<u8>,
    /// DSCP code point to priority.
    pub dscp: Vec<(u8, u8)>,
    /// mlx5's RoCE traffic class (`tc/1/traffic_class`), 0 to 255; -1: left as it is (on a
    /// set) or none (on a read).
    pub traffic_class: i32,
    /// Bit p: RoCE ECN (notification and reaction point) on priority p; -1: left as it is
    /// (on a set) or not offered by the driver (on a read).
    pub ecn: i32,
}
