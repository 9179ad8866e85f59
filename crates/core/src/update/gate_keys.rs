//! Keys inside the gate card: choices, question pages, forms and in-place editors. A question's
//! pages take their keys in `gate_question.rs`, an open editor in `gate_editor.rs`; what they
//! share about the card is in `gate_card.rs`.

use crate::input::{KeyCode, KeyEvent};
use serde_json::Value;

use super::super::gate::{Decision, FieldKind, GateKind, PermChoice};
use super::super::msg::Effect;
use super::super::state::{EditorPurpose, State};
use super::decide::{answer, decisions_blocked, hand_back};
use super::gate_card::{
    active_ui_mut, elicitation_content, move_choice, move_cursor, open_editor, set_error,
};
use super::gate_editor::editor_key;
use super::gate_question::question_key;

pub(super) fn editor_open(state: &State) -> bool {
    state.active_ui().is_some_and(|ui| ui.editor.is_some())
}

pub(super) fn paste(state: &mut State, text: &str) {
    if let Some(ed) = active_ui_mut(state).and_then(|ui| ui.editor.as_mut()) {
        let text = if ed.purpose.multiline() {
            text.to_string()
        } else {
            text.replace('\n', " ")
        };
        if !ed.area.insert_str(&text) {
            state.status_line = Some(format!(
                "an editor holds at most {} KiB: the rest of the paste was not taken",
                crate::text_field::MAX_BYTES >> 10
            ));
        }
    }
}

pub(super) fn on_key(state: &mut State, key: KeyEvent, fx: &mut Vec<Effect>) {
    let Some(gate) = state.active().cloned() else {
        return;
    };
    if editor_open(state) {
        return editor_key(state, &gate, key, fx);
    }
    // Offline (iii reconnecting): the card stays readable and movable, nothing decides.
    let moves = matches!(
        key.code,
        KeyCode::Char(']' | '[' | 'j' | 'k' | 'h' | 'l')
            | KeyCode::Left
            | KeyCode::Right
            | KeyCode::Up
            | KeyCode::Down
            | KeyCode::PageUp
            | KeyCode::PageDown
    );
    if !moves && let Some(why) = decisions_blocked(state) {
        set_error(state, &why);
        state.status_line = Some(why);
        return;
    }
    match key.code {
        KeyCode::Char(']') => return super::workspace::cycle(state, true),
        KeyCode::Char('[') => return super::workspace::cycle(state, false),
        KeyCode::Char('r') => {
            return open_editor(state, EditorPurpose::RawReply, &gate.default_reply);
        }
        // A body taller than the card (a long command) scrolls; `v` shows it all.
        KeyCode::PageUp | KeyCode::PageDown => {
            let max = state.view.card_max_scroll;
            if let Some(ui) = active_ui_mut(state) {
                ui.scroll = if key.code == KeyCode::PageDown {
                    (ui.scroll + 5).min(max)
                } else {
                    ui.scroll.saturating_sub(5).min(max)
                };
            }
            return;
        }
        _ => {}
    }
    let id = gate.id.clone();
    match &gate.kind {
        GateKind::Permission(p) => {
            let choices = p.choices();
            let pick = match key.code {
                KeyCode::Char('y') if p.default_to_no => {
                    set_error(
                        state,
                        "this request defaults to no: highlight Allow once and press Enter",
                    );
                    None
                }
                KeyCode::Left | KeyCode::Up | KeyCode::Char('k') => {
                    move_choice(state, choices.len(), false);
                    None
                }
                KeyCode::Right | KeyCode::Down | KeyCode::Char('j') => {
                    move_choice(state, choices.len(), true);
                    None
                }
                KeyCode::Char('A') => {
                    let spec = super::super::rules::suggest(&super::rules::subject(p));
                    let text = super::super::rules::spec_line(&spec);
                    // A rule is text a person reads and edits: one for an argument holding
                    // control, bidi or invisible characters could not show what it matches
                    // (stripping them would make it match something else), so none is offered.
                    if text.chars().any(super::super::text::is_hostile) {
                        set_error(
                            state,
                            "no rule offered: the argument holds control or invisible characters (shown as ^[ or <U+…>); answer this request with y, a or n",
                        );
                    } else {
                        open_editor(state, EditorPurpose::Rule, &text);
                    }
                    None
                }
                KeyCode::Char(c) => choices.iter().copied().find(|ch| p.choice_key(*ch) == c),
                KeyCode::Enter => match state.active_ui() {
                    Some(ui) if ui.picked => choices.get(ui.choice).copied(),
                    _ => {
                        set_error(state, ENTER_NEEDS_A_PICK);
                        None
                    }
                },
                _ => None,
            };
            match pick {
                Some(PermChoice::AllowOnce) => fx.extend(answer(
                    state,
                    &id,
                    Decision::Allow {
                        updated_input: None,
                        always: false,
                    },
                )),
                Some(PermChoice::AllowAlways) => {
                    fx.push(super::rules::add_session_rule(state, p));
                    fx.extend(answer(
                        state,
                        &id,
                        Decision::Allow {
                            updated_input: None,
                            always: true,
                        },
                    ))
                }
                Some(PermChoice::Deny) => open_editor(state, EditorPurpose::DenyMessage, ""),
                Some(PermChoice::DenyInterrupt) => fx.extend(answer(
                    state,
                    &id,
                    Decision::Deny {
                        message: "The user denied this and stopped the turn.".into(),
                        interrupt: true,
                    },
                )),
                Some(PermChoice::EditInput) => {
                    let pretty = serde_json::from_str::<Value>(&p.input)
                        .map(|v| super::super::text::pretty_json(&v))
                        .unwrap_or_else(|_| p.input.clone());
                    open_editor(state, EditorPurpose::EditInput, &pretty)
                }
                Some(PermChoice::HandBack) => fx.extend(hand_back(state, &id)),
                Some(PermChoice::AgentOption(i)) => match p.options.get(i) {
                    // Its deny carries a reason the model reads: ask for it first (empty
                    // sends the backend's default).
                    Some(o) if p.asks_reason(o) => {
                        open_editor(state, EditorPurpose::DenyMessage, "")
                    }
                    Some(o) => {
                        // A name that says "Reject" was not knowingly a standing approval.
                        if o.kind == "allow_always" && !o.contradicts() {
                            fx.push(super::rules::add_session_rule(state, p));
                        }
                        let decision = Decision::Option {
                            option_id: o.option_id.clone(),
                            name: o.label(),
                            allow: o.allows(),
                        };
                        fx.extend(answer(state, &id, decision));
                    }
                    None => {}
                },
                None => {}
            }
        }
        GateKind::Breakpoint(_) => match key.code {
            KeyCode::Char('y') => fx.extend(answer(state, &id, Decision::Continue)),
            KeyCode::Char('b') => open_editor(state, EditorPurpose::BlockReason, ""),
            KeyCode::Enter => match state.active_ui().map(|ui| (ui.picked, ui.choice)) {
                Some((true, 0)) => fx.extend(answer(state, &id, Decision::Continue)),
                Some((true, _)) => open_editor(state, EditorPurpose::BlockReason, ""),
                _ => set_error(state, ENTER_NEEDS_A_PICK),
            },
            KeyCode::Left | KeyCode::Up | KeyCode::Char('k') => move_choice(state, 2, false),
            KeyCode::Right | KeyCode::Down | KeyCode::Char('j') => move_choice(state, 2, true),
            _ => {}
        },
        GateKind::Dialog(d) => {
            let n = d.options.len().max(1);
            match key.code {
                KeyCode::Up | KeyCode::Char('k') => move_choice(state, n, false),
                KeyCode::Down | KeyCode::Char('j') => move_choice(state, n, true),
                KeyCode::Enter => {
                    let i = state.active_ui().map(|ui| ui.choice).unwrap_or(0);
                    let result = d
                        .options
                        .get(i)
                        .map(|o| Value::String(o.clone()))
                        .unwrap_or(Value::Bool(true));
                    fx.extend(answer(state, &id, Decision::DialogComplete { result }));
                }
                KeyCode::Esc => fx.extend(answer(state, &id, Decision::DialogCancel)),
                _ => {}
            }
        }
        GateKind::Elicitation(e) => {
            let n = e.fields.len();
            match key.code {
                KeyCode::Up | KeyCode::Char('k') => move_cursor(state, n, false),
                KeyCode::Down | KeyCode::Char('j') => move_cursor(state, n, true),
                KeyCode::Char(' ') | KeyCode::Char('e') | KeyCode::Left | KeyCode::Right => {
                    let Some(ui) = active_ui_mut(state) else {
                        return;
                    };
                    let Some(field) = e.fields.get(ui.cursor) else {
                        return;
                    };
                    let value = &mut ui.fields[ui.cursor];
                    match &field.kind {
                        FieldKind::Boolean => {
                            *value = if value == "true" { "false" } else { "true" }.into()
                        }
                        FieldKind::Enum(opts) if !opts.is_empty() => {
                            let i = opts.iter().position(|o| o == value);
                            let back = key.code == KeyCode::Left;
                            let next = match (i, back) {
                                (None, _) => 0,
                                (Some(i), false) => (i + 1) % opts.len(),
                                (Some(i), true) => (i + opts.len() - 1) % opts.len(),
                            };
                            *value = opts[next].clone();
                        }
                        _ if matches!(key.code, KeyCode::Left | KeyCode::Right) => {}
                        _ => {
                            let current = value.clone();
                            open_editor(state, EditorPurpose::Field, &current);
                        }
                    }
                }
                KeyCode::Enter => match elicitation_content(state, e) {
                    Ok(content) => {
                        fx.extend(answer(state, &id, Decision::ElicitAccept { content }))
                    }
                    Err(msg) => set_error(state, &msg),
                },
                KeyCode::Char('d') => fx.extend(answer(state, &id, Decision::ElicitDecline)),
                KeyCode::Esc => fx.extend(answer(state, &id, Decision::ElicitCancel)),
                _ => {}
            }
        }
        GateKind::Question(q) => {
            if q.malformed.is_some() {
                match key.code {
                    KeyCode::Char('n') => open_editor(state, EditorPurpose::DenyMessage, ""),
                    KeyCode::Char('T') if q.own_terminal.is_some() => {
                        fx.extend(hand_back(state, &id))
                    }
                    _ => {}
                }
                return;
            }
            question_key(state, &id, q, key, fx);
        }
    }
}

/// What Enter on a card with no highlighted choice says.
const ENTER_NEEDS_A_PICK: &str =
    "Enter picks a choice only after ↑↓ moves to it; press its key (y, n, …) to answer";
