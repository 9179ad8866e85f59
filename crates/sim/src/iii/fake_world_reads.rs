//! The world's reads: the functions it offers, the session list, messages, a root's tree,
//! a turn's status, metrics, and the held calls, paged like the real workers'.

use serde_json::{Value, json};

use super::{ErrorBody, Session, World, bad, page, str_of};
use switchboard_record::now_ms;

impl World {
    pub(super) fn functions(&self) -> Value {
        let ids = [
            "session::list",
            "session::get",
            "session::messages",
            "session::get_message",
            "harness::session-tree",
            "harness::status",
            "harness::metrics",
            "harness::send",
            "harness::stop",
            "harness::edit_queued",
            "harness::unqueue",
        ];
        let worker = |id: &str| match id.split("::").next() {
            Some("session") => "session-manager",
            Some("approval") => "approval-gate",
            _ => "harness",
        };
        let all = ids.iter().copied().chain(self.gate.functions());
        json!({"functions": all.map(|i| json!({"function_id": i, "worker_name": worker(i)})).collect::<Vec<_>>()})
    }

    pub(super) fn list(&self, data: &Value) -> Value {
        let mut all: Vec<&Session> = self.sessions.iter().collect();
        match data.get("order").and_then(Value::as_str) {
            Some("created_asc") => all.sort_by_key(|s| s.created_at),
            Some("created_desc") => all.sort_by_key(|s| std::cmp::Reverse(s.created_at)),
            _ => all.sort_by_key(|s| std::cmp::Reverse(s.updated_at)),
        }
        let (a, b, next) = page(data, all.len());
        let mut out = json!({"sessions": all[a..b].iter().map(|s| s.meta()).collect::<Vec<_>>()});
        if let Some(n) = next {
            out["next_cursor"] = json!(n);
        }
        out
    }

    pub(super) fn messages(&self, data: &Value) -> Value {
        let Some(s) = self.session(data.get("session_id").and_then(Value::as_str).unwrap_or(""))
        else {
            return Value::Null;
        };
        let (a, b, next) = page(data, s.entries.len());
        let mut out = json!({"messages": s.entries[a..b].iter()
            .map(|e| json!({"entry_id": e.entry_id, "message": e.message}))
            .collect::<Vec<_>>()});
        if let Some(n) = next {
            out["next_cursor"] = json!(n);
        }
        out
    }

    pub(super) fn get_message(&self, data: &Value) -> Value {
        let id = data.get("entry_id").and_then(Value::as_str).unwrap_or("");
        self.session(data.get("session_id").and_then(Value::as_str).unwrap_or(""))
            .and_then(|s| s.entries.iter().find(|e| e.entry_id == id))
            .map_or(Value::Null, |e| {
                json!({"entry": {"entry_id": e.entry_id, "parent_id": e.parent_id,
                                 "message": e.message, "revision": e.revision}})
            })
    }

    fn root_of(&self, id: &str) -> Option<String> {
        let mut cur = self.session(id)?;
        while let Some(p) = cur.parent.as_deref().and_then(|p| self.session(p)) {
            cur = p;
        }
        Some(cur.id.clone())
    }

    pub(super) fn descendants(&self, root: &str) -> Vec<&Session> {
        let mut out = vec![];
        let mut stack = vec![root.to_string()];
        while let Some(id) = stack.pop() {
            if let Some(s) = self.session(&id) {
                out.push(s);
                for c in self
                    .sessions
                    .iter()
                    .filter(|c| c.parent.as_deref() == Some(&id))
                {
                    stack.push(c.id.clone());
                }
            }
        }
        out
    }

    pub(super) fn tree(&self, data: &Value) -> Result<Value, ErrorBody> {
        let root = str_of(data, "root_session_id")?;
        if self.session(root).is_none() {
            return Err(bad("session/not_found", "no such root session"));
        }
        let nodes: Vec<Value> = self
            .descendants(root)
            .iter()
            .map(|s| {
                let mut n = json!({"session_id": s.id, "depth": s.depth});
                if let Some(p) = &s.parent {
                    n["parent_session_id"] = json!(p);
                }
                n
            })
            .collect();
        let complete = self
            .descendants(root)
            .iter()
            .all(|s| !matches!(s.turn.as_str(), "running" | "awaiting_functions"));
        Ok(json!({"root_session_id": root, "complete": complete, "sessions": nodes}))
    }

    pub(super) fn status(&self, data: &Value) -> Value {
        let Some(s) = self.session(data.get("session_id").and_then(Value::as_str).unwrap_or(""))
        else {
            return Value::Null;
        };
        let children: Vec<Value> = self
            .sessions
            .iter()
            .filter(|c| c.parent.as_deref() == Some(&s.id))
            .map(|c| json!({"function_call_id": format!("spawn-{}", c.id), "session_id": c.id, "turn_id": c.turn_id}))
            .collect();
        let mut r = json!({"session_id": s.id, "turn_id": s.turn_id, "status": s.turn,
                           "step": s.entries.len(), "turn_count": s.turn_count, "depth": s.depth,
                           "children": children, "expects_wake": false});
        if !s.pending_calls.is_empty() {
            r["pending_function_calls"] = json!(s.pending_calls);
        }
        if !s.queued.is_empty() {
            r["queued"] = json!(s.queued);
        }
        if data.get("verbose").and_then(Value::as_bool) == Some(true) {
            // `ContextSnapshotV1`: free = usable - total, floored at zero.
            let msgs = 1200 * s.entries.len() as u64;
            let total = msgs + 6_000;
            r["context"] = json!({"session_id": s.id, "turn_id": s.turn_id, "step": s.entries.len(),
                "timestamp": now_ms(), "model": "demo-model", "provider": "demo",
                "usable": 180_000, "total": total, "free": 180_000u64.saturating_sub(total),
                "effective_max_output_tokens": 16_000, "compacted": false, "estimator": "heuristic",
                "categories": {"system_prompt": 3_000, "tools": 2_500, "overhead": 500,
                               "messages": {"user": msgs / 3, "assistant": msgs - msgs / 3,
                                            "function_result": 0, "custom": 0}},
                "usage": {"input": total, "output": 300, "reasoning": null, "cache_read": null,
                          "cache_write": 0, "cost_usd": 0.004},
                "session_cost_usd": 0.01});
        }
        r
    }

    pub(super) fn metrics(&self, data: &Value) -> Result<Value, ErrorBody> {
        let id = data
            .get("root_session_id")
            .or_else(|| data.get("session_id"))
            .and_then(Value::as_str)
            .ok_or_else(|| bad("invalid_request", "root_session_id is required"))?;
        let root = self
            .root_of(id)
            .ok_or_else(|| bad("session/not_found", "no such session"))?;
        let tree = self.descendants(&root);
        let by: Vec<Value> = tree
            .iter()
            .map(|s| {
                let n = s.entries.len() as u64;
                let mut v = json!({"session_id": s.id, "depth": s.depth, "turns": s.turn_count,
                    "function_calls": s.pending_calls.len(), "function_call_errors": 0,
                    "input_tokens": 900 * n, "output_tokens": 300 * n,
                    // Not every generation reports these: null, shown as "—".
                    "reasoning_tokens": null, "cache_read_tokens": null, "cache_write_tokens": 0,
                    "cost_usd": 0.002 * n as f64});
                if let Some(p) = &s.parent {
                    v["parent_session_id"] = json!(p);
                }
                v
            })
            .collect();
        let sum = |k: &str| by.iter().filter_map(|v| v[k].as_u64()).sum::<u64>();
        let cost: f64 = by.iter().filter_map(|v| v["cost_usd"].as_f64()).sum();
        let complete = tree
            .iter()
            .all(|s| !matches!(s.turn.as_str(), "running" | "awaiting_functions"));
        Ok(json!({"root_session_id": root, "complete": complete,
            "totals": {"sessions": tree.len(), "turns": sum("turns"), "function_calls": sum("function_calls"),
                       "function_call_errors": 0, "input_tokens": sum("input_tokens"),
                       "output_tokens": sum("output_tokens"), "reasoning_tokens": null,
                       "cache_read_tokens": null, "cache_write_tokens": 0, "cost_usd": cost},
            "by_session": by}))
    }

    pub(super) fn list_pending(&self, data: &Value) -> Value {
        let filter = data.get("session_id").and_then(Value::as_str);
        let all: Vec<&Value> = self
            .pending
            .iter()
            .filter(|r| filter.is_none_or(|f| r["session_id"] == f))
            .collect();
        let cap = match self.pending_page_cap {
            0 => 500,
            n => n as u64,
        };
        let limit = data
            .get("limit")
            .and_then(Value::as_u64)
            .unwrap_or(50)
            .min(cap);
        let capped = json!({"limit": limit, "cursor": data.get("cursor")});
        let (a, b, next) = page(&capped, all.len());
        let mut out = json!({"pending": all[a..b]});
        if let Some(n) = next {
            out["next_cursor"] = json!(n);
        }
        out
    }
}
