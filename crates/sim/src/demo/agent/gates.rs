//! Gates we send and wait for, and the hook callbacks asked before each tool.

use serde_json::{Value, json};

use super::helpers::str_of;
use super::{Agent, Answer, Ctx, HookVerdict, Step, Stop};

pub(super) fn matcher_matches(matcher: &str, tool: &str) -> bool {
    let m = matcher.trim();
    if m.is_empty() || m == "*" || m == ".*" {
        return true;
    }
    m.split('|')
        .map(str::trim)
        .any(|alt| alt == tool || (tool == "Agent" && alt == "Task"))
}

pub(super) fn hook_verdict(answers: Vec<Answer>) -> HookVerdict {
    let mut v = HookVerdict {
        fired: !answers.is_empty(),
        ..HookVerdict::default()
    };
    for answer in answers {
        let body = match answer {
            Answer::Ok(body) => body,
            Answer::Err(e) => {
                // A failing hook is a non-blocking error for the CLI.
                eprintln!("demo agent: hook callback failed: {e}");
                continue;
            }
        };
        match str_of(&body, "decision") {
            Some("block") => {
                let reason = str_of(&body, "reason").unwrap_or("blocked by hook");
                v.block.get_or_insert_with(|| reason.to_string());
            }
            Some("approve") => v.allow = true,
            _ => {}
        }
        if body.get("continue") == Some(&Value::Bool(false)) {
            let reason = str_of(&body, "stopReason").unwrap_or("a hook asked to stop");
            v.block.get_or_insert_with(|| reason.to_string());
        }
        if let Some(h) = body.get("hookSpecificOutput") {
            match str_of(h, "permissionDecision") {
                Some("deny") => {
                    let reason = str_of(h, "permissionDecisionReason").unwrap_or("denied by hook");
                    v.block.get_or_insert_with(|| reason.to_string());
                }
                Some("allow") => v.allow = true,
                Some("ask") => v.ask = true,
                _ => {}
            }
            if let Some(ui) = h.get("updatedInput").filter(|u| u.is_object()) {
                v.updated_input = Some(ui.clone());
            }
        }
    }
    v
}

impl<O: FnMut(String)> Agent<O> {
    pub(super) fn send_gate(&mut self, request: Value) -> String {
        let id = self.uuid();
        if str_of(&request, "subtype") != Some("hook_callback") {
            if self.user_gates.is_empty() {
                self.state("requires_action");
            }
            self.user_gates.insert(id.clone());
        }
        self.pending.push(id.clone());
        self.emit(json!({ "type": "control_request", "request_id": id, "request": request }));
        id
    }

    /// Blocks until one of `ids` is answered.
    pub(super) fn wait_any(&mut self, ids: &[String]) -> Step<(String, Answer)> {
        loop {
            for id in ids {
                if let Some(a) = self.answers.remove(id) {
                    return Ok((id.clone(), a));
                }
            }
            match self.rx.recv() {
                Ok(line) => {
                    self.handle_line(&line);
                    if self.interrupt_requested {
                        return Err(Stop::Interrupt);
                    }
                }
                Err(_) => return Err(Stop::Eof),
            }
        }
    }

    pub(super) fn wait_one(&mut self, id: &str) -> Step<Answer> {
        self.wait_any(&[id.to_string()]).map(|(_, a)| a)
    }

    // ---- hooks

    pub(super) fn hook_ids(&self, tool: &str) -> Vec<String> {
        self.hooks
            .iter()
            .filter(|(m, _)| matcher_matches(m, tool))
            .flat_map(|(_, ids)| ids.iter().cloned())
            .collect()
    }

    /// Sends one `hook_callback` per matching registered callback id; returns the request ids.
    pub(super) fn send_hooks(
        &mut self,
        ctx: &Ctx,
        tool: &str,
        input: &Value,
        tool_use_id: &str,
    ) -> Vec<String> {
        let ids = self.hook_ids(tool);
        let mut sent = Vec::new();
        for callback_id in ids {
            let mut hook_input = json!({
                "session_id": self.session_id,
                "cwd": self.cwd,
                "permission_mode": self.mode,
                "hook_event_name": "PreToolUse",
                "tool_name": tool,
                "tool_input": input,
                "tool_use_id": tool_use_id,
            });
            if let Some(a) = &ctx.agent_id {
                hook_input["agent_id"] = json!(a);
            }
            if let Some(t) = &ctx.agent_type {
                hook_input["agent_type"] = json!(t);
            }
            sent.push(self.send_gate(json!({
                "subtype": "hook_callback",
                "callback_id": callback_id,
                "input": hook_input,
                "tool_use_id": tool_use_id,
            })));
        }
        sent
    }

    pub(super) fn collect_hooks(&mut self, mut ids: Vec<String>) -> Step<HookVerdict> {
        let mut answers = Vec::new();
        while !ids.is_empty() {
            let (id, a) = self.wait_any(&ids)?;
            ids.retain(|x| *x != id);
            answers.push(a);
        }
        Ok(hook_verdict(answers))
    }

    pub(super) fn pre_tool(
        &mut self,
        ctx: &Ctx,
        tool: &str,
        input: &Value,
        tool_use_id: &str,
    ) -> Step<HookVerdict> {
        let ids = self.send_hooks(ctx, tool, input, tool_use_id);
        self.collect_hooks(ids)
    }

    // ---- permissions
}
