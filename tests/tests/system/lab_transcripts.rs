//! The simulated host must give exactly the transcript the real kernel gave in the kernel lab
//! (recorded in tests/lab/expected/ by `tests/lab/compare.sh BIN DIR --record` after
//! `tests/lab/run-lab.sh`). A difference means the simulation is wrong, or what users see
//! changed (the document's devices and ports, ibstat's text, a line of the scenarios: see
//! tests/lab/README.md, "The transcript") and the lab must be run again.
//!
//! One difference is let through here: a `doc` line of a property that the recording has for
//! no object at all is newer than the recording. CI's kernel lab compares the simulated host
//! with the real kernels it has just run, every line of both, so such a property is checked
//! on the real kernel there; re-recording it is for the next change to the transcripts.

use std::collections::BTreeSet;
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
        let (ours, newer) = without_unrecorded_properties(&expected, &run.transcript);
        if !newer.is_empty() {
            eprintln!("{release}: properties newer than the recording (checked live by CI's kernel lab): {newer:?}");
        }
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

/// The member of a `doc` line (`doc Device/0/Port/1 Port.State "ACTIVE"` -> `Port.State`).
fn doc_member(line: &str) -> Option<&str> {
    let mut words = line.strip_prefix("doc ")?.split(' ');
    words.next()?;
    words.next()
}

/// The simulated transcript without the `doc` lines of members the recording never shows,
/// and those members.
fn without_unrecorded_properties(expected: &str, ours: &[String]) -> (String, BTreeSet<String>) {
    let recorded: BTreeSet<&str> = expected.lines().filter_map(doc_member).collect();
    let mut newer = BTreeSet::new();
    let mut kept = String::new();
    for line in ours {
        match doc_member(line) {
            Some(member) if !recorded.contains(member) => {
                newer.insert(member.to_string());
            }
            _ => {
                kept.push_str(line);
                kept.push('\n');
            }
        }
    }
    (kept, newer)
}

#[test]
fn only_members_the_recording_never_shows_are_let_through() {
    let expected = "doc Device/0 Device.Name \"rxe0\"\ndoc Device/0/Port/1 Port.State \"ACTIVE\"\n";
    let ours: Vec<String> = [
        "doc Device/0 Device.Name \"rxe0\"",
        "doc Device/0/Port/1 Port.State \"ACTIVE\"",
        "doc Device/0/Port/1 Port.ActiveMtu 1024",
    ]
    .map(String::from)
    .to_vec();
    let (kept, newer) = without_unrecorded_properties(expected, &ours);
    assert_eq!(kept, expected);
    assert_eq!(newer, BTreeSet::from(["Port.ActiveMtu".to_string()]));
    // A recorded member with another value, or on a new object, is not let through.
    let changed = vec![
        "doc Device/0 Device.Name \"rxe1\"".to_string(),
        "doc Device/1 Device.Name \"rxe1\"".to_string(),
    ];
    let (kept, newer) = without_unrecorded_properties(expected, &changed);
    assert_eq!(
        kept,
        "doc Device/0 Device.Name \"rxe1\"\ndoc Device/1 Device.Name \"rxe1\"\n"
    );
    assert!(newer.is_empty());
}
