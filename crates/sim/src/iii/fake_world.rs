//! The fake engine's in-memory harness, approval gate and session manager (reference §3–§5):
//! enough of each function, with the events it emits, to make a believable demo and to drive
//! the client's tests. Shapes follow the v1.8.25 schemas; behaviour is deliberately simple
//! (a turn answers at once, a released call "runs" instantly).

use std::collections::HashMap;

use serde_json::{Value, json};

use switchboard_iii::codec::ErrorBody;
use switchboard_record::now_ms;

/// An event the world emits: trigger type and payload.
pub type Emitted = (String, Value);

/// What a world function did: its answer and the events it emitted, in order.
pub type Outcome = (Result<Value, ErrorBody>, Vec<Emitted>);

#[derive(Debug, Clone)]
struct Entry {
    entry_id: String,
    parent_id: Option<String>,
    message: Value,
    revision: i64,
}

#[derive(Debug, Clone)]
struct Session {
    id: String,
    title: String,
    parent: Option<String>,
    depth: u32,
    created_at: u64,
    updated_at: u64,
    /// Turn status: running | awaiting_functions | completed | cancelled | failed.
    turn: String,
    turn_id: String,
    turn_count: u32,
    entries: Vec<Entry>,
    queued: Vec<Value>,
    pending_calls: Vec<String>,
}

impl Session {
    fn meta(&self) -> Value {
        let status = match self.turn.as_str() {
            "running" | "awaiting_functions" => "working",
            "failed" => "error",
            _ => "idle",
        };
        let mut m = json!({
            "session_id": self.id,
            "title": self.title,
            "description": "",
            "status": status,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "message_count": self.entries.len(),
        });
        if let Some(p) = &self.parent {
            m["metadata"] = json!({"parent_session_id": p});
        }
        m
    }
}

/// The harness world behind the fake engine.
#[derive(Debug, Default)]
pub struct World {
    sessions: Vec<Session>,
    pending: Vec<Value>,
    approved_always: HashMap<String, Vec<Value>>,
    sends: HashMap<String, Value>,
    counter: u64,
    /// Largest `approval::list-pending` page (the engine's is not documented; 500 by default).
    pending_page_cap: usize,
    /// The approval gate this world has (its generation, or none).
    pub gate: super::fake_gate::FakeGate,
}

fn text(t: &str) -> Value {
    json!([{"type": "text", "text": t}])
}

fn user(t: &str) -> Value {
    json!({"role": "user", "content": text(t), "timestamp": now_ms()})
}

fn assistant(content: Value, stop_reason: &str) -> Value {
    json!({"role": "assistant", "content": content, "stop_reason": stop_reason,
           "model": "demo-model", "provider": "demo", "timestamp": now_ms()})
}

fn bad(code: &str, msg: &str) -> ErrorBody {
    ErrorBody::new(code, msg)
}

fn str_of<'a>(data: &'a Value, key: &str) -> Result<&'a str, ErrorBody> {
    data.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| bad("invalid_request", &format!("{key} is required")))
}

/// `limit` (default 50, cap 500) and an index cursor.
fn page(data: &Value, len: usize) -> (usize, usize, Option<String>) {
    let limit = data
        .get("limit")
        .and_then(Value::as_u64)
        .unwrap_or(50)
        .clamp(1, 500) as usize;
    let start = data
        .get("cursor")
        .and_then(Value::as_str)
        .and_then(|c| c.parse::<usize>().ok())
        .unwrap_or(0)
        .min(len);
    let end = (start + limit).min(len);
    let next = (end < len).then(|| end.to_string());
    (start, end, next)
}

impl World {
    pub fn empty() -> World {
        World::default()
    }

    /// Page `approval::list-pending` by at most `cap` records, whatever `limit` asks, so a
    /// client has to follow `next_cursor` (the benchmark's 50 held calls come in pages).
    pub fn set_pending_page_cap(&mut self, cap: usize) {
        self.pending_page_cap = cap.max(1);
    }

    /// Edit one message of `session` without an event, as another console's change seen
    /// only by a later re-read: `marker` is appended to its first text block (or added as a
    /// text block) and its revision bumped. `from_end` counts `index` from the last entry.
    pub fn edit_text(&mut self, session: &str, index: usize, from_end: bool, marker: &str) -> bool {
        let Some(s) = self.session_mut(session) else {
            return false;
        };
        let len = s.entries.len();
        let i = if from_end {
            len.checked_sub(index + 1)
        } else {
            (index < len).then_some(index)
        };
        let Some(e) = i.and_then(|i| s.entries.get_mut(i)) else {
            return false;
        };
        let Some(content) = e.message.get_mut("content").and_then(Value::as_array_mut) else {
            return false;
        };
        match content
            .iter_mut()
            .find(|b| b["type"] == "text" && b["text"].is_string())
        {
            Some(b) => {
                let t = format!("{}{marker}", b["text"].as_str().unwrap_or_default());
                b["text"] = json!(t);
            }
            None => content.push(json!({"type": "text", "text": marker})),
        }
        e.revision += 1;
        true
    }

    /// Append `message` to `session` (it must exist); returns its entry id.
    pub fn append(&mut self, session: &str, message: Value) -> String {
        let (_, ev) = self.add(session, message);
        ev["entry_id"].as_str().unwrap_or_default().to_string()
    }

    /// End `session`'s turn with `status` (`completed`, `cancelled`, `failed`).
    pub fn end_turn(&mut self, session: &str, status: &str) {
        self.finish(session, status);
    }

    /// The `demo-engine` world: two root sessions, one with a sub-agent child; each root holds
    /// one call (a shell command, a filesystem access).
    pub fn demo() -> World {
        let mut w = World::default();
        let now = now_ms();
        w.new_session("s-parser", "Refactor the parser", None, now - 240_000);
        w.add(
            "s-parser",
            user("Refactor the expression parser into its own module and run the tests."),
        );
        w.add(
            "s-parser",
            assistant(
                json!([{"type":"text","text":"I moved the parser into src/parse/expr.rs. A sub-agent checked the unit tests; now the whole workspace."},
                       {"type":"function_call","id":"call-exec-1","function_id":"shell::exec",
                        "arguments":{"command":"cargo test --workspace && git push origin parser-split","cwd":"/home/demo/repo"}}]),
                "function_call",
            ),
        );
        w.hold(
            "s-parser",
            "call-exec-1",
            "shell::exec",
            json!({"arguments_excerpt": "{\"command\":\"cargo test --workspace && git push origin parser-split\",\"cwd\":\"/home/demo/repo\"}"}),
        );
        w.new_session(
            "s-parser-tests",
            "Run the unit tests",
            Some("s-parser"),
            now - 200_000,
        );
        w.add(
            "s-parser-tests",
            user("Run the parser's unit tests and report failures."),
        );
        w.add(
            "s-parser-tests",
            assistant(text("All 42 parser tests pass."), "end"),
        );
        w.finish("s-parser-tests", "completed");
        w.new_session("s-docs", "Tidy the notes", None, now - 120_000);
        w.add("s-docs", user("Fold my TODO notes into the README."));
        w.add(
            "s-docs",
            assistant(
                json!([{"type":"text","text":"I need to read your notes first."},
                       {"type":"function_call","id":"call-fs-1","function_id":"filesystem::read",
                        "arguments":{"path":"/home/demo/notes/todo.md"}}]),
                "function_call",
            ),
        );
        w.hold(
            "s-docs",
            "call-fs-1",
            "filesystem::read",
            json!({"kind": "filesystem_access",
                   "arguments_excerpt": "{\"path\":\"/home/demo/notes/todo.md\"}",
                   "access_request": {"requested_root": "/home/demo/notes",
                                      "attempted_path": "/home/demo/notes/todo.md",
                                      "error_code": "S215"}}),
        );
        w
    }

    fn next(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}-{}", self.counter)
    }

    /// Add a session (for tests and the demo).
    pub fn new_session(&mut self, id: &str, title: &str, parent: Option<&str>, created_at: u64) {
        let depth = parent
            .and_then(|p| self.session(p))
            .map_or(0, |p| p.depth + 1);
        let turn_id = self.next("t");
        self.sessions.push(Session {
            id: id.into(),
            title: title.into(),
            parent: parent.map(String::from),
            depth,
            created_at,
            updated_at: created_at,
            turn: "running".into(),
            turn_id,
            turn_count: 1,
            entries: Vec::new(),
            queued: Vec::new(),
            pending_calls: Vec::new(),
        });
    }

    fn session(&self, id: &str) -> Option<&Session> {
        self.sessions.iter().find(|s| s.id == id)
    }

    fn session_mut(&mut self, id: &str) -> Option<&mut Session> {
        self.sessions.iter_mut().find(|s| s.id == id)
    }

    /// Append a message; returns its `message-added` event.
    fn add(&mut self, session: &str, message: Value) -> Emitted {
        let entry_id = self.next("e");
        let s = self.session_mut(session).expect("world session exists");
        let parent_id = s.entries.last().map(|e| e.entry_id.clone());
        s.updated_at = now_ms();
        s.entries.push(Entry {
            entry_id: entry_id.clone(),
            parent_id: parent_id.clone(),
            message: message.clone(),
            revision: 0,
        });
        let turn_id = s.turn_id.clone();
        (
            "session::message-added".into(),
            json!({"session_id": session, "entry_id": entry_id, "parent_id": parent_id,
                   "message": message, "origin": {"turn_id": turn_id}, "timestamp": now_ms()}),
        )
    }

    /// Replace the last entry's message with a newer revision; returns `message-updated`.
    fn update_last(&mut self, session: &str, message: Value) -> Option<Emitted> {
        let s = self.session_mut(session)?;
        let e = s.entries.last_mut()?;
        e.revision += 1;
        e.message = message.clone();
        Some((
            "session::message-updated".into(),
            json!({"session_id": session, "entry_id": e.entry_id, "message": message,
                   "revision": e.revision, "timestamp": now_ms()}),
        ))
    }

    /// Park the session's turn on a held call with a pending record.
    pub fn hold(&mut self, session: &str, call: &str, function_id: &str, extra: Value) -> Emitted {
        let (turn_id, title, depth, parent) = {
            let s = self.session_mut(session).expect("world session exists");
            s.turn = "awaiting_functions".into();
            s.pending_calls.push(call.into());
            (
                s.turn_id.clone(),
                s.title.clone(),
                s.depth,
                s.parent.clone(),
            )
        };
        let mut rec = json!({"session_id": session, "turn_id": turn_id, "function_call_id": call,
                             "function_id": function_id, "kind": "function",
                             "pending_at": now_ms(), "depth": depth, "session_title": title});
        if let Some(p) = parent {
            rec["session_metadata"] = json!({"parent_session_id": p});
        }
        if let (Some(r), Some(x)) = (rec.as_object_mut(), extra.as_object()) {
            for (k, v) in x {
                r.insert(k.clone(), v.clone());
            }
        }
        self.pending.push(rec.clone());
        (self.gate.event("approval::pending-created"), rec)
    }

    fn finish(&mut self, session: &str, status: &str) -> Emitted {
        let s = self.session_mut(session).expect("world session exists");
        s.turn = status.into();
        s.pending_calls.clear();
        (
            "harness::turn-completed".into(),
            json!({"session_id": session, "turn_id": s.turn_id, "status": status,
                   "timestamp": now_ms(), "terminal": true}),
        )
    }

    /// Run a world function. `None`: no such function here.
    pub fn handle(&mut self, function_id: &str, data: &Value) -> Option<Outcome> {
        // The gate's ids per its generation; another generation's ids are not found.
        let function_id = if function_id.starts_with("approval::") {
            self.gate.route(function_id)?
        } else {
            function_id
        };
        let r = match function_id {
            "engine::workers::list" => (Ok(self.gate.workers()), vec![]),
            "engine::workers::register" => (Ok(json!({})), vec![]),
            "engine::functions::list" => (Ok(self.functions()), vec![]),
            "session::list" => (Ok(self.list(data)), vec![]),
            "session::get" => (
                Ok(self
                    .session(data.get("session_id").and_then(Value::as_str).unwrap_or(""))
                    .map_or(Value::Null, |s| json!({"meta": s.meta()}))),
                vec![],
            ),
            "session::messages" => (Ok(self.messages(data)), vec![]),
            "session::get_message" => (Ok(self.get_message(data)), vec![]),
            "harness::session-tree" => (self.tree(data), vec![]),
            "harness::status" => (Ok(self.status(data)), vec![]),
            "harness::metrics" => (self.metrics(data), vec![]),
            "approval::list-pending" => (Ok(self.list_pending(data)), vec![]),
            "approval::resolve" => self.resolve(data),
            "approval::approve-always" => self.approve_always(data),
            "harness::send" => self.send(data),
            "harness::stop" => self.stop(data),
            "harness::edit_queued" => self.edit_queued(data),
            "harness::unqueue" => self.unqueue(data),
            _ => return None,
        };
        Some(r)
    }
}

#[path = "fake_world_calls.rs"]
mod calls;
#[path = "fake_world_reads.rs"]
mod reads;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_world_holds_one_call_per_root() {
        let mut w = World::demo();
        let (r, _) = w
            .handle("approval::list-pending", &json!({"limit": 1}))
            .unwrap();
        let r = r.unwrap();
        assert_eq!(r["pending"].as_array().unwrap().len(), 1);
        assert_eq!(r["next_cursor"], "1");
        let (r, _) = w
            .handle(
                "approval::list-pending",
                &json!({"limit": 1, "cursor": "1"}),
            )
            .unwrap();
        let r = r.unwrap();
        assert_eq!(r["pending"][0]["kind"], "filesystem_access");
        assert!(r.get("next_cursor").is_none());
        let (t, _) = w
            .handle(
                "harness::session-tree",
                &json!({"root_session_id": "s-parser"}),
            )
            .unwrap();
        assert_eq!(t.unwrap()["sessions"].as_array().unwrap().len(), 2);
        let (r, ev) = w
            .handle(
                "approval::resolve",
                &json!({"session_id": "s-parser", "function_call_id": "call-exec-1", "decision": "allow"}),
            )
            .unwrap();
        assert_eq!(r.unwrap()["resolved"], true);
        assert_eq!(ev[0].0, "approval::pending-resolved");
        assert_eq!(ev.last().unwrap().0, "harness::turn-completed");
        let (r, _) = w
            .handle(
                "approval::resolve",
                &json!({"session_id": "s-parser", "function_call_id": "call-exec-1", "decision": "allow"}),
            )
            .unwrap();
        assert_eq!(r.unwrap()["resolved"], false);
    }

    #[test]
    fn the_context_meter_has_the_snapshot_fields() {
        let mut w = World::demo();
        let (st, _) = w
            .handle(
                "harness::status",
                &json!({"session_id": "s-parser", "verbose": true}),
            )
            .unwrap();
        let c = &st.unwrap()["context"];
        // ContextSnapshotV1's required fields (spec, harness v1.8.25).
        for k in [
            "categories",
            "compacted",
            "effective_max_output_tokens",
            "free",
            "model",
            "session_id",
            "step",
            "timestamp",
            "total",
            "turn_id",
            "usable",
        ] {
            assert!(c.get(k).is_some(), "{k}");
        }
        assert_eq!(
            c["free"].as_u64().unwrap(),
            c["usable"].as_u64().unwrap() - c["total"].as_u64().unwrap()
        );
    }

    #[test]
    fn sends_are_idempotent_and_queue_behind_a_held_call() {
        let mut w = World::demo();
        let send = json!({"session_id": "s-docs", "message": "also the CHANGELOG", "idempotency_key": "k1"});
        let (r, ev) = w.handle("harness::send", &send).unwrap();
        assert_eq!(r.unwrap()["queued"], true);
        assert_eq!(ev[0].0, "harness::message-queued");
        let (r, ev) = w.handle("harness::send", &send).unwrap();
        assert_eq!(r.unwrap()["deduplicated"], true);
        assert!(ev.is_empty());
        let (st, _) = w
            .handle("harness::status", &json!({"session_id": "s-docs"}))
            .unwrap();
        let entry = st.unwrap()["queued"][0]["entry_id"]
            .as_str()
            .unwrap()
            .to_string();
        let (r, _) = w
            .handle(
                "harness::unqueue",
                &json!({"session_id": "s-docs", "entry_id": entry}),
            )
            .unwrap();
        assert_eq!(r.unwrap()["removed"], true);
        let (r, ev) = w
            .handle("harness::stop", &json!({"session_id": "s-docs"}))
            .unwrap();
        assert_eq!(r.unwrap()["stopping"], true);
        assert!(
            ev.iter()
                .any(|(t, p)| t == "harness::turn-completed" && p["status"] == "cancelled")
        );
    }
}
