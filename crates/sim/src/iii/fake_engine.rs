//! An in-process iii engine (reference §11.2): a real WebSocket server on loopback that sends
//! `workerregistered`, records every registration, refuses bindings (and accepts them without a
//! word, like the real engine), answers invocations from a script (result, error, delay, never,
//! drop the socket) or from its in-memory harness world, pushes events (duplicated, reordered,
//! with stale revisions when asked), answers pings unless told not to, and forgets everything a
//! connection registered when that connection drops. Used by the tests and by `switchboard demo-engine`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

pub use super::fake_scale::{Churn, FOCUSED, FOCUSED_TITLE, Scale};
pub use super::fake_world::World;
use switchboard_iii::codec::{self, ErrorBody, Message};

/// How the engine answers one invocation of a scripted function.
#[derive(Debug, Clone)]
pub enum Reply {
    Result(Value),
    Error(ErrorBody),
    /// Answer after a while (results may then arrive out of order).
    Delay(Duration, Box<Reply>),
    /// Never answer.
    Never,
    /// Drop the caller's socket instead of answering (the call may or may not have run).
    DropSocket,
}

/// Event delivery faults (reference §2.4: at-least-once, unordered).
#[derive(Debug, Clone, Copy, Default)]
pub struct Chaos {
    /// Every event is delivered twice.
    pub duplicate: bool,
    /// The events of one operation are delivered in reverse order.
    pub reorder: bool,
    /// Every `message-updated` is followed by a copy one revision older.
    pub stale: bool,
}

/// A binding a connection holds.
#[derive(Debug, Clone, PartialEq)]
pub struct BindingInfo {
    pub id: String,
    pub trigger_type: String,
    pub function_id: String,
    pub config: Value,
}

enum Out {
    Frame(String),
    Drop,
}

struct Conn {
    tx: mpsc::UnboundedSender<Out>,
    functions: HashSet<String>,
    bindings: Vec<BindingInfo>,
}

#[derive(Default)]
struct Inner {
    conns: HashMap<u64, Conn>,
    next_conn: u64,
    /// Every frame received, with its connection, in order (capped).
    log: Vec<(u64, Value)>,
    script: HashMap<String, VecDeque<Reply>>,
    answer_pings: bool,
    fail_bindings: HashSet<String>,
    function_conflicts: usize,
    chaos: Chaos,
    world: World,
    connections_total: u64,
    handshakes: Vec<Vec<(String, String)>>,
    /// Close new connections at once (the engine is down).
    refuse: bool,
    /// Frames are kept in `log` (tests read them); the benchmark turns this off so the
    /// process's memory is the client's.
    no_log: bool,
    /// When each WebSocket handshake arrived (the reconnect benchmark times from it).
    handshake_times: Vec<std::time::Instant>,
}

const LOG_CAP: usize = 100_000;

/// A running fake engine; dropping it does not stop the server (it ends with the runtime).
#[derive(Clone)]
pub struct FakeEngine {
    addr: SocketAddr,
    inner: Arc<Mutex<Inner>>,
}

impl FakeEngine {
    /// Listen on `127.0.0.1:port` (0: any free port) with `world`.
    // The handshake callback's error type is tungstenite's, large by design.
    #[allow(clippy::result_large_err)]
    pub async fn start(port: u16, world: World) -> std::io::Result<FakeEngine> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let inner = Arc::new(Mutex::new(Inner {
            answer_pings: true,
            world,
            ..Inner::default()
        }));
        let engine = FakeEngine { addr, inner };
        let e = engine.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                if e.lock().refuse {
                    // Down: the connection closes at once (dropped).
                    drop(tcp);
                    continue;
                }
                let e = e.clone();
                tokio::spawn(async move {
                    let seen = e.clone();
                    // Keep the handshake's headers so tests can check `--header` reached it.
                    let keep =
                        move |req: &tokio_tungstenite::tungstenite::handshake::server::Request,
                              resp| {
                            let hs: Vec<(String, String)> = req
                                .headers()
                                .iter()
                                .map(|(k, v)| {
                                    (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into())
                                })
                                .collect();
                            let mut i = seen.lock();
                            i.handshakes.push(hs);
                            i.handshake_times.push(std::time::Instant::now());
                            Ok(resp)
                        };
                    if let Ok(ws) = tokio_tungstenite::accept_hdr_async(tcp, keep).await {
                        e.serve(ws).await;
                    }
                });
            }
        });
        Ok(engine)
    }

    pub fn url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queue one reply for the next invocation of `function_id` (before the world's answer).
    pub fn script(&self, function_id: &str, reply: Reply) {
        self.lock()
            .script
            .entry(function_id.into())
            .or_default()
            .push_back(reply);
    }

    /// Keep (default) or stop keeping the frames received (`frames`, `frames_of`).
    pub fn set_frame_log(&self, on: bool) {
        self.lock().no_log = !on;
    }

    pub fn set_answer_pings(&self, on: bool) {
        self.lock().answer_pings = on;
    }

    /// Refuse bindings of `trigger_type` with an error.
    pub fn fail_binding(&self, trigger_type: &str) {
        self.lock().fail_bindings.insert(trigger_type.into());
    }

    /// Refuse the next `n` function registrations with `FUNCTION_NAMESPACE_CONFLICT`.
    pub fn conflict_functions(&self, n: usize) {
        self.lock().function_conflicts = n;
    }

    pub fn set_chaos(&self, chaos: Chaos) {
        self.lock().chaos = chaos;
    }

    /// Run `f` on the world (add sessions, hold calls) without emitting events.
    pub fn with_world<T>(&self, f: impl FnOnce(&mut World) -> T) -> T {
        f(&mut self.lock().world)
    }

    /// Every frame received so far, in order.
    pub fn frames(&self) -> Vec<Value> {
        self.lock().log.iter().map(|(_, v)| v.clone()).collect()
    }

    /// The frames received of one `type`.
    pub fn frames_of(&self, kind: &str) -> Vec<Value> {
        self.frames()
            .into_iter()
            .filter(|f| f["type"] == kind)
            .collect()
    }

    /// Bindings held by live connections.
    pub fn bindings(&self) -> Vec<BindingInfo> {
        self.lock()
            .conns
            .values()
            .flat_map(|c| c.bindings.clone())
            .collect()
    }

    /// Connections open now, and ever accepted.
    pub fn connections(&self) -> (usize, u64) {
        let i = self.lock();
        (i.conns.len(), i.connections_total)
    }

    /// The HTTP headers of every handshake so far.
    pub fn handshake_headers(&self) -> Vec<Vec<(String, String)>> {
        self.lock().handshakes.clone()
    }

    /// While `on`, new connections are closed at once: with `drop_connections`, an outage
    /// that lasts until it is switched off.
    pub fn set_refuse(&self, on: bool) {
        self.lock().refuse = on;
    }

    /// When each handshake so far arrived, in order.
    pub fn handshake_times(&self) -> Vec<std::time::Instant> {
        self.lock().handshake_times.clone()
    }

    /// Drop every socket; the engine forgets their functions and bindings.
    pub fn drop_connections(&self) {
        let mut i = self.lock();
        for (_, c) in i.conns.drain() {
            let _ = c.tx.send(Out::Drop);
        }
    }

    /// Send a raw text frame to every connection (e.g. a frame type the client does not know).
    pub fn send_raw(&self, text: &str) {
        for c in self.lock().conns.values() {
            let _ = c.tx.send(Out::Frame(text.to_string()));
        }
    }

    /// Push one event to every binding of `trigger_type` whose config matches; with an
    /// `invocation_id` when `with_id` (then the worker must acknowledge). Returns the ids sent.
    pub fn push(&self, trigger_type: &str, payload: Value, with_id: bool) -> Vec<String> {
        let mut i = self.lock();
        push_locked(&mut i, trigger_type, &payload, with_id)
    }

    /// Play another approval gate (or none) from now on, as if its worker had just joined
    /// or left: every bound `engine::workers-available` handler hears of it.
    pub fn set_gate(&self, gate: super::fake_gate::FakeGate) {
        let mut i = self.lock();
        i.world.gate = gate;
        push_locked(
            &mut i,
            "engine::workers-available",
            &json!({"workers": gate.workers()["workers"].clone()}),
            false,
        );
    }

    /// Poll until `f` holds or `timeout` passes.
    pub async fn wait_until(&self, timeout: Duration, f: impl Fn(&FakeEngine) -> bool) -> bool {
        let end = tokio::time::Instant::now() + timeout;
        loop {
            if f(self) {
                return true;
            }
            if tokio::time::Instant::now() >= end {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

fn matches(config: &Value, payload: &Value) -> bool {
    ["session_id", "parent_session_id"].iter().all(|k| {
        match config.get(*k).and_then(Value::as_str) {
            Some(want) => payload.get(*k).and_then(Value::as_str) == Some(want),
            None => true,
        }
    })
}

fn push_locked(i: &mut Inner, trigger_type: &str, payload: &Value, with_id: bool) -> Vec<String> {
    let mut ids = vec![];
    let copies = if i.chaos.duplicate { 2 } else { 1 };
    for c in i.conns.values() {
        // Parked (no worker provides the type): never fired, like the real engine.
        if !i.world.gate.provides(trigger_type) {
            break;
        }
        for b in c.bindings.iter().filter(|b| b.trigger_type == trigger_type) {
            if !matches(&b.config, payload) {
                continue;
            }
            for _ in 0..copies {
                let id = with_id.then(|| uuid::Uuid::new_v4().to_string());
                let m = Message::InvokeFunction {
                    invocation_id: id.clone(),
                    function_id: b.function_id.clone(),
                    data: payload.clone(),
                    traceparent: None,
                    baggage: None,
                    action: None,
                    metadata: None,
                    namespace: None,
                };
                let _ = c.tx.send(Out::Frame(codec::encode(&m).unwrap_or_default()));
                ids.extend(id);
            }
        }
    }
    ids
}

/// The events of one operation, through the chaos settings.
fn push_batch(i: &mut Inner, mut events: Vec<(String, Value)>) {
    if i.chaos.stale {
        let mut out = vec![];
        for (t, p) in events {
            let rev = p.get("revision").and_then(Value::as_i64);
            out.push((t.clone(), p.clone()));
            if t == "session::message-updated"
                && let Some(r) = rev
            {
                let mut old = p.clone();
                old["revision"] = json!(r - 1);
                old["message"]["content"] = json!([{"type":"text","text":"(stale revision)"}]);
                out.push((t, old));
            }
        }
        events = out;
    }
    if i.chaos.reorder {
        events.reverse();
    }
    for (t, p) in events {
        push_locked(i, &t, &p, true);
    }
}

/// `switchboard demo-engine`: the fake engine with the demo world, until Ctrl-C.
pub fn demo_main(port: u16) -> std::process::ExitCode {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("switchboard demo-engine: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    rt.block_on(async move {
        let engine = match FakeEngine::start(port, World::demo()).await {
            Ok(e) => e,
            Err(e) => {
                eprintln!("switchboard demo-engine: cannot listen on 127.0.0.1:{port}: {e}");
                return std::process::ExitCode::FAILURE;
            }
        };
        println!(
            "demo iii engine on {} (two root sessions, one sub-agent, two held calls); in another terminal:",
            engine.url()
        );
        println!("  switchboard iii --engine {}", engine.url());
        println!("Ctrl-C stops it.");
        let _ = tokio::signal::ctrl_c().await;
        std::process::ExitCode::SUCCESS
    })
}

#[path = "fake_engine_conn.rs"]
mod conn;
