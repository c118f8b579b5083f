//! Host services the daemon drives over the system bus for host setup: systemd (units of the
//! guide: `rdma-load-modules@rdma.service`, `nfs-server.service`, `opensm.service`) and
//! firewalld (the NFS-over-RDMA port).
//!
//! - [`systemd`]: [`Systemd`], a client of `org.freedesktop.systemd1`: unit status, start, stop
//!   and restart that wait for the job's end, enable and disable.
//! - [`firewalld`]: [`Firewalld`], a client of `org.fedoraproject.FirewallD1`: whether it runs,
//!   the default zone, and ports (runtime and permanent).
//! - [`proxies`]: the methods both clients call, as typed zbus proxies.
//! - [`sd_notify`]: the daemon's own readiness, told to systemd (`READY=1`).
//! - [`SystemServices`]: the trait the engine holds, with [`BusSystemServices`] over a
//!   connection to the system bus, `sim::SimSystemServices` for the simulated host (the `sim` feature) and
//!   [`unreachable::Unreachable`] when there is no system bus (`rdma-managerd show`).
//!
//! Both clients talk over the daemon's own system-bus connection. The daemon runs as root: both
//! services grant uid 0 without asking polkit (see docs/HOST-SETUP.md for the sources), so no
//! polkit action of rdma-manager's is involved here; callers authorize their own callers first.
//!
//! Every method, signature and error name used here is listed, with the source it was checked
//! against, in docs/HOST-SETUP.md ("systemd and firewalld over D-Bus").

pub mod firewalld;
pub mod proxies;
pub mod sd_notify;
#[cfg(any(test, feature = "sim"))]
pub mod sim;
pub mod systemd;
pub mod unreachable;

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use zbus::proxy::{CacheProperties, ProxyImpl};

pub use firewalld::{Added, Firewalld, PortAddition, Protocol};
pub use systemd::{EnableOutcome, JobResult, JobVerb, Systemd, UnitFileChange, UnitStatus};

/// The unit that loads the kernel modules listed in `/etc/rdma/modules/*.conf` (rdma-core).
pub const RDMA_LOAD_MODULES_UNIT: &str = "rdma-load-modules@rdma.service";
/// The NFS server, restarted after NFS over RDMA is configured.
pub const NFS_SERVER_UNIT: &str = "nfs-server.service";
/// The InfiniBand subnet manager.
pub const OPENSM_UNIT: &str = "opensm.service";
/// NFS over RDMA's port (RFC 5666, the guide's `firewall-cmd --add-port=20049/{tcp,udp}`).
pub const NFS_RDMA_PORT: u16 = 20049;

/// How long one method call may take before the client gives up on the reply (the D-Bus
/// reference implementation's default reply timeout).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(25);

/// Which host service an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    Systemd,
    Firewalld,
}

impl Service {
    /// The well-known bus name the service owns.
    pub fn bus_name(self) -> &'static str {
        match self {
            Service::Systemd => systemd::BUS_NAME,
            Service::Firewalld => firewalld::BUS_NAME,
        }
    }
}

impl fmt::Display for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Service::Systemd => "systemd",
            Service::Firewalld => "firewalld",
        })
    }
}

/// Why a request to systemd or firewalld did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum SystemError {
    /// Nobody owns the service's bus name: systemd is not the init system, or firewalld is
    /// stopped or not installed.
    #[error("{service} is not running (nobody owns {} on the bus)", service.bus_name())]
    NotRunning { service: Service },
    /// systemd knows no such unit (`org.freedesktop.systemd1.NoSuchUnit`): not installed.
    #[error("no unit {unit}: {message}")]
    NoSuchUnit { unit: String, message: String },
    /// The job ran and ended with a result other than "done" or "skipped".
    #[error("the {verb} job of {unit} ended with result \"{result}\"")]
    JobFailed {
        unit: String,
        verb: JobVerb,
        result: JobResult,
    },
    /// The job did not end within the client's timeout. systemd goes on with it.
    #[error("the {verb} job of {unit} ({job}) did not end within {waited:?}")]
    JobTimeout {
        unit: String,
        verb: JobVerb,
        job: String,
        waited: Duration,
    },
    /// The service answered with an error: its D-Bus error name and message, as sent.
    #[error("{service} refused: {name}: {message}")]
    Refused {
        service: Service,
        name: String,
        message: String,
    },
    /// Refused before anything was sent (an argument the service would misread).
    #[error("{0}")]
    Invalid(String),
    /// The service answered with something other than what its API documents.
    #[error("unexpected answer from {service}: {message}")]
    Unexpected { service: Service, message: String },
    /// The bus itself failed: the connection, a timeout waiting for a reply, ...
    #[error("D-Bus error talking to {service}: {source}")]
    Bus {
        service: Service,
        #[source]
        source: zbus::Error,
    },
}

impl SystemError {
    /// firewalld's error code ("ALREADY_ENABLED", "INVALID_ZONE", ...): firewalld sends every
    /// error as `org.fedoraproject.FirewallD1.Exception` with the message "CODE: details" or
    /// "CODE" (firewall/errors.py, FirewallError.__str__).
    pub fn firewalld_code(&self) -> Option<&str> {
        match self {
            SystemError::Refused {
                service: Service::Firewalld,
                name,
                message,
            } if name == firewalld::EXCEPTION => {
                let code = message.split(':').next().unwrap_or_default();
                let is_code = !code.is_empty()
                    && code
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
                is_code.then_some(code)
            }
            _ => None,
        }
    }
}

/// The bus errors that mean "nobody serves that name".
const ABSENT: [&str; 2] = [
    "org.freedesktop.DBus.Error.ServiceUnknown",
    "org.freedesktop.DBus.Error.NameHasNoOwner",
];

/// Sorts a failed call into the service's absence, its refusal (with the error name it sent) and
/// failures of the bus.
fn classify(service: Service, e: zbus::Error) -> SystemError {
    let (name, message) = match &e {
        zbus::Error::MethodError(name, message, _) => (
            name.as_str().to_string(),
            message.clone().unwrap_or_default(),
        ),
        zbus::Error::FDO(fdo) => {
            let fdo: &zbus::fdo::Error = fdo;
            (
                zbus::DBusError::name(fdo).as_str().to_string(),
                zbus::DBusError::description(fdo)
                    .unwrap_or_default()
                    .to_string(),
            )
        }
        _ => return SystemError::Bus { service, source: e },
    };
    if ABSENT.contains(&name.as_str()) {
        SystemError::NotRunning { service }
    } else {
        SystemError::Refused {
            service,
            name,
            message,
        }
    }
}

/// A typed proxy (`proxies.rs`) of `service`'s object at `path`. Its methods all go out with
/// `NO_AUTO_START`: a client must never start firewalld (where the bus can activate it) just by
/// asking it something; a stopped service stays stopped and the call fails with
/// ServiceUnknown.
async fn proxy<'a, P>(
    conn: &zbus::Connection,
    service: Service,
    path: &'a str,
) -> Result<P, SystemError>
where
    P: ProxyImpl<'a> + From<zbus::Proxy<'a>>,
{
    let bus = |source| SystemError::Bus { service, source };
    P::builder(conn)
        .destination(service.bus_name())
        .map_err(bus)?
        .path(path)
        .map_err(bus)?
        // No property cache: it would subscribe to PropertiesChanged and read every property.
        .cache_properties(CacheProperties::No)
        .build()
        .await
        .map_err(bus)
}

/// The reply of one call (`what`: interface and method, for the error), waited for at most
/// `timeout`.
async fn reply<R>(
    service: Service,
    timeout: Duration,
    what: &str,
    call: impl std::future::Future<Output = zbus::Result<R>>,
) -> Result<R, SystemError> {
    tokio::time::timeout(timeout, call)
        .await
        .map_err(|_| SystemError::Bus {
            service,
            source: zbus::Error::InputOutput(std::sync::Arc::new(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no reply to {what} within {timeout:?}"),
            ))),
        })?
        .map_err(|e| classify(service, e))
}

/// Whether `service`'s bus name has an owner. Asks only the bus, never the service (and so never
/// activates it).
async fn has_owner(conn: &zbus::Connection, service: Service) -> Result<bool, SystemError> {
    let bus = |source| SystemError::Bus { service, source };
    let dbus = zbus::fdo::DBusProxy::new(conn).await.map_err(bus)?;
    let name = zbus::names::BusName::try_from(service.bus_name()).map_err(|e| bus(e.into()))?;
    dbus.name_has_owner(name)
        .await
        .map_err(|e| classify(service, e.into()))
}

/// What the engine asks of the host's services, so that it can hold the real one
/// ([`BusSystemServices`]) or a test's.
#[async_trait]
pub trait SystemServices: Send + Sync {
    /// A unit's load, active and unit-file states. A unit that is not installed answers with
    /// load state "not-found".
    async fn unit_status(&self, unit: &str) -> Result<UnitStatus, SystemError>;
    /// Starts a unit and waits for the job's end ("done" or "skipped"; anything else is
    /// [`SystemError::JobFailed`]).
    async fn start_unit(&self, unit: &str) -> Result<JobResult, SystemError>;
    /// Stops a unit and waits for the job's end.
    async fn stop_unit(&self, unit: &str) -> Result<JobResult, SystemError>;
    /// Restarts a unit (starting it when it was stopped) and waits for the job's end.
    async fn restart_unit(&self, unit: &str) -> Result<JobResult, SystemError>;
    /// Enables a unit file persistently, then reloads systemd, as `systemctl enable` does.
    async fn enable_unit(&self, unit: &str) -> Result<EnableOutcome, SystemError>;
    /// Disables a unit file persistently, then reloads systemd, as `systemctl disable` does.
    async fn disable_unit(&self, unit: &str) -> Result<Vec<UnitFileChange>, SystemError>;
    /// Whether firewalld runs (its bus name has an owner); firewalld itself is not called.
    async fn firewalld_running(&self) -> Result<bool, SystemError>;
    /// firewalld's default zone.
    async fn firewall_default_zone(&self) -> Result<String, SystemError>;
    /// Whether `port/protocol` is open in `zone` at runtime ("" is the default zone).
    async fn firewall_query_port(
        &self,
        zone: &str,
        port: u16,
        protocol: Protocol,
    ) -> Result<bool, SystemError>;
    /// Opens `port/protocol` in `zone` ("" is the default zone) at runtime and permanently;
    /// already open counts as success.
    async fn firewall_add_port(
        &self,
        zone: &str,
        port: u16,
        protocol: Protocol,
    ) -> Result<PortAddition, SystemError>;
    /// NetworkManager's profiles, or `None` when NetworkManager does not run (a host without
    /// it: the daemon alone configures IPoIB there). Hosts without NetworkManager need not
    /// answer this.
    async fn network_manager_profiles(
        &self,
    ) -> Result<Option<Vec<crate::nm::client::ProfileSummary>>, crate::nm::client::NmError> {
        Ok(None)
    }
    /// A client of NetworkManager, where the daemon can reach one (the daemon's bus); `None`
    /// where it cannot (a simulated host's services): changes through NetworkManager are
    /// then not supported.
    fn network_manager(&self) -> Option<crate::nm::client::NetworkManager> {
        None
    }
    /// A client of systemd-networkd, where the daemon can reach one.
    fn networkd(&self) -> Option<std::sync::Arc<dyn crate::ipmgr::networkd::Networkd>> {
        None
    }
    /// A client of netplan's D-Bus service, where the daemon can reach one.
    fn netplan(&self) -> Option<std::sync::Arc<dyn crate::ipmgr::netplan::Netplan>> {
        None
    }
}

/// How long a NetworkManager that owns its name but has not exported its settings yet is
/// waited for (it exports them within a second of taking the name on a booting host).
pub const NM_SETTINGS_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// [`SystemServices`] over a bus connection: the daemon's own connection to the system bus.
#[derive(Clone, Debug)]
pub struct BusSystemServices {
    pub systemd: Systemd,
    pub firewalld: Firewalld,
    pub network_manager: crate::nm::client::NetworkManager,
    /// How long a starting NetworkManager is waited for ([`NM_SETTINGS_WAIT`]).
    pub nm_settings_wait: std::time::Duration,
    pub networkd: crate::ipmgr::networkd::BusNetworkd,
    pub netplan: crate::ipmgr::netplan::BusNetplan,
}

impl BusSystemServices {
    pub fn new(conn: &zbus::Connection) -> Self {
        Self {
            systemd: Systemd::new(conn),
            firewalld: Firewalld::new(conn),
            network_manager: crate::nm::client::NetworkManager::new(conn.clone()),
            nm_settings_wait: NM_SETTINGS_WAIT,
            networkd: crate::ipmgr::networkd::BusNetworkd::new(conn.clone(), DEFAULT_CALL_TIMEOUT),
            netplan: crate::ipmgr::netplan::BusNetplan::new(conn.clone(), DEFAULT_CALL_TIMEOUT),
        }
    }
}

#[async_trait]
impl SystemServices for BusSystemServices {
    async fn network_manager_profiles(
        &self,
    ) -> Result<Option<Vec<crate::nm::client::ProfileSummary>>, crate::nm::client::NmError> {
        // At boot NetworkManager takes its bus name before it exports its settings, and the
        // daemon starts beside it: asked in that window, it would look as if it had no
        // profile, and the restore would re-create interfaces it owns. So a NetworkManager
        // that is starting is waited for, a while.
        let deadline = std::time::Instant::now() + self.nm_settings_wait;
        loop {
            if !self.network_manager.running().await? {
                return Ok(None);
            }
            match self.network_manager.profiles().await {
                Err(crate::nm::client::NmError::Starting)
                    if std::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                other => return other.map(Some),
            }
        }
    }

    fn network_manager(&self) -> Option<crate::nm::client::NetworkManager> {
        Some(self.network_manager.clone())
    }

    fn networkd(&self) -> Option<std::sync::Arc<dyn crate::ipmgr::networkd::Networkd>> {
        Some(std::sync::Arc::new(self.networkd.clone()))
    }

    fn netplan(&self) -> Option<std::sync::Arc<dyn crate::ipmgr::netplan::Netplan>> {
        Some(std::sync::Arc::new(self.netplan.clone()))
    }

    async fn unit_status(&self, unit: &str) -> Result<UnitStatus, SystemError> {
        self.systemd.unit_status(unit).await
    }

    async fn start_unit(&self, unit: &str) -> Result<JobResult, SystemError> {
        self.systemd.start(unit).await
    }

    async fn stop_unit(&self, unit: &str) -> Result<JobResult, SystemError> {
        self.systemd.stop(unit).await
    }

    async fn restart_unit(&self, unit: &str) -> Result<JobResult, SystemError> {
        self.systemd.restart(unit).await
    }

    async fn enable_unit(&self, unit: &str) -> Result<EnableOutcome, SystemError> {
        self.systemd.enable(unit).await
    }

    async fn disable_unit(&self, unit: &str) -> Result<Vec<UnitFileChange>, SystemError> {
        self.systemd.disable(unit).await
    }

    async fn firewalld_running(&self) -> Result<bool, SystemError> {
        self.firewalld.running().await
    }

    async fn firewall_default_zone(&self) -> Result<String, SystemError> {
        self.firewalld.default_zone().await
    }

    async fn firewall_query_port(
        &self,
        zone: &str,
        port: u16,
        protocol: Protocol,
    ) -> Result<bool, SystemError> {
        self.firewalld.query_port(zone, port, protocol).await
    }

    async fn firewall_add_port(
        &self,
        zone: &str,
        port: u16,
        protocol: Protocol,
    ) -> Result<PortAddition, SystemError> {
        self.firewalld.add_port(zone, port, protocol).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_services_are_not_running() {
        for service in [Service::Systemd, Service::Firewalld] {
            let fdo = zbus::Error::FDO(Box::new(zbus::fdo::Error::ServiceUnknown("x".into())));
            assert!(matches!(
                classify(service, fdo),
                SystemError::NotRunning { service: s } if s == service
            ));
            let fdo = zbus::Error::FDO(Box::new(zbus::fdo::Error::NameHasNoOwner("x".into())));
            assert!(matches!(
                classify(service, fdo),
                SystemError::NotRunning { .. }
            ));
        }
        let other = zbus::Error::Failure("broken pipe".into());
        assert!(matches!(
            classify(Service::Systemd, other),
            SystemError::Bus { .. }
        ));
    }

    #[test]
    fn other_errors_keep_their_name_and_message() {
        let fdo = zbus::Error::FDO(Box::new(zbus::fdo::Error::AccessDenied("no".into())));
        match classify(Service::Systemd, fdo) {
            SystemError::Refused { name, message, .. } => {
                assert_eq!(name, "org.freedesktop.DBus.Error.AccessDenied");
                assert_eq!(message, "no");
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn firewalld_codes() {
        let refused = |message: &str| SystemError::Refused {
            service: Service::Firewalld,
            name: firewalld::EXCEPTION.into(),
            message: message.into(),
        };
        assert_eq!(
            refused("ALREADY_ENABLED: '20049:tcp' already in 'public'").firewalld_code(),
            Some("ALREADY_ENABLED")
        );
        assert_eq!(
            refused("INVALID_ZONE").firewalld_code(),
            Some("INVALID_ZONE")
        );
        assert_eq!(refused("object of type 'int'").firewalld_code(), None);
        let systemd = SystemError::Refused {
            service: Service::Systemd,
            name: firewalld::EXCEPTION.into(),
            message: "ALREADY_ENABLED".into(),
        };
        assert_eq!(systemd.firewalld_code(), None);
    }
}
