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
    assert!(text.contains("\t\tBase lid: 2\n\t\tLMC: 1\n\t\tSM lid: 2\n"));
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

#[test]
fn json_is_the_whole_state() {
    let out = show(&["--simulate", "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(v["devices"].as_array().map(|a| a.len()), Some(4));
    assert!(v["netdevs"]
        .as_array()
        .is_some_and(|a| a.iter().any(|n| n["name"] == "ib0")));
}

#[test]
fn bad_arguments_are_refused() {
    let out = show(&["--bogus"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown option --bogus"));
    let out = show(&["--simulate", "mlx4_1", "x"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("port \"x\" is not a number"));
}
