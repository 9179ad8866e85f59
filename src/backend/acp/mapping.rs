//! ACP frames → domain events, and domain commands → frames. Pure: no IO and no clock (the
//! session sets `now`), so live sessions, replays and tests share it. Work that needs IO (files,
//! terminals) leaves as `Action`s the session performs and answers.
//!
//! Our outgoing request ids and the agent's incoming ids are numbered independently and collide
//! on the wire, so they live in separate tables: `ours` (by id) and `theirs` (by gate id).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value, json};

use super::codec::{self, Frame, RpcError, schema};
use crate::core::diff::Diff;
use crate::core::gate::{Decision, Gate, GateKind, PermOption, Permission};
use crate::core::msg::{BackendEvent, Capabilities, Command, SessionPatch, TurnState};
use crate::core::text::{one_line, pretty_json, sanitize, truncate};
use crate::core::transcript::{ItemKind, ItemOp, Level, PlanEntry};
use crate::core::tree::{NodePatch, NodeStatus, ROOT_KEY};

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

/// A client terminal to start (`terminal/create`, after the human allowed it).
#[derive(Clone, Debug, PartialEq)]
pub struct TerminalSpec {
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub output_byte_limit: Option<u64>,
}

impl TerminalSpec {
    pub fn command_line(&self) -> String {
        let mut s = self.command.clone();
        for a in &self.args {
            s.push(' ');
            s.push_str(a);
        }
        s
    }
}

/// Work that needs IO. Every action carries the agent's request id and must be answered once.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    ReadFile {
        id: Value,
        path: PathBuf,
        line: Option<u32>,
        limit: Option<u32>,
    },
    /// Read the file on disk, then call `Mapper::write_gate` (the gate shows the diff).
    PrepareWrite {
        id: Value,
        path: PathBuf,
        content: String,
    },
    WriteFile {
        id: Value,
        path: PathBuf,
        content: String,
    },
    CreateTerminal {
        id: Value,
        spec: TerminalSpec,
    },
    TerminalOutput {
        id: Value,
        terminal_id: String,
    },
    WaitForExit {
        id: Value,
        terminal_id: String,
    },
    KillTerminal {
        id: Value,
        terminal_id: String,
    },
    ReleaseTerminal {
        id: Value,
        terminal_id: String,
    },
}

/// Settings of one ACP session.
#[derive(Clone, Debug, Default)]
pub struct AcpOptions {
    /// Absolute working directory of the session; fs requests are confined to it.
    pub cwd: PathBuf,
    /// `checkfu.builtin_tools` for `session/new`.
    pub builtin_tools: Option<Vec<String>>,
    /// `checkfu.output_schema` for `session/new`.
    pub output_schema: Option<Value>,
}

#[derive(Clone, Debug)]
enum Ours {
    Initialize,
    NewSession,
    Prompt,
    SetMode(String),
    Steer { text: String },
    Interrupt,
}

#[derive(Clone, Debug)]
enum Theirs {
    Permission { options: Vec<PermOption> },
    Write { path: PathBuf, content: String },
    Terminal { spec: TerminalSpec },
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
    raw_input: Option<Value>,
    raw_output: Option<Value>,
    text: String,
    diff: Option<Diff>,
    terminals: Vec<String>,
    locations: Vec<String>,
}

#[derive(Clone, Debug, Default)]
struct TermView {
    command: String,
    tool: Option<String>,
    output: String,
    truncated: bool,
    exit: Option<String>,
}

#[derive(Debug, Default)]
pub struct Mapper {
    opts: AcpOptions,
    next_id: u64,
    ours: HashMap<String, Ours>,
    theirs: BTreeMap<String, Incoming>,
    session_id: Option<String>,
    checkfu: Map<String, Value>,
    caps: Capabilities,
    ready: bool,
    turn: bool,
    draining: bool,
    turn_no: u64,
    seg: u64,
    queued: VecDeque<String>,
    steer_seq: u64,
    tools: HashMap<String, ToolView>,
    /// Accumulated text per streamed row, to drop a repeated whole message (Codex adapters).
    streamed: HashMap<String, String>,
    user_text: HashMap<String, String>,
    terms: HashMap<String, TermView>,
    subagents: HashMap<String, String>,
    tool_uses: u64,
    cost: Option<f64>,
    turn_started_ms: u64,
    /// Wall-clock time of the current input, set by the caller (the mapping reads no clock).
    pub now: u64,
}

fn s(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_string)
}

/// Lexically normalised absolute path (no `.`/`..`), or None when it is relative.
fn normalise(p: &Path) -> Option<PathBuf> {
    if !p.is_absolute() {
        return None;
    }
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    Some(out)
}

fn content_text(c: &schema::ContentBlock) -> String {
    match c {
        schema::ContentBlock::Text(t) => t.text.clone(),
        schema::ContentBlock::ResourceLink(l) => format!("[link] {}", l.uri),
        schema::ContentBlock::Image(_) => "[image]".into(),
        schema::ContentBlock::Audio(_) => "[audio]".into(),
        schema::ContentBlock::Resource(_) => "[resource]".into(),
        _ => "[content]".into(),
    }
}

fn wire_name<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn merge_diff(into: &mut Option<Diff>, d: Diff) {
    match into {
        Some(acc) => {
            acc.added += d.added;
            acc.removed += d.removed;
            acc.lines.extend(d.lines);
        }
        None => *into = Some(d),
    }
}

/// Normalise Checkfu `canceled` and ACP `cancelled` to one word.
pub fn normalise_disposition(d: &str) -> &str {
    match d {
        "canceled" | "cancelled" => "cancelled",
        other => other,
    }
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
        self.ours.insert(id.to_string(), ours);
        codec::request(id, method, params)
    }

    /// The first line: `initialize` with our client capabilities.
    pub fn initialize_line(&mut self) -> String {
        self.request(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": {
                    "fs": {"readTextFile": true, "writeTextFile": true},
                    "terminal": true
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
        let mut out = Out::default();
        let line = line.trim_end_matches(['\r', '\n']);
        if line.trim().is_empty() {
            return out;
        }
        match codec::parse(line) {
            Frame::NotJson { error } => out.protocol(
                Level::Error,
                format!(
                    "line without a JSON-RPC envelope (not JSON: {error}): {}",
                    truncate(&sanitize(line), 400)
                ),
            ),
            Frame::NoEnvelope { reason } => out.protocol(
                Level::Error,
                format!(
                    "line without a JSON-RPC envelope ({reason}): {}",
                    truncate(&sanitize(line), 400)
                ),
            ),
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

    fn response(&mut self, id: &Value, outcome: Result<Value, RpcError>, out: &mut Out) {
        let Some(ours) = self.ours.remove(&codec::id_key(id)) else {
            out.protocol(Level::Warn, format!("response to unknown request id {id}"));
            return;
        };
        let result = match outcome {
            Ok(r) => r,
            Err(e) => return self.failed(ours, e, out),
        };
        match ours {
            Ours::Initialize => self.initialized(&result, out),
            Ours::NewSession => self.session_created(&result, out),
            Ours::Prompt => self.turn_ended(&result, out),
            Ours::SetMode(mode) => {
                out.ev(BackendEvent::Session(SessionPatch {
                    permission_mode: Some(mode.clone()),
                    ..SessionPatch::default()
                }));
                out.system("mode", format!("mode set to {mode}"));
            }
            Ours::Steer { text } => {
                let d = s(&result, "disposition").unwrap_or_default();
                match d.as_str() {
                    "delivered" => out.system("steer", "delivered to the running turn"),
                    "queued" => out.system("steer", "queued by the agent for later in the turn"),
                    _ => self.steer_refused(text, &format!("disposition {d:?}"), out),
                }
            }
            Ours::Interrupt => {
                let d = s(&result, "disposition").unwrap_or_default();
                if d == "draining" {
                    self.draining = true;
                    out.system(
                        "interrupt",
                        "draining: the agent is winding the turn down (Ctrl-C again cancels)",
                    );
                    out.info("turn", Some("draining".into()));
                } else {
                    out.system(
                        "interrupt",
                        format!(
                            "{}: falling back to session/cancel",
                            if d.is_empty() { "no disposition" } else { &d }
                        ),
                    );
                    self.cancel(out);
                }
            }
        }
    }

    fn failed(&mut self, ours: Ours, e: RpcError, out: &mut Out) {
        let what = format!("error {}: {}", e.code, sanitize(&e.message));
        match ours {
            Ours::Initialize => out.protocol(Level::Error, format!("initialize failed: {what}")),
            Ours::NewSession => {
                out.protocol(Level::Error, format!("session/new failed: {what}"));
            }
            Ours::Prompt => {
                out.protocol(Level::Error, format!("session/prompt failed: {what}"));
                out.push(ItemKind::TurnResult {
                    ok: false,
                    subtype: "error".into(),
                    text: what,
                    cost_usd: None,
                    input_tokens: 0,
                    output_tokens: 0,
                    duration_ms: self.now.saturating_sub(self.turn_started_ms),
                });
                self.end_turn(out);
            }
            Ours::SetMode(mode) => out.protocol(
                Level::Error,
                format!("session/set_mode {mode} failed: {what}"),
            ),
            Ours::Steer { text } => self.steer_refused(text, &what, out),
            Ours::Interrupt => {
                out.system(
                    "interrupt",
                    format!("failed ({what}): falling back to session/cancel"),
                );
                self.cancel(out);
            }
        }
    }

    fn initialized(&mut self, result: &Value, out: &mut Out) {
        if let Err(e) = codec::typed::<schema::InitializeResponse>(result) {
            out.protocol(
                Level::Warn,
                format!("initialize result outside the ACP types: {e}"),
            );
        }
        let version = result.get("protocolVersion").and_then(Value::as_u64);
        if version != Some(PROTOCOL_VERSION) {
            out.protocol(
                Level::Error,
                format!("the agent answered protocol version {version:?}; switchboard speaks {PROTOCOL_VERSION}"),
            );
        }
        let caps = result
            .get("_meta")
            .and_then(|m| m.get("checkfu.capabilities"))
            .or_else(|| {
                result
                    .get("agentCapabilities")
                    .and_then(|c| c.get("_meta"))
                    .and_then(|m| m.get("checkfu.capabilities"))
            })
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        self.checkfu = caps;
        let info = result.get("agentInfo").cloned().unwrap_or(Value::Null);
        let name = s(&info, "title").or_else(|| s(&info, "name"));
        let mut extra = vec![(
            "protocol".to_string(),
            version.map_or("?".into(), |v| v.to_string()),
        )];
        if let Some(n) = s(&info, "name") {
            extra.push(("agent".into(), sanitize(&n)));
        }
        let ac = result
            .get("agentCapabilities")
            .cloned()
            .unwrap_or(Value::Null);
        extra.push((
            "loadSession".into(),
            ac.get("loadSession")
                .and_then(Value::as_bool)
                .unwrap_or(false)
                .to_string(),
        ));
        if let Some(p) = ac.get("promptCapabilities") {
            extra.push(("prompt caps".into(), p.to_string()));
        }
        if let Some(a) = result
            .get("authMethods")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
        {
            let names: Vec<String> = a.iter().filter_map(|m| s(m, "name")).collect();
            extra.push(("auth methods".into(), sanitize(&names.join(", "))));
        }
        if self.checkfu.is_empty() {
            extra.push(("checkfu".into(), "not declared".into()));
        }
        for (k, v) in &self.checkfu {
            extra.push((
                format!("checkfu.{k}"),
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string()),
            ));
        }
        self.caps.extra = extra;
        out.ev(BackendEvent::Capabilities(self.caps.clone()));
        if let Some(n) = &name {
            out.ev(BackendEvent::NodeUpdate {
                key: ROOT_KEY.into(),
                patch: NodePatch {
                    name: Some(sanitize(n)),
                    ..NodePatch::default()
                },
            });
        }
        out.ev(BackendEvent::Session(SessionPatch {
            agent_version: s(&info, "version").map(|v| sanitize(&v)),
            ..SessionPatch::default()
        }));
        if !self.checkfu.is_empty() {
            let list: Vec<String> = self
                .checkfu
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("?")))
                .collect();
            out.system(
                "checkfu",
                format!("extension declared: {}", list.join(", ")),
            );
        }
        let params = self.new_session_params(out);
        let line = self.request("session/new", params, Ours::NewSession);
        out.lines.push(line);
    }

    fn session_created(&mut self, result: &Value, out: &mut Out) {
        if let Err(e) = codec::typed::<schema::NewSessionResponse>(result) {
            out.protocol(
                Level::Warn,
                format!("session/new result outside the ACP types: {e}"),
            );
        }
        let Some(sid) = s(result, "sessionId") else {
            out.protocol(Level::Error, "session/new result without a sessionId");
            return;
        };
        self.session_id = Some(sid.clone());
        let modes = result.get("modes").cloned().unwrap_or(Value::Null);
        self.caps.modes = modes
            .get("availableModes")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|m| s(m, "id"))
                    .map(|m| sanitize(&m))
                    .collect()
            })
            .unwrap_or_default();
        let models = result.get("models").cloned().unwrap_or(Value::Null);
        self.caps.models = models
            .get("availableModels")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|m| {
                        (
                            sanitize(&s(m, "modelId").unwrap_or_default()),
                            one_line(
                                &sanitize(
                                    &s(m, "name")
                                        .or_else(|| s(m, "description"))
                                        .unwrap_or_default(),
                                ),
                                120,
                            ),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        if let Some(opts) = result.get("configOptions").and_then(Value::as_array) {
            self.config_options(opts);
        }
        out.ev(BackendEvent::Capabilities(self.caps.clone()));
        out.ev(BackendEvent::Session(SessionPatch {
            session_id: Some(sanitize(&sid)),
            cwd: Some(self.opts.cwd.display().to_string()),
            permission_mode: s(&modes, "currentModeId").map(|m| sanitize(&m)),
            model: s(&models, "currentModelId").map(|m| sanitize(&m)),
            interruptible: Some(true),
            ..SessionPatch::default()
        }));
        out.system(
            "session",
            format!(
                "started {}: {} mode(s), {} model(s)",
                sanitize(&sid),
                self.caps.modes.len(),
                self.caps.models.len()
            ),
        );
        self.ready = true;
        out.ev(BackendEvent::Turn(TurnState::Idle));
        if let Some(next) = self.queued.pop_front() {
            self.send_prompt(next, out);
        }
    }

    fn config_options(&mut self, opts: &[Value]) {
        self.caps.extra.retain(|(k, _)| !k.starts_with("config "));
        for o in opts {
            let id = s(o, "id").unwrap_or_default();
            let v = o.get("currentValue").map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            });
            self.caps.extra.push((
                format!("config {}", sanitize(&id)),
                sanitize(&v.unwrap_or_default()),
            ));
        }
    }

    fn turn_ended(&mut self, result: &Value, out: &mut Out) {
        if let Err(e) = codec::typed::<schema::PromptResponse>(result) {
            out.protocol(
                Level::Warn,
                format!("session/prompt result outside the ACP types: {e}"),
            );
        }
        let stop = s(result, "stopReason").unwrap_or_else(|| "?".into());
        let usage = result.get("usage").cloned().unwrap_or(Value::Null);
        let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        let input = n("inputTokens") + n("cachedReadTokens") + n("cachedWriteTokens");
        let output = n("outputTokens");
        let telemetry = result
            .get("_meta")
            .and_then(|m| m.get("checkfu.turn"))
            .cloned();
        let wall = telemetry
            .as_ref()
            .and_then(|t| t.get("wall_time_ms"))
            .and_then(Value::as_u64);
        let duration = wall.unwrap_or_else(|| self.now.saturating_sub(self.turn_started_ms));
        let ok = matches!(stop.as_str(), "end_turn" | "cancelled");
        let text = match stop.as_str() {
            "end_turn" => String::new(),
            "cancelled" => "cancelled".to_string(),
            other => format!("stop reason {other}"),
        };
        out.push(ItemKind::TurnResult {
            ok,
            subtype: sanitize(&stop),
            text,
            cost_usd: self.cost,
            input_tokens: input,
            output_tokens: output,
            duration_ms: duration,
        });
        if let Some(t) = telemetry {
            out.system("turn telemetry", telemetry_text(&t));
        }
        out.ev(BackendEvent::Usage {
            input_tokens: input,
            output_tokens: output,
            cost_usd: 0.0,
        });
        self.end_turn(out);
    }

    fn end_turn(&mut self, out: &mut Out) {
        self.turn = false;
        self.draining = false;
        out.info("turn", None);
        out.ev(BackendEvent::Turn(TurnState::Idle));
        if let Some(next) = self.queued.pop_front() {
            out.system("queue", "sending the queued prompt");
            self.send_prompt(next, out);
        }
    }

    fn steer_refused(&mut self, text: String, why: &str, out: &mut Out) {
        out.system(
            "steer",
            format!("refused ({why}): the text is queued as the next prompt"),
        );
        if self.turn {
            self.queued.push_back(text);
        } else {
            self.send_prompt(text, out);
        }
    }

    // ---- session/update -------------------------------------------------------------------

    fn session_update(&mut self, params: &Value, line: &str, out: &mut Out) {
        let update = params.get("update").cloned().unwrap_or(Value::Null);
        let kind = s(&update, "sessionUpdate").unwrap_or_default();
        // Checkfu sub-agent phases ride on session_info_update `_meta`; read them raw.
        if kind == "session_info_update"
            && let Some(sa) = update.get("_meta").and_then(|m| m.get("checkfu.subagent"))
        {
            return self.subagent(sa, &update, out);
        }
        let n = match codec::typed::<schema::SessionNotification>(params) {
            Ok(n) => n,
            Err(e) => {
                if kind == "usage_update" {
                    // claude-agent-acp sends `"used": null`; read what is there.
                    return self.usage(
                        update.get("used").and_then(Value::as_u64),
                        update.get("size").and_then(Value::as_u64),
                        update
                            .get("cost")
                            .and_then(|c| c.get("amount"))
                            .and_then(Value::as_f64),
                        out,
                    );
                }
                let label = if kind.is_empty() {
                    format!("session/update without a known shape: {e}")
                } else {
                    format!("session/update {}: {}", sanitize(&kind), one_line(&e, 120))
                };
                out.push(ItemKind::Generic {
                    label,
                    raw: sanitize(line),
                });
                return;
            }
        };
        use schema::SessionUpdate as U;
        match n.update {
            U::UserMessageChunk(c) => {
                if self.turn {
                    // Our own prompt is already in the transcript.
                    return;
                }
                let key = format!("user:{}:{}", self.turn_no, self.seg);
                let acc = self.user_text.entry(key.clone()).or_default();
                acc.push_str(&content_text(&c.content));
                out.item(
                    None,
                    ItemOp::Upsert {
                        key,
                        kind: ItemKind::User {
                            text: sanitize(acc),
                        },
                    },
                );
            }
            U::AgentMessageChunk(c) => self.chunk(false, &c, out),
            U::AgentThoughtChunk(c) => self.chunk(true, &c, out),
            U::ToolCall(tc) => {
                let id = tc.tool_call_id.0.to_string();
                let first = !self.tools.contains_key(&id);
                let view = self.tools.entry(id.clone()).or_default();
                view.title = tc.title.clone();
                view.kind = wire_name(&tc.kind);
                view.status = wire_name(&tc.status);
                view.raw_input = tc.raw_input.clone();
                view.raw_output = tc.raw_output.clone();
                view.tool_name = tool_name(tc.meta.as_ref());
                Self::set_content(view, &tc.content);
                view.locations = locations(&tc.locations);
                self.seg += 1;
                if first {
                    self.tool_uses += 1;
                }
                self.tool_rows(&id, out);
            }
            U::ToolCallUpdate(u) => {
                let id = u.tool_call_id.0.to_string();
                if !self.tools.contains_key(&id) {
                    self.seg += 1;
                    self.tool_uses += 1;
                }
                self.patch_tool(&id, &u, out);
                self.tool_rows(&id, out);
            }
            U::Plan(p) => {
                let entries = p
                    .entries
                    .iter()
                    .map(|e| PlanEntry {
                        content: sanitize(&e.content),
                        status: wire_name(&e.status),
                        priority: wire_name(&e.priority),
                    })
                    .collect();
                out.item(
                    None,
                    ItemOp::Upsert {
                        key: format!("plan:{}", self.turn_no),
                        kind: ItemKind::Plan { entries },
                    },
                );
            }
            U::AvailableCommandsUpdate(c) => {
                self.caps.commands = c
                    .available_commands
                    .iter()
                    .map(|c| {
                        (
                            format!("/{}", sanitize(&c.name)),
                            one_line(&sanitize(&c.description), 120),
                        )
                    })
                    .collect();
                out.ev(BackendEvent::Capabilities(self.caps.clone()));
            }
            U::CurrentModeUpdate(m) => {
                let mode = sanitize(&m.current_mode_id.0);
                out.ev(BackendEvent::Session(SessionPatch {
                    permission_mode: Some(mode.clone()),
                    ..SessionPatch::default()
                }));
                out.system("mode", format!("current mode: {mode}"));
            }
            U::ConfigOptionUpdate(_) => {
                if let Some(opts) = update.get("configOptions").and_then(Value::as_array) {
                    self.config_options(opts);
                }
                out.ev(BackendEvent::Capabilities(self.caps.clone()));
            }
            U::SessionInfoUpdate(si) => {
                use agent_client_protocol_schema::MaybeUndefined as M;
                match si.title {
                    M::Value(t) => out.info("title", Some(one_line(&sanitize(&t), 60))),
                    M::Null => out.info("title", None),
                    M::Undefined => {}
                }
            }
            U::UsageUpdate(u) => {
                self.usage(Some(u.used), Some(u.size), u.cost.map(|c| c.amount), out)
            }
            U::Notice(n) => out.system(
                &format!("notice {}", wire_name(&n.severity)),
                sanitize(&match n.description {
                    Some(d) => format!("{}: {d}", n.title),
                    None => n.title,
                }),
            ),
            _ => out.push(ItemKind::Generic {
                label: format!("session/update {}", sanitize(&kind)),
                raw: sanitize(line),
            }),
        }
    }

    fn usage(&mut self, used: Option<u64>, size: Option<u64>, cost: Option<f64>, out: &mut Out) {
        let h = crate::core::text::human_count;
        let ctx = match (used, size) {
            (Some(u), Some(s)) => format!("ctx {}/{}", h(u), h(s)),
            (None, Some(s)) => format!("ctx ?/{}", h(s)),
            (Some(u), None) => format!("ctx {}", h(u)),
            (None, None) => return,
        };
        out.info("context", Some(ctx));
        if let Some(c) = cost {
            self.cost = Some(c);
            out.info("cost", Some(format!("${c:.4}")));
        }
    }

    fn chunk(&mut self, thinking: bool, c: &schema::ContentChunk, out: &mut Out) {
        let text = sanitize(&content_text(&c.content));
        if text.is_empty() {
            return;
        }
        let group = match &c.message_id {
            Some(m) => format!("m{}", m.0),
            None => format!("s{}", self.seg),
        };
        let key = format!(
            "{}:{}:{group}",
            if thinking { "thought" } else { "msg" },
            self.turn_no
        );
        let acc = self.streamed.entry(key.clone()).or_default();
        if text.len() > 1 && *acc == text {
            // The whole message repeated after its deltas (Codex adapters): already shown.
            return;
        }
        acc.push_str(&text);
        out.item(
            None,
            ItemOp::AppendText {
                key,
                thinking,
                delta: text,
            },
        );
    }

    fn set_content(view: &mut ToolView, content: &[schema::ToolCallContent]) {
        view.text.clear();
        view.diff = None;
        view.terminals.clear();
        for c in content {
            match c {
                schema::ToolCallContent::Content(c) => {
                    if !view.text.is_empty() {
                        view.text.push('\n');
                    }
                    view.text.push_str(&content_text(&c.content));
                }
                schema::ToolCallContent::Diff(d) => {
                    let path = d.path.display().to_string();
                    merge_diff(
                        &mut view.diff,
                        Diff::unified(&path, d.old_text.as_deref().unwrap_or(""), &d.new_text, 3),
                    );
                }
                schema::ToolCallContent::Terminal(t) => {
                    view.terminals.push(t.terminal_id.0.to_string())
                }
                _ => {}
            }
        }
    }

    fn patch_tool(&mut self, id: &str, u: &schema::ToolCallUpdate, _out: &mut Out) {
        let view = self.tools.entry(id.to_string()).or_default();
        let f = &u.fields;
        if let Some(t) = &f.title {
            view.title = t.clone();
        }
        if let Some(k) = &f.kind {
            view.kind = wire_name(k);
        }
        if let Some(st) = &f.status {
            view.status = wire_name(st);
        }
        if let Some(c) = &f.content {
            Self::set_content(view, c);
        }
        if let Some(l) = &f.locations {
            view.locations = locations(l);
        }
        if let Some(r) = &f.raw_input {
            view.raw_input = Some(r.clone());
        }
        if let Some(r) = &f.raw_output {
            view.raw_output = Some(r.clone());
        }
        if let Some(n) = tool_name(u.meta.as_ref()) {
            view.tool_name = Some(n);
        }
    }

    /// The tool call row, its text output row and its terminal rows.
    fn tool_rows(&mut self, id: &str, out: &mut Out) {
        let Some(view) = self.tools.get(id).cloned() else {
            return;
        };
        let label = view.tool_name.clone().unwrap_or_else(|| {
            if view.kind.is_empty() {
                "tool".into()
            } else {
                view.kind.clone()
            }
        });
        let status = if view.status.is_empty() {
            "pending"
        } else {
            &view.status
        };
        let mut summary = one_line(&sanitize(&view.title), 200);
        if let Some(cmd) = command_of(view.raw_input.as_ref())
            && !summary.contains(cmd.trim())
        {
            summary = format!("{summary} — $ {}", one_line(&sanitize(&cmd), 120));
        }
        if !view.locations.is_empty() {
            summary.push_str(&format!(" ({})", view.locations.join(", ")));
        }
        for t in &view.terminals {
            summary.push_str(&format!(" → terminal {t}"));
        }
        let mut input = String::new();
        if let Some(r) = &view.raw_input {
            input.push_str(&pretty_json(r));
        }
        if let Some(r) = &view.raw_output {
            input.push_str("\noutput: ");
            input.push_str(&pretty_json(r));
        }
        out.item(
            None,
            ItemOp::Upsert {
                key: format!("tool:{id}"),
                kind: ItemKind::ToolCall {
                    id: id.to_string(),
                    name: format!("{} · {status}", sanitize(&label)),
                    summary,
                    input: sanitize(&input),
                    diff: view.diff.clone(),
                },
            },
        );
        if !view.text.trim().is_empty() {
            out.item(
                None,
                ItemOp::Upsert {
                    key: format!("toolout:{id}"),
                    kind: ItemKind::ToolResult {
                        tool_use_id: id.to_string(),
                        text: sanitize(&view.text),
                        is_error: status == "failed",
                    },
                },
            );
        }
        for t in &view.terminals {
            let tv = self.terms.entry(t.clone()).or_default();
            tv.tool = Some(id.to_string());
            let row = term_row(t, tv);
            out.item(None, row);
        }
        out.ev(BackendEvent::NodeUpdate {
            key: ROOT_KEY.into(),
            patch: NodePatch {
                tool_uses: Some(self.tool_uses),
                last_tool: Some(sanitize(&label)),
                ..NodePatch::default()
            },
        });
    }

    fn subagent(&mut self, sa: &Value, update: &Value, out: &mut Out) {
        let phase = s(sa, "phase").unwrap_or_default();
        let Some(id) = s(sa, "subagent").filter(|i| !i.is_empty()) else {
            out.protocol(
                Level::Warn,
                format!("checkfu.subagent without a subagent id: {sa}"),
            );
            return;
        };
        let key = format!("sa:{id}");
        let known = self.subagents.contains_key(&id);
        let ensure =
            |this: &mut Mapper, out: &mut Out, name: Option<String>, desc: Option<String>| {
                let name = name.unwrap_or_else(|| {
                    this.subagents
                        .get(&id)
                        .cloned()
                        .unwrap_or_else(|| id.clone())
                });
                this.subagents.insert(id.clone(), name.clone());
                out.ev(BackendEvent::NodeOpen {
                    key: key.clone(),
                    parent: None,
                    patch: NodePatch {
                        name: Some(sanitize(&name)),
                        description: desc.map(|d| sanitize(&d)),
                        ..NodePatch::default()
                    },
                });
            };
        match phase.as_str() {
            "started" => {
                let name = s(sa, "name");
                let desc = s(sa, "description");
                ensure(self, out, name.clone(), desc.clone());
                out.ev(BackendEvent::NodeUpdate {
                    key: key.clone(),
                    patch: NodePatch {
                        status: Some(NodeStatus::Running),
                        ..NodePatch::default()
                    },
                });
                let name = sanitize(&name.unwrap_or_else(|| id.clone()));
                out.system("sub-agent", format!("started {name} ({id})"));
                out.item(
                    Some(key),
                    ItemOp::Push(ItemKind::System {
                        label: "started".into(),
                        text: sanitize(&desc.unwrap_or_default()),
                    }),
                );
            }
            "activity" => {
                if !known {
                    ensure(self, out, None, None);
                }
                out.ev(BackendEvent::NodeUpdate {
                    key: key.clone(),
                    patch: NodePatch {
                        status: Some(NodeStatus::Running),
                        ..NodePatch::default()
                    },
                });
                let at = s(update, "updatedAt").unwrap_or_default();
                out.item(
                    Some(key),
                    ItemOp::Upsert {
                        key: "activity".into(),
                        kind: ItemKind::System {
                            label: "activity".into(),
                            text: format!("last activity {}", sanitize(&at)),
                        },
                    },
                );
            }
            "completed" => {
                if !known {
                    ensure(self, out, None, None);
                }
                let raw = s(sa, "disposition").unwrap_or_else(|| "completed".into());
                let d = normalise_disposition(&raw).to_string();
                let status = match d.as_str() {
                    "completed" => NodeStatus::Completed,
                    "failed" => NodeStatus::Failed,
                    _ => NodeStatus::Killed,
                };
                out.ev(BackendEvent::NodeUpdate {
                    key: key.clone(),
                    patch: NodePatch {
                        status: Some(status),
                        description: None,
                        ..NodePatch::default()
                    },
                });
                let name = self
                    .subagents
                    .get(&id)
                    .cloned()
                    .unwrap_or_else(|| id.clone());
                out.system(
                    "sub-agent",
                    format!("{} closed: {}", sanitize(&name), sanitize(&d)),
                );
                out.item(
                    Some(key),
                    ItemOp::Push(ItemKind::System {
                        label: "closed".into(),
                        text: sanitize(&d),
                    }),
                );
            }
            other => out.push(ItemKind::Generic {
                label: format!("checkfu.subagent phase {}", sanitize(other)),
                raw: sa.to_string(),
            }),
        }
    }

    // ---- requests from the agent ---------------------------------------------------------

    fn gate_id(id: &Value) -> String {
        format!("acp:{}", codec::id_key(id))
    }

    fn agent_request(&mut self, id: Value, method: &str, params: &Value, out: &mut Out) {
        let gid = Self::gate_id(&id);
        if self.theirs.contains_key(&gid) {
            out.protocol(
                Level::Error,
                format!("the agent reused request id {id} while it is pending ({method}); ignored"),
            );
            return;
        }
        let bad = |out: &mut Out, e: String| {
            out.lines.push(codec::error(
                &id,
                codec::INVALID_PARAMS,
                &format!("invalid params: {e}"),
                None,
            ));
            out.protocol(
                Level::Warn,
                format!("{method} with invalid params (answered -32602): {e}"),
            );
        };
        match method {
            "session/request_permission" => {
                match codec::typed::<schema::RequestPermissionRequest>(params) {
                    Ok(r) => self.permission(id, gid, r, out),
                    Err(e) => bad(out, e),
                }
            }
            "fs/read_text_file" => match codec::typed::<schema::ReadTextFileRequest>(params) {
                Ok(r) => match self.within_cwd(&r.path) {
                    Ok(path) => out.actions.push(Action::ReadFile {
                        id,
                        path,
                        line: r.line,
                        limit: r.limit,
                    }),
                    Err(e) => self.refuse(&id, method, &e, out),
                },
                Err(e) => bad(out, e),
            },
            "fs/write_text_file" => match codec::typed::<schema::WriteTextFileRequest>(params) {
                Ok(r) => match self.within_cwd(&r.path) {
                    Ok(path) => out.actions.push(Action::PrepareWrite {
                        id,
                        path,
                        content: r.content,
                    }),
                    Err(e) => self.refuse(&id, method, &e, out),
                },
                Err(e) => bad(out, e),
            },
            "terminal/create" => match codec::typed::<schema::CreateTerminalRequest>(params) {
                Ok(r) => {
                    let cwd = match r.cwd.as_deref() {
                        None => Ok(self.opts.cwd.clone()),
                        Some(c) => self.within_cwd(c),
                    };
                    let cwd = match cwd {
                        Ok(c) => c,
                        Err(e) => return self.refuse(&id, method, &e, out),
                    };
                    let spec = TerminalSpec {
                        command: r.command,
                        args: r.args,
                        env: r.env.into_iter().map(|e| (e.name, e.value)).collect(),
                        cwd,
                        output_byte_limit: r.output_byte_limit,
                    };
                    self.terminal_gate(id, gid, spec, out);
                }
                Err(e) => bad(out, e),
            },
            "terminal/output" | "terminal/wait_for_exit" | "terminal/kill" | "terminal/release" => {
                let Some(tid) = s(params, "terminalId") else {
                    return bad(out, "missing terminalId".into());
                };
                out.actions.push(match method {
                    "terminal/output" => Action::TerminalOutput {
                        id,
                        terminal_id: tid,
                    },
                    "terminal/wait_for_exit" => Action::WaitForExit {
                        id,
                        terminal_id: tid,
                    },
                    "terminal/kill" => Action::KillTerminal {
                        id,
                        terminal_id: tid,
                    },
                    _ => Action::ReleaseTerminal {
                        id,
                        terminal_id: tid,
                    },
                });
            }
            other => {
                out.lines.push(codec::error(
                    &id,
                    codec::METHOD_NOT_FOUND,
                    "Method not found",
                    Some(json!(other)),
                ));
                out.protocol(
                    Level::Warn,
                    format!(
                        "the agent called {} which switchboard does not serve: answered -32601",
                        sanitize(other)
                    ),
                );
            }
        }
    }

    fn refuse(&mut self, id: &Value, method: &str, why: &str, out: &mut Out) {
        out.lines.push(codec::error(id, codec::REFUSED, why, None));
        out.protocol(Level::Warn, format!("{method} refused: {why}"));
    }

    /// `p` if it lies within the session cwd (lexically), else why not.
    pub fn within_cwd(&self, p: &Path) -> Result<PathBuf, String> {
        let Some(n) = normalise(p) else {
            return Err(format!("path {} is not absolute", p.display()));
        };
        let root = normalise(&self.opts.cwd).unwrap_or_else(|| self.opts.cwd.clone());
        if n.starts_with(&root) {
            Ok(n)
        } else {
            Err(format!(
                "path {} is outside the session directory {}",
                p.display(),
                root.display()
            ))
        }
    }

    fn permission(
        &mut self,
        id: Value,
        gid: String,
        r: schema::RequestPermissionRequest,
        out: &mut Out,
    ) {
        let tid = r.tool_call.tool_call_id.0.to_string();
        let known = self.tools.contains_key(&tid);
        self.patch_tool(&tid, &r.tool_call, out);
        if !known {
            self.seg += 1;
            self.tool_uses += 1;
        }
        self.tool_rows(&tid, out);
        let view = self.tools.get(&tid).cloned().unwrap_or_default();
        let options: Vec<PermOption> = r
            .options
            .iter()
            .map(|o| PermOption {
                option_id: o.option_id.0.to_string(),
                name: sanitize(&o.name),
                kind: wire_name(&o.kind),
            })
            .collect();
        if options.is_empty() {
            out.lines.push(codec::result(
                &id,
                json!({"outcome":{"outcome":"cancelled"}}),
            ));
            out.protocol(
                Level::Error,
                "session/request_permission without options: answered cancelled",
            );
            return;
        }
        let tool = view.tool_name.clone().unwrap_or_else(|| {
            if view.kind.is_empty() {
                "tool".into()
            } else {
                view.kind.clone()
            }
        });
        let command = command_of(view.raw_input.as_ref());
        let input = match (&command, &view.raw_input) {
            (Some(c), _) => format!("$ {c}"),
            (None, Some(r)) => pretty_json(r),
            (None, None) => String::new(),
        };
        let default = options
            .iter()
            .find(|o| o.kind == "allow_once")
            .unwrap_or(&options[0]);
        let default_reply =
            pretty_json(&json!({"outcome":{"outcome":"selected","optionId":default.option_id}}));
        let kind = GateKind::Permission(Permission {
            tool: sanitize(&tool),
            summary: sanitize(&command.clone().unwrap_or_else(|| view.title.clone())),
            input: sanitize(&input),
            title: Some(sanitize(&view.title)).filter(|t| !t.is_empty()),
            description: None,
            decision_reason: None,
            blocked_path: None,
            suggestions: Vec::new(),
            always_allowed: false,
            default_to_no: false,
            diff: view.diff.clone(),
            options: options.clone(),
        });
        self.theirs.insert(
            gid.clone(),
            Incoming {
                rpc_id: id,
                what: Theirs::Permission { options },
            },
        );
        out.ev(BackendEvent::GateOpen(Gate {
            id: gid,
            node_key: ROOT_KEY.into(),
            asked_by: None,
            kind,
            opened_ms: self.now,
            default_reply,
            reply_definition: "RequestPermissionResponse",
        }));
    }

    fn client_gate(
        &mut self,
        id: Value,
        gid: String,
        what: Theirs,
        perm: Permission,
        def: &'static str,
        out: &mut Out,
    ) {
        self.theirs
            .insert(gid.clone(), Incoming { rpc_id: id, what });
        out.ev(BackendEvent::GateOpen(Gate {
            id: gid,
            node_key: ROOT_KEY.into(),
            asked_by: None,
            kind: GateKind::Permission(perm),
            opened_ms: self.now,
            default_reply: "{}".into(),
            reply_definition: def,
        }));
    }

    fn yes_no(yes: &str) -> Vec<PermOption> {
        vec![
            PermOption {
                option_id: "allow".into(),
                name: yes.into(),
                kind: "allow_once".into(),
            },
            PermOption {
                option_id: "reject".into(),
                name: "Refuse".into(),
                kind: "reject_once".into(),
            },
        ]
    }

    /// The `fs/write_text_file` gate, once the session read the file on disk (`None`: missing).
    pub fn write_gate(
        &mut self,
        id: Value,
        path: PathBuf,
        content: String,
        old: Option<String>,
    ) -> Out {
        let mut out = Out::default();
        let gid = Self::gate_id(&id);
        if self.theirs.contains_key(&gid) {
            out.protocol(
                Level::Error,
                format!("the agent reused request id {id} while it is pending"),
            );
            return out;
        }
        let shown = path.display().to_string();
        let diff = Diff::unified(&shown, old.as_deref().unwrap_or(""), &content, 3);
        let perm = Permission {
            tool: "fs/write_text_file".into(),
            summary: sanitize(&shown),
            input: sanitize(&shown),
            title: Some(format!(
                "{} {} ({} bytes)",
                if old.is_some() { "overwrite" } else { "create" },
                sanitize(&shown),
                content.len()
            )),
            description: None,
            decision_reason: None,
            blocked_path: None,
            suggestions: Vec::new(),
            always_allowed: false,
            default_to_no: false,
            diff: Some(diff),
            options: Self::yes_no("Write the file"),
        };
        self.client_gate(
            id,
            gid,
            Theirs::Write { path, content },
            perm,
            "WriteTextFileResponse",
            &mut out,
        );
        out
    }

    fn terminal_gate(&mut self, id: Value, gid: String, spec: TerminalSpec, out: &mut Out) {
        let line = spec.command_line();
        let perm = Permission {
            tool: "terminal".into(),
            summary: sanitize(&line),
            input: sanitize(&format!("$ {line}\n(in {})", spec.cwd.display())),
            title: Some("run a command in a client terminal".into()),
            description: None,
            decision_reason: None,
            blocked_path: None,
            suggestions: Vec::new(),
            always_allowed: false,
            default_to_no: false,
            diff: None,
            options: Self::yes_no("Run it"),
        };
        self.client_gate(
            id,
            gid,
            Theirs::Terminal { spec },
            perm,
            "CreateTerminalResponse",
            out,
        );
    }

    fn cancel_request(&mut self, params: &Value, out: &mut Out) {
        let Some(rid) = params.get("requestId") else {
            return out.protocol(Level::Warn, "$/cancel_request without requestId");
        };
        let gid = Self::gate_id(rid);
        let Some(inc) = self.theirs.remove(&gid) else {
            return out.protocol(
                Level::Info,
                format!("$/cancel_request for {rid}, which is not pending"),
            );
        };
        out.lines.push(match inc.what {
            Theirs::Permission { .. } => {
                codec::result(&inc.rpc_id, json!({"outcome":{"outcome":"cancelled"}}))
            }
            _ => codec::error(
                &inc.rpc_id,
                codec::REQUEST_CANCELLED,
                "Request cancelled",
                None,
            ),
        });
        out.ev(BackendEvent::GateWithdrawn { id: gid });
    }

    // ---- commands from the core -------------------------------------------------------------

    pub fn command(&mut self, c: &Command) -> Out {
        let mut out = Out::default();
        match c {
            Command::Answer { gate_id, decision } => self.answer(gate_id, decision, &mut out),
            Command::Prompt(text) => {
                if !self.ready {
                    self.queued.push_back(text.clone());
                    out.system("queue", "held until the session is ready");
                } else if self.turn {
                    if self.declared("steer", "native") {
                        self.steer_seq += 1;
                        let sid = self.session_id.clone().unwrap_or_default();
                        let line = self.request(
                            "_checkfu/session/steer",
                            json!({"sessionId": sid, "id": format!("steer-{}", self.steer_seq), "content": text}),
                            Ours::Steer { text: text.clone() },
                        );
                        out.lines.push(line);
                        out.system("steer", "sent to the running turn");
                    } else {
                        self.queued.push_back(text.clone());
                        out.system("queue", "a turn is running: queued as the next prompt");
                    }
                } else {
                    self.send_prompt(text.clone(), &mut out);
                }
            }
            Command::Interrupt => {
                if !self.turn {
                    out.system("interrupt", "no turn is running");
                } else if self.declared("interrupt", "cooperative") && !self.draining {
                    let sid = self.session_id.clone().unwrap_or_default();
                    let line = self.request(
                        "_checkfu/session/interrupt",
                        json!({"sessionId": sid}),
                        Ours::Interrupt,
                    );
                    out.lines.push(line);
                    out.system("interrupt", "cooperative interrupt requested");
                } else {
                    self.cancel(&mut out);
                }
            }
            Command::SetMode(mode) => match self.session_id.clone() {
                Some(sid) => {
                    let line = self.request(
                        "session/set_mode",
                        json!({"sessionId": sid, "modeId": mode}),
                        Ours::SetMode(mode.clone()),
                    );
                    out.lines.push(line);
                }
                None => out.system("mode", "no session yet"),
            },
            Command::Shutdown => {}
        }
        out
    }

    fn send_prompt(&mut self, text: String, out: &mut Out) {
        let Some(sid) = self.session_id.clone() else {
            self.queued.push_front(text);
            return;
        };
        self.turn = true;
        self.turn_no += 1;
        self.seg = 0;
        self.turn_started_ms = self.now;
        let line = self.request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
            Ours::Prompt,
        );
        out.lines.push(line);
        out.ev(BackendEvent::Turn(TurnState::Running));
    }

    /// `session/cancel`, then every pending permission answered `cancelled`.
    fn cancel(&mut self, out: &mut Out) {
        let sid = self.session_id.clone().unwrap_or_default();
        out.lines.push(codec::notification(
            "session/cancel",
            json!({"sessionId": sid}),
        ));
        out.info("turn", Some("cancelling".into()));
        let ids: Vec<String> = self
            .theirs
            .iter()
            .filter(|(_, i)| matches!(i.what, Theirs::Permission { .. }))
            .map(|(g, _)| g.clone())
            .collect();
        for gid in &ids {
            if let Some(inc) = self.theirs.remove(gid) {
                out.lines.push(codec::result(
                    &inc.rpc_id,
                    json!({"outcome":{"outcome":"cancelled"}}),
                ));
                out.ev(BackendEvent::GateWithdrawn { id: gid.clone() });
            }
        }
        out.system(
            "cancel",
            if ids.is_empty() {
                "session/cancel sent".to_string()
            } else {
                format!(
                    "session/cancel sent; {} pending permission(s) answered cancelled",
                    ids.len()
                )
            },
        );
    }

    fn answer(&mut self, gate_id: &str, d: &Decision, out: &mut Out) {
        let Some(inc) = self.theirs.remove(gate_id) else {
            out.protocol(
                Level::Warn,
                format!("answer for {gate_id}, which is not pending"),
            );
            return;
        };
        let id = inc.rpc_id;
        match inc.what {
            Theirs::Permission { options } => {
                let pick = |kinds: &[&str]| {
                    kinds
                        .iter()
                        .find_map(|k| options.iter().find(|o| o.kind == *k))
                        .map(|o| o.option_id.clone())
                };
                let selected =
                    |oid: String| json!({"outcome":{"outcome":"selected","optionId":oid}});
                let cancelled = json!({"outcome":{"outcome":"cancelled"}});
                let body = match d {
                    Decision::Option { option_id, .. } => selected(option_id.clone()),
                    Decision::Allow { always: true, .. } => {
                        pick(&["allow_always", "allow_once"]).map_or(cancelled, selected)
                    }
                    Decision::Allow { .. } => {
                        pick(&["allow_once", "allow_always"]).map_or(cancelled, selected)
                    }
                    // A "no" selects a reject option; `cancelled` is never a deny.
                    Decision::Deny { .. } => {
                        pick(&["reject_once", "reject_always"]).map_or(cancelled, selected)
                    }
                    Decision::Raw { body } => body.clone(),
                    _ => cancelled,
                };
                out.lines.push(codec::result(&id, body));
            }
            Theirs::Write { path, content } => {
                if allows(d) {
                    out.actions.push(Action::WriteFile { id, path, content });
                } else {
                    self.refuse(
                        &id,
                        "fs/write_text_file",
                        &format!("the user refused to write {}", path.display()),
                        out,
                    );
                }
            }
            Theirs::Terminal { spec } => {
                if allows(d) {
                    out.actions.push(Action::CreateTerminal { id, spec });
                } else {
                    self.refuse(
                        &id,
                        "terminal/create",
                        &format!("the user refused to run `{}`", spec.command_line()),
                        out,
                    );
                }
            }
        }
    }

    /// Answers for everything still pending when switchboard exits: permissions `cancelled`,
    /// the rest an error.
    pub fn shutdown_answers(&mut self) -> Vec<String> {
        let theirs = std::mem::take(&mut self.theirs);
        theirs
            .into_values()
            .map(|inc| match inc.what {
                Theirs::Permission { .. } => {
                    codec::result(&inc.rpc_id, json!({"outcome":{"outcome":"cancelled"}}))
                }
                _ => codec::error(
                    &inc.rpc_id,
                    codec::INTERNAL_ERROR,
                    "switchboard exited",
                    None,
                ),
            })
            .collect()
    }

    /// Ids of the agent's requests still waiting for a human.
    pub fn pending_gates(&self) -> Vec<String> {
        self.theirs.keys().cloned().collect()
    }

    // ---- terminals (state reported by the session) ---------------------------------------

    /// A terminal was started for request `id`: answer it and show its row.
    pub fn terminal_created(&mut self, id: &Value, terminal_id: &str, command: &str) -> Out {
        let mut out = Out::default();
        out.lines
            .push(codec::result(id, json!({"terminalId": terminal_id})));
        let tv = self.terms.entry(terminal_id.to_string()).or_default();
        tv.command = command.to_string();
        let row = term_row(terminal_id, tv);
        out.item(None, row);
        out
    }

    /// New output or an exit of a terminal: refresh its row (linked to its tool call).
    pub fn terminal_update(
        &mut self,
        terminal_id: &str,
        output: &str,
        truncated: bool,
        exit: Option<String>,
    ) -> Out {
        let mut out = Out::default();
        let tv = self.terms.entry(terminal_id.to_string()).or_default();
        let tail = if output.len() > SHOWN_OUTPUT {
            let mut cut = output.len() - SHOWN_OUTPUT;
            while !output.is_char_boundary(cut) {
                cut += 1;
            }
            &output[cut..]
        } else {
            output
        };
        tv.output = sanitize(tail);
        tv.truncated = truncated || tail.len() < output.len();
        if exit.is_some() {
            tv.exit = exit;
        }
        let row = term_row(terminal_id, tv);
        out.item(None, row);
        out
    }
}

fn allows(d: &Decision) -> bool {
    matches!(
        d,
        Decision::Option { allow: true, .. } | Decision::Allow { .. }
    )
}

fn term_row(tid: &str, tv: &TermView) -> ItemOp {
    let mut text = format!("terminal {tid}");
    if !tv.command.is_empty() {
        text.push_str(&format!(" · $ {}", one_line(&sanitize(&tv.command), 120)));
    }
    match &tv.exit {
        Some(e) => text.push_str(&format!(" · {e}")),
        None => text.push_str(" · running"),
    }
    if tv.truncated {
        text.push_str(" · output truncated");
    }
    text.push('\n');
    text.push_str(if tv.output.is_empty() {
        "(no output yet)"
    } else {
        &tv.output
    });
    let failed = tv.exit.as_deref().is_some_and(|e| e != "exit 0");
    ItemOp::Upsert {
        key: format!("term:{tid}"),
        kind: ItemKind::ToolResult {
            tool_use_id: tv.tool.clone().unwrap_or_else(|| tid.to_string()),
            text,
            is_error: failed,
        },
    }
}

fn tool_name(meta: Option<&Map<String, Value>>) -> Option<String> {
    meta?
        .get("claudeCode")?
        .get("toolName")?
        .as_str()
        .map(str::to_string)
}

fn command_of(raw: Option<&Value>) -> Option<String> {
    let c = raw?.get("command")?;
    match c {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => Some(
            a.iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| v.to_string())
                })
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

fn locations(l: &[schema::ToolCallLocation]) -> Vec<String> {
    l.iter()
        .map(|l| match l.line {
            Some(n) => format!("{}:{n}", l.path.display()),
            None => l.path.display().to_string(),
        })
        .collect()
}

/// One line for the `checkfu.turn` telemetry of a turn.
pub fn telemetry_text(t: &Value) -> String {
    let n = |k: &str| t.get(k).and_then(Value::as_u64);
    let mut parts = vec![s(t, "execution").unwrap_or_else(|| "?".into())];
    for (k, label) in [
        ("shell_commands", "shell"),
        ("filesystem_commands", "filesystem"),
        ("mcp_calls", "mcp"),
        ("model_calls", "model calls"),
    ] {
        parts.push(format!(
            "{} {label}",
            n(k).map_or("?".into(), |v| v.to_string())
        ));
    }
    if let Some(w) = n("wall_time_ms") {
        parts.push(format!("wall {}", crate::core::text::human_duration(w)));
    }
    for (k, label) in [
        ("model_transient_retries", "retries"),
        ("model_overflow_recoveries", "overflow recoveries"),
    ] {
        if let Some(v) = n(k) {
            parts.push(format!("{v} {label}"));
        }
    }
    sanitize(&parts.join(" · "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready() -> Mapper {
        let mut m = Mapper::new(AcpOptions {
            cwd: PathBuf::from("/w/p"),
            ..AcpOptions::default()
        });
        m.initialize_line();
        m.on_line(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{},"_meta":{"checkfu.capabilities":{"steer":"native"}}}}"#);
        m.on_line(r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}"#);
        assert!(m.ready());
        m
    }

    #[test]
    fn unknown_methods_get_method_not_found_and_ids_do_not_collide() {
        let mut m = ready();
        let out = m.command(&Command::Prompt("hi".into()));
        assert!(out.lines[0].contains("\"id\":3"));
        // The agent's own id 3 is a different request.
        let out = m.on_line(r#"{"jsonrpc":"2.0","id":3,"method":"x/unknown","params":{}}"#);
        assert!(out.lines[0].contains("-32601"), "{:?}", out.lines);
        assert!(m.turn_running());
        m.on_line(r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#);
        assert!(!m.turn_running());
    }

    #[test]
    fn paths_outside_cwd_are_refused() {
        let m = ready();
        assert!(m.within_cwd(Path::new("/w/p/a/../b.txt")).is_ok());
        assert!(m.within_cwd(Path::new("/w/p/../q/b.txt")).is_err());
        assert!(m.within_cwd(Path::new("rel.txt")).is_err());
        assert!(m.within_cwd(Path::new("/w/pq")).is_err());
    }

    #[test]
    fn cancelled_spellings_normalise() {
        assert_eq!(normalise_disposition("canceled"), "cancelled");
        assert_eq!(normalise_disposition("cancelled"), "cancelled");
        assert_eq!(normalise_disposition("failed"), "failed");
    }
}
