//! A client of NetworkManager's D-Bus API (`org.freedesktop.NetworkManager`): which profiles
//! configure an interface, and adding and deleting IPoIB profiles.
//!
//! The daemon runs as root, which NetworkManager authorizes without asking polkit; the
//! daemon's callers are authorized with the daemon's own actions before anything here runs.
//! Method names and signatures are those of NetworkManager's `introspection/*.xml`.

use std::collections::HashMap;

use zbus::zvariant::{OwnedObjectPath, OwnedValue};

use super::profile::{IpoibProfile, ProfileError, Settings};

pub const BUS_NAME: &str = "org.freedesktop.NetworkManager";

#[zbus::proxy(
    interface = "org.freedesktop.NetworkManager.Settings",
    default_service = "org.freedesktop.NetworkManager",
    default_path = "/org/freedesktop/NetworkManager/Settings",
    gen_blocking = false
)]
pub(super) trait Settings {
    fn list_connections(&self) -> zbus::Result<Vec<OwnedObjectPath>>;

    fn add_connection2(
        &self,
        settings: Settings,
        flags: u32,
        args: HashMap<String, OwnedValue>,
    ) -> zbus::Result<(OwnedObjectPath, HashMap<String, OwnedValue>)>;

    fn get_connection_by_uuid(&self, uuid: &str) -> zbus::Result<OwnedObjectPath>;
}

#[zbus::proxy(
    interface = "org.freedesktop.NetworkManager",
    default_service = "org.freedesktop.NetworkManager",
    default_path = "/org/freedesktop/NetworkManager",
    gen_blocking = false
)]
pub(super) trait Manager {
    fn deactivate_connection(
        &self,
        active_connection: &zbus::zvariant::ObjectPath<'_>,
    ) -> zbus::Result<()>;

    fn get_device_by_ip_iface(&self, iface: &str) -> zbus::Result<OwnedObjectPath>;

    fn activate_connection(
        &self,
        connection: &zbus::zvariant::ObjectPath<'_>,
        device: &zbus::zvariant::ObjectPath<'_>,
        specific_object: &zbus::zvariant::ObjectPath<'_>,
    ) -> zbus::Result<OwnedObjectPath>;

    fn checkpoint_create(
        &self,
        devices: &[zbus::zvariant::ObjectPath<'_>],
        rollback_timeout: u32,
        flags: u32,
    ) -> zbus::Result<OwnedObjectPath>;

    fn checkpoint_destroy(&self, checkpoint: &zbus::zvariant::ObjectPath<'_>) -> zbus::Result<()>;

    fn checkpoint_rollback(
        &self,
        checkpoint: &zbus::zvariant::ObjectPath<'_>,
    ) -> zbus::Result<HashMap<String, u32>>;

    fn checkpoint_adjust_rollback_timeout(
        &self,
        checkpoint: &zbus::zvariant::ObjectPath<'_>,
        add_timeout: u32,
    ) -> zbus::Result<()>;
}

#[zbus::proxy(
    interface = "org.freedesktop.NetworkManager.Device",
    default_service = "org.freedesktop.NetworkManager",
    gen_blocking = false
)]
pub(super) trait Device {
    fn reapply(&self, connection: Settings, version_id: u64, flags: u32) -> zbus::Result<()>;

    #[zbus(property)]
    fn state(&self) -> zbus::Result<u32>;

    #[zbus(property)]
    fn state_reason(&self) -> zbus::Result<(u32, u32)>;

    #[zbus(property)]
    fn managed(&self) -> zbus::Result<bool>;

    #[zbus(property)]
    fn active_connection(&self) -> zbus::Result<OwnedObjectPath>;

    #[zbus(property)]
    fn ip4_config(&self) -> zbus::Result<OwnedObjectPath>;

    #[zbus(property)]
    fn ip6_config(&self) -> zbus::Result<OwnedObjectPath>;
}

/// `NM_CHECKPOINT_CREATE_FLAG_DELETE_NEW_CONNECTIONS`: profiles added after the checkpoint
/// are deleted at rollback.
pub const CHECKPOINT_DELETE_NEW_CONNECTIONS: u32 = 0x2;
/// `NM_CHECKPOINT_CREATE_FLAG_DISCONNECT_NEW_DEVICES`: devices that appear after the
/// checkpoint are disconnected at rollback (allowed only over all devices).
pub const CHECKPOINT_DISCONNECT_NEW_DEVICES: u32 = 0x4;
/// `NM_SETTINGS_UPDATE2_FLAG_TO_DISK`.
pub const UPDATE_TO_DISK: u32 = 0x1;

#[zbus::proxy(
    interface = "org.freedesktop.NetworkManager.Settings.Connection",
    default_service = "org.freedesktop.NetworkManager",
    gen_blocking = false
)]
pub(super) trait Connection {
    fn get_settings(&self) -> zbus::Result<Settings>;

    fn update2(
        &self,
        settings: Settings,
        flags: u32,
        args: HashMap<String, OwnedValue>,
    ) -> zbus::Result<HashMap<String, OwnedValue>>;

    fn delete(&self) -> zbus::Result<()>;

    #[zbus(property)]
    fn filename(&self) -> zbus::Result<String>;
}

/// `NM_SETTINGS_ADD_CONNECTION2_FLAG_TO_DISK`.
pub const ADD_TO_DISK: u32 = 0x1;
/// `NM_SETTINGS_ADD_CONNECTION2_FLAG_BLOCK_AUTOCONNECT`.
pub const ADD_BLOCK_AUTOCONNECT: u32 = 0x20;

/// What went wrong talking to NetworkManager.
#[derive(Debug, thiserror::Error)]
pub enum NmError {
    /// Refused before NetworkManager was asked.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// NetworkManager refused the profile, in its own words.
    #[error("NetworkManager refused the profile: {0}")]
    Refused(String),
    /// NetworkManager is not on the bus.
    #[error("NetworkManager is not running (no owner of {BUS_NAME} on the system bus)")]
    NotRunning,
    /// NetworkManager owns its name but has not exported its settings yet: it is starting
    /// (it takes the name first, as it does at every boot).
    #[error("NetworkManager is starting: its settings are not on the bus yet")]
    Starting,
    /// Another checkpoint covers the same devices (one made by nmstate, nmcli or a second
    /// change of ours still waiting for confirmation).
    #[error("another NetworkManager checkpoint is pending over the same devices: {0}")]
    CheckpointConflict(String),
    /// The interface has no NetworkManager device.
    #[error("NetworkManager has no device {0}")]
    NoDevice(String),
    /// NetworkManager could not do what was asked, in its own words.
    #[error("NetworkManager: {0}")]
    Failed(String),
    #[error("talking to NetworkManager failed: {0}")]
    Bus(String),
}

impl From<zbus::Error> for NmError {
    fn from(e: zbus::Error) -> NmError {
        match &e {
            // NetworkManager's own refusals of a profile (`...Settings.Connection.InvalidProperty`,
            // `...InvalidSetting`, `...Settings.InvalidArguments` and the like): its sentence.
            zbus::Error::MethodError(_, Some(text), _)
                if text.contains("already included in checkpoint") =>
            {
                NmError::CheckpointConflict(text.clone())
            }
            // A profile or argument NetworkManager finds invalid: `...InvalidProperty`,
            // `...InvalidSetting`, `...InvalidArguments`, `...InvalidConnection`.
            zbus::Error::MethodError(name, text, _)
                if name.as_str().starts_with("org.freedesktop.NetworkManager.")
                    && name
                        .as_str()
                        .rsplit('.')
                        .next()
                        .is_some_and(|l| l.starts_with("Invalid")) =>
            {
                NmError::Refused(text.clone().unwrap_or_else(|| name.to_string()))
            }
            // Anything else NetworkManager declines (no such profile, a device that cannot
            // take the profile, an activation that failed): its sentence.
            zbus::Error::MethodError(name, text, _)
                if name.as_str().starts_with("org.freedesktop.NetworkManager.") =>
            {
                NmError::Failed(text.clone().unwrap_or_else(|| name.to_string()))
            }
            zbus::Error::MethodError(name, _, _)
                if name.as_str() == "org.freedesktop.DBus.Error.ServiceUnknown"
                    || name.as_str() == "org.freedesktop.DBus.Error.NameHasNoOwner" =>
            {
                NmError::NotRunning
            }
            _ => NmError::Bus(e.to_string()),
        }
    }
}

/// A profile as NetworkManager holds it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProfileSummary {
    pub path: String,
    pub id: String,
    pub uuid: String,
    pub kind: String,
    /// `connection.interface-name`, or for an IPoIB child without one, `parent.%04x`.
    pub interface: Option<String>,
    /// The keyfile, when stored on disk.
    pub filename: String,
}

/// NetworkManager over one bus connection.
#[derive(Clone, Debug)]
pub struct NetworkManager {
    pub(super) conn: zbus::Connection,
}

impl NetworkManager {
    pub fn new(conn: zbus::Connection) -> NetworkManager {
        NetworkManager { conn }
    }

    /// Whether NetworkManager owns its name on this bus now.
    pub async fn running(&self) -> Result<bool, NmError> {
        let dbus = zbus::fdo::DBusProxy::new(&self.conn).await?;
        let name =
            zbus::names::BusName::try_from(BUS_NAME).map_err(|e| NmError::Bus(e.to_string()))?;
        dbus.name_has_owner(name)
            .await
            .map_err(|e| NmError::Bus(e.to_string()))
    }

    /// Adds `profile` (to disk, as nmcli does), with a fresh UUID; returns the new profile.
    pub async fn add_ipoib(&self, profile: &IpoibProfile) -> Result<ProfileSummary, NmError> {
        let uuid = new_uuid()?;
        let settings = profile.settings(&uuid)?;
        let proxy = SettingsProxy::new(&self.conn).await?;
        let (path, _) = proxy
            .add_connection2(settings, ADD_TO_DISK, HashMap::new())
            .await?;
        self.summary(path).await
    }

    /// Every profile NetworkManager has.
    pub async fn profiles(&self) -> Result<Vec<ProfileSummary>, NmError> {
        let proxy = SettingsProxy::new(&self.conn).await?;
        let paths = match proxy.list_connections().await {
            Ok(paths) => paths,
            // GDBus answers a call to an object not exported yet with UnknownMethod ("Object
            // does not exist at path"); other services say UnknownObject.
            Err(zbus::Error::MethodError(name, _, _))
                if matches!(
                    name.as_str(),
                    "org.freedesktop.DBus.Error.UnknownMethod"
                        | "org.freedesktop.DBus.Error.UnknownObject"
                ) =>
            {
                return Err(NmError::Starting)
            }
            Err(e) => return Err(e.into()),
        };
        let mut out = Vec::new();
        for path in paths {
            match self.summary(path).await {
                Ok(p) => out.push(p),
                // Deleted between the list and the read.
                Err(NmError::Refused(_) | NmError::Failed(_)) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Deletes the profile with this UUID (NetworkManager removes its keyfile).
    pub async fn delete(&self, uuid: &str) -> Result<(), NmError> {
        let settings = SettingsProxy::new(&self.conn).await?;
        let path = settings.get_connection_by_uuid(uuid).await?;
        ConnectionProxy::builder(&self.conn)
            .path(path)?
            .build()
            .await?
            .delete()
            .await?;
        Ok(())
    }

    pub(super) async fn summary(&self, path: OwnedObjectPath) -> Result<ProfileSummary, NmError> {
        let proxy = ConnectionProxy::builder(&self.conn)
            .path(path.clone())?
            .build()
            .await?;
        let settings = proxy.get_settings().await?;
        let filename = proxy.filename().await.unwrap_or_default();
        let text = |section: &str, key: &str| -> Option<String> {
            settings
                .get(section)
                .and_then(|s| s.get(key))
                .and_then(|v| v.downcast_ref::<&str>().ok().map(str::to_string))
        };
        let kind = text("connection", "type").unwrap_or_default();
        let interface = text("connection", "interface-name").or_else(|| {
            let parent = text("infiniband", "parent")?;
            let pkey = settings
                .get("infiniband")
                .and_then(|s| s.get("p-key"))
                .and_then(|v| v.downcast_ref::<i32>().ok())
                .filter(|p| *p > 0)?;
            Some(super::profile::child_name(
                &parent,
                u16::try_from(pkey).ok()?,
            ))
        });
        Ok(ProfileSummary {
            path: path.to_string(),
            id: text("connection", "id").unwrap_or_default(),
            uuid: text("connection", "uuid").unwrap_or_default(),
            kind,
            interface,
            filename,
        })
    }
}

/// A NetworkManager checkpoint: the state of every device and profile when it was made, to
/// which NetworkManager returns by itself when the timeout passes unless it is destroyed
/// first (the change is confirmed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint(pub String);

impl NetworkManager {
    /// A checkpoint over all devices that NetworkManager rolls back to after `timeout_secs`
    /// (as nmstate makes them: profiles added meanwhile are deleted, devices that appeared
    /// are disconnected).
    pub async fn checkpoint(&self, timeout_secs: u32) -> Result<Checkpoint, NmError> {
        let nm = ManagerProxy::new(&self.conn).await?;
        let path = nm
            .checkpoint_create(
                &[],
                timeout_secs,
                CHECKPOINT_DELETE_NEW_CONNECTIONS | CHECKPOINT_DISCONNECT_NEW_DEVICES,
            )
            .await?;
        Ok(Checkpoint(path.to_string()))
    }

    /// Confirms the changes made since `checkpoint`: NetworkManager forgets it and keeps them.
    pub async fn confirm(&self, checkpoint: &Checkpoint) -> Result<(), NmError> {
        let nm = ManagerProxy::new(&self.conn).await?;
        nm.checkpoint_destroy(&object_path(&checkpoint.0)?).await?;
        Ok(())
    }

    /// Undoes the changes made since `checkpoint` now, without waiting for its timeout.
    pub async fn roll_back(&self, checkpoint: &Checkpoint) -> Result<(), NmError> {
        let nm = ManagerProxy::new(&self.conn).await?;
        nm.checkpoint_rollback(&object_path(&checkpoint.0)?).await?;
        Ok(())
    }

    /// Gives the caller `add_secs` more seconds from now to confirm.
    pub async fn extend(&self, checkpoint: &Checkpoint, add_secs: u32) -> Result<(), NmError> {
        let nm = ManagerProxy::new(&self.conn).await?;
        nm.checkpoint_adjust_rollback_timeout(&object_path(&checkpoint.0)?, add_secs)
            .await?;
        Ok(())
    }

    /// Replaces the IPv4 and IPv6 settings of the profile with this UUID (on disk) and
    /// applies them to the interface if the profile is active on it, as `nmcli connection
    /// modify` followed by `nmcli device reapply` does. Settings of other sections and the
    /// family's keys not set here (addr-gen-mode, routes) are kept.
    pub async fn set_ip(
        &self,
        uuid: &str,
        interface: &str,
        ipv4: &super::profile::IpConfig,
        ipv6: &super::profile::IpConfig,
    ) -> Result<(), NmError> {
        use super::profile::Family;
        ipv4.check(Family::V4)?;
        ipv6.check(Family::V6)?;
        // The device first: an interface NetworkManager does not know leaves the profile as
        // it was.
        let nm = ManagerProxy::new(&self.conn).await?;
        let device = match nm.get_device_by_ip_iface(interface).await {
            Ok(d) => d,
            Err(zbus::Error::MethodError(name, _, _))
                if name.as_str() == "org.freedesktop.NetworkManager.UnknownDevice" =>
            {
                return Err(NmError::NoDevice(interface.to_string()))
            }
            Err(e) => return Err(e.into()),
        };
        let settings_proxy = SettingsProxy::new(&self.conn).await?;
        let path = settings_proxy.get_connection_by_uuid(uuid).await?;
        let connection = ConnectionProxy::builder(&self.conn)
            .path(path.clone())?
            .build()
            .await?;
        let mut settings = connection.get_settings().await?;
        for (name, config, family) in [("ipv4", ipv4, Family::V4), ("ipv6", ipv6, Family::V6)] {
            let section = settings.entry(name.to_string()).or_default();
            super::profile::replace_ip(section, config, family);
        }
        connection
            .update2(settings, UPDATE_TO_DISK, HashMap::new())
            .await?;
        // Activating applies the saved profile whether or not it was active on the device.
        nm.activate_connection(&path, &device, &object_path("/")?)
            .await?;
        Ok(())
    }
}

pub(super) fn object_path(text: &str) -> Result<zbus::zvariant::ObjectPath<'_>, NmError> {
    zbus::zvariant::ObjectPath::try_from(text).map_err(|e| NmError::Bus(e.to_string()))
}

/// A random (version 4) UUID, from the kernel.
pub fn new_uuid() -> Result<String, NmError> {
    std::fs::read_to_string("/proc/sys/kernel/random/uuid")
        .map(|s| s.trim().to_string())
        .map_err(|e| NmError::Bus(format!("no UUID from /proc/sys/kernel/random/uuid: {e}")))
}
