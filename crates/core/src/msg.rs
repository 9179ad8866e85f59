//! What flows into the reducer (`Msg`) and out of it (`Effect`).

use crate::input::{KeyEvent, MouseEvent};

use super::gate::{Decision, Gate};
use super::session_id::SessionId;
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
    /// What the last frame measured (the renderer reports it after drawing).
    Drawn(super::view_metrics::ViewMetrics),
    /// Wall-clock time for elapsed-time displays (the reducer never reads a clock).
    Tick(u64),
    /// An answer key the edge held back: the card it would act on had not been on this
    /// terminal's screen for `Settings::settle_ms` (or was never drawn). Only says so.
    Held,
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
    /// Boxed: a gate is several times the size of any other event, and every event (one per
    /// streamed delta) is moved through the channel and the reducer at the size of the largest.
    GateOpen(Box<Gate>),
    /// What the session takes from the person (sent once at start; default: a local agent's).
    Abilities(Abilities),
    /// The state of a network backend's connection, as the status line shows it ("connected",
    /// "reconnecting in 4 s"); decisions still go (unlike `Connection`, which greys the session).
    Link(String),
    /// What this session cannot see that it should ("held calls cannot be seen: calls may
    /// run unapproved"): shown on screen, in warning colours, until `None` says it is fixed.
    /// A supervisor that cannot see must never look safe.
    Blind(Option<String>),
    /// The agent withdrew a request; it must never be answered.
    GateWithdrawn {
        id: String,
    },
    /// The backend now knows pending request `old` better (iii: the full arguments of a held
    /// call first shown from its redacted excerpt): `gate` takes its place, keeping its
    /// arrival in the inbox; nothing was withdrawn, so the audit says what did happen.
    GateUpgraded {
        old: String,
        gate: Box<Gate>,
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
    /// The host that ran this session stopped without being stopped (a crash, a kill, a
    /// reboot) at `stopped_ms`, and the session was resumed at `resumed_ms`: every gate still
    /// open then is shown as not answered (the crash answered nothing), what was running as
    /// stopped, and a boundary row between the history and the resumed session.
    HostStopped {
        stopped_ms: u64,
        resumed_ms: u64,
    },
    /// A named session fact for the footer and the status view (ACP: title, context usage,
    /// cost); `None` removes it.
    Info {
        key: String,
        value: Option<String>,
    },
    /// The messages waiting in the session's queue (iii `harness::status.queued`), replaced
    /// whole on every read.
    Queue(Queue),
    /// This source can start harness sessions (a live iii engine connection, named by its
    /// URL); `None` while it cannot (connecting, reconnecting, closed).
    HarnessHost(Option<String>),
    /// The user asked for this session (a harness session started from the new-session
    /// dialog): show it, unless they are busy with something else by now.
    Reveal,
}

/// Most queued messages carried to the core; the rest are counted.
pub const QUEUE_SHOWN: usize = 50;
/// Longest queued message text carried (characters); a longer one is shown cut and cannot
/// be edited here (saving would replace it with the cut text).
pub const QUEUED_TEXT_MAX: usize = 8_000;

/// A session's queued messages, oldest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Queue {
    pub entries: Vec<QueuedMessage>,
    /// Entries beyond `QUEUE_SHOWN`.
    pub more: usize,
}

impl Queue {
    pub fn has(&self, entry_id: &str) -> bool {
        self.entries.iter().any(|e| e.entry_id == entry_id)
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueuedMessage {
    pub entry_id: String,
    /// Neutralized and clipped to `QUEUED_TEXT_MAX`.
    pub text: String,
    pub queued_at: Option<u64>,
    /// `text` is the message exactly (not cut, nothing neutralized): only then can it be
    /// edited, since an edit replaces the whole message.
    pub exact: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnState {
    Running,
    Idle,
    RequiresAction,
    /// Idle, and the agent says it waits for the person's next prompt (Claude's idle
    /// notification, in its own terminal).
    AwaitingInput,
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

/// What a session takes from the person, as its backend states it (issue 22 item 1): the
/// screen offers only these (no prompt box where no prompt is taken, no token figures
/// where there are none).
#[derive(Clone, Debug, PartialEq)]
pub struct Abilities {
    /// A prompt typed here reaches the agent.
    pub prompt: bool,
    /// Ctrl-C interrupts its running turn.
    pub interrupt: bool,
    /// It reports tokens and cost.
    pub usage: bool,
    /// Its turn state means something (an agent with turns, not a channel or an engine).
    pub turns: bool,
    /// What the session is, for its empty transcript when it takes no prompt.
    pub about: Option<String>,
}

impl Default for Abilities {
    /// A local agent's: prompts, interrupts, usage and turns.
    fn default() -> Abilities {
        Abilities {
            prompt: true,
            interrupt: true,
            usage: true,
            turns: true,
            about: None,
        }
    }
}

impl Abilities {
    /// A session that only carries someone else's calls (an engine's, a remote agent's):
    /// nothing is typed to it, and it has no turns or usage of its own.
    pub fn calls_only(about: String) -> Abilities {
        Abilities {
            prompt: false,
            interrupt: false,
            usage: false,
            turns: false,
            about: Some(about),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Capabilities {
    pub models: Vec<(String, String)>,
    pub commands: Vec<(String, String)>,
    pub agents: Vec<(String, String)>,
    /// The modes this agent declared (`m` offers these and nothing else).
    pub modes: Vec<String>,
    pub extra: Vec<(String, String)>,
    /// The agent's session settings it lets a client change (ACP session config options).
    pub options: Vec<ConfigOption>,
}

/// One setting of the session the agent lets a client change (ACP `configOptions`): a
/// select of named values, or an on/off switch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConfigOption {
    pub id: String,
    pub name: String,
    /// `mode`, `model`, `thought_level`, …: what it is for (`m` opens the mode's).
    pub category: Option<String>,
    pub description: Option<String>,
    /// The value it has now.
    pub current: String,
    /// (value, label) of every choice, in the agent's order (`true`/`false` for a switch).
    pub choices: Vec<(String, String)>,
    /// An on/off switch (its value is sent as a boolean).
    pub boolean: bool,
}

impl Capabilities {
    /// The agent's option of this category (`mode`, `model`), if it declared one.
    pub fn option_of(&self, category: &str) -> Option<&ConfigOption> {
        self.options
            .iter()
            .find(|o| o.category.as_deref() == Some(category))
    }
}

impl ConfigOption {
    /// The label of the current value.
    pub fn current_label(&self) -> &str {
        self.choices
            .iter()
            .find(|(v, _)| *v == self.current)
            .map_or(self.current.as_str(), |(_, l)| l.as_str())
    }
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
    /// Set one of the agent's session options (ACP `session/set_config_option`).
    SetConfig {
        id: String,
        value: String,
    },
    /// Pick one of the models the agent declared outside its options (ACP `session/set_model`).
    SetModel(String),
    /// A remark for the recording only (e.g. which rule answered a gate); nothing is sent.
    Note(String),
    /// Close stdin, give the agent a grace period, then kill it.
    Shutdown,
    /// Replace the text of a queued message (iii `harness::edit_queued`); it keeps its place.
    EditQueued {
        entry_id: String,
        text: String,
    },
    /// Remove a queued message (iii `harness::unqueue`).
    Unqueue {
        entry_id: String,
    },
    /// Start a new harness session on this source's engine (iii `harness::send` without a
    /// session id).
    NewHarnessSession(HarnessSession),
}

impl Command {
    /// What a backend without the feature answers to a command it cannot carry out, or
    /// `None` for the commands every backend takes.
    pub fn unsupported(&self) -> Option<String> {
        let what = match self {
            Command::EditQueued { .. } => "editing a queued message",
            Command::Unqueue { .. } => "removing a queued message",
            Command::NewHarnessSession(_) => "starting a harness session",
            Command::SetConfig { .. } => "changing a session option",
            Command::SetModel(_) => "changing the model",
            _ => return None,
        };
        Some(format!("{what} is not supported by this backend"))
    }
}

/// What the new-session dialog asks an iii engine to start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HarnessSession {
    pub model: String,
    /// The router provider for `model`; `None`: not sent, the router picks its default.
    pub provider: Option<String>,
    pub title: String,
    /// Exact function ids the session may call (never `approval::*`, `configuration::*` or a
    /// pattern).
    pub allow: Vec<String>,
    /// The first message.
    pub message: String,
}

/// Functions only a human may reach: an agent's allow-list never includes them. Anything but
/// an exact function id counts too: should the engine read `*`, `appr*` or `*::resolve` as a
/// pattern, it could reach them, so no pattern is ever passed on.
pub fn human_only(function_id: &str) -> bool {
    let lower = function_id.to_ascii_lowercase();
    lower.starts_with("approval::")
        || lower.starts_with("configuration::")
        || !is_exact_function_id(function_id)
}

/// `namespace::name` made of letters, digits and `_ . : -` only (no wildcard, no space).
fn is_exact_function_id(f: &str) -> bool {
    f.contains("::")
        && !f.starts_with("::")
        && !f.ends_with("::")
        && f.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

/// Most function ids an allow-list takes from the dialog.
pub const ALLOW_MAX: usize = 256;

/// Most characters of a provider id (ids are short words such as `anthropic`).
pub const PROVIDER_MAX: usize = 128;

/// A provider id as a profile or the dialog gives it: one printable line (it is sent to the
/// engine and shown), no longer than `PROVIDER_MAX`. An empty id is "none", not an error.
pub fn check_provider(provider: &str) -> Result<(), String> {
    if provider.chars().count() > PROVIDER_MAX {
        return Err(format!("longer than {PROVIDER_MAX} characters"));
    }
    if provider.chars().any(char::is_control) || super::text::neutralize(provider) != provider {
        return Err("must be printable text (no control or bidirectional characters)".into());
    }
    Ok(())
}

/// A comma-separated allow-list as typed: `(kept, left out as human-only)`, trimmed, empty
/// items skipped, duplicates once, at most `ALLOW_MAX` items.
pub fn split_allow(text: &str) -> (Vec<String>, Vec<String>) {
    let mut kept: Vec<String> = Vec::new();
    let mut dropped: Vec<String> = Vec::new();
    for f in text.split(',').map(str::trim).filter(|f| !f.is_empty()) {
        if kept.len() + dropped.len() >= ALLOW_MAX {
            break;
        }
        let list = if human_only(f) {
            &mut dropped
        } else {
            &mut kept
        };
        if !list.iter().any(|x| x == f) {
            list.push(f.to_string());
        }
    }
    (kept, dropped)
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
    /// A rule for one session only was made (`kept`: `a`, or one kept without a rules file)
    /// or deleted: the workspace manifest keeps them, for a resume.
    SessionRule {
        session: SessionId,
        spec: super::rules::RuleSpec,
        kept: bool,
    },
    /// Start a new session (the new-session dialog, or restarting a closed one).
    StartSession(NewSession),
    /// Leave the host with everything running (the detach key of an attached client).
    Detach,
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

#[cfg(test)]
mod size_tests {
    /// Every event is moved at the size of the largest variant (a streamed delta makes one
    /// per line): keep big payloads boxed.
    #[test]
    fn events_stay_small() {
        let (event, msg) = (
            std::mem::size_of::<super::BackendEvent>(),
            std::mem::size_of::<super::Msg>(),
        );
        eprintln!("BackendEvent {event} B, Msg {msg} B");
        assert!(event <= 176 && msg <= 192, "{event} / {msg}");
    }
}
