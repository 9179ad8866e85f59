//! Input from the host: pacing pumps, control requests, responses to our gates, initialize.

use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::config::PERMISSION_MODES;
use super::helpers::{compact, str_of};
use super::{Agent, Answer, Step, Stop};

impl<O: FnMut(String)> Agent<O> {
    /// Processes host lines until `deadline` (or only those already queued when `None`).
    pub(super) fn pump(&mut self, deadline: Option<Instant>) -> Step<()> {
        loop {
            let line = match deadline {
                None => match self.rx.try_recv() {
                    Ok(l) => l,
                    Err(TryRecvError::Empty) => return Ok(()),
                    Err(TryRecvError::Disconnected) => return Err(Stop::Eof),
                },
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    match self.rx.recv_timeout(left) {
                        Ok(l) => l,
                        Err(RecvTimeoutError::Timeout) => return Ok(()),
                        Err(RecvTimeoutError::Disconnected) => return Err(Stop::Eof),
                    }
                }
            };
            self.handle_line(&line);
            if self.interrupt_requested {
                return Err(Stop::Interrupt);
            }
        }
    }

    pub(super) fn pause(&mut self, lo: u64, hi: u64) -> Step<()> {
        if self.cfg.fast {
            return self.pump(None);
        }
        let ms = self.range(lo, hi);
        self.pump(Some(Instant::now() + Duration::from_millis(ms)))
    }

    pub(super) fn pause_step(&mut self) -> Step<()> {
        self.pause(300, 600)
    }

    pub(super) fn handle_line(&mut self, raw: &str) {
        let line = raw.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            return;
        }
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("demo agent: ignoring malformed stdin line ({e}): {line}");
                return;
            }
        };
        match str_of(&v, "type") {
            Some("control_request") => self.handle_host_request(&v),
            Some("control_response") => self.handle_response(&v),
            Some("user") => self.queued.push_back(v),
            Some("control_cancel_request" | "keep_alive") => {}
            Some(other) => eprintln!("demo agent: ignoring stdin line of type {other:?}"),
            None => eprintln!("demo agent: ignoring stdin line without a type: {line}"),
        }
    }

    pub(super) fn respond(&mut self, request_id: &str, body: Value) {
        self.emit(json!({
            "type": "control_response",
            "response": { "subtype": "success", "request_id": request_id, "response": body },
        }));
    }

    pub(super) fn respond_error(&mut self, request_id: &str, error: &str) {
        self.emit(json!({
            "type": "control_response",
            "response": { "subtype": "error", "request_id": request_id, "error": error },
        }));
    }

    pub(super) fn handle_host_request(&mut self, v: &Value) {
        let Some(id) = str_of(v, "request_id").filter(|s| !s.is_empty()) else {
            eprintln!("demo agent: control_request without request_id ignored");
            return;
        };
        let id = id.to_string();
        let req = v.get("request").cloned().unwrap_or_else(|| json!({}));
        match str_of(&req, "subtype").unwrap_or("") {
            "initialize" => {
                self.apply_initialize(&req);
                let body = self.init_body();
                self.emit(json!({
                    "type": "control_response",
                    "response": {
                        "subtype": "success",
                        "request_id": id,
                        "response": body,
                        "pending_permission_requests": [],
                        "pending_user_dialog_requests": [],
                    },
                }));
            }
            "interrupt" => {
                let still: Vec<Value> = self
                    .queued
                    .iter()
                    .filter_map(|q| q.get("uuid").cloned())
                    .collect();
                let body = if req.get("cancel_queued") == Some(&Value::Bool(true)) {
                    self.queued.clear();
                    json!({ "still_queued": [], "cancelled": still })
                } else {
                    json!({ "still_queued": still })
                };
                self.respond(&id, body);
                if self.in_turn {
                    self.interrupt_requested = true;
                }
            }
            "set_permission_mode" => match str_of(&req, "mode") {
                Some(mode) if PERMISSION_MODES.contains(&mode) => {
                    self.mode = mode.to_string();
                    self.respond(&id, json!({}));
                    self.status(None);
                }
                other => {
                    let msg = format!("invalid permission mode {other:?}");
                    self.respond_error(&id, &msg);
                }
            },
            "set_model" => {
                self.model = str_of(&req, "model")
                    .map(str::to_string)
                    .unwrap_or_else(|| self.cfg.model.clone());
                self.respond(&id, json!({}));
            }
            _ => self.respond(&id, json!({})),
        }
    }

    pub(super) fn handle_response(&mut self, v: &Value) {
        let resp = v.get("response").cloned().unwrap_or(Value::Null);
        let Some(id) = str_of(&resp, "request_id").map(str::to_string) else {
            eprintln!("demo agent: control_response without request_id ignored");
            return;
        };
        if let Some(pos) = self.pending.iter().position(|p| *p == id) {
            self.pending.remove(pos);
            let answer = match str_of(&resp, "subtype") {
                Some("success") => Answer::Ok(resp.get("response").cloned().unwrap_or(json!({}))),
                Some("error") => Answer::Err(match resp.get("error") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => compact(other),
                    None => "error".into(),
                }),
                other => Answer::Err(format!("unexpected control_response subtype {other:?}")),
            };
            self.answered.insert(id.clone());
            self.answers.insert(id.clone(), answer);
            if self.user_gates.remove(&id) && self.user_gates.is_empty() && self.in_turn {
                self.state("running");
            }
        } else if self.cancelled.contains(&id) {
            eprintln!("demo agent: ignoring late answer to withdrawn request {id}");
        } else if self.answered.contains(&id) {
            eprintln!("demo agent: ignoring second answer to request {id}");
        } else {
            eprintln!("demo agent: ignoring answer to unknown request {id}");
        }
    }

    pub(super) fn apply_initialize(&mut self, req: &Value) {
        self.hooks.clear();
        if let Some(list) = req.pointer("/hooks/PreToolUse").and_then(Value::as_array) {
            for h in list {
                let matcher = str_of(h, "matcher").unwrap_or("").to_string();
                let ids: Vec<String> = h
                    .get("hookCallbackIds")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                if !ids.is_empty() {
                    self.hooks.push((matcher, ids));
                }
            }
        }
        self.dialog_kinds = req
            .get("supportedDialogKinds")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        self.forward_sub = req.get("forwardSubagentText") == Some(&Value::Bool(true));
    }

    pub(super) fn init_body(&self) -> Value {
        json!({
            "commands": [
                {"name": "compact", "description": "Free up context by summarizing the conversation so far", "argumentHint": "<optional custom summarization instructions>"},
                {"name": "review", "description": "Review a pull request", "argumentHint": "[pr-number]"},
                {"name": "init", "description": "Initialize a new CLAUDE.md file with codebase documentation", "argumentHint": ""},
                {"name": "context", "description": "Show current context usage", "argumentHint": ""},
                {"name": "clear", "description": "Start a new session with empty context", "argumentHint": "[name]", "aliases": ["reset", "new"]},
            ],
            "agents": [
                {"name": "general-purpose", "description": "General-purpose agent for researching complex questions, searching for code, and executing multi-step tasks."},
                {"name": "Explore", "description": "Fast read-only search agent for locating code."},
                {"name": "code-reviewer", "description": "Reviews a change for correctness, style and missing tests."},
                {"name": "Plan", "description": "Software architect agent for designing implementation plans."},
            ],
            "output_style": "default",
            "available_output_styles": ["default", "Explanatory", "Learning"],
            "models": [
                {"value": "default", "resolvedModel": self.cfg.model, "displayName": "Default (recommended)", "description": "Use the default model · demo pricing", "supportsEffort": true, "supportedEffortLevels": ["low", "medium", "high"], "supportsAdaptiveThinking": true, "supportsFastMode": false, "supportsAutoMode": true},
                {"value": "opus", "resolvedModel": "claude-opus-5", "displayName": "Opus", "description": "Opus 5 · Best for complex tasks · $5/$25 per Mtok", "supportsEffort": true, "supportedEffortLevels": ["low", "medium", "high", "xhigh", "max"], "supportsAdaptiveThinking": true, "supportsFastMode": true, "supportsAutoMode": true},
                {"value": "sonnet", "resolvedModel": "claude-sonnet-5", "displayName": "Sonnet", "description": "Sonnet 5 · Efficient for routine tasks · $3/$15 per Mtok", "supportsEffort": true, "supportedEffortLevels": ["low", "medium", "high"], "supportsAdaptiveThinking": true, "supportsAutoMode": true},
                {"value": "haiku", "resolvedModel": "claude-haiku-4-5-20251001", "displayName": "Haiku", "description": "Haiku 4.5 · Fastest for quick answers · $1/$5 per Mtok"},
            ],
            "account": {"tokenSource": "none", "apiKeySource": "none", "apiProvider": "firstParty"},
            "pid": std::process::id(),
            "current_permission_mode": self.mode,
            "session_state": "idle",
            "hooks_applied": !self.hooks.is_empty(),
            "claude_code_version": "demo",
            "fast_mode_state": "off",
            "fast_mode_disabled_reason": "sdk_opt_in_required",
        })
    }

    // ---- gates
}
