//! Kernel device events. TEMPORARY placeholder.
use super::{HostError, HostEvent};
pub async fn spawn_uevents(
    _tx: tokio::sync::mpsc::UnboundedSender<HostEvent>,
) -> Result<tokio::task::JoinHandle<()>, HostError> {
    Err(HostError::Unsupported {
        what: "uevents".into(),
        why: "not built".into(),
    })
}
