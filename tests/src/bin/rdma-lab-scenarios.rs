//! Runs the lab scenario suite and prints its transcript on stdout.
//!
//! `rdma-lab-scenarios real` runs on the real kernel (inside the QEMU lab) and also compares
//! with `rdma` and `ibstat`; disagreements go to stderr and make the exit status 1.
//! `rdma-lab-scenarios sim [RELEASE]` runs on the simulated lab host.

use std::sync::Arc;

use anyhow::{bail, Context};
use rdma_manager_tests::reference::Reference;
use rdma_manager_tests::scenarios::{run_all, Run};
use rdma_managerd::kernel::linux::LinuxHost;
use rdma_managerd::kernel::prelude::*;
use rdma_managerd::kernel::sim::{fixtures, SimHost};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let real = args.first().map(String::as_str) == Some("real");
    let (host, reference): (Arc<dyn Host>, Option<Reference>) =
        match args.first().map(String::as_str) {
            Some("real") => (Arc::new(LinuxHost::new()), Some(Reference::from_path())),
            Some("sim") => {
                let release = args.get(1).cloned().unwrap_or_else(|| "sim".into());
                (Arc::new(SimHost::new(fixtures::lab_host(&release))?), None)
            }
            _ => bail!("usage: rdma-lab-scenarios real|sim [RELEASE]"),
        };
    let mut run = Run::new(host, reference)
        .await
        .context("subscribing to kernel events")?;
    run_all(&mut run).await;
    for l in &run.transcript {
        println!("{l}");
    }
    for f in &run.failures {
        eprintln!("REFERENCE MISMATCH: {f}");
    }
    if real {
        eprintln!(
            "reference: {} comparisons with rdma -j dev show, rdma -j link show, ibstat, dcb, ethtool and ip, {} mismatches",
            run.reference_checks,
            run.failures.len()
        );
        if run.reference_checks == 0 {
            eprintln!("reference: no comparison was made");
            std::process::exit(1);
        }
    }
    if !run.failures.is_empty() {
        std::process::exit(1);
    }
    Ok(())
}
