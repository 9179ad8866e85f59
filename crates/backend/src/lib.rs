//! What every backend shares: the `Backend` trait the app drives (one backend per protocol,
//! each turning wire frames into domain events and domain commands into wire frames; each is
//! its own crate), the spawner that opens workspace sessions, child processes with a declared
//! environment, the session link that records every line, reconnect backoff, and containment
//! of agent-supplied paths beneath a directory handle.

pub mod backoff;
pub mod cgroup;
pub mod child_env;
pub mod contain;
pub mod hooks;
pub mod link;
pub mod process;
pub mod watchdog;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use switchboard_core::msg::Command;
use switchboard_core::msg::Stamped;
use switchboard_core::state::ReplyCheck;

/// Capacity of the backend → UI channel: bounded so a flood cannot grow memory unchecked.
pub const EVENT_CHANNEL: usize = 4096;

pub trait Backend: Send + 'static {
    /// Short protocol name for the footer and the recording header.
    fn kind(&self) -> switchboard_core::BackendKind;
    /// Name of the root node in the tree.
    fn root_name(&self) -> String;
    /// How hand-written replies are checked against this protocol's schema.
    fn reply_check(&self) -> ReplyCheck;
    /// Run the backend until `Command::Shutdown` (or the command channel closes) and the agent
    /// is gone. Every event is sent as a `Stamped`.
    fn start(
        self: Box<Self>,
        events: mpsc::Sender<Stamped>,
        commands: mpsc::UnboundedReceiver<Command>,
    ) -> JoinHandle<()>;
    /// Like `start`, for a source that opens more sessions of the workspace at run time (an
    /// iii engine's root sessions, a gateway channel's conversations) through `spawner`.
    /// One-session backends ignore it.
    fn start_hosting(
        self: Box<Self>,
        events: mpsc::Sender<Stamped>,
        commands: mpsc::UnboundedReceiver<Command>,
        _spawner: Spawner,
    ) -> JoinHandle<()> {
        self.start(events, commands)
    }
    /// Whether quitting leaves this backend's gates pending where they live (durable holds on
    /// an engine, calls a peer re-sends) instead of answering them fail-closed.
    fn keeps_gates_on_quit(&self) -> bool {
        false
    }
}

/// Opens sessions of the workspace at run time, for a source that hosts several. Each opened
/// session has its own bounded event channel and command channel, like a source's own.
#[derive(Clone, Debug)]
pub struct Spawner {
    tx: mpsc::UnboundedSender<SpawnRequest>,
}

/// A request to open a session: its tree name, backend and reply check.
#[derive(Debug)]
pub struct SpawnRequest {
    pub name: String,
    pub backend: switchboard_core::BackendKind,
    pub reply_check: ReplyCheck,
    /// Quitting leaves this session's gates pending where they live.
    pub keeps_gates_on_quit: bool,
    pub reply: tokio::sync::oneshot::Sender<SessionLink>,
}

/// An opened session's channels, for the source that asked for it.
#[derive(Debug)]
pub struct SessionLink {
    pub session: switchboard_core::state::SessionId,
    pub events: mpsc::Sender<Stamped>,
    pub commands: mpsc::UnboundedReceiver<Command>,
}

impl Spawner {
    /// A spawner and the receiver the app reads its requests from.
    pub fn channel() -> (Spawner, mpsc::UnboundedReceiver<SpawnRequest>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Spawner { tx }, rx)
    }

    /// Open a session named `name`; `None` once the workspace is gone.
    pub async fn open(
        &self,
        name: &str,
        backend: switchboard_core::BackendKind,
        reply_check: ReplyCheck,
        keeps_gates_on_quit: bool,
    ) -> Option<SessionLink> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.tx
            .send(SpawnRequest {
                name: name.to_string(),
                backend,
                reply_check,
                keeps_gates_on_quit,
                reply,
            })
            .ok()?;
        rx.await.ok()
    }
}
