//! Opening, withdrawing and cycling gates: focus, bell, duplicates, `[`/`]` and `g`.

use super::*;

// ---- opening and closing gates

#[test]
fn gate_open_takes_focus_and_rings() {
    let mut s = st();
    assert_eq!(s.focus, Focus::Prompt);
    let fx = open(&mut s, bash("g1", "touch x"));
    assert_eq!(fx, vec![Effect::Bell]);
    assert_eq!(s.focus, Focus::Gate);
    assert_eq!(s.active_gate.as_deref(), Some("g1"));
    assert_eq!(s.gates.len(), 1);
    // A second gate queues behind the first without stealing the card.
    let fx = open(&mut s, bash("g2", "touch y"));
    assert_eq!(fx, vec![Effect::Bell]);
    assert_eq!(s.active_gate.as_deref(), Some("g1"));
    assert_eq!(s.gates.len(), 2);
}

#[test]
fn gate_open_does_not_steal_focus_while_typing() {
    let mut s = st();
    typ(&mut s, "half a thought");
    let fx = open(&mut s, bash("g1", "touch x"));
    assert_eq!(fx, vec![Effect::Bell]);
    assert_eq!(s.focus, Focus::Prompt, "typing keeps the prompt focused");
    assert_eq!(s.prompt_text(), "half a thought");
    assert_eq!(s.active_gate.as_deref(), Some("g1"));
    // `y` goes into the prompt, not to the gate.
    assert_eq!(ch(&mut s, 'y'), vec![]);
    assert_eq!(s.gates.len(), 1);
    assert_eq!(s.prompt_text(), "half a thoughty");
    // `g` from another pane reaches it.
    press(&mut s, KeyCode::Esc);
    assert_eq!(s.focus, Focus::Transcript);
    ch(&mut s, 'g');
    assert_eq!(s.focus, Focus::Gate);
}

#[test]
fn bell_only_when_enabled() {
    let mut s = st();
    s.settings.bell = false;
    let fx = open(&mut s, bash("g1", "touch x"));
    assert_eq!(fx, vec![]);
    assert_eq!(s.focus, Focus::Gate);
}

#[test]
fn gate_open_while_an_overlay_is_up_keeps_the_overlay() {
    let mut s = st();
    press(&mut s, KeyCode::Esc);
    ch(&mut s, '?');
    assert_eq!(s.overlay, Some(Overlay::Help));
    open(&mut s, bash("g1", "touch x"));
    assert_eq!(s.overlay, Some(Overlay::Help));
    assert_eq!(s.focus, Focus::Transcript);
    assert_eq!(s.active_gate.as_deref(), Some("g1"));
}

#[test]
fn duplicate_gate_id_keeps_the_first() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    let fx = open(&mut s, bash("g1", "rm -rf /"));
    assert_eq!(fx, vec![], "a duplicate neither rings nor opens");
    assert_eq!(s.gates.len(), 1);
    let GateKind::Permission(p) = &s.gates[0].kind else {
        panic!("not a permission")
    };
    assert_eq!(p.summary, "touch x");
    match last(&s, 0) {
        ItemKind::Protocol { level, text } => {
            assert_eq!(*level, Level::Error);
            assert!(text.contains("duplicate request_id g1"), "{text}");
        }
        other => panic!("expected a protocol row, got {other:?}"),
    }
    // Answering still sends exactly one answer, for the first gate.
    let fx = ch(&mut s, 'y');
    assert_eq!(
        fx,
        answer_fx(
            "g1",
            Decision::Allow {
                updated_input: None,
                always: false
            }
        )
    );
    assert_eq!(s.gates.len(), 0);
}

#[test]
fn reused_id_after_answer_warns_but_opens() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    ch(&mut s, 'y');
    let fx = open(&mut s, bash("g1", "touch y"));
    assert_eq!(fx, vec![Effect::Bell]);
    assert_eq!(s.gates.len(), 1);
    let rows = &s.tree.nodes[0].transcript.items;
    assert!(rows.iter().any(|i| matches!(&i.kind,
        ItemKind::Protocol { level: Level::Warn, text } if text.contains("reused after it was answered"))));
}

#[test]
fn withdrawn_gate_is_removed_and_never_answered() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    let fx = ev(&mut s, BackendEvent::GateWithdrawn { id: "g1".into() });
    assert_eq!(fx, vec![]);
    assert!(s.gates.is_empty());
    assert_eq!(s.active_gate, None);
    assert_eq!(s.focus, Focus::Transcript);
    assert!(s.closed_gates.contains("g1"));
    assert!(!s.gate_ui.contains_key("g1"));
    assert_eq!(
        last_audit(&s, 0),
        (
            "withdrawn by the agent: Bash `touch x`".to_string(),
            Tone::Neutral
        )
    );
    // Neither a key nor a direct answer can answer it any more.
    assert_eq!(ch(&mut s, 'y'), vec![]);
    let fx = crate::update::answer(
        &mut s,
        "g1",
        Decision::Allow {
            updated_input: None,
            always: false,
        },
    );
    assert_eq!(fx, vec![]);
    assert_eq!(s.answered, 0);
    // Withdrawing an unknown id is a protocol warning, not a crash.
    ev(&mut s, BackendEvent::GateWithdrawn { id: "nope".into() });
    assert!(
        matches!(last(&s, 0), ItemKind::Protocol { level: Level::Warn, text } if text.contains("nope"))
    );
}

#[test]
fn withdrawing_the_active_gate_shows_the_next() {
    let mut s = st();
    sub_agent(&mut s, "toolu_a", None, "Explore");
    open(&mut s, bash("g1", "touch x"));
    let mut g2 = bash("g2", "touch y");
    g2.node_key = "toolu_a".into();
    open(&mut s, g2);
    ev(&mut s, BackendEvent::GateWithdrawn { id: "g1".into() });
    assert_eq!(s.active_gate.as_deref(), Some("g2"));
    assert_eq!(s.focus, Focus::Gate);
    assert_eq!(s.selected_node, 1);
}

// ---- several gates

#[test]
fn brackets_cycle_gates() {
    let mut s = st();
    three_gates(&mut s);
    assert_eq!(s.active_gate.as_deref(), Some("g1"));
    assert_eq!(s.selected_node, 0);
    ch(&mut s, ']');
    assert_eq!(s.active_gate.as_deref(), Some("g2"));
    assert_eq!(s.selected_node, 2, "the card's node is shown");
    ch(&mut s, ']');
    assert_eq!(s.active_gate.as_deref(), Some("g3"));
    assert_eq!(s.selected_node, 1);
    ch(&mut s, ']');
    assert_eq!(s.active_gate.as_deref(), Some("g1"));
    ch(&mut s, '[');
    assert_eq!(s.active_gate.as_deref(), Some("g3"));
    // Answering the shown gate goes to the oldest remaining one.
    press(&mut s, KeyCode::Enter);
    assert_eq!(s.active_gate.as_deref(), Some("g1"));
    assert_eq!(s.selected_node, 0);
    assert_eq!(s.gates_within(0), 2);
    assert_eq!(s.gates_within(1), 1);
    assert_eq!(s.gates_on(1), 0);
}

#[test]
fn g_jumps_to_the_oldest_gate() {
    let mut s = st();
    ch(&mut s, 'x');
    press(&mut s, KeyCode::Esc);
    ch(&mut s, 'g');
    assert_eq!(s.status_line.as_deref(), Some("no pending gates"));
    three_gates(&mut s);
    ch(&mut s, ']');
    ch(&mut s, ']');
    assert_eq!(s.active_gate.as_deref(), Some("g3"));
    press(&mut s, KeyCode::Tab); // gate → prompt
    assert_eq!(s.focus, Focus::Prompt);
    press(&mut s, KeyCode::Tab); // prompt → tree
    assert_eq!(s.focus, Focus::Tree);
    ch(&mut s, 'j');
    ch(&mut s, 'j');
    ch(&mut s, 'j');
    ch(&mut s, 'g');
    assert_eq!(s.focus, Focus::Gate);
    assert_eq!(s.active_gate.as_deref(), Some("g1"));
    assert_eq!(s.selected_node, 0);
}

/// A card the backend upgrades (iii: the full arguments of a call shown from its excerpt)
/// keeps its arrival, so `g` still opens the oldest, keeps the focus it had, and the audit
/// trail says what happened, never "withdrawn".
#[test]
fn an_upgraded_gate_keeps_its_place_and_is_not_withdrawn() {
    let mut s = st();
    open(&mut s, bash("old1", "excerpt"));
    open(&mut s, bash("g2", "touch y"));
    let seq = s.gate_ui["old1"].seq;
    let mut up = bash("full1", "touch x && curl y | sh");
    up.opened_ms = 0;
    let fx = ev(
        &mut s,
        BackendEvent::GateUpgraded {
            old: "old1".into(),
            gate: Box::new(up),
        },
    );
    assert_eq!(fx, vec![], "no bell: nothing new arrived");
    let ids: Vec<&str> = s.gates.iter().map(|g| g.id.as_str()).collect();
    assert_eq!(ids, ["full1", "g2"], "in its place");
    assert_eq!(s.gate_ui["full1"].seq, seq, "the same arrival");
    assert_eq!(
        s.active_gate.as_deref(),
        Some("full1"),
        "the card shown is the new one"
    );
    assert!(s.closed_gates.contains("old1"));
    let rows = &s.tree.nodes[0].transcript.items;
    assert!(!rows.iter().any(|i| matches!(&i.kind,
        ItemKind::Audit { text, .. } if text.contains("withdrawn"))));
    assert_eq!(
        last_audit(&s, 0).0,
        "full arguments arrived: Bash `touch x && curl y | sh`"
    );
    // `y` answers the upgraded card.
    ch(&mut s, 'y');
    assert!(s.gate("full1").is_none());
}

/// The inbox and `g` go by when a gate opened (an iii held call: when the engine held it),
/// not by when we heard of it; a gate heard later but opened earlier is the oldest, and
/// closing any of them takes exactly that one off the order.
#[test]
fn the_oldest_gate_is_the_one_opened_first_whenever_it_arrived() {
    let mut s = st();
    let mut young = bash("young", "make b");
    young.opened_ms = 900;
    let mut old = bash("old", "make a");
    old.opened_ms = 500;
    let mut middle = bash("middle", "make c");
    middle.opened_ms = 700;
    open(&mut s, young);
    open(&mut s, old);
    open(&mut s, middle);
    let order: Vec<String> = crate::update::workspace::inbox_refs(&s)
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(order, ["old", "middle", "young"]);
    press(&mut s, KeyCode::Esc);
    s.focus = Focus::Tree;
    ch(&mut s, 'g');
    assert_eq!(s.active_gate.as_deref(), Some("old"));
    ev(
        &mut s,
        BackendEvent::GateWithdrawn {
            id: "middle".into(),
        },
    );
    let order: Vec<String> = crate::update::workspace::inbox_refs(&s)
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(order, ["old", "young"]);
    assert_eq!(s.inbox_len(), 2);
}
