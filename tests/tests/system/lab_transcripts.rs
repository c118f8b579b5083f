//! The simulated host must give exactly the transcript the real kernel gave in the kernel lab
//! (recorded in tests/lab/expected/ by `tests/lab/compare.sh BIN DIR --record` after
//! `tests/lab/run-lab.sh`). A difference means the simulation is wrong, or what users see
//! changed (the document's devices and ports, ibstat's text, a line of the scenarios: see
//! tests/lab/README.md, "The transcript") and the lab must be run again.

use std::path::Path;
use std::sync::Arc;

use rdma_manager_tests::scenarios::{run_all, Run};
use rdma_managerd::kernel::sim::{fixtures, SimHost};

#[tokio::test]
async fn simulated_host_agrees_with_recorded_real_kernels() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("lab/expected");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/lab/expected exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "transcript"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no recorded kernel transcripts in {}",
        dir.display()
    );
    for file in files {
        let release = file
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        let expected = std::fs::read_to_string(&file).expect("readable transcript");
        let host = SimHost::new(fixtures::lab_host(&release)).expect("lab host");
        let mut run = Run::new(Arc::new(host), None).await.expect("subscribe");
        run_all(&mut run).await;
        let ours = run.transcript.join("\n") + "\n";
        if ours != expected {
            let mut diff = String::new();
            for (i, (a, b)) in expected.lines().zip(ours.lines()).enumerate() {
                if a != b {
                    diff.push_str(&format!("line {}:\n  kernel: {a}\n  sim:    {b}\n", i + 1));
                }
            }
            panic!(
                "simulated host differs from kernel {release} ({} vs {} lines):\n{diff}",
                expected.lines().count(),
                ours.lines().count()
            );
        }
    }
}
