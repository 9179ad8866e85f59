//! Reading recordings: our own JSONL recordings, cowork-harness cassettes and plain JSONL wire
//! logs, into one list of frames with their direction and source line, or as a stream of frames
//! read one line at a time (`stream`, for `validate`: memory does not grow with the file).

use std::collections::{HashSet, VecDeque};
use std::io::BufRead;
use std::path::Path;

use serde_json::Value;

use switchboard_core::BackendKind;

use crate::Dir;

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
    pub backend: BackendKind,
    pub header: Option<Value>,
    pub frames: Vec<Frame>,
}

/// The text of the note a recording's last line becomes when the file ends in the middle of it
/// (the recorder was killed mid-write, or the file was cut short).
pub const CUT_SHORT: &str = "unreadable recording entry: the file ends mid-line";

/// The backend a recording's header names. A header naming none is Claude's (the format's first
/// backend); one naming a backend this build does not know is read as Claude's too, and
/// `validate` says so (`unknown_backend`).
pub fn header_backend(header: &Value) -> BackendKind {
    header
        .get("backend")
        .and_then(Value::as_str)
        .and_then(BackendKind::from_name)
        .unwrap_or_default()
}

/// The backend name a header gives when this build does not know it.
pub fn unknown_backend(header: Option<&Value>) -> Option<&str> {
    header?
        .get("backend")
        .and_then(Value::as_str)
        .filter(|name| BackendKind::from_name(name).is_none())
}

/// Load `path`, detecting the format unless `force` says which it is.
pub fn load(path: &Path, force: Option<Format>) -> Result<Loaded, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    load_str(&text, force)
}

pub fn load_str(text: &str, force: Option<Format>) -> Result<Loaded, String> {
    let first = text.lines().find(|l| !l.trim().is_empty()).ok_or(EMPTY)?;
    let format = force.unwrap_or_else(|| detect(first));
    if format == Format::Cassette {
        return cassette(text);
    }
    let mut lines = Lines::new(text.as_bytes(), format)?;
    let frames = lines.by_ref().collect::<Result<Vec<Frame>, String>>()?;
    Ok(Loaded {
        format,
        backend: lines.backend,
        header: lines.header,
        frames,
    })
}

const EMPTY: &str = "the file is empty: no recording, cassette or log to read";

/// The frames of `path` one at a time: a recording or JSONL log is read line by line and never
/// held whole (a cassette, one JSON document, is loaded whole first).
pub fn stream(path: &Path, force: Option<Format>) -> Result<Stream, String> {
    let open = || {
        std::fs::File::open(path)
            .map(std::io::BufReader::new)
            .map_err(|e| format!("cannot read: {e}"))
    };
    // The first non-empty line tells the format (and that there is something to read).
    let first = {
        let mut r = open()?;
        let mut buf = Vec::new();
        loop {
            buf.clear();
            if r.read_until(b'\n', &mut buf)
                .map_err(|e| format!("cannot read: {e}"))?
                == 0
            {
                return Err(EMPTY.into());
            }
            let l = String::from_utf8_lossy(&buf);
            if !l.trim().is_empty() {
                break l.trim_end_matches(['\n', '\r']).to_string();
            }
        }
    };
    let format = force.unwrap_or_else(|| detect(&first));
    if format == Format::Cassette {
        return load(path, Some(format)).map(Stream::Whole);
    }
    let reader: Box<dyn BufRead> = Box::new(open()?);
    Ok(Stream::Lines(Box::new(Lines::new(reader, format)?)))
}

/// What `stream` gives.
pub enum Stream {
    Whole(Loaded),
    Lines(Box<Lines<Box<dyn BufRead>>>),
}

impl Stream {
    pub fn format(&self) -> Format {
        match self {
            Stream::Whole(l) => l.format,
            Stream::Lines(l) => l.format,
        }
    }

    pub fn backend(&self) -> BackendKind {
        match self {
            Stream::Whole(l) => l.backend,
            Stream::Lines(l) => l.backend,
        }
    }

    pub fn header(&self) -> Option<&Value> {
        match self {
            Stream::Whole(l) => l.header.as_ref(),
            Stream::Lines(l) => l.header.as_ref(),
        }
    }
}

/// The frames of a recording or JSONL log read line by line, with the same directions and
/// line numbers `load` gives. An I/O error or a line that is not UTF-8 ends it with `Err`.
pub struct Lines<R: BufRead> {
    reader: R,
    pub format: Format,
    pub backend: BackendKind,
    pub header: Option<Value>,
    /// Lines read ahead (to tell an ACP log from a Claude one): (1-based line, text, whether a
    /// newline ended it).
    ahead: VecDeque<(usize, String, bool)>,
    /// The last line number read from `reader`.
    line_no: usize,
    dirs: Dirs,
    buf: Vec<u8>,
    failed: bool,
}

enum Dirs {
    Recording,
    Claude(ClaudeDirs),
    Acp(AcpDirs),
}

impl<R: BufRead> Lines<R> {
    fn new(reader: R, format: Format) -> Result<Lines<R>, String> {
        let mut me = Lines {
            reader,
            format,
            backend: BackendKind::Claude,
            header: None,
            ahead: VecDeque::new(),
            line_no: 0,
            dirs: Dirs::Recording,
            buf: Vec::new(),
            failed: false,
        };
        match format {
            Format::Recording => {
                let first = me.read()?.map(|(_, l, _)| l).unwrap_or_default();
                let header: Value = serde_json::from_str(&first)
                    .map_err(|_| "the first line is not a recording header")?;
                if header.get("switchboard_recording").and_then(Value::as_u64) != Some(1) {
                    return Err(format!(
                        "unsupported recording version {}",
                        header.get("switchboard_recording").unwrap_or(&Value::Null)
                    ));
                }
                me.backend = header_backend(&header);
                me.header = Some(header);
            }
            Format::Jsonl => {
                // A JSONL log is ACP when one of its first 32 non-empty lines carries
                // `"jsonrpc":"2.0"`.
                let mut acp = false;
                let mut seen = 0;
                while seen < 32 {
                    let Some(l) = me.read()? else { break };
                    if !l.1.trim().is_empty() {
                        seen += 1;
                        acp = acp
                            || serde_json::from_str::<Value>(&l.1).is_ok_and(|v| {
                                v.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
                            });
                    }
                    me.ahead.push_back(l);
                }
                me.dirs = if acp {
                    me.backend = BackendKind::Acp;
                    Dirs::Acp(AcpDirs::default())
                } else {
                    Dirs::Claude(ClaudeDirs::default())
                };
            }
            Format::Cassette => return Err("a cassette is read whole, not by lines".into()),
        }
        Ok(me)
    }

    /// The next line from the reader, without its line ending.
    fn read(&mut self) -> Result<Option<(usize, String, bool)>, String> {
        self.buf.clear();
        let n = self
            .reader
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| format!("cannot read: {e}"))?;
        if n == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        let ended = self.buf.last() == Some(&b'\n');
        if ended {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        }
        let text = std::str::from_utf8(&self.buf)
            .map_err(|e| format!("cannot read: line {}: {e}", self.line_no))?;
        Ok(Some((self.line_no, text.to_string(), ended)))
    }
}

impl<R: BufRead> Iterator for Lines<R> {
    type Item = Result<Frame, String>;

    fn next(&mut self) -> Option<Result<Frame, String>> {
        if self.failed {
            return None;
        }
        loop {
            let (line, text, ended) = match self.ahead.pop_front() {
                Some(l) => l,
                None => match self.read() {
                    Ok(Some(l)) => l,
                    Ok(None) => return None,
                    Err(e) => {
                        self.failed = true;
                        return Some(Err(e));
                    }
                },
            };
            if text.trim().is_empty() {
                continue;
            }
            return Some(Ok(match &mut self.dirs {
                Dirs::Recording => entry_frame(line, text, ended),
                Dirs::Claude(d) => raw_frame(line, text, ended, |t| d.dir(t)),
                Dirs::Acp(d) => raw_frame(line, text, ended, |t| d.dir(t)),
            }));
        }
    }
}

/// A recording entry (`{ts,dir,line}`) as a frame; a damaged one is kept as a note so nothing
/// is lost and line numbers hold.
fn entry_frame(src_line: usize, l: String, ended: bool) -> Frame {
    match super::entry::frame(src_line, l.as_bytes(), String::new()) {
        Ok(f) => f,
        Err(_) if !ended => cut_short(src_line, &l),
        Err(e) => Frame {
            src_line,
            ts: None,
            dir: Dir::Note,
            text: format!("unreadable recording entry: {e}: {l}"),
        },
    }
}

/// A raw log line: its direction inferred; a last line cut before its end is a note.
fn raw_frame(src_line: usize, l: String, ended: bool, dir: impl FnOnce(&str) -> Dir) -> Frame {
    if !ended && serde_json::from_str::<serde::de::IgnoredAny>(&l).is_err() {
        return cut_short(src_line, &l);
    }
    Frame {
        src_line,
        ts: None,
        dir: dir(&l),
        text: l,
    }
}

fn cut_short(src_line: usize, l: &str) -> Frame {
    Frame {
        src_line,
        ts: None,
        dir: Dir::Note,
        text: format!("{CUT_SHORT} ({} bytes without a newline): {l}", l.len()),
    }
}

/// The format of a file whose first non-empty line is `first`.
fn detect(first: &str) -> Format {
    if let Ok(v) = serde_json::from_str::<Value>(first) {
        if v.get("switchboard_recording").is_some() {
            return Format::Recording;
        }
        if v.get("events").is_some() && v.get("controlOut").is_some() {
            return Format::Cassette;
        }
    }
    if first.trim_start().starts_with('{') && !first.trim_end().ends_with('}') {
        return Format::Cassette;
    }
    Format::Jsonl
}

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

/// Directions of a Claude JSONL wire log, inferred line by line.
#[derive(Default)]
struct ClaudeDirs {
    /// Ids of the agent's requests: a reply to one is ours.
    inbound_requests: HashSet<String>,
}

impl ClaudeDirs {
    fn dir(&mut self, l: &str) -> Dir {
        let Ok(v) = serde_json::from_str::<Value>(l) else {
            return Dir::In;
        };
        match v.get("type").and_then(Value::as_str) {
            Some("control_request") => {
                let sub = v
                    .get("request")
                    .and_then(|r| r.get("subtype"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if HOST_REQUESTS.contains(&sub) {
                    Dir::Out
                } else {
                    if let Some(id) = v.get("request_id").and_then(Value::as_str) {
                        self.inbound_requests.insert(id.to_string());
                    }
                    Dir::In
                }
            }
            Some("control_response") => {
                match v.pointer("/response/request_id").and_then(Value::as_str) {
                    Some(id) if self.inbound_requests.contains(id) => Dir::Out,
                    _ => Dir::In,
                }
            }
            // A user turn we wrote has no uuid; the agent's echoes and tool results do.
            Some("user") => {
                if v.get("uuid").is_none() && v.get("tool_use_result").is_none() {
                    Dir::Out
                } else {
                    Dir::In
                }
            }
            _ => Dir::In,
        }
    }
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

/// Directions of an ACP JSON-RPC log: requests and notifications by method, responses opposite
/// to the request with that id (our ids and the agent's collide, so each side has its own
/// table).
#[derive(Default)]
struct AcpDirs {
    /// Open requests per side, and every id each side ever used.
    ours_open: HashSet<String>,
    theirs_open: HashSet<String>,
    ours_seen: HashSet<String>,
    theirs_seen: HashSet<String>,
}

impl AcpDirs {
    fn dir(&mut self, l: &str) -> Dir {
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
        match (method, id) {
            (Some(m), id) => {
                let out = acp_client_method(m);
                if let Some(id) = id {
                    if out {
                        self.ours_open.insert(id.clone());
                        self.ours_seen.insert(id);
                    } else {
                        self.theirs_open.insert(id.clone());
                        self.theirs_seen.insert(id);
                    }
                }
                if out { Dir::Out } else { Dir::In }
            }
            (None, Some(id)) => {
                let body = v.as_ref().and_then(|v| v.get("result"));
                let (a, o) = (self.theirs_open.contains(&id), self.ours_open.contains(&id));
                let to_agent = match acp_response_side(body) {
                    Some(ours) => !ours,
                    // Both open and no telling shape: our reply to the agent (our own
                    // requests' answers carry telling fields).
                    None if a || o => a,
                    None => self.theirs_seen.contains(&id) && !self.ours_seen.contains(&id),
                };
                if to_agent {
                    self.theirs_open.remove(&id);
                    Dir::Out
                } else {
                    self.ours_open.remove(&id);
                    Dir::In
                }
            }
            (None, None) => Dir::In,
        }
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
        assert_eq!(l.backend, BackendKind::Acp);
        let dirs: Vec<Dir> = l.frames.iter().map(|f| f.dir).collect();
        use Dir::{In, Out};
        assert_eq!(dirs, vec![Out, In, Out, In, Out, In, In]);
    }
}
