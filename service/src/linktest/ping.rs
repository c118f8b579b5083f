//! iputils' `ping` as the ICMP test's tool: its command line and its output read back. Every
//! reply line gives one round trip (the percentiles are computed from them); the summary line
//! gives what was sent and received. Run unprivileged, `ping` uses an ICMP datagram socket,
//! which the kernel allows to the groups in `net.ipv4.ping_group_range` (systemd opens it to
//! every group); where it is closed, the sentence says so.

use std::net::IpAddr;

use super::perftest::last_lines;
use super::reason::{Failure, Reason};

/// Between two echo requests: iputils' least interval for a user who is not root.
pub const INTERVAL_MS: u32 = 200;

/// What a run measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Echo {
    pub transmitted: u64,
    pub received: u64,
    /// Every round trip, in µs, in the order the replies came.
    pub rtts_us: Vec<f64>,
}

/// The arguments: numeric output, `count` requests `INTERVAL_MS` apart out of `netdev`,
/// ending after `deadline_s` whatever happens.
pub fn args(netdev: &str, peer: IpAddr, count: u32, deadline_s: u32) -> Vec<String> {
    vec![
        if peer.is_ipv4() { "-4" } else { "-6" }.into(),
        "-n".into(),
        "-c".into(),
        count.to_string(),
        "-i".into(),
        format!("{}.{}", INTERVAL_MS / 1000, INTERVAL_MS % 1000 / 100),
        "-W".into(),
        "1".into(),
        "-w".into(),
        deadline_s.to_string(),
        "-I".into(),
        netdev.into(),
        peer.to_string(),
    ]
}

/// Reads a run that exited with `code` (0: replies came, 1: none or some lost, 2: an error).
pub fn parse(stdout: &str, stderr: &str, code: Option<i32>, peer: IpAddr) -> Result<Echo, Failure> {
    let all = format!("{stdout}\n{stderr}");
    if let Some(f) = error_of(&all, peer) {
        return Err(f);
    }
    let mut echo = Echo::default();
    for line in stdout.lines() {
        if line.contains(" bytes from ") {
            let t = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix("time="))
                .ok_or_else(|| unexpected("time= on a reply line"))?;
            // "time=0.318 ms" or, on older iputils, "time=0.318ms".
            let ms: f64 = t
                .trim_end_matches("ms")
                .parse()
                .map_err(|_| unexpected("readable round trip time"))?;
            echo.rtts_us.push(ms * 1000.0);
        } else if line.contains(" packets transmitted, ") {
            let mut it = line.split(',');
            echo.transmitted = leading_number(it.next())?;
            echo.received = leading_number(it.next())?;
        }
    }
    if echo.transmitted == 0 {
        if code == Some(0) || code == Some(1) {
            return Err(unexpected("summary line"));
        }
        return Err(Failure::new(
            Reason::ToolFailed,
            format!("ping failed: {}", last_lines(&all, 3)),
        ));
    }
    if echo.received == 0 {
        return Err(Failure::new(
            Reason::NoResponder,
            format!("{peer} sent no echo reply to {} requests", echo.transmitted),
        ));
    }
    if echo.rtts_us.len() as u64 != echo.received {
        return Err(unexpected("reply line for every reply counted"));
    }
    Ok(echo)
}

fn leading_number(part: Option<&str>) -> Result<u64, Failure> {
    part.and_then(|p| p.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| unexpected("readable summary line"))
}

fn unexpected(what: &str) -> Failure {
    Failure::new(
        Reason::UnexpectedOutput,
        format!("ping's output has no {what}"),
    )
}

/// The errors ping reports in words, which say more than its exit code.
fn error_of(all: &str, peer: IpAddr) -> Option<Failure> {
    if all.contains("Destination Host Unreachable")
        || all.contains("Address unreachable")
        || all.contains("Network is unreachable")
        || all.contains("No route to host")
        || all.contains("Destination Net Unreachable")
    {
        return Some(Failure::new(
            Reason::NoRoute,
            format!("no route to {peer} from this port: {}", last_lines(all, 2)),
        ));
    }
    if all.contains("Operation not permitted") || all.contains("Permission denied") {
        return Some(Failure::new(
            Reason::ToolFailed,
            format!("ping may not open an ICMP socket without privileges here (net.ipv4.ping_group_range closed?): {}", last_lines(all, 2)),
        ));
    }
    None
}

/// The nearest-rank percentile `p` (0 to 100) of sorted values.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured with iputils 20221126 (Debian 12) over an Ethernet netdev.
    const OK: &str = include_str!("testdata/ping_ok.txt");
    /// Captured with iputils 20221126: an address on the netdev's subnet that nobody has.
    const SILENT: &str = include_str!("testdata/ping_silent.txt");

    fn peer() -> IpAddr {
        "192.0.2.2".parse().unwrap()
    }

    #[test]
    fn replies_give_every_round_trip() {
        let e = parse(OK, "", Some(0), peer()).expect("echo");
        assert_eq!(e.transmitted, e.received);
        assert_eq!(e.rtts_us.len() as u64, e.received);
        assert!(e.rtts_us.iter().all(|r| *r > 0.0));
    }

    #[test]
    fn an_address_nobody_has_is_no_responder_or_no_route() {
        let f = parse(SILENT, "", Some(1), peer()).expect_err("silent");
        assert_eq!(f.reason, Reason::NoResponder, "{}", f.detail);
        // Once the neighbour entry fails, ping says so on its own lines.
        let unreachable = SILENT.replace(
            "\n\n---",
            "\nFrom 192.0.2.2 icmp_seq=1 Destination Host Unreachable\n\n---",
        );
        let f = parse(&unreachable, "", Some(1), peer()).expect_err("unreachable");
        assert_eq!(f.reason, Reason::NoRoute, "{}", f.detail);
    }

    #[test]
    fn errors_keep_their_words() {
        assert_eq!(
            parse(
                "",
                "ping: socket: Operation not permitted\n",
                Some(2),
                peer()
            )
            .map_err(|f| f.reason),
            Err(Reason::ToolFailed)
        );
        assert_eq!(
            parse(
                "",
                "ping: connect: Network is unreachable\n",
                Some(2),
                peer()
            )
            .map_err(|f| f.reason),
            Err(Reason::NoRoute)
        );
        assert_eq!(
            parse("hello\n", "", Some(0), peer()).map_err(|f| f.reason),
            Err(Reason::UnexpectedOutput)
        );
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn the_command_line_leaves_from_the_netdev() {
        assert_eq!(
            args("eth0", peer(), 10, 4).join(" "),
            "-4 -n -c 10 -i 0.2 -W 1 -w 4 -I eth0 192.0.2.2"
        );
    }
}
