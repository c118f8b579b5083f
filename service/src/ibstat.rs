//! ibstat-compatible output.
