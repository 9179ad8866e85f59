//! No descendant outlives switchboard (issue 21 item 3): the built binary on a pty, with a
//! gateway command and a local agent that each leave `setsid`, double-forked and `nohup`
//! children outside their process group. After `q`, none of them is left within 5 s.
//!
//! Each test finds exactly its own processes by a unique fractional `sleep` argument.

#[path = "support/common.rs"]
mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;

use switchboard_sim::gateway::fake_host::{self, FakeHost};

#[path = "support/pty.rs"]
mod pty;

use pty::{STEP, Tui};

const SIZE: (u16, u16) = (120, 40);

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

/// `q`, then: within 5 s none of `args` runs, and switchboard exits successfully.
fn quit_and_check(tui: &mut Tui, args: &[String]) {
    let t = Instant::now();
    while sleeps(args).len() < args.len() {
        assert!(
            t.elapsed() < STEP,
            "the sleeps did not all start: {:?}\n{}",
            sleeps(args),
            tui.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    tui.send(b"q");
    let quit = Instant::now();
    while !sleeps(args).is_empty() && quit.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = sleeps(args);
    assert!(
        left.is_empty(),
        "still running {:?} after q: {left:?}\n{}",
        quit.elapsed(),
        tui.screen()
    );
    while tui.child.try_wait().unwrap().is_none() {
        assert!(
            quit.elapsed() < STEP,
            "switchboard did not exit\n{}",
            tui.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = tui.child.try_wait().unwrap().unwrap();
    assert!(status.success(), "{status:?}");
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
        &[("SB_DESC_GW_TOKEN", TOKEN)],
        &base,
        SIZE,
    );
    // The conversation's card waits in the inbox: leave the prompt, jump to it, allow.
    tui.wait(&["1 waiting"]);
    tui.send(b"\t");
    std::thread::sleep(Duration::from_millis(100));
    tui.send(b"g");
    tui.wait(&["nohup"]);
    tui.send(b"y");
    quit_and_check(&mut tui, &args);
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
        &[("HOSTILE_MODE", "escape"), ("HOSTILE_ESCAPE", &line)],
        &base,
        SIZE,
    );
    tui.wait(&["Enter send"]);
    tui.send(b"\t");
    tui.wait(&["q quit"]);
    quit_and_check(&mut tui, &args);
    let _ = std::fs::remove_dir_all(&base);
}
