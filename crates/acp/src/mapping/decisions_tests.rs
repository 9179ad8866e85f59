//! Issue 24 items 3-5: errors with their reason, rows that read the human's decision, usage
//! as reported, and client capabilities a profile withholds.

use super::*;
use switchboard_core::gate::Decision;
use switchboard_core::msg::Command;

fn ready(opts: AcpOptions) -> (Mapper, String) {
    let mut m = Mapper::new(AcpOptions {
        cwd: PathBuf::from("/w/p"),
        ..opts
    });
    let init = m.initialize_line();
    m.on_line(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#);
    m.on_line(r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}"#);
    assert!(m.ready());
    (m, init)
}

fn protocol_texts(out: &Out) -> Vec<String> {
    out.events
        .iter()
        .filter_map(|e| match e {
            BackendEvent::Protocol { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// The name of the row of tool call `id` as last upserted.
fn row(out: &Out, id: &str) -> Option<String> {
    out.events.iter().rev().find_map(|e| match e {
        BackendEvent::Item {
            op:
                ItemOp::Upsert {
                    kind: ItemKind::ToolCall { id: i, name, .. },
                    ..
                },
            ..
        } if i == id => Some(name.clone()),
        _ => None,
    })
}

const ASK: &str = r#"{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s1",
 "toolCall":{"toolCallId":"t1","title":"rm -rf build","kind":"execute","status":"pending"},
 "options":[{"optionId":"a","name":"Allow","kind":"allow_once"},{"optionId":"r","name":"Reject","kind":"reject_once"}]}}"#;

fn asked() -> Mapper {
    let (mut m, _) = ready(AcpOptions::default());
    m.command(&Command::Prompt("go".into()));
    let out = m.on_line(&ASK.replace('\n', ""));
    assert_eq!(row(&out, "t1").as_deref(), Some("execute · pending"));
    m
}

#[test]
fn an_error_shows_its_message_and_its_data() {
    let (mut m, _) = ready(AcpOptions::default());
    m.command(&Command::SetMode("autoEdit".into()));
    // gemini-cli: the reason only in `data` (the TypeScript SDK's internalError(details)).
    let out = m.on_line(
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error","data":{"details":"Cannot enable privileged approval modes in an untrusted folder."}}}"#,
    );
    let t = protocol_texts(&out).join("\n");
    assert!(
        t.contains("session/set_mode autoEdit failed: error -32603: Internal error — ")
            && t.contains("Cannot enable privileged approval modes in an untrusted folder."),
        "{t}"
    );
    // Hostile data is flattened, sanitized and bounded; data equal to the message is not shown
    // twice.
    let e = codec::RpcError {
        code: 1,
        message: "bad\nline \u{1b}[2J".into(),
        data: Some(Value::String("x".repeat(5000))),
    };
    let d = e.describe();
    assert!(!d.contains('\n') && !d.contains('\u{1b}'), "{d:?}");
    assert!(d.chars().count() < 900, "{}", d.len());
    let same = codec::RpcError {
        code: 2,
        message: "nope".into(),
        data: Some(json!("nope")),
    };
    assert_eq!(same.describe(), "error 2: nope");
}

#[test]
fn a_rejected_call_reads_rejected_though_the_agent_sends_no_final_status() {
    let mut m = asked();
    let out = m.command(&Command::Answer {
        gate_id: "acp:7".into(),
        decision: Decision::Deny {
            message: String::new(),
            interrupt: false,
        },
    });
    assert!(
        out.lines[0].contains(r#""optionId":"r""#),
        "{:?}",
        out.lines
    );
    assert_eq!(row(&out, "t1").as_deref(), Some("execute · rejected"));
    // A later update without a status keeps it; one saying it completed anyway says so.
    let upd = |status: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{{"sessionUpdate":"tool_call_update","toolCallId":"t1"{status}}}}}}}"#
        )
    };
    let out = m.on_line(&upd(r#","title":"rm -rf build (refused)""#));
    assert_eq!(row(&out, "t1").as_deref(), Some("execute · rejected"));
    let out = m.on_line(&upd(r#","status":"failed""#));
    assert_eq!(row(&out, "t1").as_deref(), Some("execute · rejected"));
    let out = m.on_line(&upd(r#","status":"completed""#));
    assert_eq!(
        row(&out, "t1").as_deref(),
        Some("execute · completed despite rejected")
    );
    // Asked again and allowed: the row is the agent's again.
    let out = m.on_line(&ASK.replace('\n', "").replace(r#""id":7"#, r#""id":8"#));
    assert_eq!(row(&out, "t1").as_deref(), Some("execute · pending"));
    let out = m.command(&Command::Answer {
        gate_id: "acp:8".into(),
        decision: Decision::Allow {
            always: false,
            updated_input: None,
        },
    });
    assert_eq!(row(&out, "t1"), None, "nothing to redraw");
}

#[test]
fn an_allowed_call_keeps_the_agents_statuses() {
    let mut m = asked();
    let out = m.command(&Command::Answer {
        gate_id: "acp:7".into(),
        decision: Decision::Allow {
            always: false,
            updated_input: None,
        },
    });
    assert_eq!(row(&out, "t1"), None, "an allow redraws nothing");
}

#[test]
fn a_cancelled_card_and_a_withdrawn_one_read_cancelled() {
    let mut m = asked();
    let out = m.command(&Command::Interrupt);
    assert!(out.lines.iter().any(|l| l.contains("session/cancel")));
    assert_eq!(row(&out, "t1").as_deref(), Some("execute · cancelled"));

    let mut m = asked();
    let out =
        m.on_line(r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":7}}"#);
    assert_eq!(row(&out, "t1").as_deref(), Some("execute · cancelled"));
}

#[test]
fn a_replayed_reject_reads_rejected_too() {
    let mut m = Mapper::replaying(Some(PathBuf::from("/w/p")));
    for (dir, l) in [
        (
            "out",
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#,
        ),
        (
            "in",
            r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#,
        ),
        (
            "out",
            r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w/p","mcpServers":[]}}"#,
        ),
        (
            "in",
            r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}"#,
        ),
    ] {
        if dir == "out" {
            m.on_outbound(l);
        } else {
            m.on_recorded_inbound(l);
        }
    }
    m.on_recorded_inbound(&ASK.replace('\n', ""));
    let (out, answers) = m.on_outbound(
        r#"{"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":"r"}}}"#,
    );
    assert_eq!(answers.len(), 1);
    assert_eq!(row(&out, "t1").as_deref(), Some("execute · rejected"));
}

fn usage_abilities(out: &Out) -> Vec<bool> {
    out.events
        .iter()
        .filter_map(|e| match e {
            BackendEvent::Abilities(a) => Some(a.usage),
            _ => None,
        })
        .collect()
}

fn usage_events(out: &Out) -> Vec<(u64, u64, f64)> {
    out.events
        .iter()
        .filter_map(|e| match e {
            BackendEvent::Usage {
                input_tokens,
                output_tokens,
                cost_usd,
            } => Some((*input_tokens, *output_tokens, *cost_usd)),
            _ => None,
        })
        .collect()
}

#[test]
fn no_usage_is_shown_until_the_agent_reports_some() {
    let mut m = Mapper::new(AcpOptions::default());
    m.initialize_line();
    let out = m.on_line(
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#,
    );
    assert_eq!(usage_abilities(&out), [false]);
    m.on_line(r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}"#);
    m.command(&Command::Prompt("go".into()));
    // gemini-cli: a turn without `usage`: counted as a turn, still nothing shown.
    let out = m.on_line(r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#);
    assert_eq!(usage_events(&out), [(0, 0, 0.0)]);
    assert!(usage_abilities(&out).is_empty());
    let turn = out.events.iter().find_map(|e| match e {
        BackendEvent::Item {
            op: ItemOp::Push(ItemKind::TurnResult { cost_usd, .. }),
            ..
        } => Some(*cost_usd),
        _ => None,
    });
    assert_eq!(turn, Some(None), "no cost is claimed");
}

#[test]
fn one_cost_the_cumulative_one_the_agent_reports_counted_once() {
    let (mut m, _) = ready(AcpOptions::default());
    let cost = |amount: f64| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{{"sessionUpdate":"usage_update","used":10,"size":1000000,"cost":{{"amount":{amount},"currency":"USD"}}}}}}}}"#
        )
    };
    m.command(&Command::Prompt("one".into()));
    let out = m.on_line(&cost(0.0001));
    assert_eq!(usage_abilities(&out), [true]);
    assert!(
        !out.events
            .iter()
            .any(|e| matches!(e, BackendEvent::Info { key, .. } if key == "cost")),
        "no second cost figure"
    );
    m.on_line(&cost(0.0002));
    let out = m.on_line(
        r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn","usage":{"inputTokens":10,"outputTokens":5,"totalTokens":15,"cachedReadTokens":2}}}"#,
    );
    let u = usage_events(&out);
    assert_eq!((u[0].0, u[0].1), (12, 5));
    assert!((u[0].2 - 0.0002).abs() < 1e-12, "{u:?}");
    m.command(&Command::Prompt("two".into()));
    let again = m.on_line(&cost(0.0005));
    // Usage was seen once: a later report switches the footer field on no more.
    assert!(usage_abilities(&again).is_empty());
    let out = m.on_line(r#"{"jsonrpc":"2.0","id":4,"result":{"stopReason":"cancelled"}}"#);
    let u = usage_events(&out);
    assert!((u[0].2 - 0.0003).abs() < 1e-12, "only the new part: {u:?}");
    assert!(usage_abilities(&out).is_empty());
}

#[test]
fn a_profile_can_withhold_fs_and_terminal() {
    let (mut m, init) = ready(AcpOptions {
        withhold_fs: true,
        withhold_terminal: true,
        ..AcpOptions::default()
    });
    let v: Value = serde_json::from_str(&init).unwrap();
    assert_eq!(
        v["params"]["clientCapabilities"],
        json!({"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false})
    );
    for (id, method, params) in [
        (
            9,
            "fs/read_text_file",
            json!({"sessionId":"s1","path":"/w/p/a"}),
        ),
        (
            10,
            "fs/write_text_file",
            json!({"sessionId":"s1","path":"/w/p/a","content":"x"}),
        ),
        (
            11,
            "terminal/create",
            json!({"sessionId":"s1","command":"ls"}),
        ),
    ] {
        let out = m
            .on_line(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string());
        assert!(out.actions.is_empty(), "{method}: nothing runs");
        let reply: Value = serde_json::from_str(&out.lines[0]).unwrap();
        assert_eq!(reply["error"]["code"], -32601, "{method}");
        assert!(
            protocol_texts(&out)[0].contains("did not offer"),
            "{method}"
        );
    }
    // Offered by default.
    let (_, init) = ready(AcpOptions::default());
    let v: Value = serde_json::from_str(&init).unwrap();
    assert_eq!(v["params"]["clientCapabilities"]["terminal"], true);
}

#[test]
fn a_failed_turn_counts_the_cost_reported_during_it() {
    let (mut m, _) = ready(AcpOptions::default());
    m.command(&Command::Prompt("one".into()));
    m.on_line(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"usage_update","used":10,"size":100,"cost":{"amount":0.5,"currency":"USD"}}}}"#);
    let out =
        m.on_line(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error"}}"#);
    let u = usage_events(&out);
    assert_eq!(u.len(), 1);
    assert!((u[0].2 - 0.5).abs() < 1e-12, "{u:?}");
}

/// A replay refuses what the recorded session withheld, as the session did: no write gate.
#[test]
fn a_replay_withholds_what_the_recorded_initialize_withheld() {
    let mut m = Mapper::replaying(Some(PathBuf::from("/w/p")));
    m.on_outbound(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false}}}"#);
    m.on_recorded_inbound(
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#,
    );
    m.on_outbound(r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w/p","mcpServers":[]}}"#);
    m.on_recorded_inbound(r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}"#);
    for l in [
        r#"{"jsonrpc":"2.0","id":5,"method":"fs/write_text_file","params":{"sessionId":"s1","path":"/w/p/a","content":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"terminal/create","params":{"sessionId":"s1","command":"ls"}}"#,
    ] {
        let out = m.on_recorded_inbound(l);
        assert!(
            !out.events
                .iter()
                .any(|e| matches!(e, BackendEvent::GateOpen(_))),
            "{l}"
        );
        assert!(protocol_texts(&out)[0].contains("did not offer"), "{l}");
    }
}

#[test]
fn a_permission_without_options_marks_its_row_cancelled() {
    let (mut m, _) = ready(AcpOptions::default());
    let out = m.on_line(r#"{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t9","title":"x","kind":"execute","status":"pending"},"options":[]}}"#);
    assert_eq!(row(&out, "t9").as_deref(), Some("execute · cancelled"));
}
