//! Reading a recording back (replay, validate, export): the agent's lines go through the same
//! `on_line` as live, and the lines we wrote are understood through `on_outbound`. Nothing is
//! written and no `Action` is performed: a replay never talks to an agent, reads or writes no
//! file and starts no terminal. What the session did for an action is read from our recorded
//! reply instead (a file read, a terminal started, its output and exit).

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::actions::{AcpOptions, Action};
use super::wire::s;
use super::{Mapper, Ours, Out, Theirs};
use crate::codec::{self, Frame, RpcError, schema};
use switchboard_core::gate::{Decision, GateKind, PermOption};
use switchboard_core::msg::{BackendEvent, TurnState};
use switchboard_core::text::{sanitize, truncate};
use switchboard_core::transcript::{ItemKind, Level};

/// Replay-only state of the mapper.
#[derive(Clone, Debug, Default)]
pub(super) struct Recorded {
    /// The mapper reads a recording: its own requests are not remembered.
    pub(super) on: bool,
    /// The agent's requests by id key: (method, params), until our recorded reply.
    asked: HashMap<String, (String, Value)>,
    /// Our requests the mapping has no use for (authenticate, session/load, …) by id key.
    other: HashMap<String, String>,
}

/// A gate closed by a recorded reply of ours.
#[derive(Clone, Debug)]
pub struct RecordedAnswer {
    pub gate_id: String,
    /// The agent's JSON-RPC id.
    pub rpc_id: Value,
    /// What the reply expresses, as the decision the UI would have taken.
    pub decision: Decision,
    /// The reply our encoder gives for that decision (permissions only: file and terminal
    /// replies carry the outcome of the session's own IO).
    pub reencoded: Option<String>,
}

/// The option a permission answer selected, or why it is not one of ours.
fn permission_decision(options: &[PermOption], outcome: &Result<Value, RpcError>) -> Decision {
    let raw = |body: Value| Decision::Raw { body };
    let result = match outcome {
        Ok(r) => r,
        Err(e) => return raw(json!({"code": e.code, "message": e.message})),
    };
    match result.pointer("/outcome/outcome").and_then(Value::as_str) {
        Some("cancelled") => Decision::Cancelled,
        Some("selected") => {
            let oid = result.pointer("/outcome/optionId").and_then(Value::as_str);
            match options.iter().find(|o| Some(o.option_id.as_str()) == oid) {
                Some(o) => Decision::Option {
                    option_id: o.option_id.clone(),
                    name: o.name.clone(),
                    allow: o.kind.starts_with("allow"),
                },
                None => raw(result.clone()),
            }
        }
        _ => raw(result.clone()),
    }
}

/// A file or terminal gate: a reply is an allow unless it is our refusal.
fn yes_no_decision(outcome: &Result<Value, RpcError>, yes: &str) -> Decision {
    let refused = matches!(outcome, Err(e) if e.code == codec::REFUSED);
    Decision::Option {
        option_id: if refused { "reject" } else { "allow" }.into(),
        name: if refused { "Refuse" } else { yes }.into(),
        allow: !refused,
    }
}

/// `exitStatus` of a terminal reply as the row shows it.
fn exit_text(v: &Value) -> Option<String> {
    let st = v
        .get("exitStatus")
        .filter(|e| !e.is_null())
        .or_else(|| (v.get("exitCode").is_some() || v.get("signal").is_some()).then_some(v))?;
    Some(
        match (
            st.get("exitCode").and_then(Value::as_i64),
            st.get("signal").and_then(Value::as_str),
        ) {
            (_, Some(sig)) => format!("killed by {sig}"),
            (Some(c), None) => format!("exit {c}"),
            (None, None) => "exited".into(),
        },
    )
}

/// The text of a `session/prompt`'s content blocks.
fn prompt_text(params: &Value) -> String {
    params
        .get("prompt")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .map(|b| match b.get("type").and_then(Value::as_str) {
                    Some("text") => s(b, "text").unwrap_or_default(),
                    Some("resource_link") => format!("[link {}]", s(b, "uri").unwrap_or_default()),
                    Some("resource") => format!(
                        "[resource {}]",
                        b.pointer("/resource/uri")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                    ),
                    Some(other) => format!("[{other}]"),
                    None => String::new(),
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// A recorded line of the agent, read: what `on_recorded_read` maps. Reading needs no
/// mapping state, so replay's background pass reads lines on one thread and maps them on
/// another.
pub enum Inbound {
    /// A plain text message or thought chunk (most lines), off its fast path.
    Chunk {
        thinking: bool,
        text: String,
        message_id: Option<String>,
    },
    /// A tool call, its update or a plan, read straight into its type.
    Tool(Box<schema::SessionUpdate>),
    Blank,
    /// Anything else, through the general parse.
    Frame(Frame),
}

/// Read one recorded line of the agent.
pub fn read_inbound(line: &str) -> Inbound {
    // A text chunk is neither a response nor a request: straight to its fast path.
    let line = line.trim_end_matches(['\r', '\n']);
    if let Some(c) = super::fast::chunk(line) {
        return Inbound::Chunk {
            thinking: c.thinking,
            text: c.text.into_owned(),
            message_id: c.message_id.map(|m| m.into_owned()),
        };
    }
    // So is a tool call, its update or a plan: read once, typed (a `Value` tree here and
    // the typed read in `on_line` doubled the cost of the largest lines).
    match super::fast::tool_update(line) {
        Some(u) => Inbound::Tool(Box::new(u)),
        None if line.trim().is_empty() => Inbound::Blank,
        None => Inbound::Frame(codec::parse(line)),
    }
}

/// Read one recorded line of ours.
pub fn read_outbound(line: &str) -> Frame {
    codec::parse(line.trim_end_matches(['\r', '\n']))
}

impl Mapper {
    /// A mapper that reads a recording back. `cwd` is the recorded session directory when the
    /// caller knows it; a recorded `session/new` sets it too.
    pub fn replaying(cwd: Option<PathBuf>) -> Mapper {
        let mut m = Mapper::new(AcpOptions {
            cwd: cwd.unwrap_or_default(),
            ..AcpOptions::default()
        });
        m.rec.on = true;
        m
    }

    /// One recorded line of the agent. Like `on_line`, but: a response to a request of ours
    /// that the recording does not hold (a log of the agent's side only) is read by its shape;
    /// an `fs/write_text_file` opens its gate without reading the disk; lines and actions are
    /// dropped.
    pub fn on_recorded_inbound(&mut self, line: &str) -> Out {
        // The most common line, mapped from the line's own text (`read_inbound` copies it,
        // for a reader on another thread).
        if let Some(c) = super::fast::chunk(line.trim_end_matches(['\r', '\n'])) {
            let mut out = Out::default();
            self.chunk_text(c.thinking, &c.text, c.message_id.as_deref(), &mut out);
            return out;
        }
        self.on_recorded_read(line, read_inbound(line))
    }

    /// `on_recorded_inbound` of a line `read_inbound` already read (the background pass
    /// reads lines on another thread, ahead of their mapping).
    pub fn on_recorded_read(&mut self, line: &str, read: Inbound) -> Out {
        let line = line.trim_end_matches(['\r', '\n']);
        let mut out = match read {
            Inbound::Chunk {
                thinking,
                text,
                message_id,
            } => {
                let mut out = Out::default();
                // Sanitized here, not on the reader thread: that thread has the larger share
                // of a replay's work (the entries' unescaping, the parse).
                let text = switchboard_core::text::sanitize_owned(std::borrow::Cow::Owned(text));
                self.chunk_clean(thinking, text, message_id.as_deref(), &mut out);
                return out;
            }
            Inbound::Tool(u) => {
                let mut out = Out::default();
                self.tool_or_plan(*u, &mut out);
                out
            }
            Inbound::Blank => return Out::default(),
            // Parsed once: what the envelope tells the recording, then the mapping.
            Inbound::Frame(frame) => {
                if let Some(out) = self.recorded_envelope(&frame) {
                    return out;
                }
                self.on_frame(frame, line)
            }
        };
        out.lines.clear();
        for a in std::mem::take(&mut out.actions) {
            if let Action::PrepareWrite { id, path, content } = a {
                let mut more = self.write_gate(id, path.clone(), content.clone(), None);
                // The file on disk at the time is not in the recording: show the new content.
                for e in &mut more.events {
                    if let BackendEvent::GateOpen(g) = e
                        && let GateKind::Permission(p) = &mut g.kind
                    {
                        p.title = Some(format!(
                            "write {} ({} bytes; the file as it was is not recorded)",
                            sanitize(&path.display().to_string()),
                            content.len()
                        ));
                    }
                }
                out.extend(more);
            }
        }
        out.lines.clear();
        out.actions.clear();
        out
    }

    /// What a recorded response or request tells before it is mapped: the requests the agent
    /// made and ours that the recording shows answered. `Some` when the line is fully handled
    /// here (the answer to a request of ours the mapping does not track).
    fn recorded_envelope(&mut self, frame: &Frame) -> Option<Out> {
        match frame {
            Frame::Response { id, outcome } => {
                let key = codec::id_key(id);
                if !self.ours.contains_key(&key) {
                    if let Some(method) = self.rec.other.remove(&key) {
                        let mut out = Out::default();
                        if let Err(e) = outcome {
                            out.protocol(Level::Warn, format!("{method} failed: {}", e.describe()));
                        }
                        return Some(out);
                    }
                    let guess = outcome.as_ref().ok().and_then(|r| {
                        if r.get("protocolVersion").is_some() {
                            Some(Ours::Initialize)
                        } else if r.get("stopReason").is_some() {
                            Some(Ours::Prompt)
                        } else if r.get("sessionId").is_some() {
                            Some(Ours::NewSession)
                        } else {
                            None
                        }
                    });
                    if let Some(g) = guess {
                        if matches!(g, Ours::Prompt) && !self.turn {
                            self.turn = true;
                            self.turn_no += 1;
                        }
                        self.ours.insert(key, g);
                    }
                }
            }
            Frame::Request { id, method, params } => {
                self.rec
                    .asked
                    .insert(codec::id_key(id), (method.clone(), params.clone()));
            }
            _ => {}
        }
        None
    }

    /// One line we wrote, read back from a recording: our requests are remembered so the
    /// agent's responses to them are understood, a prompt shows as the user's turn, and a
    /// reply to one of the agent's gates closes it with the decision it expresses.
    pub fn on_outbound(&mut self, line: &str) -> (Out, Vec<RecordedAnswer>) {
        self.on_outbound_frame(line, read_outbound(line))
    }

    /// `on_outbound` of a line `read_outbound` already parsed.
    pub fn on_outbound_frame(&mut self, line: &str, frame: Frame) -> (Out, Vec<RecordedAnswer>) {
        let mut out = Out::default();
        let mut answered = Vec::new();
        match frame {
            Frame::NotJson { .. } | Frame::NoEnvelope { .. } => out.protocol(
                Level::Warn,
                format!(
                    "recorded outbound line without a JSON-RPC envelope: {}",
                    truncate(&sanitize(line), 200)
                ),
            ),
            Frame::Request { id, method, params } => {
                self.our_request(&id, &method, &params, &mut out)
            }
            Frame::Notification { method, .. } => {
                if method == "session/cancel" {
                    out.info("turn", Some("cancelling".into()));
                    out.system("cancel", "session/cancel sent");
                }
            }
            Frame::Response { id, outcome } => {
                if let Some(a) = self.our_reply(&id, &outcome, &mut out) {
                    answered.push(a);
                }
            }
        }
        out.lines.clear();
        out.actions.clear();
        (out, answered)
    }

    fn our_request(&mut self, id: &Value, method: &str, params: &Value, out: &mut Out) {
        let key = codec::id_key(id);
        if let Some(n) = id.as_u64() {
            self.next_id = self.next_id.max(n);
        }
        let ours = match method {
            "initialize" => {
                // What the session withheld is refused in replay too, as it was live.
                let caps = params.get("clientCapabilities");
                // Only an explicit `false` (as we send it) withholds: older recordings offered.
                let refused =
                    |p: &str| caps.and_then(|c| c.pointer(p)) == Some(&Value::Bool(false));
                self.opts.withhold_fs = refused("/fs/writeTextFile") && refused("/fs/readTextFile");
                self.opts.withhold_terminal = refused("/terminal");
                Ours::Initialize
            }
            "session/new" => {
                if let Some(cwd) = s(params, "cwd") {
                    self.opts.cwd = PathBuf::from(cwd);
                }
                Ours::NewSession
            }
            "session/load" => {
                if let Some(cwd) = s(params, "cwd") {
                    self.opts.cwd = PathBuf::from(cwd);
                }
                let id = s(params, "sessionId").unwrap_or_default();
                // As live: the agent's replay of the history is counted, not drawn twice.
                self.resume_session(&id, true);
                self.start_loading();
                Ours::LoadSession(id)
            }
            "session/prompt" => {
                self.prompting();
                self.turn = true;
                self.turn_no += 1;
                self.seg = 0;
                self.turn_started_ms = self.now;
                out.push(ItemKind::User {
                    text: sanitize(&prompt_text(params)),
                });
                out.ev(BackendEvent::Turn(TurnState::Running));
                Ours::Prompt
            }
            "session/set_mode" => Ours::SetMode(s(params, "modeId").unwrap_or_default()),
            "session/set_config_option" => Ours::SetConfig(
                s(params, "configId").unwrap_or_default(),
                match params.get("value") {
                    Some(Value::String(v)) => v.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                },
            ),
            "session/set_model" => Ours::SetModel(s(params, "modelId").unwrap_or_default()),
            "_checkfu/session/steer" => {
                let text = s(params, "content").unwrap_or_default();
                out.push(ItemKind::User {
                    text: sanitize(&text),
                });
                out.system("steer", "sent to the running turn");
                Ours::Steer { text }
            }
            "_checkfu/session/interrupt" => {
                out.system("interrupt", "cooperative interrupt requested");
                Ours::Interrupt
            }
            other => {
                self.rec.other.insert(key, other.to_string());
                return;
            }
        };
        self.ours.insert(key, ours);
    }

    fn our_reply(
        &mut self,
        id: &Value,
        outcome: &Result<Value, RpcError>,
        out: &mut Out,
    ) -> Option<RecordedAnswer> {
        let key = codec::id_key(id);
        let asked = self.rec.asked.remove(&key);
        let gid = Self::gate_id(id);
        self.waiting.remove(&gid);
        if let Some(inc) = self.theirs.remove(&gid) {
            let (decision, reencoded) = match &inc.what {
                Theirs::Permission { options, tool } => {
                    // The row reads what the recording says was sent.
                    if let Ok(body) = outcome {
                        self.tool_decided(tool, options, body, out);
                    }
                    let d = permission_decision(options, outcome);
                    // Our encoder, fed the decision: the same code path as a live answer.
                    self.theirs.insert(gid.clone(), inc.clone());
                    let mut enc = Out::default();
                    self.answer(&gid, &d, &mut enc);
                    (d, enc.lines.into_iter().next())
                }
                Theirs::Write { path, content, .. } => {
                    if outcome.is_ok() {
                        out.system(
                            "fs",
                            format!("wrote {} ({} bytes)", path.display(), content.len()),
                        );
                    }
                    (yes_no_decision(outcome, "Write the file"), None)
                }
                Theirs::Terminal { spec } => {
                    if let Ok(r) = outcome
                        && let Some(tid) = s(r, "terminalId")
                    {
                        let mut shown = self.terminal_created(id, &tid, &spec.command_line());
                        shown.lines.clear();
                        out.extend(shown);
                    }
                    (yes_no_decision(outcome, "Run it"), None)
                }
            };
            out.ev(BackendEvent::GateAnswered {
                id: gid.clone(),
                decision: decision.clone(),
            });
            return Some(RecordedAnswer {
                gate_id: gid,
                rpc_id: id.clone(),
                decision,
                reencoded,
            });
        }
        let (method, params) = asked?;
        let Ok(result) = outcome else {
            return None;
        };
        let tid = s(&params, "terminalId").unwrap_or_default();
        match method.as_str() {
            "fs/read_text_file" => out.system(
                "fs",
                format!(
                    "read {} for the agent",
                    sanitize(&s(&params, "path").unwrap_or_default())
                ),
            ),
            "terminal/output" => {
                let text = s(result, "output").unwrap_or_default();
                let truncated = result
                    .get("truncated")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let shown = self.terminal_update(&tid, &text, truncated, exit_text(result));
                out.extend(shown);
            }
            "terminal/wait_for_exit" => {
                let (text, truncated) = self
                    .terms
                    .get(&tid)
                    .map(|t| (t.output.clone(), t.truncated))
                    .unwrap_or_default();
                let shown = self.terminal_update(&tid, &text, truncated, exit_text(result));
                out.extend(shown);
            }
            _ => {}
        }
        None
    }

    /// Our recorded request ids the mapper is waiting on (for tests and checks).
    pub fn awaiting(&self) -> usize {
        self.ours.len()
    }

    /// Keep `Incoming` constructible here for tests of the replay path.
    #[cfg(test)]
    fn pending_permission(&mut self, id: Value, options: Vec<PermOption>) {
        self.theirs.insert(
            Self::gate_id(&id),
            super::Incoming {
                rpc_id: id,
                what: Theirs::Permission {
                    options,
                    tool: String::new(),
                },
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opt(id: &str, kind: &str) -> PermOption {
        PermOption {
            option_id: id.into(),
            name: id.to_uppercase(),
            kind: kind.into(),
        }
    }

    #[test]
    fn recorded_permission_replies_become_decisions_and_reencode() {
        let mut m = Mapper::replaying(None);
        m.pending_permission(
            json!(0),
            vec![opt("yes", "allow_once"), opt("no", "reject_once")],
        );
        let (out, a) = m.on_outbound(
            r#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"no"}}}"#,
        );
        assert!(out.lines.is_empty());
        assert_eq!(a.len(), 1);
        assert!(
            matches!(&a[0].decision, Decision::Option { option_id, allow: false, .. } if option_id == "no")
        );
        let re: Value = serde_json::from_str(a[0].reencoded.as_deref().unwrap()).unwrap();
        assert_eq!(re["result"]["outcome"]["optionId"], "no");
        assert!(m.pending_gates().is_empty());
        // Unknown option ids are no decision of ours.
        m.pending_permission(json!(1), vec![opt("yes", "allow_once")]);
        let (_, a) = m.on_outbound(
            r#"{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"zzz"}}}"#,
        );
        assert!(matches!(a[0].decision, Decision::Raw { .. }));
        m.pending_permission(json!(2), vec![opt("yes", "allow_once")]);
        let (_, a) = m.on_outbound(
            r#"{"jsonrpc":"2.0","id":2,"result":{"outcome":{"outcome":"cancelled"}}}"#,
        );
        assert_eq!(a[0].decision, Decision::Cancelled);
    }

    #[test]
    fn our_requests_are_learned_and_actions_never_leave() {
        let mut m = Mapper::replaying(None);
        m.on_outbound(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#);
        let out = m.on_recorded_inbound(
            r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#,
        );
        assert!(out.lines.is_empty(), "session/new is not sent again");
        assert_eq!(m.awaiting(), 0);
        m.on_outbound(r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}"#);
        m.on_recorded_inbound(r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s"}}"#);
        assert!(m.ready());
        let (out, _) = m.on_outbound(r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}"#);
        assert!(
            out.events
                .iter()
                .any(|e| matches!(e, BackendEvent::Item { .. }))
        );
        assert!(m.turn_running());
        let out = m.on_recorded_inbound(
            r#"{"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/w/a"}}"#,
        );
        assert!(out.actions.is_empty() && out.lines.is_empty());
        let out = m.on_recorded_inbound(
            r#"{"jsonrpc":"2.0","id":1,"method":"fs/write_text_file","params":{"sessionId":"s","path":"/w/b","content":"x"}}"#,
        );
        assert!(
            out.events
                .iter()
                .any(|e| matches!(e, BackendEvent::GateOpen(_)))
        );
        let (_, a) = m.on_outbound(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        assert!(matches!(
            a[0].decision,
            Decision::Option { allow: true, .. }
        ));
        m.on_recorded_inbound(r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#);
        assert!(!m.turn_running());
    }
}
