//! The gateway as a session source of the workspace: the engine behind a lock, the
//! transport task, the recording, and the owner's answers routed back to their calls.
//!
//! The channel's own session shows the connection, the intention, the protocol log, the
//! "accept conversation X?" cards and the uncertain receipts; each conversation (`sessionId`)
//! gets a workspace session of its own, opened through the spawner the first time it has
//! something to show. Every session of the channel keeps its gates on quit: the calls that
//! wait are re-sent by the host on the next connection, never denied on the way out.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::effect::Outcome;
use super::engine::{Engine, Out, Pinned};
use super::journal::Journal;
use super::mapping::{self, Nodes, Target};
use super::transport::{self, Event, Token};
use super::watch::Watcher;
use switchboard_backend::contain::Root;
use switchboard_backend::{Backend, SessionLink, Spawner};
use switchboard_core::msg::Stamped;
use switchboard_core::msg::{Abilities, BackendEvent, Command, SessionPatch};
use switchboard_core::state::ReplyCheck;
use switchboard_core::transcript::Level;
use switchboard_record::{Dir, Recorder, now_ms};

pub struct GatewayConfig {
    pub url: String,
    pub root: PathBuf,
    pub pinned: Pinned,
    pub token: Token,
    pub journal: PathBuf,
    pub record: Option<PathBuf>,
    /// What the channel's commands start with, built once at startup from `[gateway] env`
    /// (`tools::env::load`); the engine's command table is to be made with it
    /// (`Commands::new`), so the cards show exactly this.
    pub exec_env: Arc<super::tools::env::ExecEnv>,
}

pub struct GatewayBackend {
    config: GatewayConfig,
}

impl GatewayBackend {
    pub fn new(config: GatewayConfig) -> GatewayBackend {
        GatewayBackend { config }
    }
}

/// A raw reply is never sent on the channel: gateway gates take decisions only.
pub fn reply_check(_: &str, _: &serde_json::Value) -> Result<(), String> {
    Err("the gateway takes decisions only, not raw replies".into())
}

impl Backend for GatewayBackend {
    fn kind(&self) -> switchboard_core::BackendKind {
        switchboard_core::BackendKind::Gateway
    }

    fn root_name(&self) -> String {
        format!(
            "gateway {}",
            switchboard_core::text::sanitize(&self.config.pinned.workspace_id)
        )
    }

    fn reply_check(&self) -> ReplyCheck {
        reply_check
    }

    /// Without a workspace to open sessions in, every conversation shows in this session
    /// (the first on the root, the later ones as child nodes), as in a replay.
    fn start(
        self: Box<Self>,
        events: mpsc::Sender<Stamped>,
        commands: mpsc::UnboundedReceiver<Command>,
    ) -> JoinHandle<()> {
        tokio::spawn(run(self.config, events, commands, None))
    }

    fn start_hosting(
        self: Box<Self>,
        events: mpsc::Sender<Stamped>,
        commands: mpsc::UnboundedReceiver<Command>,
        spawner: Spawner,
    ) -> JoinHandle<()> {
        tokio::spawn(run(self.config, events, commands, Some(spawner)))
    }

    /// Calls that wait are re-sent by the host on the next connection: quitting leaves them
    /// unanswered and unjournaled (reference §5, issue 13 item 5).
    fn keeps_gates_on_quit(&self) -> bool {
        true
    }
}

/// One conversation's workspace session, while it is open.
struct Conv {
    events: mpsc::Sender<Stamped>,
    /// Forwards the session's commands, tagged with the conversation, to the channel's loop.
    forward: JoinHandle<()>,
}

/// The conversations' sessions of one channel, and where their commands meet.
struct Conversations {
    spawner: Option<Spawner>,
    open: HashMap<String, Conv>,
    /// Conversations whose session the owner closed: their rows go to the channel's session.
    closed: std::collections::HashSet<String>,
    commands: mpsc::UnboundedSender<(String, Command)>,
    /// The cards shown in each conversation's session and not answered yet: closing that
    /// session moves them to the channel's, so a call never waits on a card nobody sees.
    cards: HashMap<String, Vec<switchboard_core::gate::Gate>>,
    /// Without a spawner: every conversation in the channel's own tree.
    flat: Nodes,
    patch: SessionPatch,
}

impl Conversations {
    /// The event sender of `conv`'s session, opening the session the first time; `None`
    /// when there is no workspace to open it in (or the owner closed it).
    async fn link(&mut self, conv: &str) -> Option<mpsc::Sender<Stamped>> {
        if let Some(c) = self.open.get(conv) {
            return Some(c.events.clone());
        }
        if self.closed.contains(conv) {
            return None;
        }
        let spawner = self.spawner.as_ref()?;
        let name = format!(
            "conversation {}",
            super::codec::clip(&switchboard_core::text::sanitize(conv))
        );
        let SessionLink {
            events,
            mut commands,
            ..
        } = spawner
            .open(
                &name,
                switchboard_core::BackendKind::Gateway,
                reply_check,
                true,
            )
            .await?;
        ev(
            &events,
            BackendEvent::Started {
                program: format!("remote conversation {}", super::codec::clip(conv)),
                pid: None,
            },
        )
        .await;
        ev(
            &events,
            BackendEvent::Abilities(Abilities::calls_only(format!(
                "Remote conversation {}: the agent's calls on your project wait here as cards (g opens the oldest, y allows, n denies); what each one did shows here. It takes no prompt from here.",
                super::codec::clip(&switchboard_core::text::sanitize(conv))
            ))),
        )
        .await;
        ev(
            &events,
            BackendEvent::Session(SessionPatch {
                session_id: Some(conv.to_string()),
                ..self.patch.clone()
            }),
        )
        .await;
        let tx = self.commands.clone();
        let key = conv.to_string();
        let forward = tokio::spawn(async move {
            while let Some(c) = commands.recv().await {
                if tx.send((key.clone(), c)).is_err() {
                    break;
                }
            }
        });
        self.open.insert(
            conv.to_string(),
            Conv {
                events: events.clone(),
                forward,
            },
        );
        Some(events)
    }

    /// Show one engine output where it belongs.
    async fn show(&mut self, channel: &mpsc::Sender<Stamped>, o: &super::engine::Out) {
        if self.spawner.is_none() {
            for e in self.flat.map(o, now_ms()) {
                ev(channel, e).await;
            }
            return;
        }
        for (target, e) in mapping::route(o, now_ms()) {
            let to = match target {
                Target::Channel => None,
                Target::Conversation(c) => {
                    let link = self.link(&c).await;
                    if let (Some(_), BackendEvent::GateOpen(g)) = (&link, &e) {
                        let cards = self.cards.entry(c).or_default();
                        // Bounded by the engine: at most `IN_FLIGHT` calls wait at once.
                        cards.retain(|k| k.id != g.id);
                        cards.push(switchboard_core::gate::Gate::clone(g));
                    }
                    link
                }
            };
            ev(to.as_ref().unwrap_or(channel), e).await;
        }
    }

    /// A card was answered (from whichever session): it is no longer waiting anywhere.
    fn answered(&mut self, gate_id: &str) {
        for cards in self.cards.values_mut() {
            cards.retain(|g| g.id != gate_id);
        }
    }

    /// The owner closed `conv`'s session: it ends; its waiting cards and what the
    /// conversation does later show in the channel's session.
    async fn close(&mut self, channel: &mpsc::Sender<Stamped>, conv: &str, detail: &str) {
        let cards = self.cards.remove(conv).unwrap_or_default();
        if !cards.is_empty() {
            note(
                channel,
                Level::Info,
                format!(
                    "conversation {} closed: its {} waiting call(s) are answered here",
                    super::codec::clip(conv),
                    cards.len()
                ),
            )
            .await;
        }
        for g in cards {
            ev(channel, BackendEvent::GateOpen(Box::new(g))).await;
        }
        if let Some(c) = self.open.remove(conv) {
            ev(
                &c.events,
                BackendEvent::Exited {
                    code: Some(0),
                    detail: detail.to_string(),
                    stderr_tail: Vec::new(),
                },
            )
            .await;
            c.forward.abort();
        }
        self.closed.insert(conv.to_string());
    }

    /// The channel ends: every conversation's session ends with it.
    async fn close_all(&mut self, detail: &str) {
        self.cards.clear();
        let all: Vec<String> = self.open.keys().cloned().collect();
        for conv in all {
            if let Some(c) = self.open.remove(&conv) {
                ev(
                    &c.events,
                    BackendEvent::Exited {
                        code: Some(0),
                        detail: detail.to_string(),
                        stderr_tail: Vec::new(),
                    },
                )
                .await;
                c.forward.abort();
            }
        }
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

/// Where the bearer token comes from (`--token-file`/`--token-env`, or a profile's
/// `token_file`/`token_env`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenSource {
    File(PathBuf),
    Env(String),
}

impl TokenSource {
    /// Whether the token can be read, without reading it: a file must exist and be private
    /// (a token readable by group or others is refused), a variable must be set.
    pub fn check(&self) -> Result<(), String> {
        match self {
            TokenSource::File(f) => {
                use std::os::unix::fs::PermissionsExt;
                let m = std::fs::metadata(f).map_err(|e| format!("{}: {e}", f.display()))?;
                if !m.is_file() {
                    return Err(format!("{}: not a file", f.display()));
                }
                if m.permissions().mode() & 0o077 != 0 {
                    return Err(format!(
                        "{}: readable by group or others; chmod 600 it",
                        f.display()
                    ));
                }
                Ok(())
            }
            TokenSource::Env(v) => match std::env::var_os(v) {
                Some(s) if !s.is_empty() => Ok(()),
                _ => Err(format!("${v} is not set")),
            },
        }
    }

    /// The token, in its redacting type.
    pub fn read(&self) -> Result<Token, String> {
        self.check()?;
        let raw = match self {
            TokenSource::File(f) => {
                std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?
            }
            TokenSource::Env(v) => {
                // From now on no process we start gets it (`child_env`).
                switchboard_backend::child_env::register_secret(v);
                std::env::var(v).map_err(|_| format!("${v} is not set"))?
            }
        };
        Token::new(raw)
    }
}

#[path = "session_channel.rs"]
mod channel;
use channel::run;
