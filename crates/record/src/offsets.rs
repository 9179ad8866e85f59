//! The index of a recording on disk in four bytes a frame: each entry's byte offset as a
//! distance from the start of its block of 64, and its file line as the few places where the
//! line number stops being the frame number plus the header (blank lines). Eight bytes for the
//! offset and four for the line, each in a vector grown by doubling, came to as much as 24
//! bytes a frame.

use std::collections::HashMap;

const BLOCK: usize = 64;

/// Byte offsets, appended in increasing order.
#[derive(Debug, Default)]
pub struct Offsets {
    /// The offset of every `BLOCK`-th entry.
    base: Vec<u64>,
    /// Every entry's distance from its block's base (`u32::MAX`: see `far`).
    rel: Vec<u32>,
    /// Distances that do not fit in 32 bits (a block holding a line of gigabytes).
    far: HashMap<usize, u64>,
}

impl Offsets {
    pub fn push(&mut self, offset: u64) {
        let i = self.rel.len();
        if i.is_multiple_of(BLOCK) {
            self.base.push(offset);
        }
        let d = offset - self.base[i / BLOCK];
        match u32::try_from(d) {
            Ok(d) if d != u32::MAX => self.rel.push(d),
            _ => {
                self.far.insert(i, d);
                self.rel.push(u32::MAX);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.rel.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rel.is_empty()
    }

    pub fn get(&self, i: usize) -> u64 {
        let d = match self.rel[i] {
            u32::MAX => self.far[&i],
            d => d as u64,
        };
        self.base[i / BLOCK] + d
    }

    /// Give back the room doubling left (the index lives as long as the replay).
    pub fn shrink_to_fit(&mut self) {
        self.base.shrink_to_fit();
        self.rel.shrink_to_fit();
    }
}

/// The 1-based file line of each entry, appended in order: the entry's number plus a skip
/// that grows only where blank lines were passed over.
#[derive(Debug, Default)]
pub struct LineNumbers {
    /// (first entry, its line minus its index), where that difference changes.
    steps: Vec<(usize, u64)>,
    len: usize,
}

impl LineNumbers {
    pub fn push(&mut self, line: u64) {
        let i = self.len;
        let skip = line - i as u64;
        if self.steps.last().is_none_or(|&(_, s)| s != skip) {
            self.steps.push((i, skip));
        }
        self.len += 1;
    }

    pub fn get(&self, i: usize) -> u64 {
        let at = self.steps.partition_point(|&(from, _)| from <= i);
        i as u64 + self.steps[at - 1].1
    }

    pub fn shrink_to_fit(&mut self) {
        self.steps.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_and_lines_read_back_as_pushed() {
        let mut o = Offsets::default();
        let mut l = LineNumbers::default();
        let mut want = Vec::new();
        let (mut at, mut line) = (100u64, 2u64);
        for i in 0..1000u64 {
            // Long lines now and then, one past 4 GiB from its block's base.
            at += match i {
                300 => 5 << 30,
                _ if i % 97 == 0 => 70_000,
                _ => 1 + i % 13,
            };
            line += 1 + u64::from(i % 50 == 7) * 3;
            o.push(at);
            l.push(line);
            want.push((at, line));
        }
        o.shrink_to_fit();
        l.shrink_to_fit();
        assert_eq!(o.len(), 1000);
        assert!(!o.far.is_empty());
        for (i, &(a, n)) in want.iter().enumerate() {
            assert_eq!((o.get(i), l.get(i)), (a, n), "entry {i}");
        }
    }
}
