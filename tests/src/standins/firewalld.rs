//! A stand-in for firewalld on a private bus: `org.fedoraproject.FirewallD1` with
//!
//! - `/org/fedoraproject/FirewallD1`: org.fedoraproject.FirewallD1 (getDefaultZone, property
//!   `state`) and org.fedoraproject.FirewallD1.zone (queryPort, addPort);
//! - `/org/fedoraproject/FirewallD1/config`: org.fedoraproject.FirewallD1.config
//!   (getZoneByName);
//! - `/org/fedoraproject/FirewallD1/config/zone/<i>`: org.fedoraproject.FirewallD1.config.zone
//!   (queryPort, addPort), one object per zone numbered in order as firewalld does.
//!
//! Runtime and permanent ports are kept apart, as in firewalld: a runtime addPort does not make
//! the port permanent, nor the other way round. Errors are firewalld 1.3.3's:
//! `org.fedoraproject.FirewallD1.Exception` with the messages it sends (ALREADY_ENABLED,
//! INVALID_ZONE, INVALID_PROTOCOL, INVALID_PORT).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use zbus::zvariant::OwnedObjectPath;
use zbus::Connection;

use super::{lock, NamedError};
use crate::bus::PrivateBus;

const BUS_NAME: &str = "org.fedoraproject.FirewallD1";
const PATH: &str = "/org/fedoraproject/FirewallD1";
const CONFIG_PATH: &str = "/org/fedoraproject/FirewallD1/config";
const EXCEPTION: &str = "org.fedoraproject.FirewallD1.Exception";
/// firewalld's protocols for ports (functions.checkProtocol's list in its messages).
const PROTOCOLS: [&str; 4] = ["tcp", "udp", "sctp", "dccp"];

#[derive(Debug)]
struct Zone {
    name: String,
    runtime: BTreeSet<(String, String)>,
    permanent: BTreeSet<(String, String)>,
}

#[derive(Debug)]
struct State {
    default_zone: String,
    zones: Vec<Zone>,
    state: String,
    calls: Vec<String>,
}

type Shared = Arc<Mutex<State>>;

fn exception(message: String) -> NamedError {
    NamedError::new(EXCEPTION, message)
}

/// Port numbers and ranges as firewalld's functions.checkPort accepts them (1..65535).
fn check_port(port: &str) -> Result<(), NamedError> {
    let valid = |p: &str| p.parse::<u32>().is_ok_and(|n| (1..=65535).contains(&n));
    let ok = match port.split_once('-') {
        Some((a, b)) => valid(a) && valid(b),
        None => valid(port),
    };
    if ok {
        Ok(())
    } else {
        Err(exception(format!("INVALID_PORT: {port}")))
    }
}

impl State {
    /// fw.check_zone: "" is the default zone; an unknown zone is INVALID_ZONE.
    fn zone_mut(&mut self, zone: &str) -> Result<&mut Zone, NamedError> {
        let name = if zone.is_empty() {
            self.default_zone.clone()
        } else {
            zone.to_string()
        };
        self.zones
            .iter_mut()
            .find(|z| z.name == name)
            .ok_or_else(|| exception(format!("INVALID_ZONE: {name}")))
    }
}

/// org.fedoraproject.FirewallD1 on the main object.
struct Main {
    state: Shared,
}

#[zbus::interface(name = "org.fedoraproject.FirewallD1")]
impl Main {
    #[zbus(name = "getDefaultZone")]
    fn get_default_zone(&self) -> String {
        let mut st = lock(&self.state);
        st.calls.push("getDefaultZone".into());
        st.default_zone.clone()
    }

    #[zbus(property, name = "state")]
    fn state(&self) -> String {
        lock(&self.state).state.clone()
    }
}

/// org.fedoraproject.FirewallD1.zone on the main object: the runtime configuration.
struct RuntimeZones {
    state: Shared,
}

#[zbus::interface(name = "org.fedoraproject.FirewallD1.zone")]
impl RuntimeZones {
    #[zbus(name = "queryPort")]
    fn query_port(&self, zone: String, port: String, protocol: String) -> Result<bool, NamedError> {
        let mut st = lock(&self.state);
        st.calls
            .push(format!("zone.queryPort {zone} {port} {protocol}"));
        let z = st.zone_mut(&zone)?;
        Ok(z.runtime.contains(&(port, protocol)))
    }

    /// Returns the zone's name (the default zone's for "").
    #[zbus(name = "addPort")]
    fn add_port(
        &self,
        zone: String,
        port: String,
        protocol: String,
        timeout: i32,
    ) -> Result<String, NamedError> {
        let mut st = lock(&self.state);
        st.calls
            .push(format!("zone.addPort {zone} {port} {protocol} {timeout}"));
        let z = st.zone_mut(&zone)?;
        check_port(&port)?;
        if !PROTOCOLS.contains(&protocol.as_str()) {
            return Err(exception(format!(
                "INVALID_PROTOCOL: '{protocol}' not in {{'tcp'|'udp'|'sctp'|'dccp'}}"
            )));
        }
        let key = (port.clone(), protocol.clone());
        if z.runtime.contains(&key) {
            return Err(exception(format!(
                "ALREADY_ENABLED: '{port}:{protocol}' already in '{}'",
                z.name
            )));
        }
        z.runtime.insert(key);
        Ok(z.name.clone())
    }
}

/// org.fedoraproject.FirewallD1.config on the config object.
struct Config {
    state: Shared,
}

#[zbus::interface(name = "org.fedoraproject.FirewallD1.config")]
impl Config {
    #[zbus(name = "getZoneByName")]
    fn get_zone_by_name(&self, zone: String) -> Result<OwnedObjectPath, NamedError> {
        let mut st = lock(&self.state);
        st.calls.push(format!("config.getZoneByName {zone}"));
        let index = st
            .zones
            .iter()
            .position(|z| z.name == zone)
            .ok_or_else(|| exception(format!("INVALID_ZONE: {zone}")))?;
        OwnedObjectPath::try_from(format!("{CONFIG_PATH}/zone/{index}"))
            .map_err(|e| exception(format!("INVALID_ZONE: {e}")))
    }
}

/// org.fedoraproject.FirewallD1.config.zone: one zone's permanent configuration.
struct ConfigZone {
    index: usize,
    state: Shared,
}

impl ConfigZone {
    fn with_zone<T>(&self, call: String, f: impl FnOnce(&mut Zone) -> T) -> T {
        let mut st = lock(&self.state);
        let name = st.zones[self.index].name.clone();
        st.calls.push(format!("config.zone.{call} ({name})"));
        f(&mut st.zones[self.index])
    }
}

#[zbus::interface(name = "org.fedoraproject.FirewallD1.config.zone")]
impl ConfigZone {
    #[zbus(name = "queryPort")]
    fn query_port(&self, port: String, protocol: String) -> bool {
        let call = format!("queryPort {port} {protocol}");
        self.with_zone(call, |z| z.permanent.contains(&(port, protocol)))
    }

    #[zbus(name = "addPort")]
    fn add_port(&self, port: String, protocol: String) -> Result<(), NamedError> {
        let call = format!("addPort {port} {protocol}");
        self.with_zone(call, |z| {
            check_port(&port)?;
            if !PROTOCOLS.contains(&protocol.as_str()) {
                return Err(exception(format!(
                    "INVALID_PROTOCOL: '{protocol}' not from {{'tcp'|'udp'|'sctp'|'dccp'}}"
                )));
            }
            let key = (port.clone(), protocol.clone());
            if z.permanent.contains(&key) {
                return Err(exception(format!("ALREADY_ENABLED: {port}:{protocol}")));
            }
            z.permanent.insert(key);
            Ok(())
        })
    }
}

/// The stand-in, serving on its own connection to a private bus until dropped.
pub struct StandInFirewalld {
    conn: Connection,
    state: Shared,
}

impl StandInFirewalld {
    /// Serves firewalld with `zones` (the first is the default zone) and takes
    /// `org.fedoraproject.FirewallD1`.
    pub async fn start(bus: &PrivateBus, zones: &[&str]) -> Result<Self> {
        let conn = bus.connect().await?;
        let state: Shared = Arc::new(Mutex::new(State {
            default_zone: zones.first().copied().unwrap_or("public").to_string(),
            zones: zones
                .iter()
                .map(|z| Zone {
                    name: z.to_string(),
                    runtime: BTreeSet::new(),
                    permanent: BTreeSet::new(),
                })
                .collect(),
            state: "RUNNING".into(),
            calls: Vec::new(),
        }));
        let server = conn.object_server();
        server
            .at(
                PATH,
                Main {
                    state: state.clone(),
                },
            )
            .await?;
        server
            .at(
                PATH,
                RuntimeZones {
                    state: state.clone(),
                },
            )
            .await?;
        server
            .at(
                CONFIG_PATH,
                Config {
                    state: state.clone(),
                },
            )
            .await?;
        for index in 0..zones.len() {
            server
                .at(
                    format!("{CONFIG_PATH}/zone/{index}"),
                    ConfigZone {
                        index,
                        state: state.clone(),
                    },
                )
                .await?;
        }
        conn.request_name(BUS_NAME)
            .await
            .context("taking org.fedoraproject.FirewallD1")?;
        Ok(Self { conn, state })
    }

    /// Gives up the bus name, as a stopped firewalld: the objects stay, unreachable by name.
    pub async fn stop(&self) -> Result<()> {
        self.conn.release_name(BUS_NAME).await?;
        Ok(())
    }

    /// Adds a port to a zone's runtime or permanent configuration, as done by hand before.
    pub fn open(&self, zone: &str, port: &str, protocol: &str, permanent: bool) {
        let mut st = lock(&self.state);
        if let Some(z) = st.zones.iter_mut().find(|z| z.name == zone) {
            let set = if permanent {
                &mut z.permanent
            } else {
                &mut z.runtime
            };
            set.insert((port.to_string(), protocol.to_string()));
        }
    }

    /// The (port, protocol) pairs of a zone, runtime or permanent.
    pub fn ports(&self, zone: &str, permanent: bool) -> Vec<(String, String)> {
        let st = lock(&self.state);
        st.zones
            .iter()
            .find(|z| z.name == zone)
            .map(|z| {
                let set = if permanent { &z.permanent } else { &z.runtime };
                set.iter().cloned().collect()
            })
            .unwrap_or_default()
    }

    /// Every method call so far, in order ("zone.addPort public 20049 tcp 0", ...).
    pub fn calls(&self) -> Vec<String> {
        lock(&self.state).calls.clone()
    }
}
