//! The human's decisions on held calls: what a decision asks of the gate, the calls that
//! carry it (`approval::approve-always`, then `approval::resolve`), and their results.

use crate::mapping::json::Field;
use serde_json::{Value, json};

use super::{
    Answer, DEFAULT_DENY, Key, OPT_ALLOW_ALWAYS, OPT_ALLOW_ONCE, OPT_DENY, OPT_FS_ALWAYS,
    OPT_FS_SESSION,
};
use crate::mapping::json::{self as j, id_field, str_field};
use crate::mapping::{Mapper, Out, OutCall};
use switchboard_core::gate::Decision;
use switchboard_core::transcript::Level;

/// What a decision asks of the gate.
#[derive(Clone, Debug, PartialEq)]
pub enum Act {
    Allow {
        always: bool,
        duration: Option<&'static str>,
    },
    Deny(String),
    /// Send nothing: the call stays held (durable; another console may answer it).
    Hold,
    Unsupported,
}

pub fn act_of(d: &Decision, fs: bool) -> Act {
    let once = fs.then_some("once");
    match d {
        Decision::Option { option_id, .. } => match option_id.as_str() {
            OPT_ALLOW_ONCE => Act::Allow {
                always: false,
                duration: once,
            },
            OPT_ALLOW_ALWAYS if !fs => Act::Allow {
                always: true,
                duration: None,
            },
            OPT_FS_SESSION if fs => Act::Allow {
                always: false,
                duration: Some("session"),
            },
            OPT_FS_ALWAYS if fs => Act::Allow {
                always: false,
                duration: Some("always"),
            },
            OPT_DENY => Act::Deny(DEFAULT_DENY.into()),
            _ => Act::Unsupported,
        },
        Decision::Allow {
            updated_input: None,
            always,
        } => Act::Allow {
            always: *always && !fs,
            // A standing filesystem grant is the session's, never the host's.
            duration: if fs && *always { Some("session") } else { once },
        },
        Decision::Deny { message, .. } => Act::Deny(if message.trim().is_empty() {
            DEFAULT_DENY.into()
        } else {
            message.clone()
        }),
        Decision::Cancelled => Act::Hold,
        _ => Act::Unsupported,
    }
}

impl Mapper {
    /// The human's decision on a card.
    pub(in crate::mapping) fn answer(&mut self, gate_id: &str, decision: &Decision, out: &mut Out) {
        let Some(key) = self.gates.by_id.get(gate_id).cloned() else {
            self.report(
                None,
                Level::Warn,
                format!(
                    "card {} is no longer held: nothing sent",
                    j::title(Some(gate_id), "")
                ),
                out,
            );
            return;
        };
        let Some(g) = self.gates.by_key.get_mut(&key) else {
            return;
        };
        if g.answered.is_some() || !g.open {
            return;
        }
        let root = g.root.clone();
        let fs = g.record.fs.is_some();
        let act = act_of(decision, fs);
        let and_stop = matches!(
            decision,
            Decision::Deny {
                interrupt: true,
                ..
            }
        );
        g.open = false;
        match act {
            Act::Hold => {
                out.protocol(
                    &root,
                    Level::Info,
                    format!(
                        "held call {} left held: it is durable and another console may answer it",
                        g.record.call
                    ),
                );
                return;
            }
            Act::Unsupported => {
                out.protocol(&root, Level::Warn, "that answer does not apply to an iii held call: nothing sent, the card is back");
                self.reopen(&key, out);
                return;
            }
            _ if !self.online => {
                out.protocol(
                    &root,
                    Level::Warn,
                    "offline: the decision was not sent; the card is back",
                );
                self.reopen(&key, out);
                return;
            }
            _ => {}
        }
        let Some(g) = self.gates.by_key.get_mut(&key) else {
            return;
        };
        let (session, call, f) = (
            g.record.session.clone(),
            g.record.call.clone(),
            g.record.function_id.clone(),
        );
        match act {
            Act::Allow { always: true, .. } => {
                g.answered = Some(Answer::Always);
                let f_always = self.generation().unwrap_or_default().approve_always();
                out.calls.push(OutCall {
                    function_id: f_always.into(),
                    payload: json!({"session_id": session, "function_id": f}),
                    retry_safe: true,
                });
            }
            Act::Allow { duration, .. } => {
                g.answered = Some(Answer::Resolving { allow: true });
                let mut p =
                    json!({"session_id": session, "function_call_id": call, "decision": "allow"});
                if let Some(d) = duration {
                    // The `folder_access` records' gate took `grant_scope`; the
                    // `filesystem_access` ones' takes `access_duration` (same words).
                    let field = if g.record.kind == "folder_access" {
                        "grant_scope"
                    } else {
                        "access_duration"
                    };
                    p[field] = json!(d);
                }
                out.calls.push(OutCall {
                    function_id: "approval::resolve".into(),
                    payload: p,
                    retry_safe: true,
                });
            }
            Act::Deny(reason) => {
                g.answered = Some(Answer::Resolving { allow: false });
                out.calls.push(OutCall {
                    function_id: "approval::resolve".into(),
                    payload: json!({"session_id": session, "function_call_id": call, "decision": "deny", "reason": reason}),
                    retry_safe: true,
                });
                if and_stop {
                    // "Deny & stop": the model reads the reason, then the turn is stopped.
                    let root = self.gates.by_key.get(&key).map(|g| g.root.clone());
                    if let Some(root) = root {
                        self.stop(&root, out);
                    }
                }
            }
            Act::Hold | Act::Unsupported => {}
        }
    }

    /// Put a card back (a new id: the UI closed the old one).
    fn reopen(&mut self, key: &Key, out: &mut Out) {
        let Some(g) = self.gates.remove(key) else {
            return;
        };
        let full = self.full_args(&g.record);
        self.open_card(
            g.root,
            g.record,
            g.rev,
            g.version + 1,
            full,
            g.seen,
            g.opened,
            out,
            None,
        );
    }

    pub(in crate::mapping) fn approve_always_result(&mut self, request: &Value, out: &mut Out) {
        let (Some(session), Some(f)) = (
            id_field(request, "session_id"),
            id_field(request, "function_id"),
        ) else {
            return;
        };
        // The standing approval is recorded: now release the held call(s) it was for.
        let mut keys: Vec<Key> = self
            .gates
            .by_key
            .iter()
            .filter(|(k, g)| {
                k.0 == session && g.record.function_id == f && g.answered == Some(Answer::Always)
            })
            .map(|(k, _)| k.clone())
            .collect();
        keys.sort();
        for k in keys {
            if let Some(g) = self.gates.by_key.get_mut(&k) {
                g.answered = Some(Answer::Resolving { allow: true });
            }
            out.calls.push(OutCall {
                function_id: "approval::resolve".into(),
                payload: json!({"session_id": k.0, "function_call_id": k.1, "decision": "allow"}),
                retry_safe: true,
            });
        }
    }

    pub(in crate::mapping) fn resolve_result(
        &mut self,
        request: &Value,
        result: &Value,
        now_ms: u64,
        out: &mut Out,
    ) {
        let (Some(session), Some(call)) = (
            id_field(request, "session_id"),
            id_field(request, "function_call_id"),
        ) else {
            return;
        };
        let key = (session.to_string(), call.to_string());
        let allow = str_field(request, "decision") == Some("allow");
        match result.field("resolved").and_then(Value::as_bool) {
            Some(true) => {
                let seq = self.next_seq();
                let rev = self.gates.by_key.get(&key).map(|g| g.rev.clone());
                self.gates.resolved_at(&key, seq, rev.unwrap_or_default());
                let f = self
                    .gates
                    .remove(&key)
                    .map(|g| g.record.function_id)
                    .unwrap_or_default();
                if allow {
                    self.watch_start(&key, &f, now_ms);
                }
            }
            other => {
                if other.is_none() {
                    self.report(
                        Some(session),
                        Level::Warn,
                        "approval::resolve result without `resolved`: re-reading".into(),
                        out,
                    );
                }
                // Unknown or already decided (a race with another console): refresh quietly;
                // the listing shows the card again if the call is still held.
                if let Some(g) = self.gates.by_key.get_mut(&key) {
                    g.answered = None;
                    g.open = false;
                }
                self.start_listing(out, Some(session));
            }
        }
    }

    pub(in crate::mapping) fn decision_failed(
        &mut self,
        request: &Value,
        what: &str,
        out: &mut Out,
    ) {
        let Some(session) = id_field(request, "session_id") else {
            return;
        };
        let keys: Vec<Key> = match id_field(request, "function_call_id") {
            Some(c) => vec![(session.to_string(), c.to_string())],
            None => {
                let f = id_field(request, "function_id").unwrap_or("");
                self.gates
                    .by_key
                    .iter()
                    .filter(|(k, g)| {
                        k.0 == session
                            && g.record.function_id == f
                            && g.answered == Some(Answer::Always)
                    })
                    .map(|(k, _)| k.clone())
                    .collect()
            }
        };
        self.report(
            Some(session),
            Level::Error,
            format!("{what}: the decision was not applied; the card is back"),
            out,
        );
        for k in keys {
            if let Some(g) = self.gates.by_key.get_mut(&k) {
                g.answered = None;
                g.open = false;
            }
            self.reopen(&k, out);
        }
    }
}
