//! Every frame the Claude encoder can produce, for every gate kind and every answer, validates
//! against the bundled schema (the full decision matrix), and so do our own requests.

use serde_json::{Value, json};
use switchboard::backend::claude::mapping::Mapper;
use switchboard::core::gate::Decision;
use switchboard::core::msg::{BackendEvent, Command};
use switchboard::schema::validate_claude_outbound_line;

fn request(id: &str, body: Value) -> String {
    json!({"type":"control_request","request_id":id,"request":body}).to_string()
}

fn requests() -> Vec<(&'static str, Value)> {
    vec![
        (
            "permission",
            json!({"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":"toolu_1",
                "input":{"command":"touch x","description":"d"},
                "permission_suggestions":[
                    {"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"touch x"}],"behavior":"allow","destination":"localSettings"},
                    {"type":"addDirectories","directories":["/tmp"],"destination":"session"},
                    {"type":"setMode","mode":"acceptEdits","destination":"session"}]}),
        ),
        (
            "mcp-permission",
            json!({"subtype":"can_use_tool","tool_name":"mcp__s__t","tool_use_id":"toolu_2","input":{}}),
        ),
        (
            "question",
            json!({"subtype":"can_use_tool","tool_name":"AskUserQuestion","tool_use_id":"toolu_3",
                "input":{"questions":[{"question":"Which?","header":"H","multiSelect":true,
                    "options":[{"label":"A","description":"a"},{"label":"B","description":"b"}]}]}}),
        ),
        (
            "breakpoint",
            json!({"subtype":"hook_callback","callback_id":"sb-break-Bash","tool_use_id":"toolu_4",
                "input":{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}}),
        ),
        (
            "dialog",
            json!({"subtype":"request_user_dialog","dialog_kind":"refusal_fallback_prompt","payload":{"options":["retry"]}}),
        ),
        (
            "elicitation",
            json!({"subtype":"elicitation","mcp_server_name":"t","message":"m",
                "requested_schema":{"type":"object","properties":{"x":{"type":"string"}}}}),
        ),
    ]
}

fn decisions(kind: &str) -> Vec<Decision> {
    match kind {
        "permission" | "mcp-permission" => vec![
            Decision::Allow {
                updated_input: None,
                always: false,
            },
            Decision::Allow {
                updated_input: None,
                always: true,
            },
            Decision::Allow {
                updated_input: Some(json!({"command":"touch y"})),
                always: false,
            },
            Decision::Deny {
                message: "no".into(),
                interrupt: false,
            },
            Decision::Deny {
                message: "stop".into(),
                interrupt: true,
            },
            Decision::Deny {
                message: "switchboard exited".into(),
                interrupt: false,
            },
        ],
        "question" => vec![
            Decision::Answer {
                answers: vec![("Which?".into(), "A, B".into())],
            },
            Decision::Deny {
                message: "The user declined to answer.".into(),
                interrupt: false,
            },
        ],
        "breakpoint" => vec![
            Decision::Continue,
            Decision::Block {
                reason: "not now".into(),
            },
        ],
        "dialog" => vec![
            Decision::DialogComplete {
                result: json!("retry"),
            },
            Decision::DialogCancel,
        ],
        "elicitation" => vec![
            Decision::ElicitAccept {
                content: json!({"x":"y"}),
            },
            Decision::ElicitDecline,
            Decision::ElicitCancel,
        ],
        _ => unreachable!(),
    }
}

fn answer_line(kind: &str, body: &Value, decision: Decision) -> String {
    let mut m = Mapper::new(&["Bash".to_string()]);
    let _ = m.initialize_line();
    let out = m.on_line(&request("req-1", body.clone()));
    assert!(
        out.events
            .iter()
            .any(|e| matches!(e, BackendEvent::GateOpen(_))),
        "{kind}: no gate opened: {:?}",
        out.events
    );
    let out = m.command(&Command::Answer {
        gate_id: "req-1".into(),
        decision: decision.clone(),
    });
    assert_eq!(
        out.replies.len(),
        1,
        "{kind} {decision:?}: exactly one reply"
    );
    out.replies[0].clone()
}

#[test]
fn every_answer_of_every_gate_kind_validates() {
    let mut checked = 0;
    for (kind, body) in requests() {
        for d in decisions(kind) {
            let line = answer_line(kind, &body, d.clone());
            if let Err(e) = validate_claude_outbound_line(&line) {
                panic!("{kind} {d:?} produced an invalid frame: {e}\n{line}");
            }
            let v: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(v["response"]["request_id"], "req-1", "{kind} {d:?}: {line}");
            checked += 1;
        }
    }
    assert_eq!(checked, 21);
}

#[test]
fn answers_carry_what_the_cli_needs() {
    let all = requests();
    let q = &all[2].1;
    let line = answer_line(
        "question",
        q,
        Decision::Answer {
            answers: vec![("Which?".into(), "A, B".into())],
        },
    );
    let v: Value = serde_json::from_str(&line).unwrap();
    let body = &v["response"]["response"];
    assert_eq!(
        body["updatedInput"]["questions"], q["input"]["questions"],
        "questions echoed verbatim"
    );
    assert_eq!(body["updatedInput"]["answers"]["Which?"], "A, B");
    switchboard::schema::validate_claude("QuestionAnswerUpdatedInput", &body["updatedInput"])
        .unwrap();

    let line = answer_line(
        "permission",
        &all[0].1,
        Decision::Allow {
            updated_input: None,
            always: true,
        },
    );
    let v: Value = serde_json::from_str(&line).unwrap();
    let perms = v["response"]["response"]["updatedPermissions"]
        .as_array()
        .unwrap();
    assert_eq!(perms.len(), 3);
    assert!(perms.iter().all(|p| p["destination"] == "session"));

    let line = answer_line(
        "mcp-permission",
        &all[1].1,
        Decision::Allow {
            updated_input: None,
            always: true,
        },
    );
    let v: Value = serde_json::from_str(&line).unwrap();
    // No whole-tool rule: it would be wider than the request shown (switchboard's own exact
    // session rule answers the same request again).
    assert_eq!(v["response"]["response"].get("updatedPermissions"), None);
    validate_claude_outbound_line(&line).unwrap();
}

#[test]
fn a_mismatched_answer_fails_closed() {
    let all = requests();
    let line = answer_line("permission", &all[0].1, Decision::Continue);
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["response"]["response"]["behavior"], "deny");
    validate_claude_outbound_line(&line).unwrap();
}

#[test]
fn our_requests_and_automatic_answers_validate() {
    let mut m = Mapper::new(&["Bash".to_string(), "Grep".to_string()]);
    let mut lines = vec![m.initialize_line()];
    for c in [
        Command::Prompt("hello".into()),
        Command::Interrupt,
        Command::SetMode("acceptEdits".into()),
    ] {
        lines.extend(m.command(&c).replies);
    }
    // Automatic answers: an MCP request, an MCP notification, an unknown subtype, an unknown hook.
    for body in [
        json!({"subtype":"mcp_message","server_name":"x","message":{"jsonrpc":"2.0","id":3,"method":"tools/list"}}),
        json!({"subtype":"mcp_message","server_name":"x","message":{"jsonrpc":"2.0","method":"notifications/initialized"}}),
        json!({"subtype":"brand_new_thing"}),
        json!({"subtype":"hook_callback","callback_id":"not-ours","input":{}}),
    ] {
        let out = m.on_line(&request("auto-1", body.clone()));
        assert_eq!(out.replies.len(), 1, "one automatic answer for {body}");
        lines.extend(out.replies);
    }
    assert_eq!(lines.len(), 8);
    for line in &lines {
        if let Err(e) = validate_claude_outbound_line(line) {
            panic!("invalid outbound frame: {e}\n{line}");
        }
    }
    let init: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(init["request"]["forwardSubagentText"], true);
    assert_eq!(
        init["request"]["supportedDialogKinds"],
        json!(["refusal_fallback_prompt"])
    );
    assert_eq!(
        init["request"]["hooks"]["PreToolUse"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}
