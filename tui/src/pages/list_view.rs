//! How the list pages (IPoIB, soft links, RoCE) draw: the list above the details of the
//! selected row, the note that stands for an empty list, the titled table with its
//! selection, and the details box with the unusable configuration files it is about.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, TableState, Wrap};
use ratatui::Frame;

use crate::model::Model;
use crate::theme::Theme;
use crate::widgets::{fit, ELLIPSIS};

/// A list page's areas: the list, as tall as its rows and borders (at least 3 lines), with
/// the details (`details_height` lines) right below it; on a tall screen the rest stays empty.
/// Where both do not fit, the list keeps at least half the height (it scrolls to the
/// selected row) and the details get the rest: a small terminal still shows the list.
pub fn list_and_details(area: Rect, rows: usize, details_height: u16) -> [Rect; 2] {
    let want = (rows as u16).saturating_add(2).max(3);
    let list_height = if want.saturating_add(details_height) <= area.height {
        want
    } else {
        let half = area.height.div_ceil(2).max(area.height.min(3));
        want.min(area.height.saturating_sub(details_height).max(half))
    };
    let list = Rect {
        height: list_height.min(area.height),
        ..area
    };
    let details = Rect {
        y: area.y + list.height,
        height: details_height.min(area.height - list.height),
        ..area
    };
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

/// The list: a title line above a table of `rows` under `header`, row `sel` selected.
/// `widths` are the columns' widths where there is room; in a narrower terminal the columns
/// that fit are shown, the last of them narrowed, every cell cut with the marker, and a last
/// column of markers says that more columns are left out.
#[allow(clippy::too_many_arguments)]
pub fn render_table(
    frame: &mut Frame,
    area: Rect,
    title: String,
    rows: Vec<TableRow<'static>>,
    widths: &[u16],
    header: &[&str],
    sel: usize,
    t: Theme,
) {
    let [title_area, table_area] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(area);
    frame.render_widget(
        Paragraph::new(Line::styled(
            fit(&title, title_area.width as usize),
            t.title(),
        )),
        title_area,
    );
    let shown = shown_columns(
        widths,
        table_area.width.saturating_sub(HIGHLIGHT_WIDTH) as usize,
    );
    let cut = shown.len() < widths.len();
    let fit_row = |cells: &[Span<'static>]| -> Vec<Cell<'static>> {
        let mut out: Vec<Cell<'static>> = shown
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let span = cells.get(i).cloned().unwrap_or_default();
                Cell::from(Span::styled(fit(&span.content, *w), span.style))
            })
            .collect();
        if cut {
            out.push(Cell::from(Span::styled(ELLIPSIS, t.dim())));
        }
        out
    };
    let head: Vec<Span<'static>> = header.iter().map(|h| Span::raw(h.to_string())).collect();
    let body: Vec<Row<'static>> = rows
        .iter()
        .map(|r| Row::new(fit_row(&r.cells)).style(r.style))
        .collect();
    let mut constraints: Vec<Constraint> = shown
        .iter()
        .map(|w| Constraint::Length(*w as u16))
        .collect();
    if cut {
        constraints.push(Constraint::Length(1));
    }
    let mut state = TableState::default().with_selected(Some(sel));
    frame.render_stateful_widget(
        Table::new(body, constraints)
            .header(Row::new(fit_row(&head)).style(t.dim()))
            .row_highlight_style(t.selected())
            .highlight_symbol("> "),
        table_area,
        &mut state,
    );
}

/// The highlight symbol's width (`> `), which the table keeps before every row.
const HIGHLIGHT_WIDTH: u16 = 2;

/// A row of the list: its cells, and a style for the whole row.
#[derive(Debug, Clone, Default)]
pub struct TableRow<'a> {
    pub cells: Vec<Span<'a>>,
    pub style: ratatui::style::Style,
}

impl<'a> TableRow<'a> {
    pub fn new(cells: Vec<Span<'a>>) -> TableRow<'a> {
        TableRow {
            cells,
            style: Default::default(),
        }
    }
}

/// The widths of the columns that fit in `room` columns (one space between two, and one
/// kept for the marker of left-out columns when some are): each as wide as asked, the last
/// one shown narrowed to what is left (at least 3, or it is left out too).
fn shown_columns(widths: &[u16], room: usize) -> Vec<usize> {
    let total: usize =
        widths.iter().map(|w| *w as usize).sum::<usize>() + widths.len().saturating_sub(1);
    if total <= room {
        return widths.iter().map(|w| *w as usize).collect();
    }
    // Some are left out: the marker's column and its space come off the room.
    let room = room.saturating_sub(2);
    let mut out = Vec::new();
    let mut used = 0;
    for (i, w) in widths.iter().enumerate() {
        let sep = usize::from(i > 0);
        let left = room.saturating_sub(used + sep);
        if left < 3 && i > 0 {
            break;
        }
        let w = (*w as usize).min(left);
        out.push(w);
        used += sep + w;
        if w < left {
            continue;
        }
        break;
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A small terminal still shows the list: at 40x10 a page's body is 7 lines, as tall as
    /// the details alone; the list keeps at least half.
    #[test]
    fn the_list_keeps_half_a_short_screen() {
        let area = Rect::new(0, 1, 40, 7);
        let [list, details] = list_and_details(area, 6, 7);
        assert!(list.height >= 4, "{list:?}");
        assert_eq!(details.y, list.y + list.height);
        assert!(details.y + details.height <= area.y + area.height);
        // With room for both: the list as tall as its rows, the details below.
        let [list, details] = list_and_details(Rect::new(0, 1, 80, 21), 6, 7);
        assert_eq!((list.height, details.height), (8, 7));
    }

    #[test]
    fn columns_that_do_not_fit_are_narrowed_or_left_out() {
        assert_eq!(shown_columns(&[10, 5, 6], 30), vec![10, 5, 6]);
        // 23 needed, 20 there: the marker's 2 off, then 10 + 1 + 5 + 1 leaves 1 (< 3).
        assert_eq!(shown_columns(&[10, 5, 6], 20), vec![10, 5]);
        assert_eq!(shown_columns(&[10, 5, 6], 16), vec![10, 3]);
        assert_eq!(shown_columns(&[10, 5, 6], 8), vec![6]);
    }
}
