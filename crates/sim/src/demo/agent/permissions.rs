//! Permission gates: mode-based auto decisions, prompts, answers and permission updates.

use serde_json::{Value, json};

use super::config::PERMISSION_MODES;
use super::helpers::{compact, str_of};
use super::{Agent, Answer, Ctx, HookVerdict, PendingPerm, PermOutcome, PermStart, Prompt, Step};

impl<O: FnMut(String)> Agent<O> {
    pub(super) fn auto_decision(
        &mut self,
        ctx: &Ctx,
        tool: &str,
        input: &Value,
        tool_use_id: &str,
    ) -> Option<PermOutcome> {
        let command = str_of(input, "command").unwrap_or("");
        let allowed = |reason: &str| PermOutcome::Allowed {
            input: input.clone(),
            edited: false,
            remembered: None,
            auto: Some(reason.to_string()),
        };
        let rule_hit = self
            .rules
            .iter()
            .any(|(t, content)| t == tool && content.as_deref().is_none_or(|c| c == command));
        let is_edit = matches!(tool, "Edit" | "Write" | "MultiEdit")
            || (tool == "Bash" && (command.starts_with("touch ") || command.starts_with("mkdir ")));
        match self.mode.as_str() {
            "bypassPermissions" => Some(allowed("bypassPermissions mode")),
            _ if rule_hit => Some(allowed("an allow rule you added earlier")),
            "acceptEdits" if is_edit => Some(allowed("acceptEdits mode")),
            "dontAsk" => {
                let message = format!(
                    "Permission to use {tool} has been denied because Claude Code is running in don't ask mode."
                );
                let mut fields = json!({
                    "tool_name": tool,
                    "tool_use_id": tool_use_id,
                    "decision_reason_type": "mode",
                    "decision_reason": "dontAsk mode",
                    "message": message,
                });
                if let Some(a) = &ctx.agent_id {
                    fields["agent_id"] = json!(a);
                }
                self.sys("permission_denied", fields);
                Some(PermOutcome::Denied {
                    message,
                    interrupt: false,
                })
            }
            _ => None,
        }
    }

    pub(super) fn permission_start(
        &mut self,
        ctx: &Ctx,
        tool: &str,
        input: &Value,
        tool_use_id: &str,
        prompt: Prompt,
        hook: &HookVerdict,
    ) -> PermStart {
        if hook.allow {
            return PermStart::Done(PermOutcome::Allowed {
                input: input.clone(),
                edited: false,
                remembered: None,
                auto: Some("your PreToolUse hook allowed it".into()),
            });
        }
        if !hook.ask
            && let Some(outcome) = self.auto_decision(ctx, tool, input, tool_use_id)
        {
            if let PermOutcome::Denied { .. } = &outcome {
                self.denials.push(json!({
                    "tool_name": tool, "tool_use_id": tool_use_id, "tool_input": input,
                }));
            }
            return PermStart::Done(outcome);
        }
        let mut req = json!({
            "subtype": "can_use_tool",
            "tool_name": tool,
            "display_name": tool,
            "input": input,
            "tool_use_id": tool_use_id,
        });
        if let Some(a) = &ctx.agent_id {
            req["agent_id"] = json!(a);
        }
        req["title"] = json!(prompt.title);
        req["description"] = json!(prompt.description);
        if let Some(r) = prompt.decision_reason {
            req["decision_reason"] = json!(r);
        }
        if let Some(p) = prompt.blocked_path {
            req["blocked_path"] = json!(p);
        }
        req["permission_suggestions"] = prompt.suggestions;
        let id = self.send_gate(req);
        PermStart::Pending(PendingPerm {
            id,
            tool: tool.to_string(),
            tool_use_id: tool_use_id.to_string(),
            input: input.clone(),
        })
    }

    pub(super) fn permission_finish(&mut self, p: &PendingPerm, answer: Answer) -> PermOutcome {
        let outcome = match answer {
            Answer::Err(e) => PermOutcome::Denied {
                message: format!("The permission request failed: {e}"),
                interrupt: false,
            },
            Answer::Ok(body) => match str_of(&body, "behavior") {
                Some("allow") => {
                    let used = body
                        .get("updatedInput")
                        .filter(|u| u.is_object())
                        .cloned()
                        .unwrap_or_else(|| p.input.clone());
                    let remembered = body
                        .get("updatedPermissions")
                        .filter(|u| u.as_array().is_some_and(|a| !a.is_empty()))
                        .cloned();
                    if let Some(updates) = &remembered {
                        self.apply_permission_updates(updates);
                    }
                    PermOutcome::Allowed {
                        edited: used != p.input,
                        input: used,
                        remembered,
                        auto: None,
                    }
                }
                Some("deny") => PermOutcome::Denied {
                    message: str_of(&body, "message")
                        .filter(|m| !m.is_empty())
                        .unwrap_or("The user denied this tool use.")
                        .to_string(),
                    interrupt: body.get("interrupt") == Some(&Value::Bool(true)),
                },
                _ => PermOutcome::Denied {
                    message: format!("Unrecognised permission answer: {}", compact(&body)),
                    interrupt: false,
                },
            },
        };
        if let PermOutcome::Denied { .. } = &outcome {
            self.denials.push(json!({
                "tool_name": p.tool, "tool_use_id": p.tool_use_id, "tool_input": p.input,
            }));
        }
        outcome
    }

    pub(super) fn apply_permission_updates(&mut self, updates: &Value) {
        for u in updates.as_array().into_iter().flatten() {
            match str_of(u, "type") {
                Some("addRules" | "replaceRules") if str_of(u, "behavior") == Some("allow") => {
                    for r in u
                        .get("rules")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(tool) = str_of(r, "toolName") {
                            let content = str_of(r, "ruleContent").map(str::to_string);
                            self.rules.push((tool.to_string(), content));
                        }
                    }
                }
                Some("setMode") => {
                    if let Some(mode) = str_of(u, "mode").filter(|m| PERMISSION_MODES.contains(m)) {
                        self.mode = mode.to_string();
                        self.status(None);
                    }
                }
                _ => {}
            }
        }
    }

    pub(super) fn permission(
        &mut self,
        ctx: &Ctx,
        tool: &str,
        input: &Value,
        tool_use_id: &str,
        prompt: Prompt,
        hook: &HookVerdict,
    ) -> Step<PermOutcome> {
        match self.permission_start(ctx, tool, input, tool_use_id, prompt, hook) {
            PermStart::Done(o) => Ok(o),
            PermStart::Pending(p) => {
                let answer = self.wait_one(&p.id)?;
                Ok(self.permission_finish(&p, answer))
            }
        }
    }

    pub(super) fn allow_phrase(outcome: &PermOutcome) -> String {
        match outcome {
            PermOutcome::Allowed {
                input,
                edited,
                remembered,
                auto,
            } => {
                let mut s = match (auto, remembered) {
                    (Some(reason), _) => format!("It was approved automatically ({reason})."),
                    (None, Some(updates)) => format!(
                        "You allowed it and sent updatedPermissions: {}",
                        compact(updates)
                    ),
                    (None, None) => "You allowed it once.".to_string(),
                };
                if *edited {
                    s.push_str(&format!(
                        " You changed the input before allowing it, so I used yours: {}",
                        compact(input)
                    ));
                }
                s
            }
            PermOutcome::Denied { message, .. } => format!("You denied it: {message}"),
        }
    }

    // ---- streaming
}
