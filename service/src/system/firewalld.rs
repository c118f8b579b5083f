//! A client of firewalld (`org.fedoraproject.FirewallD1`, firewalld.dbus(5)).
//!
//! It does what the guide's `firewall-cmd --add-port=20049/tcp` and
//! `firewall-cmd --permanent --add-port=20049/tcp` do:
//!
//! - runtime: `org.fedoraproject.FirewallD1.zone.addPort(zone, port, protocol, timeout=0)` on
//!   `/org/fedoraproject/FirewallD1` (timeout 0: no expiry);
//! - permanent: `org.fedoraproject.FirewallD1.config.getZoneByName(zone)` on
//!   `/org/fedoraproject/FirewallD1/config`, then `org.fedoraproject.FirewallD1.config.zone.
//!   addPort(port, protocol)` on the zone object it returns.
//!
//! firewalld sends every error as `org.fedoraproject.FirewallD1.Exception` whose message starts
//! with the code (`ALREADY_ENABLED: '20049:tcp' already in 'public'`, `INVALID_ZONE: nosuch`);
//! ALREADY_ENABLED from either addPort means the port is open already, which is what was asked.
//!
//! [`Firewalld::running`] asks only the bus whether the name has an owner, and every call goes
//! out with NO_AUTO_START: asking must not start a firewall the administrator left stopped.
//! firewalld 1.3.3 ships no D-Bus activation file, but its unit is aliased as
//! `dbus-org.fedoraproject.FirewallD1.service`, so one activation file (a distribution's or an
//! administrator's) would make any call without that flag start it.

use std::fmt;

use zbus::zvariant::{OwnedObjectPath, OwnedValue};

use super::proxies::{
    Firewalld1Proxy, FirewalldConfigProxy, FirewalldConfigZoneProxy, FirewalldZoneProxy,
    ServicePropertiesProxy,
};
use super::{has_owner, proxy, reply, Service, SystemError};

pub const BUS_NAME: &str = "org.fedoraproject.FirewallD1";
pub const PATH: &str = "/org/fedoraproject/FirewallD1";
pub const INTERFACE: &str = "org.fedoraproject.FirewallD1";
pub const ZONE_INTERFACE: &str = "org.fedoraproject.FirewallD1.zone";
pub const CONFIG_PATH: &str = "/org/fedoraproject/FirewallD1/config";
pub const CONFIG_INTERFACE: &str = "org.fedoraproject.FirewallD1.config";
pub const CONFIG_ZONE_INTERFACE: &str = "org.fedoraproject.FirewallD1.config.zone";
/// The one error name of firewalld's methods (firewall/server/dbus.py, FirewallDBusException).
pub const EXCEPTION: &str = "org.fedoraproject.FirewallD1.Exception";

/// A port's protocol, as firewalld spells it (firewalld also knows sctp and dccp).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Tcp,
    Udp,
    Sctp,
    Dccp,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
            Protocol::Dccp => "dccp",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether one addPort opened the port or found it open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Added {
    /// firewalld added the port.
    Now,
    /// It was there already (firewalld answered ALREADY_ENABLED).
    Already,
}

/// What [`Firewalld::add_port`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortAddition {
    /// The zone the port is in (the default zone's name when "" was asked for).
    pub zone: String,
    pub runtime: Added,
    pub permanent: Added,
}

/// A client of firewalld over a bus connection.
#[derive(Clone, Debug)]
pub struct Firewalld {
    conn: zbus::Connection,
    call_timeout: std::time::Duration,
}

impl Firewalld {
    /// A client on `conn` (the daemon's connection to the system bus).
    pub fn new(conn: &zbus::Connection) -> Self {
        Self {
            conn: conn.clone(),
            call_timeout: super::DEFAULT_CALL_TIMEOUT,
        }
    }

    /// How long one method call may wait for its reply.
    pub fn with_call_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// The reply of `interface`'s `method`, waited for at most the call timeout.
    async fn reply<R>(
        &self,
        interface: &str,
        method: &str,
        call: impl std::future::Future<Output = zbus::Result<R>>,
    ) -> Result<R, SystemError> {
        let what = format!("{interface}.{method}");
        reply(Service::Firewalld, self.call_timeout, &what, call).await
    }

    async fn proxy<'a, P>(&self, path: &'a str) -> Result<P, SystemError>
    where
        P: zbus::proxy::ProxyImpl<'a> + From<zbus::Proxy<'a>>,
    {
        proxy(&self.conn, Service::Firewalld, path).await
    }

    /// Whether firewalld runs: its bus name has an owner. firewalld itself is not asked, so a
    /// stopped firewalld is neither called nor started.
    pub async fn running(&self) -> Result<bool, SystemError> {
        has_owner(&self.conn, Service::Firewalld).await
    }

    /// firewalld's `state` property: "INIT" while it starts, "RUNNING", or "FAILED" (started,
    /// but something failed; `firewall-cmd --state` says "running" only for RUNNING).
    pub async fn state(&self) -> Result<String, SystemError> {
        let props: ServicePropertiesProxy<'_> = self.proxy(PATH).await?;
        let value: OwnedValue = self
            .reply(
                "org.freedesktop.DBus.Properties",
                "Get",
                props.get(INTERFACE, "state"),
            )
            .await?;
        String::try_from(value).map_err(|e| SystemError::Unexpected {
            service: Service::Firewalld,
            message: format!("the state property: {e}"),
        })
    }

    /// The default zone's name.
    pub async fn default_zone(&self) -> Result<String, SystemError> {
        let main: Firewalld1Proxy<'_> = self.proxy(PATH).await?;
        self.reply(INTERFACE, "getDefaultZone", main.get_default_zone())
            .await
    }

    /// Whether `port/protocol` is open in `zone` at runtime ("" means the default zone, as
    /// firewalld documents for the runtime zone methods).
    pub async fn query_port(
        &self,
        zone: &str,
        port: u16,
        protocol: Protocol,
    ) -> Result<bool, SystemError> {
        check_port(port)?;
        let zones: FirewalldZoneProxy<'_> = self.proxy(PATH).await?;
        let port = port.to_string();
        self.reply(
            ZONE_INTERFACE,
            "queryPort",
            zones.query_port(zone, &port, protocol.as_str()),
        )
        .await
    }

    /// Whether `port/protocol` is in `zone`'s permanent configuration. The permanent methods
    /// need a zone name: "" is the default zone here too, resolved first.
    pub async fn query_permanent_port(
        &self,
        zone: &str,
        port: u16,
        protocol: Protocol,
    ) -> Result<bool, SystemError> {
        check_port(port)?;
        let zone = self.zone_name(zone).await?;
        let path = self.config_zone(&zone).await?;
        let config: FirewalldConfigZoneProxy<'_> = self.proxy(path.as_str()).await?;
        let port = port.to_string();
        self.reply(
            CONFIG_ZONE_INTERFACE,
            "queryPort",
            config.query_port(&port, protocol.as_str()),
        )
        .await
    }

    /// Opens `port/protocol` in `zone` ("" is the default zone) at runtime, then permanently.
    /// ALREADY_ENABLED counts as success. When the runtime step succeeds and the permanent one
    /// fails, the runtime port stays open (as after `firewall-cmd --add-port` without
    /// `--permanent`) and the error is returned.
    pub async fn add_port(
        &self,
        zone: &str,
        port: u16,
        protocol: Protocol,
    ) -> Result<PortAddition, SystemError> {
        check_port(port)?;
        // The permanent zone object is found by name, so an empty zone is resolved once and the
        // same name is used for both steps.
        let zone = self.zone_name(zone).await?;
        let port_text = port.to_string();
        let zones: FirewalldZoneProxy<'_> = self.proxy(PATH).await?;
        let runtime = tolerate_already_enabled(
            self.reply(
                ZONE_INTERFACE,
                "addPort",
                zones.add_port(&zone, &port_text, protocol.as_str(), 0),
            )
            .await,
        )?;
        let path = self.config_zone(&zone).await?;
        let config: FirewalldConfigZoneProxy<'_> = self.proxy(path.as_str()).await?;
        let permanent = tolerate_already_enabled(
            self.reply(
                CONFIG_ZONE_INTERFACE,
                "addPort",
                config.add_port(&port_text, protocol.as_str()),
            )
            .await,
        )?;
        Ok(PortAddition {
            zone,
            runtime,
            permanent,
        })
    }

    async fn zone_name(&self, zone: &str) -> Result<String, SystemError> {
        if zone.is_empty() {
            self.default_zone().await
        } else {
            Ok(zone.to_string())
        }
    }

    /// The object of `zone`'s permanent configuration.
    async fn config_zone(&self, zone: &str) -> Result<OwnedObjectPath, SystemError> {
        let config: FirewalldConfigProxy<'_> = self.proxy(CONFIG_PATH).await?;
        self.reply(
            CONFIG_INTERFACE,
            "getZoneByName",
            config.get_zone_by_name(zone),
        )
        .await
    }
}

/// Port 0 is no port to firewalld (functions.getPortID takes 1 to 65535).
fn check_port(port: u16) -> Result<(), SystemError> {
    if port == 0 {
        Err(SystemError::Invalid("port 0 cannot be opened".into()))
    } else {
        Ok(())
    }
}

/// An addPort's answer: added, already there (ALREADY_ENABLED), or the error.
fn tolerate_already_enabled<T>(answer: Result<T, SystemError>) -> Result<Added, SystemError> {
    match answer {
        Ok(_) => Ok(Added::Now),
        Err(e) if e.firewalld_code() == Some("ALREADY_ENABLED") => Ok(Added::Already),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(message: &str) -> SystemError {
        SystemError::Refused {
            service: Service::Firewalld,
            name: EXCEPTION.into(),
            message: message.into(),
        }
    }

    #[test]
    fn already_enabled_is_success() {
        assert!(matches!(tolerate_already_enabled(Ok(())), Ok(Added::Now)));
        let already = refused("ALREADY_ENABLED: '20049:tcp' already in 'public'");
        assert!(matches!(
            tolerate_already_enabled::<()>(Err(already)),
            Ok(Added::Already)
        ));
        let invalid = refused("INVALID_ZONE: nosuch");
        assert!(tolerate_already_enabled::<()>(Err(invalid)).is_err());
    }
}
