//! Engine errors to D-Bus errors: the kind picks the error name, the sentence is kept.

use rdma_manager_dbus::Error;

use crate::engine::OpError;

pub fn op_error(e: OpError) -> Error {
    match e {
        OpError::InvalidArgument(m) => Error::InvalidArgument(m),
        OpError::NotFound(m) => Error::NotFound(m),
        OpError::NotSupported(m) => Error::NotSupported(m),
        OpError::AlreadyExists(m) => Error::AlreadyExists(m),
        OpError::Busy(m) => Error::Busy(m),
        OpError::Failed(m) => Error::Failed(m),
    }
}
