//! The iii engine wire (issue #12, reference §2, §7, §8, §11): golden frames, and the worker
//! client against the in-process fake engine.

#[path = "support/common.rs"]
mod common;
#[path = "support/real_engine.rs"]
mod real_engine;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use real_engine::Engine;
use serde_json::{Value, json};
use switchboard::backend::iii::client::{
    CallError, Client, ClientEvent, ConnState, Options, Subscription,
};
use switchboard::backend::iii::codec::{self, ErrorBody, Message, TriggerAction};
use switchboard::backend::iii::transport::Header;
use switchboard::backend::process::SharedRecorder;
use switchboard::record::Recorder;
use switchboard_sim::iii::fake_engine::{Chaos, FakeEngine, Reply, World};
use tokio::sync::mpsc::Receiver;

const WAIT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------- golden frames

fn frames_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/iii/frames")
}

/// One sample of every frame shape of reference §2.1, with and without its optional fields.
fn samples() -> Vec<(&'static str, Message)> {
    let err = ErrorBody {
        code: "invocation_failed".into(),
        message: "handler failed".into(),
        stacktrace: Some("at handler (x.rs:1)".into()),
    };
    vec![
        (
            "workerregistered",
            Message::WorkerRegistered {
                worker_id: "7c0e2f4a-worker".into(),
                reattach_token: Some("tok-1".into()),
            },
        ),
        (
            "workerregistered_min",
            Message::WorkerRegistered {
                worker_id: "w-1".into(),
                reattach_token: None,
            },
        ),
        (
            "reattach",
            Message::Reattach {
                previous_worker_id: "w-1".into(),
                reattach_token: Some("tok-1".into()),
            },
        ),
        (
            "registerfunction",
            Message::RegisterFunction {
                id: "switchboard::9f1c::on-approval-pending-created".into(),
                description: Some("switchboard approval inbox".into()),
                request_format: Some(json!({"type": "object"})),
                response_format: Some(json!({"type": "object"})),
                metadata: Some(json!({"owner": "switchboard"})),
                invocation: Some(json!({"url": "https://example.com/f", "method": "POST"})),
            },
        ),
        (
            "registerfunction_min",
            Message::RegisterFunction {
                id: "switchboard::9f1c::on-session-message-added".into(),
                description: None,
                request_format: None,
                response_format: None,
                metadata: None,
                invocation: None,
            },
        ),
        (
            "unregisterfunction",
            Message::UnregisterFunction {
                id: "switchboard::9f1c::on-session-message-added".into(),
            },
        ),
        (
            "registertrigger",
            Message::RegisterTrigger {
                id: "9f1c-0".into(),
                trigger_type: "approval::pending-created".into(),
                function_id: "switchboard::9f1c::on-approval-pending-created".into(),
                config: json!({"session_id": "s_1"}),
                metadata: Some(json!({"by": "switchboard"})),
                namespace: Some("team-a".into()),
                trigger_namespace: Some("default".into()),
            },
        ),
        (
            "registertrigger_min",
            Message::RegisterTrigger {
                id: "9f1c-1".into(),
                trigger_type: "harness::turn-completed".into(),
                function_id: "switchboard::9f1c::on-harness-turn-completed".into(),
                config: json!({}),
                metadata: None,
                namespace: None,
                trigger_namespace: None,
            },
        ),
        (
            "triggerregistrationresult",
            Message::TriggerRegistrationResult {
                id: "9f1c-0".into(),
                trigger_type: "approval::pending-created".into(),
                function_id: "switchboard::9f1c::on-approval-pending-created".into(),
                error: None,
            },
        ),
        (
            "triggerregistrationresult_error",
            Message::TriggerRegistrationResult {
                id: "9f1c-0".into(),
                trigger_type: "approval::pending-created".into(),
                function_id: "switchboard::9f1c::on-approval-pending-created".into(),
                error: Some(ErrorBody::new("invalid_config", "unknown key")),
            },
        ),
        (
            "unregistertrigger",
            Message::UnregisterTrigger {
                id: "9f1c-0".into(),
                trigger_type: Some("approval::pending-created".into()),
            },
        ),
        (
            "registertriggertype",
            Message::RegisterTriggerType {
                id: "switchboard::tick".into(),
                description: "a tick".into(),
                trigger_request_format: Some(json!({"type": "object"})),
                call_request_format: Some(json!({"type": "object"})),
                namespace: Some("team-a".into()),
            },
        ),
        (
            "registerservice",
            Message::RegisterService {
                id: "switchboard".into(),
                name: "switchboard".into(),
                description: Some("terminal supervisor".into()),
                parent_service_id: None,
            },
        ),
        (
            "invokefunction",
            Message::invoke(
                "2b7e151c-8f2a-4c3e-9a1b-6d5e4f3a2b1c",
                "approval::list-pending",
                json!({"limit": 500}),
            ),
        ),
        (
            "invokefunction_full",
            Message::InvokeFunction {
                invocation_id: Some("2b7e151c-8f2a-4c3e-9a1b-6d5e4f3a2b1c".into()),
                function_id: "harness::send".into(),
                data: json!({"session_id": "s_1", "message": "hi", "idempotency_key": "k"}),
                traceparent: Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into()),
                baggage: Some("user=alice".into()),
                action: Some(TriggerAction::Enqueue {
                    queue: "default".into(),
                }),
                metadata: Some(json!({"origin": "switchboard"})),
                namespace: Some("team-a".into()),
            },
        ),
        (
            "invokefunction_void",
            Message::InvokeFunction {
                invocation_id: None,
                function_id: "switchboard::9f1c::on-approval-pending-created".into(),
                data: json!({"session_id": "s_1", "function_call_id": "c_1"}),
                traceparent: None,
                baggage: None,
                action: Some(TriggerAction::Void),
                metadata: None,
                namespace: None,
            },
        ),
        (
            "invocationresult",
            Message::result(
                "d41a8cd9-8f00-4b20-9e98-0998ecf8427e",
                "switchboard::9f1c::on-approval-pending-created",
                Ok(json!({})),
            ),
        ),
        (
            "invocationresult_error",
            Message::InvocationResult {
                invocation_id: "d41a8cd9-8f00-4b20-9e98-0998ecf8427e".into(),
                function_id: "shell::exec".into(),
                result: None,
                error: Some(err),
                traceparent: Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into()),
                baggage: Some("user=alice".into()),
            },
        ),
        (
            "registrationrejected",
            Message::RegistrationRejected {
                code: codec::FUNCTION_NAMESPACE_CONFLICT.into(),
                namespace: "default".into(),
                worker_name: None,
                function_id: Some("switchboard::9f1c::on-approval-pending-created".into()),
                owner_worker_id: "w-0".into(),
            },
        ),
        (
            "registrationrejected_worker",
            Message::RegistrationRejected {
                code: codec::WORKER_NAMESPACE_CONFLICT.into(),
                namespace: "team-a".into(),
                worker_name: Some("switchboard".into()),
                function_id: None,
                owner_worker_id: "w-0".into(),
            },
        ),
        ("ping", Message::Ping),
        ("pong", Message::Pong),
        // What the real engine sends before closing a connection its RBAC auth refused.
        (
            "error",
            Message::Error {
                error: ErrorBody::new(
                    "AUTH_ERROR",
                    "Function sbtest::no-such-auth not found in namespace default",
                ),
            },
        ),
    ]
}

/// Serialize every sample and compare with the checked-in JSON (field order included), then
/// parse the checked-in JSON back. `III_GOLDEN_WRITE=1` rewrites the files.
#[test]
fn golden_frames_serialize_and_parse_back() {
    let write = std::env::var_os("III_GOLDEN_WRITE").is_some();
    let mut kinds = std::collections::BTreeSet::new();
    for (name, msg) in samples() {
        kinds.insert(msg.kind().to_string());
        let path = frames_dir().join(format!("{name}.json"));
        let encoded = codec::encode(&msg).unwrap();
        assert!(!encoded.contains("null"), "{name}: {encoded}");
        if write {
            let pretty =
                serde_json::to_string_pretty(&serde_json::from_str::<Value>(&encoded).unwrap())
                    .unwrap();
            std::fs::write(&path, pretty + "\n").unwrap();
        }
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (III_GOLDEN_WRITE=1 writes it)", path.display()));
        let golden: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            encoded,
            serde_json::to_string(&golden).unwrap(),
            "{} differs",
            path.display()
        );
        assert_eq!(
            codec::decode(&text).unwrap(),
            msg,
            "{} parses back",
            path.display()
        );
    }
    let all: std::collections::BTreeSet<String> =
        codec::KNOWN_TYPES.iter().map(|s| s.to_string()).collect();
    assert_eq!(kinds, all, "every frame type has a golden sample");
}

/// The reference's own frame script (§2.5) parses, every frame, and the unknown type stays raw.
#[test]
fn reference_frame_script_parses() {
    for line in [
        r#"{"type":"workerregistered","worker_id":"7c0e","reattach_token":"x"}"#,
        r#"{"type":"registerfunction","id":"switchboard::9f1c::on-pending-created","description":"switchboard approval inbox"}"#,
        r#"{"type":"registertrigger","id":"9f1c-pc","trigger_type":"approval::pending-created","function_id":"switchboard::9f1c::on-pending-created","config":{}}"#,
        r#"{"type":"triggerregistrationresult","id":"9f1c-pc","trigger_type":"approval::pending-created","function_id":"switchboard::9f1c::on-pending-created"}"#,
        r#"{"type":"invokefunction","invocation_id":"2b7e","function_id":"approval::list-pending","data":{"limit":500}}"#,
        r#"{"type":"invocationresult","invocation_id":"2b7e","function_id":"approval::list-pending","result":{"pending":[]}}"#,
        r#"{"type":"invokefunction","invocation_id":"d41a","function_id":"switchboard::9f1c::on-pending-created","data":{"session_id":"s_1"}}"#,
        r#"{"type":"ping"}"#,
        r#"{"type":"pong"}"#,
    ] {
        let m = codec::decode(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert!(!matches!(m, Message::Unknown(_)), "{line}");
    }
    assert!(matches!(
        codec::decode(r#"{"type":"streamframe","chunk":"x"}"#),
        Ok(Message::Unknown(_))
    ));
}

// ---------------------------------------------------------------- client against the fake

fn no_recorder() -> SharedRecorder {
    Arc::new(Mutex::new(None))
}

fn subs() -> Vec<Subscription> {
    vec![
        Subscription::all("approval::pending-created"),
        Subscription::all("approval::pending-resolved"),
        Subscription::all("session::message-updated"),
    ]
}

fn opts() -> Options {
    Options {
        subscriptions: subs(),
        backoff_first: Duration::from_millis(50),
        backoff_cap: Duration::from_millis(200),
        ..Options::default()
    }
}

async fn start(world: World) -> FakeEngine {
    FakeEngine::start(0, world).await.unwrap()
}

fn connect(e: &FakeEngine, o: Options) -> (Client, Receiver<ClientEvent>) {
    Client::connect_with(&e.url(), vec![], no_recorder(), o).unwrap()
}

/// Read events until one matches; everything read is returned (the match last).
async fn until(
    rx: &mut Receiver<ClientEvent>,
    f: impl Fn(&ClientEvent) -> bool,
) -> Vec<ClientEvent> {
    let mut seen = vec![];
    let end = tokio::time::Instant::now() + WAIT;
    loop {
        match tokio::time::timeout_at(end, rx.recv()).await {
            Ok(Some(e)) => {
                let hit = f(&e);
                seen.push(e);
                if hit {
                    return seen;
                }
            }
            Ok(None) => panic!("event stream ended; saw {seen:#?}"),
            Err(_) => panic!("timed out; saw {seen:#?}"),
        }
    }
}

fn is_live(e: &ClientEvent) -> bool {
    matches!(e, ClientEvent::State(ConnState::Live { .. }))
}

#[tokio::test]
async fn registers_first_binds_then_reports_live() {
    let e = start(World::empty()).await;
    let (_c, mut rx) = connect(&e, opts());
    until(&mut rx, is_live).await;
    // Live only once every binding is acknowledged.
    assert_eq!(e.bindings().len(), 3);
    let frames = e.frames();
    assert_eq!(frames[0]["type"], "invokefunction");
    assert_eq!(frames[0]["function_id"], "engine::workers::register");
    let kinds: Vec<&str> = frames[1..7]
        .iter()
        .map(|f| f["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["registerfunction", "registertrigger"].repeat(3),
        "{frames:#?}"
    );
    for pair in frames[1..7].chunks(2) {
        assert_eq!(pair[0]["id"], pair[1]["function_id"]);
    }
    // Nothing we send carries a null.
    for f in &frames {
        assert!(!f.to_string().contains("null"), "{f}");
    }
}

#[tokio::test]
async fn results_are_correlated_by_invocation_id_out_of_order() {
    let e = start(World::empty()).await;
    e.script(
        "demo::slow",
        Reply::Delay(
            Duration::from_millis(300),
            Box::new(Reply::Result(json!("slow"))),
        ),
    );
    e.script("demo::fast", Reply::Result(json!("fast")));
    e.script(
        "demo::fails",
        Reply::Error(ErrorBody::new("invocation_failed", "boom")),
    );
    let (c, mut rx) = connect(&e, opts());
    until(&mut rx, is_live).await;
    let t = Duration::from_secs(5);
    let timed = |f: &'static str| {
        let c = c.clone();
        async move {
            let r = c.call(f, json!({}), t).await;
            (r, std::time::Instant::now())
        }
    };
    // The slow call is sent first and answered last.
    let ((slow, slow_at), (fast, fast_at), (fails, _)) = tokio::join!(
        timed("demo::slow"),
        timed("demo::fast"),
        timed("demo::fails")
    );
    assert!(fast_at < slow_at);
    let sent: Vec<Value> = e.frames_of("invokefunction")[1..]
        .iter()
        .map(|f| f["function_id"].clone())
        .collect();
    assert_eq!(sent, ["demo::slow", "demo::fast", "demo::fails"]);
    assert_eq!(slow.unwrap(), json!("slow"));
    assert_eq!(fast.unwrap(), json!("fast"));
    assert_eq!(
        fails,
        Err(CallError::Remote(ErrorBody::new(
            "invocation_failed",
            "boom"
        )))
    );
    let missing = c.call("nobody::here", json!({}), t).await;
    assert!(
        matches!(missing, Err(CallError::Remote(ref b)) if b.code == "function_not_found"),
        "{missing:?}"
    );
}

#[tokio::test]
async fn a_call_times_out_alone_and_its_late_result_is_dropped() {
    let e = start(World::empty()).await;
    e.script(
        "demo::late",
        Reply::Delay(
            Duration::from_millis(400),
            Box::new(Reply::Result(json!(1))),
        ),
    );
    e.script("demo::never", Reply::Never);
    let (c, mut rx) = connect(&e, opts());
    until(&mut rx, is_live).await;
    let started = std::time::Instant::now();
    assert_eq!(
        c.call("demo::never", json!({}), Duration::from_millis(150))
            .await,
        Err(CallError::Timeout)
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(
        c.call("demo::late", json!({}), Duration::from_millis(100))
            .await,
        Err(CallError::Timeout)
    );
    until(&mut rx, |e| {
        matches!(e, ClientEvent::Warning(w) if w.contains("late or unknown result for demo::late"))
    })
    .await;
    // The connection is fine.
    e.script("demo::ok", Reply::Result(json!(2)));
    assert_eq!(
        c.call("demo::ok", json!({}), Duration::from_secs(5)).await,
        Ok(json!(2))
    );
}

#[tokio::test]
async fn events_are_acknowledged_before_the_consumer_reads_them() {
    let e = start(World::empty()).await;
    let (_c, mut rx) = connect(&e, opts());
    until(&mut rx, is_live).await;
    let payload = json!({"session_id": "s_1", "turn_id": "t_1", "function_call_id": "c_1",
                         "function_id": "shell::exec", "kind": "function", "pending_at": 1});
    let ids = e.push("approval::pending-created", payload.clone(), true);
    assert_eq!(ids.len(), 1);
    // Nobody reads `rx` while the engine waits for the ack.
    let acked = e
        .wait_until(WAIT, |e| {
            e.frames_of("invocationresult")
                .iter()
                .any(|f| f["invocation_id"] == ids[0].as_str() && f["result"] == json!({}))
        })
        .await;
    assert!(acked, "no ack; frames {:#?}", e.frames());
    // Fire-and-forget events (no id) get no reply.
    e.push(
        "approval::pending-resolved",
        json!({"session_id": "s_1"}),
        false,
    );
    let got = until(
        &mut rx,
        |ev| matches!(ev, ClientEvent::Event(p) if p.trigger_type == "approval::pending-resolved"),
    )
    .await;
    assert!(got.iter().any(|ev| matches!(ev, ClientEvent::Event(p)
        if p.trigger_type == "approval::pending-created" && p.data == payload)));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(e.frames_of("invocationresult").len(), 1);
}

#[tokio::test]
async fn a_full_event_queue_refuses_without_blocking_the_reader() {
    let e = start(World::empty()).await;
    let (c, mut rx) = connect(&e, opts());
    until(&mut rx, is_live).await;
    let n = switchboard::backend::iii::client::EVENT_QUEUE + 10;
    for i in 0..n {
        e.push(
            "session::message-updated",
            json!({"session_id": "s", "revision": i}),
            true,
        );
    }
    // Every push is answered (acks or refusals) while nobody reads: the reader never blocked.
    assert!(
        e.wait_until(WAIT, |e| e.frames_of("invocationresult").len() == n)
            .await
    );
    let refused = e
        .frames_of("invocationresult")
        .iter()
        .filter(|f| f["error"]["code"] == "busy")
        .count();
    assert!(refused >= 10, "{refused}");
    // Calls still work.
    e.script("demo::ok", Reply::Result(json!(true)));
    assert_eq!(
        c.call("demo::ok", json!({}), Duration::from_secs(5)).await,
        Ok(json!(true))
    );
    // After draining, the next event is preceded by how many were refused.
    while rx.try_recv().is_ok() {}
    e.push(
        "session::message-updated",
        json!({"session_id": "s", "revision": -5}),
        true,
    );
    let got = until(&mut rx, |ev| matches!(ev, ClientEvent::Event(_))).await;
    assert!(
        got.iter()
            .any(|ev| matches!(ev, ClientEvent::EventsDropped(k) if *k as usize == refused)),
        "{got:?}"
    );
}

#[tokio::test]
async fn two_missed_pongs_mean_a_dead_socket_and_a_reconnect() {
    let e = start(World::empty()).await;
    let o = Options {
        ping_every: Duration::from_millis(100),
        ..opts()
    };
    let (_c, mut rx) = connect(&e, o);
    until(&mut rx, is_live).await;
    // Answered pings keep it alive.
    tokio::time::sleep(Duration::from_millis(450)).await;
    assert!(e.frames_of("ping").len() >= 3);
    assert_eq!(e.connections().1, 1);
    e.set_answer_pings(false);
    let seen = until(&mut rx, |ev| {
        matches!(ev, ClientEvent::State(ConnState::Reconnecting { why, .. }) if why.contains("two pings"))
    })
    .await;
    assert!(!seen.iter().any(is_live));
    e.set_answer_pings(true);
    until(&mut rx, is_live).await;
    assert_eq!(e.connections().1, 2);
}

#[tokio::test]
async fn the_engine_ping_is_answered() {
    let e = start(World::empty()).await;
    let (_c, mut rx) = connect(&e, opts());
    until(&mut rx, is_live).await;
    e.send_raw(r#"{"type":"ping"}"#);
    assert!(
        e.wait_until(WAIT, |e| !e.frames_of("pong").is_empty())
            .await
    );
}

#[tokio::test]
async fn a_drop_mid_call_fails_unsafe_calls_retries_safe_ones_and_rebinds() {
    let e = start(World::demo()).await;
    let (c, mut rx) = connect(&e, opts());
    until(&mut rx, is_live).await;
    let first_handlers: Vec<String> = e.bindings().iter().map(|b| b.function_id.clone()).collect();
    // An unsafe call: the socket drops instead of an answer.
    e.script("harness::spawn", Reply::DropSocket);
    let r = c
        .call(
            "harness::spawn",
            json!({"task": "x"}),
            Duration::from_secs(5),
        )
        .await;
    assert_eq!(r, Err(CallError::Disconnected));
    until(&mut rx, is_live).await;
    // Re-registered and re-bound on the new socket: the engine forgot the old ones.
    assert_eq!(e.connections(), (1, 2));
    assert_eq!(e.bindings().len(), 3);
    assert_eq!(e.frames_of("registertrigger").len(), 6);
    assert_eq!(
        e.frames()
            .iter()
            .filter(|f| f["function_id"] == "engine::workers::register")
            .count(),
        2
    );
    let mut again: Vec<String> = e.bindings().iter().map(|b| b.function_id.clone()).collect();
    let mut before = first_handlers.clone();
    again.sort();
    before.sort();
    assert_eq!(again, before, "the same handler ids, registered again");
    assert_eq!(
        e.frames_of("invokefunction")
            .iter()
            .filter(|f| f["function_id"] == "harness::spawn")
            .count(),
        1,
        "never sent twice"
    );

    // A safe read: dropped once, sent again after the reconnect, answered by the world.
    e.script("session::list", Reply::DropSocket);
    let r = c
        .call(
            "session::list",
            json!({"limit": 10}),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!(r["sessions"].as_array().unwrap().len(), 3);
    let lists = e
        .frames_of("invokefunction")
        .into_iter()
        .filter(|f| f["function_id"] == "session::list")
        .count();
    assert_eq!(lists, 2);
    // A send with an idempotency key is safe too, and the engine dedupes it.
    e.script("harness::send", Reply::DropSocket);
    let r = c
        .call(
            "harness::send",
            json!({"session_id": "s-docs", "message": "also the CHANGELOG", "idempotency_key": "k-1"}),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!(r["queued"], true);
    // Without a key it is not.
    e.script("harness::send", Reply::DropSocket);
    let r = c
        .call(
            "harness::send",
            json!({"session_id": "s-docs", "message": "no key"}),
            Duration::from_secs(5),
        )
        .await;
    assert_eq!(r, Err(CallError::Disconnected));
}

#[tokio::test]
async fn calls_made_while_offline_wait_for_live() {
    let e = start(World::demo()).await;
    let (c, mut rx) = connect(&e, opts());
    until(&mut rx, is_live).await;
    e.fail_binding("nothing");
    e.drop_connections();
    // Sent at once after the drop: queued until the reconnect is live.
    let r = c
        .call(
            "harness::status",
            json!({"session_id": "s-parser"}),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!(r["status"], "awaiting_functions");
    assert_eq!(r["pending_function_calls"], json!(["call-exec-1"]));
}

#[tokio::test]
async fn a_function_namespace_conflict_renews_the_handler_ids() {
    let e = start(World::empty()).await;
    e.conflict_functions(1);
    let (_c, mut rx) = connect(&e, opts());
    let seen = until(&mut rx, is_live).await;
    assert!(
        seen.iter()
            .any(|ev| matches!(ev, ClientEvent::Warning(w) if w.contains("conflicts"))),
        "{seen:?}"
    );
    let funcs = e.frames_of("registerfunction");
    let first_suffix = funcs[0]["id"]
        .as_str()
        .unwrap()
        .split("::")
        .nth(1)
        .unwrap()
        .to_string();
    let bindings = e.bindings();
    assert_eq!(bindings.len(), 3);
    for b in &bindings {
        assert!(!b.function_id.contains(&first_suffix), "{b:?}");
        assert!(b.function_id.starts_with("switchboard::"));
    }
    // Events reach the renewed handlers.
    e.push(
        "approval::pending-created",
        json!({"session_id": "s"}),
        true,
    );
    until(&mut rx, |ev| matches!(ev, ClientEvent::Event(_))).await;
}

#[tokio::test]
async fn a_refused_binding_is_reported_and_the_rest_go_live() {
    let e = start(World::empty()).await;
    e.fail_binding("session::message-updated");
    let (_c, mut rx) = connect(&e, opts());
    let seen = until(&mut rx, is_live).await;
    assert!(seen.iter().any(|ev| matches!(ev, ClientEvent::Warning(w) if w.contains("session::message-updated binding"))), "{seen:?}");
    assert_eq!(e.bindings().len(), 2);
}

#[tokio::test]
async fn the_engine_rejects_a_null_namespace_and_the_client_never_sends_one() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message as Ws;
    let e = start(World::empty()).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(e.url()).await.unwrap();
    let _hello = ws.next().await.unwrap().unwrap();
    ws.send(Ws::text(r#"{"type":"registerfunction","id":"raw::f"}"#))
        .await
        .unwrap();
    ws.send(Ws::text(
        r#"{"type":"registertrigger","id":"b1","trigger_type":"approval::pending-created","function_id":"raw::f","config":{},"namespace":null}"#,
    ))
    .await
    .unwrap();
    let reply = ws.next().await.unwrap().unwrap();
    let reply = codec::decode(reply.to_text().unwrap()).unwrap();
    match reply {
        Message::TriggerRegistrationResult {
            error: Some(err), ..
        } => {
            assert_eq!(err.code, "invalid_namespace")
        }
        other => panic!("{other:?}"),
    }
    assert!(e.bindings().is_empty());
    // Our client, with no namespace set, binds fine.
    let (_c, mut rx) = connect(&e, opts());
    until(&mut rx, is_live).await;
    assert_eq!(e.bindings().len(), 3);
}

#[tokio::test]
async fn an_unknown_frame_type_is_surfaced_raw() {
    let e = start(World::empty()).await;
    let (_c, mut rx) = connect(&e, opts());
    until(&mut rx, is_live).await;
    e.send_raw(r#"{"type":"streamchunk","channel":"c1","data":[1,2]}"#);
    e.send_raw("not json at all");
    let seen = until(&mut rx, |ev| matches!(ev, ClientEvent::Unknown(_))).await;
    match seen.last() {
        Some(ClientEvent::Unknown(v)) => {
            assert_eq!(
                v,
                &json!({"type":"streamchunk","channel":"c1","data":[1,2]})
            )
        }
        other => panic!("{other:?}"),
    }
    let seen = until(&mut rx, |ev| matches!(ev, ClientEvent::Warning(_))).await;
    assert!(matches!(seen.last(), Some(ClientEvent::Warning(w)) if w.contains("not JSON")));
}

#[tokio::test]
async fn frames_are_recorded_both_ways_and_headers_never() {
    let dir = std::env::temp_dir().join(format!("sb-iii-wire-{}", std::process::id()));
    let path = dir.join("iii.jsonl");
    let rec = Recorder::create(
        &path,
        switchboard::core::BackendKind::Iii,
        &switchboard::backend::iii::transport::redact_argv(&[
            "switchboard".into(),
            "iii".into(),
            "--header".into(),
            "Authorization: Bearer s3cr3t-token".into(),
        ]),
        "/",
    )
    .unwrap();
    let shared: SharedRecorder = Arc::new(Mutex::new(Some(rec)));
    let e = start(World::demo()).await;
    let headers = vec![Header::parse("Authorization: Bearer s3cr3t-token").unwrap()];
    let (c, mut rx) = Client::connect_with(&e.url(), headers, shared.clone(), opts()).unwrap();
    until(&mut rx, is_live).await;
    c.call("session::list", json!({}), WAIT).await.unwrap();
    c.close().await;
    until(&mut rx, |ev| {
        matches!(ev, ClientEvent::State(ConnState::Closed { .. }))
    })
    .await;
    // The engine got the header on the handshake.
    let hs = e.handshake_headers();
    assert!(
        hs[0]
            .iter()
            .any(|(k, v)| k == "authorization" && v == "Bearer s3cr3t-token")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("s3cr3t"), "{text}");
    assert!(text.contains("authorization: [redacted]"), "{text}");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let dir_of = |needle: &str| {
        lines
            .iter()
            .filter(|l| l["line"].as_str().is_some_and(|s| s.contains(needle)))
            .map(|l| l["dir"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(dir_of("\"type\":\"workerregistered\""), ["in"]);
    assert!(dir_of("\"function_id\":\"session::list\"").contains(&"out".to_string()));
    assert!(dir_of("\"function_id\":\"session::list\"").contains(&"in".to_string()));
    assert!(lines[1..].iter().all(|l| l["ts"].as_u64().is_some()));
    std::fs::remove_dir_all(dir).ok();
}

#[tokio::test]
async fn the_demo_world_serves_reads_and_decisions_with_events() {
    let e = start(World::demo()).await;
    e.set_chaos(Chaos {
        duplicate: true,
        reorder: true,
        stale: true,
    });
    let (c, mut rx) = connect(&e, opts());
    until(&mut rx, is_live).await;
    let page1 = c
        .call("approval::list-pending", json!({"limit": 1}), WAIT)
        .await
        .unwrap();
    assert_eq!(page1["pending"][0]["function_id"], "shell::exec");
    let page2 = c
        .call(
            "approval::list-pending",
            json!({"limit": 1, "cursor": page1["next_cursor"]}),
            WAIT,
        )
        .await
        .unwrap();
    assert_eq!(page2["pending"][0]["kind"], "filesystem_access");
    let tree = c
        .call(
            "harness::session-tree",
            json!({"root_session_id": "s-parser"}),
            WAIT,
        )
        .await
        .unwrap();
    assert_eq!(tree["sessions"][1]["parent_session_id"], "s-parser");
    let m = c
        .call(
            "harness::metrics",
            json!({"root_session_id": "s-parser-tests"}),
            WAIT,
        )
        .await
        .unwrap();
    assert_eq!(m["root_session_id"], "s-parser");
    assert!(m["totals"]["reasoning_tokens"].is_null());
    let r = c
        .call(
            "approval::resolve",
            json!({"session_id": "s-docs", "function_call_id": "call-fs-1", "decision": "deny",
                   "reason": "not my notes"}),
            WAIT,
        )
        .await
        .unwrap();
    assert_eq!(r["resolved"], true);
    // Duplicated, reordered, with a stale revision after the newer one.
    let mut resolved = 0;
    let mut revisions = vec![];
    let end = tokio::time::Instant::now() + Duration::from_millis(800);
    while let Ok(Some(ev)) = tokio::time::timeout_at(end, rx.recv()).await {
        if let ClientEvent::Event(p) = ev {
            match p.trigger_type.as_str() {
                "approval::pending-resolved" => {
                    assert_eq!(p.data["reason"], "not my notes");
                    resolved += 1
                }
                "session::message-updated" => revisions.push(p.data["revision"].as_i64().unwrap()),
                _ => {}
            }
        }
    }
    assert_eq!(resolved, 2, "duplicated");
    assert_eq!(revisions.len(), 4);
    assert!(
        revisions.contains(&0) && revisions.contains(&1),
        "{revisions:?}"
    );
    let again = c
        .call(
            "approval::resolve",
            json!({"session_id": "s-docs", "function_call_id": "call-fs-1", "decision": "allow"}),
            WAIT,
        )
        .await
        .unwrap();
    assert_eq!(again["resolved"], false);
}

/// The recorded frames of a recording file: (dir, frame) for every `in` and `out` line.
fn recorded_frames(path: &Path) -> Vec<(String, Value)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["dir"] == "in" || l["dir"] == "out")
        .map(|l| {
            let frame = serde_json::from_str(l["line"].as_str().unwrap()).unwrap();
            (l["dir"].as_str().unwrap().to_string(), frame)
        })
        .collect()
}

/// Our client against the real iii engine (`real_engine::engine_bin_or_skip`: `III_ENGINE_BIN`,
/// else the shared build beside the repository; required under CI): it
/// registers, binds three triggers (one whose type no worker provides yet, which the engine
/// parks without a word) and goes live; the engine lists the bindings; a `publish` comes back
/// as a pushed event; a second client's connection fires `engine::workers-available` at the
/// first; the second client invokes one of the first one's handlers through the engine; pings
/// are answered. Every frame the engine sent decodes to a type our codec knows, every
/// invocation in either direction is answered exactly once, and `validate` finds nothing.
#[tokio::test]
async fn real_engine_registers_binds_routes_and_answers() {
    let Some(bin) =
        real_engine::engine_bin_or_skip("real_engine_registers_binds_routes_and_answers")
    else {
        return;
    };
    let engine = Engine::start(&bin, "engine");
    let (url, locked_url) = (engine.url(), engine.locked_url());
    let path = engine.dir.join("iii.jsonl");
    let rec = Recorder::create(
        &path,
        switchboard::core::BackendKind::Iii,
        &["switchboard".into(), "iii".into()],
        "/",
    )
    .unwrap();
    let shared: SharedRecorder = Arc::new(Mutex::new(Some(rec)));
    let topic = format!("sb-real-{}", std::process::id());
    let o = Options {
        subscriptions: vec![
            Subscription {
                trigger_type: "subscribe".into(),
                config: json!({"topic": topic}),
            },
            Subscription::all("engine::workers-available"),
            // No harness here: the engine parks this binding until a worker provides the type.
            Subscription::all("approval::pending-created"),
        ],
        ping_every: Duration::from_millis(300),
        // The engine may still be starting: the client retries until it listens.
        handshake_timeout: Duration::from_secs(20),
        ..opts()
    };
    let (a, mut a_rx) = Client::connect_with(&url, vec![], shared.clone(), o).unwrap();
    let seen = until_long(&mut a_rx, is_live).await;
    assert!(
        !seen.iter().any(|e| matches!(e, ClientEvent::Warning(_))),
        "{seen:#?}"
    );
    let long = Duration::from_secs(20);

    // The engine lists the two bindings it could place; the third is parked (unlisted) until a
    // worker provides its type, and no frame said so.
    let listed = a
        .call(
            "engine::registered-triggers::list",
            json!({"include_internal": true}),
            long,
        )
        .await
        .unwrap();
    eprintln!("registered triggers: {listed}");
    let ours: Vec<&Value> = listed["registered_triggers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| {
            t["function_id"]
                .as_str()
                .is_some_and(|f| f.starts_with("switchboard::"))
        })
        .collect();
    let handler_of = |trigger: &str| {
        ours.iter()
            .find(|t| t["trigger_type"] == trigger)
            .and_then(|t| t["function_id"].as_str())
            .map(str::to_string)
    };
    let sub_handler = handler_of("subscribe").expect("the subscribe binding is registered");
    assert!(
        handler_of("engine::workers-available").is_some(),
        "{listed}"
    );
    assert!(
        handler_of("approval::pending-created").is_none(),
        "{listed}"
    );

    // We are a named worker of the engine.
    let workers = a
        .call("engine::workers::list", json!({}), long)
        .await
        .unwrap();
    assert!(
        workers.to_string().contains("switchboard:"),
        "our worker name is missing: {workers}"
    );

    // A publish comes back to our `subscribe` handler, acknowledged.
    let r = a
        .call("publish", json!({"topic": topic, "data": {"n": 1}}), long)
        .await;
    assert!(r.is_ok(), "{r:?}");
    let seen = until_long(
        &mut a_rx,
        |e| matches!(e, ClientEvent::Event(ev) if ev.trigger_type == "subscribe"),
    )
    .await;
    let Some(ClientEvent::Event(ev)) = seen.last() else {
        unreachable!()
    };
    assert!(ev.data.to_string().contains("\"n\":1"), "{ev:?}");

    // A second client: its connection is an event for the first; it invokes the first one's
    // parked-binding handler through the engine, which routes it to the first client.
    let b_path = engine.dir.join("iii-b.jsonl");
    let b_rec = Recorder::create(
        &b_path,
        switchboard::core::BackendKind::Iii,
        &["switchboard".into()],
        "/",
    )
    .unwrap();
    let o = Options {
        subscriptions: vec![Subscription::all("engine::functions-available")],
        ..opts()
    };
    let (b, mut b_rx) =
        Client::connect_with(&url, vec![], Arc::new(Mutex::new(Some(b_rec))), o).unwrap();
    until_long(&mut b_rx, is_live).await;
    until_long(
        &mut a_rx,
        |e| matches!(e, ClientEvent::Event(ev) if ev.trigger_type == "engine::workers-available"),
    )
    .await;
    let gate_handler = sub_handler.replace("on-subscribe", "on-approval-pending-created");
    let record =
        json!({"session_id": "s-real", "function_call_id": "c-1", "function_id": "shell::exec"});
    let r = b.call(&gate_handler, record.clone(), long).await;
    assert_eq!(r, Ok(json!({})));
    let seen = until_long(
        &mut a_rx,
        |e| matches!(e, ClientEvent::Event(ev) if ev.trigger_type == "approval::pending-created"),
    )
    .await;
    // The engine adds the caller's worker id to an object it routes from one worker to another
    // (`_caller_worker_id`, `spawn_invoke_function`); the rest arrives as sent.
    let Some(ClientEvent::Event(ev)) = seen.last() else {
        unreachable!()
    };
    let mut got = ev.data.clone();
    let caller = got
        .as_object_mut()
        .and_then(|o| o.remove("_caller_worker_id"));
    assert!(caller.is_some_and(|c| c.is_string()), "{ev:?}");
    assert_eq!(got, record);
    // A handler id nobody registered is the engine's `function_not_found`.
    let r = b
        .call(&format!("{sub_handler}-nope"), json!({}), long)
        .await;
    assert!(
        matches!(&r, Err(CallError::Remote(e)) if e.code == "function_not_found"),
        "{r:?}"
    );

    // A listener whose authentication fails says why in an `error` frame and closes: the
    // client reports it and keeps trying.
    let (c, mut c_rx) = Client::connect_with(&locked_url, vec![], no_recorder(), opts()).unwrap();
    let seen = until_long(&mut c_rx, |e| {
        matches!(e, ClientEvent::State(ConnState::Reconnecting { why, .. }) if why.contains("refused the connection"))
    })
    .await;
    eprintln!("refused: {seen:?}");
    assert!(
        seen.iter()
            .any(|e| matches!(e, ClientEvent::Warning(w) if w.contains("AUTH_ERROR"))),
        "{seen:#?}"
    );
    c.close().await;

    // Our pings are answered (ping_every is 300 ms).
    tokio::time::sleep(Duration::from_millis(1000)).await;
    b.close().await;
    a.close().await;
    until_long(&mut a_rx, |e| {
        matches!(e, ClientEvent::State(ConnState::Closed { .. }))
    })
    .await;
    until_long(&mut b_rx, |e| {
        matches!(e, ClientEvent::State(ConnState::Closed { .. }))
    })
    .await;

    for p in [&path, &b_path] {
        let frames = recorded_frames(p);
        // Every frame the engine sent is one our codec knows.
        let mut kinds = std::collections::BTreeSet::new();
        for (dir, f) in &frames {
            let m = codec::decode_value(f.clone()).unwrap_or_else(|e| panic!("{e}: {f}"));
            assert!(!matches!(m, Message::Unknown(_)), "unknown frame type: {f}");
            kinds.insert(format!("{dir} {}", m.kind()));
        }
        eprintln!("{}: {kinds:?}", p.display());
        // Every invocation with an id is answered exactly once, in either direction.
        for (asked, answered) in [("out", "in"), ("in", "out")] {
            let ids = |dir: &str, kind: &str| -> Vec<String> {
                frames
                    .iter()
                    .filter(|(d, f)| d == dir && f["type"] == kind)
                    .filter_map(|(_, f)| f["invocation_id"].as_str().map(str::to_string))
                    .collect()
            };
            let mut calls = ids(asked, "invokefunction");
            let mut results = ids(answered, "invocationresult");
            calls.sort();
            results.sort();
            assert_eq!(
                calls, results,
                "{asked} calls vs {answered} results in {p:?}"
            );
        }
        let (_, report) = switchboard::replay::validate::validate_path(p, None).unwrap();
        assert_eq!(report.problems(), 0, "{:#?}", report.findings);
    }
    let frames = recorded_frames(&path);
    let has = |dir: &str, kind: &str| frames.iter().any(|(d, f)| d == dir && f["type"] == kind);
    assert!(has("in", "workerregistered") && has("in", "pong") && has("in", "invokefunction"));
    // The engine acknowledged none of the accepted bindings (it only reports refusals).
    assert!(!has("in", "triggerregistrationresult"));
    drop(engine);
}

/// A TCP proxy to `target` that can go silent: connections numbered below `cut` are kept open
/// but nothing more is passed either way (a link that died without a FIN, the case a ping
/// timeout exists for). Returns the proxy's `ws://` URL and the count of connections accepted
/// so far (store it in `cut` to silence them all).
async fn silent_proxy(
    target: String,
    cut: Arc<std::sync::atomic::AtomicU64>,
) -> (String, Arc<std::sync::atomic::AtomicU64>) {
    use std::sync::atomic::Ordering;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            let k = count.fetch_add(1, Ordering::SeqCst);
            let Ok(outbound) = tokio::net::TcpStream::connect(&target).await else {
                continue;
            };
            let (ir, iw) = inbound.into_split();
            let (or, ow) = outbound.into_split();
            for (mut r, mut w) in [
                (
                    Box::new(ir) as Box<dyn tokio::io::AsyncRead + Unpin + Send>,
                    Box::new(ow) as Box<dyn tokio::io::AsyncWrite + Unpin + Send>,
                ),
                (Box::new(or), Box::new(iw)),
            ] {
                let cut = cut.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        let Ok(got) = r.read(&mut buf).await else {
                            return;
                        };
                        if got == 0 {
                            // Keep the other side open: a dead link says nothing.
                            std::future::pending::<()>().await;
                        }
                        if k >= cut.load(Ordering::SeqCst)
                            && w.write_all(&buf[..got]).await.is_err()
                        {
                            return;
                        }
                    }
                });
            }
        }
    });
    (format!("ws://127.0.0.1:{port}"), accepted)
}

/// The link to the real engine dies silently: our pings go unanswered, we reconnect while the
/// engine still holds the old connection, with our worker name and handler ids. The reconnect
/// `reattach`es to it first, so the engine retires it: no `WORKER_NAMESPACE_CONFLICT` (which
/// would close us for good), one worker of our name, and a publish arrives once.
#[tokio::test]
async fn real_engine_reconnect_retires_the_silent_connection() {
    let Some(bin) =
        real_engine::engine_bin_or_skip("real_engine_reconnect_retires_the_silent_connection")
    else {
        return;
    };
    let engine = Engine::start(&bin, "reattach");
    let url = engine.url();
    let cut = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (proxied, accepted) =
        silent_proxy(url.trim_start_matches("ws://").to_string(), cut.clone()).await;
    let path = engine.dir.join("iii.jsonl");
    let rec = Recorder::create(
        &path,
        switchboard::core::BackendKind::Iii,
        &["switchboard".into()],
        "/",
    )
    .unwrap();
    let topic = format!("sb-reattach-{}", std::process::id());
    let o = Options {
        subscriptions: vec![Subscription {
            trigger_type: "subscribe".into(),
            config: json!({"topic": topic}),
        }],
        ping_every: Duration::from_millis(300),
        handshake_timeout: Duration::from_secs(20),
        ..opts()
    };
    let (a, mut rx) =
        Client::connect_with(&proxied, vec![], Arc::new(Mutex::new(Some(rec))), o).unwrap();
    until_long(&mut rx, is_live).await;
    let long = Duration::from_secs(20);
    let name_of = |workers: &Value| -> Vec<String> {
        workers["workers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|w| w["name"].as_str())
            .filter(|n| n.starts_with("switchboard:"))
            .map(str::to_string)
            .collect()
    };
    let before = name_of(
        &a.call("engine::workers::list", json!({}), long)
            .await
            .unwrap(),
    );
    assert_eq!(before.len(), 1, "{before:?}");

    // The link goes silent: two unanswered pings, a reconnect, live again (not closed).
    cut.store(
        accepted.load(std::sync::atomic::Ordering::SeqCst),
        std::sync::atomic::Ordering::SeqCst,
    );
    let seen = until_long(&mut rx, |e| {
        matches!(e, ClientEvent::State(ConnState::Reconnecting { .. }))
    })
    .await;
    assert!(
        matches!(seen.last(), Some(ClientEvent::State(ConnState::Reconnecting { why, .. })) if why.contains("pong")),
        "{seen:#?}"
    );
    let seen = until_long(&mut rx, |e| {
        is_live(e) || matches!(e, ClientEvent::State(ConnState::Closed { .. }))
    })
    .await;
    assert!(is_live(seen.last().unwrap()), "{seen:#?}");
    let after = name_of(
        &a.call("engine::workers::list", json!({}), long)
            .await
            .unwrap(),
    );
    assert_eq!(after, before, "the stale connection was retired");
    a.call("publish", json!({"topic": topic, "data": {"n": 2}}), long)
        .await
        .unwrap();
    until_long(&mut rx, |e| matches!(e, ClientEvent::Event(_))).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut more = vec![];
    while let Ok(e) = rx.try_recv() {
        more.push(e);
    }
    assert!(
        !more
            .iter()
            .any(|e| matches!(e, ClientEvent::Event(_) | ClientEvent::Warning(_))),
        "{more:#?}"
    );
    a.close().await;
    let frames = recorded_frames(&path);
    let reattach: Vec<&Value> = frames
        .iter()
        .filter(|(d, f)| d == "out" && f["type"] == "reattach")
        .map(|(_, f)| f)
        .collect();
    assert_eq!(reattach.len(), 1, "{frames:#?}");
    let first = frames
        .iter()
        .find(|(d, f)| d == "in" && f["type"] == "workerregistered")
        .map(|(_, f)| f)
        .unwrap();
    assert_eq!(reattach[0]["previous_worker_id"], first["worker_id"]);
    assert_eq!(reattach[0]["reattach_token"], first["reattach_token"]);
    drop(engine);
}

/// `until` with room for a real engine on a loaded machine.
async fn until_long(
    rx: &mut Receiver<ClientEvent>,
    f: impl Fn(&ClientEvent) -> bool,
) -> Vec<ClientEvent> {
    let mut seen = vec![];
    let end = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        match tokio::time::timeout_at(end, rx.recv()).await {
            Ok(Some(e)) => {
                let hit = f(&e);
                seen.push(e);
                if hit {
                    return seen;
                }
            }
            Ok(None) => panic!("event stream ended; saw {seen:#?}"),
            Err(_) => panic!("timed out; saw {seen:#?}"),
        }
    }
}

#[tokio::test]
async fn a_worker_namespace_conflict_is_fatal_and_waiting_calls_fail() {
    let e = start(World::empty()).await;
    e.script("demo::never", Reply::Never);
    let (c, mut rx) = connect(&e, opts());
    until(&mut rx, is_live).await;
    let waiting = tokio::spawn({
        let c = c.clone();
        async move { c.call("demo::never", json!({}), WAIT).await }
    });
    assert!(
        e.wait_until(WAIT, |e| e.frames_of("invokefunction").len() == 2)
            .await
    );
    e.send_raw(
        r#"{"type":"registrationrejected","code":"WORKER_NAMESPACE_CONFLICT","namespace":"default","worker_name":"switchboard","owner_worker_id":"w-0"}"#,
    );
    let seen = until(&mut rx, |ev| {
        matches!(ev, ClientEvent::State(ConnState::Closed { .. }))
    })
    .await;
    assert!(
        matches!(seen.last(), Some(ClientEvent::State(ConnState::Closed { why })) if why.contains("WORKER_NAMESPACE_CONFLICT"))
    );
    assert!(matches!(waiting.await.unwrap(), Err(CallError::Closed(_))));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(e.connections().1, 1, "no reconnect after a fatal rejection");
    assert!(matches!(
        c.call("demo::x", json!({}), WAIT).await,
        Err(CallError::Closed(_))
    ));
}

#[tokio::test]
async fn an_unreachable_engine_is_retried_with_growing_backoff() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (c, mut rx) = Client::connect_with(
        &format!("ws://127.0.0.1:{port}"),
        vec![],
        no_recorder(),
        opts(),
    )
    .unwrap();
    let mut waits = vec![];
    while waits.len() < 4 {
        if let ClientEvent::State(ConnState::Reconnecting {
            attempt,
            in_ms,
            why,
        }) = until(&mut rx, |ev| {
            matches!(ev, ClientEvent::State(ConnState::Reconnecting { .. }))
        })
        .await
        .pop()
        .unwrap()
        {
            assert_eq!(attempt as usize, waits.len() + 1);
            assert!(why.contains("cannot connect"), "{why}");
            waits.push(in_ms);
        }
    }
    // 50, 100, 200, 200 ms plus at most a quarter of jitter.
    for (w, base) in waits.iter().zip([50u64, 100, 200, 200]) {
        assert!(*w >= base && *w <= base + base / 4 + 1, "{waits:?}");
    }
    // A call made meanwhile waits, and fails only by its own timeout.
    assert_eq!(
        c.call("session::list", json!({}), Duration::from_millis(100))
            .await,
        Err(CallError::Timeout)
    );
    // A URL that can never work is refused at once.
    assert!(Client::connect_with("ws://example.com:1", vec![], no_recorder(), opts()).is_err());
}

/// Issue 22 item 8: an engine that answers the handshake with HTTP 401 ends the client with
/// one `Closed` naming the headers sent (never their values) and how to retry, instead of a
/// reconnect every few seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_handshake_closes_once_instead_of_retrying() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let n = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf).await;
            let _ = s
                .write_all(b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    });
    let headers = vec![Header::parse("Authorization: Bearer wrong-s3cr3t").unwrap()];
    let shared: SharedRecorder = Arc::new(Mutex::new(None));
    let url = format!("ws://127.0.0.1:{port}");
    let (_c, mut rx) = Client::connect_with(&url, headers, shared, opts()).unwrap();
    let mut states = Vec::new();
    let closed = loop {
        match tokio::time::timeout(WAIT, rx.recv()).await {
            Ok(Some(ClientEvent::State(ConnState::Closed { why }))) => break why,
            Ok(Some(ClientEvent::State(s))) => states.push(s),
            Ok(Some(_)) => {}
            other => panic!("no Closed: {other:?} after {states:?}"),
        }
    };
    assert!(
        closed.contains("401") && closed.contains("authorization"),
        "{closed}"
    );
    assert!(!closed.contains("wrong-s3cr3t"), "{closed}");
    assert!(
        !states
            .iter()
            .any(|s| matches!(s, ConnState::Reconnecting { .. })),
        "{states:?}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
}
