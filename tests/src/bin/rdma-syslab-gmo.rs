//! rdma-syslab-gmo: GetManagedObjects of the installed daemon through the machine's system
//! bus (dbus-daemon or dbus-broker), beside `rdma -j dev show` and `ibstat` in the same run.
//! The installed-system lab (tests/syslab/guest-checks.sh) runs it in its guest with 256 rxe
//! devices on each bus; docs/PERFORMANCE.md, "rdma-syslab-gmo".
//!
//!     rdma-syslab-gmo --system --devices N [--wait-secs S]
//!
//! Waits (up to S seconds, default 600) until the daemon publishes at least N Device objects
//! and its start-up is over, then prints one `gmo: BUS NAME VALUE` line per figure, BUS
//! being the bus's process (`dbus-daemon` or `dbus-broker`): the reference tools' medians, then
//! the GetManagedObjects figures of the kernel lab's scale run (tests/src/gmo.rs), then
//! the ratio of the two medians. Times are figures, never checks: it fails (exit status 1)
//! only when the devices are not all published in time or a call is not answered.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rdma_manager_tests::gmo::{self, median_ms, run_quiet, Objects, NAME, ROOT};
use rdma_manager_tests::procfs;

const DEVICE_IFACE: &str = "org.rdmamanager.RdmaManager1.Device";
const PORT_IFACE: &str = "org.rdmamanager.RdmaManager1.Port";

struct Args {
    devices: usize,
    wait: Duration,
}

fn parse_args() -> Result<Args> {
    let mut system = false;
    let mut devices = None;
    let mut wait = Duration::from_secs(600);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--system" => system = true,
            "--devices" => devices = Some(it.next().context("--devices N")?.parse()?),
            "--wait-secs" => {
                wait = Duration::from_secs(it.next().context("--wait-secs S")?.parse()?)
            }
            other => bail!("unknown argument {other}"),
        }
    }
    // Only the system bus is measured: the daemon is the installed unit, on the bus the
    // machine runs. The flag says so at the call site.
    if !system {
        bail!("usage: rdma-syslab-gmo --system --devices N [--wait-secs S]");
    }
    Ok(Args {
        devices: devices.context("--devices N is required")?,
        wait,
    })
}

/// One `gmo:` line, flushed at once so that a transcript has it even if a later step hangs.
fn figure(bus: &str, name: &str, value: impl std::fmt::Display) {
    use std::io::Write as _;
    println!("gmo: {bus} {name} {value}");
    let _ = std::io::stdout().flush();
}

/// The bus's own process and how it was found. dbus-daemon answers
/// GetConnectionUnixProcessID for its own name with its PID; under dbus-broker the answer
/// (if any) may be the launcher, whose child `dbus-broker` does the relaying. Failing both,
/// /proc is searched for a system bus process.
async fn bus_process(dbus: &zbus::fdo::DBusProxy<'_>) -> Option<(u32, String)> {
    let own = zbus::names::BusName::try_from("org.freedesktop.DBus").ok()?;
    let asked = dbus.get_connection_unix_process_id(own).await;
    if let Ok(pid) = asked {
        match procfs::comm(pid).as_deref() {
            Some("dbus-daemon" | "dbus-broker") => {
                return Some((pid, "GetConnectionUnixProcessID".into()))
            }
            Some("dbus-broker-lau") => {
                if let Some(child) = child_named(pid, "dbus-broker") {
                    return Some((child, format!("child of dbus-broker-launch {pid}")));
                }
            }
            _ => {}
        }
    }
    let why = match asked {
        Ok(pid) => format!("the bus named PID {pid}"),
        Err(e) => format!("the bus did not say: {e}"),
    };
    system_bus_in_proc().map(|pid| (pid, format!("found in /proc ({why})")))
}

/// A child of `parent` whose command name is `name`.
fn child_named(parent: u32, name: &str) -> Option<u32> {
    procfs::pids().ok()?.into_iter().find(|&p| {
        procfs::parent_pid(p) == Some(parent) && procfs::comm(p).as_deref() == Some(name)
    })
}

/// A `dbus-daemon --system`, or a `dbus-broker` whose launcher runs `--scope system`.
fn system_bus_in_proc() -> Option<u32> {
    procfs::pids().ok()?.into_iter().find(|&p| {
        let args = procfs::cmdline(p);
        match procfs::comm(p).as_deref() {
            Some("dbus-daemon") => args.iter().any(|a| a == "--system"),
            Some("dbus-broker") => procfs::parent_pid(p).is_some_and(|launcher| {
                procfs::cmdline(launcher)
                    .windows(2)
                    .any(|w| w[0] == "--scope" && w[1] == "system")
            }),
            _ => false,
        }
    })
}

/// How many objects of each kind a GetManagedObjects reply holds.
fn count(objects: &Objects, iface: &str) -> usize {
    objects.values().filter(|i| i.contains_key(iface)).count()
}

/// The root's `Startup`, asked of the daemon now.
async fn startup(conn: &zbus::Connection) -> Result<bool> {
    let reply = conn
        .call_method(
            Some(NAME),
            ROOT,
            Some("org.freedesktop.DBus.Properties"),
            "Get",
            &(NAME, "Startup"),
        )
        .await?;
    let v: zbus::zvariant::OwnedValue = reply.body().deserialize()?;
    Ok(bool::try_from(v)?)
}

/// Waits until the daemon publishes `devices` Device objects and its start-up is over;
/// how long that took, in seconds.
async fn wait_published(conn: &zbus::Connection, devices: usize, limit: Duration) -> Result<f64> {
    let om = zbus::Proxy::new(conn, NAME, ROOT, "org.freedesktop.DBus.ObjectManager").await?;
    let t = Instant::now();
    let mut seen = 0;
    let mut last_err = String::new();
    while t.elapsed() < limit {
        match om.call::<_, _, Objects>("GetManagedObjects", &()).await {
            Ok(objects) => {
                seen = count(&objects, DEVICE_IFACE);
                if seen >= devices && matches!(startup(conn).await, Ok(false)) {
                    return Ok(t.elapsed().as_secs_f64());
                }
            }
            Err(e) => last_err = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    bail!(
        "{seen} of {devices} devices published after {} s{}",
        limit.as_secs(),
        if last_err.is_empty() {
            String::new()
        } else {
            format!(" (last error: {last_err})")
        }
    )
}

async fn measure(args: &Args) -> Result<()> {
    let conn = zbus::Connection::system().await.context("the system bus")?;
    // Answers the daemon's Peer.Ping (service/src/dbus/limits.rs).
    let _ = conn.object_server();
    let dbus = zbus::fdo::DBusProxy::new(&conn).await?;
    let (bus_pid, bus_name) = match bus_process(&dbus).await {
        Some((pid, how)) => {
            let name = procfs::comm(pid).unwrap_or_else(|| "?".into());
            figure(&name, "bus_process", format!("{name} pid {pid} ({how})"));
            (Some(pid), name)
        }
        None => {
            figure("unknown-bus", "bus_process", "not found");
            (None, "unknown-bus".to_string())
        }
    };
    let bus = bus_name.as_str();

    let waited = wait_published(&conn, args.devices, args.wait).await?;
    figure(bus, "published_after_s", format!("{waited:.1}"));
    let name = zbus::names::BusName::try_from(NAME)?;
    let daemon_pid = dbus.get_connection_unix_process_id(name).await.ok();
    figure(
        bus,
        "daemon_pid",
        daemon_pid.map_or("?".into(), |p| p.to_string()),
    );

    // The reference tools first, in the same guest and run, while the daemon is idle.
    // A reference tool that fails is a figure, as in the scale lab: the daemon's call is
    // measured all the same.
    let rdma = median_ms(5, || {
        run_quiet(Command::new("rdma").args(["-j", "dev", "show"]))
    });
    match &rdma {
        Ok(ms) => figure(bus, "rdma_j_dev_show_ms", format!("{ms:.1} (median of 5)")),
        Err(e) => figure(bus, "rdma_j_dev_show_ms", format!("FAILED: {e:#}")),
    }
    match median_ms(3, || run_quiet(&mut Command::new("ibstat"))) {
        Ok(ms) => figure(bus, "ibstat_all_ms", format!("{ms:.0} (median of 3)")),
        Err(e) => figure(bus, "ibstat_all_ms", format!("FAILED: {e:#}")),
    }

    let (timing, objects) =
        gmo::time_get_managed_objects(&conn, false, bus_pid, daemon_pid).await?;
    figure(
        bus,
        "objects",
        format!(
            "{} devices, {} ports",
            count(&objects, DEVICE_IFACE),
            count(&objects, PORT_IFACE)
        ),
    );
    for (name, value) in timing.figures() {
        figure(bus, &name, value);
    }
    // The same through the installed daemon's direct socket (no bus), as the unit runs it.
    let direct_conn = gmo::connect_direct(rdma_manager_dbus::DIRECT_SOCKET_PATH).await?;
    let (direct, direct_objects) =
        gmo::time_get_managed_objects(&direct_conn, true, None, daemon_pid).await?;
    drop(direct_conn);
    for (name, value) in direct.figures() {
        figure(bus, &name, value);
    }
    // The target: GetManagedObjects at least 5 times faster than `rdma -j dev show`.
    if let Ok(rdma) = rdma {
        figure(
            bus,
            "rdma_over_get_managed_objects",
            format!("{:.2} (the target is 5 or more)", rdma / timing.median_ms()),
        );
        figure(
            bus,
            "rdma_over_get_managed_objects_direct",
            format!("{:.2} (the target is 5 or more)", rdma / direct.median_ms()),
        );
    }
    if direct_objects != objects {
        bail!("the direct socket's objects differ from the bus's");
    }
    if count(&objects, DEVICE_IFACE) < args.devices {
        bail!(
            "the timed calls returned fewer than {} devices",
            args.devices
        );
    }
    Ok(())
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(measure(&args))
}
