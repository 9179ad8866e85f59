//! The workspace host (`--name`, `attach`, `ls`, `stop`): sessions that outlive the terminal.
//!
//! A host is a process of its own (no terminal, its own session) that owns the workspace: the
//! backends, the shared state, the recordings and the manifest. Terminals attach to it as
//! clients over a private Unix socket (`place`), speaking a small versioned wire (`wire`,
//! docs/host.md). The host draws each client's screen at that client's size (`client`); a
//! decision goes through the one reducer, in order, so the first answer to a gate is the only
//! one, and a client whose key comes second is told (`serve`).

pub mod attach;
pub mod client;
mod conn;
pub mod place;
mod serve;
pub mod wire;

use std::path::Path;
use std::time::Duration;

use crate::app::App;

/// Run `app` as the host `placed` says, on `listener` (bound there) until it is stopped;
/// `farewell` says what the stopped workspace left (recordings, manifest), told to every
/// client and `stop`.
pub async fn serve(
    app: App,
    placed: place::Placed,
    listener: tokio::net::UnixListener,
    farewell: impl Fn(&App) -> Vec<String>,
) -> Result<App, String> {
    serve::run(app, placed, listener, farewell)
        .await
        .map_err(|e| e.to_string())
}

/// One running host's status line (`ls`).
pub async fn status(dir: &Path, name: &str) -> Result<wire::Status, String> {
    match attach::connect(dir, name, wire::Want::Status).await? {
        (_, wire::HostMsg::Status(s)) => Ok(s),
        (_, other) => Err(format!("host {name} answered {other:?} to a status")),
    }
}

/// Stop host `name` as quitting does; returns once it has stopped, with what it left.
///
/// Bounded both ways, as `ls` and `attach` are: a host that does not answer a status within
/// 5 s (stopped, wedged) is not asked to stop (the ask would wait for ever), and one that
/// answers but has not finished stopping within `STOP_WAIT` is left to finish on its own.
pub async fn stop(dir: &Path, name: &str) -> Result<Vec<String>, String> {
    stop_within(dir, name, STOP_WAIT).await
}

/// How long a host that answers may take to stop: a quit answers every gate, gives each
/// agent its grace time (SIGTERM, then SIGKILL) and completes the recordings and manifest,
/// which takes seconds.
pub const STOP_WAIT: Duration = Duration::from_secs(30);

async fn stop_within(dir: &Path, name: &str, wait: Duration) -> Result<Vec<String>, String> {
    // A stop is answered only once the host has stopped: whether it answers at all is asked
    // first, within the time `ls` allows.
    status(dir, name).await?;
    let asked = async {
        let (mut stream, first) = attach::connect(dir, name, wire::Want::Stop).await?;
        let mut msg = Some(first);
        loop {
            match msg.take() {
                Some(wire::HostMsg::Bye { lines, .. }) => return Ok(lines),
                Some(other) => tracing::warn!("stop: unexpected {other:?}"),
                None => {}
            }
            match wire::read_msg::<wire::HostMsg, _>(&mut stream, wire::MAX_FROM_HOST).await {
                Ok(Some(m)) => msg = Some(m),
                // The host went without a word (killed meanwhile): it is stopped all the same.
                Ok(None) => return Ok(Vec::new()),
                Err(e) => return Err(format!("host {name}: {e}")),
            }
        }
    };
    match tokio::time::timeout(wait, asked).await {
        Ok(r) => r,
        Err(_) => Err(format!(
            "host {name} was asked to stop but has not finished within {} s; it goes on \
             stopping by itself (`switchboard ls` lists it until it has)",
            wait.as_secs()
        )),
    }
}

#[cfg(test)]
#[path = "stop_tests.rs"]
mod stop_tests;
