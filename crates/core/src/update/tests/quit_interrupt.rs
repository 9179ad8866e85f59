//! Quitting with gates pending, Ctrl-C interrupts and the agent exiting.

use super::*;

// ---- quitting

#[test]
fn quit_with_gates_pending_asks_then_answers_each() {
    let mut s = st();
    three_gates(&mut s);
    open(&mut s, ticket_form("g4"));
    open(&mut s, question("g5", questions_input()));
    assert_eq!(ch(&mut s, 'q'), vec![]);
    assert_eq!(s.overlay, Some(Overlay::ConfirmQuit));
    assert_eq!(ch(&mut s, 'n'), vec![]);
    assert_eq!(s.overlay, None);
    assert_eq!(s.gates.len(), 5);
    assert_eq!(ctrl(&mut s, 'd'), vec![]);
    assert_eq!(s.overlay, Some(Overlay::ConfirmQuit));
    let fx = ch(&mut s, 'y');
    let exited = "switchboard exited".to_string();
    assert_eq!(
        fx,
        vec![
            Effect::Send(
                crate::state::SessionId::FIRST,
                Command::Answer {
                    gate_id: "g1".into(),
                    decision: Decision::Deny {
                        message: exited.clone(),
                        interrupt: false
                    }
                }
            ),
            Effect::Send(
                crate::state::SessionId::FIRST,
                Command::Answer {
                    gate_id: "g2".into(),
                    decision: Decision::Block {
                        reason: exited.clone()
                    }
                }
            ),
            Effect::Send(
                crate::state::SessionId::FIRST,
                Command::Answer {
                    gate_id: "g3".into(),
                    decision: Decision::DialogCancel
                }
            ),
            Effect::Send(
                crate::state::SessionId::FIRST,
                Command::Answer {
                    gate_id: "g4".into(),
                    decision: Decision::ElicitCancel
                }
            ),
            Effect::Send(
                crate::state::SessionId::FIRST,
                Command::Answer {
                    gate_id: "g5".into(),
                    decision: Decision::Deny {
                        message: exited.clone(),
                        interrupt: false
                    }
                }
            ),
            Effect::Send(crate::state::SessionId::FIRST, Command::Shutdown),
            Effect::Quit,
        ]
    );
    assert!(s.quitting);
    assert!(s.gates.is_empty());
    assert_eq!(s.answered, 5);
}

/// A request that crosses the quit (the agent sent it while being stopped) gets its exit
/// answer at once: every request gets exactly one final answer.
#[test]
fn a_request_arriving_while_quitting_is_answered_at_once() {
    let mut s = st();
    assert_eq!(
        ctrl(&mut s, 'd'),
        vec![
            Effect::Send(crate::state::SessionId::FIRST, Command::Shutdown),
            Effect::Quit
        ]
    );
    let fx = open(&mut s, bash("late", "rm -rf build"));
    assert!(
        fx.iter().any(|e| matches!(
            e,
            Effect::Send(_, Command::Answer { gate_id, decision: Decision::Deny { .. } })
                if gate_id == "late"
        )),
        "{fx:?}"
    );
    assert!(s.gates.is_empty(), "nothing left waiting");
}

#[test]
fn quit_without_gates_is_immediate() {
    let mut s = st();
    assert_eq!(
        ctrl(&mut s, 'd'),
        vec![
            Effect::Send(crate::state::SessionId::FIRST, Command::Shutdown),
            Effect::Quit
        ]
    );
    let mut s = st();
    press(&mut s, KeyCode::Esc);
    assert_eq!(
        ch(&mut s, 'q'),
        vec![
            Effect::Send(crate::state::SessionId::FIRST, Command::Shutdown),
            Effect::Quit
        ]
    );
    // In the prompt, `q` is text.
    let mut s = st();
    assert_eq!(ch(&mut s, 'q'), vec![]);
    assert_eq!(s.prompt_text(), "q");
}

#[test]
fn quit_after_the_agent_exited_only_leaves() {
    let mut s = st();
    ev(
        &mut s,
        BackendEvent::Exited {
            code: Some(0),
            detail: "exit code 0".into(),
            stderr_tail: vec![],
        },
    );
    assert_eq!(ctrl(&mut s, 'd'), vec![Effect::Quit]);
}

// ---- interrupt

#[test]
fn ctrl_c_interrupts_only_a_running_interruptible_turn() {
    let mut s = st();
    assert_eq!(ctrl(&mut s, 'c'), vec![]);
    assert!(
        s.status_line
            .as_deref()
            .unwrap()
            .contains("nothing to interrupt")
    );
    running(&mut s, false);
    assert_eq!(ctrl(&mut s, 'c'), vec![]);
    assert!(
        s.status_line
            .as_deref()
            .unwrap()
            .contains("cannot take an interrupt")
    );
    running(&mut s, true);
    assert_eq!(
        ctrl(&mut s, 'c'),
        vec![Effect::Send(
            crate::state::SessionId::FIRST,
            Command::Interrupt
        )]
    );
    ev(&mut s, BackendEvent::Turn(TurnState::RequiresAction));
    assert_eq!(
        ctrl(&mut s, 'c'),
        vec![Effect::Send(
            crate::state::SessionId::FIRST,
            Command::Interrupt
        )]
    );
    // Even inside an editor.
    open(&mut s, bash("g1", "touch x"));
    ch(&mut s, 'n');
    assert_eq!(
        ctrl(&mut s, 'c'),
        vec![Effect::Send(
            crate::state::SessionId::FIRST,
            Command::Interrupt
        )]
    );
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::DenyMessage));
    ev(&mut s, BackendEvent::Turn(TurnState::Idle));
    assert_eq!(ctrl(&mut s, 'c'), vec![]);
    ev(
        &mut s,
        BackendEvent::Exited {
            code: Some(0),
            detail: "exit code 0".into(),
            stderr_tail: vec![],
        },
    );
    running(&mut s, true);
    assert_eq!(ctrl(&mut s, 'c'), vec![]);
    assert!(s.status_line.as_deref().unwrap().contains("has exited"));
}

// ---- agent exit

#[test]
fn agent_exit_closes_gates() {
    let mut s = st();
    three_gates(&mut s);
    let fx = ev(
        &mut s,
        BackendEvent::Exited {
            code: Some(1),
            detail: "exit code 1".into(),
            stderr_tail: vec!["boom".into()],
        },
    );
    assert_eq!(fx, vec![], "nothing is answered: the agent is gone");
    assert!(s.gates.is_empty());
    assert_eq!(s.active_gate, None);
    assert_ne!(s.focus, Focus::Gate);
    for id in ["g1", "g2", "g3"] {
        assert!(s.closed_gates.contains(id));
    }
    assert_eq!(s.tree.nodes[0].status, NodeStatus::Failed);
    assert_eq!(
        last_audit(&s, 0).0,
        "closed, the agent exited: Bash `touch x`"
    );
    assert_eq!(
        last_audit(&s, 2).0,
        "closed, the agent exited: Grep `fn authenticate in src`"
    );
    assert!(s.tree.nodes[0].transcript.items.iter().any(|i| matches!(&i.kind,
        ItemKind::Protocol { level: Level::Error, text } if text.contains("agent exited: exit code 1") && text.contains("boom"))));
    assert_eq!(s.session.turn, None);
    // The prompt refuses to send.
    while s.focus != Focus::Prompt {
        press(&mut s, KeyCode::Tab);
    }
    typ(&mut s, "hello?");
    assert_eq!(press(&mut s, KeyCode::Enter), vec![]);
    assert!(s.status_line.as_deref().unwrap().contains("has exited"));
}
