//! Held calls: approval-gate records as permission cards, and the human's decisions back.
//!
//! Card identity is `(session_id, function_call_id)`; a record whose revision
//! `(pending_at, function_id, kind, access request)` changes replaces its card (a generic
//! approval can become a filesystem-access one with the same call id). A record that vanished
//! from a complete listing closes its card as withdrawn, never answered. Decisions go through
//! `approval::resolve` only: never `harness::function::resolve`, the gate's private channel.

use std::collections::{HashMap, HashSet};

use super::json::Field;
use serde_json::{Value, json};

use super::json::{self as j, id_field, str_field};
use super::{MAX_PAGES, Mapper, Out, PAGE};
use switchboard_core::gate::Decision;
use switchboard_core::msg::BackendEvent;
use switchboard_core::transcript::Level;

#[path = "gates_cards.rs"]
mod cards;
#[path = "gates_decisions.rs"]
mod decisions;

pub use cards::{Record, decode_record};
use cards::{card, gate_id};
pub use decisions::{Act, act_of};

pub const OPT_ALLOW_ONCE: &str = "allow-once";
pub const OPT_ALLOW_ALWAYS: &str = "allow-always";
pub const OPT_DENY: &str = "deny";
pub const OPT_FS_SESSION: &str = "allow-session";
pub const OPT_FS_ALWAYS: &str = "allow-always-root";

/// Cards tracked at once.
pub const MAX_GATES: usize = 2_000;

/// The reason the model reads when the human denies without typing one.
pub const DEFAULT_DENY: &str = "Denied by the operator in switchboard.";

/// The environment marker on a card whose arguments are only the redacted excerpt: the card
/// lists it, and a request that sets a non-allowlisted variable is never allowed by a rule,
/// so no allow rule matches an excerpt alone.
pub const EXCERPT_MARKER: &str = "III_ARGUMENTS_ARE_A_REDACTED_EXCERPT";

pub type Key = (String, String);

/// Where a decision stands between our calls.
#[derive(Clone, Debug, PartialEq)]
enum Answer {
    /// `approve-always` sent; `resolve` follows its result.
    Always,
    /// `resolve` sent.
    Resolving { allow: bool },
}

#[derive(Clone, Debug)]
pub struct GateRec {
    pub id: String,
    version: u32,
    root: String,
    record: Record,
    rev: String,
    /// Whether the card is open in the UI.
    open: bool,
    /// The card shows the full arguments (not the excerpt).
    full: bool,
    answered: Option<Answer>,
    /// Our observation order when last confirmed (listing withdrawals skip newer ones).
    seen: u64,
    /// When the card says the call was held: kept when the same record's card is upgraded or
    /// put back, so it keeps its place in the inbox even without a usable `pending_at`.
    opened: u64,
}

#[derive(Clone, Debug, Default)]
pub struct Gates {
    by_key: HashMap<Key, GateRec>,
    by_id: HashMap<String, Key>,
    /// Held calls resolved (by us or elsewhere): our observation number then, and the
    /// record's revision. A listing the gate took before that, delivered after, must not
    /// bring the card back; nor may a late duplicate of its `pending-created`.
    resolved: HashMap<Key, (u64, String)>,
    resolved_order: std::collections::VecDeque<Key>,
}

/// Resolved calls remembered (the oldest forgotten first).
const RESOLVED_KEPT: usize = 10_000;

impl Gates {
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    fn remove(&mut self, key: &Key) -> Option<GateRec> {
        let rec = self.by_key.remove(key)?;
        self.by_id.remove(&rec.id);
        Some(rec)
    }

    /// `key` was resolved at observation `seq` (its record's revision `rev`, if known).
    fn resolved_at(&mut self, key: &Key, seq: u64, rev: String) {
        if let Some(known) = self.resolved.get_mut(key) {
            // Resolved twice (our result and the gate's event): the record is the one known.
            known.0 = known.0.max(seq);
            if !rev.is_empty() {
                known.1 = rev;
            }
            return;
        }
        self.resolved.insert(key.clone(), (seq, rev));
        self.resolved_order.push_back(key.clone());
        if self.resolved_order.len() > RESOLVED_KEPT
            && let Some(old) = self.resolved_order.pop_front()
        {
            self.resolved.remove(&old);
        }
    }

    /// Whether `key` was resolved after observation `seq` (a listing begun then is stale
    /// about it).
    fn resolved_since(&self, key: &Key, seq: u64) -> bool {
        self.resolved.get(key).is_some_and(|(at, _)| *at > seq)
    }

    /// Whether this record is the one already resolved (a late duplicate event).
    fn resolved_record(&self, key: &Key, rev: &str) -> bool {
        // An empty revision: resolved before we saw its record (unordered delivery), so any
        // copy of it is the one resolved.
        self.resolved
            .get(key)
            .is_some_and(|(_, r)| r.is_empty() || r == rev)
    }
}

/// One `approval::list-pending` listing over all its pages.
#[derive(Clone, Debug, Default)]
pub struct Listing {
    started: u64,
    seen: HashSet<Key>,
}

/// The scope of a listing request: one session, or all.
pub fn scope_of(request: &Value) -> String {
    id_field(request, "session_id").unwrap_or("*").to_string()
}

impl Mapper {
    /// Begin a listing of held calls (all pages), for one session or all.
    pub(super) fn start_listing(&mut self, out: &mut Out, session: Option<&str>) {
        let Some(g) = self.generation() else {
            // No gate we speak: nothing to list (the warning says so).
            return;
        };
        let mut req = json!({"limit": PAGE});
        if let Some(s) = session {
            req["session_id"] = json!(s);
        }
        let scope = scope_of(&req);
        let started = self.next_seq();
        self.listings.insert(
            scope.clone(),
            Listing {
                started,
                seen: HashSet::new(),
            },
        );
        self.pages.remove(&format!("pending:{scope}"));
        self.read(out, g.list_pending(), req);
    }

    pub(super) fn list_pending(
        &mut self,
        request: &Value,
        result: &Value,
        now_ms: u64,
        out: &mut Out,
    ) {
        let scope = scope_of(request);
        if request.field("cursor").is_none() && !self.listings.contains_key(&scope) {
            // A first page we did not start ourselves (a retried read): still a listing.
            let started = self.next_seq();
            self.listings.insert(
                scope.clone(),
                Listing {
                    started,
                    seen: HashSet::new(),
                },
            );
        }
        let Some(pending) = result.field("pending").and_then(Value::as_array) else {
            self.listings.remove(&scope);
            self.report(
                id_field(request, "session_id"),
                Level::Warn,
                "approval::list-pending result without a `pending` list ignored".into(),
                out,
            );
            return;
        };
        for v in pending {
            match decode_record(v) {
                Ok(r) => {
                    if scope != "*" && r.session != scope {
                        continue;
                    }
                    let key = (r.session.clone(), r.call.clone());
                    let started = self.listings.get(&scope).map_or(0, |l| l.started);
                    if self.gates.resolved_since(&key, started) {
                        // Taken before the call was resolved, delivered after: stale.
                        continue;
                    }
                    self.upsert_record(r, now_ms, out);
                    if let Some(l) = self.listings.get_mut(&scope) {
                        l.seen.insert(key);
                    }
                }
                Err(e) => self.report(None, Level::Warn, e, out),
            }
        }
        if let Some(cursor) = id_field(result, "next_cursor") {
            if self.count_page(&format!("pending:{scope}")) < MAX_PAGES {
                let next = j::with_cursor(request, cursor);
                let f = self.generation().unwrap_or_default().list_pending();
                self.read(out, f, next);
                return;
            }
            // Endless pages: an incomplete listing proves nothing.
            self.listings.remove(&scope);
            self.report(
                None,
                Level::Warn,
                format!("approval::list-pending: more than {MAX_PAGES} pages; stopped"),
                out,
            );
            return;
        }
        let Some(listing) = self.listings.remove(&scope) else {
            return;
        };
        // Complete: every card in scope whose record was not listed is gone.
        let gone: Vec<Key> = self
            .gates
            .by_key
            .iter()
            .filter(|(k, g)| {
                (scope == "*" || k.0 == scope)
                    && !listing.seen.contains(*k)
                    && g.seen < listing.started
                    && g.answered.is_none()
            })
            .map(|(k, _)| k.clone())
            .collect();
        for k in gone {
            if let Some(g) = self.gates.remove(&k)
                && g.open
            {
                out.ev(&g.root, BackendEvent::GateWithdrawn { id: g.id });
            }
        }
        self.watch_listed(&scope, &listing.seen, out);
    }

    pub(super) fn pending_created(&mut self, p: &Value, now_ms: u64, out: &mut Out) {
        match decode_record(p) {
            // Delivery is at-least-once: a copy of a record already resolved opens nothing.
            Ok(r)
                if self
                    .gates
                    .resolved_record(&(r.session.clone(), r.call.clone()), &r.revision()) => {}
            Ok(r) => self.upsert_record(r, now_ms, out),
            Err(e) => self.report(id_field(p, "session_id"), Level::Warn, e, out),
        }
    }

    fn upsert_record(&mut self, r: Record, now_ms: u64, out: &mut Out) {
        let seen = self.next_seq();
        let Some(root) =
            self.ensure_session(&r.session, r.parent.as_deref(), r.title.as_deref(), out)
        else {
            return;
        };
        let key = (r.session.clone(), r.call.clone());
        self.unwatch(&key);
        let rev = r.revision();
        let full = self.full_args(&r);
        if let Some(g) = self.gates.by_key.get_mut(&key) {
            g.seen = seen;
            let same = g.rev == rev;
            if same && (g.open || g.answered.is_some()) {
                return;
            }
            if g.open {
                out.ev(&g.root, BackendEvent::GateWithdrawn { id: g.id.clone() });
            }
            // Changed (or back after a `resolved:false` refresh): a new card.
            let version = g.version + 1;
            let old = g.id.clone();
            self.gates.by_id.remove(&old);
            self.open_card(root, r, rev, version, full, seen, now_ms, out, None);
            return;
        }
        if self.gates.len() >= MAX_GATES {
            out.protocol(
                &root,
                Level::Warn,
                format!("more than {MAX_GATES} held calls: the rest are not shown"),
            );
            return;
        }
        self.open_card(root, r, rev, 1, full, seen, now_ms, out, None);
    }

    fn full_args(&self, r: &Record) -> Option<Value> {
        let call = self.sessions.get(&r.session)?.msgs.calls.get(&r.call)?;
        let (f, args) = &**call;
        // Written by `render` from a `Value`: it reads back.
        (*f == r.function_id)
            .then(|| serde_json::from_str(args).ok())
            .flatten()
    }

    #[allow(clippy::too_many_arguments)]
    fn open_card(
        &mut self,
        root: String,
        r: Record,
        rev: String,
        version: u32,
        full: Option<Value>,
        seen: u64,
        now_ms: u64,
        out: &mut Out,
        upgrades: Option<String>,
    ) {
        let id = gate_id(&r, version);
        let title = self
            .sessions
            .get(&r.session)
            .map(|s| s.title.clone())
            .unwrap_or_else(|| j::title(Some(&r.session), ""));
        let gate = card(&id, &root, &r, full.as_ref(), &title, now_ms);
        let opened = gate.opened_ms;
        let key = (r.session.clone(), r.call.clone());
        self.gates.by_id.insert(id.clone(), key.clone());
        self.gates.by_key.insert(
            key,
            GateRec {
                id,
                version,
                root: root.clone(),
                record: r,
                rev,
                open: true,
                full: full.is_some(),
                answered: None,
                seen,
                opened,
            },
        );
        let ev = match upgrades {
            Some(old) => BackendEvent::GateUpgraded {
                old,
                gate: Box::new(gate),
            },
            None => BackendEvent::GateOpen(Box::new(gate)),
        };
        out.ev(&root, ev);
    }

    /// Cards of `session` showing only the excerpt get the full arguments once the
    /// transcript has them.
    pub(super) fn upgrade_gates(&mut self, session: &str, out: &mut Out) {
        let keys: Vec<Key> = self
            .gates
            .by_key
            .iter()
            .filter(|(k, g)| k.0 == session && g.open && !g.full && g.record.fs.is_none())
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            let Some(g) = self.gates.by_key.get(&k) else {
                continue;
            };
            let Some(full) = self.full_args(&g.record) else {
                continue;
            };
            let Some(g) = self.gates.remove(&k) else {
                continue;
            };
            // Nothing was withdrawn: the same held call, now with its full arguments, keeps
            // its place in the inbox (issue 22 item 6, issue 23 item 4).
            let seen = g.seen;
            // "Now" as it was when the card first opened: the same opening time.
            self.open_card(
                g.root,
                g.record,
                g.rev,
                g.version + 1,
                Some(full),
                seen,
                g.opened,
                out,
                Some(g.id),
            );
        }
    }

    pub(super) fn pending_resolved(&mut self, p: &Value, now_ms: u64, out: &mut Out) {
        let (Some(session), Some(call)) =
            (id_field(p, "session_id"), id_field(p, "function_call_id"))
        else {
            self.report(
                None,
                Level::Warn,
                "approval::pending-resolved without session_id/function_call_id".into(),
                out,
            );
            return;
        };
        let key = (session.to_string(), call.to_string());
        let outcome = str_field(p, "outcome").unwrap_or("");
        if outcome == "allow" {
            let f = str_field(p, "function_id").unwrap_or("").to_string();
            self.watch_start(&key, &f, now_ms);
        }
        let seq = self.next_seq();
        let rev = self.gates.by_key.get(&key).map(|g| g.rev.clone());
        self.gates.resolved_at(&key, seq, rev.unwrap_or_default());
        let Some(g) = self.gates.remove(&key) else {
            return;
        };
        if !g.open {
            return;
        }
        // Decided elsewhere (another console, a rule in the gate, a timeout).
        let reason = str_field(p, "reason").map(|r| j::clip(r, 2000));
        let ev = match outcome {
            "allow" => BackendEvent::GateClosed {
                id: g.id,
                decision: Decision::Allow {
                    updated_input: None,
                    always: false,
                },
            },
            "deny" => BackendEvent::GateClosed {
                id: g.id,
                decision: Decision::Deny {
                    message: reason.unwrap_or_else(|| "denied elsewhere".into()),
                    interrupt: false,
                },
            },
            _ => BackendEvent::GateWithdrawn { id: g.id },
        };
        out.ev(&g.root, ev);
    }

    /// Whether a card is open for this held call (tests, #797 checks).
    pub fn gate_open(&self, session: &str, call: &str) -> Option<&str> {
        self.gates
            .by_key
            .get(&(session.to_string(), call.to_string()))
            .filter(|g| g.open)
            .map(|g| g.id.as_str())
    }

    /// The held call (session, call id) that card `id` is for, while it is tracked.
    pub fn gate_call(&self, id: &str) -> Option<&Key> {
        self.gates.by_id.get(id)
    }

    /// Held calls still tracked (open or being decided).
    pub fn gate_count(&self) -> usize {
        self.gates.len()
    }
}
