//! rdma-tui's errors are messages that say what to do, never backtraces (whatever
//! RUST_BACKTRACE says), and wrong usage exits with status 2, the reason and where the usage is.

use std::process::{Command, Output};

fn rdma_tui(args: &[&str], system_bus: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rdma-tui"))
        .args(args)
        .env("DBUS_SYSTEM_BUS_ADDRESS", system_bus)
        .env("RUST_BACKTRACE", "1")
        .env("RUST_LIB_BACKTRACE", "1")
        .output()
        .expect("rdma-tui runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn no_bus_says_what_to_do_without_a_backtrace() {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let bus = format!("unix:path={}", dir.path().join("no-bus").display());
    for args in [
        &[][..],
        &["--json"],
        &["--ibstat", "nosuch"],
        &["--ibstat", "-l"],
    ] {
        let out = rdma_tui(args, &bus);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(
            err.contains("systemctl start rdma-managerd") && err.contains("--demo"),
            "{args:?}: {err}"
        );
        assert!(!err.to_lowercase().contains("backtrace"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
    }
}

#[test]
fn wrong_usage_exits_2_with_the_reason() {
    let cases: [(&[&str], &str); 4] = [
        (&["--bogus"], "unknown option --bogus"),
        (&["-l"], "-l is an option of --ibstat"),
        (&["--ibstat", "-d"], "libibumad"),
        (&["--ibstat", "a", "1", "x"], "\"x\""),
    ];
    for (args, reason) in cases {
        let out = rdma_tui(args, "unix:path=/nonexistent");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("Error: ") && err.contains(reason),
            "{args:?}: {err}"
        );
        // The reason and a one-line hint, not the whole usage.
        assert!(!err.contains("usage: rdma-tui"), "{args:?}: {err}");
        assert!(err.contains("rdma-tui --help"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 2, "{args:?}: {err}");
        assert!(!err.to_lowercase().contains("backtrace"), "{args:?}: {err}");
    }
}
