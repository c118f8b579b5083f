//! A client of systemd's manager (`org.freedesktop.systemd1`, org.freedesktop.systemd1(5)).
//!
//! It does what `systemctl status|start|stop|restart|enable|disable UNIT` do, over the bus:
//!
//! - status: `LoadUnit` (not `GetUnit`, which fails with NoSuchUnit for any unit not loaded yet,
//!   installed or not: "If a unit has not been loaded yet by this name this method will fail"),
//!   then the unit object's properties. A unit that is not installed still loads, as a stub with
//!   LoadState "not-found"; that is how "not installed" is told.
//! - start/stop/restart: `StartUnit`/`StopUnit`/`RestartUnit` with mode "replace" (systemctl's
//!   default `--job-mode`), then the `JobRemoved` signal of the returned job, whose result says
//!   how it ended. The match for the signal is added before the call: a short job can end, and
//!   its signal go out, before the call's reply arrives. No `Subscribe()`: systemd sends a job's
//!   signals to the client that enqueued it (dbus-job.c, `bus_job_track_sender` and
//!   `bus_foreach_bus`), which is how systemctl waits too (bus-wait-for-jobs.c).
//! - enable/disable: `EnableUnitFiles(names, runtime=false, force=false)` and
//!   `DisableUnitFiles(names, runtime=false)`, then `Reload()`, as systemctl does unless
//!   `--no-reload` (systemctl-enable.c).
//!
//! Template instances such as `rdma-load-modules@rdma.service` are plain unit names to all of
//! these calls.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use futures::StreamExt;
use zbus::zvariant::{OwnedObjectPath, OwnedValue};

use super::proxies::{ServicePropertiesProxy, SystemdManagerProxy, UnitFileChangeTuple};
use super::{classify, has_owner, proxy, reply, Service, SystemError};

pub const BUS_NAME: &str = "org.freedesktop.systemd1";
pub const MANAGER_PATH: &str = "/org/freedesktop/systemd1";
pub const MANAGER_INTERFACE: &str = "org.freedesktop.systemd1.Manager";
pub const UNIT_INTERFACE: &str = "org.freedesktop.systemd1.Unit";
/// systemd's error for a unit that is not loaded or not found (bus-common-errors.h).
pub const NO_SUCH_UNIT: &str = "org.freedesktop.systemd1.NoSuchUnit";
/// systemctl's default job mode: replace conflicting queued jobs.
pub const JOB_MODE: &str = "replace";
/// How long a job may take by default. systemd's own DefaultTimeoutStartSec= is 90 s and a
/// restart is a stop then a start; the client waits a little longer than both would take.
pub const DEFAULT_JOB_TIMEOUT: Duration = Duration::from_secs(200);

/// A unit's state as systemd reports it (`systemctl show -p LoadState,ActiveState,...`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnitStatus {
    /// The primary name (differs from the name asked for when that was an alias).
    pub id: String,
    /// "loaded", "not-found", "bad-setting", "error", "masked", ...
    pub load_state: String,
    /// "active", "reloading", "inactive", "failed", "activating", "deactivating", ...
    pub active_state: String,
    /// The type-specific state: "running", "exited", "dead", "failed", ...
    pub sub_state: String,
    /// "enabled", "disabled", "static", "masked", "indirect", "generated", ... or "" when there
    /// is no unit file.
    pub unit_file_state: String,
}

impl UnitStatus {
    /// Whether the unit is installed: systemd found a unit file (or it is masked).
    pub fn installed(&self) -> bool {
        self.load_state != "not-found"
    }

    pub fn active(&self) -> bool {
        self.active_state == "active"
    }

    /// Whether the unit file is enabled, at boot or for this boot only.
    pub fn enabled(&self) -> bool {
        matches!(self.unit_file_state.as_str(), "enabled" | "enabled-runtime")
    }
}

/// What a job does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobVerb {
    Start,
    Stop,
    Restart,
}

impl JobVerb {
    /// The manager's method that enqueues this job (`proxies::SystemdManager`).
    pub fn method(self) -> &'static str {
        match self {
            JobVerb::Start => "StartUnit",
            JobVerb::Stop => "StopUnit",
            JobVerb::Restart => "RestartUnit",
        }
    }
}

impl fmt::Display for JobVerb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            JobVerb::Start => "start",
            JobVerb::Stop => "stop",
            JobVerb::Restart => "restart",
        })
    }
}

/// How a job ended: the result string of `JobRemoved`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobResult {
    /// Successful execution.
    Done,
    /// Canceled before it finished.
    Canceled,
    /// The job's timeout was reached.
    Timeout,
    /// The job failed (the unit's start or stop failed).
    Failed,
    /// A job this one depended on failed.
    Dependency,
    /// It did not apply to the unit's state (a reload of an inactive unit, ...).
    Skipped,
    /// A result newer systemd versions add ("invalid", "assert", "unsupported", "collected",
    /// "once", "frozen", ...), kept as sent.
    Other(String),
}

impl JobResult {
    pub fn parse(s: &str) -> Self {
        match s {
            "done" => JobResult::Done,
            "canceled" => JobResult::Canceled,
            "timeout" => JobResult::Timeout,
            "failed" => JobResult::Failed,
            "dependency" => JobResult::Dependency,
            "skipped" => JobResult::Skipped,
            other => JobResult::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            JobResult::Done => "done",
            JobResult::Canceled => "canceled",
            JobResult::Timeout => "timeout",
            JobResult::Failed => "failed",
            JobResult::Dependency => "dependency",
            JobResult::Skipped => "skipped",
            JobResult::Other(s) => s,
        }
    }

    /// Whether systemctl counts the job as successful: "done" and "skipped"
    /// (bus-wait-for-jobs.c, check_wait_response).
    pub fn succeeded(&self) -> bool {
        matches!(self, JobResult::Done | JobResult::Skipped)
    }
}

impl fmt::Display for JobResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One change of `EnableUnitFiles`/`DisableUnitFiles`: ("symlink" or "unlink", the symlink,
/// its destination).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitFileChange {
    pub kind: String,
    pub path: String,
    pub destination: String,
}

/// The answer of `EnableUnitFiles`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnableOutcome {
    /// Whether the unit file has an [Install] section. When it has none, nothing was enabled
    /// and systemctl prints its "no installation config" notice.
    pub carries_install_info: bool,
    /// The symlinks made; empty when the unit was already enabled.
    pub changes: Vec<UnitFileChange>,
}

/// A client of systemd over a bus connection.
#[derive(Clone, Debug)]
pub struct Systemd {
    conn: zbus::Connection,
    job_timeout: Duration,
    call_timeout: Duration,
}

impl Systemd {
    /// A client on `conn` (the daemon's connection to the system bus).
    pub fn new(conn: &zbus::Connection) -> Self {
        Self {
            conn: conn.clone(),
            job_timeout: DEFAULT_JOB_TIMEOUT,
            call_timeout: super::DEFAULT_CALL_TIMEOUT,
        }
    }

    /// How long [`Systemd::start`] and the others wait for the job's end.
    pub fn with_job_timeout(mut self, timeout: Duration) -> Self {
        self.job_timeout = timeout;
        self
    }

    /// How long one method call may wait for its reply.
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Whether systemd's manager is on the bus (it is not where systemd is not the init system,
    /// as in most containers).
    pub async fn running(&self) -> Result<bool, SystemError> {
        has_owner(&self.conn, Service::Systemd).await
    }

    async fn manager(&self) -> Result<SystemdManagerProxy<'static>, SystemError> {
        proxy(&self.conn, Service::Systemd, MANAGER_PATH).await
    }

    /// The reply of the manager's `method`, waited for at most the call timeout.
    async fn reply<R>(
        &self,
        method: &str,
        call: impl std::future::Future<Output = zbus::Result<R>>,
    ) -> Result<R, SystemError> {
        let what = format!("{MANAGER_INTERFACE}.{method}");
        reply(Service::Systemd, self.call_timeout, &what, call).await
    }

    /// The unit's state. A unit that is not installed answers with load state "not-found".
    pub async fn unit_status(&self, unit: &str) -> Result<UnitStatus, SystemError> {
        check_unit_name(unit)?;
        let manager = self.manager().await?;
        let path: OwnedObjectPath = self
            .reply("LoadUnit", manager.load_unit(unit))
            .await
            .map_err(|e| no_such_unit(e, unit))?;
        let unit_props: ServicePropertiesProxy<'_> =
            proxy(&self.conn, Service::Systemd, path.as_str()).await?;
        let props: HashMap<String, OwnedValue> = reply(
            Service::Systemd,
            self.call_timeout,
            "org.freedesktop.DBus.Properties.GetAll",
            unit_props.get_all(UNIT_INTERFACE),
        )
        .await?;
        let text = |key: &str| -> Result<String, SystemError> {
            let value = props.get(key).ok_or_else(|| SystemError::Unexpected {
                service: Service::Systemd,
                message: format!("unit {unit} ({path}) has no property {key}"),
            })?;
            String::try_from(value.clone()).map_err(|e| SystemError::Unexpected {
                service: Service::Systemd,
                message: format!("unit {unit} property {key}: {e}"),
            })
        };
        Ok(UnitStatus {
            id: text("Id")?,
            load_state: text("LoadState")?,
            active_state: text("ActiveState")?,
            sub_state: text("SubState")?,
            unit_file_state: text("UnitFileState")?,
        })
    }

    /// Starts `unit` and waits for the job's end.
    pub async fn start(&self, unit: &str) -> Result<JobResult, SystemError> {
        self.run_job(JobVerb::Start, unit).await
    }

    /// Stops `unit` and waits for the job's end.
    pub async fn stop(&self, unit: &str) -> Result<JobResult, SystemError> {
        self.run_job(JobVerb::Stop, unit).await
    }

    /// Restarts `unit` (starts it if it was not running) and waits for the job's end.
    pub async fn restart(&self, unit: &str) -> Result<JobResult, SystemError> {
        self.run_job(JobVerb::Restart, unit).await
    }

    /// Enqueues the job and waits for its `JobRemoved`. "done" and "skipped" are success, as in
    /// systemctl; any other result is [`SystemError::JobFailed`].
    pub async fn run_job(&self, verb: JobVerb, unit: &str) -> Result<JobResult, SystemError> {
        check_unit_name(unit)?;
        let bus = |source| SystemError::Bus {
            service: Service::Systemd,
            source,
        };
        // The signal is matched on systemd's unique name: on the system bus anyone may send
        // signals, and a JobRemoved from someone else must not end the wait.
        let dbus = zbus::fdo::DBusProxy::new(&self.conn).await.map_err(bus)?;
        let name = zbus::names::BusName::try_from(BUS_NAME).map_err(|e| bus(e.into()))?;
        let owner = dbus
            .get_name_owner(name)
            .await
            .map_err(|e| classify(Service::Systemd, e.into()))?;
        let rule = zbus::MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .sender(owner.as_str())
            .and_then(|b| b.path(MANAGER_PATH))
            .and_then(|b| b.interface(MANAGER_INTERFACE))
            .and_then(|b| b.member("JobRemoved"))
            .map_err(bus)?
            .build();
        // Subscribed before the call (see the module's notes); queued signals wait in the stream.
        let mut signals = zbus::MessageStream::for_match_rule(rule, &self.conn, None)
            .await
            .map_err(bus)?;
        let manager = self.manager().await?;
        let job: OwnedObjectPath = match verb {
            JobVerb::Start => {
                self.reply(verb.method(), manager.start_unit(unit, JOB_MODE))
                    .await
            }
            JobVerb::Stop => {
                self.reply(verb.method(), manager.stop_unit(unit, JOB_MODE))
                    .await
            }
            JobVerb::Restart => {
                self.reply(verb.method(), manager.restart_unit(unit, JOB_MODE))
                    .await
            }
        }
        .map_err(|e| no_such_unit(e, unit))?;
        let wait = async {
            while let Some(msg) = signals.next().await {
                let msg = msg.map_err(bus)?;
                // JobRemoved(u id, o job, s unit, s result). A body of another shape is not the
                // signal systemd documents; it is skipped rather than trusted.
                let Ok((_id, path, _unit, result)) =
                    msg.body()
                        .deserialize::<(u32, OwnedObjectPath, String, String)>()
                else {
                    tracing::debug!("ignoring a JobRemoved signal of unexpected shape");
                    continue;
                };
                if path == job {
                    return Ok(JobResult::parse(&result));
                }
            }
            Err(SystemError::Unexpected {
                service: Service::Systemd,
                message: format!("the bus connection closed while waiting for job {job}"),
            })
        };
        let result = tokio::time::timeout(self.job_timeout, wait)
            .await
            .map_err(|_| SystemError::JobTimeout {
                unit: unit.to_string(),
                verb,
                job: job.to_string(),
                waited: self.job_timeout,
            })??;
        if result.succeeded() {
            Ok(result)
        } else {
            Err(SystemError::JobFailed {
                unit: unit.to_string(),
                verb,
                result,
            })
        }
    }

    /// Enables `unit` persistently (symlinks in /etc), then reloads systemd.
    pub async fn enable(&self, unit: &str) -> Result<EnableOutcome, SystemError> {
        check_unit_name(unit)?;
        let manager = self.manager().await?;
        let (carries_install_info, changes) = self
            .reply(
                "EnableUnitFiles",
                manager.enable_unit_files(&[unit], false, false),
            )
            .await
            .map_err(|e| no_such_unit(e, unit))?;
        self.reload().await?;
        Ok(EnableOutcome {
            carries_install_info,
            changes: changes.into_iter().map(change).collect(),
        })
    }

    /// Disables `unit` persistently, then reloads systemd.
    pub async fn disable(&self, unit: &str) -> Result<Vec<UnitFileChange>, SystemError> {
        check_unit_name(unit)?;
        let manager = self.manager().await?;
        let changes = self
            .reply(
                "DisableUnitFiles",
                manager.disable_unit_files(&[unit], false),
            )
            .await
            .map_err(|e| no_such_unit(e, unit))?;
        self.reload().await?;
        Ok(changes.into_iter().map(change).collect())
    }

    /// `systemctl daemon-reload`: systemd re-reads all unit files. The reply comes once the
    /// reload is over.
    pub async fn reload(&self) -> Result<(), SystemError> {
        let manager = self.manager().await?;
        self.reply("Reload", manager.reload()).await
    }
}

fn change((kind, path, destination): UnitFileChangeTuple) -> UnitFileChange {
    UnitFileChange {
        kind,
        path,
        destination,
    }
}

/// Refuses names systemd would read differently from what the caller meant: the empty name means
/// "the caller's own unit" to the manager (`bus_get_unit_by_name`), and a path makes
/// `EnableUnitFiles` link a file from outside the unit search path.
fn check_unit_name(unit: &str) -> Result<(), SystemError> {
    if unit.is_empty() {
        return Err(SystemError::Invalid(
            "an empty unit name (systemd would take it as the caller's own unit)".into(),
        ));
    }
    if unit.contains('/') {
        return Err(SystemError::Invalid(format!(
            "{unit:?} is a path, not a unit name"
        )));
    }
    Ok(())
}

/// systemd's NoSuchUnit as [`SystemError::NoSuchUnit`] with the unit's name.
fn no_such_unit(e: SystemError, unit: &str) -> SystemError {
    match e {
        SystemError::Refused {
            service: Service::Systemd,
            name,
            message,
        } if name == NO_SUCH_UNIT => SystemError::NoSuchUnit {
            unit: unit.to_string(),
            message,
        },
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_results_round_trip() {
        for s in [
            "done",
            "canceled",
            "timeout",
            "failed",
            "dependency",
            "skipped",
            "frozen",
        ] {
            assert_eq!(JobResult::parse(s).as_str(), s);
        }
        assert!(JobResult::Done.succeeded());
        assert!(JobResult::Skipped.succeeded());
        assert!(!JobResult::Failed.succeeded());
        assert!(!JobResult::parse("once").succeeded());
    }

    #[test]
    fn unit_names_that_mean_something_else_are_refused() {
        assert!(matches!(check_unit_name(""), Err(SystemError::Invalid(_))));
        assert!(matches!(
            check_unit_name("/etc/systemd/system/x.service"),
            Err(SystemError::Invalid(_))
        ));
        assert!(check_unit_name("rdma-load-modules@rdma.service").is_ok());
    }

    #[test]
    fn status_helpers() {
        let s = UnitStatus {
            id: "opensm.service".into(),
            load_state: "not-found".into(),
            active_state: "inactive".into(),
            sub_state: "dead".into(),
            unit_file_state: String::new(),
        };
        assert!(!s.installed() && !s.active() && !s.enabled());
    }

    #[test]
    fn no_such_unit_is_named() {
        let e = SystemError::Refused {
            service: Service::Systemd,
            name: NO_SUCH_UNIT.into(),
            message: "Unit x.service not found.".into(),
        };
        assert!(matches!(
            no_such_unit(e, "x.service"),
            SystemError::NoSuchUnit { unit, .. } if unit == "x.service"
        ));
    }
}
