//! A transcript's rows in shared chunks: copying a transcript (a replay checkpoint, a copy
//! made for stepping back) copies one pointer per chunk, and a copy pays only for the chunks
//! it changes afterwards (`Arc::make_mut`), which for an append-mostly transcript are its last
//! one or two. Deep copies made the replay's checkpoints cost several times the file.

use std::ops::Index;
use std::sync::Arc;

use super::Item;

/// Rows per chunk: small enough that changing a row copies little, large enough that the
/// pointer table stays a fraction of the rows. Each replay checkpoint makes every live
/// transcript copy its last chunk whole, strings and all, on its next row: at 256 rows those
/// copies held a twentieth of a long iii replay's memory.
const CHUNK: usize = 64;

#[derive(Clone, Debug, Default)]
pub struct Rows {
    chunks: Vec<Arc<Vec<Item>>>,
    len: usize,
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
        Some(&self.chunks[i / CHUNK][i % CHUNK])
    }

    /// Row `i` to change: its chunk is copied first when another transcript shares it.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut Item> {
        if i >= self.len {
            return None;
        }
        Some(&mut Arc::make_mut(&mut self.chunks[i / CHUNK])[i % CHUNK])
    }

    pub fn push(&mut self, item: Item) {
        if self.len.is_multiple_of(CHUNK) {
            // Grown as it fills: a sub-agent's transcript of three rows must not hold room
            // for a whole chunk.
            self.chunks.push(Arc::new(Vec::new()));
        }
        let last = self.chunks.last_mut().expect("a chunk with room");
        Arc::make_mut(last).push(item);
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
mod tests {
    use super::*;
    use crate::transcript::ItemKind;

    fn row(n: usize) -> Item {
        Item::new(
            ItemKind::User {
                text: n.to_string(),
            },
            n as u64,
        )
    }

    /// A copy shares every chunk until one of them changes; a change copies that chunk only,
    /// and neither side sees the other's changes.
    #[test]
    fn copies_share_chunks_until_changed() {
        let mut a = Rows::default();
        for n in 0..1000 {
            a.push(row(n));
        }
        let mut b = a.clone();
        assert!(Arc::ptr_eq(&a.chunks[0], &b.chunks[0]));
        b.get_mut(3).unwrap().expanded = true;
        b.push(row(1000));
        assert!(!Arc::ptr_eq(&a.chunks[0], &b.chunks[0]));
        assert!(Arc::ptr_eq(&a.chunks[1], &b.chunks[1]));
        assert!(!a[3].expanded && b[3].expanded);
        assert_eq!((a.len(), b.len()), (1000, 1001));
        assert_eq!(a.iter().count(), 1000);
        assert_eq!(a.iter().next_back().unwrap().at_ms, 999);
        assert_eq!(a.iter().rposition(|r| r.at_ms == 300), Some(300));
        assert_eq!(b.last().unwrap().at_ms, 1000);
        assert_eq!(
            b.range(254, 258).map(|r| r.at_ms).collect::<Vec<_>>(),
            [254, 255, 256, 257]
        );
        assert!(a.get(1000).is_none() && b.get(1001).is_none());
        assert_eq!(b.range(999, 5000).count(), 2);
        // Skipping is a jump, from either end.
        assert_eq!(a.iter().nth(700).unwrap().at_ms, 700);
        assert_eq!(
            a.iter().skip(998).map(|r| r.at_ms).collect::<Vec<_>>(),
            [998, 999]
        );
        assert_eq!(a.iter().nth_back(1).unwrap().at_ms, 998);
        assert!(a.iter().nth(5000).is_none() && a.iter().nth_back(5000).is_none());
        assert_eq!(a.range(10, 20).last().unwrap().at_ms, 19);
    }
}
