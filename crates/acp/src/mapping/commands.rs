//! Domain commands → frames: prompts, cancel, gate answers, shutdown.

use serde_json::json;

use super::actions::Action;
use super::{Mapper, Ours, Out, Theirs};
use crate::codec;
use switchboard_core::gate::Decision;
use switchboard_core::msg::{BackendEvent, Command, TurnState};
use switchboard_core::transcript::Level;

impl Mapper {
    pub fn command(&mut self, c: &Command) -> Out {
        let mut out = Out::default();
        match c {
            Command::Answer { gate_id, decision } => self.answer(gate_id, decision, &mut out),
            Command::Prompt(text) => {
                if !self.ready {
                    self.queued.push_back(text.clone());
                    out.system("queue", "held until the session is ready");
                } else if self.turn {
                    if self.declared("steer", "native") {
                        self.steer_seq += 1;
                        let sid = self.session_id.clone().unwrap_or_default();
                        let line = self.request(
                            "_checkfu/session/steer",
                            json!({"sessionId": sid, "id": format!("steer-{}", self.steer_seq), "content": text}),
                            Ours::Steer { text: text.clone() },
                        );
                        out.lines.push(line);
                        out.system("steer", "sent to the running turn");
                    } else {
                        self.queued.push_back(text.clone());
                        out.system("queue", "a turn is running: queued as the next prompt");
                    }
                } else {
                    self.send_prompt(text.clone(), &mut out);
                }
            }
            Command::Interrupt => {
                if !self.turn {
                    out.system("interrupt", "no turn is running");
                } else if self.declared("interrupt", "cooperative") && !self.draining {
                    let sid = self.session_id.clone().unwrap_or_default();
                    let line = self.request(
                        "_checkfu/session/interrupt",
                        json!({"sessionId": sid}),
                        Ours::Interrupt,
                    );
                    out.lines.push(line);
                    out.system("interrupt", "cooperative interrupt requested");
                } else {
                    self.cancel(&mut out);
                }
            }
            Command::SetMode(mode) => match self.session_id.clone() {
                Some(sid) => {
                    let line = self.request(
                        "session/set_mode",
                        json!({"sessionId": sid, "modeId": mode}),
                        Ours::SetMode(mode.clone()),
                    );
                    out.lines.push(line);
                }
                None => out.system("mode", "no session yet"),
            },
            Command::SetConfig { id, value } => match self.session_id.clone() {
                Some(sid) => {
                    // A switch's value goes as a boolean, a select's as its value id.
                    let boolean = self.caps.options.iter().any(|o| o.id == *id && o.boolean);
                    let params = if boolean {
                        json!({"sessionId": sid, "configId": id, "type": "boolean", "value": value == "true"})
                    } else {
                        json!({"sessionId": sid, "configId": id, "value": value})
                    };
                    let line = self.request(
                        "session/set_config_option",
                        params,
                        Ours::SetConfig(id.clone(), value.clone()),
                    );
                    out.lines.push(line);
                }
                None => out.system("option", "no session yet"),
            },
            Command::SetModel(model) => match self.session_id.clone() {
                Some(sid) => {
                    let line = self.request(
                        "session/set_model",
                        json!({"sessionId": sid, "modelId": model}),
                        Ours::SetModel(model.clone()),
                    );
                    out.lines.push(line);
                }
                None => out.system("model", "no session yet"),
            },
            Command::Shutdown | Command::Note(_) => {}
            // iii-only (queue edits, harness sessions): said, never silently dropped.
            Command::EditQueued { .. }
            | Command::Unqueue { .. }
            | Command::NewHarnessSession(_) => {
                out.protocol(Level::Warn, c.unsupported().unwrap_or_default())
            }
        }
        out
    }

    pub(super) fn send_prompt(&mut self, text: String, out: &mut Out) {
        let Some(sid) = self.session_id.clone() else {
            self.queued.push_front(text);
            return;
        };
        self.prompting();
        self.turn = true;
        self.turn_no += 1;
        self.seg = 0;
        self.turn_started_ms = self.now;
        let line = self.request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
            Ours::Prompt,
        );
        out.lines.push(line);
        out.ev(BackendEvent::Turn(TurnState::Running));
    }

    /// `session/cancel`, then every pending permission answered `cancelled`.
    pub(super) fn cancel(&mut self, out: &mut Out) {
        let sid = self.session_id.clone().unwrap_or_default();
        out.lines.push(codec::notification(
            "session/cancel",
            json!({"sessionId": sid}),
        ));
        out.info("turn", Some("cancelling".into()));
        let ids: Vec<String> = self
            .theirs
            .iter()
            .filter(|(_, i)| matches!(i.what, Theirs::Permission { .. }))
            .map(|(g, _)| g.clone())
            .collect();
        for gid in &ids {
            if let Some(inc) = self.theirs.remove(gid) {
                let body = json!({"outcome":{"outcome":"cancelled"}});
                if let Theirs::Permission { options, tool } = &inc.what {
                    self.tool_decided(tool, options, &body, out);
                }
                out.lines.push(codec::result(&inc.rpc_id, body));
                out.ev(BackendEvent::GateClosed {
                    id: gid.clone(),
                    decision: switchboard_core::gate::Decision::Cancelled,
                });
            }
        }
        out.system(
            "cancel",
            if ids.is_empty() {
                "session/cancel sent".to_string()
            } else {
                format!(
                    "session/cancel sent; {} pending permission(s) answered cancelled",
                    ids.len()
                )
            },
        );
    }

    pub(super) fn answer(&mut self, gate_id: &str, d: &Decision, out: &mut Out) {
        let Some(inc) = self.theirs.remove(gate_id) else {
            out.protocol(
                Level::Warn,
                format!("answer for {gate_id}, which is not pending"),
            );
            return;
        };
        let id = inc.rpc_id;
        match inc.what {
            Theirs::Permission { options, tool } => {
                let pick = |kinds: &[&str]| {
                    kinds
                        .iter()
                        .find_map(|k| options.iter().find(|o| o.kind == *k))
                        .map(|o| o.option_id.clone())
                };
                let selected =
                    |oid: String| json!({"outcome":{"outcome":"selected","optionId":oid}});
                let cancelled = json!({"outcome":{"outcome":"cancelled"}});
                let body = match d {
                    Decision::Option { option_id, .. } => selected(option_id.clone()),
                    Decision::Allow { always: true, .. } => {
                        pick(&["allow_always", "allow_once"]).map_or(cancelled, selected)
                    }
                    Decision::Allow { .. } => {
                        pick(&["allow_once", "allow_always"]).map_or(cancelled, selected)
                    }
                    // A "no" selects a reject option; `cancelled` is never a deny.
                    Decision::Deny { .. } => {
                        pick(&["reject_once", "reject_always"]).map_or(cancelled, selected)
                    }
                    Decision::Raw { body } => body.clone(),
                    _ => cancelled,
                };
                // What the agent is told is what counts: an allow option actually selected.
                // One whose name says otherwise ("Reject") was not knowingly an approval of
                // the edit, so it covers no write (that write meets its own gate).
                let allowed = body["outcome"]["optionId"].as_str().is_some_and(|oid| {
                    options
                        .iter()
                        .any(|o| o.option_id == oid && o.allows() && !o.contradicts())
                });
                self.tool_decided(&tool, &options, &body, out);
                self.permission_answered(gate_id, allowed, codec::result(&id, body), out);
            }
            Theirs::Write {
                path,
                content,
                base,
            } => {
                if allows(d) {
                    out.actions.push(Action::WriteFile {
                        id,
                        path,
                        content,
                        base,
                    });
                } else {
                    self.refuse(
                        &id,
                        "fs/write_text_file",
                        &format!("the user refused to write {}", path.display()),
                        out,
                    );
                }
            }
            Theirs::Terminal { spec } => {
                if allows(d) {
                    out.actions.push(Action::CreateTerminal { id, spec });
                } else {
                    self.refuse(
                        &id,
                        "terminal/create",
                        &format!("the user refused to run `{}`", spec.command_line()),
                        out,
                    );
                }
            }
        }
    }

    /// Answers for everything still pending when switchboard exits: permissions `cancelled`,
    /// the rest an error.
    pub fn shutdown_answers(&mut self) -> Vec<String> {
        let theirs = std::mem::take(&mut self.theirs);
        theirs
            .into_values()
            .map(|inc| match inc.what {
                Theirs::Permission { .. } => {
                    codec::result(&inc.rpc_id, json!({"outcome":{"outcome":"cancelled"}}))
                }
                _ => codec::error(
                    &inc.rpc_id,
                    codec::INTERNAL_ERROR,
                    "switchboard exited",
                    None,
                ),
            })
            .collect()
    }

    /// Ids of the agent's requests still waiting for a human.
    pub fn pending_gates(&self) -> Vec<String> {
        self.theirs.keys().cloned().collect()
    }

    // ---- terminals (state reported by the session) ---------------------------------------
}

pub(super) fn allows(d: &Decision) -> bool {
    matches!(
        d,
        Decision::Option { allow: true, .. } | Decision::Allow { .. }
    )
}
