//! Keys inside the gate card: choices, question pages, forms and in-place editors.

use crate::input::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Map, Value};

use super::super::gate::{Decision, FieldKind, GateKind, PermChoice, join_answer};
use super::super::msg::Effect;
use super::super::state::{Editor, EditorPurpose, GateUi, State};
use super::decide::{answer, decisions_blocked};

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
        ed.area.insert_str(&text);
    }
}

fn active_ui_mut(state: &mut State) -> Option<&mut GateUi> {
    let id = state.active_gate.clone()?;
    state.gate_ui.get_mut(&id)
}

fn open_editor(state: &mut State, purpose: EditorPurpose, initial: &str) {
    if let Some(ui) = active_ui_mut(state) {
        ui.error = None;
        ui.editor = Some(Editor::new(purpose, initial));
    }
}

/// A question page without options is answered by typing: its answer field opens at once.
fn free_text_page(ui: &mut GateUi, q: &super::super::gate::Question) {
    if ui.editor.is_none()
        && q.questions
            .get(ui.page)
            .is_some_and(|s| s.options.is_empty())
    {
        let text = ui.other.get(ui.page).cloned().unwrap_or_default();
        ui.editor = Some(Editor::new(EditorPurpose::Other, &text));
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
            let max = state.view.card_max_scroll.get();
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
                    super::rules::add_session_rule(state, p);
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
                Some(PermChoice::AgentOption(i)) => match p.options.get(i) {
                    // Its deny carries a reason the model reads: ask for it first (empty
                    // sends the backend's default).
                    Some(o) if p.asks_reason(o) => {
                        open_editor(state, EditorPurpose::DenyMessage, "")
                    }
                    Some(o) => {
                        // A name that says "Reject" was not knowingly a standing approval.
                        if o.kind == "allow_always" && !o.contradicts() {
                            super::rules::add_session_rule(state, p);
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
                if key.code == KeyCode::Char('n') {
                    open_editor(state, EditorPurpose::DenyMessage, "");
                }
                return;
            }
            question_key(state, &id, q, key, fx);
        }
    }
}

fn question_key(
    state: &mut State,
    id: &str,
    q: &super::super::gate::Question,
    key: KeyEvent,
    fx: &mut Vec<Effect>,
) {
    let Some(ui) = active_ui_mut(state) else {
        return;
    };
    let page = ui.page.min(q.questions.len().saturating_sub(1));
    let spec = &q.questions[page];
    let other_row = spec.options.len();
    match key.code {
        KeyCode::Up | KeyCode::Char('k') => ui.cursor = ui.cursor.saturating_sub(1),
        KeyCode::Down | KeyCode::Char('j') => ui.cursor = (ui.cursor + 1).min(other_row),
        KeyCode::Left | KeyCode::Char('h') => {
            ui.page = page.saturating_sub(1);
            ui.cursor = 0;
            free_text_page(ui, q);
        }
        KeyCode::Right | KeyCode::Char('l') => {
            ui.page = (page + 1).min(q.questions.len() - 1);
            ui.cursor = 0;
            free_text_page(ui, q);
        }
        KeyCode::Char(c @ '1'..='9') => {
            let i = (c as usize) - ('1' as usize);
            if i < other_row {
                ui.cursor = i;
                toggle(ui, page, spec.multi, i);
            }
        }
        KeyCode::Char(' ') => {
            if ui.cursor == other_row {
                let text = ui.other[page].clone();
                if spec.multi && !text.is_empty() {
                    ui.other_on[page] = !ui.other_on[page];
                } else {
                    open_editor(state, EditorPurpose::Other, &text);
                }
            } else {
                let c = ui.cursor;
                toggle(ui, page, spec.multi, c);
            }
        }
        KeyCode::Enter => {
            if ui.cursor == other_row && !(spec.multi && ui.other_on[page]) {
                let text = ui.other[page].clone();
                return open_editor(state, EditorPurpose::Other, &text);
            }
            if !spec.multi && ui.cursor < other_row {
                let c = ui.cursor;
                toggle(ui, page, false, c);
            }
            confirm_page(state, id, q, page, fx);
        }
        KeyCode::Esc => fx.extend(answer(
            state,
            id,
            Decision::Deny {
                message: "The user declined to answer.".into(),
                interrupt: false,
            },
        )),
        _ => {}
    }
}

fn toggle(ui: &mut GateUi, page: usize, multi: bool, i: usize) {
    ui.error = None;
    if multi {
        ui.chosen[page][i] = !ui.chosen[page][i];
    } else {
        ui.chosen[page].iter_mut().for_each(|c| *c = false);
        ui.chosen[page][i] = true;
        ui.other_on[page] = false;
    }
}

/// Enter on a page: check it has an answer, then go to the next unconfirmed page or submit.
fn confirm_page(
    state: &mut State,
    id: &str,
    q: &super::super::gate::Question,
    page: usize,
    fx: &mut Vec<Effect>,
) {
    let Some(ui) = active_ui_mut(state) else {
        return;
    };
    let answer_of = |ui: &GateUi, p: usize| {
        let other = ui.other_on[p].then(|| ui.other[p].as_str());
        join_answer(&q.questions[p], &ui.chosen[p], other)
    };
    if answer_of(ui, page).is_empty() {
        ui.error = Some(if q.questions[page].multi {
            "choose at least one option (Space toggles), or type Other".into()
        } else {
            "choose an option".into()
        });
        return;
    }
    ui.confirmed[page] = true;
    ui.error = None;
    match (0..q.questions.len()).find(|p| !ui.confirmed[*p]) {
        Some(next) => {
            ui.page = next;
            ui.cursor = 0;
            free_text_page(ui, q);
        }
        None => {
            let answers = q
                .questions
                .iter()
                .enumerate()
                .map(|(p, spec)| (spec.question.clone(), answer_of(ui, p)))
                .collect();
            fx.extend(answer(state, id, Decision::Answer { answers }));
        }
    }
}

fn editor_key(
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

fn set_error(state: &mut State, msg: &str) {
    if let Some(ui) = active_ui_mut(state) {
        ui.error = Some(msg.to_string());
    }
}

/// What Enter on a card with no highlighted choice says.
const ENTER_NEEDS_A_PICK: &str =
    "Enter picks a choice only after ↑↓ moves to it; press its key (y, n, …) to answer";

fn move_choice(state: &mut State, n: usize, forward: bool) {
    if let Some(ui) = active_ui_mut(state) {
        // The first move shows the highlight where it starts (the first choice going
        // forward); later ones move it.
        ui.choice = match (ui.picked, forward) {
            (false, true) => 0,
            (false, false) => n.saturating_sub(1),
            (true, true) => (ui.choice + 1).min(n.saturating_sub(1)),
            (true, false) => ui.choice.saturating_sub(1),
        };
        ui.picked = true;
    }
}

fn move_cursor(state: &mut State, n: usize, forward: bool) {
    if let Some(ui) = active_ui_mut(state) {
        ui.cursor = if forward {
            (ui.cursor + 1).min(n.saturating_sub(1))
        } else {
            ui.cursor.saturating_sub(1)
        };
    }
}

/// Typed form content from the field texts; errors name the field.
fn elicitation_content(
    state: &State,
    e: &super::super::gate::Elicitation,
) -> Result<Value, String> {
    if e.url.is_some() && e.fields.is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let ui = state.active_ui().ok_or("no form")?;
    let mut out = Map::new();
    for (field, text) in e.fields.iter().zip(&ui.fields) {
        let text = text.trim();
        if text.is_empty() {
            if field.required {
                return Err(format!("{} is required", field.title));
            }
            continue;
        }
        let value = match &field.kind {
            FieldKind::String | FieldKind::Enum(_) => Value::String(text.to_string()),
            FieldKind::Boolean => Value::Bool(text == "true"),
            FieldKind::Integer => text
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("{} must be a whole number", field.title))?,
            // A whole number stays whole (`3`, not `3.0`).
            FieldKind::Number if text.parse::<i64>().is_ok() => {
                Value::from(text.parse::<i64>().expect("checked"))
            }
            FieldKind::Number => text
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| format!("{} must be a number", field.title))?,
        };
        out.insert(field.name.clone(), value);
    }
    Ok(Value::Object(out))
}
