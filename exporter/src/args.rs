//! The command line (rdma-exporter(1)).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{CommandFactory, Parser};

/// Exports rdma-managerd's RDMA ports, counters and state for Prometheus: node_exporter's
/// node_infiniband_* metrics and the project's own rdma_* metrics (docs/METRICS.md).
#[derive(Debug, Parser)]
#[command(name = "rdma-exporter", version, about)]
pub struct Args {
    /// Address to serve /metrics on (HTTP). Ignored when systemd passes a listening socket.
    #[arg(long, value_name = "ADDR:PORT", default_value = crate::DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Reach the daemon on the session bus instead of the system bus.
    #[arg(long, conflicts_with = "address")]
    pub session: bool,
    /// Reach the daemon on the bus at this D-Bus address.
    #[arg(long, value_name = "ADDRESS")]
    pub address: Option<String>,
    /// Ask the daemon for the counters on its direct socket at PATH first (default on the
    /// system bus: /run/rdma-manager/direct; none on another bus unless given).
    #[arg(long, value_name = "PATH", conflicts_with = "no_direct_socket")]
    pub direct_socket: Option<PathBuf>,
    /// Ask for the counters on the bus only.
    #[arg(long)]
    pub no_direct_socket: bool,
    /// Write the metrics to this file (for node_exporter's textfile collector; the name must
    /// end in .prom) instead of serving HTTP.
    #[arg(long, value_name = "PATH")]
    pub textfile: Option<PathBuf>,
    /// With --textfile: write again every SECONDS; without it the file is written once.
    #[arg(long, value_name = "SECONDS", requires = "textfile", value_parser = clap::value_parser!(u64).range(1..=86400))]
    pub interval: Option<u64>,
    /// HTTP connections served at once; one more is closed unread.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub max_connections: u64,
}

/// Where the daemon is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BusChoice {
    System,
    Session,
    Address(String),
}

impl Args {
    /// Where the counters are asked first, if anywhere: given, or the daemon's default on the
    /// system bus (a session or private bus's daemon has none unless it was given one).
    pub fn direct_socket_path(&self) -> Option<PathBuf> {
        match (&self.direct_socket, self.no_direct_socket, self.bus()) {
            (_, true, _) => None,
            (Some(path), false, _) => Some(path.clone()),
            (None, false, BusChoice::System) => {
                Some(PathBuf::from(rdma_manager_dbus::DIRECT_SOCKET_PATH))
            }
            (None, false, _) => None,
        }
    }

    pub fn bus(&self) -> BusChoice {
        match (&self.address, self.session) {
            (Some(a), _) => BusChoice::Address(a.clone()),
            (None, true) => BusChoice::Session,
            (None, false) => BusChoice::System,
        }
    }
}

/// Every long option, `help` and `version` included (the man page documents each: a test
/// checks it).
pub fn long_options() -> Vec<String> {
    let mut cmd = Args::command();
    cmd.build();
    cmd.get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("rdma-exporter").chain(args.iter().copied()))
    }

    #[test]
    fn the_direct_socket_is_the_system_daemons_unless_told_otherwise() {
        let path = |args: &[&str]| parse(args).expect("parses").direct_socket_path();
        let default = Some(PathBuf::from(rdma_manager_dbus::DIRECT_SOCKET_PATH));
        assert_eq!(path(&[]), default);
        assert_eq!(path(&["--session"]), None);
        assert_eq!(path(&["--address", "unix:path=/run/x"]), None);
        assert_eq!(
            path(&["--session", "--direct-socket", "/tmp/d"]),
            Some(PathBuf::from("/tmp/d"))
        );
        assert_eq!(path(&["--no-direct-socket"]), None);
        let both = parse(&["--direct-socket", "/tmp/d", "--no-direct-socket"]);
        assert_eq!(
            both.expect_err("refused").kind(),
            clap::error::ErrorKind::ArgumentConflict
        );
    }
}
