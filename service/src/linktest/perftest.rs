//! perftest's `ib_send_lat` and `ib_send_bw` (rdma-core's benchmark suite) as the RDMA test's
//! tools: their command lines and their output read back, strictly. A line that should be
//! there and is not, or a number that does not parse, is [`Reason::UnexpectedOutput`] rather
//! than a guess: a perftest that prints otherwise must be looked at, not misreported.
//!
//! The formats are perftest's own (`perftest_parameters.h`: `RESULT_FMT_LAT`,
//! `RESULT_FMT_G`, `PERF_GID_FMT`), as Debian's 4.5-0.17 prints them; latencies are perftest's
//! (half a round trip, µs), bandwidth with `--report_gbits` in Gb/s (10^9 bits).

use std::net::{IpAddr, Ipv6Addr};

use super::reason::{Failure, Reason};

/// The TCP-free rdma_cm port numbers of the responder's two servers: perftest's default
/// (18515) for the latency test and the next one for the bandwidth test.
pub const LAT_PORT: u16 = 18515;
pub const BW_PORT: u16 = 18516;

/// What perftest prints about the connection before the results.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Connection {
    pub device: String,
    pub mtu: u32,
    pub link_type: String,
    /// The GID index perftest was told (or defaulted to); with rdma_cm the GID in use is
    /// `local_gid`.
    pub gid_index: Option<u32>,
    pub local_gid: Option<Ipv6Addr>,
    pub remote_gid: Option<Ipv6Addr>,
}

/// `ib_send_lat`'s result line (iterations mode), in µs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Latency {
    pub bytes: u64,
    pub iterations: u64,
    pub min: f64,
    pub max: f64,
    /// perftest's `t_typical`: the median.
    pub typical: f64,
    pub avg: f64,
    pub stdev: f64,
    pub p99: f64,
    pub p999: f64,
}

/// `ib_send_bw`'s result line, with `--report_gbits`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bandwidth {
    pub bytes: u64,
    pub iterations: u64,
    pub peak_gbps: f64,
    pub avg_gbps: f64,
    pub msg_rate_mpps: f64,
}

/// The arguments of a client run: `-R` (rdma_cm), the device and port, the source address
/// so that rdma_cm leaves from this port, `-F` (no CPU frequency warning: it fails the run on
/// some hosts), and for bandwidth `--report_gbits`; `duration` > 0 runs the bandwidth test for
/// that many seconds (`-D`), which the peer's server must have been given too.
pub fn client_args(
    bandwidth: bool,
    device: &str,
    port: u32,
    source: Option<IpAddr>,
    peer: IpAddr,
    duration: u32,
) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "-R".into(),
        "-F".into(),
        "-d".into(),
        device.into(),
        "-i".into(),
        port.to_string(),
        "-p".into(),
        if bandwidth { BW_PORT } else { LAT_PORT }.to_string(),
    ];
    if bandwidth {
        a.push("--report_gbits".into());
        if duration > 0 {
            a.push("-D".into());
            a.push(duration.to_string());
        }
    }
    if let Some(src) = source {
        a.push("--source_ip".into());
        a.push(src.to_string());
    }
    a.push(peer.to_string());
    a
}

/// The arguments of the responder's server for one test: the same defaults a client given
/// only `-R` and the port uses, so that perftest's own clients interoperate.
pub fn server_args(bandwidth: bool) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "-R".into(),
        "-F".into(),
        "-p".into(),
        if bandwidth { BW_PORT } else { LAT_PORT }.to_string(),
    ];
    if bandwidth {
        a.push("--report_gbits".into());
    }
    a
}

fn unexpected(what: &str) -> Failure {
    Failure::new(
        Reason::UnexpectedOutput,
        format!("perftest's output has no {what}"),
    )
}

/// The connection block (device, MTU, link type, GIDs).
pub fn parse_connection(out: &str) -> Result<Connection, Failure> {
    let mut c = Connection::default();
    let mut gids = Vec::new();
    for line in out.lines() {
        let t = line.trim();
        // " Dual-port       : OFF\t\tDevice         : rxe0"
        if let Some(i) = t.find("Device         :") {
            c.device = t[i + "Device         :".len()..].trim().to_string();
        } else if let Some(v) = field(t, "Mtu") {
            c.mtu = v
                .trim_end_matches("[B]")
                .trim()
                .parse()
                .map_err(|_| unexpected("readable Mtu"))?;
        } else if let Some(v) = field(t, "Link type") {
            c.link_type = v.to_string();
        } else if let Some(v) = field(t, "GID index") {
            c.gid_index = Some(v.parse().map_err(|_| unexpected("readable GID index"))?);
        } else if let Some(g) = t.strip_prefix("GID:") {
            gids.push(
                super::peer::parse_perftest_gid(g).ok_or_else(|| unexpected("readable GID"))?,
            );
        }
    }
    if c.device.is_empty() {
        return Err(unexpected("Device line"));
    }
    if c.mtu == 0 {
        return Err(unexpected("Mtu line"));
    }
    // PERF_GID_FMT follows the local address line, then the remote one.
    c.local_gid = gids.first().copied();
    c.remote_gid = gids.get(1).copied();
    Ok(c)
}

/// `" Mtu             : 1024[B]"` -> `"1024[B]"`.
fn field<'a>(t: &'a str, name: &str) -> Option<&'a str> {
    let rest = t.strip_prefix(name)?;
    let (pad, value) = rest.split_once(':')?;
    pad.trim().is_empty().then(|| value.trim())
}

/// The numbers of the line after the header that starts with `#bytes` and contains `needle`.
fn result_row(out: &str, needle: &str, columns: usize) -> Result<Vec<f64>, Failure> {
    let mut lines = out.lines();
    lines
        .by_ref()
        .find(|l| l.trim_start().starts_with("#bytes") && l.contains(needle))
        .ok_or_else(|| unexpected(&format!("result header with {needle}")))?;
    let row = lines
        .find(|l| !l.trim().is_empty())
        .ok_or_else(|| unexpected("result line"))?;
    let nums: Vec<f64> = row
        .split_whitespace()
        .map(|w| w.parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| unexpected("numeric result line"))?;
    if nums.len() < columns || nums.iter().any(|n| !n.is_finite() || *n < 0.0) {
        return Err(unexpected("result line with every column"));
    }
    Ok(nums)
}

pub fn parse_latency(out: &str) -> Result<Latency, Failure> {
    let n = result_row(out, "t_typical[usec]", 9)?;
    Ok(Latency {
        bytes: n[0] as u64,
        iterations: n[1] as u64,
        min: n[2],
        max: n[3],
        typical: n[4],
        avg: n[5],
        stdev: n[6],
        p99: n[7],
        p999: n[8],
    })
}

pub fn parse_bandwidth(out: &str) -> Result<Bandwidth, Failure> {
    let n = result_row(out, "BW average[Gb/sec]", 5)?;
    Ok(Bandwidth {
        bytes: n[0] as u64,
        iterations: n[1] as u64,
        peak_gbps: n[2],
        avg_gbps: n[3],
        msg_rate_mpps: n[4],
    })
}

/// Why a run that did not succeed failed, from what it printed (stdout and stderr together)
/// and the rdma_cm port it connected to. The sentences are perftest's
/// (`perftest_communication.c`); event numbers are `enum rdma_cm_event_type`'s.
pub fn classify_failure(text: &str, peer: IpAddr, port: u16) -> Failure {
    let event = |prefix: &str| -> Option<u32> {
        text.lines().find_map(|l| {
            let rest = l.trim().strip_prefix(prefix)?;
            rest.trim().parse().ok()
        })
    };
    let tail = last_lines(text, 3);
    if text.contains("ADDR_ERROR") || matches!(event("unexpected CM event"), Some(1 | 3)) {
        return Failure::new(
            Reason::NoRoute,
            format!("rdma_cm could not resolve a route to {peer} from this port (no neighbour answers for it): {tail}"),
        );
    }
    match event("Unexpected CM event bl blka") {
        Some(8) => {
            return Failure::new(
                Reason::NoResponder,
                format!("{peer} rejected the connection (REJ): nothing listens on rdma_cm port {port} there; enable its responder or start the perftest server by hand"),
            )
        }
        Some(7) => {
            return Failure::new(
                Reason::NoResponder,
                format!("no RDMA CM at {peer} answered the connection request (unreachable)"),
            )
        }
        Some(6) => {
            return Failure::new(
                Reason::Rejected,
                format!("the connection to {peer} failed while it was being set up (CONNECT_ERROR)"),
            )
        }
        _ => {}
    }
    if text.contains("Couldn't read remote address")
        || text.contains("Unable to read from socket/rdma_cm")
        || text.contains("Unable to read to socket/rdma_cm")
    {
        return Failure::new(
            Reason::Rejected,
            format!("{peer}'s server ended the test after connecting (it runs with other parameters?): {tail}"),
        );
    }
    if text.trim().is_empty() {
        return Failure::new(Reason::ToolFailed, "perftest failed and printed nothing");
    }
    Failure::new(Reason::ToolFailed, format!("perftest failed: {tail}"))
}

/// The last `n` non-empty lines joined, for a sentence (the caller caps the whole).
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("----"))
        .collect();
    let from = lines.len().saturating_sub(n);
    lines[from..].join(" / ")
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured from Debian 12's perftest 4.5+0.17 clients (`ib_send_lat -R -F -d rxe0 -p 18515 PEER`,
    // `ib_send_bw -R -F -d rxe0 -p 18516 --report_gbits PEER`) against the service's
    // responder in the installed-system lab (two guests over rxe, Debian's 6.1, software
    // emulation: hence the milliseconds), as its `linktest` check prints them.
    const LAT: &str = include_str!("testdata/ib_send_lat.txt");
    const BW: &str = include_str!("testdata/ib_send_bw.txt");

    #[test]
    fn latency_output_is_read_whole() {
        let l = parse_latency(LAT).expect("latency");
        assert_eq!(l.bytes, 2);
        assert_eq!(l.iterations, 1000);
        assert_eq!(
            (l.min, l.typical, l.p99, l.max),
            (518.70, 25222.49, 37654.92, 87823.69)
        );
        let c = parse_connection(LAT).expect("connection");
        assert_eq!(c.device, "rxe0");
        assert_eq!(c.mtu, 1024);
        assert_eq!(c.link_type, "Ethernet");
        let local = c.local_gid.expect("local gid");
        assert!(local.to_ipv4_mapped().is_some(), "{local}");
        assert!(c.remote_gid.is_some());
    }

    #[test]
    fn bandwidth_output_is_read_in_gbits() {
        let b = parse_bandwidth(BW).expect("bandwidth");
        assert_eq!(b.bytes, 65536);
        assert_eq!((b.peak_gbps, b.avg_gbps), (0.076673, 0.068454));
        assert!(parse_connection(BW).is_ok());
        // The latency parser does not take a bandwidth report, nor the reverse.
        assert_eq!(
            parse_latency(BW).map_err(|f| f.reason),
            Err(Reason::UnexpectedOutput)
        );
        assert_eq!(
            parse_bandwidth(LAT).map_err(|f| f.reason),
            Err(Reason::UnexpectedOutput)
        );
    }

    #[test]
    fn a_report_in_mbytes_or_cut_short_is_refused() {
        let mb = BW.replace("[Gb/sec]", "[MB/sec]");
        assert_eq!(
            parse_bandwidth(&mb).map_err(|f| f.reason),
            Err(Reason::UnexpectedOutput)
        );
        let cut: String = LAT
            .lines()
            .take_while(|l| !l.contains("#bytes"))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(parse_latency(&cut).is_err());
        let garbled = LAT.replace(" 1000 ", " 1o00 ");
        assert!(parse_latency(&garbled).is_err());
    }

    #[test]
    fn failures_are_classified_from_perftest_sentences() {
        let peer: IpAddr = "192.0.2.1".parse().unwrap();
        let f = |t: &str| classify_failure(t, peer, LAT_PORT).reason;
        assert_eq!(f("Unexpected CM event bl blka 8\n"), Reason::NoResponder);
        assert_eq!(f("Unexpected CM event bl blka 7\n"), Reason::NoResponder);
        assert_eq!(f("Received 10 times ADDR_ERROR\n"), Reason::NoRoute);
        assert_eq!(f("unexpected CM event 3\n"), Reason::NoRoute);
        assert_eq!(
            f(" Unable to read from socket/rdma_cm\n Failed to exchange data between server and clients\n"),
            Reason::Rejected
        );
        assert_eq!(f("No IB devices found\n"), Reason::ToolFailed);
        assert_eq!(f(""), Reason::ToolFailed);
    }

    #[test]
    fn the_client_leaves_from_the_port_and_the_server_matches_its_defaults() {
        let peer: IpAddr = "192.0.2.1".parse().unwrap();
        let src: IpAddr = "192.0.2.9".parse().unwrap();
        let a = client_args(true, "rxe0", 1, Some(src), peer, 0);
        assert_eq!(
            a.join(" "),
            "-R -F -d rxe0 -i 1 -p 18516 --report_gbits --source_ip 192.0.2.9 192.0.2.1"
        );
        assert_eq!(server_args(true).join(" "), "-R -F -p 18516 --report_gbits");
        assert_eq!(server_args(false).join(" "), "-R -F -p 18515");
        assert!(client_args(true, "rxe0", 1, None, peer, 5)
            .join(" ")
            .contains("-D 5"));
    }
}
