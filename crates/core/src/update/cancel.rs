//! An agent that ignores a cancel: after the grace period (`Settings::cancel_grace_ms`) with no
//! turn end, the footer says so and a prompt offers to stop the agent or keep waiting.

use crate::input::{KeyCode, KeyEvent};

use super::super::msg::{Effect, TurnState};
use super::super::state::{Overlay, State};

pub use crate::state::DEFAULT_GRACE_MS;

/// A cancel (interrupt) went out now; the first one of a turn starts the clock.
pub(super) fn sent(state: &mut State) {
    let now = state.now_ms;
    state.cancel_sent_ms.get_or_insert(now);
}

/// After every message: clear the watch when the turn ended, raise it when the grace is over.
pub(super) fn watch(state: &mut State) {
    let Some(sent) = state.cancel_sent_ms else {
        return;
    };
    let running = matches!(
        state.session.turn,
        Some(TurnState::Running | TurnState::RequiresAction)
    );
    if !running || state.session.exited.is_some() {
        state.cancel_sent_ms = None;
        state.cancel_stuck = false;
        if state.overlay == Some(Overlay::AgentStuck) && state.acting_on_shown() {
            state.overlay = None;
        }
        return;
    }
    if !state.cancel_stuck && state.now_ms.saturating_sub(sent) >= state.settings.cancel_grace_ms {
        state.cancel_stuck = true;
        // The prompt stops the session on screen; a background one says so in its tree row
        // and its footer once shown.
        if state.overlay.is_none() && state.acting_on_shown() {
            state.overlay = Some(Overlay::AgentStuck);
        }
    }
}

/// The footer text while the agent does not respond.
pub fn footer_hint(state: &State) -> Option<String> {
    let sent = state.cancel_sent_ms.filter(|_| state.cancel_stuck)?;
    let secs = state.now_ms.saturating_sub(sent) / 1000;
    Some(format!(
        "the agent is not responding: no turn end {secs} s after the cancel · Ctrl-C stop it or keep waiting"
    ))
}

/// Ctrl-C while the agent does not respond: ask again instead of sending another cancel.
pub(super) fn ctrl_c_while_stuck(state: &mut State) -> bool {
    if state.cancel_stuck && state.session.exited.is_none() {
        state.overlay = Some(Overlay::AgentStuck);
        true
    } else {
        false
    }
}

pub(super) fn overlay_key(state: &mut State, key: KeyEvent, fx: &mut Vec<Effect>) {
    match key.code {
        KeyCode::Char('s') | KeyCode::Char('y') | KeyCode::Enter => {
            state.overlay = None;
            stop_agent(state, fx);
        }
        KeyCode::Char('w') | KeyCode::Char('n') | KeyCode::Esc => {
            // Keep waiting: ask again after another grace period.
            state.overlay = None;
            state.cancel_stuck = false;
            state.cancel_sent_ms = Some(state.now_ms);
        }
        _ => {}
    }
}

/// Stop the agent as on quit (every pending request answered fail-closed, then its whole
/// process group ended), but keep the window open to read.
fn stop_agent(state: &mut State, fx: &mut Vec<Effect>) {
    super::shutdown::answer_all_and_shut_down(state, fx);
    state.cancel_sent_ms = None;
    state.cancel_stuck = false;
    state.status_line = Some("stopping the agent: pending requests answered".into());
}
