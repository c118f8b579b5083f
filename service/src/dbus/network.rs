//! `org.rdmamanager.RdmaManager1.Network` at the root: IP settings of RDMA netdevs (IPoIB
//! interfaces, and the netdevs of RoCE, rxe and siw ports) through NetworkManager, bringing
//! them up and down, and the changes of that kind waiting for confirmation (`pending`).
//!
//! IP settings go through whichever IP manager runs (`engine/ip_change.rs`): NetworkManager
//! or systemd-networkd; GetIpSettings answers under any (addresses from the kernel where
//! NetworkManager does not run). Every change returns the object of a pending change, rolled
//! back unless it is confirmed within its timeout (0: 60 s). Activate, Deactivate and
//! MoveToNetworkManager need NetworkManager and answer `NotSupported` without it.

use std::collections::HashMap;
use std::sync::Arc;

use rdma_manager_dbus::types::{LeftChild, MovedChild};
use rdma_manager_dbus::{Action, Error};
use zbus::message::Header;
use zbus::object_server::SignalEmitter;
use zbus::zvariant::{OwnedObjectPath, OwnedValue};

use super::Context;
use crate::engine::{EngineHandle, IpPending, IpReport, RdmaNetdev};
use crate::ipmgr::IpManager;
use crate::nm::keys::put;

/// `org.rdmamanager.RdmaManager1.Network` at the root.
pub struct NetworkObject {
    pub ctx: Arc<Context>,
}

/// A report as `GetIpSettings` gives it.
/// Publishes a change NetworkManager made as a PendingChange object (see
/// `PendingChanges::add`): the `then` of an operation that returns one. Here rather than in
/// `pending.rs`, which calls back into this module when a change ends.
async fn publish_change(ctx: &Arc<Context>, pending: IpPending) -> Result<OwnedObjectPath, Error> {
    ctx.changes().add_ip(ctx, pending).await
}

/// What `GetIpSettings` says of an interface no NetworkManager configures: its kind, the
/// daemon's networkd file's settings where there is one, and its addresses from the kernel.
async fn other_manager_keys(
    engine: &EngineHandle,
    interface: &str,
    manager: IpManager,
) -> Result<HashMap<String, OwnedValue>, Error> {
    let kind = engine
        .rdma_netdev(interface)
        .await
        .map_err(super::errors::op_error)?;
    let (settings, file) = match manager {
        IpManager::Networkd => {
            let s = engine.networkd_settings(interface).await;
            let file = s.as_ref().map(|_| {
                crate::ipmgr::networkd_file::path(interface)
                    .display()
                    .to_string()
            });
            (s, file)
        }
        IpManager::Netplan { reachable: true } => engine
            .netplan_settings(interface)
            .await
            .map_err(super::errors::op_error)?,
        _ => (None, None),
    };
    let mut out = settings.as_ref().map(|s| s.to_keys()).unwrap_or_default();
    let kind = match kind {
        RdmaNetdev::Ipoib { .. } => "ipoib",
        RdmaNetdev::Port => "port",
    };
    put(&mut out, "kind".into(), kind);
    let (owner, file) = match settings {
        Some(_) => (manager.as_str(), file.unwrap_or_default()),
        None => ("", String::new()),
    };
    put(&mut out, "owner".into(), owner);
    put(&mut out, "keyfile".into(), file);
    let addresses: Vec<String> = engine
        .kernel_addresses(interface)
        .await
        .map_err(super::errors::op_error)?
        .iter()
        .map(|a| a.to_string())
        .collect();
    put(&mut out, "addresses".into(), addresses);
    Ok(out)
}

fn report_keys(r: IpReport) -> HashMap<String, OwnedValue> {
    let mut out = r.settings.as_ref().map(|s| s.to_keys()).unwrap_or_default();
    let kind = match r.kind {
        RdmaNetdev::Ipoib { .. } => "ipoib",
        RdmaNetdev::Port => "port",
    };
    put(&mut out, "kind".into(), kind);
    let (owner, id, uuid, keyfile) = match &r.owner {
        Some(p) => (
            "networkmanager",
            p.id.clone(),
            p.uuid.clone(),
            p.filename.clone(),
        ),
        None => ("", String::new(), String::new(), String::new()),
    };
    put(&mut out, "owner".into(), owner);
    put(&mut out, "profile".into(), id);
    put(&mut out, "uuid".into(), uuid.clone());
    put(&mut out, "keyfile".into(), keyfile);
    let (state, reason, managed, active, addresses) = match &r.device {
        Some(d) => (
            crate::nm::device::device_state_name(d.state),
            d.reason,
            d.managed,
            !uuid.is_empty() && d.active_profile.as_deref() == Some(uuid.as_str()),
            d.addresses.clone(),
        ),
        None => ("absent", 0, false, false, Vec::new()),
    };
    put(&mut out, "device-state".into(), state);
    put(&mut out, "device-state-reason".into(), reason);
    put(&mut out, "managed".into(), managed);
    put(&mut out, "active".into(), active);
    put(&mut out, "addresses".into(), addresses);
    out
}

super::objects::bus_interface! {
impl NetworkObject as "org.rdmamanager.RdmaManager1.Network" {
    /// Changes made through NetworkManager that wait for confirmation (PendingChange
    /// objects).
    #[zbus(property, name = "PendingChanges")]
    fn pending_changes(&self) -> Vec<OwnedObjectPath> {
        self.ctx.changes().paths()
    }

    /// The IP settings of an IPoIB interface or of the netdev of a RoCE, rxe or siw port,
    /// whichever IP manager the host runs. Always: kind (ipoib or port), manager
    /// (networkmanager, netplan, systemd-networkd or none), manager-advice (what the user can
    /// do where the daemon does not change IP settings; empty otherwise), owner
    /// (networkmanager, netplan or systemd-networkd when a profile, netplan's configuration
    /// or the daemon's .network file configures it, else empty), keyfile (that profile's or
    /// file's path; under netplan the daemon's file when it holds the definition) and
    /// addresses (as: ADDRESS/PREFIX it has now; NetworkManager's view under
    /// NetworkManager, the kernel's otherwise). nmcli's keys of its settings (ipv4.method,
    /// ipv4.addresses (as), ipv4.gateway, ipv4.dns (as), ipv4.dns-search (as), the same under
    /// ipv6.) when a profile, netplan or the daemon's file configures it. Under
    /// NetworkManager also: profile, uuid, device-state (NetworkManager's, as nmcli prints
    /// it, or absent), device-state-reason (u), managed (b) and active (b: the profile is
    /// active on it).
    async fn get_ip_settings(&self, interface: &str) -> Result<HashMap<String, OwnedValue>, Error> {
        let engine = self.ctx.engine().await?;
        let manager = engine.ip_manager().await;
        let mut out = match manager {
            IpManager::NetworkManager => report_keys(
                engine
                    .ip_settings(interface)
                    .await
                    .map_err(super::errors::op_error)?,
            ),
            other => other_manager_keys(engine, interface, other).await?,
        };
        put(&mut out, "manager".into(), manager.as_str());
        put(&mut out, "manager-advice".into(), manager.advice());
        Ok(out)
    }

    /// Changes IP settings, given as nmcli's keys (see GetIpSettings; a key not given keeps
    /// its value), through the host's IP manager: under NetworkManager in the interface's
    /// profile, made when there is none (infiniband for IPoIB, ethernet for a port's netdev,
    /// named after the interface), and activated, inside a checkpoint; under netplan in the
    /// interface's definition in /etc/netplan/90-rdma-manager.yaml, applied with netplan's
    /// Try (refused, Busy, when netplan defines the interface elsewhere or its other files
    /// would still change the result); under systemd-networkd in the daemon's file
    /// /etc/systemd/network/50-rdma-manager-IF.network, which networkd reloads (refused,
    /// Busy, when networkd runs the interface with an earlier file). Returns the pending
    /// change: confirm it within `timeout` seconds (0: 60; 10 to 3600) or it is rolled back
    /// (NetworkManager's checkpoint; netplan's Try, which netplan also rolls back by itself;
    /// the previous networkd file). NotSupported, with what the user can do, where none runs.
    op set_ip_settings(interface: &str, settings: HashMap<String, OwnedValue>, timeout: u32)
        -> OwnedObjectPath as ManageIp
        = |e| e.set_ip_settings_routed(interface, settings, timeout).await,
        then publish_change;

    /// Activates the interface's NetworkManager profile, as `nmcli connection up` does;
    /// returns the pending change (see SetIpSettings).
    async fn activate(
        &self,
        interface: &str,
        timeout: u32,
        #[zbus(header)] header: Header<'_>,
    ) -> Result<OwnedObjectPath, Error> {
        self.up_down(interface, true, timeout, header).await
    }

    /// Deactivates the profile active on the interface, as `nmcli connection down` does;
    /// returns the pending change (see SetIpSettings).
    async fn deactivate(
        &self,
        interface: &str,
        timeout: u32,
        #[zbus(header)] header: Header<'_>,
    ) -> Result<OwnedObjectPath, Error> {
        self.up_down(interface, false, timeout, header).await
    }

    /// Moves the P_Key children ipoib.toml remembers, of port interfaces NetworkManager
    /// manages, into NetworkManager profiles (nmcli's form, with the remembered mode and
    /// MTU, no IP settings), inside one checkpoint; the entries are forgotten from
    /// ipoib.toml when the change is confirmed. Returns the pending change, the children
    /// moved (interface, profile) and those left to the daemon (interface, why).
    async fn move_to_network_manager(
        &self,
        timeout: u32,
        #[zbus(header)] header: Header<'_>,
    ) -> Result<(OwnedObjectPath, Vec<MovedChild>, Vec<LeftChild>), Error> {
        let arguments = crate::audit_args![timeout];
        self.ctx
            .change(&header, Action::ManageIp, arguments, async {
                let (pending, moved) = self
                    .ctx
                    .engine()
                    .await?
                    .move_to_network_manager(timeout)
                    .await
                    .map_err(super::errors::op_error)?;
                let path = self.ctx.changes().add(&self.ctx, pending).await?;
                let left = moved.skipped.into_iter();
                Ok((
                    path,
                    moved
                        .moved
                        .into_iter()
                        .map(|(interface, profile)| MovedChild { interface, profile })
                        .collect(),
                    left.map(|(interface, reason)| LeftChild { interface, reason })
                        .collect(),
                ))
            })
            .await
    }

    /// A pending change ended: confirmed, rolled-back (RollBack) or timed-out
    /// (NetworkManager rolled it back by itself).
    #[zbus(signal)]
    pub async fn change_ended(
        emitter: &SignalEmitter<'_>,
        change: OwnedObjectPath,
        outcome: &str,
    ) -> zbus::Result<()>;
}
}

impl NetworkObject {
    async fn up_down(
        &self,
        interface: &str,
        up: bool,
        timeout: u32,
        header: Header<'_>,
    ) -> Result<OwnedObjectPath, Error> {
        let arguments = crate::audit_args![interface, timeout];
        self.ctx
            .change(&header, Action::ManageIp, arguments, async {
                let pending = self
                    .ctx
                    .engine()
                    .await?
                    .set_interface_up(interface, up, timeout)
                    .await
                    .map_err(super::errors::op_error)?;
                self.ctx.changes().add(&self.ctx, pending).await
            })
            .await
    }
}
