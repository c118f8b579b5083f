//! The QoS profile between its bus form (`rdma_manager_dbus::types::QosProfile`) and the
//! model's.

use rdma_manager_dbus::types::QosProfile as Bus;
use rdma_manager_model::qos::QosProfile;

use crate::engine::OpError;

pub use rdma_manager_model::qos::to_bus;

/// The model's profile of a request, or InvalidArgument (the rules are checked after).
pub fn from_bus(b: &Bus) -> Result<QosProfile, OpError> {
    rdma_manager_model::qos::from_bus(b).map_err(|e| OpError::InvalidArgument(e.0))
}

impl crate::dbus::audit::Shown for Vec<u8> {
    fn shown(&self) -> String {
        format!("{self:?}")
    }
}

impl crate::dbus::audit::Shown for Vec<(u8, u8)> {
    fn shown(&self) -> String {
        let text = self
            .iter()
            .map(|(a, b)| format!("{a}:{b}"))
            .collect::<Vec<_>>()
            .join(",");
        rdma_manager_dbus::text::cap_text(&text, 256).to_string()
    }
}

impl crate::dbus::audit::Shown for i32 {
    fn shown(&self) -> String {
        self.to_string()
    }
}
