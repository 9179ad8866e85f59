//! A session resumed after its host stopped (issue 37): what waited at the crash is shown as
//! not answered and never answered by the resume; the boundary row sits between the history
//! and what the resumed agent says.

use super::*;

#[test]
fn a_crash_answers_nothing_and_draws_the_boundary() {
    let mut s = st();
    ev(&mut s, BackendEvent::Turn(TurnState::Running));
    sub_agent(&mut s, "task-1", None, "explorer");
    open(&mut s, bash("g-1", "rm -rf build"));
    let fx = ev(
        &mut s,
        BackendEvent::HostStopped {
            stopped_ms: ((14 * 60 + 2) * 60) * 1000,
            resumed_ms: ((14 * 60 + 5) * 60) * 1000,
        },
    );
    assert!(fx.is_empty(), "nothing is sent: {fx:?}");
    assert!(s.gates.is_empty(), "the card is gone");
    let audits: Vec<String> = s
        .tree
        .nodes
        .iter()
        .flat_map(|n| n.transcript.items.iter())
        .filter_map(|i| match &i.kind {
            ItemKind::Audit { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        audits,
        ["not answered: the host stopped while this waited: Bash `rm -rf build`"]
    );
    match last(&s, 0) {
        ItemKind::System { label, text } => {
            assert_eq!(label, "resumed");
            assert_eq!(
                text,
                "the host stopped unexpectedly at 14:02:00 UTC; resumed at 14:05:00 UTC"
            );
        }
        other => panic!("{other:?}"),
    }
    let sub = s.tree.get("task-1").unwrap();
    assert_eq!(s.tree.nodes[sub].status, NodeStatus::Killed);
    assert_eq!(s.tree.nodes[0].status, NodeStatus::Idle, "the root goes on");
    assert_eq!(s.session.turn, None);
    // The agent asks again with the same id: a new card, never answered by the old one.
    open(&mut s, bash("g-1", "rm -rf build"));
    assert_eq!(s.gates.len(), 1);
    let fx = ch(&mut s, 'y');
    assert_eq!(
        fx.iter()
            .filter(|e| matches!(e, Effect::Send(_, Command::Answer { .. })))
            .count(),
        1,
        "one answer, by a key: {fx:?}"
    );
}
