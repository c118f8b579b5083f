//! The client's copy of what rdma-managerd publishes: the root's properties and one typed record
//! per Device, Port and Ipoib object, kept current by applying the service's signals
//! ([`crate::client::Update`]). Views render from this and nothing else, so the same views can
//! be drawn from a recorded model in tests.

use std::collections::{BTreeMap, HashMap, VecDeque};

use rdma_manager_dbus::proxies::{sample_flags, HistorySample};
use serde::{Deserialize, Serialize};

/// The interfaces' structured values, as the service writes them.
pub use rdma_manager_dbus::types::{Gid, NameRule, Owner, PersistedChild, Pkey, SoftLink, VfGuid};
/// The Host object's structured values, as the service writes them.
pub use rdma_manager_dbus::types::{ManagedLimits, RdmaModule, SubnetManager, UnitState};
use zbus::zvariant::OwnedValue;

/// Interface names, as the service publishes them.
pub const MANAGER_IFACE: &str = "org.rdmamanager.RdmaManager1";
pub const DEVICE_IFACE: &str = "org.rdmamanager.RdmaManager1.Device";
pub const PORT_IFACE: &str = "org.rdmamanager.RdmaManager1.Port";
pub const IPOIB_IFACE: &str = "org.rdmamanager.RdmaManager1.Ipoib";
pub const HOST_IFACE: &str = "org.rdmamanager.RdmaManager1.Host";
pub const NETWORK_IFACE: &str = "org.rdmamanager.RdmaManager1.Network";

/// The records of the service's objects, one field per property, generated from the
/// interfaces' XML: a property the service adds reaches them with no edit here.
pub use rdma_manager_dbus::records::{
    Device, HostSetup, Ipoib, Manager, PendingChange, Port, PropertyError,
};

/// One throughput sample of a port.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Microseconds since the epoch.
    pub time_us: u64,
    pub tx_bytes: f64,
    pub rx_bytes: f64,
    pub tx_packets: f64,
    pub rx_packets: f64,
    /// A 32-bit counter saturated: the rate is a lower bound.
    pub saturated: bool,
}

impl Sample {
    /// `None` for a tick without a rate (flag NO_DATA), which the history leaves out too.
    pub fn from_wire(s: HistorySample) -> Option<Sample> {
        let (time_us, tx_bytes, rx_bytes, tx_packets, rx_packets, flags) = s;
        if flags & sample_flags::NO_DATA != 0 {
            return None;
        }
        Some(Sample {
            time_us,
            tx_bytes,
            rx_bytes,
            tx_packets,
            rx_packets,
            saturated: flags & sample_flags::SATURATED != 0,
        })
    }
}

/// A port's throughput history: the daemon's 5 minutes at start, then each signalled sample.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct History {
    pub samples: VecDeque<Sample>,
}

impl History {
    /// Appends a sample, keeping at most `capacity` and time order (a sample older than the
    /// newest, e.g. a signal that raced the initial history read, is dropped).
    pub fn push(&mut self, s: Sample, capacity: usize) {
        if self.samples.back().is_some_and(|b| b.time_us >= s.time_us) {
            return;
        }
        self.samples.push_back(s);
        while self.samples.len() > capacity.max(1) {
            self.samples.pop_front();
        }
    }

    /// The newest sample.
    pub fn last(&self) -> Option<&Sample> {
        self.samples.back()
    }
}

/// A port's coarse history: the daemon's averages at start, then the client's own averages
/// of the fine samples as they leave the fine history, so that the two meet without asking
/// the daemon again.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CoarseHistory {
    pub samples: VecDeque<Sample>,
    /// Fine samples of the period after the newest average, and when that period ends.
    pending: Vec<Sample>,
    pending_end: Option<u64>,
}

impl CoarseHistory {
    /// The end of the period (`period_us` long) a sample at `t` falls in: periods follow
    /// the newest average's, else they are aligned to multiples of `period_us`.
    fn period_end(&self, t: u64, period_us: u64) -> u64 {
        match self.samples.back() {
            Some(b) => b.time_us + period_us * (t.saturating_sub(b.time_us)).div_ceil(period_us),
            None => t.div_ceil(period_us) * period_us,
        }
    }

    /// Takes a fine sample that left the fine history. When it falls in a later period than
    /// the samples waiting, theirs is averaged first (over the samples there are, as the
    /// daemon averages; an average is stamped at its period's end).
    pub fn fold(&mut self, s: Sample, period_us: u64, capacity: usize) {
        let period_us = period_us.max(1);
        if self.samples.back().is_some_and(|b| s.time_us <= b.time_us) {
            return; // the daemon's averages cover it
        }
        let end = self.period_end(s.time_us, period_us);
        if self.pending_end.is_some_and(|e| e != end) {
            self.close(capacity);
        }
        self.pending_end = Some(end);
        self.pending.push(s);
    }

    fn close(&mut self, capacity: usize) {
        let Some(end) = self.pending_end.take() else {
            return;
        };
        let n = self.pending.len().max(1) as f64;
        let avg = |f: fn(&Sample) -> f64| self.pending.iter().map(f).sum::<f64>() / n;
        let s = Sample {
            time_us: end,
            tx_bytes: avg(|s| s.tx_bytes),
            rx_bytes: avg(|s| s.rx_bytes),
            tx_packets: avg(|s| s.tx_packets),
            rx_packets: avg(|s| s.rx_packets),
            saturated: self.pending.iter().any(|s| s.saturated),
        };
        self.pending.clear();
        self.samples.push_back(s);
        while self.samples.len() > capacity.max(1) {
            self.samples.pop_front();
        }
    }
}

/// Counters of a port as `Port.GetCounters` returned them, and the reading before.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    pub source: String,
    pub saturated: bool,
    pub values: BTreeMap<String, u64>,
    /// Counter names whose value rose since the previous reading.
    pub rising: Vec<String>,
}

impl Counters {
    /// The PMA error counters (the ones worth highlighting when they rise).
    pub const ERRORS: &'static [&'static str] = &[
        "symbol_error",
        "link_error_recovery",
        "link_downed",
        "port_rcv_errors",
        "port_rcv_remote_physical_errors",
        "port_rcv_switch_relay_errors",
        "port_xmit_discards",
        "port_xmit_constraint_errors",
        "port_rcv_constraint_errors",
        "local_link_integrity_errors",
        "excessive_buffer_overrun_errors",
        "VL15_dropped",
        "port_xmit_wait",
    ];

    /// True for an error counter.
    pub fn is_error(name: &str) -> bool {
        Self::ERRORS.contains(&name) || name.contains("err") || name.contains("drop")
    }

    /// A new reading, noting what rose since `previous`.
    pub fn next(
        previous: Option<&Counters>,
        source: String,
        saturated: bool,
        values: BTreeMap<String, u64>,
    ) -> Counters {
        let rising = match previous {
            Some(p) => values
                .iter()
                .filter(|(k, v)| p.values.get(*k).is_some_and(|old| *v > old))
                .map(|(k, _)| k.clone())
                .collect(),
            None => Vec::new(),
        };
        Counters {
            source,
            saturated,
            values,
            rising,
        }
    }
}

/// Everything the client knows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub manager: Manager,
    pub devices: BTreeMap<String, Device>,
    pub ports: BTreeMap<String, Port>,
    pub ipoib: BTreeMap<String, Ipoib>,
    /// The Host object, once the service published it (a service without it: `None`).
    #[serde(default)]
    pub host_setup: Option<HostSetup>,
    #[serde(skip)]
    pub history: HashMap<String, History>,
    /// The coarse history (averages of 10 samples, an hour), kept up to date with the fine
    /// samples that leave `history` (see [`Model::add_samples`]).
    #[serde(skip)]
    pub history_coarse: HashMap<String, CoarseHistory>,
    #[serde(skip)]
    pub counters: HashMap<String, Counters>,
    /// Properties that could not be read, as "path: property: reason".
    #[serde(skip)]
    pub problems: Vec<String>,
    /// The bus answers but rdma-managerd is not on it (never started, or gone): an empty
    /// model is then no statement about the host.
    #[serde(skip)]
    pub service_missing: bool,
    /// The last node health check (`CheckHealth` of the state directory's expectations),
    /// once one answered.
    #[serde(skip)]
    pub health: Option<Health>,
    /// The link tests running now, by port path, as `Port.LinkTestProgress` told them (any
    /// client's): the stage and the result so far. Gone at stage `done`.
    #[serde(skip)]
    pub link_tests_running: HashMap<String, LiveLinkTest>,
}

/// A link test as it goes (see [`Model::link_tests_running`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LiveLinkTest {
    pub stage: rdma_manager_model::linktest::Stage,
    pub result: rdma_manager_dbus::types::LinkTestResult,
}

/// The verdict of a node health check, as the Overview shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Every expectation checked: how many, and the failed ones' messages (expectation and
    /// subject first), in the daemon's order.
    Checked { checks: usize, failed: Vec<String> },
    /// Nothing to check, or the check failed: why.
    Unavailable(String),
}

impl Health {
    /// The verdict of CheckHealth's answer.
    pub fn of(rows: &[rdma_manager_dbus::types::HealthCheck]) -> Health {
        Health::Checked {
            checks: rows.len(),
            failed: rows
                .iter()
                .filter(|r| !r.passed)
                .map(|r| format!("{} {}: {}", r.expectation, r.subject, r.message))
                .collect(),
        }
    }
}

/// One object's interfaces and their properties, as GetManagedObjects and InterfacesAdded
/// carry them.
pub type Interfaces = HashMap<String, HashMap<String, OwnedValue>>;

impl Model {
    /// How many samples a port's history keeps: the daemon's own length (5 minutes).
    pub fn history_capacity(&self) -> usize {
        match self.manager.history_length {
            0 => 300,
            n => n as usize,
        }
    }

    /// How many averages a port's coarse history keeps: the daemon's own length (an hour).
    pub fn coarse_capacity(&self) -> usize {
        match self.manager.coarse_history_length {
            0 => 360,
            n => n as usize,
        }
    }

    /// The period of one coarse average: the daemon's, else 10 sampling periods.
    pub fn coarse_interval_us(&self) -> u64 {
        match self.manager.coarse_interval_us {
            0 => 10 * self.manager.sample_interval_us.max(1),
            n => n,
        }
    }

    /// Records a port's coarse history as `GetThroughputHistoryCoarse` returned it.
    pub fn set_history_coarse(&mut self, port: &str, samples: Vec<HistorySample>) {
        let capacity = self.coarse_capacity();
        let mut h = CoarseHistory::default();
        for s in samples.into_iter().filter_map(Sample::from_wire) {
            if h.samples.back().is_none_or(|b| b.time_us < s.time_us) {
                h.samples.push_back(s);
            }
        }
        while h.samples.len() > capacity {
            h.samples.pop_front();
        }
        self.history_coarse.insert(port.to_string(), h);
    }

    /// Adds or updates an object from its interfaces.
    pub fn add_object(&mut self, path: &str, interfaces: &Interfaces) {
        for (iface, props) in interfaces {
            self.set_properties(path, iface, props.iter());
        }
    }

    /// Removes the interfaces `ifaces` of the object at `path`.
    pub fn remove_object(&mut self, path: &str, ifaces: &[String]) {
        for iface in ifaces {
            match iface.as_str() {
                DEVICE_IFACE => {
                    self.devices.remove(path);
                }
                PORT_IFACE => {
                    self.ports.remove(path);
                    self.link_tests_running.remove(path);
                    self.history.remove(path);
                    self.history_coarse.remove(path);
                    self.counters.remove(path);
                }
                IPOIB_IFACE => {
                    self.ipoib.remove(path);
                }
                HOST_IFACE if self.host_setup.as_ref().is_some_and(|h| h.path == path) => {
                    self.host_setup = None;
                }
                _ => {}
            }
        }
    }

    /// A link test from `port` reached `stage`: kept while it runs, dropped when done (or
    /// at a stage this client does not know).
    pub fn link_test_progress(
        &mut self,
        port: &str,
        stage: &str,
        result: rdma_manager_dbus::types::LinkTestResult,
    ) {
        use rdma_manager_model::linktest::Stage;
        match Stage::parse(stage) {
            Some(stage @ (Stage::Running | Stage::Bandwidth)) => {
                self.link_tests_running
                    .insert(port.to_string(), LiveLinkTest { stage, result });
            }
            Some(Stage::Done) | None => {
                self.link_tests_running.remove(port);
            }
        }
    }

    /// Applies changed properties of one interface of one object (creating its record).
    pub fn set_properties<'a>(
        &mut self,
        path: &str,
        iface: &str,
        props: impl Iterator<Item = (&'a String, &'a OwnedValue)>,
    ) {
        let mut problems = Vec::new();
        macro_rules! apply {
            ($map:expr) => {{
                let rec = $map.entry(path.to_string()).or_default();
                rec.path = path.to_string();
                for (name, value) in props {
                    if let Err(e) = rec.set(name, value) {
                        problems.push(format!("{path}: {e}"));
                    }
                }
            }};
        }
        match iface {
            MANAGER_IFACE => {
                self.manager.path = path.to_string();
                for (name, value) in props {
                    if let Err(e) = self.manager.set(name, value) {
                        problems.push(format!("{path}: {e}"));
                    }
                }
            }
            DEVICE_IFACE => apply!(self.devices),
            PORT_IFACE => apply!(self.ports),
            IPOIB_IFACE => apply!(self.ipoib),
            HOST_IFACE => {
                let host = self.host_setup.get_or_insert_with(HostSetup::default);
                host.path = path.to_string();
                for (name, value) in props {
                    if let Err(e) = host.set(name, value) {
                        problems.push(format!("{path}: {e}"));
                    }
                }
            }
            _ => {}
        }
        // The same bad value sent again is one problem, not a growing list.
        for p in problems {
            if !self.problems.contains(&p) {
                self.problems.push(p);
            }
        }
    }

    /// Records a port's history as `GetThroughputHistory` returned it.
    pub fn set_history(&mut self, port: &str, samples: Vec<HistorySample>) {
        let capacity = self.history_capacity();
        let h = self.history.entry(port.to_string()).or_default();
        let mut fresh = History::default();
        for s in samples.into_iter().filter_map(Sample::from_wire) {
            fresh.push(s, capacity);
        }
        // Samples signalled while the history was being read come after it.
        for s in std::mem::take(&mut h.samples) {
            fresh.push(s, capacity);
        }
        *h = fresh;
    }

    /// Appends one signalled sample of every port; the samples that leave the fine history
    /// go into the coarse one's averages.
    pub fn add_samples(&mut self, time_us: u64, samples: &[(String, f64, f64, f64, f64, u8)]) {
        let capacity = self.history_capacity();
        let (coarse_cap, period) = (self.coarse_capacity(), self.coarse_interval_us());
        for (port, tx, rx, txp, rxp, flags) in samples {
            if let Some(s) = Sample::from_wire((time_us, *tx, *rx, *txp, *rxp, *flags)) {
                let h = self.history.entry(port.clone()).or_default();
                h.push(s, capacity + 1);
                if h.samples.len() > capacity {
                    if let Some(old) = h.samples.pop_front() {
                        self.history_coarse
                            .entry(port.clone())
                            .or_default()
                            .fold(old, period, coarse_cap);
                    }
                }
            }
        }
    }

    /// Records a counter reading of a port.
    pub fn set_counters(
        &mut self,
        port: &str,
        source: String,
        saturated: bool,
        values: BTreeMap<String, u64>,
    ) {
        let next = Counters::next(self.counters.get(port), source, saturated, values);
        self.counters.insert(port.to_string(), next);
    }

    /// Devices in kernel index order.
    pub fn devices_in_order(&self) -> Vec<&Device> {
        let mut v: Vec<&Device> = self.devices.values().collect();
        v.sort_by(|a, b| a.index.cmp(&b.index).then(a.name.cmp(&b.name)));
        v
    }

    /// A device's ports in port number order (those the model has).
    pub fn ports_of(&self, device: &Device) -> Vec<&Port> {
        let mut v: Vec<&Port> = device
            .ports
            .iter()
            .filter_map(|p| self.ports.get(p))
            .collect();
        v.sort_by_key(|p| p.number);
        v
    }

    /// Every port, by device index then number.
    pub fn ports_in_order(&self) -> Vec<&Port> {
        self.devices_in_order()
            .into_iter()
            .flat_map(|d| self.ports_of(d))
            .collect()
    }

    /// IPoIB interfaces: each port's own interface followed by its children, by name.
    pub fn ipoib_in_order(&self) -> Vec<&Ipoib> {
        let mut parents: Vec<&Ipoib> = self.ipoib.values().filter(|i| !i.is_child()).collect();
        parents.sort_by(|a, b| a.name.cmp(&b.name));
        let mut out = Vec::with_capacity(self.ipoib.len());
        for p in parents {
            out.push(p);
            let mut kids: Vec<&Ipoib> = self
                .ipoib
                .values()
                .filter(|i| i.is_child() && i.parent_name == p.name)
                .collect();
            kids.sort_by_key(|i| i.pkey);
            out.extend(kids);
        }
        // Children whose parent is not (yet) known still show.
        let mut orphans: Vec<&Ipoib> = self
            .ipoib
            .values()
            .filter(|i| i.is_child() && !out.iter().any(|o| o.path == i.path))
            .collect();
        orphans.sort_by(|a, b| a.name.cmp(&b.name));
        out.extend(orphans);
        out
    }

    /// The IPoIB interfaces that carry a port (its own and its children).
    pub fn ipoib_of_port(&self, port: &str) -> Vec<&Ipoib> {
        let mut v: Vec<&Ipoib> = self.ipoib.values().filter(|i| i.port == port).collect();
        v.sort_by(|a, b| a.is_child().cmp(&b.is_child()).then(a.name.cmp(&b.name)));
        v
    }

    /// The device a port belongs to.
    pub fn device_of(&self, port: &Port) -> Option<&Device> {
        self.devices.get(&port.device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zbus::zvariant::Value;

    fn val<'a>(v: impl Into<Value<'a>>) -> OwnedValue {
        OwnedValue::try_from(v.into()).expect("owned")
    }

    #[test]
    fn properties_fill_records_and_bad_types_are_reported() {
        let mut m = Model::default();
        let path = "/org/rdmamanager/RdmaManager1/Device/0/Port/1".to_string();
        let props: HashMap<String, OwnedValue> = HashMap::from([
            ("State".to_string(), val("ACTIVE")),
            ("Lid".to_string(), val(7u32)),
            (
                "Gids".to_string(),
                val(vec![(
                    0u32,
                    "fe80::1".to_string(),
                    "RoCE v2".to_string(),
                    "eth0".to_string(),
                )]),
            ),
            ("SmLid".to_string(), val("not a number")),
            ("Future".to_string(), val(1u8)),
        ]);
        m.set_properties(&path, PORT_IFACE, props.iter());
        let p = &m.ports[&path];
        assert_eq!(p.state, "ACTIVE");
        assert_eq!(p.lid, 7);
        assert_eq!(p.gids[0].gid_type, "RoCE v2");
        assert_eq!(p.sm_lid, 0);
        assert_eq!(m.problems.len(), 1, "{:?}", m.problems);
        assert!(m.problems[0].contains("SmLid"));
        m.remove_object(&path, &[PORT_IFACE.to_string()]);
        assert!(m.ports.is_empty());
    }

    #[test]
    fn host_properties_fill_the_host_record() {
        let mut m = Model::default();
        let path = rdma_manager_dbus::HOST_PATH;
        let port = zbus::zvariant::OwnedObjectPath::try_from(
            "/org/rdmamanager/RdmaManager1/Device/1/Port/1",
        )
        .expect("path");
        let props: HashMap<String, OwnedValue> = HashMap::from([
            (
                "Modules".to_string(),
                val(vec![(
                    "rdma".to_string(),
                    "rds_rdma".to_string(),
                    "RDS over RDMA support".to_string(),
                    false,
                    false,
                    18u32,
                )]),
            ),
            ("ModulesUnit".to_string(), val("active")),
            ("MemlockSoft".to_string(), val("unlimited")),
            ("MemlockHard".to_string(), val("")),
            (
                "MemlockOrigin".to_string(),
                val(HashMap::from([(
                    "soft".to_string(),
                    "/etc/security/limits.d/zz-rdma-manager.conf:5".to_string(),
                )])),
            ),
            (
                "MemlockManaged".to_string(),
                val(("unlimited".to_string(), "unlimited".to_string())),
            ),
            ("MemlockNotes".to_string(), val(vec!["a note".to_string()])),
            ("NfsRdma".to_string(), val(true)),
            ("NfsRdmaPort".to_string(), val(20049u16)),
            (
                "NfsServer".to_string(),
                val((
                    "not-found".to_string(),
                    "inactive".to_string(),
                    String::new(),
                )),
            ),
            ("Firewalld".to_string(), val(true)),
            (
                "Opensm".to_string(),
                val((
                    "loaded".to_string(),
                    "active".to_string(),
                    "enabled".to_string(),
                )),
            ),
            (
                "SubnetManagers".to_string(),
                val(vec![(
                    port,
                    "mlx5_0/1".to_string(),
                    "INIT".to_string(),
                    0u32,
                    "stuck-init".to_string(),
                )]),
            ),
        ]);
        m.set_properties(path, HOST_IFACE, props.iter());
        assert!(m.problems.is_empty(), "{:?}", m.problems);
        let h = m.host_setup.clone().unwrap_or_default();
        assert_eq!(h.path, path);
        assert_eq!(h.modules[0].module, "rds_rdma");
        assert_eq!(h.modules[0].line, 18);
        assert_eq!(h.memlock_managed.hard, "unlimited");
        assert_eq!(h.nfs_rdma_port, 20049);
        assert!(!h.nfs_server.installed());
        assert!(h.opensm.active() && h.opensm.enabled());
        assert_eq!(h.subnet_managers[0].verdict, "stuck-init");
        assert_eq!(h.subnet_managers[0].name, "mlx5_0/1");
        // Only what changed: the rest stays.
        let changed = HashMap::from([("NfsRdma".to_string(), val(false))]);
        m.set_properties(path, HOST_IFACE, changed.iter());
        let h = m.host_setup.clone().unwrap_or_default();
        assert!(!h.nfs_rdma);
        assert_eq!(h.modules.len(), 1);
        // A wrong type is reported, not applied.
        let bad = HashMap::from([("NfsRdmaPort".to_string(), val("x"))]);
        m.set_properties(path, HOST_IFACE, bad.iter());
        assert_eq!(m.problems.len(), 1);
        m.remove_object(path, &[HOST_IFACE.to_string()]);
        assert!(m.host_setup.is_none());
    }

    #[test]
    fn history_keeps_order_and_capacity_and_skips_no_data() {
        let mut m = Model::default();
        m.manager.history_length = 3;
        let p = "/p";
        m.add_samples(5, &[(p.to_string(), 1.0, 2.0, 0.0, 0.0, 0)]);
        m.set_history(
            p,
            vec![
                (1, 1.0, 1.0, 0.0, 0.0, 0),
                (2, 1.0, 1.0, 0.0, 0.0, sample_flags::NO_DATA),
                (3, 1.0, 1.0, 0.0, 0.0, sample_flags::SATURATED),
                (4, 1.0, 1.0, 0.0, 0.0, 0),
            ],
        );
        let times: Vec<u64> = m.history[p].samples.iter().map(|s| s.time_us).collect();
        assert_eq!(times, vec![3, 4, 5]);
        assert!(m.history[p].samples[0].saturated);
        m.add_samples(4, &[(p.to_string(), 1.0, 2.0, 0.0, 0.0, 0)]);
        assert_eq!(m.history[p].last().map(|s| s.time_us), Some(5));
    }

    /// The coarse history goes on from the daemon's averages with the client's own
    /// averages of the fine samples that leave the fine history, period by period.
    #[test]
    fn fine_samples_leaving_the_history_extend_the_coarse_one() {
        let mut m = Model::default();
        m.manager.history_length = 2;
        m.manager.coarse_history_length = 3;
        m.manager.coarse_interval_us = 10;
        let p = "/p";
        m.set_history_coarse(
            p,
            vec![
                (10, 5.0, 5.0, 0.0, 0.0, 0),
                (20, 0.0, 0.0, 0.0, 0.0, sample_flags::NO_DATA),
                (30, 7.0, 7.0, 0.0, 0.0, 4),
            ],
        );
        assert_eq!(m.history_coarse[p].samples.len(), 2, "the gap is left out");
        // One a microsecond: 29 and 30 are covered by the daemon's average of 30; 31..=40
        // make the period ending at 40; 41 starts the next and closes it.
        for t in 29..=43 {
            m.add_samples(t, &[(p.to_string(), t as f64, 0.0, 0.0, 0.0, 0)]);
        }
        let c = &m.history_coarse[p].samples;
        let times: Vec<u64> = c.iter().map(|s| s.time_us).collect();
        assert_eq!(times, vec![10, 30, 40]);
        assert_eq!(c[2].tx_bytes, (31..=40).sum::<u64>() as f64 / 10.0);
        // A saturated sample makes its average a lower bound too.
        for t in 44..=60 {
            let fl = if t == 45 { sample_flags::SATURATED } else { 0 };
            m.add_samples(t, &[(p.to_string(), 1.0, 0.0, 0.0, 0.0, fl)]);
        }
        let c = &m.history_coarse[p].samples;
        let times: Vec<u64> = c.iter().map(|s| s.time_us).collect();
        assert_eq!(times, vec![30, 40, 50], "capacity 3: the oldest left");
        assert!(c[2].saturated);
        assert!(!c[1].saturated);
    }

    #[test]
    fn rising_counters_are_noted() {
        let mut m = Model::default();
        let v = |n| BTreeMap::from([("symbol_error".to_string(), n), ("x".to_string(), 1)]);
        m.set_counters("/p", "pma64".into(), false, v(1));
        assert!(m.counters["/p"].rising.is_empty());
        m.set_counters("/p", "pma64".into(), false, v(3));
        assert_eq!(m.counters["/p"].rising, vec!["symbol_error".to_string()]);
    }
}
