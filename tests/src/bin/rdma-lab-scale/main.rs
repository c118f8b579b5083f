//! rdma-lab-scale: the daemon on a real kernel with many RDMA devices, against the reference
//! tools, in one run of the QEMU kernel lab (docs/PERFORMANCE.md, "rdma-lab-scale").
//!
//! Run as the lab's scenario program with the daemon's files in the guest:
//!
//!     tests/lab/run-lab.sh --scenario-bin target/release/rdma-lab-scale \
//!         --daemon-bin target/release/rdma-managerd --no-daemon-checks \
//!         --kernels 6.12 --mem 2048 --timeout 900
//!
//! In the guest it makes `RDMA_LAB_SCALE_DEVICES` (default 256; or `--append
//! rdma_lab_scale_devices=N` to run-lab.sh) dummy netdevs with an rxe
//! device on each, then measures, all in the same guest:
//! - one `ibstat` of every device and one `rdma -j dev show` (the median of 3 runs each);
//! - the GID tables read through libibverbs equal those read through sysfs, for every device,
//!   and what each way of reading all devices costs in this process;
//! - `rdma-managerd` on a system bus: from its start to the bus name owned; after 30 s its
//!   open descriptors (`/proc/PID/fd`), RSS and open-file limit; its CPU over the next 30 s
//!   while idle; GetManagedObjects in one client (the first call, then the median of 11,
//!   with the CPU each call costs the bus, the daemon and the client, and a Peer.Ping's
//!   round trip as the floor of any call);
//!   the time from `ip addr add` on a device's netdev until the IPv4-mapped GID the kernel
//!   adds for it is in the port's `Gids` on D-Bus;
//!   the time from
//!   `ip link set dummyN down` until the port's `State` on D-Bus is `DOWN`; from `rdma link
//!   add` of one more device until its Device object's InterfacesAdded; the declarative
//!   state in force applied again (GetState's document to ApplyState, no change); how many lines of
//!   its log say "Too many open files"; then a second start (a restart: rdma_cm's configfs
//!   directories exist by then) with ibstat timed again beside it; then a third start with
//!   a 10 ms tick, whose RSS is taken once every port's history is full.
//!
//! With `--append rdma_lab_scale_memory_runs=N` it measures only the last figure, RSS with
//! a full history, N times in one boot (after one start to find the port it asks for). With
//! `--append rdma_lab_scale_idle_runs=N`, only idle CPU, N windows of 30 s split into user,
//! system and threads, then a `perf` profile of one more when run-lab.sh had `--with-perf`.
//!
//! Prints one `scale: NAME VALUE` line per figure. Times are figures, never checks; it fails
//! (exit status 1) only when the GIDs through verbs and sysfs differ, the daemon does not come
//! up (or up again), a port going down, a device added or an address's GID is not on D-Bus
//! within 30 s, the
//! daemon logs "Too many open files", or it maps a libibverbs provider other than rxe's.

mod exporters;

use rdma_managerd::cli::DEFAULT_LOG_FILTER;
use std::io::Write as _;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rdma_manager_tests::gmo::{self, median_ms, run_quiet as run, NAME, ROOT};
use rdma_manager_tests::procfs::cpu_ticks;
use rdma_managerd::kernel::linux::LinuxHost;
use rdma_managerd::kernel::prelude::*;
use rdma_managerd::kernel::sysfs::SysRoot;
use rdma_managerd::kernel::verbs::Verbs;
use zbus::zvariant::OwnedObjectPath;

const PORT_IFACE: &str = "org.rdmamanager.RdmaManager1.Port";
const SOCK: &str = "/run/dbus/system_bus_socket";
const DAEMON_LOG: &str = "/tmp/rdma-managerd.log";

fn figure(name: &str, value: impl std::fmt::Display) {
    println!("scale: {name} {value}");
    let _ = std::io::stdout().flush();
}

/// Runs `cmd` with `input` on its standard input (`ip -b -`, `rdma -b -`).
fn run_batch(cmd: &mut Command, input: &str) -> Result<()> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .with_context(|| format!("{cmd:?}"))?;
    child
        .stdin
        .take()
        .context("stdin")?
        .write_all(input.as_bytes())?;
    let st = child.wait()?;
    if !st.success() {
        bail!("{cmd:?}: {st}");
    }
    Ok(())
}

fn make_devices(n: usize) -> Result<()> {
    let t = Instant::now();
    let mut ip = String::new();
    for i in 0..n {
        ip += &format!("link add dummy{i} type dummy\nlink set dummy{i} up\n");
    }
    run_batch(Command::new("ip").args(["-b", "-"]), &ip)?;
    // `rdma -b` opens a netlink socket per command and keeps them all: past about 1000
    // commands it fails with "Failed to open NETLINK_RDMA socket" (the guest's limit of
    // 1024 descriptors), so the devices are made 256 a batch.
    for chunk in (0..n).collect::<Vec<_>>().chunks(256) {
        let rdma: String = chunk
            .iter()
            .map(|i| format!("link add rxe{i} type rxe netdev dummy{i}\n"))
            .collect();
        run_batch(Command::new("rdma").args(["-b", "-"]), &rdma)?;
    }
    let have = SysRoot::system().rdma_device_names()?.len();
    if have != n {
        bail!("{have} RDMA devices after making {n}");
    }
    figure("devices", n);
    figure("setup_s", format!("{:.1}", t.elapsed().as_secs_f64()));
    Ok(())
}

/// Every device's GIDs through verbs equal those through sysfs; and what each costs.
fn compare_gids(rt: &tokio::runtime::Runtime) -> Result<()> {
    let sys = SysRoot::system();
    let names = sys.rdma_device_names()?;
    let verbs = Verbs::load().context("libibverbs in the guest")?;
    let list = verbs.devices()?;
    let mut entries = 0;
    for name in &names {
        let by_sysfs = sys.read_device(name)?;
        let max: usize = by_sysfs.ports.len() * 1024;
        let numbers: Vec<u32> = by_sysfs.ports.iter().map(|p| p.number).collect();
        let tables = list
            .tables(name, max, &numbers)
            .with_context(|| format!("{name}: ibv_query_gid_table"))?;
        let by_verbs = rdma_managerd::kernel::verbs::gids_by_port(
            &tables.gids,
            rdma_managerd::kernel::verbs::ifname,
        );
        // sysfs lists as many `gids` and `pkeys` entries as ibv_query_port's table lengths;
        // the MTUs only verbs tell. The host's own read below takes them from verbs.
        let mut expected = by_sysfs.clone();
        for p in expected.ports.iter_mut() {
            let attr = match tables.ports.get(&p.number) {
                Some(Ok(a)) => a.attrs(),
                other => bail!("{name} port {}: ibv_query_port: {other:?}", p.number),
            };
            if p.gid_table_len != Ok(attr.gid_table_len)
                || p.pkey_table_len != Ok(attr.pkey_table_len)
            {
                bail!(
                    "{name} port {}: table lengths through sysfs {:?}/{:?} differ from \
                     ibv_query_port's {}/{}",
                    p.number,
                    p.gid_table_len,
                    p.pkey_table_len,
                    attr.gid_table_len,
                    attr.pkey_table_len
                );
            }
            p.active_mtu = attr.active_mtu;
            p.max_mtu = attr.max_mtu;
        }
        for p in &by_sysfs.ports {
            let v = by_verbs.get(&p.number).cloned().unwrap_or_default();
            if v != p.gids {
                bail!(
                    "{name} port {}: GIDs through verbs {v:?} differ from sysfs {:?}",
                    p.number,
                    p.gids
                );
            }
            entries += v.len();
        }
        // And the host's own read (verbs where it can) gives the same device.
        let by_host = rt.block_on(LinuxHost::new().read_device(name))?;
        if by_host != expected {
            bail!("{name}: LinuxHost::read_device differs from the sysfs and verbs reads");
        }
    }
    drop(list);
    figure(
        "gids_verbs_equal_sysfs",
        format!("yes ({} devices, {entries} GIDs)", names.len()),
    );
    let sysfs_ms = median_ms(1, || {
        for name in &names {
            std::hint::black_box(sys.read_device(name)?);
        }
        Ok(())
    })?;
    figure("read_devices_sysfs_gids_ms", format!("{sysfs_ms:.0}"));
    let verbs_ms = median_ms(1, || {
        std::hint::black_box(rt.block_on(LinuxHost::new().read_devices())?);
        Ok(())
    })?;
    figure("read_devices_verbs_gids_ms", format!("{verbs_ms:.0}"));
    Ok(())
}

/// Where a read of the host goes: each primitive over every device, timed in this process
/// (`profile_*` figures, ms for all devices unless named per file). Reads a file `n` times
/// per device so that cheap files are measured above the clock's resolution.
fn profile(rt: &tokio::runtime::Runtime) -> Result<()> {
    use rdma_managerd::kernel::nldev::NldevClient;
    let sys = SysRoot::system();
    let names = sys.rdma_device_names()?;
    let ms = |t: Instant| format!("{:.0}", t.elapsed().as_secs_f64() * 1e3);
    let t = Instant::now();
    let nl = NldevClient::open()?;
    let devs = nl.devices()?;
    figure(
        "profile_nldev_get_dump_ms",
        format!("{} ({} devices)", ms(t), devs.len()),
    );
    let t = Instant::now();
    let ports = nl.ports()?;
    figure(
        "profile_nldev_port_get_dump_ms",
        format!("{} ({} ports)", ms(t), ports.len()),
    );
    // The port poll's netdev counters: one RTM_GETSTATS dump (the socket opened before),
    // median of 5 (the simulated host's cost model charges it per link).
    {
        use rdma_managerd::kernel::link_stats::{LinkStats, RtnlLinkStats};
        let mut stats = RtnlLinkStats::open()?;
        let mut runs = Vec::new();
        let mut links = 0;
        for _ in 0..5 {
            let t = Instant::now();
            links = stats.dump()?.len();
            runs.push(t.elapsed().as_secs_f64() * 1e3);
        }
        runs.sort_by(f64::total_cmp);
        figure(
            "profile_rtnl_stats_dump_ms",
            format!("{:.1} ({links} links)", runs[2]),
        );
    }
    // Per file, every device's port 1 (rxe has one port) or the device directory.
    for (file, port) in [
        ("node_type", false),
        ("node_guid", false),
        ("sys_image_guid", false),
        ("fw_ver", false),
        ("node_desc", false),
        ("parent", false),
        ("state", true),
        ("phys_state", true),
        ("lid", true),
        ("sm_lid", true),
        ("lid_mask_count", true),
        ("cap_mask", true),
        ("link_layer", true),
        ("rate", true),
        ("gids/0", true),
        ("gid_attrs/ndevs/0", true),
        ("gid_attrs/types/0", true),
        ("pkeys/0", true),
    ] {
        let t = Instant::now();
        for name in &names {
            let path = if port {
                sys.port_dir(name, 1).join(file)
            } else {
                sys.device_dir(name).join(file)
            };
            let _ = std::hint::black_box(std::fs::read(&path));
        }
        figure(
            &format!("profile_file_{}_ms", file.replace('/', "_")),
            ms(t),
        );
    }
    profile_kept_files(&sys, &names)?;
    for dir in ["gids", "pkeys", "hw_counters"] {
        let t = Instant::now();
        let mut n = 0;
        for name in &names {
            n += std::fs::read_dir(sys.port_dir(name, 1).join(dir))
                .map(|d| d.count())
                .unwrap_or(0);
        }
        figure(
            &format!("profile_list_{dir}_ms"),
            format!("{} ({n} entries)", ms(t)),
        );
    }
    let t = Instant::now();
    for name in &names {
        std::hint::black_box(sys.port_sources(name)?);
    }
    figure("profile_port_sources_ms", ms(t));
    let t = Instant::now();
    for name in &names {
        let _ = std::hint::black_box(sys.roce_mode(name, 1));
        let _ = std::hint::black_box(sys.roce_tos(name, 1));
    }
    figure("profile_configfs_mode_tos_ms", ms(t));
    let t = Instant::now();
    for name in &names {
        let _ = std::hint::black_box(sys.rename_sysfs(name));
    }
    figure("profile_rename_sysfs_ms", ms(t));
    let t = Instant::now();
    let nd = sys.read_netdevs()?;
    figure(
        "profile_read_netdevs_ms",
        format!("{} ({} netdevs)", ms(t), nd.len()),
    );
    // A device's read without its GID tables: what the attributes cost.
    let t = Instant::now();
    for name in &names {
        let _ = std::hint::black_box(
            sys.read_device_with(name, Some(&mut |_, _, _| Some(Default::default()))),
        );
    }
    figure("profile_read_device_without_gids_ms", ms(t));
    let t = Instant::now();
    for name in &names {
        if let Ok(i) = std::fs::read_to_string(
            sys.netdev_dir(&format!("dummy{}", &name[3..]))
                .join("ifindex"),
        ) {
            if let Ok(i) = i.trim().parse() {
                let _ = std::hint::black_box(rdma_managerd::kernel::verbs::ifname(i));
            }
        }
    }
    figure("profile_ifindex_file_and_ifname_ms", ms(t));
    let verbs = Verbs::load().context("libibverbs")?;
    let t = Instant::now();
    let list = verbs.devices()?;
    figure("profile_verbs_device_list_ms", ms(t));
    let t = Instant::now();
    for name in &names {
        let _ = std::hint::black_box(list.tables(name, 1024, &[]));
    }
    figure("profile_verbs_open_gid_table_close_ms", ms(t));
    drop(list);
    let t = Instant::now();
    let host = LinuxHost::new();
    let st = rt.block_on(rdma_managerd::engine::ObservedState::read(&host))?;
    figure(
        "profile_host_state_read_ms",
        format!("{} ({} devices)", ms(t), st.devices.len()),
    );
    let t = Instant::now();
    let _ = rt.block_on(rdma_managerd::engine::read_host(
        &host,
        &rdma_managerd::system::unreachable::Unreachable,
    ))?;
    figure("profile_read_host_ms", ms(t));
    Ok(())
}

/// The port poll's two ways of reading an attribute, on the files it polls on every port
/// (`state`, `phys_state`, `lid`, `sm_lid` of port 1): opened, read and closed each time,
/// against read at offset 0 through a descriptor kept open; each the median of 5 passes
/// over all of them, per file. And what the kernel holds for a kept descriptor once it has
/// been read (sysfs keeps the open file, its kernfs and seq_file state and a page of seq
/// buffer until the close): the growth of `Slab` in /proc/meminfo, per file.
fn profile_kept_files(sys: &SysRoot, names: &[String]) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let paths: Vec<_> = names
        .iter()
        .flat_map(|n| ["state", "phys_state", "lid", "sm_lid"].map(|f| sys.port_dir(n, 1).join(f)))
        .collect();
    // A thousand files and more kept: the soft limit raised to the hard one, as the daemon
    // does at start.
    rdma_managerd::kernel::rlimit::raise_nofile_limit()?;
    let mut buf = [0u8; 64];
    let per_file_us = |runs: &mut Vec<f64>, files: usize| {
        runs.sort_by(f64::total_cmp);
        format!("{:.1}", runs[runs.len() / 2] * 1e6 / files.max(1) as f64)
    };
    let mut runs = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        for p in &paths {
            if let Ok(f) = std::fs::File::open(p) {
                let _ = std::hint::black_box(f.read_at(&mut buf, 0));
            }
        }
        runs.push(t.elapsed().as_secs_f64());
    }
    figure(
        "profile_reopened_read_us",
        per_file_us(&mut runs, paths.len()),
    );
    // Opened before the files are kept: where the hard limit is low (4096 in the guest) the
    // kept files of 1024 devices take every descriptor.
    let meminfo = std::fs::File::open("/proc/meminfo").ok();
    let slab_before = meminfo.as_ref().and_then(|f| meminfo_kb(f, "Slab"));
    let kept: Vec<std::fs::File> = paths
        .iter()
        .filter_map(|p| std::fs::File::open(p).ok())
        .collect();
    for f in &kept {
        let _ = f.read_at(&mut buf, 0);
    }
    let slab_after = meminfo.as_ref().and_then(|f| meminfo_kb(f, "Slab"));
    let mut runs = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        for f in &kept {
            let _ = std::hint::black_box(f.read_at(&mut buf, 0));
        }
        runs.push(t.elapsed().as_secs_f64());
    }
    figure("profile_kept_read_us", per_file_us(&mut runs, kept.len()));
    figure(
        "profile_kept_kernel_bytes_per_file",
        match (slab_before, slab_after) {
            (Some(b), Some(a)) => format!(
                "{} ({} files kept; Slab {b} kB before, {a} kB after)",
                (a.saturating_sub(b) * 1024) / kept.len().max(1) as u64,
                kept.len()
            ),
            (b, a) => format!("unknown (Slab before {b:?}, after {a:?})"),
        },
    );
    Ok(())
}

/// A line of /proc/meminfo (read again at offset 0 through `file`), in KiB.
fn meminfo_kb(file: &std::fs::File, key: &str) -> Option<u64> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; 16384];
    let n = file.read_at(&mut buf, 0).ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// What a kept uverbs context gives on rxe, on the last device (after the daemon phase):
/// which descriptors it holds, which async events a netdev going down and up and an address
/// added raise, and whether `rdma link delete` completes while the context is open.
fn probe_async_events(devices: usize) -> Result<()> {
    let dev = format!("rxe{}", devices - 1);
    let netdev = format!("dummy{}", devices - 1);
    let verbs = Verbs::load().context("libibverbs")?;
    let list = verbs.devices()?;
    let mut ctx = list.open(&dev)?;
    let link = |fd: i32| {
        std::fs::read_link(format!("/proc/self/fd/{fd}"))
            .map(|p| p.display().to_string())
            .unwrap_or_else(|e| format!("? ({e})"))
    };
    figure(
        "probe_context_fds",
        format!("cmd {} async {}", link(ctx.cmd_fd()), link(ctx.async_fd())),
    );
    let fd = ctx.async_fd();
    // SAFETY: fcntl on the context's own descriptor.
    unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
    let mut wait = |what: &str, cmd: &mut Command| -> Result<()> {
        let t = Instant::now();
        run(cmd)?;
        let mut got = Vec::new();
        while t.elapsed() < Duration::from_secs(3) {
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd.
            unsafe { libc::poll(&mut pfd, 1, 200) };
            while let Some((ty, port)) = ctx.next_event()? {
                got.push(format!(
                    "type {ty} port {port} at {:.0} ms",
                    t.elapsed().as_secs_f64() * 1e3
                ));
            }
            if !got.is_empty() {
                break;
            }
        }
        figure(
            &format!("probe_async_events_{what}"),
            if got.is_empty() {
                "none within 3 s".to_string()
            } else {
                got.join(", ")
            },
        );
        Ok(())
    };
    wait(
        "netdev_down",
        Command::new("ip").args(["link", "set", &netdev, "down"]),
    )?;
    wait(
        "netdev_up",
        Command::new("ip").args(["link", "set", &netdev, "up"]),
    )?;
    wait(
        "address_added",
        Command::new("ip").args(["addr", "add", "10.9.9.9/24", "dev", &netdev]),
    )?;
    let t = Instant::now();
    let mut del = Command::new("rdma")
        .args(["link", "delete", &dev])
        .stdout(Stdio::null())
        .spawn()?;
    let mut done = None;
    while t.elapsed() < Duration::from_secs(5) {
        if let Some(st) = del.try_wait()? {
            done = Some(st);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut events = Vec::new();
    while let Ok(Some((ty, port))) = ctx.next_event() {
        events.push(format!("type {ty} port {port}"));
    }
    figure(
        "probe_link_delete_with_context_open",
        match done {
            Some(st) => format!(
                "{st} after {:.0} ms; events {events:?}",
                t.elapsed().as_secs_f64() * 1e3
            ),
            None => format!("still running after 5 s; events {events:?}"),
        },
    );
    if done.is_none() {
        let t = Instant::now();
        drop(ctx);
        let st = del.wait()?;
        figure(
            "probe_link_delete_after_context_closed",
            format!(
                "{st} {:.0} ms after the close",
                t.elapsed().as_secs_f64() * 1e3
            ),
        );
    }
    Ok(())
}

/// The daemon's own forwarding of port events (`port_events::spawn_forward`) on a real
/// uverbs context: rxe's driver raises PORT_ERR and PORT_ACTIVE when its netdev goes down and
/// up, which the daemon does not watch on rxe (rxe holds up its removal while a context is
/// open), so a context is opened here by hand, on another device than the first probe's,
/// and closed before anything is deleted. The run fails if the events do not arrive as the
/// daemon's events within 3 s each.
fn probe_port_event_forwarding(rt: &tokio::runtime::Runtime, devices: usize) -> Result<()> {
    use rdma_managerd::kernel::port_events::{spawn_forward, PortEventKind};
    use rdma_managerd::kernel::HostEvent;
    let dev = format!("rxe{}", devices.saturating_sub(2));
    let netdev = format!("dummy{}", devices.saturating_sub(2));
    let verbs = Verbs::shared().context("libibverbs")?;
    let list = verbs.devices()?;
    let ctx = list.open(&dev)?;
    ctx.set_events_nonblocking()?;
    drop(list);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let task = {
        let _in_runtime = rt.enter();
        spawn_forward(ctx, dev.clone(), tx)
    };
    let mut seen = Vec::new();
    for (up, want) in [("down", PortEventKind::Err), ("up", PortEventKind::Active)] {
        let t = Instant::now();
        run(Command::new("ip").args(["link", "set", &netdev, up]))?;
        let got = rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(3), async {
                while let Some(ev) = rx.recv().await {
                    if let HostEvent::RdmaPortEvent { port: 1, event, .. } = &ev {
                        if *event == want {
                            return Some(ev);
                        }
                    }
                }
                None
            })
            .await
        });
        match got {
            Ok(Some(_)) => seen.push(format!(
                "{want:?} {:.0} ms after {up}",
                t.elapsed().as_secs_f64() * 1e3
            )),
            _ => {
                task.abort();
                bail!("no {want:?} event of {dev} port 1 within 3 s of its netdev going {up}");
            }
        }
    }
    task.abort();
    // The aborted task closes the context: wait for it before anything else runs.
    let _ = rt.block_on(task);
    figure("port_events_forwarded", seen.join(", "));
    Ok(())
}

fn proc_status_kb(pid: u32, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The daemon's memory with a full history (figures as read, `?` where unreadable).
struct FullHistory {
    /// VmRSS, KiB.
    rss: String,
    /// RssAnon / RssFile / RssShmem, KiB.
    kinds: String,
    /// The largest mappings' RSS.
    by_mapping: String,
    /// How many samples with data one port's two histories returned (gaps, ticks the poll
    /// could not keep up with, fill the rings but are not returned).
    samples: String,
}

/// Starts the daemon with a 10 ms tick, waits until every port's history is full, and
/// returns its memory then, and whether it had mapped a libibverbs provider other than rxe's.
async fn full_history_rss(
    conn: &zbus::Connection,
    dbus: &zbus::fdo::DBusProxy<'_>,
    name: &zbus::names::BusName<'_>,
    port_path: &OwnedObjectPath,
) -> Result<(FullHistory, bool)> {
    // The heap's use after each trim (at every re-read) is logged on a target of its own.
    let mut daemon = spawn_daemon_with(
        &["--tick-ms=10"],
        &format!("{DEFAULT_LOG_FILTER},rdma_managerd::heap=debug"),
    )?;
    let pid = daemon.id();
    let result = async {
        wait_until(Duration::from_secs(600), || async {
            dbus.name_has_owner(name.clone()).await.unwrap_or(false)
        })
        .await
        .context("no name within 600 s")?;
        started(conn)
            .await
            .context("Startup still true after 600 s")?;
        // 3600 ticks of 10 ms, and a margin.
        tokio::time::sleep(Duration::from_secs(40)).await;
        let mut counts = Vec::new();
        for method in ["GetThroughputHistory", "GetThroughputHistoryCoarse"] {
            let reply = conn
                .call_method(
                    Some(NAME),
                    port_path.as_str(),
                    Some(PORT_IFACE),
                    method,
                    &(),
                )
                .await?;
            let samples: Vec<(u64, f64, f64, f64, f64, u8)> = reply.body().deserialize()?;
            counts.push(samples.len().to_string());
        }
        let rss = proc_status_kb(pid, "VmRSS:").map_or("?".into(), |n| n.to_string());
        // Each thread's stack is an anonymous mapping of its own.
        figure(
            "threads_full_history",
            proc_status_kb(pid, "Threads:").map_or("?".into(), |n| n.to_string()),
        );
        // libibverbs loads every provider it knows unless the daemon loaded the ones its
        // devices need first (kernel/verbs_providers.rs): here rxe's alone.
        let providers = rdma_manager_tests::procfs::libibverbs_providers_mapped(&pid.to_string());
        figure("verbs_providers_mapped", providers.join(" "));
        let stray_providers = providers.iter().any(|p| !p.starts_with("librxe-"));
        anyhow::Ok((
            FullHistory {
                rss,
                kinds: rss_kinds(pid),
                by_mapping: rdma_manager_tests::procfs::rss_by_mapping_line(pid, 16),
                samples: counts.join(" / "),
            },
            stray_providers,
        ))
    }
    .await;
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let _ = daemon.wait();
    // malloc's own figures at the last trim: live data against free space in the heap.
    if let Some(l) = std::fs::read_to_string(DAEMON_LOG)
        .unwrap_or_default()
        .lines()
        .rfind(|l| l.contains("heap after trimming"))
    {
        println!("daemon-log (full history): {l}");
    }
    result
}

/// `RssAnon / RssFile / RssShmem` of a process, in KiB.
fn rss_kinds(pid: u32) -> String {
    let kib = |field| proc_status_kb(pid, field).map_or("?".into(), |n| n.to_string());
    format!(
        "{} / {} / {}",
        kib("RssAnon:"),
        kib("RssFile:"),
        kib("RssShmem:")
    )
}

fn open_fds(pid: u32) -> Option<usize> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()
        .map(|d| d.count())
}

fn nofile(pid: u32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    let f: Vec<&str> = line.split_whitespace().collect();
    Some(format!("{}/{}", f.get(3)?, f.get(4)?))
}

/// Polls `check` every 20 ms until it is true or `limit` passed; the time it took.
async fn wait_until<F, Fut>(limit: Duration, mut check: F) -> Option<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let t = Instant::now();
    while t.elapsed() < limit {
        if check().await {
            return Some(t.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// Waits until the daemon's root says its start-up is over (`Startup` false), asking every
/// 20 ms as the name is polled (not a proxy's cache, which a restarted daemon would not
/// fill); `None` after 600 s.
async fn started(conn: &zbus::Connection) -> Option<Duration> {
    wait_until(Duration::from_secs(600), || async {
        matches!(startup_now(conn).await, Ok(false))
    })
    .await
}

/// Waits until the model a client reads is complete: start-up over (`Startup` false) and
/// the root's `Devices` listing at least `devices` devices, asked every 20 ms; `None` after
/// 600 s.
async fn model_complete(conn: &zbus::Connection, devices: usize) -> Option<Duration> {
    wait_until(Duration::from_secs(600), || async {
        matches!(startup_now(conn).await, Ok(false))
            && devices_listed(conn).await.is_ok_and(|n| n >= devices)
    })
    .await
}

/// How many devices the root's `Devices` lists now.
async fn devices_listed(conn: &zbus::Connection) -> Result<usize> {
    let props = zbus::fdo::PropertiesProxy::builder(conn)
        .destination(NAME)?
        .path(ROOT)?
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?;
    let v = props
        .get(
            zbus::names::InterfaceName::try_from("org.rdmamanager.RdmaManager1")?,
            "Devices",
        )
        .await?;
    Ok(Vec::<zbus::zvariant::OwnedObjectPath>::try_from(v)?.len())
}

/// `rdma-tui --ibstat` and `--json` (where the lab put rdma-tui: `run-lab.sh --tui-bin`),
/// each the median of 3, with whether `--ibstat` printed what `ibstat` prints.
fn time_rdma_tui() {
    const TUI: &str = "/usr/bin/rdma-tui";
    if !std::path::Path::new(TUI).exists() {
        figure(
            "rdma_tui_ibstat_ms",
            "no rdma-tui in the guest (run-lab.sh --tui-bin)",
        );
        return;
    }
    for (figure_name, arg) in [
        ("rdma_tui_ibstat_ms", "--ibstat"),
        ("rdma_tui_json_ms", "--json"),
    ] {
        match median_ms(3, || run(Command::new(TUI).arg(arg))) {
            Ok(v) => figure(figure_name, format!("{v:.0}")),
            Err(e) => figure(figure_name, format!("FAILED: {e:#}")),
        }
    }
    let out = |cmd: &mut Command| cmd.output().map(|o| o.stdout).unwrap_or_default();
    let same = out(Command::new(TUI).arg("--ibstat")) == out(&mut Command::new("ibstat"));
    figure("rdma_tui_ibstat_equal", if same { "yes" } else { "NO" });
}

/// The root's `Startup`, asked of the daemon now.
async fn startup_now(conn: &zbus::Connection) -> Result<bool> {
    let props = zbus::fdo::PropertiesProxy::builder(conn)
        .destination(NAME)?
        .path(ROOT)?
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?;
    let v = props
        .get(
            zbus::names::InterfaceName::try_from("org.rdmamanager.RdmaManager1")?,
            "Startup",
        )
        .await?;
    Ok(bool::try_from(v)?)
}

/// The installed daemon, logging as installed to [`DAEMON_LOG`] (made anew).
/// GetState's YAML applied back with ApplyState three times: the median time, the document's
/// lines and the changes of the last apply (0 when the state holds).
async fn state_in_force(conn: &zbus::Connection) -> Result<(f64, usize, usize)> {
    let manager = rdma_manager_dbus::proxies::ManagerProxy::new(conn).await?;
    let doc = manager.get_state("yaml").await?;
    let mut times = Vec::new();
    let mut changes = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let (applied, _pending) = manager.apply_state(&doc, 0).await?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        changes = applied.len();
    }
    times.sort_by(f64::total_cmp);
    Ok((times[1], doc.lines().count(), changes))
}

/// A node health check of every port (state, physical state, link layer, rate, the netdev's
/// MTU, flaps) and of the devices (count, firmware), as `rdma-cli health` asks it, timed from
/// the call to its answer (median of 3), to set beside one `ibstat` of every device: (ms,
/// verdicts, failed verdicts).
async fn health_check(conn: &zbus::Connection, devices: usize) -> Result<(f64, usize, usize)> {
    let manager = rdma_manager_dbus::proxies::ManagerProxy::new(conn).await?;
    let doc = format!(
        "health:\n  ports:\n    - state: ACTIVE\n      phys-state: LinkUp\n      \
         link-layer: Ethernet\n      min-rate-gbps: 1\n      mtu: 1500\n  \
         min-ports: {devices}\n  firmware-equal: true\n  flaps:\n    window-seconds: 600\n    \
         max: 2\n"
    );
    let mut times = Vec::new();
    let mut rows = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        rows = manager.check_health(&doc).await?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let failed = rows.iter().filter(|r| !r.passed).count();
    Ok((times[1], rows.len(), failed))
}

fn spawn_daemon() -> Result<Child> {
    spawn_daemon_with(&[], DEFAULT_LOG_FILTER)
}

fn spawn_daemon_with(args: &[&str], log_filter: &str) -> Result<Child> {
    let log = std::fs::File::create(DAEMON_LOG)?;
    Command::new("/usr/sbin/rdma-managerd")
        .args(args)
        .env("RUST_LOG", log_filter)
        .env("NO_COLOR", "1")
        .stderr(log)
        .stdout(Stdio::null())
        .spawn()
        .context("rdma-managerd")
}

/// Makes one more dummy netdev and an rxe device on it, and waits for the daemon's
/// InterfacesAdded of a Device object named after it.
/// How many times an event's delay is measured: its target holds "every time".
const TRIES: usize = 5;

/// The slowest of `tries` in ms and each of them, in order (`failed` for one that did not
/// come).
fn tries_text(tries: &[Option<f64>], failed: &str) -> String {
    let each: Vec<String> = tries
        .iter()
        .map(|t| t.map_or(failed.to_string(), |ms| format!("{ms:.0}")))
        .collect();
    let max = tries.iter().flatten().copied().fold(0.0, f64::max);
    let missing = tries.iter().filter(|t| t.is_none()).count();
    format!(
        "{max:.0} (the slowest of {} tries{}: {})",
        tries.len(),
        if missing > 0 {
            format!(", {missing} not seen")
        } else {
            String::new()
        },
        each.join(" ")
    )
}

/// The path of the Port object of device `name` (port 1) in GetManagedObjects' `objects`.
fn port_of(objects: &gmo::Objects, name: &str) -> Result<OwnedObjectPath> {
    objects
        .iter()
        .find(|(_, ifaces)| {
            ifaces.get(PORT_IFACE).is_some_and(|p| {
                p.get("DeviceName")
                    .and_then(|v| <&str>::try_from(v).ok())
                    .is_some_and(|n| n == name)
            })
        })
        .map(|(p, _)| p.clone())
        .with_context(|| format!("no Port object of {name}"))
}

/// A client of the Port object at `path`'s properties.
async fn port_props(
    conn: &zbus::Connection,
    path: &OwnedObjectPath,
) -> Result<zbus::fdo::PropertiesProxy<'static>> {
    Ok(zbus::fdo::PropertiesProxy::builder(conn)
        .destination(NAME)?
        .path(path.clone().into_inner())?
        .build()
        .await?)
}

/// The port's `State` as a client reads it now (empty when it cannot be read).
async fn port_state(props: &zbus::fdo::PropertiesProxy<'_>) -> String {
    let Ok(iface) = zbus::names::InterfaceName::try_from(PORT_IFACE) else {
        return String::new();
    };
    props
        .get(iface, "State")
        .await
        .ok()
        .and_then(|v| String::try_from(v).ok())
        .unwrap_or_default()
}

/// A device added as the `devices`th (its name's number): `dummyN` and `rxeN`.
async fn device_added_ms(conn: &zbus::Connection, devices: usize) -> Result<f64> {
    use futures::StreamExt;
    let om = zbus::fdo::ObjectManagerProxy::builder(conn)
        .destination(NAME)?
        .path(ROOT)?
        .build()
        .await?;
    let mut added = om.receive_interfaces_added().await?;
    let (netdev, rdma) = (format!("dummy{devices}"), format!("rxe{devices}"));
    run(Command::new("ip").args(["link", "add", &netdev, "type", "dummy"]))?;
    run(Command::new("ip").args(["link", "set", &netdev, "up"]))?;
    let t = Instant::now();
    run(Command::new("rdma").args(["link", "add", &rdma, "type", "rxe", "netdev", &netdev]))?;
    let seen = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(sig) = added.next().await {
            let Ok(args) = sig.args() else { continue };
            let named = args
                .interfaces_and_properties()
                .get("org.rdmamanager.RdmaManager1.Device")
                .and_then(|p| p.get("Name"))
                .and_then(|v| <&str>::try_from(v).ok())
                .is_some_and(|n| n == rdma);
            if named {
                return Some(t.elapsed());
            }
        }
        None
    })
    .await;
    match seen {
        Ok(Some(d)) => Ok(d.as_secs_f64() * 1e3),
        Ok(None) => bail!("the signal stream ended"),
        Err(_) => bail!("no Device object for {rdma} within 30 s"),
    }
}

async fn daemon_phase(devices: usize, only: Only) -> Result<()> {
    std::fs::create_dir_all("/run/dbus")?;
    let bus = Command::new("dbus-daemon")
        .args(["--system", "--nofork", "--nopidfile", "--nosyslog"])
        .stdout(Stdio::null())
        .spawn()
        .context("dbus-daemon")?;
    let bus_pid = bus.id();
    if wait_until(Duration::from_secs(20), || async {
        std::path::Path::new(SOCK).exists()
    })
    .await
    .is_none()
    {
        bail!("no system bus after 20 s");
    }
    let conn = zbus::Connection::system().await?;
    // Answers the daemon's Peer.Ping (see dbus/limits.rs): the GetManagedObjects calls below
    // read their replies, which the daemon learns only from that answer.
    let _ = conn.object_server();
    let dbus = zbus::fdo::DBusProxy::new(&conn).await?;
    let t0 = Instant::now();
    let mut daemon = spawn_daemon()?;
    let pid = daemon.id();
    let name = zbus::names::BusName::try_from(NAME)?;
    let owned = wait_until(Duration::from_secs(600), || async {
        dbus.name_has_owner(name.clone()).await.unwrap_or(false)
    })
    .await;
    let Some(owned) = owned else {
        let _ = daemon.kill();
        bail!("rdma-managerd did not own {NAME} within 600 s");
    };
    figure(
        "daemon_start_to_name_owned_ms",
        format!("{:.0}", owned.as_secs_f64() * 1e3),
    );
    // The name is owned before the host is read (dbus/server.rs): the whole start-up ends
    // when the root's Startup turns false.
    if started(&conn).await.is_none() {
        let _ = daemon.kill();
        bail!("rdma-managerd's Startup still true after 600 s");
    }
    figure(
        "daemon_start_to_startup_over_ms",
        format!("{:.0}", t0.elapsed().as_secs_f64() * 1e3),
    );
    // What a client that connects now reads: every device listed.
    match model_complete(&conn, devices).await {
        Some(_) => figure(
            "model_complete_ms",
            format!("{:.0}", t0.elapsed().as_secs_f64() * 1e3),
        ),
        None => figure("model_complete_ms", "not within 600 s"),
    }
    if let Only::Idle(runs) = only {
        let result = idle_only(pid, t0, runs).await;
        let _ = daemon.kill();
        let _ = daemon.wait();
        return result;
    }
    if let Only::Exporter(scrapes) = only {
        let result = exporters::compare(pid, bus_pid, devices, scrapes).await;
        let _ = daemon.kill();
        let _ = daemon.wait();
        return result;
    }

    // One client process: the first GetManagedObjects, then the same call again and again,
    // as a client that keeps its connection sees it, with the CPU each call costs.
    let (timing, objects) =
        gmo::time_get_managed_objects(&conn, false, Some(bus_pid), Some(pid)).await?;
    for (name, value) in timing.figures() {
        figure(&name, value);
    }
    // The same through the daemon's direct socket (peer to peer, no bus), which must give
    // the same objects.
    let direct = gmo::connect_direct(rdma_manager_dbus::DIRECT_SOCKET_PATH).await?;
    let (timing, direct_objects) =
        gmo::time_get_managed_objects(&direct, true, None, Some(pid)).await?;
    if direct_objects != objects {
        bail!("the direct socket's objects differ from the bus's");
    }
    drop(direct);
    for (name, value) in timing.figures() {
        figure(&name, value);
    }
    time_rdma_tui();
    let port_path = port_of(&objects, &format!("rxe{}", devices / 2))?;

    if let Only::Memory(runs) = only {
        // Only the memory figure, several times in one boot (its spread is the point).
        let _ = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
        let _ = daemon.wait();
        return memory_only(&conn, &dbus, &name, &port_path, runs).await;
    }

    // 30 s after start: descriptors, RSS, limit.
    tokio::time::sleep(Duration::from_secs(30).saturating_sub(t0.elapsed())).await;
    figure(
        "fds_30s_after_start",
        open_fds(pid).map_or("?".into(), |n| n.to_string()),
    );
    figure(
        "nofile_limit_soft_hard",
        nofile(pid).unwrap_or_else(|| "?".into()),
    );
    figure(
        "rss_kib_30s",
        proc_status_kb(pid, "VmRSS:").map_or("?".into(), |n| n.to_string()),
    );
    // Idle CPU over the next 30 s.
    let hz = 100.0; // USER_HZ on Linux x86-64
    let c0 = cpu_ticks(pid);
    let w0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(30)).await;
    let (c1, wall) = (cpu_ticks(pid), w0.elapsed().as_secs_f64());
    if let (Some(a), Some(b)) = (c0, c1) {
        figure(
            "idle_cpu_percent_30s",
            format!("{:.1}", (b - a) as f64 / hz / wall * 100.0),
        );
    }
    figure(
        "fds_60s_after_start",
        open_fds(pid).map_or("?".into(), |n| n.to_string()),
    );
    figure(
        "rss_kib_60s",
        proc_status_kb(pid, "VmRSS:").map_or("?".into(), |n| n.to_string()),
    );
    // Which part is the daemon's own data and which the pages of its files (its executable,
    // libc, libibverbs and the providers it loads): on the lab's initramfs, a tmpfs, those
    // are counted as shared memory, not as file pages.
    figure("rss_anon_file_shmem_kib_60s", rss_kinds(pid));

    // A port going DOWN, on D-Bus, [`TRIES`] times on as many ports: from the command's
    // start (the kernel's part included) until a client reads DOWN. The first port is left
    // down (the health check below finds it), the others are set up again.
    figure(
        "port_state_before",
        port_state(&port_props(&conn, &port_path).await?).await,
    );
    let netdev = format!("dummy{}", devices / 2);

    // A RoCE GID that follows an IP address, on D-Bus: from `ip addr add` until the port's
    // Gids has the IPv4-mapped GID the kernel adds for it (rtnetlink's address event; no
    // RDMA event says so).
    let gids = rdma_manager_dbus::PortProxy::builder(&conn)
        .destination(NAME)?
        .path(port_path.as_ref())?
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?;
    let mapped = "0000:0000:0000:0000:0000:ffff:c000:0201";
    let t = Instant::now();
    run(Command::new("ip").args(["addr", "add", "192.0.2.1/24", "dev", &netdev]))?;
    let gid_added = wait_until(Duration::from_secs(30), || async {
        gids.gids()
            .await
            .is_ok_and(|g| g.iter().any(|g| g.gid == mapped))
    })
    .await
    .map(|_| t.elapsed());
    figure(
        "address_gid_on_dbus_ms",
        match gid_added {
            Some(d) => format!("{:.0}", d.as_secs_f64() * 1e3),
            None => "not within 30 s".to_string(),
        },
    );

    let mut downs = Vec::new();
    for k in 0..TRIES {
        let (path, netdev) = if k == 0 {
            (port_path.clone(), netdev.clone())
        } else {
            let n = devices / 2 + k;
            (port_of(&objects, &format!("rxe{n}"))?, format!("dummy{n}"))
        };
        let props = port_props(&conn, &path).await?;
        let t = Instant::now();
        run(Command::new("ip").args(["link", "set", &netdev, "down"]))?;
        let down = wait_until(Duration::from_secs(30), || async {
            port_state(&props).await == "DOWN"
        })
        .await
        .map(|_| t.elapsed());
        downs.push(down.map(|d| d.as_secs_f64() * 1e3));
        if k > 0 {
            // Up again, and ACTIVE on D-Bus before the next try: each try times one event
            // on a daemon that has nothing else to do, not the tail of the one before.
            run(Command::new("ip").args(["link", "set", &netdev, "up"]))?;
            wait_until(Duration::from_secs(30), || async {
                port_state(&props).await == "ACTIVE"
            })
            .await;
        }
    }
    figure(
        "port_down_on_dbus_ms",
        tries_text(&downs, "not within 30 s"),
    );

    // A device added, on D-Bus, [`TRIES`] times: from `rdma link add` until the client has
    // the Device object's InterfacesAdded.
    let mut added = Vec::new();
    for k in 0..TRIES {
        if k > 0 {
            // What the daemon does after publishing a device (a new libibverbs list for its
            // port events) is not part of the next try.
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        match device_added_ms(&conn, devices + k).await {
            Ok(ms) => added.push(Some(ms)),
            Err(e) => {
                eprintln!("device added, try {}: {e:#}", k + 1);
                added.push(None);
            }
        }
    }
    figure(
        "device_added_on_dbus_ms",
        tries_text(&added, "FAILED (see above)"),
    );

    // A node health check of every port (issue 34's target: faster than one ibstat of every
    // device). A figure, not a condition; the port set down above fails its verdicts.
    match health_check(&conn, devices).await {
        Ok((ms, verdicts, failed)) => {
            figure("health_check_ms", format!("{ms:.0}"));
            figure("health_check_verdicts", verdicts);
            figure("health_check_failed", failed);
        }
        Err(e) => figure("health_check_ms", format!("FAILED: {e:#}")),
    }

    // The declarative state already in force, applied again: GetState's document back to
    // ApplyState (median of 3), to set beside one ibstat of every device. Nothing may change.
    let in_force = state_in_force(&conn).await;
    match &in_force {
        Ok((ms, lines, changes)) => {
            figure("state_apply_in_force_ms", format!("{ms:.0}"));
            figure("state_document_lines", lines);
            figure("state_apply_in_force_changes", changes);
        }
        Err(e) => figure("state_apply_in_force_ms", format!("FAILED: {e:#}")),
    }

    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let _ = daemon.wait();
    let text = std::fs::read_to_string(DAEMON_LOG).unwrap_or_default();
    let emfile = text
        .lines()
        .filter(|l| l.contains("Too many open files"))
        .count();
    figure("log_lines_too_many_open_files", emfile);
    // What the daemon must do whatever the machine's speed; times are figures, not checks.
    let mut failed = Vec::new();
    if downs.iter().any(Option::is_none) {
        failed.push("a port that went down was not DOWN on D-Bus within 30 s");
    }
    if added.iter().any(Option::is_none) {
        failed.push("a device added did not appear on D-Bus within 30 s");
    }
    if gid_added.is_none() {
        failed.push("the GID of an address added was not on D-Bus within 30 s");
    }
    if emfile > 0 {
        failed.push("the daemon ran out of file descriptors");
    }
    if !matches!(in_force, Ok((_, _, 0))) {
        failed.push("applying the state in force failed or changed something");
    }
    for l in text
        .lines()
        .filter(|l| {
            l.contains("limit")
                || l.contains("enumerated")
                || l.contains("serving")
                || l.contains("phases")
                || l.contains("WARN")
        })
        .take(20)
    {
        println!("daemon-log: {l}");
    }

    // Started again on the same kernel (a restart, not a boot: rdma_cm's configfs
    // directories the first start made are still there), with ibstat once more beside it.
    let ibstat = median_ms(3, || run(&mut Command::new("ibstat")))?;
    figure("ibstat_all_again_ms", format!("{ibstat:.0}"));
    let t0 = Instant::now();
    let mut again = spawn_daemon()?;
    let owned = wait_until(Duration::from_secs(600), || async {
        dbus.name_has_owner(name.clone()).await.unwrap_or(false)
    })
    .await;
    figure(
        "daemon_restart_to_name_owned_ms",
        owned.map_or("not within 600 s".into(), |d| {
            format!("{:.0}", d.as_secs_f64() * 1e3)
        }),
    );
    let over = match owned {
        Some(_) => started(&conn).await.map(|_| t0.elapsed()),
        None => None,
    };
    figure(
        "daemon_restart_to_startup_over_ms",
        over.map_or("not within 600 s".into(), |d| {
            format!("{:.0}", d.as_secs_f64() * 1e3)
        }),
    );
    let complete = match over {
        Some(_) => model_complete(&conn, devices).await.map(|_| t0.elapsed()),
        None => None,
    };
    figure(
        "model_complete_after_restart_ms",
        complete.map_or("not within 600 s".into(), |d| {
            format!("{:.0}", d.as_secs_f64() * 1e3)
        }),
    );
    // rdma-exporter against node_exporter, on the restarted daemon: one boot serves both
    // runs (the devices and the guest's set-up are the same).
    let exporter = match (only, complete) {
        (
            Only::Everything {
                exporter_scrapes: Some(n),
            },
            Some(_),
        ) => Some(exporters::compare(again.id(), bus_pid, devices, n).await),
        (
            Only::Everything {
                exporter_scrapes: Some(_),
            },
            None,
        ) => Some(Err(anyhow::anyhow!(
            "the restarted daemon's model was not complete"
        ))),
        _ => None,
    };
    if let Some(Err(e)) = &exporter {
        figure("exporter", format!("FAILED: {e:#}"));
    }
    let _ = Command::new("kill")
        .args(["-TERM", &again.id().to_string()])
        .status();
    let _ = again.wait();
    for l in std::fs::read_to_string(DAEMON_LOG)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("phases"))
    {
        println!("daemon-log (restart): {l}");
    }
    if owned.is_none() {
        failed.push("the restarted daemon did not own its name within 600 s");
    }
    if matches!(exporter, Some(Err(_))) {
        failed.push("the exporter comparison failed");
    }

    if !full_history_figures(&conn, &dbus, &name, &port_path).await {
        failed.push("the full-history run failed (or mapped providers it does not need)");
    }
    if !failed.is_empty() {
        bail!("{}", failed.join("; "));
    }
    Ok(())
}

/// RSS with every port's history full, as figures: a tick of 10 ms fills both rings (an
/// hour of 10 s averages is 3600 ticks) in 36 s; ticks the poll cannot keep up with are gaps,
/// which hold their place in the ring, so the rings are full by tick number all the same.
/// False if the run failed.
async fn full_history_figures(
    conn: &zbus::Connection,
    dbus: &zbus::fdo::DBusProxy<'_>,
    name: &zbus::names::BusName<'_>,
    port_path: &OwnedObjectPath,
) -> bool {
    match full_history_rss(conn, dbus, name, port_path).await {
        Ok((f, stray_providers)) => {
            figure("rss_kib_full_history", f.rss);
            figure("rss_anon_file_shmem_kib_full_history", f.kinds);
            figure("rss_kib_full_history_by_mapping", f.by_mapping);
            figure("full_history_samples_with_data_fine_coarse", f.samples);
            if stray_providers {
                figure(
                    "verbs_providers_check",
                    "FAILED: the daemon mapped libibverbs providers its rxe devices do not need",
                );
            }
            !stray_providers
        }
        Err(e) => {
            figure("rss_kib_full_history", format!("FAILED: {e:#}"));
            false
        }
    }
}

/// `rdma_lab_scale_memory_runs=N`: the full-history measurement N times, nothing else.
async fn memory_only(
    conn: &zbus::Connection,
    dbus: &zbus::fdo::DBusProxy<'_>,
    name: &zbus::names::BusName<'_>,
    port_path: &OwnedObjectPath,
    runs: usize,
) -> Result<()> {
    let mut failed = 0;
    for run in 1..=runs {
        figure("memory_run", run);
        if !full_history_figures(conn, dbus, name, port_path).await {
            failed += 1;
        }
    }
    if failed > 0 {
        bail!("{failed} of {runs} full-history runs failed");
    }
    Ok(())
}

/// What a boot measures: everything, or one figure several times.
#[derive(Clone, Copy)]
enum Only {
    /// Every figure; with `rdma_lab_scale_with_exporter=N` also the exporter comparison
    /// (N scrapes) on the restarted daemon, in the same boot.
    Everything { exporter_scrapes: Option<usize> },
    /// `rdma_lab_scale_memory_runs=N`: RSS with a full history, N times.
    Memory(usize),
    /// `rdma_lab_scale_idle_runs=N`: idle CPU, N windows of 30 s.
    Idle(usize),
    /// `rdma_lab_scale_exporter_scrapes=N`: rdma-exporter against node_exporter, N scrapes
    /// of each.
    Exporter(usize),
}

/// `rdma_lab_scale_idle_runs=N`: from 30 s after the daemon's start, its CPU over N windows of
/// 30 s, each split into user and system time and by thread; then, when the image has
/// `perf` (`run-lab.sh --with-perf`), a profile of one more window: where the idle daemon's
/// time goes in the guest, which no benchmark on the build machine shows (its user code runs
/// under TCG too, some 20 times slower than natively).
async fn idle_only(pid: u32, t0: Instant, runs: usize) -> Result<()> {
    use rdma_manager_tests::procfs::{cpu_user_sys, thread_cpu};
    const HZ: f64 = 100.0; // USER_HZ on Linux x86-64
    tokio::time::sleep(Duration::from_secs(30).saturating_sub(t0.elapsed())).await;
    for run in 1..=runs {
        let (c0, th0, w0) = (cpu_user_sys(pid), thread_cpu(pid), Instant::now());
        tokio::time::sleep(Duration::from_secs(30)).await;
        let (c1, th1, wall) = (cpu_user_sys(pid), thread_cpu(pid), w0.elapsed());
        let pct = |ticks: u64| ticks as f64 / HZ / wall.as_secs_f64() * 100.0;
        let (Some((u0, s0)), Some((u1, s1))) = (c0, c1) else {
            bail!("rdma-managerd's /proc/{pid}/stat unreadable");
        };
        let (user, sys) = (u1.saturating_sub(u0), s1.saturating_sub(s0));
        figure("idle_run", run);
        figure("idle_cpu_percent_30s", format!("{:.1}", pct(user + sys)));
        figure(
            "idle_cpu_user_sys_percent_30s",
            format!("{:.1} / {:.1}", pct(user), pct(sys)),
        );
        // By thread name, summed (the blocking pool's threads share one).
        let mut by: std::collections::BTreeMap<String, u64> = Default::default();
        for (tid, name, t1) in &th1 {
            let t0 = th0.iter().find(|(t, _, _)| t == tid).map_or(0, |e| e.2);
            *by.entry(name.clone()).or_default() += t1.saturating_sub(t0);
        }
        let line: Vec<String> = by
            .iter()
            .filter(|(_, t)| **t > 0)
            .map(|(name, t)| format!("{name} {:.1}", pct(*t)))
            .collect();
        figure(
            "idle_cpu_percent_by_thread",
            format!("{} ({} threads)", line.join(", "), th1.len()),
        );
    }
    // Where the idle daemon's time goes in the guest, over 30 s more.
    perf_profile_during(&pid.to_string(), "/tmp/perf-idle.data", async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(())
    })
    .await
}

/// `perf record` at 1 kHz of the processes `pids` (comma-separated) while `during` runs, and
/// the symbols they spent their samples in, printed as `perf self: LINE` and `perf
/// children: LINE`. Only where the image has `perf` (`run-lab.sh --with-perf`): else
/// `during` runs alone.
pub(crate) async fn perf_profile_during(
    pids: &str,
    data: &str,
    during: impl std::future::Future<Output = Result<()>>,
) -> Result<()> {
    if !std::path::Path::new("/usr/bin/perf").exists() {
        return during.await;
    }
    let _ = std::fs::write("/proc/sys/kernel/kptr_restrict", "0");
    let _ = std::fs::write("/proc/sys/kernel/perf_event_paranoid", "-1");
    let mut record = Command::new("perf")
        .args(["record", "-q", "-F", "1000", "-g", "-o", data, "-p", pids])
        .stdout(Stdio::null())
        .spawn()
        .context("perf record")?;
    // perf's start: its first samples, not its setup, should meet `during`.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let ran = during.await;
    // SIGINT: perf writes its data and exits.
    // SAFETY: kill(2) on a child this function started and has not reaped.
    unsafe { libc::kill(record.id() as i32, libc::SIGINT) };
    let status = record.wait().context("perf record")?;
    ran?;
    // perf stops on the SIGINT by raising it again: that is its normal end.
    let interrupted = std::os::unix::process::ExitStatusExt::signal(&status) == Some(libc::SIGINT);
    if !status.success() && !interrupted && status.code() != Some(130) {
        bail!("perf record: {status}");
    }
    for (what, args) in [
        (
            "self",
            &["--no-children", "--sort", "comm,dso,sym", "-g", "none"][..],
        ),
        (
            "children",
            &["--children", "--sort", "comm,sym", "-g", "none"][..],
        ),
    ] {
        let out = Command::new("perf")
            .args(["report", "-i", data, "--stdio", "--percent-limit", "0.7"])
            .args(args)
            .output()
            .context("perf report")?;
        for l in String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains('%') || l.contains("Samples"))
            .take(90)
        {
            println!("perf {what}: {l}");
        }
    }
    let _ = std::io::stdout().flush();
    Ok(())
}

/// A number from the environment (`NAME` upper-cased) or else the guest's kernel command line
/// (`name=N`, as `run-lab.sh --append` passes it).
fn setting(name: &str) -> Option<usize> {
    let on_cmdline = std::fs::read_to_string("/proc/cmdline").ok().and_then(|c| {
        c.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")).map(str::to_string))
    });
    std::env::var(name.to_uppercase())
        .ok()
        .or(on_cmdline)
        .and_then(|v| v.parse().ok())
}

fn main() -> Result<()> {
    // `run-lab.sh --append rdma_lab_scale_devices=N` (or RDMA_LAB_SCALE_DEVICES).
    let devices = setting("rdma_lab_scale_devices").unwrap_or(256);
    // `rdma_lab_scale_memory_runs=N`: the memory figure N times, and nothing else.
    // `rdma_lab_scale_idle_runs=N`: the idle CPU figure N times (and a profile with perf).
    // `rdma_lab_scale_exporter_scrapes=N`: rdma-exporter against node_exporter, and nothing
    // else. `rdma_lab_scale_with_exporter=N`: everything, then that comparison as well.
    let only = match (
        setting("rdma_lab_scale_memory_runs"),
        setting("rdma_lab_scale_idle_runs"),
        setting("rdma_lab_scale_exporter_scrapes"),
    ) {
        (Some(n), _, _) => Only::Memory(n),
        (None, Some(n), _) => Only::Idle(n),
        (None, None, Some(n)) => Only::Exporter(n.max(1)),
        (None, None, None) => Only::Everything {
            exporter_scrapes: setting("rdma_lab_scale_with_exporter").map(|n| n.max(1)),
        },
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    make_devices(devices)?;
    if !matches!(only, Only::Everything { .. }) {
        return rt.block_on(daemon_phase(devices, only));
    }
    let ibstat = median_ms(3, || run(&mut Command::new("ibstat")))?;
    figure("ibstat_all_ms", format!("{ibstat:.0}"));
    // A figure, not a condition: at 1024 devices iproute2's rdma runs out of descriptors
    // at the default limit ("Failed to open NETLINK_RDMA socket").
    match median_ms(3, || run(Command::new("rdma").args(["-j", "dev", "show"]))) {
        Ok(rdma) => figure("rdma_j_dev_show_ms", format!("{rdma:.0}")),
        Err(e) => figure("rdma_j_dev_show_ms", format!("FAILED: {e:#}")),
    }
    if let Err(e) = compare_gids(&rt) {
        figure("gids_verbs_equal_sysfs", format!("FAILED: {e:#}"));
        return Err(e);
    }
    if let Err(e) = profile(&rt) {
        figure("profile", format!("FAILED: {e:#}"));
    }
    let daemon = rt.block_on(daemon_phase(devices, only));
    if let Err(e) = probe_port_event_forwarding(&rt, devices) {
        figure("port_events_forwarded", format!("FAILED: {e:#}"));
        return Err(e);
    }
    if let Err(e) = probe_async_events(devices) {
        figure("probe", format!("FAILED: {e:#}"));
    }
    daemon
}

#[cfg(test)]
mod tests {
    use super::tries_text;

    #[test]
    fn tries_print_the_slowest_then_each_and_say_what_was_not_seen() {
        assert_eq!(
            tries_text(&[Some(233.4), Some(456.0), Some(447.2)], "x"),
            "456 (the slowest of 3 tries: 233 456 447)"
        );
        assert_eq!(
            tries_text(&[Some(90.0), None], "not within 30 s"),
            "90 (the slowest of 2 tries, 1 not seen: 90 not within 30 s)"
        );
    }
}
