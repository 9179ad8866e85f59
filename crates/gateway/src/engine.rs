//! One channel's calls, from frame to result: the eleven steps of reference §4 in order,
//! the receipts of §5 around every effect, and the owner's decisions for the calls that wait.
//!
//! No network here: the transport feeds text frames in and sends the `Out::Send` frames it
//! gets back, in order. The engine runs one call at a time (the transport holds it behind
//! one lock), which is also the per-path lock of §6.2.

use std::collections::{HashMap, HashSet};
use std::io;

use serde_json::{Map, Value, json};

use super::codec::{self, Call, Code, FRAME_BYTES, Inbound, Refusal};
use super::effect::{self, Outcome};
use super::journal::{Journal, Key, State};
use super::tools::exec::Commands;
use super::tools::extra::{self, ExtraTool};
use super::tools::files::{self, Plan};
use super::validate::{self, Class, Mode, sha256_hex};
use switchboard_backend::contain::Root;

/// Calls of one workspace that may await a result at once (spec `inFlightCallsPerWorkspace`).
pub const IN_FLIGHT: usize = 4;

/// What the channel is pinned to before it connects (constraint 1).
#[derive(Debug, Clone)]
pub struct Pinned {
    pub workspace_id: String,
    pub intention: String,
    pub mode: Mode,
    pub extra_tools: Vec<ExtraTool>,
}

/// What a waiting call asks of the owner.
#[derive(Debug, Clone, PartialEq)]
pub enum Ask {
    /// Write or patch: the diff against the file on disk now.
    Edit {
        path: String,
        old: String,
        new: String,
        created: bool,
    },
    Delete {
        path: String,
    },
    /// A shell line (for the chaining guard: no allow rule covers a chained command).
    Exec {
        command: String,
        cwd: String,
    },
    Input {
        command_id: String,
        text: String,
    },
    Stop {
        command_id: String,
    },
    Tool {
        name: String,
        arguments: Value,
    },
    /// `workspace_ask`: a question with a free-text answer; never a permission.
    Question {
        question: String,
    },
    /// A call from a conversation this channel has not accepted yet.
    Conversation,
}

/// A card for the owner.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    pub gate: u64,
    pub session: String,
    pub call_id: String,
    pub tool: String,
    pub intention: String,
    pub ask: Ask,
    /// The call's arguments, for the owner to edit, when an edit can run (`EDITABLE`).
    pub editable: Option<Box<Map<String, Value>>>,
    /// The environment the process will start with (exec, extra tools), else empty.
    pub environment: Vec<(String, String)>,
}

/// Tools whose arguments the owner may edit on the card: the edit is checked like the
/// host's arguments (schema, containment) and is what runs. Deleting or stopping another
/// target than the one asked, or calling another extra tool, is a new call, not an edit.
pub const EDITABLE: &[&str] = &[
    "workspace_write",
    "workspace_patch",
    "workspace_exec",
    "workspace_input",
];

#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Allow,
    /// Allowed with the owner's edit of the call's arguments: this is what runs.
    AllowEdited(Map<String, Value>),
    Deny(Option<String>),
    Answer(String),
    Cancel,
}

/// What the transport and the UI must do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// A result frame to send (already journaled when the rules say so).
    Send(String),
    /// Show a card.
    Gate(Gate),
    /// A repeated id of a call that waits joined its card; nothing new to show.
    Joined { gate: u64 },
    /// A call ran without a gate (read-only, or pre-approved by the mode): the audit row.
    Ran {
        session: String,
        tool: String,
        summary: String,
        outcome: String,
    },
    /// A frame that cannot be answered: logged and dropped.
    Dropped(String),
    /// The owner's edit of card `gate` was refused (`why`); the card is shown again.
    EditRefused { gate: u64, why: String },
    /// The receipts journal became unavailable (`Some(why)`: effects are refused until an
    /// append succeeds) or available again (`None`).
    Journal(Option<String>),
    /// Close the channel with this reason.
    Close(String),
    /// What an approved (or mode-approved) effect of `call_id` did, after its result frame:
    /// its transcript row (`effect::row`).
    Effect {
        session: String,
        call_id: String,
        outcome: Outcome,
    },
    /// New output, or the end, of a command this channel started: not the engine's, the
    /// channel's watcher's (`watch`), routed and shown like the engine's outputs.
    Output {
        session: String,
        command_id: String,
        command: String,
        status: super::tools::exec::Status,
        /// The newest output kept for the row, sanitized.
        output: String,
        /// Older output is not in `output`.
        cut: bool,
    },
}

struct Waiting {
    gate: u64,
    call: Call,
    hash: String,
    tool: &'static str,
    args: Map<String, Value>,
    kind: Kind,
    /// The card as shown (shown again when an edit is refused).
    shown: Gate,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Permission,
    Question,
    Conversation,
}

/// Environment variable of the crash test: `after_executing` aborts the process right after
/// an `executing` receipt is on disk and before its effect (the window §11 tests). Read only
/// in debug builds (the tests'): the release binary has no such hook.
pub const CRASH_HOOK: &str = "SWITCHBOARD_GATEWAY_TEST_CRASH";

pub struct Engine {
    pin: Pinned,
    root: Root,
    journal: Journal,
    commands: Commands,
    accepted: Vec<String>,
    refused: HashSet<String>,
    waiting: HashMap<Key, Waiting>,
    last_tools: HashMap<String, Vec<String>>,
    next_gate: u64,
    crash_after_executing: bool,
    /// The journal's availability as last reported (`Out::Journal`).
    journal_down: bool,
}

fn first_line(s: &str) -> String {
    codec::clip(s.lines().next().unwrap_or_default())
}

impl Engine {
    pub fn new(pin: Pinned, root: Root, journal: Journal) -> Engine {
        Engine {
            pin,
            root,
            journal,
            commands: Commands::default(),
            accepted: Vec::new(),
            refused: HashSet::new(),
            waiting: HashMap::new(),
            last_tools: HashMap::new(),
            next_gate: 1,
            crash_after_executing: cfg!(debug_assertions)
                && std::env::var(CRASH_HOOK).as_deref() == Ok("after_executing"),
            journal_down: false,
        }
    }

    /// The id's key. A result names only the conversation and the id, so that is what the
    /// host can tell apart: a call naming another workspace shares its id with ours (the
    /// channel's pinned workspace is the key's first part, whatever the call says).
    fn key_of(&self, c: &Call) -> Key {
        (
            self.pin.workspace_id.clone(),
            c.session_id.clone().unwrap_or_default(),
            c.id.clone(),
        )
    }

    /// Commands and extra tools start with `env` (`[gateway] env` on top of the allowlist;
    /// without this call, the allowlist alone).
    pub fn with_env(mut self, env: std::sync::Arc<super::tools::env::ExecEnv>) -> Engine {
        self.commands = Commands::new(env);
        self
    }

    pub fn pinned(&self) -> &Pinned {
        &self.pin
    }

    pub fn root(&self) -> &Root {
        &self.root
    }

    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// Conversations accepted so far, the first one first.
    pub fn sessions(&self) -> &[String] {
        &self.accepted
    }

    /// Calls waiting for the owner (each holds an in-flight slot).
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// One inbound text frame.
    pub fn on_frame(&mut self, text: &str) -> Vec<Out> {
        let mut out = self.frame(text);
        self.journal_news(&mut out);
        out
    }

    /// Report a change in the journal's availability after a step that may have written.
    fn journal_news(&mut self, out: &mut Vec<Out>) {
        let down = self.journal.unavailable().map(str::to_string);
        if down.is_some() != self.journal_down {
            self.journal_down = down.is_some();
            out.push(Out::Journal(down));
        }
    }

    fn frame(&mut self, text: &str) -> Vec<Out> {
        match codec::decode(text) {
            Err(e) => vec![Out::Dropped(e.to_string())],
            Ok(Inbound::Ready { protocol }) if protocol == json!(codec::PROTOCOL) => Vec::new(),
            Ok(Inbound::Ready { protocol }) => vec![Out::Close(format!(
                "the host speaks protocol {protocol}, this side only 1"
            ))],
            Ok(Inbound::Other(v)) => vec![Out::Dropped(format!(
                "frame of type {} ignored",
                codec::clip(&v["type"].to_string())
            ))],
            Ok(Inbound::Call(c)) => self.on_call(c),
        }
    }

    fn send(&self, c: &Call, body: &str) -> Out {
        Out::Send(codec::result_frame(
            &c.id,
            c.session_id.as_deref().unwrap_or_default(),
            body,
        ))
    }

    /// A final refusal before anything ran (wrong workspace, schema, unknown tool,
    /// containment): remembered with its id in the seen table, so a re-send gets the same
    /// bytes, without taking room in the effect journal (issue 21 item 6). When it cannot be
    /// remembered the answer is the transient `failed`: a final one that a restart forgets
    /// could be followed by another final answer for the same id.
    fn refuse_final(&mut self, c: &Call, hash: &str, tool: &str, r: Refusal) -> Vec<Out> {
        if let Some(busy) = self.seen_full(c) {
            return busy;
        }
        let body = codec::error_body(&r);
        if let Err(e) = self
            .journal
            .remember(&self.key_of(c), hash, tool, Some(&body))
        {
            return vec![self.journal_failed(c, e)];
        }
        vec![self.send(c, &body)]
    }

    /// `busy` for a new id that has no effect when the seen-id table is full (its ids are
    /// never forgotten within the retention); `None` when there is room or the id is known.
    fn seen_full(&mut self, c: &Call) -> Option<Vec<Out>> {
        let key = self.key_of(c);
        if self.journal.seen(&key).is_some()
            || !self.journal.seen_full(switchboard_record::now_ms())
        {
            return None;
        }
        let r = Refusal::new(
            Code::Busy,
            format!(
                "{} calls without an effect were answered in the last 24 h, this channel's limit; retry later",
                self.journal.seen_len()
            ),
        );
        Some(vec![self.send(c, &codec::error_body(&r))])
    }

    /// A final answer decided by the owner, or a refusal after the owner approved: a
    /// receipt, so the same id always gets the same answer, also after a restart.
    fn decided_final(&mut self, c: &Call, hash: &str, tool: &str, r: Refusal) -> Vec<Out> {
        let body = codec::error_body(&r);
        if let Err(e) = self
            .journal
            .completed(&self.key_of(c), hash, tool, Value::Null, &body)
        {
            return vec![self.journal_failed(c, e)];
        }
        vec![self.send(c, &body)]
    }

    /// The journal could not be written: nothing may happen, and the answer is not final.
    fn journal_failed(&self, c: &Call, e: io::Error) -> Out {
        self.send(
            c,
            &codec::error_body(&Refusal::new(
                Code::Failed,
                format!("receipt journal unavailable: {e}"),
            )),
        )
    }
}

fn summary_of(a: &Ask) -> String {
    match a {
        Ask::Edit {
            path,
            created: true,
            ..
        } => format!("create {path}"),
        Ask::Edit { path, .. } => format!("edit {path}"),
        Ask::Delete { path } => format!("delete {path}"),
        Ask::Exec { command, cwd } => format!("run `{}` in {cwd}", first_line(command)),
        Ask::Input { command_id, .. } => format!("input to {command_id}"),
        Ask::Stop { command_id } => format!("stop {command_id}"),
        Ask::Tool { name, .. } => format!("tool {name}"),
        Ask::Question { question } => first_line(question),
        Ask::Conversation => "accept conversation".to_string(),
    }
}

fn read_summary(tool: &str, args: &Map<String, Value>) -> String {
    let s = |k: &str| args.get(k).and_then(Value::as_str).map(codec::clip);
    match tool {
        "workspace_poll" => format!("poll {}", s("commandId").unwrap_or_default()),
        "workspace_tool" => format!("tool {}", s("name").unwrap_or_default()),
        _ => match s("path") {
            Some(p) => format!("{} {p}", tool.trim_start_matches("workspace_")),
            None => tool.trim_start_matches("workspace_").to_string(),
        },
    }
}

#[path = "engine_call.rs"]
mod call;
#[path = "engine_decide.rs"]
mod decide;
#[path = "engine_run.rs"]
mod run;
use run::uncertain_body;

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
