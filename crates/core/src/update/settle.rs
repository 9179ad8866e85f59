//! Which keys answer a card: the ones the edge holds back until the card, as it is now, has
//! been on that terminal's screen for `Settings::settle_ms` (issue 38). A key typed for what
//! stood there a moment before (a new gate took the keyboard, another terminal answered, `g y`
//! typed as one chord) then says so instead of answering what the owner has not seen.
//! Navigation is never held: it answers nothing.

use crate::input::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::super::state::{Focus, Overlay, State};
use super::gate_keys;
use super::keys::{leaves_gates_alone, translate};

/// The footer's word when a key was held (`Msg::Held`).
pub const HELD: &str = "the card just changed: press again";

/// True when `key`, applied now, would answer a gate (or open its deny / edit / raw-reply
/// editor, pick an option, save a rule): allow, always, deny, edit, raw reply, option
/// numbers, Enter on a choice, Esc that declines, the inbox's batch `y` / `n`. False for
/// keys that only move, scroll or leave, and for text typed into an editor already open.
pub fn answers_gate(state: &State, key: KeyEvent) -> bool {
    if key.kind == KeyEventKind::Release || leaves_gates_alone(state, key) {
        return false;
    }
    // Ctrl with a card's letter answers as the letter does (the card keys read the code
    // only); the Ctrl keys that act elsewhere were let through above.
    let key = translate(state, key);
    match &state.overlay {
        Some(Overlay::Inbox) => {
            return match state.inbox.deny_message {
                Some(_) => key.code == KeyCode::Enter,
                None => matches!(key.code, KeyCode::Char('y' | 'n')),
            };
        }
        Some(_) => return false,
        None => {}
    }
    if state.focus != Focus::Gate || state.active().is_none() {
        return false;
    }
    if gate_keys::editor_open(state) {
        // Typing into the editor answers nothing; what sends or declines it does: Enter,
        // Ctrl-S, Esc. An editor can be open on a card the owner has not seen yet (a
        // free-text question and a one-field form open with theirs; a deny editor left
        // open on a card comes back when the card before it closes).
        return matches!(key.code, KeyCode::Enter | KeyCode::Esc)
            || (key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('s'));
    }
    !matches!(
        key.code,
        KeyCode::Char(']' | '[' | 'j' | 'k' | 'h' | 'l' | 'v' | ' ')
            | KeyCode::Left
            | KeyCode::Right
            | KeyCode::Up
            | KeyCode::Down
            | KeyCode::PageUp
            | KeyCode::PageDown
            | KeyCode::Home
            | KeyCode::End
            | KeyCode::Null
    )
}
