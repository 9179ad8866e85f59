//! Hostile hook events against a running host (issue 36, "Bad input and faults"), through
//! the built binary: `switchboard up --name NAME` on a pty, `switchboard hook claude|codex`
//! fed what a hostile session could send. Each gets a bounded, visible refusal (a row in the
//! "own terminals" session or in the session's own transcript) and costs nothing else: the
//! hook exits 0 with nothing on stdout or stderr, the host keeps answering, other sessions
//! stay as they were, the recordings validate.
//!
//! And the hook client's fail-safe: no host, a host killed or stopped while hooks wait, each
//! falls through to the CLI's own prompt (nothing printed, exit 0) in bounded time; a card
//! answered here prints exactly the decision.
//!
//! Assertions marked `// Found here:` pin product bugs this file found (each fixed since): they
//! fail if the bug comes back. Worlds are removed after each test; `SB_KEEP_WORLD=1` keeps a
//! failed one.

mod support {
    pub mod adopt;
    pub mod pty;
}

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::adopt::{World, kill, wait_until};
use support::pty::Tui;

/// Tests whose timing is asserted do not run beside the flood (2 cores).
static TIMING: Mutex<()> = Mutex::new(());

fn timing() -> std::sync::MutexGuard<'static, ()> {
    TIMING.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------------------
// The hook client, run as a CLI runs it.

/// One finished `switchboard hook AGENT`.
#[derive(Debug)]
struct Done {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    took: Duration,
}

impl Done {
    /// Fell through: exit 0, nothing on stdout, nothing on stderr.
    #[track_caller]
    fn silent(&self) {
        assert!(self.status.success(), "exit status: {self:?}");
        assert_eq!(self.stdout, "", "stdout: {self:?}");
        assert_eq!(self.stderr, "", "stderr: {self:?}");
    }

    /// Exit 0 and nothing on stderr, whatever it printed.
    #[track_caller]
    fn silent_stderr(&self) {
        assert!(self.status.success(), "exit status: {self:?}");
        assert_eq!(self.stderr, "", "stderr: {self:?}");
    }
}

/// A running `switchboard hook AGENT`, its stdin written (and closed) by a thread of its own
/// so a hook that stops reading never blocks the test.
struct Hook {
    pid: i32,
    started: Instant,
    done: std::sync::mpsc::Receiver<Done>,
}

impl Hook {
    fn spawn(w: &World, agent: &str, event: Vec<u8>) -> Hook {
        let started = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(["hook", agent])
            .envs(w.env())
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .current_dir(&w.proj)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let mut stdin = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            // A hook that read what it takes and left makes this a broken pipe: fine.
            let _ = stdin.write_all(&event);
        });
        let (tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let out = child.wait_with_output().unwrap();
            let _ = tx.send(Done {
                status: out.status,
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                took: started.elapsed(),
            });
        });
        Hook { pid, started, done }
    }

    /// Its end, within `limit` of its start (else it is killed and the test fails).
    #[track_caller]
    fn finish(self, limit: Duration) -> Done {
        let by = self.started + limit;
        self.finish_by(by)
    }

    /// Its end, by `deadline` (else it is killed and the test fails).
    #[track_caller]
    fn finish_by(self, deadline: Instant) -> Done {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.done.recv_timeout(left) {
            Ok(d) => d,
            Err(_) => {
                kill(self.pid);
                panic!(
                    "the hook (pid {}) still ran {:?} after it started",
                    self.pid,
                    self.started.elapsed()
                );
            }
        }
    }
}

/// `switchboard hook AGENT` with `event` on stdin, to its end (5 s at most).
#[track_caller]
fn hook(w: &World, agent: &str, event: impl Into<Vec<u8>>) -> Done {
    Hook::spawn(w, agent, event.into()).finish(Duration::from_secs(5))
}

/// A non-gate event must cost the agent nothing: it falls through, quickly.
#[track_caller]
fn send(w: &World, agent: &str, event: &Value) -> Done {
    let d = hook(w, agent, event.to_string());
    d.silent();
    d
}

// ---------------------------------------------------------------------------------------
// Events.

fn ev(name: &str, session: &str, cwd: &Path) -> Value {
    json!({
        "hook_event_name": name,
        "session_id": session,
        "cwd": cwd.display().to_string(),
    })
}

fn with(mut v: Value, extra: Value) -> Value {
    let (Value::Object(m), Value::Object(x)) = (&mut v, extra) else {
        panic!("not objects")
    };
    m.extend(x);
    v
}

fn permission(session: &str, cwd: &Path, command: &str) -> Value {
    with(
        ev("PermissionRequest", session, cwd),
        json!({
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "permission_mode": "default",
        }),
    )
}

const ALLOW: &str = r#"{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}"#;

// ---------------------------------------------------------------------------------------
// A host on a pty, stopped (and its world removed, when the test passed) however the test
// ends.

struct Lab {
    w: World,
    name: String,
    t: Tui,
}

impl Lab {
    fn new(tag: &str) -> Lab {
        let w = World::new(tag);
        std::fs::create_dir_all(w.home.join(".claude/projects")).unwrap();
        let name = format!("hx-{tag}");
        let t = w.host(&name, &[]);
        Lab { w, name, t }
    }

    /// `~/.claude/projects/<proj>/`, made.
    fn projects(&self, proj: &str) -> PathBuf {
        let d = self.w.home.join(".claude/projects").join(proj);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn pid(&self) -> i32 {
        self.w.host_pid(&self.name).expect("the host is listed")
    }

    /// Select session `name` (its transcript on the right).
    fn select(&mut self, name: &str) -> String {
        self.select_by(name, |t| t == name)
    }

    /// Select the session whose pane title `pick` takes: the tree focused (`h`), its first
    /// row (Home), then `j` until it shows.
    fn select_by(&mut self, what: &str, pick: impl Fn(&str) -> bool) -> String {
        let t = Instant::now();
        self.t.send(b"h");
        self.t.send(b"\x1b[H");
        loop {
            let s = self.t.screen();
            if pick(&pane_title(&s)) {
                return s;
            }
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "could not select {what}\n{s}"
            );
            // One row down, then the frame that shows it (or a row of the same session).
            let before = pane_title(&s);
            self.t.send_now(b"j");
            let moved = Instant::now();
            while pane_title(&self.t.screen()) == before
                && moved.elapsed() < Duration::from_millis(400)
            {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// The selected session's transcript focused (`l`), at its newest rows (End).
    fn newest(&mut self) {
        self.t.send(b"l");
        self.t.send(b"\x1b[F");
    }

    /// Stop the host as `switchboard stop` does; the recordings validate.
    fn stop_and_validate(&mut self) -> String {
        self.w.stop(&self.name);
        wait_until(
            "the attached terminal to end",
            Duration::from_secs(10),
            || self.t.child.try_wait().ok().flatten().is_some(),
        );
        // The host is not our child: gone from `ls` is gone (its lock released), nothing of
        // it still writes.
        wait_until("the host to exit", Duration::from_secs(10), || {
            let out = self.w.sb(&["ls"]);
            !String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l.starts_with(&self.name))
        });
        self.w.validate_all()
    }

    /// `switchboard ls` answers (its time), with this host's line.
    #[track_caller]
    fn ls(&self) -> (Duration, String) {
        let t = Instant::now();
        let out = self.w.sb(&["ls"]);
        let took = t.elapsed();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{out:?}");
        assert!(
            text.lines()
                .any(|l| l.starts_with(&self.name) && l.contains("(pid ")),
            "ls: {text}"
        );
        (took, text)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // A host left stopped by a test must run to be stopped.
        if let Some(pid) = self.t.child.process_id() {
            // SAFETY: signalling our own child.
            unsafe {
                libc::kill(pid as i32, libc::SIGCONT);
            }
        }
        if self.t.child.try_wait().ok().flatten().is_none() {
            let _ = self.w.sb(&["stop", &self.name]);
        }
        let _ = self.t.child.kill();
        // Kept after a failure only when asked (SB_KEEP_WORLD=1): the tests that pin known
        // bugs fail on every run until those are fixed.
        if !std::thread::panicking() || std::env::var_os("SB_KEEP_WORLD").is_none() {
            let _ = std::fs::remove_dir_all(&self.w.root);
        }
    }
}

/// Lines of the screen that are whole frame rows: a raw ESC [2J or cursor move reaching the
/// terminal would leave rows blank or torn.
fn frame_intact(s: &str) -> bool {
    let lines: Vec<&str> = s.lines().collect();
    lines.first().is_some_and(|l| l.starts_with("┌ Sessions"))
        && lines
            .iter()
            .filter(|l| l.starts_with('│') && l.ends_with('│'))
            .count()
            >= 30
}

// ---------------------------------------------------------------------------------------

/// Recordings of adopted sessions (not the "own terminals" session's own).
fn session_recordings(w: &World) -> usize {
    w.recordings()
        .iter()
        .filter(|p| !p.to_string_lossy().contains("-adopted-hooks"))
        .count()
}

/// The title of the transcript pane (the selected session's name).
fn pane_title(screen: &str) -> String {
    let first = screen.lines().next().unwrap_or("");
    let right = first.split_once("┐┌ ").map_or("", |(_, r)| r);
    right
        .split_once(" ─")
        .map_or(right, |(t, _)| t)
        .trim()
        .to_string()
}

/// Text a hostile session puts in a string: an OSC title change, a screen clear, a cursor
/// move, an 8-bit CSI, a carriage return and a DEL between `<TAG` and `TAG>`. Drawn raw it
/// would retitle the terminal, wipe the screen and leave `<TAG` and `TAG>` apart.
fn evil(tag: &str) -> String {
    format!("<{tag}\u{1b}]0;PWN\u{7}\u{1b}[2J\u{1b}[1;1H\u{9b}6n\u{7f}{tag}>")
}

/// How `evil(tag)` reads when shown visibly (its start: what follows may be cut or wrapped).
fn shown(tag: &str) -> String {
    format!("<{tag}^[]0;PWN^G^[[2J")
}

/// Wait until the own-terminals session shows `what` (it is selected first).
#[track_caller]
fn own_row(lab: &mut Lab, what: &str) -> String {
    if pane_title(&lab.t.screen()) != "own terminals" {
        lab.select("own terminals");
    }
    let t = Instant::now();
    loop {
        let s = lab.t.screen();
        if s.contains(what) || flat(&s).contains(what) {
            return s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "waiting for {what:?}\n{s}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The transcript pane's rows as text, each wrapped row joined again (its continuation
/// lines are indented): what a row says, wherever the width broke it.
fn flat(screen: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for line in screen.lines() {
        let Some(at) = line.find("││") else {
            continue;
        };
        let rest = &line[at + "││".len()..];
        let body = rest.rsplit_once('│').map_or(rest, |(b, _)| b).trim_end();
        let text = body.strip_prefix(' ').unwrap_or(body);
        match out.last_mut() {
            Some(prev) if text.starts_with("  ") && !prev.is_empty() => {
                prev.push(' ');
                prev.push_str(text.trim());
            }
            _ => out.push(text.to_string()),
        }
    }
    out.join("\n")
}

// ---------------------------------------------------------------------------------------
// Junk, deep nesting, oversize.

/// Events that are no events: each hook falls through at once, each refusal is a row of
/// "own terminals", and nothing else changes (no session opened, the session that was there
/// still answers).
#[test]
fn junk_deep_and_malformed_events_are_refused_with_a_row_each() {
    let mut lab = Lab::new("junk");
    let p = lab.w.proj.clone();
    let cwd = p.display().to_string();
    send(&lab.w, "claude", &ev("SessionStart", "good-1", &p));
    lab.t.wait(&["proj joined"]);

    let base = |extra: &str| {
        format!(
            r#"{{"hook_event_name":"PermissionRequest","session_id":"x1","cwd":"{cwd}"{extra}}}"#
        )
    };
    let deep_inside = base(&format!(
        r#","tool_input":{}1{}"#,
        "[".repeat(200),
        "]".repeat(200)
    ));
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "claude",
            b"this is not json".to_vec(),
            "event: not JSON: expected",
        ),
        ("claude", b"[1]".to_vec(), "event: not a JSON object"),
        (
            "codex",
            b"\"a string\"".to_vec(),
            "Codex hook event: not a JSON object",
        ),
        (
            "claude",
            b"\xff\xfe\x00\x01\x1b[2J\x1b]0;PWN\x07\xc0\x80".to_vec(),
            "event: not UTF-8 text",
        ),
        ("claude", b"".to_vec(), "event: an empty event"),
        ("claude", b" \n\t ".to_vec(), "event: an empty event"),
        // 100k levels: serde_json's depth limit, never a stack overflow.
        (
            "claude",
            "[".repeat(100_000).into_bytes(),
            "event: not JSON: recursion limit",
        ),
        (
            "claude",
            "{\"a\":".repeat(100_000).into_bytes(),
            "event: not JSON: recursion limit",
        ),
        (
            "claude",
            deep_inside.into_bytes(),
            "event: not JSON: recursion limit",
        ),
        (
            "claude",
            format!(r#"{{"session_id":"x1","cwd":"{cwd}"}}"#).into_bytes(),
            "event: no hook_event_name",
        ),
        (
            "claude",
            format!(r#"{{"hook_event_name":"Stop","cwd":"{cwd}"}}"#).into_bytes(),
            "event: no session_id",
        ),
        (
            "claude",
            format!(r#"{{"hook_event_name":"Stop","session_id":7,"cwd":"{cwd}"}}"#).into_bytes(),
            "event: no session_id",
        ),
        (
            "claude",
            format!(
                r#"{{"hook_event_name":"Stop","session_id":"../../etc/passwd","cwd":"{cwd}"}}"#
            )
            .into_bytes(),
            r#"event: session id "../../etc/passwd" is not an id"#,
        ),
        (
            "claude",
            format!(
                r#"{{"hook_event_name":"Stop","session_id":"{}","cwd":"{cwd}"}}"#,
                "a".repeat(129)
            )
            .into_bytes(),
            "event: session id \"aaaa",
        ),
        (
            "claude",
            r#"{"hook_event_name":"Stop","session_id":"x1","cwd":"relative/dir"}"#
                .as_bytes()
                .to_vec(),
            r#"event: cwd "relative/dir" is not an absolute path"#,
        ),
        (
            "claude",
            r#"{"hook_event_name":"Stop","session_id":"x1","cwd":"/tmp\u0000/x"}"#
                .as_bytes()
                .to_vec(),
            "is not an absolute path",
        ),
        (
            "claude",
            format!(
                r#"{{"hook_event_name":"Stop","session_id":"x1","cwd":"/{}"}}"#,
                "d".repeat(5000)
            )
            .into_bytes(),
            "event: cwd is longer than 4096 bytes",
        ),
        (
            "claude",
            base(r#","transcript_path":7"#).into_bytes(),
            "event: transcript_path is not a string",
        ),
        (
            "claude",
            base(&format!(r#","tool_name":"{}""#, "T".repeat(300))).into_bytes(),
            "event: tool_name is longer than 256 bytes",
        ),
        (
            "claude",
            base(r#","permission_suggestions":{"x":1}"#).into_bytes(),
            "event: permission_suggestions is not an array",
        ),
        (
            "claude",
            base(r#","sb_session":{"id":"forged"}"#).into_bytes(),
            "event may not carry a key starting with \"sb_\"",
        ),
        (
            "claude",
            format!(
                r#"{{"hook_event_name":"{}","session_id":"x1","cwd":"{cwd}"}}"#,
                "N".repeat(65)
            )
            .into_bytes(),
            "event: hook_event_name is empty or too long",
        ),
    ];
    // The first 20 refusals are shown one by one, with their reasons; the rest are counted
    // (the reasons of those are unit tests of `adopt::event::parse`).
    let total = cases.len();
    assert!(total > 20, "past the first 20, the count is seen too");
    for (i, (agent, bytes, row)) in cases.into_iter().enumerate() {
        let shown_as = String::from_utf8_lossy(&bytes[..bytes.len().min(60)]).into_owned();
        let d = hook(&lab.w, agent, bytes);
        d.silent();
        // A refused PermissionRequest is not waited on: the host hangs up at once.
        assert!(
            d.took < Duration::from_secs(2),
            "case {i} ({shown_as:?}): {d:?}"
        );
        if i < 20 {
            own_row(&mut lab, row);
        }
    }
    own_row(
        &mut lab,
        &format!("{total} hook events refused so far (the first 20 are listed)"),
    );
    // An agent the host does not know, and no agent: nothing sent, nothing printed.
    for args in [&["hook", "gemini"][..], &["hook"][..], &["hook", ""][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(args)
            .envs(lab.w.env())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert!(
            out.stdout.is_empty() && out.stderr.is_empty(),
            "{args:?}: {out:?}"
        );
    }

    // Nothing else happened: no session was opened by any of it, the one there answers.
    let s = lab.t.screen();
    assert!(s.starts_with("┌ Sessions (2)"), "{s}");
    assert!(frame_intact(&s), "{s}");
    let (took, ls) = lab.ls();
    assert!(ls.contains("2 sessions, 0 waiting"), "{ls}");
    assert!(took < Duration::from_secs(1), "ls took {took:?}");
    let gate = Hook::spawn(
        &lab.w,
        "claude",
        permission("good-1", &p, "echo still-here")
            .to_string()
            .into(),
    );
    lab.t.wait(&["1 waiting"]);
    lab.t.send(b"g");
    lab.t.wait(&["$ echo still-here"]);
    lab.t.send(b"y");
    let d = gate.finish(Duration::from_secs(10));
    assert_eq!(d.stdout, ALLOW, "{d:?}");
    lab.stop_and_validate();
}

/// An event over 4 MiB: the hook reads 4 MiB + 1 and sends only the size; the host shows
/// the refusal with it. One of exactly 4 MiB is still taken whole.
#[test]
fn an_event_over_four_mib_is_refused_by_its_size_and_one_of_four_mib_is_taken() {
    let mut lab = Lab::new("big");
    let p = lab.w.proj.clone();
    let max = 4usize << 20;
    // Exactly 4 MiB: a Notification whose message pads it.
    let head = with(
        ev("Notification", "big-1", &p),
        json!({"notification_type": "note", "message": ""}),
    )
    .to_string();
    let pad = max - head.len();
    let exact = with(
        ev("Notification", "big-1", &p),
        json!({"notification_type": "note", "message": format!("START{}", "m".repeat(pad - 5))}),
    )
    .to_string();
    assert_eq!(exact.len(), max);
    let d = hook(&lab.w, "claude", exact);
    d.silent();
    lab.t.wait(&["proj joined"]);

    // One byte more, as a PermissionRequest: refused by size, never parsed, never waited on.
    let over = permission("big-1", &p, &format!("echo {}", "x".repeat(max)));
    let over = over.to_string();
    assert!(over.len() > max);
    let d = hook(&lab.w, "claude", over.clone());
    d.silent();
    assert!(d.took < Duration::from_secs(2), "{d:?}");
    own_row(
        &mut lab,
        &format!(
            "refused a Claude Code hook event: {} bytes, more than",
            max + 1
        ),
    );

    // 64 MiB on stdin: the hook stops reading at 4 MiB + 1 and goes.
    let huge = vec![b'{'; 64 << 20];
    let d = hook(&lab.w, "codex", huge);
    d.silent();
    assert!(d.took < Duration::from_secs(2), "{d:?}");
    own_row(
        &mut lab,
        &format!("refused a Codex hook event: {} bytes, more than", max + 1),
    );

    // The exact one reached its session: its row (cut to what a row holds).
    lab.select("proj");
    lab.t.wait(&["notification note: STARTmmm"]);
    let s = lab.t.screen();
    assert!(frame_intact(&s), "{s}");
    assert_eq!(session_recordings(&lab.w), 1);
    lab.stop_and_validate();
}

// ---------------------------------------------------------------------------------------
// Control characters and escape sequences in every string.

/// Every string field of every event (and of the transcript it names) carries escape
/// sequences: ids that cannot be ids are refused, every other string is shown visibly
/// escaped wherever it is drawn (tree, rows, the card, the status overlay), and the terminal
/// never gets them raw (its frame stays whole, `<TAG` and `TAG>` never meet).
#[test]
fn control_characters_in_every_string_are_refused_or_shown_escaped() {
    let mut lab = Lab::new("ctl");
    let projects = lab.projects("ctl");
    let cwd = lab.w.proj.join(evil("cwd"));
    let transcript = projects.join("ctl-1.jsonl");
    let lines = [
        json!({"type": "user", "uuid": "u1", "message": {"role": "user", "content": evil("tuser")}}),
        json!({"type": "assistant", "uuid": "a1", "message": {"role": "assistant", "content": [
            {"type": "text", "text": evil("ttext")},
            {"type": "tool_use", "id": evil("tid"), "name": evil("ttool"), "input": {"command": evil("tinput")}},
        ]}}),
        json!({"type": "user", "uuid": "u2", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": evil("tid"), "content": evil("tresult")},
        ]}}),
        json!({"type": "system", "subtype": evil("tsub"), "content": evil("tsys")}),
        json!({"type": evil("ttype"), "uuid": "x"}),
    ];
    let mut text = String::new();
    for l in &lines {
        text.push_str(&l.to_string());
        text.push('\n');
    }
    // A raw line too: not JSON, escapes as they are.
    text.push_str(&format!("{}\n", evil("traw")));
    std::fs::write(&transcript, text).unwrap();

    let id = "ctl-1";
    let base = |name: &str| {
        with(
            ev(name, id, &cwd),
            json!({"transcript_path": transcript.display().to_string()}),
        )
    };
    send(
        &lab.w,
        "claude",
        &with(
            base("SessionStart"),
            json!({"source": evil("source"), "model": evil("model"), "permission_mode": evil("pmode")}),
        ),
    );
    send(
        &lab.w,
        "claude",
        &with(
            base("Notification"),
            json!({"notification_type": evil("ntype"), "message": evil("nmsg"), "title": evil("ntitle")}),
        ),
    );
    send(
        &lab.w,
        "claude",
        &with(base(&evil("name")), json!({"other": evil("raw")})),
    );
    send(
        &lab.w,
        "claude",
        &with(
            base("SubagentStart"),
            json!({"agent_id": "sub-1", "agent_type": evil("atype")}),
        ),
    );
    send(
        &lab.w,
        "claude",
        &with(
            base("PreCompact"),
            json!({"trigger": evil("trigger"), "custom_instructions": evil("ci")}),
        ),
    );
    send(
        &lab.w,
        "claude",
        &with(base("UserPromptSubmit"), json!({"prompt": evil("prompt")})),
    );
    send(
        &lab.w,
        "claude",
        &with(
            base("PreToolUse"),
            json!({"tool_name": evil("pretool"), "tool_input": {"command": evil("preinput")}, "tool_use_id": evil("tuid")}),
        ),
    );
    send(
        &lab.w,
        "claude",
        &with(base("StopFailure"), json!({"error": evil("error")})),
    );
    // Ids that could not be ids: refused with the reason, the id shown escaped.
    for (field, value) in [("session_id", evil("sid")), ("agent_id", evil("aid"))] {
        let mut e = base("Stop");
        e[field] = json!(value);
        send(&lab.w, "claude", &e);
    }
    let s = own_row(
        &mut lab,
        "refused a Claude Code hook event: agent_id: session id",
    );
    assert!(
        s.contains(r#"refused a Claude Code hook event: session id "<sid\u{1b}]0;PWN"#),
        "{s}"
    );
    // (Where the row wraps depends on how long the test's temporary path is.)
    assert!(s.contains(&shown("cwd")), "{s}");
    assert!(frame_intact(&s), "{s}");

    // The session: named for its (escaped) project.
    let s = lab.select_by("the session of the evil cwd", |t| t.starts_with("<cwd^["));
    assert!(
        s.contains(&format!("│▾◌ {}", shown("cwd"))) || s.contains(&shown("cwd")),
        "{s}"
    );
    for tag in [
        "source", "tuser", "ttext", "ttool", "tresult", "tsub", "tsys", "ttype", "traw", "ntype",
        "nmsg", "name", "trigger", "error", "atype",
    ] {
        let t = Instant::now();
        loop {
            let s = lab.t.screen();
            if s.contains(&format!("<{tag}^[")) {
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "{tag}: not shown escaped\n{s}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let s = lab.t.screen();
    assert!(frame_intact(&s), "{s}");

    // The status overlay and the status line: model, mode and cwd as sent, escaped.
    let mut bugs: Vec<String> = Vec::new();
    lab.t.send(b"s");
    let s = lab.t.wait(&["session status", "<model", "<pmode"]);
    assert!(!s.contains("<modelPWN") && !s.contains("<model6n"), "{s}");
    for (key, tag) in [("cwd ", "cwd"), ("model ", "model"), ("mode ", "pmode")] {
        let line = s
            .lines()
            .find(|l| l.contains(&format!("│{key}")))
            .unwrap_or("")
            .to_string();
        assert!(line.contains(&format!("<{tag}")), "{key}: {line}\n{s}");
        // Found here: the adopted session's model, permission_mode and cwd were drawn as they
        // came (ratatui dropped the control characters, so what was shown was silently
        // altered, `<model]0;PWN[2J…`); now shown visibly escaped.
        if !line.contains(&format!("<{tag}^[")) {
            bugs.push(format!(
                "status overlay: {tag} not shown escaped: {}",
                line.trim()
            ));
        }
    }
    lab.t.send(b"\x1b");
    let s = lab.t.wait_gone(&["session status"], Duration::from_secs(5));
    let status = s.lines().last().unwrap_or("").to_string();
    if !status.contains("<pmode^[") {
        // Found here: as above, the status line.
        bugs.push(format!(
            "status line: mode not shown escaped: {}",
            status.trim()
        ));
    }

    // A card whose every string is hostile: tool, command, description, suggestions.
    let gate = Hook::spawn(
        &lab.w,
        "claude",
        with(
            base("PermissionRequest"),
            json!({
                "tool_name": "Bash",
                "tool_input": {"command": format!("echo \u{1b}]0;x\u{7} {} \u{202e}txt.exe", evil("cmd")), "description": evil("desc")},
                "permission_suggestions": [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": evil("rule")}], "behavior": "allow", "destination": "session"}],
            }),
        )
        .to_string()
        .into(),
    );
    lab.t.wait(&["1 waiting"]);
    lab.t.send(b"g");
    let s = lab.t.wait(&["$ echo ^[]0;x^G <cmd^[]0;PWN^G"]);
    assert!(
        !s.contains("echo  <cmd"),
        "the OSC reached the terminal raw\n{s}"
    );
    // A right-to-left override would make the command read otherwise than it runs.
    assert!(s.contains("<U+202E>txt.exe"), "{s}");
    assert!(s.contains("<desc^["), "{s}");
    assert!(frame_intact(&s), "{s}");
    lab.t.send(b"y");
    let d = gate.finish(Duration::from_secs(10));
    assert_eq!(d.stdout, ALLOW, "{d:?}");
    d.silent_stderr();

    // A tool name of escapes on the card too.
    let gate = Hook::spawn(
        &lab.w,
        "claude",
        with(
            base("PermissionRequest"),
            json!({"tool_name": evil("tool"), "tool_input": {"path": evil("path")}}),
        )
        .to_string()
        .into(),
    );
    lab.t.wait(&["1 waiting"]);
    lab.t.send(b"g");
    let s = lab.t.wait(&["<tool^["]);
    assert!(frame_intact(&s), "{s}");
    lab.t.send(b"T");
    gate.finish(Duration::from_secs(10)).silent();

    // Codex: its command on its card, escaped.
    let cx = lab.w.proj.join("codex-ctl");
    let gate = Hook::spawn(
        &lab.w,
        "codex",
        with(
            ev("PermissionRequest", "cx-1", &cx),
            json!({"tool_name": "Bash", "tool_input": {"command": ["sh", "-c", evil("cxcmd")], "description": evil("cxdesc")}}),
        )
        .to_string()
        .into(),
    );
    lab.t.wait(&["1 waiting"]);
    lab.t.send(b"g");
    let s = lab.t.wait(&["<cxcmd^["]);
    assert!(frame_intact(&s), "{s}");
    lab.t.send(b"y");
    let d = gate.finish(Duration::from_secs(10));
    assert!(d.stdout.contains("allow"), "{d:?}");

    // The session ends with an escaped reason.
    send(
        &lab.w,
        "claude",
        &with(base("SessionEnd"), json!({"reason": evil("reason")})),
    );
    lab.select_by("the session of the evil cwd", |t| t.starts_with("<cwd^["));
    let s = lab.t.wait(&["<reason^["]);
    assert!(frame_intact(&s), "{s}");
    lab.stop_and_validate();
    assert!(
        bugs.is_empty(),
        "shown altered, not escaped:\n{}",
        bugs.join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// Sessions: an id reused from another directory, more than 64 of them.

/// A session id seen again from another cwd is refused (a row), and the session that had it
/// goes on as it was: its card still opens and its answer still reaches its hook.
#[test]
fn a_session_id_reused_from_another_cwd_is_refused_and_the_first_stays() {
    let mut lab = Lab::new("reuse");
    let a = lab.w.proj.join("alpha");
    let b = lab.w.proj.join("bravo");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    send(&lab.w, "claude", &ev("SessionStart", "same-id", &a));
    lab.t.wait(&["alpha joined"]);
    // The impostor: a plain event, then a permission request (refused: not waited on).
    send(&lab.w, "claude", &ev("SessionStart", "same-id", &b));
    let d = hook(
        &lab.w,
        "claude",
        permission("same-id", &b, "rm -rf ~").to_string(),
    );
    d.silent();
    assert!(d.took < Duration::from_secs(2), "{d:?}");
    let s = own_row(
        &mut lab,
        &format!("session same-id is in {}, not", a.display()),
    );
    assert!(
        flat(&s).contains(&format!(
            "session same-id is in {}, not {} (its hook fell through",
            a.display(),
            b.display()
        )),
        "{s}"
    );
    assert!(!s.contains("bravo joined"), "{s}");
    assert!(!s.contains("rm -rf"), "{s}");
    assert!(s.starts_with("┌ Sessions (2)"), "{s}");
    let (_, ls) = lab.ls();
    assert!(ls.contains("2 sessions, 0 waiting"), "{ls}");
    // The same id from Codex is another session (sessions are per agent).
    send(&lab.w, "codex", &ev("SessionStart", "same-id", &b));
    lab.t.wait(&["bravo joined", "Codex session same-id"]);

    // The first is intact: its gate opens and is answered.
    let gate = Hook::spawn(
        &lab.w,
        "claude",
        permission("same-id", &a, "echo alpha-ok")
            .to_string()
            .into(),
    );
    lab.t.wait(&["1 waiting"]);
    lab.t.send(b"g");
    let s = lab.t.wait(&["$ echo alpha-ok"]);
    assert!(s.contains("asked by alpha"), "{s}");
    lab.t.send(b"y");
    let d = gate.finish(Duration::from_secs(10));
    assert_eq!(d.stdout, ALLOW, "{d:?}");
    lab.stop_and_validate();
}

/// 64 sessions are adopted; the 65th is refused with a row and costs nothing: the 64 still
/// take their events, the host still answers.
#[test]
fn the_sixty_fifth_session_is_refused_with_a_row() {
    let mut lab = Lab::new("many");
    let p = lab.w.proj.clone();
    for i in 0..64 {
        send(
            &lab.w,
            "claude",
            &ev("SessionStart", &format!("many-{i}"), &p),
        );
    }
    lab.t.wait(&["┌ Sessions (65)"]);
    let d = hook(
        &lab.w,
        "claude",
        permission("many-64", &p, "echo sixty-five").to_string(),
    );
    d.silent();
    assert!(d.took < Duration::from_secs(2), "{d:?}");
    send(&lab.w, "codex", &ev("SessionStart", "many-65", &p));
    own_row(
        &mut lab,
        "refused a Claude Code hook event: 64 sessions are adopted already",
    );
    own_row(
        &mut lab,
        "refused a Codex hook event: 64 sessions are adopted already",
    );
    let s = lab.t.screen();
    assert!(s.starts_with("┌ Sessions (65)"), "{s}");
    let (took, ls) = lab.ls();
    assert!(ls.contains("65 sessions, 0 waiting"), "{ls}");
    assert!(took < Duration::from_secs(1), "ls took {took:?}");
    assert_eq!(session_recordings(&lab.w), 64);

    // The first and the last of the 64 still take events: a card each, answered.
    for id in ["many-0", "many-63"] {
        let gate = Hook::spawn(
            &lab.w,
            "claude",
            permission(id, &p, &format!("echo {id}-ok"))
                .to_string()
                .into(),
        );
        lab.t.wait(&["1 waiting"]);
        lab.t.send(b"g");
        lab.t.wait(&[&format!("$ echo {id}-ok")]);
        lab.t.send(b"y");
        let d = gate.finish(Duration::from_secs(10));
        assert_eq!(d.stdout, ALLOW, "{d:?}");
    }

    // Every one of the 64 ends in its terminal. Sessions that ended hold no place: a new
    // one is adopted (else after 64 sessions a long-running host adopts nothing ever again).
    for i in 0..64 {
        send(
            &lab.w,
            "claude",
            &with(
                ev("SessionEnd", &format!("many-{i}"), &p),
                json!({"reason": "exit"}),
            ),
        );
    }
    wait_until("the 64 sessions to end", Duration::from_secs(20), || {
        lab.w.sb(&["ls"]).status.success() && lab.t.screen().contains("0 run · 0 wait")
    });
    // The source forgets finished sessions on its 1 s tick: a new session is tried every
    // half second (each one refused before the tick is counted, not adopted) until one is
    // adopted, for at most 5 s. With ended sessions holding their places, none ever is.
    let t = Instant::now();
    let mut tries = 0;
    let adopted = loop {
        send(
            &lab.w,
            "claude",
            &ev("SessionStart", &format!("after-the-64-{tries}"), &p),
        );
        tries += 1;
        let seen = (0..10).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            lab.t.screen().contains("Sessions (66)")
        });
        if seen || t.elapsed() > Duration::from_secs(5) {
            break seen;
        }
    };
    let s = if adopted {
        lab.t.screen()
    } else {
        // What the host said of it: refused as the 65th.
        lab.select("own terminals");
        lab.newest();
        lab.t.screen()
    };
    lab.stop_and_validate();
    // Found here: an ended session kept its place among the 64 for as long as the host ran,
    // so after 64 sessions had come and gone every new one was refused. A session's task now
    // ends with SessionEnd, and finished ones hold no place.
    assert!(
        adopted,
        "a new session after 64 ended ones was not adopted\n{s}"
    );
}

// ---------------------------------------------------------------------------------------
// A flood.

/// ~3000 non-gate events from 24 concurrent streams of `switchboard hook` processes, into
/// eight sessions, with junk among them: no hook hangs or prints, the refusals are rows (the
/// first 20, then counted), and afterwards the host answers `ls` in under a second and a
/// card still goes both ways.
#[test]
fn a_flood_of_events_from_many_hooks_costs_nothing_else() {
    let _serial = timing();
    let mut lab = Lab::new("flood");
    let p = lab.w.proj.clone();
    for i in 0..8 {
        send(
            &lab.w,
            "claude",
            &ev("SessionStart", &format!("fl-{i}"), &p),
        );
    }
    lab.t.wait(&["┌ Sessions (9)"]);
    const WORKERS: usize = 24;
    const EACH: usize = 125;
    let started = Instant::now();
    let results: Vec<(usize, Duration, Vec<String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..WORKERS)
            .map(|w| {
                let world = &lab.w;
                let p = &p;
                scope.spawn(move || {
                    let mut worst = Duration::ZERO;
                    let mut wrong = Vec::new();
                    for k in 0..EACH {
                        let n = w * EACH + k;
                        let sid = format!("fl-{}", n % 8);
                        let event = match n % 10 {
                            // One in ten is junk: refused, counted.
                            0 => b"{not json".to_vec(),
                            1..=4 => with(
                                ev("PreToolUse", &sid, p),
                                json!({"tool_name": "Bash", "tool_input": {"command": format!("echo {n}")}}),
                            )
                            .to_string()
                            .into_bytes(),
                            5..=8 => with(
                                ev("PostToolUse", &sid, p),
                                json!({"tool_name": "Bash", "tool_input": {"command": format!("echo {n}")}, "tool_response": {"stdout": "x"}}),
                            )
                            .to_string()
                            .into_bytes(),
                            _ => with(
                                ev("Notification", &sid, p),
                                json!({"notification_type": "note", "message": format!("flood {n}")}),
                            )
                            .to_string()
                            .into_bytes(),
                        };
                        let agent = if n.is_multiple_of(2) { "claude" } else { "codex" };
                        // (codex events of fl-N are sessions of their own: 16 in all.)
                        let d = Hook::spawn(world, agent, event).finish(Duration::from_secs(10));
                        worst = worst.max(d.took);
                        if !(d.status.success() && d.stdout.is_empty() && d.stderr.is_empty()) {
                            wrong.push(format!("{n}: {d:?}"));
                        }
                    }
                    (EACH, worst, wrong)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let flood_took = started.elapsed();
    let total: usize = results.iter().map(|r| r.0).sum();
    let worst = results.iter().map(|r| r.1).max().unwrap_or_default();
    let wrong: Vec<&String> = results.iter().flat_map(|r| &r.2).collect();
    println!("flood: {total} hooks in {flood_took:?}, the slowest {worst:?}");
    assert_eq!(total, WORKERS * EACH);
    assert!(wrong.is_empty(), "hooks that printed or failed: {wrong:?}");
    assert!(worst < Duration::from_secs(3), "a hook took {worst:?}");

    // The host answers at once.
    let (took, ls) = lab.ls();
    assert!(
        took < Duration::from_secs(1),
        "ls took {took:?} after the flood: {ls}"
    );
    // Own terminals, 8 Claude sessions, 4 Codex ones (odd events are Codex's).
    assert!(ls.contains("13 sessions, 0 waiting"), "{ls}");
    // The junk: the first 20 refusals one by one.
    let s = own_row(&mut lab, "refused a Claude Code hook event: not JSON");
    assert!(frame_intact(&s), "{s}");
    // A card still goes both ways.
    let gate = Hook::spawn(
        &lab.w,
        "claude",
        permission("fl-3", &p, "echo after-flood")
            .to_string()
            .into(),
    );
    lab.t.wait(&["1 waiting"]);
    lab.t.send(b"g");
    lab.t.wait(&["$ echo after-flood"]);
    lab.t.send(b"y");
    let d = gate.finish(Duration::from_secs(10));
    assert_eq!(d.stdout, ALLOW, "{d:?}");
    let (took, _) = lab.ls();
    assert!(took < Duration::from_secs(1), "ls took {took:?}");
    // Then counted: the 280 refusals past the first 20 are said somewhere.
    lab.select("own terminals");
    lab.newest();
    // The count is said once a second while it grows: waited for, at most 5 s.
    let t = Instant::now();
    let s = loop {
        let s = lab.t.screen();
        if s.contains("300 hook events refused") || t.elapsed() > Duration::from_secs(5) {
            break s;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    lab.stop_and_validate();
    // Found here: refusals past the first 20 were counted only at every 1000th; the count
    // is now said once a second while it grows.
    assert!(
        s.contains("300 hook events refused"),
        "no row counts the refusals past the first 20\n{s}"
    );
}

// ---------------------------------------------------------------------------------------
// Transcript paths.

/// `transcript_path` at what is no transcript: a FIFO and a device inside
/// ~/.claude/projects, another user's file, a 10 GB sparse file, links out of the directory,
/// garbage, /dev/zero, /etc/passwd.jsonl, ~/.ssh/id_rsa. Each is refused with a row in its
/// session's transcript, never waited on: the session's later events still show, and a real
/// transcript beside them is read.
#[test]
fn hostile_transcript_paths_are_refused_with_a_row_and_never_hang() {
    use std::os::unix::fs::symlink;
    let mut lab = Lab::new("tails");
    let dir = lab.projects("hostile");
    let home = lab.w.home.clone();
    let ssh = home.join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(
        ssh.join("id_rsa"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n",
    )
    .unwrap();
    std::fs::write(
        ssh.join("id_rsa.jsonl"),
        "{\"type\":\"user\",\"message\":{\"content\":\"SECRET-KEY\"}}\n",
    )
    .unwrap();

    // What each session's transcript_path is, and the row its session must show.
    let fifo = dir.join("fifo.jsonl");
    let c = std::ffi::CString::new(fifo.display().to_string()).unwrap();
    // SAFETY: a plain mkfifo on a path of ours.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let device = dir.join("zero.jsonl");
    let c = std::ffi::CString::new(device.display().to_string()).unwrap();
    // SAFETY: mknod of /dev/zero's numbers (1, 5) on a path of ours; we run as root.
    let made_device =
        unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o600, libc::makedev(1, 5)) } == 0;
    let other = dir.join("other.jsonl");
    std::fs::write(
        &other,
        "{\"type\":\"user\",\"message\":{\"content\":\"NOT-OURS\"}}\n",
    )
    .unwrap();
    let c = std::ffi::CString::new(other.display().to_string()).unwrap();
    // SAFETY: chown of a file of ours to another uid (we run as root).
    let chowned = unsafe { libc::chown(c.as_ptr(), 4242, 4242) } == 0;
    let sparse = dir.join("sparse.jsonl");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(10 << 30)
        .unwrap();
    let link_dev = dir.join("link-zero.jsonl");
    symlink("/dev/zero", &link_dev).unwrap();
    let link_key = dir.join("link-key.jsonl");
    symlink(ssh.join("id_rsa.jsonl"), &link_key).unwrap();
    let escape = dir.join("escape");
    symlink(&ssh, &escape).unwrap();
    let garbage = dir.join("garbage.jsonl");
    std::fs::write(&garbage, "not a transcript line\n".repeat(60)).unwrap();
    let good = dir.join("good.jsonl");
    std::fs::write(
        &good,
        format!(
            "{}\n",
            json!({"type": "assistant", "uuid": "g1", "message": {"role": "assistant", "content": [{"type": "text", "text": "GOOD-TRANSCRIPT-LINE"}]}})
        ),
    )
    .unwrap();

    let mut cases: Vec<(&str, String, &str)> = vec![
        (
            "fifo",
            fifo.display().to_string(),
            "transcript main: not a regular file",
        ),
        (
            "other",
            other.display().to_string(),
            "transcript main: owned by uid 4242, not ours (0)",
        ),
        (
            "sparse",
            sparse.display().to_string(),
            "transcript main: 10240 MiB: larger than a transcript is read (256 MiB)",
        ),
        (
            "linkdev",
            link_dev.display().to_string(),
            "transcript main: cannot open it beneath",
        ),
        (
            "linkkey",
            link_key.display().to_string(),
            "transcript main: cannot open it beneath",
        ),
        (
            "escape",
            escape.join("id_rsa.jsonl").display().to_string(),
            "transcript main: cannot open it beneath",
        ),
        (
            "dotdot",
            format!("{}/../../../.ssh/id_rsa.jsonl", dir.display()),
            "transcript main: not a plain absolute path",
        ),
        (
            "garbage",
            garbage.display().to_string(),
            "transcript main: its first 50 lines are not JSON: not a transcript",
        ),
        (
            "devzero",
            "/dev/zero".into(),
            "transcript main: not a .jsonl file",
        ),
        (
            "passwd",
            "/etc/passwd.jsonl".into(),
            "transcript main: not beneath a transcript directory",
        ),
        (
            "sshkey",
            ssh.join("id_rsa").display().to_string(),
            "transcript main: not a .jsonl file",
        ),
        (
            "sshjsonl",
            ssh.join("id_rsa.jsonl").display().to_string(),
            "transcript main: not beneath a transcript directory",
        ),
    ];
    assert!(
        made_device,
        "mknod needs root: this sandbox runs the tests as root"
    );
    cases.push((
        "device",
        device.display().to_string(),
        "transcript main: not a regular file",
    ));
    assert!(
        chowned,
        "chown needs root: this sandbox runs the tests as root"
    );

    for (name, path, _) in &cases {
        let cwd = lab.w.proj.join(name);
        std::fs::create_dir_all(&cwd).unwrap();
        let d = send(
            &lab.w,
            "claude",
            &with(
                ev("SessionStart", &format!("t-{name}"), &cwd),
                json!({"transcript_path": path}),
            ),
        );
        assert!(d.took < Duration::from_secs(2), "{name}: {d:?}");
    }
    let cwd = lab.w.proj.join("good");
    send(
        &lab.w,
        "claude",
        &with(
            ev("SessionStart", "t-good", &cwd),
            json!({"transcript_path": good.display().to_string()}),
        ),
    );
    // Later events of every session still arrive: nothing waits on a file.
    for (name, _, _) in &cases {
        let cwd = lab.w.proj.join(name);
        send(
            &lab.w,
            "claude",
            &with(
                ev("Notification", &format!("t-{name}"), &cwd),
                json!({"notification_type": "note", "message": format!("{name} still here")}),
            ),
        );
    }
    let (took, ls) = lab.ls();
    assert!(took < Duration::from_secs(1), "{took:?}");
    assert!(
        ls.contains(&format!("{} sessions, 0 waiting", cases.len() + 2)),
        "{ls}"
    );

    for (name, _, row) in &cases {
        lab.select(name);
        let s = lab.t.wait_for(
            &[row, &format!("{name} still here")],
            Duration::from_secs(10),
        );
        for secret in ["SECRET-KEY", "NOT-OURS", "secret", "root:x:0:0"] {
            assert!(!s.contains(secret), "{name}: {secret} was read\n{s}");
        }
    }
    lab.select("good");
    lab.t.wait(&["GOOD-TRANSCRIPT-LINE"]);
    // A transcript that grows past 256 MiB (sparse: costs no disk) is let go, with a row.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&good)
        .unwrap()
        .set_len(300 << 20)
        .unwrap();
    lab.t
        .wait(&["transcript main: it grew past 256 MiB: no longer followed"]);

    // The FIFO was never opened for writing by anyone: had the host waited on it, nothing
    // after it would have shown. A writer now changes nothing either.
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags_nonblock()
        .open(&fifo);
    assert!(opened.is_err(), "a reader still holds the FIFO open");
    lab.stop_and_validate();
}

/// `OpenOptions` with O_NONBLOCK (a FIFO without a reader fails at once with ENXIO).
trait NonBlock {
    fn custom_flags_nonblock(&mut self) -> &mut Self;
}

impl NonBlock for std::fs::OpenOptions {
    fn custom_flags_nonblock(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(libc::O_NONBLOCK)
    }
}

// ---------------------------------------------------------------------------------------
// The hook client's fail-safe.

/// No host: a PermissionRequest falls through at once (nothing printed, exit 0, nothing on
/// stderr, under 100 ms), with no runtime directory, with an empty one, and with a dead
/// host's socket left behind.
#[test]
fn with_no_host_the_hook_falls_through_at_once() {
    let _serial = timing();
    let w = World::new("nohost");
    let p = w.proj.clone();
    let asks = permission("nh-1", &p, "rm -rf /").to_string();
    let check = |what: &str| {
        // The first run may pay for loading the binary from disk.
        let d = hook(&w, "claude", asks.clone());
        d.silent();
        assert!(d.took < Duration::from_secs(1), "{what}: {d:?}");
        let mut slowest = Duration::ZERO;
        for agent in ["claude", "codex"] {
            for _ in 0..3 {
                let d = hook(&w, agent, asks.clone());
                d.silent();
                assert!(
                    d.took < Duration::from_millis(100),
                    "{what}, {agent}: {d:?}"
                );
                slowest = slowest.max(d.took);
            }
        }
        println!("no host ({what}): the slowest fall-through took {slowest:?}");
    };
    // The world's runtime dir has no switchboard/ in it yet.
    check("no runtime directory");
    let dir = w.run.join("switchboard");
    std::fs::create_dir_all(&dir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    check("an empty runtime directory");
    // A host that crashed: its socket is there, nobody listens (connect is refused).
    let sock = dir.join("dead.sock");
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    assert!(sock.exists());
    check("a dead host's socket");
    // A runtime directory others may write to is not trusted: nothing is sent.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    check("a loose runtime directory");
    let _ = std::fs::remove_dir_all(&w.root);
}

/// A host killed (SIGKILL) while three PermissionRequests wait on its cards: each hook exits
/// within a second, printing nothing (the CLI's own prompt asks), exit 0, nothing on stderr.
/// The next hook finds the dead socket and falls through at once.
#[test]
fn a_host_killed_while_three_hooks_wait_leaves_each_at_its_own_prompt_within_a_second() {
    let _serial = timing();
    let mut lab = Lab::new("killed");
    let p = lab.w.proj.clone();
    // Three sessions (a CLI asks one thing at a time: a second request of the same agent
    // would release the first card).
    send(&lab.w, "claude", &ev("SessionStart", "k-1", &p));
    send(&lab.w, "claude", &ev("SessionStart", "k-3", &p));
    send(&lab.w, "codex", &ev("SessionStart", "k-2", &p));
    lab.t.wait(&["proj 3 joined"]);
    let hooks = vec![
        Hook::spawn(
            &lab.w,
            "claude",
            permission("k-1", &p, "echo one").to_string().into(),
        ),
        Hook::spawn(
            &lab.w,
            "claude",
            permission("k-3", &p, "echo two").to_string().into(),
        ),
        Hook::spawn(
            &lab.w,
            "codex",
            permission("k-2", &p, "echo three").to_string().into(),
        ),
    ];
    lab.t.wait(&["3 waiting"]);
    let (_, ls) = lab.ls();
    assert!(ls.contains("3 waiting"), "{ls}");
    let pid = lab.pid();
    let killed = Instant::now();
    kill(pid);
    for h in hooks {
        let d = h.finish_by(killed + Duration::from_secs(1));
        d.silent();
        assert!(
            killed.elapsed() < Duration::from_secs(1),
            "{:?} after the kill: {d:?}",
            killed.elapsed()
        );
    }
    // The socket it left: refused at once.
    let d = hook(
        &lab.w,
        "claude",
        permission("k-1", &p, "echo four").to_string(),
    );
    d.silent();
    assert!(d.took < Duration::from_millis(100), "{d:?}");
    // What it recorded until it was killed still reads.
    wait_until(
        "the attached terminal to end",
        Duration::from_secs(10),
        || lab.t.child.try_wait().ok().flatten().is_some(),
    );
    lab.w.validate_all();
}

/// A host that is stopped (SIGSTOP: its socket still takes connections, nobody answers):
/// a PermissionRequest's hook gives up after ~200 ms and falls through; so does a plain
/// event's hook, which waits for the host to take its event (so that events keep the CLI's
/// order) and never longer than that. Once the host runs again, the card of the hook that
/// gave up leaves the inbox on its own, and the host goes on.
#[test]
fn a_stopped_host_costs_the_hook_two_hundred_ms_and_its_card_goes_when_it_runs_again() {
    let _serial = timing();
    let mut lab = Lab::new("sigstop");
    let p = lab.w.proj.clone();
    send(&lab.w, "claude", &ev("SessionStart", "st-1", &p));
    lab.t.wait(&["proj joined"]);
    let pid = lab.pid();
    // SAFETY: signalling the host of this test.
    unsafe {
        libc::kill(pid, libc::SIGSTOP);
    }
    let d = hook(
        &lab.w,
        "claude",
        permission("st-1", &p, "echo while-stopped").to_string(),
    );
    d.silent();
    assert!(
        d.took >= Duration::from_millis(200) && d.took < Duration::from_millis(600),
        "{d:?}"
    );
    let d = send(
        &lab.w,
        "claude",
        &with(
            ev("Notification", "st-1", &p),
            json!({"notification_type": "note", "message": "sent while stopped"}),
        ),
    );
    d.silent();
    assert!(d.took < Duration::from_millis(600), "{d:?}");
    // SAFETY: as above.
    unsafe {
        libc::kill(pid, libc::SIGCONT);
    }
    lab.select("proj");
    lab.t.wait(&["sent while stopped"]);
    // Its hook is gone: the card went to its own terminal, nothing waits.
    let s = lab
        .t
        .wait_gone(&["1 waiting", "waiting on you"], Duration::from_secs(5));
    assert!(s.contains("nothing waits for you"), "{s}");
    let (took, ls) = lab.ls();
    assert!(ls.contains("2 sessions, 0 waiting"), "{ls}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    // The host goes on: the next card goes both ways.
    let gate = Hook::spawn(
        &lab.w,
        "claude",
        permission("st-1", &p, "echo after-cont").to_string().into(),
    );
    lab.t.wait(&["1 waiting"]);
    lab.t.send(b"g");
    lab.t.wait(&["$ echo after-cont"]);
    lab.t.send(b"y");
    assert_eq!(gate.finish(Duration::from_secs(10)).stdout, ALLOW);
    lab.stop_and_validate();
}

/// A card answered here: `g` opens it, `y` allows, and the hook prints exactly the allow
/// decision Claude reads; `T` hands the next back (nothing printed); Codex's allow is its own.
#[test]
fn a_card_answered_here_prints_exactly_the_decision() {
    let mut lab = Lab::new("answer");
    let p = lab.w.proj.clone();
    send(&lab.w, "claude", &ev("SessionStart", "an-1", &p));
    lab.t.wait(&["proj joined"]);
    let gate = Hook::spawn(
        &lab.w,
        "claude",
        permission("an-1", &p, "touch answered").to_string().into(),
    );
    lab.t.wait(&["1 waiting"]);
    lab.t.send(b"g");
    lab.t.wait(&["$ touch answered", "[y] Allow once"]);
    lab.t.send(b"y");
    let d = gate.finish(Duration::from_secs(10));
    d.silent_stderr();
    assert_eq!(d.stdout, ALLOW);
    let v: Value = serde_json::from_str(&d.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["decision"]["behavior"], "allow");

    // Handed back to its own terminal: nothing printed, the CLI's prompt asks.
    let gate = Hook::spawn(
        &lab.w,
        "claude",
        permission("an-1", &p, "touch handed-back")
            .to_string()
            .into(),
    );
    lab.t.wait(&["1 waiting"]);
    lab.t.send(b"g");
    lab.t.wait(&["$ touch handed-back"]);
    lab.t.send(b"T");
    gate.finish(Duration::from_secs(10)).silent();
    lab.t.wait(&["nothing waits for you"]);
    lab.stop_and_validate();
}

// ---------------------------------------------------------------------------------------
// What `stop` leaves.

/// `switchboard stop` returns once the host "has stopped, with what it left": the workspace
/// manifest is then final (no half-written temporary beside it, the same text as once the
/// host process is gone), so `stop && validate` checks what the host left.
#[test]
fn after_stop_returns_the_manifest_is_final() {
    let mut lab = Lab::new("stopman");
    let p = lab.w.proj.clone();
    for i in 0..3 {
        send(
            &lab.w,
            "claude",
            &ev("SessionStart", &format!("sm-{i}"), &p),
        );
    }
    lab.t.wait(&["┌ Sessions (4)"]);
    let gate = Hook::spawn(
        &lab.w,
        "claude",
        permission("sm-0", &p, "echo x").to_string().into(),
    );
    lab.t.wait(&["1 waiting"]);
    lab.t.send(b"g");
    lab.t.wait(&["$ echo x"]);
    // Past the card's settle time. The answer is written to the manifest at once; the writer
    // then pauses 200 ms, and the host is stopped within it.
    std::thread::sleep(Duration::from_millis(400));
    lab.t.send_now(b"y");
    assert_eq!(gate.finish(Duration::from_secs(10)).stdout, ALLOW);
    let recordings = lab.w.data.join("recordings");
    let manifest = || -> (Vec<String>, String) {
        let mut names: Vec<String> = std::fs::read_dir(&recordings)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let text = names
            .iter()
            .find(|n| n.starts_with("workspace-") && n.ends_with(".json"))
            .map(|n| std::fs::read_to_string(recordings.join(n)).unwrap_or_default())
            .unwrap_or_default();
        (names, text)
    };
    lab.w.stop(&lab.name);
    let at_stop = manifest();
    // Watch the directory until the host is gone: does anything still write there?
    let mut seen: Vec<String> = Vec::new();
    let watch = Instant::now();
    while watch.elapsed() < Duration::from_millis(1500) {
        for e in std::fs::read_dir(&recordings).unwrap().flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.ends_with(".tmp") && !seen.contains(&n) {
                seen.push(n);
            }
        }
    }
    wait_until("the host to exit", Duration::from_secs(10), || {
        let out = lab.w.sb(&["ls"]);
        !String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.starts_with(&lab.name))
    });
    let at_exit = manifest();
    lab.w.validate_all();
    // (Found here, fixed in crates/tui/src/host/serve.rs: the manifest is let go, and so
    // written, before the goodbye.)
    let changed: Vec<String> = at_stop
        .1
        .lines()
        .zip(at_exit.1.lines())
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("at stop: {a}\nat exit: {b}"))
        .collect();
    assert!(
        seen.is_empty() && at_stop == at_exit,
        "the host still wrote its manifest after `switchboard stop` returned: {seen:?} \
         written after;\n{}\n(files at stop {:?}, at exit {:?})",
        changed.join("\n"),
        at_stop.0,
        at_exit.0
    );
}

// ---------------------------------------------------------------------------------------
// The wire, spoken directly.

fn wire_frame(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = ((body.len() + 1) as u32).to_be_bytes().to_vec();
    out.push(tag);
    out.extend_from_slice(body);
    out
}

/// A hook's connection as `switchboard hook` opens it: its hello, then its event.
fn raw_hook(
    lab: &Lab,
    agent: &str,
    waits: bool,
    event: &[u8],
) -> std::io::Result<std::os::unix::net::UnixStream> {
    let path = lab
        .w
        .run
        .join("switchboard")
        .join(format!("{}.sock", lab.name));
    let mut s = std::os::unix::net::UnixStream::connect(path)?;
    let hello = json!({
        "version": switchboard::host::wire::VERSION,
        "want": "hook",
        "agent": agent,
        "waits": waits,
        "size": event.len()
    });
    let mut out = wire_frame(b'J', hello.to_string().as_bytes());
    out.extend(wire_frame(b'E', event));
    s.write_all(&out)?;
    Ok(s)
}

/// The next JSON message on a hook's connection, `None` when it closed (or `limit` passed).
fn raw_reply(s: &mut std::os::unix::net::UnixStream, limit: Duration) -> Option<Value> {
    use std::io::Read;
    s.set_read_timeout(Some(limit)).ok()?;
    let mut len = [0u8; 4];
    s.read_exact(&mut len).ok()?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body[1..]).ok()
}

/// Hooks that wait are bounded too: 1100 PermissionRequests of one Codex session (Codex
/// releases none of its cards itself) held open at once, against a host with the usual
/// desktop limit of 1024 open files, must not cost the host its socket: `ls` still answers
/// in under a second while they wait, and once they go, the host goes on.
#[test]
fn a_flood_of_waiting_hooks_does_not_cost_the_host_its_socket() {
    let _serial = timing();
    // This test holds 1100 connections itself.
    let mut mine = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: reading and raising our own soft limit to its hard limit.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut mine);
        if mine.rlim_cur < mine.rlim_max {
            let up = libc::rlimit {
                rlim_cur: mine.rlim_max,
                rlim_max: mine.rlim_max,
            };
            libc::setrlimit(libc::RLIMIT_NOFILE, &up);
        }
    }
    // (The test itself holds the 1100 connections: every machine this runs on allows it.)
    assert!(
        mine.rlim_max >= 1400,
        "1100 connections need more than {} open files",
        mine.rlim_max
    );
    let mut lab = Lab::new("gates");
    let p = lab.w.proj.clone();
    send(&lab.w, "codex", &ev("SessionStart", "gf-1", &p));
    lab.t.wait(&["proj joined"]);
    let pid = lab.pid();
    let desktop = libc::rlimit {
        rlim_cur: 1024,
        rlim_max: mine.rlim_max,
    };
    // SAFETY: the host's soft limit lowered to a desktop's default (we run as root).
    let r = unsafe { libc::prlimit(pid, libc::RLIMIT_NOFILE, &desktop, std::ptr::null_mut()) };
    assert_eq!(r, 0, "prlimit");

    let mut conns = Vec::new();
    for i in 0..1100 {
        let e = permission("gf-1", &p, &format!("echo {i}")).to_string();
        conns.push(raw_hook(&lab, "codex", true, e.as_bytes()).expect("connect"));
    }
    // Each hears its card is up (or, past a bound, that it falls through).
    let mut accepted = 0;
    let mut passed = 0;
    let mut silent = 0;
    let t = Instant::now();
    for c in &mut conns {
        let left = Duration::from_secs(3)
            .saturating_sub(t.elapsed())
            .max(Duration::from_millis(1));
        match raw_reply(c, left) {
            Some(v) if v["t"] == "hook_accepted" => accepted += 1,
            Some(_) => passed += 1,
            None => silent += 1,
        }
    }
    println!("1100 waiting hooks: {accepted} cards up, {passed} passed, {silent} heard nothing");
    // The bound held: at most that many cards of one session; the rest fell through.
    assert!(
        accepted <= 32 && passed > 0,
        "{accepted} cards up, {passed} passed, {silent} heard nothing"
    );
    let t = Instant::now();
    let out = lab.w.sb(&["ls"]);
    let ls_took = t.elapsed();
    let ls = String::from_utf8_lossy(&out.stdout).into_owned();
    let s = lab.t.screen();
    let waiting = s
        .lines()
        .find(|l| l.starts_with(" ‖"))
        .unwrap_or("")
        .trim()
        .to_string();
    drop(conns);
    // Once they go, the host goes on.
    wait_until("the host to answer again", Duration::from_secs(20), || {
        String::from_utf8_lossy(&lab.w.sb(&["ls"]).stdout).contains("0 waiting")
    });
    let (took, _) = lab.ls();
    assert!(took < Duration::from_secs(1), "{took:?}");
    lab.stop_and_validate();
    // Found here: nothing bounded the hooks that wait, and at the default soft limit of
    // 1024 descriptors about 1010 waiting hooks made the host's accept fail (EMFILE), so
    // `ls`, `stop`, `attach` and every other hook timed out. Now a session holds at most
    // `session::MAX_WAITING` waiting hooks (one more falls through, said on screen), and a
    // host raises its soft descriptor limit to the hard one.
    assert!(
        ls_took < Duration::from_secs(1) && ls.contains("(pid "),
        "`ls` took {ls_took:?} while {accepted} hooks waited ({waiting}): {ls}"
    );
}

/// "Allow always" sends the CLI's own suggestions back as `updatedPermissions`. Suggestions
/// in a hostile event that are not permission updates Claude takes (an `addRules` whose
/// `rules` is no list, a `setMode` to a mode that is no mode) must not be printed as they
/// are: Claude refuses such a decision and falls through to its own dialog, after the person
/// chose "allow always" here.
#[test]
fn allow_always_never_prints_suggestions_claude_would_refuse() {
    let mut lab = Lab::new("suggest");
    let p = lab.w.proj.clone();
    send(&lab.w, "claude", &ev("SessionStart", "su-1", &p));
    lab.t.wait(&["proj joined"]);
    let e = with(
        permission("su-1", &p, "touch suggested"),
        json!({"permission_suggestions": [
            {"type": "addRules", "rules": "notarray", "behavior": "allow", "destination": "session"},
            {"type": "setMode", "mode": "\u{1b}]0;x\u{7}nomode", "destination": "userSettings"},
        ]}),
    );
    let gate = Hook::spawn(&lab.w, "claude", e.to_string().into());
    lab.t.wait(&["1 waiting"]);
    lab.t.send(b"g");
    let s = lab.t.wait(&["$ touch suggested"]);
    // Left out of "always", and the card says so, escaped.
    assert!(s.contains("leaves out 2 suggestion(s)"), "{s}");
    assert!(!s.contains("always allows: setMode"), "{s}");
    assert!(frame_intact(&s), "{s}");
    lab.t.send(b"a");
    let d = gate.finish(Duration::from_secs(10));
    d.silent_stderr();
    lab.t.wait(&["nothing waits for you"]);
    lab.stop_and_validate();
    // `a` printed an allow (a hook that fell through would print nothing, and pass below).
    let printed: Value = serde_json::from_str(&d.stdout)
        .unwrap_or_else(|e| panic!("`a` printed no decision ({e}): {:?}", d.stdout));
    assert_eq!(
        printed["hookSpecificOutput"]["decision"]["behavior"], "allow",
        "{printed}"
    );
    let updates = printed["hookSpecificOutput"]["decision"]["updatedPermissions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let refused: Vec<&Value> = updates
        .iter()
        .filter(|u| match u["type"].as_str() {
            Some("addRules" | "replaceRules" | "removeRules") => !u["rules"].is_array(),
            Some("setMode") => !matches!(
                u["mode"].as_str(),
                Some("default" | "acceptEdits" | "bypassPermissions" | "plan" | "dontAsk")
            ),
            _ => false,
        })
        .collect();
    // Found here: `a` copied the event's permission_suggestions into updatedPermissions
    // unchecked, and validate passed them. Now only well-formed updates that never stop the
    // CLI asking are kept (`encode::checked_suggestions`), the card says which were left
    // out, and validate checks every printed update.
    assert!(
        refused.is_empty(),
        "printed updatedPermissions Claude refuses: {refused:?}\nstdout: {}",
        d.stdout
    );
}
