//! Every file the daemon reads replaced by something that is not a regular file: a FIFO
//! (whose read would block forever), a directory, a symlink to a device, a dangling symlink.
//! Start-up completes each time (`Startup` false, GetManagedObjects answers), and each file
//! names itself and what it is in `ConfigErrors`: the daemon's own files and the host setup
//! files alike. Host setup files that cannot be read (an errno) or hold lines their readers
//! skip are named there too (see "Files that are not regular" in docs/RELIABILITY.md).

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use rdma_manager_dbus::proxies::ManagerProxy;
use rdma_manager_dbus::{BUS_NAME, HOST_PATH};
use rdma_manager_tests::bus::PrivateBus;
use rdma_manager_tests::service::{serve_sim, session_bus_or_skip, ServedSim};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::hostconf::memlock::{DAEMON_FILE, LIMITS_CONF};
use rdma_managerd::kernel::sim::{fixtures, SimHost};
use rdma_managerd::model::Errno;
use zbus::fdo::ObjectManagerProxy;
use zbus::Connection;

/// Every file the daemon reads, by the host's path.
const FILES: [&str; 10] = [
    "/etc/rdma-manager/soft-links.toml",
    "/etc/rdma-manager/ipoib.toml",
    "/etc/rdma-manager/roce.toml",
    "/etc/udev/rules.d/70-persistent-ipoib.rules",
    "/etc/udev/rules.d/60-rdma-persistent-naming.rules",
    "/etc/security/limits.conf",
    "/etc/security/limits.d/zz-rdma-manager.conf",
    "/etc/nfs.conf",
    "/usr/etc/nfs.conf",
    "/etc/rdma/modules/rdma.conf",
];

const HOST_INTERFACE: &str = "org.rdmamanager.RdmaManager1.Host";

#[derive(Clone, Copy, Debug)]
enum Kind {
    Fifo,
    Directory,
    Device,
    Dangling,
}

fn replace(sim: &SimHost, path: &str, kind: Kind) -> Result<()> {
    let p = sim.root().join(path.trim_start_matches('/'));
    std::fs::create_dir_all(p.parent().context("a directory")?)?;
    match std::fs::symlink_metadata(&p) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(&p)?,
        Ok(_) => std::fs::remove_file(&p)?,
        Err(_) => {}
    }
    match kind {
        Kind::Fifo => {
            let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes())?;
            // SAFETY: mkfifo on a NUL-terminated path.
            anyhow::ensure!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) } == 0, "mkfifo");
        }
        Kind::Directory => std::fs::create_dir(&p)?,
        Kind::Device => std::os::unix::fs::symlink("/dev/zero", &p)?,
        Kind::Dangling => std::os::unix::fs::symlink(Path::new("/nonexistent/file"), &p)?,
    }
    Ok(())
}

/// The daemon serving `sim` and a client of it, once start-up completed.
async fn served(bus: &PrivateBus, sim: &SimHost, what: &str) -> Result<(ServedSim, Connection)> {
    let served = tokio::time::timeout(
        Duration::from_secs(60),
        serve_sim(bus, sim, EngineConfig::default()),
    )
    .await
    .with_context(|| format!("{what}: start-up did not complete within 60 s"))??;
    Ok((served, bus.connect().await?))
}

async fn memlock_notes(client: &Connection) -> Result<Vec<String>> {
    let host = zbus::Proxy::new(client, BUS_NAME, HOST_PATH, HOST_INTERFACE).await?;
    Ok(host.get_property("MemlockNotes").await?)
}

async fn start_up_completes_with(kind: Kind) -> Result<()> {
    let Some(bus) = session_bus_or_skip() else {
        return Ok(());
    };
    let sim = SimHost::new(fixtures::demo_host())?;
    fixtures::install_host_setup(&sim)?;
    for f in FILES {
        replace(&sim, f, kind)?;
    }
    let (_served, client) = served(&bus, &sim, &format!("{kind:?}")).await?;
    let om = ObjectManagerProxy::builder(&client)
        .destination(BUS_NAME)?
        .path(rdma_manager_dbus::ROOT_PATH)?
        .build()
        .await?;
    let objects = tokio::time::timeout(Duration::from_secs(30), om.get_managed_objects())
        .await
        .with_context(|| format!("{kind:?}: GetManagedObjects did not answer"))??;
    assert!(!objects.is_empty());
    let manager = ManagerProxy::new(&client).await?;
    assert!(
        !manager.startup().await?,
        "{kind:?}: Startup after start-up"
    );
    let errors = manager.config_errors().await?;
    let what = match kind {
        Kind::Fifo => Some("is a FIFO, not a regular file"),
        Kind::Directory => Some("is a directory, not a regular file"),
        Kind::Device => Some("is a symlink to a character device (/dev/zero), not a regular file"),
        // As pam_limits, udev and nfs-utils read it: absent.
        Kind::Dangling => None,
    };
    for f in FILES {
        match what {
            Some(what) => {
                let e = errors.get(f).with_context(|| {
                    format!("{kind:?}: no ConfigErrors entry for {f}: {errors:?}")
                })?;
                assert!(e.contains(f) && e.contains(what), "{kind:?} {f}: {e}");
            }
            None => assert!(!errors.contains_key(f), "{kind:?} {f}: {errors:?}"),
        }
    }
    if what.is_some() {
        // limits.conf is there, not missing: what pam_limits reads cannot be told from here.
        let notes = memlock_notes(&client).await?;
        assert!(
            !notes.iter().any(|n| n.contains("limits.conf is missing")),
            "{kind:?}: {notes:?}"
        );
    }
    println!("{kind:?}: start-up completed; ConfigErrors {errors:?}");
    Ok(())
}

/// A limits.conf the daemon may not read (what a file of mode 000 is to a daemon without
/// CAP_DAC_OVERRIDE; the tests run as root, for whom mode 000 reads, so the simulated host
/// fails the read with EACCES instead): `ConfigErrors` names it with the errno, and the
/// memlock notes do not call it missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_limits_conf_is_named_with_its_errno() -> Result<()> {
    let Some(bus) = session_bus_or_skip() else {
        return Ok(());
    };
    let sim = SimHost::new(fixtures::demo_host())?;
    fixtures::install_host_setup(&sim)?;
    sim.fail_reads_of_file(Path::new(LIMITS_CONF), Some(Errno::EACCES));
    let (_served, client) = served(&bus, &sim, "EACCES").await?;
    let errors = ManagerProxy::new(&client).await?.config_errors().await?;
    let e = errors
        .get(LIMITS_CONF)
        .with_context(|| format!("no ConfigErrors entry for {LIMITS_CONF}: {errors:?}"))?;
    assert!(
        e.contains(LIMITS_CONF) && e.contains("EACCES (Permission denied"),
        "{e}"
    );
    let notes = memlock_notes(&client).await?;
    assert!(
        !notes.iter().any(|n| n.contains("is missing"))
            && notes.iter().any(|n| n.contains("could not be read")),
        "{notes:?}"
    );
    Ok(())
}

/// Garbage in the daemon's own limits file: pam_limits skips such lines, so the limits it was
/// written for are not set; `ConfigErrors` names the file and each skipped line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_in_the_daemons_limits_file_is_named_by_line() -> Result<()> {
    let Some(bus) = session_bus_or_skip() else {
        return Ok(());
    };
    let sim = SimHost::new(fixtures::demo_host())?;
    fixtures::install_host_setup(&sim)?;
    let p = sim.root().join(DAEMON_FILE.trim_start_matches('/'));
    std::fs::create_dir_all(p.parent().context("a directory")?)?;
    std::fs::write(
        &p,
        "# written by hand\n@rdma soft memlock unlimited\ngarbage\n@rdma hard memlock lots\n",
    )?;
    let (_served, client) = served(&bus, &sim, "garbage").await?;
    let errors = ManagerProxy::new(&client).await?.config_errors().await?;
    let e = errors
        .get(DAEMON_FILE)
        .with_context(|| format!("no ConfigErrors entry for {DAEMON_FILE}: {errors:?}"))?;
    assert!(
        e.contains(DAEMON_FILE)
            && e.contains("line 3 (\"garbage\")")
            && e.contains("line 4 (\"@rdma hard memlock lots\")")
            && !e.contains("line 2"),
        "{e}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_completes_when_every_file_is_a_fifo() -> Result<()> {
    start_up_completes_with(Kind::Fifo).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_completes_when_every_file_is_a_directory() -> Result<()> {
    start_up_completes_with(Kind::Directory).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_completes_when_every_file_is_a_link_to_a_device() -> Result<()> {
    start_up_completes_with(Kind::Device).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_completes_when_every_file_is_a_dangling_link() -> Result<()> {
    start_up_completes_with(Kind::Dangling).await
}
