//! The session tree: the root agent plus one node per sub-agent.

use std::collections::HashMap;

use super::transcript::{ItemOp, Transcript};

pub type NodeId = usize;

/// How deep sub-agents nest in the tree (real agents nest two or three deep): positions and
/// counts cost O(depth) per event, so the depth is bounded.
pub const MAX_DEPTH: usize = 32;

/// The key of the root node; sub-agents are keyed by their dispatching tool_use id.
pub const ROOT_KEY: &str = "root";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeStatus {
    /// Not started yet (root before the first turn, or a dispatch without a task frame).
    Pending,
    Running,
    /// The turn waits on held calls (iii `awaiting_functions`): not running, not idle.
    Waiting,
    Idle,
    Completed,
    Failed,
    Killed,
}

impl NodeStatus {
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            NodeStatus::Completed | NodeStatus::Failed | NodeStatus::Killed
        )
    }

    pub fn label(self) -> &'static str {
        match self {
            NodeStatus::Pending => "pending",
            NodeStatus::Running => "running",
            NodeStatus::Waiting => "waiting on held calls",
            NodeStatus::Idle => "idle",
            NodeStatus::Completed => "completed",
            NodeStatus::Failed => "failed",
            NodeStatus::Killed => "killed",
        }
    }

    /// Parse the wire words of `task_updated` / `task_notification`.
    pub fn from_wire(s: &str) -> Option<NodeStatus> {
        Some(match s {
            "pending" => NodeStatus::Pending,
            "running" => NodeStatus::Running,
            "completed" => NodeStatus::Completed,
            "failed" | "error" => NodeStatus::Failed,
            "killed" | "stopped" | "cancelled" | "canceled" => NodeStatus::Killed,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug)]
pub struct Node {
    pub key: String,
    pub parent: Option<NodeId>,
    pub children: Vec<NodeId>,
    pub depth: usize,
    /// Agent type (`general-purpose`, `Explore`, …) or `main`.
    pub name: String,
    pub description: String,
    pub status: NodeStatus,
    pub tokens: u64,
    pub tool_uses: u64,
    pub last_tool: Option<String>,
    pub started_ms: u64,
    pub ended_ms: Option<u64>,
    pub transcript: Transcript,
    /// Position among the parent's children.
    slot: usize,
    /// Nodes in this subtree by row class (`RowClass as usize`), this node included: the tree
    /// pane's totals without a walk.
    counts: [usize; 4],
    /// Subtree sizes of the children, as prefix sums: a node's display position and the node
    /// at a position cost O(depth · log children), never the number of nodes.
    sizes: Fenwick,
}

/// How the tree pane's footer counts a row: waiting on a gate, else by status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowClass {
    Waiting = 0,
    Done = 1,
    Failed = 2,
    Running = 3,
}

/// Counts of rows by class, for the tree pane's footer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowCounts {
    pub running: usize,
    pub waiting: usize,
    pub done: usize,
    pub failed: usize,
}

impl RowCounts {
    fn add(&mut self, c: [usize; 4]) {
        self.waiting += c[RowClass::Waiting as usize];
        self.done += c[RowClass::Done as usize];
        self.failed += c[RowClass::Failed as usize];
        self.running += c[RowClass::Running as usize];
    }

    pub fn merge(&mut self, o: RowCounts) {
        self.running += o.running;
        self.waiting += o.waiting;
        self.done += o.done;
        self.failed += o.failed;
    }
}

/// Append-only prefix sums (1-based Fenwick tree) over small counts.
#[derive(Clone, Debug, Default)]
struct Fenwick {
    tree: Vec<usize>,
}

impl Fenwick {
    fn len(&self) -> usize {
        self.tree.len()
    }

    /// Sum of the first `n` values.
    fn prefix(&self, n: usize) -> usize {
        let mut i = n.min(self.tree.len());
        let mut sum = 0;
        while i > 0 {
            sum += self.tree[i - 1];
            i &= i - 1;
        }
        sum
    }

    fn push(&mut self, v: usize) {
        let i = self.tree.len() + 1;
        // Entry i covers values (i - lowbit(i), i].
        let low = i & i.wrapping_neg();
        let covered = self.prefix(i - 1) - self.prefix(i - low);
        self.tree.push(covered + v);
    }

    fn add(&mut self, at: usize, d: usize) {
        let mut i = at + 1;
        while i <= self.tree.len() {
            self.tree[i - 1] += d;
            i += i & i.wrapping_neg();
        }
    }

    /// The value holding unit `k` (0-based) and the sum of the values before it.
    fn find(&self, k: usize) -> (usize, usize) {
        let n = self.tree.len();
        let (mut pos, mut rem) = (0, k);
        let mut step = if n == 0 {
            0
        } else {
            1 << (usize::BITS - 1 - n.leading_zeros())
        };
        while step > 0 {
            let next = pos + step;
            if next <= n && self.tree[next - 1] <= rem {
                pos = next;
                rem -= self.tree[next - 1];
            }
            step >>= 1;
        }
        (pos, k - rem)
    }
}

#[cfg(any(test, feature = "test-hooks"))]
thread_local! {
    /// Nodes stepped over by position look-ups and class updates: the test that the tree
    /// pane costs the screen and an event on a node costs its depth, not the tree.
    pub static NODES_VISITED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[inline]
fn visit() {
    #[cfg(any(test, feature = "test-hooks"))]
    NODES_VISITED.with(|c| c.set(c.get() + 1));
}

/// Fields a backend may update on a node; `None` leaves a field as it is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodePatch {
    pub name: Option<String>,
    pub description: Option<String>,
    pub status: Option<NodeStatus>,
    pub tokens: Option<u64>,
    pub tool_uses: Option<u64>,
    pub last_tool: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Tree {
    pub nodes: Vec<Node>,
    by_key: HashMap<String, NodeId>,
    /// Nodes that may hold streaming rows: a turn end visits these, not every node.
    live: Vec<NodeId>,
    /// Nodes examined by turn ends since creation: the test of linear ingest.
    visits: u64,
    /// Pending gates by node key (a gate may name a node before it opens).
    pending: HashMap<String, usize>,
}

impl Tree {
    pub fn new(root_name: &str, now_ms: u64) -> Self {
        let root = Node {
            key: ROOT_KEY.to_string(),
            parent: None,
            children: Vec::new(),
            depth: 0,
            name: root_name.to_string(),
            description: String::new(),
            status: NodeStatus::Pending,
            tokens: 0,
            tool_uses: 0,
            last_tool: None,
            started_ms: now_ms,
            ended_ms: None,
            transcript: Transcript::default(),
            slot: 0,
            counts: [0; 4],
            sizes: Fenwick::default(),
        };
        let mut by_key = HashMap::new();
        by_key.insert(ROOT_KEY.to_string(), 0);
        let mut tree = Tree {
            nodes: vec![root],
            by_key,
            live: Vec::new(),
            visits: 0,
            pending: HashMap::new(),
        };
        let class = tree.class(0) as usize;
        tree.nodes[0].counts[class] = 1;
        tree
    }

    pub fn get(&self, key: &str) -> Option<NodeId> {
        // The root's key never changes node (`open` keeps an existing key): most node updates
        // name it, and this skips hashing it.
        if key == ROOT_KEY && !super::transcript::slow_lookups() {
            debug_assert_eq!(self.by_key.get(ROOT_KEY), Some(&0));
            return Some(0);
        }
        self.by_key.get(key).copied()
    }

    /// The node for `key`, or the root when the key is unknown or absent.
    pub fn resolve(&self, key: Option<&str>) -> NodeId {
        key.and_then(|k| self.get(k)).unwrap_or(0)
    }

    /// Add a child node (idempotent: an existing key is returned unchanged).
    pub fn open(&mut self, key: &str, parent: Option<&str>, now_ms: u64) -> NodeId {
        if let Some(id) = self.get(key) {
            return id;
        }
        let mut parent = self.resolve(parent);
        // A hostile chain of sub-agents must not make every event on it cost its length:
        // below `MAX_DEPTH` a node joins the deepest level as its parent's sibling.
        while self.nodes[parent].depth >= MAX_DEPTH {
            parent = self.nodes[parent].parent.unwrap_or(0);
        }
        let id = self.nodes.len();
        let slot = self.nodes[parent].children.len();
        self.nodes.push(Node {
            key: key.to_string(),
            parent: Some(parent),
            children: Vec::new(),
            depth: self.nodes[parent].depth + 1,
            name: String::new(),
            description: String::new(),
            status: NodeStatus::Running,
            tokens: 0,
            tool_uses: 0,
            last_tool: None,
            started_ms: now_ms,
            ended_ms: None,
            transcript: Transcript::default(),
            slot,
            counts: [0; 4],
            sizes: Fenwick::default(),
        });
        self.nodes[parent].children.push(id);
        self.nodes[parent].sizes.push(0);
        self.by_key.insert(key.to_string(), id);
        let class = self.class(id) as usize;
        // One more node in every subtree on the way up, each counted in its parent's sizes.
        let mut at = id;
        loop {
            visit();
            self.nodes[at].counts[class] += 1;
            let Some(p) = self.nodes[at].parent else {
                break;
            };
            let slot = self.nodes[at].slot;
            self.nodes[p].sizes.add(slot, 1);
            at = p;
        }
        id
    }

    /// How the footer counts node `id`.
    pub fn class(&self, id: NodeId) -> RowClass {
        if self.pending_on(id) > 0 {
            return RowClass::Waiting;
        }
        match self.nodes[id].status {
            NodeStatus::Completed => RowClass::Done,
            NodeStatus::Failed | NodeStatus::Killed => RowClass::Failed,
            _ => RowClass::Running,
        }
    }

    /// Run `change` on node `id`, then move the node's count to its new class in every
    /// subtree holding it (O(depth)).
    fn reclass(&mut self, id: NodeId, change: impl FnOnce(&mut Self)) {
        let old = self.class(id) as usize;
        change(self);
        let new = self.class(id) as usize;
        if old == new {
            return;
        }
        let mut at = Some(id);
        while let Some(n) = at {
            visit();
            let c = &mut self.nodes[n].counts;
            c[old] -= 1;
            c[new] += 1;
            at = self.nodes[n].parent;
        }
    }

    /// Set a node's status (the reducer's only way to change one besides `patch`).
    pub fn set_status(&mut self, id: NodeId, status: NodeStatus) {
        self.reclass(id, |t| t.nodes[id].status = status);
    }

    /// Pending gates on node `id` (not its descendants).
    pub fn pending_on(&self, id: NodeId) -> usize {
        self.pending.get(&self.nodes[id].key).copied().unwrap_or(0)
    }

    /// A gate naming node `key` opened (the node may not exist yet).
    pub fn gate_opened(&mut self, key: &str) {
        let change = |t: &mut Self| *t.pending.entry(key.to_string()).or_insert(0) += 1;
        match self.get(key) {
            Some(id) => self.reclass(id, change),
            None => change(self),
        }
    }

    /// A gate naming node `key` closed.
    pub fn gate_closed(&mut self, key: &str) {
        let change = |t: &mut Self| {
            if let Some(n) = t.pending.get_mut(key) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    t.pending.remove(key);
                }
            }
        };
        match self.get(key) {
            Some(id) => self.reclass(id, change),
            None => change(self),
        }
    }

    /// Nodes in the subtree of `id`, itself included.
    pub fn subtree_len(&self, id: NodeId) -> usize {
        self.nodes[id].counts.iter().sum()
    }

    /// Rows by class in the subtree of `id`, `id` itself counted only when it waits (the
    /// top row of a view is its header, not one of its sub-agents).
    pub fn row_counts(&self, id: NodeId) -> RowCounts {
        let mut c = self.nodes[id].counts;
        let own = self.class(id);
        if own != RowClass::Waiting {
            c[own as usize] -= 1;
        }
        let mut out = RowCounts::default();
        out.add(c);
        out
    }

    /// Display (depth-first) position of `id` counted from the root: O(depth · log children).
    pub fn position(&self, id: NodeId) -> usize {
        let mut pos = 0;
        let mut at = id;
        while let Some(p) = self.nodes[at].parent {
            visit();
            pos += 1 + self.nodes[p].sizes.prefix(self.nodes[at].slot);
            at = p;
        }
        pos
    }

    /// The node `k` places after `top` in display order, inside `top`'s subtree.
    pub fn nth_within(&self, top: NodeId, mut k: usize) -> Option<NodeId> {
        if k >= self.subtree_len(top) {
            return None;
        }
        let mut at = top;
        while k > 0 {
            visit();
            k -= 1;
            let n = &self.nodes[at];
            let (slot, before) = n.sizes.find(k);
            debug_assert!(slot < n.sizes.len());
            at = *n.children.get(slot)?;
            k -= before;
        }
        Some(at)
    }

    /// The node after `id` in display order, inside `top`'s subtree (amortized O(1)).
    pub fn next_within(&self, top: NodeId, id: NodeId) -> Option<NodeId> {
        if let Some(&c) = self.nodes[id].children.first() {
            return Some(c);
        }
        let mut at = id;
        while at != top {
            visit();
            let p = self.nodes[at].parent?;
            let slot = self.nodes[at].slot;
            if let Some(&s) = self.nodes[p].children.get(slot + 1) {
                return Some(s);
            }
            at = p;
        }
        None
    }

    pub fn patch(&mut self, id: NodeId, patch: NodePatch, now_ms: u64) {
        match patch.status {
            Some(_) => self.reclass(id, |t| t.patch_fields(id, patch, now_ms)),
            None => self.patch_fields(id, patch, now_ms),
        }
    }

    fn patch_fields(&mut self, id: NodeId, patch: NodePatch, now_ms: u64) {
        let node = &mut self.nodes[id];
        if let Some(v) = patch.name {
            node.name = v;
        }
        if let Some(v) = patch.description {
            node.description = v;
        }
        if let Some(v) = patch.tokens {
            node.tokens = v;
        }
        if let Some(v) = patch.tool_uses {
            node.tool_uses = v;
        }
        if let Some(v) = patch.last_tool {
            node.last_tool = Some(v);
        }
        if let Some(status) = patch.status {
            // The first terminal status wins; later frames only repeat it.
            if !node.status.is_terminal() {
                node.status = status;
                if status.is_terminal() {
                    node.ended_ms = Some(now_ms);
                }
            }
        }
    }

    /// Apply a row operation to node `id`, remembering the node when it is left streaming.
    #[inline]
    pub fn apply(&mut self, id: NodeId, op: ItemOp, at_ms: u64) {
        let t = &mut self.nodes[id].transcript;
        t.apply(op, at_ms);
        if t.has_streaming() && !self.live.contains(&id) {
            self.live.push(id);
        }
    }

    /// A finished turn settles every row still streaming, on the nodes that have any.
    pub fn end_turn(&mut self) {
        for id in std::mem::take(&mut self.live) {
            self.visits += 1;
            self.nodes[id].transcript.end_streaming("", false);
        }
    }

    /// Nodes examined by turn ends so far.
    pub fn visits(&self) -> u64 {
        self.visits
    }

    /// Nodes in display order (depth first), each with its depth.
    pub fn preorder(&self) -> Vec<NodeId> {
        let mut out = Vec::with_capacity(self.nodes.len());
        let mut stack = vec![0];
        while let Some(id) = stack.pop() {
            visit();
            out.push(id);
            stack.extend(self.nodes[id].children.iter().rev());
        }
        out
    }

    /// True when `id` is `ancestor` or lies below it.
    pub fn is_within(&self, mut id: NodeId, ancestor: NodeId) -> bool {
        loop {
            visit();
            if id == ancestor {
                return true;
            }
            match self.nodes[id].parent {
                Some(p) => id = p,
                None => return false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_and_order() {
        let mut t = Tree::new("main", 0);
        let a = t.open("toolu_a", None, 1);
        let b = t.open("toolu_b", None, 1);
        let c = t.open("toolu_c", Some("toolu_a"), 2);
        assert_eq!(t.nodes[c].depth, 2);
        assert_eq!(t.preorder(), vec![0, a, c, b]);
        assert!(t.is_within(c, a));
        assert!(!t.is_within(b, a));
        assert_eq!(t.open("toolu_a", None, 3), a);
    }

    #[test]
    fn nesting_stops_at_the_depth_bound() {
        let mut t = Tree::new("main", 0);
        let mut parent: Option<String> = None;
        for k in 0..100 {
            let key = format!("n{k}");
            t.open(&key, parent.as_deref(), 0);
            parent = Some(key);
        }
        assert_eq!(t.nodes.iter().map(|n| n.depth).max(), Some(MAX_DEPTH));
        let last = t.get("n99").unwrap();
        assert_eq!(t.nodes[last].depth, MAX_DEPTH);
        // One event on the deepest node steps over at most the bound.
        NODES_VISITED.with(|c| c.set(0));
        t.set_status(last, NodeStatus::Completed);
        let pos = t.position(last);
        assert_eq!(t.nth_within(0, pos), Some(last));
        assert!(NODES_VISITED.with(|c| c.get()) <= 3 * (MAX_DEPTH + 1));
        assert_eq!(t.preorder().last(), Some(&last));
    }

    #[test]
    fn first_terminal_status_wins() {
        let mut t = Tree::new("main", 0);
        let a = t.open("x", None, 0);
        let done = NodePatch {
            status: Some(NodeStatus::Completed),
            ..Default::default()
        };
        t.patch(a, done, 5);
        let failed = NodePatch {
            status: Some(NodeStatus::Failed),
            ..Default::default()
        };
        t.patch(a, failed, 6);
        assert_eq!(t.nodes[a].status, NodeStatus::Completed);
        assert_eq!(t.nodes[a].ended_ms, Some(5));
    }
}
