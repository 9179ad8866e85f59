//! Gate jumps, gate cards with the recorded answer, and answer keys that do nothing in a replay.

use super::*;

/// `]` stops exactly on each frame that opens a gate, with that gate pending and its card
/// showing the recorded answer; `[` walks them back.
#[test]
fn gate_jumps_stop_at_each_gate_and_show_the_recorded_answer() {
    let mut files = ours();
    files.extend(cassettes().unwrap_or_default());
    for path in files {
        let name = stem(&path);
        let mut p = sized(&path);
        let loaded = load(&path, None).unwrap();
        let want = gate_positions(&loaded);
        let replies = replied(&loaded);
        press(&mut p, KeyCode::Home);
        for (pos, id) in &want {
            ch(&mut p, ']');
            assert_eq!(frame(&p), *pos, "{name}: `]` stops on the gate's frame");
            let s = p.state();
            assert!(
                s.gates.iter().any(|g| &g.id == id),
                "{name}: gate {id} pending at {pos}"
            );
            assert_eq!(s.focus, Focus::Gate, "{name}: the new gate takes focus");
            let active = s.active_gate.clone().expect("a gate card");
            let answer = s.replay.as_ref().unwrap().answers.get(&active).cloned();
            assert_eq!(
                answer.is_some(),
                replies.contains(&active),
                "{name}: recorded answer of {active}"
            );
            let text = screen(s, 120, 40);
            match answer {
                Some(a) => {
                    let head: String = a.chars().take(40).collect();
                    assert!(
                        text.contains(&format!("recorded answer: {head}")),
                        "{name}: card of {active} should show {a:?}:\n{text}"
                    );
                }
                None => assert!(!text.contains("recorded answer"), "{name}:\n{text}"),
            }
            assert!(
                text.contains(&format!("frame {pos}/{}", p.total())),
                "{name}: footer\n{text}"
            );
        }
        let last = frame(&p);
        ch(&mut p, ']');
        if want.last().is_some_and(|(pos, _)| *pos == last) || want.is_empty() {
            assert_eq!(frame(&p), last, "{name}: no later gate");
            assert_eq!(p.state().status_line.as_deref(), Some("no later gate"));
        }
        press(&mut p, KeyCode::End);
        for (pos, _) in want.iter().rev() {
            ch(&mut p, '[');
            assert_eq!(frame(&p), *pos, "{name}: `[` goes back to the gate");
        }
        let first = frame(&p);
        ch(&mut p, '[');
        assert_eq!(frame(&p), first, "{name}: no earlier gate");
        assert_eq!(p.state().status_line.as_deref(), Some("no earlier gate"));
    }
}

#[test]
fn gate_cards_show_what_was_answered_and_when() {
    let mut p = sized(&our("bash_write"));
    let want = [
        "denied: Not in this directory, please. at 1970-01-01T00:00:00.627Z",
        "allowed once at 1970-01-01T00:00:00.794Z",
        "allowed always at 1970-01-01T00:00:00.963Z",
    ];
    for (turn, w) in want.iter().enumerate() {
        ch(&mut p, ']');
        let text = screen(p.state(), 120, 40);
        assert!(text.contains(&format!("recorded answer: {w}")), "{text}");
        // The transcript so far: one user turn, one Bash call and one audit row per earlier
        // gate; the gate itself is pending on the root.
        let s = p.state();
        let items = &s.tree.nodes[0].transcript.items;
        let users = items
            .iter()
            .filter(|i| matches!(i.kind, ItemKind::User { .. }))
            .count();
        let calls: Vec<&str> = items
            .iter()
            .filter_map(|i| match &i.kind {
                ItemKind::ToolCall { name, summary, .. } => {
                    assert_eq!(summary, "touch created.txt");
                    Some(name.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(users, turn + 1);
        assert_eq!(calls, vec!["Bash"; turn + 1]);
        assert_eq!(audits(s, 0).len(), turn);
        assert_eq!(s.gates.len(), 1);
        assert_eq!(s.gates[0].node_key, "root");
        assert_eq!(s.gates[0].kind.label(), "permission");
    }
    // A sub-agent's gate opens on the child, in a tree of three.
    let mut p = sized(&our("subagents"));
    ch(&mut p, ']');
    let s = p.state();
    assert_eq!(s.tree.nodes.len(), 3);
    let a = s.tree.get("toolu_agent_a").unwrap();
    assert_eq!(s.gates[0].node_key, "toolu_agent_a");
    assert_eq!(s.tree.nodes[a].status, NodeStatus::Running);
    assert_eq!(s.tree.nodes[a].parent, Some(0));
    let text = screen(s, 120, 40);
    assert!(
        text.contains("recorded answer: allowed once at 1970-01-01T00:00:00.383Z"),
        "{text}"
    );
    let mut p = sized(&our("breakpoint"));
    for w in [
        "blocked: Stepping through, not yet. at 1970-01-01T00:00:00.756Z",
        "continued at 1970-01-01T00:00:00.820Z",
    ] {
        ch(&mut p, ']');
        let text = screen(p.state(), 120, 40);
        assert!(text.contains(&format!("recorded answer: {w}")), "{text}");
    }
    if let Some(c) = cassette("cowork-multiselect-gate.agent-2.1.238") {
        let mut p = sized(&c);
        ch(&mut p, ']');
        let text = screen(p.state(), 120, 40);
        assert!(
            text.contains(
                "recorded answer: Which features should be enabled? = Auth, Audit at no recorded time"
            ),
            "{text}"
        );
    }
}

/// Keys that answer a gate live do nothing in a replay: not on the card, not elsewhere.
#[test]
fn answer_keys_change_nothing_in_replay() {
    let mut cases: Vec<(PathBuf, usize)> = vec![
        (our("bash_write"), 1),      // permission
        (our("ask_multiselect"), 1), // question
        (our("breakpoint"), 1),      // breakpoint
        (our("parallel_reads"), 3),  // three pending permissions
    ];
    if let Some(c) = cassette("cowork-multiselect-gate.agent-2.1.238") {
        cases.push((c, 1));
    }
    let keys = [
        KeyCode::Char('y'),
        KeyCode::Char('n'),
        KeyCode::Enter,
        KeyCode::Char('a'),
        KeyCode::Char('N'),
        KeyCode::Char('b'),
        KeyCode::Char('e'),
        KeyCode::Char('r'),
        KeyCode::Char('1'),
        KeyCode::Char('2'),
        KeyCode::Esc,
        KeyCode::Char('d'),
        KeyCode::Char('m'),
        KeyCode::Enter,
    ];
    for (path, jumps) in cases {
        let name = stem(&path);
        for focus_first in [None, Some(KeyCode::Tab), Some(KeyCode::BackTab)] {
            let mut p = sized(&path);
            for _ in 0..jumps {
                ch(&mut p, ']');
            }
            if let Some(k) = focus_first {
                press(&mut p, k);
            }
            let pos = frame(&p);
            let before = domain(p.state(), true);
            assert!(!before.gates.is_empty(), "{name}");
            for k in keys {
                press(&mut p, k);
                // Each key again on the card itself.
                if p.state().focus != Focus::Gate {
                    ch(&mut p, 'g');
                    press(&mut p, k);
                }
                assert_eq!(frame(&p), pos, "{name}: {k:?} moved the replay");
                assert_eq!(
                    domain(p.state(), true),
                    before,
                    "{name}: {k:?} (focus first {focus_first:?}) changed the state"
                );
                assert!(
                    !matches!(
                        p.state().overlay,
                        Some(
                            Overlay::ConfirmQuit | Overlay::Picker { .. } | Overlay::Options { .. }
                        )
                    ),
                    "{name}: {k:?} opened {:?}",
                    p.state().overlay
                );
                assert!(!p.quit, "{name}");
            }
            // The recording goes on as recorded afterwards.
            press(&mut p, KeyCode::Esc);
            press(&mut p, KeyCode::End);
            assert!(p.state().gates.is_empty(), "{name}");
        }
    }
}
