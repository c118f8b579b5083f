//! Host setup (Red Hat's "Configuring InfiniBand and RDMA networks"): the kernel modules
//! rdma-core loads, the memlock limit of the `rdma` group, NFS over RDMA on the server and the
//! subnet manager: the Host methods and their steps. Files are written through
//! `kernel::Host` (so the simulated host keeps them in its tree), units and firewall ports go
//! through [`SystemServices`]. What they show is read by `host_setup.rs` (at start, after every
//! change and at every full re-read); the file formats are the pure
//! `hostconf::{rdma_modules, memlock, nfs_conf}`.
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

use rdma_manager_model::state;

use super::host_setup::{
    enabled_modules_loaded, module_loaded, modules_step, nfs_sources, step, FileProblems, Step,
    StepOutcome,
};
use super::state::ObservedState;
use super::{Engine, EngineHandle, OpError};
use crate::hostconf::memlock::{self, MemlockValue};
use crate::hostconf::nfs_conf::{self, NfsRdmaRequest, NfsRdmaState};
use crate::hostconf::rdma_modules::{self, ModuleChange, ModulesFile, RdmaModulesError};
use crate::system::{Protocol, SystemError, SystemServices, NFS_SERVER_UNIT, OPENSM_UNIT};

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
/// The state document's host setup sections (`modules`, `memlock`, `nfs-rdma`,
/// `subnet-manager`), the document's other parts left out.
pub(super) fn host_setup_sections(st: &ObservedState) -> state::State {
    let hs = &st.host_setup;
    let mut modules: BTreeMap<String, BTreeMap<String, bool>> = BTreeMap::new();
    for m in &hs.modules {
        modules
            .entry(m.set.clone())
            .or_default()
            .insert(m.module.clone(), m.enabled);
    }
    let nonempty = |s: &str| Some(s.to_string()).filter(|s| !s.is_empty());
    state::State {
        modules: Some(modules),
        memlock: Some(state::Memlock {
            soft: nonempty(&hs.memlock_soft),
            hard: nonempty(&hs.memlock_hard),
        }),
        nfs_rdma: Some(state::NfsRdma {
            enabled: Some(hs.nfs_rdma),
            port: hs.nfs_rdma.then_some(hs.nfs_rdma_port),
        }),
        subnet_manager: Some(state::SubnetManager {
            enabled: Some(hs.opensm.unit_file_state == "enabled"),
            running: Some(hs.opensm.active_state == "active"),
        }),
        ..Default::default()
    }
}

impl EngineHandle {
    /// Runs a step of the state's host setup sections through the job of its one-shot
    /// method.
    pub(super) async fn run_setup_step(&self, step: state::SetupStep) -> Result<(), OpError> {
        use state::SetupStep;
        match step {
            SetupStep::SetModule {
                set,
                module,
                enabled,
            } => self.set_module_enabled(&set, &module, enabled).await,
            SetupStep::SetMemlock { soft, hard } => {
                self.set_memlock_limits(&soft, &hard).await.map(drop)
            }
            SetupStep::ResetMemlock => self.reset_memlock_limits().await,
            SetupStep::SetNfsRdma { enabled, port } => {
                let port = if enabled { port } else { 0 };
                let steps = self.set_nfs_rdma(enabled, port).await?;
                match steps.iter().find(|s| s.outcome == StepOutcome::Failed) {
                    Some(s) => Err(OpError::Failed(format!("{}: {}", s.name, s.detail))),
                    None => Ok(()),
                }
            }
            SetupStep::SetSubnetManagerEnabled { enabled } => {
                let verb = if enabled {
                    SmVerb::Enable
                } else {
                    SmVerb::Disable
                };
                self.subnet_manager(verb).await
            }
            SetupStep::SetSubnetManagerRunning { running } => {
                let verb = if running { SmVerb::Start } else { SmVerb::Stop };
                self.subnet_manager(verb).await
            }
        }
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
                    edit_module(e, &path, &module, enabled).await.map(|_| ())
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
        self.call(move |e| Box::pin(async move { modules_file_exists(e, &owned).await }))
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
                        restarted_text(&unit, &res.to_string()),
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
            .call(move |e| Box::pin(async move { write_memlock_file(e, &text).await }))
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
            .call(move |e| Box::pin(async move { Ok(enable_nfs_rdma_files(e, port).await) }))
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
            .call(|e| Box::pin(async move { Ok(disable_nfs_rdma_files(e).await) }))
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

/// Fails with NotFound when the set's modules file does not exist.
async fn modules_file_exists(eng: &Engine, set: &str) -> Result<(), OpError> {
    let path = modules_path(set)?;
    if eng
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
    eng: &Engine,
    path: &str,
    module: &str,
    enabled: bool,
) -> Result<ModuleChange, OpError> {
    let bytes = eng
        .host
        .read_file(Path::new(path))
        .await
        .map_err(OpError::from_host)?
        .ok_or_else(|| absent_modules_file(path))?;
    let edit = ModulesFile::parse(&bytes)
        .set_enabled(module, enabled)
        .map_err(modules_error)?;
    if edit.change != ModuleChange::Unchanged {
        eng.host
            .write_file_atomic(Path::new(path), &edit.bytes)
            .await
            .map_err(OpError::from_host)?;
    }
    Ok(edit.change)
}

/// Writes the daemon's memlock file when its bytes differ.
async fn write_memlock_file(eng: &Engine, text: &str) -> Result<(), OpError> {
    let current = eng
        .host
        .read_file(Path::new(memlock::DAEMON_FILE))
        .await
        .map_err(OpError::from_host)?;
    if current.as_deref() == Some(text.as_bytes()) {
        return Ok(());
    }
    eng.host
        .write_file_atomic(Path::new(memlock::DAEMON_FILE), text.as_bytes())
        .await
        .map_err(OpError::from_host)
}

/// Writes the daemon's drop-in when its bytes differ; "done" or "unchanged".
async fn write_dropin(eng: &Engine, text: &str) -> Result<StepOutcome, String> {
    let path = Path::new(nfs_conf::DAEMON_DROPIN);
    let current = eng.host.read_file(path).await.map_err(|e| e.to_string())?;
    if current.as_deref() == Some(text.as_bytes()) {
        return Ok(StepOutcome::Unchanged);
    }
    eng.host
        .write_file_atomic(path, text.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    Ok(StepOutcome::Done)
}

/// The file steps of enabling NFS over RDMA; after a failed one, every later step
/// (firewall and nfs-server included) is listed as not run.
async fn enable_nfs_rdma_files(eng: &Engine, port: u16) -> Vec<Step> {
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
    match write_dropin(eng, &text).await {
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
        match edit_module(eng, &path, m, true).await {
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
async fn disable_nfs_rdma_files(eng: &Engine) -> Vec<Step> {
    let mut steps = Vec::new();
    let sources = nfs_sources(eng.host.as_ref(), &mut FileProblems::new()).await;
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
            Ok(text) => write_dropin(eng, &text).await.map(|o| {
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
        eng.host
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

/// A restart that systemd reports done, in words: its job result said only when it is not
/// the usual `done`.
fn restarted_text(unit: &str, result: &str) -> String {
    let how = if result == "done" {
        String::new()
    } else {
        format!(" (systemd says: {result})")
    };
    format!("{unit} restarted{how}; modules already loaded stay loaded")
}
