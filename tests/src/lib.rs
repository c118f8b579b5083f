//! The scenario suite that runs against both the simulated host (in the normal test run) and
//! the real kernel (in the QEMU lab, `tests/lab/`). Its transcript must be identical on both:
//! where they differ, the simulation is wrong.

pub mod audit_log;
pub mod bus;
pub mod gmo;
pub mod hostsvc;
pub mod imports;
pub mod networkd;
pub mod nlmon;
pub mod nm;
pub mod procfs;
pub mod reference;
pub mod scenarios;
pub mod scrape;
pub mod service;
pub mod standins;
pub mod tmux;
