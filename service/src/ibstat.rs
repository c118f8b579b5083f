//! ibstat-compatible output.
// TEMPORARY placeholder until the formatter lands.
use crate::model::DeviceSnapshot;
pub fn render_all(devices: &[DeviceSnapshot]) -> String {
    devices
        .iter()
        .map(|d| format!("CA '{}'\n", d.name))
        .collect()
}
