//! Which way each line of a JSONL wire log went, inferred line by line: a Claude log by its
//! message types and request ids, an ACP log by its methods and response shapes.

use std::collections::HashSet;

use serde_json::Value;

use crate::Dir;

/// Subtypes only a host sends.
const HOST_REQUESTS: &[&str] = &[
    "initialize",
    "interrupt",
    "set_permission_mode",
    "set_model",
    "set_max_thinking_tokens",
    "stop_task",
    "mcp_status",
    "rewind_files",
];

/// Directions of a Claude JSONL wire log, inferred line by line.
#[derive(Default)]
pub(super) struct ClaudeDirs {
    /// Ids of the agent's requests: a reply to one is ours.
    inbound_requests: HashSet<String>,
}

impl ClaudeDirs {
    pub(super) fn dir(&mut self, l: &str) -> Dir {
        let Ok(v) = serde_json::from_str::<Value>(l) else {
            return Dir::In;
        };
        match v.get("type").and_then(Value::as_str) {
            Some("control_request") => {
                let sub = v
                    .get("request")
                    .and_then(|r| r.get("subtype"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if HOST_REQUESTS.contains(&sub) {
                    Dir::Out
                } else {
                    if let Some(id) = v.get("request_id").and_then(Value::as_str) {
                        self.inbound_requests.insert(id.to_string());
                    }
                    Dir::In
                }
            }
            Some("control_response") => {
                match v.pointer("/response/request_id").and_then(Value::as_str) {
                    Some(id) if self.inbound_requests.contains(id) => Dir::Out,
                    _ => Dir::In,
                }
            }
            // A user turn we wrote has no uuid; the agent's echoes and tool results do.
            Some("user") => {
                if v.get("uuid").is_none() && v.get("tool_use_result").is_none() {
                    Dir::Out
                } else {
                    Dir::In
                }
            }
            _ => Dir::In,
        }
    }
}

/// Methods only a client sends (to the agent).
const ACP_CLIENT_METHODS: &[&str] = &[
    "initialize",
    "authenticate",
    "session/new",
    "session/load",
    "session/prompt",
    "session/cancel",
    "session/set_mode",
    "session/set_model",
    "session/set_config_option",
    "session/list",
];

/// Whether `method` travels client → agent.
pub fn acp_client_method(method: &str) -> bool {
    ACP_CLIENT_METHODS.contains(&method) || method.starts_with("_checkfu/")
}

/// Which side a response body answers, by its shape: `Some(true)` the agent's answer to one of
/// our requests, `Some(false)` our answer to one of the agent's.
fn acp_response_side(result: Option<&Value>) -> Option<bool> {
    let r = result?.as_object()?;
    let has = |k: &str| r.contains_key(k);
    if has("protocolVersion") || has("stopReason") || has("sessionId") || has("disposition") {
        Some(true)
    } else if has("outcome")
        || has("terminalId")
        || has("content")
        || has("output")
        || has("exitCode")
    {
        Some(false)
    } else {
        None
    }
}

/// Directions of an ACP JSON-RPC log: requests and notifications by method, responses opposite
/// to the request with that id (our ids and the agent's collide, so each side has its own
/// table).
#[derive(Default)]
pub(super) struct AcpDirs {
    /// Open requests per side, and every id each side ever used.
    ours_open: HashSet<String>,
    theirs_open: HashSet<String>,
    ours_seen: HashSet<String>,
    theirs_seen: HashSet<String>,
}

impl AcpDirs {
    pub(super) fn dir(&mut self, l: &str) -> Dir {
        let v: Option<Value> = serde_json::from_str(l).ok();
        let method = v
            .as_ref()
            .and_then(|v| v.get("method"))
            .and_then(Value::as_str);
        let id = v
            .as_ref()
            .and_then(|v| v.get("id"))
            .filter(|i| !i.is_null())
            .map(Value::to_string);
        match (method, id) {
            (Some(m), id) => {
                let out = acp_client_method(m);
                if let Some(id) = id {
                    if out {
                        self.ours_open.insert(id.clone());
                        self.ours_seen.insert(id);
                    } else {
                        self.theirs_open.insert(id.clone());
                        self.theirs_seen.insert(id);
                    }
                }
                if out { Dir::Out } else { Dir::In }
            }
            (None, Some(id)) => {
                let body = v.as_ref().and_then(|v| v.get("result"));
                let (a, o) = (self.theirs_open.contains(&id), self.ours_open.contains(&id));
                let to_agent = match acp_response_side(body) {
                    Some(ours) => !ours,
                    // Both open and no telling shape: our reply to the agent (our own
                    // requests' answers carry telling fields).
                    None if a || o => a,
                    None => self.theirs_seen.contains(&id) && !self.ours_seen.contains(&id),
                };
                if to_agent {
                    self.theirs_open.remove(&id);
                    Dir::Out
                } else {
                    self.ours_open.remove(&id);
                    Dir::In
                }
            }
            (None, None) => Dir::In,
        }
    }
}
