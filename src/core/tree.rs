//! The session tree: the root agent plus one node per sub-agent.

use std::collections::HashMap;

use super::transcript::{ItemOp, Transcript};

pub type NodeId = usize;

/// The key of the root node; sub-agents are keyed by their dispatching tool_use id.
pub const ROOT_KEY: &str = "root";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeStatus {
    /// Not started yet (root before the first turn, or a dispatch without a task frame).
    Pending,
    Running,
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
        };
        let mut by_key = HashMap::new();
        by_key.insert(ROOT_KEY.to_string(), 0);
        Tree {
            nodes: vec![root],
            by_key,
            live: Vec::new(),
            visits: 0,
        }
    }

    pub fn get(&self, key: &str) -> Option<NodeId> {
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
        let parent = self.resolve(parent);
        let id = self.nodes.len();
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
        });
        self.nodes[parent].children.push(id);
        self.by_key.insert(key.to_string(), id);
        id
    }

    pub fn patch(&mut self, id: NodeId, patch: NodePatch, now_ms: u64) {
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
            out.push(id);
            stack.extend(self.nodes[id].children.iter().rev());
        }
        out
    }

    /// True when `id` is `ancestor` or lies below it.
    pub fn is_within(&self, mut id: NodeId, ancestor: NodeId) -> bool {
        loop {
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
