//! `switchboard validate` for adopted sessions, frame by frame: the recording names its
//! session first; every hook event reads as one of that session; every gate gets exactly one
//! final answer (a decision the hook printed, or none: handed back, answered in its own
//! terminal, its hook gone, switchboard stopped); an answer names a gate that waited; and a
//! printed decision is one the CLI takes (Codex refuses `updatedInput`, `updatedPermissions`
//! and `interrupt`). A gate still open when the recording ends (the host was killed) is
//! reported as such, not as a violation.

use std::collections::HashSet;

use serde_json::Value;
use switchboard_record::Dir;
use switchboard_record::check::{Finding, Report, Rules, unreadable_note};
use switchboard_record::load::Frame;

use super::event;
use super::mapping::Mapping;
use super::recorded::{self, In};

/// Gates remembered at most (a hostile recording must not grow memory without bound).
const MAX_IDS: usize = 100_000;

#[derive(Default)]
pub struct Check {
    report: Report,
    mapping: Option<Mapping>,
    /// Gates opened and not yet answered.
    open: HashSet<String>,
    /// Gates with their one answer.
    answered: HashSet<String>,
    /// Released by the mapping (answered in its own terminal): their hook's `pass` follows.
    released: HashSet<String>,
    /// `in` and `out` frames seen (the source's own record holds notes only).
    wire: usize,
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

    fn inbound(&mut self, f: &Frame) {
        match recorded::parse_in(&f.text) {
            In::Session {
                agent,
                session_id,
                cwd,
            } => {
                if self.mapping.is_some() {
                    self.find(f.src_line, "session", "a second session line".into());
                }
                self.mapping = Some(Mapping::new(agent, &session_id, &cwd));
            }
            In::Broken(why) => self.find(f.src_line, "envelope", why),
            In::Transcript { .. } => {
                if self.mapping.is_none() {
                    self.find(
                        f.src_line,
                        "session",
                        "a transcript line before the session line".into(),
                    );
                }
            }
            In::Event => {
                let Some(m) = self.mapping.as_mut() else {
                    self.find(
                        f.src_line,
                        "session",
                        "a hook event before the session line".into(),
                    );
                    return;
                };
                let ev = match event::parse(f.text.as_bytes()) {
                    Ok(ev) => ev,
                    Err(why) => {
                        return self.find(
                            f.src_line,
                            "event",
                            format!("a recorded event live would refuse: {why}"),
                        );
                    }
                };
                if ev.session_id != m.session_id {
                    return self.find(
                        f.src_line,
                        "session",
                        format!(
                            "an event of session {} in another's recording",
                            ev.session_id
                        ),
                    );
                }
                let out = m.on_event(&ev);
                for (id, _) in out.released {
                    self.open.remove(&id);
                    self.released.insert(id);
                }
                if let Some(id) = out.card
                    && self.open.len() + self.answered.len() < MAX_IDS
                {
                    self.report.requests += 1;
                    self.open.insert(id);
                }
            }
        }
    }

    fn outbound(&mut self, f: &Frame) {
        let Some(a) = recorded::parse_out(&f.text) else {
            return self.find(
                f.src_line,
                "answer",
                "an out line that is not a gate's answer".into(),
            );
        };
        self.report.replies_checked += 1;
        if self.answered.contains(&a.gate) {
            return self.find(
                f.src_line,
                "answered-twice",
                format!("gate {} answered a second time", a.gate),
            );
        }
        let was_open = self.open.remove(&a.gate);
        let was_released = self.released.remove(&a.gate);
        if !was_open && !was_released {
            return self.find(
                f.src_line,
                "unknown-gate",
                format!("an answer for gate {}, which never waited", a.gate),
            );
        }
        self.answered.insert(a.gate.clone());
        if was_released && a.stdout.is_some() {
            self.find(
                f.src_line,
                "answered-elsewhere",
                format!(
                    "gate {} was answered in its own terminal, yet a decision was printed",
                    a.gate
                ),
            );
        }
        if let (Some(stdout), Some(m)) = (&a.stdout, &self.mapping) {
            let verdict = serde_json::from_str::<Value>(stdout)
                .map_err(|e| format!("not JSON: {e}"))
                .and_then(|v| {
                    let d = v
                        .get("hookSpecificOutput")
                        .filter(|h| {
                            h.get("hookEventName").and_then(Value::as_str)
                                == Some("PermissionRequest")
                        })
                        .and_then(|h| h.get("decision"))
                        .ok_or("no hookSpecificOutput.decision of a PermissionRequest")?;
                    super::encode::check(m.agent, d)
                });
            if let Err(why) = verdict {
                self.find(
                    f.src_line,
                    "refused-decision",
                    format!("gate {}: {why}", a.gate),
                );
            }
        }
        if let Some(m) = self.mapping.as_mut() {
            m.forget(&a.gate);
        }
    }
}

impl Rules for Check {
    fn frame(&mut self, f: &Frame) {
        self.report.frames += 1;
        if matches!(f.dir, Dir::In | Dir::Out) {
            self.wire += 1;
        }
        match f.dir {
            Dir::In => self.inbound(f),
            Dir::Out => self.outbound(f),
            Dir::Note => {
                unreadable_note(f, &mut self.report);
            }
            Dir::Err => {}
        }
    }

    fn finish(mut self: Box<Self>) -> Report {
        let mut left: Vec<String> = self.open.drain().collect();
        left.sort();
        for id in left {
            // The recording stopped with the hook still waiting: the host was killed (its
            // hook then falls through to the CLI's own prompt), never an answer we gave.
            self.report.findings.push(Finding {
                line: 0,
                rule: "agent-exited",
                message: format!(
                    "gate {id} was still waiting when the recording ended (the host stopped \
                     without answering it: its CLI's own prompt had it)"
                ),
            });
        }
        if self.mapping.is_none() && self.wire > 0 {
            self.report.findings.push(Finding {
                line: 1,
                rule: "session",
                message: "no session line: not an adopted session's recording".into(),
            });
        }
        self.report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_backend::hooks::{HookAgent, HookReply};

    fn frame(n: usize, dir: Dir, text: &str) -> Frame {
        Frame {
            src_line: n,
            ts: Some(n as u64),
            dir,
            text: text.to_string(),
        }
    }

    fn run(frames: &[(Dir, String)]) -> Report {
        let mut c: Box<dyn Rules> = Box::new(Check::new());
        for (i, (d, t)) in frames.iter().enumerate() {
            c.frame(&frame(i + 2, *d, t));
        }
        c.finish()
    }

    const ASK: &str = r#"{"hook_event_name":"PermissionRequest","session_id":"s","cwd":"/w","tool_name":"Bash","tool_input":{"command":"ls"}}"#;

    #[test]
    fn one_answer_per_gate_and_only_what_the_cli_takes() {
        let allow = super::super::encode::wrap(serde_json::json!({"behavior":"allow"}));
        let edit = super::super::encode::wrap(
            serde_json::json!({"behavior":"allow","updatedInput":{"command":"x"}}),
        );
        let ok = run(&[
            (Dir::In, recorded::session(HookAgent::Claude, "s", "/w")),
            (Dir::In, ASK.into()),
            (
                Dir::Out,
                recorded::answer("h-1", &HookReply::Decision(edit.clone())).unwrap(),
            ),
            (Dir::In, ASK.into()),
            (
                Dir::In,
                r#"{"hook_event_name":"PostToolUse","session_id":"s","cwd":"/w","tool_name":"Bash","tool_input":{"command":"ls"}}"#.into(),
            ),
            (
                Dir::Out,
                recorded::answer("h-2", &HookReply::Pass("answered there".into())).unwrap(),
            ),
        ]);
        assert_eq!(ok.problems(), 0, "{:?}", ok.findings);
        assert_eq!(ok.requests, 2);
        let bad = run(&[
            (Dir::In, recorded::session(HookAgent::Codex, "s", "/w")),
            (Dir::In, ASK.into()),
            (
                Dir::Out,
                recorded::answer("h-1", &HookReply::Decision(edit)).unwrap(),
            ),
            (
                Dir::Out,
                recorded::answer("h-1", &HookReply::Decision(allow.clone())).unwrap(),
            ),
            (
                Dir::Out,
                recorded::answer("h-9", &HookReply::Decision(allow)).unwrap(),
            ),
            (Dir::In, ASK.into()),
        ]);
        let rules: Vec<&str> = bad.findings.iter().map(|f| f.rule).collect();
        assert_eq!(
            rules,
            [
                "refused-decision",
                "answered-twice",
                "unknown-gate",
                "agent-exited"
            ]
        );
        assert_eq!(bad.problems(), 3, "the crash is told, not counted");
    }
}
