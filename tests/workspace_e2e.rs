//! Workspace end-to-end: ONE switchboard app (`Headless`: the TUI's App, reducer, effects and
//! backends, with a `TestBackend` screen) supervising several REAL agents at once: the `claude`
//! CLI and claude-agent-acp, each against its own fake Anthropic API
//! (`tests/support/fake_model.rs`, scenarios in `fixtures/scenarios/`), and our scripted demo
//! agent. What they prove (issue #11, Acceptance):
//!
//! - gates of three agents are answered from the one inbox, out of order, by batch allow, batch
//!   deny with a message and a question card, and each agent gets exactly its own answers;
//! - one agent killed mid-gate ends only its session: the others' gates stay answerable;
//! - a session flooding 100k frames cannot starve another session's gate.
//!
//! Skipped with a note when the pinned agents are not installed (`npm ci --prefix tests/peers`),
//! unless `CI=true`.

#[path = "support/common.rs"]
mod common;
#[path = "support/fake_model.rs"]
mod fake_model;
#[path = "support/workspace.rs"]
mod workspace;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard::app::headless::Headless;
use switchboard::app::{DRAIN_MAX, DRAIN_TIME, WorkspaceObserver};
use switchboard::backend::Backend;
use switchboard::core::gate::{Decision, GateKind};
use switchboard::core::input::KeyCode;
use switchboard::core::msg::{BackendEvent, Command, Stamped};
use switchboard::core::rules::Rules;
use switchboard::core::state::{Focus, Overlay, SessionId, State};
use switchboard::core::transcript::ItemKind;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use fake_model::ToolResult;
use switchboard::workspace::manifest::ManifestSink;
use workspace::{
    Agent, assert_one_reply_each, assert_validates, context, session, start_workspace, wait,
};

/// Starting three real agents on a loaded 2-core machine takes a while; a gate or a turn after
/// that is quick.
const START: Duration = Duration::from_secs(60);
const STEP: Duration = Duration::from_secs(20);

const DENY_MESSAGE: &str = "Not in this directory, please.";

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Decisions the app reported to its workspace observer: (session, gate id, decision).
type Decisions = Arc<Mutex<Vec<(SessionId, String, Decision)>>>;

/// The workspace manifest writer, plus the decision feed kept for the assertions.
struct Seen(Decisions, ManifestSink);

impl WorkspaceObserver for Seen {
    fn session_opened(
        &mut self,
        id: SessionId,
        name: &str,
        backend: switchboard::core::BackendKind,
        at: u64,
    ) -> Result<(), String> {
        WorkspaceObserver::session_opened(&mut self.1, id, name, backend, at)
    }
    fn session_recording(&mut self, id: SessionId, path: &str) -> Result<(), String> {
        WorkspaceObserver::session_recording(&mut self.1, id, path)
    }
    fn session_ended(&mut self, id: SessionId, code: Option<i32>, at: u64) -> Result<(), String> {
        WorkspaceObserver::session_ended(&mut self.1, id, code, at)
    }
    fn decision(
        &mut self,
        id: SessionId,
        gate_id: &str,
        decision: &Decision,
        by: &str,
        at: u64,
    ) -> Result<(), String> {
        self.0
            .lock()
            .unwrap()
            .push((id, gate_id.to_string(), decision.clone()));
        WorkspaceObserver::decision(&mut self.1, id, gate_id, decision, by, at)
    }
    fn session_rule(
        &mut self,
        id: SessionId,
        spec: &switchboard::core::rules::RuleSpec,
    ) -> Result<(), String> {
        WorkspaceObserver::session_rule(&mut self.1, id, spec)
    }
    fn path(&self) -> Option<std::path::PathBuf> {
        WorkspaceObserver::path(&self.1)
    }
}

fn pending(s: &State, id: SessionId) -> Vec<String> {
    session(s, id).gates.iter().map(|g| g.id.clone()).collect()
}

fn turn_results(s: &State, id: SessionId) -> usize {
    session(s, id).tree.nodes[0]
        .transcript
        .items
        .iter()
        .filter(|i| matches!(i.kind, ItemKind::TurnResult { .. }))
        .count()
}

fn audits(s: &State, id: SessionId) -> Vec<String> {
    session(s, id)
        .tree
        .nodes
        .iter()
        .flat_map(|n| n.transcript.items.iter())
        .filter_map(|i| match &i.kind {
            ItemKind::Audit { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// The tool_result `agent`'s model received for `tool_use_id` (panics with the traffic if none).
fn model_result(a: &Agent, tool_use_id: &str) -> ToolResult {
    a.model()
        .tool_results()
        .into_iter()
        .find(|t| t.tool_use_id == tool_use_id)
        .unwrap_or_else(|| {
            panic!(
                "{}'s model never received a tool_result for {tool_use_id}; requests:\n{}",
                a.name,
                a.model().dump()
            )
        })
}

/// The ids of every tool_result `agent`'s model received.
fn result_ids(a: &Agent) -> Vec<String> {
    a.model()
        .tool_results()
        .into_iter()
        .map(|t| t.tool_use_id)
        .collect()
}

/// Open the inbox (from wherever the keyboard is) with the cursor on `gate` of `sid`; returns
/// its row.
fn inbox_to(h: &mut Headless, sid: SessionId, gate: &str) -> usize {
    if h.state().overlay != Some(Overlay::Inbox) {
        h.key(KeyCode::Char('I'));
    }
    if h.state().overlay != Some(Overlay::Inbox) {
        panic!("`I` does not open the inbox\n{}", h.screen());
    }
    let rows = switchboard::core::update::workspace::inbox_refs(h.state());
    let row = rows
        .iter()
        .position(|r| r.session == sid && r.id == gate)
        .unwrap_or_else(|| panic!("gate {gate} of {sid} is not in the inbox: {rows:?}"));
    h.key(KeyCode::Home);
    for _ in 0..row {
        h.key(KeyCode::Down);
    }
    assert_eq!(h.state().inbox.cursor, row);
    row
}

// ---------------------------------------------------------------------------------------------
// 1. Three real agents at once, answered from the inbox out of order
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_real_agents_answered_from_the_inbox_out_of_order() {
    const T: &str = "three";
    let Some(bash) = Agent::claude(T, "bash", "bash_write", "BASH_WRITE please").await else {
        return;
    };
    let Some(ask) = Agent::claude(T, "ask", "pty_ask_single", "PTY_ASK which modules?").await
    else {
        return;
    };
    let Some(acp) = Agent::acp(T, "acp", "acp_bash", "BASH_ALLOW").await else {
        return;
    };
    let mut agents = vec![bash, ask, acp];
    let mut h = start_workspace(&mut agents);
    let seen: Decisions = Arc::default();
    let manifest_path = agents[0].root.join("workspace.json");
    let writer = ManifestSink::create(&manifest_path, 0).expect("manifest");
    h.app.observe(Box::new(Seen(seen.clone(), writer)));
    // Off the prompt, as a user browsing the tree: letters are commands.
    h.app.state.focus = Focus::Tree;
    let [bash, ask, acp] = [0, 1, 2].map(|i| agents[i].sid());

    wait(
        &mut h,
        &agents,
        "a gate in each of the three sessions",
        START,
        |s| {
            [bash, ask, acp]
                .iter()
                .all(|id| !session(s, *id).gates.is_empty())
        },
    )
    .await;
    let gate_of = |s: &State, id: SessionId| -> String {
        let p = pending(s, id);
        assert_eq!(p.len(), 1, "one gate in {id}: {p:?}");
        p[0].clone()
    };
    let (g_bash, g_ask, g_acp) = (
        gate_of(h.state(), bash),
        gate_of(h.state(), ask),
        gate_of(h.state(), acp),
    );
    {
        let s = h.state();
        let kind = |id: SessionId, g: &str| session(s, id).gate(g).unwrap().kind.clone();
        assert!(matches!(kind(bash, &g_bash), GateKind::Permission(p) if p.tool == "Bash"));
        assert!(matches!(kind(ask, &g_ask), GateKind::Question(_)));
        assert!(
            matches!(kind(acp, &g_acp), GateKind::Permission(p) if p.options.iter().any(|o| o.kind == "allow_once"))
        );
    }

    // Answer in the REVERSE of the inbox order (oldest first), so never in arrival order.
    let order: Vec<SessionId> = switchboard::core::update::workspace::inbox_refs(h.state())
        .into_iter()
        .map(|r| r.session)
        .rev()
        .collect();
    assert_eq!(order.len(), 3, "three gates in the inbox");
    let mut answered = Vec::new();
    for sid in order {
        if sid == bash {
            // Deny with a message: mark it, `n`, type, Enter.
            inbox_to(&mut h, bash, &g_bash);
            h.key(KeyCode::Char(' '));
            h.key(KeyCode::Char('n'));
            h.type_text(DENY_MESSAGE);
            h.key(KeyCode::Enter);
        } else if sid == acp {
            // Batch allow once: mark it, `y`.
            inbox_to(&mut h, acp, &g_acp);
            h.key(KeyCode::Char(' '));
            h.key(KeyCode::Char('y'));
        } else {
            // The question opens one by one: Enter on it, then answer in its card.
            inbox_to(&mut h, ask, &g_ask);
            h.key(KeyCode::Enter);
            assert_eq!(h.state().focus, Focus::Gate, "Enter opens the card");
            assert_eq!(h.state().shown().id, ask, "the question's session is shown");
            h.key(KeyCode::Char('1')); // Auth
            h.key(KeyCode::Char('2')); // Billing
            h.key(KeyCode::Enter);
        }
        answered.push(sid);
        // Exactly that one is gone; the others still wait.
        for (id, g) in [(bash, &g_bash), (ask, &g_ask), (acp, &g_acp)] {
            let want: Vec<String> = if answered.contains(&id) {
                vec![]
            } else {
                vec![g.clone()]
            };
            assert_eq!(
                pending(h.state(), id),
                want,
                "pending in {id} after answering {answered:?}\n{}",
                h.screen()
            );
        }
    }

    // Every agent finishes its turn with the answer it got.
    wait(&mut h, &agents, "the three turns to end", STEP, |s| {
        [bash, ask, acp].iter().all(|id| turn_results(s, *id) >= 1)
    })
    .await;
    let (a_bash, a_ask, a_acp) = (&agents[0], &agents[1], &agents[2]);

    // The Bash CLI: denied, the model got the message, nothing ran.
    let tr = model_result(a_bash, "toolu_bash_1");
    assert!(
        tr.is_error && tr.text.contains(DENY_MESSAGE),
        "bash got the deny message: {tr:?}"
    );
    assert!(
        !a_bash.cwd.join("created.txt").exists(),
        "a denied command ran"
    );
    // The asking CLI: the model got the answer and nothing else.
    let tr = model_result(a_ask, "toolu_pty_ask");
    assert!(
        !tr.is_error && tr.text.contains("Auth, Billing"),
        "ask got its answer: {tr:?}"
    );
    let fired = a_ask.model().fired_rules();
    assert!(
        fired.contains(&"answered".to_string()) && !fired.contains(&"answered_otherwise".into()),
        "ask's model rules: {fired:?}"
    );
    // The ACP agent: allowed once, the command ran in its own cwd only.
    let tr = model_result(a_acp, "toolu_acp_allow");
    assert!(!tr.is_error, "acp's Bash ran: {tr:?}");
    assert!(a_acp.cwd.join("allowed.txt").exists(), "allow once ran it");
    // Nobody got another's answer.
    assert_eq!(result_ids(a_bash), vec!["toolu_bash_1"]);
    assert_eq!(result_ids(a_ask), vec!["toolu_pty_ask"]);
    assert_eq!(result_ids(a_acp), vec!["toolu_acp_allow"]);
    for a in &agents {
        let texts: Vec<String> = a
            .model()
            .tool_results()
            .into_iter()
            .map(|t| t.text)
            .collect();
        let own_deny = a.name == "bash";
        assert_eq!(
            texts.iter().any(|t| t.contains(DENY_MESSAGE)),
            own_deny,
            "{}: the deny message reached only the denied agent: {texts:?}",
            a.name
        );
        a.model().assert_no_unexpected();
    }

    // One audit row per session; one decision per gate, each to its own session.
    let s = h.state();
    assert_eq!(
        audits(s, bash),
        vec![format!(
            "denied (inbox batch of 1): Bash `touch created.txt` — {DENY_MESSAGE}"
        )]
    );
    assert_eq!(audits(s, ask).len(), 1, "{:?}", audits(s, ask));
    assert_eq!(audits(s, acp).len(), 1, "{:?}", audits(s, acp));
    let mut decisions = seen.lock().unwrap().clone();
    decisions.sort_by_key(|d| d.0);
    assert_eq!(
        decisions
            .iter()
            .map(|d| (d.0, d.1.clone()))
            .collect::<Vec<_>>(),
        vec![
            (bash, g_bash.clone()),
            (ask, g_ask.clone()),
            (acp, g_acp.clone())
        ],
        "one decision per gate, sent to its own session"
    );
    assert_eq!(
        decisions[0].2,
        Decision::Deny {
            message: DENY_MESSAGE.into(),
            interrupt: false
        }
    );
    assert!(matches!(
        &decisions[2].2,
        Decision::Option { allow: true, .. }
    ));

    // Each session records its own file.
    for a in &agents {
        assert_eq!(
            session(h.state(), a.sid()).session.recording.as_deref(),
            Some(a.record.display().to_string().as_str()),
            "{}'s recording",
            a.name
        );
    }

    h.quit().await;
    for id in [bash, ask, acp] {
        assert!(
            session(h.state(), id).session.exited.is_some(),
            "{id} stopped on quit"
        );
    }

    // On the wire: exactly one reply per request, and the right one to each agent.
    let replies = assert_one_reply_each(a_bash);
    let perm = replies
        .iter()
        .find(|(q, _)| q["request"]["subtype"] == "can_use_tool")
        .expect("bash's can_use_tool");
    assert_eq!(
        perm.1["response"]["response"],
        json!({"behavior":"deny","message":DENY_MESSAGE})
    );
    let replies = assert_one_reply_each(a_ask);
    let perm = replies
        .iter()
        .find(|(q, _)| q["request"]["subtype"] == "can_use_tool")
        .expect("ask's can_use_tool");
    assert_eq!(
        perm.1["response"]["response"]["updatedInput"]["answers"],
        json!({"Which modules should get audit logging?": "Auth, Billing"})
    );
    let replies = assert_one_reply_each(a_acp);
    let perms: Vec<&(Value, Value)> = replies
        .iter()
        .filter(|(q, _)| q["method"] == "session/request_permission")
        .collect();
    assert_eq!(perms.len(), 1, "one ACP permission request");
    let (req, ans) = perms[0];
    let chosen = req["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["optionId"] == ans["result"]["outcome"]["optionId"])
        .unwrap_or_else(|| panic!("acp's answer names no offered option: {ans}"));
    assert_eq!(chosen["kind"], "allow_once");

    // Every recording validates clean.
    for a in &agents {
        assert_validates(a);
    }
    // The workspace manifest lists the three sessions with these recordings and the three
    // decisions in the order they were made (deny, batch allow, the question), and validates
    // against every recording.
    // Dropping the sink writes its last state.
    drop(h.app.observer.take());
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    let sessions = doc["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 3, "{doc}");
    for a in &agents {
        assert!(
            sessions
                .iter()
                .any(|s| s["recording"] == a.record.display().to_string()),
            "{} missing from {doc}",
            a.name
        );
    }
    // In the order they were made, each with its session, kind and who decided.
    let made: Vec<(SessionId, String)> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|d| (d.0, d.1.clone()))
        .collect();
    let listed: Vec<(SessionId, String)> = doc["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                SessionId(d["session"].as_u64().unwrap() as u32),
                d["gate_id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(listed, made, "{doc}");
    let mut by: Vec<(u64, &str, &str)> = doc["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["session"].as_u64().unwrap(),
                d["decision"].as_str().unwrap(),
                d["by"].as_str().unwrap(),
            )
        })
        .collect();
    by.sort();
    assert_eq!(
        by,
        vec![
            (0, "deny", "batch"),
            (1, "answer", "human"),
            (2, "option_allow", "batch")
        ],
        "{doc}"
    );
    let report = switchboard::replay::validate_manifest::validate_manifest(&manifest_path);
    assert!(
        report.problems() == 0 && !report.unreadable(),
        "validate MANIFEST: {report:?}"
    );

    for a in agents {
        if let Some(m) = a.model {
            m.shutdown().await;
        }
        let _ = std::fs::remove_dir_all(&a.root);
    }
}

// ---------------------------------------------------------------------------------------------
// 2. One agent killed mid-gate: only its session ends
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_one_agent_mid_gate_ends_only_its_session() {
    const T: &str = "kill";
    let Some(doomed) = Agent::claude(T, "doomed", "bash_write", "BASH_WRITE please").await else {
        return;
    };
    let Some(survivor) = Agent::claude(T, "survivor", "bash_write", "BASH_WRITE too").await else {
        return;
    };
    let demo = Agent::demo(T, "demo");
    let mut agents = vec![doomed, survivor, demo];
    let mut h = start_workspace(&mut agents);
    h.app.state.focus = Focus::Tree;
    let [doomed, survivor, demo] = [0, 1, 2].map(|i| agents[i].sid());

    wait(&mut h, &agents, "a gate in each session", START, |s| {
        [doomed, survivor, demo]
            .iter()
            .all(|id| !session(s, *id).gates.is_empty())
    })
    .await;
    let pid = session(h.state(), doomed)
        .session
        .pid
        .expect("the doomed agent's pid");
    // SAFETY: kill has no memory preconditions; `pid` is the agent we started.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) }, 0);
    let killed = Instant::now();

    wait(&mut h, &agents, "the killed session to exit", STEP, |s| {
        session(s, doomed).session.exited.is_some()
    })
    .await;
    // Give anything wrongly shared with the dead session (a shutdown, a closed channel) time
    // to reach the others before looking at them.
    let settle = Instant::now() + Duration::from_millis(300);
    while Instant::now() < settle {
        if let Ok(Some(m)) =
            tokio::time::timeout(Duration::from_millis(20), h.app.next_backend()).await
        {
            h.app.apply(m);
        }
    }
    let s = h.state();
    assert!(
        session(s, doomed).gates.is_empty(),
        "the dead agent's gate is closed"
    );
    assert!(
        session(s, doomed).status_label().starts_with("exited"),
        "{}",
        session(s, doomed).status_label()
    );
    assert!(
        audits(s, doomed)
            .iter()
            .any(|a| a.starts_with("closed, the agent exited")),
        "{:?}",
        audits(s, doomed)
    );
    for id in [survivor, demo] {
        assert_eq!(
            session(s, id).gates.len(),
            1,
            "{id} still waits on its gate"
        );
        assert!(session(s, id).session.exited.is_none(), "{id} still runs");
    }
    assert_eq!(s.pending_total(), 2, "the inbox holds the survivors' gates");
    assert!(
        killed.elapsed() < Duration::from_secs(10),
        "the exit took {:?}",
        killed.elapsed()
    );

    // The others answer from the inbox as usual: Enter opens each card, `y` allows once.
    let g_survivor = pending(h.state(), survivor)[0].clone();
    let g_demo = pending(h.state(), demo)[0].clone();
    for (sid, g) in [(demo, &g_demo), (survivor, &g_survivor)] {
        inbox_to(&mut h, sid, g);
        h.key(KeyCode::Enter);
        assert_eq!(h.state().shown().id, sid);
        h.key(KeyCode::Char('y'));
        assert!(!pending(h.state(), sid).contains(g), "{g} answered");
    }
    wait(
        &mut h,
        &agents,
        "the survivors to act on their answers",
        STEP,
        |s| turn_results(s, survivor) >= 1 && session(s, demo).gates.iter().any(|g| g.id != g_demo),
    )
    .await;
    let tr = model_result(&agents[1], "toolu_bash_1");
    assert!(!tr.is_error, "the survivor's Bash ran: {tr:?}");
    assert!(agents[1].cwd.join("created.txt").exists());
    assert!(
        agents[0].model().tool_results().is_empty(),
        "the dead agent never got an answer"
    );

    h.quit().await;
    assert!(!workspace::alive(pid), "the killed agent is gone");
    // The survivor got one reply per request, the demo agent one to its Bash request (what it
    // asks after quitting answered the rest races the shutdown), the dead agent none: nothing
    // was written to a dead agent. All three validate (the dead agent's unanswered request is
    // informational: agent-exited).
    assert_one_reply_each(&agents[1]);
    let reply = workspace::single_reply(&agents[2], &g_demo);
    assert_eq!(
        reply["response"]["response"]["behavior"], "allow",
        "{reply}"
    );
    let dead = workspace::requests_and_replies(agents[0].wire, &agents[0].record);
    let perm = dead
        .iter()
        .find(|(q, _)| q["request"]["subtype"] == "can_use_tool")
        .expect("the dead agent's can_use_tool");
    assert!(
        perm.1.is_empty(),
        "a reply went to the dead agent: {:?}",
        perm.1
    );
    for a in &agents {
        assert_validates(a);
    }
    for a in agents {
        if let Some(m) = a.model {
            m.shutdown().await;
        }
        let _ = std::fs::remove_dir_all(&a.root);
    }
}

// ---------------------------------------------------------------------------------------------
// 3. A flood in one session cannot starve another session's gate
// ---------------------------------------------------------------------------------------------

/// The most frames the flood sends: it runs until the test stops it (after the answer came
/// back), so however slow a loaded machine makes the answer, the flood is still going then.
const FLOOD: usize = 2_000_000;
/// Threads writing the flood at once, as fast as the bounded channel takes frames.
const WRITERS: usize = 2;

/// A hostile source: transcript rows, as fast as the channel takes them, from several writers,
/// once `go` is notified, until `stop`. It stays open afterwards (until shut down), like an
/// agent that flooded and lives on.
struct Flood {
    sent: Arc<AtomicUsize>,
    go: Arc<tokio::sync::Notify>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    /// Writers that have finished (all their frames handed to the channel).
    done: Arc<AtomicUsize>,
}

/// Counts a writer as finished however it leaves.
struct Finished(Arc<AtomicUsize>);

impl Drop for Finished {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl Backend for Flood {
    fn kind(&self) -> switchboard::core::BackendKind {
        switchboard::core::BackendKind::Claude
    }
    fn root_name(&self) -> String {
        "flood".into()
    }
    fn reply_check(&self) -> switchboard::core::state::ReplyCheck {
        switchboard::backend::claude::session::reply_check
    }
    fn start(
        self: Box<Self>,
        events: mpsc::Sender<Stamped>,
        mut commands: mpsc::UnboundedReceiver<Command>,
    ) -> JoinHandle<()> {
        tokio::spawn(async move {
            self.go.notified().await;
            let row = BackendEvent::Item {
                node: None,
                op: switchboard::core::transcript::ItemOp::Push(ItemKind::Assistant {
                    text: "flood ".repeat(40),
                    streaming: false,
                    aborted: false,
                }),
            };
            // Plain threads blocking on the channel: no task scheduling between frames.
            let writers: Vec<std::thread::JoinHandle<()>> = (0..WRITERS)
                .map(|_| {
                    let (events, row, sent) = (events.clone(), row.clone(), self.sent.clone());
                    let (stop, done) = (self.stop.clone(), self.done.clone());
                    std::thread::spawn(move || {
                        let _done = Finished(done);
                        for _ in 0..FLOOD / WRITERS {
                            if stop.load(Ordering::SeqCst) {
                                return;
                            }
                            let frame = Stamped {
                                at_ms: 0,
                                event: row.clone(),
                            };
                            if events.blocking_send(frame).is_err() {
                                return;
                            }
                            sent.fetch_add(1, Ordering::SeqCst);
                        }
                    })
                })
                .collect();
            drop(events);
            let _ = tokio::task::spawn_blocking(move || {
                for w in writers {
                    let _ = w.join();
                }
            })
            .await;
            while let Some(c) = commands.recv().await {
                if matches!(c, Command::Shutdown) {
                    break;
                }
            }
        })
    }
}

/// One turn of the terminal loop (`app::term`): wait briefly for a backend message, apply a
/// bounded slice of what is queued, draw.
async fn tui_turn(h: &mut Headless) {
    if let Ok(Some(m)) = tokio::time::timeout(Duration::from_millis(5), h.app.next_backend()).await
    {
        h.app.apply(m);
    }
    h.app.drain_backend_for(DRAIN_MAX, DRAIN_TIME);
    h.draw();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_session_cannot_starve_another_sessions_gate() {
    // The flood is the workspace's FIRST source (the one a merge polling in order would
    // favour); the demo agent joins second and opens its Bash gate before the flood starts.
    let sent = Arc::new(AtomicUsize::new(0));
    let go = Arc::new(tokio::sync::Notify::new());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let source = Flood {
        sent: sent.clone(),
        go: go.clone(),
        stop: stop.clone(),
        done: done.clone(),
    };
    let mut h = Headless::start(Box::new(source), workspace::WIDTH, workspace::HEIGHT);
    let flood = h.app.first_session();
    let mut agents = vec![Agent::demo("flood", "demo")];
    let backend = agents[0].backend.take().expect("the demo's backend");
    let demo = h.app.add_session("demo", backend, Rules::default());
    agents[0].session = Some(demo);
    h.app.state.focus = Focus::Tree;
    wait(&mut h, &agents, "the demo agent's Bash gate", STEP, |s| {
        !session(s, demo).gates.is_empty()
    })
    .await;
    let g_demo = pending(h.state(), demo)[0].clone();
    go.notify_one();

    let flood_rows = |s: &State| session(s, flood).tree.nodes[0].transcript.len();
    // The flood is under way.
    let t = Instant::now();
    while flood_rows(h.state()) < 5_000 {
        assert!(t.elapsed() < STEP, "the flood never arrived");
        tui_turn(&mut h).await;
    }

    // The key: `g` shows the oldest gate (the demo's), `y` allows it once.
    h.key(KeyCode::Char('g'));
    assert_eq!(h.state().active_gate.as_deref(), Some(g_demo.as_str()));
    h.key(KeyCode::Char('y'));
    let key = Instant::now();
    assert!(pending(h.state(), demo).is_empty(), "the gate is answered");
    // The demo agent acts on the answer (its next gates open) while the flood goes on.
    loop {
        tui_turn(&mut h).await;
        if session(h.state(), demo)
            .gates
            .iter()
            .any(|g| g.id != g_demo)
        {
            break;
        }
        assert!(
            key.elapsed() < Duration::from_secs(1),
            "the demo agent's answer took over 1 s under the flood ({} frames applied)\n{}",
            flood_rows(h.state()),
            context(&mut h, &agents)
        );
    }
    let took = key.elapsed();
    let sent_then = sent.load(Ordering::SeqCst);
    assert_eq!(
        done.load(Ordering::SeqCst),
        0,
        "the flood was over before the answer came back ({took:?}): not a test of starvation"
    );
    assert!(took < Duration::from_secs(1), "{took:?}");
    eprintln!("answer round trip under the flood: {took:?}, {sent_then} frames sent by then");

    // The flood stops; it ends whole: every frame sent is applied, none lost.
    stop.store(true, Ordering::SeqCst);
    let t = Instant::now();
    while done.load(Ordering::SeqCst) < WRITERS
        || flood_rows(h.state()) < sent.load(Ordering::SeqCst)
    {
        assert!(t.elapsed() < STEP, "the flood did not end");
        tui_turn(&mut h).await;
    }
    assert_eq!(flood_rows(h.state()), sent.load(Ordering::SeqCst));
    h.quit().await;
    let reply = workspace::single_reply(&agents[0], &g_demo);
    assert_eq!(
        reply["response"]["response"]["behavior"], "allow",
        "{reply}"
    );
    assert_validates(&agents[0]);
    let _ = std::fs::remove_dir_all(&agents[0].root);
}
