//! `replay`, `validate`, `export` and `sessions` on ACP recordings.
//!
//! Inputs: small hand-written recordings and JSONL logs in `fixtures/recordings/acp/` (each
//! described in its README), corrupted copies made here line by line, the public agent-side logs
//! in `../shared/recordings/acp/` (read in place, skipped with a note when that folder is absent
//! and `CI` is unset), and a live session with the scripted Checkfu agent
//! (`tests/support/checkfu_agent.py`, needs python3) recorded and then validated clean.

#[path = "support/common.rs"]
mod common;
#[path = "support/fake_model.rs"]
mod fake_model;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard::core::input::{KeyCode, KeyEvent, KeyModifiers};

use switchboard::app::headless::Headless;
use switchboard::backend::acp::session::AcpBackend;
use switchboard::core::BackendKind;
use switchboard::core::gate::Decision;
use switchboard::core::msg::TurnState;
use switchboard::core::state::{Focus, State};
use switchboard::core::transcript::ItemKind;
use switchboard::core::tree::NodeStatus;
use switchboard::record::Dir;
use switchboard::registry::replay_mapper;
use switchboard::replay::export::markdown;
use switchboard::replay::load::{Format, Loaded, load, load_str};
use switchboard::replay::player::Player;
use switchboard::replay::sessions::summarize;
use switchboard::replay::validate::validate;

use common::{checkfu_config, manifest, python_or_skip, shared_dir_or_skip};
use fake_model::temp_dir;

fn fixture(name: &str) -> PathBuf {
    manifest(&format!("fixtures/recordings/acp/{name}"))
}

fn bin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run switchboard")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn key(p: &mut Player, c: char) {
    p.key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
}

/// Every item of every node, as text.
fn all_text(s: &State) -> String {
    s.tree
        .nodes
        .iter()
        .flat_map(|n| n.transcript.items.iter())
        .map(|i| i.kind.text())
        .collect::<Vec<_>>()
        .join("\n")
}

fn items(s: &State) -> Vec<&ItemKind> {
    s.tree.nodes[0]
        .transcript
        .items
        .iter()
        .map(|i| &i.kind)
        .collect()
}

/// `(line, rule)` of each finding.
fn findings(loaded: &Loaded) -> Vec<(usize, &'static str)> {
    validate(loaded)
        .findings
        .iter()
        .map(|f| (f.line, f.rule))
        .collect()
}

/// A recording made from `lines` of `(dir, frame)`, one millisecond apart; the frame of entry
/// `i` is on file line `i + 2`.
fn recording(lines: &[(&str, Value)]) -> String {
    let mut s = json!({"switchboard_recording":1,"backend":"acp","argv":["agent"],"cwd":"/w",
        "switchboard_version":"test","started_ms":1000,"started":"1970-01-01T00:00:01Z"})
    .to_string();
    for (i, (dir, v)) in lines.iter().enumerate() {
        let line = if let Value::String(raw) = v {
            raw.clone()
        } else {
            v.to_string()
        };
        s.push('\n');
        s.push_str(&json!({"ts": 1000 + i as u64, "dir": dir, "line": line}).to_string());
    }
    s.push('\n');
    s
}

/// The recording `good.jsonl` as `(dir, frame)` entries, to corrupt one at a time.
fn good_entries() -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(fixture("good.jsonl")).unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            let e: Value = serde_json::from_str(l).unwrap();
            let line = e["line"].as_str().unwrap();
            let v = serde_json::from_str(line).unwrap_or(Value::String(line.to_string()));
            (e["dir"].as_str().unwrap().to_string(), v)
        })
        .collect()
}

fn rec_of(entries: &[(String, Value)]) -> Loaded {
    let lines: Vec<(&str, Value)> = entries
        .iter()
        .map(|(d, v)| (d.as_str(), v.clone()))
        .collect();
    load_str(&recording(&lines), None).unwrap()
}

/// The file line of the first entry matching `pred` (entry `i` is line `i + 2`).
fn line_of(entries: &[(String, Value)], pred: impl Fn(&str, &Value) -> bool) -> usize {
    entries
        .iter()
        .position(|(d, v)| pred(d, v))
        .expect("entry present")
        + 2
}

fn is_permission_request(d: &str, v: &Value) -> bool {
    d == "in" && v["method"] == "session/request_permission"
}

fn is_reply_to(id: i64) -> impl Fn(&str, &Value) -> bool {
    move |d, v| d == "out" && v.get("method").is_none() && v["id"] == json!(id)
}

// ---- our own recordings ------------------------------------------------------------------------

#[test]
fn good_recording_loads_as_acp_and_validates_clean() {
    let loaded = load(&fixture("good.jsonl"), None).unwrap();
    assert_eq!(loaded.format, Format::Recording);
    assert_eq!(loaded.backend, BackendKind::Acp);
    let report = validate(&loaded);
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    assert!(report.requests >= 4, "{report:?}");
    assert_eq!(report.replies_checked, 2, "both permissions re-encoded");
    let o = bin(&["validate", fixture("good.jsonl").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("0 problem(s)"), "{}", stdout(&o));
}

#[test]
fn replay_by_keys_builds_tree_transcript_and_closes_gates_with_recorded_answers() {
    let mut p = Player::open_path(&fixture("good.jsonl"), None).unwrap();
    assert_eq!(p.state().session.backend, BackendKind::Acp);
    assert_eq!(p.state().tree.nodes[0].name, "agent", "the live root name");
    // `]` stops on the first gate, open, with its recorded answer beside it.
    key(&mut p, ']');
    let g = p.state().active().expect("the permission gate is open");
    let gid = g.id.clone();
    assert_eq!(gid, "acp:0");
    let view = p.state().replay.as_ref().unwrap();
    let answer = view.answers.get(&gid).expect("recorded answer shown");
    assert!(
        answer.starts_with("selected Allow (allow, allow)"),
        "{answer}"
    );
    // One step further the recorded reply closes it.
    key(&mut p, '.');
    assert!(p.state().gates.is_empty(), "the reply closed the gate");
    assert!(
        all_text(p.state()).contains("(recorded)"),
        "{}",
        all_text(p.state())
    );
    // The write gate next; then everything.
    key(&mut p, ']');
    let g = p.state().active().expect("the write gate is open");
    assert_eq!(g.id, "acp:1");
    p.seek(p.total());
    let s = p.state();
    assert!(s.gates.is_empty());
    assert_eq!(s.tree.nodes[0].name, "Example Agent", "from agentInfo");
    assert_eq!(s.answered, 3, "permission, write, permission cancelled");
    assert_eq!(s.session.session_id.as_deref(), Some("sess_1"));
    assert_eq!(s.session.permission_mode.as_deref(), Some("plan"));
    let its = items(s);
    let users: Vec<&str> = its
        .iter()
        .filter_map(|k| match k {
            ItemKind::User { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(users, vec!["fix the build", "and the docs"]);
    assert!(
        its.iter()
            .any(|k| matches!(k, ItemKind::ToolCall { id, .. } if id == "call_1"))
    );
    let results: Vec<&str> = its
        .iter()
        .filter_map(|k| match k {
            ItemKind::TurnResult { subtype, .. } => Some(subtype.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(results, vec!["end_turn", "cancelled"]);
    let text = all_text(s);
    assert!(text.contains("Fixed the build."), "{text}");
    assert!(text.contains("read /w/src/lib.rs for the agent"), "{text}");
    assert!(text.contains("wrote /w/src/lib.rs"), "{text}");
    assert!(text.contains("session/cancel sent"), "{text}");
    // The sub-agent is a child node, completed.
    let sa = s.tree.get("sa:sa-1").expect("sub-agent node");
    assert_eq!(s.tree.nodes[sa].status, NodeStatus::Completed);
    // Stepping back rebuilds the same state from the start.
    key(&mut p, ',');
    key(&mut p, '.');
    assert_eq!(p.state().answered, 3);
    // The inspector gives the ACP verdict of the frame.
    p.seek(3);
    key(&mut p, 'i');
    let body = match &p.state().overlay {
        Some(switchboard::core::state::Overlay::Text { body, .. }) => body.clone(),
        o => panic!("{o:?}"),
    };
    assert!(body.contains("direction: out"), "{body}");
    assert!(body.contains("valid (ACP: session/new)"), "{body}");
}

#[test]
fn replay_mapper_answers_carry_the_derived_decisions_and_no_action_runs() {
    let loaded = load(&fixture("good.jsonl"), None).unwrap();
    let mut m = replay_mapper(BackendKind::Acp);
    let mut answers = Vec::new();
    for f in &loaded.frames {
        match f.dir {
            Dir::In => {
                m.inbound(&f.text);
            }
            Dir::Out => answers.extend(m.outbound(&f.text).1),
            _ => {}
        }
    }
    let decisions: Vec<(String, Option<Decision>)> = answers
        .into_iter()
        .map(|a| (a.gate_id, a.decision))
        .collect();
    assert_eq!(
        decisions,
        vec![
            (
                "acp:0".into(),
                Some(Decision::Option {
                    option_id: "allow".into(),
                    name: "Allow".into(),
                    allow: true
                })
            ),
            (
                "acp:1".into(),
                Some(Decision::Option {
                    option_id: "allow".into(),
                    name: "Write the file".into(),
                    allow: true
                })
            ),
            ("acp:3".into(), Some(Decision::Cancelled)),
        ]
    );
    // The write was never performed by the replay: /w does not exist here.
    assert!(!Path::new("/w/src/lib.rs").exists());
}

#[test]
fn validate_reports_each_violation_with_its_line() {
    let good = good_entries();
    let perm = line_of(&good, is_permission_request);
    let reply = line_of(&good, is_reply_to(0));

    // Unanswered permission: its reply removed.
    let mut e = good.clone();
    e.remove(reply - 2);
    assert_eq!(findings(&rec_of(&e)), vec![(perm, "unanswered")]);

    // Answered twice: the reply repeated right after.
    let mut e = good.clone();
    e.insert(reply - 1, good[reply - 2].clone());
    assert_eq!(findings(&rec_of(&e)), vec![(reply + 1, "answered-twice")]);

    // A decision after the agent cancelled the request.
    let mut e = good.clone();
    e.insert(
        reply - 2,
        (
            "in".into(),
            json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":0}}),
        ),
    );
    assert_eq!(
        findings(&rec_of(&e)),
        vec![(reply + 1, "reply-to-withdrawn")]
    );
    // ... while a cancellation reply is what ACP asks for.
    let mut e = good.clone();
    e[reply - 2].1 = json!({"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}});
    e.insert(
        reply - 2,
        (
            "in".into(),
            json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":0}}),
        ),
    );
    assert_eq!(findings(&rec_of(&e)), vec![]);

    // Replies keyed to ids nobody sent, in both directions.
    let mut e = good.clone();
    e.push(("out".into(), json!({"jsonrpc":"2.0","id":77,"result":{}})));
    e.push((
        "in".into(),
        json!({"jsonrpc":"2.0","id":"x9","result":{"stopReason":"end_turn"}}),
    ));
    let n = e.len() + 1;
    assert_eq!(
        findings(&rec_of(&e)),
        vec![(n - 1, "unknown-request-id"), (n, "unknown-request-id")]
    );

    // A line without a JSON-RPC envelope, and one that is no JSON at all.
    let mut e = good.clone();
    e.insert(
        perm - 2,
        (
            "in".into(),
            json!({"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk"}}),
        ),
    );
    e.insert(
        perm - 2,
        ("in".into(), Value::String("Traceback (most".into())),
    );
    assert_eq!(
        findings(&rec_of(&e)),
        vec![(perm, "envelope"), (perm + 1, "envelope")]
    );

    // An invalid Checkfu frame of ours: a steer without content.
    let mut e = good.clone();
    e.push((
        "out".into(),
        json!({"jsonrpc":"2.0","id":9,"method":"_checkfu/session/steer","params":{"sessionId":"sess_1","id":"steer-1"}}),
    ));
    let n = e.len() + 1;
    assert_eq!(findings(&rec_of(&e)), vec![(n, "schema")]);

    // Decision fidelity: an option the agent never offered.
    let mut e = good.clone();
    e[reply - 2].1 = json!({"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"sudo"}}});
    assert_eq!(findings(&rec_of(&e)), vec![(reply, "decision-fidelity")]);

    // Invalid frames: an agent method that is no ACP method, a permission without options'
    // types.
    let mut e = good.clone();
    e.push((
        "in".into(),
        json!({"jsonrpc":"2.0","id":40,"method":"fs/delete","params":{}}),
    ));
    e.push((
        "out".into(),
        json!({"jsonrpc":"2.0","id":40,"error":{"code":-32601,"message":"Method not found"}}),
    ));
    e.push((
        "in".into(),
        json!({"jsonrpc":"2.0","id":41,"method":"session/request_permission","params":{"sessionId":"sess_1"}}),
    ));
    e.push((
        "out".into(),
        json!({"jsonrpc":"2.0","id":41,"error":{"code":-32602,"message":"invalid params"}}),
    ));
    let n = e.len() + 1;
    assert_eq!(
        findings(&rec_of(&e)),
        vec![(n - 3, "unknown-method"), (n - 1, "invalid-frame")]
    );
}

#[test]
fn validate_binary_output_format_and_exit_codes_on_a_corrupt_recording() {
    let path = fixture("corrupt.jsonl");
    let o = bin(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    let shown = path.display().to_string();
    for want in [
        format!("{shown}:5: envelope: "),
        format!("{shown}:9: unanswered: session/request_permission request 0"),
        format!("{shown}:11: answered-twice: "),
        format!("{shown}:14: reply-to-withdrawn: "),
        format!("{shown}:15: unknown-request-id: "),
        format!("{shown}:16: schema: "),
    ] {
        assert!(out.contains(&want), "missing {want:?} in\n{out}");
    }
    assert!(out.contains("6 problem(s)"), "{out}");
    let o = bin(&["validate", "--json", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["problems"], 6);
}

// ---- JSONL wire logs -----------------------------------------------------------------------

#[test]
fn validate_reports_duplicate_ids_and_accepts_the_null_keyed_answer_to_a_bad_id() {
    let good = good_entries();
    let perm = line_of(&good, is_permission_request);
    // The permission arrives again while pending: reported on the second, answered once.
    let mut e = good.clone();
    e.insert(perm - 1, good[perm - 2].clone());
    assert_eq!(findings(&rec_of(&e)), vec![(perm + 1, "duplicate-id")]);
    // A request with an object id: the line is no envelope; our error keyed `null` answers it.
    let mut e = good.clone();
    let bad = json!({"jsonrpc":"2.0","id":{"x":1},"method":"fs/read_text_file","params":{"sessionId":"sess_1","path":"/w/a"}});
    e.insert(perm - 2, ("in".into(), bad));
    e.insert(
        perm - 1,
        (
            "out".into(),
            json!({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}),
        ),
    );
    assert_eq!(findings(&rec_of(&e)), vec![(perm, "envelope")]);
    // Without such a request, a `null`-keyed reply answers nothing.
    let mut e = good.clone();
    e.push((
        "out".into(),
        json!({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}),
    ));
    let n = e.len() + 1;
    assert_eq!(findings(&rec_of(&e)), vec![(n, "unknown-request-id")]);
}

#[test]
fn acp_jsonl_log_is_detected_directed_and_validates_clean() {
    let path = fixture("wire.jsonl");
    let loaded = load(&path, None).unwrap();
    assert_eq!(loaded.format, Format::Jsonl);
    assert_eq!(loaded.backend, BackendKind::Acp);
    let dirs: String = loaded
        .frames
        .iter()
        .map(|f| if f.dir == Dir::Out { 'o' } else { 'i' })
        .collect();
    // Our initialize, session/new and prompt out, their results in; the agent's permission and
    // terminal requests in (ids 0..4, colliding with ours), our replies out, even the reply to
    // its terminal/output (id 3) while our prompt 3 is open; the prompt's result in.
    assert_eq!(dirs, "oioioiioioioioioii");
    let report = validate(&loaded);
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    let o = bin(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // Replayed: the terminal row comes from the recorded replies, never from a process.
    let mut p = Player::open_path(&path, None).unwrap();
    p.seek(p.total());
    let text = all_text(p.state());
    assert!(text.contains("terminal term-1 · $ cargo test"), "{text}");
    assert!(text.contains("exit 0"), "{text}");
    assert!(text.contains("test result: ok"), "{text}");
    assert_eq!(p.state().answered, 2);
}

fn shared_acp() -> Option<PathBuf> {
    shared_dir_or_skip("the shared ACP recordings", "recordings/acp")
}

#[test]
fn shared_agent_side_logs_replay_and_validate_with_explained_findings() {
    let Some(dir) = shared_acp() else {
        return;
    };
    let mut seen = 0;
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    names.sort();
    for path in names {
        seen += 1;
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let loaded = load(&path, None).unwrap();
        assert_eq!(loaded.backend, BackendKind::Acp, "{name}");
        assert!(
            loaded.frames.iter().all(|f| f.dir == Dir::In),
            "{name}: the agent's side only"
        );
        let f = findings(&loaded);
        // The only findings: the log is one-sided, and the malformed one's 4 bare lines.
        let envelope = f.iter().filter(|(_, r)| *r == "envelope").count();
        assert_eq!(f[0], (0, "one-sided"), "{name}: {f:?}");
        if name.contains("MALFORMED") {
            assert_eq!(envelope, 4, "{name}: {f:?}");
            let lines: Vec<usize> = f.iter().skip(1).map(|x| x.0).collect();
            assert_eq!(lines, vec![3, 4, 5, 6], "{name}");
        } else {
            assert_eq!(f.len(), 1, "{name}: {f:?}");
        }
        // Replay reads the responses by their shape: a session and a finished turn.
        let mut p = Player::open_path(&path, None).unwrap();
        p.seek(p.total());
        let s = p.state();
        assert!(s.session.session_id.is_some(), "{name}");
        assert!(
            items(s)
                .iter()
                .any(|k| matches!(k, ItemKind::TurnResult { .. })),
            "{name}"
        );
        if name.contains("toad") {
            // The permission (and terminal) gates stay open: nobody answered them in this log.
            let open = if name.contains("terminal") { 2 } else { 1 };
            assert_eq!(s.gates.len(), open, "{name}");
        }
        let md = markdown(&loaded, &name);
        assert!(md.contains("- backend: acp"), "{name}");
    }
    assert_eq!(seen, 4);
}

// ---- export and sessions -----------------------------------------------------------------------

#[test]
fn export_markdown_of_an_acp_recording() {
    let loaded = load(&fixture("good.jsonl"), None).unwrap();
    let md = markdown(&loaded, "good.jsonl");
    for want in [
        "# switchboard session: good.jsonl",
        "- backend: acp",
        "- cwd: `/w`",
        "3 gate(s) answered",
        "- **Example Agent**",
        "  - **reviewer**",
        "> fix the build",
        "Fixed the build.",
        "**Tool `read · completed`** `Read src/lib.rs (/w/src/lib.rs)`",
        "> **✔ Allow: read `Read src/lib.rs` (recorded)**",
        "> **✔ Write the file: fs/write_text_file `/w/src/lib.rs` (recorded)**",
        "*fs: read /w/src/lib.rs for the agent*",
        "> **• cancelled: edit `Edit README.md` (recorded)**",
        "*turn telemetry: shell",
        "## reviewer — Reviews the fix",
    ] {
        assert!(md.contains(want), "missing {want:?} in\n{md}");
    }
    let out = temp_dir("acp-export").join("good.md");
    let o = bin(&[
        "export",
        fixture("good.jsonl").to_str().unwrap(),
        "--markdown",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(out).unwrap(), md);
}

#[test]
fn sessions_summarize_acp_recordings_and_logs() {
    let path = fixture("good.jsonl");
    let s = summarize(&path, &load(&path, None).unwrap());
    assert_eq!(s.backend, BackendKind::Acp);
    assert_eq!(s.cwd, "/w");
    assert_eq!(s.first_prompt, "fix the build");
    assert_eq!(s.answered, 3);
    assert_eq!(s.result, "cancelled");
    assert_eq!(s.started_ms, 1000);
    let path = fixture("wire.jsonl");
    let s = summarize(&path, &load(&path, None).unwrap());
    assert_eq!(s.backend, BackendKind::Acp);
    assert_eq!(s.cwd, "/w");
    assert_eq!(s.first_prompt, "run the tests");
    assert_eq!(s.answered, 2);
    assert_eq!(s.result, "end_turn");
    // The list reads the data dir: an ACP recording is listed with the Claude ones.
    let dir = temp_dir("acp-sessions");
    std::fs::copy(fixture("good.jsonl"), dir.join("a.jsonl")).unwrap();
    let list = switchboard::replay::sessions::list(&dir);
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].backend, BackendKind::Acp);
}

// ---- a live session, recorded, then validated ----------------------------------------------

fn turn_results(s: &State) -> usize {
    items(s)
        .iter()
        .filter(|k| matches!(k, ItemKind::TurnResult { .. }))
        .count()
}

fn turns_done(s: &State, n: usize) -> bool {
    turn_results(s) == n && s.session.turn == Some(TurnState::Idle)
}

const STEP: Duration = Duration::from_secs(30);

fn send(h: &mut Headless, text: &str) {
    h.app.state.focus = Focus::Prompt;
    h.type_text(text);
    h.key(KeyCode::Enter);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_checkfu_session_recording_validates_clean_and_replays() {
    let Some(py) = python_or_skip("the scripted Checkfu recording") else {
        return;
    };
    let root = temp_dir("replay-acp-live");
    let cwd = root.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let record = root.join("recording.jsonl");
    let builtin_tools = Some(vec!["bash".into(), "read".into()]);
    let config = checkfu_config(py, &cwd, &record, builtin_tools);
    let mut h = Headless::start(Box::new(AcpBackend { config }), 120, 40);
    h.wait_until("the session", STEP, |s| s.session.session_id.is_some())
        .await;
    send(&mut h, "PERMIT");
    h.wait_until("the permission gate", STEP, |s| s.active().is_some())
        .await;
    h.key(KeyCode::Char('y'));
    h.wait_until("turn 1", STEP, |s| turns_done(s, 1)).await;
    send(&mut h, "FS");
    h.wait_until("the write gate", STEP, |s| s.active().is_some())
        .await;
    h.key(KeyCode::Char('y'));
    h.wait_until("turn 2", STEP, |s| turns_done(s, 2)).await;
    send(&mut h, "TERM");
    h.wait_until("the terminal gate", STEP, |s| s.active().is_some())
        .await;
    h.key(KeyCode::Char('y'));
    h.wait_until("turn 3", STEP, |s| turns_done(s, 3)).await;
    send(&mut h, "UNKNOWN");
    h.wait_until("turn 4", STEP, |s| turns_done(s, 4)).await;
    send(&mut h, "SUBAGENTS");
    h.wait_until("turn 5", STEP, |s| turns_done(s, 5)).await;
    send(&mut h, "SLOW");
    h.wait_until("streaming", STEP, |s| all_text(s).contains("working"))
        .await;
    send(&mut h, "steer this way");
    h.wait_until("the steer", STEP, |s| {
        all_text(s).contains("steered: steer this way")
    })
    .await;
    h.ctrl('c');
    h.wait_until("turn 6", STEP, |s| turns_done(s, 6)).await;
    send(&mut h, "PERMIT");
    h.wait_until("a gate left open", STEP, |s| s.active().is_some())
        .await;
    // Quitting answers the open gate (cancelled) before stdin closes.
    h.quit().await;
    let live_answered = h.state().answered;
    let live_turns = turn_results(h.state());

    if let Ok(keep) = std::env::var("SWITCHBOARD_KEEP_RECORDING") {
        std::fs::copy(&record, keep).unwrap();
    }
    let o = bin(&["validate", record.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "the live recording validates clean:\n{}",
        stdout(&o)
    );
    let loaded = load(&record, None).unwrap();
    let report = validate(&loaded);
    assert_eq!(report.replies_checked, 2, "{report:?}");

    // Replay it: the same gates open and close with what was answered live.
    let mut p = Player::open_path(&record, None).unwrap();
    p.seek(p.total());
    let s = p.state();
    assert!(s.gates.is_empty(), "every gate closed: {:?}", s.gates);
    // Every turn, even the one that ended after the live view quit.
    let ended = std::fs::read_to_string(&record)
        .unwrap()
        .matches("stopReason")
        .count();
    assert!(turn_results(s) >= live_turns);
    assert_eq!(turn_results(s), ended);
    assert!(s.tree.get("sa:sa-1").is_some());
    let text = all_text(s);
    assert!(text.contains("terminal term-1"), "{text}");
    assert!(text.contains("steered: steer this way"), "{text}");
    assert!(s.answered >= 3, "{} (live {live_answered})", s.answered);
    let md = markdown(&loaded, "live");
    assert!(md.contains("> PERMIT"), "{md}");
    let sum = summarize(&record, &loaded);
    assert_eq!(sum.first_prompt, "PERMIT");
    assert_eq!(
        sum.answered, 4,
        "permission, write, terminal, the cancelled one"
    );
}
