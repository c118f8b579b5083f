//! What the editing pages (IPoIB, soft links, RoCE, naming) share: a form together with the
//! calls it is sending ([`Session`]), the keys that move in a list, and the footer hints of an
//! open form.

use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent};

use crate::app::describe;
use crate::client::{Call, CallError, CallOutput};
use crate::form::Form;
use crate::pages::Outcome;

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
    /// The call whose answer the form waits for.
    awaiting: Option<Call>,
    /// Calls still to make, each after the one before succeeded.
    queue: VecDeque<Call>,
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
    /// succeeded. No calls: nothing to do.
    pub fn send(&mut self, calls: Vec<Call>) -> Outcome {
        let mut calls: VecDeque<Call> = calls.into();
        let Some(first) = calls.pop_front() else {
            return Outcome::Message("Nothing changed.".into());
        };
        self.form.set_pending();
        self.awaiting = Some(first.clone());
        self.queue = calls;
        self.next_ready = false;
        Outcome::Call(first)
    }

    /// The answer to a call.
    pub fn answer(&mut self, call: &Call, result: &Result<CallOutput, CallError>) -> Answer {
        if self.awaiting.as_ref() != Some(call) {
            return Answer::NotOurs;
        }
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
                self.form.fail(&describe(call), e);
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
        self.queue.pop_front()
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
    Some(crate::pages::step(index, delta, len))
}

/// True for the keys an open form leaves to the application (help, quit).
pub fn global_key(key: &KeyEvent) -> bool {
    matches!(key.code, KeyCode::F(1) | KeyCode::F(10))
}

/// The footer while a form is open.
pub fn form_hints() -> Vec<(&'static str, &'static str)> {
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
