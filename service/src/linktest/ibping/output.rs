//! `ibping`'s output read back, rdma-core's and [`super::tool`]'s alike: a `Pong from HOST
//! (Lid N): time A.B ms` line per reply, then the statistics. ibping exits 0 whatever came
//! back, so the statistics say whether the peer answered.

use super::super::perftest::last_lines;
use super::super::ping::Echo;
use super::super::reason::{Failure, Reason};

/// Reads a run that exited with `code`; the host the replies named comes with the counts.
pub fn parse(
    stdout: &str,
    stderr: &str,
    code: Option<i32>,
    lid: u16,
) -> Result<(Echo, String), Failure> {
    let mut echo = Echo::default();
    let mut host = String::new();
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("Pong from ") {
            let (name, time) = rest
                .rsplit_once(" time ")
                .ok_or_else(|| unexpected("time on a Pong line"))?;
            let ms: f64 = time
                .trim_end_matches(" ms")
                .parse()
                .map_err(|_| unexpected("readable round trip time"))?;
            echo.rtts_us.push(ms * 1000.0);
            // "vm.(none) (Lid 2):"
            host = name
                .rsplit_once(" (Lid ")
                .map_or(name, |(h, _)| h)
                .to_string();
        } else if line.contains(" packets transmitted, ") {
            let mut it = line.split(',');
            echo.transmitted = leading_number(it.next())?;
            echo.received = leading_number(it.next())?;
        }
    }
    if echo.transmitted == 0 {
        if code == Some(0) {
            return Err(unexpected("statistics"));
        }
        return Err(Failure::new(
            Reason::ToolFailed,
            format!(
                "ibping failed: {}",
                last_lines(&format!("{stdout}\n{stderr}"), 3)
            ),
        ));
    }
    if echo.received == 0 {
        return Err(Failure::new(
            Reason::NoResponder,
            format!(
                "Lid {lid} answered none of {} pings (class 0x32): no ibping responder there, or no route to it",
                echo.transmitted
            ),
        ));
    }
    if echo.rtts_us.len() as u64 != echo.received {
        return Err(unexpected("Pong line for every reply counted"));
    }
    Ok((echo, host))
}

fn leading_number(part: Option<&str>) -> Result<u64, Failure> {
    part.and_then(|p| p.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| unexpected("readable statistics line"))
}

fn unexpected(what: &str) -> Failure {
    Failure::new(
        Reason::UnexpectedOutput,
        format!("ibping's output has no {what}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // Printed by rdma-core's ibping (infiniband-diags 44.0) against its own server, both on
    // ibsim's fabric (tests/tests/system/ibping.rs runs them the same way).
    const THREE_OF_THREE: &str = include_str!("../testdata/ibping-rdma-core-3-of-3.out");
    const NONE_OF_TWO: &str = include_str!("../testdata/ibping-rdma-core-0-of-2.out");

    #[test]
    fn rdma_cores_replies_are_read() {
        let (echo, host) = parse(THREE_OF_THREE, "", Some(0), 2).unwrap();
        assert_eq!((echo.transmitted, echo.received), (3, 3));
        assert_eq!(echo.rtts_us.len(), 3);
        assert!((echo.rtts_us[0] - 52.0).abs() < 1e-6);
        assert_eq!(host, "vm.(none)");
    }

    #[test]
    fn no_reply_is_no_responder() {
        let f = parse(
            NONE_OF_TWO,
            "ibwarn: [4419] mad_rpc_rmpp: _do_madrpc failed; dport (Lid 2)",
            Some(0),
            2,
        )
        .unwrap_err();
        assert_eq!(f.reason, Reason::NoResponder);
        assert!(f.detail.contains("Lid 2"), "{}", f.detail);
    }

    #[test]
    fn a_failed_or_unknown_run_says_so() {
        let f = parse(
            "",
            "ibping: cannot send MADs on this port: EINVAL",
            Some(1),
            2,
        )
        .unwrap_err();
        assert_eq!(f.reason, Reason::ToolFailed);
        assert!(f.detail.contains("cannot send"));
        assert_eq!(
            parse("hello", "", Some(0), 2).unwrap_err().reason,
            Reason::UnexpectedOutput
        );
        let cut = THREE_OF_THREE.replace("Pong from vm.(none) (Lid 2): time 0.103 ms\n", "");
        assert_eq!(
            parse(&cut, "", Some(0), 2).unwrap_err().reason,
            Reason::UnexpectedOutput
        );
    }
}
