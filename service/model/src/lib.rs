//! The rules rdma-managerd and its client share, pure (no I/O, no kernel, no bus): what a
//! user may ask of names ([`names`]), IPoIB interfaces ([`ipoib`]) and IP settings ([`ip`]), link tests' requests ([`linktest`]),
//! the host configuration files of host setup ([`hostconf`]), and the declarative state
//! document with the steps a difference turns into ([`state`]), and the expectations and
//! verdicts of a node health check ([`health`]). The daemon checks a request
//! with them before it changes anything; rdma-tui checks a form with the very same functions
//! before it sends anything, without linking the daemon. The daemon re-exports them where its
//! model keeps them (`rdma_managerd::model::{names, ipoib}`, `rdma_managerd::hostconf`).

pub mod health;
pub mod hostconf;
pub mod ip;
pub mod ipoib;
pub mod linktest;
pub mod names;
pub mod port_type;
pub mod qos;
pub mod state;
pub mod state_error;
pub mod vf_guid;
