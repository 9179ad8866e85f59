//! The tree pane's rows, positions and totals and the inbox order are kept by the reducer as
//! nodes and gates come and go; here they are checked against the full walks they replace,
//! after every step of a seeded random workspace (nested sub-agents, statuses, gates on
//! nodes that exist and on nodes that open later, answers and withdrawals, folds and focus).

use super::*;
use crate::state::{GateRef, SessionId};
use crate::update::workspace::{Row, row_count, row_index, row_totals, rows_from, tree_rows};

fn ev_in(s: &mut State, session: SessionId, event: BackendEvent) -> Vec<Effect> {
    update(
        s,
        crate::Msg::Backend {
            session,
            at_ms: 1_000,
            event,
        },
    )
}

/// The rows as the tree listed them before it kept positions: every node of every session.
fn walked_rows(state: &State) -> Vec<Row> {
    let sel = state.selected;
    if state.sessions.len() == 1 || state.focus_root.is_some() {
        let tree = &state.sessions[sel].tree;
        let top = state.focus_root.unwrap_or(0);
        return tree
            .preorder()
            .into_iter()
            .filter(|n| tree.is_within(*n, top))
            .map(|n| (sel, n))
            .collect();
    }
    let mut rows = Vec::new();
    for (i, s) in state.sessions.iter().enumerate() {
        if s.collapsed && !(i == sel && state.selected_node != 0) {
            rows.push((i, 0));
        } else {
            rows.extend(s.tree.preorder().into_iter().map(|n| (i, n)));
        }
    }
    rows
}

/// The footer's totals as the frame counted them before: (running, waiting, done, failed).
fn walked_totals(state: &State, rows: &[Row]) -> (usize, usize, usize, usize) {
    let (mut running, mut waiting, mut done, mut failed) = (0, 0, 0, 0);
    for &(i, id) in rows {
        let s = &state.sessions[i];
        let key = &s.tree.nodes[id].key;
        if s.gates.iter().any(|g| &g.node_key == key) {
            waiting += 1;
        } else if id != state.focus_root.unwrap_or(0) {
            match s.tree.nodes[id].status {
                NodeStatus::Completed => done += 1,
                NodeStatus::Failed | NodeStatus::Killed => failed += 1,
                _ => running += 1,
            }
        }
    }
    (running, waiting, done, failed)
}

fn check(state: &State, step: usize) {
    let want = walked_rows(state);
    assert_eq!(tree_rows(state), want, "step {step}: rows");
    assert_eq!(row_count(state), want.len(), "step {step}: count");
    for (k, r) in want.iter().enumerate() {
        assert_eq!(row_index(state, *r), Some(k), "step {step}: index of {r:?}");
        if k % 7 == 0 {
            let window: Vec<Row> = rows_from(state, k).take(5).collect();
            assert_eq!(
                window,
                want[k..want.len().min(k + 5)],
                "step {step}: from {k}"
            );
        }
    }
    assert_eq!(rows_from(state, want.len()).next(), None);
    let t = row_totals(state);
    assert_eq!(
        (t.running, t.waiting, t.done, t.failed),
        walked_totals(state, &want),
        "step {step}: totals"
    );
    for (i, s) in state.sessions.iter().enumerate() {
        for n in 0..s.tree.nodes.len() {
            let key = &s.tree.nodes[n].key;
            let on = s.gates.iter().filter(|g| &g.node_key == key).count();
            assert_eq!(s.gates_on(n), on, "step {step}: badge of {i}/{n}");
        }
    }
    let sorted: Vec<GateRef> = state
        .inbox()
        .iter()
        .map(|(_, i, g)| GateRef {
            session: state.sessions[*i].id,
            id: g.id.clone(),
        })
        .collect();
    assert_eq!(
        state.inbox_refs().collect::<Vec<_>>(),
        sorted,
        "step {step}: inbox"
    );
    for (k, r) in sorted.iter().enumerate() {
        let i = state.index_of(r.session).unwrap();
        assert_eq!(state.inbox_position(i, &r.id), Some(k));
        assert_eq!(
            state.inbox_at(k).map(|(j, g)| (j, g.id.clone())),
            Some((i, r.id.clone()))
        );
    }
}

#[test]
fn kept_rows_totals_and_inbox_match_full_walks() {
    let mut s = State::new(crate::BackendKind::Claude, "api", 0);
    let ids = [
        SessionId::FIRST,
        s.add_session(crate::BackendKind::Claude, "web"),
        s.add_session(crate::BackendKind::Acp, "docs"),
    ];
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let statuses = [
        "running",
        "completed",
        "failed",
        "killed",
        "pending",
        "stopped",
    ];
    let mut keys: Vec<Vec<String>> = vec![vec!["root".into()]; 3];
    let mut open: Vec<(usize, String)> = Vec::new();
    let mut next_gate = 0;
    let mut most_pending = 0;
    for step in 0..600 {
        let i = rnd(3);
        let sid = ids[i];
        match rnd(10) {
            0..=3 => {
                let parent = keys[i][rnd(keys[i].len())].clone();
                let key = format!("t{step}");
                ev_in(
                    &mut s,
                    sid,
                    BackendEvent::NodeOpen {
                        key: key.clone(),
                        parent: (parent != "root").then_some(parent),
                        patch: Default::default(),
                    },
                );
                keys[i].push(key);
            }
            4 => {
                let key = keys[i][rnd(keys[i].len())].clone();
                let status = NodeStatus::from_wire(statuses[rnd(statuses.len())]);
                ev_in(
                    &mut s,
                    sid,
                    BackendEvent::NodeUpdate {
                        key,
                        patch: NodePatch {
                            status,
                            ..Default::default()
                        },
                    },
                );
            }
            5 | 6 => {
                // Sometimes on a node that opens only later.
                let node = if rnd(5) == 0 {
                    format!("t{}", step + 1 + rnd(4))
                } else {
                    keys[i][rnd(keys[i].len())].clone()
                };
                next_gate += 1;
                let mut g = bash(&format!("g{next_gate}"), "make");
                g.node_key = node;
                ev_in(&mut s, sid, BackendEvent::GateOpen(Box::new(g)));
                open.push((i, format!("g{next_gate}")));
            }
            7 if !open.is_empty() => {
                let (j, id) = open.swap_remove(rnd(open.len()));
                let event = if rnd(2) == 0 {
                    BackendEvent::GateWithdrawn { id }
                } else {
                    BackendEvent::GateAnswered {
                        id,
                        decision: Decision::Allow {
                            updated_input: None,
                            always: false,
                        },
                    }
                };
                ev_in(&mut s, ids[j], event);
            }
            8 => {
                let turn = [TurnState::Running, TurnState::Idle][rnd(2)];
                ev_in(&mut s, sid, BackendEvent::Turn(turn));
            }
            _ => {
                // The view: fold, focus, select.
                s.focus_root = None;
                s.select_session(i, rnd(s.sessions[i].tree.nodes.len()));
                match rnd(4) {
                    0 => s.sessions[i].collapsed = !s.sessions[i].collapsed,
                    1 => s.focus_root = Some(rnd(s.sessions[i].tree.nodes.len())),
                    _ => {}
                }
            }
        }
        check(&s, step);
        most_pending = most_pending.max(s.inbox_len());
    }
    let nodes: usize = s.sessions.iter().map(|x| x.tree.nodes.len()).sum();
    assert!(
        nodes > 150 && most_pending > 5,
        "{nodes} nodes, {most_pending} gates"
    );
    // A session's exit closes its gates and ends its root.
    ev_in(
        &mut s,
        ids[1],
        BackendEvent::Exited {
            code: Some(1),
            detail: "exit 1".into(),
            stderr_tail: Vec::new(),
        },
    );
    check(&s, usize::MAX);
    assert!(s.sessions[1].gates.is_empty());
}
