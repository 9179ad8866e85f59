//! The two sub-agents of the first turn: explorer and reviewer, with the Edit and Grep gates.

use serde_json::{Value, json};

use super::gates::hook_verdict;
use super::helpers::str_of;
use super::texts::{AUTH_RS, EDIT_NEW, EDIT_OLD, GREP_OUTPUT};
use super::{
    Agent, Answer, Ctx, HookVerdict, PendingPerm, PermOutcome, PermStart, Prompt, Step, Stop, Task,
};

impl<O: FnMut(String)> Agent<O> {
    pub(super) fn fan_out(&mut self, ex: &Task, rv: &Task) -> Step<String> {
        let main = Ctx::default();
        let mut notes: Vec<String> = Vec::new();
        let mut grep_note = String::new();
        let mut active = [true, true];
        for (i, t) in [ex, rv].into_iter().enumerate() {
            let hook = self.pre_tool(&main, "Agent", &t.input(), &t.tool_use_id)?;
            if let Some(reason) = hook.block {
                self.tool_result(
                    &main,
                    &t.tool_use_id,
                    json!(format!("Blocked by hook: {reason}")),
                    true,
                    None,
                );
                notes.push(format!(
                    "Your hook blocked the {} sub-agent: {reason}.",
                    t.subagent_type
                ));
                self.decisions.push(format!(
                    "{} sub-agent: blocked by your hook ({reason})",
                    t.subagent_type
                ));
                active[i] = false;
            }
        }
        let [ex_on, rv_on] = active;
        if ex_on {
            self.start_task(ex, None)?;
        }
        if rv_on {
            self.start_task(rv, None)?;
        }
        let exc = ex.ctx();
        let rvc = rv.ctx();

        // Explorer dispatches a nested helper.
        let mut grep: Option<Task> = None;
        if ex_on {
            let g = self.new_task(
                Some(ex.tool_use_id.clone()),
                "Grep for authenticate",
                "general-purpose",
                "Search src/ for `fn authenticate` and list every match with its line number.",
            );
            let mut m = self.begin(&exc);
            self.text(&mut m, "I'll find where authentication lives; a helper can run the search while I read the module layout.")?;
            self.tool_use(&mut m, &g.tool_use_id, "Agent", &g.input())?;
            self.end(&mut m, "tool_use");
            self.progress(ex, "Agent");
            let hook = self.pre_tool(&exc, "Agent", &g.input(), &g.tool_use_id)?;
            if let Some(reason) = hook.block {
                self.tool_result(
                    &exc,
                    &g.tool_use_id,
                    json!(format!("Blocked by hook: {reason}")),
                    true,
                    None,
                );
                grep_note = format!("My grep-helper was blocked by your hook: {reason}.");
            } else {
                grep = Some(g);
            }
        }

        // Reviewer reads the file (read-only, no permission).
        if rv_on {
            let read_id = self.tool_id();
            let read_input = json!({"file_path": "src/auth.rs"});
            let mut m = self.begin(&rvc);
            self.text(&mut m, "Reading src/auth.rs before proposing a change.")?;
            self.tool_use(&mut m, &read_id, "Read", &read_input)?;
            self.end(&mut m, "tool_use");
            let hook = self.pre_tool(&rvc, "Read", &read_input, &read_id)?;
            if let Some(reason) = hook.block {
                self.tool_result(
                    &rvc,
                    &read_id,
                    json!(format!("Blocked by hook: {reason}")),
                    true,
                    None,
                );
            } else {
                let numbered: String = AUTH_RS
                    .lines()
                    .enumerate()
                    .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
                    .collect();
                let total = AUTH_RS.lines().count();
                self.tool_result(
                    &rvc,
                    &read_id,
                    json!(numbered),
                    false,
                    Some(json!({"type": "text", "file": {"filePath": format!("{}/src/auth.rs", self.cwd), "content": AUTH_RS, "numLines": total, "startLine": 1, "totalLines": total}})),
                );
            }
            self.progress(rv, "Read");
        }

        if let Some(g) = &grep {
            self.start_task(g, Some(&ex.task_id))?;
        }

        // Reviewer asks to edit (the gate stays open while the helper works).
        let edit_id = self.tool_id();
        let edit_input = json!({"file_path": "src/auth.rs", "old_string": EDIT_OLD, "new_string": EDIT_NEW, "replace_all": false});
        let mut edit: Option<Result<PermOutcome, PendingPerm>> = None;
        let mut rv_done = !rv_on;
        if rv_on {
            let mut m = self.begin(&rvc);
            self.text(
                &mut m,
                "I'll add an audit log call right after a successful login.",
            )?;
            self.tool_use(&mut m, &edit_id, "Edit", &edit_input)?;
            self.end(&mut m, "tool_use");
            let hook = self.pre_tool(&rvc, "Edit", &edit_input, &edit_id)?;
            if let Some(reason) = &hook.block {
                self.tool_result(
                    &rvc,
                    &edit_id,
                    json!(format!("Blocked by hook: {reason}")),
                    true,
                    None,
                );
                self.decisions.push(format!(
                    "Reviewer's edit of src/auth.rs: blocked by your hook ({reason})"
                ));
                let text =
                    format!("A hook blocked my edit ({reason}); src/auth.rs stays as it was.");
                self.say(&rvc, &text, "end_turn")?;
                self.complete_task(rv, &text, &text)?;
                notes.push(format!("Reviewer: {text}"));
                rv_done = true;
            } else {
                let input = hook
                    .updated_input
                    .clone()
                    .unwrap_or_else(|| edit_input.clone());
                let prompt = Prompt {
                    title: "Claude wants to edit src/auth.rs".into(),
                    description: "Add an audit log call after a successful login".into(),
                    decision_reason: None,
                    blocked_path: Some(format!("{}/src/auth.rs", self.cwd)),
                    suggestions: json!([{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]),
                };
                edit = Some(
                    match self.permission_start(&rvc, "Edit", &input, &edit_id, prompt, &hook) {
                        PermStart::Done(o) => Ok(o),
                        PermStart::Pending(p) => Err(p),
                    },
                );
            }
        }

        // The helper wants to Grep; a matching PreToolUse hook holds it.
        let grep_id = self.tool_id();
        let grep_input = json!({"pattern": "fn authenticate", "path": "src"});
        let mut grep_hooks: Vec<String> = Vec::new();
        if let Some(g) = &grep {
            let gc = g.ctx();
            let mut m = self.begin(&gc);
            self.text(&mut m, "Searching src/ for `fn authenticate`.")?;
            self.tool_use(&mut m, &grep_id, "Grep", &grep_input)?;
            self.end(&mut m, "tool_use");
            self.progress(g, "Grep");
            grep_hooks = self.send_hooks(&gc, "Grep", &grep_input, &grep_id);
        }
        let hooks_fired = !grep_hooks.is_empty();

        // Settle both branches in the order the human answers.
        let mut grep_answers: Vec<Answer> = Vec::new();
        let mut grep_open = grep.is_some();
        let mut ex_open = ex_on;
        loop {
            if grep_open && grep_hooks.is_empty() {
                grep_open = false;
                let mut verdict = hook_verdict(std::mem::take(&mut grep_answers));
                verdict.fired = hooks_fired;
                if let Some(g) = &grep {
                    grep_note = self.finish_grep(g, &grep_id, &grep_input, verdict)?;
                }
                continue;
            }
            if ex_open && !grep_open {
                ex_open = false;
                let text = format!(
                    "Authentication lives in src/auth.rs (`authenticate`), sessions in src/session.rs. {grep_note}"
                );
                self.say(&exc, &text, "end_turn")?;
                self.complete_task(ex, "Mapped the auth code", &text)?;
                notes.push(format!("Explorer: {text}"));
                continue;
            }
            match edit.take() {
                Some(Ok(outcome)) => {
                    let note = self.finish_review(rv, &edit_id, outcome)?;
                    notes.push(format!("Reviewer: {note}"));
                    rv_done = true;
                    continue;
                }
                other => edit = other,
            }
            let mut waiting = grep_hooks.clone();
            if let Some(Err(p)) = &edit {
                waiting.push(p.id.clone());
            }
            if waiting.is_empty() {
                break;
            }
            let (id, answer) = self.wait_any(&waiting)?;
            if grep_hooks.contains(&id) {
                grep_hooks.retain(|x| *x != id);
                grep_answers.push(answer);
            } else if let Some(Err(p)) = edit.take() {
                let outcome = self.permission_finish(&p, answer);
                if let PermOutcome::Denied {
                    message,
                    interrupt: true,
                } = &outcome
                {
                    self.tool_result(&rvc, &edit_id, json!(message), true, None);
                    self.decisions.push(format!(
                        "Reviewer's edit of src/auth.rs: you denied it and stopped ({message})"
                    ));
                    return Err(Stop::Halt(message.clone()));
                }
                edit = Some(Ok(outcome));
            }
        }
        debug_assert!(rv_done);
        let mut text = String::from("Both sub-agents are done.");
        for n in notes {
            text.push(' ');
            text.push_str(&n);
        }
        Ok(text)
    }

    pub(super) fn finish_grep(
        &mut self,
        g: &Task,
        grep_id: &str,
        input: &Value,
        verdict: HookVerdict,
    ) -> Step<String> {
        let gc = g.ctx();
        let text = if let Some(reason) = &verdict.block {
            self.tool_result(
                &gc,
                grep_id,
                json!(format!("Blocked by hook: {reason}")),
                true,
                None,
            );
            self.decisions.push(format!(
                "grep-helper's Grep: blocked by your hook ({reason})"
            ));
            format!(
                "The search was blocked by a PreToolUse hook ({reason}), so I could not confirm where `fn authenticate` lives."
            )
        } else {
            let used = verdict
                .updated_input
                .clone()
                .unwrap_or_else(|| input.clone());
            let pattern = str_of(&used, "pattern").unwrap_or("fn authenticate");
            self.pause(200, 400)?;
            self.tool_result(
                &gc,
                grep_id,
                json!(GREP_OUTPUT),
                false,
                Some(json!({"mode": "content", "numFiles": 2, "filenames": ["src/auth.rs", "src/admin.rs"], "content": GREP_OUTPUT, "numLines": 2})),
            );
            if verdict.fired {
                self.decisions
                    .push("grep-helper's Grep: your hook let it run".into());
            }
            let via = if verdict.fired {
                " (your hook let the search through)"
            } else {
                ""
            };
            format!("Found `{pattern}` at src/auth.rs:7, called from src/admin.rs:31{via}.")
        };
        self.progress(g, "Grep");
        self.say(&gc, &text, "end_turn")?;
        self.complete_task(g, &text, &text)?;
        Ok(text)
    }

    pub(super) fn finish_review(
        &mut self,
        rv: &Task,
        edit_id: &str,
        outcome: PermOutcome,
    ) -> Step<String> {
        let rvc = rv.ctx();
        let phrase = Self::allow_phrase(&outcome);
        let text = match &outcome {
            PermOutcome::Allowed { input, edited, .. } => {
                let new = str_of(input, "new_string").unwrap_or(EDIT_NEW).to_string();
                self.tool_result(
                    &rvc,
                    edit_id,
                    json!("The file src/auth.rs has been updated successfully. (simulated — nothing was written)"),
                    false,
                    Some(json!({
                        "filePath": format!("{}/src/auth.rs", self.cwd),
                        "oldString": EDIT_OLD,
                        "newString": new,
                        "originalFile": AUTH_RS,
                        "structuredPatch": [{"oldStart": 14, "oldLines": EDIT_OLD.lines().count(), "newStart": 14, "newLines": new.lines().count(),
                            "lines": EDIT_OLD.lines().map(|l| format!("-{l}")).chain(new.lines().map(|l| format!("+{l}"))).collect::<Vec<_>>()}],
                        "userModified": edited,
                        "replaceAll": false,
                    })),
                );
                format!("Edit applied to src/auth.rs (simulated). {phrase}")
            }
            PermOutcome::Denied { message, .. } => {
                self.tool_result(&rvc, edit_id, json!(message), true, None);
                format!("{phrase} I left src/auth.rs unchanged.")
            }
        };
        self.decisions
            .push(format!("Reviewer's edit of src/auth.rs: {phrase}"));
        self.progress(rv, "Edit");
        self.say(&rvc, &text, "end_turn")?;
        self.complete_task(rv, &text, &text)?;
        Ok(text)
    }
}
