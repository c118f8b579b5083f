//! A stand-in for the link tests' tools (perftest's `ib_send_lat`/`ib_send_bw` and iputils'
//! `ping`) on a host with no RDMA kernel: the daemon runs it through the same sandbox, with
//! the same arguments, and reads what it prints with the same parsers. What it does depends
//! on the peer it is pointed at (TEST-NET-1, so that no test reaches a real host):
//!
//! - 192.0.2.10: succeeds, printing the tool's output as captured (`ping` over an Ethernet
//!   netdev; perftest in its own format, `service/src/linktest/testdata/`);
//! - 192.0.2.20: the peer's RDMA CM rejects the connection (perftest's REJ sentence); ping
//!   gets no reply;
//! - 192.0.2.30: hangs (with a child of its own holding the output open) until killed;
//! - 192.0.2.40: rdma_cm cannot resolve the address (ADDR_ERROR); ping: host unreachable;
//! - 192.0.2.50: prints something neither tool prints, and exits 0;
//! - 192.0.2.60: succeeds after 2 s (a test that holds its slot a while).
//!
//! Without a peer (the responder's servers) it waits until it is killed. Which tool it plays
//! follows from the arguments: `-4`/`-6` is ping, `--report_gbits` with a peer is
//! ib_send_bw, `ibping` first is `rdma-managerd ibping`, anything else ib_send_lat.
//!
//! As `rdma-managerd ibping --fd 3 ... LID` it first checks that descriptor 3 was handed
//! over (the daemon's umad device; `/dev/null` on the simulated host), then by the LID:
//! 2 answers (rdma-core's ibping output, captured on ibsim), 3 answers nothing, any other
//! prints what ibping does not. `--serve` waits until killed.

use std::process::ExitCode;
use std::time::Duration;

const LAT: &str = include_str!("../../../service/src/linktest/testdata/ib_send_lat.txt");
const BW: &str = include_str!("../../../service/src/linktest/testdata/ib_send_bw.txt");
const PING: &str = include_str!("../../../service/src/linktest/testdata/ping_ok.txt");
const IBPING: &str =
    include_str!("../../../service/src/linktest/testdata/ibping-rdma-core-3-of-3.out");

fn ibping(args: &[String]) -> ExitCode {
    // SAFETY: fcntl on a descriptor number; no memory is passed.
    if unsafe { libc::fcntl(3, libc::F_GETFD) } < 0 {
        eprintln!("ibping: --fd 3 is not open in this process");
        return ExitCode::from(1);
    }
    if args.iter().any(|a| a == "--serve") {
        std::thread::sleep(Duration::from_secs(3600));
        return ExitCode::SUCCESS;
    }
    match args.last().map(String::as_str) {
        Some("2") => print!("{IBPING}"),
        Some("3") => {
            for _ in 0..10 {
                eprintln!("ibping: no reply from Lid 3 within 1000 ms");
            }
            print!("\n---  (Lid 3) ibping statistics ---\n10 packets transmitted, 0 received, 100% packet loss, time 10000 ms\nrtt min/avg/max = 0.000/0.000/0.000 ms\n");
        }
        _ => println!("hello from something else"),
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("ibping") {
        return ibping(&args);
    }
    let ping = matches!(args.first().map(String::as_str), Some("-4" | "-6"));
    let peer = args
        .last()
        .filter(|a| a.parse::<std::net::IpAddr>().is_ok())
        .cloned();
    let Some(peer) = peer else {
        // A server: waits for a client that never comes.
        std::thread::sleep(Duration::from_secs(3600));
        return ExitCode::SUCCESS;
    };
    let bw = args.iter().any(|a| a == "--report_gbits");
    match peer.as_str() {
        "192.0.2.10" | "192.0.2.60" => {
            if peer == "192.0.2.60" {
                std::thread::sleep(Duration::from_secs(2));
            }
            if ping {
                print!("{}", PING.replace("192.0.2.2", &peer));
            } else if bw {
                print!("{BW}");
            } else {
                print!("{LAT}");
            }
            ExitCode::SUCCESS
        }
        "192.0.2.20" if ping => {
            println!("PING {peer} ({peer}) from 192.0.2.2 eth0: 56(84) bytes of data.\n\n--- {peer} ping statistics ---\n10 packets transmitted, 0 received, 100% packet loss, time 1856ms\n");
            ExitCode::from(1)
        }
        "192.0.2.20" => {
            eprintln!("Unexpected CM event bl blka 8");
            ExitCode::from(1)
        }
        "192.0.2.30" => {
            // A grandchild that keeps stdout open: only killing the process group ends it.
            let _ = std::process::Command::new("sleep").arg("3600").spawn();
            std::thread::sleep(Duration::from_secs(3600));
            ExitCode::SUCCESS
        }
        "192.0.2.40" if ping => {
            println!("PING {peer} ({peer}) from 192.0.2.2 eth0: 56(84) bytes of data.\nFrom 192.0.2.2 icmp_seq=1 Destination Host Unreachable\n\n--- {peer} ping statistics ---\n3 packets transmitted, 0 received, +1 errors, 100% packet loss, time 2036ms\n");
            ExitCode::from(1)
        }
        "192.0.2.40" => {
            eprintln!("Received 10 times ADDR_ERROR");
            ExitCode::from(1)
        }
        _ => {
            println!("hello from something else");
            ExitCode::SUCCESS
        }
    }
}
