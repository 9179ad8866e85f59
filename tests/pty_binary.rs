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

/// The footer's word for an answer key held for the settle time (`update::HELD`).
const HELD: &str = "the card just changed";
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
    /// Tells the reader thread to close its end of the master (for `hang_up`).
    stop_reading: Arc<AtomicBool>,
    reader: Option<std::thread::JoinHandle<()>>,
    // A plain dup of the master: portable-pty's own writer types "\n" + EOF (^D) when dropped,
    // which switchboard would read as Ctrl-D.
    writer: Option<std::fs::File>,
    master: Option<Box<dyn MasterPty + Send>>,
    data_dir: PathBuf,
}

/// A duplicate of the pty master's fd as a file (closing it closes only the duplicate).
fn dup_master(master: &dyn MasterPty) -> std::fs::File {
    use std::os::fd::FromRawFd;
    let fd = master.as_raw_fd().expect("master fd");
    // SAFETY: dup of a valid fd; the new fd is owned by the returned File alone.
    let copy = unsafe { libc::dup(fd) };
    assert!(copy >= 0, "dup failed");
    unsafe { std::fs::File::from_raw_fd(copy) }
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
        let mut reader = dup_master(&*pair.master);
        let writer = dup_master(&*pair.master);
        let parser = Arc::new(Mutex::new(vt100::Parser::new(nz(ROWS), nz(COLS), 0)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let eof = Arc::new(AtomicBool::new(false));
        let stop_reading = Arc::new(AtomicBool::new(false));
        let reader_thread = {
            let (parser, raw, eof, stop) = (
                parser.clone(),
                raw.clone(),
                eof.clone(),
                stop_reading.clone(),
            );
            std::thread::Builder::new()
                .name("pty-reader".into())
                .spawn(move || {
                    use std::os::fd::AsRawFd;
                    let mut buf = [0u8; 16 * 1024];
                    while !stop.load(Ordering::SeqCst) {
                        // Poll with a timeout so a hang-up can close this fd promptly.
                        let mut pfd = libc::pollfd {
                            fd: reader.as_raw_fd(),
                            events: libc::POLLIN,
                            revents: 0,
                        };
                        // SAFETY: one valid pollfd.
                        let ready = unsafe { libc::poll(&mut pfd, 1, 20) };
                        if ready == 0
                            || (ready < 0
                                && std::io::Error::last_os_error().kind()
                                    == std::io::ErrorKind::Interrupted)
                        {
                            continue;
                        }
                        match reader.read(&mut buf) {
                            Ok(0) => break,
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                            Err(_) => break,
                            Ok(n) => {
                                raw.lock().unwrap().extend_from_slice(&buf[..n]);
                                parser.lock().unwrap().process(&buf[..n]);
                            }
                        }
                    }
                    eof.store(true, Ordering::SeqCst);
                })
                .expect("spawn reader thread")
        };
        Tui {
            child,
            parser,
            raw,
            eof,
            stop_reading,
            reader: Some(reader_thread),
            writer: Some(writer),
            master: Some(pair.master),
            data_dir: data_dir.to_path_buf(),
        }
    }

    /// The terminal goes away: every fd of the master side is closed (the window closed, the
    /// ssh connection dropped). The kernel hangs up the tty: SIGHUP, then EIO on it.
    fn hang_up(&mut self) {
        self.stop_reading.store(true, Ordering::SeqCst);
        if let Some(r) = self.reader.take() {
            r.join().expect("reader thread");
        }
        self.writer = None;
        self.master = None;
    }

    fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    fn raw(&self) -> Vec<u8> {
        self.raw.lock().unwrap().clone()
    }

    fn send(&mut self, bytes: &[u8]) {
        // A card's answer key within its settle time is held and the footer says "the card
        // just changed: press again": as a person does, press it again once it has settled.
        let answer = bytes.len() == 1 && b"ynaeANRTrbd123456789\r".contains(&bytes[0]);
        let held_before = answer && self.screen().contains(HELD);
        self.write(bytes);
        if !answer || held_before {
            return;
        }
        for _ in 0..3 {
            let t = Instant::now();
            while !self.screen().contains(HELD) && t.elapsed() < Duration::from_millis(250) {
                std::thread::sleep(Duration::from_millis(10));
            }
            if !self.screen().contains(HELD) {
                return;
            }
            std::thread::sleep(Duration::from_millis(350));
            self.write(bytes);
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        let w = self.writer.as_mut().expect("the terminal is open");
        w.write_all(bytes).expect("write to pty");
        w.flush().expect("flush pty");
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
        let fd = self.master.as_ref()?.as_raw_fd()?;
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

// --- hostile agents: bounded exits, hang-ups, floods ------------------------------------------

/// `tests/support/hostile_claude.py` as the claude CLI in `HOSTILE_MODE=mode`; returns the
/// TUI and the file where the agent writes "<agent pid> <grandchild pid>".
fn spawn_hostile(tag: &str, mode: &str, extra: &[(String, String)]) -> Option<(Tui, PathBuf)> {
    common::python_or_skip(tag)?;
    let script = common::manifest("tests/support/hostile_claude.py");
    let cwd = temp_dir(&format!("pty-{tag}-cwd"));
    let data = temp_dir(&format!("pty-{tag}-data"));
    let pids = data.join("pids.txt");
    let mut env = vec![
        ("HOSTILE_MODE".to_string(), mode.to_string()),
        ("HOSTILE_PIDS".to_string(), pids.display().to_string()),
    ];
    env.extend(extra.iter().cloned());
    let (script, cwd_s) = (script.display().to_string(), cwd.display().to_string());
    let tui = Tui::spawn(
        &["claude", "--claude-bin", &script, "--cwd", &cwd_s],
        &env,
        &[],
        &data,
    );
    Some((tui, pids))
}

/// Kills a process group when dropped: a failing test must not leave its agent behind.
struct KillGroup(i32);

impl Drop for KillGroup {
    fn drop(&mut self) {
        // SAFETY: only sends a signal.
        unsafe {
            libc::killpg(self.0, libc::SIGKILL);
        }
    }
}

/// The agent's and its grandchild's pids, once the agent wrote them.
fn hostile_pids(path: &Path) -> (i32, i32) {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            let mut it = text.split_whitespace().map(|p| p.parse::<i32>().unwrap());
            return (it.next().unwrap(), it.next().unwrap());
        }
        assert!(start.elapsed() < STEP, "the agent never wrote its pids");
        std::thread::sleep(POLL);
    }
}

/// `/proc/<pid>/stat` fields after the command: (state, ppid, pgrp).
fn proc_stat(pid: i32) -> Option<(char, i32, i32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut f = s.rsplit_once(')')?.1.split_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

/// Live (non-zombie) processes in process group `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .filter(|&pid| matches!(proc_stat(pid), Some((s, _, g)) if g == pgid && s != 'Z'))
                .collect()
        })
        .unwrap_or_default()
}

/// Wait until no live process is left in `pgid`; returns what is left after `within`.
fn group_left_after(pgid: i32, within: Duration) -> Vec<i32> {
    let start = Instant::now();
    loop {
        let left = group_members(pgid);
        if left.is_empty() || start.elapsed() > within {
            return left;
        }
        std::thread::sleep(POLL);
    }
}

/// An agent that stops reading its stdin (with its pipe full) and leaves a grandchild: after
/// `q` both are gone within 5 s.
#[test]
fn hostile_deaf_agent_and_grandchild_gone_within_5s_after_q() {
    let Some((mut tui, pids)) = spawn_hostile("deaf", "deaf", &[]) else {
        return;
    };
    let (agent, grandchild) = hostile_pids(&pids);
    let _cleanup = KillGroup(agent);
    assert_eq!(proc_stat(grandchild).map(|s| s.2), Some(agent));
    // The four error replies (300 KB each) are what fills the agent's stdin pipe.
    tui.wait_text("answered with an error");
    std::thread::sleep(Duration::from_millis(300));
    tui.send(b"\t");
    tui.wait_text(PANE_HINT);
    let quit_at = Instant::now();
    tui.send(b"q");
    let left = group_left_after(agent, Duration::from_secs(5));
    assert!(
        left.is_empty(),
        "still running {:?} after q: {left:?} (agent {agent}, grandchild {grandchild})",
        quit_at.elapsed()
    );
    let status = tui.wait_exit(STEP);
    assert!(status.success(), "exit status {status:?}");
    tui.assert_restored();
}

/// The terminal goes away (every fd of the master closed: SIGHUP, then EIO) with 4 gates
/// pending: each is answered fail-closed and recorded, the recording validates, the agent's
/// whole group is gone, and switchboard neither panics nor is killed.
#[test]
fn hostile_hang_up_with_four_gates_answers_them_and_leaves_nothing() {
    let Some((mut tui, pids)) = spawn_hostile("hangup", "gates 4", &[]) else {
        return;
    };
    let (agent, _grandchild) = hostile_pids(&pids);
    let _cleanup = KillGroup(agent);
    tui.wait_screen(
        "four gates waiting",
        |s| s.contains("echo gate-0") && s.contains("‖4"),
        STEP,
    );
    std::thread::sleep(Duration::from_millis(300));
    tui.hang_up();
    let status = tui.wait_exit(STEP);
    assert!(status.signal().is_none(), "killed by a signal: {status:?}");
    assert_ne!(status.exit_code(), 101, "switchboard panicked");
    let left = group_left_after(agent, Duration::from_secs(5));
    assert!(left.is_empty(), "left of the agent's group: {left:?}");

    let rec = tui.recording();
    assert_eq!(assert_every_gate_answered_once(&rec), 4);
    let denied = control_responses(&rec)
        .into_iter()
        .filter(|b| b["behavior"] == "deny" && b["message"] == "switchboard exited")
        .count();
    assert_eq!(denied, 4, "fail-closed answers");
    let file = std::fs::read_dir(tui.data_dir.join("recordings"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    let out = std::process::Command::new(switchboard())
        .arg("validate")
        .arg(&file)
        .output()
        .expect("run validate");
    assert!(
        out.status.success(),
        "validate failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Peak resident memory of `pid` in KiB (`VmHWM`).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmHWM")
}

/// A 256 MiB line on stdout and on stderr: each is reported as oversize (recorded with its
/// length), the session goes on, and switchboard's peak memory stays far below the flood.
#[test]
fn hostile_giant_lines_keep_memory_bounded() {
    let Some((mut tui, pids)) = spawn_hostile("bigline", "bigline 256", &[]) else {
        return;
    };
    let (agent, _) = hostile_pids(&pids);
    let _cleanup = KillGroup(agent);
    let pid = tui.child.process_id().expect("pid");
    let dir = tui.data_dir.join("recordings");
    let start = Instant::now();
    let notes = loop {
        let text: String = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
            .collect();
        let n = text.matches("bytes on std").count();
        if n >= 2 || start.elapsed() > Duration::from_secs(60) {
            break text;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let size = 256 * 1024 * 1024 + 29; // the padding plus the JSON around it
    assert!(
        notes.contains(&format!("line of {size} bytes on stdout")),
        "no oversize note for stdout"
    );
    assert!(
        notes.contains(&format!("line of {size} bytes on stderr")),
        "no oversize note for stderr"
    );
    let peak = peak_rss_kib(pid);
    assert!(
        peak < 128 * 1024,
        "peak RSS {peak} KiB for two 256 MiB lines"
    );
    // Still alive and answering keys.
    tui.send(b"\t");
    tui.wait_text(PANE_HINT);
    tui.send(b"?");
    tui.wait_text("keys (↑↓ scroll, Esc closes)");
}

/// Keys stay live while the agent floods stdout: for 12 s the agent writes whole assistant
/// messages of ~16 KB as fast as the pipe takes them, and a `?` sent every ~1.5 s opens the
/// help within a (generous) 1 s of the key being written, as does the Esc closing it. (Before
/// the height index was bounded in time per frame, each frame wrapped every message applied
/// since the last one, and keys took 3-6 s to show.)
#[test]
fn hostile_flood_keeps_keys_live() {
    let Some((mut tui, pids)) = spawn_hostile("flood", "flood 12", &[]) else {
        return;
    };
    let (agent, _) = hostile_pids(&pids);
    let _cleanup = KillGroup(agent);
    let flood = Instant::now();
    tui.wait_text(PROMPT_HINT);
    tui.send(b"\t");
    tui.wait_text(PANE_HINT);
    tui.wait_text("consectetur adipiscing");
    let help = "keys (↑↓ scroll, Esc closes)";
    let mut took = Vec::new();
    // Keys while the flood lasts (12 s from the agent's start), the transcript growing.
    while flood.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1500));
        let sent = Instant::now();
        tui.send(b"?");
        tui.wait_screen(
            "the help under the flood",
            |s| s.contains(help),
            Duration::from_secs(20),
        );
        took.push(sent.elapsed());
        let sent = Instant::now();
        tui.send(ESC);
        tui.wait_screen(
            "the help closed",
            |s| !s.contains(help),
            Duration::from_secs(20),
        );
        took.push(sent.elapsed());
        eprintln!("keys under the flood took {:?}", &took[took.len() - 2..]);
    }
    assert!(
        took.len() >= 8,
        "only {} keys sent during the flood",
        took.len()
    );
    let worst = took.iter().max().copied().unwrap_or_default();
    assert!(
        worst < Duration::from_secs(1),
        "a key took {worst:?} under the flood: {took:?}"
    );
}

/// The recording cannot be written (`/dev/full`: ENOSPC): the session runs and answers, a
/// banner says the recording stopped and why, and the exit message says it is incomplete.
#[test]
fn demo_recording_to_a_full_disk_is_visible_and_the_session_goes_on() {
    let cwd = temp_dir("pty-full-cwd");
    let data = temp_dir("pty-full-data");
    let cwd_s = cwd.display().to_string();
    let mut tui = Tui::spawn(
        &["demo", "--cwd", &cwd_s, "--record", "/dev/full"],
        &[("SWITCHBOARD_DEMO_FAST".into(), "1".into())],
        &[],
        &data,
    );
    tui.wait_screen(
        "the first permission card under the banner",
        |s| {
            s.contains("recording stopped")
                && s.contains("not recorded")
                && s.contains("Permission · Bash")
        },
        STEP,
    );
    // Still answering: the allow reaches the demo agent, which goes on to its next gates.
    tui.send(b"y");
    tui.wait_screen(
        "the next gates",
        |s| s.contains("Permission · Edit") || s.contains("Breakpoint · Grep"),
        STEP,
    );
    assert!(
        tui.screen().contains("recording stopped"),
        "the banner stays"
    );
    tui.send(CTRL_D);
    tui.wait_text("quit switchboard?");
    tui.send(b"y");
    let status = tui.wait_exit(STEP);
    assert!(status.success(), "exit status {status:?}");
    tui.assert_restored();
    let screen = tui.screen();
    assert!(
        screen.contains("recording incomplete: /dev/full"),
        "exit message:\n{screen}"
    );
    assert!(!screen.contains("recording written"), "{screen}");
}

/// An agent that ignores the cancel: after the grace (1 s from config.toml) the TUI says it is
/// not responding; `s` stops it (its whole group) and the window stays open to read.
#[test]
fn hostile_agent_ignoring_a_cancel_can_be_stopped() {
    let config = temp_dir("pty-nocancel-config");
    std::fs::write(config.join("config.toml"), "cancel_grace_secs = 1\n").unwrap();
    let env = [(
        "SWITCHBOARD_CONFIG_DIR".to_string(),
        config.display().to_string(),
    )];
    let Some((mut tui, pids)) = spawn_hostile("nocancel", "nocancel", &env) else {
        return;
    };
    let (agent, _) = hostile_pids(&pids);
    let _cleanup = KillGroup(agent);
    tui.wait_text(PROMPT_HINT);
    tui.send(b"start working");
    tui.send(ENTER);
    tui.wait_text("working forever");
    tui.send(b"\x03");
    tui.wait_text("interrupt sent");
    let asked = tui.wait_text("the agent is not responding");
    assert!(asked.contains("s stop it"), "{asked}");
    assert!(
        group_members(agent).contains(&agent),
        "asked while the agent runs"
    );
    tui.send(b"s");
    let left = group_left_after(agent, Duration::from_secs(6));
    assert!(left.is_empty(), "left of the agent's group: {left:?}");
    // Still open, read-only now.
    tui.wait_screen(
        "the agent's exit",
        |s| s.contains("read-only: the agent exited") || s.contains("exited"),
        STEP,
    );
    let rec = tui.recording();
    let sent = sent_lines(&rec);
    assert!(
        sent.iter()
            .any(|l| l["type"] == "control_request" && l["request"]["subtype"] == "interrupt"),
        "the interrupt was sent"
    );
    tui.send(CTRL_D);
    let status = tui.wait_exit(STEP);
    assert!(status.success(), "exit status {status:?}");
    tui.assert_restored();
}

/// A permission request over the line limit is not read, but still answered (an error with
/// its request id); the next request is an ordinary gate.
#[test]
fn hostile_oversize_request_is_answered_with_an_error() {
    let Some((mut tui, pids)) = spawn_hostile("bigreq", "bigrequest", &[]) else {
        return;
    };
    let (agent, _) = hostile_pids(&pids);
    let _cleanup = KillGroup(agent);
    tui.wait_text("echo after the big one");
    tui.send(CTRL_D);
    tui.wait_text("quit switchboard?");
    tui.send(b"y");
    let status = tui.wait_exit(STEP);
    assert!(status.success(), "exit status {status:?}");
    let rec = tui.recording();
    let replies: Vec<Value> = sent_lines(&rec)
        .into_iter()
        .filter(|l| l["type"] == "control_response")
        .collect();
    let big: Vec<&Value> = replies
        .iter()
        .filter(|l| l["response"]["request_id"] == "big-1")
        .collect();
    assert_eq!(big.len(), 1, "answers to the oversize request: {replies:?}");
    assert_eq!(big[0]["response"]["subtype"], "error");
    assert!(
        big[0]["response"]["error"]
            .as_str()
            .unwrap()
            .contains("exceeds the 8388608 byte limit"),
        "{}",
        big[0]
    );
    let small = replies
        .iter()
        .filter(|l| l["response"]["request_id"] == "small-2")
        .count();
    assert_eq!(small, 1, "the next request is answered once (on quit)");
}

/// ACP paths under a flood: a terminal writing 64 MiB with an absurd `outputByteLimit`, and
/// 100 requests with 1 MiB ids whose error replies an agent that stopped reading never takes.
/// Switchboard's peak memory stays far below what it was sent.
#[test]
fn hostile_acp_terminal_and_reply_floods_keep_memory_bounded() {
    let Some(python) = common::python_or_skip("hostile_acp_floods") else {
        return;
    };
    let script = common::manifest("tests/support/hostile_acp.py");
    let cwd = temp_dir("pty-acpflood-cwd");
    let data = temp_dir("pty-acpflood-data");
    let (py, script, cwd_s) = (
        python.display().to_string(),
        script.display().to_string(),
        cwd.display().to_string(),
    );
    let mut tui = Tui::spawn(
        &["acp", "--cwd", &cwd_s, "--", &py, &script],
        &[],
        &[],
        &data,
    );
    let pid = tui.child.process_id().expect("pid");
    tui.wait_text("head -c 67108864 /dev/zero");
    // The agent is switchboard's child and leads its own group: kill it if this test fails.
    let _cleanup: Vec<KillGroup> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(
            |&p| matches!(proc_stat(p), Some((_, ppid, pgrp)) if ppid == pid as i32 && pgrp == p),
        )
        .map(KillGroup)
        .collect();
    tui.send(b"y");
    tui.wait_screen(
        "the reply flood sent",
        |s| s.contains("FLOOD-SENT"),
        Duration::from_secs(60),
    );
    // Let the terminal finish and the stalled replies be refused.
    std::thread::sleep(Duration::from_secs(3));
    let peak = peak_rss_kib(pid);
    eprintln!("peak RSS under the ACP floods: {peak} KiB");
    assert!(peak < 128 * 1024, "peak RSS {peak} KiB");
    tui.send(CTRL_D);
    let status = tui.wait_exit(STEP);
    assert!(status.success(), "exit status {status:?}");
}

/// The demo workspace on the built binary: three scripted agents, gates in all three, the two
/// identical `npm test` requests allowed from the inbox as one batch, then quit. Every gate gets
/// exactly one answer, each recording is valid, and the workspace manifest lists the three
/// sessions and the batch decisions and validates against them.
#[test]
fn demo_workspace_inbox_batch_then_quit_writes_a_valid_manifest() {
    let cwd = temp_dir("pty-ws-cwd");
    let data = temp_dir("pty-ws-data");
    let cwd_s = cwd.display().to_string();
    let mut tui = Tui::spawn(
        &["demo", "--sessions", "3", "--cwd", &cwd_s],
        &[("SWITCHBOARD_DEMO_FAST".into(), "1".into())],
        &[],
        &data,
    );
    tui.wait_screen(
        "three sessions with gates",
        |s| {
            s.contains("Sessions (3)")
                && s.contains("auth · claude")
                && s.contains("web · claude")
                && s.contains("docs · claude")
                && s.matches("waiting on you").count() == 3
        },
        STEP,
    );
    tui.send(b"I");
    let inbox = tui.wait_screen(
        "the inbox with npm test twice",
        |s| s.contains("gate inbox") && s.matches("npm test").count() >= 2,
        STEP,
    );
    // Highlight the first npm test row, then mark every identical request.
    let rows: Vec<&str> = inbox
        .lines()
        .skip_while(|l| !l.contains("summary · rule"))
        .skip(1)
        .collect();
    let at = rows
        .iter()
        .position(|l| l.contains("npm test"))
        .unwrap_or_else(|| panic!("no npm test row:\n{inbox}"));
    for _ in 0..at {
        tui.send(DOWN);
    }
    tui.send(b"=");
    tui.wait_screen("the batch panel", |s| s.contains("batch of 2"), STEP);
    tui.send(b"y");
    tui.wait_screen(
        "the batch answered",
        |s| s.contains("gate inbox") && !s.contains("npm test") && !s.contains("batch of"),
        STEP,
    );
    tui.send(ESC);
    tui.send(CTRL_D);
    tui.wait_screen(
        "the quit confirmation",
        |s| s.contains("quit switchboard?"),
        STEP,
    );
    tui.send(b"y");
    let status = tui.wait_exit(STEP);
    assert!(status.success(), "exit status {status:?}");
    tui.assert_restored();

    let dir = data.join("recordings");
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let recordings: Vec<&PathBuf> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(recordings.len(), 3, "{files:?}");
    let manifests: Vec<&PathBuf> = files
        .iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("workspace-"))
        })
        .collect();
    assert_eq!(manifests.len(), 1, "{files:?}");
    let npm_allowed = recordings
        .iter()
        .map(|r| {
            let text = std::fs::read_to_string(r).unwrap();
            let rec: Vec<Value> = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            // A request the agent sends after quitting closed its stdin is answered by that
            // close (validate reports it as `agent-exited`); none is ever answered twice.
            assert_no_gate_answered_twice(&rec);
            // The wire line is a JSON string inside the recording entry.
            text.contains(r#"\"behavior\":\"allow\",\"updatedInput\":{\"command\":\"npm test\""#)
        })
        .filter(|x| *x)
        .count();
    assert_eq!(npm_allowed, 2, "npm test allowed in web and docs");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(manifests[0]).unwrap()).unwrap();
    assert_eq!(
        manifest["sessions"].as_array().unwrap().len(),
        3,
        "{manifest}"
    );
    let by: Vec<&str> = manifest["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["by"].as_str().unwrap())
        .collect();
    assert_eq!(
        by.iter().filter(|b| **b == "batch").count(),
        2,
        "{manifest}"
    );
    assert!(by.iter().skip(2).all(|b| *b == "quit"), "{manifest}");
    // The built binary validates the manifest and every recording in it.
    let out = std::process::Command::new(switchboard())
        .arg("validate")
        .arg(manifests[0])
        .env("SWITCHBOARD_DATA_DIR", &data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "validate MANIFEST failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `switchboard up` with two demo profiles from `--config`: both sessions start under their
/// profile names with their own scripts, the second one's `--session` filter works, and quitting
/// leaves one manifest listing the sessions started.
#[test]
fn up_starts_the_named_profiles_as_one_workspace() {
    let cwd = temp_dir("pty-up-cwd");
    let data = temp_dir("pty-up-data");
    let config = cwd.join("sessions.toml");
    std::fs::write(
        &config,
        format!(
            "[[session]]\nname = \"frontend\"\nbackend = \"demo\"\ncwd = \"{0}\"\nscript = \"web\"\n\n\
             [[session]]\nname = \"release\"\nbackend = \"demo\"\ncwd = \"{0}\"\nscript = \"docs\"\n\n\
             [[session]]\nname = \"unused\"\nbackend = \"demo\"\ncwd = \"{0}\"\n",
            cwd.display()
        ),
    )
    .unwrap();
    let cfg = config.display().to_string();
    let mut tui = Tui::spawn(
        &[
            "up",
            "--config",
            &cfg,
            "--session",
            "frontend",
            "--session",
            "release",
        ],
        &[("SWITCHBOARD_DEMO_FAST".into(), "1".into())],
        &[],
        &data,
    );
    tui.wait_screen(
        "both profiles running with gates",
        |s| {
            s.contains("Sessions (2)")
                && s.contains("frontend · claude")
                && s.contains("release · claude")
                && !s.contains("unused")
                && s.matches("waiting on you").count() == 2
        },
        STEP,
    );
    tui.send(CTRL_D);
    tui.wait_screen(
        "the quit confirmation",
        |s| s.contains("quit switchboard?"),
        STEP,
    );
    tui.send(b"y");
    let status = tui.wait_exit(STEP);
    assert!(status.success(), "exit status {status:?}");
    tui.assert_restored();
    let manifests: Vec<PathBuf> = std::fs::read_dir(data.join("recordings"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(manifests.len(), 1, "{manifests:?}");
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&manifests[0]).unwrap()).unwrap();
    let names: Vec<&str> = m["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["frontend", "release"], "{m}");
}

/// Kills the child when dropped, so a failing test never leaves a process behind.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The README's way to see iii without an engine: `switchboard demo-engine` in one terminal,
/// `switchboard iii --engine …` in another. Both built binaries: the roots and their held
/// calls show, `y` allows one (the engine's world moves on), and quitting leaves the other
/// call held and gives the terminal back.
#[test]
fn demo_engine_and_iii_binaries_show_the_harness_sessions() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _engine = KillOnDrop(
        std::process::Command::new(switchboard())
            .args(["demo-engine", "--port", &port.to_string()])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("demo-engine starts"),
    );
    let url = format!("ws://127.0.0.1:{port}");
    let data = temp_dir("pty-iii-data");
    // The engine may take a moment to listen: the client's own backoff retries meanwhile.
    let mut tui = Tui::spawn(&["iii", "--engine", &url], &[], &[], &data);
    tui.wait_screen(
        "the demo engine's root sessions with their held calls",
        |s| {
            s.contains("Refactor the parser")
                && s.contains("Tidy the notes")
                && s.contains("waiting on you")
        },
        STEP,
    );
    // Out of the prompt (where `g` would be typed), then to the oldest held call.
    tui.send(b"\x1b");
    // Apart, or the terminal reads ESC g as Alt-g.
    std::thread::sleep(Duration::from_millis(150));
    tui.send(b"g");
    tui.wait_screen("a held call's card", |s| s.contains("allow once"), STEP);
    tui.send(CTRL_D);
    // With calls still held switchboard may ask first; quitting never answers them.
    let deadline = Instant::now() + STEP;
    loop {
        if tui.screen().contains("quit switchboard?") {
            tui.send(b"y");
            break;
        }
        if tui.child.try_wait().expect("try_wait").is_some() || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = tui.wait_exit(STEP);
    assert!(status.success(), "exit status {status:?}");
    tui.assert_restored();
}
