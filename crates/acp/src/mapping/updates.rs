//! `session/update` notifications: message chunks, plans, usage, modes and commands.

use serde_json::Value;

use super::wire::{content_text, locations, s, tool_name, wire_name};
use super::{Mapper, Out};
use crate::codec;
use crate::codec::schema;
use switchboard_core::msg::{BackendEvent, SessionPatch};
use switchboard_core::text::{one_line, sanitize};
use switchboard_core::transcript::{ItemKind, ItemOp, PlanEntry};

impl Mapper {
    pub(super) fn session_update(&mut self, params: &Value, line: &str, out: &mut Out) {
        let update = params.get("update").unwrap_or(&Value::Null);
        let kind = s(update, "sessionUpdate").unwrap_or_default();
        // Checkfu sub-agent phases ride on session_info_update `_meta`; read them raw.
        if kind == "session_info_update"
            && let Some(sa) = update.get("_meta").and_then(|m| m.get("checkfu.subagent"))
        {
            return self.subagent(sa, update, out);
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
        let Some(update_rest) = self.tool_or_plan(n.update, out) else {
            return;
        };
        match update_rest {
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
                self.options_changed(out);
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

    /// The updates the replay of a long session spends its time on (tool calls, their
    /// updates, plans), from the typed update: the general path and the fast one
    /// (`fast::tool_update`, which reads them without a `Value` tree) share this. Any other
    /// update is handed back.
    pub(super) fn tool_or_plan(
        &mut self,
        update: schema::SessionUpdate,
        out: &mut Out,
    ) -> Option<schema::SessionUpdate> {
        use schema::SessionUpdate as U;
        match update {
            U::ToolCall(tc) => {
                let id = tc.tool_call_id.0.to_string();
                let first = !self.tools.contains_key(&id);
                let view = std::sync::Arc::make_mut(self.tools.entry(id.clone()).or_default());
                view.title = tc.title.clone();
                view.kind = wire_name(&tc.kind);
                view.status = wire_name(&tc.status);
                Self::set_raw_input(view, tc.raw_input.as_ref());
                Self::set_raw_output(view, tc.raw_output.as_ref());
                view.tool_name = tool_name(tc.meta.as_ref());
                Self::set_content(view, &tc.content);
                view.locations = locations(&tc.locations);
                self.seg += 1;
                if first {
                    self.tool_uses += 1;
                }
                self.tool_rows(&id, out);
                if first {
                    self.remember_tool(&id);
                }
            }
            U::ToolCallUpdate(u) => {
                let id = u.tool_call_id.0.to_string();
                let first = !self.tools.contains_key(&id);
                if first {
                    self.seg += 1;
                    self.tool_uses += 1;
                }
                self.patch_tool(&id, &u, out);
                self.tool_rows(&id, out);
                if first {
                    self.remember_tool(&id);
                }
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
            other => return Some(other),
        }
        None
    }

    pub(super) fn chunk(&mut self, thinking: bool, c: &schema::ContentChunk, out: &mut Out) {
        let id = c.message_id.as_ref().map(|m| m.0.to_string());
        self.chunk_text(thinking, &content_text(&c.content), id.as_deref(), out);
    }

    /// A message or thought chunk: appended to its row, unless it repeats the whole message.
    pub(super) fn chunk_text(
        &mut self,
        thinking: bool,
        text: &str,
        message_id: Option<&str>,
        out: &mut Out,
    ) {
        self.chunk_clean(thinking, sanitize(text), message_id, out);
    }

    /// `chunk_text` of text sanitized already.
    pub(super) fn chunk_clean(
        &mut self,
        thinking: bool,
        text: String,
        message_id: Option<&str>,
        out: &mut Out,
    ) {
        if text.is_empty() {
            return;
        }
        let key = self.chunk_key(thinking, message_id);
        // Looked up before it is inserted: a run of chunks to one row copies its key once.
        let acc = match self.streamed.get_mut(&key) {
            Some(acc) => acc,
            None => self.streamed.entry(key.clone()).or_default(),
        };
        if text.len() > 1 && acc.is(&text) {
            // The whole message repeated after its deltas (Codex adapters): already shown.
            return;
        }
        acc.push(&text);
        out.item(
            None,
            ItemOp::AppendText {
                key,
                thinking,
                delta: text,
            },
        );
    }
}

impl Mapper {
    /// The row key of a chunk: `msg|thought:<turn>:m<message id>|s<segment>`. Chunks come in
    /// runs to one row, so the last key is kept and reused while nothing it is made of
    /// changed (formatting it anew was a good part of a chunk's cost).
    fn chunk_key(&mut self, thinking: bool, message_id: Option<&str>) -> String {
        let seg = if message_id.is_some() { 0 } else { self.seg };
        if let Some(k) = &self.last_chunk_key
            && k.thinking == thinking
            && k.turn == self.turn_no
            && k.seg == seg
            && k.message_id.as_deref() == message_id
        {
            return k.key.clone();
        }
        let group = match message_id {
            Some(m) => format!("m{m}"),
            None => format!("s{seg}"),
        };
        let key = format!(
            "{}:{}:{group}",
            if thinking { "thought" } else { "msg" },
            self.turn_no
        );
        self.last_chunk_key = Some(Box::new(ChunkKey {
            thinking,
            turn: self.turn_no,
            seg,
            message_id: message_id.map(str::to_string),
            key: key.clone(),
        }));
        key
    }
}

/// The last chunk's row key and what it was made of (`Mapper::chunk_key`).
#[derive(Clone, Debug)]
pub(super) struct ChunkKey {
    thinking: bool,
    turn: u64,
    seg: u64,
    message_id: Option<String>,
    key: String,
}

/// A streamed row's text so far, as its length and FNV-1a hash (a repeat of the whole message
/// is recognised without keeping a second copy of every message).
#[derive(Clone, Debug, Default)]
pub(super) struct Streamed {
    len: usize,
    hash: u64,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Streamed {
    fn state(&self) -> u64 {
        if self.len == 0 { FNV_OFFSET } else { self.hash }
    }
    pub(super) fn push(&mut self, text: &str) {
        self.hash = fnv(self.state(), text.as_bytes());
        self.len += text.len();
    }
    /// The text so far is exactly `text`.
    pub(super) fn is(&self, text: &str) -> bool {
        self.len == text.len() && self.hash == fnv(FNV_OFFSET, text.as_bytes())
    }
}
