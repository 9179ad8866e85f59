//! The active gate card's interaction state, as the card's keys use it: finding it, opening
//! its editor, moving its highlight, showing an error, reading its form.

use serde_json::{Map, Value};

use super::super::gate::FieldKind;
use super::super::state::{Editor, EditorPurpose, GateUi, State};

pub(super) fn active_ui_mut(state: &mut State) -> Option<&mut GateUi> {
    let id = state.active_gate.clone()?;
    state.gate_ui.get_mut(&id)
}

pub(super) fn open_editor(state: &mut State, purpose: EditorPurpose, initial: &str) {
    if let Some(ui) = active_ui_mut(state) {
        ui.error = None;
        ui.editor = Some(Editor::new(purpose, initial));
    }
}

pub(super) fn set_error(state: &mut State, msg: &str) {
    if let Some(ui) = active_ui_mut(state) {
        ui.error = Some(msg.to_string());
    }
}

pub(super) fn move_choice(state: &mut State, n: usize, forward: bool) {
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

pub(super) fn move_cursor(state: &mut State, n: usize, forward: bool) {
    if let Some(ui) = active_ui_mut(state) {
        ui.cursor = if forward {
            (ui.cursor + 1).min(n.saturating_sub(1))
        } else {
            ui.cursor.saturating_sub(1)
        };
    }
}

/// Typed form content from the field texts; errors name the field.
pub(super) fn elicitation_content(
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
