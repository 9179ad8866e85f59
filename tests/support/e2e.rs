//! End-to-end support: switchboard's real app (`Headless`: same `App`, reducer, effects and
//! Claude backend as the TUI) driving the real `claude` CLI against the fake model.
//!
//! Include next to the fake model, so `crate::fake_model` resolves:
//! ```ignore
//! #[path = "support/fake_model.rs"] mod fake_model;
//! #[path = "support/e2e.rs"] mod e2e;
//! ```
//!
//! Recordings: every run writes switchboard's session recording to a temp file; with
//! `SWITCHBOARD_REGEN_RECORDINGS=1` each finished test also copies it, with temp paths and
//! timestamps rewritten, to `fixtures/recordings/claude/<name>.jsonl`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard::app::headless::Headless;
use switchboard::backend::claude::session::{ClaudeBackend, ClaudeConfig};
use switchboard::core::state::State;
use switchboard::core::transcript::ItemKind;

use crate::fake_model::{CLAUDE_ENV_REMOVE, FakeModel, Scenario, claude_bin, claude_env, temp_dir};

/// The per-wait timeout: generous for a loaded 2-core machine, short of the 30 s test budget.
pub const STEP: Duration = Duration::from_secs(15);

pub const WIDTH: u16 = 120;
pub const HEIGHT: u16 = 40;

/// One running end-to-end session.
pub struct E2e {
    /// Recording name (`fixtures/recordings/claude/<name>.jsonl` when regenerating).
    pub name: String,
    pub h: Headless,
    pub model: FakeModel,
    pub cwd: PathBuf,
    pub home: PathBuf,
    pub record: PathBuf,
}

/// Directories of one run, created before the scenario (which may need `${cwd}`).
pub struct Dirs {
    pub cwd: PathBuf,
    pub home: PathBuf,
}

impl E2e {
    /// Start the fake model with the scenario `make(&dirs)` returns, then switchboard's app with
    /// the Claude backend on the real CLI. `None` when the pinned CLI is not installed, under
    /// the skip rule (`common::require_or_skip`: a failure on CI).
    pub async fn start(
        name: &str,
        breaks: &[&str],
        make: impl FnOnce(&Dirs) -> Scenario,
    ) -> Option<E2e> {
        let bin = crate::common::require_or_skip(name, crate::common::CLAUDE_CLI, claude_bin())?;
        let root = temp_dir(&format!("e2e-{name}"));
        let dirs = Dirs {
            cwd: root.join("cwd"),
            home: root.join("home"),
        };
        std::fs::create_dir_all(&dirs.cwd).expect("create cwd");
        std::fs::create_dir_all(&dirs.home).expect("create home");
        let scenario = make(&dirs);
        let model = FakeModel::start(scenario).await;
        let record = root.join("recording.jsonl");
        let mut env: Vec<(String, Option<String>)> = CLAUDE_ENV_REMOVE
            .iter()
            .map(|k| (k.to_string(), None))
            .collect();
        env.extend(
            claude_env(&dirs.home, &model.base_url())
                .into_iter()
                .map(|(k, v)| (k, Some(v))),
        );
        let config = ClaudeConfig {
            program: bin,
            cwd: dirs.cwd.clone(),
            env,
            record: Some(record.clone()),
            breaks: breaks.iter().map(|b| b.to_string()).collect(),
            ..ClaudeConfig::default()
        };
        let h = Headless::start(Box::new(ClaudeBackend { config }), WIDTH, HEIGHT);
        Some(E2e {
            name: name.to_string(),
            h,
            model,
            cwd: dirs.cwd,
            home: dirs.home,
            record,
        })
    }

    pub fn state(&self) -> &State {
        self.h.state()
    }

    /// Type `text` into the prompt and press Enter (`i` first when the prompt lacks focus,
    /// as after answering a gate).
    pub fn prompt(&mut self, text: &str) {
        if self.h.state().focus != switchboard::core::state::Focus::Prompt {
            self.h.key(switchboard::core::input::KeyCode::Char('i'));
        }
        let focus = self.h.state().focus;
        if focus != switchboard::core::state::Focus::Prompt {
            panic!(
                "the prompt must have the focus to send {text:?}, not {focus:?}\n{}",
                self.h.screen()
            );
        }
        self.h.type_text(text);
        self.h.key(switchboard::core::input::KeyCode::Enter);
    }

    /// `Headless::wait_until` with the standard timeout; the panic also shows the recording tail
    /// and the model traffic.
    pub async fn wait(&mut self, what: &str, pred: impl Fn(&State) -> bool) {
        self.wait_for(what, STEP, pred).await
    }

    /// Like `Headless::wait_until` (apply backend messages until `pred` holds), but a timeout
    /// panics with the screen, the recording tail and the model traffic.
    pub async fn wait_for(&mut self, what: &str, timeout: Duration, pred: impl Fn(&State) -> bool) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            self.h.app.drain_backend(usize::MAX);
            if pred(&self.h.app.state) {
                return;
            }
            let why = match tokio::time::timeout_at(deadline, self.h.app.next_backend()).await {
                Ok(Some(m)) => {
                    self.h.app.apply(m);
                    continue;
                }
                Ok(None) if pred(&self.h.app.state) => return,
                Ok(None) => "the backend ended".to_string(),
                Err(_) => format!("timed out after {timeout:?}"),
            };
            panic!(
                "{why} while waiting for {what}\n--- screen ---\n{}\n--- recording tail ---\n{}\n--- model requests ---\n{}",
                self.h.screen(),
                self.recording_tail(40),
                self.model.dump()
            );
        }
    }

    /// Number of turn results in the root transcript (one per finished turn).
    pub fn turn_results(&self) -> usize {
        count_turn_results(self.h.state())
    }

    /// Wait until the root transcript holds `n` turn results.
    pub async fn wait_turns(&mut self, n: usize) {
        self.wait(&format!("{n} turn result(s)"), move |s| {
            count_turn_results(s) >= n
        })
        .await
    }

    /// Lines we wrote to the CLI's stdin, parsed.
    pub fn out_lines(&self) -> Vec<Value> {
        recording_lines(&self.record, "out")
    }

    /// Lines the CLI wrote to stdout, parsed (non-JSON lines are skipped).
    pub fn in_lines(&self) -> Vec<Value> {
        recording_lines(&self.record, "in")
    }

    /// The CLI's `control_request`s of `subtype`, in order.
    pub fn requests_of(&self, subtype: &str) -> Vec<Value> {
        self.in_lines()
            .into_iter()
            .filter(|l| l["type"] == "control_request" && l["request"]["subtype"] == subtype)
            .collect()
    }

    /// The CLI's `can_use_tool` request for `tool_use_id`. Panics with the recording if absent.
    pub fn can_use_tool(&self, tool_use_id: &str) -> Value {
        self.requests_of("can_use_tool")
            .into_iter()
            .find(|l| l["request"]["tool_use_id"] == tool_use_id)
            .unwrap_or_else(|| {
                panic!(
                    "no can_use_tool for {tool_use_id} in the recording:\n{}",
                    self.recording_tail(60)
                )
            })
    }

    /// Every `control_response` we wrote for `request_id`.
    pub fn responses_to(&self, request_id: &str) -> Vec<Value> {
        self.out_lines()
            .into_iter()
            .filter(|l| {
                l["type"] == "control_response" && l["response"]["request_id"] == request_id
            })
            .collect()
    }

    /// The single `control_response` we wrote for `request_id`; panics (with the recording)
    /// if there is none or more than one.
    pub fn response_to(&self, request_id: &str) -> Value {
        let r = self.responses_to(request_id);
        assert_eq!(
            r.len(),
            1,
            "expected exactly one control_response for {request_id}, got {r:?}\n--- recording ---\n{}",
            self.recording_tail(60)
        );
        r.into_iter().next().unwrap()
    }

    /// The `response.response` body of our single reply to `request_id`, checking the envelope.
    pub fn reply_body(&self, request_id: &str) -> Value {
        let r = self.response_to(request_id);
        assert_eq!(
            r["response"]["subtype"], "success",
            "reply to {request_id} is not a success envelope: {r}"
        );
        r["response"]["response"].clone()
    }

    /// The last `n` recording lines, one per line, shortened for panic messages.
    pub fn recording_tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(&self.record).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..]
            .iter()
            .map(|l| l.chars().take(400).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Check switchboard flagged no protocol problems, quit like a user (Ctrl-D, confirming
    /// when gates are pending), check the CLI process and its group are gone, and copy the
    /// recording when regenerating. Returns the final screen.
    pub async fn quit(&mut self) -> String {
        let problems = problems(self.h.state());
        assert!(
            problems.is_empty(),
            "switchboard flagged protocol problems with the real CLI:\n{}",
            problems.join("\n")
        );
        self.h.quit().await;
        let s = self.h.state();
        assert!(
            s.session.exited.is_some(),
            "the CLI did not report an exit after quitting\n--- recording tail ---\n{}",
            self.recording_tail(30)
        );
        if let Some(pid) = s.session.pid {
            assert_gone(pid);
        }
        regen_recording(
            &self.name,
            &self.record,
            &self.cwd,
            &self.home,
            self.model.port(),
        );
        self.h.screen()
    }

    /// Remove the temp directories (call at the very end of a passing test, so a failing run
    /// keeps them for inspection).
    pub fn cleanup(self) {
        if let Some(root) = self.cwd.parent() {
            let _ = std::fs::remove_dir_all(root);
        }
    }
}

/// On a failing assertion anywhere in a test, print what the user saw and what was on the
/// wire: the screen, the recording tail, the model traffic and where the temp dirs are.
impl Drop for E2e {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        eprintln!(
            "=== e2e context for {} ===\n--- screen ---\n{}--- recording tail ({}) ---\n{}\n--- model requests ---\n{}\n--- dirs kept: {} ---",
            self.name,
            self.h.screen(),
            self.record.display(),
            self.recording_tail(40),
            self.model.dump(),
            self.cwd
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
        );
    }
}

pub fn count_turn_results(s: &State) -> usize {
    s.tree.nodes[0]
        .transcript
        .items
        .iter()
        .filter(|i| matches!(i.kind, ItemKind::TurnResult { .. }))
        .count()
}

/// Panics unless neither the process `pid` nor its process group exists any more.
pub fn assert_gone(pid: u32) {
    // SAFETY: signal 0 only checks for existence.
    let alive = unsafe { libc::kill(pid as libc::pid_t, 0) } == 0;
    assert!(!alive, "the CLI process {pid} is still running after quit");
    // SAFETY: as above, for the process group the backend created for the agent.
    let group = unsafe { libc::killpg(pid as libc::pid_t, 0) } == 0;
    assert!(
        !group,
        "processes of the CLI's group {pid} are still running after quit"
    );
}

/// The parsed `line`s of recording entries with `dir` (`in`, `out`, `err`, `note`).
pub fn recording_lines(path: &Path, dir: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read the recording {}: {e}", path.display()));
    text.lines()
        .skip(1)
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["dir"] == dir)
        .filter_map(|e| {
            e["line"]
                .as_str()
                .and_then(|l| serde_json::from_str(l).ok())
        })
        .collect()
}

/// `fixtures/recordings/claude`.
pub fn recordings_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join("recordings")
        .join("claude")
}

/// With `SWITCHBOARD_REGEN_RECORDINGS=1`: copy the recording to
/// `fixtures/recordings/claude/<name>.jsonl`, rewriting what differs between runs and machines
/// (temp dirs → `<cwd>`/`<home>`, the CLI path → `claude`, the fake's port → `<port>`,
/// timestamps → milliseconds since the start).
pub fn regen_recording(name: &str, record: &Path, cwd: &Path, home: &Path, port: u16) {
    let on = std::env::var("SWITCHBOARD_REGEN_RECORDINGS")
        .map(|v| v == "1" || v == "true")
        .unwrap_or(false);
    if !on {
        return;
    }
    let text = std::fs::read_to_string(record).expect("read the recording");
    let out = stabilize(&text, cwd, home, port);
    let dest = recordings_dir().join(format!("{name}.jsonl"));
    std::fs::create_dir_all(recordings_dir()).expect("create fixtures/recordings/claude");
    std::fs::write(&dest, out).expect("write the fixture recording");
    eprintln!("regenerated {}", dest.display());
}

/// Rewrite one recording for a stable fixture (see `regen_recording`).
pub fn stabilize(text: &str, cwd: &Path, home: &Path, port: u16) -> String {
    let cwd_s = cwd.display().to_string();
    let home_s = home.display().to_string();
    // The CLI names project dirs after the cwd with every non-alphanumeric char as '-'.
    let dashed = |p: &str| -> String {
        p.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect()
    };
    let root_s = cwd
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let replacements: Vec<(String, String)> = vec![
        (home_s.clone(), "<home>".into()),
        (cwd_s.clone(), "<cwd>".into()),
        (dashed(&home_s), "<home-dashed>".into()),
        (dashed(&cwd_s), "<cwd-dashed>".into()),
        (root_s, "<tmp>".into()),
        (format!("127.0.0.1:{port}"), "127.0.0.1:<port>".into()),
        // SAFETY: getuid has no preconditions.
        (
            format!("/tmp/claude-{}/", unsafe { libc::getuid() }),
            "<claude-tmp>/".into(),
        ),
    ];
    let fix = |s: &str| {
        let mut s = s.to_string();
        for (from, to) in &replacements {
            if !from.is_empty() {
                s = s.replace(from.as_str(), to);
            }
        }
        s
    };
    let mut lines = text.lines();
    let mut out = String::new();
    let Some(first) = lines.next() else {
        return out;
    };
    let mut header: Value = serde_json::from_str(first).expect("recording header is JSON");
    let start = header["started_ms"].as_u64().unwrap_or(0);
    header["started_ms"] = json!(0);
    header["started"] = json!("<regenerated>");
    header["cwd"] = json!("<cwd>");
    if let Some(argv) = header["argv"].as_array_mut()
        && let Some(a0) = argv.first_mut()
    {
        *a0 = json!("claude");
    }
    out.push_str(&header.to_string());
    out.push('\n');
    for l in lines {
        let Ok(mut e) = serde_json::from_str::<Value>(l) else {
            continue;
        };
        if let Some(ts) = e["ts"].as_u64() {
            e["ts"] = json!(ts.saturating_sub(start));
        }
        if let Some(line) = e["line"].as_str() {
            e["line"] = json!(fix(line));
        }
        out.push_str(&e.to_string());
        out.push('\n');
    }
    out
}

/// The screen lines containing `needle` (for assertions with context).
pub fn screen_has(screen: &str, needle: &str) -> bool {
    screen.lines().any(|l| l.contains(needle))
}

/// Protocol warnings/errors and unknown or malformed message rows anywhere in the tree: what
/// switchboard could not map cleanly (known-but-unrendered subtypes such as
/// `system/background_tasks_changed` are shown raw by design and not counted).
pub fn problems(s: &State) -> Vec<String> {
    use switchboard::core::transcript::Level;
    s.tree
        .nodes
        .iter()
        .flat_map(|n| n.transcript.items.iter().map(move |i| (n, i)))
        .filter_map(|(n, i)| match &i.kind {
            ItemKind::Protocol { level, text } if *level != Level::Info => {
                Some(format!("[{}] {level:?}: {text}", n.key))
            }
            ItemKind::Generic { label, raw }
                if label.starts_with("unknown") || label.starts_with("malformed") =>
            {
                Some(format!(
                    "[{}] {label}: {}",
                    n.key,
                    raw.chars().take(300).collect::<String>()
                ))
            }
            _ => None,
        })
        .collect()
}

/// The `request_id` of a control request line, owned.
pub fn request_id(line: &Value) -> String {
    line["request_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no request_id in {line}"))
        .to_string()
}
