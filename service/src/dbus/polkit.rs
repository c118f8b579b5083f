//! Placeholder until the polkit client lands: refuses every change (fails closed).

use rdma_manager_dbus::{Action, Error};
use zbus::message::Header;

pub struct Authorizer;

impl Authorizer {
    pub fn new(_conn: &zbus::Connection) -> Self {
        Authorizer
    }

    pub async fn check(&self, _header: &Header<'_>, action: Action) -> Result<(), Error> {
        Err(Error::NotAuthorized(format!(
            "{} is refused: authorization is not available",
            action.id()
        )))
    }
}
