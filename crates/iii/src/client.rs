//! The worker protocol (reference §2.2–§2.4, §8) as one task per engine connection.
//!
//! Order on every (re)connect: `reattach` to the previous connection (on a reconnect); wait for
//! `workerregistered`; call `engine::workers::register`; `registerfunction` for every handler;
//! `registertrigger` for every binding; a `ping`; wait until the engine has applied them (the
//! register result and the pong, or every `triggerregistrationresult` from an engine that
//! acknowledges successes too); only then report `Live` and send the calls that waited.
//!
//! Calls carry a fresh UUID `invocation_id`; the waiter is found by it, a per-call timeout
//! removes it, a late result is reported and dropped. When the socket drops, calls §7 marks
//! safe wait for the next `Live` and are sent again; the others fail `Disconnected` (they may
//! or may not have run). Pushed events are queued to the consumer without waiting and then
//! acknowledged at once with `invocationresult {result: {}}`: the reader never waits for the UI.
//! We ping every `ping_every`; two pings without a pong mean a dead socket.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::codec::{self, ErrorBody};
use super::transport::{self, Backoff, Header};
use switchboard_backend::process::{SharedRecorder, record};
use switchboard_record::Dir;

/// Consumer queue: bounded, so a flood of engine events cannot grow memory.
pub const EVENT_QUEUE: usize = switchboard_backend::EVENT_CHANNEL;
/// Default per-call timeout (reference §2.3), and a shorter one for reads the UI waits on.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Calls waiting for a result or for the connection, at most.
pub const MAX_PENDING: usize = 1024;

/// One trigger binding: the engine invokes our handler for every event of `trigger_type`
/// that passes `config`.
#[derive(Debug, Clone, PartialEq)]
pub struct Subscription {
    pub trigger_type: String,
    pub config: Value,
}

impl Subscription {
    pub fn all(trigger_type: &str) -> Subscription {
        Subscription {
            trigger_type: trigger_type.into(),
            config: json!({}),
        }
    }
}

/// The events a supervisor binds (reference §3.8, §4.3, §5), unfiltered.
pub fn default_subscriptions() -> Vec<Subscription> {
    [
        // Both approval-gate generations (kebab- and snake_case): a binding of a type no
        // worker provides is parked, harmless, and placed when a gate of that generation
        // comes; discovery checks the live generation's is placed.
        "approval::pending-created",
        "approval::pending-resolved",
        "approval::pending_created",
        "approval::pending_resolved",
        // Workers joining and leaving, and the harness booting: discovery runs again.
        "engine::workers-available",
        "harness::ready",
        "session::created",
        "session::message-added",
        "session::message-updated",
        "session::status-changed",
        "session::meta-updated",
        "session::deleted",
        "harness::turn-started",
        "harness::turn-completed",
        "harness::message-queued",
    ]
    .into_iter()
    .map(Subscription::all)
    .collect()
}

#[derive(Debug, Clone)]
pub struct Options {
    pub subscriptions: Vec<Subscription>,
    /// Our ping period (reference §2.2: about 15 s).
    pub ping_every: Duration,
    /// How long `workerregistered` and the binding acknowledgements may take.
    pub handshake_timeout: Duration,
    pub backoff_first: Duration,
    pub backoff_cap: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            subscriptions: default_subscriptions(),
            ping_every: Duration::from_secs(15),
            handshake_timeout: Duration::from_secs(10),
            backoff_first: transport::BACKOFF_FIRST,
            backoff_cap: transport::BACKOFF_CAP,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ConnState {
    Connecting,
    /// Registered, every binding answered: events flow and calls are sent.
    Live {
        worker_id: String,
        /// The prefix of our handler ids (`switchboard::<instance>::`): discovery looks for
        /// our bindings by it.
        handlers: String,
    },
    Reconnecting {
        attempt: u32,
        in_ms: u64,
        why: String,
    },
    /// Gave up (refused URL, fatal rejection) or closed by us.
    Closed {
        why: String,
    },
}

/// An event the engine pushed to one of our handlers.
#[derive(Debug, Clone, PartialEq)]
pub struct PushedEvent {
    pub trigger_type: String,
    pub data: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ClientEvent {
    State(ConnState),
    Event(PushedEvent),
    /// A frame of a type this build does not know, kept whole for the protocol log.
    Unknown(Value),
    /// The consumer queue was full and this many events were refused: re-read state.
    EventsDropped(u64),
    /// Something to show in the protocol log: a malformed frame, a refused binding, a late
    /// result. Engine text: neutralize before printing.
    Warning(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// No result within the call's timeout (the engine's code for it is `TIMEOUT`).
    Timeout,
    /// The socket dropped after the call was sent; it may or may not have run, and §7 does
    /// not allow sending it again.
    Disconnected,
    /// The engine or the handler answered with an error.
    Remote(ErrorBody),
    /// The client is closed, or too many calls are waiting.
    Closed(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Timeout => f.write_str("TIMEOUT: no result in time"),
            CallError::Disconnected => {
                f.write_str("disconnected: the engine connection dropped during the call")
            }
            CallError::Remote(e) => write!(f, "{e}"),
            CallError::Closed(why) => write!(f, "closed: {why}"),
        }
    }
}

enum Cmd {
    Call {
        id: String,
        function_id: String,
        data: Value,
        reply: oneshot::Sender<Result<Value, CallError>>,
    },
    Forget(String),
    Close,
}

/// A handle on the connection task; clones share it. Dropping every clone closes it.
#[derive(Clone)]
pub struct Client {
    cmds: mpsc::Sender<Cmd>,
}

impl Client {
    /// Connect with the default subscriptions and timings.
    pub fn connect(
        url: &str,
        headers: Vec<Header>,
        recorder: SharedRecorder,
    ) -> Result<(Client, mpsc::Receiver<ClientEvent>), String> {
        Client::connect_with(url, headers, recorder, Options::default())
    }

    /// Start the connection task. Fails at once only for a URL that will never work.
    pub fn connect_with(
        url: &str,
        headers: Vec<Header>,
        recorder: SharedRecorder,
        options: Options,
    ) -> Result<(Client, mpsc::Receiver<ClientEvent>), String> {
        transport::check_url(url)?;
        let (cmd_tx, cmd_rx) = mpsc::channel(MAX_PENDING);
        let (ev_tx, ev_rx) = mpsc::channel(EVENT_QUEUE);
        let names: Vec<String> = headers.iter().map(|h| format!("{h:?}")).collect();
        record(
            &recorder,
            Dir::Note,
            &format!("iii engine {url}; headers: [{}]", names.join(", ")),
        );
        let task = Task {
            url: url.to_string(),
            headers,
            rec: recorder,
            opts: options,
            events: ev_tx,
            cmds: cmd_rx,
            pending: HashMap::new(),
            dropped: 0,
            instance: short_id(),
            name: worker_name(),
            previous: None,
        };
        tokio::spawn(task.run());
        Ok((Client { cmds: cmd_tx }, ev_rx))
    }

    /// Call `function_id` with `data`; the result, the engine's error, or `Timeout` after
    /// `timeout` (then the waiter is removed and a late result is dropped).
    pub async fn call(
        &self,
        function_id: &str,
        data: Value,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = oneshot::channel();
        self.cmds
            .send(Cmd::Call {
                id: id.clone(),
                function_id: function_id.to_string(),
                data,
                reply: tx,
            })
            .await
            .map_err(|_| CallError::Closed("the engine client has stopped".into()))?;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(CallError::Closed("the engine client has stopped".into())),
            Err(_) => {
                let _ = self.cmds.send(Cmd::Forget(id)).await;
                Err(CallError::Timeout)
            }
        }
    }

    /// Close the socket and stop; waiting calls fail `Closed`. Held calls on the engine stay
    /// held: closing answers nothing.
    pub async fn close(&self) {
        let _ = self.cmds.send(Cmd::Close).await;
    }
}

/// Our name in `engine::workers::register`. The engine leases one live worker per name and
/// namespace and refuses a second fatally (`WORKER_NAMESPACE_CONFLICT`, `claim_worker_name` in
/// iii v0.23.0-rc.4): a fixed "switchboard" would let only one switchboard watch an engine. Like
/// the SDKs' `hostname:pid`, plus the client's number within the process: unique per client,
/// stable across its reconnects.
fn worker_name() -> String {
    static CLIENTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = CLIENTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("switchboard:{}:{}:{n}", hostname(), std::process::id())
}

#[cfg(unix)]
fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match std::str::from_utf8(&buf[..end]) {
        Ok(h) if rc == 0 && !h.is_empty() => h.chars().take(64).collect(),
        _ => "localhost".into(),
    }
}

#[cfg(not(unix))]
fn hostname() -> String {
    std::env::var("COMPUTERNAME").unwrap_or_else(|_| "localhost".into())
}

fn short_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

struct Pending {
    function_id: String,
    data: Value,
    reply: oneshot::Sender<Result<Value, CallError>>,
    /// Sent on the current socket (else it waits for `Live`).
    sent: bool,
}

/// How one socket's life ended.
enum Ended {
    /// Reconnect after a backoff.
    Lost(String),
    /// Stop for good.
    Stop(String),
}

/// A handler and its binding on the current socket.
struct Binding {
    trigger_type: String,
    config: Value,
    handler: String,
    binding_id: String,
}

struct Task {
    url: String,
    headers: Vec<Header>,
    rec: SharedRecorder,
    opts: Options,
    events: mpsc::Sender<ClientEvent>,
    cmds: mpsc::Receiver<Cmd>,
    pending: HashMap<String, Pending>,
    dropped: u64,
    /// Suffix of our handler ids, one per process (§2.4); renewed on a namespace conflict.
    instance: String,
    /// Our worker name (`worker_name`).
    name: String,
    /// The worker id and reattach token of our last connection, for `reattach`.
    previous: Option<(String, Option<String>)>,
}

impl Task {
    async fn run(mut self) {
        let mut backoff = Backoff::new(self.opts.backoff_first, self.opts.backoff_cap);
        self.state(ConnState::Connecting).await;
        loop {
            let ended = match transport::connect(&self.url, &self.headers).await {
                // One row, no retry loop: the same headers would be refused again.
                Err(e) if e.starts_with(transport::REFUSED) => Ended::Stop(e),
                Err(e) => Ended::Lost(e),
                Ok(ws) => {
                    record(&self.rec, Dir::Note, "connected");
                    self.serve(ws, &mut backoff).await
                }
            };
            let why = match ended {
                Ended::Stop(why) => {
                    self.fail_all(|| CallError::Closed("the engine client has stopped".into()));
                    record(&self.rec, Dir::Note, &format!("closed: {why}"));
                    self.state(ConnState::Closed { why }).await;
                    return;
                }
                Ended::Lost(why) => why,
            };
            record(&self.rec, Dir::Note, &format!("connection lost: {why}"));
            self.after_loss();
            let (attempt, wait) = backoff.next_wait();
            self.state(ConnState::Reconnecting {
                attempt,
                in_ms: wait.as_millis() as u64,
                why,
            })
            .await;
            let deadline = tokio::time::sleep(wait);
            tokio::pin!(deadline);
            loop {
                tokio::select! {
                    _ = &mut deadline => break,
                    c = self.cmds.recv() => if self.offline_cmd(c).is_break() {
                        self.fail_all(|| CallError::Closed("the engine client has stopped".into()));
                        self.state(ConnState::Closed { why: "closed".into() }).await;
                        return;
                    },
                }
            }
        }
    }

    /// A lost socket: calls §7 allows wait to be sent again; the others fail `Disconnected`.
    fn after_loss(&mut self) {
        let ids: Vec<String> = self.pending.keys().cloned().collect();
        for id in ids {
            let Some(p) = self.pending.get_mut(&id) else {
                continue;
            };
            if !p.sent {
                continue;
            }
            if transport::retry_safe(&p.function_id, &p.data) {
                p.sent = false;
                record(
                    &self.rec,
                    Dir::Note,
                    &format!("{} {id} will be sent again (safe to retry)", p.function_id),
                );
            } else if let Some(p) = self.pending.remove(&id) {
                record(
                    &self.rec,
                    Dir::Note,
                    &format!(
                        "{} {id} failed: disconnected (not safe to retry)",
                        p.function_id
                    ),
                );
                let _ = p.reply.send(Err(CallError::Disconnected));
            }
        }
    }

    fn fail_all(&mut self, err: impl Fn() -> CallError) {
        for (_, p) in self.pending.drain() {
            let _ = p.reply.send(Err(err()));
        }
    }

    /// A command while no socket is usable: queue calls, drop forgotten ones.
    fn offline_cmd(&mut self, c: Option<Cmd>) -> std::ops::ControlFlow<()> {
        match c {
            None | Some(Cmd::Close) => return std::ops::ControlFlow::Break(()),
            Some(Cmd::Call {
                id,
                function_id,
                data,
                reply,
            }) => self.queue(id, function_id, data, reply),
            Some(Cmd::Forget(id)) => {
                self.pending.remove(&id);
            }
        }
        std::ops::ControlFlow::Continue(())
    }

    fn queue(
        &mut self,
        id: String,
        function_id: String,
        data: Value,
        reply: oneshot::Sender<Result<Value, CallError>>,
    ) {
        // Waiters whose caller went away (a cancelled future) need no result.
        if self.pending.len() >= MAX_PENDING / 2 {
            self.pending.retain(|_, p| !p.reply.is_closed());
        }
        if self.pending.len() >= MAX_PENDING {
            let _ = reply.send(Err(CallError::Closed(format!(
                "{MAX_PENDING} calls are already waiting"
            ))));
            return;
        }
        self.pending.insert(
            id,
            Pending {
                function_id,
                data,
                reply,
                sent: false,
            },
        );
    }

    async fn state(&mut self, s: ConnState) {
        record(&self.rec, Dir::Note, &format!("state: {s:?}"));
        // State changes are rare and must arrive: wait for room (never while reading frames
        // that need an ack: see `push_event`).
        let _ = self.events.send(ClientEvent::State(s)).await;
    }

    /// Best effort, never waits: the reader must not block on the consumer.
    fn tell(&mut self, e: ClientEvent) {
        let _ = self.events.try_send(e);
    }
}

#[path = "client_frames.rs"]
mod frames;
#[path = "client_socket.rs"]
mod socket;
