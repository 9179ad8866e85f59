//! Semantic styles. Every colour the UI uses comes from here, and every theme is a TOML file:
//! `themes/*.toml` are embedded, user themes live in `<config dir>/themes/`, and a partial
//! theme only overrides the roles it names (on top of the dark theme).

use std::collections::BTreeMap;
use std::path::Path;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

/// The themes shipped in the binary: (name, TOML).
pub const BUILTIN: &[(&str, &str)] = &[
    ("dark", include_str!("../../../../themes/dark.toml")),
    ("light", include_str!("../../../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../../../themes/high-contrast.toml"),
    ),
];

macro_rules! theme_roles {
    ($($role:ident),* $(,)?) => {
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct Theme {
            $(pub $role: Style,)*
        }

        impl Theme {
            /// Every role name, as written in theme files.
            pub const ROLES: &'static [&'static str] = &[$(stringify!($role)),*];

            fn role_mut(&mut self, name: &str) -> Option<&mut Style> {
                match name {
                    $(stringify!($role) => Some(&mut self.$role),)*
                    _ => None,
                }
            }
        }
    };
}

theme_roles!(
    text,
    dim,
    accent,
    border,
    border_focus,
    title,
    user,
    assistant,
    thinking,
    tool,
    tool_result,
    error,
    warn,
    info,
    ok,
    waiting,
    running,
    selected,
    diff_add,
    diff_remove,
    diff_hunk,
    diff_add_word,
    diff_remove_word,
    key,
    choice,
    choice_active,
    footer,
    search_match,
);

/// One role in a theme file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleSpec {
    fg: Option<String>,
    bg: Option<String>,
    bold: Option<bool>,
    dim: Option<bool>,
    italic: Option<bool>,
    reversed: Option<bool>,
    underlined: Option<bool>,
}

fn parse_color(s: &str) -> Result<Color, String> {
    let named = match s.to_ascii_lowercase().replace(['_', ' '], "-").as_str() {
        "reset" | "default" => Color::Reset,
        "black" => Color::Black,
        "red" => Color::Red,
        "green" => Color::Green,
        "yellow" => Color::Yellow,
        "blue" => Color::Blue,
        "magenta" => Color::Magenta,
        "cyan" => Color::Cyan,
        "gray" | "grey" => Color::Gray,
        "dark-gray" | "dark-grey" => Color::DarkGray,
        "light-red" => Color::LightRed,
        "light-green" => Color::LightGreen,
        "light-yellow" => Color::LightYellow,
        "light-blue" => Color::LightBlue,
        "light-magenta" => Color::LightMagenta,
        "light-cyan" => Color::LightCyan,
        "white" => Color::White,
        other => {
            if let Some(hex) = other.strip_prefix('#') {
                if hex.len() == 6 {
                    let n =
                        u32::from_str_radix(hex, 16).map_err(|_| format!("bad colour {s:?}"))?;
                    return Ok(Color::Rgb((n >> 16) as u8, (n >> 8) as u8, n as u8));
                }
                if let Ok(i) = hex.parse::<u8>() {
                    return Ok(Color::Indexed(i));
                }
            }
            return Err(format!(
                "unknown colour {s:?} (a name like \"cyan\" or \"dark-gray\", \"#23\" or \"#rrggbb\")"
            ));
        }
    };
    Ok(named)
}

impl Theme {
    /// Apply a theme file on top of `self`.
    pub fn overlay_toml(mut self, text: &str) -> Result<Theme, String> {
        let roles: BTreeMap<String, RoleSpec> = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| {
                    format!(
                        "line {}: ",
                        text[..s.start.min(text.len())].matches('\n').count() + 1
                    )
                })
                .unwrap_or_default();
            // serde names our internal type; say what a role is instead.
            let msg = e.message().replace(
                "struct RoleSpec",
                "a role table (fg, bg, bold, dim, italic, reversed, underlined)",
            );
            format!("{line}{msg}")
        })?;
        for (name, spec) in roles {
            let style = self.role_mut(&name).ok_or_else(|| {
                format!("unknown role [{name}] (known: {})", Theme::ROLES.join(", "))
            })?;
            if let Some(c) = &spec.fg {
                style.fg = Some(parse_color(c).map_err(|e| format!("[{name}] fg: {e}"))?);
            }
            if let Some(c) = &spec.bg {
                style.bg = Some(parse_color(c).map_err(|e| format!("[{name}] bg: {e}"))?);
            }
            for (flag, m) in [
                (spec.bold, Modifier::BOLD),
                (spec.dim, Modifier::DIM),
                (spec.italic, Modifier::ITALIC),
                (spec.reversed, Modifier::REVERSED),
                (spec.underlined, Modifier::UNDERLINED),
            ] {
                match flag {
                    Some(true) => {
                        style.add_modifier.insert(m);
                        style.sub_modifier.remove(m);
                    }
                    Some(false) => {
                        style.add_modifier.remove(m);
                    }
                    None => {}
                }
            }
        }
        Ok(self)
    }

    /// The default dark theme (the embedded `themes/dark.toml`).
    pub fn dark() -> Theme {
        Theme::default()
            .overlay_toml(BUILTIN[0].1)
            .expect("the embedded dark theme parses")
    }

    /// A theme by name (built-in or `<themes dir>/NAME.toml`) or by file path; partial themes
    /// override the dark theme.
    pub fn load(name_or_path: &str, user_dir: &Path) -> Result<Theme, String> {
        if let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
            return Theme::dark().overlay_toml(text);
        }
        let candidates = [
            std::path::PathBuf::from(name_or_path),
            user_dir.join(format!("{name_or_path}.toml")),
        ];
        for path in candidates {
            if path.is_file() {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                return Theme::dark()
                    .overlay_toml(&text)
                    .map_err(|e| format!("{}: {e}", path.display()));
            }
        }
        let builtin: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
        Err(format!(
            "no theme {name_or_path:?} (built in: {}; user themes in {})",
            builtin.join(", "),
            user_dir.display()
        ))
    }

    /// `NO_COLOR`: keep emphasis (bold, reverse, dim), drop every colour.
    pub fn without_color(mut self) -> Theme {
        for role in Theme::ROLES {
            if let Some(s) = self.role_mut(role) {
                s.fg = None;
                s.bg = None;
            }
        }
        self
    }

    pub fn no_color() -> Theme {
        Theme::dark().without_color()
    }

    /// True when `NO_COLOR` is set and non-empty.
    pub fn no_color_requested() -> bool {
        std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
    }

    /// The dark theme, or no colours under `NO_COLOR`.
    pub fn from_env() -> Theme {
        if Theme::no_color_requested() {
            Theme::no_color()
        } else {
            Theme::dark()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_themes_parse_and_differ() {
        let dark = Theme::dark();
        for (name, _) in BUILTIN {
            let t = Theme::load(name, Path::new("/nonexistent")).unwrap();
            if *name != "dark" {
                assert_ne!(t, dark, "{name} changes something");
            }
        }
        assert_eq!(dark.accent.fg, Some(Color::Cyan));
        assert!(dark.selected.add_modifier.contains(Modifier::REVERSED));
    }

    #[test]
    fn partial_theme_overrides_only_its_roles() {
        let t = Theme::dark()
            .overlay_toml("[accent]\nfg = \"#ff8800\"\n")
            .unwrap();
        assert_eq!(t.accent.fg, Some(Color::Rgb(0xff, 0x88, 0)));
        assert_eq!(t.error, Theme::dark().error);
        let t = Theme::dark().overlay_toml("[dim]\ndim = false\n").unwrap();
        assert!(!t.dim.add_modifier.contains(Modifier::DIM));
    }

    #[test]
    fn errors_name_the_problem() {
        let e = Theme::dark()
            .overlay_toml("[nope]\nfg = \"red\"\n")
            .unwrap_err();
        assert!(e.contains("unknown role [nope]"), "{e}");
        let e = Theme::dark()
            .overlay_toml("[accent]\nfg = \"chartreuse\"\n")
            .unwrap_err();
        assert!(e.contains("unknown colour"), "{e}");
        let e = Theme::dark()
            .overlay_toml("[accent]\nfgg = \"red\"\n")
            .unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        assert!(Theme::load("missing", Path::new("/nonexistent")).is_err());
    }

    #[test]
    fn no_color_keeps_emphasis() {
        let t = Theme::no_color();
        assert_eq!(t.accent.fg, None);
        assert!(t.title.add_modifier.contains(Modifier::BOLD));
    }
}
