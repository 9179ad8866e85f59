//! Reading a cowork-harness cassette: its agent output and host input interleaved into one list
//! of frames, each with the file line it came from.

use serde_json::Value;

use switchboard_core::BackendKind;

use super::{Format, Frame, Loaded};
use crate::Dir;

/// The 1-based file line where each element of the top-level array `key` starts, however the
/// cassette is laid out (pretty-printed or on one line), so findings point at real lines.
fn element_lines(text: &str, key: &str) -> Vec<usize> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let (mut depth, mut line, mut i) = (0usize, 1usize, 0usize);
    // The last string seen directly in the top-level object (the key before a `:` and value).
    let mut last_key: &[u8] = b"";
    let mut inside = false;
    while i < b.len() {
        match b[i] {
            b'\n' => line += 1,
            b'"' => {
                let (start, start_line) = (i + 1, line);
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    } else if b[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
                if inside && depth == 2 {
                    out.push(start_line);
                } else if depth == 1 {
                    last_key = &b[start..i.min(b.len())];
                }
            }
            b'{' | b'[' => {
                depth += 1;
                if b[i] == b'[' && depth == 2 && last_key == key.as_bytes() {
                    inside = true;
                }
            }
            b'}' | b']' => {
                if inside && depth == 2 {
                    return out;
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        i += 1;
    }
    out
}

pub(super) fn cassette(text: &str) -> Result<Loaded, String> {
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
        backend: BackendKind::Claude,
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
