//! The InfiniBand ping of infiniband-diags' `ibping`: a Get of vendor class 0x32 with OpenIB's
//! OUI 0x001405 over QP1, answered by the peer's responder with its host name. It needs no IP
//! address, only the peer port's LID, so it tests an InfiniBand link before IPoIB is set up,
//! and `ibping -S` / `ibping -L` on any host interoperate with it in both directions.
//!
//! - [`wire`]: the MADs and the umad device's header.
//! - [`umad`]: the device itself (agent registration, send, receive with a timeout).
//! - [`tool`]: `rdma-managerd ibping`, both sides, printing what ibping prints.
//! - [`limit`]: how often the responder answers, per peer and in all.
//! - [`output`]: that output read back into a result.
//!
//! The device is root's (`/dev/infiniband/umadN`, mode 0600); the daemon opens it and hands
//! it to the sandboxed `rdma-managerd ibping`, which has none of its privileges.

pub mod limit;
pub mod output;
pub mod tool;
pub mod umad;
pub mod wire;
