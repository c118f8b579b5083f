//! The RoCE page: rdma_cm's defaults of every RoCE port (the RoCE version and type of service
//! of connections made through rdma_cm), with a form to change them, and the forms of the
//! port's netdev IP settings and of its QoS profile (lossless RoCE).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::{list_view, Outcome, Page, PageId, RenderCtx};
use crate::check;
use crate::client::IpSettings;
use crate::client::{Call, CallError, CallOutput};
use crate::edit::{self, Session, Submit};
use crate::form::{ChoiceOption, Field, Form};
use crate::ipform::{ip_lines, IpState};
use crate::model::{Model, Port};
use crate::qosform;
use crate::theme::Theme;
use rdma_manager_model::qos::QosProfile;
use rdma_manager_model::state::{RoceEntry, RoceVersion, State};

/// RoCE versions, as the API names them, and the GID type each needs.
const MODES: [(&str, &str); 2] = [("v1", "IB/RoCE v1"), ("v2", "RoCE v2")];

#[derive(Debug)]
struct Edit {
    port: String,
    /// The IP settings form of the port's netdev (as they were when it opened), instead of
    /// the RoCE defaults.
    ip: Option<IpSettings>,
    /// The QoS profile form (the profile as the port had it when it opened), instead of the
    /// RoCE defaults.
    qos: Option<QosProfile>,
}

#[derive(Debug, Default)]
pub struct RocePage {
    selected: usize,
    session: Option<Session<Edit>>,
    /// The IP settings of the netdev last asked for (`i`), by name.
    ip: Option<(String, IpState)>,
    /// Open the IP settings form when the settings of this netdev arrive.
    ip_form_for: Option<(String, String)>,
    /// Open the QoS profile form when the profile of this port (object path) arrives; how
    /// the form names the port.
    qos_form_for: Option<(String, String)>,
}

/// RoCE ports: Ethernet ports that are not iWARP (rdma_cm's RoCE defaults do not apply to
/// iWARP).
fn roce_ports(model: &Model) -> Vec<&Port> {
    model
        .ports_in_order()
        .into_iter()
        .filter(|p| p.link_layer == "Ethernet")
        .filter(|p| {
            model
                .device_of(p)
                .is_none_or(|d| d.kind != "siw" && d.protocol != "iw")
        })
        .collect()
}

fn port_label(p: &Port) -> String {
    format!("{}/{}", p.device_name, p.number)
}

fn edit_session(port: &Port) -> Session<Edit> {
    let options = MODES
        .iter()
        .map(|(m, gid_type)| {
            let o = ChoiceOption::new(*m, format!("RoCE {m}"));
            if port.roce_modes.iter().any(|s| s == m) {
                o
            } else {
                o.disabled(format!("the GID table has no {gid_type} entries"))
            }
        })
        .collect();
    let netdev = if port.netdev.is_empty() {
        String::new()
    } else {
        format!(" over {}", port.netdev)
    };
    let form = Form::new(format!("RoCE defaults of {}", port_label(port)), "Apply")
        .field(Field::info(
            "port",
            "Port",
            format!("{}{netdev}", port_label(port)),
        ))
        .field(
            Field::choice("mode", "Version", options, &port.roce_mode)
                .with_note("both ends of a connection must use the same version"),
        )
        .field(
            Field::text("tos", "ToS", &port.roce_tos.to_string(), 3)
                .with_note("0 to 255: DSCP x 4 + ECN (106: DSCP 26, ECN-capable)"),
        );
    let mut s = Session::new(
        form,
        Edit {
            port: port.path.clone(),
            ip: None,
            qos: None,
        },
    );
    check_edit(&mut s.form);
    s
}

fn check(s: &mut Session<Edit>, changed: Option<&str>) {
    if s.kind.ip.is_some() {
        crate::ipform::check(&mut s.form);
    } else if s.kind.qos.is_some() {
        qosform::check(&mut s.form, changed);
    } else {
        check_edit(&mut s.form);
    }
}

fn check_edit(form: &mut Form) {
    let err = check::tos(form.text("tos")).err();
    form.set_error("tos", err);
}

/// `port`'s entry of the state document's `roce` list, with no key set yet.
fn roce_entry(port: &Port) -> RoceEntry {
    RoceEntry {
        device: port.device_name.clone(),
        port: port.number,
        mode: None,
        tos: None,
        qos: None,
    }
}

/// The call that applies `entry`, one port's keys, as a document of the state: its steps
/// are one change, and polkit is asked as for the methods they stand for.
fn apply_entry(entry: RoceEntry, what: String) -> Call {
    let state = State {
        roce: Some(vec![entry]),
        ..State::default()
    };
    Call::ApplyState {
        state: Box::new(state),
        what,
    }
}

/// The call an edit makes: the port's `roce` entry with the keys that differ from the port
/// now (none when nothing differs).
fn edit_calls(form: &Form, port: &Port) -> Vec<Call> {
    let mut entry = roce_entry(port);
    let mut what = Vec::new();
    if let Some(mode) = form.choice("mode") {
        // A version the port lacks is never sent (the choice cannot select it, but a port
        // whose modes are unreadable starts on one).
        let version = match mode {
            "v1" => Some(RoceVersion::V1),
            "v2" => Some(RoceVersion::V2),
            _ => None,
        };
        if mode != port.roce_mode && port.roce_modes.iter().any(|m| m == mode) {
            if let Some(v) = version {
                entry.mode = Some(v);
                what.push(format!("RoCE {mode}"));
            }
        }
    }
    if let Ok(tos) = check::tos(form.text("tos")) {
        if tos != port.roce_tos {
            entry.tos = Some(tos);
            what.push(format!("ToS {tos}"));
        }
    }
    if what.is_empty() {
        return Vec::new();
    }
    let what = format!("set {}: {}", port_label(port), what.join(", "));
    vec![apply_entry(entry, what)]
}

/// The call the QoS profile form makes for a port that had `now`: its `roce` entry's `qos`
/// (none when the port would hold the same profile afterwards).
pub fn qos_calls(form: &Form, port: &Port, now: &QosProfile) -> Vec<Call> {
    let Some(profile) = qosform::changed(form, now) else {
        return Vec::new();
    };
    let entry = RoceEntry {
        qos: Some(profile),
        ..roce_entry(port)
    };
    let what = format!("set the QoS profile of {}", port_label(port));
    vec![apply_entry(entry, what)]
}

impl RocePage {
    fn form_key(&mut self, key: KeyEvent, model: &Model) -> Outcome {
        edit::form_key(
            &mut self.session,
            key,
            model,
            |s, changed| check(s, changed),
            |s| {
                Submit::Calls(
                    match (&s.kind.ip, &s.kind.qos, model.ports.get(&s.kind.port)) {
                        (Some(settings), _, _) => crate::ipform::calls(&s.form, settings),
                        (None, Some(now), Some(p)) => qos_calls(&s.form, p, now),
                        (None, None, Some(p)) => edit_calls(&s.form, p),
                        (None, _, None) => Vec::new(),
                    },
                )
            },
        )
    }

    /// The selected port and its netdev, or why there is none to configure.
    fn selected_netdev(&self, model: &Model) -> Result<(String, String), Outcome> {
        let ports = roce_ports(model);
        let Some(p) = ports.get(self.selected) else {
            return Err(Outcome::Message("No RoCE port selected.".into()));
        };
        if p.netdev.is_empty() {
            return Err(Outcome::Message(format!(
                "{} has no network interface to configure",
                port_label(p)
            )));
        }
        Ok((p.path.clone(), p.netdev.clone()))
    }

    /// `i`: reads the netdev's IP settings afresh and opens the form when they arrive.
    fn open_ip(&mut self, model: &Model) -> Outcome {
        match self.selected_netdev(model) {
            Ok((port, netdev)) => {
                self.ip_form_for = Some((port, netdev.clone()));
                Outcome::Call(Call::GetIpSettings { interface: netdev })
            }
            Err(o) => o,
        }
    }

    /// `Q`: reads the selected port's QoS profile afresh and opens the form when it arrives
    /// (a port without DCB: the read's error is said on the status line, and no form opens).
    fn open_qos(&mut self, model: &Model) -> Outcome {
        let ports = roce_ports(model);
        let Some(p) = ports.get(self.selected) else {
            return Outcome::Message("No RoCE port selected.".into());
        };
        let label = if p.netdev.is_empty() {
            port_label(p)
        } else {
            format!("{} over {}", port_label(p), p.netdev)
        };
        self.qos_form_for = Some((p.path.clone(), label));
        Outcome::Call(Call::GetQosProfile {
            port: p.path.clone(),
        })
    }

    /// The QoS profile read for `port` arrived: the form opens on it, if it was asked for
    /// and no other form is open.
    fn qos_read(&mut self, port: &str, result: &Result<CallOutput, CallError>) {
        let Some((_, label)) = self.qos_form_for.take_if(|(p, _)| p == port) else {
            return;
        };
        let (
            Ok(CallOutput::QosProfile {
                profile,
                remembered,
            }),
            None,
        ) = (result, &self.session)
        else {
            return;
        };
        self.session = Some(Session::new(
            qosform::form(&label, profile, *remembered),
            Edit {
                port: port.to_string(),
                ip: None,
                qos: Some(profile.clone()),
            },
        ));
    }

    /// `u` / `D`: the netdev up or down through NetworkManager.
    fn up_down(&mut self, model: &Model, up: bool) -> Outcome {
        match self.selected_netdev(model) {
            Ok((_, interface)) => Outcome::Call(if up {
                Call::Activate { interface }
            } else {
                Call::Deactivate { interface }
            }),
            Err(o) => o,
        }
    }
}

impl Page for RocePage {
    fn id(&self) -> PageId {
        PageId::Roce
    }

    fn render(&mut self, frame: &mut Frame, area: Rect, ctx: &RenderCtx) {
        let model = ctx.model;
        let t = ctx.theme;
        let ports = roce_ports(model);
        self.selected = self.selected.min(ports.len().saturating_sub(1));
        let [list, details] = list_view::list_and_details(area, ports.len(), 7);
        if ports.is_empty() {
            list_view::render_empty(
                frame,
                area,
                "RoCE ports",
                "None. RoCE ports are the Ethernet ports of RDMA devices (a ConnectX port in \
                 Ethernet mode, Soft-RoCE); InfiniBand ports have no RoCE settings.",
                t,
            );
        } else {
            render_table(frame, list, &ports, self.selected, t);
            let port = ports.get(self.selected).copied();
            let ip = self
                .ip
                .as_ref()
                .filter(|(n, _)| port.is_some_and(|p| p.netdev == *n))
                .map(|(_, s)| s);
            render_details(frame, details, model, port, ip, t);
        }
        edit::render_form(frame, area, &self.session, t);
    }

    fn handle_key(&mut self, key: KeyEvent, model: &Model) -> Outcome {
        if let Some(out) =
            edit::key_to_form(self.session.is_some(), &key, || self.form_key(key, model))
        {
            return out;
        }
        let ports = roce_ports(model);
        if edit::move_in_list(&key, &mut self.selected, ports.len()) {
            return Outcome::Handled;
        }
        match key.code {
            KeyCode::Char('i') => self.open_ip(model),
            KeyCode::Char('Q') => self.open_qos(model),
            KeyCode::Char('u') => self.up_down(model, true),
            KeyCode::Char('D') => self.up_down(model, false),
            KeyCode::Enter | KeyCode::Char('e') => match ports.get(self.selected) {
                Some(p) => {
                    self.session = Some(edit_session(p));
                    Outcome::Handled
                }
                None => Outcome::Message("No RoCE port to change.".into()),
            },
            _ => Outcome::Ignored,
        }
    }

    fn selected_port(&self, model: &Model) -> Option<String> {
        roce_ports(model).get(self.selected).map(|p| p.path.clone())
    }

    fn focus_port(&mut self, port: &str, model: &Model) {
        if let Some(i) = roce_ports(model).iter().position(|p| p.path == port) {
            self.selected = i;
        }
    }

    fn network_changed(&mut self, _model: &Model) -> Option<Call> {
        let (interface, _) = self.ip.take()?;
        Some(Call::GetIpSettings { interface })
    }

    fn call_done(&mut self, call: &Call, result: &Result<CallOutput, CallError>) {
        if let Call::GetQosProfile { port } = call {
            self.qos_read(port, result);
            return;
        }
        if let Call::GetIpSettings { interface } = call {
            let Some(state) = IpState::from_answer(result) else {
                return;
            };
            if let Some((port, netdev)) = self.ip_form_for.take() {
                if netdev == *interface {
                    edit::open_ip_form(&mut self.session, &state, |settings| Edit {
                        port,
                        ip: Some(settings.clone()),
                        qos: None,
                    });
                }
            }
            self.ip = Some((interface.clone(), state));
            return;
        }
        edit::answer_and_close(&mut self.session, call, result);
    }

    edit::form_page_methods!();

    fn hints(&self) -> Vec<(&'static str, &'static str)> {
        edit::hints(
            self.session.as_ref().map(|s| &s.form),
            vec![
                ("Enter", "change version/ToS"),
                ("i", "IP"),
                ("Q", "QoS"),
                ("u/D", "up/down"),
            ],
        )
    }

    fn help(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            (
                "Enter or e",
                "change the RoCE version and ToS of the selected port",
            ),
            (
                "i",
                "IP settings of the port's netdev: a RoCE v2 GID needs an address",
            ),
            (
                "Q",
                "QoS profile of the port (lossless RoCE): trust, PFC, ETS, DSCP map, \
                 traffic class, ECN",
            ),
            ("u / D", "bring the netdev up / down (NetworkManager)"),
        ]
    }
}

fn render_table(frame: &mut Frame, area: Rect, ports: &[&Port], sel: usize, t: Theme) {
    let header = vec![
        "Port",
        "Netdev",
        "State",
        "Version",
        "Supported",
        "ToS",
        "Remembered",
    ];
    let widths: Vec<u16> = vec![14, 15, 8, 7, 9, 4, 10];
    let body: Vec<list_view::TableRow<'static>> = ports
        .iter()
        .map(|p| {
            let mode = if p.roce_mode.is_empty() {
                Span::styled("?", t.warn())
            } else {
                Span::raw(p.roce_mode.clone())
            };
            list_view::TableRow::new(vec![
                Span::raw(port_label(p)),
                Span::raw(p.netdev.clone()),
                Span::styled(p.state.clone(), t.port_state(&p.state)),
                mode,
                Span::raw(p.roce_modes.join(" ")),
                Span::raw(p.roce_tos.to_string()),
                Span::raw(if p.roce_persisted { "yes" } else { "no" }),
            ])
        })
        .collect();
    list_view::render_table(
        frame,
        area,
        format!("RoCE ports: rdma_cm defaults ({})", ports.len()),
        body,
        &widths,
        &header,
        sel,
        t,
    );
}

fn render_details(
    frame: &mut Frame,
    area: Rect,
    model: &Model,
    port: Option<&Port>,
    ip: Option<&IpState>,
    t: Theme,
) {
    let mut lines = list_view::config_errors(model, "roce.toml", "changes", t);
    if let Some(p) = port {
        let mode = if p.roce_mode.is_empty() {
            "unknown".to_string()
        } else {
            format!("RoCE {}", p.roce_mode)
        };
        lines.push(Line::from(vec![
            Span::styled(port_label(p), t.title()),
            Span::raw(format!(
                ": connections through rdma_cm use {mode}, ToS {}",
                p.roce_tos
            )),
        ]));
        if let Some(why) = p.unreadable.get("RoceMode") {
            lines.push(Line::styled(
                format!("! RoCE mode unreadable: {why}"),
                t.bad(),
            ));
        }
        if p.roce_persisted {
            lines.push(Line::styled(
                "Remembered by rdma-managerd: written back at start and when the device appears.",
                t.good(),
            ));
        } else {
            lines.push(Line::styled(
                "Not remembered: the kernel's defaults after a reboot or a driver reload.",
                t.dim(),
            ));
        }
        if let Some(ip) = ip {
            lines.extend(ip_lines(ip, t));
        }
    }
    lines.push(Line::styled(
        "Both ends of a connection must use the same RoCE version. Applications that choose \
         their GID themselves are not affected.",
        t.dim(),
    ));
    list_view::render_details(frame, area, lines, t);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::demo_model;

    #[test]
    fn roce_ports_are_the_ethernet_ones() {
        let m = demo_model();
        let labels: Vec<String> = roce_ports(&m).iter().map(|p| port_label(p)).collect();
        assert_eq!(labels, vec!["mlx4_1/2", "mlx5_1/1", "rxe0/1"]);
    }

    fn select(page: &mut RocePage, m: &Model, label: &str) -> String {
        let ports = roce_ports(m);
        let i = ports.iter().position(|p| port_label(p) == label);
        page.selected = i.unwrap_or_else(|| panic!("{label} on the demo host"));
        ports[page.selected].path.clone()
    }

    fn press_in(page: &mut RocePage, m: &Model, codes: &[KeyCode]) -> Vec<Outcome> {
        use crate::pages::test_support::key;
        codes.iter().map(|c| page.handle_key(key(*c), m)).collect()
    }

    fn type_in(page: &mut RocePage, m: &Model, text: &str) {
        let keys: Vec<KeyCode> = text.chars().map(KeyCode::Char).collect();
        press_in(page, m, &keys);
    }

    fn clear_field(page: &mut RocePage, m: &Model) {
        use crossterm::event::KeyModifiers;
        page.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL), m);
    }

    fn roce_change(device: &str, mode: Option<RoceVersion>, tos: Option<u8>, what: &str) -> Call {
        Call::ApplyState {
            state: Box::new(State {
                roce: Some(vec![RoceEntry {
                    device: device.into(),
                    port: 1,
                    mode,
                    tos,
                    qos: None,
                }]),
                ..State::default()
            }),
            what: what.into(),
        }
    }

    /// The form sends the port's entry of the state document with only the keys that
    /// differ, both in one change; a value out of range sends nothing and keeps the form.
    #[test]
    fn the_form_applies_only_what_differs_as_one_change() {
        let m = demo_model();
        let mut page = RocePage::default();
        select(&mut page, &m, "mlx5_1/1");
        // Version v2 -> v1 (Left), then the ToS.
        press_in(
            &mut page,
            &m,
            &[KeyCode::Enter, KeyCode::Left, KeyCode::Tab],
        );
        clear_field(&mut page, &m);
        type_in(&mut page, &m, "106");
        let sent = press_in(&mut page, &m, &[KeyCode::Enter]);
        assert_eq!(
            sent,
            vec![Outcome::Call(roce_change(
                "mlx5_1",
                Some(RoceVersion::V1),
                Some(106),
                "set mlx5_1/1: RoCE v1, ToS 106"
            ))]
        );

        // rxe0 knows only v2, and 256 is not a ToS.
        let mut page = RocePage::default();
        select(&mut page, &m, "rxe0/1");
        press_in(
            &mut page,
            &m,
            &[KeyCode::Enter, KeyCode::Left, KeyCode::Tab],
        );
        clear_field(&mut page, &m);
        type_in(&mut page, &m, "256");
        assert_eq!(
            press_in(&mut page, &m, &[KeyCode::Enter]),
            vec![Outcome::Handled]
        );
        assert!(page.editing(), "refused, still open");
        let sent = press_in(&mut page, &m, &[KeyCode::Backspace, KeyCode::Enter]);
        assert_eq!(
            sent,
            vec![
                Outcome::Handled,
                Outcome::Call(roce_change("rxe0", None, Some(25), "set rxe0/1: ToS 25"))
            ]
        );
    }

    /// The form at 80x24 with a ToS out of range: the version rxe lacks is offered greyed
    /// with why, and the field says what a ToS is.
    #[test]
    fn the_form_at_80x24() {
        use crate::pages::test_support::screen;
        let m = demo_model();
        let mut page = RocePage::default();
        select(&mut page, &m, "rxe0/1");
        press_in(&mut page, &m, &[KeyCode::Enter, KeyCode::Tab]);
        clear_field(&mut page, &m);
        type_in(&mut page, &m, "300");
        insta::assert_snapshot!(screen(&mut page, &m, 80, 24), @r#"
        RoCE ports: rdma_cm defaults (3)
          Port           Netdev          State    Version Supported ToS  Remembered
          mlx4_1/2       enp4s0d1        ACTIVE   v2      v1 v2     0    no
          mlx5_1/1       enp59s0f1np1    ACTIVE   v2      v1 v2     0    no
        > rxe0/1         eth0            ACTIVE   v2      v2        0    no
        ────────────────────────────────────────────────────────────────────────────────
        rx┌ RoCE defaults of rxe0/1 ─────────────────────────────────────────────────┐
        No│   Port    rxe0/1 over eth0                                               │
        Bo│   Version (-) RoCE v1  (*) RoCE v2                                       │
        ch│           RoCE v1: unavailable (the GID table has no IB/RoCE v1 entries) │
          │ > ToS     [300 ]                                                         │
          │           0 to 255: DSCP x 4 + ECN (106: DSCP 26, ECN-capable)           │
          │           ! "300" is not 0 to 255 (or 0x00 to 0xff); the ToS is one byte │
          │           (e.g. 106)                                                     │
          │                                                                          │
          │                          [ Apply ]   [ Cancel ]                          │
          └──────────────────────────────────────────────────────────────────────────┘
        "#);
    }

    /// `Q` reads the selected port's profile; the form opens on the answer, is checked as
    /// it is typed, and Apply sends the changed profile once the values pass.
    #[test]
    fn q_reads_the_profile_and_opens_the_form_on_it() {
        use crate::pages::test_support::key;
        use rdma_manager_model::qos::{parse_ets, Trust};
        let m = demo_model();
        let mut page = RocePage::default();
        let port = select(&mut page, &m, "mlx5_1/1");
        let read = page.handle_key(key(KeyCode::Char('Q')), &m);
        let call = Call::GetQosProfile { port: port.clone() };
        assert_eq!(read, Outcome::Call(call.clone()));
        assert!(!page.editing(), "no form before the answer");
        let now = QosProfile {
            ets: parse_ets("100,0,0,0,0,0,0,0/0,0,0,0,0,0,0,0").unwrap_or_default(),
            traffic_class: Some(0),
            ecn: Some(vec![]),
            ..QosProfile::default()
        };
        page.call_done(
            &call,
            &Ok(CallOutput::QosProfile {
                profile: now.clone(),
                remembered: false,
            }),
        );
        assert!(page.editing());
        // Tab from the trust to the PFC field, a priority that does not exist: refused on the field.
        page.handle_key(key(KeyCode::Tab), &m);
        let focused = page.session.as_ref().and_then(|s| s.form.focused());
        assert_eq!(focused, Some("pfc"));
        page.handle_key(key(KeyCode::Char('9')), &m);
        let form = page.session.as_ref().map(|s| &s.form);
        assert_eq!(form.map(|f| f.text("pfc")), Some("none9"));
        let pfc = form
            .and_then(|f| f.get("pfc"))
            .and_then(|f| f.error.clone());
        assert!(pfc.is_some_and(|e| e.contains("PFC")), "{form:?}");
        assert_eq!(page.handle_key(key(KeyCode::Enter), &m), Outcome::Handled);
        assert!(page.editing(), "refused, still open");
        if let Some(s) = page.session.as_mut() {
            s.form.set_text("pfc", "3");
            s.form.set_text("dscp", "26:3");
            check(s, Some("dscp"));
        }
        let sent = page.handle_key(key(KeyCode::Enter), &m);
        let want = QosProfile {
            trust: Trust::Dscp,
            pfc: vec![3],
            dscp: [(26, 3)].into(),
            ..now
        };
        assert_eq!(
            sent,
            Outcome::Call(Call::ApplyState {
                state: Box::new(State {
                    roce: Some(vec![RoceEntry {
                        device: "mlx5_1".into(),
                        port: 1,
                        mode: None,
                        tos: None,
                        qos: Some(want),
                    }]),
                    ..State::default()
                }),
                what: "set the QoS profile of mlx5_1/1".into(),
            })
        );
    }

    /// A port without DCB: the read fails (the application says why) and no form opens;
    /// an answer for another port than the one asked for opens none either.
    #[test]
    fn a_failed_read_opens_no_form() {
        use crate::client::ErrorKind;
        use crate::pages::test_support::key;
        let m = demo_model();
        let mut page = RocePage::default();
        let port = select(&mut page, &m, "rxe0/1");
        page.handle_key(key(KeyCode::Char('Q')), &m);
        let err = CallError {
            kind: ErrorKind::NotSupported,
            message: "rxe0/1 (eth0) has no DCB: Operation not supported".into(),
        };
        page.call_done(&Call::GetQosProfile { port }, &Err(err));
        assert!(!page.editing());
        let other = select(&mut page, &m, "mlx5_1/1");
        page.call_done(
            &Call::GetQosProfile { port: other },
            &Ok(CallOutput::QosProfile {
                profile: QosProfile::default(),
                remembered: false,
            }),
        );
        assert!(!page.editing(), "not asked for");
    }
}
