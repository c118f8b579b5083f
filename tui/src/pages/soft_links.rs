//! The soft links page: Soft-RoCE (rxe) and Soft-iWARP (siw) devices, present and
//! remembered, with a form to add one over an Ethernet interface (`rdma link add`) and a
//! confirmation to remove one (`rdma link delete`, and forgotten).

use std::collections::BTreeSet;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::{list_view, Outcome, Page, PageId, RenderCtx};
use crate::check;
use crate::client::{Call, CallError, CallOutput};
use crate::edit::{self, Session, Submit};
use crate::form::{ChoiceOption, Field, Form};
use crate::model::{Device, Model};
use crate::theme::Theme;

/// The kinds of soft devices.
const SOFT_KINDS: [&str; 2] = ["rxe", "siw"];

fn is_soft(d: &Device) -> bool {
    SOFT_KINDS.contains(&d.kind.as_str())
}

/// One line of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Row {
    /// A present soft device (object path).
    Device(String),
    /// A remembered link that is not present: its name.
    Absent(String),
}

#[derive(Debug)]
enum Dialog {
    /// Add a link; `auto_name` is the name last filled in from the type, which the name
    /// follows until the user edits it.
    Add {
        auto_name: String,
    },
    Remove {
        name: String,
    },
}

#[derive(Debug, Default)]
pub struct SoftLinksPage {
    selected: usize,
    /// A device to select as soon as the model has it (a link just added).
    select_path: Option<String>,
    session: Option<Session<Dialog>>,
}

fn rows(model: &Model) -> Vec<Row> {
    let present: Vec<&Device> = model
        .devices_in_order()
        .into_iter()
        .filter(|d| is_soft(d))
        .collect();
    let mut out: Vec<Row> = present
        .iter()
        .map(|d| Row::Device(d.path.clone()))
        .collect();
    for l in &model.manager.soft_links {
        if !present.iter().any(|d| d.name == l.name) {
            out.push(Row::Absent(l.name.clone()));
        }
    }
    out
}

/// Ethernet interfaces an rxe or siw can run over, as far as the model knows them (the bus
/// publishes no list of all interfaces: the form also takes any typed name).
pub fn netdev_candidates(model: &Model) -> Vec<String> {
    let ipoib: BTreeSet<&str> = model.ipoib.values().map(|i| i.name.as_str()).collect();
    let mut ib_netdevs: BTreeSet<&str> = ipoib.clone();
    for p in model.ports.values().filter(|p| p.is_infiniband()) {
        ib_netdevs.insert(p.netdev.as_str());
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut add = |n: &str| {
        if !n.is_empty() && !ib_netdevs.contains(n) && seen.insert(n.to_string()) {
            out.push(n.to_string());
        }
    };
    for d in model.devices_in_order() {
        add(&d.parent_netdev);
    }
    for p in model.ports_in_order() {
        if p.is_infiniband() {
            continue;
        }
        add(&p.netdev);
        for g in &p.gids {
            add(&g.netdev);
        }
    }
    for d in model.devices_in_order() {
        for n in &d.netdevs {
            add(n);
        }
    }
    out
}

/// The soft device of `kind` over `netdev`, if any.
fn soft_on<'m>(model: &'m Model, netdev: &str, kind: Option<&str>) -> Option<&'m Device> {
    model
        .devices
        .values()
        .find(|d| is_soft(d) && d.parent_netdev == netdev && kind.is_none_or(|k| d.kind == k))
}

/// The first `<kind><N>` that no device and no remembered link has.
fn free_name(model: &Model, kind: &str) -> String {
    let taken = |n: &str| {
        model.devices.values().any(|d| d.name == n)
            || model.manager.soft_links.iter().any(|l| l.name == n)
    };
    (0..)
        .map(|i| format!("{kind}{i}"))
        .find(|n| !taken(n))
        .unwrap_or_else(|| format!("{kind}0"))
}

fn add_session(model: &Model) -> Session<Dialog> {
    let candidates = netdev_candidates(model);
    // First an interface without a soft device: the kernel allows one rxe per interface.
    let netdev = candidates
        .iter()
        .find(|n| soft_on(model, n, None).is_none())
        .or(candidates.first())
        .cloned()
        .unwrap_or_default();
    let name = free_name(model, "rxe");
    let form = Form::new("Add a soft RDMA link", "Add")
        .field(Field::choice(
            "kind",
            "Type",
            vec![
                ChoiceOption::new("rxe", "rxe (Soft-RoCE)"),
                ChoiceOption::new("siw", "siw (Soft-iWARP)"),
            ],
            "rxe",
        ))
        .field(
            Field::text("netdev", "Netdev", &netdev, 20)
                .placeholder("an Ethernet interface")
                .suggestions(candidates),
        )
        .field(Field::text("name", "Name", &name, 64));
    let mut s = Session::new(form, Dialog::Add { auto_name: name });
    check_add(&mut s, model, None);
    s
}

/// Checks the add form as AddSoftLink will, and what the kernel would refuse that the model
/// can tell: a name in use, an interface that already carries a device of that type. The
/// name follows the type (when `changed` is the type) until the user edits it.
fn check_add(s: &mut Session<Dialog>, model: &Model, changed: Option<&str>) {
    let Dialog::Add { auto_name } = &mut s.kind else {
        return;
    };
    let form = &mut s.form;
    let kind = form.choice("kind").unwrap_or("rxe").to_string();
    let name = form.text("name").to_string();
    if changed == Some("kind") && (name.is_empty() || name == *auto_name) {
        let fresh = free_name(model, &kind);
        form.set_text("name", &fresh);
        *auto_name = fresh;
    }
    let name = form.text("name").to_string();
    let name_err = check::rdma_name(&name).err().or_else(|| {
        model
            .devices
            .values()
            .any(|d| d.name == name)
            .then(|| format!("an RDMA device named {name} exists already"))
    });
    form.set_error("name", name_err);
    let remembered = model
        .manager
        .soft_links
        .iter()
        .find(|l| l.name == name && !model.devices.values().any(|d| d.name == name));
    form.set_warning(
        "name",
        remembered.map(|l| {
            format!(
                "{name} is remembered over {}; adding replaces that entry",
                l.netdev
            )
        }),
    );
    let netdev = form.text("netdev").to_string();
    let netdev_err = if netdev.is_empty() {
        Some("give the Ethernet interface to run over (Space: the ones known)".to_string())
    } else {
        check::netdev_name(&netdev).err().or_else(|| {
            if model.ipoib.values().any(|i| i.name == netdev) {
                Some(format!(
                    "{netdev} is an IPoIB interface; {kind} runs over Ethernet"
                ))
            } else {
                soft_on(model, &netdev, Some(&kind))
                    .map(|d| format!("{netdev} already carries {} ({kind})", d.name))
            }
        })
    };
    form.set_error("netdev", netdev_err);
    let hw = model
        .devices
        .values()
        .find(|d| !is_soft(d) && d.netdevs.contains(&netdev));
    let note = match hw {
        Some(d) => Some(format!(
            "{netdev} belongs to {}, which does RDMA in hardware already",
            d.name
        )),
        None if !netdev.is_empty() && !netdev_candidates(model).contains(&netdev) => Some(format!(
            "{netdev} is not among the interfaces known here; the daemon checks it"
        )),
        None => None,
    };
    form.set_warning("netdev", note);
}

impl SoftLinksPage {
    fn selected_row(&self, model: &Model) -> Option<Row> {
        rows(model).get(self.selected).cloned()
    }

    fn open_remove(&mut self, model: &Model) -> Outcome {
        let (name, question) = match self.selected_row(model) {
            Some(Row::Device(p)) => {
                let Some(d) = model.devices.get(&p) else {
                    return Outcome::Ignored;
                };
                let mut q = vec![format!(
                    "Remove {} ({} over {})? This is rdma link delete {}.",
                    d.name, d.kind, d.parent_netdev, d.name
                )];
                if model.manager.soft_links.iter().any(|l| l.name == d.name) {
                    q.push("rdma-managerd forgets it too: it is not added again at start.".into());
                }
                (d.name.clone(), q)
            }
            Some(Row::Absent(name)) => {
                let over = model
                    .manager
                    .soft_links
                    .iter()
                    .find(|l| l.name == name)
                    .map(|l| format!(" ({} over {})", l.kind, l.netdev))
                    .unwrap_or_default();
                (
                    name.clone(),
                    vec![format!(
                        "Forget {name}{over}? It is not present: rdma-managerd only stops \
                         adding it again."
                    )],
                )
            }
            None => return Outcome::Ignored,
        };
        self.session = Some(Session::new(
            Form::confirm(format!("Remove {name}"), question, "Remove"),
            Dialog::Remove { name },
        ));
        Outcome::Handled
    }

    fn form_key(&mut self, key: KeyEvent, model: &Model) -> Outcome {
        edit::form_key(
            &mut self.session,
            key,
            model,
            |s, changed| check_add(s, model, changed),
            |s| {
                Submit::Calls(vec![match &s.kind {
                    Dialog::Add { .. } => Call::AddSoftLink {
                        name: s.form.text("name").to_string(),
                        kind: s.form.choice("kind").unwrap_or("rxe").to_string(),
                        netdev: s.form.text("netdev").to_string(),
                    },
                    Dialog::Remove { name } => Call::RemoveSoftLink { name: name.clone() },
                }])
            },
        )
    }
}

impl Page for SoftLinksPage {
    fn id(&self) -> PageId {
        PageId::SoftLinks
    }

    fn render(&mut self, frame: &mut Frame, area: Rect, ctx: &RenderCtx) {
        let model = ctx.model;
        let t = ctx.theme;
        let rows = rows(model);
        edit::select_wanted(
            &rows,
            &mut self.select_path,
            &mut self.selected,
            |r, p| matches!(r, Row::Device(d) if d == p),
        );
        let [list, details] = list_view::list_and_details(area, rows.len(), 7);
        render_table(frame, list, model, &rows, self.selected, t);
        render_details(frame, details, model, rows.get(self.selected), t);
        edit::render_form(frame, area, &self.session, t);
    }

    fn handle_key(&mut self, key: KeyEvent, model: &Model) -> Outcome {
        if let Some(out) =
            edit::key_to_form(self.session.is_some(), &key, || self.form_key(key, model))
        {
            return out;
        }
        if edit::move_in_list(&key, &mut self.selected, rows(model).len()) {
            return Outcome::Handled;
        }
        match key.code {
            KeyCode::Char('a') | KeyCode::Insert => {
                self.session = Some(add_session(model));
                Outcome::Handled
            }
            KeyCode::Char('d') | KeyCode::Delete => self.open_remove(model),
            KeyCode::Enter => match self.selected_row(model) {
                Some(Row::Device(p)) => match model.devices.get(&p).and_then(|d| d.ports.first()) {
                    Some(port) => Outcome::ShowPort(PageId::Detail, port.clone()),
                    None => Outcome::Ignored,
                },
                _ => Outcome::Ignored,
            },
            _ => Outcome::Ignored,
        }
    }

    fn call_done(&mut self, call: &Call, result: &Result<CallOutput, CallError>) {
        if let Some(CallOutput::Created(path)) =
            edit::answer_and_close(&mut self.session, call, result)
        {
            self.select_path = Some(path);
        }
    }

    edit::form_page_methods!();

    fn hints(&self) -> Vec<(&'static str, &'static str)> {
        edit::hints(
            self.session.as_ref().map(|s| &s.form),
            vec![("a", "add"), ("d", "remove"), ("Enter", "port")],
        )
    }

    fn help(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            (
                "a or Insert",
                "add a soft link (Space cycles the interfaces)",
            ),
            ("d or Delete", "remove the selected link, after a question"),
            ("Enter", "the selected link's port"),
        ]
    }
}

fn render_table(frame: &mut Frame, area: Rect, model: &Model, rows: &[Row], sel: usize, t: Theme) {
    if rows.is_empty() {
        list_view::render_empty(
            frame,
            area,
            "Soft RDMA links",
            "None. a adds Soft-RoCE (rxe) or Soft-iWARP (siw) over an Ethernet interface, as \
             rdma link add rxe0 type rxe netdev eth0 does.",
            t,
        );
        return;
    }
    let wide = area.width >= 100;
    let mut header = vec!["Name", "Type", "Netdev", "Port state", "Remembered"];
    let mut widths: Vec<u16> = vec![15, 4, 15, 12, 10];
    if wide {
        header.push("Node GUID");
        widths.push(18);
    }
    let remembered = |name: &str| model.manager.soft_links.iter().any(|l| l.name == name);
    let body: Vec<list_view::TableRow<'static>> = rows
        .iter()
        .map(|r| match r {
            Row::Device(p) => match model.devices.get(p) {
                Some(d) => {
                    let states: Vec<String> =
                        model.ports_of(d).iter().map(|p| p.state.clone()).collect();
                    let state = states.join(",");
                    let mut cells = vec![
                        Span::raw(d.name.clone()),
                        Span::raw(d.kind.clone()),
                        Span::raw(d.parent_netdev.clone()),
                        Span::styled(
                            state.clone(),
                            t.port_state(states.first().map(String::as_str).unwrap_or("")),
                        ),
                        Span::raw(if remembered(&d.name) { "yes" } else { "no" }),
                    ];
                    if wide {
                        cells.push(Span::raw(d.node_guid.clone()));
                    }
                    list_view::TableRow::new(cells)
                }
                None => list_view::TableRow::new(vec![Span::raw("?")]),
            },
            Row::Absent(name) => {
                let l = model.manager.soft_links.iter().find(|l| l.name == *name);
                list_view::TableRow::new(vec![
                    Span::styled(name.clone(), t.dim()),
                    Span::styled(l.map(|l| l.kind.clone()).unwrap_or_default(), t.dim()),
                    Span::styled(l.map(|l| l.netdev.clone()).unwrap_or_default(), t.dim()),
                    Span::styled("absent", t.warn()),
                    Span::raw("yes"),
                ])
            }
        })
        .collect();
    list_view::render_table(
        frame,
        area,
        format!("Soft RDMA links ({})", rows.len()),
        body,
        &widths,
        &header,
        sel,
        t,
    );
}

fn render_details(frame: &mut Frame, area: Rect, model: &Model, row: Option<&Row>, t: Theme) {
    let mut lines = list_view::config_errors(model, "soft-links.toml", "changes", t);
    match row {
        Some(Row::Device(p)) => {
            if let Some(d) = model.devices.get(p) {
                let what = if d.kind == "siw" {
                    "Soft-iWARP"
                } else {
                    "Soft-RoCE"
                };
                lines.push(Line::from(vec![
                    Span::styled(d.name.clone(), t.title()),
                    Span::raw(format!(
                        ": {what} ({}) over {}, node GUID {}",
                        d.kind, d.parent_netdev, d.node_guid
                    )),
                ]));
                if model.manager.soft_links.iter().any(|l| l.name == d.name) {
                    lines.push(Line::styled(
                        "Remembered by rdma-managerd: added again at start and whenever its interface appears.",
                        t.good(),
                    ));
                } else {
                    lines.push(Line::styled(
                        "Not remembered (made by hand): gone after a reboot.",
                        t.warn(),
                    ));
                }
            }
        }
        Some(Row::Absent(name)) => {
            if let Some(l) = model.manager.soft_links.iter().find(|l| l.name == *name) {
                lines.push(Line::raw(format!(
                    "{} ({} over {}) is remembered but absent: {} is missing, carries another \
                     soft device, or the link was deleted by hand. d forgets it.",
                    l.name, l.kind, l.netdev, l.netdev
                )));
            }
        }
        None => {}
    }
    lines.push(Line::styled(
        "rxe: RoCE v2 over any Ethernet interface. siw: iWARP over TCP. Both need the peer to \
         speak the same protocol.",
        t.dim(),
    ));
    list_view::render_details(frame, area, lines, t);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::demo_model;
    use crate::model::SoftLink;

    #[test]
    fn candidates_are_ethernet_interfaces_only() {
        let m = demo_model();
        let c = netdev_candidates(&m);
        assert_eq!(c, vec!["eth0", "enp4s0d1", "enp59s0f1np1"], "{c:?}");
    }

    #[test]
    fn free_names_skip_devices_and_remembered_links() {
        let mut m = demo_model();
        assert_eq!(free_name(&m, "rxe"), "rxe1");
        assert_eq!(free_name(&m, "siw"), "siw0");
        m.manager.soft_links.push(SoftLink {
            name: "rxe1".into(),
            kind: "rxe".into(),
            netdev: "eth9".into(),
        });
        assert_eq!(free_name(&m, "rxe"), "rxe2");
        assert_eq!(rows(&m).last(), Some(&Row::Absent("rxe1".into())));
    }
}
