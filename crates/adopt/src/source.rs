//! The adopted-sessions source: a session of the workspace of its own ("own terminals",
//! where what concerns no one session is shown: what it listens for, sessions adopted,
//! refusals), and one more workspace session per Claude or Codex session whose hook calls.
//!
//! Everything a hostile session could send costs a bounded amount: events are checked
//! before anything is opened (`event`), sessions are capped, each session's queue is
//! bounded, a session id seen again from another directory is refused, and refusals are
//! shown as rows (the first ones each, then counted).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use switchboard_backend::hooks::{HookAgent, HookCall, HookQueue};
use switchboard_backend::link::Link;
use switchboard_backend::{Backend, Spawner};
use switchboard_core::BackendKind;
use switchboard_core::msg::{Abilities, BackendEvent, Command, Stamped};
use switchboard_core::state::ReplyCheck;
use switchboard_core::text::{one_line, sanitize};
use switchboard_core::transcript::{ItemKind, ItemOp, Level};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::event;
use super::mapping::Mapping;
use super::session::{self, Input};
use super::tail::Roots;

/// Sessions adopted at once at most; an event of one more is refused.
pub const MAX_SESSIONS: usize = 64;
/// Refusals shown one by one; past it, their count once a second while it grows.
const REFUSALS_SHOWN: u64 = 20;
/// The first bytes of a refused event kept in the record.
const EXCERPT: usize = 512;

/// The name of the source's own session in the tree.
pub const NAME: &str = "own terminals";

/// How the source runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where transcripts may be read from.
    pub roots: Roots,
    /// Record each adopted session (a file of its own in the recordings directory).
    pub record: bool,
    /// What `hooks status` would say of where hooks are installed, for the intro row.
    pub installed: Vec<String>,
}

pub struct Source {
    queue: HookQueue,
    config: Config,
}

impl Source {
    pub fn new(queue: HookQueue, config: Config) -> Source {
        Source { queue, config }
    }
}

/// Hand-written replies to an adopted card are checked as the Claude control protocol's
/// AllowBody / DenyBody (the decision objects of the hooks are the same shapes); what the
/// CLI would still refuse is caught before sending (`encode::check`).
pub fn reply_check(definition: &str, body: &serde_json::Value) -> Result<(), String> {
    switchboard_claude::session::reply_check(definition, body)
}

impl Backend for Source {
    fn kind(&self) -> BackendKind {
        BackendKind::Adopted
    }
    fn root_name(&self) -> String {
        NAME.into()
    }
    fn reply_check(&self) -> ReplyCheck {
        reply_check
    }
    fn start(
        self: Box<Self>,
        events: mpsc::Sender<Stamped>,
        commands: mpsc::UnboundedReceiver<Command>,
    ) -> JoinHandle<()> {
        // Without a spawner it can adopt nothing: it says so and refuses every event.
        let (spawner, _) = Spawner::channel();
        self.start_hosting(events, commands, spawner)
    }
    fn start_hosting(
        self: Box<Self>,
        events: mpsc::Sender<Stamped>,
        commands: mpsc::UnboundedReceiver<Command>,
        spawner: Spawner,
    ) -> JoinHandle<()> {
        tokio::spawn(run(*self, Link { events }, commands, spawner))
    }
}

/// One adopted session, as the source knows it.
struct Adopted {
    cwd: String,
    name: String,
    inputs: mpsc::Sender<Input>,
    task: JoinHandle<()>,
}

struct Run {
    /// What no session took (refused events), for the record: notes only.
    rec: switchboard_backend::process::SharedRecorder,
    link: Link,
    spawner: Spawner,
    config: Config,
    roots: Arc<Roots>,
    sessions: HashMap<(HookAgent, String), Adopted>,
    refusals: u64,
    /// The count of refusals last told.
    refusals_told: u64,
}

async fn run(
    source: Source,
    link: Link,
    mut commands: mpsc::UnboundedReceiver<Command>,
    spawner: Spawner,
) {
    let Source { mut queue, config } = source;
    let roots = Arc::new(config.roots.clone());
    let rec = link
        .open_recording(
            config
                .record
                .then(|| switchboard_record::paths::new_recording_path("adopted-hooks"))
                .as_deref(),
            BackendKind::Adopted,
            &["hooks".to_string(), "(events no session took)".to_string()],
            std::path::Path::new("/"),
        )
        .await;
    let mut r = Run {
        rec,
        link,
        spawner,
        config,
        roots,
        sessions: HashMap::new(),
        refusals: 0,
        refusals_told: 0,
    };
    r.intro().await;
    let mut dropped_seen = 0u64;
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            call = queue.calls.recv() => match call {
                Some(call) => r.on_call(call).await,
                None => break,
            },
            cmd = commands.recv() => match cmd {
                None | Some(Command::Shutdown) => break,
                Some(Command::Note(_)) => {}
                Some(other) => {
                    let why = other.unsupported().unwrap_or_else(|| {
                        "this session only lists what joined through the hooks".into()
                    });
                    r.link.protocol(Level::Warn, why).await;
                }
            },
            _ = tick.tick() => {
                let dropped = queue.dropped.load(Ordering::Relaxed);
                if dropped > dropped_seen {
                    r.row(
                        Level::Warn,
                        format!(
                            "{} hook events refused: more arrived than could be taken (their \
                             hooks fell through to their own prompts)",
                            dropped - dropped_seen
                        ),
                    )
                    .await;
                    dropped_seen = dropped;
                }
                r.sessions.retain(|_, s| !s.task.is_finished());
                r.count_refusals().await;
            }
        }
    }
    // Each session answers its waiting hooks with nothing as its inputs close.
    let tasks: Vec<JoinHandle<()>> = r.sessions.drain().map(|(_, s)| s.task).collect();
    drop(queue);
    for t in tasks {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(3), t).await;
    }
}

impl Run {
    async fn intro(&self) {
        self.link
            .send(BackendEvent::Started {
                program: "switchboard hooks".into(),
                pid: None,
            })
            .await;
        self.link
            .send(BackendEvent::Turn(switchboard_core::msg::TurnState::Idle))
            .await;
        self.link
            .send(BackendEvent::Abilities(Abilities::calls_only(
                "Claude Code and Codex sessions started in their own terminals join here \
                 through their hooks (`switchboard hooks install`)."
                    .into(),
            )))
            .await;
        let mut text = "listening for hook events from Claude Code and Codex".to_string();
        if self.config.installed.is_empty() {
            text.push_str(": no hooks are installed (`switchboard hooks install`)");
        } else {
            text.push_str(&format!(
                " (hooks in {})",
                sanitize(&self.config.installed.join(", "))
            ));
        }
        self.link.system("hooks", text).await;
    }

    async fn row(&self, level: Level, text: String) {
        self.link
            .send(BackendEvent::Item {
                node: None,
                op: ItemOp::Push(ItemKind::Protocol { level, text }),
            })
            .await;
    }

    /// A refused event: its hook falls through (the call is dropped unanswered). Shown one by
    /// one at first, then counted; recorded the same way, with the event's first bytes.
    async fn refuse_event(&mut self, agent: HookAgent, why: &str, event: &[u8]) {
        if self.refusals < REFUSALS_SHOWN {
            let head = &event[..event.len().min(EXCERPT)];
            switchboard_backend::process::record(
                &self.rec,
                switchboard_record::Dir::Note,
                &format!(
                    "refused a {} hook event ({why}), {} bytes: {}",
                    agent.name(),
                    event.len(),
                    String::from_utf8_lossy(head)
                ),
            );
        }
        self.refuse(agent, why).await;
    }

    /// A refused event, shown one by one at first, then counted.
    async fn refuse(&mut self, agent: HookAgent, why: &str) {
        self.refusals += 1;
        let n = self.refusals;
        if n <= REFUSALS_SHOWN {
            self.row(
                Level::Warn,
                format!(
                    "refused a {} hook event: {} (its hook fell through to its own prompt)",
                    agent.title(),
                    sanitize(&one_line(why, 200))
                ),
            )
            .await;
        }
    }

    /// Past the ones listed, the count of refusals, once a second when it grew.
    async fn count_refusals(&mut self) {
        if self.refusals > REFUSALS_SHOWN && self.refusals != self.refusals_told {
            self.refusals_told = self.refusals;
            self.row(
                Level::Warn,
                format!(
                    "{} hook events refused so far (the first {REFUSALS_SHOWN} are listed)",
                    self.refusals
                ),
            )
            .await;
        }
    }

    async fn on_call(&mut self, call: HookCall) {
        let agent = call.agent;
        if let Some(size) = call.oversize {
            return self
                .refuse(agent, &format!("{size} bytes, more than an event may hold"))
                .await;
        }
        let ev = match event::parse(&call.event) {
            Ok(ev) => ev,
            Err(why) => return self.refuse_event(agent, &why, &call.event).await,
        };
        let text = String::from_utf8_lossy(&call.event).into_owned();
        let key = (agent, ev.session_id.clone());
        if let Some(s) = self.sessions.get(&key)
            && s.task.is_finished()
        {
            self.sessions.remove(&key);
        }
        if let Some(s) = self.sessions.get(&key) {
            if s.cwd != ev.cwd {
                let why = format!("session {} is in {}, not {}", ev.session_id, s.cwd, ev.cwd);
                return self.refuse_event(agent, &why, &call.event).await;
            }
            let name = s.name.clone();
            if let Err(e) = s.inputs.try_send(Input {
                event: ev,
                text,
                call,
            }) {
                let why = match e {
                    mpsc::error::TrySendError::Full(_) => format!("session {name} is flooded"),
                    mpsc::error::TrySendError::Closed(_) => format!("session {name} is closed"),
                };
                self.refuse(agent, &why).await;
            }
            return;
        }
        // Sessions that ended (their tasks are over) hold no place.
        self.sessions.retain(|_, s| !s.task.is_finished());
        if self.sessions.len() >= MAX_SESSIONS {
            return self
                .refuse(
                    agent,
                    &format!("{MAX_SESSIONS} sessions are adopted already"),
                )
                .await;
        }
        let name = self.name_for(&ev.cwd);
        let Some(link) = self
            .spawner
            .open(&name, BackendKind::Adopted, reply_check, false)
            .await
        else {
            return self.refuse(agent, "the workspace is closing").await;
        };
        self.link
            .system(
                "adopted",
                // The name first: what a reader (and a test) looks for stays on one row.
                format!(
                    "{name} joined: {} session {} in {}",
                    agent.title(),
                    sanitize(&ev.session_id),
                    sanitize(&ev.cwd),
                ),
            )
            .await;
        let recording: Option<PathBuf> = self.config.record.then(|| {
            switchboard_record::paths::new_recording_path(&format!("adopted-{}", agent.name()))
        });
        let (tx, rx) = mpsc::channel(session::QUEUE);
        let setup = session::Setup {
            mapping: Mapping::new(agent, &ev.session_id, &ev.cwd),
            link,
            recording,
            roots: self.roots.clone(),
        };
        let task = tokio::spawn(session::run(setup, rx));
        let _ = tx.try_send(Input {
            event: ev.clone(),
            text,
            call,
        });
        self.sessions.insert(
            key,
            Adopted {
                cwd: ev.cwd,
                name,
                inputs: tx,
                task,
            },
        );
    }

    /// The tree name of a new session: its project's (the cwd's last part), made unique.
    fn name_for(&self, cwd: &str) -> String {
        let project = cwd.rsplit('/').find(|p| !p.is_empty()).unwrap_or("/");
        let base = sanitize(&one_line(project, 32));
        let taken = |n: &str| self.sessions.values().any(|s| s.name == n);
        if !taken(&base) {
            return base;
        }
        (2..)
            .map(|i| format!("{base} {i}"))
            .find(|n| !taken(n))
            .unwrap_or(base)
    }
}
