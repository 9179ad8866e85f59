//! The hostile review's cases of issue 23 (each failed before its fix).
use super::*;

fn gate_bound() -> Vec<(&'static str, &'static str)> {
    vec![
        ("harness::hook::pre-trigger", "approval::gate"),
        ("approval::pending-created", "switchboard::me::on-x"),
    ]
}

#[test]
fn a_root_first_seen_during_a_re_read_gets_the_standing_warning() {
    let none = engine(&["harness::send"], &[]);
    let (mut m, _, _) = connect(&none);
    // Reconnect: the session list beats discovery, and names a new root.
    let out = m.reconnected();
    let list = out
        .calls
        .iter()
        .find(|c| c.function_id == "session::list")
        .unwrap()
        .clone();
    let got = m.on_result(
        &list.function_id,
        &list.payload,
        &json!({"sessions": [{"session_id": "s7", "title": "new while away"}]}),
        30,
    );
    assert!(
        blind(&got, "s7")
            .flatten()
            .is_some_and(|w| w.contains("unapproved")),
        "{got:?}"
    );
}

#[test]
fn seeing_again_on_a_retry_lists_the_calls_held_meanwhile() {
    // Our binding is not placed yet: unheard.
    let unheard = engine(&KEBAB, &[("harness::hook::pre-trigger", "approval::gate")]);
    let (mut m, _, out) = connect(&unheard);
    assert!(blind(&out, "").flatten().unwrap().contains("not placed"));
    let retry = m.tick(10 + discovery::RETRY_MS);
    let (calls, out) = drive(&mut m, retry, &engine(&KEBAB, &gate_bound()));
    assert_eq!(blind(&out, ""), Some(None));
    assert_eq!(
        called(&calls, "approval::list-pending").len(),
        1,
        "{calls:?}"
    );
}

#[test]
fn a_join_whose_first_look_is_too_early_is_seen_by_the_settling_look() {
    let none = engine(&["harness::send"], &[]);
    let (mut m, _, _) = connect(&none);
    let join = m.on_event(
        "engine::workers-available",
        &json!({"event": "worker_connected"}),
        100,
    );
    // The worker has not registered yet: still blind.
    let (calls, out) = drive(&mut m, join, &none);
    // The warning stands as it was (nothing new said), and nothing is listed.
    assert_eq!(blind(&out, ""), None, "{out:?}");
    assert!(called(&calls, "approval::list-pending").is_empty());
    // The settling look comes at +SETTLE_MS, not after the 5 s retry.
    let settle = m.tick(100 + discovery::SETTLE_MS);
    assert_eq!(called(&settle.calls, discovery::FUNCTIONS).len(), 1);
    let (calls, out) = drive(&mut m, settle, &engine(&KEBAB, &gate_bound()));
    assert_eq!(blind(&out, ""), Some(None));
    assert_eq!(called(&calls, "approval::list-pending").len(), 1);
}

#[test]
fn a_resolution_heard_before_its_hold_opens_no_card() {
    let (mut m, _, _) = connect(&engine(&KEBAB, &gate_bound()));
    m.on_event(
        "approval::pending-resolved",
        &json!({"session_id": "s1", "function_call_id": "early", "function_id": "f", "outcome": "allow", "turn_id": "t", "resolved_at": 1}),
        40,
    );
    let late = m.on_event(
        "approval::pending-created",
        &json!({"session_id": "s1", "turn_id": "t", "function_call_id": "early", "function_id": "f", "pending_at": 3}),
        41,
    );
    assert!(
        !late
            .events
            .iter()
            .any(|(_, e)| matches!(e, BackendEvent::GateOpen(_)))
    );
}

#[test]
fn unsure_of_the_hook_still_calls_the_snake_gate_by_its_own_ids() {
    let snake = engine(&SNAKE, &[]);
    let mut m = Mapper::new("t");
    let out = m.reconnected();
    let mut calls = out.calls;
    let mut made = Vec::new();
    let mut events = Out::default();
    while let Some(c) = calls.pop() {
        let o = if c.function_id == discovery::TRIGGERS {
            m.on_error(
                &c.function_id,
                &c.payload,
                "TIMEOUT",
                "no result in time",
                5,
            )
        } else {
            m.on_result(
                &c.function_id,
                &c.payload,
                &snake(&c.function_id, &c.payload),
                5,
            )
        };
        calls.extend(o.calls.clone());
        events.events.extend(o.events);
        made.push(c);
    }
    assert!(
        blind(&events, "")
            .flatten()
            .unwrap()
            .contains("cannot tell")
    );
    assert_eq!(called(&made, "approval::list_pending").len(), 1, "{made:?}");
    assert!(called(&made, "approval::list-pending").is_empty());
}

#[test]
fn a_card_without_a_usable_pending_at_keeps_its_opening_time_when_upgraded() {
    let (mut m, _, _) = connect(&engine(&KEBAB, &gate_bound()));
    let first = m.on_event(
        "approval::pending-created",
        &json!({"session_id": "s1", "turn_id": "t", "function_call_id": "z", "function_id": "shell::exec",
                "pending_at": 0, "arguments_excerpt": {"command": "ls"}}),
        1_000,
    );
    let opened = first.events.iter().find_map(|(_, e)| match e {
        BackendEvent::GateOpen(g) => Some(g.opened_ms),
        _ => None,
    });
    assert_eq!(opened, Some(1_000));
    // The transcript brings the full arguments much later: the upgraded card keeps 1_000.
    let up = m.on_event(
        "session::message-added",
        &json!({"session_id": "s1", "entry_id": "e9", "revision": 1, "message": {"role": "assistant",
                "stop_reason": "function_call", "content": [{"type": "function_call", "id": "z",
                "function_id": "shell::exec", "arguments": {"command": "ls -la"}}]}}),
        9_000,
    );
    let upgraded = up.events.iter().find_map(|(_, e)| match e {
        BackendEvent::GateUpgraded { gate, .. } => Some(gate.opened_ms),
        _ => None,
    });
    assert_eq!(upgraded, Some(1_000), "{up:?}");
}

#[test]
fn the_engines_words_in_facts_and_warnings_are_made_safe() {
    let hostile = engine(&["harness::send", "approval::x\u{1b}[2J\u{202e}"], &[]);
    let (_, _, out) = connect(&hostile);
    let w = blind(&out, "").flatten().unwrap();
    assert!(w.contains("does not know"), "{w}");
    let all = format!("{:?}", out.events);
    assert!(!w.contains('\u{1b}') && !w.contains('\u{202e}'), "{w:?}");
    assert!(!all.contains('\u{1b}'), "{all}");
}
