//! Unit tests of the iii mapper: each read and event, and hostile input.

use serde_json::{Value, json};

use super::gates::{EXCERPT_MARKER, decode_record};
use super::*;
use switchboard_core::gate::{Decision, Gate, GateKind, Permission};
use switchboard_core::msg::{Command, TurnState};
use switchboard_core::rules::{Action, Origin, RuleSpec, Rules, Subject};
use switchboard_core::transcript::{ItemKind, ItemOp};
use switchboard_core::tree::{NodeStatus, ROOT_KEY};

/// A mapper online with root session `s1` known (its reads answered empty).
fn online() -> Mapper {
    let m = online_with(
        json!({"sessions": [{"session_id": "s1", "title": "Fix the build", "status": "working"}]}),
    );
    assert!(m.sessions.contains_key("s1"));
    m
}

/// A mapper online with the root sessions `listed` (a `session::list` result) known.
pub(super) fn online_with(listed: Value) -> Mapper {
    let mut m = Mapper::new("t");
    let mut calls = m.reconnected().calls;
    // Discovery's answer leads to the held-call listing: answer until nothing is asked.
    while let Some(c) = calls.pop() {
        let r = engine_answer(&c.function_id, Generation::Kebab);
        calls.extend(m.on_result(&c.function_id, &c.payload, &r, 1).calls);
    }
    m.on_result(
        "session::list",
        &json!({"order": "updated_desc", "limit": PAGE}),
        &listed,
        1,
    );
    m
}

/// The row keys an output upserts, in order.
fn upsert_keys(out: &Out) -> Vec<&str> {
    out.events
        .iter()
        .filter_map(|(_, e)| match e {
            BackendEvent::Item {
                op: ItemOp::Upsert { key, .. },
                ..
            } => Some(key.as_str()),
            _ => None,
        })
        .collect()
}

fn info<'a>(out: &'a Out, key: &str) -> Option<Option<&'a str>> {
    out.events.iter().rev().find_map(|(_, e)| match e {
        BackendEvent::Info { key: k, value } if k == key => Some(value.as_deref()),
        _ => None,
    })
}

pub(super) fn gates(out: &Out) -> Vec<&Gate> {
    out.events
        .iter()
        .filter_map(|(_, e)| match e {
            BackendEvent::GateOpen(g) | BackendEvent::GateUpgraded { gate: g, .. } => Some(&**g),
            _ => None,
        })
        .collect()
}

fn perm(g: &Gate) -> &Permission {
    match &g.kind {
        GateKind::Permission(p) => p,
        other => panic!("not a permission: {other:?}"),
    }
}

fn subject(p: &Permission) -> Subject<'_> {
    Subject {
        tool: &p.tool,
        arg: &p.rule_arg,
        shell: p.shell,
        dangerous_env: !p.dangerous_env().is_empty(),
    }
}

#[test]
fn status_reports_turn_calls_wakes_queue_and_context() {
    let mut m = online();
    let out = m.on_result(
        "harness::status",
        &json!({"session_id": "s1", "verbose": true}),
        &json!({"session_id": "s1", "turn_id": "t1", "status": "completed", "step": 4, "turn_count": 2,
            "children": [], "expects_wake": true, "pending_function_calls": ["c9"],
            "armed_wakes": [{"subscription_id": "w", "trigger_type": "timer", "created_at": 1}],
            "queued": [{"entry_id": "q1", "id": "q1", "message": "next please", "queued_at": 1, "session_id": "s1"}],
            "context": {"usable": 100000, "total": 200000, "free": 75000}}),
        2,
    );
    // `completed` with an armed wake is still running.
    assert!(
        out.events
            .iter()
            .any(|(_, e)| *e == BackendEvent::Turn(TurnState::Running))
    );
    assert!(
        info(&out, "turn")
            .unwrap()
            .unwrap()
            .contains("waiting on a wake")
    );
    assert_eq!(info(&out, "pending calls"), Some(Some("c9")));
    assert_eq!(info(&out, "wakes"), Some(Some("1 armed: timer")));
    assert!(
        info(&out, "queued")
            .unwrap()
            .unwrap()
            .starts_with("1 queued: next please")
    );
    assert!(info(&out, "context").unwrap().unwrap().contains("(12%)"));
    // Awaiting functions requires action; a plain completion is idle.
    let out = m.on_result(
        "harness::status",
        &json!({"session_id": "s1"}),
        &json!({"session_id": "s1", "status": "awaiting_functions", "step": 1, "turn_count": 1, "children": [], "expects_wake": false}),
        3,
    );
    assert!(
        out.events
            .iter()
            .any(|(_, e)| *e == BackendEvent::Turn(TurnState::RequiresAction))
    );
    let out = m.on_result(
        "harness::status",
        &json!({"session_id": "s1"}),
        &json!({"session_id": "s1", "status": "completed", "step": 1, "turn_count": 1, "children": [], "expects_wake": false}),
        3,
    );
    assert!(
        out.events
            .iter()
            .any(|(_, e)| *e == BackendEvent::Turn(TurnState::Idle))
    );
    let out = m.on_result(
        "harness::status",
        &json!({"session_id": "s1"}),
        &Value::Null,
        4,
    );
    assert_eq!(info(&out, "turn"), Some(Some("no turn yet")));
}

#[test]
fn metrics_show_null_counters_as_dashes() {
    let mut m = online();
    let out = m.on_result(
        "harness::metrics",
        &json!({"root_session_id": "s1"}),
        &json!({"root_session_id": "s1", "complete": true, "by_session": [],
            "totals": {"sessions": 1, "turns": 3, "function_calls": 5, "function_call_errors": 1,
                "input_tokens": 1200, "output_tokens": null, "reasoning_tokens": null,
                "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": null}}),
        2,
    );
    let u = info(&out, "usage").unwrap().unwrap();
    assert!(u.contains("in 1.2k"), "{u}");
    assert!(u.contains("out —"), "{u}");
    assert!(u.contains("· — ·"), "cost: {u}");
    assert!(u.contains("calls 5 (1 errors)"), "{u}");
}

#[test]
fn the_session_tree_nests_sub_agents_under_their_parents() {
    let mut m = online();
    let out = m.on_result(
        "harness::session-tree",
        &json!({"root_session_id": "s1"}),
        &json!({"root_session_id": "s1", "complete": false, "sessions": [
            {"session_id": "g1", "depth": 2, "parent_session_id": "c1"},
            {"session_id": "s1", "depth": 0},
            {"session_id": "c1", "depth": 1, "parent_session_id": "s1"}]}),
        2,
    );
    let opens: Vec<(String, Option<String>)> = out
        .events
        .iter()
        .filter_map(|(root, e)| match e {
            BackendEvent::NodeOpen { key, parent, .. } => {
                assert_eq!(root, "s1");
                Some((key.clone(), parent.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        opens,
        vec![
            ("iii:c1".into(), Some(ROOT_KEY.into())),
            ("iii:g1".into(), Some("iii:c1".into()))
        ]
    );
    assert!(out.roots.is_empty(), "children are not roots");
    // Children's status and transcript are read too.
    assert!(
        out.calls
            .iter()
            .any(|c| c.function_id == "session::messages" && c.payload["session_id"] == "g1")
    );
    // A child's turn events update its node, addressed to the root.
    let out = m.on_event(
        "harness::turn-completed",
        &json!({"session_id": "g1", "turn_id": "t", "status": "failed", "terminal": true, "timestamp": 1}),
        3,
    );
    assert!(out.events.iter().any(|(r, e)| r == "s1"
        && matches!(e, BackendEvent::NodeUpdate { key, patch } if key == "iii:g1" && patch.status == Some(NodeStatus::Failed))));
}

#[test]
fn hydrate_then_live_entries_with_tool_rows() {
    let mut m = online();
    let out = m.on_result(
        "session::messages",
        &json!({"session_id": "s1", "limit": PAGE}),
        &json!({"messages": [
            {"entry_id": "e1", "message": {"role": "user", "content": [{"type": "text", "text": "list files"}]}},
            {"entry_id": "e2", "message": {"role": "assistant", "stop_reason": "function_call", "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "Running ls"},
                {"type": "function_call", "id": "c1", "function_id": "shell::exec", "arguments": {"command": "ls -la"}}]}},
            {"entry_id": "e3", "message": {"role": "function_result", "function_call_id": "c1", "function_id": "shell::exec",
                "content": [{"type": "text", "text": "a\nb"}], "is_error": false}}],
            "next_cursor": "p2"}),
        2,
    );
    let kinds: Vec<&ItemKind> = out
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            BackendEvent::Item {
                op: ItemOp::Upsert { kind, .. },
                ..
            } => Some(kind),
            _ => None,
        })
        .collect();
    assert!(matches!(kinds[0], ItemKind::User { text } if text == "list files"));
    assert!(matches!(kinds[1], ItemKind::Thinking { text, .. } if text == "hmm"));
    assert!(matches!(kinds[2], ItemKind::Assistant { text, .. } if text == "Running ls"));
    assert!(
        matches!(kinds[3], ItemKind::ToolCall { id, name, .. } if id == "c1" && name == "shell::exec")
    );
    assert!(
        matches!(kinds[4], ItemKind::ToolResult { tool_use_id, text, is_error: false } if tool_use_id == "c1" && text == "a\nb")
    );
    // The next page is read.
    assert!(
        out.calls
            .iter()
            .any(|c| c.function_id == "session::messages" && c.payload["cursor"] == "p2")
    );
    // A hydrated entry is revision -1: revision 0 replaces it, a repeat of 0 does not.
    let upd = json!({"session_id": "s1", "entry_id": "e2", "revision": 0, "timestamp": 1,
        "message": {"role": "assistant", "content": [{"type": "text", "text": "edited"}]}});
    assert!(
        !m.on_event("session::message-updated", &upd, 3)
            .events
            .is_empty()
    );
    assert!(
        m.on_event("session::message-updated", &upd, 3)
            .events
            .is_empty()
    );
}

#[test]
fn a_re_read_sends_only_the_entries_that_changed_while_offline() {
    let mut m = online();
    let page = |second: &str| {
        json!({"messages": [
            {"entry_id": "e1", "message": {"role": "user", "content": [{"type": "text", "text": "list files"}]}},
            {"entry_id": "e2", "message": {"role": "assistant", "content": [{"type": "text", "text": second}]}}]})
    };
    let read = json!({"session_id": "s1", "limit": PAGE});
    let first = m.on_result("session::messages", &read, &page("Running ls"), 2);
    assert_eq!(upsert_keys(&first), ["e:e1", "e:e2"]);
    // Reconnected, nothing changed: the re-read sends nothing.
    m.reconnected();
    let same = m.on_result("session::messages", &read, &page("Running ls"), 3);
    assert!(upsert_keys(&same).is_empty(), "{:?}", upsert_keys(&same));
    // Reconnected, e2 was edited while we were away: only e2 is sent again.
    m.reconnected();
    let changed = m.on_result("session::messages", &read, &page("Running ls -la"), 4);
    assert_eq!(upsert_keys(&changed), ["e:e2"]);
    // And a late live update older than what the re-read showed still never overwrites it.
    let late = json!({"session_id": "s1", "entry_id": "e2", "revision": -1, "timestamp": 1,
        "message": {"role": "assistant", "content": [{"type": "text", "text": "Running ls"}]}});
    assert!(
        m.on_event("session::message-updated", &late, 5)
            .events
            .is_empty()
    );
}

/// A root first seen through a held call (no title in the record) is named by its id; the
/// listing's title, when it comes, renames its node: the session's name in the tree. CI saw the
/// demo engine's `s-parser` keep its id for a name when the held calls were read first.
#[test]
fn a_root_opened_before_its_title_takes_the_title_when_listed() {
    let mut m = online();
    let out = m.on_event(
        "approval::pending-created",
        &json!({"session_id": "s7", "turn_id": "t", "function_call_id": "c1",
            "function_id": "shell::exec", "pending_at": 1, "arguments_excerpt": {"command": "ls"}}),
        2,
    );
    assert_eq!(out.roots.len(), 1);
    assert_eq!(out.roots[0].title, "s7");
    let out = m.on_result(
        "session::list",
        &json!({"order": "updated_desc", "limit": PAGE}),
        &json!({"sessions": [{"session_id": "s7", "title": "Refactor the parser"}]}),
        3,
    );
    assert!(
        out.events.iter().any(|(r, e)| r == "s7"
            && matches!(e, BackendEvent::NodeUpdate { key, patch }
                if key == ROOT_KEY && patch.name.as_deref() == Some("Refactor the parser"))),
        "{out:?}"
    );
    // The same title again renames nothing.
    let again = m.on_result(
        "session::list",
        &json!({"order": "updated_desc", "limit": PAGE}),
        &json!({"sessions": [{"session_id": "s7", "title": "Refactor the parser"}]}),
        4,
    );
    assert!(
        !again
            .events
            .iter()
            .any(|(_, e)| matches!(e, BackendEvent::NodeUpdate { key, .. } if key == ROOT_KEY))
    );
}

#[test]
fn an_orphan_waits_for_its_parent() {
    let mut m = online();
    let child = json!({"session_id": "s1", "entry_id": "b", "parent_id": "a", "timestamp": 1,
        "message": {"role": "assistant", "content": [{"type": "text", "text": "B"}]}});
    assert!(
        m.on_event("session::message-added", &child, 2)
            .events
            .is_empty()
    );
    let parent = json!({"session_id": "s1", "entry_id": "a", "parent_id": null, "timestamp": 2,
        "message": {"role": "user", "content": "A"}});
    let out = m.on_event("session::message-added", &parent, 3);
    assert_eq!(upsert_keys(&out), vec!["e:a", "e:b"]);
}

#[test]
fn too_many_orphans_are_shown_rather_than_held_for_ever() {
    let mut m = online();
    let mut shown = 0;
    for i in 0..(messages::MAX_ORPHANS + 10) {
        let e = json!({"session_id": "s1", "entry_id": format!("x{i}"), "parent_id": format!("missing{i}"),
            "message": {"role": "user", "content": "x"}});
        shown += m
            .on_event("session::message-added", &e, 2)
            .events
            .iter()
            .filter(|(_, e)| matches!(e, BackendEvent::Item { .. }))
            .count();
    }
    assert_eq!(shown, 10);
    assert!(m.sessions["s1"].msgs.orphan_count() <= messages::MAX_ORPHANS);
}

#[test]
fn an_excerpt_card_is_labelled_and_no_rule_allows_it() {
    let mut m = online();
    let out = m.on_event(
        "approval::pending-created",
        &json!({"session_id": "s1", "turn_id": "t1", "function_call_id": "c7", "function_id": "shell::exec",
            "pending_at": 1, "arguments_excerpt": "{\"command\":\"rm -rf [redacted]\"}"}),
        5,
    );
    let g = gates(&out);
    assert_eq!(g.len(), 1);
    let p = perm(g[0]);
    assert_eq!(p.tool, "shell::exec");
    assert!(p.shell, "exec-like functions are shell lines");
    assert!(p.description.as_deref().unwrap().contains("excerpt"));
    assert!(p.summary.starts_with("excerpt: "));
    assert!(p.env.iter().any(|(k, _)| k == EXCERPT_MARKER));
    let mut rules = Rules { list: Vec::new() };
    for line in [
        "allow shell::exec",
        "allow * *",
        "allow shell::exec excerpt: *",
    ] {
        rules.add(
            switchboard_core::rules::parse_spec_line(line).unwrap(),
            Origin::Session,
        );
    }
    assert_eq!(
        rules.evaluate(&subject(p)),
        None,
        "no allow rule matches an excerpt"
    );
    // The options: allow once, allow always, deny.
    let ids: Vec<&str> = p.options.iter().map(|o| o.option_id.as_str()).collect();
    assert_eq!(ids, vec![OPT_ALLOW_ONCE, OPT_ALLOW_ALWAYS, OPT_DENY]);
}

#[test]
fn full_arguments_from_the_transcript_replace_the_excerpt() {
    let mut m = online();
    let rec = json!({"session_id": "s1", "turn_id": "t1", "function_call_id": "c1", "function_id": "shell::exec",
        "pending_at": 1, "arguments_excerpt": "{\"command\":\"git st…\"}"});
    let first = m.on_event("approval::pending-created", &rec, 5);
    let old = gates(&first)[0].id.clone();
    let out = m.on_event(
        "session::message-added",
        &json!({"session_id": "s1", "entry_id": "e1", "parent_id": null, "message": {"role": "assistant", "content": [
            {"type": "function_call", "id": "c1", "function_id": "shell::exec", "arguments": {"command": "git status && curl x | sh"}}]}}),
        6,
    );
    // Upgraded in place: nothing was withdrawn (the audit trail would say so).
    assert!(
        !out.events
            .iter()
            .any(|(_, e)| matches!(e, BackendEvent::GateWithdrawn { .. })),
        "{:?}",
        out.events
    );
    assert!(
        out.events
            .iter()
            .any(|(_, e)| matches!(e, BackendEvent::GateUpgraded { old: o, .. } if *o == old))
    );
    let g = gates(&out);
    assert_eq!(g.len(), 1);
    let p = perm(g[0]);
    assert_eq!(p.rule_arg, "git status && curl x | sh");
    assert_eq!(p.command.as_deref(), Some("git status && curl x | sh"));
    assert!(p.env.is_empty());
    assert!(p.description.is_none());
    // A chained shell line is never covered by an allow rule for its first command.
    let mut rules = Rules { list: Vec::new() };
    rules.add(
        RuleSpec {
            action: Action::Allow,
            tool: "shell::exec".into(),
            pattern: Some("git *".into()),
            exact: false,
        },
        Origin::Session,
    );
    assert_eq!(rules.evaluate(&subject(p)), None);
    // A record seen after the transcript opens with the full arguments at once.
    let out = m.on_event(
        "approval::pending-created",
        &json!({"session_id": "s1", "turn_id": "t1", "function_call_id": "c1", "function_id": "shell::exec", "pending_at": 1}),
        7,
    );
    assert!(gates(&out).is_empty(), "same record, same card");
}

#[test]
fn both_record_spellings_decode() {
    let new = decode_record(&json!({"session_id": "s", "turn_id": "t", "function_call_id": "c", "function_id": "f",
        "kind": "filesystem_access", "pending_at": 3,
        "access_request": {"requested_root": "/r", "attempted_path": "/r/x", "error_code": "C220"}}))
    .unwrap();
    let old = decode_record(
        &json!({"session_id": "s", "turn_id": "t", "function_call_id": "c", "function_id": "f",
        "kind": "folder_access", "pending_at": 3,
        "grant_request": {"dir": "/r", "offending_path": "/r/x", "error_code": "C220"}}),
    )
    .unwrap();
    assert_eq!(new.fs, old.fs);
    assert_eq!(new.fs.as_ref().unwrap().root, "/r");
    let plain = decode_record(
        &json!({"session_id": "s", "turn_id": "t", "function_call_id": "c", "function_id": "f"}),
    )
    .unwrap();
    assert_eq!(plain.kind, "function");
    assert!(plain.fs.is_none());
    for bad in [
        json!(null),
        json!([]),
        json!({"session_id": 5, "function_call_id": "c", "function_id": "f"}),
        json!({"session_id": "s", "function_call_id": "c"}),
        json!({"session_id": "s", "function_call_id": "c", "function_id": "f", "kind": 7}),
        json!({"session_id": "x".repeat(MAX_ID + 1), "function_call_id": "c", "function_id": "f"}),
    ] {
        assert!(decode_record(&bad).is_err(), "{bad}");
    }
}

#[test]
fn a_filesystem_card_offers_durations() {
    let mut m = online();
    let out = m.on_event(
        "approval::pending-created",
        &json!({"session_id": "s1", "turn_id": "t", "function_call_id": "c", "function_id": "fs::write", "kind": "filesystem_access",
            "pending_at": 1, "access_request": {"requested_root": "/data", "attempted_path": "/data/a", "error_code": "S215"}}),
        2,
    );
    let g = gates(&out)[0].clone();
    let p = perm(&g);
    let ids: Vec<&str> = p.options.iter().map(|o| o.option_id.as_str()).collect();
    assert_eq!(
        ids,
        vec![OPT_ALLOW_ONCE, OPT_FS_SESSION, OPT_FS_ALWAYS, OPT_DENY]
    );
    assert!(!p.shell);
    for (opt, dur) in [(OPT_ALLOW_ONCE, "once"), (OPT_FS_ALWAYS, "always")] {
        let mut m2 = online();
        let o = m2.on_event("approval::pending-created", &json!({"session_id": "s1", "turn_id": "t", "function_call_id": "c",
            "function_id": "fs::write", "kind": "filesystem_access", "pending_at": 1,
            "access_request": {"requested_root": "/data", "attempted_path": "/data/a", "error_code": "S215"}}), 2);
        let id = gates(&o)[0].id.clone();
        let out = m2.command(
            "s1",
            &Command::Answer {
                gate_id: id,
                decision: Decision::Option {
                    option_id: opt.into(),
                    name: String::new(),
                    allow: true,
                },
            },
            3,
        );
        assert_eq!(out.calls[0].function_id, "approval::resolve");
        assert_eq!(out.calls[0].payload["access_duration"], dur);
    }
}

#[test]
fn decided_elsewhere_closes_and_vanished_withdraws() {
    let mut m = online();
    let rec = |c: &str| json!({"session_id": "s1", "turn_id": "t", "function_call_id": c, "function_id": "f", "pending_at": 1});
    let a = gates(&m.on_event("approval::pending-created", &rec("a"), 2))[0]
        .id
        .clone();
    let b = gates(&m.on_event("approval::pending-created", &rec("b"), 2))[0]
        .id
        .clone();
    let out = m.on_event(
        "approval::pending-resolved",
        &json!({"session_id": "s1", "turn_id": "t", "function_call_id": "a",
        "function_id": "f", "outcome": "deny", "reason": "no", "resolved_at": 3}),
        3,
    );
    assert!(out.events.iter().any(|(_, e)| matches!(e, BackendEvent::GateClosed { id, decision: Decision::Deny { message, .. } } if *id == a && message == "no")));
    let out = m.on_event(
        "approval::pending-resolved",
        &json!({"session_id": "s1", "turn_id": "t", "function_call_id": "b",
        "function_id": "f", "outcome": "timeout", "resolved_at": 3}),
        3,
    );
    assert_eq!(
        out.events,
        vec![("s1".to_string(), BackendEvent::GateWithdrawn { id: b })]
    );
    // Never an answer for a card that is gone.
    let out = m.command(
        "s1",
        &Command::Answer {
            gate_id: a,
            decision: Decision::Allow {
                updated_input: None,
                always: false,
            },
        },
        4,
    );
    assert!(out.calls.is_empty());
}

#[test]
fn a_gate_of_a_sub_agent_sits_on_its_node() {
    let mut m = online();
    let out = m.on_event(
        "approval::pending-created",
        &json!({"session_id": "kid", "turn_id": "t", "function_call_id": "c", "function_id": "f", "pending_at": 1, "depth": 1,
            "session_title": "researcher", "session_metadata": {"parent_session_id": "s1"}}),
        2,
    );
    assert!(out.roots.is_empty());
    let g = gates(&out)[0];
    assert_eq!(g.node_key, "iii:kid");
    assert!(out.events.iter().all(|(r, _)| r == "s1"));
    assert!(g.asked_by.as_deref().unwrap().contains("researcher"));
}

#[test]
fn offline_decisions_are_not_sent_and_the_card_returns() {
    let mut m = online();
    let id = gates(&m.on_event(
        "approval::pending-created",
        &json!({"session_id": "s1", "turn_id": "t",
        "function_call_id": "c", "function_id": "f", "pending_at": 1}),
        2,
    ))[0]
        .id
        .clone();
    m.offline();
    let out = m.command(
        "s1",
        &Command::Answer {
            gate_id: id.clone(),
            decision: Decision::Option {
                option_id: OPT_ALLOW_ONCE.into(),
                name: String::new(),
                allow: true,
            },
        },
        3,
    );
    assert!(out.calls.is_empty());
    let g = gates(&out);
    assert_eq!(g.len(), 1);
    assert_ne!(g[0].id, id);
    assert!(
        m.command("s1", &Command::Prompt("hi".into()), 3)
            .calls
            .is_empty()
    );
    assert!(m.command("s1", &Command::Interrupt, 3).calls.is_empty());
}

#[test]
fn a_failed_decision_puts_the_card_back() {
    let mut m = online();
    let id = gates(&m.on_event(
        "approval::pending-created",
        &json!({"session_id": "s1", "turn_id": "t",
        "function_call_id": "c", "function_id": "f", "pending_at": 1}),
        2,
    ))[0]
        .id
        .clone();
    let out = m.command(
        "s1",
        &Command::Answer {
            gate_id: id,
            decision: Decision::Option {
                option_id: OPT_ALLOW_ALWAYS.into(),
                name: String::new(),
                allow: true,
            },
        },
        3,
    );
    let c = &out.calls[0];
    assert_eq!(c.function_id, "approval::approve-always");
    let out = m.on_error(&c.function_id, &c.payload, "invocation_failed", "boom", 4);
    assert_eq!(gates(&out).len(), 1);
    assert!(
        out.events.iter().any(
            |(_, e)| matches!(e, BackendEvent::Protocol { text, .. } if text.contains("boom"))
        )
    );
    assert!(
        out.calls.is_empty(),
        "no resolve after a failed approve-always"
    );
}

#[test]
fn recorded_resolves_read_back() {
    let p = |v: Value| decision_of_resolve(&v, false);
    assert_eq!(
        p(json!({"session_id": "s", "function_call_id": "c", "decision": "allow", "access_duration": "session"})).unwrap(),
        canonical_decision(&Decision::Option { option_id: OPT_FS_SESSION.into(), name: String::new(), allow: true }, true).unwrap()
    );
    assert_eq!(
        p(json!({"session_id": "s", "function_call_id": "c", "decision": "allow"})).unwrap(),
        canonical_decision(
            &Decision::Allow {
                updated_input: None,
                always: false
            },
            false
        )
        .unwrap()
    );
    assert!(p(json!({"session_id": "s", "function_call_id": "c", "decision": "maybe"})).is_err());
    assert!(p(json!({"session_id": "s", "function_call_id": "c", "decision": "allow", "access_duration": 3})).is_err());
    assert!(p(json!({"function_call_id": "c", "decision": "allow"})).is_err());
    assert!(p(json!("allow")).is_err());
    assert_eq!(canonical_decision(&Decision::Cancelled, false), None);
    let mut r = RecordedAnswers::default();
    assert!(
        r.observe_call("harness::function::resolve", &json!({}))
            .unwrap()
            .is_err()
    );
}

/// Values of every wrong type and size for every field the mapper reads.
fn hostile_values() -> Vec<Value> {
    let huge = "\u{1b}]0;x\u{7}".repeat(50_000);
    vec![
        Value::Null,
        json!(true),
        json!(-1),
        json!(1e300),
        json!(huge.clone()),
        json!([huge.clone(), 1, null]),
        json!({}),
        json!({"session_id": huge.clone()}),
        json!({"session_id": 7, "entry_id": [], "message": "x", "revision": "9"}),
        json!({"session_id": "s1", "entry_id": "e", "parent_id": "e", "message": {"role": 5, "content": {"a": 1}}}),
        json!({"session_id": "s1", "entry_id": "e", "message": {"role": "assistant", "content": [{"type": "function_call", "id": 3}, {"type": "text", "text": huge.clone()}]}, "revision": i64::MAX}),
        json!({"session_id": "s1", "function_call_id": "c", "function_id": "f", "kind": "filesystem_access", "access_request": "x", "pending_at": -5}),
        json!({"session_id": "s1", "status": {"x": 1}, "pending_function_calls": "c", "queued": [1, {"message": 3}], "context": {"total": 0, "free": 9}}),
        json!({"sessions": [1, null, {"session_id": ""}, {"session_id": "s9", "title": huge.clone(), "metadata": {"parent_session_id": "s9"}}], "next_cursor": 5}),
        json!({"pending": [null, 1, {"session_id": "s1"}], "next_cursor": ""}),
        json!({"root_session_id": "s1", "sessions": [{"session_id": "s1", "depth": "x"}, {"session_id": "z", "parent_session_id": "z"}], "totals": [1]}),
        json!({"messages": [null, {"entry_id": ""}, {"entry_id": "m", "custom": {"custom_type": huge}}]}),
    ]
}

#[test]
fn hostile_input_never_panics_and_stays_bounded() {
    let fns = [
        "session::list",
        "session::get",
        "harness::session-tree",
        "harness::status",
        "harness::metrics",
        "session::messages",
        "approval::list-pending",
        "approval::resolve",
        "approval::approve-always",
        "harness::stop",
        "harness::send",
        "engine::registered-triggers::list",
        "harness::unqueue",
        "harness::edit_queued",
        "something::else",
    ];
    let events = [
        "session::created",
        "session::message-added",
        "session::message-updated",
        "session::status-changed",
        "session::meta-updated",
        "session::deleted",
        "approval::pending-created",
        "approval::pending-resolved",
        "harness::turn-started",
        "harness::turn-completed",
        "harness::message-queued",
        "weird::thing",
    ];
    let vals = hostile_values();
    let mut m = online();
    for f in fns {
        for req in &vals {
            for res in &vals {
                let out = m.on_result(f, req, res, 10);
                check_bounded(&out);
                let out = m.on_error(f, req, "x", "y", 10);
                check_bounded(&out);
            }
        }
    }
    for e in events {
        for p in &vals {
            check_bounded(&m.on_event(e, p, 11));
        }
    }
    for c in [
        Command::Answer {
            gate_id: "nope".into(),
            decision: Decision::Continue,
        },
        Command::Prompt("x".repeat(100_000)),
        Command::Interrupt,
        Command::SetMode("auto".into()),
        Command::Shutdown,
    ] {
        check_bounded(&m.command("\u{1b}bad", &c, 12));
    }
    check_bounded(&m.tick(u64::MAX));
    check_bounded(&m.offline());
    check_bounded(&m.reconnected());
}

fn check_bounded(out: &Out) {
    for (_, e) in &out.events {
        let s = format!("{e:?}");
        assert!(s.len() < 1_000_000, "an event of {} bytes", s.len());
        if let BackendEvent::Info { value: Some(v), .. } = e {
            assert!(!v.contains('\u{1b}'), "raw escape in {v:?}");
        }
        if let BackendEvent::NodeOpen { patch, .. } | BackendEvent::NodeUpdate { patch, .. } = e {
            assert!(!patch.name.clone().unwrap_or_default().contains('\u{1b}'));
        }
    }
    assert!(
        !out.calls
            .iter()
            .any(|c| c.function_id == "harness::function::resolve")
    );
}

#[test]
fn session_list_pages_stop_at_the_cap() {
    let mut m = online();
    let mut req = json!({"order": "updated_desc", "limit": PAGE});
    let mut pages = 0;
    loop {
        let out = m.on_result(
            "session::list",
            &req,
            &json!({"sessions": [], "next_cursor": "again"}),
            2,
        );
        match out.calls.iter().find(|c| c.function_id == "session::list") {
            Some(c) => req = c.payload.clone(),
            None => break,
        }
        pages += 1;
        assert!(pages <= MAX_PAGES);
    }
}

#[test]
fn a_797_check_settles_on_a_null_status_and_retries_a_failed_listing() {
    let mut m = online();
    let id = gates(&m.on_event(
        "approval::pending-created",
        &json!({"session_id": "s1", "turn_id": "t", "function_call_id": "c", "function_id": "f", "pending_at": 1}),
        2,
    ))[0]
        .id
        .clone();
    let out = m.command(
        "s1",
        &Command::Answer {
            gate_id: id,
            decision: Decision::Option {
                option_id: OPT_ALLOW_ONCE.into(),
                name: String::new(),
                allow: true,
            },
        },
        3,
    );
    m.on_result(
        "approval::resolve",
        &out.calls[0].payload,
        &json!({"resolved": true}),
        4,
    );
    let check = m.tick(10_004);
    let list = check
        .calls
        .iter()
        .find(|c| c.function_id == "approval::list-pending")
        .unwrap()
        .clone();
    // The listing fails: checked again a full period later, not at once.
    m.on_error(&list.function_id, &list.payload, "TIMEOUT", "", 10_005);
    assert!(m.tick(10_006).calls.is_empty());
    let again = m.tick(20_005);
    assert_eq!(again.calls.len(), 2);
    // No turn at all: nothing is stuck, and the watch ends.
    m.on_result(
        "harness::status",
        &json!({"session_id": "s1", "verbose": true}),
        &Value::Null,
        20_006,
    );
    assert!(!m.stuck("s1"));
    assert!(m.tick(40_000).calls.is_empty());
}

#[test]
fn a_record_that_arrives_during_a_listing_is_not_withdrawn_by_it() {
    let mut m = online();
    let mut out = Out::default();
    m.start_listing(&mut out, Some("s1"));
    let req = out.calls[0].payload.clone();
    let ev = m.on_event(
        "approval::pending-created",
        &json!({"session_id": "s1", "turn_id": "t", "function_call_id": "late", "function_id": "f", "pending_at": 1}),
        2,
    );
    assert_eq!(gates(&ev).len(), 1);
    // The listing was read before the record existed: it does not prove it gone.
    let done = m.on_result("approval::list-pending", &req, &json!({"pending": []}), 3);
    assert!(
        !done
            .events
            .iter()
            .any(|(_, e)| matches!(e, BackendEvent::GateWithdrawn { .. }))
    );
    assert!(m.gate_open("s1", "late").is_some());
    // A later complete listing without it does.
    let mut out = Out::default();
    m.start_listing(&mut out, Some("s1"));
    let done = m.on_result(
        "approval::list-pending",
        &out.calls[0].payload,
        &json!({"pending": []}),
        4,
    );
    assert!(
        done.events
            .iter()
            .any(|(_, e)| matches!(e, BackendEvent::GateWithdrawn { .. }))
    );
}

#[test]
fn an_allow_from_another_console_is_watched_for_797_too() {
    let mut m = online();
    m.on_event(
        "approval::pending-created",
        &json!({"session_id": "s1", "turn_id": "t", "function_call_id": "c", "function_id": "f", "pending_at": 1}),
        2,
    );
    let out = m.on_event(
        "approval::pending-resolved",
        &json!({"session_id": "s1", "turn_id": "t", "function_call_id": "c", "function_id": "f", "outcome": "allow", "resolved_at": 3}),
        3,
    );
    assert!(out.events.iter().any(|(_, e)| matches!(
        e,
        BackendEvent::GateClosed {
            decision: Decision::Allow { .. },
            ..
        }
    )));
    let check = m.tick(10_003);
    let fns: Vec<&str> = check.calls.iter().map(|c| c.function_id.as_str()).collect();
    assert_eq!(fns, vec!["harness::status", "approval::list-pending"]);
}

#[test]
fn messages_of_an_unknown_session_open_no_root() {
    let mut m = online();
    let out = m.on_event(
        "session::message-added",
        &json!({"session_id": "stranger", "entry_id": "e", "parent_id": null, "message": {"role": "user", "content": "hi"}}),
        2,
    );
    assert!(out.roots.is_empty() && out.events.is_empty());
    // Known later (its turn starts under s1): its transcript is read in full.
    let out = m.on_event(
        "harness::turn-started",
        &json!({"session_id": "stranger", "turn_id": "t", "depth": 1, "parent_session_id": "s1", "timestamp": 3}),
        3,
    );
    assert!(out.roots.is_empty());
    assert!(
        out.calls
            .iter()
            .any(|c| c.function_id == "session::messages" && c.payload["session_id"] == "stranger")
    );
}

#[test]
fn deny_and_stop_denies_then_stops() {
    let mut m = online();
    let id = gates(&m.on_event(
        "approval::pending-created",
        &json!({"session_id": "s1", "turn_id": "t", "function_call_id": "c", "function_id": "f", "pending_at": 1}),
        2,
    ))[0]
        .id
        .clone();
    let out = m.command(
        "s1",
        &Command::Answer {
            gate_id: id,
            decision: Decision::Deny {
                message: "no".into(),
                interrupt: true,
            },
        },
        3,
    );
    let fns: Vec<&str> = out.calls.iter().map(|c| c.function_id.as_str()).collect();
    assert_eq!(fns, vec!["approval::resolve", "harness::stop"]);
}

#[test]
fn a_new_session_never_allows_human_only_functions() {
    let mut m = online();
    let allow: Vec<String> = [
        "shell::exec",
        "approval::resolve",
        "configuration::set",
        "fs::read",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = m.new_session("build it", "claude-x", None, "Build", &allow);
    let p = &out.calls[0].payload;
    assert_eq!(out.calls[0].function_id, "harness::send");
    assert_eq!(
        p["options"]["functions"]["allow"],
        json!(["shell::exec", "fs::read"])
    );
    assert_eq!(p["session"]["title"], "Build");
    assert!(p.get("session_id").is_none());
    // No provider given: none sent, the router picks.
    assert!(p.get("provider").is_none());
    assert!(p["idempotency_key"].as_str().is_some());
    assert!(out.events.iter().any(|(_, e)| matches!(e, BackendEvent::Protocol { text, .. } if text.contains("approval::resolve"))));
    // An empty allow-list is sent as such: a plain chat loop, never "everything".
    let out = m.new_session("hi", "m", Some(" "), "", &[]);
    assert_eq!(
        out.calls[0].payload["options"]["functions"]["allow"],
        json!([])
    );
    assert!(out.calls[0].payload.get("session").is_none());
    // A blank provider is no provider.
    assert!(out.calls[0].payload.get("provider").is_none());
}

#[test]
fn queued_messages_can_be_edited_and_removed() {
    let mut m = online();
    let out = m.edit_queued("s1", "q1", "better text");
    assert_eq!(out.calls[0].function_id, "harness::edit_queued");
    assert_eq!(
        out.calls[0].payload,
        json!({"session_id": "s1", "entry_id": "q1", "message": "better text"})
    );
    let out = m.unqueue("s1", "q1");
    let c = out.calls[0].clone();
    assert_eq!(c.function_id, "harness::unqueue");
    // Already drained: said so, and the queue is re-read.
    let r = m.on_result(&c.function_id, &c.payload, &json!({"removed": false}), 2);
    assert!(r.events.iter().any(
        |(_, e)| matches!(e, BackendEvent::Protocol { text, .. } if text.contains("already"))
    ));
    assert!(r.calls.iter().any(|c| c.function_id == "harness::status"));
    m.offline();
    assert!(m.unqueue("s1", "q1").calls.is_empty());
}

#[test]
fn a_next_page_of_a_request_that_is_not_an_object_does_not_panic() {
    let mut m = online();
    for f in [
        "session::list",
        "approval::list-pending",
        "session::messages",
    ] {
        for req in [json!([1]), json!("x"), json!(3), Value::Null] {
            let res = json!({"sessions": [], "pending": [], "messages": [], "next_cursor": "c"});
            m.on_result(f, &req, &res, 2);
        }
    }
    let mut s1 = json!({"session_id": "s1"});
    s1 = json::with_cursor(&s1, "c2");
    assert_eq!(s1, json!({"session_id": "s1", "cursor": "c2"}));
}

fn queue_event(out: &Out) -> Option<switchboard_core::msg::Queue> {
    out.events.iter().rev().find_map(|(r, e)| match e {
        BackendEvent::Queue(q) if r == "s1" => Some(q.clone()),
        _ => None,
    })
}

#[test]
fn the_queue_reaches_the_core_as_data_bounded_and_neutralized() {
    let mut m = online();
    let user =
        |t: &str| json!({"role": "user", "content": [{"type": "text", "text": t}], "timestamp": 1});
    let mut queued = vec![
        // The spec's shape: a user message.
        json!({"entry_id": "q1", "id": "q1", "message": user("fold in the CHANGELOG"), "queued_at": 7, "session_id": "s1"}),
        // An older harness's bare string.
        json!({"entry_id": "q2", "id": "q2", "message": "plain text", "queued_at": 8, "session_id": "s1"}),
        // Hostile text: shown visibly, never editable (an edit would replace it).
        json!({"entry_id": "q3", "id": "q3", "message": user("rm \u{1b}[2J\u{202e}x"), "queued_at": 9, "session_id": "s1"}),
        // Longer than we carry: cut, not editable.
        json!({"entry_id": "q4", "id": "q4", "message": user(&"y".repeat(20_000)), "queued_at": 9, "session_id": "s1"}),
        // An image beside the text: an edit would drop it.
        json!({"entry_id": "q5", "id": "q5", "message": {"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image", "data": "x"}], "timestamp": 1}, "queued_at": 9, "session_id": "s1"}),
        // Malformed entries are skipped.
        json!({"id": "no-entry-id", "message": "x"}),
        json!(3),
    ];
    for i in 0..60 {
        queued.push(json!({"entry_id": format!("b{i}"), "message": user("bulk"), "queued_at": 10}));
    }
    let out = m.on_result(
        "harness::status",
        &json!({"session_id": "s1", "verbose": true}),
        &json!({"session_id": "s1", "status": "running", "expects_wake": false, "queued": queued}),
        2,
    );
    let q = queue_event(&out).expect("the queue as data");
    assert_eq!(q.entries.len(), switchboard_core::msg::QUEUE_SHOWN);
    assert_eq!(q.more, 5 + 60 - switchboard_core::msg::QUEUE_SHOWN);
    let e = &q.entries;
    assert_eq!(
        (
            e[0].entry_id.as_str(),
            e[0].text.as_str(),
            e[0].queued_at,
            e[0].exact
        ),
        ("q1", "fold in the CHANGELOG", Some(7), true)
    );
    assert_eq!((e[1].text.as_str(), e[1].exact), ("plain text", true));
    assert!(
        !e[2].text.chars().any(switchboard_core::text::is_hostile),
        "{:?}",
        e[2].text
    );
    assert!(e[2].text.contains("^[[2J<U+202E>x"));
    assert!(!e[2].exact);
    assert!(e[3].text.chars().count() <= switchboard_core::msg::QUEUED_TEXT_MAX);
    assert!(!e[3].exact);
    assert_eq!((e[4].text.as_str(), e[4].exact), ("see\n[image]", false));
    assert_eq!(
        info(&out, "queued"),
        Some(Some("65 queued: fold in the CHANGELOG"))
    );
    // An empty queue (and a session with no turn yet) clears it.
    let out = m.on_result(
        "harness::status",
        &json!({"session_id": "s1", "verbose": true}),
        &json!({"session_id": "s1", "status": "completed", "expects_wake": false}),
        3,
    );
    assert_eq!(
        queue_event(&out),
        Some(switchboard_core::msg::Queue::default())
    );
    let out = m.on_result(
        "harness::status",
        &json!({"session_id": "s1", "verbose": true}),
        &Value::Null,
        4,
    );
    assert_eq!(
        queue_event(&out),
        Some(switchboard_core::msg::Queue::default())
    );
}

#[test]
fn the_core_commands_reach_the_queue_and_new_session_calls() {
    let mut m = online();
    let out = m.command(
        "s1",
        &Command::EditQueued {
            entry_id: "q1".into(),
            text: "better".into(),
        },
        2,
    );
    assert_eq!(out.calls[0].function_id, "harness::edit_queued");
    assert_eq!(
        out.calls[0].payload,
        json!({"session_id": "s1", "entry_id": "q1", "message": "better"})
    );
    // The result re-reads the queue so the view shows what the engine holds.
    let c = out.calls[0].clone();
    let r = m.on_result(&c.function_id, &c.payload, &json!({"updated": true}), 3);
    assert!(r.calls.iter().any(|c| c.function_id == "harness::status"));
    let out = m.command(
        "s1",
        &Command::Unqueue {
            entry_id: "q1".into(),
        },
        4,
    );
    assert_eq!(
        (out.calls[0].function_id.as_str(), &out.calls[0].payload),
        (
            "harness::unqueue",
            &json!({"session_id": "s1", "entry_id": "q1"})
        )
    );
    // The dialog's command comes through the engine's own session (root "").
    let out = m.command(
        "",
        &Command::NewHarnessSession(switchboard_core::msg::HarnessSession {
            model: "m1".into(),
            provider: Some("openrouter".into()),
            title: "Docs".into(),
            allow: vec!["fs::read".into(), "approval::list-pending".into()],
            message: "write them".into(),
        }),
        5,
    );
    let send = out.calls[0].clone();
    assert_eq!(send.function_id, "harness::send");
    assert_eq!(send.payload["message"], "write them");
    assert_eq!(send.payload["model"], "m1");
    // Top-level next to the model, as the golden `SendRequest` has it (not an option).
    assert_eq!(send.payload["provider"], "openrouter");
    assert!(send.payload["options"].get("provider").is_none());
    assert_eq!(
        send.payload["options"]["functions"]["allow"],
        json!(["fs::read"])
    );
    assert!(out.events.iter().any(|(r, e)| r.is_empty()
        && matches!(e, BackendEvent::Protocol { text, .. } if text.contains("approval::list-pending"))));
    // Its result opens the new root even before `session::created` arrives, once.
    let r = m.on_result(
        "harness::send",
        &send.payload,
        &json!({"accepted": true, "session_id": "s-new", "turn_id": "t1"}),
        6,
    );
    assert_eq!(
        r.roots,
        vec![OpenRoot {
            key: "s-new".into(),
            title: "Docs".into()
        }]
    );
    // The user asked for it: the new root is shown when it opens.
    assert!(
        r.events
            .iter()
            .any(|(root, e)| root == "s-new" && *e == BackendEvent::Reveal)
    );
    let again = m.on_event(
        "session::created",
        &json!({"session_id": "s-new", "title": "Docs"}),
        7,
    );
    assert!(again.roots.is_empty());
    assert!(!again.events.iter().any(|(_, e)| *e == BackendEvent::Reveal));
    // An answer naming a session known before the request is not shown: the engine cannot
    // pick which session the user looks at.
    let other = m.new_session("again", "claude-x", None, "", &[]);
    let r = m.on_result(
        "harness::send",
        &other.calls[0].payload,
        &json!({"accepted": true, "session_id": "s1", "turn_id": "t2"}),
        7,
    );
    assert!(!r.events.iter().any(|(_, e)| *e == BackendEvent::Reveal));
    // A new session whose `session::created` came before the answer is still shown.
    let third = m.new_session("third", "claude-x", None, "Third", &[]);
    m.on_event(
        "session::created",
        &json!({"session_id": "s-3", "title": "Third"}),
        7,
    );
    let r = m.on_result(
        "harness::send",
        &third.calls[0].payload,
        &json!({"accepted": true, "session_id": "s-3", "turn_id": "t3"}),
        7,
    );
    assert!(
        r.events
            .iter()
            .any(|(root, e)| root == "s-3" && *e == BackendEvent::Reveal)
    );
    // Offline: nothing is sent, and it is said.
    m.offline();
    let out = m.command(
        "",
        &Command::NewHarnessSession(switchboard_core::msg::HarnessSession::default()),
        8,
    );
    assert!(out.calls.is_empty());
    assert!(out.events.iter().any(
        |(_, e)| matches!(e, BackendEvent::Protocol { text, .. } if text.contains("offline"))
    ));
}

#[test]
fn a_failed_queue_change_is_said_and_the_queue_re_read() {
    let mut m = online();
    let out = m.unqueue("s1", "q1");
    let c = out.calls[0].clone();
    let r = m.on_error(
        &c.function_id,
        &c.payload,
        "TIMEOUT",
        "no result in time",
        2,
    );
    assert!(r.events.iter().any(|(root, e)| root == "s1"
        && matches!(e, BackendEvent::Protocol { text, .. } if text.contains("harness::unqueue failed"))));
    assert_eq!(
        r.calls
            .iter()
            .map(|c| (c.function_id.as_str(), c.payload.clone()))
            .collect::<Vec<_>>(),
        vec![(
            "harness::status",
            json!({"session_id": "s1", "verbose": true})
        )]
    );
}

#[test]
fn a_queued_message_landing_in_the_transcript_re_reads_the_queue() {
    let mut m = online();
    let user =
        json!({"role": "user", "content": [{"type": "text", "text": "next"}], "timestamp": 1});
    m.on_result(
        "harness::status",
        &json!({"session_id": "s1", "verbose": true}),
        &json!({"session_id": "s1", "status": "running", "expects_wake": false,
                "queued": [{"entry_id": "q1", "id": "q1", "message": user, "queued_at": 1, "session_id": "s1"}]}),
        2,
    );
    let status_reads = |out: &Out| {
        out.calls
            .iter()
            .filter(|c| c.function_id == "harness::status")
            .count()
    };
    // Another entry changes nothing; the queued one's entry id re-reads once.
    let other = m.on_event(
        "session::message-added",
        &json!({"session_id": "s1", "entry_id": "e9", "message": user}),
        3,
    );
    assert_eq!(status_reads(&other), 0);
    let drained = m.on_event(
        "session::message-added",
        &json!({"session_id": "s1", "entry_id": "q1", "message": user}),
        4,
    );
    assert_eq!(status_reads(&drained), 1);
    let again = m.on_event(
        "session::message-added",
        &json!({"session_id": "s1", "entry_id": "q1", "message": user}),
        5,
    );
    assert_eq!(
        status_reads(&again),
        0,
        "a duplicate delivery reads nothing more"
    );
}

/// A real engine without the harness worker answers `session::list` with
/// `function_not_found`: with no root to tell, the engine's own session says so (it used to
/// show only "Live" and "No messages yet").
#[test]
fn an_engine_without_the_harness_says_so_on_the_engine_session() {
    let mut m = Mapper::new("t");
    let out = m.reconnected();
    let list = out
        .calls
        .iter()
        .find(|c| c.function_id == "session::list")
        .expect("the first reads list the sessions")
        .clone();
    let out = m.on_error(
        "session::list",
        &list.payload,
        "function_not_found",
        "Function session::list not found",
        1,
    );
    let harness = info(&out, "harness").flatten().unwrap_or_default();
    assert!(harness.contains("harness worker running"), "{harness:?}");
    assert!(
        out.events.iter().any(|(root, e)| root.is_empty()
            && matches!(e, BackendEvent::Protocol { level: Level::Error, text }
                if text.contains("session::list failed: function_not_found"))),
        "{:?}",
        out.events
    );
}
