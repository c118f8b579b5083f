//! A small form in a centered popup, shared by the editing pages: text inputs, choices and
//! checkboxes, a submit and a cancel button, inline messages under each field, and an area
//! for the service's answer when a call failed.
//!
//! The form knows no rules of its own: the page that owns it checks the values after every
//! change ([`FormEvent::Changed`]) and before submitting, and puts its verdicts on the fields
//! ([`Form::set_error`], [`Form::set_warning`], [`Form::set_note`]). A form with an error is
//! never submitted, so nothing invalid reaches the bus. A failed call leaves the form open with
//! everything typed ([`Form::fail`]): the user corrects and retries instead of starting over.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Position, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Padding, Paragraph};
use ratatui::Frame;

use crate::client::{CallError, ErrorKind};
use crate::theme::Theme;

/// One option of a [`FieldKind::Choice`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChoiceOption {
    /// What the page reads back ([`Form::choice`]).
    pub value: String,
    /// What is shown.
    pub label: String,
    /// Why this option cannot be chosen, if it cannot.
    pub disabled: Option<String>,
}

impl ChoiceOption {
    pub fn new(value: impl Into<String>, label: impl Into<String>) -> ChoiceOption {
        ChoiceOption {
            value: value.into(),
            label: label.into(),
            disabled: None,
        }
    }

    /// An option shown but not selectable, with the reason.
    pub fn disabled(mut self, reason: impl Into<String>) -> ChoiceOption {
        self.disabled = Some(reason.into());
        self
    }

    /// An option with the same value and label.
    pub fn plain(value: impl Into<String>) -> ChoiceOption {
        let v = value.into();
        ChoiceOption::new(v.clone(), v)
    }
}

/// A single-line text input.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TextInput {
    pub value: String,
    /// In characters, 0..=len.
    cursor: usize,
    /// The most characters the value may have. Longer text is kept as typed (never cut:
    /// a pasted or mistyped value must not turn into another valid one) and the form refuses
    /// it with the reason ([`Field::fault`]).
    pub max_len: usize,
    /// Shown dimmed while the input is empty.
    pub placeholder: String,
    /// Values Space cycles through (a netdev picker that still accepts any typed name).
    /// Only for values that can never contain a space.
    pub suggestions: Vec<String>,
}

impl TextInput {
    fn len(&self) -> usize {
        self.value.chars().count()
    }

    fn byte_at(&self, char_index: usize) -> usize {
        self.value
            .char_indices()
            .nth(char_index)
            .map(|(b, _)| b)
            .unwrap_or(self.value.len())
    }

    /// Sets the value, the cursor at its end.
    pub fn set(&mut self, value: &str) {
        self.value = value.to_string();
        self.cursor = self.len();
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Applies an editing key; true when the value changed. Keys it does not use return
    /// `None` so the form can use them (Tab, Enter, Esc, Up, Down).
    fn key(&mut self, key: KeyEvent) -> Option<bool> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Left => {
                self.cursor = self.cursor.saturating_sub(1);
                Some(false)
            }
            KeyCode::Right => {
                self.cursor = (self.cursor + 1).min(self.len());
                Some(false)
            }
            KeyCode::Home => {
                self.cursor = 0;
                Some(false)
            }
            KeyCode::End => {
                self.cursor = self.len();
                Some(false)
            }
            KeyCode::Backspace => {
                if self.cursor == 0 {
                    return Some(false);
                }
                let b = self.byte_at(self.cursor - 1);
                self.value.remove(b);
                self.cursor -= 1;
                Some(true)
            }
            KeyCode::Delete => {
                if self.cursor >= self.len() {
                    return Some(false);
                }
                let b = self.byte_at(self.cursor);
                self.value.remove(b);
                Some(true)
            }
            // Readline's kill to the start of the line: retyping a prefilled value is common.
            KeyCode::Char('u') if ctrl => {
                let b = self.byte_at(self.cursor);
                let changed = b > 0;
                self.value.replace_range(..b, "");
                self.cursor = 0;
                Some(changed)
            }
            KeyCode::Char(' ') if !self.suggestions.is_empty() => {
                let next = match self.suggestions.iter().position(|s| *s == self.value) {
                    Some(i) => (i + 1) % self.suggestions.len(),
                    None => 0,
                };
                let v = self.suggestions[next].clone();
                self.set(&v);
                Some(true)
            }
            // Alt+letter is a shortcut in other programs (and Esc typed fast before a
            // letter arrives as one): never text.
            KeyCode::Char(c) if !ctrl && !alt && !c.is_control() => {
                let b = self.byte_at(self.cursor);
                self.value.insert(b, c);
                self.cursor += 1;
                Some(true)
            }
            _ => None,
        }
    }
}

/// A choice among options, cycled with Left/Right or Space; disabled options are skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub options: Vec<ChoiceOption>,
    pub selected: usize,
}

impl Choice {
    fn cycle(&mut self, delta: isize) -> bool {
        let n = self.options.len();
        if n == 0 {
            return false;
        }
        let mut i = self.selected.min(n - 1);
        for _ in 0..n {
            i = (i as isize + delta).rem_euclid(n as isize) as usize;
            if self.options[i].disabled.is_none() {
                let changed = i != self.selected;
                self.selected = i;
                return changed;
            }
        }
        false
    }

    pub fn value(&self) -> Option<&str> {
        self.options.get(self.selected).map(|o| o.value.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldKind {
    /// A read-only line (what the form applies to).
    Info(String),
    Text(TextInput),
    Choice(Choice),
    Check(bool),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The page's name for the field.
    pub id: &'static str,
    pub label: String,
    pub kind: FieldKind,
    /// Why the value cannot be sent; shown once the field was edited or a submit was tried.
    pub error: Option<String>,
    /// Allowed, but worth knowing before sending.
    pub warning: Option<String>,
    /// Help, shown dimmed under the field while it has the keyboard.
    pub note: Option<String>,
    /// Edited by the user since the form opened.
    pub touched: bool,
}

impl Field {
    fn new(id: &'static str, label: &str, kind: FieldKind) -> Field {
        Field {
            id,
            label: label.to_string(),
            kind,
            error: None,
            warning: None,
            note: None,
            touched: false,
        }
    }

    /// A read-only line.
    pub fn info(id: &'static str, label: &str, value: impl Into<String>) -> Field {
        Field::new(id, label, FieldKind::Info(value.into()))
    }

    /// A text input holding `value`, at most `max_len` characters.
    pub fn text(id: &'static str, label: &str, value: &str, max_len: usize) -> Field {
        let mut input = TextInput {
            max_len,
            ..TextInput::default()
        };
        input.set(value);
        Field::new(id, label, FieldKind::Text(input))
    }

    /// A choice; `selected` is the value chosen first (else the first enabled option).
    pub fn choice(
        id: &'static str,
        label: &str,
        options: Vec<ChoiceOption>,
        selected: &str,
    ) -> Field {
        let selected = options
            .iter()
            .position(|o| o.value == selected)
            .or_else(|| options.iter().position(|o| o.disabled.is_none()))
            .unwrap_or(0);
        Field::new(id, label, FieldKind::Choice(Choice { options, selected }))
    }

    pub fn check(id: &'static str, label: &str, checked: bool) -> Field {
        Field::new(id, label, FieldKind::Check(checked))
    }

    pub fn placeholder(mut self, text: &str) -> Field {
        if let FieldKind::Text(t) = &mut self.kind {
            t.placeholder = text.to_string();
        }
        self
    }

    pub fn suggestions(mut self, values: Vec<String>) -> Field {
        if let FieldKind::Text(t) = &mut self.kind {
            t.suggestions = values;
        }
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Field {
        self.note = Some(note.into());
        self
    }

    fn focusable(&self) -> bool {
        !matches!(self.kind, FieldKind::Info(_))
    }

    /// Why the value cannot be sent: the page's reason, else a text longer than the field
    /// takes. Every form checks the length here, so no page can forget it.
    pub fn fault(&self) -> Option<String> {
        if let Some(e) = &self.error {
            return Some(e.clone());
        }
        match &self.kind {
            FieldKind::Text(t) if t.len() > t.max_len => Some(format!(
                "{} characters is too long: at most {}",
                t.len(),
                t.max_len
            )),
            _ => None,
        }
    }
}

/// What a key did to the form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormEvent {
    /// Nothing the page needs to know (the focus moved, a key was swallowed).
    Handled,
    /// The value of this field changed: check the form again.
    Changed(&'static str),
    /// The user asked to send (Enter, or the submit button). The page checks the values and
    /// either sends the call ([`Form::set_pending`]) or refuses ([`Form::refuse`]).
    Submit,
    /// Esc or the cancel button: close the form.
    Cancel,
}

/// What the form says after a failed call.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FormError {
    headline: String,
    message: String,
}

/// Where the keyboard is: a field (by index) or a button.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Focus {
    Field(usize),
    Submit,
    Cancel,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Form {
    pub title: String,
    /// Text above the fields (what a confirmation asks).
    pub intro: Vec<String>,
    pub fields: Vec<Field>,
    submit_label: String,
    focus: Focus,
    /// A submit was tried: every field's error shows, edited or not.
    tried: bool,
    /// A call is on its way; the form waits for its answer.
    pending: bool,
    error: Option<FormError>,
}

/// The widest a popup gets: room for a label column, an input and a sentence.
const MAX_WIDTH: u16 = 76;

impl Form {
    pub fn new(title: impl Into<String>, submit_label: &str) -> Form {
        Form {
            title: title.into(),
            intro: Vec::new(),
            fields: Vec::new(),
            submit_label: submit_label.to_string(),
            focus: Focus::Submit,
            tried: false,
            pending: false,
            error: None,
        }
    }

    /// A yes/no question (no fields): `y` confirms, Esc or `n` cancels. The keyboard starts
    /// on Cancel, so that an Enter pressed out of habit changes nothing (Left, then Enter,
    /// confirms).
    pub fn confirm(title: impl Into<String>, question: Vec<String>, yes: &str) -> Form {
        let mut f = Form::new(title, yes);
        f.intro = question;
        f.focus = Focus::Cancel;
        f
    }

    pub fn field(mut self, field: Field) -> Form {
        self.fields.push(field);
        if self.focus == Focus::Submit {
            self.focus = self.first_focus();
        }
        self
    }

    pub fn intro(mut self, lines: Vec<String>) -> Form {
        self.intro = lines;
        self
    }

    fn first_focus(&self) -> Focus {
        self.fields
            .iter()
            .position(Field::focusable)
            .map(Focus::Field)
            .unwrap_or(Focus::Submit)
    }

    /// The order Tab walks: focusable fields, then the buttons.
    fn stops(&self) -> Vec<Focus> {
        let mut v: Vec<Focus> = self
            .fields
            .iter()
            .enumerate()
            .filter(|(_, f)| f.focusable())
            .map(|(i, _)| Focus::Field(i))
            .collect();
        v.push(Focus::Submit);
        v.push(Focus::Cancel);
        v
    }

    fn move_focus(&mut self, delta: isize) {
        let stops = self.stops();
        let i = stops.iter().position(|s| *s == self.focus).unwrap_or(0) as isize;
        let n = stops.len() as isize;
        self.focus = stops[(i + delta).rem_euclid(n) as usize];
    }

    /// Puts the keyboard on the field `id`.
    pub fn focus_field(&mut self, id: &str) {
        if let Some(i) = self.index(id) {
            if self.fields[i].focusable() {
                self.focus = Focus::Field(i);
            }
        }
    }

    /// The id of the field with the keyboard, if a field has it.
    pub fn focused(&self) -> Option<&'static str> {
        match self.focus {
            Focus::Field(i) => self.fields.get(i).map(|f| f.id),
            _ => None,
        }
    }

    fn index(&self, id: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.id == id)
    }

    pub fn get(&self, id: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.id == id)
    }

    pub fn get_mut(&mut self, id: &str) -> Option<&mut Field> {
        self.fields.iter_mut().find(|f| f.id == id)
    }

    /// A text field's value, trimmed ("" for another kind of field).
    pub fn text(&self, id: &str) -> &str {
        match self.get(id).map(|f| &f.kind) {
            Some(FieldKind::Text(t)) => t.value.trim(),
            _ => "",
        }
    }

    /// Replaces a text field's value (a default that follows another field).
    pub fn set_text(&mut self, id: &str, value: &str) {
        if let Some(FieldKind::Text(t)) = self.get_mut(id).map(|f| &mut f.kind) {
            t.set(value);
        }
    }

    /// The chosen option's value.
    pub fn choice(&self, id: &str) -> Option<&str> {
        match self.get(id).map(|f| &f.kind) {
            Some(FieldKind::Choice(c)) => c.value(),
            _ => None,
        }
    }

    pub fn checked(&self, id: &str) -> bool {
        matches!(self.get(id).map(|f| &f.kind), Some(FieldKind::Check(true)))
    }

    pub fn touched(&self, id: &str) -> bool {
        self.get(id).is_some_and(|f| f.touched)
    }

    pub fn set_error(&mut self, id: &str, error: Option<String>) {
        if let Some(f) = self.get_mut(id) {
            f.error = error;
        }
    }

    pub fn set_warning(&mut self, id: &str, warning: Option<String>) {
        if let Some(f) = self.get_mut(id) {
            f.warning = warning;
        }
    }

    pub fn set_note(&mut self, id: &str, note: Option<String>) {
        if let Some(f) = self.get_mut(id) {
            f.note = note;
        }
    }

    /// True while some field has an error: the form is not sent.
    pub fn has_errors(&self) -> bool {
        self.fields.iter().any(|f| f.fault().is_some())
    }

    /// A submit was refused: every error shows, and the keyboard goes to the first.
    pub fn refuse(&mut self) {
        self.tried = true;
        if let Some(i) = self.fields.iter().position(|f| f.fault().is_some()) {
            if self.fields[i].focusable() {
                self.focus = Focus::Field(i);
            }
        }
    }

    /// The call was sent: wait for the answer (and forget the last one's error).
    pub fn set_pending(&mut self) {
        self.pending = true;
        self.error = None;
    }

    pub fn is_pending(&self) -> bool {
        self.pending
    }

    /// The call failed: say why, keep every value, and let the user edit and retry.
    pub fn fail(&mut self, what: &str, e: &CallError) {
        self.pending = false;
        let mut message = e.message.clone();
        let headline = match (e.kind, e.action()) {
            (ErrorKind::NotAuthorized | ErrorKind::InteractiveAuthorizationRequired, Some(a)) => {
                // The sentence starts by naming the action again; the headline has it.
                let prefix = format!("Not authorized to perform {a}: ");
                if let Some(rest) = message.strip_prefix(&prefix) {
                    message = rest.to_string();
                }
                format!("Not authorized to {what}: polkit action {a}")
            }
            (ErrorKind::NotAuthorized | ErrorKind::InteractiveAuthorizationRequired, None) => {
                format!("Not authorized to {what}")
            }
            (ErrorKind::Bus, _) => format!("Cannot {what}: the bus failed"),
            _ => format!("Cannot {what}"),
        };
        self.error = Some(FormError { headline, message });
    }

    /// The error shown after a failed call, as one sentence (tests).
    pub fn error_text(&self) -> Option<String> {
        self.error
            .as_ref()
            .map(|e| format!("{}: {}", e.headline, e.message))
    }

    /// True while a text field has the keyboard (letters are typed, not keys).
    pub fn typing(&self) -> bool {
        matches!(self.focus, Focus::Field(i)
            if matches!(self.fields.get(i).map(|f| &f.kind), Some(FieldKind::Text(_))))
    }

    /// Handles a key. Every key is the form's while it is open, so the page returns
    /// `Handled` for all of them (a stray digit must not switch pages under an open form).
    pub fn handle_key(&mut self, key: KeyEvent) -> FormEvent {
        if key.code == KeyCode::Esc {
            return FormEvent::Cancel;
        }
        if self.pending {
            // One call at a time: edits wait for the answer.
            return FormEvent::Handled;
        }
        // A question without fields answers to y and n as well.
        if self.stops().len() == 2 {
            match key.code {
                KeyCode::Char('y') | KeyCode::Char('Y') => return FormEvent::Submit,
                KeyCode::Char('n') | KeyCode::Char('N') => return FormEvent::Cancel,
                _ => {}
            }
        }
        match key.code {
            KeyCode::Tab | KeyCode::Down => {
                self.move_focus(1);
                return FormEvent::Handled;
            }
            KeyCode::BackTab | KeyCode::Up => {
                self.move_focus(-1);
                return FormEvent::Handled;
            }
            KeyCode::Enter => {
                return match self.focus {
                    Focus::Cancel => FormEvent::Cancel,
                    _ => FormEvent::Submit,
                };
            }
            _ => {}
        }
        let i = match self.focus {
            Focus::Field(i) => i,
            Focus::Submit | Focus::Cancel => {
                if matches!(key.code, KeyCode::Left | KeyCode::Right) {
                    self.focus = if self.focus == Focus::Submit {
                        Focus::Cancel
                    } else {
                        Focus::Submit
                    };
                } else if key.code == KeyCode::Char(' ') {
                    return match self.focus {
                        Focus::Cancel => FormEvent::Cancel,
                        _ => FormEvent::Submit,
                    };
                }
                return FormEvent::Handled;
            }
        };
        let Some(field) = self.fields.get_mut(i) else {
            return FormEvent::Handled;
        };
        let changed = match &mut field.kind {
            FieldKind::Info(_) => false,
            FieldKind::Text(t) => t.key(key).unwrap_or(false),
            FieldKind::Choice(c) => match key.code {
                KeyCode::Left => c.cycle(-1),
                KeyCode::Right | KeyCode::Char(' ') => c.cycle(1),
                _ => false,
            },
            FieldKind::Check(b) => match key.code {
                KeyCode::Char(' ') => {
                    *b = !*b;
                    true
                }
                _ => false,
            },
        };
        if changed {
            field.touched = true;
            // The old answer was about the old values.
            self.error = None;
            FormEvent::Changed(field.id)
        } else {
            FormEvent::Handled
        }
    }

    /// The popup's rectangle within `area` for `lines` lines of content.
    fn popup(area: Rect, lines: usize) -> Rect {
        let width = area.width.min(MAX_WIDTH);
        let height = (lines as u16).saturating_add(2).min(area.height);
        Rect {
            x: area.x + (area.width - width) / 2,
            y: area.y + (area.height - height) / 2,
            width,
            height,
        }
    }

    /// Draws the form centered in `area`.
    pub fn render(&self, frame: &mut Frame, area: Rect, theme: Theme) {
        if area.width < 3 || area.height < 3 {
            return;
        }
        // Borders and a column of padding on each side.
        let inner_width = area.width.min(MAX_WIDTH).saturating_sub(4) as usize;
        let (lines, focus_line, cursor) = self.lines(inner_width, theme);
        // Nothing drawn past the box's right side: a line that would be wider ends in the
        // cut marker inside it.
        let lines = crate::widgets::fit_lines(lines, inner_width);
        let popup = Form::popup(area, lines.len());
        let inner_height = popup.height.saturating_sub(2) as usize;
        // A form taller than the screen scrolls: the field with the keyboard stays in view
        // and, after a failed call, as much of the answer and the buttons below it as fits.
        let total = lines.len();
        let scroll = if self.error.is_some() || self.pending {
            total.saturating_sub(inner_height).min(focus_line)
        } else {
            (focus_line + 1).saturating_sub(inner_height)
        };
        frame.render_widget(Clear, popup);
        let block = Block::default()
            .borders(Borders::ALL)
            .padding(Padding::horizontal(1))
            .title(Span::styled(format!(" {} ", self.title), theme.title()));
        frame.render_widget(
            Paragraph::new(lines)
                .block(block)
                .scroll((scroll as u16, 0)),
            popup,
        );
        if let Some((line, col)) = cursor {
            let y = line as isize - scroll as isize;
            if y >= 0 && (y as usize) < inner_height && col < inner_width {
                frame.set_cursor_position(Position {
                    x: popup.x + 2 + col as u16,
                    y: popup.y + 1 + y as u16,
                });
            }
        }
    }

    /// The content: lines, the line of the keyboard's focus, and the text cursor (line,
    /// column) when a text field has it.
    fn lines(&self, width: usize, t: Theme) -> (Vec<Line<'static>>, usize, Option<(usize, usize)>) {
        let mut out: Vec<Line<'static>> = Vec::new();
        for para in &self.intro {
            for l in wrap(para, width) {
                out.push(Line::raw(l));
            }
        }
        if !self.intro.is_empty() && !self.fields.is_empty() {
            out.push(Line::raw(""));
        }
        let (field_focus, cursor) = self.field_lines(&mut out, width, t);
        out.push(Line::raw(""));
        self.status_lines(&mut out, width, t);
        let focus_line = if matches!(self.focus, Focus::Submit | Focus::Cancel) {
            out.len()
        } else {
            field_focus.unwrap_or(0)
        };
        out.push(self.buttons(width, t));
        (out, focus_line, cursor)
    }

    /// Every field's line and the messages under it; the line of the focused field and the
    /// text cursor, if a field has them.
    fn field_lines(
        &self,
        out: &mut Vec<Line<'static>>,
        width: usize,
        t: Theme,
    ) -> (Option<usize>, Option<(usize, usize)>) {
        let mut focus_line = None;
        let mut cursor = None;
        let cols = FieldColumns::new(&self.fields, width);
        for (i, f) in self.fields.iter().enumerate() {
            let focused = self.focus == Focus::Field(i);
            if focused {
                focus_line = Some(out.len());
            }
            let mut spans = vec![
                Span::styled(if focused { "> " } else { "  " }, t.key()),
                Span::styled(
                    format!(
                        "{:<w$} ",
                        truncate(&f.label, cols.label_w),
                        w = cols.label_w
                    ),
                    if f.focusable() { t.normal() } else { t.dim() },
                ),
            ];
            let avail = width.saturating_sub(cols.value_col);
            let (value, cur) = value_spans(&f.kind, focused, avail, t);
            spans.extend(value);
            if let Some(cur) = cur {
                cursor = Some((out.len(), cols.value_col + 1 + cur));
            }
            out.push(Line::from(spans));
            self.field_messages(out, f, focused, &cols, t);
        }
        (focus_line, cursor)
    }

    /// What is said under a field: options it cannot take, the suggestions and the note of
    /// the focused field, its fault and its warning.
    fn field_messages(
        &self,
        out: &mut Vec<Line<'static>>,
        f: &Field,
        focused: bool,
        cols: &FieldColumns,
        t: Theme,
    ) {
        if let FieldKind::Choice(c) = &f.kind {
            for o in &c.options {
                if let Some(reason) = &o.disabled {
                    cols.messages(
                        out,
                        &format!("{}: unavailable ({reason})", o.label),
                        "",
                        t.dim(),
                    );
                }
            }
        }
        if let FieldKind::Text(input) = &f.kind {
            if focused && !input.suggestions.is_empty() {
                cols.messages(
                    out,
                    &format!("Space: {}", input.suggestions.join(", ")),
                    "",
                    t.dim(),
                );
            }
        }
        // Help follows the keyboard: only the focused field's, so forms fit 80x24.
        if let Some(n) = f.note.as_ref().filter(|_| focused) {
            cols.messages(out, n, "", t.dim());
        }
        if let Some(e) = f.fault() {
            if f.touched || self.tried {
                cols.messages(out, &e, "! ", t.bad());
            }
        }
        if let Some(w) = &f.warning {
            cols.messages(out, w, "Note: ", t.warn());
        }
    }

    /// Above the buttons: the failed call's answer, the wait for one, or why the form was
    /// refused.
    fn status_lines(&self, out: &mut Vec<Line<'static>>, width: usize, t: Theme) {
        if let Some(e) = &self.error {
            for l in wrap(&format!("! {}", e.headline), width) {
                out.push(Line::styled(l, t.bad()));
            }
            for l in wrap(&e.message, width) {
                out.push(Line::styled(l, t.warn()));
            }
            out.push(Line::raw(""));
        } else if self.pending {
            out.push(Line::styled("Waiting for rdma-managerd...", t.dim()));
            out.push(Line::raw(""));
        } else if self.tried && self.has_errors() {
            out.push(Line::styled(
                "! Correct the fields marked with ! first.",
                t.bad(),
            ));
            out.push(Line::raw(""));
        }
    }

    /// The submit and Cancel buttons, centred.
    fn buttons(&self, width: usize, t: Theme) -> Line<'static> {
        let button = |label: &str, focused: bool| -> Vec<Span<'static>> {
            vec![
                Span::styled(if focused { ">" } else { " " }, t.key()),
                Span::styled(
                    format!("[ {label} ]"),
                    if focused { t.selected() } else { t.normal() },
                ),
            ]
        };
        let mut spans = button(&self.submit_label, self.focus == Focus::Submit);
        spans.push(Span::raw("  "));
        spans.extend(button("Cancel", self.focus == Focus::Cancel));
        let used: usize = spans
            .iter()
            .map(|s| crate::widgets::columns(&s.content))
            .sum();
        let pad = width.saturating_sub(used) / 2;
        spans.insert(0, Span::raw(" ".repeat(pad)));
        Line::from(spans)
    }
}

/// Where a form's field lines put things: the labels' width, where values start, and the
/// messages under a value.
struct FieldColumns {
    label_w: usize,
    /// "> " + label + " ": where values start.
    value_col: usize,
    msg_width: usize,
    indent: String,
}

impl FieldColumns {
    fn new(fields: &[Field], width: usize) -> FieldColumns {
        let label_w = fields
            .iter()
            .map(|f| crate::widgets::columns(&f.label))
            .max()
            .unwrap_or(0)
            .min(width / 3);
        let value_col = 2 + label_w + 1;
        FieldColumns {
            label_w,
            value_col,
            msg_width: width.saturating_sub(value_col).max(1),
            indent: " ".repeat(value_col.min(width)),
        }
    }

    /// `text` after `prefix`, wrapped under the values.
    fn messages(&self, out: &mut Vec<Line<'static>>, text: &str, prefix: &str, style: Style) {
        for l in wrap(&format!("{prefix}{text}"), self.msg_width) {
            out.push(Line::from(vec![
                Span::raw(self.indent.clone()),
                Span::styled(l, style),
            ]));
        }
    }
}

/// A field's value `avail` columns wide, and the text cursor's column in it when a focused
/// text field has it.
fn value_spans(
    kind: &FieldKind,
    focused: bool,
    avail: usize,
    t: Theme,
) -> (Vec<Span<'static>>, Option<usize>) {
    match kind {
        FieldKind::Info(v) => (vec![Span::raw(truncate(v, avail))], None),
        FieldKind::Text(input) => {
            let (s, cur) = text_box(input, avail);
            let style = if focused { t.selected() } else { t.normal() };
            let spans = if input.value.is_empty() && !input.placeholder.is_empty() && !focused {
                // In parentheses, so that it is not taken for a value without colour.
                let hint = format!("({})", input.placeholder);
                let inner = (input.max_len + 1)
                    .max(crate::widgets::columns(&hint))
                    .min(avail.saturating_sub(2));
                let shown = truncate(&hint, inner);
                let pad = inner.saturating_sub(crate::widgets::columns(&shown));
                vec![
                    Span::raw("["),
                    Span::styled(format!("{shown}{}", " ".repeat(pad)), t.dim()),
                    Span::raw("]"),
                ]
            } else {
                vec![Span::raw("["), Span::styled(s, style), Span::raw("]")]
            };
            (spans, focused.then_some(cur))
        }
        FieldKind::Choice(c) => (choice_spans(c, focused, avail, t), None),
        FieldKind::Check(b) => {
            let s = if *b { "[x]" } else { "[ ]" };
            (
                vec![Span::styled(
                    s,
                    if focused { t.selected() } else { t.normal() },
                )],
                None,
            )
        }
    }
}

/// A text input drawn `width` columns wide with its brackets: the visible part of the value,
/// padded, and the column of the cursor within it. Counted in terminal columns (a wide
/// character such as `日` takes two), so that the box keeps its width whatever is typed.
fn text_box(input: &TextInput, width: usize) -> (String, usize) {
    use unicode_width::UnicodeWidthChar;
    let cols = |c: &char| c.width().unwrap_or(0);
    let chars: Vec<char> = input.value.chars().collect();
    let value_cols: usize = chars.iter().map(cols).sum();
    // As wide as the field takes, or as the text when it is longer (to show all of what will
    // be refused), within the room there is.
    let inner = width
        .saturating_sub(2)
        .clamp(1, input.max_len.max(value_cols) + 1);
    // Scroll so that the cursor (and the column it stands on) stays visible.
    let cursor = input.cursor().min(chars.len());
    let mut start = cursor;
    let mut used = 1;
    while start > 0 && used + cols(&chars[start - 1]) <= inner {
        start -= 1;
        used += cols(&chars[start]);
    }
    let mut shown = String::new();
    let mut shown_cols = 0;
    for c in &chars[start..] {
        if shown_cols + cols(c) > inner {
            break;
        }
        shown_cols += cols(c);
        shown.push(*c);
    }
    shown.push_str(&" ".repeat(inner - shown_cols));
    let cursor_col = chars[start..cursor].iter().map(cols).sum();
    (shown, cursor_col)
}

/// A choice: all options as radio buttons when they fit, else `< current >` and its position.
fn choice_spans(c: &Choice, focused: bool, width: usize, t: Theme) -> Vec<Span<'static>> {
    let sel = if focused { t.selected() } else { t.normal() };
    let inline: usize = c.options.iter().map(|o| o.label.chars().count() + 6).sum();
    if inline <= width {
        let mut spans = Vec::new();
        for (i, o) in c.options.iter().enumerate() {
            let chosen = i == c.selected;
            let mark = if chosen {
                "(*)"
            } else if o.disabled.is_some() {
                "(-)"
            } else {
                "( )"
            };
            let style = if chosen {
                sel
            } else if o.disabled.is_some() {
                t.dim()
            } else {
                t.normal()
            };
            spans.push(Span::styled(format!("{mark} {}", o.label), style));
            spans.push(Span::raw("  "));
        }
        spans.pop();
        spans
    } else {
        let label = c
            .options
            .get(c.selected)
            .map(|o| o.label.clone())
            .unwrap_or_default();
        let count = format!(" {}/{}", c.selected + 1, c.options.len());
        let room = width.saturating_sub(4 + count.len());
        vec![
            Span::styled(format!("< {} >", truncate(&label, room)), sel),
            Span::styled(count, t.dim()),
        ]
    }
}

/// The first `width` characters of `s`, with `…` marking a cut (the one style of every page:
/// [`crate::widgets::fit`]).
pub fn truncate(s: &str, width: usize) -> String {
    crate::widgets::fit(s, width)
}

/// Breaks `text` into lines of at most `width` columns at spaces (a longer word is split),
/// each of its own lines (`\n`) starting a new one.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    text.split('\n')
        .flat_map(|para| {
            let words: Vec<&str> = para.split_whitespace().collect();
            crate::widgets::wrap_text(&words.join(" "), width)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn type_str(f: &mut Form, s: &str) {
        for c in s.chars() {
            f.handle_key(key(KeyCode::Char(c)));
        }
    }

    fn sample() -> Form {
        Form::new("Test", "OK")
            .field(Field::info("what", "On", "ib0"))
            .field(Field::text("name", "Name", "ab", 5))
            .field(Field::choice(
                "mode",
                "Mode",
                vec![
                    ChoiceOption::plain("a"),
                    ChoiceOption::plain("b").disabled("no"),
                    ChoiceOption::plain("c"),
                ],
                "a",
            ))
            .field(Field::check("flag", "Flag", false))
    }

    /// Wide characters take two columns: the box keeps its width (its frame stays where it
    /// is) and the cursor stands after what was typed.
    #[test]
    fn wide_characters_keep_the_box_width() {
        let mut input = TextInput {
            max_len: 15,
            ..TextInput::default()
        };
        input.set("rxé_日本");
        let (shown, cur) = text_box(&input, 20);
        assert_eq!(crate::widgets::columns(&shown), 16, "{shown:?}");
        assert_eq!(cur, 8, "r x é _ and two wide characters");
        // Longer than the box: it scrolls to the cursor, still as wide.
        input.set(&"日".repeat(30));
        let (shown, cur) = text_box(&input, 20);
        assert_eq!(crate::widgets::columns(&shown), 18, "{shown:?}");
        assert!(cur <= 17);
        // Drawn in a form: every line within the box.
        let mut f = Form::new("T", "OK").field(Field::text("name", "Name", "rxé_日本", 15));
        f.handle_key(key(KeyCode::End));
        let backend = ratatui::backend::TestBackend::new(40, 10);
        let mut term = ratatui::Terminal::new(backend).expect("terminal");
        term.draw(|fr| f.render(fr, fr.area(), Theme::monochrome()))
            .expect("draw");
        let buf = term.backend().buffer().clone();
        let row_of = |text: &str| {
            (0..10u16).find(|y| {
                let r: String = (0..40).map(|x| buf[(x, *y)].symbol().to_string()).collect();
                r.contains(text)
            })
        };
        let last_col = |y: u16, sym: &str| (0..40u16).rev().find(|x| buf[(*x, y)].symbol() == sym);
        let top = row_of("┐").expect("the top border");
        let field = row_of("Name").expect("the field");
        assert_eq!(last_col(field, "│"), last_col(top, "┐"), "{buf:?}");
    }

    #[test]
    fn text_editing_keys() {
        let mut f = sample();
        assert_eq!(f.focused(), Some("name"));
        assert_eq!(
            f.handle_key(key(KeyCode::Char('c'))),
            FormEvent::Changed("name")
        );
        assert_eq!(f.text("name"), "abc");
        f.handle_key(key(KeyCode::Home));
        f.handle_key(key(KeyCode::Delete));
        assert_eq!(f.text("name"), "bc");
        f.handle_key(key(KeyCode::Right));
        f.handle_key(key(KeyCode::Char('x')));
        assert_eq!(f.text("name"), "bxc");
        f.handle_key(key(KeyCode::End));
        f.handle_key(key(KeyCode::Backspace));
        assert_eq!(f.text("name"), "bx");
        f.handle_key(key(KeyCode::Left));
        f.handle_key(key(KeyCode::Backspace));
        assert_eq!(f.text("name"), "x");
        // More than max_len characters are kept as typed and refused, never cut.
        type_str(&mut f, "123456789");
        assert_eq!(f.text("name"), "123456789x");
        assert!(f.touched("name"));
        assert_eq!(
            f.get("name").and_then(Field::fault).as_deref(),
            Some("10 characters is too long: at most 5")
        );
        assert!(f.has_errors());
        f.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        assert_eq!(f.text("name"), "x");
        assert!(!f.has_errors());
        // A value set by the page is not cut either.
        f.set_text("name", "abcdefgh");
        assert_eq!(f.text("name"), "abcdefgh");
        assert!(f.has_errors());
    }

    #[test]
    fn choices_skip_disabled_options_and_checkboxes_toggle() {
        let mut f = sample();
        f.handle_key(key(KeyCode::Tab));
        assert_eq!(f.focused(), Some("mode"));
        assert_eq!(
            f.handle_key(key(KeyCode::Right)),
            FormEvent::Changed("mode")
        );
        assert_eq!(f.choice("mode"), Some("c"));
        f.handle_key(key(KeyCode::Left));
        assert_eq!(f.choice("mode"), Some("a"));
        f.handle_key(key(KeyCode::Left));
        assert_eq!(f.choice("mode"), Some("c"));
        f.handle_key(key(KeyCode::Down));
        assert_eq!(f.focused(), Some("flag"));
        f.handle_key(key(KeyCode::Char(' ')));
        assert!(f.checked("flag"));
    }

    #[test]
    fn focus_walks_fields_and_buttons_and_wraps() {
        let mut f = sample();
        for _ in 0..3 {
            f.handle_key(key(KeyCode::Tab));
        }
        assert_eq!(f.focused(), None);
        // On the submit button: Enter submits; on Cancel it cancels.
        assert_eq!(f.handle_key(key(KeyCode::Enter)), FormEvent::Submit);
        f.handle_key(key(KeyCode::Tab));
        assert_eq!(f.handle_key(key(KeyCode::Enter)), FormEvent::Cancel);
        f.handle_key(key(KeyCode::Tab));
        assert_eq!(f.focused(), Some("name"));
        f.handle_key(key(KeyCode::BackTab));
        assert_eq!(f.focused(), None);
        assert_eq!(f.handle_key(key(KeyCode::Esc)), FormEvent::Cancel);
    }

    #[test]
    fn errors_block_and_failures_keep_values() {
        let mut f = sample();
        f.set_error("name", Some("bad".into()));
        assert!(f.has_errors());
        f.handle_key(key(KeyCode::Tab));
        f.refuse();
        assert_eq!(f.focused(), Some("name"));
        f.set_error("name", None);
        f.set_pending();
        // While waiting, edits are held back.
        f.handle_key(key(KeyCode::Char('z')));
        assert_eq!(f.text("name"), "ab");
        f.fail(
            "do it",
            &CallError {
                kind: ErrorKind::NotAuthorized,
                message: "Not authorized to perform org.rdmamanager.rdmamanager1.manage-ipoib: no."
                    .into(),
            },
        );
        assert!(!f.is_pending());
        assert_eq!(f.text("name"), "ab");
        let e = f.error_text().unwrap_or_default();
        assert!(
            e.contains("polkit action org.rdmamanager.rdmamanager1.manage-ipoib"),
            "{e}"
        );
    }

    #[test]
    fn confirmations_answer_y_and_n() {
        let mut f = Form::confirm("Delete", vec!["Sure?".into()], "Delete");
        assert_eq!(f.handle_key(key(KeyCode::Char('y'))), FormEvent::Submit);
        assert_eq!(f.handle_key(key(KeyCode::Char('n'))), FormEvent::Cancel);
        // Enter alone takes the safe answer; the destructive one is a move away.
        assert_eq!(f.handle_key(key(KeyCode::Enter)), FormEvent::Cancel);
        f.handle_key(key(KeyCode::Left));
        assert_eq!(f.handle_key(key(KeyCode::Enter)), FormEvent::Submit);
    }

    #[test]
    fn suggestions_cycle_with_space() {
        let mut f = Form::new("T", "OK").field(
            Field::text("nd", "Netdev", "", 15).suggestions(vec!["eth0".into(), "eth1".into()]),
        );
        f.handle_key(key(KeyCode::Char(' ')));
        assert_eq!(f.text("nd"), "eth0");
        f.handle_key(key(KeyCode::Char(' ')));
        assert_eq!(f.text("nd"), "eth1");
        f.handle_key(key(KeyCode::Char(' ')));
        assert_eq!(f.text("nd"), "eth0");
        f.handle_key(key(KeyCode::Char('x')));
        assert_eq!(f.text("nd"), "eth0x");
    }

    #[test]
    fn wrapping() {
        assert_eq!(wrap("a bb ccc", 4), vec!["a bb", "ccc"]);
        assert_eq!(wrap("abcdefgh", 3), vec!["abc", "def", "gh"]);
        assert_eq!(wrap("", 3), vec![""]);
        assert_eq!(truncate("abcdef", 4), "abc…");
    }
}
