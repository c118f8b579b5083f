//! GetManagedObjects of the daemon timed in one client process, as issue 13's target asks,
//! with the CPU each call costs the bus, the daemon and the client. Shared by the kernel
//! lab's scale run (`rdma-lab-scale`, its own dbus-daemon) and the installed-system lab
//! (`rdma-syslab-gmo`, the guest's system bus, dbus-daemon or dbus-broker), and how the
//! reference tools beside it are run and timed (also by `rdma-lab-bench`).

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use zbus::zvariant::{ObjectPath, OwnedObjectPath, OwnedValue, Value};

use crate::procfs::cpu_ticks;

pub const NAME: &str = "org.rdmamanager.RdmaManager1";
pub const ROOT: &str = "/org/rdmamanager/RdmaManager1";
const OBJECT_MANAGER: &str = "org.freedesktop.DBus.ObjectManager";

/// Calls timed for the median (odd: the median is one call's time).
pub const CALLS: usize = 11;

/// A GetManagedObjects reply, decoded.
pub type Objects = HashMap<OwnedObjectPath, HashMap<String, HashMap<String, OwnedValue>>>;

/// A GetManagedObjects reply decoded into values that borrow the reply's strings instead of
/// owning copies: the least a zbus client can do to read the objects.
pub type BorrowedObjects<'m> =
    HashMap<ObjectPath<'m>, HashMap<&'m str, HashMap<&'m str, Value<'m>>>>;

/// What [`time_get_managed_objects`] measured.
#[derive(Debug, Clone)]
pub struct Timing {
    /// Through the daemon's direct socket (peer to peer), not the bus.
    pub direct: bool,
    /// The first call, decoded (the daemon encodes every object's entry then).
    pub first_ms: f64,
    pub objects: usize,
    /// The [`CALLS`] calls, sorted: until the whole reply is in, not decoded.
    pub calls_ms: Vec<f64>,
    pub reply_bytes: usize,
    /// CPU a call, in ms, of the bus, the daemon and this client, over the [`CALLS`] calls
    /// (`None` where a process's `/proc` entry could not be read).
    pub cpu_bus_ms: Option<f64>,
    pub cpu_daemon_ms: Option<f64>,
    pub cpu_client_ms: Option<f64>,
    /// The median of [`CALLS`] `Peer.Ping` round trips to the daemon: the floor of any call.
    pub ping_ms: f64,
    /// The median of 5 calls decoded into a map, as a client that reads the objects sees it.
    pub decoded_ms: f64,
    /// The same, decoded into [`BorrowedObjects`].
    pub decoded_borrowed_ms: f64,
}

impl Timing {
    /// The median of the undecoded calls, in ms.
    pub fn median_ms(&self) -> f64 {
        self.calls_ms[self.calls_ms.len() / 2]
    }

    /// The figures as `(name, value)`, the names the scale lab has always printed; through
    /// the direct socket each name has `_direct` after its subject, and there is no bus.
    pub fn figures(&self) -> Vec<(String, String)> {
        let cpu = |v: Option<f64>| v.map_or("?".into(), |ms| format!("{ms:.1}"));
        let (min, max) = (self.calls_ms[0], self.calls_ms[self.calls_ms.len() - 1]);
        let (gmo, ping) = if self.direct {
            ("get_managed_objects_direct", "peer_ping_direct_ms")
        } else {
            ("get_managed_objects", "peer_ping_ms")
        };
        let bus = if self.direct {
            String::new()
        } else {
            format!("bus {} ", cpu(self.cpu_bus_ms))
        };
        vec![
            (
                format!("{gmo}_first_ms"),
                format!("{:.0} ({} objects, decoded)", self.first_ms, self.objects),
            ),
            (
                format!("{gmo}_ms"),
                format!(
                    "{:.1} (median of {CALLS} calls in one client, reply {} bytes, not decoded; min {min:.1} max {max:.1})",
                    self.median_ms(),
                    self.reply_bytes,
                ),
            ),
            (
                format!("{gmo}_cpu_per_call_ms"),
                format!(
                    "{bus}daemon {} client {} (utime+stime over the {CALLS} calls)",
                    cpu(self.cpu_daemon_ms),
                    cpu(self.cpu_client_ms)
                ),
            ),
            (ping.to_string(), format!("{:.1} (median of {CALLS})", self.ping_ms)),
            (
                format!("{gmo}_decoded_ms"),
                format!("{:.1} (median of 5)", self.decoded_ms),
            ),
            (
                format!("{gmo}_decoded_borrowed_ms"),
                format!(
                    "{:.1} (median of 5, values borrowing the reply's strings)",
                    self.decoded_borrowed_ms
                ),
            ),
        ]
    }
}

/// A peer-to-peer connection to the daemon's direct socket at `path`
/// (service/src/dbus/direct/).
pub async fn connect_direct(path: &str) -> Result<zbus::Connection> {
    let stream = tokio::net::UnixStream::connect(path)
        .await
        .with_context(|| format!("cannot connect to {path}"))?;
    zbus::connection::Builder::unix_stream(stream)
        .p2p()
        .build()
        .await
        .with_context(|| format!("no D-Bus handshake on {path}"))
}

/// Times GetManagedObjects of the daemon on `conn`: the first call, [`CALLS`] more with the
/// CPU they cost `bus_pid`, `daemon_pid` and this process, `Peer.Ping`s, and 5 decoded
/// calls. Returns the timing and the first call's objects. `conn` is a bus connection, or
/// with `direct` a connection from [`connect_direct`] (no bus: `bus_pid` is not read).
///
/// A bus connection must answer the daemon's `Peer.Ping` (its object server started): the
/// daemon learns from that answer that a client reads its large replies
/// (service/src/dbus/limits.rs).
pub async fn time_get_managed_objects(
    conn: &zbus::Connection,
    direct: bool,
    bus_pid: Option<u32>,
    daemon_pid: Option<u32>,
) -> Result<(Timing, Objects)> {
    let bus_pid = bus_pid.filter(|_| !direct);
    let destination = (!direct).then_some(NAME);
    let call = |interface: &'static str, member: &'static str| {
        conn.call_method(destination, ROOT, Some(interface), member, &())
    };
    let t = Instant::now();
    let objects: Objects = call(OBJECT_MANAGER, "GetManagedObjects")
        .await?
        .body()
        .deserialize()?;
    let first_ms = ms_since(t);

    // Whose CPU a call costs: the bus (dbus-daemon reads a message 2 KiB at a time), the
    // daemon (its reply is cached after the first call) and this client.
    let this = std::process::id();
    let ticks = || {
        [
            bus_pid.and_then(cpu_ticks),
            daemon_pid.and_then(cpu_ticks),
            cpu_ticks(this),
        ]
    };
    let cpu0 = ticks();
    let mut calls_ms = Vec::with_capacity(CALLS);
    let mut reply_bytes = 0;
    for _ in 0..CALLS {
        let t = Instant::now();
        let reply = call(OBJECT_MANAGER, "GetManagedObjects").await?;
        calls_ms.push(ms_since(t));
        reply_bytes = reply.body().len();
    }
    let cpu1 = ticks();
    calls_ms.sort_by(f64::total_cmp);
    // USER_HZ is 100 on Linux x86-64: a tick is 10 ms.
    let per_call = |i: usize| match (cpu0[i], cpu1[i]) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a) as f64 * 10.0 / CALLS as f64),
        _ => None,
    };

    let mut ping = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let t = Instant::now();
        call("org.freedesktop.DBus.Peer", "Ping").await?;
        ping.push(ms_since(t));
    }
    ping.sort_by(f64::total_cmp);

    let mut decoded = Vec::with_capacity(5);
    for _ in 0..5 {
        let t = Instant::now();
        let o: Objects = call(OBJECT_MANAGER, "GetManagedObjects")
            .await?
            .body()
            .deserialize()?;
        decoded.push(ms_since(t));
        std::hint::black_box(o);
    }
    decoded.sort_by(f64::total_cmp);

    let mut borrowed = Vec::with_capacity(5);
    for _ in 0..5 {
        let t = Instant::now();
        let reply = call(OBJECT_MANAGER, "GetManagedObjects").await?;
        let body = reply.body();
        let o: BorrowedObjects<'_> = body.deserialize()?;
        borrowed.push(ms_since(t));
        std::hint::black_box(o);
    }
    borrowed.sort_by(f64::total_cmp);

    let timing = Timing {
        direct,
        first_ms,
        objects: objects.len(),
        calls_ms,
        reply_bytes,
        cpu_bus_ms: per_call(0),
        cpu_daemon_ms: per_call(1),
        cpu_client_ms: per_call(2),
        ping_ms: ping[CALLS / 2],
        decoded_ms: decoded[2],
        decoded_borrowed_ms: borrowed[2],
    };
    Ok((timing, objects))
}

/// Runs `cmd` with its output thrown away (a reference tool being timed); an error if it
/// cannot start or exits with a failure.
pub fn run_quiet(cmd: &mut Command) -> Result<()> {
    let st = cmd
        .stdout(Stdio::null())
        .status()
        .with_context(|| format!("{cmd:?}"))?;
    if !st.success() {
        bail!("{cmd:?}: {st}");
    }
    Ok(())
}

/// The median of `n` runs of `f`, in ms.
pub fn median_ms(n: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut ms = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f()?;
        ms.push(ms_since(t));
    }
    ms.sort_by(f64::total_cmp);
    ms.get(n / 2)
        .copied()
        .ok_or_else(|| anyhow::anyhow!("no runs"))
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_ms_takes_the_middle_run_and_passes_errors_on() {
        let mut n = 0;
        // Runs that sleep 0, 200 and 2 ms: the median is the 2 ms run's, whatever the order.
        let ms = median_ms(3, || {
            let sleep = [0, 200, 2][n];
            n += 1;
            std::thread::sleep(std::time::Duration::from_millis(sleep));
            Ok(())
        })
        .expect("no error");
        assert!((2.0..200.0).contains(&ms), "{ms}");
        assert!(median_ms(3, || anyhow::bail!("refused")).is_err());
        assert!(median_ms(0, || Ok(())).is_err());
    }
}
