//! Drawing helpers shared by the monitor pages (overview, port detail, bandwidth): a port
//! selection that survives ports coming and going, short forms of rates and names that fit a
//! column, throughput over a time window, and a text sparkline.

use ratatui::text::{Line, Span};

use crate::model::{History, Model, Port, Sample};

/// The port a page shows, remembered by object path so that a port appearing or vanishing
/// elsewhere in the list does not move the selection to another port. When the port itself
/// vanishes the selection falls back to the same position in the list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortCursor {
    path: Option<String>,
    index: usize,
}

impl PortCursor {
    /// The selected port, if the model has any port.
    pub fn current<'m>(&self, model: &'m Model) -> Option<&'m Port> {
        if let Some(p) = self.path.as_deref().and_then(|p| model.ports.get(p)) {
            return Some(p);
        }
        let ports = model.ports_in_order();
        let last = ports.len().checked_sub(1)?;
        ports.get(self.index.min(last)).copied()
    }

    /// The selected port's position in [`Model::ports_in_order`] (0 when there is none).
    pub fn position(&self, model: &Model) -> usize {
        let Some(cur) = self.current(model) else {
            return 0;
        };
        model
            .ports_in_order()
            .iter()
            .position(|p| p.path == cur.path)
            .unwrap_or(0)
    }

    /// Selects the port at `index` in [`Model::ports_in_order`] (clamped).
    pub fn select_index(&mut self, index: usize, model: &Model) {
        let ports = model.ports_in_order();
        let index = index.min(ports.len().saturating_sub(1));
        self.index = index;
        self.path = ports.get(index).map(|p| p.path.clone());
    }

    /// Selects a port by object path (one the model does not have yet is kept and shown once
    /// it appears; meanwhile the position is used).
    pub fn select_path(&mut self, path: &str, model: &Model) {
        if let Some(i) = model.ports_in_order().iter().position(|p| p.path == path) {
            self.index = i;
        }
        self.path = Some(path.to_string());
    }

    /// Moves the selection by `delta` ports, clamped to the list.
    pub fn step(&mut self, delta: isize, model: &Model) {
        let len = model.ports_in_order().len();
        let i = step(self.position(model), delta, len);
        self.select_index(i, model);
    }
}

/// `mlx5_0/1`: how `rdma link` names a port.
pub fn port_name(port: &Port) -> String {
    format!("{}/{}", port.device_name, port.number)
}

/// The one marker of text cut to fit, on every page and in every form.
pub const ELLIPSIS: &str = "…";

/// `s` cut to `width` columns, with `…` marking the cut (a wide character takes two).
pub fn fit(s: &str, width: usize) -> String {
    if columns(s) <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = take_columns(s, width - 1);
    out.push_str(ELLIPSIS);
    out
}

/// The longest start of `s` that takes at most `width` columns.
fn take_columns(s: &str, width: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    let mut used = 0;
    let mut out = String::new();
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width {
            break;
        }
        used += w;
        out.push(c);
    }
    out
}

/// A line cut to `width` columns with [`ELLIPSIS`] marking the cut, keeping each part's
/// style: a line drawn without wrapping is never cut without a sign.
pub fn fit_line(line: Line<'static>, width: usize) -> Line<'static> {
    if line.width() <= width {
        return line;
    }
    let style = line.style;
    let mut used = 0;
    let mut spans = Vec::new();
    let room = width.saturating_sub(1);
    for span in line.spans {
        let n = columns(&span.content);
        if used + n <= room {
            used += n;
            spans.push(span);
            continue;
        }
        let keep = take_columns(&span.content, room - used);
        spans.push(Span::styled(keep, span.style));
        if width > 0 {
            spans.push(Span::styled(ELLIPSIS, span.style));
        }
        break;
    }
    Line::from(spans).style(style)
}

/// Every line of `lines` fitted to `width` ([`fit_line`]).
pub fn fit_lines(lines: Vec<Line<'static>>, width: usize) -> Vec<Line<'static>> {
    lines.into_iter().map(|l| fit_line(l, width)).collect()
}

/// Columns `s` takes in the terminal (a wide character takes two).
pub fn columns(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// `s` broken into lines of at most `width` columns, at spaces where it can (a word longer
/// than a line is split): text drawn in a box is wrapped, never cut.
pub fn wrap_text(s: &str, width: usize) -> Vec<String> {
    use unicode_width::UnicodeWidthChar;
    let width = width.max(1);
    let mut out = Vec::new();
    let mut line = String::new();
    let mut used = 0;
    for word in s.split(' ') {
        let w = columns(word);
        let sep = usize::from(!line.is_empty());
        if used + sep + w <= width {
            if sep == 1 {
                line.push(' ');
            }
            line.push_str(word);
            used += sep + w;
            continue;
        }
        if !line.is_empty() {
            out.push(std::mem::take(&mut line));
            used = 0;
        }
        for c in word.chars() {
            let cw = c.width().unwrap_or(0);
            if used + cw > width && !line.is_empty() {
                out.push(std::mem::take(&mut line));
                used = 0;
            }
            line.push(c);
            used += cw;
        }
    }
    if !line.is_empty() || out.is_empty() {
        out.push(line);
    }
    out
}

/// A key and what it does, as lines of at most `width` columns: the key in a column of
/// `key_col`, the text wrapped beside it; where the two do not fit side by side, the text
/// goes under the key, indented by two.
pub fn key_lines(
    key: &str,
    what: &str,
    width: usize,
    key_col: usize,
    key_style: ratatui::style::Style,
) -> Vec<Line<'static>> {
    let beside = width.saturating_sub(key_col + 1);
    if beside >= 20 && columns(key) <= key_col {
        let pad = key_col - columns(key);
        wrap_text(what, beside)
            .into_iter()
            .enumerate()
            .map(|(i, text)| {
                let k = if i == 0 {
                    format!("{key}{} ", " ".repeat(pad))
                } else {
                    " ".repeat(key_col + 1)
                };
                let style = if i == 0 {
                    key_style
                } else {
                    Default::default()
                };
                Line::from(vec![Span::styled(k, style), Span::raw(text)])
            })
            .collect()
    } else {
        let mut out: Vec<Line<'static>> = wrap_text(key, width)
            .into_iter()
            .map(|k| Line::from(Span::styled(k, key_style)))
            .collect();
        out.extend(
            wrap_text(what, width.saturating_sub(2))
                .into_iter()
                .map(|text| Line::raw(format!("  {text}"))),
        );
        out
    }
}

/// Ways to write a sysfs rate (`100 Gb/sec (4X EDR)`), longest first: the text itself,
/// `100G 4X EDR`, `100G EDR`, `100G`. The link width stays as long as there is room because a
/// 4X link trained at 1X is a classic cable fault; the speed name last because the number
/// already says most.
pub fn rate_forms(rate: &str) -> Vec<String> {
    let rate = rate.trim();
    let mut forms = vec![rate.to_string()];
    let (number, rest) = match rate.split_once(" Gb/sec") {
        Some((n, rest)) => (n.trim(), rest.trim()),
        None => return forms,
    };
    let inner = rest.trim_start_matches('(').trim_end_matches(')').trim();
    let mut words = inner.split_whitespace();
    let (width, speed) = match (words.next(), words.next()) {
        (Some(w), Some(s)) => (Some(w), Some(s)),
        (Some(s), None) => (None, Some(s)),
        _ => (None, None),
    };
    let g = format!("{number}G");
    if let (Some(w), Some(s)) = (width, speed) {
        forms.push(format!("{g} {w} {s}"));
    }
    if let Some(s) = speed {
        forms.push(format!("{g} {s}"));
    }
    forms.push(g);
    forms.dedup();
    forms
}

/// The longest form of a rate that fits `width` (cut if none does).
pub fn fit_rate(rate: &str, width: usize) -> String {
    let forms = rate_forms(rate);
    match forms.iter().find(|f| f.chars().count() <= width) {
        Some(f) => f.clone(),
        None => fit(forms.last().map_or("", |s| s.as_str()), width),
    }
}

/// `IB` or `Eth` (anything else as the service wrote it).
pub fn link_layer_short(link_layer: &str) -> &str {
    match link_layer {
        "InfiniBand" => "IB",
        "Ethernet" => "Eth",
        other => other,
    }
}

/// Names joined by spaces, as many as fit `width`, then `+N` for the rest.
pub fn fit_names(names: &[String], width: usize) -> String {
    let all = names.join(" ");
    if all.chars().count() <= width {
        return all;
    }
    for shown in (1..names.len()).rev() {
        let s = format!("{} +{}", names[..shown].join(" "), names.len() - shown);
        if s.chars().count() <= width {
            return s;
        }
    }
    // Not even one name and the count fit: the first name, cut, says the most.
    match names.len() {
        0 => String::new(),
        1 => fit(&names[0], width),
        n => {
            let more = format!(" +{}", n - 1);
            let room = width.saturating_sub(more.chars().count());
            if room >= 3 {
                format!("{}{more}", fit(&names[0], room))
            } else {
                fit(&names[0], width)
            }
        }
    }
}

/// The network interfaces carried by a port: its netdev, then its IPoIB interfaces (own
/// before P_Key children), each once.
pub fn port_netdevs(model: &Model, port: &Port) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if !port.netdev.is_empty() {
        out.push(port.netdev.clone());
    }
    for i in model.ipoib_of_port(&port.path) {
        if !i.name.is_empty() && !out.contains(&i.name) {
            out.push(i.name.clone());
        }
    }
    out
}

/// The samples of a history no older than `window_us` before `now_us`.
pub fn window(history: &History, now_us: u64, window_us: u64) -> impl Iterator<Item = &Sample> {
    let since = now_us.saturating_sub(window_us);
    // A sample stands for the interval that ends at its time: the one exactly at `since`
    // covers the second before the window. Samples are in time order.
    let start = history.samples.partition_point(|s| s.time_us <= since);
    history.samples.range(start..)
}

/// The newest sample, unless it is too old to be "now": a port whose samples stopped (no
/// data, the service gone) must not show its last rate as the current one.
pub fn current_sample(history: Option<&History>, now_us: u64, interval_us: u64) -> Option<Sample> {
    let s = *history?.last()?;
    (now_us.saturating_sub(s.time_us) <= stale_after(interval_us)).then_some(s)
}

/// How old a sample may be and still stand for the present: three sampling intervals (of
/// at least a second), so one late or lost tick does not count as a stop.
pub fn stale_after(interval_us: u64) -> u64 {
    interval_us.max(1_000_000).saturating_mul(3)
}

/// Current, average and peak of one direction over a window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RateStats {
    pub current: Option<f64>,
    /// `None` without samples.
    pub avg: Option<f64>,
    pub peak: Option<f64>,
}

/// Statistics of `value` over the samples, with `current` as the newest value.
pub fn rate_stats<'a>(
    samples: impl Iterator<Item = &'a Sample>,
    current: Option<&Sample>,
    value: impl Fn(&Sample) -> f64,
) -> RateStats {
    let (mut sum, mut n, mut peak) = (0.0, 0usize, 0.0f64);
    for s in samples {
        let v = value(s);
        if v.is_finite() {
            sum += v;
            n += 1;
            peak = peak.max(v);
        }
    }
    RateStats {
        current: current.map(&value),
        avg: (n > 0).then(|| sum / n as f64),
        peak: (n > 0).then_some(peak),
    }
}

/// Bars from low to high, a space for "no sample in this column".
const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// A one-line sparkline: `width` columns covering the `window_us` before `now_us`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spark {
    pub now_us: u64,
    pub window_us: u64,
    pub width: usize,
    /// The value of the top bar (higher ones are clipped); `None`: the window's peak.
    pub full_scale: Option<f64>,
    /// How long a sample still stands for "now" in a column without its own sample, so a
    /// tick that came late or was lost does not leave a hole, while a real stop does.
    pub hold_us: u64,
}

impl Spark {
    /// The line for `value`: each column the average of the samples in its slice of time,
    /// the previous column's value when the newest sample before it is recent enough, else
    /// a space.
    pub fn render(&self, history: Option<&History>, value: impl Fn(&Sample) -> f64) -> String {
        let (width, window_us) = (self.width, self.window_us);
        if width == 0 || window_us == 0 {
            return String::new();
        }
        let mut sums = vec![0.0f64; width];
        let mut counts = vec![0u32; width];
        let mut newest = vec![0u64; width];
        let start = self.now_us.saturating_sub(window_us);
        if let Some(h) = history {
            for s in window(h, self.now_us, window_us) {
                let v = value(s);
                if !v.is_finite() || s.time_us > self.now_us {
                    continue;
                }
                // Integer arithmetic: samples exactly on a column boundary must not land in
                // the next column by rounding and leave a hole.
                let num = u128::from(s.time_us - start) * width as u128;
                let col = num.div_ceil(u128::from(window_us)) as usize;
                let col = col.clamp(1, width) - 1;
                sums[col] += v.max(0.0);
                counts[col] += 1;
                newest[col] = newest[col].max(s.time_us);
            }
        }
        let mut avgs: Vec<Option<f64>> = Vec::with_capacity(width);
        let mut last: Option<(u64, f64)> = None;
        for col in 0..width {
            let end = start + (u128::from(window_us) * (col as u128 + 1) / width as u128) as u64;
            if counts[col] > 0 {
                let avg = sums[col] / f64::from(counts[col]);
                last = Some((newest[col], avg));
                avgs.push(Some(avg));
            } else {
                avgs.push(
                    last.filter(|(t, _)| end.saturating_sub(*t) <= self.hold_us)
                        .map(|(_, v)| v),
                );
            }
        }
        let peak = avgs.iter().flatten().fold(0.0f64, |a, b| a.max(*b));
        let scale = match self.full_scale {
            Some(s) if s.is_finite() && s > 0.0 => s,
            _ => peak,
        }
        .max(f64::MIN_POSITIVE);
        avgs.iter()
            .map(|v| match v {
                None => ' ',
                Some(v) => {
                    let i = ((v / scale) * (BARS.len() - 1) as f64).round() as usize;
                    BARS[i.min(BARS.len() - 1)]
                }
            })
            .collect()
    }
}

/// A port's link rate in bytes per second (0 when unknown), the unit histories are in.
pub fn link_bytes_per_s(port: &Port) -> f64 {
    if port.rate_gbps.is_finite() && port.rate_gbps > 0.0 {
        port.rate_gbps * 1e9 / 8.0
    } else {
        0.0
    }
}

/// Moves a selection index by `delta` within `len` items, clamped.
pub fn step(index: usize, delta: isize, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let i = index as isize + delta;
    i.clamp(0, len as isize - 1) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn rates_shorten_to_fit() {
        assert_eq!(
            rate_forms("100 Gb/sec (4X EDR)"),
            vec!["100 Gb/sec (4X EDR)", "100G 4X EDR", "100G EDR", "100G"]
        );
        assert_eq!(fit_rate("200 Gb/sec (4X HDR)", 10), "200G HDR");
        assert_eq!(fit_rate("2.5 Gb/sec (1X SDR)", 11), "2.5G 1X SDR");
        assert_eq!(fit_rate("40 Gb/sec", 20), "40 Gb/sec");
        assert_eq!(fit_rate("40 Gb/sec", 4), "40G");
        assert_eq!(fit_rate("weird", 3), "we…");
        assert_eq!(fit_rate("", 3), "");
    }

    #[test]
    fn names_fit_with_a_count() {
        let n: Vec<String> = ["ibp59s0f0", "ibp59s0f0.8002", "ibp59s0f0.8003"]
            .map(String::from)
            .to_vec();
        assert_eq!(fit_names(&n, 100), n.join(" "));
        assert_eq!(fit_names(&n, 30), "ibp59s0f0 ibp59s0f0.8002 +1");
        assert_eq!(fit_names(&n, 12), "ibp59s0f0 +2");
        assert_eq!(fit_names(&n, 8), "ibp5… +2");
        assert_eq!(fit_names(&n, 2), "i…");
        assert_eq!(fit_names(&[], 5), "");
    }

    #[test]
    fn cursor_follows_the_path_and_falls_back_to_the_position() {
        let mut m = fixtures::demo_model();
        let mut c = PortCursor::default();
        let first = m.ports_in_order()[0].path.clone();
        assert_eq!(c.current(&m).map(|p| p.path.clone()), Some(first));
        c.step(2, &m);
        let third = m.ports_in_order()[2].path.clone();
        assert_eq!(c.current(&m).map(|p| &p.path), Some(&third));
        // The port vanishes: the one now at its place is shown.
        m.ports.remove(&third);
        let now_third = m.ports_in_order()[2].path.clone();
        assert_eq!(c.current(&m).map(|p| &p.path), Some(&now_third));
        c.step(100, &m);
        assert_eq!(c.position(&m), m.ports_in_order().len() - 1);
        c.step(-100, &m);
        assert_eq!(c.position(&m), 0);
        assert!(c.current(&crate::model::Model::default()).is_none());
    }

    #[test]
    fn sparkline_averages_columns_and_marks_gaps() {
        let m = fixtures::demo_model();
        let h = m.history.values().next();
        let spark = |now_us, width, full_scale| Spark {
            now_us,
            window_us: 60_000_000,
            width,
            full_scale,
            hold_us: 0,
        };
        let s = spark(fixtures::NOW_US, 10, None).render(h, |s| s.tx_bytes);
        assert_eq!(s.chars().count(), 10);
        assert!(s.chars().all(|c| BARS.contains(&c)), "{s}");
        assert!(s.contains('█'), "the peak reaches the top: {s}");
        // One column per sample: none left empty by rounding.
        let s = spark(fixtures::NOW_US, 60, None).render(h, |s| s.tx_bytes);
        assert!(!s.contains(' '), "{s}");
        // Against a fixed scale: half of it is the middle bar, more is clipped.
        assert_eq!(spark(fixtures::NOW_US, 4, None).render(h, |_| 1.0), "████");
        assert_eq!(
            spark(fixtures::NOW_US, 4, Some(2.0)).render(h, |_| 1.0),
            "▅▅▅▅"
        );
        assert_eq!(
            spark(fixtures::NOW_US, 2, Some(0.5)).render(h, |_| 1.0),
            "██"
        );
        // Nothing in the last minute an hour from now: all gaps.
        let later = spark(fixtures::NOW_US + 3_600_000_000, 5, None).render(h, |s| s.tx_bytes);
        assert_eq!(later, "     ");
        assert_eq!(spark(0, 3, None).render(None, |s| s.tx_bytes), "   ");
        let zero = Spark {
            window_us: 0,
            ..spark(0, 3, None)
        };
        assert_eq!(zero.render(h, |s| s.tx_bytes), "");
    }

    #[test]
    fn a_late_tick_is_held_and_a_stop_is_a_gap() {
        let mut h = History::default();
        // Samples each second for 60 s, but none at 30 s and none after 50 s.
        for t in (1..=50u64).filter(|t| *t != 30) {
            let s = Sample {
                time_us: t * 1_000_000,
                tx_bytes: 1.0,
                rx_bytes: 0.0,
                tx_packets: 0.0,
                rx_packets: 0.0,
                saturated: false,
            };
            h.push(s, 100);
        }
        let spark = Spark {
            now_us: 60_000_000,
            window_us: 60_000_000,
            width: 60,
            full_scale: Some(1.0),
            hold_us: 3_000_000,
        };
        let s: Vec<char> = spark.render(Some(&h), |s| s.tx_bytes).chars().collect();
        assert_eq!(s[29], '█', "the missing tick at 30 s is held");
        assert_eq!(s[52], '█', "held up to 3 s after the last sample");
        assert_eq!(s[53], ' ', "then the stop shows");
        assert_eq!(s[59], ' ');
    }

    #[test]
    fn stale_samples_are_not_current() {
        let m = fixtures::demo_model();
        let h = m.history.values().next();
        assert!(current_sample(h, fixtures::NOW_US, 1_000_000).is_some());
        assert!(current_sample(h, fixtures::NOW_US + 10_000_000, 1_000_000).is_none());
        assert!(current_sample(None, fixtures::NOW_US, 1_000_000).is_none());
    }
}
