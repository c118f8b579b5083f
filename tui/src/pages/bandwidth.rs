//! Bandwidth: a port's TX and RX over the last 1 or 5 minutes or the last hour as a line
//! chart, from the history the service keeps (so the graph is full as soon as the page opens)
//! and the samples signalled since. The hour is drawn from the coarse history (10 s averages)
//! up to its newest average, then the fine samples after it. The Y axis is in bits per second, like the link rate, with a round top; the
//! link rate is drawn as a reference line when the traffic is within sight of it (otherwise a
//! busy-looking graph of a nearly idle link would be flattened to nothing) and always named.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph, Wrap};
use ratatui::Frame;

use super::{Outcome, Page, PageId, RenderCtx};
use crate::model::{Model, Port, Sample};
use crate::theme::Theme;
use crate::units::{bits_per_second, nice_ceiling};
use crate::widgets::{
    current_sample, link_bytes_per_s, port_name, port_netdevs, rate_stats, window, PortCursor,
    RateStats,
};

/// The time windows, shortest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeWindow {
    OneMinute,
    #[default]
    FiveMinutes,
    /// From the coarse history.
    OneHour,
}

impl TimeWindow {
    const ALL: [TimeWindow; 3] = [
        TimeWindow::OneMinute,
        TimeWindow::FiveMinutes,
        TimeWindow::OneHour,
    ];

    pub fn seconds(self) -> u64 {
        match self {
            TimeWindow::OneMinute => 60,
            TimeWindow::FiveMinutes => 300,
            TimeWindow::OneHour => 3600,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            TimeWindow::OneMinute => "1 min",
            TimeWindow::FiveMinutes => "5 min",
            TimeWindow::OneHour => "1 h",
        }
    }

    fn index(self) -> usize {
        Self::ALL.iter().position(|w| *w == self).unwrap_or(0)
    }

    /// The next longer window, wrapping (`w`).
    fn cycle(self) -> TimeWindow {
        Self::ALL[(self.index() + 1) % Self::ALL.len()]
    }

    /// Longer or shorter by `delta`, stopping at the ends (`-` and `+`).
    fn step(self, delta: isize) -> TimeWindow {
        Self::ALL[crate::widgets::step(self.index(), delta, Self::ALL.len())]
    }

    /// Between 5 minutes and the hour (`h`); from 1 minute, the hour.
    fn toggle_hour(self) -> TimeWindow {
        match self {
            TimeWindow::OneHour => TimeWindow::FiveMinutes,
            _ => TimeWindow::OneHour,
        }
    }

    /// X axis labels, evenly spaced from the window's start to now: 15 s, 1 min or 15 min
    /// apart.
    fn x_labels(self) -> Vec<String> {
        let (ticks, unit_s, unit): (u64, u64, &str) = match self {
            TimeWindow::OneMinute => (4, 15, "s"),
            TimeWindow::FiveMinutes => (5, 60, " min"),
            TimeWindow::OneHour => (4, 900, " min"),
        };
        let scale = if unit == "s" { 1 } else { 60 };
        (0..=ticks)
            .rev()
            .map(|i| match i {
                0 => "now".to_string(),
                i => format!("-{}{unit}", i * unit_s / scale),
            })
            .collect()
    }
}

#[derive(Debug, Default)]
pub struct BandwidthPage {
    cursor: PortCursor,
    window: TimeWindow,
    /// Every port in a table (`t`) instead of one port's chart.
    table: Option<super::port_table::PortTable>,
    /// "Now" of the last drawing: the table's rows are the samples current then.
    now_us: u64,
}

/// The chart's lines: braille for both in colour; without colour RX is drawn in half blocks
/// so the two lines can be told apart by shape.
fn markers(t: Theme) -> (Marker, Marker) {
    if t.color {
        (Marker::Braille, Marker::Braille)
    } else {
        (Marker::Braille, Marker::HalfBlock)
    }
}

/// A legend swatch drawn with the same kind of symbol as the line.
fn swatch(m: Marker) -> &'static str {
    match m {
        Marker::HalfBlock => "▀▀",
        _ => "⠒⠒",
    }
}

/// Everything drawn, computed once per frame.
struct View {
    tx_pts: Vec<(f64, f64)>,
    rx_pts: Vec<(f64, f64)>,
    saturated_pts: Vec<(f64, f64)>,
    tx: RateStats,
    rx: RateStats,
    samples: usize,
    link: f64,
    /// The Y axis top, bytes per second.
    top: f64,
    show_link: bool,
}

/// The samples of the last hour: the coarse averages, then the fine samples after the newest
/// of them.
fn hour(model: &Model, port: &str, now_us: u64) -> Vec<Sample> {
    let from = now_us.saturating_sub(3600 * 1_000_000);
    let coarse: Vec<Sample> = model
        .history_coarse
        .get(port)
        .map(|c| {
            c.samples
                .iter()
                .filter(|s| s.time_us >= from)
                .copied()
                .collect()
        })
        .unwrap_or_default();
    let after = coarse.last().map_or(from, |s| s.time_us + 1);
    let fine = model
        .history
        .get(port)
        .into_iter()
        .flat_map(|h| h.samples.iter())
        .filter(|s| s.time_us >= after && s.time_us <= now_us)
        .copied();
    coarse.into_iter().chain(fine).collect()
}

fn view(model: &Model, port: &Port, win: TimeWindow, now_us: u64) -> View {
    let history = model.history.get(&port.path);
    let window_us = win.seconds() * 1_000_000;
    let hour_samples;
    let in_window: Vec<&Sample> = if win == TimeWindow::OneHour {
        hour_samples = hour(model, &port.path, now_us);
        hour_samples.iter().collect()
    } else {
        history
            .map(|h| window(h, now_us, window_us).collect())
            .unwrap_or_default()
    };
    let x = |s: &Sample| -((now_us.saturating_sub(s.time_us)) as f64 / 1e6);
    let finite = |v: f64| if v.is_finite() { v.max(0.0) } else { 0.0 };
    let tx_pts: Vec<(f64, f64)> = in_window
        .iter()
        .map(|s| (x(s), finite(s.tx_bytes)))
        .collect();
    let rx_pts: Vec<(f64, f64)> = in_window
        .iter()
        .map(|s| (x(s), finite(s.rx_bytes)))
        .collect();
    let saturated_pts = in_window
        .iter()
        .filter(|s| s.saturated)
        .map(|s| (x(s), finite(s.tx_bytes).max(finite(s.rx_bytes))))
        .collect();
    let current = current_sample(history, now_us, model.manager.sample_interval_us);
    let tx = rate_stats(in_window.iter().copied(), current.as_ref(), |s| s.tx_bytes);
    let rx = rate_stats(in_window.iter().copied(), current.as_ref(), |s| s.rx_bytes);
    let data_max = tx.peak.unwrap_or(0.0).max(rx.peak.unwrap_or(0.0));
    let link = link_bytes_per_s(port);
    // Within 4x of the traffic the reference line costs at most three quarters of the
    // height; further away it would squash the traffic into the bottom rows.
    let show_link = link > 0.0 && data_max > 0.0 && link <= data_max * 4.0;
    let scale_to = if show_link {
        data_max.max(link)
    } else {
        data_max
    };
    View {
        tx_pts,
        rx_pts,
        saturated_pts,
        tx,
        rx,
        samples: in_window.len(),
        link,
        // At least 1 kb/s: an idle port's axis should not read in single bits.
        top: nice_ceiling(scale_to.max(125.0)),
        show_link,
    }
}

/// A rate, or `-` for none.
fn rate_or_dash(v: Option<f64>) -> String {
    v.map_or("-".to_string(), bits_per_second)
}

fn stats_spans(
    t: Theme,
    name: &str,
    style: Style,
    mark: &str,
    s: &RateStats,
) -> Vec<Span<'static>> {
    vec![
        Span::styled(format!("{mark} {name}"), style),
        Span::styled("  now ", t.dim()),
        Span::styled(format!("{:>9}", rate_or_dash(s.current)), style),
        Span::styled("  avg ", t.dim()),
        Span::styled(format!("{:>9}", rate_or_dash(s.avg)), t.normal()),
        Span::styled("  peak ", t.dim()),
        Span::styled(format!("{:>9}", rate_or_dash(s.peak)), t.normal()),
    ]
}

fn link_text(v: &View) -> String {
    if v.link <= 0.0 {
        return "link rate unknown".into();
    }
    let rate = bits_per_second(v.link);
    if v.show_link {
        format!("link {rate}")
    } else if v.samples > 0 {
        // Say where the traffic stands against the link, since the line is not drawn: per
        // direction, since each has the whole link rate (full duplex).
        let (tx, rx) = (v.tx.peak.unwrap_or(0.0), v.rx.peak.unwrap_or(0.0));
        let (dir, peak) = if tx >= rx { ("TX", tx) } else { ("RX", rx) };
        let pct = peak / v.link * 100.0;
        format!("link {rate} (off the scale; {dir} peak {pct:.1}% of it)")
    } else {
        format!("link {rate}")
    }
}

/// How many intervals to divide the Y axis into: as many as leave at least 4 rows each, of
/// those that give round labels for this top (1, 2 or 5 times a power of ten).
fn y_divisions(top_bytes: f64, graph_rows: u16) -> u16 {
    let bits = top_bytes * 8.0;
    let mantissa = bits / 10f64.powf(bits.log10().floor());
    let choices: &[u16] = if (mantissa - 2.0).abs() < 0.01 {
        &[10, 4, 2]
    } else if (mantissa - 5.0).abs() < 0.01 {
        &[10, 5, 2]
    } else {
        &[10, 5, 4, 2]
    };
    choices
        .iter()
        .copied()
        .find(|n| graph_rows / n >= 4)
        .unwrap_or(1)
}

/// The X labels, each centred under its tick (`offset` columns in, `width` wide: the first
/// at the left edge, the last, "now", at the right), skipping any that would touch the one
/// before.
fn x_label_line(labels: &[String], offset: u16, width: u16, t: Theme) -> Line<'static> {
    let n = labels.len();
    let mut out = String::new();
    let mut used = 0usize; // columns written so far
    for (i, label) in labels.iter().enumerate() {
        let w = label.chars().count();
        let tick = offset as usize
            + if n > 1 {
                (i * (width.saturating_sub(1) as usize) + (n - 1) / 2) / (n - 1)
            } else {
                0
            };
        let start = if i + 1 == n {
            // "now" ends at the last column.
            (tick + 1).saturating_sub(w)
        } else {
            tick.saturating_sub(w / 2)
        };
        let gap = if used == 0 { 0 } else { 1 };
        if start < used + gap {
            continue;
        }
        out.push_str(&" ".repeat(start - used));
        out.push_str(label);
        used = start + w;
    }
    Line::styled(out, t.dim())
}

impl BandwidthPage {
    fn header(&self, t: Theme, model: &Model, p: &Port, width: usize) -> Line<'static> {
        let netdevs = port_netdevs(model, p);
        let mut spans = vec![
            Span::styled(port_name(p), t.title()),
            Span::raw("  "),
            Span::styled(p.state.clone(), t.port_state(&p.state)),
        ];
        if let Some(n) = netdevs.first() {
            spans.push(Span::raw(format!("  {n}")));
        }
        spans.push(Span::raw(format!("  {}", p.rate)));
        spans.push(Span::styled("  window ", t.dim()));
        spans.push(Span::styled(self.window.label(), t.key()));
        let right = format!(
            "port {} of {}",
            self.cursor.position(model) + 1,
            model.ports_in_order().len()
        );
        let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
        if let Some(gap) = width.checked_sub(used + right.chars().count()) {
            spans.push(Span::raw(" ".repeat(gap.max(1))));
            spans.push(Span::styled(right, t.dim()));
        }
        Line::from(spans)
    }

    /// Lines that say what the chart cannot: the numbers, the link, the saturated samples.
    fn facts(&self, t: Theme, v: &View, side: bool) -> Vec<Line<'static>> {
        let (tm, rm) = markers(t);
        let mut lines = Vec::new();
        if side {
            for (name, style, mark, s) in [
                ("TX", t.tx(), swatch(tm), &v.tx),
                ("RX", t.rx(), swatch(rm), &v.rx),
            ] {
                lines.push(Line::styled(format!("{mark} {name}"), style));
                for (label, value) in [
                    ("now", rate_or_dash(s.current)),
                    ("avg", rate_or_dash(s.avg)),
                    ("peak", rate_or_dash(s.peak)),
                ] {
                    lines.push(Line::from(vec![
                        Span::styled(format!("  {label:<5}"), t.dim()),
                        Span::styled(format!("{value:>10}"), t.normal()),
                    ]));
                }
                lines.push(Line::raw(""));
            }
            let link_mark = if v.show_link { "•• " } else { "" };
            lines.push(Line::styled(
                format!("{link_mark}{}", link_text(v)),
                t.dim(),
            ));
            lines.push(Line::styled(
                format!("{} samples in {}", v.samples, self.window.label()),
                t.dim(),
            ));
        } else {
            lines.push(Line::from(stats_spans(t, "TX", t.tx(), swatch(tm), &v.tx)));
            lines.push(Line::from(stats_spans(t, "RX", t.rx(), swatch(rm), &v.rx)));
            let link_mark = if v.show_link { "•• " } else { "" };
            lines.push(Line::styled(
                format!("{link_mark}{}", link_text(v)),
                t.dim(),
            ));
        }
        let sat = v.saturated_pts.len();
        if sat > 0 {
            lines.push(Line::styled(
                format!(
                    "! {sat} saturated sample{} (marked █): the rate there is a lower bound",
                    if sat == 1 { "" } else { "s" }
                ),
                t.warn(),
            ));
        }
        lines
    }

    /// The numbers beside the chart on wide screens, above it on narrow ones; what is left
    /// of `body` for the chart.
    fn render_facts(&self, frame: &mut Frame, mut body: Rect, v: &View, t: Theme) -> Rect {
        let side = body.width >= 120 && body.height >= 12;
        let facts = self.facts(t, v, side);
        if side {
            let w = 34u16.min(body.width);
            let r = Rect::new(body.right() - w, body.y, w, body.height);
            frame.render_widget(Paragraph::new(facts).wrap(Wrap { trim: false }), r);
            body.width = body.width.saturating_sub(w + 1);
        } else {
            // Never more facts than leave the chart a few rows.
            let n = (facts.len() as u16).min(body.height.saturating_sub(5));
            let facts = crate::widgets::fit_lines(facts, body.width as usize);
            frame.render_widget(
                Paragraph::new(facts),
                Rect::new(body.x, body.y, body.width, n),
            );
            body.y += n;
            body.height -= n;
        }
        body
    }

    /// In place of a chart without samples: whether the window is empty or none came yet.
    fn render_no_samples(&self, frame: &mut Frame, body: Rect, model: &Model, p: &Port, t: Theme) {
        let has_any = model
            .history
            .get(&p.path)
            .is_some_and(|h| !h.samples.is_empty())
            || model
                .history_coarse
                .get(&p.path)
                .is_some_and(|h| !h.samples.is_empty());
        let text = if has_any {
            format!("No samples in the last {}.", self.window.label())
        } else {
            "Waiting for samples...".to_string()
        };
        let y = body.y + body.height / 2;
        frame.render_widget(
            Paragraph::new(Line::styled(text, t.dim()))
                .alignment(ratatui::layout::Alignment::Center),
            Rect::new(body.x, y, body.width, 1),
        );
    }

    /// The chart of TX and RX over the window, with the link's rate and the saturated
    /// samples, and the time labels at their ticks below it.
    fn render_chart(&self, frame: &mut Frame, body: Rect, v: &View, t: Theme) {
        let span = self.window.seconds() as f64;
        let (tm, rm) = markers(t);
        // The link as a line of dots: reads as a reference, not as a third series.
        let link_pts: Vec<(f64, f64)> = if v.show_link {
            vec![(-span, v.link), (0.0, v.link)]
        } else {
            Vec::new()
        };
        let mut datasets = Vec::new();
        if v.show_link {
            datasets.push(
                Dataset::default()
                    .marker(Marker::Dot)
                    .graph_type(GraphType::Line)
                    .style(t.dim())
                    .data(&link_pts),
            );
        }
        datasets.push(
            Dataset::default()
                .marker(rm)
                .graph_type(GraphType::Line)
                .style(t.rx())
                .data(&v.rx_pts),
        );
        datasets.push(
            Dataset::default()
                .marker(tm)
                .graph_type(GraphType::Line)
                .style(t.tx())
                .data(&v.tx_pts),
        );
        if !v.saturated_pts.is_empty() {
            datasets.push(
                Dataset::default()
                    .marker(Marker::Block)
                    .graph_type(GraphType::Scatter)
                    .style(t.warn())
                    .data(&v.saturated_pts),
            );
        }
        let y_labels = y_labels(v.top, body.height.saturating_sub(2));
        let y_label_w = y_labels
            .iter()
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(0) as u16;
        // Empty X labels: the chart keeps the axis line and a row for labels, which are drawn
        // below at their ticks (the chart spreads labels evenly but not at the ticks).
        let chart = Chart::new(datasets)
            .legend_position(None)
            .x_axis(
                Axis::default()
                    .bounds([-span, 0.0])
                    .style(t.dim())
                    .labels(["", ""]),
            )
            .y_axis(
                Axis::default()
                    .bounds([0.0, v.top])
                    .style(t.dim())
                    .labels(y_labels),
            );
        frame.render_widget(chart, body);
        // Where the chart puts its graph: after the Y labels (at most a third of the width)
        // and the axis line.
        let graph_x = body.x + y_label_w.min(body.width / 3) + 1;
        if body.height >= 3 && graph_x < body.right() {
            let graph_w = body.right() - graph_x;
            let row = Rect::new(body.x, body.bottom() - 1, body.width, 1);
            frame.render_widget(
                x_label_line(&self.window.x_labels(), graph_x - body.x, graph_w, t),
                row,
            );
        }
    }
}

/// The rate axis's labels, from 0 to `top` (bytes/s) in even steps for `graph_rows` rows.
fn y_labels(top: f64, graph_rows: u16) -> Vec<String> {
    let n = y_divisions(top, graph_rows);
    (0..=n)
        .map(|i| match i {
            0 => "0".to_string(),
            i => bits_per_second(top * f64::from(i) / f64::from(n)),
        })
        .collect()
}

impl Page for BandwidthPage {
    fn id(&self) -> PageId {
        PageId::Bandwidth
    }

    fn render(&mut self, frame: &mut Frame, area: Rect, ctx: &RenderCtx) {
        let t = ctx.theme;
        let model = ctx.model;
        if area.width == 0 || area.height == 0 {
            return;
        }
        self.now_us = ctx.now_us;
        if let Some(table) = &mut self.table {
            table.render(frame, area, model, ctx.now_us, t);
            return;
        }
        let Some(p) = self.cursor.current(model) else {
            frame.render_widget(
                Paragraph::new(Line::styled("No RDMA ports on this host.", t.dim())),
                area,
            );
            return;
        };
        frame.render_widget(
            self.header(t, model, p, area.width as usize),
            Rect::new(area.x, area.y, area.width, 1),
        );
        let body = Rect::new(
            area.x,
            area.y.saturating_add(1),
            area.width,
            area.height.saturating_sub(1),
        );
        let v = view(model, p, self.window, ctx.now_us);
        let body = self.render_facts(frame, body, &v, t);
        if body.height == 0 || body.width == 0 {
            return;
        }
        if v.samples == 0 {
            self.render_no_samples(frame, body, model, p, t);
        } else {
            self.render_chart(frame, body, &v, t);
        }
    }

    fn handle_key(&mut self, key: KeyEvent, model: &Model) -> Outcome {
        if let Some(table) = &mut self.table {
            let shown = model.ports.len();
            if table.key(key, shown) {
                return Outcome::Handled;
            }
            match key.code {
                // The selected port's chart.
                KeyCode::Enter => {
                    if let Some(path) = table.selected_path(model, self.now_us) {
                        self.cursor.select_path(&path, model);
                    }
                    self.table = None;
                }
                KeyCode::Char('t') | KeyCode::Esc => self.table = None,
                _ => return Outcome::Ignored,
            }
            return Outcome::Handled;
        }
        match key.code {
            KeyCode::Char('t') => self.table = Some(Default::default()),
            KeyCode::Char('w') => self.window = self.window.cycle(),
            KeyCode::Char('h') => self.window = self.window.toggle_hour(),
            KeyCode::Char('+') | KeyCode::Char('=') => self.window = self.window.step(-1),
            KeyCode::Char('-') => self.window = self.window.step(1),
            KeyCode::Left | KeyCode::Char('[') => self.cursor.step(-1, model),
            KeyCode::Right | KeyCode::Char(']') => self.cursor.step(1, model),
            KeyCode::Enter => {
                return match self.cursor.current(model) {
                    Some(p) => Outcome::ShowPort(PageId::Detail, p.path.clone()),
                    None => Outcome::Handled,
                };
            }
            _ => return Outcome::Ignored,
        }
        Outcome::Handled
    }

    fn selected_port(&self, model: &Model) -> Option<String> {
        self.cursor.current(model).map(|p| p.path.clone())
    }

    fn focus_port(&mut self, port: &str, model: &Model) {
        self.cursor.select_path(port, model);
    }

    fn hints(&self) -> Vec<(&'static str, &'static str)> {
        match &self.table {
            Some(t) if t.editing => vec![("Enter/Esc", "end filter"), ("Backspace", "erase")],
            Some(_) => vec![
                ("↑↓", "port"),
                ("s", "sort"),
                ("r", "reverse"),
                ("/", "filter"),
                ("Enter", "chart"),
                ("t", "chart"),
            ],
            None => vec![
                ("←→ [ ]", "port"),
                ("w + -", "window"),
                ("h", "5 min/1 h"),
                ("t", "table"),
                ("Enter", "port detail"),
            ],
        }
    }

    fn editing(&self) -> bool {
        self.table.as_ref().is_some_and(|t| t.editing)
    }

    fn help(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("Left/Right or [ ]", "previous / next port"),
            ("w", "next window: 1 min, 5 min, 1 h, then 1 min again"),
            (
                "+ / -",
                "shorter / longer window, stopping at 1 min and 1 h",
            ),
            ("h", "5 min of samples / 1 h of 10 s averages"),
            ("Enter", "the port's detail page"),
            (
                "t",
                "every port in a table: rates and the bytes and packets of the last interval; \
                 s sorts by the next column, r reverses, / filters by port or interface \
                 (Enter or Esc ends it), Enter shows the selected port's chart",
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::model::History;
    use crate::pages::test_support::{self, key};

    fn text(page: &mut BandwidthPage, model: &Model, w: u16, h: u16) -> String {
        format!("{}", test_support::draw(page, model, w, h))
    }

    #[test]
    fn windows_cycle_and_step() {
        let m = fixtures::demo_model();
        let mut p = BandwidthPage::default();
        assert_eq!(p.window, TimeWindow::FiveMinutes);
        assert_eq!(p.handle_key(key(KeyCode::Char('w')), &m), Outcome::Handled);
        assert_eq!(p.window, TimeWindow::OneHour);
        p.handle_key(key(KeyCode::Char('w')), &m);
        assert_eq!(p.window, TimeWindow::OneMinute);
        p.handle_key(key(KeyCode::Char('+')), &m);
        assert_eq!(p.window, TimeWindow::OneMinute, "+ stops at the shortest");
        p.handle_key(key(KeyCode::Char('-')), &m);
        p.handle_key(key(KeyCode::Char('-')), &m);
        p.handle_key(key(KeyCode::Char('-')), &m);
        assert_eq!(p.window, TimeWindow::OneHour, "- stops at the longest");
        p.handle_key(key(KeyCode::Char('h')), &m);
        assert_eq!(p.window, TimeWindow::FiveMinutes, "h: back to 5 minutes");
        p.handle_key(key(KeyCode::Char('+')), &m);
        p.handle_key(key(KeyCode::Char('h')), &m);
        assert_eq!(
            p.window,
            TimeWindow::OneHour,
            "h: from 1 minute to the hour"
        );
        assert_eq!(p.handle_key(key(KeyCode::Char('q')), &m), Outcome::Ignored);
    }

    #[test]
    fn ports_switch_and_enter_opens_the_detail() {
        let m = fixtures::demo_model();
        let ports: Vec<String> = m.ports_in_order().iter().map(|p| p.path.clone()).collect();
        let mut p = BandwidthPage::default();
        p.handle_key(key(KeyCode::Right), &m);
        p.handle_key(key(KeyCode::Char(']')), &m);
        assert_eq!(
            p.handle_key(key(KeyCode::Enter), &m),
            Outcome::ShowPort(PageId::Detail, ports[2].clone())
        );
        p.handle_key(key(KeyCode::Char('[')), &m);
        assert_eq!(p.cursor.position(&m), 1);
    }

    #[test]
    fn x_labels_cover_the_window() {
        assert_eq!(
            TimeWindow::OneMinute.x_labels(),
            vec!["-60s", "-45s", "-30s", "-15s", "now"]
        );
        assert_eq!(
            TimeWindow::OneHour.x_labels(),
            vec!["-60 min", "-45 min", "-30 min", "-15 min", "now"]
        );
        let t = Theme::monochrome();
        let labels = TimeWindow::OneHour.x_labels();
        // Ticks at columns 10, 12, 14, 17, 19 of a 10-column graph starting at column 10.
        let line = x_label_line(&labels, 10, 10, t).to_string();
        assert_eq!(
            line, "       -60 min   now",
            "labels that would touch are left out"
        );
        let line = x_label_line(&labels, 2, 41, t).to_string();
        assert_eq!(line, "-60 min  -45 min   -30 min   -15 min    now");
        assert_eq!(x_label_line(&labels, 0, 0, t).to_string(), "-60 min");
    }

    #[test]
    fn y_axis_divisions_are_round() {
        // 100 Gb/s in 4 rows each at least.
        assert_eq!(y_divisions(100e9 / 8.0, 40), 10);
        assert_eq!(y_divisions(100e9 / 8.0, 20), 5);
        assert_eq!(y_divisions(100e9 / 8.0, 16), 4);
        assert_eq!(y_divisions(200e9 / 8.0, 16), 4);
        assert_eq!(y_divisions(500e9 / 8.0, 16), 2);
        assert_eq!(y_divisions(500e9 / 8.0, 3), 1);
    }

    #[test]
    fn an_empty_history_waits_for_samples() {
        let mut m = fixtures::demo_model();
        m.history.clear();
        let mut p = BandwidthPage::default();
        let s = text(&mut p, &m, 80, 21);
        assert!(
            !s.contains("Waiting for samples"),
            "the coarse history has some: {s}"
        );
        m.history_coarse.clear();
        let s = text(&mut p, &m, 80, 21);
        assert!(s.contains("Waiting for samples"), "{s}");
        // Samples, but all older than the window.
        let port = m.ports_in_order()[0].path.clone();
        let mut h = History::default();
        h.push(
            Sample {
                time_us: fixtures::NOW_US - 3_600_000_000,
                tx_bytes: 1.0,
                rx_bytes: 1.0,
                tx_packets: 1.0,
                rx_packets: 1.0,
                saturated: false,
            },
            10,
        );
        m.history.insert(port, h);
        let s = text(&mut p, &m, 80, 21);
        assert!(s.contains("No samples in the last 5 min"), "{s}");
    }

    #[test]
    fn saturated_samples_are_counted_and_the_link_is_named() {
        let mut m = fixtures::demo_model();
        let port = m.ports_in_order()[0].path.clone();
        if let Some(h) = m.history.get_mut(&port) {
            for s in h.samples.iter_mut().rev().take(3) {
                s.saturated = true;
            }
        }
        let mut p = BandwidthPage::default();
        let s = text(&mut p, &m, 80, 21);
        assert!(s.contains("3 saturated samples"), "{s}");
        assert!(s.contains("link 56.0 Gb/s"), "{s}");
    }

    /// The hour is the coarse averages up to the newest, then the fine samples after it;
    /// without averages it is the fine samples alone.
    #[test]
    fn the_hour_joins_the_coarse_history_and_the_newer_samples() {
        let mut m = fixtures::demo_model();
        m.history_coarse.clear();
        let port = m.ports_in_order()[0].path.clone();
        let Some(fine) = m.history.get(&port).map(|h| h.samples.clone()) else {
            panic!("the demo has a history")
        };
        let oldest_fine = fine.front().map(|s| s.time_us).unwrap_or(0);
        let Some(p) = m.ports.get(&port).cloned() else {
            panic!("port")
        };
        let v = view(&m, &p, TimeWindow::OneHour, fixtures::NOW_US);
        assert_eq!(v.samples, fine.len(), "no coarse history: the fine one");
        // Averages every 10 s over the hour before the newest fine samples, one of them
        // older than the hour (left out) and one within the fine history's time.
        let avg = |t: u64, v: f64| Sample {
            time_us: t,
            tx_bytes: v,
            rx_bytes: v,
            tx_packets: 0.0,
            rx_packets: 0.0,
            saturated: false,
        };
        let mut c = crate::model::CoarseHistory::default();
        let first = fixtures::NOW_US - 3_610 * 1_000_000;
        let newest = oldest_fine + 100 * 1_000_000;
        let mut t = first;
        while t <= newest {
            c.samples.push_back(avg(t, 9e9));
            t += 10_000_000;
        }
        let newest = t - 10_000_000;
        let n_coarse = c.samples.len() - 1; // the first is older than the hour
        m.history_coarse.insert(port.clone(), c);
        let v = view(&m, &p, TimeWindow::OneHour, fixtures::NOW_US);
        let n_fine = fine.iter().filter(|s| s.time_us > newest).count();
        assert!(n_fine < fine.len());
        assert_eq!(v.samples, n_coarse + n_fine);
        assert_eq!(v.tx.peak, Some(9e9), "the averages are drawn");
        assert_eq!(v.tx_pts.first().map(|p| p.0 >= -3600.0), Some(true));
        // The 5-minute window does not use them.
        let v5 = view(&m, &p, TimeWindow::FiveMinutes, fixtures::NOW_US);
        assert!(v5.tx.peak < Some(9e9));
        let mut page = BandwidthPage::default();
        page.handle_key(key(KeyCode::Char('h')), &m);
        let s = text(&mut page, &m, 80, 24);
        assert!(s.contains("window 1 h"), "{s}");
        assert!(s.contains("-60 min"), "{s}");
    }

    #[test]
    fn a_far_away_link_is_not_drawn_but_named() {
        let mut m = fixtures::demo_model();
        let port = m.ports_in_order()[0].path.clone();
        if let Some(h) = m.history.get_mut(&port) {
            for s in h.samples.iter_mut() {
                s.tx_bytes /= 100.0;
                s.rx_bytes /= 100.0;
            }
        }
        let Some(p) = m.ports.get(&port) else {
            panic!("port")
        };
        let v = view(&m, p, TimeWindow::FiveMinutes, fixtures::NOW_US);
        assert!(!v.show_link);
        assert!(v.top < v.link);
        let mut page = BandwidthPage::default();
        let s = text(&mut page, &m, 80, 21);
        assert!(s.contains("off the scale"), "{s}");
    }
}
