//! `rdma-cli test-link` and `rdma-cli responder`: a link test from a port, printed as
//! `KEY: value` lines (nmcli's `-f all` form), one `-t` line of fields, or `-j` the result's
//! JSON object; the exit code says whether it passed (rdma-cli(1), "EXIT STATUS").

use std::io::IsTerminal;

use futures::{FutureExt, StreamExt};
use rdma_manager_dbus::types::{LinkResponder, LinkTestResult};
use rdma_manager_model::linktest::{Stage, DEFAULT_TIMEOUT_S};
use zbus::Connection;

use crate::args::{ResponderAction, TestKind};
use crate::bus::{self, Objects};
use crate::failure::{code, Failure};
use crate::output::{Format, Table};

/// What `test-link` was asked.
#[derive(Debug, Clone)]
pub struct TestLinkArgs {
    pub port: String,
    pub peer: String,
    pub kind: TestKind,
    pub duration: u32,
    pub timeout: u32,
}

pub async fn test_link(conn: &Connection, a: &TestLinkArgs, format: Format) -> Result<u8, Failure> {
    let path = Objects::read(conn).await?.port_or_netdev(&a.port)?;
    let port = bus::port_proxy(conn, &path).await?;
    // On a terminal, the test's stages on standard error as the daemon says them
    // (`Port.LinkTestProgress`); standard output keeps the result alone.
    let mut stages = if std::io::stderr().is_terminal() {
        Some(port.receive_link_test_progress().await?)
    } else {
        None
    };
    let call = port.test_link(&a.peer, a.kind.as_str(), a.duration, a.timeout);
    tokio::pin!(call);
    let print_stage = |signal: &rdma_manager_dbus::proxies::LinkTestProgress| {
        if let Ok(args) = signal.args() {
            if let Some(line) = stage_line(a, args.stage(), args.result()) {
                eprintln!("{line}");
            }
        }
    };
    let result = loop {
        let Some(stream) = stages.as_mut() else {
            break call.await?;
        };
        // The daemon sends each stage before its reply, but the two reach separate queues and
        // may both be ready at one wake-up: the stages go first, and those already received
        // when the reply wins are printed before the result.
        tokio::select! {
            biased;
            Some(signal) = stream.next() => print_stage(&signal),
            r = &mut call => {
                while let Some(Some(signal)) = stream.next().now_or_never() {
                    print_stage(&signal);
                }
                break r?;
            }
        }
    };
    print!("{}", render(&result, format));
    Ok(if result.passed {
        code::SUCCESS
    } else {
        code::TEST_FAILED
    })
}

/// What a stage of this test says on the terminal; `None` for the end (the result follows)
/// and for another client's test from the same port.
fn stage_line(a: &TestLinkArgs, stage: &str, r: &LinkTestResult) -> Option<String> {
    if r.peer != a.peer || r.kind != a.kind.as_str() {
        return None;
    }
    match Stage::parse(stage)? {
        Stage::Running => Some(format!(
            "Testing {} from {}/{} to {} (at most {} s)...",
            r.kind,
            r.device,
            r.port,
            r.address,
            if a.timeout == 0 {
                DEFAULT_TIMEOUT_S
            } else {
                a.timeout
            }
        )),
        Stage::Bandwidth => Some(format!(
            "Latency p50 {:.2} us, p99 {:.2} us, max {:.2} us ({} round trips); the bandwidth test runs...",
            r.latency_p50_us, r.latency_p99_us, r.latency_max_us, r.round_trips
        )),
        Stage::Done => None,
    }
}

pub async fn responder(
    conn: &Connection,
    action: ResponderAction,
    format: Format,
) -> Result<u8, Failure> {
    let manager = bus::manager(conn).await?;
    match action {
        ResponderAction::On | ResponderAction::Off => {
            let on = action == ResponderAction::On;
            manager.set_link_responder(on).await?;
            println!(
                "Link-test responder successfully {}.",
                if on { "enabled" } else { "disabled" }
            );
        }
        ResponderAction::Status => {
            let r = manager.get_link_responder().await?;
            print!("{}", responder_table(&r).render(format));
        }
    }
    Ok(code::SUCCESS)
}

fn responder_table(r: &LinkResponder) -> Table {
    let mut t = Table::new(&[
        "ENABLED",
        "RUNNING",
        "LATENCY-PORT",
        "BANDWIDTH-PORT",
        "SERVED",
        "RESTARTS",
        "DETAIL",
    ]);
    t.push(vec![
        yes_no(r.enabled),
        yes_no(r.running),
        r.latency_port.to_string(),
        r.bandwidth_port.to_string(),
        r.served.to_string(),
        r.restarts.to_string(),
        r.detail.clone(),
    ]);
    t
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.into()
}

/// The result as `format` prints it.
pub fn render(r: &LinkTestResult, format: Format) -> String {
    if format == Format::Json {
        let mut text = serde_json::to_string_pretty(r).unwrap_or_default();
        text.push('\n');
        return text;
    }
    let rows = rows(r);
    match format {
        Format::Terse => {
            let mut line = rows
                .iter()
                .map(|(_, v)| crate::output::escape(v))
                .collect::<Vec<_>>()
                .join(":");
            line.push('\n');
            line
        }
        _ => {
            let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 1;
            rows.iter()
                .map(|(k, v)| {
                    let v = if v.is_empty() { "--" } else { v.as_str() };
                    format!("{:<width$} {v}\n", format!("{k}:"), width = width)
                })
                .collect()
        }
    }
}

fn us(v: f64) -> String {
    format!("{v:.2} us")
}

fn rows(r: &LinkTestResult) -> Vec<(&'static str, String)> {
    let measured = r.round_trips > 0;
    let opt = |s: String| if measured { s } else { String::new() };
    vec![
        (
            "RESULT",
            if r.passed {
                "passed".into()
            } else {
                "failed".into()
            },
        ),
        ("REASON", r.reason.clone()),
        ("DETAIL", r.detail.clone()),
        ("KIND", r.kind.clone()),
        ("PEER", r.peer.clone()),
        ("ADDRESS", r.address.clone()),
        ("LATENCY-P50", opt(us(r.latency_p50_us))),
        ("LATENCY-P99", opt(us(r.latency_p99_us))),
        ("LATENCY-MAX", opt(us(r.latency_max_us))),
        ("LATENCY-AVG", opt(us(r.latency_avg_us))),
        (
            "BANDWIDTH",
            if r.bandwidth_gbps > 0.0 {
                format!("{:.2} Gb/s", r.bandwidth_gbps)
            } else {
                String::new()
            },
        ),
        ("ROUND-TRIPS", opt(r.round_trips.to_string())),
        ("ERRORS", r.errors.to_string()),
        ("DEVICE", r.device.clone()),
        ("PORT", r.port.to_string()),
        ("NETDEV", r.netdev.clone()),
        (
            "GID-INDEX",
            if r.gid_index >= 0 {
                r.gid_index.to_string()
            } else {
                String::new()
            },
        ),
        ("GID", r.gid.clone()),
        ("GID-TYPE", r.gid_type.clone()),
        ("ROCE-MODE", r.roce_mode.clone()),
        ("TOS", r.tos.to_string()),
        (
            "MTU",
            if r.mtu > 0 {
                r.mtu.to_string()
            } else {
                String::new()
            },
        ),
        ("TOOL", r.tool.clone()),
        ("ELAPSED", format!("{} ms", r.elapsed_ms)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed() -> LinkTestResult {
        LinkTestResult {
            kind: "rdma".into(),
            peer: "192.0.2.9".into(),
            address: "192.0.2.9".into(),
            reason: "no-responder".into(),
            detail: "192.0.2.9 rejected the connection".into(),
            device: "rxe0".into(),
            port: 1,
            gid_index: -1,
            ..LinkTestResult::default()
        }
    }

    #[test]
    fn a_failed_test_shows_its_reason_and_no_measure() {
        let text = render(&failed(), Format::Table);
        assert!(text.contains("RESULT:      failed\n"), "{text}");
        assert!(text.contains("REASON:      no-responder\n"), "{text}");
        assert!(text.contains("LATENCY-P50: --\n"), "{text}");
        assert!(text.contains("GID-INDEX:   --\n"), "{text}");
        let terse = render(&failed(), Format::Terse);
        assert!(terse.starts_with("failed:no-responder:"), "{terse}");
        assert_eq!(terse.lines().count(), 1);
    }

    #[test]
    fn json_is_the_result_by_field_name() {
        let v: serde_json::Value =
            serde_json::from_str(&render(&failed(), Format::Json)).expect("json");
        assert_eq!(v["reason"], "no-responder");
        assert_eq!(v["gid_index"], -1);
        assert_eq!(v["passed"], false);
    }
}
