//! A session resumed after its host stopped without being stopped: the history recorded
//! before the crash ends here, visibly, and nothing the crash left open looks answered.

use super::super::state::{Focus, State};
use super::super::transcript::{ItemKind, Tone};
use super::super::tree::NodeStatus;
use super::closing::{after_gate_closed, remember_closed};
use super::decide::gate_subject;

/// Close what the crash left open and draw the boundary. O(open gates + nodes), once per
/// resume.
pub(super) fn host_stopped(state: &mut State, stopped_ms: u64, resumed_ms: u64, at: u64) {
    state.tree.end_turn();
    // A gate waiting at the crash was answered by nobody: its agent is gone with the host,
    // and if the resumed agent asks again that is a new card.
    while let Some(gate) = state.remove_gate(0) {
        let node = state.tree.resolve(Some(&gate.node_key));
        state.tree.nodes[node].transcript.push(
            ItemKind::Audit {
                text: format!(
                    "not answered: the host stopped while this waited: {}",
                    gate_subject(&gate)
                ),
                tone: Tone::Neutral,
            },
            stopped_ms.max(gate.opened_ms),
        );
        remember_closed(state, gate.id.clone());
        after_gate_closed(state, &gate.id);
    }
    // What was running stopped with the host (sub-agents, tasks); the root goes on resumed.
    for i in 1..state.tree.nodes.len() {
        if !state.tree.nodes[i].status.is_terminal()
            && state.tree.nodes[i].status != NodeStatus::Idle
        {
            state.tree.set_status(i, NodeStatus::Killed);
            state.tree.nodes[i].ended_ms = Some(stopped_ms);
        }
    }
    if !state.tree.nodes[0].status.is_terminal() {
        state.tree.set_status(0, NodeStatus::Idle);
    }
    let s = &mut state.session;
    s.turn = None;
    s.pid = None;
    s.offline = None;
    state.cancel_sent_ms = None;
    state.cancel_stuck = false;
    state.tree.nodes[0].transcript.push(
        ItemKind::System {
            label: "resumed".into(),
            text: format!(
                "the host stopped unexpectedly at {}; resumed at {}",
                utc_clock(stopped_ms),
                utc_clock(resumed_ms)
            ),
        },
        at,
    );
    if state.focus == Focus::Gate && state.acting_on_shown() {
        state.focus = Focus::Transcript;
    }
}

/// `HH:MM:SS UTC` of a Unix time in milliseconds.
pub fn utc_clock(ms: u64) -> String {
    let s = (ms / 1000) % 86_400;
    format!("{:02}:{:02}:{:02} UTC", s / 3600, s / 60 % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_is_utc_hours_minutes_seconds() {
        assert_eq!(utc_clock(0), "00:00:00 UTC");
        assert_eq!(
            utc_clock(((14 * 60 + 2) * 60 + 7) * 1000 + 999),
            "14:02:07 UTC"
        );
        assert_eq!(utc_clock(86_400_000 + 61_000), "00:01:01 UTC");
    }
}
