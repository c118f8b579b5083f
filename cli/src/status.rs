//! `status`: every port of every RDMA device, one line each, as `nmcli device status` lists
//! devices: DEVICE PORT STATE PHYS RATE LINK-LAYER NETDEV.

use crate::bus::{object, text, u32_of, Objects, DEVICE_IFACE, PORT_IFACE};
use crate::output::Table;

pub const COLUMNS: [&str; 7] = [
    "DEVICE",
    "PORT",
    "STATE",
    "PHYS",
    "RATE",
    "LINK-LAYER",
    "NETDEV",
];

/// The table of ports, by device name then port number.
pub fn table(objects: &Objects) -> Table {
    let devices = objects.with(DEVICE_IFACE);
    let mut rows: Vec<(String, u32, Vec<String>)> = objects
        .with(PORT_IFACE)
        .into_iter()
        .map(|(_, p)| {
            let dev_path = object(p, "Device").unwrap_or_default();
            let device = devices
                .iter()
                .find(|(path, _)| path.as_str() == dev_path)
                .map(|(_, d)| text(d, "Name"))
                .unwrap_or_else(|| text(p, "DeviceName"));
            let number = u32_of(p, "Number").unwrap_or(0);
            let row = vec![
                device.clone(),
                number.to_string(),
                text(p, "State"),
                text(p, "PhysState"),
                text(p, "Rate"),
                text(p, "LinkLayer"),
                text(p, "Netdev"),
            ];
            (device, number, row)
        })
        .collect();
    rows.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let mut t = Table::new(&COLUMNS);
    for (_, _, row) in rows {
        t.push(row);
    }
    t
}
