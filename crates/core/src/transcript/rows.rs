//! A transcript's rows in shared chunks: copying a transcript (a replay checkpoint, a copy
//! made for stepping back) copies one pointer per chunk, and a copy pays only for the chunks
//! it changes afterwards (`Arc::make_mut`), which for an append-mostly transcript are its last
//! one or two. Deep copies made the replay's checkpoints cost several times the file.
//!
//! Chunks behind the last two are packed: their rows keep their shape, and every string they
//! hold (the text, the arguments; not the lines of an edit's diff, which stay as they are) is
//! moved into one block, compressed with LZ4 when that is smaller (`packed.rs`). A long
//! session's transcript is mostly text nobody is looking at: packed, the text of a day-long
//! iii recording takes a quarter of its room, where it had been more than half of the
//! replay's memory. Reading a packed row unpacks its chunk once, into a slot of this copy that
//! the next change empties (a frame reads the chunks on screen; the reducer changes the rows
//! at the tail). Changing a packed row opens its chunk again; it is packed again when the
//! next chunk starts.

use std::ops::{ControlFlow, Index};
use std::sync::{Arc, Mutex, OnceLock};

use super::Item;
use super::packed::Packed;

/// Rows per chunk: small enough that changing a row copies little, large enough that the
/// pointer table stays a fraction of the rows. Each replay checkpoint makes every live
/// transcript copy its last chunk whole, strings and all, on its next row: at 256 rows those
/// copies held a twentieth of a long iii replay's memory.
const CHUNK: usize = 64;

/// Chunks at the tail left unpacked: the rows a stream, a revision or a tool's result changes
/// next are almost always there (a call's result follows it within a few dozen rows).
const OPEN_TAIL: usize = 2;

#[derive(Clone, Debug)]
enum Chunk {
    Open(Vec<Item>),
    Packed(Packed),
}

#[derive(Debug, Default)]
pub struct Rows {
    chunks: Vec<Arc<Chunk>>,
    len: usize,
    /// One slot per chunk: a packed chunk unpacked by a read, until the next change.
    unpacked: Vec<OnceLock<Box<[Item]>>>,
    /// The slots filled since the last change (emptied by it).
    filled: Mutex<Vec<usize>>,
    /// Chunks behind the open tail that a change opened: packed again when a chunk starts.
    reopened: Vec<usize>,
}

impl Clone for Rows {
    /// The chunks are shared; the unpacked slots are this copy's own and start empty.
    fn clone(&self) -> Self {
        Rows {
            chunks: self.chunks.clone(),
            len: self.len,
            unpacked: self.chunks.iter().map(|_| OnceLock::new()).collect(),
            filled: Mutex::default(),
            reopened: self.reopened.clone(),
        }
    }
}

impl Rows {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, i: usize) -> Option<&Item> {
        if i >= self.len {
            return None;
        }
        let c = i / CHUNK;
        match &*self.chunks[c] {
            Chunk::Open(rows) => Some(&rows[i % CHUNK]),
            Chunk::Packed(p) => {
                let rows = self.unpacked[c].get_or_init(|| {
                    self.filled
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(c);
                    p.unpack().into_boxed_slice()
                });
                Some(&rows[i % CHUNK])
            }
        }
    }

    /// Rows `from..to` (clamped) in order to `f` until it breaks, keeping nothing unpacked:
    /// a packed chunk is unpacked for the call and dropped after (or read from its slot if a
    /// read filled it). For reads of a whole transcript (a search, the height index, an
    /// export): through `get` they would keep every chunk unpacked until the next change,
    /// which for a finished sub-agent or a paused replay never comes.
    pub fn scan(&self, from: usize, to: usize, mut f: impl FnMut(usize, &Item) -> ControlFlow<()>) {
        let to = to.min(self.len);
        let mut i = from;
        while i < to {
            let c = i / CHUNK;
            let end = ((c + 1) * CHUNK).min(to);
            let owned;
            let rows: &[Item] = match (&*self.chunks[c], self.unpacked[c].get()) {
                (Chunk::Open(rows), _) => rows,
                (Chunk::Packed(_), Some(rows)) => rows,
                (Chunk::Packed(p), None) => {
                    owned = p.unpack();
                    &owned
                }
            };
            for (k, item) in rows[i % CHUNK..end - c * CHUNK].iter().enumerate() {
                if f(i + k, item).is_break() {
                    return;
                }
            }
            i = end;
        }
    }

    /// Packed chunks whose text is kept as it was though compressing it would pay (left
    /// by a thread that deferred it and never handed over, or handed over and never run).
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn uncompressed_chunks(&self) -> usize {
        self.chunks
            .iter()
            .filter(|c| matches!(&***c, Chunk::Packed(p) if p.left_uncompressed()))
            .count()
    }

    /// Whether row `i` is in a packed chunk.
    #[cfg(test)]
    pub(crate) fn is_packed(&self, i: usize) -> bool {
        matches!(*self.chunks[i / CHUNK], Chunk::Packed(_))
    }

    /// Drop the chunks reads unpacked (a change makes them stale, and they are room).
    fn forget_unpacked(&mut self) {
        let filled = self.filled.get_mut().unwrap_or_else(|e| e.into_inner());
        for c in filled.drain(..) {
            self.unpacked[c].take();
        }
    }

    /// Row `i` to change: a packed chunk is opened, and a chunk another transcript shares is
    /// copied first.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut Item> {
        if i >= self.len {
            return None;
        }
        let c = i / CHUNK;
        if let Chunk::Packed(p) = &*self.chunks[c] {
            // A read may have unpacked it already.
            let rows = match self.unpacked[c].take() {
                Some(rows) => rows.into_vec(),
                None => p.unpack(),
            };
            self.chunks[c] = Arc::new(Chunk::Open(rows));
            self.reopened.push(c);
        }
        self.forget_unpacked();
        match Arc::make_mut(&mut self.chunks[c]) {
            Chunk::Open(rows) => Some(&mut rows[i % CHUNK]),
            Chunk::Packed(_) => unreachable!("opened above"),
        }
    }

    /// Pack chunk `c` if it is open (a shared chunk is packed from a copy: the other
    /// transcript keeps its own).
    fn pack(&mut self, c: usize) {
        let slot = &mut self.chunks[c];
        if matches!(**slot, Chunk::Packed(_)) {
            return;
        }
        let chunk = std::mem::replace(slot, Arc::new(Chunk::Open(Vec::new())));
        let rows = match Arc::unwrap_or_clone(chunk) {
            Chunk::Open(rows) => rows,
            Chunk::Packed(_) => unreachable!("checked above"),
        };
        *slot = Arc::new(Chunk::Packed(Packed::new(rows)));
    }

    pub fn push(&mut self, item: Item) {
        self.forget_unpacked();
        if self.len.is_multiple_of(CHUNK) {
            // The chunk leaving the open tail is packed, and so is any opened behind it.
            let leaving = self.chunks.len().checked_sub(OPEN_TAIL);
            let mut again = std::mem::take(&mut self.reopened);
            again.extend(leaving);
            for c in again.drain(..) {
                if c + OPEN_TAIL > self.chunks.len() {
                    // Still in the open tail after this push: packed later.
                    self.reopened.push(c);
                } else {
                    self.pack(c);
                }
            }
            // Grown as it fills: a sub-agent's transcript of three rows must not hold room
            // for a whole chunk.
            self.chunks.push(Arc::new(Chunk::Open(Vec::new())));
            self.unpacked.push(OnceLock::new());
        }
        let last = self.chunks.last_mut().expect("a chunk with room");
        match Arc::make_mut(last) {
            Chunk::Open(rows) => rows.push(item),
            Chunk::Packed(_) => unreachable!("the last chunk is never packed"),
        }
        self.len += 1;
    }

    pub fn last(&self) -> Option<&Item> {
        self.len.checked_sub(1).and_then(|i| self.get(i))
    }

    pub fn iter(&self) -> Iter<'_> {
        self.range(0, self.len)
    }

    /// Rows `from..to` (clamped to the rows there are).
    pub fn range(&self, from: usize, to: usize) -> Iter<'_> {
        let back = to.min(self.len);
        Iter {
            rows: self,
            front: from.min(back),
            back,
        }
    }
}

impl Index<usize> for Rows {
    type Output = Item;
    fn index(&self, i: usize) -> &Item {
        self.get(i).expect("row index in range")
    }
}

impl<'a> IntoIterator for &'a Rows {
    type Item = &'a Item;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// Rows in order, from either end.
pub struct Iter<'a> {
    rows: &'a Rows,
    front: usize,
    back: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a Item;
    fn next(&mut self) -> Option<&'a Item> {
        if self.front == self.back {
            return None;
        }
        self.front += 1;
        Some(&self.rows[self.front - 1])
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.back - self.front;
        (n, Some(n))
    }

    /// O(1), as a slice's: the renderer skips to the first visible row.
    fn nth(&mut self, n: usize) -> Option<&'a Item> {
        self.front = self.front.saturating_add(n).min(self.back);
        self.next()
    }

    fn count(self) -> usize {
        self.back - self.front
    }

    fn last(mut self) -> Option<&'a Item> {
        self.next_back()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.front == self.back {
            return None;
        }
        self.back -= 1;
        Some(&self.rows[self.back])
    }

    fn nth_back(&mut self, n: usize) -> Option<Self::Item> {
        self.back = self.back.saturating_sub(n).max(self.front);
        self.next_back()
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
#[path = "rows_tests.rs"]
mod tests;
