//! Command-line arguments.

use rdma_manager_dbus::ibstat::IbstatArgs;

use crate::client::BusChoice;

/// The line said after a usage error, instead of the whole usage.
pub const USAGE_HINT: &str = "Try 'rdma-tui --help' for the options (and rdma-tui(1)).";

pub const USAGE: &str = concat!(
    "usage: rdma-tui [--system | --session | --address=ADDRESS | --demo] [--no-mouse]
       rdma-tui [BUS] [--direct-socket=PATH] --ibstat [IBSTAT OPTIONS] [DEVICE [PORT]]
       rdma-tui [BUS] [--direct-socket=PATH] --json [--counters]

  (no option)     the interactive editor and monitor of rdma-managerd on the system bus
  --demo          start a simulated rdma-managerd on a private bus and show it (no RDMA
                  hardware or root needed; every change works on the simulated host); in
                  builds with the feature `demo` (the default) only
  --system        rdma-managerd on the system bus (the default)
  --session       rdma-managerd on the session bus (rdma-managerd --session --simulate)
  --address=ADDR  rdma-managerd on the bus at ADDR
  --no-mouse      leave the mouse to the terminal (select and paste text)
  --ibstat        print what rdma-core's ibstat prints for the service's state, and exit
  --json          print the service's whole state as JSON, and exit (docs/JSON.md)
  --counters      with --json: add every port's counters (as read now) and its latest
                  throughput rates (the service's last sample), as `counters` and `rates`
  --direct-socket=PATH with --ibstat or --json: read the objects from rdma-managerd's direct
                  socket at PATH, without the bus's relay, and from the bus if it does not
                  answer (default with --system: /run/rdma-manager/direct)
  -h, --help      this text
  -V, --version   the version

IBSTAT OPTIONS (with --ibstat), as ibstat 44.0 prints them, byte for byte:
",
    rdma_manager_dbus::ibstat_options_help!(),
    "

Keys: Tab/Shift-Tab or 1..9 pages, arrows move, Enter acts, Esc back, ? help, q quit.
NO_COLOR=1 draws without colour."
);

/// Every option [`parse`] accepts, as documentation and completions must list them (a
/// trailing `=` takes a value in the same argument).
pub const OPTIONS: [&str; 13] = [
    "--demo",
    "--system",
    "--session",
    "--address=",
    "--direct-socket=",
    "--no-mouse",
    "--ibstat",
    "--json",
    "--counters",
    "-h",
    "--help",
    "-V",
    "--version",
];

/// ibstat's options, taken with `--ibstat` (`IBSTAT_VALUE_OPTIONS` take a value in the next
/// argument).
pub use rdma_manager_dbus::ibstat::args::{
    OPTIONS as IBSTAT_OPTIONS, VALUE_OPTIONS as IBSTAT_VALUE_OPTIONS,
};

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Interactive,
    Ibstat(IbstatArgs),
    Json,
    Help,
    Version,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    pub mode: Mode,
    pub bus: BusChoice,
    pub demo: bool,
    pub mouse: bool,
    /// `--direct-socket=PATH`; without it, [`rdma_manager_dbus::DIRECT_SOCKET_PATH`] on the system bus.
    pub direct_socket: Option<String>,
    /// `--counters` (with `--json`): the ports' counters and latest rates in the document.
    pub counters: bool,
}

impl Args {
    /// Where `--ibstat` and `--json` read the objects first, if anywhere: given, or the
    /// daemon's default on the system bus (a private or session bus's daemon has none unless
    /// it was given one; the default socket is the system daemon's).
    pub fn direct_socket_path(&self) -> Option<String> {
        match (&self.direct_socket, &self.bus, self.demo) {
            (Some(path), _, _) => Some(path.clone()),
            (None, BusChoice::System, false) => {
                Some(rdma_manager_dbus::DIRECT_SOCKET_PATH.to_string())
            }
            (None, _, _) => None,
        }
    }
}

/// A command line that cannot be run, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsageError {
    /// Not a command line of rdma-tui (the caller adds the usage).
    #[error("{0}")]
    Bad(String),
    /// `--demo`, given to a build without it (the packaged rdma-tui).
    #[error(
        "--demo: this build of rdma-tui has no demo (it is the default feature `demo`, which \
         packaged builds leave out; from the source tree: cargo run --release --bin rdma-tui \
         -- --demo)"
    )]
    NoDemo,
}

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError::Bad(msg.into())
}

pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Args, UsageError> {
    let mut out = Args {
        mode: Mode::Interactive,
        bus: BusChoice::System,
        demo: false,
        mouse: true,
        direct_socket: None,
        counters: false,
    };
    let mut ibstat = false;
    let mut ibstat_args = IbstatArgs::default();
    // The first of ibstat's options or arguments, to name when there is no --ibstat.
    let mut for_ibstat: Option<String> = None;
    let mut only_positional = false;
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        if only_positional {
            ibstat_args
                .positional(&a)
                .map_err(|e| usage(e.to_string()))?;
            for_ibstat.get_or_insert(a);
            continue;
        }
        match a.as_str() {
            "-h" | "--help" => out.mode = Mode::Help,
            "-V" | "--version" => out.mode = Mode::Version,
            "--demo" if cfg!(feature = "demo") => out.demo = true,
            "--demo" => return Err(UsageError::NoDemo),
            "--system" => out.bus = BusChoice::System,
            "--session" => out.bus = BusChoice::Session,
            "--no-mouse" => out.mouse = false,
            "--json" => out.mode = Mode::Json,
            "--counters" => out.counters = true,
            "--ibstat" => ibstat = true,
            "--" => only_positional = true,
            s if s.starts_with("--address=") => {
                let addr = &s["--address=".len()..];
                if addr.is_empty() {
                    return Err(usage("--address= needs a D-Bus address"));
                }
                out.bus = BusChoice::Address(addr.to_string());
            }
            s if s.starts_with("--direct-socket=") => {
                let path = &s["--direct-socket=".len()..];
                if !path.starts_with('/') {
                    return Err(usage(format!("{s}: expected an absolute path")));
                }
                out.direct_socket = Some(path.to_string());
            }
            s => {
                let taken = ibstat_args
                    .option(s, || it.next())
                    .map_err(|e| usage(e.to_string()))?;
                if !taken && s.starts_with('-') && s.len() > 1 {
                    return Err(usage(format!("unknown option {s}")));
                }
                if !taken {
                    ibstat_args
                        .positional(s)
                        .map_err(|e| usage(e.to_string()))?;
                }
                for_ibstat.get_or_insert_with(|| s.to_string());
            }
        }
    }
    if out.counters && out.mode == Mode::Interactive {
        return Err(usage("--counters goes with --json"));
    }
    match (&out.mode, ibstat, for_ibstat) {
        (Mode::Help | Mode::Version, _, _) => {}
        (Mode::Json, true, _) => return Err(usage("--json and --ibstat: choose one")),
        (_, true, _) => out.mode = Mode::Ibstat(ibstat_args),
        (_, false, Some(what)) if what.starts_with('-') => {
            return Err(usage(format!("{what} is an option of --ibstat")))
        }
        (_, false, Some(what)) => return Err(usage(format!("unexpected argument {what:?}"))),
        (_, false, None) => {}
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(a: &[&str]) -> Result<Args, UsageError> {
        parse(a.iter().map(|s| s.to_string()))
    }

    fn ibstat(a: &[&str]) -> IbstatArgs {
        match p(a).map(|a| a.mode) {
            Ok(Mode::Ibstat(args)) => args,
            other => panic!("{a:?}: {other:?}"),
        }
    }

    #[test]
    fn modes() {
        assert_eq!(p(&[]).map(|a| a.mode).ok(), Some(Mode::Interactive));
        let a = p(&["--ibstat", "rxe0", "1", "--session"]).expect("parses");
        assert_eq!(
            a.mode,
            Mode::Ibstat(IbstatArgs {
                device: Some("rxe0".into()),
                port: Some("1".into()),
                ..IbstatArgs::default()
            })
        );
        assert_eq!(a.bus, BusChoice::Session);
        // The port is read as ibstat reads it (strtol): "x" is port 0.
        assert_eq!(ibstat(&["--ibstat", "rxe0", "x"]).dev_port(), 0);
        assert!(p(&["--ibstat", "rxe0", "1", "2"]).is_err());
        assert!(p(&["rxe0"]).is_err());
        assert!(p(&["--bogus"]).is_err_and(|e| e.to_string() == "unknown option --bogus"));
        assert!(p(&["--address="]).is_err());
        if cfg!(feature = "demo") {
            assert!(p(&["--demo"]).expect("parses").demo);
        } else {
            assert_eq!(p(&["--demo"]), Err(UsageError::NoDemo));
        }
        assert!(p(&["--json", "--ibstat"]).is_err());
        assert!(p(&["--json", "--counters"]).is_ok_and(|a| a.counters));
        assert!(p(&["--counters"]).is_err());
        assert!(p(&["--ibstat", "--counters"]).is_err());
        assert!(p(&["--json"]).is_ok_and(|a| !a.counters));
    }

    #[test]
    fn the_direct_socket_is_the_system_daemons_unless_given() {
        let path = |a: &[&str]| p(a).expect("parses").direct_socket_path();
        let default = Some(rdma_manager_dbus::DIRECT_SOCKET_PATH.to_string());
        assert_eq!(path(&["--json"]), default);
        assert_eq!(path(&["--session", "--json"]), None);
        if cfg!(feature = "demo") {
            assert_eq!(path(&["--demo"]), None);
        }
        assert_eq!(path(&["--address=unix:path=/b", "--json"]), None);
        assert_eq!(
            path(&["--address=unix:path=/b", "--direct-socket=/d", "--json"]),
            Some("/d".to_string())
        );
        assert!(p(&["--direct-socket="]).is_err_and(|e| e.to_string().contains("absolute path")));
    }

    #[test]
    fn ibstat_options() {
        let a = ibstat(&["--ibstat", "-l"]);
        assert!(a.list_only);
        let a = ibstat(&["-sp", "--ibstat", "mlx4_1", "0x2"]);
        assert!(a.short && a.port_list);
        assert_eq!((a.device.as_deref(), a.dev_port()), (Some("mlx4_1"), 2));
        assert_eq!(ibstat(&["--ibstat", "--", "mlx4_1", "-1"]).dev_port(), -1);
        assert_eq!(
            ibstat(&["--ibstat", "-v", "-z", "/x.conf"]),
            IbstatArgs::default()
        );
        assert!(p(&["--ibstat", "-d"]).is_err_and(|e| e.to_string().contains("libibumad")));
        // ibstat's options without --ibstat say so.
        assert!(p(&["-l"]).is_err_and(|e| e.to_string() == "-l is an option of --ibstat"));
    }

    #[test]
    fn every_listed_option_parses_and_is_in_the_usage() {
        for &o in OPTIONS.iter().chain(&IBSTAT_OPTIONS) {
            let arg = if o == "--direct-socket=" {
                format!("{o}/run/x")
            } else if o.ends_with('=') {
                format!("{o}unix:path=/x")
            } else {
                o.to_string()
            };
            // An option of --ibstat or of --json is tried after it.
            let parsed = p(&[&arg])
                .or_else(|_| p(&["--ibstat", &arg]))
                .or_else(|_| p(&["--json", &arg]));
            assert!(parsed.is_ok(), "{o}: {parsed:?}");
            assert!(USAGE.contains(o.trim_end_matches('=')), "{o}");
        }
        for o in IBSTAT_VALUE_OPTIONS {
            assert!(p(&["--ibstat", o, "/x"]).is_ok(), "{o}");
            assert!(USAGE.contains(o), "{o}");
        }
    }
}
