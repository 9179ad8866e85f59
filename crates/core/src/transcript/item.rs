//! One transcript row: what it holds (`ItemKind`), when it came and its render cache.

use crate::diff::Diff;

use super::height::HeightCache;

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

    /// Every string this row holds, always in the same order for the same variant and plan
    /// length: a packed chunk (`rows.rs`) moves them out and puts them back in this order.
    /// Each variant is named field by field, so a string field added later fails to compile
    /// here instead of being left out of the pack. A diff (`ToolCall::diff`) stays whole:
    /// its strings are not visited.
    pub(super) fn strings_mut(&mut self, f: &mut impl FnMut(&mut String)) {
        match self {
            ItemKind::User { text }
            | ItemKind::Assistant {
                text,
                streaming: _,
                aborted: _,
            }
            | ItemKind::Thinking {
                text,
                redacted: _,
                streaming: _,
            }
            | ItemKind::Audit { text, tone: _ }
            | ItemKind::Protocol { text, level: _ } => f(text),
            ItemKind::ToolCall {
                id,
                name,
                summary,
                input,
                diff: _,
            } => {
                f(id);
                f(name);
                f(summary);
                f(input);
            }
            ItemKind::ToolResult {
                tool_use_id,
                text,
                is_error: _,
            } => {
                f(tool_use_id);
                f(text);
            }
            ItemKind::System { label, text } | ItemKind::Generic { label, raw: text } => {
                f(label);
                f(text);
            }
            ItemKind::TurnResult {
                ok: _,
                subtype,
                text,
                cost_usd: _,
                input_tokens: _,
                output_tokens: _,
                duration_ms: _,
            } => {
                f(subtype);
                f(text);
            }
            ItemKind::Plan { entries } => {
                for PlanEntry {
                    content,
                    status,
                    priority,
                } in entries
                {
                    f(content);
                    f(status);
                    f(priority);
                }
            }
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
#[derive(Debug)]
pub struct Item {
    pub kind: ItemKind,
    pub at_ms: u64,
    pub expanded: bool,
    /// Bumped on every change so cached heights are invalidated.
    pub rev: u32,
    /// The row's height at one width, written by the renderer: a pure cache (see
    /// `HeightCache`). Rows live in chunks shared across threads (replay checkpoints), so the
    /// cache is an atomic rather than a `Cell`.
    pub height_cache: HeightCache,
}

impl Clone for Item {
    fn clone(&self) -> Self {
        Item {
            kind: self.kind.clone(),
            at_ms: self.at_ms,
            expanded: self.expanded,
            rev: self.rev,
            height_cache: self.height_cache.clone(),
        }
    }
}

impl Item {
    pub fn new(kind: ItemKind, at_ms: u64) -> Self {
        Item {
            kind,
            at_ms,
            expanded: false,
            rev: 0,
            height_cache: HeightCache::default(),
        }
    }
}
