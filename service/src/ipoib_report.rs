//! A table of IPoIB interfaces, printed after the ibstat-style device list.

use crate::model::{DeviceSnapshot, NetdevSnapshot};

/// The RDMA device and port an IPoIB netdev runs on: same PCI function, `dev_port` + 1.
pub fn ipoib_port(devices: &[DeviceSnapshot], nd: &NetdevSnapshot) -> Option<(String, u32)> {
    let pci = nd.pci_address.as_deref()?;
    let port = nd.ipoib.as_ref()?.port.clone().ok()?;
    devices
        .iter()
        .find(|d| d.pci_address.as_deref() == Some(pci))
        .map(|d| (d.name.clone(), port))
}

pub fn render_ipoib(devices: &[DeviceSnapshot], netdevs: &[NetdevSnapshot]) -> String {
    let rows: Vec<&NetdevSnapshot> = netdevs.iter().filter(|n| n.is_ipoib()).collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nIPoIB interfaces:\n");
    out.push_str(&format!(
        "\t{:<16}{:<16}{:<8}{:<11}{:<7}{:<8}{}\n",
        "NAME", "PARENT", "P_KEY", "MODE", "MTU", "STATE", "PORT"
    ));
    for n in rows {
        let ib = n.ipoib.as_ref();
        let pkey = ib
            .and_then(|i| i.pkey.clone().ok())
            .map(|p| format!("0x{p:04x}"))
            .unwrap_or_else(|| "-".into());
        let mode = ib
            .and_then(|i| i.mode.clone().ok())
            .map(|m| m.as_str().to_string())
            .unwrap_or_else(|| "-".into());
        let parent = ib
            .and_then(|i| i.parent.clone())
            .unwrap_or_else(|| "-".into());
        let port = ipoib_port(devices, n)
            .map(|(d, p)| format!("{d}/{p}"))
            .unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "\t{:<16}{:<16}{:<8}{:<11}{:<7}{:<8}{}\n",
            n.name,
            parent,
            pkey,
            mode,
            n.mtu
                .clone()
                .map(|m| m.to_string())
                .unwrap_or_else(|_| "-".into()),
            n.operstate.clone().unwrap_or_else(|_| "-".into()),
            port
        ));
    }
    out
}
