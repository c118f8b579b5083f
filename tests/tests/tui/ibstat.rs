//! `rdma-tui --ibstat` (the real binary, reading the D-Bus objects) against
//! `rdma-managerd show --simulate=DIR` (the real binary, reading the same simulated sysfs
//! tree): the same bytes for every device, one device, one port, and the same failures.
//! The daemon serves the simulated host in this process on a private bus.
//!
//! The two programs are taken from the directory cargo builds them into (next to this test's
//! `deps/`), or from `RDMA_TUI_BIN` and `RDMA_MANAGERD_BIN`. `cargo nextest run --workspace`
//! (the README's command, and CI's) builds them; with `-p rdma-manager-tests` alone build them
//! first (`cargo build -p rdma-tui -p rdma-managerd`), or the test skips (fails under
//! `RDMA_MANAGER_REQUIRE_TOOLS=1`) or runs stale binaries.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use rdma_manager_tests::bus::tools_required;
use rdma_manager_tests::service::{serve_sim, session_bus_or_skip};
use rdma_managerd::engine::EngineConfig;
use rdma_managerd::kernel::sim::{fixtures, HostSpec, SimHost};
use tokio::process::Command;

/// A workspace binary: `$env` if set, else next to this test's `deps/` directory.
fn workspace_bin(name: &str, env: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?;
    let p = profile_dir.join(name);
    p.is_file().then_some(p)
}

struct Bins {
    tui: PathBuf,
    managerd: PathBuf,
}

fn bins_or_skip() -> Option<Bins> {
    let tui = workspace_bin("rdma-tui", "RDMA_TUI_BIN");
    let managerd = workspace_bin("rdma-managerd", "RDMA_MANAGERD_BIN");
    match (tui, managerd) {
        (Some(tui), Some(managerd)) => Some(Bins { tui, managerd }),
        _ => {
            let why = "rdma-tui or rdma-managerd is not built: run `cargo build -p rdma-tui -p rdma-managerd` or `cargo nextest run --workspace`, or set RDMA_TUI_BIN and RDMA_MANAGERD_BIN";
            assert!(!tools_required(), "{why}");
            eprintln!("skipping: {why}");
            None
        }
    }
}

/// Standard output, standard error and success of one run.
struct Ran {
    stdout: String,
    stderr: String,
    ok: bool,
}

async fn run(program: &Path, args: &[&str]) -> Result<Ran> {
    let out = Command::new(program)
        .args(args)
        // Error messages without anyhow's backtrace, whatever the caller's environment.
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .with_context(|| format!("{} {args:?} did not finish in 60 s", program.display()))?
        .with_context(|| format!("running {}", program.display()))?;
    Ok(Ran {
        stdout: String::from_utf8(out.stdout).context("stdout is not UTF-8")?,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        ok: out.status.success(),
    })
}

/// The names ibstat lists, from `rdma-managerd show`'s output (`CA 'name'` lines).
fn listed_names(ibstat: &str) -> Vec<String> {
    ibstat
        .lines()
        .filter(|l| !l.starts_with('\t'))
        .filter_map(|l| l.split_once(" '"))
        .filter_map(|(_, rest)| rest.strip_suffix('\''))
        .map(str::to_string)
        .collect()
}

/// `rdma-tui --address=ADDRESS --ibstat ARGS...`.
async fn tui(bins: &Bins, address: &str, extra: &[&str]) -> Result<Ran> {
    let address = format!("--address={address}");
    let mut args = vec![address.as_str(), "--ibstat"];
    args.extend_from_slice(extra);
    run(&bins.tui, &args).await
}

/// `rdma-managerd show --simulate=DIR --sim-host=SPEC ARGS...`.
async fn show(bins: &Bins, dir: &Path, sim_host: &str, extra: &[&str]) -> Result<Ran> {
    let dir = format!("--simulate={}", dir.display());
    let host = format!("--sim-host={sim_host}");
    let mut args = vec!["show", dir.as_str(), host.as_str()];
    args.extend_from_slice(extra);
    run(&bins.managerd, &args).await
}

/// Serves `spec` (`--sim-host=sim_host` for `show`) and compares the two programs: every
/// device, ibstat's options (`-l`, `-s`, `-p`, combined, with the first device), then `DEV`,
/// `DEV 0`, `DEV 1` and `DEV 2` for each device named in `one_by_one`
/// (all when `None`; each `show` renders the whole tree again, about a second). Gives
/// `rdma-tui --ibstat`'s output, `None` when the test cannot run here.
async fn compare(
    spec: HostSpec,
    sim_host: &str,
    one_by_one: Option<&[&str]>,
) -> Result<Option<String>> {
    let Some(bins) = bins_or_skip() else {
        return Ok(None);
    };
    let Some(bus) = session_bus_or_skip() else {
        return Ok(None);
    };
    let dir = tempfile::tempdir()?;
    // Every `show` renders the host's tree into DIR again and reads it, so all of them run
    // first; then the daemon serves DIR, rendered once more from the same description, and
    // nothing touches it while rdma-tui reads the objects.
    let shown = show(&bins, dir.path(), sim_host, &[]).await?;
    ensure!(shown.ok, "rdma-managerd show failed: {}", shown.stderr);
    let listed = listed_names(&shown.stdout);
    ensure!(!listed.is_empty(), "no device in {}", shown.stdout);
    let names: Vec<&str> = match one_by_one {
        Some(some) => some.to_vec(),
        None => listed.iter().map(String::as_str).collect(),
    };
    let ports: Vec<String> = (0..=2).map(|p| p.to_string()).collect();
    let mut cases: Vec<Vec<&str>> = vec![vec!["nosuch"]];
    // ibstat's options, alone and combined (-p before -l before -s), then with a device.
    cases.extend([
        vec!["-l"],
        vec!["-s"],
        vec!["-p"],
        vec!["-lp"],
        vec!["--short"],
    ]);
    cases.push(vec!["-p", "nosuch"]);
    if let Some(first) = names.first().copied() {
        cases.extend([
            vec!["-l", first],
            vec!["-p", first],
            vec!["-s", first, "1"],
            vec![first, "0x1"],
            vec![first, "--port_list"],
        ]);
    }
    for name in names {
        cases.push(vec![name]);
        cases.extend(ports.iter().map(|p| vec![name, p.as_str()]));
    }
    let mut theirs = Vec::new();
    for case in &cases {
        theirs.push(show(&bins, dir.path(), sim_host, case).await?);
    }

    let sim = SimHost::in_dir(dir.path(), spec)?;
    let _served = serve_sim(&bus, &sim, EngineConfig::default()).await?;
    let address = bus.address();

    // `show` prints the IPoIB table after ibstat's output, after a blank line. The daemon may
    // still be publishing right after it started: the first comparison waits for it.
    let deadline = Instant::now() + Duration::from_secs(15);
    let all = loop {
        let all = tui(&bins, address, &[]).await?;
        let rest = shown.stdout.strip_prefix(all.stdout.as_str());
        let complete = rest.is_some_and(|r| r.is_empty() || r.starts_with("\nIPoIB interfaces:\n"));
        if all.ok && complete && !all.stdout.is_empty() {
            break all;
        }
        if Instant::now() > deadline {
            bail!(
                "rdma-tui --ibstat (ok: {}, stderr: {}):\n{}\n--- is not the ibstat part of rdma-managerd show:\n{}",
                all.ok,
                all.stderr,
                all.stdout,
                shown.stdout
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };

    for (case, theirs) in cases.iter().zip(&theirs) {
        let ours = tui(&bins, address, case).await?;
        ensure!(
            ours.stdout == theirs.stdout && ours.ok == theirs.ok,
            "{case:?}: rdma-tui (ok {}):\n{}{}\n--- rdma-managerd show (ok {}):\n{}{}",
            ours.ok,
            ours.stdout,
            ours.stderr,
            theirs.ok,
            theirs.stdout,
            theirs.stderr
        );
        if !ours.ok {
            // ibstat's message from both: "'nosuch' IB device can't be found",
            // "CA: 'x' has no port number N - max (M)". Nothing on stdout.
            let msg = theirs.stderr.lines().next().unwrap_or_default();
            ensure!(
                (msg.contains("IB device can't be found") || msg.contains("has no port number"))
                    && ours.stderr.contains(msg)
                    && ours.stdout.is_empty(),
                "{case:?}: {:?} and {:?}",
                ours.stderr,
                theirs.stderr
            );
        }
    }
    // A device ibstat does not list.
    ensure!(
        theirs
            .first()
            .is_some_and(|r| !r.ok && r.stderr.contains("'nosuch' IB device can't be found")),
        "rdma-managerd show nosuch: {:?}",
        theirs.first().map(|r| &r.stderr)
    );
    Ok(Some(all.stdout))
}

/// The demo host: an mlx4 with an IB and an Ethernet port, two ConnectX, rxe0 (FDR10, empty
/// CA type and hardware version).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_ibstat_equals_show_on_the_demo_host() -> Result<()> {
    if let Some(out) = compare(fixtures::demo_host(), "demo", None).await? {
        ensure!(out.contains("CA 'rxe0'\n\tCA type: \n"), "{out}");
        ensure!(out.contains("\t\tRate: 10 (FDR10)\n"), "{out}");
    }
    Ok(())
}

/// The naming host: an onboard HCA, a PF and its VF, a sub-function, rxe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_ibstat_equals_show_on_the_naming_host() -> Result<()> {
    compare(fixtures::naming_host(), "naming", None)
        .await
        .map(drop)
}

/// Twelve generated HCAs: ibstat's strcmp order (`mlx5_10` before `mlx5_2`), not the
/// kernel's index order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_ibstat_equals_show_in_strcmp_order() -> Result<()> {
    if let Some(out) = compare(
        fixtures::large_host(12, 2, 1),
        "large:12:2:1",
        Some(&["mlx5_10", "mlx5_2"]),
    )
    .await?
    {
        let names = listed_names(&out);
        let pos = |n: &str| names.iter().position(|x| x == n);
        ensure!(
            pos("mlx5_1") < pos("mlx5_10") && pos("mlx5_11") < pos("mlx5_2"),
            "{names:?}"
        );
        ensure!(
            pos("mlx5_0").is_some() && pos("mlx5_11").is_some(),
            "{names:?}"
        );
    }
    Ok(())
}
