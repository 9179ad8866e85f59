//! What a session's transcript mapping remembers, shaped so copies are cheap: every replay
//! checkpoint (and every copy made for stepping back) copies the mapping, and a million-frame
//! iii recording copied its revision tables whole, several times over.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// Entries in the table that takes new revisions; when full it is frozen and shared.
const GENERATION: usize = 4_096;

/// A hasher for keys that are already seeded hashes (`Msgs::key`): hashing them again buys
/// nothing.
#[derive(Default)]
pub struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Table = HashMap<u64, (i64, u64), BuildHasherDefault<Prehashed>>;

/// Entry key → (highest revision, fingerprint of what was shown). New revisions go into a
/// small table; a full one is frozen behind an `Arc`, shared by every copy made after that,
/// so a copy costs the small table and a pointer per frozen one. A key in a newer table
/// shadows the same key in an older one.
#[derive(Clone, Debug, Default)]
pub struct Revisions {
    recent: Table,
    frozen: Vec<Arc<Table>>,
    /// Distinct keys held.
    len: usize,
    /// Keys held in all tables, shadowed ones included: past twice `len` (and a generation),
    /// the tables are merged so re-reads of old entries cannot grow them without end.
    stored: usize,
}

impl Revisions {
    pub fn get(&self, key: u64) -> Option<(i64, u64)> {
        self.recent
            .get(&key)
            .or_else(|| self.frozen.iter().rev().find_map(|t| t.get(&key)))
            .copied()
    }

    pub fn contains(&self, key: u64) -> bool {
        self.get(key).is_some()
    }

    /// Distinct entries remembered.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn insert(&mut self, key: u64, value: (i64, u64)) {
        let new = !self.frozen.iter().any(|t| t.contains_key(&key));
        if self.recent.insert(key, value).is_none() {
            self.stored += 1;
            if new {
                self.len += 1;
            }
        }
        if self.recent.len() >= GENERATION {
            let full = std::mem::take(&mut self.recent);
            self.frozen.push(Arc::new(full));
        }
        if self.stored > 2 * self.len + GENERATION {
            self.merge();
        }
    }

    /// One table per generation again, each key once (the newest value).
    fn merge(&mut self) {
        let mut all = Table::default();
        for t in self.frozen.drain(..) {
            all.extend(t.iter().map(|(k, v)| (*k, *v)));
        }
        all.extend(self.recent.drain());
        self.len = all.len();
        self.stored = all.len();
        let mut t = Table::default();
        for (k, v) in all {
            t.insert(k, v);
            if t.len() >= GENERATION {
                self.frozen.push(Arc::new(std::mem::take(&mut t)));
            }
        }
        self.recent = t;
    }
}

/// The arguments of a session's latest function calls (function id, compact JSON), for the
/// gate cards: a held call is one of the latest, and older ones are forgotten first.
#[derive(Clone, Debug, Default)]
pub struct RecentCalls {
    by_id: HashMap<String, Arc<(String, Box<str>)>>,
    order: VecDeque<String>,
}

impl RecentCalls {
    pub fn get(&self, id: &str) -> Option<&Arc<(String, Box<str>)>> {
        self.by_id.get(id)
    }

    /// Remember `id`'s arguments, forgetting the oldest past `max`.
    pub fn insert(&mut self, id: &str, call: (String, Box<str>), max: usize) {
        if self.by_id.insert(id.to_string(), Arc::new(call)).is_none() {
            self.order.push_back(id.to_string());
        }
        while self.order.len() > max {
            if let Some(old) = self.order.pop_front() {
                self.by_id.remove(&old);
            }
        }
    }

    /// Forget `id` (its arguments are past the display bound now).
    pub fn remove(&mut self, id: &str) {
        if self.by_id.remove(id).is_some() {
            self.order.retain(|o| o != id);
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_id.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_shadow_and_stay_bounded_across_generations() {
        let mut r = Revisions::default();
        for k in 0..(3 * GENERATION as u64) {
            r.insert(k, (0, k));
        }
        assert_eq!(r.len(), 3 * GENERATION);
        assert_eq!(r.frozen.len(), 3);
        // A copy shares the frozen tables.
        let copy = r.clone();
        assert!(Arc::ptr_eq(&copy.frozen[0], &r.frozen[0]));
        // A newer revision of an old key shadows it, and the copy keeps the old one.
        r.insert(5, (7, 99));
        assert_eq!(r.get(5), Some((7, 99)));
        assert_eq!(copy.get(5), Some((0, 5)));
        assert_eq!(r.len(), 3 * GENERATION);
        // Re-reading every entry again and again does not grow the tables without end.
        for round in 1..6 {
            for k in 0..(3 * GENERATION as u64) {
                r.insert(k, (round, k));
            }
        }
        assert!(r.stored <= 2 * r.len() + GENERATION, "{}", r.stored);
        assert_eq!(r.len(), 3 * GENERATION);
        assert_eq!(r.get(17), Some((5, 17)));
        assert!(!r.contains(3 * GENERATION as u64));
    }

    #[test]
    fn recent_calls_forget_the_oldest() {
        let mut c = RecentCalls::default();
        for i in 0..10 {
            c.insert(&format!("c{i}"), ("f".into(), "{}".into()), 4);
        }
        assert_eq!(c.len(), 4);
        assert!(c.get("c5").is_none());
        assert!(c.get("c6").is_some() && c.get("c9").is_some());
        // Written again: kept once, not re-queued twice.
        c.insert("c9", ("f".into(), "[]".into()), 4);
        assert_eq!(c.len(), 4);
        assert_eq!(&*c.get("c9").unwrap().1, "[]");
        c.remove("c9");
        assert!(c.get("c9").is_none());
        assert_eq!(c.len(), 3);
    }
}
