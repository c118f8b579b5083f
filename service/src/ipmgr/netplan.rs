//! A client of netplan's D-Bus API (`io.netplan.Netplan`, see netplan-dbus(8)): a
//! configuration object copied from /{etc,run,lib}/netplan (`Config`), its merged YAML
//! (`Get`), a change written to one file of the daemon's (`Set` with an origin hint), and
//! netplan's own confirm-or-rollback: `Try` applies it and rolls it back by itself when its
//! timeout passes, `Apply` keeps it, `Cancel` rolls it back now.
//!
//! Behind a trait so that a host without netplan's service (a simulated one) has none.

use async_trait::async_trait;

/// netplan's bus name.
pub const BUS_NAME: &str = "io.netplan.Netplan";
const PATH: &str = "/io/netplan/Netplan";
const NETPLAN: &str = "io.netplan.Netplan";
const CONFIG: &str = "io.netplan.Netplan.Config";

/// How long `Try` and `Apply` may take: netplan runs its generator, reloads networkd and
/// waits for udev before it answers.
const APPLY_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(90);

#[derive(Debug, Clone, thiserror::Error)]
pub enum NetplanError {
    #[error("netplan's D-Bus service ({BUS_NAME}) is neither running nor activatable")]
    NotRunning,
    /// The configuration object is gone: netplan ended it (its Try timed out, or another
    /// client's change took over).
    #[error("netplan no longer has the configuration object {0}")]
    Gone(String),
    #[error("netplan refused: {0}")]
    Refused(String),
    #[error("netplan: {0}")]
    Bus(String),
}

/// What the daemon asks of netplan. `config` is the path `Config` returned.
#[async_trait]
pub trait Netplan: Send + Sync + std::fmt::Debug {
    /// Whether netplan's service runs or the bus can start it.
    async fn available(&self) -> Result<bool, NetplanError>;
    /// `Config`: a new configuration object, a copy of the host's configuration.
    async fn config(&self) -> Result<String, NetplanError>;
    /// `Config.Get`: the object's merged configuration, as YAML.
    async fn get(&self, config: &str) -> Result<String, NetplanError>;
    /// `Config.Set`: `delta` (netplan set's `KEY=VALUE`) written to `<origin>.yaml`.
    async fn set(&self, config: &str, delta: &str, origin: &str) -> Result<(), NetplanError>;
    /// `Config.Try`: applies the object, rolled back by netplan after `seconds`.
    async fn try_apply(&self, config: &str, seconds: u32) -> Result<(), NetplanError>;
    /// `Config.Apply`: keeps what a Try applied (or applies the object).
    async fn apply(&self, config: &str) -> Result<(), NetplanError>;
    /// `Config.Cancel`: rolls a Try back, or discards an object not tried.
    async fn cancel(&self, config: &str) -> Result<(), NetplanError>;
}

/// [`Netplan`] over a bus connection (the daemon's system bus).
#[derive(Clone, Debug)]
pub struct BusNetplan {
    conn: zbus::Connection,
    /// How long a call other than Try and Apply may wait for netplan's answer.
    call_timeout: std::time::Duration,
}

impl BusNetplan {
    pub fn new(conn: zbus::Connection, call_timeout: std::time::Duration) -> BusNetplan {
        BusNetplan { conn, call_timeout }
    }

    async fn call<B, R>(
        &self,
        path: &str,
        iface: &str,
        method: &str,
        body: &B,
        timeout: std::time::Duration,
    ) -> Result<R, NetplanError>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
        R: for<'d> zbus::zvariant::DynamicDeserialize<'d>,
    {
        let call = self
            .conn
            .call_method(Some(BUS_NAME), path, Some(iface), method, body);
        let reply = tokio::time::timeout(timeout, call)
            .await
            .map_err(|_| NetplanError::Bus(format!("{method} was not answered in time")))?
            .map_err(|e| classify(path, method, e))?;
        reply
            .body()
            .deserialize::<R>()
            .map_err(|e| NetplanError::Bus(format!("{method} answered {e}")))
    }

    /// A Config method that answers `b`: false is a refusal.
    async fn config_call<B>(
        &self,
        config: &str,
        method: &str,
        body: &B,
        timeout: std::time::Duration,
    ) -> Result<(), NetplanError>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
    {
        let ok: bool = self.call(config, CONFIG, method, body, timeout).await?;
        if ok {
            Ok(())
        } else {
            Err(NetplanError::Refused(format!("{method} answered false")))
        }
    }
}

fn classify(path: &str, method: &str, e: zbus::Error) -> NetplanError {
    match e {
        zbus::Error::MethodError(name, msg, _) => {
            let name = name.as_str();
            let msg = msg.unwrap_or_default();
            match name {
                "org.freedesktop.DBus.Error.ServiceUnknown"
                | "org.freedesktop.DBus.Error.NameHasNoOwner" => NetplanError::NotRunning,
                "org.freedesktop.DBus.Error.UnknownObject"
                | "org.freedesktop.DBus.Error.UnknownMethod" => {
                    NetplanError::Gone(path.to_string())
                }
                _ => NetplanError::Refused(format!("{method}: {}", first_lines(&msg))),
            }
        }
        other => NetplanError::Bus(format!("{method}: {other}")),
    }
}

/// netplan's errors carry its child's whole stderr (GLib warnings, a Python traceback): the
/// first line and the last, which says what went wrong, are what a user can read.
fn first_lines(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.trim().trim_matches('\''))
        .filter(|l| !l.is_empty())
        .collect();
    match lines.as_slice() {
        [] => String::new(),
        [one] => one.to_string(),
        [first, .., last] => format!("{first} … {last}"),
    }
}

#[async_trait]
impl Netplan for BusNetplan {
    async fn available(&self) -> Result<bool, NetplanError> {
        let dbus = zbus::fdo::DBusProxy::new(&self.conn)
            .await
            .map_err(|e| NetplanError::Bus(e.to_string()))?;
        let name = zbus::names::BusName::try_from(BUS_NAME)
            .map_err(|e| NetplanError::Bus(e.to_string()))?;
        if dbus
            .name_has_owner(name)
            .await
            .map_err(|e| NetplanError::Bus(e.to_string()))?
        {
            return Ok(true);
        }
        let activatable = dbus
            .list_activatable_names()
            .await
            .map_err(|e| NetplanError::Bus(e.to_string()))?;
        Ok(activatable.iter().any(|n| n.as_str() == BUS_NAME))
    }

    async fn config(&self) -> Result<String, NetplanError> {
        let path: zbus::zvariant::OwnedObjectPath = self
            .call(PATH, NETPLAN, "Config", &(), self.call_timeout)
            .await?;
        Ok(path.as_str().to_string())
    }

    async fn get(&self, config: &str) -> Result<String, NetplanError> {
        self.call(config, CONFIG, "Get", &(), self.call_timeout)
            .await
    }

    async fn set(&self, config: &str, delta: &str, origin: &str) -> Result<(), NetplanError> {
        self.config_call(config, "Set", &(delta, origin), self.call_timeout)
            .await
    }

    async fn try_apply(&self, config: &str, seconds: u32) -> Result<(), NetplanError> {
        self.config_call(config, "Try", &(seconds,), APPLY_CALL_TIMEOUT)
            .await
    }

    async fn apply(&self, config: &str) -> Result<(), NetplanError> {
        self.config_call(config, "Apply", &(), APPLY_CALL_TIMEOUT)
            .await
    }

    async fn cancel(&self, config: &str) -> Result<(), NetplanError> {
        self.config_call(config, "Cancel", &(), APPLY_CALL_TIMEOUT)
            .await
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_netplan_error_is_cut_to_what_says_why() {
        let text = "netplan set failed: Child process exited with code 1\nstdout: ''\n\
                    stderr: '\n(process:1): GLib-GIO-CRITICAL **: assertion\nTraceback:\n  \
                    File x\nnetplan.ParseError: bad address\n'";
        assert_eq!(
            super::first_lines(text),
            "netplan set failed: Child process exited with code 1 … netplan.ParseError: bad address"
        );
        assert_eq!(super::first_lines("one line"), "one line");
        assert_eq!(super::first_lines(""), "");
    }
}
