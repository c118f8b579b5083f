//! IPoIB: P_Key children and the mode, MTU and umcast of IPoIB interfaces. Each change is
//! validated, made in the kernel (rtnetlink, as `ip link` does), published, then persisted in
//! `ipoib.toml` under the port's GUID; when the save fails the kernel change is undone. What was
//! persisted is re-applied when a port's interface (or a child) appears.
//!
//! Where NetworkManager manages the parent (a child is created) or owns the interface (mode,
//! MTU, delete), the change goes to its profile instead (`nm_change`), pending confirmation.

use tracing::{info, warn};

use crate::config::{IpoibChildEntry, IpoibConfig, IpoibSettings};
use crate::kernel::{HostError, NetdevChange, NewIpoibChild};
use crate::model::ipoib::{
    check_mtu, default_child_name, full_member, parse_mode, validate_pkey, IpoibError,
};
use crate::model::names::validate_netdev_name;
use crate::model::{Errno, Guid, IpoibMode};

use super::nm_change::{self, NmPending};
use super::state::{IpoibState, ObservedState};
use super::transaction::Transaction;
use super::wanted::Appeared;
use super::{Dirty, Engine, EngineHandle, OpError};
use crate::nm::client::{NetworkManager, ProfileSummary};
use rdma_manager_dbus::text::quote_capped;
use rdma_manager_model::state;

/// What creating a P_Key child did.
#[derive(Debug, Clone, PartialEq)]
pub enum ChildCreated {
    /// The daemon created it in the kernel and remembers it: its ifindex.
    Kernel(u32),
    /// NetworkManager manages the parent: a profile was added and activated, and
    /// NetworkManager creates the child (named here), pending confirmation.
    NetworkManager { name: String, pending: NmPending },
}

/// The state document's `interfaces` list: the IPoIB interfaces and P_Key children, IP
/// settings aside (they come from NetworkManager, asked on the caller's task).
pub(super) fn interface_entries(st: &ObservedState) -> Vec<state::InterfaceEntry> {
    let mut interfaces: Vec<state::InterfaceEntry> = st
        .ipoib
        .values()
        .filter_map(|i| {
            let a = i.snap.ipoib.as_ref()?;
            let child = a.parent.is_some();
            Some(state::InterfaceEntry {
                name: i.snap.name.clone(),
                kind: state::InterfaceType::Infiniband,
                state: Some(state::EntryState::Up),
                mtu: i.snap.mtu.as_ref().ok().copied(),
                infiniband: Some(state::Infiniband {
                    mode: a
                        .mode
                        .as_ref()
                        .ok()
                        .map(|m| state::StateIpoibMode::from(*m)),
                    umcast: a.umcast.as_ref().ok().copied(),
                    base_iface: a.parent.clone(),
                    pkey: child
                        .then(|| a.pkey.as_ref().ok().map(|p| format!("{p:#06x}")))
                        .flatten(),
                }),
                ipv4: None,
                ipv6: None,
            })
        })
        .collect();
    interfaces.sort_by(|a, b| a.name.cmp(&b.name));

    interfaces
}

impl EngineHandle {
    /// Runs a step of the state's `interfaces` list through the job of its one-shot method.
    /// A change NetworkManager made is confirmed at once: the state's undo steps take it back.
    pub(super) async fn run_interface_step(
        &self,
        step: state::InterfaceStep,
    ) -> Result<(), OpError> {
        use state::InterfaceStep;
        match step {
            InterfaceStep::CreateChild { parent, pkey, name } => {
                let parent = self.ifindex_of(&parent).await?;
                let created = self
                    .ipoib_create_child(parent, u32::from(pkey), &name, IpoibSettings::default())
                    .await?;
                if let super::ChildCreated::NetworkManager { pending, .. } = created {
                    self.nm_confirm(&pending).await?;
                }
                Ok(())
            }
            InterfaceStep::DeleteChild { name } => {
                let ifindex = self.ifindex_of(&name).await?;
                let pending = self.ipoib_delete(ifindex).await?;
                self.confirm_if_any(pending).await
            }
            InterfaceStep::SetMode { name, mode } => {
                let ifindex = self.ifindex_of(&name).await?;
                let mode = match mode {
                    state::StateIpoibMode::Datagram => "datagram",
                    state::StateIpoibMode::Connected => "connected",
                };
                let pending = self.ipoib_set_mode(ifindex, mode).await?;
                self.confirm_if_any(pending).await
            }
            InterfaceStep::SetMtu { name, mtu } => {
                let ifindex = self.ifindex_of(&name).await?;
                let pending = self.ipoib_set_mtu(ifindex, mtu).await?;
                self.confirm_if_any(pending).await
            }
            InterfaceStep::SetUmcast { name, umcast } => {
                let ifindex = self.ifindex_of(&name).await?;
                self.ipoib_set_umcast(ifindex, umcast).await
            }
            InterfaceStep::SetIp { name, keys } => {
                let keys = nm_change::nm_keys(keys);
                let pending = self
                    .set_ip_settings(&name, keys, *super::nm_change::TIMEOUT_RANGE.start())
                    .await?;
                self.nm_confirm(&pending).await
            }
        }
    }

    /// Publishes the owners NetworkManager has now.
    pub(super) async fn refresh_nm_owners(&self) {
        self.nm.refresh().await;
        let _ = self
            .call(|e| {
                Box::pin(async move {
                    sync_nm_owners(e).await;
                    Ok(())
                })
            })
            .await;
    }

    /// An IPoIB interface's name, and the profile of NetworkManager's that owns it (if any).
    async fn ipoib_name(&self, ifindex: u32) -> Result<String, OpError> {
        self.call(move |e| {
            Box::pin(async move {
                e.state
                    .ipoib
                    .get(&ifindex)
                    .map(|i| i.snap.name.clone())
                    .ok_or_else(|| {
                        OpError::NotFound(format!("no IPoIB interface has ifindex {ifindex}"))
                    })
            })
        })
        .await
    }

    /// The interface's owner, when it is NetworkManager and NetworkManager runs: changes of
    /// the interface go to its profile.
    async fn nm_owner(
        &self,
        ifindex: u32,
    ) -> Result<Option<(String, NetworkManager, ProfileSummary)>, OpError> {
        let name = self.ipoib_name(ifindex).await?;
        self.nm.refresh().await;
        let Some(owner) = self.nm.owner_of(&name) else {
            return Ok(None);
        };
        match self.nm.client() {
            Some(nm) if nm.running().await.unwrap_or(false) => Ok(Some((name, nm, owner))),
            _ => Ok(None),
        }
    }

    /// Creates a P_Key child of the port interface with `parent` ifindex. Where
    /// NetworkManager manages the parent, as a NetworkManager profile (see `nm_change`);
    /// elsewhere in the kernel, with `settings` applied and remembered in `ipoib.toml`.
    pub async fn ipoib_create_child(
        &self,
        parent: u32,
        pkey: u32,
        name: &str,
        settings: IpoibSettings,
    ) -> Result<ChildCreated, OpError> {
        let name = name.to_string();
        let parent_name = self.ipoib_name(parent).await?;
        self.nm.refresh().await;
        if let Some(nm) = self.network_manager_managing(&parent_name).await {
            let pkey = u16::try_from(pkey)
                .ok()
                .filter(|p| *p != 0 && *p != 0x8000)
                .ok_or_else(|| {
                    OpError::InvalidArgument(format!(
                        "P_Key {pkey:#x} is outside 0x0001 to 0xffff or reserved (0x8000)"
                    ))
                })?;
            settings.validate().map_err(invalid)?;
            let (child, pending) = self
                .ipoib_nm_create_child(
                    nm,
                    &parent_name,
                    pkey,
                    &name,
                    &settings,
                    nm_change::DEFAULT_TIMEOUT_SECS,
                )
                .await?;
            return Ok(ChildCreated::NetworkManager {
                name: child,
                pending,
            });
        }
        self.call(move |e| {
            Box::pin(async move {
                sync_nm_owners(e).await;
                refuse_nm_owned_child(e, parent, pkey, &name)?;
                ipoib_create_child(e, parent, pkey, &name, settings).await
            })
        })
        .await
        .map(ChildCreated::Kernel)
    }

    /// The ifindex of the IPoIB interface `name`, once the daemon has it.
    pub async fn ipoib_ifindex(&self, name: &str) -> Option<u32> {
        let name = name.to_string();
        self.call(move |e| {
            Box::pin(async move {
                Ok(e.state
                    .ipoib
                    .values()
                    .find(|i| i.snap.name == name)
                    .map(|i| i.ifindex))
            })
        })
        .await
        .ok()
        .flatten()
    }

    /// Deletes a P_Key child and forgets it; one NetworkManager owns, by deleting its
    /// profile (pending confirmation).
    pub async fn ipoib_delete(&self, ifindex: u32) -> Result<Option<NmPending>, OpError> {
        if let Some((name, nm, owner)) = self.nm_owner(ifindex).await? {
            return self.ipoib_nm_delete(nm, owner, &name).await.map(Some);
        }
        self.call(move |e| {
            Box::pin(async move {
                sync_nm_owners(e).await;
                refuse_nm_owned(e, ifindex, "delete it")?;
                ipoib_delete(e, ifindex).await
            })
        })
        .await
        .map(|()| None)
    }

    /// Sets the transport mode (`datagram` or `connected`) and remembers it; of an
    /// interface NetworkManager owns, in its profile (pending confirmation).
    pub async fn ipoib_set_mode(
        &self,
        ifindex: u32,
        mode: &str,
    ) -> Result<Option<NmPending>, OpError> {
        let mode = parse_mode(mode).map_err(invalid)?;
        if let Some((name, nm, owner)) = self.nm_owner(ifindex).await? {
            return self
                .ipoib_nm_update(nm, owner, &name, Some(mode), None)
                .await
                .map(Some);
        }
        self.call(move |e| {
            Box::pin(async move {
                sync_nm_owners(e).await;
                refuse_nm_owned(e, ifindex, "set its transport mode")?;
                ipoib_set_mode(e, ifindex, mode).await
            })
        })
        .await
        .map(|()| None)
    }

    /// Sets the MTU and remembers it; of an interface NetworkManager owns, in its profile
    /// (pending confirmation).
    pub async fn ipoib_set_mtu(
        &self,
        ifindex: u32,
        mtu: u32,
    ) -> Result<Option<NmPending>, OpError> {
        if let Some((name, nm, owner)) = self.nm_owner(ifindex).await? {
            return self
                .ipoib_nm_update(nm, owner, &name, None, Some(mtu))
                .await
                .map(Some);
        }
        self.call(move |e| {
            Box::pin(async move {
                sync_nm_owners(e).await;
                refuse_nm_owned(e, ifindex, "set its MTU")?;
                ipoib_set_mtu(e, ifindex, mtu).await
            })
        })
        .await
        .map(|()| None)
    }

    /// Allows or stops user-space multicast (umcast) and remembers it. NetworkManager has
    /// no such setting: refused on interfaces it owns.
    pub async fn ipoib_set_umcast(&self, ifindex: u32, umcast: bool) -> Result<(), OpError> {
        self.nm.refresh().await;
        self.call(move |e| {
            Box::pin(async move {
                sync_nm_owners(e).await;
                refuse_nm_owned(e, ifindex, "set its umcast")?;
                ipoib_set_umcast(e, ifindex, umcast).await
            })
        })
        .await
    }
}

fn invalid(e: IpoibError) -> OpError {
    OpError::InvalidArgument(e.to_string())
}

/// Why connected mode cannot be had on an interface whose address lacks IPOIB_FLAGS_RC.
pub(crate) fn connected_unsupported(name: &str) -> OpError {
    OpError::NotSupported(format!(
        "{name} cannot use connected mode: its hardware address lacks the connected-mode flag (0x80 in the first byte), as on every enhanced IPoIB interface (mlx5: ConnectX-4 and later), and the kernel refuses the switch; \
         stay in datagram mode (MTU up to 4092), or, with MLNX_OFED's ib_ipoib, turn enhanced IPoIB off with `options ib_ipoib ipoib_enhanced=0` in /etc/modprobe.d/ and reload the driver (the kernel's own ib_ipoib has no such option)"
    ))
}

/// What an operation needs to know about an IPoIB interface, from the published state.
#[derive(Debug, Clone)]
struct Iface {
    ifindex: u32,
    name: String,
    /// The parent's name, for a P_Key child.
    parent: Option<String>,
    pkey: Option<u16>,
    guid: Option<Guid>,
    /// Whether the address allows connected mode; `None` when it is unreadable.
    connected_ok: Option<bool>,
    mode: Option<IpoibMode>,
    mtu: Option<u32>,
    umcast: Option<bool>,
}

impl Iface {
    fn of(i: &IpoibState) -> Iface {
        let attrs = i.snap.ipoib.as_ref();
        let address = i.snap.address.as_ref().ok();
        Iface {
            ifindex: i.ifindex,
            name: i.snap.name.clone(),
            parent: attrs.and_then(|a| a.parent.clone()),
            pkey: attrs.and_then(|a| a.pkey.clone().ok()),
            guid: address.and_then(|a| a.ipoib_port_guid()),
            connected_ok: address.and_then(|a| a.ipoib_supports_connected()),
            mode: attrs.and_then(|a| a.mode.clone().ok()),
            mtu: i.snap.mtu.clone().ok(),
            umcast: attrs.and_then(|a| a.umcast.clone().ok()),
        }
    }

    /// The port GUID its settings are remembered under.
    fn port_guid(&self) -> Result<Guid, OpError> {
        self.guid.ok_or_else(|| {
            OpError::Failed(format!(
                "cannot tell which InfiniBand port {} runs on (its 20-byte hardware address is unreadable), and IPoIB settings are remembered by port GUID; nothing was changed",
                self.name
            ))
        })
    }

    /// The port GUID, after checking that a child's P_Key (its identity among the port's
    /// children) is known: what the interface's settings are remembered under.
    fn identity(&self) -> Result<Guid, OpError> {
        let guid = self.port_guid()?;
        if self.parent.is_some() && self.pkey.is_none() {
            return Err(OpError::Failed(format!(
                "cannot tell the P_Key of {}, which tells it apart from its port's other children; nothing was changed",
                self.name
            )));
        }
        Ok(guid)
    }

    fn settings(&self) -> IpoibSettings {
        IpoibSettings {
            mode: self.mode,
            mtu: self.mtu,
            umcast: self.umcast,
        }
    }

    /// Refuses connected mode up front where the kernel would refuse it.
    fn check_mode(&self, mode: IpoibMode) -> Result<(), OpError> {
        if mode == IpoibMode::Connected && self.connected_ok == Some(false) {
            return Err(connected_unsupported(&self.name));
        }
        Ok(())
    }
}

/// A P_Key child to create, as checked (see `check_new_child`).
struct NewChild {
    parent: Iface,
    name: String,
    /// As asked; the kernel ORs in the full-membership bit.
    pkey: u16,
    /// With the full-membership bit: the partition, and the child's identity on its port.
    effective: u16,
    /// The MTU comes with the mode it fits.
    settings: IpoibSettings,
}

fn ipoib_iface(eng: &Engine, ifindex: u32) -> Result<Iface, OpError> {
    eng.state.ipoib.get(&ifindex).map(Iface::of).ok_or_else(|| {
        OpError::NotFound(format!(
            "there is no IPoIB interface with ifindex {ifindex} any more (it was removed)"
        ))
    })
}

fn ipoib_by_name(eng: &Engine, name: &str) -> Option<Iface> {
    eng.state
        .ipoib
        .values()
        .find(|i| i.snap.name == name)
        .map(Iface::of)
}

/// The children of `parent` the kernel has now.
fn ipoib_children(eng: &Engine, parent: &str) -> Vec<Iface> {
    eng.state
        .ipoib
        .values()
        .map(Iface::of)
        .filter(|i| i.parent.as_deref() == Some(parent))
        .collect()
}

/// Re-reads the named netdevs after a change and publishes before the caller is answered.
async fn settle_netdevs(eng: &mut Engine, names: &[&str]) -> Result<(), OpError> {
    let set = names.iter().map(|s| s.to_string()).collect();
    let host = eng.host.clone();
    let dirty: Dirty = eng
        .state
        .refresh_netdevs(host.as_ref(), &set)
        .await
        .map_err(OpError::from_host)?;
    eng.publish(dirty).await;
    Ok(())
}

/// Settles after a kernel step that succeeded: a failed re-read is repaired by the next
/// event or resync and must not stop the change from being saved.
async fn settle_or_warn(eng: &mut Engine, names: &[&str]) {
    if let Err(e) = settle_netdevs(eng, names).await {
        warn!(netdevs = ?names, error = %e, "re-reading after an IPoIB change failed");
    }
}

/// Gives an RTM_NEWLINK errno its meaning for a child.
fn explain_new_child(e: HostError, c: &NewIpoibChild) -> OpError {
    let Some(errno) = e.errno() else {
        return OpError::from_host(e);
    };
    let (parent, name) = (&c.parent, &c.name);
    match errno {
        Errno::EEXIST => OpError::AlreadyExists(format!(
            "a network interface named {name} exists already (EEXIST); give the child another name"
        )),
        Errno::ENODEV => OpError::NotFound(format!(
            "{parent} is not an InfiniBand interface (any more) (ENODEV); nothing was created"
        )),
        Errno::EOPNOTSUPP => OpError::NotSupported(format!(
            "the kernel cannot make IPoIB children over rtnetlink (EOPNOTSUPP): is the ib_ipoib module loaded? ({e})"
        )),
        Errno::EINVAL => match c.mode {
            Some(IpoibMode::Connected) => OpError::NotSupported(format!(
                "the kernel refused {name} in connected mode (EINVAL): {parent}'s HCA cannot do connected mode; create it in datagram mode"
            )),
            _ => OpError::InvalidArgument(format!(
                "the kernel refused to make {name} on {parent} with P_Key {:#06x} (EINVAL); nothing was created",
                c.pkey
            )),
        },
        _ => OpError::from_host(e),
    }
}

/// Gives a changelink errno its meaning for an IPoIB interface.
fn explain_change(eng: &Engine, e: HostError, name: &str, ch: &NetdevChange) -> OpError {
    match e.errno() {
        Some(Errno::EINVAL) if ch.ipoib_mode == Some(IpoibMode::Connected) => {
            connected_unsupported(name)
        }
        Some(Errno::EINVAL) if ch.mtu.is_some() => {
            let mtu = ch.mtu.unwrap_or_default();
            let mode = ipoib_by_name(eng, name)
                .and_then(|i| ch.ipoib_mode.or(i.mode))
                .unwrap_or(IpoibMode::Datagram);
            OpError::InvalidArgument(match mode {
                IpoibMode::Datagram => format!(
                    "the kernel refused MTU {mtu} on {name} (EINVAL): in datagram mode the MTU is at most the port's InfiniBand MTU minus the 4-byte IPoIB header, which is 2044 when the port's InfiniBand MTU is 2048; use a smaller MTU, or connected mode"
                ),
                IpoibMode::Connected => format!(
                    "the kernel refused MTU {mtu} on {name} in connected mode (EINVAL): this HCA's connected-mode limit is below 65520 (the kernel lowers it when the HCA has no shared receive queues); use a smaller MTU"
                ),
            })
        }
        Some(Errno::EBUSY) => OpError::Busy(format!(
            "the kernel was busy changing {name}'s mode (EBUSY); nothing else was changed, try again"
        )),
        Some(Errno::EOPNOTSUPP) => OpError::NotSupported(format!(
            "{name} does not take IPoIB settings over rtnetlink (EOPNOTSUPP): is it an IPoIB interface of the ib_ipoib driver? ({e})"
        )),
        _ => OpError::from_host(e),
    }
}

pub(super) async fn ipoib_create_child(
    eng: &mut Engine,
    parent_ifindex: u32,
    pkey: u32,
    name: &str,
    settings: IpoibSettings,
) -> Result<u32, OpError> {
    let new = check_new_child(eng, parent_ifindex, pkey, name, settings).await?;
    let guid = new.parent.port_guid()?;
    let mut persisted: IpoibConfig = eng.config()?;
    let mut tx = Transaction::new(format!("create IPoIB child {}", new.name));
    let ifindex = make_child(eng, &mut tx, &new).await?;
    remember_child(&mut persisted, guid, &new);
    tx.check(eng, "save ipoib.toml", move |e: &mut Engine| {
        Box::pin(e.persist(persisted))
    })
    .await?;
    tx.commit();
    info!(child = %new.name, parent = %new.parent.name,
        pkey = format!("{:#06x}", new.effective), "created IPoIB child");
    // The kernel makes the child whatever the port's table holds; without its partition
    // there, it never joins its broadcast group (the Ipoib object's DownReason says so too).
    if let Some(port) = port_lacking_partition(eng, parent_ifindex, new.effective) {
        warn!(child = %new.name, port = %port, pkey = format!("{:#06x}", new.effective),
            "the child's P_Key is not in its port's P_Key table: it stays without carrier until the subnet manager gives the port this partition");
    }
    Ok(ifindex)
}

/// The port (`dev/N`) of the IPoIB interface `ifindex` when its P_Key table lacks the
/// partition of `pkey` (either membership); `None` when it has it or is not known.
fn port_lacking_partition(eng: &Engine, ifindex: u32, pkey: u16) -> Option<String> {
    let (d, p) = eng.state.ipoib.get(&ifindex)?.port?;
    let dev = eng.state.devices.get(&d)?;
    let port = dev.snap.ports.iter().find(|x| x.number == p)?;
    let has = port.pkeys.iter().any(|k| k.pkey & 0x7fff == pkey & 0x7fff);
    (!has).then(|| format!("{}/{p}", dev.snap.name))
}

/// Checks a child to be created against its parent, its future siblings and the names
/// in use, before anything is changed.
async fn check_new_child(
    eng: &Engine,
    parent_ifindex: u32,
    pkey: u32,
    name: &str,
    settings: IpoibSettings,
) -> Result<NewChild, OpError> {
    let parent = ipoib_iface(eng, parent_ifindex)?;
    if let Some(pp) = &parent.parent {
        return Err(OpError::InvalidArgument(format!(
            "{} is itself a P_Key child of {pp}, and the kernel makes no children of children; call CreateChild on {pp}",
            parent.name
        )));
    }
    let pkey = validate_pkey(pkey).map_err(invalid)?;
    let effective = full_member(pkey);
    let name = if name.is_empty() {
        default_child_name(&parent.name, pkey)
    } else {
        validate_netdev_name(name).map_err(|e| {
            OpError::InvalidArgument(format!(
                "{e} (interface name {name_q})",
                name_q = quote_capped(name)
            ))
        })?;
        name.to_string()
    };
    let mut settings = settings;
    let mode = settings.mode.unwrap_or(IpoibMode::Datagram);
    parent.check_mode(mode)?;
    if let Some(mtu) = settings.mtu {
        check_mtu(mode, mtu).map_err(invalid)?;
        // An MTU is remembered with the mode it fits.
        settings.mode = Some(mode);
    }
    if parent.pkey == Some(effective) {
        return Err(OpError::AlreadyExists(format!(
            "{} itself carries P_Key {effective:#06x}; a child would join the same partition",
            parent.name
        )));
    }
    if let Some(twin) = ipoib_children(eng, &parent.name)
        .into_iter()
        .find(|c| c.pkey == Some(effective))
    {
        return Err(OpError::AlreadyExists(format!(
            "{} is already the child of {} with P_Key {effective:#06x} (the kernel sets the full-membership bit 0x8000, so {:#06x} and {effective:#06x} are the same partition)",
            twin.name,
            parent.name,
            effective & !0x8000
        )));
    }
    match eng.host.read_netdev(&name).await {
        Ok(_) => {
            return Err(OpError::AlreadyExists(format!(
                "a network interface named {name} exists already; give the child another name"
            )))
        }
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(OpError::from_host(e)),
    }
    Ok(NewChild {
        parent,
        name,
        pkey,
        effective,
        settings,
    })
}

/// The kernel's part of creating a child, as steps of `tx`: creates it (undone by
/// deleting it), publishes it with its parent, and sets its MTU. Its ifindex.
async fn make_child(
    eng: &mut Engine,
    tx: &mut Transaction<Engine>,
    new: &NewChild,
) -> Result<u32, OpError> {
    let name = new.name.clone();
    let req = NewIpoibChild {
        parent: new.parent.name.clone(),
        name: name.clone(),
        pkey: new.pkey,
        mode: new.settings.mode,
        umcast: new.settings.umcast,
    };
    let made = name.clone();
    tx.step(
        eng,
        "create the child",
        move |e: &mut Engine| {
            Box::pin(async move {
                e.host
                    .create_ipoib_child(&req)
                    .await
                    .map_err(|err| explain_new_child(err, &req))
            })
        },
        // Deletes the child made moments ago because a later step failed.
        move |e: &mut Engine, ()| {
            Box::pin(async move {
                let name = made;
                let undo = e.host.delete_netdev(&name).await;
                let _ = settle_netdevs(e, &[&name]).await;
                match undo {
                    Ok(()) => Ok(format!("{name} was removed again")),
                    Err(u) => Err(format!(
                        "removing {name} again also failed ({u}): remove it with `ip link delete {name}`"
                    )),
                }
            })
        },
    )
    .await?;
    let both = [name.clone(), new.parent.name.clone()];
    tx.check(eng, "publish the child", move |e: &mut Engine| {
        Box::pin(async move { settle_netdevs(e, &[&both[0], &both[1]]).await })
    })
    .await?;
    let Some(child) = ipoib_by_name(eng, &name) else {
        return Err(OpError::Failed(format!(
            "the kernel accepted {name} but it vanished before it could be published"
        )));
    };
    if let Some(mtu) = new.settings.mtu {
        tx.check(eng, "set the MTU", move |e: &mut Engine| {
            Box::pin(async move {
                let ch = NetdevChange {
                    mtu: Some(mtu),
                    ..NetdevChange::default()
                };
                if let Err(err) = e.host.change_netdev(&name, &ch).await {
                    return Err(explain_change(e, err, &name, &ch));
                }
                settle_netdevs(e, &[&name]).await
            })
        })
        .await?;
    }
    Ok(child.ifindex)
}

pub(super) async fn ipoib_delete(eng: &mut Engine, ifindex: u32) -> Result<(), OpError> {
    let child = ipoib_iface(eng, ifindex)?;
    let Some(parent) = child.parent.clone() else {
        return Err(OpError::InvalidArgument(format!(
            "{} is a port's own IPoIB interface: it belongs to the HCA's driver and exists as long as the port does (the kernel ignores a delete of it); only P_Key children can be deleted",
            child.name
        )));
    };
    let mut persisted: IpoibConfig = eng.config()?;
    let pkey = child.pkey;
    // Forget the remembered child of this P_Key, unless another child of the same P_Key
    // (made by hand) stays.
    let twin = ipoib_children(eng, &parent)
        .into_iter()
        .any(|c| c.ifindex != ifindex && c.pkey == pkey);
    let remembered =
        match (child.guid, pkey) {
            (Some(g), Some(p)) if !twin => persisted
                .ports
                .iter_mut()
                .find(|e| e.guid == g)
                .and_then(|e| {
                    let i = e.children.iter().position(|c| c.pkey == p)?;
                    Some(e.children.remove(i))
                }),
            _ => None,
        };
    persisted.prune();
    let name = child.name.clone();
    let mut tx = Transaction::new(format!("delete IPoIB child {name}"));
    let (gone, undo_parent) = (child.clone(), parent.clone());
    let parent_name = parent.clone();
    tx.step(
        eng,
        "delete the child",
        move |e: &mut Engine| {
            Box::pin(async move {
                e.host
                    .delete_netdev(&gone.name)
                    .await
                    .map_err(OpError::from_host)?;
                settle_or_warn(e, &[&gone.name, &parent_name]).await;
                Ok(())
            })
        },
        // It would come back at the next start anyway, so put it back now.
        move |e: &mut Engine, ()| {
            Box::pin(async move {
                let settings = remembered.map(|r| r.settings()).unwrap_or_default();
                let name = &child.name;
                let restored = recreate(e,
                        &undo_parent,
                        name,
                        pkey.unwrap_or(0x8000),
                        child.settings(),
                        settings,
                    )
                    .await;
                match restored {
                    Ok(()) => Ok(format!("{name} was created again")),
                    Err(u) => Err(format!(
                        "creating {name} again also failed ({u}); it will be re-created at the next start"
                    )),
                }
            })
        },
    )
    .await?;
    tx.check(eng, "save ipoib.toml", move |e: &mut Engine| {
        Box::pin(e.persist(persisted))
    })
    .await?;
    tx.commit();
    info!(child = %name, parent = %parent, "deleted IPoIB child");
    Ok(())
}

/// Makes a child again (mode and umcast at creation, then the MTU): as it `was` in the
/// kernel when that is known (undoing a delete), else as `remembered` (a restore).
async fn recreate(
    eng: &mut Engine,
    parent: &str,
    name: &str,
    pkey: u16,
    was: IpoibSettings,
    remembered: IpoibSettings,
) -> Result<(), OpError> {
    let req = NewIpoibChild {
        parent: parent.to_string(),
        name: name.to_string(),
        pkey,
        mode: was.mode.or(remembered.mode),
        umcast: was.umcast.or(remembered.umcast),
    };
    let made = eng.host.create_ipoib_child(&req).await;
    let made = match made {
        Ok(()) => match was.mtu.or(remembered.mtu) {
            Some(mtu) => {
                let ch = NetdevChange {
                    mtu: Some(mtu),
                    ..NetdevChange::default()
                };
                eng.host
                    .change_netdev(name, &ch)
                    .await
                    .map_err(|e| explain_change(eng, e, name, &ch))
            }
            None => Ok(()),
        },
        Err(e) => Err(explain_new_child(e, &req)),
    };
    let _ = settle_netdevs(eng, &[name, parent]).await;
    made
}

pub(super) async fn ipoib_set_mode(
    eng: &mut Engine,
    ifindex: u32,
    mode: IpoibMode,
) -> Result<(), OpError> {
    let iface = ipoib_iface(eng, ifindex)?;
    iface.check_mode(mode)?;
    let guid = iface.identity()?;
    let mut persisted: IpoibConfig = eng.config()?;
    let mut wanted = remembered_settings(&persisted, &iface);
    if iface.mode != Some(mode) {
        // The kernel resizes the MTU to the new mode's default: a remembered MTU would
        // no longer be what the interface has.
        wanted.mtu = None;
    }
    wanted.mode = Some(mode);
    remember(&mut persisted, &iface, guid, wanted);
    let ch = NetdevChange {
        ipoib_mode: Some(mode),
        ..NetdevChange::default()
    };
    change_then_persist(eng, &iface, ch, persisted).await
}

pub(super) async fn ipoib_set_mtu(eng: &mut Engine, ifindex: u32, mtu: u32) -> Result<(), OpError> {
    let iface = ipoib_iface(eng, ifindex)?;
    let mode = iface.mode.unwrap_or(IpoibMode::Datagram);
    check_mtu(mode, mtu).map_err(|e| {
        OpError::InvalidArgument(format!("{e} ({} is in {} mode)", iface.name, mode.as_str()))
    })?;
    let guid = iface.identity()?;
    let mut persisted: IpoibConfig = eng.config()?;
    let mut wanted = remembered_settings(&persisted, &iface);
    wanted.mtu = Some(mtu);
    // An MTU is remembered with the mode it fits.
    wanted.mode = Some(mode);
    remember(&mut persisted, &iface, guid, wanted);
    let ch = NetdevChange {
        mtu: Some(mtu),
        ..NetdevChange::default()
    };
    change_then_persist(eng, &iface, ch, persisted).await?;
    if let Some(now) = ipoib_by_name(eng, &iface.name).and_then(|i| i.mtu) {
        if now != mtu {
            info!(interface = %iface.name, asked = mtu, effective = now,
                "the kernel keeps the datagram MTU within the partition's broadcast group MTU");
        }
    }
    Ok(())
}

pub(super) async fn ipoib_set_umcast(
    eng: &mut Engine,
    ifindex: u32,
    umcast: bool,
) -> Result<(), OpError> {
    let iface = ipoib_iface(eng, ifindex)?;
    let guid = iface.identity()?;
    let mut persisted: IpoibConfig = eng.config()?;
    let mut wanted = remembered_settings(&persisted, &iface);
    wanted.umcast = Some(umcast);
    remember(&mut persisted, &iface, guid, wanted);
    let ch = NetdevChange {
        ipoib_umcast: Some(umcast),
        ..NetdevChange::default()
    };
    change_then_persist(eng, &iface, ch, persisted).await
}

/// Applies `ch`, publishes, saves `persisted`; when the save fails, puts back what `ch`
/// changed.
async fn change_then_persist(
    eng: &mut Engine,
    iface: &Iface,
    ch: NetdevChange,
    persisted: IpoibConfig,
) -> Result<(), OpError> {
    let name = iface.name.clone();
    let mut back = NetdevChange::default();
    if ch.ipoib_mode.is_some() && iface.mode != ch.ipoib_mode {
        back.ipoib_mode = iface.mode;
        // A mode change resized the MTU: the old one goes back after the mode.
        back.mtu = iface.mtu;
    }
    if ch.mtu.is_some() {
        back.mtu = iface.mtu;
    }
    if ch.ipoib_umcast.is_some() {
        back.ipoib_umcast = iface.umcast;
    }
    let mut tx = Transaction::new(format!("change IPoIB interface {name}"));
    let changed = name.clone();
    tx.step(
        eng,
        "change the interface",
        move |e: &mut Engine| {
            Box::pin(async move {
                if let Err(err) = e.host.change_netdev(&changed, &ch).await {
                    let why = explain_change(e, err, &changed, &ch);
                    // A refused step may follow one the kernel applied (mode before MTU):
                    // re-read.
                    let _ = settle_netdevs(e, &[&changed]).await;
                    return Err(why);
                }
                settle_or_warn(e, &[&changed]).await;
                Ok(())
            })
        },
        move |e: &mut Engine, ()| {
            Box::pin(async move {
                let undo = if back == NetdevChange::default() {
                    Ok(())
                } else {
                    e.host.change_netdev(&name, &back).await
                };
                let _ = settle_netdevs(e, &[&name]).await;
                match undo {
                    Ok(()) => Ok(format!("{name} was set back as it was")),
                    Err(u) => Err(format!(
                        "setting {name} back also failed ({u}); the change lasts until the next reboot"
                    )),
                }
            })
        },
    )
    .await?;
    tx.check(eng, "save ipoib.toml", move |e: &mut Engine| {
        Box::pin(e.persist(persisted))
    })
    .await?;
    tx.commit();
    Ok(())
}

/// Re-applies remembered IPoIB settings and children to the interfaces that appeared.
/// Refuses a change of an interface NetworkManager owns (see `nm_owners`).
fn refuse_nm_owned(eng: &Engine, ifindex: u32, what: &str) -> Result<(), OpError> {
    match eng.state.ipoib.get(&ifindex) {
        Some(i) => eng.ops.nm.refuse_if_owned(&i.snap.name, what),
        // Unknown here: the operation itself says so.
        None => Ok(()),
    }
}

/// Refuses a child NetworkManager has a profile for: under the name asked for, or the
/// kernel's `PARENT.xxxx` of the P_Key as given or with the full-membership bit (the
/// names NetworkManager and the kernel give it).
fn refuse_nm_owned_child(eng: &Engine, parent: u32, pkey: u32, name: &str) -> Result<(), OpError> {
    let Some(p) = eng.state.ipoib.get(&parent) else {
        return Ok(());
    };
    let mut names = vec![format!("{}.{pkey:04x}", p.snap.name)];
    names.push(format!("{}.{:04x}", p.snap.name, pkey | 0x8000));
    if !name.is_empty() {
        names.push(name.to_string());
    }
    for n in names {
        eng.ops.nm.refuse_if_owned(&n, "create or change it")?;
    }
    Ok(())
}

/// Publishes the owners NetworkManager's last answer gives, when they changed: every
/// IPoIB interface's `Owner` follows.
pub(super) async fn sync_nm_owners(eng: &mut Engine) {
    if eng.ops.take_deferred_ipoib_restore() {
        info!("NetworkManager answered: re-applying ipoib.toml where it owns nothing");
        restore_ipoib(eng, &Appeared::start()).await;
    }
    let now = eng.ops.nm.snapshot();
    if now == eng.state.nm_profiles {
        return;
    }
    eng.state.nm_profiles = now;
    // Every IPoIB interface's Owner and every port's NetdevOwner follow.
    let dirty = Dirty {
        ipoib: eng.state.ipoib.keys().copied().collect(),
        devices: eng.state.devices.keys().copied().collect(),
        ..Dirty::default()
    };
    eng.sink.publish(&eng.state, &dirty).await;
}

pub(super) async fn restore_ipoib(eng: &mut Engine, appeared: &Appeared) {
    let Ok(persisted) = eng.config::<IpoibConfig>() else {
        return;
    };
    if persisted.ports.is_empty() {
        return;
    }
    let appeared: Vec<Iface> = eng
        .state
        .ipoib
        .values()
        .filter(|i| appeared.netdev(&i.snap.name))
        .map(Iface::of)
        .collect();
    // Ports first: their children are made, then every child that appeared gets its
    // settings (the ones made here appear again with their own event and find nothing to
    // change).
    for iface in appeared.iter().filter(|i| i.parent.is_none()) {
        let Some(port) = iface.guid.and_then(|g| persisted.port(g)) else {
            continue;
        };
        if !nm_owns(eng, &iface.name) {
            restore_settings(eng, iface, port.settings()).await;
        }
        for entry in &port.children {
            let kernel_name = format!("{}.{:04x}", iface.name, entry.pkey);
            if nm_owns(eng, &entry.name) || nm_owns(eng, &kernel_name) {
                continue;
            }
            restore_child(eng, iface, entry).await;
        }
    }
    for iface in appeared.iter().filter(|i| i.parent.is_some()) {
        let entry = match (iface.guid, iface.pkey) {
            (Some(g), Some(p)) => persisted.port(g).and_then(|e| e.child(p)),
            _ => None,
        };
        if let Some(entry) = entry.filter(|_| !nm_owns(eng, &iface.name)) {
            // Re-read: this may be a child just made above.
            let now = ipoib_by_name(eng, &iface.name).unwrap_or_else(|| iface.clone());
            restore_settings(eng, &now, entry.settings()).await;
        }
    }
}

/// Whether NetworkManager owns `interface`, or may (it runs but did not answer: the
/// restore is deferred until it does). Logged: what `ipoib.toml` says of it is not
/// re-applied.
fn nm_owns(eng: &mut Engine, interface: &str) -> bool {
    if eng.ops.nm.unanswered() {
        warn!(
            interface,
            "NetworkManager did not say which profiles it has; not re-applying ipoib.toml \
             to this interface until it does"
        );
        eng.ops.defer_ipoib_restore();
        return true;
    }
    match eng.ops.nm.owner_of(interface) {
        Some(p) => {
            info!(interface, profile = %p.id, uuid = %p.uuid,
                "NetworkManager owns this interface; not re-applying ipoib.toml to it");
            true
        }
        None => false,
    }
}

/// Applies the settings that differ from what the interface has; logs a refusal.
async fn restore_settings(eng: &mut Engine, iface: &Iface, wanted: IpoibSettings) {
    let mut ch = NetdevChange::default();
    if wanted.mode.is_some() && wanted.mode != iface.mode {
        ch.ipoib_mode = wanted.mode;
    }
    // After a mode change the kernel has resized the MTU: set the remembered one again.
    if wanted.mtu.is_some() && (wanted.mtu != iface.mtu || ch.ipoib_mode.is_some()) {
        ch.mtu = wanted.mtu;
    }
    if wanted.umcast.is_some() && wanted.umcast != iface.umcast {
        ch.ipoib_umcast = wanted.umcast;
    }
    if ch == NetdevChange::default() {
        return;
    }
    match eng.host.change_netdev(&iface.name, &ch).await {
        Ok(()) => info!(interface = %iface.name, mode = ?ch.ipoib_mode, mtu = ?ch.mtu,
            umcast = ?ch.ipoib_umcast, "re-applied remembered IPoIB settings"),
        Err(e) => {
            let why = explain_change(eng, e, &iface.name, &ch);
            warn!(interface = %iface.name, error = %why,
                "could not re-apply remembered IPoIB settings");
        }
    }
    settle_or_warn(eng, &[&iface.name]).await;
}

/// Re-creates a remembered child of `parent` that the kernel does not have.
async fn restore_child(eng: &mut Engine, parent: &Iface, entry: &IpoibChildEntry) {
    let children = ipoib_children(eng, &parent.name);
    if children.iter().any(|c| c.pkey == Some(entry.pkey)) {
        return; // Present (under its name or another): its settings follow below.
    }
    match eng.host.read_netdev(&entry.name).await {
        Ok(_) => {
            warn!(child = %entry.name, parent = %parent.name,
                "not re-creating the remembered IPoIB child: another interface has its name");
            return;
        }
        Err(e) if e.is_not_found() => {}
        Err(e) => {
            warn!(child = %entry.name, error = %e, "cannot tell whether the name is free");
            return;
        }
    }
    let settings = entry.settings();
    match recreate(
        eng,
        &parent.name,
        &entry.name,
        entry.pkey,
        IpoibSettings::default(),
        settings,
    )
    .await
    {
        Ok(()) => info!(child = %entry.name, parent = %parent.name,
            pkey = format!("{:#06x}", entry.pkey), "re-created remembered IPoIB child"),
        Err(e) => warn!(child = %entry.name, parent = %parent.name, error = %e,
            "could not re-create remembered IPoIB child"),
    }
}

/// What is remembered for an interface now (empty when nothing is).
/// Remembers a child just made under its port: a name is one child's, so an older entry
/// for this P_Key (a child that could not be re-created) or this name is replaced.
fn remember_child(persisted: &mut IpoibConfig, guid: Guid, new: &NewChild) {
    for p in &mut persisted.ports {
        p.children.retain(|c| c.name != new.name);
    }
    let port = persisted.port_mut(guid);
    port.children.retain(|c| c.pkey != new.effective);
    let mut entry = IpoibChildEntry {
        name: new.name.clone(),
        pkey: new.effective,
        mode: None,
        mtu: None,
        umcast: None,
    };
    entry.set(new.settings);
    port.children.push(entry);
}

fn remembered_settings(persisted: &IpoibConfig, iface: &Iface) -> IpoibSettings {
    let Some(port) = iface.guid.and_then(|g| persisted.port(g)) else {
        return IpoibSettings::default();
    };
    match (&iface.parent, iface.pkey) {
        (None, _) => port.settings(),
        (Some(_), Some(p)) => port.child(p).map(|c| c.settings()).unwrap_or_default(),
        (Some(_), None) => IpoibSettings::default(),
    }
}

/// Stores `wanted` as what is remembered for the interface. A child the daemon did not make
/// is remembered from now on (with its name and P_Key), so that its setting survives a reboot.
fn remember(persisted: &mut IpoibConfig, iface: &Iface, guid: Guid, wanted: IpoibSettings) {
    match (&iface.parent, iface.pkey) {
        (None, _) => persisted.port_mut(guid).set(wanted),
        (Some(_), pkey) => {
            let pkey = pkey.unwrap_or(0);
            for p in &mut persisted.ports {
                p.children
                    .retain(|c| c.name != iface.name || (p.guid == guid && c.pkey == pkey));
            }
            let port = persisted.port_mut(guid);
            match port.child_mut(pkey) {
                Some(c) => c.set(wanted),
                None => {
                    let mut entry = IpoibChildEntry {
                        name: iface.name.clone(),
                        pkey: full_member(pkey),
                        mode: None,
                        mtu: None,
                        umcast: None,
                    };
                    entry.set(wanted);
                    port.children.push(entry);
                }
            }
        }
    }
}
