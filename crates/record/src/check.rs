//! The validation framework every backend's check plugs into: findings, reports, and the
//! `Rules` trait a backend implements to judge its recordings frame by frame. The checks
//! themselves live with their backends; the product's registry picks one per recording.

use serde::Serialize;
use serde_json::Value;

use crate::Dir;
use crate::load::{CUT_SHORT, Format, Frame, Loaded};

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Finding {
    pub line: usize,
    pub rule: &'static str,
    pub message: String,
}

#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub frames: usize,
    pub requests: usize,
    pub replies_checked: usize,
    pub findings: Vec<Finding>,
    /// The input could not be read whole (it ends in the middle of a line): like any unreadable
    /// input, `validate` exits 2.
    pub unreadable: bool,
}

/// Findings that explain rather than accuse: listed, but they do not change the exit code.
/// `agent-exited`: a request was pending when the agent ended, so nobody could answer it.
/// `unchecked`: a manifest's decision could not be checked (its session has no recording, or the
/// document is too broken to read); the reason it could not is a finding of its own.
pub const INFORMATIONAL: &[&str] = &["agent-exited", "host-stopped", "unchecked"];

impl Report {
    /// Findings that count as problems (exit 1).
    pub fn problems(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| !INFORMATIONAL.contains(&f.rule))
            .count()
    }
}

/// The rules of one backend, applied one frame at a time in recorded order, so a recording is
/// checked as it is read: what they keep grows with the open requests and ids, not the file.
pub trait Rules {
    fn frame(&mut self, f: &Frame);
    fn finish(self: Box<Self>) -> Report;
}

/// Rules that need the whole recording at once (the gateway's): frames are kept until the end,
/// then checked together.
pub struct Whole {
    frames: Vec<Frame>,
    check: fn(&Loaded) -> Report,
}

impl Whole {
    pub fn new(check: fn(&Loaded) -> Report) -> Whole {
        Whole {
            frames: Vec::new(),
            check,
        }
    }
}

impl Rules for Whole {
    fn frame(&mut self, f: &Frame) {
        self.frames.push(f.clone());
    }
    fn finish(self: Box<Self>) -> Report {
        let loaded = Loaded {
            format: Format::Recording,
            backend: switchboard_core::BackendKind::Gateway,
            header: None,
            frames: self.frames,
        };
        (self.check)(&loaded)
    }
}

/// A note of the recorder about its own file: a damaged entry (`unreadable`), or a last line cut
/// short (`unreadable-tail`, which makes the whole input unreadable). `true` when it was one.
pub fn unreadable_note(f: &Frame, r: &mut Report) -> bool {
    if f.text.starts_with(CUT_SHORT) {
        r.unreadable = true;
        r.findings.push(Finding {
            line: f.src_line,
            rule: "unreadable-tail",
            message: f.text.clone(),
        });
    } else if f.text.starts_with("unreadable recording entry") {
        r.findings.push(Finding {
            line: f.src_line,
            rule: "unreadable",
            message: f.text.clone(),
        });
    } else {
        return false;
    }
    true
}

/// The note the recorder writes when the agent's process ends, or the one a resume writes
/// when the host stopped without being stopped (see [`ended_by`]).
pub fn is_exit_note(f: &Frame) -> bool {
    f.dir == Dir::Note
        && (f.text.starts_with("agent exited") || f.text.starts_with(crate::HOST_STOPPED))
}

/// What ended the session at an exit note: `(rule, why)` for what was still waiting then.
/// Both are information, not protocol violations: nobody was left to answer.
pub fn ended_by(f: &Frame) -> (&'static str, &'static str) {
    if f.text.starts_with(crate::HOST_STOPPED) {
        (
            "host-stopped",
            "the host stopped unexpectedly (a crash, a kill, a reboot): nobody answered it, and the resume did not",
        )
    } else {
        ("agent-exited", "nobody was left to answer it")
    }
}

/// Keys sorted recursively, no insignificant whitespace.
pub fn canonical(v: &Value) -> String {
    fn sort(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sort(&m[k]))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    sort(v).to_string()
}
