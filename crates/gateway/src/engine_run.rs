//! The engine's calls that run: what a card will show (step 10), reads, effects with their
//! receipts (step 11), and the result bodies.

use super::*;

impl Engine {
    /// What the owner will be shown, after the semantic checks of step 10.
    pub(super) fn preview(
        &mut self,
        c: &Call,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Result<Ask, Refusal> {
        let owner = (
            self.pin.workspace_id.clone(),
            c.session_id.clone().unwrap_or_default(),
        );
        let s = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Ok(match tool {
            "workspace_write" | "workspace_patch" => {
                let p = if tool == "workspace_write" {
                    files::plan_write(&self.root, args)?
                } else {
                    files::plan_patch(&self.root, args)?
                };
                Ask::Edit {
                    path: p.shown.clone(),
                    old: p.old_text.clone().unwrap_or_default(),
                    new: String::from_utf8_lossy(p.after.as_deref().unwrap_or_default())
                        .into_owned(),
                    created: p.before.is_none(),
                }
            }
            "workspace_delete" => Ask::Delete {
                path: files::plan_delete(&self.root, args)?.shown,
            },
            "workspace_exec" => Ask::Exec {
                command: s("command"),
                cwd: Commands::check_cwd(&self.root, args)?,
            },
            "workspace_input" => {
                self.commands.check_owned(&owner, &s("commandId"))?;
                Ask::Input {
                    command_id: s("commandId"),
                    text: s("text"),
                }
            }
            "workspace_stop" => {
                self.commands.check_owned(&owner, &s("commandId"))?;
                Ask::Stop {
                    command_id: s("commandId"),
                }
            }
            _ => Ask::Tool {
                name: s("name"),
                arguments: args.get("arguments").cloned().unwrap_or(Value::Null),
            },
        })
    }

    pub(super) fn run_read(
        &mut self,
        c: &Call,
        hash: &str,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Vec<Out> {
        // Remembered with its digest first, so the id is never reused for other arguments;
        // a read that cannot be remembered does not run (the answer is the transient
        // `failed`).
        if let Some(busy) = self.seen_full(c) {
            return busy;
        }
        if let Err(e) = self.journal.remember(&self.key_of(c), hash, tool, None) {
            return vec![self.journal_failed(c, e)];
        }
        let owner = (
            self.pin.workspace_id.clone(),
            c.session_id.clone().unwrap_or_default(),
        );
        let r = match tool {
            "workspace_info" => Ok(self.info()),
            "workspace_tools" => {
                let names = self
                    .pin
                    .extra_tools
                    .iter()
                    .map(|t| t.name.clone())
                    .collect();
                self.last_tools.insert(owner.1.clone(), names);
                Ok(extra::listing(&self.pin.extra_tools))
            }
            "workspace_list" => files::list(&self.root, args),
            "workspace_read" => files::read(&self.root, args),
            "workspace_image" => crate::tools::media::image(&self.root, args),
            "workspace_document" => crate::tools::media::document(&self.root, args),
            "workspace_poll" => self.commands.poll(&owner, args),
            "workspace_tool" => match self.target(c, args) {
                Ok(t) => extra::run_with(
                    &self.root,
                    &t,
                    &args.get("arguments").cloned().unwrap_or(Value::Null),
                    self.commands.env(),
                ),
                Err(r) => Err(r),
            },
            _ => Err(Refusal::new(Code::UnknownTool, tool.to_string())),
        };
        let (body, outcome) = self.body(c, r);
        vec![
            Out::Ran {
                session: owner.1,
                tool: tool.to_string(),
                summary: read_summary(tool, args),
                outcome,
            },
            self.send(c, &body),
        ]
    }

    /// The result body, replaced by `too_large` when the frame would pass the limit.
    pub(super) fn body(&self, c: &Call, r: Result<Value, Refusal>) -> (String, String) {
        let (body, outcome) = match r {
            Ok(v) => match v.get("__content") {
                Some(content) => {
                    let mut s = v.clone();
                    s.as_object_mut().map(|o| o.remove("__content"));
                    (
                        codec::ok_body_with(content.as_array().cloned().unwrap_or_default(), &s),
                        "ok".to_string(),
                    )
                }
                None => (codec::ok_body(&v), "ok".to_string()),
            },
            Err(r) => (codec::error_body(&r), r.code.as_str().to_string()),
        };
        let frame =
            codec::result_frame(&c.id, c.session_id.as_deref().unwrap_or_default(), &body).len();
        if frame > FRAME_BYTES {
            let r = Refusal::new(
                Code::TooLarge,
                format!(
                    "the result would be {frame} bytes, over the {FRAME_BYTES}-byte frame limit"
                ),
            );
            return (codec::error_body(&r), "too_large".to_string());
        }
        (body, outcome)
    }

    pub(super) fn info(&self) -> Value {
        let name = self
            .root
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        json!({
            "project": name,
            "platform": {"os": std::env::consts::OS, "arch": std::env::consts::ARCH},
            "owner": "switchboard",
            "mode": match self.pin.mode { Mode::Ask => "ask", Mode::Edits => "edits", Mode::Full => "full" },
            "intention": self.pin.intention,
            "instructions": "Paths are relative to the project root. Every write, patch, delete, exec, input and stop may wait for the owner's approval. Supply expectedSha256 from workspace_read; null only creates. Read AGENTS.md and CLAUDE.md before editing.",
        })
    }

    /// Steps 10 and 11 for an approved effect, then the row that tells what it did (or why
    /// it was refused after all).
    pub(super) fn execute(
        &mut self,
        c: &Call,
        hash: &str,
        tool: &str,
        args: &Map<String, Value>,
        edited: bool,
    ) -> Vec<Out> {
        let (mut out, outcome) = self.perform(c, hash, tool, args, edited);
        out.push(Out::Effect {
            session: c.session_id.clone().unwrap_or_default(),
            call_id: c.id.clone(),
            outcome,
        });
        out
    }

    /// Steps 10 and 11 for an approved effect: re-check, journal `executing`, perform, journal
    /// `completed` with the exact body, and only then hand the frame out.
    pub(super) fn perform(
        &mut self,
        c: &Call,
        hash: &str,
        tool: &str,
        args: &Map<String, Value>,
        edited: bool,
    ) -> (Vec<Out>, Outcome) {
        let key = self.key_of(c);
        let owner = (key.0.clone(), key.1.clone());
        let s = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        // Step 10 again, and what the receipt records.
        let (plan, effect): (Option<Plan>, Value) = {
            let r: Result<(Option<Plan>, Value), Refusal> = match tool {
                "workspace_write" => files::plan_write(&self.root, args).map(|p| { let e = p.effect(tool); (Some(p), e) }),
                "workspace_patch" => files::plan_patch(&self.root, args).map(|p| { let e = p.effect(tool); (Some(p), e) }),
                "workspace_delete" => files::plan_delete(&self.root, args).map(|p| { let e = p.effect(tool); (Some(p), e) }),
                "workspace_exec" => self.commands.check_room().and_then(|_| Commands::check_cwd(&self.root, args)).map(|cwd| {
                    (None, json!({"tool": tool, "commandId": Commands::new_id(), "command": s("command"), "cwd": cwd}))
                }),
                "workspace_input" => self.commands.check_input(&owner, args).map(|_| {
                    (None, json!({"tool": tool, "commandId": s("commandId"), "textSha256": sha256_hex(s("text").as_bytes())}))
                }),
                "workspace_stop" => self.commands.check_owned(&owner, &s("commandId")).map(|_| (None, json!({"tool": tool, "commandId": s("commandId")}))),
                _ => self.target(c, args).map(|t| {
                    let a = args.get("arguments").cloned().unwrap_or(Value::Null);
                    (None, json!({"tool": tool, "name": t.name, "argumentsSha256": sha256_hex(a.to_string().as_bytes())}))
                }),
            };
            match r {
                Ok(x) => x,
                // Nothing ran: a full input queue or an ended command may change, so the
                // answer is the transient one (not journaled, like a fifth call's `busy`).
                Err(r) if matches!(r.code, Code::Busy | Code::Failed) => {
                    return (
                        vec![self.send(c, &codec::error_body(&r))],
                        effect::refused(tool, &r),
                    );
                }
                Err(r) => {
                    return (
                        self.decided_final(c, hash, tool, r.clone()),
                        effect::refused(tool, &r),
                    );
                }
            }
        };
        if let Err(e) = self.journal.executing(&key, hash, tool, effect.clone()) {
            let why = Refusal::new(Code::Failed, format!("receipt journal unavailable: {e}"));
            return (vec![self.journal_failed(c, e)], effect::refused(tool, &why));
        }
        if self.crash_after_executing {
            std::process::abort();
        }
        let r = match tool {
            "workspace_write" | "workspace_patch" | "workspace_delete" => {
                files::apply(&self.root, plan.as_ref().expect("file effects have a plan"))
            }
            "workspace_exec" => {
                let id = effect["commandId"].as_str().unwrap_or_default().to_string();
                self.commands.exec(&self.root, owner, &id, args)
            }
            "workspace_input" => self.commands.input(&owner, args),
            "workspace_stop" => self.commands.stop(&owner, args),
            _ => match self.target(c, args) {
                Ok(t) => extra::run_with(
                    &self.root,
                    &t,
                    &args.get("arguments").cloned().unwrap_or(Value::Null),
                    self.commands.env(),
                ),
                Err(r) => Err(r),
            },
        };
        // The host learns that what ran is the owner's edit of its call.
        let r = r.map(|mut v| {
            if let (true, Some(o)) = (edited, v.as_object_mut()) {
                o.insert("editedByOwner".into(), Value::Bool(true));
                if tool == "workspace_exec" {
                    o.insert("command".into(), json!(s("command")));
                }
            }
            v
        });
        let watch = match (&r, tool) {
            (Ok(_), "workspace_exec") => effect["commandId"]
                .as_str()
                .and_then(|id| self.commands.watch(id)),
            _ => None,
        };
        let outcome = effect::outcome_of(tool, args, &r, watch);
        let (body, _) = self.body(c, r);
        if let Err(e) = self
            .journal
            .completed(&key, hash, tool, effect.clone(), &body)
        {
            // The effect ran but its result is not on disk: the receipt stays `executing`
            // and the id is uncertain from now on, answered as it will be after a restart
            // (one final answer per id), never `failed` for an effect that happened.
            tracing::warn!(target: "gateway", "completed receipt of {} not written: {e}", codec::clip(&c.id));
            self.journal.mark_uncertain(&key);
            return (vec![self.send(c, &uncertain_body(&effect))], outcome);
        }
        (vec![self.send(c, &body)], outcome)
    }
}

/// The answer for an id whose effect may or may not have happened: the same bytes whether
/// the `completed` receipt failed to be written just now or a restart found it missing.
pub(super) fn uncertain_body(effect: &Value) -> String {
    codec::error_body(&Refusal::new(
        Code::UncertainEffect,
        format!(
            "this call's effect may or may not have happened (its receipt is incomplete: {}); inspect its effects before retrying under a new id",
            codec::clip(&effect.to_string())
        ),
    ))
}
