//! How the list pages (IPoIB, soft links, RoCE) draw: the list above the details of the
//! selected row, the note that stands for an empty list, the titled table with its
//! selection, and the details box with the unusable configuration files it is about.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, TableState, Wrap};
use ratatui::Frame;

use crate::model::Model;
use crate::theme::Theme;

/// A list page's areas: the list, as tall as its rows and borders (at least 3 lines), with
/// the details (`details_height` lines) right below it; on a tall screen the rest stays empty.
pub fn list_and_details(area: Rect, rows: usize, details_height: u16) -> [Rect; 2] {
    let list_height = (rows as u16 + 2).max(3);
    let [list, details, _] = Layout::vertical([
        Constraint::Max(list_height),
        Constraint::Length(details_height),
        Constraint::Min(0),
    ])
    .areas(area);
    [list, details]
}

/// What an empty list shows instead: its title, and `text` saying why it is empty and how
/// to fill it.
pub fn render_empty(frame: &mut Frame, area: Rect, title: &str, text: &str, t: Theme) {
    frame.render_widget(
        Paragraph::new(vec![
            Line::styled(title.to_string(), t.title()),
            Line::raw(""),
            Line::raw(text.to_string()),
        ])
        .wrap(Wrap { trim: true }),
        area,
    );
}

/// The list: a title line above a table of `body` under `header`, row `sel` selected.
pub fn render_table(
    frame: &mut Frame,
    area: Rect,
    title: String,
    table: Table<'_>,
    header: Vec<&str>,
    sel: usize,
    t: Theme,
) {
    let [title_area, table_area] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(area);
    frame.render_widget(Paragraph::new(Line::styled(title, t.title())), title_area);
    let mut state = TableState::default().with_selected(Some(sel));
    frame.render_stateful_widget(
        table
            .header(Row::new(header).style(t.dim()))
            .row_highlight_style(t.selected())
            .highlight_symbol("> "),
        table_area,
        &mut state,
    );
}

/// A line for each configuration file ending in `file` that the daemon found unusable: until
/// it is fixed, `what` (the page's changes) are refused.
pub fn config_errors(model: &Model, file: &str, what: &str, t: Theme) -> Vec<Line<'static>> {
    model
        .manager
        .config_errors
        .iter()
        .filter(|(path, _)| path.ends_with(file))
        .map(|(path, reason)| {
            Line::styled(
                format!("! {path} is unusable ({reason}): {what} are refused until it is fixed"),
                t.bad(),
            )
        })
        .collect()
}

/// The details of the selected row, below a line that parts them from the list.
pub fn render_details(frame: &mut Frame, area: Rect, lines: Vec<Line<'_>>, t: Theme) {
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(Block::default().borders(Borders::TOP).border_style(t.dim())),
        area,
    );
}
