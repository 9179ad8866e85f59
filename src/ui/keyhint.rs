//! Key hints as the user has them: the help overlay's key column and the footer are written
//! with the default keys, and a `[keys]` override (`core::keymap`) rewrites each default key in
//! them to the keys that really do it, so no hint names a key that does something else.

use std::collections::HashMap;

use crate::core::keymap::{self, DEFAULTS};

/// `hint` with every remappable default key in it shown as the user's keys for it
/// (`y` → `Y/y`, `u` → `U` when another action took `u`). A token is a word between spaces,
/// `/`, `·` and `,`; only single characters and `Ctrl-X` chords that are some action's
/// default are rewritten. Without overrides the hint is returned as it is.
pub fn shown(keymap: &HashMap<char, char>, hint: &str) -> String {
    if keymap.is_empty() {
        return hint.to_string();
    }
    let mut out = String::with_capacity(hint.len() + 8);
    let mut word = String::new();
    for ch in hint.chars() {
        if matches!(ch, ' ' | '/' | '·' | ',') {
            out.push_str(&rewrite(keymap, &word));
            word.clear();
            out.push(ch);
        } else {
            word.push(ch);
        }
    }
    out.push_str(&rewrite(keymap, &word));
    out
}

/// The footer's hints: `key what · key what`, where only each segment's first word is a key
/// (so "q quit" is rewritten but the "a" of "a gate" never is).
pub fn footer(keymap: &HashMap<char, char>, hint: &str) -> String {
    if keymap.is_empty() {
        return hint.to_string();
    }
    hint.split(" · ")
        .map(|seg| match seg.split_once(' ') {
            Some((key, rest)) => format!("{} {rest}", rewrite(keymap, key)),
            None => seg.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

fn rewrite(keymap: &HashMap<char, char>, word: &str) -> String {
    let default = match word.strip_prefix("Ctrl-") {
        Some(l) if l.chars().count() == 1 => l.chars().next().and_then(keymap::ctrl_char),
        Some(_) => None,
        None => {
            let mut cs = word.chars();
            match (cs.next(), cs.next()) {
                (Some(c), None) => Some(c),
                _ => None,
            }
        }
    };
    match default {
        Some(d) if DEFAULTS.iter().any(|(_, k)| *k == d) => {
            let keys = keymap::keys_for(keymap, d);
            if keys == [d] {
                word.to_string()
            } else {
                keys.iter()
                    .map(|k| keymap::label(*k))
                    .collect::<Vec<_>>()
                    .join("/")
            }
        }
        _ => word.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn map(pairs: &[(&str, &str)]) -> HashMap<char, char> {
        keymap::build(
            &pairs
                .iter()
                .map(|(a, k)| (a.to_string(), k.to_string()))
                .collect::<BTreeMap<_, _>>(),
        )
        .unwrap()
    }

    #[test]
    fn hints_follow_the_users_keys() {
        let none = HashMap::new();
        assert_eq!(shown(&none, "y / b"), "y / b");
        let m = map(&[
            ("allow_once", "Y"),
            ("focus_subtree", "u"),
            ("queue", "U"),
            ("new_session", "ctrl-t"),
        ]);
        assert_eq!(shown(&m, "y / b"), "Y/y / b");
        assert_eq!(shown(&m, "f · F"), "u/f · F");
        assert_eq!(shown(&m, "u"), "U", "u no longer opens the queue");
        assert_eq!(shown(&m, "Ctrl-N"), "Ctrl-T/Ctrl-N");
        assert_eq!(shown(&m, "PgUp PgDn"), "PgUp PgDn");
        assert_eq!(
            footer(&m, "u queued messages · ? help · Ctrl-N new · q quit"),
            "U queued messages · ? help · Ctrl-T/Ctrl-N new · q quit"
        );
        // Only the key of each footer segment, never a word of its text.
        assert_eq!(footer(&m, "g a y z"), "g a y z");
    }
}
