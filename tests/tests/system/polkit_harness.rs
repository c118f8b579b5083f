//! The service's polkit Authorizer end to end: a real dbus-daemon, the real polkitd, and busctl
//! as the client, run as root or as the unprivileged test user. A tiny service owns
//! org.rdmamanager.RdmaManager1 and checks `manage-links` in its one method, `Poke`.
//!
//! Skipped (with the reason printed) only when not root or when a daemon or busctl is missing.

use std::time::Duration;

use anyhow::{Context, Result};
use rdma_manager_dbus::{Action, Error, BUS_NAME, ROOT_PATH};
use rdma_manager_tests::bus::{
    busctl_call, skip_reason, BusConfig, Credentials, PolkitConfig, PrivateBus, PrivatePolkit,
    Reply, UserDb,
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

/// `busctl call ... Poke` as `who` (root when None).
async fn poke(bus: &PrivateBus, who: Option<&Credentials>, interactive: bool) -> Result<Reply> {
    busctl_call(bus, who, interactive, ROOT_PATH, BUS_NAME, "Poke", &[]).await
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

/// A system bus seeing `users`, the Poke service on it, and polkitd with `polkit` (none when
/// None).
struct Setup {
    users: UserDb,
    bus: PrivateBus,
    polkit: Option<PrivatePolkit>,
    _service: zbus::Connection,
}

impl Setup {
    async fn new(in_rdma_group: bool, polkit: Option<PolkitConfig>) -> Result<Self> {
        let users = UserDb::new(in_rdma_group)?;
        let bus = system_bus(&users)?;
        let polkit = match polkit {
            Some(config) => Some(PrivatePolkit::start(&bus, &users, &config).await?),
            None => None,
        };
        let _service = serve(&bus).await?;
        Ok(Self {
            users,
            bus,
            polkit,
            _service,
        })
    }

    async fn poke(&self, who: Option<&Credentials>, interactive: bool) -> Result<Reply> {
        poke(&self.bus, who, interactive).await
    }

    fn polkit_log(&self) -> String {
        self.polkit.as_ref().map(|p| p.log()).unwrap_or_default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn root_is_authorized_by_polkitd_itself() -> Result<()> {
    require_harness!();
    // No rules at all: polkitd authorizes uid 0 by itself.
    let t = Setup::new(false, Some(PolkitConfig::rdma_manager())).await?;
    for interactive in [false, true] {
        let reply = t.poke(None, interactive).await?;
        assert!(
            matches!(reply, Reply::Ok(_)),
            "polkitd log:\n{}",
            t.polkit_log()
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn unprivileged_user_is_refused_and_told_how_to_get_it() -> Result<()> {
    require_harness!();
    // The policy with known defaults (allow_any=auth_admin), and the group rule that does
    // not apply to a non-member.
    let config = PolkitConfig::new()
        .generated_rdma_manager_policy()
        .rdma_group_rule();
    let t = Setup::new(false, Some(config)).await?;
    let user = Credentials::test_user(false);

    // polkitd answers "challenge" (auth_admin) without interaction ...
    let reply = t.poke(Some(&user), false).await?;
    let words = [LINKS, "--allow-interactive-authorization=yes", "group rdma"];
    let kind = "InteractiveAuthorizationRequired";
    assert_refused(&reply, kind, &words, &t.polkit_log());
    // ... and, with interaction allowed, still "challenge" because no authentication agent
    // serves the caller (there is no session at all): a refusal.
    let reply = t.poke(Some(&user), true).await?;
    let words = [LINKS, "authentication agent", "group rdma"];
    assert_refused(&reply, "NotAuthorized", &words, &t.polkit_log());
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn rdma_group_member_is_authorized_by_a_group_rule() -> Result<()> {
    require_harness!();
    // The harness's grant: the shipped rule needs an active session, which no test has.
    let config = PolkitConfig::rdma_manager().harness_group_grant();
    let t = Setup::new(true, Some(config)).await?;
    let member = Credentials::test_user(true);
    for interactive in [false, true] {
        let reply = t.poke(Some(&member), interactive).await?;
        assert!(
            matches!(reply, Reply::Ok(_)),
            "polkitd log:\n{}",
            t.polkit_log()
        );
    }
    // Out of the group (polkitd reads membership at every check), the same user is refused:
    // it was the rule that granted it.
    t.users.set_in_rdma_group(false)?;
    let reply = t.poke(Some(&Credentials::test_user(false)), true).await?;
    assert_refused(&reply, "NotAuthorized", &[LINKS], &t.polkit_log());
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn without_polkit_everything_is_refused() -> Result<()> {
    require_harness!();
    let mut t = Setup::new(true, None).await?;
    let member = Credentials::test_user(true);
    for who in [None, Some(&member)] {
        for interactive in [false, true] {
            let reply = t.poke(who, interactive).await?;
            assert_refused(&reply, "NotAuthorized", &[LINKS, "not running"], "");
        }
    }

    // polkit going away later fails closed as well.
    let config = PolkitConfig::rdma_manager().harness_group_grant();
    t.polkit = Some(PrivatePolkit::start(&t.bus, &t.users, &config).await?);
    assert!(matches!(t.poke(Some(&member), false).await?, Reply::Ok(_)));
    t.polkit = None;
    for who in [None, Some(&member)] {
        let reply = t.poke(who, false).await?;
        assert_refused(&reply, "NotAuthorized", &["not running"], "");
    }
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
