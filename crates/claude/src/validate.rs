//! The Claude rules `switchboard validate` applies to a recording: every request answered once,
//! answers that parse as the protocol's, and decision fidelity (each recorded answer re-derived
//! through our encoder and compared as canonical JSON).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::mapping::Mapper;
use crate::{decode, encode};
use switchboard_record::Dir;
use switchboard_record::check::{Finding, Report, Rules, canonical, is_exit_note, unreadable_note};
use switchboard_record::load::Frame;

struct Open {
    line: usize,
    subtype: String,
    body: Value,
}

/// What the rules track while reading a Claude recording in order.
#[derive(Default)]
pub struct Ledger {
    r: Report,
    /// The recording says the agent's process ended.
    ended: bool,
    /// The agent's requests still waiting for our answer.
    open: HashMap<String, Open>,
    answered: HashSet<String>,
    withdrawn: HashSet<String>,
    /// Our own requests still waiting for the agent's answer, with their line.
    ours: HashMap<String, usize>,
    /// The fidelity replay: the same mapping as live, fed the recorded lines.
    mapper: Mapper,
}

impl Rules for Ledger {
    fn frame(&mut self, f: &Frame) {
        let mut r = std::mem::take(&mut self.r);
        r.frames += 1;
        match f.dir {
            Dir::In => self.inbound(f, &mut r),
            Dir::Out => self.outbound(f, &mut r),
            Dir::Err => {}
            Dir::Note if is_exit_note(f) => {
                self.ended = true;
                // What was pending when the agent died could not be answered: say so, once,
                // as information (answering needs an agent to answer).
                let (rule, why) = switchboard_record::check::ended_by(f);
                let mut left: Vec<(String, Open)> = self.open.drain().collect();
                left.sort_by_key(|(_, o)| o.line);
                for (id, o) in left {
                    r.findings.push(Finding {
                        line: o.line,
                        rule,
                        message: format!(
                            "{} request {id} was still pending when {} (line {}): {why}",
                            o.subtype,
                            if rule == "agent-exited" {
                                "the agent exited"
                            } else {
                                "the host stopped"
                            },
                            f.src_line
                        ),
                    });
                }
            }
            Dir::Note => {
                unreadable_note(f, &mut r);
            }
        }
        self.r = r;
    }

    fn finish(self: Box<Self>) -> Report {
        let Ledger {
            mut r,
            ended,
            open,
            ours,
            ..
        } = *self;
        let mut left: Vec<(String, Open)> = open.into_iter().collect();
        left.sort_by_key(|(_, o)| o.line);
        for (id, o) in left {
            r.findings.push(Finding {
                line: o.line,
                rule: "unanswered",
                message: format!("{} request {id} was never answered", o.subtype),
            });
        }
        // Our own requests the agent never answered, unless it ended first (then it could not).
        if !ended {
            let mut ours: Vec<(String, usize)> = ours.into_iter().collect();
            ours.sort_by_key(|(_, line)| *line);
            for (id, line) in ours {
                r.findings.push(Finding {
                    line,
                    rule: "unanswered-ours",
                    message: format!("our request {id} never got an answer from the agent"),
                });
            }
        }
        r.findings.sort_by_key(|f| f.line);
        r
    }
}

impl Ledger {
    fn inbound(&mut self, f: &Frame, r: &mut Report) {
        let Ledger {
            open,
            answered,
            withdrawn,
            ours,
            mapper,
            ..
        } = self;
        let _ = mapper.on_line(&f.text);
        // Only control frames need a look inside; any other line only has to be JSON, which a
        // parse that builds nothing tells (most lines of a long recording are stream deltas).
        if memchr::memmem::find(f.text.as_bytes(), b"\"control_").is_none() {
            if serde_json::from_str::<serde::de::IgnoredAny>(&f.text).is_err() {
                r.findings.push(Finding {
                    line: f.src_line,
                    rule: "not-json",
                    message: "the agent wrote a line that is not JSON".into(),
                });
            }
            return;
        }
        let Ok(v) = serde_json::from_str::<Value>(&f.text) else {
            r.findings.push(Finding {
                line: f.src_line,
                rule: "not-json",
                message: "the agent wrote a line that is not JSON".into(),
            });
            return;
        };
        match v.get("type").and_then(Value::as_str) {
            Some("control_request") => {
                if let Err(e) = crate::schema::validate_claude("Message", &v) {
                    r.findings.push(Finding {
                        line: f.src_line,
                        rule: "schema",
                        message: e.to_string(),
                    });
                }
                let Some(id) = v.get("request_id").and_then(Value::as_str) else {
                    r.findings.push(Finding {
                        line: f.src_line,
                        rule: "request-id",
                        message: "control_request without a string request_id".into(),
                    });
                    return;
                };
                r.requests += 1;
                if open.contains_key(id) {
                    r.findings.push(Finding {
                        line: f.src_line,
                        rule: "duplicate-id",
                        message: format!("request_id {id} arrived again while pending"),
                    });
                    return;
                }
                let req = v.get("request").cloned().unwrap_or(Value::Null);
                open.insert(
                    id.to_string(),
                    Open {
                        line: f.src_line,
                        subtype: req
                            .get("subtype")
                            .and_then(Value::as_str)
                            .unwrap_or("?")
                            .to_string(),
                        body: req,
                    },
                );
                answered.remove(id);
            }
            Some("control_cancel_request") => {
                if let Err(e) = crate::schema::validate_claude("Message", &v) {
                    r.findings.push(Finding {
                        line: f.src_line,
                        rule: "schema",
                        message: e.to_string(),
                    });
                }
                if let Some(id) = v.get("request_id").and_then(Value::as_str)
                    && open.remove(id).is_some()
                {
                    withdrawn.insert(id.to_string());
                }
            }
            Some("control_response") => {
                let id = v
                    .get("response")
                    .and_then(|x| x.get("request_id"))
                    .and_then(Value::as_str);
                if let Some(id) = id
                    && ours.remove(id).is_none()
                {
                    r.findings.push(Finding {
                        line: f.src_line,
                        rule: "unknown-request-id",
                        message: format!("the agent answered {id}, which we never asked"),
                    });
                }
            }
            _ => {}
        }
    }

    fn outbound(&mut self, f: &Frame, r: &mut Report) {
        let Ledger {
            open,
            answered,
            withdrawn,
            ours,
            mapper,
            ..
        } = self;
        if let Err(e) = crate::schema::validate_claude_outbound_line(&f.text) {
            r.findings.push(Finding {
                line: f.src_line,
                rule: "schema",
                message: e.to_string(),
            });
        }
        let Ok(v) = serde_json::from_str::<Value>(&f.text) else {
            return;
        };
        match v.get("type").and_then(Value::as_str) {
            Some("control_request") => {
                if let Some(id) = v.get("request_id").and_then(Value::as_str) {
                    ours.insert(id.to_string(), f.src_line);
                }
                let _ = mapper.on_outbound(&f.text);
            }
            Some("control_response") => {
                let resp = v.get("response").cloned().unwrap_or(Value::Null);
                let Some(id) = resp
                    .get("request_id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                else {
                    return;
                };
                if withdrawn.contains(&id) {
                    r.findings.push(Finding {
                        line: f.src_line,
                        rule: "reply-to-withdrawn",
                        message: format!("answered {id} after the agent withdrew it"),
                    });
                    return;
                }
                if answered.contains(&id) {
                    r.findings.push(Finding {
                        line: f.src_line,
                        rule: "answered-twice",
                        message: format!("{id} was already answered"),
                    });
                    return;
                }
                let Some(req) = open.remove(&id) else {
                    r.findings.push(Finding {
                        line: f.src_line,
                        rule: "unknown-request-id",
                        message: format!("reply to {id}, which no request of the agent carries"),
                    });
                    return;
                };
                answered.insert(id.clone());
                let body = resp.get("response").cloned().unwrap_or(Value::Null);
                if req.subtype == "can_use_tool"
                    && req.body.get("tool_name").and_then(Value::as_str) == Some("AskUserQuestion")
                    && body.get("behavior").and_then(Value::as_str) == Some("allow")
                {
                    check_answers(f.src_line, &req.body, &body, r);
                }
                fidelity(f, &id, &resp, mapper, r);
            }
            _ => {}
        }
    }
}

/// AskUserQuestion answers: keyed by question text, every value a string, every question.
fn check_answers(line: usize, req: &Value, body: &Value, r: &mut Report) {
    let questions: Vec<&str> = req
        .get("input")
        .and_then(|i| i.get("questions"))
        .and_then(Value::as_array)
        .map(|q| {
            q.iter()
                .filter_map(|q| q.get("question").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    let Some(answers) = body
        .get("updatedInput")
        .and_then(|u| u.get("answers"))
        .and_then(Value::as_object)
    else {
        r.findings.push(Finding {
            line,
            rule: "answers",
            message: "AskUserQuestion allow without updatedInput.answers".into(),
        });
        return;
    };
    if body.get("updatedInput").and_then(|u| u.get("questions"))
        != req.get("input").and_then(|i| i.get("questions"))
    {
        r.findings.push(Finding {
            line,
            rule: "answers",
            message: "updatedInput.questions is not the request's questions verbatim".into(),
        });
    }
    for (k, v) in answers {
        if !questions.contains(&k.as_str()) {
            r.findings.push(Finding {
                line,
                rule: "answers",
                message: format!("answer keyed by {k:?}, which is no question's text"),
            });
        }
        if !v.is_string() {
            r.findings.push(Finding {
                line,
                rule: "answers",
                message: format!("answer to {k:?} is not a string: {v}"),
            });
        }
    }
    for q in questions {
        if !answers.contains_key(q) {
            r.findings.push(Finding {
                line,
                rule: "answers",
                message: format!("question {q:?} has no answer"),
            });
        }
    }
}

/// Re-derive our reply from the recorded decision and compare canonical JSON.
fn fidelity(f: &Frame, id: &str, resp: &Value, mapper: &mut Mapper, r: &mut Report) {
    let (_, answered) = mapper.on_outbound(&f.text);
    let Some((_, pending, body)) = answered.into_iter().next() else {
        // mcp_message and automatic answers: the content is the host's own; nothing to re-derive.
        return;
    };
    r.replies_checked += 1;
    let Some(decision) = decode::decision(&pending, &body) else {
        r.findings.push(Finding {
            line: f.src_line,
            rule: "decision-fidelity",
            // Without an inner `response` (a flattened envelope) show what was sent instead.
            message: format!(
                "the reply to {id} is no answer our UI gives (only the raw editor could send it): {}",
                canonical(if body.is_null() { resp } else { &body })
            ),
        });
        return;
    };
    let ours = match encode::body(&pending, &decision) {
        Ok(b) => b,
        Err(e) => {
            r.findings.push(Finding {
                line: f.src_line,
                rule: "decision-fidelity",
                message: e,
            });
            return;
        }
    };
    let recorded = if resp.get("subtype").and_then(Value::as_str) == Some("success") {
        body
    } else {
        resp.clone()
    };
    if canonical(&ours) != canonical(&recorded) {
        r.findings.push(Finding {
            line: f.src_line,
            rule: "decision-fidelity",
            message: format!(
                "re-encoding the recorded decision for {id} differs\n  recorded: {}\n  ours:     {}",
                canonical(&recorded),
                canonical(&ours)
            ),
        });
    }
}
