//! Render caches of row heights: one row's height at one width (`HeightCache`) and a
//! transcript's heights with their prefix sums (`HeightIndex`).

use std::sync::atomic::Ordering::Relaxed;

/// (width, revision, expanded, height) packed in one word: 16 bits of width, 16 of height,
/// one for expanded, one for "set", and the revision's low 30 bits (a revision that moved on
/// by a multiple of 2^30 between two frames would be taken for the same one: a billion changes
/// of one row between two frames do not happen). Relaxed loads and stores: a cache that is
/// only ever a hint about a row whose content the revision pins.
#[derive(Debug, Default)]
pub struct HeightCache(std::sync::atomic::AtomicU64);

impl Clone for HeightCache {
    fn clone(&self) -> Self {
        HeightCache(std::sync::atomic::AtomicU64::new(self.0.load(Relaxed)))
    }
}

const REV_BITS: u32 = 30;

impl HeightCache {
    fn pack(width: u16, rev: u32, expanded: bool, height: u16) -> u64 {
        let rev = (rev & ((1 << REV_BITS) - 1)) as u64;
        (width as u64) << 48 | (height as u64) << 32 | (expanded as u64) << 31 | 1 << 30 | rev
    }

    /// The height cached for exactly this width, revision and expansion.
    pub fn get(&self, width: u16, rev: u32, expanded: bool) -> Option<u16> {
        let v = self.0.load(Relaxed);
        let want = Self::pack(width, rev, expanded, 0);
        let mask = !(0xffff_u64 << 32);
        (v & mask == want).then_some((v >> 32) as u16)
    }

    pub fn set(&self, width: u16, rev: u32, expanded: bool, height: u16) {
        self.0
            .store(Self::pack(width, rev, expanded, height), Relaxed);
    }
}

/// Row heights at one width with their prefix sums in a Fenwick tree: a frame finds its first
/// visible row and a row's offset in O(log n), and a changed or appended row costs O(log n),
/// so drawing does not grow with the session. A render cache, filled by `ui`; a copy of the
/// state (a replay checkpoint) starts without one rather than copying it.
#[derive(Debug, Default)]
pub struct HeightIndex {
    width: u16,
    /// The transcript generation this index reflects.
    pub generation: u64,
    heights: Vec<u32>,
    /// 1-based Fenwick tree over `heights` (`tree[0]` unused).
    tree: Vec<u64>,
}

impl Clone for HeightIndex {
    fn clone(&self) -> Self {
        HeightIndex::default()
    }
}

impl HeightIndex {
    pub fn width(&self) -> u16 {
        self.width
    }

    /// Rows indexed so far (a prefix of the transcript).
    pub fn len(&self) -> usize {
        self.heights.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heights.is_empty()
    }

    /// Forget everything and index at `width` from row 0.
    pub fn reset(&mut self, width: u16) {
        self.width = width;
        self.generation = 0;
        self.heights.clear();
        self.tree.clear();
    }

    pub fn height(&self, i: usize) -> u32 {
        self.heights[i]
    }

    /// Sum of the heights of the first `n` rows.
    pub fn prefix(&self, n: usize) -> u64 {
        let mut i = n.min(self.heights.len());
        let mut sum = 0;
        while i > 0 {
            sum += self.tree[i];
            i &= i - 1;
        }
        sum
    }

    pub fn total(&self) -> u64 {
        self.prefix(self.heights.len())
    }

    pub fn push(&mut self, h: u32) {
        if self.tree.is_empty() {
            self.tree.push(0);
        }
        let i = self.heights.len() + 1;
        // tree[i] covers rows (i - lowbit(i), i].
        let low = i & i.wrapping_neg();
        let covered = self.prefix(i - 1) - self.prefix(i - low);
        self.heights.push(h);
        self.tree.push(covered + h as u64);
    }

    pub fn set(&mut self, i: usize, h: u32) {
        let old = self.heights[i];
        if old == h {
            return;
        }
        self.heights[i] = h;
        let mut k = i + 1;
        while k < self.tree.len() {
            self.tree[k] = self.tree[k] - old as u64 + h as u64;
            k += k & k.wrapping_neg();
        }
    }

    /// The row holding line `y` (counted from the top), or `len()` past the end.
    pub fn find(&self, y: u64) -> usize {
        let n = self.heights.len();
        let mut pos = 0;
        let mut rem = y;
        let mut step = if n == 0 {
            0
        } else {
            1 << (usize::BITS - 1 - n.leading_zeros())
        };
        while step > 0 {
            let next = pos + step;
            if next <= n && self.tree[next] <= rem {
                pos = next;
                rem -= self.tree[next];
            }
            step >>= 1;
        }
        pos
    }
}
