//! `switchboard replay MANIFEST`: every recording a workspace manifest lists, merged into one
//! timeline ordered by recorded time, each frame tagged with the session it is fed to.
//!
//! The merge is stable: frames of one recording keep their order whatever their timestamps say,
//! ties between recordings go to the one listed first, and a frame without a timestamp stays
//! right after the frame before it in its recording (the leading ones of a recording go just
//! before its first timestamped frame; a recording with no time at all plays first).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;
use std::sync::Arc;

use super::load::{self, Frame};
use super::source::{FrameSource, IndexedFile, Lane};
use crate::core::BackendKind;
use crate::workspace::manifest::{self, Manifest};
use crate::workspace::profile::ProfileKind;

/// More sessions than this in one manifest is not a workspace switchboard wrote (each session
/// holds an open recording).
pub const MAX_SESSIONS: usize = 256;

/// Backends whose recordings a workspace replay reads (`demo` sessions record Claude traffic).
pub const REPLAYABLE: [ProfileKind; 4] = [
    ProfileKind::Claude,
    ProfileKind::Acp,
    ProfileKind::Demo,
    ProfileKind::Gateway,
];

/// One session's recording in the merged timeline.
struct Member {
    lane: Lane,
    frames: Arc<dyn FrameSource>,
}

/// The recordings of a workspace, merged by time.
pub struct WorkspaceSource {
    members: Vec<Member>,
    /// (lane, frame of that lane's recording) for each position of the merged timeline.
    order: Vec<(u32, u32)>,
    start_ms: u64,
}

impl WorkspaceSource {
    /// Read the manifest at `path` and open every recording it lists. Errors name the manifest's
    /// line, the session and the recording.
    pub fn open(path: &Path) -> Result<WorkspaceSource, String> {
        let text = manifest::read_text(path)?;
        let m: Manifest = manifest::parse(&text)?;
        if m.sessions.is_empty() {
            return Err("the manifest lists no sessions: nothing to replay".into());
        }
        if m.sessions.len() > MAX_SESSIONS {
            return Err(format!(
                "the manifest lists {} sessions, more than the {MAX_SESSIONS} a replay opens",
                m.sessions.len()
            ));
        }
        let lines = manifest::element_lines(&text, "sessions");
        let mut parts = Vec::with_capacity(m.sessions.len());
        for (i, s) in m.sessions.iter().enumerate() {
            let at = lines.get(i).copied().unwrap_or(1);
            let here = format!("line {at}: session {} ({:?})", s.id, s.name);
            let Some(kind) = ProfileKind::parse(&s.backend).filter(|k| REPLAYABLE.contains(k))
            else {
                return Err(format!(
                    "{here}: backend {:?} cannot be replayed (known: {})",
                    s.backend,
                    REPLAYABLE.map(ProfileKind::label).join(", ")
                ));
            };
            let frames: Arc<dyn FrameSource> = match Manifest::recording_path(path, s) {
                // A session that never started recorded nothing: it shows as an empty session.
                None => Arc::new(load::Loaded {
                    format: load::Format::Recording,
                    backend: kind.backend(),
                    header: None,
                    frames: Vec::new(),
                }),
                Some(rec) => {
                    let first = open_recording(&rec)
                        .map_err(|e| format!("{here}: recording {}: {e}", rec.display()))?;
                    // Resumed after a crash: its continuations follow, one timeline.
                    let mut parts = vec![first];
                    for c in crate::workspace::resume::recordings(path, s)
                        .into_iter()
                        .skip(1)
                    {
                        let more = open_recording(&c)
                            .map_err(|e| format!("{here}: recording {}: {e}", c.display()))?;
                        if more.backend() != parts[0].backend() {
                            return Err(format!(
                                "{here}: the continuation {} is a {} recording",
                                c.display(),
                                more.backend().name()
                            ));
                        }
                        parts.push(more);
                    }
                    if parts.len() == 1 {
                        parts.swap_remove(0)
                    } else {
                        Arc::new(super::chain::Chain::new(parts))
                    }
                }
            };
            let recorded = frames.backend();
            if recorded != kind.backend() {
                return Err(format!(
                    "{here}: the manifest says backend {:?} but its recording is {:?}",
                    s.backend,
                    recorded.name()
                ));
            }
            parts.push((s.name.clone(), frames));
        }
        WorkspaceSource::merge(parts)
    }

    /// Merge `recordings` (session name, frames), one session each in this order.
    pub fn merge(
        recordings: Vec<(String, Arc<dyn FrameSource>)>,
    ) -> Result<WorkspaceSource, String> {
        let total: usize = recordings.iter().map(|(_, f)| f.len()).sum();
        if total > u32::MAX as usize {
            return Err(format!("{total} frames in all: too many to replay"));
        }
        // Each recording as runs: a timestamped frame and the untimed ones after it, keyed by
        // that time; the untimed frames a recording starts with run before its first time.
        let mut runs: Vec<Vec<(u64, usize, usize)>> = Vec::with_capacity(recordings.len());
        // The first recorded time of each (`None`: it has none at all).
        let mut first_ts = Vec::with_capacity(recordings.len());
        for (_, frames) in &recordings {
            let mut mine: Vec<(u64, usize, usize)> = Vec::new();
            let mut lead = 0;
            for i in 0..frames.len() {
                match frames.ts(i) {
                    Some(ts) => mine.push((ts, i, i + 1)),
                    None => match mine.last_mut() {
                        Some(run) => run.2 = i + 1,
                        None => lead = i + 1,
                    },
                }
            }
            let first = mine.first().map(|r| r.0);
            first_ts.push(first);
            if lead > 0 {
                mine.insert(0, (first.unwrap_or(0), 0, lead));
            }
            runs.push(mine);
        }
        // A k-way merge of the heads of each recording's runs: (time, lane) decides, so ties go
        // to the recording listed first and each recording's own order is kept.
        let mut order = Vec::with_capacity(total);
        let mut next = vec![0usize; runs.len()];
        let mut heap = BinaryHeap::new();
        for (lane, r) in runs.iter().enumerate() {
            if let Some(first) = r.first() {
                heap.push(Reverse((first.0, lane)));
            }
        }
        while let Some(Reverse((_, lane))) = heap.pop() {
            let (_, from, to) = runs[lane][next[lane]];
            order.extend((from..to).map(|i| (lane as u32, i as u32)));
            next[lane] += 1;
            if let Some(r) = runs[lane].get(next[lane]) {
                heap.push(Reverse((r.0, lane)));
            }
        }
        let start_ms = order
            .iter()
            .find_map(|&(l, i)| recordings[l as usize].1.ts(i as usize))
            .unwrap_or(0);
        // A recording without any time (or without frames) starts with the workspace.
        let members: Vec<Member> = recordings
            .into_iter()
            .zip(first_ts)
            .map(|((name, frames), first)| Member {
                lane: Lane {
                    name,
                    backend: frames.backend(),
                    start_ms: first.unwrap_or(start_ms),
                },
                frames,
            })
            .collect();
        Ok(WorkspaceSource {
            members,
            order,
            start_ms,
        })
    }
}

/// A recording listed by a manifest: only a regular file (a FIFO or a device would block or
/// never end), never another manifest; indexed lazily when it is a switchboard recording.
fn open_recording(path: &Path) -> Result<Arc<dyn FrameSource>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if manifest::is_manifest(path) {
        return Err("is a workspace manifest, not a recording".into());
    }
    if let Ok(idx) = IndexedFile::open(path) {
        return Ok(Arc::new(idx));
    }
    Ok(Arc::new(load::load(path, None)?))
}

impl FrameSource for WorkspaceSource {
    fn len(&self) -> usize {
        self.order.len()
    }

    fn frame(&self, i: usize) -> Frame {
        let (lane, at) = self.order[i];
        self.members[lane as usize].frames.frame(at as usize)
    }

    /// The first session's backend (each frame is read with its own session's, see `lanes`).
    fn backend(&self) -> BackendKind {
        self.members
            .first()
            .map_or(BackendKind::Claude, |m| m.lane.backend)
    }

    fn start_ms(&self) -> u64 {
        self.start_ms
    }

    fn ts(&self, i: usize) -> Option<u64> {
        let (lane, at) = self.order[i];
        self.members[lane as usize].frames.ts(at as usize)
    }

    fn lane(&self, i: usize) -> usize {
        self.order[i].0 as usize
    }

    fn lanes(&self) -> Vec<Lane> {
        self.members.iter().map(|m| m.lane.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Dir;
    use crate::replay::load::{Format, Loaded};

    fn rec(backend: BackendKind, ts: &[Option<u64>]) -> Arc<dyn FrameSource> {
        Arc::new(Loaded {
            format: Format::Recording,
            backend,
            header: None,
            frames: ts
                .iter()
                .enumerate()
                .map(|(i, ts)| Frame {
                    src_line: i + 2,
                    ts: *ts,
                    dir: Dir::Note,
                    text: format!("{backend}{i}"),
                })
                .collect(),
        })
    }

    fn merged(parts: Vec<(&str, Arc<dyn FrameSource>)>) -> Vec<String> {
        let ws =
            WorkspaceSource::merge(parts.into_iter().map(|(n, f)| (n.to_string(), f)).collect())
                .unwrap();
        (0..ws.len())
            .map(|i| format!("{}:{}", ws.lane(i), ws.frame(i).text))
            .collect()
    }

    #[test]
    fn frames_interleave_by_time_and_ties_go_to_the_first_listed() {
        let a = rec(BackendKind::Claude, &[Some(1), Some(5), Some(9)]);
        let b = rec(BackendKind::Acp, &[Some(3), Some(5), Some(20)]);
        assert_eq!(
            merged(vec![("a", a), ("b", b)]),
            [
                "0:claude0",
                "1:acp0",
                "0:claude1",
                "1:acp1",
                "0:claude2",
                "1:acp2"
            ]
        );
    }

    #[test]
    fn untimed_frames_stay_after_their_predecessor_and_each_order_is_kept() {
        // b's second frame has no time: it stays glued to b0. a's times go backwards (10, then
        // 4): a's own order still holds, and b waits for a's run at 4 to pass.
        let a = rec(BackendKind::Claude, &[None, Some(10), Some(4), Some(30)]);
        let b = rec(BackendKind::Acp, &[Some(10), None, Some(12)]);
        assert_eq!(
            merged(vec![("a", a), ("b", b)]),
            [
                "0:claude0", // leading untimed frame: runs just before a's first time (10)
                "0:claude1",
                "0:claude2",
                "1:acp0",
                "1:acp1",
                "1:acp2",
                "0:claude3"
            ]
        );
    }

    #[test]
    fn lanes_name_each_session_with_its_backend_and_start() {
        let ws = WorkspaceSource::merge(vec![
            ("api".into(), rec(BackendKind::Claude, &[Some(7), Some(8)])),
            ("empty".into(), rec(BackendKind::Acp, &[])),
        ])
        .unwrap();
        assert_eq!(ws.len(), 2);
        assert_eq!(ws.start_ms(), 7);
        let lanes = ws.lanes();
        assert_eq!(
            lanes,
            [
                Lane {
                    name: "api".into(),
                    backend: BackendKind::Claude,
                    start_ms: 7
                },
                Lane {
                    name: "empty".into(),
                    backend: BackendKind::Acp,
                    start_ms: 7
                }
            ]
        );
    }
}
