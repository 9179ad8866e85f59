//! Claude stream-json frames → domain events, and domain commands → stdin lines.
//! Pure: no IO, so live sessions, replays and tests share it.

mod commands;
mod control;
mod messages;
mod stream;
mod system;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet, VecDeque};
use switchboard_core::gate::Decision;

/// Streamed messages whose blocks are remembered (a message settles within its own frames).
const STREAM_CAP: usize = 256;
/// Tool ids remembered for node lookups (a permission request follows its tool use at once).
const TOOL_CAP: usize = 8192;

use serde_json::{Value, json};

use super::codec::Inbound;
use super::encode::Pending;
use super::{codec, encode};
use switchboard_core::msg::BackendEvent;
use switchboard_core::text::{sanitize, truncate};
use switchboard_core::transcript::{ItemKind, ItemOp, Level};
use switchboard_core::tree::{NodePatch, NodeStatus};

/// Dialog kinds this UI renders (declared in `initialize`).
pub const DIALOG_KINDS: &[&str] = &["refusal_fallback_prompt"];

/// What one input produced: events for the core and lines to write back at once.
#[derive(Debug, Default)]
pub struct Out {
    pub events: Vec<BackendEvent>,
    pub replies: Vec<String>,
    /// Remarks for the recording (`note` lines): requests left unanswered, and why.
    pub notes: Vec<String>,
}

impl Out {
    fn ev(&mut self, e: BackendEvent) {
        // Most lines make one event: room for exactly one, not the four a first push makes.
        if self.events.capacity() == 0 {
            self.events = Vec::with_capacity(1);
        }
        self.events.push(e);
    }
    fn item(&mut self, node: Option<String>, op: ItemOp) {
        self.ev(BackendEvent::Item { node, op });
    }
    fn protocol(&mut self, level: Level, text: impl Into<String>) {
        self.ev(BackendEvent::Protocol {
            level,
            text: text.into(),
        });
    }
}

/// `{a}{sep}{n}` built directly: keys are made for nearly every line, and `format!` costs
/// several times the copy.
fn key_with_number(a: &str, sep: &str, n: u64) -> String {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut key = String::with_capacity(a.len() + sep.len() + digits.len() - i);
    key.push_str(a);
    key.push_str(sep);
    // Only ASCII digits were written.
    key.push_str(std::str::from_utf8(&digits[i..]).unwrap_or_default());
    key
}

/// The transcript key of block `index` of message `msg`: `msg#index`.
fn block_key(msg: &str, index: u32) -> String {
    key_with_number(msg, "#", u64::from(index))
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

/// A streamed block known to be unsettled as of `generation` (see `Mapper::open_block`).
#[derive(Debug, Clone)]
struct OpenBlock {
    msg: String,
    index: u32,
    generation: u64,
    /// Its transcript key (`msg#index`), copied for each delta rather than rebuilt.
    key: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Text,
    Thinking,
    ToolUse,
}

#[derive(Clone, Debug, Default)]
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
    /// Message ids of `stream` and tool ids of `tool_node`/`tool_names` in arrival order, so
    /// the oldest are forgotten past `STREAM_CAP`/`TOOL_CAP` (both maps otherwise grow with
    /// the session; entries matter only while their message or tool call is live).
    stream_order: VecDeque<String>,
    tool_order: VecDeque<String>,
    /// The message each node is streaming, by `parent_tool_use_id`; the root's is kept apart
    /// from the map (nearly every line is the root's, and it needs no hashing).
    root_msg: Option<String>,
    current_msg: HashMap<String, String>,
    /// Bumped whenever a streamed block is settled: `open_block` holds only while unchanged.
    settle_gen: u64,
    /// The block the last delta went to, known unsettled at `settle_gen`: a block's deltas
    /// arrive in a row, and this spares each of them the lookup in `stream`.
    open_block: Option<OpenBlock>,
    /// Tests turn `open_block` off to compare the lookups it skips with its answers.
    #[cfg(test)]
    no_memo: bool,
    tool_uses: HashMap<Option<String>, u64>,
    settle_seq: u64,
    init_seen: bool,
    interrupting: bool,
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

    /// Remember the blocks of a newly streamed message, forgetting the oldest past the cap.
    fn stream_blocks(&mut self, msg: String) -> &mut Vec<StreamBlock> {
        if !self.stream.contains_key(&msg) {
            if self.stream_order.len() >= STREAM_CAP
                && let Some(old) = self.stream_order.pop_front()
            {
                self.stream.remove(&old);
            }
            self.stream_order.push_back(msg.clone());
        }
        self.stream.entry(msg).or_default()
    }

    /// The message the node of `parent` is streaming.
    fn current(&self, parent: Option<&str>) -> Option<&String> {
        match parent {
            None => self.root_msg.as_ref(),
            Some(p) => self.current_msg.get(p),
        }
    }

    /// Whether `open_block` may answer for the deltas (always, outside tests that compare).
    fn memo_on(&self) -> bool {
        #[cfg(test)]
        {
            !self.no_memo
        }
        #[cfg(not(test))]
        {
            true
        }
    }

    /// Remember a tool id's node and name, forgetting the oldest past the cap.
    fn remember_tool(&mut self, id: &str, node: Option<String>, name: &str) {
        if !self.tool_node.contains_key(id) && !self.tool_names.contains_key(id) {
            if self.tool_order.len() >= TOOL_CAP
                && let Some(old) = self.tool_order.pop_front()
            {
                self.tool_node.remove(&old);
                self.tool_names.remove(&old);
            }
            self.tool_order.push_back(id.to_string());
        }
        self.tool_node.insert(id.to_string(), node);
        self.tool_names.insert(id.to_string(), name.to_string());
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
        // A line that starts with visible ASCII (every JSON line: `{`) is not blank; only
        // the rest need the Unicode-aware trim.
        let starts_visible = line
            .as_bytes()
            .first()
            .is_some_and(|b| b.is_ascii_graphic());
        if !starts_visible && line.trim().is_empty() {
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
                // A request we cannot read still gets its one answer when it names its id.
                if kind == "control_request"
                    && let Some(id) = serde_json::from_str::<Value>(line)
                        .ok()
                        .and_then(|v| v.get("request_id")?.as_str().map(str::to_string))
                        .filter(|id| !id.is_empty())
                {
                    out.replies.push(encode::error(
                        &id,
                        &format!("malformed control_request: {error}"),
                    ));
                }
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
                        switchboard_record::utc_from_secs(t)
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

    /// True once the agent answered our `initialize`.
    pub fn initialized(&self) -> bool {
        !self.ours.values().any(|o| matches!(o, Ours::Initialize)) && self.next_id > 0
    }

    /// Requests still waiting for an answer (for the exit path).
    pub fn pending_ids(&self) -> Vec<String> {
        self.pending.keys().cloned().collect()
    }

    /// The fail-closed answer for every request still pending when switchboard exits, each in
    /// its own kind's words (deny, block, cancel).
    pub fn exit_answers(&mut self) -> Out {
        let mut out = Out::default();
        let mut ids: Vec<String> = self.pending.keys().cloned().collect();
        ids.sort();
        for id in ids {
            let Some(p) = self.pending.remove(&id) else {
                continue;
            };
            let decision = match p {
                Pending::Permission { .. } | Pending::Question { .. } => Decision::Deny {
                    message: "switchboard exited".into(),
                    interrupt: false,
                },
                Pending::Breakpoint => Decision::Block {
                    reason: "switchboard exited".into(),
                },
                Pending::Dialog => Decision::DialogCancel,
                Pending::Elicitation => Decision::ElicitCancel,
            };
            let body =
                encode::body(&p, &decision).unwrap_or_else(|why| encode::fail_closed(&p, &why));
            out.replies.push(encode::success(&id, body));
        }
        out
    }
}
