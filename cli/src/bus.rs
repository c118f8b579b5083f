//! The way to rdma-managerd: the bus (rdma-tui's convention: the system bus, or `--session`,
//! or `--address=ADDRESS` for a private bus such as the tests' and the demo's), its published
//! objects read once, and the objects a command names found among them.

use std::collections::HashMap;

use rdma_manager_dbus::proxies::{IpoibProxy, ManagerProxy, NetworkProxy, PortProxy};
use rdma_manager_dbus::{BUS_NAME, ROOT_PATH};
use zbus::fdo::ObjectManagerProxy;
use zbus::proxy::CacheProperties;
use zbus::zvariant::{OwnedObjectPath, OwnedValue};
use zbus::Connection;

use crate::args::BusArgs;
use crate::failure::{code, Failure};

pub const DEVICE_IFACE: &str = "org.rdmamanager.RdmaManager1.Device";
pub const PORT_IFACE: &str = "org.rdmamanager.RdmaManager1.Port";
pub const IPOIB_IFACE: &str = "org.rdmamanager.RdmaManager1.Ipoib";

/// Connects to the bus the daemon is on.
pub async fn connect(bus: &BusArgs) -> Result<Connection, Failure> {
    let (builder, which) = if let Some(a) = &bus.address {
        (
            zbus::connection::Builder::address(a.as_str())
                .map_err(|e| Failure::usage(format!("--address {a}: {e}")))?,
            format!("the bus at {a}"),
        )
    } else if bus.session {
        (
            zbus::connection::Builder::session().map_err(not_running)?,
            "the session bus".to_string(),
        )
    } else {
        (
            zbus::connection::Builder::system().map_err(not_running)?,
            "the system bus".to_string(),
        )
    };
    let conn = builder.build().await.map_err(|e| {
        Failure::new(
            code::NOT_RUNNING,
            format!("cannot connect to {which}, where rdma-managerd serves: {e}"),
        )
    })?;
    // Answers the daemon's Peer.Ping, by which it counts what a client has read
    // (docs/RELIABILITY.md): a zbus connection without its object server never answers.
    let _ = conn.object_server();
    Ok(conn)
}

fn not_running(e: zbus::Error) -> Failure {
    Failure::new(code::NOT_RUNNING, format!("cannot reach the bus: {e}"))
}

/// A proxy at `path` that reads properties at each call (a one-shot client keeps no cache).
pub async fn proxy<'a, P>(conn: &Connection, path: &str) -> Result<P, Failure>
where
    P: From<zbus::Proxy<'a>> + zbus::proxy::Defaults,
{
    Ok(zbus::proxy::Builder::<P>::new(conn)
        .destination(BUS_NAME)?
        .path(path.to_string())?
        .cache_properties(CacheProperties::No)
        .build()
        .await?)
}

pub async fn manager(conn: &Connection) -> Result<ManagerProxy<'static>, Failure> {
    proxy(conn, ROOT_PATH).await
}

pub async fn network(conn: &Connection) -> Result<NetworkProxy<'static>, Failure> {
    proxy(conn, ROOT_PATH).await
}

/// One object's properties of one interface.
pub type Props = HashMap<String, OwnedValue>;

/// Everything the daemon publishes below its root, read once (GetManagedObjects).
pub struct Objects {
    pub objects: zbus::fdo::ManagedObjects,
}

impl Objects {
    pub async fn read(conn: &Connection) -> Result<Objects, Failure> {
        let om: ObjectManagerProxy<'static> = proxy(conn, ROOT_PATH).await?;
        Ok(Objects {
            objects: om.get_managed_objects().await?,
        })
    }

    /// The objects with `iface`, with their properties, in path order.
    pub fn with<'a>(&'a self, iface: &str) -> Vec<(&'a OwnedObjectPath, &'a Props)> {
        let mut v: Vec<_> = self
            .objects
            .iter()
            .filter_map(|(path, ifaces)| {
                ifaces
                    .iter()
                    .find(|(name, _)| name.as_str() == iface)
                    .map(|(_, props)| (path, props))
            })
            .collect();
        v.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        v
    }

    /// The object of device `dev` (its name, or its node GUID in any of the usual forms).
    pub fn device(&self, dev: &str) -> Result<(&OwnedObjectPath, &Props), Failure> {
        let wanted_guid = guid_digits(dev);
        self.with(DEVICE_IFACE)
            .into_iter()
            .find(|(_, p)| {
                text(p, "Name") == dev
                    || (wanted_guid.is_some() && guid_digits(&text(p, "NodeGuid")) == wanted_guid)
            })
            .ok_or_else(|| Failure::not_found(format!("no RDMA device {dev:?}")))
    }

    /// The port object of `DEV/PORT`.
    pub fn port(&self, spec: &str) -> Result<String, Failure> {
        let (dev, port) = spec.rsplit_once('/').ok_or_else(|| {
            Failure::usage(format!(
                "{spec:?}: give the port as DEVICE/PORT, e.g. mlx5_0/1"
            ))
        })?;
        let number: u32 = port
            .parse()
            .map_err(|_| Failure::usage(format!("{spec:?}: {port:?} is not a port number")))?;
        let (dev_path, _) = self.device(dev)?;
        self.with(PORT_IFACE)
            .into_iter()
            .find(|(_, p)| {
                object(p, "Device").as_deref() == Some(dev_path.as_str())
                    && u32_of(p, "Number") == Some(number)
            })
            .map(|(path, _)| path.to_string())
            .ok_or_else(|| Failure::not_found(format!("{dev} has no port {number}")))
    }

    /// A port given as DEVICE/PORT, or by its own netdev (a RoCE port's Ethernet interface,
    /// an InfiniBand port's IPoIB interface), as `ip` names it.
    pub fn port_or_netdev(&self, spec: &str) -> Result<String, Failure> {
        if spec.contains('/') {
            return self.port(spec);
        }
        if let Some((path, _)) = self
            .with(PORT_IFACE)
            .into_iter()
            .find(|(_, p)| !spec.is_empty() && text(p, "Netdev") == spec)
        {
            return Ok(path.to_string());
        }
        if let Ok((_, p)) = self.ipoib(spec) {
            let parent = text(p, "ParentName");
            if !parent.is_empty() && parent != spec {
                return Err(Failure::usage(format!(
                    "{spec} is a P_Key child of {parent}: a test runs from the port, whose netdev is {parent}; give {parent} or the port"
                )));
            }
        }
        Err(Failure::not_found(format!(
            "{spec:?} is neither DEVICE/PORT (mlx5_0/1) nor the netdev of an RDMA port"
        )))
    }

    /// The IPoIB interface object named `name`.
    pub fn ipoib(&self, name: &str) -> Result<(String, &Props), Failure> {
        self.with(IPOIB_IFACE)
            .into_iter()
            .find(|(_, p)| text(p, "Name") == name)
            .map(|(path, p)| (path.to_string(), p))
            .ok_or_else(|| Failure::not_found(format!("no IPoIB interface {name:?}")))
    }
}

pub async fn port_proxy(conn: &Connection, path: &str) -> Result<PortProxy<'static>, Failure> {
    proxy(conn, path).await
}

pub async fn ipoib_proxy(conn: &Connection, path: &str) -> Result<IpoibProxy<'static>, Failure> {
    proxy(conn, path).await
}

/// A string property, empty when absent or of another type.
pub fn text(props: &Props, name: &str) -> String {
    props
        .get(name)
        .and_then(|v| String::try_from(v.clone()).ok())
        .unwrap_or_default()
}

pub fn u32_of(props: &Props, name: &str) -> Option<u32> {
    props.get(name).and_then(|v| u32::try_from(v).ok())
}

pub fn object(props: &Props, name: &str) -> Option<String> {
    props
        .get(name)
        .and_then(|v| OwnedObjectPath::try_from(v.clone()).ok())
        .map(|p| p.to_string())
}

pub fn objects(props: &Props, name: &str) -> Vec<String> {
    props
        .get(name)
        .and_then(|v| Vec::<OwnedObjectPath>::try_from(v.clone()).ok())
        .map(|v| v.into_iter().map(|p| p.to_string()).collect())
        .unwrap_or_default()
}

/// A GUID's 16 hex digits in lower case, whatever its form (`0x0002c9030031 7f40`,
/// `0002:c903:0031:7f40`); `None` when `text` is not one.
fn guid_digits(text: &str) -> Option<String> {
    let t = text.strip_prefix("0x").unwrap_or(text);
    let digits: String = t.chars().filter(|c| *c != ':').collect();
    (digits.len() == 16 && digits.chars().all(|c| c.is_ascii_hexdigit()))
        .then(|| digits.to_ascii_lowercase())
}

/// The pending changes now (`Network.PendingChanges`).
pub async fn pending_changes(conn: &Connection) -> Result<Vec<String>, Failure> {
    Ok(network(conn)
        .await?
        .pending_changes()
        .await?
        .into_iter()
        .map(|p| p.to_string())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guids_in_any_form() {
        let g = Some("0002c90300317f40".to_string());
        assert_eq!(guid_digits("0x0002c90300317f40"), g);
        assert_eq!(guid_digits("0002:c903:0031:7f40"), g);
        assert_eq!(guid_digits("mlx5_0"), None);
    }
}
