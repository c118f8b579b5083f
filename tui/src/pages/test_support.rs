//! What the pages' unit tests share: a plain key press, and a page drawn once on a test
//! terminal with the fixtures' "now" (so time-dependent text is the same on every run).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;

use super::{Page, RenderCtx};
use crate::fixtures;
use crate::model::Model;
use crate::theme::Theme;

/// `code` pressed without modifiers.
pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// Draws `page` on a `w`×`h` terminal, in colour.
pub fn draw(page: &mut dyn Page, model: &Model, w: u16, h: u16) -> TestBackend {
    let mut term = ratatui::Terminal::new(TestBackend::new(w, h)).expect("terminal");
    let ctx = RenderCtx {
        model,
        theme: Theme::colored(),
        now_us: fixtures::NOW_US,
    };
    term.draw(|f| page.render(f, f.area(), &ctx)).expect("draw");
    term.backend().clone()
}

/// The text of `page` drawn on a `w`×`h` terminal, each line without its trailing blanks, for
/// an inline snapshot.
pub fn screen(page: &mut dyn Page, model: &Model, w: u16, h: u16) -> String {
    let backend = draw(page, model, w, h);
    let buffer = backend.buffer();
    let mut out = String::new();
    for y in 0..h {
        let line: String = (0..w).map(|x| buffer[(x, y)].symbol()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
