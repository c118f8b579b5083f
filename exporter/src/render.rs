//! A scrape as Prometheus text exposition (0.0.4) or OpenMetrics text (1.0.0).
//!
//! node_exporter's infiniband collector's metrics come first, with its names, types, help,
//! units and label sets (node_exporter 1.5, Debian 12's `prometheus-node-exporter`), so that
//! a dashboard or rule written for it works unchanged; then what it lacks, under `rdma_`
//! (docs/METRICS.md lists every metric and its source).

use std::fmt::Write;

use crate::collect::{Counters, Scrape};
use crate::model::{Link, PortView};

/// The exposition format of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `text/plain; version=0.0.4`
    Prometheus,
    /// `application/openmetrics-text; version=1.0.0`
    OpenMetrics,
}

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics when it names it, as Prometheus
    /// does by default; text otherwise.
    pub fn from_accept(accept: Option<&str>) -> Format {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Format::OpenMetrics,
            _ => Format::Prometheus,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
}

/// One metric family: its samples are written together under one HELP and TYPE.
struct Family {
    name: &'static str,
    help: &'static str,
    kind: Kind,
    samples: String,
}

/// The families of a scrape, in order.
struct Out {
    families: Vec<Family>,
}

impl Out {
    fn family(&mut self, name: &'static str, kind: Kind, help: &'static str) -> usize {
        if let Some(i) = self.families.iter().position(|f| f.name == name) {
            return i;
        }
        self.families.push(Family {
            name,
            help,
            kind,
            samples: String::new(),
        });
        self.families.len() - 1
    }

    fn sample(&mut self, family: usize, labels: &[(&str, &str)], value: impl Value) {
        let f = &mut self.families[family];
        f.samples.push_str(f.name);
        if !labels.is_empty() {
            f.samples.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    f.samples.push(',');
                }
                f.samples.push_str(k);
                f.samples.push_str("=\"");
                escape_label(&mut f.samples, v);
                f.samples.push('"');
            }
            f.samples.push('}');
        }
        f.samples.push(' ');
        value.write(&mut f.samples);
        f.samples.push('\n');
    }

    fn write(self, format: Format) -> String {
        let mut s =
            String::with_capacity(self.families.iter().map(|f| f.samples.len() + 128).sum());
        for f in self.families {
            if f.samples.is_empty() {
                continue;
            }
            // OpenMetrics names a counter family without the `_total` of its samples.
            let family_name = match (format, f.kind) {
                (Format::OpenMetrics, Kind::Counter) => {
                    f.name.strip_suffix("_total").unwrap_or(f.name)
                }
                _ => f.name,
            };
            let _ = writeln!(s, "# HELP {family_name} {}", escape_help(f.help));
            let kind = match f.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
            };
            let _ = writeln!(s, "# TYPE {family_name} {kind}");
            s.push_str(&f.samples);
        }
        if format == Format::OpenMetrics {
            s.push_str("# EOF\n");
        }
        s
    }
}

trait Value {
    fn write(self, s: &mut String);
}

impl Value for u64 {
    /// Digits written directly: most of a scrape's samples are integers, and the formatting
    /// machinery costs several times the digits.
    fn write(self, s: &mut String) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        let mut n = self;
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        // ASCII digits: always UTF-8.
        if let Ok(text) = std::str::from_utf8(&digits[i..]) {
            s.push_str(text);
        }
    }
}

impl Value for f64 {
    fn write(self, s: &mut String) {
        if self.is_nan() {
            s.push_str("NaN");
        } else if self.is_infinite() {
            s.push_str(if self > 0.0 { "+Inf" } else { "-Inf" });
        } else {
            let _ = write!(s, "{self}");
        }
    }
}

fn escape_label(s: &mut String, v: &str) {
    // Nearly every value (names, numbers, GUIDs) has nothing to escape: copied whole.
    if !v.bytes().any(|b| matches!(b, b'\\' | b'"' | b'\n')) {
        s.push_str(v);
        return;
    }
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
}

fn escape_help(h: &str) -> String {
    h.replace('\\', "\\\\").replace('\n', "\\n")
}

/// The PMA counters node_exporter 1.5 exports from `counters/`, by kernel file name: its
/// metric name (after `node_infiniband_`) and help. The data and packet counters come from
/// GetCounters' `tx_bytes`/`rx_bytes` (PMA words x 4, as node_exporter multiplies them) and
/// `tx_packets`/`rx_packets` when the port's source is the PMA.
const NODE_PMA: [(&str, &str, &str); 18] = [
    ("excessive_buffer_overrun_errors", "node_infiniband_excessive_buffer_overrun_errors_total", "Number of times that OverrunErrors consecutive flow control update periods occurred, each having at least one overrun error."),
    ("link_downed", "node_infiniband_link_downed_total", "Number of times the link failed to recover from an error state and went down"),
    ("link_error_recovery", "node_infiniband_link_error_recovery_total", "Number of times the link successfully recovered from an error state"),
    ("local_link_integrity_errors", "node_infiniband_local_link_integrity_errors_total", "Number of times that the count of local physical errors exceeded the threshold specified by LocalPhyErrors."),
    ("multicast_rcv_packets", "node_infiniband_multicast_packets_received_total", "Number of multicast packets received (including errors)"),
    ("multicast_xmit_packets", "node_infiniband_multicast_packets_transmitted_total", "Number of multicast packets transmitted (including errors)"),
    ("port_rcv_constraint_errors", "node_infiniband_port_constraint_errors_received_total", "Number of packets received on the switch physical port that are discarded"),
    ("port_xmit_constraint_errors", "node_infiniband_port_constraint_errors_transmitted_total", "Number of packets not transmitted from the switch physical port"),
    ("port_rcv_discards", "node_infiniband_port_discards_received_total", "Number of inbound packets discarded by the port because the port is down or congested"),
    ("port_xmit_discards", "node_infiniband_port_discards_transmitted_total", "Number of outbound packets discarded by the port because the port is down or congested"),
    ("port_rcv_errors", "node_infiniband_port_errors_received_total", "Number of packets containing an error that were received on this port"),
    ("port_xmit_wait", "node_infiniband_port_transmit_wait_total", "Number of ticks during which the port had data to transmit but no data was sent during the entire tick"),
    ("unicast_rcv_packets", "node_infiniband_unicast_packets_received_total", "Number of unicast packets received (including errors)"),
    ("unicast_xmit_packets", "node_infiniband_unicast_packets_transmitted_total", "Number of unicast packets transmitted (including errors)"),
    ("port_rcv_remote_physical_errors", "node_infiniband_port_receive_remote_physical_errors_total", "Number of packets marked with the EBP (End of Bad Packet) delimiter received on the port."),
    ("port_rcv_switch_relay_errors", "node_infiniband_port_receive_switch_relay_errors_total", "Number of packets that could not be forwarded by the switch."),
    ("symbol_error", "node_infiniband_symbol_error_total", "Number of minor link errors detected on one or more physical lanes."),
    ("VL15_dropped", "node_infiniband_vl15_dropped_total", "Number of incoming VL15 packets dropped due to resource limitations."),
];

/// node_exporter's data and packet counters, from GetCounters' own names.
const NODE_DATA: [(&str, &str, &str); 4] = [
    (
        "rx_bytes",
        "node_infiniband_port_data_received_bytes_total",
        "Number of data octets received on all links",
    ),
    (
        "tx_bytes",
        "node_infiniband_port_data_transmitted_bytes_total",
        "Number of data octets transmitted on all links",
    ),
    (
        "rx_packets",
        "node_infiniband_port_packets_received_total",
        "Number of packets received on all VLs by this port (including errors)",
    ),
    (
        "tx_packets",
        "node_infiniband_port_packets_transmitted_total",
        "Number of packets transmitted on all VLs from this port (including errors)",
    ),
];

/// The daemon's PhysState names in the order of their ids (1 to 7).
pub use rdma_manager_dbus::PORT_PHYS_STATES as PHYS_STATES;
/// The daemon's State names in the order of their InfiniBand ids (1 to 5).
pub use rdma_manager_dbus::PORT_STATES as STATES;

fn id_of(names: &[&str], name: &str) -> Option<u64> {
    names.iter().position(|n| *n == name).map(|i| i as u64 + 1)
}

/// A counter of the exporter's own that a scrape shows besides the data (its HTTP server's).
#[derive(Debug, Clone, Copy)]
pub struct OwnCounter {
    /// The sample's name, `_total` included.
    pub name: &'static str,
    pub help: &'static str,
    pub value: u64,
}

/// The whole scrape in `format`.
pub fn render(scrape: &Scrape, format: Format) -> String {
    render_with(scrape, format, &[])
}

/// The whole scrape in `format`, with `counters` after the data, named as the format wants
/// (OpenMetrics' TYPE and HELP lines without `_total`).
pub fn render_with(scrape: &Scrape, format: Format, counters: &[OwnCounter]) -> String {
    let mut o = Out {
        families: Vec::new(),
    };
    node_metrics(&mut o, scrape);
    own_metrics(&mut o, scrape);
    for c in counters {
        let f = o.family(c.name, Kind::Counter, c.help);
        o.sample(f, &[], c.value);
    }
    o.write(format)
}

fn node_metrics(o: &mut Out, scrape: &Scrape) {
    let v = &scrape.view;
    let info = o.family(
        "node_infiniband_info",
        Kind::Gauge,
        "Non-numeric data from /sys/class/infiniband/<device>, value is always 1.",
    );
    for d in &v.devices {
        o.sample(
            info,
            // In node_exporter's order (sorted), so that the two outputs compare line by line.
            &[
                ("board_id", &d.board_id),
                ("device", &d.name),
                ("firmware_version", &d.fw_version),
                ("hca_type", &d.hca_type),
            ],
            1u64,
        );
    }
    let state = o.family("node_infiniband_state_id", Kind::Gauge, "State of the InfiniBand port (0: no change, 1: down, 2: init, 3: armed, 4: active, 5: act defer)");
    let phys = o.family("node_infiniband_physical_state_id", Kind::Gauge, "Physical state of the InfiniBand port (0: no change, 1: sleep, 2: polling, 3: disable, 4: shift, 5: link up, 6: link error recover, 7: phytest)");
    let rate = o.family(
        "node_infiniband_rate_bytes_per_second",
        Kind::Gauge,
        "Maximum signal transfer rate",
    );
    for p in &v.ports {
        let n = p.number.to_string();
        let l = [("device", p.device.as_str()), ("port", n.as_str())];
        if let Some(id) = id_of(&STATES, &p.state) {
            o.sample(state, &l, id);
        }
        if let Some(id) = id_of(&PHYS_STATES, &p.phys_state) {
            o.sample(phys, &l, id);
        }
        // As node_exporter computes it: Gb/s as a 32-bit float, times 125000000, truncated.
        o.sample(
            rate,
            &l,
            (f64::from(p.rate_gbps as f32) * 125_000_000.0) as u64,
        );
    }
    let data: Vec<usize> = NODE_DATA
        .iter()
        .map(|(_, name, help)| o.family(name, Kind::Counter, help))
        .collect();
    let pma: Vec<usize> = NODE_PMA
        .iter()
        .map(|(_, name, help)| o.family(name, Kind::Counter, help))
        .collect();
    for p in &v.ports {
        let Some(c) = scrape.counters.get(&p.path) else {
            continue;
        };
        let n = p.number.to_string();
        let l = [("device", p.device.as_str()), ("port", n.as_str())];
        // node_exporter reads `counters/`: the data and packet counts are the PMA's only.
        if c.source.starts_with("pma") {
            counter_samples(
                o,
                c,
                &l,
                NODE_DATA.iter().map(|e| e.0).zip(data.iter().copied()),
            );
        }
        counter_samples(
            o,
            c,
            &l,
            NODE_PMA.iter().map(|e| e.0).zip(pma.iter().copied()),
        );
    }
}

/// A sample in each family of `keys` (counter name, family) for the counters `c` has.
fn counter_samples<'a>(
    o: &mut Out,
    c: &Counters,
    labels: &[(&str, &str)],
    keys: impl Iterator<Item = (&'a str, usize)>,
) {
    for (key, family) in keys {
        if let Some(x) = c.values.get(key) {
            o.sample(family, labels, x);
        }
    }
}

fn own_metrics(o: &mut Out, scrape: &Scrape) {
    let v = &scrape.view;
    let up = o.family(
        "rdma_exporter_daemon_up",
        Kind::Gauge,
        "1 when the exporter has read rdma-managerd's model and follows it; 0 when the daemon is not on the bus or cannot be read.",
    );
    o.sample(up, &[], u64::from(v.link == Link::Current));
    let errors = o.family(
        "rdma_exporter_port_read_errors",
        Kind::Gauge,
        "Ports whose counters could not be read in this scrape (absent from the daemon's GetAllCounters, or the call failed).",
    );
    o.sample(errors, &[], scrape.counter_errors);
    if scrape.counters_time_us > 0 {
        let at = o.family(
            "rdma_exporter_counters_timestamp_seconds",
            Kind::Gauge,
            "When rdma-managerd read the counters this scrape shows, in seconds since the Unix epoch (it shares one reading among the requests of one tick).",
        );
        o.sample(at, &[], scrape.counters_time_us as f64 / 1e6);
    }
    let took = o.family(
        "rdma_exporter_counters_read_seconds",
        Kind::Gauge,
        "Time this scrape took to read every port's counters from the daemon.",
    );
    o.sample(took, &[], scrape.duration.as_secs_f64());

    if let Some(r) = &v.root {
        let f = o.family(
            "rdma_daemon_info",
            Kind::Gauge,
            "rdma-managerd's version and whether it serves a simulated host; value is always 1.",
        );
        o.sample(
            f,
            &[
                ("version", &r.version),
                ("simulated", if r.simulated { "true" } else { "false" }),
            ],
            1u64,
        );
        let f = o.family(
            "rdma_daemon_state_stale",
            Kind::Gauge,
            "1 while rdma-managerd cannot re-read the host and publishes the last state it read (StateStale).",
        );
        o.sample(f, &[], u64::from(r.stale.0));
        let f = o.family(
            "rdma_daemon_state_stale_since_seconds",
            Kind::Gauge,
            "When the daemon's view became stale, in seconds since the Unix epoch; 0 when it is current.",
        );
        o.sample(f, &[], r.stale.2 as f64 / 1e6);
        let f = o.family(
            "rdma_daemon_starting",
            Kind::Gauge,
            "1 while rdma-managerd starts and has not read the whole host yet (Startup).",
        );
        o.sample(f, &[], u64::from(r.startup));
        let f = o.family(
            "rdma_daemon_config_errors",
            Kind::Gauge,
            "Persisted files and managed udev rules the daemon cannot use (ConfigErrors).",
        );
        o.sample(f, &[], r.config_errors as u64);
        let info = o.family(
            "rdma_soft_link_info",
            Kind::Gauge,
            "A soft RDMA link (rxe, siw) the daemon remembers and re-creates; value is always 1.",
        );
        let present = o.family(
            "rdma_soft_link_present",
            Kind::Gauge,
            "1 when the remembered soft link exists as an RDMA device now.",
        );
        for (name, kind, netdev) in &r.soft_links {
            o.sample(
                info,
                &[("device", name), ("type", kind), ("netdev", netdev)],
                1u64,
            );
            let here = v.devices.iter().any(|d| &d.name == name);
            o.sample(present, &[("device", name)], u64::from(here));
        }
    }

    let dev = o.family(
        "rdma_device_info",
        Kind::Gauge,
        "An RDMA device's identity: GUIDs, node type, kind, protocol, PCI address; value is always 1.",
    );
    for d in &v.devices {
        o.sample(
            dev,
            &[
                ("device", &d.name),
                ("node_guid", &d.node_guid),
                ("sys_image_guid", &d.sys_image_guid),
                ("node_type", &d.node_type),
                ("kind", &d.kind),
                ("protocol", &d.protocol),
                ("pci_address", &d.pci_address),
                ("hw_rev", &d.hw_rev),
                ("parent_netdev", &d.parent_netdev),
            ],
            1u64,
        );
    }

    let info = o.family(
        "rdma_port_info",
        Kind::Gauge,
        "A port's link layer, network interface, port GUID and counter source; value is always 1.",
    );
    let state = o.family(
        "rdma_port_state",
        Kind::Gauge,
        "A port's logical state by name: 1 for the state it is in, 0 for the others.",
    );
    let phys = o.family(
        "rdma_port_physical_state",
        Kind::Gauge,
        "A port's physical state by name: 1 for the state it is in, 0 for the others.",
    );
    let changes = o.family(
        "rdma_port_state_changes_total",
        Kind::Counter,
        "Changes of a port's logical state, counted as they happen (events, not scrapes).",
    );
    let lid = o.family(
        "rdma_port_lid",
        Kind::Gauge,
        "A port's base LID (0 on Ethernet ports).",
    );
    let sm_lid = o.family(
        "rdma_port_sm_lid",
        Kind::Gauge,
        "LID of the port's master subnet manager (0 when none was seen).",
    );
    let pkey = o.family(
        "rdma_port_pkey_info",
        Kind::Gauge,
        "A non-zero P_Key table entry of a port (with the full-membership bit); value is always 1.",
    );
    let port_type = o.family(
        "rdma_port_type_info",
        Kind::Gauge,
        "The type (ib, eth or auto) a VPI adapter's port runs, how it is set (runtime: mlx4; firmware: mlx5, next boot) and the firmware's type for the next boot; value is always 1. Ports without a port type have none.",
    );
    let reboot = o.family(
        "rdma_port_type_reboot_needed",
        Kind::Gauge,
        "1 when the firmware holds another port type for the next boot than the port runs now.",
    );
    let link = port_link_families(o);
    for p in &v.ports {
        let n = p.number.to_string();
        let l = [("device", p.device.as_str()), ("port", n.as_str())];
        if !p.port_type_control.is_empty() {
            o.sample(
                port_type,
                &[
                    l[0],
                    l[1],
                    ("type", &p.port_type),
                    ("control", &p.port_type_control),
                    ("next", &p.port_type_next),
                ],
                1u64,
            );
            o.sample(reboot, &l, u64::from(p.port_type_reboot_needed));
        }
        port_link_samples(o, link, p, &l);
        o.sample(
            info,
            &[
                l[0],
                l[1],
                ("link_layer", &p.link_layer),
                ("netdev", &p.netdev),
                ("port_guid", &p.port_guid),
                ("counter_source", &p.counter_source),
                ("netdev_owner", &p.netdev_owner),
            ],
            1u64,
        );
        state_set(o, state, p, &STATES, &p.state);
        state_set(o, phys, p, &PHYS_STATES, &p.phys_state);
        o.sample(changes, &l, p.state_changes);
        o.sample(lid, &l, u64::from(p.lid));
        o.sample(sm_lid, &l, u64::from(p.sm_lid));
        for (index, key) in &p.pkeys {
            let i = index.to_string();
            let k = format!("0x{key:04x}");
            o.sample(pkey, &[l[0], l[1], ("index", &i), ("pkey", &k)], 1u64);
        }
    }

    let traffic = [
        ("tx_bytes", o.family("rdma_port_transmitted_bytes_total", Kind::Counter, "Bytes a port sent, from its counter source (PMA words x 4, the driver's hw_counters or the netdev's statistics).")),
        ("rx_bytes", o.family("rdma_port_received_bytes_total", Kind::Counter, "Bytes a port received, from its counter source.")),
        ("tx_packets", o.family("rdma_port_transmitted_packets_total", Kind::Counter, "Packets a port sent, from its counter source.")),
        ("rx_packets", o.family("rdma_port_received_packets_total", Kind::Counter, "Packets a port received, from its counter source.")),
    ];
    let saturated = o.family(
        "rdma_port_counters_saturated",
        Kind::Gauge,
        "1 when one of a port's 32-bit PMA data or packet counters sits at all ones (its true value is unknown).",
    );
    let hw = o.family(
        "rdma_port_hw_stat_total",
        Kind::Counter,
        "A driver hardware counter of a port (hw_counters: RoCE retries, CNP/ECN, out-of-sequence, duplicate requests, ...), by its kernel name.",
    );
    let other = o.family(
        "rdma_port_pma_stat_total",
        Kind::Counter,
        "A PMA counter of a port (counters/) that node_infiniband_* does not export, by its kernel name.",
    );
    let pfc_sent = o.family(
        "rdma_port_pfc_requests_total",
        Kind::Counter,
        "PFC pause frames a RoCE port's netdev sent for a priority (DCB netlink, IEEE PFC requests).",
    );
    let pfc_received = o.family(
        "rdma_port_pfc_indications_total",
        Kind::Counter,
        "PFC pause frames a RoCE port's netdev received for a priority (DCB netlink, IEEE PFC indications).",
    );
    let pause_sent = o.family(
        "rdma_port_pause_tx_frames_total",
        Kind::Counter,
        "Link-level (IEEE 802.3x) pause frames a RoCE port's netdev sent (ethtool pause statistics).",
    );
    let pause_received = o.family(
        "rdma_port_pause_rx_frames_total",
        Kind::Counter,
        "Link-level (IEEE 802.3x) pause frames a RoCE port's netdev received (ethtool pause statistics).",
    );
    for p in &v.ports {
        let Some(c) = scrape.counters.get(&p.path) else {
            continue;
        };
        let n = p.number.to_string();
        let l = [("device", p.device.as_str()), ("port", n.as_str())];
        counter_samples(o, c, &l, traffic.into_iter());
        o.sample(saturated, &l, u64::from(c.saturated));
        // By name, as the values are kept.
        for (name, x) in c.values.iter() {
            if let Some(hw_name) = name.strip_prefix("hw.") {
                o.sample(hw, &[l[0], l[1], ("stat", hw_name)], x);
            } else if name == "pause.tx_frames" {
                o.sample(pause_sent, &l, x);
            } else if name == "pause.rx_frames" {
                o.sample(pause_received, &l, x);
            } else if let Some(prio) = name.strip_prefix("pfc.requests.") {
                o.sample(pfc_sent, &[l[0], l[1], ("priority", prio)], x);
            } else if let Some(prio) = name.strip_prefix("pfc.indications.") {
                o.sample(pfc_received, &[l[0], l[1], ("priority", prio)], x);
            } else if !NODE_DATA.iter().any(|(k, _, _)| *k == name)
                && !NODE_PMA.iter().any(|(k, _, _)| *k == name)
            {
                o.sample(other, &[l[0], l[1], ("stat", name)], x);
            }
        }
    }

    let ipoib = o.family(
        "rdma_ipoib_info",
        Kind::Gauge,
        "An IPoIB interface: its port, parent, P_Key, mode and who configures it; value is always 1.",
    );
    let mtu = o.family(
        "rdma_ipoib_mtu_bytes",
        Kind::Gauge,
        "An IPoIB interface's MTU in bytes.",
    );
    let ip_up = o.family(
        "rdma_ipoib_up",
        Kind::Gauge,
        "1 when an IPoIB interface's operational state is up.",
    );
    for i in &v.ipoib {
        let port = i.port.map(|p| p.to_string()).unwrap_or_default();
        let pkey = format!("0x{:04x}", i.pkey);
        o.sample(
            ipoib,
            &[
                ("interface", &i.name),
                ("device", &i.device),
                ("port", &port),
                ("parent", &i.parent),
                ("pkey", &pkey),
                ("mode", &i.mode),
                ("owner", &i.owner),
                ("persisted", if i.persisted { "true" } else { "false" }),
            ],
            1u64,
        );
        o.sample(mtu, &[("interface", &i.name)], u64::from(i.mtu));
        o.sample(
            ip_up,
            &[("interface", &i.name)],
            u64::from(i.oper_state == "up"),
        );
    }
}

/// The families of what `ibv_devinfo` tells of a port's link: MTUs and table lengths.
#[derive(Clone, Copy)]
struct PortLinkFamilies {
    active_mtu: usize,
    max_mtu: usize,
    gid_table: usize,
    pkey_table: usize,
}

fn port_link_families(o: &mut Out) -> PortLinkFamilies {
    PortLinkFamilies {
        active_mtu: o.family(
            "rdma_port_active_mtu_bytes",
            Kind::Gauge,
            "A port's IB MTU in use, in bytes (ibv_devinfo's active_mtu); absent when the daemon cannot tell.",
        ),
        max_mtu: o.family(
            "rdma_port_max_mtu_bytes",
            Kind::Gauge,
            "The largest IB MTU a port supports, in bytes (ibv_devinfo's max_mtu); absent when the daemon cannot tell.",
        ),
        gid_table: o.family(
            "rdma_port_gid_table_size",
            Kind::Gauge,
            "Length of a port's GID table, used entries or not.",
        ),
        pkey_table: o.family(
            "rdma_port_pkey_table_size",
            Kind::Gauge,
            "Length of a port's P_Key table, used entries or not.",
        ),
    }
}

fn port_link_samples(o: &mut Out, f: PortLinkFamilies, p: &PortView, l: &[(&str, &str); 2]) {
    // 0 is the daemon's "not known": no sample rather than a false value.
    for (family, value) in [(f.active_mtu, p.active_mtu), (f.max_mtu, p.max_mtu)] {
        if value > 0 {
            o.sample(family, l, u64::from(value));
        }
    }
    o.sample(f.gid_table, l, u64::from(p.gid_table_length));
    o.sample(f.pkey_table, l, u64::from(p.pkey_table_length));
}

/// One sample per known name: 1 for `current`, 0 for the others.
fn state_set(o: &mut Out, family: usize, p: &PortView, names: &[&str], current: &str) {
    let n = p.number.to_string();
    for s in names {
        o.sample(
            family,
            &[("device", &p.device), ("port", &n), ("state", s)],
            u64::from(*s == current),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_written_as_formatting_writes_them() {
        for n in [0u64, 7, 10, 4_096, 1_000_000_007, u64::MAX] {
            let mut s = String::from("x ");
            n.write(&mut s);
            assert_eq!(s, format!("x {n}"));
        }
    }

    #[test]
    fn label_values_are_escaped_only_where_needed() {
        for (v, want) in [
            ("mlx5_0", "mlx5_0"),
            ("0xfe80::1", "0xfe80::1"),
            ("a\"b", "a\\\"b"),
            ("back\\slash", "back\\\\slash"),
            ("two\nlines", "two\\nlines"),
            ("é", "é"),
        ] {
            let mut s = String::new();
            escape_label(&mut s, v);
            assert_eq!(s, want, "{v:?}");
        }
    }
}
