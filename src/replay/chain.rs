//! A session's recordings one after the other: the first, then each continuation a resume
//! started after a crash (the manifest's `continued`). Each part a crash cut off ends with the
//! resume's host-stopped note, so the session's timeline shows the boundary where it was.

use std::sync::Arc;

use super::load::Frame;
use super::source::FrameSource;
use crate::core::BackendKind;

pub struct Chain {
    parts: Vec<Arc<dyn FrameSource>>,
    /// The first frame of each part in the chain's numbering, and the total at the end.
    starts: Vec<usize>,
}

impl Chain {
    /// `parts` in order; all of one backend (the caller checks), at least one.
    pub fn new(parts: Vec<Arc<dyn FrameSource>>) -> Chain {
        let mut starts = Vec::with_capacity(parts.len() + 1);
        let mut n = 0;
        for p in &parts {
            starts.push(n);
            n += p.len();
        }
        starts.push(n);
        Chain { parts, starts }
    }

    /// The part frame `i` is in, and its index there.
    fn at(&self, i: usize) -> (usize, usize) {
        let k = self.starts.partition_point(|&s| s <= i).saturating_sub(1);
        (k, i - self.starts[k])
    }
}

impl FrameSource for Chain {
    fn len(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }
    fn frame(&self, i: usize) -> Frame {
        let (k, j) = self.at(i);
        self.parts[k].frame(j)
    }
    fn ts(&self, i: usize) -> Option<u64> {
        let (k, j) = self.at(i);
        self.parts[k].ts(j)
    }
    fn backend(&self) -> BackendKind {
        self.parts
            .first()
            .map_or(BackendKind::Claude, |p| p.backend())
    }
    fn start_ms(&self) -> u64 {
        self.parts
            .iter()
            .find(|p| !p.is_empty())
            .map_or(0, |p| p.start_ms())
    }
    fn scan(&self, from: usize, to: usize, f: &mut dyn FnMut(usize, &mut Frame)) {
        let to = to.min(self.len());
        for (k, p) in self.parts.iter().enumerate() {
            let (a, b) = (self.starts[k], self.starts[k + 1]);
            if b <= from || a >= to {
                continue;
            }
            let (lo, hi) = (from.max(a) - a, to.min(b) - a);
            p.scan(lo, hi, &mut |j, fr| f(a + j, fr));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Dir;
    use crate::replay::load::{Format, Loaded};

    fn part(ts: &[u64]) -> Arc<dyn FrameSource> {
        Arc::new(Loaded {
            format: Format::Recording,
            backend: BackendKind::Acp,
            header: None,
            frames: ts
                .iter()
                .enumerate()
                .map(|(i, t)| Frame {
                    src_line: i + 2,
                    ts: Some(*t),
                    dir: Dir::In,
                    text: format!("{t}"),
                })
                .collect(),
        })
    }

    #[test]
    fn parts_read_as_one_recording_in_order() {
        let c = Chain::new(vec![part(&[1, 2]), part(&[]), part(&[5, 6, 7])]);
        assert_eq!(c.len(), 5);
        assert_eq!(c.backend(), BackendKind::Acp);
        assert_eq!(c.start_ms(), 1);
        let all: Vec<u64> = (0..5).map(|i| c.ts(i).unwrap()).collect();
        assert_eq!(all, [1, 2, 5, 6, 7]);
        assert_eq!(c.frame(3).text, "6");
        let mut seen = Vec::new();
        c.scan(1, 4, &mut |i, f| seen.push((i, f.text.clone())));
        assert_eq!(
            seen,
            [(1, "2".to_string()), (2, "5".into()), (3, "6".into())]
        );
    }
}
