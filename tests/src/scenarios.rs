//! The lab scenarios: enumerate, add rxe over a veth, the kernel's refusals, RoCE mode,
//! rename, port state following the netdev, delete, and the events of each.
//!
//! Every step appends one line to a transcript. Lines hold only what a correct simulation
//! must reproduce exactly; values that legitimately vary between runs (counters that move
//! with background traffic) are reduced to their shape. The lines are a documented projection
//! (tests/lab/README.md, "The transcript"): the JSON document users read ([`document`]),
//! ibstat's text, and readings and outcomes written value by value ([`format`]), never an
//! internal type's `Debug` or serde form, so that reshaping an internal type never changes a
//! transcript recorded on a real kernel.

mod against_tool;
pub mod document;
pub mod format;

use std::sync::Arc;
use std::time::Duration;

use rdma_managerd::ibstat;
use rdma_managerd::kernel::{
    Host, HostError, HostEvent, LidTurn, NetdevChange, NewLink, PollTarget, PortPoller,
};
use rdma_managerd::model::softlink::{classify_newlink_error, NewLinkContext};
use rdma_managerd::model::{CounterSource, RoceMode, SoftLinkType};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::reference::Reference;
use format::{done, list, outcome, yes_no};

/// The lab's veth pair (made by tests/lab/run-lab.sh with fixed MACs).
pub const NETDEV_A: &str = "veth0";
pub const NETDEV_B: &str = "veth1";

pub struct Run {
    host: Arc<dyn Host>,
    events: UnboundedReceiver<HostEvent>,
    pub transcript: Vec<String>,
    /// Disagreements with rdma-core's and iproute2's tools (real kernel only).
    pub failures: Vec<String>,
    /// How many comparisons with those tools were made.
    pub reference_checks: usize,
    reference: Option<Reference>,
    /// The nlmon capture, started by the first comparison of requests with a tool.
    capture: Option<crate::nlmon::Capture>,
}

impl Run {
    pub async fn new(host: Arc<dyn Host>, reference: Option<Reference>) -> Result<Run, HostError> {
        let events = host.subscribe().await?;
        Ok(Run {
            host,
            events,
            transcript: Vec::new(),
            failures: Vec::new(),
            reference_checks: 0,
            reference,
            capture: None,
        })
    }

    fn line(&mut self, s: impl Into<String>) {
        self.transcript.push(s.into());
    }

    /// Waits (bounded) for an event; other events are skipped. Whether it came.
    async fn wait_event(&mut self, want: impl Fn(&HostEvent) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some(ev)) if want(&ev) => break true,
                Ok(Some(_)) => continue,
                Ok(None) | Err(_) => break false,
            }
        }
    }

    /// Waits (bounded) for an event the kernel must send, and records whether it came.
    async fn expect_event(&mut self, what: &str, want: impl Fn(&HostEvent) -> bool) {
        let seen = self.wait_event(want).await;
        self.line(format!(
            "event {what}: {}",
            if seen { "seen" } else { "NOT SEEN" }
        ));
    }

    async fn dev_index(&self, name: &str) -> Option<u32> {
        self.host
            .nl_devices()
            .await
            .ok()?
            .into_iter()
            .find(|d| d.name == name)
            .map(|d| d.index)
    }

    async fn add(&mut self, name: &str, kind: SoftLinkType, netdev: &str) -> Result<(), HostError> {
        let link = NewLink {
            name: name.into(),
            kind,
            netdev: netdev.into(),
        };
        let r = self.host.add_link(&link).await;
        let mut l = format!(
            "add {name} type {} netdev {netdev}: {}",
            kind.as_str(),
            done(&r)
        );
        if let Err(e) = &r {
            if let Some(errno) = e.errno() {
                let devices = self.host.rdma_device_names().await.unwrap_or_default();
                let devs = self.host.read_devices().await.unwrap_or_default();
                let netdevs = self.host.read_netdevs().await.unwrap_or_default();
                let nd = netdevs.iter().find(|n| n.name == netdev);
                let ctx = NewLinkContext {
                    name,
                    kind,
                    netdev,
                    devices: &devices,
                    existing_on_netdev: devs
                        .iter()
                        .find(|d| d.parent_netdev.as_deref() == Some(netdev))
                        .map(|d| d.name.clone()),
                    netdev_exists: nd.is_some(),
                    netdev_is_vlan: nd.is_some_and(|n| n.is_vlan()),
                    type_loaded: self
                        .host
                        .module_loaded(kind.module())
                        .await
                        .unwrap_or(false),
                };
                // The sentence the daemon's refusal carries.
                l.push_str(&format!(" => {}", classify_newlink_error(errno, &ctx)));
            }
        }
        self.line(l);
        r
    }

    /// The whole RDMA state, as our readers and our ibstat rendering see it; on the real
    /// kernel also compared with `rdma` and `ibstat`.
    async fn snapshot(&mut self, label: &str) {
        self.line(format!("== state {label}"));
        match self.host.nl_devices().await {
            Ok(devs) => {
                for d in &devs {
                    self.line(format::nl_device(d));
                }
                if let Some(r) = &self.reference {
                    self.failures.extend(r.check_dev_show(&devs));
                    self.reference_checks += 1;
                }
            }
            Err(e) => self.line(format!("nl devices: err {}", e.code())),
        }
        match self.host.nl_ports().await {
            Ok(ports) => {
                for p in &ports {
                    self.line(format::nl_port(p));
                }
                if let Some(r) = &self.reference {
                    let netdevs = self.host.read_netdevs().await.unwrap_or_default();
                    self.failures.extend(r.check_link_show(&ports, &netdevs));
                    self.reference_checks += 1;
                }
            }
            Err(e) => self.line(format!("nl ports: err {}", e.code())),
        }
        match document::doc_lines(self.host.as_ref()).await {
            Ok(lines) => self.transcript.extend(lines),
            Err(e) => self.line(format!("doc: err {}", e.code())),
        }
        match self.host.read_devices().await {
            Ok(devs) => {
                for d in &devs {
                    for p in &d.ports {
                        let c = self.host.read_counters(&d.name, p.number).await;
                        let shape = outcome(&c, format::counters_shape);
                        self.line(format!("counters {}/{}: {shape}", d.name, p.number));
                    }
                }
                let text = ibstat::render_all(&devs);
                for l in text.lines() {
                    self.line(format!("ibstat| {l}"));
                }
                if let Some(r) = &self.reference {
                    self.failures.extend(r.check_ibstat(&text));
                    self.reference_checks += 1;
                }
            }
            Err(e) => self.line(format!("sysfs devices: err {}", e.code())),
        }
    }

    async fn stats_shape(&mut self, name: &str) {
        let Some(idx) = self.dev_index(name).await else {
            self.line(format!("stats {name}: no such device"));
            return;
        };
        let r = self.host.nl_port_stats(idx, 1).await;
        let l = match r {
            Ok(v) => format!("stats {name}/1: {}", list(v.iter().map(|(n, _)| n))),
            Err(e) => format!("stats {name}/1: err {}", e.code()),
        };
        self.line(l);
    }

    async fn netdevs(&mut self) {
        let nds = self.host.read_netdevs().await.unwrap_or_default();
        for n in nds
            .iter()
            .filter(|n| n.name == NETDEV_A || n.name == NETDEV_B)
        {
            self.line(format::netdev(n));
        }
    }

    async fn roce(&mut self, dev: &str, port: u32) {
        let m = self.host.roce_mode(dev, port).await;
        let t = self.host.roce_tos(dev, port).await;
        self.line(format!(
            "roce {dev}/{port}: mode {} tos {}",
            outcome(&m, |m| format!("\"{}\"", m.configfs_str())),
            outcome(&t, u8::to_string)
        ));
    }

    async fn set_roce(&mut self, dev: &str, port: u32, mode: RoceMode) {
        let r = self.host.set_roce_mode(dev, port, mode).await;
        self.line(format!(
            "set roce {dev}/{port} \"{}\": {}",
            mode.configfs_str(),
            done(&r)
        ));
    }

    async fn configfs_dirs(&mut self) {
        let r = self.host.roce_configfs_dirs().await;
        self.line(format!("configfs rdma_cm: {}", outcome(&r, |d| list(d))));
    }

    async fn set_up(&mut self, netdev: &str, up: bool) {
        let r = self
            .host
            .change_netdev(
                netdev,
                &NetdevChange {
                    up: Some(up),
                    ..Default::default()
                },
            )
            .await;
        self.line(format!(
            "set {netdev} {}: {}",
            if up { "up" } else { "down" },
            done(&r)
        ));
        // The peer gains or loses carrier with it, but the kernel applies that later, from its
        // linkwatch work: rxe hears of it (NETDEV_CHANGE) just before the peer's RTM_NEWLINK
        // goes out. Port states read before that event race with it. Nothing is recorded:
        // the wait only orders the reads.
        let peer = match netdev {
            NETDEV_A => NETDEV_B,
            NETDEV_B => NETDEV_A,
            _ => return,
        };
        if r.is_ok()
            && !self
                .wait_event(|e| matches!(e, HostEvent::NetdevChanged { name } if name == peer))
                .await
        {
            eprintln!("set {netdev}: no change of {peer} reported within 5 s");
        }
    }

    /// Port 1 of each device through `poller`, which keeps its descriptors between polls:
    /// a kept descriptor must read the current value (sysfs regenerates an attribute at every
    /// read from offset 0; the simulated host tells its poller which files it replaced).
    fn poll_kept(&mut self, poller: &mut dyn PortPoller, devs: &[&str]) {
        let targets: Vec<PollTarget> = devs
            .iter()
            .map(|d| PollTarget {
                dev: d.to_string(),
                port: 1,
                counters: CounterSource::None,
                state: rdma_managerd::kernel::StatePoll::EveryPoll,
                lids: true,
            })
            .collect();
        let readings = poller.poll(&targets, LidTurn::ALL);
        let l = targets
            .iter()
            .zip(readings)
            .map(|(t, r)| format!("{}/{} {}", t.dev, t.port, format::poll_reading(&r)))
            .collect::<Vec<_>>()
            .join(", ");
        self.line(format!("port poll (kept) {l}"));
    }

    async fn port_state(&mut self, dev: &str) {
        let d = self.host.read_device(dev).await;
        let l = match d {
            Ok(d) => d
                .ports
                .iter()
                .map(|p| {
                    let state = format::port_state(&p.state, &p.phys_state);
                    format!("{dev}/{} {state}", p.number)
                })
                .collect::<Vec<_>>()
                .join(", "),
            Err(e) => format!("{dev}: err {}", e.code()),
        };
        self.line(format!("port state {l}"));
    }
}

/// Runs every scenario in order. The transcript is the result; `failures` lists
/// disagreements with the reference tools.
pub async fn run_all(run: &mut Run) {
    let nl_sys = run.host.nl_sys().await;
    run.line(match &nl_sys {
        Ok(s) => format!(
            "nl sys monitor_mode={}",
            format::opt(s.monitor_mode.map(u8::from))
        ),
        Err(e) => format!("nl sys: err {}", e.code()),
    });
    run.netdevs().await;
    let loaded = run.host.module_loaded("rdma_rxe").await;
    run.line(format!(
        "module rdma_rxe loaded before: {}",
        outcome(&loaded, |l| yes_no(*l))
    ));
    run.snapshot("empty").await;

    // Soft-RoCE over a veth.
    let _ = run.add("rxe0", SoftLinkType::Rxe, NETDEV_A).await;
    run.expect_event(
        "RdmaAdded rxe0",
        |e| matches!(e, HostEvent::RdmaAdded { name } if name == "rxe0"),
    )
    .await;
    let loaded = run.host.module_loaded("rdma_rxe").await;
    run.line(format!(
        "module rdma_rxe loaded after: {}",
        outcome(&loaded, |l| yes_no(*l))
    ));
    run.snapshot("rxe0").await;
    run.stats_shape("rxe0").await;

    // The kernel's refusals.
    let _ = run.add("rxe0", SoftLinkType::Rxe, NETDEV_B).await;
    let _ = run.add("rxe1", SoftLinkType::Rxe, NETDEV_A).await;
    let _ = run.add("rxe2", SoftLinkType::Rxe, "nosuch0").await;
    let _ = run.add("siw0", SoftLinkType::Siw, NETDEV_B).await;
    let _ = run.add("rxe%d", SoftLinkType::Rxe, NETDEV_B).await;
    let _ = run.add("", SoftLinkType::Rxe, NETDEV_B).await;

    // RoCE default mode through configfs.
    run.roce("rxe0", 1).await;
    run.set_roce("rxe0", 1, RoceMode::V2).await;
    run.set_roce("rxe0", 1, RoceMode::V1).await;
    run.roce("rxe0", 1).await;
    let r = run.host.set_roce_tos("rxe0", 1, 32).await;
    run.line(format!("set roce tos rxe0/1 32: {}", done(&r)));
    run.roce("rxe0", 1).await;
    run.roce("rxe0", 2).await;
    run.roce("nosuch", 1).await;
    run.configfs_dirs().await;

    // A second device, then rename.
    let _ = run.add("rxe1", SoftLinkType::Rxe, NETDEV_B).await;
    run.expect_event(
        "RdmaAdded rxe1",
        |e| matches!(e, HostEvent::RdmaAdded { name } if name == "rxe1"),
    )
    .await;
    if let Some(idx) = run.dev_index("rxe0").await {
        let r = run.host.rename_device(idx, "rxe1").await;
        run.line(format!("rename rxe0 -> rxe1: {}", done(&r)));
        let r = run.host.rename_device(idx, "rxe0").await;
        run.line(format!("rename rxe0 -> rxe0: {}", done(&r)));
        let r = run.host.rename_device(idx, "").await;
        run.line(format!("rename rxe0 -> '': {}", done(&r)));
        let r = run.host.rename_device(idx, "roce_lab").await;
        run.line(format!("rename rxe0 -> roce_lab: {}", done(&r)));
        run.expect_event("RdmaRenamed rxe0 -> roce_lab", |e| {
            matches!(e, HostEvent::RdmaRenamed { old, new } if old == "rxe0" && new == "roce_lab")
        })
        .await;
    } else {
        run.line("rename: rxe0 has no index");
    }
    let r = run.host.rename_device(9999, "x").await;
    run.line(format!("rename index 9999: {}", done(&r)));
    run.configfs_dirs().await;
    run.roce("rxe0", 1).await;
    run.roce("roce_lab", 1).await;
    run.set_roce("roce_lab", 1, RoceMode::V1).await;
    run.set_roce("roce_lab", 1, RoceMode::V2).await;
    run.configfs_dirs().await;
    run.snapshot("renamed").await;

    // Port state follows the netdev, read afresh and through the port poll's kept
    // descriptors (opened by the first poll, before the change).
    let mut poller = run.host.port_poller();
    run.poll_kept(&mut *poller, &["roce_lab", "rxe1"]);
    run.set_up(NETDEV_B, false).await;
    run.port_state("roce_lab").await;
    run.port_state("rxe1").await;
    run.poll_kept(&mut *poller, &["roce_lab", "rxe1"]);
    run.set_up(NETDEV_B, true).await;
    run.port_state("roce_lab").await;
    run.port_state("rxe1").await;
    run.poll_kept(&mut *poller, &["roce_lab", "rxe1"]);
    drop(poller);

    // Delete.
    for name in ["roce_lab", "rxe1"] {
        match run.dev_index(name).await {
            Some(idx) => {
                let r = run.host.delete_link(idx).await;
                run.line(format!("delete {name}: {}", done(&r)));
                let n = name.to_string();
                run.expect_event(
                    &format!("RdmaRemoved {name}"),
                    move |e| matches!(e, HostEvent::RdmaRemoved { name } if *name == n),
                )
                .await;
                let r = run.host.delete_link(idx).await;
                run.line(format!("delete {name} again: {}", done(&r)));
            }
            None => run.line(format!("delete {name}: no index")),
        }
    }
    run.snapshot("deleted").await;

    // Indices are allocated cyclically: a new device does not reuse a freed index.
    let _ = run.add("rxe0", SoftLinkType::Rxe, NETDEV_A).await;
    run.snapshot("re-added").await;
    if let Some(idx) = run.dev_index("rxe0").await {
        let r = run.host.delete_link(idx).await;
        run.line(format!("delete rxe0: {}", done(&r)));
    }
    run.configfs_dirs().await;

    // Adapter settings over rtnetlink: the requests iproute2 sends for the same settings.
    run.adapter_requests().await;
    run.line("== end");
}
