//! One binding table per context (`table.rs`): footer hints, each card's key row, the `?`
//! help and the README's keys section are all rendered from it, so none of them can name a
//! key that does something else, or describe a key differently from the others.
//!
//! Hints (footer, card rows) show a binding's `label`; the help and the README its `desc`.
//! Keys of remappable actions are shown as the user has them after `[keys]` overrides.

mod check;
mod markdown;
mod table;

use std::collections::HashMap;

pub use check::collisions;
pub use markdown::readme_section;
pub use table::*;

use super::keymap;

/// A key of a binding.
#[derive(Clone, Copy, Debug)]
pub enum Key {
    /// A remappable action of `keymap::DEFAULTS`: shown as the keys that do it.
    Act(&'static str),
    /// A fixed key, shown as written. Words between spaces that are one character (`j k`),
    /// `Space` and `1-9` are the characters it takes, for the collision check.
    Lit(&'static str),
}

#[derive(Debug)]
pub struct Binding {
    /// Unique within its context; hints name bindings by it.
    pub id: &'static str,
    pub keys: &'static [Key],
    /// Short, for the footer and the card's key row (`? help`, `[y] Allow once`).
    pub label: &'static str,
    /// For the `?` help and the README.
    pub desc: &'static str,
}

#[derive(Debug)]
pub struct Context {
    /// The heading in the help and the README.
    pub name: &'static str,
    /// Whether `[keys]` overrides translate the keys pressed here (not in typed text, nor in
    /// the inbox, which reads its own keys as they are).
    pub remapped: bool,
    pub bindings: &'static [Binding],
}

impl Context {
    /// The binding `id`. The ids hints use are fixed in the code; a test renders each.
    pub fn get(&self, id: &str) -> &'static Binding {
        self.bindings
            .iter()
            .find(|b| b.id == id)
            .unwrap_or_else(|| panic!("no binding {id:?} in {}", self.name))
    }
}

/// A hint names a binding of a context.
pub type Hint = (&'static Context, &'static str);

/// The default key of a remappable action.
pub fn default_key(action: &str) -> char {
    keymap::DEFAULTS
        .iter()
        .find(|(a, _)| *a == action)
        .map(|(_, k)| *k)
        .unwrap_or_else(|| panic!("no remappable action {action:?}"))
}

/// The keys that do `action` for this user, as shown (`Y/y`, `Ctrl-T`).
fn action_keys(keymap: &HashMap<char, char>, action: &str) -> String {
    keymap::keys_for(keymap, default_key(action))
        .iter()
        .map(|k| keymap::label(*k))
        .collect::<Vec<_>>()
        .join("/")
}

/// How one key reads for this user. Fixed keys are written as they are.
pub fn key_text(keymap: &HashMap<char, char>, key: &Key) -> String {
    match key {
        Key::Act(a) => action_keys(keymap, a),
        Key::Lit(s) => (*s).to_string(),
    }
}

/// All of a binding's keys, for a hint (`Space/e`).
pub fn keys_text(keymap: &HashMap<char, char>, b: &Binding) -> String {
    b.keys
        .iter()
        .map(|k| key_text(keymap, k))
        .collect::<Vec<_>>()
        .join("/")
}

/// The one key a card's choice shows (`[Y] Allow once`): the user's own first.
pub fn first_key(keymap: &HashMap<char, char>, b: &Binding) -> String {
    match b.keys.first() {
        Some(Key::Act(a)) => keymap::keys_for(keymap, default_key(a))
            .first()
            .map(|k| keymap::label(*k))
            .unwrap_or_default(),
        Some(Key::Lit(s)) => (*s).to_string(),
        None => String::new(),
    }
}

/// Hint pairs: each binding's keys and label.
pub fn hint_pairs(keymap: &HashMap<char, char>, hints: &[Hint]) -> Vec<(String, &'static str)> {
    hints
        .iter()
        .map(|(ctx, id)| {
            let b = ctx.get(id);
            (keys_text(keymap, b), b.label)
        })
        .collect()
}

/// A hint line: `? help · g gate · q quit`.
pub fn hint_line(keymap: &HashMap<char, char>, hints: &[Hint]) -> String {
    hint_pairs(keymap, hints)
        .into_iter()
        .map(|(k, l)| format!("{k} {l}"))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The help's rows of a context: keys (`' / '` between them) and description.
pub fn help_rows(keymap: &HashMap<char, char>, ctx: &Context) -> Vec<(String, &'static str)> {
    ctx.bindings
        .iter()
        .map(|b| {
            let keys: Vec<String> = b.keys.iter().map(|k| key_text(keymap, k)).collect();
            (keys.join(" / "), b.desc)
        })
        .collect()
}

/// The hint lines: the footer in each situation, and the card rows beside the choices.
pub mod hints {
    use super::{ANY_GATE, EVERYWHERE, Hint, INBOX, PROMPT, QUEUE, REPLAY, WORKSPACE};

    pub const PROMPT_KEYS: &[Hint] = &[
        (&PROMPT, "send"),
        (&EVERYWHERE, "focus"),
        (&EVERYWHERE, "interrupt"),
        (&EVERYWHERE, "quit_chord"),
    ];
    /// After "read-only: the agent exited".
    pub const EXITED: &[Hint] = &[(&EVERYWHERE, "focus"), (&EVERYWHERE, "quit_chord")];
    pub const QUEUE_EDIT: &[Hint] = &[(&QUEUE, "save_edit"), (&QUEUE, "cancel_edit")];
    pub const QUEUED: &[Hint] = &[
        (&QUEUE, "queue"),
        (&EVERYWHERE, "help"),
        (&WORKSPACE, "inbox"),
        (&WORKSPACE, "new_session"),
        (&EVERYWHERE, "quit"),
    ];
    /// After "keys in the card".
    pub const GATE: &[Hint] = &[
        (&WORKSPACE, "next_gate"),
        (&EVERYWHERE, "focus"),
        (&EVERYWHERE, "help"),
    ];
    pub const WORKSPACE_KEYS: &[Hint] = &[
        (&EVERYWHERE, "help"),
        (&WORKSPACE, "inbox"),
        (&WORKSPACE, "oldest_gate"),
        (&WORKSPACE, "new_session"),
        (&WORKSPACE, "close_session"),
        (&EVERYWHERE, "quit"),
    ];
    pub const SESSION: &[Hint] = &[
        (&EVERYWHERE, "help"),
        (&EVERYWHERE, "oldest_gate"),
        (&EVERYWHERE, "focus"),
        (&EVERYWHERE, "mode"),
        (&EVERYWHERE, "quit"),
    ];
    /// The prompt while gates wait elsewhere: how to reach them.
    pub const PROMPT_WAITING: &[Hint] = &[
        (&PROMPT, "send"),
        (&PROMPT, "leave"),
        (&EVERYWHERE, "oldest_gate"),
        (&EVERYWHERE, "quit_chord"),
    ];
    /// A pane while gates wait: the way to them first.
    pub const PANE_WAITING: &[Hint] = &[
        (&EVERYWHERE, "oldest_gate"),
        (&WORKSPACE, "inbox"),
        (&EVERYWHERE, "help"),
        (&EVERYWHERE, "quit"),
    ];
    /// A session that takes no prompt (an engine's node, a remote agent's channel).
    pub const NO_PROMPT: &[Hint] = &[
        (&EVERYWHERE, "help"),
        (&EVERYWHERE, "focus"),
        (&EVERYWHERE, "status"),
        (&EVERYWHERE, "quit"),
    ];
    /// A card's keys besides its choices.
    pub const PERMISSION_MORE: &[Hint] = &[
        (&super::PERMISSION, "save_rule"),
        (&ANY_GATE, "raw_reply"),
        (&ANY_GATE, "next_gate"),
    ];
    pub const CARD_MORE: &[Hint] = &[(&ANY_GATE, "raw_reply"), (&ANY_GATE, "next_gate")];

    /// The inbox's header.
    pub const INBOX_KEYS: &[Hint] = &[
        (&INBOX, "mark"),
        (&INBOX, "mark_identical"),
        (&INBOX, "clear"),
        (&INBOX, "allow"),
        (&INBOX, "deny"),
        (&INBOX, "open"),
        (&INBOX, "close"),
    ];

    /// The replay's footer.
    pub const REPLAY_KEYS: &[Hint] = &[
        (&REPLAY, "play"),
        (&REPLAY, "step"),
        (&REPLAY, "gate"),
        (&REPLAY, "speed"),
        (&REPLAY, "inspect"),
        (&REPLAY, "keys"),
    ];

    pub const ALL: &[&[Hint]] = &[
        INBOX_KEYS,
        REPLAY_KEYS,
        PROMPT_KEYS,
        EXITED,
        QUEUE_EDIT,
        QUEUED,
        GATE,
        WORKSPACE_KEYS,
        SESSION,
        PROMPT_WAITING,
        PANE_WAITING,
        NO_PROMPT,
        PERMISSION_MORE,
        CARD_MORE,
    ];
}

#[cfg(test)]
mod tests;
