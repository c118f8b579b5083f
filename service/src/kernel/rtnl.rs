//! rtnetlink requests for IPoIB netdevs. TEMPORARY placeholder.
use super::{HostError, HostEvent, NetdevChange, NewIpoibChild};
fn unsupported() -> HostError {
    HostError::Unsupported {
        what: "rtnetlink".into(),
        why: "not built".into(),
    }
}
pub struct Rtnl;
impl Rtnl {
    pub async fn open() -> Result<Rtnl, HostError> {
        Err(unsupported())
    }
    pub async fn create_ipoib_child(&self, _c: &NewIpoibChild) -> Result<(), HostError> {
        Err(unsupported())
    }
    pub async fn change(&self, _n: &str, _c: &NetdevChange) -> Result<(), HostError> {
        Err(unsupported())
    }
    pub async fn rename(&self, _o: &str, _n: &str) -> Result<(), HostError> {
        Err(unsupported())
    }
    pub async fn delete(&self, _n: &str) -> Result<(), HostError> {
        Err(unsupported())
    }
}
pub async fn spawn_link_events(
    _tx: tokio::sync::mpsc::UnboundedSender<HostEvent>,
) -> Result<tokio::task::JoinHandle<()>, HostError> {
    Err(unsupported())
}
