//! Turn control (send, stop) and turn events; the #797 check after an allow is `stuck`'s.

use super::json::Field;
use serde_json::{Value, json};

use super::json::{self as j, bool_field, id_field, str_field};
use super::sessions::node_status;
use super::{Mapper, Out, OutCall, node_key};
use switchboard_core::msg::{BackendEvent, Command, TurnState};
use switchboard_core::transcript::{ItemKind, ItemOp, Level};
use switchboard_core::tree::{NodePatch, NodeStatus};

pub use super::stuck::Watches;

impl Mapper {
    pub(super) fn turn_started(&mut self, p: &Value, out: &mut Out) {
        let Some(session) = id_field(p, "session_id") else {
            return;
        };
        let parent = id_field(p, "parent_session_id")
            .or_else(|| p.field("parent").and_then(|x| id_field(x, "session_id")));
        let Some(root) = self.ensure_session(session, parent, None, out) else {
            return;
        };
        let session = session.to_string();
        if let Some(s) = self.sessions.get_mut(&session) {
            s.status = Some("running".into());
            s.expects_wake = false;
        }
        self.clear_watches(&session, out);
        if root == session {
            out.ev(&root, BackendEvent::Turn(TurnState::Running));
            out.info(&root, "turn", Some("running".into()));
        } else {
            out.ev(
                &root,
                BackendEvent::NodeUpdate {
                    key: node_key(&root, &session),
                    patch: NodePatch {
                        status: Some(NodeStatus::Running),
                        ..NodePatch::default()
                    },
                },
            );
        }
    }

    pub(super) fn turn_completed(&mut self, p: &Value, out: &mut Out) {
        let Some(session) = id_field(p, "session_id") else {
            return;
        };
        let Some(root) = self.sessions.get(session).map(|s| s.root.clone()) else {
            return;
        };
        let session = session.to_string();
        let status = str_field(p, "status").unwrap_or("completed").to_string();
        // `terminal: false`: an armed wake carries the real outcome; the session still runs.
        let terminal = bool_field(p, "terminal").unwrap_or(true);
        let was_stopping = self.sessions.get(&session).is_some_and(|s| s.stopping);
        if let Some(s) = self.sessions.get_mut(&session) {
            s.status = Some(status.clone());
            s.expects_wake = !terminal;
            if status == "cancelled" || terminal {
                s.stopping = false;
            }
        }
        self.clear_watches(&session, out);
        if was_stopping && (status == "cancelled" || terminal) && root == session {
            out.info(&root, "stop", None);
        }
        let node_st = if terminal {
            node_status(&status, false)
        } else {
            Some(NodeStatus::Running)
        };
        if root == session {
            if terminal {
                out.ev(&root, BackendEvent::Turn(TurnState::Idle));
                out.info(&root, "turn", Some(j::title(Some(&status), "completed")));
            } else {
                out.ev(&root, BackendEvent::Turn(TurnState::Running));
                out.info(
                    &root,
                    "turn",
                    Some(format!(
                        "{} (not terminal: waiting on a wake)",
                        j::title(Some(&status), "completed")
                    )),
                );
            }
            if terminal && status == "failed" {
                let why = str_field(p, "result_error")
                    .or_else(|| str_field(p, "reason"))
                    .unwrap_or("no reason given");
                out.ev(
                    &root,
                    BackendEvent::Item {
                        node: Some(node_key(&root, &session)),
                        op: ItemOp::Push(ItemKind::System {
                            label: "turn failed".into(),
                            text: switchboard_core::text::sanitize(&j::clip(why, 2000)),
                        }),
                    },
                );
            }
            if terminal {
                self.read(out, "harness::metrics", json!({"root_session_id": root}));
            }
            // What was queued drains when a step ends: show the queue as it is now.
            if self
                .sessions
                .get(&session)
                .is_some_and(|s| !s.queued.is_empty())
            {
                self.read(
                    out,
                    "harness::status",
                    json!({"session_id": session, "verbose": true}),
                );
            }
        } else if let Some(st) = node_st {
            out.ev(
                &root,
                BackendEvent::NodeUpdate {
                    key: node_key(&root, &session),
                    patch: NodePatch {
                        status: Some(st),
                        ..NodePatch::default()
                    },
                },
            );
        }
    }

    /// The human's command for a root session.
    pub fn command(&mut self, root: &str, cmd: &Command, _now_ms: u64) -> Out {
        let mut out = Out::default();
        match cmd {
            Command::Answer { gate_id, decision } => self.answer(gate_id, decision, &mut out),
            Command::Prompt(text) => self.prompt(root, text, &mut out),
            Command::Interrupt => self.stop(root, &mut out),
            Command::SetMode(_) => out.protocol(
                root,
                Level::Info,
                "iii approval modes are the gate's per-session settings; not changed from here",
            ),
            Command::SetConfig { .. } | Command::SetModel(_) => {
                out.protocol(root, Level::Warn, cmd.unsupported().unwrap_or_default())
            }
            // Quitting answers nothing: held calls are durable and another console may
            // answer them.
            Command::Shutdown | Command::Note(_) => {}
            Command::EditQueued { entry_id, text } => {
                return self.edit_queued(root, entry_id, text);
            }
            Command::Unqueue { entry_id } => return self.unqueue(root, entry_id),
            Command::NewHarnessSession(h) => {
                return self.new_session(
                    &h.message,
                    &h.model,
                    h.provider.as_deref(),
                    &h.title,
                    &h.allow,
                );
            }
        }
        out
    }

    fn prompt(&mut self, root: &str, text: &str, out: &mut Out) {
        if !self.sessions.contains_key(root) {
            out.protocol(root, Level::Warn, "unknown iii session: message not sent");
            return;
        }
        if !self.online {
            out.protocol(root, Level::Warn, "offline: message not sent");
            return;
        }
        self.send_seq += 1;
        let key = format!("switchboard-{}-{}", self.instance, self.send_seq);
        out.calls.push(OutCall {
            function_id: "harness::send".into(),
            payload: json!({"session_id": root, "message": text, "idempotency_key": key}),
            retry_safe: true,
        });
    }

    /// A new harness session (the workspace's new-session dialog): `harness::send` without a
    /// session id. The allow-list never includes `approval::*` or `configuration::*`
    /// (human-only functions an agent must not reach); what was dropped is reported. The
    /// provider goes top-level next to `model` (the golden `SendRequest`), and only when one is
    /// given: without it the router uses its own default.
    pub fn new_session(
        &mut self,
        message: &str,
        model: &str,
        provider: Option<&str>,
        title: &str,
        allow: &[String],
    ) -> Out {
        let mut out = Out::default();
        if !self.online {
            out.protocol(
                "",
                Level::Warn,
                "offline: no new harness session was started",
            );
            return out;
        }
        let (kept, dropped): (Vec<&String>, Vec<&String>) = allow
            .iter()
            .take(switchboard_core::msg::ALLOW_MAX)
            .partition(|f| !switchboard_core::msg::human_only(f));
        if !dropped.is_empty() {
            let names: Vec<&str> = dropped.iter().map(|s| s.as_str()).collect();
            out.protocol(
                "",
                Level::Warn,
                format!(
                    "left out of the new session's allow-list (human-only functions, or not an exact function id): {}",
                    j::clip(&names.join(", "), 400)
                ),
            );
        }
        self.send_seq += 1;
        let key = format!("switchboard-{}-{}", self.instance, self.send_seq);
        // Bounded: requests whose answer never came are forgotten past a few dozen.
        if self.asked.len() >= 64 {
            self.asked.clear();
        }
        self.asked.insert(key.clone(), self.made);
        let mut payload = json!({
            "message": message,
            "model": model,
            "idempotency_key": key,
            "options": {"functions": {"allow": kept}},
        });
        if let Some(p) = provider.map(str::trim).filter(|p| !p.is_empty()) {
            payload["provider"] = json!(p);
        }
        if !title.trim().is_empty() {
            payload["session"] = json!({"title": title});
        }
        out.calls.push(OutCall {
            function_id: "harness::send".into(),
            payload,
            retry_safe: true,
        });
        out
    }

    /// A transcript entry landed: a queued message drains under its own `entry_id` (spec
    /// `QueuedMessage.entry_id`), so the queue shown is read again.
    pub(super) fn queue_drained(&mut self, p: &Value, out: &mut Out) {
        let (Some(session), Some(entry)) = (id_field(p, "session_id"), id_field(p, "entry_id"))
        else {
            return;
        };
        let Some(s) = self.sessions.get_mut(session) else {
            return;
        };
        let Some(i) = s.queued.iter().position(|q| q == entry) else {
            return;
        };
        s.queued.swap_remove(i);
        let session = session.to_string();
        self.read(
            out,
            "harness::status",
            json!({"session_id": session, "verbose": true}),
        );
    }

    /// Remove a queued message (`entry_id` from `harness::status.queued`).
    pub fn unqueue(&mut self, session: &str, entry_id: &str) -> Out {
        self.queue_call(
            session,
            "harness::unqueue",
            json!({"session_id": session, "entry_id": entry_id}),
        )
    }

    /// Replace a queued message's text; it keeps its place in the queue.
    pub fn edit_queued(&mut self, session: &str, entry_id: &str, message: &str) -> Out {
        self.queue_call(
            session,
            "harness::edit_queued",
            json!({"session_id": session, "entry_id": entry_id, "message": message}),
        )
    }

    fn queue_call(&mut self, session: &str, function_id: &str, payload: Value) -> Out {
        let mut out = Out::default();
        let Some(root) = self.sessions.get(session).map(|s| s.root.clone()) else {
            out.protocol(session, Level::Warn, "unknown iii session: nothing changed");
            return out;
        };
        if !self.online {
            out.protocol(&root, Level::Warn, "offline: the queue was not changed");
            return out;
        }
        out.calls.push(OutCall {
            function_id: function_id.into(),
            payload,
            retry_safe: true,
        });
        out
    }

    /// `removed`/`updated: false` means the message already left the queue: re-read it.
    pub(super) fn queue_result(&mut self, request: &Value, result: &Value, out: &mut Out) {
        let Some(session) = id_field(request, "session_id") else {
            return;
        };
        let Some(root) = self.sessions.get(session).map(|s| s.root.clone()) else {
            return;
        };
        let done = bool_field(result, "removed").or_else(|| bool_field(result, "updated"));
        if done != Some(true) {
            out.protocol(
                &root,
                Level::Info,
                "the queued message had already been sent",
            );
        }
        self.read(
            out,
            "harness::status",
            json!({"session_id": session, "verbose": true}),
        );
    }

    pub(super) fn send_result(&mut self, request: &Value, result: &Value, out: &mut Out) {
        let Some(session) =
            id_field(result, "session_id").or_else(|| id_field(request, "session_id"))
        else {
            if request.field("session_id").is_none() {
                out.protocol(
                    "",
                    Level::Warn,
                    "harness::send started no session (no session id in its result)",
                );
            }
            return;
        };
        if request.field("session_id").is_none() && bool_field(result, "accepted") != Some(false) {
            // A new session from the dialog: it becomes a root now, whether or not its
            // `session::created` event has arrived (delivery is unordered, may be lost).
            let title = request.pointer("/session/title").and_then(Value::as_str);
            if !self.sessions.contains_key(session) {
                out.protocol(
                    "",
                    Level::Info,
                    format!(
                        "new harness session {} started",
                        j::title(Some(session), "")
                    ),
                );
            }
            let asked = request
                .field("idempotency_key")
                .and_then(Value::as_str)
                .and_then(|k| self.asked.remove(k));
            // The user asked for it: show it when it opens (roots open before events apply),
            // if it is new since the request (not an old session's id in the answer).
            if let Some(root) = self.ensure_session(session, None, title, out)
                && asked
                    .is_some_and(|then| self.sessions.get(session).is_some_and(|s| s.made > then))
            {
                out.ev(&root, BackendEvent::Reveal);
            }
        }
        let Some(root) = self.sessions.get(session).map(|s| s.root.clone()) else {
            return;
        };
        if bool_field(result, "accepted") == Some(false) {
            out.protocol(&root, Level::Warn, "harness::send was not accepted");
            return;
        }
        let note = if bool_field(result, "deduplicated") == Some(true) {
            Some("already sent (deduplicated)")
        } else if bool_field(result, "merged") == Some(true) {
            Some("merged into the running turn")
        } else if bool_field(result, "queued") == Some(true) {
            Some("queued: it lands when the current step ends")
        } else {
            None
        };
        if let Some(n) = note {
            out.ev(
                &root,
                BackendEvent::Item {
                    node: Some(node_key(&root, session)),
                    op: ItemOp::Push(ItemKind::System {
                        label: "message".into(),
                        text: n.into(),
                    }),
                },
            );
        }
        out.ev(&root, BackendEvent::Turn(TurnState::Running));
    }

    pub(super) fn stop(&mut self, root: &str, out: &mut Out) {
        let online = self.online;
        let Some(s) = self.sessions.get_mut(root) else {
            out.protocol(root, Level::Warn, "unknown iii session: nothing to stop");
            return;
        };
        if s.stopping {
            // Repeated presses while a stop is under way do nothing (iii-hq/workers#528).
            return;
        }
        if !online {
            out.protocol(root, Level::Warn, "offline: stop not sent");
            return;
        }
        s.stopping = true;
        out.info(root, "stop", Some("stopping…".into()));
        out.calls.push(OutCall {
            function_id: "harness::stop".into(),
            payload: json!({"session_id": root}),
            retry_safe: true,
        });
    }

    pub(super) fn stop_result(&mut self, request: &Value, result: &Value, out: &mut Out) {
        let Some(session) = id_field(request, "session_id") else {
            return;
        };
        if bool_field(result, "stopping") == Some(true) {
            return;
        }
        if let Some(s) = self.sessions.get_mut(session)
            && s.stopping
        {
            s.stopping = false;
            let root = s.root.clone();
            out.info(&root, "stop", None);
            out.protocol(&root, Level::Info, "no running turn to stop");
        }
    }

    pub(super) fn stop_failed(&mut self, request: &Value, what: &str, out: &mut Out) {
        let Some(session) = id_field(request, "session_id") else {
            return;
        };
        if let Some(s) = self.sessions.get_mut(session) {
            s.stopping = false;
            let root = s.root.clone();
            out.info(&root, "stop", None);
            out.protocol(&root, Level::Error, what.to_string());
        }
    }
}
