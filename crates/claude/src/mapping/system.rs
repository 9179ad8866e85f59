//! `system` lines: init, status, hooks, tasks and the other subtypes, plus unknown ones.

use serde_json::Value;

use super::{Mapper, Out};
use crate::codec;
use switchboard_core::msg::{BackendEvent, SessionPatch, TurnState};
use switchboard_core::text::sanitize;
use switchboard_core::transcript::{ItemKind, ItemOp, Level, Tone};
use switchboard_core::tree::{NodePatch, NodeStatus};

impl Mapper {
    pub(super) fn system(&mut self, s: codec::System, line: &str, out: &mut Out) {
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
                        .map(switchboard_core::text::human_count)
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
            "background_tasks_changed" => {
                let tasks = s.tasks.unwrap_or_default();
                let names: Vec<String> = tasks
                    .iter()
                    .map(|t| {
                        let d = t.get("description").and_then(Value::as_str).unwrap_or("?");
                        match t
                            .get("subagent_type")
                            .or(t.get("task_type"))
                            .and_then(Value::as_str)
                        {
                            Some(kind) => format!("{kind}: {d}"),
                            None => d.to_string(),
                        }
                    })
                    .collect();
                let text = if names.is_empty() {
                    "none running".to_string()
                } else {
                    format!("{} running ({})", names.len(), names.join("; "))
                };
                out.item(None, sys("background tasks", text));
            }
            "informational" | "notification"
                if s.message.as_ref().is_some_and(Value::is_string) =>
            {
                let text = s.message.as_ref().and_then(Value::as_str).unwrap_or("");
                out.item(None, sys(&s.subtype, text.to_string()));
            }
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
            | "control_request_progress" => {
                out.item(None, generic(&format!("system/{}", s.subtype), line));
            }
            other => out.item(
                None,
                generic(&format!("unknown system subtype {other}"), line),
            ),
        }
    }

    pub(super) fn task_started(&mut self, s: codec::System, out: &mut Out) {
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
}

pub(super) fn generic(label: &str, line: &str) -> ItemOp {
    ItemOp::Push(ItemKind::Generic {
        label: label.to_string(),
        raw: sanitize(line),
    })
}
