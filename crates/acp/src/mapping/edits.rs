//! One approval per edit. An agent that asks `session/request_permission` for an edit (the tool
//! call carries its diff) and, once allowed, performs it with `fs/write_text_file` would
//! otherwise meet a second gate for the same change. The write is performed without one only
//! when it is exactly what was approved:
//! - the same path as an approved diff, in the same prompt turn, the turn still running;
//! - the content is that file with the approved diffs applied (a whole-file diff creates it:
//!   it covers only a file that is missing or empty, since its card showed no old text; a
//!   snippet diff is applied at its one occurrence; none or several: not covered);
//! - the file on disk now has the SHA-256 it had then (the write checks it once more just
//!   before its rename).
//!
//! Each approval covers one write. The covered write still reaches the core as a gate marked
//! `covered_by`, so deny and ask rules for it apply; with none, it is allowed without a card.
//! Anything else is an ordinary write gate.

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::Value;

use super::actions::Action;
use super::{Mapper, Out};
use switchboard_core::diff::{Edit, apply_edits};

/// A diff of a tool call, as the agent sent it.
#[derive(Clone, Debug, PartialEq)]
pub struct EditDiff {
    pub path: PathBuf,
    /// `None`: the new text is the whole file.
    pub old: Option<String>,
    pub new: String,
}

/// An allowed edit waiting for its write.
#[derive(Clone, Debug)]
struct Approved {
    gate: String,
    title: String,
    path: PathBuf,
    /// SHA-256 of the file when the approval was given (`None`: it did not exist). A digest,
    /// not the text: an approval may wait a whole turn and files may be megabytes.
    base: Option<switchboard_backend::contain::Digest>,
    edits: Vec<EditDiff>,
    turn: u64,
}

#[derive(Clone, Debug, Default)]
pub(super) struct Approvals {
    /// Diffs of permission gates still open, by gate id (with the tool call's title).
    asked: HashMap<String, (String, Vec<EditDiff>)>,
    /// Diffs of allowed gates, by gate id, until their files are read.
    allowed: HashMap<String, (String, Vec<EditDiff>, u64)>,
    ready: Vec<Approved>,
}

/// `base` (`None`: missing, read as empty) with `edits` applied in order, by the one function
/// both backends use (`core::diff::apply_edits`): a diff without old text creates a file that
/// is missing or empty and never replaces text the card did not show; a snippet applies at
/// its one occurrence, overlapping ones counted.
pub fn apply(base: Option<&str>, edits: &[EditDiff]) -> Option<String> {
    let edits: Vec<Edit> = edits
        .iter()
        .map(|e| Edit {
            old: e.old.clone().unwrap_or_default(),
            new: e.new.clone(),
            replace_all: false,
        })
        .collect();
    apply_edits(base.unwrap_or(""), &edits)
}

impl Mapper {
    /// A permission gate opened for a tool call with these diffs.
    pub(super) fn note_edits(&mut self, gid: &str, edits: &[EditDiff], title: &str) {
        if edits.is_empty() || self.rec.on {
            return;
        }
        // Only paths inside the session directory can be written at all.
        let edits: Vec<EditDiff> = edits
            .iter()
            .filter_map(|e| {
                let path = self.within_cwd(&e.path).ok()?;
                Some(EditDiff { path, ..e.clone() })
            })
            .collect();
        // Kept only while their gate is open: a cancelled or withdrawn gate leaves nothing.
        let theirs = &self.theirs;
        self.approvals.asked.retain(|g, _| theirs.contains_key(g));
        self.approvals
            .asked
            .insert(gid.to_string(), (title.to_string(), edits));
    }

    /// The answer to a permission gate: with edits allowed, their files are read first (the
    /// session does it, then sends `line`); otherwise `line` goes out now.
    pub(super) fn permission_answered(
        &mut self,
        gid: &str,
        allowed: bool,
        line: String,
        out: &mut Out,
    ) {
        let asked = self.approvals.asked.remove(gid);
        let (turn_no, running) = (self.turn_no, self.turn);
        self.approvals
            .ready
            .retain(|a| running && a.turn == turn_no);
        match asked {
            Some((title, edits)) if allowed && !edits.is_empty() && self.turn => {
                let mut paths: Vec<PathBuf> = edits.iter().map(|e| e.path.clone()).collect();
                paths.sort();
                paths.dedup();
                self.approvals
                    .allowed
                    .insert(gid.to_string(), (title, edits, self.turn_no));
                out.actions.push(Action::AnswerAfterSnapshot {
                    line,
                    gate: gid.to_string(),
                    paths,
                });
            }
            _ => out.lines.push(line),
        }
    }

    /// The files of an allowed edit as they were when it was allowed (`None`: missing). A file
    /// that could not be read is left out: a write to it is gated.
    pub fn approved_files(&mut self, gate: &str, files: Vec<(PathBuf, Option<String>)>) {
        let Some((title, edits, turn)) = self.approvals.allowed.remove(gate) else {
            return;
        };
        for (path, base) in files {
            let mine: Vec<EditDiff> = edits.iter().filter(|e| e.path == path).cloned().collect();
            self.approvals.ready.push(Approved {
                gate: gate.to_string(),
                title: title.clone(),
                path,
                base: base.map(|b| switchboard_backend::contain::digest(b.as_bytes())),
                edits: mine,
                turn,
            });
        }
    }

    /// The approval a write is covered by (used up), described for the card and the audit;
    /// the gate then goes to the core, which checks the rules for the write before allowing it
    /// without a card.
    pub(super) fn covered_write(
        &mut self,
        id: &Value,
        path: &PathBuf,
        content: &str,
        old: Option<&str>,
        out: &mut Out,
    ) -> Option<String> {
        let (turn_no, running) = (self.turn_no, self.turn);
        // Approvals of an earlier turn, or of a turn that ended, cover nothing any more.
        self.approvals
            .ready
            .retain(|a| running && a.turn == turn_no);
        // The file now is the file then (same digest), so the diffs apply to it as to that.
        let now = old.map(|o| switchboard_backend::contain::digest(o.as_bytes()));
        let at = self.approvals.ready.iter().position(|a| {
            a.path == *path && a.base == now && apply(old, &a.edits).as_deref() == Some(content)
        })?;
        let a = self.approvals.ready.remove(at);
        let what = if a.title.is_empty() {
            String::new()
        } else {
            format!(" ({})", a.title)
        };
        out.actions.push(Action::Note(format!(
            "fs/write_text_file {id} for {} covered by the approval of {}: no second gate unless a rule denies or asks",
            path.display(),
            a.gate
        )));
        Some(format!("the approval of {}{what}, the same change", a.gate))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(old: Option<&str>, new: &str) -> EditDiff {
        EditDiff {
            path: PathBuf::from("/w/f"),
            old: old.map(str::to_string),
            new: new.into(),
        }
    }

    #[test]
    fn an_approval_keeps_a_digest_of_the_file_not_its_text() {
        let mut m = Mapper::default();
        m.approvals.allowed.insert(
            "acp:1".into(),
            ("Edit f".into(), vec![d(Some("b"), "B")], 0),
        );
        let big = "b".to_string() + &"x".repeat(1 << 20);
        m.approved_files("acp:1", vec![(PathBuf::from("/w/f"), Some(big.clone()))]);
        let a = &m.approvals.ready[0];
        assert_eq!(
            a.base,
            Some(switchboard_backend::contain::digest(big.as_bytes()))
        );
        assert!(std::mem::size_of_val(&a.base) <= 40);
    }

    #[test]
    fn diffs_apply_whole_or_at_their_one_occurrence() {
        assert_eq!(apply(None, &[d(None, "new\n")]).as_deref(), Some("new\n"));
        // A whole-file diff (shown as a new file) does not replace text it never showed.
        assert_eq!(apply(Some("x"), &[d(None, "y")]), None);
        assert_eq!(apply(Some(""), &[d(None, "y")]).as_deref(), Some("y"));
        assert_eq!(
            apply(Some("a\nb\nc\n"), &[d(Some("b\n"), "B\n")]).as_deref(),
            Some("a\nB\nc\n")
        );
        // Not there, twice, overlapping: not applicable.
        assert_eq!(apply(Some("a\n"), &[d(Some("b"), "B")]), None);
        assert_eq!(apply(Some("b b"), &[d(Some("b"), "B")]), None);
        assert_eq!(apply(Some("aaa"), &[d(Some("aa"), "x")]), None);
        // A snippet for a file that does not exist; an empty snippet on a non-empty file.
        assert_eq!(apply(None, &[d(Some("b"), "B")]), None);
        assert_eq!(apply(Some("x"), &[d(Some(""), "B")]), None);
        assert_eq!(apply(None, &[d(Some(""), "B")]).as_deref(), Some("B"));
        // In order.
        assert_eq!(
            apply(Some("ab"), &[d(Some("a"), "A"), d(Some("b"), "B")]).as_deref(),
            Some("AB")
        );
        assert_eq!(apply(Some("é"), &[d(Some("é"), "e")]).as_deref(), Some("e"));
    }
}
