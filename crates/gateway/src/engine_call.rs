//! A call through the steps of reference §4: the id against what waits and what the
//! journal holds (step 2), workspace, conversation and intention (3 to 5), the tool and its
//! arguments (6, 7), the in-flight limit (8), then by its class run, asked, or put to wait
//! for the owner (9).

use super::*;

impl Engine {
    pub(super) fn on_call(&mut self, c: Call) -> Vec<Out> {
        // Step 1 (rest): the protocol of the call itself.
        if c.protocol != json!(codec::PROTOCOL) {
            return vec![self.send(
                &c,
                &codec::error_body(&Refusal::new(Code::InvalidFrame, "protocol must be 1")),
            )];
        }
        let key = self.key_of(&c);
        let decoded = validate::decode_args(c.args.as_ref());
        let hashed = match &decoded {
            Ok(m) => Value::Object(m.clone()),
            Err(_) => c.args.clone().unwrap_or(Value::Null),
        };
        let hash = validate::args_hash(
            c.workspace_id.as_deref().unwrap_or_default(),
            &key.1,
            c.intention.as_deref(),
            c.tool.as_deref(),
            &hashed,
        );
        // Step 2: the id against what waits and what the journal holds (§5.3). One final
        // answer per id: a re-send with other arguments while the first call waits gets no
        // result frame at all (the host takes the first call's result as the id's answer);
        // once the id is answered, such a re-send gets `id_conflict`, which is not final
        // (like `busy`: it answers that frame, never the id).
        if let Some(w) = self.waiting.get(&key) {
            if w.hash == hash {
                return vec![Out::Joined { gate: w.gate }];
            }
            return vec![Out::Dropped(format!(
                "call {} re-sent with other arguments while it waits for card {}; ignored, the first call keeps the id",
                codec::clip(&c.id),
                crate::mapping::gate_id(w.gate)
            ))];
        }
        let conflict = |e: &Engine, c: &Call| {
            vec![e.send(
                c,
                &codec::error_body(&Refusal::new(
                    Code::IdConflict,
                    "this id was used with other arguments",
                )),
            )]
        };
        if let Some(e) = self.journal.get(&key) {
            if e.hash != hash {
                return conflict(self, &c);
            }
            match e.state {
                State::Completed | State::Sent => {
                    let body = e.result.clone().unwrap_or_default();
                    return vec![self.send(&c, &body)];
                }
                State::Executing => {
                    let body = uncertain_body(&e.effect);
                    return vec![self.send(&c, &body)];
                }
                // A question shown by an earlier process: it has no effect, ask it again.
                State::Asked | State::Seen => {}
            }
        } else if let Some(s) = self.journal.seen(&key) {
            if s.hash != hash {
                return conflict(self, &c);
            }
            if let Some(body) = s.refusal.clone() {
                return vec![self.send(&c, &body)];
            }
            // A read: it has no effect and is run again (reference §5.3).
        }
        // Step 3.
        if c.workspace_id.as_deref() != Some(self.pin.workspace_id.as_str()) {
            let r = Refusal::new(
                Code::WorkspaceMismatch,
                "this channel serves another workspace",
            );
            return self.refuse_final(&c, &hash, "", r);
        }
        // Step 4.
        let session = c.session_id.clone().unwrap_or_default();
        if !self.accepted.contains(&session) {
            if session.is_empty() || self.refused.contains(&session) {
                let r = Refusal::new(
                    Code::SessionUnknown,
                    "this conversation is not accepted on this channel",
                );
                return self.refuse_final(&c, &hash, "", r);
            }
            if self.accepted.is_empty() {
                self.accepted.push(session.clone());
            } else {
                return self.wait(
                    c,
                    hash,
                    "",
                    Map::new(),
                    Kind::Conversation,
                    Ask::Conversation,
                );
            }
        }
        self.after_session(c, hash, decoded)
    }

    /// Steps 5 to 11, for a call whose conversation is accepted.
    pub(super) fn after_session(
        &mut self,
        c: Call,
        hash: String,
        decoded: Result<Map<String, Value>, Refusal>,
    ) -> Vec<Out> {
        // Step 5.
        if c.intention.as_deref() != Some(self.pin.intention.as_str()) {
            let r = Refusal::new(
                Code::IntentionMismatch,
                "the intention differs from the one pinned for this channel",
            );
            return self.refuse_final(&c, &hash, "", r);
        }
        // Step 6.
        let tool = match validate::check_tool(c.tool.as_deref()) {
            Ok(t) => t,
            Err(r) => return self.refuse_final(&c, &hash, "", r),
        };
        // Step 7 (and 6 for workspace_tool's target, which needs the decoded arguments).
        let args = match decoded.and_then(|a| validate::check_args(tool, &a).map(|_| a)) {
            Ok(a) => a,
            Err(r) => return self.refuse_final(&c, &hash, tool, r),
        };
        let mut class = validate::class_of(tool);
        if tool == "workspace_tool" {
            match self.target(&c, &args) {
                Ok(t) => class = t.class,
                Err(r) => return self.refuse_final(&c, &hash, tool, r),
            }
        }
        // Step 8: a fifth call waiting at once is refused, not queued, and not journaled.
        if self.waiting.len() >= IN_FLIGHT {
            let r = Refusal::new(
                Code::Busy,
                format!("{IN_FLIGHT} calls of this workspace are already in flight"),
            );
            return vec![self.send(&c, &codec::error_body(&r))];
        }
        // Step 9 (read-only tools run at once; the rest by the mode or the owner).
        match class {
            Class::Read => self.run_read(&c, &hash, tool, &args),
            Class::Ask => {
                let question = args
                    .get("question")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let effect = json!({"question_sha256": sha256_hex(question.as_bytes())});
                if let Err(e) = self.journal.asked(&self.key_of(&c), &hash, effect) {
                    return vec![self.journal_failed(&c, e)];
                }
                self.wait(
                    c,
                    hash,
                    tool,
                    args,
                    Kind::Question,
                    Ask::Question { question },
                )
            }
            Class::Edit | Class::Command => {
                // Step 10 before the card too, so the owner never approves a call that cannot
                // succeed (it runs again after the approval: the disk may change meanwhile).
                let ask = match self.preview(&c, tool, &args) {
                    Ok(a) => a,
                    Err(r) => return self.refuse_final(&c, &hash, tool, r),
                };
                if self.pin.mode.needs_gate(class) {
                    self.wait(c, hash, tool, args, Kind::Permission, ask)
                } else {
                    let mut out = self.execute(&c, &hash, tool, &args, false);
                    out.insert(
                        0,
                        Out::Ran {
                            session: c.session_id.clone().unwrap_or_default(),
                            tool: tool.to_string(),
                            summary: summary_of(&ask),
                            outcome: "pre-approved by the mode".to_string(),
                        },
                    );
                    out
                }
            }
        }
    }

    pub(super) fn target(&self, c: &Call, args: &Map<String, Value>) -> Result<ExtraTool, Refusal> {
        let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
        let session = c.session_id.clone().unwrap_or_default();
        let listed = self
            .last_tools
            .get(&session)
            .is_some_and(|l| l.iter().any(|n| n == name));
        let t = self.pin.extra_tools.iter().find(|t| t.name == name);
        let (true, Some(t)) = (listed, t) else {
            return Err(Refusal::new(
                Code::UnknownTool,
                format!(
                    "{} is not in this conversation's latest workspace_tools result",
                    codec::clip(name)
                ),
            ));
        };
        let arguments = args.get("arguments").cloned().unwrap_or(Value::Null);
        validate::check_no_selector(&arguments)?;
        extra::check_arguments(t, &arguments)?;
        Ok(t.clone())
    }

    fn wait(
        &mut self,
        c: Call,
        hash: String,
        tool: &'static str,
        args: Map<String, Value>,
        kind: Kind,
        ask: Ask,
    ) -> Vec<Out> {
        if self.waiting.len() >= IN_FLIGHT {
            let r = Refusal::new(
                Code::Busy,
                format!("{IN_FLIGHT} calls of this workspace are already in flight"),
            );
            return vec![self.send(&c, &codec::error_body(&r))];
        }
        let gate = self.next_gate;
        self.next_gate += 1;
        let g = Gate {
            gate,
            session: c.session_id.clone().unwrap_or_default(),
            call_id: c.id.clone(),
            tool: if tool.is_empty() {
                c.tool.clone().unwrap_or_default()
            } else {
                tool.to_string()
            },
            intention: self.pin.intention.clone(),
            ask,
            editable: (kind == Kind::Permission && EDITABLE.contains(&tool))
                .then(|| Box::new(args.clone())),
            environment: if matches!(tool, "workspace_exec" | "workspace_tool") {
                self.commands.env().vars().to_vec()
            } else {
                Vec::new()
            },
        };
        self.waiting.insert(
            self.key_of(&c),
            Waiting {
                gate,
                call: c,
                hash,
                tool,
                args,
                kind,
                shown: g.clone(),
            },
        );
        vec![Out::Gate(g)]
    }
}
