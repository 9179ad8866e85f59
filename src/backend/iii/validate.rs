//! `switchboard validate` for iii recordings, frame by frame: every frame decodes; our calls
//! never include `harness::function::resolve`; every `approval::resolve` is well formed, is
//! for a call the engine held (seen in a listing or a `pending-created` event), and is sent
//! once per held call.

use std::collections::HashSet;

use serde_json::Value;

use super::codec::{self, Message};
use super::mapping::RecordedAnswers;
use crate::record::Dir;
use crate::replay::load::Frame;
use crate::replay::validate::{Finding, Report, Rules};

/// Ids remembered at most: a hostile recording must not grow memory without bound.
const MAX_IDS: usize = 100_000;

#[derive(Default)]
pub struct Check {
    report: Report,
    answers: RecordedAnswers,
    /// Held calls seen: (session, call).
    held: HashSet<(String, String)>,
    /// Held calls resolved by us.
    resolved: HashSet<(String, String)>,
    /// Our calls waiting for their result, by invocation id: the function id.
    calls: std::collections::HashMap<String, String>,
    /// Handler id → trigger type (our `registertrigger` frames).
    handlers: std::collections::HashMap<String, String>,
}

impl Check {
    pub fn new() -> Check {
        Check::default()
    }

    fn find(&mut self, line: usize, rule: &'static str, message: String) {
        self.report.findings.push(Finding {
            line,
            rule,
            message: crate::core::text::one_line(&crate::core::text::sanitize(&message), 400),
        });
    }

    fn held(&mut self, record: &Value) {
        self.answers.observe_record(record);
        let s = record.get("session_id").and_then(Value::as_str);
        let c = record.get("function_call_id").and_then(Value::as_str);
        if let (Some(s), Some(c)) = (s, c)
            && self.held.len() < MAX_IDS
        {
            self.held.insert((s.to_string(), c.to_string()));
            self.report.requests = self.held.len();
        }
    }

    fn outbound(&mut self, line: usize, m: Message, raw: &Value) {
        let s = |k: &str| raw.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        match m {
            Message::RegisterTrigger { .. } if self.handlers.len() < MAX_IDS => {
                self.handlers.insert(s("function_id"), s("trigger_type"));
            }
            Message::InvokeFunction { .. } => {
                let function_id = s("function_id");
                let data = raw.get("data").cloned().unwrap_or(Value::Null);
                if self.calls.len() < MAX_IDS {
                    self.calls.insert(s("invocation_id"), function_id.clone());
                }
                match self.answers.observe_call(&function_id, &data) {
                    None => {}
                    Some(Err(e)) if function_id == "harness::function::resolve" => {
                        self.find(line, "forbidden-call", e)
                    }
                    Some(Err(e)) => self.find(line, "decision", e),
                    Some(Ok((session, call, _))) => {
                        self.report.replies_checked += 1;
                        let key = (session, call);
                        if !self.held.contains(&key) {
                            self.find(
                                line,
                                "unheld-decision",
                                format!(
                                    "approval::resolve for {}/{}, a call the recording never shows held",
                                    key.0, key.1
                                ),
                            );
                        } else if !self.resolved.insert(key.clone()) {
                            self.find(
                                line,
                                "duplicate-decision",
                                format!("a second approval::resolve for {}/{}", key.0, key.1),
                            );
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn inbound(&mut self, m: Message, raw: &Value) {
        let s = |k: &str| raw.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        match m {
            Message::InvocationResult { .. } => {
                let Some(function_id) = self.calls.remove(&s("invocation_id")) else {
                    return;
                };
                if matches!(
                    function_id.as_str(),
                    "approval::list-pending" | "approval::list_pending"
                ) && let Some(list) = raw
                    .get("result")
                    .and_then(|r| r.get("pending"))
                    .and_then(Value::as_array)
                {
                    for r in list.clone() {
                        self.held(&r);
                    }
                }
            }
            Message::InvokeFunction { .. } => {
                let trigger = self.handlers.get(&s("function_id")).cloned();
                if matches!(
                    trigger.as_deref(),
                    Some("approval::pending-created" | "approval::pending_created")
                ) && let Some(d) = raw.get("data")
                {
                    self.held(&d.clone());
                }
            }
            _ => {}
        }
    }
}

impl Rules for Check {
    fn frame(&mut self, f: &Frame) {
        self.report.frames += 1;
        if !matches!(f.dir, Dir::In | Dir::Out) {
            return;
        }
        let raw: Value = match serde_json::from_str(&f.text) {
            Ok(v) => v,
            Err(e) => return self.find(f.src_line, "frame", format!("not JSON: {e}")),
        };
        let m = match codec::decode_value(raw.clone()) {
            Ok(m) => m,
            Err(e) => return self.find(f.src_line, "frame", e.to_string()),
        };
        match f.dir {
            Dir::Out => self.outbound(f.src_line, m, &raw),
            _ => self.inbound(m, &raw),
        }
    }

    fn finish(self: Box<Self>) -> Report {
        self.report
    }
}
