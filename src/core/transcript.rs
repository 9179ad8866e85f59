//! Per-node transcript: an append-only list of compact typed items.

use std::cell::Cell;
use std::collections::HashMap;

use super::diff::Diff;

/// Severity of a protocol row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// How an audit row reads: allowed (green), denied (red) or neutral.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    Allowed,
    Denied,
    Neutral,
}

/// The content of one transcript row.
#[derive(Clone, Debug, PartialEq)]
pub enum ItemKind {
    User {
        text: String,
    },
    Assistant {
        text: String,
        streaming: bool,
        aborted: bool,
    },
    Thinking {
        text: String,
        redacted: bool,
        streaming: bool,
    },
    ToolCall {
        id: String,
        name: String,
        summary: String,
        input: String,
        diff: Option<Box<Diff>>,
    },
    ToolResult {
        tool_use_id: String,
        text: String,
        is_error: bool,
    },
    /// Compaction, retries, status, rate limits, hooks, task lifecycle.
    System {
        label: String,
        text: String,
    },
    TurnResult {
        ok: bool,
        subtype: String,
        text: String,
        cost_usd: Option<f64>,
        input_tokens: u64,
        output_tokens: u64,
        duration_ms: u64,
    },
    Audit {
        text: String,
        tone: Tone,
    },
    /// Protocol problems, raw non-JSON lines, automatic answers.
    Protocol {
        level: Level,
        text: String,
    },
    /// A message of a type or subtype we do not know: shown, never dropped.
    Generic {
        label: String,
        raw: String,
    },
    /// The agent's plan as a checklist (each update replaces the whole list).
    Plan {
        entries: Vec<PlanEntry>,
    },
}

/// One entry of a plan checklist.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanEntry {
    pub content: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: String,
    /// `high`, `medium` or `low`.
    pub priority: String,
}

impl ItemKind {
    /// Rows whose full content is hidden until expanded.
    pub fn expandable(&self) -> bool {
        matches!(
            self,
            ItemKind::Thinking { .. }
                | ItemKind::ToolCall { .. }
                | ItemKind::ToolResult { .. }
                | ItemKind::Generic { .. }
        )
    }

    /// The text a search or a copy of this row uses.
    pub fn text(&self) -> &str {
        match self {
            ItemKind::User { text }
            | ItemKind::Assistant { text, .. }
            | ItemKind::Thinking { text, .. }
            | ItemKind::ToolResult { text, .. }
            | ItemKind::System { text, .. }
            | ItemKind::TurnResult { text, .. }
            | ItemKind::Audit { text, .. }
            | ItemKind::Protocol { text, .. } => text,
            ItemKind::ToolCall { input, .. } => input,
            ItemKind::Generic { raw, .. } => raw,
            ItemKind::Plan { .. } => "plan",
        }
    }

    /// Everything this row holds as plain text: what copy (`c`) and the pager (`o`) take.
    pub fn full_text(&self) -> String {
        match self {
            ItemKind::ToolCall {
                name,
                summary,
                input,
                diff,
                ..
            } => {
                let mut t = format!("{name} {summary}\n");
                if let Some(d) = diff {
                    t.push_str(&d.to_text());
                    t.push('\n');
                }
                t.push_str(input);
                t
            }
            ItemKind::Plan { entries } => entries
                .iter()
                .map(|e| {
                    let mark = match e.status.as_str() {
                        "completed" => "[x]",
                        "in_progress" => "[~]",
                        _ => "[ ]",
                    };
                    format!("{mark} {} ({})", e.content, e.priority)
                })
                .collect::<Vec<_>>()
                .join("\n"),
            ItemKind::System { label, text } => format!("{label}: {text}"),
            ItemKind::Generic { label, raw } => format!("{label}\n{raw}"),
            other => other.text().to_string(),
        }
    }
}

/// One transcript row with its render cache.
#[derive(Clone, Debug)]
pub struct Item {
    pub kind: ItemKind,
    pub at_ms: u64,
    pub expanded: bool,
    /// Bumped on every change so cached heights are invalidated.
    pub rev: u32,
    /// (width, rev, expanded, height): written by the renderer, a pure cache.
    pub height_cache: Cell<Option<(u16, u32, bool, u16)>>,
}

impl Item {
    pub fn new(kind: ItemKind, at_ms: u64) -> Self {
        Item {
            kind,
            at_ms,
            expanded: false,
            rev: 0,
            height_cache: Cell::new(None),
        }
    }
}

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

#[derive(Clone, Debug, Default)]
pub struct Transcript {
    pub items: Vec<Item>,
    by_key: HashMap<String, usize>,
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
        self.items.len() - 1
    }

    pub fn apply(&mut self, op: ItemOp, at_ms: u64) {
        match op {
            ItemOp::Push(kind) => {
                self.push(kind, at_ms);
            }
            ItemOp::Upsert { key, kind } => match self.by_key.get(&key) {
                Some(&i) => {
                    let item = &mut self.items[i];
                    item.kind = kind;
                    item.rev = item.rev.wrapping_add(1);
                }
                None => {
                    let i = self.push(kind, at_ms);
                    self.by_key.insert(key, i);
                }
            },
            ItemOp::AppendText {
                key,
                thinking,
                delta,
            } => {
                let i = match self.by_key.get(&key) {
                    Some(&i) => i,
                    None => {
                        let kind = if thinking {
                            ItemKind::Thinking {
                                text: String::new(),
                                redacted: false,
                                streaming: true,
                            }
                        } else {
                            ItemKind::Assistant {
                                text: String::new(),
                                streaming: true,
                                aborted: false,
                            }
                        };
                        let i = self.push(kind, at_ms);
                        self.by_key.insert(key, i);
                        i
                    }
                };
                let item = &mut self.items[i];
                match &mut item.kind {
                    ItemKind::Assistant { text, .. } | ItemKind::Thinking { text, .. } => {
                        text.push_str(&delta)
                    }
                    _ => return,
                }
                item.rev = item.rev.wrapping_add(1);
            }
            ItemOp::EndStreaming {
                key_prefix,
                aborted: abort,
            } => {
                let idx: Vec<usize> = self
                    .by_key
                    .iter()
                    .filter(|(k, _)| k.starts_with(&key_prefix))
                    .map(|(_, &i)| i)
                    .collect();
                for i in idx {
                    let item = &mut self.items[i];
                    match &mut item.kind {
                        ItemKind::Assistant {
                            streaming, aborted, ..
                        } => {
                            *streaming = false;
                            *aborted |= abort;
                        }
                        ItemKind::Thinking { streaming, .. } => *streaming = false,
                        _ => continue,
                    }
                    item.rev = item.rev.wrapping_add(1);
                }
            }
        }
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
mod size_tests {
    /// Items are kept by the hundred thousand: their size is a budget (benches/perf.rs, P5).
    #[test]
    fn item_stays_compact() {
        let size = std::mem::size_of::<super::Item>();
        assert!(size <= 136, "Item grew to {size} bytes");
    }
}
