//! Builders of the stream-json lines the agent writes: system, stream events, messages, results.

use serde_json::{Map, Value, json};

use super::helpers::iso_now;
use super::{Agent, Ctx, Msg};

impl<O: FnMut(String)> Agent<O> {
    pub(super) fn emit(&mut self, v: Value) {
        (self.out)(v.to_string());
    }

    /// `{"type":kind, ...fields, "uuid", "session_id"}`
    pub(super) fn emit_typed(&mut self, kind: &str, subtype: Option<&str>, fields: Value) {
        let mut m = Map::new();
        m.insert("type".into(), json!(kind));
        if let Some(s) = subtype {
            m.insert("subtype".into(), json!(s));
        }
        if let Value::Object(f) = fields {
            m.extend(f);
        }
        m.insert("uuid".into(), json!(self.uuid()));
        m.insert("session_id".into(), json!(self.session_id));
        self.emit(Value::Object(m));
    }

    pub(super) fn sys(&mut self, subtype: &str, fields: Value) {
        self.emit_typed("system", Some(subtype), fields);
    }

    pub(super) fn state(&mut self, state: &str) {
        self.sys("session_state_changed", json!({ "state": state }));
    }

    pub(super) fn status(&mut self, status: Option<&str>) {
        let mode = self.mode.clone();
        self.sys(
            "status",
            json!({ "status": status, "permissionMode": mode }),
        );
    }

    pub(super) fn stream_event(&mut self, ctx: &Ctx, event: Value) {
        let uuid = self.uuid();
        let line = json!({
            "type": "stream_event",
            "event": event,
            "session_id": self.session_id,
            "parent_tool_use_id": ctx.parent,
            "uuid": uuid,
        });
        self.emit(line);
    }

    pub(super) fn assistant_line(&mut self, msg: &Msg, block: Value, aborted: bool) {
        let uuid = self.uuid();
        let req = format!("req_011C{}", self.base62(20));
        let mut line = json!({
            "type": "assistant",
            "message": {
                "model": self.model,
                "id": msg.id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {
                    "input_tokens": 4,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 18_200,
                    "output_tokens": msg.out_tokens.max(1),
                    "service_tier": "standard",
                },
            },
            "parent_tool_use_id": msg.ctx.parent,
            "session_id": self.session_id,
            "uuid": uuid,
            "timestamp": iso_now(),
            "request_id": req,
        });
        if aborted {
            line["aborted"] = json!(true);
        }
        self.emit(line);
    }

    pub(super) fn user_line(&mut self, ctx: &Ctx, content: Value, tool_use_result: Option<Value>) {
        let uuid = self.uuid();
        let mut line = json!({
            "type": "user",
            "message": { "role": "user", "content": content },
            "parent_tool_use_id": ctx.parent,
            "session_id": self.session_id,
            "uuid": uuid,
            "timestamp": iso_now(),
        });
        if let Some(r) = tool_use_result {
            line["tool_use_result"] = r;
        }
        self.emit(line);
    }

    pub(super) fn tool_result(
        &mut self,
        ctx: &Ctx,
        tool_use_id: &str,
        content: Value,
        is_error: bool,
        tool_use_result: Option<Value>,
    ) {
        let mut block = json!({
            "tool_use_id": tool_use_id,
            "type": "tool_result",
            "content": content,
        });
        if is_error {
            block["is_error"] = json!(true);
        }
        let tur = tool_use_result.or_else(|| {
            is_error.then(|| json!(format!("Error: {}", content.as_str().unwrap_or(""))))
        });
        self.user_line(ctx, json!([block]), tur);
        self.open_tools.retain(|(id, _)| id != tool_use_id);
        if let Some(agent) = &ctx.agent_id
            && let Some(t) = self.tasks.iter_mut().find(|t| &t.task_id == agent)
        {
            t.tool_uses += 1;
        }
    }

    // ---- input
}
