//! Moving what `ipoib.toml` remembers into NetworkManager, on a host where NetworkManager
//! appeared after the daemon had made P_Key children: each remembered child of a port
//! interface NetworkManager manages becomes a NetworkManager profile (as `nmcli connection
//! add type infiniband ... parent PARENT p-key 0xXXXX` makes it, with the remembered mode
//! and MTU and no IP settings), all inside one checkpoint. The `ipoib.toml` entries stay
//! until the change is confirmed (the restore already leaves interfaces NetworkManager owns
//! alone), and are forgotten then; a rollback leaves the daemon their owner, as before.

use crate::config::{IpoibChildEntry, IpoibConfig};
use crate::model::{Guid, IpoibMode};
use crate::nm::profile::{self, IpConfig, IpMethod, IpoibProfile, TransportMode};

use super::nm_change::{checked_timeout, NmPending, NmTx};
use super::{EngineHandle, OpError};

/// A child `ipoib.toml` remembers, with the name of its port's interface now.
#[derive(Debug, Clone)]
struct Remembered {
    guid: Guid,
    parent: String,
    entry: IpoibChildEntry,
}

/// What a move did: the profiles made (interface, profile id) and what was left (interface,
/// why).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Moved {
    pub moved: Vec<(String, String)>,
    pub skipped: Vec<(String, String)>,
}

/// The P_Key a profile needs for NetworkManager to give the child the name it has: the
/// kernel names a child after the P_Key as given (0x0002 gives `ib0.0002` and joins as
/// 0x8002), and so does NetworkManager.
fn profile_pkey(parent: &str, entry: &IpoibChildEntry) -> Option<u16> {
    [entry.pkey & 0x7fff, entry.pkey]
        .into_iter()
        .filter(|p| *p != 0 && *p != 0x8000)
        .find(|p| profile::child_name(parent, *p) == entry.name)
}

impl EngineHandle {
    /// The children `ipoib.toml` remembers whose port interface exists now.
    async fn remembered_children(&self) -> Result<Vec<Remembered>, OpError> {
        self.call(|e| {
            Box::pin(async move {
                let persisted: IpoibConfig = e.config()?;
                let mut out = Vec::new();
                for port in &persisted.ports {
                    let parent = e.state.ipoib.values().find(|i| {
                        i.snap.ipoib.as_ref().is_some_and(|a| a.parent.is_none())
                            && i.snap
                                .address
                                .as_ref()
                                .ok()
                                .and_then(|a| a.ipoib_port_guid())
                                == Some(port.guid)
                    });
                    let Some(parent) = parent else { continue };
                    for entry in &port.children {
                        out.push(Remembered {
                            guid: port.guid,
                            parent: parent.snap.name.clone(),
                            entry: entry.clone(),
                        });
                    }
                }
                Ok(out)
            })
        })
        .await
    }

    /// Moves the remembered children of port interfaces NetworkManager manages into
    /// NetworkManager profiles, inside a checkpoint; see the module comment.
    pub async fn move_to_network_manager(
        &self,
        timeout_secs: u32,
    ) -> Result<(NmPending, Moved), OpError> {
        let timeout_secs = checked_timeout(timeout_secs)?;
        let nm = self.network_manager().await?;
        self.nm.refresh().await;
        let mut report = Moved::default();
        let mut profiles = Vec::new();
        for r in self.remembered_children().await? {
            let name = r.entry.name.clone();
            if self.nm.owner_of(&name).is_some() {
                continue;
            }
            if self.network_manager_managing(&r.parent).await.is_none() {
                report.skipped.push((
                    name,
                    format!("NetworkManager does not manage its parent {}", r.parent),
                ));
                continue;
            }
            let Some(pkey) = profile_pkey(&r.parent, &r.entry) else {
                report.skipped.push((
                    name.clone(),
                    format!(
                        "NetworkManager names this child {} and cannot rename it; the daemon \
                         keeps it",
                        profile::child_name(&r.parent, r.entry.pkey & 0x7fff)
                    ),
                ));
                continue;
            };
            if r.entry.umcast == Some(true) {
                report.skipped.push((
                    name,
                    "it allows umcast, which NetworkManager has no setting for; the daemon \
                     keeps it"
                        .into(),
                ));
                continue;
            }
            let disabled = IpConfig {
                method: IpMethod::Disabled,
                ..IpConfig::auto()
            };
            let profile = IpoibProfile {
                id: name.clone(),
                interface: r.parent.clone(),
                pkey: Some(pkey),
                mode: match r.entry.mode {
                    Some(IpoibMode::Connected) => TransportMode::Connected,
                    _ => TransportMode::Datagram,
                },
                mtu: r.entry.mtu,
                ipv4: disabled.clone(),
                ipv6: disabled,
            };
            let settings = profile
                .settings("")
                .map_err(|e| OpError::InvalidArgument(e.to_string()))?;
            profiles.push((r, settings));
        }
        if profiles.is_empty() {
            let why = report
                .skipped
                .iter()
                .map(|(i, w)| format!("{i}: {w}"))
                .collect::<Vec<_>>()
                .join("; ");
            return Err(OpError::NotFound(if why.is_empty() {
                "ipoib.toml remembers no P_Key child that NetworkManager does not own already; \
                 nothing was changed"
                    .to_string()
            } else {
                format!("no remembered P_Key child can move to NetworkManager ({why}); nothing was changed")
            }));
        }
        let what = format!(
            "move {} remembered P_Key child(ren) into NetworkManager profiles",
            profiles.len()
        );
        let mut tx = NmTx::begin(&nm, &what, timeout_secs).await?;
        let mut forget = Vec::new();
        for (r, settings) in profiles {
            let added = tx.add(settings).await?;
            report.moved.push((r.entry.name.clone(), added.id));
            forget.push((r.guid, r.entry.pkey));
        }
        let mut pending = tx.pending(
            &report
                .moved
                .iter()
                .map(|(i, _)| i.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        );
        pending.forget_on_confirm = forget;
        self.refresh_nm_owners().await;
        Ok((pending, report))
    }

    /// Forgets children of `ipoib.toml` (port GUID, P_Key as stored): a confirmed move made
    /// them NetworkManager's.
    pub(super) async fn forget_ipoib_children(
        &self,
        which: Vec<(Guid, u16)>,
    ) -> Result<(), OpError> {
        if which.is_empty() {
            return Ok(());
        }
        self.call(move |e| {
            Box::pin(async move {
                let mut persisted: IpoibConfig = e.config()?;
                for (guid, pkey) in &which {
                    let port = persisted.port_mut(*guid);
                    port.children.retain(|c| c.pkey != *pkey);
                }
                persisted.prune();
                e.persist(persisted).await
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, pkey: u16) -> IpoibChildEntry {
        IpoibChildEntry {
            name: name.into(),
            pkey,
            mode: None,
            mtu: None,
            umcast: None,
        }
    }

    #[test]
    fn the_profile_keeps_the_childs_name() {
        // Made with P_Key 0x0002: named ib0.0002, stored as 0x8002.
        assert_eq!(
            profile_pkey("ib0", &entry("ib0.0002", 0x8002)),
            Some(0x0002)
        );
        // Made with 0x8002: named ib0.8002.
        assert_eq!(
            profile_pkey("ib0", &entry("ib0.8002", 0x8002)),
            Some(0x8002)
        );
        // A name of the user's: NetworkManager cannot give it.
        assert_eq!(profile_pkey("ib0", &entry("storage0", 0x8002)), None);
    }
}
