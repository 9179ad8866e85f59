//! The ids of a session's answered or withdrawn gates, to refuse a second answer: the newest
//! `CLOSED_CAP` in arrival order, with a set beside them so that every gate opened asks in
//! O(1) whether its id was closed before (a replay opens thousands).

use std::collections::{HashSet, VecDeque};

#[derive(Clone, Default)]
pub struct ClosedGates {
    order: VecDeque<String>,
    set: HashSet<String>,
}

/// The ids in order: the set is an index of them (and its iteration order is random, so two
/// equal states must not print differently).
impl std::fmt::Debug for ClosedGates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(&self.order).finish()
    }
}

impl ClosedGates {
    /// Whether `id` was closed (and is still remembered).
    pub fn contains(&self, id: &str) -> bool {
        self.set.contains(id)
    }

    /// Remember `id` as closed, forgetting the oldest beyond `cap`.
    pub fn push(&mut self, id: String, cap: usize) {
        if !self.set.insert(id.clone()) {
            return;
        }
        self.order.push_back(id);
        while self.order.len() > cap {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }

    /// Forget `id` (it is pending again).
    pub fn remove(&mut self, id: &str) {
        if self.set.remove(id) {
            self.order.retain(|c| c != id);
        }
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &String> {
        self.order.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_set_follows_the_capped_order() {
        let mut c = ClosedGates::default();
        for i in 0..5 {
            c.push(format!("g{i}"), 3);
        }
        assert_eq!(c.len(), 3);
        assert!(!c.contains("g1") && c.contains("g2") && c.contains("g4"));
        c.push("g4".into(), 3);
        assert_eq!(c.len(), 3, "a repeat is remembered once");
        c.remove("g3");
        assert!(!c.contains("g3"));
        assert_eq!(c.iter().cloned().collect::<Vec<_>>(), ["g2", "g4"]);
    }
}
