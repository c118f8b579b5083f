//! Link notifications (RTMGRP_LINK) and address notifications (RTMGRP_IPV4_IFADDR,
//! RTMGRP_IPV6_IFADDR) as [`HostEvent`]s.
//!
//! The socket is read directly (not through netlink-proto, which logs ENOBUFS and drops it):
//! a full receive buffer becomes `HostEvent::Overflow { source: "rtnetlink" }`, the
//! ifindex -> name map is rebuilt from a fresh dump, and watching goes on.

use std::collections::HashMap;

use netlink_packet_core::{NetlinkBuffer, NetlinkMessage, NetlinkPayload};
use netlink_packet_route::link::LinkMessage;
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, AsyncSocket, AsyncSocketExt, SocketAddr, TokioSocket};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use super::{name_from_message, Rtnl};
use crate::kernel::error::{HostError, Op};
use crate::kernel::HostEvent;
use crate::model::Errno;

/// RTMGRP_LINK.
const RTMGRP_LINK: u32 = 1;
/// RTMGRP_IPV4_IFADDR: a RoCE port's IPv4-mapped GIDs follow its netdev's IPv4 addresses.
const RTMGRP_IPV4_IFADDR: u32 = 0x10;
/// RTMGRP_IPV6_IFADDR: and its IPv6 GIDs the IPv6 ones.
const RTMGRP_IPV6_IFADDR: u32 = 0x100;
/// Receive buffer asked for (the kernel caps it at net.core.rmem_max).
const RCVBUF: usize = 4 << 20;
/// One datagram; link notifications carry no VF info and stay well below this.
const DATAGRAM: usize = 1 << 16;

/// The ifindex -> name map that turns a NEWLINK with a new name into a rename.
#[derive(Debug, Default, Clone)]
pub struct LinkNames {
    names: HashMap<u32, String>,
}

impl LinkNames {
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the map with the links of a dump.
    pub fn reset(&mut self, links: &[LinkMessage]) {
        self.names.clear();
        for l in links {
            if let Some(name) = name_from_message(l) {
                self.names.insert(l.header.index, name.to_string());
            }
        }
    }

    pub fn name(&self, ifindex: u32) -> Option<&str> {
        self.names.get(&ifindex).map(String::as_str)
    }

    /// The event a link notification stands for, updating the map.
    pub fn event(&mut self, msg: &RouteNetlinkMessage) -> Option<HostEvent> {
        match msg {
            RouteNetlinkMessage::NewLink(link) => {
                // AF_BRIDGE notifications describe bridge ports, not the netdev itself.
                if link.header.interface_family != AddressFamily::Unspec {
                    return None;
                }
                let index = link.header.index;
                let name = name_from_message(link)?.to_string();
                match self.names.insert(index, name.clone()) {
                    None => Some(HostEvent::NetdevAdded { name }),
                    Some(old) if old != name => Some(HostEvent::NetdevRenamed { old, new: name }),
                    Some(_) => Some(HostEvent::NetdevChanged { name }),
                }
            }
            RouteNetlinkMessage::DelLink(link) => {
                if link.header.interface_family != AddressFamily::Unspec {
                    return None;
                }
                let known = self.names.remove(&link.header.index);
                let name = name_from_message(link).map(str::to_string).or(known)?;
                Some(HostEvent::NetdevRemoved { name })
            }
            // Named by the map: an address message carries the ifindex (its label is
            // IPv4's only, and an alias's).
            RouteNetlinkMessage::NewAddress(a) | RouteNetlinkMessage::DelAddress(a) => {
                let name = self.names.get(&a.header.index)?.clone();
                Some(HostEvent::NetdevAddressChanged { name })
            }
            _ => None,
        }
    }
}

/// Splits a datagram into netlink messages and decodes the route messages among them.
/// Undecodable messages are skipped (and logged); nothing here panics on kernel input.
pub fn decode_datagram(buf: &[u8]) -> Vec<RouteNetlinkMessage> {
    let mut out = Vec::new();
    let mut offset = 0usize;
    while offset < buf.len() {
        let rest = &buf[offset..];
        let len = match NetlinkBuffer::new_checked(rest) {
            Ok(b) => b.length() as usize,
            Err(e) => {
                tracing::warn!("rtnetlink: truncated notification: {e}");
                break;
            }
        };
        if len == 0 || len > rest.len() {
            break;
        }
        match NetlinkMessage::<RouteNetlinkMessage>::deserialize(&rest[..len]) {
            Ok(m) => {
                if let NetlinkPayload::InnerMessage(inner) = m.payload {
                    out.push(inner);
                }
            }
            Err(e) => tracing::debug!("rtnetlink: undecodable notification: {e}"),
        }
        // Messages are 4-byte aligned.
        offset += (len + 3) & !3;
    }
    out
}

fn open_socket(rcvbuf: usize) -> Result<TokioSocket, HostError> {
    let op = || Op::Rtnl("link events");
    let mut socket = TokioSocket::new(NETLINK_ROUTE).map_err(|e| HostError::from_io(op(), &e))?;
    let s = socket.socket_mut();
    // A bigger buffer makes overflows rarer; failure to enlarge it is not fatal.
    if let Err(e) = s.set_rx_buf_sz(rcvbuf) {
        tracing::debug!("rtnetlink: SO_RCVBUF: {e}");
    }
    s.bind(&SocketAddr::new(
        0,
        RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR,
    ))
    .map_err(|e| HostError::from_io(op(), &e))?;
    Ok(socket)
}

async fn resync(rtnl: &Rtnl, names: &mut LinkNames) {
    match rtnl.links().await {
        Ok(links) => names.reset(&links),
        Err(e) => tracing::warn!("rtnetlink: cannot re-read links: {e}"),
    }
}

/// Watches RTMGRP_LINK and the address groups in the calling thread's network namespace and
/// sends NetdevAdded, NetdevRemoved, NetdevChanged, NetdevRenamed and NetdevAddressChanged
/// until `tx` is closed.
///
/// The socket is subscribed before the initial dump, so no change between the two is lost.
pub async fn spawn_link_events(
    tx: UnboundedSender<HostEvent>,
) -> Result<JoinHandle<()>, HostError> {
    spawn_with_rcvbuf(tx, RCVBUF).await
}

/// [`spawn_link_events`] with a chosen socket receive buffer (tests make it tiny to overflow).
pub(crate) async fn spawn_with_rcvbuf(
    tx: UnboundedSender<HostEvent>,
    rcvbuf: usize,
) -> Result<JoinHandle<()>, HostError> {
    let socket = open_socket(rcvbuf)?;
    let rtnl = Rtnl::open().await?;
    Ok(tokio::spawn(async move {
        // The first dump runs here, not before returning: on a host of hundreds of links it
        // is a large part of the daemon's start, and the subscribed socket keeps every
        // change that happens meanwhile until the loop reads it.
        let mut names = LinkNames::new();
        resync(&rtnl, &mut names).await;
        let mut buf: Vec<u8> = Vec::with_capacity(DATAGRAM);
        loop {
            buf.clear();
            let received = tokio::select! {
                r = socket.recv_from(&mut buf) => r,
                _ = tx.closed() => return,
            };
            match received {
                Ok(from) => {
                    if from.port_number() != 0 {
                        continue; // only the kernel sends link notifications
                    }
                    for msg in decode_datagram(&buf) {
                        if let Some(ev) = names.event(&msg) {
                            if tx.send(ev).is_err() {
                                return;
                            }
                        }
                    }
                }
                Err(e) if e.raw_os_error() == Some(Errno::ENOBUFS.0) => {
                    tracing::warn!("rtnetlink: receive buffer overflowed, events lost");
                    // Re-read the names first, so that whatever the receiver does after
                    // hearing of the overflow is seen against a fresh map.
                    resync(&rtnl, &mut names).await;
                    let ev = HostEvent::Overflow {
                        source: "rtnetlink".into(),
                    };
                    if tx.send(ev).is_err() {
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    tracing::error!("rtnetlink: link events stopped: {e}");
                    return;
                }
            }
        }
    }))
}
