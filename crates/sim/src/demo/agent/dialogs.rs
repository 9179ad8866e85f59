//! AskUserQuestion, the refusal-fallback dialog and the ticket tool of the first turn.

use serde_json::{Value, json};

use super::helpers::{compact, str_of};
use super::{Agent, Answer, Ctx, Step};

/// An AskUserQuestion after its hooks ran.
pub(super) enum AskSent {
    /// A hook blocked it (the reason); its result is written.
    Blocked(String),
    /// Its gate is out: the request id.
    Pending(String),
}

/// A settled AskUserQuestion: what the agent says about it, and the answers when there are any.
pub(super) struct AskDone {
    pub(super) text: String,
    /// The `answers` object (question text → chosen label(s)); `None` when declined or malformed.
    pub(super) answers: Option<Value>,
}

impl<O: FnMut(String)> Agent<O> {
    pub(super) fn ask_questions(
        &mut self,
        ctx: &Ctx,
        tool_use_id: &str,
        input: &Value,
    ) -> Step<String> {
        match self.ask_send(ctx, tool_use_id, input)? {
            AskSent::Blocked(reason) => Ok(format!(
                "Your hook blocked my questions ({reason}); I'll assume Auth only, behind a flag."
            )),
            AskSent::Pending(id) => {
                let answer = self.wait_one(&id)?;
                Ok(self.ask_answer(ctx, tool_use_id, input, answer).text)
            }
        }
    }

    /// Runs the PreToolUse hooks of an AskUserQuestion and sends its gate without waiting. A
    /// blocked question already has its error result and decision written.
    pub(super) fn ask_send(
        &mut self,
        ctx: &Ctx,
        tool_use_id: &str,
        input: &Value,
    ) -> Step<AskSent> {
        let hook = self.pre_tool(ctx, "AskUserQuestion", input, tool_use_id)?;
        if let Some(reason) = hook.block {
            self.tool_result(
                ctx,
                tool_use_id,
                json!(format!("Blocked by hook: {reason}")),
                true,
                None,
            );
            self.decisions
                .push(format!("Questions: blocked by your hook ({reason})"));
            return Ok(AskSent::Blocked(reason));
        }
        let mut req = json!({
            "subtype": "can_use_tool",
            "tool_name": "AskUserQuestion",
            "display_name": "AskUserQuestion",
            "input": input,
            "tool_use_id": tool_use_id,
            "requires_user_interaction": true,
        });
        if let Some(a) = &ctx.agent_id {
            req["agent_id"] = json!(a);
        }
        Ok(AskSent::Pending(self.send_gate(req)))
    }

    /// Writes the AskUserQuestion's result for the host's `answer` and says what it got.
    pub(super) fn ask_answer(
        &mut self,
        ctx: &Ctx,
        tool_use_id: &str,
        input: &Value,
        answer: Answer,
    ) -> AskDone {
        let body = match answer {
            Answer::Ok(b) => b,
            Answer::Err(e) => {
                json!({"behavior": "deny", "message": format!("the question request failed: {e}")})
            }
        };
        if str_of(&body, "behavior") != Some("allow") {
            let message = str_of(&body, "message")
                .unwrap_or("The user declined to answer.")
                .to_string();
            self.tool_result(ctx, tool_use_id, json!(message), true, None);
            self.denials.push(json!({"tool_name": "AskUserQuestion", "tool_use_id": tool_use_id, "tool_input": input}));
            self.decisions
                .push(format!("Questions: you declined to answer ({message})"));
            return AskDone {
                text: format!("You declined to answer: {message}"),
                answers: None,
            };
        }
        let updated = body.get("updatedInput").cloned().unwrap_or(Value::Null);
        let Some(questions) = updated.get("questions").and_then(Value::as_array).cloned() else {
            let err = "Error: the answer has no updatedInput.questions (echo the request's questions verbatim next to answers)";
            self.tool_result(ctx, tool_use_id, json!(err), true, None);
            self.decisions
                .push("Questions: the answer was malformed (no questions)".into());
            return AskDone {
                text: "Your answer arrived without the questions, so the CLI could not read it."
                    .into(),
                answers: None,
            };
        };
        let answers = updated.get("answers").cloned().unwrap_or_else(|| json!({}));
        let mut pairs = Vec::new();
        let mut echo = Vec::new();
        for q in &questions {
            let Some(text) = str_of(q, "question") else {
                continue;
            };
            let value = match answers.get(text) {
                Some(Value::String(s)) => s.clone(),
                Some(other) => compact(other),
                None => continue,
            };
            pairs.push(format!("\"{text}\"=\"{value}\""));
            let header = str_of(q, "header").unwrap_or(text);
            echo.push(format!("{header}: {value}"));
        }
        let content = if pairs.is_empty() {
            "The user did not answer any question.".to_string()
        } else {
            format!(
                "Your questions have been answered: {}. You can now continue with these answers in mind.",
                pairs.join(", ")
            )
        };
        self.tool_result(
            ctx,
            tool_use_id,
            json!(content),
            false,
            Some(json!({"questions": questions, "answers": answers})),
        );
        let echoed = if echo.is_empty() {
            "nothing".to_string()
        } else {
            echo.join("; ")
        };
        self.decisions.push(format!("Questions: {echoed}"));
        AskDone {
            text: format!("Got it — {echoed}."),
            answers: Some(answers),
        }
    }

    pub(super) fn fallback_dialog(&mut self) -> Step<String> {
        let id = self.send_gate(json!({
            "subtype": "request_user_dialog",
            "dialog_kind": "refusal_fallback_prompt",
            "payload": {
                "title": "Use a fallback model?",
                "message": format!("{} declined to draft the audit-log retention policy. Retry that request with a fallback model?", self.model),
                "options": [
                    {"value": "retry", "label": "Retry with claude-opus-5"},
                    {"value": "skip", "label": "Skip the retention policy"},
                ],
                "default": "skip",
            },
        }));
        let text = match self.wait_one(&id)? {
            Answer::Ok(body) => match str_of(&body, "behavior") {
                Some("completed" | "ok") => {
                    let choice = body
                        .get("result")
                        .or_else(|| body.get("choice"))
                        .cloned()
                        .unwrap_or(Value::Null);
                    let shown = match &choice {
                        Value::String(s) => s.clone(),
                        other => compact(other),
                    };
                    self.decisions
                        .push(format!("Fallback dialog: you chose {shown}"));
                    format!("You chose: {shown}.")
                }
                Some("cancelled") => {
                    self.decisions
                        .push("Fallback dialog: you dismissed it (default: skip)".into());
                    "You dismissed the dialog, so the default applies: I skip the retention policy."
                        .into()
                }
                _ => {
                    self.decisions.push(format!(
                        "Fallback dialog: unrecognised answer {}",
                        compact(&body)
                    ));
                    format!("I could not read the dialog answer: {}", compact(&body))
                }
            },
            Answer::Err(e) => {
                self.decisions.push(format!("Fallback dialog: error ({e})"));
                format!("The dialog failed: {e}")
            }
        };
        Ok(text)
    }

    pub(super) fn ticket(&mut self, ctx: &Ctx, tool_use_id: &str, input: &Value) -> Step<String> {
        let hook = self.pre_tool(ctx, "mcp__tickets__create_ticket", input, tool_use_id)?;
        if let Some(reason) = hook.block {
            self.tool_result(
                ctx,
                tool_use_id,
                json!(format!("Blocked by hook: {reason}")),
                true,
                None,
            );
            self.decisions
                .push(format!("Ticket: blocked by your hook ({reason})"));
            return Ok(format!("Your hook blocked the ticket tool ({reason})."));
        }
        let id = self.send_gate(json!({
            "subtype": "elicitation",
            "mcp_server_name": "tickets",
            "message": "Create a ticket for the audit work?",
            "mode": "form",
            "requested_schema": {
                "type": "object",
                "properties": {
                    "title": {"type": "string", "title": "Title"},
                    "priority": {"type": "string", "enum": ["low", "medium", "high"]},
                    "estimate": {"type": "number", "title": "Estimate (days)"},
                    "notify": {"type": "boolean", "title": "Notify the team"},
                },
                "required": ["title"],
            },
        }));
        let body = match self.wait_one(&id)? {
            Answer::Ok(b) => b,
            Answer::Err(e) => {
                eprintln!("demo agent: elicitation failed: {e}");
                json!({"action": "decline"})
            }
        };
        let (result, is_error, text) = match str_of(&body, "action") {
            Some("accept") => {
                let content = body.get("content").cloned().unwrap_or_else(|| json!({}));
                let title = str_of(&content, "title")
                    .unwrap_or("(untitled)")
                    .to_string();
                self.decisions
                    .push(format!("Ticket form: accepted with {}", compact(&content)));
                (
                    format!("Created ticket TCK-1042 \"{title}\" (simulated)."),
                    false,
                    format!(
                        "Ticket TCK-1042 created with your values: {}.",
                        compact(&content)
                    ),
                )
            }
            Some("cancel") => {
                self.decisions.push("Ticket form: cancelled".into());
                (
                    "The user cancelled the ticket form.".into(),
                    true,
                    "You cancelled the ticket form; no ticket.".into(),
                )
            }
            _ => {
                self.decisions.push("Ticket form: declined".into());
                (
                    "The user declined to create a ticket.".into(),
                    true,
                    "You declined the ticket; I won't file one.".into(),
                )
            }
        };
        self.tool_result(
            ctx,
            tool_use_id,
            json!([{"type": "text", "text": result}]),
            is_error,
            None,
        );
        Ok(text)
    }
}
