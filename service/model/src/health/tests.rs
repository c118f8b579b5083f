use std::collections::BTreeMap;

use super::*;
use crate::state::{parse, StateError};

fn health(doc: &str) -> Health {
    parse(doc)
        .unwrap_or_else(|e| panic!("{e}"))
        .health
        .unwrap_or_default()
}

fn refused(doc: &str) -> StateError {
    match parse(doc) {
        Ok(s) => panic!("accepted: {s:?}"),
        Err(e) => e,
    }
}

fn port(device: &str, n: u32, state: &str, rate: f64) -> PortFacts {
    PortFacts {
        device: device.into(),
        port: n,
        state: Some(state.into()),
        phys_state: Some(
            if state == "ACTIVE" {
                "LinkUp"
            } else {
                "Disabled"
            }
            .into(),
        ),
        rate_gbps: Some(rate),
        link_layer: Some("InfiniBand".into()),
        mtu: Some((2044, "IPoIB interface ib0".into())),
        flaps: Some(0),
        counters: None,
    }
}

fn facts() -> HostFacts {
    HostFacts {
        devices: vec![
            DeviceFacts {
                name: "mlx5_0".into(),
                hardware: true,
                fw_version: "20.31.1014".into(),
                board_id: "MT_0000000223".into(),
                hca_type: "MT4123".into(),
            },
            DeviceFacts {
                name: "mlx5_1".into(),
                hardware: true,
                fw_version: "20.31.1014".into(),
                board_id: "MT_0000000223".into(),
                hca_type: "MT4123".into(),
            },
        ],
        ports: vec![
            port("mlx5_0", 1, "ACTIVE", 200.0),
            port("mlx5_1", 1, "ACTIVE", 100.0),
        ],
    }
}

fn failed(v: &[Verdict]) -> Vec<(String, String)> {
    v.iter()
        .filter(|v| !v.passed)
        .map(|v| (v.expectation.clone(), v.subject.clone()))
        .collect()
}

const PORTS_ACTIVE: &str = "
health:
  ports:
    - state: ACTIVE
      phys-state: LinkUp
      min-rate-gbps: 100
      link-layer: InfiniBand
      mtu: 2044
  min-ports: 2
  firmware-equal: true
";

#[test]
fn a_healthy_host_passes_every_expectation() {
    let v = evaluate(&health(PORTS_ACTIVE), &facts());
    assert!(failed(&v).is_empty(), "{v:#?}");
    // Five values of two ports, the count and one board.
    assert_eq!(v.len(), 12, "{v:#?}");
}

#[test]
fn each_failed_expectation_names_its_key_and_port() {
    let mut f = facts();
    f.ports[1] = port("mlx5_1", 1, "DOWN", 25.0);
    f.devices[1].fw_version = "20.28.2006".into();
    let v = evaluate(&health(PORTS_ACTIVE), &f);
    assert_eq!(
        failed(&v),
        [
            ("state".into(), "mlx5_1/1".into()),
            ("phys-state".into(), "mlx5_1/1".into()),
            ("min-rate-gbps".into(), "mlx5_1/1".into()),
            ("firmware-equal".into(), "board MT_0000000223".into()),
        ]
    );
    let state = v.iter().find(|v| v.expectation == "state" && !v.passed);
    assert_eq!(
        state.map(|v| v.message.as_str()),
        Some("mlx5_1/1 state is DOWN, expected ACTIVE")
    );
}

#[test]
fn a_named_port_the_host_lacks_fails_present() {
    let h = health("health:\n  ports:\n    - device: mlx5_7\n      port: 1\n      state: ACTIVE\n");
    let v = evaluate(&h, &facts());
    assert_eq!(failed(&v), [("present".into(), "mlx5_7/1".into())]);
    assert_eq!(v[0].message, "no port mlx5_7/1");
}

#[test]
fn rising_error_counters_and_flaps_fail() {
    let h = health(
        "health:\n  error-counters:\n    window-seconds: 2\n  flaps:\n    window-seconds: 600\n    max: 2\n",
    );
    let mut f = facts();
    let mut rising = BTreeMap::new();
    rising.insert("symbol_error".to_string(), (3, 9));
    rising.insert("link_downed".to_string(), (1, 1));
    f.ports[0].counters = Some(Ok(rising));
    f.ports[1].counters = Some(Ok(BTreeMap::new()));
    f.ports[1].flaps = Some(3);
    let v = evaluate(&h, &f);
    assert_eq!(
        failed(&v),
        [
            ("error-counters".into(), "mlx5_0/1".into()),
            ("flaps".into(), "mlx5_1/1".into()),
        ]
    );
    assert_eq!(v[0].observed, "symbol_error +6");
}

#[test]
fn bad_expectations_are_refused_with_their_key_path() {
    for (doc, path) in [
        (
            "health:\n  ports:\n    - min-rate-gbps: -5\n",
            "health.ports[0].min-rate-gbps",
        ),
        (
            "health:\n  ports:\n    - device: mlx5_0\n      port: 0\n",
            "health.ports[0].port",
        ),
        (
            "health:\n  ports:\n    - state: UP\n",
            "health.ports[0].state",
        ),
        ("health:\n  portz: []\n", "health.portz"),
        (
            "health:\n  error-counters:\n    window-seconds: 600\n",
            "health.error-counters.window-seconds",
        ),
        (
            "health:\n  flaps:\n    window-seconds: 60\n    max: 64\n",
            "health.flaps.max",
        ),
        ("health:\n  ports:\n    - port: 1\n", "health.ports[0].port"),
    ] {
        let e = refused(doc);
        assert_eq!(e.path(), path, "{doc}: {e}");
        assert!(e.line().is_some(), "{doc}: {e}");
    }
}

#[test]
fn the_health_section_changes_nothing_when_applied() {
    let s = parse(PORTS_ACTIVE).unwrap_or_else(|e| panic!("{e}"));
    let changes = crate::state::diff(&crate::state::State::default(), &s);
    assert_eq!(changes.map(|c| c.len()), Ok(0));
}
