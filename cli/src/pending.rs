//! Pending changes (`org.rdmamanager.RdmaManager1.PendingChange`): a change made with a
//! timeout stays in force until confirmed, and is rolled back at its deadline otherwise.

use rdma_manager_dbus::proxies::PendingChangeProxy;
use rdma_manager_dbus::{change_path, ROOT_PATH};
use zbus::Connection;

use crate::bus;
use crate::failure::Failure;

/// The change `given` names (its path, or its number), or the only one pending.
pub async fn resolve(conn: &Connection, given: Option<&str>) -> Result<String, Failure> {
    if let Some(g) = given {
        if let Ok(n) = g.parse::<u32>() {
            return Ok(change_path(n));
        }
        if !g.starts_with(&format!("{ROOT_PATH}/Change/")) {
            return Err(Failure::usage(format!(
                "{g:?} is not a pending change: give its path ({}) or its number",
                change_path(1)
            )));
        }
        return Ok(g.to_string());
    }
    let pending = bus::pending_changes(conn).await?;
    match pending.as_slice() {
        [] => Err(Failure::not_found("no change is pending")),
        [one] => Ok(one.clone()),
        many => Err(Failure::usage(format!(
            "{} changes are pending; name one: {}",
            many.len(),
            many.join(" ")
        ))),
    }
}

pub async fn proxy(conn: &Connection, path: &str) -> Result<PendingChangeProxy<'static>, Failure> {
    bus::proxy(conn, path).await
}

/// A pending change gone before it was confirmed or rolled back: it ended meanwhile.
fn gone(path: &str, e: Failure) -> Failure {
    if e.code == crate::failure::code::NOT_FOUND {
        Failure::not_found(format!(
            "{path} is not pending (it was confirmed, rolled back, or its time ran out)"
        ))
    } else {
        e
    }
}

pub async fn confirm(conn: &Connection, path: &str) -> Result<(), Failure> {
    proxy(conn, path)
        .await?
        .confirm()
        .await
        .map_err(|e| gone(path, e.into()))
}

pub async fn roll_back(conn: &Connection, path: &str) -> Result<(), Failure> {
    proxy(conn, path)
        .await?
        .roll_back()
        .await
        .map_err(|e| gone(path, e.into()))
}

/// What a pending change says of itself, and how to end it, for the user.
pub async fn describe(conn: &Connection, path: &str) -> String {
    let mut out = format!("Pending change {path}");
    if let Ok(p) = proxy(conn, path).await {
        if let Ok(d) = p.description().await {
            if !d.is_empty() {
                out.push_str(&format!(": {d}"));
            }
        }
        if let Ok(deadline_us) = p.deadline().await {
            let now_us = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_micros() as u64)
                .unwrap_or(0);
            if deadline_us > now_us {
                out.push_str(&format!(
                    "\nIt is rolled back in {} s unless confirmed.",
                    (deadline_us - now_us).div_ceil(1_000_000)
                ));
            }
        }
    }
    out.push_str(&format!(
        "\nConfirm: rdma-cli confirm {path}\nRoll back: rdma-cli rollback {path}"
    ));
    out
}

/// Confirms the changes of `interface` that appeared since `before`: an IPoIB operation on
/// an interface NetworkManager owns leaves one, and a one-shot command commits at once, as
/// nmcli's do. Another client's changes, of other interfaces, are left alone.
pub async fn confirm_new(
    conn: &Connection,
    before: &[String],
    interface: &str,
) -> Result<(), Failure> {
    for path in bus::pending_changes(conn).await? {
        if before.contains(&path) {
            continue;
        }
        let ours = match proxy(conn, &path).await {
            Ok(p) => p.interface().await.is_ok_and(|i| i == interface),
            Err(_) => false,
        };
        if ours {
            confirm(conn, &path).await?;
        }
    }
    Ok(())
}
