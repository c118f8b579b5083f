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
trait Settings {
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
    interface = "org.freedesktop.NetworkManager.Settings.Connection",
    default_service = "org.freedesktop.NetworkManager",
    gen_blocking = false
)]
trait Connection {
    fn get_settings(&self) -> zbus::Result<Settings>;

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
    #[error("talking to NetworkManager failed: {0}")]
    Bus(String),
}

impl From<zbus::Error> for NmError {
    fn from(e: zbus::Error) -> NmError {
        match &e {
            // NetworkManager's own refusals of a profile (`...Settings.Connection.InvalidProperty`,
            // `...InvalidSetting`, `...Settings.InvalidArguments` and the like): its sentence.
            zbus::Error::MethodError(name, text, _)
                if name.as_str().starts_with("org.freedesktop.NetworkManager.") =>
            {
                NmError::Refused(text.clone().unwrap_or_else(|| name.to_string()))
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
#[derive(Debug, Clone, PartialEq, Eq)]
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
#[derive(Clone)]
pub struct NetworkManager {
    conn: zbus::Connection,
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
        let mut out = Vec::new();
        for path in proxy.list_connections().await? {
            match self.summary(path).await {
                Ok(p) => out.push(p),
                // Deleted between the list and the read.
                Err(NmError::Refused(_)) => continue,
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

    async fn summary(&self, path: OwnedObjectPath) -> Result<ProfileSummary, NmError> {
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

/// A random (version 4) UUID, from the kernel.
fn new_uuid() -> Result<String, NmError> {
    std::fs::read_to_string("/proc/sys/kernel/random/uuid")
        .map(|s| s.trim().to_string())
        .map_err(|e| NmError::Bus(format!("no UUID from /proc/sys/kernel/random/uuid: {e}")))
}
