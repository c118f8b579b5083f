//! A stand-in for systemd's manager on a private bus: `org.freedesktop.systemd1` with
//! `/org/freedesktop/systemd1` (org.freedesktop.systemd1.Manager: LoadUnit, StartUnit,
//! StopUnit, RestartUnit, EnableUnitFiles, DisableUnitFiles, Reload, signal JobRemoved) and one
//! object per loaded unit (`/org/freedesktop/systemd1/unit/<escaped name>`,
//! org.freedesktop.systemd1.Unit: Id, LoadState, ActiveState, SubState, UnitFileState).
//!
//! Units live in a table the test fills ([`StandInSystemd::add_unit`]); a name not in the table
//! is a unit that is not installed, which loads as systemd's "not-found" stub. Jobs end after a
//! short delay with the result the unit is scripted for, changing the unit's state first and
//! then emitting `JobRemoved`, as systemd does.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use zbus::object_server::{ObjectServer, SignalEmitter};
use zbus::zvariant::{ObjectPath, OwnedObjectPath};
use zbus::Connection;

use super::{lock, NamedError};
use crate::bus::PrivateBus;

const BUS_NAME: &str = "org.freedesktop.systemd1";
const MANAGER_PATH: &str = "/org/freedesktop/systemd1";
const NO_SUCH_UNIT: &str = "org.freedesktop.systemd1.NoSuchUnit";
const UNIT_MASKED: &str = "org.freedesktop.systemd1.UnitMasked";
const INVALID_ARGS: &str = "org.freedesktop.DBus.Error.InvalidArgs";
/// systemd 252's job modes (job.c, job_mode_table).
const JOB_MODES: [&str; 8] = [
    "fail",
    "replace",
    "replace-irreversibly",
    "isolate",
    "flush",
    "ignore-dependencies",
    "ignore-requirements",
    "triggering",
];

/// One unit of the stand-in's table: its states and how its jobs end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StandInUnit {
    pub load_state: String,
    pub active_state: String,
    pub sub_state: String,
    pub unit_file_state: String,
    /// The result of a start job (and of a restart's): "done", "failed", "timeout", ...
    pub start_result: String,
    /// The result of a stop job.
    pub stop_result: String,
    /// Whether the unit file has an [Install] section.
    pub install_info: bool,
    /// Jobs of this unit never end: no JobRemoved is sent.
    pub hangs: bool,
}

impl StandInUnit {
    /// An installed, stopped, disabled service whose jobs succeed.
    pub fn service() -> Self {
        Self {
            load_state: "loaded".into(),
            active_state: "inactive".into(),
            sub_state: "dead".into(),
            unit_file_state: "disabled".into(),
            start_result: "done".into(),
            stop_result: "done".into(),
            install_info: true,
            hangs: false,
        }
    }

    pub fn running(mut self) -> Self {
        self.active_state = "active".into();
        self.sub_state = "running".into();
        self
    }

    pub fn enabled(mut self) -> Self {
        self.unit_file_state = "enabled".into();
        self
    }

    /// A unit file without [Install] section ("static").
    pub fn static_unit(mut self) -> Self {
        self.unit_file_state = "static".into();
        self.install_info = false;
        self
    }

    /// Masked: linked to /dev/null.
    pub fn masked(mut self) -> Self {
        self.load_state = "masked".into();
        self.unit_file_state = "masked".into();
        self
    }

    /// Start (and restart) jobs end with `result` and leave the unit failed.
    pub fn failing(mut self, result: &str) -> Self {
        self.start_result = result.into();
        self
    }

    /// Jobs never end.
    pub fn hanging(mut self) -> Self {
        self.hangs = true;
        self
    }
}

/// What a unit does when its start or restart job succeeds (load modules, say), awaited
/// before JobRemoved goes out, as a real unit's ExecStart has run by then.
pub type OnStarted = Arc<
    dyn Fn(String) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> + Send + Sync,
>;

struct Hook(OnStarted);

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnStarted")
    }
}

#[derive(Debug)]
struct State {
    on_started: Option<Hook>,
    units: BTreeMap<String, StandInUnit>,
    calls: Vec<String>,
    next_job: u32,
    reloads: u32,
    job_delay: Duration,
    signal_before_reply: bool,
    /// Where masking symlinks and enablement symlinks are, as systemd names them in messages.
    config_dir: String,
}

type Shared = Arc<Mutex<State>>;

/// systemd's object path label escaping (bus-label.c, bus_label_escape): every character other
/// than an ASCII letter or digit (and a leading digit) becomes `_` and two hex digits.
pub fn escape_label(s: &str) -> String {
    if s.is_empty() {
        return "_".into();
    }
    let mut out = String::new();
    for (i, b) in s.bytes().enumerate() {
        if b.is_ascii_alphabetic() || (i > 0 && b.is_ascii_digit()) {
            out.push(b as char);
        } else {
            out.push_str(&format!("_{b:02x}"));
        }
    }
    out
}

/// A unit's object path.
pub fn unit_path(name: &str) -> String {
    format!("{MANAGER_PATH}/unit/{}", escape_label(name))
}

/// The unit file behind a name: a template instance's file is the template's.
fn unit_file_of(name: &str) -> String {
    match (name.find('@'), name.rfind('.')) {
        (Some(at), Some(dot)) if at < dot => format!("{}{}", &name[..=at], &name[dot..]),
        _ => name.to_string(),
    }
}

struct Manager {
    state: Shared,
}

/// The unit object's properties, read from the table at each Get, so that tests see systemd's
/// view after every change.
struct Unit {
    name: String,
    state: Shared,
}

impl Unit {
    fn get(&self) -> StandInUnit {
        // A name outside the table is systemd's stub for a unit without file.
        lock(&self.state)
            .units
            .get(&self.name)
            .cloned()
            .unwrap_or_else(|| StandInUnit {
                load_state: "not-found".into(),
                active_state: "inactive".into(),
                sub_state: "dead".into(),
                unit_file_state: String::new(),
                ..StandInUnit::service()
            })
    }
}

#[zbus::interface(name = "org.freedesktop.systemd1.Unit")]
impl Unit {
    #[zbus(property(emits_changed_signal = "const"), name = "Id")]
    fn id(&self) -> String {
        self.name.clone()
    }

    #[zbus(property, name = "LoadState")]
    fn load_state(&self) -> String {
        self.get().load_state
    }

    #[zbus(property, name = "ActiveState")]
    fn active_state(&self) -> String {
        self.get().active_state
    }

    #[zbus(property, name = "SubState")]
    fn sub_state(&self) -> String {
        self.get().sub_state
    }

    #[zbus(property, name = "UnitFileState")]
    fn unit_file_state(&self) -> String {
        self.get().unit_file_state
    }
}

/// Which job a method enqueues.
#[derive(Clone, Copy)]
enum Job {
    Start,
    Stop,
    Restart,
}

impl Manager {
    fn record(&self, call: String) {
        lock(&self.state).calls.push(call);
    }

    /// What systemd's manager_load_unit does for the stand-in: the unit gets its object.
    async fn load(&self, server: &ObjectServer, name: &str) -> Result<OwnedObjectPath, NamedError> {
        if name.is_empty() {
            // The real manager answers for the caller's own unit; no test caller has one.
            return Err(NamedError::new(
                NO_SUCH_UNIT,
                "Client not member of any unit.",
            ));
        }
        let path = unit_path(name);
        let unit = Unit {
            name: name.to_string(),
            state: self.state.clone(),
        };
        // Ok(false) when the unit already has its object.
        server.at(path.as_str(), unit).await?;
        OwnedObjectPath::try_from(path).map_err(|e| NamedError::new(INVALID_ARGS, e.to_string()))
    }

    async fn enqueue(
        &self,
        server: &ObjectServer,
        emitter: &SignalEmitter<'_>,
        job: Job,
        name: &str,
        mode: &str,
    ) -> Result<OwnedObjectPath, NamedError> {
        if !JOB_MODES.contains(&mode) {
            return Err(NamedError::new(
                INVALID_ARGS,
                format!("Job mode {mode} invalid"),
            ));
        }
        self.load(server, name).await?;
        // bus_unit_validate_load_state's refusals, with its messages.
        let (id, result, hangs, before_reply, delay) = {
            let mut st = lock(&self.state);
            let Some(unit) = st.units.get(name).cloned() else {
                return Err(NamedError::new(
                    NO_SUCH_UNIT,
                    format!("Unit {name} not found."),
                ));
            };
            if unit.load_state == "masked" {
                return Err(NamedError::new(
                    UNIT_MASKED,
                    format!("Unit {name} is masked."),
                ));
            }
            st.next_job += 1;
            let result = match job {
                Job::Start | Job::Restart => unit.start_result.clone(),
                Job::Stop => unit.stop_result.clone(),
            };
            (
                st.next_job,
                result,
                unit.hangs,
                st.signal_before_reply,
                st.job_delay,
            )
        };
        let job_path = format!("{MANAGER_PATH}/job/{id}");
        let path = OwnedObjectPath::try_from(job_path.clone())
            .map_err(|e| NamedError::new(INVALID_ARGS, e.to_string()))?;
        if hangs {
            return Ok(path);
        }
        if before_reply {
            // The signal overtakes the reply: a client that subscribes only after the reply
            // arrives misses it.
            finish_job(&self.state, job, name, &result);
            run_on_started(&self.state, job, name, &result).await;
            Manager::job_removed(emitter, id, path.as_ref(), name, &result).await?;
            return Ok(path);
        }
        let state = self.state.clone();
        let emitter = emitter.to_owned();
        let name = name.to_string();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            finish_job(&state, job, &name, &result);
            run_on_started(&state, job, &name, &result).await;
            if let Ok(job) = ObjectPath::try_from(job_path.as_str()) {
                // The test's own connection closing ends the stand-in; nothing to report then.
                let _ = Manager::job_removed(&emitter, id, job, &name, &result).await;
            }
        });
        Ok(path)
    }
}

/// The unit's `on_started` effect after a start or restart that succeeded.
async fn run_on_started(state: &Shared, job: Job, name: &str, result: &str) {
    if matches!(job, Job::Stop) || result != "done" {
        return;
    }
    let hook = lock(state).on_started.as_ref().map(|h| h.0.clone());
    if let Some(hook) = hook {
        hook(name.to_string()).await;
    }
}

/// The unit's state once its job ended, set before JobRemoved goes out.
fn finish_job(state: &Shared, job: Job, name: &str, result: &str) {
    let mut st = lock(state);
    let Some(unit) = st.units.get_mut(name) else {
        return;
    };
    let (active, sub) = match (job, result) {
        (Job::Stop, _) => ("inactive", "dead"),
        (_, "done") => ("active", "running"),
        _ => ("failed", "failed"),
    };
    unit.active_state = active.into();
    unit.sub_state = sub.into();
}

#[zbus::interface(name = "org.freedesktop.systemd1.Manager")]
impl Manager {
    async fn load_unit(
        &self,
        name: String,
        #[zbus(object_server)] server: &ObjectServer,
    ) -> Result<OwnedObjectPath, NamedError> {
        self.record(format!("LoadUnit {name}"));
        self.load(server, &name).await
    }

    async fn start_unit(
        &self,
        name: String,
        mode: String,
        #[zbus(object_server)] server: &ObjectServer,
        #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
    ) -> Result<OwnedObjectPath, NamedError> {
        self.record(format!("StartUnit {name} {mode}"));
        self.enqueue(server, &emitter, Job::Start, &name, &mode)
            .await
    }

    async fn stop_unit(
        &self,
        name: String,
        mode: String,
        #[zbus(object_server)] server: &ObjectServer,
        #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
    ) -> Result<OwnedObjectPath, NamedError> {
        self.record(format!("StopUnit {name} {mode}"));
        self.enqueue(server, &emitter, Job::Stop, &name, &mode)
            .await
    }

    async fn restart_unit(
        &self,
        name: String,
        mode: String,
        #[zbus(object_server)] server: &ObjectServer,
        #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
    ) -> Result<OwnedObjectPath, NamedError> {
        self.record(format!("RestartUnit {name} {mode}"));
        self.enqueue(server, &emitter, Job::Restart, &name, &mode)
            .await
    }

    /// (carries_install_info, changes). Errors as install.c's for a file that does not exist
    /// or is masked.
    async fn enable_unit_files(
        &self,
        files: Vec<String>,
        runtime: bool,
        force: bool,
    ) -> Result<(bool, Vec<(String, String, String)>), NamedError> {
        self.record(format!(
            "EnableUnitFiles [{}] runtime={runtime} force={force}",
            files.join(",")
        ));
        let mut st = lock(&self.state);
        let config_dir = st.config_dir.clone();
        let mut carries = true;
        let mut changes = Vec::new();
        for name in &files {
            let Some(unit) = st.units.get_mut(name) else {
                return Err(NamedError::new(
                    NO_SUCH_UNIT,
                    format!("Unit file {name} does not exist."),
                ));
            };
            if unit.unit_file_state == "masked" {
                // install.c names the masking symlink's path.
                return Err(NamedError::new(
                    UNIT_MASKED,
                    format!("Unit file {config_dir}/{name} is masked."),
                ));
            }
            if !unit.install_info {
                carries = false;
                continue;
            }
            let (state, dir) = if runtime {
                ("enabled-runtime", "/run/systemd/system")
            } else {
                ("enabled", config_dir.as_str())
            };
            if unit.unit_file_state == state {
                continue;
            }
            unit.unit_file_state = state.into();
            changes.push((
                "symlink".to_string(),
                format!("{dir}/multi-user.target.wants/{name}"),
                format!("/usr/lib/systemd/system/{}", unit_file_of(name)),
            ));
        }
        Ok((carries, changes))
    }

    async fn disable_unit_files(
        &self,
        files: Vec<String>,
        runtime: bool,
    ) -> Result<Vec<(String, String, String)>, NamedError> {
        self.record(format!(
            "DisableUnitFiles [{}] runtime={runtime}",
            files.join(",")
        ));
        let mut st = lock(&self.state);
        let config_dir = st.config_dir.clone();
        let mut changes = Vec::new();
        for name in &files {
            let Some(unit) = st.units.get_mut(name) else {
                return Err(NamedError::new(
                    NO_SUCH_UNIT,
                    format!("Unit file {name} does not exist."),
                ));
            };
            let (state, dir) = if runtime {
                ("enabled-runtime", "/run/systemd/system")
            } else {
                ("enabled", config_dir.as_str())
            };
            if unit.unit_file_state != state {
                continue;
            }
            unit.unit_file_state = "disabled".into();
            changes.push((
                "unlink".to_string(),
                format!("{dir}/multi-user.target.wants/{name}"),
                String::new(),
            ));
        }
        Ok(changes)
    }

    async fn reload(&self) {
        self.record("Reload".into());
        lock(&self.state).reloads += 1;
    }

    #[zbus(signal)]
    async fn job_removed(
        emitter: &SignalEmitter<'_>,
        id: u32,
        job: ObjectPath<'_>,
        unit: &str,
        result: &str,
    ) -> zbus::Result<()>;
}

/// The stand-in, serving on its own connection to a private bus until dropped.
pub struct StandInSystemd {
    conn: Connection,
    state: Shared,
}

impl StandInSystemd {
    /// Serves the manager on `bus` and takes `org.freedesktop.systemd1`.
    pub async fn start(bus: &PrivateBus) -> Result<Self> {
        let conn = bus.connect().await?;
        let state: Shared = Arc::new(Mutex::new(State {
            on_started: None,
            units: BTreeMap::new(),
            calls: Vec::new(),
            next_job: 0,
            reloads: 0,
            job_delay: Duration::from_millis(20),
            signal_before_reply: false,
            config_dir: "/etc/systemd/system".into(),
        }));
        conn.object_server()
            .at(
                MANAGER_PATH,
                Manager {
                    state: state.clone(),
                },
            )
            .await
            .context("serving the manager")?;
        conn.request_name(BUS_NAME)
            .await
            .context("taking org.freedesktop.systemd1")?;
        Ok(Self { conn, state })
    }

    /// Adds (or replaces) a unit in the table: an installed unit.
    pub fn add_unit(&self, name: &str, unit: StandInUnit) {
        lock(&self.state).units.insert(name.to_string(), unit);
    }

    /// A unit's current state, `None` when it is not installed.
    pub fn unit(&self, name: &str) -> Option<StandInUnit> {
        lock(&self.state).units.get(name).cloned()
    }

    /// Every method call so far, in order ("StartUnit nfs-server.service replace", ...).
    pub fn calls(&self) -> Vec<String> {
        lock(&self.state).calls.clone()
    }

    /// How many times `Reload` was called.
    pub fn reloads(&self) -> u32 {
        lock(&self.state).reloads
    }

    /// How long jobs take before they end.
    pub fn set_job_delay(&self, delay: Duration) {
        lock(&self.state).job_delay = delay;
    }

    /// The configuration directory systemd would report in paths (/etc/systemd/system for the
    /// system manager; a user manager's is its own).
    pub fn set_config_dir(&self, dir: &str) {
        lock(&self.state).config_dir = dir.to_string();
    }

    /// What started units do (see [`OnStarted`]).
    pub fn set_on_started(&self, hook: OnStarted) {
        lock(&self.state).on_started = Some(Hook(hook));
    }

    /// Makes jobs end, and JobRemoved go out, before the method's reply.
    pub fn set_signal_before_reply(&self, yes: bool) {
        lock(&self.state).signal_before_reply = yes;
    }

    /// The stand-in's connection (to emit a forged signal from another sender, say).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_as_systemd_does() {
        assert_eq!(escape_label("ok.service"), "ok_2eservice");
        assert_eq!(
            escape_label("rdma-load-modules@rdma.service"),
            "rdma_2dload_2dmodules_40rdma_2eservice"
        );
        assert_eq!(escape_label("1a_b"), "_31a_5fb");
        assert_eq!(escape_label(""), "_");
    }

    #[test]
    fn template_instances_come_from_the_template_file() {
        assert_eq!(
            unit_file_of("rdma-load-modules@rdma.service"),
            "rdma-load-modules@.service"
        );
        assert_eq!(unit_file_of("opensm.service"), "opensm.service");
    }
}
