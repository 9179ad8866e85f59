//! What the host hands the adopted-sessions source for each hook event a CLI's hook sent
//! (`switchboard hook claude|codex` on the host's socket): the event's bytes exactly as the
//! CLI wrote them, and the way back to the waiting hook process. The host's connection task
//! makes one per connection; the source (crates/adopt) answers it.
//!
//! One call gets at most one final reply (`Decision` or `Pass`). Dropping the sender without
//! one is a `Pass` too: the hook prints nothing and the CLI shows its own prompt. The source
//! learns that the hook process went away (the CLI's timeout killed it, the person answered
//! in the terminal and the CLI stopped waiting) from `HookReplies::gone`.

use tokio::sync::mpsc;

/// The CLI whose hook sent an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookAgent {
    Claude,
    Codex,
}

impl HookAgent {
    pub const ALL: [HookAgent; 2] = [HookAgent::Claude, HookAgent::Codex];

    /// The word of the command line (`switchboard hook claude`) and of the recording.
    pub const fn name(self) -> &'static str {
        match self {
            HookAgent::Claude => "claude",
            HookAgent::Codex => "codex",
        }
    }

    pub fn from_name(name: &str) -> Option<HookAgent> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// How people call the program ("Claude Code", "Codex").
    pub const fn title(self) -> &'static str {
        match self {
            HookAgent::Claude => "Claude Code",
            HookAgent::Codex => "Codex",
        }
    }
}

/// The largest hook event the host reads: bigger ones are refused (the hook falls through)
/// and the refusal is shown.
pub const MAX_EVENT: usize = 4 << 20;

/// What goes back to the hook process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookReply {
    /// The card is up: keep waiting (a hook that hears nothing within its deadline falls
    /// through to the CLI's own prompt).
    Accepted,
    /// Print exactly this on stdout and exit 0.
    Decision(String),
    /// Print nothing and exit 0: the CLI's own prompt decides. Why, for the log.
    Pass(String),
}

/// One hook event, as the host received it.
#[derive(Debug)]
pub struct HookCall {
    pub agent: HookAgent,
    /// The event's bytes (`MAX_EVENT` at most); empty when `oversize` is set.
    pub event: Vec<u8>,
    /// The hook waits for a decision (a PermissionRequest); other events are told nothing.
    pub waits: bool,
    /// The event was this many bytes, too many to read: refused, never parsed.
    pub oversize: Option<u64>,
    /// When the host read it (Unix ms).
    pub at_ms: u64,
    pub replies: HookReplies,
}

/// The way back to one waiting hook process.
#[derive(Debug)]
pub struct HookReplies {
    tx: Option<mpsc::Sender<HookReply>>,
    /// Closed (its sender dropped) when the connection to the hook ends.
    gone: Option<tokio::sync::oneshot::Receiver<()>>,
}

/// The connection's side of a `HookReplies`: the replies to write, and a guard whose drop
/// (the connection ending, whatever the reason) tells the source the hook is gone.
#[derive(Debug)]
pub struct HookLine {
    pub replies: mpsc::Receiver<HookReply>,
    pub alive: tokio::sync::oneshot::Sender<()>,
}

impl HookReplies {
    /// A reply channel and the end the connection task holds.
    pub fn channel() -> (HookReplies, HookLine) {
        // Accepted, then the final reply: never more.
        let (tx, replies) = mpsc::channel(2);
        let (alive, gone) = tokio::sync::oneshot::channel();
        (
            HookReplies {
                tx: Some(tx),
                gone: Some(gone),
            },
            HookLine { replies, alive },
        )
    }

    /// Tell the hook the card is up.
    pub fn accepted(&self) {
        if let Some(tx) = &self.tx {
            let _ = tx.try_send(HookReply::Accepted);
        }
    }

    /// The one final reply; later ones are impossible (the sender is gone).
    pub fn finish(&mut self, reply: HookReply) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.try_send(reply);
        }
    }

    /// A future that resolves once the hook's connection has ended (answered, or the hook
    /// went away first); taken once. It holds nothing that keeps the connection open.
    pub fn on_gone(&mut self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let gone = self.gone.take();
        async move {
            match gone {
                Some(g) => {
                    let _ = g.await;
                }
                None => std::future::pending::<()>().await,
            }
        }
    }
}

/// Hook events waiting for the adopted-sessions source at most: past it the host refuses
/// new ones (their hooks fall through) and counts them, so a flood costs nothing else.
pub const QUEUE: usize = 1024;

/// Where the host puts hook events: the adopted-sessions source's bounded queue.
#[derive(Clone, Debug)]
pub struct HookSink {
    tx: mpsc::Sender<HookCall>,
    dropped: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// The source's end of the queue, and the count of events the host had to refuse.
#[derive(Debug)]
pub struct HookQueue {
    pub calls: mpsc::Receiver<HookCall>,
    pub dropped: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl HookSink {
    pub fn channel() -> (HookSink, HookQueue) {
        let (tx, calls) = mpsc::channel(QUEUE);
        let dropped = std::sync::Arc::default();
        (
            HookSink {
                tx,
                dropped: std::sync::Arc::clone(&dropped),
            },
            HookQueue { calls, dropped },
        )
    }

    /// Queue `call`, never waiting: a full queue (or a source that is gone) refuses it and
    /// its hook falls through. False when refused.
    pub fn offer(&self, call: HookCall) -> bool {
        match self.tx.try_send(call) {
            Ok(()) => true,
            Err(_) => {
                self.dropped
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                false
            }
        }
    }

    /// The source stopped reading.
    pub fn closed(&self) -> bool {
        self.tx.is_closed()
    }
}
