//! `switchboard validate` for iii recordings, frame by frame: every frame decodes; our calls
//! never include `harness::function::resolve`; every `approval::resolve` is well formed, is
//! for a call the engine held (seen in a listing or a `pending-created` event), and is sent
//! once per held call; every harness call with a golden request schema (`golden`) meets it.

use std::collections::HashSet;

use serde_json::Value;

use super::codec::{self, Message};
use super::mapping::RecordedAnswers;
use switchboard_record::Dir;
use switchboard_record::check::{Finding, Report, Rules};
use switchboard_record::load::Frame;

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
            message: switchboard_core::text::one_line(
                &switchboard_core::text::sanitize(&message),
                400,
            ),
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
                if let Some(Err(why)) = super::golden::check_request(&function_id, &data) {
                    self.find(
                        line,
                        "golden-request",
                        format!("{function_id} breaks its golden request schema {why}"),
                    );
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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::Check;
    use switchboard_record::Dir;
    use switchboard_record::check::{Report, Rules};
    use switchboard_record::load::Frame;

    /// Our `invokefunction` of `function_id` with `data`, as recorded on line `line`.
    fn call(line: usize, function_id: &str, data: Value) -> Frame {
        Frame {
            src_line: line,
            ts: None,
            dir: Dir::Out,
            text: json!({
                "type": "invokefunction",
                "invocation_id": format!("inv-{line}"),
                "function_id": function_id,
                "data": data,
            })
            .to_string(),
        }
    }

    fn check(frames: &[Frame]) -> Report {
        let mut c: Box<dyn Rules> = Box::new(Check::new());
        for f in frames {
            c.frame(f);
        }
        c.finish()
    }

    /// The calls the mapper makes, every golden function among them, each as it sends it.
    fn clean() -> Vec<Frame> {
        vec![
            call(
                2,
                "harness::status",
                json!({"session_id": "s1", "verbose": true}),
            ),
            call(3, "harness::session-tree", json!({"root_session_id": "s1"})),
            call(4, "harness::metrics", json!({"root_session_id": "s1"})),
            call(
                5,
                "harness::send",
                json!({"message": "go", "model": "m", "provider": "anthropic",
                       "idempotency_key": "k", "options": {"functions": {"allow": []}}}),
            ),
            call(6, "harness::stop", json!({"session_id": "s1"})),
            call(7, "harness::teardown", json!({"root_session_id": "s1"})),
            // No golden schema: not checked against one.
            call(8, "session::list", json!({"anything": 1})),
        ]
    }

    #[test]
    fn calls_that_meet_their_golden_schemas_are_clean() {
        let r = check(&clean());
        assert_eq!(r.problems(), 0, "{:#?}", r.findings);
        assert_eq!(r.frames, 7);
    }

    #[test]
    fn a_call_breaking_its_golden_request_schema_is_found() {
        let mut frames = clean();
        frames.push(call(9, "harness::status", json!({"verbose": true})));
        frames.push(call(10, "harness::send", json!({"session_id": "s1"})));
        frames.push(call(
            11,
            "harness::send",
            json!({"message": "go", "model": "m", "provider": ["\u{1b}[2Jx"]}),
        ));
        let r = check(&frames);
        let found: Vec<(usize, &str)> = r.findings.iter().map(|f| (f.line, f.rule)).collect();
        assert_eq!(
            found,
            vec![
                (9, "golden-request"),
                (10, "golden-request"),
                (11, "golden-request")
            ],
            "{:#?}",
            r.findings
        );
        let m = &r.findings[0].message;
        assert!(
            m.starts_with("harness::status breaks its golden request schema"),
            "{m}"
        );
        assert!(m.contains("session_id"), "{m}");
        assert!(
            r.findings[1].message.contains("message"),
            "{:?}",
            r.findings[1]
        );
        // The recording's text is shown escaped, never as a raw escape sequence.
        let m = &r.findings[2].message;
        assert!(m.contains("/provider") && !m.contains('\u{1b}'), "{m}");
        assert_eq!(r.problems(), 3);
    }

    /// Only our calls are held to the request schemas: the engine's own invocations (events
    /// to our handlers) are not harness requests.
    #[test]
    fn inbound_frames_are_not_held_to_the_request_schemas() {
        let mut f = call(2, "harness::status", json!({}));
        f.dir = Dir::In;
        assert_eq!(check(&[f]).problems(), 0);
    }
}
