//! One transcript item → styled lines at a given width.

use ratatui::text::{Line, Span};

use super::diffs::lines_of_diff;
use super::theme::Theme;
use super::wrap::{clip, wrap};
use switchboard_core::text::{human_count, human_duration, visible_line};
use switchboard_core::transcript::{Item, ItemKind, Level, Tone, Transcript};

/// Lines shown for a collapsed tool result (a diff's are `diffs::COLLAPSED_DIFF`).
const COLLAPSED_RESULT: usize = 3;

fn pad(n: usize) -> Span<'static> {
    Span::raw(" ".repeat(n))
}

/// Render `item` to lines of at most `width` cells.
pub fn item_lines(item: &Item, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    lines_of(item, width, theme, true)
}

/// `item_lines`, with or without the changed words of its diff, which only style lines (so a
/// height, which needs only the lines, does not diff words).
fn lines_of(item: &Item, width: u16, theme: &Theme, words: bool) -> Vec<Line<'static>> {
    let w = width.max(8);
    let mut lines = match &item.kind {
        ItemKind::User { text } => {
            wrap(text, w, theme.user, Span::styled("› ", theme.user), pad(2))
        }
        ItemKind::Assistant {
            text,
            streaming,
            aborted,
        } => {
            let mut l = wrap(text, w, theme.assistant, Span::raw("  "), pad(2));
            if let Some(last) = l.last_mut() {
                if *streaming {
                    last.spans.push(Span::styled("▌", theme.accent));
                }
                if *aborted {
                    last.spans.push(Span::styled(" [aborted]", theme.error));
                }
            }
            l
        }
        ItemKind::Thinking {
            text,
            redacted,
            streaming,
        } => {
            if *redacted {
                vec![Line::from(Span::styled(
                    "✻ thinking (redacted)",
                    theme.thinking,
                ))]
            } else if item.expanded {
                wrap(
                    text,
                    w,
                    theme.thinking,
                    Span::styled("✻ ", theme.thinking),
                    pad(2),
                )
            } else {
                let more = if *streaming { "…" } else { "" };
                vec![Line::from(Span::styled(
                    format!(
                        "✻ thinking{more} ({} chars, Enter expands)",
                        text.chars().count()
                    ),
                    theme.thinking,
                ))]
            }
        }
        ItemKind::ToolCall {
            name,
            summary,
            input,
            diff,
            ..
        } => {
            let name = visible_line(name);
            let head = Line::from(vec![
                Span::styled(format!("⚙ {name} "), theme.tool),
                Span::styled(
                    clip(summary, (w as usize).saturating_sub(name.len() + 3)),
                    theme.text,
                ),
            ]);
            let mut l = vec![head];
            if let Some(d) = diff {
                l.extend(lines_of_diff(d, w, theme, !item.expanded, words));
            }
            if item.expanded {
                l.extend(wrap(input, w, theme.dim, pad(2), pad(2)));
            }
            l
        }
        ItemKind::ToolResult { text, is_error, .. } => {
            let style = if *is_error {
                theme.error
            } else {
                theme.tool_result
            };
            let body = if text.trim().is_empty() {
                "(no output)"
            } else {
                text.as_str()
            };
            let mut l = wrap(body, w, style, Span::styled("  └ ", style), pad(4));
            if !item.expanded && l.len() > COLLAPSED_RESULT {
                let hidden = l.len() - COLLAPSED_RESULT;
                l.truncate(COLLAPSED_RESULT);
                l.push(Line::from(Span::styled(
                    format!(
                        "    … {hidden} more line{} (Enter expands)",
                        if hidden == 1 { "" } else { "s" }
                    ),
                    theme.dim,
                )));
            }
            l
        }
        ItemKind::System { label, text } => wrap(
            text,
            w,
            theme.dim,
            Span::styled(format!("· {label}: "), theme.dim),
            pad(2),
        ),
        ItemKind::TurnResult {
            ok,
            subtype,
            text,
            cost_usd,
            input_tokens,
            output_tokens,
            duration_ms,
        } => {
            let style = if *ok { theme.ok } else { theme.error };
            let cost = cost_usd.map(|c| format!(" · ${c:.4}")).unwrap_or_default();
            // No tokens reported is not "0 in / 0 out"; a cancelled turn ends cancelled.
            let tokens = if *input_tokens == 0 && *output_tokens == 0 {
                String::new()
            } else {
                format!(
                    " · {} in / {} out",
                    human_count(*input_tokens),
                    human_count(*output_tokens)
                )
            };
            let end = match (*ok, subtype.as_str()) {
                (true, "cancelled") => "cancelled",
                (true, _) => "done",
                (false, s) => s,
            };
            let mut l = vec![Line::from(Span::styled(
                clip(
                    &format!(
                        "── turn {end} · {}{tokens}{cost} ──",
                        human_duration(*duration_ms),
                    ),
                    w as usize,
                ),
                style,
            ))];
            if !*ok && !text.is_empty() {
                l.extend(wrap(text, w, theme.error, pad(2), pad(2)));
            }
            l
        }
        ItemKind::Audit { text, tone } => {
            let (glyph, style) = match tone {
                Tone::Allowed => ("✔ ", theme.ok),
                Tone::Denied => ("✘ ", theme.error),
                Tone::Neutral => ("• ", theme.warn),
            };
            wrap(text, w, style, Span::styled(glyph, style), pad(2))
        }
        ItemKind::Protocol { level, text } => {
            let (glyph, style) = match level {
                Level::Info => ("ℹ ", theme.info),
                Level::Warn => ("⚠ ", theme.warn),
                Level::Error => ("✘ ", theme.error),
            };
            wrap(text, w, style, Span::styled(glyph, style), pad(2))
        }
        ItemKind::Generic { label, raw } => {
            let mut l = vec![Line::from(vec![
                Span::styled("? ", theme.warn),
                Span::styled(label.clone(), theme.warn),
            ])];
            if item.expanded {
                let pretty = serde_json::from_str::<serde_json::Value>(raw)
                    .map(|v| switchboard_core::text::pretty_json(&v))
                    .unwrap_or_else(|_| raw.clone());
                l.extend(wrap(&pretty, w, theme.dim, pad(2), pad(2)));
            } else {
                l.push(Line::from(Span::styled(
                    format!("  {}", clip(raw, (w as usize).saturating_sub(2))),
                    theme.dim,
                )));
            }
            l
        }
        ItemKind::Plan { entries } => {
            let done = entries.iter().filter(|e| e.status == "completed").count();
            let mut l = vec![Line::from(Span::styled(
                format!("☰ plan ({done}/{} done)", entries.len()),
                theme.title,
            ))];
            for e in entries {
                let (mark, style) = match e.status.as_str() {
                    "completed" => ("[x] ", theme.ok),
                    "in_progress" => ("[~] ", theme.accent),
                    _ => ("[ ] ", theme.text),
                };
                let text = if e.priority == "high" {
                    format!("{} (high)", e.content)
                } else {
                    e.content.clone()
                };
                l.extend(wrap(
                    &text,
                    w,
                    style,
                    Span::styled(format!("  {mark}"), style),
                    pad(6),
                ));
            }
            l
        }
    };
    // A blank line between items keeps the transcript readable.
    lines.push(Line::default());
    lines
}

#[cfg(test)]
thread_local! {
    /// Rows whose height was asked for: the test that a frame's cost is the screen's.
    pub static HEIGHTS_ASKED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Longest a budgeted `sync_heights` spends measuring new rows in one frame: under a flood of
/// long messages each row costs a wrap of its whole text, and a frame that measured every row
/// applied since the last one would take seconds (keys seem dead meanwhile).
const REINDEX_TIME: std::time::Duration = std::time::Duration::from_millis(4);

/// Bring `t`'s height index up to date at `width`: changed rows are re-measured, new rows
/// appended, at most `budget` of them (and for at most `REINDEX_TIME`) when one is given (a
/// resized long transcript, or one growing under a flood, is indexed over several frames while
/// the tail is drawn directly). True when complete.
pub fn sync_heights(t: &Transcript, width: u16, theme: &Theme, budget: Option<usize>) -> bool {
    let mut ix = t.heights.borrow_mut();
    if ix.width() != width || ix.len() > t.len() {
        ix.reset(width);
    }
    if ix.generation != t.generation() && !ix.is_empty() {
        match t.changes_since(ix.generation) {
            Some(rows) => {
                for r in rows {
                    if r < ix.len() {
                        let h = item_height(&t.items[r], width, theme) as u32;
                        ix.set(r, h);
                    }
                }
            }
            None => ix.reset(width),
        }
    }
    let end = match budget {
        Some(b) => t.len().min(ix.len() + b),
        None => t.len(),
    };
    let until = budget.map(|_| std::time::Instant::now() + REINDEX_TIME);
    // `scan`: an index built from row 0 reads every row, and must not leave them all unpacked.
    let from = ix.len();
    t.items.scan(from, end, |_, item| {
        if until.is_some_and(|u| std::time::Instant::now() >= u) {
            return std::ops::ControlFlow::Break(());
        }
        let h = item_height(item, width, theme) as u32;
        ix.push(h);
        std::ops::ControlFlow::Continue(())
    });
    ix.generation = t.generation();
    ix.len() == t.len()
}

/// Height of `item` at `width`, cached per (width, revision, expanded).
pub fn item_height(item: &Item, width: u16, theme: &Theme) -> u16 {
    #[cfg(test)]
    HEIGHTS_ASKED.with(|c| c.set(c.get() + 1));
    if let Some(h) = item.height_cache.get(width, item.rev, item.expanded) {
        return h;
    }
    let h = lines_of(item, width, theme, false)
        .len()
        .min(u16::MAX as usize) as u16;
    item.height_cache.set(width, item.rev, item.expanded, h);
    h
}

#[cfg(test)]
mod turn_line_tests {
    use super::*;

    fn turn_line(ok: bool, subtype: &str, tokens: (u64, u64), cost: Option<f64>) -> String {
        let item = Item::new(
            ItemKind::TurnResult {
                ok,
                subtype: subtype.into(),
                text: String::new(),
                cost_usd: cost,
                input_tokens: tokens.0,
                output_tokens: tokens.1,
                duration_ms: 2000,
            },
            0,
        );
        item_lines(&item, 120, &Theme::dark())[0].to_string()
    }

    /// A cancelled turn ends "cancelled", not "done"; tokens nobody reported are not zeros.
    #[test]
    fn a_turn_line_says_how_it_ended_and_only_the_usage_reported() {
        assert_eq!(
            turn_line(true, "end_turn", (1200, 30), Some(0.0123)),
            "── turn done · 2.0s · 1.2k in / 30 out · $0.0123 ──"
        );
        assert_eq!(
            turn_line(true, "cancelled", (0, 0), None),
            "── turn cancelled · 2.0s ──"
        );
        assert_eq!(
            turn_line(false, "max_tokens", (5, 0), None),
            "── turn max_tokens · 2.0s · 5 in / 0 out ──"
        );
    }
}
