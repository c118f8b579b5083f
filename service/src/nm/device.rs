//! NetworkManager's devices: whether it manages an interface, its state, the profile active
//! on it and the addresses it has; activating and deactivating profiles; reading, adding and
//! updating a profile's settings as they are.
//!
//! Property and method names are those of NetworkManager's `introspection/*.xml`.

use std::collections::HashMap;

use zbus::zvariant::{OwnedObjectPath, OwnedValue};

use super::client::{
    object_path, ConnectionProxy, DeviceProxy, ManagerProxy, NetworkManager, NmError,
    ProfileSummary, SettingsProxy, ADD_TO_DISK, UPDATE_TO_DISK,
};
use super::profile::Settings;

#[zbus::proxy(
    interface = "org.freedesktop.NetworkManager.IP4Config",
    default_service = "org.freedesktop.NetworkManager",
    gen_blocking = false
)]
trait Ip4Config {
    #[zbus(property)]
    fn address_data(&self) -> zbus::Result<Vec<HashMap<String, OwnedValue>>>;
}

#[zbus::proxy(
    interface = "org.freedesktop.NetworkManager.IP6Config",
    default_service = "org.freedesktop.NetworkManager",
    gen_blocking = false
)]
trait Ip6Config {
    #[zbus(property)]
    fn address_data(&self) -> zbus::Result<Vec<HashMap<String, OwnedValue>>>;
}

#[zbus::proxy(
    interface = "org.freedesktop.NetworkManager.Connection.Active",
    default_service = "org.freedesktop.NetworkManager",
    gen_blocking = false
)]
trait ActiveConnection {
    #[zbus(property)]
    fn uuid(&self) -> zbus::Result<String>;
}

/// `NM_DEVICE_STATE_UNMANAGED`.
pub const DEVICE_UNMANAGED: u32 = 10;
/// `NM_DEVICE_STATE_ACTIVATED`.
pub const DEVICE_ACTIVATED: u32 = 100;
/// `NM_DEVICE_STATE_FAILED`.
pub const DEVICE_FAILED: u32 = 120;

/// NetworkManager's name of a device state (`NMDeviceState`), as nmcli prints it.
pub fn device_state_name(state: u32) -> &'static str {
    match state {
        10 => "unmanaged",
        20 => "unavailable",
        30 => "disconnected",
        40 => "prepare",
        50 => "config",
        60 => "need-auth",
        70 => "ip-config",
        80 => "ip-check",
        90 => "secondaries",
        100 => "activated",
        110 => "deactivating",
        120 => "failed",
        _ => "unknown",
    }
}

/// One device as NetworkManager sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    pub path: String,
    /// `NMDeviceState`.
    pub state: u32,
    /// `NMDeviceStateReason` of the last state change.
    pub reason: u32,
    pub managed: bool,
    /// The UUID of the profile active on it.
    pub active_profile: Option<String>,
    /// Its addresses (`ADDRESS/PREFIX`), IPv4 then IPv6, as NetworkManager reads them from
    /// the kernel (addresses others set included).
    pub addresses: Vec<String>,
}

impl NetworkManager {
    /// The device of `interface`, or `None` when NetworkManager has none by that name.
    pub async fn device(&self, interface: &str) -> Result<Option<DeviceInfo>, NmError> {
        let nm = ManagerProxy::new(&self.conn).await?;
        let path = match nm.get_device_by_ip_iface(interface).await {
            Ok(p) => p,
            Err(zbus::Error::MethodError(name, _, _))
                if name.as_str() == "org.freedesktop.NetworkManager.UnknownDevice" =>
            {
                return Ok(None)
            }
            Err(e) => return Err(e.into()),
        };
        let device = DeviceProxy::builder(&self.conn)
            .path(path.clone())?
            .cache_properties(zbus::proxy::CacheProperties::No)
            .build()
            .await?;
        let state = device.state().await?;
        let (_, reason) = device.state_reason().await.unwrap_or((state, 0));
        let managed = device.managed().await?;
        let active = device.active_connection().await?;
        let active_profile = if active.as_str() == "/" {
            None
        } else {
            let proxy = ActiveConnectionProxy::builder(&self.conn)
                .path(active)?
                .build()
                .await?;
            // Gone between the two reads: nothing active.
            proxy.uuid().await.ok()
        };
        let mut addresses = Vec::new();
        let v4 = device.ip4_config().await?;
        if v4.as_str() != "/" {
            let proxy = Ip4ConfigProxy::builder(&self.conn)
                .path(v4)?
                .build()
                .await?;
            addresses.extend(address_list(
                &proxy.address_data().await.unwrap_or_default(),
            ));
        }
        let v6 = device.ip6_config().await?;
        if v6.as_str() != "/" {
            let proxy = Ip6ConfigProxy::builder(&self.conn)
                .path(v6)?
                .build()
                .await?;
            addresses.extend(address_list(
                &proxy.address_data().await.unwrap_or_default(),
            ));
        }
        Ok(Some(DeviceInfo {
            path: path.to_string(),
            state,
            reason,
            managed,
            active_profile,
            addresses,
        }))
    }

    /// Activates the profile with this UUID: on `interface`'s device, or where
    /// NetworkManager chooses when `None` (a P_Key child, which NetworkManager creates).
    pub async fn activate(&self, uuid: &str, interface: Option<&str>) -> Result<(), NmError> {
        let nm = ManagerProxy::new(&self.conn).await?;
        let device = match interface {
            Some(i) => match self.device(i).await? {
                Some(d) => d.path,
                None => return Err(NmError::NoDevice(i.to_string())),
            },
            None => "/".to_string(),
        };
        let profile = self.profile_path(uuid).await?;
        nm.activate_connection(&profile, &object_path(&device)?, &object_path("/")?)
            .await?;
        Ok(())
    }

    /// Deactivates what is active on `interface`, as `nmcli connection down` does.
    pub async fn deactivate(&self, interface: &str) -> Result<(), NmError> {
        let nm = ManagerProxy::new(&self.conn).await?;
        let Some(device) = self.device(interface).await? else {
            return Err(NmError::NoDevice(interface.to_string()));
        };
        let proxy = DeviceProxy::builder(&self.conn)
            .path(device.path.as_str())?
            .cache_properties(zbus::proxy::CacheProperties::No)
            .build()
            .await?;
        let active = proxy.active_connection().await?;
        if active.as_str() == "/" {
            return Err(NmError::Failed(format!(
                "no profile is active on {interface}"
            )));
        }
        nm.deactivate_connection(&active).await?;
        Ok(())
    }

    /// The settings of the profile with this UUID, as NetworkManager holds them.
    pub async fn profile_settings(&self, uuid: &str) -> Result<Settings, NmError> {
        let path = self.profile_path(uuid).await?;
        let proxy = ConnectionProxy::builder(&self.conn)
            .path(path)?
            .build()
            .await?;
        Ok(proxy.get_settings().await?)
    }

    /// Replaces the settings of the profile with this UUID, on disk.
    pub async fn update(&self, uuid: &str, settings: Settings) -> Result<(), NmError> {
        let path = self.profile_path(uuid).await?;
        let proxy = ConnectionProxy::builder(&self.conn)
            .path(path)?
            .build()
            .await?;
        proxy
            .update2(settings, UPDATE_TO_DISK, HashMap::new())
            .await?;
        Ok(())
    }

    /// Adds a profile of these settings as they are (its UUID included), to disk: a profile
    /// deleted by a change that is being undone comes back as it was.
    pub async fn add_as_is(&self, settings: Settings) -> Result<ProfileSummary, NmError> {
        let proxy = SettingsProxy::new(&self.conn).await?;
        let (path, _) = proxy
            .add_connection2(settings, ADD_TO_DISK, HashMap::new())
            .await?;
        self.summary(path).await
    }

    async fn profile_path(&self, uuid: &str) -> Result<OwnedObjectPath, NmError> {
        let settings = SettingsProxy::new(&self.conn).await?;
        Ok(settings.get_connection_by_uuid(uuid).await?)
    }
}

/// `ADDRESS/PREFIX` of each entry of an `AddressData` list.
fn address_list(data: &[HashMap<String, OwnedValue>]) -> Vec<String> {
    data.iter()
        .filter_map(|entry| {
            let address: &str = entry.get("address")?.downcast_ref().ok()?;
            let prefix: u32 = entry.get("prefix")?.downcast_ref().ok()?;
            Some(format!("{address}/{prefix}"))
        })
        .collect()
}
