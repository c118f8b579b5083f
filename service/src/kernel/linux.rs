//! The real host.
