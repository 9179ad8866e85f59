//! Sessions: the list, each root's tree of sub-agents, turn status and metrics.

use serde_json::{Value, json};

use super::json::{self as j, array, bool_field, id_field, str_field, u64_field};
use super::{MAX_PAGES, MAX_SESSIONS, Mapper, OpenRoot, Out, Sess, node_key};
use switchboard_core::msg::{
    BackendEvent, QUEUE_SHOWN, QUEUED_TEXT_MAX, Queue, QueuedMessage, SessionPatch, TurnState,
};
use switchboard_core::transcript::Level;
use switchboard_core::tree::{NodePatch, NodeStatus};

/// A session's turn status word as a node status. `completed` with an armed wake is still
/// running: the wake carries the real outcome; `awaiting_functions` waits on held calls.
pub fn node_status(status: &str, expects_wake: bool) -> Option<NodeStatus> {
    Some(match status {
        "running" | "working" => NodeStatus::Running,
        // The turn waits on held calls: it reads so, not "running" (issue 23 item 4).
        "awaiting_functions" => NodeStatus::Waiting,
        "completed" | "done" if expects_wake => NodeStatus::Running,
        "completed" | "done" => NodeStatus::Completed,
        "idle" => NodeStatus::Idle,
        "cancelled" => NodeStatus::Killed,
        "failed" | "error" => NodeStatus::Failed,
        _ => return None,
    })
}

impl Mapper {
    /// Make `session` known. A session with a known parent nests under the parent's root;
    /// one without becomes a root (announced with `OpenRoot` and read). Returns its root, or
    /// `None` past `MAX_SESSIONS`.
    pub(super) fn ensure_session(
        &mut self,
        session: &str,
        parent: Option<&str>,
        title: Option<&str>,
        out: &mut Out,
    ) -> Option<String> {
        if let Some(s) = self.sessions.get(session) {
            return Some(s.root.clone());
        }
        if self.sessions.len() >= MAX_SESSIONS {
            return None;
        }
        let parent = parent.filter(|p| *p != session);
        let root = match parent {
            Some(p) => match self.sessions.get(p) {
                Some(ps) => ps.root.clone(),
                // The parent is unknown too: make it known first (as a root for now).
                None => self.ensure_session(p, None, None, out)?,
            },
            None => session.to_string(),
        };
        self.made += 1;
        self.sessions.insert(
            session.to_string(),
            Sess {
                root: root.clone(),
                parent: parent.map(str::to_string),
                title: j::title(title, session),
                made: self.made,
                ..Sess::default()
            },
        );
        if root == session {
            self.open_root(session, out);
        } else {
            self.open_child(session, out);
        }
        Some(root)
    }

    fn open_root(&mut self, session: &str, out: &mut Out) {
        if !self.roots.insert(session.to_string()) {
            return;
        }
        let title = self
            .sessions
            .get(session)
            .map(|s| s.title.clone())
            .unwrap_or_default();
        out.roots.push(OpenRoot {
            key: session.to_string(),
            title: title.clone(),
        });
        out.ev(
            session,
            BackendEvent::Session(SessionPatch {
                session_id: Some(session.to_string()),
                interruptible: Some(true),
                ..SessionPatch::default()
            }),
        );
        out.info(session, "title", Some(title));
        self.blind_for_new_root(session, out);
        out.info("", "sessions", Some(self.roots.len().to_string()));
        self.read_session(session, true, out);
    }

    fn open_child(&mut self, session: &str, out: &mut Out) {
        let Some(s) = self.sessions.get(session) else {
            return;
        };
        if s.node_open {
            return;
        }
        let root = s.root.clone();
        let parent_key = node_key(&root, s.parent.as_deref().unwrap_or(&root));
        let patch = NodePatch {
            name: Some(s.title.clone()),
            description: Some(format!("iii session {}", j::title(Some(session), ""))),
            ..NodePatch::default()
        };
        if let Some(s) = self.sessions.get_mut(session) {
            s.node_open = true;
        }
        out.ev(
            &root,
            BackendEvent::NodeOpen {
                key: node_key(&root, session),
                parent: Some(parent_key),
                patch,
            },
        );
        self.read_session(session, false, out);
    }

    /// The reads a newly seen session needs: its status and transcript (and, for a root,
    /// its tree and metrics).
    fn read_session(&mut self, session: &str, root: bool, out: &mut Out) {
        let round = self.round;
        match self.sessions.get_mut(session) {
            // Already read this round (a held call named it before the listing did).
            Some(s) if s.read_round == round => return,
            Some(s) => s.read_round = round,
            None => {}
        }
        if root {
            self.read(
                out,
                "harness::session-tree",
                json!({"root_session_id": session}),
            );
            self.read(out, "harness::metrics", json!({"root_session_id": session}));
        }
        self.read(
            out,
            "harness::status",
            json!({"session_id": session, "verbose": true}),
        );
        self.hydrate(session, out);
    }

    pub(super) fn session_list(&mut self, request: &Value, result: &Value, out: &mut Out) {
        for meta in array(result, "sessions") {
            let Some(id) = id_field(meta, "session_id") else {
                continue;
            };
            let parent = meta
                .get("metadata")
                .and_then(|m| id_field(m, "parent_session_id"));
            let known = self.sessions.contains_key(id);
            let title = str_field(meta, "title");
            if self.ensure_session(id, parent, title, out).is_none() {
                self.report(
                    None,
                    Level::Warn,
                    format!("more than {MAX_SESSIONS} sessions: the rest are not shown"),
                    out,
                );
                break;
            }
            if known {
                // A re-read: refresh the title and re-read what may have changed offline.
                self.retitle(id, title, out);
                let is_root = self.roots.contains(id);
                self.read_session(id, is_root, out);
            }
            if let Some(st) = str_field(meta, "status") {
                self.session_status_word(id, st, out);
            }
        }
        if let Some(cursor) = id_field(result, "next_cursor")
            && self.count_page("session::list") < MAX_PAGES
        {
            let next = j::with_cursor(request, cursor);
            self.read(out, "session::list", next);
        }
    }

    pub(super) fn count_page(&mut self, key: &str) -> usize {
        let n = self.pages.entry(key.to_string()).or_insert(0);
        *n += 1;
        *n
    }

    pub(super) fn session_get(&mut self, result: &Value, out: &mut Out) {
        let meta = result.get("meta").unwrap_or(result);
        if let Some(id) = id_field(meta, "session_id") {
            self.retitle(id, str_field(meta, "title"), out);
        }
    }

    fn retitle(&mut self, id: &str, title: Option<&str>, out: &mut Out) {
        let Some(t) = title else { return };
        let Some(s) = self.sessions.get_mut(id) else {
            return;
        };
        let t = j::title(Some(t), id);
        if s.title == t {
            return;
        }
        s.title = t.clone();
        let root = s.root.clone();
        if root == id {
            out.info(&root, "title", Some(t));
        } else {
            out.ev(
                &root,
                BackendEvent::NodeUpdate {
                    key: node_key(&root, id),
                    patch: NodePatch {
                        name: Some(t),
                        ..NodePatch::default()
                    },
                },
            );
        }
    }

    /// `session::list`/`status-changed` words (`idle|working|done|error`) on a child node;
    /// a root's state comes from its turn status.
    fn session_status_word(&mut self, id: &str, word: &str, out: &mut Out) {
        let Some(s) = self.sessions.get(id) else {
            return;
        };
        let root = s.root.clone();
        if root != id {
            if let Some(st) = node_status(word, s.expects_wake) {
                out.ev(
                    &root,
                    BackendEvent::NodeUpdate {
                        key: node_key(&root, id),
                        patch: NodePatch {
                            status: Some(st),
                            ..NodePatch::default()
                        },
                    },
                );
            }
        } else {
            out.info(&root, "session", Some(j::title(Some(word), "?")));
        }
    }

    pub(super) fn session_tree(&mut self, result: &Value, out: &mut Out) {
        let Some(root) = id_field(result, "root_session_id") else {
            return;
        };
        let root = root.to_string();
        if self.ensure_session(&root, None, None, out).is_none() {
            return;
        }
        let mut nodes: Vec<(u64, &str, Option<&str>)> = array(result, "sessions")
            .iter()
            .filter_map(|n| {
                let id = id_field(n, "session_id")?;
                Some((
                    u64_field(n, "depth").unwrap_or(1),
                    id,
                    id_field(n, "parent_session_id"),
                ))
            })
            .filter(|(_, id, _)| *id != root)
            .collect();
        // Parents before children, so every NodeOpen names an open parent.
        nodes.sort_by_key(|(d, _, _)| *d);
        for (_, id, parent) in nodes {
            let parent = parent.unwrap_or(&root);
            if let Some(s) = self.sessions.get(id)
                && s.root == id
                && id != root
            {
                // Listed as a root before its tree was known: say where it belongs.
                out.protocol(
                    id,
                    Level::Info,
                    format!(
                        "this session is a sub-agent of {}",
                        j::title(Some(&root), "")
                    ),
                );
                continue;
            }
            if self.ensure_session(id, Some(parent), None, out).is_none() {
                break;
            }
        }
    }

    pub(super) fn status(&mut self, request: &Value, result: &Value, out: &mut Out) {
        let Some(id) = id_field(result, "session_id").or_else(|| id_field(request, "session_id"))
        else {
            return;
        };
        let id = id.to_string();
        if result.is_null() {
            // No turn ever ran: nothing awaits a call.
            self.watch_status(&id, "", &[], out);
            if let Some(s) = self.sessions.get(&id)
                && s.root == id
            {
                out.info(&id, "turn", Some("no turn yet".into()));
                out.ev(&id, BackendEvent::Queue(Queue::default()));
            }
            return;
        }
        let Some(st) = str_field(result, "status") else {
            self.watch_status(&id, "", &[], out);
            self.report(
                Some(&id),
                Level::Warn,
                "harness::status without a status word".into(),
                out,
            );
            return;
        };
        let expects_wake = bool_field(result, "expects_wake").unwrap_or(false);
        let pending: Vec<String> = array(result, "pending_function_calls")
            .iter()
            .filter_map(|v| v.as_str())
            .filter(|c| c.len() <= super::MAX_ID)
            .take(256)
            .map(str::to_string)
            .collect();
        let Some(root) = self.ensure_session(&id, None, None, out) else {
            return;
        };
        if let Some(s) = self.sessions.get_mut(&id) {
            s.status = Some(st.to_string());
            s.expects_wake = expects_wake;
            s.pending_calls = pending.clone();
        }
        for c in array(result, "children") {
            if let Some(child) = id_field(c, "session_id") {
                self.ensure_session(child, Some(&id), None, out);
            }
        }
        self.watch_status(&id, st, &pending, out);
        let running = node_status(st, expects_wake);
        if root != id {
            if let Some(status) = running {
                out.ev(
                    &root,
                    BackendEvent::NodeUpdate {
                        key: node_key(&root, &id),
                        patch: NodePatch {
                            status: Some(status),
                            ..NodePatch::default()
                        },
                    },
                );
            }
            return;
        }
        let busy = matches!(running, Some(NodeStatus::Running | NodeStatus::Waiting));
        if let Some(s) = self.sessions.get_mut(&id)
            && s.stopping
            && !busy
        {
            // The stop completed while we were not listening (offline).
            s.stopping = false;
            out.info(&root, "stop", None);
        }
        let turn = match running {
            Some(NodeStatus::Waiting) => TurnState::RequiresAction,
            Some(NodeStatus::Running) => TurnState::Running,
            _ => TurnState::Idle,
        };
        out.ev(&root, BackendEvent::Turn(turn));
        out.info(&root, "turn", Some(turn_line(result, st, expects_wake)));
        let calls = if pending.is_empty() {
            None
        } else {
            Some(j::title(Some(&pending.join(", ")), ""))
        };
        out.info(&root, "pending calls", calls);
        out.info(&root, "wakes", wakes_line(result));
        let queue = queue_of(result);
        if let Some(s) = self.sessions.get_mut(&id) {
            s.queued = queue.entries.iter().map(|e| e.entry_id.clone()).collect();
        }
        out.info(&root, "queued", queued_line(&queue));
        out.ev(&root, BackendEvent::Queue(queue));
        out.info(&root, "context", context_line(result));
    }

    pub(super) fn metrics(&mut self, request: &Value, result: &Value, out: &mut Out) {
        let Some(root) =
            id_field(result, "root_session_id").or_else(|| id_field(request, "root_session_id"))
        else {
            return;
        };
        let Some(root) = self.sessions.get(root).map(|s| s.root.clone()) else {
            return;
        };
        let Some(t) = result.get("totals").filter(|t| t.is_object()) else {
            return;
        };
        let n = |k: &str| match t.get(k) {
            Some(v) if v.is_u64() => switchboard_core::text::human_count(v.as_u64().unwrap_or(0)),
            // Null means "not reported by at least one generation", never zero.
            _ => "—".to_string(),
        };
        let cost = match t.get("cost_usd").and_then(Value::as_f64) {
            Some(c) if c.is_finite() => format!("${c:.4}"),
            _ => "—".to_string(),
        };
        let complete = if bool_field(result, "complete") == Some(true) {
            ""
        } else {
            " (in progress)"
        };
        out.info(
            &root,
            "usage",
            Some(format!(
                "in {} · out {} · reasoning {} · cache r/w {}/{} · {} · turns {} · calls {} ({} errors){complete}",
                n("input_tokens"),
                n("output_tokens"),
                n("reasoning_tokens"),
                n("cache_read_tokens"),
                n("cache_write_tokens"),
                cost,
                n("turns"),
                n("function_calls"),
                n("function_call_errors"),
            )),
        );
    }

    pub(super) fn session_created(&mut self, p: &Value, out: &mut Out) {
        let Some(id) = id_field(p, "session_id") else {
            return;
        };
        let parent = p
            .get("metadata")
            .and_then(|m| id_field(m, "parent_session_id"));
        self.ensure_session(id, parent, str_field(p, "title"), out);
    }

    pub(super) fn status_changed(&mut self, p: &Value, out: &mut Out) {
        if let (Some(id), Some(st)) = (id_field(p, "session_id"), str_field(p, "status"))
            && self.sessions.contains_key(id)
        {
            self.session_status_word(id, st, out);
        }
    }

    pub(super) fn meta_updated(&mut self, p: &Value, out: &mut Out) {
        if let Some(id) = id_field(p, "session_id") {
            self.retitle(id, str_field(p, "title"), out);
        }
    }

    pub(super) fn session_deleted(&mut self, p: &Value, out: &mut Out) {
        let Some(id) = id_field(p, "session_id") else {
            return;
        };
        let Some(s) = self.sessions.get(id) else {
            return;
        };
        let root = s.root.clone();
        if root == id {
            out.protocol(&root, Level::Warn, "the iii session was deleted");
            out.ev(&root, BackendEvent::Turn(TurnState::Idle));
        } else {
            out.ev(
                &root,
                BackendEvent::NodeUpdate {
                    key: node_key(&root, id),
                    patch: NodePatch {
                        status: Some(NodeStatus::Killed),
                        description: Some("deleted".into()),
                        ..NodePatch::default()
                    },
                },
            );
        }
    }
}

fn turn_line(r: &Value, st: &str, expects_wake: bool) -> String {
    let mut s = match st {
        "completed" if expects_wake => "running (waiting on a wake)".to_string(),
        "awaiting_functions" => "awaiting function calls".to_string(),
        other => j::title(Some(other), "?"),
    };
    if let Some(step) = u64_field(r, "step") {
        s.push_str(&format!(" · step {step}"));
    }
    if let Some(n) = u64_field(r, "turn_count") {
        s.push_str(&format!(" · turn {n}"));
    }
    if let Some(why) = str_field(r, "stop_reason") {
        s.push_str(&format!(" · stopped: {}", j::title(Some(why), "")));
    }
    s
}

fn wakes_line(r: &Value) -> Option<String> {
    let w = array(r, "armed_wakes");
    if w.is_empty() {
        return None;
    }
    let kinds: Vec<String> = w
        .iter()
        .take(5)
        .map(|x| j::title(str_field(x, "trigger_type"), "wake"))
        .collect();
    Some(format!("{} armed: {}", w.len(), kinds.join(", ")))
}

fn queued_line(q: &Queue) -> Option<String> {
    let first = q.entries.first()?;
    let first = j::title(Some(&first.text), "");
    Some(format!(
        "{} queued: {}",
        q.entries.len() + q.more,
        j::clip(&first, 60)
    ))
}

/// A queued message's text and whether it is the whole message: `message` is a user
/// message (`content` blocks, spec `QueuedMessage.message`), or plain text from older
/// harnesses. Only a message of one text block is whole; others are shown, not editable
/// (an edit replaces the message with text).
fn queued_text(m: &Value) -> (String, bool) {
    let msg = m.get("message");
    let content = msg.and_then(|x| x.get("content"));
    match (msg, content) {
        (Some(Value::String(t)), _) | (_, Some(Value::String(t))) => (t.clone(), true),
        (_, Some(Value::Array(blocks))) => {
            let texts: Vec<&str> = blocks
                .iter()
                .take(64)
                .map(|b| match str_field(b, "type") {
                    Some("text") => str_field(b, "text").unwrap_or(""),
                    Some("image") => "[image]",
                    _ => "[attachment]",
                })
                .collect();
            let whole = blocks.len() == 1 && str_field(&blocks[0], "type") == Some("text");
            (j::clip(&texts.join("\n"), QUEUED_TEXT_MAX + 1), whole)
        }
        _ => (String::new(), false),
    }
}

/// `harness::status.queued` as the core's queue: the first `QUEUE_SHOWN` well-formed
/// entries, neutralized and clipped, the rest counted.
fn queue_of(r: &Value) -> Queue {
    let mut q = Queue::default();
    for m in array(r, "queued") {
        let Some(id) = id_field(m, "entry_id") else {
            continue;
        };
        if q.entries.len() >= QUEUE_SHOWN {
            q.more += 1;
            continue;
        }
        let (raw, whole) = queued_text(m);
        let cut = j::clip(&raw, QUEUED_TEXT_MAX);
        let text = switchboard_core::text::neutralize(&cut).into_owned();
        q.entries.push(QueuedMessage {
            entry_id: id.to_string(),
            exact: whole && text == raw,
            text,
            queued_at: u64_field(m, "queued_at"),
        });
    }
    q
}

fn context_line(r: &Value) -> Option<String> {
    let c = r.get("context")?;
    let total = u64_field(c, "total")?;
    let free = u64_field(c, "free");
    let used = match (u64_field(c, "usable"), free) {
        (Some(usable), Some(f)) => usable.saturating_sub(f),
        (None, Some(f)) => total.saturating_sub(f),
        _ => {
            return Some(format!(
                "? / {}",
                switchboard_core::text::human_count(total)
            ));
        }
    };
    let pct = used.saturating_mul(100).checked_div(total).unwrap_or(0);
    Some(format!(
        "{} / {} ({pct}%)",
        switchboard_core::text::human_count(used),
        switchboard_core::text::human_count(total)
    ))
}
