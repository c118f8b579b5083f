//! Colours and emphasis. Colours are the 16 ANSI ones (they look right in 16- and 256-colour
//! terminals alike); with `NO_COLOR` set (https://no-color.org) every style keeps only its
//! bold/reverse/underline, so states stay readable by their words.

use ratatui::style::{Color, Modifier, Style};

/// The styles every view draws with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
}

impl Theme {
    /// From the environment: no colour when `NO_COLOR` is set to anything non-empty.
    pub fn from_env() -> Theme {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Theme { color: !no_color }
    }

    pub fn colored() -> Theme {
        Theme { color: true }
    }

    pub fn monochrome() -> Theme {
        Theme { color: false }
    }

    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }

    pub fn normal(&self) -> Style {
        Style::default()
    }
    /// Labels, units, hints.
    pub fn dim(&self) -> Style {
        if self.color {
            Style::default().fg(Color::DarkGray)
        } else {
            Style::default()
        }
    }
    pub fn title(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
    /// The selected row or field.
    pub fn selected(&self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }
    /// A key in the key hints.
    pub fn key(&self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }
    pub fn good(&self) -> Style {
        self.fg(Color::Green)
    }
    pub fn warn(&self) -> Style {
        self.fg(Color::Yellow)
    }
    pub fn bad(&self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }
    pub fn tx(&self) -> Style {
        self.fg(Color::Magenta)
    }
    pub fn rx(&self) -> Style {
        self.fg(Color::Cyan)
    }
    /// A port state in its colour: ACTIVE green, INIT/ARMED yellow, DOWN red.
    pub fn port_state(&self, state: &str) -> Style {
        match state {
            "ACTIVE" => self.good(),
            "INIT" | "ARMED" | "ACTIVE_DEFER" => self.warn(),
            "" => self.dim(),
            _ => self.bad(),
        }
    }
}
