//! switchboard against the real iii engine (issue #23): the engine binary beside the repository
//! (or `III_ENGINE_BIN`), and a stand-in harness, session-manager and approval gate written on
//! the iii authors' Python SDK (`tests/peers/iii-worker/standin.py`), so neither the engine nor
//! the worker side is ours. Under `CI=true` these run and never skip (`common::require_or_skip`).
//!
//! - a binding of ours the engine parks (no worker provides its type yet) is placed when the
//!   gate joins, and an event emitted after that reaches us (client level);
//! - ONE switchboard app (`Headless`) per test otherwise: discovery of the gate's generation
//!   (current, legacy), the warning when held calls cannot be seen (no gate, an unknown
//!   generation, a gate bound on a hook no worker provides), a worker joining 10 s late, a
//!   worker restarting, the engine restarting on the same port.

#[path = "support/common.rs"]
mod common;
#[path = "support/real_app.rs"]
mod real_app;
#[path = "support/real_engine.rs"]
mod real_engine;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use real_app::{
    PROMPT, WAIT, all_seen, allow, app, engine_info, live, pump, resolves, session_named, warned,
    warning_on_screen, within,
};
use real_engine::{Engine, Play, StandIn};
use serde_json::json;
use switchboard::backend::iii::client::{self, Client, ClientEvent, ConnState, Subscription};
use switchboard::core::update::workspace::inbox_refs;
use tokio::sync::mpsc::Receiver;

/// The engine and the stand-in's Python, or `None` under the skip rule.
fn peers(test: &str) -> Option<(PathBuf, PathBuf)> {
    let bin = real_engine::engine_bin_or_skip(test)?;
    let python = real_engine::standin_python_or_skip(test)?;
    Some((bin, python))
}

/// A running engine (started, listening) for `test`.
async fn engine(bin: &std::path::Path, test: &str) -> Engine {
    let e = Engine::start(bin, test);
    assert!(
        e.listening(WAIT).await,
        "the engine never listened:\n{}",
        e.log()
    );
    e
}

async fn standin(python: &std::path::Path, e: &Engine, play: &Play, name: &str) -> StandIn {
    let mut w = StandIn::start(python, &e.url(), play, &e.dir, name);
    w.ready().await;
    w
}

// ---------------------------------------------------------------- the client alone

async fn until(
    rx: &mut Receiver<ClientEvent>,
    what: &str,
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
            Ok(None) => panic!("event stream ended waiting for {what}; saw {seen:#?}"),
            Err(_) => panic!("timed out waiting for {what}; saw {seen:#?}"),
        }
    }
}

/// Whether the engine lists a binding of `trigger_type` to one of our handlers.
async fn ours_listed(c: &Client, trigger_type: &str) -> bool {
    let listed = c
        .call(
            "engine::registered-triggers::list",
            json!({"include_internal": true}),
            WAIT,
        )
        .await
        .unwrap();
    listed["registered_triggers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| {
            t["trigger_type"] == trigger_type
                && t["function_id"]
                    .as_str()
                    .is_some_and(|f| f.starts_with("switchboard::"))
        })
}

/// Until `ours_listed` says `want`, at most `WAIT`.
async fn until_listed(c: &Client, trigger_type: &str, want: bool) {
    let end = Instant::now() + WAIT;
    while ours_listed(c, trigger_type).await != want {
        assert!(
            Instant::now() < end,
            "our {trigger_type} binding listed: {}",
            !want
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Our binding of `approval::pending-created`, made while no worker provides the type: the
/// engine parks it without a word and does not list it. When the gate joins, the engine hands
/// it to the gate (listed); an event the gate emits after that reaches us. When the gate
/// leaves, the binding is unlisted again, and placed again when a gate comes back. The
/// stand-in ends cleanly on SIGTERM.
#[tokio::test]
async fn real_engine_parks_a_binding_until_the_gate_joins() {
    let test = "real_engine_parks_a_binding_until_the_gate_joins";
    let Some((bin, python)) = peers(test) else {
        return;
    };
    let e = engine(&bin, "parked").await;
    let o = client::Options {
        subscriptions: vec![
            Subscription::all("approval::pending-created"),
            Subscription::all("engine::workers-available"),
        ],
        backoff_first: Duration::from_millis(50),
        backoff_cap: Duration::from_millis(250),
        handshake_timeout: WAIT,
        ..client::Options::default()
    };
    let (c, mut rx) =
        Client::connect_with(&e.url(), vec![], Arc::new(Mutex::new(None)), o).unwrap();
    let seen = until(&mut rx, "live", |e| {
        matches!(e, ClientEvent::State(ConnState::Live { .. }))
    })
    .await;
    assert!(
        !seen.iter().any(|e| matches!(e, ClientEvent::Warning(_))),
        "the engine said nothing about the parked binding: {seen:#?}"
    );
    assert!(!ours_listed(&c, "approval::pending-created").await);
    assert!(ours_listed(&c, "engine::workers-available").await);

    let play = Play {
        sessions: 1,
        held: 0,
        ..Play::default()
    };
    let mut gate = standin(&python, &e, &play, "gate").await;
    until_listed(&c, "approval::pending-created", true).await;
    assert_eq!(
        gate.command("bindings approval::pending-created").await,
        "OK 1",
        "the engine handed our binding to the gate"
    );
    gate.command("hold standin-1 call-late").await;
    let seen = until(
        &mut rx,
        "the late pending-created",
        |e| matches!(e, ClientEvent::Event(ev) if ev.trigger_type == "approval::pending-created"),
    )
    .await;
    let Some(ClientEvent::Event(ev)) = seen.last() else {
        unreachable!()
    };
    assert_eq!(ev.data["function_call_id"], "call-late", "{ev:?}");
    assert_eq!(ev.data["session_id"], "standin-1", "{ev:?}");

    // The gate leaves: parked again (unlisted). Another gate comes: placed again.
    assert!(
        gate.terminate(WAIT).await,
        "SIGTERM ends the stand-in cleanly"
    );
    until_listed(&c, "approval::pending-created", false).await;
    let mut again = standin(&python, &e, &play, "gate-again").await;
    until_listed(&c, "approval::pending-created", true).await;
    assert_eq!(
        again.command("bindings approval::pending-created").await,
        "OK 1"
    );
    c.close().await;
}

// ---------------------------------------------------------------- one switchboard app

/// The current gate: its sessions and held calls on screen, the generation and the harness
/// version among the engine's facts, no warning; an allow from the inbox reaches the gate as
/// `approval::resolve {decision: allow}` and its `pending-resolved` closes the card.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_engine_current_gate_sessions_held_calls_and_an_allow() {
    let test = "real_engine_current_gate_sessions_held_calls_and_an_allow";
    let Some((bin, python)) = peers(test) else {
        return;
    };
    let e = engine(&bin, "current").await;
    let w = standin(&python, &e, &Play::default(), "worker").await;
    let start = Instant::now();
    let mut h = app(&e);
    within(
        &mut h,
        "current: roots, held calls, no warning",
        start,
        WAIT,
        |s| {
            all_seen(s, 2, 2)
                && engine_info(s, "approval gate").is_some_and(|g| g.contains("present"))
        },
    )
    .await;
    let s = h.state();
    let gate = engine_info(s, "approval gate").unwrap();
    assert!(gate.contains("approval::pending-created"), "{gate}");
    assert!(gate.contains("harness::hook::pre-trigger"), "{gate}");
    assert_eq!(engine_info(s, "harness").as_deref(), Some("v1.8.25"));
    assert_eq!(engine_info(s, "sessions").as_deref(), Some("2"));
    let screen = h.screen();
    assert!(screen.contains("Stand-in session 1"), "{screen}");
    assert!(!warning_on_screen(&screen), "{screen}");

    let g = allow(&mut h, "Stand-in session 2");
    let sent = resolves(&w).await;
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert_eq!(sent[0]["session_id"], "standin-2");
    assert_eq!(sent[0]["function_call_id"], "standin-call-2");
    assert_eq!(sent[0]["decision"], "allow");
    h.wait_until("the allowed call's card closed", WAIT, |s| {
        !inbox_refs(s).contains(&g) && inbox_refs(s).len() == 1
    })
    .await;
    h.quit().await;
}

/// The older gate (snake_case ids, bound on `pre_dispatch`): its held calls reach the inbox
/// through `approval::list_pending` and `approval::pending_created`, and a decision reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_engine_legacy_gate_held_calls_reach_the_inbox() {
    let test = "real_engine_legacy_gate_held_calls_reach_the_inbox";
    let Some((bin, python)) = peers(test) else {
        return;
    };
    let e = engine(&bin, "legacy").await;
    let play = Play {
        generation: "legacy",
        hook: "pre_dispatch",
        harness_hooks: "pre-trigger,pre_dispatch",
        ..Play::default()
    };
    let w = standin(&python, &e, &play, "worker").await;
    let start = Instant::now();
    let mut h = app(&e);
    within(
        &mut h,
        "legacy: roots, held calls, no warning",
        start,
        WAIT,
        |s| {
            all_seen(s, 2, 2)
                && engine_info(s, "approval gate").is_some_and(|g| g.contains("present"))
        },
    )
    .await;
    let gate = engine_info(h.state(), "approval gate").unwrap();
    assert!(gate.contains("approval::pending_created"), "{gate}");
    assert!(gate.contains("harness::hook::pre_dispatch"), "{gate}");
    assert!(!w.invoked("approval::list_pending").is_empty());
    assert!(w.invoked("approval::list-pending").is_empty());

    let g = allow(&mut h, "Stand-in session 1");
    let sent = resolves(&w).await;
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert_eq!(sent[0]["function_call_id"], "standin-call-1");
    assert_eq!(sent[0]["decision"], "allow");
    h.wait_until("the allowed call's card closed", WAIT, |s| {
        !inbox_refs(s).contains(&g)
    })
    .await;
    h.quit().await;
}

/// Start the app on an engine whose worker plays `play`: the warning is on the engine's
/// session and every root, and on screen, within 2 s of starting the app (connecting
/// included); the engine's "approval gate" fact says why, `why` among its words.
async fn warned_within_2s(test: &str, name: &str, play: Play, why: &str) {
    let Some((bin, python)) = peers(test) else {
        return;
    };
    let e = engine(&bin, name).await;
    let _w = standin(&python, &e, &play, "worker").await;
    let start = Instant::now();
    let mut h = app(&e);
    within(&mut h, "the warning", start, PROMPT, |s| {
        live(s) && warned(s) && session_named(s, "Stand-in session 1").is_some()
    })
    .await;
    let screen = h.screen();
    assert!(
        screen.contains(&format!("⚠ {}", real_app::BLIND)),
        "{screen}"
    );
    // Why, among the engine's facts (discovery may need a second look to say it).
    h.wait_until(
        &format!("the approval gate fact naming {why:?}"),
        WAIT,
        |s| engine_info(s, "approval gate").is_some_and(|g| g.contains(why)),
    )
    .await;
    assert!(warned(h.state()));
    h.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_engine_no_gate_warns_within_2s() {
    let play = Play {
        generation: "none",
        ..Play::default()
    };
    let test = "real_engine_no_gate_warns_within_2s";
    warned_within_2s(test, "none", play, "no approval gate").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_engine_unknown_gate_generation_warns_within_2s() {
    let play = Play {
        generation: "unknown",
        ..Play::default()
    };
    let test = "real_engine_unknown_gate_generation_warns_within_2s";
    warned_within_2s(test, "unknown", play, "approval::inbox-v9").await;
}

/// The gate bound on `pre-dispatch`, a hook the harness does not provide: the engine parks
/// the binding and nothing is ever held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_engine_gate_on_an_unprovided_hook_warns_within_2s() {
    let play = Play {
        hook: "pre-dispatch",
        harness_hooks: "pre-trigger",
        ..Play::default()
    };
    let test = "real_engine_gate_on_an_unprovided_hook_warns_within_2s";
    warned_within_2s(test, "unbound", play, "bound on no harness hook").await;
}

// ---------------------------------------------------------------- workers and the engine come and go

/// The worker joins 10 s after switchboard is live (until then: the warning, no roots). Within
/// 2 s of its READY (registered, its functions listed; it announces nothing, so its held
/// calls are found by listing) its sessions and held calls are on screen and the warning is
/// gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_engine_a_worker_joining_10s_late_is_on_screen_within_2s() {
    let test = "real_engine_a_worker_joining_10s_late_is_on_screen_within_2s";
    let Some((bin, python)) = peers(test) else {
        return;
    };
    let e = engine(&bin, "late").await;
    let mut h = app(&e);
    h.wait_until("live, warned: no gate yet", WAIT, |s| live(s) && warned(s))
        .await;
    let joined_at = Instant::now() + Duration::from_secs(10);
    pump(&mut h, joined_at.saturating_duration_since(Instant::now())).await;
    assert!(warned(h.state()) && h.state().sessions.len() == 1);
    let play = Play {
        announce: false,
        ..Play::default()
    };
    let mut w = StandIn::start(&python, &e.url(), &play, &e.dir, "worker");
    w.ready().await;
    let ready = Instant::now();
    within(
        &mut h,
        "roots and held calls after the join",
        ready,
        PROMPT,
        |s| all_seen(s, 2, 2),
    )
    .await;
    let screen = h.screen();
    assert!(screen.contains("Stand-in session 2"), "{screen}");
    assert!(!warning_on_screen(&screen), "{screen}");
    h.quit().await;
}

/// The worker dies (SIGKILL) and a new one starts with one held call fewer: the warning while
/// the gate is gone; after the restart the held calls are read again (the vanished one's card
/// removed), and the warning clears.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_engine_a_worker_restart_re_reads_held_calls() {
    let test = "real_engine_a_worker_restart_re_reads_held_calls";
    let Some((bin, python)) = peers(test) else {
        return;
    };
    let e = engine(&bin, "restart-worker").await;
    let since_ms = switchboard::record::now_ms() - 60_000;
    let first = Play {
        since_ms,
        ..Play::default()
    };
    let mut w = standin(&python, &e, &first, "worker-1").await;
    let mut h = app(&e);
    h.wait_until("both roots and held calls", WAIT, |s| all_seen(s, 2, 2))
        .await;
    w.kill();
    let gone = Instant::now();
    within(
        &mut h,
        "the warning after the gate died",
        gone,
        PROMPT,
        warned,
    )
    .await;
    // The same records but the second held call, resolved elsewhere while the gate was down.
    let play = Play {
        held: 1,
        announce: false,
        ..first
    };
    let _w = standin(&python, &e, &play, "worker-2").await;
    let ready = Instant::now();
    within(
        &mut h,
        "only the first held call after the restart",
        ready,
        PROMPT,
        |s| {
            let refs = inbox_refs(s);
            all_seen(s, 2, 1) && refs[0].id.contains("standin-call-1")
        },
    )
    .await;
    let one = session_named(h.state(), "Stand-in session 1").unwrap();
    assert_eq!(inbox_refs(h.state())[0].session, one);
    h.quit().await;
}

/// The engine dies (SIGKILL) and starts again on the same port: switchboard greys, reconnects,
/// re-reads; the stand-in reconnects on its own (its SDK); sessions and held calls are back,
/// no warning, and an allow reaches the gate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_engine_an_engine_restart_reconnects_and_re_reads() {
    let test = "real_engine_an_engine_restart_reconnects_and_re_reads";
    let Some((bin, python)) = peers(test) else {
        return;
    };
    let mut e = engine(&bin, "restart-engine").await;
    let w = standin(&python, &e, &Play::default(), "worker").await;
    let mut h = app(&e);
    h.wait_until("both roots and held calls", WAIT, |s| all_seen(s, 2, 2))
        .await;
    e.kill();
    h.wait_until("every session offline", WAIT, |s| {
        s.sessions.iter().all(|x| x.session.offline.is_some())
    })
    .await;
    let restarted_ms = switchboard::record::now_ms();
    e.restart();
    assert!(e.listening(WAIT).await, "{}", e.log());
    let back = Instant::now();
    within(&mut h, "back after the engine restart", back, WAIT, |s| {
        all_seen(s, 2, 2) && s.sessions.iter().all(|x| x.session.offline.is_none())
    })
    .await;
    // Decide once the held calls were listed again: a decision that overtakes that listing
    // can leave its card on screen for good (found here; reported to the mapper's owner).
    assert!(
        w.invoked_since("approval::list-pending", restarted_ms, WAIT)
            .await
    );
    pump(&mut h, Duration::from_millis(300)).await;
    let g = allow(&mut h, "Stand-in session 1");
    let sent = resolves(&w).await;
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert_eq!(sent[0]["function_call_id"], "standin-call-1");
    h.wait_until("the allowed call's card closed", WAIT, |s| {
        !inbox_refs(s).contains(&g)
    })
    .await;
    h.quit().await;
}

/// A decision overtakes a listing of held calls: the gate took the listing before the allow
/// and delivers it after its `pending-resolved` and `resolved: true`. The card closes and
/// stays closed: the stale listing does not bring it back for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_engine_an_allow_overtaking_a_listing_closes_its_card() {
    let test = "real_engine_an_allow_overtaking_a_listing_closes_its_card";
    let Some((bin, python)) = peers(test) else {
        return;
    };
    let e = engine(&bin, "overtaken").await;
    let play = Play {
        list_lag_ms: 600,
        ..Play::default()
    };
    let mut w = standin(&python, &e, &play, "worker").await;
    let mut h = app(&e);
    h.wait_until("both roots and held calls", WAIT, |s| all_seen(s, 2, 2))
        .await;
    pump(&mut h, Duration::from_millis(800)).await;
    // `harness::ready` again: switchboard looks again and lists the held calls; the allow
    // goes out while that listing is on its way.
    let asked = switchboard::record::now_ms();
    w.command("ready").await;
    assert!(w.invoked_since("approval::list-pending", asked, WAIT).await);
    let g = allow(&mut h, "Stand-in session 1");
    let sent = resolves(&w).await;
    assert_eq!(sent.len(), 1, "{sent:#?}");
    h.wait_until("the allowed call's card closed", WAIT, |s| {
        !inbox_refs(s).contains(&g)
    })
    .await;
    pump(&mut h, Duration::from_millis(1500)).await;
    let stale = inbox_refs(h.state());
    // A later, complete listing without the call.
    let again = switchboard::record::now_ms();
    w.command("ready").await;
    assert!(w.invoked_since("approval::list-pending", again, WAIT).await);
    pump(&mut h, Duration::from_millis(1500)).await;
    let refs = inbox_refs(h.state());
    assert!(
        !stale.contains(&g) && !refs.contains(&g),
        "the stale listing brought it back ({stale:?}); after a later listing without it: {refs:?}"
    );
    assert_eq!(refs.len(), 1, "{refs:?}");
    h.quit().await;
}
