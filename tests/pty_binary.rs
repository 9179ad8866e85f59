//! Black-box tests of the built `switchboard` binary in a pseudo-terminal.
//!
//! Each test starts the real binary on a pty (120x40) and feeds everything it writes into a
//! `vt100::Parser`, then drives it with key bytes and waits on the parsed screen. What these
//! catch and in-process tests cannot: terminal modes really switched on and off (alternate
//! screen, cursor, bracketed paste, mouse capture, raw mode), the exit code, signals, and the
//! recording written by the real process.
//!
//! The tests against the real `claude` CLI are skipped with a note when the pinned CLI is not
//! installed in `tests/peers` and `CI` is not set (`common::require_or_skip`).

#[path = "support/common.rs"]
mod common;
#[path = "support/fake_model.rs"]
mod fake_model;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{CLAUDE_CLI, require_or_skip};
use fake_model::{CLAUDE_ENV_REMOVE, FakeModel, Scenario, claude_bin, claude_env, temp_dir};
use portable_pty::{CommandBuilder, ExitStatus, MasterPty, PtySize, native_pty_system};
use serde_json::Value;

const ROWS: u16 = 40;
const COLS: u16 = 120;
/// One wait for something on screen (the whole test stays well under 30 s).
const STEP: Duration = Duration::from_secs(15);
const POLL: Duration = Duration::from_millis(20);

const ENTER: &[u8] = b"\r";
const SPACE: &[u8] = b" ";
const DOWN: &[u8] = b"\x1b[B";
const ESC: &[u8] = b"\x1b";
const CTRL_D: &[u8] = b"\x04";

/// Footer hints: which pane has focus.
const PROMPT_HINT: &str = "Enter send · Tab focus";
const PANE_HINT: &str = "q quit";

fn switchboard() -> &'static str {
    env!("CARGO_BIN_EXE_switchboard")
}

/// The switchboard process on a pty, its output parsed by a terminal emulator.
struct Tui {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    parser: Arc<Mutex<vt100::Parser>>,
    raw: Arc<Mutex<Vec<u8>>>,
    eof: Arc<AtomicBool>,
    // Kept open until the child is gone: dropping portable-pty's writer types "\n" + EOF (^D),
    // which switchboard would read as Ctrl-D.
    writer: Box<dyn Write + Send>,
    master: Box<dyn MasterPty + Send>,
    data_dir: PathBuf,
}

impl Tui {
    /// Start `switchboard <args>` with `SWITCHBOARD_DATA_DIR=<data_dir>`, `TERM=xterm-256color`,
    /// plus `env` set and `remove` unset.
    fn spawn(args: &[&str], env: &[(String, String)], remove: &[&str], data_dir: &Path) -> Tui {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("openpty");
        let mut cmd = CommandBuilder::new(switchboard());
        cmd.args(args);
        for k in remove {
            cmd.env_remove(k);
        }
        // Never pick up a developer's setting that would change which agent runs.
        cmd.env_remove("SWITCHBOARD_CLAUDE_BIN");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.env("SWITCHBOARD_DATA_DIR", data_dir);
        cmd.env("TERM", "xterm-256color");
        cmd.cwd(data_dir);
        let child = pair.slave.spawn_command(cmd).expect("spawn switchboard");
        // Only the child holds the slave now: reads end (EOF/EIO) once it and its heirs close it.
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().expect("pty reader");
        let writer = pair.master.take_writer().expect("pty writer");
        let parser = Arc::new(Mutex::new(vt100::Parser::new(nz(ROWS), nz(COLS), 0)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let eof = Arc::new(AtomicBool::new(false));
        {
            let (parser, raw, eof) = (parser.clone(), raw.clone(), eof.clone());
            std::thread::Builder::new()
                .name("pty-reader".into())
                .spawn(move || {
                    let mut buf = [0u8; 16 * 1024];
                    loop {
                        match reader.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                raw.lock().unwrap().extend_from_slice(&buf[..n]);
                                parser.lock().unwrap().process(&buf[..n]);
                            }
                        }
                    }
                    eof.store(true, Ordering::SeqCst);
                })
                .expect("spawn reader thread");
        }
        Tui {
            child,
            parser,
            raw,
            eof,
            writer,
            master: pair.master,
            data_dir: data_dir.to_path_buf(),
        }
    }

    fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    fn raw(&self) -> Vec<u8> {
        self.raw.lock().unwrap().clone()
    }

    fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).expect("write to pty");
        self.writer.flush().expect("flush pty");
    }

    /// Poll the screen until `cond` holds; panic with the screen after `timeout` or when the
    /// process exits first.
    fn wait_screen(
        &mut self,
        what: &str,
        cond: impl Fn(&str) -> bool,
        timeout: Duration,
    ) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if cond(&s) {
                return s;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                // Let the last bytes reach the parser before reporting.
                self.wait_eof(Duration::from_secs(2));
                let s = self.screen();
                if cond(&s) {
                    return s;
                }
                panic!(
                    "switchboard exited ({status:?}) while waiting for {what}; screen:\n{s}\n--- raw tail:\n{}",
                    self.raw_tail()
                );
            }
            if start.elapsed() > timeout {
                panic!("timed out after {timeout:?} waiting for {what}; screen:\n{s}");
            }
            std::thread::sleep(POLL);
        }
    }

    fn wait_text(&mut self, text: &str) -> String {
        self.wait_screen(&format!("{text:?}"), |s| s.contains(text), STEP)
    }

    /// Wait for the process to end; panic with the screen after `timeout`.
    fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            if start.elapsed() > timeout {
                panic!(
                    "switchboard did not exit within {timeout:?}; screen:\n{}",
                    self.screen()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// Wait until the reader saw the end of the pty output. Returns whether it did.
    fn wait_eof(&self, timeout: Duration) -> bool {
        let start = Instant::now();
        while !self.eof.load(Ordering::SeqCst) {
            if start.elapsed() > timeout {
                return false;
            }
            std::thread::sleep(POLL);
        }
        true
    }

    fn raw_tail(&self) -> String {
        let raw = self.raw();
        let from = raw.len().saturating_sub(600);
        format!("{:?}", String::from_utf8_lossy(&raw[from..]))
    }

    /// After exit: every mode switchboard set is undone, in the byte stream, in the emulator's
    /// state and in the tty's line discipline (raw mode off).
    fn assert_restored(&self) {
        assert!(
            self.wait_eof(Duration::from_secs(5)),
            "the pty output did not end after switchboard exited (something still holds the terminal)"
        );
        let raw = self.raw();
        let pairs: [(&str, &[u8], &[u8]); 4] = [
            ("alternate screen", b"\x1b[?1049h", b"\x1b[?1049l"),
            ("cursor", b"\x1b[?25l", b"\x1b[?25h"),
            ("bracketed paste", b"\x1b[?2004h", b"\x1b[?2004l"),
            ("mouse capture", b"\x1b[?1000h", b"\x1b[?1000l"),
        ];
        for (name, on, off) in pairs {
            let last_off = rfind(&raw, off);
            assert!(
                last_off.is_some(),
                "{name}: {off:?} never written; raw tail: {}",
                self.raw_tail()
            );
            if let Some(last_on) = rfind(&raw, on) {
                assert!(
                    last_off > Some(last_on),
                    "{name}: the last {on:?} (at {last_on}) is not followed by {off:?}; raw tail: {}",
                    self.raw_tail()
                );
            }
        }
        assert!(
            rfind(&raw, b"\x1b[?1049h").is_some(),
            "switchboard never entered the alternate screen"
        );
        let parser = self.parser.lock().unwrap();
        let screen = parser.screen();
        assert!(
            !screen.alternate_screen(),
            "still on the alternate screen at the end"
        );
        assert!(
            !screen.hide_cursor(),
            "the cursor is still hidden at the end"
        );
        assert!(
            !screen.bracketed_paste(),
            "bracketed paste is still on at the end"
        );
        assert_eq!(
            screen.mouse_protocol_mode(),
            vt100::MouseProtocolMode::None,
            "mouse reporting is still on at the end"
        );
        drop(parser);
        // Raw mode: the tty is back in canonical mode with echo.
        assert_eq!(
            self.tty_canonical(),
            Some(true),
            "the tty is still in raw mode after exit"
        );
    }

    /// Whether the pty's line discipline has ICANON and ECHO on (`None`: cannot tell).
    fn tty_canonical(&self) -> Option<bool> {
        let fd = self.master.as_raw_fd()?;
        // SAFETY: tcgetattr only fills the termios struct for a valid fd.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(fd, &mut t) } != 0 {
            return None;
        }
        Some(t.c_lflag & libc::ICANON != 0 && t.c_lflag & libc::ECHO != 0)
    }

    /// Every entry of the one recording under `<data dir>/recordings/`.
    fn recording(&self) -> Vec<Value> {
        let dir = self.data_dir.join("recordings");
        let files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("no recordings dir {}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        assert_eq!(files.len(), 1, "expected one recording, found {files:?}");
        let text = std::fs::read_to_string(&files[0]).expect("read recording");
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}")))
            .collect()
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        // Only on failure paths: never leave our child running.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn nz(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n).expect("non-zero size")
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// The lines switchboard wrote to the agent's stdin (`dir: "out"`), parsed.
fn sent_lines(rec: &[Value]) -> Vec<Value> {
    rec.iter()
        .filter(|e| e["dir"] == "out")
        .filter_map(|e| serde_json::from_str(e["line"].as_str()?).ok())
        .collect()
}

/// The bodies of every `control_response` switchboard sent.
fn control_responses(rec: &[Value]) -> Vec<Value> {
    sent_lines(rec)
        .into_iter()
        .filter(|l| l["type"] == "control_response")
        .map(|l| l["response"]["response"].clone())
        .collect()
}

/// How often each `can_use_tool` / `hook_callback` the agent sent was answered, in order.
fn gate_answer_counts(rec: &[Value]) -> Vec<(Value, usize)> {
    let sent = sent_lines(rec);
    rec.iter()
        .filter(|e| e["dir"] == "in")
        .filter_map(|e| serde_json::from_str::<Value>(e["line"].as_str()?).ok())
        .filter(|l| {
            l["type"] == "control_request"
                && matches!(
                    l["request"]["subtype"].as_str(),
                    Some("can_use_tool" | "hook_callback")
                )
        })
        .map(|l| {
            let id = l["request_id"].clone();
            let n = sent
                .iter()
                .filter(|s| s["type"] == "control_response" && s["response"]["request_id"] == id)
                .count();
            (id, n)
        })
        .collect()
}

/// No gate was answered twice. (A gate may stay unanswered when the agent asked it after
/// switchboard had closed its stdin: the demo agent goes on until it notices the end of input.)
fn assert_no_gate_answered_twice(rec: &[Value]) {
    for (id, n) in gate_answer_counts(rec) {
        assert!(n <= 1, "gate {id} was answered {n} times");
    }
}

/// Every gate was answered exactly once; returns how many there were.
fn assert_every_gate_answered_once(rec: &[Value]) -> usize {
    let counts = gate_answer_counts(rec);
    for (id, n) in &counts {
        assert_eq!(*n, 1, "gate {id} was answered {n} times");
    }
    counts.len()
}

/// The pinned CLI, or `None` under the skip rule.
fn claude_or_skip(test: &str) -> Option<PathBuf> {
    require_or_skip(test, CLAUDE_CLI, claude_bin())
}

/// Everything a real-CLI run needs: the fake model, a home, a cwd and a data dir.
struct ClaudeRun {
    model: FakeModel,
    env: Vec<(String, String)>,
    cwd: PathBuf,
    data: PathBuf,
}

fn claude_run(tag: &str, scenario: Scenario) -> ClaudeRun {
    let model = FakeModel::start_blocking(scenario);
    let home = temp_dir(&format!("pty-{tag}-home"));
    let cwd = temp_dir(&format!("pty-{tag}-cwd"));
    let data = temp_dir(&format!("pty-{tag}-data"));
    let env = claude_env(&home, &model.base_url());
    ClaudeRun {
        model,
        env,
        cwd,
        data,
    }
}

fn spawn_claude(run: &ClaudeRun, bin: &Path) -> Tui {
    let bin = bin.display().to_string();
    let cwd = run.cwd.display().to_string();
    Tui::spawn(
        &["claude", "--claude-bin", &bin, "--cwd", &cwd],
        &run.env,
        CLAUDE_ENV_REMOVE,
        &run.data,
    )
}

fn spawn_demo(tag: &str) -> (Tui, PathBuf) {
    let cwd = temp_dir(&format!("pty-{tag}-cwd"));
    let data = temp_dir(&format!("pty-{tag}-data"));
    let cwd_s = cwd.display().to_string();
    let tui = Tui::spawn(
        &["demo", "--cwd", &cwd_s],
        &[("SWITCHBOARD_DEMO_FAST".into(), "1".into())],
        &[],
        &data,
    );
    (tui, cwd)
}

// ---------------------------------------------------------------------------------------------

/// Real CLI: prompt → AskUserQuestion card → answer with keys → the model's reply → Ctrl-D.
#[test]
fn claude_question_answered_with_keys_then_ctrl_d() {
    let Some(bin) = claude_or_skip("claude_question_answered_with_keys_then_ctrl_d") else {
        return;
    };
    let run = claude_run("ask", Scenario::load("pty_ask_single"));
    let mut tui = spawn_claude(&run, &bin);
    tui.wait_text(PROMPT_HINT);
    tui.send(b"PTY_ASK which modules?");
    tui.wait_text("PTY_ASK which modules?");
    tui.send(ENTER);

    tui.wait_text("Which modules should get audit logging?");
    tui.wait_screen(
        "the multi-select options",
        |s| s.contains("multi-select") && s.contains("[ ] Auth") && s.contains("[ ] Billing"),
        STEP,
    );
    tui.send(SPACE);
    tui.wait_text("[x] Auth");
    tui.send(DOWN);
    tui.wait_text("› 2. [ ] Billing");
    tui.send(SPACE);
    tui.wait_screen(
        "Auth and Billing chosen",
        |s| s.contains("[x] Billing") && s.contains("2 selected"),
        STEP,
    );
    tui.send(ENTER);

    let screen = tui.wait_text("PTY_FINAL: audit logging goes into Auth and Billing.");
    assert!(
        !screen.contains("PTY_UNEXPECTED_ANSWER"),
        "the model got another answer:\n{screen}"
    );
    assert!(
        !screen.contains("multi-select: Space toggles"),
        "the question card is still open:\n{screen}"
    );
    // The turn is over; answering the gate left the focus on the transcript.
    tui.wait_text(PANE_HINT);

    tui.send(CTRL_D);
    let status = tui.wait_exit(STEP);
    assert!(status.success(), "exit status {status:?}");
    tui.assert_restored();

    let rec = tui.recording();
    assert_eq!(assert_every_gate_answered_once(&rec), 1);
    let answers: Vec<Value> = control_responses(&rec)
        .into_iter()
        .filter(|b| b["behavior"] == "allow" && b["updatedInput"]["answers"].is_object())
        .collect();
    assert_eq!(answers.len(), 1, "answers sent: {answers:?}");
    assert_eq!(
        answers[0]["updatedInput"]["answers"]["Which modules should get audit logging?"],
        "Auth, Billing"
    );
    let results = run.model.tool_results();
    assert!(
        results
            .iter()
            .any(|r| format!("{r:?}").contains("Auth, Billing")),
        "the model never received the answer: {results:?}"
    );
    run.model.assert_no_unexpected();
}

/// Real CLI: a Bash write gate allowed with `y`; the file appears; Esc then `q` quits.
#[test]
fn claude_bash_allowed_with_y_then_q() {
    let Some(bin) = claude_or_skip("claude_bash_allowed_with_y_then_q") else {
        return;
    };
    let run = claude_run("bash", Scenario::load("bash_write"));
    let mut tui = spawn_claude(&run, &bin);
    tui.wait_text(PROMPT_HINT);
    tui.send(b"BASH_WRITE please");
    tui.wait_text("BASH_WRITE please");
    tui.send(ENTER);

    tui.wait_screen(
        "the Bash permission card",
        |s| s.contains("Permission · Bash") && s.contains("$ touch created.txt"),
        STEP,
    );
    assert!(
        !run.cwd.join("created.txt").exists(),
        "the command ran before it was allowed"
    );
    tui.send(b"y");
    tui.wait_text("The file is in place.");
    assert!(
        run.cwd.join("created.txt").is_file(),
        "created.txt is not in {}",
        run.cwd.display()
    );
    // The gate closed and the focus stayed off the prompt, so `q` quits.
    tui.wait_text(PANE_HINT);
    tui.send(b"q");
    let status = tui.wait_exit(STEP);
    assert!(status.success(), "exit status {status:?}");
    tui.assert_restored();

    let rec = tui.recording();
    assert_eq!(assert_every_gate_answered_once(&rec), 1);
    let allowed = control_responses(&rec)
        .into_iter()
        .any(|b| b["behavior"] == "allow" && b["updatedInput"]["command"] == "touch created.txt");
    assert!(allowed, "no allow for the Bash command in the recording");
    run.model.assert_no_unexpected();
}

/// Demo: allow the first permission with `y`; Ctrl-D with gates pending asks first; `y` quits.
#[test]
fn demo_quit_with_pending_gates_asks_first() {
    let (mut tui, _cwd) = spawn_demo("demo-quit");
    tui.wait_screen(
        "the first permission card",
        |s| s.contains("Permission · Bash") && s.contains("touch demo-output.txt"),
        STEP,
    );
    tui.send(b"y");
    // The fan-out opens the next gates (the reviewer's Edit, the explorer's Grep breakpoint).
    tui.wait_screen(
        "the next gates",
        |s| s.contains("Permission · Edit") || s.contains("Breakpoint · Grep"),
        STEP,
    );
    tui.send(CTRL_D);
    let confirm = tui.wait_screen(
        "the quit confirmation",
        |s| s.contains("quit switchboard?") && s.contains("still waiting"),
        STEP,
    );
    let waiting: usize = confirm
        .split(" gate(s) are still waiting")
        .next()
        .and_then(|head| head.split_whitespace().last())
        .and_then(|n| {
            n.trim_start_matches(|c: char| !c.is_ascii_digit())
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no gate count in the confirmation:\n{confirm}"));
    assert!(waiting >= 1, "{confirm}");
    tui.send(b"y");
    let status = tui.wait_exit(STEP);
    assert!(status.success(), "exit status {status:?}");
    tui.assert_restored();

    // The pending gates were answered fail-closed before the agent's stdin closed.
    let rec = tui.recording();
    assert_no_gate_answered_twice(&rec);
    let bodies = control_responses(&rec);
    assert!(
        bodies.iter().any(|b| b["behavior"] == "allow"),
        "the first permission's allow is missing: {bodies:?}"
    );
    let fail_closed = bodies
        .iter()
        .filter(|b| {
            b["behavior"] == "deny" && b["message"] == "switchboard exited"
                || b["decision"] == "block" && b["reason"] == "switchboard exited"
        })
        .count();
    assert!(
        fail_closed >= waiting,
        "{waiting} gates were waiting, {fail_closed} fail-closed answers: {bodies:?}"
    );
}

/// Demo: SIGTERM while a gate is pending restores the terminal and denies the gate.
#[test]
fn demo_sigterm_restores_terminal_and_denies_pending_gate() {
    signal_with_pending_gate(libc::SIGTERM, "demo-term");
}

/// Demo: SIGHUP (the terminal went away) is handled like SIGTERM.
#[test]
fn demo_sighup_restores_terminal_and_denies_pending_gate() {
    signal_with_pending_gate(libc::SIGHUP, "demo-hup");
}

fn signal_with_pending_gate(sig: libc::c_int, tag: &str) {
    let (mut tui, _cwd) = spawn_demo(tag);
    tui.wait_screen(
        "the first permission card",
        |s| s.contains("Permission · Bash") && s.contains("touch demo-output.txt"),
        STEP,
    );
    // While the TUI runs the tty is in raw mode (this also shows the final check can see it).
    assert_eq!(
        tui.tty_canonical(),
        Some(false),
        "the tty is not in raw mode while the TUI runs"
    );
    let pid = tui.child.process_id().expect("child pid");
    let rc = unsafe { libc::kill(pid as libc::pid_t, sig) };
    assert_eq!(rc, 0, "kill({sig}) failed");
    let status = tui.wait_exit(STEP);
    assert!(status.signal().is_none(), "killed by a signal: {status:?}");
    assert!(status.success(), "exit status {status:?}");
    tui.assert_restored();

    let rec = tui.recording();
    assert_no_gate_answered_twice(&rec);
    let gate_id = rec
        .iter()
        .filter(|e| e["dir"] == "in")
        .filter_map(|e| serde_json::from_str::<Value>(e["line"].as_str()?).ok())
        .find(|l| {
            l["type"] == "control_request"
                && l["request"]["subtype"] == "can_use_tool"
                && l["request"]["tool_name"] == "Bash"
        })
        .map(|l| l["request_id"].clone())
        .expect("the Bash can_use_tool in the recording");
    let answers: Vec<Value> = sent_lines(&rec)
        .into_iter()
        .filter(|l| l["type"] == "control_response" && l["response"]["request_id"] == gate_id)
        .collect();
    assert_eq!(answers.len(), 1, "answers to the pending gate: {answers:?}");
    let body = &answers[0]["response"]["response"];
    assert_eq!(body["behavior"], "deny", "{body}");
    assert_eq!(body["message"], "switchboard exited", "{body}");
}

/// A missing `claude` binary: exit code 2 and a message saying how to get one.
#[test]
fn claude_bin_missing_exits_2_with_install_hint() {
    let data = temp_dir("pty-nobin-data");
    let out = std::process::Command::new(switchboard())
        .args(["claude", "--claude-bin", "/nonexistent"])
        .env("SWITCHBOARD_DATA_DIR", &data)
        .env_remove("SWITCHBOARD_CLAUDE_BIN")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run switchboard");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(
        stderr.contains("@anthropic-ai/claude-code"),
        "stderr: {stderr}"
    );
    assert!(stderr.contains("--claude-bin"), "stderr: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "nothing belongs on stdout: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Demo: `o` on a transcript item runs `$PAGER` with the TUI suspended (normal screen, cooked
/// tty), the pager gets the item's text, and afterwards the TUI is back and answers keys.
#[test]
fn demo_pager_round_trip_suspends_and_restores_the_tui() {
    use std::os::unix::fs::PermissionsExt;

    let cwd = temp_dir("pty-pager-cwd");
    let data = temp_dir("pty-pager-data");
    let config = temp_dir("pty-pager-config");
    let marker = data.join("paged.txt");
    let pager = data.join("pager.sh");
    // Copies the file it was given, says so on the (normal) screen, waits for Enter.
    std::fs::write(
        &pager,
        "#!/bin/sh\ncp \"$1\" \"$PAGER_MARKER.tmp\" && mv \"$PAGER_MARKER.tmp\" \"$PAGER_MARKER\"\n\
         printf 'PAGER-RUNNING on %s\\n' \"$1\"\nread -r _ < /dev/tty\n",
    )
    .unwrap();
    std::fs::set_permissions(&pager, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cwd_s = cwd.display().to_string();
    let mut tui = Tui::spawn(
        &["demo", "--cwd", &cwd_s],
        &[
            ("SWITCHBOARD_DEMO_FAST".into(), "1".into()),
            (
                "SWITCHBOARD_CONFIG_DIR".into(),
                config.display().to_string(),
            ),
            ("PAGER".into(), pager.display().to_string()),
            ("PAGER_MARKER".into(), marker.display().to_string()),
        ],
        &[],
        &data,
    );
    let alternate = |tui: &Tui| tui.parser.lock().unwrap().screen().alternate_screen();
    tui.wait_screen(
        "the first permission card",
        |s| s.contains("Permission · Bash") && s.contains("touch demo-output.txt"),
        STEP,
    );
    assert!(alternate(&tui), "the TUI runs on the alternate screen");
    // Shift-Tab: from the gate card to the transcript; Up selects its last item (the call).
    tui.send(b"\x1b[Z");
    tui.send(b"\x1b[A");
    tui.wait_screen(
        "the selected Bash call",
        |s| s.contains("▍⚙ Bash touch demo-output.txt"),
        STEP,
    );
    tui.send(b"o");

    let screen = tui.wait_screen("the pager", |s| s.contains("PAGER-RUNNING"), STEP);
    assert!(
        !alternate(&tui),
        "the pager runs on the normal screen:\n{screen}"
    );
    assert!(
        !screen.contains("Sessions"),
        "the TUI is not drawn over the pager:\n{screen}"
    );
    assert_eq!(
        tui.tty_canonical(),
        Some(true),
        "the tty is out of raw mode while the pager runs"
    );
    let paged = std::fs::read_to_string(&marker).expect("the pager got a file");
    assert!(paged.starts_with("Bash touch demo-output.txt"), "{paged}");
    assert!(
        paged.contains("\"description\":\"Create a scratch file for notes\"")
            || paged.contains("Create a scratch file for notes"),
        "the tool input is part of the item text: {paged}"
    );
    let viewed = screen
        .split("PAGER-RUNNING on ")
        .nth(1)
        .and_then(|r| r.lines().next())
        .map(|p| PathBuf::from(p.trim()))
        .expect("the pager printed its file");

    // Enter ends the pager; the TUI takes the terminal back and redraws.
    tui.send(ENTER);
    let screen = tui.wait_screen(
        "the TUI again",
        |s| {
            s.contains("Sessions")
                && s.contains("Permission · Bash")
                && !s.contains("PAGER-RUNNING")
        },
        STEP,
    );
    assert!(alternate(&tui), "back on the alternate screen:\n{screen}");
    assert_eq!(tui.tty_canonical(), Some(false), "raw mode again");
    assert!(!viewed.exists(), "the temporary file {viewed:?} is removed");
    // Still answering keys: help opens and closes, then the gate is still there.
    tui.send(b"?");
    tui.wait_text("keys (↑↓ scroll, Esc closes)");
    tui.send(ESC);
    tui.wait_screen(
        "help closed",
        |s| !s.contains("keys (↑↓ scroll, Esc closes)") && s.contains("Permission · Bash"),
        STEP,
    );

    tui.send(CTRL_D);
    tui.wait_text("quit switchboard?");
    tui.send(b"y");
    let status = tui.wait_exit(STEP);
    assert!(status.success(), "exit status {status:?}");
    tui.assert_restored();
    let rec = tui.recording();
    assert_no_gate_answered_twice(&rec);
}
