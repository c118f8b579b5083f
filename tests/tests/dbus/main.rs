//! rdma-managerd's D-Bus API, tested against a real private dbus-daemon (and polkitd where a
//! change is authorized): one test binary for all of them, so that the suite links the whole
//! service once rather than once per file. Each module is one area of the API; nextest still
//! runs every test in a process of its own.

/// Returns from a test (as passed) when this machine cannot run a private bus and polkitd,
/// saying why.
macro_rules! require_harness {
    () => {
        if let Some(reason) = rdma_manager_tests::bus::skip_reason() {
            eprintln!("skipping: {reason}");
            return Ok(());
        }
    };
}

mod authorization;
mod bad_input;
mod counters;
mod direct;
mod file_types;
mod health;
mod history;
mod host;
mod ipoib;
mod link_test;
mod naming;
mod port_events;
mod port_type;
mod qos;
mod reliability;
mod roce;
mod service;
mod sizes;
mod soft_links;
mod stale;
mod startup;
mod state;
mod sweep;
mod vf_guid;
mod xml;
