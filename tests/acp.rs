//! The ACP backend: Checkfu vectors, public recordings, UI snapshots, a scripted Checkfu agent
//! (tests/support/checkfu_agent.py) and the real claude-agent-acp against the fake model.
//!
//! Update snapshots with `INSTA_UPDATE=always cargo test --test acp`.

#[path = "support/common.rs"]
mod common;
#[path = "support/fake_model.rs"]
mod fake_model;

use std::path::{Path, PathBuf};
use std::time::Duration;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};
use switchboard::core::input::{KeyCode, KeyEvent, KeyModifiers};

use switchboard::app::headless::Headless;
use switchboard::backend::acp::mapping::{AcpOptions, Action, Mapper};
use switchboard::backend::acp::session::{AcpBackend, AcpConfig, reply_check};
use switchboard::core::gate::GateKind;
use switchboard::core::msg::{BackendEvent, Command, Effect, TurnState};
use switchboard::core::state::{Focus, State};
use switchboard::core::transcript::{ItemKind, Level};
use switchboard::core::tree::NodeStatus;
use switchboard::core::{Msg, update};
use switchboard::schema_acp;
use switchboard::ui::theme::Theme;

use common::{
    CLAUDE_CLI, checkfu_config, manifest, python_or_skip, require_or_skip, shared_dir_or_skip,
};
use fake_model::{CLAUDE_ENV_REMOVE, FakeModel, Scenario, claude_bin, claude_env, temp_dir};

const STEP: Duration = Duration::from_secs(30);

// ---- Checkfu vectors -----------------------------------------------------------------------

fn vectors() -> Value {
    let text = std::fs::read_to_string(manifest("fixtures/acp/checkfu-v1-vectors.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn vector(name: &str) -> Value {
    vectors()["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("vector {name} missing"))["wire"]
        .clone()
}

#[test]
fn checkfu_vector_file_holds_all_13_vectors_and_validates() {
    let file = vectors();
    schema_acp::validate_vector_file(&file).expect("vector file matches the bundled schema");
    let names: Vec<&str> = file["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    for n in schema_acp::VECTOR_NAMES {
        assert_eq!(
            names.iter().filter(|x| **x == n).count(),
            1,
            "vector {n} must be present exactly once"
        );
    }
    assert_eq!(names.len(), 13);
    // The bundled copy is the shared contract, verbatim.
    let shared = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/spec/checkfu-acp-v1-extension.schema.json");
    if let Ok(t) = std::fs::read_to_string(&shared) {
        assert_eq!(
            t,
            schema_acp::SCHEMA_SOURCE,
            "schema/ copy differs from the shared spec"
        );
    }
}

fn line_value(line: &str) -> Value {
    serde_json::from_str(line).expect("our frames are JSON")
}

/// Our own outbound frames, compared as raw JSON values against the vector kinds.
#[test]
fn outbound_checkfu_frames_validate_as_their_vectors() {
    let init = {
        let mut v = vector("initialize.full-declaration");
        v["id"] = json!(1);
        v.to_string()
    };
    for (tools, schema, kind) in [
        (
            Some(vec!["bash".to_string(), "read".into(), "edit".into()]),
            None,
            "session.new.builtin-tools",
        ),
        (
            None,
            Some(
                json!({"type":"object","properties":{"verdict":{"type":"string"}},"required":["verdict"]}),
            ),
            "session.new.output-schema",
        ),
    ] {
        let mut m = Mapper::new(AcpOptions {
            cwd: PathBuf::from("/path/to/project"),
            builtin_tools: tools,
            output_schema: schema,
            ..AcpOptions::default()
        });
        let first = m.initialize_line();
        assert_eq!(line_value(&first)["method"], "initialize");
        let out = m.on_line(&init);
        assert_eq!(out.lines.len(), 1, "initialize result → session/new");
        let new = line_value(&out.lines[0]);
        assert_eq!(new["method"], "session/new");
        schema_acp::validate_frame(kind, &new).unwrap();
        assert_eq!(schema_acp::outbound_kind(&new), Some(kind));
    }
    // Steer and interrupt, from a running turn.
    let mut m = Mapper::new(AcpOptions {
        cwd: PathBuf::from("/p"),
        ..AcpOptions::default()
    });
    m.initialize_line();
    m.on_line(&init);
    m.on_line(r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"sess_1"}}"#);
    let p = m.command(&Command::Prompt("start".into()));
    assert_eq!(line_value(&p.lines[0])["method"], "session/prompt");
    let steer = m.command(&Command::Prompt("Skip the docs.".into()));
    let steer = line_value(&steer.lines[0]);
    schema_acp::validate_frame("extension.steer.request", &steer).unwrap();
    let int = m.command(&Command::Interrupt);
    let int = line_value(&int.lines[0]);
    schema_acp::validate_frame("extension.interrupt.request", &int).unwrap();
    // The agent's answers (the vectors, re-numbered to our ids) are understood.
    let mut sr = vector("extension.steer.response");
    sr["id"] = steer["id"].clone();
    let out = m.on_line(&sr.to_string());
    assert!(format!("{:?}", out.events).contains("queued by the agent"));
    let mut ir = vector("extension.interrupt.response");
    ir["id"] = int["id"].clone();
    let out = m.on_line(&ir.to_string());
    assert!(format!("{:?}", out.events).contains("draining"));
    let mut tt = vector("session.prompt.turn-telemetry");
    tt["id"] = json!(3);
    let out = m.on_line(&tt.to_string());
    let dbg = format!("{:?}", out.events);
    assert!(
        dbg.contains("turn telemetry") && dbg.contains("4 model calls"),
        "{dbg}"
    );
    // Sub-agent phases: started, activity, completed (canceled → cancelled).
    let mut events = Vec::new();
    for n in [
        "session.update.subagent-started",
        "session.update.subagent-activity",
        "session.update.subagent-completed",
    ] {
        events.extend(m.on_line(&vector(n).to_string()).events);
    }
    assert!(events.iter().any(|e| matches!(e,
        BackendEvent::NodeOpen { key, patch, .. } if key == "sa:sa-1" && patch.name.as_deref() == Some("reviewer"))));
    assert!(events.iter().any(|e| matches!(e,
        BackendEvent::NodeUpdate { key, patch } if key == "sa:sa-1" && patch.status == Some(NodeStatus::Killed))));
    assert!(format!("{events:?}").contains("reviewer closed: cancelled"));
}

// ---- A state fed by the pure mapper (recordings, snapshots) -----------------------------------

struct Scene {
    s: State,
    m: Mapper,
    t: u64,
    /// Lines the mapper wrote back (answers, requests).
    sent: Vec<Value>,
    actions: Vec<Action>,
}

const T0: u64 = 2_000_000;

impl Scene {
    fn new(cwd: &str) -> Scene {
        let mut s = State::new(switchboard::core::BackendKind::Acp, "agent", T0);
        s.reply_check = reply_check;
        s.settings.bell = false;
        let mut m = Mapper::new(AcpOptions {
            cwd: PathBuf::from(cwd),
            ..AcpOptions::default()
        });
        let first = m.initialize_line();
        let mut sc = Scene {
            s,
            m,
            t: T0,
            sent: vec![line_value(&first)],
            actions: Vec::new(),
        };
        sc.event(BackendEvent::Started {
            program: "agent --acp".into(),
            pid: Some(4242),
        });
        sc
    }

    fn event(&mut self, e: BackendEvent) {
        self.t += 250;
        self.m.now = self.t;
        let fx = update(
            &mut self.s,
            Msg::Backend {
                session: switchboard::core::state::SessionId::FIRST,
                at_ms: self.t,
                event: e,
            },
        );
        self.effects(fx);
    }

    fn absorb(&mut self, out: switchboard::backend::acp::mapping::Out) {
        self.sent.extend(out.lines.iter().map(|l| line_value(l)));
        self.actions.extend(out.actions);
        for e in out.events {
            self.event(e);
        }
    }

    fn raw(&mut self, line: &str) -> &mut Scene {
        let out = self.m.on_line(line);
        self.absorb(out);
        self
    }

    fn line(&mut self, v: Value) -> &mut Scene {
        self.raw(&v.to_string())
    }

    fn effects(&mut self, fx: Vec<Effect>) {
        for e in fx {
            if let Effect::Send(_, cmd) = e {
                let out = self.m.command(&cmd);
                self.absorb(out);
            }
        }
    }

    fn key(&mut self, code: KeyCode) -> &mut Scene {
        let fx = update(
            &mut self.s,
            Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)),
        );
        self.effects(fx);
        self
    }

    fn type_prompt(&mut self, text: &str) -> &mut Scene {
        for c in text.chars() {
            self.key(KeyCode::Char(c));
        }
        self.key(KeyCode::Enter)
    }

    fn screen(&mut self, w: u16, h: u16) -> String {
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        let theme = Theme::dark();
        switchboard::ui::draw(&mut term, &mut self.s, &theme).unwrap();
        switchboard::ui::buffer_text(term.backend().buffer())
    }

    fn snap(&mut self, name: &str) {
        self.s.now_ms = self.t + 1_500;
        self.s.size = (100, 32);
        insta::assert_snapshot!(name, self.screen(100, 32));
    }
}

fn root_items(s: &State) -> Vec<&ItemKind> {
    s.tree.nodes[0]
        .transcript
        .items
        .iter()
        .map(|i| &i.kind)
        .collect()
}

fn transcript_text(s: &State) -> String {
    let mut out = String::new();
    for n in &s.tree.nodes {
        for i in &n.transcript.items {
            out.push_str(&format!("{:?}\n", i.kind));
        }
    }
    out
}

// ---- Recordings ------------------------------------------------------------------------------

fn recordings_dir() -> Option<PathBuf> {
    shared_dir_or_skip("the shared ACP recordings", "recordings/acp")
}

/// Replay agent → client lines like a client would: prompt once the session is ready and after
/// each turn, answer each gate with its first key.
fn replay(path: &Path) -> Scene {
    let text = std::fs::read_to_string(path).unwrap();
    let mut sc = Scene::new("/home/dev/project");
    for line in text.lines() {
        let v: Option<Value> = serde_json::from_str(line).ok();
        let is_response = v
            .as_ref()
            .is_some_and(|v| v.get("method").is_none() && v.get("result").is_some());
        let id = v.as_ref().and_then(|v| v.get("id")).and_then(Value::as_u64);
        if is_response && id.unwrap_or(0) >= 3 && sc.m.ready() && !sc.m.turn_running() {
            sc.key(KeyCode::Esc);
            sc.s.focus = Focus::Prompt;
            sc.type_prompt("hello");
        }
        sc.raw(line);
        if sc.s.active().is_some() {
            sc.key(KeyCode::Char('y'));
        }
    }
    sc
}

#[test]
fn recordings_parse_and_the_malformed_one_yields_protocol_rows() {
    let Some(dir) = recordings_dir() else {
        return;
    };
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        seen += 1;
        let sc = replay(&path);
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let items = root_items(&sc.s);
        let envelope_errors = items
            .iter()
            .filter(|k| matches!(k, ItemKind::Protocol { level: Level::Error, text } if text.contains("without a JSON-RPC envelope")))
            .count();
        let turns = items
            .iter()
            .filter(|k| matches!(k, ItemKind::TurnResult { .. }))
            .count();
        assert!(turns >= 1, "{name}: the session went on to a turn result");
        if name.contains("MALFORMED") {
            assert_eq!(envelope_errors, 4, "{name}: 4 lines lack the envelope");
            assert!(sc.m.ready(), "{name}: the session continued");
        } else {
            assert_eq!(envelope_errors, 0, "{name}");
        }
        if name.contains("toad") {
            // Agent ids 0.. collide with ours; each request got exactly one answer.
            let answered: Vec<&Value> = sc
                .sent
                .iter()
                .filter(|v| v.get("method").is_none())
                .collect();
            assert!(
                answered
                    .iter()
                    .any(|v| v["result"]["outcome"]["outcome"] == "selected"),
                "{name}: the permission was answered: {answered:?}"
            );
            assert!(items.iter().any(|k| matches!(k, ItemKind::ToolCall { .. })));
        }
        if name.contains("ansi") {
            let t = transcript_text(&sc.s);
            assert!(
                !t.contains('\u{1b}'),
                "{name}: ANSI escapes never reach the screen"
            );
        }
        if name.contains("terminal") {
            assert!(items.iter().any(
                |k| matches!(k, ItemKind::ToolCall { id, .. } if id == "toolu_01WDMGVEdrar7i5j8gAebV8Q")
            ));
            assert!(
                sc.actions
                    .iter()
                    .any(|a| matches!(a, Action::CreateTerminal { .. }))
            );
            assert!(
                sc.actions
                    .iter()
                    .any(|a| matches!(a, Action::WaitForExit { .. }))
            );
            assert!(
                sc.actions
                    .iter()
                    .any(|a| matches!(a, Action::ReleaseTerminal { .. }))
            );
            assert!(!sc.s.session.capabilities.commands.is_empty());
            assert_eq!(sc.s.session.capabilities.modes.len(), 4);
        }
        if name.contains("codex_streaming_434") {
            let texts: Vec<&str> = items
                .iter()
                .filter_map(|k| match k {
                    ItemKind::Assistant { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(
                texts,
                vec!["Hello!"],
                "the repeated whole message is dropped"
            );
            assert_eq!(sc.s.session.permission_mode.as_deref(), Some("gpt-5-codex"));
        }
    }
    assert_eq!(seen, 4);
}

// ---- Snapshots -------------------------------------------------------------------------------

fn ready_scene() -> Scene {
    let mut sc = Scene::new("/home/dev/shop");
    sc.line(json!({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,
        "agentCapabilities":{"loadSession":true},
        "agentInfo":{"name":"example-agent","title":"Example Agent","version":"1.4.0"},
        "_meta":{"checkfu.capabilities":{"subagents":"observed","steer":"native","interrupt":"cooperative"}}}}));
    sc.line(json!({"jsonrpc":"2.0","id":2,"result":{"sessionId":"sess_1","modes":{"currentModeId":"default",
        "availableModes":[{"id":"default","name":"Default"},{"id":"plan","name":"Plan"}]}}}));
    sc
}

fn upd(u: Value) -> Value {
    json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":u}})
}

#[test]
fn acp_snapshot_permission_gate_with_diff() {
    let mut sc = ready_scene();
    sc.type_prompt("Uppercase beta in notes.txt");
    sc.line(upd(json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"I will edit the file."}})));
    sc.line(upd(json!({"sessionUpdate":"tool_call","toolCallId":"call_1","title":"Edit notes.txt",
        "kind":"edit","status":"pending","locations":[{"path":"/home/dev/shop/notes.txt","line":2}],
        "content":[{"type":"diff","path":"/home/dev/shop/notes.txt","oldText":"alpha\nbeta\ngamma\n","newText":"alpha\nBETA\ngamma\ndelta\n"}]})));
    sc.line(json!({"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"sess_1",
        "toolCall":{"toolCallId":"call_1"},
        "options":[{"optionId":"ok","name":"Allow","kind":"allow_once"},
                   {"optionId":"always","name":"Always allow","kind":"allow_always"},
                   {"optionId":"no","name":"Reject","kind":"reject_once"},
                   {"optionId":"never","name":"Never","kind":"reject_always"}]}}));
    let gate = sc.s.active().expect("permission gate open");
    let GateKind::Permission(p) = &gate.kind else {
        panic!("not a permission")
    };
    assert!(p.diff.is_some(), "the tool call's diff is shown");
    let keys: Vec<char> = p.choices().iter().map(|c| p.choice_key(*c)).collect();
    assert_eq!(keys, vec!['y', 'a', 'n', 'R']);
    sc.snap("acp_permission_diff");
    // R = reject_always, by kind.
    sc.key(KeyCode::Char('R'));
    let last = sc.sent.last().unwrap();
    assert_eq!(last["id"], 0);
    assert_eq!(
        last["result"],
        json!({"outcome":{"outcome":"selected","optionId":"never"}})
    );
}

#[test]
fn acp_snapshot_plan_and_subagents() {
    let mut sc = ready_scene();
    sc.type_prompt("Review and test");
    sc.line(upd(
        json!({"sessionUpdate":"session_info_update","title":"Release review"}),
    ));
    sc.line(upd(json!({"sessionUpdate":"session_info_update","updatedAt":"2026-12-01T10:00:00Z",
        "_meta":{"checkfu.subagent":{"phase":"started","subagent":"sa-1","name":"reviewer","description":"Reviews the diff"}}})));
    sc.line(upd(json!({"sessionUpdate":"session_info_update","updatedAt":"2026-12-01T10:00:01Z",
        "_meta":{"checkfu.subagent":{"phase":"started","subagent":"sa-2","name":"tester","description":"Runs the tests"}}})));
    sc.line(upd(json!({"sessionUpdate":"plan","entries":[
        {"content":"Review the diff","priority":"high","status":"completed"},
        {"content":"Run the tests","priority":"medium","status":"in_progress"},
        {"content":"Write the summary","priority":"low","status":"pending"}]})));
    sc.line(upd(json!({"sessionUpdate":"session_info_update","updatedAt":"2026-12-01T10:00:02Z",
        "_meta":{"checkfu.subagent":{"phase":"completed","subagent":"sa-1","disposition":"completed"}}})));
    sc.line(upd(json!({"sessionUpdate":"usage_update","used":null,"size":200000,"cost":{"amount":0.0123,"currency":"USD"}})));
    assert!(
        root_items(&sc.s)
            .iter()
            .any(|k| matches!(k, ItemKind::Plan { entries } if entries.len() == 3))
    );
    assert!(
        sc.s.session
            .info
            .iter()
            .any(|(k, v)| k == "title" && v == "Release review")
    );
    sc.snap("acp_plan");
}

#[test]
fn acp_snapshot_terminal_tool_call() {
    let mut sc = ready_scene();
    sc.type_prompt("Run the tests");
    sc.line(upd(
        json!({"sessionUpdate":"tool_call","toolCallId":"call_t","title":"Run cargo test",
        "kind":"execute","status":"pending","rawInput":{"command":"cargo test"}}),
    ));
    sc.line(
        json!({"jsonrpc":"2.0","id":0,"method":"terminal/create","params":{"sessionId":"sess_1",
        "command":"cargo","args":["test"],"outputByteLimit":4096}}),
    );
    let gate = sc.s.active().expect("terminal/create is a gate");
    let GateKind::Permission(p) = &gate.kind else {
        panic!()
    };
    assert_eq!(p.summary, "cargo test", "the gate shows the command");
    sc.key(KeyCode::Char('y'));
    let Some(Action::CreateTerminal { id, spec }) = sc.actions.pop() else {
        panic!("allowed terminal/create becomes a CreateTerminal action")
    };
    assert_eq!(spec.cwd, PathBuf::from("/home/dev/shop"));
    let out = sc.m.terminal_created(&id, "term-1", &spec.command_line());
    sc.absorb(out);
    assert_eq!(sc.sent.last().unwrap()["result"]["terminalId"], "term-1");
    sc.line(upd(
        json!({"sessionUpdate":"tool_call_update","toolCallId":"call_t","status":"in_progress",
        "content":[{"type":"terminal","terminalId":"term-1"}]}),
    ));
    let out = sc.m.terminal_update(
        "term-1",
        "running 3 tests\ntest a ... ok\ntest b ... ok\ntest c ... ok\n\ntest result: ok. 3 passed\n",
        false,
        Some("exit 0".into()),
    );
    sc.absorb(out);
    sc.line(upd(
        json!({"sessionUpdate":"tool_call_update","toolCallId":"call_t","status":"completed"}),
    ));
    sc.snap("acp_terminal");
}

#[test]
fn fs_paths_outside_cwd_are_refused_and_writes_are_gated() {
    let mut sc = ready_scene();
    sc.line(json!({"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{"sessionId":"sess_1","path":"/etc/passwd"}}));
    assert_eq!(sc.sent.last().unwrap()["error"]["code"], -32000);
    sc.line(json!({"jsonrpc":"2.0","id":8,"method":"fs/write_text_file","params":{"sessionId":"sess_1","path":"/home/dev/shop/../x","content":"x"}}));
    assert_eq!(sc.sent.last().unwrap()["id"], 8);
    assert_eq!(sc.sent.last().unwrap()["error"]["code"], -32000);
    sc.line(json!({"jsonrpc":"2.0","id":9,"method":"fs/write_text_file","params":{"sessionId":"sess_1","path":"/home/dev/shop/a.txt","content":"new\n"}}));
    let Some(Action::PrepareWrite { id, path, content }) = sc.actions.pop() else {
        panic!()
    };
    let out = sc.m.write_gate(id, path, content, Some("old\n".into()));
    sc.absorb(out);
    let GateKind::Permission(p) = &sc.s.active().unwrap().kind else {
        panic!()
    };
    assert!(
        p.diff
            .as_ref()
            .is_some_and(|d| d.added == 1 && d.removed == 1)
    );
    sc.key(KeyCode::Char('n'));
    assert_eq!(sc.sent.last().unwrap()["id"], 9);
    assert_eq!(sc.sent.last().unwrap()["error"]["code"], -32000);
}

/// A write to a path with newlines in it is named on one line, the newlines shown (`^J`), in
/// the card's title and diff header and in the audit row (issue 21, item 8).
#[test]
fn a_write_names_a_path_with_newlines_exactly() {
    let mut sc = ready_scene();
    sc.line(json!({"jsonrpc":"2.0","id":9,"method":"fs/write_text_file","params":{"sessionId":"sess_1","path":"/home/dev/shop/evil\n\nnotes.txt","content":"new\n"}}));
    let Some(Action::PrepareWrite { id, path, content }) = sc.actions.pop() else {
        panic!("{:?}", sc.sent.last())
    };
    let out = sc.m.write_gate(id, path, content, None);
    sc.absorb(out);
    let shown = "/home/dev/shop/evil^J^Jnotes.txt";
    let GateKind::Permission(p) = &sc.s.active().unwrap().kind else {
        panic!()
    };
    assert!(
        p.title
            .as_deref()
            .unwrap()
            .starts_with(&format!("create {shown} ("))
    );
    let screen = sc.screen(120, 40);
    assert!(screen.contains(&format!("--- {shown}")), "{screen}");
    sc.key(KeyCode::Char('y'));
    let audits = common::audits(&sc.s, 0);
    assert!(
        audits.iter().any(|a| a.contains(&format!("`{shown}`"))),
        "{audits:?}"
    );
}

const NOTES: &str = "/home/dev/shop/notes.txt";
const BASE: &str = "alpha\nbeta\ngamma\n";

/// A permission for an edit of notes.txt (`beta` → `BETA`, a snippet diff) answered with `key`;
/// returns the deferred answer's gate once the file (as `base`) is handed back.
fn ask_edit(sc: &mut Scene, id: u64, key: char, base: Option<&str>) {
    let call = format!("call_{id}");
    sc.line(upd(
        json!({"sessionUpdate":"tool_call","toolCallId":call,"title":"Edit notes.txt",
        "kind":"edit","status":"pending","locations":[{"path":NOTES}],
        "content":[{"type":"diff","path":NOTES,"oldText":"beta\n","newText":"BETA\n"}]}),
    ));
    sc.line(json!({"jsonrpc":"2.0","id":id,"method":"session/request_permission","params":{"sessionId":"sess_1",
        "toolCall":{"toolCallId":call},
        "options":[{"optionId":"ok","name":"Allow","kind":"allow_once"},
                   {"optionId":"no","name":"Reject","kind":"reject_once"}]}}));
    assert!(sc.s.active().is_some(), "the edit is gated");
    let sent = sc.sent.len();
    sc.key(KeyCode::Char(key));
    if key != 'y' {
        assert_eq!(sc.sent.last().unwrap()["id"], id);
        return;
    }
    // An allowed edit is answered only after its file was read (the agent's write may follow
    // at once): the answer travels in the action.
    assert_eq!(sc.sent.len(), sent, "no answer before the file is read");
    let Some(Action::AnswerAfterSnapshot { line, gate, paths }) = sc.actions.pop() else {
        panic!("{:?}", sc.actions)
    };
    assert_eq!(paths, vec![PathBuf::from(NOTES)]);
    sc.m.approved_files(
        &gate,
        vec![(PathBuf::from(NOTES), base.map(str::to_string))],
    );
    sc.sent.push(line_value(&line));
    assert_eq!(
        sc.sent.last().unwrap()["result"]["outcome"]["optionId"],
        "ok"
    );
}

/// The agent writes notes.txt (found on disk as `on_disk`): true when it was gated.
fn write_notes(sc: &mut Scene, id: u64, content: &str, on_disk: Option<&str>) -> bool {
    sc.line(json!({"jsonrpc":"2.0","id":id,"method":"fs/write_text_file","params":{"sessionId":"sess_1","path":NOTES,"content":content}}));
    let Some(Action::PrepareWrite {
        id: rid,
        path,
        content,
    }) = sc.actions.pop()
    else {
        panic!("{:?}", sc.actions)
    };
    let out =
        sc.m.write_gate(rid, path, content, on_disk.map(str::to_string));
    sc.absorb(out);
    if sc.s.active().is_some() {
        sc.key(KeyCode::Char('n'));
        assert_eq!(sc.sent.last().unwrap()["id"], id);
        assert_eq!(sc.sent.last().unwrap()["error"]["code"], -32000);
        return true;
    }
    false
}

/// End the running turn and start the next one.
fn next_turn(sc: &mut Scene) {
    let id = sc
        .sent
        .iter()
        .rev()
        .find(|v| v["method"] == "session/prompt")
        .unwrap()["id"]
        .clone();
    sc.line(json!({"jsonrpc":"2.0","id":id,"result":{"stopReason":"end_turn"}}));
    let out = sc.m.command(&Command::Prompt("next".into()));
    sc.absorb(out);
    assert!(sc.m.turn_running());
}

#[test]
fn an_approved_edit_is_written_once_without_a_second_gate() {
    let mut sc = ready_scene();
    sc.type_prompt("Uppercase beta");
    ask_edit(&mut sc, 0, 'y', Some(BASE));
    // Exactly the approved change, applied to the file as it was: written, no gate, audited.
    let want = "alpha\nBETA\ngamma\n";
    assert!(!write_notes(&mut sc, 10, want, Some(BASE)));
    let n = sc.actions.len();
    assert!(
        matches!(&sc.actions[n - 1], Action::WriteFile { id, content, base, .. }
            if *id == json!(10) && content == want
                && *base == Some(switchboard::contain::digest(BASE.as_bytes()))),
        "{:?}",
        sc.actions
    );
    assert!(
        matches!(&sc.actions[n - 2], Action::Note(t) if t.contains("covered by the approval of acp:0"))
    );
    assert!(root_items(&sc.s).iter().any(|k| matches!(k,
        ItemKind::Audit { text, .. } if text.contains("covered by the approval of acp:0") && text.contains("notes.txt"))));
    // The approval is used up: the same write again is gated.
    assert!(write_notes(&mut sc, 11, want, Some(BASE)));

    // Anything but the approved change is gated: other content, a file that changed since.
    // (Each case in a turn of its own: an approval lives until its turn ends.)
    next_turn(&mut sc);
    ask_edit(&mut sc, 1, 'y', Some(BASE));
    assert!(write_notes(
        &mut sc,
        12,
        "alpha\nBETA\ngamma\nrm -rf\n",
        Some(BASE)
    ));
    // A write that did not match used nothing up: the approved change itself still goes.
    assert!(!write_notes(&mut sc, 13, want, Some(BASE)));
    next_turn(&mut sc);
    ask_edit(&mut sc, 2, 'y', Some(BASE));
    assert!(write_notes(
        &mut sc,
        14,
        want,
        Some("alpha\nbeta\ngamma\nnew\n")
    ));
    // A snippet that occurs twice cannot say where it applies.
    next_turn(&mut sc);
    ask_edit(&mut sc, 3, 'y', Some("beta\nbeta\n"));
    assert!(write_notes(
        &mut sc,
        15,
        "BETA\nbeta\n",
        Some("beta\nbeta\n")
    ));
    // A rejected edit covers nothing.
    next_turn(&mut sc);
    ask_edit(&mut sc, 4, 'n', Some(BASE));
    assert!(write_notes(&mut sc, 16, want, Some(BASE)));
    // Once the turn ends, an approval of that turn covers nothing.
    ask_edit(&mut sc, 5, 'y', Some(BASE));
    next_turn(&mut sc);
    assert!(write_notes(&mut sc, 17, want, Some(BASE)));
}

#[test]
fn an_option_whose_name_contradicts_its_kind_is_marked_and_covers_no_write() {
    let mut sc = ready_scene();
    sc.type_prompt("Uppercase beta");
    sc.line(upd(
        json!({"sessionUpdate":"tool_call","toolCallId":"call_c","title":"Edit notes.txt",
        "kind":"edit","status":"pending","locations":[{"path":NOTES}],
        "content":[{"type":"diff","path":NOTES,"oldText":"beta\n","newText":"BETA\n"}]}),
    ));
    sc.line(json!({"jsonrpc":"2.0","id":30,"method":"session/request_permission","params":{"sessionId":"sess_1",
        "toolCall":{"toolCallId":"call_c"},
        "options":[{"optionId":"ok","name":"Reject","kind":"allow_once"},
                   {"optionId":"no","name":"Allow","kind":"reject_once"},
                   {"optionId":"always","name":"Always Allow","kind":"allow_always"}]}}));
    let screen = sc.screen(160, 40);
    // The kind is always shown with the name, and a contradiction is marked.
    assert!(
        screen.contains("allow once: Reject ⚠ the name contradicts what it does"),
        "{screen}"
    );
    assert!(
        screen.contains("reject once: Allow ⚠ the name contradicts what it does"),
        "{screen}"
    );
    assert!(screen.contains("allow always"), "{screen}");
    assert!(
        !screen.contains("allow always:"),
        "a name that only repeats the kind: {screen}"
    );
    sc.key(KeyCode::Char('y'));
    // Answered at once: no approval is kept for a choice whose name said "Reject".
    assert_eq!(sc.sent.last().unwrap()["id"], 30);
    assert_eq!(
        sc.sent.last().unwrap()["result"]["outcome"]["optionId"],
        "ok"
    );
    assert!(
        !sc.actions
            .iter()
            .any(|a| matches!(a, Action::AnswerAfterSnapshot { .. }))
    );
    assert!(write_notes(&mut sc, 31, "alpha\nBETA\ngamma\n", Some(BASE)));
    // An "allow always" called "Reject always" adds no standing rule.
    let rules = sc.s.rules.list.len();
    sc.line(json!({"jsonrpc":"2.0","id":32,"method":"session/request_permission","params":{"sessionId":"sess_1",
        "toolCall":{"toolCallId":"call_c2","title":"rm -rf build","kind":"execute",
            "rawInput":{"command":"rm -rf build"}},
        "options":[{"optionId":"always","name":"Reject always","kind":"allow_always"},
                   {"optionId":"no","name":"Reject","kind":"reject_once"}]}}));
    sc.key(KeyCode::Char('a'));
    assert_eq!(sc.sent.last().unwrap()["id"], 32);
    assert_eq!(
        sc.s.rules.list.len(),
        rules,
        "no session rule from a contradicting name"
    );
}

#[test]
fn a_new_file_approval_does_not_cover_overwriting_an_existing_file() {
    let mut sc = ready_scene();
    sc.type_prompt("Write notes");
    let ask = |sc: &mut Scene, id: u64| {
        let call = format!("call_n{id}");
        sc.line(upd(
            json!({"sessionUpdate":"tool_call","toolCallId":call,"title":"Write notes.txt",
            "kind":"edit","status":"pending","locations":[{"path":NOTES}],
            "content":[{"type":"diff","path":NOTES,"oldText":null,"newText":"fresh\n"}]}),
        ));
        sc.line(json!({"jsonrpc":"2.0","id":id,"method":"session/request_permission","params":{"sessionId":"sess_1",
            "toolCall":{"toolCallId":call},
            "options":[{"optionId":"ok","name":"Allow","kind":"allow_once"},
                       {"optionId":"no","name":"Reject","kind":"reject_once"}]}}));
        sc.key(KeyCode::Char('y'));
    };
    // The card showed a new file; the file exists with content: the write is gated.
    ask(&mut sc, 40);
    let Some(Action::AnswerAfterSnapshot { line, gate, .. }) = sc.actions.pop() else {
        panic!("{:?}", sc.actions)
    };
    sc.m.approved_files(&gate, vec![(PathBuf::from(NOTES), Some(BASE.into()))]);
    sc.sent.push(line_value(&line));
    assert!(write_notes(&mut sc, 41, "fresh\n", Some(BASE)));
    // A file that is really missing is created without a second gate.
    next_turn(&mut sc);
    ask(&mut sc, 42);
    let Some(Action::AnswerAfterSnapshot { line, gate, .. }) = sc.actions.pop() else {
        panic!("{:?}", sc.actions)
    };
    sc.m.approved_files(&gate, vec![(PathBuf::from(NOTES), None)]);
    sc.sent.push(line_value(&line));
    assert!(!write_notes(&mut sc, 43, "fresh\n", None));
}

#[test]
fn a_covered_write_still_meets_deny_and_ask_rules() {
    use switchboard::core::rules::{Action as RuleAction, Origin, RuleSpec};
    let rule = |action| RuleSpec {
        action,
        tool: "fs/write_text_file".into(),
        pattern: Some(NOTES.into()),
        exact: false,
    };
    let want = "alpha\nBETA\ngamma\n";
    let mut sc = ready_scene();
    sc.type_prompt("Uppercase beta");
    // A deny rule for the path refuses the write the approval would cover.
    sc.s.rules.add(rule(RuleAction::Deny), Origin::Session);
    ask_edit(&mut sc, 50, 'y', Some(BASE));
    sc.line(json!({"jsonrpc":"2.0","id":51,"method":"fs/write_text_file","params":{"sessionId":"sess_1","path":NOTES,"content":want}}));
    let Some(Action::PrepareWrite { id, path, content }) = sc.actions.pop() else {
        panic!("{:?}", sc.actions)
    };
    let out = sc.m.write_gate(id, path, content, Some(BASE.into()));
    sc.absorb(out);
    assert!(sc.s.active().is_none());
    assert_eq!(sc.sent.last().unwrap()["id"], 51);
    assert_eq!(sc.sent.last().unwrap()["error"]["code"], -32000);
    assert!(
        !sc.actions
            .iter()
            .any(|a| matches!(a, Action::WriteFile { .. }))
    );
    // An ask rule shows the card, with what the approval would have covered.
    sc.s.rules.list.clear();
    sc.s.rules.add(rule(RuleAction::Ask), Origin::Session);
    next_turn(&mut sc);
    ask_edit(&mut sc, 52, 'y', Some(BASE));
    sc.line(json!({"jsonrpc":"2.0","id":53,"method":"fs/write_text_file","params":{"sessionId":"sess_1","path":NOTES,"content":want}}));
    let Some(Action::PrepareWrite { id, path, content }) = sc.actions.pop() else {
        panic!("{:?}", sc.actions)
    };
    let out = sc.m.write_gate(id, path, content, Some(BASE.into()));
    sc.absorb(out);
    let GateKind::Permission(p) = &sc.s.active().expect("the ask rule shows the card").kind else {
        panic!()
    };
    assert!(
        p.covered_by
            .as_deref()
            .is_some_and(|c| c.contains("acp:52"))
    );
    assert!(
        !sc.actions
            .iter()
            .any(|a| matches!(a, Action::WriteFile { .. }))
    );
}

// ---- The scripted Checkfu agent ----------------------------------------------------------------

struct Live {
    h: Headless,
    record: PathBuf,
    cwd: PathBuf,
}

impl Live {
    fn out_lines(&self) -> Vec<Value> {
        recorded(&self.record, "out")
    }

    fn send(&mut self, text: &str) {
        if self.h.state().focus != Focus::Prompt {
            self.h.app.state.focus = Focus::Prompt;
        }
        self.h.type_text(text);
        self.h.key(KeyCode::Enter);
    }

    async fn wait(&mut self, what: &str, pred: impl Fn(&State) -> bool) {
        self.h.wait_until(what, STEP, pred).await
    }
}

fn recorded(path: &Path, dir: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["dir"] == dir)
        .filter_map(|e| serde_json::from_str(e["line"].as_str()?).ok())
        .collect()
}

fn has_text(s: &State, needle: &str) -> bool {
    s.tree
        .nodes
        .iter()
        .flat_map(|n| n.transcript.items.iter())
        .any(|i| i.kind.text().contains(needle))
}

fn system_row(s: &State, label: &str, needle: &str) -> bool {
    root_items(s).iter().any(
        |k| matches!(k, ItemKind::System { label: l, text } if l == label && text.contains(needle)),
    )
}

/// `n` turn results shown and the turn settled (its last event applied).
fn turns_done(s: &State, n: usize) -> bool {
    turn_results(s) == n && s.session.turn == Some(TurnState::Idle)
}

fn turn_results(s: &State) -> usize {
    root_items(s)
        .iter()
        .filter(|k| matches!(k, ItemKind::TurnResult { .. }))
        .count()
}

async fn scripted(tag: &str, builtin_tools: Option<Vec<String>>) -> Option<Live> {
    let py = python_or_skip(tag)?;
    let root = temp_dir(&format!("acp-{tag}"));
    let cwd = root.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let record = root.join("recording.jsonl");
    let config = checkfu_config(py, &cwd, &record, builtin_tools);
    let mut live = Live {
        h: Headless::start(Box::new(AcpBackend { config }), 120, 40),
        record,
        cwd: std::fs::canonicalize(&cwd).unwrap(),
    };
    live.wait("the session", |s| s.session.session_id.is_some())
        .await;
    Some(live)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_checkfu_subagents_telemetry_and_modes() {
    let Some(mut l) = scripted("subagents", Some(vec!["bash".into(), "read".into()])).await else {
        return;
    };
    // Capabilities shown in the status view; session/new carried the builtin tools.
    let extra = &l.h.state().session.capabilities.extra;
    assert!(
        extra
            .iter()
            .any(|(k, v)| k == "checkfu.steer" && v == "native"),
        "{extra:?}"
    );
    let new = l
        .out_lines()
        .into_iter()
        .find(|v| v["method"] == "session/new")
        .unwrap();
    assert_eq!(
        new["params"]["_meta"]["checkfu.builtin_tools"],
        json!(["bash", "read"])
    );
    schema_acp::validate_frame("session.new.builtin-tools", &new).unwrap();
    l.h.key(KeyCode::Esc);
    l.h.key(KeyCode::Char('s'));
    assert!(l.h.screen().contains("checkfu.interrupt"));
    l.h.key(KeyCode::Esc);

    l.send("SUBAGENTS please");
    l.wait("the sub-agent turn", |s| turns_done(s, 1)).await;
    let s = l.h.state();
    let sa1 = s.tree.get("sa:sa-1").expect("sub-agent sa-1 in the tree");
    let sa2 = s.tree.get("sa:sa-2").expect("sub-agent sa-2 in the tree");
    assert_eq!(s.tree.nodes[sa1].name, "reviewer");
    assert_eq!(s.tree.nodes[sa1].status, NodeStatus::Completed);
    assert_eq!(s.tree.nodes[sa2].status, NodeStatus::Killed);
    assert!(system_row(s, "sub-agent", "tester closed: cancelled"));
    assert!(system_row(s, "turn telemetry", "model_only"));
    assert!(system_row(s, "turn telemetry", "1 retries"));
    assert!(
        root_items(s)
            .iter()
            .any(|k| matches!(k, ItemKind::Plan { .. }))
    );
    assert!(
        s.session
            .info
            .iter()
            .any(|(k, v)| k == "title" && v == "Checkfu review")
    );
    let screen = l.h.screen();
    assert!(screen.contains("reviewer"), "{screen}");

    // The mode picker lists the agent's modes; Enter sends session/set_mode.
    l.h.key(KeyCode::Esc);
    l.h.key(KeyCode::Char('m'));
    assert!(l.h.screen().contains("plan"));
    l.h.key(KeyCode::Down);
    l.h.key(KeyCode::Enter);
    l.wait("mode plan", |s| {
        s.session.permission_mode.as_deref() == Some("plan")
    })
    .await;
    assert!(
        l.out_lines()
            .iter()
            .any(|v| v["method"] == "session/set_mode" && v["params"]["modeId"] == "plan")
    );
    l.h.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_checkfu_steer_and_interrupt_round_trips() {
    let Some(mut l) = scripted("steer", None).await else {
        return;
    };
    l.send("SLOW");
    l.wait("the turn to stream", |s| has_text(s, "working"))
        .await;
    l.send("focus on the failing test");
    l.wait("the steer disposition", |s| {
        system_row(s, "steer", "delivered")
    })
    .await;
    l.wait("the steered text", |s| {
        has_text(s, "steered: focus on the failing test")
    })
    .await;
    l.h.ctrl('c');
    l.wait("draining", |s| system_row(s, "interrupt", "draining"))
        .await;
    l.wait("the cancelled turn", |s| turns_done(s, 1)).await;
    assert!(
        root_items(l.h.state())
            .iter()
            .any(|k| matches!(k, ItemKind::TurnResult { subtype, .. } if subtype == "cancelled"))
    );
    let out = l.out_lines();
    let steer = out
        .iter()
        .find(|v| v["method"] == "_checkfu/session/steer")
        .unwrap();
    schema_acp::validate_frame("extension.steer.request", steer).unwrap();
    let int = out
        .iter()
        .find(|v| v["method"] == "_checkfu/session/interrupt")
        .unwrap();
    schema_acp::validate_frame("extension.interrupt.request", int).unwrap();
    assert!(
        !out.iter().any(|v| v["method"] == "session/cancel"),
        "draining needs no cancel"
    );
    l.h.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_permission_fs_terminal_and_unknown_methods() {
    let Some(mut l) = scripted("gates", None).await else {
        return;
    };
    // Permission: the agent's four options; n = reject_once.
    l.send("PERMIT");
    l.wait("the permission gate", |s| s.active().is_some())
        .await;
    l.h.key(KeyCode::Char('n'));
    l.wait("the rejected turn", |s| turns_done(s, 1)).await;
    assert!(has_text(l.h.state(), "outcome: no-once"));

    // fs: write is a gate with the diff, then written; read in cwd; outside refused.
    l.send("FS");
    l.wait("the write gate", |s| s.active().is_some()).await;
    let screen = l.h.screen();
    assert!(screen.contains("+world"), "{screen}");
    l.h.key(KeyCode::Char('y'));
    l.wait("the fs turn", |s| turns_done(s, 2)).await;
    assert_eq!(
        std::fs::read_to_string(l.cwd.join("out.txt")).unwrap(),
        "hello\nworld\n"
    );
    assert!(
        has_text(
            l.h.state(),
            r#"write=ok read="world\n" outside=error -32000"#
        ),
        "{}",
        transcript_text(l.h.state())
    );

    // terminal: gate shows the command, runs for real, output in the transcript.
    l.send("TERM");
    l.wait("the terminal gate", |s| s.active().is_some()).await;
    assert!(l.h.screen().contains("echo term-output"));
    l.h.key(KeyCode::Char('y'));
    l.wait("the terminal turn", |s| turns_done(s, 3)).await;
    assert!(
        has_text(l.h.state(), r#"exit=0 output="term-output\n""#),
        "{}",
        transcript_text(l.h.state())
    );
    // Issue 22 item 5: the terminal's own row tells the story too, the command's output
    // and its exit status (not only what the agent wrote about it).
    l.wait("the terminal's exit on its row", |s| {
        s.tree
            .nodes
            .iter()
            .flat_map(|n| n.transcript.items.iter())
            .any(|i| {
                matches!(&i.kind, ItemKind::ToolResult { text, is_error: false, .. }
                    if text.starts_with("terminal term-1")
                        && text.contains("echo term-output")
                        && text.contains("· exit 0")
                        && text.contains("\nterm-output"))
            })
    })
    .await;

    // A method we do not serve: -32601.
    l.send("UNKNOWN");
    l.wait("the unknown turn", |s| turns_done(s, 4)).await;
    assert!(has_text(l.h.state(), "unknown answered -32601"));

    // Every request of the agent got exactly one answer.
    l.h.quit().await;
    let ins = recorded(&l.record, "in");
    let outs = recorded(&l.record, "out");
    for req in ins
        .iter()
        .filter(|v| v.get("method").is_some() && v.get("id").is_some())
    {
        let n = outs
            .iter()
            .filter(|o| o.get("method").is_none() && o["id"] == req["id"])
            .count();
        assert_eq!(n, 1, "request {req} answered {n} times");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_approved_edit_writes_without_a_second_gate() {
    let Some(mut l) = scripted("edit", None).await else {
        return;
    };
    std::fs::write(l.cwd.join("notes.txt"), "alpha\nbeta\ngamma\n").unwrap();
    l.send("EDIT");
    l.wait("the edit permission", |s| s.active().is_some())
        .await;
    l.h.key(KeyCode::Char('y'));
    // The approved write goes through; the second, different one is a gate of its own.
    l.wait("the second write's gate", |s| {
        s.active()
            .is_some_and(|g| g.reply_definition == "WriteTextFileResponse")
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(l.cwd.join("notes.txt")).unwrap(),
        "alpha\nBETA\ngamma\n"
    );
    assert!(l.h.screen().contains("sneaky"), "{}", l.h.screen());
    l.h.key(KeyCode::Char('n'));
    l.wait("the edit turn", |s| turns_done(s, 1)).await;
    assert!(
        has_text(l.h.state(), "edit: first=ok second=error -32000"),
        "{}",
        transcript_text(l.h.state())
    );
    assert!(has_text(l.h.state(), "covered by the approval of acp:0"));
    assert_eq!(
        std::fs::read_to_string(l.cwd.join("notes.txt")).unwrap(),
        "alpha\nBETA\ngamma\n"
    );
    l.h.quit().await;
    let notes: Vec<String> = std::fs::read_to_string(&l.record)
        .unwrap()
        .lines()
        .filter_map(|x| serde_json::from_str::<Value>(x).ok())
        .filter(|e| e["dir"] == "note")
        .filter_map(|e| e["line"].as_str().map(str::to_string))
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("covered by the approval of acp:0")),
        "{notes:?}"
    );
    let (code, out) = validate_recording(&l.record);
    assert_eq!(code, Some(0), "{out}");
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_symlinks_cannot_lead_fs_requests_outside() {
    let Some(mut l) = scripted("links", None).await else {
        return;
    };
    let outside = l.cwd.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(outside.join("new.txt"), l.cwd.join("dangling")).unwrap();
    std::os::unix::fs::symlink(&outside, l.cwd.join("link")).unwrap();
    l.send("LINKS");
    l.wait("the links turn", |s| {
        turns_done(s, 1) || s.active().is_some()
    })
    .await;
    assert!(
        l.h.state().active().is_none(),
        "no gate for a write through a link"
    );
    assert!(
        has_text(l.h.state(), "links: write=error -32000 read=error -32000"),
        "{}",
        transcript_text(l.h.state())
    );
    assert!(!outside.join("new.txt").exists(), "nothing written outside");
    l.h.quit().await;
    let (code, out) = validate_recording(&l.record);
    assert_eq!(code, Some(0), "{out}");
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_link_swapped_in_while_the_write_gate_waits_is_not_followed() {
    let Some(mut l) = scripted("swap", None).await else {
        return;
    };
    let outside = l.cwd.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir(l.cwd.join("sub")).unwrap();
    l.send("SWAP");
    l.wait("the write gate", |s| s.active().is_some()).await;
    // The gate was raised for a real directory; now it leads outside.
    std::fs::remove_dir(l.cwd.join("sub")).unwrap();
    std::os::unix::fs::symlink(&outside, l.cwd.join("sub")).unwrap();
    l.h.key(KeyCode::Char('y'));
    l.wait("the swap turn", |s| turns_done(s, 1)).await;
    assert!(
        has_text(l.h.state(), "swap: write=error -32000"),
        "{}",
        transcript_text(l.h.state())
    );
    assert!(!outside.join("f.txt").exists(), "nothing written outside");
    l.h.quit().await;
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_terminal_cwd_through_a_link_is_refused() {
    let Some(mut l) = scripted("termcwd", None).await else {
        return;
    };
    let outside = l.cwd.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir(l.cwd.join("sub")).unwrap();
    // `build -> outside` (like `build -> ~`), `alias -> sub` (inside, but not what is shown).
    std::os::unix::fs::symlink(&outside, l.cwd.join("build")).unwrap();
    std::os::unix::fs::symlink("sub", l.cwd.join("alias")).unwrap();
    l.send("TERMCWD");
    for n in 0..3 {
        l.wait("a terminal gate", |s| {
            s.active().is_some() || turns_done(s, 1)
        })
        .await;
        assert!(l.h.state().active().is_some(), "gate {n}");
        l.h.key(KeyCode::Char('y'));
    }
    l.wait("the termcwd turn", |s| turns_done(s, 1)).await;
    let want = format!(
        "termcwd: build=error -32000 alias=error -32000 sub={}",
        l.cwd.join("sub").display()
    );
    assert!(
        has_text(l.h.state(), &want),
        "{want}\n{}",
        transcript_text(l.h.state())
    );
    l.h.quit().await;
}

// ---- The real claude-agent-acp -----------------------------------------------------------------

fn acp_bin() -> Option<PathBuf> {
    Some(manifest("tests/peers/node_modules/.bin/claude-agent-acp")).filter(|p| p.exists())
}

struct Real {
    live: Live,
    model: FakeModel,
}

async fn real(tag: &str, scenario: &str) -> Option<Real> {
    let acp = require_or_skip(
        tag,
        "claude-agent-acp (npm ci --prefix tests/peers)",
        acp_bin(),
    )?;
    let claude = require_or_skip(tag, CLAUDE_CLI, claude_bin())?;
    let root = temp_dir(&format!("acp-real-{tag}"));
    let cwd = root.join("cwd");
    let home = root.join("home");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let model = FakeModel::start(Scenario::load(scenario)).await;
    let mut env: Vec<(String, Option<String>)> = CLAUDE_ENV_REMOVE
        .iter()
        .map(|k| (k.to_string(), None))
        .collect();
    env.extend(
        claude_env(&home, &model.base_url())
            .into_iter()
            .map(|(k, v)| (k, Some(v))),
    );
    env.push((
        "CLAUDE_CODE_EXECUTABLE".into(),
        Some(claude.display().to_string()),
    ));
    env.push(("IS_SANDBOX".into(), Some("1".into())));
    let record = root.join("recording.jsonl");
    let config = AcpConfig {
        program: acp,
        cwd: cwd.clone(),
        record: Some(record.clone()),
        env,
        ..AcpConfig::default()
    };
    let mut live = Live {
        h: Headless::start(Box::new(AcpBackend { config }), 120, 40),
        record,
        cwd: std::fs::canonicalize(&cwd).unwrap(),
    };
    live.h
        .wait_until("the ACP session", Duration::from_secs(60), |s| {
            s.session.session_id.is_some()
        })
        .await;
    Some(Real { live, model })
}

fn permission_requests(l: &Live) -> Vec<Value> {
    recorded(&l.record, "in")
        .into_iter()
        .filter(|v| v["method"] == "session/request_permission")
        .collect()
}

fn answer_to(l: &Live, id: &Value) -> Value {
    recorded(&l.record, "out")
        .into_iter()
        .find(|v| v.get("method").is_none() && v["id"] == *id)
        .unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_agent_acp_streams_text() {
    let Some(mut r) = real("stream", "acp_stream").await else {
        return;
    };
    let l = &mut r.live;
    assert!(!l.h.state().session.capabilities.modes.is_empty());
    l.send("STREAM_TEXT now");
    l.wait("the streamed turn", |s| turns_done(s, 1)).await;
    assert!(has_text(
        l.h.state(),
        "Streaming through ACP from the fake model, one delta at a time."
    ));
    let chunks = recorded(&l.record, "in")
        .into_iter()
        .filter(|v| v["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .count();
    assert!(chunks >= 2, "the text arrived in several chunks ({chunks})");
    l.h.quit().await;
    r.model.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_agent_acp_bash_permission_allow_once_and_reject_once() {
    let Some(mut r) = real("bash", "acp_bash").await else {
        return;
    };
    let l = &mut r.live;
    l.send("BASH_ALLOW");
    l.wait("the allow gate", |s| s.active().is_some()).await;
    {
        let GateKind::Permission(p) = &l.h.state().active().unwrap().kind else {
            panic!()
        };
        assert!(p.options.iter().any(|o| o.kind == "allow_once"), "{p:?}");
        assert!(l.h.screen().contains("touch allowed.txt"));
    }
    l.h.key(KeyCode::Char('y'));
    l.wait("the allowed turn", |s| turns_done(s, 1)).await;
    assert!(
        l.cwd.join("allowed.txt").exists(),
        "allow once ran the command"
    );
    let req = &permission_requests(l)[0];
    let ans = answer_to(l, &req["id"]);
    let kind_of = |oid: &Value| {
        req["params"]["options"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["optionId"] == *oid)
            .map(|o| o["kind"].clone())
    };
    assert_eq!(
        kind_of(&ans["result"]["outcome"]["optionId"]),
        Some(json!("allow_once"))
    );

    l.send("BASH_REJECT");
    l.wait("the reject gate", |s| s.active().is_some()).await;
    l.h.key(KeyCode::Char('n'));
    l.wait("the rejected turn", |s| turns_done(s, 2)).await;
    assert!(
        !l.cwd.join("rejected.txt").exists(),
        "reject once did not run the command"
    );
    let reqs = permission_requests(l);
    let req = reqs.last().unwrap();
    let ans = answer_to(l, &req["id"]);
    let opt = req["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["optionId"] == ans["result"]["outcome"]["optionId"])
        .cloned()
        .unwrap();
    assert_eq!(opt["kind"], "reject_once");
    l.h.quit().await;
    r.model.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_agent_acp_cancel_answers_pending_permissions_cancelled() {
    let Some(mut r) = real("cancel", "acp_bash").await else {
        return;
    };
    let l = &mut r.live;
    l.send("CANCEL_ME");
    l.wait("the pending gate", |s| s.active().is_some()).await;
    // claude-agent-acp declares no Checkfu interrupt: Ctrl-C is session/cancel.
    l.h.ctrl('c');
    l.wait("the cancelled turn", |s| turns_done(s, 1)).await;
    assert!(l.h.state().gates.is_empty(), "the gate was closed");
    let out = recorded(&l.record, "out");
    assert!(out.iter().any(|v| v["method"] == "session/cancel"));
    let req = &permission_requests(l)[0];
    assert_eq!(
        answer_to(l, &req["id"])["result"],
        json!({"outcome":{"outcome":"cancelled"}})
    );
    assert!(
        root_items(l.h.state())
            .iter()
            .any(|k| matches!(k, ItemKind::TurnResult { subtype, .. } if subtype == "cancelled"))
    );
    assert!(!l.cwd.join("cancelled.txt").exists());
    l.h.quit().await;
    r.model.shutdown().await;
}

// ---- Recordings of real sessions validate clean ------------------------------------------------

/// `switchboard validate` on a recording: exit code and output.
fn validate_recording(path: &Path) -> (Option<i32>, String) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("validate")
        .arg(path)
        .output()
        .expect("run switchboard validate");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_agent_acp_recording_validates_clean() {
    let Some(mut r) = real("validate", "acp_bash").await else {
        return;
    };
    let l = &mut r.live;
    l.send("BASH_ALLOW");
    l.wait("the allow gate", |s| s.active().is_some()).await;
    l.h.key(KeyCode::Char('y'));
    l.wait("the allowed turn", |s| turns_done(s, 1)).await;
    l.send("CANCEL_ME");
    l.wait("the pending gate", |s| s.active().is_some()).await;
    l.h.ctrl('c');
    l.wait("the cancelled turn", |s| turns_done(s, 2)).await;
    l.h.quit().await;
    r.model.shutdown().await;
    let (code, out) = validate_recording(&l.record);
    assert_eq!(code, Some(0), "the real session's recording:\n{out}");
    assert!(out.contains("0 problem(s)"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_checkfu_recording_validates_clean() {
    let Some(mut l) = scripted("validate", Some(vec!["bash".into()])).await else {
        return;
    };
    l.send("PERMIT");
    l.wait("the permission gate", |s| s.active().is_some())
        .await;
    l.h.key(KeyCode::Char('n'));
    l.wait("turn 1", |s| turns_done(s, 1)).await;
    l.send("SUBAGENTS please");
    l.wait("turn 2", |s| turns_done(s, 2)).await;
    l.h.quit().await;
    let (code, out) = validate_recording(&l.record);
    assert_eq!(code, Some(0), "the scripted session's recording:\n{out}");
}
