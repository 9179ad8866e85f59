//! The workspace manifest: one JSON document (schema `schema/manifest.schema.json`) that lists a
//! workspace's sessions, the recording each one writes, and every decision taken on a gate across
//! sessions in the order they were taken. The recordings hold the traffic; the manifest holds the
//! order across them, so a workspace can be validated and replayed as a whole.
//!
//! The writer rewrites the whole document on every change into a private temp file next to it and
//! renames that over the manifest: a reader (or a crash) only ever sees a whole document. Each
//! element of `sessions` and `decisions` is written on its own line, so findings about the
//! document can name a line.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::core::gate::Decision;

pub mod lock;
mod read;
mod resume;
mod sink;

pub use read::{
    element_lines, is_manifest, is_manifest_text, line_of_pointer, load_manifest, parse, read_text,
};
pub use sink::{MANIFEST_WRITE_EVERY, ManifestSink};

/// The format version (`switchboard_workspace`).
pub const VERSION: u64 = 1;

/// Decisions listed before the list stops (later ones are only counted): every change rewrites
/// the whole document, so its size must stay small even when rules answer thousands of gates.
pub const MAX_LISTED_DECISIONS: usize = 10_000;
/// Session rules kept per session (`SessionEntry::rules`), and the longest tool name and
/// pattern kept (the schema's bounds: 256 of the longest stay well under the manifest's).
pub const MAX_SESSION_RULES: usize = 256;
pub const MAX_RULE_TOOL_CHARS: usize = 4096;
pub const MAX_RULE_PATTERN_CHARS: usize = 65_536;

/// Largest manifest read back (a full list is about 1.5 MB).
pub const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// Who took a decision (the schema's `by`).
pub const BY: [&str; 7] = [
    "human", "batch", "rule", "covered", "quit", "close", "backend",
];

/// Longest session name and gate id the schema admits.
const MAX_NAME_CHARS: usize = 256;
const MAX_GATE_ID_CHARS: usize = 512;

/// A whole manifest. Enum-like fields are kept as strings and unknown keys are ignored, so a
/// document that breaks the schema can still be read for the cross-checks of `validate`: the
/// schema is the strict part, and [`load_manifest`] checks it first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub switchboard_workspace: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switchboard_version: Option<String>,
    pub started: String,
    pub started_ms: u64,
    pub sessions: Vec<SessionEntry>,
    pub decisions: Vec<DecisionEntry>,
    pub decisions_total: u64,
    pub decisions_truncated: bool,
    /// The host's name, for a hosted workspace: `resume NAME` finds it by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The config file it was started with (`up --config`); absent: config.toml.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// Rules files added on the command line (`--rules`): `resume` adds them again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    /// When it was stopped cleanly; absent while it runs, or after a crash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_ms: Option<u64>,
    /// Each resume after a crash.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed: Vec<Resumed>,
}

/// One resume after a crash: when the host stopped (the last thing it recorded) and when
/// the workspace came back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Resumed {
    pub stopped_ms: u64,
    pub resumed_ms: u64,
}

/// What a session needs to come back after a crash.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResumeInfo {
    /// Its profile as it was started (`workspace::profile::SessionProfile`, as JSON).
    pub profile: serde_json::Value,
    /// The agent's own session id (Claude's `session_id`, ACP's `sessionId`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session: Option<String>,
    /// ACP: the agent declared `loadSession`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_session: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionEntry {
    pub id: u32,
    pub name: String,
    pub backend: String,
    /// As written; see [`Manifest::recording_path`] for the path to open.
    pub recording: Option<String>,
    pub opened_ms: u64,
    pub closed_ms: Option<u64>,
    pub exit_code: Option<i32>,
    /// Recordings it continued in after each resume, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub continued: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<ResumeInfo>,
    /// Rules the owner made for this session only (`a`, a rule kept without a rules file), in
    /// order, at most [`MAX_SESSION_RULES`]: a resume adds them again. One past the bound is
    /// not kept (a resume then asks more, never less).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<crate::core::rules::RuleSpec>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecisionEntry {
    pub at_ms: u64,
    pub session: u32,
    pub gate_id: String,
    /// One of the schema's kinds, see [`decision_kind`].
    pub decision: String,
    /// One of [`BY`].
    pub by: String,
}

impl Manifest {
    pub fn new(started_ms: u64) -> Manifest {
        Manifest {
            switchboard_workspace: VERSION,
            switchboard_version: Some(env!("CARGO_PKG_VERSION").to_string()),
            started: crate::record::utc_from_secs((started_ms / 1000) as i64),
            started_ms,
            sessions: Vec::new(),
            decisions: Vec::new(),
            decisions_total: 0,
            decisions_truncated: false,
            name: None,
            config: None,
            rules: Vec::new(),
            closed_ms: None,
            resumed: Vec::new(),
        }
    }

    pub fn session(&self, id: u32) -> Option<&SessionEntry> {
        self.sessions.iter().find(|s| s.id == id)
    }

    /// The recording of `session` to open: a relative path is resolved against the directory of
    /// the manifest at `manifest_path`.
    pub fn recording_path(manifest_path: &Path, session: &SessionEntry) -> Option<PathBuf> {
        Some(Manifest::resolve(
            manifest_path,
            session.recording.as_deref()?,
        ))
    }

    /// A recording the manifest names (`recording`, `continued`): relative to the
    /// manifest's directory unless absolute.
    pub fn resolve(manifest_path: &Path, rec: &str) -> PathBuf {
        let rec = Path::new(rec);
        if rec.is_absolute() {
            return rec.to_path_buf();
        }
        manifest_path.parent().unwrap_or(Path::new("")).join(rec)
    }

    /// The document as written: the top-level keys in schema order, one session or decision per
    /// line (so a finding can name the line of an element).
    pub fn to_text(&self) -> String {
        let mut out = String::from("{\n");
        out.push_str(&format!(
            "  \"switchboard_workspace\": {},\n",
            self.switchboard_workspace
        ));
        if let Some(v) = &self.switchboard_version {
            out.push_str(&format!("  \"switchboard_version\": {},\n", j(v)));
        }
        out.push_str(&format!("  \"started\": {},\n", j(&self.started)));
        out.push_str(&format!("  \"started_ms\": {},\n", self.started_ms));
        if let Some(n) = &self.name {
            out.push_str(&format!("  \"name\": {},\n", j(n)));
        }
        if let Some(c) = &self.config {
            out.push_str(&format!("  \"config\": {},\n", j(c)));
        }
        if !self.rules.is_empty() {
            out.push_str(&format!("  \"rules\": {},\n", j(&self.rules)));
        }
        if let Some(c) = self.closed_ms {
            out.push_str(&format!("  \"closed_ms\": {c},\n"));
        }
        if !self.resumed.is_empty() {
            out.push_str(&format!("  \"resumed\": {},\n", j(&self.resumed)));
        }
        out.push_str(&format!(
            "  \"decisions_total\": {},\n",
            self.decisions_total
        ));
        out.push_str(&format!(
            "  \"decisions_truncated\": {},\n",
            self.decisions_truncated
        ));
        list(&mut out, "sessions", self.sessions.iter().map(j), true);
        list(&mut out, "decisions", self.decisions.iter().map(j), false);
        out.push_str("}\n");
        out
    }
}

/// One value as compact JSON. Serialising our own plain structs cannot fail; were it to, the
/// `null` would be caught by the schema on reading.
fn j<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

fn list(out: &mut String, key: &str, items: impl Iterator<Item = String>, comma: bool) {
    out.push_str(&format!("  \"{key}\": ["));
    let mut first = true;
    for item in items {
        out.push_str(if first { "\n    " } else { ",\n    " });
        out.push_str(&item);
        first = false;
    }
    out.push_str(if first { "]" } else { "\n  ]" });
    out.push_str(if comma { ",\n" } else { "\n" });
}

/// The schema's name for a decision: what was decided, without its detail (deny messages,
/// answers and edited input stay in the session's recording).
/// An agent's own session id as the manifest keeps it and a resume passes it on the agent's
/// command line: 1 to 256 of letters, digits, `_`, `.`, `:` and `-`, not starting with `-`
/// or `.` (so it never reads as a flag or a relative path). Claude's, the ACP agents' and
/// Codex's ids (UUIDs, `ses_…`) all are.
pub fn agent_session_ok(id: &str) -> bool {
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-');
    (1..=256).contains(&id.len()) && id.chars().all(ok) && !id.starts_with(['-', '.'])
}

pub fn decision_kind(d: &Decision) -> &'static str {
    match d {
        Decision::Allow { always: true, .. } => "allow_always",
        Decision::Allow {
            updated_input: Some(_),
            ..
        } => "allow_edited",
        Decision::Allow { .. } => "allow",
        Decision::Deny {
            interrupt: true, ..
        } => "deny_interrupt",
        Decision::Deny { .. } => "deny",
        Decision::Answer { .. } => "answer",
        Decision::DialogComplete { .. } => "dialog_complete",
        Decision::DialogCancel => "dialog_cancel",
        Decision::ElicitAccept { .. } => "elicit_accept",
        Decision::ElicitDecline => "elicit_decline",
        Decision::ElicitCancel => "elicit_cancel",
        Decision::Continue => "continue",
        Decision::Block { .. } => "block",
        Decision::Raw { .. } => "raw",
        Decision::Option { allow: true, .. } => "option_allow",
        Decision::Option { allow: false, .. } => "option_reject",
        Decision::Cancelled => "cancelled",
        Decision::OwnTerminal { .. } => "own_terminal",
    }
}

/// Writes a workspace's manifest. Every call rewrites the whole document atomically; errors are
/// returned (the workspace keeps running without its manifest), and the next successful call
/// writes everything recorded so far.
#[derive(Debug)]
pub struct ManifestWriter {
    path: PathBuf,
    doc: Manifest,
    limit: usize,
    /// Changes update the document only; `flush` writes it (the sink's writer thread).
    deferred: bool,
    /// App session id → manifest session id where they differ: a resumed workspace's sessions
    /// keep their manifest ids, and sessions opened after take the next free ones.
    ids: Vec<(u32, u32)>,
    /// App sessions that continue a manifest session of a resumed workspace when they open.
    aliases: Vec<(u32, u32)>,
    /// Manifest sessions continued in this run: their recordings go to `continued`.
    continuing: Vec<u32>,
}

impl ManifestWriter {
    /// Start a manifest at `path` (its directory is made private when missing) and write it.
    pub fn create(path: &Path, started_ms: u64) -> Result<ManifestWriter, String> {
        crate::paths::prepare_parent(path)
            .map_err(|e| format!("cannot create the directory of {}: {e}", path.display()))?;
        remove_stale_temps(path);
        let w = ManifestWriter {
            path: path.to_path_buf(),
            doc: Manifest::new(started_ms),
            limit: MAX_LISTED_DECISIONS,
            deferred: false,
            ids: Vec::new(),
            aliases: Vec::new(),
            continuing: Vec::new(),
        };
        w.write()?;
        Ok(w)
    }

    /// List at most `limit` decisions (tests; the default is [`MAX_LISTED_DECISIONS`]).
    pub fn with_limit(mut self, limit: usize) -> ManifestWriter {
        self.limit = limit;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn manifest(&self) -> &Manifest {
        &self.doc
    }

    /// The entry of app session `app` (its manifest id after a resume).
    fn entry_mut(&mut self, app: u32) -> Result<&mut SessionEntry, String> {
        let id = self.mid(app);
        self.doc
            .sessions
            .iter_mut()
            .find(|s| s.id == id)
            .ok_or_else(|| format!("session {id} is not in the manifest"))
    }

    pub fn session_opened(
        &mut self,
        id: u32,
        name: &str,
        backend: &str,
        recording: Option<&Path>,
        at_ms: u64,
    ) -> Result<(), String> {
        // A session of a resumed workspace: it continues its entry (see `resume`).
        if let Some(k) = self.aliases.iter().position(|(a, _)| *a == id) {
            let (_, mid) = self.aliases.remove(k);
            self.ids.push((id, mid));
            return self.continue_session(mid, recording);
        }
        let id = if self.doc.resumed.is_empty() {
            id
        } else {
            // A resumed workspace's new session: the next id its manifest has not used.
            let mid = self.next_free_id();
            self.ids.push((id, mid));
            mid
        };
        if self.doc.session(id).is_some() {
            return Err(format!("session {id} is already in the manifest"));
        }
        if name.chars().count() > MAX_NAME_CHARS {
            return Err(format!(
                "session {id}: the name is longer than {MAX_NAME_CHARS} characters"
            ));
        }
        let valid_backend = backend.len() <= 32
            && backend.starts_with(|c: char| c.is_ascii_lowercase())
            && backend
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        if !valid_backend {
            return Err(format!(
                "session {id}: backend {backend:?} is not a backend name"
            ));
        }
        let recording = match recording {
            None => None,
            Some(p) => Some(
                p.to_str()
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| {
                        format!("session {id}: the recording path is empty or not UTF-8")
                    })?
                    .to_string(),
            ),
        };
        self.doc.sessions.push(SessionEntry {
            id,
            name: name.to_string(),
            backend: backend.to_string(),
            recording,
            opened_ms: at_ms,
            closed_ms: None,
            exit_code: None,
            continued: Vec::new(),
            resume: None,
            rules: Vec::new(),
        });
        self.persist()
    }

    /// A rule made for session `id` only: kept with the session (once), for a resume.
    pub fn session_rule(
        &mut self,
        id: u32,
        spec: &crate::core::rules::RuleSpec,
    ) -> Result<(), String> {
        let s = self.entry_mut(id)?;
        // Past the bounds (the schema's too) it is not kept: a resume then asks more.
        let too_long = spec.tool.chars().count() > MAX_RULE_TOOL_CHARS
            || spec
                .pattern
                .as_ref()
                .is_some_and(|p| p.chars().count() > MAX_RULE_PATTERN_CHARS);
        if too_long || s.rules.contains(spec) || s.rules.len() >= MAX_SESSION_RULES {
            return Ok(());
        }
        s.rules.push(spec.clone());
        self.persist()
    }

    /// A rule made for session `id` was deleted: it does not come back with a resume.
    pub fn session_rule_removed(
        &mut self,
        id: u32,
        spec: &crate::core::rules::RuleSpec,
    ) -> Result<(), String> {
        let s = self.entry_mut(id)?;
        let before = s.rules.len();
        s.rules.retain(|r| r != spec);
        if s.rules.len() == before {
            return Ok(());
        }
        self.persist()
    }

    /// Where session `id`'s recording goes, once its backend opened it.
    pub fn session_recording(&mut self, id: u32, recording: &Path) -> Result<(), String> {
        let id = self.mid(id);
        let path = recording
            .to_str()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| format!("session {id}: the recording path is empty or not UTF-8"))?
            .to_string();
        let Some(s) = self.doc.sessions.iter_mut().find(|s| s.id == id) else {
            return Err(format!("session {id} is not in the manifest"));
        };
        if !self.continuing.contains(&id) {
            s.recording = Some(path);
        } else if s.recording.as_deref() != Some(&path) && s.continued.last() != Some(&path) {
            s.continued.push(path);
        }
        self.persist()
    }

    pub fn session_closed(
        &mut self,
        id: u32,
        at_ms: u64,
        exit_code: Option<i32>,
    ) -> Result<(), String> {
        let s = self.entry_mut(id)?;
        if s.closed_ms.is_some() {
            return Err(format!("session {} is already closed", s.id));
        }
        s.closed_ms = Some(at_ms);
        s.exit_code = exit_code;
        self.persist()
    }

    /// A decision on gate `gate_id` of `session`, taken `by` one of [`BY`].
    pub fn decision(
        &mut self,
        at_ms: u64,
        session: u32,
        gate_id: &str,
        decision: &Decision,
        by: &str,
    ) -> Result<(), String> {
        let session = self.mid(session);
        if self.doc.session(session).is_none() {
            return Err(format!(
                "decision on {gate_id:?}: session {session} is not in the manifest"
            ));
        }
        if !BY.contains(&by) {
            return Err(format!(
                "decision on {gate_id:?}: {by:?} is not one of {}",
                BY.join(", ")
            ));
        }
        if gate_id.is_empty() || gate_id.chars().count() > MAX_GATE_ID_CHARS {
            return Err(format!(
                "session {session}: a gate id must have 1 to {MAX_GATE_ID_CHARS} characters"
            ));
        }
        self.doc.decisions_total += 1;
        if self.doc.decisions.len() < self.limit {
            self.doc.decisions.push(DecisionEntry {
                at_ms,
                session,
                gate_id: gate_id.to_string(),
                decision: decision_kind(decision).to_string(),
                by: by.to_string(),
            });
        } else {
            self.doc.decisions_truncated = true;
        }
        self.persist()
    }

    /// Write the document to `.<name>.tmp` beside the manifest (0600, never through a link),
    /// flush it to disk, then rename it over the manifest.
    /// Write now unless deferred.
    fn persist(&self) -> Result<(), String> {
        if self.deferred { Ok(()) } else { self.write() }
    }

    /// Write the document as it is now (after deferred changes).
    pub fn flush(&self) -> Result<(), String> {
        self.write()
    }

    fn write(&self) -> Result<(), String> {
        write_atomically(&self.path, &self.doc.to_text())
    }

    /// The document as it would be written now.
    pub fn text(&self) -> String {
        self.doc.to_text()
    }
}

/// Remove the temporary files a writer of this manifest killed mid-write left beside it (its
/// process gone), before this writer's first write. Best effort: one that cannot go changes
/// nothing but a stray file.
pub(super) fn remove_stale_temps(path: &Path) {
    let (Some(name), Some(dir)) = (path.file_name(), path.parent()) else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    if let Ok(root) = crate::contain::Root::open(dir) {
        let _ = root.remove_stale_temps(Path::new(name));
    }
}

/// Write `text` over `path` atomically: a private (0600) temporary file beside it, created new,
/// synced, renamed over the name, the directory synced, the manifest 0600 whatever it was.
/// Each write opens the directory once and takes every step beneath that handle
/// (`contain::Root`): nothing swapped in during the write sends the bytes elsewhere.
fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    let name = path
        .file_name()
        .ok_or_else(|| format!("{}: not a file path", path.display()))?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    crate::contain::Root::open(dir)
        .map_err(|e| e.to_string())
        .and_then(|root| {
            root.write_atomic_private(Path::new(name), text.as_bytes())
                .map_err(|e| e.to_string())
        })
        .map_err(|e| format!("cannot write the manifest {}: {e}", path.display()))
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;
