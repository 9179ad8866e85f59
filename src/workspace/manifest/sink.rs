//! The manifest kept off the UI thread (`ManifestSink`, with its writer thread) and the app's
//! workspace observer that writes it.

use std::path::{Path, PathBuf};

use super::{ManifestWriter, write_atomically};
use crate::app::WorkspaceObserver;
use crate::core::state::SessionId;

/// A manifest kept off the UI thread: changes are checked and applied to the document at once
/// (cheap), and a writer thread rewrites the file at most every `MANIFEST_WRITE_EVERY`, so a
/// session whose gates rules answer a thousand times a second costs the UI no fsync per
/// decision. The last state is written when the sink is dropped (the app's end).
#[derive(Debug)]
pub struct ManifestSink {
    path: PathBuf,
    doc: std::sync::Arc<std::sync::Mutex<ManifestWriter>>,
    dirty: std::sync::Arc<(std::sync::Mutex<DirtyState>, std::sync::Condvar)>,
    writer: Option<std::thread::JoinHandle<()>>,
    errors: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// Held from taking the document's text to its rename: two writers (the thread and
    /// `write_now`) never share the temporary file, and the newer text is always the last.
    writing: std::sync::Arc<std::sync::Mutex<()>>,
    /// Held while the workspace lives (see `lock`): a free lock on an unclosed manifest is a
    /// crashed workspace.
    _lock: Option<std::fs::File>,
}

#[derive(Debug, Default)]
struct DirtyState {
    dirty: bool,
    closing: bool,
    /// A change a resume needs (a session, its profile, its agent's id, its recording): written
    /// at once, not at the next period.
    urgent: bool,
}

/// How often the sink rewrites a changed manifest at most.
pub const MANIFEST_WRITE_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

impl ManifestSink {
    /// Create the manifest at `path` (written once at once) and start its writer thread.
    pub fn create(path: &Path, started_ms: u64) -> Result<ManifestSink, String> {
        // The lock first (in the directory the manifest goes in), so the manifest is never
        // seen unlocked: an unclosed manifest nobody holds reads as a crashed workspace.
        crate::paths::prepare_parent(path)
            .map_err(|e| format!("cannot create the directory of {}: {e}", path.display()))?;
        let lock = super::lock::hold(path)?
            .ok_or_else(|| format!("{}: another process holds its lock", path.display()))?;
        ManifestSink::over(ManifestWriter::create(path, started_ms)?, Some(lock))
    }

    /// A manifest reopened for a resume (see `ManifestWriter::reopen`), written at once.
    /// `lock`: the workspace's lock, taken by the resume before it looked.
    pub fn reopen(
        path: &Path,
        doc: super::Manifest,
        aliases: Vec<(u32, u32)>,
        stopped_ms: u64,
        resumed_ms: u64,
        lock: std::fs::File,
    ) -> Result<ManifestSink, String> {
        ManifestSink::over(
            ManifestWriter::reopen(path, doc, aliases, stopped_ms, resumed_ms)?,
            Some(lock),
        )
    }

    /// The workspace's host name and config file, when it has them.
    pub fn describe(
        &self,
        host: Option<&str>,
        config: Option<&Path>,
        rules: &[std::path::PathBuf],
    ) -> Result<(), String> {
        self.change(|w| w.describe(host, config, rules))
    }

    /// Keep `w` (already written once) and start its writer thread.
    fn over(mut w: ManifestWriter, lock: Option<std::fs::File>) -> Result<ManifestSink, String> {
        let path = w.path().to_path_buf();
        let path = path.as_path();
        w.deferred = true;
        let doc = std::sync::Arc::new(std::sync::Mutex::new(w));
        let dirty = std::sync::Arc::new((
            std::sync::Mutex::new(DirtyState::default()),
            std::sync::Condvar::new(),
        ));
        let errors = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let writing = std::sync::Arc::new(std::sync::Mutex::new(()));
        let writer = {
            let (doc, dirty, errors) = (doc.clone(), dirty.clone(), errors.clone());
            let writing = writing.clone();
            let path = path.to_path_buf();
            std::thread::Builder::new()
                .name("manifest".into())
                .spawn(move || {
                    loop {
                        let closing = {
                            let (lock, cv) = &*dirty;
                            let mut st = lock.lock().unwrap_or_else(|e| e.into_inner());
                            while !st.dirty && !st.closing {
                                st = cv.wait(st).unwrap_or_else(|e| e.into_inner());
                            }
                            st.dirty = false;
                            st.urgent = false;
                            st.closing
                        };
                        // Serialised under the lock (one consistent state), written and synced
                        // outside it: a change from the UI never waits on the disk.
                        let held = writing.lock().unwrap_or_else(|e| e.into_inner());
                        let text = doc.lock().unwrap_or_else(|e| e.into_inner()).text();
                        let r = write_atomically(&path, &text);
                        drop(held);
                        if let Err(e) = r {
                            errors.lock().unwrap_or_else(|e| e.into_inner()).push(e);
                        }
                        if closing {
                            return;
                        }
                        // At most one write per period, but a close is never kept waiting.
                        let (lock, cv) = &*dirty;
                        let st = lock.lock().unwrap_or_else(|e| e.into_inner());
                        let _ = cv
                            .wait_timeout_while(st, MANIFEST_WRITE_EVERY, |s| {
                                !s.closing && !s.urgent
                            })
                            .unwrap_or_else(|e| e.into_inner());
                    }
                })
                .map_err(|e| format!("cannot start the manifest writer: {e}"))?
        };
        Ok(ManifestSink {
            path: path.to_path_buf(),
            doc,
            dirty,
            writer: Some(writer),
            errors,
            writing,
            _lock: lock,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Apply a change to the document now and have the writer write it soon.
    pub fn change(
        &self,
        f: impl FnOnce(&mut ManifestWriter) -> Result<(), String>,
    ) -> Result<(), String> {
        let r = f(&mut self.doc.lock().unwrap_or_else(|e| e.into_inner()));
        let (lock, cv) = &*self.dirty;
        lock.lock().unwrap_or_else(|e| e.into_inner()).dirty = true;
        cv.notify_one();
        r
    }

    /// `change`, written at once: what a resume after a crash needs must not wait for the
    /// period (decisions may: their recording holds them first).
    pub fn change_now(
        &self,
        f: impl FnOnce(&mut ManifestWriter) -> Result<(), String>,
    ) -> Result<(), String> {
        let r = f(&mut self.doc.lock().unwrap_or_else(|e| e.into_inner()));
        let (lock, cv) = &*self.dirty;
        {
            let mut st = lock.lock().unwrap_or_else(|e| e.into_inner());
            st.dirty = true;
            st.urgent = true;
        }
        cv.notify_one();
        r
    }

    /// Write the document now, on this thread (serialised under the lock, written outside
    /// it): a workspace's start is on disk before its agents have said anything.
    pub fn write_now(&self) -> Result<(), String> {
        let _held = self.writing.lock().unwrap_or_else(|e| e.into_inner());
        let text = self.doc.lock().unwrap_or_else(|e| e.into_inner()).text();
        write_atomically(&self.path, &text)
    }

    /// Write failures since the last call.
    pub fn take_errors(&self) -> Vec<String> {
        std::mem::take(&mut *self.errors.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Drop for ManifestSink {
    /// The last state reaches the file before the process goes on to exit.
    fn drop(&mut self) {
        {
            let (lock, cv) = &*self.dirty;
            let mut st = lock.lock().unwrap_or_else(|e| e.into_inner());
            st.closing = true;
            st.dirty = true;
            cv.notify_one();
        }
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

/// The manifest is what the app's observer writes: every session opened and closed, every
/// decision sent.
impl WorkspaceObserver for ManifestSink {
    fn session_opened(
        &mut self,
        id: SessionId,
        name: &str,
        backend: crate::core::BackendKind,
        at_ms: u64,
    ) -> Result<(), String> {
        self.change_now(|w| w.session_opened(id.0, name, backend.name(), None, at_ms))
    }
    fn session_recording(&mut self, id: SessionId, path: &str) -> Result<(), String> {
        self.change_now(|w| w.session_recording(id.0, std::path::Path::new(path)))
    }
    fn session_ended(
        &mut self,
        id: SessionId,
        exit_code: Option<i32>,
        at_ms: u64,
    ) -> Result<(), String> {
        self.change(|w| w.session_closed(id.0, at_ms, exit_code))
    }
    fn decision(
        &mut self,
        id: SessionId,
        gate_id: &str,
        decision: &crate::core::gate::Decision,
        by: &str,
        at_ms: u64,
    ) -> Result<(), String> {
        self.change(|w| w.decision(at_ms, id.0, gate_id, decision, by))
    }
    fn session_resume(
        &mut self,
        id: SessionId,
        profile: Option<serde_json::Value>,
        agent_session: Option<&str>,
        load_session: Option<bool>,
    ) -> Result<(), String> {
        self.change_now(|w| w.session_resume(id.0, profile, agent_session, load_session))
    }
    fn session_rule(
        &mut self,
        id: SessionId,
        spec: &crate::core::rules::RuleSpec,
    ) -> Result<(), String> {
        // At once, as what else a resume needs: a rule lost to a kill asks again.
        self.change_now(|w| w.session_rule(id.0, spec))
    }
    fn session_rule_removed(
        &mut self,
        id: SessionId,
        spec: &crate::core::rules::RuleSpec,
    ) -> Result<(), String> {
        // At once: a deleted allow must not come back with a resume.
        self.change_now(|w| w.session_rule_removed(id.0, spec))
    }
    fn closed(&mut self, at_ms: u64) -> Result<(), String> {
        self.change_now(|w| w.closed(at_ms))
    }
    fn sync(&mut self) -> Result<(), String> {
        self.write_now()
    }
    fn path(&self) -> Option<std::path::PathBuf> {
        Some(ManifestSink::path(self).to_path_buf())
    }
    fn take_errors(&mut self) -> Vec<String> {
        ManifestSink::take_errors(self)
    }
}
