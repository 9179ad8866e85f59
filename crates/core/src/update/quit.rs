//! Interrupting a turn (Ctrl-C) and quitting: every pending gate gets its exit answer, then
//! each backend is shut down.

use super::super::msg::{Command, Effect, TurnState};
use super::super::state::{Overlay, State};

pub(super) fn interrupt(state: &mut State, fx: &mut Vec<Effect>) {
    let running = matches!(
        state.session.turn,
        Some(TurnState::Running | TurnState::RequiresAction)
    );
    if state.session.exited.is_some() {
        state.status_line = Some("the agent has exited (q quits)".into());
    } else if !running {
        state.status_line = Some("nothing to interrupt (Ctrl-D or q quits)".into());
    } else if !state.session.interruptible {
        state.status_line = Some("the agent cannot take an interrupt yet".into());
    } else if !super::cancel::ctrl_c_while_stuck(state) {
        state.status_line = Some("interrupt sent".into());
        fx.push(Effect::Send(state.sid(), Command::Interrupt));
        super::cancel::sent(state);
    }
}

pub(super) fn request_quit(state: &mut State, fx: &mut Vec<Effect>) {
    if state.pending_total() == 0 {
        quit_now(state, fx);
    } else {
        state.overlay = Some(Overlay::ConfirmQuit);
    }
}

/// Answer every pending gate with its exit answer, then shut the backend down. Each session
/// counts as closed from here: a request its agent sends while it stops gets its exit answer
/// at once (every request gets exactly one final answer, also the ones that cross the quit).
pub(super) fn quit_now(state: &mut State, fx: &mut Vec<Effect>) {
    for i in 0..state.sessions.len() {
        state.with_session(i, |st| {
            if st.session.exited.is_none() {
                super::shutdown::answer_all_and_shut_down(st, fx);
                st.closed = true;
            }
        });
    }
    state.quitting = true;
    fx.push(Effect::Quit);
}
