//! The receipts journal (reference §5): one append-only JSON Lines file per gateway
//! workspace, 0600, every effect record fsync'd before the step it guards.
//!
//! An effect is `executing` on disk before it starts and `completed`, with the exact result
//! body, before the result frame is sent; so after any crash a call id is either answered
//! from here byte for byte, or known to be uncertain and never run again. File contents are
//! never stored, only their SHA-256. The token is never handed to this module.
//!
//! Two tables share the file, each with its own budget (issue 21 items 4 and 6):
//! - **receipts**: effects, questions and the owner's decisions. Only calls that ran or that
//!   a person answered are here, so a host cannot fill this budget with calls that never ran.
//! - **seen ids**: every other call id (reads and pre-execution refusals) with its arguments'
//!   digest, and a refusal's exact body, so an id is never reused for other arguments and a
//!   refused id is refused the same way again. Bounded: with the table full, calls without
//!   an effect get the transient `busy` until ids expire (none is forgotten early: it could
//!   then get a second, different answer). Written without fsync: they survive a crash of
//!   switchboard (the page cache), and reach the disk with the next effect's fsync; a power
//!   loss may forget the newest of them, never a receipt.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::journal_file::{Appender, Wrap, lock, salvage};

/// Receipts are kept at least this long after they complete (reference §5.3).
pub const RETENTION_MS: u64 = 24 * 60 * 60 * 1000;

/// Receipts held at most (within the retention). Only calls that ran or that the owner
/// answered take room here; completing a receipt already held is always allowed.
pub const MAX_RECEIPTS: usize = 250_000;

/// Ids of calls without an effect remembered at most within the retention; past this, such
/// calls are answered `busy` until the oldest ids expire.
pub const MAX_SEEN: usize = 250_000;

/// A refusal body longer than this is not kept with its seen id (refusals are short; a
/// hostile path echoed in one is clipped at 200 characters already).
const SEEN_BODY_MAX: usize = 4096;

/// `(workspaceId, sessionId, id)`.
pub type Key = (String, String, String);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// The effect may have started.
    Executing,
    /// A `workspace_ask` question shown to the owner (no effect; re-asked after a restart).
    Asked,
    /// Final: `result` is the exact body that was (or will be) sent.
    Completed,
    /// Completed, and its result frame was handed to the socket: the peer may have it
    /// (informational, reference §5.1; answered from `result` like `Completed`). On disk a
    /// `sent` line carries no result: it marks the completed receipt before it.
    Sent,
    /// On disk only: a seen id (a read, or a refusal with its body), not a receipt.
    Seen,
}

impl State {
    /// Final: the id is answered from the stored result.
    pub fn is_final(self) -> bool {
        matches!(self, State::Completed | State::Sent)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    ws: String,
    session: String,
    id: String,
    state: State,
    hash: String,
    tool: String,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    effect: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<String>,
    at: u64,
}

impl Record {
    /// The line that stores `entry` under `key`.
    fn of(key: &Key, entry: &Entry) -> Record {
        Record {
            ws: key.0.clone(),
            session: key.1.clone(),
            id: key.2.clone(),
            state: entry.state,
            hash: entry.hash.clone(),
            tool: entry.tool.clone(),
            effect: entry.effect.clone(),
            result: entry.result.clone(),
            at: entry.at,
        }
    }

    fn of_seen(key: &Key, s: &Seen) -> Record {
        Record {
            ws: key.0.clone(),
            session: key.1.clone(),
            id: key.2.clone(),
            state: State::Seen,
            hash: s.hash.clone(),
            tool: s.tool.clone(),
            effect: Value::Null,
            result: s.refusal.clone(),
            at: s.at,
        }
    }

    fn line(&self) -> io::Result<Vec<u8>> {
        let mut line = serde_json::to_vec(self).map_err(io::Error::other)?;
        line.push(b'\n');
        Ok(line)
    }
}

/// What the journal knows about one call id.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub state: State,
    pub hash: String,
    pub tool: String,
    /// What reconciling needs: path, expected and new SHA, command id and text.
    pub effect: Value,
    pub result: Option<String>,
    pub at: u64,
    /// `executing` written by this process (its effect is running here now). An executing
    /// entry read back from disk is not live: its effect is uncertain.
    pub live: bool,
}

/// A call id without an effect: its arguments' digest, and the refusal it got if it was
/// refused (a read is run again on a re-send; it has no effect).
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub hash: String,
    pub tool: String,
    pub refusal: Option<String>,
    pub at: u64,
}

pub struct Journal {
    path: PathBuf,
    /// Held for the journal's life: one process at a time writes it (a second one's rollback
    /// would cut the first one's receipts, and their tables would disagree).
    _lock: File,
    out: Appender,
    wrap: Option<Wrap>,
    entries: HashMap<Key, Entry>,
    seen: HashMap<Key, Seen>,
    /// Seen ids, oldest first (for forgetting past the cap).
    seen_order: VecDeque<Key>,
    /// Lines that could not be read back at open (torn bytes; merged lines are salvaged).
    pub skipped: usize,
    /// Lines in the file now (for compacting when most of them are superseded).
    lines: usize,
    cap: usize,
    seen_cap: usize,
    /// A compaction renamed the new file in but could not open it: appends would go to the
    /// old, unlinked file and be lost, so nothing is appended until it is reopened.
    stale: Option<String>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("path", &self.path)
            .field("entries", &self.entries.len())
            .field("seen", &self.seen.len())
            .finish()
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

impl Journal {
    /// Where the journal of `workspace` lives: `<data dir>/gateway/<sha256 of the id>.jsonl`
    /// (the id is B's string: hashed, it can never name another path).
    pub fn default_path(workspace: &str) -> PathBuf {
        switchboard_record::paths::data_dir()
            .join("gateway")
            .join(format!(
                "{}.jsonl",
                &super::validate::sha256_hex(workspace.as_bytes())[..32]
            ))
    }

    /// Open (creating 0600 in a 0700 directory), read every receipt back, repair a torn
    /// tail, and compact away what retention allows at `now_ms`.
    pub fn open(path: &Path, now_ms: u64) -> io::Result<Journal> {
        Journal::open_with(path, now_ms, None)
    }

    /// `open`, with the file wrapped by `wrap` (the tests' fault injection).
    pub fn open_with(path: &Path, now_ms: u64, wrap: Option<Wrap>) -> io::Result<Journal> {
        let dir = path.parent().unwrap_or(Path::new("."));
        switchboard_record::paths::ensure_private_dir(dir)?;
        let lock = lock(path)?;
        let existed = path.exists();
        let file = switchboard_record::paths::create_private_file(path, true)?;
        let sink = match &wrap {
            Some(w) => w(file),
            None => Box::new(file),
        };
        let mut j = Journal {
            path: path.to_path_buf(),
            _lock: lock,
            out: Appender::new(sink, 0),
            wrap,
            entries: HashMap::new(),
            seen: HashMap::new(),
            seen_order: VecDeque::new(),
            skipped: 0,
            lines: 0,
            cap: MAX_RECEIPTS,
            seen_cap: MAX_SEEN,
            stale: None,
        };
        let mut whole = true;
        if existed {
            whole = j.load(now_ms)?;
        } else {
            sync_dir(dir)?;
        }
        let expired = j.expire(now_ms);
        let live = j.entries.len() + j.seen.len();
        if !whole || expired > 0 || j.skipped > 0 || j.lines > 2 * live + 1024 {
            // Also the repair of a torn tail: the rewrite holds every complete record.
            j.compact()?;
        } else {
            j.out = Appender::new(j.reopen()?, std::fs::metadata(path)?.len());
        }
        Ok(j)
    }

    /// Read the file's records; false when it does not end at a complete line.
    fn load(&mut self, now_ms: u64) -> io::Result<bool> {
        let f = File::open(&self.path)?;
        let mut whole = true;
        for line in BufReader::new(f).split(b'\n') {
            let line = line?;
            if line.is_empty() {
                continue;
            }
            self.lines += 1;
            let rec = serde_json::from_slice::<Record>(&line)
                .ok()
                .or_else(|| salvage(&line));
            match rec {
                Some(r) => self.load_record(r, now_ms),
                None => self.skipped += 1,
            }
        }
        let len = std::fs::metadata(&self.path)?.len();
        if len > 0 {
            let mut f = File::open(&self.path)?;
            use std::io::{Read, Seek, SeekFrom};
            f.seek(SeekFrom::Start(len - 1))?;
            let mut last = [0u8];
            f.read_exact(&mut last)?;
            whole = last[0] == b'\n';
        }
        Ok(whole)
    }

    fn load_record(&mut self, r: Record, now_ms: u64) {
        let key = (r.ws, r.session, r.id);
        match r.state {
            // A `sent` mark: the receipt before it reached the socket.
            State::Sent if r.result.is_none() => match self.entries.get_mut(&key) {
                Some(
                    e @ &mut Entry {
                        state: State::Completed,
                        ..
                    },
                ) => {
                    e.state = State::Sent;
                    e.at = r.at;
                }
                _ => self.skipped += 1,
            },
            State::Seen => {
                if now_ms.saturating_sub(r.at) < RETENTION_MS {
                    self.insert_seen(
                        key,
                        Seen {
                            hash: r.hash,
                            tool: r.tool,
                            refusal: r.result,
                            at: r.at,
                        },
                    );
                }
            }
            _ => {
                self.entries.insert(
                    key,
                    Entry {
                        state: r.state,
                        hash: r.hash,
                        tool: r.tool,
                        effect: r.effect,
                        result: r.result,
                        at: r.at,
                        live: false,
                    },
                );
            }
        }
    }

    fn reopen(&self) -> io::Result<Box<dyn super::journal_file::Sink>> {
        let file = switchboard_record::paths::create_private_file(&self.path, true)?;
        Ok(match &self.wrap {
            Some(w) => w(file),
            None => Box::new(file),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Receipts held (seen ids aside).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Seen ids held.
    pub fn seen_len(&self) -> usize {
        self.seen.len()
    }

    pub fn get(&self, key: &Key) -> Option<&Entry> {
        self.entries.get(key)
    }

    pub fn seen(&self, key: &Key) -> Option<&Seen> {
        self.seen.get(key)
    }

    /// Why the journal cannot be written now (its last append failed and was rolled back).
    pub fn unavailable(&self) -> Option<&str> {
        self.stale.as_deref().or(self.out.broken())
    }

    /// Open the file a compaction renamed in, if that is still owed.
    fn reopen_if_stale(&mut self) -> io::Result<()> {
        if self.stale.is_none() {
            return Ok(());
        }
        let len = std::fs::metadata(&self.path)?.len();
        self.out = Appender::new(self.reopen()?, len);
        self.stale = None;
        Ok(())
    }

    /// Executing receipts left by an earlier process, or whose `completed` receipt could not
    /// be written: effects that may or may not have happened, for the owner to settle.
    pub fn uncertain(&self) -> Vec<(Key, Entry)> {
        let mut v: Vec<(Key, Entry)> = self
            .entries
            .iter()
            .filter(|(_, e)| e.state == State::Executing && !e.live)
            .map(|(k, e)| (k.clone(), e.clone()))
            .collect();
        v.sort_by(|a, b| a.1.at.cmp(&b.1.at).then(a.0.cmp(&b.0)));
        v
    }

    /// The effect of a live `executing` receipt ended but its `completed` receipt could not
    /// be written: from now on the id is uncertain, here as after a restart.
    pub fn mark_uncertain(&mut self, key: &Key) {
        if let Some(e) = self.entries.get_mut(key) {
            e.live = false;
        }
    }

    /// Change the receipt cap (tests).
    pub fn set_cap(&mut self, cap: usize) {
        self.cap = cap;
    }

    /// Change the seen-id cap (tests).
    pub fn set_seen_cap(&mut self, cap: usize) {
        self.seen_cap = cap;
    }

    fn write(&mut self, line: &[u8], sync: bool) -> io::Result<()> {
        self.reopen_if_stale()?;
        self.out.line(line, sync)?;
        self.lines += 1;
        let live = self.entries.len() + self.seen.len();
        if self.lines > 4 * live + 100_000 {
            // Most lines are superseded (a flood of seen ids past the cap): rewrite. A failed
            // compaction leaves the old file, which still holds every record.
            if let Err(e) = self.compact() {
                tracing::warn!(target: "gateway", "journal compaction failed: {e}");
            }
        }
        Ok(())
    }

    fn append(&mut self, key: &Key, entry: Entry) -> io::Result<()> {
        if !self.entries.contains_key(key) && self.entries.len() >= self.cap {
            return Err(io::Error::other(format!(
                "the receipts journal holds {} receipts, its limit; retry later",
                self.entries.len()
            )));
        }
        let line = Record::of(key, &entry).line()?;
        self.write(&line, true)?;
        self.entries.insert(key.clone(), entry);
        Ok(())
    }

    fn insert_seen(&mut self, key: Key, s: Seen) {
        if self.seen.insert(key.clone(), s).is_none() {
            self.seen_order.push_back(key);
        }
    }

    /// Drop completed receipts older than the retention. Executing ones stay until settled.
    fn expire(&mut self, now_ms: u64) -> usize {
        let before = self.entries.len();
        self.entries.retain(|_, e| {
            e.state == State::Executing || now_ms.saturating_sub(e.at) < RETENTION_MS
        });
        before - self.entries.len()
    }

    /// Rewrite the journal as one line per receipt and seen id: a temporary file in the same
    /// directory, fsync'd, renamed over the journal, the directory fsync'd.
    pub fn compact(&mut self) -> io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let tmp = self
            .path
            .with_extension(format!("jsonl.{}.tmp", std::process::id()));
        let mut keys: Vec<&Key> = self.entries.keys().collect();
        keys.sort_by_key(|k| self.entries[*k].at);
        let mut lines = 0;
        {
            let mut out =
                io::BufWriter::new(switchboard_record::paths::create_private_file(&tmp, false)?);
            for k in keys {
                serde_json::to_writer(&mut out, &Record::of(k, &self.entries[k]))
                    .map_err(io::Error::other)?;
                out.write_all(b"\n")?;
                lines += 1;
            }
            for k in &self.seen_order {
                if let Some(s) = self.seen.get(k) {
                    serde_json::to_writer(&mut out, &Record::of_seen(k, s))
                        .map_err(io::Error::other)?;
                    out.write_all(b"\n")?;
                    lines += 1;
                }
            }
            let f = out.into_inner().map_err(|e| e.into_error())?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, &self.path)?;
        // From here the file we append to is unlinked: until the new one is open, nothing
        // may be appended (it would be lost), and the journal says it is unavailable.
        self.stale = Some("the compacted journal could not be reopened".into());
        self.lines = lines;
        self.skipped = 0;
        sync_dir(&dir)?;
        self.reopen_if_stale()
    }
}

#[path = "journal_steps.rs"]
mod steps;

#[cfg(test)]
#[path = "journal_tests.rs"]
mod tests;
