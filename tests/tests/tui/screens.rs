//! What a new user sees of `rdma-tui --demo` in a terminal of 80x24 (and larger) and of
//! 40x10: help that is wrapped, not cut; list pages that show their list; status lines that
//! end with the action's outcome; and, with the bus up but no service, a headline that says
//! so. The real binary in a tmux pane (tests/src/tmux.rs).

use std::time::Duration;

use anyhow::{ensure, Result};
use rdma_manager_tests::bus::PrivateBus;
use rdma_manager_tests::tmux::{workspace_bin, Tmux};

const WAIT: Duration = Duration::from_secs(30);

fn skip() -> bool {
    if let Some(reason) = rdma_manager_tests::bus::skip_reason() {
        eprintln!("skipping: {reason}");
        return true;
    }
    false
}

/// `rdma-tui --demo` in a `w`x`h` pane, once the overview shows the demo host.
fn demo(w: u16, h: u16) -> Result<Tmux> {
    let bin = workspace_bin("rdma-tui")?;
    let tui = Tmux::start(
        &format!("{} --demo", bin.display()),
        w,
        h,
        &[("NO_COLOR", "1")],
    )?;
    tui.wait_for_text("simulated", WAIT)?;
    Ok(tui)
}

/// The rows of the help box, between its borders (the box is centred: the page shows on
/// either side of it).
fn help_rows(screen: &str) -> Vec<String> {
    let lines: Vec<Vec<char>> = screen.lines().map(|l| l.chars().collect()).collect();
    let Some((top, left)) = lines.iter().enumerate().find_map(|(y, l)| {
        let s: String = l.iter().collect();
        s.find("┌ Help").map(|b| (y, s[..b].chars().count()))
    }) else {
        return Vec::new();
    };
    let Some(right) = lines[top].iter().rposition(|c| *c == '┐') else {
        return Vec::new();
    };
    lines[top + 1..]
        .iter()
        .take_while(|l| l.get(left) == Some(&'│'))
        .map(|l| l[left + 1..right.min(l.len())].iter().collect())
        .collect()
}

#[test]
fn the_help_is_wrapped_not_cut() -> Result<()> {
    if skip() {
        return Ok(());
    }
    for (w, h) in [(80, 24), (120, 40)] {
        let tui = demo(w, h)?;
        tui.keys(&["4", "?"])?;
        let s = tui.wait_for_text("This page (IPoIB)", WAIT)?;
        let rows = help_rows(&s);
        ensure!(!rows.is_empty(), "no help box at {w}x{h}:\n{s}");
        for r in &rows {
            ensure!(
                !r.trim_end().ends_with('…') || r.contains("more below"),
                "a help line cut at {w}x{h}: {r:?}\n{s}"
            );
        }
        let text = rows.iter().map(|r| r.trim()).collect::<Vec<_>>().join(" ");
        for whole in [
            "change mode, MTU and umcast; re-create an absent child",
            "IP settings through the host's IP manager: method, addresses, gateway, DNS",
            "keep / roll back a pending IP change",
        ] {
            ensure!(text.contains(whole), "{whole:?} at {w}x{h}:\n{s}");
        }
        if w > 80 {
            let top = s.lines().find(|l| l.contains("┌ Help")).unwrap_or_default();
            ensure!(
                top.trim().chars().count() > 80,
                "the box grows with the terminal: {top:?}"
            );
        }
    }
    Ok(())
}

#[test]
fn small_terminals_show_the_lists() -> Result<()> {
    if skip() {
        return Ok(());
    }
    let tui = demo(40, 10)?;
    for (page, title, row) in [
        ("4", "IPoIB interfaces", "ib0"),
        ("5", "Soft RDMA links", "rxe0"),
        ("6", "RoCE ports", "mlx4_1/2"),
    ] {
        tui.keys(&[page])?;
        let s = tui.wait_for_text(title, WAIT)?;
        ensure!(s.contains(row), "page {page} at 40x10 shows no row:\n{s}");
    }
    Ok(())
}

/// The Naming page's change is followed by a read of its preview: the status line ends with
/// what was done. A new form starts without the last action's status.
#[test]
fn status_lines_end_with_the_outcome_and_clear_under_a_new_form() -> Result<()> {
    if skip() {
        return Ok(());
    }
    let tui = demo(80, 24)?;
    tui.keys(&["7", "p", "Left", "Enter"])?;
    let s = tui.wait_for_text("Done: set naming policy", WAIT)?;
    ensure!(!s.contains("done..."), "{s}");
    // IPoIB: a refusal on the status line, then a new form.
    tui.keys(&["4", "Down", "d"])?;
    tui.wait_for_text("only P_Key children can be deleted", WAIT)?;
    tui.keys(&["Enter"])?;
    // The new form and the cleared status line come in one frame; waiting for both, not for
    // the first capture that shows an `[ Apply ]`, takes no frame drawn before the key.
    tui.wait_for("a new form under a cleared status line", WAIT, |s| {
        s.contains("[ Apply ]") && !s.contains("only P_Key children can be deleted")
    })?;
    Ok(())
}

/// The bus answers but rdma-managerd is not on it: the headline says the service is
/// missing, not that the host has no RDMA devices.
#[test]
fn a_missing_service_is_said_as_such() -> Result<()> {
    if skip() {
        return Ok(());
    }
    let bus = PrivateBus::session()?;
    let bin = workspace_bin("rdma-tui")?;
    let tui = Tmux::start(
        &format!("{} --address={}", bin.display(), bus.address()),
        80,
        24,
        &[("NO_COLOR", "1")],
    )?;
    let s = tui.wait_for_text("not on the bus", WAIT)?;
    let s = tui
        .wait_for("the headline", WAIT, |s| {
            s.contains("rdma-managerd is not on the bus: nothing is known")
        })
        .map_err(|e| anyhow::anyhow!("{e}\nfirst screen:\n{s}"))?;
    ensure!(!s.contains("No RDMA devices"), "{s}");
    Ok(())
}
