//! The whole UI state: plain data, no IO. The renderer reads it, `update` changes it.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};

use ratatui_textarea::TextArea;

use super::gate::{Gate, GateKind};
use super::msg::{Capabilities, TurnState};
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
    ModePicker {
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
    pub area: TextArea<'static>,
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
}

impl GateUi {
    pub fn for_gate(gate: &Gate) -> GateUi {
        let mut ui = GateUi::default();
        match &gate.kind {
            GateKind::Permission(p) => {
                ui.choice = if p.default_to_no {
                    let choices = p.choices();
                    choices
                        .iter()
                        .position(|c| *c == super::gate::PermChoice::Deny)
                        .unwrap_or(0)
                } else {
                    0
                };
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
            }
            GateKind::Elicitation(e) => {
                ui.fields = e
                    .fields
                    .iter()
                    .map(|f| f.default.clone().unwrap_or_default())
                    .collect();
            }
            GateKind::Dialog(_) | GateKind::Breakpoint(_) => {}
        }
        ui
    }
}

/// Footer/session facts.
#[derive(Clone, Debug, Default)]
pub struct Session {
    pub backend: String,
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
    /// Named facts from `BackendEvent::Info`, in arrival order (footer and status view).
    pub info: Vec<(String, String)>,
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
    pub tree_area: Cell<ratatui::layout::Rect>,
    pub transcript_area: Cell<ratatui::layout::Rect>,
    /// Node shown on each drawn tree row (two rows per node), from the top of the pane.
    pub tree_rows: std::cell::RefCell<Vec<NodeId>>,
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

#[derive(Clone, Debug)]
pub struct State {
    pub tree: Tree,
    /// Pending gates in arrival order.
    pub gates: VecDeque<Gate>,
    pub gate_ui: HashMap<String, GateUi>,
    /// The gate shown in the bottom panel.
    pub active_gate: Option<String>,
    pub focus: Focus,
    pub overlay: Option<Overlay>,
    pub selected_node: NodeId,
    /// Selected transcript item of the selected node (for expand/collapse).
    pub selected_item: Option<usize>,
    /// Transcript lines scrolled back from the tail; 0 follows the tail.
    pub scroll_back: usize,
    pub prompt: TextArea<'static>,
    pub session: Session,
    pub settings: Settings,
    /// The agent's stderr and our notes, newest last, bounded.
    pub log: VecDeque<String>,
    pub log_scroll: usize,
    pub overlay_scroll: usize,
    pub now_ms: u64,
    pub size: (u16, u16),
    pub view: ViewMetrics,
    /// Answered or withdrawn request ids, to refuse a second answer.
    pub closed_gates: VecDeque<String>,
    pub quitting: bool,
    /// When the first cancel of the running turn went out (cleared when the turn ends).
    pub cancel_sent_ms: Option<u64>,
    /// The turn outlived the cancel by the grace period: the agent is not responding.
    pub cancel_stuck: bool,
    pub status_line: Option<String>,
    /// Ids of requests answered during this session, for the footer count.
    pub answered: u64,
    /// Checks a hand-written reply body against the backend's schema definition.
    pub reply_check: ReplyCheck,
    /// Set in replay mode: the UI is read-only and the footer shows the player.
    pub replay: Option<ReplayView>,
    /// Approval rules: session rules plus those loaded from rules files.
    pub rules: super::rules::Rules,
    /// Where new saved rules go (`A`); `None` disables saving.
    pub rules_file: Option<String>,
    /// Key overrides: pressed key → the default key it stands for.
    pub keymap: HashMap<char, char>,
    pub search: Option<Search>,
    /// `f`: the tree shows only this node's subtree; `F` clears it.
    pub focus_root: Option<NodeId>,
    /// `t`: diffs side by side when the pane is wide enough.
    pub side_by_side: bool,
    /// A key was typed into the prompt since it last sent or gained focus: a new gate must
    /// not take the keyboard (the next letter could answer it).
    pub typed_since_send: bool,
    /// The rules-view row whose deletion from its file awaits a second `d`.
    pub pending_delete: Option<usize>,
}

/// `(definition, body) -> Ok or the reasons it does not match`; supplied by the backend.
pub type ReplyCheck = fn(&str, &serde_json::Value) -> Result<(), String>;

fn no_reply_schema(definition: &str, _: &serde_json::Value) -> Result<(), String> {
    Err(format!("no schema is loaded to check a {definition} reply"))
}

pub const LOG_CAP: usize = 5_000;
pub const CLOSED_CAP: usize = 2_000;

impl State {
    pub fn new(backend: &str, root_name: &str, now_ms: u64) -> State {
        let mut prompt = TextArea::default();
        prompt.set_placeholder_text("Message the agent (Enter sends, Alt-Enter newline)");
        prompt.set_cursor_line_style(ratatui::style::Style::default());
        State {
            tree: Tree::new(root_name, now_ms),
            gates: VecDeque::new(),
            gate_ui: HashMap::new(),
            active_gate: None,
            focus: Focus::Prompt,
            overlay: None,
            selected_node: 0,
            selected_item: None,
            scroll_back: 0,
            prompt,
            session: Session {
                backend: backend.to_string(),
                ..Session::default()
            },
            settings: Settings::default(),
            log: VecDeque::new(),
            log_scroll: 0,
            overlay_scroll: 0,
            now_ms,
            size: (80, 24),
            view: ViewMetrics::default(),
            closed_gates: VecDeque::new(),
            quitting: false,
            cancel_sent_ms: None,
            cancel_stuck: false,
            status_line: None,
            answered: 0,
            reply_check: no_reply_schema,
            replay: None,
            rules: super::rules::Rules::default(),
            rules_file: None,
            keymap: HashMap::new(),
            search: None,
            focus_root: None,
            side_by_side: false,
            typed_since_send: false,
            pending_delete: None,
        }
    }

    pub fn gate(&self, id: &str) -> Option<&Gate> {
        self.gates.iter().find(|g| g.id == id)
    }

    pub fn active(&self) -> Option<&Gate> {
        self.active_gate.as_deref().and_then(|id| self.gate(id))
    }

    /// Pending gates whose node is `node` (not its descendants).
    pub fn gates_on(&self, node: NodeId) -> usize {
        let key = &self.tree.nodes[node].key;
        self.gates.iter().filter(|g| &g.node_key == key).count()
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

    pub fn push_log(&mut self, line: String) {
        if self.log.len() == LOG_CAP {
            self.log.pop_front();
        }
        self.log.push_back(line);
    }

    /// The modes the `m` picker offers: the agent's own (ACP) when it declared any, else the
    /// Claude permission modes.
    pub fn mode_choices(&self) -> Vec<String> {
        if self.session.capabilities.modes.is_empty() {
            PERMISSION_MODES.iter().map(|m| m.to_string()).collect()
        } else {
            self.session.capabilities.modes.clone()
        }
    }

    /// The text of the prompt box.
    pub fn prompt_text(&self) -> String {
        self.prompt.lines().join("\n")
    }
}
