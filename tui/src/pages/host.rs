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

use crossterm::event::{KeyCode, KeyEvent, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Padding, Paragraph};
use ratatui::Frame;

use super::{Outcome, Page, PageId, RenderCtx};
use crate::check;
use crate::client::{Call, CallError, CallOutput, Step};
use crate::edit::{self, Answer, Session};
use crate::form::{truncate, wrap, Field, Form, FormEvent};
use crate::model::{Host, Model, RdmaModule, SubnetManager, UnitState};
use crate::theme::Theme;

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

fn rows(host: &Host) -> Vec<Row> {
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
    steps: Vec<Step>,
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

/// A value of MemlockSoft/MemlockHard in words.
fn limit_text(v: &str) -> String {
    match v {
        "" => "not set".into(),
        "unlimited" => "unlimited".into(),
        kib => match kib.parse::<u64>() {
            Ok(k) if k >= 1024 * 1024 && k % (1024 * 1024) == 0 => {
                format!("{k} KiB ({} GiB)", k / (1024 * 1024))
            }
            Ok(k) if k >= 1024 && k % 1024 == 0 => format!("{k} KiB ({} MiB)", k / 1024),
            Ok(k) => format!("{k} KiB"),
            Err(_) => kib.to_string(),
        },
    }
}

/// A unit's state in words: "inactive, disabled at boot", "not installed".
fn unit_text(u: &UnitState) -> String {
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

fn unit_style(u: &UnitState, t: Theme) -> Style {
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
fn outcome_style(outcome: &str, t: Theme) -> Style {
    match outcome {
        "done" => t.good(),
        "unchanged" => t.normal(),
        "skipped" => t.warn(),
        "failed" => t.bad(),
        _ => t.dim(),
    }
}

fn verdict_text(sm: &SubnetManager) -> String {
    match sm.verdict.as_str() {
        "seen" => format!("seen: the subnet manager at LID {} answers", sm.sm_lid),
        "stuck-init" => format!("stuck-init: {STUCK_INIT}"),
        "none" => format!("none: no subnet manager LID while {}", sm.state),
        other => other.to_string(),
    }
}

fn verdict_style(verdict: &str, t: Theme) -> Style {
    match verdict {
        "seen" => t.good(),
        "stuck-init" => t.bad(),
        _ => t.dim(),
    }
}

/// The lines of the page and where each row is in them.
struct Sheet {
    lines: Vec<Line<'static>>,
    /// Per row: its lines, and the first line to show with it (its section's title for the
    /// first row of a section).
    rows: Vec<(Row, usize, usize, usize)>,
    width: usize,
    selected: Option<Row>,
    theme: Theme,
}

impl Sheet {
    fn new(width: usize, selected: Option<Row>, theme: Theme) -> Sheet {
        Sheet {
            lines: Vec::new(),
            rows: Vec::new(),
            width,
            selected,
            theme,
        }
    }

    /// A section title, with the section's keys at the right when they fit.
    fn title(&mut self, title: &str, keys: &str) -> usize {
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
    fn row(&mut self, row: Row, context: usize, body: Vec<Vec<Span<'static>>>) {
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
    fn para(&mut self, text: &str, style: Style, indent: usize) {
        let w = self.width.saturating_sub(indent).max(10);
        for l in wrap(text, w) {
            self.lines.push(Line::from(vec![
                Span::raw(" ".repeat(indent)),
                Span::styled(l, style),
            ]));
        }
    }

    /// A note: "- " and the text wrapped under itself.
    fn note(&mut self, text: &str, style: Style) {
        let w = self.width.saturating_sub(4).max(10);
        for (i, l) in wrap(text, w).into_iter().enumerate() {
            let mark = if i == 0 { "  - " } else { "    " };
            self.lines
                .push(Line::from(vec![Span::raw(mark), Span::styled(l, style)]));
        }
    }

    /// "label  value": a fixed label column then spans.
    fn field(label: &str, label_w: usize, value: Vec<Span<'static>>) -> Vec<Span<'static>> {
        let mut v = vec![Span::raw(format!("{label:<label_w$}  "))];
        v.extend(value);
        v
    }
}

fn build(host: &Host, width: usize, selected: Option<Row>, t: Theme) -> Sheet {
    let mut s = Sheet::new(width, selected, t);
    let wide = width >= 120;
    modules_section(&mut s, host, wide);
    memlock_section(&mut s, host);
    nfs_section(&mut s, host);
    sm_section(&mut s, host, wide);
    s
}

fn modules_section(s: &mut Sheet, host: &Host, wide: bool) {
    let t = s.theme;
    let unit = match host.modules_unit.as_str() {
        "" => "unknown".to_string(),
        u => u.to_string(),
    };
    let title = s.title(
        "Kernel modules (/etc/rdma/modules)",
        "Space enable/disable  a apply",
    );
    let unit_style = match host.modules_unit.as_str() {
        "active" => t.good(),
        "failed" => t.bad(),
        "" => t.dim(),
        _ => t.normal(),
    };
    s.lines.push(Line::from(vec![
        Span::raw("  rdma-load-modules@rdma.service: "),
        Span::styled(unit, unit_style),
    ]));
    if host.modules.is_empty() {
        s.para(
            "No module lines: /etc/rdma/modules is missing or empty (rdma-core provides it).",
            t.warn(),
            2,
        );
        return;
    }
    let set_of = |m: &RdmaModule| {
        if wide {
            format!("{}.conf:{}", m.set, m.line)
        } else {
            m.set.clone()
        }
    };
    let set_w = host
        .modules
        .iter()
        .map(|m| set_of(m).chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let mod_w = host
        .modules
        .iter()
        .map(|m| m.module.chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    let fixed = 2 + set_w + 2 + mod_w + 2 + 8 + 2 + 10 + 2;
    let desc_w = s.width.saturating_sub(fixed);
    let set_head = if wide { "File" } else { "Set" };
    s.lines.push(Line::styled(
        format!(
            "  {set_head:<set_w$}  {:<mod_w$}  {:<8}  {:<10}  {}",
            "Module", "In file", "Now", "Description"
        ),
        t.dim(),
    ));
    for (i, m) in host.modules.iter().enumerate() {
        let (file, file_style) = if m.enabled {
            ("enabled", t.good())
        } else {
            ("disabled", t.dim())
        };
        let (now, now_style) = match (m.enabled, m.loaded) {
            (_, true) => ("loaded", t.good()),
            // In the file but not in the kernel: `a` loads it.
            (true, false) => ("not loaded", t.warn()),
            (false, false) => ("not loaded", t.dim()),
        };
        let spans = vec![
            Span::raw(format!("{:<set_w$}  ", set_of(m))),
            Span::raw(format!("{:<mod_w$}  ", m.module)),
            Span::styled(format!("{file:<8}"), file_style),
            Span::raw("  "),
            Span::styled(format!("{now:<10}"), now_style),
            Span::raw("  "),
            Span::styled(truncate(&m.description, desc_w), t.dim()),
        ];
        let context = if i == 0 { title } else { usize::MAX };
        s.row(Row::Module(i), context, vec![spans]);
    }
}

fn memlock_section(s: &mut Sheet, host: &Host) {
    let t = s.theme;
    let title = s.title("Pinned memory (memlock) of group rdma", "m set  M reset");
    let origin = |k: &str| -> Span<'static> {
        match host.memlock_origin.get(k) {
            Some(o) => Span::styled(format!("  from {o}"), t.dim()),
            None => Span::styled("  (no limits file sets it)", t.dim()),
        }
    };
    let value = |v: &str| -> Span<'static> {
        let style = if v.is_empty() { t.warn() } else { t.normal() };
        Span::styled(limit_text(v), style)
    };
    let mut soft = Sheet::field("Soft", 4, vec![value(&host.memlock_soft)]);
    soft.push(origin("soft"));
    let mut hard = Sheet::field("Hard", 4, vec![value(&host.memlock_hard)]);
    hard.push(origin("hard"));
    s.row(Row::Memlock, title, vec![soft, hard]);
    let managed = &host.memlock_managed;
    if managed.soft.is_empty() && managed.hard.is_empty() {
        s.para(
            &format!("rdma-manager's file ({MEMLOCK_FILE}): none"),
            t.dim(),
            2,
        );
    } else {
        s.para(
            &format!(
                "rdma-manager's file ({MEMLOCK_FILE}): soft {}, hard {}",
                limit_text(&managed.soft),
                limit_text(&managed.hard)
            ),
            t.normal(),
            2,
        );
    }
    for n in &host.memlock_notes {
        s.note(n, t.dim());
    }
}

fn nfs_section(s: &mut Sheet, host: &Host) {
    let t = s.theme;
    let title = s.title("NFS over RDMA (NFS server)", "n change");
    let mut state = if host.nfs_rdma {
        vec![
            Span::styled("enabled", t.good()),
            Span::raw(format!(", port {}", host.nfs_rdma_port)),
        ]
    } else {
        vec![Span::styled("disabled", t.dim())]
    };
    let origins: Vec<String> = host
        .nfs_rdma_origin
        .iter()
        .map(|(k, v)| format!("{k} from {v}"))
        .collect();
    if !origins.is_empty() {
        state.push(Span::styled(format!("  ({})", origins.join(", ")), t.dim()));
    }
    let server = vec![Span::styled(
        unit_text(&host.nfs_server),
        unit_style(&host.nfs_server, t),
    )];
    let fw = if host.firewalld {
        vec![Span::raw("running (enabling opens the port)")]
    } else {
        vec![Span::styled("not running (no port to open)", t.dim())]
    };
    s.row(
        Row::Nfs,
        title,
        vec![
            Sheet::field("RDMA", 11, state),
            Sheet::field("nfs-server", 11, server),
            Sheet::field("firewalld", 11, fw),
        ],
    );
    for n in &host.nfs_notes {
        s.note(n, t.dim());
    }
}

fn sm_section(s: &mut Sheet, host: &Host, wide: bool) {
    let t = s.theme;
    let title = s.title(
        "Subnet manager (InfiniBand)",
        "s start  x stop  e enable/disable",
    );
    if host.subnet_managers.is_empty() {
        s.para("No InfiniBand port.", t.dim(), 2);
    } else {
        let name_w = host
            .subnet_managers
            .iter()
            .map(|p| p.name.chars().count())
            .max()
            .unwrap_or(0)
            .max(4);
        s.lines.push(Line::styled(
            format!(
                "  {:<name_w$}  {:<7}  {:>6}  Verdict",
                "Port", "State", "SM LID"
            ),
            t.dim(),
        ));
        let header = s.lines.len() - 1;
        let verdict_w = s.width.saturating_sub(2 + name_w + 2 + 7 + 2 + 6 + 2);
        for (i, p) in host.subnet_managers.iter().enumerate() {
            let verdict = verdict_text(p);
            let mut body = vec![vec![
                Span::raw(format!("{:<name_w$}  ", p.name)),
                Span::styled(format!("{:<7}", p.state), t.port_state(&p.state)),
                Span::raw(format!("  {:>6}  ", p.sm_lid)),
                Span::styled(
                    if wide || verdict.chars().count() <= verdict_w {
                        verdict.clone()
                    } else {
                        p.verdict.clone()
                    },
                    verdict_style(&p.verdict, t),
                ),
            ]];
            if p.verdict == "stuck-init" && !wide && verdict.chars().count() > verdict_w {
                // Narrow: the explanation on its own line under the port.
                for l in wrap(&format!("! {STUCK_INIT}"), s.width.saturating_sub(4)) {
                    body.push(vec![Span::raw("  "), Span::styled(l, t.bad())]);
                }
            }
            let context = if i == 0 { title.min(header) } else { header };
            s.row(Row::Port(i), context, body);
        }
    }
    let o = &host.opensm;
    let label_w = host
        .subnet_managers
        .iter()
        .map(|p| p.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    let mut spans = Sheet::field(
        "opensm",
        label_w,
        vec![Span::styled(unit_text(o), unit_style(o, t))],
    );
    if o.installed() {
        spans.push(Span::styled(
            if o.active() {
                "  (x stops it)"
            } else {
                "  (s starts it)"
            },
            t.dim(),
        ));
    }
    s.row(Row::Opensm, s.lines.len(), vec![spans]);
    if !o.unknown() && !o.installed() {
        s.para(
            "opensm is not installed: install it (dnf install opensm) or run the subnet \
             manager on a switch; s, x and e need it.",
            t.dim(),
            2,
        );
    } else if host
        .subnet_managers
        .iter()
        .any(|p| p.verdict == "stuck-init")
        && !o.active()
    {
        s.para(
            "A port is stuck in INIT: every InfiniBand fabric needs one subnet manager.",
            t.warn(),
            2,
        );
    }
}

fn memlock_session(host: &Host) -> Session<Dialog> {
    let managed = &host.memlock_managed;
    let pick = |v: &str| if v.is_empty() { "unlimited" } else { v }.to_string();
    let form = Form::new("Pinned memory of group rdma", "Set")
        .intro(vec![format!(
            "Writes {MEMLOCK_FILE} (@rdma soft/hard memlock). Members of group rdma get the \
             limits from their next login."
        )])
        .field(
            Field::text("soft", "Soft", &pick(&managed.soft), 20)
                .with_note("\"unlimited\" or KiB (65536 = 64 MiB); at most the hard limit"),
        )
        .field(
            Field::text("hard", "Hard", &pick(&managed.hard), 20)
                .with_note("\"unlimited\" or KiB; the most a process may raise its limit to"),
        );
    let mut s = Session::new(form, Dialog::Memlock);
    check_memlock(&mut s.form);
    s
}

fn check_memlock(form: &mut Form) {
    let soft = form.text("soft").to_string();
    let hard = form.text("hard").to_string();
    let hard_err = check::memlock_value(&hard).err();
    let soft_err = match check::memlock_value(&soft) {
        Err(e) => Some(e),
        Ok(_) if hard_err.is_none() => check::memlock_pair(&soft, &hard).err(),
        Ok(_) => None,
    };
    form.set_error("soft", soft_err);
    form.set_error("hard", hard_err);
}

fn nfs_session(host: &Host) -> Session<Dialog> {
    let port = if host.nfs_rdma_port == 0 {
        20049
    } else {
        host.nfs_rdma_port
    };
    let form = Form::new("NFS over RDMA", "Apply")
        .intro(vec![format!(
            "On: writes {NFS_DROPIN} (rdma=y), enables xprtrdma and svcrdma in rdma.conf, \
             opens the port in firewalld (tcp and udp), restarts nfs-server, enables it at boot \
             and checks that svcrdma is loaded. Off: removes the setting and restarts \
             nfs-server; the port stays open."
        )])
        .field(Field::check("enabled", "NFS over RDMA", host.nfs_rdma))
        .field(
            Field::text("port", "Port", &port.to_string(), 5)
                .with_note("1 to 65535; 20049 is the standard (nfsrdma)"),
        );
    let mut s = Session::new(form, Dialog::Nfs);
    check_nfs(&mut s.form, host);
    s
}

fn check_nfs(form: &mut Form, host: &Host) {
    let enabled = form.checked("enabled");
    let err = if enabled {
        check::nfs_port(form.text("port")).err()
    } else {
        None
    };
    form.set_error("port", err);
    let mut warn = Vec::new();
    if enabled && !host.nfs_server.unknown() && !host.nfs_server.installed() {
        warn.push("nfs-server is not installed: it is not restarted (skipped)");
    }
    if enabled && !host.firewalld {
        warn.push("firewalld does not run: no port is opened (skipped)");
    }
    form.set_warning("enabled", (!warn.is_empty()).then(|| warn.join("; ")));
}

fn confirm(title: &str, question: String, yes: &str, dialog: Dialog) -> Session<Dialog> {
    Session::new(Form::confirm(title, vec![question], yes), dialog)
}

impl HostPage {
    fn current_row(&self, host: &Host) -> Option<Row> {
        rows(host).get(self.selected).copied()
    }

    fn open(&mut self, s: Session<Dialog>) -> Outcome {
        self.session = Some(s);
        Outcome::Handled
    }

    fn toggle_module(&self, host: &Host, i: usize) -> Outcome {
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
    fn subnet_manager(&mut self, host: &Host, key: char) -> Outcome {
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

    fn form_key(&mut self, key: KeyEvent, host: &Host, model: &Model) -> Outcome {
        let Some(s) = &mut self.session else {
            return Outcome::Ignored;
        };
        let check = |s: &mut Session<Dialog>| match s.kind {
            Dialog::Memlock => check_memlock(&mut s.form),
            Dialog::Nfs => check_nfs(&mut s.form, host),
            _ => {}
        };
        match s.form.handle_key(key) {
            FormEvent::Cancel => {
                self.session = None;
                Outcome::Handled
            }
            FormEvent::Changed(_) => {
                check(s);
                Outcome::Handled
            }
            FormEvent::Submit => {
                check(s);
                if s.form.has_errors() {
                    s.form.refuse();
                    return Outcome::Handled;
                }
                let call = match &s.kind {
                    Dialog::Memlock => {
                        match check::memlock_pair(s.form.text("soft"), s.form.text("hard")) {
                            Ok((soft, hard)) => Call::SetMemlockLimits { soft, hard },
                            Err(_) => {
                                s.form.refuse();
                                return Outcome::Handled;
                            }
                        }
                    }
                    Dialog::ResetMemlock => Call::ResetMemlockLimits,
                    Dialog::Nfs => {
                        let enabled = s.form.checked("enabled");
                        let port = if enabled {
                            match check::nfs_port(s.form.text("port")) {
                                Ok(p) => p,
                                Err(_) => {
                                    s.form.refuse();
                                    return Outcome::Handled;
                                }
                            }
                        } else {
                            0
                        };
                        Call::SetNfsRdma { enabled, port }
                    }
                    Dialog::StartSm => Call::StartSubnetManager,
                    Dialog::StopSm => Call::StopSubnetManager,
                    Dialog::EnableSm(enabled) => {
                        Call::SetSubnetManagerEnabled { enabled: *enabled }
                    }
                };
                s.send(vec![call], model)
            }
            FormEvent::Handled => Outcome::Handled,
        }
    }

    fn page_key(&mut self, key: KeyEvent, host: &Host) -> Outcome {
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
            KeyCode::Enter => match row {
                Some(Row::Module(i)) => self.toggle_module(host, i),
                Some(Row::Memlock) => self.open(memlock_session(host)),
                Some(Row::Nfs) => self.open(nfs_session(host)),
                Some(Row::Port(i)) => match host.subnet_managers.get(i) {
                    Some(p) => Outcome::ShowPort(PageId::Detail, p.port.clone()),
                    None => Outcome::Ignored,
                },
                Some(Row::Opensm) if host.opensm.active() => self.subnet_manager(host, 'x'),
                Some(Row::Opensm) => self.subnet_manager(host, 's'),
                None => Outcome::Ignored,
            },
            KeyCode::Char('a') => {
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
    fn follow(&mut self, host: &Host) {
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

/// Notes of SetMemlockLimits: the service's, with when they apply said in any case.
fn memlock_notes(notes: &[String]) -> Vec<String> {
    let mut v = notes.to_vec();
    if !v.iter().any(|n| n.contains("login")) {
        v.insert(0, "The limits apply from the next login.".into());
    }
    v
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
        let Some(host) = &ctx.model.host else {
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
        if let Some(out) = edit::key_to_form(self.session.is_some(), &key, || match &model.host {
            Some(h) => self.form_key(key, h, model),
            None => self.form_key(key, &Host::default(), model),
        }) {
            return out;
        }
        if self.report.take().is_some()
            && matches!(key.code, KeyCode::Esc | KeyCode::Enter | KeyCode::Char(' '))
        {
            return Outcome::Handled;
        }
        let Some(host) = &model.host else {
            return Outcome::Ignored;
        };
        self.page_key(key, host)
    }

    fn handle_mouse(&mut self, event: MouseEvent, _area: Rect, model: &Model) -> Outcome {
        let Some(host) = &model.host else {
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

    fn next_call(&mut self) -> Option<Call> {
        self.session.as_mut().and_then(Session::next_call)
    }

    fn editing(&self) -> bool {
        self.session.is_some()
    }

    fn hints(&self) -> Vec<(&'static str, &'static str)> {
        if self.session.is_some() {
            return edit::form_hints();
        }
        let mut v = match self.section {
            Section::Modules => vec![("Space", "enable/disable"), ("a", "apply")],
            Section::Memlock => vec![("m", "set limits"), ("M", "reset")],
            Section::Nfs => vec![("n", "change")],
            Section::SubnetManager => vec![("s", "start"), ("x", "stop"), ("e", "boot")],
        };
        v.insert(0, ("Up/Down", "row"));
        v
    }

    fn help(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("Space or Enter", "enable/disable the selected module"),
            ("a", "apply: restart rdma-load-modules@<set>"),
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
    fn limits_in_words() {
        assert_eq!(limit_text(""), "not set");
        assert_eq!(limit_text("unlimited"), "unlimited");
        assert_eq!(limit_text("65536"), "65536 KiB (64 MiB)");
        assert_eq!(limit_text("1048576"), "1048576 KiB (1 GiB)");
        assert_eq!(limit_text("100"), "100 KiB");
    }

    #[test]
    fn rows_cover_every_section() {
        let m = demo_model();
        let Some(h) = &m.host else {
            panic!("the demo model has a Host");
        };
        let r = rows(h);
        assert_eq!(r.len(), h.modules.len() + 2 + h.subnet_managers.len() + 1);
        let sheet = build(h, 80, None, Theme::colored());
        assert_eq!(sheet.rows.len(), r.len());
        assert!(sheet.rows.iter().zip(&r).all(|(a, b)| a.0 == *b));
    }
}
