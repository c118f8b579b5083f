//! RDMA netlink notifications (`RDMA_NL_GROUP_NOTIFY`, RDMA_NLDEV_CMD_MONITOR messages),
//! turned into [`HostEvent`]s by a std thread.
//!
//! Only kernels that report SYS MONITOR_MODE = 1 send these (newer than Debian's 6.12), and
//! there are no port-state events: the daemon still needs udev, rtnetlink and polling. The
//! events carry indexes where the daemon thinks in names (RENAME gives only the new name,
//! NETDEV_RENAME only the netdev's index and new name), so the thread keeps the index-to-name
//! maps, loaded from a dump when it starts and reloaded after any loss.

use std::collections::{BTreeSet, HashMap};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use super::consts::{cmd, nldev_type, RDMA_NL_GROUP_NOTIFY};
use super::decode::{notification_from_body, Notification, NotifyKind};
use super::msg::parse_messages;
use super::socket::{is_timeout, open_socket, recv_datagram, NldevClient, Received};
use crate::kernel::{HostError, HostEvent, NlDevice, NlPort, Op};
use crate::model::Errno;

/// The `source` of the Overflow events this subscriber sends.
pub const SOURCE: &str = "rdma netlink";

/// How often the thread wakes up to notice that the receiver is gone.
const POLL: Duration = Duration::from_secs(1);

/// Receive buffer of the notification socket: bursts (hundreds of devices registering at
/// boot) should not overflow it.
const NOTIFY_RCVBUF: libc::c_int = 1 << 20;

/// Subscribes to RDMA_NL_GROUP_NOTIFY and forwards decoded events as [`HostEvent`]s on `tx`
/// from a std thread, until `tx`'s receiver is dropped. Lost notifications (ENOBUFS), and
/// ones that cannot be understood, become [`HostEvent::Overflow`] and the thread goes on.
///
/// Returns `Ok(None)` when the kernel does not report SYS MONITOR_MODE = 1 (it would never
/// send anything), including kernels too old for SYS_GET and kernels without RDMA netlink
/// at all: the caller's other event sources are then all there is.
pub fn spawn_notify(tx: UnboundedSender<HostEvent>) -> Result<Option<JoinHandle<()>>, HostError> {
    let client = match NldevClient::open() {
        Ok(c) => c,
        Err(HostError::Unsupported { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    if !monitor_mode(&client)? {
        return Ok(None);
    }
    // Subscribe first, then load the maps (in the thread), so that nothing falls between
    // the two.
    let sock = open_socket(1 << (RDMA_NL_GROUP_NOTIFY - 1), POLL)?;
    if let Err(e) = sock.set_rx_buf_sz(NOTIFY_RCVBUF) {
        tracing::debug!(error = %e, "RDMA netlink: could not enlarge the notification buffer");
    }
    // The maps are loaded in the thread, not before returning: a GET dump and one PORT_GET
    // a device is a large part of the daemon's start on a host of hundreds of devices, and
    // the subscribed socket keeps every notification sent meanwhile until `run` reads it.
    let handle = std::thread::Builder::new()
        .name("rdma-nl-notify".into())
        .spawn(move || {
            let mut state = NotifyState::default();
            if let Err(e) = state.resync(&client) {
                tracing::warn!(error = %e, "RDMA netlink: loading devices failed");
            }
            run(&sock, &client, state, &tx)
        })
        .map_err(|e| HostError::from_io(Op::NlDump("MONITOR"), &e))?;
    Ok(Some(handle))
}

/// Whether the kernel sends monitor events. Kernels before SYS_GET refuse the command.
fn monitor_mode(client: &NldevClient) -> Result<bool, HostError> {
    match client.sys() {
        Ok(sys) => Ok(sys.monitor_mode == Some(true)),
        Err(e) if matches!(e.errno(), Some(Errno::EINVAL | Errno::EOPNOTSUPP)) => Ok(false),
        Err(e) => Err(e),
    }
}

fn overflow() -> HostEvent {
    HostEvent::Overflow {
        source: SOURCE.into(),
    }
}

fn run(
    sock: &netlink_sys::Socket,
    client: &NldevClient,
    mut state: NotifyState,
    tx: &UnboundedSender<HostEvent>,
) {
    let mut buf = Vec::new();
    while !tx.is_closed() {
        let events = match recv_datagram(sock, &mut buf) {
            Ok(Received::FromKernel) => events_of_datagram(&buf, &mut state),
            Ok(Received::NotFromKernel(pid)) => {
                tracing::debug!(
                    pid,
                    "RDMA netlink: ignoring a notification not from the kernel"
                );
                continue;
            }
            Err(e) if is_timeout(&e) => continue,
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => vec![overflow()],
            Err(e) => {
                tracing::warn!(error = %e, "RDMA netlink: receiving notifications failed");
                std::thread::sleep(POLL);
                continue;
            }
        };
        if events
            .iter()
            .any(|e| matches!(e, HostEvent::Overflow { .. }))
        {
            if let Err(e) = state.resync(client) {
                tracing::warn!(error = %e, "RDMA netlink: reloading devices failed");
            }
        }
        for ev in events {
            if tx.send(ev).is_err() {
                return;
            }
        }
    }
}

/// The events of one datagram. Undecodable input is an Overflow: something happened that
/// the subscriber did not learn about.
pub fn events_of_datagram(buf: &[u8], state: &mut NotifyState) -> Vec<HostEvent> {
    let msgs = match parse_messages(buf) {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(error = %e, "RDMA netlink: malformed notification datagram");
            return vec![overflow()];
        }
    };
    let mut out = Vec::new();
    for m in msgs.iter().filter(|m| m.kind == nldev_type(cmd::MONITOR)) {
        match notification_from_body(m.payload) {
            Ok(n) => out.extend(state.apply(&n)),
            Err(e) => {
                tracing::warn!(error = %e, "RDMA netlink: malformed notification");
                out.push(overflow());
            }
        }
    }
    out
}

/// What the subscriber knows about names, to give events the names the daemon uses.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct NotifyState {
    /// RDMA device index -> name.
    devices: HashMap<u32, String>,
    /// netdev ifindex -> its name (when known) and the RDMA devices with a port on it.
    netdevs: HashMap<u32, NetdevLink>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct NetdevLink {
    name: Option<String>,
    devices: BTreeSet<u32>,
}

impl NotifyState {
    /// Reloads the maps from the kernel (GET dump, then each device's PORT_GET dump).
    pub fn resync(&mut self, client: &NldevClient) -> Result<(), HostError> {
        let devices = client.devices()?;
        let mut ports = Vec::new();
        for d in &devices {
            match client.device_ports(d.index) {
                Ok(p) => ports.extend(p),
                // Gone since the GET dump: its UNREGISTER is already queued.
                Err(e) if e.is_not_found() || e.errno() == Some(Errno::EINVAL) => {}
                Err(e) => return Err(e),
            }
        }
        self.load(&devices, &ports);
        Ok(())
    }

    /// Replaces the maps with what a dump says.
    pub fn load(&mut self, devices: &[NlDevice], ports: &[NlPort]) {
        self.devices = devices.iter().map(|d| (d.index, d.name.clone())).collect();
        self.netdevs.clear();
        for p in ports {
            if let Some(ifindex) = p.netdev_index {
                let link = self.netdevs.entry(ifindex).or_default();
                link.devices.insert(p.dev_index);
                if p.netdev_name.is_some() {
                    link.name.clone_from(&p.netdev_name);
                }
            }
        }
    }

    /// The events one notification means, updating the maps. Anything that cannot be named
    /// is an Overflow, so the subscriber re-reads everything rather than miss a change.
    pub fn apply(&mut self, n: &Notification) -> Vec<HostEvent> {
        match n.kind {
            NotifyKind::Register => self.registered(n),
            NotifyKind::Unregister => self.unregistered(n),
            NotifyKind::Rename => self.renamed(n),
            NotifyKind::NetdevAttach => self.netdev_attached(n, true),
            NotifyKind::NetdevDetach => self.netdev_attached(n, false),
            NotifyKind::NetdevRename => self.netdev_renamed(n),
            NotifyKind::Unknown(kind) => {
                tracing::debug!(kind, "RDMA netlink: ignoring an unknown event type");
                Vec::new()
            }
        }
    }

    /// The device's name: from the event, else from the map.
    fn dev_name(&self, n: &Notification) -> Option<String> {
        n.dev_name
            .clone()
            .or_else(|| n.dev_index.and_then(|i| self.devices.get(&i).cloned()))
    }

    fn registered(&mut self, n: &Notification) -> Vec<HostEvent> {
        let Some(name) = self.dev_name(n) else {
            return vec![overflow()];
        };
        if let Some(i) = n.dev_index {
            self.devices.insert(i, name.clone());
        }
        vec![HostEvent::RdmaAdded { name }]
    }

    fn unregistered(&mut self, n: &Notification) -> Vec<HostEvent> {
        let name = self.dev_name(n);
        if let Some(i) = n.dev_index {
            self.devices.remove(&i);
            for link in self.netdevs.values_mut() {
                link.devices.remove(&i);
            }
        }
        match name {
            Some(name) => vec![HostEvent::RdmaRemoved { name }],
            None => vec![overflow()],
        }
    }

    fn renamed(&mut self, n: &Notification) -> Vec<HostEvent> {
        let (Some(index), Some(new)) = (n.dev_index, n.dev_name.clone()) else {
            return vec![overflow()];
        };
        match self.devices.insert(index, new.clone()) {
            Some(old) if old == new => Vec::new(),
            Some(old) => vec![HostEvent::RdmaRenamed { old, new }],
            // The old name is unknown: only a full re-read can tell what it replaced.
            None => vec![overflow()],
        }
    }

    fn netdev_attached(&mut self, n: &Notification, attached: bool) -> Vec<HostEvent> {
        if let (Some(dev), Some(ifindex)) = (n.dev_index, n.netdev_index) {
            let link = self.netdevs.entry(ifindex).or_default();
            if attached {
                link.devices.insert(dev);
            } else {
                link.devices.remove(&dev);
            }
            if n.netdev_name.is_some() {
                link.name.clone_from(&n.netdev_name);
            }
        }
        match self.dev_name(n) {
            Some(name) => vec![HostEvent::RdmaChanged { name }],
            None => vec![overflow()],
        }
    }

    fn netdev_renamed(&mut self, n: &Notification) -> Vec<HostEvent> {
        let Some(new) = n.netdev_name.clone() else {
            return vec![overflow()];
        };
        let link = n
            .netdev_index
            .map(|i| self.netdevs.entry(i).or_default().clone());
        let mut out = match link.as_ref().and_then(|l| l.name.clone()) {
            Some(old) if old == new => Vec::new(),
            Some(old) => vec![HostEvent::NetdevRenamed {
                old,
                new: new.clone(),
            }],
            None => vec![HostEvent::NetdevChanged { name: new.clone() }],
        };
        if let (Some(i), Some(link)) = (n.netdev_index, link) {
            for dev in &link.devices {
                if let Some(name) = self.devices.get(dev) {
                    out.push(HostEvent::RdmaChanged { name: name.clone() });
                }
            }
            if let Some(l) = self.netdevs.get_mut(&i) {
                l.name = Some(new);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::consts::attr as a;
    use super::super::consts::event;
    use super::super::msg::testutil::*;
    use super::*;

    fn note(kind: NotifyKind) -> Notification {
        Notification {
            kind,
            dev_index: None,
            dev_name: None,
            port: None,
            netdev_index: None,
            netdev_name: None,
        }
    }

    fn port(dev_index: u32, dev_name: &str, ifindex: u32, netdev: &str) -> NlPort {
        NlPort {
            dev_index,
            dev_name: dev_name.into(),
            port: 1,
            state: Some(4),
            phys_state: Some(5),
            lid: None,
            sm_lid: None,
            lmc: None,
            subnet_prefix: None,
            cap_flags: None,
            netdev_index: Some(ifindex),
            netdev_name: Some(netdev.into()),
        }
    }

    fn device(index: u32, name: &str) -> NlDevice {
        NlDevice {
            index,
            name: name.into(),
            node_type: Some(1),
            node_guid: None,
            sys_image_guid: None,
            fw_version: None,
            cap_flags: None,
            protocol: None,
            port_count: Some(1),
            name_assign_type: None,
        }
    }

    fn lab_state() -> NotifyState {
        let mut s = NotifyState::default();
        s.load(&[device(1, "rxe0")], &[port(1, "rxe0", 3, "veth0")]);
        s
    }

    /// A MONITOR message as `rdma_nl_notify_event` multicasts it (pid 0, seq 0).
    fn monitor(ev: u8, dev: Option<(u32, &str)>, ndev: Option<(u32, &str)>) -> Vec<u8> {
        let mut b = Vec::new();
        if let Some((i, name)) = dev {
            a_u32(&mut b, a::DEV_INDEX, i);
            a_str(&mut b, a::DEV_NAME, name);
        }
        if let Some((i, name)) = ndev {
            a_u32(&mut b, a::NDEV_INDEX, i);
            a_str(&mut b, a::NDEV_NAME, name);
        }
        a_u8(&mut b, a::EVENT_TYPE, ev);
        kmsg(nldev_type(cmd::MONITOR), 0, 0, &b)
    }

    #[test]
    fn register_rename_unregister() {
        let mut s = lab_state();
        let mut dgram = monitor(event::REGISTER, Some((2, "rxe1")), None);
        dgram.extend(monitor(event::RENAME, Some((2, "roce_lab")), None));
        dgram.extend(monitor(event::UNREGISTER, Some((2, "roce_lab")), None));
        assert_eq!(
            events_of_datagram(&dgram, &mut s),
            vec![
                HostEvent::RdmaAdded {
                    name: "rxe1".into()
                },
                HostEvent::RdmaRenamed {
                    old: "rxe1".into(),
                    new: "roce_lab".into()
                },
                HostEvent::RdmaRemoved {
                    name: "roce_lab".into()
                },
            ]
        );
        assert_eq!(s, lab_state());
    }

    #[test]
    fn rename_of_an_unknown_device_asks_for_a_reread() {
        let mut s = NotifyState::default();
        let dgram = monitor(event::RENAME, Some((9, "new")), None);
        assert_eq!(events_of_datagram(&dgram, &mut s), vec![overflow()]);
    }

    #[test]
    fn netdev_events() {
        let mut s = lab_state();
        // Old kernels' attach carries indexes only.
        let mut n = note(NotifyKind::NetdevAttach);
        n.dev_index = Some(1);
        n.port = Some(1);
        n.netdev_index = Some(7);
        assert_eq!(
            s.apply(&n),
            vec![HostEvent::RdmaChanged {
                name: "rxe0".into()
            }]
        );
        // NETDEV_RENAME: only the netdev's index and new name.
        let dgram = monitor(event::NETDEV_RENAME, None, Some((3, "lab0")));
        assert_eq!(
            events_of_datagram(&dgram, &mut s),
            vec![
                HostEvent::NetdevRenamed {
                    old: "veth0".into(),
                    new: "lab0".into()
                },
                HostEvent::RdmaChanged {
                    name: "rxe0".into()
                },
            ]
        );
        // A netdev this subscriber never heard of.
        let dgram = monitor(event::NETDEV_RENAME, None, Some((42, "x0")));
        assert_eq!(
            events_of_datagram(&dgram, &mut s),
            vec![HostEvent::NetdevChanged { name: "x0".into() }]
        );
        // Detach.
        let dgram = monitor(event::NETDEV_DETACH, Some((1, "rxe0")), Some((3, "lab0")));
        assert_eq!(
            events_of_datagram(&dgram, &mut s),
            vec![HostEvent::RdmaChanged {
                name: "rxe0".into()
            }]
        );
        assert!(s.netdevs[&3].devices.is_empty());
    }

    #[test]
    fn garbage_is_an_overflow_and_other_types_are_ignored() {
        let mut s = lab_state();
        let mut bad = monitor(event::REGISTER, Some((2, "rxe1")), None);
        bad[0] = 0xee; // message length beyond the datagram
        assert_eq!(events_of_datagram(&bad, &mut s), vec![overflow()]);
        // A MONITOR message without EVENT_TYPE.
        let m = kmsg(nldev_type(cmd::MONITOR), 0, 0, &[]);
        assert_eq!(events_of_datagram(&m, &mut s), vec![overflow()]);
        // Some other message type on the group, and an unknown event type.
        let other = kmsg(nldev_type(cmd::GET), 0, 0, &[]);
        assert!(events_of_datagram(&other, &mut s).is_empty());
        let future = monitor(77, Some((1, "rxe0")), None);
        assert!(events_of_datagram(&future, &mut s).is_empty());
    }

    #[test]
    fn spawn_without_monitor_support_is_none() {
        // This machine has no RDMA netlink (or, in the lab, no monitor mode): no thread.
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        match spawn_notify(tx) {
            Ok(None) => {}
            Ok(Some(h)) => {
                // A kernel with monitor mode: the thread ends once the receiver is gone.
                drop(_rx);
                h.join().expect("notify thread");
            }
            Err(e) => panic!("{e}"),
        }
    }
}
