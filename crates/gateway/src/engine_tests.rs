//! The engine against the rows of reference §11 that need no network.

use super::*;
use std::path::PathBuf;

struct T {
    base: PathBuf,
    e: Engine,
}

fn pin(mode: Mode) -> Pinned {
    Pinned {
        workspace_id: "ws1".into(),
        intention: "fix the tests".into(),
        mode,
        extra_tools: Vec::new(),
    }
}

fn setup(name: &str, mode: Mode) -> T {
    let base = std::env::temp_dir().join(format!("sb-gw-engine-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("proj")).unwrap();
    std::fs::write(base.join("proj/a.txt"), "hello\n").unwrap();
    let e = open(&base, mode);
    T { base, e }
}

fn open(base: &std::path::Path, mode: Mode) -> Engine {
    let root = Root::open(&base.join("proj")).unwrap();
    let j = Journal::open(&base.join("data/j.jsonl"), switchboard_record::now_ms()).unwrap();
    Engine::new(pin(mode), root, j)
}

fn call(id: &str, session: &str, tool: &str, args: Value) -> String {
    json!({"type": "call", "protocol": 1, "id": id, "workspaceId": "ws1", "sessionId": session,
           "intention": "fix the tests", "tool": tool, "args": args})
    .to_string()
}

fn sent(out: &[Out]) -> Vec<Value> {
    out.iter()
        .filter_map(|o| match o {
            Out::Send(f) => Some(serde_json::from_str(f).unwrap()),
            _ => None,
        })
        .collect()
}

fn code(out: &[Out]) -> String {
    let s = sent(out);
    assert_eq!(s.len(), 1, "{out:?}");
    s[0]["result"]["structuredContent"]["code"]
        .as_str()
        .unwrap_or("ok")
        .to_string()
}

fn gate(out: &[Out]) -> Gate {
    out.iter()
        .find_map(|o| match o {
            Out::Gate(g) => Some(g.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no gate in {out:?}"))
}

fn sha(s: &str) -> String {
    sha256_hex(s.as_bytes())
}

#[test]
fn pinned_fields_are_checked_and_refusals_are_final() {
    let mut t = setup("pins", Mode::Ask);
    let ok = t.e.on_frame(&call("0", "s1", "workspace_info", json!({})));
    assert_eq!(code(&ok), "ok");
    let mut wrong_ws: Value =
        serde_json::from_str(&call("1", "s1", "workspace_info", json!({}))).unwrap();
    wrong_ws["workspaceId"] = json!("other");
    assert_eq!(
        code(&t.e.on_frame(&wrong_ws.to_string())),
        "workspace_mismatch"
    );
    let mut wrong_int: Value =
        serde_json::from_str(&call("2", "s1", "workspace_info", json!({}))).unwrap();
    wrong_int["intention"] = json!("delete everything");
    let first = t.e.on_frame(&wrong_int.to_string());
    assert_eq!(code(&first), "intention_mismatch");
    assert_eq!(
        code(&t.e.on_frame(&call("3", "s1", "workspace_format_disk", json!({})))),
        "unknown_tool"
    );
    for (id, args) in [
        ("4", json!({"path": "a.txt", "extra": true})),
        ("5", json!({"path": "a.txt", "limit": 0})),
        ("6", json!("{\"path\": 7}")),
    ] {
        assert_eq!(
            code(&t.e.on_frame(&call(id, "s1", "workspace_read", args))),
            "schema_violation",
            "{id}"
        );
    }
    // Final: after a restart the same id gets the same bytes from the journal.
    drop(t.e);
    let mut e = open(&t.base, Mode::Ask);
    let again = e.on_frame(&wrong_int.to_string());
    assert_eq!(first, again);
}

#[test]
fn args_may_be_a_json_string() {
    let mut t = setup("argstr", Mode::Ask);
    let out = t.e.on_frame(&call(
        "1",
        "s1",
        "workspace_read",
        json!("{\"path\":\"a.txt\"}"),
    ));
    assert_eq!(
        sent(&out)[0]["result"]["structuredContent"]["content"],
        "hello\n"
    );
    assert!(matches!(out[0], Out::Ran { .. }), "a read is audited");
}

#[test]
fn an_approved_write_is_journaled_and_a_duplicate_is_answered_byte_for_byte() {
    let mut t = setup("dup", Mode::Ask);
    let args = json!({"path": "a.txt", "content": "bye\n", "expectedSha256": sha("hello\n")});
    let out =
        t.e.on_frame(&call("w1", "s1", "workspace_write", args.clone()));
    let g = gate(&out);
    let Ask::Edit { old, new, .. } = &g.ask else {
        panic!("{g:?}")
    };
    assert_eq!((old.as_str(), new.as_str()), ("hello\n", "bye\n"));
    // Re-sent while it waits: joins the card, no second one.
    assert_eq!(
        t.e.on_frame(&call("w1", "s1", "workspace_write", args.clone())),
        vec![Out::Joined { gate: g.gate }]
    );
    let done = t.e.decide(g.gate, Decision::Allow);
    assert_eq!(code(&done), "ok");
    assert_eq!(
        std::fs::read_to_string(t.base.join("proj/a.txt")).unwrap(),
        "bye\n"
    );
    // Someone edits the file; the duplicate must not write again.
    std::fs::write(t.base.join("proj/a.txt"), "owner edit\n").unwrap();
    let dup =
        t.e.on_frame(&call("w1", "s1", "workspace_write", args.clone()));
    // The same bytes, and no second effect row: nothing happened this time.
    let frames: Vec<Out> = done
        .iter()
        .filter(|o| matches!(o, Out::Send(_)))
        .cloned()
        .collect();
    assert_eq!(dup, frames);
    drop(t.e);
    let mut e = open(&t.base, Mode::Ask);
    assert_eq!(
        e.on_frame(&call("w1", "s1", "workspace_write", args)),
        frames
    );
    assert_eq!(
        std::fs::read_to_string(t.base.join("proj/a.txt")).unwrap(),
        "owner edit\n"
    );
    // Same id, other arguments.
    let other = json!({"path": "a.txt", "content": "x", "expectedSha256": null});
    assert_eq!(
        code(&e.on_frame(&call("w1", "s1", "workspace_write", other))),
        "id_conflict"
    );
    // The journal has the SHA of the content, never the content.
    let j = std::fs::read_to_string(t.base.join("data/j.jsonl")).unwrap();
    assert!(j.contains(&sha("bye\n")) && !j.contains("bye\\n\""), "{j}");
}

#[test]
fn a_denial_is_final_and_carries_the_message() {
    let mut t = setup("deny", Mode::Ask);
    let c = call(
        "x1",
        "s1",
        "workspace_exec",
        json!({"command": "touch pwned"}),
    );
    let g = gate(&t.e.on_frame(&c));
    assert_eq!(
        g.ask,
        Ask::Exec {
            command: "touch pwned".into(),
            cwd: ".".into()
        }
    );
    let out = t.e.decide(g.gate, Decision::Deny(Some("not now".into())));
    assert_eq!(code(&out), "denied_by_owner");
    assert!(
        sent(&out)[0]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("not now")
    );
    // A re-send never raises a second gate.
    assert_eq!(t.e.on_frame(&c), out);
    assert!(!t.base.join("proj/pwned").exists());
}

#[test]
fn a_fifth_waiting_call_is_busy_and_not_journaled() {
    let mut t = setup("busy", Mode::Ask);
    let mut gates = Vec::new();
    for i in 0..4 {
        let out = t.e.on_frame(&call(
            &format!("q{i}"),
            "s1",
            "workspace_ask",
            json!({"question": format!("q{i}?")}),
        ));
        gates.push(gate(&out).gate);
    }
    let fifth = call("q4", "s1", "workspace_ask", json!({"question": "q4?"}));
    assert_eq!(code(&t.e.on_frame(&fifth)), "busy");
    let out = t.e.decide(gates[0], Decision::Answer("yes".into()));
    assert_eq!(
        sent(&out)[0]["result"]["structuredContent"]["answer"],
        "yes"
    );
    // The same id is served once a slot is free.
    let g = gate(&t.e.on_frame(&fifth));
    assert_eq!(t.e.decide(g.gate, Decision::Cancel).len(), 1);
}

#[test]
fn an_answer_yes_grants_nothing() {
    let mut t = setup("askyes", Mode::Ask);
    let g = gate(&t.e.on_frame(&call(
        "a1",
        "s1",
        "workspace_ask",
        json!({"question": "may I delete a.txt?"}),
    )));
    assert!(matches!(g.ask, Ask::Question { .. }));
    t.e.decide(g.gate, Decision::Answer("yes".into()));
    let out = t.e.on_frame(&call(
        "d1",
        "s1",
        "workspace_delete",
        json!({"path": "a.txt", "expectedSha256": sha("hello\n")}),
    ));
    assert_eq!(
        gate(&out).ask,
        Ask::Delete {
            path: "a.txt".into()
        }
    );
    assert!(t.base.join("proj/a.txt").exists());
}

#[test]
fn a_second_conversation_waits_for_the_owner() {
    let mut t = setup("conv", Mode::Ask);
    assert_eq!(
        code(&t.e.on_frame(&call("1", "s1", "workspace_info", json!({})))),
        "ok"
    );
    let g = gate(&t.e.on_frame(&call("2", "s2", "workspace_info", json!({}))));
    assert_eq!(g.ask, Ask::Conversation);
    assert_eq!(code(&t.e.decide(g.gate, Decision::Allow)), "ok");
    let g = gate(&t.e.on_frame(&call("3", "s3", "workspace_info", json!({}))));
    assert_eq!(
        code(&t.e.decide(g.gate, Decision::Deny(None))),
        "session_unknown"
    );
    assert_eq!(
        code(&t.e.on_frame(&call("4", "s3", "workspace_info", json!({})))),
        "session_unknown"
    );
    assert_eq!(t.e.sessions(), ["s1", "s2"]);
}

#[test]
fn commands_belong_to_their_conversation() {
    let mut t = setup("own", Mode::Full);
    let out = t.e.on_frame(&call(
        "e1",
        "s1",
        "workspace_exec",
        json!({"command": "sleep 5"}),
    ));
    let id = sent(&out)[0]["result"]["structuredContent"]["commandId"]
        .as_str()
        .unwrap()
        .to_string();
    t.e.accepted.push("s2".into());
    for (tool, args) in [
        ("workspace_poll", json!({"commandId": id})),
        ("workspace_input", json!({"commandId": id, "text": "x"})),
        ("workspace_stop", json!({"commandId": id})),
    ] {
        assert_eq!(
            code(&t.e.on_frame(&call(&format!("{tool}2"), "s2", tool, args))),
            "command_not_owned",
            "{tool}"
        );
    }
    assert_eq!(
        code(&t.e.on_frame(&call(
            "p1",
            "s1",
            "workspace_poll",
            json!({"commandId": id})
        ))),
        "ok"
    );
    assert_eq!(
        code(&t.e.on_frame(&call(
            "st1",
            "s1",
            "workspace_stop",
            json!({"commandId": id})
        ))),
        "ok"
    );
}

#[test]
fn path_escapes_are_outside_the_root() {
    let mut t = setup("escape", Mode::Full);
    std::os::unix::fs::symlink("/etc", t.base.join("proj/etc")).unwrap();
    for (i, p) in [
        "../x",
        "a/../../x",
        "/etc/passwd",
        "C:\\x",
        "\\\\server\\share",
        "a\u{0}b",
        "etc/passwd",
    ]
    .iter()
    .enumerate()
    {
        assert_eq!(
            code(&t.e.on_frame(&call(
                &format!("r{i}"),
                "s1",
                "workspace_read",
                json!({"path": p})
            ))),
            "path_outside_root",
            "{p:?}"
        );
    }
    let w = call(
        "w",
        "s1",
        "workspace_write",
        json!({"path": "../evil", "content": "x", "expectedSha256": null}),
    );
    assert_eq!(code(&t.e.on_frame(&w)), "path_outside_root");
    assert!(!t.base.join("evil").exists());
}

#[test]
fn an_interrupted_effect_is_uncertain_never_rerun_and_settled_by_its_sha() {
    let mut t = setup("crash", Mode::Edits);
    let args = json!({"path": "a.txt", "content": "new\n", "expectedSha256": sha("hello\n")});
    // What a crash leaves: the executing receipt on disk, no completed one.
    let c = match codec::decode(&call("w9", "s1", "workspace_write", args.clone())).unwrap() {
        Inbound::Call(c) => c,
        _ => unreachable!(),
    };
    let hash = validate::args_hash(
        "ws1",
        "s1",
        Some("fix the tests"),
        Some("workspace_write"),
        &args,
    );
    let plan = files::plan_write(&t.e.root, args.as_object().unwrap()).unwrap();
    t.e.journal
        .executing(
            &t.e.key_of(&c),
            &hash,
            "workspace_write",
            plan.effect("workspace_write"),
        )
        .unwrap();
    drop(t.e);
    let mut e = open(&t.base, Mode::Edits);
    let out = e.on_frame(&call("w9", "s1", "workspace_write", args.clone()));
    assert_eq!(code(&out), "uncertain_effect");
    assert_eq!(e.waiting(), 0, "an uncertain receipt holds no slot");
    assert_eq!(
        std::fs::read_to_string(t.base.join("proj/a.txt")).unwrap(),
        "hello\n"
    );
    let u = e.uncertain();
    assert_eq!(u.len(), 1);
    assert_eq!(u[0].1.effect["path"], "a.txt");
    // Conclusive: the file still has the old revision, so it did not happen.
    let body = e.settle(&u[0].0, None).unwrap();
    assert!(body.contains("was not changed"));
    assert_eq!(
        code(&e.on_frame(&call("w9", "s1", "workspace_write", args))),
        "uncertain_effect"
    );
    assert!(e.uncertain().is_empty());
    assert_eq!(
        std::fs::read_to_string(t.base.join("proj/a.txt")).unwrap(),
        "hello\n"
    );
}

#[test]
fn modes_pre_approve_edits_but_not_commands() {
    let mut t = setup("modes", Mode::Edits);
    let out = t.e.on_frame(&call(
        "w",
        "s1",
        "workspace_write",
        json!({"path": "n.txt", "content": "x", "expectedSha256": null}),
    ));
    assert!(matches!(&out[0], Out::Ran { outcome, .. } if outcome.contains("pre-approved")));
    assert_eq!(code(&out), "ok");
    let out = t.e.on_frame(&call(
        "x",
        "s1",
        "workspace_exec",
        json!({"command": "true"}),
    ));
    gate(&out);
}

#[test]
fn workspace_tool_needs_the_latest_listing_and_no_selectors() {
    let mut t = setup("extra", Mode::Ask);
    t.e.pin.extra_tools =
        extra::parse("[[gateway.tool]]\nname = \"echo\"\nargv = [\"cat\"]\neffect = \"read\"\n")
            .unwrap();
    let c = |id: &str, a: Value| {
        call(
            id,
            "s1",
            "workspace_tool",
            json!({"name": "echo", "arguments": a}),
        )
    };
    assert_eq!(code(&t.e.on_frame(&c("1", json!({})))), "unknown_tool");
    let list = t.e.on_frame(&call("l", "s1", "workspace_tools", json!({})));
    assert_eq!(
        sent(&list)[0]["result"]["structuredContent"]["tools"][0]["name"],
        "echo"
    );
    assert_eq!(
        code(&t.e.on_frame(&c("2", json!({"sessionId": "s9"})))),
        "permission_denied"
    );
    let out = t.e.on_frame(&c("3", json!({"k": 1})));
    assert_eq!(
        sent(&out)[0]["result"]["structuredContent"]["output"],
        json!({"k": 1})
    );
}

#[test]
fn a_ready_with_another_protocol_closes_and_a_call_with_one_is_invalid() {
    let mut t = setup("proto", Mode::Ask);
    assert!(t.e.on_frame(r#"{"type":"ready","protocol":1}"#).is_empty());
    assert!(matches!(
        t.e.on_frame(r#"{"type":"ready","protocol":2}"#)[0],
        Out::Close(_)
    ));
    let mut c: Value = serde_json::from_str(&call("1", "s1", "workspace_info", json!({}))).unwrap();
    c["protocol"] = json!(2);
    assert_eq!(code(&t.e.on_frame(&c.to_string())), "invalid_frame");
    assert!(matches!(t.e.on_frame("not json")[0], Out::Dropped(_)));
}

#[test]
fn a_full_journal_refuses_effects_before_they_run() {
    let mut t = setup("full", Mode::Full);
    t.e.journal.set_cap(0);
    let out = t.e.on_frame(&call(
        "w",
        "s1",
        "workspace_write",
        json!({"path": "n.txt", "content": "x", "expectedSha256": null}),
    ));
    assert_eq!(code(&out), "failed");
    assert!(!t.base.join("proj/n.txt").exists(), "nothing happened");
    // Transient: once there is room the same id runs.
    t.e.journal.set_cap(10);
    let out = t.e.on_frame(&call(
        "w",
        "s1",
        "workspace_write",
        json!({"path": "n.txt", "content": "x", "expectedSha256": null}),
    ));
    assert_eq!(code(&out), "ok");
}

/// The "accept conversation X?" wait holds one of the 4 slots shared by every conversation
/// of the channel: with it and three questions waiting, a fifth call is `busy` (and not
/// journaled); accepting hands the slot to the call itself, refusing frees it.
#[test]
fn the_accept_conversation_wait_holds_an_in_flight_slot() {
    let mut t = setup("convslot", Mode::Ask);
    let ask = |id: &str, s: &str| call(id, s, "workspace_ask", json!({"question": "why?"}));
    let mut qs = Vec::new();
    for i in 0..3 {
        qs.push(gate(&t.e.on_frame(&ask(&format!("q{i}"), "s1"))).gate);
    }
    let accept = gate(&t.e.on_frame(&ask("c1", "s2")));
    assert_eq!(accept.ask, Ask::Conversation);
    assert_eq!(t.e.waiting(), 4);
    // Neither another conversation's call nor one of the accepted conversation gets in.
    assert_eq!(code(&t.e.on_frame(&ask("q9", "s1"))), "busy");
    assert_eq!(code(&t.e.on_frame(&ask("c9", "s3"))), "busy");
    let key = ("ws1".to_string(), "s3".to_string(), "c9".to_string());
    assert!(t.e.journal().get(&key).is_none(), "busy is not journaled");
    // Accepting: the call goes on to its own card, in the same slot.
    let q = gate(&t.e.decide(accept.gate, Decision::Allow));
    assert!(matches!(q.ask, Ask::Question { .. }));
    assert_eq!(t.e.waiting(), 4);
    assert_eq!(code(&t.e.on_frame(&ask("q9", "s1"))), "busy");
    // Answering frees a slot for the next call.
    t.e.decide(qs[0], Decision::Answer("because".into()));
    assert_eq!(t.e.waiting(), 3);
    let g = gate(&t.e.on_frame(&ask("c9", "s3")));
    assert_eq!(g.ask, Ask::Conversation);
    assert_eq!(
        code(&t.e.decide(g.gate, Decision::Deny(None))),
        "session_unknown"
    );
    assert_eq!(t.e.waiting(), 3, "refusing the conversation frees its slot");
}

#[path = "engine_hostile_tests.rs"]
mod hostile;

/// Issue 22 item 5: what an approved effect did follows its result frame, as a value the
/// row is made of: a write's bytes and revision, a command's handle, a refusal after the
/// approval (the file changed after the card was shown).
#[test]
fn an_approved_effect_tells_its_outcome() {
    let mut t = setup("outcome", Mode::Ask);
    let effect_of = |out: &[Out]| {
        assert!(
            matches!(out[0], Out::Send(_)),
            "the frame goes first: {out:?}"
        );
        match out.last() {
            Some(Out::Effect {
                session,
                call_id,
                outcome,
            }) => (session.clone(), call_id.clone(), outcome.clone()),
            _ => panic!("no effect row in {out:?}"),
        }
    };
    let args = json!({"path": "a.txt", "content": "bye\n", "expectedSha256": sha("hello\n")});
    let g = gate(&t.e.on_frame(&call("w1", "s1", "workspace_write", args)));
    let (session, call_id, o) = effect_of(&t.e.decide(g.gate, Decision::Allow));
    assert_eq!((session.as_str(), call_id.as_str()), ("s1", "w1"));
    assert_eq!(
        o,
        effect::Outcome::File {
            tool: "workspace_write".into(),
            path: "a.txt".into(),
            created: false,
            bytes: Some(4),
            sha256: Some(sha("bye\n")),
        }
    );
    // Shown on the card, changed before the approval: refused, and the row says so.
    let args = json!({"path": "a.txt", "content": "again\n", "expectedSha256": sha("bye\n")});
    let g = gate(&t.e.on_frame(&call("w2", "s1", "workspace_write", args)));
    std::fs::write(t.base.join("proj/a.txt"), "someone else\n").unwrap();
    let out = t.e.decide(g.gate, Decision::Allow);
    assert_ne!(code(&out), "ok");
    let (_, _, o) = effect_of(&out);
    assert!(
        matches!(&o, effect::Outcome::Refused { tool, .. } if tool == "workspace_write"),
        "{o:?}"
    );
    // Its directory swapped for a link outside the root after the card: refused too.
    std::fs::create_dir_all(t.base.join("proj/sub")).unwrap();
    std::fs::create_dir_all(t.base.join("outside")).unwrap();
    let args = json!({"path": "sub/x.txt", "content": "x\n", "expectedSha256": null});
    let g = gate(&t.e.on_frame(&call("w3", "s1", "workspace_write", args)));
    std::fs::remove_dir(t.base.join("proj/sub")).unwrap();
    std::os::unix::fs::symlink(t.base.join("outside"), t.base.join("proj/sub")).unwrap();
    let out = t.e.decide(g.gate, Decision::Allow);
    assert_eq!(code(&out), "path_outside_root");
    let (_, _, o) = effect_of(&out);
    let effect::Outcome::Refused { why, .. } = &o else {
        panic!("{o:?}")
    };
    assert!(why.starts_with("sub/x.txt"), "{why}");
    assert!(!t.base.join("outside/x.txt").exists());
    // A command: its handle, to follow its output.
    let g = gate(&t.e.on_frame(&call(
        "x1",
        "s1",
        "workspace_exec",
        json!({"command": "printf hi"}),
    )));
    let (_, _, o) = effect_of(&t.e.decide(g.gate, Decision::Allow));
    let effect::Outcome::Command { command, watch, .. } = o else {
        panic!("{o:?}")
    };
    assert_eq!(command, "printf hi");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let r = watch.read(0, 1024);
        if r.status != crate::tools::exec::Status::Running {
            assert_eq!(r.bytes, b"hi");
            break;
        }
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // A denial is no effect: no row beyond the audit.
    let g = gate(&t.e.on_frame(&call(
        "x2",
        "s1",
        "workspace_exec",
        json!({"command": "true"}),
    )));
    let out = t.e.decide(g.gate, Decision::Deny(None));
    assert!(
        !out.iter().any(|o| matches!(o, Out::Effect { .. })),
        "{out:?}"
    );
}
