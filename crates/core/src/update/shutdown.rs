//! Shutting a session down: every pending gate answered (or left where durable holds live),
//! then the backend told to stop. Shared by quitting and by stopping a stuck agent.

use super::super::gate::Decision;
use super::super::msg::{Command, Effect};
use super::super::state::State;
use super::decide::answer;

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
