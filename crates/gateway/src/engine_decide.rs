//! The owner's side of the engine: decisions on cards (edits included), the `sent` marks,
//! and settling receipts an interruption left uncertain.

use super::*;

impl Engine {
    /// The owner's decision on a card.
    pub fn decide(&mut self, gate: u64, d: Decision) -> Vec<Out> {
        let mut out = self.decision(gate, d);
        self.journal_news(&mut out);
        out
    }

    /// The owner's edit of a waiting call, checked as the host's arguments are (schema,
    /// containment, ownership): the arguments that will run and the card they make.
    pub(super) fn check_edit(
        &mut self,
        w: &Waiting,
        edited: Map<String, Value>,
    ) -> Result<(Map<String, Value>, Ask), Refusal> {
        if !EDITABLE.contains(&w.tool) {
            return Err(Refusal::new(
                Code::SchemaViolation,
                format!("the input of {} cannot be edited", w.tool),
            ));
        }
        validate::check_args(w.tool, &edited)?;
        let ask = self.preview(&w.call, w.tool, &edited)?;
        Ok((edited, ask))
    }

    pub(super) fn decision(&mut self, gate: u64, d: Decision) -> Vec<Out> {
        let Some(key) = self
            .waiting
            .iter()
            .find(|(_, w)| w.gate == gate)
            .map(|(k, _)| k.clone())
        else {
            return Vec::new();
        };
        let w = self.waiting.remove(&key).expect("found above");
        match (w.kind, d) {
            (Kind::Conversation, Decision::Allow) => {
                let session = w.call.session_id.clone().unwrap_or_default();
                if !self.accepted.contains(&session) {
                    self.accepted.push(session);
                }
                let decoded = validate::decode_args(w.call.args.as_ref());
                self.after_session(w.call, w.hash, decoded)
            }
            (Kind::Conversation, _) => {
                self.refused
                    .insert(w.call.session_id.clone().unwrap_or_default());
                let r = Refusal::new(
                    Code::SessionUnknown,
                    "the owner did not accept this conversation",
                );
                self.decided_final(&w.call, &w.hash, "", r)
            }
            (Kind::Question, Decision::Answer(text)) => {
                let body = codec::ok_body(&json!({"answer": text}));
                let effect = json!({"answer_sha256": sha256_hex(text.as_bytes())});
                if let Err(e) = self.journal.completed(&key, &w.hash, w.tool, effect, &body) {
                    return vec![self.journal_failed(&w.call, e)];
                }
                vec![self.send(&w.call, &body)]
            }
            (Kind::Question, _) => {
                let r = Refusal::new(Code::Cancelled, "the owner cancelled the question");
                self.decided_final(&w.call, &w.hash, w.tool, r)
            }
            (Kind::Permission, Decision::Allow) => {
                self.execute(&w.call, &w.hash, w.tool, &w.args, false)
            }
            (Kind::Permission, Decision::AllowEdited(edited)) => {
                match self.check_edit(&w, edited) {
                    Ok((args, ask)) => {
                        // The audit row quotes what runs, not what the host asked.
                        let mut out = vec![Out::Ran {
                            session: w.call.session_id.clone().unwrap_or_default(),
                            tool: w.tool.to_string(),
                            summary: summary_of(&ask),
                            outcome: "edited by the owner, then run".to_string(),
                        }];
                        out.extend(self.execute(&w.call, &w.hash, w.tool, &args, true));
                        out
                    }
                    Err(r) => {
                        // An edit that could not run changes nothing: the call waits on a card
                        // again, under a new number (the old card was answered on screen).
                        let mut w = w;
                        w.gate = self.next_gate;
                        w.shown.gate = self.next_gate;
                        self.next_gate += 1;
                        let shown = w.shown.clone();
                        self.waiting.insert(key, w);
                        vec![
                            Out::EditRefused {
                                gate,
                                why: r.message,
                            },
                            Out::Gate(shown),
                        ]
                    }
                }
            }
            (Kind::Permission, d) => {
                let msg = match d {
                    Decision::Deny(Some(m)) if !m.trim().is_empty() => {
                        format!("denied by the owner: {m}")
                    }
                    _ => "denied by the owner".to_string(),
                };
                self.decided_final(
                    &w.call,
                    &w.hash,
                    w.tool,
                    Refusal::new(Code::DeniedByOwner, msg),
                )
            }
        }
    }

    /// A result frame was handed to the socket: its receipt (if the id has one) is marked
    /// `sent`. Informational: a failure to write it changes no answer.
    pub fn mark_sent(&mut self, frame: &str) -> io::Result<bool> {
        #[derive(serde::Deserialize)]
        struct Ids {
            id: String,
            #[serde(rename = "sessionId")]
            session_id: String,
        }
        let Ok(ids) = serde_json::from_str::<Ids>(frame) else {
            return Ok(false);
        };
        self.journal
            .sent(&(self.pin.workspace_id.clone(), ids.session_id, ids.id))
    }

    /// Receipts interrupted by a crash, for the owner to inspect.
    pub fn uncertain(&self) -> Vec<(Key, crate::journal::Entry)> {
        self.journal.uncertain()
    }

    /// Settle an uncertain receipt. `by_owner: None` settles only on a conclusive
    /// observation (a file effect whose path now has the new or the old SHA); with a note it
    /// is the owner's word. Either way the id gets a final answer and is never re-run.
    pub fn settle(&mut self, key: &Key, by_owner: Option<&str>) -> Result<String, String> {
        let Some(e) = self.journal.get(key).cloned() else {
            return Err("no such receipt".into());
        };
        if e.state != State::Executing || e.live {
            return Err("this receipt is not uncertain".into());
        }
        let body = match by_owner {
            Some(note) => codec::error_body(&Refusal::new(
                Code::UncertainEffect,
                format!("interrupted; the owner inspected it and settled it: {note}"),
            )),
            None => {
                let path = e.effect["path"]
                    .as_str()
                    .ok_or("no conclusive check for this effect (not a file)")?;
                let now = files::sha_now(&self.root, path).map_err(|r| r.message)?;
                let new = e.effect["newSha256"].as_str().map(str::to_string);
                let old = e.effect["expectedSha256"].as_str().map(str::to_string);
                if now == new {
                    codec::ok_body(
                        &json!({"path": path, "sha256": now, "settled": "applied before an interruption"}),
                    )
                } else if now == old {
                    codec::error_body(&Refusal::new(
                        Code::UncertainEffect,
                        format!(
                            "{path} was not changed: the interrupted effect did not happen; re-send under a new id"
                        ),
                    ))
                } else {
                    return Err(format!(
                        "{path} has neither the old nor the new revision: inconclusive"
                    ));
                }
            }
        };
        self.journal
            .completed(key, &e.hash, &e.tool, e.effect, &body)
            .map_err(|e| e.to_string())?;
        Ok(body)
    }
}
