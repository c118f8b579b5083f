//! Changes made through NetworkManager, each inside a NetworkManager checkpoint: IP settings
//! of RDMA netdevs (IPoIB interfaces and the netdevs of RoCE, rxe and siw ports), bringing
//! their profiles up and down, and the IPoIB operations on interfaces NetworkManager owns.
//!
//! Every such change is one transaction (`transaction.rs`): the checkpoint is its first step,
//! whose undo rolls NetworkManager back; the change itself is the next. When the change
//! succeeds the checkpoint stays: the change is pending until the caller confirms it
//! (`confirm`, the checkpoint is destroyed), rolls it back, or lets the timeout pass, after
//! which NetworkManager rolls back by itself. So an administrator who cuts off their own
//! SSH session gets their network back without anyone's help.
//!
//! Like `nm_owners`, this runs on the caller's task: NetworkManager is never waited on from
//! the engine task.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use tracing::info;
use zbus::zvariant::{OwnedValue, Value};

use crate::config::ipoib::IpoibSettings;
use crate::model::IpoibMode;
use crate::nm::client::{Checkpoint, NetworkManager, NmError, ProfileSummary};
use crate::nm::device::{DeviceInfo, DEVICE_ACTIVATED, DEVICE_FAILED};
use crate::nm::keys::IpSettings;
use crate::nm::profile::{self, IpoibProfile, Settings, TransportMode};

use super::transaction::Transaction;
use super::{EngineHandle, OpError};

/// How long a change waits for confirmation when the caller gives 0.
pub const DEFAULT_TIMEOUT_SECS: u32 = 60;
/// The shortest and longest confirmation timeouts accepted.
pub const TIMEOUT_RANGE: std::ops::RangeInclusive<u32> = 10..=3600;
/// How long an activation is waited for before the call returns with the change pending
/// (NetworkManager goes on activating; the pending change shows the device's state).
const ACTIVATION_WAIT: Duration = Duration::from_secs(15);

/// What takes one profile change back. A NetworkManager checkpoint restores the profiles
/// applied on devices, not a profile that is active nowhere (seen on NetworkManager 1.42: a
/// changed or deleted profile of a child whose device does not exist stayed changed after
/// the rollback), so the daemon keeps its own undo of every profile it touched and applies
/// it after NetworkManager's rollback.
#[derive(Debug, Clone, PartialEq)]
pub enum ProfileUndo {
    /// Put these settings back (the profile was changed).
    Restore { uuid: String, settings: Settings },
    /// Delete it (the profile was added).
    Remove { uuid: String },
    /// Add it again, with its UUID (the profile was deleted).
    Add { settings: Settings },
}

impl ProfileUndo {
    /// Applies the undo; what is already as it should be (NetworkManager's rollback put
    /// it back) is left alone.
    async fn apply(&self, nm: &NetworkManager) -> Result<String, String> {
        let exists = |uuid: &str| {
            let uuid = uuid.to_string();
            let nm = nm.clone();
            async move { nm.profile_settings(&uuid).await.is_ok() }
        };
        match self {
            ProfileUndo::Restore { uuid, settings } => {
                let now = nm.profile_settings(uuid).await.ok();
                if now.as_ref() == Some(settings) {
                    // NetworkManager's rollback put it back already.
                    return Ok(String::new());
                }
                let r = if now.is_some() {
                    nm.update(uuid, settings.clone()).await
                } else {
                    nm.add_as_is(settings.clone()).await.map(|_| ())
                };
                r.map(|()| format!("profile {uuid} was put back"))
                    .map_err(|e| format!("putting profile {uuid} back failed ({e})"))
            }
            ProfileUndo::Remove { uuid } => {
                if !exists(uuid).await {
                    return Ok(String::new());
                }
                nm.delete(uuid)
                    .await
                    .map(|()| format!("profile {uuid} was deleted again"))
                    .map_err(|e| format!("deleting profile {uuid} again failed ({e})"))
            }
            ProfileUndo::Add { settings } => {
                let uuid = profile_uuid(settings);
                if exists(&uuid).await {
                    return Ok(String::new());
                }
                nm.add_as_is(settings.clone())
                    .await
                    .map(|_| format!("profile {uuid} was added again"))
                    .map_err(|e| format!("adding profile {uuid} again failed ({e})"))
            }
        }
    }
}

fn profile_uuid(settings: &Settings) -> String {
    settings
        .get("connection")
        .and_then(|c| c.get("uuid"))
        .and_then(|v| v.downcast_ref::<&str>().ok().map(str::to_string))
        .unwrap_or_default()
}

/// Applies the undos of a pending change, last first, after NetworkManager rolled its
/// checkpoint back; returns what each did.
pub(crate) async fn undo_profiles(nm: &NetworkManager, undo: &[ProfileUndo]) -> Vec<String> {
    let mut said = Vec::new();
    for u in undo.iter().rev() {
        match u.apply(nm).await {
            Ok(m) if m.is_empty() => {}
            Ok(m) => {
                info!(undo = %m, "profile put back after NetworkManager's rollback");
                said.push(m);
            }
            Err(m) => {
                tracing::warn!(error = %m, "a profile could not be put back");
                said.push(m);
            }
        }
    }
    said
}

/// A change NetworkManager made inside a checkpoint, waiting for confirmation.
#[derive(Debug, Clone, PartialEq)]
pub struct NmPending {
    pub checkpoint: Checkpoint,
    /// What takes the profile changes back, in the order they were made.
    pub undo: Vec<ProfileUndo>,
    /// The interface changed.
    pub interface: String,
    /// What was changed, for people.
    pub description: String,
    /// Seconds NetworkManager waits before it rolls back.
    pub timeout_secs: u32,
    /// `ipoib.toml` children (port GUID, P_Key as stored) to forget when the change is
    /// confirmed: a move into NetworkManager (`nm_migrate`).
    pub forget_on_confirm: Vec<(crate::model::Guid, u16)>,
}

/// What an RDMA netdev is, for the profile NetworkManager gets for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RdmaNetdev {
    /// An IPoIB interface: a port's own, or a P_Key child of `parent`.
    Ipoib {
        parent: Option<String>,
        pkey: Option<u16>,
        mode: Option<IpoibMode>,
    },
    /// The Ethernet netdev of a RoCE, rxe or siw port.
    Port,
}

/// IP settings of an interface as NetworkManager and the kernel have them.
#[derive(Debug, Clone)]
pub struct IpReport {
    pub kind: RdmaNetdev,
    /// The profile that configures it, if any.
    pub owner: Option<ProfileSummary>,
    /// NetworkManager's device, if it has one.
    pub device: Option<DeviceInfo>,
    /// The profile's IP settings.
    pub settings: Option<IpSettings>,
}

/// NetworkManager's errors as the project's: what it refused as invalid is an invalid
/// argument, a checkpoint over the same devices or a NetworkManager still starting is busy
/// (try again), its absence is not supported.
pub(crate) fn nm_error(e: NmError) -> OpError {
    match e {
        NmError::Profile(p) => OpError::InvalidArgument(p.to_string()),
        NmError::Refused(_) => OpError::InvalidArgument(e.to_string()),
        NmError::NotRunning => OpError::NotSupported(e.to_string()),
        NmError::CheckpointConflict(_) | NmError::Starting => OpError::Busy(e.to_string()),
        NmError::NoDevice(_) => OpError::NotFound(e.to_string()),
        NmError::Failed(_) | NmError::Bus(_) => OpError::Failed(e.to_string()),
    }
}

/// The timeout a caller gave, 0 meaning the default.
pub fn checked_timeout(secs: u32) -> Result<u32, OpError> {
    let secs = if secs == 0 {
        DEFAULT_TIMEOUT_SECS
    } else {
        secs
    };
    if TIMEOUT_RANGE.contains(&secs) {
        Ok(secs)
    } else {
        Err(OpError::InvalidArgument(format!(
            "a confirmation timeout of {secs} s is outside {} to {} s (0: {DEFAULT_TIMEOUT_SECS} s)",
            TIMEOUT_RANGE.start(),
            TIMEOUT_RANGE.end()
        )))
    }
}

/// One change through NetworkManager: a checkpoint, then profile steps, each with its undo
/// (see [`ProfileUndo`]); a failing step undoes the ones before it, the checkpoint last.
pub(super) struct NmTx {
    nm: NetworkManager,
    tx: Transaction<NetworkManager>,
    checkpoint: Checkpoint,
    undo: Vec<ProfileUndo>,
    what: String,
    timeout_secs: u32,
}

impl NmTx {
    pub(super) async fn begin(
        nm: &NetworkManager,
        what: &str,
        timeout_secs: u32,
    ) -> Result<NmTx, OpError> {
        let mut cx = nm.clone();
        let mut tx = Transaction::new(what);
        let checkpoint = tx
            .step(
                &mut cx,
                "create a NetworkManager checkpoint",
                move |nm: &mut NetworkManager| {
                    Box::pin(async move { nm.checkpoint(timeout_secs).await.map_err(nm_error) })
                },
                move |nm: &mut NetworkManager, cp: Checkpoint| {
                    Box::pin(async move {
                        nm.roll_back(&cp)
                            .await
                            .map(|()| {
                                "NetworkManager was rolled back to its checkpoint".to_string()
                            })
                            .map_err(|e| {
                                format!(
                                    "rolling NetworkManager back also failed ({e}); it rolls back \
                                     by itself when the checkpoint's {timeout_secs} s pass"
                                )
                            })
                    })
                },
            )
            .await?;
        Ok(NmTx {
            nm: cx,
            tx,
            checkpoint,
            undo: Vec::new(),
            what: what.to_string(),
            timeout_secs,
        })
    }

    /// A step whose undo is `undo` (recorded for the pending change as well).
    async fn profile_step<T, A>(
        &mut self,
        step: &str,
        apply: A,
        undo: ProfileUndo,
    ) -> Result<T, OpError>
    where
        T: Clone + Send + 'static,
        A: for<'a> FnOnce(
            &'a mut NetworkManager,
        ) -> futures::future::BoxFuture<'a, Result<T, OpError>>,
    {
        let kept = undo.clone();
        let t = self
            .tx
            .step(
                &mut self.nm,
                step,
                apply,
                move |nm: &mut NetworkManager, _| Box::pin(async move { kept.apply(nm).await }),
            )
            .await?;
        self.undo.push(undo);
        Ok(t)
    }

    /// Replaces the settings of the profile `uuid`.
    async fn update(&mut self, uuid: &str, settings: Settings) -> Result<(), OpError> {
        let old = self.nm.profile_settings(uuid).await.map_err(nm_error)?;
        let u = uuid.to_string();
        self.profile_step(
            &format!("change profile {uuid}"),
            move |nm: &mut NetworkManager| {
                Box::pin(async move { nm.update(&u, settings).await.map_err(nm_error) })
            },
            ProfileUndo::Restore {
                uuid: uuid.to_string(),
                settings: old,
            },
        )
        .await
    }

    /// Adds a profile with a new UUID; returns it.
    pub(super) async fn add(&mut self, mut settings: Settings) -> Result<ProfileSummary, OpError> {
        let uuid = crate::nm::client::new_uuid().map_err(nm_error)?;
        crate::nm::keys::put(
            settings.entry("connection".into()).or_default(),
            "uuid".into(),
            uuid.as_str(),
        );
        self.profile_step(
            "add a profile",
            move |nm: &mut NetworkManager| {
                Box::pin(async move { nm.add_as_is(settings).await.map_err(nm_error) })
            },
            ProfileUndo::Remove { uuid },
        )
        .await
    }

    /// Deletes the profile `uuid`.
    async fn delete(&mut self, uuid: &str) -> Result<(), OpError> {
        let old = self.nm.profile_settings(uuid).await.map_err(nm_error)?;
        let u = uuid.to_string();
        self.profile_step(
            &format!("delete profile {uuid}"),
            move |nm: &mut NetworkManager| {
                Box::pin(async move { nm.delete(&u).await.map_err(nm_error) })
            },
            ProfileUndo::Add { settings: old },
        )
        .await
    }

    /// A step with nothing of its own to undo (an activation: the checkpoint takes it back).
    async fn check<A>(&mut self, step: &str, apply: A) -> Result<(), OpError>
    where
        A: for<'a> FnOnce(
            &'a mut NetworkManager,
        ) -> futures::future::BoxFuture<'a, Result<(), OpError>>,
    {
        Ok(self.tx.check(&mut self.nm, step, apply).await?)
    }

    /// The change is made: it waits for confirmation.
    pub(super) fn pending(self, interface: &str) -> NmPending {
        self.tx.commit();
        info!(change = %self.what, checkpoint = %self.checkpoint.0, timeout_secs = self.timeout_secs,
            "changed through NetworkManager; waiting for confirmation");
        NmPending {
            checkpoint: self.checkpoint,
            undo: self.undo,
            interface: interface.to_string(),
            description: self.what,
            timeout_secs: self.timeout_secs,
            forget_on_confirm: Vec::new(),
        }
    }
}

/// Waits (bounded) for NetworkManager to finish activating `interface`: an activation that
/// fails is an error (and the checkpoint is rolled back by the caller's transaction).
async fn wait_activated(nm: &NetworkManager, interface: &str, uuid: &str) -> Result<(), OpError> {
    let deadline = Instant::now() + ACTIVATION_WAIT;
    let mut seen_activating = false;
    loop {
        let device = nm.device(interface).await.map_err(nm_error)?;
        match device {
            Some(d) if d.state == DEVICE_ACTIVATED && d.active_profile.as_deref() == Some(uuid) => {
                return Ok(())
            }
            Some(d) if d.active_profile.as_deref() == Some(uuid) => seen_activating = true,
            // Failed or disconnected after it had started: NetworkManager gave up.
            Some(d) if seen_activating || d.state == DEVICE_FAILED => {
                return Err(OpError::Failed(format!(
                    "NetworkManager could not activate the profile on {interface}: the device \
                     is {} (reason {})",
                    crate::nm::device::device_state_name(d.state),
                    d.reason
                )));
            }
            _ => {}
        }
        if Instant::now() >= deadline {
            // Still activating (waiting for DHCP, say): the change is pending as it is.
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A new Ethernet profile for the netdev of a RoCE, rxe or siw port (what `nmcli connection
/// add type ethernet con-name NAME ifname NAME` gives, with these IP settings).
fn ethernet_settings(interface: &str, ip: &IpSettings) -> Settings {
    let mut settings = Settings::new();
    let mut connection = HashMap::new();
    crate::nm::keys::put(&mut connection, "id".into(), interface);
    crate::nm::keys::put(&mut connection, "type".into(), "802-3-ethernet");
    crate::nm::keys::put(&mut connection, "interface-name".into(), interface);
    settings.insert("connection".into(), connection);
    settings.insert("802-3-ethernet".into(), HashMap::new());
    put_ip(&mut settings, ip);
    settings.insert("proxy".into(), HashMap::new());
    settings
}

/// Replaces both families' settings of a profile.
fn put_ip(settings: &mut Settings, ip: &IpSettings) {
    profile::replace_ip(
        settings.entry("ipv4".into()).or_default(),
        &ip.ipv4,
        profile::Family::V4,
    );
    profile::replace_ip(
        settings.entry("ipv6".into()).or_default(),
        &ip.ipv6,
        profile::Family::V6,
    );
}

impl EngineHandle {
    /// The NetworkManager to change things through: `NotSupported`, with the reason, where
    /// there is none.
    pub(super) async fn network_manager(&self) -> Result<NetworkManager, OpError> {
        let Some(nm) = self.nm.client() else {
            return Err(OpError::NotSupported(
                "this daemon cannot reach NetworkManager (it serves a simulated host's \
                 services): IP settings are configured through NetworkManager"
                    .into(),
            ));
        };
        match nm.running().await {
            Ok(true) => Ok(nm),
            Ok(false) => Err(OpError::NotSupported(
                "NetworkManager is not running: IP settings of RDMA interfaces are configured \
                 through NetworkManager (start it, or use ip address / your distribution's \
                 network configuration)"
                    .into(),
            )),
            Err(e) => Err(nm_error(e)),
        }
    }

    /// NetworkManager, when it runs and manages `interface`'s device; `None` otherwise (the
    /// daemon configures the interface itself there).
    pub(super) async fn network_manager_managing(&self, interface: &str) -> Option<NetworkManager> {
        let nm = self.nm.client()?;
        if !nm.running().await.ok()? {
            return None;
        }
        match nm.device(interface).await {
            Ok(Some(d)) if d.managed => Some(nm),
            _ => None,
        }
    }

    /// What `name` is, if it is an RDMA netdev.
    pub async fn rdma_netdev(&self, name: &str) -> Result<RdmaNetdev, OpError> {
        let wanted = name.to_string();
        self.call(move |e| {
            Box::pin(async move {
                if let Some(i) = e.state.ipoib.values().find(|i| i.snap.name == wanted) {
                    let attrs = i.snap.ipoib.as_ref();
                    return Ok(RdmaNetdev::Ipoib {
                        parent: attrs.and_then(|a| a.parent.clone()),
                        pkey: attrs.and_then(|a| a.pkey.clone().ok()),
                        mode: attrs.and_then(|a| a.mode.clone().ok()),
                    });
                }
                let on_port = e.state.devices.values().any(|d| {
                    d.sources
                        .values()
                        .any(|s| s.netdev.as_deref() == Some(wanted.as_str()))
                });
                if on_port {
                    return Ok(RdmaNetdev::Port);
                }
                Err(OpError::NotFound(format!(
                    "{} is neither an IPoIB interface nor the network interface of an RDMA port",
                    rdma_manager_dbus::text::quote_capped(&wanted)
                )))
            })
        })
        .await
    }

    /// The IP settings of an RDMA netdev: its profile's, and its addresses now.
    pub async fn ip_settings(&self, interface: &str) -> Result<IpReport, OpError> {
        let nm = self.network_manager().await?;
        let kind = self.rdma_netdev(interface).await?;
        self.nm.refresh().await;
        let owner = self.nm.owner_of(interface);
        let device = nm.device(interface).await.map_err(nm_error)?;
        let settings = match &owner {
            Some(p) => Some(IpSettings::of_profile(
                &nm.profile_settings(&p.uuid).await.map_err(nm_error)?,
            )),
            None => None,
        };
        Ok(IpReport {
            kind,
            owner,
            device,
            settings,
        })
    }

    /// Changes the IP settings of an RDMA netdev through its NetworkManager profile (made
    /// when it has none) and activates it, inside a checkpoint of `timeout_secs`.
    pub async fn set_ip_settings(
        &self,
        interface: &str,
        keys: HashMap<String, OwnedValue>,
        timeout_secs: u32,
    ) -> Result<NmPending, OpError> {
        let timeout_secs = checked_timeout(timeout_secs)?;
        let nm = self.network_manager().await?;
        let kind = self.rdma_netdev(interface).await?;
        self.nm.refresh().await;
        let owner = self.nm.owner_of(interface);
        // Everything is checked before the checkpoint: bad input changes nothing.
        if nm.device(interface).await.map_err(nm_error)?.is_none() {
            return Err(OpError::NotFound(format!(
                "NetworkManager has no device {interface}; nothing was changed"
            )));
        }
        let (uuid, settings) = match &owner {
            Some(p) => {
                let mut settings = nm.profile_settings(&p.uuid).await.map_err(nm_error)?;
                let mut ip = IpSettings::of_profile(&settings);
                ip.apply(&keys, false)
                    .map_err(|e| OpError::InvalidArgument(e.to_string()))?;
                put_ip(&mut settings, &ip);
                (Some(p.uuid.clone()), settings)
            }
            None => {
                let mut ip = IpSettings::nmcli_defaults();
                ip.apply(&keys, true)
                    .map_err(|e| OpError::InvalidArgument(e.to_string()))?;
                let settings = match &kind {
                    RdmaNetdev::Port => ethernet_settings(interface, &ip),
                    RdmaNetdev::Ipoib { parent, pkey, mode } => {
                        let profile = IpoibProfile {
                            id: interface.to_string(),
                            interface: parent.clone().unwrap_or_else(|| interface.to_string()),
                            // The profile names the child `parent.%04x` of its P_Key: only a
                            // child of the kernel's name keeps its name under NetworkManager.
                            pkey: parent.as_ref().and(*pkey),
                            mode: match mode {
                                Some(IpoibMode::Connected) => TransportMode::Connected,
                                _ => TransportMode::Datagram,
                            },
                            mtu: None,
                            ipv4: ip.ipv4.clone(),
                            ipv6: ip.ipv6.clone(),
                        };
                        if profile.interface_name() != interface {
                            return Err(OpError::NotSupported(format!(
                                "NetworkManager names this P_Key child {} and cannot rename it; \
                                 {interface} can only be configured with ip address while it \
                                 keeps its name",
                                profile.interface_name()
                            )));
                        }
                        profile
                            .settings("")
                            .map_err(|e| OpError::InvalidArgument(e.to_string()))?
                    }
                };
                (None, settings)
            }
        };
        let name = interface.to_string();
        let what = format!("set the IP settings of {interface}");
        let mut tx = NmTx::begin(&nm, &what, timeout_secs).await?;
        let uuid = match uuid {
            Some(u) => {
                tx.update(&u, settings).await?;
                u
            }
            None => tx.add(settings).await?.uuid,
        };
        tx.check("activate the profile", move |nm| {
            Box::pin(async move {
                nm.activate(&uuid, Some(&name)).await.map_err(nm_error)?;
                wait_activated(nm, &name, &uuid).await
            })
        })
        .await?;
        let pending = tx.pending(interface);
        self.refresh_nm_owners().await;
        Ok(pending)
    }

    /// Activates (`up`) or deactivates the profile of an RDMA netdev, inside a checkpoint.
    pub async fn set_interface_up(
        &self,
        interface: &str,
        up: bool,
        timeout_secs: u32,
    ) -> Result<NmPending, OpError> {
        let timeout_secs = checked_timeout(timeout_secs)?;
        let nm = self.network_manager().await?;
        self.rdma_netdev(interface).await?;
        self.nm.refresh().await;
        let name = interface.to_string();
        let pending = if up {
            let Some(owner) = self.nm.owner_of(interface) else {
                return Err(OpError::NotFound(format!(
                    "no NetworkManager profile configures {interface}: give it IP settings \
                     first, which makes one; nothing was changed"
                )));
            };
            let what = format!("bring {interface} up with profile {}", owner.id);
            let mut tx = NmTx::begin(&nm, &what, timeout_secs).await?;
            tx.check("activate the profile", move |nm| {
                Box::pin(async move {
                    nm.activate(&owner.uuid, Some(&name))
                        .await
                        .map_err(nm_error)?;
                    wait_activated(nm, &name, &owner.uuid).await
                })
            })
            .await?;
            tx.pending(interface)
        } else {
            match nm.device(interface).await.map_err(nm_error)? {
                Some(d) if d.active_profile.is_some() => {}
                _ => {
                    return Err(OpError::InvalidArgument(format!(
                        "no NetworkManager profile is active on {interface}; nothing was changed"
                    )))
                }
            }
            let what = format!("bring {interface} down");
            let mut tx = NmTx::begin(&nm, &what, timeout_secs).await?;
            tx.check("deactivate", move |nm| {
                Box::pin(async move { nm.deactivate(&name).await.map_err(nm_error) })
            })
            .await?;
            tx.pending(interface)
        };
        self.refresh_nm_owners().await;
        Ok(pending)
    }

    /// Keeps a pending change: NetworkManager forgets its checkpoint (and what moved into
    /// NetworkManager is forgotten from `ipoib.toml`).
    pub async fn nm_confirm(&self, pending: &NmPending) -> Result<(), OpError> {
        let nm = self.network_manager().await?;
        nm.confirm(&pending.checkpoint).await.map_err(nm_error)?;
        self.forget_ipoib_children(pending.forget_on_confirm.clone())
            .await
            .map_err(|e| {
                e.with_more(
                    "; NetworkManager keeps the profiles, and the daemon leaves the interfaces                      they configure alone",
                )
            })
    }

    /// Undoes a pending change now: NetworkManager's rollback, then the daemon's own undo
    /// of the profiles it touched.
    pub async fn nm_roll_back(&self, pending: &NmPending) -> Result<(), OpError> {
        let nm = self.network_manager().await?;
        let r = nm.roll_back(&pending.checkpoint).await.map_err(nm_error);
        undo_profiles(&nm, &pending.undo).await;
        self.refresh_nm_owners().await;
        r
    }

    /// Gives the caller `secs` from now to confirm.
    pub async fn nm_extend(&self, checkpoint: &Checkpoint, secs: u32) -> Result<(), OpError> {
        let secs = checked_timeout(secs)?;
        let nm = self.network_manager().await?;
        nm.extend(checkpoint, secs).await.map_err(nm_error)
    }

    /// After NetworkManager rolled a checkpoint back by itself: the profiles it does not
    /// restore are put back, and the owners follow.
    pub async fn nm_rolled_back(&self, pending: &NmPending) {
        if let Ok(nm) = self.network_manager().await {
            undo_profiles(&nm, &pending.undo).await;
        }
        self.refresh_nm_owners().await;
    }

    /// Creates a P_Key child of `parent` (a port interface NetworkManager manages) as a
    /// NetworkManager profile, and activates it: NetworkManager creates the child and makes
    /// it again at every boot; `ipoib.toml` does not hold it.
    pub(super) async fn ipoib_nm_create_child(
        &self,
        nm: NetworkManager,
        parent: &str,
        pkey: u16,
        name: &str,
        settings: &IpoibSettings,
        timeout_secs: u32,
    ) -> Result<(String, NmPending), OpError> {
        let child = profile::child_name(parent, pkey);
        if !name.is_empty() && name != child {
            return Err(OpError::NotSupported(format!(
                "NetworkManager manages {parent} and names its P_Key child {child}; it cannot \
                 give a child another name ({}); nothing was changed",
                rdma_manager_dbus::text::quote_capped(name)
            )));
        }
        if settings.umcast == Some(true) {
            return Err(OpError::NotSupported(format!(
                "NetworkManager manages {parent} and has no umcast setting; nothing was changed"
            )));
        }
        let disabled = crate::nm::profile::IpConfig {
            method: crate::nm::profile::IpMethod::Disabled,
            ..crate::nm::profile::IpConfig::auto()
        };
        let profile = IpoibProfile {
            id: child.clone(),
            interface: parent.to_string(),
            pkey: Some(pkey),
            mode: match settings.mode {
                Some(IpoibMode::Connected) => TransportMode::Connected,
                _ => TransportMode::Datagram,
            },
            mtu: settings.mtu,
            // No addresses yet: the child comes up without waiting for DHCP; IP settings are
            // given afterwards.
            ipv4: disabled.clone(),
            ipv6: disabled,
        };
        let settings = profile
            .settings("")
            .map_err(|e| OpError::InvalidArgument(e.to_string()))?;
        let what = format!("add NetworkManager profile {child} (P_Key child of {parent})");
        let mut tx = NmTx::begin(&nm, &what, timeout_secs).await?;
        let added = tx.add(settings).await?;
        tx.check("activate the profile", move |nm| {
            Box::pin(async move { nm.activate(&added.uuid, None).await.map_err(nm_error) })
        })
        .await?;
        let pending = tx.pending(&child);
        self.refresh_nm_owners().await;
        Ok((child, pending))
    }

    /// Changes the `infiniband` settings of the profile that owns `interface` (mode, MTU)
    /// and activates it again, inside a checkpoint.
    pub(super) async fn ipoib_nm_update(
        &self,
        nm: NetworkManager,
        owner: ProfileSummary,
        interface: &str,
        mode: Option<IpoibMode>,
        mtu: Option<u32>,
    ) -> Result<NmPending, OpError> {
        if let Some(m) = mtu {
            if m == 0 || m > profile::MAX_MTU {
                return Err(OpError::InvalidArgument(format!(
                    "MTU {m} is outside 1 to {} (NetworkManager would store {}); nothing was \
                     changed",
                    profile::MAX_MTU,
                    profile::MAX_MTU
                )));
            }
        }
        let mut settings = nm.profile_settings(&owner.uuid).await.map_err(nm_error)?;
        let section = settings.entry("infiniband".into()).or_default();
        if let Some(m) = mode {
            let text = match m {
                IpoibMode::Connected => "connected",
                IpoibMode::Datagram => "datagram",
            };
            crate::nm::keys::put(section, "transport-mode".into(), text);
        }
        if let Some(m) = mtu {
            crate::nm::keys::put(section, "mtu".into(), m);
        }
        let what = format!(
            "change {interface}'s NetworkManager profile {} ({})",
            owner.id,
            match (mode, mtu) {
                (Some(_), _) => "transport mode",
                _ => "MTU",
            }
        );
        let name = interface.to_string();
        let uuid = owner.uuid.clone();
        let mut tx = NmTx::begin(&nm, &what, DEFAULT_TIMEOUT_SECS).await?;
        tx.update(&uuid, settings).await?;
        tx.check("activate the profile", move |nm| {
            Box::pin(async move {
                let on = nm
                    .device(&name)
                    .await
                    .map_err(nm_error)?
                    .map(|_| name.clone());
                nm.activate(&uuid, on.as_deref()).await.map_err(nm_error)
            })
        })
        .await?;
        let pending = tx.pending(interface);
        self.refresh_nm_owners().await;
        Ok(pending)
    }

    /// Deletes the profile that owns `interface`: NetworkManager takes a child it made down
    /// and deletes it. Inside a checkpoint, whose rollback brings the profile back.
    pub(super) async fn ipoib_nm_delete(
        &self,
        nm: NetworkManager,
        owner: ProfileSummary,
        interface: &str,
    ) -> Result<NmPending, OpError> {
        let what = format!("delete {interface}'s NetworkManager profile {}", owner.id);
        let uuid = owner.uuid.clone();
        let mut tx = NmTx::begin(&nm, &what, DEFAULT_TIMEOUT_SECS).await?;
        tx.delete(&uuid).await?;
        let pending = tx.pending(interface);
        self.refresh_nm_owners().await;
        Ok(pending)
    }
}

/// A `SetIp` step's nmcli keys as the Network interface takes them.
pub(super) fn nm_keys(keys: BTreeMap<String, String>) -> HashMap<String, OwnedValue> {
    keys.into_iter()
        .filter_map(|(k, v)| nm_value(&k, &v).map(|v| (k, v)))
        .collect()
}

/// An nmcli key's text value as the Network interface takes it: lists (addresses, dns,
/// dns-search) as arrays of strings, the rest as strings.
fn nm_value(key: &str, text: &str) -> Option<OwnedValue> {
    let list = key.ends_with(".addresses") || key.ends_with(".dns") || key.ends_with(".dns-search");
    let value = if list {
        let items: Vec<String> = text
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        Value::from(items)
    } else {
        Value::from(text.to_string())
    };
    OwnedValue::try_from(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_are_bounded_and_zero_is_the_default() {
        assert_eq!(checked_timeout(0), Ok(DEFAULT_TIMEOUT_SECS));
        assert_eq!(checked_timeout(10), Ok(10));
        assert_eq!(checked_timeout(3600), Ok(3600));
        assert!(matches!(
            checked_timeout(9),
            Err(OpError::InvalidArgument(_))
        ));
        assert!(matches!(
            checked_timeout(3601),
            Err(OpError::InvalidArgument(_))
        ));
    }

    #[test]
    fn networkmanager_errors_keep_their_kind() {
        assert!(matches!(
            nm_error(NmError::CheckpointConflict("x".into())),
            OpError::Busy(_)
        ));
        assert!(matches!(
            nm_error(NmError::NotRunning),
            OpError::NotSupported(_)
        ));
        assert!(matches!(
            nm_error(NmError::Refused("bad".into())),
            OpError::InvalidArgument(m) if m.contains("bad")
        ));
        assert!(matches!(
            nm_error(NmError::NoDevice("ib9".into())),
            OpError::NotFound(_)
        ));
    }
}
