//! The fast chunk path against the general one: every line maps to the same events, whichever
//! path takes it, and the lines it must not take go the general way.

use super::*;

fn ready() -> Mapper {
    let mut m = Mapper::new(AcpOptions {
        cwd: PathBuf::from("/w/p"),
        ..AcpOptions::default()
    });
    m.initialize_line();
    m.on_line(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#);
    m.on_line(r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}"#);
    m
}

/// Each line, in sequence, maps to the same events and lines whether `on_line` (with its fast
/// paths) or the general path alone takes it.
fn same_by_either_path(lines: &[String]) {
    let (mut fast, mut general) = (ready(), ready());
    for (i, l) in lines.iter().enumerate() {
        let a = fast.on_line(l);
        let b = general.on_line_general(l);
        assert_eq!(
            format!("{:?}", a.events),
            format!("{:?}", b.events),
            "line {i}: {l}"
        );
        assert_eq!(a.lines, b.lines, "line {i}");
    }
}

fn note(update: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{update}}}}}"#
    )
}

#[test]
fn every_chunk_maps_the_same_by_either_path() {
    let lines = [
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello"}}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":" world\u001b[2J"}}"#),
        note(r#"{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"thinking…"}}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello world\u001b[2J"}}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"},"messageId":"m1"}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"y"},"messageId":null}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""}}"#),
        // Not taken by the fast path: the general one decides.
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a","annotations":{"priority":1}}}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":"AA==","mimeType":"image/png"}}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"},"_meta":{"x":1}}"#),
        note(r#"{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"me"}}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":1}}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"},"sessionUpdate":"agent_thought_chunk"}"#),
        r#"{"jsonrpc":"2.0","id":9,"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}}"#.to_string(),
        r#"{"jsonrpc":"1.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"session/other","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}}"#.to_string(),
        // Arrays where objects go.
        r#"["2.0","session/update",{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}]"#.to_string(),
        note(r#"["agent_message_chunk",{"type":"text","text":"a"}]"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":["text","a"]}"#),
    ];
    same_by_either_path(&lines);
    // The first seven are taken, the rest are not.
    let taken: Vec<bool> = lines.iter().map(|l| fast::chunk(l).is_some()).collect();
    assert_eq!(taken.iter().filter(|t| **t).count(), 7, "{taken:?}");
    assert!(taken[..7].iter().all(|t| *t));
}

#[test]
fn a_whole_message_repeated_after_its_deltas_is_dropped_and_forgotten_after_the_turn() {
    let mut m = ready();
    m.command(&switchboard_core::msg::Command::Prompt("go".into()));
    let chunk = |t: &str| {
        note(&format!(
            r#"{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{t}"}},"messageId":"m1"}}"#
        ))
    };
    assert_eq!(m.on_line(&chunk("Hel")).events.len(), 1);
    assert_eq!(m.on_line(&chunk("lo")).events.len(), 1);
    assert!(m.on_line(&chunk("Hello")).events.is_empty(), "the repeat");
    assert_eq!(m.on_line(&chunk("Help")).events.len(), 1, "not a repeat");
    m.on_line(r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#);
    assert!(m.streamed.is_empty());
}

/// Tool calls, their updates and plans map to the same events by the typed fast path as by
/// the general one, in sequence (the views they patch included); odd envelopes go the
/// general way.
#[test]
fn every_tool_update_maps_the_same_by_either_path() {
    let lines = [
        note(r#"{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Run \u001b[31mtests","kind":"execute","status":"pending","rawInput":{"command":"cargo test","n":1.5}}"#),
        note(r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress"}"#),
        note(r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"ok\n3 passed"}}],"rawOutput":{"exit":0}}"#),
        note(r#"{"sessionUpdate":"tool_call","toolCallId":"c2","title":"Edit","kind":"edit","status":"pending","locations":[{"path":"/w/p/a.rs","line":3}],"content":[{"type":"diff","path":"/w/p/a.rs","oldText":"a\nb\n","newText":"a\nc\n"}]}"#),
        note(r#"{"sessionUpdate":"tool_call_update","toolCallId":"c2","status":"failed","_meta":{"claudeCode":{"toolName":"Edit"}}}"#),
        note(r#"{"sessionUpdate":"tool_call_update","toolCallId":"new","title":"late","status":"completed"}"#),
        note(r#"{"sessionUpdate":"plan","entries":[{"content":"step","status":"in_progress","priority":"high"}]}"#),
        note(r#"{"sessionUpdate":"tool_call","toolCallId":"c3","title":"x","status":"sideways"}"#),
        note(r#"{"sessionUpdate":"tool_call","toolCallId":"c4","title":"x","title":"y"}"#),
        note(r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[{"type":"terminal","terminalId":"t1"}]}"#),
        r#"{"jsonrpc":"2.0","id":7,"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"c5","title":"x"}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"session/update","extra":1,"params":{"sessionId":"s1","update":{"sessionUpdate":"plan","entries":[]}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","_meta":{"a":1},"update":{"sessionUpdate":"plan","entries":[]}}}"#.to_string(),
    ];
    same_by_either_path(&lines);
    let taken: Vec<bool> = lines
        .iter()
        .map(|l| fast::tool_update(l).is_some())
        .collect();
    assert!(taken[..7].iter().all(|t| *t), "{taken:?}");
    assert!(!taken[10] && !taken[11], "{taken:?}");
}

/// Every line the one-pass tool read takes, it reads exactly as the schema's own types do;
/// the shapes it leaves go the schema's way. Hand-made lines at the edges, then every tool
/// line of the real recordings and our fixtures.
#[test]
fn the_one_pass_tool_read_agrees_with_the_schema() {
    let taken = [
        r#"{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Run","kind":"execute","status":"pending","rawInput":{"command":"cargo test","n":1.5}}"#,
        r#"{"sessionUpdate":"tool_call","toolCallId":"c1","title":"t","name":null,"kind":null,"status":null,"content":null,"locations":null,"rawInput":null,"rawOutput":null}"#,
        r#"{"sessionUpdate":"tool_call","toolCallId":"c2","title":"Edit","kind":"edit","status":"pending","locations":[{"path":"/w/p/a.rs","line":3}],"content":[{"type":"diff","path":"/w/p/a.rs","oldText":"a\nb\n","newText":"a\nc\n"},{"type":"diff","path":"/w/p/b.rs","oldText":null,"newText":""}]}"#,
        r#"{"toolCallId":"c2","sessionUpdate":"tool_call","title":"x","name":"Bash","content":[],"locations":[]}"#,
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress"}"#,
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"ok\n\u001b[32m3 passed\u001b[0m"}}],"rawOutput":{"exit":0}}"#,
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","title":null,"kind":null,"status":null,"name":null,"content":null,"locations":null,"rawInput":null,"rawOutput":null}"#,
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[{"type":"terminal","terminalId":"t1"}],"locations":[{"path":"/a","line":null}]}"#,
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[]}"#,
        r#"{"sessionUpdate":"tool_call","toolCallId":"c5","title":"Bash","_meta":{"claudeCode":{"toolName":"Bash"}}}"#,
        r#"{"_meta":null,"sessionUpdate":"tool_call_update","toolCallId":"c5","status":"completed"}"#,
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"c5","_meta":{"claudeCode":{"toolResponse":{"stdout":"ok"}}}}"#,
    ];
    let left = [
        // What the schema defaults or skips, reads otherwise, or refuses.
        r#"{"sessionUpdate":"tool_call","toolCallId":"c3","title":"x","status":"sideways"}"#,
        r#"{"sessionUpdate":"tool_call","toolCallId":"c3","title":"x","kind":7}"#,
        r#"{"sessionUpdate":"tool_call","toolCallId":"c3","title":null}"#,
        r#"{"sessionUpdate":"tool_call","toolCallId":"c3"}"#,
        r#"{"sessionUpdate":"tool_call","toolCallId":"c4","title":"x","title":"y"}"#,
        r#"{"sessionUpdate":"tool_call","toolCallId":"c4","title":"x","_meta":7}"#,
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[{"type":"content","content":{"type":"image","data":"AA==","mimeType":"image/png"}}]}"#,
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[{"type":"content","content":{"type":"text","text":"a","annotations":null}}]}"#,
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[{"type":"content","terminalId":"t1","content":{"type":"text","text":"a"}}]}"#,
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[{"type":"terminal","terminalId":"t1","oldText":"a"}]}"#,
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[{"type":"diff","newText":"a"}]}"#,
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[{"type":"session","sessionId":"s2"}]}"#,
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[{"type":"terminal","terminalId":"t1"},{"type":"terminal"}]}"#,
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":{"type":"terminal","terminalId":"t1"}}"#,
        r#"{"sessionUpdate":"tool_call_update","toolCallId":1}"#,
        r#"{"sessionUpdate":"plan","entries":[]}"#,
        // Arrays where objects go: a derived struct would read them field by position.
        r#"["tool_call_update","t1",null,null,null,"completed"]"#,
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"t1","content":[{"type":"content","content":["text","hi"]}]}"#,
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"t1","content":[["terminal",null,"term1"]]}"#,
    ];
    for (u, want) in taken
        .iter()
        .map(|u| (u, true))
        .chain(left.iter().map(|u| (u, false)))
    {
        let l = note(u);
        let one_pass = fast::plain_tool(&l);
        assert_eq!(one_pass.is_some(), want, "{u}");
        if let Some(got) = one_pass {
            assert_eq!(Some(got), fast::schema_tool_update(&l), "{u}");
        }
        // Whichever way, `tool_update` reads what the schema reads.
        assert_eq!(fast::tool_update(&l), fast::schema_tool_update(&l), "{u}");
    }
    // The real agents' lines (and those of our recorded fixtures, inside their entries).
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let (mut tools, mut one_pass) = (0, 0);
    for dir in ["../shared/recordings/acp", "fixtures/recordings/acp"] {
        let dir = root.join(dir);
        for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = e.unwrap().path();
            if p.extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            for raw in std::fs::read_to_string(&p).unwrap().lines() {
                let inner = serde_json::from_str::<serde_json::Value>(raw)
                    .ok()
                    .and_then(|v| v.get("line").and_then(|l| l.as_str()).map(String::from));
                let l = inner.as_deref().unwrap_or(raw).trim_end();
                let Some(want) = fast::schema_tool_update(l) else {
                    continue;
                };
                tools += 1;
                if let Some(got) = fast::plain_tool(l) {
                    one_pass += 1;
                    assert_eq!(got, want, "{}: {l}", p.display());
                }
            }
        }
    }
    assert!(
        tools >= 10 && one_pass * 2 >= tools,
        "{one_pass} of {tools}"
    );
}
