//! What flows into the reducer (`Msg`) and out of it (`Effect`).

use crossterm::event::{KeyEvent, MouseEvent};

use super::gate::{Decision, Gate};
use super::state::SessionId;
use super::transcript::{ItemOp, Level};
use super::tree::NodePatch;

/// Input to `update`. Moved once into the reducer and never stored.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Msg {
    Key(KeyEvent),
    Paste(String),
    Mouse(MouseEvent),
    Resize(u16, u16),
    /// Wall-clock time for elapsed-time displays (the reducer never reads a clock).
    Tick(u64),
    /// An event from session `session`'s backend.
    Backend {
        session: SessionId,
        at_ms: u64,
        event: BackendEvent,
    },
}

/// What a backend sends the app: one event and when it happened. The app adds which session
/// it belongs to (each session has its own channel), so backends know nothing of workspaces.
#[derive(Debug)]
pub struct Stamped {
    pub at_ms: u64,
    pub event: BackendEvent,
}

/// A protocol-neutral event produced by a backend's mapping layer. Moved once through the
/// channel into the reducer, never stored, so variant sizes do not matter.
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum BackendEvent {
    /// The agent process is up.
    Started {
        program: String,
        pid: Option<u32>,
    },
    Session(SessionPatch),
    /// What the agent offers (from the initialize reply): shown in the status view.
    Capabilities(Capabilities),
    NodeOpen {
        key: String,
        parent: Option<String>,
        patch: NodePatch,
    },
    NodeUpdate {
        key: String,
        patch: NodePatch,
    },
    Item {
        node: Option<String>,
        op: ItemOp,
    },
    GateOpen(Gate),
    /// The agent withdrew a request; it must never be answered.
    GateWithdrawn {
        id: String,
    },
    /// A recording shows this gate was answered (replay): close it with the recorded decision.
    GateAnswered {
        id: String,
        decision: Decision,
    },
    /// The backend answered this gate itself (an ACP `session/cancel` cancels its permissions):
    /// close it with that decision; the human can no longer answer it.
    GateClosed {
        id: String,
        decision: Decision,
    },
    Turn(TurnState),
    /// Cumulative usage after a turn.
    Usage {
        input_tokens: u64,
        output_tokens: u64,
        cost_usd: f64,
    },
    Stderr(String),
    Protocol {
        level: Level,
        text: String,
    },
    Exited {
        code: Option<i32>,
        detail: String,
        stderr_tail: Vec<String>,
    },
    /// Where the recording of this session is written.
    Recording(String),
    /// The recording stopped (could not be created or written): why.
    RecordingFailed(String),
    /// The backend's connection went down (`online: false`, iii reconnecting) or is usable
    /// again: while down the session is greyed and decisions on its gates are refused;
    /// `detail` says what it is doing ("reconnecting to the engine").
    Connection {
        online: bool,
        detail: String,
    },
    /// A named session fact for the footer and the status view (ACP: title, context usage,
    /// cost); `None` removes it.
    Info {
        key: String,
        value: Option<String>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnState {
    Running,
    Idle,
    RequiresAction,
}

/// Session facts for the footer; `None` fields are unchanged.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionPatch {
    pub session_id: Option<String>,
    pub model: Option<String>,
    pub permission_mode: Option<String>,
    pub cwd: Option<String>,
    pub agent_version: Option<String>,
    pub tools: Option<Vec<String>>,
    /// True once the agent can take an interrupt (Claude: after `system/init`).
    pub interruptible: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Capabilities {
    pub models: Vec<(String, String)>,
    pub commands: Vec<(String, String)>,
    pub agents: Vec<(String, String)>,
    pub modes: Vec<String>,
    pub extra: Vec<(String, String)>,
}

/// A request from the core to the backend.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    Answer {
        gate_id: String,
        decision: Decision,
    },
    Prompt(String),
    Interrupt,
    SetMode(String),
    /// A remark for the recording only (e.g. which rule answered a gate); nothing is sent.
    Note(String),
    /// Close stdin, give the agent a grace period, then kill it.
    Shutdown,
}

/// Side effects the app loop performs for the reducer.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// A command for one session's backend.
    Send(SessionId, Command),
    Bell,
    /// Leave the UI (after the backend was shut down).
    Quit,
    /// Put text on the clipboard (OSC 52).
    Copy(String),
    /// Show text in `$PAGER` with the TUI suspended.
    OpenPager(String),
    /// Append a rule to a rules file.
    SaveRule {
        path: String,
        spec: super::rules::RuleSpec,
    },
    /// Remove a rule from a rules file.
    RemoveRule {
        path: String,
        spec: super::rules::RuleSpec,
    },
    /// Start a new session (the new-session dialog, or restarting a closed one).
    StartSession(NewSession),
}

/// What the new-session dialog (or a restart) asks the app to start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NewSession {
    /// A `[[session]]` profile by name, or `None` for an ACP agent by command line.
    pub profile: Option<String>,
    /// The ACP agent's command line (shell words), when no profile is named.
    pub command_line: Option<String>,
    pub cwd: String,
    pub prompt: String,
    /// Claude: continue this session id (`--resume`).
    pub resume: Option<String>,
}
