//! (placeholder until this page is written)

use crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{Outcome, Page, PageId, RenderCtx};
use crate::model::Model;

#[derive(Debug, Default)]
pub struct DetailPage {}

impl Page for DetailPage {
    fn id(&self) -> PageId {
        PageId::Detail
    }

    fn render(&mut self, frame: &mut Frame, area: Rect, _ctx: &RenderCtx) {
        frame.render_widget(Paragraph::new("not written yet"), area);
    }

    fn handle_key(&mut self, _key: KeyEvent, _model: &Model) -> Outcome {
        Outcome::Ignored
    }
}
