//! rdma-lab-bench: in the QEMU kernel lab, times enumerating the real kernel's RDMA devices by
//! `ibstat`, by `rdma dev show` and by `rdma-managerd show`'s code, each as a whole process.
//!
//! Run as the lab's scenario program (`tests/lab/run-lab.sh --scenario-bin
//! target/release/rdma-lab-bench`): it makes rxe0 and rxe1 over the lab's veth pair, then runs
//! each tool RUNS times and prints p50/p99/max. The lab copies only this one program into the
//! guest, so `show` runs this program again with `show`, which does what `rdma-managerd show`
//! does (the same library calls: read the devices and netdevs, render them as ibstat does, then
//! the IPoIB interfaces).

use std::process::Command;
use std::time::Instant;

use anyhow::Result;
use rdma_manager_tests::gmo::run_quiet as run;
use rdma_managerd::kernel::linux::LinuxHost;
use rdma_managerd::kernel::prelude::*;

const RUNS: usize = 30;

async fn show() -> Result<()> {
    let host = LinuxHost::new();
    let devices = host.read_devices().await?;
    let netdevs = host.read_netdevs().await?;
    print!("{}", rdma_managerd::ibstat::render_all(&devices));
    print!(
        "{}",
        rdma_managerd::ipoib_report::render_ipoib(&devices, &netdevs)
    );
    Ok(())
}

fn time(what: &str, mut make: impl FnMut() -> Command) -> Result<()> {
    time_fn(what, || run(&mut make()))
}

fn time_fn(what: &str, mut f: impl FnMut() -> Result<()>) -> Result<()> {
    f()?; // warm-up
    let mut ms: Vec<f64> = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let t = Instant::now();
        f()?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    ms.sort_by(f64::total_cmp);
    let p = |q: f64| ms[((q * RUNS as f64).ceil() as usize).clamp(1, RUNS) - 1];
    println!(
        "{what:<28} {RUNS:>4} {:>8.2} {:>8.2} {:>8.2}",
        p(0.5),
        p(0.99),
        ms[RUNS - 1]
    );
    Ok(())
}

fn main() -> Result<()> {
    let rt = || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
    };
    match std::env::args().nth(1).as_deref() {
        Some("show") => return rt()?.block_on(show()),
        Some("noop") => return Ok(()),
        _ => {}
    }
    for (name, netdev) in [("rxe0", "veth0"), ("rxe1", "veth1")] {
        run(Command::new("rdma").args(["link", "add", name, "type", "rxe", "netdev", netdev]))?;
    }
    let me = std::env::current_exe()?;
    println!(
        "{:<28} {:>4} {:>8} {:>8} {:>8}  (ms)",
        "", "n", "p50", "p99", "max"
    );
    time("ibstat", || Command::new("ibstat"))?;
    time("rdma dev show", || {
        let mut c = Command::new("rdma");
        c.args(["dev", "show"]);
        c
    })?;
    time("rdma-managerd show (code)", || {
        let mut c = Command::new(&me);
        c.arg("show");
        c
    })?;
    // Where the time of the last goes: starting this program, and the reading and rendering
    // alone (in this process, output discarded).
    time("  this program doing nothing", || {
        let mut c = Command::new(&me);
        c.arg("noop");
        c
    })?;
    let rt = rt()?;
    time_fn("    devices (sysfs)", || {
        rt.block_on(async {
            std::hint::black_box(LinuxHost::new().read_devices().await?);
            Ok(())
        })
    })?;
    time_fn("    netdevs (sysfs, rtnetlink)", || {
        rt.block_on(async {
            std::hint::black_box(LinuxHost::new().read_netdevs().await?);
            Ok(())
        })
    })?;
    time_fn("  show's reads, in process", || {
        rt.block_on(async {
            let host = LinuxHost::new();
            let devices = host.read_devices().await?;
            let netdevs = host.read_netdevs().await?;
            let text = rdma_managerd::ibstat::render_all(&devices)
                + &rdma_managerd::ipoib_report::render_ipoib(&devices, &netdevs);
            std::hint::black_box(text);
            Ok(())
        })
    })?;
    Ok(())
}
