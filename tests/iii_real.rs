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
#[path = "support/real_engine.rs"]
mod real_engine;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use real_engine::{Engine, Play, StandIn};
use serde_json::json;
use switchboard::backend::iii::client::{self, Client, ClientEvent, ConnState, Subscription};
use tokio::sync::mpsc::Receiver;

const WAIT: Duration = Duration::from_secs(20);

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
