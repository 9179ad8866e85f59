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

#[path = "support/common.rs"]
mod common;
#[path = "support/fake_model.rs"]
mod fake_model;

#[path = "support/e2e.rs"]
mod e2e;

use serde_json::{Value, json};
use switchboard::core::gate::{Gate, GateKind};
use switchboard::core::input::KeyCode;
use switchboard::core::state::State;
use switchboard::core::transcript::ItemKind;
use switchboard::core::tree::NodeStatus;

use common::audits;
use e2e::{E2e, request_id};
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
    let id = request_id(&req);
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

// ---------------------------------------------------------------------------------------------
// 1. AskUserQuestion: two questions, multiSelect joined in option order, then "Other"
// ---------------------------------------------------------------------------------------------

const Q_MODULES: &str = "Which modules should get audit logging?";
const Q_FORMAT: &str = "Which log format should we use?";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_user_question_multiselect_and_other() {
    let Some(mut e) = E2e::start("ask_multiselect", &[], |_| {
        Scenario::load("ask_multiselect")
    })
    .await
    else {
        return;
    };

    // Turn 1: option answers, toggled out of order.
    e.prompt("ASK_MULTI: set up audit logging");
    e.wait("the question gate", |s| has_gate_kind(s, "question"))
        .await;
    let req = e.can_use_tool("toolu_ask_1");
    let id = request_id(&req);
    {
        let g = gate(e.state(), &id);
        let GateKind::Question(q) = &g.kind else {
            panic!("expected a question gate, got {:?}", g.kind)
        };
        assert_eq!(q.questions.len(), 2);
        assert!(q.questions[0].multi && !q.questions[1].multi);
        assert_eq!(q.questions[0].options.len(), 4);
    }
    assert_eq!(
        e.state().focus,
        switchboard::core::state::Focus::Gate,
        "a new gate takes the focus"
    );
    e.h.key(KeyCode::Char('3')); // Audit
    e.h.key(KeyCode::Char('1')); // Auth
    let screen = e.h.screen();
    assert_screen_has(&screen, "? Question [1/2] Modules", "question card title");
    assert_screen_has(&screen, "1. [x] Auth", "Auth toggled");
    assert_screen_has(&screen, "2. [ ] Billing", "Billing not toggled");
    assert_screen_has(&screen, "3. [x] Audit", "Audit toggled");
    assert_screen_has(&screen, "Other… (type an answer)", "the Other row");
    assert_screen_has(&screen, "2 selected", "the selection count");
    e.h.key(KeyCode::Enter);
    let screen = e.h.screen();
    assert_screen_has(&screen, "? Question [2/2] Format", "second page");
    e.h.key(KeyCode::Char('1')); // JSON
    e.h.key(KeyCode::Enter);
    e.wait_turns(1).await;
    let body = e.reply_body(&id);
    assert_field(&body, "/behavior", json!("allow"), "answer reply");
    assert_field(
        &body,
        "/updatedInput/questions",
        req["request"]["input"]["questions"].clone(),
        "answer reply echoes the questions",
    );
    assert_field(
        &body,
        "/updatedInput/answers",
        json!({Q_MODULES: "Auth, Audit", Q_FORMAT: "JSON"}),
        "answers keyed by question text, multiSelect in option order",
    );
    let tr = model_result(&e, "toolu_ask_1");
    assert!(!tr.is_error, "{tr:?}");
    for want in [
        format!("\"{Q_MODULES}\"=\"Auth, Audit\""),
        format!("\"{Q_FORMAT}\"=\"JSON\""),
    ] {
        assert!(
            tr.text.contains(&want),
            "the model's tool_result lacks {want}: {:?}",
            tr.text
        );
    }

    // Turn 2: "Other" free text on both pages.
    e.prompt("ASK_MULTI: once more");
    e.wait("the second question gate", |s| has_gate_kind(s, "question"))
        .await;
    let req = e.can_use_tool("toolu_ask_1r2");
    let id = request_id(&req);
    e.h.key(KeyCode::Char('1')); // Auth
    for _ in 0..4 {
        e.h.key(KeyCode::Down);
    }
    let screen = e.h.screen();
    assert_screen_has(
        &screen,
        "›    [ ] Other… (type an answer)",
        "cursor on Other",
    );
    e.h.key(KeyCode::Enter);
    assert!(
        e.state().active_ui().is_some_and(|ui| ui.editor.is_some()),
        "Enter on Other opens a text box\n{}",
        e.h.screen()
    );
    e.h.type_text("Reporting dashboards");
    let screen = e.h.screen();
    assert_screen_has(&screen, "Reporting dashboards", "typed Other text");
    e.h.key(KeyCode::Enter);
    let screen = e.h.screen();
    assert_screen_has(
        &screen,
        "[x] Other: Reporting dashboards",
        "Other kept and chosen",
    );
    e.h.key(KeyCode::Enter); // confirm page 1
    let screen = e.h.screen();
    assert_screen_has(&screen, "? Question [2/2] Format", "second page");
    e.h.key(KeyCode::Down);
    e.h.key(KeyCode::Down);
    e.h.key(KeyCode::Enter);
    e.h.type_text("CSV with a header row");
    e.h.key(KeyCode::Enter); // single-select: keeping the text confirms the page
    e.wait_turns(2).await;
    let body = e.reply_body(&id);
    assert_field(
        &body,
        "/updatedInput/answers",
        json!({Q_MODULES: "Auth, Reporting dashboards", Q_FORMAT: "CSV with a header row"}),
        "Other answers",
    );
    let tr = model_result(&e, "toolu_ask_1r2");
    assert!(
        tr.text.contains(&format!(
            "\"{Q_MODULES}\"=\"Auth, Reporting dashboards\", \"{Q_FORMAT}\"=\"CSV with a header row\""
        )),
        "the model's tool_result lacks the Other answers: {:?}",
        tr.text
    );
    assert!(turn_results(e.state()).iter().all(|t| t.0));

    e.quit().await;
    e.model.assert_no_unexpected();
    e.cleanup();
}

// ---------------------------------------------------------------------------------------------
// 3. Sub-agent fan-out: two foreground sub-agents, one asks for a permission
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subagents_gate_lands_on_the_right_child() {
    let Some(mut e) = E2e::start("subagents", &[], |_| Scenario::load("subagents")).await else {
        return;
    };
    e.prompt("SPAWN_TWO helpers");
    e.wait("the sub-agent's Bash gate", |s| {
        has_gate_kind(s, "permission")
    })
    .await;
    let req = e.can_use_tool("toolu_sub_touch");
    let id = request_id(&req);
    let task_a = e
        .in_lines()
        .into_iter()
        .find(|l| l["subtype"] == "task_started" && l["tool_use_id"] == "toolu_agent_a")
        .unwrap_or_else(|| panic!("no task_started for agent a:\n{}", e.recording_tail(60)));
    assert_eq!(
        req["request"]["agent_id"], task_a["task_id"],
        "the CLI names the asking sub-agent"
    );
    {
        let s = e.state();
        let a = s.tree.get("toolu_agent_a").expect("child node a");
        let b = s.tree.get("toolu_agent_b").expect("child node b");
        assert_eq!(s.tree.nodes[a].parent, Some(0));
        assert_eq!(s.tree.nodes[b].parent, Some(0));
        let g = gate(s, &id);
        assert_eq!(
            g.node_key, "toolu_agent_a",
            "the gate belongs to sub-agent a"
        );
        assert_eq!(s.gates_on(a), 1, "tree badge on a");
        assert_eq!(s.gates_on(b), 0, "no badge on b");
        assert_eq!(s.gates_on(0), 0, "no badge on the root");
        assert_eq!(s.gates_within(0), 1);
        assert_eq!(s.selected_node, a, "the gate selects its node");
    }
    let screen = e.h.screen();
    assert_screen_has(&screen, "‖1", "the waiting badge in the tree");
    assert_screen_has(
        &screen,
        "asked by general-purpose Create sub file",
        "the card names the sub-agent",
    );
    e.h.key(KeyCode::Char('y'));
    e.wait_turns(1).await;
    e.wait("both children completed", |s| {
        ["toolu_agent_a", "toolu_agent_b"].iter().all(|k| {
            s.tree
                .get(k)
                .is_some_and(|n| s.tree.nodes[n].status == NodeStatus::Completed)
        })
    })
    .await;
    let body = e.reply_body(&id);
    assert_eq!(
        body,
        json!({"behavior":"allow","updatedInput":{"command":"touch sub.txt","description":"Create sub.txt"}}),
        "reply to the sub-agent's request {id}"
    );
    assert!(
        e.cwd.join("sub.txt").exists(),
        "the sub-agent's command ran"
    );
    {
        let s = e.state();
        assert_eq!(s.tree.nodes.len(), 3, "root + two children");
        let a = s.tree.get("toolu_agent_a").unwrap();
        let b = s.tree.get("toolu_agent_b").unwrap();
        assert_eq!(tool_calls(s, a), vec!["toolu_sub_touch".to_string()]);
        assert_eq!(tool_calls(s, b), vec!["toolu_sub_echo".to_string()]);
        assert_eq!(
            tool_calls(s, 0),
            vec!["toolu_agent_a".to_string(), "toolu_agent_b".to_string()],
            "the root holds only its own calls"
        );
        assert_eq!(
            audits(s, a),
            vec!["allowed once: Bash `touch sub.txt`".to_string()],
            "the audit row is on the child"
        );
        assert!(turn_results(s).iter().all(|t| t.0), "{:?}", turn_results(s));
    }
    let tr = model_result(&e, "toolu_sub_touch");
    assert!(!tr.is_error, "{tr:?}");
    let tr = model_result(&e, "toolu_sub_echo");
    assert!(tr.text.contains("hi"), "{tr:?}");
    for agent in ["toolu_agent_a", "toolu_agent_b"] {
        let tr = model_result(&e, agent);
        assert!(!tr.is_error, "{agent}: {tr:?}");
    }

    e.quit().await;
    e.model.assert_no_unexpected();
    e.cleanup();
}

/// The CLI's default: sub-agents in the background. The parent turn may end before the
/// sub-agent asks; the gate must still land on the right child, and the children complete
/// through task notifications.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_subagents_gate_lands_on_the_right_child() {
    let Some(mut e) = E2e::start("subagents_background", &[], |_| {
        Scenario::load("subagents_background")
    })
    .await
    else {
        return;
    };
    e.prompt("SPAWN_TWO helpers");
    e.wait("the background sub-agent's Bash gate", |s| {
        has_gate_kind(s, "permission")
    })
    .await;
    let req = e.can_use_tool("toolu_sub_touch");
    let id = request_id(&req);
    {
        let s = e.state();
        let a = s.tree.get("toolu_agent_a").expect("child node a");
        assert_eq!(gate(s, &id).node_key, "toolu_agent_a");
        assert_eq!(s.gates_on(a), 1, "tree badge on a");
        assert_eq!(s.gates_on(0), 0, "no badge on the root");
    }
    e.h.key(KeyCode::Char('y'));
    e.wait("both background children completed", |s| {
        ["toolu_agent_a", "toolu_agent_b"].iter().all(|k| {
            s.tree
                .get(k)
                .is_some_and(|n| s.tree.nodes[n].status == NodeStatus::Completed)
        })
    })
    .await;
    // The CLI reports the results to the model in a task-notification turn of its own.
    e.wait("the task-notification turn finished", |s| {
        let items = &s.tree.nodes[0].transcript.items;
        let noted = items.iter().rposition(|i| {
            matches!(&i.kind, ItemKind::Assistant { text, .. } if text == "Noted the background result.")
        });
        let last_result = items
            .iter()
            .rposition(|i| matches!(i.kind, ItemKind::TurnResult { .. }));
        matches!((noted, last_result), (Some(n), Some(r)) if r > n)
    })
    .await;
    assert_eq!(
        e.reply_body(&id),
        json!({"behavior":"allow","updatedInput":{"command":"touch sub.txt","description":"Create sub.txt"}}),
        "reply to the background sub-agent's request {id}"
    );
    assert!(
        e.cwd.join("sub.txt").exists(),
        "the sub-agent's command ran"
    );
    {
        let s = e.state();
        let a = s.tree.get("toolu_agent_a").unwrap();
        let b = s.tree.get("toolu_agent_b").unwrap();
        assert_eq!(tool_calls(s, a), vec!["toolu_sub_touch".to_string()]);
        assert_eq!(tool_calls(s, b), vec!["toolu_sub_echo".to_string()]);
        assert_eq!(
            audits(s, a),
            vec!["allowed once: Bash `touch sub.txt`".to_string()]
        );
    }
    assert!(
        e.model
            .fired_rules()
            .iter()
            .any(|r| r == "task_notification"),
        "the CLI reported the background results to the model: {:?}",
        e.model.fired_rules()
    );

    e.quit().await;
    e.model.assert_no_unexpected();
    e.cleanup();
}

// ---------------------------------------------------------------------------------------------
// 4. Parallel gates: three Reads outside the cwd open at once, answered out of order
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_gates_answered_out_of_order() {
    let Some(mut e) = E2e::start("parallel_reads", &[], |_| Scenario::load("parallel_gates")).await
    else {
        return;
    };
    e.prompt("THREE_READS now");
    e.wait("three gates at once", |s| s.gates.len() == 3).await;
    let ids: Vec<String> = ["toolu_read_a", "toolu_read_b", "toolu_read_c"]
        .iter()
        .map(|t| request_id(&e.can_use_tool(t)))
        .collect();
    let screen = e.h.screen();
    assert_screen_has(&screen, "‖3", "three waiting on the root");
    assert_screen_has(&screen, "/3", "the card shows its position among three");

    // Move with `]` to a gate, then answer it.
    fn goto(e: &mut E2e, id: &str) {
        for _ in 0..3 {
            if e.state().active_gate.as_deref() == Some(id) {
                return;
            }
            e.h.key(KeyCode::Char(']'));
        }
        panic!("`]` never reached gate {id}\n{}", e.h.screen());
    }
    goto(&mut e, &ids[1]);
    e.h.key(KeyCode::Char('n'));
    e.h.type_text("Not that file.");
    e.h.key(KeyCode::Enter);
    assert_eq!(e.state().gates.len(), 2);
    goto(&mut e, &ids[2]);
    e.h.key(KeyCode::Char('y'));
    goto(&mut e, &ids[0]);
    e.h.key(KeyCode::Char('y'));
    e.wait_turns(1).await;

    // Each reply carries its own request id, in the order answered.
    let replies: Vec<Value> = e
        .out_lines()
        .into_iter()
        .filter(|l| l["type"] == "control_response")
        .collect();
    let order: Vec<String> = replies
        .iter()
        .map(|r| {
            r["response"]["request_id"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert_eq!(
        order,
        vec![ids[1].clone(), ids[2].clone(), ids[0].clone()],
        "replies in the order answered: {replies:?}"
    );
    assert_eq!(
        e.reply_body(&ids[1]),
        json!({"behavior":"deny","message":"Not that file."})
    );
    assert_eq!(
        e.reply_body(&ids[2]),
        json!({"behavior":"allow","updatedInput":{"file_path":"/etc/passwd"}})
    );
    assert_eq!(
        e.reply_body(&ids[0]),
        json!({"behavior":"allow","updatedInput":{"file_path":"/etc/hostname"}})
    );
    let b = model_result(&e, "toolu_read_b");
    assert!(b.is_error && b.text.contains("Not that file."), "{b:?}");
    let c = model_result(&e, "toolu_read_c");
    assert!(!c.is_error && c.text.contains("root"), "{c:?}");
    let a = model_result(&e, "toolu_read_a");
    assert!(!a.text.contains("Not that file."), "{a:?}");
    assert!(e.state().gates.is_empty());

    e.quit().await;
    e.model.assert_no_unexpected();
    e.cleanup();
}

// ---------------------------------------------------------------------------------------------
// 5. Interrupt: during a streamed answer; with a pending permission
// ---------------------------------------------------------------------------------------------

fn streamed_chars(s: &State) -> usize {
    s.tree.nodes[0]
        .transcript
        .items
        .iter()
        .filter_map(|i| match &i.kind {
            ItemKind::Assistant { text, .. } => Some(text.len()),
            _ => None,
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_during_streamed_answer() {
    let Some(mut e) = E2e::start("interrupt_stream", &[], |_| Scenario::load("long_stream")).await
    else {
        return;
    };
    e.prompt("LONG_STREAM please");
    e.wait("some streamed text", |s| streamed_chars(s) >= 50)
        .await;
    assert!(
        e.state().tree.nodes[0]
            .transcript
            .items
            .iter()
            .any(|i| matches!(
                i.kind,
                ItemKind::Assistant {
                    streaming: true,
                    ..
                }
            )),
        "the answer is still streaming"
    );
    e.h.ctrl('c');
    assert_eq!(e.state().status_line.as_deref(), Some("interrupt sent"));
    e.wait_turns(1).await;
    let results = turn_results(e.state());
    let (ok, subtype, text) = &results[0];
    assert!(!ok, "the interrupted turn is not ok: {results:?}");
    assert_eq!(subtype, "error_during_execution");
    assert!(text.contains("aborted_streaming"), "{text:?}");
    let streamed = streamed_chars(e.state());
    assert!(
        streamed < "word ".len() * 200,
        "the stream stopped early ({streamed} chars)"
    );
    assert!(
        e.state().tree.nodes[0]
            .transcript
            .items
            .iter()
            .all(|i| !matches!(
                i.kind,
                ItemKind::Assistant {
                    streaming: true,
                    ..
                }
            )),
        "no row keeps streaming after the abort"
    );
    let int = e
        .out_lines()
        .into_iter()
        .find(|l| l["type"] == "control_request" && l["request"]["subtype"] == "interrupt")
        .unwrap_or_else(|| panic!("no interrupt written:\n{}", e.recording_tail(40)));
    let int_id = request_id(&int);
    let ack = e
        .in_lines()
        .into_iter()
        .find(|l| l["type"] == "control_response" && l["response"]["request_id"] == int_id.as_str())
        .unwrap_or_else(|| panic!("the interrupt {int_id} was not acknowledged"));
    assert_field(&ack, "/response/subtype", json!("success"), "interrupt ack");
    assert!(
        e.model
            .try_wait_for(
                |r| r.iter().any(|r| r.aborted),
                std::time::Duration::from_secs(5)
            )
            .await,
        "the CLI should drop the streaming model call:\n{}",
        e.model.dump()
    );

    // The session goes on.
    e.prompt("and now something short");
    e.wait_turns(2).await;
    assert!(turn_results(e.state())[1].0, "the next turn works");

    e.quit().await;
    e.model.assert_no_unexpected();
    e.cleanup();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_with_pending_permission_withdraws_the_gate() {
    let Some(mut e) = E2e::start("interrupt_pending", &[], |_| Scenario::load("bash_write")).await
    else {
        return;
    };
    e.prompt("BASH_WRITE please");
    e.wait("the Bash gate", |s| has_gate_kind(s, "permission"))
        .await;
    let id = request_id(&e.can_use_tool("toolu_bash_1"));
    e.h.ctrl('c');
    e.wait_turns(1).await;
    e.wait("the gate closed", |s| s.gates.is_empty()).await;
    let cancel = e
        .in_lines()
        .into_iter()
        .find(|l| l["type"] == "control_cancel_request")
        .unwrap_or_else(|| panic!("no control_cancel_request:\n{}", e.recording_tail(40)));
    assert_field(
        &cancel,
        "/request_id",
        json!(id),
        "the CLI withdraws the gate",
    );
    assert!(
        e.responses_to(&id).is_empty(),
        "a withdrawn request is never answered"
    );
    assert!(
        audits(e.state(), 0)
            .iter()
            .any(|a| a == "withdrawn by the agent: Bash `touch created.txt`"),
        "{:?}",
        audits(e.state(), 0)
    );
    let results = turn_results(e.state());
    assert!(!results[0].0, "{results:?}");
    assert!(results[0].2.contains("aborted_tools"), "{results:?}");
    assert!(!e.cwd.join("created.txt").exists(), "the command never ran");

    e.quit().await;
    assert!(
        e.responses_to(&id).is_empty(),
        "quitting does not answer a withdrawn request"
    );
    e.model.assert_no_unexpected();
    e.cleanup();
}

// ---------------------------------------------------------------------------------------------
// 6. Quit with a gate pending
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quit_with_pending_gate_denies_it_and_stops_the_cli() {
    let Some(mut e) = E2e::start("quit_pending", &[], |_| Scenario::load("bash_write")).await
    else {
        return;
    };
    e.prompt("BASH_WRITE please");
    e.wait("the Bash gate", |s| has_gate_kind(s, "permission"))
        .await;
    let id = request_id(&e.can_use_tool("toolu_bash_1"));
    let pid = e.state().session.pid.expect("the CLI's pid");
    e.h.ctrl('d');
    let screen = e.h.screen();
    assert_eq!(
        e.state().overlay,
        Some(switchboard::core::state::Overlay::ConfirmQuit),
        "quitting with a pending gate asks first\n{screen}"
    );
    e.quit().await; // confirms with `y`, waits for the backend, checks the pid is gone
    assert_eq!(
        e.reply_body(&id),
        json!({"behavior":"deny","message":"switchboard exited"}),
        "the pending gate is denied on exit"
    );
    let s = e.state();
    assert!(s.gates.is_empty());
    let (code, detail, _) = s.session.exited.clone().unwrap();
    assert_eq!(code, Some(0), "the CLI exits cleanly: {detail}");
    e2e::assert_gone(pid);
    assert!(!e.cwd.join("created.txt").exists(), "the command never ran");
    e.model.assert_no_unexpected();
    e.cleanup();
}

// ---------------------------------------------------------------------------------------------
// 7. Tool breakpoint on Bash: block with a reason, then continue
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn breakpoint_blocks_a_read_only_command() {
    let Some(mut e) = E2e::start("breakpoint", &["Bash"], |_| Scenario::load("breakpoint")).await
    else {
        return;
    };
    e.prompt("BREAKPOINT here");
    e.wait("the breakpoint gate", |s| has_gate_kind(s, "breakpoint"))
        .await;
    let init = e
        .out_lines()
        .into_iter()
        .find(|l| l["request"]["subtype"] == "initialize")
        .unwrap_or_else(|| panic!("no initialize written:\n{}", e.recording_tail(40)));
    assert_field(
        &init,
        "/request/hooks",
        json!({"PreToolUse":[{"matcher":"Bash","hookCallbackIds":["sb-break-Bash"]}]}),
        "the breakpoint hook is registered",
    );
    let req = e
        .requests_of("hook_callback")
        .into_iter()
        .find(|r| r["request"]["tool_use_id"] == "toolu_echo_1")
        .unwrap_or_else(|| panic!("no hook_callback:\n{}", e.recording_tail(40)));
    let id = request_id(&req);
    {
        let g = gate(e.state(), &id);
        let GateKind::Breakpoint(b) = &g.kind else {
            panic!("expected a breakpoint, got {:?}", g.kind)
        };
        assert_eq!(b.tool, "Bash");
        assert_eq!(b.summary, "echo safe");
        assert_eq!(b.hook_event, "PreToolUse");
    }
    let screen = e.h.screen();
    assert_screen_has(&screen, "Breakpoint · Bash", "breakpoint card title");
    assert_screen_has(&screen, "PreToolUse Bash echo safe", "breakpoint card body");
    e.h.key(KeyCode::Char('b'));
    e.h.type_text("Stepping through, not yet.");
    e.h.key(KeyCode::Enter);
    e.wait_turns(1).await;
    assert_eq!(
        e.reply_body(&id),
        json!({"decision":"block","reason":"Stepping through, not yet."}),
        "block reply to {id}"
    );
    let tr = model_result(&e, "toolu_echo_1");
    assert!(tr.is_error, "{tr:?}");
    assert!(
        tr.text.contains("Stepping through, not yet.") && !tr.text.contains("safe"),
        "the reason reaches the model and the command did not run: {:?}",
        tr.text
    );
    assert!(
        e.requests_of("can_use_tool").is_empty(),
        "a read-only command needs no permission"
    );

    // The same command continued at the breakpoint runs.
    e.prompt("BREAKPOINT again");
    e.wait("the second breakpoint", |s| has_gate_kind(s, "breakpoint"))
        .await;
    let id2 = e.state().gates[0].id.clone();
    e.h.key(KeyCode::Char('y'));
    e.wait_turns(2).await;
    assert_eq!(e.reply_body(&id2), json!({}), "continue reply");
    let tr = model_result(&e, "toolu_echo_1r2");
    assert!(!tr.is_error && tr.text.contains("safe"), "{tr:?}");
    assert_eq!(
        audits(e.state(), 0),
        vec![
            "blocked at breakpoint: Bash `echo safe` — Stepping through, not yet.".to_string(),
            "continued at breakpoint: Bash `echo safe`".to_string(),
        ]
    );

    e.quit().await;
    e.model.assert_no_unexpected();
    e.cleanup();
}

// ---------------------------------------------------------------------------------------------
// 8. Edit: the permission card shows a unified diff
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_permission_shows_a_diff() {
    let Some(mut e) = E2e::start("edit", &[], |d| {
        std::fs::write(d.cwd.join("notes.txt"), "hello\n").unwrap();
        Scenario::load("edit").with_var("cwd", d.cwd.display().to_string())
    })
    .await
    else {
        return;
    };
    e.prompt("EDIT_NOTES please");
    e.wait("the Edit gate", |s| has_gate_kind(s, "permission"))
        .await;
    let req = e.can_use_tool("toolu_edit_1");
    let id = request_id(&req);
    {
        let g = gate(e.state(), &id);
        let GateKind::Permission(p) = &g.kind else {
            panic!("expected a permission, got {:?}", g.kind)
        };
        assert_eq!(p.tool, "Edit");
        let d = p.diff.as_ref().expect("an Edit gate carries a diff");
        assert!(!d.lines.is_empty());
    }
    let screen = e.h.screen();
    assert_screen_has(&screen, "Permission · Edit", "edit card title");
    assert_screen_has(&screen, "-hello", "removed line");
    assert_screen_has(&screen, "+goodbye", "added line");
    e.h.key(KeyCode::Char('y'));
    e.wait_turns(1).await;
    assert_eq!(
        e.reply_body(&id),
        json!({"behavior":"allow","updatedInput": req["request"]["input"].clone()}),
        "allow echoes the CLI's (normalised) input"
    );
    assert_eq!(
        std::fs::read_to_string(e.cwd.join("notes.txt")).unwrap(),
        "goodbye\n"
    );
    let tr = model_result(&e, "toolu_edit_1");
    assert!(!tr.is_error, "{tr:?}");
    assert_eq!(e.model.fired_rules(), vec!["edit_first", "finish"]);

    // Write: a new file is an all-added diff.
    e.prompt("WRITE_NEW please");
    e.wait("the Write gate", |s| has_gate_kind(s, "permission"))
        .await;
    let req = e.can_use_tool("toolu_write_1");
    let id = request_id(&req);
    assert!(
        matches!(&gate(e.state(), &id).kind, GateKind::Permission(p) if p.tool == "Write" && p.diff.is_some()),
        "a Write gate carries a diff"
    );
    let screen = e.h.screen();
    assert_screen_has(&screen, "Permission · Write", "write card title");
    assert_screen_has(&screen, "+fresh file", "added line");
    e.h.key(KeyCode::Char('y'));
    e.wait_turns(2).await;
    assert_eq!(
        e.reply_body(&id),
        json!({"behavior":"allow","updatedInput": req["request"]["input"].clone()}),
        "allow echoes the Write input"
    );
    assert_eq!(
        std::fs::read_to_string(e.cwd.join("new.txt")).unwrap(),
        "fresh file\n"
    );

    e.quit().await;
    e.model.assert_no_unexpected();
    e.cleanup();
}
