//! When its bus goes away, the daemon says so once, in its own words, and exits with a
//! failure status (for systemd's Restart=on-failure): no zbus warnings, no second message,
//! no backtrace.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn bus_lost_is_one_message_and_a_failure() {
    let Ok(dbus) = which("dbus-daemon") else {
        assert!(
            std::env::var_os("RDMA_MANAGER_REQUIRE_TOOLS").is_none_or(|v| v != "1"),
            "no dbus-daemon, and RDMA_MANAGER_REQUIRE_TOOLS=1 forbids skipping"
        );
        eprintln!("skipping: no dbus-daemon (Debian package dbus-daemon)");
        return;
    };
    let dir = tempfile::tempdir().expect("a scratch directory");
    let address = format!("unix:path={}", dir.path().join("bus").display());
    let mut bus = Command::new(dbus)
        .args(["--session", "--nofork", &format!("--address={address}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("dbus-daemon starts");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !dir.path().join("bus").exists() {
        assert!(Instant::now() < deadline, "the bus did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_rdma-managerd"))
        .args([&format!("--address={address}"), "--simulate"])
        .env_remove("RUST_LOG")
        .env("RUST_BACKTRACE", "1")
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped())
        .spawn()
        .expect("rdma-managerd starts");
    let stderr = daemon.stderr.take().expect("piped stderr");
    let mut lines = BufReader::new(stderr).lines();
    // Serving: start-up is over (the bus name was owned before it).
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.expect("stderr is text");
        let serving = line.contains("serving; start-up is over");
        seen.push(line);
        if serving {
            break;
        }
    }
    assert!(
        seen.last().is_some_and(|l| l.contains("serving")),
        "{seen:?}"
    );
    bus.kill().expect("stop the bus");
    let _ = bus.wait();
    // The daemon must exit by itself, soon: before, it logged "Broken pipe" every second and
    // never did.
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = daemon.try_wait().expect("waiting for rdma-managerd") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = daemon.kill();
            panic!("rdma-managerd still runs 20 s after its bus went away");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let after: Vec<String> = lines.map_while(Result::ok).collect();
    assert_eq!(status.code(), Some(1), "{after:?}");
    assert_eq!(after.len(), 1, "one message: {after:?}");
    assert!(after[0].contains("cannot serve any longer"), "{after:?}");
    assert!(
        !after[0].contains("WARN") && !after[0].contains("zbus::"),
        "{after:?}"
    );
}

fn which(name: &str) -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        })
        .ok_or(())
}
