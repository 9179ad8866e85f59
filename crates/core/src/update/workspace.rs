//! Keys that act across the sessions of the workspace: the gate inbox and its batch triage,
//! jumping between gates of any session, closing and restarting sessions, and the tree's
//! session rows. The new-session dialog is `new_session`.

use crate::input::{KeyCode, KeyEvent, KeyModifiers};

use super::super::gate::{Decision, Gate, GateKind, Permission};
use super::super::msg::{Command, Effect, NewSession};
use super::super::state::{Focus, GateRef, Overlay, SessionId, State};
use super::super::tree::{NodeId, RowClass, RowCounts};
use super::decide::{answer, answer_batch};

/// One row of the tree pane: (session index, node).
pub type Row = (usize, NodeId);

/// The node the tree shows alone with its subtree (one session, or `f` focused a subtree),
/// or `None` when the workspace lists every session.
fn single_top(state: &State) -> Option<NodeId> {
    if state.sessions.len() == 1 || state.focus_root.is_some() {
        let tree = &state.sessions[state.selected].tree;
        Some(
            state
                .focus_root
                .filter(|r| *r < tree.nodes.len())
                .unwrap_or(0),
        )
    } else {
        None
    }
}

/// Whether session `i` shows its nodes (else only its root row). A folded session still
/// shows the node you are on.
fn shows_nodes(state: &State, i: usize) -> bool {
    !state.sessions[i].collapsed || (i == state.selected && state.selected_node != 0)
}

/// Rows session `i` takes when the workspace lists every session.
fn session_len(state: &State, i: usize) -> usize {
    if shows_nodes(state, i) {
        state.sessions[i].tree.subtree_len(0)
    } else {
        1
    }
}

/// How many rows the tree shows: O(sessions).
pub fn row_count(state: &State) -> usize {
    match single_top(state) {
        Some(top) => state.sessions[state.selected].tree.subtree_len(top),
        None => (0..state.sessions.len())
            .map(|i| session_len(state, i))
            .sum(),
    }
}

/// Where `row` sits in the tree, top to bottom, or `None` when it is not shown:
/// O(sessions + depth · log children).
pub fn row_index(state: &State, (i, node): Row) -> Option<usize> {
    let tree = &state.sessions.get(i)?.tree;
    if node >= tree.nodes.len() {
        return None;
    }
    match single_top(state) {
        Some(top) => (i == state.selected && tree.is_within(node, top))
            .then(|| tree.position(node) - tree.position(top)),
        None => {
            let before: usize = (0..i).map(|k| session_len(state, k)).sum();
            if shows_nodes(state, i) {
                Some(before + tree.position(node))
            } else {
                (node == 0).then_some(before)
            }
        }
    }
}

/// The rows from position `start` on, produced one by one: a window of the tree costs its
/// height (plus finding its first row), never the number of nodes.
pub fn rows_from(state: &State, start: usize) -> Rows<'_> {
    match single_top(state) {
        Some(top) => Rows {
            state,
            session: state.selected,
            top: Some(top),
            next: state.sessions[state.selected].tree.nth_within(top, start),
        },
        None => {
            let mut k = start;
            for i in 0..state.sessions.len() {
                let len = session_len(state, i);
                if k < len {
                    return Rows {
                        state,
                        session: i,
                        top: None,
                        next: state.sessions[i].tree.nth_within(0, k),
                    };
                }
                k -= len;
            }
            Rows {
                state,
                session: state.sessions.len(),
                top: None,
                next: None,
            }
        }
    }
}

/// Iterator of `rows_from`.
pub struct Rows<'a> {
    state: &'a State,
    session: usize,
    /// The subtree shown alone, or `None` for every session in turn.
    top: Option<NodeId>,
    next: Option<NodeId>,
}

impl Iterator for Rows<'_> {
    type Item = Row;

    fn next(&mut self) -> Option<Row> {
        let node = self.next?;
        let i = self.session;
        let tree = &self.state.sessions[i].tree;
        self.next = match self.top {
            Some(top) => tree.next_within(top, node),
            None => {
                let within = if shows_nodes(self.state, i) {
                    tree.next_within(0, node)
                } else {
                    None
                };
                within.or_else(|| {
                    self.session += 1;
                    (self.session < self.state.sessions.len()).then_some(0)
                })
            }
        };
        Some((i, node))
    }
}

/// The rows the tree shows, top to bottom (tests and tools; the frame takes its window with
/// `rows_from`). One session: its nodes (or the focused subtree). Several: each session's
/// root, then its nodes unless the session is collapsed.
pub fn tree_rows(state: &State) -> Vec<Row> {
    rows_from(state, 0).collect()
}

/// The tree pane's footer totals over the rows shown (sub-agents by state; the top row of a
/// view counts only when it waits on a gate): O(sessions), from the counts the tree keeps.
pub fn row_totals(state: &State) -> RowCounts {
    match single_top(state) {
        Some(top) => state.sessions[state.selected].tree.row_counts(top),
        None => {
            let mut total = RowCounts::default();
            for (i, s) in state.sessions.iter().enumerate() {
                if shows_nodes(state, i) {
                    total.merge(s.tree.row_counts(0));
                } else if s.tree.class(0) == RowClass::Waiting {
                    total.waiting += 1;
                }
            }
            total
        }
    }
}

/// Show gate `id` of session `i`: select its session and node, put its card up.
pub fn jump_to(state: &mut State, i: usize, id: &str) {
    let Some(gate) = state.sessions.get(i).and_then(|s| s.gate(id)) else {
        return;
    };
    let key = gate.node_key.clone();
    let node = state.sessions[i].tree.resolve(Some(&key));
    state.sessions[i].collapsed = false;
    state.select_session(i, node);
    state.active_gate = Some(id.to_string());
    state.focus = Focus::Gate;
}

/// `g`: the oldest pending gate anywhere.
pub(super) fn jump_to_oldest(state: &mut State) {
    let Some((i, id)) = state.inbox_at(0).map(|(i, g)| (i, g.id.clone())) else {
        state.status_line = Some("no pending gates".into());
        return;
    };
    jump_to(state, i, &id);
}

/// `]` / `[`: the next / previous pending gate in inbox order, across sessions.
pub(super) fn cycle(state: &mut State, forward: bool) {
    let n = state.inbox_len();
    if n == 0 {
        return;
    }
    let here = state.selected;
    let pos = state
        .active_gate
        .as_deref()
        .and_then(|id| state.inbox_position(here, id));
    let next = match (pos, forward) {
        (Some(p), true) => (p + 1) % n,
        (Some(p), false) => (p + n - 1) % n,
        (None, true) => 0,
        (None, false) => n - 1,
    };
    let Some((i, id)) = state.inbox_at(next).map(|(i, g)| (i, g.id.clone())) else {
        return;
    };
    jump_to(state, i, &id);
}

/// Why a gate cannot be answered in a batch (it opens one by one), or `None` when it can.
pub fn not_batchable(gate: &Gate) -> Option<&'static str> {
    let GateKind::Permission(p) = &gate.kind else {
        return Some("questions, dialogs, forms and breakpoints open one by one");
    };
    if p.default_to_no {
        return Some("the agent asked for this to default to no");
    }
    if !p.dangerous_env().is_empty() {
        return Some("it sets an environment variable that changes what runs");
    }
    if allow_once(p).is_none() {
        return Some("the agent offers no allow-once answer");
    }
    None
}

/// The allow-once answer for a permission: Claude's allow, or the agent's `allow_once` option.
fn allow_once(p: &Permission) -> Option<Decision> {
    if p.options.is_empty() {
        return Some(Decision::Allow {
            updated_input: None,
            always: false,
        });
    }
    p.options
        .iter()
        .find(|o| o.kind == "allow_once" && !o.contradicts())
        .map(|o| Decision::Option {
            option_id: o.option_id.clone(),
            name: o.label(),
            allow: true,
        })
}

/// `I`: open the inbox with the oldest gate highlighted and no marks.
pub(super) fn open_inbox(state: &mut State) {
    state.inbox = Default::default();
    state.overlay = Some(Overlay::Inbox);
}

/// The inbox's rows: every pending gate, oldest first, as references.
pub fn inbox_refs(state: &State) -> Vec<GateRef> {
    state.inbox_refs().collect()
}

fn gate_of<'a>(state: &'a State, r: &GateRef) -> Option<(usize, &'a Gate)> {
    let i = state.index_of(r.session)?;
    Some((i, state.sessions[i].gate(&r.id)?))
}

/// The gates a batch would answer: the marked ones still pending, in inbox order. Costs the
/// marks, not the gates.
pub fn batch(state: &State) -> Vec<GateRef> {
    let mut marked: Vec<(usize, &GateRef)> = state
        .inbox
        .marked
        .iter()
        .filter_map(|r| {
            let i = state.index_of(r.session)?;
            Some((state.inbox_position(i, &r.id)?, r))
        })
        .collect();
    marked.sort_unstable_by_key(|(pos, _)| *pos);
    marked.into_iter().map(|(_, r)| r.clone()).collect()
}

/// Keys of the inbox overlay.
pub(super) fn inbox_key(state: &mut State, key: KeyEvent, fx: &mut Vec<Effect>) {
    if let Some(msg) = state.inbox.deny_message.as_mut() {
        match key.code {
            KeyCode::Esc => state.inbox.deny_message = None,
            KeyCode::Enter => {
                let message = std::mem::take(msg);
                state.inbox.deny_message = None;
                decide_batch(state, BatchAnswer::Deny(message), fx);
            }
            KeyCode::Backspace => {
                msg.pop();
            }
            // Bounded: a deny message is a sentence, not a file.
            KeyCode::Char(c)
                if !key.modifiers.contains(KeyModifiers::CONTROL) && msg.len() < 2_000 =>
            {
                msg.push(c)
            }
            _ => {}
        }
        return;
    }
    let rows = inbox_refs(state);
    // Marks of gates answered elsewhere meanwhile drop out.
    let live: std::collections::HashSet<&GateRef> = rows.iter().collect();
    state.inbox.marked.retain(|m| live.contains(m));
    let n = rows.len();
    let cursor = state.inbox.cursor.min(n.saturating_sub(1));
    state.inbox.cursor = cursor;
    match key.code {
        KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('I') => state.overlay = None,
        KeyCode::Up | KeyCode::Char('k') => state.inbox.cursor = cursor.saturating_sub(1),
        KeyCode::Down | KeyCode::Char('j') => {
            state.inbox.cursor = (cursor + 1).min(n.saturating_sub(1))
        }
        KeyCode::Home => state.inbox.cursor = 0,
        KeyCode::End => state.inbox.cursor = n.saturating_sub(1),
        KeyCode::Enter => {
            if let Some(r) = rows.get(cursor)
                && let Some(i) = state.index_of(r.session)
            {
                state.overlay = None;
                jump_to(state, i, &r.id);
            }
        }
        KeyCode::Char(' ') => {
            let Some(r) = rows.get(cursor).cloned() else {
                return;
            };
            if !state.inbox.marked.remove(&r) {
                match gate_of(state, &r).and_then(|(_, g)| not_batchable(g)) {
                    Some(why) => {
                        state.status_line = Some(format!("not for a batch: {why} (Enter opens it)"))
                    }
                    None => {
                        state.inbox.marked.insert(r);
                    }
                }
            }
            state.inbox.cursor = (cursor + 1).min(n.saturating_sub(1));
        }
        KeyCode::Char('=') => mark_identical(state, &rows, cursor),
        KeyCode::Char('u') => state.inbox.marked.clear(),
        KeyCode::Char('y') => decide_batch(state, BatchAnswer::AllowOnce, fx),
        KeyCode::Char('n') => {
            if batch(state).is_empty() {
                state.status_line = Some("mark gates with Space (or = for identical) first".into());
            } else {
                state.inbox.deny_message = Some(String::new());
            }
        }
        _ => {}
    }
}

/// `=`: mark every batchable gate with the same tool and exactly the same input as the
/// highlighted one.
fn mark_identical(state: &mut State, rows: &[GateRef], cursor: usize) {
    let Some(r) = rows.get(cursor) else {
        return;
    };
    let Some((_, g)) = gate_of(state, r) else {
        return;
    };
    if let Some(why) = not_batchable(g) {
        state.status_line = Some(format!("not for a batch: {why}"));
        return;
    }
    let GateKind::Permission(p) = &g.kind else {
        return;
    };
    let (tool, input, env) = (p.tool.clone(), p.input.clone(), p.env.clone());
    let same: Vec<GateRef> = rows
        .iter()
        .filter(|r| {
            gate_of(state, r).is_some_and(|(_, g)| {
                not_batchable(g).is_none()
                    && matches!(&g.kind, GateKind::Permission(q)
                        if q.tool == tool && q.input == input && q.env == env)
            })
        })
        .cloned()
        .collect();
    let count = same.len();
    for r in same {
        state.inbox.marked.insert(r);
    }
    state.status_line = Some(format!("{count} identical request(s) marked"));
}

enum BatchAnswer {
    AllowOnce,
    Deny(String),
}

/// Answer every marked gate, each to its own session's agent exactly once, each with its own
/// audit row. A gate that stopped being batchable (or was answered meanwhile) is skipped.
fn decide_batch(state: &mut State, how: BatchAnswer, fx: &mut Vec<Effect>) {
    let refs = batch(state);
    if refs.is_empty() {
        state.status_line = Some("mark gates with Space (or = for identical) first".into());
        return;
    }
    let total = refs.len();
    let mut done = 0;
    let mut offline = 0;
    // Marks of gates left pending because their session is offline stay for the next try.
    let mut keep: Vec<GateRef> = Vec::new();
    for r in &refs {
        let Some((i, gate)) = gate_of(state, r) else {
            continue;
        };
        if not_batchable(gate).is_some() {
            continue;
        }
        if state.sessions[i].session.offline.is_some() {
            // Nothing can be sent there until it reconnects: the gate stays pending.
            offline += 1;
            keep.push(r.clone());
            continue;
        }
        let GateKind::Permission(p) = &gate.kind else {
            continue;
        };
        let decision = match &how {
            BatchAnswer::AllowOnce => allow_once(p),
            BatchAnswer::Deny(m) => super::rules::deny_decision(p, m),
        };
        let Some(decision) = decision else {
            continue;
        };
        let id = r.id.clone();
        let out = state.with_session(i, |st| answer_batch(st, &id, decision, total));
        if out
            .iter()
            .any(|e| matches!(e, Effect::Send(_, Command::Answer { .. })))
        {
            done += 1;
        }
        fx.extend(out);
    }
    state.inbox.marked.clear();
    state.inbox.marked.extend(keep);
    let verb = match how {
        BatchAnswer::AllowOnce => "allowed once",
        BatchAnswer::Deny(_) => "denied",
    };
    state.status_line = Some(if offline > 0 {
        format!(
            "batch: {done} of {total} gate(s) {verb}; {offline} not sent: offline, reconnecting (decisions are disabled; their marks stay)"
        )
    } else {
        format!("batch: {done} of {total} gate(s) {verb}")
    });
    if state.pending_total() == 0 {
        state.overlay = None;
    }
}

/// `x` outside a card: close the selected session (asking first when gates are pending).
pub(super) fn request_close(state: &mut State, fx: &mut Vec<Effect>) {
    if state.sessions[state.selected].closed {
        state.status_line = Some("this session is closed (X restarts it)".into());
        return;
    }
    let id = state.sessions[state.selected].id;
    if state.gates.is_empty() {
        close(state, id, fx);
    } else {
        state.overlay = Some(Overlay::ConfirmClose { session: id });
    }
}

/// Close session `id`: every pending gate gets the backend's exit answer, then its source is
/// shut down (its agent's process group stopped). The row stays, marked closed.
pub(super) fn close(state: &mut State, id: SessionId, fx: &mut Vec<Effect>) {
    let Some(i) = state.index_of(id) else {
        return;
    };
    state.with_session(i, |st| {
        if st.session.exited.is_none() {
            super::shutdown::answer_all_and_shut_down(st, fx);
        } else {
            fx.push(Effect::Send(st.sid(), Command::Shutdown));
        }
        st.closed = true;
        st.active_gate = None;
    });
    if state.selected == i && state.focus == Focus::Gate {
        state.focus = Focus::Tree;
    }
    state.status_line = Some(format!(
        "session {} closed",
        super::super::text::neutralize(state.sessions[i].name())
    ));
}

/// `X` on a closed or exited session: start it again from its profile (Claude resumes its
/// session id).
pub(super) fn restart(state: &mut State, fx: &mut Vec<Effect>) {
    let s = &state.sessions[state.selected];
    if !(s.closed || s.session.exited.is_some()) {
        state.status_line = Some("the session is running; x closes it first".into());
        return;
    }
    let Some(profile) = s.profile.clone() else {
        state.status_line = Some("this session has no profile to restart from".into());
        return;
    };
    let resume = (s.session.backend == crate::BackendKind::Claude)
        .then(|| s.session.session_id.clone())
        .flatten();
    // One restart per closed row: its replacement carries the profile from now on.
    let i = state.selected;
    state.sessions[i].profile = None;
    let s = &state.sessions[i];
    fx.push(Effect::StartSession(NewSession {
        profile: Some(profile),
        command_line: None,
        cwd: s.session.cwd.clone().unwrap_or_default(),
        prompt: String::new(),
        resume,
    }));
}

/// A session the user asked for has appeared (`BackendEvent::Reveal`): show it, unless they
/// are typing, in an overlay or on a gate card, where switching would pull the ground from
/// under their keys; then the status line says where it is.
pub(super) fn reveal(state: &mut State, i: usize) {
    let name = super::super::text::neutralize(state.sessions[i].name()).into_owned();
    let busy = state.overlay.is_some()
        || state.focus == Focus::Gate
        || (state.focus == Focus::Prompt && (!state.prompt.is_empty() || state.typed_since_send));
    if busy || i == state.selected {
        if i != state.selected {
            state.status_line = Some(format!("new session {name} is in the tree"));
        }
        return;
    }
    state.select_session(i, 0);
    state.focus = Focus::Tree;
    state.status_line = Some(format!("showing the new session {name}"));
}

/// `z` in the tree: fold or unfold the selected session to its root row.
pub(super) fn toggle_collapse(state: &mut State) {
    if state.sessions.len() < 2 {
        return;
    }
    let i = state.selected;
    let s = &mut state.sessions[i];
    s.collapsed = !s.collapsed;
    if s.collapsed {
        state.select_session(i, 0);
    }
}

/// Keys of the close-session confirmation.
pub(super) fn confirm_close_key(
    state: &mut State,
    session: SessionId,
    key: KeyEvent,
    fx: &mut Vec<Effect>,
) {
    match key.code {
        KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter => {
            state.overlay = None;
            close(state, session, fx);
        }
        KeyCode::Char('n') | KeyCode::Esc | KeyCode::Char('q') => state.overlay = None,
        _ => {}
    }
}

/// Answer a single gate of another session from the inbox (used by tests and the batch).
pub fn answer_in(state: &mut State, r: &GateRef, decision: Decision) -> Vec<Effect> {
    match state.index_of(r.session) {
        Some(i) => state.with_session(i, |st| answer(st, &r.id, decision)),
        None => Vec::new(),
    }
}
