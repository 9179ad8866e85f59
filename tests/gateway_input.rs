//! `workspace_input` to a command that never reads its stdin, through the real transport and
//! engine lock (issue 21 item 7): each call is answered at once, the one past the bound is
//! `busy`, other calls are served meanwhile, and ending the channel does not wait for the
//! command's timeout.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use switchboard::backend::gateway::engine::{Engine, Pinned};
use switchboard::backend::gateway::journal::Journal;
use switchboard::backend::gateway::transport::{self, Token};
use switchboard::backend::gateway::validate::Mode;
use switchboard::contain::Root;
use switchboard_sim::gateway::fake_host::{self, FakeHost};

const WS: &str = "ws-input";
const INTENT: &str = "feed a deaf command";
const TOKEN: &str = "tok-input-0a1b2c3d4e5f";
const WAIT: Duration = Duration::from_secs(10);

fn call(id: &str, tool: &str, args: Value) -> String {
    fake_host::call(id, WS, "conv-1", INTENT, tool, args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_to_a_deaf_command_never_holds_the_channel() {
    let base = std::env::temp_dir().join(format!("sb-gw-input-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("proj")).unwrap();
    let engine = Engine::new(
        Pinned {
            workspace_id: WS.into(),
            intention: INTENT.into(),
            mode: Mode::Full,
            extra_tools: Vec::new(),
        },
        Root::open(&base.join("proj")).unwrap(),
        Journal::open(
            &base.join("data/journal.jsonl"),
            switchboard::record::now_ms(),
        )
        .unwrap(),
    );
    let mut host = FakeHost::start(0, WS, TOKEN).await.unwrap();
    let (etx, mut erx) = mpsc::channel(1024);
    // Drain the events: the transport must never wait for this test.
    tokio::spawn(async move { while erx.recv().await.is_some() {} });
    let (dtx, drx) = mpsc::unbounded_channel();
    let task = tokio::spawn(transport::run(
        Arc::new(Mutex::new(engine)),
        transport::channel_url(&host.base_url(), WS).unwrap(),
        Token::new(TOKEN.into()).unwrap(),
        None,
        etx,
        drx,
    ));
    let mut c = host.accept(WAIT).await.expect("A connects");
    c.recv_raw(WAIT).await.unwrap();
    assert!(c.send(r#"{"type":"ready","protocol":1}"#.into()).await);

    c.send(call("x1", "workspace_exec", json!({"command": "sleep 60"})))
        .await;
    let r: Value = serde_json::from_str(&c.result_for("x1", WAIT).await.unwrap()).unwrap();
    let cid = r["result"]["structuredContent"]["commandId"]
        .as_str()
        .unwrap()
        .to_string();
    // The schema's most, 16384 characters, of four bytes each: 64 KiB a call.
    let chunk = "\u{1F600}".repeat(16 * 1024);
    assert_eq!(chunk.len(), 64 * 1024);
    let mut n = 0;
    let busy = loop {
        n += 1;
        let id = format!("i{n}");
        let t = Instant::now();
        c.send(call(
            &id,
            "workspace_input",
            json!({"commandId": cid, "text": chunk}),
        ))
        .await;
        let r = c.result_for(&id, WAIT).await.expect("input answered");
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "input {n} took {:?}",
            t.elapsed()
        );
        if fake_host::code_of(&r) != "ok" {
            break r;
        }
        assert!(n < 64, "the bound never answered busy");
    };
    assert_eq!(fake_host::code_of(&busy), "busy", "{busy}");
    assert!(n > 4, "64 KiB and more were taken before the bound: {n}");
    let t = Instant::now();
    c.send(call("p1", "workspace_poll", json!({"commandId": cid})))
        .await;
    let p: Value = serde_json::from_str(&c.result_for("p1", WAIT).await.unwrap()).unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "poll took {:?}",
        t.elapsed()
    );
    assert_eq!(p["result"]["structuredContent"]["status"], "running");
    assert!(
        p["result"]["structuredContent"]["inputPending"]
            .as_u64()
            .unwrap()
            > 0
    );
    // The owner quits: the channel ends at once, not at the command's 60 s.
    let t = Instant::now();
    drop(dtx);
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the channel ended promptly")
        .unwrap();
    assert!(t.elapsed() < Duration::from_secs(5));
    // `busy` is transient: no receipt makes it the id's final answer.
    let journal = std::fs::read_to_string(base.join("data/journal.jsonl")).unwrap();
    assert!(
        !journal.contains(&format!("\"id\":\"i{n}\"")),
        "the busy call was journaled"
    );
    assert!(journal.contains("\"id\":\"i1\""), "the queued ones were");
    let _ = std::fs::remove_dir_all(&base);
}
