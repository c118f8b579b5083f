//! The D-Bus interfaces of systemd and firewalld that the clients call, as typed zbus proxies:
//! each method's name, arguments and reply are declared once here instead of as strings and
//! tuples at each call. Every method goes out with NO_AUTO_START (asking must not start a
//! service the administrator left stopped; see `firewalld.rs`). The interfaces are described in
//! org.freedesktop.systemd1(5) and firewalld.dbus(5).

use std::collections::HashMap;

use zbus::zvariant::{OwnedObjectPath, OwnedValue};

/// A change of `EnableUnitFiles`/`DisableUnitFiles`: (type, symlink, destination).
pub type UnitFileChangeTuple = (String, String, String);

/// systemd's manager (`/org/freedesktop/systemd1`).
#[zbus::proxy(
    interface = "org.freedesktop.systemd1.Manager",
    default_service = "org.freedesktop.systemd1",
    default_path = "/org/freedesktop/systemd1",
    gen_blocking = false
)]
pub trait SystemdManager {
    /// The unit's object, loading it first (a unit not installed loads as "not-found").
    #[zbus(no_autostart)]
    fn load_unit(&self, name: &str) -> zbus::Result<OwnedObjectPath>;

    /// Enqueues a start job; returns the job's object.
    #[zbus(no_autostart)]
    fn start_unit(&self, name: &str, mode: &str) -> zbus::Result<OwnedObjectPath>;

    #[zbus(no_autostart)]
    fn stop_unit(&self, name: &str, mode: &str) -> zbus::Result<OwnedObjectPath>;

    #[zbus(no_autostart)]
    fn restart_unit(&self, name: &str, mode: &str) -> zbus::Result<OwnedObjectPath>;

    /// (carries install info, changes).
    #[zbus(no_autostart)]
    fn enable_unit_files(
        &self,
        files: &[&str],
        runtime: bool,
        force: bool,
    ) -> zbus::Result<(bool, Vec<UnitFileChangeTuple>)>;

    #[zbus(no_autostart)]
    fn disable_unit_files(
        &self,
        files: &[&str],
        runtime: bool,
    ) -> zbus::Result<Vec<UnitFileChangeTuple>>;

    /// `systemctl daemon-reload`; the reply comes once the reload is over.
    #[zbus(no_autostart)]
    fn reload(&self) -> zbus::Result<()>;
}

/// `org.freedesktop.DBus.Properties` of another service's object, asked with NO_AUTO_START
/// (zbus's own `fdo::PropertiesProxy` cannot set the flag).
#[zbus::proxy(interface = "org.freedesktop.DBus.Properties", gen_blocking = false)]
pub trait ServiceProperties {
    #[zbus(no_autostart)]
    fn get(&self, interface_name: &str, property_name: &str) -> zbus::Result<OwnedValue>;

    #[zbus(no_autostart)]
    fn get_all(&self, interface_name: &str) -> zbus::Result<HashMap<String, OwnedValue>>;
}

/// firewalld's main interface (`/org/fedoraproject/FirewallD1`).
#[zbus::proxy(
    interface = "org.fedoraproject.FirewallD1",
    default_service = "org.fedoraproject.FirewallD1",
    default_path = "/org/fedoraproject/FirewallD1",
    gen_blocking = false
)]
pub trait Firewalld1 {
    #[zbus(no_autostart, name = "getDefaultZone")]
    fn get_default_zone(&self) -> zbus::Result<String>;
}

/// firewalld's runtime zones (`/org/fedoraproject/FirewallD1`; "" is the default zone).
#[zbus::proxy(
    interface = "org.fedoraproject.FirewallD1.zone",
    default_service = "org.fedoraproject.FirewallD1",
    default_path = "/org/fedoraproject/FirewallD1",
    gen_blocking = false
)]
pub trait FirewalldZone {
    /// Opens `port`/`protocol` in `zone` for `timeout` seconds (0: no expiry); returns the zone.
    #[zbus(no_autostart, name = "addPort")]
    fn add_port(
        &self,
        zone: &str,
        port: &str,
        protocol: &str,
        timeout: i32,
    ) -> zbus::Result<String>;

    #[zbus(no_autostart, name = "queryPort")]
    fn query_port(&self, zone: &str, port: &str, protocol: &str) -> zbus::Result<bool>;
}

/// firewalld's permanent configuration (`/org/fedoraproject/FirewallD1/config`).
#[zbus::proxy(
    interface = "org.fedoraproject.FirewallD1.config",
    default_service = "org.fedoraproject.FirewallD1",
    default_path = "/org/fedoraproject/FirewallD1/config",
    gen_blocking = false
)]
pub trait FirewalldConfig {
    /// The object of a zone's permanent configuration.
    #[zbus(no_autostart, name = "getZoneByName")]
    fn get_zone_by_name(&self, zone: &str) -> zbus::Result<OwnedObjectPath>;
}

/// One zone's permanent configuration (the object `getZoneByName` returns).
#[zbus::proxy(
    interface = "org.fedoraproject.FirewallD1.config.zone",
    default_service = "org.fedoraproject.FirewallD1",
    gen_blocking = false
)]
pub trait FirewalldConfigZone {
    #[zbus(no_autostart, name = "addPort")]
    fn add_port(&self, port: &str, protocol: &str) -> zbus::Result<()>;

    #[zbus(no_autostart, name = "queryPort")]
    fn query_port(&self, port: &str, protocol: &str) -> zbus::Result<bool>;
}
