//! The countdown dialog of a pending IP change: "Keep these settings? 52 s".
//! The daemon returns a pending change for every such change (IP settings through
//! NetworkManager, netplan or systemd-networkd; up/down and IPoIB edits of an interface
//! NetworkManager owns); unless it is confirmed before its deadline, it is rolled back (by
//! NetworkManager or netplan themselves, by the daemon under networkd), so a user who cut off their own connection gets it
//! back. The dialog asks, counts down to the deadline, and closes when `Network.ChangeEnded`
//! says the change ended (by its keys, another client, or the deadline).

use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::client::{Call, PendingInfo};
use crate::theme::Theme;

/// The pending changes the client knows of, the first one shown.
#[derive(Debug, Default)]
pub struct Countdown {
    queue: VecDeque<PendingInfo>,
    /// Paths already ended (a `ReadPendingChange` answer can arrive after `ChangeEnded`).
    ended: Vec<String>,
    /// The answer sent for the shown change, while it is in flight.
    answering: Option<&'static str>,
}

impl Countdown {
    /// True while a change waits for an answer (the dialog has the keyboard).
    pub fn is_open(&self) -> bool {
        !self.queue.is_empty()
    }

    pub fn shown(&self) -> Option<&PendingInfo> {
        self.queue.front()
    }

    /// True for a path the dialog knows (shown, queued or ended).
    pub fn knows(&self, path: &str) -> bool {
        self.queue.iter().any(|p| p.path == path) || self.ended.iter().any(|p| p == path)
    }

    /// A pending change learnt of (once per path).
    pub fn add(&mut self, info: PendingInfo) {
        if !self.knows(&info.path) {
            self.queue.push_back(info);
        }
    }

    /// `ChangeEnded`: closes the change's dialog; the sentence for the status line, if it was
    /// one the dialog showed or waited to show.
    pub fn ended(&mut self, path: &str, outcome: &str) -> Option<String> {
        if !self.ended.iter().any(|p| p == path) {
            self.ended.push(path.to_string());
            // Only the recent ones matter (a late read of a change's properties).
            if self.ended.len() > 32 {
                self.ended.remove(0);
            }
        }
        let i = self.queue.iter().position(|p| p.path == path)?;
        let info = self.queue.remove(i)?;
        if i == 0 {
            self.answering = None;
        }
        let what = if info.description.is_empty() {
            format!("the change of {}", info.interface)
        } else {
            info.description
        };
        Some(match outcome {
            crate::client::CONFIRMED => format!("Kept: {what}"),
            crate::client::TIMED_OUT => {
                format!("{what}: rolled back: not confirmed in time")
            }
            crate::client::ROLLED_BACK => format!("{what}: rolled back"),
            other => format!("{what}: ended ({other})"),
        })
    }

    /// The answer to the shown change failed: the dialog stays, the keys work again.
    pub fn answer_failed(&mut self) {
        self.answering = None;
    }

    /// A key while the dialog is open: Enter or `k` keeps, Esc or `r` rolls back; every other
    /// key does nothing (the question must be answered or left to time out).
    pub fn handle_key(&mut self, key: KeyEvent) -> Option<Call> {
        let info = self.queue.front()?;
        if self.answering.is_some() {
            return None;
        }
        let path = info.path.clone();
        match key.code {
            KeyCode::Enter | KeyCode::Char('k') | KeyCode::Char('K') => {
                self.answering = Some("Keeping");
                Some(Call::ConfirmChange { path })
            }
            KeyCode::Esc | KeyCode::Char('r') | KeyCode::Char('R') => {
                self.answering = Some("Rolling back");
                Some(Call::RollBackChange { path })
            }
            _ => None,
        }
    }

    /// Whole seconds left until the shown change's deadline (rounded up; 0 once passed).
    pub fn seconds_left(info: &PendingInfo, now_us: u64) -> u64 {
        info.deadline_us.saturating_sub(now_us).div_ceil(1_000_000)
    }

    /// Draws the dialog centred in `body`.
    pub fn render(&self, frame: &mut Frame, body: Rect, theme: Theme, now_us: u64) {
        let Some(info) = self.queue.front() else {
            return;
        };
        let t = theme;
        let left = Self::seconds_left(info, now_us);
        let mut lines = vec![
            Line::from(vec![
                Span::styled("Keep these settings? ", t.title()),
                Span::styled(format!("{left} s"), t.warn()),
            ]),
            Line::raw(""),
            Line::from(vec![
                Span::styled("Interface: ", t.dim()),
                Span::raw(info.interface.clone()),
            ]),
            Line::raw(info.description.clone()),
            Line::raw(""),
            Line::styled(
                "Without an answer the change is rolled back at the deadline.",
                t.dim(),
            ),
        ];
        if self.queue.len() > 1 {
            lines.push(Line::styled(
                format!(
                    "{} more change(s) wait after this one.",
                    self.queue.len() - 1
                ),
                t.dim(),
            ));
        }
        lines.push(Line::raw(""));
        lines.push(match self.answering {
            Some(doing) => Line::styled(format!("{doing}..."), t.dim()),
            None => Line::from(vec![
                Span::styled("Enter/k", t.key()),
                Span::raw(" keep   "),
                Span::styled("Esc/r", t.key()),
                Span::raw(" roll back"),
            ]),
        });
        let w = body.width.min(64);
        let inner_w = w.saturating_sub(2).max(1) as usize;
        // Wrapped height: each line's width over the inner width.
        let rows: usize = lines
            .iter()
            .map(|l| l.width().max(1).div_ceil(inner_w))
            .sum();
        let h = body.height.min(rows as u16 + 2);
        let area = Rect {
            x: body.x + (body.width - w) / 2,
            y: body.y + (body.height - h) / 2,
            width: w,
            height: h,
        };
        frame.render_widget(Clear, area);
        frame.render_widget(
            Paragraph::new(lines).wrap(Wrap { trim: false }).block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" Pending change "),
            ),
            area,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(path: &str, deadline_us: u64) -> PendingInfo {
        PendingInfo {
            path: path.into(),
            interface: "ib0".into(),
            description: "set IPv4 of ib0".into(),
            deadline_us,
        }
    }

    #[test]
    fn seconds_left_rounds_up_and_stops_at_zero() {
        let i = info("/c/1", 60_000_000);
        assert_eq!(Countdown::seconds_left(&i, 0), 60);
        assert_eq!(Countdown::seconds_left(&i, 8_500_000), 52);
        assert_eq!(Countdown::seconds_left(&i, 60_000_000), 0);
        assert_eq!(Countdown::seconds_left(&i, 70_000_000), 0);
    }

    #[test]
    fn a_change_is_added_once_even_after_it_ended() {
        let mut c = Countdown::default();
        c.add(info("/c/1", 1));
        c.add(info("/c/1", 1));
        assert_eq!(c.queue.len(), 1);
        assert!(c.ended("/c/1", "confirmed").is_some());
        // A late read of its properties does not open it again.
        c.add(info("/c/1", 1));
        assert!(!c.is_open());
    }

    #[test]
    fn answering_blocks_a_second_answer_until_it_fails() {
        let mut c = Countdown::default();
        c.add(info("/c/1", 1));
        let enter = KeyEvent::from(KeyCode::Enter);
        assert_eq!(
            c.handle_key(enter),
            Some(Call::ConfirmChange {
                path: "/c/1".into()
            })
        );
        assert_eq!(c.handle_key(KeyEvent::from(KeyCode::Esc)), None);
        c.answer_failed();
        assert_eq!(
            c.handle_key(KeyEvent::from(KeyCode::Char('r'))),
            Some(Call::RollBackChange {
                path: "/c/1".into()
            })
        );
    }
}
