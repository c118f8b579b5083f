//! The RoCE page: rdma_cm's defaults of every RoCE port (the RoCE version and type of service
//! of connections made through rdma_cm), with a form to change them.

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
use crate::theme::Theme;

/// RoCE versions, as the API names them, and the GID type each needs.
const MODES: [(&str, &str); 2] = [("v1", "IB/RoCE v1"), ("v2", "RoCE v2")];

#[derive(Debug)]
struct Edit {
    port: String,
    /// The IP settings form of the port's netdev (as they were when it opened), instead of
    /// the RoCE defaults.
    ip: Option<IpSettings>,
}

#[derive(Debug, Default)]
pub struct RocePage {
    selected: usize,
    session: Option<Session<Edit>>,
    /// The IP settings of the netdev last asked for (`i`), by name.
    ip: Option<(String, IpState)>,
    /// Open the IP settings form when the settings of this netdev arrive.
    ip_form_for: Option<(String, String)>,
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
        },
    );
    check_edit(&mut s.form);
    s
}

fn check(s: &mut Session<Edit>) {
    if s.kind.ip.is_some() {
        crate::ipform::check(&mut s.form);
    } else {
        check_edit(&mut s.form);
    }
}

fn check_edit(form: &mut Form) {
    let err = check::tos(form.text("tos")).err();
    form.set_error("tos", err);
}

/// The calls an edit makes: only what differs from the port now, the version first.
fn edit_calls(form: &Form, port: &Port) -> Vec<Call> {
    let mut calls = Vec::new();
    if let Some(mode) = form.choice("mode") {
        // A version the port lacks is never sent (the choice cannot select it, but a port
        // whose modes are unreadable starts on one).
        if mode != port.roce_mode && port.roce_modes.iter().any(|m| m == mode) {
            calls.push(Call::SetRoceMode {
                port: port.path.clone(),
                mode: mode.to_string(),
            });
        }
    }
    if let Ok(tos) = check::tos(form.text("tos")) {
        if tos != port.roce_tos {
            calls.push(Call::SetRoceTos {
                port: port.path.clone(),
                tos,
            });
        }
    }
    calls
}

impl RocePage {
    fn form_key(&mut self, key: KeyEvent, model: &Model) -> Outcome {
        edit::form_key(
            &mut self.session,
            key,
            model,
            |s, _| check(s),
            |s| {
                Submit::Calls(match (&s.kind.ip, model.ports.get(&s.kind.port)) {
                    (Some(settings), _) => crate::ipform::calls(&s.form, settings),
                    (None, Some(p)) => edit_calls(&s.form, p),
                    (None, None) => Vec::new(),
                })
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
        if let Call::GetIpSettings { interface } = call {
            let Some(state) = IpState::from_answer(result) else {
                return;
            };
            if let Some((port, netdev)) = self.ip_form_for.take() {
                if netdev == *interface {
                    edit::open_ip_form(&mut self.session, &state, |settings| Edit {
                        port,
                        ip: Some(settings.clone()),
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
}
