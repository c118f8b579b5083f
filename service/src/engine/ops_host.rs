//! Host setup (Red Hat's "Configuring InfiniBand and RDMA networks"): the kernel modules
//! rdma-core loads, the memlock limit of the `rdma` group, NFS over RDMA on the server and the
//! subnet manager. Files are read and written through [`Host`] (so the simulated host keeps
//! them in its tree), units and firewall ports go through [`SystemServices`]. The state is
//! read at start, after every change and at every full re-read (hand edits show within a
//! minute); the file formats are the pure `hostconf::{rdma_modules, memlock, nfs_conf}`.
//!
//! Where each part runs: files are read and written on the engine task (engine jobs), so they
//! are serialised with every other change; systemd and firewalld are never called there,
//! since a systemd job may take up to its timeout and the engine must keep polling ports,
//! handling kernel events and publishing meanwhile. A Host method holds a lock of its own
//! (host-setup operations never overlap), runs its file steps as engine jobs and its unit and
//! firewall steps on the caller's task, then has the engine re-read the files and publish with
//! the units' status it asked for. The periodic re-read reads the files on the engine and asks
//! for the units' status from a task of its own, which sends the answer back as an engine job.
//!
//! No TOML here: the files themselves are the persisted state, as for the naming rules.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use serde::Serialize;

use super::{Engine, EngineHandle, OpError};
use crate::hostconf::memlock::{self, DaemonOutcome, LimitSetting, MemlockValue, NoteKind};
use crate::hostconf::nfs_conf::{self, NfsRdmaRequest, NfsRdmaState};
use crate::hostconf::rdma_modules::{self, ModuleChange, ModulesFile, RdmaModulesError};
use crate::kernel::Host;
use crate::system::{
    Protocol, SystemError, SystemServices, UnitStatus, NFS_SERVER_UNIT, OPENSM_UNIT,
    RDMA_LOAD_MODULES_UNIT,
};

/// Said after every memlock change and shown with the limits: pam_limits applies limits when
/// a session opens.
pub const NEXT_LOGIN_NOTE: &str = "Limits apply to login sessions opened afterwards (log in \
    again and check with \"ulimit -l\"); running sessions and services keep theirs.";

/// How includes are followed at most (each round reads the files the last one named).
const MAX_INCLUDE_ROUNDS: usize = 16;

/// One module line of `/etc/rdma/modules/*.conf`, as the Host object shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ModuleRow {
    /// The file's stem: "rdma", "infiniband", "roce", ...
    pub set: String,
    pub module: String,
    pub description: String,
    pub enabled: bool,
    /// `/sys/module/<name>` exists now.
    pub loaded: bool,
    pub line: u32,
}

/// What systemd says about a unit; all empty when systemd cannot be asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct UnitState {
    /// `loaded`, `not-found`, ...
    pub load_state: String,
    /// `active`, `inactive`, `failed`, ...
    pub active_state: String,
    /// `enabled`, `disabled`, `static`, ...
    pub unit_file_state: String,
}

/// The memlock limits of the daemon's own limits file: (soft, hard), empty without the file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ManagedLimits {
    pub soft: String,
    pub hard: String,
}

/// Everything host setup shows, as last read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HostSetupState {
    pub modules: Vec<ModuleRow>,
    pub modules_unit: String,
    pub memlock_soft: String,
    pub memlock_hard: String,
    pub memlock_origin: BTreeMap<String, String>,
    pub memlock_managed: ManagedLimits,
    pub memlock_notes: Vec<String>,
    pub nfs_rdma: bool,
    pub nfs_rdma_port: u16,
    pub nfs_rdma_origin: BTreeMap<String, String>,
    pub nfs_notes: Vec<String>,
    pub nfs_server: UnitState,
    pub firewalld: bool,
    pub opensm: UnitState,
}

/// How one step of a multi-step change ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StepOutcome {
    Done,
    Unchanged,
    Skipped,
    Failed,
    /// Not tried, because an earlier step failed.
    NotRun,
}

impl StepOutcome {
    /// The word the bus and the client show.
    pub fn as_str(self) -> &'static str {
        match self {
            StepOutcome::Done => "done",
            StepOutcome::Unchanged => "unchanged",
            StepOutcome::Skipped => "skipped",
            StepOutcome::Failed => "failed",
            StepOutcome::NotRun => "not-run",
        }
    }
}

/// One step of a multi-step change (SetNfsRdma, ApplyModules) and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// "nfs.conf", "modules", "firewall", "nfs-server", ...
    pub name: String,
    pub outcome: StepOutcome,
    /// What was done or why not, in words.
    pub detail: String,
}

fn step(name: &str, outcome: StepOutcome, detail: impl Into<String>) -> Step {
    Step {
        name: name.to_string(),
        outcome,
        detail: detail.into(),
    }
}

fn triple(s: &UnitStatus) -> UnitState {
    UnitState {
        load_state: s.load_state.clone(),
        active_state: s.active_state.clone(),
        unit_file_state: s.unit_file_state.clone(),
    }
}

/// A file's bytes; an unreadable file counts as absent (and says so in the log), since one
/// bad file must not hide the rest of the state.
async fn read_opt(host: &dyn Host, path: &str) -> Option<Vec<u8>> {
    match host.read_file(Path::new(path)).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(%path, error = %e, "cannot read a host setup file");
            None
        }
    }
}

async fn list(host: &dyn Host, dir: &str) -> Vec<String> {
    match host.list_dir(Path::new(dir)).await {
        Ok(names) => names.unwrap_or_default(),
        Err(e) => {
            tracing::warn!(%dir, error = %e, "cannot list a host setup directory");
            Vec::new()
        }
    }
}

async fn read_modules(host: &dyn Host) -> Vec<ModuleRow> {
    let mut rows = Vec::new();
    for name in list(host, rdma_modules::MODULES_DIR).await {
        // rdma-core's units name files by instance: only `<set>.conf` with a valid set name
        // can be loaded by `rdma-load-modules@<set>.service`.
        let Some(set) = name.strip_suffix(".conf") else {
            continue;
        };
        let Ok(path) = rdma_modules::modules_file_path(set) else {
            continue;
        };
        let Some(bytes) = read_opt(host, &path.to_string_lossy()).await else {
            continue;
        };
        for e in ModulesFile::parse(&bytes).modules() {
            let loaded = module_loaded(host, &e.module).await;
            rows.push(ModuleRow {
                set: set.to_string(),
                module: e.module,
                description: e.description.unwrap_or_default(),
                enabled: e.enabled,
                loaded,
                line: e.line,
            });
        }
    }
    rows
}

/// Whether a module (by any name a module list uses) is loaded now; unreadable reads as not.
async fn module_loaded(host: &dyn Host, module: &str) -> bool {
    for name in rdma_modules::sysfs_module_names(module) {
        if host.module_loaded(&name).await.unwrap_or(false) {
            return true;
        }
    }
    false
}

/// The modules a list enables, split into (loaded, not loaded) as the kernel has them now.
async fn enabled_modules_loaded(host: &dyn Host, set: &str) -> (Vec<String>, Vec<String>) {
    let (mut loaded, mut missing) = (Vec::new(), Vec::new());
    let Ok(path) = rdma_modules::modules_file_path(set) else {
        return (loaded, missing);
    };
    let Some(bytes) = read_opt(host, &path.to_string_lossy()).await else {
        return (loaded, missing);
    };
    for e in ModulesFile::parse(&bytes).modules() {
        if !e.enabled {
            continue;
        }
        if module_loaded(host, &e.module).await {
            loaded.push(e.module);
        } else {
            missing.push(e.module);
        }
    }
    (loaded, missing)
}

/// What the restart of a module list's unit achieved, as the kernel shows it: systemd-modules-
/// load skips a module the kernel does not have without failing, so a `done` job does not
/// mean every module listed is loaded.
fn modules_step(unit: &str, loaded: &[String], missing: &[String]) -> Step {
    if missing.is_empty() {
        return step(
            "modules",
            StepOutcome::Done,
            format!("every module the list enables is loaded ({})", loaded.len()),
        );
    }
    step(
        "modules",
        StepOutcome::Failed,
        format!(
            "still not loaded: {}; systemd-modules-load skips a module this kernel does not have (check with modinfo) and logs why one failed to load (journalctl -u {unit})",
            missing.join(", ")
        ),
    )
}

async fn limits_sources(host: &dyn Host) -> memlock::LimitsSources {
    let mut dropins = Vec::new();
    for name in memlock::dropin_names(&list(host, memlock::LIMITS_D).await) {
        let path = format!("{}/{name}", memlock::LIMITS_D);
        if let Some(bytes) = read_opt(host, &path).await {
            dropins.push(memlock::LimitsFile { path, bytes });
        }
    }
    memlock::LimitsSources {
        limits_conf: read_opt(host, memlock::LIMITS_CONF).await,
        dropins,
    }
}

fn limit_text(s: &LimitSetting) -> String {
    s.value().map(MemlockValue::conf_text).unwrap_or_default()
}

fn read_memlock(st: &mut HostSetupState, sources: &memlock::LimitsSources) {
    let r = memlock::resolve_group_member(sources, memlock::RDMA_GROUP, None);
    st.memlock_soft = limit_text(&r.soft);
    st.memlock_hard = limit_text(&r.hard);
    st.memlock_origin.clear();
    let mut notes = Vec::new();
    for (key, s) in [("soft", &r.soft), ("hard", &r.hard)] {
        match s {
            LimitSetting::Set { origin, .. } => {
                st.memlock_origin.insert(key.into(), origin.to_string());
            }
            LimitSetting::NotSet { why } => notes.push(format!("The {key} limit is {why}.")),
        }
    }
    if r.soft_lowered_to_hard {
        notes.push(
            "The soft limit is above the hard one: pam_limits lowers it to the hard limit.".into(),
        );
    }
    st.memlock_managed = ManagedLimits::default();
    if let Some(d) = &r.daemon_file {
        let text = |v: Option<MemlockValue>| v.map(MemlockValue::conf_text).unwrap_or_default();
        st.memlock_managed = ManagedLimits {
            soft: text(d.settings.soft),
            hard: text(d.settings.hard),
        };
        for (key, o) in [("soft", &d.soft), ("hard", &d.hard)] {
            match o {
                DaemonOutcome::Overridden { by, domain, reason } => notes.push(format!(
                    "The {key} limit of {} is overridden by {by} ({domain}): {reason}.",
                    memlock::DAEMON_FILE
                )),
                DaemonOutcome::NoLimitsLine { by, domain } => notes.push(format!(
                    "{by} (\"{domain} -\") tells pam_limits to set no limits at all, so the {key} \
                    limit of {} does nothing.",
                    memlock::DAEMON_FILE
                )),
                _ => {}
            }
        }
    }
    for n in r
        .notes
        .iter()
        .filter(|n| n.kind == NoteKind::VersionDependent)
    {
        notes.push(format!("{}: {}", n.origin, n.reason));
    }
    for c in &r.conditional {
        notes.push(format!("{}: {}", c.origin, c.reason));
    }
    notes.extend(r.caveats.iter().cloned());
    notes.push(NEXT_LOGIN_NOTE.into());
    st.memlock_notes = notes;
}

async fn nfs_sources(host: &dyn Host) -> nfs_conf::NfsConfSources {
    async fn dropins(host: &dyn Host, dir: &str) -> Vec<nfs_conf::ConfFile> {
        let mut out = Vec::new();
        for name in nfs_conf::dropin_names(&list(host, dir).await) {
            let path = format!("{dir}/{name}");
            if let Some(bytes) = read_opt(host, &path).await {
                out.push(nfs_conf::ConfFile { path, bytes });
            }
        }
        out
    }
    let mut s = nfs_conf::NfsConfSources {
        usr_etc_conf: read_opt(host, nfs_conf::USR_NFS_CONF).await,
        usr_etc_dropins: dropins(host, nfs_conf::USR_NFS_CONF_D).await,
        etc_conf: read_opt(host, nfs_conf::NFS_CONF).await,
        etc_dropins: dropins(host, nfs_conf::NFS_CONF_D).await,
        includes: Vec::new(),
    };
    // Included files are read in rounds until the model names none it lacks; a missing one
    // is simply not added, which the model reads as nfs-utils does (skipped).
    for _ in 0..MAX_INCLUDE_ROUNDS {
        let wanted = nfs_conf::include_paths(&s);
        if wanted.is_empty() {
            break;
        }
        let mut added = false;
        for path in wanted {
            if let Some(bytes) = read_opt(host, &path).await {
                s.includes.push(nfs_conf::ConfFile { path, bytes });
                added = true;
            }
        }
        if !added {
            break;
        }
    }
    s
}

/// What a unit that started (or restarted) does to the kernel, for a simulated host whose
/// systemd must agree with the real one: `rdma-load-modules@<set>.service` runs
/// systemd-modules-load on `/etc/rdma/modules/<set>.conf`, which loads every module the list
/// enables (under its kernel name: svcrdma and xprtrdma are rpcrdma); `nfs-server.service`
/// has nfsd open its RDMA listener when nfs.conf enables it, and the kernel then loads the
/// transport (`svc_xprt_create` asks for `svcrdma`, an alias of rpcrdma).
pub async fn simulate_unit_started(
    sim: &crate::kernel::sim::SimHost,
    unit: &str,
) -> Result<(), crate::kernel::HostError> {
    let load = |module: &str| {
        let names = rdma_modules::sysfs_module_names(module);
        let real = names.last().cloned().unwrap_or_default();
        sim.set_module_loaded(&real, true)
    };
    if let Some(set) = unit
        .strip_prefix("rdma-load-modules@")
        .and_then(|u| u.strip_suffix(".service"))
    {
        let Ok(path) = rdma_modules::modules_file_path(set) else {
            return Ok(());
        };
        let Some(bytes) = sim.read_file(&path).await? else {
            return Ok(());
        };
        for e in ModulesFile::parse(&bytes).modules() {
            if e.enabled {
                load(&e.module)?;
            }
        }
    } else if unit == NFS_SERVER_UNIT {
        let sources = nfs_sources(sim).await;
        if matches!(
            nfs_conf::resolve(&sources).state,
            NfsRdmaState::Enabled { .. }
        ) {
            load("svcrdma")?;
        }
    }
    Ok(())
}

fn read_nfs(st: &mut HostSetupState, sources: &nfs_conf::NfsConfSources) {
    let r = nfs_conf::resolve(sources);
    let (on, port) = match &r.state {
        NfsRdmaState::Enabled { port } => (true, port.number().unwrap_or(0)),
        NfsRdmaState::Disabled | NfsRdmaState::LegacyPort { .. } => (false, 0),
    };
    st.nfs_rdma = on;
    st.nfs_rdma_port = port;
    st.nfs_rdma_origin.clear();
    if let Some(a) = &r.rdma {
        st.nfs_rdma_origin
            .insert("rdma".into(), a.origin.to_string());
    }
    if let Some(a) = &r.rdma_port {
        st.nfs_rdma_origin
            .insert("rdma-port".into(), a.origin.to_string());
    }
    let mut notes: Vec<String> = r
        .notes
        .iter()
        .map(|n| format!("{}: {}", n.origin, n.text))
        .collect();
    if let NfsRdmaState::LegacyPort { port } = &r.state {
        notes.push(format!(
            "rdma holds a port ({}), the form before nfs-utils 2.4.2: only rpc.nfsd listens on \
            it, nfsdctl does not",
            port.number().map(|p| p.to_string()).unwrap_or_default()
        ));
    }
    if let Some(d) = &r.daemon_dropin {
        for (key, o) in [("rdma", &d.rdma), ("rdma-port", &d.rdma_port)] {
            if let nfs_conf::KeyOutcome::Overridden { by } = o {
                notes.push(format!(
                    "{key} of {} is overridden by {by}, read after it",
                    nfs_conf::DAEMON_DROPIN
                ));
            }
        }
    }
    notes.push(
        "Settings apply when nfs-server.service next starts (SetNfsRdma restarts it).".into(),
    );
    st.nfs_notes = notes;
}

async fn unit(system: &dyn SystemServices, name: &str) -> UnitState {
    match system.unit_status(name).await {
        Ok(s) => triple(&s),
        Err(e) => {
            tracing::debug!(unit = name, error = %e, "cannot ask systemd about a unit");
            UnitState::default()
        }
    }
}

/// What systemd and firewalld say about host setup's units: asked off the engine task, since
/// each call may wait for its timeout when systemd is slow.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct UnitsStatus {
    modules_unit: String,
    nfs_server: UnitState,
    firewalld: bool,
    opensm: UnitState,
}

/// What host-setup operations share between the callers' tasks and the engine.
pub(super) struct HostSetupShared {
    system: Arc<dyn SystemServices>,
    /// Held by each Host method for its whole run: host-setup operations never overlap.
    lock: tokio::sync::Mutex<()>,
    /// Numbers each asking of the units' status, so that an older answer never replaces a
    /// newer one.
    status_seq: AtomicU64,
    /// A periodic asking is under way.
    fetching: AtomicBool,
}

impl HostSetupShared {
    pub(super) fn new(system: Arc<dyn SystemServices>) -> Self {
        HostSetupShared {
            system,
            lock: tokio::sync::Mutex::new(()),
            status_seq: AtomicU64::new(0),
            fetching: AtomicBool::new(false),
        }
    }

    fn next_status(&self) -> u64 {
        self.status_seq.fetch_add(1, Ordering::AcqRel) + 1
    }
}

/// Asks systemd about the three units and whether firewalld runs.
pub(super) async fn load_units_status(system: &dyn SystemServices) -> UnitsStatus {
    UnitsStatus {
        modules_unit: unit(system, RDMA_LOAD_MODULES_UNIT).await.active_state,
        nfs_server: unit(system, NFS_SERVER_UNIT).await,
        firewalld: system.firewalld_running().await.unwrap_or(false),
        opensm: unit(system, OPENSM_UNIT).await,
    }
}

impl HostSetupState {
    fn set_units(&mut self, u: UnitsStatus) {
        self.modules_unit = u.modules_unit;
        self.nfs_server = u.nfs_server;
        self.firewalld = u.firewalld;
        self.opensm = u.opensm;
    }

    fn units(&self) -> UnitsStatus {
        UnitsStatus {
            modules_unit: self.modules_unit.clone(),
            nfs_server: self.nfs_server.clone(),
            firewalld: self.firewalld,
            opensm: self.opensm.clone(),
        }
    }
}

/// Reads host setup's files; the units' fields are left empty.
async fn load_host_files(host: &dyn Host) -> HostSetupState {
    let mut st = HostSetupState {
        modules: read_modules(host).await,
        ..HostSetupState::default()
    };
    read_memlock(&mut st, &limits_sources(host).await);
    read_nfs(&mut st, &nfs_sources(host).await);
    st
}

/// Reads everything host setup shows (at start, before the engine task runs).
pub(super) async fn load_host_setup(
    host: &dyn Host,
    system: &dyn SystemServices,
) -> HostSetupState {
    let mut st = load_host_files(host).await;
    st.set_units(load_units_status(system).await);
    st
}

fn modules_error(e: RdmaModulesError) -> OpError {
    OpError::InvalidArgument(e.to_string())
}

/// A systemd or firewalld failure in the caller's terms.
fn system_error(e: SystemError) -> OpError {
    let m = e.to_string();
    match e {
        SystemError::NoSuchUnit { .. } => OpError::NotFound(m),
        SystemError::NotRunning { .. } => OpError::NotSupported(m),
        SystemError::Invalid(_) => OpError::InvalidArgument(m),
        _ => OpError::Failed(m),
    }
}

fn modules_path(set: &str) -> Result<String, OpError> {
    rdma_modules::modules_file_path(set)
        .map(|p| p.to_string_lossy().into_owned())
        .map_err(modules_error)
}

fn absent_modules_file(path: &str) -> OpError {
    OpError::NotFound(format!(
        "{path} does not exist: rdma-core provides the module lists (install rdma-core)"
    ))
}

fn modules_unit(set: &str) -> String {
    format!("rdma-load-modules@{set}.service")
}

/// The not-run steps after a failed one.
fn not_run(steps: &mut Vec<Step>, names: &[&str]) {
    for n in names {
        steps.push(step(n, StepOutcome::NotRun, "an earlier step failed"));
    }
}

/// Host methods. Each holds the host-setup lock for its whole run, so host-setup operations
/// never overlap; its file steps run as engine jobs (serialised with every other change to
/// the host), its systemd and firewalld steps run here, on the caller's task, so that a slow
/// or hung systemd job (up to the job timeout) never holds the engine: the port poll, kernel
/// events and publishing go on meanwhile. At the end the engine re-reads the files and
/// publishes the Host object with the units' status asked here.
impl EngineHandle {
    /// Asks systemd and firewalld here, then has the engine re-read the files and publish;
    /// returns the state published.
    async fn refresh_host_setup(&self) -> Result<HostSetupState, OpError> {
        let seq = self.host_setup.next_status();
        let units = load_units_status(self.host_setup.system.as_ref()).await;
        self.call(move |e| {
            Box::pin(async move {
                e.apply_units_status(seq, units, true).await;
                Ok(e.state.host_setup.clone())
            })
        })
        .await
    }

    pub async fn set_module_enabled(
        &self,
        set: &str,
        module: &str,
        enabled: bool,
    ) -> Result<(), OpError> {
        let _serial = self.host_setup.lock.lock().await;
        let (set, module) = (set.to_string(), module.to_string());
        let r = self
            .call(move |e| {
                Box::pin(async move {
                    let path = modules_path(&set)?;
                    rdma_modules::validate_module_name(&module).map_err(modules_error)?;
                    e.edit_module(&path, &module, enabled).await.map(|_| ())
                })
            })
            .await;
        self.refresh_host_setup().await?;
        r
    }

    pub async fn apply_modules(&self, set: &str) -> Result<Vec<Step>, OpError> {
        let _serial = self.host_setup.lock.lock().await;
        let unit = modules_unit(set);
        let owned = set.to_string();
        self.call(move |e| Box::pin(async move { e.modules_file_exists(&owned).await }))
            .await?;
        let r = self.host_setup.system.restart_unit(&unit).await;
        self.refresh_host_setup().await?;
        match r {
            Ok(res) => {
                let (loaded, missing) = enabled_modules_loaded(self.host.as_ref(), set).await;
                Ok(vec![
                    step(
                        "restart",
                        StepOutcome::Done,
                        format!("{unit} restarted (job result {res}); modules already loaded stay loaded"),
                    ),
                    modules_step(&unit, &loaded, &missing),
                ])
            }
            Err(SystemError::JobFailed { result, .. }) => Ok(vec![step(
                "restart",
                StepOutcome::Failed,
                format!("the restart job of {unit} ended with result \"{result}\" (see journalctl -u {unit})"),
            )]),
            Err(e) => Err(system_error(e)),
        }
    }

    pub async fn set_memlock_limits(&self, soft: &str, hard: &str) -> Result<Vec<String>, OpError> {
        let invalid = |e: memlock::MemlockError| OpError::InvalidArgument(e.to_string());
        let s = MemlockValue::parse_setting(soft).map_err(invalid)?;
        let h = MemlockValue::parse_setting(hard).map_err(invalid)?;
        let text = memlock::render_daemon_file(memlock::RDMA_GROUP, s, h).map_err(invalid)?;
        let _serial = self.host_setup.lock.lock().await;
        let r = self
            .call(move |e| Box::pin(async move { e.write_memlock_file(&text).await }))
            .await;
        let st = self.refresh_host_setup().await?;
        r.map(|_| st.memlock_notes)
    }

    pub async fn reset_memlock_limits(&self) -> Result<(), OpError> {
        let _serial = self.host_setup.lock.lock().await;
        let r = self
            .call(|e| {
                Box::pin(async move {
                    e.host
                        .remove_file(Path::new(memlock::DAEMON_FILE))
                        .await
                        .map_err(OpError::from_host)
                })
            })
            .await;
        self.refresh_host_setup().await?;
        r
    }

    pub async fn set_nfs_rdma(&self, enabled: bool, port: u16) -> Result<Vec<Step>, OpError> {
        let invalid = |e: nfs_conf::NfsConfError| OpError::InvalidArgument(e.to_string());
        let request = if enabled {
            let port = if port == 0 {
                nfs_conf::NFSRDMA_PORT
            } else {
                nfs_conf::validate_port(u32::from(port)).map_err(invalid)?
            };
            NfsRdmaRequest::Enable { port }
        } else {
            if port != 0 {
                return Err(OpError::InvalidArgument(format!(
                    "port {port} given when disabling NFS over RDMA: give 0 (the port only applies when enabling)"
                )));
            }
            NfsRdmaRequest::Disable
        };
        let _serial = self.host_setup.lock.lock().await;
        let steps = match request {
            NfsRdmaRequest::Enable { port } => self.enable_nfs_rdma(port).await?,
            NfsRdmaRequest::Disable => self.disable_nfs_rdma().await?,
        };
        self.refresh_host_setup().await?;
        Ok(steps)
    }

    async fn enable_nfs_rdma(&self, port: u16) -> Result<Vec<Step>, OpError> {
        // (1) the drop-in and (2) the modules, on the engine.
        let mut steps = self
            .call(move |e| Box::pin(async move { Ok(e.enable_nfs_rdma_files(port).await) }))
            .await?;
        if steps.iter().any(|s| s.outcome == StepOutcome::Failed) {
            return Ok(steps);
        }
        let system = self.host_setup.system.as_ref();
        // (3) the firewall, as the guide's firewall-cmd --add-port (runtime and permanent).
        match system.firewalld_running().await {
            Ok(false) => steps.push(step(
                "firewall",
                StepOutcome::Skipped,
                "firewalld does not run; nothing to open",
            )),
            Err(e) => {
                steps.push(step("firewall", StepOutcome::Failed, e.to_string()));
                not_run(&mut steps, &["nfs-server"]);
                return Ok(steps);
            }
            Ok(true) => {
                let mut added_any = false;
                let mut zone = String::new();
                for proto in [Protocol::Tcp, Protocol::Udp] {
                    match system.firewall_add_port("", port, proto).await {
                        Ok(a) => {
                            added_any |= a.runtime == crate::system::Added::Now
                                || a.permanent == crate::system::Added::Now;
                            zone = a.zone;
                        }
                        Err(e) => {
                            steps.push(step("firewall", StepOutcome::Failed, e.to_string()));
                            not_run(&mut steps, &["nfs-server"]);
                            return Ok(steps);
                        }
                    }
                }
                steps.push(step(
                    "firewall",
                    if added_any {
                        StepOutcome::Done
                    } else {
                        StepOutcome::Unchanged
                    },
                    format!("{port}/tcp and {port}/udp open in zone {zone}, runtime and permanent"),
                ));
            }
        }
        // (4) the server reads nfs.conf when it starts; the guide's server runs from boot
        // (`systemctl enable --now nfs-server`), or the RDMA listener is gone after a reboot.
        let restarted = restart_nfs_server(system).await;
        let server_ok = restarted.outcome == StepOutcome::Done;
        steps.push(restarted);
        if server_ok {
            steps.push(enable_nfs_server(system).await);
            // (5) the RDMA listener: nfsd loads the transport module (rpcrdma, alias svcrdma)
            // when it opens the rdma port; not loaded means no RDMA listener.
            steps.push(if module_loaded(self.host.as_ref(), "svcrdma").await {
                step(
                    "rdma listener",
                    StepOutcome::Done,
                    format!("svcrdma is loaded: nfsd listens for NFS over RDMA on port {port}"),
                )
            } else {
                step(
                    "rdma listener",
                    StepOutcome::Failed,
                    format!("svcrdma (rpcrdma) is not loaded after the restart, so nfsd has no RDMA listener: load it with modprobe svcrdma and restart nfs-server, and see journalctl -u {NFS_SERVER_UNIT}"),
                )
            });
        }
        Ok(steps)
    }

    async fn disable_nfs_rdma(&self) -> Result<Vec<Step>, OpError> {
        let mut steps = self
            .call(|e| Box::pin(async move { Ok(e.disable_nfs_rdma_files().await) }))
            .await?;
        if steps.iter().any(|s| s.outcome == StepOutcome::Failed) {
            return Ok(steps);
        }
        steps.push(restart_nfs_server(self.host_setup.system.as_ref()).await);
        Ok(steps)
    }

    /// Starts ("start"), stops ("stop"), enables ("enable") or disables ("disable")
    /// opensm.service.
    pub async fn subnet_manager(&self, verb: SmVerb) -> Result<(), OpError> {
        let _serial = self.host_setup.lock.lock().await;
        let r = subnet_manager(self.host_setup.system.as_ref(), verb).await;
        self.refresh_host_setup().await?;
        r
    }
}

async fn restart_nfs_server(system: &dyn SystemServices) -> Step {
    match system.unit_status(NFS_SERVER_UNIT).await {
        Ok(s) if s.load_state == "not-found" => {
            return step(
                "nfs-server",
                StepOutcome::Skipped,
                format!("{NFS_SERVER_UNIT} is not installed (nfs-utils)"),
            )
        }
        Ok(_) => {}
        Err(e) => return step("nfs-server", StepOutcome::Failed, e.to_string()),
    }
    match system.restart_unit(NFS_SERVER_UNIT).await {
        Ok(_) => step("nfs-server", StepOutcome::Done, format!("{NFS_SERVER_UNIT} restarted")),
        Err(SystemError::JobFailed { result, .. }) => step(
            "nfs-server",
            StepOutcome::Failed,
            format!(
                "the restart job of {NFS_SERVER_UNIT} ended with result \"{result}\" (see journalctl -u {NFS_SERVER_UNIT})"
            ),
        ),
        Err(e) => step("nfs-server", StepOutcome::Failed, e.to_string()),
    }
}

/// Enables nfs-server.service at boot, as the guide's `systemctl enable --now nfs-server`.
async fn enable_nfs_server(system: &dyn SystemServices) -> Step {
    match system.enable_unit(NFS_SERVER_UNIT).await {
        Ok(o) if !o.carries_install_info => step(
            "nfs-server at boot",
            StepOutcome::Skipped,
            format!("{NFS_SERVER_UNIT} has no [Install] section here: whatever starts it at boot is outside it"),
        ),
        Ok(o) if o.changes.is_empty() => step(
            "nfs-server at boot",
            StepOutcome::Unchanged,
            format!("{NFS_SERVER_UNIT} is enabled at boot"),
        ),
        Ok(_) => step(
            "nfs-server at boot",
            StepOutcome::Done,
            format!("{NFS_SERVER_UNIT} enabled at boot (systemctl enable nfs-server)"),
        ),
        Err(e) => step("nfs-server at boot", StepOutcome::Failed, e.to_string()),
    }
}

async fn subnet_manager(system: &dyn SystemServices, verb: SmVerb) -> Result<(), OpError> {
    let status = system
        .unit_status(OPENSM_UNIT)
        .await
        .map_err(system_error)?;
    if status.load_state == "not-found" {
        return Err(OpError::NotFound(format!(
            "{OPENSM_UNIT} is not installed (package opensm)"
        )));
    }
    let r = match verb {
        SmVerb::Start => system.start_unit(OPENSM_UNIT).await.map(|_| ()),
        SmVerb::Stop => system.stop_unit(OPENSM_UNIT).await.map(|_| ()),
        SmVerb::Enable => system.enable_unit(OPENSM_UNIT).await.map(|_| ()),
        SmVerb::Disable => system.disable_unit(OPENSM_UNIT).await.map(|_| ()),
    };
    r.map_err(|e| match e {
        SystemError::JobFailed { result, verb, .. } => OpError::Failed(format!(
            "the {verb} job of {OPENSM_UNIT} ended with result \"{result}\" (see journalctl -u {OPENSM_UNIT})"
        )),
        e => system_error(e),
    })
}

/// What is asked of opensm.service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmVerb {
    Start,
    Stop,
    Enable,
    Disable,
}

impl Engine {
    /// Re-reads host setup's files, keeps the units' status as last asked, and publishes the
    /// Host object when it changed.
    async fn refresh_host_files(&mut self) {
        let mut st = load_host_files(self.host.as_ref()).await;
        st.set_units(self.state.host_setup.units());
        self.publish_host_setup(st).await;
    }

    async fn publish_host_setup(&mut self, st: HostSetupState) {
        if st != self.state.host_setup {
            self.state.host_setup = st;
            self.publish(super::Dirty {
                host: true,
                ..super::Dirty::default()
            })
            .await;
        }
    }

    /// Takes the units' status asked off the engine as number `seq`, unless a status asked
    /// later was already taken. After an operation the files are re-read with it
    /// (`reread_files`); the periodic fetch read them just before it asked.
    async fn apply_units_status(&mut self, seq: u64, units: UnitsStatus, reread_files: bool) {
        let mut st = if reread_files {
            load_host_files(self.host.as_ref()).await
        } else {
            self.state.host_setup.clone()
        };
        if seq > self.units_status_seq {
            self.units_status_seq = seq;
            st.set_units(units);
        } else {
            st.set_units(self.state.host_setup.units());
        }
        self.publish_host_setup(st).await;
    }

    /// The periodic re-read: the files now, the units' status from a task of its own that
    /// sends it back as an engine job, so that a slow or hung systemd never stalls the poll.
    /// One such task at a time.
    pub(super) async fn refresh_host_setup(&mut self) {
        self.refresh_host_files().await;
        if self.host_setup.fetching.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = self.host_setup.clone();
        let commands = self.commands.clone();
        let nm = self.nm.clone();
        tokio::spawn(async move {
            let seq = shared.next_status();
            let units = load_units_status(shared.system.as_ref()).await;
            // NetworkManager's profiles too, so that IPoIB owners follow profiles added or
            // deleted with nmcli (within one re-read period).
            nm.refresh().await;
            shared.fetching.store(false, Ordering::Release);
            if let Some(tx) = commands.upgrade() {
                let job: super::Job = Box::new(move |e: &mut Engine| {
                    Box::pin(async move {
                        e.apply_units_status(seq, units, false).await;
                        e.sync_nm_owners().await;
                    })
                });
                let _ = tx.send(job).await;
            }
        });
    }

    /// Fails with NotFound when the set's modules file does not exist.
    async fn modules_file_exists(&self, set: &str) -> Result<(), OpError> {
        let path = modules_path(set)?;
        if self
            .host
            .read_file(Path::new(&path))
            .await
            .map_err(OpError::from_host)?
            .is_none()
        {
            return Err(absent_modules_file(&path));
        }
        Ok(())
    }

    /// Enables or disables one module in a list; the file is written only when it changes.
    async fn edit_module(
        &self,
        path: &str,
        module: &str,
        enabled: bool,
    ) -> Result<ModuleChange, OpError> {
        let bytes = self
            .host
            .read_file(Path::new(path))
            .await
            .map_err(OpError::from_host)?
            .ok_or_else(|| absent_modules_file(path))?;
        let edit = ModulesFile::parse(&bytes)
            .set_enabled(module, enabled)
            .map_err(modules_error)?;
        if edit.change != ModuleChange::Unchanged {
            self.host
                .write_file_atomic(Path::new(path), &edit.bytes)
                .await
                .map_err(OpError::from_host)?;
        }
        Ok(edit.change)
    }

    /// Writes the daemon's memlock file when its bytes differ.
    async fn write_memlock_file(&self, text: &str) -> Result<(), OpError> {
        let current = self
            .host
            .read_file(Path::new(memlock::DAEMON_FILE))
            .await
            .map_err(OpError::from_host)?;
        if current.as_deref() == Some(text.as_bytes()) {
            return Ok(());
        }
        self.host
            .write_file_atomic(Path::new(memlock::DAEMON_FILE), text.as_bytes())
            .await
            .map_err(OpError::from_host)
    }

    /// Writes the daemon's drop-in when its bytes differ; "done" or "unchanged".
    async fn write_dropin(&self, text: &str) -> Result<StepOutcome, String> {
        let path = Path::new(nfs_conf::DAEMON_DROPIN);
        let current = self.host.read_file(path).await.map_err(|e| e.to_string())?;
        if current.as_deref() == Some(text.as_bytes()) {
            return Ok(StepOutcome::Unchanged);
        }
        self.host
            .write_file_atomic(path, text.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        Ok(StepOutcome::Done)
    }

    /// The file steps of enabling NFS over RDMA; after a failed one, every later step
    /// (firewall and nfs-server included) is listed as not run.
    async fn enable_nfs_rdma_files(&self, port: u16) -> Vec<Step> {
        let mut steps = Vec::new();
        // (1) the drop-in.
        let text = match nfs_conf::render_dropin(NfsRdmaRequest::Enable { port }) {
            Ok(t) => t,
            Err(e) => {
                steps.push(step("nfs.conf", StepOutcome::Failed, e.to_string()));
                not_run(&mut steps, &["modules", "firewall", "nfs-server"]);
                return steps;
            }
        };
        match self.write_dropin(&text).await {
            Ok(o) => steps.push(step(
                "nfs.conf",
                o,
                format!(
                    "{}: [nfsd] rdma=y, rdma-port={port}",
                    nfs_conf::DAEMON_DROPIN
                ),
            )),
            Err(e) => {
                steps.push(step("nfs.conf", StepOutcome::Failed, e));
                not_run(&mut steps, &["modules", "firewall", "nfs-server"]);
                return steps;
            }
        }
        // (2) the modules the client and the server side need, loaded by rdma-core's unit.
        let path = format!("{}/rdma.conf", rdma_modules::MODULES_DIR);
        let mut changed = Vec::new();
        let mut failure = None;
        for m in ["xprtrdma", "svcrdma"] {
            match self.edit_module(&path, m, true).await {
                Ok(ModuleChange::Unchanged) => {}
                Ok(_) => changed.push(m),
                Err(OpError::NotFound(msg)) => {
                    failure = Some((StepOutcome::Skipped, msg));
                    break;
                }
                Err(e) => {
                    failure = Some((StepOutcome::Failed, e.to_string()));
                    break;
                }
            }
        }
        match failure {
            Some((StepOutcome::Failed, msg)) => {
                steps.push(step("modules", StepOutcome::Failed, msg));
                not_run(&mut steps, &["firewall", "nfs-server"]);
            }
            Some((o, msg)) => steps.push(step("modules", o, msg)),
            None if changed.is_empty() => steps.push(step(
                "modules",
                StepOutcome::Unchanged,
                format!("xprtrdma and svcrdma are enabled in {path}"),
            )),
            None => steps.push(step(
                "modules",
                StepOutcome::Done,
                format!("enabled {} in {path}", changed.join(" and ")),
            )),
        }
        steps
    }

    /// The file step of disabling NFS over RDMA; when it fails, nfs-server is listed as not
    /// run.
    async fn disable_nfs_rdma_files(&self) -> Vec<Step> {
        let mut steps = Vec::new();
        let sources = nfs_sources(self.host.as_ref()).await;
        let r = nfs_conf::resolve(&sources);
        let others_enable = !matches!(r.without_daemon_dropin, NfsRdmaState::Disabled);
        let has_dropin = sources
            .etc_dropins
            .iter()
            .any(|f| f.path == nfs_conf::DAEMON_DROPIN);
        let firewall_note = "the firewall port stays open (close it with firewall-cmd \
            --remove-port=PORT/tcp --remove-port=PORT/udp, with and without --permanent)";
        let outcome = if others_enable {
            // Another file enables RDMA: only an rdma=n read last turns it off.
            match nfs_conf::render_dropin(NfsRdmaRequest::Disable) {
                Ok(text) => self.write_dropin(&text).await.map(|o| {
                    step(
                        "nfs.conf",
                        o,
                        format!(
                            "{}: [nfsd] rdma=n, since another file enables RDMA; {firewall_note}",
                            nfs_conf::DAEMON_DROPIN
                        ),
                    )
                }),
                Err(e) => Err(e.to_string()),
            }
        } else if has_dropin {
            self.host
                .remove_file(Path::new(nfs_conf::DAEMON_DROPIN))
                .await
                .map(|_| {
                    step(
                        "nfs.conf",
                        StepOutcome::Done,
                        format!("removed {}; {firewall_note}", nfs_conf::DAEMON_DROPIN),
                    )
                })
                .map_err(|e| e.to_string())
        } else {
            Ok(step(
                "nfs.conf",
                StepOutcome::Unchanged,
                format!("no file enables NFS over RDMA; {firewall_note}"),
            ))
        };
        match outcome {
            Ok(s) => steps.push(s),
            Err(e) => {
                steps.push(step("nfs.conf", StepOutcome::Failed, e));
                not_run(&mut steps, &["nfs-server"]);
            }
        }
        steps
    }
}
