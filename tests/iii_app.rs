//! The iii backend end to end (issue #12): ONE switchboard app (`Headless`: the TUI's App,
//! reducer, effects and backends) running `IiiBackend` against the in-process fake engine.
//!
//! - each iii root session becomes a workspace session beside the engine's own;
//! - their held calls are answered from the one inbox (batch allow once, deny with a message)
//!   and the engine sees exactly one `approval::resolve` each, with that decision, and never
//!   `harness::function::resolve`;
//! - quitting answers nothing: a held call still pending stays held on the engine.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard::app::headless::Headless;
use switchboard::backend::iii::session::{IiiBackend, IiiConfig};
use switchboard::backend::iii::transport::Header;
use switchboard::core::BackendKind;
use switchboard::core::gate::Decision;
use switchboard::core::input::KeyCode;
use switchboard::core::msg::BackendEvent;
use switchboard::core::state::{Focus, GateRef, Overlay, SessionId, State};
use switchboard::core::update::workspace::inbox_refs;
use switchboard::registry::replay_mapper;
use switchboard::replay::mapper::Answered;
use switchboard::replay::validate::validate_path;
use switchboard_sim::iii::fake_engine::{FakeEngine, World};

const WAIT: Duration = Duration::from_secs(20);
const SECRET: &str = "Bearer s3cr3t-iii-app";
const DENY_MESSAGE: &str = "Not before the tests pass.";

/// The workspace session opened for the iii root titled `title`.
fn session_named(s: &State, title: &str) -> Option<SessionId> {
    s.sessions.iter().find(|x| x.name() == title).map(|x| x.id)
}

/// Every `approval::resolve` (and any other function) the engine was asked to run.
fn invocations(e: &FakeEngine, function_id: &str) -> Vec<Value> {
    e.frames_of("invokefunction")
        .into_iter()
        .filter(|f| f["function_id"] == function_id)
        .map(|f| f["data"].clone())
        .collect()
}

/// Open the inbox from wherever the keyboard is (the prompt takes letters: leave it first).
fn open_inbox(h: &mut Headless) {
    if h.state().overlay == Some(Overlay::Inbox) {
        return;
    }
    if h.state().focus == Focus::Prompt {
        h.key(KeyCode::Esc);
    }
    h.key(KeyCode::Char('I'));
    if h.state().overlay != Some(Overlay::Inbox) {
        let focus = h.state().focus;
        panic!(
            "`I` does not open the inbox (focus {focus:?})\n{}",
            h.screen()
        );
    }
}

/// Put the inbox cursor on `r` (the inbox is open).
fn cursor_to(h: &mut Headless, r: &GateRef) {
    let rows = inbox_refs(h.state());
    let row = rows
        .iter()
        .position(|x| x == r)
        .unwrap_or_else(|| panic!("{r:?} is not in the inbox: {rows:?}"));
    h.key(KeyCode::Home);
    for _ in 0..row {
        h.key(KeyCode::Down);
    }
    assert_eq!(h.state().inbox.cursor, row);
}

fn held_calls(e: &FakeEngine) -> Vec<String> {
    let list = e
        .with_world(|w| w.handle("approval::list-pending", &json!({"limit": 500})))
        .and_then(|(r, _)| r.ok())
        .expect("the fake world lists pending calls");
    list["pending"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|r| r["function_call_id"].as_str().map(String::from))
        .collect()
}

/// A filesystem access the gate holds (batchable: no excerpt of a command runs).
fn fs_access(path: &str) -> Value {
    let dir = path.rsplit_once('/').map_or("/", |(d, _)| d);
    json!({"kind": "filesystem_access",
           "arguments_excerpt": format!("{{\"path\":\"{path}\"}}"),
           "access_request": {"requested_root": dir, "attempted_path": path, "error_code": "S215"}})
}

/// Two root sessions, one held call in each.
fn world() -> World {
    let mut w = World::empty();
    let now = switchboard::record::now_ms();
    w.new_session("s-docs", "Tidy the notes", None, now - 120_000);
    w.hold(
        "s-docs",
        "call-fs-1",
        "filesystem::read",
        fs_access("/home/demo/notes/todo.md"),
    );
    w.new_session("s-site", "Rebuild the site", None, now - 60_000);
    w.hold(
        "s-site",
        "call-fs-9",
        "filesystem::write",
        fs_access("/srv/www/index.html"),
    );
    w
}

/// Feed a recording to the iii replay mapper; the answers it reads back, in order.
fn replay_answers(rec: &str) -> Vec<Answered> {
    let mut m = replay_mapper(BackendKind::Iii);
    let mut opened = Vec::new();
    let mut answered = Vec::new();
    for l in rec.lines().skip(1) {
        let v: Value = serde_json::from_str(l).expect("a recording line is JSON");
        let line = v["line"].as_str().unwrap_or("");
        match v["dir"].as_str() {
            Some("in") => {
                for e in m.inbound(line) {
                    if let BackendEvent::GateOpen(g) = e {
                        opened.push(g.id);
                    }
                }
            }
            Some("out") => {
                let (events, a) = m.outbound(line);
                assert!(
                    events
                        .iter()
                        .all(|e| matches!(e, BackendEvent::GateAnswered { .. })),
                    "{events:?}"
                );
                answered.extend(a);
            }
            _ => {}
        }
    }
    for a in &answered {
        assert!(
            opened.contains(&a.gate_id),
            "{} never opened: {opened:?}",
            a.gate_id
        );
    }
    answered
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_root_sessions_answered_from_the_inbox_and_quit_leaves_the_third_held() {
    let engine = FakeEngine::start(0, world()).await.unwrap();
    let dir = std::env::temp_dir().join(format!("sb-iii-app-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let record = dir.join("iii.jsonl");
    let header = format!("Authorization: {SECRET}");
    let backend = IiiBackend::new(IiiConfig {
        url: engine.url(),
        headers: vec![Header::parse(&header).unwrap()],
        sessions: Vec::new(),
        record: Some(record.clone()),
        argv: vec![
            "switchboard".into(),
            "iii".into(),
            "--header".into(),
            header.clone(),
        ],
    });
    let mut h = Headless::start(Box::new(backend), 140, 40);

    // Two workspace sessions appear beside the engine's, each with its held call.
    h.wait_until("both iii roots with one held call each", WAIT, |s| {
        let site = session_named(s, "Rebuild the site");
        let docs = session_named(s, "Tidy the notes");
        site.is_some() && docs.is_some() && inbox_refs(s).len() == 2
    })
    .await;
    let s = h.state();
    assert_eq!(
        s.sessions.len(),
        3,
        "the engine's own session and two roots"
    );
    assert_eq!(s.sessions[0].session.backend, BackendKind::Iii);
    let site = session_named(s, "Rebuild the site").unwrap();
    let docs = session_named(s, "Tidy the notes").unwrap();
    let refs = inbox_refs(s);
    let g_site = refs.iter().find(|r| r.session == site).unwrap().clone();
    let g_docs = refs.iter().find(|r| r.session == docs).unwrap().clone();

    // Allow once by batch `y` (mark, `y`).
    open_inbox(&mut h);
    cursor_to(&mut h, &g_docs);
    h.key(KeyCode::Char(' '));
    h.key(KeyCode::Char('y'));
    h.wait_until("the batch answer applied", WAIT, |s| {
        inbox_refs(s).len() == 1
    })
    .await;
    // Deny with a message by batch `n` (mark, `n`, type, Enter).
    open_inbox(&mut h);
    cursor_to(&mut h, &g_site);
    h.key(KeyCode::Char(' '));
    h.key(KeyCode::Char('n'));
    h.type_text(DENY_MESSAGE);
    h.key(KeyCode::Enter);

    assert!(
        engine
            .wait_until(WAIT, |e| invocations(e, "approval::resolve").len() >= 2)
            .await,
        "the engine got both decisions: {:#?}",
        engine.frames_of("invokefunction")
    );
    h.wait_until("both held calls answered", WAIT, |s| {
        inbox_refs(s).is_empty()
    })
    .await;
    let resolves = invocations(&engine, "approval::resolve");
    assert_eq!(
        resolves.len(),
        2,
        "exactly one resolve per call: {resolves:#?}"
    );
    let of = |call: &str| {
        resolves
            .iter()
            .find(|r| r["function_call_id"] == call)
            .unwrap_or_else(|| panic!("no resolve for {call}: {resolves:#?}"))
            .clone()
    };
    let read = of("call-fs-1");
    assert_eq!(read["session_id"], "s-docs");
    assert_eq!(read["decision"], "allow");
    assert_eq!(read["access_duration"], "once");
    let write = of("call-fs-9");
    assert_eq!(write["session_id"], "s-site");
    assert_eq!(write["decision"], "deny");
    // iii's deny carries a reason: the message typed for the batch is what the model reads.
    assert_eq!(write["reason"], DENY_MESSAGE, "{write}");
    assert!(invocations(&engine, "harness::function::resolve").is_empty());
    assert!(held_calls(&engine).is_empty(), "{:?}", held_calls(&engine));
    // Issue 22 item 5: each answered call's result is in its own session's transcript, the
    // allowed one's as a result, the denied one's as an error.
    let result_of = |s: &State, id: SessionId, call: &str| {
        s.session_by_id(id).and_then(|x| {
            x.tree
                .nodes
                .iter()
                .flat_map(|n| n.transcript.items.iter())
                .find_map(|i| match &i.kind {
                    switchboard::core::transcript::ItemKind::ToolResult {
                        tool_use_id,
                        text,
                        is_error,
                    } if tool_use_id == call => Some((text.clone(), *is_error)),
                    _ => None,
                })
        })
    };
    h.wait_until("both calls' results on screen", WAIT, |s| {
        result_of(s, docs, "call-fs-1").is_some() && result_of(s, site, "call-fs-9").is_some()
    })
    .await;
    let (text, err) = result_of(h.state(), docs, "call-fs-1").unwrap();
    assert!(text.contains("ran (demo): exit 0") && !err, "{text}");
    let (text, err) = result_of(h.state(), site, "call-fs-9").unwrap();
    assert!(text.contains(DENY_MESSAGE) && err, "{text}");

    // A third held call arrives; quitting leaves it held.
    let (trigger, payload) = engine.with_world(|w| {
        w.hold(
            "s-docs",
            "call-fs-2",
            "filesystem::write",
            json!({"arguments_excerpt": "{\"path\":\"/home/demo/notes/README.md\"}"}),
        )
    });
    engine.push(&trigger, payload, true);
    h.wait_until("the third held call in the inbox", WAIT, |s| {
        inbox_refs(s).len() == 1
    })
    .await;
    if h.state().overlay.is_some() {
        h.key(KeyCode::Esc);
    }
    h.quit().await;
    // Give a stray decision time to arrive before asserting there was none.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        invocations(&engine, "approval::resolve").len(),
        2,
        "quitting sent a decision"
    );
    assert_eq!(held_calls(&engine), vec!["call-fs-2".to_string()]);

    // The handshake carried the header; the recording holds the frames but never its value.
    assert!(engine.handshake_headers().iter().any(|hs| {
        hs.iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("authorization") && v == SECRET)
    }));
    let rec = std::fs::read_to_string(&record).expect("the recording was written");
    assert!(rec.contains("approval::resolve"), "frames are recorded");
    assert!(
        !rec.contains("s3cr3t"),
        "the header value leaked into the recording"
    );

    // Replay reads the recording through the same mapper: both cards open, and each closes
    // with the decision the wire said.
    let mut answered = replay_answers(&rec);
    assert_eq!(answered.len(), 2, "{answered:#?}");
    // The two resolves go out from the source's task in either order: compare by gate.
    answered.sort_by(|a, b| a.gate_id.cmp(&b.gate_id));
    assert_eq!(answered[0].gate_id, "iii:s-docs:call-fs-1");
    assert!(
        matches!(&answered[0].decision, Some(Decision::Option { option_id, allow: true, .. }) if option_id == "allow-once"),
        "{answered:#?}"
    );
    assert_eq!(answered[1].gate_id, "iii:s-site:call-fs-9");
    assert!(
        matches!(answered[1].decision, Some(Decision::Deny { .. })),
        "{answered:#?}"
    );

    // validate: the recording is clean; a duplicate resolve, a forbidden call, a resolve for a
    // call never held and a call breaking its golden request schema are each found.
    let (_, report) = validate_path(&record, None).unwrap();
    assert_eq!(report.problems(), 0, "{:#?}", report.findings);
    assert_eq!(report.replies_checked, 2);
    let mut bad = String::new();
    for l in rec.lines() {
        bad.push_str(l);
        bad.push('\n');
        if l.contains("\\\"function_id\\\":\\\"approval::resolve\\\"")
            && l.contains("\"dir\":\"out\"")
        {
            bad.push_str(l);
            bad.push('\n');
            bad.push_str(&l.replace("approval::resolve", "harness::function::resolve"));
            bad.push('\n');
            bad.push_str(&l.replace("call-fs-", "never-held-"));
            bad.push('\n');
        }
        // A status read without its session breaks the golden harness::status request schema.
        if l.contains("\\\"function_id\\\":\\\"harness::status\\\"")
            && l.contains("\"dir\":\"out\"")
        {
            bad.push_str(&l.replace("\\\"session_id\\\":", "\\\"session\\\":"));
            bad.push('\n');
        }
    }
    let bad_path = dir.join("tampered.jsonl");
    std::fs::write(&bad_path, bad).unwrap();
    let (_, report) = validate_path(&bad_path, None).unwrap();
    let rules: Vec<&str> = report.findings.iter().map(|f| f.rule).collect();
    for rule in [
        "duplicate-decision",
        "forbidden-call",
        "unheld-decision",
        "golden-request",
    ] {
        assert!(
            rules.contains(&rule),
            "{rule} not found: {:#?}",
            report.findings
        );
    }
    std::fs::remove_dir_all(dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_filter_opens_only_the_roots_named() {
    let engine = FakeEngine::start(0, world()).await.unwrap();
    let mut h = app(&engine, &["s-site"]);
    h.wait_until("the named root with its held call", WAIT, |s| {
        session_named(s, "Rebuild the site").is_some() && inbox_refs(s).len() == 1
    })
    .await;
    // Let the other root's events arrive too: they must open nothing.
    h.wait_until("the engine's connection live", WAIT, |s| {
        s.sessions[0]
            .session
            .info
            .iter()
            .any(|(k, v)| k == "connection" && v == "Live")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    h.app.drain_backend(usize::MAX);
    let s = h.state();
    assert_eq!(
        s.sessions.len(),
        2,
        "the engine's session and the one named"
    );
    assert!(session_named(s, "Tidy the notes").is_none());
    assert_eq!(inbox_refs(s).len(), 1);
    h.quit().await;
    assert!(invocations(&engine, "approval::resolve").is_empty());
}

/// The engine goes away with a card on screen: the session greys, a key on the card sends
/// nothing and says why; once the engine is back (and re-read) the same card answers, and a
/// deny typed on the card reaches the engine as the reason the model reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_on_the_card_during_an_outage_sends_nothing_and_works_after_the_reconnect() {
    let engine = FakeEngine::start(0, world()).await.unwrap();
    let mut h = app(&engine, &[]);
    h.wait_until("both iii roots with one held call each", WAIT, |s| {
        session_named(s, "Rebuild the site").is_some()
            && session_named(s, "Tidy the notes").is_some()
            && inbox_refs(s).len() == 2
    })
    .await;
    let site = session_named(h.state(), "Rebuild the site").unwrap();
    let g_site = inbox_refs(h.state())
        .into_iter()
        .find(|r| r.session == site)
        .unwrap();
    // The site's card on screen.
    open_inbox(&mut h);
    cursor_to(&mut h, &g_site);
    h.key(KeyCode::Enter);
    assert_eq!(h.state().focus, Focus::Gate);
    assert_eq!(h.state().sid(), site);
    assert_eq!(h.state().active_gate.as_deref(), Some(g_site.id.as_str()));

    // The engine goes down and stays down.
    engine.set_refuse(true);
    engine.drop_connections();
    h.wait_until("the site session offline", WAIT, |s| {
        s.session_by_id(site)
            .is_some_and(|x| x.session.offline.is_some())
    })
    .await;
    let screen = h.screen();
    assert!(
        screen.contains("the last state is shown greyed"),
        "{screen}"
    );
    // The whole connection is down: the engine's own session and the other root too.
    h.wait_until("every session of the engine offline", WAIT, |s| {
        s.sessions.iter().all(|x| x.session.offline.is_some())
    })
    .await;
    h.key(KeyCode::Char('y'));
    let status = h.state().status_line.clone().unwrap_or_default();
    assert!(
        status.starts_with("offline: reconnecting to the engine; decisions are disabled"),
        "{status}"
    );
    h.key(KeyCode::Char('n'));
    assert!(
        h.state().active_ui().is_some_and(|ui| ui.editor.is_none()),
        "no deny prompt while offline"
    );
    assert_eq!(inbox_refs(h.state()).len(), 2, "the cards stay");
    assert_eq!(h.state().active_gate.as_deref(), Some(g_site.id.as_str()));
    // Nothing went out, not even after the reconnect.
    tokio::time::sleep(Duration::from_millis(300)).await;
    h.app.drain_backend(usize::MAX);
    assert!(h.state().session.offline.is_some(), "still down");

    engine.set_refuse(false);
    h.wait_until("every session back online", WAIT, |s| {
        s.sessions.iter().all(|x| x.session.offline.is_none())
    })
    .await;
    assert!(invocations(&engine, "approval::resolve").is_empty());
    assert_eq!(inbox_refs(h.state()).len(), 2);
    // The same card answers now: deny with a typed reason.
    if h.state().active_gate.as_deref() != Some(g_site.id.as_str())
        || h.state().focus != Focus::Gate
    {
        open_inbox(&mut h);
        cursor_to(&mut h, &g_site);
        h.key(KeyCode::Enter);
    }
    h.key(KeyCode::Char('n'));
    assert!(
        h.state().active_ui().is_some_and(|ui| ui.editor.is_some()),
        "the deny asks for the reason"
    );
    h.type_text("Publish after the review.");
    h.key(KeyCode::Enter);
    assert!(
        engine
            .wait_until(WAIT, |e| !invocations(e, "approval::resolve").is_empty())
            .await,
        "the decision reached the engine"
    );
    let resolves = invocations(&engine, "approval::resolve");
    assert_eq!(resolves.len(), 1, "{resolves:#?}");
    assert_eq!(resolves[0]["function_call_id"], "call-fs-9");
    assert_eq!(resolves[0]["decision"], "deny");
    assert_eq!(resolves[0]["reason"], "Publish after the review.");
    h.wait_until("the card closed", WAIT, |s| inbox_refs(s).len() == 1)
        .await;
    h.quit().await;
    assert_eq!(held_calls(&engine), vec!["call-fs-1".to_string()]);
}

/// `switchboard iii` on `engine` (root sessions filtered to `sessions` unless empty), in a
/// headless 140x40 app.
fn app(engine: &FakeEngine, sessions: &[&str]) -> Headless {
    let backend = IiiBackend::new(IiiConfig {
        url: engine.url(),
        headers: Vec::new(),
        sessions: sessions.iter().map(|s| s.to_string()).collect(),
        record: None,
        argv: vec!["switchboard".into(), "iii".into()],
    });
    Headless::start(Box::new(backend), 140, 40)
}

/// The engine session's index (the source's own session: it hosts harness sessions).
fn engine_live(s: &State) -> bool {
    s.sessions[0].harness_host.is_some()
}

fn queue_of(s: &State, id: SessionId) -> Vec<(String, String)> {
    s.session_by_id(id)
        .map(|x| {
            x.queue
                .entries
                .iter()
                .map(|e| (e.entry_id.clone(), e.text.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// Turn control from the TUI against the fake engine: a message typed while a call is held
/// is queued, edited in place and removed from the queue view (`u`, `e`, `d d`); the
/// new-session dialog's harness choice starts a session that appears in the tree. The engine
/// gets exactly those calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_message_is_edited_and_removed_and_the_dialog_starts_a_harness_session() {
    let mut w = World::empty();
    let now = switchboard::record::now_ms();
    w.new_session("s-docs", "Tidy the notes", None, now - 120_000);
    w.hold(
        "s-docs",
        "call-fs-1",
        "filesystem::read",
        fs_access("/home/demo/notes/todo.md"),
    );
    let engine = FakeEngine::start(0, w).await.unwrap();
    let mut h = app(&engine, &[]);
    h.wait_until("the root with its held call, the engine live", WAIT, |s| {
        session_named(s, "Tidy the notes").is_some() && inbox_refs(s).len() == 1 && engine_live(s)
    })
    .await;
    let docs = session_named(h.state(), "Tidy the notes").unwrap();

    // A message typed while the turn waits on the held call is queued by the engine.
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('g'));
    assert_eq!(h.state().shown().id, docs);
    h.key(KeyCode::Char('i'));
    h.type_text("also the CHANGELOG");
    h.key(KeyCode::Enter);
    h.wait_until("the queued message in the queue view", WAIT, |s| {
        queue_of(s, docs).len() == 1
    })
    .await;
    let (entry, text) = queue_of(h.state(), docs)[0].clone();
    assert_eq!(text, "also the CHANGELOG");

    // `u` lists it; `e` puts it in the prompt; Enter saves it in place.
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('u'));
    assert!(
        matches!(h.state().overlay, Some(Overlay::Queue { .. })),
        "{}",
        h.screen()
    );
    assert!(h.screen().contains("also the CHANGELOG"));
    h.key(KeyCode::Char('e'));
    assert_eq!(h.state().focus, Focus::Prompt);
    h.type_text(" and the NEWS");
    h.key(KeyCode::Enter);
    h.wait_until("the edit read back from the engine", WAIT, |s| {
        queue_of(s, docs) == vec![(entry.clone(), "also the CHANGELOG and the NEWS".into())]
    })
    .await;

    // `d` twice removes it; the re-read shows an empty queue.
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('u'));
    h.key(KeyCode::Char('d'));
    assert!(
        invocations(&engine, "harness::unqueue").is_empty(),
        "one d removes nothing"
    );
    h.key(KeyCode::Char('d'));
    h.wait_until("the queue empty after the removal", WAIT, |s| {
        queue_of(s, docs).is_empty()
    })
    .await;
    h.key(KeyCode::Esc);

    // Ctrl-N: past the command line, the harness choice on this engine.
    h.ctrl('n');
    h.key(KeyCode::Down);
    let screen = h.screen();
    assert!(
        screen.contains(&format!("new harness session on {}", engine.url())),
        "{screen}"
    );
    h.key(KeyCode::Tab);
    h.type_text("demo-model");
    h.key(KeyCode::Tab);
    h.type_text("demo-provider");
    h.key(KeyCode::Tab);
    h.type_text("Write the docs");
    h.key(KeyCode::Tab);
    h.type_text("filesystem::read, approval::resolve");
    assert!(
        h.screen()
            .contains("left out (human-only, or not an exact id): approval::resolve")
    );
    h.key(KeyCode::Tab);
    h.type_text("document the parser");
    h.key(KeyCode::Enter);
    assert_eq!(h.state().overlay, None);
    h.wait_until("the new harness session in the tree, its turn done", WAIT, |s| {
        session_named(s, "Write the docs").is_some_and(|id| {
            s.session_by_id(id).is_some_and(|x| {
                x.tree.nodes[0].transcript.items.iter().any(|i| {
                    matches!(&i.kind, switchboard::core::transcript::ItemKind::Assistant { text, .. }
                        if text.contains("You said: document the parser"))
                })
            })
        })
    })
    .await;
    // Asked for from the dialog, it is the session shown once it opens.
    let docs2 = session_named(h.state(), "Write the docs");
    assert_eq!(Some(h.state().shown().id), docs2, "{}", h.screen());
    h.quit().await;

    // The engine saw exactly these calls.
    let edits = invocations(&engine, "harness::edit_queued");
    assert_eq!(
        edits,
        vec![
            json!({"session_id": "s-docs", "entry_id": entry, "message": "also the CHANGELOG and the NEWS"})
        ]
    );
    let removes = invocations(&engine, "harness::unqueue");
    assert_eq!(
        removes,
        vec![json!({"session_id": "s-docs", "entry_id": entry})]
    );
    let sends = invocations(&engine, "harness::send");
    assert_eq!(sends.len(), 2, "{sends:#?}");
    assert_eq!(sends[0]["session_id"], "s-docs");
    assert_eq!(sends[0]["message"], "also the CHANGELOG");
    let new = &sends[1];
    assert!(new.get("session_id").is_none(), "{new}");
    assert_eq!(new["model"], "demo-model");
    assert_eq!(new["provider"], "demo-provider");
    assert_eq!(new["session"]["title"], "Write the docs");
    assert_eq!(new["message"], "document the parser");
    assert_eq!(
        new["options"]["functions"]["allow"],
        json!(["filesystem::read"])
    );
    assert!(new["idempotency_key"].as_str().is_some());
    assert!(invocations(&engine, "approval::resolve").is_empty());
}
