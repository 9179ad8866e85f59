//! Scenario tests of the iii mapper (reference §11.3) against a small in-memory engine that
//! answers the mapper's calls the way the harness, approval-gate and session-manager do.

use std::collections::HashMap;

use serde_json::{Value, json};
use switchboard::backend::iii::mapping::{
    Mapper, OPT_ALLOW_ALWAYS, OPT_ALLOW_ONCE, OPT_DENY, OPT_FS_SESSION, OutCall, RecordedAnswers,
    canonical_decision,
};
use switchboard::core::gate::{Decision, GateKind};
use switchboard::core::msg::{BackendEvent, Command, TurnState};
use switchboard::core::transcript::{ItemKind, ItemOp, Level};

/// The engine side: state the mapper reads, and every call it made.
struct Eng {
    sessions: Vec<Value>,
    pending: Vec<Value>,
    status: HashMap<String, Value>,
    messages: HashMap<String, Vec<Value>>,
    resolve_result: Value,
    /// Records per `list-pending` page.
    page: usize,
    log: Vec<OutCall>,
}

impl Eng {
    fn new(sessions: &[&str]) -> Eng {
        Eng {
            sessions: sessions
                .iter()
                .map(|s| json!({"session_id": s, "title": format!("title {s}"), "status": "working"}))
                .collect(),
            pending: Vec::new(),
            status: HashMap::new(),
            messages: HashMap::new(),
            resolve_result: json!({"resolved": true, "turn_resumed": true}),
            page: 50,
            log: Vec::new(),
        }
    }

    fn answer(&mut self, c: &OutCall) -> Value {
        self.log.push(c.clone());
        let p = &c.payload;
        let sid = p
            .get("session_id")
            .or_else(|| p.get("root_session_id"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        match c.function_id.as_str() {
            "session::list" => json!({"sessions": self.sessions}),
            "harness::session-tree" => {
                json!({"root_session_id": sid, "complete": true, "sessions": [{"session_id": sid, "depth": 0}]})
            }
            "harness::status" => self.status.get(&sid).cloned().unwrap_or(Value::Null),
            "harness::metrics" => json!({"root_session_id": sid, "complete": false,
                "totals": {"sessions": 1, "turns": 2, "function_calls": 3, "function_call_errors": 0,
                    "input_tokens": 1000, "output_tokens": null, "reasoning_tokens": null,
                    "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": null},
                "by_session": []}),
            "session::messages" => {
                json!({"messages": self.messages.get(&sid).cloned().unwrap_or_default()})
            }
            "approval::list-pending" => {
                let all: Vec<&Value> = self
                    .pending
                    .iter()
                    .filter(|r| sid.is_empty() || r["session_id"] == sid.as_str())
                    .collect();
                let from: usize = p
                    .get("cursor")
                    .and_then(Value::as_str)
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0);
                let to = (from + self.page).min(all.len());
                let mut r = json!({"pending": all[from.min(to)..to]});
                if to < all.len() {
                    r["next_cursor"] = json!(to.to_string());
                }
                r
            }
            "approval::resolve" => {
                if self.resolve_result["resolved"] == true {
                    let call = p["function_call_id"].clone();
                    self.pending.retain(|r| {
                        !(r["session_id"] == sid.as_str() && r["function_call_id"] == call)
                    });
                }
                self.resolve_result.clone()
            }
            "approval::approve-always" => json!({"settings": {"mode": "manual"}}),
            "harness::stop" => json!({"stopping": true}),
            // Discovery: the kebab-case gate, bound on its hook, our bindings placed.
            "engine::functions::list" => json!({"functions": [
                {"function_id": "harness::send", "worker_name": "harness"},
                {"function_id": "approval::list-pending", "worker_name": "approval-gate"},
                {"function_id": "approval::resolve", "worker_name": "approval-gate"}]}),
            "engine::workers::list" => {
                json!({"workers": [{"name": "harness", "version": "1.8.25"}]})
            }
            "engine::registered-triggers::list" if p.get("trigger_type").is_none() => {
                json!({"registered_triggers": [
                {"id": "g", "trigger_type": "harness::hook::pre-trigger", "function_id": "approval::gate"},
                {"id": "b0", "trigger_type": "approval::pending-created", "function_id": "switchboard::x::on-approval-pending-created"}]})
            }
            "engine::registered-triggers::list" => json!({"triggers": [
                {"id": "b1", "trigger_type": "harness::hook::pre-trigger", "function_id": "approval::gate"},
                {"id": "b2", "trigger_type": "harness::hook::pre-trigger", "function_id": "approval::gate"},
                {"id": "b3", "trigger_type": "session::message-added", "function_id": "switchboard::x"}]}),
            "harness::send" => {
                json!({"accepted": true, "session_id": sid, "turn_id": "t2", "queued": true})
            }
            other => panic!("unexpected call {other}"),
        }
    }

    fn calls(&self, f: &str) -> Vec<&OutCall> {
        self.log.iter().filter(|c| c.function_id == f).collect()
    }
}

/// Run the mapper's calls against the engine until none are left; every event, in order.
fn pump(
    m: &mut Mapper,
    eng: &mut Eng,
    first: switchboard::backend::iii::mapping::Out,
    now: u64,
) -> Vec<(String, BackendEvent)> {
    let mut events = first.events;
    let mut queue: std::collections::VecDeque<OutCall> = first.calls.into();
    let mut n = 0;
    while let Some(c) = queue.pop_front() {
        n += 1;
        assert!(n < 10_000, "calls never end");
        let r = eng.answer(&c);
        let out = m.on_result(&c.function_id, &c.payload, &r, now);
        events.extend(out.events);
        queue.extend(out.calls);
    }
    assert!(
        eng.calls("harness::function::resolve").is_empty(),
        "never harness::function::resolve"
    );
    events
}

fn connect(eng: &mut Eng) -> (Mapper, Vec<(String, BackendEvent)>) {
    let mut m = Mapper::new("test");
    let first = m.reconnected();
    let ev = pump(&mut m, eng, first, 1_000);
    assert!(!m.syncing());
    (m, ev)
}

fn record(session: &str, call: &str, f: &str) -> Value {
    json!({"session_id": session, "turn_id": "t1", "function_call_id": call, "function_id": f,
        "kind": "function", "pending_at": 500, "arguments_excerpt": "{\"command\":\"ls …\"}", "depth": 0})
}

fn opened(ev: &[(String, BackendEvent)]) -> Vec<&switchboard::core::gate::Gate> {
    ev.iter()
        .filter_map(|(_, e)| match e {
            BackendEvent::GateOpen(g) => Some(&**g),
            _ => None,
        })
        .collect()
}

fn withdrawn(ev: &[(String, BackendEvent)]) -> Vec<&str> {
    ev.iter()
        .filter_map(|(_, e)| match e {
            BackendEvent::GateWithdrawn { id } => Some(id.as_str()),
            _ => None,
        })
        .collect()
}

fn option(id: &str) -> Decision {
    Decision::Option {
        option_id: id.into(),
        name: id.into(),
        allow: id != OPT_DENY,
    }
}

fn answer(
    m: &mut Mapper,
    eng: &mut Eng,
    gate: &str,
    d: Decision,
    now: u64,
) -> Vec<(String, BackendEvent)> {
    let out = m.command(
        "s1",
        &Command::Answer {
            gate_id: gate.into(),
            decision: d,
        },
        now,
    );
    pump(m, eng, out, now)
}

/// One held call on session s1, its card open.
fn held(eng: &mut Eng) -> (Mapper, String) {
    let (mut m, _) = connect(eng);
    let r = record("s1", "c1", "shell::exec");
    eng.pending.push(r.clone());
    let ev = m.on_event("approval::pending-created", &r, 2_000).events;
    let g = opened(&ev);
    assert_eq!(g.len(), 1);
    (m, g[0].id.clone())
}

#[test]
fn sessions_open_as_roots_with_titles() {
    let mut eng = Eng::new(&["s1", "s2"]);
    let mut m = Mapper::new("t");
    let out = m.reconnected();
    let mut all_roots = Vec::new();
    let mut queue: std::collections::VecDeque<OutCall> = out.calls.into();
    while let Some(c) = queue.pop_front() {
        let r = eng.answer(&c);
        let o = m.on_result(&c.function_id, &c.payload, &r, 1);
        all_roots.extend(o.roots);
        queue.extend(o.calls);
    }
    let keys: Vec<(&str, &str)> = all_roots
        .iter()
        .map(|r| (r.key.as_str(), r.title.as_str()))
        .collect();
    assert_eq!(keys, vec![("s1", "title s1"), ("s2", "title s2")]);
    // Per root: the tree, metrics, status and transcript were read.
    for f in [
        "harness::session-tree",
        "harness::metrics",
        "harness::status",
        "session::messages",
    ] {
        assert_eq!(eng.calls(f).len(), 2, "{f}");
    }
}

#[test]
fn approve_once_sends_one_resolve_and_the_card_closes() {
    let mut eng = Eng::new(&["s1"]);
    let (mut m, id) = held(&mut eng);
    let ev = answer(&mut m, &mut eng, &id, option(OPT_ALLOW_ONCE), 3_000);
    let resolves = eng.calls("approval::resolve");
    assert_eq!(resolves.len(), 1);
    assert_eq!(
        resolves[0].payload,
        json!({"session_id": "s1", "function_call_id": "c1", "decision": "allow"})
    );
    assert!(resolves[0].retry_safe);
    assert!(opened(&ev).is_empty());
    // The gate's own event for the decision closes nothing further and sends nothing.
    let out = m.on_event(
        "approval::pending-resolved",
        &json!({"session_id": "s1", "turn_id": "t1", "function_call_id": "c1", "function_id": "shell::exec", "outcome": "allow", "resolved_at": 3_100}),
        3_100,
    );
    assert!(out.calls.is_empty());
    assert!(out.events.is_empty(), "{:?}", out.events);
    assert_eq!(m.gate_count(), 0);
}

#[test]
fn approve_always_calls_approve_always_then_resolve() {
    let mut eng = Eng::new(&["s1"]);
    let (mut m, id) = held(&mut eng);
    answer(&mut m, &mut eng, &id, option(OPT_ALLOW_ALWAYS), 3_000);
    let order: Vec<&str> = eng
        .log
        .iter()
        .map(|c| c.function_id.as_str())
        .filter(|f| f.starts_with("approval::") && *f != "approval::list-pending")
        .collect();
    assert_eq!(order, vec!["approval::approve-always", "approval::resolve"]);
    assert_eq!(
        eng.calls("approval::approve-always")[0].payload,
        json!({"session_id": "s1", "function_id": "shell::exec"})
    );
    // Read back from the recording: the same decision.
    let mut rec = RecordedAnswers::default();
    rec.observe_record(&record("s1", "c1", "shell::exec"));
    let mut read = None;
    for c in &eng.log {
        if let Some(r) = rec.observe_call(&c.function_id, &c.payload) {
            read = Some(r.unwrap().2);
        }
    }
    assert_eq!(read, canonical_decision(&option(OPT_ALLOW_ALWAYS), false));
}

#[test]
fn deny_with_a_reason_the_model_reads() {
    let mut eng = Eng::new(&["s1"]);
    let (mut m, id) = held(&mut eng);
    let d = Decision::Deny {
        message: "use rg instead".into(),
        interrupt: false,
    };
    answer(&mut m, &mut eng, &id, d.clone(), 3_000);
    let r = &eng.calls("approval::resolve")[0].payload;
    assert_eq!(r["decision"], "deny");
    assert_eq!(r["reason"], "use rg instead");
    let mut rec = RecordedAnswers::default();
    let back = rec.observe_call("approval::resolve", r).unwrap().unwrap().2;
    assert_eq!(Some(back), canonical_decision(&d, false));
    // The deny option sends a reason too.
    let mut eng = Eng::new(&["s1"]);
    let (mut m, id) = held(&mut eng);
    answer(&mut m, &mut eng, &id, option(OPT_DENY), 3_000);
    let r = &eng.calls("approval::resolve")[0].payload;
    assert_eq!(r["decision"], "deny");
    assert!(!r["reason"].as_str().unwrap().is_empty());
}

#[test]
fn duplicate_and_reordered_events_one_card_highest_revision() {
    let mut eng = Eng::new(&["s1"]);
    let (mut m, _) = held(&mut eng);
    // The same record again: no second card.
    let again = m.on_event(
        "approval::pending-created",
        &record("s1", "c1", "shell::exec"),
        2_500,
    );
    assert!(opened(&again.events).is_empty());
    // Transcript: a child entry before its parent, then stale revisions.
    let msg = |text: &str| json!({"role": "assistant", "content": [{"type": "text", "text": text}], "stop_reason": "end"});
    let mut ev = Vec::new();
    ev.extend(m.on_event("session::message-added", &json!({"session_id": "s1", "entry_id": "e2", "parent_id": "e1", "message": msg("second"), "timestamp": 1}), 3_000).events);
    ev.extend(m.on_event("session::message-added", &json!({"session_id": "s1", "entry_id": "e1", "parent_id": null, "message": {"role": "user", "content": [{"type": "text", "text": "first"}]}, "timestamp": 2}), 3_000).events);
    ev.extend(m.on_event("session::message-updated", &json!({"session_id": "s1", "entry_id": "e2", "message": msg("rev 3"), "revision": 3, "timestamp": 3}), 3_000).events);
    ev.extend(m.on_event("session::message-updated", &json!({"session_id": "s1", "entry_id": "e2", "message": msg("rev 2"), "revision": 2, "timestamp": 4}), 3_000).events);
    ev.extend(m.on_event("session::message-added", &json!({"session_id": "s1", "entry_id": "e2", "parent_id": "e1", "message": msg("second"), "timestamp": 5}), 3_000).events);
    let texts: Vec<String> = ev
        .iter()
        .filter_map(|(_, e)| match e {
            BackendEvent::Item {
                op:
                    ItemOp::Upsert {
                        kind: ItemKind::User { text } | ItemKind::Assistant { text, .. },
                        ..
                    },
                ..
            } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, vec!["first", "second", "rev 3"]);
}

#[test]
fn kind_flip_to_filesystem_access_replaces_the_card() {
    let mut eng = Eng::new(&["s1"]);
    let (mut m, id) = held(&mut eng);
    let flipped = json!({"session_id": "s1", "turn_id": "t1", "function_call_id": "c1", "function_id": "shell::exec",
        "kind": "folder_access", "pending_at": 600,
        "grant_request": {"dir": "/srv/data", "offending_path": "/srv/data/x", "error_code": "S215"}});
    let ev = m
        .on_event("approval::pending-created", &flipped, 2_600)
        .events;
    assert_eq!(withdrawn(&ev), vec![id.as_str()]);
    let g = opened(&ev);
    assert_eq!(g.len(), 1);
    assert_ne!(g[0].id, id);
    let GateKind::Permission(p) = &g[0].kind else {
        panic!()
    };
    let ids: Vec<&str> = p.options.iter().map(|o| o.option_id.as_str()).collect();
    assert!(ids.contains(&OPT_FS_SESSION), "{ids:?}");
    assert_eq!(p.blocked_path.as_deref(), Some("/srv/data/x"));
    let new_id = g[0].id.clone();
    answer(&mut m, &mut eng, &new_id, option(OPT_FS_SESSION), 3_000);
    // A `folder_access` record is the gate generation that took `grant_scope` (its successor,
    // with `filesystem_access` records, takes `access_duration`).
    let sent = &eng.calls("approval::resolve")[0].payload;
    assert_eq!(sent["grant_scope"], "session", "{sent}");
    assert!(sent.get("access_duration").is_none(), "{sent}");
}

#[test]
fn a_gate_resolved_while_offline_disappears_after_reconnect() {
    let mut eng = Eng::new(&["s1"]);
    let (mut m, id) = held(&mut eng);
    let off = m.offline();
    assert!(off.events.iter().any(|(_, e)| matches!(e, BackendEvent::Info { key, value: Some(v) } if key == "connection" && v.contains("reconnecting"))));
    // Resolved by another console meanwhile.
    eng.pending.clear();
    let first = m.reconnected();
    let ev = pump(&mut m, &mut eng, first, 5_000);
    assert_eq!(withdrawn(&ev), vec![id.as_str()]);
    assert!(!ev.iter().any(|(_, e)| matches!(
        e,
        BackendEvent::GateClosed { .. } | BackendEvent::GateAnswered { .. }
    )));
    assert_eq!(m.gate_count(), 0);
}

#[test]
fn resolved_false_refreshes_silently() {
    let mut eng = Eng::new(&["s1"]);
    let (mut m, id) = held(&mut eng);
    eng.resolve_result = json!({"resolved": false});
    let ev = answer(&mut m, &mut eng, &id, option(OPT_ALLOW_ONCE), 3_000);
    assert!(
        !ev.iter().any(|(_, e)| matches!(
            e,
            BackendEvent::Protocol {
                level: Level::Error | Level::Warn,
                ..
            }
        )),
        "{ev:?}"
    );
    // The record is still held: the card is back under a fresh id; answering it works.
    let g = opened(&ev);
    assert_eq!(g.len(), 1);
    assert_ne!(g[0].id, id);
    // Already decided elsewhere (record gone): nothing comes back, nothing is an error.
    let mut eng = Eng::new(&["s1"]);
    let (mut m, id) = held(&mut eng);
    eng.resolve_result = json!({"resolved": false});
    eng.pending.clear();
    let ev = answer(&mut m, &mut eng, &id, option(OPT_ALLOW_ONCE), 3_000);
    assert!(opened(&ev).is_empty());
    assert!(
        !ev.iter()
            .any(|(_, e)| matches!(e, BackendEvent::Protocol { .. })),
        "{ev:?}"
    );
    assert_eq!(m.gate_count(), 0);
}

#[test]
fn stuck_after_approval_797_is_flagged_after_ten_seconds() {
    let mut eng = Eng::new(&["s1"]);
    let (mut m, id) = held(&mut eng);
    answer(&mut m, &mut eng, &id, option(OPT_ALLOW_ONCE), 3_000);
    // The gate re-held the call without a record (duplicate hook bindings).
    eng.status.insert(
        "s1".into(),
        json!({"session_id": "s1", "turn_id": "t1", "status": "awaiting_functions", "step": 2,
            "turn_count": 1, "children": [], "pending_function_calls": ["c1"], "expects_wake": false}),
    );
    let early = m.tick(12_999);
    assert!(early.calls.is_empty() && early.events.is_empty());
    let out = m.tick(13_000);
    let ev = pump(&mut m, &mut eng, out, 13_000);
    assert!(m.stuck("s1"));
    assert!(ev.iter().any(|(_, e)| matches!(e, BackendEvent::Protocol { level: Level::Warn, text } if text.contains("iii-hq/workers#797"))));
    assert!(ev.iter().any(|(_, e)| matches!(e, BackendEvent::Info { key, value: Some(v) } if key == "stuck" && v.contains("harness::stop"))));
    // The diagnostic counted the duplicate hook bindings.
    assert!(ev.iter().any(|(_, e)| matches!(e, BackendEvent::Protocol { text, .. } if text.starts_with("2 approval::gate") && text.contains("confirmed"))));
    // The remedy offered: stop.
    let out = m.command("s1", &Command::Interrupt, 14_000);
    assert_eq!(out.calls[0].function_id, "harness::stop");
}

#[test]
fn an_allowed_call_that_ran_is_not_flagged() {
    let mut eng = Eng::new(&["s1"]);
    let (mut m, id) = held(&mut eng);
    answer(&mut m, &mut eng, &id, option(OPT_ALLOW_ONCE), 3_000);
    eng.status.insert(
        "s1".into(),
        json!({"session_id": "s1", "status": "running", "step": 3, "turn_count": 1, "children": [], "expects_wake": false}),
    );
    let out = m.tick(20_000);
    let ev = pump(&mut m, &mut eng, out, 20_000);
    assert!(!m.stuck("s1"));
    assert!(
        !ev.iter().any(
            |(_, e)| matches!(e, BackendEvent::Protocol { text, .. } if text.contains("#797"))
        )
    );
    // Checked once: later ticks read nothing more.
    assert!(m.tick(40_000).calls.is_empty());
}

#[test]
fn stop_shows_stopping_until_cancelled_and_ignores_repeats() {
    let mut eng = Eng::new(&["s1"]);
    let (mut m, _) = connect(&mut eng);
    let out = m.command("s1", &Command::Interrupt, 2_000);
    assert_eq!(out.calls.len(), 1);
    assert_eq!(out.calls[0].payload, json!({"session_id": "s1"}));
    assert!(out.events.iter().any(|(_, e)| matches!(e, BackendEvent::Info { key, value: Some(v) } if key == "stop" && v == "stopping…")));
    pump(&mut m, &mut eng, out, 2_000);
    for t in 0..6 {
        let again = m.command("s1", &Command::Interrupt, 2_100 + t);
        assert!(again.calls.is_empty() && again.events.is_empty());
    }
    let done = m.on_event(
        "harness::turn-completed",
        &json!({"session_id": "s1", "turn_id": "t1", "status": "cancelled", "timestamp": 1, "terminal": true}),
        3_000,
    );
    assert!(
        done.events
            .iter()
            .any(|(_, e)| matches!(e, BackendEvent::Info { key, value: None } if key == "stop"))
    );
    assert!(
        done.events
            .iter()
            .any(|(_, e)| *e == BackendEvent::Turn(TurnState::Idle))
    );
    // A new press after the stop completed sends again.
    assert_eq!(m.command("s1", &Command::Interrupt, 4_000).calls.len(), 1);
}

#[test]
fn non_terminal_turn_completion_keeps_the_session_running() {
    let mut eng = Eng::new(&["s1"]);
    let (mut m, _) = connect(&mut eng);
    let out = m.on_event(
        "harness::turn-completed",
        &json!({"session_id": "s1", "turn_id": "t1", "status": "completed", "timestamp": 1, "terminal": false}),
        2_000,
    );
    assert!(
        out.events
            .iter()
            .any(|(_, e)| *e == BackendEvent::Turn(TurnState::Running))
    );
    assert!(
        !out.events
            .iter()
            .any(|(_, e)| *e == BackendEvent::Turn(TurnState::Idle))
    );
}

#[test]
fn quitting_leaves_held_calls_held() {
    let mut eng = Eng::new(&["s1"]);
    let (mut m, id) = held(&mut eng);
    // What the core sends for open cards on exit, then the shutdown.
    let a = m.command(
        "s1",
        &Command::Answer {
            gate_id: id,
            decision: Decision::Cancelled,
        },
        3_000,
    );
    let b = m.command("s1", &Command::Shutdown, 3_000);
    assert!(a.calls.is_empty() && b.calls.is_empty());
    assert!(eng.calls("approval::resolve").is_empty());
}

/// The assistant texts the events upsert, in order.
fn assistant_texts(ev: &[(String, BackendEvent)]) -> Vec<&str> {
    ev.iter()
        .filter_map(|(_, e)| match e {
            BackendEvent::Item {
                op:
                    ItemOp::Upsert {
                        kind: ItemKind::Assistant { text, .. },
                        ..
                    },
                ..
            } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn events_during_the_reconnect_reads_are_buffered_and_reconciled() {
    let mut eng = Eng::new(&["s1"]);
    eng.messages.insert(
        "s1".into(),
        vec![json!({"entry_id": "e1", "message": {"role": "assistant", "content": [{"type": "text", "text": "hydrated"}]}})],
    );
    let (mut m, _) = connect(&mut eng);
    m.offline();
    let first = m.reconnected();
    assert!(m.syncing());
    // Arrives before the reads answer: held, then applied over the re-read (revision 4 > -1).
    let mid = m.on_event(
        "session::message-updated",
        &json!({"session_id": "s1", "entry_id": "e1", "message": {"role": "assistant", "content": [{"type": "text", "text": "live rev 4"}]}, "revision": 4, "timestamp": 1}),
        5_000,
    );
    assert!(mid.events.is_empty());
    let ev = pump(&mut m, &mut eng, first, 5_000);
    assert!(!m.syncing());
    // The re-read brings e1 back unchanged, which sends nothing; the held event then applies.
    let texts = assistant_texts(&ev);
    assert_eq!(texts, vec!["live rev 4"]);
}

#[test]
fn list_pending_follows_every_page() {
    let mut eng = Eng::new(&["s1"]);
    eng.page = 2;
    for i in 0..5 {
        eng.pending.push(record("s1", &format!("c{i}"), "fs::read"));
    }
    let (m, ev) = connect(&mut eng);
    assert_eq!(opened(&ev).len(), 5);
    assert_eq!(m.gate_count(), 5);
    assert_eq!(eng.calls("approval::list-pending").len(), 3);
}

#[test]
fn prompt_sends_with_an_idempotency_key_and_shows_queued() {
    let mut eng = Eng::new(&["s1"]);
    let (mut m, _) = connect(&mut eng);
    let out = m.command("s1", &Command::Prompt("hello".into()), 2_000);
    let p = out.calls[0].payload.clone();
    assert_eq!(out.calls[0].function_id, "harness::send");
    assert_eq!(p["message"], "hello");
    let key = p["idempotency_key"].as_str().unwrap().to_string();
    let ev = pump(&mut m, &mut eng, out, 2_000);
    assert!(ev.iter().any(|(_, e)| matches!(e, BackendEvent::Item { op: ItemOp::Push(ItemKind::System { text, .. }), .. } if text.contains("queued"))));
    let p2 = m
        .command("s1", &Command::Prompt("hello".into()), 2_001)
        .calls[0]
        .payload
        .clone();
    assert_ne!(p2["idempotency_key"].as_str().unwrap(), key);
}

#[test]
fn a_late_stale_event_never_overwrites_the_re_read() {
    let mut eng = Eng::new(&["s1"]);
    let text = |t: &str| json!({"role": "assistant", "content": [{"type": "text", "text": t}]});
    eng.messages.insert(
        "s1".into(),
        vec![json!({"entry_id": "e1", "message": text("v1")})],
    );
    let (mut m, _) = connect(&mut eng);
    let upd = |rev: i64, t: &str| json!({"session_id": "s1", "entry_id": "e1", "revision": rev, "message": text(t), "timestamp": 1});
    m.on_event("session::message-updated", &upd(5, "v5"), 2_000);
    m.offline();
    // Changed to v7 while offline (that event was never delivered).
    eng.messages.insert(
        "s1".into(),
        vec![json!({"entry_id": "e1", "message": text("v7")})],
    );
    let first = m.reconnected();
    // An old revision delivered late, during the reads.
    m.on_event("session::message-updated", &upd(3, "v3"), 3_000);
    let ev = pump(&mut m, &mut eng, first, 3_000);
    let shown = assistant_texts(&ev);
    assert_eq!(shown, vec!["v7"]);
    // After the re-read, hydrated content no longer overrides live revisions.
    assert!(
        m.on_event("session::message-updated", &upd(5, "v5 again"), 4_000)
            .events
            .is_empty()
    );
    assert!(
        !m.on_event("session::message-updated", &upd(8, "v8"), 4_000)
            .events
            .is_empty()
    );
}

/// Reference benchmark shape: 200 sessions, the first holding 2,000 messages, 50 held calls;
/// the whole reconnect re-read goes through the mapper, every card and row once.
#[test]
fn a_reconnect_at_scale() {
    let names: Vec<String> = (0..200).map(|i| format!("s{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut eng = Eng::new(&refs);
    eng.messages.insert(
        "s0".into(),
        (0..2_000)
            .map(|i| json!({"entry_id": format!("e{i}"), "message": {"role": if i % 2 == 0 { "user" } else { "assistant" },
                "content": [{"type": "text", "text": format!("message {i}")}]}}))
            .collect(),
    );
    for i in 0..50 {
        eng.pending
            .push(record("s0", &format!("c{i}"), "shell::exec"));
    }
    let t = std::time::Instant::now();
    let (mut m, _) = connect(&mut eng);
    m.offline();
    // While we are away, 10 of the 2,000 messages are edited.
    for i in (0..2_000).step_by(200) {
        eng.messages.get_mut("s0").unwrap()[i]["message"]["content"][0]["text"] =
            json!(format!("message {i}, edited"));
    }
    let first = m.reconnected();
    let ev = pump(&mut m, &mut eng, first, 9_000);
    let took = t.elapsed();
    eprintln!("connect + reconnect re-read at scale: {took:?}");
    assert_eq!(m.gate_count(), 50);
    // The re-read sends only the rows that changed and opens no second card.
    assert!(opened(&ev).is_empty());
    let rows = ev
        .iter()
        .filter(|(r, e)| r == "s0" && matches!(e, BackendEvent::Item { .. }))
        .count();
    assert_eq!(rows, 10);
}
