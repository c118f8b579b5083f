//! The Bandwidth page's table of every port (`t`), as ibtop and htop show theirs: each port's
//! rates over the last sampling interval and the bytes and packets of that interval (the
//! counters' deltas), sorted by any column (`s` next column, `r` reverse) and filtered by
//! what a row says (`/`, then the text; Enter or Esc ends it).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::model::{Model, Port};
use crate::theme::Theme;
use crate::units::bits_per_second;
use crate::widgets::{current_sample, fit, link_bytes_per_s, port_name, port_netdevs};

/// A column of the table (also what it can be sorted by).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    Port,
    Tx,
    Rx,
    TxPackets,
    RxPackets,
    Use,
}

impl Column {
    const ALL: [Column; 6] = [
        Column::Port,
        Column::Tx,
        Column::Rx,
        Column::TxPackets,
        Column::RxPackets,
        Column::Use,
    ];

    fn label(self) -> &'static str {
        match self {
            Column::Port => "port",
            Column::Tx => "TX",
            Column::Rx => "RX",
            Column::TxPackets => "TX packets",
            Column::RxPackets => "RX packets",
            Column::Use => "use",
        }
    }
}

/// One port's row: what it says, and the values it is sorted by.
#[derive(Debug, Clone, PartialEq)]
pub struct PortRow {
    pub path: String,
    pub name: String,
    pub netdevs: String,
    /// Bytes and packets per second over the last interval; `None`: no current sample.
    pub rates: Option<[f64; 4]>,
    /// The interval those rates are over, in seconds.
    pub interval_s: f64,
    /// The busier direction against the link rate, in percent.
    pub use_pct: Option<f64>,
}

impl PortRow {
    fn key(&self, c: Column) -> f64 {
        let r = self.rates.unwrap_or([-1.0; 4]);
        match c {
            Column::Port => 0.0,
            Column::Tx => r[0],
            Column::Rx => r[1],
            Column::TxPackets => r[2],
            Column::RxPackets => r[3],
            Column::Use => self.use_pct.unwrap_or(-1.0),
        }
    }

    /// What the filter is matched against.
    fn text(&self) -> String {
        format!("{} {}", self.name, self.netdevs).to_lowercase()
    }
}

/// The table's state: sort, filter, selection.
#[derive(Debug, Clone, PartialEq)]
pub struct PortTable {
    pub sort: Column,
    /// Largest first (the default for the rates: the busiest port on top).
    pub descending: bool,
    pub filter: String,
    /// The filter is being typed: keys go to it.
    pub editing: bool,
    pub selected: usize,
}

impl Default for PortTable {
    fn default() -> Self {
        PortTable {
            sort: Column::Tx,
            descending: true,
            filter: String::new(),
            editing: false,
            selected: 0,
        }
    }
}

/// Every port's row, in the model's order.
pub fn rows(model: &Model, now_us: u64) -> Vec<PortRow> {
    let interval_us = model.manager.sample_interval_us;
    model
        .ports_in_order()
        .into_iter()
        .map(|p| row(model, p, now_us, interval_us))
        .collect()
}

fn row(model: &Model, p: &Port, now_us: u64, interval_us: u64) -> PortRow {
    let s = current_sample(model.history.get(&p.path), now_us, interval_us);
    let link = link_bytes_per_s(p);
    PortRow {
        path: p.path.clone(),
        name: port_name(p),
        netdevs: port_netdevs(model, p).join(","),
        rates: s.map(|s| [s.tx_bytes, s.rx_bytes, s.tx_packets, s.rx_packets]),
        interval_s: interval_us.max(1) as f64 / 1e6,
        use_pct: s
            .filter(|_| link > 0.0)
            .map(|s| s.tx_bytes.max(s.rx_bytes) / link * 100.0),
    }
}

impl PortTable {
    /// The rows shown: those the filter matches, sorted.
    pub fn shown(&self, mut rows: Vec<PortRow>) -> Vec<PortRow> {
        let f = self.filter.to_lowercase();
        rows.retain(|r| f.is_empty() || r.text().contains(&f));
        if self.sort == Column::Port {
            if self.descending {
                rows.reverse();
            }
            return rows;
        }
        rows.sort_by(|a, b| {
            let (x, y) = (a.key(self.sort), b.key(self.sort));
            let o = x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal);
            if self.descending {
                o.reverse()
            } else {
                o
            }
        });
        rows
    }

    /// A key; `false` when the table does not use it.
    pub fn key(&mut self, key: KeyEvent, shown: usize) -> bool {
        if self.editing {
            match key.code {
                KeyCode::Char(c) => self.filter.push(c),
                KeyCode::Backspace => {
                    self.filter.pop();
                }
                KeyCode::Enter | KeyCode::Esc => self.editing = false,
                _ => return false,
            }
            self.selected = 0;
            return true;
        }
        match key.code {
            KeyCode::Char('/') => {
                self.editing = true;
                self.filter.clear();
            }
            KeyCode::Char('s') => {
                let i = Column::ALL
                    .iter()
                    .position(|c| *c == self.sort)
                    .unwrap_or(0);
                self.sort = Column::ALL[(i + 1) % Column::ALL.len()];
                // Rates largest first, names in order.
                self.descending = self.sort != Column::Port;
            }
            KeyCode::Char('r') => self.descending = !self.descending,
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => {
                self.selected = (self.selected + 1).min(shown.saturating_sub(1))
            }
            _ => return false,
        }
        true
    }

    pub fn render(&mut self, frame: &mut Frame, area: Rect, model: &Model, now_us: u64, t: Theme) {
        if area.height == 0 || area.width == 0 {
            return;
        }
        let shown = self.shown(rows(model, now_us));
        self.selected = self.selected.min(shown.len().saturating_sub(1));
        let width = area.width as usize;
        let interval = shown.first().map_or(1.0, |r| r.interval_s);
        let order = if self.descending {
            "largest first"
        } else {
            "smallest first"
        };
        let mut head = format!(
            "Every port, last {interval:.0} s: sorted by {} ({order})",
            self.sort.label()
        );
        if self.editing || !self.filter.is_empty() {
            head.push_str(&format!("  filter: {}", self.filter));
            if self.editing {
                head.push('_');
            }
        }
        let mut lines = vec![
            Line::styled(fit(&head, width), t.title()),
            Line::styled(
                fit(
                    &format!(
                        "  {:<10} {:>10} {:>10} {:>9} {:>9} {:>11} {:>11} {:>5}  {}",
                        "Port",
                        "TX",
                        "RX",
                        "TX pkt/s",
                        "RX pkt/s",
                        "TX bytes",
                        "RX bytes",
                        "Use",
                        "Interfaces"
                    ),
                    width,
                ),
                t.dim(),
            ),
        ];
        let room = (area.height as usize).saturating_sub(lines.len());
        let first = (self.selected + 1).saturating_sub(room);
        for (i, r) in shown.iter().enumerate().skip(first).take(room) {
            let cells = match r.rates {
                Some([tx, rx, txp, rxp]) => format!(
                    "{:>10} {:>10} {:>9.0} {:>9.0} {:>11.0} {:>11.0} {:>5}",
                    bits_per_second(tx),
                    bits_per_second(rx),
                    txp,
                    rxp,
                    tx * r.interval_s,
                    rx * r.interval_s,
                    r.use_pct.map_or("-".into(), |u| format!("{u:.0}%")),
                ),
                None => format!("{:>10}", "no sample"),
            };
            let mark = if i == self.selected { "> " } else { "  " };
            let text = format!("{mark}{:<10} {cells}  {}", r.name, r.netdevs);
            let style = if i == self.selected {
                t.selected()
            } else {
                t.normal()
            };
            lines.push(Line::from(Span::styled(fit(&text, width), style)));
        }
        if shown.is_empty() {
            lines.push(Line::styled("No port matches the filter.", t.dim()));
        }
        frame.render_widget(Paragraph::new(lines), area);
    }

    /// The selected row's port, among the rows shown.
    pub fn selected_path(&self, model: &Model, now_us: u64) -> Option<String> {
        self.shown(rows(model, now_us))
            .get(self.selected)
            .map(|r| r.path.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{demo_model, NOW_US};
    use crossterm::event::KeyModifiers;

    fn press(t: &mut PortTable, code: KeyCode) {
        t.key(KeyEvent::new(code, KeyModifiers::NONE), 10);
    }

    #[test]
    fn sorted_by_any_column_and_filtered_by_what_a_row_says() {
        let m = demo_model();
        let all = rows(&m, NOW_US);
        assert_eq!(all.len(), 5);
        assert!(all.iter().all(|r| r.rates.is_some()), "{all:?}");
        let mut t = PortTable::default();
        // TX, largest first.
        let tx: Vec<f64> = t
            .shown(all.clone())
            .iter()
            .map(|r| r.key(Column::Tx))
            .collect();
        assert!(tx.windows(2).all(|w| w[0] >= w[1]), "{tx:?}");
        press(&mut t, KeyCode::Char('r'));
        let tx: Vec<f64> = t
            .shown(all.clone())
            .iter()
            .map(|r| r.key(Column::Tx))
            .collect();
        assert!(tx.windows(2).all(|w| w[0] <= w[1]), "{tx:?}");
        // s steps to RX.
        press(&mut t, KeyCode::Char('s'));
        assert_eq!(t.sort, Column::Rx);
        let rx: Vec<f64> = t
            .shown(all.clone())
            .iter()
            .map(|r| r.key(Column::Rx))
            .collect();
        assert!(rx.windows(2).all(|w| w[0] >= w[1]), "{rx:?}");
        // / then text: only the rows that say it; keys are typed, not acted on.
        press(&mut t, KeyCode::Char('/'));
        for c in "mlx5".chars() {
            press(&mut t, KeyCode::Char(c));
        }
        press(&mut t, KeyCode::Enter);
        assert_eq!(t.sort, Column::Rx, "s typed into the filter does not sort");
        let names: Vec<String> = t.shown(all.clone()).into_iter().map(|r| r.name).collect();
        assert!(
            !names.is_empty() && names.iter().all(|n| n.starts_with("mlx5")),
            "{names:?}"
        );
        // By interface name too.
        t.filter = "ib0".into();
        let names: Vec<String> = t.shown(all).into_iter().map(|r| r.name).collect();
        assert_eq!(names, ["mlx4_1/1"]);
    }

    /// The deltas are the interval's bytes: the rate times the sampling interval.
    #[test]
    fn the_table_shows_rates_and_the_intervals_bytes() {
        let m = demo_model();
        let mut t = PortTable::default();
        let backend = ratatui::backend::TestBackend::new(120, 12);
        let mut term = ratatui::Terminal::new(backend).expect("terminal");
        term.draw(|f| t.render(f, f.area(), &m, NOW_US, Theme::monochrome()))
            .expect("draw");
        let buf = term.backend().buffer().clone();
        let text: Vec<String> = (0..12)
            .map(|y| (0..120).map(|x| buf[(x, y)].symbol().to_string()).collect())
            .collect();
        assert!(
            text[0].contains("sorted by TX (largest first)"),
            "{text:#?}"
        );
        assert!(text[1].contains("TX bytes"), "{text:#?}");
        let first = rows(&m, NOW_US)
            .into_iter()
            .max_by(|a, b| a.key(Column::Tx).total_cmp(&b.key(Column::Tx)))
            .expect("a row");
        assert!(text[2].contains(&first.name), "{text:#?}");
        let [tx, ..] = first.rates.expect("rates");
        let bytes = format!("{:.0}", tx * first.interval_s);
        assert!(text[2].contains(&bytes), "{bytes} in {:?}", text[2]);
    }
}
