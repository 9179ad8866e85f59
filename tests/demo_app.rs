//! The whole app (reducer, effects, Claude backend, recorder) driven with keys against the
//! scripted demo agent (`switchboard demo-agent`), without a terminal. Every wait is on a state
//! condition with a timeout; nothing sleeps.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard::core::input::KeyCode;

use switchboard::app::headless::Headless;
use switchboard::backend::claude::session::{ClaudeBackend, ClaudeConfig};
use switchboard::core::gate::GateKind;
use switchboard::core::state::State;
use switchboard::core::transcript::ItemKind;
use switchboard::core::tree::NodeStatus;

const WAIT: Duration = Duration::from_secs(20);

/// A scratch directory for one test: the agent's cwd and the recording.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "switchboard-demo-app-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the scratch dir");
        Scratch(dir)
    }

    fn recording(&self) -> PathBuf {
        self.0.join("session.jsonl")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn start(scratch: &Scratch) -> Headless {
    let config = ClaudeConfig {
        program: env!("CARGO_BIN_EXE_switchboard").into(),
        prefix_args: vec!["demo-agent".into()],
        breaks: vec!["Grep".into()],
        cwd: scratch.0.clone(),
        prompt: Some("Add audit logging to the login flow".into()),
        record: Some(scratch.recording()),
        env: vec![("SWITCHBOARD_DEMO_FAST".into(), Some("1".into()))],
        ..Default::default()
    };
    Headless::start(Box::new(ClaudeBackend { config }), 120, 40)
}

fn active_kind(s: &State) -> Option<&'static str> {
    s.active().map(|g| g.kind.label())
}

fn active_tool(s: &State) -> Option<String> {
    match &s.active()?.kind {
        GateKind::Permission(p) => Some(p.tool.clone()),
        GateKind::Breakpoint(b) => Some(b.tool.clone()),
        _ => None,
    }
}

/// Every transcript row's text, all nodes, one per line.
fn all_text(s: &State) -> String {
    s.tree
        .nodes
        .iter()
        .flat_map(|n| n.transcript.items.iter().map(|i| i.kind.text().to_string()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn root_text(s: &State) -> String {
    s.tree.nodes[0]
        .transcript
        .items
        .iter()
        .map(|i| i.kind.text().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn turn_results(s: &State) -> Vec<bool> {
    s.tree.nodes[0]
        .transcript
        .items
        .iter()
        .filter_map(|i| match &i.kind {
            ItemKind::TurnResult { ok, .. } => Some(*ok),
            _ => None,
        })
        .collect()
}

/// The recording's entries after the header: (dir, raw line).
fn recording(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).expect("the recording exists");
    let mut lines = text.lines();
    let header: Value = serde_json::from_str(lines.next().expect("a header")).unwrap();
    assert_eq!(header["switchboard_recording"], 1);
    assert_eq!(header["backend"], "claude");
    lines
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("recording entries are JSON");
            (
                v["dir"].as_str().unwrap().to_string(),
                v["line"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Our stdin lines, each checked against the bundled schema.
fn outbound(entries: &[(String, String)]) -> Vec<String> {
    let out: Vec<String> = entries
        .iter()
        .filter(|(d, _)| d == "out")
        .map(|(_, l)| l.clone())
        .collect();
    for l in &out {
        if let Err(e) = switchboard::schema::validate_claude_outbound_line(l) {
            panic!("outbound line outside the schema: {e}\n{l}");
        }
    }
    out
}

/// The reply body we sent for `request_id`.
fn reply_for(out: &[String], request_id: &str) -> Value {
    let found: Vec<Value> = out
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "control_response" && v["response"]["request_id"] == request_id)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "exactly one reply to {request_id}: {found:?}"
    );
    found[0]["response"]["response"].clone()
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_turn_answers_every_gate_kind() {
    let scratch = Scratch::new("walk");
    let mut h = start(&scratch);

    // 1. Bash permission: allow once.
    h.wait_until("the Bash permission", WAIT, |s| {
        active_kind(s) == Some("permission") && active_tool(s).as_deref() == Some("Bash")
    })
    .await;
    let bash_id = h.state().active_gate.clone().unwrap();
    let GateKind::Permission(p) = &h.state().active().unwrap().kind else {
        unreachable!()
    };
    assert_eq!(p.summary, "touch demo-output.txt");
    assert!(h.screen().contains("Permission · Bash"));
    h.key(KeyCode::Char('y'));
    assert!(h.state().gates.is_empty());

    // 2. The fan-out holds two gates at once: the reviewer's Edit and the helper's Grep hook.
    h.wait_until("the Edit permission and the Grep breakpoint", WAIT, |s| {
        s.gates.len() == 2
    })
    .await;
    let mut edit_id = None;
    let mut hook_id = None;
    let reason = "search tests/ instead";
    while let Some(g) = h.state().active().cloned() {
        match &g.kind {
            GateKind::Permission(p) => {
                assert_eq!(p.tool, "Edit");
                assert!(p.diff.is_some(), "an Edit gate shows its diff");
                let node = h.state().tree.resolve(Some(&g.node_key));
                assert_eq!(h.state().tree.nodes[node].name, "code-reviewer");
                edit_id = Some(g.id.clone());
                h.key(KeyCode::Char('a'));
            }
            GateKind::Breakpoint(b) => {
                assert_eq!(b.tool, "Grep");
                let node = h.state().tree.resolve(Some(&g.node_key));
                assert_eq!(
                    h.state().tree.nodes[node].depth,
                    2,
                    "the nested helper asks"
                );
                hook_id = Some(g.id.clone());
                h.key(KeyCode::Char('b'));
                h.type_text(reason);
                h.key(KeyCode::Enter);
            }
            other => panic!("unexpected gate {other:?}"),
        }
    }
    let (edit_id, hook_id) = (edit_id.unwrap(), hook_id.unwrap());

    // 3. AskUserQuestion: toggle Search then Auth (reverse order), confirm, pick page 2's first.
    h.wait_until("the questions", WAIT, |s| {
        active_kind(s) == Some("question")
    })
    .await;
    let ask_id = h.state().active_gate.clone().unwrap();
    let GateKind::Question(q) = h.state().active().unwrap().kind.clone() else {
        unreachable!()
    };
    assert_eq!(q.questions.len(), 2);
    assert!(q.questions[0].multi && !q.questions[1].multi);
    h.key(KeyCode::Char('3'));
    h.key(KeyCode::Char('1'));
    h.key(KeyCode::Enter);
    assert_eq!(h.state().gates.len(), 1, "Enter on page 1 does not submit");
    assert_eq!(h.state().active_ui().unwrap().page, 1);
    h.key(KeyCode::Enter);

    // 4. The fallback dialog: Enter completes with the highlighted option.
    h.wait_until("the dialog", WAIT, |s| active_kind(s) == Some("dialog"))
        .await;
    let dialog_id = h.state().active_gate.clone().unwrap();
    h.key(KeyCode::Enter);

    // 5. The ticket form: a title, a priority, then accept.
    h.wait_until("the elicitation", WAIT, |s| {
        active_kind(s) == Some("elicitation")
    })
    .await;
    let form_id = h.state().active_gate.clone().unwrap();
    h.key(KeyCode::Enter);
    assert!(
        h.state().active_ui().unwrap().error.is_some(),
        "the title is required"
    );
    h.key(KeyCode::Char(' '));
    h.type_text("Audit logging");
    h.key(KeyCode::Enter);
    h.key(KeyCode::Char('j'));
    h.key(KeyCode::Char(' '));
    h.key(KeyCode::Enter);
    assert!(h.state().gates.is_empty());

    // The turn ends with a summary that echoes every decision.
    h.wait_until("the end of the turn", WAIT, |s| !turn_results(s).is_empty())
        .await;
    let s = h.state();
    assert_eq!(turn_results(s), vec![true]);
    let root = root_text(s);
    for want in [
        "touch demo-output.txt",
        &format!("grep-helper's Grep: blocked by your hook ({reason})"),
        "Reviewer's edit of src/auth.rs",
        "Questions: Modules: Auth, Search; Rollout: Behind a flag",
        "Fallback dialog: you chose Retry with claude-opus-5",
        "Ticket form: accepted with",
        "Audit logging",
    ] {
        assert!(root.contains(want), "the summary lacks {want:?}:\n{root}");
    }
    // Our audit rows, one per answer.
    let all = all_text(s);
    for want in [
        "allowed once: Bash `touch demo-output.txt`",
        "allowed always (session rule): Edit",
        "blocked at breakpoint: Grep",
        "answered: ",
        "dialog completed: refusal_fallback_prompt dialog",
        "accepted: tickets:",
    ] {
        assert!(all.contains(want), "no audit row {want:?}:\n{all}");
    }
    assert_eq!(s.answered, 6);

    // The tree: three sub-agents, one nested, all completed.
    let subs: Vec<_> = s.tree.nodes.iter().skip(1).collect();
    assert_eq!(
        subs.len(),
        3,
        "{:?}",
        subs.iter().map(|n| &n.name).collect::<Vec<_>>()
    );
    assert_eq!(subs.iter().filter(|n| n.depth == 2).count(), 1);
    for n in &subs {
        assert_eq!(
            n.status,
            NodeStatus::Completed,
            "{} is {:?}",
            n.name,
            n.status
        );
    }

    h.quit().await;
    assert!(h.state().quitting);
    let (code, _, _) = h.state().session.exited.clone().expect("the agent exited");
    assert_eq!(code, Some(0));

    // The recording holds exactly our answers, and every line we wrote is in the schema.
    let entries = recording(&scratch.recording());
    let out = outbound(&entries);
    assert_eq!(
        reply_for(&out, &bash_id),
        json!({"behavior":"allow","updatedInput":{"command":"touch demo-output.txt","description":"Create a scratch file for notes"}})
    );
    let edit = reply_for(&out, &edit_id);
    assert_eq!(edit["behavior"], "allow");
    assert_eq!(edit["updatedPermissions"][0]["destination"], "session");
    assert_eq!(
        reply_for(&out, &hook_id),
        json!({"decision":"block","reason":reason})
    );
    let answers = format!(
        "\"answers\":{{{}:\"Auth, Search\",{}:\"Behind a flag\"}}",
        json_str(&q.questions[0].question),
        json_str(&q.questions[1].question)
    );
    assert!(
        out.iter()
            .any(|l| l.contains(&ask_id) && l.contains(&answers)),
        "no line with {answers}"
    );
    assert_eq!(
        reply_for(&out, &ask_id)["updatedInput"]["questions"][0]["options"][2]["label"],
        "Search",
        "the questions are echoed verbatim"
    );
    assert_eq!(
        reply_for(&out, &dialog_id),
        json!({"behavior":"completed","result":"Retry with claude-opus-5"})
    );
    assert!(out.iter().any(|l| l.contains(&form_id)
        && l.contains(r#"{"action":"accept","content":{"title":"Audit logging","priority":"low","notify":false}}"#)));
    // The first line we wrote is initialize, with the Grep breakpoint hook; then the prompt.
    let first: Value = serde_json::from_str(&out[0]).unwrap();
    assert_eq!(first["request"]["subtype"], "initialize");
    assert_eq!(
        first["request"]["hooks"]["PreToolUse"][0]["matcher"],
        "Grep"
    );
    assert!(out.iter().any(
        |l| l.contains(r#""type":"user""#) && l.contains("Add audit logging to the login flow")
    ));
    assert!(
        entries
            .iter()
            .any(|(d, l)| d == "note" && l.starts_with("agent exited"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_while_a_gate_is_pending() {
    let scratch = Scratch::new("interrupt");
    let mut h = start(&scratch);
    h.wait_until("the Bash permission", WAIT, |s| {
        active_kind(s) == Some("permission") && s.session.interruptible
    })
    .await;
    let id = h.state().active_gate.clone().unwrap();
    h.ctrl('c');
    assert_eq!(h.state().status_line.as_deref(), Some("interrupt sent"));
    h.wait_until("the gate withdrawn and the turn over", WAIT, |s| {
        s.gates.is_empty() && !turn_results(s).is_empty()
    })
    .await;
    let s = h.state();
    assert_eq!(
        turn_results(s),
        vec![false],
        "an interrupted turn is not ok"
    );
    assert!(s.closed_gates.contains(&id));
    assert!(
        root_text(s).contains("withdrawn by the agent: Bash `touch demo-output.txt`"),
        "{}",
        root_text(s)
    );
    h.quit().await;
    assert!(h.state().session.exited.is_some());
    let entries = recording(&scratch.recording());
    let out = outbound(&entries);
    assert!(
        out.iter().any(|l| l.contains(r#""subtype":"interrupt""#)),
        "the interrupt request was written"
    );
    assert!(
        !out.iter()
            .any(|l| l.contains("control_response") && l.contains(&id)),
        "a withdrawn gate is never answered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quit_with_a_gate_pending_denies_it() {
    let scratch = Scratch::new("quit");
    let mut h = start(&scratch);
    h.wait_until("the Bash permission", WAIT, |s| {
        active_kind(s) == Some("permission")
    })
    .await;
    let id = h.state().active_gate.clone().unwrap();
    h.ctrl('d');
    assert_eq!(
        h.state().overlay,
        Some(switchboard::core::state::Overlay::ConfirmQuit)
    );
    assert!(h.screen().contains("quit switchboard?"));
    h.quit().await;
    let s = h.state();
    assert!(s.quitting);
    assert!(s.gates.is_empty());
    assert!(s.session.exited.is_some(), "the agent was stopped");
    let entries = recording(&scratch.recording());
    let out = outbound(&entries);
    assert_eq!(
        reply_for(&out, &id),
        json!({"behavior":"deny","message":"switchboard exited"})
    );
    let reply_at = entries
        .iter()
        .position(|(d, l)| d == "out" && l.contains(&id))
        .unwrap();
    let exit_at = entries
        .iter()
        .position(|(d, l)| d == "note" && l.starts_with("agent exited"))
        .expect("the agent exit is noted");
    assert!(
        reply_at < exit_at,
        "the deny is written before the agent stops"
    );
}

/// The live backend reads the file an Edit names (beneath the cwd): the card numbers the
/// lines as in the file, with its context, not from 1 within the snippet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_card_numbers_lines_as_in_the_file() {
    let scratch = Scratch::new("edit-lines");
    let src = scratch.0.join("src");
    std::fs::create_dir_all(&src).unwrap();
    let mut file: String = (1..=20).map(|i| format!("// filler {i}\n")).collect();
    file.push_str("fn login() {\n    let session = Session::start(&user)?;\n    Ok(session)\n}\n");
    std::fs::write(src.join("auth.rs"), &file).unwrap();
    let mut h = start(&scratch);
    h.wait_until("the Bash permission", WAIT, |s| {
        active_tool(s).as_deref() == Some("Bash")
    })
    .await;
    h.key(KeyCode::Char('y'));
    h.wait_until("the Edit permission", WAIT, |s| {
        s.gates
            .iter()
            .any(|g| matches!(&g.kind, GateKind::Permission(p) if p.tool == "Edit"))
    })
    .await;
    let diff = h
        .state()
        .gates
        .iter()
        .find_map(|g| match &g.kind {
            GateKind::Permission(p) if p.tool == "Edit" => p.diff.clone(),
            _ => None,
        })
        .expect("the Edit card has a diff");
    let lines: Vec<String> = diff
        .lines
        .iter()
        .map(|l| format!("{:?} {:?} {}", l.old_no, l.new_no, l.text))
        .collect();
    // Four lines inserted after line 22 of 24, three lines of the file's context before.
    assert_eq!(lines[2], "None None @@ -20,5 +20,9 @@", "{lines:#?}");
    for want in [
        "Some(21) Some(21) fn login() {",
        "None Some(23)     audit::record(AuditEvent::Login {",
        "Some(23) Some(27)     Ok(session)",
    ] {
        assert!(lines.iter().any(|l| l == want), "{want:?} in {lines:#?}");
    }
    // `c` on the card copies a diff that `patch` applies to the file: the edit's result.
    for _ in 0..4 {
        if matches!(&h.state().active().unwrap().kind, GateKind::Permission(p) if p.tool == "Edit")
        {
            break;
        }
        h.key(KeyCode::Char(']'));
    }
    assert_eq!(h.state().focus, switchboard::core::state::Focus::Gate);
    h.key(KeyCode::Char('c'));
    let copied = h.app.copies.last().cloned().expect("the diff was copied");
    let patch_file = scratch.0.join("card.patch");
    std::fs::write(&patch_file, &copied).unwrap();
    let out = scratch.0.join("patched.rs");
    let o = std::process::Command::new("patch")
        .arg("-s")
        .arg("-o")
        .arg(&out)
        .arg(src.join("auth.rs"))
        .arg(&patch_file)
        .output()
        .expect("`patch` is installed");
    assert!(o.status.success(), "{o:?}\n{copied}");
    let want = file.replace(
        "    Ok(session)\n}",
        "    audit::record(AuditEvent::Login {\n        user: user.id,\n        session: session.id(),\n    });\n    Ok(session)\n}",
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), want, "{copied}");
    h.ctrl('d');
    h.quit().await;
}
