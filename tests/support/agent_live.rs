//! The harness for the real agents (`agents.rs`): a `Live` session of the `Headless` app
//! whose agent talks to its fake model, the recording read back as JSON-RPC frames, the rows
//! and cards shown, and the processes the agent started.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use switchboard::core::input::KeyCode;

use switchboard::app::headless::Headless;
use switchboard::backend::acp::session::AcpBackend;
use switchboard::core::diff::{Diff, DiffKind};
use switchboard::core::gate::{GateKind, Permission};
use switchboard::core::msg::TurnState;
use switchboard::core::state::{Focus, State};
use switchboard::core::transcript::ItemKind;

use super::agents::{Kind, Model, Opts, setup};

/// The longest any step may take (they take a second or two).
pub const WAIT: Duration = Duration::from_secs(60);

pub struct Live {
    pub kind: Kind,
    pub h: Headless,
    pub model: Model,
    /// The session directory (canonical).
    pub cwd: PathBuf,
    pub record: PathBuf,
    /// The test's scratch directory: removed when the test passed, kept when it failed.
    pub root: PathBuf,
}

impl Drop for Live {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

/// Start `kind` against its fake model and wait for its session; `None` under the skip rule.
pub async fn start(kind: Kind, tag: &str, opts: Opts) -> Option<Live> {
    let s = setup(kind, tag, opts)?;
    let h = Headless::start(Box::new(AcpBackend { config: s.config }), 120, 40);
    let mut l = Live {
        kind,
        h,
        model: s.model,
        cwd: s.cwd,
        record: s.record,
        root: s.root,
    };
    l.wait("the ACP session", |s| s.session.session_id.is_some())
        .await;
    Some(l)
}

impl Live {
    /// Apply the agent's messages until `pred` holds; on timeout fail with the screen, the
    /// model's requests and the agent's last stderr lines.
    pub async fn wait(&mut self, what: &str, pred: impl Fn(&State) -> bool) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            self.h.app.drain_backend(usize::MAX);
            if pred(&self.h.app.state) {
                return;
            }
            match tokio::time::timeout_at(deadline, self.h.app.next_backend()).await {
                Ok(Some(m)) => self.h.app.apply(m),
                Ok(None) if pred(&self.h.app.state) => return,
                r => {
                    let why = if r.is_ok() {
                        "the backend ended"
                    } else {
                        "timed out"
                    };
                    let err: Vec<String> = self.recorded_lines("err");
                    let tail = err[err.len().saturating_sub(20)..].join("\n");
                    panic!(
                        "{}: {why} waiting for {what}\n{}\nmodel requests:\n{}\nagent stderr (tail):\n{tail}",
                        self.kind.name(),
                        self.h.screen(),
                        self.model.dump()
                    );
                }
            }
        }
    }

    /// Type `text` into the prompt and send it.
    pub fn send(&mut self, text: &str) {
        if self.h.state().focus != Focus::Prompt {
            self.h.key(KeyCode::Char('i'));
        }
        self.h.type_text(text);
        self.h.key(KeyCode::Enter);
    }

    /// Leave the prompt, so letters are commands.
    pub fn unfocus_prompt(&mut self) {
        if self.h.state().focus == Focus::Prompt {
            self.h.key(KeyCode::Tab);
        }
        assert_ne!(self.h.state().focus, Focus::Prompt);
    }

    fn recorded_lines(&self, dir: &str) -> Vec<String> {
        std::fs::read_to_string(&self.record)
            .unwrap_or_default()
            .lines()
            .skip(1)
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["dir"] == dir)
            .filter_map(|e| e["line"].as_str().map(String::from))
            .collect()
    }

    /// The JSON-RPC frames recorded in direction `dir` (`in` from the agent, `out` to it).
    pub fn recorded(&self, dir: &str) -> Vec<Value> {
        self.recorded_lines(dir)
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Requests of `method` in direction `dir`.
    pub fn requests(&self, dir: &str, method: &str) -> Vec<Value> {
        self.recorded(dir)
            .into_iter()
            .filter(|v| v["method"] == method)
            .collect()
    }

    /// The answer (in the other direction) to request `id`, or null.
    pub fn answer_to(&self, dir: &str, id: &Value) -> Value {
        self.recorded(dir)
            .into_iter()
            .find(|v| v.get("method").is_none() && v["id"] == *id)
            .unwrap_or(Value::Null)
    }

    /// The agent's `session/new` result.
    pub fn session_new(&self) -> Value {
        let req = self.requests("out", "session/new").remove(0);
        self.answer_to("in", &req["id"])["result"].clone()
    }

    /// The permission card shown now.
    pub fn card(&self) -> Permission {
        match &self.h.state().active().expect("a card is shown").kind {
            GateKind::Permission(p) => p.clone(),
            other => panic!("not a permission card: {other:?}"),
        }
    }

    /// The tool row of tool call `id`: (name, diff lines as `+text` / `-text`).
    pub fn tool_row(&self, id: &str) -> Option<(String, Vec<String>)> {
        self.h.state().tree.nodes[0]
            .transcript
            .items
            .iter()
            .find_map(|i| match &i.kind {
                ItemKind::ToolCall {
                    id: tid,
                    name,
                    diff,
                    ..
                } if tid == id => Some((
                    name.clone(),
                    diff.as_deref().map(diff_lines).unwrap_or_default(),
                )),
                _ => None,
            })
    }
}

pub fn diff_lines(d: &Diff) -> Vec<String> {
    d.lines
        .iter()
        .filter_map(|l| match l.kind {
            DiffKind::Add => Some(format!("+{}", l.text.trim_end())),
            DiffKind::Remove => Some(format!("-{}", l.text.trim_end())),
            _ => None,
        })
        .collect()
}

pub fn turn_results(s: &State) -> Vec<(bool, String)> {
    s.tree.nodes[0]
        .transcript
        .items
        .iter()
        .filter_map(|i| match &i.kind {
            ItemKind::TurnResult { ok, subtype, .. } => Some((*ok, subtype.clone())),
            _ => None,
        })
        .collect()
}

/// Some row of the transcript holds `needle`.
pub fn transcript_has(s: &State, needle: &str) -> bool {
    s.tree
        .nodes
        .iter()
        .flat_map(|n| n.transcript.items.iter())
        .any(|i| i.kind.text().contains(needle))
}

/// `n` turns ended and the session is idle again.
pub fn turns_done(n: usize) -> impl Fn(&State) -> bool {
    move |s| turn_results(s).len() == n && s.session.turn == Some(TurnState::Idle)
}

/// Live processes (zombies are dead) in `pid`'s process group or descending from it.
pub fn family(pid: u32) -> Vec<u32> {
    let stats: Vec<(u32, char, u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|p| {
            let s = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            let f: Vec<&str> = s.rsplit_once(')')?.1.split_whitespace().collect();
            Some((
                p,
                f[0].chars().next()?,
                f[1].parse().ok()?,
                f[2].parse().ok()?,
            ))
        })
        .collect();
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        out.extend(
            stats
                .iter()
                .filter(|s| s.2 == parent && !out.contains(&s.0))
                .map(|s| s.0)
                .collect::<Vec<_>>(),
        );
        i += 1;
    }
    out.extend(
        stats
            .iter()
            .filter(|s| s.3 == pid && !out.contains(&s.0))
            .map(|s| s.0)
            .collect::<Vec<_>>(),
    );
    let alive = |p: &u32| stats.iter().any(|s| s.0 == *p && s.1 != 'Z');
    out.into_iter().filter(alive).collect()
}
