//! Several gates open at once, settled in the order the human answers them (the `web` and `docs`
//! scripts), and the pieces those scripts share: permission prompts, the Bash and Edit results.

use std::collections::VecDeque;

use serde_json::{Value, json};

use super::dialogs::{AskDone, AskSent};
use super::{Agent, Ctx, PendingPerm, PermOutcome, PermStart, Prompt, Step, Stop, Task};

/// A gate once it is settled.
pub(super) enum Settled {
    /// A permission was decided: by the human, a mode, a rule or a hook.
    Perm(PermOutcome),
    /// A PreToolUse hook blocked the tool (the reason); its error result is already written.
    Blocked(String),
    /// The questions were answered or declined (their result is already written).
    Ask(AskDone),
}

enum Waiting {
    Perm(PendingPerm),
    Ask {
        ctx: Ctx,
        tool_use_id: String,
        input: Value,
        request_id: String,
    },
}

impl Waiting {
    fn request_id(&self) -> &str {
        match self {
            Waiting::Perm(p) => &p.id,
            Waiting::Ask { request_id, .. } => request_id,
        }
    }
}

/// The open gates of one step, each under the script's key `K`.
pub(super) struct Gates<K> {
    /// Decided without a human (modes, rules, hooks), handed out first.
    ready: VecDeque<(K, Settled)>,
    waiting: Vec<(K, Waiting)>,
}

impl<K> Gates<K> {
    pub(super) fn new() -> Self {
        Gates {
            ready: VecDeque::new(),
            waiting: Vec::new(),
        }
    }
}

/// `{"command", "description"}` of a Bash tool use.
pub(super) fn bash_input(command: &str, description: &str) -> Value {
    json!({"command": command, "description": description})
}

/// The CLI's result frames for a Bash run that printed `stdout`.
pub(super) fn bash_frames(stdout: &str) -> (Value, Value) {
    (
        json!(stdout),
        json!({"stdout": stdout, "stderr": "", "interrupted": false, "isImage": false}),
    )
}

/// `{"file_path", "old_string", "new_string", "replace_all"}` of an Edit tool use.
pub(super) fn edit_input(path: &str, old: &str, new: &str) -> Value {
    json!({"file_path": path, "old_string": old, "new_string": new, "replace_all": false})
}

/// The CLI's result frames for an Edit that replaced the `old_string` of `used` (the input the
/// human allowed; `edited` when it is not the one we asked for) in the simulated file `original`.
pub(super) fn edit_frames(cwd: &str, original: &str, used: &Value, edited: bool) -> (Value, Value) {
    let str_in = |key: &str| {
        used.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (path, old, new) = (
        str_in("file_path"),
        str_in("old_string"),
        str_in("new_string"),
    );
    let line = line_of(original, &old);
    let lines: Vec<String> = old
        .lines()
        .map(|l| format!("-{l}"))
        .chain(new.lines().map(|l| format!("+{l}")))
        .collect();
    (
        json!(format!(
            "The file {path} has been updated successfully. (simulated — nothing was written)"
        )),
        json!({
            "filePath": format!("{cwd}/{path}"),
            "oldString": old,
            "newString": new,
            "originalFile": original,
            "structuredPatch": [{"oldStart": line, "oldLines": old.lines().count(), "newStart": line, "newLines": new.lines().count(), "lines": lines}],
            "userModified": edited,
            "replaceAll": false,
        }),
    )
}

/// The 1-based line where `old` starts in `file` (1 when it is not there: the human edited it).
pub(super) fn line_of(file: &str, old: &str) -> usize {
    match file.find(old) {
        Some(at) if !old.is_empty() => file[..at].matches('\n').count() + 1,
        _ => 1,
    }
}

impl<O: FnMut(String)> Agent<O> {
    /// The prompt of a Bash command that needs approval.
    pub(super) fn bash_prompt(&self, command: &str, description: &str) -> Prompt {
        Prompt {
            title: format!("Claude wants to run {command}"),
            description: description.to_string(),
            decision_reason: Some(format!("`{command}` is not in your allow list")),
            blocked_path: None,
            suggestions: json!([
                {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": command}], "behavior": "allow", "destination": "localSettings"},
            ]),
        }
    }

    /// The prompt of an Edit of `path`.
    pub(super) fn edit_prompt(&self, path: &str, description: &str) -> Prompt {
        Prompt {
            title: format!("Claude wants to edit {path}"),
            description: description.to_string(),
            decision_reason: None,
            blocked_path: Some(format!("{}/{path}", self.cwd)),
            suggestions: json!([{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]),
        }
    }

    /// Runs the PreToolUse hooks of a tool and asks for permission without waiting for it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn open_perm<K>(
        &mut self,
        gates: &mut Gates<K>,
        key: K,
        ctx: &Ctx,
        tool: &str,
        tool_use_id: &str,
        input: &Value,
        prompt: Prompt,
    ) -> Step<()> {
        let settled = match self.perm_start(ctx, tool, tool_use_id, input, prompt)? {
            Ok(settled) => settled,
            Err(pending) => {
                gates.waiting.push((key, Waiting::Perm(pending)));
                return Ok(());
            }
        };
        gates.ready.push_back((key, settled));
        Ok(())
    }

    /// One permission step on its own: hooks, the gate, and the wait for its answer.
    pub(super) fn perm_now(
        &mut self,
        ctx: &Ctx,
        tool: &str,
        tool_use_id: &str,
        input: &Value,
        prompt: Prompt,
    ) -> Step<Settled> {
        match self.perm_start(ctx, tool, tool_use_id, input, prompt)? {
            Ok(settled) => Ok(settled),
            Err(pending) => {
                let answer = self.wait_one(&pending.id)?;
                Ok(Settled::Perm(self.permission_finish(&pending, answer)))
            }
        }
    }

    fn perm_start(
        &mut self,
        ctx: &Ctx,
        tool: &str,
        tool_use_id: &str,
        input: &Value,
        prompt: Prompt,
    ) -> Step<Result<Settled, PendingPerm>> {
        let hook = self.pre_tool(ctx, tool, input, tool_use_id)?;
        if let Some(reason) = &hook.block {
            self.tool_result(
                ctx,
                tool_use_id,
                json!(format!("Blocked by hook: {reason}")),
                true,
                None,
            );
            return Ok(Ok(Settled::Blocked(reason.clone())));
        }
        let input = hook.updated_input.clone().unwrap_or_else(|| input.clone());
        Ok(
            match self.permission_start(ctx, tool, &input, tool_use_id, prompt, &hook) {
                PermStart::Done(outcome) => Ok(Settled::Perm(outcome)),
                PermStart::Pending(pending) => Err(pending),
            },
        )
    }

    /// Runs the hooks of an AskUserQuestion and sends its gate without waiting for it.
    pub(super) fn open_ask<K>(
        &mut self,
        gates: &mut Gates<K>,
        key: K,
        ctx: &Ctx,
        tool_use_id: &str,
        input: &Value,
    ) -> Step<()> {
        match self.ask_send(ctx, tool_use_id, input)? {
            AskSent::Blocked(reason) => gates.ready.push_back((key, Settled::Blocked(reason))),
            AskSent::Pending(request_id) => gates.waiting.push((
                key,
                Waiting::Ask {
                    ctx: ctx.clone(),
                    tool_use_id: tool_use_id.to_string(),
                    input: input.clone(),
                    request_id,
                },
            )),
        }
        Ok(())
    }

    /// Runs the hooks of a sub-agent's Agent tool use and starts it; `false` when a hook blocked
    /// it (its error result and the decision are written).
    pub(super) fn open_task(&mut self, task: &Task) -> Step<bool> {
        let main = Ctx::default();
        let hook = self.pre_tool(&main, "Agent", &task.input(), &task.tool_use_id)?;
        if let Some(reason) = hook.block {
            self.tool_result(
                &main,
                &task.tool_use_id,
                json!(format!("Blocked by hook: {reason}")),
                true,
                None,
            );
            self.decisions.push(format!(
                "{} sub-agent: blocked by your hook ({reason})",
                task.description
            ));
            return Ok(false);
        }
        self.start_task(task, None)?;
        Ok(true)
    }

    /// The next settled gate: one decided without a human first, then the first one the host
    /// answers. `None` once every gate is settled.
    pub(super) fn next_settled<K>(&mut self, gates: &mut Gates<K>) -> Step<Option<(K, Settled)>> {
        if let Some(ready) = gates.ready.pop_front() {
            return Ok(Some(ready));
        }
        loop {
            if gates.waiting.is_empty() {
                return Ok(None);
            }
            let ids: Vec<String> = gates
                .waiting
                .iter()
                .map(|(_, w)| w.request_id().to_string())
                .collect();
            let (id, answer) = self.wait_any(&ids)?;
            let Some(pos) = ids.iter().position(|x| *x == id) else {
                continue;
            };
            let (key, waiting) = gates.waiting.remove(pos);
            let settled = match waiting {
                Waiting::Perm(pending) => Settled::Perm(self.permission_finish(&pending, answer)),
                Waiting::Ask {
                    ctx,
                    tool_use_id,
                    input,
                    ..
                } => Settled::Ask(self.ask_answer(&ctx, &tool_use_id, &input, answer)),
            };
            return Ok(Some((key, settled)));
        }
    }

    /// Writes the result of a settled permission step (`ok` builds the content and
    /// `tool_use_result` from the input that was allowed) and records the decision under
    /// `label`. Returns what the agent says about it and whether the tool ran; "deny and stop"
    /// unwinds the turn.
    pub(super) fn close_perm(
        &mut self,
        ctx: &Ctx,
        tool_use_id: &str,
        label: &str,
        settled: Settled,
        ok: impl FnOnce(&Value, bool) -> (Value, Value),
    ) -> Step<(String, bool)> {
        let outcome = match settled {
            Settled::Perm(outcome) => outcome,
            Settled::Blocked(reason) => {
                self.decisions
                    .push(format!("{label}: blocked by your hook ({reason})"));
                return Ok((format!("Your hook blocked it: {reason}."), false));
            }
            Settled::Ask(done) => {
                // Not a permission: nothing of ours is open under this id any more.
                return Ok((done.text, false));
            }
        };
        let phrase = Self::allow_phrase(&outcome);
        self.decisions.push(format!("{label}: {phrase}"));
        match &outcome {
            PermOutcome::Allowed { input, edited, .. } => {
                let (content, result) = ok(input, *edited);
                self.tool_result(ctx, tool_use_id, content, false, Some(result));
                Ok((phrase, true))
            }
            PermOutcome::Denied { message, interrupt } => {
                self.tool_result(ctx, tool_use_id, json!(message), true, None);
                if *interrupt {
                    return Err(Stop::Halt(message.clone()));
                }
                Ok((phrase, false))
            }
        }
    }

    /// What the script says about a settled question, and the answers when there are any.
    pub(super) fn close_ask(settled: Settled) -> AskDone {
        match settled {
            Settled::Ask(done) => done,
            Settled::Blocked(reason) => AskDone {
                text: format!(
                    "Your hook blocked my question ({reason}); I'll go with the default."
                ),
                answers: None,
            },
            Settled::Perm(outcome) => AskDone {
                text: Self::allow_phrase(&outcome),
                answers: None,
            },
        }
    }

    /// The closing summary of a script: its own lines, then every decision of the turn.
    pub(super) fn summary(&self, lead: &str) -> String {
        let mut summary = format!("{lead}\n\nHere is everything you decided:\n");
        for d in &self.decisions {
            summary.push_str(&format!("- {d}\n"));
        }
        summary.push_str("\nNothing on disk changed: every tool in this demo is simulated.");
        summary
    }
}
