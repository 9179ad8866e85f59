//! Semantic styles. Every colour the UI uses comes from here.

use ratatui::style::{Color, Modifier, Style};

#[derive(Clone, Debug)]
pub struct Theme {
    pub text: Style,
    pub dim: Style,
    pub accent: Style,
    pub border: Style,
    pub border_focus: Style,
    pub title: Style,
    pub user: Style,
    pub assistant: Style,
    pub thinking: Style,
    pub tool: Style,
    pub tool_result: Style,
    pub error: Style,
    pub warn: Style,
    pub info: Style,
    pub ok: Style,
    pub waiting: Style,
    pub running: Style,
    pub selected: Style,
    pub diff_add: Style,
    pub diff_remove: Style,
    pub diff_hunk: Style,
    pub key: Style,
    pub choice: Style,
    pub choice_active: Style,
    pub footer: Style,
}

impl Theme {
    /// The default dark theme, ANSI colours only so it follows the terminal's palette.
    pub fn dark() -> Theme {
        let fg = |c| Style::default().fg(c);
        Theme {
            text: Style::default(),
            dim: Style::default().add_modifier(Modifier::DIM),
            accent: fg(Color::Cyan),
            border: fg(Color::DarkGray),
            border_focus: fg(Color::Cyan),
            title: Style::default().add_modifier(Modifier::BOLD),
            user: fg(Color::Cyan).add_modifier(Modifier::BOLD),
            assistant: Style::default(),
            thinking: Style::default().add_modifier(Modifier::DIM | Modifier::ITALIC),
            tool: fg(Color::Yellow).add_modifier(Modifier::BOLD),
            tool_result: Style::default().add_modifier(Modifier::DIM),
            error: fg(Color::Red),
            warn: fg(Color::Yellow),
            info: fg(Color::Blue),
            ok: fg(Color::Green),
            waiting: fg(Color::Magenta).add_modifier(Modifier::BOLD),
            running: fg(Color::Yellow),
            selected: Style::default().add_modifier(Modifier::REVERSED),
            diff_add: fg(Color::Green),
            diff_remove: fg(Color::Red),
            diff_hunk: fg(Color::Cyan).add_modifier(Modifier::DIM),
            key: fg(Color::Cyan).add_modifier(Modifier::BOLD),
            choice: Style::default(),
            choice_active: Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD),
            footer: Style::default().add_modifier(Modifier::DIM),
        }
    }

    /// `NO_COLOR`: keep emphasis (bold, reverse, dim), drop every colour.
    pub fn no_color() -> Theme {
        let mut t = Theme::dark();
        for s in [
            &mut t.text,
            &mut t.dim,
            &mut t.accent,
            &mut t.border,
            &mut t.border_focus,
            &mut t.title,
            &mut t.user,
            &mut t.assistant,
            &mut t.thinking,
            &mut t.tool,
            &mut t.tool_result,
            &mut t.error,
            &mut t.warn,
            &mut t.info,
            &mut t.ok,
            &mut t.waiting,
            &mut t.running,
            &mut t.selected,
            &mut t.diff_add,
            &mut t.diff_remove,
            &mut t.diff_hunk,
            &mut t.key,
            &mut t.choice,
            &mut t.choice_active,
            &mut t.footer,
        ] {
            s.fg = None;
            s.bg = None;
        }
        t
    }

    /// Pick the theme from the environment (`NO_COLOR` set and non-empty → no colours).
    pub fn from_env() -> Theme {
        match std::env::var_os("NO_COLOR") {
            Some(v) if !v.is_empty() => Theme::no_color(),
            _ => Theme::dark(),
        }
    }
}
