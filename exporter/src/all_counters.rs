//! The root's GetAllCounters and its reply's rows, on either connection the exporter has
//! to the daemon: the bus or the direct socket.

use rdma_manager_dbus::ROOT_PATH;
use std::collections::HashMap;
use zbus::zvariant::OwnedObjectPath;
use zbus::Connection;

use crate::model::MANAGER_IFACE;

/// One port of GetAllCounters: (object, source, saturated, counters by name).
pub type Row = (OwnedObjectPath, String, bool, HashMap<String, u64>);

/// GetAllCounters on `conn`: the bus (the daemon's name as `destination`) or the direct
/// socket (none).
pub async fn all_counters_on(
    conn: &Connection,
    destination: Option<&str>,
) -> zbus::Result<(u64, Vec<Row>)> {
    let reply = conn
        .call_method(
            destination,
            ROOT_PATH,
            Some(MANAGER_IFACE),
            "GetAllCounters",
            &(),
        )
        .await?;
    reply.body().deserialize()
}
