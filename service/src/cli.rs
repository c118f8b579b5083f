//! rdma-managerd's command line: [`USAGE`] (what `--help` prints), [`OPTIONS`] (every option
//! [`parse`] takes, which the man page and the tests check against) and [`parse`].
//!
//! `show` takes ibstat's own options and arguments too (`-l`, `-s`, `-p`, `-v`, `-z FILE`,
//! `DEVICE [PORT]`; see [`rdma_manager_dbus::ibstat::args`]), so that a script written for
//! ibstat runs unchanged against `rdma-managerd show`.

use rdma_manager_dbus::ibstat::IbstatArgs;

use crate::dbus::server::Bus;

/// What is logged without RUST_LOG: the daemon's own messages from `info` up, zbus's only
/// from `error`. zbus warns in its own terms about what the daemon then reports in its own
/// (when the bus goes away: `Failed to parse NameLost`, `Broken pipe`, before the daemon's
/// one `cannot serve any longer`); RUST_LOG=info,zbus=debug shows them. The
/// benchmarks and labs run the daemon with it too: `info` alone opens zbus's span around each
/// method call, whose fields (the whole message and its header) the log formatter renders on
/// every call, which an installed daemon does not spend, and whose code would then be
/// resident in the benchmarks only.
pub const DEFAULT_LOG_FILTER: &str = "info,zbus=error";

/// The line said after a usage error, instead of the whole usage.
pub const USAGE_HINT: &str = "Try 'rdma-managerd --help' for the options (and rdma-managerd(8)).";

pub const USAGE: &str = concat!(
    "usage: rdma-managerd [--system | --session | --address=ADDRESS] [--simulate[=DIR]]
                     [--sim-host=SPEC] [--sim-cost=PROFILE] [--tick-ms=N]
                     [--counters-max-age-ms=N]
                     [--direct-socket=PATH | --no-direct-socket]
       rdma-managerd show [--simulate[=DIR]] [--sim-host=SPEC] [--json]
       rdma-managerd show [--simulate[=DIR]] [--sim-host=SPEC] [IBSTAT OPTIONS] [DEVICE [PORT]]
       rdma-managerd ibping [--serve] (--umad PATH | --fd N) [-c COUNT] [--interval-ms MS]
                     [--timeout-ms MS] [LID]

  (no command)    serve on the system bus as org.rdmamanager.RdmaManager1
  --system        serve on the system bus (the default)
  --session       serve on the session bus instead (development)
  --address=ADDR  serve on the bus at ADDR (tests)
  --direct-socket=PATH also answer GetManagedObjects on this Unix socket, peer to peer,
                  without the bus's relay (default with --system: /run/rdma-manager/direct)
  --no-direct-socket no direct socket, with --system too
  --tick-ms=N     port poll and sampling period in milliseconds (default 1000); the history
                  still keeps 300 samples and 360 averages of 10 per port, so it covers
                  3600 ticks (benchmarks)
  --counters-max-age-ms=N how old GetAllCounters' reading may be when it is answered
                  (default 10000): callers within N ms of a reading share it, so the
                  counters are read at most once per N ms however many scrapers ask
  show            print every RDMA device and port as ibstat does, then the IPoIB interfaces
  ibping          infiniband-diags' ibping on a port's umad device: ping LID, or --serve
                  (the service runs it sandboxed for link tests and its responder)
  --simulate      use the simulated demo host (never without this or a --sim-* option:
                  on a host without RDMA `show` prints nothing, as ibstat does); this and
                  the --sim-* options are in builds with the `sim` feature only
  --simulate=DIR  the same, with its sysfs-shaped tree kept in DIR
  --sim-host=SPEC the simulated host: `demo` (default), `naming` (an onboard HCA, a PF and
                  its VF, an SF and rxe: every way devices are named) or
                  `large:DEVICES:PORTS:IPOIB` (a generated host for benchmarks, e.g.
                  large:256:2:1024) or `rxe:DEVICES` (rxe devices over dummy netdevs,
                  as the lab's scale run makes them); implies --simulate
  --sim-cost=PROFILE what the simulated host's reads cost: `off` (the default), `lab` (the
                  kernel under software emulation, as measured in the lab) or `lab/N` (those
                  figures divided by N); implies --simulate (benchmarks)
  --json          (show) print the state as JSON instead: the D-Bus model, the document
                  rdma-tui --json prints (docs/JSON.md)
  -h, --help      this text
  -V, --version   the version

IBSTAT OPTIONS (show), as ibstat 44.0 prints them, byte for byte:
",
    rdma_manager_dbus::ibstat_options_help!()
);

/// Every option [`parse`] takes, as `--help`, the man page and completions must list them
/// (a trailing `=` takes a value in the same argument).
pub const OPTIONS: [&str; 17] = [
    "show",
    "--system",
    "--session",
    "--address=",
    "--direct-socket=",
    "--no-direct-socket",
    "--tick-ms=",
    "--counters-max-age-ms=",
    "--simulate",
    "--simulate=",
    "--sim-host=",
    "--sim-cost=",
    "--json",
    "-h",
    "--help",
    "-V",
    "--version",
];

/// ibstat's options, taken after `show` (`IBSTAT_VALUE_OPTIONS` take a value in the next
/// argument).
pub use rdma_manager_dbus::ibstat::args::{
    OPTIONS as IBSTAT_OPTIONS, VALUE_OPTIONS as IBSTAT_VALUE_OPTIONS,
};

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Serve,
    Show { json: bool, ibstat: IbstatArgs },
    Help,
    Version,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    pub command: Command,
    pub bus: Option<Bus>,
    #[cfg(feature = "sim")]
    pub sim: SimArgs,
    pub tick_ms: Option<u64>,
    /// `--counters-max-age-ms=N`: see `EngineConfig::counters_max_age`.
    pub counters_max_age_ms: Option<u64>,
    /// `--direct-socket=PATH` (`Some(Some)`), `--no-direct-socket` (`Some(None)`), or
    /// neither: the default, [`rdma_manager_dbus::DIRECT_SOCKET_PATH`] on the system bus only.
    pub direct_socket: Option<Option<String>>,
}

/// The simulated host's options; only a build with the `sim` feature takes them.
#[cfg(feature = "sim")]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimArgs {
    /// `--simulate` (`Some(None)`), `--simulate=DIR` (`Some(Some(DIR))`), or implied by the
    /// other two.
    pub simulate: Option<Option<String>>,
    /// `--sim-host=SPEC`.
    pub host: Option<String>,
    /// `--sim-cost=PROFILE`.
    pub cost: Option<crate::kernel::sim::cost::CostProfile>,
}

impl Args {
    /// Where the direct socket is listened on, if anywhere: given, or the default on the
    /// system bus (on a private or session bus, tests and development, only when given).
    pub fn direct_socket_path(&self) -> Option<String> {
        match (&self.direct_socket, &self.bus) {
            (Some(choice), _) => choice.clone(),
            (None, None | Some(Bus::System)) => {
                Some(rdma_manager_dbus::DIRECT_SOCKET_PATH.to_string())
            }
            (None, Some(_)) => None,
        }
    }
}

/// A command line that cannot be run, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsageError {
    /// Not a command line of rdma-managerd (the caller adds the usage).
    #[error("{0}")]
    Bad(String),
    /// An option of the simulated host, given to a build without it (the packaged daemon).
    #[error(
        "{0}: this build of rdma-managerd has no simulated host (it is the `sim` feature: \
         cargo run -p rdma-managerd --features sim -- ...)"
    )]
    NoSimulator(String),
}

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError::Bad(msg.into())
}

/// Parses the arguments after the program name.
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Args, UsageError> {
    let mut out = Args {
        command: Command::Serve,
        bus: None,
        #[cfg(feature = "sim")]
        sim: SimArgs::default(),
        tick_ms: None,
        counters_max_age_ms: None,
        direct_socket: None,
    };
    let mut it = args.into_iter().peekable();
    let show = it.peek().is_some_and(|a| a == "show");
    if show {
        it.next();
    }
    let mut json = false;
    let mut ibstat = IbstatArgs::default();
    let mut ibstat_given: Option<String> = None;
    let mut serve_only: Option<String> = None;
    let mut help = false;
    let mut version = false;
    let mut only_positional = false;
    while let Some(a) = it.next() {
        if only_positional {
            positional(show, &mut ibstat, &a)?;
            ibstat_given.get_or_insert(a);
            continue;
        }
        match a.as_str() {
            "-h" | "--help" => help = true,
            "-V" | "--version" => version = true,
            "--session" => out.bus = Some(Bus::Session),
            "--system" => out.bus = Some(Bus::System),
            "--no-direct-socket" => out.direct_socket = Some(None),
            "--json" => json = true,
            "--" => only_positional = true,
            s if s.starts_with("--address=") => {
                let addr = &s["--address=".len()..];
                if addr.is_empty() {
                    return Err(usage("--address= needs a D-Bus address"));
                }
                out.bus = Some(Bus::Address(addr.to_string()));
            }
            s if s.starts_with("--direct-socket=") => {
                let path = &s["--direct-socket=".len()..];
                if !path.starts_with('/') {
                    return Err(usage(format!("{s}: expected an absolute path")));
                }
                out.direct_socket = Some(Some(path.to_string()));
            }
            s if is_sim_option(s) => sim_option(&mut out, s)?,
            s if s.starts_with("--tick-ms=") => {
                let ms: u64 = s["--tick-ms=".len()..]
                    .parse()
                    .map_err(|_| usage(format!("{s}: expected a number of milliseconds")))?;
                if ms == 0 {
                    return Err(usage(format!("{s}: the period must be at least 1 ms")));
                }
                out.tick_ms = Some(ms);
            }
            s if s.starts_with("--counters-max-age-ms=") => {
                let ms: u64 = s["--counters-max-age-ms=".len()..]
                    .parse()
                    .map_err(|_| usage(format!("{s}: expected a number of milliseconds")))?;
                out.counters_max_age_ms = Some(ms);
            }
            s => {
                let taken = ibstat
                    .option(s, || it.next())
                    .map_err(|e| usage(e.to_string()))?;
                if taken {
                    ibstat_given.get_or_insert_with(|| s.to_string());
                } else if s.starts_with('-') && s.len() > 1 {
                    return Err(usage(format!("unknown option {s}")));
                } else {
                    positional(show, &mut ibstat, s)?;
                    ibstat_given.get_or_insert_with(|| s.to_string());
                }
            }
        }
        if matches!(a.as_str(), "--session" | "--system") || a.starts_with("--address=") {
            serve_only.get_or_insert(a.clone());
        }
        if a.starts_with("--tick-ms=")
            || a.starts_with("--counters-max-age-ms=")
            || a.starts_with("--direct-socket=")
            || a == "--no-direct-socket"
        {
            serve_only.get_or_insert(a);
        }
    }
    out.command = if help {
        Command::Help
    } else if version {
        Command::Version
    } else if show {
        if let Some(opt) = &serve_only {
            return Err(usage(format!(
                "{opt} is for serving; `show` reads the host itself"
            )));
        }
        if let (true, Some(what)) = (json, &ibstat_given) {
            return Err(usage(format!(
                "--json prints the whole state: {what} is ibstat's, not for --json"
            )));
        }
        Command::Show { json, ibstat }
    } else {
        if json {
            return Err(usage("--json is an option of `show`"));
        }
        if let Some(what) = ibstat_given {
            return Err(usage(format!(
                "{what} is for `show` (rdma-managerd show {what} ...)"
            )));
        }
        Command::Serve
    };
    Ok(out)
}

/// `--simulate[=DIR]`, `--sim-host=SPEC` or `--sim-cost=PROFILE`.
fn is_sim_option(a: &str) -> bool {
    a == "--simulate"
        || ["--simulate=", "--sim-host=", "--sim-cost="]
            .iter()
            .any(|o| a.starts_with(o))
}

#[cfg(feature = "sim")]
fn sim_option(out: &mut Args, a: &str) -> Result<(), UsageError> {
    let sim = &mut out.sim;
    if a == "--simulate" {
        sim.simulate = Some(None);
    } else if let Some(dir) = a.strip_prefix("--simulate=") {
        if dir.is_empty() {
            return Err(usage("--simulate= needs a directory"));
        }
        sim.simulate = Some(Some(dir.to_string()));
    } else if let Some(profile) = a.strip_prefix("--sim-cost=") {
        let profile = crate::kernel::sim::cost::CostProfile::parse(profile)
            .map_err(|e| usage(e.to_string()))?;
        sim.cost = Some(profile);
        sim.simulate.get_or_insert(None);
    } else if let Some(spec) = a.strip_prefix("--sim-host=") {
        sim.host = Some(spec.to_string());
        sim.simulate.get_or_insert(None);
    }
    Ok(())
}

#[cfg(not(feature = "sim"))]
fn sim_option(_: &mut Args, a: &str) -> Result<(), UsageError> {
    let option = a.split_once('=').map_or(a, |(o, _)| o);
    Err(UsageError::NoSimulator(option.to_string()))
}

fn positional(show: bool, ibstat: &mut IbstatArgs, arg: &str) -> Result<(), UsageError> {
    if !show {
        return Err(usage(format!("unexpected argument {arg:?}")));
    }
    ibstat.positional(arg).map_err(|e| usage(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(a: &[&str]) -> Result<Args, UsageError> {
        parse(a.iter().map(|s| s.to_string()))
    }

    fn ibstat(a: &[&str]) -> IbstatArgs {
        match p(a).map(|a| a.command) {
            Ok(Command::Show {
                ibstat,
                json: false,
            }) => ibstat,
            other => panic!("{a:?}: {other:?}"),
        }
    }

    #[test]
    fn serve_and_show() {
        assert_eq!(p(&[]).map(|a| a.command), Ok(Command::Serve));
        let a = p(&["--session", "--tick-ms=10"]).expect("parses");
        assert_eq!((a.bus, a.tick_ms), (Some(Bus::Session), Some(10)));
        assert_eq!(p(&["--system"]).expect("parses").bus, Some(Bus::System));
        let a = p(&["show", "--json"]).expect("parses");
        assert!(matches!(a.command, Command::Show { json: true, .. }));
        assert!(p(&["--tick-ms=0"]).is_err());
        assert!(p(&["--tick-ms=x"]).is_err());
        let a = p(&["--counters-max-age-ms=0"]).expect("parses");
        assert_eq!(a.counters_max_age_ms, Some(0));
        assert!(p(&["--counters-max-age-ms=-1"]).is_err());
        assert!(p(&["show", "--counters-max-age-ms=5"]).is_err());
        assert!(p(&["--address="]).is_err());
        assert!(p(&["--bogus"]).is_err_and(|e| e.to_string() == "unknown option --bogus"));
        assert!(p(&["mlx4_1"]).is_err());
        assert!(p(&["--json"]).is_err());
        assert!(p(&["-l"]).is_err_and(|e| e.to_string().contains("for `show`")));
        assert!(p(&["show", "--session"]).is_err());
        assert!(p(&["show", "--tick-ms=5"]).is_err());
        assert!(p(&["show", "--json", "-l"]).is_err());
        assert!(p(&["show", "--json", "mlx4_1"]).is_err());
        assert_eq!(p(&["show", "-h"]).map(|a| a.command), Ok(Command::Help));
        assert_eq!(p(&["-V"]).map(|a| a.command), Ok(Command::Version));
    }

    #[cfg(feature = "sim")]
    #[test]
    fn the_simulated_hosts_options() {
        use crate::kernel::sim::cost::CostProfile;
        let a = p(&["show", "--simulate", "--json"]).expect("parses");
        assert!(matches!(a.command, Command::Show { json: true, .. }));
        assert_eq!(a.sim.simulate, Some(None));
        let a = p(&["--simulate=/tmp/x", "--sim-host=naming"]).expect("parses");
        assert_eq!(a.sim.simulate, Some(Some("/tmp/x".to_string())));
        assert_eq!(a.sim.host.as_deref(), Some("naming"));
        let a = p(&["--sim-cost=lab/20"]).expect("parses");
        assert_eq!(a.sim.simulate, Some(None), "--sim-cost implies --simulate");
        assert_eq!(a.sim.cost, Some(CostProfile::lab().divided_by(20.0)));
        assert!(p(&["--sim-cost=fast"]).is_err_and(|e| e.to_string().contains("expected off, lab")));
        assert!(p(&["--simulate="]).is_err_and(|e| e.to_string().contains("needs a directory")));
    }

    /// The packaged daemon has no simulated host: its options are refused as such, not as
    /// unknown ones.
    #[cfg(not(feature = "sim"))]
    #[test]
    fn a_build_without_the_simulator_says_so() {
        for (arg, option) in [
            ("--simulate", "--simulate"),
            ("--simulate=/tmp/x", "--simulate"),
            ("--sim-host=naming", "--sim-host"),
            ("--sim-cost=lab", "--sim-cost"),
        ] {
            for args in [vec![arg], vec!["show", arg]] {
                let e = p(&args).expect_err("refused");
                assert_eq!(e, UsageError::NoSimulator(option.to_string()), "{args:?}");
                assert!(e.to_string().contains("no simulated host"), "{e}");
            }
        }
    }

    #[test]
    fn the_direct_socket_is_the_system_buss_default_only() {
        let path = |a: &[&str]| p(a).expect("parses").direct_socket_path();
        let default = Some(rdma_manager_dbus::DIRECT_SOCKET_PATH.to_string());
        assert_eq!(path(&[]), default);
        assert_eq!(path(&["--system"]), default);
        assert_eq!(path(&["--session"]), None);
        assert_eq!(path(&["--address=unix:path=/x"]), None);
        assert_eq!(
            path(&["--address=unix:path=/x", "--direct-socket=/tmp/d"]),
            Some("/tmp/d".to_string())
        );
        assert_eq!(path(&["--no-direct-socket"]), None);
        assert!(p(&["--direct-socket="]).is_err_and(|e| e.to_string().contains("absolute path")));
        assert!(p(&["--direct-socket=run/x"]).is_err());
        assert!(p(&["show", "--no-direct-socket"])
            .is_err_and(|e| e.to_string().contains("for serving")));
    }

    #[test]
    fn show_takes_ibstats_options() {
        let a = ibstat(&["show", "-l"]);
        assert!(a.list_only);
        let a = ibstat(&["show", "mlx4_1", "-sp", "0x2"]);
        assert!(a.short && a.port_list);
        assert_eq!((a.device.as_deref(), a.dev_port()), (Some("mlx4_1"), 2));
        let a = ibstat(&["show", "--", "mlx4_1", "-1"]);
        assert_eq!(a.dev_port(), -1);
        assert!(p(&["show", "-d"]).is_err_and(|e| e.to_string().contains("libibumad")));
        assert!(p(&["show", "a", "1", "b"]).is_err());
        assert!(ibstat(&["show", "-z", "/etc/x.conf", "-v"]) == IbstatArgs::default());
    }

    #[test]
    fn every_listed_option_parses_and_is_in_the_usage() {
        for &o in OPTIONS.iter().chain(&IBSTAT_OPTIONS) {
            let arg = if o == "--sim-cost=" {
                format!("{o}lab")
            } else if o == "--direct-socket=" {
                format!("{o}/run/x")
            } else if o.ends_with('=') {
                format!("{o}1")
            } else {
                o.to_string()
            };
            // ibstat's options are taken after `show`.
            let parsed = p(&[&arg]).or_else(|_| p(&["show", &arg]));
            assert!(USAGE.contains(o.trim_end_matches('=')), "{o}");
            if cfg!(not(feature = "sim")) && is_sim_option(&arg) {
                assert!(
                    matches!(parsed, Err(UsageError::NoSimulator(_))),
                    "{o}: {parsed:?}"
                );
                continue;
            }
            assert!(parsed.is_ok(), "{o}: {parsed:?}");
        }
        for o in IBSTAT_VALUE_OPTIONS {
            assert!(p(&["show", o, "/x"]).is_ok(), "{o}");
            assert!(USAGE.contains(o), "{o}");
        }
    }
}
