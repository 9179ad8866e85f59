//! Interrupting a turn (Ctrl-C) and quitting: every pending gate gets its exit answer, then
//! each backend is shut down.

use super::super::gate::Decision;
use super::super::msg::{Command, Effect, TurnState};
use super::super::state::{Overlay, State};
use super::decide::answer;

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

/// Answer every pending gate with its exit answer, then shut the backend down.
pub(super) fn quit_now(state: &mut State, fx: &mut Vec<Effect>) {
    for i in 0..state.sessions.len() {
        state.with_session(i, |st| {
            if st.session.exited.is_none() {
                answer_all_and_shut_down(st, fx);
            }
        });
    }
    state.quitting = true;
    fx.push(Effect::Quit);
}

/// Every pending gate gets its fail-closed exit answer, then the backend is shut down (its
/// agent's whole process group stopped). Shared by quitting and by stopping a stuck agent.
pub(super) fn answer_all_and_shut_down(state: &mut State, fx: &mut Vec<Effect>) {
    if state.keeps_gates_on_quit {
        // Durable holds stay held where they live (another console may answer them): they
        // leave this screen with an audit row, and nothing is sent for them.
        let ids: Vec<String> = state.gates.iter().map(|g| g.id.clone()).collect();
        for id in ids {
            super::backend::leave_pending(state, &id);
        }
        fx.push(Effect::Send(state.sid(), Command::Shutdown));
        return;
    }
    let pending: Vec<(String, Decision)> = state
        .gates
        .iter()
        .map(|g| (g.id.clone(), Decision::on_exit(&g.kind)))
        .collect();
    for (id, d) in pending {
        fx.extend(answer(state, &id, d));
    }
    fx.push(Effect::Send(state.sid(), Command::Shutdown));
}
