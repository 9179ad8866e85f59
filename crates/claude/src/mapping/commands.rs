//! Domain commands → stdin lines, and outbound lines learned from (recordings, replays).

use serde_json::{Value, json};

use super::{Mapper, Ours, Out};
use crate::encode;
use crate::encode::Pending;
use switchboard_core::msg::{BackendEvent, Command, TurnState};
use switchboard_core::text::{sanitize, truncate};
use switchboard_core::transcript::{ItemKind, ItemOp, Level};

impl Mapper {
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
            Command::Shutdown | Command::Note(_) => {}
            // iii-only (queue edits, harness sessions): said, never silently dropped.
            Command::EditQueued { .. }
            | Command::Unqueue { .. }
            | Command::NewHarnessSession(_)
            | Command::SetConfig { .. }
            | Command::SetModel(_) => {
                out.protocol(Level::Warn, cmd.unsupported().unwrap_or_default())
            }
        }
        out
    }

    /// Register the PreToolUse hook callbacks a recorded `initialize` declared, so replayed
    /// `hook_callback` requests become breakpoint gates as they were live.
    pub(super) fn learn_initialize(&mut self, req: &Value) {
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
                    match crate::decode::decision(&pending, &body) {
                        Some(decision) => out.ev(BackendEvent::GateAnswered {
                            id: id.clone(),
                            decision,
                        }),
                        None => out.ev(BackendEvent::GateAnswered {
                            id: id.clone(),
                            decision: switchboard_core::gate::Decision::Raw { body: body.clone() },
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
}
