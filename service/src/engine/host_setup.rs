//! Host setup as read: what the Host object shows (`HostSetupState`: rdma-core's module
//! lists and which modules are loaded, the memlock limits of the `rdma` group, NFS over RDMA,
//! the units' status) from the files through [`Host`] and the units through
//! [`SystemServices`]. Read at start, after every Host method and at every full re-read;
//! the changes are in `ops_host.rs`. The files are read on the engine task; systemd and
//! firewalld are asked off it (see `ops_host.rs` for why), and their answer comes back
//! numbered, so that an older answer never replaces a newer one.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use serde::Serialize;

use super::{Engine, EngineHandle, OpError};
use crate::hostconf::memlock::{self, DaemonOutcome, LimitSetting, MemlockValue, NoteKind};
use crate::hostconf::nfs_conf::{self, NfsRdmaState};
use crate::hostconf::rdma_modules::{self, ModulesFile};
use crate::kernel::{Host, HostError};
use crate::system::{
    SystemServices, UnitStatus, NFS_SERVER_UNIT, OPENSM_UNIT, RDMA_LOAD_MODULES_UNIT,
};
use rdma_manager_dbus::text::quote_capped;

/// Said after every memlock change and shown with the limits: pam_limits applies limits when
/// a session opens.
pub const NEXT_LOGIN_NOTE: &str = "Limits apply to login sessions opened afterwards (log in \
    again and check with \"ulimit -l\"); running sessions and services keep theirs.";

/// How includes are followed at most (each round reads the files the last one named).
pub(super) const MAX_INCLUDE_ROUNDS: usize = 16;

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
    /// What kept a host setup file from being used whole, by its path: not a regular file,
    /// too large, unreadable (the errno), a directory that cannot be listed, or lines its
    /// reader skips. Shown in the root's `ConfigErrors`; the rest is read as if the file were
    /// absent or the lines not there.
    pub file_problems: FileProblems,
}

/// Problems of host setup's files, by path (see [`HostSetupState::file_problems`]).
pub type FileProblems = BTreeMap<String, String>;

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

pub(super) fn step(name: &str, outcome: StepOutcome, detail: impl Into<String>) -> Step {
    Step {
        name: name.to_string(),
        outcome,
        detail: detail.into(),
    }
}

pub(super) fn triple(s: &UnitStatus) -> UnitState {
    UnitState {
        load_state: s.load_state.clone(),
        active_state: s.active_state.clone(),
        unit_file_state: s.unit_file_state.clone(),
    }
}

/// A file's bytes; an unreadable file counts as absent, since one bad file must not hide the
/// rest of the state, and why it was not read goes into `problems` (and the log).
pub(super) async fn read_opt(
    host: &dyn Host,
    path: &str,
    problems: &mut FileProblems,
) -> Option<Vec<u8>> {
    match host.read_file(Path::new(path)).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(%path, error = %e, "cannot read a host setup file");
            problems.insert(path.to_string(), unread_reason(path, &e));
            None
        }
    }
}

/// Why a host setup file was not read, naming it: a file that is not regular or too large
/// says so in its own error; any other error is the errno of the open or the read.
fn unread_reason(path: &str, e: &HostError) -> String {
    match e {
        HostError::NotRegular { .. } | HostError::TooLarge { .. } => e.to_string(),
        HostError::Kernel { errno, .. } => format!(
            "{path} could not be read: {errno}; rdma-managerd reads host setup as if it were \
            absent"
        ),
        other => format!(
            "{path} could not be read: {other}; rdma-managerd reads host setup as if it were \
            absent"
        ),
    }
}

/// The module lists rdma-core ships. A listing leaves directories out, so these are read by
/// name as well: a directory in place of one is then reported, not passed over.
const SHIPPED_MODULE_SETS: [&str; 6] = ["rdma", "infiniband", "iwarp", "iwpmd", "opa", "roce"];

/// `names` with `also` added when it is not there: the daemon's own files are read by name
/// whatever a listing (which leaves directories out) says.
fn with_name(mut names: Vec<String>, also: &str) -> Vec<String> {
    if !names.iter().any(|n| n == also) {
        names.push(also.to_string());
        names.sort();
    }
    names
}

pub(super) async fn list(host: &dyn Host, dir: &str, problems: &mut FileProblems) -> Vec<String> {
    match host.list_dir(Path::new(dir)).await {
        Ok(names) => names.unwrap_or_default(),
        Err(e) => {
            tracing::warn!(%dir, error = %e, "cannot list a host setup directory");
            problems.insert(
                dir.to_string(),
                format!(
                    "{dir} could not be listed: {}; rdma-managerd reads host setup as if it \
                    were empty",
                    e.errno().map_or_else(|| e.to_string(), |n| n.to_string())
                ),
            );
            Vec::new()
        }
    }
}

/// The lines of `path` its reader skips, as one problem: each with its number, its text and
/// why.
fn skipped_lines(path: &str, lines: &[(u32, String, String)]) -> String {
    let each: Vec<String> = lines
        .iter()
        .map(|(n, text, why)| format!("line {n} ({}): {why}", quote_capped(text)))
        .collect();
    format!("{path} has lines that are skipped: {}", each.join("; "))
}

pub(super) async fn read_modules(host: &dyn Host, problems: &mut FileProblems) -> Vec<ModuleRow> {
    let mut rows = Vec::new();
    let mut names = list(host, rdma_modules::MODULES_DIR, problems).await;
    for set in SHIPPED_MODULE_SETS {
        names = with_name(names, &format!("{set}.conf"));
    }
    for name in names {
        // rdma-core's units name files by instance: only `<set>.conf` with a valid set name
        // can be loaded by `rdma-load-modules@<set>.service`.
        let Some(set) = name.strip_suffix(".conf") else {
            continue;
        };
        let Ok(path) = rdma_modules::modules_file_path(set) else {
            continue;
        };
        let shown = path.to_string_lossy();
        let Some(bytes) = read_opt(host, &shown, problems).await else {
            continue;
        };
        let file = ModulesFile::parse(&bytes);
        let unusable: Vec<(u32, String, String)> = file
            .unusable()
            .into_iter()
            .map(|u| (u.line, u.text, u.reason))
            .collect();
        if !unusable.is_empty() {
            problems.insert(shown.to_string(), skipped_lines(&shown, &unusable));
        }
        for e in file.modules() {
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
pub(super) async fn module_loaded(host: &dyn Host, module: &str) -> bool {
    for name in rdma_modules::sysfs_module_names(module) {
        if host.module_loaded(&name).await.unwrap_or(false) {
            return true;
        }
    }
    false
}

/// The modules a list enables, split into (loaded, not loaded) as the kernel has them now.
pub(super) async fn enabled_modules_loaded(
    host: &dyn Host,
    set: &str,
) -> (Vec<String>, Vec<String>) {
    let (mut loaded, mut missing) = (Vec::new(), Vec::new());
    let Ok(path) = rdma_modules::modules_file_path(set) else {
        return (loaded, missing);
    };
    // What is wrong with the file is published by the next read of host setup.
    let Some(bytes) = read_opt(host, &path.to_string_lossy(), &mut FileProblems::new()).await
    else {
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
pub(super) fn modules_step(unit: &str, loaded: &[String], missing: &[String]) -> Step {
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

pub(super) async fn limits_sources(
    host: &dyn Host,
    problems: &mut FileProblems,
) -> memlock::LimitsSources {
    let mut dropins = Vec::new();
    let names = with_name(
        list(host, memlock::LIMITS_D, problems).await,
        memlock::DAEMON_FILE_NAME,
    );
    for name in memlock::dropin_names(&names) {
        let path = format!("{}/{name}", memlock::LIMITS_D);
        if let Some(bytes) = read_opt(host, &path, problems).await {
            dropins.push(memlock::LimitsFile { path, bytes });
        }
    }
    let limits_conf = read_opt(host, memlock::LIMITS_CONF, problems).await;
    memlock::LimitsSources {
        limits_conf_unread: limits_conf.is_none() && problems.contains_key(memlock::LIMITS_CONF),
        limits_conf,
        dropins,
    }
}

pub(super) fn limit_text(s: &LimitSetting) -> String {
    s.value().map(MemlockValue::conf_text).unwrap_or_default()
}

pub(super) fn read_memlock(st: &mut HostSetupState, sources: &memlock::LimitsSources) {
    let r = memlock::resolve_group_member(sources, memlock::RDMA_GROUP, None);
    // Lines pam_limits skips (and logs), by file: garbage in the daemon's own file would
    // otherwise leave its limits unset without a word.
    let mut skipped: BTreeMap<&str, Vec<(u32, String, String)>> = BTreeMap::new();
    for n in r.notes.iter().filter(|n| n.kind == NoteKind::Skipped) {
        skipped.entry(n.origin.file.as_str()).or_default().push((
            n.origin.line,
            n.text.clone(),
            n.reason.clone(),
        ));
    }
    for (file, lines) in skipped {
        st.file_problems
            .insert(file.to_string(), skipped_lines(file, &lines));
    }
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

pub(super) async fn nfs_sources(
    host: &dyn Host,
    problems: &mut FileProblems,
) -> nfs_conf::NfsConfSources {
    pub(super) async fn dropins(
        host: &dyn Host,
        dir: &str,
        problems: &mut FileProblems,
    ) -> Vec<nfs_conf::ConfFile> {
        let mut out = Vec::new();
        let mut names = list(host, dir, problems).await;
        if dir == nfs_conf::NFS_CONF_D {
            names = with_name(names, nfs_conf::DAEMON_DROPIN_NAME);
        }
        for name in nfs_conf::dropin_names(&names) {
            let path = format!("{dir}/{name}");
            if let Some(bytes) = read_opt(host, &path, problems).await {
                out.push(nfs_conf::ConfFile { path, bytes });
            }
        }
        out
    }
    let mut s = nfs_conf::NfsConfSources {
        usr_etc_conf: read_opt(host, nfs_conf::USR_NFS_CONF, problems).await,
        usr_etc_dropins: dropins(host, nfs_conf::USR_NFS_CONF_D, problems).await,
        etc_conf: read_opt(host, nfs_conf::NFS_CONF, problems).await,
        etc_dropins: dropins(host, nfs_conf::NFS_CONF_D, problems).await,
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
            if let Some(bytes) = read_opt(host, &path, problems).await {
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

#[cfg(any(test, feature = "sim"))]
/// [`simulate_unit_started`] as the hook of a simulated systemd
/// ([`crate::system::sim::SimSystemServices::on_started`]); a failure is logged.
pub fn simulated_units(sim: crate::kernel::sim::SimHost) -> crate::system::sim::OnStarted {
    Arc::new(move |unit: String| {
        let sim = sim.clone();
        Box::pin(async move {
            if let Err(e) = simulate_unit_started(&sim, &unit).await {
                tracing::warn!(%unit, error = %e, "the simulated unit could not act on the simulated host");
            }
        })
    })
}

#[cfg(any(test, feature = "sim"))]
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
        let sources = nfs_sources(sim, &mut FileProblems::new()).await;
        if matches!(
            nfs_conf::resolve(&sources).state,
            NfsRdmaState::Enabled { .. }
        ) {
            load("svcrdma")?;
        }
    }
    Ok(())
}

pub(super) fn read_nfs(st: &mut HostSetupState, sources: &nfs_conf::NfsConfSources) {
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
        "Settings apply when nfs-server.service next starts (a change made here restarts it)."
            .into(),
    );
    st.nfs_notes = notes;
}

pub(super) async fn unit(system: &dyn SystemServices, name: &str) -> UnitState {
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
    pub(super) system: Arc<dyn SystemServices>,
    /// Held by each Host method for its whole run: host-setup operations never overlap.
    pub(super) lock: tokio::sync::Mutex<()>,
    /// Numbers each asking of the units' status, so that an older answer never replaces a
    /// newer one.
    pub(super) status_seq: AtomicU64,
    /// A periodic asking is under way.
    pub(super) fetching: AtomicBool,
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

    pub(super) fn next_status(&self) -> u64 {
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
    pub(super) fn set_units(&mut self, u: UnitsStatus) {
        self.modules_unit = u.modules_unit;
        self.nfs_server = u.nfs_server;
        self.firewalld = u.firewalld;
        self.opensm = u.opensm;
    }

    pub(super) fn units(&self) -> UnitsStatus {
        UnitsStatus {
            modules_unit: self.modules_unit.clone(),
            nfs_server: self.nfs_server.clone(),
            firewalld: self.firewalld,
            opensm: self.opensm.clone(),
        }
    }
}

/// Reads host setup's files; the units' fields are left empty.
pub(super) async fn load_host_files(host: &dyn Host) -> HostSetupState {
    let mut problems = FileProblems::new();
    let modules = read_modules(host, &mut problems).await;
    let limits = limits_sources(host, &mut problems).await;
    let nfs = nfs_sources(host, &mut problems).await;
    let mut st = HostSetupState {
        modules,
        file_problems: problems,
        ..HostSetupState::default()
    };
    read_memlock(&mut st, &limits);
    read_nfs(&mut st, &nfs);
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

/// The reads a Host method makes after its changes.
impl EngineHandle {
    /// Asks systemd and firewalld here, then has the engine re-read the files and publish;
    /// returns the state published.
    pub(super) async fn refresh_host_setup(&self) -> Result<HostSetupState, OpError> {
        let seq = self.host_setup.next_status();
        let units = load_units_status(self.host_setup.system.as_ref()).await;
        self.call(move |e| {
            Box::pin(async move {
                apply_units_status(e, seq, units, true).await;
                Ok(e.state.host_setup.clone())
            })
        })
        .await
    }
}

// The engine's side of the reads: the files on the engine task, the units' status as last asked.

/// Re-reads host setup's files, keeps the units' status as last asked, and publishes the
/// Host object when it changed.
pub(super) async fn refresh_host_files(eng: &mut Engine) {
    let mut st = load_host_files(eng.host.as_ref()).await;
    st.set_units(eng.state.host_setup.units());
    publish_host_setup(eng, st).await;
}

pub(super) async fn publish_host_setup(eng: &mut Engine, st: HostSetupState) {
    if st != eng.state.host_setup {
        eng.state.host_setup = st;
        eng.publish(super::Dirty {
            host_setup: true,
            ..super::Dirty::default()
        })
        .await;
    }
}

/// Takes the units' status asked off the engine as number `seq`, unless a status asked
/// later was already taken. After an operation the files are re-read with it
/// (`reread_files`); the periodic fetch read them just before it asked.
pub(super) async fn apply_units_status(
    eng: &mut Engine,
    seq: u64,
    units: UnitsStatus,
    reread_files: bool,
) {
    let mut st = if reread_files {
        load_host_files(eng.host.as_ref()).await
    } else {
        eng.state.host_setup.clone()
    };
    if eng.ops.take_units_status(seq) {
        st.set_units(units);
    } else {
        st.set_units(eng.state.host_setup.units());
    }
    publish_host_setup(eng, st).await;
}

/// The periodic re-read: the files now, the units' status and NetworkManager's profiles
/// from a task of their own (see [`super::operations::Operations::fetch_units_and_owners`]).
pub(super) async fn refresh_host_setup(eng: &mut Engine) {
    refresh_host_files(eng).await;
    eng.ops.fetch_units_and_owners();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::sim::{fixtures, SimHost};

    fn host() -> SimHost {
        let sim = SimHost::new(fixtures::demo_host()).expect("simulated host");
        fixtures::install_host_setup(&sim).expect("host setup files");
        sim
    }

    async fn write(sim: &SimHost, path: &str, text: &str) {
        sim.write_file_atomic(Path::new(path), text.as_bytes())
            .await
            .expect("write");
    }

    /// A fresh host: rdma-core's lists as shipped, Debian's limits.conf without a memlock
    /// line, nfs.conf with `# rdma=n`.
    #[tokio::test]
    async fn a_fresh_host_reads_as_installed() {
        let sim = host();
        let st = load_host_files(&sim).await;
        let row = |set: &str, module: &str| {
            st.modules
                .iter()
                .find(|r| r.set == set && r.module == module)
                .cloned()
        };
        let svc = row("rdma", "svcrdma").expect("svcrdma is listed in rdma.conf");
        assert!(svc.enabled && svc.loaded, "{svc:?}");
        let rds = row("rdma", "rds_rdma").expect("rds_rdma is listed, commented out");
        assert!(!rds.enabled && !rds.loaded, "{rds:?}");
        assert_eq!(
            (st.memlock_soft.as_str(), st.memlock_hard.as_str()),
            ("", "")
        );
        assert!(st.memlock_origin.is_empty());
        assert_eq!(st.memlock_managed, ManagedLimits::default());
        assert!(st.memlock_notes.iter().any(|n| n.contains("not set")));
        assert_eq!(
            st.memlock_notes.last().map(String::as_str),
            Some(NEXT_LOGIN_NOTE)
        );
        assert!(!st.nfs_rdma);
        assert_eq!(st.nfs_rdma_port, 0);
        // The units are not asked by a read of the files.
        assert_eq!(st.nfs_server, UnitState::default());
        let _ = std::fs::remove_dir_all(sim.root());
    }

    /// The daemon's memlock file is read back with the line that set each limit, and a user
    /// entry read later that overrides it is told.
    #[tokio::test]
    async fn memlock_reads_the_daemon_file_and_what_overrides_it() {
        let sim = host();
        let text = memlock::render_daemon_file(
            memlock::RDMA_GROUP,
            MemlockValue::Unlimited,
            MemlockValue::Unlimited,
        )
        .expect("render");
        write(&sim, memlock::DAEMON_FILE, &text).await;
        let st = load_host_files(&sim).await;
        assert_eq!(st.memlock_soft, "unlimited");
        assert_eq!(st.memlock_managed.hard, "unlimited");
        assert!(st.memlock_origin["soft"].contains(memlock::DAEMON_FILE));
        assert!(!st.memlock_notes.iter().any(|n| n.contains("overridden")));

        write(
            &sim,
            "/etc/security/limits.d/zzzz.conf",
            "@rdma hard memlock 64\n",
        )
        .await;
        let st = load_host_files(&sim).await;
        assert_eq!(st.memlock_hard, "64");
        assert!(st.memlock_origin["hard"].contains("zzzz.conf"));
        assert!(
            st.memlock_notes
                .iter()
                .any(|n| n.contains("hard limit") && n.contains("overridden")),
            "{:?}",
            st.memlock_notes
        );
        let _ = std::fs::remove_dir_all(sim.root());
    }

    /// NFS over RDMA enabled by the daemon's drop-in reads as on, with its port.
    #[tokio::test]
    async fn nfs_rdma_follows_the_dropin() {
        let sim = host();
        let text = nfs_conf::render_dropin(nfs_conf::NfsRdmaRequest::Enable { port: 20049 })
            .expect("render");
        write(&sim, nfs_conf::DAEMON_DROPIN, &text).await;
        let st = load_host_files(&sim).await;
        assert!(st.nfs_rdma);
        assert_eq!(st.nfs_rdma_port, 20049);
        let _ = std::fs::remove_dir_all(sim.root());
    }

    /// A module list's restart is done only when every module it enables is loaded.
    #[test]
    fn a_module_list_is_done_only_when_all_are_loaded() {
        let loaded = vec!["ib_ipoib".to_string()];
        let done = modules_step("u", &loaded, &[]);
        assert_eq!(done.outcome, StepOutcome::Done);
        let failed = modules_step("u", &loaded, &["rds_rdma".to_string()]);
        assert_eq!(failed.outcome, StepOutcome::Failed);
        assert!(failed.detail.contains("rds_rdma") && failed.detail.contains("journalctl -u u"));
    }

    /// A started module list loads what it enables on the simulated kernel, and the read
    /// afterwards shows it loaded.
    #[tokio::test]
    async fn a_started_module_list_loads_its_modules() {
        let sim = host();
        sim.set_module_loaded("ib_ipoib", false).expect("unload");
        let before = load_host_files(&sim).await;
        assert!(before
            .modules
            .iter()
            .any(|r| r.module == "ib_ipoib" && !r.loaded));
        simulate_unit_started(&sim, "rdma-load-modules@infiniband.service")
            .await
            .expect("started");
        let after = load_host_files(&sim).await;
        assert!(after
            .modules
            .iter()
            .any(|r| r.module == "ib_ipoib" && r.loaded));
        let _ = std::fs::remove_dir_all(sim.root());
    }

    /// The simulated systemd given `simulated_units` acts on the simulated kernel as a real
    /// one does: a restarted module list loads its modules.
    #[tokio::test]
    async fn the_simulated_systemd_runs_the_hook() {
        let sim = host();
        sim.set_module_loaded("ib_ipoib", false).expect("unload");
        let system =
            crate::system::sim::SimSystemServices::new().on_started(simulated_units(sim.clone()));
        system
            .restart_unit("rdma-load-modules@infiniband.service")
            .await
            .expect("restart");
        let st = load_host_files(&sim).await;
        assert!(st
            .modules
            .iter()
            .any(|r| r.module == "ib_ipoib" && r.loaded));
        let _ = std::fs::remove_dir_all(sim.root());
    }
}
