//! systemd's readiness protocol (`sd_notify(3)`), without libsystemd: one datagram of
//! `KEY=VALUE` lines to the socket named by `$NOTIFY_SOCKET`.
//!
//! The daemon owns its bus name before it has read the host (see `dbus::server`), so the name
//! appearing no longer means "started": the unit is `Type=notify` and the daemon sends
//! `READY=1` when start-up is over, so that `systemctl start` returns, and units ordered after
//! it start, only once the model is complete. Outside systemd (`$NOTIFY_SOCKET` unset) nothing
//! is sent.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};

/// The environment variable systemd names its notification socket in.
pub const NOTIFY_SOCKET: &str = "NOTIFY_SOCKET";

/// Sends `state` (e.g. `"READY=1\nSTATUS=..."`) to `$NOTIFY_SOCKET`. `Ok(false)` when the
/// variable is not set (not started by systemd, or by a unit that is not `Type=notify`).
pub fn notify(state: &str) -> io::Result<bool> {
    match std::env::var_os(NOTIFY_SOCKET) {
        None => Ok(false),
        Some(socket) => {
            send(&socket_addr(&socket)?, state)?;
            Ok(true)
        }
    }
}

/// The address `$NOTIFY_SOCKET` names: a path, or with a leading `@` a name in the abstract
/// namespace (as systemd gives it to services in some set-ups).
pub fn socket_addr(value: &OsStr) -> io::Result<SocketAddr> {
    let bytes = value.as_bytes();
    match bytes.first() {
        Some(b'/') => SocketAddr::from_pathname(value),
        Some(b'@') => {
            use std::os::linux::net::SocketAddrExt;
            SocketAddr::from_abstract_name(&bytes[1..])
        }
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{NOTIFY_SOCKET}={} is neither an absolute path nor an abstract name (@...)",
                value.to_string_lossy()
            ),
        )),
    }
}

/// Sends `state` as one datagram to `addr`.
pub fn send(addr: &SocketAddr, state: &str) -> io::Result<()> {
    let sock = UnixDatagram::unbound()?;
    let sent = sock.send_to_addr(state.as_bytes(), addr)?;
    if sent != state.len() {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("sent {sent} of {} bytes", state.len()),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_socket_receives_the_state_as_one_datagram() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("notify");
        let listener = UnixDatagram::bind(&path).expect("bind");
        let addr = socket_addr(path.as_os_str()).expect("a path address");
        send(&addr, "READY=1\nSTATUS=Serving 2 RDMA devices").expect("sent");
        let mut buf = [0u8; 256];
        let n = listener.recv(&mut buf).expect("received");
        assert_eq!(&buf[..n], b"READY=1\nSTATUS=Serving 2 RDMA devices");
    }

    #[test]
    fn an_abstract_name_is_reached_without_its_at_sign() {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("rdma-managerd-test-{}", std::process::id());
        let listener = UnixDatagram::bind_addr(
            &SocketAddr::from_abstract_name(name.as_bytes()).expect("an abstract address"),
        )
        .expect("bind");
        let addr = socket_addr(OsStr::new(&format!("@{name}"))).expect("an abstract address");
        send(&addr, "READY=1").expect("sent");
        let mut buf = [0u8; 16];
        let n = listener.recv(&mut buf).expect("received");
        assert_eq!(&buf[..n], b"READY=1");
    }

    #[test]
    fn a_relative_or_empty_value_is_refused() {
        for v in ["", "notify", "vsock:2:123"] {
            let e = socket_addr(OsStr::new(v)).expect_err(v);
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{v}");
        }
    }
}
