//! Every file the daemon reads replaced by something that is not a regular file: a FIFO
//! (whose read would block forever), a directory, a symlink to a device, a dangling symlink.
//! Start-up completes each time (`Startup` false, GetManagedObjects answers), and each of its
//! own files names the file and what it is in `ConfigErrors` (see "Files that are not
//! regular" in docs/RELIABILITY.md).

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use rdma_manager_dbus::proxies::ManagerProxy;
use rdma_manager_dbus::BUS_NAME;
use rdma_manager_tests::service::{serve_sim, session_bus_or_skip};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::{fixtures, SimHost};
use zbus::fdo::ObjectManagerProxy;

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

/// The files whose errors `ConfigErrors` carries.
const REPORTED: [&str; 4] = [
    "/etc/rdma-manager/soft-links.toml",
    "/etc/rdma-manager/ipoib.toml",
    "/etc/rdma-manager/roce.toml",
    "/etc/udev/rules.d/70-persistent-ipoib.rules",
];

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

async fn start_up_completes_with(kind: Kind) -> Result<()> {
    let Some(bus) = session_bus_or_skip() else {
        return Ok(());
    };
    let sim = SimHost::new(fixtures::demo_host())?;
    for f in FILES {
        replace(&sim, f, kind)?;
    }
    let _served = tokio::time::timeout(
        Duration::from_secs(60),
        serve_sim(&bus, &sim, EngineConfig::default()),
    )
    .await
    .with_context(|| format!("{kind:?}: start-up did not complete within 60 s"))??;
    let client = bus.connect().await?;
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
    for f in REPORTED {
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
    println!("{kind:?}: start-up completed; ConfigErrors {errors:?}");
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
