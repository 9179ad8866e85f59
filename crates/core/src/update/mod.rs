//! `update(state, msg) -> effects`: the only place state changes.

mod backend;
pub mod cancel;
mod closing;
pub mod decide;
mod gate_card;
mod gate_editor;
mod gate_keys;
mod gate_question;
mod keys;
mod new_session;
mod overlay_keys;
pub mod queue;
mod quit;
mod resumed;
mod rules;
mod settle;
mod shutdown;
/// The reducer's tests: no terminal, no IO, no backend (cards as plain data).
#[cfg(test)]
mod tests;
mod view;
pub mod workspace;

use super::msg::{BackendEvent, Effect, Msg};
use super::state::State;

pub use decide::{answer, audit_text, gate_subject};
pub use keys::leaves_gates_alone;
pub use resumed::utc_clock;
pub use rules::subject as rule_subject;
pub use settle::{HELD, answers_gate};
pub use view::visible_nodes;
pub use workspace::{row_count, row_index, row_totals, rows_from, tree_rows};

/// Apply one message to the state and return the effects to perform.
pub fn update(state: &mut State, msg: Msg) -> Vec<Effect> {
    let mut fx = Vec::new();
    match msg {
        Msg::Key(key) => keys::on_key(state, key, &mut fx),
        Msg::Paste(text) => keys::on_paste(state, &text),
        Msg::Mouse(m) => keys::on_mouse(state, m),
        Msg::Resize(w, h) => state.size = (w, h),
        Msg::Drawn(view) => state.view = view,
        Msg::Tick(now) => state.now_ms = now,
        Msg::Held => state.status_line = Some(HELD.into()),
        Msg::Backend {
            session,
            at_ms,
            event,
        } => {
            state.now_ms = state.now_ms.max(at_ms);
            // A closed session's late events change nothing on screen.
            if let Some(i) = state.index_of(session) {
                match event {
                    // Row operations are most of the stream: the op alone goes on.
                    BackendEvent::Item { node, op } => state.with_session(i, |state| {
                        backend::on_item(state, node.as_deref(), op, at_ms)
                    }),
                    // Selecting changes which session acts: done outside `with_session`.
                    BackendEvent::Reveal => workspace::reveal(state, i),
                    event => state
                        .with_session(i, |state| backend::on_event(state, event, at_ms, &mut fx)),
                }
            }
        }
    }
    // The prompt has no focus where no prompt is taken: keys go to the panes (and `g` to
    // the gates) instead of into a box that is not drawn.
    if state.focus == super::state::Focus::Prompt && !state.shown().session.abilities.prompt {
        state.focus = super::state::Focus::Transcript;
    }
    for i in 0..state.sessions.len() {
        // Only a session with a cancel out has anything to watch (most steps: none).
        if state.sessions[i].cancel_sent_ms.is_some() {
            state.with_session(i, cancel::watch);
        }
    }
    fx
}
