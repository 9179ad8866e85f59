//! The receipts journal (reference §5): one append-only JSON Lines file per gateway
//! workspace, 0600, every record fsync'd before the step it guards.
//!
//! An effect is `executing` on disk before it starts and `completed`, with the exact result
//! body, before the result frame is sent; so after any crash a call id is either answered
//! from here byte for byte, or known to be uncertain and never run again. File contents are
//! never stored, only their SHA-256. The token is never handed to this module.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Receipts are kept at least this long after they complete (reference §5.3).
pub const RETENTION_MS: u64 = 24 * 60 * 60 * 1000;

/// Receipts held at most (within the retention): a host that floods ids gets transient
/// refusals, never an unbounded journal. Completing a receipt already held is always allowed.
pub const MAX_RECEIPTS: usize = 250_000;

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

pub struct Journal {
    path: PathBuf,
    file: File,
    entries: HashMap<Key, Entry>,
    /// Lines that could not be read back (a torn last line after a crash).
    pub skipped: usize,
    cap: usize,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("path", &self.path)
            .field("entries", &self.entries.len())
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
        crate::paths::data_dir().join("gateway").join(format!(
            "{}.jsonl",
            &super::validate::sha256_hex(workspace.as_bytes())[..32]
        ))
    }

    /// Open (creating 0600 in a 0700 directory), read every receipt back, and compact away
    /// what retention allows at `now_ms`.
    pub fn open(path: &Path, now_ms: u64) -> io::Result<Journal> {
        let dir = path.parent().unwrap_or(Path::new("."));
        crate::paths::ensure_private_dir(dir)?;
        let existed = path.exists();
        let mut entries = HashMap::new();
        let mut skipped = 0;
        let mut lines = 0usize;
        if existed {
            let f = File::open(path)?;
            for line in BufReader::new(f).split(b'\n') {
                let line = line?;
                if line.is_empty() {
                    continue;
                }
                lines += 1;
                match serde_json::from_slice::<Record>(&line) {
                    // A `sent` mark: the receipt before it reached the socket.
                    Ok(r) if r.state == State::Sent && r.result.is_none() => {
                        match entries.get_mut(&(r.ws, r.session, r.id)) {
                            Some(
                                e @ &mut Entry {
                                    state: State::Completed,
                                    ..
                                },
                            ) => {
                                e.state = State::Sent;
                                e.at = r.at;
                            }
                            _ => skipped += 1,
                        }
                    }
                    Ok(r) => {
                        entries.insert(
                            (r.ws, r.session, r.id),
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
                    Err(_) => skipped += 1,
                }
            }
        }
        let file = crate::paths::create_private_file(path, true)?;
        if !existed {
            sync_dir(dir)?;
        }
        let mut j = Journal {
            path: path.to_path_buf(),
            file,
            entries,
            skipped,
            cap: MAX_RECEIPTS,
        };
        let expired = j.expire(now_ms);
        if expired > 0 || lines > 2 * j.entries.len() + 1024 || skipped > 0 {
            j.compact()?;
        }
        Ok(j)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, key: &Key) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// Executing receipts left by an earlier process: effects that may or may not have
    /// happened, for the owner to inspect and settle.
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

    /// Change the receipt cap (tests).
    pub fn set_cap(&mut self, cap: usize) {
        self.cap = cap;
    }

    fn append(&mut self, key: &Key, entry: Entry) -> io::Result<()> {
        if !self.entries.contains_key(key) && self.entries.len() >= self.cap {
            return Err(io::Error::other(format!(
                "the receipts journal holds {} receipts, its limit; retry later",
                self.entries.len()
            )));
        }
        let r = Record::of(key, &entry);
        let mut line = serde_json::to_vec(&r).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.sync_data()?;
        self.entries.insert(key.clone(), entry);
        Ok(())
    }

    /// Step 11a: the effect is about to start (fsync'd before this returns).
    pub fn executing(
        &mut self,
        key: &Key,
        hash: &str,
        tool: &str,
        effect: Value,
    ) -> io::Result<()> {
        self.append(
            key,
            Entry {
                state: State::Executing,
                hash: hash.to_string(),
                tool: tool.to_string(),
                effect,
                result: None,
                at: crate::record::now_ms(),
                live: true,
            },
        )
    }

    /// A question shown to the owner.
    pub fn asked(&mut self, key: &Key, hash: &str, effect: Value) -> io::Result<()> {
        self.append(
            key,
            Entry {
                state: State::Asked,
                hash: hash.to_string(),
                tool: "workspace_ask".to_string(),
                effect,
                result: None,
                at: crate::record::now_ms(),
                live: true,
            },
        )
    }

    /// Final answer for the id: stored before it is sent.
    pub fn completed(
        &mut self,
        key: &Key,
        hash: &str,
        tool: &str,
        effect: Value,
        result: &str,
    ) -> io::Result<()> {
        self.append(
            key,
            Entry {
                state: State::Completed,
                hash: hash.to_string(),
                tool: tool.to_string(),
                effect,
                result: Some(result.to_string()),
                at: crate::record::now_ms(),
                live: false,
            },
        )
    }

    /// The result of a completed receipt was handed to the socket: a restart knows the peer
    /// may have it. One short line (no result), fsync'd; a receipt already marked (a re-send
    /// answered from here) is not marked again, so re-sends never grow the journal.
    pub fn sent(&mut self, key: &Key) -> io::Result<bool> {
        let Some(e) = self.entries.get(key) else {
            return Ok(false);
        };
        if e.state != State::Completed {
            return Ok(false);
        }
        let at = crate::record::now_ms();
        let r = Record {
            ws: key.0.clone(),
            session: key.1.clone(),
            id: key.2.clone(),
            state: State::Sent,
            hash: e.hash.clone(),
            tool: e.tool.clone(),
            effect: Value::Null,
            result: None,
            at,
        };
        let mut line = serde_json::to_vec(&r).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.sync_data()?;
        if let Some(e) = self.entries.get_mut(key) {
            e.state = State::Sent;
            e.at = at;
        }
        Ok(true)
    }

    /// A completed receipt without the fsync: only for building large journals in the
    /// benchmark (every real receipt goes through `completed`).
    #[doc(hidden)]
    pub fn completed_unsynced_for_bench(
        &mut self,
        key: &Key,
        hash: &str,
        tool: &str,
        effect: Value,
        result: &str,
    ) -> io::Result<()> {
        let r = Record {
            ws: key.0.clone(),
            session: key.1.clone(),
            id: key.2.clone(),
            state: State::Completed,
            hash: hash.to_string(),
            tool: tool.to_string(),
            effect,
            result: Some(result.to_string()),
            at: crate::record::now_ms(),
        };
        let mut line = serde_json::to_vec(&r).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)
    }

    /// Drop completed receipts older than the retention. Executing ones stay until settled.
    fn expire(&mut self, now_ms: u64) -> usize {
        let before = self.entries.len();
        self.entries.retain(|_, e| {
            e.state == State::Executing || now_ms.saturating_sub(e.at) < RETENTION_MS
        });
        before - self.entries.len()
    }

    /// Rewrite the journal as one line per receipt: a temporary file in the same directory,
    /// fsync'd, renamed over the journal, the directory fsync'd.
    pub fn compact(&mut self) -> io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let tmp = self
            .path
            .with_extension(format!("jsonl.{}.tmp", std::process::id()));
        let mut keys: Vec<&Key> = self.entries.keys().collect();
        keys.sort_by_key(|k| self.entries[*k].at);
        {
            let mut out = io::BufWriter::new(crate::paths::create_private_file(&tmp, false)?);
            for k in keys {
                let r = Record::of(k, &self.entries[k]);
                serde_json::to_writer(&mut out, &r).map_err(io::Error::other)?;
                out.write_all(b"\n")?;
            }
            let f = out.into_inner().map_err(|e| e.into_error())?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, &self.path)?;
        sync_dir(&dir)?;
        self.file = crate::paths::create_private_file(&self.path, true)?;
        self.skipped = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sb-journal-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d.join("j.jsonl")
    }

    fn key(id: &str) -> Key {
        ("w".into(), "s".into(), id.into())
    }

    #[test]
    fn completed_results_come_back_byte_for_byte_after_reopen() {
        let p = scratch("reopen");
        let mut j = Journal::open(&p, crate::record::now_ms()).unwrap();
        j.executing(
            &key("1"),
            "h",
            "workspace_write",
            serde_json::json!({"path": "a"}),
        )
        .unwrap();
        j.completed(
            &key("1"),
            "h",
            "workspace_write",
            Value::Null,
            "{\"x\": 1 }",
        )
        .unwrap();
        j.executing(
            &key("2"),
            "h2",
            "workspace_exec",
            serde_json::json!({"commandId": "c"}),
        )
        .unwrap();
        assert!(j.uncertain().is_empty(), "live effects are not uncertain");
        drop(j);
        let j = Journal::open(&p, crate::record::now_ms()).unwrap();
        let e = j.get(&key("1")).unwrap();
        assert_eq!(e.state, State::Completed);
        assert_eq!(e.result.as_deref(), Some("{\"x\": 1 }"));
        let u = j.uncertain();
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].0, key("2"));
        assert_eq!(u[0].1.effect["commandId"], "c");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dmode = std::fs::metadata(p.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dmode, 0o700);
    }

    #[test]
    fn a_sent_mark_survives_a_restart_and_a_compaction_and_keeps_the_result() {
        let p = scratch("sent");
        let mut j = Journal::open(&p, crate::record::now_ms()).unwrap();
        j.completed(&key("1"), "h", "workspace_write", Value::Null, "{\"r\":1}")
            .unwrap();
        j.completed(&key("2"), "h", "workspace_write", Value::Null, "{\"r\":2}")
            .unwrap();
        j.executing(&key("3"), "h", "workspace_exec", Value::Null)
            .unwrap();
        assert!(j.sent(&key("1")).unwrap());
        assert!(!j.sent(&key("1")).unwrap(), "marked once");
        assert!(
            !j.sent(&key("3")).unwrap(),
            "only a completed receipt is sent"
        );
        assert!(!j.sent(&key("9")).unwrap());
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.matches("\"state\":\"sent\"").count(), 1, "{text}");
        drop(j);
        let mut j = Journal::open(&p, crate::record::now_ms()).unwrap();
        assert_eq!(j.skipped, 0);
        let e = j.get(&key("1")).unwrap();
        assert_eq!(e.state, State::Sent);
        assert_eq!(e.result.as_deref(), Some("{\"r\":1}"));
        assert_eq!(
            j.get(&key("2")).unwrap().state,
            State::Completed,
            "not sent"
        );
        j.compact().unwrap();
        drop(j);
        let j = Journal::open(&p, crate::record::now_ms()).unwrap();
        let e = j.get(&key("1")).unwrap();
        assert_eq!(
            (e.state, e.result.as_deref()),
            (State::Sent, Some("{\"r\":1}"))
        );
        assert_eq!(j.get(&key("2")).unwrap().state, State::Completed);
    }

    #[test]
    fn a_full_journal_refuses_new_receipts_but_completes_held_ones() {
        let p = scratch("cap");
        let mut j = Journal::open(&p, crate::record::now_ms()).unwrap();
        j.set_cap(2);
        j.executing(&key("1"), "h", "t", Value::Null).unwrap();
        j.completed(&key("2"), "h", "t", Value::Null, "{}").unwrap();
        assert!(j.executing(&key("3"), "h", "t", Value::Null).is_err());
        assert!(j.get(&key("3")).is_none());
        j.completed(&key("1"), "h", "t", Value::Null, "{}").unwrap();
    }

    #[test]
    fn torn_last_line_is_skipped_and_compacted_away() {
        let p = scratch("torn");
        let mut j = Journal::open(&p, crate::record::now_ms()).unwrap();
        j.completed(&key("1"), "h", "t", Value::Null, "{}").unwrap();
        drop(j);
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"ws\":\"w\",\"sess").unwrap();
        drop(f);
        let j = Journal::open(&p, crate::record::now_ms()).unwrap();
        assert_eq!(j.len(), 1);
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().count(), 1);
    }

    #[test]
    fn retention_drops_old_completed_receipts_but_never_uncertain_ones() {
        let p = scratch("retain");
        let mut j = Journal::open(&p, crate::record::now_ms()).unwrap();
        j.completed(&key("old"), "h", "t", Value::Null, "{}")
            .unwrap();
        j.executing(&key("unsure"), "h", "t", Value::Null).unwrap();
        drop(j);
        let later = crate::record::now_ms() + RETENTION_MS + 1;
        let j = Journal::open(&p, later).unwrap();
        assert!(j.get(&key("old")).is_none());
        assert!(j.get(&key("unsure")).is_some());
        let j = Journal::open(&p, crate::record::now_ms()).unwrap();
        assert!(j.get(&key("old")).is_none(), "compaction rewrote the file");
    }
}
