//! The application: the model, the pages, the status line, and the keys every page shares
//! (nmtui/htop conventions: Tab and Shift-Tab or 1..9 between pages, arrows within one,
//! Enter to act, Esc to go back, `?`/F1 for help, `q`/F10 to quit). It knows nothing of the
//! terminal or the bus: [`crate::terminal`] feeds it events and carries out its calls.

use std::collections::HashMap;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use crate::client::{Call, CallError, CallOutput, ErrorKind, Update};
use crate::countdown::Countdown;
use crate::model::Model;
use crate::pages::{all_pages, Outcome, Page, PageId, RenderCtx};
use crate::theme::Theme;

/// Where the connection to the service stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    Connecting,
    Connected,
    /// The service left the bus (it is read again when it comes back).
    Gone,
    Fatal(String),
}

/// The status line: the last thing that happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    None,
    Info(String),
    Error(String),
}

pub struct App {
    pub model: Model,
    pub theme: Theme,
    pub connection: Connection,
    pub status: Status,
    pub help: bool,
    /// How far the help is scrolled.
    help_scroll: usize,
    pub quit: bool,
    pages: Vec<Box<dyn Page>>,
    current: usize,
    /// The area each page was last drawn in (for mouse events).
    page_area: Rect,
    /// The tab bar's area and each tab's column span (for clicks).
    tabs: Vec<(u16, u16)>,
    tab_row: u16,
    next_call: u64,
    /// Calls in flight: id to the page that asked and the call in words (said when it is
    /// queued, while the model still has the objects it names).
    pending: HashMap<u64, (PageId, String)>,
    /// What the calls of a sequence (a form sending several) did so far, for the status line
    /// once the last answers.
    done_so_far: Vec<String>,
    /// The call that continues a sequence, once queued: a read that ends a sequence (the
    /// Naming page reads its preview after a change) closes the sequence's status line.
    sequence_call: Option<u64>,
    /// The counters read in flight, if any (see [`App::poll_counters`]).
    counters_call: Option<u64>,
    /// The health check in flight, if any (see [`App::poll_health`]).
    health_call: Option<u64>,
    /// Calls to make, taken by the loop.
    outbox: Vec<(u64, Call)>,
    /// The port the user selected last, on any page: the pages that select ports show it.
    port: Option<String>,
    /// Pending IP changes that wait for Keep or Roll back.
    pub countdown: Countdown,
}

impl App {
    pub fn new(theme: Theme) -> App {
        App {
            model: Model::default(),
            theme,
            connection: Connection::Connecting,
            status: Status::None,
            help: false,
            help_scroll: 0,
            quit: false,
            pages: all_pages(),
            current: 0,
            page_area: Rect::default(),
            tabs: Vec::new(),
            tab_row: 0,
            next_call: 1,
            pending: HashMap::new(),
            done_so_far: Vec::new(),
            sequence_call: None,
            counters_call: None,
            health_call: None,
            outbox: Vec::new(),
            port: None,
            countdown: Countdown::default(),
        }
    }

    /// An application showing `model` (tests, snapshots, benchmarks).
    pub fn with_model(model: Model, theme: Theme) -> App {
        let mut app = App::new(theme);
        app.model = model;
        app.connection = Connection::Connected;
        app
    }

    pub fn current_page(&self) -> PageId {
        self.pages[self.current].id()
    }

    /// Shows a page (and makes the call it wants on being shown). The status line is about
    /// the page it was said on: another page starts without it. The port selected on the
    /// page left is selected on the page shown.
    pub fn show(&mut self, id: PageId) {
        if let Some(port) = self.pages[self.current].selected_port(&self.model) {
            self.port = Some(port);
        }
        self.switch(id);
    }

    /// Shows a page with a port selected.
    pub fn show_port(&mut self, id: PageId, port: &str) {
        self.port = Some(port.to_string());
        self.switch(id);
    }

    fn switch(&mut self, id: PageId) {
        if let Some(i) = self.pages.iter().position(|p| p.id() == id) {
            if i != self.current {
                self.status = Status::None;
            }
            if let Some(port) = &self.port {
                self.pages[i].focus_port(port, &self.model);
            }
            self.current = i;
            if let Some(call) = self.pages[i].on_show(&self.model) {
                self.queue(id, call);
            }
        }
    }

    /// The calls to make now, with their ids.
    pub fn take_calls(&mut self) -> Vec<(u64, Call)> {
        std::mem::take(&mut self.outbox)
    }

    /// The port whose counters the shown page wants.
    pub fn counters_port(&self) -> Option<String> {
        self.pages[self.current].counters_port(&self.model)
    }

    /// Queues a read of the shown page's counters (once a second while it is shown).
    pub fn poll_counters(&mut self) {
        // One read at a time: a slow PMA read or a hung service must not pile calls up.
        if self
            .counters_call
            .is_some_and(|id| self.pending.contains_key(&id))
        {
            return;
        }
        if let Some(port) = self.counters_port() {
            let page = self.current_page();
            self.counters_call = Some(self.queue(page, Call::GetCounters { port }));
        }
    }

    /// Whether the shown page changes with time alone (see [`Page::ticking`]).
    pub fn ticking(&self) -> bool {
        self.pages[self.current].ticking()
    }

    /// Whether the shown page shows the node's health (the Overview, once connected).
    pub fn wants_health(&self) -> bool {
        self.current_page() == PageId::Overview && self.connection == Connection::Connected
    }

    /// Queues a node health check (every 10 s while the Overview is shown), one at a time:
    /// a check that waits out a counter window must not pile calls up.
    pub fn poll_health(&mut self) {
        if self
            .health_call
            .is_some_and(|id| self.pending.contains_key(&id))
        {
            return;
        }
        let page = self.current_page();
        self.health_call = Some(self.queue(page, Call::CheckHealth));
    }

    fn queue(&mut self, page: PageId, call: Call) -> u64 {
        let id = self.next_call;
        self.next_call += 1;
        self.pending.insert(id, (page, call.describe(&self.model)));
        self.outbox.push((id, call));
        id
    }

    /// Applies something from the bus.
    pub fn apply(&mut self, update: Update) {
        match update {
            Update::Loaded(model) => {
                // Histories arrive after the load; keep those already drawn meanwhile.
                let history = std::mem::take(&mut self.model.history);
                self.model = *model;
                self.model.history = history;
                self.model
                    .history
                    .retain(|p, _| self.model.ports.contains_key(p));
                self.connection = Connection::Connected;
                let id = self.current_page();
                if let Some(call) = self.pages[self.current].on_show(&self.model) {
                    self.queue(id, call);
                }
            }
            Update::ServiceGone => {
                self.connection = Connection::Gone;
                self.model.service_missing = true;
            }
            Update::Properties {
                path,
                iface,
                changed,
            } => {
                if iface == crate::model::NETWORK_IFACE {
                    self.pending_changes(&changed);
                }
                self.model.set_properties(&path, &iface, changed.iter())
            }
            Update::ChangeEnded { change, outcome } => {
                if let Some(said) = self.countdown.ended(&change, &outcome) {
                    self.status = if outcome == crate::client::CONFIRMED {
                        Status::Info(said)
                    } else {
                        Status::Error(said)
                    };
                }
                // What the page shows of the network is read again (kept or rolled back).
                let id = self.current_page();
                if let Some(call) = self.pages[self.current].network_changed(&self.model) {
                    self.queue(id, call);
                }
            }
            Update::Added { path, interfaces } => self.model.add_object(&path, &interfaces),
            Update::Removed { path, ifaces } => self.model.remove_object(&path, &ifaces),
            Update::Samples { time_us, samples } => self.model.add_samples(time_us, &samples),
            Update::History { port, samples } => self.model.set_history(&port, samples),
            Update::HistoryCoarse { port, samples } => {
                self.model.set_history_coarse(&port, samples)
            }
            Update::Counters {
                port,
                source,
                saturated,
                values,
            } => self.model.set_counters(&port, source, saturated, values),
            Update::CallDone { id, call, result } => self.call_done(id, &call, &result),
            Update::LinkTestProgress {
                port,
                stage,
                result,
            } => self.model.link_test_progress(&port, &stage, *result),
            Update::Fatal(e) => self.connection = Connection::Fatal(e),
        }
    }

    /// `Network.PendingChanges` changed: each change the dialog does not know yet is read
    /// (an IPoIB edit of an interface NetworkManager owns makes one without returning it).
    fn pending_changes(&mut self, changed: &HashMap<String, zbus::zvariant::OwnedValue>) {
        let Some(v) = changed.get("PendingChanges") else {
            return;
        };
        let Ok(paths) = v
            .try_clone()
            .and_then(Vec::<zbus::zvariant::OwnedObjectPath>::try_from)
        else {
            return;
        };
        for p in paths {
            let path = p.as_str().to_string();
            // A second read of the same change (a call making it in flight meanwhile) is
            // harmless: the dialog adds a change once.
            let asked = self
                .outbox
                .iter()
                .any(|(_, c)| matches!(c, Call::ReadPendingChange { path: q } if *q == path));
            if !self.countdown.knows(&path) && !asked {
                let page = self.current_page();
                self.queue(page, Call::ReadPendingChange { path });
            }
        }
    }

    fn call_done(&mut self, id: u64, call: &Call, result: &Result<CallOutput, CallError>) {
        // The test ended: its `done` signal came before the answer, unless it was lost.
        if let Call::TestLink { port, .. } = call {
            self.model.link_tests_running.remove(port);
        }
        if matches!(call, Call::CheckHealth) {
            self.pending.remove(&id);
            self.model.health = match result {
                Ok(CallOutput::Health(rows)) => Some(crate::model::Health::of(rows)),
                Ok(_) => None,
                // No health section in the state directory: InvalidArgument, said in words.
                Err(e) if e.kind == crate::client::ErrorKind::InvalidArgument => {
                    Some(crate::model::Health::Unavailable(
                        "no expectations (a health section in /etc/rdma-manager/state.d)".into(),
                    ))
                }
                Err(e) => Some(crate::model::Health::Unavailable(format!(
                    "not checked: {}",
                    e.message
                ))),
            };
            return;
        }
        if let Ok(CallOutput::Pending(info)) = result {
            self.countdown.add(info.clone());
        }
        if matches!(
            call,
            Call::ConfirmChange { .. } | Call::RollBackChange { .. }
        ) && result.is_err()
        {
            self.countdown.answer_failed();
        }
        let (page, what) = match self.pending.remove(&id) {
            Some((page, what)) => (Some(page), what),
            None => (None, call.describe(&self.model)),
        };
        let mut next = None;
        if let Some(p) = page.and_then(|pid| self.pages.iter_mut().find(|p| p.id() == pid)) {
            let was_editing = p.editing();
            p.call_done(call, result);
            // A form that opens on an answer (the read of what it edits) starts with a clean
            // status line too, as one opened by a key does.
            if !was_editing && p.editing() {
                self.status = Status::None;
            }
            next = p.next_call().map(|c| (p.id(), c));
        }
        let in_sequence = self.sequence_call == Some(id);
        if in_sequence {
            self.sequence_call = None;
        }
        // What the calls before this one of the same sequence did (reads say nothing; a read
        // outside a sequence, such as the counters' every second, does not end one).
        let before = if call.is_read() && !in_sequence {
            None
        } else if next.is_some() && result.is_ok() {
            if !call.is_read() {
                self.done_so_far.push(what.clone());
            }
            None
        } else {
            let done = std::mem::take(&mut self.done_so_far);
            (!done.is_empty()).then(|| done.join(", "))
        };
        match (call, result) {
            // A link test that ran says how it ended (failing is a result, not an error).
            (Call::TestLink { .. }, Ok(CallOutput::LinkTest(r))) => {
                self.status = if r.passed {
                    Status::Info(format!("{what}: passed"))
                } else {
                    Status::Error(format!("{what}: failed, {}", r.reason))
                };
            }
            // A read that ends a sequence: what the sequence did replaces its interim text.
            (c, Ok(_)) if c.is_read() => {
                if let Some(b) = before {
                    self.status = Status::Info(format!("Done: {b}"));
                }
            }
            // The page that asked shows why (GetIpSettings: "NetworkManager not running").
            (
                Call::GetCounters { .. }
                | Call::ReadPendingChange { .. }
                | Call::GetIpSettings { .. },
                Err(_),
            ) => {
                if let Some(b) = before {
                    self.status = Status::Info(format!("Done: {b}"));
                }
            }
            // Kept or rolled back: ChangeEnded says so.
            (Call::ConfirmChange { .. } | Call::RollBackChange { .. }, Ok(_)) => {}
            (_, Ok(CallOutput::Pending(_))) => {
                self.status = Status::Info(format!("{what}: waiting for Keep or Roll back"))
            }
            (_, Ok(_)) if next.is_some() => self.status = Status::Info(format!("{what}: done...")),
            (_, Ok(CallOutput::Steps(steps))) if steps.iter().any(|s| s.failed()) => {
                let failed: Vec<String> = steps
                    .iter()
                    .filter(|s| s.failed())
                    .map(|s| format!("{} failed: {}", s.step, s.detail))
                    .collect();
                self.status = Status::Error(format!("{what}: {}", failed.join("; ")));
            }
            (_, Ok(_)) => {
                let all = match before {
                    Some(b) => format!("{b}, {what}"),
                    None => what,
                };
                self.status = Status::Info(format!("Done: {all}"));
            }
            (_, Err(e)) => {
                let mut text = error_text(&what, e);
                if let Some(b) = before {
                    text.push_str(&format!(" (done before it: {b})"));
                }
                self.status = Status::Error(text);
            }
        }
        if let Some((page, call)) = next {
            let id = self.queue(page, call);
            self.sequence_call = Some(id);
        }
    }

    /// Handles a terminal event.
    pub fn handle_event(&mut self, event: &Event) {
        match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => self.handle_key(*key),
            Event::Mouse(m) => self.handle_mouse(*m),
            _ => {}
        }
    }

    pub fn handle_key(&mut self, key: KeyEvent) {
        if self.help {
            // The moving keys scroll the help; any other key closes it (and does nothing else).
            match key.code {
                KeyCode::Up => self.help_scroll = self.help_scroll.saturating_sub(1),
                KeyCode::Down => self.help_scroll += 1,
                KeyCode::PageUp => self.help_scroll = self.help_scroll.saturating_sub(10),
                KeyCode::PageDown => self.help_scroll += 10,
                KeyCode::Home => self.help_scroll = 0,
                KeyCode::End => self.help_scroll = usize::MAX,
                _ => {
                    self.help = false;
                    self.help_scroll = 0;
                }
            }
            return;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            self.quit = true;
            return;
        }
        // A change waiting for Keep or Roll back has the keyboard until it is answered or
        // ends.
        if self.countdown.is_open() {
            if let Some(call) = self.countdown.handle_key(key) {
                let page = self.current_page();
                self.status = Status::Info(format!("{}...", call.describe(&self.model)));
                self.queue(page, call);
            }
            return;
        }
        let was_editing = self.pages[self.current].editing();
        let outcome = self.pages[self.current].handle_key(key, &self.model);
        // A new form starts with a clean status line: what the last action said is not about
        // it.
        if !was_editing && self.pages[self.current].editing() && outcome == Outcome::Handled {
            self.status = Status::None;
        }
        if outcome != Outcome::Ignored {
            self.outcome(outcome);
            return;
        }
        let editing = self.pages[self.current].editing();
        match key.code {
            KeyCode::Char('q') if !editing => self.quit = true,
            KeyCode::F(10) => self.quit = true,
            KeyCode::Char('?') if !editing => self.help = true,
            KeyCode::F(1) => self.help = true,
            KeyCode::Tab => self.cycle(1),
            KeyCode::BackTab => self.cycle(-1),
            KeyCode::Char(c @ '1'..='9') if !editing => {
                let i = c as usize - '1' as usize;
                self.show(PageId::ALL[i]);
            }
            KeyCode::Esc => {
                if self.current_page() != PageId::Overview {
                    self.show(PageId::Overview);
                } else {
                    self.status = Status::None;
                }
            }
            _ => {}
        }
    }

    fn cycle(&mut self, delta: isize) {
        let n = PageId::ALL.len() as isize;
        let i = (self.current as isize + delta).rem_euclid(n) as usize;
        self.show(PageId::ALL[i]);
    }

    fn outcome(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Ignored | Outcome::Handled => {}
            // A read a page wants (IP settings of the interface selected): no status line.
            Outcome::Call(call) if call.is_read() => {
                let id = self.current_page();
                self.queue(id, call);
            }
            Outcome::Call(call) => {
                let id = self.current_page();
                self.status = Status::Info(format!("{}...", call.describe(&self.model)));
                // A new request: what an earlier sequence did is said already.
                self.done_so_far.clear();
                self.queue(id, call);
            }
            Outcome::ShowPort(page, port) => self.show_port(page, &port),
            Outcome::Message(m) => self.status = Status::Info(m),
        }
    }

    fn handle_mouse(&mut self, m: crossterm::event::MouseEvent) {
        if self.countdown.is_open() {
            return;
        }
        if self.help {
            if matches!(m.kind, MouseEventKind::Down(_)) {
                self.help = false;
            }
            return;
        }
        if let MouseEventKind::Down(_) = m.kind {
            if m.row == self.tab_row {
                if let Some(i) = self
                    .tabs
                    .iter()
                    .position(|(a, b)| m.column >= *a && m.column < *b)
                {
                    self.show(PageId::ALL[i]);
                    return;
                }
            }
        }
        let area = self.page_area;
        let outcome = self.pages[self.current].handle_mouse(m, area, &self.model);
        self.outcome(outcome);
    }

    /// Draws the whole screen: tabs, the page, the status line and the key hints.
    pub fn render(&mut self, frame: &mut Frame, now_us: u64) {
        let area = frame.area();
        // An error gets up to three lines: refusals say what was refused and how to get it.
        let status_height = match &self.status {
            Status::Error(e) if self.connection == Connection::Connected => {
                let width = area.width.max(1) as usize;
                (e.chars().count() + 2).div_ceil(width).clamp(1, 3) as u16
            }
            _ => 1,
        };
        let [tabs, body, status, keys] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(1),
            Constraint::Length(status_height),
            Constraint::Length(1),
        ])
        .areas(area);
        self.render_tabs(frame, tabs);
        self.page_area = body;
        let ctx = RenderCtx {
            model: &self.model,
            theme: self.theme,
            now_us,
        };
        self.pages[self.current].render(frame, body, &ctx);
        self.render_status(frame, status);
        self.render_keys(frame, keys);
        if self.help {
            self.render_help(frame, body);
        }
        self.countdown.render(frame, body, self.theme, now_us);
    }

    fn render_tabs(&mut self, frame: &mut Frame, area: Rect) {
        let t = self.theme;
        let mut spans = Vec::new();
        let mut col = area.x;
        self.tabs.clear();
        self.tab_row = area.y;
        let width = area.width as usize;
        // " N label " per tab: the full labels, else the short ones, else the number alone
        // for every page but the shown one. Whatever is still cut ends with a marker, so a
        // page is never missing without a sign.
        let texts = |label: &dyn Fn(usize, PageId) -> String| -> Vec<String> {
            PageId::ALL
                .iter()
                .enumerate()
                .map(|(i, id)| label(i, *id))
                .collect()
        };
        let forms = [
            texts(&|i, id| format!(" {} {} ", i + 1, id.label())),
            texts(&|i, id| format!(" {} {} ", i + 1, id.short_label())),
            texts(&|i, id| {
                if i == self.current {
                    format!(" {} {} ", i + 1, id.short_label())
                } else {
                    format!(" {} ", i + 1)
                }
            }),
        ];
        let fits = |f: &Vec<String>| f.iter().map(|s| s.chars().count()).sum::<usize>() <= width;
        let chosen = forms.iter().find(|f| fits(f)).unwrap_or(&forms[2]);
        let mut used = 0;
        for (i, text) in chosen.iter().enumerate() {
            let w = text.chars().count();
            let last = i + 1 == chosen.len();
            // Room for this tab, and for the marker after it unless it is the last.
            if used + w + usize::from(!last) > width {
                spans.push(Span::styled(CUT, t.dim()));
                break;
            }
            self.tabs.push((col, col + w as u16));
            col += w as u16;
            used += w;
            let style = if i == self.current {
                t.selected().add_modifier(ratatui::style::Modifier::BOLD)
            } else {
                t.normal()
            };
            spans.push(Span::styled(text.clone(), style));
        }
        frame.render_widget(Paragraph::new(Line::from(spans)), area);
    }

    fn render_status(&self, frame: &mut Frame, area: Rect) {
        let t = self.theme;
        let line = match (&self.connection, &self.status) {
            (Connection::Fatal(e), _) => Line::styled(format!("! {e}"), t.bad()),
            (Connection::Gone, _) => Line::styled(
                "! rdma-managerd is not on the bus; waiting for it to return",
                t.bad(),
            ),
            (Connection::Connecting, _) => Line::styled("Connecting to rdma-managerd...", t.dim()),
            (Connection::Connected, Status::Error(e)) => Line::styled(format!("! {e}"), t.bad()),
            (Connection::Connected, Status::Info(i)) => Line::styled(i.clone(), t.normal()),
            (Connection::Connected, Status::None) if self.model.manager.startup => Line::styled(
                "rdma-managerd is starting (reading the host); the pages fill when it is done",
                t.dim(),
            ),
            (Connection::Connected, Status::None) => {
                let m = &self.model;
                let mut s = format!(
                    "{} devices, {} ports, {} IPoIB",
                    m.devices.len(),
                    m.ports.len(),
                    m.ipoib.len()
                );
                if m.manager.simulated {
                    s.push_str(" - simulated host");
                }
                if !m.problems.is_empty() {
                    s.push_str(&format!(
                        " - {} propert(ies) of an unexpected type, left as they were",
                        m.problems.len()
                    ));
                }
                if !m.manager.config_errors.is_empty() {
                    s.push_str(&format!(
                        " - {} unusable configuration file(s)",
                        m.manager.config_errors.len()
                    ));
                }
                Line::styled(s, t.dim())
            }
        };
        // Wrapped to the rows it has (an error gets up to three); what still does not fit
        // ends with the marker, never cut without a sign.
        let style = line.style;
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        let width = area.width as usize;
        let mut rows = crate::widgets::wrap_text(&text, width);
        let room = (area.height as usize).max(1);
        if rows.len() > room {
            let rest = rows.split_off(room).join(" ");
            if let Some(last) = rows.last_mut() {
                *last = crate::widgets::fit(&format!("{last} {rest}"), width);
            }
        }
        let lines: Vec<Line> = rows.into_iter().map(|r| Line::styled(r, style)).collect();
        frame.render_widget(Paragraph::new(lines), area);
    }

    fn render_keys(&self, frame: &mut Frame, area: Rect) {
        let t = self.theme;
        let mut page = if self.countdown.is_open() {
            vec![("Enter/k", "keep"), ("Esc/r", "roll back")]
        } else {
            self.pages[self.current].hints()
        };
        // An open form has the keyboard: Tab moves between its fields and q is typed.
        let global: Vec<(&str, &str)> =
            if self.pages[self.current].editing() || self.countdown.is_open() {
                Vec::new()
            } else {
                vec![("Tab", "page"), ("?", "help"), ("q", "quit")]
            };
        let width = |v: &[(&str, &str)]| -> usize {
            v.iter()
                .map(|(k, w)| k.chars().count() + w.chars().count() + 3)
                .sum()
        };
        let room = area.width as usize;
        // Help and quit stay in sight: the page's hints give way from the end, and a marker
        // says some did (? lists them all).
        let cut = width(&page) + width(&global) > room;
        if cut {
            while !page.is_empty() && width(&page) + width(&global) + 2 > room {
                page.pop();
            }
        }
        let mut spans = Vec::new();
        for (k, what) in page {
            spans.push(Span::styled(k, t.key()));
            spans.push(Span::styled(format!(" {what}  "), t.normal()));
        }
        if cut {
            spans.push(Span::styled(format!("{CUT} "), t.dim()));
        }
        for (k, what) in global {
            spans.push(Span::styled(k, t.key()));
            spans.push(Span::styled(format!(" {what}  "), t.normal()));
        }
        let line = Line::from(spans);
        // Narrower still: cut with the marker.
        let line = if line.width() > room {
            let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
            Line::styled(crate::widgets::fit(&text, room), t.normal())
        } else {
            line
        };
        frame.render_widget(Paragraph::new(line), area);
    }

    /// The help's lines for a box `width` columns inside: the shown page's keys first, then
    /// those of every page, each text wrapped to the width (never cut).
    fn help_lines(&self, width: usize) -> Vec<Line<'static>> {
        use crate::widgets::{key_lines, wrap_text};
        let t = self.theme;
        let mut lines = vec![Line::styled(
            crate::widgets::fit(
                &format!("This page ({})", self.current_page().label()),
                width,
            ),
            t.title(),
        )];
        for (k, what) in self.pages[self.current].help() {
            lines.extend(key_lines(k, what, width, HELP_KEY_COLUMN, t.key()));
        }
        lines.push(Line::raw(""));
        lines.push(Line::styled("Every page", t.title()));
        for (k, what) in [
            (
                "Tab / Shift-Tab, 1..9",
                "next / previous page, or a page by number",
            ),
            ("Up/Down, PgUp/PgDn", "move in a list; scroll this help"),
            ("Enter or e", "open, or change the selected item"),
            ("a or Insert", "add (IPoIB, soft links)"),
            ("d or Delete", "delete or remove, after a question"),
            ("y / n", "answer a question (it starts on Cancel)"),
            ("Esc", "cancel a form; back to the overview"),
            ("? or F1", "this help (other keys close it)"),
            ("q, F10 or Ctrl-C", "quit"),
            ("Mouse", "click a tab or a row; wheel scrolls"),
        ] {
            lines.extend(key_lines(k, what, width, HELP_KEY_COLUMN, t.key()));
        }
        for text in wrap_text(
            &format!("{CUT} marks text, tabs or keys cut to fit the terminal."),
            width,
        ) {
            lines.push(Line::raw(text));
        }
        lines.push(Line::raw(""));
        for text in wrap_text(
            "Changes go to rdma-managerd and need its polkit actions.",
            width,
        ) {
            lines.push(Line::styled(text, t.dim()));
        }
        lines
    }

    fn render_help(&mut self, frame: &mut Frame, body: Rect) {
        let t = self.theme;
        // As wide as the terminal allows up to a comfortable reading width; every line is
        // wrapped to it.
        let w = body.width.min(HELP_MAX_WIDTH);
        let inner_w = w.saturating_sub(2) as usize;
        let mut lines = self.help_lines(inner_w);
        let h = body.height.min(lines.len() as u16 + 2);
        let area = Rect {
            x: body.x + (body.width - w) / 2,
            y: body.y + (body.height - h) / 2,
            width: w,
            height: h,
        };
        // Longer than the screen: it scrolls, and says there is more.
        let inner_h = h.saturating_sub(2) as usize;
        let max_scroll = lines.len().saturating_sub(inner_h);
        self.help_scroll = self.help_scroll.min(max_scroll);
        let scroll = self.help_scroll;
        if inner_h > 2 {
            if scroll + inner_h < lines.len() {
                let last = scroll + inner_h - 1;
                lines[last] = Line::styled(
                    format!("{CUT} {} more below (Down, PgDn)", lines.len() - last),
                    t.dim(),
                );
            }
            if scroll > 0 {
                lines[scroll] =
                    Line::styled(format!("{CUT} {} more above (Up)", scroll + 1), t.dim());
            }
        }
        frame.render_widget(Clear, area);
        frame.render_widget(
            Paragraph::new(lines)
                .scroll((scroll as u16, 0))
                .block(Block::default().borders(Borders::ALL).title(" Help ")),
            area,
        );
    }
}

/// The help box's widest (a comfortable line to read), and the column its keys take.
const HELP_MAX_WIDTH: u16 = 110;
const HELP_KEY_COLUMN: usize = 22;

/// The marker of text cut to fit: one style everywhere ([`crate::widgets::fit`]).
pub const CUT: &str = crate::widgets::ELLIPSIS;

/// A failed call (`what`, as [`Call::describe`] says it) for the status line; authorization
/// failures name the action and the way to get it (the service's sentence already says both).
pub fn error_text(what: &str, e: &CallError) -> String {
    match e.kind {
        ErrorKind::NotAuthorized | ErrorKind::InteractiveAuthorizationRequired => {
            format!("Cannot {what}: {}", e.message)
        }
        ErrorKind::Bus => format!("Cannot {what}: the bus failed: {}", e.message),
        _ => format!("Cannot {what}: {}", e.message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_read_one_call_at_a_time() {
        let mut app = App::with_model(crate::fixtures::demo_model(), Theme::monochrome());
        app.show(PageId::Detail);
        app.poll_counters();
        app.poll_counters();
        let calls = app.take_calls();
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert!(matches!(calls[0].1, Call::GetCounters { .. }));
        // Still unanswered a second later: nothing more is queued.
        app.poll_counters();
        assert!(app.take_calls().is_empty());
        let (id, call) = calls[0].clone();
        app.apply(Update::CallDone {
            id,
            call,
            result: Ok(CallOutput::Counters),
        });
        app.poll_counters();
        assert_eq!(app.take_calls().len(), 1);
    }

    #[test]
    fn properties_of_an_unexpected_type_are_counted_once_on_the_status_line() {
        use zbus::zvariant::{OwnedValue, Value};
        let mut app = App::with_model(crate::fixtures::demo_model(), Theme::monochrome());
        let path = app.model.ports.keys().next().cloned().unwrap_or_default();
        let bad = HashMap::from([(
            "Lid".to_string(),
            OwnedValue::try_from(Value::from("not a number")).expect("owned"),
        )]);
        for _ in 0..3 {
            app.apply(Update::Properties {
                path: path.clone(),
                iface: crate::model::PORT_IFACE.to_string(),
                changed: bad
                    .iter()
                    .map(|(k, v)| (k.clone(), v.try_clone().expect("clone")))
                    .collect(),
            });
        }
        assert_eq!(app.model.problems.len(), 1);
        let backend = ratatui::backend::TestBackend::new(100, 24);
        let mut term = ratatui::Terminal::new(backend).expect("terminal");
        term.draw(|f| app.render(f, crate::fixtures::NOW_US))
            .expect("draw");
        let text: String = term
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        assert!(
            text.contains("1 propert(ies) of an unexpected type"),
            "{text}"
        );
    }

    fn screen(app: &mut App, w: u16, h: u16) -> Vec<String> {
        let backend = ratatui::backend::TestBackend::new(w, h);
        let mut term = ratatui::Terminal::new(backend).expect("terminal");
        term.draw(|f| app.render(f, crate::fixtures::NOW_US))
            .expect("draw");
        let buf = term.backend().buffer().clone();
        (0..h)
            .map(|y| (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect())
            .collect()
    }

    /// Every page's help is wrapped to the box, never cut: at 80 columns and wider (where the
    /// box grows), each of its sentences is there whole, and no line ends in the cut marker.
    #[test]
    fn the_help_wraps_every_line_to_the_box() {
        for width in [38, 78, 118] {
            for id in PageId::ALL {
                let mut app = App::with_model(crate::fixtures::demo_model(), Theme::monochrome());
                app.show(id);
                let lines = app.help_lines(width);
                let texts: Vec<String> = lines
                    .iter()
                    .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
                    .collect();
                for t in &texts {
                    assert!(
                        crate::widgets::columns(t) <= width,
                        "{id:?} at {width}: {t:?}"
                    );
                    assert!(!t.ends_with(CUT), "{id:?} at {width}: {t:?}");
                }
                let joined = texts.iter().map(|t| t.trim()).collect::<Vec<_>>().join(" ");
                for (k, what) in app.pages[app.current].help() {
                    assert!(joined.contains(what), "{id:?} at {width}: {k}: {what:?}");
                }
            }
        }
        // The box takes the room a wide terminal has.
        let mut app = App::with_model(crate::fixtures::demo_model(), Theme::monochrome());
        app.help = true;
        let rows = screen(&mut app, 120, 40);
        let top = rows
            .iter()
            .find(|r| r.contains("┌ Help"))
            .expect("the help box");
        assert!(top.trim().chars().count() > 100, "{top}");
    }

    /// A status line longer than the terminal ends in the cut marker.
    #[test]
    fn a_cut_status_line_says_so() {
        let mut app = App::with_model(crate::fixtures::demo_model(), Theme::monochrome());
        app.status = Status::Error(format!(
            "Cannot do it: {}",
            "the reason is long ".repeat(20)
        ));
        let rows = screen(&mut app, 80, 24);
        // An error wraps to three rows; the rest is cut with the marker.
        let at = rows
            .iter()
            .position(|r| r.starts_with("! Cannot do it"))
            .expect("the status line");
        let status = &rows[at + 2];
        assert!(status.trim_end().ends_with(CUT), "{status:?}");
    }

    /// A change on the Naming page is followed by a read of the preview; when that read
    /// answers, the status line says what was done, not the interim "...: done...".
    #[test]
    fn a_sequence_ending_in_a_read_says_done() {
        let mut app = App::with_model(crate::fixtures::demo_model(), Theme::monochrome());
        app.show(PageId::Naming);
        let answer = |app: &mut App| {
            for (id, call) in app.take_calls() {
                let result = if call == Call::PreviewRdmaNames {
                    Ok(CallOutput::Preview(Vec::new()))
                } else {
                    Ok(CallOutput::Done)
                };
                app.apply(Update::CallDone { id, call, result });
            }
        };
        answer(&mut app);
        app.outcome(Outcome::Call(Call::RemoveRdmaFixedName {
            guid: "0x0002c90300a1b2c3".into(),
        }));
        answer(&mut app);
        // The preview's read was queued after the change, and is now answered too.
        answer(&mut app);
        assert!(app.take_calls().is_empty());
        match &app.status {
            Status::Info(s) => {
                assert!(s.starts_with("Done: "), "{s}");
                assert!(!s.contains("done..."), "{s}");
            }
            other => panic!("{other:?}"),
        }
    }

    /// The bus is up but the service is not on it: the overview says the service is
    /// missing, not that the host has no RDMA devices.
    #[test]
    fn a_missing_service_is_not_a_host_without_devices() {
        let mut app = App::with_model(Model::default(), Theme::monochrome());
        app.apply(Update::ServiceGone);
        let text = screen(&mut app, 80, 24).join("\n");
        assert!(text.contains("rdma-managerd is not on the bus"), "{text}");
        assert!(!text.contains("No RDMA devices"), "{text}");
    }
}
