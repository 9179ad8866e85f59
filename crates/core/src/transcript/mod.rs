//! Per-node transcript: an append-only list of compact typed items.
//!
//! The rows themselves are in `item.rs`, the render caches of their heights in `height.rs`.

#[cfg(any(test, feature = "test-hooks"))]
use std::cell::Cell;
use std::cell::RefCell;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};

pub mod packed;
pub mod rows;

use rows::Rows;

mod height;
mod item;

pub use height::{HeightCache, HeightIndex};
pub use item::{Item, ItemKind, Level, PlanEntry, Tone};

/// What a backend asks a transcript to do.
#[derive(Clone, Debug, PartialEq)]
pub enum ItemOp {
    Push(ItemKind),
    /// Replace the item with this key, or push it if it is new.
    Upsert {
        key: String,
        kind: ItemKind,
    },
    /// Append streamed text to the keyed assistant or thinking item (created if missing).
    AppendText {
        key: String,
        thinking: bool,
        delta: String,
    },
    /// Mark every streaming item of this message as aborted/settled.
    EndStreaming {
        key_prefix: String,
        aborted: bool,
    },
}

/// How many keys a transcript remembers for `Upsert`/`AppendText`. Keys live as long as a
/// message or a tool call is being updated (a few hundred frames at most), so the oldest can
/// be forgotten: a session of days must not grow a map per message for ever. An update for a
/// forgotten key appends a fresh row, which is shown, never lost.
///
/// Every replay checkpoint copies the table (a state copy per few hundred thousand frames):
/// at 8,192 keys the tables took as much memory as the transcripts on a long recording. 2,048
/// keys still outlive any update seen in real traffic, where a call's result follows it within
/// a few dozen rows.
pub const KEY_CAP: usize = 2048;

/// How many in-place changes a transcript remembers for the renderer's height index. An index
/// further behind than that rebuilds (the log stays bounded when nothing renders, as while a
/// replay seeks).
const CHANGE_CAP: usize = 4096;

/// A new streaming row starts with room for this many bytes: a block grows by a few dozen
/// bytes a delta to a few hundred, so starting at the first delta's size meant four or five
/// reallocations a block. A row settled without a replacement gives the room back.
const STREAM_CAPACITY: usize = 512;
/// Rows streaming at once that get that room (a real stream has one or two: text, thinking,
/// sub-agents); past it a new row starts with what its first delta holds.
const STREAM_ROOMY: usize = 8;

#[cfg(any(test, feature = "test-hooks"))]
thread_local! {
    /// Key-table look-ups (hashing the key): the test that a run of deltas to one row looks
    /// its key up once.
    pub static KEY_LOOKUPS: Cell<u64> = const { Cell::new(0) };
    /// Set by the differential tests: every look-up takes the general path.
    pub static SLOW_LOOKUPS: Cell<bool> = const { Cell::new(false) };
}

/// True while a differential test wants the general paths only (never outside tests).
#[inline]
pub(crate) fn slow_lookups() -> bool {
    #[cfg(any(test, feature = "test-hooks"))]
    return SLOW_LOOKUPS.with(|c| c.get());
    #[cfg(not(any(test, feature = "test-hooks")))]
    false
}

#[derive(Clone, Debug, Default)]
pub struct Transcript {
    pub items: Rows,
    /// Key → (row, the key's number: keys are numbered from 0 as they are remembered).
    by_key: HashMap<String, (usize, u64)>,
    /// Keys in insertion order, for forgetting the oldest past `KEY_CAP`.
    key_order: VecDeque<String>,
    /// Keys forgotten so far: `key_order[0]` is key number `forgotten_keys`.
    forgotten_keys: u64,
    /// The key last looked up or remembered, as (its number, its row). Deltas come in runs to
    /// one row: comparing the key with `key_order`'s copy skips a SipHash (kept because keys
    /// come from the agent) and a probe of a table of up to `KEY_CAP` keys. Valid while the
    /// key is remembered, which its number tells (see `find`).
    recent: Option<(u64, usize)>,
    /// Rows still streaming, with their key: ending a stream looks at these only.
    streaming: Vec<(String, usize)>,
    /// Recent in-place changes, for the renderer's height index (see `changes_since`).
    changes: Changes,
    /// Render cache: row heights at one width and their prefix sums (written by `ui`).
    pub heights: RefCell<HeightIndex>,
    /// Rows examined by stream-ending scans since creation: the test of linear ingest.
    visits: u64,
}

/// The last `CHANGE_CAP` rows changed in place (appends are not listed: the index sees the
/// length), each with the generation of its latest change.
#[derive(Clone, Debug, Default)]
struct Changes {
    rows: VecDeque<(u64, usize)>,
    /// Changes up to this generation were forgotten.
    forgotten: u64,
    /// Bumped on every append or change, so a cached index can tell it is current.
    generation: u64,
}

impl Transcript {
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn push(&mut self, kind: ItemKind, at_ms: u64) -> usize {
        self.items.push(Item::new(kind, at_ms));
        self.changes.generation += 1;
        self.items.len() - 1
    }

    /// Rows examined by stream-ending scans so far (each scan looks at live rows only).
    pub fn visits(&self) -> u64 {
        self.visits
    }

    /// True while some row is still streaming.
    pub fn has_streaming(&self) -> bool {
        !self.streaming.is_empty()
    }

    /// Expand or collapse row `i` (changes its height, so the height index is told).
    pub fn set_expanded(&mut self, i: usize, expanded: bool) {
        // Looked at first: a change opens a packed chunk, and `n` asks again for a row that is
        // expanded already.
        if self.items.get(i).is_some_and(|r| r.expanded != expanded)
            && let Some(item) = self.items.get_mut(i)
        {
            item.expanded = expanded;
            self.touched(i);
        }
    }

    /// A counter that changes whenever a row is appended or changed.
    pub fn generation(&self) -> u64 {
        self.changes.generation
    }

    /// The rows changed in place after generation `since` (possibly listed twice), or `None`
    /// when some were forgotten (the caller rebuilds). Appended rows are not listed.
    pub fn changes_since(&self, since: u64) -> Option<impl Iterator<Item = usize> + '_> {
        if since < self.changes.forgotten {
            return None;
        }
        let rows = &self.changes.rows;
        let start = rows.partition_point(|(g, _)| *g <= since);
        Some(rows.range(start..).map(|(_, r)| *r))
    }

    fn touched(&mut self, i: usize) {
        let c = &mut self.changes;
        c.generation += 1;
        if let Some(last) = c.rows.back_mut()
            && last.1 == i
        {
            last.0 = c.generation;
            return;
        }
        if c.rows.len() >= CHANGE_CAP
            && let Some((g, _)) = c.rows.pop_front()
        {
            c.forgotten = g;
        }
        c.rows.push_back((c.generation, i));
    }

    /// The row `recent` names when its key is `key` (no hashing).
    fn recent_row(&self, key: &str) -> Option<usize> {
        let (n, i) = self.recent?;
        if slow_lookups() {
            return None;
        }
        let k = self
            .key_order
            .get(n.checked_sub(self.forgotten_keys)? as usize)?;
        if k != key {
            return None;
        }
        // The fast path and the table agree (every debug build and test checks it).
        debug_assert_eq!(self.by_key.get(key), Some(&(i, n)), "recent key {key}");
        Some(i)
    }

    /// The row remembered for `key` (`Ok`), or `Err` with the row the caller must push now:
    /// the key is remembered for it (one hash for the look-up and the insert), forgetting the
    /// oldest key past `KEY_CAP`. Either way `recent` names `key` afterwards.
    fn row_for(&mut self, key: String) -> Result<usize, usize> {
        if let Some(i) = self.recent_row(&key) {
            return Ok(i);
        }
        #[cfg(any(test, feature = "test-hooks"))]
        KEY_LOOKUPS.with(|c| c.set(c.get() + 1));
        let n = self.forgotten_keys + self.key_order.len() as u64;
        let i = match self.by_key.entry(key) {
            Entry::Occupied(e) => {
                let &(i, n) = e.get();
                self.recent = Some((n, i));
                return Ok(i);
            }
            Entry::Vacant(e) => {
                let i = self.items.len();
                self.key_order.push_back(e.key().clone());
                e.insert((i, n));
                i
            }
        };
        if self.key_order.len() > KEY_CAP
            && let Some(old) = self.key_order.pop_front()
        {
            self.by_key.remove(&old);
            self.forgotten_keys += 1;
        }
        self.recent = Some((n, i));
        Err(i)
    }

    /// The key `recent` names (the key of the row just looked up or made).
    fn recent_key(&self) -> &str {
        self.recent
            .and_then(|(n, _)| n.checked_sub(self.forgotten_keys))
            .and_then(|p| self.key_order.get(p as usize))
            .map_or("", String::as_str)
    }

    /// Keep the live list in step with row `i`'s streaming flag (`i` is the row of the
    /// recent key).
    fn track_streaming(&mut self, i: usize) {
        let live = matches!(
            self.items[i].kind,
            ItemKind::Assistant {
                streaming: true,
                ..
            } | ItemKind::Thinking {
                streaming: true,
                ..
            }
        );
        let pos = self.streaming.iter().position(|(_, j)| *j == i);
        match (live, pos) {
            (true, None) => {
                let key = self.recent_key().to_string();
                self.streaming.push((key, i))
            }
            (false, Some(p)) => {
                self.streaming.swap_remove(p);
            }
            _ => {}
        }
    }

    /// Apply one backend operation; returns the number of rows it examined (at most the
    /// rows it changes plus the rows still streaming: never the whole history).
    pub fn apply(&mut self, op: ItemOp, at_ms: u64) -> usize {
        match op {
            ItemOp::Push(kind) => {
                self.push(kind, at_ms);
                1
            }
            ItemOp::Upsert { key, kind } => {
                let i = match self.row_for(key) {
                    Ok(i) => {
                        let item = self.items.get_mut(i).expect("a remembered row");
                        item.kind = kind;
                        item.rev = item.rev.wrapping_add(1);
                        self.touched(i);
                        i
                    }
                    Err(i) => {
                        debug_assert_eq!(i, self.items.len());
                        self.push(kind, at_ms)
                    }
                };
                self.track_streaming(i);
                1
            }
            ItemOp::AppendText {
                key,
                thinking,
                delta,
            } => {
                let i = match self.row_for(key) {
                    Ok(i) => i,
                    Err(i) => {
                        debug_assert_eq!(i, self.items.len());
                        // Room only for the few rows a real stream keeps open at once: an agent
                        // opening thousands of one-byte streams must not get 512 bytes each.
                        let room = if self.streaming.len() < STREAM_ROOMY {
                            STREAM_CAPACITY
                        } else {
                            0
                        };
                        let text = String::with_capacity(delta.len().max(room));
                        let kind = if thinking {
                            ItemKind::Thinking {
                                text,
                                redacted: false,
                                streaming: true,
                            }
                        } else {
                            ItemKind::Assistant {
                                text,
                                streaming: true,
                                aborted: false,
                            }
                        };
                        let i = self.push(kind, at_ms);
                        let key = self.recent_key().to_string();
                        self.streaming.push((key, i));
                        i
                    }
                };
                let item = self.items.get_mut(i).expect("a remembered row");
                match &mut item.kind {
                    ItemKind::Assistant { text, .. } | ItemKind::Thinking { text, .. } => {
                        text.push_str(&delta)
                    }
                    _ => return 1,
                }
                item.rev = item.rev.wrapping_add(1);
                self.touched(i);
                1
            }
            ItemOp::EndStreaming {
                key_prefix,
                aborted: abort,
            } => self.end_streaming(&key_prefix, abort),
        }
    }

    /// Settle every row still streaming whose key starts with `prefix` (all of them for an
    /// empty prefix). Looks at the live rows only.
    pub fn end_streaming(&mut self, prefix: &str, abort: bool) -> usize {
        let seen = self.streaming.len();
        self.visits += seen as u64;
        let mut k = 0;
        while k < self.streaming.len() {
            if !self.streaming[k].0.starts_with(prefix) {
                k += 1;
                continue;
            }
            let (_, i) = self.streaming.swap_remove(k);
            let item = self.items.get_mut(i).expect("a remembered row");
            match &mut item.kind {
                ItemKind::Assistant {
                    streaming,
                    aborted,
                    text,
                } => {
                    *streaming = false;
                    *aborted |= abort;
                    text.shrink_to_fit();
                }
                ItemKind::Thinking {
                    streaming, text, ..
                } => {
                    *streaming = false;
                    text.shrink_to_fit();
                }
                _ => continue,
            }
            item.rev = item.rev.wrapping_add(1);
            self.touched(i);
        }
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_then_settle() {
        let mut t = Transcript::default();
        for d in ["Hel", "lo"] {
            t.apply(
                ItemOp::AppendText {
                    key: "m1#0".into(),
                    thinking: false,
                    delta: d.into(),
                },
                1,
            );
        }
        assert_eq!(t.len(), 1);
        assert_eq!(t.items[0].kind.text(), "Hello");
        t.apply(
            ItemOp::Upsert {
                key: "m1#0".into(),
                kind: ItemKind::Assistant {
                    text: "Hello!".into(),
                    streaming: false,
                    aborted: false,
                },
            },
            2,
        );
        assert_eq!(t.len(), 1);
        assert_eq!(t.items[0].kind.text(), "Hello!");
        assert!(t.items[0].rev >= 3);
    }
}

#[cfg(test)]
mod linear_tests {
    use super::*;

    fn stream(t: &mut Transcript, msg: usize) {
        for d in ["a", "b"] {
            t.apply(
                ItemOp::AppendText {
                    key: format!("m{msg}#0"),
                    thinking: false,
                    delta: d.into(),
                },
                0,
            );
        }
    }

    /// Ending a stream costs the live rows, not the history (it used to scan every key).
    #[test]
    fn end_streaming_visits_only_live_rows() {
        let mut t = Transcript::default();
        for m in 0..100_000 {
            stream(&mut t, m);
            t.apply(
                ItemOp::EndStreaming {
                    key_prefix: format!("m{m}#"),
                    aborted: false,
                },
                0,
            );
        }
        assert_eq!(t.len(), 100_000);
        stream(&mut t, 100_000);
        let before = t.visits();
        let seen = t.apply(
            ItemOp::EndStreaming {
                key_prefix: "m100000#".into(),
                aborted: false,
            },
            0,
        );
        assert_eq!(seen, 1);
        assert_eq!(t.visits() - before, 1);
        assert!(!t.has_streaming());
        assert!(matches!(
            t.items[100_000].kind,
            ItemKind::Assistant {
                streaming: false,
                ..
            }
        ));
        // Settled rows keep their revision: nothing bumps the history.
        assert_eq!(t.items[0].rev, 3);
    }

    #[test]
    fn upsert_settles_and_keys_are_bounded() {
        let mut t = Transcript::default();
        stream(&mut t, 0);
        t.apply(
            ItemOp::Upsert {
                key: "m0#0".into(),
                kind: ItemKind::Assistant {
                    text: "ab".into(),
                    streaming: false,
                    aborted: false,
                },
            },
            0,
        );
        assert!(!t.has_streaming(), "a settled upsert leaves the live list");
        for k in 0..KEY_CAP + 10 {
            t.apply(
                ItemOp::Upsert {
                    key: format!("tool:{k}"),
                    kind: ItemKind::System {
                        label: "x".into(),
                        text: String::new(),
                    },
                },
                0,
            );
        }
        assert_eq!(t.by_key.len(), KEY_CAP);
        assert_eq!(t.key_order.len(), KEY_CAP);
        // The newest keys still update in place.
        let len = t.len();
        t.apply(
            ItemOp::Upsert {
                key: format!("tool:{}", KEY_CAP + 9),
                kind: ItemKind::System {
                    label: "y".into(),
                    text: String::new(),
                },
            },
            0,
        );
        assert_eq!(t.len(), len);
    }

    #[test]
    fn change_log_is_bounded_and_names_changed_rows() {
        let mut t = Transcript::default();
        stream(&mut t, 0);
        stream(&mut t, 1);
        let g = t.generation();
        assert_eq!(t.changes_since(g).unwrap().count(), 0);
        t.set_expanded(0, true);
        assert_ne!(t.generation(), g);
        assert_eq!(t.changes_since(g).unwrap().collect::<Vec<_>>(), vec![0]);
        for m in 2..(CHANGE_CAP + 10) {
            stream(&mut t, m);
        }
        assert!(t.changes_since(g).is_none(), "too far behind: rebuild");
        assert!(t.changes.rows.len() <= CHANGE_CAP);
        let now = t.generation();
        // A row whose key is still remembered (`KEY_CAP` is below `CHANGE_CAP` + 10 keys).
        let recent = CHANGE_CAP + 5;
        stream(&mut t, recent);
        assert_eq!(
            t.changes_since(now).unwrap().collect::<Vec<_>>(),
            vec![recent]
        );
    }

    fn delta(t: &mut Transcript, key: &str, d: &str) {
        t.apply(
            ItemOp::AppendText {
                key: key.into(),
                thinking: false,
                delta: d.into(),
            },
            0,
        );
    }

    /// A run of deltas to one row looks its key up in the table once (when the row is
    /// made), however long the run and however many keys are remembered; switching rows
    /// costs one look-up per switch.
    #[test]
    fn delta_runs_look_their_key_up_once() {
        let mut t = Transcript::default();
        for k in 0..KEY_CAP + 100 {
            delta(&mut t, &format!("old{k}#0"), "x");
        }
        let before = KEY_LOOKUPS.with(|c| c.get());
        for _ in 0..1000 {
            delta(&mut t, "m#0", "abc");
        }
        assert_eq!(KEY_LOOKUPS.with(|c| c.get()) - before, 1);
        // A settled upsert of the same row is a hit too.
        t.apply(
            ItemOp::Upsert {
                key: "m#0".into(),
                kind: ItemKind::Assistant {
                    text: "done".into(),
                    streaming: false,
                    aborted: false,
                },
            },
            0,
        );
        assert_eq!(KEY_LOOKUPS.with(|c| c.get()) - before, 1);
        // Alternating rows: one look-up per switch.
        let before = KEY_LOOKUPS.with(|c| c.get());
        for k in 0..10 {
            delta(&mut t, if k % 2 == 0 { "a#0" } else { "b#0" }, "y");
        }
        assert_eq!(KEY_LOOKUPS.with(|c| c.get()) - before, 10);
        // Forgotten keys start fresh rows, as before the fast path.
        let len = t.len();
        delta(&mut t, "old0#0", "z");
        assert_eq!(t.len(), len + 1);
    }

    /// A streaming row grows without reallocating for a typical block, and a row settled
    /// without a replacement gives the spare room back.
    #[test]
    fn streaming_rows_start_with_room_and_shrink_when_settled() {
        let mut t = Transcript::default();
        delta(&mut t, "m#0", "Hello");
        let text = |t: &Transcript| match &t.items[0].kind {
            ItemKind::Assistant { text, .. } => (text.as_ptr(), text.capacity(), text.len()),
            _ => unreachable!(),
        };
        let (ptr, cap, _) = text(&t);
        assert!(cap >= STREAM_CAPACITY);
        for _ in 0..15 {
            delta(&mut t, "m#0", "twenty-eight bytes of delta ");
        }
        assert_eq!(text(&t).0, ptr, "no reallocation for a 425-byte block");
        t.end_streaming("m#", false);
        let (_, cap, len) = text(&t);
        assert_eq!(cap, len);
        assert_eq!(t.items[0].kind.text().len(), 5 + 15 * 28);
    }

    /// Asking for the expansion a row has already changes nothing: its packed chunk stays
    /// packed (and shared with the copies of the state); a real change opens it.
    #[test]
    fn expanding_an_expanded_row_leaves_its_chunk_packed() {
        let mut t = Transcript::default();
        for n in 0..300 {
            t.push(
                ItemKind::User {
                    text: n.to_string(),
                },
                n,
            );
        }
        let g = t.generation();
        assert!(t.items.is_packed(5));
        t.set_expanded(5, false);
        assert!(t.items.is_packed(5) && t.generation() == g);
        t.set_expanded(5, true);
        assert!(!t.items.is_packed(5) && t.items[5].expanded && t.generation() > g);
    }

    /// An agent that opens many streams at once (one-byte deltas to new keys, never ended)
    /// gets the head room for the first few only: memory follows what it sends.
    #[test]
    fn many_open_streams_get_no_head_room() {
        let mut t = Transcript::default();
        // Within the rows a transcript keeps unpacked (a packed row keeps no spare room).
        for k in 0..100 {
            delta(&mut t, &format!("m{k}#0"), "x");
        }
        let caps: Vec<usize> = t
            .items
            .iter()
            .map(|i| match &i.kind {
                ItemKind::Assistant { text, .. } => text.capacity(),
                _ => unreachable!(),
            })
            .collect();
        assert!(caps[..STREAM_ROOMY].iter().all(|&c| c >= STREAM_CAPACITY));
        assert!(
            caps[STREAM_ROOMY..].iter().all(|&c| c < 16),
            "{:?}",
            &caps[..20]
        );
    }

    #[test]
    fn height_index_sums_finds_and_updates() {
        let mut ix = HeightIndex::default();
        ix.reset(80);
        let hs = [3u32, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5];
        for h in hs {
            ix.push(h);
        }
        for n in 0..=hs.len() {
            assert_eq!(ix.prefix(n), hs[..n].iter().map(|h| *h as u64).sum::<u64>());
        }
        // Line 0..3 is row 0, line 3 is row 1, lines 4..8 row 2.
        assert_eq!(ix.find(0), 0);
        assert_eq!(ix.find(2), 0);
        assert_eq!(ix.find(3), 1);
        assert_eq!(ix.find(4), 2);
        assert_eq!(ix.find(7), 2);
        assert_eq!(ix.find(8), 3);
        assert_eq!(ix.find(ix.total()), hs.len());
        ix.set(2, 10);
        assert_eq!(ix.prefix(3), 14);
        assert_eq!(ix.total(), 44 + 6);
        assert_eq!(ix.find(13), 2);
        assert_eq!(ix.find(14), 3);
    }
}

#[cfg(test)]
mod size_tests {
    /// Items are kept by the hundred thousand: their size is a budget (benches/perf.rs, P5).
    #[test]
    fn item_stays_compact() {
        let size = std::mem::size_of::<super::Item>();
        assert!(size <= 136, "Item grew to {size} bytes");
    }
}
