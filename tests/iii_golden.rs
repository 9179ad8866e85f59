//! The iii mapper against the harness authors' own golden schemas (issue 23 item 1, first
//! part): every harness call it sends, in a session's whole life (connect and its reads, a
//! prompt, a stop, new sessions with and without a provider), validates against the golden request schema of its
//! function, vendored from iii-hq/harness-e2e (fixtures/iii/harness-e2e, see its NOTICE).

use std::collections::HashMap;

use serde_json::{Value, json};
use switchboard::backend::iii::mapping::{Mapper, Out, OutCall};
use switchboard::core::msg::{Command, HarnessSession};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/iii/harness-e2e");

fn golden(name: &str) -> Value {
    let text = std::fs::read_to_string(format!("{GOLDEN}/{name}")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The golden request validators, by function id.
fn request_validators() -> HashMap<String, jsonschema::Validator> {
    [
        "send",
        "status",
        "stop",
        "session-tree",
        "metrics",
        "teardown",
    ]
    .iter()
    .map(|f| {
        let g = golden(&format!("schemas/harness.{f}.json"));
        let v = jsonschema::validator_for(&g["request_schema"]).unwrap();
        (g["function_id"].as_str().unwrap().to_string(), v)
    })
    .collect()
}

/// Answers the mapper's calls with the harness authors' valid responses.
fn answer(c: &OutCall) -> Value {
    let valid = golden("contracts/valid-responses.json");
    let sid = c.payload["session_id"]
        .as_str()
        .or(c.payload["root_session_id"].as_str())
        .unwrap_or("e2e_case")
        .to_string();
    let with_sid = |mut v: Value, key: &str| {
        v[key] = json!(sid);
        v
    };
    match c.function_id.as_str() {
        "session::list" => {
            json!({"sessions": [{"session_id": "e2e_case", "title": "golden", "status": "working"}]})
        }
        "harness::status" => with_sid(valid["status"].clone(), "session_id"),
        "harness::session-tree" => with_sid(valid["session_tree"].clone(), "root_session_id"),
        "harness::metrics" => with_sid(valid["metrics"].clone(), "root_session_id"),
        "harness::send" => with_sid(valid["send"].clone(), "session_id"),
        "harness::stop" => valid["stop"].clone(),
        "session::messages" => json!({"messages": []}),
        "approval::list-pending" => json!({"pending": []}),
        "engine::registered-triggers::list" => json!({"triggers": []}),
        _ => Value::Null,
    }
}

/// Run `out`'s calls (and the calls their results lead to) to the end; every call made.
fn drive(m: &mut Mapper, out: Out, log: &mut Vec<OutCall>) {
    let mut queue: Vec<OutCall> = out.calls;
    let mut n = 0;
    while let Some(c) = queue.pop() {
        n += 1;
        assert!(n < 500, "the mapper keeps calling: {log:?}");
        let result = answer(&c);
        let next = m.on_result(&c.function_id, &c.payload, &result, 1_000 + n);
        log.push(c);
        queue.extend(next.calls);
    }
}

#[test]
fn every_harness_call_we_send_validates_against_its_golden_request_schema() {
    let validators = request_validators();
    // The schemas do refuse: a status read without its session, a send without a message.
    assert!(!validators["harness::status"].is_valid(&json!({"verbose": true})));
    assert!(!validators["harness::send"].is_valid(&json!({"session_id": "s"})));
    let mut m = Mapper::new("golden");
    let mut log = Vec::new();
    let first = m.reconnected();
    drive(&mut m, first, &mut log);
    for cmd in [Command::Prompt("fix the build".into()), Command::Interrupt] {
        let out = m.command("e2e_case", &cmd, 2_000);
        drive(&mut m, out, &mut log);
    }
    // New sessions from the dialog (the engine's own session, root ""): with a provider, which
    // the golden `SendRequest` takes top-level next to `model`, and without one.
    for provider in [Some("openrouter"), None] {
        let new = HarnessSession {
            model: "claude-sonnet-4".into(),
            provider: provider.map(String::from),
            title: "Golden".into(),
            allow: vec!["shell::exec".into()],
            message: "write the docs".into(),
        };
        let out = m.command("", &Command::NewHarnessSession(new), 3_000);
        drive(&mut m, out, &mut log);
    }
    let new_sends: Vec<&Value> = log
        .iter()
        .filter(|c| c.function_id == "harness::send" && c.payload.get("session_id").is_none())
        .map(|c| &c.payload)
        .collect();
    assert_eq!(new_sends.len(), 2, "{log:?}");
    assert_eq!(new_sends[0]["provider"], "openrouter");
    assert!(new_sends[1].get("provider").is_none(), "{}", new_sends[1]);
    // The schema does hold the provider to its type: the check above means something.
    let mut wrong = new_sends[0].clone();
    wrong["provider"] = json!(["openrouter"]);
    assert!(!validators["harness::send"].is_valid(&wrong));
    let mut seen: Vec<&str> = Vec::new();
    for c in &log {
        let Some(v) = validators.get(&c.function_id) else {
            continue;
        };
        let errors: Vec<String> = v.iter_errors(&c.payload).map(|e| e.to_string()).collect();
        assert!(
            errors.is_empty(),
            "{} {} breaks its golden request schema: {errors:?}",
            c.function_id,
            c.payload
        );
        seen.push(&c.function_id);
    }
    for f in [
        "harness::status",
        "harness::session-tree",
        "harness::metrics",
        "harness::send",
        "harness::stop",
    ] {
        assert!(seen.contains(&f), "{f} was never sent: {seen:?}");
    }
}

/// Every protocol line an output carries, with its level.
fn protocol_lines(out: &Out) -> Vec<String> {
    out.events
        .iter()
        .filter_map(|(_, e)| match e {
            switchboard::core::msg::BackendEvent::Protocol { level, text } => {
                Some(format!("{level:?}: {text}"))
            }
            _ => None,
        })
        .collect()
}

/// A mapper that knows root session `e2e_case` (its connect reads answered).
fn known() -> Mapper {
    let mut m = Mapper::new("golden");
    let out = m.reconnected();
    drive(&mut m, out, &mut Vec::new());
    m
}

/// The harness authors' valid and additive answers map with no protocol error and the state
/// they say (item 1); their incompatible ones are a visible protocol error and change nothing.
#[test]
fn valid_and_additive_answers_map_cleanly_and_incompatible_ones_are_refused_visibly() {
    let valid = golden("contracts/valid-responses.json");
    let additive = golden("contracts/additive-responses.json");
    let incompatible = golden("contracts/incompatible-responses.json");
    let requests = [
        (
            "status",
            "harness::status",
            json!({"session_id": "e2e_case", "verbose": true}),
        ),
        (
            "session_tree",
            "harness::session-tree",
            json!({"root_session_id": "e2e_case"}),
        ),
        (
            "metrics",
            "harness::metrics",
            json!({"root_session_id": "e2e_case"}),
        ),
        ("stop", "harness::stop", json!({"session_id": "e2e_case"})),
        (
            "send",
            "harness::send",
            json!({"session_id": "e2e_case", "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}),
        ),
    ];
    for (set, answers) in [("valid", &valid), ("additive", &additive)] {
        for (key, f, req) in &requests {
            let Some(a) = answers.get(*key) else { continue };
            let mut m = known();
            let out = m.on_result(f, req, a, 5_000);
            let lines = protocol_lines(&out);
            assert!(
                lines
                    .iter()
                    .all(|l| !l.starts_with("Error") && !l.starts_with("Warn")),
                "{set} {key}: {lines:?}"
            );
        }
    }
    // The right state: the valid status is a completed turn (idle), the additive metrics count
    // one turn.
    let mut m = known();
    let out = m.on_result("harness::status", &requests[0].2, &valid["status"], 5_000);
    assert!(out.events.iter().any(|(_, e)| *e
        == switchboard::core::msg::BackendEvent::Turn(switchboard::core::msg::TurnState::Idle)));
    let out = m.on_result(
        "harness::metrics",
        &requests[2].2,
        &additive["metrics"],
        5_001,
    );
    assert!(
        !out.events.is_empty(),
        "additive metrics must still be shown: {out:?}"
    );
    // Incompatible: one error line each, and nothing else happens.
    for (key, f, req) in &requests {
        let Some(a) = incompatible.get(*key) else {
            continue;
        };
        let mut m = known();
        let out = m.on_result(f, req, a, 6_000);
        let lines = protocol_lines(&out);
        assert_eq!(lines.len(), 1, "{key}: {lines:?}");
        assert!(
            lines[0].starts_with("Error") && lines[0].contains("breaks the harness contract"),
            "{key}: {lines:?}"
        );
        assert_eq!(out.events.len(), 1, "{key}: no state changes: {out:?}");
        assert!(out.calls.is_empty(), "{key}: {out:?}");
    }
}
