//! ibstat-compatible output of the service's model: what rdma-core's `ibstat` prints for the
//! same sysfs state, byte for byte. The format and its rules live in
//! [`rdma_manager_dbus::ibstat`], shared with rdma-tui (which renders the D-Bus objects);
//! this module gives it the model's devices ([`crate::model::DeviceSnapshot`] implements
//! [`IbstatDevice`], see `umad.rs`), and its tests hold the oracle outputs of the real
//! ibstat 44.0 (`testdata/`, made by `testdata/oracle.sh`) that prove the rendering.
//!
//! The model keeps the raw text of a malformed attribute, so everything ibstat does is
//! reproduced from it, malformed values included (they are re-read with `strtoul` as
//! libibumad reads them).

mod umad;

#[cfg(test)]
mod tests;

pub use rdma_manager_dbus::ibstat::{
    device_list, render_all, render_all_short, render_device, render_device_port_guids,
    render_device_short, render_list, render_named, render_port_guids, run, run_all,
    run_port_guids, IbstatArgError, IbstatArgs, IbstatDevice, IbstatError, IbstatRun,
};
