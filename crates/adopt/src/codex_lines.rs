//! Codex's rollout (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<session>.jsonl`) as
//! transcript rows. Each line is `{"timestamp","type","payload"}`: `session_meta`, then per
//! turn a `turn_context`, the `response_item`s the model saw and made (messages, reasoning,
//! function calls and their outputs, patches), and `event_msg`s of the CLI's own UI.
//!
//! The rows come from the `response_item`s. What repeats them for Codex's own screen is passed
//! over: in 0.169.0 the `event_msg` `item_completed` items (`UserMessage`, `AgentMessage`,
//! `CommandExecution`, `FileChange`), token counts, turn starts and ends, applied settings,
//! and the `world_state`, `token_usage_record` and `inter_agent_communication_metadata` lines
//! (older versions' `user_message`, `agent_message`, exec and patch events too). Errors,
//! aborted turns and sub-agents starting are shown, and an `event_msg`, item or line type this
//! build does not know is shown whole.

use serde_json::Value;
use switchboard_core::msg::{BackendEvent, SessionPatch};
use switchboard_core::text::{pretty_json, sanitize, sanitize_owned, tool_input_summary, truncate};
use switchboard_core::transcript::{ItemKind, ItemOp, Level};

use super::claude_lines::{ROW_MAX, label_word};

/// `event_msg` types that repeat a `response_item` or only drive Codex's own screen.
const UI_EVENTS: &[&str] = &[
    "user_message",
    "agent_message",
    "agent_message_delta",
    "agent_reasoning",
    "agent_reasoning_delta",
    "agent_reasoning_raw_content",
    "agent_reasoning_section_break",
    "token_count",
    "task_started",
    "task_complete",
    "turn_started",
    "turn_complete",
    "exec_command_begin",
    "exec_command_end",
    "exec_command_output_delta",
    "exec_approval_request",
    "apply_patch_approval_request",
    "patch_apply_begin",
    "patch_apply_end",
    "turn_diff",
    "background_event",
    "mcp_tool_call_begin",
    "mcp_tool_call_end",
    "web_search_begin",
    "web_search_end",
    "plan_update",
    "get_history_entry_response",
    "session_configured",
    "shutdown_complete",
    "entered_review_mode",
    "exited_review_mode",
    "item_started",
    "thread_settings_applied",
];

/// `item_completed` items that repeat a `response_item`.
const REPEATED_ITEMS: &[&str] = &[
    "UserMessage",
    "AgentMessage",
    "CommandExecution",
    "FileChange",
];

/// Line types of Codex's own bookkeeping.
const BOOKKEEPING: &[&str] = &[
    "world_state",
    "token_usage_record",
    "inter_agent_communication_metadata",
];

fn item(node: &Option<String>, op: ItemOp) -> BackendEvent {
    BackendEvent::Item {
        node: node.clone(),
        op,
    }
}

fn push(node: &Option<String>, kind: ItemKind) -> BackendEvent {
    item(node, ItemOp::Push(kind))
}

fn clipped(s: &str) -> String {
    sanitize_owned(truncate(s, ROW_MAX).into())
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// The rows (and session facts) of one rollout line of node `node`.
pub fn rows(node: &Option<String>, line: &str) -> Vec<BackendEvent> {
    let v: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            return vec![push(
                node,
                ItemKind::Protocol {
                    level: Level::Warn,
                    text: format!(
                        "rollout line that is not JSON ({e}): {}",
                        truncate(&sanitize(line), 200)
                    ),
                },
            )];
        }
    };
    let p = v.get("payload").unwrap_or(&Value::Null);
    let mut out = Vec::new();
    match s(&v, "type") {
        "session_meta" => {
            let meta = p.get("meta").unwrap_or(p);
            out.push(BackendEvent::Session(SessionPatch {
                agent_version: meta
                    .get("cli_version")
                    .and_then(Value::as_str)
                    .map(|v| format!("codex {v}")),
                ..SessionPatch::default()
            }));
        }
        "turn_context" => out.push(BackendEvent::Session(SessionPatch {
            model: p.get("model").and_then(Value::as_str).map(str::to_string),
            permission_mode: p
                .get("approval_policy")
                .and_then(Value::as_str)
                .map(str::to_string),
            ..SessionPatch::default()
        })),
        "response_item" => response_item(node, p, &mut out),
        t if BOOKKEEPING.contains(&t) => {}
        "event_msg" => match s(p, "type") {
            t if UI_EVENTS.contains(&t) => {}
            "item_completed" => {
                let it = p.get("item").unwrap_or(&Value::Null);
                match s(it, "type") {
                    t if REPEATED_ITEMS.contains(&t) => {}
                    "SubAgentActivity" => out.push(push(
                        node,
                        ItemKind::System {
                            label: "sub-agent".into(),
                            text: sanitize(&format!(
                                "{} {} ({})",
                                s(it, "agent_path"),
                                s(it, "kind"),
                                s(it, "agent_thread_id")
                            )),
                        },
                    )),
                    t => out.push(push(
                        node,
                        ItemKind::Generic {
                            label: format!("rollout item {}", label_word(t)),
                            raw: clipped(&it.to_string()),
                        },
                    )),
                }
            }
            "error" | "stream_error" => out.push(push(
                node,
                ItemKind::Protocol {
                    level: Level::Error,
                    text: clipped(s(p, "message")),
                },
            )),
            "turn_aborted" => out.push(push(
                node,
                ItemKind::System {
                    label: "turn aborted".into(),
                    text: clipped(s(p, "reason")),
                },
            )),
            t => out.push(push(
                node,
                ItemKind::Generic {
                    label: format!("rollout event {}", label_word(t)),
                    raw: clipped(&p.to_string()),
                },
            )),
        },
        "compacted" => out.push(push(
            node,
            ItemKind::System {
                label: "compacted".into(),
                text: clipped(s(p, "message")),
            },
        )),
        t => out.push(push(
            node,
            ItemKind::Generic {
                label: format!("rollout line of type {}", label_word(t)),
                raw: clipped(line),
            },
        )),
    }
    out
}

fn content_text(p: &Value) -> String {
    match p.get("content") {
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|c| c.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::String(t)) => t.clone(),
        _ => String::new(),
    }
}

fn response_item(node: &Option<String>, p: &Value, out: &mut Vec<BackendEvent>) {
    match s(p, "type") {
        "message" => {
            let text = content_text(p);
            let kind = match s(p, "role") {
                "assistant" => ItemKind::Assistant {
                    text: clipped(&text),
                    streaming: false,
                    aborted: false,
                },
                // What Codex puts in the user's turn itself: its environment, AGENTS.md.
                "user" if is_context(&text) => ItemKind::System {
                    label: "context".into(),
                    text: clipped(&text),
                },
                "user" => ItemKind::User {
                    text: clipped(&text),
                },
                role => ItemKind::Generic {
                    label: format!("{} instructions", label_word(role)),
                    raw: clipped(&text),
                },
            };
            out.push(push(node, kind));
        }
        "reasoning" => {
            let text = p
                .get("summary")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default();
            out.push(push(
                node,
                ItemKind::Thinking {
                    redacted: text.is_empty(),
                    text: clipped(&text),
                    streaming: false,
                },
            ));
        }
        "function_call" | "custom_tool_call" | "local_shell_call" => {
            let name = match (s(p, "name"), s(p, "namespace")) {
                ("", _) if s(p, "type") == "local_shell_call" => "shell".to_string(),
                (n, "") => n.to_string(),
                (n, ns) => format!("{ns}.{n}"),
            };
            let name = name.as_str();
            let id = match s(p, "call_id") {
                "" => s(p, "id"),
                c => c,
            };
            // Arguments come as a JSON string (function calls), free text (a patch), or an
            // action object (a local shell call).
            let input = match (p.get("arguments"), p.get("input"), p.get("action")) {
                (Some(Value::String(a)), _, _) => {
                    serde_json::from_str(a).unwrap_or_else(|_| Value::String(a.clone()))
                }
                (_, Some(i), _) => i.clone(),
                (_, _, Some(a)) => a.clone(),
                _ => Value::Null,
            };
            let summary = match &input {
                Value::String(t) => switchboard_core::gate::command_summary(t),
                Value::Object(o) => match o.get("command").or_else(|| o.get("cmd")) {
                    Some(Value::Array(argv)) => argv
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" "),
                    Some(Value::String(c)) => switchboard_core::gate::command_summary(c),
                    _ => tool_input_summary(name, &input),
                },
                _ => tool_input_summary(name, &input),
            };
            let shown = match &input {
                Value::String(t) => t.clone(),
                other => pretty_json(other),
            };
            out.push(item(
                node,
                ItemOp::Upsert {
                    key: format!("tool:{id}"),
                    kind: ItemKind::ToolCall {
                        id: id.to_string(),
                        name: name.to_string(),
                        summary: sanitize(&summary),
                        input: clipped(&shown),
                        diff: None,
                    },
                },
            ));
        }
        "function_call_output" | "custom_tool_call_output" => {
            let (text, is_error) = output_text(p.get("output"));
            out.push(push(
                node,
                ItemKind::ToolResult {
                    tool_use_id: s(p, "call_id").to_string(),
                    text: clipped(&text),
                    is_error,
                },
            ));
        }
        "agent_message" => out.push(push(
            node,
            ItemKind::System {
                label: format!("message from {}", label_word(s(p, "author"))),
                text: clipped(&content_text(p)),
            },
        )),
        "ghost_snapshot" => {}
        t => out.push(push(
            node,
            ItemKind::Generic {
                label: format!("rollout item {}", label_word(t)),
                raw: clipped(&p.to_string()),
            },
        )),
    }
}

/// A user message Codex wrote itself (its environment context, the user's instructions).
fn is_context(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("<environment_context>")
        || t.starts_with("<user_instructions>")
        || t.starts_with("# AGENTS.md")
        || t.starts_with("<permissions")
}

/// A call's output: text (`Process exited with code N`, `Exit code: N`, `… failed: …` in
/// 0.169.0), or JSON `{"output":…,"metadata":{"exit_code":N}}` or `{"content":…,"success":…}`.
fn output_text(o: Option<&Value>) -> (String, bool) {
    let v = match o {
        Some(Value::String(t)) => match serde_json::from_str::<Value>(t) {
            Ok(v @ Value::Object(_)) => v,
            _ => return (t.clone(), text_failed(t)),
        },
        Some(v) => v.clone(),
        None => return (String::new(), false),
    };
    let exit = v
        .get("metadata")
        .and_then(|m| m.get("exit_code"))
        .and_then(Value::as_i64);
    let failed = exit.is_some_and(|c| c != 0) || v.get("success") == Some(&Value::Bool(false));
    let text = v
        .get("output")
        .or_else(|| v.get("content"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| v.to_string());
    (text, failed)
}

/// Whether a textual output says the call failed.
fn text_failed(t: &str) -> bool {
    let code = |prefix: &str| {
        t.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|c| c.trim().parse::<i64>().ok())
    };
    code("Process exited with code ")
        .or_else(|| code("Exit code: "))
        .is_some_and(|c| c != 0)
        || t.starts_with("exec_command failed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollout_reads_as_its_rows() {
        let root = None;
        let lines = [
            r#"{"timestamp":"t","type":"session_meta","payload":{"id":"s1","cwd":"/w","cli_version":"0.169.0"}}"#,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd</environment_context>"}]}}"#,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"clean up"}]}}"#,
            r#"{"timestamp":"t","type":"event_msg","payload":{"type":"user_message","message":"clean up"}}"#,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"rm\",\"x\"]}","call_id":"c1"}}"#,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"nope\",\"metadata\":{\"exit_code\":1}}"}}"#,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}"#,
            r#"{"timestamp":"t","type":"event_msg","payload":{"type":"brand_new","x":1}}"#,
            r#"{"timestamp":"t","type":"world_state","payload":{"full":true}}"#,
            r#"{"timestamp":"t","type":"event_msg","payload":{"type":"item_completed","item":{"type":"AgentMessage","content":[]}}}"#,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c2","output":"Chunk ID: f\nWall time: 0\nProcess exited with code 3\nOutput:\nhi\n"}}"#,
        ];
        let all: Vec<BackendEvent> = lines.iter().flat_map(|l| rows(&root, l)).collect();
        let names: Vec<String> = all
            .iter()
            .map(|e| match e {
                BackendEvent::Item {
                    op: ItemOp::Push(k) | ItemOp::Upsert { kind: k, .. },
                    ..
                } => format!("{k:?}")
                    .split([' ', '{'])
                    .next()
                    .unwrap()
                    .to_string(),
                BackendEvent::Session(_) => "Session".into(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            names,
            [
                "Session",
                "System",
                "User",
                "ToolCall",
                "ToolResult",
                "Assistant",
                "Generic",
                "ToolResult"
            ]
        );
        assert!(matches!(
            all.last(),
            Some(BackendEvent::Item {
                op: ItemOp::Push(ItemKind::ToolResult { is_error: true, .. }),
                ..
            })
        ));
        let BackendEvent::Item {
            op: ItemOp::Push(ItemKind::ToolResult { is_error, text, .. }),
            ..
        } = &all[4]
        else {
            panic!()
        };
        assert!(*is_error);
        assert_eq!(text, "nope");
    }
}
