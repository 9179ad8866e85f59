//! Claude Code's session transcript (`~/.claude/projects/<project>/<session>.jsonl`, and each
//! sub-agent's `…/<session>/subagents/agent-<id>.jsonl`) as transcript rows. The CLI appends
//! one JSON line per message (one per content block of an assistant message, each with its
//! own `uuid`): user prompts, assistant text, thinking and tool calls, tool results.
//!
//! Lines of bookkeeping the CLI keeps for itself (2.1.332: `mode`, `permission-mode`,
//! `file-history-*`, `tools-used`, `attachment`, `api-request*`, `cost-state`, `last-prompt`,
//! `queue-operation`, …) say nothing the rows do not and are passed over, as are the `system`
//! lines summing up hooks (ours among them, every turn); a type this build does not know is
//! shown whole.

use serde_json::Value;
use switchboard_core::msg::BackendEvent;
use switchboard_core::text::{
    one_line, pretty_json, sanitize, sanitize_owned, tool_input_summary, truncate,
};
use switchboard_core::transcript::{ItemKind, ItemOp, Level};

/// Line types the CLI writes for its own bookkeeping (passed over).
const BOOKKEEPING: &[&str] = &[
    "mode",
    "permission-mode",
    "atis-latch",
    "file-history-snapshot",
    "file-history-delta",
    "tools-used",
    "attachment",
    "api-request-shape",
    "api-request-blob",
    "api-request",
    "cost-state",
    "queue-operation",
    "summary",
    "custom-title",
    "last-prompt",
    "progress",
];

/// The most of one row's text kept (a tool result can be megabytes).
pub const ROW_MAX: usize = 64 * 1024;

/// A word of the agent's in a row's label (a line's or a block's type, a role, an author):
/// one line, at most 60 characters, control characters shown. A label is never the place
/// for a type of eight megabytes.
pub fn label_word(t: &str) -> String {
    sanitize(&one_line(t, 60))
}

fn item(node: &Option<String>, op: ItemOp) -> BackendEvent {
    BackendEvent::Item {
        node: node.clone(),
        op,
    }
}

fn clipped(s: &str) -> String {
    sanitize_owned(truncate(s, ROW_MAX).into())
}

/// The rows of one transcript line of node `node` (`None`: the session's root).
pub fn rows(node: &Option<String>, line: &str) -> Vec<BackendEvent> {
    let v: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            return vec![item(
                node,
                ItemOp::Push(ItemKind::Protocol {
                    level: Level::Warn,
                    text: format!(
                        "transcript line that is not JSON ({e}): {}",
                        truncate(&sanitize(line), 200)
                    ),
                }),
            )];
        }
    };
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
    let uuid = v.get("uuid").and_then(Value::as_str).unwrap_or("");
    let mut out = Vec::new();
    match kind {
        "user" => user(node, &v, &mut out),
        "assistant" => assistant(node, &v, uuid, &mut out),
        "system" => {
            let label = v
                .get("subtype")
                .and_then(Value::as_str)
                .unwrap_or("system")
                .to_string();
            if label == "stop_hook_summary" {
                return out;
            }
            let text = match (v.get("content").and_then(Value::as_str), label.as_str()) {
                (Some(c), _) => clipped(c),
                (None, "turn_duration") => format!(
                    "the turn took {:.1} s",
                    v.get("durationMs").and_then(Value::as_f64).unwrap_or(0.0) / 1000.0
                ),
                (None, _) => String::new(),
            };
            out.push(item(
                node,
                ItemOp::Push(ItemKind::System {
                    label: sanitize(&label),
                    text,
                }),
            ));
        }
        k if BOOKKEEPING.contains(&k) => {}
        _ => out.push(item(
            node,
            ItemOp::Push(ItemKind::Generic {
                label: format!("transcript line of type {}", label_word(kind)),
                raw: clipped(line),
            }),
        )),
    }
    out
}

fn user(node: &Option<String>, v: &Value, out: &mut Vec<BackendEvent>) {
    let meta = v.get("isMeta").and_then(Value::as_bool).unwrap_or(false);
    let text_row = |text: &str| {
        if meta {
            // Text the CLI put in the user's turn itself (command output, reminders).
            ItemKind::System {
                label: "context".into(),
                text: clipped(text),
            }
        } else {
            ItemKind::User {
                text: clipped(text),
            }
        }
    };
    match v.get("message").and_then(|m| m.get("content")) {
        Some(Value::String(s)) => out.push(item(node, ItemOp::Push(text_row(s)))),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let t = b.get("text").and_then(Value::as_str).unwrap_or("");
                        out.push(item(node, ItemOp::Push(text_row(t))));
                    }
                    Some("tool_result") => {
                        let id = b.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
                        out.push(item(
                            node,
                            ItemOp::Push(ItemKind::ToolResult {
                                tool_use_id: id.to_string(),
                                text: clipped(&result_text(b.get("content"))),
                                is_error: b.get("is_error").and_then(Value::as_bool) == Some(true),
                            }),
                        ));
                    }
                    Some("image") => out.push(item(
                        node,
                        ItemOp::Push(ItemKind::User {
                            text: "[image]".into(),
                        }),
                    )),
                    Some("document") => out.push(item(
                        node,
                        ItemOp::Push(ItemKind::User {
                            text: "[document]".into(),
                        }),
                    )),
                    other => out.push(unknown_block(node, other, b)),
                }
            }
        }
        _ => {}
    }
}

fn assistant(node: &Option<String>, v: &Value, uuid: &str, out: &mut Vec<BackendEvent>) {
    let Some(msg) = v.get("message") else {
        return;
    };
    let blocks = match msg.get("content") {
        Some(Value::Array(b)) => b.as_slice(),
        Some(Value::String(s)) => {
            out.push(item(
                node,
                ItemOp::Upsert {
                    key: format!("{uuid}#0"),
                    kind: ItemKind::Assistant {
                        text: clipped(s),
                        streaming: false,
                        aborted: false,
                    },
                },
            ));
            return;
        }
        _ => return,
    };
    for (i, b) in blocks.iter().enumerate() {
        // Keyed by the line and the block: a line read twice (a file re-read after a
        // truncation) replaces its rows instead of adding them again.
        let key = format!("{uuid}#{i}");
        match b.get("type").and_then(Value::as_str) {
            Some("text") => out.push(item(
                node,
                ItemOp::Upsert {
                    key,
                    kind: ItemKind::Assistant {
                        text: clipped(b.get("text").and_then(Value::as_str).unwrap_or("")),
                        streaming: false,
                        aborted: false,
                    },
                },
            )),
            Some(t @ ("thinking" | "redacted_thinking")) => {
                let text = b.get("thinking").and_then(Value::as_str).unwrap_or("");
                out.push(item(
                    node,
                    ItemOp::Upsert {
                        key,
                        kind: ItemKind::Thinking {
                            text: clipped(text),
                            redacted: t == "redacted_thinking" || text.is_empty(),
                            streaming: false,
                        },
                    },
                ));
            }
            Some("tool_use") => {
                let id = b.get("id").and_then(Value::as_str).unwrap_or("");
                let name = b.get("name").and_then(Value::as_str).unwrap_or("?");
                let input = b.get("input").cloned().unwrap_or(Value::Null);
                out.push(item(
                    node,
                    ItemOp::Upsert {
                        key: format!("tool:{id}"),
                        kind: ItemKind::ToolCall {
                            id: id.to_string(),
                            name: name.to_string(),
                            summary: tool_input_summary(name, &input),
                            input: clipped(&pretty_json(&input)),
                            diff: switchboard_claude::gates::edit_diff(name, &input).map(Box::new),
                        },
                    },
                ));
            }
            other => out.push(unknown_block(node, other, b)),
        }
    }
}

fn unknown_block(node: &Option<String>, kind: Option<&str>, b: &Value) -> BackendEvent {
    item(
        node,
        ItemOp::Push(ItemKind::Generic {
            label: format!(
                "unknown content block {}",
                label_word(kind.unwrap_or("(no type)"))
            ),
            raw: clipped(&b.to_string()),
        }),
    )
}

/// A tool_result's `content`: a string, or text blocks (others named by type).
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

    fn kinds(ev: &[BackendEvent]) -> Vec<String> {
        ev.iter()
            .map(|e| match e {
                BackendEvent::Item {
                    op: ItemOp::Push(k) | ItemOp::Upsert { kind: k, .. },
                    ..
                } => format!("{k:?}")
                    .split([' ', '{'])
                    .next()
                    .unwrap()
                    .to_string(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_session_reads_as_its_rows() {
        let root = None;
        let lines = [
            r#"{"type":"user","message":{"role":"user","content":"make a file"},"uuid":"u1"}"#,
            r#"{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"}]},"uuid":"a1"}"#,
            r#"{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Write","input":{"file_path":"/w/a.txt","content":"hi\n"}}]},"uuid":"a2"}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"File created","is_error":false}]},"uuid":"u2"}"#,
            r#"{"type":"file-history-snapshot","messageId":"x","snapshot":{}}"#,
            r#"{"type":"assistant","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"done \u001b[2J"}]},"uuid":"a3"}"#,
            r#"{"type":"mystery","x":1}"#,
            "not json",
        ];
        let all: Vec<BackendEvent> = lines.iter().flat_map(|l| rows(&root, l)).collect();
        assert_eq!(
            kinds(&all),
            [
                "User",
                "Thinking",
                "ToolCall",
                "ToolResult",
                "Assistant",
                "Generic",
                "Protocol"
            ]
        );
        let BackendEvent::Item {
            op:
                ItemOp::Upsert {
                    kind: ItemKind::ToolCall { diff, .. },
                    ..
                },
            ..
        } = &all[2]
        else {
            panic!()
        };
        assert!(diff.is_some(), "a Write shows its diff");
        let BackendEvent::Item {
            op:
                ItemOp::Upsert {
                    kind: ItemKind::Assistant { text, .. },
                    ..
                },
            ..
        } = &all[4]
        else {
            panic!()
        };
        assert!(!text.contains('\u{1b}'), "{text:?}");
    }
}
