//! The fallback without udevd: the kernel's NETLINK_KOBJECT_UEVENT socket, group 1.

use netlink_sys::{
    protocols::NETLINK_KOBJECT_UEVENT, AsyncSocket, AsyncSocketExt, SocketAddr, TokioSocket,
};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use super::{forward, overflow, parse_uevent, SUBSYSTEMS};
use crate::kernel::error::{HostError, Op};
use crate::kernel::HostEvent;
use crate::model::Errno;

/// The kernel's multicast group on NETLINK_KOBJECT_UEVENT (udevd re-broadcasts on group 2).
const KERNEL_GROUP: u32 = 1;
/// Receive buffer asked for; device storms (a driver load) come in bursts.
const RCVBUF: usize = 4 << 20;
/// A uevent is at most UEVENT_BUFFER_SIZE (2048) bytes of variables plus the header.
const DATAGRAM: usize = 16 << 10;

pub(super) fn open(rcvbuf: usize) -> Result<TokioSocket, HostError> {
    let mut socket = TokioSocket::new(NETLINK_KOBJECT_UEVENT)
        .map_err(|e| HostError::from_io(Op::Uevents, &e))?;
    let s = socket.socket_mut();
    if let Err(e) = s.set_rx_buf_sz(rcvbuf) {
        tracing::debug!("uevent: SO_RCVBUF: {e}");
    }
    s.bind(&SocketAddr::new(0, KERNEL_GROUP))
        .map_err(|e| HostError::from_io(Op::Uevents, &e))?;
    Ok(socket)
}

pub(super) fn spawn(tx: UnboundedSender<HostEvent>) -> Result<JoinHandle<()>, HostError> {
    spawn_with_rcvbuf(tx, RCVBUF)
}

/// [`spawn`] with a chosen socket receive buffer (tests make it tiny to overflow).
pub(super) fn spawn_with_rcvbuf(
    tx: UnboundedSender<HostEvent>,
    rcvbuf: usize,
) -> Result<JoinHandle<()>, HostError> {
    let socket = open(rcvbuf)?;
    Ok(tokio::spawn(async move {
        let mut buf: Vec<u8> = Vec::with_capacity(DATAGRAM);
        loop {
            buf.clear();
            let received = tokio::select! {
                r = socket.recv_from(&mut buf) => r,
                _ = tx.closed() => return,
            };
            match received {
                Ok(from) => {
                    // Only the kernel (port 0) sends on group 1 by itself.
                    if from.port_number() != 0 {
                        continue;
                    }
                    let Some(u) = parse_uevent(&buf) else {
                        continue;
                    };
                    if !u
                        .subsystem
                        .as_deref()
                        .is_some_and(|s| SUBSYSTEMS.contains(&s))
                    {
                        continue;
                    }
                    if !forward(&tx, &u) {
                        return;
                    }
                }
                Err(e) if e.raw_os_error() == Some(Errno::ENOBUFS.0) => {
                    tracing::warn!("uevent: receive buffer overflowed, events lost");
                    if tx.send(overflow()).is_err() {
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    tracing::error!("uevent: kernel events stopped: {e}");
                    return;
                }
            }
        }
    }))
}
