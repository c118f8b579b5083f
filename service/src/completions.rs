//! rdma-managerd's shell completions (bash, zsh, fish), generated from its list of options
//! ([`crate::cli::OPTIONS`], ibstat's, taken after `show`, and ibping's, after `ibping`,
//! from [`crate::linktest::ibping::tool::OPTIONS`]), as rdma-cli's are from its
//! command: the files in `dist/completions/` are these texts, and a test says so. After
//! `show`, device names and ports come from `/sys/class/infiniband`, as ibstat reads them.
//!
//! Regenerate the committed files with
//! `RDMA_MANAGER_UPDATE_COMPLETIONS=1 cargo nextest run -p rdma-managerd -E 'test(completions)'`.

use std::fmt::Write as _;

use crate::cli::{IBSTAT_OPTIONS, IBSTAT_VALUE_OPTIONS, OPTIONS};
use crate::linktest::ibping::tool::OPTIONS as IBPING_OPTIONS;

/// A shell rdma-managerd has a completion for, and the file it is installed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

impl Shell {
    pub const ALL: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

    /// The file's name in `dist/completions/`.
    pub fn file_name(self) -> &'static str {
        match self {
            Shell::Bash => "rdma-managerd.bash",
            Shell::Zsh => "_rdma-managerd",
            Shell::Fish => "rdma-managerd.fish",
        }
    }
}

/// Options for serving only (refused after `show`).
const SERVE_ONLY: [&str; 7] = [
    "--system",
    "--session",
    "--address=",
    "--direct-socket=",
    "--no-direct-socket",
    "--tick-ms=",
    "--counters-max-age-ms=",
];

/// The words offered without a command: the commands, then the serving options.
fn serve_words() -> Vec<&'static str> {
    let mut words: Vec<&str> = OPTIONS.iter().copied().filter(|o| *o != "--json").collect();
    words.insert(1, "ibping");
    words
}

/// ibping's options that take a value in the next argument: all but `--serve`.
fn ibping_value_options() -> Vec<&'static str> {
    IBPING_OPTIONS
        .iter()
        .copied()
        .filter(|o| *o != "--serve")
        .collect()
}

/// The words offered after `show`: its options and ibstat's.
fn show_words() -> Vec<&'static str> {
    OPTIONS
        .iter()
        .copied()
        .filter(|o| *o != "show" && !SERVE_ONLY.contains(o))
        .chain(IBSTAT_OPTIONS)
        .chain(IBSTAT_VALUE_OPTIONS)
        .collect()
}

const HEADER: &str =
    "generated from rdma-managerd's options (service/src/completions.rs): do not edit";

/// The completion script for `shell`.
pub fn completion(shell: Shell) -> String {
    match shell {
        Shell::Bash => bash(),
        Shell::Zsh => zsh(),
        Shell::Fish => fish(),
    }
}

fn bash() -> String {
    let values = IBSTAT_VALUE_OPTIONS.join("|");
    format!(
        r#"# bash completion for rdma-managerd                               -*- shell-script -*-
# {HEADER}

_rdma_managerd()
{{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD - 1]}}
    local sysfs=${{RDMA_MANAGERD_SYSFS:-/sys/class/infiniband}}
    local i show=0 ibping=0
    for ((i = 1; i < COMP_CWORD; i++)); do
        [[ ${{COMP_WORDS[i]}} == show ]] && show=1
        [[ ${{COMP_WORDS[i]}} == ibping ]] && ibping=1
    done
    if [[ $ibping == 1 ]]; then
        case $prev in
            --umad) COMPREPLY=($(compgen -f -- "${{cur:-/dev/infiniband/umad}}")) ;;
            {ibping_values}) COMPREPLY=() ;;
            *) COMPREPLY=($(compgen -W "{ibping}" -- "$cur")) ;;
        esac
        return
    fi
    if [[ $show == 1 && ( $prev == @({values}) ) ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
        return
    fi
    if [[ $show == 1 && $cur != -* ]]; then
        # DEVICE, then PORT (a file after {values_words}).
        local positional=()
        for ((i = 1; i < COMP_CWORD; i++)); do
            case ${{COMP_WORDS[i]}} in
                show | -*) [[ ${{COMP_WORDS[i]}} == @({values}) ]] && ((i++)) ;;
                *) positional+=("${{COMP_WORDS[i]}}") ;;
            esac
        done
        local words=()
        case ${{#positional[@]}} in
            0) [[ -d $sysfs ]] && words=($(command ls "$sysfs" 2>/dev/null)) ;;
            1) [[ -d $sysfs/${{positional[0]}}/ports ]] &&
                words=($(command ls "$sysfs/${{positional[0]}}/ports" 2>/dev/null)) ;;
        esac
        COMPREPLY=($(compgen -W "${{words[*]}}" -- "$cur"))
        return
    fi
    local opts="{serve}"
    [[ $show == 1 ]] && opts="{show}"
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    [[ ${{COMPREPLY[*]}} == *= ]] && compopt -o nospace 2>/dev/null
}}
complete -F _rdma_managerd rdma-managerd
"#,
        values_words = IBSTAT_VALUE_OPTIONS.join("/"),
        serve = serve_words().join(" "),
        show = show_words().join(" "),
        ibping = IBPING_OPTIONS.join(" "),
        ibping_values = ibping_value_options().join(" | "),
    )
}

fn zsh() -> String {
    let quoted = |v: Vec<&str>| -> String {
        v.iter()
            .map(|w| format!("'{w}'"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    format!(
        r#"#compdef rdma-managerd
# {HEADER}

local sysfs=${{RDMA_MANAGERD_SYSFS:-/sys/class/infiniband}}
local -a opts
if (( ${{words[(I)ibping]}} )); then
    case ${{words[CURRENT-1]}} in
        --umad) _files; return ;;
        ({ibping_values}) return ;;
    esac
    opts=({ibping})
elif (( ${{words[(I)show]}} )); then
    if [[ ${{words[CURRENT-1]}} == ({values}) ]]; then
        _files
        return
    fi
    opts=({show})
    if [[ ${{words[CURRENT]}} != -* && -d $sysfs ]]; then
        opts+=(${{(f)"$(command ls $sysfs 2>/dev/null)"}})
    fi
else
    opts=({serve})
fi
compadd -S '' -- ${{(M)opts:#*=}}
compadd -- ${{opts:#*=}}
"#,
        values = IBSTAT_VALUE_OPTIONS.join("|"),
        show = quoted(show_words()),
        serve = quoted(serve_words()),
        ibping = quoted(IBPING_OPTIONS.to_vec()),
        ibping_values = ibping_value_options().join("|"),
    )
}

fn fish() -> String {
    let mut out = format!(
        "# fish completion for rdma-managerd\n# {HEADER}\n\ncomplete -c rdma-managerd -f\n\
         complete -c rdma-managerd -n '__fish_use_subcommand' -a show -d 'print the host as ibstat does'\n\
         complete -c rdma-managerd -n '__fish_seen_subcommand_from show' -a '(command ls /sys/class/infiniband 2>/dev/null)'\n\
         complete -c rdma-managerd -n '__fish_use_subcommand' -a ibping -d \"infiniband-diags' ibping on a port's umad device\"\n"
    );
    // `value`: the option takes one (`-r`), in the same argument (`=`) or the next.
    let line = |out: &mut String, cond: &str, o: &str, value: bool| {
        let (flag, name) = match o.strip_prefix("--") {
            Some(long) => ("-l", long.trim_end_matches('=')),
            None => ("-s", o.trim_start_matches('-')),
        };
        let _ = writeln!(
            out,
            "complete -c rdma-managerd -n '{cond}' {flag} {name}{}",
            if value { " -r" } else { "" }
        );
    };
    for o in serve_words()
        .into_iter()
        .filter(|o| *o != "show" && *o != "ibping")
    {
        let value = o.ends_with('=');
        line(
            &mut out,
            "not __fish_seen_subcommand_from show ibping",
            o,
            value,
        );
    }
    for o in show_words() {
        let value = o.ends_with('=') || IBSTAT_VALUE_OPTIONS.contains(&o);
        line(&mut out, "__fish_seen_subcommand_from show", o, value);
    }
    let ibping_values = ibping_value_options();
    for o in IBPING_OPTIONS {
        let value = ibping_values.contains(&o);
        line(&mut out, "__fish_seen_subcommand_from ibping", o, value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn committed(shell: Shell) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../dist/completions")
            .join(shell.file_name())
    }

    /// The committed files are what this module generates (as rdma-cli's are what clap
    /// generates).
    #[test]
    fn completions_committed_are_what_is_generated() {
        for shell in Shell::ALL {
            let path = committed(shell);
            let text = completion(shell);
            if std::env::var_os("RDMA_MANAGER_UPDATE_COMPLETIONS").is_some() {
                std::fs::write(&path, &text).expect("write the completion");
            }
            let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                on_disk == text,
                "{} is not what rdma-managerd generates: run \
                 RDMA_MANAGER_UPDATE_COMPLETIONS=1 cargo nextest run -p rdma-managerd -E \
                 'test(completions)'",
                path.display()
            );
        }
    }

    /// Every option is offered by each shell, serving or after `show`.
    #[test]
    fn completions_offer_every_option() {
        for shell in Shell::ALL {
            let text = completion(shell);
            for o in OPTIONS
                .iter()
                .chain(&IBSTAT_OPTIONS)
                .chain(&IBSTAT_VALUE_OPTIONS)
                .chain(&IBPING_OPTIONS)
                .chain(&["ibping"])
            {
                let name = o.trim_end_matches('=');
                let fish = match name.strip_prefix("--") {
                    Some(l) => format!("-l {l}"),
                    None => format!("-s {}", name.trim_start_matches('-')),
                };
                assert!(
                    text.contains(name) || text.contains(&fish),
                    "{shell:?} lacks {o}"
                );
            }
        }
    }

    /// bash, run as it completes a command line: options without `show`, show's and ibstat's
    /// after it, then devices and ports from the (here fake) sysfs.
    #[test]
    fn completions_in_bash_offer_options_devices_and_ports() {
        if std::process::Command::new("bash")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!("no bash: skipped");
            return;
        }
        let sysfs = tempfile::tempdir().expect("tempdir");
        for (dev, ports) in [("mlx5_0", &["1"][..]), ("mlx4_1", &["1", "2"][..])] {
            for p in ports {
                std::fs::create_dir_all(sysfs.path().join(dev).join("ports").join(p))
                    .expect("fake sysfs");
            }
        }
        let script = committed(Shell::Bash);
        let complete = |words: &[&str]| -> Vec<String> {
            let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
            let program = format!(
                "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; _rdma_managerd; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                script.display(),
                quoted.join(" "),
                words.len() - 1
            );
            let out = std::process::Command::new("bash")
                .args(["--norc", "-c", &program])
                .env("RDMA_MANAGERD_SYSFS", sysfs.path())
                .output()
                .expect("bash runs");
            let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect();
            v.sort();
            v
        };
        assert_eq!(complete(&["rdma-managerd", "--ti"]), ["--tick-ms="]);
        assert_eq!(complete(&["rdma-managerd", "sh"]), ["show"]);
        assert_eq!(complete(&["rdma-managerd", "ib"]), ["ibping"]);
        assert_eq!(
            complete(&["rdma-managerd", "ibping", "--"]),
            [
                "--fd",
                "--host",
                "--interval-ms",
                "--serve",
                "--timeout-ms",
                "--umad"
            ]
        );
        assert!(
            complete(&["rdma-managerd", "ibping", "-c", ""]).is_empty(),
            "a count is typed"
        );
        assert!(
            !complete(&["rdma-managerd", "ibping", "-"]).contains(&"--tick-ms=".to_string()),
            "serving options are not ibping's"
        );
        assert!(
            complete(&["rdma-managerd", "--j"]).is_empty(),
            "--json is show's"
        );
        assert_eq!(complete(&["rdma-managerd", "show", "--j"]), ["--json"]);
        assert!(complete(&["rdma-managerd", "show", "-"]).contains(&"-l".to_string()));
        assert!(!complete(&["rdma-managerd", "show", "-"]).contains(&"--tick-ms=".to_string()));
        assert_eq!(
            complete(&["rdma-managerd", "show", ""]),
            ["mlx4_1", "mlx5_0"]
        );
        assert_eq!(
            complete(&["rdma-managerd", "show", "mlx4_1", ""]),
            ["1", "2"]
        );
        assert_eq!(
            complete(&["rdma-managerd", "show", "-z", "/x.conf", "-s", "mlx4_1", ""]),
            ["1", "2"]
        );
    }
}
