//! Engine errors to D-Bus errors: the kind picks the error name, the sentence is kept, cut to
//! [`rdma_manager_dbus::text::MESSAGE_MAX_BYTES`] (the last line of defence against a sentence
//! that quotes a huge name or line: see `docs/RELIABILITY.md`, "Sizes").

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
    .capped()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_capped() {
        let long = "n".repeat(3 << 20);
        for e in [
            OpError::InvalidArgument(long.clone()),
            OpError::NotFound(long.clone()),
            OpError::NotSupported(long.clone()),
            OpError::AlreadyExists(long.clone()),
            OpError::Busy(long.clone()),
            OpError::Failed(long.clone()),
        ] {
            let m = op_error(e).message();
            assert!(
                m.len() <= rdma_manager_dbus::text::MESSAGE_MAX_BYTES,
                "{}",
                m.len()
            );
            assert!(m.contains("3145728 bytes"), "{m:.100}");
        }
    }
}
