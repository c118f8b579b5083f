//! RDMA netlink (NETLINK_RDMA, nldev) client.
//!
//! No Rust crate speaks this family, so it is written here from the uapi header and from
//! what iproute2's `rdma` tool sends. It is not genetlink: the nldev attributes follow the
//! `nlmsghdr` directly, and the message type is `(RDMA_NL_NLDEV << 10) + command`.
//!
//! - [`consts`]: the uapi numbers.
//! - [`attr`], [`msg`]: attribute and message framing, and following a request's replies.
//! - [`encode`], [`decode`]: pure encoders of requests and decoders of replies, testable
//!   without a kernel.
//! - [`socket`]: [`NldevClient`], the blocking client the async Linux host runs through
//!   `spawn_blocking`.
//! - [`notify`]: [`spawn_notify`], the notification subscriber thread.

pub mod attr;
pub mod consts;
pub mod decode;
pub mod encode;
pub mod msg;
pub mod notify;
pub mod socket;

pub use decode::{
    decode_ack, decode_devices, decode_port_stats, decode_ports, decode_sys, Notification,
    NotifyKind,
};
pub use encode::{
    encode_del_link, encode_get_dump, encode_new_link, encode_port_dump, encode_rename,
    encode_stat_get, encode_sys_get, validate_dev_name, validate_new_link,
};
pub use notify::spawn_notify;
pub use socket::NldevClient;
