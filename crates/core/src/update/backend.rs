//! Applying backend events to the state.

use super::super::gate::{Decision, GateKind};
use super::super::msg::{BackendEvent, Effect, TurnState};
use super::super::state::{Focus, GateUi, State};
use super::super::transcript::{ItemKind, ItemOp, Level, Tone};
use super::super::tree::NodeStatus;
use super::closing::{after_gate_closed, remember_closed};
use super::decide::{audit_text, gate_subject};

pub(super) fn on_event(state: &mut State, event: BackendEvent, at: u64, fx: &mut Vec<Effect>) {
    match event {
        BackendEvent::Started { program, pid } => {
            state.session.program = Some(program);
            state.session.pid = pid;
        }
        BackendEvent::Session(p) => {
            let s = &mut state.session;
            macro_rules! set {
                ($($f:ident),*) => {$( if let Some(v) = p.$f { s.$f = Some(v); } )*};
            }
            set!(session_id, model, permission_mode, cwd, agent_version);
            if let Some(t) = p.tools {
                s.tools = t;
            }
            if let Some(i) = p.interruptible {
                s.interruptible = i;
            }
        }
        BackendEvent::Capabilities(c) => state.session.capabilities = c,
        BackendEvent::NodeOpen { key, parent, patch } => {
            let id = state.tree.open(&key, parent.as_deref(), at);
            state.tree.patch(id, patch, at);
        }
        BackendEvent::NodeUpdate { key, patch } => {
            if let Some(id) = state.tree.get(&key) {
                state.tree.patch(id, patch, at);
            }
        }
        BackendEvent::Item { node, op } => on_item(state, node.as_deref(), op, at),
        BackendEvent::GateOpen(mut gate) => {
            // Mappers without a clock (Claude) leave it unset: the event's time is when it
            // opened (the inbox's age column).
            if gate.opened_ms == 0 {
                gate.opened_ms = at;
            }
            open_gate(state, *gate, fx)
        }
        BackendEvent::GateWithdrawn { id } => {
            if let Some(pos) = state.gates.iter().position(|g| g.id == id) {
                let gate = state.remove_gate(pos).expect("position is in range");
                let node = state.tree.resolve(Some(&gate.node_key));
                let text = format!("withdrawn by the agent: {}", gate_subject(&gate));
                state.tree.nodes[node].transcript.push(
                    ItemKind::Audit {
                        text,
                        tone: Tone::Neutral,
                    },
                    at,
                );
                remember_closed(state, id.clone());
                after_gate_closed(state, &id);
            } else {
                protocol(
                    state,
                    Level::Warn,
                    format!("control_cancel_request for unknown request {id}"),
                    at,
                );
            }
        }
        BackendEvent::Abilities(a) => state.session.abilities = a,
        BackendEvent::Link(l) => state.session.link = Some(l),
        BackendEvent::Blind(b) => state.session.blind = b,
        BackendEvent::GateUpgraded { old, gate } => upgrade_gate(state, &old, *gate, at, fx),
        BackendEvent::GateAnswered { id, decision } => {
            close_answered(state, &id, &decision, true, at)
        }
        BackendEvent::GateClosed { id, decision } => {
            close_answered(state, &id, &decision, false, at)
        }
        BackendEvent::Turn(t) => {
            state.session.turn = Some(t);
            if !state.tree.nodes[0].status.is_terminal() {
                let status = match t {
                    TurnState::Running => NodeStatus::Running,
                    TurnState::RequiresAction => NodeStatus::Waiting,
                    TurnState::Idle | TurnState::AwaitingInput => NodeStatus::Idle,
                };
                state.tree.set_status(0, status);
            }
            if matches!(t, TurnState::Idle | TurnState::AwaitingInput) {
                // A finished turn ends its streaming rows even if the agent never settled them
                // (only the nodes that still stream are visited).
                state.tree.end_turn();
            }
        }
        BackendEvent::Usage {
            input_tokens,
            output_tokens,
            cost_usd,
        } => {
            let s = &mut state.session;
            s.input_tokens += input_tokens;
            s.output_tokens += output_tokens;
            s.cost_usd += cost_usd;
            s.turns += 1;
            state.tree.nodes[0].tokens = s.input_tokens + s.output_tokens;
        }
        BackendEvent::Stderr(line) => {
            let line = if state.sessions.len() > 1 {
                format!("[{}] {line}", state.name())
            } else {
                line
            };
            state.push_log(line)
        }
        BackendEvent::Protocol { level, text } => protocol(state, level, text, at),
        BackendEvent::Exited {
            code,
            detail,
            stderr_tail,
        } => {
            let ok = code == Some(0);
            let text = if stderr_tail.is_empty() {
                format!("agent exited: {detail}")
            } else {
                format!(
                    "agent exited: {detail}\nstderr (last lines):\n{}",
                    stderr_tail.join("\n")
                )
            };
            state.tree.nodes[0].transcript.push(
                ItemKind::Protocol {
                    level: if ok { Level::Info } else { Level::Error },
                    text,
                },
                at,
            );
            if !state.tree.nodes[0].status.is_terminal() {
                let status = if ok {
                    NodeStatus::Completed
                } else {
                    NodeStatus::Failed
                };
                state.tree.set_status(0, status);
                state.tree.nodes[0].ended_ms = Some(at);
            }
            // Nothing can answer these any more: close them so nobody tries.
            let ids: Vec<String> = state.gates.iter().map(|g| g.id.clone()).collect();
            for id in ids {
                if let Some(pos) = state.gates.iter().position(|g| g.id == id) {
                    let gate = state.remove_gate(pos).expect("position is in range");
                    let node = state.tree.resolve(Some(&gate.node_key));
                    state.tree.nodes[node].transcript.push(
                        ItemKind::Audit {
                            text: format!("closed, the agent exited: {}", gate_subject(&gate)),
                            tone: Tone::Neutral,
                        },
                        at,
                    );
                    remember_closed(state, id.clone());
                    after_gate_closed(state, &id);
                }
            }
            state.session.exited = Some((code, detail, stderr_tail));
            state.session.turn = None;
            if state.focus == Focus::Gate && state.acting_on_shown() {
                state.focus = Focus::Transcript;
            }
        }
        BackendEvent::Connection { online, detail } => {
            let was_offline = state.session.offline.is_some();
            state.session.offline = (!online).then(|| {
                let d = crate::text::one_line(&detail, 80);
                if d.is_empty() {
                    "reconnecting".into()
                } else {
                    d
                }
            });
            if online && was_offline {
                // The cards' "offline" refusals are over.
                for ui in state.gate_ui.values_mut() {
                    if ui
                        .error
                        .as_deref()
                        .is_some_and(|e| e.starts_with("offline:"))
                    {
                        ui.error = None;
                    }
                }
                rules_after_reconnect(state, fx);
            }
        }
        BackendEvent::HostStopped {
            stopped_ms,
            resumed_ms,
        } => super::resumed::host_stopped(state, stopped_ms, resumed_ms, at),
        BackendEvent::Recording(path) => state.session.recording = Some(path),
        BackendEvent::RecordingFailed(why) => state.session.recording_failed = Some(why),
        BackendEvent::Info { key, value } => {
            let info = &mut state.session.info;
            let pos = info.iter().position(|(k, _)| *k == key);
            match (pos, value) {
                (Some(i), Some(v)) => info[i].1 = v,
                (None, Some(v)) => info.push((key, v)),
                (Some(i), None) => {
                    info.remove(i);
                }
                (None, None) => {}
            }
        }
        BackendEvent::Queue(q) => super::queue::replaced(state, q),
        BackendEvent::HarnessHost(h) => state.harness_host = h,
        // Handled by `update` (it selects a session, which `with_session` would undo).
        BackendEvent::Reveal => {}
    }
}

/// A row operation on node `node` (the root when absent or unknown).
pub(super) fn on_item(state: &mut State, node: Option<&str>, op: ItemOp, at: u64) {
    let id = state.tree.resolve(node);
    state.tree.apply(id, op, at);
}

/// Close a gate answered elsewhere (in a recording, or by the backend itself) with an audit row.
fn close_answered(state: &mut State, id: &str, decision: &Decision, recorded: bool, at: u64) {
    let Some(pos) = state.gates.iter().position(|g| g.id == id) else {
        return;
    };
    let gate = state.remove_gate(pos).expect("position is in range");
    let (text, tone) = audit_text(&gate, decision);
    let node = state.tree.resolve(Some(&gate.node_key));
    let text = if recorded {
        format!("{text} (recorded)")
    } else {
        text
    };
    state.tree.nodes[node]
        .transcript
        .push(ItemKind::Audit { text, tone }, at);
    remember_closed(state, id.to_string());
    after_gate_closed(state, id);
    state.answered += 1;
}

fn protocol(state: &mut State, level: Level, text: String, at: u64) {
    let line = if state.sessions.len() > 1 {
        format!("[{}] protocol: {text}", state.name())
    } else {
        format!("protocol: {text}")
    };
    state.push_log(line);
    state.tree.nodes[0]
        .transcript
        .push(ItemKind::Protocol { level, text }, at);
}

fn open_gate(state: &mut State, gate: super::super::gate::Gate, fx: &mut Vec<Effect>) {
    if state.gate(&gate.id).is_some() {
        // Never replace or answer twice: keep the first gate.
        protocol(
            state,
            Level::Error,
            format!(
                "duplicate request_id {} while its gate is open; kept the first",
                gate.id
            ),
            gate.opened_ms,
        );
        return;
    }
    if state.closed_gates.contains(&gate.id) {
        // Pending again: a gate is open or closed, never both.
        state.closed_gates.remove(&gate.id);
        protocol(
            state,
            Level::Warn,
            format!("request_id {} reused after it was answered", gate.id),
            gate.opened_ms,
        );
    }
    let node = state.tree.resolve(Some(&gate.node_key));
    if state.tree.nodes[node].status == NodeStatus::Pending {
        state.tree.set_status(node, NodeStatus::Running);
    }
    if state.closed {
        // A late request from a session being closed: it gets its exit answer at once.
        let mut ui = GateUi::for_gate(&gate);
        ui.seq = state.next_gate_seq();
        let id = gate.id.clone();
        let decision = super::super::gate::Decision::on_exit(&gate.kind);
        state.push_gate(gate, ui);
        if state.keeps_gates_on_quit {
            leave_pending(state, &id);
        } else {
            fx.push(Effect::Send(
                state.sid(),
                super::super::msg::Command::Note(format!(
                    "close: {id} came after the session was closed"
                )),
            ));
            fx.extend(super::decide::answer(state, &id, decision));
        }
        return;
    }
    // Offline, nothing can be sent: rules wait for the connection (if the gate is still
    // held after the re-read).
    let offline = state.session.offline.is_some();
    let mut ui = GateUi::for_gate(&gate);
    ui.seq = state.next_gate_seq();
    ui.rules_later = offline;
    let id = gate.id.clone();
    state.push_gate(gate, ui);
    if !offline && auto_answer(state, &id, fx) {
        return;
    }
    if !state.acting_on_shown() {
        // A background session never takes the keyboard: its card waits for `g`, `]` or the
        // inbox. The bell rings once per burst of background gates.
        state.active_gate.get_or_insert(id);
        let quiet = state
            .last_background_bell_ms
            .is_some_and(|t| state.now_ms.saturating_sub(t) < BACKGROUND_BELL_BURST_MS);
        if state.settings.bell && !quiet {
            fx.push(Effect::Bell);
        }
        state.last_background_bell_ms = Some(state.now_ms);
        return;
    }
    if state.settings.bell {
        fx.push(Effect::Bell);
    }
    let typing = (state.focus == Focus::Prompt
        && (!state.prompt.is_empty() || state.typed_since_send))
        || state.active_ui().is_some_and(|ui| ui.editor.is_some());
    if state.active().is_none() {
        state.active_gate = Some(id);
        if !typing && state.overlay.is_none() {
            state.focus = Focus::Gate;
            state.selected_node = node;
            state.selected_item = None;
            state.scroll_back = 0;
        }
    }
}

/// Pending gate `old` becomes `gate`, in place: the same arrival (inbox order, `g`, the
/// session's queue), the focus it had, one audit row saying what happened; rules look at
/// the new card (an excerpt matched none). Not pending (answered meanwhile): a new card.
fn upgrade_gate(
    state: &mut State,
    old: &str,
    mut gate: super::super::gate::Gate,
    at: u64,
    fx: &mut Vec<Effect>,
) {
    let Some(pos) = state.gates.iter().position(|g| g.id == old) else {
        return open_gate(state, gate, fx);
    };
    if gate.opened_ms == 0 {
        gate.opened_ms = at;
    }
    let seq = state.gate_ui.get(old).map(|ui| ui.seq);
    let prev = state.remove_gate(pos).expect("position is in range");
    remember_closed(state, old.to_string());
    let node = state.tree.resolve(Some(&prev.node_key));
    state.tree.nodes[node].transcript.push(
        ItemKind::Audit {
            text: format!("full arguments arrived: {}", gate_subject(&gate)),
            tone: Tone::Neutral,
        },
        at,
    );
    let offline = state.session.offline.is_some();
    let mut ui = GateUi::for_gate(&gate);
    ui.seq = seq.unwrap_or_else(|| state.next_gate_seq());
    ui.rules_later = offline;
    let id = gate.id.clone();
    state.push_gate(gate, ui);
    if let Some(g) = state.gates.pop_back() {
        state.gates.insert(pos, g);
    }
    if state.active_gate.as_deref() == Some(old) {
        state.active_gate = Some(id.clone());
    }
    if !offline {
        auto_answer(state, &id, fx);
    }
}

/// A rule's answer for gate `id`, or an earlier approval that covers it: answered at once
/// (no bell, no focus change, an audit row naming the rule). False when the person decides.
fn auto_answer(state: &mut State, id: &str, fx: &mut Vec<Effect>) -> bool {
    let Some(gate) = state.gate(id).cloned() else {
        return false;
    };
    if let Some((decision, rule)) = super::rules::decide(state, &gate) {
        fx.extend(super::decide::answer_by_rule(state, id, decision, &rule));
        return true;
    }
    // Covered by an earlier approval (and no deny rule, seen above): allowed without a card,
    // unless an ask rule wants the person to see it.
    if let GateKind::Permission(p) = &gate.kind
        && let Some(why) = p.covered_by.clone()
        && !super::rules::asks(state, p)
    {
        fx.extend(super::decide::answer_covered(state, id, &why));
        return true;
    }
    false
}

/// Back online: the gates that opened while offline and are still held after the re-read
/// get the rules they missed.
fn rules_after_reconnect(state: &mut State, fx: &mut Vec<Effect>) {
    let ids: Vec<String> = state
        .gates
        .iter()
        .filter(|g| state.gate_ui.get(&g.id).is_some_and(|ui| ui.rules_later))
        .map(|g| g.id.clone())
        .collect();
    for id in ids {
        if let Some(ui) = state.gate_ui.get_mut(&id) {
            ui.rules_later = false;
        }
        auto_answer(state, &id, fx);
    }
}

/// Take gate `id` off the screen without answering it: it stays pending where it lives.
pub(super) fn leave_pending(state: &mut State, id: &str) {
    let Some(pos) = state.gates.iter().position(|g| g.id == id) else {
        return;
    };
    let gate = state.remove_gate(pos).expect("position is in range");
    let node = state.tree.resolve(Some(&gate.node_key));
    let at = state.now_ms;
    state.tree.nodes[node].transcript.push(
        ItemKind::Audit {
            text: format!("left pending on the engine: {}", gate_subject(&gate)),
            tone: Tone::Neutral,
        },
        at,
    );
    remember_closed(state, id.to_string());
    after_gate_closed(state, id);
}

/// Background gates closer together than this ring the bell once.
pub const BACKGROUND_BELL_BURST_MS: u64 = 2_000;

#[cfg(test)]
mod linear_tests {
    use crate::msg::{BackendEvent, TurnState};
    use crate::transcript::{ItemKind, ItemOp};
    use crate::{Msg, State, update};

    fn ev(s: &mut State, node: Option<&str>, op: ItemOp) {
        let _ = update(
            s,
            Msg::Backend {
                session: crate::state::SessionId::FIRST,
                at_ms: 0,
                event: BackendEvent::Item {
                    node: node.map(str::to_string),
                    op,
                },
            },
        );
    }

    fn turn_end(s: &mut State) {
        let _ = update(
            s,
            Msg::Backend {
                session: crate::state::SessionId::FIRST,
                at_ms: 0,
                event: BackendEvent::Turn(TurnState::Idle),
            },
        );
    }

    /// A turn end visits the nodes that still stream and their live rows, whatever came
    /// before: 100k earlier messages over 1,000 sub-agents cost it nothing.
    #[test]
    fn turn_end_cost_is_independent_of_history() {
        let mut s = State::new(crate::BackendKind::Claude, "main", 0);
        for a in 0..1000 {
            let _ = update(
                &mut s,
                Msg::Backend {
                    session: crate::state::SessionId::FIRST,
                    at_ms: 0,
                    event: BackendEvent::NodeOpen {
                        key: format!("agent{a}"),
                        parent: None,
                        patch: Default::default(),
                    },
                },
            );
        }
        for m in 0..100_000 {
            let node = format!("agent{}", m % 1000);
            let node = (m % 2 == 0).then_some(node.as_str());
            ev(
                &mut s,
                node,
                ItemOp::AppendText {
                    key: format!("m{m}#0"),
                    thinking: false,
                    delta: "x".into(),
                },
            );
            ev(
                &mut s,
                node,
                ItemOp::Push(ItemKind::User { text: "y".into() }),
            );
            if m % 100 == 99 {
                turn_end(&mut s);
            }
        }
        // One stream left live on one sub-agent.
        ev(
            &mut s,
            Some("agent7"),
            ItemOp::AppendText {
                key: "last#0".into(),
                thinking: false,
                delta: "z".into(),
            },
        );
        let id = s.tree.get("agent7").unwrap();
        let nodes_before = s.tree.visits();
        let rows_before: u64 = s.tree.nodes.iter().map(|n| n.transcript.visits()).sum();
        turn_end(&mut s);
        let rows_after: u64 = s.tree.nodes.iter().map(|n| n.transcript.visits()).sum();
        assert_eq!(s.tree.visits() - nodes_before, 1, "one live node visited");
        assert_eq!(rows_after - rows_before, 1, "one live row visited");
        assert!(!s.tree.nodes[id].transcript.has_streaming());
        // A second turn end with nothing live visits nothing.
        turn_end(&mut s);
        assert_eq!(s.tree.visits() - nodes_before, 1);
    }
}
