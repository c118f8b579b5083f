//! `health`: a node health check (CheckHealth) with NHC's conventions, so that it can be
//! Slurm's `HealthCheckProgram`: nothing but a summary when every expectation holds (exit 0),
//! one `ERROR:` line per failed expectation naming it otherwise (exit 11), as LBNL NHC prints
//! `ERROR:  nhc:  Health check failed:  check_hw_ib:  No IB port ...`.
//!
//! The expectations are a state document's health section (FILE), or the options turned into
//! one, or, with neither, none at all: the daemon then checks the health sections of its state
//! directory. The document is the daemon's to check, so a refusal names its own lines.

use rdma_manager_dbus::types::HealthCheck;
use rdma_manager_model::health::{CounterWindow, FlapWindow, Gbps, Health, PortExpectation};
use rdma_manager_model::state::{to_json, State};
use serde_json::json;
use zbus::Connection;

use crate::args::HealthArgs;
use crate::failure::{code, Failure};
use crate::output::{Format, Table};

/// The document sent: FILE as read, the options as a state document, or empty.
pub fn document(args: &HealthArgs) -> Result<String, Failure> {
    if let Some(file) = &args.file {
        return crate::state::read_document(file);
    }
    let health = from_options(args)?;
    if health.is_empty() {
        return Ok(String::new());
    }
    Ok(to_json(&State {
        health: Some(health),
        ..State::default()
    }))
}

/// The options as a health section (checked by the daemon, with the state's key paths).
pub fn from_options(args: &HealthArgs) -> Result<Health, Failure> {
    let values = PortExpectation {
        state: args.state.clone(),
        phys_state: args.phys_state.clone(),
        min_rate_gbps: args.min_rate.map(Gbps),
        link_layer: args.link_layer.clone(),
        mtu: args.mtu,
        ..PortExpectation::default()
    };
    let mut ports = Vec::new();
    for spec in &args.ports {
        let (device, port) = match spec.split_once('/') {
            Some((d, p)) => {
                let n = p.parse::<u32>().map_err(|_| {
                    Failure::usage(format!("--port {spec}: the port is not a number"))
                })?;
                (d.to_string(), Some(n))
            }
            None => (spec.clone(), None),
        };
        ports.push(PortExpectation {
            device: Some(device),
            port,
            ..values.clone()
        });
    }
    if ports.is_empty() && values.expects_values() {
        ports.push(values);
    }
    Ok(Health {
        ports: (!ports.is_empty()).then_some(ports),
        min_ports: args.min_ports,
        firmware_equal: args.firmware_equal.then_some(true),
        error_counters: args.counter_window.map(|w| CounterWindow {
            window_seconds: w,
            counters: None,
        }),
        flaps: match (args.max_flaps, args.flap_window) {
            (Some(max), Some(w)) => Some(FlapWindow {
                window_seconds: w,
                max,
            }),
            _ => None,
        },
    })
}

/// NHC's line for a failed expectation.
pub fn error_line(r: &HealthCheck) -> String {
    format!(
        "ERROR:  rdma-cli:  Health check failed:  {} {}:  {}",
        r.expectation, r.subject, r.message
    )
}

/// The verdicts as `format` prints them: the failed ones as NHC lines and a summary, terse
/// fields of every verdict, or a JSON object with every verdict.
pub fn render(rows: &[HealthCheck], format: Format) -> String {
    let failed = rows.iter().filter(|r| !r.passed).count();
    match format {
        Format::Json => {
            let checks: Vec<_> = rows
                .iter()
                .map(|r| {
                    json!({
                        "expectation": r.expectation,
                        "subject": r.subject,
                        "passed": r.passed,
                        "observed": r.observed,
                        "expected": r.expected,
                        "message": r.message,
                    })
                })
                .collect();
            let doc = json!({
                "healthy": failed == 0,
                "checked": rows.len(),
                "failed": failed,
                "checks": checks,
            });
            let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
            s.push('\n');
            s
        }
        Format::Terse => {
            let mut t = Table::new(&[
                "EXPECTATION",
                "SUBJECT",
                "PASSED",
                "OBSERVED",
                "EXPECTED",
                "MESSAGE",
            ]);
            for r in rows {
                t.push(vec![
                    r.expectation.clone(),
                    r.subject.clone(),
                    if r.passed { "yes" } else { "no" }.to_string(),
                    r.observed.clone(),
                    r.expected.clone(),
                    r.message.clone(),
                ]);
            }
            t.render(Format::Terse)
        }
        Format::Table => {
            let mut out: String = rows
                .iter()
                .filter(|r| !r.passed)
                .map(|r| error_line(r) + "\n")
                .collect();
            if failed == 0 {
                out.push_str(&format!("healthy: {} checks passed\n", rows.len()));
            }
            out
        }
    }
}

/// `health`: the check, printed; exit 11 when an expectation failed.
pub async fn check(conn: &Connection, args: &HealthArgs, format: Format) -> Result<u8, Failure> {
    let doc = document(args)?;
    let rows = crate::bus::manager(conn).await?.check_health(&doc).await?;
    print!("{}", render(&rows, format));
    Ok(if rows.iter().all(|r| r.passed) {
        code::SUCCESS
    } else {
        code::UNHEALTHY
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(passed: bool) -> HealthCheck {
        HealthCheck {
            expectation: "state".into(),
            subject: "mlx5_0/1".into(),
            passed,
            observed: "DOWN".into(),
            expected: "ACTIVE".into(),
            message: "mlx5_0/1 state is DOWN, expected ACTIVE".into(),
        }
    }

    #[test]
    fn a_failed_expectation_is_one_nhc_line() {
        assert_eq!(
            render(&[row(true), row(false)], Format::Table),
            "ERROR:  rdma-cli:  Health check failed:  state mlx5_0/1:  mlx5_0/1 state is \
             DOWN, expected ACTIVE\n"
        );
        assert_eq!(
            render(&[row(true)], Format::Table),
            "healthy: 1 checks passed\n"
        );
    }

    #[test]
    fn options_become_one_entry_per_port_or_one_for_all() {
        let args = HealthArgs {
            ports: vec!["mlx5_0/1".into(), "mlx5_1".into()],
            state: Some("ACTIVE".into()),
            min_rate: Some(100.0),
            ..HealthArgs::default()
        };
        let h = from_options(&args).expect("options");
        let ports = h.ports.unwrap_or_default();
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[0].device.as_deref(), Some("mlx5_0"));
        assert_eq!(ports[0].port, Some(1));
        assert_eq!(ports[1].port, None);
        assert_eq!(ports[1].min_rate_gbps, Some(Gbps(100.0)));
        let all = from_options(&HealthArgs {
            state: Some("ACTIVE".into()),
            ..HealthArgs::default()
        })
        .expect("options");
        assert_eq!(all.ports.map(|p| p[0].device.is_none()), Some(true));
        assert_eq!(document(&HealthArgs::default()).ok().as_deref(), Some(""));
        assert!(from_options(&HealthArgs {
            ports: vec!["mlx5_0/x".into()],
            ..HealthArgs::default()
        })
        .is_err());
    }
}
