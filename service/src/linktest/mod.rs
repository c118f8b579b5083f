//! Link tests: from a port to a peer, over RDMA (rdma_cm, RC: a latency ping-pong, then
//! bandwidth), ICMP over the port's netdev, or on InfiniBand infiniband-diags' ping to the
//! peer port's LID, with a typed reason when they fail; and the responder that lets a peer
//! test against this host.
//!
//! The tests drive the field's tools rather than verbs code of the daemon's own: perftest's
//! `ib_send_lat`/`ib_send_bw` with `-R` (rdma_cm) and iputils' `ping` (docs/ARCHITECTURE.md,
//! "Link tests", says why); the InfiniBand ping is the daemon's own `rdma-managerd ibping`
//! ([`ibping`]), on the umad device the daemon opens for it. Each runs in a [`sandbox`] with none of the daemon's privileges,
//! killed with its process group at the test's timeout; a bounded number run at once
//! ([`LinkTestConfig::max_concurrent`], then `Busy`).
//!
//! - [`peer`]: the peer as given (address, GID, LID) to the address the tools take.
//! - [`perftest`], [`ping`]: command lines and output parsers, strict.
//! - [`ibping`]: the InfiniBand ping (vendor class 0x32), both sides, and its output.
//! - [`reason`]: the typed reasons. [`sandbox`]: the child process and its [`sandbox::Runner`].
//! - [`responder`]: perftest's servers kept running while enabled.
//! - [`settings`]: the responder's setting, `/etc/rdma-manager/link-test.toml`.

pub use rdma_manager_model::linktest as peer;
pub mod ibping;
pub mod perftest;
pub mod ping;
pub mod reason;
pub mod responder;
pub mod sandbox;
pub mod settings;

use std::collections::VecDeque;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rdma_manager_dbus::text::quote_capped;
use rdma_manager_dbus::types::{Gid, LinkResponder, LinkTestResult};
use tokio::sync::Semaphore;

use crate::kernel::Host;
use crate::op_error::OpError;
use reason::{Failure, Reason};
use sandbox::{Runner, SandboxRunner};

/// The tools, the runner and the bounds of the link tests.
#[derive(Clone)]
pub struct LinkTestConfig {
    pub send_lat: PathBuf,
    pub send_bw: PathBuf,
    pub ping: PathBuf,
    /// The program run as `PROGRAM ibping ...`: rdma-managerd itself.
    pub ibping: PathBuf,
    pub runner: Arc<dyn Runner>,
    /// Tests that may run at once; one more is refused with `Busy`.
    pub max_concurrent: usize,
}

impl std::fmt::Debug for LinkTestConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkTestConfig")
            .field("send_lat", &self.send_lat)
            .field("send_bw", &self.send_bw)
            .field("ping", &self.ping)
            .field("ibping", &self.ibping)
            .field("max_concurrent", &self.max_concurrent)
            .finish_non_exhaustive()
    }
}

impl Default for LinkTestConfig {
    fn default() -> Self {
        LinkTestConfig {
            send_lat: sandbox::locate("ib_send_lat"),
            send_bw: sandbox::locate("ib_send_bw"),
            ping: sandbox::locate("ping"),
            ibping: ibping_program(),
            runner: Arc::new(SandboxRunner {
                sandbox: sandbox::Sandbox::unprivileged(),
            }),
            // Two: a test each way at once, or one while another is being looked at; every
            // test spends the link, so more would measure each other.
            max_concurrent: 2,
        }
    }
}

/// The program that runs `ibping`: this one when it is rdma-managerd, else (the demo inside
/// rdma-tui) the rdma-managerd beside it, or the one on the PATH.
fn ibping_program() -> PathBuf {
    let exe = std::env::current_exe().ok();
    if let Some(exe) = &exe {
        if exe.file_name().is_some_and(|n| n == "rdma-managerd") {
            return exe.clone();
        }
        let beside = exe.with_file_name("rdma-managerd");
        if beside.is_file() {
            return beside;
        }
    }
    sandbox::locate("rdma-managerd")
}

pub use rdma_manager_model::linktest::{Stage, DEFAULT_TIMEOUT_S, MAX_DURATION_S, MAX_TIMEOUT_S};

/// Hears a test as it goes: each stage with the result so far.
pub type Progress<'a> = &'a (dyn Fn(Stage, &LinkTestResult) + Send + Sync);
/// The results kept for `RecentLinkTests`.
pub const RECENT: usize = 32;

/// What a test needs to know of the port it runs from (the Port object's view).
#[derive(Debug, Clone, Default)]
pub struct PortInfo {
    pub device: String,
    pub port: u32,
    pub state: String,
    pub link_layer: String,
    pub netdev: String,
    pub gids: Vec<Gid>,
    pub roce_mode: String,
    pub roce_tos: u8,
    /// The port's active IB MTU in bytes (0 when not known).
    pub active_mtu: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Rdma,
    Icmp,
    Ibping,
}

impl Kind {
    pub fn parse(s: &str) -> Result<Kind, OpError> {
        match s {
            "rdma" => Ok(Kind::Rdma),
            "icmp" => Ok(Kind::Icmp),
            "ibping" => Ok(Kind::Ibping),
            _ => Err(OpError::InvalidArgument(format!(
                "kind {} is not a link test: rdma, icmp or ibping",
                quote_capped(s)
            ))),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Kind::Rdma => "rdma",
            Kind::Icmp => "icmp",
            Kind::Ibping => "ibping",
        }
    }
}

/// What a test is pointed at: an IP address (rdma, icmp) or a LID (ibping).
#[derive(Debug, Clone, Copy)]
enum Target {
    Ip(IpAddr),
    Lid(u16),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Ip(a) => write!(f, "{a}"),
            Target::Lid(l) => write!(f, "{l}"),
        }
    }
}

/// What a tool's process is given beyond the sandbox's nothing.
enum Grant {
    None,
    /// `CAP_NET_RAW`, for ping (`Runner::run_with_net_raw`).
    NetRaw,
    /// A device as its descriptor 3, for ibping (`Runner::run_with_fd`).
    Device(std::os::fd::OwnedFd),
}

/// The daemon's link tests: the tools, the slots, the recent results and the responder.
pub struct LinkTests {
    config: LinkTestConfig,
    slots: Arc<Semaphore>,
    recent: Mutex<VecDeque<LinkTestResult>>,
    responder: responder::Responder,
    host: Arc<dyn Host>,
    /// Serialises changes of the responder's setting (file and servers together).
    setting: tokio::sync::Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl LinkTests {
    pub fn new(config: LinkTestConfig, host: Arc<dyn Host>) -> LinkTests {
        let responder = responder::Responder::new(
            config.runner.clone(),
            config.send_lat.clone(),
            config.send_bw.clone(),
            config.ibping.clone(),
            host.clone(),
        );
        LinkTests {
            slots: Arc::new(Semaphore::new(config.max_concurrent)),
            config,
            recent: Mutex::new(VecDeque::new()),
            responder,
            host,
            setting: tokio::sync::Mutex::new(()),
        }
    }

    /// Re-applies the remembered responder setting (at start). A file that cannot be read
    /// leaves the responder off and says why in the log.
    pub async fn restore(&self) {
        match settings::load(self.host.as_ref()).await {
            Ok(s) => self.responder.set(s.responder),
            Err(e) => tracing::warn!(error = %e, "link-test settings not applied"),
        }
    }

    /// Enables or disables the responder and remembers it; a setting that cannot be saved
    /// changes nothing.
    pub async fn set_responder(&self, enabled: bool) -> Result<(), OpError> {
        let _one = self.setting.lock().await;
        let mut s = settings::load(self.host.as_ref())
            .await
            .map_err(|e| OpError::Failed(e.to_string()))?;
        if s.responder != enabled {
            s.responder = enabled;
            settings::save(self.host.as_ref(), &s)
                .await
                .map_err(|e| OpError::Failed(e.to_string()))?;
        }
        self.responder.set(enabled);
        Ok(())
    }

    pub fn responder(&self) -> LinkResponder {
        self.responder.status()
    }

    /// The engine's devices, (index, name), may have changed: the responder serves the
    /// InfiniBand ports there are now. `devices` is asked only while it is enabled.
    pub fn devices_changed(
        &self,
        devices: impl FnOnce() -> std::collections::BTreeSet<(u32, String)>,
    ) {
        self.responder.devices_changed(devices);
    }

    /// The last results, oldest first.
    pub fn recent(&self) -> Vec<LinkTestResult> {
        lock(&self.recent).iter().cloned().collect()
    }

    /// Runs one test from `port`. Bad input is an error with nothing run; a test that ran
    /// (or could not, the port being down) is a result, passed or with its reason.
    /// `progress` hears the test as it goes (see [`Stage`]): the result so far at each stage.
    pub async fn test(
        &self,
        port: PortInfo,
        peer: &str,
        kind: &str,
        duration_s: u32,
        timeout_s: u32,
        progress: Progress<'_>,
    ) -> Result<LinkTestResult, OpError> {
        let kind = Kind::parse(kind)?;
        // ibping reaches a LID; the other kinds an IP address (or a GID that is one).
        let target = if kind == Kind::Ibping {
            Target::Lid(peer::parse_lid(peer.trim()).ok_or_else(|| {
                OpError::InvalidArgument(format!(
                    "peer {} is not a LID (1 to 0xbfff, decimal or 0x hex): kind ibping pings the peer port's LID",
                    quote_capped(peer)
                ))
            })?)
        } else {
            Target::Ip(peer::parse_peer(peer).map_err(|e| match e {
                peer::PeerError::Lid(_) => OpError::NotSupported(e.to_string()),
                _ => OpError::InvalidArgument(e.to_string()),
            })?)
        };
        let bad = |e: peer::BoundError| OpError::InvalidArgument(e.to_string());
        let duration_s = peer::check_duration(duration_s).map_err(bad)?;
        let timeout_s = peer::check_timeout(timeout_s).map_err(bad)?;
        if kind == Kind::Ibping && port.link_layer != "InfiniBand" {
            return Err(OpError::NotSupported(format!(
                "port {}/{} is {}, not InfiniBand: ibping pings over InfiniBand's management datagrams; test this port with kind rdma or icmp",
                port.device,
                port.port,
                if port.link_layer.is_empty() { "of no known link layer" } else { &port.link_layer }
            )));
        }
        if kind == Kind::Icmp && port.netdev.is_empty() {
            return Err(OpError::NotSupported(format!(
                "port {}/{} has no netdev to send ICMP from",
                port.device, port.port
            )));
        }
        let _slot = self.slots.clone().try_acquire_owned().map_err(|_| {
            OpError::Busy(format!(
                "{} link tests are running, the most at once; try again when one ends",
                self.config.max_concurrent
            ))
        })?;
        let started = Instant::now();
        let mut result = LinkTestResult {
            kind: kind.as_str().into(),
            peer: peer.to_string(),
            address: target.to_string(),
            started_us: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_micros() as u64)
                .unwrap_or(0),
            device: port.device.clone(),
            port: port.port,
            netdev: port.netdev.clone(),
            gid_index: -1,
            roce_mode: port.roce_mode.clone(),
            tos: port.roce_tos,
            ..LinkTestResult::default()
        };
        let deadline = started + Duration::from_secs(u64::from(timeout_s));
        progress(Stage::Running, &result);
        let outcome = if port.state != "ACTIVE" {
            Err(Failure::new(
                Reason::PortDown,
                format!(
                    "port {}/{} is {}, not ACTIVE: nothing was sent",
                    port.device,
                    port.port,
                    if port.state.is_empty() {
                        "in no known state"
                    } else {
                        &port.state
                    }
                ),
            ))
        } else {
            match target {
                Target::Lid(lid) => {
                    result.tool = "ibping".into();
                    self.ibping(&port, lid, duration_s, deadline, &mut result)
                        .await
                }
                Target::Ip(address) if kind == Kind::Icmp => {
                    result.tool = "ping".into();
                    self.icmp(&port, address, duration_s, deadline, &mut result)
                        .await
                }
                Target::Ip(address) => {
                    result.tool = "ib_send_lat+ib_send_bw".into();
                    self.rdma(&port, address, duration_s, deadline, &mut result, progress)
                        .await
                }
            }
        };
        match outcome {
            Ok(()) => result.passed = true,
            Err(f) => {
                result.reason = f.reason.as_str().into();
                result.detail = rdma_manager_dbus::text::cap_message(&f.detail);
            }
        }
        result.elapsed_ms = started.elapsed().as_millis() as u64;
        {
            let mut recent = lock(&self.recent);
            if recent.len() == RECENT {
                recent.pop_front();
            }
            recent.push_back(result.clone());
        }
        progress(Stage::Done, &result);
        Ok(result)
    }

    async fn run(
        &self,
        program: &Path,
        args: &[String],
        deadline: Instant,
        what: &str,
    ) -> Result<sandbox::Output, Failure> {
        self.run_granted(program, args, deadline, what, Grant::None)
            .await
    }

    /// As `run`, with what the tool is granted.
    async fn run_granted(
        &self,
        program: &Path,
        args: &[String],
        deadline: Instant,
        what: &str,
        grant: Grant,
    ) -> Result<sandbox::Output, Failure> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Failure::new(
                Reason::Timeout,
                format!("no time was left for {what} within the timeout"),
            ));
        }
        let runner = &self.config.runner;
        let out = match grant {
            Grant::None => runner.run(program, args, left).await,
            Grant::NetRaw => runner.run_with_net_raw(program, args, left).await,
            Grant::Device(fd) => runner.run_with_fd(program, args, left, fd).await,
        }
        .map_err(|e| {
            Failure::new(
                Reason::ToolFailed,
                format!("{} could not run: {e}", program.display()),
            )
        })?;
        if out.timed_out {
            return Err(Failure::new(
                Reason::Timeout,
                format!("{what} did not end within the timeout; it was stopped"),
            ));
        }
        Ok(out)
    }

    async fn rdma(
        &self,
        port: &PortInfo,
        peer: IpAddr,
        duration_s: u32,
        deadline: Instant,
        result: &mut LinkTestResult,
        progress: Progress<'_>,
    ) -> Result<(), Failure> {
        let source = source_address(&port.gids, peer);
        for bandwidth in [false, true] {
            let (program, tcp) = if bandwidth {
                (&self.config.send_bw, perftest::BW_PORT)
            } else {
                (&self.config.send_lat, perftest::LAT_PORT)
            };
            let args =
                perftest::client_args(bandwidth, &port.device, port.port, source, peer, duration_s);
            let what = if bandwidth {
                "the bandwidth test"
            } else {
                "the latency test"
            };
            let mut out = self.run(program, &args, deadline, what).await?;
            // The responder starts each server again after every test: a test that follows
            // another at once may find it starting. One more try, once, within the timeout.
            if out.code != Some(0) {
                let f = perftest::classify_failure(
                    &format!("{}\n{}", out.stdout, out.stderr),
                    peer,
                    tcp,
                );
                if f.reason != Reason::NoResponder {
                    return Err(f);
                }
                tokio::time::sleep(
                    Duration::from_millis(500)
                        .min(deadline.saturating_duration_since(Instant::now())),
                )
                .await;
                out = self.run(program, &args, deadline, what).await?;
                if out.code != Some(0) {
                    return Err(perftest::classify_failure(
                        &format!("{}\n{}", out.stdout, out.stderr),
                        peer,
                        tcp,
                    ));
                }
            }
            // A format the parsers do not know is kept in the result (capped) and logged
            // whole: it is to be read, not guessed at.
            let keep = |f: Failure| {
                if f.reason == Reason::UnexpectedOutput {
                    tracing::warn!(
                        tool = %program.display(),
                        stdout = %out.stdout,
                        stderr = %out.stderr,
                        "perftest printed what its parser does not know"
                    );
                }
                f.with_output(&out)
            };
            let conn = perftest::parse_connection(&out.stdout).map_err(keep)?;
            if bandwidth {
                let bw = perftest::parse_bandwidth(&out.stdout).map_err(keep)?;
                result.bandwidth_gbps = bw.avg_gbps;
            } else {
                let lat = perftest::parse_latency(&out.stdout).map_err(keep)?;
                result.latency_p50_us = lat.typical;
                result.latency_p99_us = lat.p99;
                result.latency_max_us = lat.max;
                result.latency_avg_us = lat.avg;
                result.round_trips = lat.iterations;
                result.mtu = conn.mtu;
                if let Some(local) = conn.local_gid {
                    result.gid = sysfs_gid(local);
                    if let Some(g) = port
                        .gids
                        .iter()
                        .find(|g| peer::gid_address(&g.gid) == Some(local))
                    {
                        result.gid_index = g.index as i32;
                        result.gid_type = g.gid_type.clone();
                    }
                }
                progress(Stage::Bandwidth, result);
            }
        }
        Ok(())
    }

    async fn icmp(
        &self,
        port: &PortInfo,
        peer: IpAddr,
        duration_s: u32,
        deadline: Instant,
        result: &mut LinkTestResult,
    ) -> Result<(), Failure> {
        let duration_s = if duration_s == 0 { 2 } else { duration_s };
        let count = duration_s * 1000 / ping::INTERVAL_MS;
        // One second more than the requests take, for the last reply.
        let args = ping::args(&port.netdev, peer, count, duration_s + 1);
        result.mtu = self.netdev_mtu(&port.netdev).await;
        let out = self
            .run_granted(&self.config.ping, &args, deadline, "ping", Grant::NetRaw)
            .await?;
        let echo = ping::parse(&out.stdout, &out.stderr, out.code, peer)
            .map_err(|f| f.with_output(&out))?;
        fill_round_trips(result, &echo);
        Ok(())
    }

    /// infiniband-diags' ping to `lid`, one every [`ping::INTERVAL_MS`] for the duration
    /// (2 s when 0), each answered within that interval or counted lost: a peer that never
    /// answers ends the test in its duration, as no-responder, not at the timeout.
    async fn ibping(
        &self,
        port: &PortInfo,
        lid: u16,
        duration_s: u32,
        deadline: Instant,
        result: &mut LinkTestResult,
    ) -> Result<(), Failure> {
        let duration_s = if duration_s == 0 { 2 } else { duration_s };
        let count = (duration_s * 1000 / ping::INTERVAL_MS).max(1);
        let device = self
            .host
            .open_umad(&port.device, port.port)
            .await
            .map_err(|e| {
                Failure::new(
                    Reason::ToolFailed,
                    format!(
                        "the umad device of {}/{} could not be opened: {e}",
                        port.device, port.port
                    ),
                )
            })?;
        let args: Vec<String> = [
            "ibping",
            "--fd",
            "3",
            "-c",
            &count.to_string(),
            "--interval-ms",
            &ping::INTERVAL_MS.to_string(),
            "--timeout-ms",
            &ping::INTERVAL_MS.to_string(),
            &lid.to_string(),
        ]
        .iter()
        .map(|a| a.to_string())
        .collect();
        result.mtu = port.active_mtu;
        let out = self
            .run_granted(
                &self.config.ibping,
                &args,
                deadline,
                "ibping",
                Grant::Device(device),
            )
            .await?;
        let (echo, host) = ibping::output::parse(&out.stdout, &out.stderr, out.code, lid)
            .map_err(|f| f.with_output(&out))?;
        fill_round_trips(result, &echo);
        result.detail = format!("Lid {lid} answered as {host}");
        Ok(())
    }

    async fn netdev_mtu(&self, netdev: &str) -> u32 {
        if crate::model::names::validate_netdev_name(netdev).is_err() {
            return 0;
        }
        let path = PathBuf::from(format!("/sys/class/net/{netdev}/mtu"));
        match self.host.read_file(&path).await {
            Ok(Some(b)) => String::from_utf8_lossy(&b).trim().parse().unwrap_or(0),
            _ => 0,
        }
    }
}

/// The latency figures and counts of an echo-style test (ping, ibping).
fn fill_round_trips(result: &mut LinkTestResult, echo: &ping::Echo) {
    let mut rtts = echo.rtts_us.clone();
    rtts.sort_by(f64::total_cmp);
    result.latency_p50_us = ping::percentile(&rtts, 50.0);
    result.latency_p99_us = ping::percentile(&rtts, 99.0);
    result.latency_max_us = rtts.last().copied().unwrap_or(0.0);
    result.latency_avg_us = rtts.iter().sum::<f64>() / rtts.len().max(1) as f64;
    result.round_trips = echo.received;
    result.errors = echo.transmitted.saturating_sub(echo.received);
}

/// The port's address of the peer's family, from its RoCE v2 GIDs (which are its netdev's
/// addresses), so that rdma_cm leaves from this port; `None` on InfiniBand or where the
/// port has none (rdma_cm then routes by the peer's address alone).
fn source_address(gids: &[Gid], peer: IpAddr) -> Option<IpAddr> {
    gids.iter()
        .filter(|g| g.gid_type == "RoCE v2")
        .filter_map(|g| peer::gid_address(&g.gid))
        .find_map(|a| match (a.to_ipv4_mapped(), peer) {
            (Some(v4), IpAddr::V4(_)) => Some(IpAddr::V4(v4)),
            (None, IpAddr::V6(_)) if a.segments()[0] & 0xffc0 != 0xfe80 => Some(IpAddr::V6(a)),
            _ => None,
        })
}

/// A GID in the Port's `Gids` form (eight groups of four hex digits).
fn sysfs_gid(a: std::net::Ipv6Addr) -> String {
    a.segments()
        .iter()
        .map(|s| format!("{s:04x}"))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gid(index: u32, gid: &str, t: &str) -> Gid {
        Gid {
            index,
            gid: gid.into(),
            gid_type: t.into(),
            netdev: "eth0".into(),
        }
    }

    #[test]
    fn the_source_is_the_ports_address_of_the_peers_family() {
        let gids = [
            gid(0, "fe80:0000:0000:0000:5054:00ff:fe12:3456", "IB/RoCE v1"),
            gid(1, "fe80:0000:0000:0000:5054:00ff:fe12:3456", "RoCE v2"),
            gid(2, "0000:0000:0000:0000:0000:ffff:c0a8:4d0a", "IB/RoCE v1"),
            gid(3, "0000:0000:0000:0000:0000:ffff:c0a8:4d0a", "RoCE v2"),
            gid(5, "fd00:0000:0000:0000:0000:0000:0000:000a", "RoCE v2"),
        ];
        assert_eq!(
            source_address(&gids, "192.168.77.11".parse().unwrap()),
            Some("192.168.77.10".parse().unwrap())
        );
        assert_eq!(
            source_address(&gids, "fd00::11".parse().unwrap()),
            Some("fd00::a".parse().unwrap())
        );
        assert_eq!(
            source_address(&gids[..2], "192.168.77.11".parse().unwrap()),
            None
        );
        assert_eq!(
            sysfs_gid("::ffff:192.168.77.10".parse().unwrap()),
            "0000:0000:0000:0000:0000:ffff:c0a8:4d0a"
        );
    }
}
