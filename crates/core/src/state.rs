//! The whole UI state: plain data, no IO. The renderer reads it, `update` changes it.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};

use super::backend_kind::BackendKind;
use super::gate::{Gate, GateKind};
use super::input::Rect;
use super::msg::{Capabilities, Command, ConfigOption, TurnState};
use super::text_field::TextField;
use super::tree::{NodeId, Tree};

/// Which pane receives keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    Tree,
    Transcript,
    Prompt,
    Gate,
}

/// A full-screen or floating view over the main layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Overlay {
    Help,
    Log,
    Status,
    /// A value for the agent's mode (`m`), one of its options, or its model (Enter sets it).
    Picker {
        pick: Pick,
        cursor: usize,
    },
    /// `O`: the agent's session options with their values; Enter opens one's picker.
    Options {
        cursor: usize,
    },
    ConfirmQuit,
    /// The agent ignored a cancel past the grace period: stop it or keep waiting.
    AgentStuck,
    /// A read-only text view (the replay frame inspector).
    Text {
        title: String,
        body: String,
    },
    /// The active approval rules, with origin and hits; `d` deletes the highlighted one.
    Rules {
        cursor: usize,
    },
    /// `v`: a transcript item or the active gate, full screen and scrollable.
    Detail {
        node: NodeId,
        item: Option<usize>,
    },
    /// `I`: every pending gate of every session, oldest first, with batch triage.
    Inbox,
    /// Ctrl-N: start a session from a profile or an ACP command line.
    NewSession(NewSessionForm),
    /// `x` on a session with pending gates: closing answers them as quitting does.
    ConfirmClose {
        session: SessionId,
    },
    /// `u`: the shown session's queued messages; `e` edits one, `d` twice removes it.
    Queue {
        cursor: usize,
        /// The entry whose removal awaits a second `d`.
        confirm_remove: Option<String>,
    },
}

/// A queued message being edited in the prompt: Enter saves it (`Command::EditQueued`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueEdit {
    pub session: SessionId,
    pub entry_id: String,
}

/// The new-session dialog's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewSessionForm {
    /// Highlighted choice: a profile, then an ACP agent by command line, then a new harness
    /// session on each live iii engine.
    pub cursor: usize,
    pub field: NewSessionField,
    pub command: String,
    pub cwd: String,
    pub prompt: String,
    /// The engine session of the highlighted harness choice (kept by id, so a list that
    /// changes under the dialog never sends to another engine).
    pub engine: Option<SessionId>,
    pub model: String,
    /// Empty: none is sent (the router's default). Filled from the engine's profile, if any.
    pub provider: String,
    pub title: String,
    /// Allowed functions, comma separated.
    pub allow: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewSessionField {
    Choice,
    Command,
    Cwd,
    Prompt,
    Model,
    Provider,
    Title,
    Allow,
}

impl NewSessionForm {
    /// Whether the highlighted choice is the ACP command line (after every profile).
    pub fn is_command(&self, profiles: usize) -> bool {
        self.cursor == profiles
    }

    /// Which harness choice is highlighted (they follow the command line), if one is.
    pub fn harness(&self, profiles: usize) -> Option<usize> {
        self.cursor.checked_sub(profiles + 1)
    }

    pub fn text_mut(&mut self) -> Option<&mut String> {
        match self.field {
            NewSessionField::Choice => None,
            NewSessionField::Command => Some(&mut self.command),
            NewSessionField::Cwd => Some(&mut self.cwd),
            NewSessionField::Prompt => Some(&mut self.prompt),
            NewSessionField::Model => Some(&mut self.model),
            NewSessionField::Provider => Some(&mut self.provider),
            NewSessionField::Title => Some(&mut self.title),
            NewSessionField::Allow => Some(&mut self.allow),
        }
    }
}

/// A profile the new-session dialog offers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProfileChoice {
    pub name: String,
    pub backend: String,
    pub cwd: String,
    /// iii: the provider a new harness session on this profile's engine starts with.
    pub provider: Option<String>,
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

/// An in-place text editor inside the gate panel and what its text is for.
#[derive(Clone, Debug)]
pub struct Editor {
    pub purpose: EditorPurpose,
    pub area: TextField,
}

impl Editor {
    /// An editor holding `initial`, the cursor at its end.
    pub fn new(purpose: EditorPurpose, initial: &str) -> Editor {
        let area = TextField::from_lines(initial.lines().map(str::to_string).collect());
        Editor { purpose, area }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EditorPurpose {
    /// Deny message (`n`).
    DenyMessage,
    /// Tool input as JSON before allowing (`e`).
    EditInput,
    /// The whole reply body as JSON (`r`).
    RawReply,
    /// The "Other" answer of the question on this page.
    Other,
    /// Reason for blocking at a breakpoint (`b`).
    BlockReason,
    /// The value of the highlighted elicitation field.
    Field,
    /// A rule to save (`A`): `allow|ask|deny TOOL [PATTERN]`.
    Rule,
}

impl EditorPurpose {
    /// Multi-line editors submit with Ctrl-S; one-line editors with Enter.
    pub fn multiline(self) -> bool {
        matches!(self, EditorPurpose::EditInput | EditorPurpose::RawReply)
    }
}

/// Interaction state of one gate card (highlight, toggles, typed text).
#[derive(Clone, Debug, Default)]
pub struct GateUi {
    /// Highlighted choice in a permission/breakpoint/dialog card.
    pub choice: usize,
    /// The highlight was moved with the arrows (or starts on a refusal): only then does
    /// Enter pick it. A permission or breakpoint card starts on no choice, so an Enter meant
    /// for something else (a typed answer confirmed twice) never allows (issue 22 item 4).
    pub picked: bool,
    /// Question page and highlighted row (options, then "Other").
    pub page: usize,
    pub cursor: usize,
    /// Per question: which options are chosen.
    pub chosen: Vec<Vec<bool>>,
    /// Per question: the "Other" text and whether it is chosen.
    pub other: Vec<String>,
    pub other_on: Vec<bool>,
    /// Per question: whether the page was confirmed with Enter.
    pub confirmed: Vec<bool>,
    /// Elicitation field values, as typed.
    pub fields: Vec<String>,
    pub editor: Option<Editor>,
    /// Last validation error, shown in the card.
    pub error: Option<String>,
    /// Card body lines scrolled past (PgUp/PgDn) when the body is taller than the card.
    pub scroll: usize,
    /// Arrival order across the workspace (the inbox is oldest first).
    pub seq: u64,
    /// Opened while the session was offline: rules apply to it once the connection is back.
    pub rules_later: bool,
}

impl GateUi {
    pub fn for_gate(gate: &Gate) -> GateUi {
        let mut ui = GateUi::default();
        match &gate.kind {
            GateKind::Permission(p) => {
                // Asked to default to no: the highlight starts on the refusal, which Enter may
                // pick; otherwise on nothing.
                if p.default_to_no {
                    ui.choice = p
                        .choices()
                        .iter()
                        .position(|c| *c == super::gate::PermChoice::Deny)
                        .unwrap_or(0);
                    ui.picked = true;
                }
            }
            GateKind::Question(q) => {
                let n = q.questions.len();
                ui.chosen = q
                    .questions
                    .iter()
                    .map(|q| vec![false; q.options.len()])
                    .collect();
                ui.other = vec![String::new(); n];
                ui.other_on = vec![false; n];
                ui.confirmed = vec![false; n];
                // A question without options is answered by typing: the answer field has the
                // keys from the start (issue 22 item 3), so no letter triggers a card key.
                if q.questions.first().is_some_and(|s| s.options.is_empty()) {
                    ui.editor = Some(Editor::new(EditorPurpose::Other, ""));
                }
            }
            GateKind::Elicitation(e) => {
                ui.fields = e
                    .fields
                    .iter()
                    .map(|f| f.default.clone().unwrap_or_default())
                    .collect();
                if e.free_text() {
                    ui.editor = Some(Editor::new(EditorPurpose::Field, &ui.fields[0]));
                }
            }
            GateKind::Dialog(_) | GateKind::Breakpoint(_) => {}
        }
        ui
    }
}

/// Footer/session facts.
#[derive(Clone, Debug, Default)]
pub struct Session {
    pub backend: BackendKind,
    pub session_id: Option<String>,
    pub model: Option<String>,
    pub permission_mode: Option<String>,
    pub cwd: Option<String>,
    pub agent_version: Option<String>,
    pub program: Option<String>,
    pub pid: Option<u32>,
    pub tools: Vec<String>,
    pub interruptible: bool,
    pub turn: Option<TurnState>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    pub turns: u64,
    pub recording: Option<String>,
    /// The recording stopped early (disk full, I/O error): why. Shown until the end.
    pub recording_failed: Option<String>,
    /// Set once the agent process ended: (exit code, detail, stderr tail).
    pub exited: Option<(Option<i32>, String, Vec<String>)>,
    pub capabilities: Capabilities,
    /// What this session takes from the person.
    pub abilities: super::msg::Abilities,
    /// A network backend's connection state (`BackendEvent::Link`), for the status line.
    pub link: Option<String>,
    /// What the backend cannot see (`BackendEvent::Blind`): drawn above the transcript and in
    /// the status line until it is fixed.
    pub blind: Option<String>,
    /// Named facts from `BackendEvent::Info`, in arrival order (footer and status view).
    pub info: Vec<(String, String)>,
    /// Set while the backend's connection is down (`BackendEvent::Connection`, iii
    /// reconnecting): what it is doing. The session is drawn greyed and no decision is sent.
    pub offline: Option<String>,
}

/// Settings that change behaviour, from the command line or config.
#[derive(Clone, Debug)]
pub struct Settings {
    pub bell: bool,
    /// How long after a cancel with no turn end the agent counts as not responding.
    pub cancel_grace_ms: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            bell: true,
            cancel_grace_ms: super::update::cancel::DEFAULT_GRACE_MS,
        }
    }
}

/// Numbers the renderer measured and the reducer uses for page-sized moves.
#[derive(Clone, Debug, Default)]
pub struct ViewMetrics {
    pub transcript_height: Cell<u16>,
    /// The scroll offset actually drawn, in lines from the bottom.
    pub drawn_scroll_back: Cell<usize>,
    pub tree_top: Cell<usize>,
    /// Inner areas of the tree and transcript panes, for the mouse.
    pub tree_area: Cell<Rect>,
    pub transcript_area: Cell<Rect>,
    /// (Session index, node) shown on each drawn tree row (two rows per node), from the top
    /// of the pane.
    pub tree_rows: std::cell::RefCell<Vec<(usize, NodeId)>>,
    /// Transcript item shown on each drawn row, from the top of the pane.
    pub item_rows: std::cell::RefCell<Vec<usize>>,
    /// How far the gate card's body can scroll at the size last drawn (0: it all fits).
    pub card_max_scroll: Cell<usize>,
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

/// Which session of the workspace: stable for the life of the process, never reused, so an
/// event or a decision can never reach another session than the one it names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub u32);

impl SessionId {
    /// The session of a one-session workspace (`switchboard claude`, `acp`, `demo`, replay).
    pub const FIRST: SessionId = SessionId(0);
}

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A pending gate anywhere in the workspace.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GateRef {
    pub session: SessionId,
    pub id: String,
}

/// One session of the workspace: what its agent told us and what is pending there.
#[derive(Clone, Debug)]
pub struct SessionState {
    pub id: SessionId,
    pub tree: Tree,
    /// Pending gates in arrival order.
    pub gates: VecDeque<Gate>,
    pub gate_ui: HashMap<String, GateUi>,
    /// The gate this session's card shows (the panel shows the selected session's).
    pub active_gate: Option<String>,
    pub session: Session,
    /// Answered or withdrawn request ids, to refuse a second answer.
    pub closed_gates: VecDeque<String>,
    /// Ids of requests answered during this session, for the footer count.
    pub answered: u64,
    /// When the first cancel of the running turn went out (cleared when the turn ends).
    pub cancel_sent_ms: Option<u64>,
    /// The turn outlived the cancel by the grace period: the agent is not responding.
    pub cancel_stuck: bool,
    /// Checks a hand-written reply body against the backend's schema definition.
    pub reply_check: ReplyCheck,
    /// The tree shows only this session's root row.
    pub collapsed: bool,
    /// The session was closed (`x`): its row stays, read-only, until the workspace ends.
    pub closed: bool,
    /// The `[[session]]` profile it was started from (restart uses it).
    pub profile: Option<String>,
    /// Quitting or closing leaves its gates pending where they live (an engine's durable
    /// holds): they are closed here with an audit row, never answered.
    pub keeps_gates_on_quit: bool,
    /// Messages waiting in the agent's queue (iii), oldest first.
    pub queue: super::msg::Queue,
    /// This source can start harness sessions now (a live iii engine: its URL).
    pub harness_host: Option<String>,
}

impl SessionState {
    pub fn new(id: SessionId, backend: BackendKind, root_name: &str, now_ms: u64) -> SessionState {
        SessionState {
            id,
            tree: Tree::new(root_name, now_ms),
            gates: VecDeque::new(),
            gate_ui: HashMap::new(),
            active_gate: None,
            session: Session {
                backend,
                ..Session::default()
            },
            closed_gates: VecDeque::new(),
            answered: 0,
            cancel_sent_ms: None,
            cancel_stuck: false,
            reply_check: no_reply_schema,
            collapsed: false,
            closed: false,
            profile: None,
            keeps_gates_on_quit: false,
            queue: super::msg::Queue::default(),
            harness_host: None,
        }
    }

    /// The name the tree shows for this session (its root's name).
    pub fn name(&self) -> &str {
        &self.tree.nodes[0].name
    }

    pub fn gate(&self, id: &str) -> Option<&Gate> {
        self.gates.iter().find(|g| g.id == id)
    }

    pub fn active(&self) -> Option<&Gate> {
        self.active_gate.as_deref().and_then(|id| self.gate(id))
    }

    pub fn active_ui(&self) -> Option<&GateUi> {
        self.active_gate
            .as_deref()
            .and_then(|id| self.gate_ui.get(id))
    }

    /// Pending gates whose node is `node` (not its descendants): kept by the tree as gates
    /// open and close, so a tree row's badge costs O(1).
    pub fn gates_on(&self, node: NodeId) -> usize {
        self.tree.pending_on(node)
    }

    /// Pending gates at `node` or anywhere below it.
    pub fn gates_within(&self, node: NodeId) -> usize {
        self.gates
            .iter()
            .filter(|g| {
                self.tree
                    .is_within(self.tree.resolve(Some(&g.node_key)), node)
            })
            .count()
    }

    /// The agent's option of this category (`mode`, `model`), if it declared one.
    pub fn option_of(&self, category: &str) -> Option<&ConfigOption> {
        self.session.capabilities.option_of(category)
    }

    /// What a picker offers, as (value, label): only what this agent declared (Claude Code's
    /// permission modes come from the Claude backend, never offered to another agent).
    pub fn pick_choices(&self, pick: &Pick) -> Vec<(String, String)> {
        let caps = &self.session.capabilities;
        match pick {
            Pick::Mode => match self.option_of("mode") {
                Some(o) => o.choices.clone(),
                None => caps.modes.iter().map(|m| (m.clone(), m.clone())).collect(),
            },
            Pick::Option(id) => caps
                .options
                .iter()
                .find(|o| o.id == *id)
                .map(|o| o.choices.clone())
                .unwrap_or_default(),
            Pick::Model => caps.models.clone(),
        }
    }

    /// The value a picker starts on (the current one).
    pub fn pick_current(&self, pick: &Pick) -> Option<String> {
        let caps = &self.session.capabilities;
        match pick {
            Pick::Mode => match self.option_of("mode") {
                Some(o) => Some(o.current.clone()),
                None => self.session.permission_mode.clone(),
            },
            Pick::Option(id) => caps
                .options
                .iter()
                .find(|o| o.id == *id)
                .map(|o| o.current.clone()),
            Pick::Model => self.session.model.clone(),
        }
    }

    /// The command that sets `value` for `pick`.
    pub fn pick_command(&self, pick: &Pick, value: String) -> Command {
        match pick {
            Pick::Mode => match self.option_of("mode") {
                Some(o) => Command::SetConfig {
                    id: o.id.clone(),
                    value,
                },
                None => Command::SetMode(value),
            },
            Pick::Option(id) => Command::SetConfig {
                id: id.clone(),
                value,
            },
            Pick::Model => Command::SetModel(value),
        }
    }

    /// The rows of `O`: every option the agent declared (name, current value's label, its
    /// picker), and its modes and models when declared outside options.
    pub fn option_rows(&self) -> Vec<(String, String, Pick)> {
        let caps = &self.session.capabilities;
        let mut rows: Vec<(String, String, Pick)> = caps
            .options
            .iter()
            .map(|o| {
                (
                    o.name.clone(),
                    o.current_label().to_string(),
                    Pick::Option(o.id.clone()),
                )
            })
            .collect();
        if self.option_of("mode").is_none() && !caps.modes.is_empty() {
            let cur = self.session.permission_mode.clone().unwrap_or_default();
            rows.push(("mode".into(), cur, Pick::Mode));
        }
        if self.option_of("model").is_none() && !caps.models.is_empty() {
            let cur = self.session.model.clone().unwrap_or_default();
            rows.push(("model".into(), cur, Pick::Model));
        }
        rows
    }

    /// Where this session stands, for its tree row.
    pub fn status_label(&self) -> String {
        if self.closed {
            return "closed".into();
        }
        if let Some((code, _, _)) = &self.session.exited {
            return match code {
                Some(c) => format!("exited {c}"),
                None => "exited".into(),
            };
        }
        if let Some(why) = &self.session.offline {
            return why.clone();
        }
        if self.session.blind.is_some() {
            // Above everything else it could say: it may look idle while calls run unseen.
            return "⚠ blind: calls may run unapproved".into();
        }
        if !self.gates.is_empty() {
            return "waiting on you".into();
        }
        match self.session.turn {
            None if self.session.program.is_none() => "starting".into(),
            Some(TurnState::Running) => "running".into(),
            Some(TurnState::RequiresAction) => "waiting on held calls".into(),
            _ => "idle".into(),
        }
    }
}

/// What a picker (`Overlay::Picker`) chooses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pick {
    /// The agent's mode: its `mode` option, or the modes it declared.
    Mode,
    /// One of the agent's session options, by id.
    Option(String),
    /// A model the agent declared outside its options.
    Model,
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

/// `(definition, body) -> Ok or the reasons it does not match`; supplied by the backend.
pub type ReplyCheck = fn(&str, &serde_json::Value) -> Result<(), String>;

fn no_reply_schema(definition: &str, _: &serde_json::Value) -> Result<(), String> {
    Err(format!("no schema is loaded to check a {definition} reply"))
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
        self.tree.gate_opened(&gate.node_key);
        self.gate_ui.insert(gate.id.clone(), ui);
        self.gates.push_back(gate);
    }

    /// Take the pending gate at `pos` of the acting session off every list that holds it.
    /// Its card state stays until `remember_closed`.
    pub fn remove_gate(&mut self, pos: usize) -> Option<Gate> {
        let gate = self.gates.remove(pos)?;
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
