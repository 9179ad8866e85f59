//! One session of the workspace: its facts, its pending gates and what its pickers offer.

use std::collections::{HashMap, VecDeque};

use crate::backend_kind::BackendKind;
use crate::gate::Gate;
use crate::msg::{Capabilities, Command, ConfigOption, TurnState};
use crate::session_id::SessionId;
use crate::tree::{NodeId, Tree};

use super::gate_ui::GateUi;

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
    pub abilities: crate::msg::Abilities,
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
    pub closed_gates: super::ClosedGates,
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
    pub queue: crate::msg::Queue,
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
            closed_gates: Default::default(),
            answered: 0,
            cancel_sent_ms: None,
            cancel_stuck: false,
            reply_check: no_reply_schema,
            collapsed: false,
            closed: false,
            profile: None,
            keeps_gates_on_quit: false,
            queue: crate::msg::Queue::default(),
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
            if self.session.backend == BackendKind::Adopted {
                // It ran in its own terminal and ended there (SessionEnd).
                return "ended".into();
            }
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
            Some(TurnState::AwaitingInput) => "waiting for input".into(),
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

/// `(definition, body) -> Ok or the reasons it does not match`; supplied by the backend.
pub type ReplyCheck = fn(&str, &serde_json::Value) -> Result<(), String>;

fn no_reply_schema(definition: &str, _: &serde_json::Value) -> Result<(), String> {
    Err(format!("no schema is loaded to check a {definition} reply"))
}
