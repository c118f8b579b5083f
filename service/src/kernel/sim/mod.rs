//! The simulated host.
