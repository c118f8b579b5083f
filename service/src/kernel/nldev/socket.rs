//! The blocking RDMA netlink client: one `NETLINK_RDMA` socket, one request at a time.
//!
//! Blocking on purpose: the requests are short and rare, and the async Linux host runs them
//! through `tokio::task::spawn_blocking`. Every receive has a timeout, so a kernel that never
//! answers costs [`RECV_TIMEOUT`] and an ETIMEDOUT, not a hung task.

use std::os::fd::AsRawFd;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use netlink_sys::{Socket, SocketAddr};

use super::consts::nl::{
    NETLINK_CAP_ACK, NETLINK_EXT_ACK, NLMSG_DONE, NLMSG_ERROR, NLMSG_MIN_TYPE,
};
use super::consts::NETLINK_RDMA;
use super::decode::{self, OP_DEVICES, OP_PORTS, OP_SYS};
use super::encode;
use super::msg::{extack_message, parse_messages, with_seq, BatchAnswers, ReplyCollector};
use crate::kernel::{HostError, NewLink, NlDevice, NlPort, NlSys, Op};
use crate::model::Errno;

/// How long one receive may wait for the kernel.
pub const RECV_TIMEOUT: Duration = Duration::from_secs(5);

/// STAT_GET requests sent in one write. The kernel queues each answer in a buffer of about a
/// page and drops one that finds the socket's receive buffer full (about 200 KiB by
/// default): a batch's answers must fit with room to spare.
const STAT_BATCH: usize = 16;

/// Initial receive buffer. The kernel sizes dump datagrams from the reader's buffer and
/// caps them around 32 KiB; a larger datagram is measured with MSG_PEEK | MSG_TRUNC and the
/// buffer grown, so nothing is ever cut.
pub const RECV_BUF: usize = 32 * 1024;

/// The client. `Sync`: concurrent callers are serialised, since replies are read from the
/// one socket and must not be taken by another caller's request.
pub struct NldevClient {
    inner: Mutex<Inner>,
}

struct Inner {
    sock: Socket,
    seq: u32,
    buf: Vec<u8>,
}

impl std::fmt::Debug for NldevClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NldevClient").finish_non_exhaustive()
    }
}

impl NldevClient {
    /// Opens and binds a `NETLINK_RDMA` socket. A kernel built without `CONFIG_INFINIBAND`
    /// has no such protocol: that is [`HostError::Unsupported`], not a failure.
    pub fn open() -> Result<Self, HostError> {
        let sock = open_socket(0, RECV_TIMEOUT)?;
        Ok(NldevClient {
            inner: Mutex::new(Inner {
                sock,
                seq: initial_seq(),
                buf: Vec::with_capacity(RECV_BUF),
            }),
        })
    }

    /// Every RDMA device (GET dump).
    pub fn devices(&self) -> Result<Vec<NlDevice>, HostError> {
        let bodies = self.transact(OP_DEVICES, encode::encode_get_dump)?;
        decode::devices_from_bodies(&bodies)
    }

    /// Every port of every device: a GET dump for the devices, then one PORT_GET dump per
    /// device (the kernel's port dump requires DEV_INDEX). A device that disappears between
    /// the two (the kernel answers EINVAL for an unknown index) is left out.
    pub fn ports(&self) -> Result<Vec<NlPort>, HostError> {
        let mut out = Vec::new();
        for dev in self.devices()? {
            match self.device_ports(dev.index) {
                Ok(ports) => out.extend(ports),
                Err(e) if vanished(&e) => {
                    tracing::debug!(dev = %dev.name, "RDMA device vanished during the port dump");
                }
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// The ports of one device (PORT_GET dump with DEV_INDEX).
    pub fn device_ports(&self, dev_index: u32) -> Result<Vec<NlPort>, HostError> {
        let bodies = self.transact(OP_PORTS, |seq| encode::encode_port_dump(seq, dev_index))?;
        decode::ports_from_bodies(&bodies)
    }

    /// RDMA subsystem settings (SYS_GET).
    pub fn sys(&self) -> Result<NlSys, HostError> {
        let bodies = self.transact(OP_SYS, encode::encode_sys_get)?;
        decode::sys_from_bodies(&bodies)
    }

    /// A port's default hw counters (STAT_GET doit, as `rdma statistic show link`).
    pub fn port_stats(&self, dev_index: u32, port: u32) -> Result<Vec<(String, u64)>, HostError> {
        let bodies = self.transact(Op::NlStatGet, |seq| {
            encode::encode_stat_get(seq, dev_index, port)
        })?;
        decode::stats_from_bodies(&bodies)
    }

    /// The default hw counters of every port of `ports` (device index, port), in order:
    /// STAT_GET doits sent [`STAT_BATCH`] to a write, without acks, each answer (its data or
    /// its error) read in one receive. One request at a time took five system calls a port
    /// (the request, then the data and the ack each peeked and read), which on a host of
    /// hundreds of ports was most of a scrape's cost in the daemon.
    pub fn ports_stats(&self, ports: &[(u32, u32)]) -> Vec<Result<Vec<(String, u64)>, HostError>> {
        let op = Op::NlStatGet;
        let mut guard = self.lock();
        let inner = &mut *guard;
        let mut out = Vec::with_capacity(ports.len());
        for batch in ports.chunks(STAT_BATCH) {
            let first = inner.seq.wrapping_add(1);
            inner.seq = inner.seq.wrapping_add(batch.len() as u32);
            let mut req = Vec::with_capacity(batch.len() * 32);
            for (i, (dev, port)) in batch.iter().enumerate() {
                req.extend(encode::encode_stat_get_unacked(
                    first.wrapping_add(i as u32),
                    *dev,
                    *port,
                ));
            }
            let mut answers = BatchAnswers::new(first, batch.len(), op.clone());
            let mut failure = send(&inner.sock, &req).err();
            while failure.is_none() && answers.left() > 0 {
                match recv_whole(&inner.sock, &mut inner.buf) {
                    Ok(Received::FromKernel) => {
                        if let Err(e) = answers.feed(&inner.buf, decode::stats_from_body) {
                            failure = Some(std::io::Error::other(e.to_string()));
                        }
                    }
                    Ok(Received::NotFromKernel(_)) => {}
                    Err(e) => failure = Some(e),
                }
            }
            let why = failure.map(|e| e.to_string()).unwrap_or_default();
            out.extend(answers.finish(|| HostError::Protocol {
                op: op.clone(),
                reason: format!("no answer: {why}"),
            }));
        }
        out
    }

    /// Creates a soft RDMA device (NEWLINK). Needs CAP_NET_ADMIN.
    pub fn new_link(&self, link: &NewLink) -> Result<(), HostError> {
        encode::validate_new_link(link)?;
        self.transact(Op::NlNewLink, |seq| encode::encode_new_link(seq, link))
            .map(|_| ())
    }

    /// Removes a soft RDMA device (DELLINK). Needs CAP_NET_ADMIN.
    pub fn del_link(&self, dev_index: u32) -> Result<(), HostError> {
        self.transact(Op::NlDelLink, |seq| encode::encode_del_link(seq, dev_index))
            .map(|_| ())
    }

    /// Renames a device (SET with DEV_NAME). Needs CAP_NET_ADMIN.
    pub fn rename(&self, dev_index: u32, new_name: &str) -> Result<(), HostError> {
        encode::validate_dev_name(new_name)?;
        self.transact(Op::NlSet, |seq| {
            encode::encode_rename(seq, dev_index, new_name)
        })
        .map(|_| ())
    }

    /// Sends one request and collects the data messages of its reply.
    fn transact(
        &self,
        op: Op,
        build: impl FnOnce(u32) -> Vec<u8>,
    ) -> Result<Vec<Vec<u8>>, HostError> {
        let mut guard = self.lock();
        let inner = &mut *guard;
        inner.seq = inner.seq.wrapping_add(1);
        let seq = inner.seq;
        let req = build(seq);
        send(&inner.sock, &req).map_err(|e| HostError::from_io(op.clone(), &e))?;

        let mut collector = ReplyCollector::new(Some(seq), op.clone());
        while !collector.is_complete() {
            match recv_datagram(&inner.sock, &mut inner.buf) {
                Ok(Received::FromKernel) => {
                    collector.feed(&inner.buf)?;
                }
                Ok(Received::NotFromKernel(pid)) => {
                    tracing::debug!(pid, "RDMA netlink: ignoring a message not from the kernel");
                }
                Err(e) => return Err(recv_error(op, &e)),
            }
        }
        collector.finish()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere while holding the lock leaves nothing half-done that matters:
        // stale replies are skipped by sequence number.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Whether a per-device request failed because the device is gone.
fn vanished(e: &HostError) -> bool {
    e.is_not_found() || e.errno() == Some(Errno::EINVAL)
}

/// A starting sequence number that differs between runs, as iproute2's `time(NULL)`.
fn initial_seq() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as u32)
        .unwrap_or(1)
}

/// Opens a `NETLINK_RDMA` socket bound to `groups` (a bit mask of multicast groups), with a
/// receive timeout.
pub(super) fn open_socket(groups: u32, timeout: Duration) -> Result<Socket, HostError> {
    let op = Op::NlDump("socket setup");
    let mut sock = Socket::new(NETLINK_RDMA).map_err(|e| open_error(&e))?;
    // Smaller error messages and the kernel's explanation of EINVAL; old kernels lack them.
    let _ = setsockopt_int(&sock, libc::SOL_NETLINK, NETLINK_CAP_ACK, 1);
    let _ = setsockopt_int(&sock, libc::SOL_NETLINK, NETLINK_EXT_ACK, 1);
    set_recv_timeout(&sock, timeout).map_err(|e| HostError::from_io(op.clone(), &e))?;
    sock.bind(&SocketAddr::new(0, groups))
        .map_err(|e| HostError::from_io(op, &e))?;
    Ok(sock)
}

/// socket(AF_NETLINK, .., NETLINK_RDMA) fails with EPROTONOSUPPORT when the kernel has no
/// RDMA core (the build machines), which callers treat as "nothing to manage".
fn open_error(e: &std::io::Error) -> HostError {
    match e.raw_os_error() {
        Some(libc::EPROTONOSUPPORT | libc::EAFNOSUPPORT | libc::ESOCKTNOSUPPORT) => {
            HostError::Unsupported {
                what: "RDMA netlink".into(),
                why: "the kernel has no RDMA support (CONFIG_INFINIBAND)".into(),
            }
        }
        _ => HostError::from_io(Op::NlDump("socket setup"), e),
    }
}

/// A socket of any netlink protocol for one acknowledged request at a time (rtnetlink's DCB,
/// generic netlink's ethtool): the kernel's explanation of a refusal asked for, each receive
/// bounded by [`RECV_TIMEOUT`].
pub(crate) struct AckedSocket {
    sock: Socket,
    seq: u32,
    buf: Vec<u8>,
}

impl AckedSocket {
    pub(crate) fn open(protocol: isize, op: Op) -> Result<AckedSocket, HostError> {
        let mut sock = Socket::new(protocol).map_err(|e| HostError::from_io(op.clone(), &e))?;
        // Old kernels lack these; the answer is then the errno alone.
        let _ = setsockopt_int(&sock, libc::SOL_NETLINK, NETLINK_CAP_ACK, 1);
        let _ = setsockopt_int(&sock, libc::SOL_NETLINK, NETLINK_EXT_ACK, 1);
        set_recv_timeout(&sock, RECV_TIMEOUT).map_err(|e| HostError::from_io(op.clone(), &e))?;
        sock.bind(&SocketAddr::new(0, 0))
            .map_err(|e| HostError::from_io(op, &e))?;
        Ok(AckedSocket {
            sock,
            seq: initial_seq(),
            buf: Vec::new(),
        })
    }

    /// Sends `req` (its sequence number replaced) and returns the payload of its last data
    /// answer, if any, once the kernel acknowledged it. A refusal becomes `refuse(errno,
    /// extended-ack message)`.
    pub(crate) fn transact(
        &mut self,
        req: Vec<u8>,
        op: Op,
        refuse: &dyn Fn(Errno, Option<&str>) -> HostError,
    ) -> Result<Option<Vec<u8>>, HostError> {
        self.seq = self.seq.wrapping_add(1);
        let req = with_seq(req, self.seq);
        send(&self.sock, &req).map_err(|e| HostError::from_io(op.clone(), &e))?;
        let mut data = None;
        loop {
            match recv_datagram(&self.sock, &mut self.buf) {
                Ok(Received::FromKernel) => {}
                Ok(Received::NotFromKernel(_)) => continue,
                Err(e) => return Err(HostError::from_io(op, &e)),
            }
            let msgs = parse_messages(&self.buf).map_err(|e| HostError::Protocol {
                op: op.clone(),
                reason: e.to_string(),
            })?;
            for m in msgs {
                if m.seq != self.seq {
                    continue;
                }
                match m.kind {
                    NLMSG_ERROR | NLMSG_DONE => {
                        let err = m
                            .payload
                            .get(..4)
                            .and_then(|b| <[u8; 4]>::try_from(b).ok())
                            .map(i32::from_ne_bytes)
                            .unwrap_or(0);
                        if err != 0 {
                            let extack = extack_message(&m);
                            return Err(refuse(Errno(err.saturating_abs()), extack.as_deref()));
                        }
                        return Ok(data);
                    }
                    k if k >= NLMSG_MIN_TYPE => data = Some(m.payload.to_vec()),
                    _ => {}
                }
            }
        }
    }
}

pub(crate) fn send(sock: &Socket, req: &[u8]) -> std::io::Result<()> {
    loop {
        match sock.send_to(req, &SocketAddr::new(0, 0), 0) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// What a receive produced; the datagram is in the buffer.
pub(crate) enum Received {
    FromKernel,
    /// Another process (port id) sent to our socket: never trusted.
    NotFromKernel(u32),
}

/// Receives one whole datagram into `buf`, growing it when the datagram is larger. A
/// timeout is `EAGAIN` (WouldBlock); ENOBUFS (lost multicast messages) is passed up.
pub(crate) fn recv_datagram(sock: &Socket, buf: &mut Vec<u8>) -> std::io::Result<Received> {
    recv_datagram_min(sock, buf, RECV_BUF)
}

/// Receives one datagram into `buf` (at least [`RECV_BUF`]) in one system call, without
/// peeking at its size first: for answers known to be far smaller (a port's counters). A
/// larger one is consumed and refused (EMSGSIZE), never decoded cut.
fn recv_whole(sock: &Socket, buf: &mut Vec<u8>) -> std::io::Result<Received> {
    loop {
        buf.clear();
        if buf.capacity() < RECV_BUF {
            buf.reserve(RECV_BUF);
        }
        match sock.recv_from(buf, libc::MSG_TRUNC) {
            Ok((len, _)) if len > buf.len() => {
                return Err(std::io::Error::from_raw_os_error(libc::EMSGSIZE))
            }
            Ok((_, addr)) => {
                return Ok(match addr.port_number() {
                    0 => Received::FromKernel,
                    pid => Received::NotFromKernel(pid),
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

fn recv_datagram_min(sock: &Socket, buf: &mut Vec<u8>, min: usize) -> std::io::Result<Received> {
    loop {
        buf.clear();
        if buf.capacity() < min {
            buf.reserve(min);
        }
        let r = sock
            .recv_from(buf, libc::MSG_PEEK | libc::MSG_TRUNC)
            .and_then(|(len, _)| {
                buf.clear();
                if len > buf.capacity() {
                    buf.reserve(len);
                }
                sock.recv_from(buf, 0)
            });
        match r {
            Ok((len, addr)) => {
                if len > buf.len() {
                    // Cannot happen after the peek unless the datagram changed; refuse to
                    // decode a cut message.
                    return Err(std::io::Error::from_raw_os_error(libc::EMSGSIZE));
                }
                return Ok(match addr.port_number() {
                    0 => Received::FromKernel,
                    pid => Received::NotFromKernel(pid),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// A receive timeout is reported as ETIMEDOUT, the errno callers understand.
fn recv_error(op: Op, e: &std::io::Error) -> HostError {
    if is_timeout(e) {
        HostError::kernel(op, Errno::ETIMEDOUT)
    } else {
        HostError::from_io(op, e)
    }
}

pub(crate) fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

pub(crate) fn setsockopt_int(
    sock: &Socket,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> std::io::Result<()> {
    // SAFETY: the pointer and length describe a live c_int for the duration of the call.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

pub(crate) fn set_recv_timeout(sock: &Socket, timeout: Duration) -> std::io::Result<()> {
    let tv = libc::timeval {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_usec: timeout.subsec_micros() as libc::suseconds_t,
    };
    // SAFETY: the pointer and length describe a live timeval for the duration of the call.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether this machine's kernel has RDMA netlink at all.
    fn kernel_has_rdma_netlink() -> bool {
        !matches!(
            Socket::new(NETLINK_RDMA).map_err(|e| e.raw_os_error()),
            Err(Some(libc::EPROTONOSUPPORT))
        )
    }

    #[test]
    fn open_without_rdma_is_unsupported() {
        if kernel_has_rdma_netlink() {
            // A real RDMA kernel (the lab): the client must work unprivileged.
            let c = NldevClient::open().expect("open on an RDMA kernel");
            c.devices().expect("GET dump");
            c.ports().expect("PORT_GET dumps");
            return;
        }
        assert_eq!(
            NldevClient::open().unwrap_err(),
            HostError::Unsupported {
                what: "RDMA netlink".into(),
                why: "the kernel has no RDMA support (CONFIG_INFINIBAND)".into(),
            }
        );
    }

    #[test]
    fn client_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<NldevClient>();
    }

    #[test]
    fn open_errors() {
        let e = std::io::Error::from_raw_os_error(libc::EPROTONOSUPPORT);
        assert_eq!(open_error(&e).code(), "Unsupported");
        let e = std::io::Error::from_raw_os_error(libc::EMFILE);
        assert_eq!(open_error(&e).errno(), Some(Errno(libc::EMFILE)));
    }

    /// Drives a real RDMA kernel (the QEMU lab), as root: `NLDEV_LAB_NETDEV=<ethernet netdev>
    /// cargo test ... -- --ignored live_lab`. Creates rxe "nldevlab0" on it, reads it back,
    /// renames and deletes it.
    #[test]
    #[ignore = "needs a kernel with RDMA netlink, rdma_rxe and CAP_NET_ADMIN"]
    fn live_lab() {
        let Ok(netdev) = std::env::var("NLDEV_LAB_NETDEV") else {
            return;
        };
        let c = NldevClient::open().unwrap();
        let sys = c.sys().unwrap();
        println!("sys: {sys:?}");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let notifier = super::super::spawn_notify(tx).unwrap();
        assert_eq!(notifier.is_some(), sys.monitor_mode == Some(true));
        let link = NewLink {
            name: "nldevlab0".into(),
            kind: crate::model::SoftLinkType::Rxe,
            netdev: netdev.clone(),
        };
        c.new_link(&link).unwrap();
        assert_eq!(
            c.new_link(&link).unwrap_err().errno(),
            Some(Errno::EEXIST),
            "same name again"
        );
        let mut bad = link.clone();
        bad.name = "nldevlab1".into();
        bad.netdev = "nosuchnetdev0".into();
        println!("unknown netdev: {:?}", c.new_link(&bad).unwrap_err());
        let devs = c.devices().unwrap();
        println!("devices: {devs:?}");
        let dev = devs.iter().find(|d| d.name == "nldevlab0").unwrap();
        let ports = c.ports().unwrap();
        println!("ports: {ports:?}");
        let p = ports.iter().find(|p| p.dev_index == dev.index).unwrap();
        assert_eq!(p.netdev_name.as_deref(), Some(netdev.as_str()));
        let stats = c.port_stats(dev.index, 1).unwrap();
        println!("stats: {stats:?}");
        assert!(stats.iter().any(|(n, _)| n == "sent_pkts"));
        // A batch: answers in order, a port the device lacks refused alone.
        let batch = c.ports_stats(&[(dev.index, 1), (dev.index, 9), (dev.index, 1)]);
        assert_eq!(batch.len(), 3);
        assert_eq!(
            batch[0]
                .as_ref()
                .unwrap()
                .iter()
                .map(|(n, _)| n)
                .collect::<Vec<_>>(),
            stats.iter().map(|(n, _)| n).collect::<Vec<_>>()
        );
        assert!(batch[1].is_err(), "{:?}", batch[1]);
        assert!(batch[2].is_ok(), "{:?}", batch[2]);
        c.rename(dev.index, "nldevlab_r").unwrap();
        assert!(c.devices().unwrap().iter().any(|d| d.name == "nldevlab_r"));
        c.del_link(dev.index).unwrap();
        assert!(c.devices().unwrap().iter().all(|d| d.index != dev.index));
        assert_eq!(
            c.del_link(dev.index).unwrap_err().errno(),
            Some(Errno::EINVAL),
            "deleting a deleted device"
        );
        std::thread::sleep(Duration::from_millis(500));
        let mut events = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            events.push(ev);
        }
        println!("events: {events:?}");
        if notifier.is_some() {
            use crate::kernel::HostEvent;
            let added = HostEvent::RdmaAdded {
                name: "nldevlab0".into(),
            };
            let renamed = HostEvent::RdmaRenamed {
                old: "nldevlab0".into(),
                new: "nldevlab_r".into(),
            };
            let removed = HostEvent::RdmaRemoved {
                name: "nldevlab_r".into(),
            };
            for want in [added, removed] {
                assert!(events.contains(&want), "{want:?} missing");
            }
            // RENAME events are newer than monitor mode (Debian's 6.12.107 has the latter only).
            println!("rename event seen: {}", events.contains(&renamed));
        }
        drop(rx);
        if let Some(h) = notifier {
            h.join().unwrap();
        }
        println!("NLDEV LIVE LAB OK");
    }

    #[test]
    fn timeouts_become_etimedout() {
        let e = std::io::Error::from_raw_os_error(libc::EAGAIN);
        assert_eq!(
            recv_error(Op::NlSet, &e),
            HostError::kernel(Op::NlSet, Errno::ETIMEDOUT)
        );
        let e = std::io::Error::from_raw_os_error(libc::ENOBUFS);
        assert_eq!(recv_error(Op::NlSet, &e).errno(), Some(Errno::ENOBUFS));
    }

    #[test]
    fn vanished_devices_are_recognised() {
        assert!(vanished(&HostError::kernel(OP_PORTS, Errno::EINVAL)));
        assert!(vanished(&HostError::kernel(OP_PORTS, Errno::ENODEV)));
        assert!(!vanished(&HostError::kernel(OP_PORTS, Errno::EPERM)));
    }

    /// The receive path (peek, grow, read, sender check) against a real netlink socket that
    /// every Linux kernel has: a NETLINK_ROUTE link dump.
    #[test]
    fn recv_datagram_reads_whole_datagrams() {
        let mut sock = Socket::new(netlink_sys::protocols::NETLINK_ROUTE).unwrap();
        sock.bind(&SocketAddr::new(0, 0)).unwrap();
        set_recv_timeout(&sock, Duration::from_secs(5)).unwrap();
        // RTM_GETLINK dump with an empty ifinfomsg (16 bytes).
        let mut req = super::super::msg::Request::new(18, 0x301, 1).finish();
        req.extend_from_slice(&[0u8; 16]);
        let len = req.len() as u32;
        req[..4].copy_from_slice(&len.to_ne_bytes());
        send(&sock, &req).unwrap();
        // A 64-byte minimum buffer: every link message is larger, so growth is exercised.
        let mut buf = Vec::new();
        let mut largest = 0;
        let mut c = ReplyCollector::new(Some(1), Op::Rtnl("link dump"));
        while !c.is_complete() {
            match recv_datagram_min(&sock, &mut buf, 64).unwrap() {
                Received::FromKernel => {
                    largest = largest.max(buf.len());
                    c.feed(&buf).unwrap();
                }
                Received::NotFromKernel(pid) => panic!("unexpected sender {pid}"),
            }
        }
        assert!(
            largest > 64,
            "a datagram larger than the minimum buffer was read whole"
        );
        assert!(!c.finish().unwrap().is_empty(), "at least lo");
    }
}
