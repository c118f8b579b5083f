//! Command-line arguments.

use anyhow::{bail, Context};

use crate::client::BusChoice;

pub const USAGE: &str =
    "usage: rdma-tui [--system | --session | --address=ADDRESS | --demo] [--no-mouse]
       rdma-tui [BUS] --ibstat [DEVICE [PORT]]
       rdma-tui [BUS] --json

  (no option)     the interactive editor and monitor of rdma-managerd on the system bus
  --demo          start a simulated rdma-managerd on a private bus and show it (no RDMA
                  hardware or root needed; every change works on the simulated host)
  --system        rdma-managerd on the system bus (the default)
  --session       rdma-managerd on the session bus (rdma-managerd --session --simulate)
  --address=ADDR  rdma-managerd on the bus at ADDR
  --no-mouse      leave the mouse to the terminal (select and paste text)
  --ibstat        print what rdma-core's ibstat prints for the service's state, and exit
  --json          print the service's whole state as JSON, and exit
  -h, --help      this text
  -V, --version   the version

Keys: Tab/Shift-Tab or 1..8 pages, arrows move, Enter acts, Esc back, ? help, q quit.
NO_COLOR=1 draws without colour.";

/// Every option [`parse`] accepts, as documentation and completions must list them.
pub const OPTIONS: [&str; 11] = [
    "--demo",
    "--system",
    "--session",
    "--address=",
    "--no-mouse",
    "--ibstat",
    "--json",
    "-h",
    "--help",
    "-V",
    "--version",
];

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Interactive,
    Ibstat {
        device: Option<String>,
        port: Option<u32>,
    },
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
}

pub fn parse<I: IntoIterator<Item = String>>(args: I) -> anyhow::Result<Args> {
    let mut out = Args {
        mode: Mode::Interactive,
        bus: BusChoice::System,
        demo: false,
        mouse: true,
    };
    let mut positional = Vec::new();
    for a in args {
        match a.as_str() {
            "-h" | "--help" => out.mode = Mode::Help,
            "-V" | "--version" => out.mode = Mode::Version,
            "--demo" => out.demo = true,
            "--system" => out.bus = BusChoice::System,
            "--session" => out.bus = BusChoice::Session,
            "--no-mouse" => out.mouse = false,
            "--json" => out.mode = Mode::Json,
            "--ibstat" => {
                out.mode = Mode::Ibstat {
                    device: None,
                    port: None,
                }
            }
            s if s.starts_with("--address=") => {
                let addr = &s["--address=".len()..];
                if addr.is_empty() {
                    bail!("--address= needs a D-Bus address");
                }
                out.bus = BusChoice::Address(addr.to_string());
            }
            s if s.starts_with('-') => bail!("unknown option {s}\n{USAGE}"),
            s => positional.push(s.to_string()),
        }
    }
    match (&mut out.mode, positional.as_slice()) {
        (_, []) => {}
        (Mode::Ibstat { device, port }, [d, rest @ ..]) if rest.len() <= 1 => {
            *device = Some(d.clone());
            if let Some(p) = rest.first() {
                *port = Some(
                    p.parse()
                        .with_context(|| format!("port {p:?} is not a number"))?,
                );
            }
        }
        (_, extra) => bail!("unexpected argument {:?}\n{USAGE}", extra.join(" ")),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(a: &[&str]) -> anyhow::Result<Args> {
        parse(a.iter().map(|s| s.to_string()))
    }

    #[test]
    fn modes() {
        assert_eq!(p(&[]).map(|a| a.mode).ok(), Some(Mode::Interactive));
        let a = p(&["--ibstat", "rxe0", "1", "--session"]).expect("parses");
        assert_eq!(
            a.mode,
            Mode::Ibstat {
                device: Some("rxe0".into()),
                port: Some(1)
            }
        );
        assert_eq!(a.bus, BusChoice::Session);
        assert!(p(&["--ibstat", "rxe0", "x"]).is_err());
        assert!(p(&["rxe0"]).is_err());
        assert!(p(&["--bogus"]).is_err());
        assert!(p(&["--address="]).is_err());
        assert!(p(&["--demo"]).expect("parses").demo);
    }

    #[test]
    fn every_listed_option_parses_and_is_in_the_usage() {
        for o in OPTIONS {
            let arg = if o.ends_with('=') {
                format!("{o}unix:path=/x")
            } else {
                o.to_string()
            };
            assert!(p(&[&arg]).is_ok(), "{o}");
            assert!(USAGE.contains(o.trim_end_matches('=')), "{o}");
        }
    }
}
