//! The #797 check: calls watched after an allow, and the flag on a turn stuck after approval.
//!
//! `iii-hq/workers#797`: approving a held call can re-run the approval hook (duplicate
//! bindings), so the call is held again without a card and the turn waits in
//! `awaiting_functions` for ever. After an allow we wait `STUCK_AFTER_MS`, then read the turn
//! status and the session's held calls: still awaiting that call with no record means stuck.
//! The remedy offered is `harness::stop`; never `harness::function::resolve`.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::gates::Key;
use super::json::{self as j, str_field};
use super::{Mapper, Out, OutCall, node_key};
use switchboard_core::msg::BackendEvent;
use switchboard_core::transcript::Level;
use switchboard_core::tree::NodePatch;

/// How long after an allow a still-parked call counts as stuck.
pub const STUCK_AFTER_MS: u64 = 10_000;
/// Allowed calls watched at once.
const MAX_WATCHES: usize = 1_000;

/// The flag's text (footer and status view).
pub const STUCK_TEXT: &str =
    "stuck after approval (iii-hq/workers#797): Ctrl-C stops the turn (harness::stop)";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Waiting,
    Checking {
        stuck: Option<bool>,
        listed: Option<bool>,
    },
    Flagged,
}

#[derive(Clone, Debug)]
struct Watch {
    since: u64,
    function_id: String,
    phase: Phase,
}

#[derive(Clone, Debug, Default)]
pub struct Watches {
    map: HashMap<Key, Watch>,
}

impl Mapper {
    pub(super) fn watch_start(&mut self, key: &Key, function_id: &str, now_ms: u64) {
        if self.watches.map.contains_key(key) || self.watches.map.len() >= MAX_WATCHES {
            return;
        }
        self.watches.map.insert(
            key.clone(),
            Watch {
                since: now_ms,
                function_id: j::clip(function_id, 200),
                phase: Phase::Waiting,
            },
        );
    }

    /// After a reconnect, checks cut short by the drop start again.
    pub(super) fn watches_restart(&mut self) {
        for w in self.watches.map.values_mut() {
            if matches!(w.phase, Phase::Checking { .. }) {
                w.phase = Phase::Waiting;
            }
        }
    }

    /// A listing for a check failed: check again a full period later.
    pub(super) fn watches_retry(&mut self, scope: &str, now_ms: u64) {
        for (k, w) in self.watches.map.iter_mut() {
            if (scope == "*" || k.0 == scope) && matches!(w.phase, Phase::Checking { .. }) {
                w.phase = Phase::Waiting;
                w.since = now_ms;
            }
        }
    }

    /// The call is held again with a record (a card): not the #797 case.
    pub(super) fn unwatch(&mut self, key: &Key) {
        self.watches.map.remove(key);
    }

    /// Whether the session is flagged stuck (tests and the status view).
    pub fn stuck(&self, session: &str) -> bool {
        self.watches
            .map
            .iter()
            .any(|(k, w)| k.0 == session && w.phase == Phase::Flagged)
    }

    pub(super) fn check_watches(&mut self, now_ms: u64, out: &mut Out) {
        let mut sessions: Vec<String> = Vec::new();
        for (k, w) in self.watches.map.iter_mut() {
            if w.phase == Phase::Waiting && now_ms.saturating_sub(w.since) >= STUCK_AFTER_MS {
                w.phase = Phase::Checking {
                    stuck: None,
                    listed: None,
                };
                if !sessions.contains(&k.0) {
                    sessions.push(k.0.clone());
                }
            }
        }
        sessions.sort();
        for s in sessions {
            self.read(
                out,
                "harness::status",
                json!({"session_id": s, "verbose": true}),
            );
            self.start_listing(out, Some(&s));
        }
    }

    pub(super) fn watch_status(
        &mut self,
        session: &str,
        status: &str,
        pending: &[String],
        out: &mut Out,
    ) {
        let keys: Vec<Key> = self
            .watches
            .map
            .iter_mut()
            .filter(|(k, _)| k.0 == session)
            .filter_map(|(k, w)| match &mut w.phase {
                Phase::Checking { stuck, .. } => {
                    *stuck = Some(status == "awaiting_functions" && pending.contains(&k.1));
                    Some(k.clone())
                }
                _ => None,
            })
            .collect();
        for k in keys {
            self.evaluate(&k, out);
        }
    }

    pub(super) fn watch_listed(
        &mut self,
        scope: &str,
        seen: &std::collections::HashSet<Key>,
        out: &mut Out,
    ) {
        let keys: Vec<Key> = self
            .watches
            .map
            .iter_mut()
            .filter(|(k, _)| scope == "*" || k.0 == scope)
            .filter_map(|(k, w)| match &mut w.phase {
                Phase::Checking { listed, .. } => {
                    *listed = Some(seen.contains(k));
                    Some(k.clone())
                }
                _ => None,
            })
            .collect();
        for k in keys {
            self.evaluate(&k, out);
        }
    }

    fn evaluate(&mut self, key: &Key, out: &mut Out) {
        let Some(w) = self.watches.map.get_mut(key) else {
            return;
        };
        let Phase::Checking {
            stuck: Some(stuck),
            listed: Some(listed),
        } = w.phase
        else {
            return;
        };
        if !stuck || listed {
            self.watches.map.remove(key);
            return;
        }
        w.phase = Phase::Flagged;
        let f = w.function_id.clone();
        let Some(root) = self.sessions.get(&key.0).map(|s| s.root.clone()) else {
            return;
        };
        out.protocol(
            &root,
            Level::Warn,
            format!(
                "stuck after approval (iii-hq/workers#797): call {} of {} was allowed but the turn still awaits it and no approval record holds it; press Ctrl-C to stop the turn (harness::stop)",
                j::title(Some(&key.1), ""),
                j::title(Some(&f), "?")
            ),
        );
        out.info(&root, "stuck", Some(STUCK_TEXT.into()));
        // The optional diagnostic: duplicate approval hook bindings confirm the bug.
        out.calls.push(OutCall {
            function_id: "engine::registered-triggers::list".into(),
            // Filtered: the unfiltered listing is discovery's.
            payload: json!({"trigger_type": self.gate_hook()}),
            retry_safe: true,
        });
        if root != key.0 {
            out.ev(
                &root,
                BackendEvent::NodeUpdate {
                    key: node_key(&root, &key.0),
                    patch: NodePatch {
                        description: Some("stuck after approval (iii-hq/workers#797)".into()),
                        ..NodePatch::default()
                    },
                },
            );
        }
    }

    /// `engine::registered-triggers::list`: count the `approval::gate` pre-trigger hook
    /// bindings (more than one confirms iii-hq/workers#797). The shape is read tolerantly:
    /// every object in the result's arrays is a candidate binding.
    pub(super) fn hook_bindings(&mut self, result: &Value, out: &mut Out) {
        let hook = self.gate_hook();
        let n = super::discovery::entries(result)
            .filter(|b| {
                str_field(b, "trigger_type") == Some(hook.as_str())
                    && str_field(b, "function_id") == Some("approval::gate")
            })
            .count();
        let mut flagged: Vec<String> = self
            .watches
            .map
            .iter()
            .filter(|(_, w)| w.phase == Phase::Flagged)
            .filter_map(|(k, _)| self.sessions.get(&k.0).map(|s| s.root.clone()))
            .collect();
        flagged.sort();
        flagged.dedup();
        let text = if n > 1 {
            format!(
                "{n} approval::gate pre-trigger hook bindings: the duplicate-binding condition of iii-hq/workers#797 is confirmed"
            )
        } else {
            format!(
                "{n} approval::gate pre-trigger hook binding(s): the duplicate-binding condition of iii-hq/workers#797 is not visible"
            )
        };
        for r in flagged {
            out.protocol(&r, Level::Info, text.clone());
        }
    }

    /// A turn moved on: whatever was watched for this session is settled.
    pub(super) fn clear_watches(&mut self, session: &str, out: &mut Out) {
        let mut flagged = false;
        self.watches.map.retain(|k, w| {
            if k.0 == session {
                flagged |= w.phase == Phase::Flagged;
                false
            } else {
                true
            }
        });
        if flagged && let Some(root) = self.sessions.get(session).map(|s| s.root.clone()) {
            out.info(&root, "stuck", None);
        }
    }
}
