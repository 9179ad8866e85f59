//! The iii backend against each approval gate the fake engine can play (issue 23 items 2, 3
//! and 6), through ONE headless switchboard app: both naming generations show their held
//! calls and take decisions under their own ids; a missing gate, one of a generation we do
//! not speak, or one bound on a hook no worker provides puts "calls may run unapproved" on
//! screen within 2 s; a gate that joins later clears it and its held calls arrive within 2 s.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard::app::headless::Headless;
use switchboard::backend::iii::session::{IiiBackend, IiiConfig};
use switchboard::core::input::KeyCode;
use switchboard::core::state::State;
use switchboard::core::update::workspace::inbox_refs;
use switchboard_sim::iii::fake_engine::{FakeEngine, World};
use switchboard_sim::iii::fake_gate::FakeGate;

const WAIT: Duration = Duration::from_secs(20);
const TWO_S: Duration = Duration::from_secs(2);

/// Two root sessions, one held call in each (the younger held first, so the inbox must go by
/// the engine's `pending_at`, not by when we heard of them).
fn world(gate: FakeGate) -> World {
    let mut w = World::empty();
    w.gate = gate;
    let now = switchboard::record::now_ms();
    w.new_session("s-a", "Alpha", None, now - 60_000);
    w.new_session("s-b", "Bravo", None, now - 50_000);
    w.hold(
        "s-b",
        "call-b",
        "shell::exec",
        json!({"pending_at": now - 5_000, "arguments_excerpt": {"command": "make b"}}),
    );
    w.hold(
        "s-a",
        "call-a",
        "shell::exec",
        json!({"pending_at": now - 9_000, "arguments_excerpt": {"command": "make a"}}),
    );
    w
}

fn app(engine: &FakeEngine) -> Headless {
    let backend = IiiBackend::new(IiiConfig {
        url: engine.url(),
        headers: Vec::new(),
        sessions: Vec::new(),
        record: None,
        argv: vec!["switchboard".into(), "iii".into()],
    });
    Headless::start(Box::new(backend), 120, 30)
}

fn invocations(e: &FakeEngine, function_id: &str) -> Vec<Value> {
    e.frames_of("invokefunction")
        .into_iter()
        .filter(|f| f["function_id"] == function_id)
        .map(|f| f["data"].clone())
        .collect()
}

fn live(s: &State) -> bool {
    s.sessions[0].harness_host.is_some()
}

fn blind(s: &State) -> bool {
    s.sessions.iter().any(|x| x.session.blind.is_some())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_generations_show_their_held_calls_oldest_first_and_take_g_then_y() {
    for gate in [FakeGate::Kebab, FakeGate::Snake] {
        let engine = FakeEngine::start(0, world(gate)).await.unwrap();
        let mut h = app(&engine);
        h.wait_until(&format!("{gate:?}: both held calls"), WAIT, |s| {
            inbox_refs(s).len() == 2
        })
        .await;
        assert!(!blind(h.state()), "{gate:?}: {}", h.screen());
        let engine_facts = &h.state().sessions[0].session.info;
        let fact = engine_facts
            .iter()
            .find(|(k, _)| k == "approval gate")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let generation = gate.generation().unwrap();
        assert!(fact.contains(generation.created()), "{gate:?}: {fact}");
        // `g` opens the call the engine has held longest (call-a), though it was heard last.
        h.key(KeyCode::Char('g'));
        h.key(KeyCode::Char('y'));
        h.wait_until(&format!("{gate:?}: one allow sent"), WAIT, |_| {
            !invocations(&engine, "approval::resolve").is_empty()
        })
        .await;
        let sent = invocations(&engine, "approval::resolve");
        assert_eq!(sent.len(), 1, "{gate:?}: {sent:?}");
        assert_eq!(sent[0]["function_call_id"], "call-a", "{gate:?}");
        assert_eq!(sent[0]["decision"], "allow");
        // Its own ids only: never the other generation's listing.
        let other = match gate {
            FakeGate::Snake => "approval::list-pending",
            _ => "approval::list_pending",
        };
        assert!(invocations(&engine, other).is_empty(), "{gate:?}");
        assert!(!invocations(&engine, generation.list_pending()).is_empty());
        h.wait_until(&format!("{gate:?}: the card closes"), WAIT, |s| {
            inbox_refs(s).len() == 1
        })
        .await;
        h.quit().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_unknown_or_unbound_gate_is_on_screen_within_two_seconds() {
    for (gate, why) in [
        (FakeGate::Absent, "no approval gate"),
        (FakeGate::Foreign, "does not know"),
        (FakeGate::Unbound, "bound on no harness hook"),
    ] {
        let engine = FakeEngine::start(0, world(gate)).await.unwrap();
        let mut h = app(&engine);
        h.wait_until(&format!("{gate:?}: connected"), WAIT, live)
            .await;
        let connected = Instant::now();
        h.wait_until(&format!("{gate:?}: the warning"), TWO_S, |s| {
            s.sessions[0]
                .session
                .blind
                .as_deref()
                .is_some_and(|b| b.contains("unapproved") && b.contains(why))
        })
        .await;
        assert!(connected.elapsed() <= TWO_S);
        let screen = h.screen();
        assert!(
            screen.contains("held calls cannot be seen: calls may run unapproved"),
            "{gate:?}:\n{screen}"
        );
        h.quit().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_that_joins_later_clears_the_warning_and_its_held_calls_arrive_within_two_seconds() {
    let engine = FakeEngine::start(0, world(FakeGate::Absent)).await.unwrap();
    let mut h = app(&engine);
    h.wait_until("warned", WAIT, blind).await;
    // Every root is warned too.
    h.wait_until("both roots warned", WAIT, |s| {
        s.sessions.len() == 3 && s.sessions.iter().all(|x| x.session.blind.is_some())
    })
    .await;
    assert!(inbox_refs(h.state()).is_empty());
    // Our snake_case bindings were parked all along; the kebab gate's worker joins.
    engine.set_gate(FakeGate::Kebab);
    let joined = Instant::now();
    h.wait_until("the held calls after the join", TWO_S, |s| {
        inbox_refs(s).len() == 2 && !blind(s)
    })
    .await;
    assert!(joined.elapsed() <= TWO_S);
    assert!(!h.screen().contains("unapproved"));
    // And when it leaves again, the warning is back.
    engine.set_gate(FakeGate::Absent);
    h.wait_until("warned again", TWO_S, blind).await;
    h.quit().await;
}
