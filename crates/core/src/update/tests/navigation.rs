//! Pane keys: tree selection, transcript scroll and expand, streaming rows.

use super::*;

// ---- panes

#[test]
fn tree_selection_keys() {
    let mut s = st();
    sub_agent(&mut s, "toolu_a", None, "Explore");
    sub_agent(&mut s, "toolu_b", None, "code-reviewer");
    sub_agent(&mut s, "toolu_c", Some("toolu_a"), "general-purpose");
    assert_eq!(s.tree.preorder(), vec![0, 1, 3, 2]);
    press(&mut s, KeyCode::Tab);
    assert_eq!(s.focus, Focus::Tree);
    let mut seen = vec![];
    for _ in 0..5 {
        ch(&mut s, 'j');
        seen.push(s.selected_node);
    }
    assert_eq!(seen, vec![1, 3, 2, 2, 2]);
    press(&mut s, KeyCode::Up);
    assert_eq!(s.selected_node, 3);
    press(&mut s, KeyCode::Home);
    assert_eq!(s.selected_node, 0);
    press(&mut s, KeyCode::End);
    assert_eq!(s.selected_node, 2);
    press(&mut s, KeyCode::Enter);
    assert_eq!(s.focus, Focus::Transcript);
    ch(&mut s, 'h');
    assert_eq!(s.focus, Focus::Tree);
    // Overlays from the tree.
    ch(&mut s, 's');
    assert_eq!(s.overlay, Some(Overlay::Status));
    ch(&mut s, 's');
    assert_eq!(s.overlay, None);
    ch(&mut s, 'L');
    assert_eq!(s.overlay, Some(Overlay::Log));
    press(&mut s, KeyCode::Esc);
    ch(&mut s, '?');
    assert_eq!(s.overlay, Some(Overlay::Help));
    ch(&mut s, 'q');
    assert_eq!(s.overlay, None, "q closes an overlay before it quits");
}

fn push(s: &mut State, kind: ItemKind) {
    ev(
        s,
        BackendEvent::Item {
            node: None,
            op: ItemOp::Push(kind),
        },
    );
}

#[test]
fn transcript_scroll_and_expand_keys() {
    let mut s = st();
    push(&mut s, ItemKind::User { text: "hi".into() });
    push(
        &mut s,
        ItemKind::ToolCall {
            id: "t1".into(),
            name: "Bash".into(),
            summary: "ls".into(),
            input: "{\"command\":\"ls\"}".into(),
            diff: None,
        },
    );
    push(
        &mut s,
        ItemKind::Assistant {
            text: "done".into(),
            streaming: false,
            aborted: false,
        },
    );
    press(&mut s, KeyCode::Esc);
    assert_eq!(s.focus, Focus::Transcript);
    press(&mut s, KeyCode::Up);
    assert_eq!(s.selected_item, Some(2));
    // Not expandable: Enter does nothing.
    press(&mut s, KeyCode::Enter);
    assert!(!s.tree.nodes[0].transcript.items[2].expanded);
    ch(&mut s, 'k');
    assert_eq!(s.selected_item, Some(1));
    press(&mut s, KeyCode::Enter);
    assert!(s.tree.nodes[0].transcript.items[1].expanded);
    ch(&mut s, ' ');
    assert!(!s.tree.nodes[0].transcript.items[1].expanded);
    ch(&mut s, 'k');
    ch(&mut s, 'k');
    assert_eq!(s.selected_item, Some(0));
    ch(&mut s, 'j');
    ch(&mut s, 'j');
    assert_eq!(s.selected_item, Some(2));
    ch(&mut s, 'j');
    assert_eq!(s.selected_item, None, "past the end follows the tail");
    // Paging uses what the renderer measured.
    measured(&mut s, |v| v.transcript_height = 11);
    measured(&mut s, |v| v.drawn_scroll_back = 4);
    press(&mut s, KeyCode::PageUp);
    assert_eq!(s.scroll_back, 14);
    measured(&mut s, |v| v.drawn_scroll_back = 14);
    press(&mut s, KeyCode::PageDown);
    assert_eq!(s.scroll_back, 4);
    measured(&mut s, |v| v.drawn_scroll_back = 4);
    press(&mut s, KeyCode::PageDown);
    assert_eq!(s.scroll_back, 0);
    press(&mut s, KeyCode::Home);
    assert!(s.scroll_back > 1_000_000);
    press(&mut s, KeyCode::End);
    assert_eq!(s.scroll_back, 0);
    // The mouse wheel scrolls the transcript when the pointer is over it, and nothing else.
    let view = crate::state::ViewMetrics {
        transcript_area: crate::input::Rect::new(30, 0, 50, 20),
        ..s.view.clone()
    };
    update(&mut s, crate::Msg::Drawn(view));
    let wheel = |s: &mut State, column: u16, row: u16| {
        update(
            s,
            crate::Msg::Mouse(crate::input::MouseEvent {
                kind: crate::input::MouseEventKind::ScrollUp,
                column,
                row,
                modifiers: KeyModifiers::NONE,
            }),
        );
    };
    wheel(&mut s, 40, 5);
    assert_eq!(s.scroll_back, 3);
    wheel(&mut s, 40, 22);
    assert_eq!(
        s.scroll_back, 3,
        "the wheel over the gate card or footer does nothing"
    );
    ch(&mut s, 'i');
    assert_eq!(s.focus, Focus::Prompt);
}

#[test]
fn streaming_rows_end_with_the_turn() {
    let mut s = st();
    ev(
        &mut s,
        BackendEvent::Item {
            node: None,
            op: ItemOp::AppendText {
                key: "m1#0".into(),
                thinking: false,
                delta: "Hel".into(),
            },
        },
    );
    ev(&mut s, BackendEvent::Turn(TurnState::Idle));
    assert_eq!(
        last(&s, 0),
        &ItemKind::Assistant {
            text: "Hel".into(),
            streaming: false,
            aborted: false
        }
    );
    assert_eq!(s.tree.nodes[0].status, NodeStatus::Idle);
}

/// The renderer reports what it measured (`Msg::Drawn`), changed by `f`.
fn measured(s: &mut State, f: impl FnOnce(&mut crate::state::ViewMetrics)) {
    let mut view = s.view.clone();
    f(&mut view);
    update(s, crate::Msg::Drawn(view));
}
