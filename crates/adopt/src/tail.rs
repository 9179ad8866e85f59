//! Following a transcript file as the CLI appends to it. The path comes from the session's
//! hook events, so it is hostile: it is read only when it lies beneath a directory the CLIs
//! keep transcripts in (`Roots`: `~/.claude/projects`, `$CODEX_HOME/sessions`, …), opened
//! beneath that directory's handle (no link or `..` leads out), and only when it is a regular
//! file of ours (a FIFO, a device or another user's file is refused, never waited on) of a
//! sane size. Reads are bounded per turn and per line; what cannot be read is said once, as
//! a row, and costs nothing else.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncSeekExt};
use tokio::sync::mpsc;

use super::mapping::TailKey;

/// Between two looks at a file that had nothing new.
pub const POLL: Duration = Duration::from_millis(200);
/// A transcript not there this long after its session named it is said on screen.
pub const NOT_YET: Duration = Duration::from_secs(30);
/// How often one that is late is looked for.
pub const LATE_POLL: Duration = Duration::from_secs(2);
/// A transcript larger than this when first opened is refused, and one that grows past it is
/// no longer followed.
pub const MAX_FILE: u64 = 256 << 20;
/// Of a large transcript, only the end is read (the rest said so).
pub const START_WINDOW: u64 = 16 << 20;
/// Read at most this much per turn, so a fast-growing file shares the runtime.
const CHUNK: usize = 1 << 20;
/// A line longer than this is skipped (said so).
pub const MAX_LINE: usize = 8 << 20;
/// A file whose first lines are all not JSON objects is not a transcript.
const GARBAGE_LINES: usize = 50;

/// What a follower says.
#[derive(Debug, PartialEq)]
pub enum TailMsg {
    /// One line, without its newline (invalid UTF-8 replaced).
    Line(String),
    /// Something worth a row (a skipped part, a file truncated).
    Note(String),
    /// The file is not followed (any more): why.
    Refused(String),
}

/// The directories the CLIs keep transcripts in: the only places a transcript is read from.
#[derive(Clone, Debug, Default)]
pub struct Roots {
    dirs: Vec<PathBuf>,
}

impl Roots {
    pub fn new(dirs: Vec<PathBuf>) -> Roots {
        Roots { dirs }
    }

    /// Claude's and Codex's own places, as this process's environment names them, and
    /// `extra` (config.toml `[hooks] transcript_dirs`).
    pub fn standard(extra: &[PathBuf]) -> Roots {
        let env = |k: &str| {
            std::env::var_os(k)
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        let home = env("HOME");
        let mut dirs = Vec::new();
        match env("CLAUDE_CONFIG_DIR") {
            Some(c) => dirs.push(c.join("projects")),
            None => dirs.extend(home.as_ref().map(|h| h.join(".claude/projects"))),
        }
        match env("CODEX_HOME") {
            Some(c) => dirs.push(c.join("sessions")),
            None => dirs.extend(home.as_ref().map(|h| h.join(".codex/sessions"))),
        }
        dirs.extend(extra.iter().filter(|p| p.is_absolute()).cloned());
        Roots { dirs }
    }

    /// The root `path` lies beneath, and the rest of it; or why it is not read.
    fn locate(&self, path: &str) -> Result<(PathBuf, PathBuf), String> {
        let p = Path::new(path);
        if !p.is_absolute()
            || p.components()
                .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
        {
            return Err("not a plain absolute path".into());
        }
        if p.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            return Err("not a .jsonl file".into());
        }
        for d in &self.dirs {
            // As configured, and where it really is (a home behind a link).
            let real = std::fs::canonicalize(d).ok();
            for base in std::iter::once(d.clone()).chain(real) {
                if let Ok(rest) = p.strip_prefix(&base)
                    && !rest.as_os_str().is_empty()
                {
                    return Ok((base, rest.to_path_buf()));
                }
            }
        }
        Err(format!(
            "not beneath a transcript directory ({}); add its directory to [hooks] \
             transcript_dirs in config.toml to follow it",
            self.dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

    /// Open `path` for reading, beneath its root, if it is a regular file of ours no larger
    /// than `MAX_FILE`: the file and its size. `Ok(None)`: not there (yet).
    pub fn open(&self, path: &str) -> Result<Option<(std::fs::File, u64)>, String> {
        let (base, rel) = self.locate(path)?;
        let root = match cap_std::fs::Dir::open_ambient_dir(&base, cap_std::ambient_authority()) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", base.display())),
        };
        let mut o = cap_std::fs::OpenOptions::new();
        o.read(true);
        // Never block on a FIFO or take a terminal; a link as the last part is refused.
        cap_std::fs::OpenOptionsExt::custom_flags(
            &mut o,
            libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW,
        );
        let file = match root.open_with(&rel, &o) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot open it beneath {}: {e}", base.display())),
        };
        let file = file.into_std();
        let m = file.metadata().map_err(|e| e.to_string())?;
        use std::os::unix::fs::MetadataExt;
        if !m.is_file() {
            return Err("not a regular file".into());
        }
        // SAFETY: getuid cannot fail.
        let ours = unsafe { libc::getuid() };
        if m.uid() != ours {
            return Err(format!("owned by uid {}, not ours ({ours})", m.uid()));
        }
        if m.len() > MAX_FILE {
            return Err(format!(
                "{} MiB: larger than a transcript is read ({} MiB)",
                m.len() >> 20,
                MAX_FILE >> 20
            ));
        }
        Ok(Some((file, m.len())))
    }
}

/// Follow `path` until `tx` closes: every new complete line is sent, in order. Waits for the
/// file to appear (a transcript is created with its first message, a sub-agent's as it
/// starts).
pub async fn follow(
    roots: Arc<Roots>,
    path: String,
    key: TailKey,
    tx: mpsc::Sender<(TailKey, TailMsg)>,
) {
    let say = |m: TailMsg| {
        let tx = tx.clone();
        let key = key.clone();
        async move { tx.send((key, m)).await.is_ok() }
    };
    // Opening it: now, or once it appears. One that has not appeared after `NOT_YET` is said
    // on screen (its messages are missing from the transcript until it does) and then looked
    // for less often; its appearance is said too.
    let asked = tokio::time::Instant::now();
    let mut told = false;
    let (file, size) = loop {
        if tx.is_closed() {
            return;
        }
        match roots.open(&path) {
            Ok(Some(f)) => break f,
            Ok(None) => {
                if !told && asked.elapsed() >= NOT_YET {
                    told = true;
                    if !say(TailMsg::Note(format!(
                        "the transcript has not appeared after {} s: its messages show here \
                         once it does",
                        NOT_YET.as_secs()
                    )))
                    .await
                    {
                        return;
                    }
                }
                tokio::time::sleep(if told { LATE_POLL } else { POLL * 2 }).await;
            }
            Err(why) => {
                say(TailMsg::Refused(why)).await;
                return;
            }
        }
    };
    if told && !say(TailMsg::Note("the transcript appeared".into())).await {
        return;
    }
    let mut file = tokio::fs::File::from_std(file);
    let mut offset = 0u64;
    let mut skipping = false;
    if size > START_WINDOW {
        offset = size - START_WINDOW;
        skipping = true;
        if !say(TailMsg::Note(format!(
            "the transcript is {} MiB: its first {} MiB are not shown",
            size >> 20,
            offset >> 20
        )))
        .await
        {
            return;
        }
    }
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; CHUNK];
    let mut garbage = 0usize;
    let mut seen_json = false;
    loop {
        if tx.is_closed() {
            return;
        }
        let len = match file.metadata().await {
            Ok(m) => m.len(),
            Err(e) => {
                say(TailMsg::Refused(format!("cannot read it any more: {e}"))).await;
                return;
            }
        };
        if len > MAX_FILE {
            say(TailMsg::Refused(format!(
                "it grew past {} MiB: no longer followed",
                MAX_FILE >> 20
            )))
            .await;
            return;
        }
        if len < offset {
            // Rewritten shorter: read it again from the start (rows are keyed, so lines read
            // twice replace their rows).
            offset = 0;
            buf.clear();
            skipping = false;
            if !say(TailMsg::Note(
                "the transcript was truncated: read again from its start".into(),
            ))
            .await
            {
                return;
            }
        }
        if len == offset {
            tokio::time::sleep(POLL).await;
            continue;
        }
        if file.seek(std::io::SeekFrom::Start(offset)).await.is_err() {
            tokio::time::sleep(POLL).await;
            continue;
        }
        let want = ((len - offset) as usize).min(CHUNK);
        let n = match file.read(&mut chunk[..want]).await {
            Ok(0) => {
                tokio::time::sleep(POLL).await;
                continue;
            }
            Ok(n) => n,
            Err(e) => {
                say(TailMsg::Refused(format!("cannot read it any more: {e}"))).await;
                return;
            }
        };
        offset += n as u64;
        let mut rest = &chunk[..n];
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            let (head, tail) = rest.split_at(nl);
            rest = &tail[1..];
            if skipping {
                // The cut of the start window, or the rest of a line too long to keep.
                skipping = false;
                buf.clear();
                continue;
            }
            if buf.len() + head.len() > MAX_LINE {
                buf.clear();
                if !say(TailMsg::Note(format!(
                    "a transcript line longer than {} MiB was skipped",
                    MAX_LINE >> 20
                )))
                .await
                {
                    return;
                }
                continue;
            }
            buf.extend_from_slice(head);
            let line = String::from_utf8_lossy(&buf).into_owned();
            buf.clear();
            if line.trim().is_empty() {
                continue;
            }
            if line.trim_start().starts_with('{') {
                seen_json = true;
            } else if !seen_json {
                garbage += 1;
                if garbage >= GARBAGE_LINES {
                    say(TailMsg::Refused(format!(
                        "its first {GARBAGE_LINES} lines are not JSON: not a transcript"
                    )))
                    .await;
                    return;
                }
            }
            if !say(TailMsg::Line(line)).await {
                return;
            }
        }
        if !skipping {
            buf.extend_from_slice(rest);
            if buf.len() > MAX_LINE {
                buf.clear();
                skipping = true;
                if !say(TailMsg::Note(format!(
                    "a transcript line longer than {} MiB was skipped",
                    MAX_LINE >> 20
                )))
                .await
                {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "tail_tests.rs"]
mod tests;
