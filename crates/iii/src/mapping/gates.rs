//! Held calls: approval-gate records as permission cards, and the human's decisions back.
//!
//! Card identity is `(session_id, function_call_id)`; a record whose revision
//! `(pending_at, function_id, kind, access request)` changes replaces its card (a generic
//! approval can become a filesystem-access one with the same call id). A record that vanished
//! from a complete listing closes its card as withdrawn, never answered. Decisions go through
//! `approval::resolve` only: never `harness::function::resolve`, the gate's private channel.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use super::json::{self as j, id_field, str_field, u64_field};
use super::{MAX_PAGES, Mapper, Out, PAGE, node_key};
use switchboard_core::gate::{Decision, Gate, GateKind, PermOption, Permission};
use switchboard_core::msg::BackendEvent;
use switchboard_core::text::pretty_json;
use switchboard_core::transcript::Level;

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

/// A filesystem-access request (either spelling).
#[derive(Clone, Debug, PartialEq)]
pub struct FsAccess {
    pub root: String,
    pub path: String,
    pub code: String,
}

/// A decoded `PendingApprovalRecord`.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub session: String,
    pub turn: String,
    pub call: String,
    pub function_id: String,
    /// The kind word as sent (`function` when absent).
    pub kind: String,
    pub fs: Option<FsAccess>,
    pub pending_at: u64,
    pub excerpt: Option<String>,
    pub depth: u64,
    pub title: Option<String>,
    pub parent: Option<String>,
}

impl Record {
    fn revision(&self) -> String {
        format!(
            "{}|{}|{}|{:?}",
            self.pending_at,
            self.function_id,
            if self.fs.is_some() { "fs" } else { "fn" },
            self.fs
        )
    }
}

/// Decode a record, tolerating both schema spellings; `Err` names what is missing.
pub fn decode_record(v: &Value) -> Result<Record, String> {
    if !v.is_object() {
        return Err("approval record is not an object".into());
    }
    let need = |k: &str| {
        id_field(v, k)
            .map(str::to_string)
            .ok_or_else(|| format!("approval record without a valid `{k}`"))
    };
    let session = need("session_id")?;
    let call = need("function_call_id")?;
    let function_id = need("function_id")?;
    let turn = id_field(v, "turn_id").unwrap_or("").to_string();
    let kind = match v.get("kind") {
        None | Some(Value::Null) => "function".to_string(),
        Some(Value::String(k)) => j::clip(k, 64),
        Some(_) => return Err("approval record `kind` is not a string".into()),
    };
    let fs = match kind.as_str() {
        "filesystem_access" | "folder_access" => {
            let (req, root_k, path_k) = match v.get("access_request").filter(|a| a.is_object()) {
                Some(a) => (Some(a), "requested_root", "attempted_path"),
                None => (
                    v.get("grant_request").filter(|a| a.is_object()),
                    "dir",
                    "offending_path",
                ),
            };
            let get = |k: &str| {
                req.and_then(|r| str_field(r, k))
                    .map(|s| j::clip(s, 4096))
                    .unwrap_or_default()
            };
            Some(FsAccess {
                root: get(root_k),
                path: get(path_k),
                code: get("error_code"),
            })
        }
        _ => None,
    };
    Ok(Record {
        session,
        turn,
        call,
        function_id,
        kind,
        fs,
        pending_at: u64_field(v, "pending_at").unwrap_or(0),
        excerpt: v.get("arguments_excerpt").map(|e| match e {
            Value::String(s) => j::clip(s, j::MAX_TEXT),
            other => j::compact(other),
        }),
        depth: u64_field(v, "depth").unwrap_or(0),
        title: str_field(v, "session_title").map(|t| j::clip(t, 200)),
        parent: v
            .get("session_metadata")
            .and_then(|m| id_field(m, "parent_session_id"))
            .map(str::to_string),
    })
}

/// What a decision asks of the gate.
#[derive(Clone, Debug, PartialEq)]
pub enum Act {
    Allow {
        always: bool,
        duration: Option<&'static str>,
    },
    Deny(String),
    /// Send nothing: the call stays held (durable; another console may answer it).
    Hold,
    Unsupported,
}

pub fn act_of(d: &Decision, fs: bool) -> Act {
    let once = fs.then_some("once");
    match d {
        Decision::Option { option_id, .. } => match option_id.as_str() {
            OPT_ALLOW_ONCE => Act::Allow {
                always: false,
                duration: once,
            },
            OPT_ALLOW_ALWAYS if !fs => Act::Allow {
                always: true,
                duration: None,
            },
            OPT_FS_SESSION if fs => Act::Allow {
                always: false,
                duration: Some("session"),
            },
            OPT_FS_ALWAYS if fs => Act::Allow {
                always: false,
                duration: Some("always"),
            },
            OPT_DENY => Act::Deny(DEFAULT_DENY.into()),
            _ => Act::Unsupported,
        },
        Decision::Allow {
            updated_input: None,
            always,
        } => Act::Allow {
            always: *always && !fs,
            // A standing filesystem grant is the session's, never the host's.
            duration: if fs && *always { Some("session") } else { once },
        },
        Decision::Deny { message, .. } => Act::Deny(if message.trim().is_empty() {
            DEFAULT_DENY.into()
        } else {
            message.clone()
        }),
        Decision::Cancelled => Act::Hold,
        _ => Act::Unsupported,
    }
}

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

/// Exec-like functions: their argument is a shell line for the chaining guard.
fn command_of(function_id: &str, args: &Value) -> Option<String> {
    if let Some(c) = ["command", "cmd", "script"]
        .iter()
        .find_map(|k| str_field(args, k))
    {
        return Some(c.to_string());
    }
    let exec_like = {
        let f = function_id.to_ascii_lowercase();
        ["exec", "shell", "bash", "terminal", "run_command", "spawn"]
            .iter()
            .any(|w| f.contains(w))
    };
    let argv = ["argv", "args"]
        .iter()
        .find_map(|k| args.get(*k)?.as_array())?;
    if !exec_like {
        return None;
    }
    let words: Vec<String> = argv
        .iter()
        .map(|w| match w.as_str() {
            Some(s)
                if !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c)) =>
            {
                s.to_string()
            }
            Some(s) => format!("'{}'", s.replace('\'', "'\\''")),
            None => w.to_string(),
        })
        .collect();
    Some(words.join(" "))
}

fn is_exec(function_id: &str) -> bool {
    let f = function_id.to_ascii_lowercase();
    ["exec", "shell", "bash", "terminal", "run_command", "spawn"]
        .iter()
        .any(|w| f.contains(w))
}

fn options(fs: bool) -> Vec<PermOption> {
    let o = |id: &str, name: &str, kind: &str| PermOption {
        option_id: id.into(),
        name: name.into(),
        kind: kind.into(),
    };
    if fs {
        vec![
            o(OPT_ALLOW_ONCE, "Allow once", "allow_once"),
            o(OPT_FS_SESSION, "Allow for this session", "allow_session"),
            o(
                OPT_FS_ALWAYS,
                "Allow always (persist the root)",
                "allow_always",
            ),
            o(OPT_DENY, "Deny", "reject_once"),
        ]
    } else {
        vec![
            o(OPT_ALLOW_ONCE, "Allow once", "allow_once"),
            o(OPT_ALLOW_ALWAYS, "Allow always", "allow_always"),
            o(OPT_DENY, "Deny", "reject_once"),
        ]
    }
}

/// The card for a record: full arguments when the transcript had them, else the excerpt.
fn card(id: &str, root: &str, r: &Record, full: Option<&Value>, title: &str, now_ms: u64) -> Gate {
    let exec = is_exec(&r.function_id);
    let (summary, rule_arg, input, description, command, env, shell, blocked) = match (&r.fs, full)
    {
        (Some(fs), _) => (
            format!("access {} (tried {}, {})", fs.root, fs.path, fs.code),
            fs.root.clone(),
            pretty_json(
                &json!({"requested_root": fs.root, "attempted_path": fs.path, "error_code": fs.code}),
            ),
            Some(format!(
                "filesystem access for {} (record kind `{}`)",
                r.function_id, r.kind
            )),
            None,
            Vec::new(),
            false,
            Some(fs.path.clone()),
        ),
        (None, Some(args)) => {
            let command = command_of(&r.function_id, args);
            let shell = exec || command.is_some();
            let compact = j::compact(args);
            (
                switchboard_core::gate::command_summary(
                    &command.clone().unwrap_or_else(|| compact.clone()),
                ),
                command.clone().unwrap_or(compact),
                j::clip(&pretty_json(args), j::MAX_TEXT),
                None,
                command,
                Vec::new(),
                shell,
                None,
            )
        }
        (None, None) => {
            let excerpt = r.excerpt.clone().unwrap_or_default();
            (
                format!("excerpt: {}", switchboard_core::text::one_line(&excerpt, 160)),
                format!("excerpt: {excerpt}"),
                excerpt,
                Some(
                    "arguments excerpt (redacted by the approval gate): the full arguments are not known; rules never allow on an excerpt"
                        .into(),
                ),
                None,
                vec![(
                    EXCERPT_MARKER.to_string(),
                    "the card shows a redacted excerpt, not the full arguments".to_string(),
                )],
                exec,
                None,
            )
        }
    };
    let allow = match r.fs {
        Some(_) if r.kind == "folder_access" => {
            json!({"session_id": r.session, "function_call_id": r.call, "decision": "allow", "grant_scope": "once"})
        }
        Some(_) => {
            json!({"session_id": r.session, "function_call_id": r.call, "decision": "allow", "access_duration": "once"})
        }
        None => json!({"session_id": r.session, "function_call_id": r.call, "decision": "allow"}),
    };
    let opened = if r.pending_at > 0 && r.pending_at <= now_ms {
        r.pending_at
    } else {
        now_ms
    };
    Gate {
        id: id.to_string(),
        node_key: node_key(root, &r.session),
        asked_by: Some(if r.depth > 0 {
            format!("{title} (sub-agent, depth {})", r.depth)
        } else {
            title.to_string()
        }),
        kind: GateKind::Permission(Permission {
            tool: r.function_id.clone(),
            summary,
            rule_arg,
            input,
            title: Some(format!("iii session {title} · call {}", r.call)),
            description,
            decision_reason: None,
            blocked_path: blocked,
            suggestions: Vec::new(),
            always_allowed: false,
            default_to_no: false,
            diff: None,
            options: options(r.fs.is_some()),
            shell,
            command,
            env,
            covered_by: None,
            // `approval::resolve` carries a `reason` the model reads: the deny asks for it.
            deny_reason: Some(DEFAULT_DENY.into()),
            editable: false,
            environment: Vec::new(),
        }),
        opened_ms: opened,
        default_reply: pretty_json(&allow),
        reply_definition: "",
    }
}

fn gate_id(r: &Record, version: u32) -> String {
    if version <= 1 {
        format!("iii:{}:{}", r.session, r.call)
    } else {
        format!("iii:{}:{}#{version}", r.session, r.call)
    }
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
        if request.get("cursor").is_none() && !self.listings.contains_key(&scope) {
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
        let Some(pending) = result.get("pending").and_then(Value::as_array) else {
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
        let (f, args) = self.sessions.get(&r.session)?.msgs.calls.get(&r.call)?;
        (*f == r.function_id).then(|| args.clone())
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

    /// The human's decision on a card.
    pub(super) fn answer(&mut self, gate_id: &str, decision: &Decision, out: &mut Out) {
        let Some(key) = self.gates.by_id.get(gate_id).cloned() else {
            self.report(
                None,
                Level::Warn,
                format!(
                    "card {} is no longer held: nothing sent",
                    j::title(Some(gate_id), "")
                ),
                out,
            );
            return;
        };
        let Some(g) = self.gates.by_key.get_mut(&key) else {
            return;
        };
        if g.answered.is_some() || !g.open {
            return;
        }
        let root = g.root.clone();
        let fs = g.record.fs.is_some();
        let act = act_of(decision, fs);
        let and_stop = matches!(
            decision,
            Decision::Deny {
                interrupt: true,
                ..
            }
        );
        g.open = false;
        match act {
            Act::Hold => {
                out.protocol(
                    &root,
                    Level::Info,
                    format!(
                        "held call {} left held: it is durable and another console may answer it",
                        g.record.call
                    ),
                );
                return;
            }
            Act::Unsupported => {
                out.protocol(&root, Level::Warn, "that answer does not apply to an iii held call: nothing sent, the card is back");
                self.reopen(&key, out);
                return;
            }
            _ if !self.online => {
                out.protocol(
                    &root,
                    Level::Warn,
                    "offline: the decision was not sent; the card is back",
                );
                self.reopen(&key, out);
                return;
            }
            _ => {}
        }
        let Some(g) = self.gates.by_key.get_mut(&key) else {
            return;
        };
        let (session, call, f) = (
            g.record.session.clone(),
            g.record.call.clone(),
            g.record.function_id.clone(),
        );
        match act {
            Act::Allow { always: true, .. } => {
                g.answered = Some(Answer::Always);
                let f_always = self.generation().unwrap_or_default().approve_always();
                out.calls.push(super::OutCall {
                    function_id: f_always.into(),
                    payload: json!({"session_id": session, "function_id": f}),
                    retry_safe: true,
                });
            }
            Act::Allow { duration, .. } => {
                g.answered = Some(Answer::Resolving { allow: true });
                let mut p =
                    json!({"session_id": session, "function_call_id": call, "decision": "allow"});
                if let Some(d) = duration {
                    // The `folder_access` records' gate took `grant_scope`; the
                    // `filesystem_access` ones' takes `access_duration` (same words).
                    let field = if g.record.kind == "folder_access" {
                        "grant_scope"
                    } else {
                        "access_duration"
                    };
                    p[field] = json!(d);
                }
                out.calls.push(super::OutCall {
                    function_id: "approval::resolve".into(),
                    payload: p,
                    retry_safe: true,
                });
            }
            Act::Deny(reason) => {
                g.answered = Some(Answer::Resolving { allow: false });
                out.calls.push(super::OutCall {
                    function_id: "approval::resolve".into(),
                    payload: json!({"session_id": session, "function_call_id": call, "decision": "deny", "reason": reason}),
                    retry_safe: true,
                });
                if and_stop {
                    // "Deny & stop": the model reads the reason, then the turn is stopped.
                    let root = self.gates.by_key.get(&key).map(|g| g.root.clone());
                    if let Some(root) = root {
                        self.stop(&root, out);
                    }
                }
            }
            Act::Hold | Act::Unsupported => {}
        }
    }

    /// Put a card back (a new id: the UI closed the old one).
    fn reopen(&mut self, key: &Key, out: &mut Out) {
        let Some(g) = self.gates.remove(key) else {
            return;
        };
        let full = self.full_args(&g.record);
        self.open_card(
            g.root,
            g.record,
            g.rev,
            g.version + 1,
            full,
            g.seen,
            g.opened,
            out,
            None,
        );
    }

    pub(super) fn approve_always_result(&mut self, request: &Value, out: &mut Out) {
        let (Some(session), Some(f)) = (
            id_field(request, "session_id"),
            id_field(request, "function_id"),
        ) else {
            return;
        };
        // The standing approval is recorded: now release the held call(s) it was for.
        let mut keys: Vec<Key> = self
            .gates
            .by_key
            .iter()
            .filter(|(k, g)| {
                k.0 == session && g.record.function_id == f && g.answered == Some(Answer::Always)
            })
            .map(|(k, _)| k.clone())
            .collect();
        keys.sort();
        for k in keys {
            if let Some(g) = self.gates.by_key.get_mut(&k) {
                g.answered = Some(Answer::Resolving { allow: true });
            }
            out.calls.push(super::OutCall {
                function_id: "approval::resolve".into(),
                payload: json!({"session_id": k.0, "function_call_id": k.1, "decision": "allow"}),
                retry_safe: true,
            });
        }
    }

    pub(super) fn resolve_result(
        &mut self,
        request: &Value,
        result: &Value,
        now_ms: u64,
        out: &mut Out,
    ) {
        let (Some(session), Some(call)) = (
            id_field(request, "session_id"),
            id_field(request, "function_call_id"),
        ) else {
            return;
        };
        let key = (session.to_string(), call.to_string());
        let allow = str_field(request, "decision") == Some("allow");
        match result.get("resolved").and_then(Value::as_bool) {
            Some(true) => {
                let seq = self.next_seq();
                let rev = self.gates.by_key.get(&key).map(|g| g.rev.clone());
                self.gates.resolved_at(&key, seq, rev.unwrap_or_default());
                let f = self
                    .gates
                    .remove(&key)
                    .map(|g| g.record.function_id)
                    .unwrap_or_default();
                if allow {
                    self.watch_start(&key, &f, now_ms);
                }
            }
            other => {
                if other.is_none() {
                    self.report(
                        Some(session),
                        Level::Warn,
                        "approval::resolve result without `resolved`: re-reading".into(),
                        out,
                    );
                }
                // Unknown or already decided (a race with another console): refresh quietly;
                // the listing shows the card again if the call is still held.
                if let Some(g) = self.gates.by_key.get_mut(&key) {
                    g.answered = None;
                    g.open = false;
                }
                self.start_listing(out, Some(session));
            }
        }
    }

    pub(super) fn decision_failed(&mut self, request: &Value, what: &str, out: &mut Out) {
        let Some(session) = id_field(request, "session_id") else {
            return;
        };
        let keys: Vec<Key> = match id_field(request, "function_call_id") {
            Some(c) => vec![(session.to_string(), c.to_string())],
            None => {
                let f = id_field(request, "function_id").unwrap_or("");
                self.gates
                    .by_key
                    .iter()
                    .filter(|(k, g)| {
                        k.0 == session
                            && g.record.function_id == f
                            && g.answered == Some(Answer::Always)
                    })
                    .map(|(k, _)| k.clone())
                    .collect()
            }
        };
        self.report(
            Some(session),
            Level::Error,
            format!("{what}: the decision was not applied; the card is back"),
            out,
        );
        for k in keys {
            if let Some(g) = self.gates.by_key.get_mut(&k) {
                g.answered = None;
                g.open = false;
            }
            self.reopen(&k, out);
        }
    }

    /// Whether a card is open for this held call (tests, #797 checks).
    pub fn gate_open(&self, session: &str, call: &str) -> Option<&str> {
        self.gates
            .by_key
            .get(&(session.to_string(), call.to_string()))
            .filter(|g| g.open)
            .map(|g| g.id.as_str())
    }

    /// Held calls still tracked (open or being decided).
    pub fn gate_count(&self) -> usize {
        self.gates.len()
    }
}
