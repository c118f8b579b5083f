//! The clients as their users run them, against the service: rdma-tui's demo, its ibstat
//! output, the JSON document and the terminal driven through tmux; rdma-cli's commands and
//! exit codes. One test binary for all of them.

mod cli;
mod demo;
mod ibstat;
mod json;
mod screens;
mod startup;
mod tmux;
