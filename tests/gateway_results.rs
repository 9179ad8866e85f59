//! Issue 22 item 5 through the real app: after `g` then `y`, what the effect did is on
//! screen. A command's output and exit status arrive without the host ever polling; a write
//! shows its bytes and new revision; a write whose file changed after its card was shown is
//! refused after the approval, and its row says so in the error style.

use serde_json::{Value, json};
use switchboard::core::input::KeyCode;

use switchboard::app::headless::Headless;
use switchboard::backend::gateway::validate::{Mode, sha256_hex};
use switchboard::core::state::State;
use switchboard::core::transcript::ItemKind;
use switchboard_sim::gateway::fake_host::{self, FakeHost};

const WS: &str = "ws-results";
const INTENT: &str = "show what happened";
const TOKEN: &str = "results-token-9f8e7d6c";
#[path = "support/gateway_app.rs"]
mod support;
use support::{WAIT, pump_result};

fn call(id: &str, tool: &str, args: Value) -> String {
    fake_host::call(id, WS, "conv-1", INTENT, tool, args)
}

/// Every tool result row of every session: (text, is_error).
fn results(s: &State) -> Vec<(String, bool)> {
    s.sessions
        .iter()
        .flat_map(|x| x.tree.nodes.iter())
        .flat_map(|n| n.transcript.items.iter())
        .filter_map(|i| match &i.kind {
            ItemKind::ToolResult { text, is_error, .. } => Some((text.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

fn audit_rows(s: &State, needle: &str) -> usize {
    s.sessions
        .iter()
        .flat_map(|x| x.tree.nodes.iter())
        .flat_map(|n| n.transcript.items.iter())
        .filter(|i| matches!(&i.kind, ItemKind::Audit { text, .. } if text.contains(needle)))
        .count()
}

/// `g` opens the oldest waiting card (from the tree: the prompt's focus is another item's).
async fn approve_next(h: &mut Headless, what: &str) {
    h.wait_until(what, WAIT, |s| s.pending_total() > 0).await;
    support::open_oldest(h);
    h.key(KeyCode::Char('y'));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_approved_effect_shows_what_it_did() {
    let base = support::scratch("results");
    std::fs::write(base.join("proj/notes.txt"), "old\n").unwrap();
    let mut host = FakeHost::start(0, WS, TOKEN).await.unwrap();
    let cfg = support::config(
        &base,
        &host,
        (WS, INTENT, TOKEN),
        Mode::Ask,
        switchboard::backend::gateway::tools::env::ExecEnv::baseline(),
    );
    let (mut h, mut c) = support::start(cfg, &mut host, 120).await;

    // 1. A command, approved; the host never polls it. Its output and exit status come on
    // screen anyway, on one row.
    c.send(call(
        "x1",
        "workspace_exec",
        json!({"command": "printf 'hello\\n'; exit 3"}),
    ))
    .await;
    approve_next(&mut h, "the exec card").await;
    let r = pump_result(&mut h, &mut c, "x1").await;
    assert_eq!(fake_host::code_of(&r), "ok", "{r}");
    h.wait_until("the command's exit on its row", WAIT, |s| {
        results(s)
            .iter()
            .any(|(t, err)| *err && t.contains("· exit 3") && t.contains("\nhello"))
    })
    .await;
    let screen = h.screen();
    assert!(
        screen.contains("printf 'hello\\n'; exit 3 · exit 3") && screen.contains("hello"),
        "{screen}"
    );
    assert_eq!(
        results(h.state())
            .iter()
            .filter(|(t, _)| t.contains("printf 'hello"))
            .count(),
        1,
        "one row per command, updated in place"
    );
    // A poll by the host adds no row of its own: the command's row has it all.
    let id = serde_json::from_str::<Value>(&r).unwrap()["result"]["structuredContent"]["commandId"]
        .as_str()
        .unwrap()
        .to_string();
    c.send(call("p1", "workspace_poll", json!({"commandId": id})))
        .await;
    let p = pump_result(&mut h, &mut c, "p1").await;
    assert!(p.contains("hello"), "{p}");
    h.app.drain_backend(usize::MAX);
    assert_eq!(audit_rows(h.state(), "workspace_poll"), 0);

    // 2. A write, approved: its bytes and new revision.
    let content = "new notes\n";
    c.send(call(
        "w1",
        "workspace_write",
        json!({"path": "notes.txt", "content": content, "expectedSha256": sha256_hex(b"old\n")}),
    ))
    .await;
    approve_next(&mut h, "the write card").await;
    let r = pump_result(&mut h, &mut c, "w1").await;
    assert_eq!(fake_host::code_of(&r), "ok", "{r}");
    let sha = sha256_hex(content.as_bytes());
    let row = format!("wrote notes.txt · 10 bytes · revision {}", &sha[..12]);
    h.wait_until("the write's row", WAIT, |s| {
        results(s).iter().any(|(t, err)| !err && t == &row)
    })
    .await;
    assert!(h.screen().contains(&row), "{}", h.screen());

    // 3. A write shown on its card, then the file changes before the approval: refused
    // after the approval, and the row reads so, in the error style.
    c.send(call(
        "w2",
        "workspace_write",
        json!({"path": "notes.txt", "content": "third\n", "expectedSha256": sha}),
    ))
    .await;
    h.wait_until("the second write card", WAIT, |s| s.pending_total() > 0)
        .await;
    std::fs::write(base.join("proj/notes.txt"), "changed by someone else\n").unwrap();
    approve_next(&mut h, "the second write card").await;
    let r = pump_result(&mut h, &mut c, "w2").await;
    assert_ne!(fake_host::code_of(&r), "ok", "{r}");
    h.wait_until("the refusal's row", WAIT, |s| {
        results(s)
            .iter()
            .any(|(t, err)| *err && t.starts_with("refused after approval: "))
    })
    .await;
    assert!(
        h.screen().contains("refused after approval"),
        "{}",
        h.screen()
    );
    assert_eq!(
        std::fs::read_to_string(base.join("proj/notes.txt")).unwrap(),
        "changed by someone else\n"
    );
    h.quit().await;
}
