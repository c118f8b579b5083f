//! `rdma-managerd show` end to end on the simulated demo host.

use std::process::Command;

fn show(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rdma-managerd"))
        .arg("show")
        .args(args)
        .output()
        .expect("rdma-managerd runs")
}

#[test]
fn prints_ibstat_then_ipoib() {
    let out = show(&["--simulate"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("CA 'mlx4_1'\n\tCA type: MT4099\n\tNumber of ports: 2\n"),
        "{text}"
    );
    assert!(text.contains("\t\tBase lid: 2\n\t\tLMC: 1\n\t\tSM lid: 1\n"));
    assert!(text.contains("CA 'rxe0'"));
    assert!(text.contains("IPoIB interfaces:"));
    assert!(
        text.contains("ibp59s0f0.8002  ibp59s0f0       0x8002  datagram"),
        "{text}"
    );
}

#[test]
fn one_device_and_port_like_ibstat() {
    let out = show(&["--simulate", "mlx4_1", "2"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("CA: 'mlx4_1'\nPort 2:\n"), "{text}");
    assert!(text.contains("Link layer: Ethernet"));
    let out = show(&["--simulate", "nosuch"]);
    assert!(!out.status.success());
    // ibstat's own message for a device it does not list.
    assert!(String::from_utf8_lossy(&out.stderr).contains("'nosuch' IB device can't be found"));
}

/// The document of docs/JSON.md: the D-Bus model by object path and interface (the same as
/// `rdma-tui --json` prints: tests/tests/tui/json.rs).
#[test]
fn json_is_the_whole_state() {
    let out = show(&["--simulate", "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(v["version"], 1);
    let objects = &v["objects"];
    let root = &objects["/org/rdmamanager/RdmaManager1"]["org.rdmamanager.RdmaManager1"];
    assert_eq!(root["Devices"].as_array().map(|a| a.len()), Some(4));
    let ipoib = root["IpoibInterfaces"].as_array().expect("IpoibInterfaces");
    assert!(ipoib.iter().any(|p| {
        let path = p.as_str().unwrap_or_default();
        objects[path]["org.rdmamanager.RdmaManager1.Ipoib"]["Name"] == "ib0"
    }));
}

#[test]
fn bad_arguments_are_refused() {
    let out = show(&["--bogus"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown option --bogus"));
    // ibstat's -d has no equivalent: refused with the reason, nothing printed.
    let out = show(&["--simulate", "-d"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("libibumad"), "{err}");
    // The reason and a one-line hint, not the whole usage.
    assert!(!err.contains("usage: rdma-managerd"), "{err}");
    assert!(err.contains("rdma-managerd --help"), "{err}");
    assert_eq!(err.lines().count(), 2, "{err}");
    // ibstat ignores arguments after the port; they are refused here.
    let out = show(&["--simulate", "mlx4_1", "1", "extra"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"extra\""));
}

/// Every ibstat option through the real binary: `show ARGS` prints what the renderer
/// prints for the same arguments on the same (simulated demo) host, and fails exactly when
/// it fails. The renderer itself is compared with ibstat 44.0's own outputs in
/// `src/ibstat/tests.rs` (`every_option_matches_ibstat`).
#[tokio::test]
async fn every_ibstat_option_prints_what_ibstat_prints() {
    use rdma_managerd::ibstat::{run, IbstatArgs};
    use rdma_managerd::kernel::sim::{fixtures, SimHost};
    use rdma_managerd::kernel::Host;
    let host = SimHost::new(fixtures::demo_host()).expect("simulated demo host");
    let devices = host
        .read_devices()
        .await
        .expect("read the simulated devices");
    let cases: &[&[&str]] = &[
        &["-l"],
        &["-s"],
        &["-p"],
        &["--port_list"],
        &["-lp"],
        &["-l", "mlx4_1"],
        &["-p", "mlx4_1"],
        &["-s", "mlx4_1", "2"],
        &["mlx4_1", "--short"],
        &["mlx4_1", "0x2"],
        &["mlx4_1", "x"],
        &["--", "mlx4_1", "-1"],
        &["-v", "-z", "/nonexistent", "rxe0"],
        &["-p", "nosuch"],
        &["-l", "nosuch"],
    ];
    for case in cases {
        let mut expected_args = IbstatArgs::default();
        let mut it = case.iter().map(|s| s.to_string());
        let mut only_positional = false;
        while let Some(a) = it.next() {
            if a == "--" {
                only_positional = true;
            } else if only_positional
                || !expected_args
                    .option(&a, || it.next())
                    .expect("an ibstat option")
            {
                expected_args.positional(&a).expect("a device or port");
            }
        }
        let expected = run(&devices, &expected_args);
        let mut args = vec!["--simulate"];
        args.extend_from_slice(case);
        let out = show(&args);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            expected.stdout,
            "show {case:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            out.status.success(),
            expected.error.is_none(),
            "show {case:?}"
        );
        if let Some(e) = expected.error {
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains(&e.to_string()), "show {case:?}: {stderr}");
        }
    }
    // The options reach the renderer: -l is the names, -p the GUIDs, -s no port.
    let l = show(&["--simulate", "-l"]);
    assert_eq!(
        String::from_utf8_lossy(&l.stdout),
        "mlx4_1\nmlx5_0\nmlx5_1\nrxe0\n"
    );
    let s = String::from_utf8_lossy(&show(&["--simulate", "-s"]).stdout).into_owned();
    assert!(
        s.starts_with("CA 'mlx4_1'\n") && !s.contains("Port 1:"),
        "{s}"
    );
}

/// A user's mistake is a message, never a backtrace, whatever RUST_BACKTRACE says.
#[test]
fn errors_are_messages_without_backtraces() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rdma-managerd"))
            .args(args)
            .env("RUST_BACKTRACE", "1")
            .env("RUST_LIB_BACKTRACE", "1")
            .env("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/bus")
            .output()
            .expect("rdma-managerd runs")
    };
    for (args, code, reason) in [
        (
            &["show", "--simulate", "nosuch"][..],
            1,
            "'nosuch' IB device can't be found",
        ),
        (
            &["show", "--simulate", "mlx4_1", "3"],
            1,
            "has no port number 3",
        ),
        (&["--bogus"], 2, "unknown option --bogus"),
        (&["--tick-ms=0"], 2, "at least 1 ms"),
        (&["--address=unix:path=/nonexistent/bus"], 1, "no bus at"),
        (&[], 1, "rdma-managerd serves on the system bus"),
    ] {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(reason), "{args:?}: {err}");
        assert!(!err.to_lowercase().contains("backtrace"), "{args:?}: {err}");
    }
}

/// `--help` lists every option the parser takes.
#[test]
fn help_lists_every_option() {
    let out = Command::new(env!("CARGO_BIN_EXE_rdma-managerd"))
        .arg("--help")
        .output()
        .expect("rdma-managerd runs");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for o in rdma_managerd::cli::OPTIONS
        .iter()
        .chain(&rdma_managerd::cli::IBSTAT_VALUE_OPTIONS)
    {
        assert!(help.contains(o.trim_end_matches('=')), "--help lacks {o}");
    }
}

/// Without `--simulate`, `show` reads this host as it is: on a host without RDMA it prints
/// what ibstat prints there (nothing, status 0; ibstat's own message for a named device),
/// and `--json` a document without devices, never the simulated host. Where ibstat is
/// installed, every case is compared with it on this same host.
#[test]
fn a_host_without_rdma_shows_nothing_as_ibstat_does() {
    if std::path::Path::new("/sys/class/infiniband").exists() {
        // This machine has RDMA devices: the comparison with ibstat below still holds.
        eprintln!("this host has RDMA devices; comparing with ibstat only");
    } else {
        for args in [&[][..], &["-l"], &["-s"], &["-p"]] {
            let out = show(args);
            assert_eq!(out.status.code(), Some(0), "show {args:?}");
            assert!(out.stdout.is_empty(), "show {args:?}: {:?}", out.stdout);
            assert!(out.stderr.is_empty(), "show {args:?}: {:?}", out.stderr);
        }
        let out = show(&["mlx5_0"]);
        assert!(!out.status.success());
        assert!(out.stdout.is_empty());
        assert!(String::from_utf8_lossy(&out.stderr).contains("'mlx5_0' IB device can't be found"));
        let out = show(&["--json"]);
        assert!(out.status.success());
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
        let root = &v["objects"]["/org/rdmamanager/RdmaManager1"]["org.rdmamanager.RdmaManager1"];
        assert_eq!(root["Devices"], serde_json::json!([]), "{v}");
        assert_eq!(root["Simulated"], serde_json::json!(false), "{v}");
    }
    let Ok(probe) = Command::new("ibstat").arg("-l").output() else {
        eprintln!("ibstat is not installed: no comparison");
        return;
    };
    let _ = probe;
    for args in [&[][..], &["-l"], &["-s"], &["-p"]] {
        let ours = show(args);
        let theirs = Command::new("ibstat")
            .args(args)
            .output()
            .expect("ibstat runs");
        assert_eq!(
            ours.status.success(),
            theirs.status.success(),
            "show {args:?}"
        );
        if args.is_empty() {
            // `show` adds the IPoIB table after ibstat's output.
            assert!(ours.stdout.starts_with(&theirs.stdout), "show");
        } else {
            assert_eq!(ours.stdout, theirs.stdout, "show {args:?}");
        }
    }
}

/// `show | head`: output into a closed pipe ends the program by SIGPIPE, silently, as it
/// ends ibstat; not with "Error: Broken pipe".
#[test]
fn a_closed_pipe_ends_show_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_rdma-managerd"))
        .args(["show", "--simulate"])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("rdma-managerd runs");
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}", out.status);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
