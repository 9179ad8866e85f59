//! Reading recordings: our own JSONL recordings, cowork-harness cassettes and plain JSONL wire
//! logs, into one list of frames with their direction and source line.

use std::path::Path;

use serde_json::Value;

use crate::record::Dir;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// switchboard's recording (header line + `{ts,dir,line}` lines).
    Recording,
    /// A cowork-harness cassette (`events` = agent stdout, `controlOut` = host stdin).
    Cassette,
    /// One raw protocol frame per line; directions are inferred.
    Jsonl,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "recording" => Ok(Format::Recording),
            "cassette" => Ok(Format::Cassette),
            "jsonl" => Ok(Format::Jsonl),
            _ => Err(format!("unknown format {s:?} (recording, cassette, jsonl)")),
        }
    }
}

/// One line of traffic (or a note) in a recording.
#[derive(Clone, Debug)]
pub struct Frame {
    /// 1-based line in the source file.
    pub src_line: usize,
    pub ts: Option<u64>,
    pub dir: Dir,
    pub text: String,
}

#[derive(Debug)]
pub struct Loaded {
    pub format: Format,
    pub backend: String,
    pub header: Option<Value>,
    pub frames: Vec<Frame>,
}

/// Load `path`, detecting the format unless `force` says which it is.
pub fn load(path: &Path, force: Option<Format>) -> Result<Loaded, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    load_str(&text, force)
}

pub fn load_str(text: &str, force: Option<Format>) -> Result<Loaded, String> {
    let format = match force {
        Some(f) => f,
        None => detect(text),
    };
    match format {
        Format::Recording => recording(text),
        Format::Cassette => cassette(text),
        Format::Jsonl => Ok(jsonl(text)),
    }
}

fn detect(text: &str) -> Format {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if let Ok(v) = serde_json::from_str::<Value>(first) {
        if v.get("switchboard_recording").is_some() {
            return Format::Recording;
        }
        if v.get("events").is_some() && v.get("controlOut").is_some() {
            return Format::Cassette;
        }
    }
    if text.trim_start().starts_with('{') && !first.trim_end().ends_with('}') {
        return Format::Cassette;
    }
    Format::Jsonl
}

fn recording(text: &str) -> Result<Loaded, String> {
    let mut lines = text.lines().enumerate();
    let header: Value = lines
        .next()
        .and_then(|(_, l)| serde_json::from_str(l).ok())
        .ok_or("the first line is not a recording header")?;
    if header.get("switchboard_recording").and_then(Value::as_u64) != Some(1) {
        return Err(format!(
            "unsupported recording version {}",
            header.get("switchboard_recording").unwrap_or(&Value::Null)
        ));
    }
    let backend = header
        .get("backend")
        .and_then(Value::as_str)
        .unwrap_or("claude")
        .to_string();
    let mut frames = Vec::new();
    for (i, l) in lines {
        if l.trim().is_empty() {
            continue;
        }
        #[derive(serde::Deserialize)]
        struct E {
            ts: Option<u64>,
            dir: String,
            line: String,
        }
        let frame = match serde_json::from_str::<E>(l) {
            Ok(e) => {
                let dir = match e.dir.as_str() {
                    "in" => Dir::In,
                    "out" => Dir::Out,
                    "err" => Dir::Err,
                    _ => Dir::Note,
                };
                Frame {
                    src_line: i + 1,
                    ts: e.ts,
                    dir,
                    text: e.line,
                }
            }
            // A damaged entry is kept as a note so nothing is lost and line numbers hold.
            Err(e) => Frame {
                src_line: i + 1,
                ts: None,
                dir: Dir::Note,
                text: format!("unreadable recording entry: {e}: {l}"),
            },
        };
        frames.push(frame);
    }
    Ok(Loaded {
        format: Format::Recording,
        backend,
        header: Some(header),
        frames,
    })
}

/// The 1-based file line of each element of the top-level array `key` in a pretty-printed
/// cassette (one string per line), so findings can point at real lines.
fn element_lines(text: &str, key: &str) -> Vec<usize> {
    let open = format!("\"{key}\": [");
    let mut out = Vec::new();
    let mut inside = false;
    for (i, l) in text.lines().enumerate() {
        let t = l.trim_start();
        if !inside {
            if t.starts_with(&open) {
                inside = true;
            }
            continue;
        }
        if t.starts_with(']') {
            break;
        }
        if t.starts_with('"') {
            out.push(i + 1);
        }
    }
    out
}

fn cassette(text: &str) -> Result<Loaded, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not a JSON cassette: {e}"))?;
    let strings = |key: &str| -> Result<Vec<String>, String> {
        v.get(key)
            .and_then(Value::as_array)
            .ok_or(format!("cassette has no `{key}` array"))?
            .iter()
            .map(|e| {
                e.as_str()
                    .map(str::to_string)
                    .ok_or(format!("`{key}` holds a non-string"))
            })
            .collect()
    };
    let events = strings("events")?;
    let out = strings("controlOut")?;
    let (ev_lines, out_lines) = (
        element_lines(text, "events"),
        element_lines(text, "controlOut"),
    );
    let line_of = |lines: &[usize], i: usize| lines.get(i).copied().unwrap_or(0);
    // Interleave: our replies go right after the request they answer; requests we sent
    // (initialize, the user turn) go before the first event that follows them.
    let mut replies: std::collections::HashMap<String, Vec<(usize, String)>> = Default::default();
    let mut lead = Vec::new();
    for (i, l) in out.iter().enumerate() {
        match reply_id(l) {
            Some(id) => replies.entry(id).or_default().push((i, l.clone())),
            None => lead.push((i, l.clone())),
        }
    }
    let mut frames = Vec::new();
    let push_out = |frames: &mut Vec<Frame>, i: usize, l: String| {
        frames.push(Frame {
            src_line: line_of(&out_lines, i),
            ts: None,
            dir: Dir::Out,
            text: l,
        })
    };
    let mut lead = lead.into_iter().peekable();
    // The initialize request comes first.
    if let Some((i, l)) = lead.next() {
        push_out(&mut frames, i, l);
    }
    let mut turn_sent = false;
    for (i, e) in events.into_iter().enumerate() {
        let is_init_reply = reply_id(&e).is_some() && e.contains("\"control_response\"");
        if !is_init_reply && !turn_sent {
            for (i, l) in lead.by_ref() {
                push_out(&mut frames, i, l);
            }
            turn_sent = true;
        }
        let id = request_id(&e);
        frames.push(Frame {
            src_line: line_of(&ev_lines, i),
            ts: None,
            dir: Dir::In,
            text: e,
        });
        if let Some(id) = id {
            for (i, l) in replies.remove(&id).unwrap_or_default() {
                push_out(&mut frames, i, l);
            }
        }
    }
    for (i, l) in lead {
        push_out(&mut frames, i, l);
    }
    // Replies to requests that never appeared stay visible at the end.
    let mut rest: Vec<(usize, String)> = replies.into_values().flatten().collect();
    rest.sort();
    for (i, l) in rest {
        push_out(&mut frames, i, l);
    }
    Ok(Loaded {
        format: Format::Cassette,
        backend: "claude".into(),
        header: None,
        frames,
    })
}

/// `request_id` of a control_request line.
fn request_id(line: &str) -> Option<String> {
    let v: Value = serde_json::from_str(line).ok()?;
    (v.get("type")?.as_str()? == "control_request")
        .then(|| v.get("request_id")?.as_str().map(str::to_string))
        .flatten()
}

/// `request_id` of a control_response line.
fn reply_id(line: &str) -> Option<String> {
    let v: Value = serde_json::from_str(line).ok()?;
    (v.get("type")?.as_str()? == "control_response")
        .then(|| {
            v.get("response")?
                .get("request_id")?
                .as_str()
                .map(str::to_string)
        })
        .flatten()
}

/// Subtypes only a host sends.
const HOST_REQUESTS: &[&str] = &[
    "initialize",
    "interrupt",
    "set_permission_mode",
    "set_model",
    "set_max_thinking_tokens",
    "stop_task",
    "mcp_status",
    "rewind_files",
];

fn jsonl(text: &str) -> Loaded {
    if is_acp(text) {
        return acp_jsonl(text);
    }
    let mut frames = Vec::new();
    let mut inbound_requests = std::collections::HashSet::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let v: Option<Value> = serde_json::from_str(l).ok();
        let kind = v
            .as_ref()
            .and_then(|v| v.get("type"))
            .and_then(Value::as_str);
        let dir = match kind {
            Some("control_request") => {
                let sub = v
                    .as_ref()
                    .and_then(|v| v.get("request"))
                    .and_then(|r| r.get("subtype"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if HOST_REQUESTS.contains(&sub) {
                    Dir::Out
                } else {
                    if let Some(id) = request_id(l) {
                        inbound_requests.insert(id);
                    }
                    Dir::In
                }
            }
            Some("control_response") => match reply_id(l) {
                Some(id) if inbound_requests.contains(&id) => Dir::Out,
                _ => Dir::In,
            },
            // A user turn we wrote has no uuid; the agent's echoes and tool results do.
            Some("user") => {
                let v = v.as_ref().expect("kind came from v");
                if v.get("uuid").is_none() && v.get("tool_use_result").is_none() {
                    Dir::Out
                } else {
                    Dir::In
                }
            }
            _ => Dir::In,
        };
        frames.push(Frame {
            src_line: i + 1,
            ts: None,
            dir,
            text: l.to_string(),
        });
    }
    Loaded {
        format: Format::Jsonl,
        backend: "claude".into(),
        header: None,
        frames,
    }
}

/// A JSONL log is ACP when one of its first JSON lines carries `"jsonrpc":"2.0"`.
fn is_acp(text: &str) -> bool {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .take(32)
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|v| v.get("jsonrpc").and_then(Value::as_str) == Some("2.0"))
}

/// Methods only a client sends (to the agent).
const ACP_CLIENT_METHODS: &[&str] = &[
    "initialize",
    "authenticate",
    "session/new",
    "session/load",
    "session/prompt",
    "session/cancel",
    "session/set_mode",
    "session/set_model",
    "session/set_config_option",
    "session/list",
];

/// Whether `method` travels client → agent.
pub fn acp_client_method(method: &str) -> bool {
    ACP_CLIENT_METHODS.contains(&method) || method.starts_with("_checkfu/")
}

/// Which side a response body answers, by its shape: `Some(true)` the agent's answer to one of
/// our requests, `Some(false)` our answer to one of the agent's.
fn acp_response_side(result: Option<&Value>) -> Option<bool> {
    let r = result?.as_object()?;
    let has = |k: &str| r.contains_key(k);
    if has("protocolVersion") || has("stopReason") || has("sessionId") || has("disposition") {
        Some(true)
    } else if has("outcome")
        || has("terminalId")
        || has("content")
        || has("output")
        || has("exitCode")
    {
        Some(false)
    } else {
        None
    }
}

/// An ACP JSON-RPC log: requests and notifications by method, responses opposite to the
/// request with that id (our ids and the agent's collide, so each side has its own table).
fn acp_jsonl(text: &str) -> Loaded {
    use std::collections::HashSet;
    let mut frames = Vec::new();
    // Open requests per side, and every id each side ever used.
    let (mut ours_open, mut theirs_open) = (HashSet::new(), HashSet::new());
    let (mut ours_seen, mut theirs_seen) = (HashSet::new(), HashSet::new());
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let v: Option<Value> = serde_json::from_str(l).ok();
        let method = v
            .as_ref()
            .and_then(|v| v.get("method"))
            .and_then(Value::as_str);
        let id = v
            .as_ref()
            .and_then(|v| v.get("id"))
            .filter(|i| !i.is_null())
            .map(Value::to_string);
        let dir = match (method, id) {
            (Some(m), id) => {
                let out = acp_client_method(m);
                if let Some(id) = id {
                    if out {
                        ours_open.insert(id.clone());
                        ours_seen.insert(id);
                    } else {
                        theirs_open.insert(id.clone());
                        theirs_seen.insert(id);
                    }
                }
                if out { Dir::Out } else { Dir::In }
            }
            (None, Some(id)) => {
                let body = v.as_ref().and_then(|v| v.get("result"));
                let (a, o) = (theirs_open.contains(&id), ours_open.contains(&id));
                let to_agent = match acp_response_side(body) {
                    Some(ours) => !ours,
                    // Both open and no telling shape: our reply to the agent (our own
                    // requests' answers carry telling fields).
                    None if a || o => a,
                    None => theirs_seen.contains(&id) && !ours_seen.contains(&id),
                };
                if to_agent {
                    theirs_open.remove(&id);
                    Dir::Out
                } else {
                    ours_open.remove(&id);
                    Dir::In
                }
            }
            (None, None) => Dir::In,
        };
        frames.push(Frame {
            src_line: i + 1,
            ts: None,
            dir,
            text: l.to_string(),
        });
    }
    Loaded {
        format: Format::Jsonl,
        backend: "acp".into(),
        header: None,
        frames,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_and_reads_a_recording() {
        let text = "{\"switchboard_recording\":1,\"backend\":\"claude\"}\n{\"ts\":5,\"dir\":\"out\",\"line\":\"{}\"}\nbroken\n";
        let l = load_str(text, None).unwrap();
        assert_eq!(l.format, Format::Recording);
        assert_eq!(l.frames.len(), 2);
        assert_eq!(l.frames[0].dir, Dir::Out);
        assert_eq!(l.frames[1].dir, Dir::Note);
        assert_eq!(l.frames[1].src_line, 3);
    }

    #[test]
    fn jsonl_directions() {
        let text = concat!(
            "{\"type\":\"control_request\",\"request_id\":\"i\",\"request\":{\"subtype\":\"initialize\"}}\n",
            "{\"type\":\"control_request\",\"request_id\":\"g\",\"request\":{\"subtype\":\"can_use_tool\"}}\n",
            "{\"type\":\"control_response\",\"response\":{\"subtype\":\"success\",\"request_id\":\"g\"}}\n",
            "{\"type\":\"control_response\",\"response\":{\"subtype\":\"success\",\"request_id\":\"i\"}}\n",
        );
        let l = load_str(text, Some(Format::Jsonl)).unwrap();
        let dirs: Vec<Dir> = l.frames.iter().map(|f| f.dir).collect();
        assert_eq!(dirs, vec![Dir::Out, Dir::In, Dir::Out, Dir::In]);
    }

    #[test]
    fn acp_jsonl_directions_keep_separate_id_tables() {
        let text = concat!(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":1}}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/prompt\",\"params\":{}}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"fs/write_text_file\",\"params\":{}}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":null}\n",
            "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{}}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"stopReason\":\"end_turn\"}}\n",
        );
        let l = load_str(text, None).unwrap();
        assert_eq!(l.backend, "acp");
        let dirs: Vec<Dir> = l.frames.iter().map(|f| f.dir).collect();
        use Dir::{In, Out};
        assert_eq!(dirs, vec![Out, In, Out, In, Out, In, In]);
    }
}
