//! Session recordings: every wire line, in order, as JSON lines after a header.
//!
//! Format (version 1):
//! - line 1: `{"switchboard_recording":1,"backend":"claude","argv":[...],"cwd":"...",
//!   "switchboard_version":"...","started_ms":<unix ms>,"started":"<UTC ISO time>"}`
//! - then one object per event: `{"ts":<unix ms>,"dir":"in"|"out"|"err"|"note","line":"..."}`
//!   where `in` is a line the agent wrote (stdout), `out` a line we wrote to its stdin,
//!   `err` a stderr line and `note` our own remark. `line` is the raw text, untouched.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

pub const FORMAT_VERSION: u32 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    In,
    Out,
    Err,
    Note,
}

#[derive(Serialize)]
struct Header<'a> {
    switchboard_recording: u32,
    backend: &'a str,
    argv: &'a [String],
    cwd: &'a str,
    switchboard_version: &'a str,
    started_ms: u64,
    started: String,
}

#[derive(Serialize)]
struct Entry<'a> {
    ts: u64,
    dir: Dir,
    line: &'a str,
}

/// Appends to a recording file, flushing every line so a crash loses nothing.
pub struct Recorder {
    out: BufWriter<File>,
    path: PathBuf,
    /// Told once, with the reason, when a write fails (the live session shows it).
    on_failure: Option<tokio::sync::oneshot::Sender<String>>,
}

impl Recorder {
    pub fn create(
        path: &Path,
        backend: switchboard_core::BackendKind,
        argv: &[String],
        cwd: &str,
    ) -> io::Result<Recorder> {
        // Private: 0600 in 0700 directories, never through a link (see `paths`).
        crate::paths::prepare_parent(path)?;
        let file = crate::paths::create_private_file(path, false)?;
        let mut r = Recorder {
            out: BufWriter::new(file),
            path: path.to_path_buf(),
            on_failure: None,
        };
        let now = now_ms();
        let header = Header {
            switchboard_recording: FORMAT_VERSION,
            backend: backend.name(),
            argv,
            cwd,
            switchboard_version: env!("CARGO_PKG_VERSION"),
            started_ms: now,
            started: utc_from_secs((now / 1000) as i64),
        };
        serde_json::to_writer(&mut r.out, &header)?;
        r.out.write_all(b"\n")?;
        r.out.flush()?;
        Ok(r)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where to report the first write failure; see `failed`.
    pub fn notify_failure(&mut self, tx: tokio::sync::oneshot::Sender<String>) {
        self.on_failure = Some(tx);
    }

    /// A write failed and the recording stops here: report why (once).
    pub fn failed(&mut self, why: &io::Error) {
        if let Some(tx) = self.on_failure.take() {
            let _ = tx.send(format!("{why} (writing {})", self.path.display()));
        }
    }

    /// Tests: send everything from now on to `file` (e.g. `/dev/full`).
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn redirect(&mut self, file: File) {
        self.out = BufWriter::new(file);
    }

    pub fn record(&mut self, dir: Dir, line: &str) -> io::Result<()> {
        self.record_at(now_ms(), dir, line)
    }

    pub fn record_at(&mut self, ts: u64, dir: Dir, line: &str) -> io::Result<()> {
        // The whole entry in one write: serialised straight into the buffered writer, an
        // entry larger than its buffer would reach the file in pieces, and a kill between two
        // of them would tear the line.
        let mut entry = serde_json::to_vec(&Entry { ts, dir, line })?;
        entry.push(b'\n');
        self.out.write_all(&entry)?;
        self.out.flush()
    }
}

/// The note that ends a recording whose host stopped without being stopped (a crash, a kill,
/// a reboot): written by the resume, with when the host stopped and when it came back. Replay
/// draws the boundary from it; validate reports what was waiting then as left by the crash.
pub const HOST_STOPPED: &str = "host stopped unexpectedly:";

/// The note's text.
pub fn host_stopped_note(stopped_ms: u64, resumed_ms: u64) -> String {
    format!("{HOST_STOPPED} stopped_ms={stopped_ms} resumed_ms={resumed_ms}")
}

/// `(stopped_ms, resumed_ms)` of a host-stopped note's text.
pub fn parse_host_stopped(text: &str) -> Option<(u64, u64)> {
    let rest = text.strip_prefix(HOST_STOPPED)?;
    let mut stopped = None;
    let mut resumed = None;
    for word in rest.split_whitespace() {
        if let Some(v) = word.strip_prefix("stopped_ms=") {
            stopped = v.parse().ok();
        } else if let Some(v) = word.strip_prefix("resumed_ms=") {
            resumed = v.parse().ok();
        }
    }
    Some((stopped?, resumed?))
}

/// Append the host-stopped note to the recording at `path` (left by a crash; nobody writes it
/// any more). A recording whose last line the crash tore is left as it is: a note after it
/// would be glued to the torn line.
pub fn append_host_stopped(path: &Path, stopped_ms: u64, resumed_ms: u64) -> io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    /// What is read of the file's first and last lines.
    const EDGE: u64 = 64 << 10;
    let mut f = crate::paths::open_private_append(path)?;
    let len = f.metadata()?.len();
    // Only ever a recording: its first line is our header (a manifest names its files, and
    // a note must never land in anything else).
    let mut head = Vec::new();
    (&mut f).take(EDGE).read_to_end(&mut head)?;
    let first = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let is_recording = serde_json::from_slice::<serde_json::Value>(first)
        .is_ok_and(|v| v.get("switchboard_recording").is_some());
    if !is_recording {
        return Err(io::Error::other("not a switchboard recording"));
    }
    let from = len.saturating_sub(EDGE);
    let mut tail = Vec::new();
    f.seek(SeekFrom::Start(from))?;
    (&mut f).take(EDGE).read_to_end(&mut tail)?;
    if tail.last() != Some(&b'\n') {
        return Err(io::Error::other("its last line was torn by the crash"));
    }
    // A recording left by an earlier crash already ends where that host stopped: a later
    // resume of the workspace does not stack another boundary on it.
    let last = tail[..tail.len() - 1]
        .rsplit(|b| *b == b'\n')
        .next()
        .unwrap_or_default();
    if serde_json::from_slice::<serde_json::Value>(last).is_ok_and(|v| {
        v["dir"] == "note" && v["line"].as_str().and_then(parse_host_stopped).is_some()
    }) {
        return Ok(());
    }
    let text = host_stopped_note(stopped_ms, resumed_ms);
    let mut entry = serde_json::to_vec(&Entry {
        ts: resumed_ms,
        dir: Dir::Note,
        line: &text,
    })?;
    entry.push(b'\n');
    f.write_all(&entry)?;
    f.sync_all()
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `2026-12-01T05:25:55Z` from Unix seconds (proleptic Gregorian, UTC).
pub fn utc_from_secs(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// File-name friendly UTC time: `20261201T052555Z`.
pub fn utc_stamp(ms: u64) -> String {
    utc_from_secs((ms / 1000) as i64).replace(['-', ':'], "")
}

// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formatting() {
        assert_eq!(utc_from_secs(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_from_secs(1_796_102_755), "2026-12-01T05:25:55Z");
        assert_eq!(utc_stamp(1_796_102_755_000), "20261201T052555Z");
    }

    #[test]
    fn writes_header_and_lines() {
        let dir = std::env::temp_dir().join(format!("sb-rec-{}", std::process::id()));
        let path = dir.join("r.jsonl");
        let mut r = Recorder::create(
            &path,
            switchboard_core::BackendKind::Claude,
            &["claude".into()],
            "/w",
        )
        .unwrap();
        r.record(Dir::Out, "{\"a\":1}").unwrap();
        r.record(Dir::In, "not json").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o600, "a recording is private");
            assert_eq!(mode(&dir), 0o700, "in a private directory");
        }
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["switchboard_recording"], 1);
        assert_eq!(lines[1]["dir"], "out");
        assert_eq!(lines[2]["line"], "not json");
        std::fs::remove_dir_all(dir).ok();
    }

    /// The note lands only in a recording, once however often the workspace is resumed, and
    /// never after a torn line.
    #[test]
    fn a_host_stopped_note_goes_once_into_a_recording_only() {
        let dir = std::env::temp_dir().join(format!("sb-rec-stop-{}", std::process::id()));
        let path = dir.join("r.jsonl");
        let mut r = Recorder::create(
            &path,
            switchboard_core::BackendKind::Claude,
            &["claude".into()],
            "/w",
        )
        .unwrap();
        r.record(Dir::In, "{\"a\":1}").unwrap();
        drop(r);
        append_host_stopped(&path, 5, 9).unwrap();
        append_host_stopped(&path, 7, 12).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let notes: Vec<_> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| parse_host_stopped(v["line"].as_str()?))
            .collect();
        assert_eq!(notes, vec![(5, 9)], "{text}");
        // Not a recording (a config file a manifest could name): untouched.
        let other = dir.join("config.toml");
        std::fs::write(&other, "a = 1\n").unwrap();
        assert!(append_host_stopped(&other, 5, 9).is_err());
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "a = 1\n");
        // A torn last line: refused.
        let mut f = crate::paths::open_private_append(&path).unwrap();
        f.write_all(b"{\"ts\":1,\"dir\":\"in\",\"li").unwrap();
        assert!(append_host_stopped(&path, 8, 13).is_err());
        std::fs::remove_dir_all(dir).ok();
    }
}
