//! The service's polkit Authorizer end to end: a real dbus-daemon, the real polkitd, and busctl
//! as the client, run as root or as the unprivileged test user. A tiny service owns
//! org.rdmamanager.RdmaManager1 and checks `manage-links` in its one method, `Poke`.
//!
//! Skipped (with the reason printed) only when not root or when a daemon or busctl is missing.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use rdma_manager_dbus::{Action, Error, BUS_NAME, ERROR_PREFIX, ROOT_PATH};
use rdma_manager_tests::bus::{
    skip_reason, BusConfig, Credentials, PolkitConfig, PrivateBus, PrivatePolkit, UserDb,
};
use rdma_managerd::dbus::polkit::Authorizer;
use zbus::message::Header;

macro_rules! require_harness {
    () => {
        if let Some(reason) = skip_reason() {
            eprintln!("skipping: {reason}");
            return Ok(());
        }
    };
}

struct Poker {
    auth: Authorizer,
}

#[zbus::interface(name = "org.rdmamanager.RdmaManager1")]
impl Poker {
    async fn poke(&self, #[zbus(header)] header: Header<'_>) -> Result<(), Error> {
        self.auth.check(&header, Action::ManageLinks).await
    }
}

/// The system bus with the project's policy, plus a rule that lets anyone call `Poke` whatever
/// that policy lists (it comes last, so it wins): these tests are about polkit, not the bus
/// policy.
fn system_bus(users: &UserDb) -> Result<PrivateBus> {
    BusConfig::system()
        .with_rdma_manager_policy()
        .policy(
            r#"<policy context="default">
    <allow send_destination="org.rdmamanager.RdmaManager1"
           send_interface="org.rdmamanager.RdmaManager1" send_member="Poke"/>
  </policy>
"#,
        )
        .users(users)
        .start()
}

/// Serves `Poke` on the bus as root under the service's well-known name.
async fn serve(bus: &PrivateBus) -> Result<zbus::Connection> {
    let conn = bus.connect().await?;
    conn.object_server()
        .at(
            ROOT_PATH,
            Poker {
                auth: Authorizer::new(&conn),
            },
        )
        .await?;
    conn.request_name(BUS_NAME)
        .await
        .context("owning the service name")?;
    Ok(conn)
}

/// What busctl got back from `Poke`.
#[derive(Debug, PartialEq)]
enum Reply {
    Ok,
    /// The D-Bus error name without the service's prefix, and busctl's message.
    Err(String, String),
}

impl Reply {
    fn error_name(&self) -> Option<&str> {
        match self {
            Reply::Ok => None,
            Reply::Err(name, _) => Some(name),
        }
    }
}

/// `busctl call ... Poke` as `who` (root when None). busctl prints only the error's message,
/// so its sd-bus debug log is asked for the error name.
async fn poke(bus: &PrivateBus, who: Option<&Credentials>, interactive: bool) -> Result<Reply> {
    let mut cmd: Command = bus.busctl();
    cmd.env("SYSTEMD_LOG_LEVEL", "debug")
        .arg(format!(
            "--allow-interactive-authorization={}",
            if interactive { "yes" } else { "no" }
        ))
        .args([
            "--timeout=10",
            "call",
            BUS_NAME,
            ROOT_PATH,
            BUS_NAME,
            "Poke",
        ]);
    if let Some(who) = who {
        who.apply(&mut cmd);
    }
    let out = tokio::process::Command::from(cmd)
        .output()
        .await
        .context("running busctl")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        return Ok(Reply::Ok);
    }
    let name = stderr
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("error-name="))
        .find(|n| *n != "n/a")
        .with_context(|| format!("no error name in busctl's output:\n{stderr}"))?;
    let message = stderr
        .lines()
        .find_map(|l| l.strip_prefix("Call failed: "))
        .unwrap_or_default();
    let short = name
        .strip_prefix(ERROR_PREFIX)
        .and_then(|n| n.strip_prefix('.'))
        .unwrap_or(name);
    Ok(Reply::Err(short.to_string(), message.to_string()))
}

fn assert_refused(reply: &Reply, name: &str, words: &[&str], polkit_log: &str) {
    let Reply::Err(got, message) = reply else {
        panic!("expected {name}, the call succeeded; polkitd log:\n{polkit_log}");
    };
    assert_eq!(got, name, "{message}\npolkitd log:\n{polkit_log}");
    for w in words {
        assert!(message.contains(w), "{w:?} not in {message:?}");
    }
}

const LINKS: &str = "org.rdmamanager.rdmamanager1.manage-links";

#[tokio::test(flavor = "multi_thread")]
async fn root_is_authorized_by_polkitd_itself() -> Result<()> {
    require_harness!();
    let users = UserDb::new(false)?;
    let bus = system_bus(&users)?;
    // No rules at all: polkitd authorizes uid 0 by itself.
    let polkit = PrivatePolkit::start(&bus, &users, &PolkitConfig::rdma_manager()).await?;
    let _service = serve(&bus).await?;
    for interactive in [false, true] {
        let reply = poke(&bus, None, interactive).await?;
        assert_eq!(reply, Reply::Ok, "polkitd log:\n{}", polkit.log());
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn unprivileged_user_is_refused_and_told_how_to_get_it() -> Result<()> {
    require_harness!();
    let users = UserDb::new(false)?;
    let bus = system_bus(&users)?;
    // The policy with known defaults (allow_any=auth_admin), and the group rule that does
    // not apply to a non-member.
    let config = PolkitConfig::new()
        .generated_rdma_manager_policy()
        .rdma_group_rule();
    let polkit = PrivatePolkit::start(&bus, &users, &config).await?;
    let _service = serve(&bus).await?;
    let user = Credentials::test_user(false);

    // polkitd answers "challenge" (auth_admin) without interaction ...
    let reply = poke(&bus, Some(&user), false).await?;
    assert_refused(
        &reply,
        "InteractiveAuthorizationRequired",
        &[LINKS, "--allow-interactive-authorization=yes", "group rdma"],
        &polkit.log(),
    );
    // ... and, with interaction allowed, still "challenge" because no authentication agent
    // serves the caller (there is no session at all): a refusal.
    let reply = poke(&bus, Some(&user), true).await?;
    assert_refused(
        &reply,
        "NotAuthorized",
        &[LINKS, "authentication agent", "group rdma"],
        &polkit.log(),
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn rdma_group_member_is_authorized_by_the_example_rule() -> Result<()> {
    require_harness!();
    let users = UserDb::new(true)?;
    let bus = system_bus(&users)?;
    let config = PolkitConfig::rdma_manager().rdma_group_rule();
    let polkit = PrivatePolkit::start(&bus, &users, &config).await?;
    let _service = serve(&bus).await?;
    let member = Credentials::test_user(true);
    for interactive in [false, true] {
        let reply = poke(&bus, Some(&member), interactive).await?;
        assert_eq!(reply, Reply::Ok, "polkitd log:\n{}", polkit.log());
    }
    // Out of the group (polkitd reads membership at every check), the same user is refused:
    // it was the rule that granted it.
    users.set_in_rdma_group(false)?;
    let reply = poke(&bus, Some(&Credentials::test_user(false)), true).await?;
    assert_eq!(
        reply.error_name(),
        Some("NotAuthorized"),
        "{reply:?}\npolkitd log:\n{}",
        polkit.log()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn without_polkit_everything_is_refused() -> Result<()> {
    require_harness!();
    let users = UserDb::new(true)?;
    let bus = system_bus(&users)?;
    let _service = serve(&bus).await?;
    let member = Credentials::test_user(true);
    for who in [None, Some(&member)] {
        for interactive in [false, true] {
            let reply = poke(&bus, who, interactive).await?;
            assert_refused(&reply, "NotAuthorized", &[LINKS, "not running"], "");
        }
    }

    // polkit going away later fails closed as well.
    let config = PolkitConfig::rdma_manager().rdma_group_rule();
    let polkit = PrivatePolkit::start(&bus, &users, &config).await?;
    assert_eq!(poke(&bus, Some(&member), false).await?, Reply::Ok);
    drop(polkit);
    let reply = poke(&bus, Some(&member), false).await?;
    assert_refused(&reply, "NotAuthorized", &["not running"], "");
    let reply = poke(&bus, None, false).await?;
    assert_refused(&reply, "NotAuthorized", &["not running"], "");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn private_session_bus_lets_anyone_own_names() -> Result<()> {
    require_harness!();
    let bus = PrivateBus::session()?;
    let conn = bus.connect().await?;
    conn.request_name("org.rdmamanager.Test.Anything").await?;
    bus.wait_for_name("org.rdmamanager.Test.Anything", Duration::from_secs(1))
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn system_bus_denies_owning_other_names() -> Result<()> {
    require_harness!();
    let users = UserDb::new(false)?;
    let bus = BusConfig::system().users(&users).start()?;
    let conn = bus.connect().await?;
    let refused = conn.request_name("org.rdmamanager.Test.Anything").await;
    assert!(refused.is_err(), "{refused:?}\n{}", bus.log());
    Ok(())
}
