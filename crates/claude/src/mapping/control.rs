//! Control requests from the CLI (gates, MCP messages, dialogs) and its replies to ours.

use serde_json::{Value, json};

use super::{DIALOG_KINDS, Mapper, Ours, Out};
use crate::encode::Pending;
use crate::{codec, encode, gates};
use switchboard_core::gate::Gate;
use switchboard_core::msg::{BackendEvent, Capabilities, SessionPatch};
use switchboard_core::text::{one_line, pretty_json, sanitize, truncate};
use switchboard_core::transcript::{ItemKind, ItemOp, Level};

impl Mapper {
    pub(super) fn control_request(&mut self, r: codec::ControlRequest, line: &str, out: &mut Out) {
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
                out.notes.push(
                    "request-id: control_request without a usable string request_id; not answered (a response needs one)".into(),
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
            // Not answered on its own: an answer with this id would land on the first request.
            out.protocol(
                Level::Error,
                format!(
                    "duplicate id: request_id {} arrived again while pending ({}); not answered separately",
                    sanitize(&id),
                    sanitize(&subtype)
                ),
            );
            out.notes.push(format!(
                "duplicate-id: request_id {id} ({subtype}) arrived again while pending; not answered separately"
            ));
            return;
        }
        let tool_use_id = req.get("tool_use_id").and_then(Value::as_str);
        let agent_id = req
            .get("agent_id")
            .or_else(|| req.get("input").and_then(|i| i.get("agent_id")))
            .and_then(Value::as_str);
        let (kind, pending) = match subtype.as_str() {
            "can_use_tool" => {
                if let Some(why) = gates::invalid_can_use_tool(&req) {
                    // Fail closed: the error envelope is the one answer, recorded like any
                    // reply, and the request is shown in the log.
                    out.replies.push(encode::error(
                        &id,
                        &format!("switchboard refused a malformed can_use_tool request: {why}"),
                    ));
                    out.protocol(
                        Level::Error,
                        format!(
                            "can_use_tool {id} is malformed ({why}): refused with an error, no gate\n{}",
                            truncate(&sanitize(&pretty_json(&req)), 2000)
                        ),
                    );
                    return;
                }
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
                    // Undeclared kind: `cancelled` would count as the user dismissing it, so
                    // the one answer is an error envelope, which the CLI discards; its own
                    // deadline closes the dialog.
                    out.replies.push(encode::error(
                        &id,
                        &format!("dialog kind \"{kind}\" was not declared by this client"),
                    ));
                    out.protocol(
                        Level::Warn,
                        format!(
                            "dialog of undeclared kind {kind:?} ({id}): shown read-only, answered with an error; the agent's deadline closes it\n{}",
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
        out.ev(BackendEvent::GateOpen(Box::new(Gate {
            id,
            node_key: node_key.unwrap_or_else(|| switchboard_core::tree::ROOT_KEY.to_string()),
            asked_by: agent_id.map(str::to_string),
            kind,
            opened_ms: 0,
            default_reply,
            reply_definition,
        })));
    }

    /// The node a gate belongs to: by `agent_id`, else by where its tool_use appeared.
    pub(super) fn gate_node(
        &self,
        agent_id: Option<&str>,
        tool_use_id: Option<&str>,
    ) -> Option<String> {
        if let Some(a) = agent_id
            && let Some(k) = self.agent_node.get(a).or_else(|| self.task_node.get(a))
        {
            return Some(k.clone());
        }
        tool_use_id.and_then(|t| self.tool_node.get(t).cloned().flatten())
    }

    pub(super) fn control_response(&mut self, r: codec::ControlResponse, out: &mut Out) {
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

    pub(super) fn init_reply(&mut self, body: &Value, out: &mut Out) {
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
            // Claude Code's own permission modes: `m` offers these on this backend only.
            modes: switchboard_core::state::PERMISSION_MODES
                .iter()
                .map(|m| m.to_string())
                .collect(),
            extra,
            options: Vec::new(),
        }));
        if let Some(mode) = body.get("current_permission_mode").and_then(Value::as_str) {
            out.ev(BackendEvent::Session(SessionPatch {
                permission_mode: Some(mode.to_string()),
                ..SessionPatch::default()
            }));
        }
    }
}
