//! Transcripts: `session::messages` hydrates, `message-added` / `message-updated` reconcile.
//!
//! The highest revision per entry wins (hydrated entries count as -1, so any live update
//! replaces them); rows are placed in `parent_id` order: an entry whose parent is not placed
//! yet waits (bounded) until it is, whatever the arrival order.

use std::borrow::Cow;
use std::hash::{BuildHasher, Hasher};

use super::json::Field;
use serde_json::{Value, json};

use super::json::{self as j, MAX_TEXT, array, bool_field, id_field, str_field};
use super::remembered::{RecentCalls, Revisions};
use super::{MAX_PAGES, Mapper, Out, PAGE, node_key};
use switchboard_core::msg::BackendEvent;
use switchboard_core::text::{sanitize, sanitize_owned, truncate_owned};
use switchboard_core::transcript::{ItemKind, ItemOp, Level};

/// Entries whose revision we remember per session; past it updates append fresh rows.
pub const MAX_ENTRIES: usize = 50_000;
/// Entries waiting for their parent.
pub const MAX_ORPHANS: usize = 256;
/// Function-call arguments remembered per session (for the gate cards): the latest calls,
/// which are the ones held for approval.
pub const MAX_CALLS: usize = 256;

/// The revision a hydrated entry counts as.
pub const HYDRATED: i64 = -1;

#[derive(Clone, Debug)]
struct Orphan {
    entry: String,
    parent: String,
    body: Value,
    revision: i64,
}

#[derive(Clone, Debug, Default)]
pub struct Msgs {
    /// entry id (its `key`) → highest revision seen, and the fingerprint of what was shown
    /// for it. Keyed by a seeded hash, not the id: every replay checkpoint copies this map,
    /// and a copy of fixed-size entries is one block, not an allocation per id.
    revisions: Revisions,
    /// Keys for entry ids (randomly seeded: the engine cannot aim for a collision).
    seed: std::collections::hash_map::RandomState,
    /// The last entry placed by the hydrate in progress (its next page chains to it).
    hydrate_tail: Option<String>,
    /// A re-read after a reconnect is running: its content replaces what we show (changes
    /// while offline were never pushed), but the revisions we know stay, so an older event
    /// delivered late still never overwrites.
    refresh: bool,
    orphans: Vec<Orphan>,
    /// function_call id → (function id, arguments as compact JSON), from `function_call`
    /// blocks. Shared with the copies of this mapping (replay checkpoints): a copy does not
    /// copy the arguments. Kept as text, read back only when a card needs them: a tree of
    /// the same arguments takes several times the room.
    pub calls: RecentCalls,
}

impl Msgs {
    /// The key `revisions` knows entry `id` by.
    fn key(&self, id: &str) -> u64 {
        let mut h = self.seed.build_hasher();
        h.write(id.as_bytes());
        h.write_u8(0xff);
        h.finish()
    }

    /// Before a full re-read: the re-read's content replaces what we hold.
    pub fn stale(&mut self) {
        self.refresh = true;
        self.hydrate_tail = None;
    }

    /// Entries waiting for their parent.
    #[cfg(test)]
    pub fn orphan_count(&self) -> usize {
        self.orphans.len()
    }
}

/// What `render` reads of an entry (`custom` and `message`), fingerprinted: a re-read that
/// brings the same content back shows nothing new, so it sends nothing. Keyed by a random
/// seed of this process (one for every mapping, so a replay's reader thread can take it
/// ahead of the mapping: see `replay::parse_ahead`). foldhash, not SipHash: SipHash of every
/// message body was an eighth of an iii replay's work. foldhash has no collisions that hold
/// whatever the seed, so the engine cannot aim for one.
pub fn fingerprint(body: &Value) -> u64 {
    static SEED: std::sync::OnceLock<foldhash::quality::RandomState> = std::sync::OnceLock::new();
    let mut h = SEED.get_or_init(Default::default).build_hasher();
    for k in ["custom", "message"] {
        match body.field(k) {
            Some(v) => j::hash_value(v, &mut h),
            None => h.write_u8(0xff),
        }
    }
    h.finish()
}

/// The text of a content list (or a plain string), bounded.
fn text_of(content: Option<&Value>, kinds: &[&str]) -> String {
    let s = match content {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(blocks)) => {
            // The pieces first, then one buffer of their exact length: the row keeps this
            // string for the whole session, and a buffer grown piece by piece held up to
            // twice the text (a replay's largest allocation).
            let mut pieces: Vec<Cow<'_, str>> = Vec::new();
            let mut len = 0;
            for b in blocks {
                let ty = str_field(b, "type").unwrap_or("");
                if !kinds.contains(&ty) {
                    continue;
                }
                let t: Cow<'_, str> = match ty {
                    "image" => "[image]".into(),
                    "file" => format!("[file {}]", str_field(b, "name").unwrap_or("")).into(),
                    "redacted_thinking" => "[redacted thinking]".into(),
                    _ => str_field(b, "text")
                        .or_else(|| str_field(b, "thinking"))
                        .unwrap_or("")
                        .into(),
                };
                if t.is_empty() {
                    continue;
                }
                len += t.len() + usize::from(len > 0);
                pieces.push(t);
                if len > MAX_TEXT {
                    break;
                }
            }
            let mut s = String::with_capacity(len);
            for (i, t) in pieces.iter().enumerate() {
                if i > 0 {
                    s.push('\n');
                }
                s.push_str(t);
            }
            s
        }
        _ => String::new(),
    };
    // Cut and cleaned where it stands: no copy for clean text under the bound.
    sanitize_owned(Cow::Owned(truncate_owned(s, MAX_TEXT)))
}

/// The rows of one entry (`message` or `custom`), each keyed so a later revision replaces it.
fn render(entry: &str, body: &Value, calls: &mut RecentCalls) -> Vec<ItemOp> {
    let mut ops = Vec::new();
    let key = format!("e:{entry}");
    let up = |k: String, kind: ItemKind| ItemOp::Upsert { key: k, kind };
    if let Some(custom) = body.field("custom").filter(|c| c.is_object()) {
        ops.push(up(
            key,
            ItemKind::System {
                label: j::title(str_field(custom, "custom_type"), "custom"),
                text: text_of(custom.field("content"), &["text"]),
            },
        ));
        return ops;
    }
    let Some(m) = body.field("message").filter(|m| m.is_object()) else {
        return ops;
    };
    let content = m.field("content");
    match str_field(m, "role").unwrap_or("") {
        "user" => ops.push(up(
            key,
            ItemKind::User {
                text: text_of(content, &["text", "image", "file"]),
            },
        )),
        "assistant" => {
            let thinking = text_of(content, &["thinking", "redacted_thinking"]);
            if !thinking.is_empty() {
                let redacted = content.and_then(Value::as_array).is_some_and(|b| {
                    b.iter()
                        .any(|b| str_field(b, "type") == Some("redacted_thinking"))
                });
                ops.push(up(
                    format!("{key}:thinking"),
                    ItemKind::Thinking {
                        text: thinking,
                        redacted,
                        streaming: false,
                    },
                ));
            }
            let text = text_of(content, &["text", "image", "file"]);
            let stop = str_field(m, "stop_reason");
            if !text.is_empty() || stop == Some("aborted") {
                ops.push(up(
                    key.clone(),
                    ItemKind::Assistant {
                        text,
                        streaming: false,
                        aborted: stop == Some("aborted"),
                    },
                ));
            }
            for b in content
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[])
            {
                if str_field(b, "type") != Some("function_call") {
                    continue;
                }
                let (Some(id), Some(f)) = (id_field(b, "id"), str_field(b, "function_id")) else {
                    continue;
                };
                let args = b.field("arguments").unwrap_or(&Value::Null);
                // Arguments past the display bound are not kept whole: the card then
                // falls back to the excerpt rather than show a cut argument as full.
                // Straight into bytes: `Display` goes through the formatter a piece at a
                // time, at twice the cost.
                let compact = serde_json::to_string(args).unwrap_or_default();
                // The pretty form from the compact one: printed once, not twice.
                let mut pretty = truncate_owned(
                    switchboard_core::pretty::pretty_from_compact(&compact),
                    MAX_TEXT,
                );
                // The row keeps it: not the room the printer grew into.
                pretty.shrink_to_fit();
                let summary = sanitize(&switchboard_core::text::tool_input_summary_compact(
                    f, args, &compact,
                ));
                if compact.len() <= MAX_TEXT {
                    calls.insert(id, (f.to_string(), compact.into_boxed_str()), MAX_CALLS);
                } else {
                    calls.remove(id);
                }
                ops.push(up(
                    format!("call:{id}"),
                    ItemKind::ToolCall {
                        id: id.to_string(),
                        name: j::title(Some(f), "function"),
                        summary,
                        input: pretty,
                        diff: None,
                    },
                ));
            }
            if stop == Some("error") {
                ops.push(up(
                    format!("{key}:error"),
                    ItemKind::System {
                        label: "error".into(),
                        text: j::title(str_field(m, "error_kind"), "the generation failed"),
                    },
                ));
            }
        }
        "function_result" => {
            let call = id_field(m, "function_call_id").unwrap_or(entry);
            ops.push(up(
                format!("res:{call}"),
                ItemKind::ToolResult {
                    tool_use_id: call.to_string(),
                    text: text_of(content, &["text", "image", "file"]),
                    is_error: bool_field(m, "is_error").unwrap_or(false),
                },
            ));
        }
        "custom" => ops.push(up(
            key,
            ItemKind::System {
                label: j::title(str_field(m, "custom_type"), "custom"),
                text: text_of(content, &["text"]),
            },
        )),
        other => ops.push(up(
            key,
            ItemKind::Generic {
                label: j::title(Some(other), "message"),
                raw: j::compact(m),
            },
        )),
    }
    ops
}

/// An entry's rows, on its session's node.
fn show(root: &str, node: &str, ops: Vec<ItemOp>, out: &mut Out) {
    for op in ops {
        out.ev(
            root,
            BackendEvent::Item {
                node: Some(node.to_string()),
                op,
            },
        );
    }
}

impl Mapper {
    /// Ask for a session's transcript (once per connection).
    pub(super) fn hydrate(&mut self, session: &str, out: &mut Out) {
        let Some(s) = self.sessions.get_mut(session) else {
            return;
        };
        if s.hydrating {
            return;
        }
        s.hydrating = true;
        s.msgs.hydrate_tail = None;
        self.read(
            out,
            "session::messages",
            json!({"session_id": session, "limit": PAGE}),
        );
    }

    pub(super) fn messages_page(&mut self, request: &Value, result: &Value, out: &mut Out) {
        let Some(session) = id_field(request, "session_id") else {
            return;
        };
        let session = session.to_string();
        if !self.sessions.contains_key(&session) {
            return;
        }
        for item in array(result, "messages") {
            let Some(entry) = id_field(item, "entry_id") else {
                continue;
            };
            // The active path, oldest first: each entry follows the one before it.
            let parent = self
                .sessions
                .get(&session)
                .and_then(|s| s.msgs.hydrate_tail.clone());
            self.apply_entry(
                &session,
                entry,
                parent.as_deref(),
                item,
                super::messages::HYDRATED,
                true,
                None,
                out,
            );
            if let Some(s) = self.sessions.get_mut(&session) {
                s.msgs.hydrate_tail = Some(entry.to_string());
            }
        }
        if let Some(cursor) = id_field(result, "next_cursor")
            && self.count_page(&format!("messages:{session}")) < MAX_PAGES
        {
            let next = j::with_cursor(request, cursor);
            self.read(out, "session::messages", next);
        } else if let Some(s) = self.sessions.get_mut(&session) {
            s.msgs.refresh = false;
        }
        self.upgrade_gates(&session, out);
    }

    pub(super) fn message_added(&mut self, p: &Value, out: &mut Out) {
        let (Some(session), Some(entry)) = (id_field(p, "session_id"), id_field(p, "entry_id"))
        else {
            return;
        };
        let session = session.to_string();
        // A session we do not know yet (a sub-agent before its turn-started) is not made a
        // root on a message alone: its transcript is read in full once it is known.
        if !self.sessions.contains_key(&session) {
            return;
        }
        let parent = id_field(p, "parent_id");
        // An added entry carries no revision: it is the first one.
        let rev = j::i64_field(p, "revision").unwrap_or(0);
        let fp = self.fingerprint_ahead.take();
        self.apply_entry(&session, entry, parent, p, rev, false, fp, out);
        self.upgrade_gates(&session, out);
    }

    pub(super) fn message_updated(&mut self, p: &Value, out: &mut Out) {
        let (Some(session), Some(entry)) = (id_field(p, "session_id"), id_field(p, "entry_id"))
        else {
            return;
        };
        let Some(rev) = j::i64_field(p, "revision") else {
            self.report(
                Some(session),
                Level::Warn,
                "session::message-updated without a revision ignored".into(),
                out,
            );
            return;
        };
        let session = session.to_string();
        // A session we do not know yet (a sub-agent before its turn-started) is not made a
        // root on a message alone: its transcript is read in full once it is known.
        if !self.sessions.contains_key(&session) {
            return;
        }
        let known = self
            .sessions
            .get(&session)
            .is_some_and(|s| s.msgs.revisions.contains(s.msgs.key(entry)));
        let fp = self.fingerprint_ahead.take();
        if known {
            self.apply_entry(&session, entry, None, p, rev, false, fp, out);
        } else {
            // An update for an entry not placed yet: place it after its parent when known.
            let parent = id_field(p, "parent_id");
            self.apply_entry(&session, entry, parent, p, rev, false, fp, out);
        }
        self.upgrade_gates(&session, out);
    }

    #[allow(clippy::too_many_arguments)]
    fn apply_entry(
        &mut self,
        session: &str,
        entry: &str,
        parent: Option<&str>,
        body: &Value,
        revision: i64,
        hydrated: bool,
        // The body's `fingerprint`, when the replay's reader took it ahead.
        fp: Option<u64>,
        out: &mut Out,
    ) {
        let Some(s) = self.sessions.get_mut(session) else {
            return;
        };
        let root = s.root.clone();
        let node = node_key(&root, session);
        let msgs = &mut s.msgs;
        let key = msgs.key(entry);
        if let Some((known, shown)) = msgs.revisions.get(key) {
            let refresh = hydrated && msgs.refresh;
            if known >= revision && !refresh {
                return;
            }
            // A re-read brings every entry back; one that reads as it did changes nothing.
            let fp = fp.unwrap_or_else(|| fingerprint(body));
            msgs.revisions.insert(key, (known.max(revision), fp));
            if fp == shown {
                return;
            }
            show(&root, &node, render(entry, body, &mut msgs.calls), out);
            return;
        }
        let placeable = hydrated
            || parent.is_none()
            || parent.is_some_and(|p| msgs.revisions.contains(msgs.key(p)));
        if !placeable {
            let parent = parent.unwrap_or_default().to_string();
            if let Some(o) = msgs.orphans.iter_mut().find(|o| o.entry == entry) {
                if o.revision < revision {
                    o.revision = revision;
                    o.body = body.clone();
                }
                return;
            }
            msgs.orphans.push(Orphan {
                entry: entry.to_string(),
                parent,
                body: body.clone(),
                revision,
            });
            if msgs.orphans.len() <= MAX_ORPHANS {
                return;
            }
            // Too many waiting: show the oldest rather than hold them for ever.
            let o = msgs.orphans.remove(0);
            out.protocol(
                &root,
                Level::Warn,
                format!(
                    "transcript entry {} shown before its parent {} arrived",
                    j::title(Some(&o.entry), ""),
                    j::title(Some(&o.parent), "")
                ),
            );
            self.place(session, &o.entry, &o.body, o.revision, None, out);
            return;
        }
        self.place(session, entry, body, revision, fp, out);
    }

    /// Show an entry, then every entry that was waiting for it.
    fn place(
        &mut self,
        session: &str,
        entry: &str,
        body: &Value,
        revision: i64,
        fp: Option<u64>,
        out: &mut Out,
    ) {
        // The entry itself by reference (a copy of every message body cost the replay more
        // than a tenth of its mapping), the ones that waited for it moved out of `orphans`.
        let mut queue = Vec::new();
        if !self.place_one(session, entry, body, revision, fp, &mut queue, out) {
            return;
        }
        while let Some(o) = queue.pop() {
            if !self.place_one(
                session, &o.entry, &o.body, o.revision, None, &mut queue, out,
            ) {
                return;
            }
        }
    }

    /// Show one entry and queue the entries that waited for it (`false`: no such session).
    #[allow(clippy::too_many_arguments)]
    fn place_one(
        &mut self,
        session: &str,
        entry: &str,
        body: &Value,
        revision: i64,
        fp: Option<u64>,
        queue: &mut Vec<Orphan>,
        out: &mut Out,
    ) -> bool {
        let Some(s) = self.sessions.get_mut(session) else {
            return false;
        };
        let root = s.root.clone();
        let node = node_key(&root, session);
        let msgs = &mut s.msgs;
        if msgs.revisions.len() < MAX_ENTRIES {
            let fp = fp.unwrap_or_else(|| fingerprint(body));
            msgs.revisions.insert(msgs.key(entry), (revision, fp));
        }
        show(&root, &node, render(entry, body, &mut msgs.calls), out);
        // Children in arrival order among siblings (reversed: the queue pops the end).
        let at = queue.len();
        queue.extend(msgs.orphans.extract_if(.., |o| o.parent == entry));
        queue[at..].reverse();
        true
    }
}
