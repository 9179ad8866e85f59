//! Unit tests of the Claude mapper: streaming, sub-agents, control requests and answers.

use super::*;
use switchboard_core::gate::{Decision, GateKind};
use switchboard_core::msg::Command;
use switchboard_core::{Msg, State, update};

fn feed(m: &mut Mapper, lines: &[Value]) -> Out {
    let mut all = Out::default();
    for l in lines {
        let out = m.on_line(&l.to_string());
        all.events.extend(out.events);
        all.replies.extend(out.replies);
    }
    all
}

fn apply(state: &mut State, events: Vec<BackendEvent>) {
    for (i, event) in events.into_iter().enumerate() {
        update(
            state,
            Msg::Backend {
                session: switchboard_core::state::SessionId::FIRST,
                at_ms: 10 + i as u64,
                event,
            },
        );
    }
}

fn stream(parent: Option<&str>, event: Value) -> Value {
    json!({"type":"stream_event","event":event,"parent_tool_use_id":parent})
}

fn assistant(id: &str, parent: Option<&str>, blocks: Value) -> Value {
    json!({"type":"assistant","message":{"id":id,"role":"assistant","content":blocks},
        "parent_tool_use_id":parent})
}

fn task_started(task: &str, tool_use_id: &str, parent_task: Option<&str>, kind: &str) -> Value {
    json!({"type":"system","subtype":"task_started","task_id":task,"tool_use_id":tool_use_id,
        "parent_task_id":parent_task,"description":format!("{kind} work"),"subagent_type":kind})
}

fn reply_json(line: &str) -> Value {
    crate::schema::validate_claude_outbound_line(line)
        .unwrap_or_else(|e| panic!("reply outside the schema: {e}\n{line}"));
    serde_json::from_str(line).unwrap()
}

#[test]
fn streaming_deltas_then_the_settling_line_give_one_item() {
    let mut m = Mapper::new(&[]);
    let out = feed(
        &mut m,
        &[
            stream(
                None,
                json!({"type":"message_start","message":{"id":"msg_1"}}),
            ),
            stream(
                None,
                json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
            ),
            stream(
                None,
                json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}}),
            ),
            stream(
                None,
                json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"think."}}),
            ),
            stream(
                None,
                json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
            ),
            stream(
                None,
                json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hel"}}),
            ),
            stream(
                None,
                json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"lo"}}),
            ),
            assistant(
                "msg_1",
                None,
                json!([
                {"type":"thinking","thinking":"Let me think.","signature":"s"},
                {"type":"text","text":"Hello!"}]),
            ),
            // A late delta for a settled block is dropped.
            stream(
                None,
                json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" stale"}}),
            ),
            stream(None, json!({"type":"message_stop"})),
        ],
    );
    assert!(out.replies.is_empty());
    let mut s = State::new(switchboard_core::BackendKind::Claude, "main", 0);
    apply(&mut s, out.events);
    let items: Vec<&ItemKind> = s.tree.nodes[0]
        .transcript
        .items
        .iter()
        .map(|i| &i.kind)
        .collect();
    assert_eq!(
        items,
        vec![
            &ItemKind::Thinking {
                text: "Let me think.".into(),
                redacted: false,
                streaming: false
            },
            &ItemKind::Assistant {
                text: "Hello!".into(),
                streaming: false,
                aborted: false
            },
        ]
    );
}

#[test]
fn an_unstreamed_assistant_line_is_one_item_per_block() {
    let mut m = Mapper::new(&[]);
    let out = feed(
        &mut m,
        &[assistant(
            "msg_9",
            None,
            json!([{"type":"text","text":"a"},{"type":"text","text":"b"}]),
        )],
    );
    let mut s = State::new(switchboard_core::BackendKind::Claude, "main", 0);
    apply(&mut s, out.events);
    assert_eq!(s.tree.nodes[0].transcript.len(), 2);
}

#[test]
fn sub_agents_nest_by_parent_task_and_gates_follow_agent_id() {
    let mut m = Mapper::new(&[]);
    let out = feed(
        &mut m,
        &[
            assistant(
                "m1",
                None,
                json!([{"type":"tool_use","id":"toolu_a","name":"Agent",
                "input":{"description":"Map the code","subagent_type":"Explore","prompt":"go"}}]),
            ),
            task_started("task_a", "toolu_a", None, "Explore"),
            assistant(
                "m2",
                Some("toolu_a"),
                json!([{"type":"tool_use","id":"toolu_b","name":"Agent",
                "input":{"description":"Grep","subagent_type":"general-purpose","prompt":"go"}}]),
            ),
            task_started("task_b", "toolu_b", Some("task_a"), "general-purpose"),
            assistant(
                "m3",
                Some("toolu_b"),
                json!([{"type":"tool_use","id":"toolu_g","name":"Grep",
                "input":{"pattern":"fn x"}}]),
            ),
        ],
    );
    assert!(
        out.events.iter().any(|e| matches!(e,
        BackendEvent::NodeOpen { key, parent: Some(p), .. } if key == "toolu_b" && p == "toolu_a"))
    );
    let mut s = State::new(switchboard_core::BackendKind::Claude, "main", 0);
    apply(&mut s, out.events);
    let a = s.tree.get("toolu_a").unwrap();
    let b = s.tree.get("toolu_b").unwrap();
    assert_eq!(s.tree.nodes[a].depth, 1);
    assert_eq!(s.tree.nodes[b].depth, 2);
    assert_eq!(s.tree.nodes[b].parent, Some(a));
    assert_eq!(s.tree.nodes[b].name, "general-purpose");
    assert_eq!(s.tree.nodes[b].last_tool.as_deref(), Some("Grep"));
    assert_eq!(s.tree.nodes[b].transcript.len(), 1);
    // A permission request naming the nested agent lands on its node.
    let out = feed(
        &mut m,
        &[
            json!({"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool",
            "tool_name":"Bash","input":{"command":"ls"},"agent_id":"task_b"}}),
        ],
    );
    let [BackendEvent::GateOpen(g)] = out.events.as_slice() else {
        panic!("{:?}", out.events)
    };
    assert_eq!(g.node_key, "toolu_b");
    assert_eq!(g.asked_by.as_deref(), Some("task_b"));
    assert!(matches!(&g.kind, GateKind::Permission(p) if p.summary == "ls"));
    // Without agent_id, the tool_use's node decides.
    let out = feed(
        &mut m,
        &[
            json!({"type":"control_request","request_id":"r2","request":{"subtype":"can_use_tool",
            "tool_name":"Grep","input":{"pattern":"fn x"},"tool_use_id":"toolu_g"}}),
        ],
    );
    let [BackendEvent::GateOpen(g)] = out.events.as_slice() else {
        panic!("{:?}", out.events)
    };
    assert_eq!(g.node_key, "toolu_b");
    // The Agent tool_result completes the sub-agent.
    let out = feed(
        &mut m,
        &[
            json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result",
            "tool_use_id":"toolu_b","content":"done"}]},"parent_tool_use_id":"toolu_a"}),
        ],
    );
    apply(&mut s, out.events);
    assert_eq!(
        s.tree.nodes[b].status,
        switchboard_core::tree::NodeStatus::Completed
    );
}

#[test]
fn unknown_type_is_a_generic_row() {
    let mut m = Mapper::new(&[]);
    let out = m.on_line(r#"{"type":"future_event","detail":1}"#);
    assert!(out.replies.is_empty());
    assert!(
        matches!(out.events.as_slice(), [BackendEvent::Item { node: None, op: ItemOp::Push(ItemKind::Generic { label, raw }) }]
        if label == "unknown message type future_event" && raw.contains("\"detail\":1"))
    );
    let out = m.on_line(r#"{"type":"system","subtype":"demo_notice"}"#);
    assert!(
        matches!(out.events.as_slice(), [BackendEvent::Item { op: ItemOp::Push(ItemKind::Generic { label, .. }), .. }]
        if label.contains("demo_notice"))
    );
}

#[test]
fn non_json_is_a_protocol_row() {
    let mut m = Mapper::new(&[]);
    let out = m.on_line("Segmentation fault (core dumped)\n");
    assert!(out.replies.is_empty());
    assert!(
        matches!(out.events.as_slice(), [BackendEvent::Item { op: ItemOp::Push(ItemKind::Protocol { level: Level::Warn, text }), .. }]
        if text.contains("non-JSON line: Segmentation fault"))
    );
    assert!(
        m.on_line("   \n").events.is_empty(),
        "blank lines are ignored"
    );
}

#[test]
fn mcp_message_is_answered_automatically() {
    let mut m = Mapper::new(&[]);
    let out = m.on_line(
        &json!({"type":"control_request","request_id":"r1","request":{"subtype":"mcp_message",
            "server_name":"tickets","message":{"jsonrpc":"2.0","id":7,"method":"tools/list"}}})
        .to_string(),
    );
    assert_eq!(out.replies.len(), 1);
    let v = reply_json(&out.replies[0]);
    assert_eq!(v["response"]["subtype"], "success");
    assert_eq!(v["response"]["request_id"], "r1");
    let mcp = &v["response"]["response"]["mcp_response"];
    assert_eq!(mcp["id"], 7);
    assert_eq!(mcp["error"]["code"], -32601);
    assert!(
        !out.events
            .iter()
            .any(|e| matches!(e, BackendEvent::GateOpen(_)))
    );
    // A notification (no id) gets the empty result.
    let out = m.on_line(
        &json!({"type":"control_request","request_id":"r2","request":{"subtype":"mcp_message",
            "server_name":"tickets","message":{"jsonrpc":"2.0","method":"notifications/initialized"}}})
        .to_string(),
    );
    let v = reply_json(&out.replies[0]);
    assert_eq!(
        v["response"]["response"]["mcp_response"]["result"],
        json!({})
    );
}

#[test]
fn unknown_subtype_gets_an_error_envelope() {
    let mut m = Mapper::new(&[]);
    let out = m.on_line(
        r#"{"type":"control_request","request_id":"r9","request":{"subtype":"frobnicate"}}"#,
    );
    assert_eq!(out.replies.len(), 1);
    let v = reply_json(&out.replies[0]);
    assert_eq!(
        v,
        json!({"type":"control_response","response":{"subtype":"error","request_id":"r9",
            "error":"unsupported control_request subtype \"frobnicate\""}})
    );
    assert!(
        !out.events
            .iter()
            .any(|e| matches!(e, BackendEvent::GateOpen(_)))
    );
    // A hook callback we never registered is refused the same way.
    let out = m.on_line(
        r#"{"type":"control_request","request_id":"r10","request":{"subtype":"hook_callback","callback_id":"nope","input":{}}}"#,
    );
    let v = reply_json(&out.replies[0]);
    assert_eq!(v["response"]["subtype"], "error");
}

#[test]
fn missing_request_id_gets_no_reply() {
    let mut m = Mapper::new(&[]);
    for line in [
        r#"{"type":"control_request","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{}}}"#,
        r#"{"type":"control_request","request_id":"","request":{"subtype":"frobnicate"}}"#,
        r#"{"type":"control_request","request_id":5,"request":{"subtype":"frobnicate"}}"#,
    ] {
        let out = m.on_line(line);
        assert!(out.replies.is_empty(), "{line}");
        assert!(
            matches!(out.events.as_slice(), [BackendEvent::Protocol { level: Level::Error, text }]
            if text.contains("without a usable request_id"))
        );
    }
}

#[test]
fn a_malformed_request_with_an_id_still_gets_an_answer() {
    let mut m = Mapper::new(&[]);
    let out = m.on_line(r#"{"type":"control_request","request_id":"z"}"#);
    assert_eq!(out.replies.len(), 1, "the agent must not wait forever");
    let v: serde_json::Value = serde_json::from_str(&out.replies[0]).unwrap();
    assert_eq!(v["response"]["subtype"], "error");
    assert_eq!(v["response"]["request_id"], "z");
}

#[test]
fn exit_answers_speak_each_kind() {
    let mut m = Mapper::new(&["Bash".to_string()]);
    for line in [
        r#"{"type":"control_request","request_id":"p","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"x"}}}"#,
        r#"{"type":"control_request","request_id":"h","request":{"subtype":"hook_callback","callback_id":"sb-break-Bash","input":{"tool_name":"Bash","tool_input":{}}}}"#,
        r#"{"type":"control_request","request_id":"e","request":{"subtype":"elicitation","mcp_server_name":"s","message":"m"}}"#,
    ] {
        m.on_line(line);
    }
    let out = m.exit_answers();
    assert!(out.events.is_empty(), "no fail-closed error rows");
    let bodies: Vec<serde_json::Value> = out
        .replies
        .iter()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["response"]["response"].clone()
        })
        .collect();
    assert_eq!(bodies[0]["action"], "cancel");
    assert_eq!(bodies[1]["decision"], "block");
    assert_eq!(bodies[2]["behavior"], "deny");
    assert!(m.pending_ids().is_empty());
}

#[test]
fn undeclared_dialog_kind_gets_an_error_not_a_cancel() {
    let mut m = Mapper::new(&[]);
    let out = m.on_line(
        r#"{"type":"control_request","request_id":"d1","request":{"subtype":"request_user_dialog","dialog_kind":"mystery_prompt","payload":{}}}"#,
    );
    assert_eq!(out.replies.len(), 1);
    let v: serde_json::Value = serde_json::from_str(&out.replies[0]).unwrap();
    assert_eq!(
        v["response"]["subtype"], "error",
        "never `cancelled`: that would dismiss it"
    );
    assert_eq!(v["response"]["request_id"], "d1");
    assert!(
        matches!(out.events.as_slice(), [BackendEvent::Protocol { level: Level::Warn, text }]
        if text.contains("mystery_prompt") && text.contains("answered with an error"))
    );
    assert!(m.pending_ids().is_empty());
    // The declared kind opens a gate.
    let out = m.on_line(
        r#"{"type":"control_request","request_id":"d2","request":{"subtype":"request_user_dialog","dialog_kind":"refusal_fallback_prompt","payload":{"title":"T"}}}"#,
    );
    assert!(
        matches!(out.events.as_slice(), [BackendEvent::GateOpen(g)] if matches!(g.kind, GateKind::Dialog(_)))
    );
}

#[test]
fn duplicate_pending_id_is_ignored_and_cancel_withdraws() {
    let mut m = Mapper::new(&[]);
    let req = r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"}}}"#;
    assert!(matches!(
        m.on_line(req).events.as_slice(),
        [BackendEvent::GateOpen(_)]
    ));
    let out = m.on_line(req);
    assert!(out.replies.is_empty());
    assert!(matches!(
        out.events.as_slice(),
        [BackendEvent::Protocol {
            level: Level::Error,
            text,
        }] if text.contains("duplicate id") && text.contains("not answered separately")
    ));
    // Recorded as such, beside the raw line.
    assert!(
        matches!(out.notes.as_slice(), [n] if n.starts_with("duplicate-id: request_id r1")),
        "{:?}",
        out.notes
    );
    // One answer for the first (and only) request.
    let out = m.command(&Command::Answer {
        gate_id: "r1".into(),
        decision: Decision::Deny {
            message: "no".into(),
            interrupt: false,
        },
    });
    assert_eq!(out.replies.len(), 1);
    let out = m.on_line(req);
    assert!(matches!(out.events.as_slice(), [BackendEvent::GateOpen(_)]));
    // Without a usable request_id nothing can be answered: shown and recorded.
    let out = m.on_line(
        r#"{"type":"control_request","request_id":7,"request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"}}}"#,
    );
    assert!(out.replies.is_empty());
    assert!(matches!(
        out.events.as_slice(),
        [BackendEvent::Protocol {
            level: Level::Error,
            ..
        }]
    ));
    assert!(matches!(out.notes.as_slice(), [n] if n.starts_with("request-id:")));
    let out = m.on_line(r#"{"type":"control_cancel_request","request_id":"r1"}"#);
    assert_eq!(
        out.events,
        vec![BackendEvent::GateWithdrawn { id: "r1".into() }]
    );
    // A withdrawn request is never answered.
    let out = m.command(&Command::Answer {
        gate_id: "r1".into(),
        decision: Decision::Allow {
            updated_input: None,
            always: false,
        },
    });
    assert!(out.replies.is_empty());
    assert!(matches!(
        out.events.as_slice(),
        [BackendEvent::Protocol {
            level: Level::Warn,
            ..
        }]
    ));
}

#[test]
fn answers_are_encoded_once_and_echo_the_input() {
    let mut m = Mapper::new(&[]);
    m.on_line(r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"touch x","description":"d"}}}"#);
    let allow = Command::Answer {
        gate_id: "r1".into(),
        decision: Decision::Allow {
            updated_input: None,
            always: false,
        },
    };
    let out = m.command(&allow);
    assert_eq!(out.replies.len(), 1);
    let v = reply_json(&out.replies[0]);
    assert_eq!(
        v["response"]["response"],
        json!({"behavior":"allow","updatedInput":{"command":"touch x","description":"d"}})
    );
    assert!(
        m.command(&allow).replies.is_empty(),
        "a second answer is not sent"
    );
}

/// The mapper's per-message and per-tool maps are bounded: a session of days does not grow
/// them for ever (they used to keep every streamed message and every tool id).
#[test]
fn per_message_maps_stay_bounded() {
    let mut m = Mapper::new(&[]);
    let n = STREAM_CAP.max(TOOL_CAP) + 100;
    for i in 0..n {
        let id = format!("msg_{i}");
        let tool = format!("toolu_{i}");
        feed(
            &mut m,
            &[
                stream(None, json!({"type":"message_start","message":{"id":id}})),
                stream(
                    None,
                    json!({"type":"content_block_start","index":0,
                        "content_block":{"type":"tool_use","id":tool,"name":"Bash","input":{}}}),
                ),
                stream(None, json!({"type":"message_stop"})),
            ],
        );
    }
    assert_eq!(m.stream.len(), STREAM_CAP);
    assert_eq!(m.tool_node.len(), TOOL_CAP);
    assert_eq!(m.tool_names.len(), TOOL_CAP);
    // The newest are still known.
    assert!(m.stream.contains_key(&format!("msg_{}", n - 1)));
    assert!(m.tool_names.contains_key(&format!("toolu_{}", n - 1)));
}

/// Keys built without `format!` read exactly as `format!` would write them.
#[test]
fn keys_match_format() {
    for n in [0u64, 7, 9, 10, 99, 100, 4_294_967_295, u64::MAX] {
        assert_eq!(key_with_number("m_1", "#s", n), format!("m_1#s{n}"));
    }
    for i in [0u32, 5, 10, 123, u32::MAX] {
        assert_eq!(block_key("msg_01ab", i), format!("msg_01ab#{i}"));
    }
}

use crate::test_gen as generator;

/// Lines the CLI wrote in every Claude recording.
fn recorded_claude_lines() -> Vec<String> {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/recordings/claude"
    );
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        for rec in std::fs::read_to_string(&path).unwrap().lines().skip(1) {
            let v: Value = serde_json::from_str(rec).unwrap();
            if let (Some("in"), Some(line)) = (v["dir"].as_str(), v["line"].as_str()) {
                lines.push(line.to_string());
            }
        }
    }
    assert!(lines.len() > 500, "only {} lines", lines.len());
    lines
}

/// `lines` disordered as a hostile or broken agent might send them: lines swapped with
/// their neighbours, repeated (late deltas after their settling line), dropped
/// (`message_start` lost), and `parent_tool_use_id`s moved between root and sub-agents.
fn mutated_stream(lines: &[String], seed: u64) -> Vec<String> {
    let mut rng = generator::Rng::new(seed);
    let mut out: Vec<String> = Vec::with_capacity(lines.len() * 2);
    for l in lines {
        match rng.range(0, 99) {
            0..=4 => {}
            5..=14 => {
                out.push(l.clone());
                out.push(l.clone());
            }
            15..=19 => {
                let to = if rng.chance(50) {
                    r#""parent_tool_use_id":"toolu_x""#
                } else {
                    r#""parent_tool_use_id":null"#
                };
                out.push(
                    l.replace(r#""parent_tool_use_id":null"#, to)
                        .replace(r#""index":1"#, r#""index":0"#),
                );
            }
            _ => out.push(l.clone()),
        }
        if out.len() >= 2 && rng.chance(15) {
            let n = out.len();
            out.swap(n - 1, n - 2);
        }
        // Now and then a message's settling line comes back much later (a late replay).
        if rng.chance(2) && out.len() > 50 {
            let back = out[out.len() - rng.range(1, 50)].clone();
            out.push(back);
        }
    }
    out
}

/// The delta memo (`open_block`) against the lookups it skips: the same events, line for
/// line, with it on and off.
fn memo_agrees(lines: &[String]) {
    let mut fast = Mapper::new(&[]);
    let mut plain = Mapper::new(&[]);
    plain.no_memo = true;
    let mut hits = 0;
    for (i, line) in lines.iter().enumerate() {
        let a = fast.on_line(line);
        let b = plain.on_line(line);
        assert_eq!(
            format!("{:?}", a.events),
            format!("{:?}", b.events),
            "line {i}: {line}"
        );
        assert_eq!(a.replies, b.replies, "line {i}: {line}");
        hits += usize::from(line.contains("content_block_delta") && !a.events.is_empty());
    }
    assert!(hits > 0 || lines.len() < 100, "no delta was mapped");
}

#[test]
fn delta_memo_matches_the_lookups_on_recordings() {
    let lines = recorded_claude_lines();
    memo_agrees(&lines);
    for seed in 0..20 {
        memo_agrees(&mutated_stream(&lines, seed));
    }
}

#[test]
fn delta_memo_matches_the_lookups_on_the_generated_stream() {
    let lines = generator::ClaudeGen::lines(3, 30_000);
    memo_agrees(&lines);
    for seed in 0..4 {
        memo_agrees(&mutated_stream(&lines, seed));
    }
}

/// More messages streaming at once than `stream` remembers: blocks are forgotten and
/// message ids come back, with deltas and settling lines in between.
#[test]
fn delta_memo_matches_the_lookups_past_the_stream_cap() {
    let mut lines = Vec::new();
    let mut rng = generator::Rng::new(5);
    for i in 0..(STREAM_CAP * 3) {
        let id = format!("msg_{}", i % (STREAM_CAP + 7));
        let parent = if i % 3 == 0 { Some("toolu_a") } else { None };
        lines.push(stream(
            parent,
            json!({"type":"message_start","message":{"id":id}}),
        ));
        for index in 0..2 {
            lines.push(stream(
                parent,
                json!({"type":"content_block_start","index":index,"content_block":{"type":"text","text":""}}),
            ));
            for _ in 0..rng.range(0, 3) {
                lines.push(stream(
                    parent,
                    json!({"type":"content_block_delta","index":index,"delta":{"type":"text_delta","text":"x"}}),
                ));
            }
            if rng.chance(40) {
                lines.push(assistant(&id, parent, json!([{"type":"text","text":"x"}])));
            }
        }
    }
    let lines: Vec<String> = lines.iter().map(Value::to_string).collect();
    memo_agrees(&lines);
    for seed in 0..5 {
        memo_agrees(&mutated_stream(&lines, seed));
    }
}

/// Blank lines (any Unicode whitespace, any line ending) map to nothing; anything else
/// that is not JSON is a warning.
#[test]
fn blank_lines_are_skipped() {
    let mut m = Mapper::new(&[]);
    for blank in ["", "\n", "\r\n", " \t ", "\u{3000}\r", "\u{a0}", "\u{c}\n"] {
        let out = m.on_line(blank);
        assert!(out.events.is_empty() && out.replies.is_empty(), "{blank:?}");
    }
    for text in ["x", " x", "\u{3000}x", "\u{1b}"] {
        let out = m.on_line(text);
        assert_eq!(out.events.len(), 1, "{text:?}");
    }
}
