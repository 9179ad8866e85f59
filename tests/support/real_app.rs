//! One switchboard app (`Headless`) on the real iii engine, for `tests/iii_real.rs`: start it,
//! read what it shows (the stand-in's roots, the engine session's facts, the warning that held
//! calls cannot be seen), let time pass, allow a held call from its card. Include after
//! `common.rs` and `real_engine.rs`: `#[path = "support/real_app.rs"] mod real_app;`.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard::app::headless::Headless;
use switchboard::backend::iii::client;
use switchboard::backend::iii::session::{IiiBackend, IiiConfig};
use switchboard::core::input::KeyCode;
use switchboard::core::state::{Focus, GateRef, Overlay, SessionId, State};
use switchboard::core::update::workspace::inbox_refs;

use crate::real_engine::{Engine, StandIn};

pub const WAIT: Duration = Duration::from_secs(20);
/// The acceptance bound: a joining worker's state, or the warning, on screen within 2 s.
pub const PROMPT: Duration = Duration::from_secs(2);
/// The words of the warning that held calls cannot be seen (state and screen).
pub const BLIND: &str = "held calls cannot be seen: calls may run unapproved";

/// The warning drawn now: the banner of the session on screen (`⚠ held calls cannot be
/// seen…`) or a session's status in the tree (`⚠ blind: calls may run unapproved`). A
/// transcript row that tells of an earlier warning does not count.
pub fn warning_on_screen(screen: &str) -> bool {
    screen.contains(&format!("⚠ {BLIND}")) || screen.contains("⚠ blind: calls may run unapproved")
}

/// `switchboard iii` on `e` in a headless 160x48 app, reconnecting fast.
pub fn app(e: &Engine) -> Headless {
    let backend = IiiBackend::with_options(
        IiiConfig {
            url: e.url(),
            headers: Vec::new(),
            sessions: Vec::new(),
            record: Some(e.dir.join("switchboard.jsonl")),
            argv: vec!["switchboard".into(), "iii".into()],
        },
        client::Options {
            backoff_first: Duration::from_millis(50),
            backoff_cap: Duration::from_millis(250),
            handshake_timeout: WAIT,
            ..client::Options::default()
        },
    );
    Headless::start(Box::new(backend), 160, 48)
}

pub fn session_named(s: &State, title: &str) -> Option<SessionId> {
    s.sessions.iter().find(|x| x.name() == title).map(|x| x.id)
}

/// A fact of the engine's own session (the first one: the source's).
pub fn engine_info(s: &State, key: &str) -> Option<String> {
    s.sessions[0]
        .session
        .info
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
}

/// The engine's session is live (it can host harness sessions).
pub fn live(s: &State) -> bool {
    s.sessions[0].harness_host.is_some() && s.sessions[0].session.offline.is_none()
}

/// The warning on the engine's session and on every iii root under it.
pub fn warned(s: &State) -> bool {
    s.sessions.iter().all(|x| {
        x.session
            .blind
            .as_deref()
            .is_some_and(|w| w.contains(BLIND))
    })
}

/// No session carries the warning.
pub fn clear(s: &State) -> bool {
    s.sessions.iter().all(|x| x.session.blind.is_none())
}

/// Both stand-in roots on screen with `held` held calls in the inbox, and nothing warned.
pub fn all_seen(s: &State, roots: u32, held: usize) -> bool {
    (1..=roots).all(|i| session_named(s, &format!("Stand-in session {i}")).is_some())
        && inbox_refs(s).len() == held
        && clear(s)
        && live(s)
}

/// Apply the app's backend messages for `d` (time passes with the app running).
pub async fn pump(h: &mut Headless, d: Duration) {
    let end = tokio::time::Instant::now() + d;
    loop {
        h.app.drain_backend(usize::MAX);
        match tokio::time::timeout_at(end, h.app.next_backend()).await {
            Ok(Some(m)) => h.app.apply(m),
            // No message now (a source between streams): time still passes.
            Ok(None) => {
                tokio::time::sleep_until(
                    end.min(tokio::time::Instant::now() + Duration::from_millis(20)),
                )
                .await
            }
            Err(_) => return,
        }
        if tokio::time::Instant::now() >= end {
            return;
        }
    }
}

/// `h.wait_until` with a deadline `within` after `from`; how long after `from` it held.
pub async fn within(
    h: &mut Headless,
    what: &str,
    from: Instant,
    within: Duration,
    pred: impl Fn(&State) -> bool,
) -> Duration {
    let left = (from + within).saturating_duration_since(Instant::now());
    h.wait_until(what, left, pred).await;
    let took = from.elapsed();
    eprintln!("{what}: {took:?}");
    took
}

pub fn open_inbox(h: &mut Headless) {
    if h.state().overlay == Some(Overlay::Inbox) {
        return;
    }
    if h.state().focus == Focus::Prompt {
        h.key(KeyCode::Esc);
    }
    h.key(KeyCode::Char('I'));
    if h.state().overlay != Some(Overlay::Inbox) {
        panic!("`I` does not open the inbox\n{}", h.screen());
    }
}

/// Allow the held call of the root titled `title` once, on its card opened from the inbox
/// (a command is never allowed in a batch).
pub fn allow(h: &mut Headless, title: &str) -> GateRef {
    let sid = session_named(h.state(), title).unwrap();
    let rows = inbox_refs(h.state());
    let row = rows.iter().position(|r| r.session == sid).unwrap();
    open_inbox(h);
    h.key(KeyCode::Home);
    for _ in 0..row {
        h.key(KeyCode::Down);
    }
    h.key(KeyCode::Enter);
    if h.state().focus != Focus::Gate {
        panic!("Enter does not open the card\n{}", h.screen());
    }
    h.key(KeyCode::Char('y'));
    rows[row].clone()
}

/// Until the stand-in logged an `approval::resolve`; its payloads.
pub async fn resolves(w: &StandIn) -> Vec<Value> {
    let end = Instant::now() + WAIT;
    loop {
        let got = w.invoked("approval::resolve");
        if !got.is_empty() || Instant::now() > end {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
