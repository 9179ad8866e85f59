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
    // An adopted session's card: leave it to the agent's own terminal (`t` toggles diffs).
    ("hand_back", 'T'),
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
    ("options", 'O'),
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
    // The shown session's queued messages (iii): edit or remove one.
    ("queue", 'u'),
    // A Ctrl chord (its control character): never a bare letter a gate card would take.
    ("new_session", '\u{e}'),
];

/// Ctrl chords switchboard already gives a meaning to everywhere (interrupt, quit, search all,
/// send an editor, clear the prompt): an override may not take them.
const RESERVED_CTRL: &[char] = &[
    'c', 'd', 'f', 's', 'u', 'm', 'i', 'j', 'h', // ours, and Enter/Tab/Backspace
    'a', 'b', 'e', 'k', 'n', 'p', 'r', 'v', 'w', 'y', 'z', // the text editors' own chords
    'q', // XON/XOFF flow control on many terminals
];

/// The control character of Ctrl + `letter`, as the keymap stores chords.
pub fn ctrl_char(letter: char) -> Option<char> {
    letter
        .is_ascii_alphabetic()
        .then(|| char::from(letter.to_ascii_lowercase() as u8 & 0x1f))
}

/// The letter of a chord stored as its control character.
pub fn ctrl_letter(c: char) -> Option<char> {
    (c.is_ascii_control() && (1..=26).contains(&(c as u32))).then(|| char::from(c as u8 | 0x60))
}

/// How a default key reads on screen: `Ctrl-N` for a chord, the character otherwise.
pub fn label(c: char) -> String {
    match ctrl_letter(c) {
        Some(l) => format!("Ctrl-{}", l.to_ascii_uppercase()),
        None => c.to_string(),
    }
}

/// Action names, for `config check` and the README.
pub fn actions() -> impl Iterator<Item = &'static str> {
    DEFAULTS.iter().map(|(a, _)| *a)
}

/// A printable key no action has by default or by override, to suggest in an error.
pub(crate) fn suggest_free(overrides: &BTreeMap<String, String>) -> char {
    ('A'..='Z')
        .chain('a'..='z')
        .find(|c| {
            !DEFAULTS.iter().any(|(_, k)| k == c)
                && !overrides
                    .values()
                    .any(|v| v.chars().eq(std::iter::once(*c)))
        })
        .unwrap_or('~')
}

/// The keys that do what `default` does once `keymap` (from [`build`]) is applied: the
/// user's own keys for it, then the default itself unless another action took it. For
/// help and hints, so they show the keys the user actually has.
pub fn keys_for(keymap: &HashMap<char, char>, default: char) -> Vec<char> {
    let mut keys: Vec<char> = keymap
        .iter()
        .filter(|(k, d)| **d == default && **k != default)
        .map(|(k, _)| *k)
        .collect();
    keys.sort_unstable();
    if keymap.get(&default).is_none_or(|d| *d == default) {
        keys.push(default);
    }
    keys
}

/// The key an override gives `action` (a chord action takes a chord, others one printable
/// character), and the action's default key.
pub fn parse(action: &str, key: &str) -> Result<(char, char), String> {
    let default = DEFAULTS
        .iter()
        .find(|(a, _)| *a == action)
        .map(|(_, k)| *k)
        .ok_or_else(|| format!("[keys] unknown action {action:?}"))?;
    let c = if ctrl_letter(default).is_some() {
        // A chord action takes a chord: `ctrl-t`.
        let lower = key.to_ascii_lowercase();
        let letter = lower
            .strip_prefix("ctrl-")
            .or_else(|| lower.strip_prefix("c-"))
            .filter(|l| l.chars().count() == 1)
            .and_then(|l| l.chars().next())
            .filter(|l| l.is_ascii_alphabetic())
            .ok_or_else(|| {
                format!(
                    "[keys] {action} = {key:?}: give a Ctrl chord such as \"ctrl-t\" (never a bare letter a gate card uses)"
                )
            })?;
        if RESERVED_CTRL.contains(&letter) && ctrl_char(letter) != Some(default) {
            return Err(format!(
                "[keys] {action} = {key:?}: Ctrl-{} is already taken",
                letter.to_ascii_uppercase()
            ));
        }
        ctrl_char(letter).expect("an ASCII letter")
    } else {
        let mut chars = key.chars();
        let (Some(c), None) = (chars.next(), chars.next()) else {
            return Err(format!("[keys] {action} = {key:?}: give one character"));
        };
        if c.is_control() {
            return Err(format!(
                "[keys] {action} = {key:?}: give a printable character"
            ));
        }
        c
    };
    Ok((c, default))
}

/// Build the translation table (pressed key → default key).
pub fn build(overrides: &BTreeMap<String, String>) -> Result<HashMap<char, char>, String> {
    let mut map = HashMap::new();
    for (action, key) in overrides {
        let (c, default) = parse(action, key)?;
        // Taking another action's key would silently disable it (e.g. `help = "y"` would
        // leave no key to allow a permission), unless that action is given a key of its own
        // here too: a default added in a newer version (`queue = 'u'`) must not lock out a
        // config that already used the key, and the fix is one more line.
        if let Some((other, _)) = DEFAULTS
            .iter()
            .find(|(a, k)| *k == c && a != action && !overrides.contains_key(*a))
        {
            return Err(format!(
                "[keys] {action} = {key:?}: {key:?} is already the key of {other}; give {other} a key of its own too (e.g. {other} = \"{}\") or pick a free key",
                suggest_free(overrides)
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
    fn the_new_session_chord_is_remapped_only_to_another_free_chord() {
        let one = |k: &str| BTreeMap::from([("new_session".to_string(), k.to_string())]);
        let map = build(&one("ctrl-t")).unwrap();
        assert_eq!(map.get(&'\u{14}'), Some(&'\u{e}'));
        assert_eq!(build(&one("C-T")).unwrap(), map);
        for bad in ["t", "x", "ctrl-c", "ctrl-d", "ctrl-", "ctrl-tt", "ctrl-1"] {
            assert!(build(&one(bad)).is_err(), "{bad}");
        }
        assert_eq!(label('\u{e}'), "Ctrl-N");
        assert_eq!(label('I'), "I");
    }

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

    #[test]
    fn a_taken_default_is_allowed_when_its_action_gets_a_key_of_its_own() {
        let keys = |pairs: &[(&str, &str)]| {
            build(
                &pairs
                    .iter()
                    .map(|(a, k)| (a.to_string(), k.to_string()))
                    .collect(),
            )
        };
        // A config written before `queue` took `u` says what to add.
        let err = keys(&[("focus_subtree", "u")]).unwrap_err();
        assert!(err.contains("queue") && err.contains("queue = "), "{err}");
        let map = keys(&[("focus_subtree", "u"), ("queue", "U")]).unwrap();
        assert_eq!(map.get(&'u'), Some(&'f'));
        assert_eq!(map.get(&'U'), Some(&'u'));
        assert_eq!(
            keys_for(&map, 'u'),
            vec!['U'],
            "u no longer opens the queue"
        );
        assert_eq!(keys_for(&map, 'f'), vec!['u', 'f']);
        assert_eq!(keys_for(&map, 'y'), vec!['y']);
        // `n` is two actions' default (deny, search_next): both must move.
        assert!(keys(&[("help", "n"), ("deny", "D")]).is_err());
        assert!(keys(&[("help", "n"), ("deny", "D"), ("search_next", "M")]).is_ok());
        // Two actions on one key is still refused.
        assert!(keys(&[("help", "K"), ("log", "K")]).is_err());
    }
}
