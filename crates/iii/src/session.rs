//! The iii engine as a hosting source of the workspace: one client connection, one mapper,
//! and one workspace session per iii root session (opened through the spawner when the mapper
//! first sees it). The engine's own session shows the connection state and the messages about
//! the connection as a whole.
//!
//! One task owns the mapper; every input (a call's result or error, a pushed event, a
//! connection state change, a human command, the one-second tick) goes through it and its
//! `Out` is applied in order: open roots first, then events, then calls.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::client::{self, CallError, Client, ClientEvent, ConnState};
use super::mapping::{Mapper, OpenRoot, Out, OutCall};
use super::transport::{self, Header};
use switchboard_backend::link::Link;
use switchboard_backend::process::{SharedRecorder, record};
use switchboard_backend::{Backend, SessionLink, Spawner};
use switchboard_core::msg::{BackendEvent, Command, Stamped};
use switchboard_core::state::ReplyCheck;
use switchboard_core::text::{neutralize, sanitize};
use switchboard_core::transcript::Level;
use switchboard_record::Dir;
use switchboard_record::now_ms;

/// Where and how to connect, and what to show.
#[derive(Clone, Debug)]
pub struct IiiConfig {
    /// `ws://` engine URL (loopback unless `wss://`, see `transport::check_url`).
    pub url: String,
    /// Handshake headers (`Authorization: Bearer …`); never recorded or shown.
    pub headers: Vec<Header>,
    /// Root session ids to show; empty shows every root session.
    pub sessions: Vec<String>,
    /// The recording path, `None` for no recording.
    pub record: Option<PathBuf>,
    /// The command line, recorded with header values redacted.
    pub argv: Vec<String>,
}

pub struct IiiBackend {
    config: IiiConfig,
    options: client::Options,
}

impl IiiBackend {
    pub fn new(config: IiiConfig) -> IiiBackend {
        IiiBackend {
            config,
            options: client::Options::default(),
        }
    }

    /// Other client timings (tests: fast backoff).
    pub fn with_options(config: IiiConfig, options: client::Options) -> IiiBackend {
        IiiBackend { config, options }
    }
}

/// iii held calls take decisions only; a raw reply has nowhere to go.
pub fn reply_check(_: &str, _: &Value) -> Result<(), String> {
    Err("the iii engine takes decisions only, not raw replies".into())
}

impl Backend for IiiBackend {
    fn kind(&self) -> switchboard_core::BackendKind {
        switchboard_core::BackendKind::Iii
    }

    fn root_name(&self) -> String {
        format!("iii {}", sanitize(&self.config.url))
    }

    fn reply_check(&self) -> ReplyCheck {
        reply_check
    }

    fn start(
        self: Box<Self>,
        events: mpsc::Sender<Stamped>,
        commands: mpsc::UnboundedReceiver<Command>,
    ) -> JoinHandle<()> {
        // Without a workspace no root session can be opened (the spawner's requests are
        // dropped): only the engine's own session shows the connection.
        let (spawner, _requests) = Spawner::channel();
        self.start_hosting(events, commands, spawner)
    }

    fn start_hosting(
        self: Box<Self>,
        events: mpsc::Sender<Stamped>,
        commands: mpsc::UnboundedReceiver<Command>,
        spawner: Spawner,
    ) -> JoinHandle<()> {
        tokio::spawn(run(*self, events, commands, spawner))
    }

    fn keeps_gates_on_quit(&self) -> bool {
        true
    }
}

/// A finished call, back to the task that owns the mapper.
struct Done {
    call: OutCall,
    result: Result<Value, CallError>,
}

/// An opened root session: its events channel (the session lives while it is held).
struct Hosted {
    events: mpsc::Sender<Stamped>,
}

struct Source {
    mapper: Mapper,
    client: Client,
    engine: mpsc::Sender<Stamped>,
    spawner: Spawner,
    /// Root session ids to show (empty: all).
    only: HashSet<String>,
    hosted: HashMap<String, Hosted>,
    /// Roots the human closed (or the workspace refused): their events are dropped.
    gone: HashSet<String>,
    cmd_tx: mpsc::UnboundedSender<(String, Command)>,
    done_tx: mpsc::UnboundedSender<Done>,
    /// The engine URL, shown as the new-session dialog's harness choice.
    url: String,
    /// The recording (protocol errors are noted in it).
    rec: SharedRecorder,
}

async fn send(to: &mpsc::Sender<Stamped>, event: BackendEvent) {
    let _ = to
        .send(Stamped {
            at_ms: now_ms(),
            event,
        })
        .await;
}

/// The error's code and message as the mapper reads them (reference §2.3 codes).
fn error_parts(e: &CallError) -> (String, String) {
    match e {
        CallError::Timeout => ("TIMEOUT".into(), "no result in time".into()),
        CallError::Disconnected => (
            "disconnected".into(),
            "the engine connection dropped during the call".into(),
        ),
        CallError::Remote(b) => (b.code.clone(), b.message.clone()),
        CallError::Closed(why) => ("closed".into(), why.clone()),
    }
}

/// The connection state as the engine's session shows it.
fn state_text(s: &ConnState) -> String {
    match s {
        ConnState::Connecting => "connecting".into(),
        ConnState::Live { .. } => "Live".into(),
        ConnState::Reconnecting {
            attempt,
            in_ms,
            why,
        } => format!(
            "Reconnecting in {} s (attempt {attempt}: {})",
            in_ms.div_ceil(1000),
            switchboard_core::text::one_line(&neutralize(why), 200)
        ),
        ConnState::Closed { why } => {
            format!(
                "Closed: {}",
                switchboard_core::text::one_line(&neutralize(why), 200)
            )
        }
    }
}

impl Source {
    /// Apply one mapper output in order: roots, events, calls.
    async fn apply(&mut self, out: Out) {
        for root in out.roots {
            self.open_root(root).await;
        }
        for (root, event) in out.events {
            // What went wrong is in the recording too, beside the frames that caused it.
            if let BackendEvent::Protocol {
                level: Level::Error,
                text,
            } = &event
            {
                record(&self.rec, Dir::Note, &format!("protocol error: {text}"));
            }
            if root.is_empty() {
                send(&self.engine, event).await;
            } else if let Some(h) = self.hosted.get(&root) {
                send(&h.events, event).await;
            }
            // Otherwise the root is filtered out, closed, or never opened: dropped.
        }
        for call in out.calls {
            self.call(call);
        }
    }

    async fn open_root(&mut self, root: OpenRoot) {
        if self.hosted.contains_key(&root.key) || self.gone.contains(&root.key) {
            return;
        }
        if !self.only.is_empty() && !self.only.contains(&root.key) {
            return;
        }
        let name = neutralize(&switchboard_core::text::one_line(&root.title, 80)).into_owned();
        let opened = self
            .spawner
            .open(&name, switchboard_core::BackendKind::Iii, reply_check, true)
            .await;
        let Some(SessionLink {
            session: _,
            events,
            mut commands,
        }) = opened
        else {
            // The workspace is gone (quitting): nothing more to open.
            self.gone.insert(root.key);
            return;
        };
        send(
            &events,
            BackendEvent::Info {
                key: "iii session".into(),
                value: Some(sanitize(&root.key)),
            },
        )
        .await;
        // Every session's commands are merged into one channel tagged with the root key.
        let tx = self.cmd_tx.clone();
        let key = root.key.clone();
        tokio::spawn(async move {
            while let Some(c) = commands.recv().await {
                if tx.send((key.clone(), c)).is_err() {
                    break;
                }
            }
        });
        self.hosted.insert(root.key, Hosted { events });
    }

    /// Make one call on its own task; its result comes back through `done_tx`.
    fn call(&self, call: OutCall) {
        let client = self.client.clone();
        let done = self.done_tx.clone();
        tokio::spawn(async move {
            let timeout = if call.retry_safe {
                client::READ_TIMEOUT
            } else {
                client::CALL_TIMEOUT
            };
            let result = client
                .call(&call.function_id, call.payload.clone(), timeout)
                .await;
            let _ = done.send(Done { call, result });
        });
    }

    async fn note(&self, level: Level, text: String) {
        send(&self.engine, BackendEvent::Protocol { level, text }).await;
    }

    async fn state(&mut self, s: ConnState) {
        send(
            &self.engine,
            BackendEvent::Info {
                key: "connection".into(),
                value: Some(state_text(&s)),
            },
        )
        .await;
        // The engine's own session greys with its roots while the connection is down (the
        // roots come back once the mapper's re-read is done).
        let connection = match &s {
            ConnState::Live { .. } => Some((true, "live")),
            ConnState::Reconnecting { .. } => Some((false, "reconnecting to the engine")),
            ConnState::Closed { .. } => Some((false, "the engine connection is closed")),
            ConnState::Connecting => None,
        };
        if let Some((online, detail)) = connection {
            send(
                &self.engine,
                BackendEvent::Connection {
                    online,
                    detail: detail.into(),
                },
            )
            .await;
        }
        // The engine node's status line says it (offline states grey the node as well).
        if matches!(s, ConnState::Live { .. }) {
            send(&self.engine, BackendEvent::Link("connected".into())).await;
        }
        // The new-session dialog offers a harness session on this engine only while live.
        let host = matches!(s, ConnState::Live { .. }).then(|| sanitize(&self.url));
        send(&self.engine, BackendEvent::HarnessHost(host)).await;
        match s {
            ConnState::Live { handlers, .. } => {
                self.mapper.set_handlers(&handlers);
                let out = self.mapper.reconnected();
                self.apply(out).await;
            }
            ConnState::Reconnecting { .. } | ConnState::Closed { .. } => {
                if let ConnState::Closed { why } = &s {
                    self.note(
                        Level::Error,
                        format!("engine connection closed: {}", sanitize(why)),
                    )
                    .await;
                }
                if self.mapper.online() {
                    let out = self.mapper.offline();
                    self.apply(out).await;
                }
            }
            ConnState::Connecting => {}
        }
    }

    async fn client_event(&mut self, e: ClientEvent) {
        match e {
            ClientEvent::State(s) => self.state(s).await,
            ClientEvent::Event(p) => {
                let out = self.mapper.on_event(&p.trigger_type, &p.data, now_ms());
                self.apply(out).await;
            }
            ClientEvent::Unknown(v) => {
                let text = switchboard_core::text::one_line(&v.to_string(), 400);
                self.note(Level::Info, format!("unknown engine frame: {text}"))
                    .await;
            }
            ClientEvent::EventsDropped(n) => {
                self.note(
                    Level::Warn,
                    format!("{n} engine events were dropped (queue full); re-reading"),
                )
                .await;
                if self.mapper.online() {
                    let out = self.mapper.reconnected();
                    self.apply(out).await;
                }
            }
            ClientEvent::Warning(w) => {
                self.note(Level::Warn, sanitize(&w)).await;
            }
        }
    }

    async fn done(&mut self, d: Done) {
        let now = now_ms();
        let out = match &d.result {
            Ok(v) => self
                .mapper
                .on_result(&d.call.function_id, &d.call.payload, v, now),
            Err(e) => {
                let (code, message) = error_parts(e);
                self.mapper
                    .on_error(&d.call.function_id, &d.call.payload, &code, &message, now)
            }
        };
        self.apply(out).await;
    }
}

async fn run(
    backend: IiiBackend,
    engine: mpsc::Sender<Stamped>,
    mut commands: mpsc::UnboundedReceiver<Command>,
    spawner: Spawner,
) {
    let IiiBackend { config, options } = backend;
    let link = Link {
        events: engine.clone(),
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let argv = transport::redact_argv(&config.argv);
    let recorder = link
        .open_recording(
            config.record.as_deref(),
            switchboard_core::BackendKind::Iii,
            &argv,
            &cwd,
        )
        .await;
    let (client, mut client_rx) = match Client::connect_with(
        &config.url,
        config.headers.clone(),
        recorder.clone(),
        options,
    ) {
        Ok(c) => c,
        Err(e) => {
            send(
                &engine,
                BackendEvent::Exited {
                    code: None,
                    detail: format!("cannot connect to {}: {}", sanitize(&config.url), e),
                    stderr_tail: Vec::new(),
                },
            )
            .await;
            return;
        }
    };
    send(
        &engine,
        BackendEvent::Started {
            program: format!("iii engine {}", sanitize(&config.url)),
            pid: None,
        },
    )
    .await;
    // The engine's own node: its harness sessions open as sessions of their own.
    send(
        &engine,
        BackendEvent::Abilities(switchboard_core::msg::Abilities::calls_only(format!(
            "The iii engine at {}: each harness session on it opens as a session of its own, with its held calls as cards (g opens the oldest; Ctrl-N starts a new harness session). It takes no prompt from here.",
            sanitize(&config.url)
        ))),
    )
    .await;
    let (cmd_tx, mut cmd_rx) = mpsc::unbounded_channel();
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let instance = uuid::Uuid::new_v4().simple().to_string();
    let mut src = Source {
        mapper: Mapper::new(&instance[..12]),
        client,
        engine,
        spawner,
        only: config.sessions.iter().cloned().collect(),
        hosted: HashMap::new(),
        gone: HashSet::new(),
        cmd_tx,
        done_tx,
        url: config.url.clone(),
        rec: recorder,
    };
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut client_open = true;
    loop {
        tokio::select! {
            c = commands.recv() => match c {
                // Quitting answers nothing: held calls stay held on the engine.
                None | Some(Command::Shutdown) => break,
                Some(c) => {
                    let out = src.mapper.command("", &c, now_ms());
                    src.apply(out).await;
                }
            },
            Some((root, c)) = cmd_rx.recv() => {
                if matches!(c, Command::Shutdown) {
                    // The human closed this root's session: stop showing it.
                    src.hosted.remove(&root);
                    src.gone.insert(root);
                } else {
                    let out = src.mapper.command(&root, &c, now_ms());
                    src.apply(out).await;
                }
            }
            Some(d) = done_rx.recv() => src.done(d).await,
            e = client_rx.recv(), if client_open => match e {
                Some(e) => src.client_event(e).await,
                None => client_open = false,
            },
            _ = tick.tick() => {
                let out = src.mapper.tick(now_ms());
                src.apply(out).await;
            }
        }
    }
    src.client.close().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_state_reads_live_reconnecting_in_n_s_or_closed() {
        assert_eq!(
            state_text(&ConnState::Live {
                worker_id: "w".into(),
                handlers: "switchboard::x::".into(),
            }),
            "Live"
        );
        let r = state_text(&ConnState::Reconnecting {
            attempt: 3,
            in_ms: 1_104,
            why: "refused\x1b[2J".into(),
        });
        assert!(
            r.starts_with("Reconnecting in 2 s (attempt 3: refused"),
            "{r}"
        );
        assert!(!r.contains('\x1b'), "{r}");
        let closed = state_text(&ConnState::Closed {
            why: "bye\u{202e}".into(),
        });
        assert!(closed.starts_with("Closed: bye"), "{closed}");
        assert!(!closed.contains('\u{202e}'));
    }

    #[test]
    fn call_errors_reach_the_mapper_with_the_engine_codes() {
        assert_eq!(error_parts(&CallError::Timeout).0, "TIMEOUT");
        assert_eq!(error_parts(&CallError::Disconnected).0, "disconnected");
        let remote = CallError::Remote(super::super::codec::ErrorBody::new(
            "invocation_failed",
            "boom",
        ));
        assert_eq!(
            error_parts(&remote),
            ("invocation_failed".into(), "boom".into())
        );
    }
}
