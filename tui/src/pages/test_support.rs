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
