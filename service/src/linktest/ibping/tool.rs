//! `rdma-managerd ibping`: infiniband-diags' `ibping`, both sides, on a umad device that is
//! opened by path or handed over already open (`--fd`, as the daemon's sandbox does: the
//! device is root's, the process that uses it is not). The output is `ibping`'s, line for
//! line, so that one parser ([`super::output`]) reads both.
//!
//! ```text
//! rdma-managerd ibping --serve (--umad PATH | --fd N) [--host NAME]
//! rdma-managerd ibping (--umad PATH | --fd N) [-c COUNT] [--interval-ms MS] [--timeout-ms MS] LID
//! ```

use std::io::Write as _;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::limit::ReplyLimit;
use super::umad::Umad;
use super::wire::{self, Hdr, Ping};
use rdma_manager_model::linktest::parse_lid;

const USAGE: &str = "usage: rdma-managerd ibping --serve (--umad PATH | --fd N) [--host NAME]
       rdma-managerd ibping (--umad PATH | --fd N) [-c COUNT] [--interval-ms MS] [--timeout-ms MS] LID";

/// Every option the command takes (the completions offer them); each but `--serve` takes a
/// value in the next argument. The parser also takes `-S` and `--count` as infiniband-diags'
/// ibping spells them.
pub const OPTIONS: [&str; 7] = [
    "--serve",
    "--umad",
    "--fd",
    "--host",
    "-c",
    "--interval-ms",
    "--timeout-ms",
];

/// Bounds of the client's options, as the daemon's link test uses them.
pub const MAX_COUNT: u32 = 100_000;
pub const MAX_WAIT_MS: u64 = 60_000;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Device {
    Path(PathBuf),
    Fd(i32),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Options {
    device: Device,
    serve: bool,
    host: Option<String>,
    count: u32,
    interval_ms: u64,
    timeout_ms: u64,
    lid: Option<u16>,
}

fn number<T: std::str::FromStr>(name: &str, v: Option<String>) -> Result<T, String> {
    let v = v.ok_or_else(|| format!("{name} needs a value"))?;
    v.parse()
        .map_err(|_| format!("{name} {v:?} is not a number"))
}

fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut device = None;
    let mut o = Options {
        device: Device::Fd(-1),
        serve: false,
        host: None,
        count: 10,
        interval_ms: 1000,
        timeout_ms: 1000,
        lid: None,
    };
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--serve" | "-S" => o.serve = true,
            "--umad" => device = Some(Device::Path(number::<PathBuf>("--umad", args.next())?)),
            "--fd" => device = Some(Device::Fd(number("--fd", args.next())?)),
            "--host" => o.host = Some(args.next().ok_or("--host needs a value")?),
            "-c" | "--count" => o.count = number("-c", args.next())?,
            "--interval-ms" => o.interval_ms = number("--interval-ms", args.next())?,
            "--timeout-ms" => o.timeout_ms = number("--timeout-ms", args.next())?,
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            s => {
                if o.lid.is_some() {
                    return Err(format!("unexpected argument {s:?}"));
                }
                o.lid = Some(
                    parse_lid(s)
                        .ok_or_else(|| format!("{s:?} is not a unicast LID (1 to 0xbfff)"))?,
                );
            }
        }
    }
    o.device = device.ok_or("give the device: --umad PATH or --fd N")?;
    if let Device::Fd(fd) = o.device {
        if fd < 0 {
            return Err(format!("--fd {fd} is not a descriptor"));
        }
    }
    if o.serve {
        if o.lid.is_some() {
            return Err("--serve answers pings: it takes no LID".into());
        }
    } else {
        if o.lid.is_none() {
            return Err("give the LID to ping".into());
        }
        if o.count == 0 || o.count > MAX_COUNT {
            return Err(format!("-c must be 1 to {MAX_COUNT}"));
        }
        if o.interval_ms > MAX_WAIT_MS || o.timeout_ms == 0 || o.timeout_ms > MAX_WAIT_MS {
            return Err(format!(
                "--interval-ms must be 0 to {MAX_WAIT_MS}, --timeout-ms 1 to {MAX_WAIT_MS}"
            ));
        }
    }
    Ok(o)
}

/// Runs the command with the arguments after `ibping`; gives the exit status (0 once the
/// pings are sent, whatever came back, as ibping; 1 when the device cannot be used; 2 on a
/// wrong command line).
pub fn main(args: impl IntoIterator<Item = String>) -> i32 {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ibping: {e}\n{USAGE}");
            return 2;
        }
    };
    let mut umad = match &o.device {
        Device::Path(p) => match Umad::open(p) {
            Ok(u) => u,
            Err(e) => {
                eprintln!("ibping: cannot open {}: {e}", p.display());
                return 1;
            }
        },
        // SAFETY: the descriptor was given to this process to own (the sandbox puts the
        // device there); nothing else in it uses that number.
        Device::Fd(fd) => Umad::from_fd(unsafe { OwnedFd::from_raw_fd(*fd) }),
    };
    umad.enable_pkey();
    let result = if o.serve {
        serve(&umad, o.host.unwrap_or_else(host_and_domain))
    } else {
        ping(&umad, &o)
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ibping: {e}");
            1
        }
    }
}

/// What ibping's server answers with: the host name, a dot and the NIS domain name
/// (`vm.(none)` where none is set).
fn host_and_domain() -> String {
    let mut host = [0u8; 256];
    let mut domain = [0u8; 256];
    // SAFETY: buffers of the length given; both NUL-terminate within them.
    let (h, d) = unsafe {
        (
            libc::gethostname(host.as_mut_ptr().cast(), host.len() - 1),
            libc::getdomainname(domain.as_mut_ptr().cast(), domain.len() - 1),
        )
    };
    let text = |b: &[u8], ok: bool| {
        if !ok {
            return String::new();
        }
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        String::from_utf8_lossy(&b[..end]).into_owned()
    };
    let host = text(&host, h == 0);
    if host.contains('.') {
        return host;
    }
    format!("{host}.{}", text(&domain, d == 0))
}

/// Answers the pings that reach the port until killed. One reply per request, of a fixed
/// size, from one buffer, at most as often as [`ReplyLimit`] allows (the rest are dropped,
/// as a lost MAD): what a peer sends can make it work, within a bound, and never grow.
fn serve(umad: &Umad, host: String) -> Result<(), String> {
    let agent = umad
        .register(wire::PING_CLASS, wire::OPENIB_OUI, true)
        .map_err(|e| format!("cannot serve class 0x32 (OUI 0x001405) on this port: {e}"))?;
    let mut limit = ReplyLimit::new(Instant::now());
    loop {
        let Some((hdr, mad)) = umad
            .recv(Duration::from_secs(3600))
            .map_err(|e| format!("receiving: {e}"))?
        else {
            continue;
        };
        if hdr.status != 0 || wire::classify(&mad) != Ping::Request {
            continue;
        }
        if !limit.allow(hdr.addr.lid, Instant::now()) {
            continue;
        }
        let reply = Hdr {
            agent_id: agent,
            addr: wire::reply_addr(&hdr.addr),
            ..Hdr::default()
        };
        if let Err(e) = umad.send(&reply, &wire::ping_reply(&mad, &host)) {
            eprintln!("ibping: reply to Lid {}: {e}", hdr.addr.lid);
        }
    }
}

/// `count` pings to the LID, `interval_ms` apart, each given `timeout_ms`; prints a line per
/// reply and ibping's statistics.
fn ping(umad: &Umad, o: &Options) -> Result<(), String> {
    let lid = o.lid.unwrap_or_default();
    let agent = umad
        .register(wire::PING_CLASS, wire::OPENIB_OUI, false)
        .map_err(|e| format!("cannot send MADs on this port: {e}"))?;
    let timeout = Duration::from_millis(o.timeout_ms);
    let start = Instant::now();
    // The kernel writes the agent into the transaction id's high half; the low half is ours.
    let base = (std::process::id() << 16) ^ start.elapsed().subsec_nanos();
    let mut rtts_us: Vec<u64> = Vec::new();
    let mut last_host = String::new();
    let mut out = std::io::stdout().lock();
    let interval = Duration::from_millis(o.interval_ms);
    let mut last_sent: Option<Instant> = None;
    for i in 0..o.count {
        // Pings leave `interval` apart, send to send (as ping's -i), however long the wait
        // for the one before took: `count` pings take `count` intervals when each waits no
        // longer than one.
        if let Some(prev) = last_sent {
            std::thread::sleep(interval.saturating_sub(prev.elapsed()));
        }
        let tid = u64::from(base.wrapping_add(i));
        let hdr = Hdr {
            agent_id: agent,
            timeout_ms: u32::try_from(o.timeout_ms).unwrap_or(u32::MAX),
            addr: wire::request_addr(lid),
            ..Hdr::default()
        };
        let sent = Instant::now();
        last_sent = Some(sent);
        umad.send(&hdr, &wire::ping_request(tid))
            .map_err(|e| format!("sending to Lid {lid}: {e}"))?;
        let deadline = sent + timeout;
        let mut answered = false;
        while !answered {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some((h, mad)) = umad.recv(left).map_err(|e| format!("receiving: {e}"))? else {
                break;
            };
            match wire::classify(&mad) {
                Ping::Reply { tid: t, host } if t & 0xffff_ffff == tid && h.status == 0 => {
                    let rtt = sent.elapsed().as_micros() as u64;
                    let _ = writeln!(
                        out,
                        "Pong from {host} (Lid {lid}): time {}.{:03} ms",
                        rtt / 1000,
                        rtt % 1000
                    );
                    rtts_us.push(rtt);
                    last_host = host;
                    answered = true;
                }
                // The kernel gives this ping back when no reply came in its timeout (an
                // earlier ping's, given back late, is not this one's).
                _ if h.status != 0
                    && wire::classify(&mad) == Ping::Request
                    && wire::tid(&mad) & 0xffff_ffff == tid =>
                {
                    break
                }
                _ => {}
            }
        }
        if !answered {
            eprintln!("ibping: no reply from Lid {lid} within {} ms", o.timeout_ms);
        }
    }
    let total_ms = start.elapsed().as_millis();
    let sent = u64::from(o.count);
    let received = rtts_us.len() as u64;
    let ms = |us: u64| format!("{}.{:03}", us / 1000, us % 1000);
    let (min, max) = (
        rtts_us.iter().copied().min().unwrap_or(0),
        rtts_us.iter().copied().max().unwrap_or(0),
    );
    let avg = rtts_us.iter().sum::<u64>() / received.max(1);
    let _ = writeln!(out, "\n--- {last_host} (Lid {lid}) ibping statistics ---");
    let _ = writeln!(
        out,
        "{sent} packets transmitted, {received} received, {}% packet loss, time {total_ms} ms",
        (sent - received) * 100 / sent
    );
    let _ = writeln!(
        out,
        "rtt min/avg/max = {}/{}/{} ms",
        ms(min),
        ms(avg),
        ms(max)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(a: &[&str]) -> Result<Options, String> {
        parse(a.iter().map(|s| s.to_string()))
    }

    #[test]
    fn the_command_line_is_checked() {
        let o = p(&["--fd", "3", "-c", "5", "--interval-ms", "200", "0x12"]).unwrap();
        assert_eq!(
            (o.device, o.count, o.interval_ms, o.lid),
            (Device::Fd(3), 5, 200, Some(0x12))
        );
        let o = p(&["--serve", "--umad", "/dev/infiniband/umad0"]).unwrap();
        assert!(o.serve);
        assert!(p(&["--fd", "3"]).unwrap_err().contains("LID"));
        assert!(p(&["2"]).unwrap_err().contains("--umad"));
        assert!(p(&["--fd", "3", "0xc000"]).unwrap_err().contains("unicast"));
        assert!(p(&["--fd", "3", "0"]).is_err());
        assert!(p(&["--fd", "-1", "2"]).is_err());
        assert!(p(&["--fd", "3", "-c", "0", "2"]).is_err());
        assert!(p(&["--fd", "3", "--timeout-ms", "0", "2"]).is_err());
        assert!(p(&["--serve", "--fd", "3", "2"]).is_err());
        assert!(p(&["--fd", "3", "--bogus", "2"]).is_err());
    }

    #[test]
    fn the_server_names_itself_as_ibping_does() {
        let name = host_and_domain();
        assert!(name.contains('.'), "{name}");
    }

    /// The table the completions offer is what the parser takes: each option is known, and
    /// each but `--serve` wants its value.
    #[test]
    fn every_listed_option_is_taken() {
        for o in OPTIONS {
            let args: Vec<String> = [o, "--umad", "/dev/infiniband/umad0", "--serve"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            let e = parse(args).err().unwrap_or_default();
            assert!(!e.contains("unknown option"), "{o}: {e}");
            if o != "--serve" {
                let e = parse(vec![o.to_string()]).err().unwrap_or_default();
                assert!(e.contains("needs a value"), "{o} alone: {e}");
            }
        }
    }
}
