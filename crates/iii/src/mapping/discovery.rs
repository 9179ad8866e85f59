//! Which approval gate the engine has, and whether its held calls can be seen (issue 23
//! items 2 and 3).
//!
//! The engine answers a trigger binding only when it fails, and parks a binding whose trigger
//! type no worker provides without a word; the approval-gate worker has shipped with two
//! naming generations. So "connected" says nothing about whether held calls reach us. At
//! connect, and whenever a worker joins or leaves (`engine::workers-available`) or the
//! harness says it is ready (`harness::ready`), discovery reads the engine's functions, its
//! placed trigger bindings and its workers, and decides:
//! - which generation the gate is (its function ids and event names), so we call its ids;
//! - whether its `approval::gate` is bound on a harness hook some worker provides;
//! - whether our own binding of its `pending-created` event is placed.
//!
//! Anything short of all three puts a persistent warning on the engine's session and every
//! session under it (`BackendEvent::Blind`), saying calls may run unapproved. While it stands,
//! discovery runs again every few seconds, so a gate that comes later clears it.

use serde_json::{Value, json};

use super::json::{self as j, str_field};
use super::{Mapper, Out, PAGE};
use switchboard_core::msg::BackendEvent;
use switchboard_core::transcript::Level;

/// The words every warning leads with (tests and users look for them).
pub const BLIND: &str = "held calls cannot be seen: calls may run unapproved";
/// How soon discovery runs again while the gate is not seen (ms).
pub const RETRY_MS: u64 = 5_000;
/// A second look after a worker joined: it registers its functions after it connects.
pub const SETTLE_MS: u64 = 1_200;

/// The harness hooks that run before a call, where a gate can hold it (by generation).
pub const PRE_HOOKS: [&str; 4] = [
    "harness::hook::pre-trigger",
    "harness::hook::pre-dispatch",
    "harness::hook::pre_dispatch",
    "harness::hook::pre_trigger",
];

pub const FUNCTIONS: &str = "engine::functions::list";
pub const TRIGGERS: &str = "engine::registered-triggers::list";
pub const WORKERS: &str = "engine::workers::list";

/// The approval-gate naming generations we speak (iii-hq/workers `approval-gate`): kebab-case
/// ids (`approval::list-pending`, events `approval::pending-created`; gate on
/// `harness::hook::pre-trigger`, older builds `pre-dispatch`) and the older snake_case ids
/// (`approval::list_pending`, events `approval::pending_created`; gate on
/// `harness::hook::pre_dispatch`). Records, `approval::resolve` and its answer are the same.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Generation {
    #[default]
    Kebab,
    Snake,
}

impl Generation {
    pub fn list_pending(self) -> &'static str {
        match self {
            Generation::Kebab => "approval::list-pending",
            Generation::Snake => "approval::list_pending",
        }
    }

    pub fn approve_always(self) -> &'static str {
        match self {
            Generation::Kebab => "approval::approve-always",
            Generation::Snake => "approval::approve_always",
        }
    }

    pub fn created(self) -> &'static str {
        match self {
            Generation::Kebab => "approval::pending-created",
            Generation::Snake => "approval::pending_created",
        }
    }

    pub fn resolved(self) -> &'static str {
        match self {
            Generation::Kebab => "approval::pending-resolved",
            Generation::Snake => "approval::pending_resolved",
        }
    }

    fn ids(self) -> &'static str {
        match self {
            Generation::Kebab => "kebab-case ids",
            Generation::Snake => "snake_case ids",
        }
    }
}

/// What discovery concluded about the gate.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum GateView {
    /// No discovery finished yet.
    #[default]
    Unknown,
    /// All is well: its held calls reach us.
    Seen {
        generation: Generation,
        hook: String,
    },
    /// No approval function on the engine.
    Absent,
    /// Approval functions of a generation we do not speak (which ones).
    Foreign(String),
    /// The gate's functions are there, but `approval::gate` is bound on no harness hook a
    /// worker provides (parked, or never bound): nothing is held.
    Unbound(Generation),
    /// Our binding of the gate's `pending-created` is not placed: new held calls are not
    /// pushed to us.
    Unheard(Generation),
    /// Discovery itself failed: we cannot tell (the generation, when the function listing
    /// answered and named one: its ids are the ones to call meanwhile).
    Unsure(String, Option<Generation>),
}

impl GateView {
    /// The generation whose ids we call (a best guess when unsure).
    pub fn generation(&self) -> Option<Generation> {
        match self {
            GateView::Seen { generation, .. }
            | GateView::Unbound(generation)
            | GateView::Unheard(generation) => Some(*generation),
            GateView::Unsure(_, g) => Some(g.unwrap_or_default()),
            GateView::Unknown => Some(Generation::Kebab),
            GateView::Absent | GateView::Foreign(_) => None,
        }
    }

    /// The warning, or `None` when held calls are seen.
    pub fn blind(&self) -> Option<String> {
        let why = match self {
            GateView::Seen { .. } | GateView::Unknown => return None,
            GateView::Absent => "no approval gate on this engine".to_string(),
            GateView::Foreign(ids) => {
                format!("an approval gate of a generation switchboard does not know ({ids})")
            }
            GateView::Unbound(g) => format!(
                "the approval gate ({}) is bound on no harness hook a worker provides",
                g.ids()
            ),
            GateView::Unheard(g) => {
                format!("our {} binding is not placed on the engine", g.created())
            }
            GateView::Unsure(why, _) => {
                format!("cannot tell which approval gate this engine has: {why}")
            }
        };
        Some(format!("{BLIND} — {why}"))
    }

    /// The engine session's "approval gate" fact.
    fn fact(&self) -> String {
        match self {
            GateView::Seen { generation, hook } => format!(
                "present ({}: {}), bound on {}",
                generation.ids(),
                generation.created(),
                j::clip(hook, 120)
            ),
            GateView::Unknown => "discovering…".into(),
            other => other.blind().unwrap_or_default(),
        }
    }
}

/// Discovery's state within the mapper.
#[derive(Clone, Debug, Default)]
pub struct Discovery {
    /// (function id, worker name) of every function listed.
    functions: Option<Vec<(String, String)>>,
    /// (trigger type, function id) of every placed binding.
    triggers: Option<Vec<(String, String)>>,
    /// (worker name, version).
    workers: Option<Vec<(String, String)>>,
    /// (worker name, worker id): a restarted worker has a new id.
    worker_ids: Vec<(String, String)>,
    /// The function listing itself failed (its slot holds nothing true).
    functions_failed: bool,
    /// What the last discovery saw of the harness, session-manager and gate (their functions
    /// and their workers' ids): a rescan re-reads only when it changed, so a worker event that
    /// changes nothing of theirs (another switchboard joining, metadata) reads nothing again.
    fingerprint: Option<u64>,
    /// A discovery is running: its three listings are awaited (each slot fills with the
    /// first answer to come; one from a round just before, milliseconds older, may be it).
    running: bool,
    /// What failed in the running discovery.
    failed: Option<String>,
    /// Asked again while one ran: run once more when it ends.
    again: bool,
    /// Re-read sessions and held calls when the running discovery ends (a worker joined),
    /// if what discovery sees changed.
    rescan: bool,
    /// Re-read them whatever it sees (the harness said it booted: its state is new).
    force: bool,
    pub view: GateView,
    /// Whether the engine has the harness (`harness::send`), as last discovered.
    harness: Option<bool>,
    /// When to look again (ms).
    next_at: Option<u64>,
    /// The prefix of our handler ids (`switchboard::<instance>::`), to find our bindings.
    pub handlers: String,
    /// The warning last sent, so it is sent only when it changes.
    said: Option<Option<String>>,
}

impl Discovery {
    pub fn new() -> Discovery {
        Discovery {
            handlers: "switchboard::".into(),
            ..Discovery::default()
        }
    }
}

/// Every object in the result's arrays (the list's key varies between engine versions).
pub(super) fn entries(result: &Value) -> impl Iterator<Item = &Value> {
    let mut lists: Vec<&Value> = vec![result];
    if let Some(o) = result.as_object() {
        lists.extend(o.values());
    }
    lists
        .into_iter()
        .filter_map(Value::as_array)
        .flatten()
        .filter(|v| v.is_object())
        .take(100_000)
}

fn pairs(result: &Value, a: &[&str], b: &str) -> Vec<(String, String)> {
    entries(result)
        .filter_map(|v| {
            let first = a.iter().find_map(|k| str_field(v, k))?;
            // The engine's words reach facts, warnings and the log: made safe here, once.
            let safe =
                |t: &str| switchboard_core::text::visible_line(&j::clip(t, 256)).into_owned();
            Some((safe(first), safe(str_field(v, b).unwrap_or(""))))
        })
        .collect()
}

/// Conclude from the three listings.
pub fn conclude(
    functions: &[(String, String)],
    triggers: &[(String, String)],
    handlers: &str,
) -> GateView {
    let has = |f: &str| functions.iter().any(|(id, _)| id == f);
    let approval: Vec<&str> = functions
        .iter()
        .map(|(id, _)| id.as_str())
        .filter(|id| id.starts_with("approval::"))
        .collect();
    if has("approval::consume") || has("approval::lookup_record") {
        // The durable-subscriber gate: no approval events at all, a different protocol.
        return GateView::Foreign(
            "approval::consume / approval::lookup_record: the durable-subscriber gate, which pushes no approval events".into(),
        );
    }
    let generation = if has(Generation::Kebab.list_pending()) {
        Generation::Kebab
    } else if has(Generation::Snake.list_pending()) {
        Generation::Snake
    } else if approval.is_empty() {
        return GateView::Absent;
    } else {
        let mut ids: Vec<&str> = approval.into_iter().take(4).collect();
        ids.sort();
        return GateView::Foreign(ids.join(", "));
    };
    // Only a hook that runs before a call can hold it (a post hook sees it run).
    let hook = triggers
        .iter()
        .find(|(t, f)| f == "approval::gate" && PRE_HOOKS.contains(&t.as_str()))
        .map(|(t, _)| t.clone());
    let Some(hook) = hook else {
        return GateView::Unbound(generation);
    };
    let ours = triggers
        .iter()
        .any(|(t, f)| t == generation.created() && f.starts_with(handlers));
    if !ours {
        return GateView::Unheard(generation);
    }
    GateView::Seen { generation, hook }
}

/// The engine's answer to a discovery read, with a gate of `g` bound on its hook and our
/// bindings placed (anything else: `{}`).
#[cfg(any(test, feature = "test-hooks"))]
pub fn engine_answer(function_id: &str, g: Generation) -> Value {
    match function_id {
        FUNCTIONS => json!({"functions": [
            {"function_id": "harness::send", "worker_name": "harness"},
            {"function_id": g.list_pending(), "worker_name": "approval-gate"},
            {"function_id": "approval::resolve", "worker_name": "approval-gate"},
        ]}),
        TRIGGERS => json!({"registered_triggers": [
            {"trigger_type": "harness::hook::pre-trigger", "function_id": "approval::gate"},
            {"trigger_type": g.created(), "function_id": "switchboard::x::on-created"},
        ]}),
        WORKERS => json!({"workers": [{"name": "harness", "version": "1.8.25"}]}),
        _ => json!({}),
    }
}

impl Mapper {
    /// Our handler ids start with `prefix` (the client's, renewed on a namespace conflict).
    pub fn set_handlers(&mut self, prefix: &str) {
        self.disc.handlers = j::clip(prefix, 200);
    }

    /// The gate generation whose ids we call now.
    pub(super) fn generation(&self) -> Option<Generation> {
        self.disc.view.generation()
    }

    /// Run discovery (reads the three listings); `rescan`: re-read sessions and held calls
    /// after it, whatever it finds (a worker joined, left or restarted).
    pub(super) fn discover(&mut self, rescan: bool, out: &mut Out) {
        self.disc.rescan |= rescan;
        if self.disc.running {
            self.disc.again = true;
            return;
        }
        self.disc.functions = None;
        self.disc.triggers = None;
        self.disc.workers = None;
        self.disc.failed = None;
        self.disc.functions_failed = false;
        self.disc.worker_ids.clear();
        self.disc.running = true;
        self.read(out, FUNCTIONS, json!({}));
        self.read(out, TRIGGERS, json!({}));
        self.read(out, WORKERS, json!({}));
    }

    /// A worker joined or left, or the harness is ready: look now, and again shortly (it
    /// registers its functions after it connects).
    pub(super) fn workers_changed(&mut self, force: bool, now_ms: u64, out: &mut Out) {
        if !self.online {
            // Before we are live (the engine tells us of our own registration then): the
            // discovery of `reconnected` is still to come.
            return;
        }
        self.disc.force |= force;
        self.discover(true, out);
        self.disc.next_at = Some(now_ms + SETTLE_MS);
    }

    /// One of the three listings answered (`Err`: it failed).
    pub(super) fn discovered(
        &mut self,
        function_id: &str,
        result: Result<&Value, String>,
        now_ms: u64,
        out: &mut Out,
    ) {
        if !self.disc.running {
            return;
        }
        match (function_id, result) {
            (FUNCTIONS, Ok(v)) => {
                self.disc.functions = Some(pairs(v, &["function_id", "id"], "worker_name"))
            }
            (TRIGGERS, Ok(v)) => {
                self.disc.triggers = Some(pairs(v, &["trigger_type"], "function_id"))
            }
            (WORKERS, Ok(v)) => {
                self.disc.workers = Some(pairs(v, &["name"], "version"));
                self.disc.worker_ids = pairs(v, &["name"], "id");
            }
            (_, Ok(_)) => {}
            (WORKERS, Err(_)) => self.disc.workers = Some(Vec::new()),
            (_, Err(e)) => {
                self.disc.failed = Some(format!("{function_id} failed: {e}"));
                if function_id == FUNCTIONS {
                    self.disc.functions_failed = true;
                    self.disc.functions = Some(Vec::new());
                } else {
                    self.disc.triggers = Some(Vec::new());
                }
            }
        }
        let d = &self.disc;
        if d.functions.is_some() && d.triggers.is_some() && d.workers.is_some() {
            self.disc.running = false;
            self.conclude(now_ms, out);
        }
    }

    fn conclude(&mut self, now_ms: u64, out: &mut Out) {
        let before = self.disc.view.clone();
        let view = match (&self.disc.failed, &self.disc.functions, &self.disc.triggers) {
            (None, Some(f), Some(t)) => conclude(f, t, &self.disc.handlers),
            (Some(why), Some(f), _) if !self.disc.functions_failed => {
                // The functions alone may settle it (no gate, or one we do not speak), and
                // name the generation whose ids to call meanwhile.
                match conclude(f, &[], &self.disc.handlers) {
                    v @ (GateView::Absent | GateView::Foreign(_)) => v,
                    v => GateView::Unsure(j::clip(why, 300), v.generation()),
                }
            }
            (Some(why), ..) => GateView::Unsure(j::clip(why, 300), None),
            _ => GateView::Unsure("a listing was missing".into(), None),
        };
        let functions = self.disc.functions.clone().unwrap_or_default();
        let harness_worker = functions
            .iter()
            .find(|(id, _)| id == "harness::send")
            .map(|(_, w)| w.clone());
        let had_harness = self.disc.harness;
        let harness = self
            .disc
            .failed
            .is_none()
            .then_some(harness_worker.is_some());
        self.disc.harness = harness.or(had_harness);
        let version = harness_worker.as_ref().and_then(|w| {
            self.disc
                .workers
                .as_ref()?
                .iter()
                .find(|(name, _)| name == w)
                .map(|(_, v)| v.clone())
                .filter(|v| !v.is_empty())
        });
        match harness {
            Some(true) => out.info(
                "",
                "harness",
                Some(match version {
                    Some(v) => format!("v{}", j::clip(v.trim_start_matches('v'), 40)),
                    None => "present (version not given)".into(),
                }),
            ),
            Some(false) => out.info(
                "",
                "harness",
                Some(
                    "not on this engine: no harness::send (is the harness worker running?)".into(),
                ),
            ),
            None => {}
        }
        out.info("", "approval gate", Some(view.fact()));
        self.disc.view = view.clone();
        self.say_blind(out);
        if view.blind().is_some() {
            // Sooner if a settling look is already due (a worker just joined).
            let next = now_ms + RETRY_MS;
            self.disc.next_at = Some(self.disc.next_at.map_or(next, |t| t.min(next)));
        }
        let fingerprint = self.fingerprint();
        let changed = self.disc.fingerprint != Some(fingerprint);
        self.disc.fingerprint = Some(fingerprint);
        let rescan = std::mem::take(&mut self.disc.rescan) && changed
            || std::mem::take(&mut self.disc.force);
        // Held calls: listed whenever the generation to call is (newly) known, and when we
        // see again after being blind (calls held meanwhile pushed us nothing).
        let sees_again = before.blind().is_some() && view.blind().is_none();
        if let Some(g) = view.generation()
            && (rescan
                || sees_again
                || before.generation() != Some(g)
                || before == GateView::Unknown)
            && self.online
        {
            self.start_listing(out, None);
        }
        // Sessions: read again when the harness came (or a worker restarted).
        let harness_came = harness == Some(true) && had_harness == Some(false);
        if self.online && (harness_came || (rescan && harness == Some(true))) {
            self.round += 1;
            // A new listing: its own page budget.
            self.pages.remove("session::list");
            self.read(
                out,
                "session::list",
                json!({"order": "updated_desc", "limit": PAGE}),
            );
        }
        if std::mem::take(&mut self.disc.again) {
            self.discover(false, out);
        }
        if before != view && before != GateView::Unknown {
            let text = match view.blind() {
                Some(w) => format!("approval gate: {w}"),
                None => format!("approval gate: {}", view.fact()),
            };
            let level = if view.blind().is_some() {
                Level::Error
            } else {
                Level::Info
            };
            self.report(None, level, text, out);
        }
    }

    /// Send the warning (or its end) to the engine's session and every root, if it changed.
    fn say_blind(&mut self, out: &mut Out) {
        let now = self.disc.view.blind();
        if self.disc.said.as_ref() == Some(&now) {
            return;
        }
        self.disc.said = Some(now.clone());
        out.ev("", BackendEvent::Blind(now.clone()));
        for r in self.sorted_roots() {
            out.ev(&r, BackendEvent::Blind(now.clone()));
        }
    }

    /// A root just opened: it carries the warning too.
    pub(super) fn blind_for_new_root(&self, root: &str, out: &mut Out) {
        // During a re-read (view unknown again) the warning standing is the one last said.
        let standing = match &self.disc.view {
            GateView::Unknown => self.disc.said.clone().flatten(),
            v => v.blind(),
        };
        if let Some(w) = standing {
            out.ev(root, BackendEvent::Blind(Some(w)));
        }
    }

    /// The hook the gate is bound on (for the #797 diagnostic), the newest one's by default.
    pub(super) fn gate_hook(&self) -> String {
        match &self.disc.view {
            GateView::Seen { hook, .. } => hook.clone(),
            _ => PRE_HOOKS[0].to_string(),
        }
    }

    /// What the harness, session-manager and gate look like now: their function ids and
    /// their workers' ids.
    fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let ours = |id: &str| {
            ["harness::", "session::", "approval::"]
                .iter()
                .any(|p| id.starts_with(p))
        };
        let functions = self.disc.functions.as_deref().unwrap_or_default();
        let mut ids: Vec<&str> = functions
            .iter()
            .filter(|(id, _)| ours(id))
            .map(|(id, _)| id.as_str())
            .collect();
        ids.sort_unstable();
        let mut hosts: Vec<&str> = functions
            .iter()
            .filter(|(id, _)| ours(id))
            .map(|(_, w)| w.as_str())
            .collect();
        hosts.sort_unstable();
        hosts.dedup();
        let mut workers: Vec<&str> = self
            .disc
            .worker_ids
            .iter()
            .filter(|(name, _)| hosts.contains(&name.as_str()))
            .map(|(_, id)| id.as_str())
            .collect();
        workers.sort_unstable();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (ids, workers).hash(&mut h);
        h.finish()
    }

    /// The tick: look again when due.
    pub(super) fn discovery_tick(&mut self, now_ms: u64, out: &mut Out) {
        if self.disc.next_at.is_some_and(|t| t <= now_ms) {
            self.disc.next_at = None;
            let rescan = self.disc.view.blind().is_none();
            self.discover(rescan, out);
        }
    }

    /// The connection dropped: the running discovery's reads are lost.
    pub(super) fn discovery_offline(&mut self) {
        self.disc.running = false;
        self.disc.again = false;
        self.disc.next_at = None;
    }
}
