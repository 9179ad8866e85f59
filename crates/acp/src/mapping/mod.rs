//! ACP frames → domain events, and domain commands → frames. Pure: no IO and no clock (the
//! session sets `now`), so live sessions, replays and tests share it. Work that needs IO (files,
//! terminals) leaves as `Action`s the session performs and answers.
//!
//! Our outgoing request ids and the agent's incoming ids are numbered independently and collide
//! on the wire, so they live in separate tables: `ours` (by id) and `theirs` (by gate id).

mod actions;
mod checkfu;
mod chunk_scan;
#[cfg(test)]
mod chunk_scan_tests;
mod commands;
#[cfg(test)]
mod decisions_tests;
mod edits;
mod fast;
#[cfg(test)]
mod fast_tests;
mod load;
#[cfg(test)]
mod options_tests;
mod permissions;
mod recorded;
mod requests;
mod responses;
mod terminals;
#[cfg(test)]
mod tests;
mod tools;
mod updates;
mod usage;
mod wire;

pub use actions::{AcpOptions, Action, TerminalSpec};
pub use checkfu::{normalise_disposition, telemetry_text};
pub use recorded::{Inbound, RecordedAnswer, read_inbound, read_outbound};

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;

use serde_json::{Map, Value, json};

use super::codec;
use super::codec::Frame;
use switchboard_backend::contain::Digest;
use switchboard_core::diff::Diff;
use switchboard_core::gate::PermOption;
use switchboard_core::msg::{BackendEvent, Capabilities};
use switchboard_core::text::{sanitize, truncate};
use switchboard_core::transcript::{ItemKind, ItemOp, Level};

/// The protocol version switchboard speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// Terminal output kept for display in the transcript (the agent's own limit applies on the wire).
const SHOWN_OUTPUT: usize = 16 * 1024;

/// What one input produced: events for the core, lines for the agent, work for the session.
#[derive(Debug, Default)]
pub struct Out {
    pub events: Vec<BackendEvent>,
    pub lines: Vec<String>,
    pub actions: Vec<Action>,
}

impl Out {
    fn ev(&mut self, e: BackendEvent) {
        self.events.push(e);
    }
    fn item(&mut self, node: Option<String>, op: ItemOp) {
        self.events.push(BackendEvent::Item { node, op });
    }
    fn push(&mut self, kind: ItemKind) {
        self.item(None, ItemOp::Push(kind));
    }
    fn system(&mut self, label: &str, text: impl Into<String>) {
        self.push(ItemKind::System {
            label: label.to_string(),
            text: text.into(),
        });
    }
    fn protocol(&mut self, level: Level, text: impl Into<String>) {
        self.ev(BackendEvent::Protocol {
            level,
            text: text.into(),
        });
    }
    fn info(&mut self, key: &str, value: Option<String>) {
        self.ev(BackendEvent::Info {
            key: key.to_string(),
            value,
        });
    }
    pub fn extend(&mut self, other: Out) {
        self.events.extend(other.events);
        self.lines.extend(other.lines);
        self.actions.extend(other.actions);
    }
}

#[derive(Clone, Debug)]
enum Ours {
    Initialize,
    NewSession,
    /// `session/load` of this session id (a resumed session).
    LoadSession(String),
    Prompt,
    SetMode(String),
    /// `session/set_config_option` (option id, value).
    SetConfig(String, String),
    /// `session/set_model`.
    SetModel(String),
    Steer {
        text: String,
    },
    Interrupt,
}

#[derive(Clone, Debug)]
enum Theirs {
    Permission {
        options: Vec<PermOption>,
        /// The tool call it asks about: its row reads the decision.
        tool: String,
    },
    /// `base`: SHA-256 of the file as the card showed it (`Action::WriteFile`).
    Write {
        path: PathBuf,
        content: String,
        base: Option<Digest>,
    },
    Terminal {
        spec: TerminalSpec,
    },
}

#[derive(Clone, Debug)]
struct Incoming {
    rpc_id: Value,
    what: Theirs,
}

#[derive(Clone, Debug, Default)]
struct ToolView {
    title: String,
    kind: String,
    status: String,
    tool_name: Option<String>,
    raw_input: Option<RawJson>,
    /// The row's input as shown (sanitized pretty JSON of the raw input, of the raw output)
    /// and the command the input carries: made when they change, not at every update of the
    /// call (each re-read the input and pretty-printed both). The raw output is kept only
    /// as shown: nothing else reads it.
    input_shown: String,
    output_shown: Option<String>,
    command: Option<String>,
    /// The content's text, sanitized, and whether it was blank as sent (an output of
    /// nothing but colour codes still replaces the row: it is empty now).
    text: String,
    text_sent: bool,
    diff: Option<Diff>,
    /// The diffs as sent (path, old text, new text): what an approval of this call approves.
    edits: Vec<edits::EditDiff>,
    terminals: Vec<String>,
    locations: Vec<String>,
    /// "rejected" or "cancelled" when its permission was answered so: agents (gemini-cli,
    /// codex-acp) often send no final status after a reject, and "pending" would be a lie.
    decision: Option<&'static str>,
    /// The turn it was first seen in: a call of an earlier turn that never said it ended is
    /// settled as far as forgetting goes (`remember_tool`).
    turn: u64,
}

/// A tool's raw input or output kept as compact JSON text for the whole session: parsed only
/// when a row is drawn from it, never held as `serde_json::Value`.
#[derive(Clone, Debug)]
struct RawJson(Box<str>);

impl RawJson {
    fn of(v: &Value) -> RawJson {
        // Straight into bytes: `Display` goes through the formatter a piece at a time.
        RawJson(
            serde_json::to_string(v)
                .unwrap_or_default()
                .into_boxed_str(),
        )
    }

    fn value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }
}

#[derive(Clone, Debug, Default)]
struct TermView {
    command: String,
    tool: Option<String>,
    output: String,
    truncated: bool,
    exit: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub struct Mapper {
    opts: AcpOptions,
    /// Resuming: load this session, and whether its replayed history is already shown.
    load: Option<load::Load>,
    next_id: u64,
    ours: HashMap<String, Ours>,
    theirs: BTreeMap<String, Incoming>,
    /// Agent requests answered later by the session, not by a gate (`terminal/wait_for_exit`
    /// waits for its process): in flight until `waited`, so a reused id is caught as a
    /// duplicate instead of getting a second answer that would land on the first request.
    waiting: BTreeMap<String, Value>,
    session_id: Option<String>,
    checkfu: Map<String, Value>,
    caps: Capabilities,
    ready: bool,
    turn: bool,
    draining: bool,
    turn_no: u64,
    seg: u64,
    /// The last chunk's row key (`updates::Mapper::chunk_key`).
    last_chunk_key: Option<Box<updates::ChunkKey>>,
    queued: VecDeque<String>,
    steer_seq: u64,
    /// Shared with the copies of this mapping (replay checkpoints): a copy pays for a view
    /// only when it changes it.
    tools: HashMap<String, std::sync::Arc<ToolView>>,
    /// Tool call ids in the order they were first seen, for forgetting settled ones past
    /// `TOOL_CAP` (see `remember_tool`).
    tool_order: VecDeque<String>,
    /// What each streamed row of this turn has accumulated (its length and hash), to drop a
    /// repeated whole message (Codex adapters). Emptied when the turn ends.
    streamed: HashMap<String, updates::Streamed>,
    user_text: HashMap<String, String>,
    /// Shared with the copies of this mapping (replay checkpoints), as `tools`: a copy pays
    /// for a terminal's output only when it changes it.
    terms: HashMap<String, std::sync::Arc<TermView>>,
    subagents: HashMap<String, String>,
    tool_uses: u64,
    usage: usage::UsageState,
    turn_started_ms: u64,
    /// Wall-clock time of the current input, set by the caller (the mapping reads no clock).
    pub now: u64,
    /// Reading a recording back (replay, validate, export): see `recorded.rs`.
    rec: recorded::Recorded,
    /// Edits approved in permission gates, waiting for the agent's matching write: `edits.rs`.
    approvals: edits::Approvals,
}

impl Mapper {
    pub fn new(opts: AcpOptions) -> Mapper {
        Mapper {
            opts,
            ..Mapper::default()
        }
    }

    pub fn ready(&self) -> bool {
        self.ready
    }

    pub fn turn_running(&self) -> bool {
        self.turn
    }

    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The Checkfu capabilities the agent declared (`checkfu.capabilities`).
    pub fn checkfu(&self) -> &Map<String, Value> {
        &self.checkfu
    }

    fn declared(&self, key: &str, value: &str) -> bool {
        self.checkfu.get(key).and_then(Value::as_str) == Some(value)
    }

    fn request(&mut self, method: &str, params: Value, ours: Ours) -> String {
        self.next_id += 1;
        let id = self.next_id;
        // A replay learns our requests from the recorded lines, never from its own.
        if !self.rec.on {
            self.ours.insert(id.to_string(), ours);
        }
        codec::request(id, method, params)
    }

    /// The first line: `initialize` with our client capabilities.
    pub fn initialize_line(&mut self) -> String {
        let fs = !self.opts.withhold_fs;
        self.request(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": {
                    "fs": {"readTextFile": fs, "writeTextFile": fs},
                    "terminal": !self.opts.withhold_terminal
                },
                "clientInfo": {
                    "name": "switchboard",
                    "title": "switchboard",
                    "version": env!("CARGO_PKG_VERSION")
                }
            }),
            Ours::Initialize,
        )
    }

    /// The `session/new` params: cwd, no MCP servers, and the Checkfu `_meta` keys the agent
    /// declared support for.
    pub fn new_session_params(&self, out: &mut Out) -> Value {
        let mut params = json!({
            "cwd": self.opts.cwd.display().to_string(),
            "mcpServers": []
        });
        let mut meta = Map::new();
        if let Some(tools) = &self.opts.builtin_tools {
            if self.declared("builtin_tool_scoping", "enforced") {
                meta.insert("checkfu.builtin_tools".into(), json!(tools));
            } else {
                out.protocol(
                    Level::Warn,
                    "--builtin-tools not sent: the agent does not declare checkfu builtin_tool_scoping",
                );
            }
        }
        if let Some(schema) = &self.opts.output_schema {
            if self.checkfu.contains_key("structured_output") {
                meta.insert("checkfu.output_schema".into(), schema.clone());
            } else {
                out.protocol(
                    Level::Warn,
                    "--output-schema not sent: the agent does not declare checkfu structured_output",
                );
            }
        }
        if !meta.is_empty() {
            params["_meta"] = Value::Object(meta);
        }
        params
    }

    /// Classify and map one stdout line of the agent.
    pub fn on_line(&mut self, line: &str) -> Out {
        let line = line.trim_end_matches(['\r', '\n']);
        if self.replayed_quietly(line) {
            return Out::default();
        }
        if let Some(c) = fast::chunk(line) {
            let mut out = Out::default();
            self.chunk_text(c.thinking, &c.text, c.message_id.as_deref(), &mut out);
            return out;
        }
        if let Some(u) = fast::tool_update(line) {
            let mut out = Out::default();
            let rest = self.tool_or_plan(u, &mut out);
            debug_assert!(
                rest.is_none(),
                "fast::tool_update takes only what tool_or_plan maps"
            );
            return out;
        }
        self.on_line_general(line)
    }

    /// `on_line` without the fast path (the reference the fast path is tested against).
    pub(super) fn on_line_general(&mut self, line: &str) -> Out {
        if line.trim().is_empty() {
            return Out::default();
        }
        self.on_frame(codec::parse(line), line)
    }

    /// A line parsed by `codec::parse` (`line` is its text, for what is shown of it).
    pub(super) fn on_frame(&mut self, frame: Frame, line: &str) -> Out {
        let mut out = Out::default();
        match frame {
            Frame::NotJson { error } => out.protocol(
                Level::Error,
                format!(
                    "line without a JSON-RPC envelope (not JSON: {error}): {}",
                    truncate(&sanitize(line), 400)
                ),
            ),
            Frame::NoEnvelope { reason } => {
                out.protocol(
                    Level::Error,
                    format!(
                        "line without a JSON-RPC envelope ({reason}): {}",
                        truncate(&sanitize(line), 400)
                    ),
                );
                // A request all the same: it gets its one answer, keyed `null`.
                if let Some(bad) = codec::invalid_request_id(line)
                    && !self.rec.on
                {
                    out.lines.push(codec::invalid_request_answer(&bad));
                    out.actions.push(Action::Note(format!(
                        "request with id {bad} (neither an integer nor a string) answered -32600 with id null"
                    )));
                }
            }
            Frame::Response { id, outcome } => self.response(&id, outcome, &mut out),
            Frame::Notification { method, params } => match method.as_str() {
                "session/update" => self.session_update(&params, line, &mut out),
                "$/cancel_request" => self.cancel_request(&params, &mut out),
                _ => out.push(ItemKind::Generic {
                    label: format!("notification {}", sanitize(&method)),
                    raw: sanitize(line),
                }),
            },
            Frame::Request { id, method, params } => {
                self.agent_request(id, &method, &params, &mut out)
            }
        }
        out
    }

    // ---- responses to our requests -------------------------------------------------------
}
