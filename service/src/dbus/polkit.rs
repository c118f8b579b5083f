//! polkit authorization of the callers of mutating methods.
//!
//! Every mutating method calls [`Authorizer::check`] before it does anything. The authorizer
//! asks polkit (`org.freedesktop.PolicyKit1`) whether the bus name that sent the call may do the
//! [`Action`], and turns the answer into the service's D-Bus errors. It fails closed: a polkit
//! that is not running, or that answers with an error, refuses the change.
//!
//! Root: there is no uid 0 shortcut here. polkitd itself authorizes every subject whose uid is 0
//! ("special case: uid 0, root, is _always_ authorized for anything" in
//! `check_authorization_sync` of polkitbackendinteractiveauthority.c); the test
//! `tests/tests/system/polkit_harness.rs` confirms it against the real polkitd 122 with no rules at all.
//! systemd's `sd_bus_query_sender_privilege` shortcut (bus-polkit.c) is therefore not copied:
//! it would only differ when polkit is down, and then this service refuses root too, because a
//! polkit that cannot be asked is a failure, never a success.

use std::collections::HashMap;

use rdma_manager_dbus::{Action, Error};
use zbus::message::{Flags, Header};
use zbus::zvariant::Value;

const POLKIT_BUS_NAME: &str = "org.freedesktop.PolicyKit1";
const AUTHORITY_PATH: &str = "/org/freedesktop/PolicyKit1/Authority";
const AUTHORITY_INTERFACE: &str = "org.freedesktop.PolicyKit1.Authority";
/// `CheckAuthorizationFlags.AllowUserInteraction`.
const ALLOW_USER_INTERACTION: u32 = 1;

/// Asks polkit whether the caller of a method may do an [`Action`].
#[derive(Clone, Debug)]
pub struct Authorizer {
    conn: zbus::Connection,
    mode: Mode,
}

/// Who decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// polkit (every real service).
    Polkit,
    /// Only callers running as this uid, asked of the bus (the demo's simulated daemon, which
    /// runs as the user on a private bus and holds nothing that user does not already have).
    SameUser(u32),
}

/// polkit's `AuthorizationResult`: (is_authorized, is_challenge, details).
type AuthorizationResult = (bool, bool, HashMap<String, String>);

/// Why polkit could not be asked.
#[derive(Debug, PartialEq)]
enum PolkitFailure {
    /// Nobody owns `org.freedesktop.PolicyKit1` (and the bus cannot start it).
    NotRunning,
    /// Any other error: the call, the reply, or polkit's own error (an unknown action id ...).
    Other(String),
}

impl Authorizer {
    /// An authorizer that asks polkit over `conn` (the connection the service's objects live on).
    pub fn new(conn: &zbus::Connection) -> Self {
        Self {
            conn: conn.clone(),
            mode: Mode::Polkit,
        }
    }

    /// An authorizer for a simulated daemon serving one user: a caller is allowed when the bus
    /// says its uid is this process's effective uid, and refused otherwise. It never asks
    /// polkit, so it must only serve a simulated host (`rdma-tui --demo`).
    pub fn same_user_for_simulation(conn: &zbus::Connection) -> Self {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let uid = unsafe { libc::geteuid() };
        Self {
            conn: conn.clone(),
            mode: Mode::SameUser(uid),
        }
    }

    /// Asks org.freedesktop.PolicyKit1 whether the sender of `header` may do `action`.
    ///
    /// Interaction (a password prompt through the caller's polkit authentication agent) is
    /// allowed only when the caller set ALLOW_INTERACTIVE_AUTHORIZATION on its call.
    ///
    /// The refusal's sentence is cut to [`rdma_manager_dbus::text::MESSAGE_MAX_BYTES`]: it may
    /// quote what polkit or the bus answered.
    pub async fn check(&self, header: &Header<'_>, action: Action) -> Result<(), Error> {
        self.check_uncapped(header, action)
            .await
            .map_err(Error::capped)
    }

    async fn check_uncapped(&self, header: &Header<'_>, action: Action) -> Result<(), Error> {
        let Some(sender) = header.sender() else {
            tracing::warn!(action = action.id(), "refusing a call without a sender");
            return Err(Error::NotAuthorized(format!(
                "Not authorized to perform {}: the call has no sender bus name to ask polkit about.",
                action.id()
            )));
        };
        if let Mode::SameUser(uid) = self.mode {
            return self.check_same_user(sender.as_str(), uid, action).await;
        }
        let interactive = header
            .primary()
            .flags()
            .contains(Flags::AllowInteractiveAuth);
        let answer = self
            .check_authorization(sender.as_str(), action, interactive)
            .await;
        if let Err(failure) = &answer {
            tracing::warn!(
                action = action.id(),
                "could not ask polkit: {}",
                rdma_manager_dbus::text::cap_message(&format!("{failure:?}"))
            );
        }
        let verdict = decide(action, interactive, answer).map_err(Error::capped);
        match &verdict {
            Ok(()) => tracing::debug!(sender = %sender, action = action.id(), "authorized"),
            Err(e) => tracing::info!(
                sender = %sender,
                action = action.id(),
                interactive,
                "not authorized: {}",
                e.message()
            ),
        }
        verdict
    }

    async fn check_same_user(&self, sender: &str, uid: u32, action: Action) -> Result<(), Error> {
        let caller = async {
            let dbus = zbus::fdo::DBusProxy::new(&self.conn).await?;
            let name = zbus::names::BusName::try_from(sender)?;
            Ok::<u32, zbus::Error>(dbus.get_connection_unix_user(name).await?)
        }
        .await;
        match caller {
            Ok(c) if c == uid => Ok(()),
            Ok(c) => Err(Error::NotAuthorized(format!(
                "Not authorized to perform {}: this simulated service serves only uid {uid}, \
                 and the caller is uid {c}.",
                action.id()
            ))),
            Err(e) => Err(Error::NotAuthorized(format!(
                "Not authorized to perform {}: the bus did not say who the caller is ({e}).",
                action.id()
            ))),
        }
    }

    async fn check_authorization(
        &self,
        sender: &str,
        action: Action,
        interactive: bool,
    ) -> Result<AuthorizationResult, PolkitFailure> {
        let subject: (&str, HashMap<&str, Value<'_>>) = (
            "system-bus-name",
            HashMap::from([("name", Value::from(sender))]),
        );
        let details: HashMap<&str, &str> = HashMap::new();
        let flags = if interactive {
            ALLOW_USER_INTERACTION
        } else {
            0
        };
        let reply = self
            .conn
            .call_method(
                Some(POLKIT_BUS_NAME),
                AUTHORITY_PATH,
                Some(AUTHORITY_INTERFACE),
                "CheckAuthorization",
                &(subject, action.id(), details, flags, ""),
            )
            .await
            .map_err(|e| classify(&e))?;
        reply
            .body()
            .deserialize::<AuthorizationResult>()
            .map_err(|e| PolkitFailure::Other(format!("unexpected reply from polkit: {e}")))
    }
}

/// Sorts a failed call to polkit into "polkit is not there" and everything else.
fn classify(e: &zbus::Error) -> PolkitFailure {
    const ABSENT: [&str; 2] = [
        "org.freedesktop.DBus.Error.ServiceUnknown",
        "org.freedesktop.DBus.Error.NameHasNoOwner",
    ];
    let absent = match e {
        zbus::Error::MethodError(name, _, _) => ABSENT.contains(&name.as_str()),
        zbus::Error::FDO(fdo) => matches!(
            **fdo,
            zbus::fdo::Error::ServiceUnknown(_) | zbus::fdo::Error::NameHasNoOwner(_)
        ),
        _ => false,
    };
    if absent {
        PolkitFailure::NotRunning
    } else {
        PolkitFailure::Other(e.to_string())
    }
}

/// What an administrator can do about a refusal. The example rule grants only the network
/// actions, and only to an active login session: the hint promises no more than that.
fn how_to_get_it(action: Action) -> String {
    match action {
        Action::ManageHost => format!(
            "an administrator can grant {} with a polkit rule of their own (host setup is \
             not in the example rules rdma-manager ships: it changes the whole machine)",
            action.id()
        ),
        _ => format!(
            "an administrator can grant {} with a polkit rule, for example by adding the user \
             to group rdma with the example rules rdma-manager ships \
             (50-rdma-manager-rdma-group.rules), which grant it from an active login session, \
             local or over SSH",
            action.id()
        ),
    }
}

/// Turns polkit's answer (or the failure to get one) into the method's result.
fn decide(
    action: Action,
    interactive: bool,
    answer: Result<AuthorizationResult, PolkitFailure>,
) -> Result<(), Error> {
    let id = action.id();
    match answer {
        Ok((true, _, _)) => Ok(()),
        Ok((false, true, _)) if !interactive => {
            Err(Error::InteractiveAuthorizationRequired(format!(
                "{id} needs authentication, but the call did not allow interactive \
                 authorization. Retry allowing it (busctl --allow-interactive-authorization=yes, \
                 or the ALLOW_INTERACTIVE_AUTHORIZATION flag) from a session with a polkit \
                 authentication agent, or {}.",
                how_to_get_it(action)
            )))
        }
        Ok((false, true, details)) => Err(Error::NotAuthorized(format!(
            "Not authorized to perform {id}: authentication did not succeed{} (it was dismissed \
             or failed, or no polkit authentication agent serves the caller's session). \
             Authenticate through an agent, or {}.",
            if details.contains_key("polkit.dismissed") {
                " because it was dismissed"
            } else {
                ""
            },
            how_to_get_it(action)
        ))),
        Ok((false, false, _)) => Err(Error::NotAuthorized(format!(
            "Not authorized to perform {id}: polkit refused the caller; {}.",
            how_to_get_it(action)
        ))),
        Err(PolkitFailure::NotRunning) => Err(Error::NotAuthorized(format!(
            "Not authorized to perform {id}: polkit ({POLKIT_BUS_NAME}) is not running, so \
             changes are refused. Start polkitd and retry."
        ))),
        Err(PolkitFailure::Other(e)) => Err(Error::NotAuthorized(format!(
            "Not authorized to perform {id}: asking polkit failed ({e}), so the change is \
             refused. Check that polkitd runs and that rdma-manager's polkit policy is installed."
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(authorized: bool, challenge: bool) -> Result<AuthorizationResult, PolkitFailure> {
        Ok((authorized, challenge, HashMap::new()))
    }

    /// Asserts that `decide` refuses with the error `kind` and a sentence containing `words`.
    fn assert_refused(
        action: Action,
        interactive: bool,
        answer: Result<AuthorizationResult, PolkitFailure>,
        kind: &str,
        words: &[&str],
    ) {
        let e = decide(action, interactive, answer).expect_err("a refusal");
        let name = zbus::DBusError::name(&e);
        assert_eq!(
            name.as_str(),
            format!("org.rdmamanager.RdmaManager1.Error.{kind}")
        );
        let m = e.message();
        for w in [action.id()].iter().chain(words) {
            assert!(m.contains(w), "{w:?} not in {m:?}");
        }
    }

    #[test]
    fn authorized_is_ok_whatever_the_flags() {
        for interactive in [false, true] {
            assert_eq!(
                decide(Action::ManageLinks, interactive, answer(true, false)),
                Ok(())
            );
        }
    }

    #[test]
    fn challenge_without_interaction_asks_for_it() {
        assert_refused(
            Action::ManageRoce,
            false,
            answer(false, true),
            "InteractiveAuthorizationRequired",
            &["--allow-interactive-authorization=yes", "group rdma"],
        );
    }

    #[test]
    fn challenge_with_interaction_is_a_refusal() {
        let words = ["authentication agent", "group rdma", "active login session"];
        assert_refused(
            Action::ManageIpoib,
            true,
            answer(false, true),
            "NotAuthorized",
            &words,
        );
        let dismissed = Ok((
            false,
            true,
            HashMap::from([("polkit.dismissed".to_string(), "true".to_string())]),
        ));
        let words = ["because it was dismissed"];
        assert_refused(Action::ManageHost, true, dismissed, "NotAuthorized", &words);
    }

    #[test]
    fn host_setup_is_not_promised_by_the_example_rule() {
        let e = decide(Action::ManageHost, false, answer(false, false)).expect_err("refused");
        let m = e.message();
        assert!(m.contains("polkit rule of their own"), "{m}");
        assert!(!m.contains("group rdma"), "{m}");
    }

    #[test]
    fn plain_no_is_not_authorized() {
        for interactive in [false, true] {
            let no = answer(false, false);
            let words = ["polkit rule", "group rdma"];
            assert_refused(
                Action::ManageIpoib,
                interactive,
                no,
                "NotAuthorized",
                &words,
            );
        }
    }

    #[test]
    fn polkit_failures_fail_closed() {
        let absent = Err(PolkitFailure::NotRunning);
        assert_refused(
            Action::ManageNaming,
            false,
            absent,
            "NotAuthorized",
            &["not running"],
        );
        let broken = Err(PolkitFailure::Other("boom".into()));
        assert_refused(
            Action::ManageNaming,
            true,
            broken,
            "NotAuthorized",
            &["boom"],
        );
    }

    #[test]
    fn absent_polkit_is_recognised() {
        let fdo = zbus::Error::FDO(Box::new(zbus::fdo::Error::ServiceUnknown("x".into())));
        assert_eq!(classify(&fdo), PolkitFailure::NotRunning);
        let fdo = zbus::Error::FDO(Box::new(zbus::fdo::Error::NameHasNoOwner("x".into())));
        assert_eq!(classify(&fdo), PolkitFailure::NotRunning);
        let other = zbus::Error::Failure("broken pipe".into());
        assert!(matches!(classify(&other), PolkitFailure::Other(_)));
    }
}
