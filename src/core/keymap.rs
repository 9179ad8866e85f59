//! Key overrides from config.toml `[keys]`: `action = "K"` makes key K do what the action's
//! default key does (the default keeps working). Only single-character command keys are
//! remappable; text typed into the prompt or an editor is never translated.

use std::collections::{BTreeMap, HashMap};

/// Remappable actions and their default keys.
pub const DEFAULTS: &[(&str, char)] = &[
    ("allow_once", 'y'),
    ("allow_always", 'a'),
    ("save_rule", 'A'),
    ("deny", 'n'),
    ("deny_interrupt", 'N'),
    ("reject_always", 'R'),
    ("edit_input", 'e'),
    ("raw_reply", 'r'),
    ("block", 'b'),
    ("decline", 'd'),
    ("next_gate", ']'),
    ("prev_gate", '['),
    ("oldest_gate", 'g'),
    ("help", '?'),
    ("log", 'L'),
    ("status", 's'),
    ("mode", 'm'),
    ("rules", 'R'),
    ("quit", 'q'),
    ("focus_prompt", 'i'),
    ("search", '/'),
    ("search_next", 'n'),
    ("copy", 'c'),
    ("open_pager", 'o'),
    ("focus_subtree", 'f'),
    ("unfocus", 'F'),
    ("detail", 'v'),
    ("toggle_diff", 't'),
    ("inbox", 'I'),
    ("mark_identical", '='),
    ("close_session", 'x'),
    ("restart_session", 'X'),
    ("fold_session", 'z'),
];

/// Action names, for `config check` and the README.
pub fn actions() -> impl Iterator<Item = &'static str> {
    DEFAULTS.iter().map(|(a, _)| *a)
}

/// Build the translation table (pressed key → default key).
pub fn build(overrides: &BTreeMap<String, String>) -> Result<HashMap<char, char>, String> {
    let mut map = HashMap::new();
    for (action, key) in overrides {
        let default = DEFAULTS
            .iter()
            .find(|(a, _)| a == action)
            .map(|(_, k)| *k)
            .ok_or_else(|| format!("[keys] unknown action {action:?}"))?;
        let mut chars = key.chars();
        let (Some(c), None) = (chars.next(), chars.next()) else {
            return Err(format!("[keys] {action} = {key:?}: give one character"));
        };
        // Taking another action's key would silently disable it (e.g. `help = "y"` would
        // leave no key to allow a permission).
        if let Some((other, _)) = DEFAULTS.iter().find(|(a, k)| *k == c && a != action) {
            return Err(format!(
                "[keys] {action} = {key:?}: {key:?} is already the key of {other}"
            ));
        }
        if let Some(prev) = map.insert(c, default)
            && prev != default
        {
            return Err(format!("[keys] {key:?} is given to two actions"));
        }
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_and_rejects() {
        let mut o = BTreeMap::new();
        o.insert("allow_once".to_string(), "Y".to_string());
        assert_eq!(build(&o).unwrap().get(&'Y'), Some(&'y'));
        o.insert("fly".to_string(), "x".to_string());
        assert!(build(&o).unwrap_err().contains("fly"));
        let mut o = BTreeMap::new();
        o.insert("quit".to_string(), "QQ".to_string());
        assert!(build(&o).is_err());
        let mut o = BTreeMap::new();
        o.insert("help".to_string(), "y".to_string());
        assert!(
            build(&o).unwrap_err().contains("allow_once"),
            "y stays allow once"
        );
        assert_eq!(actions().count(), DEFAULTS.len());
    }
}
