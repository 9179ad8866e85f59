//! The gateway as a `Backend` of today's single-session app: the engine behind a lock, the
//! transport task, the recording, and the owner's answers routed back to their calls.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::engine::{Engine, Pinned};
use super::journal::Journal;
use super::mapping::{self, Nodes};
use super::transport::{self, Event, Token};
use crate::backend::Backend;
use crate::contain::Root;
use crate::core::msg::Stamped;
use crate::core::msg::{BackendEvent, Command, SessionPatch};
use crate::core::state::ReplyCheck;
use crate::core::transcript::Level;
use crate::record::{Dir, Recorder, now_ms};

pub struct GatewayConfig {
    pub url: String,
    pub root: PathBuf,
    pub pinned: Pinned,
    pub token: Token,
    pub journal: PathBuf,
    pub record: Option<PathBuf>,
}

pub struct GatewayBackend {
    config: GatewayConfig,
}

impl GatewayBackend {
    pub fn new(config: GatewayConfig) -> GatewayBackend {
        GatewayBackend { config }
    }
}

fn any_reply(_: &str, _: &serde_json::Value) -> Result<(), String> {
    Err("the gateway takes decisions only, not raw replies".into())
}

impl Backend for GatewayBackend {
    fn name(&self) -> &'static str {
        "gateway"
    }

    fn root_name(&self) -> String {
        format!(
            "gateway {}",
            crate::core::text::sanitize(&self.config.pinned.workspace_id)
        )
    }

    fn reply_check(&self) -> ReplyCheck {
        any_reply
    }

    fn start(
        self: Box<Self>,
        events: mpsc::Sender<Stamped>,
        commands: mpsc::UnboundedReceiver<Command>,
    ) -> JoinHandle<()> {
        tokio::spawn(run(self.config, events, commands))
    }
}

async fn ev(events: &mpsc::Sender<Stamped>, event: BackendEvent) -> bool {
    events
        .send(Stamped {
            at_ms: now_ms(),
            event,
        })
        .await
        .is_ok()
}

async fn note(events: &mpsc::Sender<Stamped>, level: Level, text: String) {
    ev(events, BackendEvent::Protocol { level, text }).await;
}

async fn run(
    c: GatewayConfig,
    events: mpsc::Sender<Stamped>,
    mut commands: mpsc::UnboundedReceiver<Command>,
) {
    let fail = |e: String| BackendEvent::Exited {
        code: None,
        detail: e,
        stderr_tail: Vec::new(),
    };
    let url = match transport::channel_url(&c.url, &c.pinned.workspace_id) {
        Ok(u) => u,
        Err(e) => {
            ev(&events, fail(e)).await;
            return;
        }
    };
    let root = match Root::open(&c.root) {
        Ok(r) => r,
        Err(e) => {
            ev(
                &events,
                fail(format!(
                    "cannot open the project root {}: {e}",
                    c.root.display()
                )),
            )
            .await;
            return;
        }
    };
    let journal = match Journal::open(&c.journal, now_ms()) {
        Ok(j) => j,
        Err(e) => {
            ev(
                &events,
                fail(format!(
                    "cannot open the receipts journal {}: {e}",
                    c.journal.display()
                )),
            )
            .await;
            return;
        }
    };
    let rec_path = c
        .record
        .clone()
        .unwrap_or_else(|| crate::paths::new_recording_path("gateway"));
    let argv = vec![url.clone(), c.pinned.workspace_id.clone()];
    let recorder =
        match Recorder::create(&rec_path, "gateway", &argv, &c.root.display().to_string()) {
            Ok(r) => Some(Arc::new(Mutex::new(r))),
            Err(e) => {
                note(&events, Level::Warn, format!("not recording: {e}")).await;
                None
            }
        };
    if recorder.is_some() {
        ev(
            &events,
            BackendEvent::Recording(rec_path.display().to_string()),
        )
        .await;
    }
    let engine = Engine::new(c.pinned.clone(), root, journal);
    let uncertain = engine.uncertain();
    let engine = Arc::new(Mutex::new(engine));
    ev(
        &events,
        BackendEvent::Started {
            program: format!("gateway → {url}"),
            pid: None,
        },
    )
    .await;
    ev(
        &events,
        BackendEvent::Session(SessionPatch {
            session_id: Some(c.pinned.workspace_id.clone()),
            permission_mode: Some(format!("{:?}", c.pinned.mode).to_lowercase()),
            cwd: Some(c.root.display().to_string()),
            ..SessionPatch::default()
        }),
    )
    .await;
    ev(
        &events,
        BackendEvent::Info {
            key: "journal".into(),
            value: Some(c.journal.display().to_string()),
        },
    )
    .await;
    // Each uncertain receipt is a card: `y` settles it (by the file's SHA when that is
    // conclusive, else on the owner's word), `n` leaves it uncertain. Never a re-run.
    let mut settle: Vec<super::journal::Key> = Vec::new();
    for (k, e) in uncertain {
        let id = format!("gw-settle-{}", settle.len());
        ev(
            &events,
            BackendEvent::GateOpen(mapping::settle_card(&id, &k, &e, now_ms())),
        )
        .await;
        settle.push(k);
    }
    let (etx, mut erx) = mpsc::channel(256);
    let (dtx, drx) = mpsc::unbounded_channel();
    let transport = tokio::spawn(transport::run(
        engine.clone(),
        url,
        c.token.clone(),
        recorder.clone(),
        etx,
        drx,
    ));
    let mut nodes = Nodes::default();
    let mut dtx = Some(dtx);
    loop {
        tokio::select! {
            e = erx.recv() => match e {
                None => break,
                Some(Event::Connected { url }) => note(&events, Level::Info, format!("connected to {url}")).await,
                Some(Event::Disconnected { reason, retry_in: Some(w) }) => {
                    note(&events, Level::Warn, format!("disconnected: {reason}; retrying in {} ms", w.as_millis())).await
                }
                Some(Event::Disconnected { reason, retry_in: None }) => {
                    ev(&events, fail(format!("channel closed: {reason}"))).await;
                    break;
                }
                Some(Event::Engine(o)) => {
                    for e in nodes.map(&o, now_ms()) {
                        ev(&events, e).await;
                    }
                }
            },
            cmd = commands.recv() => match cmd {
                None | Some(Command::Shutdown) => {
                    // Quitting leaves waiting calls unanswered: B re-sends them next time.
                    dtx = None;
                    break;
                }
                Some(Command::Answer { gate_id, decision }) if gate_id.starts_with("gw-settle-") => {
                    let key = gate_id["gw-settle-".len()..].parse::<usize>().ok().and_then(|i| settle.get(i)).cloned();
                    let Some(key) = key else { continue };
                    if !matches!(decision, crate::core::gate::Decision::Allow { .. }) {
                        note(&events, Level::Info, format!("receipt {} left uncertain", key.2)).await;
                        continue;
                    }
                    let e = engine.clone();
                    let done = tokio::task::spawn_blocking(move || {
                        let mut e = e.lock().unwrap_or_else(|p| p.into_inner());
                        match e.settle(&key, None) {
                            Ok(_) => format!("receipt {} settled by the file's revision", key.2),
                            Err(why) => match e.settle(&key, Some("marked settled by the owner")) {
                                Ok(_) => format!("receipt {} settled on the owner's word ({why})", key.2),
                                Err(e) => format!("receipt {} not settled: {e}", key.2),
                            },
                        }
                    })
                    .await
                    .unwrap_or_else(|_| "settling failed".into());
                    note(&events, Level::Info, done).await;
                }
                Some(Command::Answer { gate_id, decision }) => {
                    if let (Some(g), Some(tx)) = (mapping::engine_gate(&gate_id), dtx.as_ref()) {
                        let _ = tx.send((g, mapping::decision(&decision)));
                    }
                }
                Some(Command::Note(text)) => {
                    if let Some(r) = &recorder {
                        let _ = r.lock().unwrap_or_else(|p| p.into_inner()).record(Dir::Note, &text);
                    }
                }
                Some(_) => note(&events, Level::Info, "the remote agent takes no prompts from here: answer its cards".into()).await,
            },
        }
    }
    drop(dtx);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), transport).await;
    ev(
        &events,
        BackendEvent::Exited {
            code: Some(0),
            detail: "gateway closed".into(),
            stderr_tail: Vec::new(),
        },
    )
    .await;
}
