//! The turn loop: main loop, turn start, `result` lines, interrupts and aborted turns, later turns.

use serde_json::{Value, json};

use super::config::Script;
use super::helpers::{epoch_ms, user_text};
use super::{Agent, Ctx, Step, Stop, Task, TurnStats};

impl<O: FnMut(String)> Agent<O> {
    pub(super) fn main_loop(&mut self) -> i32 {
        loop {
            if let Some(turn) = self.queued.pop_front() {
                match self.run_turn(&turn) {
                    Ok(final_text) => self.finish_ok(&final_text),
                    Err(Stop::Eof) => return 0,
                    Err(stop) => self.finish_aborted(stop),
                }
                continue;
            }
            match self.rx.recv() {
                Ok(line) => self.handle_line(&line),
                Err(_) => return 0,
            }
        }
    }

    pub(super) fn begin_turn(&mut self) {
        self.in_turn = true;
        self.interrupt_requested = false;
        self.open_tools.clear();
        self.tasks.clear();
        self.decisions.clear();
        self.denials.clear();
        self.answers.clear();
        self.user_gates.clear();
        self.stats = TurnStats::new();
        self.turn_count += 1;
        let uuid = self.uuid();
        self.emit(json!({
            "type": "system",
            "subtype": "init",
            "cwd": self.cwd,
            "session_id": self.session_id,
            "tools": ["Agent", "AskUserQuestion", "Bash", "Edit", "Glob", "Grep", "Read", "TodoWrite", "WebFetch", "Write", "mcp__tickets__create_ticket"],
            "mcp_servers": [{"name": "tickets", "status": "connected"}],
            "model": self.model,
            "permissionMode": self.mode,
            "slash_commands": ["compact", "review", "init", "context", "clear"],
            "apiKeySource": "none",
            "claude_code_version": "demo",
            "output_style": "default",
            "agents": ["general-purpose", "Explore", "code-reviewer", "Plan"],
            "skills": [],
            "plugins": [],
            "capabilities": ["interrupt_receipt_v1", "interrupt_cancel_queued_v1", "msg_lifecycle_v1"],
            "uuid": uuid,
            "fast_mode_state": "off",
        }));
        self.state("running");
    }

    pub(super) fn run_turn(&mut self, turn: &Value) -> Step<String> {
        self.begin_turn();
        let text = user_text(turn);
        let lower = text.to_lowercase();
        if self.turn_count == 1 || lower.contains("replay") {
            match self.cfg.script {
                Script::Auth => self.first_turn(),
                Script::Web => self.web_turn(),
                Script::Docs => self.docs_turn(),
            }
        } else {
            self.later_turn(&text)
        }
    }

    pub(super) fn cost(&self) -> f64 {
        let (inp, out) = match self.model.as_str() {
            m if m.contains("opus") => (5.0, 25.0),
            m if m.contains("haiku") => (1.0, 5.0),
            _ => (3.0, 15.0),
        };
        (self.stats.input_tokens as f64 * inp
            + self.stats.output_tokens as f64 * out
            + self.stats.cache_read as f64 * inp * 0.1)
            / 1_000_000.0
    }

    pub(super) fn result_fields(&self) -> Value {
        let duration = self.stats.start.elapsed().as_millis() as u64;
        let cost = self.cost();
        json!({
            "duration_ms": duration,
            "duration_api_ms": duration * 4 / 5,
            "num_turns": self.stats.num_turns,
            "session_id": self.session_id,
            "total_cost_usd": cost,
            "usage": {
                "input_tokens": self.stats.input_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": self.stats.cache_read,
                "output_tokens": self.stats.output_tokens,
                "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                "service_tier": "standard",
            },
            "modelUsage": {
                self.model.clone(): {
                    "inputTokens": self.stats.input_tokens,
                    "outputTokens": self.stats.output_tokens,
                    "cacheReadInputTokens": self.stats.cache_read,
                    "cacheCreationInputTokens": 0,
                    "webSearchRequests": 0,
                    "costUSD": cost,
                    "contextWindow": 200_000,
                    "maxOutputTokens": 32_000,
                },
            },
            "permission_denials": self.denials,
        })
    }

    pub(super) fn finish_ok(&mut self, final_text: &str) {
        let mut fields = json!({"subtype": "success", "is_error": false, "result": final_text, "stop_reason": "end_turn"});
        if let (Value::Object(f), Value::Object(extra)) = (&mut fields, self.result_fields()) {
            f.extend(extra);
        }
        fields["terminal_reason"] = json!("completed");
        fields["uuid"] = json!(self.uuid());
        fields["type"] = json!("result");
        self.emit(fields);
        self.state("idle");
        self.in_turn = false;
    }

    pub(super) fn finish_aborted(&mut self, stop: Stop) {
        let reason = if !self.pending.is_empty() || matches!(stop, Stop::Halt(_)) {
            "aborted_tools"
        } else {
            "aborted_streaming"
        };
        for id in std::mem::take(&mut self.pending) {
            self.emit(json!({"type": "control_cancel_request", "request_id": id}));
            self.cancelled.insert(id);
        }
        self.answers.clear();
        self.user_gates.clear();
        let running: Vec<Task> = self.tasks.iter().rev().cloned().collect();
        for t in &running {
            self.sys(
                "task_updated",
                json!({"task_id": t.task_id, "patch": {"status": "killed", "end_time": epoch_ms()}}),
            );
            let usage = self.task_usage(&t.task_id);
            self.sys(
                "task_notification",
                json!({"task_id": t.task_id, "tool_use_id": t.tool_use_id, "status": "stopped", "output_file": "", "summary": "Interrupted by the user", "usage": usage}),
            );
        }
        self.tasks.clear();
        let open: Vec<(String, Option<String>)> = self.open_tools.iter().rev().cloned().collect();
        for (id, parent) in open {
            let ctx = Ctx {
                parent,
                ..Ctx::default()
            };
            self.tool_result(
                &ctx,
                &id,
                json!("[Request interrupted by user for tool use]"),
                true,
                None,
            );
        }
        let error = match &stop {
            Stop::Halt(message) => {
                format!("The user denied a tool use and asked to stop: {message}")
            }
            _ => "Request interrupted by user".to_string(),
        };
        let mut fields =
            json!({"subtype": "error_during_execution", "is_error": true, "stop_reason": null});
        if let (Value::Object(f), Value::Object(extra)) = (&mut fields, self.result_fields()) {
            f.extend(extra);
        }
        fields["errors"] = json!([error]);
        fields["terminal_reason"] = json!(reason);
        fields["uuid"] = json!(self.uuid());
        fields["type"] = json!("result");
        self.emit(fields);
        self.state("idle");
        self.in_turn = false;
        self.interrupt_requested = false;
    }

    // ---- script pieces

    pub(super) fn later_turn(&mut self, user: &str) -> Step<String> {
        let main = Ctx::default();
        let shown: String = user.chars().take(300).collect();
        let echo = format!("You said: {shown}");
        if !user.to_lowercase().contains("bash") {
            self.say(&main, &echo, "end_turn")?;
            return Ok(echo);
        }
        let id = self.tool_id();
        let input =
            json!({"command": "touch again.txt", "description": "Create another scratch file"});
        let mut m = self.begin(&main);
        self.text(&mut m, &format!("{echo}\n\nLet me run one more command."))?;
        self.tool_use(&mut m, &id, "Bash", &input)?;
        self.end(&mut m, "tool_use");
        let reaction = self.gated_bash(&main, &id, &input, "again.txt")?;
        self.pause_step()?;
        self.say(&main, &reaction, "end_turn")?;
        Ok(reaction)
    }
}
