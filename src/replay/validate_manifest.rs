//! `switchboard validate MANIFEST`: a workspace manifest against its schema, every recording it
//! lists with the usual rules, and the manifest's decisions against those recordings (each one's
//! session exists, its gate was asked and answered there, with the same kind of answer, and the
//! decisions are in time order).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::load::{self, Format, Frame, Stream};
use super::mapper::Answered;
use super::validate::{Finding, Report, rules_for};
use crate::core::gate::Decision;
use crate::core::msg::BackendEvent;
use crate::record::Dir;
use crate::workspace::manifest::{self, Manifest, decision_kind};

/// One listed recording, checked.
#[derive(Debug, Serialize)]
pub struct RecordingCheck {
    pub session: u32,
    pub file: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<Report>,
    /// It could not be read at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The manifest's own findings (`report.requests` counts the decisions checked against a
/// recording) and each recording's.
#[derive(Debug, Serialize)]
pub struct ManifestReport {
    pub report: Report,
    pub recordings: Vec<RecordingCheck>,
}

impl ManifestReport {
    pub fn problems(&self) -> usize {
        self.report.problems()
            + self
                .recordings
                .iter()
                .filter_map(|r| r.report.as_ref())
                .map(Report::problems)
                .sum::<usize>()
    }

    /// The manifest or one of its recordings could not be read.
    pub fn unreadable(&self) -> bool {
        self.report.unreadable
            || self
                .recordings
                .iter()
                .any(|r| r.error.is_some() || r.report.as_ref().is_some_and(|r| r.unreadable))
    }

    pub fn frames(&self) -> usize {
        self.recordings
            .iter()
            .filter_map(|r| r.report.as_ref())
            .map(|r| r.frames)
            .sum()
    }
}

/// One request of the agent that became a gate, as the recording shows it.
#[derive(Debug)]
struct Asked {
    line: usize,
    /// The recorded answer's kind family (`None`: unanswered; `Some(None)`: answered with a
    /// reply no UI decision expresses).
    answer: Option<Option<&'static str>>,
}

/// The gates of one recording by id. An id can come back once answered (ACP ids are reused),
/// so each id keeps its requests in order.
#[derive(Debug, Default)]
struct Gates {
    by_id: HashMap<String, Vec<Asked>>,
}

impl Gates {
    /// Requests still unanswered are closed (a crash ended their recording).
    fn settle(&mut self) {
        for a in self.by_id.values_mut().flatten() {
            a.answer.get_or_insert(None);
        }
    }

    /// The next recording's requests after these.
    fn extend(&mut self, more: Gates) {
        for (id, asked) in more.by_id {
            self.by_id.entry(id).or_default().extend(asked);
        }
    }

    fn opened(&mut self, id: &str, line: usize) {
        self.by_id
            .entry(id.to_string())
            .or_default()
            .push(Asked { line, answer: None });
    }

    fn answered(&mut self, id: &str, decision: Option<&Decision>) {
        let family = decision.and_then(family);
        if let Some(a) = self
            .by_id
            .get_mut(id)
            .and_then(|v| v.iter_mut().find(|a| a.answer.is_none()))
        {
            a.answer = Some(family);
        }
    }
}

/// Decisions compare by what they did, not how they were phrased: an ACP allow is the choice of
/// an allow option, a batch "yes" is an allow. `None`: a raw reply, not comparable.
fn family(d: &Decision) -> Option<&'static str> {
    family_of_kind(decision_kind(d))
}

fn family_of_kind(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "allow" | "allow_always" | "allow_edited" | "option_allow" | "continue" => "allow",
        "deny" | "deny_interrupt" | "option_reject" | "block" => "deny",
        "answer" => "answer",
        "dialog_complete" => "dialog_complete",
        "dialog_cancel" => "dialog_cancel",
        "elicit_accept" => "elicit_accept",
        "elicit_decline" => "elicit_decline",
        "elicit_cancel" => "elicit_cancel",
        "cancelled" => "cancelled",
        _ => return None,
    })
}

/// Validate the manifest at `path` and every recording it lists.
pub fn validate_manifest(path: &Path) -> ManifestReport {
    let mut out = ManifestReport {
        report: Report::default(),
        recordings: Vec::new(),
    };
    let r = &mut out.report;
    let text = match manifest::read_text(path) {
        Ok(t) => t,
        Err(e) => {
            r.unreadable = true;
            r.findings.push(finding(0, "unreadable", e));
            return out;
        }
    };
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            r.unreadable = true;
            r.findings
                .push(finding(e.line(), "not-json", format!("not JSON: {e}")));
            return out;
        }
    };
    if let Err(errors) = crate::schema::validate_manifest(&value) {
        for (pointer, message) in errors {
            let at = if pointer.is_empty() { "/" } else { &pointer };
            r.findings.push(finding(
                manifest::line_of_pointer(&text, &pointer),
                "schema",
                format!("{at}: {message}"),
            ));
        }
    }
    let m: Manifest = match serde_json::from_value(value) {
        Ok(m) => m,
        Err(e) => {
            r.findings.push(finding(
                1,
                "unchecked",
                format!("the cross-checks need the manifest's shape: {e}"),
            ));
            sort(r);
            return out;
        }
    };
    let session_lines = manifest::element_lines(&text, "sessions");
    let decision_lines = manifest::element_lines(&text, "decisions");
    let line = |lines: &[usize], i: usize| lines.get(i).copied().unwrap_or(1);

    // Sessions: unique ids, sane times, and their recordings checked once each.
    let mut gates: HashMap<u32, Gates> = HashMap::new();
    let mut seen = HashMap::new();
    for (i, s) in m.sessions.iter().enumerate() {
        let at = line(&session_lines, i);
        if let Some(first) = seen.insert(s.id, at) {
            r.findings.push(finding(
                at,
                "duplicate-session",
                format!("session id {} is already used on line {first}", s.id),
            ));
            continue;
        }
        if let Some(closed) = s.closed_ms
            && closed < s.opened_ms
        {
            r.findings.push(finding(
                at,
                "order",
                format!(
                    "session {} closed at {closed} ms, before it opened ({} ms)",
                    s.id, s.opened_ms
                ),
            ));
        }
        let Some(first) = Manifest::recording_path(path, s) else {
            continue;
        };
        // The first recording, then the continuations of each resume after a crash (each
        // named, so one that is missing is reported, not skipped).
        let mut parts = vec![first];
        parts.extend(s.continued.iter().map(|c| Manifest::resolve(path, c)));
        for rec in parts {
            match scan(&rec) {
                Ok((format, report, g)) => {
                    let all = gates.entry(s.id).or_default();
                    // What the crash left waiting was answered by nobody: a later part's request of
                    // the same id (ACP numbers from 0 again) is a new one.
                    all.settle();
                    all.extend(g);
                    out.recordings.push(RecordingCheck {
                        session: s.id,
                        file: rec,
                        format: Some(format!("{format:?}").to_lowercase()),
                        report: Some(report),
                        error: None,
                    });
                }
                Err(e) => {
                    r.findings.push(finding(
                        at,
                        "recording",
                        format!(
                            "session {}: its recording {} cannot be read: {e}",
                            s.id,
                            rec.display()
                        ),
                    ));
                    out.recordings.push(RecordingCheck {
                        session: s.id,
                        file: rec,
                        format: None,
                        report: None,
                        error: Some(e),
                    });
                }
            }
        }
    }

    // Decisions: in time order, in a known session, on a gate its recording asked and answered.
    if m.decisions_truncated && (m.decisions_total as usize) < m.decisions.len()
        || !m.decisions_truncated && m.decisions_total as usize != m.decisions.len()
    {
        r.findings.push(finding(
            1,
            "count",
            format!(
                "decisions_total is {} but {} decision(s) are listed (decisions_truncated: {})",
                m.decisions_total,
                m.decisions.len(),
                m.decisions_truncated
            ),
        ));
    }
    let mut last_at = 0;
    // How many decisions each (session, gate) has had so far: the n-th one answers the n-th request.
    let mut used: HashMap<(u32, &str), usize> = HashMap::new();
    for (i, d) in m.decisions.iter().enumerate() {
        let at = line(&decision_lines, i);
        if d.at_ms < last_at {
            r.findings.push(finding(
                at,
                "order",
                format!(
                    "decision on {} at {} ms comes after one at {last_at} ms",
                    d.gate_id, d.at_ms
                ),
            ));
        }
        last_at = last_at.max(d.at_ms);
        let Some(s) = m.session(d.session) else {
            r.findings.push(finding(
                at,
                "unknown-session",
                format!(
                    "decision on {} names session {}, which the manifest does not list",
                    d.gate_id, d.session
                ),
            ));
            continue;
        };
        if d.at_ms < s.opened_ms || s.closed_ms.is_some_and(|c| d.at_ms > c) {
            r.findings.push(finding(
                at,
                "outside-session",
                format!(
                    "decision on {} at {} ms is outside session {}'s lifetime",
                    d.gate_id, d.at_ms, d.session
                ),
            ));
        }
        let Some(g) = gates.get(&d.session) else {
            if s.recording.is_none() {
                r.findings.push(finding(
                    at,
                    "unchecked",
                    format!(
                        "decision on {}: session {} has no recording to check it against",
                        d.gate_id, d.session
                    ),
                ));
            }
            continue;
        };
        let n = used.entry((d.session, d.gate_id.as_str())).or_default();
        let nth = *n;
        *n += 1;
        r.requests += 1;
        let rec = s.recording.as_deref().unwrap_or("");
        let Some(asked) = g.by_id.get(&d.gate_id) else {
            r.findings.push(finding(
                at,
                "unknown-gate",
                format!(
                    "gate {} is not a request in session {}'s recording {rec}",
                    d.gate_id, d.session
                ),
            ));
            continue;
        };
        let Some(asked) = asked.get(nth) else {
            r.findings.push(finding(
                at,
                "duplicate-decision",
                format!(
                    "gate {} of session {} was asked {} time(s) in {rec} but decided more often",
                    d.gate_id,
                    d.session,
                    asked.len()
                ),
            ));
            continue;
        };
        match asked.answer {
            None => r.findings.push(finding(
                at,
                "unanswered-gate",
                format!(
                    "gate {} (line {} of {rec}) has no answer in the recording",
                    d.gate_id, asked.line
                ),
            )),
            Some(Some(recorded)) => {
                if let Some(ours) = family_of_kind(&d.decision)
                    && ours != recorded
                {
                    r.findings.push(finding(
                        at,
                        "decision-mismatch",
                        format!(
                            "gate {}: the manifest says {} but the recording (line {}) answers {recorded}",
                            d.gate_id, d.decision, asked.line
                        ),
                    ));
                }
                r.replies_checked += 1;
            }
            Some(None) => {}
        }
    }
    sort(r);
    out
}

fn finding(line: usize, rule: &'static str, message: String) -> Finding {
    Finding {
        line,
        rule,
        message,
    }
}

fn sort(r: &mut Report) {
    r.findings.sort_by_key(|f| f.line);
}

/// One pass over a recording: the backend's rules, and its gates as the live mapping sees them.
fn scan(path: &Path) -> Result<(Format, Report, Gates), String> {
    let stream = load::stream(path, None)?;
    let format = stream.format();
    let mut rules = rules_for(stream.backend(), stream.header());
    let mut mapper = crate::registry::replay_mapper(stream.backend());
    let mut gates = Gates::default();
    let mut each = |f: &Frame| {
        rules.frame(f);
        if let Some(ts) = f.ts {
            mapper.set_now(ts);
        }
        let (events, answered): (Vec<BackendEvent>, Vec<Answered>) = match f.dir {
            Dir::In => (mapper.inbound(&f.text), Vec::new()),
            Dir::Out => mapper.outbound(&f.text),
            Dir::Err | Dir::Note => return,
        };
        for e in events {
            match e {
                BackendEvent::GateOpen(g) => gates.opened(&g.id, f.src_line),
                BackendEvent::GateAnswered { id, decision }
                | BackendEvent::GateClosed { id, decision } => gates.answered(&id, Some(&decision)),
                _ => {}
            }
        }
        for a in answered {
            gates.answered(&a.gate_id, a.decision.as_ref());
        }
    };
    match stream {
        Stream::Whole(loaded) => loaded.frames.iter().for_each(&mut each),
        Stream::Lines(lines) => {
            for f in *lines {
                each(&f?);
            }
        }
    }
    Ok((format, rules.finish(), gates))
}
