//! The real app, headless, as the owner of a fake host's channel: what the gateway's app
//! tests share (the channel's config, connecting while the app runs, waiting for a result).
// Each test file uses what it needs of it.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use switchboard::app::headless::Headless;
use switchboard::backend::gateway::engine::Pinned;
use switchboard::backend::gateway::session::{GatewayBackend, GatewayConfig};
use switchboard::backend::gateway::tools::env::ExecEnv;
use switchboard::backend::gateway::transport::Token;
use switchboard::backend::gateway::validate::Mode;
use switchboard_sim::gateway::fake_host::{Conn, FakeHost};

pub const WAIT: Duration = Duration::from_secs(20);

/// The channel for the project `base/proj` (journal and recording under `base/data`).
pub fn config(
    base: &Path,
    host: &FakeHost,
    (workspace, intention, token): (&str, &str, &str),
    mode: Mode,
    exec_env: Arc<ExecEnv>,
) -> GatewayConfig {
    GatewayConfig {
        url: host.base_url(),
        root: base.join("proj"),
        pinned: Pinned {
            workspace_id: workspace.into(),
            intention: intention.into(),
            mode,
            extra_tools: Vec::new(),
        },
        token: Token::new(token.into()).unwrap(),
        journal: base.join("data/journal.jsonl"),
        record: Some(base.join("data/recording.jsonl")),
        exec_env,
    }
}

/// Start the app on `cfg`, `width` columns wide, and take its connection.
pub async fn start(cfg: GatewayConfig, host: &mut FakeHost, width: u16) -> (Headless, Conn) {
    let mut h = Headless::start(Box::new(GatewayBackend::new(cfg)), width, 40);
    let c = connect(&mut h, host).await;
    (h, c)
}

/// Take the app's connection (the app keeps applying backend messages while it connects);
/// `ready` sent.
pub async fn connect(h: &mut Headless, host: &mut FakeHost) -> Conn {
    let accept = host.accept(WAIT);
    tokio::pin!(accept);
    let mut c = loop {
        tokio::select! {
            c = &mut accept => break c.expect("A connects"),
            m = h.app.next_backend() => if let Some(m) = m { h.app.apply(m) },
        }
    };
    c.send(r#"{"type":"ready","protocol":1}"#.into()).await;
    c
}

/// A project directory `base/proj` for a test called `tag`, empty.
pub fn scratch(tag: &str) -> std::path::PathBuf {
    let base = std::env::temp_dir().join(format!("sb-gw-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("proj")).unwrap();
    base
}

/// Open the oldest waiting card from the tree (a conversation's cards are in its own
/// session): `g`.
pub fn open_oldest(h: &mut Headless) {
    h.app.state.focus = switchboard::core::state::Focus::Tree;
    h.key(switchboard::core::input::KeyCode::Char('g'));
}

/// Wait for the result of `id` while the app keeps applying backend messages.
pub async fn pump_result(h: &mut Headless, c: &mut Conn, id: &str) -> String {
    let fut = c.result_for(id, WAIT);
    tokio::pin!(fut);
    loop {
        tokio::select! {
            r = &mut fut => return r.expect("a result"),
            m = h.app.next_backend() => if let Some(m) = m { h.app.apply(m) },
        }
    }
}
