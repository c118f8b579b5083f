//! rdma-managerd: the kernel boundary, the model of a host's RDMA state and (later) the daemon.
//!
//! Layers, data flowing kernel -> model -> bus:
//! - [`model`]: plain types and the parsers of every sysfs/configfs format. No I/O.
//! - [`hostconf`], [`naming`]: host configuration files and persistent naming, also pure.
//! - [`kernel`]: the [`kernel::Host`] trait, everything the daemon reads from or does to the
//!   kernel and the filesystem, with the real [`kernel::linux::LinuxHost`] and the
//!   `kernel::sim::SimHost` that follows the kernel's rules and error codes (the `sim` feature:
//!   the tests, `--simulate` and rdma-tui's demo; the packaged daemon is built without it).
//! - [`ibstat`]: rdma-core `ibstat` compatible rendering of a host snapshot.
//! - [`system`]: clients of the host's services on the system bus (systemd, firewalld) for host
//!   setup, behind the [`system::SystemServices`] trait.

pub mod cli;
pub mod completions;
pub mod config;
pub mod dbus;
pub mod engine;
pub use rdma_manager_model::hostconf;
pub mod ibstat;
pub mod ipmgr;
pub mod ipoib_report;
pub mod kernel;
pub mod linktest;
pub mod model;
pub mod naming;
pub mod nm;
pub mod op_error;
#[cfg(feature = "sim")]
pub mod simulated;
pub mod system;
