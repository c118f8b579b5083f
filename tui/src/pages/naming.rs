//! The naming page: how RDMA devices are named when they are added (rdma-core's policy,
//! fixed names by node GUID) and IPoIB interface names by port GUID, the daemon's preview of
//! what every policy gives every device, and forms to change each, all through udev rules the
//! daemon manages.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{Outcome, Page, PageId, RenderCtx};
use crate::check;
use crate::client::{Call, CallError, CallOutput, NamePreview};
use crate::edit::{self, Answer, Session, Submit};
use crate::form::{truncate, ChoiceOption, Field, Form};
use crate::model::{Device, Model, NameRule, Port};
use crate::theme::Theme;

/// The policies rdma_rename knows, with what each gives.
pub const POLICIES: [(&str, &str); 5] = [
    (
        "NAME_KERNEL",
        "the kernel's names (mlx5_0): rdma_rename changes nothing",
    ),
    (
        "NAME_PCI",
        "by PCI address (ibp59s0f0): stable while the card stays in its slot",
    ),
    (
        "NAME_GUID",
        "by node GUID (ibxb8599f0300d4e62a): follows the card to any slot",
    ),
    (
        "NAME_ONBOARD",
        "by firmware index (ibo1, acpi_index or SMBIOS): onboard devices only",
    ),
    (
        "NAME_FALLBACK",
        "onboard, else PCI, else the kernel's: rdma-core's default",
    ),
];

/// The field a name form names: the device (fixed names) or the port (IPoIB names).
const FOLLOWED: &str = "target";

const RDMA_RULES: &str = "60-rdma-persistent-naming.rules";
const IPOIB_RULES: &str = "70-persistent-ipoib.rules";

/// What can be selected.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    /// A device (object path).
    Device(String),
    /// A fixed RDMA device name (index in `RdmaFixedNames`).
    Fixed(usize),
    /// An IPoIB name (index in `IpoibNames`).
    Ipoib(usize),
}

#[derive(Debug)]
enum Dialog {
    Policy,
    /// `auto_name` is the name filled in for the chosen device, which the name follows
    /// until the user edits it.
    Fixed {
        auto_name: String,
    },
    IpoibName {
        auto_name: String,
    },
    Rename {
        device: String,
    },
    RemoveFixed {
        guid: String,
    },
    RemoveIpoib {
        guid: String,
    },
}

/// The preview as last read.
#[derive(Debug, Clone, PartialEq, Default)]
enum Preview {
    #[default]
    NotRead,
    Rows(Vec<NamePreview>),
    Failed(String),
}

#[derive(Debug, Default)]
pub struct NamingPage {
    selected: usize,
    preview: Preview,
    /// A PreviewRdmaNames is on its way.
    reading: bool,
    /// A change succeeded: read the preview again.
    refresh: bool,
    session: Option<Session<Dialog>>,
}

fn same_guid(a: &str, b: &str) -> bool {
    !a.is_empty() && a.eq_ignore_ascii_case(b)
}

fn items(model: &Model) -> Vec<Item> {
    let mut v: Vec<Item> = model
        .devices_in_order()
        .into_iter()
        .map(|d| Item::Device(d.path.clone()))
        .collect();
    v.extend((0..model.manager.rdma_fixed_names.len()).map(Item::Fixed));
    v.extend((0..model.manager.ipoib_names.len()).map(Item::Ipoib));
    v
}

fn is_soft(d: &Device) -> bool {
    d.kind == "rxe" || d.kind == "siw"
}

fn ib_ports(model: &Model) -> Vec<&Port> {
    model
        .ports_in_order()
        .into_iter()
        .filter(|p| p.is_infiniband() && !p.port_guid.is_empty())
        .collect()
}

/// The IPoIB interface of a port (its own, not a child).
fn ipoib_of(model: &Model, port: &Port) -> Option<String> {
    model
        .ipoib
        .values()
        .find(|i| i.port == port.path && !i.is_child())
        .map(|i| i.name.clone())
}

impl NamingPage {
    fn rows_of<'a>(&'a self, device: &str) -> Vec<&'a NamePreview> {
        match &self.preview {
            Preview::Rows(rows) => rows.iter().filter(|r| r.device == device).collect(),
            _ => Vec::new(),
        }
    }

    fn selected_item(&self, model: &Model) -> Option<Item> {
        items(model).get(self.selected).cloned()
    }

    /// The device the selection is about: a device, or the one a fixed name names.
    fn selected_device<'m>(&self, model: &'m Model) -> Option<&'m Device> {
        match self.selected_item(model)? {
            Item::Device(p) => model.devices.get(&p),
            Item::Fixed(i) => {
                let r = model.manager.rdma_fixed_names.get(i)?;
                model
                    .devices
                    .values()
                    .find(|d| same_guid(&d.node_guid, &r.guid))
            }
            Item::Ipoib(i) => {
                let r = model.manager.ipoib_names.get(i)?;
                let p = model
                    .ports
                    .values()
                    .find(|p| same_guid(&p.port_guid, &r.guid))?;
                model.device_of(p)
            }
        }
    }

    fn policy_session(&self, model: &Model) -> Session<Dialog> {
        let options = POLICIES
            .iter()
            .map(|(p, _)| ChoiceOption::plain(*p))
            .collect();
        let current = if model.manager.rdma_naming_policy.is_empty() {
            "NAME_FALLBACK"
        } else {
            model.manager.rdma_naming_policy.as_str()
        };
        let form = Form::new("RDMA naming policy", "Set")
            .field(Field::choice("policy", "Policy", options, current))
            .field(Field::check("apply", "Rename now", false).with_note(
                "rename the present devices now; else each gets its name when next added (boot)",
            ));
        let mut s = Session::new(form, Dialog::Policy);
        self.check(&mut s, model, Some(FOLLOWED));
        s
    }

    fn fixed_session(&self, model: &Model, device: Option<&Device>) -> Session<Dialog> {
        let devices = model.devices_in_order();
        let options = devices
            .iter()
            .map(|d| {
                let o = ChoiceOption::new(d.path.clone(), format!("{} ({})", d.name, d.node_guid));
                if is_soft(d) {
                    o.disabled(
                        "named by its creator, and rdma_rename leaves it alone (r renames it now)",
                    )
                } else {
                    o
                }
            })
            .collect();
        let selected = device.map(|d| d.path.as_str()).unwrap_or("");
        let form =
            Form::new("Fixed RDMA device name", "Set")
                .field(Field::choice(FOLLOWED, "Device", options, selected))
                .field(Field::text("name", "Name", "", 64).placeholder("e.g. hpc0"))
                .field(Field::check("apply", "Rename now", false).with_note(
                    "rename the device now; else it gets the name when next added (boot)",
                ));
        let mut s = Session::new(
            form,
            Dialog::Fixed {
                auto_name: String::new(),
            },
        );
        self.check(&mut s, model, Some(FOLLOWED));
        s
    }

    fn ipoib_session(&self, model: &Model, device: Option<&Device>) -> Session<Dialog> {
        let ports = ib_ports(model);
        let options = ports
            .iter()
            .map(|p| {
                let netdev = ipoib_of(model, p).unwrap_or_else(|| "no IPoIB".into());
                ChoiceOption::new(
                    p.path.clone(),
                    format!("{}/{} {netdev} ({})", p.device_name, p.number, p.port_guid),
                )
            })
            .collect();
        let selected = device
            .and_then(|d| ports.iter().find(|p| p.device == d.path))
            .map(|p| p.path.as_str())
            .unwrap_or("");
        let form = Form::new("IPoIB interface name", "Set")
            .field(Field::choice(FOLLOWED, "Port", options, selected))
            .field(Field::text("name", "Name", "", 20).placeholder("e.g. hpc_ib0"))
            .field(Field::check("apply", "Rename now", false).with_note(
                "rename the interface now (before Linux 6.2 only while it is down); else \
                 from the next boot",
            ));
        let mut s = Session::new(
            form,
            Dialog::IpoibName {
                auto_name: String::new(),
            },
        );
        self.check(&mut s, model, Some(FOLLOWED));
        s
    }

    fn rename_session(&self, model: &Model, device: &Device) -> Session<Dialog> {
        let form = Form::new(format!("Rename {} now", device.name), "Rename")
            .field(Field::info(
                "device",
                "Device",
                format!("{} ({})", device.name, device.node_guid),
            ))
            .field(
                Field::text("name", "New name", &device.name, 64)
                    .with_note("rdma dev set ... name: now, not after a reboot (f for that)"),
            );
        let mut s = Session::new(
            form,
            Dialog::Rename {
                device: device.path.clone(),
            },
        );
        self.check(&mut s, model, Some(FOLLOWED));
        s
    }

    /// Checks a form as the daemon will, and fills in what follows from a choice.
    /// `changed` is the field just edited: a name follows the chosen device or port (its
    /// rule's name) until the user edits it.
    fn check(&self, s: &mut Session<Dialog>, model: &Model, changed: Option<&str>) {
        let form = &mut s.form;
        match &mut s.kind {
            Dialog::Policy => self.check_policy(form),
            Dialog::Fixed { auto_name } => check_fixed(form, auto_name, model, changed),
            Dialog::IpoibName { auto_name } => check_ipoib_name(form, auto_name, model, changed),
            Dialog::Rename { device } => check_rename(form, device, model),
            Dialog::RemoveFixed { .. } | Dialog::RemoveIpoib { .. } => {}
        }
    }

    /// The policy form: what the chosen policy does and gives.
    fn check_policy(&self, form: &mut Form) {
        let policy = form.choice("policy").unwrap_or("").to_string();
        let what = POLICIES
            .iter()
            .find(|(p, _)| *p == policy)
            .map(|(_, w)| w.to_string())
            .unwrap_or_default();
        let gives = self.gives(&policy);
        let note = if gives.is_empty() {
            what
        } else {
            format!("{what}. Gives: {gives}")
        };
        form.set_note("policy", Some(note));
    }

    /// What `policy` gives every device, from the preview: "mlx5_0 -> ibp59s0f0, ...".
    fn gives(&self, policy: &str) -> String {
        let Preview::Rows(rows) = &self.preview else {
            return String::new();
        };
        rows.iter()
            .filter(|r| r.policy == policy)
            .map(|r| {
                if r.name.is_empty() {
                    format!("{} kept", r.device)
                } else {
                    format!("{} -> {}", r.device, r.name)
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn calls(&self, s: &Session<Dialog>, model: &Model) -> Option<Call> {
        let form = &s.form;
        let apply_now = form.checked("apply");
        let name = form.text("name").to_string();
        Some(match &s.kind {
            Dialog::Policy => Call::SetRdmaNamingPolicy {
                policy: form.choice("policy")?.to_string(),
                apply_now,
            },
            Dialog::Fixed { .. } => Call::SetRdmaFixedName {
                guid: model.devices.get(form.choice(FOLLOWED)?)?.node_guid.clone(),
                name,
                apply_now,
            },
            Dialog::IpoibName { .. } => Call::SetIpoibName {
                guid: model.ports.get(form.choice(FOLLOWED)?)?.port_guid.clone(),
                name,
                apply_now,
            },
            Dialog::Rename { device } => Call::RenameDevice {
                device: device.clone(),
                name,
            },
            Dialog::RemoveFixed { guid } => Call::RemoveRdmaFixedName { guid: guid.clone() },
            Dialog::RemoveIpoib { guid } => Call::RemoveIpoibName { guid: guid.clone() },
        })
    }

    fn open(&mut self, s: Session<Dialog>) -> Outcome {
        self.session = Some(s);
        Outcome::Handled
    }

    fn open_remove(&mut self, model: &Model) -> Outcome {
        let (rule, file, fixed) = match self.selected_item(model) {
            Some(Item::Fixed(i)) => match model.manager.rdma_fixed_names.get(i) {
                Some(r) => (r.clone(), RDMA_RULES, true),
                None => return Outcome::Ignored,
            },
            Some(Item::Ipoib(i)) => match model.manager.ipoib_names.get(i) {
                Some(r) => (r.clone(), IPOIB_RULES, false),
                None => return Outcome::Ignored,
            },
            _ => return Outcome::Message("Select a rule (below the devices) to remove it.".into()),
        };
        if !rule.managed {
            return Outcome::Message(format!(
                "Line {} of /etc/udev/rules.d/{file} is yours (hand-written): edit the file to change it",
                rule.line
            ));
        }
        let what = if fixed { "fixed name" } else { "IPoIB name" };
        let question = vec![
            format!("Remove the {what} {} of {}?", rule.name, rule.guid),
            "The name stays until the device or interface is added again (next boot).".to_string(),
        ];
        let kind = if fixed {
            Dialog::RemoveFixed { guid: rule.guid }
        } else {
            Dialog::RemoveIpoib { guid: rule.guid }
        };
        self.open(Session::new(
            Form::confirm(format!("Remove {what}"), question, "Remove"),
            kind,
        ))
    }

    fn open_enter(&mut self, model: &Model) -> Outcome {
        match self.selected_item(model) {
            Some(Item::Device(_)) | Some(Item::Fixed(_)) => {
                if let Some(Item::Fixed(i)) = self.selected_item(model) {
                    if let Some(r) = model.manager.rdma_fixed_names.get(i).filter(|r| !r.managed) {
                        return read_only(r, RDMA_RULES);
                    }
                }
                let d = self.selected_device(model);
                if d.is_some_and(is_soft) {
                    return Outcome::Message(
                        "A soft device keeps the name it was created with: r renames it now."
                            .into(),
                    );
                }
                let s = self.fixed_session(model, d);
                self.open(s)
            }
            Some(Item::Ipoib(i)) => {
                if let Some(r) = model.manager.ipoib_names.get(i).filter(|r| !r.managed) {
                    return read_only(r, IPOIB_RULES);
                }
                let d = self.selected_device(model);
                let mut s = self.ipoib_session(model, d);
                if let Some(r) = model.manager.ipoib_names.get(i) {
                    if let Some(p) = model
                        .ports
                        .values()
                        .find(|p| same_guid(&p.port_guid, &r.guid))
                    {
                        if let Some(crate::form::FieldKind::Choice(c)) =
                            s.form.get_mut(FOLLOWED).map(|f| &mut f.kind)
                        {
                            if let Some(k) = c.options.iter().position(|o| o.value == p.path) {
                                c.selected = k;
                            }
                        }
                        self.check(&mut s, model, Some(FOLLOWED));
                    }
                }
                self.open(s)
            }
            None => Outcome::Ignored,
        }
    }

    fn form_key(&mut self, key: KeyEvent, model: &Model) -> Outcome {
        // Out of `self` while the form is handled, as checking it reads the page.
        let mut session = self.session.take();
        let out = edit::form_key(
            &mut session,
            key,
            model,
            |s, changed| self.check(s, model, changed),
            |s| match self.calls(s, model) {
                Some(call) => Submit::Calls(vec![call]),
                None => Submit::Stay,
            },
        );
        self.session = session;
        out
    }
}

/// The name of a name form, which follows the chosen device's or port's `rule` until the user
/// edits it: a new choice fills it in while it is empty or still what was filled in last.
fn follow_rule(
    form: &mut Form,
    auto_name: &mut String,
    rule: Option<&NameRule>,
    changed: Option<&str>,
) -> String {
    let name = form.text("name").to_string();
    if changed == Some(FOLLOWED) && (name.is_empty() || name == *auto_name) {
        let fresh = rule.map(|r| r.name.clone()).unwrap_or_default();
        form.set_text("name", &fresh);
        *auto_name = fresh;
    }
    form.text("name").to_string()
}

/// The fixed name form: a device that can have one, a name no other device has or is given.
fn check_fixed(form: &mut Form, auto_name: &mut String, model: &Model, changed: Option<&str>) {
    let device = form
        .choice(FOLLOWED)
        .and_then(|p| model.devices.get(p))
        .filter(|d| !is_soft(d));
    let rule = device.and_then(|d| {
        model
            .manager
            .rdma_fixed_names
            .iter()
            .find(|r| same_guid(&r.guid, &d.node_guid))
    });
    let name = follow_rule(form, auto_name, rule, changed);
    let Some(device) = device else {
        form.set_error(
            FOLLOWED,
            Some("no device here can have a fixed name".into()),
        );
        return;
    };
    form.set_error(FOLLOWED, None);
    let err = check::rdma_name(&name).err().or_else(|| {
        if let Some(other) = model
            .devices
            .values()
            .find(|d| d.name == name && d.path != device.path)
        {
            return Some(format!(
                "another device (node GUID {}) is named {name} now",
                other.node_guid
            ));
        }
        model
            .manager
            .rdma_fixed_names
            .iter()
            .find(|r| r.name == name && !same_guid(&r.guid, &device.node_guid))
            .map(|r| format!("{name} is the fixed name of {} already", r.guid))
    });
    form.set_error("name", err);
    let warn = rule.filter(|r| !r.managed).map(|r| {
        format!(
            "line {} of {RDMA_RULES} (yours) names this device; the daemon refuses to contradict it",
            r.line
        )
    });
    form.set_warning("name", warn);
}

/// The IPoIB name form: a port, a name no interface has and no other port is given, and no
/// hand-written rule for the port.
fn check_ipoib_name(form: &mut Form, auto_name: &mut String, model: &Model, changed: Option<&str>) {
    let port = form.choice(FOLLOWED).and_then(|p| model.ports.get(p));
    let rule = port.and_then(|p| {
        model
            .manager
            .ipoib_names
            .iter()
            .find(|r| same_guid(&r.guid, &p.port_guid))
    });
    let name = follow_rule(form, auto_name, rule, changed);
    let Some(port) = port else {
        form.set_error(FOLLOWED, Some("this host has no InfiniBand port".into()));
        return;
    };
    form.set_error(FOLLOWED, None);
    let own = ipoib_of(model, port);
    let err = check::netdev_name(&name).err().or_else(|| {
        if let Some(r) = rule.filter(|r| !r.managed) {
            return Some(format!(
                "line {} of {IPOIB_RULES} (yours) names this port already; edit that file",
                r.line
            ));
        }
        let in_use = model.ipoib.values().any(|i| i.name == name)
            || model.devices.values().any(|d| d.netdevs.contains(&name));
        if in_use && own.as_deref() != Some(name.as_str()) {
            return Some(format!("a network interface named {name} exists already"));
        }
        model
            .manager
            .ipoib_names
            .iter()
            .find(|r| r.name == name && !same_guid(&r.guid, &port.port_guid))
            .map(|r| format!("{name} is the name of port {} already", r.guid))
    });
    form.set_error("name", err);
}

/// The rename form: a new name no device has.
fn check_rename(form: &mut Form, device: &str, model: &Model) {
    let name = form.text("name").to_string();
    let current = model.devices.get(device);
    let err = check::rdma_name(&name).err().or_else(|| {
        if current.is_some_and(|d| d.name == name) {
            return Some("that is its name already".into());
        }
        model
            .devices
            .values()
            .any(|d| d.name == name)
            .then(|| format!("another device is named {name}"))
    });
    form.set_error("name", err);
}

fn read_only(r: &NameRule, file: &str) -> Outcome {
    Outcome::Message(format!(
        "Line {} of /etc/udev/rules.d/{file} is yours (hand-written): edit the file to change it",
        r.line
    ))
}

impl Page for NamingPage {
    fn id(&self) -> PageId {
        PageId::Naming
    }

    fn render(&mut self, frame: &mut Frame, area: Rect, ctx: &RenderCtx) {
        let model = ctx.model;
        let t = ctx.theme;
        let items = items(model);
        self.selected = self.selected.min(items.len().saturating_sub(1));
        let width = area.width as usize;
        let (lines, sel_line) = self.lines(model, &items, width, t);
        let mut lines = crate::widgets::fit_lines(lines, width);
        // Keep the selection in view, with the line after it when there is one; on the last
        // item, what follows it to the end (sections without items, such as an empty IPoIB
        // names section, are reached so).
        let height = area.height as usize;
        let total = lines.len();
        let mut scroll = (sel_line + 2).saturating_sub(height).min(sel_line);
        if self.selected + 1 >= items.len() {
            scroll = scroll.max(total.saturating_sub(height)).min(sel_line);
        }
        // Content below the screen is said on the last line.
        let below = total.saturating_sub(scroll + height);
        if below > 0 && height > 1 {
            let last = scroll + height - 1;
            if last > sel_line {
                lines[last] = Line::styled(
                    crate::widgets::fit(
                        &format!(
                            "{} {} more lines below (Down, End)",
                            crate::widgets::ELLIPSIS,
                            below + 1
                        ),
                        width,
                    ),
                    t.dim(),
                );
            }
        }
        frame.render_widget(Paragraph::new(lines).scroll((scroll as u16, 0)), area);
        edit::render_form(frame, area, &self.session, t);
    }

    fn handle_key(&mut self, key: KeyEvent, model: &Model) -> Outcome {
        if let Some(out) =
            edit::key_to_form(self.session.is_some(), &key, || self.form_key(key, model))
        {
            return out;
        }
        if edit::move_in_list(&key, &mut self.selected, items(model).len()) {
            return Outcome::Handled;
        }
        match key.code {
            KeyCode::Char('p') => {
                let s = self.policy_session(model);
                self.open(s)
            }
            KeyCode::Char('f') => {
                let d = self.selected_device(model);
                let s = self.fixed_session(model, d);
                self.open(s)
            }
            KeyCode::Char('i') => {
                let d = self.selected_device(model);
                let s = self.ipoib_session(model, d);
                self.open(s)
            }
            KeyCode::Char('r') => match self.selected_item(model) {
                Some(Item::Device(p)) => match model.devices.get(&p) {
                    Some(d) => {
                        let s = self.rename_session(model, d);
                        self.open(s)
                    }
                    None => Outcome::Ignored,
                },
                _ => Outcome::Message("Select a device to rename it.".into()),
            },
            KeyCode::Char('d') | KeyCode::Delete => self.open_remove(model),
            KeyCode::Enter => self.open_enter(model),
            _ => Outcome::Ignored,
        }
    }

    fn on_show(&mut self, _model: &Model) -> Option<Call> {
        if self.reading {
            return None;
        }
        self.reading = true;
        Some(Call::PreviewRdmaNames)
    }

    fn call_done(&mut self, call: &Call, result: &Result<CallOutput, CallError>) {
        if *call == Call::PreviewRdmaNames {
            self.reading = false;
            self.preview = match result {
                Ok(CallOutput::Preview(rows)) => Preview::Rows(rows.clone()),
                Ok(_) => Preview::Failed("an unexpected answer".into()),
                Err(e) => Preview::Failed(e.message.clone()),
            };
            return;
        }
        let Some(s) = &mut self.session else {
            // A change whose form was closed meanwhile still makes the preview stale.
            self.refresh |= result.is_ok();
            return;
        };
        match s.answer(call, result) {
            Answer::Finished(_) => {
                self.session = None;
                self.refresh = true;
            }
            Answer::Continue => self.refresh = true,
            Answer::NotOurs => self.refresh |= result.is_ok(),
            Answer::Failed => {}
        }
    }

    fn next_call(&mut self) -> Option<Call> {
        if let Some(c) = self.session.as_mut().and_then(Session::next_call) {
            return Some(c);
        }
        if self.refresh && !self.reading {
            self.refresh = false;
            self.reading = true;
            return Some(Call::PreviewRdmaNames);
        }
        None
    }

    fn editing(&self) -> bool {
        self.session.is_some()
    }

    fn hints(&self) -> Vec<(&'static str, &'static str)> {
        edit::hints(
            self.session.as_ref().map(|s| &s.form),
            vec![
                ("p", "policy"),
                ("f", "fixed"),
                ("i", "IPoIB name"),
                ("r", "rename"),
                ("d", "remove"),
            ],
        )
    }

    fn help(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("p", "the RDMA device naming policy"),
            ("f", "a fixed name of the selected device"),
            ("i", "the IPoIB interface name of a port"),
            ("r", "rename the selected device now"),
            (
                "d or Delete",
                "remove the selected rule (rdma-manager's own only)",
            ),
            (
                "Up/Down, PgUp/PgDn",
                "move, and scroll what is below the screen",
            ),
        ]
    }
}

/// A row of columns, each padded or cut to its width.
fn columns(cells: &[(&str, usize)]) -> String {
    let mut s = String::new();
    for (text, w) in cells {
        s.push_str(&format!("{:<w$} ", truncate(text, *w), w = *w));
    }
    s.trim_end().to_string()
}

/// The page's lines as they are written, and which of them is the selected item's.
struct PageLines {
    out: Vec<Line<'static>>,
    sel_line: usize,
    selected: usize,
    width: usize,
    t: Theme,
}

impl PageLines {
    fn push(&mut self, line: Line<'static>) {
        self.out.push(line);
    }

    /// Item `k`'s line, marked and highlighted when it is the selected one.
    fn item(&mut self, k: usize, text: String, style: Style) {
        let selected = k == self.selected;
        if selected {
            self.sel_line = self.out.len();
        }
        let marker = if selected { "> " } else { "  " };
        let text = truncate(&format!("{marker}{text}"), self.width);
        self.out.push(Line::styled(
            text,
            if selected { self.t.selected() } else { style },
        ));
    }
}

impl NamingPage {
    /// The page as lines, and the line of the selection.
    fn lines(
        &self,
        model: &Model,
        items: &[Item],
        width: usize,
        t: Theme,
    ) -> (Vec<Line<'static>>, usize) {
        let mut w = PageLines {
            out: Vec::new(),
            sel_line: 0,
            selected: self.selected,
            width,
            t,
        };
        policy_lines(&mut w, model);
        self.device_lines(&mut w, model, items);
        self.selected_device_rules(&mut w, model, items);
        fixed_name_lines(&mut w, model, items);
        ipoib_name_lines(&mut w, model, items);
        (w.out, w.sel_line)
    }

    /// Devices: their name now and what the rules in force give them when next added.
    fn device_lines(&self, w: &mut PageLines, model: &Model, items: &[Item]) {
        let (t, width) = (w.t, w.width);
        let dev_w = model
            .devices
            .values()
            .map(|d| d.name.chars().count())
            .max()
            .unwrap_or(6)
            .clamp(6, 15);
        w.push(Line::styled(
            format!(
                "  {}",
                columns(&[
                    ("Device", dev_w),
                    ("When next added", 21),
                    ("By rule", 13),
                    ("Note", 30)
                ])
            ),
            t.dim(),
        ));
        let preview_note = match &self.preview {
            Preview::NotRead => Some(("reading the preview...".to_string(), t.dim())),
            Preview::Failed(e) => Some((format!("! preview failed: {e}"), t.bad())),
            Preview::Rows(_) => None,
        };
        for (k, item) in items.iter().enumerate() {
            let Item::Device(p) = item else { continue };
            let Some(d) = model.devices.get(p) else {
                continue;
            };
            let rows = self.rows_of(&d.name);
            let active = rows.iter().find(|r| r.active);
            let (next, rule, note) = match active {
                Some(r) if r.name.is_empty() => {
                    ("(kept)".to_string(), r.policy.clone(), r.reason.clone())
                }
                Some(r) => (r.name.clone(), r.policy.clone(), r.reason.clone()),
                None => (String::new(), String::new(), String::new()),
            };
            w.item(
                k,
                columns(&[
                    (&d.name, dev_w),
                    (&next, 21),
                    (&rule, 13),
                    (&note, width.saturating_sub(dev_w + 21 + 13 + 6)),
                ]),
                t.normal(),
            );
        }
        if let Some((note, style)) = preview_note {
            w.push(Line::styled(format!("  {note}"), style));
        }
    }

    /// What each policy gives the selected device.
    fn selected_device_rules(&self, w: &mut PageLines, model: &Model, items: &[Item]) {
        let (t, width) = (w.t, w.width);
        let Some(Item::Device(p)) = items.get(self.selected) else {
            return;
        };
        let Some(d) = model.devices.get(p) else {
            return;
        };
        let rows = self.rows_of(&d.name);
        if rows.is_empty() {
            return;
        }
        w.push(Line::raw(""));
        w.push(Line::styled(
            format!("What each rule gives {}:", d.name),
            t.title(),
        ));
        for r in rows {
            let name = if r.name.is_empty() {
                "-"
            } else {
                r.name.as_str()
            };
            let mark = if r.active { "next" } else { "" };
            let style = if r.active { t.good() } else { t.normal() };
            // The reason is the note to read: wrapped beside the columns, or under them
            // where the terminal leaves it too little room, never cut.
            let reason_col = 2 + 13 + 1 + 21 + 1 + 4 + 1;
            let beside = width.saturating_sub(reason_col);
            let (first, rest, indent) = if beside >= 20 {
                let mut wrapped = crate::widgets::wrap_text(&r.reason, beside).into_iter();
                let first = wrapped.next().unwrap_or_default();
                (first, wrapped.collect::<Vec<_>>(), reason_col)
            } else {
                let wrapped = crate::widgets::wrap_text(&r.reason, width.saturating_sub(4));
                (String::new(), wrapped, 4)
            };
            let text = format!(
                "  {}",
                columns(&[(&r.policy, 13), (name, 21), (mark, 4), (&first, beside)])
            );
            w.push(Line::styled(text, style));
            for l in rest {
                if !l.is_empty() {
                    w.push(Line::styled(format!("{}{l}", " ".repeat(indent)), style));
                }
            }
        }
    }
}

/// The policy in force and where it comes from, and the rules files that are unusable.
fn policy_lines(w: &mut PageLines, model: &Model) {
    let (t, width) = (w.t, w.width);
    let m = &model.manager;
    let policy = if m.rdma_naming_policy.is_empty() {
        "NAME_FALLBACK".to_string()
    } else {
        m.rdma_naming_policy.clone()
    };
    let source = if m.rdma_naming_policy_source.is_empty() {
        "rdma-core's default: no rules file".to_string()
    } else {
        m.rdma_naming_policy_source.clone()
    };
    let head = format!("RDMA device naming policy: {policy}");
    let mut spans = vec![
        Span::styled("RDMA device naming policy: ", t.title()),
        Span::styled(
            policy,
            t.normal().add_modifier(ratatui::style::Modifier::BOLD),
        ),
    ];
    // The source beside the policy when it fits, else under it.
    let source = format!("  ({source})");
    if head.chars().count() + source.chars().count() <= width {
        spans.push(Span::styled(source, t.dim()));
        w.push(Line::from(spans));
    } else {
        w.push(Line::from(spans));
        w.push(Line::styled(truncate(&source, width), t.dim()));
    }
    for (path, reason) in &m.config_errors {
        if path.ends_with(RDMA_RULES) || path.ends_with(IPOIB_RULES) {
            w.push(Line::styled(
                format!("! {path} is unusable ({reason}): changes to it are refused"),
                t.bad(),
            ));
        }
    }
}

/// A rule of a rules file: its GUID, the name it gives, what it names now (`target`, `w`
/// wide) and whose it is.
fn rule_line(r: &NameRule, target: String, w: usize) -> String {
    let owner = if r.managed {
        format!("line {}, rdma-managerd", r.line)
    } else {
        format!("line {}, yours (read-only)", r.line)
    };
    columns(&[(&r.guid, 18), (&r.name, 15), (&target, w), (&owner, 30)])
}

/// The fixed device names of the RDMA rules file, each with the device it names now.
fn fixed_name_lines(w: &mut PageLines, model: &Model, items: &[Item]) {
    let t = w.t;
    let m = &model.manager;
    w.push(Line::raw(""));
    w.push(Line::styled(
        format!("Fixed device names ({RDMA_RULES})"),
        t.title(),
    ));
    if m.rdma_fixed_names.is_empty() {
        w.push(Line::styled("  none: f gives a device one", t.dim()));
    }
    for (k, item) in items.iter().enumerate() {
        let Item::Fixed(i) = item else { continue };
        let Some(r) = m.rdma_fixed_names.get(*i) else {
            continue;
        };
        let target = model
            .devices
            .values()
            .find(|d| same_guid(&d.node_guid, &r.guid))
            .map(|d| format!("now {}", d.name))
            .unwrap_or_else(|| "absent".into());
        w.item(k, rule_line(r, target, 12), t.normal());
    }
}

/// The IPoIB interface names of the IPoIB rules file, each with the port it names.
fn ipoib_name_lines(w: &mut PageLines, model: &Model, items: &[Item]) {
    let t = w.t;
    let m = &model.manager;
    w.push(Line::raw(""));
    w.push(Line::styled(
        format!("IPoIB interface names ({IPOIB_RULES})"),
        t.title(),
    ));
    if m.ipoib_names.is_empty() {
        w.push(Line::styled(
            "  none: i gives a port's interface one",
            t.dim(),
        ));
    }
    for (k, item) in items.iter().enumerate() {
        let Item::Ipoib(i) = item else { continue };
        let Some(r) = m.ipoib_names.get(*i) else {
            continue;
        };
        let target = model
            .ports
            .values()
            .find(|p| same_guid(&p.port_guid, &r.guid))
            .map(|p| format!("{}/{}", p.device_name, p.number))
            .unwrap_or_else(|| "absent".into());
        w.item(k, rule_line(r, target, 12), t.normal());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::demo_model;

    #[test]
    fn items_are_devices_then_rules() {
        let mut m = demo_model();
        m.manager.rdma_fixed_names.push(NameRule {
            guid: "0xb8599f0300d4e62a".into(),
            name: "hpc0".into(),
            managed: true,
            line: 6,
        });
        let v = items(&m);
        assert_eq!(v.len(), 5);
        assert_eq!(v[4], Item::Fixed(0));
    }
}
