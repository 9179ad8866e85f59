//! Early stops and modes: denials, hook blocks, interrupts, end of input, bypass, hook matchers.

use super::*;
use crate::demo::agent::gates::matcher_matches;
use crate::demo::agent::texts::{Q1, Q2};

#[test]
fn deny_paths_and_hook_block() {
    let mut h = Host::start(ARGS, &[]);
    h.send(init_req(
        json!({"PreToolUse": [{"matcher": "Grep", "hookCallbackIds": ["g1"]}]}),
        Value::Null,
    ));
    h.next();
    h.send(user("go"));
    loop {
        let v = h.next();
        if is_result(&v) {
            break;
        }
        if v["type"] != "control_request" {
            continue;
        }
        let id = v["request_id"].as_str().unwrap().to_string();
        let req = &v["request"];
        match (req["subtype"].as_str().unwrap(), req["tool_name"].as_str()) {
            ("can_use_tool", Some("Bash")) => h.send(ok(
                &id,
                json!({"behavior": "deny", "message": "not in my repo"}),
            )),
            ("can_use_tool", Some("Edit")) => h.send(ok(
                &id,
                json!({"behavior": "deny", "message": "log via tracing instead"}),
            )),
            ("hook_callback", _) => h.send(ok(
                &id,
                json!({"decision": "block", "reason": "no searching today"}),
            )),
            ("can_use_tool", Some("AskUserQuestion")) => h.send(ok(
                &id,
                json!({"behavior": "deny", "message": "ask me later"}),
            )),
            ("elicitation", _) => h.send(ok(&id, json!({"action": "decline"}))),
            other => panic!("unexpected gate {other:?}"),
        }
    }
    let (_, lines) = h.close();
    common_checks(&lines);
    assert!(
        !lines
            .iter()
            .any(|l| l["request"]["subtype"] == "request_user_dialog")
    );
    let all = texts(&lines);
    assert!(all.contains("You denied it: not in my repo"), "{all}");
    assert!(
        all.contains("You declined to answer: ask me later"),
        "{all}"
    );
    assert!(all.contains("log via tracing instead"), "{all}");
    assert!(all.contains("no searching today"), "{all}");
    let trs = tool_results(&lines);
    assert!(trs.iter().any(
        |b| b["content"] == "Blocked by hook: no searching today" && b["is_error"] == true
    ));
    assert!(
        trs.iter()
            .any(|b| b["content"] == "not in my repo" && b["is_error"] == true)
    );
    let result = lines.iter().find(|l| is_result(l)).unwrap();
    assert_eq!(result["subtype"], "success");
    assert!(result["permission_denials"].as_array().unwrap().len() >= 3);
}

#[test]
fn interrupt_while_gated_cancels_and_next_turn_echoes() {
    let mut h = Host::start(ARGS, &[]);
    h.send(init_req(Value::Null, json!([])));
    h.next();
    h.send(user("start"));
    let gate = h.until(|l| l["type"] == "control_request");
    let gate_id = gate["request_id"].as_str().unwrap().to_string();
    h.send(json!({"type": "control_request", "request_id": "sb-int-1", "request": {"subtype": "interrupt"}}));
    let r = h.until(|l| l["type"] == "control_response");
    assert_eq!(r["response"]["request_id"], "sb-int-1");
    assert_eq!(r["response"]["response"], json!({"still_queued": []}));
    let cancel = h.until(|l| l["type"] == "control_cancel_request");
    assert_eq!(cancel["request_id"], gate_id.as_str());
    let result = h.until(is_result);
    assert_eq!(result["terminal_reason"], "aborted_tools");
    assert_eq!(result["subtype"], "error_during_execution");
    h.until(|l| l["state"] == "idle");
    // A late answer to the withdrawn gate is ignored.
    h.send(ok(
        &gate_id,
        json!({"behavior": "allow", "updatedInput": {}}),
    ));
    assert!(h.quiet());
    // Next turn echoes and asks again for bash.
    h.send(user("please run bash"));
    let gate = h.until(|l| l["type"] == "control_request");
    assert_eq!(gate["request"]["input"]["command"], "touch again.txt");
    let id = gate["request_id"].as_str().unwrap().to_string();
    h.send(ok(
        &id,
        json!({"behavior": "allow", "updatedInput": gate["request"]["input"]}),
    ));
    let result = h.until(is_result);
    assert_eq!(result["subtype"], "success");
    let (code, lines) = h.close();
    assert_eq!(code, 0);
    common_checks(&lines);
    let all = texts(&lines);
    assert!(all.contains("You said: please run bash"), "{all}");
    assert!(all.contains("You allowed it once."), "{all}");
    assert_eq!(lines.iter().filter(|l| is_result(l)).count(), 2);
}

#[test]
fn interrupt_while_streaming_marks_partial_line_aborted() {
    let preload = [
        init_req(Value::Null, json!([])),
        user("hello"),
        json!({"type": "control_request", "request_id": "sb-int-9", "request": {"subtype": "interrupt"}}),
    ];
    let mut h = Host::start(ARGS, &preload);
    let result = h.until(is_result);
    assert_eq!(result["terminal_reason"], "aborted_streaming");
    let (code, lines) = h.close();
    assert_eq!(code, 0);
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "assistant" && l["aborted"] == true)
    );
    assert!(
        lines
            .iter()
            .any(|l| l["response"]["request_id"] == "sb-int-9")
    );
    assert!(!lines.iter().any(|l| l["type"] == "control_request"));
}

#[test]
fn deny_with_interrupt_ends_turn() {
    let mut h = Host::start(ARGS, &[]);
    h.send(init_req(Value::Null, json!([])));
    h.next();
    h.send(user("go"));
    let gate = h.until(|l| l["type"] == "control_request");
    let id = gate["request_id"].as_str().unwrap().to_string();
    h.send(ok(
        &id,
        json!({"behavior": "deny", "message": "stop right there", "interrupt": true}),
    ));
    let result = h.until(is_result);
    assert_eq!(result["terminal_reason"], "aborted_tools");
    let (_, lines) = h.close();
    common_checks(&lines);
    assert_eq!(
        lines
            .iter()
            .filter(|l| l["type"] == "control_request")
            .count(),
        1
    );
    assert!(!lines.iter().any(|l| l["subtype"] == "task_started"));
}

#[test]
fn eof_exits_promptly_mid_gate() {
    let mut h = Host::start(ARGS, &[]);
    h.send(init_req(Value::Null, json!([])));
    h.next();
    h.send(user("go"));
    h.until(|l| l["type"] == "control_request");
    let (code, lines) = h.close();
    assert_eq!(code, 0);
    assert!(!lines.iter().any(is_result));
}

#[test]
fn bypass_mode_skips_permission_gates() {
    let args = ["-p", "--permission-mode=bypassPermissions"];
    let mut h = Host::start(&args, &[]);
    h.send(init_req(Value::Null, json!([])));
    h.next();
    h.send(user("go"));
    loop {
        let v = h.next();
        if is_result(&v) {
            break;
        }
        if v["type"] == "control_request" {
            let id = v["request_id"].as_str().unwrap().to_string();
            let req = &v["request"];
            assert_ne!(req["tool_name"], "Bash");
            assert_ne!(req["tool_name"], "Edit");
            match req["subtype"].as_str().unwrap() {
                "can_use_tool" => {
                    let qs = req["input"]["questions"].clone();
                    h.send(ok(&id, json!({"behavior": "allow", "updatedInput": {"questions": qs, "answers": {Q1: "Admin", Q2: "Everywhere at once"}}})));
                }
                "elicitation" => h.send(ok(&id, json!({"action": "cancel"}))),
                other => panic!("unexpected {other}"),
            }
        }
    }
    let (_, lines) = h.close();
    common_checks(&lines);
    // No partial messages without the flag.
    assert!(!lines.iter().any(|l| l["type"] == "stream_event"));
    let all = texts(&lines);
    assert!(
        all.contains("approved automatically (bypassPermissions mode)"),
        "{all}"
    );
}

#[test]
fn matcher_rules() {
    assert!(matcher_matches("*", "Grep"));
    assert!(matcher_matches("", "Grep"));
    assert!(matcher_matches("Read|Grep", "Grep"));
    assert!(!matcher_matches("Read|Write", "Grep"));
    assert!(matcher_matches("Task", "Agent"));
}
