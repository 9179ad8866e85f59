//! `switchboard validate` for gateway recordings: every frame against the spec's frame
//! shapes and tool input schemas, and the exactly-once rule per call id: once an id has a
//! final answer, every later answer for it is the same bytes. Not final: `busy`, `failed`
//! (nothing ran), `invalid_frame`, `id_conflict` (it answers a re-send with other
//! arguments, never the id) and `uncertain_effect` (until the owner settles the receipt,
//! which gives the id its final answer). An id used only by read-only calls has no effect
//! and is run again on a re-send (reference §5.3), so its answers may differ.

use std::collections::HashMap;

use serde_json::Value;

use super::codec::{self, FRAME_BYTES, Inbound};
use super::validate;
use switchboard_record::Dir;
use switchboard_record::check::{Finding, Report};
use switchboard_record::load::Loaded;

/// Answers that are not final (B may retry the id and get another answer).
fn transient(body: &Value) -> bool {
    matches!(
        body["structuredContent"]["code"].as_str(),
        Some("busy")
            | Some("failed")
            | Some("invalid_frame")
            | Some("id_conflict")
            | Some("uncertain_effect")
    )
}

pub fn validate(loaded: &Loaded) -> Report {
    let mut r = Report {
        frames: loaded.frames.len(),
        ..Report::default()
    };
    let mut f = |line: usize, rule: &'static str, message: String| {
        r.findings.push(Finding {
            line,
            rule,
            message,
        })
    };
    // (sessionId, id) → whether every call with it so far is read-only.
    let mut called: HashMap<(String, String), bool> = HashMap::new();
    // (sessionId, id) → (line, the final result's bytes).
    let mut final_answer: HashMap<(String, String), (usize, String)> = HashMap::new();
    let (mut requests, mut replies) = (0, 0);
    for fr in &loaded.frames {
        if matches!(fr.dir, Dir::In | Dir::Out) && fr.text.len() > FRAME_BYTES {
            f(
                fr.src_line,
                "frame-size",
                format!("frame of {} bytes", fr.text.len()),
            );
        }
        match fr.dir {
            Dir::In => match codec::decode(&fr.text) {
                Err(e) => f(fr.src_line, "invalid-frame", e.to_string()),
                Ok(Inbound::Ready { protocol }) if protocol != serde_json::json!(1) => f(
                    fr.src_line,
                    "protocol",
                    format!("ready with protocol {protocol}"),
                ),
                Ok(Inbound::Ready { .. }) => {}
                Ok(Inbound::Other(v)) => f(
                    fr.src_line,
                    "invalid-frame",
                    format!("unknown frame type {}", v["type"]),
                ),
                Ok(Inbound::Call(c)) => {
                    requests += 1;
                    for (k, v) in [
                        ("workspaceId", &c.workspace_id),
                        ("sessionId", &c.session_id),
                        ("intention", &c.intention),
                        ("tool", &c.tool),
                    ] {
                        if v.is_none() {
                            f(
                                fr.src_line,
                                "invalid-frame",
                                format!("call {} without a string {k}", c.id),
                            );
                        }
                    }
                    match validate::check_tool(c.tool.as_deref()) {
                        Err(e) => f(fr.src_line, "unknown-tool", e.message),
                        Ok(t) => {
                            if let Err(e) = validate::decode_args(c.args.as_ref())
                                .and_then(|a| validate::check_args(t, &a))
                            {
                                f(
                                    fr.src_line,
                                    "schema",
                                    format!("call {}: {}", c.id, e.message),
                                );
                            }
                        }
                    }
                    let read = c.tool.as_deref().is_some_and(|t| {
                        t != "workspace_tool" && validate::class_of(t) == validate::Class::Read
                    });
                    // Read-only while every call with the id is: an id reused for an
                    // effect has its answers checked.
                    let only_reads = called
                        .entry((c.session_id.unwrap_or_default(), c.id))
                        .or_insert(read);
                    *only_reads &= read;
                }
            },
            Dir::Out => {
                let v: Value = match serde_json::from_str(&fr.text) {
                    Ok(v) => v,
                    Err(e) => {
                        f(fr.src_line, "invalid-frame", format!("not JSON: {e}"));
                        continue;
                    }
                };
                match v["type"].as_str() {
                    Some("ready")
                        if v["protocol"] == 1 && v.as_object().is_some_and(|o| o.len() == 2) => {}
                    Some("result") => {
                        replies += 1;
                        let o = v.as_object().cloned().unwrap_or_default();
                        let keys_ok = o.len() == 4
                            && ["type", "id", "sessionId", "result"]
                                .iter()
                                .all(|k| o.contains_key(*k));
                        let (Some(id), Some(session)) = (v["id"].as_str(), v["sessionId"].as_str())
                        else {
                            f(
                                fr.src_line,
                                "invalid-frame",
                                "result without a string id and sessionId".into(),
                            );
                            continue;
                        };
                        if !keys_ok || !v["result"]["content"].is_array() {
                            f(
                                fr.src_line,
                                "invalid-frame",
                                format!(
                                    "result {id}: fields must be type, id, sessionId and an MCP-style result"
                                ),
                            );
                        }
                        let key = (session.to_string(), id.to_string());
                        let read = called.get(&key).copied();
                        if read.is_none() {
                            f(
                                fr.src_line,
                                "orphan-result",
                                format!("result {id} answers no call of conversation {session}"),
                            );
                        }
                        if transient(&v["result"]) || read == Some(true) {
                            continue;
                        }
                        let bytes = v["result"].to_string();
                        match final_answer.get(&key) {
                            Some((first, b)) if *b != bytes => f(
                                fr.src_line,
                                "exactly-once",
                                format!("id {id} answered differently than at line {first}"),
                            ),
                            Some(_) => {}
                            None => {
                                final_answer.insert(key, (fr.src_line, bytes));
                            }
                        }
                    }
                    _ => f(
                        fr.src_line,
                        "invalid-frame",
                        "outbound frame is neither ready nor result".into(),
                    ),
                }
            }
            Dir::Err | Dir::Note => {}
        }
    }
    r.requests = requests;
    r.replies_checked = replies;
    r
}

/// The note a session records before an edited answer goes to the engine: `edit: GATE ARGS`,
/// what the owner's edit runs (the wire's result says only that an edit ran).
pub fn edit_note_text(gate: &str, args: &Value) -> String {
    format!("edit: {gate} {args}")
}

/// Read an `edit:` note back: the gate and the edited arguments.
pub fn edit_note(line: &str) -> Option<(String, Value)> {
    let rest = line.strip_prefix("edit: ")?;
    let (gate, args) = rest.split_once(' ')?;
    let v: Value = serde_json::from_str(args).ok()?;
    v.is_object().then(|| (gate.to_string(), v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(lines: &[(&str, &str)]) -> Loaded {
        let mut t =
            String::from(r#"{"switchboard_recording":1,"backend":"gateway","argv":[],"cwd":""}"#);
        for (d, l) in lines {
            t.push('\n');
            t.push_str(&serde_json::json!({"ts": 1, "dir": d, "line": l}).to_string());
        }
        switchboard_record::load::load_str(&t, None).unwrap()
    }

    const CALL: &str = r#"{"type":"call","protocol":1,"id":"1","workspaceId":"w","sessionId":"s","intention":"i","tool":"workspace_read","args":{"path":"a"}}"#;
    const OK: &str = r#"{"type":"result","id":"1","sessionId":"s","result":{"content":[],"structuredContent":{}}}"#;

    const WRITE: &str = r#"{"type":"call","protocol":1,"id":"1","workspaceId":"w","sessionId":"s","intention":"i","tool":"workspace_write","args":{"path":"a","content":"x","expectedSha256":null}}"#;

    #[test]
    fn a_clean_exchange_passes_and_a_changed_answer_is_flagged() {
        let r = validate(&rec(&[
            ("out", r#"{"type":"ready","protocol":1}"#),
            ("in", WRITE),
            ("out", OK),
            ("in", WRITE),
            ("out", OK),
        ]));
        assert!(r.findings.is_empty(), "{:?}", r.findings);
        let other = OK.replace("{}}}", r#"{"x":1}}}"#);
        let r = validate(&rec(&[
            ("in", WRITE),
            ("out", OK),
            ("in", WRITE),
            ("out", &other),
        ]));
        assert_eq!(r.findings.len(), 1);
        assert_eq!(r.findings[0].rule, "exactly-once");
    }

    /// The decision of issue 21: `id_conflict`, `busy` and `failed` answer a frame, not the
    /// id; a read is run again on a re-send. Anything else answered twice differently is a
    /// second final answer.
    #[test]
    fn non_final_answers_and_reads_are_not_second_answers() {
        let body = |code: &str| {
            format!(
                r#"{{"type":"result","id":"1","sessionId":"s","result":{{"content":[],"isError":true,"structuredContent":{{"code":"{code}"}}}}}}"#
            )
        };
        let other = OK.replace("{}}}", r#"{"x":1}}}"#);
        let r = validate(&rec(&[
            ("in", WRITE),
            ("out", &body("failed")),
            ("in", WRITE),
            ("out", OK),
            ("in", WRITE),
            ("out", &body("id_conflict")),
            ("in", WRITE),
            ("out", &body("busy")),
        ]));
        assert!(r.findings.is_empty(), "{:?}", r.findings);
        let r = validate(&rec(&[
            ("in", CALL),
            ("out", OK),
            ("in", CALL),
            ("out", &other),
        ]));
        assert!(r.findings.is_empty(), "{:?}", r.findings);
        let r = validate(&rec(&[
            ("in", WRITE),
            ("out", OK),
            ("in", WRITE),
            ("out", &body("denied_by_owner")),
        ]));
        assert_eq!(r.findings.len(), 1);
        assert_eq!(r.findings[0].rule, "exactly-once");
    }

    #[test]
    fn schema_and_orphans_are_flagged() {
        let bad = CALL.replace(r#"{"path":"a"}"#, r#"{"path":"a","x":1}"#);
        let r = validate(&rec(&[
            ("in", &bad),
            ("out", &OK.replace("\"1\"", "\"2\"")),
        ]));
        let rules: Vec<&str> = r.findings.iter().map(|f| f.rule).collect();
        assert_eq!(rules, ["schema", "orphan-result"]);
    }
}
