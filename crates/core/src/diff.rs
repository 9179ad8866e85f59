//! Line diffs for Edit/Write/MultiEdit inputs, rendered as unified diffs (`similar` does the
//! alignment; headers and line numbers follow `diff -u`, so a copied diff applies with `patch`).

use std::time::{Duration, Instant};

use similar::udiff::UnifiedHunkHeader;
use similar::{Algorithm, ChangeTag, TextDiff};

/// Time a diff may take before `similar` settles for a coarser, still correct alignment: a
/// huge Write never stalls the UI, and never degrades to "delete everything, add everything".
const DIFF_TIME: Duration = Duration::from_millis(150);

/// Changed words are found when a diff is drawn (`emphasis`), so only for the diffs on screen:
/// a replaced block longer than this on either side is shown by lines alone (a rewrite that
/// large reads by its colours), and one diff's word search stops at `EMPHASIS_TIME` (its
/// later runs are then shown by their colours).
pub const EMPHASIS_RUN: usize = 100;
/// Nor one holding more text than this on a side: the word search reads every word of a run
/// before its deadline can stop it, and an agent can send one line of megabytes.
pub const EMPHASIS_BYTES: usize = 64 * 1024;
const EMPHASIS_TIME: Duration = Duration::from_millis(4);

/// What `diff -u` prints after a last line that has no newline.
pub const NO_NEWLINE: &str = "\\ No newline at end of file";

/// One line of a unified diff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: DiffKind,
    pub old_no: Option<u32>,
    pub new_no: Option<u32>,
    pub text: String,
    /// The line ended in a lone `\r` (`similar` ends a line there too): `text` keeps it, as it
    /// keeps the `\r` of a `\r\n`, so this tells the two apart when a run is rebuilt.
    pub bare_cr: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffKind {
    Header,
    Hunk,
    Context,
    Add,
    Remove,
    /// `\ No newline at end of file` after the line it qualifies.
    NoNewline,
}

/// A unified diff of one file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diff {
    pub path: String,
    pub lines: Vec<DiffLine>,
    pub added: usize,
    pub removed: usize,
}

/// One Claude `Edit` (or one entry of `MultiEdit`): replace `old` by `new`, once or everywhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub old: String,
    pub new: String,
    pub replace_all: bool,
}

/// The file after `edits`, applied in order as the CLI applies them; `None` when an edit
/// cannot apply (its text is missing, or occurs more than once without `replace_all`): the
/// CLI refuses those, and no line numbers can be given. Occurrences that overlap count
/// ("aa" is twice in "aaa"): a snippet names one place or none. Shared by the Claude card and
/// the ACP check of a write against its approved diff, so both decide the same way.
pub fn apply_edits(file: &str, edits: &[Edit]) -> Option<String> {
    let mut text = file.to_string();
    for e in edits {
        if e.old.is_empty() {
            // Only creating a file uses an empty old text.
            if !text.is_empty() {
                return None;
            }
            text = e.new.clone();
            continue;
        }
        let first = text.find(&e.old)?;
        if e.replace_all {
            text = text.replace(&e.old, &e.new);
        } else if occurs_again(&text, &e.old, first) {
            return None;
        } else {
            text.replace_range(first..first + e.old.len(), &e.new);
        }
    }
    Some(text)
}

/// Whether `needle` occurs in `hay` again after the start of the match at `at`, overlapping
/// occurrences included.
fn occurs_again(hay: &str, needle: &str, at: usize) -> bool {
    let next = hay[at..]
        .char_indices()
        .nth(1)
        .map_or(hay.len(), |(i, _)| at + i);
    hay[next..].contains(needle)
}

impl Diff {
    /// Diff `old` against `new` with `context` unchanged lines around each change.
    pub fn unified(path: &str, old: &str, new: &str, context: usize) -> Diff {
        let mut diff = Diff {
            path: path.to_string(),
            ..Diff::default()
        };
        diff.push_header();
        diff.append_hunks(old, new, context);
        diff
    }

    /// Diff of edits to one file (Edit, MultiEdit) from their snippets alone, one hunk group
    /// per edit, numbered within the snippet: used when the file is not read (a replay, a
    /// file outside the cwd). A snippet is a fragment, so its missing final newline is not
    /// news.
    pub fn from_edits(path: &str, edits: &[(String, String)]) -> Diff {
        let mut diff = Diff {
            path: path.to_string(),
            ..Diff::default()
        };
        diff.push_header();
        let line = |s: &str| {
            if s.is_empty() || s.ends_with('\n') {
                s.to_string()
            } else {
                format!("{s}\n")
            }
        };
        for (old, new) in edits {
            diff.append_hunks(&line(old), &line(new), 3);
        }
        diff
    }

    /// The diff `edits` make to `file` (its current text), with the file's own line numbers
    /// and context; `None` when they do not apply to it.
    pub fn of_edits(path: &str, file: &str, edits: &[Edit]) -> Option<Diff> {
        let new = apply_edits(file, edits)?;
        Some(Diff::unified(path, file, &new, 3))
    }

    fn push_header(&mut self) {
        // `a/` `b/` prefixes read as relative paths; an absolute path is shown as it is.
        let (a, b) = if self.path.starts_with('/') {
            ("--- ", "+++ ")
        } else {
            ("--- a/", "+++ b/")
        };
        // The path exactly, on one line: a newline in it is `^J`, never a second row or
        // nothing (what every backend's card, the transcript and a copy show of the file).
        let path = crate::text::visible_line(&self.path);
        for prefix in [a, b] {
            self.lines.push(DiffLine {
                kind: DiffKind::Header,
                old_no: None,
                new_no: None,
                text: format!("{prefix}{path}"),
                bare_cr: false,
            });
        }
    }

    fn append_hunks(&mut self, old: &str, new: &str, context: usize) {
        let deadline = Instant::now() + DIFF_TIME;
        let diff = TextDiff::configure()
            .algorithm(Algorithm::Myers)
            .deadline(deadline)
            .diff_lines(old, new);
        for group in diff.grouped_ops(context) {
            if group.iter().all(|op| op.tag() == similar::DiffTag::Equal) {
                continue;
            }
            self.lines.push(DiffLine {
                kind: DiffKind::Hunk,
                old_no: None,
                new_no: None,
                // `@@ -0,0 +1,2 @@` for a new file, `-3` for a one-line range, as `diff -u`.
                text: UnifiedHunkHeader::new(&group).to_string(),
                bare_cr: false,
            });
            for op in &group {
                for change in diff.iter_changes(op) {
                    let kind = match change.tag() {
                        ChangeTag::Equal => DiffKind::Context,
                        ChangeTag::Delete => DiffKind::Remove,
                        ChangeTag::Insert => DiffKind::Add,
                    };
                    match kind {
                        DiffKind::Add => self.added += 1,
                        DiffKind::Remove => self.removed += 1,
                        _ => {}
                    }
                    let value = change.value();
                    self.lines.push(DiffLine {
                        kind,
                        old_no: change.old_index().map(|i| i as u32 + 1),
                        new_no: change.new_index().map(|i| i as u32 + 1),
                        text: value.strip_suffix('\n').unwrap_or(value).to_string(),
                        bare_cr: value.ends_with('\r'),
                    });
                    if change.missing_newline() {
                        self.lines.push(DiffLine {
                            kind: DiffKind::NoNewline,
                            old_no: None,
                            new_no: None,
                            text: NO_NEWLINE.into(),
                            bare_cr: false,
                        });
                    }
                }
            }
        }
    }
}

/// The changed words of `lines[..shown]`: for each line, char ranges of its `text` (empty for
/// a line that is not a removed or added one, or that was replaced outright).
///
/// A run of removed lines followed by added lines is one replace of `similar`'s line diff
/// (its `Replace` hook merges every delete and insert between two unchanged lines), so the
/// run is diffed word by word as `similar`'s inline changes do it: the same pairing and the
/// same words as when the diff was made, only now for the lines drawn rather than for every
/// diff of the session (`tests::emphasis_matches_similar_inline_changes`).
pub fn emphasis(lines: &[DiffLine], shown: usize) -> Vec<Vec<(u32, u32)>> {
    emphasis_until(lines, shown, Some(Instant::now() + EMPHASIS_TIME))
}

/// `emphasis`, giving up at `deadline`: a run diffed when it passes gets `similar`'s coarser
/// result, and no run after it is diffed (tests pass `None`, so that their result cannot
/// depend on how loaded the machine is).
fn emphasis_until(
    lines: &[DiffLine],
    shown: usize,
    deadline: Option<Instant>,
) -> Vec<Vec<(u32, u32)>> {
    let mut out = vec![Vec::new(); shown.min(lines.len())];
    let mut i = 0;
    while i < out.len() {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if lines[i].kind != DiffKind::Remove {
            i += 1;
            continue;
        }
        let run = |from: usize, kind: DiffKind| {
            let mut j = from;
            while j < lines.len()
                && matches!(lines[j].kind, k if k == kind || k == DiffKind::NoNewline)
            {
                j += 1;
            }
            j
        };
        let mid = run(i, DiffKind::Remove);
        let end = run(mid, DiffKind::Add);
        let (old, new) = (&lines[i..mid], &lines[mid..end]);
        let small = |r: &[DiffLine]| {
            let lines = r.iter().filter(|l| l.kind != DiffKind::NoNewline);
            lines.clone().count() <= EMPHASIS_RUN
                && lines.map(|l| l.text.len()).sum::<usize>() <= EMPHASIS_BYTES
        };
        if !new.is_empty() && small(old) && small(new) {
            let ranges = run_emphasis(old, new, deadline);
            let slots = (i..end).filter(|&k| lines[k].kind != DiffKind::NoNewline);
            for (k, r) in slots.zip(ranges) {
                if let Some(slot) = out.get_mut(k) {
                    *slot = r;
                }
            }
        }
        i = end;
    }
    out
}

/// The text a run of diff lines came from: each line with its newline, but for one followed
/// by the "no newline" mark or ended by a lone `\r`.
fn run_text(run: &[DiffLine]) -> String {
    let mut text = String::new();
    for (k, l) in run.iter().enumerate() {
        if l.kind == DiffKind::NoNewline {
            continue;
        }
        text.push_str(&l.text);
        if !l.bare_cr && run.get(k + 1).is_none_or(|n| n.kind != DiffKind::NoNewline) {
            text.push('\n');
        }
    }
    text
}

/// Word ranges of each removed, then each added, line of one replace.
fn run_emphasis(
    old: &[DiffLine],
    new: &[DiffLine],
    deadline: Option<Instant>,
) -> Vec<Vec<(u32, u32)>> {
    let (old, new) = (run_text(old), run_text(new));
    // Only the line slices are used (the op below spans them all): a deadline already past
    // keeps the line diff `TextDiff` runs on construction from costing anything.
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .deadline(Instant::now())
        .diff_lines(&old, &new);
    let op = similar::DiffOp::Replace {
        old_index: 0,
        old_len: diff.old_slices().len(),
        new_index: 0,
        new_len: diff.new_slices().len(),
    };
    diff.iter_inline_changes_deadline(&op, deadline)
        .map(|change| line_emphasis(&change).1)
        .collect()
}

/// One line of `similar`'s inline changes: its text (no newline) and its changed words as
/// char ranges, dropped when no word of the line stayed the same (the colour says it all).
fn line_emphasis(change: &similar::InlineChange<'_, str>) -> (String, Vec<(u32, u32)>) {
    let mut text = String::new();
    let mut emph: Vec<(u32, u32)> = Vec::new();
    let mut pos = 0u32;
    for (em, value) in change.iter_strings_lossy() {
        let value = value.strip_suffix('\n').unwrap_or(&value);
        let n = value.chars().count() as u32;
        if em && n > 0 && change.tag() != ChangeTag::Equal {
            match emph.last_mut() {
                Some(last) if last.1 == pos => last.1 = pos + n,
                _ => emph.push((pos, pos + n)),
            }
        }
        text.push_str(value);
        pos += n;
    }
    let mut ranges = emph.iter().peekable();
    let kept_a_word = text.chars().enumerate().any(|(i, c)| {
        while ranges.next_if(|&&(_, b)| b as usize <= i).is_some() {}
        let inside = ranges.peek().is_some_and(|&&(a, _)| a as usize <= i);
        !c.is_whitespace() && !inside
    });
    if !kept_a_word {
        emph.clear();
    }
    (text, emph)
}

impl Diff {
    /// The diff as plain `diff -u` text, ending in a newline: `patch` applies it.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for l in &self.lines {
            let sign = match l.kind {
                DiffKind::Add => "+",
                DiffKind::Remove => "-",
                DiffKind::Context => " ",
                DiffKind::Header | DiffKind::Hunk | DiffKind::NoNewline => "",
            };
            out.push_str(sign);
            out.push_str(&l.text);
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(d: &Diff) -> Vec<String> {
        d.to_text().lines().map(str::to_string).collect()
    }

    #[test]
    fn small_edit() {
        let d = Diff::unified("f.rs", "a\nb\nc\n", "a\nB\nc\n", 3);
        assert_eq!(
            render(&d),
            vec![
                "--- a/f.rs",
                "+++ b/f.rs",
                "@@ -1,3 +1,3 @@",
                " a",
                "-b",
                "+B",
                " c"
            ]
        );
        assert_eq!((d.added, d.removed), (1, 1));
    }

    #[test]
    fn new_file_header_is_diff_u() {
        let d = Diff::unified("n.txt", "", "x\ny\n", 3);
        assert_eq!(render(&d)[2..], ["@@ -0,0 +1,2 @@", "+x", "+y"]);
        let d = Diff::unified("n.txt", "a\n", "b\n", 3);
        assert_eq!(render(&d)[2..], ["@@ -1 +1 @@", "-a", "+b"]);
    }

    #[test]
    fn missing_newline_is_marked() {
        let d = Diff::unified("f", "a\nb", "a\nc", 3);
        assert_eq!(
            render(&d)[2..],
            ["@@ -1,2 +1,2 @@", " a", "-b", NO_NEWLINE, "+c", NO_NEWLINE]
        );
    }

    #[test]
    fn a_control_character_in_the_path_is_shown_in_the_header() {
        let d = Diff::unified("evil\n\n\n\n\nnotes.txt", "", "x\n", 3);
        assert_eq!(
            render(&d)[..2],
            [
                "--- a/evil^J^J^J^J^Jnotes.txt",
                "+++ b/evil^J^J^J^J^Jnotes.txt"
            ]
        );
        let d = Diff::from_edits("/tmp/a\tb\u{1b}c", &[("a".into(), "b".into())]);
        assert_eq!(d.lines[0].text, "--- /tmp/a^Ib^[c");
        // The path itself is kept exact.
        assert_eq!(d.path, "/tmp/a\tb\u{1b}c");
    }

    #[test]
    fn distant_changes_make_two_hunks() {
        let old: String = (0..20).map(|i| format!("{i}\n")).collect();
        let new: String = (0..20)
            .map(|i| match i {
                2 => "two\n".to_string(),
                17 => "seventeen\n".to_string(),
                _ => format!("{i}\n"),
            })
            .collect();
        let d = Diff::unified("f", &old, &new, 1);
        let hunks: Vec<&str> = d
            .lines
            .iter()
            .filter(|l| l.kind == DiffKind::Hunk)
            .map(|l| l.text.as_str())
            .collect();
        assert_eq!(hunks, ["@@ -2,3 +2,3 @@", "@@ -17,3 +17,3 @@"]);
    }

    #[test]
    fn changed_words_are_emphasized() {
        let d = Diff::unified(
            "f",
            "const TIMEOUT: u64 = 30;\n",
            "const TIMEOUT: u64 = 900;\n",
            3,
        );
        let emph = emphasis_until(&d.lines, d.lines.len(), None);
        let at = |kind| d.lines.iter().position(|l| l.kind == kind).unwrap();
        let part = |i: usize| {
            let (a, b) = emph[i][0];
            d.lines[i]
                .text
                .chars()
                .skip(a as usize)
                .take((b - a) as usize)
                .collect::<String>()
        };
        assert_eq!(
            (part(at(DiffKind::Remove)), part(at(DiffKind::Add))),
            ("30;".into(), "900;".into())
        );
        // A line replaced outright has no emphasis: the colour says it all.
        let d = Diff::unified("f", "alpha beta\n", "gamma delta\n", 3);
        assert!(
            emphasis_until(&d.lines, d.lines.len(), None)
                .iter()
                .all(Vec::is_empty)
        );
    }

    /// What the diff used to hold: each line's emphasis from `similar`'s inline changes of
    /// the whole diff, taken when it was made (the reference for `emphasis`).
    fn eager_emphasis(old: &str, new: &str) -> Vec<(String, Vec<(u32, u32)>)> {
        let diff = TextDiff::configure()
            .algorithm(Algorithm::Myers)
            .diff_lines(old, new);
        let mut out = Vec::new();
        for group in diff.grouped_ops(3) {
            for op in &group {
                out.extend(diff.iter_inline_changes(op).map(|c| line_emphasis(&c)));
            }
        }
        out
    }

    /// Emphasis found when drawn is what the inline changes of the whole diff gave, line for
    /// line, on random edits of random files (changed words, lines in and out, whole blocks
    /// replaced, a last line without its newline).
    #[test]
    fn emphasis_matches_similar_inline_changes() {
        let words = [
            "let", "x", "=", "1;", "fn", "foo()", "{", "}", "return", "y", "é", "  ", "\t", "",
        ];
        let mut rng = crate::test_gen::Rng::new(0x2545_f491_4f6c_dd1d);
        // Uniform in `0..n`.
        let mut next = |n: usize| rng.range(0, n - 1);
        let mut compared = 0;
        for _ in 0..400 {
            let line = |next: &mut dyn FnMut(usize) -> usize| {
                (0..1 + next(6))
                    .map(|_| words[next(words.len())])
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let old: Vec<String> = (0..1 + next(30)).map(|_| line(&mut next)).collect();
            let mut new = old.clone();
            for _ in 0..1 + next(5) {
                let at = next(new.len() + 1);
                match next(4) {
                    0 if at < new.len() => {
                        new.remove(at);
                    }
                    1 => new.insert(at, line(&mut next)),
                    2 if at < new.len() => {
                        let mut w: Vec<&str> = new[at].split(' ').collect();
                        let k = next(w.len());
                        w[k] = words[next(words.len())];
                        new[at] = w.join(" ");
                    }
                    _ => {
                        for k in at..(at + next(4)).min(new.len()) {
                            new[k] = line(&mut next);
                        }
                    }
                }
            }
            // `\n`, `\r\n` or lone `\r` line ends, each side its own (a lone `\r` line beside
            // a `\r\n` one is where a line's text alone cannot tell them apart).
            let ends = ["\n", "\n", "\r\n", "\r"];
            let text = |v: &[String], eol: &str, newline: bool| {
                let mut t = v.join(eol);
                if newline {
                    t.push_str(eol);
                }
                t
            };
            let (old_eol, new_eol) = (ends[next(4)], ends[next(4)]);
            let old = text(&old, old_eol, next(4) > 0);
            let new = text(&new, new_eol, next(4) > 0);
            let d = Diff::unified("f", &old, &new, 3);
            let lazy = emphasis_until(&d.lines, d.lines.len(), None);
            // A collapsed view finds the same words for the lines it shows.
            let shown = next(d.lines.len() + 1);
            assert_eq!(emphasis_until(&d.lines, shown, None), lazy[..shown]);
            let shown: Vec<(String, Vec<(u32, u32)>)> = d
                .lines
                .iter()
                .zip(lazy)
                .filter(|(l, _)| {
                    matches!(l.kind, DiffKind::Context | DiffKind::Add | DiffKind::Remove)
                })
                .map(|(l, e)| (l.text.clone(), e))
                .collect();
            let eager = eager_emphasis(&old, &new);
            assert_eq!(shown, eager, "old {old:?} new {new:?}");
            compared += eager.iter().filter(|(_, e)| !e.is_empty()).count();
        }
        // The reviewer's case: a lone `\r` line replaced by a `\r\n` one.
        let (old, new) = ("k aa\r", "k\tbb\r\n");
        let d = Diff::unified("f", old, new, 3);
        let lazy: Vec<_> = emphasis_until(&d.lines, d.lines.len(), None)
            .into_iter()
            .zip(&d.lines)
            .filter(|(_, l)| matches!(l.kind, DiffKind::Add | DiffKind::Remove))
            .map(|(e, l)| (l.text.clone(), e))
            .collect();
        assert_eq!(lazy, eager_emphasis(old, new));
        // The random edits do change words inside kept lines.
        assert!(compared > 100, "{compared}");
    }

    /// A collapsed diff finds the words of the runs it shows, whole, and nothing past them;
    /// a run longer than `EMPHASIS_RUN`, or larger than `EMPHASIS_BYTES`, is left to its
    /// colours.
    #[test]
    fn emphasis_covers_what_is_shown() {
        let old: String = (0..40).map(|i| format!("value {i} = old\n")).collect();
        let new: String = (0..40).map(|i| format!("value {i} = new\n")).collect();
        let d = Diff::unified("f", &old, &new, 3);
        let all = emphasis_until(&d.lines, d.lines.len(), None);
        let some = emphasis_until(&d.lines, 5, None);
        assert_eq!(some.len(), 5);
        assert_eq!(some[..], all[..5]);
        assert!(all.iter().filter(|e| !e.is_empty()).count() == 80);
        // One line of more than `EMPHASIS_BYTES` (an agent's megabyte line) is not searched.
        let long = "word ".repeat(EMPHASIS_BYTES / 5 + 1);
        let d = Diff::unified("f", &format!("{long}old\n"), &format!("{long}new\n"), 3);
        assert!(
            emphasis_until(&d.lines, d.lines.len(), None)
                .iter()
                .all(Vec::is_empty)
        );
        let short = "word ".repeat(100);
        let d = Diff::unified("f", &format!("{short}old\n"), &format!("{short}new\n"), 3);
        assert!(
            emphasis_until(&d.lines, d.lines.len(), None)
                .iter()
                .any(|e| !e.is_empty())
        );
        let n = EMPHASIS_RUN + 1;
        let old: String = (0..n).map(|i| format!("value {i} = old\n")).collect();
        let new: String = (0..n).map(|i| format!("value {i} = new\n")).collect();
        let d = Diff::unified("f", &old, &new, 3);
        assert!(
            emphasis_until(&d.lines, d.lines.len(), None)
                .iter()
                .all(Vec::is_empty)
        );
    }

    /// A large file with one changed line: one small hunk, not a full replacement, quickly.
    #[test]
    fn large_files_have_no_full_replace_cliff() {
        let old: String = (0..60_000).map(|i| format!("line {i}\n")).collect();
        let new = old.replace("line 30000\n", "line thirty thousand\n");
        let t = Instant::now();
        let d = Diff::unified("big", &old, &new, 3);
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert_eq!((d.added, d.removed), (1, 1));
        assert_eq!(d.lines[2].text, "@@ -29998,7 +29998,7 @@");
        // Two unrelated texts of 3000 lines each (9 million cell LCS before): still a diff,
        // still bounded in time.
        let a: String = (0..3000).map(|i| format!("a{i}\n")).collect();
        let b: String = (0..3000).map(|i| format!("b{}\n", i * 7)).collect();
        let t = Instant::now();
        let d = Diff::unified("x", &a, &b, 3);
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert_eq!((d.added, d.removed), (3000, 3000));
    }

    /// `patch` applied to the old text and the copied diff gives the new text.
    fn patched(old: &str, diff: &Diff) -> String {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("sb-diff-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (orig, out, p) = (dir.join("orig"), dir.join("out"), dir.join("d.patch"));
        std::fs::write(&orig, old).unwrap();
        std::fs::write(&p, diff.to_text()).unwrap();
        let o = std::process::Command::new("patch")
            .arg("-s")
            .arg("-o")
            .arg(&out)
            .arg(&orig)
            .arg(&p)
            .output()
            .expect("`patch` is installed");
        assert!(
            o.status.success(),
            "patch failed: {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            diff.to_text()
        );
        let text = std::fs::read_to_string(&out).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        text
    }

    #[test]
    fn copied_diffs_apply_with_patch() {
        let mid: String = (0..40).map(|i| format!("line {i}\n")).collect();
        let cases: Vec<(&str, String, String)> = vec![
            ("new file", String::new(), "x\ny\n".into()),
            ("one word", "a b c\n".into(), "a B c\n".into()),
            ("no final newline", "a\nb".into(), "a\nc".into()),
            ("gains a final newline", "a\nb".into(), "a\nb\n".into()),
            (
                "two hunks",
                mid.clone(),
                mid.replace("line 3\n", "three\n")
                    .replace("line 30\n", "thirty\nmore\n"),
            ),
            ("crlf", "a\r\nb\r\n".into(), "a\r\nB\r\n".into()),
            ("emptied", "gone\n".into(), String::new()),
        ];
        for (name, old, new) in &cases {
            let d = Diff::unified("f.txt", old, new, 3);
            assert_eq!(&patched(old, &d), new, "{name}:\n{}", d.to_text());
        }
        // An Edit shown against its file applies to that file.
        let edit = Edit {
            old: "line 20\nline 21\n".into(),
            new: "twenty\n".into(),
            replace_all: false,
        };
        let d = Diff::of_edits("src/f.txt", &mid, std::slice::from_ref(&edit)).unwrap();
        assert_eq!(d.lines[2].text, "@@ -18,8 +18,7 @@");
        assert_eq!(patched(&mid, &d), apply_edits(&mid, &[edit]).unwrap());
    }

    #[test]
    fn edits_apply_like_the_cli() {
        let file = "a\nb\nc\nb\n";
        let one = |old: &str, new: &str, all: bool| Edit {
            old: old.into(),
            new: new.into(),
            replace_all: all,
        };
        assert_eq!(
            apply_edits(file, &[one("c", "C", false)]).unwrap(),
            "a\nb\nC\nb\n"
        );
        assert_eq!(
            apply_edits(file, &[one("b", "B", false)]),
            None,
            "ambiguous"
        );
        assert_eq!(
            apply_edits(file, &[one("b", "B", true)]).unwrap(),
            "a\nB\nc\nB\n"
        );
        assert_eq!(apply_edits(file, &[one("zz", "B", false)]), None);
        // Overlapping occurrences: two places, so none (as the ACP write check decides).
        assert_eq!(apply_edits("aaa", &[one("aa", "x", false)]), None);
        assert_eq!(
            apply_edits("", &[one("", "new\n", false)]).unwrap(),
            "new\n"
        );
        let d = Diff::of_edits("f", file, &[one("c\n", "C\n", false)]).unwrap();
        assert_eq!(
            render(&d)[2..],
            ["@@ -1,4 +1,4 @@", " a", " b", "-c", "+C", " b"]
        );
    }
}
