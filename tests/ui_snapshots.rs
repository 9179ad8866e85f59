//! Screen snapshots of the UI over a `TestBackend`.
//!
//! States are built the way the app builds them (see `tests/support/scene.rs`): real Claude
//! stream-json lines go through the pure `Mapper`, its events through the reducer, and keys
//! through the reducer too. No process, no clock: every event carries a made-up, increasing
//! timestamp, so elapsed times are fixed.
//!
//! Update with `INSTA_UPDATE=always cargo test --test ui_snapshots`.

use serde_json::{Value, json};
use switchboard::core::input::{KeyCode, KeyModifiers};

use switchboard::core::msg::BackendEvent;

#[path = "support/scene.rs"]
mod scene;
use scene::*;

impl Scene {
    /// Snapshot the screen at 80x24 and 120x40.
    fn snap(&mut self, name: &str) {
        for (w, h) in [(80, 24), (120, 40)] {
            insta::assert_snapshot!(format!("{name}_{w}x{h}"), self.screen(w, h));
        }
    }
}

// ---- the demo conversation's gates

fn bash_touch_request() -> Value {
    control(
        "req-bash",
        json!({"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":"toolu_touch",
            "input":{"command":"touch demo-output.txt","description":"Create a scratch file for notes"},
            "title":"Claude wants to run touch demo-output.txt",
            "description":"Create a scratch file for notes",
            "decision_reason":"`touch demo-output.txt` writes to the working directory and needs your approval",
            "blocked_path":"/home/dev/shop/demo-output.txt",
            "permission_suggestions":[
                {"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"touch demo-output.txt"}],"behavior":"allow","destination":"localSettings"},
                {"type":"setMode","mode":"acceptEdits","destination":"session"}]}),
    )
}

/// `base` plus a Bash command waiting for permission.
fn bash_gate() -> Scene {
    let mut sc = base(Opening::Full);
    sc.line(assistant(
        "msg_2",
        None,
        json!([
            text("Before changing anything I'll create a scratch file for my notes."),
            tool_use("toolu_touch", "Bash", json!({"command":"touch demo-output.txt","description":"Create a scratch file for notes"})),
        ]),
    ))
    .line(bash_touch_request());
    sc
}

const Q1: &str = "Which modules should get audit logging?";
const Q2: &str = "How should the change roll out?";

fn questions() -> Value {
    json!({"questions":[
        {"question":Q1,"header":"Modules","multiSelect":true,"options":[
            {"label":"Auth","description":"Logins, sessions and tokens"},
            {"label":"Billing","description":"Payments, invoices and refunds"},
            {"label":"Search","description":"Queries and index updates"},
            {"label":"Admin","description":"Back-office user management"}]},
        {"question":Q2,"header":"Rollout","multiSelect":false,"options":[
            {"label":"Behind a flag","description":"Ship dark, enable per environment"},
            {"label":"Everywhere at once","description":"Enable for all traffic in one deploy"}]}]})
}

fn question_request() -> Value {
    control(
        "req-ask",
        json!({"subtype":"can_use_tool","tool_name":"AskUserQuestion","tool_use_id":"toolu_ask",
            "input":questions()}),
    )
}

fn question_gate() -> Scene {
    let mut sc = base(Opening::Full);
    sc.line(assistant(
        "msg_q",
        None,
        json!([
            text("Before I wire this in everywhere, two questions."),
            tool_use("toolu_ask", "AskUserQuestion", questions()),
        ]),
    ))
    .line(question_request());
    sc
}

// ---- main layout

#[test]
fn main_layout_fan_out() {
    let mut sc = base(Opening::Full);
    sc.line(
        json!({"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,
        "retry_delay_ms":600,"error_status":529,"error":"overloaded_error"}),
    );
    sc.line(assistant(
        "msg_2",
        None,
        json!([
            text("Before changing anything I'll create a scratch file for my notes."),
            tool_use("toolu_touch", "Bash", json!({"command":"touch demo-output.txt","description":"Create a scratch file for notes"})),
        ]),
    ))
    .line(bash_touch_request());
    sc.key(KeyCode::Char('y'));
    sc.line(tool_result(
        None,
        "toolu_touch",
        "(simulated) created demo-output.txt",
    ));
    fan_out(&mut sc, Helper::Reported);
    sc.line(edit_request());
    sc.key(KeyCode::Char('a'));
    sc.line(tool_result(Some("toolu_rv"), "toolu_edit", "The file src/auth.rs has been updated successfully."))
        .line(assistant("msg_rv2", Some("toolu_rv"), json!([text("Edit applied to src/auth.rs.")])))
        .line(tool_result(None, "toolu_rv", "Edit applied to src/auth.rs."))
        .line(json!({"type":"system","subtype":"compact_boundary","compact_metadata":
            {"trigger":"auto","pre_tokens":167_204,"post_tokens":21_388}}))
        .line(assistant(
            "msg_4",
            None,
            json!([
                text("I'll note the change in the changelog."),
                tool_use("toolu_cl", "Edit", json!({"file_path":"/home/dev/shop/CHANGELOG.md",
                    "old_string":"## Unreleased\n","new_string":"## Unreleased\n- Audit log on login\n"})),
            ]),
        ))
        .line(tool_result(None, "toolu_cl", "The file CHANGELOG.md has been updated successfully."))
        .line(assistant("msg_5", None, json!([text("Done: logins are now audited, and the explorer is still mapping callers.")])))
        .line(result_ok("Done: logins are now audited."));
    // The Edit gate showed the reviewer; go back to the root in the tree.
    sc.key(KeyCode::Esc).keys("h").key(KeyCode::Home);
    // The explorer keeps running; the turn is over.
    sc.snap("main_layout");
    // The nested helper's own transcript.
    sc.key(KeyCode::Down).key(KeyCode::Down);
    sc.snap("main_layout_helper_selected");
}

// ---- gates

#[test]
fn gate_permission_bash() {
    bash_gate().snap("gate_permission_bash");
}

#[test]
fn gate_permission_edit_diff() {
    let mut sc = base(Opening::Full);
    fan_out(&mut sc, Helper::Reported);
    sc.line(edit_request());
    sc.snap("gate_permission_edit_diff");
}

#[test]
fn gate_permission_default_to_no() {
    let mut sc = base(Opening::Full);
    sc.line(control(
        "req-rm",
        json!({"subtype":"can_use_tool","tool_name":"Bash","default_to_no":true,
            "suppress_always_allow_rule":true,"input":{"command":"rm -rf build/"}}),
    ));
    sc.key(KeyCode::Char('y'));
    sc.snap("gate_permission_default_to_no");
}

#[test]
fn gate_question_multiselect_toggled() {
    let mut sc = question_gate();
    sc.keys("1").key(KeyCode::Down);
    sc.snap("gate_question_page1_toggled");
}

#[test]
fn gate_question_second_page() {
    let mut sc = question_gate();
    sc.keys("14").key(KeyCode::Enter);
    sc.snap("gate_question_page2");
}

#[test]
fn gate_question_other_editor() {
    let mut sc = question_gate();
    sc.keys("1");
    for _ in 0..4 {
        sc.key(KeyCode::Down);
    }
    sc.key(KeyCode::Char(' ')).keys("Ops dashboards");
    sc.snap("gate_question_other_editor");
}

#[test]
fn gate_question_malformed() {
    let mut sc = base(Opening::Full);
    sc.line(control(
        "req-bad",
        json!({"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[]}}),
    ));
    sc.snap("gate_question_malformed");
}

#[test]
fn gate_deny_message_editor() {
    let mut sc = bash_gate();
    sc.keys("n").keys("use a temp dir instead");
    sc.snap("gate_deny_editor");
}

#[test]
fn gate_raw_reply_editor() {
    let mut sc = bash_gate();
    sc.keys("r");
    sc.snap("gate_raw_reply_editor");
}

#[test]
fn gate_raw_reply_rejected() {
    let mut sc = bash_gate();
    sc.keys("r");
    for _ in 0..200 {
        sc.key(KeyCode::Backspace);
    }
    sc.keys(r#"{"behavior":"maybe"}"#)
        .key_mod(KeyCode::Char('s'), KeyModifiers::CONTROL);
    sc.snap("gate_raw_reply_rejected");
}

#[test]
fn gate_dialog() {
    let mut sc = base(Opening::Full);
    sc.line(control(
        "req-dialog",
        json!({"subtype":"request_user_dialog","dialog_kind":"refusal_fallback_prompt","payload":{
            "title":"Use a fallback model?",
            "message":"claude-sonnet-4-5 declined to draft the audit-log retention policy. Retry that request with a fallback model?",
            "options":[{"value":"retry","label":"Retry with claude-opus-5"},{"value":"skip","label":"Skip the retention policy"}],
            "default":"skip"}}),
    ));
    sc.snap("gate_dialog");
}

fn ticket_request() -> Value {
    control(
        "req-form",
        json!({"subtype":"elicitation","mcp_server_name":"tickets",
            "message":"Create a ticket for the audit work?","mode":"form",
            "requested_schema":{"type":"object","properties":{
                "title":{"type":"string","title":"Title","description":"One line, shown in the board"},
                "priority":{"type":"string","enum":["low","medium","high"]},
                "estimate":{"type":"number","title":"Estimate (days)"},
                "notify":{"type":"boolean","title":"Notify the team"}},
            "required":["title"]}}),
    )
}

#[test]
fn gate_elicitation_form() {
    let mut sc = base(Opening::Full);
    sc.line(assistant(
        "msg_t",
        None,
        json!([
            text("I'll file a ticket so the rollout is tracked."),
            tool_use(
                "toolu_t",
                "mcp__tickets__create_ticket",
                json!({"summary":"Add audit logging","labels":["security","audit"]})
            ),
        ]),
    ))
    .line(ticket_request());
    sc.key(KeyCode::Char(' '))
        .keys("Audit logging for logins")
        .key(KeyCode::Enter);
    sc.keys("j  j");
    sc.snap("gate_elicitation_form");
    // Accepting with a bad number shows the error in the card.
    sc.keys("e")
        .keys("two")
        .key(KeyCode::Enter)
        .key(KeyCode::Enter);
    sc.snap("gate_elicitation_form_error");
}

#[test]
fn gate_elicitation_url() {
    let mut sc = base(Opening::Full);
    sc.line(control(
        "req-url",
        json!({"subtype":"elicitation","mcp_server_name":"github","mode":"url",
            "message":"Sign in to GitHub so the tickets server can open issues for you.",
            "url":"https://github.com/login/device?user_code=WDJB-MJHT","elicitation_id":"el-1"}),
    ));
    sc.snap("gate_elicitation_url");
}

#[test]
fn gate_breakpoint() {
    let mut sc = Scene::with_breaks(&["Grep"]);
    base_on(&mut sc, Opening::Full);
    fan_out(&mut sc, Helper::Reported);
    sc.line(assistant(
        "msg_gr3",
        Some("toolu_gr"),
        json!([tool_use(
            "toolu_grep2",
            "Grep",
            json!({"pattern":"audit::record","path":"src","output_mode":"content"})
        )]),
    ))
    .line(control(
        "req-hook",
        json!({"subtype":"hook_callback","callback_id":"sb-break-Grep","tool_use_id":"toolu_grep2",
            "input":{"hook_event_name":"PreToolUse","tool_name":"Grep",
                "tool_input":{"pattern":"audit::record","path":"src","output_mode":"content"},
                "session_id":"5f0c1d2e","cwd":"/home/dev/shop"}}),
    ));
    sc.snap("gate_breakpoint");
}

// ---- overlays and ends

#[test]
fn overlay_help() {
    let mut sc = base(Opening::Full);
    sc.key(KeyCode::Esc).keys("?");
    sc.snap("overlay_help");
}

#[test]
fn overlay_status() {
    let mut sc = base(Opening::Full);
    sc.event(BackendEvent::Recording(
        "/home/dev/.local/state/switchboard/recordings/session.jsonl".into(),
    ));
    sc.key(KeyCode::Esc).keys("s");
    sc.snap("overlay_status");
}

#[test]
fn overlay_quit_confirmation() {
    let mut sc = bash_gate();
    sc.line(question_request());
    sc.keys("q");
    sc.snap("overlay_quit_confirm");
}

#[test]
fn overlay_mode_picker() {
    let mut sc = base(Opening::Full);
    sc.key(KeyCode::Esc).keys("mj");
    sc.snap("overlay_mode_picker");
}

#[test]
fn agent_exited() {
    let mut sc = bash_gate();
    sc.raw("this is not json");
    sc.event(BackendEvent::Stderr("Error: API key expired".into()));
    sc.event(BackendEvent::Exited {
        code: Some(1),
        detail: "exit code 1".into(),
        stderr_tail: vec![
            "Error: API key expired".into(),
            "Run `claude login` to sign in again.".into(),
        ],
    });
    sc.snap("agent_exited");
}

// ---- the card shows the whole command

/// A 20-line Bash command whose last line is the destructive one: at 120x40 every line is on
/// the card; at 80x24 the card says how many lines are hidden (PgDn and `v` show them).
#[test]
fn gate_permission_long_multiline_command() {
    let mut sc = base(Opening::Full);
    let mut lines: Vec<String> = (1..20)
        .map(|i| format!("echo \"step {i} of the release checklist\""))
        .collect();
    lines.push("rm -rf \"$HOME\"".into());
    sc.line(control(
        "req-multi",
        json!({"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":"toolu_multi",
            "input":{"command":lines.join("\n"),"description":"Run the release checklist"}}),
    ));
    sc.snap("gate_permission_multiline");
    // Scrolled to the end at the small size (drawn there first, as the app would have), the
    // destructive line is in view.
    sc.screen(80, 24);
    for _ in 0..5 {
        sc.key(KeyCode::PageDown);
    }
    insta::assert_snapshot!(
        "gate_permission_multiline_scrolled_80x24",
        sc.screen(80, 24)
    );
    sc.keys("v");
    insta::assert_snapshot!("gate_permission_multiline_detail_80x40", sc.screen(80, 40));
}

/// A 300-character one-line command wraps; nothing is cut.
#[test]
fn gate_permission_300_char_command() {
    let mut sc = base(Opening::Full);
    let mut cmd = String::from("curl -fsSL https://downloads.example.com/releases/v2/install.sh");
    while cmd.len() < 280 {
        cmd.push_str(" --header 'X-Trace: abcdef0123456789'");
    }
    cmd.push_str(" | sh -s -- --yes");
    sc.line(control(
        "req-long",
        json!({"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":"toolu_long",
            "input":{"command":cmd}}),
    ));
    sc.snap("gate_permission_300_chars");
}

/// An ACP `terminal/create` whose argv holds spaces and quotes, with an environment: the
/// card shows the argv shell-quoted and every variable, the dangerous one marked.
#[test]
fn gate_acp_terminal_argv_quoted_with_env() {
    use switchboard::backend::acp::mapping::{AcpOptions, Mapper as AcpMapper};
    let mut sc = base(Opening::Full);
    let mut m = AcpMapper::new(AcpOptions {
        cwd: std::path::PathBuf::from("/home/dev/shop"),
        ..AcpOptions::default()
    });
    let _ = m.initialize_line();
    for line in [
        json!({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}),
        json!({"jsonrpc":"2.0","id":2,"result":{"sessionId":"sess_1"}}),
        json!({"jsonrpc":"2.0","id":7,"method":"terminal/create","params":{"sessionId":"sess_1",
            "command":"sh","args":["-c","grep -r \"it's done\" src; rm -rf ~","my script.sh"],
            "env":[{"name":"LD_PRELOAD","value":"/tmp/hook.so"},{"name":"RUST_LOG","value":"debug"}]}}),
    ] {
        for e in m.on_line(&line.to_string()).events {
            sc.event(e);
        }
    }
    sc.snap("gate_acp_terminal_argv");
}
