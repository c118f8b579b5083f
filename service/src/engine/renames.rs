//! What the configuration remembers by a network interface's name follows that interface when
//! it is renamed (by hand, by a udev rule, or by the daemon's own naming). The kernel keeps
//! everything attached to the interface across a rename (rxe and siw follow their netdev, a
//! P_Key child keeps its parent by ifindex), so a remembered name that stayed behind would
//! name nothing, and the next restore would miss the link or show a ghost child.
//!
//! Only what is attached to the renamed interface now follows: a remembered soft link whose
//! device runs over it, a remembered child that it is (same port GUID and P_Key). A remembered
//! name of something absent stays as written: a new interface that passes through that name
//! (a hotplugged NIC named `eth0` by the kernel before udev renames it) is not the remembered
//! one.

use tracing::{info, warn};

use crate::config::{IpoibConfig, SoftLinks};

use super::Engine;

/// After `old` was renamed to `new` and the state re-read, rewrites what follows it.
pub(super) async fn follow_netdev_rename(eng: &mut Engine, old: &str, new: &str) {
    if old == new {
        return;
    }
    follow_soft_links(eng, old, new).await;
    follow_ipoib_child(eng, old, new).await;
}

async fn follow_soft_links(eng: &mut Engine, old: &str, new: &str) {
    let Ok(links) = eng.config::<SoftLinks>() else {
        return; // A broken file is never rewritten; it is reported on the bus.
    };
    let carried: Vec<String> = eng
        .state
        .devices
        .values()
        .filter(|d| d.snap.parent_netdev.as_deref() == Some(new))
        .map(|d| d.name().to_string())
        .collect();
    for link in carried {
        let Some(after) = links.after_netdev_rename(&link, old, new) else {
            continue;
        };
        match eng.persist(after).await {
            Ok(()) => info!(link = %link, old, new,
                "the remembered soft link follows its renamed network interface"),
            Err(e) => warn!(link = %link, old, new, error = %e,
                "could not remember the soft link's renamed network interface"),
        }
        return;
    }
}

async fn follow_ipoib_child(eng: &mut Engine, old: &str, new: &str) {
    let Ok(persisted) = eng.config::<IpoibConfig>() else {
        return;
    };
    let Some(child) = eng.state.ipoib.values().find(|i| i.snap.name == new) else {
        return;
    };
    let attrs = child.snap.ipoib.as_ref();
    if attrs.and_then(|a| a.parent.as_ref()).is_none() {
        return; // A port's own interface is remembered by GUID alone.
    }
    let guid = child
        .snap
        .address
        .as_ref()
        .ok()
        .and_then(|a| a.ipoib_port_guid());
    let pkey = attrs.and_then(|a| a.pkey.clone().ok());
    let (Some(guid), Some(pkey)) = (guid, pkey) else {
        return;
    };
    let Some(after) = persisted.after_child_rename(guid, pkey, old, new) else {
        return;
    };
    match eng.persist(after).await {
        Ok(()) => info!(old, new, "the remembered IPoIB child follows its rename"),
        Err(e) => warn!(old, new, error = %e,
            "could not remember the IPoIB child's new name"),
    }
}
