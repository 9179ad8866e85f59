//! One attached client's own view of a hosted workspace: what it selects, scrolls, types and
//! opens. The shared state (sessions, gates, rules) is the host's; these fields are each
//! client's, exchanged with the state's (`State::swap_view`) when that client's key is
//! applied or its frame drawn, so the one reducer serves every client.

use std::mem::swap;

use super::{Focus, InboxView, Overlay, QueueEdit, Search, State, ViewMetrics};
use crate::text_field::TextField;
use crate::tree::NodeId;

/// The fields of `State` that are each client's own.
#[derive(Clone, Debug)]
pub struct ClientView {
    selected: usize,
    focus: Focus,
    overlay: Option<Overlay>,
    selected_node: NodeId,
    selected_item: Option<usize>,
    scroll_back: usize,
    prompt: TextField,
    typed_since_send: bool,
    queue_edit: Option<QueueEdit>,
    log_scroll: usize,
    overlay_scroll: usize,
    size: (u16, u16),
    view: ViewMetrics,
    search: Option<Search>,
    focus_root: Option<NodeId>,
    side_by_side: bool,
    pending_delete: Option<usize>,
    inbox: InboxView,
    status_line: Option<String>,
}

impl ClientView {
    /// A new client's view: where the state's view is (selection, focus, scroll), with
    /// nothing open or typed.
    pub fn starting_from(state: &State) -> ClientView {
        ClientView {
            selected: state.selected,
            focus: if state.focus == Focus::Prompt {
                Focus::Transcript
            } else {
                state.focus
            },
            overlay: None,
            selected_node: state.selected_node,
            selected_item: state.selected_item,
            scroll_back: state.scroll_back,
            prompt: TextField::default(),
            typed_since_send: false,
            queue_edit: None,
            log_scroll: 0,
            overlay_scroll: 0,
            size: state.size,
            view: ViewMetrics::default(),
            search: None,
            focus_root: state.focus_root,
            side_by_side: state.side_by_side,
            pending_delete: None,
            inbox: InboxView::default(),
            status_line: None,
        }
    }
}

impl State {
    /// Exchange this state's view fields with `v`'s (O(1): every field is moved, not copied).
    pub fn swap_view(&mut self, v: &mut ClientView) {
        swap(&mut self.selected, &mut v.selected);
        swap(&mut self.focus, &mut v.focus);
        swap(&mut self.overlay, &mut v.overlay);
        swap(&mut self.selected_node, &mut v.selected_node);
        swap(&mut self.selected_item, &mut v.selected_item);
        swap(&mut self.scroll_back, &mut v.scroll_back);
        swap(&mut self.prompt, &mut v.prompt);
        swap(&mut self.typed_since_send, &mut v.typed_since_send);
        swap(&mut self.queue_edit, &mut v.queue_edit);
        swap(&mut self.log_scroll, &mut v.log_scroll);
        swap(&mut self.overlay_scroll, &mut v.overlay_scroll);
        swap(&mut self.size, &mut v.size);
        swap(&mut self.view, &mut v.view);
        swap(&mut self.search, &mut v.search);
        swap(&mut self.focus_root, &mut v.focus_root);
        swap(&mut self.side_by_side, &mut v.side_by_side);
        swap(&mut self.pending_delete, &mut v.pending_delete);
        swap(&mut self.inbox, &mut v.inbox);
        swap(&mut self.status_line, &mut v.status_line);
        self.reconcile_view();
    }

    /// A view that was away while backend events changed the workspace may name what is
    /// gone: a card with no gate left, an item past the end, marks of answered gates. Each is
    /// brought back to something that exists.
    fn reconcile_view(&mut self) {
        self.selected = self.selected.min(self.sessions.len() - 1);
        self.acting = self.selected;
        let nodes = self.sessions[self.selected].tree.nodes.len();
        if self.selected_node >= nodes {
            self.selected_node = 0;
            self.selected_item = None;
        }
        if self.focus_root.is_some_and(|n| n >= nodes) {
            self.focus_root = None;
        }
        let items = self.sessions[self.selected].tree.nodes[self.selected_node]
            .transcript
            .len();
        if self.selected_item.is_some_and(|i| i >= items) {
            self.selected_item = None;
        }
        if self.focus == Focus::Gate && self.sessions[self.selected].active().is_none() {
            self.focus = Focus::Transcript;
        }
        let pending: std::collections::HashSet<_> = if self.inbox.marked.is_empty() {
            Default::default()
        } else {
            self.inbox_refs().collect()
        };
        self.inbox.marked.retain(|g| pending.contains(g));
        self.inbox.cursor = self.inbox.cursor.min(self.inbox_len().saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend_kind::BackendKind;

    #[test]
    fn two_views_keep_their_own_selection_and_overlay() {
        let mut s = State::new(BackendKind::Claude, "one", 0);
        s.add_session(BackendKind::Claude, "two");
        let mut b = ClientView::starting_from(&s);
        // A opens help on session one; B, swapped in, sees neither.
        s.overlay = Some(Overlay::Help);
        s.scroll_back = 7;
        s.swap_view(&mut b);
        assert!(s.overlay.is_none());
        assert_eq!(s.scroll_back, 0);
        s.select_session(1, 0);
        // Back to A: its help and scroll are where it left them, its session too.
        s.swap_view(&mut b);
        assert_eq!(s.overlay, Some(Overlay::Help));
        assert_eq!(s.scroll_back, 7);
        assert_eq!(s.selected, 0);
        s.swap_view(&mut b);
        assert_eq!(s.selected, 1);
        assert_eq!(s.sid(), s.sessions[1].id, "keys act on the view's session");
    }

    #[test]
    fn a_stale_view_is_brought_back_to_what_exists() {
        let mut s = State::new(BackendKind::Claude, "one", 0);
        let mut b = ClientView::starting_from(&s);
        b.focus = Focus::Gate;
        b.selected_node = 99;
        b.selected_item = Some(5);
        b.focus_root = Some(42);
        s.swap_view(&mut b);
        assert_eq!(s.focus, Focus::Transcript, "no gate to be on");
        assert_eq!(s.selected_node, 0);
        assert_eq!(s.selected_item, None);
        assert_eq!(s.focus_root, None);
    }
}
