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

    /// A busy engine for the reconnect benchmark: see `super::fake_scale`.
    pub fn scaled(scale: &super::fake_scale::Scale) -> World {
        super::fake_scale::build(scale)
    }

    /// Another console answers one held call and a new one is held (see `fake_scale::churn`).
    pub fn churn(
        &mut self,
        scale: &super::fake_scale::Scale,
        round: u64,
    ) -> Option<super::fake_scale::Churn> {
        super::fake_scale::churn(self, scale, round)
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

    fn functions(&self) -> Value {
        let ids = [
            "session::list",
            "session::get",
            "session::messages",
            "session::get_message",
            "harness::session-tree",
            "harness::status",
            "harness::metrics",
            "harness::send",
            "harness::stop",
            "harness::edit_queued",
            "harness::unqueue",
        ];
        let worker = |id: &str| match id.split("::").next() {
            Some("session") => "session-manager",
            Some("approval") => "approval-gate",
            _ => "harness",
        };
        let all = ids.iter().copied().chain(self.gate.functions());
        json!({"functions": all.map(|i| json!({"function_id": i, "worker_name": worker(i)})).collect::<Vec<_>>()})
    }

    fn list(&self, data: &Value) -> Value {
        let mut all: Vec<&Session> = self.sessions.iter().collect();
        match data.get("order").and_then(Value::as_str) {
            Some("created_asc") => all.sort_by_key(|s| s.created_at),
            Some("created_desc") => all.sort_by_key(|s| std::cmp::Reverse(s.created_at)),
            _ => all.sort_by_key(|s| std::cmp::Reverse(s.updated_at)),
        }
        let (a, b, next) = page(data, all.len());
        let mut out = json!({"sessions": all[a..b].iter().map(|s| s.meta()).collect::<Vec<_>>()});
        if let Some(n) = next {
            out["next_cursor"] = json!(n);
        }
        out
    }

    fn messages(&self, data: &Value) -> Value {
        let Some(s) = self.session(data.get("session_id").and_then(Value::as_str).unwrap_or(""))
        else {
            return Value::Null;
        };
        let (a, b, next) = page(data, s.entries.len());
        let mut out = json!({"messages": s.entries[a..b].iter()
            .map(|e| json!({"entry_id": e.entry_id, "message": e.message}))
            .collect::<Vec<_>>()});
        if let Some(n) = next {
            out["next_cursor"] = json!(n);
        }
        out
    }

    fn get_message(&self, data: &Value) -> Value {
        let id = data.get("entry_id").and_then(Value::as_str).unwrap_or("");
        self.session(data.get("session_id").and_then(Value::as_str).unwrap_or(""))
            .and_then(|s| s.entries.iter().find(|e| e.entry_id == id))
            .map_or(Value::Null, |e| {
                json!({"entry": {"entry_id": e.entry_id, "parent_id": e.parent_id,
                                 "message": e.message, "revision": e.revision}})
            })
    }

    fn root_of(&self, id: &str) -> Option<String> {
        let mut cur = self.session(id)?;
        while let Some(p) = cur.parent.as_deref().and_then(|p| self.session(p)) {
            cur = p;
        }
        Some(cur.id.clone())
    }

    fn descendants(&self, root: &str) -> Vec<&Session> {
        let mut out = vec![];
        let mut stack = vec![root.to_string()];
        while let Some(id) = stack.pop() {
            if let Some(s) = self.session(&id) {
                out.push(s);
                for c in self
                    .sessions
                    .iter()
                    .filter(|c| c.parent.as_deref() == Some(&id))
                {
                    stack.push(c.id.clone());
                }
            }
        }
        out
    }

    fn tree(&self, data: &Value) -> Result<Value, ErrorBody> {
        let root = str_of(data, "root_session_id")?;
        if self.session(root).is_none() {
            return Err(bad("session/not_found", "no such root session"));
        }
        let nodes: Vec<Value> = self
            .descendants(root)
            .iter()
            .map(|s| {
                let mut n = json!({"session_id": s.id, "depth": s.depth});
                if let Some(p) = &s.parent {
                    n["parent_session_id"] = json!(p);
                }
                n
            })
            .collect();
        let complete = self
            .descendants(root)
            .iter()
            .all(|s| !matches!(s.turn.as_str(), "running" | "awaiting_functions"));
        Ok(json!({"root_session_id": root, "complete": complete, "sessions": nodes}))
    }

    fn status(&self, data: &Value) -> Value {
        let Some(s) = self.session(data.get("session_id").and_then(Value::as_str).unwrap_or(""))
        else {
            return Value::Null;
        };
        let children: Vec<Value> = self
            .sessions
            .iter()
            .filter(|c| c.parent.as_deref() == Some(&s.id))
            .map(|c| json!({"function_call_id": format!("spawn-{}", c.id), "session_id": c.id, "turn_id": c.turn_id}))
            .collect();
        let mut r = json!({"session_id": s.id, "turn_id": s.turn_id, "status": s.turn,
                           "step": s.entries.len(), "turn_count": s.turn_count, "depth": s.depth,
                           "children": children, "expects_wake": false});
        if !s.pending_calls.is_empty() {
            r["pending_function_calls"] = json!(s.pending_calls);
        }
        if !s.queued.is_empty() {
            r["queued"] = json!(s.queued);
        }
        if data.get("verbose").and_then(Value::as_bool) == Some(true) {
            // `ContextSnapshotV1`: free = usable - total, floored at zero.
            let msgs = 1200 * s.entries.len() as u64;
            let total = msgs + 6_000;
            r["context"] = json!({"session_id": s.id, "turn_id": s.turn_id, "step": s.entries.len(),
                "timestamp": now_ms(), "model": "demo-model", "provider": "demo",
                "usable": 180_000, "total": total, "free": 180_000u64.saturating_sub(total),
                "effective_max_output_tokens": 16_000, "compacted": false, "estimator": "heuristic",
                "categories": {"system_prompt": 3_000, "tools": 2_500, "overhead": 500,
                               "messages": {"user": msgs / 3, "assistant": msgs - msgs / 3,
                                            "function_result": 0, "custom": 0}},
                "usage": {"input": total, "output": 300, "reasoning": null, "cache_read": null,
                          "cache_write": 0, "cost_usd": 0.004},
                "session_cost_usd": 0.01});
        }
        r
    }

    fn metrics(&self, data: &Value) -> Result<Value, ErrorBody> {
        let id = data
            .get("root_session_id")
            .or_else(|| data.get("session_id"))
            .and_then(Value::as_str)
            .ok_or_else(|| bad("invalid_request", "root_session_id is required"))?;
        let root = self
            .root_of(id)
            .ok_or_else(|| bad("session/not_found", "no such session"))?;
        let tree = self.descendants(&root);
        let by: Vec<Value> = tree
            .iter()
            .map(|s| {
                let n = s.entries.len() as u64;
                let mut v = json!({"session_id": s.id, "depth": s.depth, "turns": s.turn_count,
                    "function_calls": s.pending_calls.len(), "function_call_errors": 0,
                    "input_tokens": 900 * n, "output_tokens": 300 * n,
                    // Not every generation reports these: null, shown as "—".
                    "reasoning_tokens": null, "cache_read_tokens": null, "cache_write_tokens": 0,
                    "cost_usd": 0.002 * n as f64});
                if let Some(p) = &s.parent {
                    v["parent_session_id"] = json!(p);
                }
                v
            })
            .collect();
        let sum = |k: &str| by.iter().filter_map(|v| v[k].as_u64()).sum::<u64>();
        let cost: f64 = by.iter().filter_map(|v| v["cost_usd"].as_f64()).sum();
        let complete = tree
            .iter()
            .all(|s| !matches!(s.turn.as_str(), "running" | "awaiting_functions"));
        Ok(json!({"root_session_id": root, "complete": complete,
            "totals": {"sessions": tree.len(), "turns": sum("turns"), "function_calls": sum("function_calls"),
                       "function_call_errors": 0, "input_tokens": sum("input_tokens"),
                       "output_tokens": sum("output_tokens"), "reasoning_tokens": null,
                       "cache_read_tokens": null, "cache_write_tokens": 0, "cost_usd": cost},
            "by_session": by}))
    }

    fn list_pending(&self, data: &Value) -> Value {
        let filter = data.get("session_id").and_then(Value::as_str);
        let all: Vec<&Value> = self
            .pending
            .iter()
            .filter(|r| filter.is_none_or(|f| r["session_id"] == f))
            .collect();
        let cap = match self.pending_page_cap {
            0 => 500,
            n => n as u64,
        };
        let limit = data
            .get("limit")
            .and_then(Value::as_u64)
            .unwrap_or(50)
            .min(cap);
        let capped = json!({"limit": limit, "cursor": data.get("cursor")});
        let (a, b, next) = page(&capped, all.len());
        let mut out = json!({"pending": all[a..b]});
        if let Some(n) = next {
            out["next_cursor"] = json!(n);
        }
        out
    }

    fn resolve(&mut self, data: &Value) -> Outcome {
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

    fn approve_always(&mut self, data: &Value) -> Outcome {
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

    fn send(&mut self, data: &Value) -> Outcome {
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

    fn stop(&mut self, data: &Value) -> Outcome {
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

    fn edit_queued(&mut self, data: &Value) -> Outcome {
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

    fn unqueue(&mut self, data: &Value) -> Outcome {
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
