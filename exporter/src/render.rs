//! A scrape as Prometheus text exposition (0.0.4) or OpenMetrics text (1.0.0).
//!
//! node_exporter's infiniband collector's metrics come first, with its names, types, help,
//! units and label sets (node_exporter 1.5, Debian 12's `prometheus-node-exporter`), so that
//! a dashboard or rule written for it works unchanged; then what it lacks, under `rdma_`
//! (docs/METRICS.md lists every metric and its source).
//!
//! A scrape is written family after family, each going over the ports, into a [`Sink`] a
//! chunk at a time: an HTTP response streams it rather than holding megabytes of text.

use std::fmt::Write;
use std::io;

use crate::collect::{Counters, Scrape, Values};
use crate::model::{IpoibView, Link, PortView, RootView};

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

/// Where an exposition's text goes, a chunk at a time: an HTTP response as it is written
/// ([`crate::http`]), or a string (the textfile, tests).
pub trait Sink {
    fn write(&mut self, text: &str) -> impl std::future::Future<Output = io::Result<()>>;
}

impl Sink for String {
    async fn write(&mut self, text: &str) -> io::Result<()> {
        self.push_str(text);
        Ok(())
    }
}

/// Text held before it goes to the sink. A scrape of a large host is megabytes: written as
/// it is made, a chunk at a time, it never sits whole in memory.
const CHUNK: usize = 32 * 1024;

/// The family a sample is written in: its HELP and TYPE come before its first sample, and a
/// family without samples is not written at all.
struct Head {
    name: &'static str,
    kind: Kind,
    help: &'static str,
    written: bool,
}

/// An exposition being written: families one after another, each sample's line whole.
struct Exposition<'s, S> {
    sink: &'s mut S,
    buf: String,
    format: Format,
    family: Head,
}

impl<'s, S: Sink> Exposition<'s, S> {
    fn new(sink: &'s mut S, format: Format) -> Self {
        Exposition {
            sink,
            buf: String::with_capacity(CHUNK + 4 * 1024),
            format,
            family: Head {
                name: "",
                kind: Kind::Gauge,
                help: "",
                written: true,
            },
        }
    }

    /// The next samples are of the family `name`.
    fn family(&mut self, name: &'static str, kind: Kind, help: &'static str) {
        self.family = Head {
            name,
            kind,
            help,
            written: false,
        };
    }

    /// A sample's name, and before the family's first its HELP and TYPE.
    fn start_sample(&mut self) {
        let f = &mut self.family;
        if !f.written {
            f.written = true;
            // OpenMetrics names a counter family without the `_total` of its samples.
            let family_name = match (self.format, f.kind) {
                (Format::OpenMetrics, Kind::Counter) => {
                    f.name.strip_suffix("_total").unwrap_or(f.name)
                }
                _ => f.name,
            };
            let kind = match f.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
            };
            let _ = writeln!(self.buf, "# HELP {family_name} {}", escape_help(f.help));
            let _ = writeln!(self.buf, "# TYPE {family_name} {kind}");
        }
        self.buf.push_str(f.name);
    }

    fn end_sample(&mut self, value: impl Value) {
        self.buf.push(' ');
        value.write(&mut self.buf);
        self.buf.push('\n');
    }

    /// A sample with `labels`.
    fn sample(&mut self, labels: &[(&str, &str)], value: impl Value) {
        self.start_sample();
        if !labels.is_empty() {
            self.buf.push('{');
            write_labels(&mut self.buf, labels);
            self.buf.push('}');
        }
        self.end_sample(value);
    }

    /// A sample of a port: its `device` and `port` labels, then `more`.
    fn port_sample(&mut self, port: &Port<'_>, more: &[(&str, &str)], value: impl Value) {
        self.start_sample();
        self.buf.push('{');
        self.buf.push_str(&port.labels);
        if !more.is_empty() {
            self.buf.push(',');
            write_labels(&mut self.buf, more);
        }
        self.buf.push('}');
        self.end_sample(value);
    }

    /// Hands what is held to the sink once it is a chunk.
    async fn flush_if_full(&mut self) -> io::Result<()> {
        if self.buf.len() >= CHUNK {
            self.sink.write(&self.buf).await?;
            self.buf.clear();
        }
        Ok(())
    }

    async fn finish(mut self) -> io::Result<()> {
        if self.format == Format::OpenMetrics {
            self.buf.push_str("# EOF\n");
        }
        self.sink.write(&self.buf).await
    }
}

fn write_labels(s: &mut String, labels: &[(&str, &str)]) {
    for (i, (k, v)) in labels.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(k);
        s.push_str("=\"");
        escape_label(s, v);
        s.push('"');
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
pub async fn render(scrape: &Scrape, format: Format) -> String {
    render_with(scrape, format, &[]).await
}

/// The whole scrape in `format`, with `counters` after the data, as one string.
pub async fn render_with(scrape: &Scrape, format: Format, counters: &[OwnCounter]) -> String {
    let mut text = String::new();
    // A string takes every write: nothing can fail.
    let _ = write_scrape(&mut text, scrape, format, counters).await;
    text
}

/// The whole scrape in `format` to `sink`, a chunk at a time, with `counters` after the data,
/// named as the format wants (OpenMetrics' TYPE and HELP lines without `_total`).
pub async fn write_scrape<S: Sink>(
    sink: &mut S,
    scrape: &Scrape,
    format: Format,
    counters: &[OwnCounter],
) -> io::Result<()> {
    let ports = ports(scrape);
    let mut o = Exposition::new(sink, format);
    node_metrics(&mut o, scrape, &ports).await?;
    own_metrics(&mut o, scrape, &ports).await?;
    for c in counters {
        o.family(c.name, Kind::Counter, c.help);
        o.sample(&[], c.value);
    }
    o.finish().await
}

/// What the families of a port read, made once a scrape rather than once a family.
struct Port<'a> {
    view: &'a PortView,
    /// `device="…",port="…"`, escaped: the labels every sample of the port starts with.
    labels: String,
    counters: Option<&'a Counters>,
    /// node_exporter's counters, [`NODE_DATA`]'s then [`NODE_PMA`]'s, by index.
    known: [Option<u64>; KNOWN],
}

/// How many counters node_exporter has: [`NODE_DATA`] and [`NODE_PMA`].
const KNOWN: usize = NODE_DATA.len() + NODE_PMA.len();

/// node_exporter's counter names, sorted, each with its index in [`Port::known`].
fn known_names() -> Vec<(&'static str, usize)> {
    let mut names: Vec<(&'static str, usize)> = NODE_DATA
        .iter()
        .chain(NODE_PMA.iter())
        .enumerate()
        .map(|(i, (name, _, _))| (*name, i))
        .collect();
    names.sort_unstable();
    names
}

fn ports(scrape: &Scrape) -> Vec<Port<'_>> {
    let names = known_names();
    scrape
        .view
        .ports
        .iter()
        .map(|p| {
            let mut labels = String::with_capacity(32);
            labels.push_str("device=\"");
            escape_label(&mut labels, &p.device);
            labels.push_str("\",port=\"");
            u64::from(p.number).write(&mut labels);
            labels.push('"');
            let counters = scrape.counters.get(&p.path);
            Port {
                view: p,
                labels,
                counters,
                known: counters.map_or([None; KNOWN], |c| known_values(&names, &c.values)),
            }
        })
        .collect()
}

/// node_exporter's counters among `values`, in one pass: both lists are sorted by name.
fn known_values(names: &[(&str, usize)], values: &Values) -> [Option<u64>; KNOWN] {
    let mut out = [None; KNOWN];
    let mut names = names.iter().peekable();
    for (name, value) in values.iter() {
        while names.next_if(|(n, _)| *n < name).is_some() {}
        if let Some((_, i)) = names.next_if(|(n, _)| *n == name) {
            out[*i] = Some(value);
        }
    }
    out
}

/// The index in [`Port::known`] of the counter `name` of [`NODE_DATA`].
fn data_index(name: &str) -> Option<usize> {
    NODE_DATA.iter().position(|(n, _, _)| *n == name)
}

async fn node_metrics<S: Sink>(
    o: &mut Exposition<'_, S>,
    scrape: &Scrape,
    ports: &[Port<'_>],
) -> io::Result<()> {
    o.family(
        "node_infiniband_info",
        Kind::Gauge,
        "Non-numeric data from /sys/class/infiniband/<device>, value is always 1.",
    );
    for d in &scrape.view.devices {
        o.sample(
            // In node_exporter's order (sorted), so that the two outputs compare line by line.
            &[
                ("board_id", &d.board_id),
                ("device", &d.name),
                ("firmware_version", &d.fw_version),
                ("hca_type", &d.hca_type),
            ],
            1u64,
        );
        o.flush_if_full().await?;
    }
    o.family("node_infiniband_state_id", Kind::Gauge, "State of the InfiniBand port (0: no change, 1: down, 2: init, 3: armed, 4: active, 5: act defer)");
    for p in ports {
        if let Some(id) = id_of(&STATES, &p.view.state) {
            o.port_sample(p, &[], id);
        }
        o.flush_if_full().await?;
    }
    o.family("node_infiniband_physical_state_id", Kind::Gauge, "Physical state of the InfiniBand port (0: no change, 1: sleep, 2: polling, 3: disable, 4: shift, 5: link up, 6: link error recover, 7: phytest)");
    for p in ports {
        if let Some(id) = id_of(&PHYS_STATES, &p.view.phys_state) {
            o.port_sample(p, &[], id);
        }
        o.flush_if_full().await?;
    }
    o.family(
        "node_infiniband_rate_bytes_per_second",
        Kind::Gauge,
        "Maximum signal transfer rate",
    );
    for p in ports {
        // As node_exporter computes it: Gb/s as a 32-bit float, times 125000000, truncated.
        let rate = (f64::from(p.view.rate_gbps as f32) * 125_000_000.0) as u64;
        o.port_sample(p, &[], rate);
        o.flush_if_full().await?;
    }
    for (i, (_, name, help)) in NODE_DATA.iter().chain(NODE_PMA.iter()).enumerate() {
        o.family(name, Kind::Counter, help);
        for p in ports {
            // node_exporter reads `counters/`: the data and packet counts are the PMA's only.
            let pma = p.counters.is_some_and(|c| c.source.starts_with("pma"));
            if let Some(x) = p.known[i].filter(|_| i >= NODE_DATA.len() || pma) {
                o.port_sample(p, &[], x);
            }
            o.flush_if_full().await?;
        }
    }
    Ok(())
}

async fn own_metrics<S: Sink>(
    o: &mut Exposition<'_, S>,
    scrape: &Scrape,
    ports: &[Port<'_>],
) -> io::Result<()> {
    let v = &scrape.view;
    o.family(
        "rdma_exporter_daemon_up",
        Kind::Gauge,
        "1 when the exporter has read rdma-managerd's model and follows it; 0 when the daemon is not on the bus or cannot be read.",
    );
    o.sample(&[], u64::from(v.link == Link::Current));
    o.family(
        "rdma_exporter_port_read_errors",
        Kind::Gauge,
        "Ports whose counters could not be read in this scrape (absent from the daemon's GetAllCounters, or the call failed).",
    );
    o.sample(&[], scrape.counter_errors);
    if scrape.counters_time_us > 0 {
        o.family(
            "rdma_exporter_counters_timestamp_seconds",
            Kind::Gauge,
            "When rdma-managerd read the counters this scrape shows, in seconds since the Unix epoch (it shares one reading among the requests of one tick).",
        );
        o.sample(&[], scrape.counters_time_us as f64 / 1e6);
    }
    o.family(
        "rdma_exporter_counters_read_seconds",
        Kind::Gauge,
        "Time this scrape took to read every port's counters from the daemon.",
    );
    o.sample(&[], scrape.duration.as_secs_f64());

    if let Some(r) = &v.root {
        daemon_metrics(o, scrape, r).await?;
    }

    o.family(
        "rdma_device_info",
        Kind::Gauge,
        "An RDMA device's identity: GUIDs, node type, kind, protocol, PCI address; value is always 1.",
    );
    for d in &v.devices {
        o.sample(
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
        o.flush_if_full().await?;
    }
    port_metrics(o, ports).await?;
    counter_metrics(o, ports).await?;
    ipoib_metrics(o, &v.ipoib).await
}

/// The daemon's own state and the soft links it remembers.
async fn daemon_metrics<S: Sink>(
    o: &mut Exposition<'_, S>,
    scrape: &Scrape,
    r: &RootView,
) -> io::Result<()> {
    o.family(
        "rdma_daemon_info",
        Kind::Gauge,
        "rdma-managerd's version and whether it serves a simulated host; value is always 1.",
    );
    o.sample(
        &[
            ("version", &r.version),
            ("simulated", if r.simulated { "true" } else { "false" }),
        ],
        1u64,
    );
    o.family(
        "rdma_daemon_state_stale",
        Kind::Gauge,
        "1 while rdma-managerd cannot re-read the host and publishes the last state it read (StateStale).",
    );
    o.sample(&[], u64::from(r.stale.0));
    o.family(
        "rdma_daemon_state_stale_since_seconds",
        Kind::Gauge,
        "When the daemon's view became stale, in seconds since the Unix epoch; 0 when it is current.",
    );
    o.sample(&[], r.stale.2 as f64 / 1e6);
    o.family(
        "rdma_daemon_starting",
        Kind::Gauge,
        "1 while rdma-managerd starts and has not read the whole host yet (Startup).",
    );
    o.sample(&[], u64::from(r.startup));
    o.family(
        "rdma_daemon_config_errors",
        Kind::Gauge,
        "Persisted files and managed udev rules the daemon cannot use (ConfigErrors).",
    );
    o.sample(&[], r.config_errors as u64);
    o.family(
        "rdma_soft_link_info",
        Kind::Gauge,
        "A soft RDMA link (rxe, siw) the daemon remembers and re-creates; value is always 1.",
    );
    for (name, kind, netdev) in &r.soft_links {
        o.sample(
            &[("device", name), ("type", kind), ("netdev", netdev)],
            1u64,
        );
        o.flush_if_full().await?;
    }
    o.family(
        "rdma_soft_link_present",
        Kind::Gauge,
        "1 when the remembered soft link exists as an RDMA device now.",
    );
    for (name, _, _) in &r.soft_links {
        let here = scrape.view.devices.iter().any(|d| &d.name == name);
        o.sample(&[("device", name)], u64::from(here));
        o.flush_if_full().await?;
    }
    Ok(())
}

/// The family `(name, kind, help)`, its samples those `samples` writes of each port.
async fn per_port<'s, S: Sink>(
    o: &mut Exposition<'s, S>,
    ports: &[Port<'_>],
    (name, kind, help): (&'static str, Kind, &'static str),
    mut samples: impl FnMut(&mut Exposition<'s, S>, &Port<'_>),
) -> io::Result<()> {
    o.family(name, kind, help);
    for p in ports {
        samples(o, p);
        o.flush_if_full().await?;
    }
    Ok(())
}

/// What the model holds of each port: identity, states, addresses, P_Keys, type, link.
async fn port_metrics<S: Sink>(o: &mut Exposition<'_, S>, ports: &[Port<'_>]) -> io::Result<()> {
    port_state_metrics(o, ports).await?;
    port_link_metrics(o, ports).await
}

/// What a port is and the state it is in: its labels, state, LIDs and P_Keys.
async fn port_state_metrics<S: Sink>(
    o: &mut Exposition<'_, S>,
    ports: &[Port<'_>],
) -> io::Result<()> {
    use Kind::{Counter, Gauge};
    per_port(o, ports, ("rdma_port_info", Gauge, "A port's link layer, network interface, port GUID and counter source; value is always 1."), |o, p| {
        let v = p.view;
        o.port_sample(
            p,
            &[
                ("link_layer", &v.link_layer),
                ("netdev", &v.netdev),
                ("port_guid", &v.port_guid),
                ("counter_source", &v.counter_source),
                ("netdev_owner", &v.netdev_owner),
            ],
            1u64,
        );
    })
    .await?;
    per_port(
        o,
        ports,
        (
            "rdma_port_state",
            Gauge,
            "A port's logical state by name: 1 for the state it is in, 0 for the others.",
        ),
        |o, p| {
            state_set(o, p, &STATES, &p.view.state);
        },
    )
    .await?;
    per_port(
        o,
        ports,
        (
            "rdma_port_physical_state",
            Gauge,
            "A port's physical state by name: 1 for the state it is in, 0 for the others.",
        ),
        |o, p| {
            state_set(o, p, &PHYS_STATES, &p.view.phys_state);
        },
    )
    .await?;
    per_port(
        o,
        ports,
        (
            "rdma_port_state_changes_total",
            Counter,
            "Changes of a port's logical state, counted as they happen (events, not scrapes).",
        ),
        |o, p| {
            o.port_sample(p, &[], p.view.state_changes);
        },
    )
    .await?;
    per_port(
        o,
        ports,
        (
            "rdma_port_lid",
            Gauge,
            "A port's base LID (0 on Ethernet ports).",
        ),
        |o, p| {
            o.port_sample(p, &[], u64::from(p.view.lid));
        },
    )
    .await?;
    per_port(
        o,
        ports,
        (
            "rdma_port_sm_lid",
            Gauge,
            "LID of the port's master subnet manager (0 when none was seen).",
        ),
        |o, p| {
            o.port_sample(p, &[], u64::from(p.view.sm_lid));
        },
    )
    .await?;
    per_port(o, ports, ("rdma_port_pkey_info", Gauge, "A non-zero P_Key table entry of a port (with the full-membership bit); value is always 1."), |o, p| {
        for (index, key) in &p.view.pkeys {
            let i = index.to_string();
            let k = format!("0x{key:04x}");
            o.port_sample(p, &[("index", &i), ("pkey", &k)], 1u64);
        }
    })
    .await
}

/// What a port's link can carry: its type on VPI adapters, its MTUs and its table sizes.
async fn port_link_metrics<S: Sink>(
    o: &mut Exposition<'_, S>,
    ports: &[Port<'_>],
) -> io::Result<()> {
    use Kind::Gauge;
    per_port(o, ports, ("rdma_port_type_info", Gauge, "The type (ib, eth or auto) a VPI adapter's port runs, how it is set (runtime: mlx4; firmware: mlx5, next boot) and the firmware's type for the next boot; value is always 1. Ports without a port type have none."), |o, p| {
        let v = p.view;
        if !v.port_type_control.is_empty() {
            o.port_sample(
                p,
                &[
                    ("type", &v.port_type),
                    ("control", &v.port_type_control),
                    ("next", &v.port_type_next),
                ],
                1u64,
            );
        }
    })
    .await?;
    per_port(
        o,
        ports,
        (
            "rdma_port_type_reboot_needed",
            Gauge,
            "1 when the firmware holds another port type for the next boot than the port runs now.",
        ),
        |o, p| {
            if !p.view.port_type_control.is_empty() {
                o.port_sample(p, &[], u64::from(p.view.port_type_reboot_needed));
            }
        },
    )
    .await?;
    // What `ibv_devinfo` tells of a port's link. An MTU of 0 is the daemon's "not known": no
    // sample rather than a false value.
    per_port(o, ports, ("rdma_port_active_mtu_bytes", Gauge, "A port's IB MTU in use, in bytes (ibv_devinfo's active_mtu); absent when the daemon cannot tell."), |o, p| {
        if p.view.active_mtu > 0 {
            o.port_sample(p, &[], u64::from(p.view.active_mtu));
        }
    })
    .await?;
    per_port(o, ports, ("rdma_port_max_mtu_bytes", Gauge, "The largest IB MTU a port supports, in bytes (ibv_devinfo's max_mtu); absent when the daemon cannot tell."), |o, p| {
        if p.view.max_mtu > 0 {
            o.port_sample(p, &[], u64::from(p.view.max_mtu));
        }
    })
    .await?;
    per_port(
        o,
        ports,
        (
            "rdma_port_gid_table_size",
            Gauge,
            "Length of a port's GID table, used entries or not.",
        ),
        |o, p| {
            o.port_sample(p, &[], u64::from(p.view.gid_table_length));
        },
    )
    .await?;
    per_port(
        o,
        ports,
        (
            "rdma_port_pkey_table_size",
            Gauge,
            "Length of a port's P_Key table, used entries or not.",
        ),
        |o, p| {
            o.port_sample(p, &[], u64::from(p.view.pkey_table_length));
        },
    )
    .await
}

/// One sample per known name: 1 for `current`, 0 for the others.
fn state_set<S: Sink>(o: &mut Exposition<'_, S>, p: &Port<'_>, names: &[&str], current: &str) {
    for s in names {
        o.port_sample(p, &[("state", s)], u64::from(*s == current));
    }
}

/// Every port's counters but node_exporter's own: traffic from any source, the driver's, the
/// other PMA counters, PFC and pause frames.
async fn counter_metrics<S: Sink>(o: &mut Exposition<'_, S>, ports: &[Port<'_>]) -> io::Result<()> {
    use Kind::{Counter, Gauge};
    for (key, name, help) in [
        ("tx_bytes", "rdma_port_transmitted_bytes_total", "Bytes a port sent, from its counter source (PMA words x 4, the driver's hw_counters or the netdev's statistics)."),
        ("rx_bytes", "rdma_port_received_bytes_total", "Bytes a port received, from its counter source."),
        ("tx_packets", "rdma_port_transmitted_packets_total", "Packets a port sent, from its counter source."),
        ("rx_packets", "rdma_port_received_packets_total", "Packets a port received, from its counter source."),
    ] {
        let Some(i) = data_index(key) else { continue };
        per_port(o, ports, (name, Counter, help), |o, p| {
            if let Some(x) = p.known[i] {
                o.port_sample(p, &[], x);
            }
        })
        .await?;
    }
    per_port(o, ports, ("rdma_port_counters_saturated", Gauge, "1 when one of a port's 32-bit PMA data or packet counters sits at all ones (its true value is unknown)."), |o, p| {
        if let Some(c) = p.counters {
            o.port_sample(p, &[], u64::from(c.saturated));
        }
    })
    .await?;
    // The others by the kind of their name, as the daemon names them.
    per_port(o, ports, ("rdma_port_hw_stat_total", Counter, "A driver hardware counter of a port (hw_counters: RoCE retries, CNP/ECN, out-of-sequence, duplicate requests, ...), by its kernel name."), |o, p| {
        for (name, x) in p.values() {
            if let Some(stat) = name.strip_prefix("hw.") {
                o.port_sample(p, &[("stat", stat)], x);
            }
        }
    })
    .await?;
    let names = known_names();
    per_port(o, ports, ("rdma_port_pma_stat_total", Counter, "A PMA counter of a port (counters/) that node_infiniband_* does not export, by its kernel name."), |o, p| {
        for (name, x) in p.values() {
            let elsewhere = ["hw.", "pfc.requests.", "pfc.indications."]
                .iter()
                .any(|prefix| name.starts_with(prefix))
                || name == "pause.tx_frames"
                || name == "pause.rx_frames"
                || names.binary_search_by(|(n, _)| (*n).cmp(name)).is_ok();
            if !elsewhere {
                o.port_sample(p, &[("stat", name)], x);
            }
        }
    })
    .await?;
    for (prefix, name, help) in [
        ("pfc.requests.", "rdma_port_pfc_requests_total", "PFC pause frames a RoCE port's netdev sent for a priority (DCB netlink, IEEE PFC requests)."),
        ("pfc.indications.", "rdma_port_pfc_indications_total", "PFC pause frames a RoCE port's netdev received for a priority (DCB netlink, IEEE PFC indications)."),
    ] {
        per_port(o, ports, (name, Counter, help), |o, p| {
            for (name, x) in p.values() {
                if let Some(priority) = name.strip_prefix(prefix) {
                    o.port_sample(p, &[("priority", priority)], x);
                }
            }
        })
        .await?;
    }
    for (key, name, help) in [
        ("pause.tx_frames", "rdma_port_pause_tx_frames_total", "Link-level (IEEE 802.3x) pause frames a RoCE port's netdev sent (ethtool pause statistics)."),
        ("pause.rx_frames", "rdma_port_pause_rx_frames_total", "Link-level (IEEE 802.3x) pause frames a RoCE port's netdev received (ethtool pause statistics)."),
    ] {
        per_port(o, ports, (name, Counter, help), |o, p| {
            if let Some(x) = p.counters.and_then(|c| c.values.get(key)) {
                o.port_sample(p, &[], x);
            }
        })
        .await?;
    }
    Ok(())
}

impl Port<'_> {
    /// The port's counters by name; none when they could not be read.
    fn values(&self) -> impl Iterator<Item = (&str, u64)> {
        self.counters.into_iter().flat_map(|c| c.values.iter())
    }
}

async fn ipoib_metrics<S: Sink>(o: &mut Exposition<'_, S>, ipoib: &[IpoibView]) -> io::Result<()> {
    o.family(
        "rdma_ipoib_info",
        Kind::Gauge,
        "An IPoIB interface: its port, parent, P_Key, mode and who configures it; value is always 1.",
    );
    for i in ipoib {
        let port = i.port.map(|p| p.to_string()).unwrap_or_default();
        let pkey = format!("0x{:04x}", i.pkey);
        o.sample(
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
        o.flush_if_full().await?;
    }
    o.family(
        "rdma_ipoib_mtu_bytes",
        Kind::Gauge,
        "An IPoIB interface's MTU in bytes.",
    );
    for i in ipoib {
        o.sample(&[("interface", &i.name)], u64::from(i.mtu));
    }
    o.family(
        "rdma_ipoib_up",
        Kind::Gauge,
        "1 when an IPoIB interface's operational state is up.",
    );
    for i in ipoib {
        o.sample(&[("interface", &i.name)], u64::from(i.oper_state == "up"));
    }
    o.flush_if_full().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DeviceView;

    /// What a sink was given, chunk by chunk.
    #[derive(Default)]
    struct Chunks(Vec<String>);

    impl Sink for Chunks {
        async fn write(&mut self, text: &str) -> io::Result<()> {
            self.0.push(text.to_string());
            Ok(())
        }
    }

    /// A host of `n` single-port devices, odd ones RoCE (driver counters), even ones
    /// InfiniBand (PMA counters).
    fn host(n: usize) -> Scrape {
        let mut s = Scrape::default();
        let mut view = crate::model::View::default();
        for i in 0..n {
            let (device, path) = (format!("dev{i}"), format!("/p{i}"));
            view.devices.push(DeviceView {
                name: device.clone(),
                ..Default::default()
            });
            view.ports.push(PortView {
                path: path.clone(),
                device,
                number: 1,
                state: "ACTIVE".into(),
                phys_state: "LinkUp".into(),
                ..Default::default()
            });
            let i = i as u64;
            let (source, values): (&str, Values) = if i % 2 == 0 {
                let v = [("tx_bytes", i), ("rx_bytes", 2 * i), ("symbol_error", 3)];
                ("pma64", v.into_iter().collect())
            } else {
                let v = [
                    ("hw.rx_write_requests", i),
                    ("tx_bytes", 4),
                    ("pfc.requests.3", 5),
                ];
                ("hw_counters", v.into_iter().collect())
            };
            s.counters.insert(
                path,
                Counters {
                    source: source.into(),
                    saturated: false,
                    values,
                },
            );
        }
        s.view = std::sync::Arc::new(view);
        s
    }

    #[tokio::test]
    async fn a_scrape_is_written_in_bounded_chunks_that_make_the_whole_text() {
        let scrape = host(600);
        let mut chunks = Chunks::default();
        write_scrape(&mut chunks, &scrape, Format::OpenMetrics, &[])
            .await
            .expect("a sink of strings");
        assert!(chunks.0.len() > 2, "{} chunks", chunks.0.len());
        for c in &chunks.0 {
            assert!(c.len() < CHUNK + 2048, "a chunk of {} bytes", c.len());
            assert!(c.ends_with('\n'), "a chunk ends with a whole line");
        }
        let text = chunks.0.concat();
        assert_eq!(text, render(&scrape, Format::OpenMetrics).await);
        assert!(text.ends_with("# EOF\n"));
        // Each family once, its HELP and TYPE before its samples, never empty.
        let mut seen = std::collections::BTreeSet::new();
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if let Some(name) = l.strip_prefix("# TYPE ") {
                let name = name.split(' ').next().unwrap_or_default();
                assert!(seen.insert(name.to_string()), "{name} twice");
                let next = lines.get(i + 1).copied().unwrap_or_default();
                assert!(next.starts_with(name), "{name} without samples: {next}");
            }
        }
        // node_exporter's data counters from the PMA's ports only; the others' everywhere.
        let has = |series: &str| text.lines().any(|l| l.starts_with(series));
        assert!(has(
            "node_infiniband_port_data_received_bytes_total{device=\"dev2\",port=\"1\"} 4"
        ));
        assert!(!has(
            "node_infiniband_port_data_received_bytes_total{device=\"dev3\""
        ));
        assert!(has(
            "node_infiniband_symbol_error_total{device=\"dev2\",port=\"1\"} 3"
        ));
        assert!(has(
            "rdma_port_transmitted_bytes_total{device=\"dev3\",port=\"1\"} 4"
        ));
        assert!(has(
            "rdma_port_hw_stat_total{device=\"dev3\",port=\"1\",stat=\"rx_write_requests\"} 3"
        ));
        assert!(has(
            "rdma_port_pfc_requests_total{device=\"dev3\",port=\"1\",priority=\"3\"} 5"
        ));
        assert!(!has(
            "rdma_port_pma_stat_total{device=\"dev2\",port=\"1\",stat=\"symbol_error\"}"
        ));
    }

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
