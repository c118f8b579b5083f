//! What every page is: the [`Page`] trait, the [`Outcome`] of a key, the [`PageId`]s in tab
//! order and the [`RenderCtx`] of drawing. Apart from the pages themselves, so that the
//! editing helpers (`edit.rs`) that the pages use can name an `Outcome` without importing the
//! module that lists every page.

use crossterm::event::{KeyEvent, MouseEvent};
use ratatui::layout::Rect;
use ratatui::Frame;

use crate::client::{Call, CallError, CallOutput};
use crate::model::Model;
use crate::theme::Theme;

/// The pages, in tab order (the number keys 1..=9 choose them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PageId {
    Overview,
    Detail,
    Bandwidth,
    Ipoib,
    SoftLinks,
    Roce,
    Naming,
    Host,
    LinkTest,
}

impl PageId {
    pub const ALL: [PageId; 9] = [
        PageId::Overview,
        PageId::Detail,
        PageId::Bandwidth,
        PageId::Ipoib,
        PageId::SoftLinks,
        PageId::Roce,
        PageId::Naming,
        PageId::Host,
        PageId::LinkTest,
    ];

    /// The tab's label.
    pub fn label(self) -> &'static str {
        match self {
            PageId::Overview => "Overview",
            PageId::Detail => "Port",
            PageId::Bandwidth => "Bandwidth",
            PageId::Ipoib => "IPoIB",
            PageId::SoftLinks => "Soft links",
            PageId::Roce => "RoCE",
            PageId::Naming => "Naming",
            PageId::Host => "Host",
            PageId::LinkTest => "Test",
        }
    }

    /// The tab's label where the full ones do not fit (all nine fit in 80 columns).
    pub fn short_label(self) -> &'static str {
        match self {
            PageId::SoftLinks => "Links",
            PageId::Bandwidth => "BW",
            other => other.label(),
        }
    }
}

/// What drawing needs besides the model.
pub struct RenderCtx<'a> {
    pub model: &'a Model,
    pub theme: Theme,
    /// Now, in µs since the epoch (graphs place samples relative to it).
    pub now_us: u64,
}

/// What a key (or mouse event) did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Not for this page: the application's global keys get it.
    Ignored,
    /// Handled (redraw).
    Handled,
    /// Make this call; the answer comes back through [`Page::call_done`].
    Call(Call),
    /// Show another page with this port (object path) selected.
    ShowPort(PageId, String),
    /// A message for the status line.
    Message(String),
}

/// One page.
pub trait Page {
    fn id(&self) -> PageId;

    fn render(&mut self, frame: &mut Frame, area: Rect, ctx: &RenderCtx);

    fn handle_key(&mut self, key: KeyEvent, model: &Model) -> Outcome;

    /// A mouse event inside `area` (the page's last drawn area).
    fn handle_mouse(&mut self, _event: MouseEvent, _area: Rect, _model: &Model) -> Outcome {
        Outcome::Ignored
    }

    /// Select this port (an object path), when another page sends the user here or the
    /// user selected it on another page (one selected port across pages).
    fn focus_port(&mut self, _port: &str, _model: &Model) {}

    /// The port (object path) the user has selected here, if the page selects ports; the
    /// pages shown next select it too.
    fn selected_port(&self, _model: &Model) -> Option<String> {
        None
    }

    /// The answer to a call this page asked for. A form that failed keeps what was typed.
    fn call_done(&mut self, _call: &Call, _result: &Result<CallOutput, CallError>) {}

    /// The next call to make, asked right after each answer this page got: a form that changes
    /// several settings sends them one after the other, each once the one before succeeded,
    /// and a page refreshes what a change made stale.
    fn next_call(&mut self) -> Option<Call> {
        None
    }

    /// True while a text field has the keyboard: letters (even `q`) go to it.
    fn editing(&self) -> bool {
        false
    }

    /// The port whose counters this page shows, read once a second while it is shown.
    fn counters_port(&self, _model: &Model) -> Option<String> {
        None
    }

    /// A call to make when the page is shown (e.g. a read-only preview).
    fn on_show(&mut self, _model: &Model) -> Option<Call> {
        None
    }

    /// A pending IP change ended (kept or rolled back): the read of what it
    /// changed that the page shows, if it shows any (IP settings).
    fn network_changed(&mut self, _model: &Model) -> Option<Call> {
        None
    }

    /// True while the page shows something that changes with time alone (a test running
    /// for N seconds): the screen is drawn again every second meanwhile.
    fn ticking(&self) -> bool {
        false
    }

    /// The page's keys for the footer: (key, what it does).
    fn hints(&self) -> Vec<(&'static str, &'static str)> {
        Vec::new()
    }

    /// The page's keys for the help: every key, where the footer has room for a few.
    fn help(&self) -> Vec<(&'static str, &'static str)> {
        self.hints()
    }
}
