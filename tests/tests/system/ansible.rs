//! The Ansible collection `rdmamanager.rdma` (`ansible/ansible_collections/rdmamanager/rdma`):
//! `ansible-test sanity` on it (through `ansible/tests/sanity.sh`), the unit tests of its pure
//! parts, and a playbook (`ansible/tests/e2e/playbook.yml`) that `ansible-playbook` runs with
//! connection local against rdma-managerd on the simulated demo host, on a private system bus
//! with the project's bus policy and the real polkitd, through the real `rdma-cli`; and the
//! confirm-or-rollback over the ssh connection when the confirmation cannot get through
//! (`ansible/tests/e2e/cut-off.yml`). The installed tree (`make install`) is read by ansible-doc.
//!
//! A check whose tool is missing (ansible-core, python3) prints why and passes, unless
//! `RDMA_MANAGER_REQUIRE_TOOLS=1` is set (CI), where it fails.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use rdma_manager_tests::bus::{tools_required, PolkitConfig};
use rdma_manager_tests::service::SystemSetup;
use rdma_manager_tests::tmux::workspace_bin;
use tokio::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lives in the workspace")
        .to_path_buf()
}

fn collection() -> PathBuf {
    repo().join("ansible/ansible_collections/rdmamanager/rdma")
}

/// The tool on PATH, or `None` after saying which package provides it (an error when CI asks
/// for every tool).
fn tool(name: &str, package: &str) -> Result<Option<PathBuf>> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        if tools_required() {
            bail!("{name} is missing (Debian package {package}) and RDMA_MANAGER_REQUIRE_TOOLS=1");
        }
        eprintln!("skipping: {name} not found (Debian package {package})");
    }
    Ok(found)
}

/// Runs `cmd` to its end within `limit`.
async fn run(cmd: &mut Command, limit: Duration) -> Result<Output> {
    let what = format!("{cmd:?}");
    tokio::time::timeout(limit, cmd.kill_on_drop(true).output())
        .await
        .with_context(|| format!("{what} did not finish in {} s", limit.as_secs()))?
        .with_context(|| format!("running {what}"))
}

fn transcript(out: &Output) -> String {
    format!(
        "({})\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test]
async fn ansible_collection_passes_ansible_test_sanity() -> Result<()> {
    if tool("ansible-test", "ansible-core")?.is_none() {
        return Ok(());
    }
    // The virtual environments ansible-test builds are kept under target/ between runs.
    let home = repo().join("target/ansible-test-home");
    let out = run(
        Command::new(repo().join("ansible/tests/sanity.sh"))
            .env("ANSIBLE_TEST_HOME", &home)
            .stdin(Stdio::null()),
        Duration::from_secs(1200),
    )
    .await?;
    let text = transcript(&out);
    ensure!(out.status.success(), "ansible-test sanity failed {text}");
    // The tests that read the modules' documentation and argument specs did run.
    for test in [
        "validate-modules",
        "ansible-doc",
        "pylint",
        "import",
        "yamllint",
    ] {
        ensure!(
            text.contains(&format!("Running sanity test \"{test}\"")),
            "sanity test {test} did not run {text}"
        );
    }
    Ok(())
}

/// The Python that runs ansible-core (`ansible --version` names it last: "python version =
/// 3.11.2 (main, ...) [GCC 12.2.0] (/usr/bin/python3)"), or python3 on PATH without ansible.
async fn ansible_python() -> Result<Option<PathBuf>> {
    if let Some(ansible) = tool("ansible", "ansible-core")? {
        let out = run(
            Command::new(ansible).arg("--version"),
            Duration::from_secs(60),
        )
        .await?;
        let text = String::from_utf8_lossy(&out.stdout);
        let python = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("python version = "))
            .and_then(|l| l.rsplit_once('(').map(|(_, p)| p.trim_end_matches(')')))
            .with_context(|| format!("no Python in ansible --version: {text}"))?;
        return Ok(Some(PathBuf::from(python)));
    }
    tool("python3", "python3")
}

#[tokio::test]
async fn ansible_collection_unit_tests_pass() -> Result<()> {
    let Some(python) = ansible_python().await? else {
        return Ok(());
    };
    let has_pytest = run(
        Command::new(&python).args(["-c", "import pytest"]),
        Duration::from_secs(30),
    )
    .await?
    .status
    .success();
    let command = |args: &[&str]| {
        let mut cmd = Command::new(&python);
        cmd.current_dir(collection())
            .env("PYTHONPATH", repo().join("ansible"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .args(args);
        cmd
    };
    let mut runs = Vec::new();
    if has_pytest {
        runs.push(command(&[
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/unit",
        ]));
    } else {
        // unittest discovers one directory of test files without packages at a time.
        for dir in ["module_utils", "action"] {
            let start = format!("tests/unit/plugins/{dir}");
            runs.push(command(&[
                "-m",
                "unittest",
                "discover",
                "-s",
                &start,
                "-p",
                "test_*.py",
            ]));
        }
    }
    for mut cmd in runs {
        let out = run(&mut cmd, Duration::from_secs(120)).await?;
        let text = transcript(&out);
        ensure!(out.status.success(), "the unit tests failed {text}");
        // A run that found no test passes too: it must have run some.
        ensure!(
            !text.contains("Ran 0 tests") && !text.contains("no tests ran"),
            "no unit test ran {text}"
        );
        // The action plugin's tests skip where ansible-core cannot be imported; not in CI.
        ensure!(
            !tools_required() || !text.contains("skipped"),
            "a unit test skipped under RDMA_MANAGER_REQUIRE_TOOLS=1 {text}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn installed_collection_is_found_by_ansible_doc() -> Result<()> {
    let Some(ansible_doc) = tool("ansible-doc", "ansible-core")? else {
        return Ok(());
    };
    if tool("make", "make")?.is_none() {
        return Ok(());
    }
    // `make install` into a scratch root, with placeholders for the programs it installs.
    let dir = tempfile::tempdir()?;
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin)?;
    for b in ["rdma-managerd", "rdma-tui", "rdma-cli", "rdma-exporter"] {
        std::fs::write(bin.join(b), "#!/bin/sh\nexit 0\n")?;
        std::fs::set_permissions(bin.join(b), std::fs::Permissions::from_mode(0o755))?;
    }
    let root = dir.path().join("root");
    let out = run(
        Command::new("make")
            .arg("-C")
            .arg(repo())
            .arg("install")
            .arg(format!("DESTDIR={}", root.display()))
            .arg(format!("BINDIR_SRC={}", bin.display())),
        Duration::from_secs(120),
    )
    .await?;
    ensure!(
        out.status.success(),
        "make install failed {}",
        transcript(&out)
    );
    // ansible-core's default collections path holds /usr/share/ansible/collections: the
    // installed tree, found there, lists and documents every module.
    let collections = root.join("usr/share/ansible/collections");
    let doc = |args: &[&str]| {
        let mut cmd = Command::new(&ansible_doc);
        cmd.args(args)
            .env("ANSIBLE_COLLECTIONS_PATH", &collections)
            .env("ANSIBLE_LOCAL_TEMP", dir.path().join("tmp"))
            .env("ANSIBLE_NOCOLOR", "1");
        cmd
    };
    let out = run(
        &mut doc(&["-t", "module", "-l", "rdmamanager.rdma"]),
        Duration::from_secs(120),
    )
    .await?;
    let list = transcript(&out);
    ensure!(out.status.success(), "ansible-doc -l failed {list}");
    for module in ["rdma_facts", "rdma_state", "rdma_confirm"] {
        ensure!(
            list.contains(&format!("rdmamanager.rdma.{module}")),
            "{module} not listed {list}"
        );
    }
    let out = run(
        &mut doc(&["-t", "module", "rdmamanager.rdma.rdma_state"]),
        Duration::from_secs(120),
    )
    .await?;
    let text = transcript(&out);
    ensure!(out.status.success(), "ansible-doc failed {text}");
    ensure!(text.contains("rollback_timeout"), "{text}");
    Ok(())
}

/// rdma-cli built from this workspace, and whether it answers `show` on the setup's bus: the
/// playbook needs the state commands (`show`, `diff`, `apply`) of both rdma-cli and the daemon.
async fn rdma_cli_with_state(t: &SystemSetup) -> Result<Option<PathBuf>> {
    let missing = |why: String| -> Result<Option<PathBuf>> {
        if tools_required() {
            bail!("{why}, and RDMA_MANAGER_REQUIRE_TOOLS=1 forbids skipping");
        }
        eprintln!("skipping: {why}");
        Ok(None)
    };
    if !repo().join("cli/Cargo.toml").is_file() {
        return missing("rdma-cli (crate cli/) is not in this tree".into());
    }
    let cli = workspace_bin("rdma-cli")?;
    let out = run(
        Command::new(&cli)
            .args(["-j", "show"])
            .env("DBUS_SYSTEM_BUS_ADDRESS", t.bus.address()),
        Duration::from_secs(60),
    )
    .await?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("not built yet") || err.contains("UnknownMethod") {
            return missing(format!(
                "rdma-cli or rdma-managerd lacks the state commands: {err}"
            ));
        }
        bail!("rdma-cli -j show failed {}", transcript(&out));
    }
    Ok(Some(cli))
}

/// The daemon on the simulated demo host on a private system bus under the real polkitd,
/// with rdma-cli; `None` (after saying why) when a test of a playbook cannot run here.
async fn playbook_setup() -> Result<Option<(PathBuf, SystemSetup, PathBuf)>> {
    let Some(playbook) = tool("ansible-playbook", "ansible-core")? else {
        return Ok(None);
    };
    if let Some(reason) = rdma_manager_tests::bus::skip_reason() {
        eprintln!("skipping: {reason}");
        return Ok(None);
    }
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let Some(cli) = rdma_cli_with_state(&t).await? else {
        return Ok(None);
    };
    Ok(Some((playbook, t, cli)))
}

/// Runs `ansible-playbook ARGS ansible/tests/e2e/PLAY` against the setup's daemon and returns
/// its output, printed too (shown with --no-capture); an error when the play fails.
async fn run_playbook(
    playbook: &Path,
    t: &SystemSetup,
    cli: &Path,
    play: &str,
    args: &[&str],
) -> Result<String> {
    let dir = tempfile::tempdir()?;
    // rdma-cli found on PATH, as on a host with the package; the system bus it reaches is the
    // setup's private one (DBUS_SYSTEM_BUS_ADDRESS), and Ansible keeps its files in `dir`.
    let path = std::env::join_paths(
        std::iter::once(cli.parent().context("rdma-cli's directory")?.to_path_buf()).chain(
            std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
                .unwrap_or_default(),
        ),
    )?;
    let out = run(
        Command::new(playbook)
            .current_dir(dir.path())
            .args(args)
            .args(["-e", "ansible_python_interpreter=auto_silent"])
            .arg(repo().join("ansible/tests/e2e").join(play))
            .env("PATH", path)
            .env("DBUS_SYSTEM_BUS_ADDRESS", t.bus.address())
            .env("ANSIBLE_COLLECTIONS_PATH", repo().join("ansible"))
            .env("ANSIBLE_LOCAL_TEMP", dir.path().join("local"))
            .env("ANSIBLE_REMOTE_TEMP", dir.path().join("remote"))
            .env("ANSIBLE_SSH_CONTROL_PATH_DIR", dir.path().join("cp"))
            .env("ANSIBLE_NOCOLOR", "1")
            .env("ANSIBLE_RETRY_FILES_ENABLED", "0")
            .stdin(Stdio::null()),
        Duration::from_secs(600),
    )
    .await?;
    let text = transcript(&out);
    ensure!(out.status.success(), "the playbook {play} failed {text}");
    eprintln!("{text}");
    Ok(text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ansible_playbook_drives_the_daemon_through_rdma_cli() -> Result<()> {
    let Some((playbook, t, cli)) = playbook_setup().await? else {
        return Ok(());
    };
    let before = t
        .etc_file("/etc/rdma-manager/soft-links.toml")
        .unwrap_or_default();
    ensure!(!before.contains("siw0"), "{before}");
    let text = run_playbook(
        &playbook,
        &t,
        &cli,
        "playbook.yml",
        &["-i", "localhost,", "-c", "local"],
    )
    .await?;
    // The recap: every check passed, the two refusals the play expects were ignored.
    ensure!(
        text.contains("failed=0") && text.contains("ignored=2"),
        "unexpected recap {text}"
    );
    // --diff output of the check-mode task, as a person running the play sees it.
    ensure!(
        text.contains("-roce[mlx5_1/1].tos: 106") && text.contains("+roce[mlx5_1/1].tos: 32"),
        "the check-mode diff is not in the output {text}"
    );
    // The confirmed change was saved by the daemon, so it survives a restart.
    let after = t
        .etc_file("/etc/rdma-manager/soft-links.toml")
        .unwrap_or_default();
    ensure!(after.contains("siw0"), "siw0 not saved: {after}");
    // The last ToS, applied from a file with no timeout, was committed and saved at once.
    let roce = t
        .etc_file("/etc/rdma-manager/roce.toml")
        .unwrap_or_default();
    ensure!(roce.contains("tos = 96\n"), "the ToS not saved: {roce}");
    Ok(())
}

/// Over SSH (ansible/tests/e2e/ssh-cut-before-confirm standing in for ssh: it runs commands
/// here, and fails the confirmation's connection as a change that cut the network would), the
/// applied change is not confirmed, the task reports the host unreachable, and the daemon rolls
/// the change back at its timeout (ansible/tests/e2e/cut-off.yml).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ansible_change_that_cuts_off_the_controller_rolls_back() -> Result<()> {
    let Some((playbook, t, cli)) = playbook_setup().await? else {
        return Ok(());
    };
    let ssh = repo().join("ansible/tests/e2e/ssh-cut-before-confirm");
    let ssh_executable = format!("ansible_ssh_executable={}", ssh.display());
    let text = run_playbook(
        &playbook,
        &t,
        &cli,
        "cut-off.yml",
        &[
            "-i",
            "127.0.0.1,",
            "-c",
            "ssh",
            "-e",
            &ssh_executable,
            "-e",
            "ansible_pipelining=true",
        ],
    )
    .await?;
    // Every check of the play passed: the task said the host was unreachable, the change was in
    // force until its timeout, and rolled back after it.
    ensure!(text.contains("failed=0"), "unexpected recap {text}");
    ensure!(
        text.contains("rolls it back by itself when its 10 s timeout passes"),
        "{text}"
    );
    Ok(())
}
