//! The whole UI state: plain data, no IO. The renderer reads it, `update` changes it.
//!
//! The workspace (`State`) and the view facts around it live here; one session's state in
//! `session.rs`, a gate card's interaction state in `gate_ui.rs`, the overlays in
//! `overlay.rs`.

use std::collections::{HashMap, VecDeque};

use super::backend_kind::BackendKind;
use super::gate::Gate;
use super::text_field::TextField;
use super::tree::NodeId;

mod client_view;
mod closed_gates;
mod gate_ui;
mod overlay;
mod session;

pub use crate::session_id::SessionId;
/// What a frame drew (its own module: `Msg::Drawn` carries it).
pub use crate::view_metrics::ViewMetrics;
pub use client_view::ClientView;
pub use closed_gates::ClosedGates;
pub use gate_ui::{Editor, EditorPurpose, GateUi};
pub use overlay::{NewSessionField, NewSessionForm, Overlay, ProfileChoice, QueueEdit};
pub use session::{GateRef, Pick, ReplyCheck, Session, SessionState};

/// Which pane receives keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    Tree,
    Transcript,
    Prompt,
    Gate,
}

/// What replay mode shows: position, time, speed, and the recorded answer of each gate.
#[derive(Clone, Debug, Default)]
pub struct ReplayView {
    pub frame: usize,
    pub total: usize,
    pub time: String,
    pub playing: bool,
    pub speed: String,
    /// Gate id → "allowed once at 05:40:53" (from the recorded reply).
    pub answers: HashMap<String, String>,
}

/// The permission modes the Claude CLI accepts for `set_permission_mode`.
pub const PERMISSION_MODES: [&str; 6] = [
    "default",
    "acceptEdits",
    "plan",
    "bypassPermissions",
    "dontAsk",
    "auto",
];

/// Settings that change behaviour, from the command line or config.
#[derive(Clone, Debug)]
pub struct Settings {
    pub bell: bool,
    /// How long after a cancel with no turn end the agent counts as not responding.
    pub cancel_grace_ms: u64,
    /// How long a card, as it is now, must have been on a terminal's screen before its
    /// answer keys act (`[keys] settle_ms`; 0: at once). The edge measures it per terminal
    /// from the frame that terminal drew (`switchboard_tui::settle`); the reducer only says
    /// so when a key was held (`Msg::Held`).
    pub settle_ms: u64,
}

/// Default grace period between a cancel and the "not responding" prompt.
pub const DEFAULT_GRACE_MS: u64 = 10_000;

/// Default settle time: browsers hold a permission prompt's keys for about this long after
/// it appears, so a key typed for what stood there before cannot answer it.
pub const DEFAULT_SETTLE_MS: u64 = 300;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            bell: true,
            cancel_grace_ms: DEFAULT_GRACE_MS,
            settle_ms: DEFAULT_SETTLE_MS,
        }
    }
}

/// A transcript search (`/` in the selected node, Ctrl-F in all nodes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Search {
    pub query: String,
    /// The query is being typed in the footer.
    pub editing: bool,
    pub all_nodes: bool,
    /// (node, item) of every match, in tree order.
    pub hits: Vec<(NodeId, usize)>,
    pub current: Option<usize>,
}

/// Where a pending gate sits in the inbox: (opened at, arrival stamp).
type Order = (u64, u64);

/// The workspace: every session, and what the human is doing (focus, overlay, prompt, search,
/// the selected session and node). Derefs to the session the current step acts on: a key acts
/// on the selected session, a backend event on its own (`with_session`).
#[derive(Clone, Debug)]
pub struct State {
    /// The sessions in creation order.
    pub sessions: Vec<SessionState>,
    /// Index of the session the human looks at (tree selection, transcript, card).
    pub selected: usize,
    /// Index of the session the current step acts on: `selected`, except inside
    /// `with_session`.
    acting: usize,
    /// The next id `add_session` hands out.
    next_session: u32,
    /// Arrival stamp of the next gate: the inbox is oldest first across sessions.
    next_gate_seq: u64,
    /// Every pending gate of every session as ((opened at, arrival stamp), session, id),
    /// oldest first: kept as gates open and close, so the inbox draws its window without
    /// sorting them all. The time a gate opened comes first: an iii held call opened when the
    /// engine held it (`pending_at`), however late or out of order we hear of it.
    pending_order: Vec<(Order, SessionId, String)>,
    /// Gates opened plus gates closed so far: a screen drawn at one count shows other gates
    /// than the state at another (a host refuses a client's card keys across a change).
    gate_changes: u64,
    /// When the bell last rang for a gate in a session not on screen (once per burst).
    pub last_background_bell_ms: Option<u64>,
    pub focus: Focus,
    pub overlay: Option<Overlay>,
    pub selected_node: NodeId,
    /// Selected transcript item of the selected node (for expand/collapse).
    pub selected_item: Option<usize>,
    /// Transcript lines scrolled back from the tail; 0 follows the tail.
    pub scroll_back: usize,
    pub prompt: TextField,
    pub settings: Settings,
    /// The agents' stderr and our notes, newest last, bounded.
    pub log: VecDeque<String>,
    pub log_scroll: usize,
    pub overlay_scroll: usize,
    pub now_ms: u64,
    pub size: (u16, u16),
    pub view: ViewMetrics,
    pub quitting: bool,
    pub status_line: Option<String>,
    /// Set in replay mode: the UI is read-only and the footer shows the player.
    pub replay: Option<ReplayView>,
    /// Approval rules: the rules files' (every session) and session-scoped ones.
    pub rules: super::rules::Rules,
    /// Where new saved rules go (`A`); `None` disables saving.
    pub rules_file: Option<String>,
    /// Key overrides: pressed key → the default key it stands for.
    pub keymap: HashMap<char, char>,
    pub search: Option<Search>,
    /// `f`: the tree shows only this node's subtree (of the selected session); `F` clears it.
    pub focus_root: Option<NodeId>,
    /// `t`: diffs side by side when the pane is wide enough.
    pub side_by_side: bool,
    /// A key was typed into the prompt since it last sent or gained focus: a new gate must
    /// not take the keyboard (the next letter could answer it).
    pub typed_since_send: bool,
    /// The rules-view row whose deletion from its file awaits a second `d`.
    pub pending_delete: Option<usize>,
    /// The inbox view's marks (batch triage) and highlighted row.
    pub inbox: InboxView,
    /// Profiles the new-session dialog offers, set by the app.
    pub profiles: Vec<ProfileChoice>,
    /// A queued message is in the prompt being edited.
    pub queue_edit: Option<QueueEdit>,
    /// The host's name when this workspace runs under a host (`--name`): the detach key
    /// leaves it running. `None`: the workspace lives in this terminal.
    pub hosted: Option<String>,
}

/// The inbox overlay's own state: which row is highlighted and which gates are marked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InboxView {
    pub cursor: usize,
    /// A set: marking and drawing cost the number of gates, not gates × marks.
    pub marked: std::collections::HashSet<GateRef>,
    /// The one message a batch deny sends, while it is typed.
    pub deny_message: Option<String>,
}

impl std::ops::Deref for State {
    type Target = SessionState;
    fn deref(&self) -> &SessionState {
        &self.sessions[self.acting]
    }
}

impl std::ops::DerefMut for State {
    fn deref_mut(&mut self) -> &mut SessionState {
        &mut self.sessions[self.acting]
    }
}

pub const LOG_CAP: usize = 5_000;
pub const CLOSED_CAP: usize = 2_000;

impl State {
    /// A workspace of one session (`backend`, root named `root_name`).
    pub fn new(backend: BackendKind, root_name: &str, now_ms: u64) -> State {
        let prompt = TextField::default();
        State {
            sessions: vec![SessionState::new(
                SessionId::FIRST,
                backend,
                root_name,
                now_ms,
            )],
            selected: 0,
            acting: 0,
            next_session: 1,
            next_gate_seq: 0,
            pending_order: Vec::new(),
            gate_changes: 0,
            last_background_bell_ms: None,
            focus: Focus::Prompt,
            overlay: None,
            selected_node: 0,
            selected_item: None,
            scroll_back: 0,
            prompt,
            settings: Settings::default(),
            log: VecDeque::new(),
            log_scroll: 0,
            overlay_scroll: 0,
            now_ms,
            size: (80, 24),
            view: ViewMetrics::default(),
            quitting: false,
            status_line: None,
            replay: None,
            rules: super::rules::Rules::default(),
            rules_file: None,
            keymap: HashMap::new(),
            search: None,
            focus_root: None,
            side_by_side: false,
            typed_since_send: false,
            pending_delete: None,
            inbox: InboxView::default(),
            profiles: Vec::new(),
            queue_edit: None,
            hosted: None,
        }
    }

    /// Open another session; returns its id. Its root joins the tree after the others.
    pub fn add_session(&mut self, backend: BackendKind, root_name: &str) -> SessionId {
        let id = SessionId(self.next_session);
        self.next_session += 1;
        self.sessions
            .push(SessionState::new(id, backend, root_name, self.now_ms));
        id
    }

    /// Where session `id` sits in `sessions`.
    pub fn index_of(&self, id: SessionId) -> Option<usize> {
        self.sessions.iter().position(|s| s.id == id)
    }

    pub fn session_by_id(&self, id: SessionId) -> Option<&SessionState> {
        self.sessions.iter().find(|s| s.id == id)
    }

    /// The session the human looks at.
    pub fn shown(&self) -> &SessionState {
        &self.sessions[self.selected]
    }

    /// Whether the current step acts on the session on screen.
    pub fn acting_on_shown(&self) -> bool {
        self.acting == self.selected
    }

    /// Id of the session the current step acts on.
    pub fn sid(&self) -> SessionId {
        self.sessions[self.acting].id
    }

    /// Run `f` acting on session index `i` (a backend event, a batch answer), then act on the
    /// selected session again.
    #[inline]
    pub fn with_session<R>(&mut self, i: usize, f: impl FnOnce(&mut State) -> R) -> R {
        let before = self.acting;
        self.acting = i.min(self.sessions.len() - 1);
        let r = f(self);
        self.acting = before.min(self.sessions.len() - 1);
        r
    }

    /// Show session `i`: the tree selects its root (or `node`), the transcript and card follow.
    pub fn select_session(&mut self, i: usize, node: NodeId) {
        let i = i.min(self.sessions.len() - 1);
        if i != self.selected {
            self.search = None;
            self.focus_root = None;
        }
        self.selected = i;
        self.acting = i;
        if self.focus == Focus::Gate && self.sessions[i].active().is_none() {
            self.focus = Focus::Tree;
        }
        self.selected_node = node;
        self.selected_item = None;
        self.scroll_back = 0;
    }

    /// Stamp a new gate's arrival (inbox order).
    pub fn next_gate_seq(&mut self) -> u64 {
        self.next_gate_seq += 1;
        self.next_gate_seq
    }

    /// Make `gate` pending in the acting session with its card state `ui` (whose `seq` places
    /// it in the inbox): the session's list, the tree's badges and the inbox order follow.
    pub fn push_gate(&mut self, gate: Gate, ui: GateUi) {
        let (key, sid) = ((gate.opened_ms, ui.seq), self.sid());
        let at = self.pending_order.partition_point(|(s, ..)| *s <= key);
        self.pending_order.insert(at, (key, sid, gate.id.clone()));
        self.gate_changes += 1;
        self.tree.gate_opened(&gate.node_key);
        self.gate_ui.insert(gate.id.clone(), ui);
        self.gates.push_back(gate);
    }

    /// Take the pending gate at `pos` of the acting session off every list that holds it.
    /// Its card state stays until `remember_closed`.
    pub fn remove_gate(&mut self, pos: usize) -> Option<Gate> {
        let gate = self.gates.remove(pos)?;
        self.gate_changes += 1;
        self.tree.gate_closed(&gate.node_key);
        let sid = self.sid();
        let is = |e: &(Order, SessionId, String)| e.1 == sid && e.2 == gate.id;
        let found = match self.gate_ui.get(&gate.id) {
            Some(ui) => {
                let key = (gate.opened_ms, ui.seq);
                let from = self.pending_order.partition_point(|(s, ..)| *s < key);
                self.pending_order[from..]
                    .iter()
                    .take_while(|(s, ..)| *s == key)
                    .position(is)
                    .map(|k| from + k)
            }
            None => None,
        };
        if let Some(k) = found.or_else(|| self.pending_order.iter().position(is)) {
            self.pending_order.remove(k);
        }
        Some(gate)
    }

    /// How many times a gate opened or closed so far.
    pub fn gate_changes(&self) -> u64 {
        self.gate_changes
    }

    /// Pending gates in the inbox order (those the reducer opened).
    pub fn inbox_len(&self) -> usize {
        self.pending_order.len()
    }

    /// The `k`-th oldest pending gate anywhere: (session index, gate). O(sessions + that
    /// session's gates), whatever the number of gates elsewhere.
    pub fn inbox_at(&self, k: usize) -> Option<(usize, &Gate)> {
        let (_, sid, id) = self.pending_order.get(k)?;
        let i = self.index_of(*sid)?;
        Some((i, self.sessions[i].gate(id)?))
    }

    /// Where gate `id` of session index `i` sits in the inbox order (O(log gates) by its
    /// arrival stamp).
    pub fn inbox_position(&self, i: usize, id: &str) -> Option<usize> {
        let s = self.sessions.get(i)?;
        let seq = (s.gate(id)?.opened_ms, s.gate_ui.get(id)?.seq);
        let from = self.pending_order.partition_point(|(q, ..)| *q < seq);
        self.pending_order[from..]
            .iter()
            .take_while(|(q, ..)| *q == seq)
            .position(|(_, sid, g)| *sid == s.id && g == id)
            .map(|k| from + k)
    }

    /// The inbox order as references, oldest first.
    pub fn inbox_refs(&self) -> impl Iterator<Item = GateRef> + '_ {
        self.pending_order.iter().map(|(_, sid, id)| GateRef {
            session: *sid,
            id: id.clone(),
        })
    }

    /// Every pending gate of every session, oldest first, found by walking every session's
    /// gates and sorting them (for callers outside the frame; the inbox draws from
    /// `inbox_at`).
    pub fn inbox(&self) -> Vec<(u64, usize, &Gate)> {
        let mut all: Vec<(u64, usize, &Gate)> = self
            .sessions
            .iter()
            .enumerate()
            .flat_map(|(i, s)| {
                s.gates.iter().map(move |g| {
                    let seq = s.gate_ui.get(&g.id).map_or(0, |u| u.seq);
                    (seq, i, g)
                })
            })
            .collect();
        all.sort_by_key(|(seq, i, g)| (g.opened_ms, *seq, *i));
        all
    }

    /// Pending gates across the workspace.
    pub fn pending_total(&self) -> usize {
        self.sessions.iter().map(|s| s.gates.len()).sum()
    }

    pub fn push_log(&mut self, line: String) {
        if self.log.len() == LOG_CAP {
            self.log.pop_front();
        }
        self.log.push_back(line);
    }

    /// Sessions that can start a harness session now (live iii engines, not closed), in
    /// workspace order: the new-session dialog's harness choices.
    pub fn harness_hosts(&self) -> Vec<(SessionId, &str)> {
        self.sessions
            .iter()
            .filter(|s| !s.closed && s.session.exited.is_none())
            .filter_map(|s| s.harness_host.as_deref().map(|h| (s.id, h)))
            .collect()
    }

    /// The text of the prompt box.
    pub fn prompt_text(&self) -> String {
        self.prompt.text()
    }
}
