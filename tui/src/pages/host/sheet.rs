//! The page as one sheet of lines: titles, rows that can be selected, paragraphs and notes,
//! built from the Host record section by section; and the styles the sections share.

use super::*;

/// The lines of the page and where each row is in them.
pub(super) struct Sheet {
    pub(super) lines: Vec<Line<'static>>,
    /// Per row: its lines, and the first line to show with it (its section's title for the
    /// first row of a section).
    pub(super) rows: Vec<(Row, usize, usize, usize)>,
    pub(super) width: usize,
    pub(super) selected: Option<Row>,
    pub(super) theme: Theme,
}

impl Sheet {
    pub(super) fn new(width: usize, selected: Option<Row>, theme: Theme) -> Sheet {
        Sheet {
            lines: Vec::new(),
            rows: Vec::new(),
            width,
            selected,
            theme,
        }
    }

    /// A section title, with the section's keys at the right when they fit.
    pub(super) fn title(&mut self, title: &str, keys: &str) -> usize {
        if !self.lines.is_empty() {
            self.lines.push(Line::raw(""));
        }
        let t = self.theme;
        let used = title.chars().count() + keys.chars().count() + 2;
        let mut spans = vec![Span::styled(title.to_string(), t.title())];
        if used <= self.width && !keys.is_empty() {
            spans.push(Span::raw(" ".repeat(self.width - used + 2)));
            spans.push(Span::styled(keys.to_string(), t.dim()));
        }
        self.lines.push(Line::from(spans));
        self.lines.len() - 1
    }

    /// A line of a row: "> " marks the selected one.
    pub(super) fn row(&mut self, row: Row, context: usize, body: Vec<Vec<Span<'static>>>) {
        let start = self.lines.len();
        let selected = self.selected == Some(row);
        for (i, spans) in body.into_iter().enumerate() {
            let mark = if selected && i == 0 { "> " } else { "  " };
            let mut v = vec![Span::styled(mark, self.theme.key())];
            v.extend(spans);
            self.lines.push(Line::from(v));
        }
        self.rows
            .push((row, context.min(start), start, self.lines.len()));
    }

    /// Text wrapped to the width, indented by `indent` columns.
    pub(super) fn para(&mut self, text: &str, style: Style, indent: usize) {
        let w = self.width.saturating_sub(indent).max(10);
        for l in wrap(text, w) {
            self.lines.push(Line::from(vec![
                Span::raw(" ".repeat(indent)),
                Span::styled(l, style),
            ]));
        }
    }

    /// A note: "- " and the text wrapped under itself.
    pub(super) fn note(&mut self, text: &str, style: Style) {
        let w = self.width.saturating_sub(4).max(10);
        for (i, l) in wrap(text, w).into_iter().enumerate() {
            let mark = if i == 0 { "  - " } else { "    " };
            self.lines
                .push(Line::from(vec![Span::raw(mark), Span::styled(l, style)]));
        }
    }

    /// "label  value": a fixed label column then spans.
    pub(super) fn field(
        label: &str,
        label_w: usize,
        value: Vec<Span<'static>>,
    ) -> Vec<Span<'static>> {
        let mut v = vec![Span::raw(format!("{label:<label_w$}  "))];
        v.extend(value);
        v
    }
}

/// A unit's state in words: "inactive, disabled at boot", "not installed".
pub(super) fn unit_text(u: &UnitState) -> String {
    if u.unknown() {
        return "unknown (systemd cannot be asked)".into();
    }
    if !u.installed() {
        return "not installed".into();
    }
    let boot = match u.unit_file_state.as_str() {
        "" => String::new(),
        s if s.starts_with("enabled") => ", enabled at boot".into(),
        "disabled" => ", disabled at boot".into(),
        other => format!(", {other}"),
    };
    format!("installed, {}{boot}", u.active_state)
}

pub(super) fn unit_style(u: &UnitState, t: Theme) -> Style {
    if u.unknown() {
        t.dim()
    } else if !u.installed() {
        t.warn()
    } else {
        match u.active_state.as_str() {
            "active" => t.good(),
            "failed" => t.bad(),
            "activating" | "deactivating" | "reloading" => t.warn(),
            _ => t.normal(),
        }
    }
}

/// A step's outcome, styled: every outcome is also its word.
pub(super) fn outcome_style(outcome: &str, t: Theme) -> Style {
    match outcome {
        "done" => t.good(),
        "unchanged" => t.normal(),
        "skipped" => t.warn(),
        "failed" => t.bad(),
        _ => t.dim(),
    }
}
