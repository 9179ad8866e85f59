//! Gateway throughput, measured and printed (no targets asserted):
//!
//! - G1: read calls per second through decode, the eleven validation steps and
//!   `workspace_read` (reads are not journaled: their content must never be).
//! - G2: effect calls per second through validation, the journal (`executing` and
//!   `completed`, each fsync'd) and `workspace_write` with its atomic replace (mode `full`).
//! - G3: opening a journal of 100,000 receipts at startup.
//!
//! `cargo bench --bench gateway` runs full sizes; under `cargo test` small sizes only.

use std::time::Instant;

use serde_json::json;
use switchboard::backend::gateway::engine::{Engine, Out, Pinned};
use switchboard::backend::gateway::journal::Journal;
use switchboard::backend::gateway::validate::Mode;
use switchboard::contain::Root;

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (reads, writes, receipts) = if full {
        (20_000, 500, 100_000)
    } else {
        (200, 20, 1_000)
    };
    let base = std::env::temp_dir().join(format!("sb-gw-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("proj")).unwrap();
    std::fs::write(base.join("proj/a.txt"), "x".repeat(4096)).unwrap();
    let pin = Pinned {
        workspace_id: "w".into(),
        intention: "i".into(),
        mode: Mode::Full,
        extra_tools: Vec::new(),
    };
    let mut e = Engine::new(
        pin,
        Root::open(&base.join("proj")).unwrap(),
        Journal::open(&base.join("data/j.jsonl"), switchboard::record::now_ms()).unwrap(),
    );
    let call = |id: String, tool: &str, args: serde_json::Value| {
        json!({"type": "call", "protocol": 1, "id": id, "workspaceId": "w", "sessionId": "s",
               "intention": "i", "tool": tool, "args": args})
        .to_string()
    };
    let sent = |o: &[Out]| {
        o.iter()
            .any(|x| matches!(x, Out::Send(f) if !f.contains("isError")))
    };

    let t = Instant::now();
    for i in 0..reads {
        assert!(sent(&e.on_frame(&call(
            format!("r{i}"),
            "workspace_read",
            json!({"path": "a.txt"})
        ))));
    }
    let g1 = reads as f64 / t.elapsed().as_secs_f64();

    let t = Instant::now();
    for i in 0..writes {
        let out = e.on_frame(&call(
            format!("w{i}"),
            "workspace_write",
            json!({"path": format!("f{i}.txt"), "content": "hello", "expectedSha256": null}),
        ));
        assert!(sent(&out), "{out:?}");
    }
    let g2 = writes as f64 / t.elapsed().as_secs_f64();
    drop(e);

    // A journal of `receipts` completed receipts, written once, then timed at open.
    let path = base.join("data/big.jsonl");
    {
        let mut j = Journal::open(&path, switchboard::record::now_ms()).unwrap();
        let body = r#"{"content":[{"type":"text","text":"{\"path\":\"a.txt\",\"sha256\":\"0000000000000000000000000000000000000000000000000000000000000000\"}"}],"structuredContent":{"path":"a.txt"}}"#;
        for i in 0..receipts {
            let key = ("w".to_string(), "s".to_string(), format!("id-{i}"));
            j.completed_unsynced_for_bench(
                &key,
                "h",
                "workspace_write",
                json!({"path": "a.txt"}),
                body,
            )
            .unwrap();
        }
    }
    let t = Instant::now();
    let j = Journal::open(&path, switchboard::record::now_ms()).unwrap();
    let g3 = t.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(j.len(), receipts);
    println!("G1 read calls/s (validation + workspace_read): {g1:.0}");
    println!("G2 write calls/s (validation + 2 fsync'd receipts + atomic write): {g2:.0}");
    println!("G3 open a journal of {receipts} receipts: {g3:.0} ms");
    let _ = std::fs::remove_dir_all(&base);
}
