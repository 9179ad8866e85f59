//! No descendant outlives switchboard (issue 21 item 3): the built binary on a pty, with a
//! gateway command and a local agent that each leave `setsid`, double-forked and `nohup`
//! children outside their process group. After `q`, none of them is left within 5 s.
//!
//! Each test finds exactly its own processes by a unique fractional `sleep` argument.

#[path = "support/common.rs"]
mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use serde_json::json;

use switchboard::backend::gateway::fake_host::{self, FakeHost};

const STEP: Duration = Duration::from_secs(30);

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sb-desc-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A unique fractional part for this test's sleeps.
fn tag() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{}{nanos:09}", std::process::id())
}

/// The escaping line: a plain background job, `setsid`, a double fork into a new session,
/// `nohup`, and a foreground sleep. Returns it and the five `sleep` arguments.
fn escapees(tag: &str) -> (String, Vec<String>) {
    let a: Vec<String> = (1000..=1004).map(|n| format!("{n}.{tag}")).collect();
    let line = format!(
        "sleep {} & setsid sleep {} & (setsid sh -c 'sleep {}' &); nohup sleep {} >/dev/null 2>&1 & sleep {}",
        a[0], a[1], a[2], a[3], a[4]
    );
    (line, a)
}

/// Live processes whose command line is `sleep <one of args>`.
fn sleeps(args: &[String]) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            let alive = std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| Some(s.rsplit_once(')')?.1.trim_start().starts_with(|c| c != 'Z')))
                .unwrap_or(false);
            let Ok(c) = std::fs::read(format!("/proc/{p}/cmdline")) else {
                return false;
            };
            let parts: Vec<&[u8]> = c.split(|b| *b == 0).collect();
            alive
                && parts.len() >= 2
                && parts[0].ends_with(b"sleep")
                && args.iter().any(|a| parts[1] == a.as_bytes())
        })
        .collect()
}

/// Kills this test's sleeps when dropped, so a failing run leaves nothing behind.
struct Cleanup(Vec<String>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for p in sleeps(&self.0) {
            // SAFETY: only sends a signal, to a sleep whose unique argument this test chose.
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
    }
}

struct Tui {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    parser: Arc<Mutex<vt100::Parser>>,
    writer: Box<dyn Write + Send>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Tui {
    fn spawn(args: &[&str], env: &[(&str, String)], data: &Path) -> Tui {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: 40,
                cols: 120,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_switchboard"));
        cmd.args(args);
        cmd.env_remove("SWITCHBOARD_CLAUDE_BIN");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.env("SWITCHBOARD_DATA_DIR", data);
        cmd.env("SWITCHBOARD_CONFIG_DIR", data);
        cmd.env("TERM", "xterm-256color");
        cmd.cwd(data);
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let parser = Arc::new(Mutex::new(vt100::Parser::new(
            std::num::NonZeroU16::new(40).unwrap(),
            std::num::NonZeroU16::new(120).unwrap(),
            0,
        )));
        let p = parser.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 16384];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                p.lock().unwrap().process(&buf[..n]);
            }
        });
        // portable-pty's writer sends "\n" and ^D when dropped; it lives as long as the test.
        let writer = pair.master.take_writer().unwrap();
        Tui {
            child,
            parser,
            writer,
            _master: pair.master,
        }
    }

    fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    fn wait(&self, what: &str) {
        let t = Instant::now();
        while !self.screen().contains(what) {
            assert!(
                t.elapsed() < STEP,
                "waiting for {what:?}\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn send(&mut self, b: &[u8]) {
        self.writer.write_all(b).unwrap();
        self.writer.flush().unwrap();
    }

    /// `q`, then: within 5 s none of `args` runs, and switchboard exits successfully.
    fn quit_and_check(&mut self, args: &[String]) {
        let t = Instant::now();
        while sleeps(args).len() < args.len() {
            assert!(
                t.elapsed() < STEP,
                "the sleeps did not all start: {:?}\n{}",
                sleeps(args),
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        self.send(b"q");
        let quit = Instant::now();
        while !sleeps(args).is_empty() && quit.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let left = sleeps(args);
        assert!(
            left.is_empty(),
            "still running {:?} after q: {left:?}\n{}",
            quit.elapsed(),
            self.screen()
        );
        while self.child.try_wait().unwrap().is_none() {
            assert!(
                quit.elapsed() < STEP,
                "switchboard did not exit\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let status = self.child.try_wait().unwrap().unwrap();
        assert!(status.success(), "{status:?}");
    }
}

/// An approved gateway exec whose command leaves children in new sessions.
#[test]
fn an_approved_gateway_command_leaves_nothing_after_q() {
    const WS: &str = "ws-desc";
    const INTENT: &str = "leave nothing behind";
    const TOKEN: &str = "tok-desc-77aa88bb99cc";
    let base = scratch("gw");
    std::fs::create_dir_all(base.join("proj")).unwrap();
    let (line, args) = escapees(&tag());
    let _cleanup = Cleanup(args.clone());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut host = rt.block_on(FakeHost::start(0, WS, TOKEN)).unwrap();
    let url = host.base_url();
    // The host: one exec, then it keeps the channel open until switchboard goes.
    let command = line.clone();
    rt.spawn(async move {
        let mut c = host.accept(STEP).await.expect("switchboard connects");
        c.send(r#"{"type":"ready","protocol":1}"#.into()).await;
        c.send(fake_host::call(
            "x1",
            WS,
            "conv-1",
            INTENT,
            "workspace_exec",
            json!({"command": command}),
        ))
        .await;
        let _ = c.result_for("x1", STEP).await;
        while c.recv_raw(Duration::from_secs(3600)).await.is_some() {}
    });
    let proj = base.join("proj").display().to_string();
    let mut tui = Tui::spawn(
        &[
            "gateway",
            "--url",
            &url,
            "--workspace",
            WS,
            "--root",
            &proj,
            "--intention",
            INTENT,
            "--token-env",
            "SB_DESC_GW_TOKEN",
        ],
        &[("SB_DESC_GW_TOKEN", TOKEN.to_string())],
        &base,
    );
    // The conversation's card waits in the inbox: leave the prompt, jump to it, allow.
    tui.wait("1 waiting");
    tui.send(b"\t");
    std::thread::sleep(Duration::from_millis(100));
    tui.send(b"g");
    tui.wait("nohup");
    tui.send(b"y");
    tui.quit_and_check(&args);
    let _ = std::fs::remove_dir_all(&base);
}

/// A local agent (the scripted claude stand-in) whose child leaves the agent's group.
#[test]
fn a_local_agents_escaped_children_are_gone_after_q() {
    let Some(_) = common::python_or_skip("a_local_agents_escaped_children_are_gone_after_q") else {
        return;
    };
    let base = scratch("agent");
    let (line, args) = escapees(&tag());
    let _cleanup = Cleanup(args.clone());
    // The foreground sleep goes to the background too: the script must not wait for it.
    let line = format!("{line} &");
    let script = common::manifest("tests/support/hostile_claude.py");
    let (script, cwd) = (script.display().to_string(), base.display().to_string());
    let mut tui = Tui::spawn(
        &["claude", "--claude-bin", &script, "--cwd", &cwd],
        &[
            ("HOSTILE_MODE", "escape".to_string()),
            ("HOSTILE_ESCAPE", line),
        ],
        &base,
    );
    tui.wait("Enter send");
    tui.send(b"\t");
    tui.wait("q quit");
    tui.quit_and_check(&args);
    let _ = std::fs::remove_dir_all(&base);
}
