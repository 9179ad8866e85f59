//! Finding and taking things out: search, copy, pager, focus on a subtree, detail view.

use crate::input::{KeyCode, KeyEvent, KeyModifiers};

use super::super::gate::GateKind;
use super::super::msg::Effect;
use super::super::state::{Focus, Overlay, Search, State};
use super::super::tree::NodeId;

/// Keys while the search query is typed in the footer. Returns true when consumed.
pub(super) fn search_editing_key(state: &mut State, key: KeyEvent) -> bool {
    let Some(search) = state.search.as_mut().filter(|s| s.editing) else {
        return false;
    };
    match key.code {
        KeyCode::Esc => state.search = None,
        KeyCode::Enter => {
            search.editing = false;
            if search.query.is_empty() {
                state.search = None;
            } else {
                run_search(state);
                step(state, true);
            }
        }
        KeyCode::Backspace => {
            search.query.pop();
        }
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => search.query.push(c),
        _ => {}
    }
    true
}

pub(super) fn start_search(state: &mut State, all_nodes: bool) {
    state.search = Some(Search {
        editing: true,
        all_nodes,
        ..Search::default()
    });
    if state.focus == Focus::Prompt || state.focus == Focus::Gate {
        state.focus = Focus::Transcript;
    }
}

/// The nodes a search or the tree view covers (the focused subtree, or everything).
pub fn visible_nodes(state: &State) -> Vec<NodeId> {
    let all = state.tree.preorder();
    match state.focus_root {
        Some(r) => all
            .into_iter()
            .filter(|n| state.tree.is_within(*n, r))
            .collect(),
        None => all,
    }
}

/// Find every item whose text contains the query (case-insensitive).
fn run_search(state: &mut State) {
    let Some(search) = state.search.as_ref() else {
        return;
    };
    let q = search.query.to_lowercase();
    let nodes = if search.all_nodes {
        visible_nodes(state)
    } else {
        vec![state.selected_node]
    };
    let mut hits = Vec::new();
    for n in nodes {
        // `scan`: a search reads every row, and must not leave them all unpacked.
        let items = &state.tree.nodes[n].transcript.items;
        items.scan(0, items.len(), |i, item| {
            if item.kind.full_text().to_lowercase().contains(&q) {
                hits.push((n, i));
            }
            std::ops::ControlFlow::Continue(())
        });
    }
    let s = state.search.as_mut().expect("checked above");
    // Fewer hits now (another node selected, a narrower subtree): never point past them.
    if s.current.is_some_and(|c| c >= hits.len()) {
        s.current = None;
    }
    s.hits = hits;
}

/// `n` / `N`: select the next / previous match (new items are searched too).
pub(super) fn step(state: &mut State, forward: bool) {
    run_search(state);
    let Some(s) = state.search.as_mut() else {
        return;
    };
    if s.hits.is_empty() {
        state.status_line = Some(format!("no match for {:?}", s.query));
        return;
    }
    let here = (
        state.selected_node,
        state.selected_item.unwrap_or(usize::MAX),
    );
    let next = if forward {
        match s.current {
            Some(c) if s.hits.get(c) == Some(&here) => (c + 1) % s.hits.len(),
            _ => s.hits.iter().position(|h| *h > here).unwrap_or(0),
        }
    } else {
        match s.current {
            Some(c) if s.hits.get(c) == Some(&here) => (c + s.hits.len() - 1) % s.hits.len(),
            _ => s
                .hits
                .iter()
                .rposition(|h| *h < here)
                .unwrap_or(s.hits.len() - 1),
        }
    };
    s.current = Some(next);
    let (node, item) = s.hits[next];
    let total = s.hits.len();
    let query = s.query.clone();
    state.selected_node = node;
    state.selected_item = Some(item);
    state.focus = Focus::Transcript;
    // A match inside collapsed content is shown by expanding it.
    let t = &mut state.tree.nodes[node].transcript;
    if let Some(it) = t.items.get(item)
        && it.kind.expandable()
    {
        t.set_expanded(item, true);
    }
    state.status_line = Some(format!(
        "match {}/{total} for {query:?} · n/N move",
        next + 1
    ));
}

/// The text of the selected item, or of the active gate when the card has focus.
fn selection_text(state: &State) -> Option<String> {
    if state.focus == Focus::Gate {
        let gate = state.active()?;
        return Some(match &gate.kind {
            GateKind::Permission(p) => match &p.diff {
                Some(d) => d.to_text(),
                None => p.input.clone(),
            },
            GateKind::Breakpoint(b) => b.input.clone(),
            GateKind::Question(q) => q
                .questions
                .iter()
                .map(|q| q.question.clone())
                .collect::<Vec<_>>()
                .join("\n"),
            GateKind::Dialog(d) => d.payload.clone(),
            GateKind::Elicitation(e) => e.message.clone(),
        });
    }
    let node = &state.tree.nodes[state.selected_node];
    let i = state.selected_item?;
    Some(node.transcript.items.get(i)?.kind.full_text())
}

/// `c`, `o`, `v`, `f`, `F`, `t`, `n`, `N`. Returns true when consumed.
pub(super) fn key(state: &mut State, key: KeyEvent, fx: &mut Vec<Effect>) -> bool {
    match key.code {
        KeyCode::Char('c') | KeyCode::Char('o') => match selection_text(state) {
            Some(text) => {
                if key.code == KeyCode::Char('c') {
                    state.status_line = Some(format!("copied {} characters", text.chars().count()));
                    fx.push(Effect::Copy(text));
                } else {
                    fx.push(Effect::OpenPager(text));
                }
            }
            None => state.status_line = Some("select an item first (↑↓ in the transcript)".into()),
        },
        KeyCode::Char('v') => {
            let item = if state.focus == Focus::Gate {
                None
            } else {
                state.selected_item
            };
            if state.focus != Focus::Gate && item.is_none() {
                state.status_line = Some("select an item first (↑↓ in the transcript)".into());
            } else {
                state.overlay_scroll = 0;
                state.overlay = Some(Overlay::Detail {
                    node: state.selected_node,
                    item,
                });
            }
        }
        KeyCode::Char('f') if state.focus != Focus::Gate => {
            state.focus_root = Some(state.selected_node);
            state.status_line = Some("focused on this subtree (F shows all)".into());
        }
        KeyCode::Char('F') if state.focus != Focus::Gate => state.focus_root = None,
        KeyCode::Char('t') => state.side_by_side = !state.side_by_side,
        KeyCode::Char('n') | KeyCode::Char('N')
            if state.focus != Focus::Gate && state.search.as_ref().is_some_and(|s| !s.editing) =>
        {
            step(state, key.code == KeyCode::Char('n'))
        }
        _ => return false,
    }
    true
}
