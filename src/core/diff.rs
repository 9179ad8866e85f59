//! Line diffs for Edit/Write/MultiEdit inputs, rendered as unified diffs.

/// One line of a unified diff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: DiffKind,
    pub old_no: Option<u32>,
    pub new_no: Option<u32>,
    pub text: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffKind {
    Header,
    Hunk,
    Context,
    Add,
    Remove,
}

/// A unified diff of one file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diff {
    pub path: String,
    pub lines: Vec<DiffLine>,
    pub added: usize,
    pub removed: usize,
}

impl Diff {
    /// Diff `old` against `new` with `context` unchanged lines around each change.
    pub fn unified(path: &str, old: &str, new: &str, context: usize) -> Diff {
        let mut diff = Diff {
            path: path.to_string(),
            ..Diff::default()
        };
        diff.push_header();
        diff.append_hunks(old, new, context, 0);
        diff
    }

    /// Diff of several edits to one file (MultiEdit), one hunk group per edit.
    pub fn from_edits(path: &str, edits: &[(String, String)]) -> Diff {
        let mut diff = Diff {
            path: path.to_string(),
            ..Diff::default()
        };
        diff.push_header();
        for (old, new) in edits {
            diff.append_hunks(old, new, 3, 0);
        }
        diff
    }

    fn push_header(&mut self) {
        // `a/` `b/` prefixes read as relative paths; an absolute path is shown as it is.
        let (a, b) = if self.path.starts_with('/') {
            ("--- ", "+++ ")
        } else {
            ("--- a/", "+++ b/")
        };
        for (prefix, text) in [(a, &self.path), (b, &self.path)] {
            self.lines.push(DiffLine {
                kind: DiffKind::Header,
                old_no: None,
                new_no: None,
                text: format!("{prefix}{text}"),
            });
        }
    }

    fn append_hunks(&mut self, old: &str, new: &str, context: usize, base: u32) {
        let a: Vec<&str> = old.lines().collect();
        let b: Vec<&str> = new.lines().collect();
        let ops = line_ops(&a, &b);
        // Group ops into hunks: changes plus `context` lines on each side.
        let n = ops.len();
        let mut keep = vec![false; n];
        for (i, op) in ops.iter().enumerate() {
            if !matches!(op, Op::Same(..)) {
                let lo = i.saturating_sub(context);
                let hi = (i + context + 1).min(n);
                keep[lo..hi].iter_mut().for_each(|k| *k = true);
            }
        }
        let (mut ai, mut bi) = (0u32, 0u32);
        let mut i = 0;
        while i < n {
            if !keep[i] {
                if let Op::Same(..) = ops[i] {
                    ai += 1;
                    bi += 1;
                }
                i += 1;
                continue;
            }
            let start = i;
            while i < n && keep[i] {
                i += 1;
            }
            let (old_len, new_len) = ops[start..i].iter().fold((0, 0), |(o, n), op| match op {
                Op::Same(..) => (o + 1, n + 1),
                Op::Del(..) => (o + 1, n),
                Op::Add(..) => (o, n + 1),
            });
            self.lines.push(DiffLine {
                kind: DiffKind::Hunk,
                old_no: None,
                new_no: None,
                text: format!(
                    "@@ -{},{} +{},{} @@",
                    base + ai + 1,
                    old_len,
                    base + bi + 1,
                    new_len
                ),
            });
            for op in &ops[start..i] {
                let line = match *op {
                    Op::Same(x) => {
                        ai += 1;
                        bi += 1;
                        DiffLine {
                            kind: DiffKind::Context,
                            old_no: Some(base + ai),
                            new_no: Some(base + bi),
                            text: a[x].to_string(),
                        }
                    }
                    Op::Del(x) => {
                        ai += 1;
                        self.removed += 1;
                        DiffLine {
                            kind: DiffKind::Remove,
                            old_no: Some(base + ai),
                            new_no: None,
                            text: a[x].to_string(),
                        }
                    }
                    Op::Add(y) => {
                        bi += 1;
                        self.added += 1;
                        DiffLine {
                            kind: DiffKind::Add,
                            old_no: None,
                            new_no: Some(base + bi),
                            text: b[y].to_string(),
                        }
                    }
                };
                self.lines.push(line);
            }
        }
    }
}

impl Diff {
    /// The diff as plain `diff -u` text.
    pub fn to_text(&self) -> String {
        self.lines
            .iter()
            .map(|l| {
                let sign = match l.kind {
                    DiffKind::Add => "+",
                    DiffKind::Remove => "-",
                    DiffKind::Context => " ",
                    DiffKind::Header | DiffKind::Hunk => "",
                };
                format!("{sign}{}", l.text)
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Same(usize),
    Del(usize),
    Add(usize),
}

/// Longest-common-subsequence line alignment. Inputs past a size cap are treated as a full
/// replacement so a huge Write never stalls the UI.
fn line_ops(a: &[&str], b: &[&str]) -> Vec<Op> {
    // Trim the common prefix and suffix first: edits are usually small.
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let mut ops: Vec<Op> = (0..prefix).map(Op::Same).collect();
    if am.len().saturating_mul(bm.len()) > 4_000_000 {
        ops.extend((0..am.len()).map(|i| Op::Del(prefix + i)));
        ops.extend((0..bm.len()).map(|j| Op::Add(prefix + j)));
    } else {
        let (n, m) = (am.len(), bm.len());
        let mut dp = vec![0u32; (n + 1) * (m + 1)];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                dp[i * (m + 1) + j] = if am[i] == bm[j] {
                    dp[(i + 1) * (m + 1) + j + 1] + 1
                } else {
                    dp[(i + 1) * (m + 1) + j].max(dp[i * (m + 1) + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && am[i] == bm[j] {
                ops.push(Op::Same(prefix + i));
                i += 1;
                j += 1;
            } else if i < n && (j == m || dp[(i + 1) * (m + 1) + j] >= dp[i * (m + 1) + j + 1]) {
                // Deletions first, as `diff -u` prints them.
                ops.push(Op::Del(prefix + i));
                i += 1;
            } else {
                ops.push(Op::Add(prefix + j));
                j += 1;
            }
        }
    }
    let a0 = a.len() - suffix;
    ops.extend((0..suffix).map(|k| Op::Same(a0 + k)));
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(d: &Diff) -> Vec<String> {
        d.lines
            .iter()
            .map(|l| {
                let p = match l.kind {
                    DiffKind::Add => "+",
                    DiffKind::Remove => "-",
                    DiffKind::Context => " ",
                    _ => "",
                };
                format!("{p}{}", l.text)
            })
            .collect()
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
    fn new_file() {
        let d = Diff::unified("n.txt", "", "x\ny\n", 3);
        assert_eq!(render(&d)[2..], ["@@ -1,0 +1,2 @@", "+x", "+y"]);
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
        let hunks = d.lines.iter().filter(|l| l.kind == DiffKind::Hunk).count();
        assert_eq!(hunks, 2);
    }
}
