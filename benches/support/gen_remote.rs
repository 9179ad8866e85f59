//! Seeded generators of the remote backends' recordings for the replay bench: an ai-gateway
//! connection and an iii engine connection, each as the recorder holds it (direction and
//! line), our side written by the real encoders.
//!
//! **Gateway** (shaped like the recordings the gateway app tests write, `tests/gateway_app.rs`,
//! `gateway_edit.rs`, and the demo host's script, `crates/sim/src/gateway/demo.rs`): the
//! `ready` exchange, then conversations of a remote agent: `workspace_info`, `workspace_list`
//! and `workspace_read` (answered at once, their content in the result), effects that wait for
//! the owner (`workspace_patch`, `workspace_write`, `workspace_exec`, now and then a
//! `workspace_ask`) answered with what ran, a denial, or an edit the owner made (its `edit:`
//! note before the result), and the `workspace_poll`s that follow a command's output.
//!
//! **iii** (shaped like `switchboard iii`'s recording of the fake engine in
//! `tests/iii_app.rs`, the transcripts of `crates/sim/src/iii/fake_scale.rs` (harness
//! v1.8.25 shapes)): registration and trigger bindings, the first reads (`session::list`,
//! `session::messages`, `approval::list-pending`), then turns pushed by the engine to our
//! handlers (`turn-started`, `message-added` for the prompt, assistant messages with
//! thinking, text and `function_call` blocks, `message-updated` revisions while one streams,
//! results with test output and whole files, `status-changed`, `turn-completed`), held calls
//! (`approval::pending-created`) answered by our `approval::resolve` and closed by
//! `pending-resolved`, each engine invocation acknowledged by our `invocationresult`.

#![allow(dead_code)]

use serde_json::{Value, json};
use switchboard::backend::gateway::codec::{self as gw, Code, Refusal};

use super::generator::Rng;
use switchboard_sim::iii::fake_scale::{self, Draw, file_body, test_output};

/// Where a generated line goes in the recording.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Way {
    In,
    Out,
    Note,
}

pub struct RecLine {
    pub way: Way,
    pub line: String,
}

/// The iii scale world's content (`switchboard_sim::iii::fake_scale`), drawn from this
/// bench's random numbers: prose, files, test runs, function calls and their results (long
/// ones among them), the access requests of held filesystem calls.
impl Draw for Rng {
    fn next(&mut self) -> u64 {
        Rng::next(self)
    }
}

fn prose(r: &mut Rng, lo: usize, hi: usize) -> String {
    fake_scale::words(r, lo, hi)
}

const FILES: &[&str] = &[
    "src/invoice/tax.rs",
    "src/invoice/export.rs",
    "src/auth/session.rs",
    "crates/billing-core/src/ledger.rs",
    "tests/reconcile.rs",
    "README.md",
];

fn hex64(r: &mut Rng) -> String {
    (0..4).map(|_| format!("{:016x}", r.next())).collect()
}

fn uuid(r: &mut Rng) -> String {
    r.uuid()
}

// ---------------------------------------------------------------------------------------
// ai-gateway

/// A remote agent's connection to the gateway, one recorded line per `next()`.
pub struct GatewayGen {
    rng: Rng,
    queue: std::collections::VecDeque<RecLine>,
    /// Calls made so far (ids `c<n>`), gates opened (the engine numbers them `gw-<n>`).
    calls: u64,
    gates: u64,
    conversation: u64,
    session: String,
}

const WS: &str = "billing";
const INTENT: &str = "split the billing service into crates";

impl GatewayGen {
    pub fn new(seed: u64) -> GatewayGen {
        let mut g = GatewayGen {
            rng: Rng::new(seed),
            queue: Default::default(),
            calls: 0,
            gates: 0,
            conversation: 0,
            session: String::new(),
        };
        g.push(Way::Out, gw::ready_frame());
        g.push(Way::In, gw::ready_frame());
        g
    }

    fn push(&mut self, way: Way, line: String) {
        self.queue.push_back(RecLine { way, line });
    }

    /// The remote agent's call; returns its id.
    fn call(&mut self, tool: &str, args: Value) -> String {
        self.calls += 1;
        let id = format!("c{}", self.calls);
        let line =
            switchboard_sim::gateway::fake_host::call(&id, WS, &self.session, INTENT, tool, args);
        self.push(Way::In, line);
        id
    }

    fn ok(&mut self, id: &str, structured: Value) {
        let line = gw::result_frame(id, &self.session, &gw::ok_body(&structured));
        self.push(Way::Out, line);
    }

    fn refused(&mut self, id: &str, code: Code, message: &str) {
        let body = gw::error_body(&Refusal::new(code, message));
        let line = gw::result_frame(id, &self.session, &body);
        self.push(Way::Out, line);
    }

    /// An effect's gate and how the owner answered: `Some(edited args)` for an edit, `None`
    /// for a plain allow; `Err` for a denial.
    fn decide(
        &mut self,
        args: &Value,
        edit: impl FnOnce(&mut Rng, &Value) -> Value,
    ) -> Result<Option<Value>, ()> {
        self.gates += 1;
        match self.rng.range(0, 19) {
            0 | 1 => Err(()),
            2 => {
                let edited = edit(&mut self.rng, args);
                let note = format!("edit: gw-{} {edited}", self.gates);
                self.push(Way::Note, note);
                Ok(Some(edited))
            }
            _ => Ok(None),
        }
    }

    fn path(&mut self) -> String {
        FILES[self.rng.range(0, FILES.len() - 1)].to_string()
    }

    fn read(&mut self) {
        let path = self.path();
        let id = self.call("workspace_read", json!({"path": path}));
        let n = self.rng.range(10, 60);
        let content = file_body(&mut self.rng, n);
        let sha = hex64(&mut self.rng);
        self.ok(
            &id,
            json!({"path": path, "sha256": sha, "size": content.len(), "offset": 0,
                   "content": content, "nextOffset": null}),
        );
    }

    fn list(&mut self) {
        let dir = ["src", "src/invoice", "crates/billing-core/src", "tests"][self.rng.range(0, 3)];
        let id = self.call("workspace_list", json!({"path": dir}));
        let n = self.rng.range(3, 25);
        let entries: Vec<Value> = (0..n)
            .map(|k| {
                if k % 5 == 4 {
                    json!({"name": format!("mod_{k}"), "type": "dir", "size": 0})
                } else {
                    json!({"name": format!("part_{k}.rs"), "type": "file", "size": self.rng.range(200, 40_000)})
                }
            })
            .collect();
        self.ok(
            &id,
            json!({"path": dir, "entries": entries, "total": n, "offset": 0, "nextOffset": null}),
        );
    }

    fn patch(&mut self) {
        let path = self.path();
        let old = "amount / 100".to_string();
        let new = format!("amount.div_euclid({})", [100, 1000][self.rng.range(0, 1)]);
        let sha = hex64(&mut self.rng);
        let args = json!({"path": path, "oldText": old, "newText": new, "expectedSha256": sha});
        let id = self.call("workspace_patch", args.clone());
        let decided = self.decide(&args, |_, a| {
            let mut a = a.clone();
            a["newText"] = json!("amount.div_euclid(100) /* reviewed */");
            a
        });
        match decided {
            Err(()) => self.refused(&id, Code::DeniedByOwner, "denied by the owner"),
            Ok(edited) => {
                let sha = hex64(&mut self.rng);
                let mut r = json!({"path": path, "created": false, "size": self.rng.range(400, 30_000), "sha256": sha});
                if edited.is_some() {
                    r["editedByOwner"] = json!(true);
                }
                self.ok(&id, r);
            }
        }
    }

    fn write(&mut self) {
        let path = format!("crates/billing-core/src/part_{}.rs", self.calls);
        let n = self.rng.range(20, 100);
        let content = file_body(&mut self.rng, n);
        let args = json!({"path": path, "content": content, "expectedSha256": null});
        let id = self.call("workspace_write", args.clone());
        let decided = self.decide(&args, |_, a| {
            let mut a = a.clone();
            a["content"] = json!("// the owner's version\n");
            a
        });
        match decided {
            Err(()) => self.refused(&id, Code::DeniedByOwner, "denied by the owner: not yet"),
            Ok(edited) => {
                let sha = hex64(&mut self.rng);
                let mut r =
                    json!({"path": path, "created": true, "size": content.len(), "sha256": sha});
                if edited.is_some() {
                    r["editedByOwner"] = json!(true);
                }
                self.ok(&id, r);
            }
        }
    }

    fn exec(&mut self) {
        let command = [
            "cargo test -p billing-core --lib 2>&1 | tail -n 60",
            "cargo clippy --all-targets -- -D warnings",
            "git diff --stat HEAD~1",
            "rg -n 'round_half_even' crates/ src/",
        ][self.rng.range(0, 3)];
        let args = json!({"command": command, "timeoutMs": 120_000});
        let id = self.call("workspace_exec", args.clone());
        let decided = self.decide(&args, |_, a| {
            let mut a = a.clone();
            a["command"] = json!("cargo test -p billing-core --lib");
            a
        });
        let edited = match decided {
            Err(()) => return self.refused(&id, Code::DeniedByOwner, "denied by the owner"),
            Ok(e) => e,
        };
        let cid = uuid(&mut self.rng);
        let mut r = json!({"commandId": cid, "cwd": ".", "timeoutMs": 120_000});
        if let Some(e) = &edited {
            r["editedByOwner"] = json!(true);
            r["command"] = e["command"].clone();
        }
        self.ok(&id, r);
        // Its output, polled until it ends.
        let failed = self.rng.chance(15);
        let n = self.rng.range(3, 60);
        let output = test_output(&mut self.rng, n, failed);
        let polls = self.rng.range(1, 4);
        let step = output.len().div_ceil(polls);
        let mut at = 0;
        for k in 0..polls {
            let pid = self.call("workspace_poll", json!({"commandId": cid, "offset": at}));
            let mut to = (at + step).min(output.len());
            while !output.is_char_boundary(to) {
                to += 1;
            }
            let last = k + 1 == polls;
            self.ok(
                &pid,
                json!({"commandId": cid, "status": if last { "exited" } else { "running" },
                       "exitCode": if last { json!(i32::from(failed)) } else { Value::Null },
                       "offset": at, "output": &output[at..to], "nextOffset": to,
                       "droppedBefore": null, "more": false, "inputPending": 0, "inputDelivered": 0}),
            );
            at = to;
        }
    }

    fn ask(&mut self) {
        let question = format!("Shall I also {}?", prose(&mut self.rng, 4, 12));
        let id = self.call("workspace_ask", json!({"question": question}));
        self.gates += 1;
        let answer = ["yes", "no, leave it", "yes, and add a test"][self.rng.range(0, 2)];
        self.ok(&id, json!({"answer": answer}));
    }

    /// One conversation of the remote agent: a look around, then reads and effects.
    fn conversation(&mut self) {
        self.conversation += 1;
        self.session = format!("conversation-{}", self.conversation);
        let id = self.call("workspace_info", json!({}));
        self.ok(
            &id,
            json!({"project": "billing", "platform": {"os": "linux", "arch": "x86_64"},
                   "owner": "switchboard", "mode": "ask", "intention": INTENT,
                   "instructions": "Paths are relative to the project root. Every write, patch, delete, exec, input and stop may wait for the owner's approval. Supply expectedSha256 from workspace_read; null only creates. Read AGENTS.md and CLAUDE.md before editing."}),
        );
        for _ in 0..self.rng.range(4, 20) {
            match self.rng.range(0, 19) {
                0..=2 => self.list(),
                3..=9 => self.read(),
                10..=13 => self.patch(),
                14..=15 => self.write(),
                16..=18 => self.exec(),
                _ => self.ask(),
            }
        }
    }
}

impl Iterator for GatewayGen {
    type Item = RecLine;
    fn next(&mut self) -> Option<RecLine> {
        if self.queue.is_empty() {
            self.conversation();
        }
        self.queue.pop_front()
    }
}

// ---------------------------------------------------------------------------------------
// iii

/// Trigger types `switchboard iii` binds (as its recording lists them).
const TRIGGERS: &[&str] = &[
    "approval::pending-created",
    "approval::pending-resolved",
    "approval::pending_created",
    "approval::pending_resolved",
    "engine::workers-available",
    "harness::ready",
    "session::created",
    "session::message-added",
    "session::message-updated",
    "session::status-changed",
    "session::meta-updated",
    "session::deleted",
    "harness::turn-started",
    "harness::turn-completed",
    "harness::message-queued",
];

const HANDLERS: &str = "switchboard::27d7bd938819::";

const TITLES: &[&str] = &[
    "Split the billing service into crates",
    "Fix the invoice exporter",
    "Add tests for the rate limiter",
    "Speed up the search indexer",
];

/// An iii engine connection with a few root sessions at work, one recorded line per `next()`.
pub struct IiiGen {
    rng: Rng,
    queue: std::collections::VecDeque<RecLine>,
    entry: u64,
    turn: u64,
    calls: u64,
    /// Per session: its id and its last entry id.
    sessions: Vec<(String, Option<String>)>,
    now: u64,
}

fn handler(trigger: &str) -> String {
    format!("{HANDLERS}on-{}", trigger.replace("::", "-"))
}

impl IiiGen {
    pub fn new(seed: u64) -> IiiGen {
        let mut g = IiiGen {
            rng: Rng::new(seed),
            queue: Default::default(),
            entry: 0,
            turn: 0,
            calls: 0,
            sessions: (0..TITLES.len())
                .map(|i| (format!("s-{i}"), None))
                .collect(),
            now: 1_764_900_000_000,
        };
        g.connect();
        g
    }

    fn push(&mut self, way: Way, line: String) {
        self.queue.push_back(RecLine { way, line });
    }

    fn frame(&mut self, way: Way, v: Value) {
        self.push(way, v.to_string());
    }

    fn invocation(&mut self) -> String {
        uuid(&mut self.rng)
    }

    /// Our call and the engine's result.
    fn call(&mut self, function_id: &str, data: Value, result: Value) {
        let id = self.invocation();
        self.frame(
            Way::Out,
            json!({"type": "invokefunction", "invocation_id": id, "function_id": function_id, "data": data}),
        );
        self.frame(
            Way::In,
            json!({"type": "invocationresult", "invocation_id": id, "function_id": function_id, "result": result}),
        );
    }

    /// The engine invokes our handler for `trigger`; we acknowledge.
    fn event(&mut self, trigger: &str, data: Value) {
        let id = self.invocation();
        let f = handler(trigger);
        self.frame(
            Way::In,
            json!({"type": "invokefunction", "invocation_id": id, "function_id": f, "data": data}),
        );
        self.frame(
            Way::Out,
            json!({"type": "invocationresult", "invocation_id": id, "function_id": f, "result": {}}),
        );
    }

    fn connect(&mut self) {
        self.push(
            Way::Note,
            "iii engine ws://127.0.0.1:49134; headers: []".into(),
        );
        self.push(Way::Note, "state: Connecting".into());
        self.push(Way::Note, "connected".into());
        self.frame(
            Way::In,
            json!({"type": "workerregistered", "worker_id": "worker-1", "reattach_token": "token-1"}),
        );
        let reg = self.invocation();
        self.frame(
            Way::Out,
            json!({"type": "invokefunction", "invocation_id": reg, "function_id": "engine::workers::register",
                   "data": {"name": "switchboard:vm:25124:0", "runtime": "rust", "version": "0.1.0", "os": "linux", "pid": 25124}}),
        );
        for (i, t) in TRIGGERS.iter().enumerate() {
            let f = handler(t);
            self.frame(
                Way::Out,
                json!({"type": "registerfunction", "id": f, "description": format!("switchboard: {t} events")}),
            );
            self.frame(
                Way::Out,
                json!({"type": "registertrigger", "id": format!("27d7bd938819-{i}"), "trigger_type": t, "function_id": f, "config": {}}),
            );
        }
        self.frame(Way::Out, json!({"type": "ping"}));
        self.frame(
            Way::In,
            json!({"type": "invocationresult", "invocation_id": reg, "function_id": "engine::workers::register", "result": {}}),
        );
        self.frame(Way::In, json!({"type": "pong"}));
        self.push(
            Way::Note,
            format!(r#"state: Live {{ worker_id: "worker-1", handlers: "{HANDLERS}" }}"#),
        );
        let now = self.now;
        let listed: Vec<Value> = self
            .sessions
            .iter()
            .zip(TITLES)
            .map(|((id, _), t)| {
                json!({"session_id": id, "title": t, "description": "", "status": "idle",
                                       "created_at": now, "updated_at": now, "message_count": 0})
            })
            .collect();
        self.call(
            "session::list",
            json!({"order": "updated_desc", "limit": 500}),
            json!({"sessions": listed}),
        );
        let functions: Vec<Value> = [
            ("session::list", "session-manager"),
            ("session::get", "session-manager"),
            ("session::messages", "session-manager"),
            ("session::get_message", "session-manager"),
            ("harness::session-tree", "harness"),
            ("harness::status", "harness"),
            ("harness::metrics", "harness"),
            ("harness::send", "harness"),
            ("harness::stop", "harness"),
            ("harness::edit_queued", "harness"),
            ("harness::unqueue", "harness"),
            ("approval::gate", "approval-gate"),
            ("approval::list-pending", "approval-gate"),
            ("approval::resolve", "approval-gate"),
            ("approval::approve-always", "approval-gate"),
            ("approval::get-settings", "approval-gate"),
        ]
        .iter()
        .map(|(f, w)| json!({"function_id": f, "worker_name": w}))
        .collect();
        self.call(
            "engine::functions::list",
            json!({}),
            json!({"functions": functions}),
        );
        // The engine lists the bindings of the gate generation it has (kebab here).
        let mut bound: Vec<Value> = TRIGGERS
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.contains('_'))
            .map(|(i, t)| json!({"id": format!("27d7bd938819-{i}"), "trigger_type": t, "function_id": handler(t), "config": {}}))
            .collect();
        bound.push(json!({"id": "approval-gate::hook", "trigger_type": "harness::hook::pre-trigger",
                          "function_id": "approval::gate", "config": {"functions": ["*"]}, "worker_name": "approval-gate"}));
        self.call(
            "engine::registered-triggers::list",
            json!({}),
            json!({"registered_triggers": bound}),
        );
        self.call(
            "engine::workers::list",
            json!({}),
            json!({"workers": [{"name": "harness", "version": "1.8.25", "status": "available"},
                               {"name": "session-manager", "version": "0.9.0", "status": "available"},
                               {"name": "approval-gate", "version": "1.0.3", "status": "available"}]}),
        );
        for k in 0..self.sessions.len() {
            let s = self.sessions[k].0.clone();
            self.call(
                "harness::session-tree",
                json!({"root_session_id": s}),
                json!({"root_session_id": s, "complete": true, "sessions": [{"session_id": s, "depth": 0}]}),
            );
            self.metrics(&s);
            self.status(&s, "completed");
            self.call(
                "session::messages",
                json!({"session_id": s, "limit": 500}),
                json!({"messages": []}),
            );
        }
        self.call(
            "approval::list-pending",
            json!({"limit": 500}),
            json!({"pending": []}),
        );
    }

    fn status(&mut self, s: &str, status: &str) {
        let turn = format!("t-{}", self.turn);
        let now = self.now;
        self.call(
            "harness::status",
            json!({"session_id": s, "verbose": true}),
            json!({"session_id": s, "turn_id": turn, "status": status, "step": 0, "turn_count": self.turn,
                   "depth": 0, "children": [], "expects_wake": false, "pending_function_calls": [],
                   "context": {"session_id": s, "turn_id": turn, "step": 0, "timestamp": now,
                               "model": "claude-sonnet-4-5", "provider": "anthropic", "usable": 180000,
                               "total": 6000, "free": 174000, "effective_max_output_tokens": 16000,
                               "compacted": false, "estimator": "heuristic",
                               "categories": {"system_prompt": 3000, "tools": 2500, "overhead": 500,
                                              "messages": {"user": 0, "assistant": 0, "function_result": 0, "custom": 0}},
                               "usage": {"input": 6000, "output": 300, "reasoning": null, "cache_read": null,
                                         "cache_write": 0, "cost_usd": 0.004},
                               "session_cost_usd": 0.01}}),
        );
    }

    fn metrics(&mut self, s: &str) {
        let (i, o) = (self.rng.range(1_000, 90_000), self.rng.range(100, 9_000));
        let totals = json!({"sessions": 1, "turns": self.turn, "function_calls": self.calls, "function_call_errors": 0,
                            "input_tokens": i, "output_tokens": o, "reasoning_tokens": null, "cache_read_tokens": null,
                            "cache_write_tokens": 0, "cost_usd": 0.004});
        let mut by = totals.clone();
        by["session_id"] = json!(s);
        by["depth"] = json!(0);
        self.call(
            "harness::metrics",
            json!({"root_session_id": s}),
            json!({"root_session_id": s, "complete": true, "totals": totals, "by_session": [by]}),
        );
    }

    /// A new entry of session `k`: its `message-added` event.
    fn added(&mut self, k: usize, turn: &str, message: Value) -> String {
        self.entry += 1;
        self.now += self.rng.range(5, 900) as u64;
        let entry = format!("e-{}", self.entry);
        let (s, parent) = self.sessions[k].clone();
        self.sessions[k].1 = Some(entry.clone());
        self.event(
            "session::message-added",
            json!({"session_id": s, "entry_id": entry, "parent_id": parent, "message": message,
                   "origin": {"turn_id": turn}, "timestamp": self.now}),
        );
        entry
    }

    fn assistant(&mut self, content: Vec<Value>, stop: &str) -> Value {
        json!({"role": "assistant", "content": content, "stop_reason": stop,
               "model": "claude-sonnet-4-5", "provider": "anthropic", "timestamp": self.now,
               "usage": {"input": self.rng.range(2_000, 90_000), "output": self.rng.range(40, 1_800),
                         "cache_read": self.rng.range(0, 60_000), "cache_write": 0}})
    }

    /// An assistant message streamed: added, then revised as it grows (each revision the
    /// whole message so far), the last revision with its function calls.
    fn streamed(&mut self, k: usize, turn: &str, calls: Vec<Value>, stop: &str) {
        let thinking = self.rng.chance(40).then(|| prose(&mut self.rng, 20, 120));
        let text = prose(&mut self.rng, 8, 80);
        let revisions = self.rng.range(1, 4);
        let first = self.assistant(vec![json!({"type": "text", "text": ""})], stop);
        let entry = self.added(k, turn, first);
        let s = self.sessions[k].0.clone();
        for rev in 1..=revisions {
            let cut = text.len() * rev / revisions;
            let mut cut = cut.min(text.len());
            while !text.is_char_boundary(cut) {
                cut += 1;
            }
            let mut content = Vec::new();
            if let Some(t) = &thinking {
                content.push(json!({"type": "thinking", "text": t, "signature": format!("sig{:016x}", self.rng.next())}));
            }
            content.push(json!({"type": "text", "text": &text[..cut]}));
            if rev == revisions {
                content.extend(calls.iter().cloned());
            }
            let m = self.assistant(content, stop);
            self.now += self.rng.range(20, 400) as u64;
            self.event(
                "session::message-updated",
                json!({"session_id": s, "entry_id": entry, "message": m, "revision": rev, "timestamp": self.now}),
            );
        }
    }

    /// A function call: (function id, arguments), as `fake_scale` makes them.
    fn function(&mut self) -> (&'static str, Value) {
        fake_scale::call(&mut self.rng)
    }

    fn result_text(&mut self, f: &str, args: &Value) -> (String, bool) {
        fake_scale::result_text(&mut self.rng, f, args)
    }

    /// A held call of session `k`: the gate's record, our decision, the engine's events.
    fn held(&mut self, k: usize, turn: &str, call: &str, f: &str, args: &Value) -> bool {
        let s = self.sessions[k].0.clone();
        let excerpt: String = args.to_string().chars().take(160).collect();
        let mut record = json!({"session_id": s, "turn_id": turn, "function_call_id": call, "function_id": f,
                   "kind": "function", "pending_at": self.now, "depth": 0,
                   "session_title": TITLES[k], "arguments_excerpt": excerpt});
        if let Some(access) = fake_scale::access_request(&mut self.rng, f, args) {
            record["kind"] = json!("filesystem_access");
            record["access_request"] = access;
        }
        self.event("approval::pending-created", record);
        let allow = !self.rng.chance(15);
        let data = if allow {
            json!({"session_id": s, "function_call_id": call, "decision": "allow", "access_duration": "once"})
        } else {
            json!({"session_id": s, "function_call_id": call, "decision": "deny", "reason": "Not before the tests pass."})
        };
        self.call(
            "approval::resolve",
            data,
            json!({"resolved": true, "turn_resumed": true}),
        );
        let mut resolved = json!({"session_id": s, "turn_id": turn, "function_call_id": call, "function_id": f,
                                  "outcome": if allow { "allow" } else { "deny" }, "resolved_at": self.now});
        if !allow {
            resolved["reason"] = json!("Not before the tests pass.");
        }
        self.event("approval::pending-resolved", resolved);
        allow
    }

    fn turn(&mut self) {
        self.turn += 1;
        let k = self.rng.range(0, self.sessions.len() - 1);
        let s = self.sessions[k].0.clone();
        let turn = format!("t-{}", self.turn);
        let message = format!("Please {}", prose(&mut self.rng, 6, 40));
        let key = uuid(&mut self.rng);
        self.call(
            "harness::send",
            json!({"session_id": s, "message": message, "idempotency_key": key}),
            json!({"accepted": true, "session_id": s, "turn_id": turn}),
        );
        self.event(
            "harness::turn-started",
            json!({"session_id": s, "turn_id": turn, "timestamp": self.now, "depth": 0}),
        );
        self.added(
            k,
            &turn,
            json!({"role": "user", "content": [{"type": "text", "text": message}], "timestamp": self.now}),
        );
        for _ in 0..self.rng.range(1, 4) {
            let mut blocks = Vec::new();
            let mut made = Vec::new();
            for _ in 0..self.rng.range(1, 3) {
                self.calls += 1;
                let id = format!("call_{:04x}{:08x}", self.calls, self.rng.next() as u32);
                let (f, args) = self.function();
                blocks.push(
                    json!({"type": "function_call", "id": id, "function_id": f, "arguments": args}),
                );
                made.push((id, f, args));
            }
            self.streamed(k, &turn, blocks, "function_call");
            for (id, f, args) in made {
                let gated = f != "filesystem::read" && self.rng.chance(40);
                let (text, is_error) = if gated && !self.held(k, &turn, &id, f, &args) {
                    (
                        "denied by the user: Not before the tests pass.".to_string(),
                        true,
                    )
                } else {
                    self.result_text(f, &args)
                };
                let ms = self.rng.range(5, 40_000);
                self.added(
                    k,
                    &turn,
                    json!({"role": "function_result", "function_call_id": id, "function_id": f,
                           "content": [{"type": "text", "text": text}], "details": {"duration_ms": ms},
                           "is_error": is_error, "timestamp": self.now}),
                );
            }
        }
        self.streamed(k, &turn, Vec::new(), "end");
        self.event(
            "harness::turn-completed",
            json!({"session_id": s, "turn_id": turn, "status": "completed", "timestamp": self.now, "terminal": true}),
        );
        self.metrics(&s);
    }
}

impl Iterator for IiiGen {
    type Item = RecLine;
    fn next(&mut self) -> Option<RecLine> {
        if self.queue.is_empty() {
            self.turn();
        }
        self.queue.pop_front()
    }
}
