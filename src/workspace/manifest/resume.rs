//! What the manifest keeps so a workspace comes back after a crash, a kill or a reboot: the
//! host's name, each session's profile and its agent's own session id, a clean stop's time
//! (nothing to resume then), and, when a workspace is resumed, the same document reopened: its
//! sessions keep their ids and entries, their new recordings listed as continuations.

use std::path::Path;

use super::{MAX_LISTED_DECISIONS, Manifest, ManifestWriter, ResumeInfo, Resumed};

impl ManifestWriter {
    /// Reopen the manifest `doc` read from `path` for its resume at `resumed_ms`: the host
    /// stopped at `stopped_ms` (the last thing it recorded). App session `a` of each
    /// `(a, m)` in `aliases` continues manifest session `m` when it opens.
    pub fn reopen(
        path: &Path,
        mut doc: Manifest,
        aliases: Vec<(u32, u32)>,
        stopped_ms: u64,
        resumed_ms: u64,
    ) -> Result<ManifestWriter, String> {
        doc.closed_ms = None;
        // The resume, written once: the same one again (the document this resume wrote
        // before its agents started, reopened for them) is not a second one.
        let this = Resumed {
            stopped_ms,
            resumed_ms,
        };
        if doc.resumed.last() != Some(&this) {
            doc.resumed.push(this);
        }
        super::remove_stale_temps(path);
        let w = ManifestWriter {
            path: path.to_path_buf(),
            doc,
            limit: MAX_LISTED_DECISIONS,
            deferred: false,
            ids: Vec::new(),
            aliases,
            continuing: Vec::new(),
        };
        w.write()?;
        Ok(w)
    }

    /// The manifest's id of app session `app`.
    pub(super) fn mid(&self, app: u32) -> u32 {
        self.ids
            .iter()
            .find(|(a, _)| *a == app)
            .map_or(app, |(_, m)| *m)
    }

    /// The smallest id above every id the manifest has used.
    pub(super) fn next_free_id(&self) -> u32 {
        let used = self.doc.sessions.iter().map(|s| s.id);
        let mapped = self.ids.iter().map(|(_, m)| *m);
        used.chain(mapped).max().map_or(1, |m| m.saturating_add(1))
    }

    /// Manifest session `mid` goes on in this run; its new recording is a continuation.
    pub(super) fn continue_session(
        &mut self,
        mid: u32,
        recording: Option<&Path>,
    ) -> Result<(), String> {
        let Some(s) = self.doc.sessions.iter_mut().find(|s| s.id == mid) else {
            return Err(format!("session {mid} is not in the resumed manifest"));
        };
        s.closed_ms = None;
        s.exit_code = None;
        self.continuing.push(mid);
        match recording.and_then(Path::to_str).filter(|r| !r.is_empty()) {
            Some(r) if s.recording.as_deref() != Some(r) => s.continued.push(r.to_string()),
            _ => {}
        }
        self.persist()
    }

    /// The workspace's host name and the config file it was started with (`up --config`),
    /// when it has them.
    pub fn describe(
        &mut self,
        host: Option<&str>,
        config: Option<&Path>,
        rules: &[std::path::PathBuf],
    ) -> Result<(), String> {
        if let Some(n) = host {
            self.doc.name = Some(n.to_string());
        }
        if let Some(c) = config {
            self.doc.config = Some(absolute(c)?);
        }
        self.doc.rules = rules
            .iter()
            .take(64)
            .map(|r| absolute(r))
            .collect::<Result<_, _>>()?;
        self.persist()
    }

    /// What session `id` needs to come back: its profile (set once, as it opens), and the
    /// agent's session id and `loadSession` when the agent says them. A session without a
    /// profile (the adopted sessions, a hosting source's) cannot be started again: nothing.
    pub fn session_resume(
        &mut self,
        id: u32,
        profile: Option<serde_json::Value>,
        agent_session: Option<&str>,
        load_session: Option<bool>,
    ) -> Result<(), String> {
        let s = self.entry_mut(id)?;
        let mut changed = false;
        match (&mut s.resume, profile) {
            (Some(r), Some(p)) if r.profile != p => {
                r.profile = p;
                changed = true;
            }
            (None, Some(p)) => {
                s.resume = Some(ResumeInfo {
                    profile: p,
                    agent_session: None,
                    load_session: None,
                });
                changed = true;
            }
            _ => {}
        }
        let Some(r) = s.resume.as_mut() else {
            return Ok(());
        };
        if let Some(a) = agent_session.filter(|a| super::agent_session_ok(a))
            && r.agent_session.as_deref() != Some(a)
        {
            r.agent_session = Some(a.to_string());
            changed = true;
        }
        if load_session.is_some() && r.load_session != load_session {
            r.load_session = load_session;
            changed = true;
        }
        if changed { self.persist() } else { Ok(()) }
    }

    /// The workspace stopped cleanly: nothing to resume.
    pub fn closed(&mut self, at_ms: u64) -> Result<(), String> {
        self.doc.closed_ms = Some(at_ms);
        self.persist()
    }
}

/// `p` as an absolute UTF-8 path the schema takes (at most 4096 bytes).
fn absolute(p: &Path) -> Result<String, String> {
    let abs = std::path::absolute(p).map_err(|e| format!("{}: {e}", p.display()))?;
    abs.to_str()
        .filter(|t| !t.is_empty() && t.len() <= 4096)
        .map(str::to_string)
        .ok_or_else(|| format!("{}: not a UTF-8 path", p.display()))
}
