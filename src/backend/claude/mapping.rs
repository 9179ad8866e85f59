//! Claude stream-json frames → domain events, and domain commands → stdin lines.
//! Pure: no IO, so live sessions, replays and tests share it.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use super::codec::{self, Block, Content, Delta, Inbound, StartBlock, StreamPayload};
use super::encode::{self, Pending};
use super::gates;
use crate::core::gate::Gate;
use crate::core::msg::{BackendEvent, Capabilities, Command, SessionPatch, TurnState};
use crate::core::text::{one_line, pretty_json, sanitize, tool_input_summary, truncate};
use crate::core::transcript::{ItemKind, ItemOp, Level, Tone};
use crate::core::tree::{NodePatch, NodeStatus};

/// Dialog kinds this UI renders (declared in `initialize`).
pub const DIALOG_KINDS: &[&str] = &["refusal_fallback_prompt"];

/// What one input produced: events for the core and lines to write back at once.
#[derive(Debug, Default)]
pub struct Out {
    pub events: Vec<BackendEvent>,
    pub replies: Vec<String>,
}

impl Out {
    fn ev(&mut self, e: BackendEvent) {
        self.events.push(e);
    }
    fn item(&mut self, node: Option<String>, op: ItemOp) {
        self.events.push(BackendEvent::Item { node, op });
    }
    fn protocol(&mut self, level: Level, text: impl Into<String>) {
        self.events.push(BackendEvent::Protocol {
            level,
            text: text.into(),
        });
    }
}

#[derive(Debug, Clone)]
enum Ours {
    Initialize,
    Interrupt,
    SetMode(String),
}

#[derive(Debug, Clone)]
struct StreamBlock {
    index: u32,
    kind: BlockKind,
    settled: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Text,
    Thinking,
    ToolUse,
}

#[derive(Debug, Default)]
pub struct Mapper {
    pending: HashMap<String, Pending>,
    ours: HashMap<String, Ours>,
    next_id: u64,
    /// Hook callback id → tool name, for `--break TOOL`.
    breakpoints: HashMap<String, String>,
    /// tool_use id → node key of the line that carried it (None = root).
    tool_node: HashMap<String, Option<String>>,
    tool_names: HashMap<String, String>,
    /// Node keys of sub-agents (their dispatching tool_use ids).
    agents: HashSet<String>,
    task_node: HashMap<String, String>,
    agent_node: HashMap<String, String>,
    stream: HashMap<String, Vec<StreamBlock>>,
    current_msg: HashMap<Option<String>, String>,
    tool_uses: HashMap<Option<String>, u64>,
    settle_seq: u64,
    init_seen: bool,
    interrupting: bool,
}

fn is_dispatch(name: &str, input: &Value) -> bool {
    matches!(name, "Agent" | "Task") || input.get("subagent_type").is_some()
}

impl Mapper {
    pub fn new(breaks: &[String]) -> Mapper {
        let mut m = Mapper::default();
        for tool in breaks {
            m.breakpoints
                .insert(format!("sb-break-{tool}"), tool.clone());
        }
        m
    }

    fn next_request_id(&mut self) -> String {
        self.next_id += 1;
        format!("sb-{}", self.next_id)
    }

    /// The first stdin line: hooks for breakpoints, the dialog kinds we render, and
    /// sub-agent text forwarding.
    pub fn initialize_line(&mut self) -> String {
        let id = self.next_request_id();
        self.ours.insert(id.clone(), Ours::Initialize);
        let mut req = json!({
            "subtype": "initialize",
            "supportedDialogKinds": DIALOG_KINDS,
            "forwardSubagentText": true,
        });
        if !self.breakpoints.is_empty() {
            let mut entries: Vec<(&String, &String)> = self.breakpoints.iter().collect();
            entries.sort();
            let hooks: Vec<Value> = entries
                .into_iter()
                .map(|(cb, tool)| json!({"matcher": tool, "hookCallbackIds": [cb]}))
                .collect();
            req["hooks"] = json!({ "PreToolUse": hooks });
        }
        encode::request(&id, req)
    }

    /// Node key for lines whose `parent_tool_use_id` is `parent`; opens a node for a parent
    /// we have not seen dispatched (so nothing is lost).
    fn node_for(&mut self, parent: Option<&str>, out: &mut Out) -> Option<String> {
        let p = parent?;
        if !self.agents.contains(p) {
            self.agents.insert(p.to_string());
            let grand = self.tool_node.get(p).cloned().flatten();
            out.ev(BackendEvent::NodeOpen {
                key: p.to_string(),
                parent: grand,
                patch: NodePatch {
                    name: Some("agent".into()),
                    status: Some(NodeStatus::Running),
                    ..NodePatch::default()
                },
            });
        }
        Some(p.to_string())
    }

    pub fn on_line(&mut self, line: &str) -> Out {
        let mut out = Out::default();
        let line = line.trim_end_matches(['\r', '\n']);
        if line.trim().is_empty() {
            return out;
        }
        match codec::parse(line) {
            Inbound::NotJson { .. } => out.item(
                None,
                ItemOp::Push(ItemKind::Protocol {
                    level: Level::Warn,
                    text: format!("non-JSON line: {}", truncate(&sanitize(line), 2000)),
                }),
            ),
            Inbound::Unknown { kind } => out.item(
                None,
                ItemOp::Push(ItemKind::Generic {
                    label: format!("unknown message type {kind}"),
                    raw: sanitize(line),
                }),
            ),
            Inbound::Malformed { kind, error } => {
                out.protocol(Level::Error, format!("malformed {kind} line: {error}"));
                out.item(
                    None,
                    ItemOp::Push(ItemKind::Generic {
                        label: format!("malformed {kind}"),
                        raw: sanitize(line),
                    }),
                );
            }
            Inbound::KeepAlive | Inbound::ToolProgress => {}
            Inbound::ControlCancel { request_id } => match request_id {
                Some(id) => {
                    if self.pending.remove(&id).is_some() {
                        out.ev(BackendEvent::GateWithdrawn { id });
                    } else {
                        out.protocol(
                            Level::Warn,
                            format!("control_cancel_request for {id}, which is not pending"),
                        );
                    }
                }
                None => out.protocol(Level::Error, "control_cancel_request without a request_id"),
            },
            Inbound::ControlRequest(r) => self.control_request(r, line, &mut out),
            Inbound::ControlResponse(r) => self.control_response(r, &mut out),
            Inbound::Assistant(a) => self.assistant(a, &mut out),
            Inbound::User(u) => self.user(u, &mut out),
            Inbound::Result(r) => self.result(r, &mut out),
            Inbound::StreamEvent(e) => self.stream_event(e, &mut out),
            Inbound::System(s) => self.system(s, line, &mut out),
            Inbound::RateLimit(r) => {
                let info = r.rate_limit_info.unwrap_or(Value::Null);
                let status = info.get("status").and_then(Value::as_str).unwrap_or("?");
                let kind = info
                    .get("rateLimitType")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let text = match info.get("resetsAt").and_then(Value::as_i64) {
                    Some(t) => format!(
                        "{status} {kind}, resets at {}",
                        crate::record::utc_from_secs(t)
                    ),
                    None => format!("{status} {kind}"),
                };
                out.item(
                    None,
                    ItemOp::Push(ItemKind::System {
                        label: "rate limit".into(),
                        text,
                    }),
                );
            }
        }
        out
    }

    fn control_request(&mut self, r: codec::ControlRequest, line: &str, out: &mut Out) {
        let id = match r.request_id {
            Some(Value::String(s)) if !s.is_empty() => s,
            _ => {
                // Nothing to echo: we cannot answer, but the line is shown.
                out.protocol(
                    Level::Error,
                    format!(
                        "control_request without a usable request_id (not answered): {}",
                        truncate(line, 300)
                    ),
                );
                return;
            }
        };
        let req = r.request;
        let subtype = req
            .get("subtype")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if self.pending.contains_key(&id) {
            out.protocol(
                Level::Error,
                format!("duplicate request_id {id} while it is pending ({subtype}); ignored"),
            );
            return;
        }
        let tool_use_id = req.get("tool_use_id").and_then(Value::as_str);
        let agent_id = req
            .get("agent_id")
            .or_else(|| req.get("input").and_then(|i| i.get("agent_id")))
            .and_then(Value::as_str);
        let (kind, pending) = match subtype.as_str() {
            "can_use_tool" => {
                let tool = req.get("tool_name").and_then(Value::as_str).unwrap_or("");
                let input = req.get("input").cloned().unwrap_or(json!({}));
                if tool == "AskUserQuestion" {
                    (gates::question(&req), Pending::Question { input })
                } else {
                    let suggestions = req
                        .get("permission_suggestions")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    (
                        gates::permission(&req),
                        Pending::Permission {
                            input,
                            suggestions,
                            tool_name: tool.to_string(),
                        },
                    )
                }
            }
            "hook_callback" => {
                let cb = req.get("callback_id").and_then(Value::as_str).unwrap_or("");
                if !self.breakpoints.contains_key(cb) {
                    out.replies.push(encode::error(
                        &id,
                        &format!("No hook callback found for ID: {cb}"),
                    ));
                    out.protocol(
                        Level::Warn,
                        format!(
                            "hook_callback for unknown callback id {cb:?}: answered with an error"
                        ),
                    );
                    return;
                }
                (gates::breakpoint(&req), Pending::Breakpoint)
            }
            "request_user_dialog" => {
                let kind = req
                    .get("dialog_kind")
                    .or_else(|| req.get("dialogKind"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if !DIALOG_KINDS.contains(&kind) {
                    // Undeclared kind: an answer would count as the user dismissing it.
                    out.protocol(
                        Level::Warn,
                        format!(
                            "dialog of undeclared kind {kind:?} ({id}): shown read-only, not answered; the agent's deadline closes it\n{}",
                            pretty_json(&req)
                        ),
                    );
                    return;
                }
                (gates::dialog(&req, kind), Pending::Dialog)
            }
            "elicitation" | "side_question" => (gates::elicitation(&req), Pending::Elicitation),
            "mcp_message" => {
                let server = req
                    .get("server_name")
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                let msg = req.get("message").cloned().unwrap_or(Value::Null);
                let body = match msg.get("id") {
                    Some(mid) => json!({"mcp_response":{"jsonrpc":"2.0","id":mid,
                        "error":{"code":-32601,"message":format!("switchboard serves no MCP server named {server}")}}}),
                    // A notification: the id-0 form the CLI's own SDK sends (and schema v1 accepts).
                    None => json!({"mcp_response":{"jsonrpc":"2.0","id":0,"result":{}}}),
                };
                out.replies.push(encode::success(&id, body));
                out.protocol(
                    Level::Info,
                    format!("mcp_message for {server} answered automatically (switchboard hosts no SDK MCP servers)"),
                );
                return;
            }
            other => {
                out.replies.push(encode::error(
                    &id,
                    &format!("unsupported control_request subtype \"{other}\""),
                ));
                out.protocol(
                    Level::Warn,
                    format!("unsupported control_request subtype {other:?} ({id}): answered with an error"),
                );
                return;
            }
        };
        let node_key = self.gate_node(agent_id, tool_use_id);
        let default_reply = pretty_json(&encode::default_body(&pending));
        let reply_definition = encode::reply_definition(&pending);
        self.pending.insert(id.clone(), pending);
        out.ev(BackendEvent::GateOpen(Gate {
            id,
            node_key: node_key.unwrap_or_else(|| crate::core::tree::ROOT_KEY.to_string()),
            asked_by: agent_id.map(str::to_string),
            kind,
            opened_ms: 0,
            default_reply,
            reply_definition,
        }));
    }

    /// The node a gate belongs to: by `agent_id`, else by where its tool_use appeared.
    fn gate_node(&self, agent_id: Option<&str>, tool_use_id: Option<&str>) -> Option<String> {
        if let Some(a) = agent_id
            && let Some(k) = self.agent_node.get(a).or_else(|| self.task_node.get(a))
        {
            return Some(k.clone());
        }
        tool_use_id.and_then(|t| self.tool_node.get(t).cloned().flatten())
    }

    fn control_response(&mut self, r: codec::ControlResponse, out: &mut Out) {
        let env = r.response;
        let Some(id) = env.request_id else {
            out.protocol(Level::Warn, "control_response without request_id");
            return;
        };
        let Some(ours) = self.ours.remove(&id) else {
            out.protocol(
                Level::Warn,
                format!("control_response for unknown request {id}"),
            );
            return;
        };
        if env.subtype != "success" {
            let err = env
                .error
                .map(|e| {
                    e.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| e.to_string())
                })
                .unwrap_or_default();
            out.protocol(Level::Error, format!("{ours:?} failed: {}", sanitize(&err)));
            return;
        }
        let body = env.response.unwrap_or(Value::Null);
        match ours {
            Ours::Initialize => self.init_reply(&body, out),
            Ours::Interrupt => out.item(
                None,
                ItemOp::Push(ItemKind::System {
                    label: "interrupt".into(),
                    text: "acknowledged by the agent".into(),
                }),
            ),
            Ours::SetMode(mode) => {
                out.ev(BackendEvent::Session(SessionPatch {
                    permission_mode: Some(mode.clone()),
                    ..SessionPatch::default()
                }));
                out.item(
                    None,
                    ItemOp::Push(ItemKind::System {
                        label: "mode".into(),
                        text: format!("permission mode set to {mode}"),
                    }),
                );
            }
        }
    }

    fn init_reply(&mut self, body: &Value, out: &mut Out) {
        let pairs = |key: &str, name: &str, desc: &str| -> Vec<(String, String)> {
            body.get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|v| {
                            let n = v.get(name).and_then(Value::as_str).unwrap_or("?");
                            let d = v.get(desc).and_then(Value::as_str).unwrap_or("");
                            (sanitize(n), one_line(&sanitize(d), 120))
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut extra = Vec::new();
        // (`pid` is already known from the spawn.)
        for k in ["output_style", "claude_code_version", "session_state"] {
            if let Some(v) = body.get(k) {
                extra.push((
                    k.to_string(),
                    v.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| v.to_string()),
                ));
            }
        }
        if let Some(a) = body.get("account") {
            extra.push(("account".into(), a.to_string()));
        }
        out.ev(BackendEvent::Capabilities(Capabilities {
            models: pairs("models", "value", "displayName"),
            commands: pairs("commands", "name", "description"),
            agents: pairs("agents", "name", "description"),
            modes: Vec::new(),
            extra,
        }));
        if let Some(mode) = body.get("current_permission_mode").and_then(Value::as_str) {
            out.ev(BackendEvent::Session(SessionPatch {
                permission_mode: Some(mode.to_string()),
                ..SessionPatch::default()
            }));
        }
    }

    fn assistant(&mut self, a: codec::Assistant, out: &mut Out) {
        let node = self.node_for(a.parent_tool_use_id.as_deref(), out);
        let msg_id = a.message.id.clone().unwrap_or_default();
        let aborted = a.aborted.unwrap_or(false);
        if let Some(err) = &a.error {
            out.item(
                node.clone(),
                ItemOp::Push(ItemKind::Protocol {
                    level: Level::Error,
                    text: format!(
                        "assistant error: {}",
                        err.as_str().unwrap_or(&err.to_string())
                    ),
                }),
            );
        }
        let Content::Blocks(blocks) = a.message.content else {
            if let Content::Text(text) = a.message.content {
                let key = self.settle_key(&msg_id, BlockKind::Text);
                out.item(
                    node,
                    ItemOp::Upsert {
                        key,
                        kind: ItemKind::Assistant {
                            text,
                            streaming: false,
                            aborted,
                        },
                    },
                );
            }
            return;
        };
        for block in blocks {
            match block {
                Block::Text { text } => {
                    let key = self.settle_key(&msg_id, BlockKind::Text);
                    out.item(
                        node.clone(),
                        ItemOp::Upsert {
                            key,
                            kind: ItemKind::Assistant {
                                text,
                                streaming: false,
                                aborted,
                            },
                        },
                    );
                }
                Block::Thinking {
                    thinking,
                    signature,
                } => {
                    let key = self.settle_key(&msg_id, BlockKind::Thinking);
                    let redacted = thinking.is_empty() && !signature.is_empty();
                    out.item(
                        node.clone(),
                        ItemOp::Upsert {
                            key,
                            kind: ItemKind::Thinking {
                                text: thinking,
                                redacted,
                                streaming: false,
                            },
                        },
                    );
                }
                Block::RedactedThinking {} => {
                    let key = self.settle_key(&msg_id, BlockKind::Thinking);
                    out.item(
                        node.clone(),
                        ItemOp::Upsert {
                            key,
                            kind: ItemKind::Thinking {
                                text: String::new(),
                                redacted: true,
                                streaming: false,
                            },
                        },
                    );
                }
                Block::ToolUse { id, name, input } => {
                    self.settle_key(&msg_id, BlockKind::ToolUse);
                    self.tool_use(node.clone(), &id, &name, &input, out);
                }
                Block::ToolResult { .. } | Block::Image {} | Block::Document {} | Block::Other => {}
            }
        }
        if aborted {
            out.item(
                node,
                ItemOp::EndStreaming {
                    key_prefix: format!("{msg_id}#"),
                    aborted: true,
                },
            );
        }
    }

    /// The transcript key of the next unsettled streamed block of `kind` in `msg_id`, or a
    /// fresh key when the block was never streamed.
    fn settle_key(&mut self, msg_id: &str, kind: BlockKind) -> String {
        if let Some(blocks) = self.stream.get_mut(msg_id)
            && let Some(b) = blocks.iter_mut().find(|b| b.kind == kind && !b.settled)
        {
            b.settled = true;
            return format!("{msg_id}#{}", b.index);
        }
        self.settle_seq += 1;
        format!("{msg_id}#s{}", self.settle_seq)
    }

    fn tool_use(
        &mut self,
        node: Option<String>,
        id: &str,
        name: &str,
        input: &Value,
        out: &mut Out,
    ) {
        let first_time = !self.tool_node.contains_key(id) || !self.tool_names.contains_key(id);
        self.tool_node.insert(id.to_string(), node.clone());
        self.tool_names.insert(id.to_string(), name.to_string());
        out.item(
            node.clone(),
            ItemOp::Upsert {
                key: format!("tool:{id}"),
                kind: ItemKind::ToolCall {
                    id: id.to_string(),
                    name: name.to_string(),
                    summary: tool_input_summary(name, input),
                    input: sanitize(&pretty_json(input)),
                    diff: gates::edit_diff(name, input),
                },
            },
        );
        if first_time || input.as_object().is_some_and(|o| !o.is_empty()) {
            let count = self.tool_uses.entry(node.clone()).or_default();
            if first_time {
                *count += 1;
            }
            let count = *count;
            if let Some(k) = &node {
                out.ev(BackendEvent::NodeUpdate {
                    key: k.clone(),
                    patch: NodePatch {
                        tool_uses: Some(count),
                        last_tool: Some(name.to_string()),
                        ..NodePatch::default()
                    },
                });
            } else {
                out.ev(BackendEvent::NodeUpdate {
                    key: crate::core::tree::ROOT_KEY.into(),
                    patch: NodePatch {
                        tool_uses: Some(count),
                        last_tool: Some(name.to_string()),
                        ..NodePatch::default()
                    },
                });
            }
        }
        if is_dispatch(name, input) {
            let subagent = input
                .get("subagent_type")
                .and_then(Value::as_str)
                .unwrap_or("agent");
            let desc = input.get("description").and_then(Value::as_str);
            self.agents.insert(id.to_string());
            out.ev(BackendEvent::NodeOpen {
                key: id.to_string(),
                parent: node,
                patch: NodePatch {
                    name: Some(sanitize(subagent)),
                    description: desc.map(sanitize),
                    ..NodePatch::default()
                },
            });
        }
    }

    fn user(&mut self, u: codec::User, out: &mut Out) {
        let node = self.node_for(u.parent_tool_use_id.as_deref(), out);
        if u.is_replay == Some(true) {
            return;
        }
        match u.message.content {
            Content::Text(text) => out.item(
                node,
                ItemOp::Push(ItemKind::User {
                    text: sanitize(&text),
                }),
            ),
            Content::Blocks(blocks) => {
                for block in blocks {
                    match block {
                        Block::Text { text } => {
                            let kind = if u.is_synthetic == Some(true) {
                                ItemKind::System {
                                    label: "synthetic".into(),
                                    text: sanitize(&text),
                                }
                            } else {
                                ItemKind::User {
                                    text: sanitize(&text),
                                }
                            };
                            out.item(node.clone(), ItemOp::Push(kind));
                        }
                        Block::ToolResult {
                            tool_use_id,
                            content,
                            is_error,
                        } => {
                            let is_error = is_error.unwrap_or(false);
                            out.item(
                                node.clone(),
                                ItemOp::Push(ItemKind::ToolResult {
                                    text: sanitize(&result_text(content.as_ref())),
                                    tool_use_id: tool_use_id.clone(),
                                    is_error,
                                }),
                            );
                            if self.agents.contains(&tool_use_id) {
                                self.agent_result(
                                    &tool_use_id,
                                    is_error,
                                    u.tool_use_result.as_ref(),
                                    out,
                                );
                            }
                        }
                        Block::Image {} => out.item(
                            node.clone(),
                            ItemOp::Push(ItemKind::User {
                                text: "[image]".into(),
                            }),
                        ),
                        Block::Document {} => out.item(
                            node.clone(),
                            ItemOp::Push(ItemKind::User {
                                text: "[document]".into(),
                            }),
                        ),
                        _ => {}
                    }
                }
            }
        }
    }

    /// The Agent tool_result closes a foreground sub-agent (a backgrounded one keeps running).
    fn agent_result(&mut self, key: &str, is_error: bool, tur: Option<&Value>, out: &mut Out) {
        if let Some(agent_id) = tur.and_then(|t| t.get("agentId")).and_then(Value::as_str) {
            self.agent_node
                .insert(agent_id.to_string(), key.to_string());
        }
        let status = tur.and_then(|t| t.get("status")).and_then(Value::as_str);
        let new = match (is_error, status) {
            (true, _) => Some(NodeStatus::Failed),
            (false, None) | (false, Some("completed")) => Some(NodeStatus::Completed),
            (false, Some(s)) => NodeStatus::from_wire(s).filter(|s| s.is_terminal()),
        };
        if new.is_some() {
            out.ev(BackendEvent::NodeUpdate {
                key: key.to_string(),
                patch: NodePatch {
                    status: new,
                    ..NodePatch::default()
                },
            });
        }
    }

    fn result(&mut self, r: codec::TurnResult, out: &mut Out) {
        let is_error = r.is_error.unwrap_or(false) || r.subtype != "success";
        let usage = r.usage.unwrap_or_default();
        let mut text = r.result.unwrap_or_default();
        if let Some(errors) = r.errors {
            for e in errors {
                text.push_str(&format!(
                    "\n{}",
                    e.as_str().map(str::to_string).unwrap_or(e.to_string())
                ));
            }
        }
        if let Some(reason) = &r.terminal_reason {
            text.push_str(&format!("\n({reason})"));
        }
        let input_tokens =
            usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
        out.item(
            None,
            ItemOp::Push(ItemKind::TurnResult {
                ok: !is_error,
                subtype: r.subtype.clone(),
                text: sanitize(text.trim()),
                cost_usd: r.total_cost_usd,
                input_tokens,
                output_tokens: usage.output_tokens,
                duration_ms: r.duration_ms.unwrap_or(0),
            }),
        );
        out.ev(BackendEvent::Usage {
            input_tokens,
            output_tokens: usage.output_tokens,
            cost_usd: r.total_cost_usd.unwrap_or(0.0),
        });
        out.ev(BackendEvent::Turn(TurnState::Idle));
        self.interrupting = false;
    }

    fn stream_event(&mut self, e: codec::StreamEvent, out: &mut Out) {
        let parent = e.parent_tool_use_id.clone();
        let node = self.node_for(parent.as_deref(), out);
        match e.event {
            StreamPayload::MessageStart { message } => {
                if let Some(id) = message.id {
                    self.current_msg.insert(parent, id);
                }
            }
            StreamPayload::ContentBlockStart {
                index,
                content_block,
            } => {
                let Some(msg) = self.current_msg.get(&parent).cloned() else {
                    return;
                };
                let kind = match content_block {
                    StartBlock::Text {} => BlockKind::Text,
                    StartBlock::Thinking {} | StartBlock::RedactedThinking {} => {
                        BlockKind::Thinking
                    }
                    StartBlock::ToolUse { id, name } => {
                        if !self.tool_names.contains_key(&id) {
                            self.tool_use(node, &id, &name, &json!({}), out);
                        }
                        BlockKind::ToolUse
                    }
                    StartBlock::Other => return,
                };
                self.stream.entry(msg).or_default().push(StreamBlock {
                    index,
                    kind,
                    settled: false,
                });
            }
            StreamPayload::ContentBlockDelta { index, delta } => {
                let Some(msg) = self.current_msg.get(&parent) else {
                    return;
                };
                let (thinking, text) = match delta {
                    Delta::TextDelta { text } => (false, text),
                    Delta::ThinkingDelta { thinking } => (true, thinking),
                    _ => return,
                };
                // A delta for a block already settled by its assistant line is stale.
                let settled = self
                    .stream
                    .get(msg)
                    .and_then(|b| b.iter().find(|b| b.index == index))
                    .is_some_and(|b| b.settled);
                if !settled {
                    out.item(
                        node,
                        ItemOp::AppendText {
                            key: format!("{msg}#{index}"),
                            thinking,
                            delta: sanitize(&text),
                        },
                    );
                }
            }
            StreamPayload::MessageStop {} => {
                if let Some(msg) = self.current_msg.get(&parent) {
                    out.item(
                        node,
                        ItemOp::EndStreaming {
                            key_prefix: format!("{msg}#"),
                            aborted: false,
                        },
                    );
                }
            }
            StreamPayload::ContentBlockStop {}
            | StreamPayload::MessageDelta {}
            | StreamPayload::Other => {}
        }
    }

    fn system(&mut self, s: codec::System, line: &str, out: &mut Out) {
        let sys = |label: &str, text: String| {
            ItemOp::Push(ItemKind::System {
                label: label.to_string(),
                text: sanitize(&text),
            })
        };
        match s.subtype.as_str() {
            "init" => {
                let tools: Option<Vec<String>> = s.tools.as_ref().map(|t| {
                    t.iter()
                        .map(|v| {
                            v.as_str()
                                .map(str::to_string)
                                .unwrap_or_else(|| v.to_string())
                        })
                        .collect()
                });
                if !self.init_seen {
                    out.item(
                        None,
                        sys(
                            "session",
                            format!(
                                "started: model {}, {} tools, mode {}",
                                s.model.as_deref().unwrap_or("?"),
                                tools.as_ref().map_or(0, Vec::len),
                                s.permission_mode.as_deref().unwrap_or("?")
                            ),
                        ),
                    );
                }
                self.init_seen = true;
                out.ev(BackendEvent::Session(SessionPatch {
                    session_id: s.session_id,
                    model: s.model,
                    permission_mode: s.permission_mode,
                    cwd: s.cwd,
                    agent_version: s.claude_code_version,
                    tools,
                    interruptible: Some(true),
                }));
                out.ev(BackendEvent::Turn(TurnState::Running));
            }
            "status" => {
                if let Some(mode) = s.permission_mode {
                    out.ev(BackendEvent::Session(SessionPatch {
                        permission_mode: Some(mode),
                        ..SessionPatch::default()
                    }));
                }
                match s.status.as_ref().and_then(Value::as_str) {
                    Some("compacting") => {
                        out.item(None, sys("status", "compacting the context…".into()))
                    }
                    Some("requesting") => out.ev(BackendEvent::Turn(TurnState::Running)),
                    _ => {}
                }
            }
            "session_state_changed" => {
                let t = match s.state.as_deref() {
                    Some("idle") => TurnState::Idle,
                    Some("running") => TurnState::Running,
                    Some("requires_action") => TurnState::RequiresAction,
                    _ => return out.item(None, generic("system/session_state_changed", line)),
                };
                out.ev(BackendEvent::Turn(t));
            }
            "compact_boundary" => {
                let m = s.compact_metadata.unwrap_or(Value::Null);
                let n = |k: &str| {
                    m.get(k)
                        .and_then(Value::as_u64)
                        .map(crate::core::text::human_count)
                };
                out.item(
                    None,
                    sys(
                        "compacted",
                        format!(
                            "context compacted ({}): {} → {} tokens",
                            m.get("trigger").and_then(Value::as_str).unwrap_or("?"),
                            n("pre_tokens").unwrap_or_else(|| "?".into()),
                            n("post_tokens").unwrap_or_else(|| "?".into())
                        ),
                    ),
                );
            }
            "api_retry" => out.item(
                None,
                sys(
                    "api retry",
                    format!(
                        "attempt {}/{} in {}ms: {} {}",
                        s.attempt.unwrap_or(0),
                        s.max_retries.unwrap_or(0),
                        s.retry_delay_ms.unwrap_or(0),
                        s.error_status.map(|v| v.to_string()).unwrap_or_default(),
                        s.error
                            .map(|v| v.as_str().map(str::to_string).unwrap_or(v.to_string()))
                            .unwrap_or_default()
                    ),
                ),
            ),
            "permission_denied" => {
                let node = s
                    .tool_use_id
                    .as_deref()
                    .and_then(|t| self.tool_node.get(t).cloned().flatten());
                out.item(
                    node,
                    ItemOp::Push(ItemKind::Audit {
                        text: sanitize(&format!(
                            "denied by the agent's own rules: {} — {}",
                            s.tool_name.as_deref().unwrap_or("?"),
                            s.message
                                .map(|v| v.as_str().map(str::to_string).unwrap_or(v.to_string()))
                                .unwrap_or_default()
                        )),
                        tone: Tone::Denied,
                    }),
                );
            }
            "task_started" => self.task_started(s, out),
            "task_progress" => {
                let Some(key) = s
                    .task_id
                    .as_ref()
                    .and_then(|t| self.task_node.get(t))
                    .cloned()
                    .or_else(|| s.tool_use_id.clone().filter(|t| self.agents.contains(t)))
                else {
                    return out.item(None, generic("system/task_progress", line));
                };
                let u = s.usage.unwrap_or_default();
                out.ev(BackendEvent::NodeUpdate {
                    key,
                    patch: NodePatch {
                        tokens: u.total_tokens,
                        tool_uses: u.tool_uses,
                        last_tool: s.last_tool_name,
                        ..NodePatch::default()
                    },
                });
            }
            "task_updated" | "task_notification" => {
                let status = s
                    .patch
                    .as_ref()
                    .and_then(|p| p.status.as_deref())
                    .or(s.status.as_ref().and_then(Value::as_str))
                    .and_then(NodeStatus::from_wire);
                let key = s
                    .task_id
                    .as_ref()
                    .and_then(|t| self.task_node.get(t))
                    .cloned();
                match key {
                    Some(key) => {
                        if let Some(summary) = s.summary.filter(|x| !x.is_empty()) {
                            out.item(Some(key.clone()), sys("task", summary));
                        }
                        if let Some(status) = status {
                            out.ev(BackendEvent::NodeUpdate {
                                key,
                                patch: NodePatch {
                                    status: Some(status),
                                    ..NodePatch::default()
                                },
                            });
                        }
                    }
                    None => out.item(None, generic(&format!("system/{}", s.subtype), line)),
                }
            }
            "hook_started" | "hook_progress" | "hook_response" => out.item(
                None,
                sys(
                    "hook",
                    format!(
                        "{} {} {}",
                        s.hook_name
                            .as_deref()
                            .or(s.hook_event.as_deref())
                            .unwrap_or("?"),
                        s.subtype.trim_start_matches("hook_"),
                        s.outcome.as_deref().unwrap_or("")
                    ),
                ),
            ),
            "elicitation_complete"
            | "informational"
            | "notification"
            | "local_command_output"
            | "thinking_tokens"
            | "commands_changed"
            | "files_persisted"
            | "memory_recall"
            | "model_refusal_fallback"
            | "model_refusal_no_fallback"
            | "worker_shutting_down"
            | "mirror_error"
            | "session_writes_lost"
            | "plugin_install"
            | "background_tasks_changed"
            | "control_request_progress" => {
                out.item(None, generic(&format!("system/{}", s.subtype), line));
            }
            other => out.item(
                None,
                generic(&format!("unknown system subtype {other}"), line),
            ),
        }
    }

    fn task_started(&mut self, s: codec::System, out: &mut Out) {
        let Some(task_id) = s.task_id.clone() else {
            return out.protocol(Level::Warn, "system/task_started without task_id");
        };
        // Key by the dispatching tool_use id when there is one, else by task id.
        let key = s
            .tool_use_id
            .clone()
            .unwrap_or_else(|| format!("task:{task_id}"));
        let parent = match s
            .parent_task_id
            .as_ref()
            .and_then(|p| self.task_node.get(p))
        {
            Some(p) => Some(p.clone()),
            None => s
                .tool_use_id
                .as_ref()
                .and_then(|t| self.tool_node.get(t).cloned().flatten()),
        };
        self.task_node.insert(task_id.clone(), key.clone());
        self.agent_node
            .entry(task_id)
            .or_insert_with(|| key.clone());
        self.agents.insert(key.clone());
        out.ev(BackendEvent::NodeOpen {
            key: key.clone(),
            parent,
            patch: NodePatch {
                name: s.subagent_type.or(s.task_type).map(|n| sanitize(&n)),
                description: s.description.map(|d| sanitize(&d)),
                status: Some(NodeStatus::Running),
                ..NodePatch::default()
            },
        });
    }

    /// Turn a command from the core into stdin lines (and any events it implies).
    pub fn command(&mut self, cmd: &Command) -> Out {
        let mut out = Out::default();
        match cmd {
            Command::Prompt(text) => {
                out.replies.push(encode::user_turn(text));
                out.ev(BackendEvent::Turn(TurnState::Running));
            }
            Command::Interrupt => {
                let id = self.next_request_id();
                self.ours.insert(id.clone(), Ours::Interrupt);
                self.interrupting = true;
                out.replies
                    .push(encode::request(&id, json!({"subtype":"interrupt"})));
            }
            Command::SetMode(mode) => {
                let id = self.next_request_id();
                self.ours.insert(id.clone(), Ours::SetMode(mode.clone()));
                out.replies.push(encode::request(
                    &id,
                    json!({"subtype":"set_permission_mode","mode":mode}),
                ));
            }
            Command::Answer { gate_id, decision } => match self.pending.remove(gate_id) {
                None => out.protocol(
                    Level::Warn,
                    format!("answer for {gate_id} not sent: the request is no longer pending"),
                ),
                Some(pending) => {
                    let body = encode::body(&pending, decision).unwrap_or_else(|why| {
                        out.protocol(
                            Level::Error,
                            format!("{gate_id}: {why}; answered fail-closed"),
                        );
                        encode::fail_closed(&pending, &why)
                    });
                    out.replies.push(encode::success(gate_id, body));
                }
            },
            Command::Shutdown => {}
        }
        out
    }

    /// Register the PreToolUse hook callbacks a recorded `initialize` declared, so replayed
    /// `hook_callback` requests become breakpoint gates as they were live.
    fn learn_initialize(&mut self, req: &Value) {
        let hooks = req
            .get("hooks")
            .and_then(|h| h.get("PreToolUse"))
            .and_then(Value::as_array);
        for h in hooks.into_iter().flatten() {
            let matcher = h.get("matcher").and_then(Value::as_str).unwrap_or("*");
            for id in h
                .get("hookCallbackIds")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                self.breakpoints.insert(id.to_string(), matcher.to_string());
            }
        }
    }

    /// A line we wrote earlier, read back from a recording (replay, validate, export): our
    /// requests are remembered, and a reply to a pending gate closes it with the decision it
    /// expresses. Returns the events and, per answered gate, the (id, pending, body) triple.
    pub fn on_outbound(&mut self, line: &str) -> (Out, Vec<(String, Pending, Value)>) {
        let mut out = Out::default();
        let mut answered = Vec::new();
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            out.protocol(
                Level::Warn,
                format!(
                    "recorded outbound line is not JSON: {}",
                    truncate(line, 200)
                ),
            );
            return (out, answered);
        };
        match v.get("type").and_then(Value::as_str) {
            Some("control_request") => {
                let id = v
                    .get("request_id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let req = v.get("request").cloned().unwrap_or(Value::Null);
                match req.get("subtype").and_then(Value::as_str) {
                    Some("initialize") => {
                        self.learn_initialize(&req);
                        self.ours.insert(id, Ours::Initialize);
                    }
                    Some("interrupt") => {
                        self.ours.insert(id, Ours::Interrupt);
                        out.item(
                            None,
                            ItemOp::Push(ItemKind::System {
                                label: "interrupt".into(),
                                text: "sent by the supervisor".into(),
                            }),
                        );
                    }
                    Some("set_permission_mode") => {
                        let mode = req.get("mode").and_then(Value::as_str).unwrap_or("?");
                        self.ours.insert(id, Ours::SetMode(mode.to_string()));
                    }
                    _ => {}
                }
            }
            Some("control_response") => {
                let r = v.get("response").cloned().unwrap_or(Value::Null);
                let id = r
                    .get("request_id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if let Some(pending) = self.pending.remove(&id) {
                    let body = r.get("response").cloned().unwrap_or(Value::Null);
                    match super::decode::decision(&pending, &body) {
                        Some(decision) => out.ev(BackendEvent::GateAnswered {
                            id: id.clone(),
                            decision,
                        }),
                        None => out.ev(BackendEvent::GateAnswered {
                            id: id.clone(),
                            decision: crate::core::gate::Decision::Raw { body: body.clone() },
                        }),
                    }
                    answered.push((id, pending, body));
                }
            }
            Some("user") => {
                let content = v.get("message").and_then(|m| m.get("content"));
                let text = match content {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Array(blocks)) => blocks
                        .iter()
                        .filter_map(|b| b.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => String::new(),
                };
                out.item(
                    None,
                    ItemOp::Push(ItemKind::User {
                        text: sanitize(&text),
                    }),
                );
                out.ev(BackendEvent::Turn(TurnState::Running));
            }
            _ => {}
        }
        (out, answered)
    }

    /// True once the agent answered our `initialize`.
    pub fn initialized(&self) -> bool {
        !self.ours.values().any(|o| matches!(o, Ours::Initialize)) && self.next_id > 0
    }

    /// Requests still waiting for an answer (for the exit path).
    pub fn pending_ids(&self) -> Vec<String> {
        self.pending.keys().cloned().collect()
    }
}

fn generic(label: &str, line: &str) -> ItemOp {
    ItemOp::Push(ItemKind::Generic {
        label: label.to_string(),
        raw: sanitize(line),
    })
}

/// Text of a tool_result `content`: a string or a list of blocks.
fn result_text(content: Option<&Value>) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                Some(t) => format!("[{t}]"),
                None => b.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::gate::{Decision, GateKind};
    use crate::core::{Msg, State, update};

    fn feed(m: &mut Mapper, lines: &[Value]) -> Out {
        let mut all = Out::default();
        for l in lines {
            let out = m.on_line(&l.to_string());
            all.events.extend(out.events);
            all.replies.extend(out.replies);
        }
        all
    }

    fn apply(state: &mut State, events: Vec<BackendEvent>) {
        for (i, event) in events.into_iter().enumerate() {
            update(
                state,
                Msg::Backend {
                    at_ms: 10 + i as u64,
                    event,
                },
            );
        }
    }

    fn stream(parent: Option<&str>, event: Value) -> Value {
        json!({"type":"stream_event","event":event,"parent_tool_use_id":parent})
    }

    fn assistant(id: &str, parent: Option<&str>, blocks: Value) -> Value {
        json!({"type":"assistant","message":{"id":id,"role":"assistant","content":blocks},
            "parent_tool_use_id":parent})
    }

    fn task_started(task: &str, tool_use_id: &str, parent_task: Option<&str>, kind: &str) -> Value {
        json!({"type":"system","subtype":"task_started","task_id":task,"tool_use_id":tool_use_id,
            "parent_task_id":parent_task,"description":format!("{kind} work"),"subagent_type":kind})
    }

    fn reply_json(line: &str) -> Value {
        crate::schema::validate_claude_outbound_line(line)
            .unwrap_or_else(|e| panic!("reply outside the schema: {e}\n{line}"));
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn streaming_deltas_then_the_settling_line_give_one_item() {
        let mut m = Mapper::new(&[]);
        let out = feed(
            &mut m,
            &[
                stream(
                    None,
                    json!({"type":"message_start","message":{"id":"msg_1"}}),
                ),
                stream(
                    None,
                    json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
                ),
                stream(
                    None,
                    json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}}),
                ),
                stream(
                    None,
                    json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"think."}}),
                ),
                stream(
                    None,
                    json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
                ),
                stream(
                    None,
                    json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hel"}}),
                ),
                stream(
                    None,
                    json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"lo"}}),
                ),
                assistant(
                    "msg_1",
                    None,
                    json!([
                    {"type":"thinking","thinking":"Let me think.","signature":"s"},
                    {"type":"text","text":"Hello!"}]),
                ),
                // A late delta for a settled block is dropped.
                stream(
                    None,
                    json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" stale"}}),
                ),
                stream(None, json!({"type":"message_stop"})),
            ],
        );
        assert!(out.replies.is_empty());
        let mut s = State::new("claude", "main", 0);
        apply(&mut s, out.events);
        let items: Vec<&ItemKind> = s.tree.nodes[0]
            .transcript
            .items
            .iter()
            .map(|i| &i.kind)
            .collect();
        assert_eq!(
            items,
            vec![
                &ItemKind::Thinking {
                    text: "Let me think.".into(),
                    redacted: false,
                    streaming: false
                },
                &ItemKind::Assistant {
                    text: "Hello!".into(),
                    streaming: false,
                    aborted: false
                },
            ]
        );
    }

    #[test]
    fn an_unstreamed_assistant_line_is_one_item_per_block() {
        let mut m = Mapper::new(&[]);
        let out = feed(
            &mut m,
            &[assistant(
                "msg_9",
                None,
                json!([{"type":"text","text":"a"},{"type":"text","text":"b"}]),
            )],
        );
        let mut s = State::new("claude", "main", 0);
        apply(&mut s, out.events);
        assert_eq!(s.tree.nodes[0].transcript.len(), 2);
    }

    #[test]
    fn sub_agents_nest_by_parent_task_and_gates_follow_agent_id() {
        let mut m = Mapper::new(&[]);
        let out = feed(
            &mut m,
            &[
                assistant(
                    "m1",
                    None,
                    json!([{"type":"tool_use","id":"toolu_a","name":"Agent",
                    "input":{"description":"Map the code","subagent_type":"Explore","prompt":"go"}}]),
                ),
                task_started("task_a", "toolu_a", None, "Explore"),
                assistant(
                    "m2",
                    Some("toolu_a"),
                    json!([{"type":"tool_use","id":"toolu_b","name":"Agent",
                    "input":{"description":"Grep","subagent_type":"general-purpose","prompt":"go"}}]),
                ),
                task_started("task_b", "toolu_b", Some("task_a"), "general-purpose"),
                assistant(
                    "m3",
                    Some("toolu_b"),
                    json!([{"type":"tool_use","id":"toolu_g","name":"Grep",
                    "input":{"pattern":"fn x"}}]),
                ),
            ],
        );
        assert!(out.events.iter().any(|e| matches!(e,
            BackendEvent::NodeOpen { key, parent: Some(p), .. } if key == "toolu_b" && p == "toolu_a")));
        let mut s = State::new("claude", "main", 0);
        apply(&mut s, out.events);
        let a = s.tree.get("toolu_a").unwrap();
        let b = s.tree.get("toolu_b").unwrap();
        assert_eq!(s.tree.nodes[a].depth, 1);
        assert_eq!(s.tree.nodes[b].depth, 2);
        assert_eq!(s.tree.nodes[b].parent, Some(a));
        assert_eq!(s.tree.nodes[b].name, "general-purpose");
        assert_eq!(s.tree.nodes[b].last_tool.as_deref(), Some("Grep"));
        assert_eq!(s.tree.nodes[b].transcript.len(), 1);
        // A permission request naming the nested agent lands on its node.
        let out = feed(
            &mut m,
            &[
                json!({"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool",
                "tool_name":"Bash","input":{"command":"ls"},"agent_id":"task_b"}}),
            ],
        );
        let [BackendEvent::GateOpen(g)] = out.events.as_slice() else {
            panic!("{:?}", out.events)
        };
        assert_eq!(g.node_key, "toolu_b");
        assert_eq!(g.asked_by.as_deref(), Some("task_b"));
        assert!(matches!(&g.kind, GateKind::Permission(p) if p.summary == "ls"));
        // Without agent_id, the tool_use's node decides.
        let out = feed(
            &mut m,
            &[
                json!({"type":"control_request","request_id":"r2","request":{"subtype":"can_use_tool",
                "tool_name":"Grep","input":{"pattern":"fn x"},"tool_use_id":"toolu_g"}}),
            ],
        );
        let [BackendEvent::GateOpen(g)] = out.events.as_slice() else {
            panic!("{:?}", out.events)
        };
        assert_eq!(g.node_key, "toolu_b");
        // The Agent tool_result completes the sub-agent.
        let out = feed(
            &mut m,
            &[
                json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result",
                "tool_use_id":"toolu_b","content":"done"}]},"parent_tool_use_id":"toolu_a"}),
            ],
        );
        apply(&mut s, out.events);
        assert_eq!(
            s.tree.nodes[b].status,
            crate::core::tree::NodeStatus::Completed
        );
    }

    #[test]
    fn unknown_type_is_a_generic_row() {
        let mut m = Mapper::new(&[]);
        let out = m.on_line(r#"{"type":"future_event","detail":1}"#);
        assert!(out.replies.is_empty());
        assert!(
            matches!(out.events.as_slice(), [BackendEvent::Item { node: None, op: ItemOp::Push(ItemKind::Generic { label, raw }) }]
            if label == "unknown message type future_event" && raw.contains("\"detail\":1"))
        );
        let out = m.on_line(r#"{"type":"system","subtype":"demo_notice"}"#);
        assert!(
            matches!(out.events.as_slice(), [BackendEvent::Item { op: ItemOp::Push(ItemKind::Generic { label, .. }), .. }]
            if label.contains("demo_notice"))
        );
    }

    #[test]
    fn non_json_is_a_protocol_row() {
        let mut m = Mapper::new(&[]);
        let out = m.on_line("Segmentation fault (core dumped)\n");
        assert!(out.replies.is_empty());
        assert!(
            matches!(out.events.as_slice(), [BackendEvent::Item { op: ItemOp::Push(ItemKind::Protocol { level: Level::Warn, text }), .. }]
            if text.contains("non-JSON line: Segmentation fault"))
        );
        assert!(
            m.on_line("   \n").events.is_empty(),
            "blank lines are ignored"
        );
    }

    #[test]
    fn mcp_message_is_answered_automatically() {
        let mut m = Mapper::new(&[]);
        let out = m.on_line(
            &json!({"type":"control_request","request_id":"r1","request":{"subtype":"mcp_message",
                "server_name":"tickets","message":{"jsonrpc":"2.0","id":7,"method":"tools/list"}}})
            .to_string(),
        );
        assert_eq!(out.replies.len(), 1);
        let v = reply_json(&out.replies[0]);
        assert_eq!(v["response"]["subtype"], "success");
        assert_eq!(v["response"]["request_id"], "r1");
        let mcp = &v["response"]["response"]["mcp_response"];
        assert_eq!(mcp["id"], 7);
        assert_eq!(mcp["error"]["code"], -32601);
        assert!(
            !out.events
                .iter()
                .any(|e| matches!(e, BackendEvent::GateOpen(_)))
        );
        // A notification (no id) gets the empty result.
        let out = m.on_line(
            &json!({"type":"control_request","request_id":"r2","request":{"subtype":"mcp_message",
                "server_name":"tickets","message":{"jsonrpc":"2.0","method":"notifications/initialized"}}})
            .to_string(),
        );
        let v = reply_json(&out.replies[0]);
        assert_eq!(
            v["response"]["response"]["mcp_response"]["result"],
            json!({})
        );
    }

    #[test]
    fn unknown_subtype_gets_an_error_envelope() {
        let mut m = Mapper::new(&[]);
        let out = m.on_line(
            r#"{"type":"control_request","request_id":"r9","request":{"subtype":"frobnicate"}}"#,
        );
        assert_eq!(out.replies.len(), 1);
        let v = reply_json(&out.replies[0]);
        assert_eq!(
            v,
            json!({"type":"control_response","response":{"subtype":"error","request_id":"r9",
                "error":"unsupported control_request subtype \"frobnicate\""}})
        );
        assert!(
            !out.events
                .iter()
                .any(|e| matches!(e, BackendEvent::GateOpen(_)))
        );
        // A hook callback we never registered is refused the same way.
        let out = m.on_line(
            r#"{"type":"control_request","request_id":"r10","request":{"subtype":"hook_callback","callback_id":"nope","input":{}}}"#,
        );
        let v = reply_json(&out.replies[0]);
        assert_eq!(v["response"]["subtype"], "error");
    }

    #[test]
    fn missing_request_id_gets_no_reply() {
        let mut m = Mapper::new(&[]);
        for line in [
            r#"{"type":"control_request","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{}}}"#,
            r#"{"type":"control_request","request_id":"","request":{"subtype":"frobnicate"}}"#,
            r#"{"type":"control_request","request_id":5,"request":{"subtype":"frobnicate"}}"#,
        ] {
            let out = m.on_line(line);
            assert!(out.replies.is_empty(), "{line}");
            assert!(
                matches!(out.events.as_slice(), [BackendEvent::Protocol { level: Level::Error, text }]
                if text.contains("without a usable request_id"))
            );
        }
    }

    #[test]
    fn undeclared_dialog_kind_gets_no_reply() {
        let mut m = Mapper::new(&[]);
        let out = m.on_line(
            r#"{"type":"control_request","request_id":"d1","request":{"subtype":"request_user_dialog","dialog_kind":"mystery_prompt","payload":{}}}"#,
        );
        assert!(out.replies.is_empty());
        assert!(
            matches!(out.events.as_slice(), [BackendEvent::Protocol { level: Level::Warn, text }]
            if text.contains("mystery_prompt") && text.contains("not answered"))
        );
        assert!(m.pending_ids().is_empty());
        // The declared kind opens a gate.
        let out = m.on_line(
            r#"{"type":"control_request","request_id":"d2","request":{"subtype":"request_user_dialog","dialog_kind":"refusal_fallback_prompt","payload":{"title":"T"}}}"#,
        );
        assert!(
            matches!(out.events.as_slice(), [BackendEvent::GateOpen(g)] if matches!(g.kind, GateKind::Dialog(_)))
        );
    }

    #[test]
    fn duplicate_pending_id_is_ignored_and_cancel_withdraws() {
        let mut m = Mapper::new(&[]);
        let req = r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"}}}"#;
        assert!(matches!(
            m.on_line(req).events.as_slice(),
            [BackendEvent::GateOpen(_)]
        ));
        let out = m.on_line(req);
        assert!(out.replies.is_empty());
        assert!(matches!(
            out.events.as_slice(),
            [BackendEvent::Protocol {
                level: Level::Error,
                ..
            }]
        ));
        let out = m.on_line(r#"{"type":"control_cancel_request","request_id":"r1"}"#);
        assert_eq!(
            out.events,
            vec![BackendEvent::GateWithdrawn { id: "r1".into() }]
        );
        // A withdrawn request is never answered.
        let out = m.command(&Command::Answer {
            gate_id: "r1".into(),
            decision: Decision::Allow {
                updated_input: None,
                always: false,
            },
        });
        assert!(out.replies.is_empty());
        assert!(matches!(
            out.events.as_slice(),
            [BackendEvent::Protocol {
                level: Level::Warn,
                ..
            }]
        ));
    }

    #[test]
    fn answers_are_encoded_once_and_echo_the_input() {
        let mut m = Mapper::new(&[]);
        m.on_line(r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"touch x","description":"d"}}}"#);
        let allow = Command::Answer {
            gate_id: "r1".into(),
            decision: Decision::Allow {
                updated_input: None,
                always: false,
            },
        };
        let out = m.command(&allow);
        assert_eq!(out.replies.len(), 1);
        let v = reply_json(&out.replies[0]);
        assert_eq!(
            v["response"]["response"],
            json!({"behavior":"allow","updatedInput":{"command":"touch x","description":"d"}})
        );
        assert!(
            m.command(&allow).replies.is_empty(),
            "a second answer is not sent"
        );
    }
}
