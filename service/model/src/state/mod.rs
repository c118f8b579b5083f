//! The declarative host state: one document that says how a host's RDMA configuration should
//! be, in the form `GetState` prints and `DiffState`/`ApplyState` take (docs/STATE.md).
//!
//! Keys follow nmstate where it has one for the same thing (`interfaces[].infiniband.{mode,
//! pkey, base-iface}`, `ipv4.address[].prefix-length`), so a document reads like the one a
//! site already keeps for nmstate. Semantics are nmstate's merge: a section or entry the
//! document leaves out is left as it is, list entries are matched by their identity, and only
//! `state: absent` removes anything. A document printed from a host therefore changes nothing
//! when applied to it.
//!
//! [`doc`] holds the document's types; [`parse`](mod@parse) reads a document, refusing with
//! a [`StateError`] that names the key path and line; [`change`] holds the steps a difference
//! turns into, each with the step that undoes it.

pub mod change;
pub mod check;
pub mod diff;
pub mod doc;
mod error;
mod forms;
mod lines;
pub mod nmcli;
pub mod parse;
pub mod render;

pub use change::{Area, Change, ChangeOp, Step};
pub use check::{check, is_guid, pkey_value, RDMA_POLICIES};
pub use diff::diff;
pub use doc::*;
pub use error::StateError;
pub use lines::Lines;
pub use parse::{parse, parse_document, Document};
pub use render::{to_json, to_yaml};
