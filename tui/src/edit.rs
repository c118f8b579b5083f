//! What the editing pages (IPoIB, soft links, RoCE, naming, host) share: a form together with
//! the calls it is sending ([`Session`]), how keys, answers and drawing reach an open form, the
//! keys that move in a list, and the footer hints of an open form.

use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::Frame;

use crate::client::{Call, CallError, CallOutput, IpSettings};
use crate::form::{Form, FormEvent};
use crate::ipform::IpState;
use crate::model::Model;
use crate::pages::page::Outcome;
use crate::theme::Theme;

/// What an answer meant to a [`Session`].
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Not a call of this session.
    NotOurs,
    /// One step of several succeeded; the next is ready ([`Session::next_call`]).
    Continue,
    /// The last call succeeded: close the form.
    Finished(CallOutput),
    /// A call failed; the form shows why and keeps its values.
    Failed,
}

/// An open form, what it is about (`K`), and the calls it sends one after another.
#[derive(Debug)]
pub struct Session<K> {
    pub form: Form,
    pub kind: K,
    /// The call whose answer the form waits for, and what it does in words.
    awaiting: Option<(Call, String)>,
    /// Calls still to make, each after the one before succeeded.
    queue: VecDeque<(Call, String)>,
    /// The next call of the queue may go.
    next_ready: bool,
}

impl<K> Session<K> {
    pub fn new(form: Form, kind: K) -> Session<K> {
        Session {
            form,
            kind,
            awaiting: None,
            queue: VecDeque::new(),
            next_ready: false,
        }
    }

    /// Sends `calls` in order: the first now, each later one once the one before it
    /// succeeded. No calls: nothing to do. Each call is described now, while `model` still
    /// has the objects it names (a failure is said with their names, not their paths).
    pub fn send(&mut self, calls: Vec<Call>, model: &Model) -> Outcome {
        let mut calls: VecDeque<(Call, String)> = calls
            .into_iter()
            .map(|c| {
                let what = c.describe(model);
                (c, what)
            })
            .collect();
        let Some(first) = calls.pop_front() else {
            return Outcome::Message("Nothing changed.".into());
        };
        self.form.set_pending();
        let call = first.0.clone();
        self.awaiting = Some(first);
        self.queue = calls;
        self.next_ready = false;
        Outcome::Call(call)
    }

    /// The answer to a call.
    pub fn answer(&mut self, call: &Call, result: &Result<CallOutput, CallError>) -> Answer {
        let what = match &self.awaiting {
            Some((c, what)) if c == call => what.clone(),
            _ => return Answer::NotOurs,
        };
        match result {
            Ok(out) => match self.queue.front() {
                Some(next) => {
                    self.awaiting = Some(next.clone());
                    self.next_ready = true;
                    Answer::Continue
                }
                None => {
                    self.awaiting = None;
                    Answer::Finished(out.clone())
                }
            },
            Err(e) => {
                self.awaiting = None;
                self.queue.clear();
                self.form.fail(&what, e);
                Answer::Failed
            }
        }
    }

    /// The next call of a sequence, once the one before it succeeded.
    pub fn next_call(&mut self) -> Option<Call> {
        if !self.next_ready {
            return None;
        }
        self.next_ready = false;
        self.queue.pop_front().map(|(c, _)| c)
    }
}

/// The [`Page`](crate::pages::Page) methods every page with forms has alike, for a page that
/// keeps its open form in a `session` field (an `Option<Session<_>>`) and makes no calls of
/// its own between a form's: the next call of the form's sequence, and the keyboard going to
/// the form while one is open. Used inside the page's `impl Page`.
macro_rules! form_page_methods {
    () => {
        fn next_call(&mut self) -> Option<$crate::client::Call> {
            self.session
                .as_mut()
                .and_then($crate::edit::Session::next_call)
        }

        fn editing(&self) -> bool {
            self.session.is_some()
        }
    };
}
pub(crate) use form_page_methods;

/// Hands an answer to the open form (if any) and closes the form once its last call
/// succeeded; returns that call's output then. For pages with nothing to do on other answers:
/// a failure stays on the form, which shows it.
pub fn answer_and_close<K>(
    session: &mut Option<Session<K>>,
    call: &Call,
    result: &Result<CallOutput, CallError>,
) -> Option<CallOutput> {
    let Answer::Finished(out) = session.as_mut()?.answer(call, result) else {
        return None;
    };
    *session = None;
    Some(out)
}

/// A key while a form may be open: `None` when none is (the page's own keys apply); else help
/// and quit are left to the application and every other key goes to the form (`form_key`),
/// so typing in a field never triggers a page key.
pub fn key_to_form(
    form_open: bool,
    key: &KeyEvent,
    form_key: impl FnOnce() -> Outcome,
) -> Option<Outcome> {
    if !form_open {
        return None;
    }
    Some(if global_key(key) {
        Outcome::Ignored
    } else {
        form_key()
    })
}

/// What a page makes of its submitted form, once no field has an error.
#[derive(Debug)]
pub enum Submit {
    /// Send these calls, one after the other; none: nothing changed, and the form closes.
    Calls(Vec<Call>),
    /// The values cannot be sent as they are: the form stays open and says so.
    Refuse,
    /// Nothing to send: the form stays open as it is.
    Stay,
}

/// A key for the open form in `session`, the way every editing page takes one: Esc closes
/// the form; a changed value checks it again (`check`, told which field changed); Enter
/// checks it, refuses it while a field has an error, else sends what `submit` makes of it.
pub fn form_key<K>(
    session: &mut Option<Session<K>>,
    key: KeyEvent,
    model: &Model,
    mut check: impl FnMut(&mut Session<K>, Option<&'static str>),
    submit: impl FnOnce(&mut Session<K>) -> Submit,
) -> Outcome {
    let Some(s) = session else {
        return Outcome::Ignored;
    };
    match s.form.handle_key(key) {
        FormEvent::Cancel => {
            *session = None;
            Outcome::Handled
        }
        FormEvent::Changed(id) => {
            check(s, Some(id));
            Outcome::Handled
        }
        FormEvent::Submit => {
            check(s, None);
            if s.form.has_errors() {
                s.form.refuse();
                return Outcome::Handled;
            }
            match submit(s) {
                Submit::Calls(calls) if calls.is_empty() => {
                    *session = None;
                    Outcome::Message("Nothing changed.".into())
                }
                Submit::Calls(calls) => s.send(calls, model),
                Submit::Refuse => {
                    s.form.refuse();
                    Outcome::Handled
                }
                Submit::Stay => Outcome::Handled,
            }
        }
        FormEvent::Handled => Outcome::Handled,
    }
}

/// Opens the IP settings form on what a read of them found (`state`), unless another form is
/// open or the read found none; `kind` is what the form is about.
pub fn open_ip_form<K>(
    session: &mut Option<Session<K>>,
    state: &IpState,
    kind: impl FnOnce(&IpSettings) -> K,
) {
    if let (None, IpState::Known(settings)) = (&*session, state) {
        *session = Some(Session::new(crate::ipform::form(settings), kind(settings)));
    }
}

/// Draws the open form, if any, over the page.
pub fn render_form<K>(frame: &mut Frame, area: Rect, session: &Option<Session<K>>, theme: Theme) {
    if let Some(s) = session {
        s.form.render(frame, area, theme);
    }
}

/// Selects the row a finished create asked for (`wanted`, an object path) once the model
/// shows it (the new object may arrive after the answer), and keeps the selection on a row. `is` tells whether a row is that object.
pub fn select_wanted<R>(
    rows: &[R],
    wanted: &mut Option<String>,
    selected: &mut usize,
    is: impl Fn(&R, &str) -> bool,
) {
    if let Some(p) = wanted {
        if let Some(i) = rows.iter().position(|r| is(r, p)) {
            *selected = i;
            *wanted = None;
        }
    }
    *selected = (*selected).min(rows.len().saturating_sub(1));
}

/// Moves `selected` for a list key (see [`list_key`]); true when `key` was one.
pub fn move_in_list(key: &KeyEvent, selected: &mut usize, len: usize) -> bool {
    match list_key(key, *selected, len) {
        Some(i) => {
            *selected = i;
            true
        }
        None => false,
    }
}

/// Moves a list selection for the usual keys (arrows, j/k, Home/End, PgUp/PgDn); `None` for
/// other keys.
pub fn list_key(key: &KeyEvent, index: usize, len: usize) -> Option<usize> {
    let delta: isize = match key.code {
        KeyCode::Up | KeyCode::Char('k') => -1,
        KeyCode::Down | KeyCode::Char('j') => 1,
        KeyCode::PageUp => -10,
        KeyCode::PageDown => 10,
        KeyCode::Home | KeyCode::Char('g') => -(len as isize),
        KeyCode::End | KeyCode::Char('G') => len as isize,
        _ => return None,
    };
    Some(crate::widgets::step(index, delta, len))
}

/// True for the keys an open form leaves to the application (help, quit).
pub fn global_key(key: &KeyEvent) -> bool {
    matches!(key.code, KeyCode::F(1) | KeyCode::F(10))
}

/// The footer: the form's keys while one is open, else the page's own (`page`).
pub fn hints(
    form: Option<&Form>,
    page: Vec<(&'static str, &'static str)>,
) -> Vec<(&'static str, &'static str)> {
    match form {
        Some(f) => form_hints(f),
        None => page,
    }
}

/// The footer while `form` is open: a question's own keys (it starts on Cancel, so Enter
/// alone answers no), or a form's.
pub fn form_hints(form: &Form) -> Vec<(&'static str, &'static str)> {
    if form.fields.is_empty() {
        return vec![("y", "yes"), ("n or Esc", "no"), ("Left/Right", "button")];
    }
    vec![
        ("Tab", "next field"),
        ("Space", "toggle"),
        ("Enter", "OK"),
        ("Esc", "cancel"),
    ]
}

/// "0x8002" style: 4 hex digits.
pub fn hex16(v: u16) -> String {
    format!("0x{v:04x}")
}
