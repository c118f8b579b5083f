//! RDMA netlink (NETLINK_RDMA, nldev) client. TEMPORARY placeholder until the client lands.
use super::{HostError, HostEvent, NewLink, NlDevice, NlPort, NlSys};
fn unsupported() -> HostError {
    HostError::Unsupported {
        what: "RDMA netlink".into(),
        why: "not built".into(),
    }
}
pub struct NldevClient;
impl NldevClient {
    pub fn open() -> Result<Self, HostError> {
        Err(unsupported())
    }
    pub fn devices(&self) -> Result<Vec<NlDevice>, HostError> {
        Err(unsupported())
    }
    pub fn ports(&self) -> Result<Vec<NlPort>, HostError> {
        Err(unsupported())
    }
    pub fn sys(&self) -> Result<NlSys, HostError> {
        Err(unsupported())
    }
    pub fn port_stats(&self, _i: u32, _p: u32) -> Result<Vec<(String, u64)>, HostError> {
        Err(unsupported())
    }
    pub fn new_link(&self, _l: &NewLink) -> Result<(), HostError> {
        Err(unsupported())
    }
    pub fn del_link(&self, _i: u32) -> Result<(), HostError> {
        Err(unsupported())
    }
    pub fn rename(&self, _i: u32, _n: &str) -> Result<(), HostError> {
        Err(unsupported())
    }
}
pub fn spawn_notify(
    _tx: tokio::sync::mpsc::UnboundedSender<HostEvent>,
) -> Result<Option<std::thread::JoinHandle<()>>, HostError> {
    Err(unsupported())
}
