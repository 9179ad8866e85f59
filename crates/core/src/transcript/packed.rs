//! A packed chunk of transcript rows: the rows with their strings moved out into one block,
//! compressed with LZ4 when that saves an eighth or more (see `rows.rs` for when a chunk is
//! packed).
//!
//! Compressing is most of packing's cost, and a replay's background pass, which packs as it
//! goes, is the slower of its two threads (an iii replay spent a tenth of it in LZ4 while its
//! reader thread idled a sixth of the time). So a thread may leave the compression of what
//! it packs to another (`defer_compression`): the block is kept as it is and handed over
//! (`take_deferred`), and whoever runs it compresses it in place, for every transcript that
//! shares the chunk. Reads see the same strings either way; only the room differs.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use super::Item;

/// Strings shorter than this in all are stored as they are: LZ4 gains nothing on a few words.
const COMPRESS_FROM: usize = 256;

/// Scratch buffers larger than this are given back after a chunk instead of kept.
const SCRATCH_KEEP: usize = 4 << 20;

thread_local! {
    /// The strings end to end, and LZ4's output: kept from one chunk to the next on this
    /// thread (a fresh output buffer is zeroed whole by the safe encoder first).
    static SCRATCH: RefCell<(Vec<u8>, Vec<u8>)> = const { RefCell::new((Vec::new(), Vec::new())) };
    /// Blocks packed on this thread whose compression is left to another (`Some` while
    /// deferring). Weak: a chunk opened again or a transcript dropped meanwhile is not
    /// kept alive, nor compressed, for it.
    static DEFERRED: RefCell<Option<Vec<Weak<Block>>>> = const { RefCell::new(None) };
}

/// A chunk's rows with their strings moved out into one block.
#[derive(Clone, Debug)]
pub(super) struct Packed {
    /// The rows, every string emptied.
    pub(super) rows: Box<[Item]>,
    /// Each string's length in bytes, in the order `ItemKind::strings_mut` visits them.
    pub(super) lens: Box<[usize]>,
    /// The strings' bytes one after another; shared by the copies of the chunk.
    pub(super) text: Arc<Block>,
}

/// The strings of a packed chunk: as they were until compressed (once, in place). The lock
/// is held only to look or to swap: compressing and reading work on a shared copy of the
/// bytes, so a frame reading the chunk never waits out a compression on another thread.
#[derive(Debug)]
pub struct Block(Mutex<Text>);

#[derive(Clone, Debug)]
pub(super) enum Text {
    Raw(Arc<[u8]>),
    Lz4 { bytes: Arc<[u8]>, raw_len: usize },
}

impl Block {
    fn new(text: Text) -> Arc<Block> {
        Arc::new(Block(Mutex::new(text)))
    }

    /// The bytes as they stand (a copy of the pointer, not of the bytes).
    fn text(&self) -> Text {
        // Only a clone or a swap is done under the lock: it cannot be poisoned halfway.
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, Text> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Compress the block if it is not yet and that saves an eighth or more.
    fn compress(&self) {
        let Text::Raw(raw) = self.text() else {
            return;
        };
        let Some(bytes) = SCRATCH.with_borrow_mut(|(_, out)| lz4(&raw, out)) else {
            return;
        };
        let mut text = self.lock();
        // Only this block's own bytes are replaced (each block is handed over once).
        if matches!(&*text, Text::Raw(r) if Arc::ptr_eq(r, &raw)) {
            *text = Text::Lz4 {
                bytes: bytes.into(),
                raw_len: raw.len(),
            };
        }
    }

    /// Whether the block is kept as it was though compressing it would pay.
    #[cfg(any(test, feature = "test-hooks"))]
    fn left_uncompressed(&self) -> bool {
        match self.text() {
            Text::Raw(raw) => {
                let mut out = Vec::new();
                lz4(&raw, &mut out).is_some()
            }
            Text::Lz4 { .. } => false,
        }
    }

    /// (compressed, bytes stored, bytes of the strings).
    #[cfg(test)]
    pub(super) fn stored(&self) -> (bool, usize, usize) {
        match self.text() {
            Text::Raw(raw) => (false, raw.len(), raw.len()),
            Text::Lz4 { bytes, raw_len } => (true, bytes.len(), raw_len),
        }
    }
}

/// `raw` compressed into a block of its own when that saves an eighth or more, through the
/// scratch `out`.
fn lz4(raw: &[u8], out: &mut Vec<u8>) -> Option<Box<[u8]>> {
    if raw.len() < COMPRESS_FROM {
        return None;
    }
    let max = lz4_flex::block::get_maximum_output_size(raw.len());
    if out.len() < max {
        out.resize(max, 0);
    }
    let n = lz4_flex::block::compress_into(raw, out).expect("room for the worst case");
    let block = (n < raw.len() - raw.len() / 8).then(|| out[..n].into());
    if out.capacity() > SCRATCH_KEEP {
        *out = Vec::new();
    }
    block
}

impl Packed {
    /// Pack `rows` (whose strings are taken), compressed now unless this thread defers it.
    pub(super) fn new(mut rows: Vec<Item>) -> Packed {
        SCRATCH.with_borrow_mut(|(raw, out)| {
            raw.clear();
            let mut lens = Vec::new();
            for r in &mut rows {
                r.kind.strings_mut(&mut |s| {
                    lens.push(s.len());
                    raw.extend_from_slice(s.as_bytes());
                    *s = String::new();
                });
            }
            let text = DEFERRED.with_borrow_mut(|deferred| match deferred {
                Some(list) => {
                    let block = Block::new(Text::Raw(raw.as_slice().into()));
                    // Nothing to do for a block too short to compress.
                    if raw.len() >= COMPRESS_FROM {
                        list.push(Arc::downgrade(&block));
                    }
                    block
                }
                None => Block::new(match lz4(raw, out) {
                    Some(bytes) => Text::Lz4 {
                        bytes: bytes.into(),
                        raw_len: raw.len(),
                    },
                    None => Text::Raw(raw.as_slice().into()),
                }),
            });
            // A long chunk's scratch is not kept for the next (the text is bounded per row,
            // not per chunk).
            if raw.capacity() > SCRATCH_KEEP {
                *raw = Vec::new();
            }
            Packed {
                rows: rows.into_boxed_slice(),
                lens: lens.into_boxed_slice(),
                text,
            }
        })
    }

    /// The rows whole again.
    pub(super) fn unpack(&self) -> Vec<Item> {
        let owned;
        let text = self.text.text();
        let bytes: &[u8] = match &text {
            Text::Raw(raw) => raw,
            Text::Lz4 { bytes, raw_len } => {
                owned = lz4_flex::block::decompress(bytes, *raw_len)
                    .expect("a block this chunk compressed itself");
                &owned
            }
        };
        // The block is the strings end to end: valid UTF-8 as a whole, cut at their ends.
        let text = std::str::from_utf8(bytes).expect("strings packed whole");
        let mut rows = self.rows.to_vec();
        let (mut at, mut n) = (0, 0);
        for r in &mut rows {
            r.kind.strings_mut(&mut |s| {
                let len = self.lens[n];
                *s = text[at..at + len].to_string();
                at += len;
                n += 1;
            });
        }
        rows
    }

    /// Whether the block is kept as it was though compressing it would pay.
    #[cfg(any(test, feature = "test-hooks"))]
    pub(super) fn left_uncompressed(&self) -> bool {
        self.text.left_uncompressed()
    }
}

/// Blocks packed on a deferring thread, to compress on another (`run`).
#[derive(Debug, Default)]
#[must_use = "blocks handed over stay uncompressed unless run"]
pub struct Deferred(Vec<Weak<Block>>);

impl Deferred {
    /// Compress every block still in use (each once, whichever thread runs it).
    pub fn run(self) {
        for b in self.0.iter().filter_map(Weak::upgrade) {
            b.compress();
        }
    }

    /// Blocks still in use (of those handed over).
    pub fn len(&self) -> usize {
        self.0.iter().filter(|b| b.strong_count() > 0).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// From now on, chunks this thread packs are compressed by whoever runs what `take_deferred`
/// hands over (`false`: compressed as they are packed again, and what was left is handed
/// over by this call's answer).
pub fn defer_compression(on: bool) -> Deferred {
    DEFERRED.with_borrow_mut(|d| {
        let left = Deferred(d.take().unwrap_or_default());
        if on {
            *d = Some(Vec::new());
        }
        left
    })
}

/// The blocks this thread packed since the last call, for another thread to compress.
pub fn take_deferred() -> Deferred {
    DEFERRED.with_borrow_mut(|d| Deferred(d.as_mut().map(std::mem::take).unwrap_or_default()))
}
