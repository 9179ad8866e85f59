//! Reading recordings: our own JSONL recordings, cowork-harness cassettes and plain JSONL wire
//! logs, into one list of frames with their direction and source line, or as a stream of frames
//! read one line at a time (`stream`, for `validate`: memory does not grow with the file).
//!
//! A cassette is read in `cassette.rs`; the directions of a JSONL wire log's lines are inferred
//! in `directions.rs`.

use std::collections::VecDeque;
use std::io::BufRead;
use std::path::Path;

use serde_json::Value;

use switchboard_core::BackendKind;

use crate::Dir;

mod cassette;
mod directions;
pub mod entry;

use cassette::cassette;
use directions::{AcpDirs, ClaudeDirs};

pub use directions::acp_client_method;

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
    match entry::frame(src_line, l.as_bytes(), String::new()) {
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
