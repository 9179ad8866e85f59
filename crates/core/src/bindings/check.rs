//! `[keys]` overrides checked against the binding tables: an override makes its key do the
//! action in every context where overrides apply (the translation is global), so a key some
//! context already uses for something else would silently stop doing that there.

use std::collections::BTreeMap;

use super::{CONTEXTS, Key, default_key};
use crate::keymap;

/// The characters a fixed key takes: one-character words, `Space`, `1-9`, `Ctrl-X`.
pub(super) fn lit_chars(s: &str) -> Vec<char> {
    let mut out = Vec::new();
    for word in s.split_whitespace() {
        let mut cs = word.chars();
        match (cs.next(), cs.next()) {
            (Some(c), None) => out.push(c),
            _ if word == "Space" => out.push(' '),
            _ if word == "1-9" => out.extend('1'..='9'),
            _ => {
                if let Some(c) = word
                    .strip_prefix("Ctrl-")
                    .filter(|l| l.chars().count() == 1)
                    .and_then(|l| l.chars().next())
                    .and_then(keymap::ctrl_char)
                {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// One message per override and what it collides with (naming both and the contexts where
/// they meet), in the order of the overrides. Overrides that do not parse are left to
/// `keymap::parse`.
pub fn collisions(overrides: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let parsed: BTreeMap<&str, (char, char)> = overrides
        .iter()
        .filter_map(|(a, k)| Some((a.as_str(), keymap::parse(a, k).ok()?)))
        .collect();
    let mut out = Vec::new();
    for (action, key) in overrides {
        let Some(&(k, default)) = parsed.get(action.as_str()) else {
            continue;
        };
        if k == default {
            continue;
        }
        // What the key already does, and where: (whose, its description) → contexts. An
        // action is one entry wherever it is bound; a fixed key one per binding.
        let mut hits: Vec<((String, &str), Vec<&str>)> = Vec::new();
        for ctx in CONTEXTS.iter().filter(|c| c.remapped) {
            for b in ctx.bindings {
                let whose = b.keys.iter().find_map(|key| match key {
                    Key::Act(other) => {
                        let d = default_key(other);
                        // Sharing a default (`n`: deny, search_next) is one key doing one
                        // thing per context; a moved action no longer holds its default.
                        let holds = match parsed.get(other) {
                            Some(&(ok, _)) => ok == k,
                            None => d == k,
                        };
                        (d != default && holds).then(|| other.to_string())
                    }
                    Key::Lit(s) => lit_chars(s).contains(&k).then(|| b.id.to_string()),
                });
                let Some(whose) = whose else { continue };
                let action = keymap::DEFAULTS.iter().any(|(a, _)| *a == whose);
                match hits
                    .iter_mut()
                    .find(|((w, d), _)| *w == whose && (action || *d == b.desc))
                {
                    Some((_, ctxs)) => ctxs.push(ctx.name),
                    None => hits.push(((whose, b.desc), vec![ctx.name])),
                }
            }
        }
        if hits.is_empty() {
            continue;
        }
        let free = keymap::suggest_free(overrides);
        // An action that kept its default can be given another key; a fixed key cannot move.
        let movable: Vec<&str> = hits
            .iter()
            .map(|((w, _), _)| w.as_str())
            .filter(|w| keymap::DEFAULTS.iter().any(|(a, _)| a == w) && !parsed.contains_key(w))
            .collect();
        let fix = match movable.first() {
            Some(w) => {
                format!("give {w} a key of its own too (e.g. {w} = \"{free}\") or pick a free key")
            }
            None => format!("pick a free key (e.g. \"{free}\")"),
        };
        let what: Vec<String> = hits
            .iter()
            .map(|((w, desc), ctxs)| format!("{w} ({desc}) in {}", ctxs.join(", ")))
            .collect();
        out.push((
            action.clone(),
            format!(
                "[keys] {action} = {key:?} collides with {}: that key would stop doing it there; {fix}",
                what.join("; ")
            ),
        ));
    }
    out
}
