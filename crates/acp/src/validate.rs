//! `switchboard validate` for ACP recordings: JSON-RPC envelopes, the ACP types, the Checkfu
//! extension schema, the id rules (every agent request answered exactly once, no decision
//! after the agent cancelled a request, replies keyed to existing ids; our ids and the agent's
//! live in separate tables because they collide) and decision fidelity for permissions.

use std::collections::{HashMap, HashSet};

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::codec::{self, Frame, RpcError, schema};
use crate::mapping::Mapper;
use crate::schema as schema_acp;
use switchboard_core::gate::Decision;
use switchboard_record::Dir;
use switchboard_record::check::{Finding, Report, Rules, canonical, is_exit_note, unreadable_note};
use switchboard_record::load::{Frame as Recorded, Loaded};

/// Methods an agent may call on a client (ACP v1).
const AGENT_METHODS: &[&str] = &[
    "session/request_permission",
    "fs/read_text_file",
    "fs/write_text_file",
    "terminal/create",
    "terminal/output",
    "terminal/wait_for_exit",
    "terminal/kill",
    "terminal/release",
];

/// Notifications an agent may send.
const AGENT_NOTIFICATIONS: &[&str] = &["session/update", "$/cancel_request"];

fn typed<T: DeserializeOwned>(v: &Value) -> Result<(), String> {
    codec::typed::<T>(v).map(|_| ())
}

/// The ACP type check of a request's params (`None`: no type known for the method).
fn check_params(method: &str, p: &Value) -> Option<Result<(), String>> {
    Some(match method {
        "session/request_permission" => typed::<schema::RequestPermissionRequest>(p),
        "fs/read_text_file" => typed::<schema::ReadTextFileRequest>(p),
        "fs/write_text_file" => typed::<schema::WriteTextFileRequest>(p),
        "terminal/create" => typed::<schema::CreateTerminalRequest>(p),
        "terminal/output" => typed::<schema::TerminalOutputRequest>(p),
        "terminal/wait_for_exit" => typed::<schema::WaitForTerminalExitRequest>(p),
        "terminal/kill" => typed::<schema::KillTerminalRequest>(p),
        "terminal/release" => typed::<schema::ReleaseTerminalRequest>(p),
        "session/update" => typed::<schema::SessionNotification>(p),
        "initialize" => typed::<schema::InitializeRequest>(p),
        "session/new" => typed::<schema::NewSessionRequest>(p),
        "session/prompt" => typed::<schema::PromptRequest>(p),
        "session/cancel" => typed::<schema::CancelNotification>(p),
        "session/set_mode" => typed::<schema::SetSessionModeRequest>(p),
        _ => return None,
    })
}

/// The ACP type check of a result answering `method`.
fn check_result(method: &str, r: &Value) -> Option<Result<(), String>> {
    Some(match method {
        "session/request_permission" => typed::<schema::RequestPermissionResponse>(r),
        "fs/read_text_file" => typed::<schema::ReadTextFileResponse>(r),
        "fs/write_text_file" => typed::<schema::WriteTextFileResponse>(r),
        "terminal/create" => typed::<schema::CreateTerminalResponse>(r),
        "terminal/output" => typed::<schema::TerminalOutputResponse>(r),
        "terminal/wait_for_exit" => typed::<schema::WaitForTerminalExitResponse>(r),
        "terminal/kill" => typed::<schema::KillTerminalResponse>(r),
        "terminal/release" => typed::<schema::ReleaseTerminalResponse>(r),
        "initialize" => typed::<schema::InitializeResponse>(r),
        "session/new" => typed::<schema::NewSessionResponse>(r),
        "session/prompt" => typed::<schema::PromptResponse>(r),
        "session/set_mode" => typed::<schema::SetSessionModeResponse>(r),
        _ => return None,
    })
}

/// The Checkfu payload an inbound frame carries, projected into the frame of its vector kind:
/// the vectors are closed examples, so only the extension's part of a real frame is checked
/// (the rest is the ACP types' business). `answers` is the method of our request it answers.
fn inbound_checkfu(v: &Value, answers: Option<&str>) -> Option<(&'static str, Value)> {
    if let Some(sa) = v.pointer("/params/update/_meta/checkfu.subagent") {
        let kind = match sa.get("phase").and_then(Value::as_str) {
            Some("activity") => "session.update.subagent-activity",
            Some("completed") => "session.update.subagent-completed",
            _ => "session.update.subagent-started",
        };
        let frame = json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s",
            "update":{"sessionUpdate":"session_info_update","updatedAt":"t",
            "_meta":{"checkfu.subagent": sa}}}});
        return Some((kind, frame));
    }
    let r = v.get("result")?;
    let id = v.get("id").cloned().unwrap_or(json!(0));
    match answers? {
        "initialize" => {
            let caps = r
                .pointer("/_meta/checkfu.capabilities")
                .or_else(|| r.pointer("/agentCapabilities/_meta/checkfu.capabilities"))?;
            let frame = json!({"jsonrpc":"2.0","id":id,"result":{"protocolVersion":1,
                "agentCapabilities":{"mcpCapabilities":{"http":true}},
                "agentInfo":{"name":"a","version":"0"},
                "_meta":{"checkfu.capabilities": caps}}});
            Some(("initialize.full-declaration", frame))
        }
        "session/prompt" => {
            let t = r.pointer("/_meta/checkfu.turn")?;
            let frame = json!({"jsonrpc":"2.0","id":id,"result":{"stopReason":"end_turn",
                "_meta":{"checkfu.turn": t}}});
            Some(("session.prompt.turn-telemetry", frame))
        }
        "_checkfu/session/steer" => Some(("extension.steer.response", v.clone())),
        "_checkfu/session/interrupt" => Some(("extension.interrupt.response", v.clone())),
        _ => None,
    }
}

/// Problems one frame shows on its own (envelope, ACP types, Checkfu schema, our outbound
/// Checkfu frames): the frame inspector's verdict.
pub fn verdict(dir: Dir, text: &str) -> String {
    let v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(_) => return "not JSON (no JSON-RPC envelope)".into(),
    };
    match codec::parse(text) {
        Frame::NotJson { .. } => "not JSON (no JSON-RPC envelope)".into(),
        Frame::NoEnvelope { reason } => format!("INVALID: no JSON-RPC envelope ({reason})"),
        Frame::Request { method, params, .. } | Frame::Notification { method, params } => {
            if dir == Dir::Out
                && let Some(kind) = schema_acp::outbound_kind(&v)
            {
                return match schema_acp::validate_frame(kind, &v) {
                    Ok(()) => format!("valid (Checkfu: {kind})"),
                    Err(e) => format!("INVALID: {e}"),
                };
            }
            if let Some((kind, frame)) = inbound_checkfu(&v, None) {
                return match schema_acp::validate_frame(kind, &frame) {
                    Ok(()) => format!("valid (Checkfu: {kind})"),
                    Err(e) => format!("INVALID: {e}"),
                };
            }
            match check_params(&method, &params) {
                Some(Ok(())) => format!("valid (ACP: {method})"),
                Some(Err(e)) => format!("INVALID: {method} params outside the ACP types: {e}"),
                None => format!("JSON-RPC {method} (no ACP type for it)"),
            }
        }
        Frame::Response { outcome, .. } => match outcome {
            Ok(_) => "JSON-RPC response (checked against its request by `validate`)".into(),
            Err(e) => format!("JSON-RPC error response {}", e.describe()),
        },
    }
}

struct AgentReq {
    line: usize,
    method: String,
    withdrawn: bool,
}

pub struct Check {
    r: Report,
    /// The agent's open requests and the ones already answered (line of the answer).
    theirs: HashMap<String, AgentReq>,
    theirs_done: HashMap<String, (usize, String)>,
    /// Our open requests (method) and every id we used.
    ours: HashMap<String, String>,
    ours_seen: HashSet<String>,
    /// Whether a frame of ours has been read yet: a log of the agent's side only cannot pair
    /// replies with requests.
    saw_out: bool,
    /// Findings about pairing made before any frame of ours was read: they stand only if the
    /// log turns out to hold our side too.
    deferred: Vec<Finding>,
    /// The fidelity replay: the same mapping as live, fed the recorded lines.
    mapper: Mapper,
    /// The agent's requests whose id was unusable, each owed one error reply keyed `null`.
    invalid_ids: usize,
}

impl Default for Check {
    fn default() -> Check {
        Check::new()
    }
}

impl Check {
    pub fn new() -> Check {
        Check {
            r: Report::default(),
            theirs: HashMap::new(),
            theirs_done: HashMap::new(),
            ours: HashMap::new(),
            ours_seen: HashSet::new(),
            saw_out: false,
            deferred: Vec::new(),
            mapper: Mapper::replaying(None),
            invalid_ids: 0,
        }
    }

    /// A pairing finding: kept aside until the log shows our side as well.
    fn find_paired(&mut self, line: usize, rule: &'static str, message: impl Into<String>) {
        let f = Finding {
            line,
            rule,
            message: message.into(),
        };
        if self.saw_out {
            self.r.findings.push(f);
        } else {
            self.deferred.push(f);
        }
    }

    fn find(&mut self, line: usize, rule: &'static str, message: impl Into<String>) {
        self.r.findings.push(Finding {
            line,
            rule,
            message: message.into(),
        });
    }

    fn inbound(&mut self, line: usize, text: &str) {
        let frame = codec::parse(text);
        // The whole tree is needed only for the Checkfu checks: a frame that names the
        // extension, or a reply (its request's method decides). Most lines of a long recording
        // are session updates that need neither.
        let v: Option<Value> = (matches!(frame, Frame::Response { .. })
            || text.contains("checkfu"))
        .then(|| serde_json::from_str(text).ok())
        .flatten();
        match frame {
            Frame::NotJson { error } => self.find(
                line,
                "envelope",
                format!("the agent wrote a line without a JSON-RPC envelope (not JSON: {error})"),
            ),
            Frame::NoEnvelope { reason } => {
                if codec::invalid_request_id(text).is_some() {
                    self.invalid_ids += 1;
                }
                self.find(
                    line,
                    "envelope",
                    format!("the agent wrote a line without a JSON-RPC envelope ({reason})"),
                )
            }
            Frame::Request { id, method, params } => {
                let key = codec::id_key(&id);
                self.r.requests += 1;
                if let Some(open) = self.theirs.get(&key) {
                    let m = format!(
                        "the agent reused request id {key} ({method}) while {} from line {} is pending",
                        open.method, open.line
                    );
                    return self.find(line, "duplicate-id", m);
                }
                self.theirs_done.remove(&key);
                self.theirs.insert(
                    key,
                    AgentReq {
                        line,
                        method: method.clone(),
                        withdrawn: false,
                    },
                );
                self.agent_method(line, &method, &params, v.as_ref(), "request");
            }
            Frame::Notification { method, params } => {
                if method == "$/cancel_request" {
                    let Some(rid) = params.get("requestId") else {
                        return self.find(
                            line,
                            "invalid-frame",
                            "$/cancel_request without requestId",
                        );
                    };
                    let key = codec::id_key(rid);
                    match self.theirs.get_mut(&key) {
                        Some(req) => req.withdrawn = true,
                        None if self.theirs_done.contains_key(&key) => {}
                        None => self.find_paired(
                            line,
                            "unknown-request-id",
                            format!("the agent cancelled request {key}, which it never sent"),
                        ),
                    }
                    return;
                }
                self.agent_method(line, &method, &params, v.as_ref(), "notification");
            }
            Frame::Response { id, outcome } => {
                let key = codec::id_key(&id);
                let Some(method) = self.ours.remove(&key) else {
                    let m = if self.ours_seen.contains(&key) {
                        format!("the agent answered our request {key} again")
                    } else {
                        format!("the agent answered id {key}, which we never sent")
                    };
                    let rule = if self.ours_seen.contains(&key) {
                        "answered-twice"
                    } else {
                        "unknown-request-id"
                    };
                    return self.find_paired(line, rule, m);
                };
                if let Ok(result) = &outcome
                    && let Some(Err(e)) = check_result(&method, result)
                {
                    self.find(
                        line,
                        "invalid-frame",
                        format!("{method} result outside the ACP types: {e}"),
                    );
                }
                if let Some(v) = &v
                    && let Some((kind, frame)) = inbound_checkfu(v, Some(&method))
                    && let Err(e) = schema_acp::validate_frame(kind, &frame)
                {
                    self.find(line, "schema", e);
                }
            }
        }
    }

    /// A request or notification of the agent: a known method with ACP-typed params, or an
    /// extension method (`_…`).
    fn agent_method(
        &mut self,
        line: usize,
        method: &str,
        params: &Value,
        v: Option<&Value>,
        what: &str,
    ) {
        let known = if what == "request" {
            AGENT_METHODS.contains(&method)
        } else {
            AGENT_NOTIFICATIONS.contains(&method)
        };
        if !known && !method.starts_with('_') {
            return self.find(
                line,
                "unknown-method",
                format!("the agent sent the {what} {method:?}, which is no ACP client method"),
            );
        }
        if let Some(Err(e)) = check_params(method, params) {
            self.find(
                line,
                "invalid-frame",
                format!("{method} params outside the ACP types: {e}"),
            );
        }
        if let Some(v) = v
            && let Some((kind, frame)) = inbound_checkfu(v, None)
            && let Err(e) = schema_acp::validate_frame(kind, &frame)
        {
            self.find(line, "schema", e);
        }
    }

    fn outbound(&mut self, line: usize, text: &str) {
        let v: Option<Value> = serde_json::from_str(text).ok();
        match codec::parse(text) {
            Frame::NotJson { error } => self.find(
                line,
                "envelope",
                format!("we wrote a line without a JSON-RPC envelope (not JSON: {error})"),
            ),
            Frame::NoEnvelope { reason } => self.find(
                line,
                "envelope",
                format!("we wrote a line without a JSON-RPC envelope ({reason})"),
            ),
            Frame::Request { id, method, params } => {
                let key = codec::id_key(&id);
                if let Some(m) = self.ours.get(&key) {
                    let m =
                        format!("we reused request id {key} ({method}) while our {m} is pending");
                    self.find(line, "duplicate-request", m);
                }
                self.ours.insert(key.clone(), method.clone());
                self.ours_seen.insert(key);
                self.our_frame(line, &method, &params, v.as_ref());
            }
            Frame::Notification { method, params } => {
                self.our_frame(line, &method, &params, v.as_ref())
            }
            Frame::Response { id, outcome } => self.our_reply(line, &id, &outcome),
        }
    }

    fn our_frame(&mut self, line: usize, method: &str, params: &Value, v: Option<&Value>) {
        if let Some(v) = v
            && let Some(kind) = schema_acp::outbound_kind(v)
        {
            if let Err(e) = schema_acp::validate_frame(kind, v) {
                self.find(line, "schema", e);
            }
        } else if method.starts_with("_checkfu/") {
            self.find(
                line,
                "schema",
                format!("{method} is no frame of the Checkfu extension"),
            );
        }
        if let Some(Err(e)) = check_params(method, params) {
            self.find(
                line,
                "invalid-frame",
                format!("{method} params outside the ACP types: {e}"),
            );
        }
    }

    fn our_reply(&mut self, line: usize, id: &Value, outcome: &Result<Value, RpcError>) {
        // The error owed to a request whose id was unusable (itself reported as `envelope`).
        if id.is_null()
            && self.invalid_ids > 0
            && matches!(outcome, Err(e) if e.code == codec::INVALID_REQUEST)
        {
            self.invalid_ids -= 1;
            return;
        }
        let key = codec::id_key(id);
        let Some(req) = self.theirs.remove(&key) else {
            let m = match self.theirs_done.get(&key) {
                Some((at, method)) => {
                    let m = format!("{method} request {key} was already answered on line {at}");
                    return self.find(line, "answered-twice", m);
                }
                None if self.ours_seen.contains(&key) => {
                    format!("reply to {key}, which only our own requests carry")
                }
                None => format!("reply to {key}, which no request of the agent carries"),
            };
            return self.find(line, "unknown-request-id", m);
        };
        self.theirs_done
            .insert(key.clone(), (line, req.method.clone()));
        if req.withdrawn {
            let cancellation = match outcome {
                Err(e) => e.code == codec::REQUEST_CANCELLED,
                Ok(r) => {
                    req.method == "session/request_permission"
                        && r.pointer("/outcome/outcome").and_then(Value::as_str)
                            == Some("cancelled")
                }
            };
            if !cancellation {
                self.find(
                    line,
                    "reply-to-withdrawn",
                    format!(
                        "answered {} request {key} after the agent cancelled it (only a cancellation may follow $/cancel_request)",
                        req.method
                    ),
                );
            }
        }
        if let Ok(result) = outcome
            && let Some(Err(e)) = check_result(&req.method, result)
        {
            self.find(
                line,
                "invalid-frame",
                format!("{} result outside the ACP types: {e}", req.method),
            );
        }
    }
}

pub fn validate(loaded: &Loaded) -> Report {
    let mut c: Box<dyn Rules> = Box::new(Check::new());
    for f in &loaded.frames {
        c.frame(f);
    }
    c.finish()
}

impl Rules for Check {
    fn frame(&mut self, f: &Recorded) {
        self.r.frames += 1;
        match f.dir {
            Dir::In => {
                let _ = self.mapper.on_recorded_inbound(&f.text);
                self.inbound(f.src_line, &f.text);
            }
            Dir::Out => {
                self.saw_out = true;
                self.outbound(f.src_line, &f.text);
                let (_, answered) = self.mapper.on_outbound(&f.text);
                for a in answered {
                    fidelity(self, f.src_line, &f.text, a);
                }
            }
            Dir::Err => {}
            Dir::Note if is_exit_note(f) => {
                // Requests pending when the agent died could not be answered: information.
                let (rule, why) = switchboard_record::check::ended_by(f);
                let mut left: Vec<(String, AgentReq)> = self.theirs.drain().collect();
                left.sort_by_key(|(_, o)| o.line);
                for (id, o) in left {
                    let m = format!(
                        "{} request {id} was still pending when {} (line {}): {why}",
                        o.method,
                        if rule == "agent-exited" {
                            "the agent exited"
                        } else {
                            "the host stopped"
                        },
                        f.src_line
                    );
                    self.find(o.line, rule, m);
                }
            }
            Dir::Note => {
                unreadable_note(f, &mut self.r);
            }
        }
    }

    fn finish(mut self: Box<Self>) -> Report {
        if self.saw_out {
            let deferred = std::mem::take(&mut self.deferred);
            self.r.findings.extend(deferred);
            let mut left: Vec<(String, AgentReq)> = self.theirs.drain().collect();
            left.sort_by_key(|(_, o)| o.line);
            for (id, o) in left {
                let m = format!(
                    "{} request {id} was never answered{}",
                    o.method,
                    if o.withdrawn {
                        " (the agent cancelled it; a cancellation reply is still due)"
                    } else {
                        ""
                    }
                );
                self.find(o.line, "unanswered", m);
            }
        } else {
            self.find(
                0,
                "one-sided",
                "the log holds only the agent's side: replies are not paired with requests",
            );
        }
        self.r.findings.sort_by_key(|f| f.line);
        self.r
    }
}

/// A recorded permission reply read back as a decision, re-encoded by our encoder and
/// compared as canonical JSON.
fn fidelity(c: &mut Check, line: usize, text: &str, a: crate::mapping::RecordedAnswer) {
    let Some(ours) = a.reencoded else {
        return;
    };
    c.r.replies_checked += 1;
    let recorded: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    if let Decision::Raw { body } = &a.decision {
        c.find(
            line,
            "decision-fidelity",
            format!(
                "the reply to {} selects no option the agent offered (only the raw editor could send it): {}",
                a.rpc_id,
                canonical(body)
            ),
        );
        return;
    }
    let ours: Value = serde_json::from_str(&ours).unwrap_or(Value::Null);
    if canonical(&ours) != canonical(&recorded) {
        c.find(
            line,
            "decision-fidelity",
            format!(
                "re-encoding the recorded decision for {} differs\n  recorded: {}\n  ours:     {}",
                a.rpc_id,
                canonical(&recorded),
                canonical(&ours)
            ),
        );
    }
}
