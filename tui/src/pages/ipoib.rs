//! The IPoIB page: every IPoIB interface (each port's own and its P_Key children, and children
//! rdma-managerd remembers that are absent), with forms to create a P_Key child, to change an
//! interface's mode, MTU and umcast, and to delete a child.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::Frame;
use rdma_manager_model::ipoib::{default_child_name, full_member};

use super::{list_view, Outcome, Page, PageId, RenderCtx};
use crate::check;
use crate::client::{Call, CallError, CallOutput, IpSettings};
use crate::edit::{self, hex16, Session, Submit};
use crate::form::{ChoiceOption, Field, FieldKind, Form};
use crate::ipform::{ip_lines, IpState};
use crate::model::{Ipoib, Model, PersistedChild};
use crate::theme::Theme;

/// Why a port's interface cannot switch to connected mode.
const NO_CONNECTED: &str = "enhanced IPoIB has no connected mode";

/// One line of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Row {
    /// A present interface (object path).
    Iface(String),
    /// A child rdma-managerd remembers that is not present (it could not be re-created).
    Absent {
        parent: String,
        pkey: u16,
        name: String,
    },
}

/// What the open form does.
#[derive(Debug)]
enum Dialog {
    /// Create a P_Key child of `parent` (the port's own interface).
    Create { parent: String },
    /// Change mode, MTU and umcast of an interface.
    Edit { path: String },
    /// Delete a child (a confirmation).
    Delete { path: String },
    /// IP settings through NetworkManager, as they were when the form opened.
    Ip { settings: IpSettings },
}

#[derive(Debug, Default)]
pub struct IpoibPage {
    selected: usize,
    /// An interface to select as soon as the model has it (a child just created).
    select_path: Option<String>,
    session: Option<Session<Dialog>>,
    /// The IP settings of the interface last asked for, by name.
    ip: Option<(String, IpState)>,
    /// Open the IP settings form when the settings of this interface arrive (`i`).
    ip_form_for: Option<String>,
}

/// The list: each port's own interface, its children, then its remembered absent children.
fn rows(model: &Model) -> Vec<Row> {
    let all = model.ipoib_in_order();
    let mut out = Vec::with_capacity(all.len());
    let mut iter = all.iter().peekable();
    while let Some(i) = iter.next() {
        out.push(Row::Iface(i.path.clone()));
        if i.is_child() {
            continue;
        }
        while let Some(c) = iter.next_if(|c| c.is_child() && c.parent == i.path) {
            out.push(Row::Iface(c.path.clone()));
        }
        for PersistedChild { pkey, name } in &i.persisted_children {
            let present = model.ipoib.values().any(|c| {
                c.is_child()
                    && c.parent == i.path
                    && (c.name == *name || c.pkey == full_member(*pkey))
            });
            if !present {
                out.push(Row::Absent {
                    parent: i.path.clone(),
                    pkey: *pkey,
                    name: name.clone(),
                });
            }
        }
    }
    out
}

/// "mlx5_0/1", as `rdma link` names a port.
fn port_label(model: &Model, iface: &Ipoib) -> String {
    match model.ports.get(&iface.port) {
        Some(p) => format!("{}/{}", p.device_name, p.number),
        None => "?".into(),
    }
}

/// Every interface name the model knows (a new child's name must be none of them).
fn names_in_use(model: &Model) -> Vec<String> {
    let mut v: Vec<String> = model.ipoib.values().map(|i| i.name.clone()).collect();
    v.extend(
        model
            .devices
            .values()
            .flat_map(|d| d.netdevs.iter().cloned()),
    );
    v.extend(model.ports.values().map(|p| p.netdev.clone()));
    v.retain(|n| !n.is_empty());
    v
}

fn mode_options(connected_ok: bool) -> Vec<ChoiceOption> {
    let connected = ChoiceOption::plain("connected");
    vec![
        ChoiceOption::plain("datagram"),
        if connected_ok {
            connected
        } else {
            connected.disabled(NO_CONNECTED)
        },
    ]
}

/// The form creating a child of `parent`, with the P_Key and name given (empty: to type).
/// An empty Name means the default, `parent.P_Key`, which the placeholder shows.
fn create_session(model: &Model, parent: &Ipoib, pkey: &str, name: &str) -> Session<Dialog> {
    let form = Form::new("New P_Key child", "Create")
        .field(Field::info(
            "parent",
            "Parent",
            format!("{} ({})", parent.name, port_label(model, parent)),
        ))
        .field(Field::text("pkey", "P_Key", pkey, 6).placeholder("hex, e.g. 8002"))
        .field(Field::text("name", "Name", name, 15).placeholder(&format!("{}.P_Key", parent.name)))
        .field(Field::choice(
            "mode",
            "Mode",
            mode_options(parent.connected_mode_supported),
            "datagram",
        ))
        .field(Field::text("mtu", "MTU", "", 6).placeholder("the kernel's default"))
        .field(
            Field::check("umcast", "Umcast", false)
                .with_note("user-space multicast; off unless applications need it"),
        );
    let mut s = Session::new(
        form,
        Dialog::Create {
            parent: parent.path.clone(),
        },
    );
    check_create(&mut s, model);
    s
}

/// The name a child gets: the one typed, else the default from a valid P_Key.
fn child_name(form: &Form, parent: &Ipoib) -> Option<String> {
    match form.text("name") {
        "" => check::pkey(form.text("pkey"))
            .ok()
            .map(|p| default_child_name(&parent.name, p)),
        typed => Some(typed.to_string()),
    }
}

/// Checks the create form, as CreateChild will: the P_Key, a free partition and name, the
/// MTU within the chosen mode's limits. Each fault is said once, at the field that has it:
/// an empty name is the default, so a bad P_Key is not a second fault of the name.
fn check_create(s: &mut Session<Dialog>, model: &Model) {
    let Dialog::Create { parent } = &s.kind else {
        return;
    };
    let form = &mut s.form;
    let Some(parent) = model.ipoib.get(parent.as_str()) else {
        form.set_error("pkey", Some("the parent interface is gone".into()));
        return;
    };
    let pkey = check::pkey(form.text("pkey")).and_then(|p| {
        let effective = full_member(p);
        if parent.pkey == effective {
            return Err(format!(
                "{} itself carries {}; a child would join the same partition",
                parent.name,
                hex16(effective)
            ));
        }
        match model
            .ipoib
            .values()
            .find(|c| c.is_child() && c.parent == parent.path && c.pkey == effective)
        {
            Some(twin) => Err(format!(
                "{} already has P_Key {} ({} and {} are one partition)",
                twin.name,
                hex16(effective),
                hex16(effective & 0x7fff),
                hex16(effective)
            )),
            None => Ok(p),
        }
    });
    // Said before anything is sent: a P_Key typed without 0x is read as hex, and a clear
    // full-membership bit is set by the kernel.
    let warning = pkey.as_ref().ok().and_then(|p| {
        let notes: Vec<String> = [
            check::pkey_hex_note(form.text("pkey"), *p),
            check::pkey_note(*p),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!notes.is_empty()).then(|| notes.join("; "))
    });
    form.set_warning("pkey", warning);
    // The placeholder shows the default the P_Key gives.
    let placeholder = match &pkey {
        Ok(p) => default_child_name(&parent.name, *p),
        Err(_) => format!("{}.P_Key", parent.name),
    };
    form.set_note("name", Some(format!("empty: the default, {placeholder}")));
    if let Some(FieldKind::Text(t)) = form.get_mut("name").map(|f| &mut f.kind) {
        t.placeholder = placeholder;
    }
    let typed = !form.text("name").is_empty();
    form.set_error("pkey", pkey.err());
    let name_err = child_name(form, parent).and_then(|name| {
        let syntax = if typed {
            check::netdev_name(&name).err()
        } else {
            None
        };
        syntax.or_else(|| {
            names_in_use(model)
                .contains(&name)
                .then(|| format!("an interface named {name} exists already"))
        })
    });
    form.set_error("name", name_err);
    let mode = form.choice("mode").unwrap_or("datagram").to_string();
    let mtu = check::mtu(form.text("mtu"), &mode).err();
    form.set_error("mtu", mtu);
}

fn edit_session(model: &Model, iface: &Ipoib) -> Session<Dialog> {
    let what = if iface.is_child() {
        format!(
            "{} (P_Key {}, child of {})",
            iface.name,
            hex16(iface.pkey),
            iface.parent_name
        )
    } else {
        format!("{} ({})", iface.name, port_label(model, iface))
    };
    let form = Form::new(format!("IPoIB {}", iface.name), "Apply")
        .field(Field::info("iface", "Interface", what))
        .field(Field::choice(
            "mode",
            "Mode",
            mode_options(iface.connected_mode_supported),
            &iface.mode,
        ))
        .field(Field::text("mtu", "MTU", &iface.mtu.to_string(), 6))
        .field(Field::check("umcast", "Umcast", iface.umcast));
    let mut s = Session::new(
        form,
        Dialog::Edit {
            path: iface.path.clone(),
        },
    );
    check_edit(&mut s, model);
    s
}

/// Whether the edit form's MTU is to be sent: it differs from the interface's, or the mode
/// changes (which resets the MTU) and the user typed one.
fn mtu_to_send(form: &Form, iface: &Ipoib) -> bool {
    let mode_changes = form.choice("mode").is_some_and(|m| m != iface.mode);
    let text = form.text("mtu");
    !text.is_empty() && (text != iface.mtu.to_string() || (mode_changes && form.touched("mtu")))
}

fn check_edit(s: &mut Session<Dialog>, model: &Model) {
    let Dialog::Edit { path } = &s.kind else {
        return;
    };
    let form = &mut s.form;
    let Some(iface) = model.ipoib.get(path.as_str()) else {
        form.set_error("mtu", Some("the interface is gone".into()));
        return;
    };
    let mode = form.choice("mode").unwrap_or("datagram").to_string();
    let note = (mode != iface.mode).then(|| {
        if mode == "connected" {
            "changing the mode resets the MTU (connected: 65520); an MTU typed below is set after"
        } else {
            "changing the mode resets the MTU (datagram: the broadcast group's); an MTU typed below is set after"
        }
        .to_string()
    });
    form.set_warning("mode", note);
    let err = if mtu_to_send(form, iface) {
        check::mtu(form.text("mtu"), &mode).err()
    } else {
        None
    };
    form.set_error("mtu", err);
}

/// The calls an edit makes, in the order the daemon wants them: mode (which resets the MTU),
/// then MTU, then umcast; only what differs from the interface now.
fn edit_calls(form: &Form, iface: &Ipoib) -> Vec<Call> {
    let mut calls = Vec::new();
    let path = iface.path.clone();
    if let Some(mode) = form.choice("mode").filter(|m| *m != iface.mode) {
        calls.push(Call::SetIpoibMode {
            path: path.clone(),
            mode: mode.to_string(),
        });
    }
    if mtu_to_send(form, iface) {
        let mode = form.choice("mode").unwrap_or("datagram");
        if let Ok(Some(mtu)) = check::mtu(form.text("mtu"), mode) {
            calls.push(Call::SetIpoibMtu {
                path: path.clone(),
                mtu,
            });
        }
    }
    let umcast = form.checked("umcast");
    if umcast != iface.umcast {
        calls.push(Call::SetIpoibUmcast { path, umcast });
    }
    calls
}

impl IpoibPage {
    fn selected_row(&self, model: &Model) -> Option<Row> {
        rows(model).get(self.selected).cloned()
    }

    /// The port's own interface of the selected row (where a child is created).
    fn selected_parent<'m>(&self, model: &'m Model) -> Option<&'m Ipoib> {
        let path = match self.selected_row(model)? {
            Row::Iface(p) => {
                let i = model.ipoib.get(&p)?;
                if i.is_child() {
                    i.parent.clone()
                } else {
                    p
                }
            }
            Row::Absent { parent, .. } => parent,
        };
        model.ipoib.get(&path)
    }

    fn open_create(&mut self, model: &Model) -> Outcome {
        match self.selected_parent(model) {
            Some(parent) => {
                self.session = Some(create_session(model, parent, "", ""));
                Outcome::Handled
            }
            None => Outcome::Message(
                "No IPoIB interface to make a child of: ib_ipoib makes one per InfiniBand port"
                    .into(),
            ),
        }
    }

    fn open_selected(&mut self, model: &Model) -> Outcome {
        match self.selected_row(model) {
            Some(Row::Iface(p)) => match model.ipoib.get(&p) {
                Some(i) => {
                    self.session = Some(edit_session(model, i));
                    Outcome::Handled
                }
                None => Outcome::Ignored,
            },
            // A remembered child that is absent is made again through CreateChild.
            Some(Row::Absent { parent, pkey, name }) => match model.ipoib.get(&parent) {
                Some(par) => {
                    self.session = Some(create_session(model, par, &hex16(pkey), &name));
                    Outcome::Handled
                }
                None => Outcome::Ignored,
            },
            None => Outcome::Ignored,
        }
    }

    fn open_delete(&mut self, model: &Model) -> Outcome {
        let Some(Row::Iface(p)) = self.selected_row(model) else {
            return Outcome::Message(
                "A remembered child that is absent is forgotten by creating it again (Enter) \
                 and deleting it, or by editing /etc/rdma-manager/ipoib.toml"
                    .into(),
            );
        };
        let Some(i) = model.ipoib.get(&p) else {
            return Outcome::Ignored;
        };
        if !i.is_child() {
            return Outcome::Message(format!(
                "{} belongs to the port's driver: only P_Key children can be deleted",
                i.name
            ));
        }
        let mut question = vec![format!(
            "Delete {} (P_Key {}, child of {})?",
            i.name,
            hex16(i.pkey),
            i.parent_name
        )];
        if i.persisted {
            question.push(
                "rdma-managerd forgets it too: it is not created again at the next start.".into(),
            );
        }
        self.session = Some(Session::new(
            Form::confirm(format!("Delete {}", i.name), question, "Delete"),
            Dialog::Delete { path: p },
        ));
        Outcome::Handled
    }

    /// The name of the selected present interface.
    fn selected_name(&self, model: &Model) -> Option<String> {
        match self.selected_row(model)? {
            Row::Iface(p) => model.ipoib.get(&p).map(|i| i.name.clone()),
            Row::Absent { .. } => None,
        }
    }

    /// The read of the selected interface's IP settings, unless it is the one known.
    fn ip_read(&self, model: &Model) -> Option<Call> {
        let name = self.selected_name(model)?;
        if self.ip.as_ref().is_some_and(|(n, _)| *n == name) {
            return None;
        }
        Some(Call::GetIpSettings { interface: name })
    }

    /// `i`: reads the settings afresh and opens the form when they arrive.
    fn open_ip(&mut self, model: &Model) -> Outcome {
        let Some(name) = self.selected_name(model) else {
            return Outcome::Message("Select a present interface to set its IP settings".into());
        };
        if let Some((n, ip)) = &self.ip {
            if let Some(why) = ip.refusal().filter(|_| *n == name) {
                return Outcome::Message(why);
            }
        }
        self.ip_form_for = Some(name.clone());
        Outcome::Call(Call::GetIpSettings { interface: name })
    }

    /// `u` / `D`: brings the selected interface up or down through NetworkManager.
    fn up_down(&mut self, model: &Model, up: bool) -> Outcome {
        let Some(name) = self.selected_name(model) else {
            return Outcome::Ignored;
        };
        if let Some((n, IpState::NoNm(reason))) = &self.ip {
            if *n == name {
                return Outcome::Message(format!("NetworkManager not running: {reason}"));
            }
        }
        Outcome::Call(if up {
            Call::Activate { interface: name }
        } else {
            Call::Deactivate { interface: name }
        })
    }

    fn form_key(&mut self, key: KeyEvent, model: &Model) -> Outcome {
        edit::form_key(
            &mut self.session,
            key,
            model,
            |s, _| recheck(s, model),
            |s| submit(s, model),
        )
    }
}

/// The calls a checked form makes.
fn submit(s: &Session<Dialog>, model: &Model) -> Submit {
    let calls = match &s.kind {
        Dialog::Create { parent } => {
            let mode = s.form.choice("mode").unwrap_or("datagram");
            let Ok(pkey) = check::pkey(s.form.text("pkey")) else {
                return Submit::Stay;
            };
            let Some(name) = model
                .ipoib
                .get(parent.as_str())
                .and_then(|p| child_name(&s.form, p))
            else {
                return Submit::Stay;
            };
            vec![Call::CreateIpoibChild {
                parent: parent.clone(),
                pkey,
                name,
                // Datagram is the kernel's default: only a choice that differs is sent (and
                // remembered).
                mode: (mode != "datagram").then(|| mode.to_string()),
                mtu: check::mtu(s.form.text("mtu"), mode).ok().flatten(),
                umcast: s.form.checked("umcast").then_some(true),
            }]
        }
        Dialog::Edit { path } => match model.ipoib.get(path.as_str()) {
            Some(i) => edit_calls(&s.form, i),
            None => Vec::new(),
        },
        Dialog::Delete { path } => vec![Call::DeleteIpoib { path: path.clone() }],
        Dialog::Ip { settings } => crate::ipform::calls(&s.form, settings),
    };
    Submit::Calls(calls)
}

fn recheck(s: &mut Session<Dialog>, model: &Model) {
    match s.kind {
        Dialog::Create { .. } => check_create(s, model),
        Dialog::Edit { .. } => check_edit(s, model),
        Dialog::Delete { .. } => {}
        Dialog::Ip { .. } => crate::ipform::check(&mut s.form),
    }
}

impl Page for IpoibPage {
    fn id(&self) -> PageId {
        PageId::Ipoib
    }

    fn render(&mut self, frame: &mut Frame, area: Rect, ctx: &RenderCtx) {
        let model = ctx.model;
        let t = ctx.theme;
        let rows = rows(model);
        edit::select_wanted(
            &rows,
            &mut self.select_path,
            &mut self.selected,
            |r, p| matches!(r, Row::Iface(i) if i == p),
        );
        let [list, details] = list_view::list_and_details(area, rows.len(), 7);
        render_table(frame, list, model, &rows, self.selected, t);
        let name = self.selected_name(model);
        let ip = self
            .ip
            .as_ref()
            .filter(|(n, _)| Some(n) == name.as_ref())
            .map(|(_, s)| s);
        render_details(frame, details, model, rows.get(self.selected), ip, t);
        edit::render_form(frame, area, &self.session, t);
    }

    fn handle_key(&mut self, key: KeyEvent, model: &Model) -> Outcome {
        if let Some(out) =
            edit::key_to_form(self.session.is_some(), &key, || self.form_key(key, model))
        {
            return out;
        }
        if edit::move_in_list(&key, &mut self.selected, rows(model).len()) {
            return match self.ip_read(model) {
                Some(call) => Outcome::Call(call),
                None => Outcome::Handled,
            };
        }
        match key.code {
            KeyCode::Char('i') => self.open_ip(model),
            KeyCode::Char('u') => self.up_down(model, true),
            KeyCode::Char('D') => self.up_down(model, false),
            // `a` adds on every page that adds; `n` is kept for those used to it.
            KeyCode::Char('a') | KeyCode::Char('n') | KeyCode::Insert => self.open_create(model),
            KeyCode::Enter | KeyCode::Char('e') => self.open_selected(model),
            KeyCode::Char('d') | KeyCode::Delete => self.open_delete(model),
            _ => Outcome::Ignored,
        }
    }

    fn selected_port(&self, model: &Model) -> Option<String> {
        match self.selected_row(model)? {
            Row::Iface(p) => model.ipoib.get(&p).map(|i| i.port.clone()),
            Row::Absent { parent, .. } => model.ipoib.get(&parent).map(|i| i.port.clone()),
        }
        .filter(|p| !p.is_empty())
    }

    fn focus_port(&mut self, port: &str, model: &Model) {
        // A row of the port selected already (a child of it) stays selected.
        if self.selected_port(model).as_deref() == Some(port) {
            return;
        }
        if let Some(i) = rows(model).iter().position(|r| match r {
            Row::Iface(p) => model
                .ipoib
                .get(p)
                .is_some_and(|i| i.port == port && !i.is_child()),
            Row::Absent { .. } => false,
        }) {
            self.selected = i;
        }
    }

    fn on_show(&mut self, model: &Model) -> Option<Call> {
        // Read again on every visit: the settings may have changed meanwhile.
        self.ip = None;
        self.ip_read(model)
    }

    fn network_changed(&mut self, model: &Model) -> Option<Call> {
        self.ip = None;
        self.ip_read(model)
    }

    fn call_done(&mut self, call: &Call, result: &Result<CallOutput, CallError>) {
        if let Call::GetIpSettings { interface } = call {
            let Some(state) = IpState::from_answer(result) else {
                return;
            };
            if self.ip_form_for.as_deref() == Some(interface.as_str()) {
                self.ip_form_for = None;
                edit::open_ip_form(&mut self.session, &state, |settings| Dialog::Ip {
                    settings: settings.clone(),
                });
            }
            self.ip = Some((interface.clone(), state));
            return;
        }
        // A change of IP settings or up/down: read them again for the details.
        if matches!(
            call,
            Call::SetIpSettings { .. } | Call::Activate { .. } | Call::Deactivate { .. }
        ) && result.is_ok()
        {
            self.ip = None;
        }
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
            vec![
                ("a", "new child"),
                ("Enter", "edit"),
                ("d", "delete"),
                ("i", "IP"),
                ("u/D", "up/down"),
            ],
        )
    }

    fn help(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            (
                "a, Insert (or n)",
                "new P_Key child of the selected port's interface",
            ),
            (
                "Enter or e",
                "change mode, MTU and umcast; re-create an absent child",
            ),
            ("d or Delete", "delete the selected child, after a question"),
            (
                "i",
                "IP settings through the host's IP manager: method, addresses, gateway, DNS",
            ),
            ("u / D", "bring the interface up / down (NetworkManager)"),
            ("Enter/k, Esc/r", "keep / roll back a pending IP change"),
        ]
    }
}

fn render_table(frame: &mut Frame, area: Rect, model: &Model, rows: &[Row], sel: usize, t: Theme) {
    if rows.is_empty() {
        list_view::render_empty(
            frame,
            area,
            "IPoIB interfaces",
            "None. The kernel's ib_ipoib module makes one for every InfiniBand port (modprobe \
             ib_ipoib); P_Key children are made from it.",
            t,
        );
        return;
    }
    let wide = area.width >= 110;
    let mut header = vec![
        "Interface",
        "On",
        "P_Key",
        "Mode",
        "MTU",
        "umcast",
        "State",
        "Remembered",
    ];
    let mut widths: Vec<u16> = vec![15, 13, 6, 9, 5, 6, 6, 10];
    if wide {
        header.push("Port GUID");
        widths.push(18);
    }
    let body: Vec<list_view::TableRow<'static>> = rows
        .iter()
        .map(|r| match r {
            Row::Iface(p) => match model.ipoib.get(p) {
                Some(i) => {
                    let on = if i.is_child() {
                        i.parent_name.clone()
                    } else {
                        port_label(model, i)
                    };
                    let mut cells = vec![
                        Span::raw(i.name.clone()),
                        Span::raw(on),
                        Span::raw(hex16(i.pkey)),
                        Span::raw(i.mode.clone()),
                        Span::raw(i.mtu.to_string()),
                        Span::raw(if i.umcast { "on" } else { "off" }),
                        Span::styled(i.oper_state.clone(), oper_style(&i.oper_state, t)),
                        Span::raw(match (i.nm_profile(), i.persisted) {
                            (Some(_), _) => "NM",
                            (None, true) => "yes",
                            (None, false) => "no",
                        }),
                    ];
                    if wide {
                        cells.push(Span::raw(i.port_guid.clone()));
                    }
                    list_view::TableRow::new(cells)
                }
                None => list_view::TableRow::new(vec![Span::raw("?")]),
            },
            Row::Absent { parent, pkey, name } => {
                let parent_name = model
                    .ipoib
                    .get(parent)
                    .map(|i| i.name.clone())
                    .unwrap_or_default();
                list_view::TableRow::new(vec![
                    Span::styled(name.clone(), t.dim()),
                    Span::styled(parent_name, t.dim()),
                    Span::styled(hex16(*pkey), t.dim()),
                    Span::raw(""),
                    Span::raw(""),
                    Span::raw(""),
                    Span::styled("absent", t.warn()),
                    Span::raw("yes"),
                ])
            }
        })
        .collect();
    list_view::render_table(
        frame,
        area,
        format!("IPoIB interfaces ({})", rows.len()),
        body,
        &widths,
        &header,
        sel,
        t,
    );
}

fn oper_style(state: &str, t: Theme) -> ratatui::style::Style {
    match state {
        "up" => t.good(),
        "down" | "lowerlayerdown" => t.bad(),
        _ => t.warn(),
    }
}

/// What the list does not show about the selected interface.
fn render_details(
    frame: &mut Frame,
    area: Rect,
    model: &Model,
    row: Option<&Row>,
    ip: Option<&IpState>,
    t: Theme,
) {
    let mut lines = list_view::config_errors(model, "ipoib.toml", "IPoIB changes", t);
    match row {
        Some(Row::Iface(p)) => {
            if let Some(i) = model.ipoib.get(p) {
                lines.extend(iface_details(model, i, t));
            }
            if let Some(ip) = ip {
                lines.extend(ip_lines(ip, t));
            }
        }
        Some(Row::Absent { pkey, name, .. }) => {
            lines.push(Line::raw(format!(
                "{name} (P_Key {}) is remembered but absent: it could not be created again.",
                hex16(*pkey)
            )));
            lines.push(Line::styled(
                "Enter creates it again; the journal says why it failed.",
                t.dim(),
            ));
        }
        None => {}
    }
    list_view::render_details(frame, area, lines, t);
}

fn iface_details(model: &Model, i: &Ipoib, t: Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let role = if i.is_child() {
        format!(
            "P_Key child of {} on {}",
            i.parent_name,
            port_label(model, i)
        )
    } else {
        format!("the parent interface of port {}", port_label(model, i))
    };
    lines.push(Line::from(vec![
        Span::styled(i.name.clone(), t.title()),
        Span::raw(format!(": {role}, port GUID {}", i.port_guid)),
    ]));
    let full = if i.pkey & 0x8000 != 0 {
        "full member"
    } else {
        "limited member"
    };
    let cm = if i.connected_mode_supported {
        "connected mode available"
    } else {
        "enhanced IPoIB: no connected mode"
    };
    lines.push(Line::raw(format!("P_Key {} ({full}), {cm}", hex16(i.pkey))));
    // Whether it runs, and why not: the service's reading of the port and the interface.
    if !i.pkey_in_port_table {
        lines.push(Line::styled(
            format!(
                "! P_Key {} is not in the P_Key table of port {}: the subnet manager has not \
                 given the port this partition, so the interface cannot join it",
                hex16(i.pkey),
                port_label(model, i)
            ),
            t.warn(),
        ));
    }
    let (joined, style) = if i.carrier {
        (
            "carrier on: joined its broadcast group".to_string(),
            t.good(),
        )
    } else {
        (
            "no carrier: its broadcast group is not joined".to_string(),
            t.warn(),
        )
    };
    lines.push(Line::styled(joined, style));
    if !i.down_reason.is_empty() {
        lines.push(Line::styled(format!("Down: {}", i.down_reason), t.warn()));
    }
    if let Some(profile) = i.nm_profile() {
        lines.push(Line::styled(
            format!(
                "Configured by NetworkManager's profile {profile:?}: change it with nmcli; \
                 rdma-managerd leaves it alone."
            ),
            t.warn(),
        ));
    } else if i.persisted {
        let settings: Vec<String> = i
            .persisted_settings
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let what = if settings.is_empty() {
            "as created".to_string()
        } else {
            settings.join(", ")
        };
        lines.push(Line::styled(
            format!("Remembered by rdma-managerd ({what}): applied again at every start."),
            t.good(),
        ));
    } else if i.is_child() {
        lines.push(Line::styled(
            "Not remembered: gone after a reboot. A change made here remembers it.",
            t.warn(),
        ));
    } else {
        lines.push(Line::styled(
            "Nothing remembered: the driver's defaults after a reboot.",
            t.dim(),
        ));
    }
    if !i.persisted_children.is_empty() {
        let kids: Vec<String> = i
            .persisted_children
            .iter()
            .map(|c| format!("{} ({})", c.name, hex16(c.pkey)))
            .collect();
        lines.push(Line::raw(format!(
            "Remembered children: {}",
            kids.join(", ")
        )));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::demo_model;

    /// A child whose partition the port's table lacks is warned of, with why it is down;
    /// one that runs says it has joined its broadcast group.
    #[test]
    fn a_child_outside_the_port_table_is_warned_of_with_the_reason() {
        let mut m = demo_model();
        let path = "/org/rdmamanager/RdmaManager1/Ipoib/11";
        let text = |m: &Model| -> String {
            let i = m.ipoib.get(path).expect("demo child");
            iface_details(m, i, Theme::monochrome())
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        };
        let running = text(&m);
        assert!(running.contains("joined its broadcast group"), "{running}");
        assert!(!running.contains("not in the P_Key table"), "{running}");
        if let Some(i) = m.ipoib.get_mut(path) {
            i.pkey_in_port_table = false;
            i.carrier = false;
            i.down_reason = "P_Key 0x8002 is not in the P_Key table of port mlx5_0/1".into();
        }
        let warned = text(&m);
        assert!(
            warned.contains("! P_Key 0x8002 is not in the P_Key table of port mlx5_0/1"),
            "{warned}"
        );
        assert!(warned.contains("no carrier"), "{warned}");
        assert!(warned.contains("Down: P_Key 0x8002"), "{warned}");
    }

    #[test]
    fn an_interface_networkmanager_owns_says_so_instead_of_what_is_remembered() {
        let mut m = demo_model();
        let path = "/org/rdmamanager/RdmaManager1/Ipoib/10";
        let text = |m: &Model| -> String {
            let i = m.ipoib.get(path).expect("demo interface");
            iface_details(m, i, Theme::monochrome())
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert!(!text(&m).contains("NetworkManager"), "{}", text(&m));
        if let Some(i) = m.ipoib.get_mut(path) {
            i.persisted = true;
            i.owner = crate::model::Owner::network_manager("storage", "u");
        }
        let shown = text(&m);
        assert!(
            shown.contains("NetworkManager's profile \"storage\""),
            "{shown}"
        );
        assert!(!shown.contains("Remembered by rdma-managerd"), "{shown}");
    }

    #[test]
    fn absent_remembered_children_are_listed_after_the_present_ones() {
        let mut m = demo_model();
        let parent = "/org/rdmamanager/RdmaManager1/Ipoib/10";
        if let Some(p) = m.ipoib.get_mut(parent) {
            p.persisted_children = vec![
                PersistedChild {
                    pkey: 0x8002,
                    name: "ibp59s0f0.8002".into(),
                },
                PersistedChild {
                    pkey: 0x0010,
                    name: "x".into(),
                },
            ];
        }
        let r = rows(&m);
        assert_eq!(r.len(), 5, "{r:?}");
        assert_eq!(
            r[4],
            Row::Absent {
                parent: parent.into(),
                pkey: 0x0010,
                name: "x".into()
            }
        );
    }
}
