//! The Host page: the host setup of Red Hat's "Configuring InfiniBand and RDMA networks" as
//! rdma-managerd publishes it on its Host object: the kernel modules rdma-core loads
//! (`/etc/rdma/modules`), the pinned-memory (memlock) limits of group rdma, NFS over RDMA on
//! the NFS server, and the subnet manager (what each InfiniBand port sees, and opensm).
//!
//! One scrolling list: Up/Down move over the rows of every section. The keys of each section
//! work from anywhere on the page: Space toggles the selected module, `a` restarts the
//! module loader, `m`/`M` set or reset the memlock limits, `n` changes NFS over RDMA, `s`,
//! `x` and `e` start, stop and enable opensm. Changes that report steps or notes show them in
//! a popup afterwards.
//!
//! This file is the page (rows, keys, forms, the report popup); `sheet.rs` is what a section is
//! made of (titles, rows, notes); the sections are one file each: `modules.rs`, `memlock.rs` (with its form), `nfs.rs` (with its form),
//! `subnet_manager.rs`.

use crossterm::event::{KeyCode, KeyEvent, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Padding, Paragraph};
use ratatui::Frame;

use super::{Outcome, Page, PageId, RenderCtx};
use crate::check;
use crate::client::{Call, CallError, CallOutput, HostStep};
use crate::edit::{self, Answer, Session, Submit};
use crate::form::{truncate, wrap, Field, Form};
use crate::model::{HostSetup, Model, RdmaModule, SubnetManager, UnitState};
use crate::theme::Theme;

mod memlock;
mod modules;
mod nfs;
mod sheet;
mod subnet_manager;

use memlock::{check_memlock, memlock_notes, memlock_section, memlock_session};
use modules::modules_section;
use nfs::{check_nfs, nfs_section, nfs_session};
use sheet::{outcome_style, Sheet};
use subnet_manager::sm_section;

/// The daemon's own files, as the Host API names them.
const MEMLOCK_FILE: &str = "/etc/security/limits.d/zz-rdma-manager.conf";
const NFS_DROPIN: &str = "/etc/nfs.conf.d/zz-rdma-manager.conf";
/// The module set `a` restarts when no module row is selected.
const DEFAULT_SET: &str = "rdma";
/// What a port without a subnet manager needs.
const STUCK_INIT: &str = "no subnet manager answers: start opensm here or on a switch";

/// A selectable row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Row {
    /// An entry of `Modules`, by index.
    Module(usize),
    Memlock,
    Nfs,
    /// An entry of `SubnetManagers`, by index.
    Port(usize),
    Opensm,
}

/// The section a row belongs to (footer hints follow it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Section {
    #[default]
    Modules,
    Memlock,
    Nfs,
    SubnetManager,
}

impl Row {
    fn section(self) -> Section {
        match self {
            Row::Module(_) => Section::Modules,
            Row::Memlock => Section::Memlock,
            Row::Nfs => Section::Nfs,
            Row::Port(_) | Row::Opensm => Section::SubnetManager,
        }
    }
}

fn rows(host: &HostSetup) -> Vec<Row> {
    let mut v: Vec<Row> = (0..host.modules.len()).map(Row::Module).collect();
    v.push(Row::Memlock);
    v.push(Row::Nfs);
    v.extend((0..host.subnet_managers.len()).map(Row::Port));
    v.push(Row::Opensm);
    v
}

/// What an open form is for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Dialog {
    Memlock,
    ResetMemlock,
    Nfs,
    StartSm,
    StopSm,
    EnableSm(bool),
}

/// What a change reported: steps with their outcomes, or notes.
#[derive(Debug, Clone, PartialEq)]
struct Report {
    title: String,
    steps: Vec<HostStep>,
    notes: Vec<String>,
}

#[derive(Debug, Default)]
pub struct HostPage {
    selected: usize,
    /// The first line drawn (the list scrolls to keep the selection in view).
    offset: usize,
    section: Section,
    session: Option<Session<Dialog>>,
    report: Option<Report>,
}

fn confirm(title: &str, question: String, yes: &str, dialog: Dialog) -> Session<Dialog> {
    Session::new(Form::confirm(title, vec![question], yes), dialog)
}

fn build(host: &HostSetup, width: usize, selected: Option<Row>, t: Theme) -> Sheet {
    let mut s = Sheet::new(width, selected, t);
    let wide = width >= 120;
    modules_section(&mut s, host, wide);
    memlock_section(&mut s, host);
    nfs_section(&mut s, host);
    sm_section(&mut s, host, wide);
    s
}

impl HostPage {
    fn current_row(&self, host: &HostSetup) -> Option<Row> {
        rows(host).get(self.selected).copied()
    }

    fn open(&mut self, s: Session<Dialog>) -> Outcome {
        self.session = Some(s);
        Outcome::Handled
    }

    fn toggle_module(&self, host: &HostSetup, i: usize) -> Outcome {
        match host.modules.get(i) {
            Some(m) => Outcome::Call(Call::SetModuleEnabled {
                set: m.set.clone(),
                module: m.module.clone(),
                enabled: !m.enabled,
            }),
            None => Outcome::Ignored,
        }
    }

    /// `s`, `x`, `e`: a question first; nothing to ask when opensm cannot do it.
    fn subnet_manager(&mut self, host: &HostSetup, key: char) -> Outcome {
        let o = &host.opensm;
        if !o.unknown() && !o.installed() {
            return Outcome::Message(
                "opensm is not installed (dnf install opensm): there is nothing to start, stop \
                 or enable."
                    .into(),
            );
        }
        match key {
            's' if o.active() => Outcome::Message("opensm is running already.".into()),
            's' => self.open(confirm(
                "Start opensm",
                "Start opensm.service now? It becomes a subnet manager of the fabrics on this \
                 host's InfiniBand ports (the one with the highest priority is the master)."
                    .into(),
                "Start",
                Dialog::StartSm,
            )),
            'x' if !o.active() && !o.unknown() => Outcome::Message("opensm is not running.".into()),
            'x' => self.open(confirm(
                "Stop opensm",
                "Stop opensm.service? Unless another subnet manager takes over, ports that go \
                 down and up again stay in INIT."
                    .into(),
                "Stop",
                Dialog::StopSm,
            )),
            _ => {
                let enable = !o.enabled();
                let q = if enable {
                    "Enable opensm.service at boot? This does not start it now (s does)."
                } else {
                    "Disable opensm.service at boot? This does not stop it now (x does)."
                };
                self.open(confirm(
                    if enable {
                        "Enable opensm"
                    } else {
                        "Disable opensm"
                    },
                    q.into(),
                    if enable { "Enable" } else { "Disable" },
                    Dialog::EnableSm(enable),
                ))
            }
        }
    }

    fn form_key(&mut self, key: KeyEvent, host: &HostSetup, model: &Model) -> Outcome {
        let check = |s: &mut Session<Dialog>, _| match s.kind {
            Dialog::Memlock => check_memlock(&mut s.form),
            Dialog::Nfs => check_nfs(&mut s.form, host),
            _ => {}
        };
        edit::form_key(&mut self.session, key, model, check, submit)
    }

    fn page_key(&mut self, key: KeyEvent, host: &HostSetup) -> Outcome {
        if edit::move_in_list(&key, &mut self.selected, rows(host).len()) {
            self.follow(host);
            return Outcome::Handled;
        }
        let row = self.current_row(host);
        match key.code {
            KeyCode::Char(' ') => match row {
                Some(Row::Module(i)) => self.toggle_module(host, i),
                _ => Outcome::Message("Space toggles the selected module.".into()),
            },
            // Enter opens what the selected row has to open (a form, a port's detail), as on
            // every page; what changes the host at once has a key of its own, said here.
            KeyCode::Enter => match row {
                Some(Row::Module(_)) => Outcome::Message(
                    "Space enables or disables the selected module; l loads its set now.".into(),
                ),
                Some(Row::Memlock) => self.open(memlock_session(host)),
                Some(Row::Nfs) => self.open(nfs_session(host)),
                Some(Row::Port(i)) => match host.subnet_managers.get(i) {
                    Some(p) => Outcome::ShowPort(PageId::Detail, p.port.to_string()),
                    None => Outcome::Ignored,
                },
                Some(Row::Opensm) => Outcome::Message(
                    "s starts opensm, x stops it, e turns its start at boot on or off.".into(),
                ),
                None => Outcome::Ignored,
            },
            // `l` (load), not `a`: `a` adds on every other page.
            KeyCode::Char('l') => {
                let set = match row {
                    Some(Row::Module(i)) => host.modules.get(i).map(|m| m.set.clone()),
                    _ => None,
                }
                .unwrap_or_else(|| DEFAULT_SET.to_string());
                Outcome::Call(Call::ApplyModules { set })
            }
            KeyCode::Char('m') => self.open(memlock_session(host)),
            KeyCode::Char('M') => {
                let m = &host.memlock_managed;
                if m.soft.is_empty() && m.hard.is_empty() {
                    return Outcome::Message(format!(
                        "rdma-manager has no memlock limits to remove ({MEMLOCK_FILE} does not \
                         exist)."
                    ));
                }
                self.open(confirm(
                    "Reset memlock limits",
                    format!(
                        "Remove {MEMLOCK_FILE}? From their next login, members of group rdma \
                         get what the other limits files set, or the default."
                    ),
                    "Remove",
                    Dialog::ResetMemlock,
                ))
            }
            KeyCode::Char('n') => self.open(nfs_session(host)),
            KeyCode::Char(c @ ('s' | 'x' | 'e')) => self.subnet_manager(host, c),
            _ => Outcome::Ignored,
        }
    }

    /// Remembers the selected row's section (for the footer).
    fn follow(&mut self, host: &HostSetup) {
        if let Some(r) = self.current_row(host) {
            self.section = r.section();
        }
    }

    fn render_report(&self, frame: &mut Frame, area: Rect, t: Theme) {
        let Some(r) = &self.report else {
            return;
        };
        if area.width < 10 || area.height < 4 {
            return;
        }
        let width = area.width.min(76);
        let inner = width.saturating_sub(4) as usize;
        let mut lines: Vec<Line> = Vec::new();
        let step_w = r
            .steps
            .iter()
            .map(|s| s.step.chars().count())
            .max()
            .unwrap_or(0);
        let detail_col = 10 + step_w + 1;
        let detail_w = inner.saturating_sub(detail_col).max(10);
        for s in &r.steps {
            let style = outcome_style(&s.outcome, t);
            let detail = wrap(&s.detail, detail_w);
            for (i, d) in detail.into_iter().enumerate() {
                if i == 0 {
                    lines.push(Line::from(vec![
                        Span::styled(format!("{:<9} ", s.outcome), style),
                        Span::raw(format!("{:<step_w$} ", s.step)),
                        Span::raw(d),
                    ]));
                } else {
                    lines.push(Line::raw(format!("{}{d}", " ".repeat(detail_col))));
                }
            }
        }
        if r.steps.is_empty() && r.notes.is_empty() {
            lines.push(Line::raw("Done."));
        }
        for n in &r.notes {
            for (i, l) in wrap(n, inner.saturating_sub(2)).into_iter().enumerate() {
                let mark = if i == 0 { "- " } else { "  " };
                lines.push(Line::raw(format!("{mark}{l}")));
            }
        }
        lines.push(Line::raw(""));
        lines.push(Line::styled("Enter or Esc closes this.", t.dim()));
        let lines = crate::widgets::fit_lines(lines, inner);
        let height = (lines.len() as u16 + 2).min(area.height);
        let popup = Rect {
            x: area.x + (area.width - width) / 2,
            y: area.y + (area.height - height) / 2,
            width,
            height,
        };
        frame.render_widget(Clear, popup);
        frame.render_widget(
            Paragraph::new(lines).block(
                Block::default()
                    .borders(Borders::ALL)
                    .padding(Padding::horizontal(1))
                    .title(Span::styled(format!(" {} ", r.title), t.title())),
            ),
            popup,
        );
    }
}

/// The call a checked form makes.
fn submit(s: &mut Session<Dialog>) -> Submit {
    let call = match &s.kind {
        Dialog::Memlock => match check::memlock_pair(s.form.text("soft"), s.form.text("hard")) {
            Ok((soft, hard)) => Call::SetMemlockLimits { soft, hard },
            Err(_) => return Submit::Refuse,
        },
        Dialog::ResetMemlock => Call::ResetMemlockLimits,
        Dialog::Nfs => {
            let enabled = s.form.checked("enabled");
            let port = if enabled {
                match check::nfs_port(s.form.text("port")) {
                    Ok(p) => p,
                    Err(_) => return Submit::Refuse,
                }
            } else {
                0
            };
            Call::SetNfsRdma { enabled, port }
        }
        Dialog::StartSm => Call::StartSubnetManager,
        Dialog::StopSm => Call::StopSubnetManager,
        Dialog::EnableSm(enabled) => Call::SetSubnetManagerEnabled { enabled: *enabled },
    };
    Submit::Calls(vec![call])
}

fn report_title(call: &Call) -> String {
    match call {
        Call::ApplyModules { set } => format!("rdma-load-modules@{set}.service"),
        Call::SetNfsRdma { enabled: true, .. } => "NFS over RDMA: enable".into(),
        Call::SetNfsRdma { enabled: false, .. } => "NFS over RDMA: disable".into(),
        Call::SetMemlockLimits { .. } => "Memlock limits of group rdma".into(),
        other => other.describe(&crate::model::Model::default()),
    }
}

impl Page for HostPage {
    fn id(&self) -> PageId {
        PageId::Host
    }

    fn render(&mut self, frame: &mut Frame, area: Rect, ctx: &RenderCtx) {
        let t = ctx.theme;
        let Some(host) = &ctx.model.host_setup else {
            let lines: Vec<Line> = wrap(
                "rdma-managerd publishes no Host object (a version without host setup, or it \
                 is still starting): modules, memlock limits, NFS over RDMA and the subnet \
                 manager are not shown.",
                area.width.max(1) as usize,
            )
            .into_iter()
            .map(Line::raw)
            .collect();
            frame.render_widget(Paragraph::new(lines), area);
            return;
        };
        let all = rows(host);
        self.selected = self.selected.min(all.len().saturating_sub(1));
        let sel = all.get(self.selected).copied();
        if let Some(r) = sel {
            self.section = r.section();
        }
        let sheet = build(host, area.width as usize, sel, t);
        let height = area.height as usize;
        // Scroll just enough to show the selected row with its context.
        if let Some(&(_, context, start, end)) = sheet.rows.iter().find(|r| Some(r.0) == sel) {
            let first = if self.selected == 0 { 0 } else { context };
            if first < self.offset {
                self.offset = first;
            }
            if end > self.offset + height {
                self.offset = end.saturating_sub(height).min(start);
            }
        }
        // The last row shows what follows it to the end.
        if self.selected + 1 == all.len() {
            self.offset = self.offset.max(sheet.lines.len().saturating_sub(height));
        }
        self.offset = self
            .offset
            .min(sheet.lines.len().saturating_sub(height.max(1)));
        let selected_lines = sheet
            .rows
            .iter()
            .find(|r| Some(r.0) == sel)
            .map(|r| r.2..r.3);
        let lines: Vec<Line> = sheet
            .lines
            .into_iter()
            .skip(self.offset)
            .take(height)
            .map(|l| crate::widgets::fit_line(l, area.width as usize))
            .collect();
        frame.render_widget(Paragraph::new(lines), area);
        // The selected row in reverse video, across the whole width.
        if let Some(r) = selected_lines {
            for i in r {
                if i >= self.offset && i < self.offset + height {
                    let row = Rect {
                        y: area.y + (i - self.offset) as u16,
                        height: 1,
                        ..area
                    };
                    frame.buffer_mut().set_style(row, t.selected());
                }
            }
        }
        if let Some(s) = &self.session {
            s.form.render(frame, area, t);
        } else {
            self.render_report(frame, area, t);
        }
    }

    fn handle_key(&mut self, key: KeyEvent, model: &Model) -> Outcome {
        if let Some(out) =
            edit::key_to_form(self.session.is_some(), &key, || match &model.host_setup {
                Some(h) => self.form_key(key, h, model),
                None => self.form_key(key, &HostSetup::default(), model),
            })
        {
            return out;
        }
        if self.report.take().is_some()
            && matches!(key.code, KeyCode::Esc | KeyCode::Enter | KeyCode::Char(' '))
        {
            return Outcome::Handled;
        }
        let Some(host) = &model.host_setup else {
            return Outcome::Ignored;
        };
        self.page_key(key, host)
    }

    fn handle_mouse(&mut self, event: MouseEvent, _area: Rect, model: &Model) -> Outcome {
        let Some(host) = &model.host_setup else {
            return Outcome::Ignored;
        };
        let delta = match event.kind {
            MouseEventKind::ScrollDown => 1,
            MouseEventKind::ScrollUp => -1,
            _ => return Outcome::Ignored,
        };
        self.selected = crate::widgets::step(self.selected, delta, rows(host).len());
        self.follow(host);
        Outcome::Handled
    }

    fn call_done(&mut self, call: &Call, result: &Result<CallOutput, CallError>) {
        if let Some(s) = &mut self.session {
            match s.answer(call, result) {
                Answer::NotOurs => {}
                Answer::Finished(out) => {
                    self.session = None;
                    self.report_output(call, &out);
                    return;
                }
                Answer::Continue | Answer::Failed => return,
            }
        }
        // A call made without a form (Space, a).
        if let Ok(out) = result {
            self.report_output(call, out);
        }
    }

    edit::form_page_methods!();

    fn hints(&self) -> Vec<(&'static str, &'static str)> {
        if let Some(s) = &self.session {
            return edit::form_hints(&s.form);
        }
        let mut v = match self.section {
            Section::Modules => vec![("Space", "enable/disable"), ("l", "load now")],
            Section::Memlock => vec![("m", "set limits"), ("M", "reset")],
            Section::Nfs => vec![("n", "change")],
            Section::SubnetManager => vec![("s", "start"), ("x", "stop"), ("e", "boot")],
        };
        v.insert(0, ("Up/Down", "row"));
        v
    }

    fn help(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("Space", "enable/disable the selected module"),
            (
                "l",
                "load the selected set's modules now (restarts rdma-load-modules@<set>)",
            ),
            ("m or Enter", "set the memlock limits of group rdma"),
            ("M", "remove rdma-manager's memlock limits"),
            ("n or Enter", "NFS over RDMA on/off, port"),
            ("s / x / e", "start / stop opensm; enable it at boot or not"),
            ("Enter on a port", "its detail page"),
        ]
    }
}

impl HostPage {
    /// Shows what a change reported (steps, notes); other answers only reach the status line.
    fn report_output(&mut self, call: &Call, out: &CallOutput) {
        match (call, out) {
            (Call::SetMemlockLimits { .. }, CallOutput::Notes(notes)) => {
                self.report = Some(Report {
                    title: report_title(call),
                    steps: Vec::new(),
                    notes: memlock_notes(notes),
                });
            }
            (_, CallOutput::Notes(notes)) => {
                self.report = Some(Report {
                    title: report_title(call),
                    steps: Vec::new(),
                    notes: notes.clone(),
                });
            }
            (_, CallOutput::Steps(steps)) => {
                self.report = Some(Report {
                    title: report_title(call),
                    steps: steps.clone(),
                    notes: Vec::new(),
                });
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::demo_model;

    #[test]
    fn rows_cover_every_section() {
        let m = demo_model();
        let Some(h) = &m.host_setup else {
            panic!("the demo model has a Host");
        };
        let r = rows(h);
        assert_eq!(r.len(), h.modules.len() + 2 + h.subnet_managers.len() + 1);
        let sheet = build(h, 80, None, Theme::colored());
        assert_eq!(sheet.rows.len(), r.len());
        assert!(sheet.rows.iter().zip(&r).all(|(a, b)| a.0 == *b));
    }
}
