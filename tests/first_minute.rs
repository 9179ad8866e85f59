//! A new user's first minute on each start (issue 22 item 9), the built binary on a pty at
//! 80x24 and 200x50: the waiting strip names where the gates are, `g` alone opens the oldest
//! gate and `y` answers it (or an answer is typed and Enter sends it), and what the effect did
//! is on screen. No other key comes first.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[path = "support/common.rs"]
mod common;
#[path = "support/peer.rs"]
mod peer;
#[path = "support/pty.rs"]
mod pty;

use peer::Peer;
use pty::{STEP, Tui};
const SIZES: [(u16, u16); 2] = [(80, 24), (200, 50)];

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sb-first-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The remote agent's first calls: a write, a command, a question; each answered by `g`
/// then `y` (the question by typing), and each effect's result on screen.
#[test]
fn gateway_first_minute() {
    for size in SIZES {
        let base = scratch(&format!("gw-{}", size.0));
        let (_host, token, argv) = Peer::gateway();
        let args: Vec<&str> = argv.iter().map(String::as_str).collect();
        let mut tui = Tui::spawn(
            &args,
            &[("SWITCHBOARD_DEMO_GATEWAY_TOKEN", &token)],
            &base,
            size,
        );
        // The strip says where the call waits, and how to get there.
        tui.wait(&["1 waiting", "g opens the oldest"]);
        tui.send(b"g");
        tui.wait(&["workspace_write", "README.md"]);
        tui.send(b"y");
        tui.wait(&["wrote README.md", "bytes", "revision"]);
        // The next card: the command.
        tui.wait(&["ls -la && wc -l README.md", "environment: only"]);
        tui.send(b"g");
        tui.send(b"y");
        tui.wait(&["· exit 0", "total"]);
        // The question takes typing at once (its card has the keys: no `g` first).
        tui.wait(&["Shall I also add a CHANGELOG.md?"]);
        tui.send(b"not yet");
        tui.send(b"\r");
        tui.wait(&["answered:", "CHANGELOG.md? = not"]);
        tui.quit();
        let _ = std::fs::remove_dir_all(&base);
    }
}

/// The iii engine's node takes no prompt; its two held calls are in two harness sessions.
#[test]
fn iii_first_minute() {
    for size in SIZES {
        let base = scratch(&format!("iii-{}", size.0));
        let (_engine, url) = Peer::engine();
        let mut tui = Tui::spawn(&["iii", "--engine", &url], &[], &base, size);
        let s = tui.wait(&["2 waiting", "g opens the oldest"]);
        assert!(s.contains("takes no prompt"), "{s}");
        assert!(!s.contains("Type a prompt below"), "{s}");
        tui.send(b"g");
        // Whichever of the two held calls arrived first (a shell command, a file read).
        let t = Instant::now();
        let function = loop {
            let s = tui.screen();
            if s.contains("Permission · shell::exec") {
                break "shell::exec";
            }
            if s.contains("Permission · filesystem::read") {
                break "filesystem::read";
            }
            assert!(t.elapsed() < STEP, "no card after g\n{s}");
            std::thread::sleep(Duration::from_millis(50));
        };
        tui.send(b"y");
        tui.wait(&[&format!("{function} ran (demo): exit 0")]);
        tui.quit();
        let _ = std::fs::remove_dir_all(&base);
    }
}

/// The scripted Claude agent: its Bash card takes the keys when it opens; `g` `y` runs it.
#[test]
fn demo_first_minute() {
    for size in SIZES {
        let base = scratch(&format!("demo-{}", size.0));
        let cwd = base.join("cwd");
        std::fs::create_dir_all(&cwd).unwrap();
        let cwd_s = cwd.display().to_string();
        let mut tui = Tui::spawn(
            &["demo", "--cwd", &cwd_s],
            &[("SWITCHBOARD_DEMO_FAST", "1")],
            &base,
            size,
        );
        tui.wait(&["touch demo-output.txt", "1 waiting"]);
        tui.send(b"g");
        tui.send(b"y");
        // The scripted agent runs nothing: what it was told is in the recording.
        let t = Instant::now();
        loop {
            if allows_sent(&base)
                .iter()
                .any(|r| r["updatedInput"]["command"] == "touch demo-output.txt")
            {
                break;
            }
            assert!(t.elapsed() < STEP, "no allow recorded\n{}", tui.screen());
            std::thread::sleep(Duration::from_millis(50));
        }
        tui.quit();
        let _ = std::fs::remove_dir_all(&base);
    }
}

/// Three scripted agents at once: the strip names the sessions that wait; `g` `y` answers
/// the oldest gate of the workspace.
#[test]
fn demo_three_sessions_first_minute() {
    let size = (200, 50);
    let base = scratch("demo3");
    let cwd = base.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let cwd_s = cwd.display().to_string();
    let mut tui = Tui::spawn(
        &["demo", "--sessions", "3", "--cwd", &cwd_s],
        &[("SWITCHBOARD_DEMO_FAST", "1")],
        &base,
        size,
    );
    let s = tui.wait(&["waiting", "g opens the oldest"]);
    assert!(waiting(&s) > 0, "{s}");
    // Nothing is allowed before the keys (the agents' own permission suggestions, which
    // also say "allow", are requests, not answers: only what we sent counts).
    let allows = |b: &Path| allows_sent(b).len();
    let before = allows(&base);
    assert_eq!(before, 0, "allowed before any key");
    tui.send(b"g");
    tui.send(b"y");
    let t = Instant::now();
    while allows(&base) <= before {
        assert!(t.elapsed() < STEP, "no allow recorded\n{}", tui.screen());
        std::thread::sleep(Duration::from_millis(50));
    }
    tui.quit();
    let _ = std::fs::remove_dir_all(&base);
}

/// The workspace's waiting count on the status line.
fn waiting(screen: &str) -> usize {
    screen
        .split("‖ ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The allow answers switchboard sent, in every recording under `data` (the response
/// bodies of outbound `control_response` lines).
fn allows_sent(data: &Path) -> Vec<serde_json::Value> {
    let Ok(dir) = std::fs::read_dir(data.join("recordings")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        for line in text.lines() {
            let Ok(entry) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if entry["dir"] != "out" {
                continue;
            }
            let Some(frame) = entry["line"]
                .as_str()
                .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            else {
                continue;
            };
            let body = &frame["response"]["response"];
            if frame["type"] == "control_response" && body["behavior"] == "allow" {
                out.push(body.clone());
            }
        }
    }
    out
}

/// An ACP agent (the scripted Checkfu agent on the Python interpreter) started with a
/// prompt: its permission card takes the keys when it opens; `g` `y` allows the edit, and
/// the written file and the agent's report are on screen.
#[test]
fn acp_first_minute() {
    let Some(py) = common::python_or_skip("acp_first_minute") else {
        return;
    };
    let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/checkfu_agent.py");
    for size in SIZES {
        let base = scratch(&format!("acp-{}", size.0));
        let cwd = base.join("cwd");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::write(cwd.join("notes.txt"), "alpha\nbeta\ngamma\n").unwrap();
        let (cwd_s, py_s, agent_s) = (
            cwd.display().to_string(),
            py.display().to_string(),
            agent.display().to_string(),
        );
        let mut tui = Tui::spawn(
            &[
                "acp",
                "--cwd",
                &cwd_s,
                "--prompt",
                "EDIT notes",
                "--",
                &py_s,
                &agent_s,
            ],
            &[],
            &base,
            size,
        );
        tui.wait(&["Edit notes.txt", "1 waiting"]);
        tui.send(b"g");
        tui.send(b"y");
        let t = Instant::now();
        while std::fs::read_to_string(cwd.join("notes.txt")).unwrap() != "alpha\nBETA\ngamma\n" {
            assert!(
                t.elapsed() < STEP,
                "the edit was not written\n{}",
                tui.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // The agent's second, different write is a card of its own: the result of the first
        // is in the transcript above it.
        tui.wait(&["sneaky"]);
        tui.send(b"n");
        tui.wait(&["edit: first=ok"]);
        tui.quit();
        let _ = std::fs::remove_dir_all(&base);
    }
}
