//! The transcript pane: the selected node's items, following the tail or scrolled.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::convert::core_rect;
use super::focus_border;
use super::items::{item_height, item_lines, sync_heights};
use super::theme::Theme;
use super::wrap;
use switchboard_core::state::{Focus, State, ViewMetrics};
use switchboard_core::text::one_line;

/// Rows measured per frame while a long transcript is re-indexed at a new width in the
/// background of following (the tail is drawn without the index meanwhile).
pub(super) const REINDEX_PER_FRAME: usize = 4096;

pub(super) fn render_transcript(
    state: &State,
    theme: &Theme,
    f: &mut Frame,
    area: Rect,
    metrics: &mut ViewMetrics,
) {
    let node = &state.tree.nodes[state.selected_node];
    let title = if state.selected_node == 0 {
        format!(" {} ", node.name)
    } else {
        format!(" {} · {} ", node.name, one_line(&node.description, 50))
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(focus_border(state, Focus::Transcript, theme))
        .title(Line::from(Span::styled(title, theme.title)));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let (w, h) = (inner.width, inner.height as usize);
    metrics.transcript_height = inner.height;
    metrics.transcript_area = core_rect(inner);
    metrics.item_rows.clear();
    let items = &node.transcript.items;
    if items.is_empty() {
        let hint = if state.replay.is_some() {
            "Nothing replayed here yet: Space plays, . steps, ] jumps to the next gate."
        } else if state.selected_node == 0 && !state.session.abilities.prompt {
            // What this node is, since nothing is typed to it.
            let about = state.session.abilities.about.as_deref().unwrap_or(
                "This session takes no prompt from here; its calls wait as cards (g opens the oldest).",
            );
            let lines = wrap::wrap(about, w, theme.dim, Span::raw(""), Span::raw(""));
            f.render_widget(Paragraph::new(lines), inner);
            metrics.drawn_scroll_back = 0;
            return;
        } else if state.selected_node == 0 {
            "No messages yet. Type a prompt below and press Enter."
        } else {
            "This sub-agent has produced nothing yet."
        };
        f.render_widget(Paragraph::new(Span::styled(hint, theme.dim)), inner);
        metrics.drawn_scroll_back = 0;
        return;
    }
    // Only the visible items are measured and turned into lines: following the tail, the
    // frame walks back from the last item; scrolled or with a selection, the height index
    // (prefix sums per width) finds the first visible item in O(log n). Either way a frame
    // costs the screen, not the session.
    // One gutter column marks the selected item, so items wrap one column narrower.
    let iw = w.saturating_sub(1).max(1);
    let t = &node.transcript;
    let selected = state.selected_item.filter(|s| *s < items.len());
    let (first, skip, back) = if state.scroll_back == 0 && selected.is_none() {
        // Keep the index current (changes and new rows only; a few thousand rows per frame
        // after a resize) so scrolling up later finds it ready.
        sync_heights(t, iw, theme, Some(REINDEX_PER_FRAME));
        let mut need = h;
        let mut i = items.len();
        let mut skip = 0;
        while i > 0 && need > 0 {
            i -= 1;
            let ih = item_height(&items[i], iw, theme) as usize;
            if ih >= need {
                skip = ih - need;
                need = 0;
            } else {
                need -= ih;
            }
        }
        (i, skip, 0)
    } else {
        sync_heights(t, iw, theme, None);
        let ix = t.heights.borrow();
        let total = ix.total() as usize;
        let max_back = total.saturating_sub(h);
        let mut back = state.scroll_back.min(max_back);
        if let Some(sel) = selected {
            // Keep the selected item in view.
            let top_of_sel = ix.prefix(sel) as usize;
            let bottom_of_sel = top_of_sel + ix.height(sel) as usize;
            let view_top = max_back - back;
            if top_of_sel < view_top {
                back = max_back - top_of_sel;
            } else if bottom_of_sel > view_top + h {
                back = max_back.saturating_sub(bottom_of_sel.saturating_sub(h));
            }
        }
        let top = total.saturating_sub(h).saturating_sub(back);
        let first = ix.find(top as u64).min(items.len().saturating_sub(1));
        (first, top - ix.prefix(first) as usize, back)
    };
    metrics.drawn_scroll_back = back;
    let mut lines: Vec<Line> = Vec::with_capacity(h);
    let mut rows: Vec<usize> = Vec::with_capacity(h);
    let query = state
        .search
        .as_ref()
        .map(|s| s.query.to_lowercase())
        .filter(|q| !q.is_empty());
    for (i, item) in items.iter().enumerate().skip(first) {
        if lines.len() >= h {
            break;
        }
        let mut il = item_lines(item, iw, theme);
        let ih = il.len();
        {
            // A height that moved without the index hearing of it: heal the visible row.
            let mut ix = t.heights.borrow_mut();
            if i < ix.len() && ix.width() == iw && ix.height(i) as usize != ih {
                ix.set(i, ih as u32);
            }
        }
        let selected = state.selected_item == Some(i) && state.focus == Focus::Transcript;
        for (n, l) in il.iter_mut().enumerate() {
            // The blank line after each item stays unmarked.
            let mark = selected && n + 1 < ih;
            l.spans
                .insert(0, Span::styled(if mark { "▍" } else { " " }, theme.accent));
        }
        let skip = if i == first { skip } else { 0 };
        let before = lines.len();
        let take = h - lines.len();
        if let Some(q) = &query {
            // Highlight only the lines drawn.
            for l in il.iter_mut().skip(skip).take(take) {
                highlight(l, q, theme.search_match);
            }
        }
        lines.extend(il.into_iter().skip(skip).take(take));
        rows.extend(std::iter::repeat_n(i, lines.len() - before));
    }
    lines.truncate(h);
    rows.truncate(h);
    metrics.item_rows = rows;
    f.render_widget(Paragraph::new(lines), inner);
    if back > 0 {
        let note = format!(" ↑ {back} lines back · End follows ");
        let nw = note.chars().count() as u16;
        if inner.width > nw {
            let r = Rect {
                x: inner.x + inner.width - nw,
                y: area.y + area.height - 1,
                width: nw,
                height: 1,
            };
            f.render_widget(Paragraph::new(Span::styled(note, theme.accent)), r);
        }
    }
}

/// Mark every case-insensitive occurrence of `q` (already lowercase) in `line`.
fn highlight(line: &mut Line<'static>, q: &str, style: ratatui::style::Style) {
    let qc: Vec<char> = q.chars().collect();
    let lower = |c: char| c.to_lowercase().next().unwrap_or(c);
    let mut out: Vec<Span<'static>> = Vec::new();
    for span in line.spans.drain(..) {
        let chars: Vec<char> = span.content.chars().collect();
        let mut start = 0;
        let mut i = 0;
        while i + qc.len() <= chars.len() {
            if chars[i..i + qc.len()]
                .iter()
                .zip(&qc)
                .all(|(a, b)| lower(*a) == *b)
            {
                if i > start {
                    out.push(Span::styled(
                        chars[start..i].iter().collect::<String>(),
                        span.style,
                    ));
                }
                out.push(Span::styled(
                    chars[i..i + qc.len()].iter().collect::<String>(),
                    span.style.patch(style),
                ));
                i += qc.len();
                start = i;
            } else {
                i += 1;
            }
        }
        if start == 0 {
            out.push(span);
        } else if start < chars.len() {
            out.push(Span::styled(
                chars[start..].iter().collect::<String>(),
                span.style,
            ));
        }
    }
    line.spans = out;
}
