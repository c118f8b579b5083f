//! ibstat's command line: the options and arguments of ibstat 44.0 (`main` in ibstat.c, the
//! common options of `ibdiag_process_opts` in ibdiag_common.c), taken by both programs that
//! print ibstat's output (`rdma-tui --ibstat ...`, `rdma-managerd show ...`) amid their own.
//!
//! ibstat 44.0 takes `-l`/`--list_of_cas`, `-s`/`--short`, `-p`/`--port_list`,
//! `-z`/`--config FILE`, `-v`/`--verbose`, `-d`/`--debug`, `-h`/`--help`, `-V`/`--version`,
//! then `[DEVICE [PORT]]`. Here:
//! - `-l`, `-s`, `-p` print what ibstat prints, alone, combined (`-lp`) and with a device.
//! - `-v` and `-z FILE` are taken and change nothing, as in ibstat: its verbosity only
//!   concerns MAD calls, which ibstat makes none of, and its config file only sets defaults
//!   for options ibstat does not take (CA, port, timeout, M_Key).
//! - `-d` is refused with the reason: it turns on libibumad's trace of its own sysfs reads,
//!   and nothing here reads through libibumad, so there is no trace to give.
//! - `-h` and `-V` stay the program's own help and version (they are not ibstat's).
//! - The port is read as ibstat reads it, `strtol(PORT, NULL, 0)`: `0x2` is 2, `2abc` is 2,
//!   `abc` is 0, a negative port means none. Arguments after the port, which ibstat ignores,
//!   are refused: a script that passes them expects something ibstat does not do.
//! - GNU getopt's abbreviations of long options (`--list` for `--list_of_cas`) are not
//!   taken: they would be ambiguous among the programs' own options (`--s...`).

use super::clib;

/// ibstat's options both programs take, as their `--help`, man pages and completions must
/// list them; `-z`/`--config` take a value in the next argument ([`VALUE_OPTIONS`]).
pub const OPTIONS: [&str; 8] = [
    "-l",
    "--list_of_cas",
    "-s",
    "--short",
    "-p",
    "--port_list",
    "-v",
    "--verbose",
];

/// ibstat's options that take a value in the next argument.
pub const VALUE_OPTIONS: [&str; 2] = ["-z", "--config"];

/// What both programs' `--help` says of ibstat's options, after a heading of their own (a
/// literal, for `concat!`).
#[macro_export]
macro_rules! ibstat_options_help {
    () => {
        "  -l, --list_of_cas    the device names only
  -s, --short          the device headers only
  -p, --port_list      the port GUIDs only
  -v, --verbose        taken, changes nothing (as in ibstat)
  -z, --config FILE    taken, changes nothing (ibstat's config sets nothing it uses)
  DEVICE [PORT]        one device, or one port of it (PORT read as C's strtol does)
  ibstat's -d (libibumad's debug trace) is refused: nothing here reads through libibumad."
    };
}

/// What ibstat was asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IbstatArgs {
    /// `-l`: the device names only.
    pub list_only: bool,
    /// `-s`: the device headers only.
    pub short: bool,
    /// `-p`: the port GUIDs only (before `-l` and `-s`, as in ibstat).
    pub port_list: bool,
    /// The device to print, by its exact name.
    pub device: Option<String>,
    /// The port argument as given (read with [`IbstatArgs::dev_port`]).
    pub port: Option<String>,
}

/// An ibstat argument that is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IbstatArgError {
    #[error(
        "{0}: ibstat's -d/--debug turns on libibumad's trace of its own sysfs reads; this \
         output is rendered from rdma-managerd's state, not read through libibumad, so there \
         is no such trace: leave {0} out"
    )]
    Debug(String),
    #[error("{0} needs a file name (ibstat's config file)")]
    MissingValue(String),
    #[error(
        "unexpected argument {0:?}: ibstat takes a device and a port (and ignores what \
         follows, which is refused here)"
    )]
    Extra(String),
}

/// ibstat's own short options (`-z` takes a value).
const SHORT: &[u8] = b"lspvdz";

impl IbstatArgs {
    /// Whether anything beyond a plain `ibstat` was asked for.
    pub fn has_options(&self) -> bool {
        self.list_only || self.short || self.port_list
    }

    /// Takes `arg` when it is one of ibstat's options (`-z FILE` takes its value from
    /// `next`): `Ok(true)` when taken, `Ok(false)` when `arg` is not ibstat's (nothing is
    /// recorded then), an error for `-d` or a `-z` without its file.
    pub fn option(
        &mut self,
        arg: &str,
        next: impl FnOnce() -> Option<String>,
    ) -> Result<bool, IbstatArgError> {
        if let Some(long) = arg.strip_prefix("--") {
            match long {
                "list_of_cas" => self.list_only = true,
                "short" => self.short = true,
                "port_list" => self.port_list = true,
                "verbose" => {}
                "debug" => return Err(IbstatArgError::Debug(arg.to_string())),
                "config" => {
                    next().ok_or_else(|| IbstatArgError::MissingValue(arg.to_string()))?;
                }
                s if s.starts_with("config=") => {}
                _ => return Ok(false),
            }
            return Ok(true);
        }
        let Some(cluster) = arg.strip_prefix('-') else {
            return Ok(false);
        };
        // A cluster of short options (`-lp`), `-z` taking the rest of it or the next
        // argument as its value. Anything else in it makes it not ibstat's.
        let bytes = cluster.as_bytes();
        let options_end = bytes
            .iter()
            .position(|&b| b == b'z')
            .map_or(bytes.len(), |z| z + 1);
        if bytes.is_empty() || !bytes[..options_end].iter().all(|b| SHORT.contains(b)) {
            return Ok(false);
        }
        let mut taken = self.clone();
        for &b in &bytes[..options_end] {
            match b {
                b'l' => taken.list_only = true,
                b's' => taken.short = true,
                b'p' => taken.port_list = true,
                b'd' => return Err(IbstatArgError::Debug(arg.to_string())),
                // -v; -z is last (its value follows).
                _ => {}
            }
        }
        // -z: its value is the rest of the cluster, else the next argument.
        if bytes.last() == Some(&b'z') && options_end == bytes.len() {
            next().ok_or_else(|| IbstatArgError::MissingValue(arg.to_string()))?;
        }
        *self = taken;
        Ok(true)
    }

    /// A positional argument: the device, then the port.
    pub fn positional(&mut self, arg: &str) -> Result<(), IbstatArgError> {
        if self.device.is_none() {
            self.device = Some(arg.to_string());
        } else if self.port.is_none() {
            self.port = Some(arg.to_string());
        } else {
            return Err(IbstatArgError::Extra(arg.to_string()));
        }
        Ok(())
    }

    /// The arguments as a command line that [`IbstatArgs::from_argv`] reads back to the same
    /// value (the options, `--`, then DEVICE and PORT as given): how they travel to the
    /// daemon's `Direct.GetIbstat`.
    pub fn to_argv(&self) -> Vec<String> {
        let flags = [
            (self.list_only, "-l"),
            (self.short, "-s"),
            (self.port_list, "-p"),
        ];
        let mut argv: Vec<String> = flags
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, flag)| flag.to_string())
            .collect();
        argv.push("--".to_string());
        argv.extend(self.device.iter().chain(self.port.iter()).cloned());
        argv
    }

    /// ibstat's options and then DEVICE and PORT; after `--` every argument is positional,
    /// before it an argument that starts with `-` and is not ibstat's is refused.
    pub fn from_argv(argv: &[String]) -> Result<IbstatArgs, IbstatArgError> {
        let mut out = IbstatArgs::default();
        let mut it = argv.iter();
        let mut positional_only = false;
        while let Some(arg) = it.next() {
            if !positional_only {
                if arg == "--" {
                    positional_only = true;
                    continue;
                }
                if out.option(arg, || it.next().cloned())? {
                    continue;
                }
                if arg.starts_with('-') && arg.len() > 1 {
                    return Err(IbstatArgError::Extra(arg.clone()));
                }
            }
            out.positional(arg)?;
        }
        Ok(out)
    }

    /// ibstat's `dev_port`: `strtol(PORT, NULL, 0)` into an `int`, -1 without a port (and a
    /// negative port means none, as in ibstat's `portnum >= 0` test).
    pub fn dev_port(&self) -> i32 {
        self.port.as_deref().map_or(-1, clib::strtol_int)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<IbstatArgs, String> {
        let mut out = IbstatArgs::default();
        let mut it = args.iter().map(|s| s.to_string());
        while let Some(a) = it.next() {
            let taken = out.option(&a, || it.next()).map_err(|e| e.to_string())?;
            if !taken {
                if a.starts_with('-') {
                    return Err(format!("not ibstat's: {a}"));
                }
                out.positional(&a).map_err(|e| e.to_string())?;
            }
        }
        Ok(out)
    }

    #[test]
    fn options_alone_combined_and_long() {
        let a = parse(&["-l"]).expect("-l");
        assert!(a.list_only && !a.short && !a.port_list);
        let a = parse(&["-lsp"]).expect("-lsp");
        assert!(a.list_only && a.short && a.port_list);
        let a = parse(&["--list_of_cas", "--short", "--port_list"]).expect("long");
        assert!(a.list_only && a.short && a.port_list);
        let a = parse(&["mlx4_1", "-s", "2"]).expect("after the device");
        assert_eq!(
            (a.device.as_deref(), a.port.as_deref(), a.short),
            (Some("mlx4_1"), Some("2"), true)
        );
        assert_eq!(parse(&["-v", "--verbose"]), Ok(IbstatArgs::default()));
        assert_eq!(
            parse(&[
                "-z",
                "/x",
                "-z/y",
                "-vz",
                "/z",
                "--config",
                "/a",
                "--config=/b"
            ]),
            Ok(IbstatArgs::default())
        );
    }

    #[test]
    fn refused_and_not_ibstats() {
        assert!(parse(&["-d"]).is_err_and(|e| e.contains("libibumad")));
        assert!(parse(&["--debug"]).is_err());
        assert!(parse(&["-ld"]).is_err());
        assert!(parse(&["-z"]).is_err_and(|e| e.contains("needs a file")));
        assert!(parse(&["--config"]).is_err());
        assert!(parse(&["a", "1", "x"]).is_err_and(|e| e.contains("\"x\"")));
        for other in ["-h", "-V", "-lh", "--help", "--list", "-", "--json"] {
            let mut a = IbstatArgs::default();
            assert_eq!(a.option(other, || None), Ok(false), "{other}");
            assert_eq!(a, IbstatArgs::default(), "{other} recorded nothing");
        }
    }

    #[test]
    fn the_command_line_form_reads_back_to_the_same_arguments() {
        let cases = [
            IbstatArgs::default(),
            IbstatArgs {
                list_only: true,
                short: true,
                port_list: true,
                ..IbstatArgs::default()
            },
            IbstatArgs {
                short: true,
                device: Some("mlx5_0".into()),
                port: Some("0x2".into()),
                ..IbstatArgs::default()
            },
            // A device and a port that look like options, and an empty port (strtol: 0).
            IbstatArgs {
                device: Some("-l".into()),
                port: Some("-1".into()),
                ..IbstatArgs::default()
            },
            IbstatArgs {
                device: Some("rxe0".into()),
                port: Some(String::new()),
                ..IbstatArgs::default()
            },
        ];
        for args in cases {
            assert_eq!(
                IbstatArgs::from_argv(&args.to_argv()),
                Ok(args.clone()),
                "{args:?}"
            );
        }
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            IbstatArgs::from_argv(&argv(&["--json"])),
            Err(IbstatArgError::Extra("--json".into()))
        );
        assert!(IbstatArgs::from_argv(&argv(&["-d"])).is_err());
        assert!(IbstatArgs::from_argv(&argv(&["--", "a", "1", "x"])).is_err());
    }

    #[test]
    fn port_is_read_with_strtol() {
        let port = |p: Option<&str>| IbstatArgs {
            port: p.map(str::to_string),
            ..IbstatArgs::default()
        };
        assert_eq!(port(None).dev_port(), -1);
        assert_eq!(port(Some("2")).dev_port(), 2);
        assert_eq!(port(Some("0x2")).dev_port(), 2);
        assert_eq!(port(Some("2abc")).dev_port(), 2);
        assert_eq!(port(Some("abc")).dev_port(), 0);
        assert_eq!(port(Some("-1")).dev_port(), -1);
    }
}
