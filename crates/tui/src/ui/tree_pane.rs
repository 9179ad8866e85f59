//! The tree pane: one row pair per session and sub-agent, only the window drawn.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::convert::{core_rect, ui_rect};
use super::theme::Theme;
use super::wrap::clip;
use super::{focus_border, grey};
use switchboard_core::state::{Focus, State, ViewMetrics};
use switchboard_core::text::{human_count, human_duration, one_line};
use switchboard_core::tree::NodeStatus;

/// Grey the tree rows of sessions whose connection is down (their row says why).
pub(super) fn grey_offline_rows(state: &State, theme: &Theme, f: &mut Frame, m: &ViewMetrics) {
    let area = ui_rect(m.tree_area);
    let rows = &m.tree_rows;
    for (y, (i, _)) in rows.iter().enumerate() {
        if state
            .sessions
            .get(*i)
            .is_some_and(|s| s.session.offline.is_some())
        {
            let row = Rect {
                y: area.y + y as u16,
                height: 1,
                ..area
            };
            grey(f.buffer_mut(), row, theme);
        }
    }
}

fn status_glyph(
    s: &switchboard_core::state::SessionState,
    id: usize,
    theme: &Theme,
) -> (String, ratatui::style::Style) {
    let node = &s.tree.nodes[id];
    let waiting = s.gates_on(id);
    if waiting > 0 {
        return (format!("‖{waiting}"), theme.waiting);
    }
    match node.status {
        NodeStatus::Running => ("●".into(), theme.running),
        NodeStatus::Waiting => ("‖".into(), theme.waiting),
        NodeStatus::Idle => ("○".into(), theme.dim),
        NodeStatus::Pending => ("◌".into(), theme.dim),
        NodeStatus::Completed => ("✔".into(), theme.ok),
        NodeStatus::Failed => ("✘".into(), theme.error),
        NodeStatus::Killed => ("■".into(), theme.error),
    }
}

/// A session's root row when the workspace holds several: name and backend, its gate badge,
/// then status and usage.
fn session_row(
    s: &switchboard_core::state::SessionState,
    selected: bool,
    theme: &Theme,
    w: usize,
    now: u64,
) -> [Line<'static>; 2] {
    let n = &s.tree.nodes[0];
    let pending = s.gates.len();
    let (glyph, gstyle) = if pending > 0 {
        (format!("‖{pending}"), theme.waiting)
    } else if s.closed {
        ("■".to_string(), theme.dim)
    } else if s.session.exited.is_some() {
        match s.session.exited.as_ref().and_then(|e| e.0) {
            Some(0) => ("✔".to_string(), theme.ok),
            _ => ("✘".to_string(), theme.error),
        }
    } else {
        status_glyph(s, 0, theme)
    };
    let fold = if s.collapsed { "▸" } else { "▾" };
    let name_style = if selected {
        theme.selected
    } else {
        theme.title
    };
    let name = if n.name.is_empty() {
        "session"
    } else {
        &n.name
    };
    let head = format!("{fold}{glyph} ");
    let rest_w = w.saturating_sub(unicode_width::UnicodeWidthStr::width(head.as_str()));
    let label = format!("{name} · {}", s.session.backend);
    let first = Line::from(vec![
        Span::styled(fold.to_string(), theme.dim),
        Span::styled(format!("{glyph} "), gstyle),
        Span::styled(clip(&label, rest_w), name_style),
    ]);
    let mut stats = vec![s.status_label()];
    let end = n.ended_ms.unwrap_or(now);
    if end > n.started_ms {
        stats.push(human_duration(end.saturating_sub(n.started_ms)));
    }
    let tokens = s.session.input_tokens + s.session.output_tokens;
    if tokens > 0 {
        stats.push(format!("{} tok", human_count(tokens)));
    }
    if s.session.cost_usd > 0.0 {
        stats.push(format!("${:.2}", s.session.cost_usd));
    }
    let style = if s.session.blind.is_some() && s.session.offline.is_none() {
        theme.error
    } else if pending > 0 {
        theme.waiting
    } else {
        theme.dim
    };
    let second = Line::from(Span::styled(
        clip(&format!("  {}", stats.join(" · ")), w),
        style,
    ));
    [first, second]
}

pub(super) fn render_tree(
    state: &State,
    theme: &Theme,
    f: &mut Frame,
    area: Rect,
    metrics: &mut ViewMetrics,
) {
    // Totals, the selected row's position and the window's rows come from what the reducer
    // keeps (counts per subtree, subtree sizes): a frame costs the pane's height, whatever
    // the number of sessions and sub-agents.
    let totals = switchboard_core::update::row_totals(state);
    let (running, waiting, done, failed) =
        (totals.running, totals.waiting, totals.done, totals.failed);
    let many = state.sessions.len() > 1 && state.focus_root.is_none();
    let title = if many {
        format!(" Sessions ({}) ", state.sessions.len())
    } else {
        " Sessions ".to_string()
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(focus_border(state, Focus::Tree, theme))
        .title(Line::from(Span::styled(title, theme.title)))
        .title_bottom(Line::from(Span::styled(
            if area.width >= 38 {
                format!(" {running} run · {waiting} wait · {done} done · {failed} fail ")
            } else {
                format!(" {running}▶ {waiting}‖ {done}✔ {failed}✘ ")
            },
            theme.dim,
        )));
    let block = match state.focus_root {
        Some(r) => block.title(Line::from(Span::styled(
            format!(" focus: {} (F all) ", state.tree.nodes[r].name),
            theme.accent,
        ))),
        None => block,
    };
    let inner = block.inner(area);
    f.render_widget(block, area);
    metrics.tree_area = core_rect(inner);
    let w = inner.width as usize;
    let h = inner.height as usize;
    // Two rows per node; only the nodes in the window are visited and formatted, so
    // thousands of sub-agents cost the pane's height, not their number.
    let here = (state.selected, state.selected_node);
    let selected_row = 2 * switchboard_core::update::row_index(state, here).unwrap_or(0);
    let top = (selected_row + 2).saturating_sub(h);
    let first = top / 2;
    let mut lines: Vec<Line> = Vec::with_capacity(h + 1);
    let mut drawn: Vec<(usize, usize)> = Vec::with_capacity(h + 1);
    let base = state.focus_root.map_or(0, |r| state.tree.nodes[r].depth);
    for (i, id) in switchboard_core::update::rows_from(state, first).take(h / 2 + 2) {
        let s = &state.sessions[i];
        let n = &s.tree.nodes[id];
        drawn.extend([(i, id), (i, id)]);
        let selected = (i, id) == here;
        if many && id == 0 {
            lines.extend(session_row(s, selected, theme, w, state.now_ms));
            continue;
        }
        // Under a session row, sub-agents sit one level in.
        let indent = "  ".repeat((n.depth.saturating_sub(base) + usize::from(many)).min(w / 2));
        let (glyph, gstyle) = status_glyph(s, id, theme);
        let name_style = if selected {
            theme.selected
        } else {
            theme.title
        };
        let name = if n.name.is_empty() { "agent" } else { &n.name };
        let head = format!("{indent}{glyph} ");
        let rest_w = w.saturating_sub(unicode_width::UnicodeWidthStr::width(head.as_str()));
        lines.push(Line::from(vec![
            Span::raw(indent.clone()),
            Span::styled(format!("{glyph} "), gstyle),
            Span::styled(clip(name, rest_w), name_style),
        ]));
        let end = n.ended_ms.unwrap_or(state.now_ms);
        let mut stats = vec![n.status.label().to_string()];
        if id != 0 || end > n.started_ms {
            stats.push(human_duration(end.saturating_sub(n.started_ms)));
        }
        if n.tokens > 0 {
            stats.push(format!("{} tok", human_count(n.tokens)));
        }
        if n.tool_uses > 0 {
            let s = if n.tool_uses == 1 { "" } else { "s" };
            stats.push(format!("{} tool{s}", n.tool_uses));
        }
        if let Some(t) = &n.last_tool {
            stats.push(t.clone());
        }
        let desc = if n.description.is_empty() {
            String::new()
        } else {
            format!("{} · ", one_line(&n.description, 40))
        };
        lines.push(Line::from(Span::styled(
            clip(&format!("{indent}  {desc}{}", stats.join(" · ")), w),
            theme.dim,
        )));
    }
    // `top` may fall on a node's second row.
    let skip = top - 2 * first;
    metrics.tree_top = top;
    metrics.tree_rows = drawn.into_iter().skip(skip).take(h).collect();
    let visible: Vec<Line> = lines.into_iter().skip(skip).take(h).collect();
    f.render_widget(Paragraph::new(visible), inner);
}
