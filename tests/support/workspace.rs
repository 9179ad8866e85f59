//! Workspace end-to-end support: real agents (the `claude` CLI and claude-agent-acp against the
//! fake model, our scripted demo agent) started as sessions of ONE `Headless` app, and the
//! checks every session's recording must pass.
//!
//! Include next to the fake model and the common helpers:
//! ```ignore
//! #[path = "support/common.rs"] mod common;
//! #[path = "support/fake_model.rs"] mod fake_model;
//! #[path = "support/workspace.rs"] mod workspace;
//! ```

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use switchboard::app::headless::Headless;
use switchboard::backend::Backend;
use switchboard::backend::acp::session::{AcpBackend, AcpConfig};
use switchboard::backend::claude::session::{ClaudeBackend, ClaudeConfig};
use switchboard::core::rules::Rules;
use switchboard::core::state::{SessionId, State};

use crate::common::{CLAUDE_CLI, manifest, require_or_skip};
use crate::fake_model::{CLAUDE_ENV_REMOVE, FakeModel, Scenario, claude_bin, claude_env, temp_dir};

/// Screen size of the workspace under test.
pub const WIDTH: u16 = 140;
pub const HEIGHT: u16 = 40;

/// What speaks on a session's pipes, for the recording checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// Claude Code stream-json (the real CLI or the demo agent).
    Claude,
    /// ACP JSON-RPC (claude-agent-acp).
    Acp,
}

/// One agent of the workspace, ready to start: its backend, its fake model (if it talks to
/// one), its directories and its recording.
pub struct Agent {
    pub name: String,
    pub wire: Wire,
    pub backend: Option<Box<dyn Backend>>,
    pub model: Option<FakeModel>,
    pub root: PathBuf,
    pub cwd: PathBuf,
    pub record: PathBuf,
    /// Set once the agent is a session of the app.
    pub session: Option<SessionId>,
}

impl Agent {
    fn dirs(tag: &str) -> (PathBuf, PathBuf, PathBuf) {
        let root = temp_dir(&format!("ws-{tag}"));
        let cwd = root.join("cwd");
        let home = root.join("home");
        std::fs::create_dir_all(&cwd).expect("create cwd");
        std::fs::create_dir_all(&home).expect("create home");
        (root, cwd, home)
    }

    /// Environment for an agent that runs the real CLI against `model`.
    fn env(home: &Path, model: &FakeModel) -> Vec<(String, Option<String>)> {
        let mut env: Vec<(String, Option<String>)> = CLAUDE_ENV_REMOVE
            .iter()
            .map(|k| (k.to_string(), None))
            .collect();
        env.extend(
            claude_env(home, &model.base_url())
                .into_iter()
                .map(|(k, v)| (k, Some(v))),
        );
        env
    }

    /// The real `claude` CLI against its own fake model playing `scenario`, sent `prompt` at
    /// start. `None` (under the skip rule) when the pinned CLI is missing.
    pub async fn claude(test: &str, name: &str, scenario: &str, prompt: &str) -> Option<Agent> {
        let bin = require_or_skip(test, CLAUDE_CLI, claude_bin())?;
        let (root, cwd, home) = Agent::dirs(&format!("{test}-{name}"));
        let model = FakeModel::start(Scenario::load(scenario)).await;
        let record = root.join("recording.jsonl");
        let config = ClaudeConfig {
            program: bin,
            cwd: cwd.clone(),
            env: Agent::env(&home, &model),
            record: Some(record.clone()),
            prompt: Some(prompt.to_string()),
            ..ClaudeConfig::default()
        };
        Some(Agent {
            name: name.to_string(),
            wire: Wire::Claude,
            backend: Some(Box::new(ClaudeBackend { config })),
            model: Some(model),
            root,
            cwd,
            record,
            session: None,
        })
    }

    /// The real claude-agent-acp (driving the real CLI) against its own fake model.
    pub async fn acp(test: &str, name: &str, scenario: &str, prompt: &str) -> Option<Agent> {
        let acp = require_or_skip(
            test,
            "claude-agent-acp (npm ci --prefix tests/peers)",
            acp_bin(),
        )?;
        let claude = require_or_skip(test, CLAUDE_CLI, claude_bin())?;
        let (root, cwd, home) = Agent::dirs(&format!("{test}-{name}"));
        let model = FakeModel::start(Scenario::load(scenario)).await;
        let record = root.join("recording.jsonl");
        let mut env = Agent::env(&home, &model);
        env.push((
            "CLAUDE_CODE_EXECUTABLE".into(),
            Some(claude.display().to_string()),
        ));
        env.push(("IS_SANDBOX".into(), Some("1".into())));
        let config = AcpConfig {
            program: acp,
            cwd: cwd.clone(),
            record: Some(record.clone()),
            prompt: Some(prompt.to_string()),
            env,
            ..AcpConfig::default()
        };
        Some(Agent {
            name: name.to_string(),
            wire: Wire::Acp,
            backend: Some(Box::new(AcpBackend { config })),
            model: Some(model),
            root,
            cwd,
            record,
            session: None,
        })
    }

    /// Our scripted stream-json agent (`switchboard demo-agent`), fast pacing; its first gate
    /// is a Bash permission for `touch demo-output.txt`.
    pub fn demo(test: &str, name: &str) -> Agent {
        let (root, cwd, _) = Agent::dirs(&format!("{test}-{name}"));
        let record = root.join("recording.jsonl");
        let config = ClaudeConfig {
            program: env!("CARGO_BIN_EXE_switchboard").into(),
            prefix_args: vec!["demo-agent".into()],
            cwd: cwd.clone(),
            prompt: Some("Add audit logging to the login flow".into()),
            record: Some(record.clone()),
            env: vec![("SWITCHBOARD_DEMO_FAST".into(), Some("1".into()))],
            ..ClaudeConfig::default()
        };
        Agent {
            name: name.to_string(),
            wire: Wire::Claude,
            backend: Some(Box::new(ClaudeBackend { config })),
            model: None,
            root,
            cwd,
            record,
            session: None,
        }
    }

    pub fn sid(&self) -> SessionId {
        self.session
            .unwrap_or_else(|| panic!("{} was never started", self.name))
    }

    pub fn model(&self) -> &FakeModel {
        self.model
            .as_ref()
            .unwrap_or_else(|| panic!("{} talks to no fake model", self.name))
    }

    /// The last `n` recording lines, shortened, for failure messages.
    pub fn tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(&self.record).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..]
            .iter()
            .map(|l| l.chars().take(300).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `tests/peers/node_modules/.bin/claude-agent-acp` when installed.
pub fn acp_bin() -> Option<PathBuf> {
    Some(manifest("tests/peers/node_modules/.bin/claude-agent-acp")).filter(|p| p.exists())
}

/// Start the agents as one workspace, in order: the first opens the app, the others join with
/// `add_session`, each named as in the tree.
pub fn start_workspace(agents: &mut [Agent]) -> Headless {
    let first = agents[0].backend.take().expect("a backend to start");
    let mut h = Headless::start(first, WIDTH, HEIGHT);
    h.app.state.sessions[0].tree.nodes[0].name = agents[0].name.clone();
    agents[0].session = Some(h.app.first_session());
    for a in agents.iter_mut().skip(1) {
        let b = a.backend.take().expect("a backend to start");
        a.session = Some(h.app.add_session(&a.name, b, Rules::default()));
    }
    h
}

/// The state of the session `id` (panics if there is none).
pub fn session(s: &State, id: SessionId) -> &switchboard::core::state::SessionState {
    s.session_by_id(id)
        .unwrap_or_else(|| panic!("no session {id} in the workspace"))
}

/// Apply backend messages until `pred` holds; a timeout panics with the screen and every
/// agent's recording tail and model traffic.
pub async fn wait(
    h: &mut Headless,
    agents: &[Agent],
    what: &str,
    timeout: Duration,
    pred: impl Fn(&State) -> bool,
) {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        h.app.drain_backend(usize::MAX);
        if pred(&h.app.state) {
            return;
        }
        let why = match tokio::time::timeout_at(deadline, h.app.next_backend()).await {
            Ok(Some(m)) => {
                h.app.apply(m);
                continue;
            }
            Ok(None) if pred(&h.app.state) => return,
            Ok(None) => "every backend ended".to_string(),
            Err(_) => format!("timed out after {timeout:?}"),
        };
        panic!("{why} while waiting for {what}\n{}", context(h, agents));
    }
}

/// The screen, then each agent's recording tail and fake-model traffic.
pub fn context(h: &mut Headless, agents: &[Agent]) -> String {
    let mut out = format!("--- screen ---\n{}", h.screen());
    for a in agents {
        out.push_str(&format!(
            "\n--- {} recording tail ({}) ---\n{}",
            a.name,
            a.record.display(),
            a.tail(25)
        ));
        if let Some(m) = &a.model {
            out.push_str(&format!(
                "\n--- {} model requests ---\n{}",
                a.name,
                m.dump()
            ));
        }
    }
    out
}

/// The parsed `line`s of recording entries going `dir` (`in`: from the agent, `out`: ours).
pub fn recorded(path: &Path, dir: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read the recording {}: {e}", path.display()))
        .lines()
        .skip(1)
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["dir"] == dir)
        .filter_map(|e| serde_json::from_str(e["line"].as_str()?).ok())
        .collect()
}

/// The agent's requests (what it asked us) and, for each, our replies, from the recording.
pub fn requests_and_replies(wire: Wire, path: &Path) -> Vec<(Value, Vec<Value>)> {
    let ins = recorded(path, "in");
    let outs = recorded(path, "out");
    match wire {
        Wire::Claude => ins
            .into_iter()
            .filter(|l| l["type"] == "control_request")
            .map(|req| {
                let replies = outs
                    .iter()
                    .filter(|o| {
                        o["type"] == "control_response"
                            && o["response"]["request_id"] == req["request_id"]
                    })
                    .cloned()
                    .collect();
                (req, replies)
            })
            .collect(),
        Wire::Acp => ins
            .into_iter()
            .filter(|l| l.get("method").is_some() && l.get("id").is_some())
            .map(|req| {
                let replies = outs
                    .iter()
                    .filter(|o| o.get("method").is_none() && o["id"] == req["id"])
                    .cloned()
                    .collect();
                (req, replies)
            })
            .collect(),
    }
}

/// Every request the agent sent has exactly one reply in the recording; returns the requests
/// with their single reply.
#[track_caller]
pub fn assert_one_reply_each(a: &Agent) -> Vec<(Value, Value)> {
    let all = requests_and_replies(a.wire, &a.record);
    assert!(
        !all.is_empty(),
        "{}: the recording holds no request of the agent\n{}",
        a.name,
        a.tail(40)
    );
    all.into_iter()
        .map(|(req, replies)| {
            assert_eq!(
                replies.len(),
                1,
                "{}: expected exactly one reply to {req}, got {replies:?}",
                a.name
            );
            (req, replies.into_iter().next().unwrap())
        })
        .collect()
}

/// `switchboard::replay::validate::validate_path` on the agent's recording: no problem.
#[track_caller]
pub fn assert_validates(a: &Agent) {
    let (_, report) = switchboard::replay::validate::validate_path(&a.record, None)
        .unwrap_or_else(|e| panic!("{}: cannot validate {}: {e}", a.name, a.record.display()));
    assert!(
        report.problems() == 0 && !report.unreadable,
        "{}: validate found problems in {}: {:?}",
        a.name,
        a.record.display(),
        report.findings
    );
    assert!(
        report.requests > 0,
        "{}: validate saw no request in {}",
        a.name,
        a.record.display()
    );
}

/// Whether process `pid` (or its process group) still exists.
pub fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

/// Our single reply to the agent's request `id` (a Claude `request_id` or an ACP JSON-RPC id
/// as text); panics unless there is exactly one.
#[track_caller]
pub fn single_reply(a: &Agent, id: &str) -> Value {
    let key = |req: &Value| match a.wire {
        Wire::Claude => req["request_id"].as_str().map(str::to_string),
        Wire::Acp => Some(req["id"].to_string()),
    };
    let found: Vec<(Value, Vec<Value>)> = requests_and_replies(a.wire, &a.record)
        .into_iter()
        .filter(|(req, _)| key(req).as_deref() == Some(id))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "{}: one request {id} in the recording\n{}",
        a.name,
        a.tail(40)
    );
    let (req, mut replies) = found.into_iter().next().unwrap();
    assert_eq!(
        replies.len(),
        1,
        "{}: expected exactly one reply to {req}, got {replies:?}",
        a.name
    );
    replies.remove(0)
}
