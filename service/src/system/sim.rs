//! [`SimSystemServices`]: systemd and firewalld kept in memory, for `--simulate` and
//! `rdma-tui --demo`, where there is no systemd or firewalld to ask (a private bus), and for
//! tests that script a unit's behaviour without a bus.
//!
//! It behaves as the bus clients report the real services: a unit not in the table loads as
//! `not-found` and its jobs fail with [`SystemError::NoSuchUnit`]; a unit scripted to fail
//! ends its start and restart jobs with that result and is left `failed`; template instances
//! of `rdma-load-modules@.service` exist for every name (rdma-core installs the template);
//! firewalld answers [`SystemError::NotRunning`] while it is stopped.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;

use super::{
    Added, EnableOutcome, JobResult, JobVerb, PortAddition, Protocol, Service, SystemError,
    SystemServices, UnitFileChange, UnitStatus, NFS_SERVER_UNIT, OPENSM_UNIT,
};

/// One simulated unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimUnit {
    pub active_state: String,
    pub sub_state: String,
    pub unit_file_state: String,
    /// How start and restart jobs end ("done", "failed", ...).
    pub start_result: String,
}

impl SimUnit {
    /// Installed, stopped and disabled; its jobs succeed.
    pub fn stopped() -> SimUnit {
        SimUnit {
            active_state: "inactive".into(),
            sub_state: "dead".into(),
            unit_file_state: "disabled".into(),
            start_result: "done".into(),
        }
    }

    /// A unit without [Install] section (template instances started by other units).
    pub fn static_unit() -> SimUnit {
        SimUnit {
            unit_file_state: "static".into(),
            ..SimUnit::stopped()
        }
    }
}

#[derive(Debug, Default)]
struct State {
    /// What a started unit does (to the simulated kernel: module lists, nfsd's transport).
    on_started: Option<Hook>,
    /// The simulated host's systemd-networkd, if it runs one.
    networkd: Option<Arc<dyn crate::ipmgr::networkd::Networkd>>,
    units: BTreeMap<String, SimUnit>,
    calls: Vec<String>,
    firewalld_running: bool,
    default_zone: String,
    /// (zone, "port/protocol").
    runtime_ports: BTreeSet<(String, String)>,
    permanent_ports: BTreeSet<(String, String)>,
    /// NetworkManager's profiles; `None`: it does not run (the default).
    nm_profiles: Option<Vec<crate::nm::client::ProfileSummary>>,
    /// NetworkManager owns its name but does not answer (hung while starting).
    nm_unanswering: bool,
    /// NetworkManager answers this long after it is asked (starting at boot, before its
    /// settings are exported).
    nm_answer_delay: Option<std::time::Duration>,
}

/// What a unit that started does, given its name: the caller's, since what units do to a
/// simulated kernel is the engine's knowledge of the files they read
/// (`engine::simulated_units`), above this layer.
pub type OnStarted = Arc<dyn Fn(String) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The hook (it has no Debug of its own).
#[derive(Clone)]
struct Hook(OnStarted);

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnStarted")
    }
}

/// systemd and firewalld in memory. Cheap to clone (shared state).
#[derive(Clone, Debug)]
pub struct SimSystemServices {
    state: Arc<Mutex<State>>,
}

/// rdma-core's template: every instance name loads.
const MODULES_TEMPLATE_PREFIX: &str = "rdma-load-modules@";

impl Default for SimSystemServices {
    fn default() -> Self {
        Self::new()
    }
}

impl SimSystemServices {
    /// A host with rdma-core, nfs-server.service (installed, stopped) and opensm.service
    /// (installed, stopped, disabled), and firewalld installed but not running.
    pub fn new() -> SimSystemServices {
        let mut units = BTreeMap::new();
        units.insert(NFS_SERVER_UNIT.to_string(), SimUnit::stopped());
        units.insert(OPENSM_UNIT.to_string(), SimUnit::stopped());
        SimSystemServices {
            state: Arc::new(Mutex::new(State {
                units,
                default_zone: "public".into(),
                ..State::default()
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic in another test thread must not poison every later call.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Lets started units act as they do on a real host (for a simulated kernel,
    /// `engine::simulated_units`): without it, a restarted module list loads nothing and the
    /// Host object would disagree with what a real systemd does.
    pub fn on_started(self, hook: OnStarted) -> SimSystemServices {
        self.lock().on_started = Some(Hook(hook));
        self
    }

    /// Gives the simulated host a systemd-networkd (`kernel::sim::networkd`), or takes it away.
    pub fn set_networkd(&self, networkd: Option<Arc<dyn crate::ipmgr::networkd::Networkd>>) {
        self.lock().networkd = networkd;
    }

    /// Installs or replaces a unit.
    pub fn set_unit(&self, name: &str, unit: SimUnit) {
        self.lock().units.insert(name.to_string(), unit);
    }

    /// Uninstalls a unit: it loads as `not-found` afterwards.
    pub fn remove_unit(&self, name: &str) {
        self.lock().units.remove(name);
    }

    /// A unit's current state, if installed (template instances once started).
    pub fn unit(&self, name: &str) -> Option<SimUnit> {
        self.lock().units.get(name).cloned()
    }

    /// Starts NetworkManager with these profiles (`Some`), or stops it (`None`).
    pub fn set_network_manager(&self, profiles: Option<Vec<crate::nm::client::ProfileSummary>>) {
        self.lock().nm_profiles = profiles;
    }

    /// Makes NetworkManager stop answering (`true`: it owns its name, its settings never
    /// come), or answer again.
    pub fn set_network_manager_unanswering(&self, unanswering: bool) {
        self.lock().nm_unanswering = unanswering;
    }

    /// Makes NetworkManager answer `delay` after it is asked, as one still starting does
    /// (`None`: at once).
    pub fn set_network_manager_answer_delay(&self, delay: Option<std::time::Duration>) {
        self.lock().nm_answer_delay = delay;
    }

    /// Starts or stops firewalld.
    pub fn set_firewalld_running(&self, running: bool) {
        self.lock().firewalld_running = running;
    }

    /// "port/protocol" entries of the default zone, runtime or permanent.
    pub fn ports(&self, permanent: bool) -> Vec<String> {
        let st = self.lock();
        let set = if permanent {
            &st.permanent_ports
        } else {
            &st.runtime_ports
        };
        set.iter()
            .filter(|(z, _)| *z == st.default_zone)
            .map(|(_, p)| p.clone())
            .collect()
    }

    /// Every call, as "Method unit" or "addPort 20049/tcp", for assertions.
    pub fn calls(&self) -> Vec<String> {
        self.lock().calls.clone()
    }

    fn template_instance(name: &str) -> bool {
        name.starts_with(MODULES_TEMPLATE_PREFIX) && name.ends_with(".service")
    }

    /// The unit, creating a template instance on first use as systemd loads it from the
    /// template.
    fn unit_mut<'a>(st: &'a mut State, name: &str) -> Option<&'a mut SimUnit> {
        if !st.units.contains_key(name) && Self::template_instance(name) {
            st.units.insert(name.to_string(), SimUnit::static_unit());
        }
        st.units.get_mut(name)
    }

    /// What a unit that started does to the simulated kernel.
    async fn started(&self, unit: &str, r: &JobResult) {
        let hook = self.lock().on_started.clone();
        if let (Some(Hook(hook)), true) = (hook, r.succeeded()) {
            hook(unit.to_string()).await;
        }
    }

    fn job(&self, unit: &str, verb: JobVerb) -> Result<JobResult, SystemError> {
        let mut st = self.lock();
        st.calls.push(format!("{} {unit}", verb.method()));
        let Some(u) = Self::unit_mut(&mut st, unit) else {
            return Err(SystemError::NoSuchUnit {
                unit: unit.to_string(),
                message: format!("Unit {unit} not found."),
            });
        };
        let result = match verb {
            JobVerb::Stop => JobResult::Done,
            JobVerb::Start | JobVerb::Restart => JobResult::parse(&u.start_result),
        };
        let (active, sub) = match (verb, result.succeeded()) {
            (JobVerb::Stop, _) => ("inactive", "dead"),
            (_, true) => ("active", "running"),
            (_, false) => ("failed", "failed"),
        };
        u.active_state = active.into();
        u.sub_state = sub.into();
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

    fn firewalld(&self) -> Result<MutexGuard<'_, State>, SystemError> {
        let st = self.lock();
        if st.firewalld_running {
            Ok(st)
        } else {
            Err(SystemError::NotRunning {
                service: Service::Firewalld,
            })
        }
    }
}

#[async_trait]
impl SystemServices for SimSystemServices {
    fn networkd(&self) -> Option<Arc<dyn crate::ipmgr::networkd::Networkd>> {
        self.lock().networkd.clone()
    }

    async fn network_manager_profiles(
        &self,
    ) -> Result<Option<Vec<crate::nm::client::ProfileSummary>>, crate::nm::client::NmError> {
        let delay = self.lock().nm_answer_delay;
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
        let st = self.lock();
        if st.nm_unanswering {
            return Err(crate::nm::client::NmError::Starting);
        }
        Ok(st.nm_profiles.clone())
    }

    async fn unit_status(&self, unit: &str) -> Result<UnitStatus, SystemError> {
        let mut st = self.lock();
        Ok(match Self::unit_mut(&mut st, unit) {
            Some(u) => UnitStatus {
                id: unit.to_string(),
                load_state: "loaded".into(),
                active_state: u.active_state.clone(),
                sub_state: u.sub_state.clone(),
                unit_file_state: u.unit_file_state.clone(),
            },
            None => UnitStatus {
                id: unit.to_string(),
                load_state: "not-found".into(),
                active_state: "inactive".into(),
                sub_state: "dead".into(),
                unit_file_state: String::new(),
            },
        })
    }

    async fn start_unit(&self, unit: &str) -> Result<JobResult, SystemError> {
        let r = self.job(unit, JobVerb::Start)?;
        self.started(unit, &r).await;
        Ok(r)
    }

    async fn stop_unit(&self, unit: &str) -> Result<JobResult, SystemError> {
        self.job(unit, JobVerb::Stop)
    }

    async fn restart_unit(&self, unit: &str) -> Result<JobResult, SystemError> {
        let r = self.job(unit, JobVerb::Restart)?;
        self.started(unit, &r).await;
        Ok(r)
    }

    async fn enable_unit(&self, unit: &str) -> Result<EnableOutcome, SystemError> {
        let mut st = self.lock();
        st.calls.push(format!("EnableUnitFiles {unit}"));
        let Some(u) = st.units.get_mut(unit) else {
            return Err(SystemError::NoSuchUnit {
                unit: unit.to_string(),
                message: format!("Unit file {unit} does not exist."),
            });
        };
        let changes = if u.unit_file_state == "disabled" {
            u.unit_file_state = "enabled".into();
            vec![UnitFileChange {
                kind: "symlink".into(),
                path: format!("/etc/systemd/system/multi-user.target.wants/{unit}"),
                destination: format!("/usr/lib/systemd/system/{unit}"),
            }]
        } else {
            Vec::new()
        };
        Ok(EnableOutcome {
            carries_install_info: u.unit_file_state != "static",
            changes,
        })
    }

    async fn disable_unit(&self, unit: &str) -> Result<Vec<UnitFileChange>, SystemError> {
        let mut st = self.lock();
        st.calls.push(format!("DisableUnitFiles {unit}"));
        let Some(u) = st.units.get_mut(unit) else {
            return Err(SystemError::NoSuchUnit {
                unit: unit.to_string(),
                message: format!("Unit file {unit} does not exist."),
            });
        };
        if u.unit_file_state != "enabled" {
            return Ok(Vec::new());
        }
        u.unit_file_state = "disabled".into();
        Ok(vec![UnitFileChange {
            kind: "unlink".into(),
            path: format!("/etc/systemd/system/multi-user.target.wants/{unit}"),
            destination: String::new(),
        }])
    }

    async fn firewalld_running(&self) -> Result<bool, SystemError> {
        Ok(self.lock().firewalld_running)
    }

    async fn firewall_default_zone(&self) -> Result<String, SystemError> {
        Ok(self.firewalld()?.default_zone.clone())
    }

    async fn firewall_query_port(
        &self,
        zone: &str,
        port: u16,
        protocol: Protocol,
    ) -> Result<bool, SystemError> {
        let st = self.firewalld()?;
        let zone = if zone.is_empty() {
            st.default_zone.clone()
        } else {
            zone.to_string()
        };
        Ok(st
            .runtime_ports
            .contains(&(zone, format!("{port}/{}", protocol.as_str()))))
    }

    async fn firewall_add_port(
        &self,
        zone: &str,
        port: u16,
        protocol: Protocol,
    ) -> Result<PortAddition, SystemError> {
        if port == 0 {
            return Err(SystemError::Invalid("port 0 is not a port".into()));
        }
        let mut st = self.firewalld()?;
        let zone = if zone.is_empty() {
            st.default_zone.clone()
        } else {
            zone.to_string()
        };
        let entry = (zone.clone(), format!("{port}/{}", protocol.as_str()));
        st.calls.push(format!("addPort {}", entry.1));
        let added = |new: bool| if new { Added::Now } else { Added::Already };
        let runtime = added(st.runtime_ports.insert(entry.clone()));
        let permanent = added(st.permanent_ports.insert(entry));
        Ok(PortAddition {
            zone,
            runtime,
            permanent,
        })
    }
}
