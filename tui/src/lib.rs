//! rdma-tui: the terminal client of rdma-managerd. An interactive editor (IPoIB, soft links,
//! RoCE, naming) and a live ibstat-style monitor with bandwidth graphs, built only on the
//! service's D-Bus API.
//!
//! - [`model`]: the client's copy of the published objects, kept current by signals.
//! - [`client`]: the bus: the initial read, the signal subscriptions, the calls.
//! - [`app`] and [`pages`]: what is drawn and what keys do, independent of terminal and bus.
//! - [`form`] and [`edit`]: the popup form and what else the editing pages share;
//!   [`check`]: the service's rules for typed values, checked before a call; [`ipform`]: the
//!   IP settings form (NetworkManager) the IPoIB and RoCE pages share; [`qosform`]: the RoCE
//!   page's QoS profile form; [`porttypeform`] and
//!   [`vfguidform`]: the port page's port type and SR-IOV VF GUID forms.
//! - [`countdown`]: the "Keep these settings?" dialog of pending IP changes.
//! - [`terminal`]: the event loop that joins them on a real terminal.
//! - `demo`: a simulated rdma-managerd on a private bus, for `--demo` (the default feature
//!   `demo`; the packaged rdma-tui is built without it and links no daemon code).
//! - [`widgets`]: drawing helpers the monitor pages share (port selection, sparklines, fits).
//! - [`ibstat`]: `--ibstat`, rdma-core's ibstat output rendered from the objects.

pub mod app;
pub mod check;
pub mod cli;
pub mod client;
pub mod countdown;
#[cfg(feature = "demo")]
pub mod demo;
pub mod direct_call;
pub mod edit;
pub mod fixtures;
pub mod form;
pub mod ibstat;
pub mod ipform;
pub mod model;
pub mod pages;
pub mod porttypeform;
pub mod qosform;
pub mod terminal;
pub mod theme;
pub mod units;
pub mod vfguidform;
pub mod widgets;
