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
//! All of it is pure (no I/O): the daemon reads the host into a full [`State`], and
//! - each part of the document has a module of its own holding its types, its checks, its
//!   difference with the host and its steps: [`soft_links`], [`roce`], [`naming`],
//!   [`host_setup`] (modules, memlock, NFS, subnet manager), [`interfaces`], [`ports`],
//!   [`sriov_vfs`]; a new setting of a part touches that module alone here. A part knows
//!   only its own sections and `part`, what every part is built from;
//! - [`doc`] holds the whole document ([`State`]) and names every part's types;
//! - [`parse`](mod@parse) reads a document (YAML or JSON) and [`check`](mod@check) runs the
//!   parts' checks that need no host; every refusal is a [`StateError`] naming the key path
//!   and the line;
//! - [`diff`](mod@diff) runs the parts' differences with the host's state in the order their
//!   steps must run and returns the [`Change`]s, each with the [`Step`] that makes it and the
//!   one that undoes it ([`change`]); names the host lacks are refused there;
//! - [`ip_settings`] holds an interface's IP settings in the document's form, and [`nmcli`]
//!   maps them to nmcli's keys and back;
//! - [`render`] prints a state as YAML or JSON, entries sorted by identity.

pub mod change;
pub mod check;
pub mod diff;
pub mod doc;
mod forms;
pub mod host_setup;
pub mod interfaces;
pub mod ip_settings;
mod lines;
pub mod naming;
pub mod nmcli;
pub mod parse;
mod part;
pub mod ports;
pub mod render;
pub mod roce;
pub mod soft_links;
pub mod sriov_vfs;

pub use crate::state_error::StateError;
pub use change::{Change, Step};
pub use check::check;
pub use diff::diff;
pub use doc::*;
pub use host_setup::SetupStep;
pub use interfaces::InterfaceStep;
pub use lines::Lines;
pub use naming::{NamingStep, RDMA_POLICIES};
pub use parse::{parse, parse_document, Document};
pub use part::{is_guid, pkey_value, Area, ChangeOp};
pub use ports::{PortEntry, PortStep};
pub use render::{to_json, to_yaml};
pub use roce::{RoceEntry, RoceStep, RoceVersion};
pub use soft_links::{LinkStep, SoftLinkEntry, SoftLinkKind};
pub use sriov_vfs::{VfEntry, VfStep};
