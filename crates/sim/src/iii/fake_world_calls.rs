//! The world's functions that change it: a held call resolved or approved always, a
//! message sent (a turn, queued behind a held call), a turn stopped, queued messages edited
//! or removed; each with the events it emits.

use serde_json::{Value, json};

use super::{Outcome, World, assistant, bad, str_of, text, user};
use switchboard_record::now_ms;

impl World {
    pub(super) fn resolve(&mut self, data: &Value) -> Outcome {
        let (session, call, decision) = match (
            str_of(data, "session_id"),
            str_of(data, "function_call_id"),
            str_of(data, "decision"),
        ) {
            (Ok(s), Ok(c), Ok(d)) => (s.to_string(), c.to_string(), d.to_string()),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return (Err(e), vec![]),
        };
        if decision != "allow" && decision != "deny" {
            return (
                Err(bad("invalid_request", "decision must be allow or deny")),
                vec![],
            );
        }
        let Some(i) = self.pending.iter().position(|r| {
            r["session_id"] == session.as_str() && r["function_call_id"] == call.as_str()
        }) else {
            // Unknown or already decided: duplicates race benignly.
            return (Ok(json!({"resolved": false})), vec![]);
        };
        let rec = self.pending.remove(i);
        let function_id = rec["function_id"].as_str().unwrap_or("").to_string();
        let reason = data.get("reason").and_then(Value::as_str).unwrap_or("");
        let mut ev = vec![];
        let mut resolved = json!({"session_id": session, "turn_id": rec["turn_id"], "function_call_id": call,
                                  "function_id": function_id, "outcome": decision, "resolved_at": now_ms()});
        if decision == "deny" && !reason.is_empty() {
            resolved["reason"] = json!(reason);
        }
        ev.push((self.gate.event("approval::pending-resolved"), resolved));
        let (result, is_error) = if decision == "allow" {
            (format!("{function_id} ran (demo): exit 0"), false)
        } else {
            (format!("denied by the user: {reason}"), true)
        };
        ev.push(self.add(
            &session,
            json!({"role": "function_result", "function_call_id": call, "function_id": function_id,
                   "content": text(&result), "details": {}, "is_error": is_error, "timestamp": now_ms()}),
        ));
        if let Some(s) = self.session_mut(&session) {
            s.pending_calls.retain(|c| c != &call);
            s.turn = "running".into();
        }
        ev.push(self.add(&session, assistant(text("Looking at the result"), "end")));
        let done = if decision == "allow" {
            "Done: the call went through."
        } else {
            "Understood: I will not do that."
        };
        if let Some(e) = self.update_last(&session, assistant(text(done), "end")) {
            ev.push(e);
        }
        ev.push(self.finish(&session, "completed"));
        (Ok(json!({"resolved": true, "turn_resumed": true})), ev)
    }

    pub(super) fn approve_always(&mut self, data: &Value) -> Outcome {
        let (s, f) = match (str_of(data, "session_id"), str_of(data, "function_id")) {
            (Ok(s), Ok(f)) => (s.to_string(), f.to_string()),
            (Err(e), _) | (_, Err(e)) => return (Err(e), vec![]),
        };
        let list = self.approved_always.entry(s).or_default();
        if !list.iter().any(|e| e["function_id"] == f.as_str()) {
            list.push(
                json!({"function_id": f, "granted_at": now_ms(), "granted_by": "user_click"}),
            );
        }
        (
            Ok(
                json!({"settings": {"mode": "manual", "mode_set_at": 0, "always_allow": [],
                                    "approved_always": list.clone()}}),
            ),
            vec![],
        )
    }

    pub(super) fn send(&mut self, data: &Value) -> Outcome {
        let message = match str_of(data, "message") {
            Ok(m) => m.to_string(),
            Err(e) => return (Err(e), vec![]),
        };
        let key = data.get("idempotency_key").and_then(Value::as_str);
        if let Some(prev) = key.and_then(|k| self.sends.get(k)) {
            let mut r = prev.clone();
            r["deduplicated"] = json!(true);
            return (Ok(r), vec![]);
        }
        let mut ev = vec![];
        let session = match data.get("session_id").and_then(Value::as_str) {
            Some(id) if self.session(id).is_some() => id.to_string(),
            Some(_) => return (Err(bad("session/not_found", "no such session")), vec![]),
            None => {
                if data.get("model").and_then(Value::as_str).is_none() {
                    return (
                        Err(bad(
                            "invalid_request",
                            "model is required for a new session",
                        )),
                        vec![],
                    );
                }
                let id = self.next("s");
                let title = data
                    .pointer("/session/title")
                    .and_then(Value::as_str)
                    .unwrap_or("New session")
                    .to_string();
                self.new_session(&id, &title, None, now_ms());
                ev.push((
                    "session::created".into(),
                    json!({"session_id": id, "title": title, "description": "", "status": "working",
                           "created_at": now_ms()}),
                ));
                id
            }
        };
        let busy = self.session(&session).is_some_and(|s| {
            s.turn == "awaiting_functions" || (s.turn == "running" && !s.entries.is_empty())
        });
        let mut result;
        if busy {
            let entry_id = self.next("q");
            let s = self.session_mut(&session).expect("checked above");
            // `QueuedMessage.message` is a user message (spec), not a bare string.
            s.queued.push(
                json!({"entry_id": entry_id, "id": entry_id, "message": user(&message),
                                 "queued_at": now_ms(), "session_id": session}),
            );
            result = json!({"accepted": true, "session_id": session, "turn_id": s.turn_id, "queued": true});
            ev.push((
                "harness::message-queued".into(),
                json!({"session_id": session}),
            ));
        } else {
            let turn_id = self.next("t");
            if let Some(s) = self.session_mut(&session) {
                s.turn_id = turn_id.clone();
                s.turn = "running".into();
                s.turn_count += 1;
            }
            ev.push((
                "harness::turn-started".into(),
                json!({"session_id": session, "turn_id": turn_id, "timestamp": now_ms(), "depth": 0}),
            ));
            ev.push(self.add(&session, user(&message)));
            ev.push(self.add(&session, assistant(text("Thinking"), "end")));
            if let Some(e) = self.update_last(
                &session,
                assistant(text(&format!("You said: {message}")), "end"),
            ) {
                ev.push(e);
            }
            ev.push(self.finish(&session, "completed"));
            result = json!({"accepted": true, "session_id": session, "turn_id": turn_id});
        }
        if let Some(k) = key {
            self.sends.insert(k.to_string(), result.clone());
        }
        result["accepted"] = json!(true);
        (Ok(result), ev)
    }

    pub(super) fn stop(&mut self, data: &Value) -> Outcome {
        let session = match str_of(data, "session_id") {
            Ok(s) => s.to_string(),
            Err(e) => return (Err(e), vec![]),
        };
        if self.session(&session).is_none() {
            return (Err(bad("session/not_found", "no such session")), vec![]);
        }
        let mut ev = vec![];
        // Cascades to children.
        let ids: Vec<String> = self
            .descendants(&session)
            .iter()
            .map(|s| s.id.clone())
            .collect();
        for id in ids {
            let active = self
                .session(&id)
                .is_some_and(|s| matches!(s.turn.as_str(), "running" | "awaiting_functions"));
            if !active {
                continue;
            }
            let held: Vec<Value> = self
                .pending
                .iter()
                .filter(|r| r["session_id"] == id.as_str())
                .cloned()
                .collect();
            self.pending.retain(|r| r["session_id"] != id.as_str());
            for r in held {
                ev.push((
                    self.gate.event("approval::pending-resolved"),
                    json!({"session_id": id, "turn_id": r["turn_id"], "function_call_id": r["function_call_id"],
                           "function_id": r["function_id"], "outcome": "aborted", "resolved_at": now_ms()}),
                ));
            }
            ev.push(self.add(&id, assistant(text("stopped by user."), "aborted")));
            ev.push(self.finish(&id, "cancelled"));
        }
        (Ok(json!({"stopping": true})), ev)
    }

    pub(super) fn edit_queued(&mut self, data: &Value) -> Outcome {
        let (s, e, m) = match (
            str_of(data, "session_id"),
            str_of(data, "entry_id"),
            str_of(data, "message"),
        ) {
            (Ok(s), Ok(e), Ok(m)) => (s.to_string(), e.to_string(), m.to_string()),
            (Err(x), _, _) | (_, Err(x), _) | (_, _, Err(x)) => return (Err(x), vec![]),
        };
        let updated = self.session_mut(&s).is_some_and(|s| {
            s.queued
                .iter_mut()
                .find(|q| q["entry_id"] == e.as_str())
                .map(|q| q["message"] = user(&m))
                .is_some()
        });
        (Ok(json!({"updated": updated})), vec![])
    }

    pub(super) fn unqueue(&mut self, data: &Value) -> Outcome {
        let (s, e) = match (str_of(data, "session_id"), str_of(data, "entry_id")) {
            (Ok(s), Ok(e)) => (s.to_string(), e.to_string()),
            (Err(x), _) | (_, Err(x)) => return (Err(x), vec![]),
        };
        let removed = self.session_mut(&s).is_some_and(|s| {
            let before = s.queued.len();
            s.queued.retain(|q| q["entry_id"] != e.as_str());
            s.queued.len() < before
        });
        (Ok(json!({"removed": removed})), vec![])
    }
}
