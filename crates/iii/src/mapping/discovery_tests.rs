//! Discovery (issue 23 items 2 and 3): which gate generation, its ids, and the warning.

use serde_json::{Value, json};

use super::*;
use switchboard_core::gate::Decision;
use switchboard_core::msg::Command;

/// An engine with these functions and placed bindings.
fn engine(functions: &[&str], triggers: &[(&str, &str)]) -> impl Fn(&str, &Value) -> Value {
    let functions: Vec<Value> = functions
        .iter()
        .map(|f| json!({"function_id": f, "worker_name": if f.starts_with("harness::") {"harness"} else {"approval-gate"}}))
        .collect();
    let triggers: Vec<Value> = triggers
        .iter()
        .map(|(t, f)| json!({"trigger_type": t, "function_id": f}))
        .collect();
    move |f: &str, _req: &Value| match f {
        discovery::FUNCTIONS => json!({"functions": functions}),
        discovery::TRIGGERS => json!({"registered_triggers": triggers}),
        discovery::WORKERS => json!({"workers": [{"name": "harness", "version": "1.8.25"}]}),
        "session::list" => {
            json!({"sessions": [{"session_id": "s1", "title": "Fix the build", "status": "working"}]})
        }
        "approval::list-pending" | "approval::list_pending" => json!({"pending": [
            {"session_id": "s1", "turn_id": "t", "function_call_id": "c1", "function_id": "shell::exec",
             "pending_at": 5, "expires_at": 99, "arguments_excerpt": {"command": "ls"}}]}),
        _ => json!({}),
    }
}

/// Answer every call (and what their answers lead to); every call made and every event.
fn drive(m: &mut Mapper, out: Out, e: &impl Fn(&str, &Value) -> Value) -> (Vec<OutCall>, Out) {
    let mut all = Out::default();
    let mut calls = out.calls.clone();
    all.events.extend(out.events);
    let mut made = Vec::new();
    while let Some(c) = calls.pop() {
        assert!(made.len() < 200, "the mapper keeps calling");
        let o = m.on_result(
            &c.function_id,
            &c.payload,
            &e(&c.function_id, &c.payload),
            10,
        );
        calls.extend(o.calls.clone());
        all.events.extend(o.events);
        made.push(c);
    }
    (made, all)
}

fn connect(e: &impl Fn(&str, &Value) -> Value) -> (Mapper, Vec<OutCall>, Out) {
    let mut m = Mapper::new("t");
    m.set_handlers("switchboard::me::");
    let out = m.reconnected();
    let (calls, out) = drive(&mut m, out, e);
    (m, calls, out)
}

fn blind(out: &Out, root: &str) -> Option<Option<String>> {
    out.events.iter().rev().find_map(|(r, e)| match e {
        BackendEvent::Blind(b) if r == root => Some(b.clone()),
        _ => None,
    })
}

fn fact(out: &Out, key: &str) -> Option<String> {
    out.events.iter().rev().find_map(|(r, e)| match e {
        BackendEvent::Info { key: k, value } if k == key && r.is_empty() => value.clone(),
        _ => None,
    })
}

fn called<'a>(calls: &'a [OutCall], f: &str) -> Vec<&'a OutCall> {
    calls.iter().filter(|c| c.function_id == f).collect()
}

const KEBAB: [&str; 4] = [
    "harness::send",
    "approval::list-pending",
    "approval::resolve",
    "approval::approve-always",
];
const SNAKE: [&str; 4] = [
    "harness::send",
    "approval::list_pending",
    "approval::resolve",
    "approval::approve_always",
];

#[test]
fn the_kebab_gate_bound_and_heard_is_seen_and_its_ids_are_called() {
    let e = engine(
        &KEBAB,
        &[
            ("harness::hook::pre-trigger", "approval::gate"),
            (
                "approval::pending-created",
                "switchboard::me::on-approval-pending-created",
            ),
        ],
    );
    let (m, calls, out) = connect(&e);
    assert_eq!(blind(&out, "").flatten(), None, "no warning");
    assert_eq!(called(&calls, "approval::list-pending").len(), 1);
    assert!(called(&calls, "approval::list_pending").is_empty());
    let f = fact(&out, "approval gate").unwrap();
    assert!(f.contains("kebab-case") && f.contains("pre-trigger"), "{f}");
    assert_eq!(fact(&out, "harness").as_deref(), Some("v1.8.25"));
    assert_eq!(fact(&out, "sessions").as_deref(), Some("1"));
    assert!(m.gate_open("s1", "c1").is_some());
    // The reads at connect run once per session (item 4).
    for f in [
        "harness::status",
        "harness::session-tree",
        "harness::metrics",
        "session::messages",
    ] {
        assert_eq!(called(&calls, f).len(), 1, "{f}: {calls:?}");
    }
    assert_eq!(called(&calls, "session::list").len(), 1);
}

#[test]
fn the_snake_gate_is_listed_decided_and_heard_by_its_own_names() {
    let e = engine(
        &SNAKE,
        &[
            ("harness::hook::pre_dispatch", "approval::gate"),
            (
                "approval::pending_created",
                "switchboard::me::on-approval-pending_created",
            ),
        ],
    );
    let (mut m, calls, out) = connect(&e);
    assert_eq!(blind(&out, "").flatten(), None);
    assert_eq!(called(&calls, "approval::list_pending").len(), 1);
    assert!(called(&calls, "approval::list-pending").is_empty());
    assert!(fact(&out, "approval gate").unwrap().contains("snake_case"));
    // A held call pushed under the older event name opens a card.
    let ev = m.on_event(
        "approval::pending_created",
        &json!({"session_id": "s1", "turn_id": "t", "function_call_id": "c2", "function_id": "fs::write",
                "pending_at": 7, "expires_at": 99, "status": "pending"}),
        11,
    );
    assert!(
        ev.events
            .iter()
            .any(|(_, e)| matches!(e, BackendEvent::GateOpen(_)))
    );
    // "Allow always" goes through the older id, then the shared resolve.
    let id = m.gate_open("s1", "c2").unwrap().to_string();
    let out = m.command(
        "s1",
        &Command::Answer {
            gate_id: id,
            decision: Decision::Allow {
                updated_input: None,
                always: true,
            },
        },
        12,
    );
    assert_eq!(out.calls[0].function_id, "approval::approve_always");
    let out = m.on_result(
        "approval::approve_always",
        &out.calls[0].payload,
        &json!({}),
        13,
    );
    assert_eq!(out.calls[0].function_id, "approval::resolve");
    assert_eq!(out.calls[0].payload["decision"], "allow");
    // Resolved under the older name: the card is gone for good.
    m.on_event(
        "approval::pending_resolved",
        &json!({"session_id": "s1", "function_call_id": "c1", "function_id": "shell::exec", "outcome": "deny", "turn_id": "t", "resolved_at": 14}),
        14,
    );
    assert!(m.gate_open("s1", "c1").is_none());
}

#[test]
fn a_missing_gate_an_unknown_one_an_unbound_one_or_an_unplaced_binding_warn() {
    // (what the warning says, functions listed, bindings placed)
    type Case<'a> = (&'a str, Vec<&'a str>, Vec<(&'a str, &'a str)>);
    let cases: Vec<Case> = vec![
        ("no approval gate", vec!["harness::send"], vec![]),
        (
            "does not know",
            vec![
                "harness::send",
                "approval::list_pending",
                "approval::consume",
                "approval::lookup_record",
            ],
            vec![],
        ),
        (
            "does not know",
            vec!["harness::send", "approval::inbox-v9"],
            vec![],
        ),
        (
            "bound on no harness hook",
            KEBAB.to_vec(),
            vec![("approval::pending-created", "switchboard::me::on-x")],
        ),
        (
            "not placed",
            KEBAB.to_vec(),
            // Another switchboard's binding is not ours.
            vec![
                ("harness::hook::pre-trigger", "approval::gate"),
                ("approval::pending-created", "switchboard::other::on-x"),
            ],
        ),
        (
            "not placed",
            SNAKE.to_vec(),
            // Our kebab binding does not hear a snake gate.
            vec![
                ("harness::hook::pre_dispatch", "approval::gate"),
                ("approval::pending-created", "switchboard::me::on-x"),
            ],
        ),
    ];
    for (why, functions, triggers) in cases {
        let e = engine(&functions, &triggers);
        let (mut m, _, out) = connect(&e);
        let w = blind(&out, "")
            .flatten()
            .unwrap_or_else(|| panic!("{why}: no warning"));
        assert!(
            w.contains(BLIND) && w.contains("unapproved") && w.contains(why),
            "{w}"
        );
        // Every root carries it too.
        assert_eq!(
            blind(&out, "s1").flatten().as_deref(),
            Some(w.as_str()),
            "{why}"
        );
        // It stands: discovery runs again a few seconds later, and only then.
        assert!(m.tick(11).calls.is_empty());
        let again = m.tick(10 + discovery::RETRY_MS);
        assert_eq!(called(&again.calls, discovery::FUNCTIONS).len(), 1, "{why}");
    }
}

#[test]
fn discovery_that_fails_is_unsure_and_says_so() {
    let mut m = Mapper::new("t");
    let out = m.reconnected();
    let mut events = Out::default();
    for c in out.calls {
        let o = if c.function_id == discovery::FUNCTIONS {
            m.on_error(&c.function_id, &c.payload, "function_not_found", "no", 5)
        } else {
            m.on_result(&c.function_id, &c.payload, &json!({}), 5)
        };
        events.events.extend(o.events);
    }
    let w = blind(&events, "").flatten().unwrap();
    assert!(w.contains("cannot tell") && w.contains("unapproved"), "{w}");
}

#[test]
fn a_gate_that_joins_later_clears_the_warning_and_its_calls_are_read() {
    let none = engine(&["harness::send"], &[]);
    let (mut m, _, out) = connect(&none);
    assert!(blind(&out, "").flatten().is_some());
    // The gate's worker joins: the engine says so.
    let ev = m.on_event("engine::workers-available", &json!({"workers": []}), 20);
    let kebab = engine(
        &KEBAB,
        &[
            ("harness::hook::pre-trigger", "approval::gate"),
            ("approval::pending-created", "switchboard::me::on-x"),
        ],
    );
    let (calls, out) = drive(&mut m, ev, &kebab);
    assert_eq!(blind(&out, ""), Some(None), "the warning is withdrawn");
    assert_eq!(blind(&out, "s1"), Some(None));
    assert_eq!(called(&calls, "approval::list-pending").len(), 1);
    assert_eq!(
        called(&calls, "session::list").len(),
        1,
        "a join re-reads sessions"
    );
    assert!(m.gate_open("s1", "c1").is_some());
    // A second look shortly after (the worker may still have been registering).
    let later = m.tick(20 + discovery::SETTLE_MS);
    assert_eq!(called(&later.calls, discovery::FUNCTIONS).len(), 1);
}

#[test]
fn the_harness_ready_event_runs_discovery_too_and_overlapping_asks_run_once_more() {
    let e = engine(
        &KEBAB,
        &[
            ("harness::hook::pre-trigger", "approval::gate"),
            ("approval::pending-created", "switchboard::me::on-x"),
        ],
    );
    let (mut m, _, _) = connect(&e);
    let first = m.on_event("harness::ready", &json!({}), 30);
    assert_eq!(called(&first.calls, discovery::FUNCTIONS).len(), 1);
    // Asked again while it runs: no second set of reads now, one after it ends.
    let second = m.on_event("engine::workers-available", &json!({}), 31);
    assert!(called(&second.calls, discovery::FUNCTIONS).is_empty());
    let (calls, _) = drive(&mut m, first, &e);
    assert_eq!(called(&calls, discovery::FUNCTIONS).len(), 2);
}

#[test]
fn a_new_root_opened_while_blind_carries_the_warning() {
    let (mut m, _, _) = connect(&engine(&["harness::send"], &[]));
    let out = m.on_event(
        "session::created",
        &json!({"session_id": "s9", "title": "later"}),
        40,
    );
    let w = blind(&out, "s9").flatten().unwrap_or_default();
    assert!(w.contains("unapproved"), "{out:?}");
}

#[test]
fn answers_of_two_discovery_rounds_interleaved_still_conclude_on_complete_listings() {
    let e = engine(
        &KEBAB,
        &[
            ("harness::hook::pre-trigger", "approval::gate"),
            ("approval::pending-created", "switchboard::me::on-x"),
        ],
    );
    let mut m = Mapper::new("t");
    m.set_handlers("switchboard::me::");
    // The engine tells us of our own registration before we are live: no discovery yet.
    let early = m.on_event(
        "engine::workers-available",
        &json!({"event": "worker_metadata_updated"}),
        1,
    );
    assert!(early.calls.is_empty());
    let (_, _) = drive(&mut m, Out::default(), &e);
    // Live, then a worker joins while the connect discovery's answers are still out.
    let first = m.reconnected();
    let second = m.on_event(
        "engine::workers-available",
        &json!({"event": "worker_connected"}),
        2,
    );
    assert!(
        called(&second.calls, discovery::FUNCTIONS).is_empty(),
        "one round at a time"
    );
    // Answers arrive out of order: functions, workers, then triggers last.
    let mut order = first.calls.clone();
    order.sort_by_key(|c| match c.function_id.as_str() {
        discovery::FUNCTIONS => 0,
        discovery::WORKERS => 1,
        discovery::TRIGGERS => 3,
        _ => 2,
    });
    let mut events = Out::default();
    let mut rest = Vec::new();
    for c in order {
        let o = m.on_result(
            &c.function_id,
            &c.payload,
            &e(&c.function_id, &c.payload),
            3,
        );
        rest.extend(o.calls.clone());
        events.events.extend(o.events);
    }
    let (_, more) = drive(
        &mut m,
        Out {
            calls: rest,
            ..Out::default()
        },
        &e,
    );
    events.events.extend(more.events);
    assert_eq!(blind(&events, "").flatten(), None, "{events:?}");
}

#[test]
fn a_listing_taken_before_an_allow_and_delivered_after_it_does_not_bring_the_card_back() {
    let e = engine(
        &KEBAB,
        &[
            ("harness::hook::pre-trigger", "approval::gate"),
            ("approval::pending-created", "switchboard::me::on-x"),
        ],
    );
    let (mut m, _, _) = connect(&e);
    let id = m.gate_open("s1", "c1").unwrap().to_string();
    // A listing goes out (the gate takes it now) ...
    let mut listing = Out::default();
    m.start_listing(&mut listing, None);
    let req = listing.calls[0].clone();
    // ... the human allows, the gate resolves and says so ...
    let out = m.command(
        "s1",
        &Command::Answer {
            gate_id: id,
            decision: Decision::Allow {
                updated_input: None,
                always: false,
            },
        },
        20,
    );
    m.on_result(
        "approval::resolve",
        &out.calls[0].payload,
        &json!({"resolved": true}),
        21,
    );
    m.on_event(
        "approval::pending-resolved",
        &json!({"session_id": "s1", "function_call_id": "c1", "function_id": "shell::exec", "outcome": "allow", "turn_id": "t", "resolved_at": 21}),
        21,
    );
    // ... and only then does the stale listing arrive, still naming the call.
    let late = m.on_result(
        &req.function_id,
        &req.payload,
        &e(&req.function_id, &req.payload),
        22,
    );
    assert!(
        !late
            .events
            .iter()
            .any(|(_, e)| matches!(e, BackendEvent::GateOpen(_))),
        "{late:?}"
    );
    assert!(m.gate_open("s1", "c1").is_none());
    // A late copy of its pending-created (delivery is at-least-once) opens nothing either.
    let dup = m.on_event(
        "approval::pending-created",
        &json!({"session_id": "s1", "turn_id": "t", "function_call_id": "c1", "function_id": "shell::exec",
                "pending_at": 5, "expires_at": 99, "arguments_excerpt": {"command": "ls"}}),
        23,
    );
    assert!(
        !dup.events
            .iter()
            .any(|(_, e)| matches!(e, BackendEvent::GateOpen(_)))
    );
    // A listing taken after the resolution that still names it is believed.
    let mut again = Out::default();
    m.start_listing(&mut again, None);
    let req = again.calls[0].clone();
    let fresh = m.on_result(
        &req.function_id,
        &req.payload,
        &e(&req.function_id, &req.payload),
        24,
    );
    assert!(
        fresh
            .events
            .iter()
            .any(|(_, e)| matches!(e, BackendEvent::GateOpen(_)))
    );
}

#[test]
fn a_turn_awaiting_held_calls_reads_waiting_for_a_root_and_a_sub_agent() {
    use switchboard_core::msg::TurnState;
    use switchboard_core::tree::NodeStatus;
    let e = engine(&KEBAB, &[("harness::hook::pre-trigger", "approval::gate")]);
    let (mut m, _, _) = connect(&e);
    let root = m.on_result(
        "harness::status",
        &json!({"session_id": "s1"}),
        &json!({"session_id": "s1", "status": "awaiting_functions", "pending_function_calls": ["c1"],
                "children": [{"session_id": "kid", "turn_id": "t", "function_call_id": "spawn"}]}),
        50,
    );
    assert!(
        root.events
            .iter()
            .any(|(_, e)| *e == BackendEvent::Turn(TurnState::RequiresAction))
    );
    let kid = m.on_result(
        "harness::status",
        &json!({"session_id": "kid"}),
        &json!({"session_id": "kid", "status": "awaiting_functions", "pending_function_calls": ["c7"]}),
        51,
    );
    assert!(kid.events.iter().any(|(_, e)| matches!(e,
        BackendEvent::NodeUpdate { key, patch } if key == "iii:kid" && patch.status == Some(NodeStatus::Waiting))),
        "{kid:?}");
}

/// The hostile review's cases (each failed before its fix).
#[path = "discovery_review_tests.rs"]
mod review;
