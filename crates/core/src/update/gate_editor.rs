//! Keys in a gate card's in-place editor: typing, Esc, and submitting the text for what it is
//! for (a deny message, edited input, a raw reply, an answer, a rule, a form field).

use crate::input::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::Value;

use super::super::gate::{Decision, GateKind};
use super::super::msg::Effect;
use super::super::state::{Editor, EditorPurpose, State};
use super::decide::{answer, decisions_blocked};
use super::gate_card::{active_ui_mut, elicitation_content, set_error};
use super::gate_question::confirm_page;

pub(super) fn editor_key(
    state: &mut State,
    gate: &super::super::gate::Gate,
    key: KeyEvent,
    fx: &mut Vec<Effect>,
) {
    let check = state.reply_check;
    let Some(ui) = active_ui_mut(state) else {
        return;
    };
    let Some(ed) = ui.editor.as_mut() else { return };
    let purpose = ed.purpose;
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let submit = if purpose.multiline() {
        key.code == KeyCode::Char('s') && ctrl
    } else {
        key.code == KeyCode::Enter
    };
    if key.code == KeyCode::Esc {
        ui.editor = None;
        ui.error = None;
        // A free-text question or one-answer form has nothing to go back to: Esc declines.
        if let GateKind::Elicitation(e) = &gate.kind
            && purpose == EditorPurpose::Field
            && e.free_text()
        {
            let id = gate.id.clone();
            fx.extend(answer(state, &id, Decision::ElicitDecline));
            return;
        }
        if let GateKind::Question(q) = &gate.kind
            && purpose == EditorPurpose::Other
            && q.questions
                .get(ui.page)
                .is_some_and(|s| s.options.is_empty())
        {
            let id = gate.id.clone();
            fx.extend(answer(
                state,
                &id,
                Decision::Deny {
                    message: "The user declined to answer.".into(),
                    interrupt: false,
                },
            ));
        }
        return;
    }
    if !submit {
        if purpose.multiline() && key.code == KeyCode::Enter {
            ed.area.insert_newline();
        } else {
            ed.area.input(key);
        }
        return;
    }
    let text = ed.area.lines().join("\n");
    let id = gate.id.clone();
    if !matches!(purpose, EditorPurpose::Rule | EditorPurpose::Field)
        && let Some(why) = decisions_blocked(state)
    {
        // The typed text stays in the editor for when the connection is back.
        set_error(state, &why);
        state.status_line = Some(why);
        return;
    }
    let Some(ui) = active_ui_mut(state) else {
        return;
    };
    match purpose {
        EditorPurpose::DenyMessage => {
            ui.editor = None;
            let message = if text.trim().is_empty() {
                match &gate.kind {
                    // The backend's own default reason (iii), else ours.
                    GateKind::Permission(p) => p.deny_reason.clone(),
                    _ => None,
                }
                .unwrap_or_else(|| "The user denied this request.".to_string())
            } else {
                text.trim().to_string()
            };
            fx.extend(answer(
                state,
                &id,
                Decision::Deny {
                    message,
                    interrupt: false,
                },
            ));
        }
        EditorPurpose::BlockReason => {
            ui.editor = None;
            let reason = if text.trim().is_empty() {
                "Blocked by the user at a breakpoint.".to_string()
            } else {
                text.trim().to_string()
            };
            fx.extend(answer(state, &id, Decision::Block { reason }));
        }
        EditorPurpose::EditInput => match serde_json::from_str::<Value>(&text) {
            Ok(v) if v.is_object() => {
                ui.editor = None;
                fx.extend(answer(
                    state,
                    &id,
                    Decision::Allow {
                        updated_input: Some(v),
                        always: false,
                    },
                ));
            }
            Ok(_) => ui.error = Some("the tool input must be a JSON object".into()),
            Err(e) => ui.error = Some(format!("not valid JSON: {e}")),
        },
        EditorPurpose::RawReply => match serde_json::from_str::<Value>(&text) {
            Ok(body) => match check(gate.reply_definition, &body) {
                Ok(()) => {
                    ui.editor = None;
                    fx.extend(answer(state, &id, Decision::Raw { body }));
                }
                Err(e) => ui.error = Some(e),
            },
            Err(e) => ui.error = Some(format!("not valid JSON: {e}")),
        },
        EditorPurpose::Other => {
            let free = matches!(&gate.kind, GateKind::Question(q)
                if q.questions.get(ui.page).is_some_and(|s| s.options.is_empty()));
            if free && text.trim().is_empty() {
                // The field stays open: there is nothing else on the card to choose.
                ui.error = Some("type an answer (Enter sends), or Esc to decline".into());
                return;
            }
            ui.editor = None;
            let page = ui.page;
            ui.other[page] = text.trim().to_string();
            ui.other_on[page] = !ui.other[page].is_empty();
            if let GateKind::Question(q) = &gate.kind {
                let multi = q.questions.get(page).is_some_and(|s| s.multi);
                if !multi && ui.other_on[page] {
                    ui.chosen[page].iter_mut().for_each(|c| *c = false);
                    confirm_page(state, &id, q, page, fx);
                }
            }
        }
        EditorPurpose::Rule => match super::super::rules::parse_spec_line(&text) {
            Ok(spec) => {
                ui.editor = None;
                fx.extend(super::rules::save_rule(state, spec, gate));
            }
            Err(e) => ui.error = Some(e),
        },
        EditorPurpose::Field => {
            ui.editor = None;
            let c = ui.cursor;
            if let Some(v) = ui.fields.get_mut(c) {
                *v = text.trim().to_string();
            }
            // A one-answer form: Enter in its field is the answer.
            if let GateKind::Elicitation(e) = &gate.kind
                && e.free_text()
            {
                match elicitation_content(state, e) {
                    Ok(content) => {
                        fx.extend(answer(state, &id, Decision::ElicitAccept { content }))
                    }
                    Err(msg) => {
                        if let Some(ui) = active_ui_mut(state) {
                            ui.editor = Some(Editor::new(EditorPurpose::Field, &text));
                            ui.error = Some(msg);
                        }
                    }
                }
            }
        }
    }
}
