//! Screen snapshots of the UI over a `TestBackend`.
//!
//! States are built the way the app builds them: real Claude stream-json lines go through the
//! pure `Mapper`, its events through the reducer, and keys through the reducer too. No process,
//! no clock: every event carries a made-up, increasing timestamp, so elapsed times are fixed.
//!
//! Update with `INSTA_UPDATE=always cargo test --test ui_snapshots`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};

use switchboard::backend::claude::mapping::Mapper;
use switchboard::backend::claude::session::reply_check;
use switchboard::core::msg::{BackendEvent, Effect};
use switchboard::core::{Msg, State, update};
use switchboard::ui::theme::Theme;

/// A state under construction plus the mapper that feeds it, with a fake clock.
struct Scene {
    s: State,
    m: Mapper,
    t: u64,
}

const T0: u64 = 1_000_000;

impl Scene {
    fn new() -> Scene {
        Scene::with_breaks(&[])
    }

    fn with_breaks(breaks: &[&str]) -> Scene {
        let breaks: Vec<String> = breaks.iter().map(|b| b.to_string()).collect();
        let mut s = State::new("claude", "main", T0);
        s.reply_check = reply_check;
        s.settings.bell = false;
        let mut m = Mapper::new(&breaks);
        // Registers our initialize request, so its reply below is recognised.
        let _ = m.initialize_line();
        let mut sc = Scene { s, m, t: T0 };
        sc.event(BackendEvent::Started {
            program: "claude -p --verbose --output-format stream-json".into(),
            pid: Some(4242),
        });
        sc
    }

    fn event(&mut self, e: BackendEvent) {
        self.t += 250;
        let fx = update(
            &mut self.s,
            Msg::Backend {
                at_ms: self.t,
                event: e,
            },
        );
        self.effects(fx);
    }

    /// Feed one stdout line of the agent through the mapper into the reducer.
    fn line(&mut self, v: Value) -> &mut Scene {
        self.raw(&v.to_string())
    }

    fn raw(&mut self, line: &str) -> &mut Scene {
        let out = self.m.on_line(line);
        for e in out.events {
            self.event(e);
        }
        self
    }

    /// Perform effects like the app would, minus the process: commands go to the mapper.
    fn effects(&mut self, fx: Vec<Effect>) {
        for e in fx {
            if let Effect::Send(cmd) = e {
                let out = self.m.command(&cmd);
                for e in out.events {
                    self.event(e);
                }
            }
        }
    }

    fn key_mod(&mut self, code: KeyCode, mods: KeyModifiers) -> &mut Scene {
        let fx = update(&mut self.s, Msg::Key(KeyEvent::new(code, mods)));
        self.effects(fx);
        self
    }

    fn key(&mut self, code: KeyCode) -> &mut Scene {
        self.key_mod(code, KeyModifiers::NONE)
    }

    fn keys(&mut self, text: &str) -> &mut Scene {
        for c in text.chars() {
            self.key(KeyCode::Char(c));
        }
        self
    }

    fn screen(&self, w: u16, h: u16) -> String {
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        let theme = Theme::dark();
        term.draw(|f| switchboard::ui::render(&self.s, &theme, f))
            .unwrap();
        let buf = term.backend().buffer();
        let mut out = String::new();
        for y in 0..buf.area.height {
            let mut line = String::new();
            for x in 0..buf.area.width {
                line.push_str(buf[(x, y)].symbol());
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    /// Snapshot the screen at 80x24 and 120x40.
    fn snap(&mut self, name: &str) {
        // Elapsed times read `now_ms`: pin it a little after the last event.
        self.s.now_ms = self.t + 1_500;
        for (w, h) in [(80, 24), (120, 40)] {
            self.s.size = (w, h);
            insta::assert_snapshot!(format!("{name}_{w}x{h}"), self.screen(w, h));
        }
    }
}

// ---- wire lines

fn init() -> Value {
    json!({"type":"system","subtype":"init","session_id":"5f0c1d2e-7a8b-4c9d-8e1f-203a4b5c6d7e",
        "model":"claude-sonnet-4-5","permissionMode":"default","cwd":"/home/dev/shop",
        "claude_code_version":"2.1.332",
        "tools":["Agent","AskUserQuestion","Bash","Edit","Grep","Read","mcp__tickets__create_ticket"]})
}

fn init_reply() -> Value {
    json!({"type":"control_response","response":{"subtype":"success","request_id":"sb-1","response":{
        "commands":[{"name":"compact","description":"Clear history but keep a summary"},
                    {"name":"review","description":"Review a pull request"}],
        "agents":[{"name":"Explore","description":"Fast read-only search of a codebase"},
                  {"name":"code-reviewer","description":"Reviews changes for bugs"}],
        "models":[{"value":"default","displayName":"Default (recommended)"},
                  {"value":"opus","displayName":"Opus"}],
        "output_style":"default","pid":4242}}})
}

fn stream(parent: Option<&str>, event: Value) -> Value {
    json!({"type":"stream_event","event":event,"parent_tool_use_id":parent})
}

fn assistant(id: &str, parent: Option<&str>, blocks: Value) -> Value {
    json!({"type":"assistant","message":{"id":id,"role":"assistant","model":"claude-sonnet-4-5",
        "content":blocks},"parent_tool_use_id":parent})
}

fn text(t: &str) -> Value {
    json!({"type":"text","text":t})
}

fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type":"tool_use","id":id,"name":name,"input":input})
}

fn tool_result(parent: Option<&str>, id: &str, content: &str, is_error: bool) -> Value {
    json!({"type":"user","message":{"role":"user","content":[
        {"type":"tool_result","tool_use_id":id,"content":content,"is_error":is_error}]},
        "parent_tool_use_id":parent})
}

fn task_started(
    task: &str,
    tool_use_id: &str,
    parent_task: Option<&str>,
    desc: &str,
    kind: &str,
) -> Value {
    json!({"type":"system","subtype":"task_started","task_id":task,"tool_use_id":tool_use_id,
        "parent_task_id":parent_task,"description":desc,"subagent_type":kind})
}

fn task_progress(task: &str, tokens: u64, tools: u64, last: &str) -> Value {
    json!({"type":"system","subtype":"task_progress","task_id":task,
        "usage":{"total_tokens":tokens,"tool_uses":tools},"last_tool_name":last})
}

fn control(id: &str, request: Value) -> Value {
    json!({"type":"control_request","request_id":id,"request":request})
}

fn result_ok(text: &str) -> Value {
    json!({"type":"result","subtype":"success","is_error":false,"result":text,"duration_ms":48_210,
        "total_cost_usd":0.1834,"usage":{"input_tokens":18_204,"output_tokens":2_311,
        "cache_read_input_tokens":40_000,"cache_creation_input_tokens":0}})
}

const THINKING: &str = "The user wants audit logging on login. I should find where authentication happens before touching anything.";

/// A session after the first steps: init, a prompt, streamed thinking and text, a command.
fn base() -> Scene {
    let mut sc = Scene::new();
    base_on(&mut sc);
    sc
}

fn base_on(sc: &mut Scene) {
    sc.line(init_reply()).line(init());
    sc.keys("Add audit logging to the login flow")
        .key(KeyCode::Enter);
    sc.line(stream(None, json!({"type":"message_start","message":{"id":"msg_1"}})))
        .line(stream(None, json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}})));
    for chunk in THINKING.split_inclusive(' ').collect::<Vec<_>>().chunks(6) {
        sc.line(stream(
            None,
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":chunk.concat()}}),
        ));
    }
    sc.line(stream(None, json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}})))
        .line(stream(None, json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"I'll look around "}})))
        .line(stream(None, json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"the repository first."}})))
        .line(assistant("msg_1", None, json!([
            {"type":"thinking","thinking":THINKING,"signature":"sig"},
            text("I'll look around the repository first."),
            tool_use("toolu_ls", "Bash", json!({"command":"ls src","description":"List source files"})),
        ])))
        .line(stream(None, json!({"type":"message_stop"})))
        .line(tool_result(None, "toolu_ls", "admin.rs\nauth.rs\nmain.rs\nsession.rs", false));
}

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
    let mut sc = base();
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

const EDIT_OLD: &str = "    let session = Session::start(&user);\n    Ok(session)";
const EDIT_NEW: &str = "    let session = Session::start(&user);\n    audit::record(\"login\", &user.name);\n    Ok(session)";

fn edit_input() -> Value {
    json!({"file_path":"/home/dev/shop/src/auth.rs","old_string":EDIT_OLD,"new_string":EDIT_NEW})
}

/// A fan-out: an explorer that dispatches a nested helper, and a reviewer about to edit.
fn fan_out(sc: &mut Scene) {
    sc.line(assistant(
        "msg_3",
        None,
        json!([
            text("Now I'll split the work: an explorer maps the auth code while a reviewer drafts the change."),
            tool_use("toolu_ex", "Agent", json!({"description":"Map the auth code","subagent_type":"Explore","prompt":"Find where authentication happens."})),
            tool_use("toolu_rv", "Agent", json!({"description":"Draft the audit-log change","subagent_type":"code-reviewer","prompt":"Propose the audit call."})),
        ]),
    ))
    .line(task_started("task_ex", "toolu_ex", None, "Map the auth code", "Explore"))
    .line(task_started("task_rv", "toolu_rv", None, "Draft the audit-log change", "code-reviewer"))
    .line(assistant(
        "msg_ex1",
        Some("toolu_ex"),
        json!([
            text("A helper can run the search while I read the module layout."),
            tool_use("toolu_gr", "Agent", json!({"description":"Grep for authenticate","subagent_type":"general-purpose","prompt":"Search src/."})),
        ]),
    ))
    .line(task_started("task_gr", "toolu_gr", Some("task_ex"), "Grep for authenticate", "general-purpose"))
    .line(assistant(
        "msg_gr1",
        Some("toolu_gr"),
        json!([tool_use("toolu_grep", "Grep", json!({"pattern":"fn authenticate","path":"src"}))]),
    ))
    .line(tool_result(Some("toolu_gr"), "toolu_grep", "src/auth.rs:7:pub fn authenticate(store: &UserStore, name: &str, password: &str)", false))
    .line(assistant("msg_gr2", Some("toolu_gr"), json!([text("Found `fn authenticate` at src/auth.rs:7.")])))
    .line(task_progress("task_gr", 3_400, 1, "Grep"))
    .line(tool_result(Some("toolu_ex"), "toolu_gr", "Found `fn authenticate` at src/auth.rs:7.", false))
    .line(task_progress("task_ex", 12_800, 2, "Agent"))
    .line(assistant(
        "msg_rv1",
        Some("toolu_rv"),
        json!([
            text("I'll add the audit call right after the session starts."),
            tool_use("toolu_edit", "Edit", edit_input()),
        ]),
    ))
    .line(task_progress("task_rv", 8_100, 2, "Edit"));
}

fn edit_request() -> Value {
    control(
        "req-edit",
        json!({"subtype":"can_use_tool","tool_name":"Edit","tool_use_id":"toolu_edit","agent_id":"task_rv",
            "input":edit_input(),
            "title":"Claude wants to edit src/auth.rs",
            "description":"Add an audit log call after a successful login",
            "blocked_path":"/home/dev/shop/src/auth.rs",
            "permission_suggestions":[{"type":"setMode","mode":"acceptEdits","destination":"session"}]}),
    )
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
    let mut sc = base();
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
    let mut sc = base();
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
        false,
    ));
    fan_out(&mut sc);
    sc.line(edit_request());
    sc.key(KeyCode::Char('a'));
    sc.line(tool_result(Some("toolu_rv"), "toolu_edit", "The file src/auth.rs has been updated successfully.", false))
        .line(assistant("msg_rv2", Some("toolu_rv"), json!([text("Edit applied to src/auth.rs.")])))
        .line(tool_result(None, "toolu_rv", "Edit applied to src/auth.rs.", false))
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
        .line(tool_result(None, "toolu_cl", "The file CHANGELOG.md has been updated successfully.", false))
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
    let mut sc = base();
    fan_out(&mut sc);
    sc.line(edit_request());
    sc.snap("gate_permission_edit_diff");
}

#[test]
fn gate_permission_default_to_no() {
    let mut sc = base();
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
    let mut sc = base();
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
    let mut sc = base();
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
    let mut sc = base();
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
    let mut sc = base();
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
    base_on(&mut sc);
    fan_out(&mut sc);
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
    let mut sc = base();
    sc.key(KeyCode::Esc).keys("?");
    sc.snap("overlay_help");
}

#[test]
fn overlay_status() {
    let mut sc = base();
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
    let mut sc = base();
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
