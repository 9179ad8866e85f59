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

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message as WsMessage;

use super::codec::{
    self, ErrorBody, FUNCTION_NAMESPACE_CONFLICT, Message, WORKER_NAMESPACE_CONFLICT,
};
use super::transport::{self, Backoff, Header, Ws};
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

    async fn send(&self, ws: &mut Ws, msg: &Message) -> Result<(), String> {
        let text = codec::encode(msg).map_err(|e| e.to_string())?;
        record(&self.rec, Dir::Out, &text);
        ws.send(WsMessage::text(text))
            .await
            .map_err(|e| format!("cannot send to the engine: {e}"))
    }

    fn bindings(&self) -> Vec<Binding> {
        self.opts
            .subscriptions
            .iter()
            .enumerate()
            .map(|(i, s)| self.binding(i, s))
            .collect()
    }

    fn binding(&self, i: usize, s: &Subscription) -> Binding {
        let name = s.trigger_type.replace("::", "-");
        Binding {
            trigger_type: s.trigger_type.clone(),
            config: s.config.clone(),
            handler: format!("switchboard::{}::on-{name}", self.instance),
            binding_id: format!("{}-{i}", self.instance),
        }
    }

    async fn register_binding(&self, ws: &mut Ws, b: &Binding) -> Result<(), String> {
        self.send(
            ws,
            &Message::RegisterFunction {
                id: b.handler.clone(),
                description: Some(format!("switchboard: {} events", b.trigger_type)),
                request_format: None,
                response_format: None,
                metadata: None,
                invocation: None,
            },
        )
        .await?;
        self.send(
            ws,
            &Message::RegisterTrigger {
                id: b.binding_id.clone(),
                trigger_type: b.trigger_type.clone(),
                function_id: b.handler.clone(),
                config: b.config.clone(),
                metadata: None,
                namespace: None,
                trigger_namespace: None,
            },
        )
        .await
    }

    /// One socket: handshake, bindings, then steady state until it ends.
    async fn serve(&mut self, mut ws: Ws, backoff: &mut Backoff) -> Ended {
        let handshake = tokio::time::Instant::now() + self.opts.handshake_timeout;
        // 0. A reconnect first retires our previous connection (the engine checks the token it
        // gave us there). Without it, an engine that has not yet noticed that connection die
        // still holds our worker name and refuses this one fatally
        // (`WORKER_NAMESPACE_CONFLICT`), and still holds our handler ids.
        if let Some((previous_worker_id, reattach_token)) = self.previous.clone()
            && let Err(e) = self
                .send(
                    &mut ws,
                    &Message::Reattach {
                        previous_worker_id,
                        reattach_token,
                    },
                )
                .await
        {
            return Ended::Lost(e);
        }
        // 1. workerregistered.
        let worker_id = loop {
            let frame = tokio::select! {
                _ = tokio::time::sleep_until(handshake) => return Ended::Lost("no workerregistered from the engine in time".into()),
                c = self.cmds.recv() => { if self.offline_cmd(c).is_break() { let _ = ws.close(None).await; return Ended::Stop("closed".into()); } continue; }
                f = ws.next() => f,
            };
            match self.read(frame) {
                Err(e) => return Ended::Lost(e),
                Ok(None) => continue,
                Ok(Some(Message::WorkerRegistered {
                    worker_id,
                    reattach_token,
                })) => {
                    self.previous = Some((worker_id.clone(), reattach_token));
                    break worker_id;
                }
                Ok(Some(Message::Error { error })) => {
                    // Refused before we were registered: should our reattach be the reason (an
                    // engine restarted since knows neither the worker id nor its token), the
                    // next attempt connects fresh instead of being refused the same way for ever.
                    self.previous = None;
                    return self.refused(error);
                }
                Ok(Some(Message::Ping)) => {
                    if let Err(e) = self.send(&mut ws, &Message::Pong).await {
                        return Ended::Lost(e);
                    }
                }
                Ok(Some(m)) => self.unexpected(&m),
            }
        };
        // 2. engine::workers::register, first of all.
        let register_id = uuid::Uuid::new_v4().to_string();
        let meta = json!({
            "name": self.name,
            "runtime": "rust",
            "version": env!("CARGO_PKG_VERSION"),
            "os": std::env::consts::OS,
            "pid": std::process::id(),
        });
        if let Err(e) = self
            .send(
                &mut ws,
                &Message::invoke(&register_id, "engine::workers::register", meta),
            )
            .await
        {
            return Ended::Lost(e);
        }
        // 3. handlers and bindings, then a ping as a barrier.
        let mut bindings = self.bindings();
        for b in &bindings {
            if let Err(e) = self.register_binding(&mut ws, b).await {
                return Ended::Lost(e);
            }
        }
        if let Err(e) = self.send(&mut ws, &Message::Ping).await {
            return Ended::Lost(e);
        }
        // 4. wait until the engine has applied every registration (events may already flow:
        // they are served). The real engine (iii v0.23.0-rc.4, `engine/src/engine/mod.rs`
        // `RegisterTrigger`) answers a binding with `triggerregistrationresult` only when it
        // fails; success, or a binding parked until a worker provides its trigger type, is
        // silent. So "applied" is: our `engine::workers::register` has its result (the engine
        // holds registrations that arrive before the namespace is known and applies them
        // before that result) and our barrier ping has its pong (the engine handles one
        // connection's frames in order, so every registration sent before the ping has been
        // applied, a refusal already sent). An engine that acknowledges every binding (older
        // engines, our fake) is applied once they all are.
        let mut unacked: HashSet<String> = bindings.iter().map(|b| b.binding_id.clone()).collect();
        let mut registered = false;
        // Barrier pings sent and pongs seen: pongs come in order, so the last ping's pong is
        // the `pings`-th one.
        let mut pings = 1u32;
        let mut pongs = 0u32;
        let mut renewals = 0u32;
        while !(registered && (pongs >= pings || unacked.is_empty())) {
            let frame = tokio::select! {
                _ = tokio::time::sleep_until(handshake) => return Ended::Lost(if registered {
                    format!("{} trigger bindings not confirmed in time", unacked.len())
                } else {
                    "no result for engine::workers::register in time".into()
                }),
                c = self.cmds.recv() => { if self.offline_cmd(c).is_break() { let _ = ws.close(None).await; return Ended::Stop("closed".into()); } continue; }
                f = ws.next() => f,
            };
            let msg = match self.read(frame) {
                Err(e) => return Ended::Lost(e),
                Ok(None) => continue,
                Ok(Some(m)) => m,
            };
            match msg {
                Message::Pong => pongs += 1,
                Message::InvocationResult {
                    ref invocation_id, ..
                } if *invocation_id == register_id => {
                    registered = true;
                    if let Some(end) = self.on_frame(&mut ws, msg, &bindings, &register_id).await {
                        return end;
                    }
                }
                Message::TriggerRegistrationResult {
                    id,
                    error,
                    trigger_type,
                    ..
                } => {
                    if unacked.remove(&id)
                        && let Some(err) = error
                    {
                        self.tell(ClientEvent::Warning(format!(
                            "the engine refused the {trigger_type} binding: {err}"
                        )));
                    }
                }
                Message::RegistrationRejected {
                    code, function_id, ..
                } if code == FUNCTION_NAMESPACE_CONFLICT => {
                    // The old connection still holds the id: take a new suffix, register again.
                    renewals += 1;
                    if renewals > 3 {
                        return Ended::Lost("handler ids keep conflicting".into());
                    }
                    self.instance = short_id();
                    self.tell(ClientEvent::Warning(format!(
                        "handler {} conflicts with a live registration; registering as switchboard::{}",
                        function_id.unwrap_or_default(),
                        self.instance
                    )));
                    // Withdraw the old ids, so no event arrives twice through them.
                    for b in &bindings {
                        let withdraw = [
                            Message::UnregisterTrigger {
                                id: b.binding_id.clone(),
                                trigger_type: Some(b.trigger_type.clone()),
                            },
                            Message::UnregisterFunction {
                                id: b.handler.clone(),
                            },
                        ];
                        for m in &withdraw {
                            if let Err(e) = self.send(&mut ws, m).await {
                                return Ended::Lost(e);
                            }
                        }
                    }
                    bindings = self.bindings();
                    for b in &bindings {
                        if let Err(e) = self.register_binding(&mut ws, b).await {
                            return Ended::Lost(e);
                        }
                    }
                    unacked = bindings.iter().map(|b| b.binding_id.clone()).collect();
                    // A new barrier for the new registrations.
                    pings += 1;
                    if let Err(e) = self.send(&mut ws, &Message::Ping).await {
                        return Ended::Lost(e);
                    }
                }
                m => {
                    if let Some(end) = self.on_frame(&mut ws, m, &bindings, &register_id).await {
                        return end;
                    }
                }
            }
        }
        // 5. live: send what waited.
        backoff.reset();
        self.state(ConnState::Live {
            worker_id: worker_id.clone(),
            handlers: format!("switchboard::{}::", self.instance),
        })
        .await;
        let waiting: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, p)| !p.sent)
            .map(|(id, _)| id.clone())
            .collect();
        for id in waiting {
            if let Err(e) = self.send_call(&mut ws, &id).await {
                return Ended::Lost(e);
            }
        }
        // 6. steady state.
        let mut ping = tokio::time::interval_at(
            tokio::time::Instant::now() + self.opts.ping_every,
            self.opts.ping_every,
        );
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut unanswered = 0u32;
        loop {
            tokio::select! {
                _ = ping.tick() => {
                    // Refused events are reported even if no further event comes.
                    if self.dropped > 0 && self.events.try_send(ClientEvent::EventsDropped(self.dropped)).is_ok() {
                        self.dropped = 0;
                    }
                    if unanswered >= 2 {
                        return Ended::Lost("two pings without a pong: the socket is dead".into());
                    }
                    unanswered += 1;
                    if let Err(e) = self.send(&mut ws, &Message::Ping).await {
                        return Ended::Lost(e);
                    }
                }
                c = self.cmds.recv() => match c {
                    None | Some(Cmd::Close) => {
                        let _ = ws.close(None).await;
                        return Ended::Stop("closed by switchboard".into());
                    }
                    Some(Cmd::Forget(id)) => { self.pending.remove(&id); }
                    Some(Cmd::Call { id, function_id, data, reply }) => {
                        self.queue(id.clone(), function_id, data, reply);
                        if let Err(e) = self.send_call(&mut ws, &id).await {
                            return Ended::Lost(e);
                        }
                    }
                },
                f = ws.next() => {
                    match self.read(f) {
                        Err(e) => return Ended::Lost(e),
                        Ok(None) => {}
                        Ok(Some(Message::Pong)) => unanswered = 0,
                        Ok(Some(Message::RegistrationRejected { code, namespace, .. })) if code == WORKER_NAMESPACE_CONFLICT => {
                            return Ended::Stop(format!("the engine refused this worker: {code} in namespace {namespace:?}"));
                        }
                        Ok(Some(m)) => {
                            if let Some(end) = self.on_frame(&mut ws, m, &bindings, &register_id).await {
                                return end;
                            }
                        }
                    }
                }
            }
        }
    }

    async fn send_call(&mut self, ws: &mut Ws, id: &str) -> Result<(), String> {
        let Some(p) = self.pending.get_mut(id) else {
            return Ok(());
        };
        p.sent = true;
        let msg = Message::invoke(id, &p.function_id, p.data.clone());
        match codec::encode(&msg) {
            Ok(_) => self.send(ws, &msg).await,
            Err(e) => {
                // Too large to send: this call fails, the socket is fine.
                if let Some(p) = self.pending.remove(id) {
                    let _ = p.reply.send(Err(CallError::Closed(e.to_string())));
                }
                Ok(())
            }
        }
    }

    /// One socket read: the frame, `None` for one to skip, or why the socket is done.
    fn read(
        &mut self,
        f: Option<Result<WsMessage, tokio_tungstenite::tungstenite::Error>>,
    ) -> Result<Option<Message>, String> {
        match f {
            None => Err("the engine closed the connection".into()),
            Some(Err(e)) => Err(format!("engine socket error: {e}")),
            Some(Ok(WsMessage::Close(_))) => Err("the engine closed the connection".into()),
            Some(Ok(WsMessage::Text(t))) => {
                record(&self.rec, Dir::In, t.as_str());
                match codec::decode(t.as_str()) {
                    Ok(m) => Ok(Some(m)),
                    Err(e) => {
                        self.tell(ClientEvent::Warning(e.to_string()));
                        Ok(None)
                    }
                }
            }
            Some(Ok(WsMessage::Binary(b))) => {
                record(
                    &self.rec,
                    Dir::Note,
                    &format!("binary frame of {} bytes ignored", b.len()),
                );
                self.tell(ClientEvent::Warning("binary frame ignored".into()));
                Ok(None)
            }
            Some(Ok(_)) => Ok(None),
        }
    }

    /// The engine refused this connection (`error` frame, then it closes the socket): say why,
    /// and try again after the backoff (an auth function may come back, credentials may be
    /// fixed by whoever runs the engine).
    fn refused(&mut self, error: ErrorBody) -> Ended {
        let why = format!("the engine refused the connection: {error}");
        self.tell(ClientEvent::Warning(why.clone()));
        Ended::Lost(why)
    }

    fn unexpected(&mut self, m: &Message) {
        self.tell(ClientEvent::Warning(format!(
            "unexpected {} frame from the engine",
            m.kind()
        )));
    }

    /// Frames common to the handshake and the steady state.
    async fn on_frame(
        &mut self,
        ws: &mut Ws,
        m: Message,
        bindings: &[Binding],
        register_id: &str,
    ) -> Option<Ended> {
        match m {
            Message::Ping => {
                if let Err(e) = self.send(ws, &Message::Pong).await {
                    return Some(Ended::Lost(e));
                }
            }
            Message::Pong => {}
            Message::InvocationResult {
                invocation_id,
                result,
                error,
                function_id,
                ..
            } => {
                if invocation_id == register_id {
                    if let Some(e) = error {
                        self.tell(ClientEvent::Warning(format!(
                            "engine::workers::register failed: {e}"
                        )));
                    }
                } else if let Some(p) = self.pending.remove(&invocation_id) {
                    let r = match (error, result) {
                        (Some(e), _) => Err(CallError::Remote(e)),
                        (None, r) => Ok(r.unwrap_or(Value::Null)),
                    };
                    let _ = p.reply.send(r);
                } else {
                    self.tell(ClientEvent::Warning(format!(
                        "late or unknown result for {function_id} ({invocation_id}) dropped"
                    )));
                }
            }
            Message::InvokeFunction {
                invocation_id,
                function_id,
                data,
                ..
            } => {
                let trigger = bindings
                    .iter()
                    .find(|b| b.handler == function_id)
                    .map(|b| b.trigger_type.clone());
                let outcome = match trigger {
                    Some(trigger_type) => self.push_event(PushedEvent { trigger_type, data }),
                    None => Err(ErrorBody::new(
                        "function_not_found",
                        format!("switchboard has no handler {function_id}"),
                    )),
                };
                if let Some(id) = invocation_id {
                    let reply = Message::result(&id, &function_id, outcome);
                    if let Err(e) = self.send(ws, &reply).await {
                        return Some(Ended::Lost(e));
                    }
                }
            }
            Message::Unknown(v) => self.tell(ClientEvent::Unknown(v)),
            Message::Error { error } => return Some(self.refused(error)),
            Message::RegistrationRejected {
                code, namespace, ..
            } if code == WORKER_NAMESPACE_CONFLICT => {
                return Some(Ended::Stop(format!(
                    "the engine refused this worker: {code} in namespace {namespace:?}"
                )));
            }
            Message::RegistrationRejected {
                code, function_id, ..
            } => self.tell(ClientEvent::Warning(format!(
                "the engine rejected {}: {code}",
                function_id.unwrap_or_default()
            ))),
            Message::TriggerRegistrationResult {
                error: Some(err),
                trigger_type,
                ..
            } => self.tell(ClientEvent::Warning(format!(
                "the engine refused the {trigger_type} binding: {err}"
            ))),
            Message::TriggerRegistrationResult { .. } => {}
            m => self.unexpected(&m),
        }
        None
    }

    /// Queue an event for the consumer without waiting; the ack is the caller's next frame.
    fn push_event(&mut self, e: PushedEvent) -> Result<Value, ErrorBody> {
        if self.dropped > 0
            && self
                .events
                .try_send(ClientEvent::EventsDropped(self.dropped))
                .is_ok()
        {
            self.dropped = 0;
        }
        match self.events.try_send(ClientEvent::Event(e)) {
            Ok(()) => Ok(json!({})),
            Err(_) => {
                self.dropped += 1;
                Err(ErrorBody::new(
                    "busy",
                    "switchboard's event queue is full; it will re-read",
                ))
            }
        }
    }
}
