//! rdma-tui as a person uses it: the real binary in a tmux pane, against rdma-managerd on a
//! private system bus with the project's bus policy and the real polkitd (tests/src/service.rs
//! `SystemSetup`). Keys go in with `send-keys`, the screen comes back with `capture-pane`.

use std::time::Duration;

use anyhow::{ensure, Result};
use rdma_manager_tests::bus::{Credentials, PolkitConfig};
use rdma_manager_tests::service::SystemSetup;
use rdma_manager_tests::tmux::{workspace_bin, Tmux};

const WAIT: Duration = Duration::from_secs(20);

/// The client as `who` (root when None) on the setup's bus, in a 100x30 pane.
fn start_client(t: &SystemSetup, who: Option<&Credentials>) -> Result<Tmux> {
    let bin = workspace_bin("rdma-tui")?;
    let drop_to = match who {
        Some(c) => format!(
            "setpriv --reuid={} --regid={} --clear-groups -- ",
            c.uid, c.gid
        ),
        None => String::new(),
    };
    let cmd = format!("{drop_to}{} --address={}", bin.display(), t.bus.address());
    Tmux::start(&cmd, 100, 30, &[("NO_COLOR", "1")])
}

fn skip() -> bool {
    if let Some(reason) = rdma_manager_tests::bus::skip_reason() {
        eprintln!("skipping: {reason}");
        return true;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigate_and_create_an_ipoib_child_that_appears() -> Result<()> {
    if skip() {
        return Ok(());
    }
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let tui = start_client(&t, None)?;
    // The overview: every device, with its ports' state and interfaces.
    let s = tui.wait_for_text("mlx5_0", WAIT)?;
    for needle in ["mlx4_1", "mlx5_1", "rxe0", "ACTIVE", "ibp59s0f0"] {
        ensure!(s.contains(needle), "{needle} not on the overview:\n{s}");
    }
    // Enter opens the selected port's detail (the first: mlx4_1 port 1) with ibstat's fields.
    tui.keys(&["Enter"])?;
    let s = tui.wait_for_text("Capability mask", WAIT)?;
    ensure!(s.contains("mlx4_1"), "{s}");
    // The bandwidth page of that port.
    tui.keys(&["3"])?;
    tui.wait_for_text("TX", WAIT)?;
    // The IPoIB page: select mlx5_0's interface and make a P_Key child.
    tui.keys(&["4"])?;
    tui.wait_for_text("ibp59s0f0.8002", WAIT)?;
    tui.keys(&["Down", "n"])?;
    tui.wait_for_text("P_Key", WAIT)?;
    tui.type_text("8005")?;
    tui.wait_for_text("ibp59s0f0.8005", WAIT)?;
    tui.keys(&["Enter"])?;
    // The form closes and the child, published by the daemon, is listed.
    let s = tui.wait_for("the new child in the list", WAIT, |s| {
        !s.contains("New P_Key child")
            && s.lines().any(|l| {
                let row = l.trim_start_matches(['>', ' ']);
                row.starts_with("ibp59s0f0.8005 ") && row.contains("0x8005")
            })
    })?;
    ensure!(!s.contains("Cannot"), "{s}");
    // And it exists in the (simulated) kernel and is remembered.
    ensure!(
        t.sim.kernel_snapshot().contains("ibp59s0f0.8005"),
        "not in the kernel"
    );
    let remembered = t
        .etc_file("/etc/rdma-manager/ipoib.toml")
        .unwrap_or_default();
    ensure!(remembered.contains("8005"), "ipoib.toml:\n{remembered}");
    // q quits.
    tui.keys(&["Escape", "q"])?;
    tui.wait_for_text("[exited 0]", WAIT)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_create_names_the_action_and_keeps_the_form() -> Result<()> {
    if skip() {
        return Ok(());
    }
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        ensure!(
            !rdma_manager_tests::bus::tools_required(),
            "running the client as another user needs root"
        );
        eprintln!("skipping: running the client as another user needs root");
        return Ok(());
    }
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    let before = t.sim.kernel_snapshot();
    // An unprivileged user, not in group rdma: polkit wants an administrator's password, which
    // a full-screen client does not ask for.
    let user = Credentials::test_user(false);
    let tui = start_client(&t, Some(&user))?;
    tui.wait_for_text("mlx5_0", WAIT)?;
    tui.keys(&["4"])?;
    tui.wait_for_text("ibp59s0f0.8002", WAIT)?;
    tui.keys(&["Down", "n"])?;
    tui.wait_for_text("P_Key", WAIT)?;
    tui.type_text("8005")?;
    tui.keys(&["Enter"])?;
    let s = tui.wait_for_text("org.rdmamanager.rdmamanager1.manage-ipoib", WAIT)?;
    // The form is still open with what was typed, and says how to get the action.
    ensure!(s.contains("New P_Key child") && s.contains("[8005"), "{s}");
    ensure!(
        s.contains("rdma") && (s.contains("polkit") || s.contains("authoriz")),
        "{s}"
    );
    ensure!(t.sim.kernel_snapshot() == before, "the kernel changed");
    Ok(())
}

/// Opens the RoCE form of rxe0/1 and applies ToS `tos`.
fn set_rxe_tos(tui: &Tmux, tos: &str) -> Result<()> {
    tui.wait_for_text("mlx5_0", WAIT)?;
    tui.keys(&["6"])?;
    tui.wait_for_text("RoCE ports", WAIT)?;
    tui.keys(&["End", "Enter"])?;
    tui.wait_for_text("RoCE defaults of rxe0/1", WAIT)?;
    tui.keys(&["Tab", "C-u"])?;
    tui.type_text(tos)?;
    tui.keys(&["Enter"])
}

/// The RoCE form applies the port's entry of the state document (ApplyState): refused for a
/// user without the action, with the action named and nothing changed; done for root, shown
/// in the port's row and remembered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_roce_form_applies_through_the_state() -> Result<()> {
    if skip() {
        return Ok(());
    }
    let t = SystemSetup::new(false, PolkitConfig::rdma_manager()).await?;
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let user = Credentials::test_user(false);
        let tui = start_client(&t, Some(&user))?;
        set_rxe_tos(&tui, "32")?;
        let s = tui.wait_for_text("org.rdmamanager.rdmamanager1.manage-roce", WAIT)?;
        ensure!(
            s.contains("RoCE defaults of rxe0/1") && s.contains("[32"),
            "{s}"
        );
        ensure!(
            t.etc_file("/etc/rdma-manager/roce.toml").is_none(),
            "remembered although refused"
        );
    }
    let tui = start_client(&t, None)?;
    set_rxe_tos(&tui, "32")?;
    let s = tui.wait_for("ToS 32 in rxe0/1's row", WAIT, |s| {
        !s.contains("RoCE defaults of")
            && s.lines().any(|l| {
                let row = l.trim_start_matches(['>', ' ']);
                row.starts_with("rxe0/1 ") && row.split_whitespace().nth(5) == Some("32")
            })
    })?;
    ensure!(!s.contains("Cannot"), "{s}");
    let remembered = t
        .etc_file("/etc/rdma-manager/roce.toml")
        .unwrap_or_default();
    ensure!(remembered.contains("tos = 32"), "roce.toml:\n{remembered}");
    Ok(())
}
