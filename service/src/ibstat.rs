//! ibstat-compatible output.
// TEMPORARY placeholder until the formatter lands.
use crate::model::DeviceSnapshot;
pub fn render_all(devices: &[DeviceSnapshot]) -> String {
    devices
        .iter()
        .map(|d| format!("CA '{}'\n", d.name))
        .collect()
}
pub fn render_device(dev: &DeviceSnapshot, _port: Option<u32>) -> Result<String, std::fmt::Error> {
    Ok(render_all(std::slice::from_ref(dev)))
}
