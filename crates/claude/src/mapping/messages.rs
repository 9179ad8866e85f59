//! Settled `assistant`, `user` and `result` lines: transcript items, tool uses and results.

use serde_json::Value;

use super::{BlockKind, Mapper, Out};
use crate::codec::{AnyBlock, Block, Content};
use crate::{codec, gates};
use switchboard_core::msg::{BackendEvent, TurnState};
use switchboard_core::text::{pretty_json, sanitize, sanitize_owned, tool_input_summary};
use switchboard_core::transcript::{ItemKind, ItemOp, Level};
use switchboard_core::tree::{NodePatch, NodeStatus};

pub(super) fn is_dispatch(name: &str, input: &Value) -> bool {
    matches!(name, "Agent" | "Task") || input.get("subagent_type").is_some()
}

impl Mapper {
    pub(super) fn assistant(&mut self, a: codec::Assistant, out: &mut Out) {
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
            let block = match block {
                AnyBlock::Known(b) => b,
                AnyBlock::Unknown(v) => {
                    out.item(node.clone(), unknown_block(&v));
                    continue;
                }
            };
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
                Block::ToolResult { .. } | Block::Image {} | Block::Document {} => {}
            }
        }
        if aborted {
            out.item(
                node,
                ItemOp::EndStreaming {
                    key_prefix: [msg_id.as_str(), "#"].concat(),
                    aborted: true,
                },
            );
        }
    }

    /// The transcript key of the next unsettled streamed block of `kind` in `msg_id`, or a
    /// fresh key when the block was never streamed.
    pub(super) fn settle_key(&mut self, msg_id: &str, kind: BlockKind) -> String {
        if let Some(blocks) = self.stream.get_mut(msg_id)
            && let Some(b) = blocks.iter_mut().find(|b| b.kind == kind && !b.settled)
        {
            b.settled = true;
            self.settle_gen += 1;
            return super::block_key(msg_id, b.index);
        }
        self.settle_seq += 1;
        super::key_with_number(msg_id, "#s", self.settle_seq)
    }

    pub(super) fn tool_use(
        &mut self,
        node: Option<String>,
        id: &str,
        name: &str,
        input: &Value,
        out: &mut Out,
    ) {
        let first_time = !self.tool_node.contains_key(id) || !self.tool_names.contains_key(id);
        self.remember_tool(id, node.clone(), name);
        out.item(
            node.clone(),
            ItemOp::Upsert {
                key: ["tool:", id].concat(),
                kind: ItemKind::ToolCall {
                    id: id.to_string(),
                    name: name.to_string(),
                    summary: tool_input_summary(name, input),
                    input: sanitize_owned(pretty_json(input).into()),
                    diff: gates::edit_diff(name, input).map(Box::new),
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
                    key: switchboard_core::tree::ROOT_KEY.into(),
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

    pub(super) fn user(&mut self, u: codec::User, out: &mut Out) {
        let node = self.node_for(u.parent_tool_use_id.as_deref(), out);
        if u.is_replay == Some(true) {
            return;
        }
        match u.message.content {
            Content::Text(text) => out.item(
                node,
                ItemOp::Push(ItemKind::User {
                    text: sanitize_owned(text.into()),
                }),
            ),
            Content::Blocks(blocks) => {
                for block in blocks {
                    let block = match block {
                        AnyBlock::Known(b) => b,
                        AnyBlock::Unknown(v) => {
                            out.item(node.clone(), unknown_block(&v));
                            continue;
                        }
                    };
                    match block {
                        Block::Text { text } => {
                            let kind = if u.is_synthetic == Some(true) {
                                ItemKind::System {
                                    label: "synthetic".into(),
                                    text: sanitize_owned(text.into()),
                                }
                            } else {
                                ItemKind::User {
                                    text: sanitize_owned(text.into()),
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
                                    text: sanitize_owned(result_text(content).into()),
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
    pub(super) fn agent_result(
        &mut self,
        key: &str,
        is_error: bool,
        tur: Option<&Value>,
        out: &mut Out,
    ) {
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

    pub(super) fn result(&mut self, r: codec::TurnResult, out: &mut Out) {
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
}

/// Text of a tool_result `content`: a string or a list of blocks.
/// Taken by value: the common string content moves out without a copy.
pub(super) fn result_text(content: Option<Value>) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s,
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

/// A content block of a type we do not know: a generic row with its JSON, never dropped.
fn unknown_block(v: &Value) -> ItemOp {
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("(no type)");
    ItemOp::Push(ItemKind::Generic {
        label: format!("unknown content block {}", sanitize(kind)),
        raw: sanitize(&v.to_string()),
    })
}
