//! Sizes of what the daemon sends: a huge line in a configuration file or a huge argument
//! from a caller must give bounded properties and errors (see "Sizes" in
//! docs/RELIABILITY.md), and never a message over the bus's limit, for which the bus would
//! drop the daemon's connection and its name.

use anyhow::{Context, Result};
use rdma_manager_dbus::text::MESSAGE_MAX_BYTES;
use rdma_manager_dbus::{ManagerProxy, BUS_NAME, ROOT_PATH};
use rdma_manager_tests::bus::{Credentials, PolkitConfig, Reply};
use rdma_manager_tests::service::SystemSetup;
use rdma_managerd::kernel::sim::{fixtures, SimHost};

const SOFT_LINKS: &str = "/etc/rdma-manager/soft-links.toml";
const IPOIB: &str = "/etc/rdma-manager/ipoib.toml";

fn write_etc(sim: &SimHost, path: &str, bytes: &[u8]) -> Result<()> {
    let p = sim.root().join(path.trim_start_matches('/'));
    std::fs::create_dir_all(p.parent().context("a directory")?)?;
    std::fs::write(&p, bytes)?;
    Ok(())
}

/// A TOML file whose second line is a string of `len` bytes that never ends.
fn broken_toml(len: usize) -> Vec<u8> {
    let mut b = b"[[link]]\nname = \"".to_vec();
    b.resize(b.len() + len, b'x');
    b.extend_from_slice(b"\ntype = \"rxe\"\n");
    b
}

async fn name_has_owner(t: &SystemSetup) -> Result<bool> {
    let conn = t.bus.connect().await?;
    let dbus = zbus::fdo::DBusProxy::new(&conn).await?;
    Ok(dbus
        .name_has_owner(zbus::names::BusName::try_from(BUS_NAME)?)
        .await?)
}

#[tokio::test(flavor = "multi_thread")]
async fn huge_config_lines_give_bounded_config_errors_and_the_daemon_keeps_its_name() -> Result<()>
{
    require_harness!();
    let sim = SimHost::new(fixtures::demo_host())?;
    // 17 MiB: over the file limit, and quoted twice it was over the bus's 32 MiB.
    let huge = broken_toml(17 << 20);
    write_etc(&sim, SOFT_LINKS, &huge)?;
    // 900 KiB: under the file limit, read and parsed; its error quotes the line.
    write_etc(&sim, IPOIB, &broken_toml(900 << 10))?;
    let t = SystemSetup::with_host(false, PolkitConfig::rdma_manager(), sim).await?;

    // Any user may read the property.
    let stranger = Credentials::test_user(false);
    let reply = t
        .call(
            Some(&stranger),
            ROOT_PATH,
            "org.freedesktop.DBus.Properties",
            "Get",
            &["ss", BUS_NAME, "ConfigErrors"],
        )
        .await?;
    let Reply::Ok(out) = reply else {
        panic!("Get ConfigErrors failed: {reply:?}");
    };
    assert!(out.len() < 3 * MESSAGE_MAX_BYTES, "{} bytes", out.len());
    assert!(name_has_owner(&t).await?, "the daemon lost its name");

    let conn = t.bus.connect().await?;
    let mgr = ManagerProxy::new(&conn).await?;
    let errors = mgr.config_errors().await?;
    let soft = errors.get(SOFT_LINKS).context("soft-links.toml reported")?;
    assert!(
        soft.contains(&format!("{} bytes", huge.len())) && soft.contains("not read"),
        "{soft}"
    );
    let ipoib = errors.get(IPOIB).context("ipoib.toml reported")?;
    assert!(ipoib.len() <= MESSAGE_MAX_BYTES, "{} bytes", ipoib.len());
    assert!(
        ipoib.contains("line 2"),
        "the position is kept: {ipoib:.300}"
    );
    for v in errors.values() {
        assert!(v.len() <= MESSAGE_MAX_BYTES, "{} bytes", v.len());
    }

    // A refusal in the broken area quotes the file's error: bounded too.
    let e = mgr
        .add_soft_link("rxe1", "rxe", "eth1")
        .await
        .expect_err("refused while the file is broken");
    let zbus::Error::MethodError(name, Some(msg), _) = e else {
        panic!("not a method error: {e:?}");
    };
    assert_eq!(name.as_str(), "org.rdmamanager.RdmaManager1.Error.Failed");
    assert!(msg.len() <= MESSAGE_MAX_BYTES, "{} bytes", msg.len());
    assert!(name_has_owner(&t).await?, "the daemon lost its name");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_huge_argument_is_refused_with_a_bounded_invalid_argument() -> Result<()> {
    require_harness!();
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    // Root: authorized, so the argument reaches validation, whose refusal quotes it.
    let conn = t.bus.connect().await?;
    let mgr = ManagerProxy::new(&conn).await?;
    let huge = "n".repeat(20 << 20);
    for (name, kind, netdev) in [
        (huge.as_str(), "rxe", "eth1"),
        ("rxe1", huge.as_str(), "eth1"),
        ("rxe1", "rxe", huge.as_str()),
    ] {
        let e = mgr
            .add_soft_link(name, kind, netdev)
            .await
            .expect_err("refused");
        let zbus::Error::MethodError(err, Some(msg), _) = e else {
            panic!("not a method error: {e:?}");
        };
        assert_eq!(
            err.as_str(),
            "org.rdmamanager.RdmaManager1.Error.InvalidArgument"
        );
        assert!(msg.len() <= MESSAGE_MAX_BYTES, "{} bytes", msg.len());
        assert!(msg.contains("20971520 bytes"), "{msg}");
    }
    assert!(t.device_names().iter().all(|d| d != "rxe1"));
    let e = mgr
        .set_rdma_naming_policy(&huge, false)
        .await
        .expect_err("refused");
    let zbus::Error::MethodError(err, Some(msg), _) = e else {
        panic!("not a method error: {e:?}");
    };
    assert_eq!(
        err.as_str(),
        "org.rdmamanager.RdmaManager1.Error.InvalidArgument"
    );
    assert!(msg.len() <= MESSAGE_MAX_BYTES, "{} bytes", msg.len());
    assert!(name_has_owner(&t).await?, "the daemon lost its name");
    Ok(())
}
