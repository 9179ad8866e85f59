//! Issue 21 item 1 through the real app: `e` on a remote agent's exec and write cards opens
//! the call's own arguments, and what the owner saves is what runs (the file system says
//! so), with the audit row quoting it.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard::core::input::KeyCode;

use switchboard::app::headless::Headless;
use switchboard::backend::gateway::validate::Mode;
use switchboard_sim::gateway::fake_host::{self, FakeHost};

#[path = "support/gateway_app.rs"]
mod support;
use support::{WAIT, pump_result};

const WS: &str = "ws-edit";
const INTENT: &str = "tidy";
const TOKEN: &str = "edit-token-0a1b2c3d";

fn call(id: &str, tool: &str, args: Value) -> String {
    fake_host::call(id, WS, "conv-1", INTENT, tool, args)
}

/// Replace the tail of a line of the open editor by keys (the cursor starts at the end of
/// the text): up `ups` lines, to the line's end, back over the old tail, type the new one.
fn edit_line_tail(h: &mut Headless, ups: usize, old_tail: &str, new_tail: &str) {
    for _ in 0..ups {
        h.key(KeyCode::Up);
    }
    h.key(KeyCode::End);
    for _ in 0..old_tail.chars().count() {
        h.key(KeyCode::Backspace);
    }
    h.type_text(new_tail);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_exec_and_an_edited_write_run_as_edited() {
    let base = support::scratch("edit");
    let mut host = FakeHost::start(0, WS, TOKEN).await.unwrap();
    let cfg = support::config(
        &base,
        &host,
        (WS, INTENT, TOKEN),
        Mode::Ask,
        switchboard::backend::gateway::tools::env::ExecEnv::baseline(),
    );
    let (mut h, mut c) = support::start(cfg, &mut host, 120).await;

    // An exec: `e`, the command's tail rewritten, Ctrl-S.
    c.send(call(
        "x1",
        "workspace_exec",
        json!({"command": "touch ORIGINAL-COMMAND-RAN"}),
    ))
    .await;
    h.wait_until("the exec card", WAIT, |s| s.pending_total() > 0)
        .await;
    support::open_oldest(&mut h);
    h.key(KeyCode::Char('e'));
    let screen = h.screen();
    assert!(
        screen.contains("\"command\": \"touch ORIGINAL-COMMAND-RAN\""),
        "{screen}"
    );
    edit_line_tail(&mut h, 1, "ORIGINAL-COMMAND-RAN\"", "EDITED-SAFE-COMMAND\"");
    h.ctrl('s');
    let r = pump_result(&mut h, &mut c, "x1").await;
    let v: Value = serde_json::from_str(&r).unwrap();
    assert_eq!(
        v["result"]["structuredContent"]["editedByOwner"], true,
        "{r}"
    );
    let id = v["result"]["structuredContent"]["commandId"]
        .as_str()
        .unwrap()
        .to_string();
    c.send(call("p1", "workspace_poll", json!({"commandId": id})))
        .await;
    pump_result(&mut h, &mut c, "p1").await;
    let deadline = std::time::Instant::now() + WAIT;
    while !base.join("proj/EDITED-SAFE-COMMAND").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the edited command ran"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!base.join("proj/ORIGINAL-COMMAND-RAN").exists());
    // The audit row names the edit that ran, and beside it what the agent asked (issue 38).
    assert!(
        audits(h.state()).iter().any(|a| a == EDIT_ROW),
        "the audit row quotes what ran: {:?}",
        audits(h.state())
    );

    // A write: its content rewritten before it runs.
    c.send(call(
        "w1",
        "workspace_write",
        json!({"path": "notes.txt", "content": "from the host", "expectedSha256": null}),
    ))
    .await;
    h.wait_until("the write card", WAIT, |s| s.pending_total() > 0)
        .await;
    support::open_oldest(&mut h);
    h.key(KeyCode::Char('e'));
    edit_line_tail(&mut h, 2, "from the host\",", "from the owner\",");
    h.ctrl('s');
    let r = pump_result(&mut h, &mut c, "w1").await;
    assert_eq!(fake_host::code_of(&r), "ok", "{r}");
    assert_eq!(
        std::fs::read_to_string(base.join("proj/notes.txt")).unwrap(),
        "from the owner"
    );
    h.quit().await;

    // The same in replay and in export.
    let rec = base.join("data/recording.jsonl");
    let loaded = switchboard::replay::load::load(&rec, None).unwrap();
    let replayed = switchboard::replay::feed::Feeder::until(&loaded, loaded.frames.len());
    assert!(
        audits(&replayed.state)
            .iter()
            .any(|a| a.starts_with(EDIT_ROW)),
        "the replayed row: {:?}",
        audits(&replayed.state)
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["export", &rec.display().to_string(), "--markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains(EDIT_ROW), "the export:\n{md}");
}

/// The exec's audit row: the edit that ran, and what was asked.
const EDIT_ROW: &str = "allowed with an edit: workspace_exec `touch EDITED-SAFE-COMMAND` \
                        (asked: `touch ORIGINAL-COMMAND-RAN`)";

/// Every audit row of every node of every session.
fn audits(s: &switchboard::core::State) -> Vec<String> {
    s.sessions
        .iter()
        .flat_map(|se| se.tree.nodes.iter())
        .flat_map(|n| n.transcript.items.iter())
        .filter_map(|i| match &i.kind {
            switchboard::core::transcript::ItemKind::Audit { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// Issue 21 item 2 through the app: the exec card names the environment the command gets,
/// `v` shows the values, and an approved `env` prints exactly those (the token variable and
/// `SWITCHBOARD_*` withheld); the token is in no output, recording or journal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_env_prints_only_the_declared_environment() {
    use std::ffi::OsString;
    use switchboard::backend::gateway::tools::env::ExecEnv;
    let base = support::scratch("env");
    let ours: Vec<(OsString, OsString)> = [
        ("PATH", "/usr/bin:/bin"),
        ("HOME", "/home/owner"),
        ("SB_GW_TOKEN", TOKEN),
        ("SWITCHBOARD_LOG", "trace"),
        ("AWS_SECRET_ACCESS_KEY", "cloud-secret-1234"),
        ("CARGO_HOME", "/home/owner/.cargo"),
    ]
    .iter()
    .map(|(k, v)| (OsString::from(k), OsString::from(v)))
    .collect();
    let env = ExecEnv::build(
        ours,
        &["CARGO_HOME".into(), "RUST_LOG=info".into()],
        &["SB_GW_TOKEN".into()],
    )
    .unwrap();
    let mut host = FakeHost::start(0, WS, TOKEN).await.unwrap();
    let cfg = support::config(
        &base,
        &host,
        (WS, INTENT, TOKEN),
        Mode::Ask,
        std::sync::Arc::new(env),
    );
    let (mut h, mut c) = support::start(cfg, &mut host, 120).await;
    c.send(call("x1", "workspace_exec", json!({"command": "env"})))
        .await;
    h.wait_until("the exec card", WAIT, |s| s.pending_total() > 0)
        .await;
    support::open_oldest(&mut h);
    let screen = h.screen();
    assert!(
        screen.contains("environment: only CARGO_HOME HOME PATH RUST_LOG"),
        "{screen}"
    );
    h.key(KeyCode::Char('v'));
    let screen = h.screen();
    assert!(
        screen.contains("env CARGO_HOME=/home/owner/.cargo"),
        "{screen}"
    );
    assert!(screen.contains("env RUST_LOG=info"), "{screen}");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('y'));
    let r = pump_result(&mut h, &mut c, "x1").await;
    let v: Value = serde_json::from_str(&r).unwrap();
    let id = v["result"]["structuredContent"]["commandId"]
        .as_str()
        .unwrap()
        .to_string();
    let output = loop {
        c.send(call(
            &format!("p-{}", uuid_like()),
            "workspace_poll",
            json!({"commandId": id}),
        ))
        .await;
        let r = c.recv_raw(WAIT).await.expect("a poll result");
        let v: Value = serde_json::from_str(&r).unwrap();
        if v["result"]["structuredContent"]["status"] != "running" {
            break v["result"]["structuredContent"]["output"]
                .as_str()
                .unwrap_or_default()
                .to_string();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut names: Vec<&str> = output
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    names.sort();
    // `sh` itself adds PWD (and may add SHLVL, `_`); nothing of ours beyond the declared.
    names.retain(|n| !matches!(*n, "PWD" | "SHLVL" | "_" | "OLDPWD"));
    assert_eq!(
        names,
        ["CARGO_HOME", "HOME", "PATH", "RUST_LOG"],
        "{output}"
    );
    assert!(!output.contains(TOKEN) && !output.contains("cloud-secret"));
    h.quit().await;
    for f in ["data/recording.jsonl", "data/journal.jsonl"] {
        let text = std::fs::read_to_string(base.join(f)).unwrap();
        assert!(!text.contains(TOKEN), "{f} holds the token");
    }
}

fn uuid_like() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::SeqCst)
}
