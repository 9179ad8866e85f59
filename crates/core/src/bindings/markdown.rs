//! The README's keys section, rendered from the binding tables with the default keys. A test
//! (`bindings::tests::readme_keys_section_is_the_table`) compares it with README.md.

use std::collections::HashMap;

use super::{CONTEXTS, Key, key_text};
use crate::keymap;

/// The markers around the generated section in README.md.
#[cfg(test)]
pub const BEGIN: &str = "<!-- keys:begin (generated from crates/core/src/bindings; SB_WRITE_README=1 cargo test -p switchboard-core readme_keys rewrites it) -->";
#[cfg(test)]
pub const END: &str = "<!-- keys:end -->";

/// The markdown between the markers: one table row per binding, then the remappable actions.
pub fn readme_section() -> String {
    let defaults = HashMap::new();
    let mut out = String::from("| where | key | action |\n|---|---|---|\n");
    for ctx in CONTEXTS {
        for (i, b) in ctx.bindings.iter().enumerate() {
            let keys: Vec<String> = b
                .keys
                .iter()
                .map(|k| format!("`{}`", key_text(&defaults, k)))
                .collect();
            let remap: Vec<&str> = b
                .keys
                .iter()
                .filter_map(|k| match k {
                    Key::Act(a) if ctx.remapped => Some(*a),
                    _ => None,
                })
                .collect();
            let remap = if remap.is_empty() {
                String::new()
            } else {
                format!(" (`{}`)", remap.join("`, `"))
            };
            out.push_str(&format!(
                "| {} | {} | {}{remap} |\n",
                if i == 0 { ctx.name } else { "" },
                keys.join(" / "),
                cell(b.desc),
            ));
        }
    }
    out.push_str(
        "\nIn parentheses: the action's name for `[keys]` in config.toml. Every remappable action and its default key: ",
    );
    let actions: Vec<String> = keymap::DEFAULTS
        .iter()
        .map(|(a, k)| format!("`{a}` (`{}`)", keymap::label(*k)))
        .collect();
    out.push_str(&actions.join(", "));
    out.push_str(".\n");
    out
}

/// A table cell: a `|` would end it.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// README `text` with the section between the markers replaced by `section`; `None` when the
/// markers are missing.
#[cfg(test)]
pub fn splice(text: &str, section: &str) -> Option<String> {
    let start = text.find(BEGIN)? + BEGIN.len();
    let end = start + text[start..].find(END)?;
    Some(format!("{}\n{section}{}", &text[..start], &text[end..]))
}

/// The section now between the markers.
#[cfg(test)]
pub fn current(text: &str) -> Option<&str> {
    let start = text.find(BEGIN)? + BEGIN.len();
    let end = start + text[start..].find(END)?;
    Some(
        text[start..end]
            .strip_prefix('\n')
            .unwrap_or(&text[start..end]),
    )
}
