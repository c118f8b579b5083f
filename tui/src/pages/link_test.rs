//! The Test page: link tests from a port (`Port.TestLink`) with their results, the recent
//! tests (`RecentLinkTests`), and the link-test responder (`GetLinkResponder`, turned on and
//! off with `SetLinkResponder`).
//!
//! A test may take its whole timeout (up to 600 s): it is a call like any other, made off the
//! drawing loop, so the page shows it running, counts its seconds and shows the port's
//! traffic live (the throughput the daemon samples every tick) while every key still works. One test at a time from here: each spends the link and would measure another.

use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::Frame;
use rdma_manager_model::linktest::{
    Stage, DEFAULT_TIMEOUT_S, KINDS, MAX_DURATION_S, MAX_TIMEOUT_S,
};

use super::{list_view, Outcome, Page, PageId, RenderCtx};
use crate::check;
use crate::client::{Call, CallError, CallOutput, LinkResponder, LinkTestResult};
use crate::edit;
use crate::form::{ChoiceOption, Field, Form};
use crate::model::{Model, Port};
use crate::theme::Theme;
use crate::units::bits_per_second;
use crate::widgets::{current_sample, rate_stats, stale_after, Spark};

/// The results kept (the daemon keeps as many).
const RECENT: usize = 32;

/// What the form was given last: the next form starts from it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Request {
    peer: String,
    kind: String,
    duration: String,
    timeout: String,
}

impl Default for Request {
    fn default() -> Self {
        Request {
            peer: String::new(),
            kind: "rdma".into(),
            duration: "0".into(),
            timeout: DEFAULT_TIMEOUT_S.to_string(),
        }
    }
}

/// The test in flight.
#[derive(Debug, Clone, PartialEq)]
struct Running {
    call: Call,
    port: String,
    label: String,
    peer: String,
    kind: String,
    /// The most it may take, in seconds.
    timeout_s: u32,
    /// When it was first drawn running (µs since the epoch): the page learns the time only
    /// when it draws.
    since_us: Option<u64>,
}

/// What the list shows: the ports to test from, or the recent results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum View {
    #[default]
    Ports,
    Recent,
}

/// The form of a test from `port` (an object path).
#[derive(Debug)]
struct TestForm {
    form: Form,
    port: String,
}

#[derive(Debug, Default)]
pub struct LinkTestPage {
    view: View,
    selected: usize,
    /// The selected recent result, counted from the newest.
    selected_recent: usize,
    session: Option<TestForm>,
    last: Request,
    running: Option<Running>,
    /// The last test this page asked for that the daemon refused (port, why).
    refused: Option<(String, String)>,
    /// Oldest first, as `RecentLinkTests` gives them; the page's own results are added as
    /// they come.
    recent: VecDeque<LinkTestResult>,
    /// The responder as last read, or why it could not be.
    responder: Option<Result<LinkResponder, String>>,
    /// Reads to make after an answer (the responder after the recent tests or a change).
    then: VecDeque<Call>,
}

fn port_label(p: &Port) -> String {
    format!("{}/{}", p.device_name, p.number)
}

/// Whether `r` was tested from `p`.
fn is_from(r: &LinkTestResult, p: &Port) -> bool {
    r.device == p.device_name && r.port == p.number
}

fn test_form(port: &Port, last: &Request) -> TestForm {
    let kinds = KINDS
        .iter()
        .map(|k| {
            let o = ChoiceOption::new(*k, kind_label(k));
            if *k == "icmp" && port.netdev.is_empty() {
                o.disabled("the port has no netdev to send ICMP from")
            } else if *k == "ibping" && port.link_layer != "InfiniBand" {
                o.disabled("ibping is InfiniBand's: this port is not")
            } else {
                o
            }
        })
        .collect();
    let netdev = if port.netdev.is_empty() {
        String::new()
    } else {
        format!(" over {}", port.netdev)
    };
    let mut form = Form::new(format!("Test the link from {}", port_label(port)), "Run")
        .field(Field::info(
            "port",
            "From",
            format!("{}{netdev}, {}", port_label(port), port.state),
        ))
        .field(
            Field::text("peer", "Peer", &last.peer, 64)
                .placeholder("192.0.2.2")
                .with_note(
                    "the peer's IP address (IPoIB, RoCE), a RoCE v2 GID, or for ibping its LID",
                ),
        )
        .field(Field::choice("kind", "Kind", kinds, &last.kind))
        .field(
            Field::text("duration", "Duration", &last.duration, 3).with_note(format!(
                "seconds, 0 to {MAX_DURATION_S} (0: perftest's counts, 2 s of ICMP)"
            )),
        )
        .field(
            Field::text("timeout", "Timeout", &last.timeout, 3).with_note(format!(
                "seconds, 1 to {MAX_TIMEOUT_S}: the most it may take"
            )),
        );
    form.focus_field("peer");
    let mut f = TestForm {
        form,
        port: port.path.clone(),
    };
    // Only the untouched defaults start checked: an empty peer is not an error yet.
    check_form(&mut f.form, false);
    f
}

fn kind_label(kind: &str) -> String {
    match kind {
        "rdma" => "RDMA (perftest)".into(),
        "icmp" => "ICMP (ping)".into(),
        "ibping" => "InfiniBand ping (LID)".into(),
        other => other.into(),
    }
}

/// Checks the fields; the peer only once typed in or on submit (`all`).
fn check_form(form: &mut Form, all: bool) {
    let peer = (all || form.touched("peer"))
        .then(|| check::peer(form.text("peer"), form.choice("kind").unwrap_or("rdma")).err())
        .flatten();
    form.set_error("peer", peer);
    let e = check::test_duration(form.text("duration")).err();
    form.set_error("duration", e);
    let e = check::test_timeout(form.text("timeout")).err();
    form.set_error("timeout", e);
}

impl LinkTestPage {
    fn ports(model: &Model) -> Vec<&Port> {
        model.ports_in_order()
    }

    /// The recent results, newest first.
    fn newest_first(&self) -> Vec<&LinkTestResult> {
        self.recent.iter().rev().collect()
    }

    fn remember(&mut self, r: LinkTestResult) {
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(r);
    }

    fn form_key(&mut self, key: KeyEvent, model: &Model) -> Outcome {
        let Some(s) = &mut self.session else {
            return Outcome::Ignored;
        };
        use crate::form::FormEvent;
        match s.form.handle_key(key) {
            FormEvent::Cancel => {
                self.session = None;
                Outcome::Handled
            }
            FormEvent::Changed(_) => {
                check_form(&mut s.form, false);
                Outcome::Handled
            }
            FormEvent::Handled => Outcome::Handled,
            FormEvent::Submit => {
                check_form(&mut s.form, true);
                if s.form.has_errors() {
                    s.form.refuse();
                    return Outcome::Handled;
                }
                match self.submit(model) {
                    Some(call) => Outcome::Call(call),
                    None => Outcome::Handled,
                }
            }
        }
    }

    /// The checked form as the test to run; the form closes and the page shows it running.
    fn submit(&mut self, model: &Model) -> Option<Call> {
        let s = self.session.take()?;
        let f = &s.form;
        let (Ok(peer), Ok(duration), Ok(timeout)) = (
            check::peer(f.text("peer"), f.choice("kind").unwrap_or("rdma")),
            check::test_duration(f.text("duration")),
            check::test_timeout(f.text("timeout")),
        ) else {
            self.session = Some(s);
            return None;
        };
        let kind = f.choice("kind").unwrap_or("rdma").to_string();
        self.last = Request {
            peer: peer.clone(),
            kind: kind.clone(),
            duration: f.text("duration").trim().to_string(),
            timeout: f.text("timeout").trim().to_string(),
        };
        let label = model
            .ports
            .get(&s.port)
            .map(port_label)
            .unwrap_or_else(|| s.port.clone());
        let call = Call::TestLink {
            port: s.port.clone(),
            peer: peer.clone(),
            kind: kind.clone(),
            duration,
            timeout,
        };
        self.refused = None;
        self.running = Some(Running {
            call: call.clone(),
            port: s.port,
            label,
            peer,
            kind,
            timeout_s: if timeout == 0 {
                DEFAULT_TIMEOUT_S
            } else {
                timeout
            },
            since_us: None,
        });
        Some(call)
    }

    /// Enter: the form of a test from the selected port, unless a test is running.
    fn open_form(&mut self, model: &Model) -> Outcome {
        if let Some(r) = &self.running {
            return Outcome::Message(format!(
                "A test from {} is running; its result comes within {} s.",
                r.label, r.timeout_s
            ));
        }
        let ports = Self::ports(model);
        match ports.get(self.selected) {
            Some(p) => {
                self.session = Some(test_form(p, &self.last));
                Outcome::Handled
            }
            None => Outcome::Message("No port to test from.".into()),
        }
    }

    /// `r`: the responder on when off, off when on.
    fn toggle_responder(&self) -> Outcome {
        match &self.responder {
            Some(Ok(r)) => Outcome::Call(Call::SetLinkResponder {
                enabled: !r.enabled,
            }),
            _ => Outcome::Message(
                "The responder's state is not known yet; it is read when the page is shown.".into(),
            ),
        }
    }
}

impl Page for LinkTestPage {
    fn id(&self) -> PageId {
        PageId::LinkTest
    }

    fn render(&mut self, frame: &mut Frame, area: Rect, ctx: &RenderCtx) {
        let model = ctx.model;
        let t = ctx.theme;
        if let Some(r) = &mut self.running {
            r.since_us.get_or_insert(ctx.now_us);
        }
        let ports = Self::ports(model);
        self.selected = self.selected.min(ports.len().saturating_sub(1));
        self.selected_recent = self
            .selected_recent
            .min(self.recent.len().saturating_sub(1));
        let rows = match self.view {
            View::Ports => ports.len(),
            View::Recent => self.recent.len(),
        };
        let [list, details] = list_view::list_and_details(area, rows, 9);
        let mut lines = Vec::new();
        match self.view {
            View::Ports if ports.is_empty() => {
                list_view::render_empty(
                    frame,
                    list,
                    "Link tests",
                    "No RDMA ports to test from.",
                    t,
                );
            }
            View::Ports => {
                self.render_ports(frame, list, &ports, ctx);
                if let Some(p) = ports.get(self.selected) {
                    lines.extend(self.port_lines(p, ctx));
                }
            }
            View::Recent if self.recent.is_empty() => {
                list_view::render_empty(
                    frame,
                    list,
                    "Recent link tests",
                    "None since rdma-managerd started. Press h for the ports, Enter to test.",
                    t,
                );
            }
            View::Recent => {
                self.render_recent(frame, list, ctx);
                if let Some(r) = self.newest_first().get(self.selected_recent) {
                    lines.extend(result_lines(r, ctx.now_us, t));
                }
            }
        }
        lines.push(responder_line(self.responder.as_ref(), t));
        list_view::render_details(frame, details, lines, t);
        if let Some(s) = &self.session {
            s.form.render(frame, area, t);
        }
    }

    fn handle_key(&mut self, key: KeyEvent, model: &Model) -> Outcome {
        if let Some(out) =
            edit::key_to_form(self.session.is_some(), &key, || self.form_key(key, model))
        {
            return out;
        }
        let moved = match self.view {
            View::Ports => edit::move_in_list(&key, &mut self.selected, Self::ports(model).len()),
            View::Recent => edit::move_in_list(&key, &mut self.selected_recent, self.recent.len()),
        };
        if moved {
            return Outcome::Handled;
        }
        match key.code {
            KeyCode::Enter | KeyCode::Char('t') => self.open_form(model),
            KeyCode::Char('h') => {
                self.view = match self.view {
                    View::Ports => View::Recent,
                    View::Recent => View::Ports,
                };
                self.selected_recent = 0;
                Outcome::Handled
            }
            KeyCode::Char('r') => self.toggle_responder(),
            KeyCode::Char('R') => Outcome::Call(Call::RecentLinkTests),
            _ => Outcome::Ignored,
        }
    }

    fn selected_port(&self, model: &Model) -> Option<String> {
        Self::ports(model)
            .get(self.selected)
            .map(|p| p.path.clone())
    }

    fn focus_port(&mut self, port: &str, model: &Model) {
        if let Some(i) = Self::ports(model).iter().position(|p| p.path == port) {
            self.selected = i;
        }
    }

    fn on_show(&mut self, _model: &Model) -> Option<Call> {
        Some(Call::RecentLinkTests)
    }

    fn call_done(&mut self, call: &Call, result: &Result<CallOutput, CallError>) {
        match (call, result) {
            (Call::TestLink { .. }, _) => {
                let Some(running) = self.running.take_if(|r| r.call == *call) else {
                    // Not this page's test (none is asked elsewhere): still a result.
                    if let Ok(CallOutput::LinkTest(r)) = result {
                        self.remember((**r).clone());
                    }
                    return;
                };
                match result {
                    Ok(CallOutput::LinkTest(r)) => self.remember((**r).clone()),
                    Ok(_) => {}
                    Err(e) => self.refused = Some((running.port, e.message.clone())),
                }
            }
            (Call::RecentLinkTests, Ok(CallOutput::LinkTests(list))) => {
                self.recent = list.iter().rev().take(RECENT).rev().cloned().collect();
                self.then.push_back(Call::GetLinkResponder);
            }
            // A daemon without link tests, or the bus: the responder line says so below.
            (Call::RecentLinkTests, Err(_)) => self.then.push_back(Call::GetLinkResponder),
            (Call::GetLinkResponder, Ok(CallOutput::Responder(r))) => {
                self.responder = Some(Ok(r.clone()))
            }
            (Call::GetLinkResponder, Err(e)) => self.responder = Some(Err(e.message.clone())),
            // Changed or refused: what it is now is read again.
            (Call::SetLinkResponder { .. }, _) => self.then.push_back(Call::GetLinkResponder),
            _ => {}
        }
    }

    fn next_call(&mut self) -> Option<Call> {
        self.then.pop_front()
    }

    fn editing(&self) -> bool {
        self.session.is_some()
    }

    fn ticking(&self) -> bool {
        self.running.is_some()
    }

    fn hints(&self) -> Vec<(&'static str, &'static str)> {
        match &self.session {
            Some(s) => edit::form_hints(&s.form),
            None => vec![
                ("Enter", "test"),
                (
                    "h",
                    match self.view {
                        View::Ports => "recent",
                        View::Recent => "ports",
                    },
                ),
                ("r", "responder on/off"),
            ],
        }
    }

    fn help(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            (
                "Enter or t",
                "test the link from the selected port: peer, RDMA, ICMP or ibping (a LID), duration, timeout",
            ),
            ("h", "the recent tests (every client's) or the ports"),
            (
                "r",
                "turn the responder on or off (perftest's servers and ibping's, so peers can test this host)",
            ),
            ("R", "read the recent tests and the responder again"),
        ]
    }
}

impl LinkTestPage {
    fn render_ports(&self, frame: &mut Frame, area: Rect, ports: &[&Port], ctx: &RenderCtx) {
        let t = ctx.theme;
        let header = vec!["Port", "Netdev", "State", "Link", "Last test"];
        let widths: Vec<u16> = vec![14, 15, 8, 6, 32];
        let body = ports
            .iter()
            .map(|p| {
                let last = if self.running.as_ref().is_some_and(|r| r.port == p.path) {
                    Span::styled("running", t.warn())
                } else if ctx.model.link_tests_running.contains_key(&p.path) {
                    Span::styled("running (another client)", t.warn())
                } else if let Some(r) = self.recent.iter().rev().find(|r| is_from(r, p)) {
                    verdict_span(r, t)
                } else {
                    Span::styled("--", t.dim())
                };
                list_view::TableRow::new(vec![
                    Span::raw(port_label(p)),
                    Span::raw(p.netdev.clone()),
                    Span::styled(p.state.clone(), t.port_state(&p.state)),
                    Span::raw(crate::widgets::link_layer_short(&p.link_layer).to_string()),
                    last,
                ])
            })
            .collect();
        list_view::render_table(
            frame,
            area,
            format!("Link tests: test from a port ({})", ports.len()),
            body,
            &widths,
            &header,
            self.selected,
            t,
        );
    }

    fn render_recent(&self, frame: &mut Frame, area: Rect, ctx: &RenderCtx) {
        let t = ctx.theme;
        let header = vec!["When", "From", "Peer", "Kind", "Result", "p50", "Bandwidth"];
        let widths: Vec<u16> = vec![10, 9, 14, 4, 14, 9, 10];
        let body = self
            .newest_first()
            .into_iter()
            .map(|r| {
                list_view::TableRow::new(vec![
                    Span::raw(ago(ctx.now_us, r.started_us)),
                    Span::raw(format!("{}/{}", r.device, r.port)),
                    Span::raw(r.peer.clone()),
                    Span::raw(r.kind.clone()),
                    verdict_span(r, t),
                    Span::raw(if r.round_trips > 0 {
                        micros(r.latency_p50_us)
                    } else {
                        String::new()
                    }),
                    Span::raw(gbps(r.bandwidth_gbps)),
                ])
            })
            .collect();
        list_view::render_table(
            frame,
            area,
            format!("Recent link tests, newest first ({})", self.recent.len()),
            body,
            &widths,
            &header,
            self.selected_recent,
            t,
        );
    }

    /// The selected port's test: running, refused, or its last result.
    fn port_lines(&self, p: &Port, ctx: &RenderCtx) -> Vec<Line<'static>> {
        let t = ctx.theme;
        if let Some(r) = self.running.as_ref().filter(|r| r.port == p.path) {
            let secs = r
                .since_us
                .map_or(0, |s| ctx.now_us.saturating_sub(s) / 1_000_000);
            let mut lines = vec![Line::from(vec![
                Span::styled("Running ", t.warn()),
                Span::raw(format!(
                    "{} from {} to {}: {secs} s, at most {} s",
                    kind_word(&r.kind),
                    r.label,
                    peer_words(&r.kind, &r.peer),
                    r.timeout_s
                )),
            ])];
            lines.extend(live_figures(ctx, &p.path));
            lines.extend(live_traffic(ctx, &p.path, r.since_us.unwrap_or(ctx.now_us)));
            return lines;
        }
        if let Some(live) = ctx.model.link_tests_running.get(&p.path) {
            // Another client's test (or this page's, from before it was opened).
            let r = &live.result;
            let mut lines = vec![Line::from(vec![
                Span::styled("Running ", t.warn()),
                Span::raw(format!(
                    "{} from {} to {} (another client's test)",
                    kind_word(&r.kind),
                    port_label(p),
                    peer_words(&r.kind, &r.peer),
                )),
            ])];
            lines.extend(live_figures(ctx, &p.path));
            let since = (r.started_us > 0).then_some(r.started_us);
            lines.extend(live_traffic(ctx, &p.path, since.unwrap_or(ctx.now_us)));
            return lines;
        }
        if let Some((_, why)) = self.refused.as_ref().filter(|(port, _)| *port == p.path) {
            return vec![Line::styled(format!("! Not run: {why}"), t.bad())];
        }
        match self.recent.iter().rev().find(|r| is_from(r, p)) {
            Some(r) => result_lines(r, ctx.now_us, t),
            None => vec![Line::styled(
                format!(
                    "{}: no test yet. Enter runs one (the peer must run a responder for RDMA).",
                    port_label(p)
                ),
                t.dim(),
            )],
        }
    }
}

/// What the daemon has said of the port's running test so far (`Port.LinkTestProgress`):
/// an RDMA test's latency once measured, while its bandwidth test runs.
fn live_figures(ctx: &RenderCtx, port: &str) -> Vec<Line<'static>> {
    let t = ctx.theme;
    match ctx.model.link_tests_running.get(port) {
        Some(live) if live.stage == Stage::Bandwidth => {
            let r = &live.result;
            vec![
                Line::from(vec![
                    Span::styled("Latency           ", t.dim()),
                    Span::raw(format!(
                        "p50 {}  p99 {}  max {}  ({} round trips)",
                        micros(r.latency_p50_us),
                        micros(r.latency_p99_us),
                        micros(r.latency_max_us),
                        r.round_trips
                    )),
                ]),
                Line::styled(
                    format!(
                        "Bandwidth test running (path MTU {}, GID index {})",
                        r.mtu,
                        if r.gid_index >= 0 {
                            r.gid_index.to_string()
                        } else {
                            "unknown".into()
                        }
                    ),
                    t.warn(),
                ),
            ]
        }
        Some(live) if live.result.kind == "rdma" => {
            vec![Line::styled("Latency test running", t.warn())]
        }
        _ => Vec::new(),
    }
}

/// How much of the recent past the running test's sparkline covers.
const LIVE_WINDOW_US: u64 = 60_000_000;
/// Its width in columns (fits the details pane at 80 columns).
const LIVE_COLUMNS: usize = 40;

/// The port's traffic while its test runs, from the throughput the daemon samples at every
/// tick (the same counters as the Bandwidth page): what the test moves, live, before the
/// tool reports its own figures at the end.
fn live_traffic(ctx: &RenderCtx, port: &str, since_us: u64) -> Vec<Line<'static>> {
    let t = ctx.theme;
    let model = ctx.model;
    let interval = model.manager.sample_interval_us;
    let history = model.history.get(port);
    let Some(now) = current_sample(history, ctx.now_us, interval) else {
        return vec![Line::styled(
            "Port traffic: no sample yet (the daemon samples every tick)",
            t.dim(),
        )];
    };
    let during = history
        .into_iter()
        .flat_map(|h| h.samples.iter())
        .filter(|s| s.time_us >= since_us);
    let tx = rate_stats(during.clone(), Some(&now), |s| s.tx_bytes);
    let rx = rate_stats(during, Some(&now), |s| s.rx_bytes);
    let rate = |v: Option<f64>| v.map_or("-".to_string(), bits_per_second);
    let spark = Spark {
        now_us: ctx.now_us,
        window_us: LIVE_WINDOW_US,
        width: LIVE_COLUMNS,
        full_scale: None,
        hold_us: stale_after(interval),
    };
    vec![
        Line::from(vec![
            Span::styled("Port traffic now  ", t.dim()),
            Span::raw(format!("TX {}  RX {}", rate(tx.current), rate(rx.current))),
        ]),
        Line::from(vec![
            Span::styled("Peak of this test ", t.dim()),
            Span::raw(format!("TX {}  RX {}", rate(tx.peak), rate(rx.peak))),
        ]),
        Line::from(vec![
            Span::styled("TX, last 60 s     ", t.dim()),
            Span::styled(spark.render(history, |s| s.tx_bytes), t.good()),
        ]),
    ]
}

/// "passed", or "failed: REASON".
fn verdict_span(r: &LinkTestResult, t: Theme) -> Span<'static> {
    if r.passed {
        Span::styled("passed", t.good())
    } else {
        Span::styled(format!("failed: {}", r.reason), t.bad())
    }
}

fn micros(v: f64) -> String {
    format!("{v:.2} µs")
}

fn gbps(v: f64) -> String {
    if v > 0.0 {
        format!("{v:.2} Gb/s")
    } else {
        String::new()
    }
}

/// How long before `now_us` a test started, in the largest whole unit.
fn ago(now_us: u64, then_us: u64) -> String {
    let s = now_us.saturating_sub(then_us) / 1_000_000;
    match s {
        0..=59 => format!("{s} s ago"),
        60..=3599 => format!("{} min ago", s / 60),
        3600..=86_399 => format!("{} h ago", s / 3600),
        _ => format!("{} d ago", s / 86_400),
    }
}

/// A kind as a line names it: RDMA, ICMP, ibping (the tool's own name).
fn kind_word(kind: &str) -> String {
    match kind {
        "ibping" => kind.into(),
        other => other.to_uppercase(),
    }
}

/// The peer as a line names it: an ibping peer is a LID.
fn peer_words(kind: &str, peer: &str) -> String {
    if kind == "ibping" {
        format!("Lid {peer}")
    } else {
        peer.into()
    }
}

/// A result in full: the verdict, the figures, the path it took.
fn result_lines(r: &LinkTestResult, now_us: u64, t: Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let verdict = if r.passed {
        Span::styled("Passed:", t.good())
    } else {
        Span::styled(format!("Failed ({}):", r.reason), t.bad())
    };
    let head = format!(
        " {} from {}/{} to {}{}, {}, took {:.1} s",
        kind_word(&r.kind),
        r.device,
        r.port,
        peer_words(&r.kind, &r.peer),
        if r.address != r.peer && !r.address.is_empty() && r.kind != "ibping" {
            format!(" ({})", r.address)
        } else {
            String::new()
        },
        ago(now_us, r.started_us),
        r.elapsed_ms as f64 / 1000.0
    );
    lines.push(Line::from(vec![verdict, Span::raw(head)]));
    if !r.passed && !r.detail.is_empty() {
        lines.push(Line::styled(r.detail.clone(), t.bad()));
    }
    if r.round_trips > 0 {
        lines.push(Line::raw(format!(
            "Latency p50 {}  p99 {}  max {}  avg {}  ({} round trips{})",
            micros(r.latency_p50_us),
            micros(r.latency_p99_us),
            micros(r.latency_max_us),
            micros(r.latency_avg_us),
            r.round_trips,
            if r.kind == "rdma" { ", one-way" } else { "" }
        )));
    }
    let mut figures = Vec::new();
    if r.bandwidth_gbps > 0.0 {
        figures.push(format!("Bandwidth {}", gbps(r.bandwidth_gbps)));
    }
    if r.round_trips > 0 || r.errors > 0 {
        figures.push(format!(
            "errors {}{}",
            r.errors,
            if r.kind == "icmp" || r.kind == "ibping" {
                " (unanswered)"
            } else {
                ""
            }
        ));
    }
    if !figures.is_empty() {
        lines.push(Line::raw(figures.join("  ")));
    }
    let mut path = vec![format!("Path {}/{}", r.device, r.port)];
    if !r.netdev.is_empty() {
        path.push(format!("over {}", r.netdev));
    }
    if r.gid_index >= 0 {
        path.push(format!("GID {} ({}) {}", r.gid_index, r.gid_type, r.gid));
    }
    if !r.roce_mode.is_empty() {
        path.push(format!("RoCE {}, ToS {}", r.roce_mode, r.tos));
    }
    if r.mtu > 0 {
        path.push(format!("MTU {}", r.mtu));
    }
    if !r.tool.is_empty() {
        path.push(format!("by {}", r.tool));
    }
    lines.push(Line::styled(path.join(", "), t.dim()));
    lines
}

/// The responder's state on one line.
fn responder_line(r: Option<&Result<LinkResponder, String>>, t: Theme) -> Line<'static> {
    let label = Span::styled("Responder ", t.title());
    match r {
        None => Line::from(vec![label, Span::styled("not read yet", t.dim())]),
        Some(Err(e)) => Line::from(vec![label, Span::styled(format!("unknown: {e}"), t.bad())]),
        Some(Ok(r)) if !r.enabled => Line::from(vec![
            label,
            Span::styled("off", t.dim()),
            Span::raw(": peers cannot run RDMA tests against this host (r turns it on)"),
        ]),
        Some(Ok(r)) => {
            let mut spans = vec![
                label,
                if r.running {
                    Span::styled("on, running", t.good())
                } else {
                    Span::styled("on, not running", t.bad())
                },
                Span::raw(format!(
                    ": rdma_cm ports {} and {}, {} tests served, {} restarts",
                    r.latency_port, r.bandwidth_port, r.served, r.restarts
                )),
            ];
            if !r.detail.is_empty() {
                spans.push(Span::styled(
                    format!("; last failure: {}", r.detail),
                    t.bad(),
                ));
            }
            Line::from(spans)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_take_the_largest_whole_unit() {
        let now = 10_000_000_000;
        assert_eq!(ago(now, now - 5_000_000), "5 s ago");
        assert_eq!(ago(now, now - 125_000_000), "2 min ago");
        assert_eq!(ago(now, now - 7_300_000_000), "2 h ago");
        assert_eq!(ago(now, now + 1), "0 s ago");
    }
}
