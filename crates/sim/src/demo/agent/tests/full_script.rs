//! The whole first turn on the allow path: every gate answered yes, every frame checked.

use super::*;
use crate::demo::agent::texts::{EDIT_NEW, EDIT_OLD, Q1, Q2};

#[test]
fn full_script_allow_path() {
    let mut h = Host::start(ARGS, &[]);
    h.send_raw("this is not json");
    h.send(init_req(
        json!({"PreToolUse": [{"matcher": "Read|Grep", "hookCallbackIds": ["sb-hook-grep"]}]}),
        json!(["refusal_fallback_prompt"]),
    ));
    let init = h.next();
    assert_eq!(init["response"]["request_id"], "sb-init-1");
    assert!(
        init["response"]["response"]["models"]
            .as_array()
            .unwrap()
            .len()
            >= 3
    );
    h.send(user("Add audit logging to the auth module"));

    let mut edit_gate: Option<String> = None;
    let mut saw_two_gates = false;
    let mut mode_sent = false;
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
            ("can_use_tool", Some("Bash")) => {
                assert_eq!(req["title"], "Claude wants to run touch demo-output.txt");
                assert_eq!(req["permission_suggestions"].as_array().unwrap().len(), 2);
                if !mode_sent {
                    mode_sent = true;
                    h.send(json!({"type": "control_request", "request_id": "sb-mode-1", "request": {"subtype": "set_permission_mode", "mode": "plan"}}));
                    let r = h.until(|l| l["type"] == "control_response");
                    assert_eq!(r["response"]["request_id"], "sb-mode-1");
                    let s = h.next();
                    assert_eq!(s["subtype"], "status");
                    assert_eq!(s["permissionMode"], "plan");
                    h.send(json!({"type": "control_request", "request_id": "sb-mode-2", "request": {"subtype": "set_permission_mode", "mode": "default"}}));
                }
                let rule = json!([{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "touch demo-output.txt"}], "behavior": "allow", "destination": "session"}]);
                h.send(ok(&id, json!({"behavior": "allow", "updatedInput": req["input"], "updatedPermissions": rule})));
            }
            ("can_use_tool", Some("Edit")) => {
                assert!(req["agent_id"].is_string());
                assert_eq!(req["input"]["file_path"], "src/auth.rs");
                edit_gate = Some(id);
            }
            ("hook_callback", _) => {
                assert_eq!(req["callback_id"], "sb-hook-grep");
                let tool = req["input"]["tool_name"].as_str().unwrap();
                assert!(req["input"]["agent_id"].is_string());
                if tool == "Grep" {
                    assert_eq!(req["input"]["tool_input"]["pattern"], "fn authenticate");
                    assert!(edit_gate.is_some(), "Edit permission must still be open");
                    saw_two_gates = true;
                    h.send(ok(&id, json!({})));
                    let edit = edit_gate.take().unwrap();
                    let mut input = json!({"file_path": "src/auth.rs", "old_string": EDIT_OLD, "new_string": EDIT_NEW, "replace_all": false});
                    input["new_string"] = json!(
                        "    let session = Session::start(&user)?;\n    audit::login(&user);\n    Ok(session)"
                    );
                    h.send(ok(
                        &edit,
                        json!({"behavior": "allow", "updatedInput": input}),
                    ));
                } else {
                    assert_eq!(tool, "Read");
                    h.send(ok(&id, json!({})));
                }
            }
            ("can_use_tool", Some("AskUserQuestion")) => {
                assert_eq!(req["requires_user_interaction"], true);
                let qs = req["input"]["questions"].clone();
                assert_eq!(qs.as_array().unwrap().len(), 2);
                h.send(ok(&id, json!({"behavior": "allow", "updatedInput": {"questions": qs, "answers": {Q1: "Auth, Search", Q2: "Behind a flag"}}})));
            }
            ("request_user_dialog", _) => {
                assert_eq!(req["dialog_kind"], "refusal_fallback_prompt");
                h.send(ok(&id, json!({"behavior": "completed", "result": "retry"})));
            }
            ("elicitation", _) => {
                assert_eq!(req["mcp_server_name"], "tickets");
                h.send(ok(&id, json!({"action": "accept", "content": {"title": "Audit logging", "priority": "high", "estimate": 3, "notify": true}})));
            }
            other => panic!("unexpected gate {other:?}"),
        }
    }
    assert!(saw_two_gates);
    let (code, lines) = h.close();
    if std::env::var_os("SWITCHBOARD_DEMO_DUMP").is_some() {
        for l in &lines {
            println!("{l}");
        }
    }
    assert_eq!(code, 0);
    common_checks(&lines);

    let results: Vec<&Value> = lines.iter().filter(|l| is_result(l)).collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["subtype"], "success");
    assert_eq!(results[0]["is_error"], false);
    assert!(results[0]["usage"]["output_tokens"].as_u64().unwrap() > 0);

    // Fan-out: three sub-agents, one nested.
    let started: Vec<&Value> = lines
        .iter()
        .filter(|l| l["subtype"] == "task_started")
        .collect();
    assert_eq!(started.len(), 3);
    let nested: Vec<&&Value> = started
        .iter()
        .filter(|s| s["parent_task_id"].is_string())
        .collect();
    assert_eq!(nested.len(), 1);
    let explorer = started
        .iter()
        .find(|s| s["subagent_type"] == "Explore")
        .unwrap();
    assert_eq!(nested[0]["parent_task_id"], explorer["task_id"]);
    for s in &started {
        let tid = &s["task_id"];
        assert!(lines.iter().any(|l| l["subtype"] == "task_updated"
            && l["task_id"] == *tid
            && l["patch"]["status"] == "completed"));
        assert!(lines.iter().any(|l| l["subtype"] == "task_notification"
            && l["task_id"] == *tid
            && l["status"] == "completed"));
        assert!(
            lines
                .iter()
                .any(|l| l["type"] == "user" && l["tool_use_result"]["agentId"] == *tid)
        );
    }
    // The nested Agent tool_use is carried by an explorer line; its result too.
    let grep_tu = &nested[0]["tool_use_id"];
    let carrier = lines
        .iter()
        .find(|l| l["type"] == "assistant" && l["message"]["content"][0]["id"] == *grep_tu)
        .unwrap();
    assert_eq!(carrier["parent_tool_use_id"], explorer["tool_use_id"]);
    // Stream events inside sub-agents carry the parent.
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "stream_event" && l["parent_tool_use_id"] == *grep_tu)
    );

    let all = texts(&lines);
    assert!(
        all.contains("You allowed it and sent updatedPermissions"),
        "{all}"
    );
    assert!(
        all.contains("You changed the input before allowing it"),
        "{all}"
    );
    assert!(all.contains("Modules: Auth, Search"), "{all}");
    assert!(all.contains("Rollout: Behind a flag"), "{all}");
    assert!(all.contains("You chose: retry"), "{all}");
    assert!(all.contains("Audit logging"), "{all}");
    let trs = tool_results(&lines);
    assert!(
        trs.iter()
            .any(|b| b["content"] == "(simulated) created demo-output.txt")
    );
    assert!(trs.iter().any(|b| b["content"]
        == format!("Your questions have been answered: \"{Q1}\"=\"Auth, Search\", \"{Q2}\"=\"Behind a flag\". You can now continue with these answers in mind.")));
    assert!(lines.iter().any(|l| l["type"] == "future_event"));
    assert!(lines.iter().any(|l| l["type"] == "rate_limit_event"));
    assert!(lines.iter().any(|l| l["subtype"] == "compact_boundary"));
    assert!(lines.iter().any(|l| l["subtype"] == "api_retry"));
    assert!(
        lines
            .iter()
            .any(|l| l["subtype"] == "session_state_changed" && l["state"] == "idle")
    );
    assert!(lines.iter().any(
        |l| l["type"] == "stream_event" && l["event"]["delta"]["type"] == "thinking_delta"
    ));
    // Sharing message ids across blocks.
    let first_msg =
        lines.iter().find(|l| l["type"] == "assistant").unwrap()["message"]["id"].clone();
    assert!(
        lines
            .iter()
            .filter(|l| l["type"] == "assistant" && l["message"]["id"] == first_msg)
            .count()
            >= 3
    );
}
