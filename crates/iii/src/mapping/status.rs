//! A session's turn status and its root's metrics: `harness::status` and
//! `harness::metrics` read into the turn state, the status lines and the queue.

use super::json::Field;
use serde_json::Value;

use super::json::{self as j, array, bool_field, id_field, str_field, u64_field};
use super::sessions::node_status;
use super::{Mapper, Out, node_key};
use switchboard_core::msg::{
    BackendEvent, QUEUE_SHOWN, QUEUED_TEXT_MAX, Queue, QueuedMessage, TurnState,
};
use switchboard_core::transcript::Level;
use switchboard_core::tree::{NodePatch, NodeStatus};

impl Mapper {
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
        let Some(t) = result.field("totals").filter(|t| t.is_object()) else {
            return;
        };
        let n = |k: &str| match t.field(k) {
            Some(v) if v.is_u64() => switchboard_core::text::human_count(v.as_u64().unwrap_or(0)),
            // Null means "not reported by at least one generation", never zero.
            _ => "—".to_string(),
        };
        let cost = match t.field("cost_usd").and_then(Value::as_f64) {
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
    let msg = m.field("message");
    let content = msg.and_then(|x| x.field("content"));
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
    let c = r.field("context")?;
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
