//! A client of systemd-networkd's D-Bus API (`org.freedesktop.network1`, see
//! org.freedesktop.network1(5)): whether it runs, `Manager.Reload` (re-read the `.network`
//! files and reconfigure the links whose file changed), `Link.Reconfigure`, and which
//! `.network` file a link runs with (`Link.Describe`'s `NetworkFile`).
//!
//! Behind a trait so that the simulated host has a networkd of its own
//! (`kernel::sim::networkd`), which applies the same files to the simulated kernel.

use async_trait::async_trait;

/// networkd's bus name.
pub const BUS_NAME: &str = "org.freedesktop.network1";
const PATH: &str = "/org/freedesktop/network1";
const MANAGER: &str = "org.freedesktop.network1.Manager";
const LINK: &str = "org.freedesktop.network1.Link";

#[derive(Debug, Clone, thiserror::Error)]
pub enum NetworkdError {
    #[error("systemd-networkd is not running (no owner of {BUS_NAME} on the system bus)")]
    NotRunning,
    #[error("systemd-networkd has no link {0}")]
    NoLink(String),
    #[error("systemd-networkd refused: {0}")]
    Refused(String),
    #[error("systemd-networkd: {0}")]
    Bus(String),
}

/// What the daemon asks of systemd-networkd.
#[async_trait]
pub trait Networkd: Send + Sync + std::fmt::Debug {
    /// Whether it owns its bus name.
    async fn running(&self) -> Result<bool, NetworkdError>;
    /// `Manager.Reload`: re-reads the `.network` files; links whose file changed are
    /// reconfigured.
    async fn reload(&self) -> Result<(), NetworkdError>;
    /// `Link.Reconfigure` of the link named `interface`.
    async fn reconfigure(&self, interface: &str) -> Result<(), NetworkdError>;
    /// What networkd says of the link named `interface`: the `.network` file it runs with
    /// and the addresses it sees on it (read from its kernel).
    async fn describe(&self, interface: &str) -> Result<LinkDescription, NetworkdError>;
}

/// A link as `Link.Describe` reports it (the parts the daemon uses).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkDescription {
    /// `NetworkFile`: `None` when networkd does not manage the link.
    pub network_file: Option<String>,
    /// `Addresses`: every address of the link, whoever configured it.
    pub addresses: Vec<crate::model::NetdevAddress>,
}

/// [`Networkd`] over a bus connection (the daemon's system bus).
#[derive(Clone, Debug)]
pub struct BusNetworkd {
    conn: zbus::Connection,
    /// How long one call may wait for networkd's answer (the host services' bound).
    call_timeout: std::time::Duration,
}

impl BusNetworkd {
    pub fn new(conn: zbus::Connection, call_timeout: std::time::Duration) -> BusNetworkd {
        BusNetworkd { conn, call_timeout }
    }

    async fn call<B, R>(
        &self,
        path: &str,
        iface: &str,
        method: &str,
        body: &B,
    ) -> Result<R, NetworkdError>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
        R: for<'d> zbus::zvariant::DynamicDeserialize<'d>,
    {
        let call = self
            .conn
            .call_method(Some(BUS_NAME), path, Some(iface), method, body);
        let reply = tokio::time::timeout(self.call_timeout, call)
            .await
            .map_err(|_| NetworkdError::Bus(format!("{method} was not answered in time")))?
            .map_err(|e| classify(method, e))?;
        reply
            .body()
            .deserialize::<R>()
            .map_err(|e| NetworkdError::Bus(format!("{method} answered {e}")))
    }

    async fn link_path(&self, interface: &str) -> Result<String, NetworkdError> {
        let (_index, path): (i32, zbus::zvariant::OwnedObjectPath) = self
            .call(PATH, MANAGER, "GetLinkByName", &(interface,))
            .await
            .map_err(|e| match e {
                NetworkdError::Refused(m)
                    if m.contains("NoSuchLink") || m.contains("not known") =>
                {
                    NetworkdError::NoLink(interface.to_string())
                }
                other => other,
            })?;
        Ok(path.as_str().to_string())
    }
}

fn classify(method: &str, e: zbus::Error) -> NetworkdError {
    match e {
        zbus::Error::MethodError(name, msg, _) => {
            let name = name.as_str().to_string();
            if name == "org.freedesktop.DBus.Error.ServiceUnknown"
                || name == "org.freedesktop.DBus.Error.NameHasNoOwner"
            {
                NetworkdError::NotRunning
            } else {
                NetworkdError::Refused(format!("{method}: {name}: {}", msg.unwrap_or_default()))
            }
        }
        other => NetworkdError::Bus(format!("{method}: {other}")),
    }
}

#[async_trait]
impl Networkd for BusNetworkd {
    async fn running(&self) -> Result<bool, NetworkdError> {
        let dbus = zbus::fdo::DBusProxy::new(&self.conn)
            .await
            .map_err(|e| NetworkdError::Bus(e.to_string()))?;
        let name = zbus::names::BusName::try_from(BUS_NAME)
            .map_err(|e| NetworkdError::Bus(e.to_string()))?;
        dbus.name_has_owner(name)
            .await
            .map_err(|e| NetworkdError::Bus(e.to_string()))
    }

    async fn reload(&self) -> Result<(), NetworkdError> {
        self.call::<_, ()>(PATH, MANAGER, "Reload", &()).await
    }

    async fn reconfigure(&self, interface: &str) -> Result<(), NetworkdError> {
        let link = self.link_path(interface).await?;
        self.call::<_, ()>(&link, LINK, "Reconfigure", &()).await
    }

    async fn describe(&self, interface: &str) -> Result<LinkDescription, NetworkdError> {
        let link = self.link_path(interface).await?;
        let json: String = self.call(&link, LINK, "Describe", &()).await?;
        description_of(&json)
    }
}

/// The parts of a link's `Describe()` JSON the daemon uses.
pub fn description_of(json: &str) -> Result<LinkDescription, NetworkdError> {
    let v: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| NetworkdError::Bus(format!("Describe answered no JSON ({e})")))?;
    let network_file = v
        .get("NetworkFile")
        .and_then(|f| f.as_str())
        .map(str::to_string);
    let mut addresses = Vec::new();
    for a in v
        .get("Addresses")
        .and_then(|a| a.as_array())
        .into_iter()
        .flatten()
    {
        let bytes: Vec<u8> = a
            .get("Address")
            .and_then(|b| b.as_array())
            .into_iter()
            .flatten()
            .filter_map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
            .collect();
        let ip = match <[u8; 4]>::try_from(bytes.as_slice()) {
            Ok(v4) => std::net::IpAddr::from(v4),
            Err(_) => match <[u8; 16]>::try_from(bytes.as_slice()) {
                Ok(v6) => std::net::IpAddr::from(v6),
                Err(_) => continue,
            },
        };
        let Some(prefix) = a
            .get("PrefixLength")
            .and_then(|p| p.as_u64())
            .and_then(|p| u8::try_from(p).ok())
        else {
            continue;
        };
        addresses.push(crate::model::NetdevAddress { ip, prefix });
    }
    Ok(LinkDescription {
        network_file,
        addresses,
    })
}

#[cfg(test)]
mod tests {
    /// As systemd-networkd 252 describes a link (trimmed).
    #[test]
    fn the_file_and_addresses_of_a_description() {
        let json = r#"{"Index":3,"Name":"ib0","NetworkFile":"/etc/systemd/network/50-rdma-manager-ib0.network","Addresses":[{"Family":2,"Address":[192,0,2,5],"PrefixLength":24,"ConfigSource":"static"},{"Family":10,"Address":[254,128,0,0,0,0,0,0,48,213,39,255,254,28,152,37],"PrefixLength":64,"ConfigSource":"foreign"}]}"#;
        let d = super::description_of(json).expect("parsed");
        assert_eq!(
            d.network_file.as_deref(),
            Some("/etc/systemd/network/50-rdma-manager-ib0.network")
        );
        let text: Vec<String> = d.addresses.iter().map(|a| a.to_string()).collect();
        assert_eq!(text, ["192.0.2.5/24", "fe80::30d5:27ff:fe1c:9825/64"]);
        let unmanaged = super::description_of(r#"{"Index":3}"#).expect("parsed");
        assert_eq!(unmanaged, super::LinkDescription::default());
        assert!(super::description_of("not json").is_err());
    }
}
