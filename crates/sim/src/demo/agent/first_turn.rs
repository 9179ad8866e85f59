//! The scripted first turn: thinking, listing, reading, then the gated Bash step.

use serde_json::{Value, json};

use super::helpers::{epoch_ms, str_of};
use super::texts::{LS_OUTPUT, Q1, Q2, THINKING};
use super::{Agent, Ctx, PermOutcome, Prompt, Step, Stop};

impl<O: FnMut(String)> Agent<O> {
    /// A Bash command that needs permission (hook → can_use_tool → simulated result).
    /// Returns the text that reacts to the human's answer.
    pub(super) fn gated_bash(
        &mut self,
        ctx: &Ctx,
        tool_use_id: &str,
        input: &Value,
        file: &str,
    ) -> Step<String> {
        let command = str_of(input, "command").unwrap_or("").to_string();
        let hook = self.pre_tool(ctx, "Bash", input, tool_use_id)?;
        if let Some(reason) = &hook.block {
            self.tool_result(
                ctx,
                tool_use_id,
                json!(format!("Blocked by hook: {reason}")),
                true,
                None,
            );
            self.decisions.push(format!(
                "`{command}`: blocked by your PreToolUse hook ({reason})"
            ));
            return Ok(format!("Your hook blocked `{command}`: {reason}"));
        }
        let input = hook.updated_input.clone().unwrap_or_else(|| input.clone());
        let prompt = Prompt {
            title: format!("Claude wants to run {command}"),
            description: str_of(&input, "description")
                .unwrap_or("Run a shell command")
                .to_string(),
            decision_reason: Some(format!(
                "`{command}` writes to the working directory and needs your approval"
            )),
            blocked_path: Some(format!("{}/{file}", self.cwd)),
            suggestions: json!([
                {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": command}], "behavior": "allow", "destination": "localSettings"},
                {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
            ]),
        };
        let outcome = self.permission(ctx, "Bash", &input, tool_use_id, prompt, &hook)?;
        let phrase = Self::allow_phrase(&outcome);
        match &outcome {
            PermOutcome::Allowed {
                input: used,
                edited,
                ..
            } => {
                let used_cmd = str_of(used, "command").unwrap_or(&command).to_string();
                let out = if *edited && used_cmd != command {
                    format!("(simulated) ran `{used_cmd}` — nothing was written to disk")
                } else {
                    format!("(simulated) created {file}")
                };
                self.tool_result(
                    ctx,
                    tool_use_id,
                    json!(out),
                    false,
                    Some(json!({"stdout": out, "stderr": "", "interrupted": false, "isImage": false})),
                );
                self.decisions.push(format!("`{command}`: {phrase}"));
                Ok(phrase)
            }
            PermOutcome::Denied { message, interrupt } => {
                self.tool_result(ctx, tool_use_id, json!(message), true, None);
                self.decisions.push(format!("`{command}`: {phrase}"));
                if *interrupt {
                    return Err(Stop::Halt(message.clone()));
                }
                Ok(phrase)
            }
        }
    }

    pub(super) fn first_turn(&mut self) -> Step<String> {
        let main = Ctx::default();

        // 1–2: think, talk, run a read-only command.
        let mut m = self.begin(&main);
        self.thinking(&mut m, THINKING)?;
        self.text(&mut m, "I'll look around the repository first.")?;
        let ls_id = self.tool_id();
        let ls_input = json!({"command": "ls src", "description": "List source files"});
        self.tool_use(&mut m, &ls_id, "Bash", &ls_input)?;
        self.end(&mut m, "tool_use");
        let hook = self.pre_tool(&main, "Bash", &ls_input, &ls_id)?;
        if let Some(reason) = hook.block {
            self.tool_result(
                &main,
                &ls_id,
                json!(format!("Blocked by hook: {reason}")),
                true,
                None,
            );
        } else {
            self.pause(200, 400)?;
            self.tool_result(
                &main,
                &ls_id,
                json!(LS_OUTPUT),
                false,
                Some(json!({"stdout": LS_OUTPUT, "stderr": "", "interrupted": false, "isImage": false})),
            );
        }
        self.pause_step()?;
        self.sys(
            "api_retry",
            json!({"attempt": 1, "max_retries": 10, "retry_delay_ms": 600, "error_status": 529, "error": "overloaded_error"}),
        );
        self.pause(500, 800)?;

        // 3: a command that needs permission.
        let mut m = self.begin(&main);
        self.text(
            &mut m,
            "There's an auth.rs. Before changing anything I'll create a scratch file for my notes.",
        )?;
        let touch_id = self.tool_id();
        let touch_input = json!({"command": "touch demo-output.txt", "description": "Create a scratch file for notes"});
        self.tool_use(&mut m, &touch_id, "Bash", &touch_input)?;
        self.end(&mut m, "tool_use");
        let reaction = self.gated_bash(&main, &touch_id, &touch_input, "demo-output.txt")?;
        self.pause_step()?;

        // 4: fan-out to two sub-agents.
        let explorer = self.new_task(
            None,
            "Map the auth code",
            "Explore",
            "Find where authentication happens in src/ and who calls it. Report file:line locations.",
        );
        let reviewer = self.new_task(
            None,
            "Draft the audit-log change",
            "code-reviewer",
            "Read src/auth.rs and propose adding an audit log call after a successful login.",
        );
        let mut m = self.begin(&main);
        self.text(
            &mut m,
            &format!("{reaction}\n\nNow I'll split the work: an explorer maps the auth code while a reviewer drafts the change."),
        )?;
        self.tool_use(&mut m, &explorer.tool_use_id, "Agent", &explorer.input())?;
        self.tool_use(&mut m, &reviewer.tool_use_id, "Agent", &reviewer.input())?;
        self.end(&mut m, "tool_use");
        let fan = self.fan_out(&explorer, &reviewer)?;
        self.pause_step()?;

        // A compaction between steps.
        self.status(Some("compacting"));
        self.pause(400, 700)?;
        self.sys(
            "compact_boundary",
            json!({"compact_metadata": {"trigger": "auto", "pre_tokens": 167_204, "post_tokens": 21_388, "duration_ms": 2_810}}),
        );
        self.status(None);
        self.pause_step()?;

        // 5: AskUserQuestion with two questions.
        let ask_id = self.tool_id();
        let questions = json!([
            {"question": Q1, "header": "Modules", "multiSelect": true, "options": [
                {"label": "Auth", "description": "Logins, sessions and tokens"},
                {"label": "Billing", "description": "Payments, invoices and refunds"},
                {"label": "Search", "description": "Queries and index updates"},
                {"label": "Admin", "description": "Back-office user management"},
            ]},
            {"question": Q2, "header": "Rollout", "multiSelect": false, "options": [
                {"label": "Behind a flag", "description": "Ship dark, enable per environment"},
                {"label": "Everywhere at once", "description": "Enable for all traffic in one deploy"},
            ]},
        ]);
        let ask_input = json!({"questions": questions});
        let mut m = self.begin(&main);
        self.text(
            &mut m,
            &format!("{fan}\n\nBefore I wire this in everywhere, two questions."),
        )?;
        self.tool_use(&mut m, &ask_id, "AskUserQuestion", &ask_input)?;
        self.end(&mut m, "tool_use");
        let answers_text = self.ask_questions(&main, &ask_id, &ask_input)?;
        self.pause_step()?;

        // 6: a dialog, only if the host declared it.
        let mut m = self.begin(&main);
        self.text(&mut m, &answers_text)?;
        self.end(&mut m, "end_turn");
        if self
            .dialog_kinds
            .iter()
            .any(|k| k == "refusal_fallback_prompt")
        {
            self.pause_step()?;
            let dialog_text = self.fallback_dialog()?;
            self.say(&main, &dialog_text, "end_turn")?;
        }
        self.pause_step()?;

        // 7: an MCP tool whose server asks for a form.
        let mcp_id = self.tool_id();
        let mcp_input = json!({"summary": "Add audit logging", "labels": ["security", "audit"]});
        let mut m = self.begin(&main);
        self.text(&mut m, "I'll file a ticket so the rollout is tracked.")?;
        self.tool_use(&mut m, &mcp_id, "mcp__tickets__create_ticket", &mcp_input)?;
        self.end(&mut m, "tool_use");
        let ticket_text = self.ticket(&main, &mcp_id, &mcp_input)?;
        self.pause_step()?;

        // 8: lines the host does not know.
        self.emit_typed(
            "future_event",
            None,
            json!({"detail": "shown, never dropped"}),
        );
        self.sys(
            "demo_notice",
            json!({"message": "An unknown system subtype: hosts show it as a generic row."}),
        );
        let resets = epoch_ms() / 1000 + 3 * 3600;
        self.emit_typed(
            "rate_limit_event",
            None,
            json!({"rate_limit_info": {"status": "allowed_warning", "resetsAt": resets, "rateLimitType": "five_hour", "utilization": 0.82, "isUsingOverage": false}}),
        );
        self.pause_step()?;

        // 9: summary.
        let mut summary = format!("{ticket_text}\n\nHere is everything you decided:\n");
        for d in &self.decisions {
            summary.push_str(&format!("- {d}\n"));
        }
        summary.push_str("\nNothing on disk changed: every tool in this demo is simulated.");
        self.say(&main, &summary, "end_turn")?;
        Ok(summary)
    }
}
