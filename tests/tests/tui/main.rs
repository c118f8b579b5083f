//! rdma-tui as its users run it, against the service: the demo, the ibstat output, the JSON
//! document and the terminal driven through tmux. One test binary for all of them.

mod demo;
mod ibstat;
mod json;
mod startup;
mod tmux;
