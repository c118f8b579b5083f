//! rdma-cli: the command-line client of rdma-managerd, for scripts and shells, in nmcli's
//! role (rdma-cli(1)). It knows only the D-Bus API (the `rdma-manager-dbus` proxies) and checks
//! input with the daemon's own rules (`rdma-manager-model`); it links neither the daemon nor
//! udev nor netlink.

pub mod args;
pub mod bus;
pub mod check;
pub mod commands;
pub mod failure;
pub mod health;
pub mod keypath;
pub mod linktest;
pub mod output;
pub mod pending;
pub mod qos;
pub mod run;
pub mod state;
pub mod status;
pub mod words;
