//! The iii harness as domain events, sans IO: results of our calls and pushed trigger events
//! in, workspace events and calls to make out. No socket, no clock (time is passed in).
//!
//! Each iii root session is one workspace session (`OpenRoot` asks the source to open it);
//! its sub-agent sessions are nodes under it. Every event is addressed to the root session it
//! belongs to. Delivery from the engine is at-least-once and unordered, so everything here
//! reconciles by ids and revisions, never by arrival order.

mod contract;
mod discovery;
mod gates;
pub(crate) mod json;
pub(crate) mod messages;
mod recorded;
mod remembered;
mod sessions;
mod status;
mod stuck;
mod turns;

#[cfg(test)]
mod discovery_tests;
#[cfg(test)]
mod gate_id_tests;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet, VecDeque};

use json::Field;
use serde_json::Value;

use switchboard_core::msg::BackendEvent;
use switchboard_core::transcript::Level;
use switchboard_core::tree::ROOT_KEY;

#[cfg(any(test, feature = "test-hooks"))]
pub use discovery::engine_answer;
pub use discovery::{BLIND, GateView, Generation, conclude};
pub use gates::{
    DEFAULT_DENY, OPT_ALLOW_ALWAYS, OPT_ALLOW_ONCE, OPT_DENY, OPT_FS_ALWAYS, OPT_FS_SESSION,
};
pub use recorded::{RecordedAnswers, canonical_decision, decision_of_resolve};

/// The iii session id of a root session: the workspace session it maps to.
pub type RootSessionKey = String;

/// A call for the transport to make. `retry_safe` follows reference §7: only these may be
/// re-sent after a lost result.
#[derive(Clone, Debug, PartialEq)]
pub struct OutCall {
    pub function_id: String,
    pub payload: Value,
    pub retry_safe: bool,
}

/// A root session seen for the first time: the source opens a workspace session for it.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenRoot {
    pub key: RootSessionKey,
    pub title: String,
}

/// Everything one input produced, in order. An event addressed to the empty root key
/// concerns the connection as a whole (no session yet): the source shows it where it shows
/// its own messages.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Out {
    pub events: Vec<(RootSessionKey, BackendEvent)>,
    pub calls: Vec<OutCall>,
    pub roots: Vec<OpenRoot>,
}

impl Out {
    fn ev(&mut self, root: &str, e: BackendEvent) {
        self.events.push((root.to_string(), e));
    }

    fn protocol(&mut self, root: &str, level: Level, text: impl Into<String>) {
        self.ev(
            root,
            BackendEvent::Protocol {
                level,
                text: text.into(),
            },
        );
    }

    fn connection(&mut self, root: &str, online: bool, detail: &str) {
        self.ev(
            root,
            BackendEvent::Connection {
                online,
                detail: detail.to_string(),
            },
        );
    }

    fn info(&mut self, root: &str, key: &str, value: Option<String>) {
        self.ev(
            root,
            BackendEvent::Info {
                key: key.to_string(),
                value,
            },
        );
    }
}

/// How many sessions we track: a hostile engine listing millions must not grow memory.
pub const MAX_SESSIONS: usize = 5_000;
/// Pages of one listing we follow: a cursor that never ends must not loop for ever.
pub const MAX_PAGES: usize = 200;
/// Events held while a re-read runs.
pub const MAX_BUFFERED: usize = 20_000;
/// Longest id (session, call, entry) accepted; longer ones are malformed.
pub const MAX_ID: usize = 512;
/// Page size of our listings (the session-manager's hard cap).
pub const PAGE: u64 = 500;

/// What we know of one iii session (a root or a sub-agent).
#[derive(Clone, Debug, Default)]
struct Sess {
    root: String,
    parent: Option<String>,
    title: String,
    /// Last `harness::status.status` (or turn event).
    status: Option<String>,
    expects_wake: bool,
    pending_calls: Vec<String>,
    /// `harness::stop` sent, `turn-completed{cancelled}` not yet seen.
    stopping: bool,
    msgs: messages::Msgs,
    /// The node was opened in the root's tree (children only).
    node_open: bool,
    /// `session::messages` already requested.
    hydrating: bool,
    /// Entry ids of the queued messages last read (a root's; at most `QUEUE_SHOWN`): when
    /// one lands in the transcript the queue is read again.
    queued: Vec<String>,
    /// When it was made known (`Mapper::made`).
    made: u64,
    /// The re-read round (`Mapper::round`) its reads last ran in: once per session a round.
    read_round: u64,
}

/// A re-read after (re)connecting: events that arrive meanwhile are buffered.
#[derive(Clone, Debug, Default)]
struct Sync {
    /// Reads still outstanding, by `(function_id, payload)`.
    outstanding: Vec<(String, String)>,
    buffer: VecDeque<(String, Value, u64)>,
    overflowed: bool,
}

/// The sans-IO iii mapper for one engine connection.
#[derive(Clone, Debug)]
pub struct Mapper {
    /// Prefix of our idempotency keys (one per process, from the source).
    instance: String,
    send_seq: u64,
    sessions: HashMap<String, Sess>,
    /// Root sessions already announced with `OpenRoot`.
    roots: HashSet<String>,
    gates: gates::Gates,
    watches: turns::Watches,
    online: bool,
    sync: Option<Sync>,
    /// Listings of `approval::list-pending` in progress, by scope.
    listings: HashMap<String, gates::Listing>,
    /// Pages followed per listing key, to stop endless cursors.
    pages: HashMap<String, usize>,
    /// Monotonic counter ordering our own observations (not time).
    seq: u64,
    /// Sessions made known so far (each `Sess::made` is its number).
    made: u64,
    /// New-session requests from the dialog in flight, by idempotency key: how many sessions
    /// were known when each was sent. Only a session first seen after it is shown to the
    /// user, so an engine cannot answer with an old session's id to switch the view.
    asked: HashMap<String, u64>,
    /// Which approval gate the engine has, and whether we see its held calls.
    disc: discovery::Discovery,
    /// Re-read rounds begun (each connect, each rescan after a worker joined): a session's
    /// reads run once a round, however many listings name it.
    round: u64,
    /// The `messages::fingerprint` of the event `on_event` is about to map, when a replay's
    /// reader thread took it ahead (`replay::parse_ahead`): taken by the message handlers.
    pub(crate) fingerprint_ahead: Option<u64>,
}

/// The tree node key of a session within its root.
pub fn node_key(root: &str, session: &str) -> String {
    if root == session {
        ROOT_KEY.to_string()
    } else {
        format!("iii:{session}")
    }
}

impl Mapper {
    /// `instance` prefixes idempotency keys; use one fresh UUID per process.
    pub fn new(instance: &str) -> Mapper {
        Mapper {
            instance: json::clip(instance, 64),
            send_seq: 0,
            made: 0,
            asked: HashMap::new(),
            sessions: HashMap::new(),
            roots: HashSet::new(),
            gates: gates::Gates::default(),
            watches: turns::Watches::default(),
            online: false,
            sync: None,
            listings: HashMap::new(),
            pages: HashMap::new(),
            seq: 0,
            disc: discovery::Discovery::new(),
            round: 0,
            fingerprint_ahead: None,
        }
    }

    pub fn online(&self) -> bool {
        self.online
    }

    /// True while a (re)connect re-read runs and events are buffered.
    pub fn syncing(&self) -> bool {
        self.sync.is_some()
    }

    /// The connection is up (first connect or reconnect) and bindings are live: re-read
    /// everything. The last state stays as it is until the reads replace it.
    pub fn reconnected(&mut self) -> Out {
        let mut out = Out::default();
        self.online = true;
        self.round += 1;
        self.sync = Some(Sync::default());
        self.pages.clear();
        self.listings.clear();
        self.watches_restart();
        for s in self.sessions.values_mut() {
            s.hydrating = false;
            // What we hold is older than the re-read: the re-read replaces it, and events
            // buffered meanwhile apply on top by revision.
            s.msgs.stale();
        }
        let mut roots: Vec<&String> = self.roots.iter().collect();
        roots.sort();
        for r in roots {
            out.info(r, "connection", Some("live (re-reading)".into()));
            // Still greyed: the last state is stale until the re-read replaces it, and a
            // decision on a card resolved elsewhere meanwhile would be a wasted call.
            out.connection(r, false, "reconnected, re-reading the engine");
        }
        self.read(
            &mut out,
            "session::list",
            serde_json::json!({"order": "updated_desc", "limit": PAGE}),
        );
        // Held calls are listed once discovery says which gate generation to ask (the
        // warning, if any, stays until it says otherwise).
        self.disc.view = GateView::Unknown;
        self.discovery_offline();
        self.discover(false, &mut out);
        self.finish_sync_if_done(&mut out);
        out
    }

    /// The connection dropped: the UI greys the last state and refuses decisions
    /// (`BackendEvent::Connection`) until the re-read after the reconnect is done.
    pub fn offline(&mut self) -> Out {
        let mut out = Out::default();
        self.online = false;
        self.sync = None;
        self.listings.clear();
        self.discovery_offline();
        let mut roots: Vec<&String> = self.roots.iter().collect();
        roots.sort();
        for r in roots {
            out.info(r, "connection", Some("reconnecting…".into()));
            out.connection(r, false, "reconnecting to the engine");
        }
        out
    }

    /// Issue a read; during a re-read it is awaited before buffered events apply.
    fn read(&mut self, out: &mut Out, function_id: &str, payload: Value) {
        if let Some(sync) = &mut self.sync {
            sync.outstanding
                .push((function_id.to_string(), payload.to_string()));
        }
        out.calls.push(OutCall {
            function_id: function_id.to_string(),
            payload,
            retry_safe: true,
        });
    }

    /// A read answered (or failed): during a re-read, the last one ends buffering.
    fn read_done(&mut self, function_id: &str, request: &Value, out: &mut Out) {
        let Some(sync) = &mut self.sync else { return };
        let key = (function_id.to_string(), request.to_string());
        if let Some(i) = sync.outstanding.iter().position(|k| *k == key) {
            sync.outstanding.swap_remove(i);
        }
        self.finish_sync_if_done(out);
    }

    fn finish_sync_if_done(&mut self, out: &mut Out) {
        if !self.sync.as_ref().is_some_and(|s| s.outstanding.is_empty()) {
            return;
        }
        let Some(sync) = self.sync.take() else { return };
        if sync.overflowed {
            for r in self.sorted_roots() {
                out.protocol(
                    &r,
                    Level::Warn,
                    format!("more than {MAX_BUFFERED} events arrived during the re-read; the oldest were dropped"),
                );
            }
        }
        let mut roots = self.sorted_roots();
        for (trigger, payload, now) in sync.buffer {
            self.event_into(&trigger, &payload, now, out);
        }
        roots.extend(self.sorted_roots());
        roots.sort();
        roots.dedup();
        for r in roots {
            out.info(&r, "connection", Some("live".into()));
            out.connection(&r, true, "live");
        }
    }

    fn sorted_roots(&self) -> Vec<String> {
        let mut v: Vec<String> = self.roots.iter().cloned().collect();
        v.sort();
        v
    }

    /// The result of one of our calls: `request` is the payload we sent.
    pub fn on_result(
        &mut self,
        function_id: &str,
        request: &Value,
        result: &Value,
        now_ms: u64,
    ) -> Out {
        let mut out = Out::default();
        if let Err(why) = contract::check_answer(function_id, result) {
            // Never a wrong state from an answer we cannot trust: it is shown (and recorded)
            // and changes nothing.
            let session = json::str_field(request, "session_id")
                .or_else(|| json::str_field(request, "root_session_id"));
            self.report(
                session,
                Level::Error,
                format!(
                    "{function_id} answer breaks the harness contract, ignored: {}",
                    json::clip(&why, 300)
                ),
                &mut out,
            );
            self.read_done(function_id, request, &mut out);
            return out;
        }
        match function_id {
            "session::list" => self.session_list(request, result, &mut out),
            "session::get" => self.session_get(result, &mut out),
            "harness::session-tree" => self.session_tree(result, &mut out),
            "harness::status" => self.status(request, result, &mut out),
            "harness::metrics" => self.metrics(request, result, &mut out),
            "session::messages" => self.messages_page(request, result, &mut out),
            "approval::list-pending" | "approval::list_pending" => {
                self.list_pending(request, result, now_ms, &mut out)
            }
            "approval::resolve" => self.resolve_result(request, result, now_ms, &mut out),
            "approval::approve-always" | "approval::approve_always" => {
                self.approve_always_result(request, &mut out)
            }
            "harness::stop" => self.stop_result(request, result, &mut out),
            "harness::send" => self.send_result(request, result, &mut out),
            discovery::TRIGGERS if request.field("trigger_type").is_some() => {
                self.hook_bindings(result, &mut out)
            }
            discovery::FUNCTIONS | discovery::TRIGGERS | discovery::WORKERS => {
                self.discovered(function_id, Ok(result), now_ms, &mut out)
            }
            "harness::unqueue" | "harness::edit_queued" => {
                self.queue_result(request, result, &mut out)
            }
            _ => {}
        }
        self.read_done(function_id, request, &mut out);
        out
    }

    /// One of our calls failed (`code`: `invocation_failed`, `TIMEOUT`, `disconnected`…).
    pub fn on_error(
        &mut self,
        function_id: &str,
        request: &Value,
        code: &str,
        message: &str,
        now_ms: u64,
    ) -> Out {
        let mut out = Out::default();
        let what = format!(
            "{function_id} failed: {} {}",
            json::clip(code, 64),
            json::clip(message, 400)
        );
        let session = json::str_field(request, "session_id")
            .or_else(|| json::str_field(request, "root_session_id"));
        match function_id {
            "approval::resolve" | "approval::approve-always" | "approval::approve_always" => {
                self.decision_failed(request, &what, &mut out)
            }
            "harness::stop" => self.stop_failed(request, &what, &mut out),
            discovery::FUNCTIONS | discovery::TRIGGERS | discovery::WORKERS
                if request.field("trigger_type").is_none() =>
            {
                self.discovered(function_id, Err(what.clone()), now_ms, &mut out);
            }
            "approval::list-pending" | "approval::list_pending" => {
                // An incomplete listing proves nothing: never withdraw on it.
                let scope = gates::scope_of(request);
                self.listings.remove(&scope);
                self.watches_retry(&scope, now_ms);
                self.report(session, Level::Warn, what, &mut out);
            }
            "harness::unqueue" | "harness::edit_queued" => {
                // The change may or may not have happened: show what the engine holds.
                self.report(session, Level::Warn, what, &mut out);
                if let Some(s) = session.filter(|s| self.sessions.contains_key(*s)) {
                    self.read(
                        &mut out,
                        "harness::status",
                        serde_json::json!({"session_id": s, "verbose": true}),
                    );
                }
            }
            "session::list" if code == "function_not_found" => {
                // An engine without the harness worker: say so where the human looks, not
                // only in the log (a real engine with no harness showed just "Live").
                out.info(
                    "",
                    "harness",
                    Some(
                        "not on this engine: session::list not found (is the harness worker running?)"
                            .into(),
                    ),
                );
                self.report(None, Level::Error, what, &mut out);
            }
            _ => self.report(session, Level::Warn, what, &mut out),
        }
        self.read_done(function_id, request, &mut out);
        out
    }

    /// A protocol line for the root of `session`, or for every root when it is unknown.
    fn report(&self, session: Option<&str>, level: Level, text: String, out: &mut Out) {
        match session.and_then(|s| self.sessions.get(s)) {
            Some(s) => out.protocol(&s.root.clone(), level, text),
            None => {
                let roots = self.sorted_roots();
                // No root yet (the listing itself failed): the engine's own session says it,
                // never nobody.
                if roots.is_empty() {
                    out.protocol("", level, text.clone());
                }
                for r in roots {
                    out.protocol(&r, level, text.clone());
                }
            }
        }
    }

    /// A pushed event: `trigger_type` as bound (`session::message-added`, …).
    pub fn on_event(&mut self, trigger_type: &str, payload: &Value, now_ms: u64) -> Out {
        let mut out = Out::default();
        if let Some(sync) = &mut self.sync {
            if sync.buffer.len() >= MAX_BUFFERED {
                sync.buffer.pop_front();
                sync.overflowed = true;
            }
            sync.buffer
                .push_back((trigger_type.to_string(), payload.clone(), now_ms));
            return out;
        }
        self.event_into(trigger_type, payload, now_ms, &mut out);
        out
    }

    fn event_into(&mut self, trigger_type: &str, payload: &Value, now_ms: u64, out: &mut Out) {
        let short = trigger_type.rsplit("::").next().unwrap_or(trigger_type);
        match short {
            "created" => self.session_created(payload, out),
            "message-added" => {
                self.message_added(payload, out);
                self.queue_drained(payload, out);
            }
            "message-updated" => self.message_updated(payload, out),
            "status-changed" => self.status_changed(payload, out),
            "meta-updated" => self.meta_updated(payload, out),
            "deleted" => self.session_deleted(payload, out),
            // Both gate generations' spellings are bound (discovery says which one is live).
            "pending-created" | "pending_created" => self.pending_created(payload, now_ms, out),
            "pending-resolved" | "pending_resolved" => self.pending_resolved(payload, now_ms, out),
            // A worker joined or left, or the harness booted: discover and read again.
            "workers-available" => self.workers_changed(false, now_ms, out),
            "ready" => self.workers_changed(true, now_ms, out),
            "turn-started" => self.turn_started(payload, out),
            "turn-completed" => self.turn_completed(payload, out),
            "message-queued" | "triggers-changed" => {
                if let Some(s) = json::id_field(payload, "session_id")
                    && self.sessions.contains_key(s)
                {
                    self.read(
                        out,
                        "harness::status",
                        serde_json::json!({"session_id": s, "verbose": true}),
                    );
                }
            }
            _ => {
                let text = format!(
                    "unknown iii event {} ignored",
                    json::clip(trigger_type, 120)
                );
                self.report(
                    json::id_field(payload, "session_id"),
                    Level::Info,
                    text,
                    out,
                );
            }
        }
    }

    /// Time passes: the #797 check.
    pub fn tick(&mut self, now_ms: u64) -> Out {
        let mut out = Out::default();
        if self.online && self.sync.is_none() {
            self.check_watches(now_ms, &mut out);
            self.discovery_tick(now_ms, &mut out);
        }
        out
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }
}
