//! Sessions: the list and each root's tree of sub-agents (turn status and metrics: `status`).

use super::json::Field;
use serde_json::{Value, json};

use super::json::{self as j, array, id_field, str_field, u64_field};
use super::{MAX_PAGES, MAX_SESSIONS, Mapper, OpenRoot, Out, Sess, node_key};
use switchboard_core::msg::{BackendEvent, SessionPatch, TurnState};
use switchboard_core::transcript::Level;
use switchboard_core::tree::{NodePatch, NodeStatus};

/// A session's turn status word as a node status. `completed` with an armed wake is still
/// running: the wake carries the real outcome; `awaiting_functions` waits on held calls.
pub fn node_status(status: &str, expects_wake: bool) -> Option<NodeStatus> {
    Some(match status {
        "running" | "working" => NodeStatus::Running,
        // The turn waits on held calls: it reads so, not "running" (issue 23 item 4).
        "awaiting_functions" => NodeStatus::Waiting,
        "completed" | "done" if expects_wake => NodeStatus::Running,
        "completed" | "done" => NodeStatus::Completed,
        "idle" => NodeStatus::Idle,
        "cancelled" => NodeStatus::Killed,
        "failed" | "error" => NodeStatus::Failed,
        _ => return None,
    })
}

impl Mapper {
    /// Make `session` known. A session with a known parent nests under the parent's root;
    /// one without becomes a root (announced with `OpenRoot` and read). Returns its root, or
    /// `None` past `MAX_SESSIONS`.
    pub(super) fn ensure_session(
        &mut self,
        session: &str,
        parent: Option<&str>,
        title: Option<&str>,
        out: &mut Out,
    ) -> Option<String> {
        if let Some(s) = self.sessions.get(session) {
            return Some(s.root.clone());
        }
        if self.sessions.len() >= MAX_SESSIONS {
            return None;
        }
        let parent = parent.filter(|p| *p != session);
        let root = match parent {
            Some(p) => match self.sessions.get(p) {
                Some(ps) => ps.root.clone(),
                // The parent is unknown too: make it known first (as a root for now).
                None => self.ensure_session(p, None, None, out)?,
            },
            None => session.to_string(),
        };
        self.made += 1;
        self.sessions.insert(
            session.to_string(),
            Sess {
                root: root.clone(),
                parent: parent.map(str::to_string),
                title: j::title(title, session),
                made: self.made,
                ..Sess::default()
            },
        );
        if root == session {
            self.open_root(session, out);
        } else {
            self.open_child(session, out);
        }
        Some(root)
    }

    fn open_root(&mut self, session: &str, out: &mut Out) {
        if !self.roots.insert(session.to_string()) {
            return;
        }
        let title = self
            .sessions
            .get(session)
            .map(|s| s.title.clone())
            .unwrap_or_default();
        out.roots.push(OpenRoot {
            key: session.to_string(),
            title: title.clone(),
        });
        out.ev(
            session,
            BackendEvent::Session(SessionPatch {
                session_id: Some(session.to_string()),
                interruptible: Some(true),
                ..SessionPatch::default()
            }),
        );
        out.info(session, "title", Some(title));
        self.blind_for_new_root(session, out);
        out.info("", "sessions", Some(self.roots.len().to_string()));
        self.read_session(session, true, out);
    }

    fn open_child(&mut self, session: &str, out: &mut Out) {
        let Some(s) = self.sessions.get(session) else {
            return;
        };
        if s.node_open {
            return;
        }
        let root = s.root.clone();
        let parent_key = node_key(&root, s.parent.as_deref().unwrap_or(&root));
        let patch = NodePatch {
            name: Some(s.title.clone()),
            description: Some(format!("iii session {}", j::title(Some(session), ""))),
            ..NodePatch::default()
        };
        if let Some(s) = self.sessions.get_mut(session) {
            s.node_open = true;
        }
        out.ev(
            &root,
            BackendEvent::NodeOpen {
                key: node_key(&root, session),
                parent: Some(parent_key),
                patch,
            },
        );
        self.read_session(session, false, out);
    }

    /// The reads a newly seen session needs: its status and transcript (and, for a root,
    /// its tree and metrics).
    fn read_session(&mut self, session: &str, root: bool, out: &mut Out) {
        let round = self.round;
        match self.sessions.get_mut(session) {
            // Already read this round (a held call named it before the listing did).
            Some(s) if s.read_round == round => return,
            Some(s) => s.read_round = round,
            None => {}
        }
        if root {
            self.read(
                out,
                "harness::session-tree",
                json!({"root_session_id": session}),
            );
            self.read(out, "harness::metrics", json!({"root_session_id": session}));
        }
        self.read(
            out,
            "harness::status",
            json!({"session_id": session, "verbose": true}),
        );
        self.hydrate(session, out);
    }

    pub(super) fn session_list(&mut self, request: &Value, result: &Value, out: &mut Out) {
        for meta in array(result, "sessions") {
            let Some(id) = id_field(meta, "session_id") else {
                continue;
            };
            let parent = meta
                .field("metadata")
                .and_then(|m| id_field(m, "parent_session_id"));
            let known = self.sessions.contains_key(id);
            let title = str_field(meta, "title");
            if self.ensure_session(id, parent, title, out).is_none() {
                self.report(
                    None,
                    Level::Warn,
                    format!("more than {MAX_SESSIONS} sessions: the rest are not shown"),
                    out,
                );
                break;
            }
            if known {
                // A re-read: refresh the title and re-read what may have changed offline.
                self.retitle(id, title, out);
                let is_root = self.roots.contains(id);
                self.read_session(id, is_root, out);
            }
            if let Some(st) = str_field(meta, "status") {
                self.session_status_word(id, st, out);
            }
        }
        if let Some(cursor) = id_field(result, "next_cursor")
            && self.count_page("session::list") < MAX_PAGES
        {
            let next = j::with_cursor(request, cursor);
            self.read(out, "session::list", next);
        }
    }

    pub(super) fn count_page(&mut self, key: &str) -> usize {
        let n = self.pages.entry(key.to_string()).or_insert(0);
        *n += 1;
        *n
    }

    pub(super) fn session_get(&mut self, result: &Value, out: &mut Out) {
        let meta = result.field("meta").unwrap_or(result);
        if let Some(id) = id_field(meta, "session_id") {
            self.retitle(id, str_field(meta, "title"), out);
        }
    }

    fn retitle(&mut self, id: &str, title: Option<&str>, out: &mut Out) {
        let Some(t) = title else { return };
        let Some(s) = self.sessions.get_mut(id) else {
            return;
        };
        let t = j::title(Some(t), id);
        if s.title == t {
            return;
        }
        s.title = t.clone();
        let root = s.root.clone();
        if root == id {
            out.info(&root, "title", Some(t.clone()));
        }
        // A node's name; a root's is the session's name in the tree, so a root opened before
        // its title was known (a held call or a child listed first) takes it when it comes.
        out.ev(
            &root,
            BackendEvent::NodeUpdate {
                key: node_key(&root, id),
                patch: NodePatch {
                    name: Some(t),
                    ..NodePatch::default()
                },
            },
        );
    }

    /// `session::list`/`status-changed` words (`idle|working|done|error`) on a child node;
    /// a root's state comes from its turn status.
    fn session_status_word(&mut self, id: &str, word: &str, out: &mut Out) {
        let Some(s) = self.sessions.get(id) else {
            return;
        };
        let root = s.root.clone();
        if root != id {
            if let Some(st) = node_status(word, s.expects_wake) {
                out.ev(
                    &root,
                    BackendEvent::NodeUpdate {
                        key: node_key(&root, id),
                        patch: NodePatch {
                            status: Some(st),
                            ..NodePatch::default()
                        },
                    },
                );
            }
        } else {
            out.info(&root, "session", Some(j::title(Some(word), "?")));
        }
    }

    pub(super) fn session_tree(&mut self, result: &Value, out: &mut Out) {
        let Some(root) = id_field(result, "root_session_id") else {
            return;
        };
        let root = root.to_string();
        if self.ensure_session(&root, None, None, out).is_none() {
            return;
        }
        let mut nodes: Vec<(u64, &str, Option<&str>)> = array(result, "sessions")
            .iter()
            .filter_map(|n| {
                let id = id_field(n, "session_id")?;
                Some((
                    u64_field(n, "depth").unwrap_or(1),
                    id,
                    id_field(n, "parent_session_id"),
                ))
            })
            .filter(|(_, id, _)| *id != root)
            .collect();
        // Parents before children, so every NodeOpen names an open parent.
        nodes.sort_by_key(|(d, _, _)| *d);
        for (_, id, parent) in nodes {
            let parent = parent.unwrap_or(&root);
            if let Some(s) = self.sessions.get(id)
                && s.root == id
                && id != root
            {
                // Listed as a root before its tree was known: say where it belongs.
                out.protocol(
                    id,
                    Level::Info,
                    format!(
                        "this session is a sub-agent of {}",
                        j::title(Some(&root), "")
                    ),
                );
                continue;
            }
            if self.ensure_session(id, Some(parent), None, out).is_none() {
                break;
            }
        }
    }

    pub(super) fn session_created(&mut self, p: &Value, out: &mut Out) {
        let Some(id) = id_field(p, "session_id") else {
            return;
        };
        let parent = p
            .field("metadata")
            .and_then(|m| id_field(m, "parent_session_id"));
        self.ensure_session(id, parent, str_field(p, "title"), out);
    }

    pub(super) fn status_changed(&mut self, p: &Value, out: &mut Out) {
        if let (Some(id), Some(st)) = (id_field(p, "session_id"), str_field(p, "status"))
            && self.sessions.contains_key(id)
        {
            self.session_status_word(id, st, out);
        }
    }

    pub(super) fn meta_updated(&mut self, p: &Value, out: &mut Out) {
        if let Some(id) = id_field(p, "session_id") {
            self.retitle(id, str_field(p, "title"), out);
        }
    }

    pub(super) fn session_deleted(&mut self, p: &Value, out: &mut Out) {
        let Some(id) = id_field(p, "session_id") else {
            return;
        };
        let Some(s) = self.sessions.get(id) else {
            return;
        };
        let root = s.root.clone();
        if root == id {
            out.protocol(&root, Level::Warn, "the iii session was deleted");
            out.ev(&root, BackendEvent::Turn(TurnState::Idle));
        } else {
            out.ev(
                &root,
                BackendEvent::NodeUpdate {
                    key: node_key(&root, id),
                    patch: NodePatch {
                        status: Some(NodeStatus::Killed),
                        description: Some("deleted".into()),
                        ..NodePatch::default()
                    },
                },
            );
        }
    }
}
