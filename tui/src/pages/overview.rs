//! Overview: every port of every device at a glance, one row per port grouped by device (what
//! `ibstat -s` and `rdma link` say together): state, physical state, rate, link layer, LIDs,
//! the network interfaces on the port and the last minute of throughput. Enter opens the
//! port's detail, `g` its bandwidth graph.
//!
//! Columns are sized from their contents and the width: at 80 columns long texts take their
//! short forms (`200G HDR` for `200 Gb/sec (4X HDR)`), narrower still the least needed columns
//! go; wide screens get separate TX and RX rates, the port GUID and a longer sparkline.

use crossterm::event::{KeyCode, KeyEvent, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::{Outcome, Page, PageId, RenderCtx};
use crate::model::{Model, Port, Sample};
use crate::theme::Theme;
use crate::units::bits_per_second;
use crate::widgets::{
    current_sample, fit, fit_names, fit_rate, link_bytes_per_s, link_layer_short, port_netdevs,
    rate_forms, stale_after, PortCursor, Spark,
};

/// The sparkline covers this much time, whatever its width.
const SPARK_WINDOW_US: u64 = 60_000_000;
/// One column per second of the minute is as fine as samples go.
const SPARK_MAX: usize = 60;

#[derive(Debug, Default)]
pub struct OverviewPage {
    cursor: PortCursor,
    /// First port row shown; kept between frames so the view moves only when the selection
    /// would leave it (as in htop).
    offset: usize,
    /// Port rows the last frame had room for (the PgUp/PgDn step).
    visible: usize,
    /// Lines above the first port row (summary, header), for mouse clicks.
    rows_top: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Device,
    Port,
    State,
    Phys,
    Rate,
    Link,
    Lid,
    SmLid,
    Netdevs,
    Spark,
    Now,
    Tx,
    Rx,
    Guid,
}

/// One column's widths: what its contents want, the least it can be squeezed to, and when it
/// goes if even the squeezed columns do not fit (lower goes first; `None` never goes).
#[derive(Debug, Clone, Copy)]
struct Spec {
    col: Col,
    want: usize,
    min: usize,
    drop: Option<u8>,
    right: bool,
}

/// Short forms of physical states that do not fit a narrow column.
fn phys_short(phys: &str) -> &str {
    match phys {
        "PortConfigurationTraining" => "Training",
        "LinkErrorRecovery" => "ErrRecov",
        "Disabled" => "Disabled",
        other => other,
    }
}

/// An INIT (or ARMED) InfiniBand port with SM LID 0 has not been reached by a subnet manager:
/// the usual reason a cabled port never goes ACTIVE.
fn lacks_sm(port: &Port) -> bool {
    port.is_infiniband() && port.sm_lid == 0 && matches!(port.state.as_str(), "INIT" | "ARMED")
}

fn lid_text(port: &Port) -> String {
    if port.is_infiniband() {
        port.lid.to_string()
    } else {
        "-".into()
    }
}

fn sm_text(port: &Port) -> String {
    if lacks_sm(port) {
        "no SM".into()
    } else if port.is_infiniband() {
        port.sm_lid.to_string()
    } else {
        "-".into()
    }
}

fn header(col: Col, width: usize) -> &'static str {
    let forms: &[&'static str] = match col {
        Col::Device => &["Device", "Dev"],
        Col::Port => &["Port", "P"],
        Col::State => &["State"],
        Col::Phys => &["Phys state", "Phys"],
        Col::Rate => &["Rate"],
        Col::Link => &["Link", "LL"],
        Col::Lid => &["LID"],
        Col::SmLid => &["SM LID", "SM"],
        Col::Netdevs => &["Interfaces", "Netdevs", "Net"],
        Col::Spark => &["Use, last minute", "last minute", "last min", "1 min"],
        Col::Now => &["Use", "Now"],
        Col::Tx => &["TX"],
        Col::Rx => &["RX"],
        Col::Guid => &["Port GUID", "GUID"],
    };
    forms
        .iter()
        .find(|f| f.chars().count() <= width)
        .or(forms.last())
        .copied()
        .unwrap_or("")
}

/// Column widths for `width` terminal columns (0 = not shown), in screen order.
fn layout(model: &Model, ports: &[&Port], width: usize) -> Vec<(Col, usize, bool)> {
    let specs = specs(model, ports);
    let mut fit = Fit::new(&specs, width);
    // First the long forms of texts that have short ones, and the sparkline's length; then
    // the extras of wide screens; then the essentials squeezed; then columns in order.
    fit.squeeze(&[
        (Col::Rate, None),
        (Col::Phys, None),
        (Col::SmLid, None),
        (Col::Netdevs, Some(12)),
        (Col::Spark, None),
    ]);
    fit.drop_ranks(3);
    fit.squeeze(&[
        (Col::Netdevs, None),
        (Col::Device, Some(7)),
        (Col::Port, None),
        (Col::State, None),
    ]);
    fit.drop_ranks(u8::MAX);
    fit.device_gives_the_rest();
    fit.regrow();
    fit.columns()
}

/// What each column wants for these ports (the interfaces' column only if a port has one).
fn specs(model: &Model, ports: &[&Port]) -> Vec<Spec> {
    let max = |f: &dyn Fn(&Port) -> usize| ports.iter().map(|p| f(p)).max().unwrap_or(0);
    let len = |s: &str| s.chars().count();
    let rate_min = max(&|p| {
        let forms = rate_forms(&p.rate);
        // The number and the speed name (`200G HDR`) at least.
        forms
            .get(forms.len().saturating_sub(2))
            .map_or(0, |f| len(f))
    });
    let netdevs_want = max(&|p| len(&port_netdevs(model, p).join(" ")));
    let rate_w = 9; // "99.9 Gb/s"
    let mut specs = vec![
        Spec {
            col: Col::Device,
            want: max(&|p| len(&p.device_name)).max(3),
            min: 3,
            drop: None,
            right: false,
        },
        Spec {
            col: Col::Port,
            want: 4,
            min: max(&|p| len(&p.number.to_string())).max(1),
            drop: None,
            right: true,
        },
        Spec {
            col: Col::State,
            want: max(&|p| len(&p.state)).max(5),
            min: 4,
            drop: None,
            right: false,
        },
        Spec {
            col: Col::Phys,
            want: max(&|p| len(&p.phys_state)).max(10),
            min: max(&|p| len(phys_short(&p.phys_state))).max(4),
            drop: Some(7),
            right: false,
        },
        Spec {
            col: Col::Rate,
            want: max(&|p| len(&p.rate)).max(4),
            min: rate_min.max(4),
            drop: Some(11),
            right: false,
        },
        Spec {
            col: Col::Link,
            want: 4,
            min: 3,
            drop: Some(6),
            right: false,
        },
        Spec {
            col: Col::Lid,
            want: max(&|p| len(&lid_text(p))).max(3),
            min: max(&|p| len(&lid_text(p))).max(3),
            drop: Some(9),
            right: true,
        },
        Spec {
            col: Col::SmLid,
            want: max(&|p| len(&sm_text(p))).max(6),
            min: max(&|p| len(&sm_text(p))).max(2),
            drop: Some(8),
            right: true,
        },
        Spec {
            col: Col::Netdevs,
            want: netdevs_want.max(10),
            min: netdevs_want.clamp(3, 6),
            drop: Some(5),
            right: false,
        },
        Spec {
            col: Col::Spark,
            want: 30,
            min: 8,
            drop: Some(4),
            right: false,
        },
        Spec {
            col: Col::Now,
            want: rate_w,
            min: rate_w,
            drop: Some(10),
            right: true,
        },
        Spec {
            col: Col::Tx,
            want: rate_w,
            min: rate_w,
            drop: Some(2),
            right: true,
        },
        Spec {
            col: Col::Rx,
            want: rate_w,
            min: rate_w,
            drop: Some(2),
            right: true,
        },
        Spec {
            col: Col::Guid,
            want: max(&|p| len(&p.port_guid)).max(9),
            min: max(&|p| len(&p.port_guid)).max(9),
            drop: Some(1),
            right: false,
        },
    ];
    if netdevs_want == 0 {
        specs.retain(|s| s.col != Col::Netdevs);
    }
    specs
}

/// The columns' widths while they are fitted into the screen's.
struct Fit<'a> {
    specs: &'a [Spec],
    widths: Vec<usize>,
    /// The screen's width.
    width: usize,
}

impl<'a> Fit<'a> {
    /// Every column as wide as it wants.
    fn new(specs: &'a [Spec], width: usize) -> Fit<'a> {
        Fit {
            specs,
            widths: specs.iter().map(|s| s.want).collect(),
            width,
        }
    }

    /// The shown columns' widths with a space between each two.
    fn total(&self) -> usize {
        let shown = self.widths.iter().filter(|x| **x > 0).count();
        self.widths.iter().sum::<usize>() + shown.saturating_sub(1)
    }

    fn find(&self, col: Col) -> Option<usize> {
        self.specs.iter().position(|s| s.col == col)
    }

    /// Narrows columns in order, each to its floor (its least width at most), until the
    /// columns fit.
    fn squeeze(&mut self, steps: &[(Col, Option<usize>)]) {
        for (col, floor) in steps {
            let over = self.total().saturating_sub(self.width);
            if over == 0 {
                return;
            }
            if let Some(i) = self.find(*col) {
                let floor = floor.unwrap_or(self.specs[i].min).max(self.specs[i].min);
                let room = self.widths[i].saturating_sub(floor);
                self.widths[i] -= room.min(over);
            }
        }
    }

    /// Drops columns of rank `up_to` or lower, least needed first and a rank at a time (TX
    /// and RX go together), until the columns fit.
    fn drop_ranks(&mut self, up_to: u8) {
        for rank in 1..=up_to {
            if self.total() <= self.width {
                return;
            }
            for (i, s) in self.specs.iter().enumerate() {
                if s.drop == Some(rank) {
                    self.widths[i] = 0;
                }
            }
        }
    }

    /// The last resort for very narrow screens: the device column gives what it has.
    fn device_gives_the_rest(&mut self) {
        let over = self.total().saturating_sub(self.width);
        if let Some(i) = self.find(Col::Device) {
            self.widths[i] = self.widths[i].saturating_sub(over).max(1);
        }
    }

    /// Room left goes back, essentials first; the sparkline takes the rest up to one column
    /// per second.
    fn regrow(&mut self) {
        let regrow: [(Col, Option<usize>); 9] = [
            (Col::State, None),
            (Col::Port, None),
            (Col::Device, None),
            (Col::Spark, Some(16)),
            (Col::Netdevs, None),
            (Col::Phys, None),
            (Col::Rate, None),
            (Col::SmLid, None),
            (Col::Spark, Some(SPARK_MAX)),
        ];
        for (col, target) in regrow {
            let spare = self.width.saturating_sub(self.total());
            if let Some(i) = self.find(col) {
                if self.widths[i] > 0 {
                    let target = target.unwrap_or(self.specs[i].want);
                    self.widths[i] += spare.min(target.saturating_sub(self.widths[i]));
                }
            }
        }
    }

    /// The shown columns, in screen order: which, how wide, right-aligned or not.
    fn columns(self) -> Vec<(Col, usize, bool)> {
        self.specs
            .iter()
            .zip(self.widths)
            .filter(|(_, w)| *w > 0)
            .map(|(s, w)| (s.col, w, s.right))
            .collect()
    }
}

/// A cell's text and style.
type Cell = (String, Style);

/// The use of a port now: its busier direction's share of the link rate ("TX 45%"), or,
/// without a known rate, that direction's rate.
fn use_text(s: &Sample, link: f64) -> String {
    let (dir, v) = if s.tx_bytes >= s.rx_bytes {
        ("TX", s.tx_bytes)
    } else {
        ("RX", s.rx_bytes)
    };
    if link > 0.0 {
        format!("{dir} {:.0}%", (v / link * 100.0).min(999.0))
    } else {
        bits_per_second(v)
    }
}

fn cell(model: &Model, port: &Port, col: Col, width: usize, ctx: &RenderCtx) -> Cell {
    let t = ctx.theme;
    let interval = model.manager.sample_interval_us;
    let history = model.history.get(&port.path);
    let now = current_sample(history, ctx.now_us, interval);
    let rate = |v: Option<f64>| match v {
        Some(v) => (bits_per_second(v), t.normal()),
        None => ("-".to_string(), t.dim()),
    };
    match col {
        Col::Device => (port.device_name.clone(), t.normal()),
        Col::Port => (port.number.to_string(), t.normal()),
        Col::State if port.state.is_empty() => ("?".into(), t.dim()),
        Col::State => (port.state.clone(), t.port_state(&port.state)),
        Col::Phys => {
            let text = if port.phys_state.chars().count() <= width {
                port.phys_state.as_str()
            } else {
                phys_short(&port.phys_state)
            };
            let style = match port.phys_state.as_str() {
                "LinkUp" => t.normal(),
                "Polling" | "Disabled" | "Sleep" => t.warn(),
                "" => t.dim(),
                _ => t.warn(),
            };
            (text.to_string(), style)
        }
        Col::Rate => (fit_rate(&port.rate, width), t.normal()),
        Col::Link => (link_layer_short(&port.link_layer).to_string(), t.normal()),
        Col::Lid => {
            let style = if port.is_infiniband() {
                t.normal()
            } else {
                t.dim()
            };
            (lid_text(port), style)
        }
        Col::SmLid => {
            let style = if lacks_sm(port) {
                t.warn()
            } else if port.is_infiniband() {
                t.normal()
            } else {
                t.dim()
            };
            (sm_text(port), style)
        }
        Col::Netdevs => (fit_names(&port_netdevs(model, port), width), t.normal()),
        Col::Spark => {
            // Bars measure use of the port. A link is full duplex: each direction has the
            // whole link rate, so use is the busier direction against the link rate (a sum
            // against twice the rate would show a saturated TX as a half-full link). A full
            // bar is a full direction and an idle port's noise stays flat. Without a known
            // rate, the shape of the minute is all there is to show.
            let full = Some(link_bytes_per_s(port)).filter(|f| *f > 0.0);
            let spark = Spark {
                now_us: ctx.now_us,
                window_us: SPARK_WINDOW_US,
                width,
                full_scale: full,
                hold_us: stale_after(interval),
            };
            let s = spark.render(history, |s| s.tx_bytes.max(s.rx_bytes));
            // Neither TX's nor RX's colour: it is either.
            (s, t.normal())
        }
        Col::Now => match now {
            Some(s) => (use_text(&s, link_bytes_per_s(port)), t.normal()),
            None => ("-".to_string(), t.dim()),
        },
        Col::Tx => {
            let (s, st) = rate(now.map(|s| s.tx_bytes));
            (s, if now.is_some() { t.tx() } else { st })
        }
        Col::Rx => {
            let (s, st) = rate(now.map(|s| s.rx_bytes));
            (s, if now.is_some() { t.rx() } else { st })
        }
        Col::Guid => (port.port_guid.clone(), t.normal()),
    }
}

/// Pads or cuts `text` to `width`.
fn pad(text: &str, width: usize, right: bool) -> String {
    let text = fit(text, width);
    if right {
        format!("{text:>width$}")
    } else {
        format!("{text:<width$}")
    }
}

/// A line of cells separated by one space.
fn row_line(cells: Vec<(String, Style)>) -> Line<'static> {
    let mut spans = Vec::with_capacity(cells.len() * 2);
    for (i, (text, style)) in cells.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw(" "));
        }
        spans.push(Span::styled(text, style));
    }
    Line::from(spans)
}

/// "5 ports on 4 devices: 4 ACTIVE, 1 INIT - 1 without a subnet manager", the states in their
/// colours; `short` for narrow screens: "5 ports: 4 ACTIVE, 1 INIT, 1 no SM".
fn summary(model: &Model, ports: &[&Port], t: Theme, short: bool) -> Vec<Span<'static>> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for p in ports {
        let state = if p.state.is_empty() { "?" } else { &p.state };
        match counts.iter_mut().find(|(s, _)| s == state) {
            Some((_, n)) => *n += 1,
            None => counts.push((state.to_string(), 1)),
        }
    }
    // ACTIVE first, then the rest by how many (the odd ones out are what the eye wants).
    counts.sort_by(|a, b| {
        (b.0 == "ACTIVE")
            .cmp(&(a.0 == "ACTIVE"))
            .then(b.1.cmp(&a.1))
    });
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    let head = if short {
        format!("{}: ", plural(ports.len(), "port"))
    } else {
        format!(
            "{} on {}: ",
            plural(ports.len(), "port"),
            plural(model.devices.len(), "device")
        )
    };
    let mut spans = vec![Span::styled(head, t.normal())];
    for (i, (state, n)) in counts.iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw(", "));
        }
        spans.push(Span::styled(format!("{n} {state}"), t.port_state(state)));
    }
    let no_sm = ports.iter().filter(|p| lacks_sm(p)).count();
    if no_sm > 0 {
        let (sep, text) = if short {
            (", ", format!("{no_sm} no SM"))
        } else {
            (" - ", format!("{no_sm} without a subnet manager"))
        };
        spans.push(Span::raw(sep));
        spans.push(Span::styled(text, t.warn()));
    }
    spans
}

fn spans_width(spans: &[Span]) -> usize {
    spans.iter().map(|s| s.content.chars().count()).sum()
}

/// The summary line, with where the view is when not every port fits.
fn summary_line(
    model: &Model,
    ports: &[&Port],
    t: Theme,
    width: usize,
    scroll: Option<String>,
) -> Line<'static> {
    let right = scroll.unwrap_or_default();
    let right_w = right.chars().count();
    for short in [false, true] {
        let mut spans = summary(model, ports, t, short);
        let used = spans_width(&spans);
        if used + right_w + 2 <= width || (right_w == 0 && used <= width) {
            if right_w > 0 {
                spans.push(Span::raw(" ".repeat(width - used - right_w)));
                spans.push(Span::styled(right, t.dim()));
            }
            return Line::from(spans);
        }
    }
    // No room for both: where the view is matters more when scrolling.
    if right_w > 0 {
        Line::styled(right, t.dim())
    } else {
        Line::from(summary(model, ports, t, true))
    }
}

/// The node health check's verdict in one line: "Health: healthy (23 checks)", or how many
/// failed and the first of them, or why there is none.
fn health_line(health: &crate::model::Health, t: Theme, width: usize) -> Line<'static> {
    use crate::model::Health;
    let head = Span::styled("Health: ", t.dim());
    let (text, style) = match health {
        Health::Checked { checks, failed } if failed.is_empty() => {
            (format!("healthy ({checks} checks)"), t.good())
        }
        Health::Checked { checks, failed } => (
            format!(
                "{} of {checks} failed: {}",
                failed.len(),
                failed.first().map(String::as_str).unwrap_or_default()
            ),
            t.bad(),
        ),
        Health::Unavailable(why) => (why.clone(), t.dim()),
    };
    let room = width.saturating_sub(head.content.chars().count());
    Line::from(vec![head, Span::styled(fit(&text, room), style)])
}

/// Facts about the selected port that the columns may have cut or left out at this width:
/// all its interfaces, its GUID, TX and RX apart.
fn selected_lines(model: &Model, port: &Port, ctx: &RenderCtx, width: usize) -> Vec<Line<'static>> {
    let t = ctx.theme;
    let now = current_sample(
        model.history.get(&port.path),
        ctx.now_us,
        model.manager.sample_interval_us,
    );
    let mut first = vec![
        Span::styled(crate::widgets::port_name(port), t.title()),
        Span::styled("  port GUID ", t.dim()),
        Span::raw(port.port_guid.clone()),
    ];
    if let Some(s) = now {
        first.push(Span::styled("  TX ", t.dim()));
        first.push(Span::styled(bits_per_second(s.tx_bytes), t.tx()));
        first.push(Span::styled("  RX ", t.dim()));
        first.push(Span::styled(bits_per_second(s.rx_bytes), t.rx()));
    }
    let netdevs = port_netdevs(model, port);
    let second = Line::from(vec![
        Span::styled("Rate ", t.dim()),
        Span::raw(port.rate.clone()),
        Span::styled("  Interfaces ", t.dim()),
        if netdevs.is_empty() {
            Span::styled("none", t.dim())
        } else {
            Span::raw(netdevs.join(" "))
        },
    ]);
    let rule = Line::styled("─".repeat(width), t.dim());
    vec![rule, Line::from(first), second]
}

impl OverviewPage {
    fn selected_path(&self, model: &Model) -> Option<String> {
        self.cursor.current(model).map(|p| p.path.clone())
    }

    /// Where a click at screen row `row` lands: a port's index in the list.
    fn row_at(&self, row: u16, area: Rect, model: &Model) -> Option<usize> {
        let top = area.y.checked_add(self.rows_top)?;
        let rel = row.checked_sub(top)? as usize;
        if rel >= self.visible {
            return None;
        }
        let i = self.offset + rel;
        (i < model.ports_in_order().len()).then_some(i)
    }
}

impl Page for OverviewPage {
    fn id(&self) -> PageId {
        PageId::Overview
    }

    fn render(&mut self, frame: &mut Frame, area: Rect, ctx: &RenderCtx) {
        let t = ctx.theme;
        let model = ctx.model;
        let ports = model.ports_in_order();
        if area.width == 0 || area.height == 0 {
            return;
        }
        let line_at = |frame: &mut Frame, y: u16, line: Line| {
            if y < area.height {
                let r = Rect::new(area.x, area.y + y, area.width, 1);
                frame.render_widget(line, r);
            }
        };
        if ports.is_empty() {
            self.visible = 0;
            let text = if model.devices.is_empty() && model.service_missing {
                "rdma-managerd is not on the bus: nothing is known of this host until it \
                 starts (systemctl start rdma-managerd)."
            } else if model.devices.is_empty() && model.manager.startup {
                "rdma-managerd is starting: reading the host's RDMA devices..."
            } else if model.devices.is_empty() {
                "No RDMA devices on this host (rdma-managerd publishes none)."
            } else {
                "No ports: the devices have none the service could read."
            };
            let lines: Vec<Line> = crate::widgets::wrap_text(text, area.width as usize)
                .into_iter()
                .map(|l| Line::styled(l, t.dim()))
                .collect();
            frame.render_widget(ratatui::widgets::Paragraph::new(lines), area);
            return;
        }
        let width = area.width as usize;
        let cols = layout(model, &ports, width);

        // Summary, then the header, then as many ports as fit. A summary on a screen with
        // room for only a few rows would cost a port row: it goes first.
        let with_summary = area.height >= 6;
        // The health verdict, once one came, under the summary where there is room for it
        // and a few ports.
        let health = model.health.as_ref().filter(|_| area.height >= 8);
        self.rows_top = u16::from(with_summary) + u16::from(health.is_some()) + 1;
        self.visible = (area.height.saturating_sub(self.rows_top)) as usize;
        let pos = self.cursor.position(model);
        if pos < self.offset {
            self.offset = pos;
        } else if self.visible > 0 && pos >= self.offset + self.visible {
            self.offset = pos + 1 - self.visible;
        }
        // A taller window shows more rows instead of empty space below the last port.
        self.offset = self.offset.min(ports.len().saturating_sub(self.visible));

        if with_summary {
            let scroll = (ports.len() > self.visible).then(|| {
                let last = (self.offset + self.visible).min(ports.len());
                format!("rows {}-{} of {}", self.offset + 1, last, ports.len())
            });
            line_at(frame, 0, summary_line(model, &ports, t, width, scroll));
        }
        if let Some(h) = health {
            line_at(frame, self.rows_top - 2, health_line(h, t, width));
        }
        let head: Vec<Cell> = cols
            .iter()
            .map(|(c, w, right)| (pad(header(*c, *w), *w, *right), t.title()))
            .collect();
        line_at(frame, self.rows_top - 1, row_line(head));

        let end = (self.offset + self.visible).min(ports.len());
        for (n, i) in (self.offset..end).enumerate() {
            let port = ports[i];
            // The device's name on its first port, and on the first row shown when scrolled
            // into the middle of a device.
            let first_of_device = i == 0 || ports[i - 1].device != port.device || n == 0;
            let cells: Vec<Cell> = cols
                .iter()
                .map(|(c, w, right)| {
                    let (text, style) = if *c == Col::Device && !first_of_device {
                        (String::new(), t.normal())
                    } else {
                        cell(model, port, *c, *w, ctx)
                    };
                    (pad(&text, *w, *right), style)
                })
                .collect();
            let mut line = row_line(cells);
            if i == pos {
                line = line.style(t.selected());
            }
            line_at(frame, self.rows_top + n as u16, line);
        }
        // Spare lines below the last port: the selected port's facts, at the bottom.
        let used = self.rows_top as usize + (end - self.offset);
        if let Some(port) = ports.get(pos) {
            let lines = selected_lines(model, port, ctx, width);
            if (area.height as usize) >= used + lines.len() {
                let top = area.height as usize - lines.len();
                for (k, l) in lines.into_iter().enumerate() {
                    line_at(frame, (top + k) as u16, l);
                }
            }
        }
    }

    fn handle_key(&mut self, key: KeyEvent, model: &Model) -> Outcome {
        let page = self.visible.max(1) as isize;
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.cursor.step(-1, model),
            KeyCode::Down | KeyCode::Char('j') => self.cursor.step(1, model),
            KeyCode::PageUp => self.cursor.step(-page, model),
            KeyCode::PageDown => self.cursor.step(page, model),
            KeyCode::Home => self.cursor.select_index(0, model),
            KeyCode::End => self.cursor.select_index(usize::MAX, model),
            KeyCode::Enter => {
                return match self.selected_path(model) {
                    Some(p) => Outcome::ShowPort(PageId::Detail, p),
                    None => Outcome::Handled,
                }
            }
            KeyCode::Char('g') => {
                return match self.selected_path(model) {
                    Some(p) => Outcome::ShowPort(PageId::Bandwidth, p),
                    None => Outcome::Handled,
                }
            }
            _ => return Outcome::Ignored,
        }
        Outcome::Handled
    }

    fn handle_mouse(&mut self, event: MouseEvent, area: Rect, model: &Model) -> Outcome {
        match event.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                let Some(i) = self.row_at(event.row, area, model) else {
                    return Outcome::Ignored;
                };
                // A click on the selected row opens it: a double click is a click that
                // selects and one that opens.
                if i == self.cursor.position(model) {
                    if let Some(p) = self.selected_path(model) {
                        return Outcome::ShowPort(PageId::Detail, p);
                    }
                }
                self.cursor.select_index(i, model);
                Outcome::Handled
            }
            MouseEventKind::ScrollDown => {
                self.cursor.step(1, model);
                Outcome::Handled
            }
            MouseEventKind::ScrollUp => {
                self.cursor.step(-1, model);
                Outcome::Handled
            }
            _ => Outcome::Ignored,
        }
    }

    fn selected_port(&self, model: &Model) -> Option<String> {
        self.cursor.current(model).map(|p| p.path.clone())
    }

    fn focus_port(&mut self, port: &str, model: &Model) {
        self.cursor.select_path(port, model);
    }

    fn hints(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("↑↓", "select"),
            ("Enter", "port detail"),
            ("g", "bandwidth"),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::pages::test_support::{self, key};
    use crossterm::event::KeyModifiers;

    fn render(page: &mut OverviewPage, model: &Model, w: u16, h: u16) -> ratatui::buffer::Buffer {
        test_support::draw(page, model, w, h).buffer().clone()
    }

    fn row_text(buf: &ratatui::buffer::Buffer, y: u16) -> String {
        (0..buf.area.width)
            .map(|x| buf[(x, y)].symbol().to_string())
            .collect()
    }

    /// A full-duplex link is as used as its busier direction: TX at the link rate with RX
    /// idle is a full link (100%, full bars), not half of twice the rate.
    #[test]
    fn use_is_the_busier_direction_against_the_link_rate() {
        let mut m = fixtures::demo_model();
        let port = m.ports_in_order()[0].clone();
        let link = link_bytes_per_s(&port);
        assert!(link > 0.0);
        let h = m.history.entry(port.path.clone()).or_default();
        for s in h.samples.iter_mut() {
            s.tx_bytes = link;
            s.rx_bytes = 0.0;
        }
        let mut page = OverviewPage::default();
        let buf = render(&mut page, &m, 200, 20);
        let header = (0..20)
            .map(|y| row_text(&buf, y))
            .find(|r| r.starts_with("Device"))
            .unwrap_or_default();
        assert!(header.contains("Use"), "{header}");
        assert!(!header.contains("TX+RX"), "{header}");
        let row = (1..20)
            .map(|y| row_text(&buf, y))
            .find(|r| r.starts_with(&port.device_name))
            .unwrap_or_default();
        assert!(row.contains("TX 100%"), "{row}");
        assert!(
            row.contains(&"█".repeat(10)),
            "a full link draws full bars: {row}"
        );
        // RX busier: said as RX.
        let s = Sample {
            time_us: 0,
            tx_bytes: 1.0,
            rx_bytes: link / 4.0,
            tx_packets: 0.0,
            rx_packets: 0.0,
            saturated: false,
        };
        assert_eq!(use_text(&s, link), "RX 25%");
        assert_eq!(use_text(&s, 0.0), bits_per_second(link / 4.0));
    }

    #[test]
    fn keys_move_the_selection_and_enter_opens_the_port() {
        let m = fixtures::demo_model();
        let ports: Vec<String> = m.ports_in_order().iter().map(|p| p.path.clone()).collect();
        let mut p = OverviewPage::default();
        assert_eq!(
            p.handle_key(key(KeyCode::Enter), &m),
            Outcome::ShowPort(PageId::Detail, ports[0].clone())
        );
        assert_eq!(p.handle_key(key(KeyCode::Down), &m), Outcome::Handled);
        assert_eq!(p.handle_key(key(KeyCode::Down), &m), Outcome::Handled);
        assert_eq!(
            p.handle_key(key(KeyCode::Enter), &m),
            Outcome::ShowPort(PageId::Detail, ports[2].clone())
        );
        assert_eq!(
            p.handle_key(key(KeyCode::Char('g')), &m),
            Outcome::ShowPort(PageId::Bandwidth, ports[2].clone())
        );
        p.handle_key(key(KeyCode::Up), &m);
        assert_eq!(p.cursor.position(&m), 1);
        p.handle_key(key(KeyCode::End), &m);
        assert_eq!(p.cursor.position(&m), ports.len() - 1);
        p.handle_key(key(KeyCode::Down), &m);
        assert_eq!(p.cursor.position(&m), ports.len() - 1, "clamped at the end");
        p.handle_key(key(KeyCode::Home), &m);
        assert_eq!(p.cursor.position(&m), 0);
        // Global keys are left to the application.
        for c in [
            KeyCode::Tab,
            KeyCode::Esc,
            KeyCode::Char('q'),
            KeyCode::Char('2'),
        ] {
            assert_eq!(p.handle_key(key(c), &m), Outcome::Ignored, "{c:?}");
        }
    }

    #[test]
    fn page_keys_step_by_the_rows_shown_and_the_view_follows() {
        let m = fixtures::large_model(32);
        let mut p = OverviewPage::default();
        render(&mut p, &m, 80, 21);
        assert_eq!(p.visible, 19);
        p.handle_key(key(KeyCode::PageDown), &m);
        assert_eq!(p.cursor.position(&m), 19);
        let buf = render(&mut p, &m, 80, 21);
        assert_eq!(p.offset, 1, "scrolled just enough to show the selection");
        assert!(
            row_text(&buf, 0).contains("rows 2-20 of 64"),
            "{}",
            row_text(&buf, 0)
        );
        // The first row shown names its device even in the middle of one.
        assert!(
            row_text(&buf, 2).starts_with("mlx5_0"),
            "{}",
            row_text(&buf, 2)
        );
        p.handle_key(key(KeyCode::PageUp), &m);
        p.handle_key(key(KeyCode::PageUp), &m);
        assert_eq!(p.cursor.position(&m), 0);
    }

    #[test]
    fn clicks_select_and_a_click_on_the_selection_opens_it() {
        let m = fixtures::demo_model();
        let ports: Vec<String> = m.ports_in_order().iter().map(|p| p.path.clone()).collect();
        let mut p = OverviewPage::default();
        let area = Rect::new(0, 1, 80, 21);
        let backend = ratatui::backend::TestBackend::new(80, 22);
        let mut term = ratatui::Terminal::new(backend).expect("terminal");
        let ctx = RenderCtx {
            model: &m,
            theme: Theme::colored(),
            now_us: fixtures::NOW_US,
        };
        term.draw(|f| p.render(f, area, &ctx)).expect("draw");
        let click = |row| MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: 3,
            row,
            modifiers: KeyModifiers::NONE,
        };
        // Summary at row 1, header at 2, ports from 3.
        assert_eq!(p.handle_mouse(click(5), area, &m), Outcome::Handled);
        assert_eq!(p.cursor.position(&m), 2);
        assert_eq!(
            p.handle_mouse(click(5), area, &m),
            Outcome::ShowPort(PageId::Detail, ports[2].clone())
        );
        assert_eq!(
            p.handle_mouse(click(2), area, &m),
            Outcome::Ignored,
            "header"
        );
        assert_eq!(
            p.handle_mouse(click(20), area, &m),
            Outcome::Ignored,
            "below"
        );
        let wheel = MouseEvent {
            kind: MouseEventKind::ScrollDown,
            ..click(0)
        };
        p.handle_mouse(wheel, area, &m);
        assert_eq!(p.cursor.position(&m), 3);
    }

    #[test]
    fn a_port_without_sm_is_flagged_in_warn_style() {
        let m = fixtures::large_model(32);
        let mut p = OverviewPage::default();
        let buf = render(&mut p, &m, 80, 24);
        let (x, y) = (0..24)
            .find_map(|y| row_text(&buf, y).find("no SM").map(|x| (x, y)))
            .expect("a port without SM is shown");
        let x = row_text(&buf, y)[..x].chars().count() as u16;
        assert_eq!(
            buf[(x, y)].fg,
            Theme::colored().warn().fg.expect("warn colour")
        );
        assert!(row_text(&buf, y).contains("INIT"));
    }

    #[test]
    fn columns_fit_every_width() {
        let m = fixtures::large_model(4);
        let ports = m.ports_in_order();
        for w in [1usize, 10, 20, 40, 60, 80, 100, 120, 160, 200, 300] {
            let cols = layout(&m, &ports, w);
            let total: usize =
                cols.iter().map(|c| c.1).sum::<usize>() + cols.len().saturating_sub(1);
            // Below 10 columns the three kept columns are cut by the screen's edge.
            assert!(total <= w.max(10), "width {w}: {cols:?}");
            assert!(cols.iter().any(|c| c.0 == Col::State), "width {w}");
        }
        let at80: Vec<Col> = layout(&m, &ports, 80).iter().map(|c| c.0).collect();
        for c in [
            Col::Phys,
            Col::Rate,
            Col::Lid,
            Col::SmLid,
            Col::Netdevs,
            Col::Spark,
        ] {
            assert!(at80.contains(&c), "{c:?} at 80 columns: {at80:?}");
        }
        let at200: Vec<Col> = layout(&m, &ports, 200).iter().map(|c| c.0).collect();
        assert!(at200.contains(&Col::Guid) && at200.contains(&Col::Tx));
    }
}
