//! End to end through the real app, headless: a fake host B drives the gateway backend and
//! the owner answers with keys: a write shown with its diff and approved with `y`, an exec
//! denied with a message, a question answered in free text.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard::core::input::KeyCode;

use switchboard::app::headless::Headless;
use switchboard::backend::gateway::session::GatewayBackend;
use switchboard::backend::gateway::validate::{Mode, sha256_hex};
use switchboard_sim::gateway::fake_host::{self, FakeHost};

const WS: &str = "ws-app";
const INTENT: &str = "tidy the README";
const TOKEN: &str = "app-token-5a4b3c2d1e";
#[path = "support/gateway_app.rs"]
mod support;
use support::{WAIT, pump_result};
use switchboard::backend::gateway::tools::env::ExecEnv;

fn call(id: &str, tool: &str, args: Value) -> String {
    fake_host::call(id, WS, "conv-1", INTENT, tool, args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_write_approved_exec_denied_question_answered() {
    let base = support::scratch("app");
    std::fs::write(base.join("proj/README.md"), "# old title\n").unwrap();
    let mut host = FakeHost::start(0, WS, TOKEN).await.unwrap();
    let cfg = support::config(
        &base,
        &host,
        (WS, INTENT, TOKEN),
        Mode::Ask,
        ExecEnv::baseline(),
    );
    let mut h = Headless::start(Box::new(GatewayBackend::new(cfg)), 120, 40);
    let accept = host.accept(WAIT);
    tokio::pin!(accept);
    let mut c = loop {
        // The app keeps applying backend messages while A connects.
        tokio::select! {
            c = &mut accept => break c.expect("A connects"),
            m = h.app.next_backend() => if let Some(m) = m { h.app.apply(m) },
        }
    };
    c.send(r#"{"type":"ready","protocol":1}"#.into()).await;

    // 1. A write: the card shows the diff against the file on disk; `y` approves it.
    let args = json!({"path": "README.md", "content": "# New title\n", "expectedSha256": sha256_hex(b"# old title\n")});
    c.send(call("w1", "workspace_write", args)).await;
    h.wait_until("the write card", WAIT, |s| s.pending_total() > 0)
        .await;
    support::open_oldest(&mut h);
    let screen = h.screen();
    assert!(
        screen.contains("-# old title") && screen.contains("+# New title"),
        "{screen}"
    );
    assert!(
        screen.contains(INTENT),
        "the card shows the intention\n{screen}"
    );
    h.key(KeyCode::Char('y'));
    let r = pump_result(&mut h, &mut c, "w1").await;
    assert_eq!(fake_host::code_of(&r), "ok");
    assert_eq!(
        std::fs::read_to_string(base.join("proj/README.md")).unwrap(),
        "# New title\n"
    );

    // 2. An exec: denied with a message the agent receives.
    c.send(call(
        "x1",
        "workspace_exec",
        json!({"command": "rm -rf build && make"}),
    ))
    .await;
    h.wait_until("the exec card", WAIT, |s| s.pending_total() > 0)
        .await;
    support::open_oldest(&mut h);
    assert!(h.screen().contains("rm -rf build && make"));
    h.key(KeyCode::Char('n'));
    h.type_text("use the existing build");
    h.key(KeyCode::Enter);
    let r = pump_result(&mut h, &mut c, "x1").await;
    assert_eq!(fake_host::code_of(&r), "denied_by_owner");
    assert!(r.contains("use the existing build"), "{r}");

    // 3. A question: answered in free text.
    c.send(call(
        "q1",
        "workspace_ask",
        json!({"question": "Title case or sentence case?"}),
    ))
    .await;
    h.wait_until("the question card", WAIT, |s| s.pending_total() > 0)
        .await;
    support::open_oldest(&mut h);
    assert!(h.screen().contains("Title case or sentence case?"));
    h.key(KeyCode::Enter);
    h.type_text("Sentence case");
    h.key(KeyCode::Enter);
    let r = pump_result(&mut h, &mut c, "q1").await;
    let v: Value = serde_json::from_str(&r).unwrap();
    assert_eq!(v["result"]["structuredContent"]["answer"], "Sentence case");
    h.quit().await;
    let rec = std::fs::read_to_string(base.join("data/recording.jsonl")).unwrap();
    assert!(!rec.contains(TOKEN));

    // The recording replays: each card opens again and its recorded answer closes it.
    let mut p =
        switchboard::replay::player::Player::open_path(&base.join("data/recording.jsonl"), None)
            .unwrap();
    assert_eq!(
        p.state().session.backend,
        switchboard::core::BackendKind::Gateway
    );
    let total = p.total();
    let mut opened = std::collections::BTreeSet::new();
    for i in 1..=total {
        p.seek(i);
        if !p.state().gates.is_empty() {
            let id = p.state().gates[0].id.clone();
            opened.insert(id.clone());
            let answer = p
                .state()
                .replay
                .as_ref()
                .unwrap()
                .answers
                .get(&id)
                .cloned()
                .unwrap_or_default();
            assert!(!answer.is_empty(), "gate {id} shows its recorded answer");
        }
    }
    assert_eq!(
        opened.len(),
        3,
        "write, exec and question each open one card: {opened:?}"
    );
    assert!(
        p.state().gates.is_empty(),
        "every card closed by its recorded answer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncertain_receipt_is_shown_and_settled_by_the_owner_never_rerun() {
    use switchboard::backend::gateway::journal::Journal;
    use switchboard::backend::gateway::validate::args_hash;
    let base: PathBuf =
        std::env::temp_dir().join(format!("sb-gw-app-settle-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("proj")).unwrap();
    std::fs::write(base.join("proj/README.md"), "# old\n").unwrap();
    let args = json!({"path": "README.md", "content": "# new\n", "expectedSha256": sha256_hex(b"# old\n")});
    // What a crash mid-write leaves behind.
    let mut j = Journal::open(
        &base.join("data/journal.jsonl"),
        switchboard::record::now_ms(),
    )
    .unwrap();
    let key = (WS.to_string(), "conv-1".to_string(), "w7".to_string());
    let hash = args_hash(WS, "conv-1", Some(INTENT), Some("workspace_write"), &args);
    let effect = json!({"tool": "workspace_write", "path": "README.md", "expectedSha256": sha256_hex(b"# old\n"), "newSha256": sha256_hex(b"# new\n")});
    j.executing(&key, &hash, "workspace_write", effect).unwrap();
    drop(j);
    let mut host = FakeHost::start(0, WS, TOKEN).await.unwrap();
    let cfg = support::config(
        &base,
        &host,
        (WS, INTENT, TOKEN),
        Mode::Full,
        ExecEnv::baseline(),
    );
    let mut h = Headless::start(Box::new(GatewayBackend::new(cfg)), 120, 40);
    h.wait_until("the settle card", WAIT, |s| !s.gates.is_empty())
        .await;
    let screen = h.screen();
    assert!(
        screen.contains("README.md") && screen.contains("uncertain"),
        "{screen}"
    );
    h.key(KeyCode::Char('y'));
    h.wait_until("the card closes", WAIT, |s| s.gates.is_empty())
        .await;
    let mut c = support::connect(&mut h, &mut host).await;
    c.send(call("w7", "workspace_write", args)).await;
    let r = pump_result(&mut h, &mut c, "w7").await;
    assert_eq!(fake_host::code_of(&r), "uncertain_effect");
    assert!(r.contains("was not changed"), "settled by the SHA: {r}");
    assert_eq!(
        std::fs::read_to_string(base.join("proj/README.md")).unwrap(),
        "# old\n",
        "never re-run"
    );
    h.quit().await;
}

/// Two conversations on one channel are two sessions of the workspace: each raises a gate,
/// both gates are in the inbox, each answer from the inbox reaches the host once with its own
/// conversation's result, and quitting leaves the unanswered one unanswered (no deny).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_conversations_are_two_sessions_answered_from_the_inbox() {
    let base = support::scratch("app-two");
    let mut host = FakeHost::start(0, WS, TOKEN).await.unwrap();
    let cfg = support::config(
        &base,
        &host,
        (WS, INTENT, TOKEN),
        Mode::Ask,
        ExecEnv::baseline(),
    );
    let (mut h, mut c) = support::start(cfg, &mut host, 140).await;
    let write = |conv: &str, id: &str, path: &str| {
        fake_host::call(
            id,
            WS,
            conv,
            INTENT,
            "workspace_write",
            json!({"path": path, "content": format!("{conv}\n"), "expectedSha256": null}),
        )
    };
    // conv-1 is the channel's first conversation: accepted at once.
    c.send(write("conv-1", "a1", "one.txt")).await;
    h.wait_until("conv-1's card", WAIT, |s| s.pending_total() == 1)
        .await;
    // conv-2 asks to be accepted: that card is the channel's own.
    c.send(write("conv-2", "b1", "two.txt")).await;
    h.wait_until("the accept card", WAIT, |s| s.pending_total() == 2)
        .await;
    assert_eq!(h.state().sessions[0].gates.len(), 1);
    assert!(
        h.state().sessions[0].gates[0].id.starts_with("gw-"),
        "the accept card lives in the channel's session"
    );
    // Accepted from the inbox: its row is the newest.
    h.app.state.focus = switchboard::core::state::Focus::Tree;
    h.key(KeyCode::Char('I'));
    assert!(
        h.screen().contains("accept conversation conv-2"),
        "{}",
        h.screen()
    );
    h.key(KeyCode::End);
    h.key(KeyCode::Enter);
    h.key(KeyCode::Char('y'));
    // One more gate in conv-2 that nobody answers.
    h.wait_until("conv-2's write card", WAIT, |s| {
        s.sessions.len() == 3 && s.pending_total() == 2
    })
    .await;
    c.send(fake_host::call(
        "b2",
        WS,
        "conv-2",
        INTENT,
        "workspace_exec",
        json!({"command": "echo left"}),
    ))
    .await;
    h.wait_until("three cards", WAIT, |s| s.pending_total() == 3)
        .await;
    let names: Vec<String> = h
        .state()
        .sessions
        .iter()
        .map(|s| s.name().to_string())
        .collect();
    assert_eq!(
        names,
        vec![
            format!("gateway {WS}"),
            "conversation conv-1".to_string(),
            "conversation conv-2".to_string()
        ]
    );
    assert!(h.state().sessions.iter().all(|s| s.keeps_gates_on_quit));
    assert_eq!(h.state().sessions[1].gates.len(), 1);
    assert_eq!(h.state().sessions[2].gates.len(), 2);

    // From the inbox: the oldest (conv-1's write) first, then conv-2's write.
    for (id, conv, path) in [("a1", "conv-1", "one.txt"), ("b1", "conv-2", "two.txt")] {
        h.app.state.focus = switchboard::core::state::Focus::Tree;
        h.key(KeyCode::Char('I'));
        assert!(h.screen().contains(path), "{}", h.screen());
        h.key(KeyCode::Home);
        h.key(KeyCode::Enter);
        h.key(KeyCode::Char('y'));
        let r = pump_result(&mut h, &mut c, id).await;
        let v: Value = serde_json::from_str(&r).unwrap();
        assert_eq!(fake_host::code_of(&r), "ok", "{r}");
        assert_eq!(v["sessionId"], conv, "{r}");
        assert_eq!(
            std::fs::read_to_string(base.join("proj").join(path)).unwrap(),
            format!("{conv}\n")
        );
    }
    assert_eq!(h.state().pending_total(), 1, "conv-2's exec still waits");
    h.quit().await;
    // Exactly once: no second result for either write, and nothing at all for the exec.
    let mut more = Vec::new();
    while let Some(f) = c.recv_raw(Duration::from_millis(500)).await {
        more.push(f);
    }
    assert!(
        more.iter().all(|f| !f.contains("\"result\"")),
        "after quitting the host got: {more:?}"
    );
    let journal = std::fs::read_to_string(base.join("data/journal.jsonl")).unwrap();
    assert!(
        !journal.contains("\"b2\""),
        "the exec left waiting is not journaled: {journal}"
    );
}

/// Closing a conversation's session leaves its waiting call unanswered (no deny reaches the
/// host) and moves the card to the channel's session, where the owner can still answer it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_a_conversation_moves_its_waiting_card_to_the_channel() {
    let base: PathBuf =
        std::env::temp_dir().join(format!("sb-gw-app-close-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("proj")).unwrap();
    let mut host = FakeHost::start(0, WS, TOKEN).await.unwrap();
    let cfg = support::config(
        &base,
        &host,
        (WS, INTENT, TOKEN),
        Mode::Ask,
        ExecEnv::baseline(),
    );
    let (mut h, mut c) = support::start(cfg, &mut host, 140).await;
    c.send(call(
        "w1",
        "workspace_write",
        json!({"path": "x.txt", "content": "x\n", "expectedSha256": null}),
    ))
    .await;
    h.wait_until("the write card", WAIT, |s| {
        s.sessions.len() == 2 && s.sessions[1].gates.len() == 1
    })
    .await;
    // Close the conversation's session with its card pending: `x`, then confirm.
    h.app.state.select_session(1, 0);
    h.app.state.focus = switchboard::core::state::Focus::Tree;
    h.key(KeyCode::Char('x'));
    h.key(KeyCode::Char('y'));
    h.wait_until("the card in the channel's session", WAIT, |s| {
        s.sessions[0].gates.len() == 1 && s.sessions[1].gates.is_empty()
    })
    .await;
    // A's `ready` is all the host has: closing sent no result (no deny).
    while let Some(f) = c.recv_raw(Duration::from_millis(300)).await {
        assert!(!f.contains("\"result\""), "closing sent the host {f}");
    }
    support::open_oldest(&mut h);
    h.key(KeyCode::Char('y'));
    let r = pump_result(&mut h, &mut c, "w1").await;
    assert_eq!(fake_host::code_of(&r), "ok", "{r}");
    assert_eq!(
        std::fs::read_to_string(base.join("proj/x.txt")).unwrap(),
        "x\n"
    );
    h.quit().await;
}
