//! The simulated host's systemd-networkd: it applies the `.network` files of the simulated
//! tree's /etc/systemd/network to the simulated kernel's addresses as networkd does with the
//! keys the daemon writes (`ipmgr::networkd_file`): the first file in name order whose
//! `[Match] Name=` lists the link configures it; a link that loses its file loses the
//! addresses networkd gave it. For `--simulate` and rdma-tui's demo, and the tests of the
//! daemon's networkd path without a real networkd (`tests/tests/system/networkd.rs` runs the
//! real one).

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::SimHost;
use crate::ipmgr::networkd::{LinkDescription, Networkd, NetworkdError};
use crate::ipmgr::networkd_file::{self, NETWORK_DIR};
use crate::model::NetdevAddress;
use crate::nm::profile::IpMethod;

/// A link networkd configures: its file and the addresses it gave it.
#[derive(Debug, Clone)]
struct Managed {
    file: String,
    given: Vec<NetdevAddress>,
}

pub struct SimNetworkd {
    host: SimHost,
    links: Mutex<BTreeMap<String, Managed>>,
}

impl std::fmt::Debug for SimNetworkd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimNetworkd")
            .field("root", &self.host.root())
            .finish_non_exhaustive()
    }
}

impl SimNetworkd {
    pub fn new(host: SimHost) -> SimNetworkd {
        SimNetworkd {
            host,
            links: Mutex::new(BTreeMap::new()),
        }
    }

    /// The `.network` files of the simulated /etc/systemd/network, in name order.
    fn files(&self) -> Vec<(String, String)> {
        let dir = self.host.root().join(NETWORK_DIR.trim_start_matches('/'));
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(".network") && !n.starts_with('.'))
            .collect();
        names.sort();
        names
            .into_iter()
            .filter_map(|n| {
                let text = std::fs::read_to_string(dir.join(&n)).ok()?;
                Some((format!("{NETWORK_DIR}/{n}"), text))
            })
            .collect()
    }

    /// Configures one link from the files as they are now.
    fn apply(&self, files: &[(String, String)], link: &str) -> Result<(), NetworkdError> {
        let file = files.iter().find(|(_, text)| matches(text, link));
        let mut links = self.links.lock().unwrap_or_else(|p| p.into_inner());
        let before = links.remove(link);
        let mut addresses = self.host.addresses(link);
        if let Some(b) = &before {
            addresses.retain(|a| !b.given.contains(a));
        }
        if let Some((path, text)) = file {
            let ip = networkd_file::parse(text);
            let mut given = Vec::new();
            for c in [&ip.ipv4, &ip.ipv6] {
                if c.method == IpMethod::Disabled {
                    continue;
                }
                given.extend(c.addresses.iter().map(|(ip, prefix)| NetdevAddress {
                    ip: *ip,
                    prefix: *prefix,
                }));
            }
            for a in &given {
                if !addresses.contains(a) {
                    addresses.push(*a);
                }
            }
            links.insert(
                link.to_string(),
                Managed {
                    file: path.clone(),
                    given,
                },
            );
        }
        drop(links);
        self.host
            .set_addresses(link, addresses)
            .map_err(|e| NetworkdError::Bus(e.to_string()))
    }

    fn link_exists(&self, link: &str) -> bool {
        self.host.spec().netdevs.iter().any(|n| n.name == link)
    }
}

/// Whether a file's `[Match] Name=` lists `link` (names only: no globs, as the daemon
/// writes them).
fn matches(text: &str, link: &str) -> bool {
    let mut section = "";
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[Match]" {
            if let Some(names) = line.strip_prefix("Name=") {
                if names.split_whitespace().any(|n| n == link) {
                    return true;
                }
            }
        }
    }
    false
}

#[async_trait]
impl Networkd for SimNetworkd {
    async fn running(&self) -> Result<bool, NetworkdError> {
        Ok(true)
    }

    async fn reload(&self) -> Result<(), NetworkdError> {
        let files = self.files();
        for nd in self.host.spec().netdevs {
            self.apply(&files, &nd.name)?;
        }
        Ok(())
    }

    async fn reconfigure(&self, interface: &str) -> Result<(), NetworkdError> {
        if !self.link_exists(interface) {
            return Err(NetworkdError::NoLink(interface.to_string()));
        }
        self.apply(&self.files(), interface)
    }

    async fn describe(&self, interface: &str) -> Result<LinkDescription, NetworkdError> {
        if !self.link_exists(interface) {
            return Err(NetworkdError::NoLink(interface.to_string()));
        }
        let links = self.links.lock().unwrap_or_else(|p| p.into_inner());
        Ok(LinkDescription {
            network_file: links.get(interface).map(|m| m.file.clone()),
            addresses: self.host.addresses(interface),
        })
    }
}
