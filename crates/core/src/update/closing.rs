//! What closing a gate leaves behind, however it closed (answered here, by a rule, by the
//! backend, left pending): its id remembered as closed, and the next gate to show.

use super::super::state::{CLOSED_CAP, Focus, State};

pub(super) fn remember_closed(state: &mut State, id: String) {
    state.closed_gates.push(id.clone(), CLOSED_CAP);
    state.gate_ui.remove(&id);
}

/// Pick the next gate to show after `id` closed.
pub(super) fn after_gate_closed(state: &mut State, id: &str) {
    if state.active_gate.as_deref() != Some(id) {
        return;
    }
    state.active_gate = state.gates.front().map(|g| g.id.clone());
    if !state.acting_on_shown() {
        return;
    }
    match state.active_gate.clone() {
        Some(next) => {
            if state.focus == Focus::Gate {
                let key = state.gate(&next).map(|g| g.node_key.clone());
                state.selected_node = state.tree.resolve(key.as_deref());
                state.selected_item = None;
                state.scroll_back = 0;
            }
        }
        None => {
            // Stay on the node whose gate was just answered; letters typed next must not
            // land in the prompt by surprise (`i` or Tab goes there).
            if state.focus == Focus::Gate {
                state.focus = Focus::Transcript;
            }
        }
    }
}
