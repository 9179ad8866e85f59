//! The real app, headless, as the owner of a fake host's channel: what the gateway's app
//! tests share (the channel's config, connecting while the app runs, waiting for a result).
// Each test file uses what it needs of it.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use switchboard::app::headless::Headless;
use switchboard::backend::gateway::engine::Pinned;
use switchboard::backend::gateway::fake_host::{Conn, FakeHost};
use switchboard::backend::gateway::session::{GatewayBackend, GatewayConfig};
use switchboard::backend::gateway::tools::env::ExecEnv;
use switchboard::backend::gateway::transport::Token;
use switchboard::backend::gateway::validate::Mode;

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

/// Start the app on `cfg` and take its connection (the app keeps applying backend messages
/// while it connects); `ready` sent.
pub async fn start(cfg: GatewayConfig, host: &mut FakeHost) -> (Headless, Conn) {
    let mut h = Headless::start(Box::new(GatewayBackend::new(cfg)), 120, 40);
    let accept = host.accept(WAIT);
    tokio::pin!(accept);
    let mut c = loop {
        tokio::select! {
            c = &mut accept => break c.expect("A connects"),
            m = h.app.next_backend() => if let Some(m) = m { h.app.apply(m) },
        }
    };
    c.send(r#"{"type":"ready","protocol":1}"#.into()).await;
    (h, c)
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
