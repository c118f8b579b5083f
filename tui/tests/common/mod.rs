//! Driving the application as a person would, without a terminal or a bus: keys in, calls
//! out, answers back, and the screen as text.

#![allow(dead_code)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;
use rdma_tui::app::App;
use rdma_tui::client::{Call, CallError, CallOutput, ErrorKind, NamePreview, Update};
use rdma_tui::fixtures;
use rdma_tui::pages::PageId;
use rdma_tui::theme::Theme;

/// The demo host with `page` shown.
pub fn app_on(page: PageId) -> App {
    let mut app = App::with_model(fixtures::demo_model(), Theme::colored());
    app.show(page);
    app
}

/// The screen drawn at `w` x `h`.
pub fn buffer(app: &mut App, w: u16, h: u16) -> Buffer {
    let mut term = match Terminal::new(TestBackend::new(w, h)) {
        Ok(t) => t,
        Err(e) => panic!("test terminal: {e}"),
    };
    if let Err(e) = term.draw(|f| app.render(f, fixtures::NOW_US)) {
        panic!("draw: {e}");
    }
    term.backend().buffer().clone()
}

/// The screen as text, one line per row (what a snapshot holds).
pub fn screen(app: &mut App, w: u16, h: u16) -> String {
    let b = buffer(app, w, h);
    let mut out = String::new();
    for y in 0..h {
        for x in 0..w {
            out.push_str(b[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

pub fn press(app: &mut App, code: KeyCode) {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
}

pub fn ctrl(app: &mut App, c: char) {
    app.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL));
}

/// Types `text`, one key per character.
pub fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        press(app, KeyCode::Char(c));
    }
}

/// The calls the application asked for, without their ids, but for the reads of IP settings
/// the IPoIB page makes by itself whenever its selection moves (tests of those use
/// `App::take_calls`).
pub fn calls(app: &mut App) -> Vec<Call> {
    app.take_calls()
        .into_iter()
        .map(|(_, c)| c)
        .filter(|c| !matches!(c, Call::GetIpSettings { .. }))
        .collect()
}

/// Answers every call asked for so far with `result`; returns the calls. The IPoIB page's own
/// reads of IP settings are left unanswered and out (as [`calls`] leaves them out).
pub fn answer_all(app: &mut App, result: Result<CallOutput, CallError>) -> Vec<Call> {
    let taken: Vec<(u64, Call)> = app
        .take_calls()
        .into_iter()
        .filter(|(_, c)| !matches!(c, Call::GetIpSettings { .. }))
        .collect();
    for (id, call) in &taken {
        app.apply(Update::CallDone {
            id: *id,
            call: call.clone(),
            result: result.clone(),
        });
    }
    taken.into_iter().map(|(_, c)| c).collect()
}

/// Answers the preview read the naming page asked for with the demo host's preview.
pub fn answer_preview(app: &mut App) {
    for (id, call) in app.take_calls() {
        let result = if call == Call::PreviewRdmaNames {
            Ok(CallOutput::Preview(demo_preview()))
        } else {
            Ok(CallOutput::Done)
        };
        app.apply(Update::CallDone { id, call, result });
    }
}

/// What polkit's refusal looks like, as the daemon words it.
pub fn not_authorized() -> CallError {
    CallError {
        kind: ErrorKind::NotAuthorized,
        message: "Not authorized to perform org.rdmamanager.rdmamanager1.manage-ipoib: polkit \
                  refused the caller; an administrator can grant \
                  org.rdmamanager.rdmamanager1.manage-ipoib with a polkit rule, for example by \
                  adding the user to group rdma with the example rules rdma-manager ships \
                  (50-rdma-manager-rdma-group.rules), which grant it from an active login \
                  session, local or over SSH."
            .into(),
    }
}

/// PreviewRdmaNames of the demo host, as the simulated daemon answered it.
pub fn demo_preview() -> Vec<NamePreview> {
    let row = |device: &str, policy: &str, name: &str, active: bool, reason: &str| NamePreview {
        device: device.into(),
        policy: policy.into(),
        name: name.into(),
        active,
        reason: reason.into(),
    };
    let kernel = "NAME_KERNEL keeps the name the kernel gives the device";
    let not_onboard = "its parent has neither acpi_index nor index: not an onboard device";
    let user = "its name was given by the user (the kernel reports NAME_ASSIGN_TYPE user, as for \
                rxe and siw); rdma_rename leaves it alone";
    let mut v = Vec::new();
    for (d, pci, guid) in [
        ("mlx4_1", "ibp4s0", "ibxf452140300039380"),
        ("mlx5_0", "ibp59s0f0", "ibxb8599f0300d4e62a"),
        ("mlx5_1", "rocep59s0f1", "rocex0e42a1fffe5e2291"),
    ] {
        v.push(row(d, "NAME_KERNEL", "", false, kernel));
        v.push(row(d, "NAME_ONBOARD", "", false, not_onboard));
        v.push(row(d, "NAME_PCI", pci, false, ""));
        v.push(row(d, "NAME_GUID", guid, false, ""));
        v.push(row(d, "NAME_FALLBACK", pci, true, ""));
    }
    v.push(row("rxe0", "NAME_KERNEL", "", false, kernel));
    for p in ["NAME_ONBOARD", "NAME_PCI", "NAME_GUID", "NAME_FALLBACK"] {
        v.push(row("rxe0", p, "", p == "NAME_FALLBACK", user));
    }
    v
}

pub const IPOIB_IB0: &str = "/org/rdmamanager/RdmaManager1/Ipoib/2";
pub const IPOIB_MLX5: &str = "/org/rdmamanager/RdmaManager1/Ipoib/10";
pub const IPOIB_8002: &str = "/org/rdmamanager/RdmaManager1/Ipoib/11";
