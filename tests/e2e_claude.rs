//! End-to-end: switchboard's real app (`Headless`: the TUI's App, reducer, effects and Claude
//! backend, with a `TestBackend` screen) supervising the REAL `claude` CLI, which talks to the
//! fake Anthropic API (`tests/support/fake_model.rs`, scenarios in `fixtures/scenarios/`).
//!
//! Each test checks (a) the frames switchboard wrote (its session recording), (b) what the CLI
//! then sent to the model, (c) the state and the screen. Skipped with a note when the pinned
//! CLI is not installed (`npm ci --prefix tests/peers`), unless `CI=true`.
//!
//! `SWITCHBOARD_REGEN_RECORDINGS=1 cargo test --test e2e_claude` refreshes
//! `fixtures/recordings/claude/*.jsonl` (see `fixtures/recordings/README.md`).

#[path = "support/fake_model.rs"]
mod fake_model;

#[path = "support/e2e.rs"]
mod e2e;

use crossterm::event::KeyCode;
use serde_json::{Value, json};
use switchboard::core::gate::{Gate, GateKind};
use switchboard::core::state::State;
use switchboard::core::transcript::ItemKind;

use e2e::E2e;
use fake_model::{Scenario, ToolResult};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The pending gate whose request carries `tool_use_id` (from the CLI's can_use_tool), by id.
fn gate<'a>(s: &'a State, id: &str) -> &'a Gate {
    s.gate(id)
        .unwrap_or_else(|| panic!("gate {id} is not pending; pending: {:?}", gate_ids(s)))
}

fn gate_ids(s: &State) -> Vec<String> {
    s.gates.iter().map(|g| g.id.clone()).collect()
}

fn has_gate_kind(s: &State, label: &str) -> bool {
    s.gates.iter().any(|g| g.kind.label() == label)
}

/// The tool_result the model received for `tool_use_id` (panics with the traffic if none).
fn model_result(e: &E2e, tool_use_id: &str) -> ToolResult {
    e.model
        .tool_results()
        .into_iter()
        .find(|t| t.tool_use_id == tool_use_id)
        .unwrap_or_else(|| {
            panic!(
                "the model never received a tool_result for {tool_use_id}; requests:\n{}",
                e.model.dump()
            )
        })
}

/// Turn results of the root transcript: (ok, subtype, text).
fn turn_results(s: &State) -> Vec<(bool, String, String)> {
    s.tree.nodes[0]
        .transcript
        .items
        .iter()
        .filter_map(|i| match &i.kind {
            ItemKind::TurnResult {
                ok, subtype, text, ..
            } => Some((*ok, subtype.clone(), text.clone())),
            _ => None,
        })
        .collect()
}

/// Audit rows of node `node`.
fn audits(s: &State, node: usize) -> Vec<String> {
    s.tree.nodes[node]
        .transcript
        .items
        .iter()
        .filter_map(|i| match &i.kind {
            ItemKind::Audit { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// Tool call ids in node `node`'s transcript.
fn tool_calls(s: &State, node: usize) -> Vec<String> {
    s.tree.nodes[node]
        .transcript
        .items
        .iter()
        .filter_map(|i| match &i.kind {
            ItemKind::ToolCall { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect()
}

/// Assert a JSON field of a frame, naming the frame on failure.
#[track_caller]
fn assert_field(frame: &Value, pointer: &str, want: Value, what: &str) {
    assert_eq!(
        frame.pointer(pointer).cloned().unwrap_or(Value::Null),
        want,
        "{what}: field {pointer} of frame {frame}"
    );
}

#[track_caller]
fn assert_screen_has(screen: &str, needle: &str, what: &str) {
    assert!(
        e2e::screen_has(screen, needle),
        "{what}: no screen line contains {needle:?}\n--- screen ---\n{screen}"
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Bash write: deny with a message, allow once, allow always
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_write_deny_allow_once_allow_always() {
    let Some(mut e) = E2e::start("bash_write", &[], |_| Scenario::load("bash_write")).await else {
        return;
    };
    let created = e.cwd.join("created.txt");

    // Deny with a message: not run, the model gets the message.
    e.prompt("BASH_WRITE please");
    e.wait("the Bash permission gate", |s| {
        has_gate_kind(s, "permission")
    })
    .await;
    let req = e.can_use_tool("toolu_bash_1");
    let id = req["request_id"].as_str().unwrap().to_string();
    {
        let s = e.state();
        let g = gate(s, &id);
        assert_eq!(g.node_key, "root");
        let GateKind::Permission(p) = &g.kind else {
            panic!("expected a permission gate, got {:?}", g.kind)
        };
        assert_eq!(p.tool, "Bash");
        assert_eq!(p.summary, "touch created.txt");
    }
    let screen = e.h.screen();
    assert_screen_has(&screen, "touch created.txt", "the permission card");
    e.h.key(KeyCode::Char('n'));
    e.h.type_text("Not in this directory, please.");
    e.h.key(KeyCode::Enter);
    e.wait_turns(1).await;
    let body = e.reply_body(&id);
    assert_eq!(
        body,
        json!({"behavior":"deny","message":"Not in this directory, please."}),
        "deny reply to {id}"
    );
    assert!(!created.exists(), "a denied command must not run");
    let tr = model_result(&e, "toolu_bash_1");
    assert!(tr.is_error, "the denied tool_result is an error: {tr:?}");
    assert!(
        tr.text.contains("Not in this directory, please."),
        "the model must receive the deny message, got {:?}",
        tr.text
    );

    // Allow once: runs.
    e.prompt("BASH_WRITE again");
    e.wait("the second Bash gate", |s| has_gate_kind(s, "permission"))
        .await;
    let id2 = e.state().gates[0].id.clone();
    assert_ne!(id2, id);
    e.h.key(KeyCode::Char('y'));
    e.wait_turns(2).await;
    let body = e.reply_body(&id2);
    assert_eq!(
        body,
        json!({"behavior":"allow","updatedInput":{"command":"touch created.txt","description":"Create an empty file"}}),
        "allow-once reply to {id2}"
    );
    assert!(created.exists(), "allowed once: the command ran in the cwd");
    let tr = model_result(&e, "toolu_bash_1r2");
    assert!(!tr.is_error, "allowed tool_result: {tr:?}");

    // Allow always: updatedPermissions scoped to the session; the same command then runs
    // without a new gate.
    std::fs::remove_file(&created).unwrap();
    e.prompt("BASH_WRITE a third time");
    e.wait("the third Bash gate", |s| has_gate_kind(s, "permission"))
        .await;
    let id3 = e.state().gates[0].id.clone();
    e.h.key(KeyCode::Char('a'));
    e.wait_turns(3).await;
    let body = e.reply_body(&id3);
    assert_field(&body, "/behavior", json!("allow"), "allow-always reply");
    assert_field(
        &body,
        "/updatedInput/command",
        json!("touch created.txt"),
        "allow-always reply",
    );
    let perms = body["updatedPermissions"]
        .as_array()
        .unwrap_or_else(|| panic!("allow-always reply without updatedPermissions: {body}"));
    assert!(!perms.is_empty(), "empty updatedPermissions: {body}");
    for p in perms {
        assert_field(
            p,
            "/destination",
            json!("session"),
            "every updatedPermissions entry",
        );
    }
    assert!(
        perms.iter().any(|p| p["type"] == "addRules"
            && p["behavior"] == "allow"
            && p["rules"][0]["toolName"] == "Bash"
            && p["rules"][0]["ruleContent"] == "touch created.txt"),
        "the Bash rule suggestion is echoed: {body}"
    );
    assert!(created.exists(), "allowed always: the command ran");
    assert!(
        !e.cwd.join(".claude/settings.local.json").exists(),
        "a session rule must not be written to the project settings"
    );
    std::fs::remove_file(&created).unwrap();
    let before = e.requests_of("can_use_tool").len();
    e.prompt("BASH_AGAIN");
    e.wait_turns(4).await;
    assert_eq!(
        e.requests_of("can_use_tool").len(),
        before,
        "the session rule must answer the repeated command without a new request"
    );
    assert!(e.state().gates.is_empty());
    assert!(created.exists(), "the repeated command ran under the rule");
    let tr = model_result(&e, "toolu_bash_2");
    assert!(!tr.is_error, "repeated command result: {tr:?}");
    let a = audits(e.state(), 0);
    assert_eq!(
        a,
        vec![
            "denied: Bash `touch created.txt` — Not in this directory, please.".to_string(),
            "allowed once: Bash `touch created.txt`".to_string(),
            "allowed always (session rule): Bash `touch created.txt`".to_string(),
        ],
        "audit rows"
    );

    e.quit().await;
    e.model.assert_no_unexpected();
    e.cleanup();
}
